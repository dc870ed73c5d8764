"""The programs a tokenizer file carries, checked before the library runs them: regular
expressions, and SentencePiece's precompiled character map.

**Character maps.** A ``Precompiled`` normaliser's ``precompiled_charsmap`` starts with the
byte size of its trie; the ``tokenizers`` library allocates that size before it looks at what
follows (4 random bytes asked for 1.2 GB, and a process under a memory limit aborts, which no
``except`` catches). :func:`check_charsmap` refuses a map whose trie is larger than the map.

**Patterns** are checked by :mod:`.patterns` (their matching cost bounded by construction).

**Growth and probes.** The normaliser's and the decoder's ``Replace`` steps may make a text at
most :data:`MAX_GROWTH` times longer (a pattern that can match nothing, with a content, is
refused: it inserts at every position); a WordPiece word limit is at most
:data:`MAX_WORD_CHARS`. Then each part is run on probe texts, runs of each character the
patterns name and a few others: a part that fails or is slow there is refused before any text
meets it (this catches what a construct check cannot: a parser that reads a pattern otherwise
than Oniguruma does).
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import time
from pathlib import Path

from tokenizers import Tokenizer

from ...errors import InputValueError
from ...support.boundary import foreign_call
from ...support.inputs import MAX_TOKENIZER_BYTES, read_bytes
from .patterns import PatternError, check_pattern, min_length, patterns_of

MAX_GROWTH = 16
"""How many times longer the normaliser's or the decoder's ``Replace`` steps may make a text,
all together (a chain of nine ``Replace("x", "x" * 10)`` asked for 1.6 GB on a one-character
text, and a process under a memory limit aborts)."""
MAX_AFFIX = 16
"""The longest string a normaliser's ``Prepend`` may add (SentencePiece's is one ``▁``)."""
MAX_WORD_CHARS = 200
"""The largest ``max_input_chars_per_word`` of a WordPiece model (BERT's is 100): its greedy
longest match is cubic in a word's length (10**9 took 28 s on a 10,000-character word)."""
PROBE_CHARS = 600
"""Characters of each probe text: a run of one character (alone, and followed by another)."""
PROBE_SECONDS = 0.25
"""The most CPU time a probe may take, the lesser of two runs (a bounded pattern takes about a
millisecond on one; a cubic one half a second, an exponential one stops at Oniguruma's retry
limit). Only parts with patterns are probed: the library's own components are linear."""
PARTS = ("normalizer", "pre_tokenizer", "decoder")
MAX_CHARSMAP_OUTPUT = 32
"""The longest string a precompiled character map may replace a character with, in characters
(NFKC's longest, for U+FDFA, is 18; a map making ``t`` 100,000 characters passed the growth
check, which counts ``Replace`` steps)."""


def check_tokenizer(tokenizer: Tokenizer, source: str) -> None:
    """InputValueError naming ``source`` and the part when the tokenizer's programs could take
    unbounded time or memory on a text: a pattern :func:`.patterns.check_pattern` refuses,
    ``Replace`` steps that grow a text more than :data:`MAX_GROWTH` times, a WordPiece word
    limit over :data:`MAX_WORD_CHARS`; then each part is run on probe texts (long runs of one
    character), and one that fails or takes over :data:`PROBE_SECONDS` is refused too."""
    states = {}
    for part in PARTS:
        component = getattr(tokenizer, part, None)
        if component is not None:
            states[part] = json.loads(component.__getstate__())
    for part, state in states.items():
        for pattern in patterns_of(state):
            try:
                check_pattern(pattern)
            except PatternError as e:
                raise InputValueError(
                    f"{source}: the {part}'s pattern {pattern[:80]!r} is refused: {e} (its "
                    "matching time would not be bounded by the text's length; see docs/inputs.md)"
                ) from None
        if part == "normalizer" and (affix := _longest_affix(state)) > MAX_AFFIX:
            raise InputValueError(
                f"{source}: the normalizer adds {affix} characters to each segment of a text "
                f"(Prepend), more than the {MAX_AFFIX} accepted"
            )
        if part != "pre_tokenizer" and (growth := _growth(state)) > MAX_GROWTH:
            raise InputValueError(
                f"{source}: the {part}'s Replace steps make a text {growth:g} times longer, "
                f"more than the {MAX_GROWTH} accepted"
            )
    limit = getattr(tokenizer.model, "max_input_chars_per_word", None)
    if isinstance(limit, int) and limit > MAX_WORD_CHARS:
        raise InputValueError(
            f"{source}: the WordPiece model's max_input_chars_per_word is {limit}, more than the "
            f"{MAX_WORD_CHARS} accepted (its matching time grows with the cube of it)"
        )
    for part, state in states.items():
        if patterns_of(state):  # the library's own components have a known, linear cost
            _probe(getattr(tokenizer, part), part, source, states)


def _longest_affix(state: object) -> int:
    """The longest string a ``Prepend`` step of a normaliser adds (to every segment between
    added tokens: 5 M characters times 80 segments aborted a process)."""
    if isinstance(state, list):
        return max((_longest_affix(sub) for sub in state), default=0)
    if not isinstance(state, dict):
        return 0
    if state.get("type") == "Prepend" and isinstance(state.get("prepend"), str):
        return len(state["prepend"])
    return _longest_affix(state.get("normalizers", []))


def _growth(state: object) -> float:
    """How many times longer a component's ``Replace`` steps can make a text."""
    if isinstance(state, list):
        out = 1.0
        for sub in state:
            out *= _growth(sub)
        return out
    if not isinstance(state, dict):
        return 1.0
    if state.get("type") == "Replace":
        pattern, content = state.get("pattern") or {}, state.get("content")
        if not isinstance(content, str) or not isinstance(pattern, dict):
            return 1.0
        if isinstance(pattern.get("String"), str):
            least = len(pattern["String"])
        else:
            least = min_length(str(pattern.get("Regex", "")))
        if least == 0:
            return float("inf") if content else 1.0
        return max(1.0, len(content) / least)
    return _growth([v for k, v in state.items() if k in ("normalizers", "decoders")])


def _probe_texts(states: dict) -> list[str]:
    chars = set(" a1.é中\n_\t\r\x0b\x0c\x85\xa0\u2028\u3000")  # what \\s matches
    for state in states.values():
        for pattern in patterns_of(state):
            chars.update(c for c in pattern if c.isascii() and c.isprintable())
    texts = []
    for c in sorted(chars):  # a run alone, and ended by another character
        other = "!" if c != "!" else "a"
        texts += [c * PROBE_CHARS, c * PROBE_CHARS + other]
    texts.append("ab" * (PROBE_CHARS // 2) + "!")
    return texts


def _probe_seconds(component: object, part: str, source: str, text: str) -> float:
    """CPU seconds of this thread running ``part`` on ``text`` (the library runs it on the
    calling thread): other processes on a loaded host do not count."""
    start = time.thread_time()
    with foreign_call(f"{source}: the {part} fails on a probe text", InputValueError):
        if part == "normalizer":
            component.normalize_str(text)  # type: ignore[attr-defined]
        elif part == "pre_tokenizer":
            component.pre_tokenize_str(text)  # type: ignore[attr-defined]
        else:
            component.decode([text, text])  # type: ignore[attr-defined]
    return time.thread_time() - start


def _probe(component: object, part: str, source: str, states: dict) -> None:
    for text in _probe_texts(states):
        seconds = _probe_seconds(component, part, source, text)
        if seconds > PROBE_SECONDS:  # once more: the lesser of two
            seconds = min(seconds, _probe_seconds(component, part, source, text))
        if seconds > PROBE_SECONDS:
            raise InputValueError(
                f"{source}: the {part} took {seconds:.2f} s of CPU on a probe text of {len(text)} "
                f"characters ({text[:3]!r}...), more than the {PROBE_SECONDS} s accepted: its "
                "time would not be bounded by a text's length"
            )


def check_charsmap(blob: bytes, where: str) -> None:
    """InputValueError naming ``where`` when ``blob`` (a ``precompiled_charsmap``) is not a
    trie size, the trie, then the normalised strings (the size past the blob, or not whole
    32-bit units), or makes a character longer than :data:`MAX_CHARSMAP_OUTPUT` characters.

    >>> check_charsmap(struct.pack("<I", 4) + bytes(6), "x")
    >>> try:
    ...     check_charsmap(b"\\xff\\xff\\xff\\x7f", "spiece.model")
    ... except InputValueError as e:
    ...     print(e)
    spiece.model: the precompiled character map's trie is 2147483647 bytes, but the map holds 4
    """
    if len(blob) < 4:
        raise InputValueError(f"{where}: the precompiled character map has {len(blob)} bytes")
    (trie,) = struct.unpack_from("<I", blob)
    if trie % 4 or 4 + trie > len(blob):
        raise InputValueError(
            f"{where}: the precompiled character map's trie is {trie} bytes, but the map "
            f"holds {len(blob)}"
        )
    longest = max(len(s.decode("utf-8", "replace")) for s in blob[4 + trie :].split(b"\0"))
    if longest > MAX_CHARSMAP_OUTPUT:
        raise InputValueError(
            f"{where}: the precompiled character map makes a character {longest} characters, "
            f"more than the {MAX_CHARSMAP_OUTPUT} accepted (NFKC's longest is 18)"
        )


def check_tokenizer_json_charsmaps(data: bytes, where: str) -> None:
    """:func:`check_charsmap` on every ``Precompiled`` normaliser of a ``tokenizer.json``'s
    bytes, before the library reads them (parsed here only when they name one)."""
    if b"precompiled_charsmap" not in data and b"\\u" not in data:
        return  # a key spelled with \u escapes names it too
    try:
        doc = json.loads(data)
    except ValueError:
        return  # the library names the syntax error
    found: list[object] = []

    def visit(value: object) -> None:
        if isinstance(value, dict):
            if value.get("type") == "Precompiled":
                found.append(value.get("precompiled_charsmap"))
            for sub in value.values():
                visit(sub)
        elif isinstance(value, list):
            for sub in value:
                visit(sub)

    visit(doc.get("normalizer") if isinstance(doc, dict) else None)
    for charsmap in found:
        if not isinstance(charsmap, str):
            continue  # the library names a wrong type
        try:
            blob = base64.b64decode(charsmap, validate=True)
        except (binascii.Error, ValueError):
            continue  # the library names a map that is not base64
        check_charsmap(blob, where)


def read_model_proto(path: Path) -> object:
    """The ``ModelProto`` of a SentencePiece ``.model`` file (InputValueError naming it)."""
    try:
        from sentencepiece import sentencepiece_model_pb2
    except ImportError as e:  # protobuf comes with onnx, a dependency
        raise ImportError(
            f"reading {path.name} for use_fast_tokenizer=True needs protobuf: pip install protobuf"
        ) from e
    proto = sentencepiece_model_pb2.ModelProto()  # type: ignore[attr-defined]
    data = read_bytes(path, max_bytes=MAX_TOKENIZER_BYTES, error=InputValueError)
    with foreign_call(f"cannot read the SentencePiece model {path}", InputValueError):
        proto.ParseFromString(data)  # protobuf's DecodeError, or a crash of its C++ parser
    charsmap = proto.normalizer_spec.precompiled_charsmap  # type: ignore[attr-defined]
    if charsmap:
        check_charsmap(charsmap, str(path))
    return proto
