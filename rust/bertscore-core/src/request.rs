//! A `POST /score` body, `{"cands": [str, ...], "refs": [str or [str, ...], ...]}`, parsed and
//! checked in one pass without Python: the server calls it with the GIL released, so no body
//! (8 MiB of nested arrays took 0.8-5 s of the interpreter's lock in Python's parser) stalls
//! the event loop.
//!
//! The JSON grammar is Python's `json.loads` (strict strings, `NaN` and `Infinity` accepted,
//! integers of at most [`MAX_INT_DIGITS`] digits, no duplicate key in any object), nesting is
//! bounded by [`MAX_DEPTH`], and the request's shape is checked while parsing: a value of the
//! wrong type is skipped (checked as JSON, never built) and reported. Errors come in the order
//! the Python checks gave them: the body's syntax (400) first, then its shape (422), the
//! number of pairs (413), the candidates, the lengths and the references.

use std::collections::HashSet;

/// The deepest nesting of arrays and objects accepted (Python's parser stops near 1,000).
pub const MAX_DEPTH: usize = 512;
/// The most digits of an integer (Python's `int` reads at most 4,300).
pub const MAX_INT_DIGITS: usize = 4300;

/// The references of one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// `refs` of one str per candidate.
    One(String),
    /// `refs` of a list of str per candidate.
    Many(Vec<String>),
}

/// A checked body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreBody {
    /// The candidates.
    pub cands: Vec<String>,
    /// One entry per candidate, all of one kind.
    pub refs: Vec<Reference>,
}

/// Why a body is refused: the HTTP status, a message, and the field and index at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyError {
    /// 400 (not JSON), 413 (too many pairs) or 422 (a wrong shape or type).
    pub status: u16,
    /// What is wrong, and where.
    pub message: String,
    /// `"cands"`, `"refs"`, or the key at fault.
    pub field: Option<String>,
    /// The index in that field.
    pub index: Option<usize>,
}

fn shape_error(message: String, field: Option<&str>, index: Option<usize>) -> BodyError {
    BodyError {
        status: 422,
        message,
        field: field.map(str::to_owned),
        index,
    }
}

/// A JSON value's kind, in Python's names (what `json.loads` would have made of it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Float,
    Bool,
    Null,
    List,
    Dict,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Str => "str",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Bool => "bool",
            Kind::Null => "NoneType",
            Kind::List => "list",
            Kind::Dict => "dict",
        }
    }
}

/// A decoded string (a lone surrogate, `\ud800` alone, spelled as its escape), and where its
/// first lone surrogate is (Python's parser keeps one, and the text then cannot be encoded).
struct Decoded {
    text: String,
    lone: Option<(u32, usize)>,
}

/// The first error of each later stage, kept while the whole body's syntax is checked.
#[derive(Default)]
struct Found {
    not_object: Option<BodyError>,
    cands_field: Option<BodyError>,
    refs_field: Option<BodyError>,
    unknown: Option<String>,
    cands_item: Option<BodyError>,
    refs_item: Option<BodyError>,
    cands: Option<Vec<String>>,
    refs: Option<Vec<Reference>>,
    refs_len: usize,
    pairs: usize,
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
}

/// Parses and checks a body; `max_pairs` is the most (candidate, reference) pairs accepted.
///
/// ```
/// use bertscore_core::request::{parse_score_body, Reference};
/// let body = parse_score_body(br#"{"cands": ["a cat"], "refs": [["the cat", "cats"]]}"#, None)
///     .unwrap();
/// assert_eq!(body.refs, vec![Reference::Many(vec!["the cat".into(), "cats".into()])]);
/// let error = parse_score_body(br#"{"cands": ["a", 3], "refs": ["a", "b"]}"#, None).unwrap_err();
/// assert_eq!((error.status, error.message.as_str()), (422, "cands[1] must be a str, got int: 3"));
/// ```
pub fn parse_score_body(body: &[u8], max_pairs: Option<usize>) -> Result<ScoreBody, BodyError> {
    check_utf8(body)?;
    let mut p = Parser { b: body, pos: 0 };
    if body.starts_with(b"\xEF\xBB\xBF") {
        return Err(p.syntax("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0));
    }
    let mut found = Found::default();
    p.ws();
    match p.peek() {
        Some(b'{') => p.top_object(&mut found)?,
        _ => {
            let kind = p.skip_value(0)?;
            found.not_object = Some(shape_error(
                format!(
                    "the body must be a JSON object {{\"cands\": [...], \"refs\": [...]}}, got {}",
                    kind.name()
                ),
                None,
                None,
            ));
        }
    }
    p.ws();
    if p.pos < body.len() {
        return Err(p.syntax("Extra data", p.pos));
    }
    decide(found, max_pairs)
}

/// The error Python's checks would have raised first, or the body.
fn decide(mut f: Found, max_pairs: Option<usize>) -> Result<ScoreBody, BodyError> {
    if let Some(e) = f.not_object.take() {
        return Err(e);
    }
    for (field, error) in [
        ("cands", f.cands_field.take()),
        ("refs", f.refs_field.take()),
    ] {
        if let Some(e) = error {
            return Err(e);
        }
        let present = if field == "cands" {
            f.cands.is_some()
        } else {
            f.refs.is_some()
        };
        if !present {
            return Err(shape_error(
                format!("missing field '{field}'"),
                Some(field),
                None,
            ));
        }
    }
    if let Some(key) = f.unknown.take() {
        let message = format!("unknown field {} (fields: cands, refs)", py_repr(&key));
        return Err(shape_error(message, Some(&key), None));
    }
    let cands = f.cands.take().unwrap_or_default();
    if let Some(max) = max_pairs {
        let pairs = f.pairs.max(cands.len());
        if pairs > max {
            return Err(BodyError {
                status: 413,
                message: format!(
                    "the request has {pairs} pairs, more than the {max} accepted (the server's \
                     --max-pairs)"
                ),
                field: None,
                index: None,
            });
        }
    }
    if let Some(e) = f.cands_item.take() {
        return Err(e);
    }
    if f.refs_len != cands.len() {
        let message = format!(
            "cands and refs differ in length: {} cands, {} refs",
            cands.len(),
            f.refs_len
        );
        return Err(shape_error(message, Some("refs"), None));
    }
    if let Some(e) = f.refs_item.take() {
        return Err(e);
    }
    Ok(ScoreBody {
        cands,
        refs: f.refs.take().unwrap_or_default(),
    })
}

fn check_utf8(body: &[u8]) -> Result<(), BodyError> {
    let Err(e) = std::str::from_utf8(body) else {
        return Ok(());
    };
    let at = e.valid_up_to();
    let reason = match e.error_len() {
        None => "unexpected end of data",
        Some(_) if matches!(body[at], 0x80..=0xC1 | 0xF5..=0xFF) => "invalid start byte",
        Some(_) => "invalid continuation byte",
    };
    Err(BodyError {
        status: 400,
        message: format!("the body is not UTF-8 text: {reason} at byte {at}"),
        field: None,
        index: None,
    })
}

/// Python's `repr` of a str without lone surrogates, as in its messages.
fn py_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7F => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// The first 60 characters of `text` (Python's `{value!r:.60}`).
fn first_60(text: &str) -> String {
    text.chars().take(60).collect()
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// A 400 in Python's words: `invalid JSON: {what} at line L column C (char N)`.
    fn syntax(&self, what: &str, at: usize) -> BodyError {
        let before = &self.b[..at.min(self.b.len())];
        let char_at = |bytes: &[u8]| bytes.iter().filter(|&&c| (c & 0xC0) != 0x80).count();
        let line_start = before
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1);
        let line = 1 + before.iter().filter(|&&c| c == b'\n').count();
        let column = 1 + char_at(&before[line_start..]);
        BodyError {
            status: 400,
            message: format!(
                "invalid JSON: {what} at line {line} column {column} (char {})",
                char_at(before)
            ),
            field: None,
            index: None,
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), BodyError> {
        self.ws();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax(what, self.pos))
        }
    }

    /// After an item of an array or object: true at its end, false before the next item.
    fn next_item(&mut self, close: u8) -> Result<bool, BodyError> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.ws();
                Ok(false)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(true)
            }
            _ => Err(self.syntax("Expecting ',' delimiter", self.pos)),
        }
    }

    fn top_object(&mut self, found: &mut Found) -> Result<(), BodyError> {
        self.pos += 1; // '{'
        let (mut keys, mut duplicate) = (HashSet::new(), None);
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let key = self.key(&mut keys, &mut duplicate)?;
            self.expect(b':', "Expecting ':' delimiter")?;
            self.ws();
            match key.as_str() {
                "cands" => self.cands(found)?,
                "refs" => self.refs(found)?,
                _ => {
                    self.skip_value(1)?;
                    if found.unknown.as_ref().is_none_or(|k| key < *k) {
                        found.unknown = Some(key);
                    }
                }
            }
            if self.next_item(b'}')? {
                return duplicate.map_or(Ok(()), Err);
            }
        }
    }

    /// An object's key; the first key the object has already goes to `duplicate`, raised when
    /// the object ends (as Python's `object_pairs_hook` sees a whole object).
    fn key(
        &mut self,
        keys: &mut HashSet<String>,
        duplicate: &mut Option<BodyError>,
    ) -> Result<String, BodyError> {
        self.ws();
        if self.peek() != Some(b'"') {
            let what = "Expecting property name enclosed in double quotes";
            return Err(self.syntax(what, self.pos));
        }
        let key = self.string()?.text;
        if !keys.insert(key.clone()) && duplicate.is_none() {
            *duplicate = Some(BodyError {
                status: 400,
                message: format!("duplicate key {} in a JSON object", py_repr(&key)),
                field: Some(key.clone()),
                index: None,
            });
        }
        Ok(key)
    }

    fn kind_at(&self) -> Option<Kind> {
        Some(match self.peek()? {
            b'"' => Kind::Str,
            b'[' => Kind::List,
            b'{' => Kind::Dict,
            b't' | b'f' => Kind::Bool,
            b'n' => Kind::Null,
            _ => Kind::Float, // a number, NaN or Infinity: skip_value tells int from float
        })
    }

    /// A value of the wrong type at `where`: checked as JSON, and the error naming it.
    fn wrong(
        &mut self,
        depth: usize,
        describe: impl Fn(Kind, &str) -> String,
    ) -> Result<String, BodyError> {
        let start = self.pos;
        let kind = self.skip_value(depth)?;
        let source = std::str::from_utf8(&self.b[start..self.pos]).unwrap_or("");
        Ok(describe(kind, &value_repr(kind, source)))
    }

    /// Past a list's `[`: `None`; else the value is skipped and `Some` error says that
    /// `field` must be a list.
    fn open_list(&mut self, field: &str) -> Result<Option<BodyError>, BodyError> {
        if self.peek() == Some(b'[') {
            self.pos += 1;
            return Ok(None);
        }
        let kind = self.skip_value(1)?;
        let message = format!("{field} must be a list, got {}", kind.name());
        Ok(Some(shape_error(message, Some(field), None)))
    }

    /// The items of the list whose `[` is behind the cursor, each read by `item(self, index)`.
    fn items<T>(
        &mut self,
        mut item: impl FnMut(&mut Self, usize) -> Result<T, BodyError>,
    ) -> Result<Vec<T>, BodyError> {
        let mut out = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(out);
        }
        loop {
            let value = item(self, out.len())?;
            out.push(value);
            if self.next_item(b']')? {
                return Ok(out);
            }
        }
    }

    fn cands(&mut self, found: &mut Found) -> Result<(), BodyError> {
        if let Some(error) = self.open_list("cands")? {
            found.cands = Some(Vec::new());
            found.cands_field = Some(error);
            return Ok(());
        }
        let slot = &mut found.cands_item;
        let cands =
            self.items(|p, i| p.text_item(2, || format!("cands[{i}]"), "cands", i, slot))?;
        found.cands = Some(cands);
        Ok(())
    }

    /// A str item of an array (`where` names it), or an empty string and the first error
    /// recorded in `slot`.
    fn text_item(
        &mut self,
        depth: usize,
        place: impl Fn() -> String,
        field: &str,
        index: usize,
        slot: &mut Option<BodyError>,
    ) -> Result<String, BodyError> {
        if self.peek() == Some(b'"') {
            match self.string()? {
                Decoded { text, lone: None } => return Ok(text),
                Decoded {
                    lone: Some((unit, at_char)),
                    ..
                } => {
                    if slot.is_none() {
                        let place = place();
                        *slot = Some(shape_error(
                            format!(
                                "{place} cannot be encoded as UTF-8 text: it holds the lone \
                                 surrogate '\\u{unit:04x}' at character {at_char} (e.g. from \
                                 decoding with errors='surrogateescape'; decode bytes with \
                                 errors='replace' instead)"
                            ),
                            Some(field),
                            Some(index),
                        ));
                    }
                    return Ok(String::new());
                }
            }
        }
        if slot.is_some() {
            self.skip_value(depth)?; // an error is kept already: only the syntax matters
            return Ok(String::new());
        }
        let message = self.wrong(depth, |kind, repr| {
            format!("{} must be a str, got {}: {repr}", place(), kind.name())
        })?;
        *slot = Some(shape_error(message, Some(field), Some(index)));
        Ok(String::new())
    }

    fn refs(&mut self, found: &mut Found) -> Result<(), BodyError> {
        if let Some(error) = self.open_list("refs")? {
            found.refs = Some(Vec::new());
            found.refs_field = Some(error);
            return Ok(());
        }
        let (mut grouped, mut pairs, slot) = (None, 0, &mut found.refs_item);
        let refs = self.items(|p, i| {
            let grouped = *grouped.get_or_insert(p.peek() == Some(b'['));
            p.reference(i, grouped, &mut pairs, slot)
        })?;
        found.refs_len = refs.len();
        found.pairs = pairs;
        found.refs = Some(refs);
        Ok(())
    }

    /// The references of candidate `i`; `grouped`: `refs[0]` is a list.
    fn reference(
        &mut self,
        i: usize,
        grouped: bool,
        pairs: &mut usize,
        slot: &mut Option<BodyError>,
    ) -> Result<Reference, BodyError> {
        let is_list = self.peek() == Some(b'[');
        if !is_list {
            *pairs += 1;
        }
        if !grouped {
            if is_list {
                let start = self.pos;
                self.skip_value(2)?;
                *pairs += self.count_items(start);
                if slot.is_none() {
                    *slot = Some(shape_error(
                        format!(
                            "refs[{i}] is a list but refs[0] is a str: give every candidate one \
                             str, or every candidate a list of str"
                        ),
                        Some("refs"),
                        Some(i),
                    ));
                }
                return Ok(Reference::One(String::new()));
            }
            let text = self.text_item(2, || format!("refs[{i}]"), "refs", i, slot)?;
            return Ok(Reference::One(text));
        }
        if !is_list {
            let message = self.wrong(2, |kind, _| {
                format!(
                    "refs[{i}] must be a list of str (refs[0] is one), got {}",
                    kind.name()
                )
            })?;
            if slot.is_none() {
                *slot = Some(shape_error(message, Some("refs"), Some(i)));
            }
            return Ok(Reference::Many(Vec::new()));
        }
        self.pos += 1;
        let texts = self.items(|p, j| {
            let mut item_error = None;
            let text = p.text_item(3, || format!("refs[{i}][{j}]"), "refs", i, &mut item_error)?;
            if slot.is_none() {
                *slot = item_error;
            }
            Ok(text)
        })?;
        if texts.is_empty() && slot.is_none() {
            *slot = Some(shape_error(
                format!("refs[{i}] is an empty list: each candidate needs a reference"),
                Some("refs"),
                Some(i),
            ));
        }
        *pairs += texts.len();
        Ok(Reference::Many(texts))
    }

    /// The items of the (already checked) array starting at `start`.
    fn count_items(&self, start: usize) -> usize {
        let mut probe = Parser {
            b: &self.b[..self.pos],
            pos: start + 1,
        };
        probe.ws();
        if probe.peek() == Some(b']') {
            return 0;
        }
        let mut n = 0;
        loop {
            n += 1;
            if probe.skip_value(1).is_err() || probe.next_item(b']').unwrap_or(true) {
                return n;
            }
        }
    }

    /// Any JSON value, checked and not built; its kind.
    fn skip_value(&mut self, depth: usize) -> Result<Kind, BodyError> {
        self.ws();
        if depth > MAX_DEPTH {
            return Err(BodyError {
                status: 400,
                message: format!("invalid JSON: nested too deeply (more than {MAX_DEPTH} levels)"),
                field: None,
                index: None,
            });
        }
        let Some(kind) = self.kind_at() else {
            return Err(self.syntax("Expecting value", self.pos));
        };
        match kind {
            Kind::Str => {
                self.string()?;
            }
            Kind::List => {
                self.pos += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                } else {
                    loop {
                        self.skip_value(depth + 1)?;
                        if self.next_item(b']')? {
                            break;
                        }
                    }
                }
            }
            Kind::Dict => {
                self.pos += 1;
                let (mut keys, mut duplicate) = (HashSet::new(), None);
                self.ws();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                } else {
                    loop {
                        self.key(&mut keys, &mut duplicate)?;
                        self.expect(b':', "Expecting ':' delimiter")?;
                        self.skip_value(depth + 1)?;
                        if self.next_item(b'}')? {
                            break;
                        }
                    }
                }
                if let Some(error) = duplicate {
                    return Err(error);
                }
            }
            _ => return self.literal(),
        }
        Ok(kind)
    }

    /// `true`, `false`, `null`, `NaN`, `Infinity`, `-Infinity` or a number.
    fn literal(&mut self) -> Result<Kind, BodyError> {
        for (word, kind) in [
            (&b"true"[..], Kind::Bool),
            (b"false", Kind::Bool),
            (b"null", Kind::Null),
            (b"NaN", Kind::Float),
            (b"Infinity", Kind::Float),
            (b"-Infinity", Kind::Float),
        ] {
            if self.b[self.pos..].starts_with(word) {
                self.pos += word.len();
                return Ok(kind);
            }
        }
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.pos += 1;
            }
            p.pos - from
        };
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let whole = if self.peek() == Some(b'0') {
            self.pos += 1;
            1
        } else {
            digits(self)
        };
        if whole == 0 {
            return Err(self.syntax("Expecting value", start));
        }
        let mut kind = Kind::Int;
        if self.peek() == Some(b'.') && matches!(self.b.get(self.pos + 1), Some(b'0'..=b'9')) {
            self.pos += 1;
            digits(self);
            kind = Kind::Float;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                self.pos = save; // not an exponent: the next check names the stray byte
            } else {
                kind = Kind::Float;
            }
        }
        if kind == Kind::Int && whole > MAX_INT_DIGITS {
            return Err(BodyError {
                status: 400,
                message: format!(
                    "invalid JSON: Exceeds the limit ({MAX_INT_DIGITS} digits) for integer \
                     string conversion: value has {whole} digits"
                ),
                field: None,
                index: None,
            });
        }
        Ok(kind)
    }

    /// A JSON string at the cursor (a `"`), decoded.
    fn string(&mut self) -> Result<Decoded, BodyError> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        let mut chars = 0usize;
        let mut lone = None;
        loop {
            let run = self.pos;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            let plain = std::str::from_utf8(&self.b[run..self.pos]).unwrap_or("");
            chars += plain.chars().count();
            out.push_str(plain);
            match self.peek() {
                None => return Err(self.syntax("Unterminated string starting at", start)),
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => {
                    let unit = self.escape(&mut out)?;
                    if let Some(unit) = unit {
                        if lone.is_none() {
                            lone = Some((unit, chars));
                        }
                    }
                    chars += 1;
                }
                Some(_) => return Err(self.syntax("Invalid control character at", self.pos)),
            }
        }
        Ok(Decoded { text: out, lone })
    }

    /// One escape at the cursor (a `\`) appended to `out`; `Some(unit)` for a lone surrogate.
    fn escape(&mut self, out: &mut String) -> Result<Option<u32>, BodyError> {
        let at = self.pos;
        self.pos += 1;
        let c = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.pos += 1;
                let high = self.hex4(at)?;
                if (0xD800..0xDC00).contains(&high) && self.b[self.pos..].starts_with(b"\\u") {
                    let save = self.pos;
                    self.pos += 2;
                    let low = self.hex4(save)?;
                    if (0xDC00..0xE000).contains(&low) {
                        let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                        out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                        return Ok(None);
                    }
                    self.pos = save; // the next escape is read on its own
                }
                return Ok(match char::from_u32(high) {
                    Some(c) => {
                        out.push(c);
                        None
                    }
                    None => {
                        out.push_str(&format!("\\u{high:04x}"));
                        Some(high)
                    }
                });
            }
            _ => return Err(self.syntax("Invalid \\escape", at)),
        };
        self.pos += 1;
        out.push(c);
        Ok(None)
    }

    fn hex4(&mut self, escape_at: usize) -> Result<u32, BodyError> {
        let digits = self.b.get(self.pos..self.pos + 4);
        let value = digits
            .and_then(|d| std::str::from_utf8(d).ok())
            .filter(|d| d.bytes().all(|c| c.is_ascii_hexdigit()))
            .and_then(|d| u32::from_str_radix(d, 16).ok());
        match value {
            Some(v) => {
                self.pos += 4;
                Ok(v)
            }
            None => Err(self.syntax("Invalid \\uXXXX escape", escape_at + 1)),
        }
    }
}

/// A skipped value as Python's message shows it: its source for scalars (Python's spelling of
/// `true`, `false`, `null`), the first 60 characters of its source otherwise.
fn value_repr(kind: Kind, source: &str) -> String {
    match (kind, source) {
        (Kind::Bool, "true") => "True".into(),
        (Kind::Bool, _) => "False".into(),
        (Kind::Null, _) => "None".into(),
        (Kind::Float, "NaN") => "nan".into(),
        (Kind::Float, "Infinity") => "inf".into(),
        (Kind::Float, "-Infinity") => "-inf".into(),
        (Kind::Int, "-0") => "0".into(),
        _ => first_60(source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &str) -> BodyError {
        parse_score_body(body.as_bytes(), Some(10)).unwrap_err()
    }

    #[test]
    fn a_body_parses_into_texts() {
        let body = parse_score_body(
            br#" {"refs": ["b\u00e9", "c"], "cands": ["a\n", ""]} "#,
            None,
        )
        .unwrap();
        assert_eq!(body.cands, vec!["a\n".to_string(), String::new()]);
        assert_eq!(
            body.refs,
            vec![Reference::One("bé".into()), Reference::One("c".into())]
        );
        let body = parse_score_body(
            br#"{"cands": ["x"], "refs": [["\ud83d\ude00", "y"]]}"#,
            None,
        )
        .unwrap();
        assert_eq!(
            body.refs,
            vec![Reference::Many(vec!["😀".into(), "y".into()])]
        );
    }

    #[test]
    fn syntax_comes_before_shape() {
        let e = err(r#"{"cands": [3], "refs": ["a"],}"#);
        assert_eq!(e.status, 400);
        assert!(
            e.message.contains("Expecting property name"),
            "{}",
            e.message
        );
        assert_eq!(err(r#"{"cands": [3], "refs": ["a"]}"#).status, 422);
    }

    #[test]
    fn errors_name_field_and_index_in_pythons_order() {
        let e = err(r#"{"refs": [1], "cands": ["a", true]}"#);
        assert_eq!(e.message, "cands[1] must be a str, got bool: True");
        assert_eq!((e.field.as_deref(), e.index), (Some("cands"), Some(1)));
        assert_eq!(err(r#"{"cands": []}"#).message, "missing field 'refs'");
        assert_eq!(err(r#"[1]"#).status, 422);
        assert!(err(r#"{"cands": [], "refs": [], "zz": 1, "aa": 2}"#)
            .message
            .contains("'aa'"));
        let e = err(r#"{"cands": ["a"], "refs": ["b", ["c"]]}"#);
        assert!(
            e.message.starts_with("cands and refs differ"),
            "{}",
            e.message
        );
        let e = err(r#"{"cands": ["a", "b"], "refs": [["b"], []]}"#);
        assert!(
            e.message.starts_with("refs[1] is an empty list"),
            "{}",
            e.message
        );
        let e = err(r#"{"cands": ["a", "b"], "refs": [["b"], ["c", null]]}"#);
        assert_eq!(e.message, "refs[1][1] must be a str, got NoneType: None");
    }

    #[test]
    fn bounds_hold() {
        let deep = "[".repeat(100_000);
        assert!(err(&deep).message.contains("nested too deeply"));
        let long = format!(r#"{{"cands": [{}], "refs": ["a"]}}"#, "7".repeat(5000));
        let e = err(&long);
        assert_eq!(e.status, 400);
        assert!(e.message.contains("5000 digits"));
        let many = format!(r#"{{"cands": [{}"a"], "refs": []}}"#, r#""a","#.repeat(10));
        assert_eq!(err(&many).status, 413);
    }

    #[test]
    fn strings_are_checked_as_python_checks_them() {
        let e = err(r#"{"cands": ["ab\ud800"], "refs": ["x"]}"#);
        assert!(
            e.message
                .contains("lone surrogate '\\ud800' at character 2"),
            "{}",
            e.message
        );
        assert!(err("{\"cands\": [\"a\u{1}\"], \"refs\": []}")
            .message
            .contains("control"));
        assert!(err(r#"{"cands": ["\x"], "refs": []}"#)
            .message
            .contains("\\escape"));
        let e = parse_score_body(b"{\"cands\": [\"\xff\"]}", None).unwrap_err();
        assert_eq!(
            e.message,
            "the body is not UTF-8 text: invalid start byte at byte 12"
        );
        let dup = err(r#"{"cands": [{"a": 1, "a": 2}], "refs": []}"#);
        assert_eq!(
            (dup.status, dup.message.as_str()),
            (400, "duplicate key 'a' in a JSON object")
        );
    }
}
