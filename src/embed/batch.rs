//! Token-aware batching: split many texts into calls a provider accepts.
//!
//! Token counts here are estimates ([`crate::text::estimate_tokens`]); providers are
//! given limits with head-room, and texts longer than a model's input are truncated by
//! the model (local tokenizers) or the provider (`truncation`), never rejected.

use std::ops::Range;

use crate::text::estimate_tokens;

/// How much one call to a model may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// Most texts in one call.
    pub max_texts: usize,
    /// Most (estimated) tokens in one call, summed over its texts.
    pub max_tokens: usize,
    /// Tokens of one text the model reads; longer texts count as this many (the rest is
    /// truncated).
    pub max_text_tokens: usize,
}

impl BatchLimits {
    /// `texts` texts of at most `text_tokens` tokens each, whatever their total: a local
    /// model's batch.
    pub const fn texts_of(texts: usize, text_tokens: usize) -> Self {
        Self {
            max_texts: texts,
            max_tokens: texts * text_tokens,
            max_text_tokens: text_tokens,
        }
    }
}

/// Splits `texts` into consecutive ranges, each within `limits`. Every range holds at
/// least one text, so a single over-long text still gets its own call.
pub fn plan_batches(texts: &[String], limits: BatchLimits) -> Vec<Range<usize>> {
    let max_texts = limits.max_texts.max(1);
    let mut batches = Vec::new();
    let mut start = 0;
    let mut tokens = 0;
    for (i, text) in texts.iter().enumerate() {
        let cost = estimate_tokens(text).clamp(1, limits.max_text_tokens.max(1));
        let full = i - start >= max_texts || (i > start && tokens + cost > limits.max_tokens);
        if full {
            batches.push(start..i);
            start = i;
            tokens = 0;
        }
        tokens += cost;
    }
    if start < texts.len() {
        batches.push(start..texts.len());
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lens: &[usize]) -> Vec<String> {
        lens.iter().map(|&n| "a".repeat(n * 4)).collect()
    }

    #[test]
    fn splits_on_text_count_and_token_sum() {
        let limits = BatchLimits {
            max_texts: 3,
            max_tokens: 10,
            max_text_tokens: 8,
        };
        // 4+4 fit, the third (4) would make 12 > 10.
        assert_eq!(plan_batches(&texts(&[4, 4, 4]), limits), vec![0..2, 2..3]);
        // Count limit.
        assert_eq!(
            plan_batches(&texts(&[1; 7]), limits),
            vec![0..3, 3..6, 6..7]
        );
        // An over-long text counts as max_text_tokens and still gets a batch.
        assert_eq!(plan_batches(&texts(&[100, 1]), limits), vec![0..2]);
        assert_eq!(plan_batches(&texts(&[100, 100]), limits), vec![0..1, 1..2]);
        assert!(plan_batches(&[], limits).is_empty());
    }

    #[test]
    fn every_text_is_in_exactly_one_batch() {
        let lens: Vec<usize> = (0..200).map(|i| (i * 37) % 90 + 1).collect();
        let t = texts(&lens);
        let limits = BatchLimits {
            max_texts: 16,
            max_tokens: 300,
            max_text_tokens: 64,
        };
        let batches = plan_batches(&t, limits);
        let mut next = 0;
        for b in &batches {
            assert_eq!(b.start, next);
            assert!(!b.is_empty() && b.len() <= 16);
            let sum: usize = t[b.clone()]
                .iter()
                .map(|s| estimate_tokens(s).min(64))
                .sum();
            assert!(sum <= 300 || b.len() == 1);
            next = b.end;
        }
        assert_eq!(next, t.len());
    }
}
