// -- the segment table: rows drawn in a window as it scrolls (virtual scrolling); sorting and
// filtering work on index arrays ------------------------------------------------------------
var ROW_H = 44, OVERSCAN = 8;
var order, view, sortKey = null, sortDir = 1, selected = -1, cursor = -1, shownSystem = 0;
var TX_ALL = false, query = '', queryRe = null, haystack = null, chosen = new Set(), drawPending = false;

// a text block that cannot be read is named in #seg-damaged; its segments show so, the
// others keep working
var TX_BAD = [];
function textBlock(k) {
  if (!TX_P[k]) {
    TX_P[k] = blockJSON('tx-' + k, segRange(k, D.text_chunk), true).then(function (c) { TX[k] = c; return c; }, function (err) {
      TX_BAD[k] = err;
      var note = document.getElementById('seg-damaged');
      if (note) {
        note.textContent = TX_BAD.filter(Boolean).map(String).join(' ');
        note.classList.remove('hidden');
      }
      return null;
    });
  }
  return TX_P[k];
}
function damagedText(i) { return TX_BAD[Math.floor(i / D.text_chunk)] || null; }
function textsOf(i) { return textBlock(Math.floor(i / D.text_chunk)); }
var allTextsP = null;
function allTexts() {
  // one block after another, so the page stays responsive while they unpack
  if (!allTextsP) {
    allTextsP = (function next(k) {
      return k >= D.text_chunks ? Promise.resolve() : textBlock(k).then(function () {
        return new Promise(function (ok) { setTimeout(ok, 0); }).then(function () { return next(k + 1); });
      });
    })(0).then(textsRead);
  }
  return allTextsP;
}
function textsRead() {
  TX_ALL = true;
  timings.texts = performance.now();
  document.body.dataset.timings = JSON.stringify(timings);
  document.body.dataset.texts = 'all';
}
function tx(i) { return TX[Math.floor(i / D.text_chunk)]; }
function candOf(s, i) { var c = tx(i); return c ? c.cands[s][i % D.text_chunk] : null; }
function refsOf(i) { var c = tx(i); return c ? c.refs[i % D.text_chunk] : null; }
function srcOf(i) { var c = tx(i); return c && c.src ? c.src[i % D.text_chunk] : null; }
function refOf(i) { var r = refsOf(i); return r === null ? null : r.length ? r[0] : ''; }

// text with the matches of the search shown in <mark> (text nodes only, never markup), by
// the filter's own rule (indexOf in the lower-cased text), the first MAX_MARKS of them and a
// note of how many more. Where lower-casing changes the length ('İ' is two code units lower
// case), indices are mapped code point by code point; a match found only in the whole lower-
// cased text marks the whole text.
var MAX_MARKS = 100;
function lowered(text) {
  var low = text.toLowerCase();
  if (low.length === text.length) return { low: low, at: null };
  var parts = [], at = [], u = 0;
  for (var ch of text) {
    var l = ch.toLowerCase();
    parts.push(l);
    for (var k = 0; k < l.length; k++) at.push(u);
    u += ch.length;
  }
  at.push(u);
  return { low: parts.join(''), at: at, whole: low };
}
function highlighted(text) {
  if (!query || text === null) return [text];
  var lw = lowered(text), low = lw.low, q = query, out = [], last = 0, marks = 0, more = 0;
  var pos = low.indexOf(q);
  if (pos < 0 && lw.at && lw.whole.indexOf(q) >= 0) return [el('mark', { text: text })];
  while (pos >= 0) {
    if (marks >= MAX_MARKS) { more++; pos = low.indexOf(q, pos + q.length); continue; }
    var a = lw.at ? lw.at[pos] : pos, b = lw.at ? lw.at[pos + q.length] : pos + q.length;
    if (a > last) out.push(text.slice(last, a));
    if (b > a) out.push(el('mark', { text: text.slice(Math.max(a, last), b) }));
    last = Math.max(last, b);
    marks++;
    pos = low.indexOf(q, pos + q.length);
  }
  if (last < text.length) out.push(text.slice(last));
  if (more) out.push(el('span', { class: 'more-marks', text: ' (+' + more + ' more match' + (more === 1 ? '' : 'es') + ')' }));
  return out;
}
function cutMark(on, what) { return on ? el('span', { class: 'cut', title: what + ' cut at the model\'s length', 'aria-label': what + ' cut at the model\'s length', text: '✂' }) : null; }

function segmentControls() {
  var sel = el('select', { id: 'delta-system', 'aria-label': 'system whose ΔF1 the range filters' },
    others.map(function (n) { return el('option', { value: n, title: visibleName(n), text: visibleName(n) }); }));
  var show = el('select', { id: 'cand-system', 'aria-label': 'system whose candidate the table shows',
    title: visibleName(names[0]),
    onchange: function (e) {
      shownSystem = +e.target.value;
      e.target.title = document.getElementById('cand-of').textContent = visibleName(names[shownSystem]);
      drawRows(true);
    } },
  names.map(function (n, s) { return el('option', { value: String(s), title: visibleName(n), text: visibleName(n), selected: s === 0 }); }));
  sel.title = others.length ? visibleName(others[0]) : '';
  add(document.getElementById('seg-controls'), [
    el('label', null, 'Search ', el('input', { type: 'search', id: 'search', placeholder: 'text in any column (/)', oninput: refilter })),
    el('label', null, 'ΔF1 of ', sel, ' from ', el('input', { type: 'number', id: 'dmin', step: '0.01', 'aria-label': 'smallest ΔF1', oninput: refilter }),
      ' to ', el('input', { type: 'number', id: 'dmax', step: '0.01', 'aria-label': 'largest ΔF1', oninput: refilter })),
    el('label', null, 'Candidate of ', show),
    el('button', { type: 'button', id: 'side-show', onclick: showSide }, 'Side by side (', el('span', { id: 'chosen-count', text: '0' }), ')'),
    el('button', { type: 'button', id: 'side-clear', onclick: function () { chosen.clear(); updateChosen(); drawRows(true); } }, 'Clear ticks')
  ]);
  sel.addEventListener('change', function () { sel.title = visibleName(sel.value); refilter(); });
  var sortButton = function (key, label, title) {
    return el('button', { class: 'sort', type: 'button', 'data-key': key, text: label, title: 'sort by ' + title, onclick: function () { sortBy(key); } });
  };
  var cols = [el('col', { class: 'c-pick' }), el('col', { class: 'c-idx' }), el('col', { class: 'c-text' }), el('col', { class: 'c-text' })]
    .concat(names.map(function () { return el('col', { class: 'c-sys' }); }));
  var head = el('tr', null,
    el('th', { class: 'pick' }, el('span', { class: 'sr', text: 'side by side' })),
    el('th', { class: 'num', 'data-key': 'idx', 'aria-sort': 'none' }, sortButton('idx', '#', 'segment number')),
    el('th', { 'data-key': 'ref', 'aria-sort': 'none' }, sortButton('ref', 'reference', 'reference text')),
    el('th', { 'data-key': 'cand', 'aria-sort': 'none', id: 'cand-head' }, sortButton('cand', 'candidate', 'candidate text'), ' ',
      el('span', { id: 'cand-of', class: 'cand-of muted', text: visibleName(names[0]) })),
    names.map(function (n, s) {
      return el('th', { class: 'num sys', 'data-system': n, 'aria-sort': 'none' },
        el('span', { class: 'sysname', title: visibleName(n), text: visibleName(n) }),
        el('span', { class: 'sorts' }, sortButton('F:' + n, 'F1', 'F1 of ' + visibleName(n)), s ? ' ' : null, s ? sortButton('dF:' + n, 'ΔF1', 'ΔF1 of ' + visibleName(n)) : null));
    }));
  var table = el('table', { id: 'segments', 'aria-label': 'segments; Enter or click shows the full texts and alignment', 'aria-rowcount': String(N + 1) },
    el('colgroup', null, cols), el('thead', null, head), el('tbody', { id: 'seg-body' }));
  table.style.setProperty('min-width', (92 + 76 * names.length + 260) + 'px');
  table.addEventListener('keydown', rowKeys);
  table.addEventListener('click', rowClick);
  var wrap = document.getElementById('segments-wrap');
  wrap.classList.add('vscroll');
  add(wrap, table);
  wrap.addEventListener('scroll', function () { drawRows(false); }, { passive: true });
}

function keyOf(key) {
  if (key === 'idx') return null;
  if (key === 'ref') return function (i) { return refOf(i); };
  if (key === 'cand') return function (i) { return candOf(shownSystem, i); };
  var s = names.indexOf(key.slice(key.indexOf(':') + 1));
  return key[0] === 'F' ? F[s] : DELTA[s];
}

function sortBy(key) {
  if (typeof keyOf(key) === 'function' && !TX_ALL) { allTexts().then(function () { sortBy(key); }); return; }
  if (sortKey === key) sortDir = -sortDir; else { sortKey = key; sortDir = 1; }
  var k = keyOf(key), idx = new Int32Array(N);
  for (var i = 0; i < N; i++) idx[i] = i;
  if (k === null) { if (sortDir < 0) idx.reverse(); }
  else if (typeof k === 'function') {
    var texts = new Array(N);
    for (i = 0; i < N; i++) texts[i] = k(i);
    idx.sort(function (a, b) { var x = texts[a], y = texts[b]; return x < y ? -sortDir : x > y ? sortDir : a - b; });
  } else {
    // numbers: NaN last in either direction; equal values keep segment order
    idx.sort(function (a, b) {
      var x = k[a], y = k[b], nx = Number.isNaN(x), ny = Number.isNaN(y);
      if (nx || ny) return nx && ny ? a - b : nx ? 1 : -1;
      return x < y ? -sortDir : x > y ? sortDir : a - b;
    });
  }
  order = idx;
  document.querySelectorAll('#segments thead th').forEach(function (th) {
    var on = th.querySelector('button.sort[data-key="' + CSS.escape(key) + '"]');
    th.setAttribute('aria-sort', on ? (sortDir > 0 ? 'ascending' : 'descending') : 'none');
  });
  document.querySelectorAll('#segments button.sort').forEach(function (b) {
    b.dataset.sorted = b.dataset.key === key ? (sortDir > 0 ? 'ascending' : 'descending') : '';
  });
  refilter();
}

function buildHaystack() {
  haystack = new Array(N);
  for (var i = 0; i < N; i++) {
    if (!tx(i)) { haystack[i] = ''; continue; }
    var parts = refsOf(i).slice();
    if (D.has_src) parts.push(srcOf(i));
    for (var s = 0; s < names.length; s++) parts.push(candOf(s, i));
    haystack[i] = parts.join('\u0001').toLowerCase();
  }
}

function refilter() {
  var q = document.getElementById('search').value.trim();
  query = q.toLowerCase();
  if (query && !TX_ALL) { document.getElementById('seg-info').textContent = 'Reading the texts…'; allTexts().then(refilter); return; }
  if (query && !haystack) buildHaystack();
  var n = document.getElementById('delta-system').value;
  var lo = parseFloat(document.getElementById('dmin').value), hi = parseFloat(document.getElementById('dmax').value);
  var d = DELTA[names.indexOf(n)], out = new Int32Array(N), k = 0;
  var useLo = d && !Number.isNaN(lo), useHi = d && !Number.isNaN(hi);
  for (var t = 0; t < N; t++) {
    var i = order[t];
    if (query && haystack[i].indexOf(query) < 0) continue;
    if (useLo && !(d[i] >= lo)) continue;
    if (useHi && !(d[i] <= hi)) continue;
    out[k++] = i;
  }
  view = out.subarray(0, k);
  var wrap = document.getElementById('segments-wrap');
  wrap.scrollTop = 0;
  drawRows(true);
  if (selected >= 0 && !document.getElementById('alignment-section').classList.contains('hidden')) showSegment(selected, false);
}

function textCell(text, key, cut, what, i) {
  if (text === null && damagedText(i)) return el('td', { class: 'text damaged', 'data-key': key, title: String(damagedText(i)), text: '(damaged)' });
  if (text === null) return el('td', { class: 'text pending', 'data-key': key, text: '…' });
  return el('td', { class: 'text', 'data-key': key, dir: 'auto' }, cutMark(cut, what), highlighted(text));
}

function rowOf(i) {
  var tr = el('tr', { class: 'row', tabindex: '0', 'data-seg': String(i), 'aria-selected': i === selected ? 'true' : 'false' });
  add(tr, el('td', { class: 'pick' }, el('input', { type: 'checkbox', class: 'pick', 'aria-label': 'segment ' + i + ' side by side', checked: chosen.has(i), 'data-seg': String(i) })));
  add(tr, el('td', { class: 'num', 'data-key': 'idx', text: String(i) }));
  add(tr, textCell(refOf(i), 'ref', REFTRUNC[i], 'reference', i));
  add(tr, textCell(candOf(shownSystem, i), 'cand', TRUNC[shownSystem][i], 'candidate', i));
  names.forEach(function (n, s) {
    var d = DELTA[s][i], c = CMP[s][i];
    add(tr, el('td', { class: 'num sys', 'data-system': n },
      el('span', { class: 'f', 'data-key': 'F:' + n, text: fmt(F[s][i]) }),
      s ? el('span', { class: 'd' + (c === 1 ? ' pos' : c === -1 ? ' neg' : ''), 'data-cmp': String(c), 'data-key': 'dF:' + n, text: sgn(d) }) : null,
      TRUNC[s][i] && s !== shownSystem ? cutMark(true, 'candidate') : null));
  });
  return tr;
}

// In print every row of the view is drawn, up to PRINT_MAX, with a note of the search, the
// filter and the rows left out (#print-note, shown only in print).
var PRINT_MAX = 2000, printing = false;
function printMode(on) {
  if (printing === on) return;
  printing = on;
  drawRows(true);
}
function printNote(first, last) {
  var note = document.getElementById('print-note');
  if (!note) return;
  var parts = [], q = document.getElementById('search').value.trim();
  var lo = document.getElementById('dmin').value, hi = document.getElementById('dmax').value;
  if (q) parts.push('search “' + q + '”');
  if (lo !== '' || hi !== '') parts.push('ΔF1 of ' + visibleName(document.getElementById('delta-system').value) + (lo !== '' ? ' from ' + lo : '') + (hi !== '' ? ' to ' + hi : ''));
  if (sortKey) parts.push('sorted by ' + visibleName(sortKey) + (sortDir > 0 ? ' ascending' : ' descending'));
  var left = view.length - (last - first);
  note.textContent = view.length + ' of ' + N + ' segments' + (parts.length ? ' (' + parts.join('; ') + ')' : '') + '.' +
    (left > 0 ? ' Printed: rows ' + (first + 1) + '–' + last + '; ' + left + ' more row' + (left === 1 ? ' is' : 's are') +
      ' left out: narrow the view with the search or the ΔF1 range, or read every segment from the report\'s data ' +
      '(rust_bertscore.analyses.report_page.read_blocks).' : '');
}
// draw the rows in view of the scroll box (and a few around); `force` redraws them all
var drawnFrom = -1, drawnTo = -1;
function drawRows(force) {
  var wrap = document.getElementById('segments-wrap');
  var first = Math.max(0, Math.floor(wrap.scrollTop / ROW_H) - OVERSCAN);
  var last = Math.min(view.length, Math.ceil((wrap.scrollTop + (wrap.clientHeight || 600)) / ROW_H) + OVERSCAN);
  if (printing) { first = 0; last = Math.min(view.length, PRINT_MAX); }
  if (!force && first === drawnFrom && last === drawnTo) return;
  drawnFrom = first; drawnTo = last;
  var body = document.getElementById('seg-body');
  var focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.seg : null;
  body.textContent = '';
  var frag = document.createDocumentFragment(), cols = 4 + names.length;
  var top = el('tr', { class: 'spacer', 'aria-hidden': 'true' }, el('td', { colspan: String(cols) }));
  top.firstChild.style.setProperty('height', (first * ROW_H) + 'px');
  frag.appendChild(top);
  for (var p = first; p < last; p++) {
    var tr = rowOf(view[p]);
    tr.setAttribute('aria-rowindex', String(p + 2));
    frag.appendChild(tr);
  }
  var bottom = el('tr', { class: 'spacer', 'aria-hidden': 'true' }, el('td', { colspan: String(cols) }));
  bottom.firstChild.style.setProperty('height', ((view.length - last) * ROW_H) + 'px');
  frag.appendChild(bottom);
  body.appendChild(frag);
  var missing = false;
  for (p = first; p < last && !missing; p++) missing = !tx(view[p]) && !damagedText(view[p]);
  if (missing) {
    var wanted = [];
    for (p = first; p < last; p++) if (!tx(view[p]) && !damagedText(view[p])) wanted.push(textsOf(view[p]));
    Promise.all(wanted).then(function () { drawRows(true); });
  }
  if (focused !== null && focused !== undefined) {
    var again = body.querySelector('tr.row[data-seg="' + focused + '"]');
    if (again) again.focus({ preventScroll: true });
  }
  printNote(first, last);
  document.getElementById('seg-info').textContent = view.length + ' of ' + N + ' segments' +
    (view.length !== N ? ' (filtered from ' + N + ')' : '') + (view.length ? ', rows ' + (first + 1) + '–' + last + ' drawn' : '');
}

// move the keyboard cursor to position p of the view: scroll it into the box, focus its row
function focusAt(p) {
  if (!view.length) return;
  p = Math.max(0, Math.min(view.length - 1, p));
  var wrap = document.getElementById('segments-wrap'), head = wrap.querySelector('thead').offsetHeight;
  var y = p * ROW_H;
  if (y < wrap.scrollTop) wrap.scrollTop = y;
  else if (y + ROW_H + head > wrap.scrollTop + wrap.clientHeight) wrap.scrollTop = y + ROW_H + head - wrap.clientHeight;
  drawRows(true);
  var tr = document.querySelector('#seg-body tr.row[data-seg="' + view[p] + '"]');
  if (tr) tr.focus({ preventScroll: true });
}
function positionOf(i) { for (var p = 0; p < view.length; p++) if (view[p] === i) return p; return -1; }

function rowKeys(e) {
  var tr = e.target.closest && e.target.closest('tbody tr.row');
  if (!tr || e.target.tagName === 'INPUT') return;
  var p = positionOf(+tr.dataset.seg), page = Math.max(1, Math.floor(document.getElementById('segments-wrap').clientHeight / ROW_H) - 2);
  if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); showSegment(+tr.dataset.seg, true); }
  else if (e.key === 'ArrowDown') { e.preventDefault(); focusAt(p + 1); }
  else if (e.key === 'ArrowUp') { e.preventDefault(); focusAt(p - 1); }
  else if (e.key === 'PageDown') { e.preventDefault(); focusAt(p + page); }
  else if (e.key === 'PageUp') { e.preventDefault(); focusAt(p - page); }
  else if (e.key === 'Home') { e.preventDefault(); focusAt(0); }
  else if (e.key === 'End') { e.preventDefault(); focusAt(view.length - 1); }
}
function rowClick(e) {
  var box = e.target.closest && e.target.closest('input.pick');
  if (box) {
    var i = +box.dataset.seg;
    if (box.checked) chosen.add(i); else chosen.delete(i);
    updateChosen();
    return;
  }
  var tr = e.target.closest && e.target.closest('tbody tr.row');
  if (tr) showSegment(+tr.dataset.seg, true);
}
function updateChosen() {
  document.getElementById('chosen-count').textContent = String(chosen.size);
  if (!document.getElementById('side-section').classList.contains('hidden')) showSide();
}
