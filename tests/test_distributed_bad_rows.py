"""``on_error="null"`` without an engine: bad rows get null scores and their message, the good
rows the numbers of one ``score()`` call on them alone (IDF and the padding floor over the good
rows), in pieces planned and scored in any order."""

from __future__ import annotations

import itertools
import pickle
import random

import numpy as np
import pytest

from distributed_data import BAD_ROW_OPTIONS, bad_rows, check_bad_rows, shuffled_rows
from rust_bertscore import score
from rust_bertscore.distributed import BERTScoreBatch, DistributedInputError
from rust_bertscore.distributed.plan import ScorePlan, first_pass

pd = pytest.importorskip("pandas", reason="pandas is not installed (make test installs it)")

pytestmark = pytest.mark.filterwarnings("ignore::rust_bertscore.errors.RustBertScoreWarning")


def _pieces(cands: list, refs: list, cuts: list[int]) -> list[pd.DataFrame]:
    frame = pd.DataFrame({"hyp": cands, "ref": refs, "row": np.arange(len(cands))})
    pieces = [frame.iloc[a:b] for a, b in itertools.pairwise(cuts)]
    random.Random(2).shuffle(pieces)
    return pieces


def _plan(pieces: list, model: str, n: int, on_error: str = "null", **kw: object) -> ScorePlan:
    return first_pass(
        lambda fn: (fn(p) for p in pieces),
        lambda: True,
        "hyp",
        "ref",
        "row",
        num_rows=n,
        batch_size=int(kw.get("batch_size", 64)),  # type: ignore[call-overload]
        floors=True,
        idf=bool(kw.get("idf", False)),
        model_type=model,
        lang=None,
        on_error=on_error,
    )


def test_pieces_with_bad_rows_give_the_good_rows_numbers(minilm_dir):
    model = str(minilm_dir)
    cands, refs, good = bad_rows()
    pieces = _pieces(cands, refs, [0, 9, 30, 31, 64, 100, len(cands)])
    plan = _plan(pieces, model, len(cands), **BAD_ROW_OPTIONS)
    op = BERTScoreBatch(
        "hyp",
        "ref",
        index_col="row",
        plan=plan,
        model_type=model,
        on_error="null",
        **BAD_ROW_OPTIONS,
    )
    op = pickle.loads(pickle.dumps(op))  # as an engine ships it
    out = pd.concat([op(p) for p in pieces])
    assert list(out.columns) == ["hyp", "ref", "row", "P", "R", "F", "error"]
    check_bad_rows(out, cands, refs, good, model)


def test_plain_string_references_are_counted_without_the_bad_rows(minilm_dir):
    """One reference a row (no pair counts needed when every row is good): a bad row must
    still give up its place in the scoring batches."""
    model = str(minilm_dir)
    cands, refs = shuffled_rows(60, seed=11, multi=0.0)
    refs = [r[0] for r in refs]
    cands[5], refs[20] = None, None
    good = [i for i in range(60) if i not in (5, 20)]
    pieces = _pieces(cands, refs, [0, 17, 33, 60])
    plan = _plan(pieces, model, 60, batch_size=7)
    op = BERTScoreBatch(
        "hyp", "ref", index_col="row", plan=plan, batch_size=7, model_type=model, on_error="null"
    )
    out = pd.concat([op(p) for p in pieces]).sort_values("row").reset_index(drop=True)
    want = score([cands[i] for i in good], [refs[i] for i in good], model_type=model, batch_size=7)
    for col, expected in zip("PRF", want):
        np.testing.assert_allclose(out.loc[good, col].to_numpy(np.float64), expected, atol=1e-6)
    assert out.loc[[5, 20], "F"].isna().all()


@pytest.mark.parametrize(
    ("cand", "ref", "message"),
    [
        (7, "a", "row 1: column 'hyp' must be a str, got int"),
        (b"bytes", "a", "row 1: column 'hyp' must be a str, got bytes"),
        ("ok", ["a", "x\ud800y"], "row 1: column 'ref[1]' cannot be encoded as UTF-8"),
        (float("nan"), "a", "row 1: column 'hyp' holds a missing value (nan)"),
    ],
)
def test_not_a_string_or_not_encodable(minilm_dir, cand, ref, message):
    """Any batch format: a dict of NumPy arrays here, with the error column (named) added."""
    cands = np.array(["the cat sat", cand, "dogs run"], dtype=object)
    refs = np.empty(3, dtype=object)
    refs[:] = ["a cat sat", ref, ["dogs ran", "a dog"]]
    op = BERTScoreBatch("hyp", "ref", model_type=str(minilm_dir), on_error="null", error_col="why")
    out = op({"hyp": cands, "ref": refs})
    assert out["why"][0] is None and out["why"][2] is None
    assert out["why"][1].startswith(message), out["why"][1]
    assert np.isnan(out["P"][1]) and np.isnan(out["F"][1])
    want = score(
        ["the cat sat", "dogs run"],
        [["a cat sat"], ["dogs ran", "a dog"]],
        model_type=str(minilm_dir),
    )
    np.testing.assert_allclose(out["F"][[0, 2]], want[2], atol=1e-6)


def test_arrow_batches_get_nulls_and_a_string_column(minilm_dir):
    pa = pytest.importorskip("pyarrow")
    op = BERTScoreBatch("hyp", "ref", model_type=str(minilm_dir), on_error="null")
    out = op(pa.table({"hyp": ["a cat", None], "ref": ["a dog", "b"]}))
    assert out.column("F").null_count == 1 and out.column("F").type == pa.float32()
    assert out.column("error").type == pa.string() and out.column("error").null_count == 1
    every_row_good = op(pa.table({"hyp": ["a cat"], "ref": ["a dog"]}))
    assert every_row_good.column("error").type == pa.string()


def test_all_rows_bad_and_raise_is_the_default(minilm_dir):
    frame = pd.DataFrame({"hyp": [None, "a"], "ref": ["b", None]})
    op = BERTScoreBatch("hyp", "ref", model_type=str(minilm_dir), on_error="null")
    out = op(frame)
    assert out[["P", "R", "F"]].isna().all().all() and out["error"].notna().all()
    with pytest.raises(DistributedInputError, match="row 0: column 'hyp' holds a missing"):
        BERTScoreBatch("hyp", "ref", model_type=str(minilm_dir))(frame)


def test_on_error_arguments_are_checked(minilm_dir):
    with pytest.raises(ValueError, match="on_error must be 'raise' or 'null', got 'skip'"):
        BERTScoreBatch("hyp", "ref", on_error="skip")
    with pytest.raises(ValueError, match="would overwrite an input column"):
        BERTScoreBatch("hyp", "error", on_error="null")
    with pytest.raises(ValueError, match="error_col 'F' is also a score column"):
        BERTScoreBatch("hyp", "ref", on_error="null", error_col="F")
    pieces = _pieces(["a", "b"], [["c"], ["d"]], [0, 2])
    plan = _plan(pieces, str(minilm_dir), 2, on_error="raise")
    with pytest.raises(ValueError, match="plan was made with on_error='raise', not 'null'"):
        BERTScoreBatch("hyp", "ref", index_col="row", plan=plan, on_error="null")
