// -- scatter of each system's segment F1 against the baseline's (canvas) ---------------------
// Up to POINTS segments are drawn as points; above, as a density of GRID x GRID cells. Either
// way a click opens the segment nearest to it, found through a grid index built once.
var POINTS = 20000, GRID = 128, SC = 280, PAD = 30;

function gridIndex(xs, ys, lo, hi) {
  var n = xs.length, cell = new Int32Array(n), counts = new Int32Array(GRID * GRID + 1);
  var span = hi - lo || 1;
  for (var i = 0; i < n; i++) {
    var gx = Math.floor((xs[i] - lo) / span * GRID), gy = Math.floor((ys[i] - lo) / span * GRID);
    if (Number.isNaN(gx) || Number.isNaN(gy)) { cell[i] = -1; continue; }
    gx = gx < 0 ? 0 : gx >= GRID ? GRID - 1 : gx;
    gy = gy < 0 ? 0 : gy >= GRID ? GRID - 1 : gy;
    cell[i] = gx + gy * GRID;
    counts[cell[i] + 1]++;
  }
  var start = new Int32Array(GRID * GRID + 1);
  for (var c = 0; c < GRID * GRID; c++) start[c + 1] = start[c] + counts[c + 1];
  var fill = start.slice(0, GRID * GRID), idx = new Int32Array(start[GRID * GRID]);
  for (i = 0; i < n; i++) if (cell[i] >= 0) idx[fill[cell[i]]++] = i;
  return { start: start, idx: idx };
}

function scatterPlot(j) {
  var s = j + 1, xs = F[0], ys = F[s], lo = FLO, hi = FHI, span = hi - lo || 1;
  var index = gridIndex(xs, ys, lo, hi), dense = N > POINTS;
  var px = function (v) { return PAD + (SC - PAD - 8) * (v - lo) / span; };
  var py = function (v) { return SC - PAD - (SC - PAD - 8) * (v - lo) / span; };
  var canvas = el('canvas', { id: 'scatter-' + j, class: 'scatter', width: SC * 2, height: SC * 2, tabindex: '0',
    'data-lo': String(lo), 'data-hi': String(hi), 'data-mode': dense ? 'density' : 'points', 'data-size': String(SC), 'data-pad': String(PAD),
    role: 'img', 'aria-label': 'F1 of ' + visibleName(others[j]) + ' (y) against ' + visibleName(base) + ' (x), per segment; click to open the nearest segment' });
  canvas.style.setProperty('width', SC + 'px');
  canvas.style.setProperty('height', SC + 'px');
  function draw() {
    var ctx = canvas.getContext('2d'), st = getComputedStyle(canvas);
    ctx.setTransform(2, 0, 0, 2, 0, 0);
    ctx.clearRect(0, 0, SC, SC);
    ctx.strokeStyle = st.getPropertyValue('--muted'); ctx.fillStyle = st.getPropertyValue('--fg');
    ctx.font = '10px system-ui, sans-serif';
    ctx.beginPath(); ctx.moveTo(PAD, 8); ctx.lineTo(PAD, SC - PAD); ctx.lineTo(SC - 8, SC - PAD); ctx.stroke();
    ctx.setLineDash([3, 2]); ctx.beginPath(); ctx.moveTo(px(lo), py(lo)); ctx.lineTo(px(hi), py(hi)); ctx.stroke(); ctx.setLineDash([]);
    ctx.fillText(fmt(lo, 2), PAD - 10, SC - PAD + 12); ctx.fillText(fmt(hi, 2), SC - 30, SC - PAD + 12);
    ctx.fillText(fmt(hi, 2), 2, 14);
    var color = st.getPropertyValue('--s' + (s % 10)).trim() || '#4477aa';
    ctx.fillStyle = color;
    if (!dense) {
      ctx.globalAlpha = N > 2000 ? 0.35 : 0.75;
      for (var i = 0; i < N; i++) if (!Number.isNaN(xs[i]) && !Number.isNaN(ys[i])) ctx.fillRect(px(xs[i]) - 1.5, py(ys[i]) - 1.5, 3, 3);
    } else {
      var maxc = 1, c, cw = (SC - PAD - 8) / GRID;
      for (c = 0; c < GRID * GRID; c++) maxc = Math.max(maxc, index.start[c + 1] - index.start[c]);
      for (c = 0; c < GRID * GRID; c++) {
        var k = index.start[c + 1] - index.start[c];
        if (!k) continue;
        ctx.globalAlpha = 0.15 + 0.85 * Math.log(1 + k) / Math.log(1 + maxc);
        ctx.fillRect(PAD + (c % GRID) * cw, SC - PAD - (Math.floor(c / GRID) + 1) * cw, Math.max(1, cw), Math.max(1, cw));
      }
    }
    ctx.globalAlpha = 1;
  }
  function nearest(x, y) {
    // x, y in CSS pixels of the canvas: search the grid cells in growing rings
    var vx = lo + (x - PAD) / (SC - PAD - 8) * span, vy = lo + (SC - PAD - y) / (SC - PAD - 8) * span;
    var gx = Math.floor((vx - lo) / span * GRID), gy = Math.floor((vy - lo) / span * GRID), best = -1, bestD = Infinity;
    for (var r = 0; r < GRID; r++) {
      for (var cy = gy - r; cy <= gy + r; cy++) {
        for (var cx = gx - r; cx <= gx + r; cx++) {
          if (Math.max(Math.abs(cx - gx), Math.abs(cy - gy)) !== r || cx < 0 || cy < 0 || cx >= GRID || cy >= GRID) continue;
          var c = cx + cy * GRID;
          for (var t = index.start[c]; t < index.start[c + 1]; t++) {
            var i = index.idx[t], d = Math.pow(px(xs[i]) - x, 2) + Math.pow(py(ys[i]) - y, 2);
            if (d < bestD || (d === bestD && i < best)) { bestD = d; best = i; }
          }
        }
      }
      if (best >= 0 && r > 0 && (r - 1) * (SC - PAD - 8) / GRID > Math.sqrt(bestD)) break;
    }
    return best;
  }
  canvas.addEventListener('click', function (e) {
    var b = canvas.getBoundingClientRect(), i = nearest(e.clientX - b.left, e.clientY - b.top);
    canvas.dataset.picked = String(i);
    if (i >= 0) showSegment(i, true);
  });
  function asSvg() {
    var g = sv('svg', { xmlns: SVG, width: SC, height: SC, viewBox: '0 0 ' + SC + ' ' + SC });
    add(g, sv('path', { d: 'M' + PAD + ' 8V' + (SC - PAD) + 'H' + (SC - 8), fill: 'none', stroke: '#5b6570' }));
    add(g, sv('line', { x1: px(lo), y1: py(lo), x2: px(hi), y2: py(hi), stroke: '#5b6570', 'stroke-dasharray': '3 2' }));
    add(g, sv('text', { x: PAD - 10, y: SC - PAD + 12, 'font-size': 10, text: fmt(lo, 2) }));
    add(g, sv('text', { x: SC - 30, y: SC - PAD + 12, 'font-size': 10, text: fmt(hi, 2) }));
    var color = getComputedStyle(canvas).getPropertyValue('--s' + (s % 10)).trim() || '#4477aa';
    if (!dense) {
      for (var i = 0; i < N; i++) if (!Number.isNaN(xs[i]) && !Number.isNaN(ys[i])) add(g, sv('circle', { cx: px(xs[i]).toFixed(1), cy: py(ys[i]).toFixed(1), r: 1.5, fill: color, 'fill-opacity': 0.5 }));
    } else {
      var cw = (SC - PAD - 8) / GRID, maxc = 1, c;
      for (c = 0; c < GRID * GRID; c++) maxc = Math.max(maxc, index.start[c + 1] - index.start[c]);
      for (c = 0; c < GRID * GRID; c++) {
        var k = index.start[c + 1] - index.start[c];
        if (k) add(g, sv('rect', { x: (PAD + (c % GRID) * cw).toFixed(2), y: (SC - PAD - (Math.floor(c / GRID) + 1) * cw).toFixed(2), width: cw.toFixed(2), height: cw.toFixed(2),
          fill: color, 'fill-opacity': (0.15 + 0.85 * Math.log(1 + k) / Math.log(1 + maxc)).toFixed(3) }));
      }
    }
    return serializeSvg(g);
  }
  redraws.push(draw);  // drawn once in the document (the colours come from its styles)
  var caption = 'F1 of ' + visibleName(others[j]) + ' (y) against ' + visibleName(base) + ' (x)' + (dense ? ', density of ' + N + ' segments' : '');
  var tools = el('button', { type: 'button', class: 'svg noprint', 'data-for': canvas.id, onclick: function () { showExport(asSvg(), 'scatter-' + j + '.svg', 'image/svg+xml'); } }, 'SVG');
  return el('figure', null, el('figcaption', null, caption, ' ', tools), canvas);
}
var redraws = [], FLO = 0, FHI = 1;
function scatters() {
  var wrap = document.getElementById('scatter');
  others.forEach(function (n, j) { add(wrap, scatterPlot(j)); });
  redraws.forEach(function (f) { f(); });
}
