//! Error mapping and the one GIL-release helper every entry point goes through.

use bertscore_core::KernelError;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// A core error on its way to Python.
pub(crate) struct CoreError(pub(crate) KernelError);

impl From<CoreError> for PyErr {
    fn from(CoreError(e): CoreError) -> Self {
        match e {
            KernelError::ThreadPool(_) => PyRuntimeError::new_err(e.to_string()),
            // Every other variant is a bad argument; the message names the index and the problem.
            _ => PyValueError::new_err(e.to_string()),
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
    F: FnOnce() -> Result<T, KernelError> + Send,
{
    py.detach(work).map_err(|e| CoreError(e).into())
}

/// Converts an optional thread count from Python, rejecting values below 1.
pub(crate) fn threads_arg(num_threads: Option<i64>) -> PyResult<Option<usize>> {
    num_threads
        .map(|n| {
            usize::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| {
                PyValueError::new_err(format!("num_threads must be at least 1, got {n}"))
            })
        })
        .transpose()
}
