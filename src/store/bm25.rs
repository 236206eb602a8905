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

/// Appends `n` to `out` as a LEB128 varint (seven bits a byte, low first).
fn put_varint(out: &mut Vec<u8>, mut n: u32) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads a varint written by [`put_varint`] at `*at`, moving past it (`None` at the end).
fn take_varint(bytes: &[u8], at: &mut usize) -> Option<u32> {
    let mut n = 0u32;
    let mut shift = 0;
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        n |= u32::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(n);
        }
        shift += 7;
    }
}

/// One term's postings while rows are added: (row gap, occurrences) pairs as varints.
#[derive(Default)]
struct Postings {
    bytes: Vec<u8>,
    /// Rows holding the term.
    rows: u32,
    /// The last row added (the next gap is taken from it).
    last: u32,
}

/// Builds a [`Bm25`] row by row.
pub struct Bm25Builder {
    stemmer: Stemmer,
    terms: HashMap<Box<str>, u32>,
    postings: Vec<Postings>,
    lengths: Vec<u32>,
    counts: HashMap<u32, u16>,
    /// [`Bm25Builder::bytes`], kept as rows are added (a load asks at every batch).
    bytes: usize,
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
            bytes: 0,
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
            let token_bytes = token.len();
            let term = *self.terms.entry(token.into_boxed_str()).or_insert(next);
            if term == next {
                self.postings.push(Postings::default());
                self.bytes += token_bytes + 24 + std::mem::size_of::<Postings>();
            }
            let n = self.counts.entry(term).or_default();
            *n = n.saturating_add(1);
        }
        // Each row adds at most one posting per term, so a term's rows rise: gaps.
        for (&term, &n) in &self.counts {
            let p = &mut self.postings[term as usize];
            let before = p.bytes.capacity();
            put_varint(&mut p.bytes, if p.rows == 0 { row } else { row - p.last });
            put_varint(&mut p.bytes, u32::from(n));
            self.bytes += p.bytes.capacity() - before;
            p.rows += 1;
            p.last = row;
        }
        self.lengths.push(length);
        self.bytes += std::mem::size_of::<u32>();
    }

    /// Bytes the index takes so far (postings, lengths and the vocabulary, with a
    /// vector's or a key's own overhead each), roughly.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The finished index: the vocabulary sorted into one text, the postings into one
    /// array.
    pub fn finish(self) -> Bm25 {
        let rows = self.lengths.len();
        let total: u64 = self.lengths.iter().map(|&l| u64::from(l)).sum();
        let mut terms: Vec<(Box<str>, u32)> = self.terms.into_iter().collect();
        terms.sort_unstable();
        let mut index = Bm25 {
            words: String::with_capacity(terms.iter().map(|(t, _)| t.len()).sum()),
            word_ends: Vec::with_capacity(terms.len()),
            postings: Vec::with_capacity(self.postings.iter().map(|p| p.bytes.len()).sum()),
            posting_ends: Vec::with_capacity(terms.len()),
            rows_with: Vec::with_capacity(terms.len()),
            lengths: self.lengths,
            average_length: if rows == 0 {
                0.0
            } else {
                total as f32 / rows as f32
            },
        };
        let mut postings = self.postings;
        for (term, number) in terms {
            let p = std::mem::take(&mut postings[number as usize]);
            index.words.push_str(&term);
            index.word_ends.push(index.words.len() as u32);
            index.postings.extend_from_slice(&p.bytes);
            index.posting_ends.push(index.postings.len());
            index.rows_with.push(p.rows);
        }
        index
    }
}

/// An inverted index of the rows' texts, scored by BM25. Its terms are sorted and held
/// in one text; a term's postings are (row gap, occurrences) pairs as varints, all terms'
/// in one array: a few bytes a posting, none per term beyond its bounds.
pub struct Bm25 {
    /// Every term, in order, end to end.
    words: String,
    /// Where each term ends in `words`.
    word_ends: Vec<u32>,
    /// Every term's postings, in term order.
    postings: Vec<u8>,
    /// Where each term's postings end in `postings`.
    posting_ends: Vec<usize>,
    /// Per term: the rows that hold it.
    rows_with: Vec<u32>,
    lengths: Vec<u32>,
    average_length: f32,
}

impl std::fmt::Debug for Bm25 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_sizes(f, "Bm25", self.lengths.len(), self.word_ends.len())
    }
}

impl Bm25 {
    /// Bytes the index takes (postings, lengths and the vocabulary).
    pub fn bytes(&self) -> usize {
        self.words.capacity()
            + std::mem::size_of_val(self.word_ends.as_slice())
            + self.postings.capacity()
            + std::mem::size_of_val(self.posting_ends.as_slice())
            + std::mem::size_of_val(self.rows_with.as_slice())
            + std::mem::size_of_val(self.lengths.as_slice())
    }

    /// Rows indexed.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether no row is indexed.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Term number `i`'s text.
    fn word(&self, i: usize) -> &str {
        let start = i.checked_sub(1).map_or(0, |p| self.word_ends[p] as usize);
        &self.words[start..self.word_ends[i] as usize]
    }

    /// The number of term `token`, if any row holds it.
    fn term(&self, token: &str) -> Option<usize> {
        let (mut low, mut high) = (0, self.word_ends.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.word(mid).cmp(token) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Term `term`'s postings: (row, occurrences) in row order.
    fn postings(&self, term: usize) -> impl Iterator<Item = (u32, u32)> + '_ {
        let start = term.checked_sub(1).map_or(0, |p| self.posting_ends[p]);
        let bytes = &self.postings[start..self.posting_ends[term]];
        let mut at = 0;
        let mut row = 0u32;
        let mut first = true;
        std::iter::from_fn(move || {
            let gap = take_varint(bytes, &mut at)?;
            let tf = take_varint(bytes, &mut at)?;
            row = if first { gap } else { row + gap };
            first = false;
            Some((row, tf))
        })
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
            let Some(term) = self.term(&token) else {
                continue;
            };
            let n = self.rows_with[term] as f32;
            let idf = (1.0 + (rows - n + 0.5) / (n + 0.5)).ln();
            for (row, tf) in self.postings(term) {
                if !admitted.get(row as usize).copied().unwrap_or(true) {
                    continue;
                }
                let tf = tf as f32;
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
    fn postings_keep_every_row_and_count_far_apart() {
        // Rows far apart and counts past a byte: several bytes per varint.
        let mut b = Bm25Builder::default();
        let mut texts = vec![String::new(); 70_001];
        texts[0] = "alpha beta".into();
        texts[200] = "alpha ".repeat(300);
        texts[70_000] = "beta gamma alpha".into();
        for t in &texts {
            b.push(t);
        }
        let bm25 = b.finish();
        let alpha = bm25.term("alpha").expect("alpha indexed");
        assert_eq!(
            bm25.postings(alpha).collect::<Vec<_>>(),
            [(0, 1), (200, 300), (70_000, 1)]
        );
        assert_eq!(bm25.rows_with[alpha], 3);
        let gamma = bm25.term("gamma").expect("gamma indexed");
        assert_eq!(bm25.postings(gamma).collect::<Vec<_>>(), [(70_000, 1)]);
        for absent in ["", "a", "alphz", "zeta", "betaa"] {
            assert_eq!(bm25.term(absent), None, "{absent}");
        }
        let rows: Vec<usize> = bm25.search("alpha", 10, &[]).iter().map(|h| h.1).collect();
        assert_eq!(rows, [200, 0, 70_000]);
        let mut at = 0;
        let mut bytes = Vec::new();
        for n in [0, 127, 128, 16_383, 16_384, u32::MAX] {
            put_varint(&mut bytes, n);
        }
        for n in [0, 127, 128, 16_383, 16_384, u32::MAX] {
            assert_eq!(take_varint(&bytes, &mut at), Some(n));
        }
        assert_eq!(take_varint(&bytes, &mut at), None);
        // The running size is what a count of the parts gives.
        let mut b = Bm25Builder::default();
        for t in ["alpha beta alpha", "beta gamma", &"delta ".repeat(500)] {
            b.push(t);
        }
        let counted: usize = b
            .postings
            .iter()
            .map(|p| p.bytes.capacity() + std::mem::size_of::<Postings>())
            .sum::<usize>()
            + b.terms.keys().map(|t| t.len() + 24).sum::<usize>()
            + b.lengths.len() * 4;
        assert_eq!(b.bytes(), counted);
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
