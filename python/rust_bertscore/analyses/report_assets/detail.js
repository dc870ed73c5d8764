// -- one segment in full (texts side by side, scores, references used) and its alignment, read
// from its alignment block when first opened ------------------------------------------------
var CHUNKS = Object.create(null);
function chunkOf(i) {
  var k = Math.floor(i / D.chunk);
  if (!CHUNKS[k]) CHUNKS[k] = blockJSON('al-' + k, segRange(k, D.chunk), true);
  return CHUNKS[k].then(function (c) { return { c: c, j: i - k * D.chunk }; });
}

var FLOOR_NOTE = 'padding floor applied: bert_score scores texts in batches padded to the ' +
  'longest one, and padded positions have similarity 0, so on this side a token whose best ' +
  'cosine is negative counted as 0 in the score (the cosine shown is the raw one). It depends ' +
  'on the batch, not on the texts: see docs/alignments.md.';


// the full texts of segment i, one block each: source, references, every system's candidate
function fullTexts(i) {
  var blocks = [];
  var refs = refsOf(i);
  if (D.has_src) blocks.push(el('div', { class: 'full src' }, el('div', { class: 'label', text: 'source' }), el('div', { class: 'txt', dir: 'auto' }, highlighted(srcOf(i)))));
  refs.forEach(function (r, k) {
    blocks.push(el('div', { class: 'full ref', 'data-ref': String(k) }, el('div', { class: 'label' }, refs.length > 1 ? 'reference ' + k : 'reference', k === 0 ? cutMark(REFTRUNC[i], 'reference') : null),
      el('div', { class: 'txt', dir: 'auto' }, highlighted(r))));
  });
  names.forEach(function (n, s) {
    var best = BEST[s], multi = refs.length > 1, by = '';
    if (multi) {
      var b = [best[3 * i], best[3 * i + 1], best[3 * i + 2]];
      by = ' (P from reference ' + b[0] + ', R from reference ' + b[1] + ', F1 from reference ' + b[2] + ')';
    }
    blocks.push(el('div', { class: 'full cand', 'data-system': n },
      el('div', { class: 'label' }, el('span', { class: 'swatch', css: { background: colorOf(s) } }), el('span', { class: 'sysname', text: visibleName(n) }), cutMark(TRUNC[s][i], 'candidate')),
      el('div', { class: 'txt', dir: 'auto' }, highlighted(candOf(s, i))),
      el('div', { class: 'scores', 'data-system': n }, 'P ' + fmt(P[s][i]) + ', R ' + fmt(R[s][i]) + ', F1 ' + fmt(F[s][i]) +
        (s ? ' (ΔF1 ' + sgn(DELTA[s][i]) + ')' : ''), el('span', { class: 'refs-used', text: by }))));
  });
  return el('div', { class: 'side-grid' }, blocks);
}

function showSide() {
  var need = Array.from(chosen).map(textsOf);
  if (need.some(function (p, k) { return !tx(Array.from(chosen)[k]); })) { Promise.all(need).then(showSide); return; }
  var box = document.getElementById('side');
  box.textContent = '';
  var list = Array.from(chosen).sort(function (a, b) { return a - b; });
  if (!list.length) add(box, el('p', { class: 'muted', text: 'Tick segments in the table to see them here side by side.' }));
  list.forEach(function (i) { add(box, el('div', { class: 'panel side-seg', 'data-seg': String(i) }, el('h3', { text: 'Segment ' + i }), fullTexts(i))); });
  document.getElementById('side-section').classList.remove('hidden');
  document.getElementById('side-section').scrollIntoView({ block: 'start' });
}

function showSegment(i, scroll) {
  if (!tx(i) && damagedText(i)) {
    selected = i;
    var bad = document.getElementById('alignment');
    bad.textContent = '';
    add(bad, [el('p', { class: 'seg-title', text: 'Segment ' + i + '.' }), el('p', { class: 'warn', role: 'alert', text: String(damagedText(i)) })]);
    document.getElementById('alignment-section').classList.remove('hidden');
    if (scroll) document.getElementById('alignment-section').scrollIntoView({ block: 'start' });
    return;
  }
  if (!tx(i)) { textsOf(i).then(function () { showSegment(i, scroll); }); return; }
  selected = i;
  document.querySelectorAll('#seg-body tr.row').forEach(function (tr) { tr.setAttribute('aria-selected', +tr.dataset.seg === i ? 'true' : 'false'); });
  var box = document.getElementById('alignment');
  box.dataset.ready = '';
  box.textContent = '';
  add(box, el('p', { class: 'seg-title', text: 'Segment ' + i + '.' }));
  add(box, fullTexts(i));
  var alignWrap = el('div', { class: 'alignments', text: 'Reading the alignment…' });
  add(box, alignWrap);
  document.getElementById('alignment-section').classList.remove('hidden');
  if (scroll) document.getElementById('alignment-section').scrollIntoView({ block: 'start' });
  chunkOf(i).then(function (got) {
    if (selected !== i) return;
    alignWrap.textContent = '';
    add(alignWrap, el('p', { class: 'muted' }, 'Token colour: best-match cosine (',
      el('span', { class: 'scale', css: { background: 'linear-gradient(90deg,' + [0, 0.25, 0.5, 0.75, 1].map(cosColor).join(',') + ')' } }),
      ' 0 → 1); hover a token to see and highlight its match. Cosines are raw (never rescaled).'));
    names.forEach(function (n, s) { add(alignWrap, alignPanel(got.c, got.j, i, n, s)); });
    box.dataset.ready = String(i);
  }, function (err) {
    if (selected !== i) return;
    alignWrap.textContent = '';
    add(alignWrap, el('p', { class: 'warn', role: 'alert', text: String(err) }));
  });
}

function alignPanel(c, j, i, n, s) {
  var a = c.al[s][j];
  var head = el('h3', null, el('span', { class: 'swatch', css: { background: colorOf(s) } }), el('span', { class: 'sysname', text: visibleName(n) }),
    ': P ' + fmt(P[s][i]) + ', R ' + fmt(R[s][i]) + ', F1 ' + fmt(F[s][i]) + (s ? ' (ΔF1 ' + sgn(DELTA[s][i]) + ')' : ''));
  if (!a || !a.ct.length) return el('div', { class: 'panel align-panel', 'data-system': n }, head, el('p', { class: 'muted', text: 'No token alignment in this report for this segment.' }));
  var rt = c.reftok[j][a.ri], multi = refsOf(i).length > 1, best = BEST[s];
  var used = multi ? 'Tokens against reference ' + a.ri + ' (the one that gives F1). P came from reference ' + best[3 * i] +
    ', R from reference ' + best[3 * i + 1] + ', F1 from reference ' + best[3 * i + 2] + ' (each is the best over the references).' : null;
  var floor = function (on) { return on ? el('span', { class: 'floor', title: FLOOR_NOTE }, ', padding floor applied*') : null; };
  return el('div', { class: 'panel align-panel', 'data-system': n }, head,
    used ? el('p', { class: 'refs-used', text: used }) : null,
    el('div', { class: 'muted' }, 'candidate → reference (P)', floor(a.cf)),
    tokenSpans(c, a.ct, a.cw, a.cm, a.cc, rt.t, 'cand', n),
    el('div', { class: 'muted' }, 'reference → candidate (R)', floor(a.rf)),
    tokenSpans(c, rt.t, rt.w, a.rm, a.rc, a.ct, 'ref', n),
    a.cf || a.rf ? el('p', { class: 'note floor-note', text: '* ' + FLOOR_NOTE }) : null,
    heatmap(c, a, a.ct, rt.t, n),
    tokenTable(c, a.ct, a.cw, a.cm, a.cc, rt.t, 'candidate tokens'),
    tokenTable(c, rt.t, rt.w, a.rm, a.rc, a.ct, 'reference tokens'));
}

function tokenSpans(c, toks, w, match, cos, other, side, sysName) {
  return el('div', { class: 'tokens', 'data-side': side, 'data-system': sysName }, toks.map(function (t, k) {
    var s = c.vocab[t], special = c.specials.indexOf(t) >= 0, m = match[k], cs = cos[k];
    var excluded = m === -1 || cs === null;
    var title = excluded ? s + ': excluded (no match)' : s + ' → ' + c.vocab[other[m]] + ' (#' + m + '), cosine ' + fmt(cs / 1e4) + ', weight ' + w[k];
    var span = el('span', { class: 'tok' + (special ? ' special' : '') + (excluded ? ' excluded' : ''), tabindex: '-1', dir: 'auto',
      title: title, 'data-pos': String(k), 'data-token': s, 'data-match': String(m), 'data-cos': excluded ? '' : fmt(cs / 1e4),
      onmouseenter: function () { highlightTok(side, sysName, m, true); }, onmouseleave: function () { highlightTok(side, sysName, m, false); } }, s);
    if (!excluded) span.style.setProperty('background', cosColor(cs / 1e4));
    return span;
  }));
}
function highlightTok(side, sysName, m, on) {
  var other = side === 'cand' ? 'ref' : 'cand';
  var box = document.querySelector('.tokens[data-side="' + other + '"][data-system="' + CSS.escape(sysName) + '"]');
  if (!box || m < 0) return;
  var t = box.children[m];
  if (t) t.classList.toggle('hl', on);
}

function heatmap(c, a, ctok, rtok, sysName) {
  // Rows: candidate tokens; columns: reference tokens (special tokens left out, as `show`).
  var rows = [], cols = [], longest = function (ks, toks) { var m = 1; ks.forEach(function (k) { m = Math.max(m, c.vocab[toks[k]].length); }); return Math.min(14, m); };
  ctok.forEach(function (t, k) { if (c.specials.indexOf(t) < 0) rows.push(k); });
  rtok.forEach(function (t, k) { if (c.specials.indexOf(t) < 0) cols.push(k); });
  var cell = 16, L = 8 + 7 * longest(rows, ctok), Tp = 8 + 7 * longest(cols, rtok);
  var W = L + cols.length * cell + 4, H = Tp + rows.length * cell + 4;
  var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'heatmap chart', role: 'img',
    'aria-label': 'best-match heatmap of ' + visibleName(sysName) + ': squares are candidate matches (P), dots reference matches (R)' });
  var rpos = Object.create(null), cpos = Object.create(null);
  rows.forEach(function (k, r) { rpos[k] = r; add(g, sv('text', { x: L - 4, y: Tp + r * cell + 11, 'text-anchor': 'end', text: c.vocab[ctok[k]].slice(0, 14) })); });
  cols.forEach(function (k, q) {
    cpos[k] = q;
    var x = L + q * cell + 11;
    add(g, sv('text', { x: x, y: Tp - 4, transform: 'rotate(-60 ' + x + ' ' + (Tp - 4) + ')', text: c.vocab[rtok[k]].slice(0, 14) }));
  });
  add(g, sv('rect', { class: 'cellbg', x: L, y: Tp, width: cols.length * cell, height: rows.length * cell }));
  a.cm.forEach(function (m, k) {
    if (!(k in rpos) || !(m in cpos) || a.cc[k] === null) return;
    add(g, sv('rect', { class: 'pmatch', x: L + cpos[m] * cell + 1, y: Tp + rpos[k] * cell + 1, width: cell - 2, height: cell - 2, fill: cosColor(a.cc[k] / 1e4) },
      sv('title', { text: c.vocab[ctok[k]] + ' → ' + c.vocab[rtok[m]] + ': ' + fmt(a.cc[k] / 1e4) + ' (P match)' })));
  });
  a.rm.forEach(function (m, k) {
    if (!(k in cpos) || !(m in rpos) || a.rc[k] === null) return;
    add(g, sv('circle', { class: 'rmatch', cx: L + cpos[k] * cell + cell / 2, cy: Tp + rpos[m] * cell + cell / 2, r: 3.5, stroke: cosColor(a.rc[k] / 1e4), 'stroke-width': 1.5 },
      sv('title', { text: c.vocab[rtok[k]] + ' → ' + c.vocab[ctok[m]] + ': ' + fmt(a.rc[k] / 1e4) + ' (R match)' })));
  });
  return el('div', { class: 'heat' }, g);
}

function tokenTable(c, toks, w, match, cos, other, title) {
  return el('details', null, el('summary', { text: title + ' as a table' }),
    el('table', { class: 'toktable' }, el('thead', null, el('tr', null, ['#', 'token', 'weight', 'best match', 'cosine'].map(function (h) { return el('th', { text: h }); }))),
      el('tbody', null, toks.map(function (t, k) {
        return el('tr', null, el('td', { class: 'num', text: String(k) }), el('td', { text: c.vocab[t] }), el('td', { class: 'num', text: String(w[k]) }),
          el('td', { text: match[k] < 0 ? 'excluded' : match[k] + ' ' + c.vocab[other[match[k]]] }), el('td', { class: 'num', text: cos[k] === null ? '–' : fmt(cos[k] / 1e4) }));
      }))));
}
