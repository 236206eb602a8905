//! Pure scoring: fusion of the stage-1 lists, the blended `finalScore`, parent/child
//! de-duplication and the dual-constraint selection (relevance gate, then token budget).
//!
//! Score scales, so that `minimumRelevanceThreshold` means the same thing everywhere:
//!
//! - vector similarity: cosine similarity of the query and chunk vectors, clamped to
//!   0..1 (computed exactly for every candidate, whichever retriever found it);
//! - with a reranker: `finalScore = rerank × rerankWeight + vector × vectorWeight`, the
//!   blueprint's blend (rerank scores outside 0..1, e.g. raw logits, go through a
//!   logistic first);
//! - without one, `finalScore` is the fused score: normalised RRF (1.0 = ranked first by
//!   every retriever used; 0.5 = ranked first by one of two and missed by the other) or,
//!   with `Fusion::Blend`, the weighted mean of the vector similarity and the lexical
//!   evidence ([`lexical_evidence`]: the BM25 score divided by the query's best BM25
//!   score, scaled down when the candidate holds less than [`FULL_COVERAGE`] of the
//!   question's words, so that a single rare word shared with an unrelated question does
//!   not carry a result past the gate).

use serde::Serialize;

/// Scores of one candidate through the stages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageScores {
    /// Cosine similarity to the query, clamped to 0..1 (`None` for symbol lookups).
    pub vector: Option<f32>,
    /// 1-based rank in the vector list, when it was in it.
    pub vector_rank: Option<usize>,
    /// BM25 score, when the lexical list had it.
    pub lexical: Option<f32>,
    /// 1-based rank in the BM25 list, when it was in it.
    pub lexical_rank: Option<usize>,
    /// Fused stage-1 score (0..1).
    pub fused: f32,
    /// Reranker score (0..1), when a reranker ran.
    pub rerank: Option<f32>,
    /// What the ranking priors added to (or, negative, took from) the score
    /// ([`crate::search::prior`]), when they ran.
    pub prior: Option<f32>,
    /// The score that orders, gates and prioritises results.
    pub final_score: f32,
    /// The score the relevance gate reads instead of `finalScore`, when they differ:
    /// answers to sentences are ordered with `sentenceLexicalWeight` and gated with
    /// `lexicalWeight`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<f32>,
}

impl StageScores {
    /// The score the relevance gate compares with the threshold.
    pub fn relevance(&self) -> f32 {
        self.gate.unwrap_or(self.final_score)
    }
}

/// Normalised reciprocal rank fusion: `Σ wᵢ/(k + rankᵢ)` over the lists that ranked the
/// candidate, divided by `Σ wᵢ/(k + 1)` over the lists used, so the result lies in 0..1.
/// `lists` holds (rank if present, weight) for every list used.
pub fn rrf(lists: &[(Option<usize>, f32)], k: f32) -> f32 {
    let best: f32 = lists.iter().map(|(_, w)| w / (k + 1.0)).sum();
    if best <= 0.0 {
        return 0.0;
    }
    let got: f32 = lists
        .iter()
        .filter_map(|(rank, w)| rank.map(|r| w / (k + r as f32)))
        .sum();
    (got / best).clamp(0.0, 1.0)
}

/// Weighted mean of the vector similarity (0..1) and the BM25 score relative to the
/// query's best (0..1); a retriever not used gets weight 0.
pub fn blend_scores(
    vector: Option<f32>,
    vector_weight: f32,
    lexical_relative: Option<f32>,
    lexical_weight: f32,
) -> f32 {
    let parts = [(vector, vector_weight), (lexical_relative, lexical_weight)];
    let total: f32 = parts.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return 0.0;
    }
    parts
        .iter()
        .map(|(s, w)| s.unwrap_or(0.0).clamp(0.0, 1.0) * w)
        .sum::<f32>()
        / total
}

/// Share of the question's distinct content words (see
/// [`query_terms`](super::query_terms)) a candidate must hold for its BM25 score to count
/// fully in the blend.
pub const FULL_COVERAGE: f32 = 0.3;

/// The lexical part of the blend: the BM25 score relative to the query's best
/// (`relative`, 0..1), times `min(1, coverage / FULL_COVERAGE)`. BM25 divided by the best
/// score always gives the best match 1.0, even when it shares one word with the question;
/// coverage keeps that from reading as relevance: a question about something the code
/// does not contain no longer returns its best BM25 match. (Ranking on the dev set moves
/// within noise; see docs/BENCHMARKS.md.)
pub fn lexical_evidence(relative: f32, coverage: f32) -> f32 {
    relative.clamp(0.0, 1.0) * (coverage / FULL_COVERAGE).clamp(0.0, 1.0)
}

/// The blueprint's blend: `rerank × rerank_weight + vector × vector_weight`.
pub fn final_score(rerank: f32, vector: f32, rerank_weight: f32, vector_weight: f32) -> f32 {
    rerank.clamp(0.0, 1.0) * rerank_weight + vector.clamp(0.0, 1.0) * vector_weight
}

/// Maps reranker output onto 0..1: kept as is when every score already lies there
/// (Voyage, Cohere), otherwise passed through the logistic function (raw logits).
pub fn normalize_rerank(scores: &[f32]) -> Vec<f32> {
    if scores.iter().all(|s| (0.0..=1.0).contains(s)) {
        scores.to_vec()
    } else {
        scores.iter().map(|s| 1.0 / (1.0 + (-s).exp())).collect()
    }
}

/// Where a candidate sits, for de-duplication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span<'a> {
    /// Repository id.
    pub repo: &'a str,
    /// Repository-relative path.
    pub path: &'a str,
    /// First line.
    pub start: u32,
    /// Last line.
    pub end: u32,
    /// A file outline: it stands beside the file's code, neither enclosing it nor inside
    /// it.
    pub outline: bool,
}

impl Span<'_> {
    /// Whether `self` strictly encloses `other` (same file, range contains it, not equal;
    /// never for an outline).
    pub fn encloses(&self, other: &Span<'_>) -> bool {
        !self.outline
            && !other.outline
            && self.repo == other.repo
            && self.path == other.path
            && self.start <= other.start
            && other.end <= self.end
            && (self.start, self.end) != (other.start, other.end)
    }
}

/// Parent/child de-duplication over candidates sorted best first: a candidate whose range
/// encloses, or lies inside, a better-ranked kept candidate's range (same file) is folded
/// into that one, so the same code is never returned twice. The better-ranked symbol
/// stays: a class ranked above its method already contains the method's source; a method
/// ranked above its class is shown inside the class wrapper by the snapshot. Returns, in
/// rank order, (index of the kept candidate, indices folded into it).
pub fn fold_enclosing(spans: &[Span<'_>]) -> Vec<(usize, Vec<usize>)> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, span) in spans.iter().enumerate() {
        let overlapping = out
            .iter_mut()
            .find(|(k, _)| spans[*k].encloses(span) || span.encloses(&spans[*k]));
        match overlapping {
            Some((_, folded)) => folded.push(i),
            None => out.push((i, Vec::new())),
        }
    }
    out
}

/// Outcome of the dual constraint.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// Indices of the returned candidates, best first.
    pub picked: Vec<usize>,
    /// Set when the best candidate alone exceeds the budget: it is returned truncated to
    /// this many tokens.
    pub truncated_to: Option<usize>,
    /// Tokens used.
    pub tokens: usize,
    /// Candidates that passed the relevance gate.
    pub passed_gate: usize,
}

/// The dual constraint over candidates in rank order: only those whose relevance
/// (`scores`) is at or above `threshold`, included in order while the budget lasts (seed
/// 003: "include until token budget is exhausted"); one that does not fit what is left
/// is passed over for the next ones that do, so that a long result does not leave the
/// rest of the budget empty. Never pads; a best result that alone exceeds the budget is
/// still returned, truncated.
pub fn select(scores: &[f32], tokens: &[usize], threshold: f32, budget: usize) -> Selection {
    let mut sel = Selection {
        passed_gate: scores.iter().filter(|s| **s >= threshold).count(),
        ..Selection::default()
    };
    let passing = tokens
        .iter()
        .enumerate()
        .filter(|(i, _)| scores.get(*i).is_some_and(|s| *s >= threshold));
    for (i, &cost) in passing {
        if sel.tokens + cost <= budget {
            sel.tokens += cost;
            sel.picked.push(i);
        } else if sel.picked.is_empty() {
            sel.picked.push(i);
            sel.truncated_to = Some(budget);
            sel.tokens = budget;
            break;
        }
    }
    sel
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blending_follows_the_blueprint_formula() {
        let cases = [
            (0.9, 0.8, 0.865),
            (0.5, 0.5, 0.5),
            (1.0, 0.0, 0.65),
            (0.0, 1.0, 0.35),
        ];
        for (rerank, vector, want) in cases {
            let got = final_score(rerank, vector, 0.65, 0.35);
            assert!(
                (got - want).abs() < 1e-6,
                "{rerank} {vector}: {got} != {want}"
            );
        }
        assert!((final_score(0.8, 0.6, 0.5, 0.5) - 0.7).abs() < 1e-6);
        // Out-of-range inputs are clamped, so the result stays in 0..1.
        assert!((final_score(1.7, -0.2, 0.65, 0.35) - 0.65).abs() < 1e-6);
    }

    #[test]
    fn rrf_is_normalised_to_one_for_a_unanimous_first() {
        let both = [(Some(1), 1.0), (Some(1), 1.0)];
        assert!((rrf(&both, 60.0) - 1.0).abs() < 1e-6);
        let one = [(Some(1), 1.0), (None, 1.0)];
        assert!((rrf(&one, 60.0) - 0.5).abs() < 1e-6);
        let low = [(Some(10), 1.0), (Some(20), 1.0)];
        let high = [(Some(2), 1.0), (Some(3), 1.0)];
        assert!(rrf(&high, 60.0) > rrf(&low, 60.0));
        assert_eq!(rrf(&[(None, 1.0), (None, 1.0)], 60.0), 0.0);
        // A single list: its first place is 1.0.
        assert!((rrf(&[(Some(1), 1.0)], 60.0) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn lexical_evidence_needs_coverage_of_the_question() {
        // Full weight from FULL_COVERAGE up, in proportion below it.
        assert!((lexical_evidence(1.0, 0.5) - 1.0).abs() < 1e-6);
        assert!((lexical_evidence(0.8, FULL_COVERAGE) - 0.8).abs() < 1e-6);
        assert!((lexical_evidence(1.0, FULL_COVERAGE / 2.0) - 0.5).abs() < 1e-6);
        assert_eq!(lexical_evidence(1.0, 0.0), 0.0);
        // The best BM25 match sharing one word of five with the question stays below a
        // 0.5 gate even with a fair vector similarity.
        let blended = blend_scores(Some(0.2), 1.0, Some(lexical_evidence(1.0, 0.2)), 1.0);
        assert!(blended < 0.5, "{blended}");
    }

    #[test]
    fn blend_is_a_weighted_mean_in_unit_range() {
        assert!((blend_scores(Some(0.8), 1.0, Some(0.4), 1.0) - 0.6).abs() < 1e-6);
        assert!((blend_scores(Some(0.8), 1.0, None, 1.0) - 0.4).abs() < 1e-6);
        assert!((blend_scores(Some(0.8), 1.0, Some(1.0), 0.0) - 0.8).abs() < 1e-6);
        assert_eq!(blend_scores(None, 0.0, None, 0.0), 0.0);
    }

    #[test]
    fn rerank_logits_are_squashed_and_probabilities_kept() {
        assert_eq!(normalize_rerank(&[0.2, 0.9]), vec![0.2, 0.9]);
        let squashed = normalize_rerank(&[-3.0, 0.0, 4.0]);
        assert!(squashed[0] < 0.1 && (squashed[1] - 0.5).abs() < 1e-6 && squashed[2] > 0.95);
    }

    #[test]
    fn relevance_gate_keeps_only_passing_candidates() {
        // 10 candidates, 3 above the threshold.
        let scores = [0.9, 0.8, 0.6, 0.45, 0.4, 0.3, 0.2, 0.1, 0.05, 0.01];
        let sel = select(&scores, &[100; 10], 0.5, 8000);
        assert_eq!(sel.picked, vec![0, 1, 2]);
        assert_eq!(sel.passed_gate, 3);
        assert_eq!(sel.tokens, 300);
    }

    #[test]
    fn token_budget_limits_passing_candidates() {
        // 10 pass, the budget fits 5.
        let scores = [0.9; 10];
        let sel = select(&scores, &[1000; 10], 0.5, 5500);
        assert_eq!(sel.picked, vec![0, 1, 2, 3, 4]);
        assert_eq!(sel.tokens, 5000);
    }

    #[test]
    fn combined_constraint_takes_the_tighter_one() {
        // 4 pass the gate, the budget fits 3.
        let scores = [0.9, 0.85, 0.7, 0.6, 0.4, 0.4, 0.3, 0.2, 0.1, 0.0];
        let sel = select(&scores, &[1000; 10], 0.5, 3000);
        assert_eq!(sel.picked, vec![0, 1, 2]);
        assert_eq!(sel.passed_gate, 4);
    }

    #[test]
    fn single_and_empty_selections() {
        let sel = select(&[0.7, 0.3], &[10, 10], 0.5, 8000);
        assert_eq!(sel.picked, vec![0]);
        assert_eq!(select(&[], &[], 0.5, 8000), Selection::default());
        assert!(select(&[0.2, 0.1], &[10, 10], 0.5, 8000).picked.is_empty());
    }

    #[test]
    fn the_gate_reads_relevance_not_rank_order() {
        // Ranked by one score, gated by another: the second candidate is ranked above
        // the third but is not relevant enough; the third is.
        let sel = select(&[0.8, 0.4, 0.6], &[10, 10, 10], 0.5, 8000);
        assert_eq!(sel.picked, vec![0, 2]);
        assert_eq!(sel.passed_gate, 2);
        let scores = StageScores {
            final_score: 0.7,
            gate: Some(0.45),
            ..StageScores::default()
        };
        assert_eq!(scores.relevance(), 0.45);
        assert_eq!(StageScores::default().relevance(), 0.0);
    }

    #[test]
    fn a_result_that_does_not_fit_is_passed_over_for_ones_that_do() {
        // A short best result, a long second: the budget goes to the next ones that fit,
        // in rank order, not left empty.
        let scores = [0.9, 0.8, 0.7, 0.6, 0.55, 0.3];
        let sel = select(&scores, &[10, 1300, 460, 400, 200, 5], 0.5, 1000);
        assert_eq!(sel.picked, vec![0, 2, 3]);
        assert_eq!(sel.tokens, 870);
        assert_eq!(sel.truncated_to, None);
    }

    #[test]
    fn an_over_budget_best_result_is_truncated_not_dropped() {
        let sel = select(&[0.9, 0.8], &[20_000, 100], 0.5, 8000);
        assert_eq!(sel.picked, vec![0]);
        assert_eq!(sel.truncated_to, Some(8000));
        assert_eq!(sel.tokens, 8000);
    }

    #[test]
    fn nested_candidates_fold_into_the_better_ranked_one() {
        let span = |path, start, end| Span {
            repo: "r",
            path,
            start,
            end,
            outline: false,
        };
        // 0: method a.ts 10-20, 1: its class 1-50, 2: other file, 3: nested fn 12-14.
        let spans = [
            span("a.ts", 10, 20),
            span("a.ts", 1, 50),
            span("b.ts", 1, 50),
            span("a.ts", 12, 14),
        ];
        assert_eq!(fold_enclosing(&spans), vec![(0, vec![1, 3]), (2, vec![])]);
        // A class ranked first keeps its place and absorbs its method.
        let class_first = [span("a.ts", 1, 50), span("a.ts", 10, 20)];
        assert_eq!(fold_enclosing(&class_first), vec![(0, vec![1])]);
        // Unrelated ranges are untouched.
        let apart = [span("a.ts", 1, 5), span("a.ts", 6, 9)];
        assert_eq!(fold_enclosing(&apart), vec![(0, vec![]), (1, vec![])]);
        // A file outline folds nothing and is folded into nothing.
        let outline = Span {
            outline: true,
            ..span("a.ts", 1, 50)
        };
        let with_outline = [outline, span("a.ts", 10, 20), span("a.ts", 1, 50)];
        assert_eq!(
            fold_enclosing(&with_outline),
            vec![(0, vec![]), (1, vec![2])]
        );
    }
}
