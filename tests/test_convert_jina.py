"""jina-embeddings-v3 (``XLMRobertaLoRA``: XLM-R with rotary positions and per-task LoRA
adapters) on the tiny checkpoint made by tests/data/reference/make_jina.py with the remote
modeling code (in a side venv; none of that code is imported here): bert_score's ids, the remote
code's hidden states of every layer for the base weights and two tasks, padding in batches,
bert_score 0.3.13's scores (idf, multi-reference), the task in the graph cache's key, the model
identity and the signature, and the errors for a task that is not there.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import rust_bertscore as rb
from conftest import REFERENCE, assert_scores_match, load_cases
from rust_bertscore.catalog.lora_tasks import graph_family, split_task
from rust_bertscore.convert import build_model, load_config
from rust_bertscore.errors import CheckpointError, InputValueError, RustBertScoreWarning
from rust_bertscore.models.export import export_model
from rust_bertscore.models.files import resolve_model
from rust_bertscore.models.graph_cache import cache_root
from rust_bertscore.stages.tokenization import TextTokenizer

JINA = REFERENCE / "jina"
MODEL = JINA / "jina"
TASKS = ("base", "text-matching", "retrieval.query")
REL_TOL = 1e-5
"""Hidden states: max |got - remote code| / max(|remote|, 1) per layer (measured 1.7e-6 abs)."""
CASES = load_cases(JINA / "cases.json")


def model_type(task: str) -> str:
    return str(MODEL) if task == "base" else f"{MODEL}@{task}"


def reference(task: str) -> list[tuple[np.ndarray, np.ndarray]]:
    with np.load(JINA / f"hidden_states_{task}.npz") as z:
        return [(z[f"ids_{i}"], z[f"hidden_{i}"]) for i in range(4)]


def run(model, rows: list[np.ndarray]) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString())
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), np.int64)
    mask = np.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = r, 1
    return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    scale = max(float(np.abs(want).max()), 1.0)
    assert float(np.abs(got - want).max()) / scale < REL_TOL


def test_ids_are_bert_scores() -> None:
    tok = TextTokenizer(MODEL, load_config(MODEL))
    texts = [*CASES[0]["cands"][:3], " ".join(CASES[0]["cands"][:6])]
    for task in TASKS:
        assert tok.encode(texts) == [ids.tolist() for ids, _ in reference(task)]


@pytest.mark.parametrize("task", TASKS)
def test_all_hidden_states_match_the_remote_code(task: str) -> None:
    """Each text alone and all four in one padded batch, with the task's adapter merged."""
    model = build_model(MODEL, None, all_layers=True, task=None if task == "base" else task)
    ref = reference(task)
    batched = run(model, [ids for ids, _ in ref])
    assert batched.shape[:2] == (4, 4)
    for row, (ids, hidden) in enumerate(ref):
        alone = run(model, [ids])[:, 0]
        for layer in range(4):
            assert_close(alone[layer], hidden[layer])
            assert_close(batched[layer, row, : len(ids)], hidden[layer])


def test_tasks_give_other_states() -> None:
    """The references themselves differ by task (the adapters are not no-ops), and so do the
    graphs: a graph that ignored the task would fail the test above for two of three tasks."""
    base, matching = reference("base")[0][1], reference("text-matching")[0][1]
    assert float(np.abs(base[0] - matching[0]).max()) > 0.1  # the embedding adapter
    assert float(np.abs(base[3] - matching[3]).max()) > 0.1


def test_truncated_graph_outputs_that_layer() -> None:
    for layer in range(4):
        model = build_model(MODEL, layer, task="retrieval.query")
        for ids, hidden in reference("retrieval.query")[:2]:
            assert_close(run(model, [ids])[0], hidden[layer])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bert_score_cases(case: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RustBertScoreWarning)  # no tuned layer, empty texts
        got = rb.score(
            case["cands"], case["refs"], model_type=model_type(case["task"]), **case["kwargs"]
        )
    assert_scores_match(got, case["expected"], 1e-5)


def test_split_task() -> None:
    assert split_task("jinaai/jina-embeddings-v3@text-matching") == (
        "jinaai/jina-embeddings-v3",
        "text-matching",
    )
    assert split_task("jinaai/jina-embeddings-v3") == ("jinaai/jina-embeddings-v3", None)
    with pytest.raises(InputValueError, match="names no task"):
        split_task("jinaai/jina-embeddings-v3@")


def test_task_is_in_the_config_and_the_graph_key() -> None:
    base = resolve_model(str(MODEL))
    matching = resolve_model(model_type("text-matching"))
    assert (base.task, matching.task, matching.model_dir) == (None, "text-matching", MODEL)
    assert graph_family(base.config()) == "roberta"
    assert graph_family(matching.config()) == "roberta@text-matching"


def test_two_tasks_never_share_a_cache_entry_or_a_signature() -> None:
    from rust_bertscore.models.identity import model_identity

    scorers = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RustBertScoreWarning)
        for task in TASKS:
            scorers[task] = rb.BERTScorer(model_type=model_type(task), num_layers=2)
    identities = {t: model_identity(s.runtime) for t, s in scorers.items()}
    assert len({i.config for i in identities.values()}) == 3
    assert len({i.weights for i in identities.values()}) == 1  # one checkpoint
    signatures = {t: s.signature for t, s in scorers.items()}
    assert len(set(signatures.values())) == 3
    assert "model:" + model_type("text-matching") in signatures["text-matching"]
    onnx_entries = sorted((cache_root() / "onnx").glob("*/manifest.json"))
    families = {json.loads(p.read_text())["family"] for p in onnx_entries}
    assert {"roberta", "roberta@text-matching", "roberta@retrieval.query"} <= families
    cands, refs = CASES[0]["cands"][:4], CASES[0]["refs"][:4]
    f_base = scorers["base"].score(cands, refs)[2]
    f_task = scorers["text-matching"].score(cands, refs)[2]
    assert float(np.abs(f_base - f_task).max()) > 1e-3


def test_unknown_task_lists_the_tasks() -> None:
    with pytest.raises(InputValueError, match=r"unknown task 'matching'.*text-matching") as info:
        rb.BERTScorer(model_type=f"{MODEL}@matching", num_layers=2)
    for task in ("retrieval.query", "retrieval.passage", "separation", "classification"):
        assert task in str(info.value)
    with pytest.raises(InputValueError, match="unknown task"):
        build_model(MODEL, 1, task="matching")


def test_a_task_for_a_model_without_adapters_is_refused() -> None:
    nomic = REFERENCE / "nomic" / "nomic"
    with pytest.raises(InputValueError, match="no task adapters"):
        rb.BERTScorer(model_type=f"{nomic}@text-matching", num_layers=1)


def test_default_layer_is_the_last_with_a_warning() -> None:
    with pytest.warns(RustBertScoreWarning, match="its last layer, 3, untuned"):
        scorer = rb.BERTScorer(model_type=model_type("text-matching"))
    assert scorer.num_layers == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"position_embedding_type": "absolute"}, "position_embedding_type"),
        ({"rotary_emb_interleaved": True}, "interleaved"),
        ({"rotary_emb_scale_base": 512}, "rotary_emb_scale_base"),
        ({"lora_rank": 0}, "lora_rank"),
    ],
)
def test_refused_configurations(tmp_path: Path, change: dict, message: str) -> None:
    out = tmp_path / "jina_changed"
    shutil.copytree(MODEL, out)
    config = {**load_config(out), **change}
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(CheckpointError, match=message):
        build_model(out, 1, task="text-matching")


def test_listing_names_jina() -> None:
    beyond = {m.name: m for m in rb.supported_models(beyond_table=True) if not m.in_bert_score}
    info = beyond["jinaai/jina-embeddings-v3"]
    assert (info.model_type, info.default_layer, info.convertible) == ("xlm-roberta", 24, True)
    assert rb.model_info("jinaai/jina-embeddings-v3").model_type == "xlm-roberta"


def test_export_of_a_task_is_refused(tmp_path: Path) -> None:
    """An exported directory's config.json would not name the task."""
    with pytest.raises(InputValueError, match="exporting a LoRA task"):
        export_model(model_type("text-matching"), tmp_path / "out" / "model.onnx", 2)


def test_the_store_keeps_tasks_apart(tmp_path: Path) -> None:
    """The embedding store's key space names the cached graph (its manifest's family carries the
    task): a second task scored into the same store gets its own vectors, not the first's."""
    case = next(c for c in CASES if c["name"] == "text-matching_num_layers2_idfFalse")
    base = next(c for c in CASES if c["name"] == "base_num_layers2_idfFalse")
    store = tmp_path / "store"
    for c in (base, case):
        got = rb.score(
            c["cands"], c["refs"], model_type=model_type(c["task"]), num_layers=2, store=store
        )
        assert_scores_match(got, c["expected"], 1e-5)


def test_a_config_without_model_type_reads_as_xlm_roberta(tmp_path: Path) -> None:
    """The Hub copy of jina-embeddings-v3's config.json read here has no model_type: its config
    class declares "xlm-roberta", as transformers reads it."""
    out = tmp_path / "jina_no_type"
    shutil.copytree(MODEL, out)
    config = load_config(out)
    del config["model_type"]
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert load_config(out)["model_type"] == "xlm-roberta"
    assert resolve_model(f"{out}@text-matching").config()["model_type"] == "xlm-roberta"
    ids, hidden = reference("text-matching")[0]
    assert_close(run(build_model(out, 3, task="text-matching"), [ids])[0], hidden[3])


def test_openvino_runs_each_task() -> None:
    """runtime="openvino" builds its own graph (standard ops, its own cache key): each task's
    scores there too."""
    pytest.importorskip("openvino", reason="runtime='openvino' needs the [openvino] extra")
    for task in ("base", "retrieval.query"):
        case = next(c for c in CASES if c["name"] == f"{task}_num_layers2_idfFalse")
        got = rb.score(
            case["cands"],
            case["refs"],
            model_type=model_type(task),
            num_layers=2,
            runtime="openvino",
        )
        assert_scores_match(got, case["expected"], 1e-5)
