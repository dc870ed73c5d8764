//! IDF weights over token-id documents (`idf_weights`, `idf_table`, `idf_default`,
//! `idf_from_frequencies`): bert_score's `ln((M + 1) / (df + 1))`, counted with the GIL released.

use bertscore_core as core;
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{index_array, items};
use crate::errors::{detach, threads_arg};

type IdfTable<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f64>>);

/// `num_docs` from Python as a count, rejecting negative values.
fn num_docs_arg(num_docs: i64) -> PyResult<usize> {
    usize::try_from(num_docs)
        .map_err(|_| crate::errors::invalid(format!("num_docs must be >= 0, got {num_docs}")))
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
pub(crate) fn idf_weights<'py>(
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
pub(crate) fn idf_table<'py>(
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
pub(crate) fn idf_default(num_docs: i64) -> PyResult<f64> {
    num_docs_arg(num_docs).map(core::idf_default)
}

/// `ln((num_docs + 1) / (df + 1))` for each document frequency `df`.
#[pyfunction]
pub(crate) fn idf_from_frequencies<'py>(
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
