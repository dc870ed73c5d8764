"""The programs a tokenizer file carries (stages/tokenization/programs.py): patterns whose
matching cost is bounded, character maps whose trie fits in the map; and library_path, through
which every path reaches a library."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import struct
from pathlib import Path

import pytest
from test_boundary import with_tokenizer_json as tokenizer_json

import rust_bertscore as rb
from conftest import TINY
from rust_bertscore.errors import InputValueError
from rust_bertscore.stages.tokenization.fast import QWEN2_PATTERN
from rust_bertscore.stages.tokenization.patterns import PatternError, check_pattern
from rust_bertscore.stages.tokenization.programs import check_charsmap
from rust_bertscore.support.boundary import library_path

PUBLISHED = {
    "gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": QWEN2_PATTERN,
    "o200k": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "sentencepiece": " {2,}",
    "bloom": r" ?[^(\s|[.,!?…。，、।۔،])]+",
    # a{²}: text, as Oniguruma reads it (not a counted repetition)
    "others": r"(?:ab)+|[\]a-z[:alpha:]]+x|\x41\u00e9+|(?<w>\w)+|a{2}{|(?i)abc|[[:alpha:]]+|a{²}",
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_patterns_are_accepted(name: str) -> None:
    check_pattern(PUBLISHED[name])


REFUSED = {
    r"(a+)+$": "a repeated group holding a quantifier",
    r"(?:a|a)*b": "a repeated group with alternatives",
    r"(a*)*": "a repeated group holding a quantifier",
    r"\s*\s*\S": "can fail after two repetitions",
    r"\s*(?:\s*)\S": "can fail after two repetitions",
    r"\s*\s+$": "can fail after two repetitions",
    r"(?:\s*\s*)(?=x)": "can fail after two repetitions",
    r"(?:\s*\s*\S)?": "can fail after two repetitions",
    r"(?=\s*\s*\S)": "can fail after two repetitions",
    r"\s*(?=\s*\S)": "can fail after two repetitions",
    r"\s*(?!\s*\s)x": "can fail after two repetitions",
    r"(a)\1": "a back-reference",
    r"(?<n>a)\k<n>": "a back-reference",
    r"(?<n>a|b\g<n>)": "subexpression call",
    r"a{1,100000}": "a counted repetition over 1000",
    r"(?(1)a|b)": "a conditional",
    r"(?~ab)": "an absent operator",
    r"(?x) a": "extended mode",
    r"(?:ab": "an unterminated group",
    r"[ab": "an unterminated character class",
    r"ab)": "an unmatched",
    "a\\": "a trailing backslash",
    r"*a": "nothing to repeat",
    r"(?#\)([)\s*\s*\S\S(?#])": "a comment",  # Oniguruma skips the escaped ) in the comment
    r"\s{0,1000}\s{0,1000}\S\S": "can fail after two repetitions",
    r"\c)a*": "a control or meta escape",
    r"[[:x]\s*\s*\S]": "an unclear POSIX bracket",
    "(" * 100 + "a" + ")" * 100: "nested over 64",
    r"\t*(?<=x\t*)": "a look-behind holding a repetition",  # cubic: matched backwards
    r"a\qb": r"an escape \\q this check does not know",
}


@pytest.mark.parametrize("pattern", sorted(REFUSED))
def test_unbounded_constructs_are_refused_naming_them(pattern: str) -> None:
    with pytest.raises(PatternError, match=REFUSED[pattern]):
        check_pattern(pattern)


@pytest.mark.parametrize("part", ["pre_tokenizer", "normalizer"])
def test_a_cubic_pattern_in_a_tokenizer_json_is_refused_naming_the_part(
    tmp_path: Path, part: str
) -> None:
    """``\\s*\\s*\\S`` took 110 s on 4,000 spaces; refused before any text."""
    pattern = {"Regex": r"\s*\s*\S"}
    if part == "pre_tokenizer":
        change = {part: {"type": "Split", "pattern": pattern, "behavior": "Isolated",
                         "invert": False}}  # fmt: skip
    else:
        change = {part: {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": pattern, "content": " "}]}}  # fmt: skip
    model = tokenizer_json(tmp_path, change)
    with pytest.raises(InputValueError, match=rf"the {part}'s pattern .* is refused"):
        rb.BERTScorer(model_type=str(model), num_layers=2).score([" " * 4000], ["x"])


def test_a_charsmap_whose_trie_is_past_the_map_is_refused_before_the_library(
    tmp_path: Path,
) -> None:
    """Four bytes asked ``tokenizers`` for 1.2 GB (an abort under a memory limit)."""
    charsmap = base64.b64encode(struct.pack("<I", 1247201896) + bytes(40)).decode()
    model = tokenizer_json(
        tmp_path, {"normalizer": {"type": "Precompiled", "precompiled_charsmap": charsmap}}
    )
    with pytest.raises(InputValueError, match=r"tokenizer.json: the precompiled character map's"):
        rb.BERTScorer(model_type=str(model), num_layers=2).score(["a"], ["b"])


def test_a_charsmap_making_a_character_long_is_refused() -> None:
    """A valid map making ``t`` 100,000 characters passed the ``Replace`` count."""
    check_charsmap(struct.pack("<I", 0) + "صلى الله عليه وسلم".encode() + b"\0", "x")  # 18
    with pytest.raises(InputValueError, match="makes a character 100 characters, more than"):
        check_charsmap(struct.pack("<I", 0) + b"x" * 100 + b"\0", "spiece.model")


def test_check_charsmap_accepts_a_whole_trie() -> None:
    check_charsmap(struct.pack("<I", 8) + bytes(8) + b"abc\0", "x")
    for bad in (b"", b"\x01\x00\x00\x00" + bytes(4), struct.pack("<I", 12) + bytes(8)):
        with pytest.raises(InputValueError, match="precompiled character map"):
            check_charsmap(bad, "x")


def test_library_path_hands_over_the_checked_file_even_when_the_name_is_swapped(
    tmp_path: Path,
) -> None:
    """The library opens the descriptor's path: a FIFO swapped in after the check is not what
    it reads (without the pin it would wait for a writer for ever)."""
    from tokenizers import models

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[UNK]\nhello\n", encoding="utf-8")
    with library_path(vocab, max_bytes=1 << 20, error=InputValueError) as name:
        vocab.unlink()
        os.mkfifo(vocab)
        table = models.WordPiece.read_file(name)
    assert table == {"[UNK]": 0, "hello": 1}


def test_a_fifo_as_a_bpe_vocabulary_file_is_refused_at_once(tmp_path: Path) -> None:
    """vocab.json and merges.txt (GPT-2's and Qwen2's files) reach the library through the
    boundary: a FIFO is refused, not waited on."""
    from rust_bertscore.stages.tokenization.fast import read_bpe_files

    vocab, merges = tmp_path / "vocab.json", tmp_path / "merges.txt"
    shutil.copy(TINY / "qwen3" / "vocab.json", vocab)
    os.mkfifo(merges)
    signal.alarm(30)  # a regression waits for a writer: fail instead of hanging the run
    try:
        with pytest.raises(InputValueError, match=r"merges.txt: a FIFO \(named pipe\)"):
            read_bpe_files(vocab, merges)
    finally:
        signal.alarm(0)
    assert read_bpe_files(TINY / "qwen3" / "vocab.json", TINY / "qwen3" / "merges.txt")[0]


def replace(pattern: dict, content: str) -> dict:
    return {"type": "Replace", "pattern": pattern, "content": content}


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            {"normalizer": {"type": "Sequence", "normalizers": [
                replace({"String": "x"}, "x" * 10)] * 9}},
            r"the normalizer's Replace steps make a text 1e\+09 times longer",
        ),
        (
            {"normalizer": replace({"Regex": "a*"}, "b")},
            r"the normalizer's Replace steps make a text inf times longer",
        ),
        (
            {"decoder": {"type": "Sequence", "decoders": [replace({"String": "a"}, "a" * 10)] * 9}},
            r"the decoder's Replace steps make a text 1e\+09 times longer",
        ),
        ({"decoder": replace({"Regex": "(a+)+$"}, "b")}, r"the decoder's pattern '\(a\+\)\+\$'"),
        (  # \y is a zero-width boundary: counted as a character, it hid an insertion bomb
            {"normalizer": replace({"Regex": "(?:\\y\\y){1000}"}, " " * 1000)},
            r"the normalizer's Replace steps make a text inf times longer",
        ),
    ],
    ids=["normaliser growth", "empty match", "decoder growth", "decoder pattern",
         "zero-width escape"],
)  # fmt: skip
def test_growing_or_unbounded_programs_are_refused_before_any_text(
    tmp_path: Path, change: dict, says: str
) -> None:
    """Nine ``Replace("x", "x" * 10)`` asked for 1.6 GB on a one-character text (an abort under
    a memory limit); a decoder's pattern runs when a token's text is shown."""
    model = tokenizer_json(tmp_path, change)
    with pytest.raises(InputValueError, match=says):
        rb.BERTScorer(model_type=str(model), num_layers=2).score(["x a"], ["x"])


def test_a_wordpiece_word_limit_past_the_cap_is_refused(tmp_path: Path) -> None:
    spec = json.loads((TINY / "bert" / "tokenizer.json").read_text(encoding="utf-8"))
    spec["model"]["max_input_chars_per_word"] = 10**9
    model = tokenizer_json(tmp_path, {"model": spec["model"]})
    with pytest.raises(InputValueError, match="max_input_chars_per_word is 1000000000"):
        rb.BERTScorer(model_type=str(model), num_layers=2).score(["a"], ["b"])


def test_a_charsmap_under_an_escaped_key_is_checked_too(tmp_path: Path) -> None:
    charsmap = base64.b64encode(struct.pack("<I", 0xFFFFFFFC) + bytes(8)).decode()
    model = tokenizer_json(tmp_path, {})
    text = (model / "tokenizer.json").read_text(encoding="utf-8")
    spec = json.loads(text)
    spec["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": charsmap}
    escaped = json.dumps(spec).replace("precompiled_charsmap", "precompiled_\\u0063harsmap")
    (model / "tokenizer.json").write_text(escaped, encoding="utf-8")
    with pytest.raises(InputValueError, match="the precompiled character map's trie"):
        rb.BERTScorer(model_type=str(model), num_layers=2).score(["a"], ["b"])


def test_a_pattern_the_check_misreads_is_caught_by_the_probes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were a pattern read otherwise than Oniguruma reads it (as a comment was), the probe
    texts still find its cost: a cubic pattern takes ~0.5 s on a 600-space run."""
    from rust_bertscore.stages.tokenization import programs

    monkeypatch.setattr(programs, "check_pattern", lambda pattern: None)
    split = {"type": "Split", "pattern": {"Regex": r"\s*\s*\S"}, "behavior": "Isolated",
             "invert": False}  # fmt: skip
    model = tokenizer_json(tmp_path, {"pre_tokenizer": split})
    with pytest.raises(
        InputValueError, match=r"the pre_tokenizer took .* s of CPU on a probe text"
    ):
        rb.BERTScorer(model_type=str(model), num_layers=2).score(["a"], ["b"])


def test_a_long_prepend_is_refused(tmp_path: Path) -> None:
    """A ``Prepend`` runs on every segment between added tokens: 5 M characters times 80
    segments aborted a process."""
    prepend = {"type": "Prepend", "prepend": "x" * 5_000_000}
    model = tokenizer_json(tmp_path, {"normalizer": {"type": "Sequence", "normalizers": [prepend]}})
    with pytest.raises(InputValueError, match="adds 5000000 characters to each segment"):
        rb.BERTScorer(model_type=str(model), num_layers=2).score(["a"], ["b"])


@pytest.mark.parametrize("fast", [False, True])
def test_bpe_dropout_is_off_so_scores_are_the_same_each_call(tmp_path: Path, fast: bool) -> None:
    """A ``tokenizer.json`` with BPE ``dropout`` 0.9 gave other scores on each call."""
    model = tmp_path / "roberta"
    shutil.copytree(TINY / "roberta", model)
    spec = json.loads((model / "tokenizer.json").read_text(encoding="utf-8"))
    spec["model"]["dropout"] = 0.9
    (model / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    clean = rb.BERTScorer(model_type=str(TINY / "roberta"), num_layers=2, use_fast_tokenizer=fast)
    scorer = rb.BERTScorer(
        model_type=str(model), num_layers=2, use_fast_tokenizer=fast, cache_bytes=0
    )
    cands, refs = ["the quick brown foxes jumped"] * 3, ["a quick brown fox jumps over"] * 3
    want = clean.score(cands, refs)[2]
    for _ in range(3):
        assert (scorer.score(cands, refs)[2] == want).all()
