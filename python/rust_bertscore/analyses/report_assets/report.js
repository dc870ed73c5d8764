/* rust-bertscore comparison report: everything drawn here from the data block above (no
   network, no library). Data layout: rust_bertscore/analyses/report_html.py. */
(function () {
  'use strict';
  var SVG = 'http://www.w3.org/2000/svg';
  var D, names, base, others, N, order, view, page = 0, pageSize = 50, sortKey = null, sortDir = 1;
  var selected = -1, searchText = [];

  function el(tag, attrs) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function sv(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    setAttrs(e, attrs);
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      if (attrs[k] === null || attrs[k] === undefined || attrs[k] === false) return;
      if (k === 'text') e.textContent = attrs[k];
      else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k] === true ? '' : attrs[k]);
    });
  }
  function add(e, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(e, x); }); return; }
    e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
  function fmt(x, d) {
    if (x === null || x === undefined || Number.isNaN(x)) return '–';
    return x.toFixed(d === undefined ? 4 : d);
  }
  function sgn(x, d) { return (x === null || Number.isNaN(x)) ? '–' : (x >= 0 ? '+' : '') + fmt(x, d); }
  function colorOf(i) { return 'var(--s' + (i % 6) + ')'; }
  function cosColor(c) {
    // 0 (or below) orange-red, 1 blue; constant light tone so dark text stays readable
    var t = Math.max(0, Math.min(1, c));
    var hue = 20 + 190 * t;
    return 'hsl(' + hue.toFixed(0) + ', 75%, ' + (82 - 12 * t).toFixed(0) + '%)';
  }

  function decode() {
    var b64 = document.getElementById('report-data').textContent.trim();
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text().then(JSON.parse);
  }

  // -- header and systems table ---------------------------------------------------------------
  function header() {
    var m = D.meta;
    document.title = m.title;
    document.getElementById('title').textContent = m.title;
    var rows = m.inputs.map(function (f) {
      return el('tr', null, el('td', { text: f.role }), el('td', { class: 'mono', text: f.path }),
        el('td', { class: 'num', text: String(f.lines) }));
    });
    add(document.getElementById('meta'), [
      el('p', null, 'Signature: ', el('span', { class: 'sig mono', id: 'signature', text: m.signature })),
      el('p', { class: 'muted' }, 'Written ' + m.date + ' by rust-bertscore ' + m.version + '. ' +
        m.test_title + (m.rescaled ? ' Scores rescaled with the baseline.' : '')),
      el('table', { id: 'inputs' }, el('thead', null, el('tr', null, el('th', { text: 'input' }),
        el('th', { text: 'file' }), el('th', { class: 'num', text: 'lines' }))), el('tbody', null, rows))
    ]);
  }

  function systemsTable() {
    var t = D.table, metrics = [['P', 'P'], ['R', 'R'], ['F1', 'F1']];
    var head = el('tr', null, el('th', { text: 'system' }),
      metrics.map(function (m) { return el('th', { class: 'num', text: m[1] }); }),
      el('th', { class: 'num', text: 'wins / losses / ties (F1)' }));
    var body = t.systems.map(function (s, i) {
      var cells = metrics.map(function (m) {
        var x = s[m[0]];
        var star = x.p_value !== null && x.p_value < D.meta.alpha;
        return el('td', { class: 'num', 'data-system': s.name, 'data-metric': m[0] },
          el('span', { class: 'mean', text: fmt(x.mean) }), ' ',
          el('span', { class: 'ci', text: '[' + fmt(x.ci_low) + ', ' + fmt(x.ci_high) + ']' }),
          s.baseline ? null : el('div', { class: 'delta' + (star ? ' sig-yes' : '') },
            el('span', { class: 'd', text: sgn(x.delta) }), ' [' + fmt(x.delta_ci_low) + ', ' +
            fmt(x.delta_ci_high) + '] (p = ', el('span', { class: 'p', text: fmt(x.p_value) }),
            ')' + (star ? '*' : '')));
      });
      var w = D.wins[s.name];
      return el('tr', { 'data-system': s.name },
        el('th', { scope: 'row' }, el('span', { class: 'swatch', style: 'background:' + colorOf(i) }),
          s.baseline ? 'Baseline: ' + s.name : s.name),
        cells, el('td', { class: 'num wlt', text: w ? w.join(' / ') : '–' }));
    });
    add(document.getElementById('systems-wrap'), el('table', { id: 'systems' },
      el('thead', null, head), el('tbody', null, body)));
  }

  // -- charts ---------------------------------------------------------------------------------
  function histogram(values, lo, hi, bins, color, caption, id, zero) {
    var W = 280, H = 140, L = 34, B = 22, counts = new Array(bins).fill(0);
    var width = (hi - lo) / bins || 1;
    values.forEach(function (v) {
      var k = Math.floor((v - lo) / width);
      counts[Math.max(0, Math.min(bins - 1, k))]++;
    });
    var top = Math.max.apply(null, counts) || 1, bw = (W - L - 6) / bins;
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img',
      'aria-label': caption, id: id, class: 'chart' });
    add(g, sv('line', { class: 'axis', x1: L, y1: H - B, x2: W - 4, y2: H - B }));
    add(g, sv('line', { class: 'axis', x1: L, y1: 6, x2: L, y2: H - B }));
    counts.forEach(function (c, k) {
      var h = (H - B - 8) * c / top;
      add(g, sv('rect', { x: L + k * bw + 0.5, y: H - B - h, width: Math.max(1, bw - 1), height: h,
        fill: color }, sv('title', { text: fmt(lo + k * width, 3) + '–' + fmt(lo + (k + 1) * width, 3) + ': ' + c })));
    });
    if (zero && lo < 0 && hi > 0) {
      var x0 = L + (0 - lo) / (hi - lo) * (W - L - 6);
      add(g, sv('line', { class: 'axis', x1: x0, y1: 6, x2: x0, y2: H - B, 'stroke-dasharray': '3 2' }));
    }
    add(g, sv('text', { x: L, y: H - 8, 'text-anchor': 'middle', text: fmt(lo, 2) }));
    add(g, sv('text', { x: W - 6, y: H - 8, 'text-anchor': 'end', text: fmt(hi, 2) }));
    add(g, sv('text', { x: L - 4, y: 12, 'text-anchor': 'end', text: String(top) }));
    add(g, sv('text', { x: L - 4, y: H - B, 'text-anchor': 'end', text: '0' }));
    return el('figure', null, el('figcaption', { text: caption }), g);
  }

  function distributions() {
    var all = [];
    names.forEach(function (n) { all = all.concat(D.seg[n].F); });
    var lo = Math.min.apply(null, all), hi = Math.max.apply(null, all);
    if (hi <= lo) hi = lo + 1e-3;
    var wrap = document.getElementById('dist');
    names.forEach(function (n, i) {
      add(wrap, histogram(D.seg[n].F, lo, hi, 24, colorOf(i), 'F1 of ' + n + ' (segments per bin)', 'hist-' + i));
    });
    others.forEach(function (n, j) {
      var d = delta(n), m = Math.max(1e-3, Math.max.apply(null, d.map(Math.abs)));
      add(wrap, histogram(d, -m, m, 24, colorOf(j + 1), 'ΔF1 of ' + n + ' − ' + base, 'hist-d-' + j, true));
    });
  }

  function barChart(rows, key, caption, id) {
    // rows: bucket rows; key 'mean' (every system) or 'delta' (every system but the baseline)
    var sys = key === 'mean' ? names : others, W = Math.max(320, 70 + rows.length * (sys.length * 16 + 22)), H = 200, L = 44, B = 36;
    var vals = [];
    rows.forEach(function (r) { sys.forEach(function (n) { var v = r[key][n]; if (v) vals.push(v[0], v[1], v[2]); }); });
    vals = vals.filter(function (v) { return v !== null && !Number.isNaN(v); });
    var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
    if (key === 'delta') { lo = Math.min(lo, 0); hi = Math.max(hi, 0); }
    var pad = (hi - lo) * 0.08 || 0.01; lo -= pad; hi += pad;
    var y = function (v) { return 8 + (H - B - 8) * (hi - v) / (hi - lo); };
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': caption, id: id, class: 'chart' });
    [lo, (lo + hi) / 2, hi].forEach(function (v) {
      add(g, sv('line', { class: 'grid', x1: L, x2: W - 4, y1: y(v), y2: y(v) }));
      add(g, sv('text', { x: L - 4, y: y(v) + 3, 'text-anchor': 'end', text: fmt(v, 3) }));
    });
    var base0 = key === 'delta' ? 0 : lo, gw = (W - L - 10) / rows.length, bw = Math.min(16, (gw - 10) / sys.length);
    rows.forEach(function (r, k) {
      var x0 = L + 6 + k * gw;
      sys.forEach(function (n, j) {
        var v = r[key][n]; if (!v) return;
        var x = x0 + j * bw, top = Math.min(y(v[0]), y(base0)), h = Math.abs(y(v[0]) - y(base0));
        var ci = Number.isNaN(v[1]) || v[1] === null ? '' : ' [' + fmt(v[1]) + ', ' + fmt(v[2]) + ']';
        var p = key === 'delta' && v[3] !== null && !Number.isNaN(v[3]) ? ', p = ' + fmt(v[3]) : '';
        var ci_ = names.indexOf(n);
        add(g, sv('rect', { x: x, y: top, width: bw - 2, height: Math.max(1, h), fill: colorOf(ci_) },
          sv('title', { text: n + ', ' + r.label + ' (n = ' + r.n + '): ' + (key === 'delta' ? sgn(v[0]) : fmt(v[0])) + ci + p })));
        if (v[1] !== null && !Number.isNaN(v[1])) {
          var cx = x + (bw - 2) / 2;
          add(g, sv('line', { class: 'err', x1: cx, x2: cx, y1: y(v[1]), y2: y(v[2]) }));
          add(g, sv('line', { class: 'err', x1: cx - 3, x2: cx + 3, y1: y(v[1]), y2: y(v[1]) }));
          add(g, sv('line', { class: 'err', x1: cx - 3, x2: cx + 3, y1: y(v[2]), y2: y(v[2]) }));
        }
        if (key === 'delta' && v[3] !== null && v[3] < D.meta.alpha) {
          add(g, sv('text', { x: x + (bw - 2) / 2, y: Math.min(y(v[2] || v[0]), y(v[0])) - 3, 'text-anchor': 'middle', text: '*' }));
        }
      });
      add(g, sv('text', { x: x0 + sys.length * bw / 2, y: H - B + 14, 'text-anchor': 'middle', text: r.label.split(' ')[0] }));
      add(g, sv('text', { x: x0 + sys.length * bw / 2, y: H - B + 26, 'text-anchor': 'middle', class: 'muted', text: 'n=' + r.n }));
    });
    if (key === 'delta') add(g, sv('line', { class: 'axis', x1: L, x2: W - 4, y1: y(0), y2: y(0) }));
    return el('figure', null, el('figcaption', { text: caption }), g);
  }

  function bucketTable(rows, id) {
    var head = el('tr', null, el('th', { text: 'bucket' }), el('th', { class: 'num', text: 'n' }),
      names.map(function (n) { return el('th', { class: 'num', text: 'F1 ' + n }); }),
      others.map(function (n) { return el('th', { class: 'num', text: 'ΔF1 ' + n + ' (p)' }); }));
    var body = rows.map(function (r) {
      return el('tr', null, el('td', { text: r.label }), el('td', { class: 'num', text: String(r.n) }),
        names.map(function (n) { var v = r.mean[n]; return el('td', { class: 'num', text: fmt(v[0]) + (Number.isNaN(v[1]) || v[1] === null ? '' : ' [' + fmt(v[1]) + ', ' + fmt(v[2]) + ']') }); }),
        others.map(function (n) {
          var v = r.delta[n], star = v[3] !== null && v[3] < D.meta.alpha;
          return el('td', { class: 'num' + (star ? ' sig-yes' : '') }, sgn(v[0]) + (v[1] === null || Number.isNaN(v[1]) ? '' : ' [' + fmt(v[1]) + ', ' + fmt(v[2]) + '] (p = ' + fmt(v[3]) + ')' + (star ? '*' : '')));
        }));
    });
    return el('table', { id: id, class: 'buckets' }, el('thead', null, head), el('tbody', null, body));
  }

  function bucketsView() {
    var wrap = document.getElementById('buckets');
    [['length', 'reference length (tokens)'], ['baseF', 'the baseline\'s F1 (quintiles)']].forEach(function (b) {
      var rows = D.buckets[b[0]];
      add(wrap, el('h3', { text: 'By ' + b[1] }));
      add(wrap, el('div', { class: 'charts' },
        barChart(rows, 'mean', 'Mean F1 by ' + b[1] + ', ' + D.meta.pct + ' bootstrap interval', 'bucket-' + b[0] + '-mean'),
        others.length ? barChart(rows, 'delta', 'ΔF1 against ' + base + ' by ' + b[1] + ', paired interval; * p < ' + D.meta.alpha, 'bucket-' + b[0] + '-delta') : null));
      add(wrap, bucketTable(rows, 'bucket-table-' + b[0]));
    });
  }

  // -- segment table --------------------------------------------------------------------------
  function delta(n) {
    var f = D.seg[n].F, b = D.seg[base].F;
    return f.map(function (v, i) { return v - b[i]; });
  }
  var deltas = {};
  function columns() {
    var cols = [{ key: 'idx', label: '#', num: true, get: function (i) { return i; }, show: function (i) { return String(i); } },
      { key: 'ref', label: 'reference', get: function (i) { return D.refs[i][0]; } }];
    names.forEach(function (n) { cols.push({ key: 'cand:' + n, label: n, get: function (i) { return D.seg[n].cands[i]; } }); });
    names.forEach(function (n) { cols.push({ key: 'F:' + n, label: 'F1 ' + n, num: true, get: function (i) { return D.seg[n].F[i]; }, show: function (i) { return fmt(D.seg[n].F[i]); } }); });
    others.forEach(function (n) { cols.push({ key: 'dF:' + n, label: 'ΔF1 ' + n, num: true, delta: true, get: function (i) { return deltas[n][i]; }, show: function (i) { return sgn(deltas[n][i]); } }); });
    return cols;
  }
  var COLS;

  function segmentControls() {
    var sel = el('select', { id: 'delta-system', 'aria-label': 'system whose ΔF1 the range filters' },
      others.map(function (n) { return el('option', { value: n, text: n }); }));
    add(document.getElementById('seg-controls'), [
      el('label', null, 'Search ', el('input', { type: 'search', id: 'search', placeholder: 'text in any column (/)', oninput: refilter })),
      el('label', null, 'ΔF1 of ', sel, ' from ', el('input', { type: 'number', id: 'dmin', step: '0.01', 'aria-label': 'smallest ΔF1', oninput: refilter }),
        ' to ', el('input', { type: 'number', id: 'dmax', step: '0.01', 'aria-label': 'largest ΔF1', oninput: refilter })),
      el('label', null, 'Rows ', el('select', { id: 'pagesize', onchange: function (e) { pageSize = +e.target.value; page = 0; drawRows(); } },
        [25, 50, 100, 200].map(function (k) { return el('option', { value: k, selected: k === pageSize, text: String(k) }); })))
    ]);
    sel.addEventListener('change', refilter);
    var head = el('tr', null, COLS.map(function (c) {
      return el('th', { class: c.num ? 'num' : null, 'data-key': c.key, 'aria-sort': 'none' },
        el('button', { class: 'sort', type: 'button', text: c.label, title: 'sort by ' + c.label, onclick: function () { sortBy(c.key); } }));
    }));
    var table = el('table', { id: 'segments', 'aria-label': 'segments; Enter or click shows the alignment' }, el('thead', null, head), el('tbody', { id: 'seg-body' }));
    table.addEventListener('keydown', rowKeys);
    add(document.getElementById('segments-wrap'), table);
    add(document.getElementById('pager'), [
      el('button', { type: 'button', id: 'prev', text: '‹ previous', onclick: function () { page--; drawRows(); } }),
      el('span', { id: 'page-info', 'aria-live': 'polite' }),
      el('button', { type: 'button', id: 'next', text: 'next ›', onclick: function () { page++; drawRows(); } })
    ]);
  }

  function refilter() {
    var q = document.getElementById('search').value.trim().toLowerCase();
    var n = document.getElementById('delta-system').value;
    var lo = parseFloat(document.getElementById('dmin').value), hi = parseFloat(document.getElementById('dmax').value);
    var d = deltas[n];
    view = order.filter(function (i) {
      if (q && searchText[i].indexOf(q) < 0) return false;
      if (d && !Number.isNaN(lo) && d[i] < lo) return false;
      if (d && !Number.isNaN(hi) && d[i] > hi) return false;
      return true;
    });
    page = 0;
    drawRows();
  }

  function sortBy(key) {
    if (sortKey === key) sortDir = -sortDir; else { sortKey = key; sortDir = 1; }
    var col = COLS.filter(function (c) { return c.key === key; })[0];
    order = order.slice().sort(function (a, b) {
      var x = col.get(a), y = col.get(b);
      if (x < y) return -sortDir; if (x > y) return sortDir; return a - b;
    });
    document.querySelectorAll('#segments th').forEach(function (th) {
      th.setAttribute('aria-sort', th.dataset.key === key ? (sortDir > 0 ? 'ascending' : 'descending') : 'none');
    });
    refilter();
  }

  function drawRows() {
    var pages = Math.max(1, Math.ceil(view.length / pageSize));
    page = Math.max(0, Math.min(page, pages - 1));
    var body = document.getElementById('seg-body');
    body.textContent = '';
    var slice = view.slice(page * pageSize, (page + 1) * pageSize);
    var frag = document.createDocumentFragment();
    slice.forEach(function (i) {
      var tr = el('tr', { tabindex: '0', 'data-seg': String(i), 'aria-selected': i === selected ? 'true' : 'false',
        onclick: function () { showAlignment(i, true); } });
      COLS.forEach(function (c) {
        var v = c.show ? c.show(i) : c.get(i);
        var cls = c.num ? 'num' : 'text';
        if (c.delta) cls += deltas[c.key.slice(3)][i] > 0 ? ' pos' : deltas[c.key.slice(3)][i] < 0 ? ' neg' : '';
        add(tr, el('td', { class: cls, title: c.num ? null : v, 'data-key': c.key, text: v }));
      });
      frag.appendChild(tr);
    });
    body.appendChild(frag);
    var from = view.length ? page * pageSize + 1 : 0, to = Math.min(view.length, (page + 1) * pageSize);
    document.getElementById('page-info').textContent = 'rows ' + from + '–' + to + ' of ' + view.length +
      (view.length !== N ? ' (filtered from ' + N + ')' : '') + ', page ' + (page + 1) + ' of ' + pages;
    document.getElementById('prev').disabled = page === 0;
    document.getElementById('next').disabled = page >= pages - 1;
  }

  function rowKeys(e) {
    var tr = e.target.closest && e.target.closest('tbody tr');
    if (!tr) return;
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); showAlignment(+tr.dataset.seg, true); }
    else if (e.key === 'ArrowDown' && tr.nextElementSibling) { e.preventDefault(); tr.nextElementSibling.focus(); }
    else if (e.key === 'ArrowUp' && tr.previousElementSibling) { e.preventDefault(); tr.previousElementSibling.focus(); }
    else if (e.key === 'PageDown' || e.key === 'ArrowRight') { e.preventDefault(); if (!document.getElementById('next').disabled) { page++; drawRows(); focusFirst(); } }
    else if (e.key === 'PageUp' || e.key === 'ArrowLeft') { e.preventDefault(); if (page > 0) { page--; drawRows(); focusFirst(); } }
  }
  function focusFirst() { var r = document.querySelector('#seg-body tr'); if (r) r.focus(); }

  // -- alignment view -------------------------------------------------------------------------
  function tokenSpans(toks, w, match, cos, other, side, sysName) {
    return el('div', { class: 'tokens', 'data-side': side, 'data-system': sysName }, toks.map(function (t, k) {
      var s = D.vocab[t], special = D.specials.indexOf(t) >= 0, m = match[k], c = cos[k];
      var excluded = m === -1 || c === null;
      var title = excluded ? s + ': excluded (no match)' : s + ' → ' + D.vocab[other[m]] + ' (#' + m + '), cosine ' + fmt(c / 1e4) + ', weight ' + w[k];
      return el('span', { class: 'tok' + (special ? ' special' : '') + (excluded ? ' excluded' : ''), tabindex: '-1',
        style: excluded ? null : 'background:' + cosColor(c / 1e4), title: title, 'data-pos': String(k),
        'data-token': s, 'data-match': String(m), 'data-cos': excluded ? '' : fmt(c / 1e4),
        onmouseenter: function () { highlight(side, sysName, m, true); }, onmouseleave: function () { highlight(side, sysName, m, false); } }, s);
    }));
  }
  function highlight(side, sysName, m, on) {
    var other = side === 'cand' ? 'ref' : 'cand';
    var box = document.querySelector('.tokens[data-side="' + other + '"][data-system="' + CSS.escape(sysName) + '"]');
    if (!box || m < 0) return;
    var t = box.children[m];
    if (t) t.classList.toggle('hl', on);
  }

  function heatmap(a, ctok, rtok, sysName) {
    // Rows: candidate tokens; columns: reference tokens (special tokens left out, as `show`).
    var rows = [], cols = [];
    ctok.forEach(function (t, k) { if (D.specials.indexOf(t) < 0) rows.push(k); });
    rtok.forEach(function (t, k) { if (D.specials.indexOf(t) < 0) cols.push(k); });
    var cell = 16, L = 8 + 7 * Math.min(14, Math.max.apply(null, rows.map(function (k) { return D.vocab[ctok[k]].length; }).concat([1]))),
      T = 8 + 7 * Math.min(14, Math.max.apply(null, cols.map(function (k) { return D.vocab[rtok[k]].length; }).concat([1])));
    var W = L + cols.length * cell + 4, H = T + rows.length * cell + 4;
    var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'heatmap chart', role: 'img',
      'aria-label': 'best-match heatmap of ' + sysName + ': squares are candidate matches (P), dots reference matches (R)' });
    var rpos = {}, cpos = {};
    rows.forEach(function (k, r) { rpos[k] = r; add(g, sv('text', { x: L - 4, y: T + r * cell + 11, 'text-anchor': 'end', text: D.vocab[ctok[k]].slice(0, 14) })); });
    cols.forEach(function (k, c) {
      cpos[k] = c;
      var x = L + c * cell + 11;
      add(g, sv('text', { x: x, y: T - 4, transform: 'rotate(-60 ' + x + ' ' + (T - 4) + ')', text: D.vocab[rtok[k]].slice(0, 14) }));
    });
    add(g, sv('rect', { x: L, y: T, width: cols.length * cell, height: rows.length * cell, fill: 'var(--cell)' }));
    a.cm.forEach(function (m, k) {
      if (!(k in rpos) || !(m in cpos) || a.cc[k] === null) return;
      add(g, sv('rect', { class: 'pmatch', x: L + cpos[m] * cell + 1, y: T + rpos[k] * cell + 1, width: cell - 2, height: cell - 2, fill: cosColor(a.cc[k] / 1e4) },
        sv('title', { text: D.vocab[ctok[k]] + ' → ' + D.vocab[rtok[m]] + ': ' + fmt(a.cc[k] / 1e4) + ' (P match)' })));
    });
    a.rm.forEach(function (m, k) {
      if (!(k in cpos) || !(m in rpos) || a.rc[k] === null) return;
      add(g, sv('circle', { class: 'rmatch', cx: L + cpos[k] * cell + cell / 2, cy: T + rpos[m] * cell + cell / 2, r: 3.5, fill: 'var(--fg)', stroke: cosColor(a.rc[k] / 1e4), 'stroke-width': 1.5 },
        sv('title', { text: D.vocab[rtok[k]] + ' → ' + D.vocab[ctok[m]] + ': ' + fmt(a.rc[k] / 1e4) + ' (R match)' })));
    });
    return el('div', { class: 'heat' }, g);
  }

  function tokenTable(toks, w, match, cos, other, title) {
    return el('details', null, el('summary', { text: title + ' as a table' }),
      el('table', { class: 'toktable' }, el('thead', null, el('tr', null, ['#', 'token', 'weight', 'best match', 'cosine'].map(function (h) { return el('th', { text: h }); }))),
        el('tbody', null, toks.map(function (t, k) {
          return el('tr', null, el('td', { class: 'num', text: String(k) }), el('td', { text: D.vocab[t] }), el('td', { class: 'num', text: String(w[k]) }),
            el('td', { text: match[k] < 0 ? 'excluded' : match[k] + ' ' + D.vocab[other[match[k]]] }), el('td', { class: 'num', text: cos[k] === null ? '–' : fmt(cos[k] / 1e4) }));
        }))));
  }

  function showAlignment(i, scroll) {
    selected = i;
    document.querySelectorAll('#seg-body tr').forEach(function (tr) { tr.setAttribute('aria-selected', +tr.dataset.seg === i ? 'true' : 'false'); });
    var box = document.getElementById('alignment');
    box.textContent = '';
    add(box, el('p', { class: 'muted' }, 'Segment ' + i + '. Token colour: best-match cosine (',
      el('span', { class: 'scale', style: 'background:linear-gradient(90deg,' + [0, 0.25, 0.5, 0.75, 1].map(cosColor).join(',') + ')' }),
      ' 0 → 1); hover a token to see and highlight its match. Cosines are raw (never rescaled).'));
    names.forEach(function (n, s) {
      var a = D.seg[n].al[i], rt = D.reftok[i][a.ri];
      var sc = D.seg[n];
      add(box, el('div', { class: 'panel align-panel', 'data-system': n },
        el('h3', null, el('span', { class: 'swatch', style: 'background:' + colorOf(s) }), n + ': P ' + fmt(sc.P[i]) + ', R ' + fmt(sc.R[i]) + ', F1 ' + fmt(sc.F[i]) +
          (s ? ' (ΔF1 ' + sgn(deltas[n][i]) + ')' : '') + (D.refs[i].length > 1 ? ', against reference ' + a.ri : '')),
        el('div', { class: 'muted', text: 'candidate → reference (P)' + (a.cf ? ', padding floor applied' : '') }),
        tokenSpans(a.ct, a.cw, a.cm, a.cc, rt.t, 'cand', n),
        el('div', { class: 'muted', text: 'reference → candidate (R)' + (a.rf ? ', padding floor applied' : '') }),
        tokenSpans(rt.t, rt.w, a.rm, a.rc, a.ct, 'ref', n),
        heatmap(a, a.ct, rt.t, n),
        tokenTable(a.ct, a.cw, a.cm, a.cc, rt.t, 'candidate tokens'),
        tokenTable(rt.t, rt.w, a.rm, a.rc, a.ct, 'reference tokens')));
    });
    document.getElementById('alignment-section').classList.remove('hidden');
    if (scroll) document.getElementById('alignment-section').scrollIntoView({ block: 'start' });
  }

  function themeButton() {
    var modes = ['auto', 'light', 'dark'], btn = document.getElementById('theme');
    var mode = 0;
    btn.addEventListener('click', function () {
      mode = (mode + 1) % 3;
      if (modes[mode] === 'auto') delete document.documentElement.dataset.theme;
      else document.documentElement.dataset.theme = modes[mode];
      btn.textContent = 'colours: ' + modes[mode];
    });
  }

  function keys(e) {
    if (e.key === '/' && document.activeElement.tagName !== 'INPUT') { e.preventDefault(); document.getElementById('search').focus(); }
    else if (e.key === 'Escape' && selected >= 0) {
      var r = document.querySelector('#seg-body tr[data-seg="' + selected + '"]');
      if (r) r.focus();
    }
  }

  function start(data) {
    D = data;
    names = D.systems; base = names[0]; others = names.slice(1);
    N = D.refs.length;
    others.forEach(function (n) { deltas[n] = delta(n); });
    searchText = D.refs.map(function (r, i) {
      return r.concat(names.map(function (n) { return D.seg[n].cands[i]; })).join('\u0001').toLowerCase();
    });
    order = []; for (var i = 0; i < N; i++) order.push(i);
    view = order;
    COLS = columns();
    header(); systemsTable(); distributions(); bucketsView(); segmentControls(); drawRows(); themeButton();
    document.addEventListener('keydown', keys);
    document.body.dataset.ready = '1';
  }

  decode().then(start).catch(function (err) {
    document.getElementById('meta').textContent = 'This report could not be read: ' + err;
    throw err;
  });
})();
