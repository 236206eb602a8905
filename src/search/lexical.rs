//! The lexical query (pure): the question's words, identifier-split like the indexed
//! `search_text`, without English function words.
//!
//! The full-text index keeps every word (code names are made of words like `until`,
//! `while`, `once`, `before`, `first`, `last`), so the query drops the function words
//! itself: in code, prose words are rare (they live in comments), which gives them a high
//! IDF, and a question's "the", "of", "which" would otherwise rank comment-heavy chunks
//! first. Words that commonly name behaviour in code are kept even when a generic stop
//! list would drop them.

use std::collections::BTreeSet;

use frostem::{Algorithm, Stemmer};
use rustc_hash::FxHashSet;

use crate::chunk::CodeChunk;
use crate::text::{search_text, search_words};

/// English function words dropped from queries (a standard list minus words that name
/// behaviour in code: after, before, between, down, each, first, last, off, on, once,
/// only, out, over, same, under, until, up, while, all, any, few, more, most, other,
/// some, not, no, again, against, into, through, during, above, below, further).
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "am",
    "an",
    "and",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "being",
    "both",
    "but",
    "by",
    "can",
    "could",
    "couldn",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "for",
    "from",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "my",
    "myself",
    "nor",
    "of",
    "or",
    "our",
    "ours",
    "ourselves",
    "own",
    "s",
    "she",
    "should",
    "shouldn",
    "so",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "to",
    "too",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Most words a lexical query keeps: BM25's cost (and LanceDB's allocations for a flat
/// scan of rows not yet in the full-text index) grows with the number of terms.
pub const MAX_QUERY_TERMS: usize = 64;

/// The BM25 query for a natural-language question: identifier-split words (as in
/// [`search_text`]), function words removed, at most [`MAX_QUERY_TERMS`] of them. Falls
/// back to all words when every word is a function word.
///
/// ```
/// use sextant::search::lexical_query;
/// assert_eq!(lexical_query("Where is the token validated?"), "token validated");
/// assert_eq!(lexical_query("emit until the notifier fires"), "emit until notifier fires");
/// assert_eq!(lexical_query("call validateToken"), "call validate token validatetoken");
/// ```
pub fn lexical_query(question: &str) -> String {
    let all = search_text(question);
    let words = || all.split(' ').filter(|w| !w.is_empty());
    let kept: Vec<&str> = words()
        .filter(|w| STOP_WORDS.binary_search(w).is_err())
        .take(MAX_QUERY_TERMS)
        .collect();
    if kept.is_empty() {
        words().take(MAX_QUERY_TERMS).collect::<Vec<_>>().join(" ")
    } else {
        kept.join(" ")
    }
}

/// The distinct words of a [`lexical_query`], stemmed (Snowball English, as LanceDB's
/// full-text index stems): what [`coverage`] looks for in a candidate.
pub fn query_terms(lexical_query: &str) -> BTreeSet<String> {
    let stemmer = Stemmer::new(Algorithm::English);
    lexical_query
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| stemmer.stem(w).into_owned())
        .collect()
}

/// Share of `terms` (from [`query_terms`]) found in the symbol's own text: its path,
/// JSDoc and whole source, identifier-split. 0..1; 0 when there are no terms.
pub fn coverage(terms: &BTreeSet<String>, chunk: &CodeChunk) -> f32 {
    // Not the breadcrumb: a parent's name would lend its words to every member (all of
    // `ThrottleConfig`'s fields would cover "throttle").
    share_found(
        terms,
        &[
            &chunk.relative_path,
            chunk.jsdoc.as_deref().unwrap_or(""),
            &chunk.full_source,
        ],
    )
}

/// Share of `terms` among the stemmed words of `texts` (read as [`search_words`] splits
/// them), without building their search text: this runs for every candidate of every
/// question.
fn share_found(terms: &BTreeSet<String>, texts: &[&str]) -> f32 {
    if terms.is_empty() {
        return 0.0;
    }
    // Code repeats its words: stem each distinct word once, and only words that start
    // like a term (stemming rewrites endings, never the first letter).
    let initials: Vec<char> = terms.iter().filter_map(|t| t.chars().next()).collect();
    let stemmer = Stemmer::new(Algorithm::English);
    let mut seen: FxHashSet<String> = FxHashSet::default();
    let mut found: FxHashSet<&str> = FxHashSet::default();
    for text in texts {
        search_words(text, |word| {
            if found.len() == terms.len()
                || !word.chars().next().is_some_and(|c| initials.contains(&c))
                || seen.contains(word)
            {
                return;
            }
            seen.insert(word.to_string());
            if let Some(term) = terms.get(stemmer.stem(word).as_ref()) {
                found.insert(term);
            }
        });
    }
    found.len() as f32 / terms.len() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_counts_distinct_stemmed_question_words() {
        let terms = query_terms(&lexical_query(
            "Which function emits the values until the notifier emits?",
        ));
        assert_eq!(
            terms.iter().map(String::as_str).collect::<Vec<_>>(),
            ["emit", "function", "notifi", "until", "valu"]
        );
        let text = "take until takeuntil notifier observable input source subscribe emitted";
        assert!((share_found(&terms, &[text]) - 3.0 / 5.0).abs() < 1e-6);
        assert_eq!(share_found(&terms, &["nothing here"]), 0.0);
        assert_eq!(share_found(&BTreeSet::new(), &[text]), 0.0);
        // Code is split as the search text splits it, across several texts.
        assert!(
            (share_found(
                &terms,
                &["src/takeUntil.ts", "", "notifier.subscribe(emitValue)"]
            ) - 4.0 / 5.0)
                .abs()
                < 1e-6
        );
    }

    #[test]
    fn stop_list_is_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn long_questions_are_cut_to_the_term_cap() {
        let q = lexical_query(&"the parser emits tokens ".repeat(5_000));
        assert_eq!(q.split(' ').count(), MAX_QUERY_TERMS);
        assert!(q.starts_with("parser emits tokens parser "));
        let stop_only = lexical_query(&"the ".repeat(1000));
        assert_eq!(stop_only.split(' ').count(), MAX_QUERY_TERMS);
    }

    #[test]
    fn only_stop_words_fall_back_to_the_whole_query() {
        assert_eq!(lexical_query("what is this"), "what is this");
        assert_eq!(lexical_query(""), "");
    }
}
