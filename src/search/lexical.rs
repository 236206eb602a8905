//! The lexical query (pure): the question's words, identifier-split like the indexed
//! `search_text`, without English function words.
//!
//! The full-text index keeps every word (code names are made of words like `until`,
//! `while`, `once`, `before`, `first`, `last`), so the query drops the function words
//! itself: in code, prose words are rare (they live in comments), which gives them a high
//! IDF, and a question's "the", "of", "which" would otherwise rank comment-heavy chunks
//! first. Words that commonly name behaviour in code are kept even when a generic stop
//! list would drop them.

use crate::text::search_text;

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

/// The BM25 query for a natural-language question: identifier-split words (as in
/// [`search_text`]), function words removed. Falls back to all words when every word is
/// a function word.
///
/// ```
/// use sextant::search::lexical_query;
/// assert_eq!(lexical_query("Where is the token validated?"), "token validated");
/// assert_eq!(lexical_query("emit until the notifier fires"), "emit until notifier fires");
/// assert_eq!(lexical_query("call validateToken"), "call validate token validatetoken");
/// ```
pub fn lexical_query(question: &str) -> String {
    let all = search_text(question);
    let kept: Vec<&str> = all
        .split(' ')
        .filter(|w| !w.is_empty() && STOP_WORDS.binary_search(w).is_err())
        .collect();
    if kept.is_empty() { all } else { kept.join(" ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_list_is_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn only_stop_words_fall_back_to_the_whole_query() {
        assert_eq!(lexical_query("what is this"), "what is this");
        assert_eq!(lexical_query(""), "");
    }
}
