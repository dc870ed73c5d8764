//! [`Prefetch`]: cache hints for the next block's texts.

use ndarray::ArrayView2;

/// Memory to pull into the L2 cache while the current block is computed (typically the next
/// block's texts), a little after each tile, so that the next block does not wait on RAM.
/// Addresses are only hints: a prefetch never faults and never changes a result.
#[derive(Default)]
pub(crate) struct Prefetch {
    /// (address, bytes) ranges, and a cursor into them.
    ranges: Vec<(usize, usize)>,
    range: usize,
    offset: usize,
    lines: usize,
}

impl Prefetch {
    const LINE: usize = 64;

    /// Replaces the ranges by the memory of `views` (the rows of each, where contiguous).
    pub(crate) fn set<'v>(&mut self, views: impl IntoIterator<Item = ArrayView2<'v, f32>>) {
        self.ranges.clear();
        (self.range, self.offset, self.lines) = (0, 0, 0);
        let bytes = std::mem::size_of::<f32>();
        for v in views {
            if v.is_empty() {
                continue;
            }
            if v.is_standard_layout() {
                self.ranges.push((v.as_ptr() as usize, v.len() * bytes));
            } else if v.ncols() == 1 || v.strides()[1] == 1 {
                for row in v.outer_iter() {
                    self.ranges.push((row.as_ptr() as usize, row.len() * bytes));
                }
            }
        }
        self.lines = self.ranges.iter().map(|r| r.1.div_ceil(Self::LINE)).sum();
    }

    /// Cache lines left to prefetch.
    pub(crate) fn lines(&self) -> usize {
        self.lines
    }

    /// Prefetches the next `lines` cache lines of the ranges.
    #[inline]
    pub(crate) fn step(&mut self, lines: usize) {
        for _ in 0..lines {
            let Some(&(start, len)) = self.ranges.get(self.range) else {
                return;
            };
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
                // SAFETY: a prefetch never faults and changes no state the program can see,
                // whatever the address.
                unsafe { _mm_prefetch::<_MM_HINT_T1>((start + self.offset) as *const i8) };
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = start;
            self.offset += Self::LINE;
            if self.offset >= len {
                (self.range, self.offset) = (self.range + 1, 0);
            }
            self.lines = self.lines.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{s, Array2};

    #[test]
    fn lines_are_counted_and_consumed() {
        let a = Array2::<f32>::zeros((4, 40)); // 640 bytes: 10 lines
        let b = Array2::<f32>::zeros((3, 40));
        let mut p = Prefetch::default();
        // One contiguous range, and 3 rows of 80 bytes (2 lines each) of a strided view.
        p.set([
            a.view(),
            b.slice(s![.., ..20]),
            Array2::zeros((0, 2)).view(),
        ]);
        assert_eq!(p.lines(), 10 + 3 * 2);
        p.step(11);
        assert_eq!(p.lines(), 5);
        p.step(100);
        assert_eq!(p.lines(), 0);
    }
}
