//! Vector similarity and rank fusion for hybrid ranking: the chunks' embeddings (from a
//! provider, stored in the index) ranked by cosine similarity to the query's, fused with the
//! BM25 ranking by reciprocal rank fusion.

/// The constant `k` of reciprocal rank fusion: a document's fused score is the sum, over the
/// rankings it appears in, of `1 / (k + rank)` (rank 1 first). 60 is the value Cormack, Clarke
/// and Büttcher chose ("Reciprocal Rank Fusion outperforms Condorcet and individual Rank
/// Learning Methods", SIGIR 2009) and found to work across collections.
pub const RRF_K: f64 = 60.0;

/// The cosine similarity of `a` and `b` in [-1, 1]; 0 when either is all zeros or their
/// lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { (dot / (na.sqrt() * nb.sqrt())).clamp(-1.0, 1.0) }
}

/// Fuses rankings of documents numbered `0..n` with reciprocal rank fusion ([`RRF_K`]): each
/// ranking lists document numbers best first; the result lists every document that appears in
/// any ranking with its fused score, best first (ties by document number).
pub fn reciprocal_rank_fusion(rankings: &[&[usize]], n: usize) -> Vec<(usize, f64)> {
    let mut scores = vec![0.0f64; n];
    let mut seen = vec![false; n];
    for ranking in rankings {
        for (rank, &doc) in ranking.iter().enumerate() {
            if doc < n {
                scores[doc] += 1.0 / (RRF_K + rank as f64 + 1.0);
                seen[doc] = true;
            }
        }
    }
    let mut fused: Vec<(usize, f64)> = (0..n).filter(|&d| seen[d]).map(|d| (d, scores[d])).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused
}

/// A vector as stored: the little-endian bytes of its `f32`s in hex.
pub(crate) fn encode(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector.iter().flat_map(|f| f.to_le_bytes()).collect();
    hex::encode(bytes)
}

/// The vector [`encode`] stored; `None` when the text is not one.
pub(crate) fn decode(text: &str) -> Option<Vec<f32>> {
    let bytes = hex::decode(text).ok()?;
    if bytes.len() % 4 != 0 {
        return None;
    }
    Some(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_known_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-12);
        assert!((cosine(&[1.0, 0.0], &[-2.0, 0.0]) + 1.0).abs() < 1e-12);
        // Length does not matter, direction does: cos 45° = 1/√2.
        assert!((cosine(&[3.0, 3.0], &[5.0, 0.0]) - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-9);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 1.0]), 0.0);
    }

    #[test]
    fn fusion_rewards_agreement_and_uses_k_60() {
        // Document 2 is second in both rankings; 0 is first in one and absent from the other.
        let fused = reciprocal_rank_fusion(&[&[0, 2, 1], &[3, 2]], 5);
        let score = |d: usize| fused.iter().find(|(x, _)| *x == d).map(|(_, s)| *s);
        assert_eq!(fused[0].0, 2);
        assert!((score(2).unwrap() - 2.0 / 62.0).abs() < 1e-12);
        assert!((score(0).unwrap() - 1.0 / 61.0).abs() < 1e-12);
        assert!((score(1).unwrap() - 1.0 / 63.0).abs() < 1e-12);
        // Ties (0 and 3 are both first once) go by document number; 4 is in no ranking.
        assert_eq!(fused.iter().map(|(d, _)| *d).collect::<Vec<_>>(), vec![2, 0, 3, 1]);
        assert_eq!(score(4), None);
    }

    #[test]
    fn vectors_round_trip() {
        let v = vec![0.5f32, -1.25, 3.0e-8, f32::MAX];
        assert_eq!(decode(&encode(&v)).unwrap(), v);
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("zz00zz00"), None);
    }
}
