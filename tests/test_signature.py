"""``BERTScorer.signature``: a citable line naming every setting the scores depend on. Each field
tells two scorers apart that differ in it; the weights digest is of the weights' values (a copy,
a re-sharded or prefixed checkpoint share it; a changed weight changes it), computed lazily and
once per checkpoint; the baseline's origin is told; the batch size is named only where a
score depends on it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import rust_bertscore as rb
from conftest import REFERENCE, TINY, fake_hub_cache
from rust_bertscore.convert import values as convert_digest
from rust_bertscore.convert import weights_fingerprint
from rust_bertscore.models import graph_cache
from rust_bertscore.models.export import export_model
from rust_bertscore.models.graph_cache import cache_root
from rust_bertscore.models.identity import (
    GRAPH_DIGEST_PREFIX,
    checkpoint_digest,
    graph_file_digest,
)
from rust_bertscore.scoring.signature import format_signature, parse_signature
from rust_bertscore.stages.rescale import baseline_digest, read_baseline, write_baseline

ROOT = Path(__file__).resolve().parents[1]
BERT = str(TINY / "bert")
USER_BASELINE = str(REFERENCE / "baseline_minilm_l6.csv")
CORE = (
    "model",
    "weights",
    "config",
    "layer",
    "idf",
    "tok",
    "rescale",
    "floor",
    "prec",
    "device",
    "runtime",
    "version",
)


def fields(scorer: rb.BERTScorer, batch_size: int | None = None) -> dict[str, str]:
    line = scorer.signature if batch_size is None else scorer.signature_for(batch_size)
    assert "\n" not in line and line == format_signature(parse_signature(line))
    return parse_signature(line)


def copy_checkpoint(dst: Path, src: Path = TINY / "bert") -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.npz"))
    return dst


def test_the_default_signature() -> None:
    got = fields(rb.BERTScorer(model_type=BERT))
    assert list(got) == list(CORE)
    assert got["model"] == BERT and got["layer"] == "3" and got["idf"] == "no"
    assert got["tok"].startswith("slow-") and len(got["tok"]) == len("slow-") + 16
    assert got["rescale"] == "no" and got["floor"] == "bs64"
    assert got["prec"] == "fp32" and got["device"] == "cpu" and got["version"] == rb.__version__
    assert len(got["weights"]) == 16 and int(got["weights"], 16) >= 0
    assert len(got["config"]) == 16 and int(got["config"], 16) >= 0
    # The bert_score-style hash is untouched.
    assert rb.BERTScorer(model_type=BERT).hash == (
        f"{BERT}_L3_no-idf_version={rb.__version__}(rust-bertscore)"
    )


# Each scorer differs from the base (tiny BERT, layer 3) in one setting: the field it changes.
VARIANTS = [
    pytest.param(
        {"model_type": str(TINY / "electra")},
        {"model", "weights", "config", "tok"},
        id="model",
    ),
    pytest.param({"num_layers": 2}, {"layer"}, id="layer"),
    pytest.param({"all_layers": True}, {"layer"}, id="all-layers"),
    pytest.param({"idf": True}, {"idf"}, id="idf"),
    pytest.param({"use_fast_tokenizer": True}, {"tok"}, id="fast-tokenizer"),
    pytest.param(
        {"rescale_with_baseline": True, "baseline_path": USER_BASELINE},
        {"rescale", "baseline"},
        id="rescale",
    ),
    pytest.param({"batch_independent": True}, {"floor"}, id="floor"),
    pytest.param(
        {"precision": "int8", "runtime": "onnxruntime"}, {"prec", "runtime"}, id="precision"
    ),
    pytest.param({"long_texts": "window", "window_stride": 32}, {"long"}, id="windows"),
    pytest.param({"exclude_punctuation": True}, {"excl"}, id="exclusions"),
    pytest.param({"beta": 2.0}, {"beta"}, id="beta"),
]


@pytest.mark.parametrize(("kwargs", "changed"), VARIANTS)
def test_each_setting_changes_its_field(kwargs: dict, changed: set[str]) -> None:
    base = fields(rb.BERTScorer(model_type=BERT))
    other = fields(rb.BERTScorer(**{"model_type": BERT, **kwargs}))
    differ = {k for k in base.keys() | other.keys() if base.get(k) != other.get(k)}
    assert differ == changed, (base, other)


def test_the_option_fields() -> None:
    got = fields(
        rb.BERTScorer(
            model_type=BERT,
            long_texts="window",
            exclude_punctuation=True,
            exclude_special_tokens=True,
            beta=0.5,
        )
    )
    assert (got["long"], got["excl"], got["beta"]) == ("window", "punct+special", "0.5")
    assert fields(rb.BERTScorer(model_type=BERT, all_layers=True))["layer"] == "all"
    assert (
        fields(rb.BERTScorer(model_type=BERT, precision="int8", runtime="onnxruntime"))["prec"]
        == "int8"
    )
    # TF32 is a CUDA setting: on the CPU the encoder computes fp32, and the signature says so.
    assert fields(rb.BERTScorer(model_type=BERT, precision="tf32", device="cpu"))["prec"] == "fp32"


def test_a_revision_is_named() -> None:
    class Pinned(rb.BERTScorer):
        # A pinned revision without a Hub download: only the signature reads it here.
        @property
        def revision(self) -> str:
            return "v1.0"

        @revision.setter
        def revision(self, value: object) -> None:
            pass

    got = fields(Pinned(model_type=BERT))
    assert list(got)[:3] == ["model", "rev", "weights"] and got["rev"] == "v1.0"
    assert "rev" not in fields(rb.BERTScorer(model_type=BERT))


def test_the_batch_size_is_named_only_where_scores_depend_on_it() -> None:
    floored = rb.BERTScorer(model_type=BERT)
    assert fields(floored, 8)["floor"] == "bs8" and fields(floored)["floor"] == "bs64"
    assert floored.signature_for(8) != floored.signature_for(16)
    independent = [
        rb.BERTScorer(model_type=BERT, batch_size=b, batch_independent=True) for b in (4, 64)
    ]
    lines = {s.signature_for(b) for s in independent for b in (None, 1, 8, 500)}
    assert len(lines) == 1 and fields(independent[0])["floor"] == "no"


def test_different_weights_give_different_digests(tmp_path: Path) -> None:
    digests = {
        fields(rb.BERTScorer(model_type=str(TINY / f)))["weights"]
        for f in ("bert", "roberta", "electra")
    }
    assert len(digests) == 3
    changed = copy_checkpoint(tmp_path / "changed")
    tensors = load_file(str(changed / "model.safetensors"))
    name = next(k for k in sorted(tensors) if k.endswith("attention.output.dense.bias"))
    tensors[name] = tensors[name] + np.float32(1e-3)
    save_file(tensors, str(changed / "model.safetensors"))
    assert fields(rb.BERTScorer(model_type=str(changed)))["weights"] not in digests


def test_the_same_weights_elsewhere_give_the_same_digest(tmp_path: Path) -> None:
    want = convert_digest.weights_digest(BERT)
    assert fields(rb.BERTScorer(model_type=BERT))["weights"] == want[:16]
    copy = copy_checkpoint(tmp_path / "copy")
    got = fields(rb.BERTScorer(model_type=str(copy)))
    assert got["weights"] == want[:16] and got["model"] == str(copy)
    # Re-saved as a task model's checkpoint: "bert."-prefixed names, two shards and an index,
    # another key order, an integer buffer the bare model does not save: other files, same values.
    shards = copy_checkpoint(tmp_path / "shards")
    tensors = load_file(str(shards / "model.safetensors"))
    (shards / "model.safetensors").unlink()
    names = sorted(tensors, reverse=True)
    parts = {"a.safetensors": names[::2], "b.safetensors": names[1::2]}
    weight_map = {}
    for file, keys in parts.items():
        save_file({f"bert.{k}": tensors[k] for k in keys}, str(shards / file))
        weight_map.update({f"bert.{k}": file for k in keys})
    extra = {"bert.embeddings.position_ids": np.arange(8, dtype=np.int64)[None]}
    save_file(extra, str(shards / "c.safetensors"))
    weight_map["bert.embeddings.position_ids"] = "c.safetensors"
    index = {"metadata": {}, "weight_map": weight_map}
    (shards / "model.safetensors.index.json").write_text(json.dumps(index))
    assert convert_digest.weights_digest(shards) == want
    assert weights_fingerprint(shards) != weights_fingerprint(BERT)


def test_the_digest_is_computed_lazily_and_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = copy_checkpoint(tmp_path / "lazy")
    tensors = load_file(str(model / "model.safetensors"))  # weights no test digested before
    tensors = {k: v + np.float32(2e-3) if v.dtype == np.float32 else v for k, v in tensors.items()}
    save_file(tensors, str(model / "model.safetensors"))
    calls: list[Path] = []
    real = convert_digest.weights_digest

    def counted(model_dir):
        calls.append(Path(model_dir))
        return real(model_dir)

    monkeypatch.setattr(convert_digest, "weights_digest", counted)
    monkeypatch.setattr(graph_cache, "weights_digest", counted)
    scorer = rb.BERTScorer(model_type=str(model))
    scorer.score(["a cat"], ["the cat"])
    # the converted graph's cache key names it (issue 46): computed once, on the first load
    assert len(calls) == 1
    first = scorer.signature
    assert len(calls) == 1
    assert rb.BERTScorer(model_type=str(model), idf=True).signature != first
    assert checkpoint_digest(model)[:16] == parse_signature(first)["weights"]
    assert len(calls) == 1  # kept in the model cache, by the weight files' fingerprint
    assert any((cache_root() / "digests").glob("*.json"))


def test_an_exported_graph_names_its_checkpoints_weights(tmp_path: Path) -> None:
    out = tmp_path / "export" / "model.onnx"
    info = export_model(BERT, out, num_layers=2)
    assert info.weights_digest == convert_digest.weights_digest(BERT)
    checkpoint = fields(rb.BERTScorer(model_type=BERT, num_layers=2))
    graph = fields(rb.BERTScorer(model_type=str(out)))
    assert graph["weights"] == checkpoint["weights"] and graph["layer"] == "2"
    # A graph that does not record its checkpoint: the digest of its initializers.
    record = out.with_name("model.onnx.json")
    data = json.loads(record.read_text())
    del data["weights_digest"]
    data["graph_sha256"] = graph_file_digest(out)
    record.write_text(json.dumps(data))
    bare = fields(rb.BERTScorer(model_type=str(out)))["weights"]
    assert bare.startswith(GRAPH_DIGEST_PREFIX) and len(bare) == len(GRAPH_DIGEST_PREFIX) + 16
    other = tmp_path / "other" / "model.onnx"
    export_model(BERT, other, num_layers=1)
    tied = data | {"num_layers": 1, "graph_sha256": graph_file_digest(other)}
    other.with_name("model.onnx.json").write_text(json.dumps(tied))
    assert fields(rb.BERTScorer(model_type=str(other)))["weights"] != bare


@pytest.fixture
def roberta_large_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny RoBERTa, cached offline under the Hub id "roberta-large" (lang="en"'s model,
    whose baseline is one of bert_score's)."""
    fake_hub_cache(tmp_path, "roberta-large", TINY / "roberta")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))


def test_the_baselines_origins_are_told_apart(roberta_large_hub) -> None:
    bert_scores = fields(rb.BERTScorer(lang="en", num_layers=2, rescale_with_baseline=True))
    assert bert_scores["model"] == "roberta-large" and bert_scores["rescale"] == "bert_score"
    own = fields(rb.BERTScorer(rescale_with_baseline=True))  # the default model's, made here
    assert own["rescale"] == "rust-bertscore"
    users = fields(
        rb.BERTScorer(
            model_type="roberta-large",
            num_layers=2,
            rescale_with_baseline=True,
            baseline_path=USER_BASELINE,
        )
    )
    assert users["rescale"] == "user"
    assert len({bert_scores["baseline"], own["baseline"], users["baseline"]}) == 3


def test_baseline_digest_is_of_values(tmp_path: Path) -> None:
    table = read_baseline(USER_BASELINE)
    tsv = tmp_path / "same.tsv"
    rows = "".join(f"{i}\t{p:.17g}\t{r:.17g}\t{f:.17g}\n" for i, (p, r, f) in enumerate(table))
    tsv.write_text("LAYER\tP\tR\tF\n" + rows)
    assert baseline_digest(tsv) == baseline_digest(USER_BASELINE)
    table[3, 2] += 1e-6
    changed = tmp_path / "changed.csv"
    write_baseline(changed, table)
    assert baseline_digest(changed) != baseline_digest(USER_BASELINE)


def test_a_missing_baseline() -> None:
    scorer = rb.BERTScorer(model_type=BERT, lang="xx", rescale_with_baseline=True)
    with pytest.raises(rb.InputValueError, match="Baseline not Found"):
        scorer.signature  # noqa: B018
    scorer.missing_baseline = "warn"  # score()'s policy: scores stay unscaled
    assert fields(scorer)["rescale"] == "no"


def test_parse_signature() -> None:
    line = format_signature({"model": "a|b%7C", "layer": "6"})
    assert parse_signature(line) == {"model": "a|b%7C", "layer": "6"}
    with pytest.raises(rb.InputValueError, match="not a signature field"):
        parse_signature("model:x|layer6")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "rust_bertscore", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=600,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_the_command_prints_the_signature() -> None:
    hyps, refs = str(ROOT / "examples" / "hyps.txt"), str(ROOT / "examples" / "refs.txt")
    want = rb.BERTScorer(model_type=BERT, num_layers=3, idf=True).signature_for(8)
    proc = run_cli(
        "-c", hyps, "-r", refs, "-m", BERT, "-l", "3", "--idf", "-b", "8", "--signature", "-q"
    )
    assert proc.stderr.splitlines() == [want] and "bs8" in want
    assert len(proc.stdout.splitlines()) == 1  # stdout keeps bert-score's summary line only
    assert "signature" not in run_cli("-c", hyps, "-r", refs, "-m", BERT, "-l", "3", "-q").stderr
    doc = json.loads(
        run_cli("-c", hyps, "-r", refs, "-m", BERT, "-l", "3", "--format", "json").stdout
    )
    assert doc["signature"] == rb.BERTScorer(model_type=BERT, num_layers=3).signature
    assert doc["hash"] == rb.BERTScorer(model_type=BERT).hash
    independent = ("--batch-independent", "--format", "json", "-b", "3")
    doc = json.loads(run_cli("-c", hyps, "-r", refs, "-m", BERT, *independent).stdout)
    assert parse_signature(doc["signature"])["floor"] == "no"
