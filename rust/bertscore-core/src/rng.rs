//! Counter-based random streams for the resampling statistics ([`crate::stats`]).
//!
//! Resample (or trial) `r` of a call seeded `seed` draws from its own [`Stream`], whose start is
//! a SplitMix64 hash of `(seed, r)`. Its draws therefore depend on nothing else: not on the
//! thread that runs it, nor on the order resamples are run in, nor on how many systems share
//! the call. That is what makes seeded results identical across runs and thread counts.
//!
//! A stream is wyrand (Wang Yi's generator: a Weyl sequence passed through a 64x64->128-bit
//! multiply-fold), which passes BigCrush and PractRand and costs one multiply per 64 bits.
//! Bounded integers use Lemire's multiply-shift with rejection, so they are exactly uniform.

/// SplitMix64's increment (2^64 / golden ratio).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
/// wyrand's Weyl increment and fold constant.
const WY_ADD: u64 = 0xA076_1D64_78BD_642F;
const WY_XOR: u64 = 0xE703_7ED1_A0B4_28DB;

/// SplitMix64's output function: a bijective 64-bit hash.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The random stream of resample (or trial) `index` of a call seeded `seed`.
#[derive(Clone, Debug)]
pub(crate) struct Stream {
    state: u64,
}

impl Stream {
    /// Stream `index` of `seed`: the start is a hash of both, so neighbouring indices and
    /// neighbouring seeds give unrelated streams.
    pub(crate) fn new(seed: u64, index: u64) -> Self {
        let key = mix64(seed.wrapping_add(GOLDEN));
        Self {
            state: mix64(key ^ index.wrapping_add(1).wrapping_mul(GOLDEN)),
        }
    }

    /// The next 64 random bits.
    #[inline(always)]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(WY_ADD);
        let t = u128::from(self.state) * u128::from(self.state ^ WY_XOR);
        ((t >> 64) as u64) ^ (t as u64)
    }

    /// Two independent uniform integers in `0..n`, for `1 <= n <= 2^32`: Lemire's method on the
    /// two 32-bit halves of one draw, with rejection (taken with probability below `n / 2^32`).
    #[inline(always)]
    pub(crate) fn two_below(&mut self, n: u64, threshold: u64) -> (usize, usize) {
        let w = self.next_u64();
        let mut m1 = (w & 0xFFFF_FFFF) * n;
        let mut m2 = (w >> 32) * n;
        while (m1 & 0xFFFF_FFFF) < threshold {
            m1 = (self.next_u64() >> 32) * n;
        }
        while (m2 & 0xFFFF_FFFF) < threshold {
            m2 = (self.next_u64() >> 32) * n;
        }
        ((m1 >> 32) as usize, (m2 >> 32) as usize)
    }
}

/// The rejection threshold of [`Stream::two_below`] for `n`: `2^32 mod n`.
pub(crate) fn threshold32(n: u64) -> u64 {
    (1u64 << 32) % n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let draw = |seed, index| {
            let mut s = Stream::new(seed, index);
            (0..4).map(|_| s.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7, 3), draw(7, 3));
        assert_ne!(draw(7, 3), draw(7, 4));
        assert_ne!(draw(7, 3), draw(8, 3));
        assert_ne!(draw(0, 0), draw(0, 1));
    }

    #[test]
    fn bounded_draws_are_uniform() {
        // Chi-square test of 7 cells with 70,000 draws; 6 degrees of freedom, p = 1e-4 at 27.9.
        for n in [7u64] {
            let mut counts = [0u64; 7];
            let mut s = Stream::new(1, 0);
            let t = threshold32(n);
            for _ in 0..35_000 {
                let (i, j) = s.two_below(n, t);
                counts[i] += 1;
                counts[j] += 1;
            }
            let expected = 70_000.0 / n as f64;
            let chi2: f64 = counts
                .iter()
                .map(|&c| (c as f64 - expected).powi(2) / expected)
                .sum();
            assert!(chi2 < 27.9, "chi2 {chi2}, counts {counts:?}");
        }
        let (i, j) = Stream::new(3, 0).two_below(1, threshold32(1));
        assert_eq!((i, j), (0, 0));
        let big = 1u64 << 32;
        let (i, j) = Stream::new(3, 0).two_below(big, threshold32(big));
        assert!(i < big as usize && j < big as usize);
    }

    #[test]
    fn bits_are_balanced() {
        let mut s = Stream::new(42, 9);
        let ones: u32 = (0..10_000).map(|_| s.next_u64().count_ones()).sum();
        // 640,000 fair bits: sd 400.
        let dev = f64::from(ones) - 320_000.0;
        assert!(dev.abs() < 2_000.0, "{dev}");
    }
}
