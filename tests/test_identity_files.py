"""The tokenizer's identity is what its loader read (issue 59): every file of every tiny
checkpoint is mutated in turn, and a mutation that changes the token ids (or the special
tokens, or the truncation length) must change ``tokenizer_digest``, whichever file it is in.
Bertweet's ``bpe.codes`` was left out of a list kept by hand: dropping one merge moved F by up
to 0.075 with the signature unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import MORE, TINY
from rust_bertscore.errors import RustBertScoreError
from rust_bertscore.models.identity import tokenizer_digest
from rust_bertscore.stages.tokenization.tokenizer import TextTokenizer

TEXTS = [
    "The cat sat on the mat, didn't it?",
    "naïve café déjà vu — 日本語のテキスト 1234.5 @user http://example.com/x?y=1",
    "lowercase UPPERCASE MiXeD words: internationalization, tokenizers, supercalifragilistic",
    "  spaces\tand\nnewlines  ",
]
NOT_TOKENIZER = {"config.json", "hidden_states.npz", "ids.json", "model.safetensors"}
"""Files of a tiny checkpoint that are not the tokenizer's (the config has its own digest)."""

FAMILIES = sorted(
    [p for p in TINY.iterdir() if p.is_dir()] + [p for p in MORE.iterdir() if p.is_dir()],
    key=lambda p: p.name,
)


def _mutations(path: Path) -> list[bytes]:
    """A few edits of the file's bytes: lines dropped (a merge, a vocabulary entry), JSON
    values changed (a flag flipped, a token renamed), a byte of a binary model changed."""
    data = path.read_bytes()
    out: list[bytes] = []
    if path.suffix == ".json":
        try:
            value = json.loads(data)
        except ValueError:
            return [data + b" "]
        if isinstance(value, dict):
            for key, item in value.items():
                changed = dict(value)
                if isinstance(item, bool):
                    changed[key] = not item
                elif isinstance(item, int):
                    changed[key] = item // 2 + 1
                elif isinstance(item, str):
                    changed[key] = item + "x"
                else:
                    del changed[key]
                out.append(json.dumps(changed).encode())
        return out
    lines = data.split(b"\n")
    if len(lines) > 8 and b"\0" not in data[:4096]:
        for at in (len(lines) // 2, len(lines) - 3, 2):
            out.append(b"\n".join(lines[:at] + lines[at + 1 :]))
        return out
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:
        model.Clear()
    if model.pieces:  # SentencePiece (spiece.model, prophetnet.tokenizer, ...)
        for at in range(10, len(model.pieces), max(1, len(model.pieces) // 6)):
            edited = sentencepiece_model_pb2.ModelProto()
            edited.CopyFrom(model)
            edited.pieces[at].piece += "\u00a7"
            out.append(edited.SerializeToString())
            edited.CopyFrom(model)
            edited.pieces[at].score += 5.0
            out.append(edited.SerializeToString())
        return out
    mid = len(data) // 2
    out.append(data[:mid] + bytes([data[mid] ^ 1]) + data[mid + 1 :])
    return out


def _behaviour(tokenizer: TextTokenizer) -> tuple:
    """What the scores see of a tokenizer: the texts' ids (or that they cannot be encoded),
    the special tokens around them, the truncation length."""
    try:
        ids: object = tokenizer.encode_content(TEXTS)
    except RustBertScoreError as e:
        ids = type(e).__name__
    return (ids, tokenizer.prefix_ids, tokenizer.suffix_ids, tokenizer.max_length)


def _load(folder: Path, fast: bool) -> TextTokenizer | None:
    config = json.loads((folder / "config.json").read_text())
    try:
        return TextTokenizer(folder, config, fast=fast)
    except (RustBertScoreError, ValueError):
        return None


@pytest.mark.parametrize("fast", [False, True], ids=["slow", "fast"])
@pytest.mark.parametrize("family", FAMILIES, ids=lambda p: p.name)
def test_a_change_to_any_file_that_changes_the_ids_changes_the_signature(
    family: Path, fast: bool, tmp_path: Path
) -> None:
    folder = tmp_path / family.name
    shutil.copytree(family, folder)
    base = _load(folder, fast)
    if base is None:
        pytest.skip(f"{family.name} has no {'fast' if fast else 'slow'} tokenizer here")
    digest, behaviour = tokenizer_digest(base), _behaviour(base)
    changed = 0
    for path in sorted(folder.iterdir()):
        if path.name in NOT_TOKENIZER or not path.is_file():
            continue
        original = path.read_bytes()
        for mutated in _mutations(path):
            path.write_bytes(mutated)
            try:
                tokenizer = _load(folder, fast)
                if tokenizer is None or _behaviour(tokenizer) == behaviour:
                    continue
                changed += 1
                assert path.name in tokenizer.files_read, (path.name, sorted(tokenizer.files_read))
                assert tokenizer_digest(tokenizer) != digest, path.name
            finally:
                path.write_bytes(original)
    assert changed, "no mutation changed the ids: the test would prove nothing"


def test_bertweets_merges_are_in_the_signature(tmp_path: Path) -> None:
    """The case reported: one merge line of ``bpe.codes`` dropped."""
    folder = tmp_path / "bertweet"
    shutil.copytree(MORE / "bertweet", folder)
    base = _load(folder, fast=False)
    assert base is not None and "bpe.codes" in base.files_read
    codes = folder / "bpe.codes"
    lines = codes.read_bytes().split(b"\n")
    codes.write_bytes(b"\n".join(lines[1:]))
    edited = _load(folder, fast=False)
    assert edited is not None
    assert tokenizer_digest(edited) != tokenizer_digest(base)


WEIGHT_FILES = {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin"}


def test_the_converter_reads_only_what_the_identity_digests() -> None:
    """The signature's ``config`` digests config.json's fields and ``weights`` the weights'
    values: the converter, recorded on every tiny checkpoint, opens nothing else (a new file
    it opened would change graphs the signature does not name, and fail here)."""
    from rust_bertscore.convert import build_model
    from rust_bertscore.support.read_record import recording

    folders = [f for f in FAMILIES if any(f.glob("*.safetensors"))]
    assert len(folders) > 20
    for folder in folders:
        with recording(folder) as record:
            build_model(folder, 1)
        assert "config.json" in record.files, folder.name
        assert set(record.files) <= {"config.json", *WEIGHT_FILES}, (folder.name, record.files)


def test_an_export_copies_every_file_the_tokenizer_reads(tmp_path: Path) -> None:
    """An export copied a fixed list of tokenizer files, so Bertweet's ``bpe.codes`` stayed
    behind and the exported graph's tokenizer could not be loaded: the files read decide."""
    from rust_bertscore import BERTScorer
    from rust_bertscore.models.export import export_model

    out = tmp_path / "bertweet" / "model.onnx"
    export_model(str(MORE / "bertweet"), out, num_layers=1)
    assert (out.parent / "bpe.codes").read_bytes() == (MORE / "bertweet" / "bpe.codes").read_bytes()
    texts = ["@user the cat sat on the mat :)"]
    exported = BERTScorer(model_type=str(out)).pipeline.tokens.tokenize(texts).ids
    original = BERTScorer(model_type=str(MORE / "bertweet"), num_layers=1)
    assert exported == original.pipeline.tokens.tokenize(texts).ids


def test_the_docs_list_the_files_the_record_holds() -> None:
    """docs/reproducibility.md's table of the files each tokenizer reads is generated from
    the same record (``docs/gen_reads.py``): it must be current."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "docs" / "gen_reads.py"
    spec = importlib.util.spec_from_file_location("gen_reads", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "run python docs/gen_reads.py"
