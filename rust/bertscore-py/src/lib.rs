//! `rust_bertscore._core`: the PyO3 binding of `bertscore-core`.
//!
//! Each function borrows its NumPy inputs as views (float32 without a copy), releases the GIL
//! through [`errors::detach`] for the work, and returns NumPy arrays. Core errors become
//! `KernelError`, a `ValueError` (a thread-pool failure `ThreadPoolError`, a `RuntimeError`),
//! both subclasses of the package's `RustBertScoreError` (see [`errors`]); wrong dtypes are
//! `TypeError`. The signatures and docs seen from Python are in
//! `python/rust_bertscore/_core.pyi`.
//!
//! The scoring functions (one-to-one, pairwise, ragged, the padding floor, the multi-reference
//! max, rescaling) and the thread settings are here; [`vectors`] has `l2_norm`, `normalize`
//! and `dot`, [`idf`] the IDF weights, [`stats`] the significance tests, and [`arrays`] reads
//! the NumPy and sequence arguments.

mod arrays;
mod errors;
mod idf;
mod stats;
mod vectors;

use bertscore_core as core;
use bertscore_core::{EmbeddedText, Ragged, ScoreOptions};
use ndarray::{Array, Dimension, Ix1, Ix2, IxDyn};
use numpy::{IntoPyArray, PyArray, PyArray1, PyArrayDyn, PyUntypedArrayMethods};

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::arrays::{flag_array, float_array, index_array, items, FloatArray, PyTexts};
use crate::errors::{detach, threads_arg};

/// `(P, R, F)` as NumPy arrays: 1-D (one score per pair) or 2-D (candidates x references).
type Triple<'py, D> = (
    Bound<'py, PyArray<f32, D>>,
    Bound<'py, PyArray<f32, D>>,
    Bound<'py, PyArray<f32, D>>,
);

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

/// Six arrays: each candidate token's best reference token and cosine, their pair bounds, and
/// the same for the reference tokens.
type AlignArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<i64>>,
);

/// The token alignments of pair k = (text pair_cand[k], text pair_ref[k]) of a ragged batch:
/// every token's best match on the other side and its cosine, flattened with offsets.
#[pyfunction]
#[pyo3(signature = (data, offsets, pair_cand, pair_ref, keep=None, *, normalize=true, num_threads=None))]
#[allow(clippy::too_many_arguments)]
fn align_ragged<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    offsets: &Bound<'py, PyAny>,
    pair_cand: &Bound<'py, PyAny>,
    pair_ref: &Bound<'py, PyAny>,
    keep: Option<&Bound<'py, PyAny>>,
    normalize: bool,
    num_threads: Option<i64>,
) -> PyResult<AlignArrays<'py>> {
    let opts = options(normalize, num_threads)?;
    let args = RaggedArgs::extract(data, offsets, None)?;
    let (pc, pr) = (
        index_array(pair_cand, "pair_cand")?,
        index_array(pair_ref, "pair_ref")?,
    );
    let keep = keep
        .filter(|k| !k.is_none())
        .map(|k| flag_array(k, "keep"))
        .transpose()?;
    let (pc, pr) = (pc.as_array(), pr.as_array());
    let a = args.detach_with(py, move |batch| {
        let pairs = core::pair_indices(pc, pr, batch.len())?;
        let keep = keep.map(ndarray::Array1::from);
        core::align_indexed(batch, &pairs, keep.as_ref().map(|k| k.view()), &opts)
    })?;
    let bounds = |o: Vec<usize>| -> Vec<i64> {
        o.into_iter()
            .map(|x| i64::try_from(x).unwrap_or(i64::MAX))
            .collect()
    };
    Ok((
        a.cand_match.into_pyarray(py),
        a.cand_cosine.into_pyarray(py),
        bounds(a.cand_offsets).into_pyarray(py),
        a.ref_match.into_pyarray(py),
        a.ref_cosine.into_pyarray(py),
        bounds(a.ref_offsets).into_pyarray(py),
    ))
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

/// Parses a `POST /score` body with the GIL released (`bertscore_core::request`): `(cands,
/// refs)`, refs a list of str or of lists of str; `ValueError(status, message, field, index)`
/// for a body the server refuses.
#[pyfunction]
#[pyo3(signature = (body, max_pairs=None))]
fn parse_score_body<'py>(
    py: Python<'py>,
    body: &[u8],
    max_pairs: Option<usize>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let parsed = py.detach(|| core::request::parse_score_body(body, max_pairs));
    match parsed {
        Ok(parsed) => {
            let cands = PyList::new(py, parsed.cands)?;
            let refs = PyList::empty(py);
            for reference in parsed.refs {
                match reference {
                    core::request::Reference::One(text) => refs.append(text)?,
                    core::request::Reference::Many(texts) => {
                        refs.append(PyList::new(py, texts)?)?
                    }
                }
            }
            Ok((cands, refs))
        }
        Err(e) => Err(errors::body_error(e)),
    }
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
    m.add_function(wrap_pyfunction!(align_ragged, m)?)?;
    m.add_function(wrap_pyfunction!(pad_floor_flags, m)?)?;
    m.add_function(wrap_pyfunction!(pad_floor_flags_at, m)?)?;
    m.add_function(wrap_pyfunction!(multi_ref_max, m)?)?;
    m.add_function(wrap_pyfunction!(rescale, m)?)?;
    m.add_function(wrap_pyfunction!(vectors::l2_norm, m)?)?;
    m.add_function(wrap_pyfunction!(vectors::normalize, m)?)?;
    m.add_function(wrap_pyfunction!(vectors::dot, m)?)?;
    m.add_function(wrap_pyfunction!(idf::idf_weights, m)?)?;
    m.add_function(wrap_pyfunction!(idf::idf_table, m)?)?;
    m.add_function(wrap_pyfunction!(idf::idf_default, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(stats::bootstrap_ci, m)?)?;
    m.add_function(wrap_pyfunction!(stats::paired_bootstrap, m)?)?;
    m.add_function(wrap_pyfunction!(stats::paired_permutation, m)?)?;
    m.add("NUM_THREADS_ENV", core::NUM_THREADS_ENV)?;
    m.add_function(wrap_pyfunction!(requested_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(active_isa, m)?)?;
    m.add_function(wrap_pyfunction!(parse_score_body, m)?)?;
    m.add_function(wrap_pyfunction!(idf::idf_from_frequencies, m)?)?;
    m.add("ISA_ENV", core::ISA_ENV)?;
    Ok(())
}
