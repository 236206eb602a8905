//! Scout: budgeted impact exploration ("what breaks if I change X?"), after seed 002
//! (Semantic Scout) on Sextant's own symbol graph.
//!
//! Judgment is separate from decision. A [`Rater`] gives every link of the graph a
//! [`Rubric`] (relevance, risk, complexity, confidence, tags); the pure rule
//! [`should_expand`] decides from the rubric, the depth, the breadth and the budget whether
//! to explore further from it; [`explore`] runs the breadth-first loop over any
//! [`ScoutGraph`]; [`synthesize`] turns what was visited into a summary and pointers.
//!
//! Everything here is pure except the graph, which the service implements over the stores
//! ([`crate::service`]). The default rater ([`StructuralRater`]) is offline and
//! deterministic: it rates from what the graph and the syntax say.
//!
//! # Design notes
//!
//! - The seed's split of judgment and decision: a `Rater` gives each link a `Rubric`
//!   (relevance, risk, complexity, confidence 1–5, tags); `should_expand` is the seed's
//!   formula verbatim (relevance·2 + risk·1.5 + matching tags·3 + confidence·0.5 − depth·2 −
//!   complexity·0.5 − 3 at a node with more than 5 links, expanded above 8.0), its
//!   coefficients in `ExpandRule`, configured as JSON over the defaults (`--scout-rule`,
//!   `SEXTANT_SCOUT_RULE`).
//! - `explore`: breadth first from the seeds; each explored node's links are fetched
//!   (`ScoutGraph::links`), deduplicated (one rating per neighbour, a node is explored once,
//!   cycles end), rated in one batch and expanded by the rule. The budget is the number of
//!   nodes explored, seeds included (the seed's loop spends budget when it queues a node;
//!   counting the seeds too makes it exact).
//! - `StructuralRater` (default, offline, deterministic; its rules are in its doc comment):
//!   imports and re-exports are safe to ignore; a `switch` over an enum's members or a
//!   union's literals, a `Record<T, …>` or a mapped type over `T` are high risk
//!   (`pattern-match`, `exhaustive`, `record`); implementations, overrides and subclasses
//!   are high risk; call sites are high risk next to the symbol and low further out; type
//!   uses and other references are worth a look.
//! - `synthesize`: pointers (medium and high risk, most risky and nearest first) with an
//!   action each where something must change; the summary says how many must change, what is
//!   worth a look, and what was ignored and why.
//! - The service (`service::scout`) resolves the query to seeds: `symbol = …`, else the
//!   question's identifiers (code-like words first: inner capitals, `_`, digits; then
//!   capitalised words; then the rest), else the hybrid search's best result. Different
//!   symbols sharing the name are not guessed: their `symbol = …` forms come back in the
//!   interpretation. Its `ScoutGraph` reads `edges_to` (calls, references, extends,
//!   implements, type uses), a member's overrides (the same name in subclasses or
//!   implementations of its class or interface) and, next to the symbol, the import and
//!   re-export statements that reach its file, following barrels (`imports_of`). An
//!   exploration takes one of the search slots.
//! - Surfaces: `POST /api/v1/scout` (one JSON answer, or with `Accept: text/event-stream` a
//!   `progress` event per rated link then `result`), the MCP tool `scout` (progress
//!   notifications per rated link when the call carries a progress token), `sextant scout`
//!   (local or `--server`).
//! - Optional chat model (`--scout-model-url`, `--scout-model`, any OpenAI-compatible
//!   endpoint; `embed::OpenAiChat` behind `scout::Chat`): `LlmRater` sends the seed's rating
//!   prompt per batch of 10 links, validates the JSON (an array of rubrics, each dimension
//!   1–5, tags limited to the caller's), asks once more, then falls back to the structural
//!   rating with confidence 1; `synthesize_with` uses the seed's synthesis prompt for the
//!   summary (the deterministic one when the model fails). Pointers and actions stay
//!   deterministic.
//!   Fixtures: `fixtures/scout/` (the issue's five scenarios), checked by `tests/it/scout.rs`.

mod explore;
mod llm;
mod rater;
mod synthesize;

use serde::{Deserialize, Serialize};

pub use explore::{Exploration, ScoutGraph, explore};
pub use llm::{
    Chat, LLM_BATCH, LlmRater, parse_ratings, rating_prompt, synthesis_prompt, synthesize_with,
};
pub use rater::{Rater, Rating, StructuralRater, rate_link};
pub use synthesize::synthesize;

/// Nodes explored when the caller does not say.
pub const DEFAULT_BUDGET: u32 = 20;

/// Most nodes one request may explore.
pub const MAX_BUDGET: u32 = 200;

/// What the caller asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoutQuery {
    /// Natural language, fuzzy is fine ("LLMKind - adding a fourth variant"), or
    /// `symbol = path > Parent > name`.
    pub text: String,
    /// Interest signals (`exhaustive`, `call-site`…); links with these tags score higher.
    pub tags: Vec<String>,
    /// Most nodes to explore.
    pub budget: u32,
}

/// One rating of one link, each dimension 1–5 (the seed's rubric).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Rubric {
    /// How on-topic for the query.
    pub relevance: u8,
    /// How likely to break, or to matter, if the symbol changes.
    pub risk: u8,
    /// How much context is needed to understand it.
    pub complexity: u8,
    /// How sure the rating is.
    pub confidence: u8,
    /// Which tags apply (the caller's, and the rater's own vocabulary).
    pub tags: Vec<String>,
}

/// The coefficients and threshold of [`should_expand`]; the defaults are the seed's.
/// Configured as JSON with camelCase names (`--scout-rule '{"threshold": 10}'`); a name
/// left out keeps its default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ExpandRule {
    /// Weight of relevance (2.0).
    pub relevance: f32,
    /// Weight of risk (1.5).
    pub risk: f32,
    /// Weight of each of the caller's tags the rubric matches (3.0).
    pub tag_match: f32,
    /// Weight of confidence (0.5).
    pub confidence: f32,
    /// Penalty per level of depth (2.0).
    pub depth: f32,
    /// Penalty per point of complexity (0.5).
    pub complexity: f32,
    /// Penalty at a node with more than `wide_breadth` links (3.0).
    pub wide_penalty: f32,
    /// Links beyond which a node is wide (5).
    pub wide_breadth: u32,
    /// Expand when the score is above this (8.0).
    pub threshold: f32,
}

impl Default for ExpandRule {
    fn default() -> Self {
        Self {
            relevance: 2.0,
            risk: 1.5,
            tag_match: 3.0,
            confidence: 0.5,
            depth: 2.0,
            complexity: 0.5,
            wide_penalty: 3.0,
            wide_breadth: 5,
            threshold: 8.0,
        }
    }
}

impl ExpandRule {
    /// The rule written as JSON (`{"threshold": 10, "depth": 3}`), checked: every number
    /// finite and not negative.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let rule: Self = serde_json::from_str(text).map_err(|e| {
            format!(
                "the scout rule must be JSON such as {{\"threshold\": 10}} with the names \
                 relevance, risk, tagMatch, confidence, depth, complexity, widePenalty, \
                 wideBreadth, threshold: {e}"
            )
        })?;
        let numbers = [
            rule.relevance,
            rule.risk,
            rule.tag_match,
            rule.confidence,
            rule.depth,
            rule.complexity,
            rule.wide_penalty,
            rule.threshold,
        ];
        if numbers.iter().any(|n| !n.is_finite() || *n < 0.0) {
            return Err("every number of the scout rule must be finite and not negative".into());
        }
        Ok(rule)
    }

    /// The seed's score of a rubric at this depth and breadth.
    pub fn score(&self, rubric: &Rubric, query_tags: &[String], depth: u32, breadth: u32) -> f32 {
        let tag_matches = rubric
            .tags
            .iter()
            .filter(|t| query_tags.contains(t))
            .count();
        f32::from(rubric.relevance) * self.relevance
            + f32::from(rubric.risk) * self.risk
            + tag_matches as f32 * self.tag_match
            + f32::from(rubric.confidence) * self.confidence
            - depth as f32 * self.depth
            - f32::from(rubric.complexity) * self.complexity
            - if breadth > self.wide_breadth {
                self.wide_penalty
            } else {
                0.0
            }
    }
}

/// Whether to explore further from a link: exactly the seed's rule (`score > threshold`,
/// never with no budget left).
pub fn should_expand(
    rule: &ExpandRule,
    rubric: &Rubric,
    query_tags: &[String],
    depth: u32,
    breadth: u32,
    remaining_budget: u32,
) -> bool {
    if remaining_budget == 0 {
        return false;
    }
    rule.score(rubric, query_tags, depth, breadth) > rule.threshold
}

/// A symbol as Scout sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Node {
    /// Repository id.
    pub repo_id: String,
    /// Chunk id (unique within the repository).
    pub chunk_id: String,
    /// File, relative to the repository root.
    pub path: String,
    /// Its name.
    pub name: String,
    /// `Parent > name`.
    pub breadcrumb: String,
    /// Symbol kind (`function`, `method`, `enum`, `type`…).
    pub kind: String,
    /// Signature.
    pub signature: String,
    /// First line.
    pub start_line: i64,
    /// Last line.
    pub end_line: i64,
    /// The enclosing symbol's chunk id (a method's class).
    pub parent: Option<String>,
}

impl Node {
    /// `path:line`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.path, self.start_line)
    }
}

/// How a neighbour relates to the node being explored (`neighbour <relation> node`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, strum::IntoStaticStr, utoipa::ToSchema,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Relation {
    /// The neighbour calls the node.
    Calls,
    /// The neighbour names the node (reads it, passes it, re-exports it…).
    References,
    /// The neighbour (a class or interface) extends the node.
    Extends,
    /// The neighbour (a class) implements the node (an interface).
    Implements,
    /// The neighbour uses the node as a type.
    UsesType,
    /// The neighbour overrides the node (a method of a subclass, or a member an
    /// implementation of the node's interface provides).
    Overrides,
    /// The neighbour is a statement that imports the node's file.
    Imports,
}

/// One link to rate: `neighbour <relation> node`, found while exploring `node` at `depth`
/// (0 for the symbols the query names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The symbol found.
    pub neighbour: Node,
    /// How it relates to the explored node.
    pub relation: Relation,
    /// The explored node.
    pub node: Node,
    /// Line of the occurrence, when known.
    pub line: Option<i64>,
    /// Whether the graph resolved the link with certainty.
    pub certain: bool,
    /// The neighbour's source (for the syntax checks), possibly empty.
    pub source: String,
    /// Depth of the explored node.
    pub depth: u32,
}

impl Link {
    /// Where the link is: the occurrence's line, else the neighbour's first line.
    pub fn location(&self) -> String {
        format!(
            "{}:{}",
            self.neighbour.path,
            self.line.unwrap_or(self.neighbour.start_line)
        )
    }
}

/// A rated link: what Scout visited.
#[derive(Debug, Clone, PartialEq)]
pub struct VisitedNode {
    /// The link.
    pub link: Link,
    /// Its rating.
    pub rubric: Rubric,
    /// What to do about it, when something must be done.
    pub action: Option<String>,
    /// Whether Scout explored further from it.
    pub expanded: bool,
}

/// How much a pointer matters.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, strum::Display, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Risk {
    /// Safe to ignore.
    Low,
    /// Worth a look.
    Medium,
    /// Must change with the symbol.
    High,
}

impl Risk {
    /// The risk of a rubric: 4–5 high, 3 medium, 1–2 low.
    pub fn of(rubric: &Rubric) -> Self {
        match rubric.risk {
            4.. => Self::High,
            3 => Self::Medium,
            _ => Self::Low,
        }
    }
}

/// One place to look at.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Pointer {
    /// `path:line`.
    pub location: String,
    /// The symbol there and how it relates (`renderKind (function) switches over Kind`).
    pub what: String,
    /// What to do, when something must be done.
    pub action: Option<String>,
    /// How much it matters.
    pub risk: Risk,
    /// The rubric's tags.
    pub tags: Vec<String>,
}

/// What the exploration did.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScoutMeta {
    /// Nodes explored (their links fetched and rated).
    pub nodes_visited: u32,
    /// Links rated.
    pub links_rated: u32,
    /// Budget left at the end.
    pub budget_remaining: u32,
    /// What the query was taken to mean (`Matched enum Kind at src/kind.ts:1`), or the
    /// candidates when it was ambiguous.
    pub interpretation: String,
}

/// Scout's answer.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ScoutResponse {
    /// Markdown: a paragraph answering the query, the high-risk locations with actions,
    /// what was safely ignored and why.
    pub summary: String,
    /// Places to look at, most risky first (medium and high risk only).
    pub pointers: Vec<Pointer>,
    /// What the exploration did.
    pub meta: ScoutMeta,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rubric(relevance: u8, risk: u8, complexity: u8, confidence: u8, tags: &[&str]) -> Rubric {
        Rubric {
            relevance,
            risk,
            complexity,
            confidence,
            tags: tags.iter().map(|t| t.to_string()).collect(),
        }
    }

    /// The seed's coefficient table, term by term.
    #[test]
    fn the_score_follows_the_seeds_coefficients() {
        let rule = ExpandRule::default();
        let none: Vec<String> = Vec::new();
        let base = rubric(1, 1, 1, 1, &[]);
        let at = |r: &Rubric, tags: &[String], depth, breadth| rule.score(r, tags, depth, breadth);
        let zero = at(&base, &none, 0, 1);
        assert_eq!(zero, 2.0 + 1.5 + 0.5 - 0.5);
        assert_eq!(
            at(&rubric(2, 1, 1, 1, &[]), &none, 0, 1) - zero,
            2.0,
            "relevance"
        );
        assert_eq!(
            at(&rubric(1, 2, 1, 1, &[]), &none, 0, 1) - zero,
            1.5,
            "risk"
        );
        assert_eq!(
            at(&rubric(1, 1, 1, 2, &[]), &none, 0, 1) - zero,
            0.5,
            "confidence"
        );
        assert_eq!(
            at(&rubric(1, 1, 2, 1, &[]), &none, 0, 1) - zero,
            -0.5,
            "complexity"
        );
        assert_eq!(at(&base, &none, 1, 1) - zero, -2.0, "depth");
        assert_eq!(at(&base, &none, 0, 5), zero, "breadth 5 is not wide");
        assert_eq!(at(&base, &none, 0, 6) - zero, -3.0, "breadth over 5 is");
        let tags = vec!["exhaustive".to_string(), "call-site".to_string()];
        let tagged = rubric(1, 1, 1, 1, &["exhaustive", "call-site", "other"]);
        assert_eq!(at(&tagged, &tags, 0, 1) - zero, 6.0, "two matching tags");
    }

    /// The seed's example: Edges.hs:89, relevance 4, risk 5, complexity 2, confidence 5,
    /// three of four tags: expanded at the top, and the decision flips where the score
    /// crosses 8.0.
    #[test]
    fn expansion_follows_the_threshold_and_the_budget() {
        let rule = ExpandRule::default();
        let tags: Vec<String> = [
            "exhaustive",
            "pattern-match",
            "type-family",
            "breaks-on-add",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        let example = rubric(4, 5, 2, 5, &["type-family", "exhaustive", "breaks-on-add"]);
        // 8 + 7.5 + 9 + 2.5 - 1 = 26
        assert_eq!(rule.score(&example, &tags, 0, 1), 26.0);
        assert!(should_expand(&rule, &example, &tags, 0, 1, 15));
        assert!(!should_expand(&rule, &example, &tags, 0, 1, 0), "no budget");
        // An import: 2 + 1.5 + 2.5 - 0.5 = 5.5, never expanded.
        let import = rubric(1, 1, 1, 5, &["import"]);
        assert!(!should_expand(&rule, &import, &tags, 0, 1, 15));
        // A call site, 4/4/2/5: 8 + 6 + 2.5 - 1 = 15.5; minus 2 per level: 9.5 at depth 3
        // (expand), 7.5 at depth 4 (stop); a wide node costs 3 more.
        let call = rubric(4, 4, 2, 5, &["call-site"]);
        assert!(should_expand(&rule, &call, &[], 3, 1, 5));
        assert!(!should_expand(&rule, &call, &[], 4, 1, 5));
        assert!(!should_expand(&rule, &call, &[], 3, 6, 5));
        // Exactly at the threshold is not above it.
        let edge = ExpandRule {
            threshold: 15.5,
            ..rule
        };
        assert!(!should_expand(&edge, &call, &[], 0, 1, 5));
    }

    #[test]
    fn the_rule_is_configured_as_json_over_the_defaults() {
        let rule = ExpandRule::from_json(r#"{"threshold": 10, "tagMatch": 4}"#).unwrap();
        assert_eq!((rule.threshold, rule.tag_match), (10.0, 4.0));
        assert_eq!(rule.relevance, ExpandRule::default().relevance);
        assert!(
            ExpandRule::from_json(r#"{"treshold": 10}"#)
                .unwrap_err()
                .contains("threshold")
        );
        assert!(ExpandRule::from_json(r#"{"depth": -1}"#).is_err());
    }
}
