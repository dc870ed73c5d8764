//! The crate's one home of `unsafe` code and of instruction-set dispatch: a leaf module (it uses
//! no other module of the crate), the only one allowed `unsafe` (the crate root denies it).
//!
//! * [`Isa`]: the instruction set the kernels run with, picked once per process
//!   ([`Isa::detect`]: the best one the CPU has, capped by the `RUST_BERTSCORE_ISA` environment
//!   variable, see [`ISA_ENV`]). An `Isa` can only be made for an instruction set the CPU runs,
//!   so holding one makes dispatch sound; tests get every available one from
//!   [`Isa::all_available`] or the scalar one from [`Isa::portable`].
//! * [`Isa::vectorize`]: runs a [`Vectorized`] loop compiled for the instruction set (the
//!   compiler vectorises plain Rust loops with AVX-512F or AVX2 + FMA enabled).
//! * [`dots`]: the similarity product's micro-kernels (`x86`: hand-written AVX-512F and AVX2
//!   intrinsics; portable: `ndarray`'s matrix product) over [`Rows`], with [`Prefetch`] hints.
//!
//! The portable path holds no `unsafe` but [`Rows::row`] (a slice of a borrowed view).

mod prefetch;
mod rows;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::sync::OnceLock;

use ndarray::linalg::general_mat_mul;
use ndarray::ArrayViewMut2;

pub(crate) use prefetch::Prefetch;
pub(crate) use rows::Rows;

/// Environment variable that caps the instruction set of the kernels, read once per process:
/// `portable` (scalar code, no SIMD dispatch), `avx2` (AVX2 + FMA at most) or `avx512`
/// (AVX-512F at most, the default). A cap above what the CPU has is the CPU's best; any other
/// value is ignored. For tests and for comparing paths; results agree within float rounding.
pub const ISA_ENV: &str = "RUST_BERTSCORE_ISA";

/// The instruction set of the kernels. Only this module makes one, and only for an instruction
/// set the CPU runs, so holding an `Isa` proves that its kernels can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Isa(Kind);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Kind {
    const fn name(self) -> &'static str {
        match self {
            Kind::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => "avx2",
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512 => "avx512",
        }
    }

    /// The cap a value of [`ISA_ENV`] names (`None`: no cap).
    fn cap(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "portable" | "scalar" => Some(Kind::Portable),
            #[cfg(target_arch = "x86_64")]
            "avx2" => Some(Kind::Avx2),
            #[cfg(target_arch = "x86_64")]
            "avx512" => Some(Kind::Avx512),
            _ => None,
        }
    }
}

/// Every instruction set this CPU runs, best first (under Miri, which does not run the SIMD
/// intrinsics, only the portable one).
fn available() -> Vec<Kind> {
    let mut all = Vec::new();
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let fma = std::arch::is_x86_feature_detected!("fma");
        if fma && std::arch::is_x86_feature_detected!("avx512f") {
            all.push(Kind::Avx512);
        }
        if fma && std::arch::is_x86_feature_detected!("avx2") {
            all.push(Kind::Avx2);
        }
    }
    all.push(Kind::Portable);
    all
}

/// The best of `available` (best first) at or below `cap`.
fn best_under(available: &[Kind], cap: Option<Kind>) -> Kind {
    available
        .iter()
        .copied()
        .find(|&k| cap.is_none_or(|c| k <= c))
        .unwrap_or(Kind::Portable)
}

impl Isa {
    /// The instruction set of this process: the best the CPU has, at most what [`ISA_ENV`]
    /// names. Decided on the first call, then cached.
    pub(crate) fn detect() -> Self {
        static CHOSEN: OnceLock<Isa> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let cap = std::env::var(ISA_ENV).ok().and_then(|v| Kind::cap(&v));
            Self(best_under(&available(), cap))
        })
    }

    /// The scalar path: no SIMD dispatch, any CPU.
    #[cfg(test)]
    pub(crate) const fn portable() -> Self {
        Self(Kind::Portable)
    }

    /// Every instruction set this CPU runs, best first (for tests comparing them).
    #[cfg(test)]
    pub(crate) fn all_available() -> Vec<Self> {
        available().into_iter().map(Self).collect()
    }

    /// `"avx512"`, `"avx2"` or `"portable"`.
    pub(crate) const fn name(self) -> &'static str {
        self.0.name()
    }

    /// Runs `work` compiled for this instruction set.
    #[inline]
    pub(crate) fn vectorize<V: Vectorized>(self, work: V) -> V::Output {
        match self.0 {
            // SAFETY: an `Isa` of this kind exists only when the CPU has AVX-512F and FMA.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512 => unsafe { x86::vectorize_avx512(work) },
            // SAFETY: likewise for AVX2 and FMA.
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => unsafe { x86::vectorize_avx2(work) },
            Kind::Portable => work.run::<false>(),
        }
    }
}

/// The name of the instruction set the kernels use in this process (`"avx512"`, `"avx2"` or
/// `"portable"`), after [`ISA_ENV`].
pub fn active_isa() -> &'static str {
    Isa::detect().name()
}

/// A loop that [`Isa::vectorize`] compiles for each instruction set: `run` is inlined into a
/// function with the instruction set's target features, where the compiler vectorises it.
/// Implementations mark `run` `#[inline(always)]`.
pub(crate) trait Vectorized {
    /// What the loop returns.
    type Output;
    /// The loop; `FMA` is true when fused multiply-add instructions are enabled (so
    /// `f64::mul_add` is one instruction, not a library call).
    fn run<const FMA: bool>(self) -> Self::Output;
}

/// `out[i * b.len() + j] = a.row(i) . b.row(j)` (f32), advancing `prefetch` along the way.
/// `a` and `b` have the same dim; `out.len() == a.len() * b.len()` (otherwise, or with dim 0,
/// `out` is zeroed).
pub(crate) fn dots(isa: Isa, a: &Rows<'_>, b: &Rows<'_>, out: &mut [f32], prefetch: &mut Prefetch) {
    debug_assert_eq!(out.len(), a.len() * b.len());
    if a.dim() == 0 || a.dim() != b.dim() || out.len() != a.len() * b.len() {
        out.fill(0.0);
        return;
    }
    match isa.0 {
        // SAFETY: an `Isa` of this kind exists only when the CPU has AVX-512F; shapes checked.
        #[cfg(target_arch = "x86_64")]
        Kind::Avx512 => unsafe { x86::dots_avx512(a, b, out, prefetch) },
        // SAFETY: likewise for AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        Kind::Avx2 => unsafe { x86::dots_avx2(a, b, out, prefetch) },
        Kind::Portable => {
            prefetch.step(prefetch.lines());
            if let Ok(mut c) = ArrayViewMut2::from_shape((a.len(), b.len()), out) {
                general_mat_mul(1.0, &a.view(), &b.view().t(), 0.0, &mut c);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod isa_tests {
    use super::*;

    #[test]
    fn the_env_cap_picks_the_best_available_at_or_below_it() {
        assert_eq!(Kind::cap(" Portable "), Some(Kind::Portable));
        assert_eq!(Kind::cap("scalar"), Some(Kind::Portable));
        assert_eq!(Kind::cap("sse9"), None);
        assert_eq!(Kind::cap(""), None);
        let all = available();
        assert_eq!(best_under(&all, None), all[0]);
        assert_eq!(best_under(&all, Some(Kind::Portable)), Kind::Portable);
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(Kind::cap("AVX2"), Some(Kind::Avx2));
            // A machine with AVX2 only, capped at AVX-512: AVX2.
            assert_eq!(
                best_under(&[Kind::Avx2, Kind::Portable], Some(Kind::Avx512)),
                Kind::Avx2
            );
            assert_eq!(
                best_under(
                    &[Kind::Avx512, Kind::Avx2, Kind::Portable],
                    Some(Kind::Avx2)
                ),
                Kind::Avx2
            );
            assert_eq!(
                best_under(&[Kind::Portable], Some(Kind::Avx2)),
                Kind::Portable
            );
        }
        assert!(all.contains(&Isa::detect().0));
        assert_eq!(Isa::portable().name(), "portable");
    }
}
