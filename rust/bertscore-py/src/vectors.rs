//! The vector functions: `l2_norm`, `normalize` and `dot` on a vector or on each row of a
//! 2-D array (float32, or float64 converted), with the GIL released for the work.

use bertscore_core as core;
use ndarray::{ArrayView1, ArrayView2, Ix1, Ix2, IxDyn};
use numpy::{IntoPyArray, PyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::arrays::{float_array, FloatArray};
use crate::errors::detach;

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
pub(crate) fn l2_norm<'py>(py: Python<'py>, a: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
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
pub(crate) fn normalize<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
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
pub(crate) fn dot<'py>(
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
