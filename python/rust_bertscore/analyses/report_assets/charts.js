// -- charts: every figure from aggregates computed once (counts, means), never by spreading
// a data array into a call ------------------------------------------------------------------
var TIE = 1e-6;

// counts of values in `bins` equal bins over [lo, hi]; with `ties`, values within TIE of 0 are
// counted apart (returned as .ties) and left out of the bins
// (the ties are CMP's, computed from the raw scores in Python, so they are the table's)
function binCounts(values, lo, hi, bins, ties) {
  var counts = new Int32Array(bins), width = (hi - lo) / bins || 1, nties = 0;
  for (var i = 0; i < values.length; i++) {
    var v = values[i];
    if (Number.isNaN(v)) continue;
    if (ties && ties[i] === 0) { nties++; continue; }
    var k = Math.floor((v - lo) / width);
    counts[k < 0 ? 0 : k >= bins ? bins - 1 : k]++;
  }
  return { counts: counts, ties: nties, width: width };
}

function histogram(values, lo, hi, bins, color, caption, id, zero) {
  var W = 300, H = 150, L = 40, B = 22;
  var e = extent(values);
  if (!(e[1] >= e[0]) || !isFinite(lo) || !isFinite(hi)) {
    // every value NaN: no axis to draw
    return el('figure', { id: id, class: 'no-chart' }, el('figcaption', null, caption),
      el('p', { class: 'muted', text: 'No chart: every value is missing (NaN).' }));
  }
  var h = binCounts(values, lo, hi, bins, zero), counts = h.counts;
  var top = Math.max(1, extent(counts)[1], h.ties), bw = (W - L - 8) / bins;
  var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': caption, id: id, class: 'chart' });
  var y = function (c) { return (H - B - 14) * c / top; };
  add(g, sv('line', { class: 'axis', x1: L, y1: H - B, x2: W - 4, y2: H - B }));
  add(g, sv('line', { class: 'axis', x1: L, y1: 6, x2: L, y2: H - B }));
  for (var k = 0; k < bins; k++) {
    add(g, sv('rect', { class: 'bin', x: L + k * bw + 0.5, y: H - B - y(counts[k]), width: Math.max(1, bw - 1), height: y(counts[k]),
      fill: color, 'data-count': String(counts[k]), 'data-lo': String(lo + k * h.width), 'data-hi': String(lo + (k + 1) * h.width) },
      sv('title', { text: fmt(lo + k * h.width, 3) + ' to ' + fmt(lo + (k + 1) * h.width, 3) + (zero ? ' (ties left out)' : '') + ': ' + counts[k] })));
  }
  if (zero && lo < 0 && hi > 0) {
    var x0 = L + (0 - lo) / (hi - lo) * (W - L - 8);
    add(g, sv('line', { class: 'axis', x1: x0, y1: 6, x2: x0, y2: H - B, 'stroke-dasharray': '3 2' }));
    // the exact ties: a bar of their own, on the zero line, hatched and labelled
    add(g, sv('rect', { class: 'ties', x: x0 - 3, y: H - B - y(h.ties), width: 6, height: y(h.ties), 'data-count': String(h.ties) },
      sv('title', { text: 'ties (|ΔF1| < 10^-6): ' + h.ties })));
    add(g, sv('text', { class: 'ties-label', x: x0 + 5, y: Math.max(10, H - B - y(h.ties) - 2), text: 'ties ' + h.ties }));
  }
  add(g, sv('text', { x: L, y: H - 8, 'text-anchor': 'middle', text: fmt(lo, 2) }));
  add(g, sv('text', { x: W - 6, y: H - 8, 'text-anchor': 'end', text: fmt(hi, 2) }));
  add(g, sv('text', { x: L - 4, y: 14, 'text-anchor': 'end', text: String(top) }));
  add(g, sv('text', { x: L - 4, y: H - B, 'text-anchor': 'end', text: '0' }));
  return chartFigure(caption, g);
}

function distributions() {
  var lo = Infinity, hi = -Infinity;
  names.forEach(function (n, s) { var e = extent(F[s]); lo = Math.min(lo, e[0]); hi = Math.max(hi, e[1]); });
  if (!(hi > lo)) { hi = (isFinite(lo) ? lo : 0) + 1e-3; lo = hi - 2e-3; }
  var wrap = document.getElementById('dist');
  names.forEach(function (n, i) {
    add(wrap, histogram(F[i], lo, hi, 24, colorOf(i), 'F1 of ' + visibleName(n) + ' (segments per bin)', 'hist-' + i));
  });
  others.forEach(function (n, j) {
    var e = extent(DELTA[j + 1]), m = e[1] >= e[0] ? Math.max(1e-3, Math.abs(e[0]), Math.abs(e[1])) : 1e-3;
    add(wrap, histogram(DELTA[j + 1], -m, m, 24, colorOf(j + 1), 'ΔF1 of ' + visibleName(n) + ' − ' + visibleName(base) + ', ties apart', 'hist-d-' + j, CMP[j + 1]));
  });
}

// bars of bucket rows: key 'mean' (every system; the axis starts at 0) or 'delta' (every
// system but the baseline; the axis holds 0)
function barChart(rows, key, caption, id) {
  var sys = key === 'mean' ? names : others;
  var W = Math.max(320, 70 + rows.length * (sys.length * 14 + 22)), H = 210, L = 48, B = 36;
  var lo = 0, hi = 0;
  rows.forEach(function (r) {
    sys.forEach(function (n) {
      var v = r[key][n];
      if (!v || !isNum(v[0])) return;
      for (var k = 0; k < 3; k++) if (isNum(v[k])) { lo = Math.min(lo, v[k]); hi = Math.max(hi, v[k]); }
    });
  });
  if (key === 'mean' && hi <= 1 && lo >= 0) hi = 1;
  var pad = key === 'mean' ? 0 : (hi - lo) * 0.08 || 0.01;
  if (key === 'delta') { lo -= pad; hi += pad; }
  var y = function (v) { return 8 + (H - B - 8) * (hi - v) / (hi - lo || 1); };
  var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': caption, id: id, class: 'chart', 'data-axis-min': String(lo) });
  var ticks = key === 'mean' ? [0, hi / 4, hi / 2, 3 * hi / 4, hi] : [lo, 0, hi];
  ticks.forEach(function (v) {
    add(g, sv('line', { class: 'grid', x1: L, x2: W - 4, y1: y(v), y2: y(v) }));
    add(g, sv('text', { class: 'tick', x: L - 4, y: y(v) + 3, 'text-anchor': 'end', text: fmt(v, 3) }));
  });
  var gw = (W - L - 10) / rows.length, bw = Math.min(14, (gw - 10) / sys.length);
  rows.forEach(function (r, k) {
    var x0 = L + 6 + k * gw;
    sys.forEach(function (n, j) {
      var v = r[key][n];
      if (!v || !isNum(v[0])) return;
      var x = x0 + j * bw, top = Math.min(y(v[0]), y(0)), h = Math.abs(y(v[0]) - y(0));
      var ci = isNum(v[1]) ? ' [' + fmt(v[1]) + ', ' + fmt(v[2]) + ']' : '';
      var vd = key === 'delta' ? bucketVerdict(r, n) : null;
      add(g, sv('rect', { class: 'bar' + (vd ? ' v-' + vd : ''), x: x, y: top, width: Math.max(1, bw - 2), height: Math.max(1, h), fill: colorOf(names.indexOf(n)) },
        sv('title', { text: visibleName(n) + ', ' + visibleName(r.label) + ' (n = ' + r.n + '): ' + (key === 'delta' ? sgn(v[0]) : fmt(v[0])) + ci +
          (vd ? ', ' + VERDICT[vd].words : '') })));
      var cx = x + (bw - 2) / 2;
      if (isNum(v[1])) {
        add(g, sv('line', { class: 'err', x1: cx, x2: cx, y1: y(v[1]), y2: y(v[2]) }));
        add(g, sv('line', { class: 'err', x1: cx - 3, x2: cx + 3, y1: y(v[1]), y2: y(v[1]) }));
        add(g, sv('line', { class: 'err', x1: cx - 3, x2: cx + 3, y1: y(v[2]), y2: y(v[2]) }));
      }
      if (vd && vd !== 'same') {
        add(g, sv('text', { class: 'mark v-' + vd, x: cx, y: Math.min(y(v[0]), isNum(v[2]) ? y(v[2]) : Infinity, isNum(v[1]) ? y(v[1]) : Infinity) - 3, 'text-anchor': 'middle', text: VERDICT[vd].mark }));
      }
    });
    add(g, sv('text', { x: x0 + sys.length * bw / 2, y: H - B + 14, 'text-anchor': 'middle', text: visibleName(r.label).split(' ')[0].slice(0, 14) }));
    add(g, sv('text', { x: x0 + sys.length * bw / 2, y: H - B + 26, 'text-anchor': 'middle', class: 'muted', text: 'n=' + r.n }));
  });
  add(g, sv('line', { class: 'axis', x1: L, x2: W - 4, y1: y(0), y2: y(0) }));
  return chartFigure(caption, g);
}

// ΔF1 of every system against the baseline: point, paired interval, verdict (colour, mark, word)
function forest() {
  var rows = D.table.systems.filter(function (s) { return !s.baseline; });
  if (!rows.length) return;
  var W = 640, rowH = 26, T = 20, H = T + rows.length * rowH + 26, L = 200, Rm = 170;
  var lo = 0, hi = 0;
  rows.forEach(function (s) { [s.F1.delta_ci_low, s.F1.delta_ci_high, s.F1.delta].forEach(function (v) { if (isNum(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }); });
  var pad = (hi - lo) * 0.1 || 0.01; lo -= pad; hi += pad;
  var x = function (v) { return L + (W - L - Rm) * (v - lo) / (hi - lo); };
  var g = sv('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', id: 'forest-f1', class: 'chart wide',
    'aria-label': 'ΔF1 of each system against ' + visibleName(base) + ', with paired intervals and verdicts' });
  add(g, sv('line', { class: 'axis', x1: x(0), x2: x(0), y1: T - 8, y2: H - 22, 'stroke-dasharray': '3 2' }));
  [lo, 0, hi].forEach(function (v) {
    if (v !== 0 && Math.abs(x(v) - x(0)) < 44) return;
    add(g, sv('text', { x: x(v), y: H - 8, 'text-anchor': 'middle', text: sgn(v, 3) }));
  });
  rows.forEach(function (s, k) {
    var yy = T + k * rowH + rowH / 2, v = verdictOf(s.F1), i = names.indexOf(s.name);
    add(g, sv('text', { x: L - 8, y: yy + 4, 'text-anchor': 'end', text: visibleName(s.name).slice(0, 28) }));
    if (!isNum(s.F1.delta) || !isNum(s.F1.delta_ci_low) || !isNum(s.F1.delta_ci_high)) {
      add(g, sv('text', { x: x(0) + 6, y: yy + 4, text: 'no ΔF1 (missing scores)' }));
      return;
    }
    add(g, sv('line', { class: 'ci-line v-' + v, x1: x(s.F1.delta_ci_low), x2: x(s.F1.delta_ci_high), y1: yy, y2: yy }));
    add(g, sv('circle', { class: 'v-' + v, cx: x(s.F1.delta), cy: yy, r: 4.5, fill: colorOf(i), 'data-system': s.name, 'data-verdict': v },
      sv('title', { text: visibleName(s.name) + ': ' + sgn(s.F1.delta) + ' [' + fmt(s.F1.delta_ci_low) + ', ' + fmt(s.F1.delta_ci_high) + '], ' + VERDICT[v].words })));
    add(g, sv('text', { class: 'v-' + v, x: W - Rm + 8, y: yy + 4, text: VERDICT[v].mark + ' ' + VERDICT[v].words }));
  });
  add(document.getElementById('forest'), chartFigure('ΔF1 against ' + visibleName(base) + ' (paired ' + D.meta.pct + ' interval)', g));
}

function wordChart(sys, labels, words) {
  var W = Math.max(320, 70 + labels.length * (sys.length * 14 + 22)), H = 200, L = 44, B = 30;
  var y = function (v) { return 8 + (H - B - 8) * (1 - v); };
  var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', id: 'words-chart', class: 'chart',
    'aria-label': 'mean recall of reference words by frequency bucket, per system; axis from 0 to 1' });
  [0, 0.5, 1].forEach(function (v) {
    add(g, sv('line', { class: 'grid', x1: L, x2: W - 4, y1: y(v), y2: y(v) }));
    add(g, sv('text', { x: L - 4, y: y(v) + 3, 'text-anchor': 'end', text: fmt(v, 1) }));
  });
  var gw = (W - L - 10) / labels.length, bw = Math.min(14, (gw - 10) / sys.length);
  labels.forEach(function (label, k) {
    var x0 = L + 6 + k * gw;
    sys.forEach(function (n, j) {
      var v = words[n][k].recall;
      if (!isNum(v)) return;
      var vv = Math.max(0, Math.min(1, v));
      add(g, sv('rect', { x: x0 + j * bw, y: y(vv), width: Math.max(1, bw - 2), height: y(0) - y(vv), fill: colorOf(names.indexOf(n)) },
        sv('title', { text: visibleName(n) + ', ' + visibleName(label) + ': recall ' + fmt(v) })));
    });
    add(g, sv('text', { x: x0 + sys.length * bw / 2, y: H - B + 14, 'text-anchor': 'middle', text: visibleName(label).slice(0, 12) }));
  });
  return chartFigure('Recall of reference words by frequency (axis from 0)', g);
}
