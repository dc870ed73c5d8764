// -- start: unpack the blocks, compute the aggregates once, draw ----------------------------
function themeButton() {
  var modes = ['auto', 'light', 'dark'], btn = document.getElementById('theme'), mode = 0;
  btn.addEventListener('click', function () {
    mode = (mode + 1) % 3;
    if (modes[mode] === 'auto') delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = modes[mode];
    btn.textContent = 'colours: ' + modes[mode];
    redraws.forEach(function (f) { f(); });
  });
}

function keys(e) {
  var tag = document.activeElement ? document.activeElement.tagName : '';
  if (e.key === '/' && tag !== 'INPUT' && tag !== 'TEXTAREA' && tag !== 'SELECT') { e.preventDefault(); document.getElementById('search').focus(); }
  else if (e.key === 'Escape' && selected >= 0) {
    var p = positionOf(selected);
    if (p >= 0) focusAt(p);
  }
}

// A meta CSP cannot forbid navigation: a click on any link that is not the page's own (a
// fragment, or a blob: download it made) is cancelled, as is a form submission.
function guardLinks() {
  document.addEventListener('click', function (e) {
    var a = e.target.closest && e.target.closest('a[href]');
    if (!a) return;
    var href = a.getAttribute('href');
    if (href.charAt(0) === '#' || ownLinks.has(href)) return;
    e.preventDefault();
    e.stopImmediatePropagation();
  }, true);
  document.addEventListener('submit', function (e) { e.preventDefault(); }, true);
  document.addEventListener('securitypolicyviolation', function () {
    document.body.dataset.cspViolations = String(+(document.body.dataset.cspViolations || 0) + 1);
  });
}

function unpackNumbers(flat) {
  var lay = D.numbers;
  function ints(key) { var o = lay[key]; return flat.subarray(o[0], o[0] + o[1]); }
  function scores(key) {
    var src = ints(key), out = new Float64Array(src.length);
    for (var i = 0; i < src.length; i++) out[i] = src[i] === NAN_CODE ? NaN : src[i] / 1e6;
    return out;
  }
  names.forEach(function (n, s) {
    P[s] = scores(s + ':P'); R[s] = scores(s + ':R'); F[s] = scores(s + ':F');
    BEST[s] = ints(s + ':best_ref'); TRUNC[s] = ints(s + ':truncated');
    var d = new Float64Array(N), c = lay[s + ':cmp'] ? ints(s + ':cmp') : new Int32Array(N);
    for (var i = 0; i < N; i++) {
      d[i] = F[s][i] - F[0][i];
      if (!lay[s + ':cmp']) c[i] = Number.isNaN(d[i]) ? 2 : d[i] >= TIE ? 1 : d[i] <= -TIE ? -1 : 0;
    }
    DELTA[s] = d; CMP[s] = c;
  });
  REFTRUNC = ints('ref_truncated');
}

var timings = { script: performance.now() };
function start(parts) {
  timings.unpacked = performance.now();
  D = parts[0];
  names = D.systems; base = names[0]; others = names.slice(1); N = D.n;
  unpackNumbers(parts[1]);

  var lo = Infinity, hi = -Infinity;
  names.forEach(function (n, s) { var e = extent(F[s]); lo = Math.min(lo, e[0]); hi = Math.max(hi, e[1]); });
  if (!(hi > lo)) { hi = (isFinite(lo) ? lo : 0) + 1e-3; lo = hi - 2e-3; }
  FLO = lo; FHI = hi;
  order = new Int32Array(N);
  for (var i = 0; i < N; i++) order[i] = i;
  view = order;
  header(); systemsTable(); forest(); distributions(); scatters(); bucketsView(); wordsView();
  segmentControls(); drawRows(true); themeButton();
  var printQuery = window.matchMedia('print');
  printQuery.addEventListener('change', function (e) { printMode(e.matches); });
  window.addEventListener('beforeprint', function () { printMode(true); });
  window.addEventListener('afterprint', function () { printMode(printQuery.matches); });
  document.addEventListener('keydown', keys);
  window.rbReport = Object.freeze({
    view: function () { return Array.from(view); },
    open: function (i) { showSegment(i, true); }
  });
  timings.ready = performance.now();
  document.body.dataset.timings = JSON.stringify(timings);
  if (D.text_chunks <= 1) textsRead();
  document.body.dataset.ready = '1';
}

// the static note that says the script did not run: it did
var noRun = document.getElementById('no-script');
if (noRun) noRun.remove();
guardLinks();
blockJSON('report-data').then(function (data) {
  D = data;
  // the numbers and the first texts before the page is ready; the other texts after
  return Promise.all([data, blockInts('report-numbers'), data.text_chunks ? textBlock(0) : null]);
}).then(start).then(function () { setTimeout(allTexts, 0); }).catch(function (err) {
  var damaged = err instanceof Damaged;
  var note = el('p', { class: 'warn', id: 'read-error', role: 'alert', text: damaged ? err.message :
    'This report could not be drawn (its data may be damaged): ' + (err && err.message ? err.message : String(err)) });
  var meta = document.getElementById('meta');
  meta.textContent = '';
  add(meta, note);
  document.body.dataset.error = damaged ? err.block : 'script';
  if (!damaged) throw err;
});
