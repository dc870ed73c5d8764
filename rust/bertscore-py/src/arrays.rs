//! NumPy inputs as ndarray views: float32 borrowed as is (any strides, read-only allowed),
//! float64 converted to float32 (after the GIL is released); anything else is a TypeError, a
//! wrong number of dimensions a ValueError, both naming the argument.

use bertscore_core::EmbeddedText;
use ndarray::{ArrayView, CowArray, Dimension, Ix1, Ix2};
use numpy::prelude::*;
use numpy::{PyArray, PyArray1, PyReadonlyArray, PyReadonlyArray1, PyUntypedArray};
use pyo3::prelude::*;
use pyo3::types::PyModule;

/// A float32 or float64 NumPy array, borrowed read-only.
pub(crate) enum FloatArray<'py, D: Dimension> {
    F32(PyReadonlyArray<'py, f32, D>),
    F64(PyReadonlyArray<'py, f64, D>),
}

/// A view of a [`FloatArray`] that can cross into the GIL-free closure.
pub(crate) enum FloatView<'a, D: Dimension> {
    F32(ArrayView<'a, f32, D>),
    F64(ArrayView<'a, f64, D>),
}

impl<'py, D: Dimension> FloatArray<'py, D> {
    pub(crate) fn view(&self) -> FloatView<'_, D> {
        match self {
            FloatArray::F32(a) => FloatView::F32(a.as_array()),
            FloatArray::F64(a) => FloatView::F64(a.as_array()),
        }
    }
}

impl<'a, D: Dimension> FloatView<'a, D> {
    /// float32 as is (no copy), float64 rounded to float32.
    pub(crate) fn into_f32(self) -> CowArray<'a, f32, D> {
        match self {
            FloatView::F32(v) => CowArray::from(v),
            FloatView::F64(v) => CowArray::from(v.mapv(|x| x as f32)),
        }
    }
}

fn shape_of(a: &Bound<'_, PyUntypedArray>) -> String {
    let dims: Vec<String> = a.shape().iter().map(usize::to_string).collect();
    match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// Borrows `obj` as a float32/float64 array of dimension `D`; `what` names it in errors.
pub(crate) fn float_array<'py, D: Dimension>(
    obj: &Bound<'py, PyAny>,
    what: &dyn Fn() -> String,
) -> PyResult<FloatArray<'py, D>> {
    let borrow = |e: numpy::BorrowError| crate::errors::invalid(format!("{}: {e}", what()));
    if let Ok(a) = obj.cast::<PyArray<f32, D>>() {
        return Ok(FloatArray::F32(a.try_readonly().map_err(borrow)?));
    }
    if let Ok(a) = obj.cast::<PyArray<f64, D>>() {
        return Ok(FloatArray::F64(a.try_readonly().map_err(borrow)?));
    }
    let Ok(untyped) = obj.cast::<PyUntypedArray>() else {
        return Err(crate::errors::wrong_type(format!(
            "{}: expected a numpy.ndarray of float32 or float64, got {}",
            what(),
            type_name(obj)
        )));
    };
    let py = obj.py();
    let dtype = untyped.dtype();
    if !dtype.is_equiv_to(&numpy::dtype::<f32>(py)) && !dtype.is_equiv_to(&numpy::dtype::<f64>(py))
    {
        return Err(crate::errors::wrong_type(format!(
            "{}: dtype {dtype} is not supported; expected float32 or float64",
            what()
        )));
    }
    let expected = D::NDIM.map_or_else(String::new, |n| format!("{n}-D "));
    Err(crate::errors::invalid(format!(
        "{}: expected a {expected}array{}, got shape {}",
        what(),
        if D::NDIM == Some(2) {
            " (tokens x dim)"
        } else {
            ""
        },
        shape_of(untyped)
    )))
}

/// Borrows `obj` as a 1-D int64 array. Other integer arrays and sequences of ints are converted;
/// anything else is a TypeError naming `what`.
pub(crate) fn index_array<'py>(
    obj: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<PyReadonlyArray1<'py, i64>> {
    let py = obj.py();
    let arr = if obj.cast::<PyUntypedArray>().is_ok() {
        obj.clone()
    } else {
        PyModule::import(py, "numpy")?.call_method1("asarray", (obj,))?
    };
    let untyped = arr.cast::<PyUntypedArray>()?;
    if untyped.ndim() != 1 {
        return Err(crate::errors::invalid(format!(
            "{what} must be a 1-D integer array, got shape {}",
            shape_of(untyped)
        )));
    }
    let dtype = untyped.dtype();
    let arr = if dtype.is_equiv_to(&numpy::dtype::<i64>(py)) {
        arr
    } else if matches!(dtype.kind(), b'i' | b'u') || untyped.len() == 0 {
        arr.call_method1("astype", ("int64",))?
    } else {
        return Err(crate::errors::wrong_type(format!(
            "{what} must be an integer (int64) array, got dtype {dtype}"
        )));
    };
    let typed = arr.cast_into::<PyArray1<i64>>().map_err(PyErr::from)?;
    typed
        .try_readonly()
        .map_err(|e| crate::errors::invalid(format!("{what}: {e}")))
}

/// A 1-D array of flags (bool, or integers read as "non-zero"), copied into a `Vec<bool>`.
pub(crate) fn flag_array(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<bool>> {
    let py = obj.py();
    let arr = PyModule::import(py, "numpy")?.call_method1("asarray", (obj,))?;
    let untyped = arr.cast::<PyUntypedArray>()?;
    if untyped.ndim() != 1 {
        return Err(crate::errors::invalid(format!(
            "{what} must be a 1-D bool array, got shape {}",
            shape_of(untyped)
        )));
    }
    let kind = untyped.dtype().kind();
    if !matches!(kind, b'b' | b'i' | b'u') && untyped.len() != 0 {
        return Err(crate::errors::wrong_type(format!(
            "{what} must be a bool array, got dtype {}",
            untyped.dtype()
        )));
    }
    let typed = arr
        .call_method1("astype", ("bool",))?
        .cast_into::<PyArray1<bool>>()
        .map_err(PyErr::from)?;
    let flags = typed.readonly().as_array().to_vec();
    Ok(flags)
}

/// The items of a Python sequence (list, tuple, 3-D array, ...).
pub(crate) fn items<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let iter = obj.try_iter().map_err(|_| {
        crate::errors::wrong_type(format!(
            "{what} must be a sequence of arrays, got {}",
            type_name(obj)
        ))
    })?;
    iter.collect()
}

/// Texts from Python: one 2-D embedding array and optional 1-D weights each.
pub(crate) struct PyTexts<'py> {
    embeddings: Vec<FloatArray<'py, Ix2>>,
    weights: Vec<Option<FloatArray<'py, Ix1>>>,
}

/// Views of [`PyTexts`], sendable into the GIL-free closure.
pub(crate) struct TextViews<'a> {
    embeddings: Vec<FloatView<'a, Ix2>>,
    weights: Vec<Option<FloatView<'a, Ix1>>>,
}

/// float32 texts, borrowed or converted, from which [`EmbeddedText`]s are made.
pub(crate) struct F32Texts<'a> {
    embeddings: Vec<CowArray<'a, f32, Ix2>>,
    weights: Vec<Option<CowArray<'a, f32, Ix1>>>,
}

impl<'py> PyTexts<'py> {
    /// Reads `embeddings` (a sequence of 2-D arrays) and `weights` (None, or a sequence of the
    /// same length of 1-D arrays or None). `name(i)` names text `i` in errors.
    pub(crate) fn extract(
        embeddings: &[Bound<'py, PyAny>],
        weights: Option<&Bound<'py, PyAny>>,
        weights_name: &str,
        name: &dyn Fn(usize) -> String,
    ) -> PyResult<Self> {
        let n = embeddings.len();
        let weight_items = match weights {
            Some(w) if !w.is_none() => {
                let w = items(w, weights_name)?;
                if w.len() != n {
                    return Err(crate::errors::invalid(format!(
                        "{weights_name} must have one entry per text ({n}), got {}",
                        w.len()
                    )));
                }
                w.into_iter().map(Some).collect()
            }
            _ => vec![None; n],
        };
        let embeddings = embeddings
            .iter()
            .enumerate()
            .map(|(i, e)| float_array::<Ix2>(e, &|| name(i)))
            .collect::<PyResult<Vec<_>>>()?;
        let weights = weight_items
            .iter()
            .enumerate()
            .map(|(i, w)| match w {
                Some(w) if !w.is_none() => {
                    float_array::<Ix1>(w, &|| format!("{} weights", name(i))).map(Some)
                }
                _ => Ok(None),
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Self {
            embeddings,
            weights,
        })
    }

    pub(crate) fn views(&self) -> TextViews<'_> {
        TextViews {
            embeddings: self.embeddings.iter().map(FloatArray::view).collect(),
            weights: self
                .weights
                .iter()
                .map(|w| w.as_ref().map(FloatArray::view))
                .collect(),
        }
    }
}

impl<'a> TextViews<'a> {
    /// Converts float64 inputs; call inside the GIL-free closure.
    pub(crate) fn into_f32(self) -> F32Texts<'a> {
        F32Texts {
            embeddings: self
                .embeddings
                .into_iter()
                .map(FloatView::into_f32)
                .collect(),
            weights: self
                .weights
                .into_iter()
                .map(|w| w.map(FloatView::into_f32))
                .collect(),
        }
    }
}

impl F32Texts<'_> {
    pub(crate) fn texts(&self) -> Vec<EmbeddedText<'_>> {
        self.embeddings
            .iter()
            .zip(&self.weights)
            .map(|(e, w)| EmbeddedText::with_weights(e.view(), w.as_ref().map(|w| w.view())))
            .collect()
    }
}
