//! The package's exception classes, error mapping and the one GIL-release helper every entry
//! point goes through.
//!
//! As polars declares its exceptions in its binding, the classes live here and
//! `rust_bertscore.errors` re-exports them: `RustBertScoreError` is the base of every error the
//! package raises; `KernelError` (also a `ValueError`) is bad input to a kernel and
//! `ThreadPoolError` (also a `RuntimeError`) a thread pool that could not start;
//! `KernelTypeError` (also a `TypeError`) an argument of the wrong type or dtype.

use bertscore_core::KernelError as CoreKernelError;
use pyo3::exceptions::{PyException, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

pyo3::create_exception!(
    rust_bertscore,
    RustBertScoreError,
    PyException,
    "Base class of every error rust-bertscore raises."
);

static KERNEL_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static THREAD_POOL_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static KERNEL_TYPE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

const KERNEL_DOC: &str = "Bad input to a kernel: the message names the pair, text, index or \
argument at fault and the problem. Also a ValueError.";
const KERNEL_TYPE_DOC: &str = "An argument of a kernel of the wrong type or dtype (a list where \
an array is expected, an integer array where floats are): the message names it. Also a TypeError.";
const THREAD_POOL_DOC: &str = "The kernel's thread pool could not be started. Also a RuntimeError.";

/// A class deriving from `RustBertScoreError` and the built-in `other` (a Python class with two
/// bases, which `create_exception!` cannot declare).
fn subclass(
    py: Python<'_>,
    name: &str,
    doc: &str,
    other: Bound<'_, PyType>,
) -> PyResult<Py<PyType>> {
    let bases = PyTuple::new(py, [py.get_type::<RustBertScoreError>(), other])?;
    let namespace = PyDict::new(py);
    namespace.set_item("__module__", "rust_bertscore")?;
    namespace.set_item("__doc__", doc)?;
    let class = py
        .get_type::<PyType>()
        .call1((name, bases, namespace))?
        .cast_into::<PyType>()?;
    Ok(class.unbind())
}

fn kernel_error_type(py: Python<'_>) -> PyResult<&Py<PyType>> {
    KERNEL_ERROR.get_or_try_init(py, || {
        subclass(py, "KernelError", KERNEL_DOC, py.get_type::<PyValueError>())
    })
}

fn kernel_type_error_type(py: Python<'_>) -> PyResult<&Py<PyType>> {
    KERNEL_TYPE_ERROR.get_or_try_init(py, || {
        subclass(
            py,
            "KernelTypeError",
            KERNEL_TYPE_DOC,
            py.get_type::<PyTypeError>(),
        )
    })
}

fn thread_pool_error_type(py: Python<'_>) -> PyResult<&Py<PyType>> {
    THREAD_POOL_ERROR.get_or_try_init(py, || {
        subclass(
            py,
            "ThreadPoolError",
            THREAD_POOL_DOC,
            py.get_type::<PyRuntimeError>(),
        )
    })
}

/// Adds the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RustBertScoreError", py.get_type::<RustBertScoreError>())?;
    m.add("KernelError", kernel_error_type(py)?.bind(py))?;
    m.add("ThreadPoolError", thread_pool_error_type(py)?.bind(py))?;
    m.add("KernelTypeError", kernel_type_error_type(py)?.bind(py))?;
    Ok(())
}

fn raise(class: fn(Python<'_>) -> PyResult<&Py<PyType>>, message: String) -> PyErr {
    Python::attach(|py| match class(py) {
        Ok(class) => PyErr::from_type(class.bind(py).clone(), message),
        Err(e) => e,
    })
}

/// A `KernelError` (a `ValueError`) with `message`: bad input found by the binding itself.
pub(crate) fn invalid(message: impl Into<String>) -> PyErr {
    raise(kernel_error_type, message.into())
}

/// A `KernelTypeError` (a `TypeError`) with `message`: an argument of the wrong type or dtype.
pub(crate) fn wrong_type(message: impl Into<String>) -> PyErr {
    raise(kernel_type_error_type, message.into())
}

/// A core error on its way to Python.
pub(crate) struct CoreError(pub(crate) CoreKernelError);

impl From<CoreError> for PyErr {
    fn from(CoreError(e): CoreError) -> Self {
        use CoreKernelError as K;
        let message = e.to_string();
        // Every variant by name: a new one must be given its Python class here.
        match e {
            K::ThreadPool(_) => raise(thread_pool_error_type, message),
            K::LengthMismatch { .. }
            | K::DimMismatch { .. }
            | K::NonFiniteEmbedding { .. }
            | K::WeightLength { .. }
            | K::InvalidWeight { .. }
            | K::InvalidOffsets { .. }
            | K::IndexOutOfRange { .. }
            | K::TextIndexOutOfRange { .. }
            | K::EmptyGroup { .. }
            | K::InvalidBaseline(_)
            | K::InvalidNumDocs { .. }
            | K::InvalidArgument { .. }
            | K::InvalidThreads(_)
            | K::InvalidThreadsEnv { .. }
            | K::TooFewSegments { .. }
            | K::NonFiniteScore { .. }
            | K::InvalidParameter { .. } => invalid(message),
        }
    }
}

/// Runs `work` with the GIL released (`py.detach`) and maps its error to a Python exception.
///
/// Every entry point of the module does its heavy work through this: inputs are borrowed as
/// views before, outputs converted to NumPy arrays after, with the GIL held only for those.
pub(crate) fn detach<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> Result<T, CoreKernelError> + Send,
{
    py.detach(work).map_err(|e| CoreError(e).into())
}

/// Converts an optional thread count from Python, rejecting values below 1.
pub(crate) fn threads_arg(num_threads: Option<i64>) -> PyResult<Option<usize>> {
    num_threads
        .map(|n| {
            usize::try_from(n)
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| invalid(format!("num_threads must be at least 1, got {n}")))
        })
        .transpose()
}

/// A server body the parser refuses, as `ValueError(status, message, field, index)`: not a
/// kernel error, but an answer the server's Python layer turns into its HTTP error
/// (`integrations.server.requests.RequestError`).
pub(crate) fn body_error(e: bertscore_core::request::BodyError) -> PyErr {
    PyValueError::new_err((e.status, e.message, e.field, e.index))
}
