//! BM25 over the chunk table's search text, held in memory (pure): the full-text leg of a
//! search over a table held by [`super::flat`], without a LanceDB query.
//!
//! It scores as LanceDB's full-text index does for the index Sextant builds
//! (`store::lance`: the simple tokenizer, lower case, Snowball English stems, no stop-word
//! removal, tokens of at most 40 bytes): Okapi BM25 with k1 = 1.2 and b = 0.75, the
//! inverse document frequency `ln(1 + (N − n + 0.5) / (n + 0.5))`, each query token
//! scored once per occurrence in the query. A row's text is what `text::search_text`
//! made of it (identifier parts split and lower-cased), so tokenizing is a split at
//! anything not alphanumeric and a stem.

use std::collections::HashMap;

use frostem::{Algorithm, Stemmer};

/// Term-frequency saturation.
const K1: f32 = 1.2;
/// Length normalisation.
const B: f32 = 0.75;
/// Longer tokens are dropped, as LanceDB's tokenizer drops them.
const MAX_TOKEN_BYTES: usize = 40;

/// The stemmed tokens of `text`, in order.
fn tokens<'a>(stemmer: &'a Stemmer, text: &'a str) -> impl Iterator<Item = String> + 'a {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty() && t.len() <= MAX_TOKEN_BYTES)
        .map(move |t| stemmer.stem(&t.to_lowercase()).into_owned())
}

/// Bytes of an index's parts, roughly: what they hold plus a vector's or a key's own
/// overhead each.
fn index_bytes(
    terms: &HashMap<Box<str>, u32>,
    postings: &[Vec<(u32, u16)>],
    lengths: &[u32],
) -> usize {
    let entries: usize = postings
        .iter()
        .map(|p| p.capacity() * std::mem::size_of::<(u32, u16)>() + 24)
        .sum();
    let vocabulary: usize = terms.keys().map(|t| t.len() + 24).sum();
    entries + vocabulary + std::mem::size_of_val(lengths)
}

/// Builds a [`Bm25`] row by row.
pub struct Bm25Builder {
    stemmer: Stemmer,
    terms: HashMap<Box<str>, u32>,
    /// Per term: (row, occurrences) in row order.
    postings: Vec<Vec<(u32, u16)>>,
    lengths: Vec<u32>,
    counts: HashMap<u32, u16>,
}

/// An index's size, for `Debug` (its postings would fill pages).
fn debug_sizes(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    rows: usize,
    terms: usize,
) -> std::fmt::Result {
    f.debug_struct(name)
        .field("rows", &rows)
        .field("terms", &terms)
        .finish()
}

impl std::fmt::Debug for Bm25Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_sizes(f, "Bm25Builder", self.lengths.len(), self.terms.len())
    }
}

impl Default for Bm25Builder {
    fn default() -> Self {
        Self {
            stemmer: Stemmer::new(Algorithm::English),
            terms: HashMap::new(),
            postings: Vec::new(),
            lengths: Vec::new(),
            counts: HashMap::new(),
        }
    }
}

impl Bm25Builder {
    /// Adds the next row's text (rows are numbered in the order added).
    pub fn push(&mut self, text: &str) {
        let row = self.lengths.len() as u32;
        self.counts.clear();
        let mut length = 0u32;
        for token in tokens(&self.stemmer, text) {
            length += 1;
            let next = self.terms.len() as u32;
            let term = *self.terms.entry(token.into_boxed_str()).or_insert(next);
            if term == next {
                self.postings.push(Vec::new());
            }
            let n = self.counts.entry(term).or_default();
            *n = n.saturating_add(1);
        }
        for (&term, &n) in &self.counts {
            self.postings[term as usize].push((row, n));
        }
        self.lengths.push(length);
    }

    /// Bytes the index takes so far (postings, lengths and the vocabulary), roughly.
    pub fn bytes(&self) -> usize {
        index_bytes(&self.terms, &self.postings, &self.lengths)
    }

    /// The finished index.
    pub fn finish(self) -> Bm25 {
        let rows = self.lengths.len();
        let total: u64 = self.lengths.iter().map(|&l| u64::from(l)).sum();
        let mut postings = self.postings;
        for p in &mut postings {
            // Rows were added in order, but a row's terms came from a map.
            p.sort_unstable_by_key(|&(row, _)| row);
            p.shrink_to_fit();
        }
        Bm25 {
            terms: self.terms,
            postings,
            lengths: self.lengths,
            average_length: if rows == 0 {
                0.0
            } else {
                total as f32 / rows as f32
            },
        }
    }
}

/// An inverted index of the rows' texts, scored by BM25.
pub struct Bm25 {
    terms: HashMap<Box<str>, u32>,
    postings: Vec<Vec<(u32, u16)>>,
    lengths: Vec<u32>,
    average_length: f32,
}

impl std::fmt::Debug for Bm25 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_sizes(f, "Bm25", self.lengths.len(), self.terms.len())
    }
}

impl Bm25 {
    /// Bytes the index takes (postings, lengths and the vocabulary), roughly.
    pub fn bytes(&self) -> usize {
        index_bytes(&self.terms, &self.postings, &self.lengths)
    }

    /// Rows indexed.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether no row is indexed.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The `k` best rows for `query` among those `admitted` says (by row number; every
    /// row when it is shorter than the index), best first, ties in row order; rows that
    /// share no token with the query are not returned.
    pub fn search(&self, query: &str, k: usize, admitted: &[bool]) -> Vec<(f32, usize)> {
        if k == 0 || self.is_empty() {
            return Vec::new();
        }
        let rows = self.lengths.len() as f32;
        let stemmer = Stemmer::new(Algorithm::English);
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for token in tokens(&stemmer, query) {
            let Some(&term) = self.terms.get(token.as_str()) else {
                continue;
            };
            let postings = &self.postings[term as usize];
            let n = postings.len() as f32;
            let idf = (1.0 + (rows - n + 0.5) / (n + 0.5)).ln();
            for &(row, tf) in postings {
                if !admitted.get(row as usize).copied().unwrap_or(true) {
                    continue;
                }
                let tf = f32::from(tf);
                let length = self.lengths[row as usize] as f32;
                let norm = K1 * (1.0 - B + B * length / self.average_length.max(f32::EPSILON));
                *scores.entry(row).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        best_k(
            scores
                .into_iter()
                .map(|(row, s)| (s, row as usize))
                .collect(),
            k,
        )
    }
}

/// The `k` best of `scored` (score, row), best first, ties in row order.
pub(super) fn best_k(mut scored: Vec<(f32, usize)>, k: usize) -> Vec<(f32, usize)> {
    let best_first = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, best_first);
        scored.truncate(k);
    }
    scored.sort_unstable_by(best_first);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(texts: &[&str]) -> Bm25 {
        let mut b = Bm25Builder::default();
        for t in texts {
            b.push(t);
        }
        b.finish()
    }

    #[test]
    fn scores_follow_okapi_bm25() {
        let bm25 = index(&["validate token validatetoken", "parse token", "render page"]);
        let hits = bm25.search("validate token", 10, &[]);
        // "validate": n = 1 of N = 3; "token": n = 2; row 0 has both (length 3), row 1 one
        // (length 2); average length 7/3.
        let idf = |n: f32| (1.0f32 + (3.0 - n + 0.5) / (n + 0.5)).ln();
        let part = |tf: f32, len: f32| tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / (7.0 / 3.0)));
        let row0 = idf(1.0) * part(1.0, 3.0) + idf(2.0) * part(1.0, 3.0);
        let row1 = idf(2.0) * part(1.0, 2.0);
        assert_eq!(hits.len(), 2, "a row with no query token is not returned");
        assert_eq!(hits[0].1, 0);
        assert!((hits[0].0 - row0).abs() < 1e-5, "{} vs {row0}", hits[0].0);
        assert_eq!(hits[1].1, 1);
        assert!((hits[1].0 - row1).abs() < 1e-5);
    }

    #[test]
    fn tokens_are_stemmed_and_filtered_rows_left_out() {
        let bm25 = index(&["runs the runner", "running tests", "run"]);
        let all: Vec<usize> = bm25
            .search("run", 10, &[])
            .into_iter()
            .map(|h| h.1)
            .collect();
        assert_eq!(all.len(), 3, "run, runs and running share a stem: {all:?}");
        assert_eq!(all[0], 2, "the shortest text ranks first at equal counts");
        let some: Vec<usize> = bm25
            .search("run", 10, &[true, false, true])
            .into_iter()
            .map(|h| h.1)
            .collect();
        assert!(!some.contains(&1));
        assert_eq!(bm25.search("run", 1, &[]).len(), 1);
        assert!(bm25.search("absent", 10, &[]).is_empty());
        let long = "x".repeat(41);
        assert!(index(&[&long]).search(&long, 10, &[]).is_empty());
    }
}
