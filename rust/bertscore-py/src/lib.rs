//! `rust_bertscore._core`: the PyO3 binding of `bertscore-core`.
//!
//! Each function borrows its NumPy inputs as views (float32 without a copy), releases the GIL
//! through [`errors::detach`] for the work, and returns NumPy arrays. Core errors become
//! `KernelError`, a `ValueError` (a thread-pool failure `ThreadPoolError`, a `RuntimeError`),
//! both subclasses of the package's `RustBertScoreError` (see [`errors`]); wrong dtypes are
//! `TypeError`. The
//! signatures and docs seen from Python are in `python/rust_bertscore/_core.pyi`.

mod arrays;
mod errors;
mod stats;

use bertscore_core as core;
use bertscore_core::{EmbeddedText, Ragged, ScoreOptions};
use ndarray::{Array, ArrayView1, ArrayView2, Dimension, Ix1, Ix2, IxDyn};
use numpy::{IntoPyArray, PyArray, PyArray1, PyArrayDyn, PyUntypedArrayMethods};

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{flag_array, float_array, index_array, items, FloatArray, PyTexts};
use crate::errors::{detach, threads_arg};

/// `(P, R, F)` as NumPy arrays: 1-D (one score per pair) or 2-D (candidates x references).
type Triple<'py, D> = (
    Bound<'py, PyArray<f32, D>>,
    Bound<'py, PyArray<f32, D>>,
    Bound<'py, PyArray<f32, D>>,
);

type IdfTable<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f64>>);

/// Hands precision, recall and F1 (of `Scores` or of a `ScoreMatrix`) to NumPy without a copy.
fn prf_to_py<D: Dimension>(py: Python<'_>, [p, r, f]: [Array<f32, D>; 3]) -> Triple<'_, D> {
    (p.into_pyarray(py), r.into_pyarray(py), f.into_pyarray(py))
}

/// Runs `work` on the candidates' and the references' texts with the GIL released; float64
/// inputs are converted to float32 inside the GIL-free closure.
fn detach_texts<T: Send>(
    py: Python<'_>,
    cands: &PyTexts<'_>,
    refs: &PyTexts<'_>,
    work: impl FnOnce(&[EmbeddedText<'_>], &[EmbeddedText<'_>]) -> core::Result<T> + Send,
) -> PyResult<T> {
    let (cv, rv) = (cands.views(), refs.views());
    detach(py, move || {
        let (c, r) = (cv.into_f32(), rv.into_f32());
        work(&c.texts(), &r.texts())
    })
}

/// `num_docs` from Python as a count, rejecting negative values.
fn num_docs_arg(num_docs: i64) -> PyResult<usize> {
    usize::try_from(num_docs)
        .map_err(|_| crate::errors::invalid(format!("num_docs must be >= 0, got {num_docs}")))
}

fn options(normalize: bool, num_threads: Option<i64>) -> PyResult<ScoreOptions> {
    Ok(ScoreOptions {
        normalize,
        num_threads: threads_arg(num_threads)?,
    })
}

/// One-to-one scores of `cands[k]` against `refs[k]`.
#[pyfunction]
#[pyo3(signature = (cands, refs, cand_weights=None, ref_weights=None, *, normalize=true, num_threads=None))]
fn score_embeddings<'py>(
    py: Python<'py>,
    cands: &Bound<'py, PyAny>,
    refs: &Bound<'py, PyAny>,
    cand_weights: Option<&Bound<'py, PyAny>>,
    ref_weights: Option<&Bound<'py, PyAny>>,
    normalize: bool,
    num_threads: Option<i64>,
) -> PyResult<Triple<'py, Ix1>> {
    let opts = options(normalize, num_threads)?;
    let (c, r) = (items(cands, "cands")?, items(refs, "refs")?);
    if c.len() != r.len() {
        return Err(crate::errors::invalid(format!(
            "cands and refs must have the same length, got {} and {}",
            c.len(),
            r.len()
        )));
    }
    let c = PyTexts::extract(&c, cand_weights, "cand_weights", &|k| {
        format!("pair {k} (candidate)")
    })?;
    let r = PyTexts::extract(&r, ref_weights, "ref_weights", &|k| {
        format!("pair {k} (reference)")
    })?;
    let s = detach_texts(py, &c, &r, move |c, r| core::score_pairs(c, r, &opts))?;
    Ok(prf_to_py(py, [s.precision, s.recall, s.f1]))
}

/// Every candidate against every reference.
#[pyfunction]
#[pyo3(signature = (cands, refs, cand_weights=None, ref_weights=None, *, normalize=true, num_threads=None))]
fn pairwise_embeddings<'py>(
    py: Python<'py>,
    cands: &Bound<'py, PyAny>,
    refs: &Bound<'py, PyAny>,
    cand_weights: Option<&Bound<'py, PyAny>>,
    ref_weights: Option<&Bound<'py, PyAny>>,
    normalize: bool,
    num_threads: Option<i64>,
) -> PyResult<Triple<'py, Ix2>> {
    let opts = options(normalize, num_threads)?;
    let c = PyTexts::extract(
        &items(cands, "cands")?,
        cand_weights,
        "cand_weights",
        &|i| format!("candidate {i}"),
    )?;
    let r = PyTexts::extract(&items(refs, "refs")?, ref_weights, "ref_weights", &|j| {
        format!("reference {j}")
    })?;
    let m = detach_texts(py, &c, &r, move |c, r| core::score_all_pairs(c, r, &opts))?;
    Ok(prf_to_py(py, [m.precision, m.recall, m.f1]))
}

/// The ragged inputs shared by `score_ragged` and `pairwise_ragged`.
struct RaggedArgs<'py> {
    data: FloatArray<'py, Ix2>,
    offsets: numpy::PyReadonlyArray1<'py, i64>,
    weights: Option<FloatArray<'py, Ix1>>,
}

impl<'py> RaggedArgs<'py> {
    fn extract(
        data: &Bound<'py, PyAny>,
        offsets: &Bound<'py, PyAny>,
        weights: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Self> {
        Ok(Self {
            data: float_array(data, &|| "data".to_owned())?,
            offsets: index_array(offsets, "offsets")?,
            weights: weights
                .filter(|w| !w.is_none())
                .map(|w| float_array(w, &|| "weights".to_owned()))
                .transpose()?,
        })
    }

    /// Runs `work` on the batch with the GIL released: float64 inputs are converted, the
    /// offsets checked and the [`Ragged`] batch built inside the GIL-free closure.
    fn detach_with<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&Ragged<'_>) -> core::Result<T> + Send,
    ) -> PyResult<T> {
        let (data, offsets, weights) = (
            self.data.view(),
            self.offsets.as_array(),
            self.weights.as_ref().map(FloatArray::view),
        );
        detach(py, move || {
            let (data, weights) = (data.into_f32(), weights.map(|w| w.into_f32()));
            let offsets = core::offsets_from_i64("offsets", offsets)?;
            let batch = Ragged::new(data.view(), offsets, weights.as_ref().map(|w| w.view()))?;
            work(&batch)
        })
    }
}

/// Per-pair padding floors from two optional flag arrays (absent: no floor on that side).
fn floors_arg(
    floor_precision: Option<&Bound<'_, PyAny>>,
    floor_recall: Option<&Bound<'_, PyAny>>,
    n_pairs: usize,
) -> PyResult<Vec<core::PadFloor>> {
    let flags = |obj: Option<&Bound<'_, PyAny>>, what: &str| -> PyResult<Vec<bool>> {
        match obj.filter(|o| !o.is_none()) {
            None => Ok(vec![false; n_pairs]),
            Some(o) => {
                let v = flag_array(o, what)?;
                if v.len() == n_pairs {
                    Ok(v)
                } else {
                    Err(crate::errors::invalid(format!(
                        "{what} must have one flag per pair ({n_pairs}), got {}",
                        v.len()
                    )))
                }
            }
        }
    };
    if floor_precision.is_none_or(|o| o.is_none()) && floor_recall.is_none_or(|o| o.is_none()) {
        return Ok(Vec::new());
    }
    let (p, r) = (
        flags(floor_precision, "floor_precision")?,
        flags(floor_recall, "floor_recall")?,
    );
    Ok(p.into_iter()
        .zip(r)
        .map(|(precision, recall)| core::PadFloor { precision, recall })
        .collect())
}

/// Scores pair k = (text pair_cand[k], text pair_ref[k]) of a ragged batch, with bert_score's
/// padding floor on the sides flagged in `floor_precision` / `floor_recall`.
#[pyfunction]
#[pyo3(signature = (data, offsets, weights, pair_cand, pair_ref, *, normalize=true, num_threads=None, floor_precision=None, floor_recall=None))]
#[allow(clippy::too_many_arguments)]
fn score_ragged<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    offsets: &Bound<'py, PyAny>,
    weights: Option<&Bound<'py, PyAny>>,
    pair_cand: &Bound<'py, PyAny>,
    pair_ref: &Bound<'py, PyAny>,
    normalize: bool,
    num_threads: Option<i64>,
    floor_precision: Option<&Bound<'py, PyAny>>,
    floor_recall: Option<&Bound<'py, PyAny>>,
) -> PyResult<Triple<'py, Ix1>> {
    let opts = options(normalize, num_threads)?;
    let args = RaggedArgs::extract(data, offsets, weights)?;
    let (pc, pr) = (
        index_array(pair_cand, "pair_cand")?,
        index_array(pair_ref, "pair_ref")?,
    );
    let floors = floors_arg(floor_precision, floor_recall, pc.len())?;
    let (pc, pr) = (pc.as_array(), pr.as_array());
    let s = args.detach_with(py, move |batch| {
        let pairs = core::pair_indices(pc, pr, batch.len())?;
        core::score_indexed_floored(&batch.texts(), &pairs, &floors, &opts)
    })?;
    Ok(prf_to_py(py, [s.precision, s.recall, s.f1]))
}

type FlagPair<'py> = (Bound<'py, PyArray1<bool>>, Bound<'py, PyArray1<bool>>);

/// bert_score's padding floor of every pair scored in consecutive batches of `batch_size`:
/// (floor_precision, floor_recall) bool arrays from the pairs' token counts.
#[pyfunction]
fn pad_floor_flags<'py>(
    py: Python<'py>,
    cand_lengths: &Bound<'py, PyAny>,
    ref_lengths: &Bound<'py, PyAny>,
    batch_size: i64,
) -> PyResult<FlagPair<'py>> {
    let lengths = |obj: &Bound<'py, PyAny>, what: &'static str| -> PyResult<Vec<usize>> {
        let arr = index_array(obj, what)?;
        Ok(core::offsets_from_i64(what, arr.as_array()).map_err(errors::CoreError)?)
    };
    let (c, r) = (
        lengths(cand_lengths, "cand_lengths")?,
        lengths(ref_lengths, "ref_lengths")?,
    );
    let batch = usize::try_from(batch_size).map_err(|_| {
        crate::errors::invalid(format!("batch_size must be at least 1, got {batch_size}"))
    })?;
    let floors = detach(py, move || core::pad_floors(&c, &r, batch))?;
    let (p, r): (Vec<bool>, Vec<bool>) = floors.iter().map(|f| (f.precision, f.recall)).unzip();
    Ok((p.into_pyarray(py), r.into_pyarray(py)))
}

/// bert_score's padding floor of pairs at flattened `positions` of a corpus scored in pieces,
/// from each batch's longest candidate and reference (a first pass): the streaming command line
/// and the distributed engines. Equal to `pad_floor_flags` of the whole corpus at `positions`.
#[pyfunction]
fn pad_floor_flags_at<'py>(
    py: Python<'py>,
    positions: &Bound<'py, PyAny>,
    cand_lengths: &Bound<'py, PyAny>,
    ref_lengths: &Bound<'py, PyAny>,
    longest_cand: &Bound<'py, PyAny>,
    longest_ref: &Bound<'py, PyAny>,
    batch_size: i64,
) -> PyResult<FlagPair<'py>> {
    let counts = |obj: &Bound<'py, PyAny>, what: &'static str| -> PyResult<Vec<usize>> {
        let arr = index_array(obj, what)?;
        Ok(core::offsets_from_i64(what, arr.as_array()).map_err(errors::CoreError)?)
    };
    let (at, c, r) = (
        counts(positions, "positions")?,
        counts(cand_lengths, "cand_lengths")?,
        counts(ref_lengths, "ref_lengths")?,
    );
    let (lc, lr) = (
        counts(longest_cand, "longest_cand")?,
        counts(longest_ref, "longest_ref")?,
    );
    let batch = usize::try_from(batch_size).map_err(|_| {
        crate::errors::invalid(format!("batch_size must be at least 1, got {batch_size}"))
    })?;
    let floors = detach(py, move || {
        core::pad_floors_at(&at, &c, &r, &lc, &lr, batch)
    })?;
    let (p, r): (Vec<bool>, Vec<bool>) = floors.iter().map(|f| (f.precision, f.recall)).unzip();
    Ok((p.into_pyarray(py), r.into_pyarray(py)))
}

/// Every text of `cands` against every text of `refs`, all texts of one ragged batch.
#[pyfunction]
#[pyo3(signature = (data, offsets, weights, cands, refs, *, normalize=true, num_threads=None))]
#[allow(clippy::too_many_arguments)]
fn pairwise_ragged<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    offsets: &Bound<'py, PyAny>,
    weights: Option<&Bound<'py, PyAny>>,
    cands: &Bound<'py, PyAny>,
    refs: &Bound<'py, PyAny>,
    normalize: bool,
    num_threads: Option<i64>,
) -> PyResult<Triple<'py, Ix2>> {
    let opts = options(normalize, num_threads)?;
    let args = RaggedArgs::extract(data, offsets, weights)?;
    let (ci, ri) = (index_array(cands, "cands")?, index_array(refs, "refs")?);
    let (ci, ri) = (ci.as_array(), ri.as_array());
    let m = args.detach_with(py, move |batch| {
        let (c, r) = (batch.select("cands", ci)?, batch.select("refs", ri)?);
        core::score_all_pairs(&c, &r, &opts)
    })?;
    Ok(prf_to_py(py, [m.precision, m.recall, m.f1]))
}

/// P, R and F each maxed over consecutive groups.
#[pyfunction]
fn multi_ref_max<'py>(
    py: Python<'py>,
    precision: &Bound<'py, PyAny>,
    recall: &Bound<'py, PyAny>,
    f1: &Bound<'py, PyAny>,
    group_offsets: &Bound<'py, PyAny>,
) -> PyResult<Triple<'py, Ix1>> {
    let p = float_array::<Ix1>(precision, &|| "precision".to_owned())?;
    let r = float_array::<Ix1>(recall, &|| "recall".to_owned())?;
    let f = float_array::<Ix1>(f1, &|| "f1".to_owned())?;
    let g = index_array(group_offsets, "group_offsets")?;
    let (pv, rv, fv, gv) = (p.view(), r.view(), f.view(), g.as_array());
    let s = detach(py, move || {
        let (p, r, f) = (pv.into_f32(), rv.into_f32(), fv.into_f32());
        let offsets = core::offsets_from_i64("group_offsets", gv)?;
        core::multi_ref_max(p.view(), r.view(), f.view(), &offsets)
    })?;
    Ok(prf_to_py(py, [s.precision, s.recall, s.f1]))
}

/// `(x - baseline) / (1 - baseline)`.
#[pyfunction]
fn rescale<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    baseline: f64,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let x = float_array::<IxDyn>(x, &|| "x".to_owned())?;
    let xv = x.view();
    let y = detach(py, move || core::rescale(xv.into_f32().view(), baseline))?;
    Ok(y.into_pyarray(py))
}

/// A 1-D or 2-D float array, as the vector functions take.
fn vector_or_rows<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<FloatArray<'py, IxDyn>> {
    let a = float_array::<IxDyn>(obj, &|| what.to_owned())?;
    let ndim = match &a {
        FloatArray::F32(a) => a.ndim(),
        FloatArray::F64(a) => a.ndim(),
    };
    if ndim == 1 || ndim == 2 {
        Ok(a)
    } else {
        Err(crate::errors::invalid(format!(
            "{what} must be a 1-D vector or a 2-D array of rows, got {ndim}-D"
        )))
    }
}

/// Result of a vector function: a float for a vector, an array for rows.
enum Reduced {
    Scalar(f32),
    Rows(ndarray::Array1<f32>),
}

impl Reduced {
    fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        match self {
            Reduced::Scalar(x) => Ok(f64::from(x).into_pyobject(py)?.into_any()),
            Reduced::Rows(a) => Ok(a.into_pyarray(py).into_any()),
        }
    }
}

fn as_1d(a: ndarray::ArrayViewD<'_, f32>) -> Option<ArrayView1<'_, f32>> {
    a.into_dimensionality::<Ix1>().ok()
}

fn as_2d(a: ndarray::ArrayViewD<'_, f32>) -> Option<ArrayView2<'_, f32>> {
    a.into_dimensionality::<Ix2>().ok()
}

/// Reads the argument `a` (see [`vector_or_rows`]) and, with the GIL released, runs `vector`
/// on it if it is 1-D or `rows` if it is 2-D (float64 converted to float32 first).
fn detach_vector_or_rows<T: Send>(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    vector: impl FnOnce(ArrayView1<'_, f32>) -> T + Send,
    rows: impl FnOnce(ArrayView2<'_, f32>) -> T + Send,
) -> PyResult<T> {
    let a = vector_or_rows(a, "a")?;
    let av = a.view();
    detach(py, move || {
        let a = av.into_f32();
        let v = a.view();
        match (as_1d(v.view()), as_2d(v.view())) {
            (Some(x), _) => Ok(vector(x)),
            (_, Some(x)) => Ok(rows(x)),
            // vector_or_rows has let through only 1-D and 2-D arrays.
            _ => Err(core::KernelError::InvalidArgument {
                what: "a",
                problem: format!(
                    "must be a 1-D vector or a 2-D array of rows, got {}-D",
                    v.ndim()
                ),
            }),
        }
    })
}

/// Euclidean norm of a vector (float) or of each row (array).
#[pyfunction]
fn l2_norm<'py>(py: Python<'py>, a: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    detach_vector_or_rows(
        py,
        a,
        |x| Reduced::Scalar(core::l2_norm(x)),
        |x| Reduced::Rows(core::l2_norm_rows(x)),
    )?
    .into_py(py)
}

/// A vector, or each row, divided by its norm (zero vectors unchanged).
#[pyfunction]
fn normalize<'py>(py: Python<'py>, a: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let out = detach_vector_or_rows(
        py,
        a,
        |x| core::normalize(x).into_dyn(),
        |x| core::normalize_rows(x).into_dyn(),
    )?;
    Ok(out.into_pyarray(py))
}

/// Dot product of two vectors (float), or row-wise of two 2-D arrays (array).
#[pyfunction]
fn dot<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (a, b) = (vector_or_rows(a, "a")?, vector_or_rows(b, "b")?);
    let (av, bv) = (a.view(), b.view());
    let out = detach(py, move || {
        let (a, b) = (av.into_f32(), bv.into_f32());
        let (a, b) = (a.view(), b.view());
        match (
            as_1d(a.view()),
            as_1d(b.view()),
            as_2d(a.view()),
            as_2d(b.view()),
        ) {
            (Some(x), Some(y), _, _) => core::dot(x, y).map(Reduced::Scalar),
            (_, _, Some(x), Some(y)) => core::dot_rows(x, y).map(Reduced::Rows),
            _ => Err(core::KernelError::LengthMismatch {
                what: "the numbers of dimensions of a and b (both 1-D or both 2-D)",
                left: a.ndim(),
                right: b.ndim(),
            }),
        }
    })?;
    out.into_py(py)
}

/// One document's token ids as int64.
fn doc_ids(obj: &Bound<'_, PyAny>, d: usize) -> PyResult<Vec<i64>> {
    if obj.cast::<numpy::PyUntypedArray>().is_ok() {
        return Ok(index_array(obj, &format!("docs[{d}]"))?.as_array().to_vec());
    }
    obj.extract::<Vec<i64>>().map_err(|_| {
        crate::errors::wrong_type(format!(
            "docs[{d}] must be a sequence of int token ids or a 1-D integer array"
        ))
    })
}

/// Reads the documents and computes their IDF weights with the GIL released.
fn compute_idf(
    py: Python<'_>,
    docs: &Bound<'_, PyAny>,
    num_docs: Option<i64>,
    num_threads: Option<i64>,
) -> PyResult<core::Idf<i64>> {
    let threads = threads_arg(num_threads)?;
    let num_docs = num_docs.map(num_docs_arg).transpose()?;
    let docs: Vec<Vec<i64>> = items(docs, "docs")?
        .iter()
        .enumerate()
        .map(|(d, doc)| doc_ids(doc, d))
        .collect::<PyResult<_>>()?;
    detach(py, move || {
        let views: Vec<&[i64]> = docs.iter().map(Vec::as_slice).collect();
        core::idf_weights(&views, num_docs, threads)
    })
}

/// IDF weights `{id: ln((M + 1) / (df + 1))}` over token-id documents.
#[pyfunction]
#[pyo3(signature = (docs, num_docs=None, *, num_threads=None))]
fn idf_weights<'py>(
    py: Python<'py>,
    docs: &Bound<'py, PyAny>,
    num_docs: Option<i64>,
    num_threads: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let idf = compute_idf(py, docs, num_docs, num_threads)?;
    let out = PyDict::new(py);
    for (id, w) in idf.weights {
        out.set_item(id, w)?;
    }
    Ok(out)
}

/// The same IDF weights as two arrays: token ids (int64, ascending) and their weights (float64).
#[pyfunction]
#[pyo3(signature = (docs, num_docs=None, *, num_threads=None))]
fn idf_table<'py>(
    py: Python<'py>,
    docs: &Bound<'py, PyAny>,
    num_docs: Option<i64>,
    num_threads: Option<i64>,
) -> PyResult<IdfTable<'py>> {
    let idf = compute_idf(py, docs, num_docs, num_threads)?;
    let (ids, values) = detach(py, move || {
        let mut entries: Vec<(i64, f64)> = idf.weights.into_iter().collect();
        entries.sort_unstable_by_key(|&(id, _)| id);
        Ok(entries.into_iter().unzip::<_, _, Vec<i64>, Vec<f64>>())
    })?;
    Ok((ids.into_pyarray(py), values.into_pyarray(py)))
}

/// IDF of a token seen in none of `num_docs` documents: `ln(num_docs + 1)`.
#[pyfunction]
fn idf_default(num_docs: i64) -> PyResult<f64> {
    num_docs_arg(num_docs).map(core::idf_default)
}

/// The thread count the user set (set_num_threads, else RUST_BERTSCORE_NUM_THREADS), or None.
#[pyfunction]
fn requested_num_threads(py: Python<'_>) -> PyResult<Option<usize>> {
    detach(py, core::requested_num_threads)
}

/// The instruction set of the kernels in this process: "avx512", "avx2" or "portable".
#[pyfunction]
fn active_isa() -> &'static str {
    core::active_isa()
}

/// `ln((num_docs + 1) / (df + 1))` for each document frequency `df`.
#[pyfunction]
fn idf_from_frequencies<'py>(
    py: Python<'py>,
    df: &Bound<'py, PyAny>,
    num_docs: i64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let m = num_docs_arg(num_docs)?;
    let df = index_array(df, "df")?;
    let values = df
        .as_array()
        .iter()
        .enumerate()
        .map(|(i, &n)| match usize::try_from(n) {
            Ok(n) if n <= m => Ok(core::idf_value(n, m)),
            _ => Err(crate::errors::invalid(format!(
                "df[{i}] must be in 0..={m} (num_docs), got {n}"
            ))),
        })
        .collect::<PyResult<Vec<f64>>>()?;
    Ok(values.into_pyarray(py))
}

/// Sets the size of the shared thread pool.
#[pyfunction]
fn set_num_threads(py: Python<'_>, n: i64) -> PyResult<()> {
    let n = threads_arg(Some(n))?.unwrap_or(1);
    detach(py, move || core::set_num_threads(n))
}

/// Size of the shared thread pool.
#[pyfunction]
fn get_num_threads(py: Python<'_>) -> PyResult<usize> {
    detach(py, core::get_num_threads)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    // The package's one version: Cargo's (maturin gives the wheel the same one).
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(score_embeddings, m)?)?;
    m.add_function(wrap_pyfunction!(pairwise_embeddings, m)?)?;
    m.add_function(wrap_pyfunction!(score_ragged, m)?)?;
    m.add_function(wrap_pyfunction!(pairwise_ragged, m)?)?;
    m.add_function(wrap_pyfunction!(pad_floor_flags, m)?)?;
    m.add_function(wrap_pyfunction!(pad_floor_flags_at, m)?)?;
    m.add_function(wrap_pyfunction!(multi_ref_max, m)?)?;
    m.add_function(wrap_pyfunction!(rescale, m)?)?;
    m.add_function(wrap_pyfunction!(l2_norm, m)?)?;
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    m.add_function(wrap_pyfunction!(dot, m)?)?;
    m.add_function(wrap_pyfunction!(idf_weights, m)?)?;
    m.add_function(wrap_pyfunction!(idf_table, m)?)?;
    m.add_function(wrap_pyfunction!(idf_default, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(stats::bootstrap_ci, m)?)?;
    m.add_function(wrap_pyfunction!(stats::paired_bootstrap, m)?)?;
    m.add_function(wrap_pyfunction!(stats::paired_permutation, m)?)?;
    m.add("NUM_THREADS_ENV", core::NUM_THREADS_ENV)?;
    m.add_function(wrap_pyfunction!(requested_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(active_isa, m)?)?;
    m.add_function(wrap_pyfunction!(idf_from_frequencies, m)?)?;
    m.add("ISA_ENV", core::ISA_ENV)?;
    Ok(())
}
