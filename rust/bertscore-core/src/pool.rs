//! The one rayon thread pool of the package, and the rule for when to use it.
//!
//! * The pool is built lazily, once, on the first call that is big enough to run in parallel.
//! * Its size is, in order of precedence: the last [`set_num_threads`] call, the environment
//!   variable `RUST_BERTSCORE_NUM_THREADS` (read when the pool is built), the number of CPUs
//!   this process may use. The setting is read in this module only; other pools of the program
//!   (the Python package's ONNX Runtime encoder) take it from [`requested_num_threads`].
//! * Calling [`set_num_threads`] after the pool exists with a different size builds a new pool
//!   once and swaps it in: later calls use the new pool, calls already running finish on the old
//!   one, which is dropped when they are done. The same size is a no-op. No call builds a pool of
//!   its own.
//! * A call's own `num_threads` limit (see [`ScoreOptions`](crate::ScoreOptions)) caps how many
//!   threads of the shared pool it occupies; `Some(1)` runs on the calling thread and never
//!   touches the pool.
//! * Calls whose work is below [`SERIAL_THRESHOLD`] multiply-adds run on the calling thread, so
//!   small calls pay no scheduling cost.

use std::env::VarError;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rayon::prelude::*;
use rayon::ThreadPool;

use crate::error::{KernelError, Result};

/// Environment variable that sizes the pool when [`set_num_threads`] was not called first.
pub const NUM_THREADS_ENV: &str = "RUST_BERTSCORE_NUM_THREADS";

/// The most threads the pool is built with, from [`set_num_threads`] or the environment: a
/// value past it (`RUST_BERTSCORE_NUM_THREADS=100000` asked the system for 100,000 threads and
/// their stacks, and the process died) is refused with the limit named.
pub const MAX_THREADS: usize = 1024;

/// Work (in multiply-adds, or value reads for memory-bound passes) below which a call runs
/// serially on the calling thread. About a millisecond of one core.
pub const SERIAL_THRESHOLD: u64 = 1 << 21;

struct PoolState {
    requested: Option<usize>,
    pool: Option<Arc<ThreadPool>>,
}

static STATE: Mutex<PoolState> = Mutex::new(PoolState {
    requested: None,
    pool: None,
});

fn state() -> MutexGuard<'static, PoolState> {
    // A panic while holding the lock cannot leave the state half-written: recover it.
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn parse_threads(value: &str) -> Result<Option<usize>> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    match value.parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(Some(n)),
        _ => Err(KernelError::InvalidThreadsEnv {
            var: NUM_THREADS_ENV,
            value: value.to_owned(),
        }),
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The size asked for: `requested` (a [`set_num_threads`] call), else [`NUM_THREADS_ENV`]'s
/// value, else `None`. The one place the environment variable is read.
fn asked(requested: Option<usize>) -> Result<Option<usize>> {
    if requested.is_some() {
        return Ok(requested);
    }
    match std::env::var(NUM_THREADS_ENV) {
        Ok(v) => parse_threads(&v),
        Err(VarError::NotPresent) => Ok(None),
        Err(VarError::NotUnicode(v)) => Err(KernelError::InvalidThreadsEnv {
            var: NUM_THREADS_ENV,
            value: v.to_string_lossy().into_owned(),
        }),
    }
}

fn resolve(requested: Option<usize>) -> Result<usize> {
    Ok(asked(requested)?.unwrap_or_else(default_threads))
}

fn build(n: usize) -> Result<Arc<ThreadPool>> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("bertscore-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| KernelError::ThreadPool(e.to_string()))
}

/// Sets the size of the shared pool. Before the pool exists this only records the size; after,
/// a different size replaces the pool once (see the module documentation).
///
/// # Errors
/// [`KernelError::InvalidThreads`] for 0 or more than [`MAX_THREADS`],
/// [`KernelError::ThreadPool`] if the threads cannot be started.
pub fn set_num_threads(n: usize) -> Result<()> {
    if n == 0 || n > MAX_THREADS {
        return Err(KernelError::InvalidThreads(n));
    }
    let mut st = state();
    if st
        .pool
        .as_ref()
        .is_some_and(|p| p.current_num_threads() != n)
    {
        st.pool = Some(build(n)?);
    }
    st.requested = Some(n);
    Ok(())
}

/// Size of the shared pool: the size it has if built, else the size it will be built with.
///
/// # Errors
/// [`KernelError::InvalidThreadsEnv`] when `RUST_BERTSCORE_NUM_THREADS` is not a positive integer.
pub fn get_num_threads() -> Result<usize> {
    let st = state();
    match &st.pool {
        Some(p) => Ok(p.current_num_threads()),
        None => resolve(st.requested),
    }
}

/// The thread count the user set, for the other thread pools of a program (such as an encoder's):
/// the last [`set_num_threads`] call, else `RUST_BERTSCORE_NUM_THREADS`, else `None` (no
/// setting: each pool picks its own default). Every reader of the setting goes through this.
///
/// # Errors
/// [`KernelError::InvalidThreadsEnv`] when `RUST_BERTSCORE_NUM_THREADS` is not a positive integer.
pub fn requested_num_threads() -> Result<Option<usize>> {
    asked(state().requested)
}

fn shared_pool() -> Result<Arc<ThreadPool>> {
    let mut st = state();
    if let Some(p) = &st.pool {
        return Ok(Arc::clone(p));
    }
    let pool = build(resolve(st.requested)?)?;
    st.pool = Some(Arc::clone(&pool));
    Ok(pool)
}

/// How one call runs its loop: serially on the calling thread, or on the shared pool with at
/// most `threads` workers busy.
pub(crate) struct Plan {
    pool: Option<Arc<ThreadPool>>,
    threads: usize,
}

impl Plan {
    /// Decides for a call with `items` independent pieces of work costing `cost` in total.
    pub(crate) fn new(cost: u64, items: usize, max_threads: Option<usize>) -> Result<Self> {
        if max_threads == Some(0) {
            return Err(KernelError::InvalidThreads(0));
        }
        if items < 2 || cost < SERIAL_THRESHOLD || max_threads == Some(1) {
            return Ok(Self::serial());
        }
        let pool = shared_pool()?;
        let threads = pool
            .current_num_threads()
            .min(max_threads.unwrap_or(usize::MAX));
        Ok(if threads < 2 {
            Self::serial()
        } else {
            Self {
                pool: Some(pool),
                threads,
            }
        })
    }

    /// Runs everything on the calling thread.
    pub(crate) fn serial() -> Self {
        Self {
            pool: None,
            threads: 1,
        }
    }

    /// `(0..n).map(f)`, in order, with one scratch value `init()` per worker.
    pub(crate) fn map<S, R, I, F>(&self, n: usize, init: I, f: F) -> Vec<R>
    where
        R: Send,
        I: Fn() -> S + Sync + Send,
        F: Fn(&mut S, usize) -> R + Sync + Send,
    {
        match &self.pool {
            None => {
                let mut scratch = init();
                (0..n).map(|i| f(&mut scratch, i)).collect()
            }
            Some(pool) => {
                // Fewer threads than the pool has: hand out at most `threads` pieces of work.
                let min_len = if self.threads < pool.current_num_threads() {
                    n.div_ceil(self.threads).max(1)
                } else {
                    1
                };
                pool.install(|| {
                    (0..n)
                        .into_par_iter()
                        .with_min_len(min_len)
                        .map_init(&init, &f)
                        .collect()
                })
            }
        }
    }
}

/// Runs `f` over `0..n` like [`Plan::map`] and returns the first error in index order, if any.
pub(crate) fn try_map<S, R, I, F>(plan: &Plan, n: usize, init: I, f: F) -> Result<Vec<R>>
where
    R: Send,
    I: Fn() -> S + Sync + Send,
    F: Fn(&mut S, usize) -> Result<R> + Sync + Send,
{
    plan.map(n, init, f).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_are_parsed_strictly() {
        assert_eq!(parse_threads("4"), Ok(Some(4)));
        assert_eq!(parse_threads(" 2 "), Ok(Some(2)));
        assert_eq!(parse_threads("1024"), Ok(Some(MAX_THREADS)));
        assert!(parse_threads("1025").is_err());
        assert!(parse_threads("100000").is_err());
        assert_eq!(
            set_num_threads(100_000),
            Err(KernelError::InvalidThreads(100_000))
        );
        let limit = format!("from 1 to {MAX_THREADS},");
        assert!(KernelError::InvalidThreads(0).to_string().contains(&limit));
        assert!(parse_threads("0").unwrap_err().to_string().contains(&limit));
        assert_eq!(parse_threads(""), Ok(None));
        for bad in ["0", "-1", "two", "1.5"] {
            assert!(parse_threads(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn set_num_threads_resizes_the_one_pool() {
        assert!(set_num_threads(0).is_err());
        set_num_threads(2).unwrap();
        let before = shared_pool().unwrap();
        assert_eq!(before.current_num_threads(), 2);
        assert!(
            Arc::ptr_eq(&before, &shared_pool().unwrap()),
            "pool is reused"
        );
        set_num_threads(2).unwrap();
        assert!(
            Arc::ptr_eq(&before, &shared_pool().unwrap()),
            "same size: no rebuild"
        );
        set_num_threads(3).unwrap();
        assert_eq!(get_num_threads(), Ok(3));
        assert_eq!(requested_num_threads(), Ok(Some(3)));
        set_num_threads(2).unwrap();
        assert_eq!(get_num_threads(), Ok(2));
        assert_eq!(requested_num_threads(), Ok(Some(2)));
        // A set_num_threads value takes precedence over the environment.
        assert_eq!(asked(Some(5)), Ok(Some(5)));
    }

    #[test]
    fn plans_map_in_order() {
        assert!(Plan::new(1, 10, Some(0)).is_err());
        let small = Plan::new(10, 100, None).unwrap();
        assert!(small.pool.is_none());
        for max in [None, Some(1), Some(2)] {
            let plan = Plan::new(u64::MAX, 1000, max).unwrap();
            let out = plan.map(
                1000,
                || 0_usize,
                |calls, i| {
                    *calls += 1;
                    i * 2
                },
            );
            assert_eq!(out, (0..1000).map(|i| i * 2).collect::<Vec<_>>());
        }
        let r: Result<Vec<usize>> = try_map(
            &Plan::serial(),
            5,
            || (),
            |_, i| {
                if i >= 3 {
                    Err(KernelError::InvalidThreads(i))
                } else {
                    Ok(i)
                }
            },
        );
        assert_eq!(r, Err(KernelError::InvalidThreads(3)));
    }
}
