"""Spark engine on a real ``local[2]`` session: ``score_spark`` and ``mapInPandas`` with a plan
give the numbers of one ``score()`` call (idf and bert_score's padding floor included)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from conftest import skip_without_java
from distributed_data import (
    BAD_ROW_OPTIONS,
    LONG_TEXT_OPTIONS,
    as_lists,
    bad_rows,
    check_bad_rows,
    check_scores,
    expected_scores,
    floor_case,
    long_text_rows,
    shuffled_rows,
)

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (make test installs it)")
pd = pytest.importorskip("pandas", reason="pandas is not installed (make test installs it)")
skip_without_java()

from rust_bertscore.distributed import (  # noqa: E402
    map_in_pandas,
    plan_spark,
    score_schema,
    score_spark,
    summarize_spark,
)

# PySpark warns that it "does not yet fully support pandas >= 3"; the checks below are what
# matters here.
pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:pyspark"),
    pytest.mark.filterwarnings("ignore::rust_bertscore.errors.RustBertScoreWarning"),
]


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("rust-bertscore-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "200")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _frame(spark, cands: list, refs: list, partitions: int, with_row: bool = False):
    frame = pd.DataFrame({"hyp": cands, "ref": refs})
    if with_row:
        frame["row"] = np.arange(len(frame))
    return spark.createDataFrame(frame).repartition(partitions)


def test_2000_pairs_with_idf_equal_score(spark, minilm_dir):
    """2,000 rows (30% with 2-4 references), rows numbered by the engine: equal to one
    in-process score() call with idf; the summary is a Spark aggregation."""
    cands, refs = shuffled_rows(2000)
    df = spark.createDataFrame(pd.DataFrame({"hyp": cands, "ref": refs}))
    scored = score_spark(
        df, "hyp", "ref", model_type=str(minilm_dir), idf=True, index_col="row"
    ).cache()  # scored once, read twice
    out = scored.toPandas()
    want = expected_scores(str(minilm_dir), 2000)
    check_scores(out, want, atol=1e-6)
    summary = summarize_spark(scored)
    assert summary.count == 2000
    assert abs(summary.R - float(np.mean(want[1], dtype=np.float64))) < 1e-6


def test_map_in_pandas_with_a_plan_gives_bert_scores_figures(spark, minilm_dir):
    """The user's own ``df.mapInPandas(fn, schema)``, rows spread over 3 partitions by a
    shuffle: bert_score 0.3.13's P/R/F with idf and floors of batches of 7 pairs."""
    case = floor_case("mismatched_idf_L4_b7")
    df = _frame(spark, case["cands"], as_lists(case["refs"]), 3, with_row=True)
    model = str(minilm_dir)
    plan = plan_spark(df, "hyp", "ref", "row", batch_size=7, idf=True, model_type=model)
    fn = map_in_pandas(
        "hyp",
        "ref",
        index_col="row",
        plan=plan,
        batch_size=7,
        model_type=model,
        num_layers=4,
        idf=True,
    )
    out = df.mapInPandas(fn, score_schema(df.schema)).toPandas()
    check_scores(out, [case["expected"][c] for c in "PRF"], atol=1e-5)


def test_score_spark_multi_reference_figures(spark, minilm_dir):
    case = floor_case("mismatched_multi_ref_L6_b7")
    df = _frame(spark, case["cands"], as_lists(case["refs"]), 4, with_row=True)
    out = score_spark(
        df, "hyp", "ref", index_col="row", model_type=str(minilm_dir), **case["kwargs"]
    ).toPandas()
    check_scores(out, [case["expected"][c] for c in "PRF"], atol=1e-5)


def test_long_texts_and_token_options_equal_score(spark):
    """long_texts="window", exclude_punctuation, beta, idf and floors of batches of 7."""
    from rust_bertscore import score

    cands, refs = long_text_rows()
    df = _frame(spark, cands, refs, 3, with_row=True)
    out = score_spark(df, "hyp", "ref", index_col="row", batch_size=7, **LONG_TEXT_OPTIONS)
    check_scores(out.toPandas(), score(cands, refs, batch_size=7, **LONG_TEXT_OPTIONS), atol=1e-6)


def test_malformed_row_and_bad_columns(spark, minilm_dir):
    cands, refs = shuffled_rows(30, seed=4)
    cands[17] = None
    df = _frame(spark, cands, refs, 2, with_row=True)
    with pytest.raises(Exception, match="row 17: column 'hyp' holds a missing value"):
        score_spark(df, "hyp", "ref", index_col="row", model_type=str(minilm_dir))
    with pytest.raises(ValueError, match=r"no reference column 'refs'.*\['hyp', 'ref', 'row'\]"):
        score_spark(df, "hyp", "refs")


def test_score_spark_with_a_store(spark, minilm_dir, tmp_path):
    """Spark's Python workers share a store on one machine; a second run reads from it."""
    from rust_bertscore import score
    from rust_bertscore.distributed.plan import load_tokenizer
    from rust_bertscore.store import EmbeddingStore

    cands, refs = shuffled_rows(100, seed=8)
    want = score(cands, refs, model_type=str(minilm_dir), batch_independent=True)
    for _ in range(2):
        df = _frame(spark, cands, refs, partitions=3, with_row=True)
        out = score_spark(
            df,
            "hyp",
            "ref",
            model_type=str(minilm_dir),
            batch_independent=True,
            store=str(tmp_path),
        ).toPandas()
        check_scores(out, want, atol=1e-6)
    texts = set(cands) | {r for g in refs for r in ([g] if isinstance(g, str) else g)}
    distinct = {tuple(ids) for ids in load_tokenizer(str(minilm_dir)).encode(sorted(texts))}
    assert EmbeddingStore(tmp_path).info().entries == len(distinct)


def test_bad_rows_kept_with_null_scores(spark, minilm_dir):
    """on_error="null": null P/R/F (Spark nulls) and a string error column for the bad rows,
    score()'s numbers on the good rows alone for the others (idf, batches of 7)."""
    cands, refs, good = bad_rows()
    df = _frame(spark, cands, refs, 3, with_row=True)
    scored = score_spark(
        df,
        "hyp",
        "ref",
        index_col="row",
        model_type=str(minilm_dir),
        on_error="null",
        **BAD_ROW_OPTIONS,
    ).cache()
    assert dict(scored.dtypes)["error"] == "string" and dict(scored.dtypes)["F"] == "float"
    assert scored.filter(scored["F"].isNull()).count() == len(cands) - len(good)
    check_bad_rows(scored.toPandas(), cands, refs, good, str(minilm_dir))
    assert summarize_spark(scored).count == len(good)
