//! Deterministic inputs for the criterion benches of `bertscore-core` (benches/kernel.rs), and a
//! small timer that prints pairs/s and GFLOP/s next to criterion's own figures.

use std::time::{Duration, Instant};

use bertscore_core::{EmbeddedText, Ragged};
use ndarray::Array2;

/// SplitMix64: a tiny, fast, deterministic PRNG (no dependency needed for bench data).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn next_f32(&mut self) -> f32 {
        // 24 random bits -> [0, 1) exactly representable in f32.
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        2.0 * unit - 1.0
    }
}

/// A ragged batch of `n_texts` texts of `tokens` tokens each: one (n_texts * tokens x dim)
/// array and its offsets, as the Python pipeline hands them to the kernel.
#[derive(Clone, Debug)]
pub struct Batch {
    /// All token embeddings, back to back.
    pub data: Array2<f32>,
    /// n_texts + 1 offsets.
    pub offsets: Vec<usize>,
}

impl Batch {
    /// Random embeddings in [-1, 1), reproducible from `seed`.
    pub fn random(n_texts: usize, tokens: usize, dim: usize, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let data = Array2::from_shape_simple_fn((n_texts * tokens, dim), || rng.next_f32());
        let offsets = (0..=n_texts).map(|i| i * tokens).collect();
        Self { data, offsets }
    }

    /// The batch as a validated [`Ragged`] view.
    pub fn ragged(&self) -> Ragged<'_> {
        Ragged::new(self.data.view(), self.offsets.clone(), None)
            .expect("valid offsets by construction")
    }

    /// Its texts.
    pub fn texts(&self) -> Vec<EmbeddedText<'_>> {
        self.ragged().texts()
    }
}

/// Multiply-adds x 2 of one pair's similarity matrix: `2 * m * n * dim`.
pub fn sim_flops(cand_tokens: usize, ref_tokens: usize, dim: usize) -> f64 {
    2.0 * (cand_tokens * ref_tokens * dim) as f64
}

/// Median wall time of `runs` calls of `f` (after one warm-up call).
pub fn median_time(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs.max(1))
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// Times `f` (which scores `pairs` pairs) and prints pairs/s and GFLOP/s of the similarity
/// matrices (`flops_per_pair` each).
pub fn report(label: &str, pairs: usize, flops_per_pair: f64, f: impl FnMut()) {
    let secs = median_time(3, f).as_secs_f64();
    println!(
        "{label:<28} {:>10.3} ms  {:>12.0} pairs/s  {:>7.1} GFLOP/s",
        secs * 1e3,
        pairs as f64 / secs,
        pairs as f64 * flops_per_pair / secs / 1e9
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prng_is_deterministic_and_in_range() {
        let (mut a, mut b) = (SplitMix64::new(1), SplitMix64::new(1));
        for _ in 0..1000 {
            let x = a.next_f32();
            assert_eq!(x, b.next_f32());
            assert!((-1.0..1.0).contains(&x));
        }
        let batch = Batch::random(3, 4, 5, 7);
        assert_eq!(batch.data.dim(), (12, 5));
        assert_eq!(batch.texts().len(), 3);
        assert_eq!(sim_flops(30, 30, 384), 691_200.0);
    }
}
