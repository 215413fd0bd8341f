//! BM25 ranking over the chunks of an index (k1 = 1.2, b = 0.75): each chunk's terms are its
//! text's and its file path's.

use std::collections::HashMap;

use crate::tokens;

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalisation.
const B: f64 = 0.75;

/// The postings of a set of chunks, built once and queried many times.
#[derive(Debug, Default)]
pub struct Bm25 {
    /// Term → (chunk number, occurrences in it).
    postings: HashMap<String, Vec<(u32, u32)>>,
    /// Terms of each chunk.
    lengths: Vec<u32>,
    average: f64,
}

impl Bm25 {
    /// The postings of `docs`, each the text of one chunk (with its path) in order.
    pub fn new<'a>(docs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Bm25 {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lengths = Vec::new();
        let mut counts: HashMap<String, u32> = HashMap::new();
        for (n, (path, text)) in docs.into_iter().enumerate() {
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            counts.clear();
            let mut length = 0u32;
            let mut add = |term: String| {
                length += 1;
                *counts.entry(term).or_default() += 1;
            };
            tokens::terms(path, &mut add);
            tokens::terms(text, &mut add);
            lengths.push(length);
            for (term, tf) in counts.drain() {
                postings.entry(term).or_default().push((n, tf));
            }
        }
        let average = if lengths.is_empty() {
            0.0
        } else {
            lengths.iter().map(|l| f64::from(*l)).sum::<f64>() / lengths.len() as f64
        };
        Bm25 { postings, lengths, average }
    }

    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// True when there are no chunks.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Every chunk matching at least one term of `query`, best first, as `(chunk number,
    /// score)`; ties keep chunk order.
    pub fn rank(&self, query: &str) -> Vec<(usize, f64)> {
        let mut terms = tokens::term_list(query);
        terms.sort();
        terms.dedup();
        let n = self.lengths.len() as f64;
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for term in &terms {
            let Some(list) = self.postings.get(term) else { continue };
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (doc, tf) in list {
                let tf = f64::from(*tf);
                let len = f64::from(self.lengths[*doc as usize]);
                let norm = K1 * (1.0 - B + B * len / self.average.max(1.0));
                *scores.entry(*doc).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().map(|(d, s)| (d as usize, s)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rarer_terms_and_denser_chunks_rank_first() {
        let docs = [
            ("src/a.rs", "fn parse_config() { read the config file }"),
            ("src/b.rs", "config config config everywhere, nothing else"),
            ("src/c.rs", "the tokenizer splits words"),
            ("docs/d.md", "parse parse parse"),
        ];
        let index = Bm25::new(docs);
        let ranked = index.rank("parse config");
        assert_eq!(ranked[0].0, 0, "{ranked:?}");
        assert_eq!(ranked.len(), 3);
        assert!(index.rank("tokenizer")[0].0 == 2);
        assert!(index.rank("zebra").is_empty());
        assert!(index.rank("the of").is_empty());
        // The path counts: `docs` names the fourth chunk.
        assert_eq!(index.rank("docs")[0].0, 3);
    }
}
