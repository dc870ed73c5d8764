/* rust-bertscore comparison report: everything drawn here from the data blocks above (no
   network, no library). Data layout: rust_bertscore/analyses/report_page.py. The page's
   script files are joined, in report_html.SCRIPTS order, into one function scope. */
var SVG = 'http://www.w3.org/2000/svg';
var NAN_CODE = -2147483648;
// Maps keyed by names from the input files have no prototype (a system called `constructor`
// or `__proto__` is a key like any other): dict() makes one, the main JSON is read into them.
function dict(from) {
  var out = Object.create(null);
  if (from) Object.keys(from).forEach(function (k) { out[k] = from[k]; });
  return out;
}
var VERDICT = dict({
  better: { mark: '▲', words: 'better' },
  worse: { mark: '▼', words: 'worse' },
  same: { mark: '●', words: 'no significant difference' }
});
// The report's data, filled in by main.js: D the main JSON, T the texts; per system (index
// into names) typed arrays of P, R, F, best references (n x 3) and truncation flags.
var D, names, base, others, N;
// Texts come in blocks of D.text_chunk segments (tx-K), unpacked on demand: TX[K] once read.
var TX = [], TX_P = [];
// CMP[s][i]: 1, -1 or 0 where system s's raw F1 is above, below or within TIE of the
// baseline's (computed in Python, as the table's wins / losses / ties), 2 where either is NaN.
var P = [], R = [], F = [], BEST = [], TRUNC = [], REFTRUNC, DELTA = [], CMP = [];

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
// Attributes; 'text' sets the text (a text node, never markup), 'on*' adds a listener and
// 'css' sets style properties through the CSSOM (a style attribute would need 'unsafe-hashes').
function setAttrs(e, attrs) {
  if (!attrs) return;
  Object.keys(attrs).forEach(function (k) {
    var v = attrs[k];
    if (v === null || v === undefined || v === false) return;
    if (k === 'text') e.textContent = v;
    else if (k === 'css') Object.keys(v).forEach(function (p) { e.style.setProperty(p, v[p]); });
    else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  });
}
function add(e, c) {
  if (c === null || c === undefined || c === false) return;
  if (Array.isArray(c)) { for (var i = 0; i < c.length; i++) add(e, c[i]); return; }
  e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
}
function isNum(x) { return x !== null && x !== undefined && !Number.isNaN(x); }
function fmt(x, d) { return isNum(x) ? x.toFixed(d === undefined ? 4 : d) : '–'; }
function sgn(x, d) { return isNum(x) ? (x >= 0 ? '+' : '') + fmt(x, d) : '–'; }
function colorOf(i) { return 'var(--s' + (i % 10) + ')'; }
function cosColor(c) {
  // 0 (or below) orange-red, 1 blue; constant light tone so dark text stays readable
  var t = Math.max(0, Math.min(1, c));
  return 'hsl(' + (20 + 190 * t).toFixed(0) + ', 75%, ' + (82 - 12 * t).toFixed(0) + '%)';
}
// A name or label from the input files (system names, paths, words, the title) with every
// control, bidi and invisible format character shown as ⟨U+XXXX⟩ instead of acting.
// Hidden: controls, format characters (bidi, zero-width, tags, interlinear annotation), line
// and paragraph separators, lone surrogates and every Default_Ignorable_Code_Point (soft
// hyphen, variation selectors, Hangul fillers...) and noncharacter (U+FFFF...): report_html.visible's rule.
var INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Noncharacter_Code_Point}]/gu;
function visibleName(s) {
  return String(s).replace(INVISIBLE, function (c) {
    return '⟨U+' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0') + '⟩';
  });
}
// min and max of an array-like without spreading it into a call (no stack limit); NaN skipped
function extent(xs) {
  var lo = Infinity, hi = -Infinity;
  for (var i = 0; i < xs.length; i++) {
    var v = xs[i];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return [lo, hi];
}
function verdictOf(x) { return VERDICT[x.verdict] ? x.verdict : 'same'; }
function verdictMark(v) {
  var d = VERDICT[v] || VERDICT.same;
  return el('span', { class: 'verdict verdict-' + v, 'data-verdict': v }, d.mark + ' ' + d.words);
}

// -- data blocks ----------------------------------------------------------------------------
function b64bytes(id) {
  var text = document.getElementById(id).textContent.replace(/\s+/g, '');
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
  var bin = atob(text), bytes = new Uint8Array(bin.length);
  for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}
function gunzip(id) {
  var stream = new Blob([b64bytes(id)]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream);
}
// A block that cannot be read (missing, cut, altered) rejects with a Damaged error naming it.
function Damaged(id, what) {
  this.block = id;
  this.message = 'This report\'s data is damaged: block ' + id + (what ? ' (' + what + ')' : '') + ' could not be read.';
}
Damaged.prototype.toString = function () { return this.message; };
function guarded(id, what, work) {
  try { return work().catch(function () { throw new Damaged(id, what); }); }
  catch (e) { return Promise.reject(new Damaged(id, what)); }
}
function segRange(k, size) {
  var n = D && D.n !== undefined ? D.n : (k + 1) * size, a = k * size, b = Math.min(n, (k + 1) * size) - 1;
  return 'segments ' + a.toLocaleString('en-US') + '–' + b.toLocaleString('en-US');
}
// JSON objects read into prototype-less maps (names from the input files key them)
function nullProto(key, value) {
  return value && typeof value === 'object' && !Array.isArray(value) ? dict(value) : value;
}
function blockJSON(id, what, plain) {
  return guarded(id, what, function () { return gunzip(id).text().then(function (t) { return plain ? JSON.parse(t) : JSON.parse(t, nullProto); }); });
}
function blockInts(id) { return guarded(id, '', function () { return gunzip(id).arrayBuffer().then(function (b) { return new Int32Array(b); }); }); }

// -- export: CSV, LaTeX, SVG, into the export box and a blob: download (no request) ---------
var ownLinks = new Set();
function showExport(text, filename, mime) {
  var box = document.getElementById('export-text'), link = document.getElementById('export-link');
  box.value = text;
  if (link.dataset.url) { URL.revokeObjectURL(link.dataset.url); ownLinks.delete(link.dataset.url); }
  var url = URL.createObjectURL(new Blob([text], { type: mime }));
  ownLinks.add(url);
  link.dataset.url = url;
  link.href = url;
  link.download = filename;
  link.textContent = 'download ' + filename;
  document.getElementById('export-section').classList.remove('hidden');
  box.dataset.kind = filename.split('.').pop();
  box.scrollIntoView({ block: 'nearest' });
}
var PLAIN_NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
// a cell's text; a block inside it (the difference under a mean) after a '; '
function cellText(c) {
  var copy = c.cloneNode(true);
  copy.querySelectorAll('div').forEach(function (d) { d.before('; '); });
  copy.querySelectorAll('span').forEach(function (d) { d.before(' '); });
  return copy.textContent.replace(/\s+/g, ' ').replace(/ ;/g, ';').trim();
}
function tableRows(table) {
  return Array.from(table.querySelectorAll('tr')).filter(function (tr) { return !tr.classList.contains('spacer'); })
    .map(function (tr) { return Array.from(tr.children).map(cellText); });
}
function csvOf(table) {
  return tableRows(table).map(function (r) {
    return r.map(function (c) {
      // a cell a spreadsheet would read as a formula (= + - @ tab CR first) is given a leading
      // apostrophe, unless the whole cell is a plain number
      if (/^[=+\-@\t\r]/.test(c) && !PLAIN_NUMBER.test(c)) c = "'" + c;
      return /[",\n\r']/.test(c) ? '"' + c.replace(/"/g, '""') + '"' : c;
    }).join(',');
  }).join('\n') + '\n';
}
// LaTeX for pdflatex (inputenc utf8): specials escaped, the page's marks as words or ASCII
var LATEX = {
  '\\': '\\textbackslash{}', '~': '\\textasciitilde{}', '^': '\\textasciicircum{}', '<': '\\textless{}',
  '>': '\\textgreater{}', '|': '\\textbar{}', '▲ ': '', '▼ ': '', '● ': '', '▲': 'better', '▼': 'worse',
  '●': 'same', '✂': '(cut)', '⟨': '\\textless{}', '⟩': '\\textgreater{}', 'Δ': '$\\Delta$', '–': '--',
  '−': '-', '…': '...'
};
function latexEscape(s) {
  return s.replace(/[▲▼●] ?|[\\{}&%$#_~^<>|✂⟨⟩Δ–−…]/g, function (c) { return c in LATEX ? LATEX[c] : '\\' + c; });
}
function latexOf(table) {
  var rows = tableRows(table), cols = rows.length ? rows[0].length : 0;
  var out = ['\\begin{tabular}{l' + 'r'.repeat(Math.max(0, cols - 1)) + '}', '\\hline'];
  rows.forEach(function (r, k) {
    // '{}' first: a row starting with [ or * would be read as the argument of the last \\\\
    out.push('{}' + r.map(latexEscape).join(' & ') + ' \\\\');
    if (k === 0) out.push('\\hline');
  });
  out.push('\\hline', '\\end{tabular}');
  return out.join('\n') + '\n';
}
// Characters XML 1.0 forbids (C0 controls but tab, LF and CR; U+FFFE, U+FFFF; lone
// surrogates) replaced by U+FFFD in every text and attribute of an exported SVG.
var NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
function xmlText(s) { return s.replace(NOT_XML, '\ufffd'); }
function serializeSvg(root) {
  [root].concat(Array.from(root.querySelectorAll('*'))).forEach(function (e) {
    Array.from(e.attributes).forEach(function (a) { if (NOT_XML.test(a.value)) e.setAttribute(a.name, xmlText(a.value)); NOT_XML.lastIndex = 0; });
    e.childNodes.forEach(function (t) { if (t.nodeType === 3) t.data = xmlText(t.data); });
  });
  return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(root) + '\n';
}
// The chart as a standalone SVG: colours from the page's styles written into the copy.
function svgOf(svg) {
  var copy = svg.cloneNode(true), from = svg.querySelectorAll('*'), to = copy.querySelectorAll('*');
  copy.setAttribute('xmlns', SVG);
  for (var i = 0; i < from.length; i++) {
    var st = getComputedStyle(from[i]);
    if (from[i].getAttribute('fill') !== null || from[i].tagName === 'text') to[i].setAttribute('fill', st.fill);
    if (from[i].getAttribute('stroke') !== null || st.stroke !== 'none') to[i].setAttribute('stroke', st.stroke);
    if (from[i].tagName === 'text') to[i].setAttribute('font-size', st.fontSize);
    to[i].removeAttribute('class');
  }
  return serializeSvg(copy);
}
function slug(s) { return String(s).replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 60) || 'export'; }
function tableTools(table, name) {
  return el('div', { class: 'export noprint' }, 'Export: ',
    el('button', { type: 'button', class: 'csv', 'data-for': table.id, onclick: function () { showExport(csvOf(table), slug(name) + '.csv', 'text/csv'); } }, 'CSV'), ' ',
    el('button', { type: 'button', class: 'latex', 'data-for': table.id, onclick: function () { showExport(latexOf(table), slug(name) + '.tex', 'application/x-tex'); } }, 'LaTeX'));
}
function chartFigure(caption, svg, makeSvg) {
  var tools = el('button', { type: 'button', class: 'svg noprint', 'data-for': svg.id || '', onclick: function () {
    showExport(makeSvg ? makeSvg() : svgOf(svg), slug(svg.id || caption) + '.svg', 'image/svg+xml');
  } }, 'SVG');
  return el('figure', null, el('figcaption', null, caption, ' ', tools), svg);
}
