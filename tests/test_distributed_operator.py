"""BERTScoreBatch and the first pass without an engine: batches of every format, pieces scored
with a plan in any order, errors naming the row."""

from __future__ import annotations

import itertools
import pickle
import random

import numpy as np
import pytest

from distributed_data import as_lists, floor_case, shuffled_rows
from rust_bertscore import score
from rust_bertscore.distributed import BERTScoreBatch, DistributedInputError
from rust_bertscore.distributed.plan import (
    PlanBuilder,
    ScorePlan,
    batch_statistics,
    count_pairs,
    load_tokenizer,
)

pd = pytest.importorskip("pandas", reason="pandas is not installed (make test installs it)")

# The rows hold empty texts, on which score() warns as bert_score does.
pytestmark = pytest.mark.filterwarnings("ignore::rust_bertscore.errors.RustBertScoreWarning")


def _frame(cands: list, refs: list, index: list | None = None) -> pd.DataFrame:
    out = pd.DataFrame({"hyp": cands, "ref": refs})
    if index is not None:
        out["row"] = index
    return out


def test_one_batch_equals_score_in_every_format(minilm_dir):
    cands, refs = shuffled_rows(40, seed=3)
    expected = score(cands, refs, model_type=str(minilm_dir))
    op = BERTScoreBatch("hyp", "ref", model_type=str(minilm_dir))
    frame = _frame(cands, refs)
    got_pandas = op(frame)
    assert list(got_pandas.columns) == ["hyp", "ref", "P", "R", "F"]
    pa = pytest.importorskip("pyarrow")
    got_arrow = op(pa.Table.from_pandas(frame))
    ref_cells = np.empty(len(refs), dtype=object)
    ref_cells[:] = [np.array(r) for r in refs]
    got_dict = op({"hyp": np.array(cands), "ref": ref_cells})
    for got in (got_pandas, got_arrow.to_pandas(), pd.DataFrame(got_dict)):
        for col, want in zip("PRF", expected):
            np.testing.assert_allclose(got[col].to_numpy(), want, atol=1e-6)


def _plan(frames: list, case: dict, model: str, **kw: object) -> ScorePlan:
    n = sum(len(f) for f in frames)
    batch_size = case["kwargs"]["batch_size"]
    idf = bool(case["kwargs"].get("idf", False))
    builder = PlanBuilder(n, batch_size, floors=True, idf=idf)
    for f in frames:
        builder.add_counts(count_pairs(f, "ref", "row"))
    offsets = builder.finish_counts()
    for f in frames:
        part = batch_statistics(
            f,
            "hyp",
            "ref",
            "row",
            tokenizer=load_tokenizer(model),
            pair_offsets=offsets,
            batch_size=batch_size,
            floors=True,
            idf=idf,
        )
        builder.add_statistics(part)
    return builder.build()


@pytest.mark.parametrize("name", ["mismatched_idf_L4_b7", "mismatched_multi_ref_L6_b7"])
def test_pieces_in_any_order_give_bert_scores_numbers(minilm_dir, name):
    """Uneven pieces, planned and scored in a shuffled order, equal bert_score's own figures
    (idf over all references and its padding floor of batches of 7 pairs that straddle
    pieces)."""
    case = floor_case(name)
    model = str(minilm_dir)
    cands, refs = case["cands"], as_lists(case["refs"])
    frame = _frame(cands, refs, list(range(len(cands))))
    cuts = [0, 13, 50, 51, 90, len(cands)]
    pieces = [frame.iloc[a:b] for a, b in itertools.pairwise(cuts)]
    random.Random(1).shuffle(pieces)
    plan = _plan(pieces, case, model)
    kwargs = {k: v for k, v in case["kwargs"].items() if k != "batch_size"}
    op = BERTScoreBatch(
        "hyp",
        "ref",
        index_col="row",
        plan=plan,
        batch_size=case["kwargs"]["batch_size"],
        model_type=model,
        **kwargs,
    )
    op = pickle.loads(pickle.dumps(op))  # as an engine ships it
    out = pd.concat([op(p) for p in pieces]).sort_values("row")
    for col in "PRF":
        np.testing.assert_allclose(out[col].to_numpy(), case["expected"][col], atol=1e-5)


def test_operator_pickles_without_its_scorer(minilm_dir):
    op = BERTScoreBatch("hyp", "ref", model_type=str(minilm_dir), batch_independent=True)
    op(_frame(["a cat"], ["a dog"]))
    assert op._scorer is not None
    assert pickle.loads(pickle.dumps(op))._scorer is None


@pytest.mark.parametrize(
    ("cands", "refs", "message"),
    [
        (["ok", None, "ok"], ["a", "b", "c"], r"row 11: column 'hyp' holds a missing value"),
        (["ok", 7, "ok"], ["a", "b", "c"], r"row 11: column 'hyp' must be a str, got int"),
        (["ok", "ok", "ok"], ["a", ["b", 3.5], "c"], r"row 11: column 'ref\[1\]' must be a str"),
        (["ok", "ok", "ok"], [["a"], [], ["c"]], r"row 11: column 'ref' holds an empty list"),
    ],
)
def test_malformed_row_names_its_index(minilm_dir, cands, refs, message):
    frame = _frame(cands, refs, [10, 11, 12])
    op = BERTScoreBatch(
        "hyp", "ref", index_col="row", model_type=str(minilm_dir), batch_independent=True
    )
    with pytest.raises(DistributedInputError, match=message):
        op(frame)
    with pytest.raises(DistributedInputError, match=message):
        count_pairs(frame, "ref", "row") if "ref" in message else batch_statistics(
            frame,
            "hyp",
            "ref",
            "row",
            tokenizer=load_tokenizer(str(minilm_dir)),
            pair_offsets=None,
            batch_size=64,
            floors=True,
            idf=False,
        )


def test_bad_arguments_fail_before_any_work(minilm_dir):
    op = BERTScoreBatch("hypothesis", "ref", model_type=str(minilm_dir))
    with pytest.raises(ValueError, match=r"no candidate column 'hypothesis'.*\['hyp', 'ref'\]"):
        op(_frame(["a"], ["b"]))
    with pytest.raises(ValueError, match="idf=True needs document frequencies"):
        BERTScoreBatch("hyp", "ref", idf=True)
    with pytest.raises(TypeError, match=r"unknown BERTScorer option.*'modle_type'"):
        BERTScoreBatch("hyp", "ref", modle_type="x")
    with pytest.raises(ValueError, match="would overwrite an input column"):
        BERTScoreBatch("P", "ref")


def test_plan_rejects_an_index_that_is_not_0_to_n(minilm_dir):
    builder = PlanBuilder(3, 64, floors=True, idf=False)
    builder.add_counts(count_pairs(_frame(["a", "b"], [["x"], ["y"]], [0, 1]), "ref", "row"))
    with pytest.raises(DistributedInputError, match="row index 1 appears twice"):
        builder.add_counts(count_pairs(_frame(["c"], [["z"]], [1]), "ref", "row"))
    with pytest.raises(DistributedInputError, match="row index 2 never appeared"):
        builder.finish_counts()
