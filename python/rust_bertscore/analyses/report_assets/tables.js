// -- header, systems table, bucket and word tables ------------------------------------------
function truncatedCounts() {
  var cands = 0, refs = 0, k, i;
  for (k = 0; k < names.length; k++) for (i = 0; i < N; i++) cands += TRUNC[k][i];
  for (i = 0; i < N; i++) refs += REFTRUNC[i];
  return [cands, refs];
}

function header() {
  var m = D.meta;
  document.title = visibleName(m.title);
  document.getElementById('title').textContent = visibleName(m.title);
  var rows = m.inputs.map(function (f) {
    return el('tr', null, el('td', { text: visibleName(f.role) }), el('td', { class: 'mono name', text: visibleName(f.path) }),
      el('td', { class: 'num', text: String(f.lines) }));
  });
  var tc = truncatedCounts();
  add(document.getElementById('meta'), [
    el('p', null, 'Signature: ', el('span', { class: 'sig mono', id: 'signature', text: m.signature })),
    el('p', { class: 'muted' }, 'Written ' + m.date + ' by rust-bertscore ' + m.version + '. ' +
      m.test_title + (m.rescaled ? ' Scores rescaled with the baseline.' : '')),
    el('p', { id: 'truncation', class: tc[0] + tc[1] ? 'warn' : 'muted', 'data-cands': String(tc[0]), 'data-refs': String(tc[1]) },
      tc[0] + tc[1] ? '✂ ' + tc[0] + ' candidate text' + (tc[0] === 1 ? '' : 's') + ' and ' + tc[1] +
        ' reference' + (tc[1] === 1 ? '' : 's') + ' were cut at the model\'s length: their scores count only the first ' +
        'tokens. They are marked ✂ in the segments.' : 'No text was cut at the model\'s length.'),
    el('div', { class: 'fit' }, el('table', { id: 'inputs' }, el('thead', null, el('tr', null, el('th', { text: 'input' }),
      el('th', { text: 'file' }), el('th', { class: 'num', text: 'lines' }))), el('tbody', null, rows)))
  ]);
}

function metricCell(s, m, label) {
  var x = s[m];
  var v = s.baseline ? null : verdictOf(x);
  return el('td', { class: 'num metric', 'data-system': s.name, 'data-metric': m, 'data-label': label, 'data-verdict': v },
    el('span', { class: 'mean', text: fmt(x.mean) }), ' ',
    el('span', { class: 'ci', text: '[' + fmt(x.ci_low) + ', ' + fmt(x.ci_high) + ']' }),
    s.baseline ? null : el('div', { class: 'delta verdict-' + v },
      el('span', { class: 'd', text: sgn(x.delta) }), ' ',
      el('span', { class: 'dci', text: '[' + fmt(x.delta_ci_low) + ', ' + fmt(x.delta_ci_high) + ']' }),
      el('span', { class: 'pv' }, 'p = ', el('span', { class: 'p', text: fmt(x.p_value) }), ' ', verdictMark(v))));
}

function systemsTable() {
  var t = D.table, metrics = [['P', 'P'], ['R', 'R'], ['F1', 'F1']];
  var head = el('tr', null, el('th', { text: 'system' }),
    metrics.map(function (m) { return el('th', { class: 'num', text: m[1] }); }),
    el('th', { class: 'num', text: 'wins / losses / ties (F1)' }));
  var body = t.systems.map(function (s, i) {
    var w = D.wins[s.name];
    return el('tr', { 'data-system': s.name },
      el('th', { scope: 'row', class: 'name' }, el('span', { class: 'swatch', css: { background: colorOf(i) } }),
        s.baseline ? 'Baseline: ' : null, el('span', { class: 'sysname', text: visibleName(s.name) })),
      metrics.map(function (m) { return metricCell(s, m[0], m[1]); }),
      el('td', { class: 'num wlt', 'data-label': 'wins / losses / ties', text: w ? w.join(' / ') : '–' }));
  });
  var table = el('table', { id: 'systems', class: 'cards' }, el('thead', null, head), el('tbody', null, body));
  add(document.getElementById('systems-wrap'), [table, tableTools(table, 'systems')]);
}

function bucketCell(r, n) {
  var v = r.delta[n], vd = bucketVerdict(r, n);
  return el('td', { class: 'num verdict-' + vd, 'data-system': n, 'data-verdict': vd },
    sgn(v[0]) + (isNum(v[1]) ? ' [' + fmt(v[1]) + ', ' + fmt(v[2]) + '] p = ' + fmt(v[3]) + ' ' : ' '),
    isNum(v[1]) ? verdictMark(vd) : null);
}
function bucketVerdict(r, n) { return VERDICT[r.verdict[n]] ? r.verdict[n] : 'same'; }

// one row per bucket and system (columns do not grow with the systems)
function bucketTable(rows, id) {
  var head = el('tr', null, el('th', { text: 'bucket' }), el('th', { class: 'num', text: 'n' }), el('th', { text: 'system' }),
    el('th', { class: 'num', text: 'F1 [interval]' }), el('th', { class: 'num', text: 'ΔF1 [paired interval] p, verdict' }));
  var body = [];
  rows.forEach(function (r) {
    names.forEach(function (n, s) {
      var v = r.mean[n];
      if (!v) return;
      body.push(el('tr', { class: s === 0 ? 'group' : null, 'data-system': n }, el('td', { class: 'name', text: s === 0 ? visibleName(r.label) : '' }),
        el('td', { class: 'num', text: s === 0 ? String(r.n) : '' }), el('td', { class: 'name', text: visibleName(n) }),
        el('td', { class: 'num', text: fmt(v[0]) + (isNum(v[1]) ? ' [' + fmt(v[1]) + ', ' + fmt(v[2]) + ']' : '') }),
        s === 0 ? el('td', { class: 'num', text: 'baseline' }) : bucketCell(r, n)));
    });
  });
  var table = el('table', { id: id, class: 'buckets' }, el('thead', null, head), el('tbody', null, body));
  return el('div', null, el('div', { class: 'fit' }, table), tableTools(table, id));
}

function bucketsView() {
  var wrap = document.getElementById('buckets');
  [['length', 'reference length (tokens)'], ['baseF', 'the baseline\'s F1 (quintiles)']].forEach(function (b) {
    var rows = D.buckets[b[0]];
    if (!rows || !rows.length) return;
    add(wrap, el('h3', { text: 'By ' + b[1] }));
    add(wrap, el('div', { class: 'charts' },
      barChart(rows, 'mean', 'Mean F1 by ' + b[1] + ', ' + D.meta.pct + ' bootstrap interval; axis from 0', 'bucket-' + b[0] + '-mean'),
      others.length ? barChart(rows, 'delta', 'ΔF1 against ' + visibleName(base) + ' by ' + b[1] + ', paired interval', 'bucket-' + b[0] + '-delta') : null));
    add(wrap, bucketTable(rows, 'bucket-table-' + b[0]));
  });
}

function wordsView() {
  var wrap = document.getElementById('words');
  var words = D.words || dict(), poor = D.poor_words || dict();
  if (!Object.keys(words).length && !Object.keys(poor).length) {
    add(wrap, el('p', { class: 'muted', text: 'No word-level data in this report.' }));
    return;
  }
  var sysWith = names.filter(function (n) { return words[n]; });
  if (sysWith.length) {
    var labels = words[sysWith[0]].map(function (b) { return b.label; });
    var head = el('tr', null, el('th', { text: 'reference word frequency' }), el('th', { text: 'system' }),
      el('th', { class: 'num', text: 'tokens' }), el('th', { class: 'num', text: 'mean recall' }), el('th', { class: 'num', text: 'poorly matched' }));
    var body = [];
    labels.forEach(function (label, k) {
      sysWith.forEach(function (n, s) {
        var w = words[n][k];
        body.push(el('tr', { class: s === 0 ? 'group' : null }, el('td', { class: 'name', text: s === 0 ? visibleName(label) : '' }),
          el('td', { class: 'name', text: visibleName(n) }), el('td', { class: 'num', text: String(w.n) }),
          el('td', { class: 'num', text: fmt(w.recall) }), el('td', { class: 'num', text: isNum(w.poor) ? (100 * w.poor).toFixed(1) + '%' : '–' })));
      });
    });
    var table = el('table', { id: 'words-table', class: 'buckets' }, el('thead', null, head), el('tbody', null, body));
    add(wrap, el('div', { class: 'charts' }, wordChart(sysWith, labels, words)));
    add(wrap, el('div', null, el('div', { class: 'fit' }, table), tableTools(table, 'words')));
  }
  var grid = el('div', { class: 'word-grid' });
  names.forEach(function (n, s) {
    var list = poor[n];
    if (!list) return;
    var table = el('table', { id: 'poor-' + s, class: 'poor' },
      el('thead', null, el('tr', null, el('th', { text: 'word' }), el('th', { class: 'num', text: 'poorly matched' }), el('th', { class: 'num', text: 'recall' }))),
      el('tbody', null, list.map(function (w) {
        return el('tr', null, el('td', { class: 'name', text: visibleName(w[0]) }), el('td', { class: 'num', text: String(w[1]) }),
          el('td', { class: 'num', text: fmt(w[2]) }));
      })));
    add(grid, el('div', { class: 'panel' }, el('h3', null, el('span', { class: 'swatch', css: { background: colorOf(s) } }),
      'Poorly matched words: ', el('span', { class: 'sysname', text: visibleName(n) })), el('div', { class: 'fit' }, table), tableTools(table, 'poor words ' + n)));
  });
  add(wrap, grid);
}
