//! Inverse document frequencies over token-id sequences, as bert_score's `get_idf_dict`:
//! a token's document frequency `df` counts the documents that contain it (each document counts
//! once, however often the token occurs in it), and with `M` documents
//! `idf = ln((M + 1) / (df + 1))`. A token seen in no document gets `ln(M + 1)`.

use std::collections::HashMap;
use std::hash::Hash;

use crate::error::{KernelError, Result};
use crate::pool::Plan;

/// IDF weights of the tokens seen in a corpus.
#[derive(Clone, Debug)]
pub struct Idf<T> {
    /// `ln((M + 1) / (df + 1))` for every token id seen in at least one document.
    pub weights: HashMap<T, f64>,
    /// `M`, the number of documents.
    pub num_docs: usize,
}

impl<T: Eq + Hash> Idf<T> {
    /// Weight of `id`: its IDF, or [`Idf::default_weight`] if it was never seen.
    pub fn get(&self, id: &T) -> f64 {
        self.weights
            .get(id)
            .copied()
            .unwrap_or_else(|| self.default_weight())
    }

    /// Weight of a token seen in no document: `ln(M + 1)`.
    pub fn default_weight(&self) -> f64 {
        idf_default(self.num_docs)
    }
}

/// `ln((num_docs + 1) / (df + 1))`.
pub fn idf_value(df: usize, num_docs: usize) -> f64 {
    ((num_docs as f64 + 1.0) / (df as f64 + 1.0)).ln()
}

/// IDF of a token seen in no document: `ln(num_docs + 1)`.
///
/// ```
/// assert_eq!(bertscore_core::idf_default(0), 0.0);
/// assert!((bertscore_core::idf_default(3) - 4.0_f64.ln()).abs() < 1e-15);
/// ```
pub fn idf_default(num_docs: usize) -> f64 {
    idf_value(0, num_docs)
}

/// Document frequency of every token id: in how many documents it occurs. Documents are counted
/// in parallel (chunks of documents on the shared pool, see [`crate::pool`]).
///
/// # Errors
/// Only a thread-pool problem (or `num_threads == Some(0)`).
pub fn document_frequencies<T>(
    docs: &[&[T]],
    num_threads: Option<usize>,
) -> Result<HashMap<T, usize>>
where
    T: Eq + Hash + Copy + Send + Sync,
{
    let tokens = docs.iter().map(|d| d.len() as u64).sum::<u64>();
    // Hashing is ~20x the cost of a multiply-add.
    let plan = Plan::new(tokens.saturating_mul(20), docs.len(), num_threads)?;
    let chunk = docs.len().div_ceil(64).max(256);
    let n_chunks = docs.len().div_ceil(chunk);
    let partial = plan.map(
        n_chunks,
        || (),
        |_, c| {
            // Per token id: (df, 1 + index of the last document that counted it).
            let mut counts: HashMap<T, (usize, usize)> = HashMap::new();
            let first = c * chunk;
            for (d, doc) in docs[first..docs.len().min(first + chunk)]
                .iter()
                .enumerate()
            {
                for &id in *doc {
                    let entry = counts.entry(id).or_insert((0, 0));
                    if entry.1 != d + 1 {
                        *entry = (entry.0 + 1, d + 1);
                    }
                }
            }
            counts
        },
    );
    let mut total: HashMap<T, usize> = HashMap::new();
    for counts in partial {
        for (id, (df, _)) in counts {
            *total.entry(id).or_insert(0) += df;
        }
    }
    Ok(total)
}

/// IDF weights over `docs`, with `M = num_docs` (default: `docs.len()`).
///
/// # Errors
/// [`KernelError::InvalidNumDocs`] when `num_docs < docs.len()` (df could exceed M).
///
/// ```
/// let docs: [&[u32]; 3] = [&[1, 2, 2], &[2, 3], &[2]];
/// let idf = bertscore_core::idf_weights(&docs, None, None).unwrap();
/// assert!((idf.get(&2) - (4.0_f64 / 4.0).ln()).abs() < 1e-15); // in all 3 docs
/// assert!((idf.get(&1) - (4.0_f64 / 2.0).ln()).abs() < 1e-15); // in 1 doc
/// assert!((idf.get(&9) - 4.0_f64.ln()).abs() < 1e-15); // unseen
/// ```
pub fn idf_weights<T>(
    docs: &[&[T]],
    num_docs: Option<usize>,
    num_threads: Option<usize>,
) -> Result<Idf<T>>
where
    T: Eq + Hash + Copy + Send + Sync,
{
    let m = num_docs.unwrap_or(docs.len());
    if m < docs.len() {
        return Err(KernelError::InvalidNumDocs {
            num_docs: m,
            docs: docs.len(),
        });
    }
    let df = document_frequencies(docs, num_threads)?;
    Ok(Idf {
        weights: df
            .into_iter()
            .map(|(id, n)| (id, idf_value(n, m)))
            .collect(),
        num_docs: m,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_semantics_across_chunks_and_threads() {
        // 1000 docs: token 7 in every doc (several times), token i in doc i only.
        let docs: Vec<Vec<i64>> = (0..1000).map(|i| vec![7, 7, 1000 + i, 7]).collect();
        let views: Vec<&[i64]> = docs.iter().map(Vec::as_slice).collect();
        for threads in [Some(1), None] {
            let df = document_frequencies(&views, threads).unwrap();
            assert_eq!(df[&7], 1000);
            assert_eq!(df[&1500], 1);
            assert_eq!(df.len(), 1001);
        }
        let idf = idf_weights(&views, Some(1999), None).unwrap();
        assert!((idf.get(&7) - (2000.0_f64 / 1001.0).ln()).abs() < 1e-12);
        assert!(idf_weights(&views, Some(10), None).is_err());
        let empty: [&[i64]; 0] = [];
        assert!(idf_weights(&empty, None, None).unwrap().weights.is_empty());
    }
}
