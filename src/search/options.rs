//! Search parameters: the blueprint's configuration table plus Sextant's recall and
//! fusion settings. Every field can be set per request; the server's defaults are the
//! [`Default`] values unless configured otherwise.

use serde::{Deserialize, Serialize};

use super::prior::Priors;
use crate::store::ChunkFilter;

/// Longest query accepted, in bytes: a question or a symbol path, not a file. The
/// embedding model reads only its first few hundred tokens anyway; the cap bounds the
/// lexical query and the work per search.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;

/// Which retrievers feed stage 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(clap::ValueEnum, utoipa::ToSchema)]
pub enum Retrieval {
    /// Vector ANN and BM25, fused (the default).
    #[default]
    Hybrid,
    /// Vector ANN only.
    Vector,
    /// BM25 only.
    Lexical,
}

/// How the vector and BM25 lists are fused when there is no reranker (and how the
/// candidate order fed to a reranker is formed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(clap::ValueEnum, utoipa::ToSchema)]
pub enum Fusion {
    /// Reciprocal rank fusion, normalised so that a chunk ranked first by every
    /// retriever scores 1.0 (see [`crate::search::score::rrf`]).
    Rrf,
    /// Weighted mean of the vector similarity and the BM25 score relative to the query's
    /// best BM25 score (see [`crate::search::score::blend_scores`]); the default: it beat
    /// RRF on the development set (docs/BENCHMARKS.md).
    #[default]
    Blend,
}

/// Parameters of one search. Field names follow the blueprint (`rerankWeight`, …) on the
/// wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SearchOptions {
    /// Weight of the reranker score in `finalScore` (blueprint default 0.65).
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub rerank_weight: f32,
    /// Weight of the vector similarity in `finalScore` (blueprint default 0.35).
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub vector_weight: f32,
    /// Results below this `finalScore` are never returned (0.0–1.0, default 0.5).
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub minimum_relevance_threshold: f32,
    /// Token budget of the whole answer, a ceiling (default 8,000) in `tokenizer`'s
    /// tokens: the search picks results whose source fits it by estimate
    /// ([`crate::text::estimate_tokens`]), and the rendered answer (graph, snapshots,
    /// notes) is counted for real and fitted to it (`render::budget`).
    #[schema(minimum = 1)]
    pub max_token_budget: usize,
    /// The encoding `maxTokenBudget` and `tokensUsed` count in: the agent's model's
    /// (`claude`, the default; `o200k` for GPT-4o and later; `cl100k` for GPT-4).
    pub tokenizer: crate::text::Tokenizer,
    /// Stage-1 vector candidates (default 50).
    #[schema(maximum = 1000)]
    pub max_vector_candidates: usize,
    /// Stage-1 BM25 candidates (default 50).
    #[schema(maximum = 1000)]
    pub max_lexical_candidates: usize,
    /// Retrievers used in stage 1.
    pub retrieval: Retrieval,
    /// Fusion of the two lists.
    pub fusion: Fusion,
    /// RRF's rank constant `k` (default 60).
    #[schema(exclusive_minimum = 0.0)]
    pub rrf_k: f32,
    /// Weight of the BM25 list relative to the vector list in fusion (default 0.3). It
    /// orders the answers to symbol questions and decides the relevance gate for all.
    #[schema(minimum = 0.0)]
    pub lexical_weight: f32,
    /// Weight of the BM25 evidence when ordering the answers to sentences, questions
    /// that are not a bare identifier (default 0.15): their words are the code's less
    /// often. The relevance gate still reads the blend at `lexicalWeight`.
    #[schema(minimum = 0.0)]
    pub sentence_lexical_weight: f32,
    /// Whether to call the configured reranker (default true; ignored when none is
    /// configured).
    pub rerank: bool,
    /// Ranking priors: definitions over mentions, path roles and words, file coherence
    /// ([`crate::search::prior`]).
    pub priors: Priors,
    /// Scope: repositories, paths, languages, node kinds (pushed into the stores).
    #[serde(flatten)]
    pub filter: ChunkFilter,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            rerank_weight: 0.65,
            vector_weight: 0.35,
            minimum_relevance_threshold: 0.5,
            max_token_budget: 8000,
            tokenizer: crate::text::Tokenizer::default(),
            // 50, not 40: both ranking sets and both JSDoc sets gain (docs/BENCHMARKS.md).
            max_vector_candidates: 50,
            max_lexical_candidates: 50,
            retrieval: Retrieval::Hybrid,
            fusion: Fusion::Blend,
            rrf_k: 60.0,
            // Measured with bge-small (docs/BENCHMARKS.md): 0.3 beats 1.0 on rxjs and on
            // the lodash-es set alike, and keeps off-topic questions out of the gate.
            lexical_weight: 0.3,
            // Measured on the ranking sets (jest and mocha, docs/BENCHMARKS.md): semantic
            // and architecture questions gain on both at 0.15, symbol questions lose.
            sentence_lexical_weight: 0.15,
            rerank: true,
            priors: Priors::default(),
            filter: ChunkFilter::default(),
        }
    }
}

impl SearchOptions {
    /// Checks ranges; the message names the field and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        let unit = |name: &str, v: f32| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name} must be between 0.0 and 1.0, got {v}"))
            }
        };
        unit("rerankWeight", self.rerank_weight)?;
        unit("vectorWeight", self.vector_weight)?;
        unit(
            "minimumRelevanceThreshold",
            self.minimum_relevance_threshold,
        )?;
        if self.max_token_budget == 0 {
            return Err("maxTokenBudget must be at least 1".into());
        }
        if self.max_vector_candidates > 1000 || self.max_lexical_candidates > 1000 {
            return Err("maxVectorCandidates and maxLexicalCandidates must be at most 1000".into());
        }
        if self.rrf_k.is_nan() || self.rrf_k <= 0.0 {
            return Err(format!("rrfK must be positive, got {}", self.rrf_k));
        }
        if self.sentence_lexical_weight.is_nan() || self.sentence_lexical_weight < 0.0 {
            return Err(format!(
                "sentenceLexicalWeight must be >= 0, got {}",
                self.sentence_lexical_weight
            ));
        }
        if self.lexical_weight.is_nan() || self.lexical_weight < 0.0 {
            return Err(format!(
                "lexicalWeight must be >= 0, got {}",
                self.lexical_weight
            ));
        }
        self.priors.validate()?;
        self.filter.validate()
    }
}

/// Declares [`SearchOverrides`] from one list of fields: each an `Option` of the
/// [`SearchOptions`] field of the same name, applied by [`SearchOverrides::apply`].
macro_rules! overrides {
    (
        options { $( $(#[$om:meta])* $option:ident : $oty:ty ),* $(,)? }
        filter { $( $(#[$fm:meta])* $filter:ident ),* $(,)? }
    ) => {
        /// What one request sets of the search options; the rest comes from the server's
        /// defaults ([`SearchOverrides::apply`]). REST takes it as the search body's
        /// fields, MCP builds it from a tool's arguments.
        #[derive(Debug, Clone, Default, PartialEq, Deserialize, utoipa::ToSchema)]
        #[serde(rename_all = "camelCase", default)]
        pub struct SearchOverrides {
            $( $(#[$om])* pub $option: Option<$oty>, )*
            $( $(#[$fm])* #[schema(max_items = 100)] pub $filter: Option<Vec<String>>, )*
            /// A ref the repositories track besides their default one (`repo ref add`):
            /// search the code as it is on that ref.
            #[serde(rename = "ref")]
            #[schema(max_length = 200)]
            pub git_ref: Option<String>,
        }

        impl SearchOverrides {
            /// `defaults` with every field this request set replaced.
            pub fn apply(self, mut defaults: SearchOptions) -> SearchOptions {
                $( if let Some(v) = self.$option { defaults.$option = v; } )*
                $( if let Some(v) = self.$filter { defaults.filter.$filter = v; } )*
                if self.git_ref.is_some() {
                    defaults.filter.git_ref = self.git_ref;
                }
                defaults
            }
        }

        impl From<SearchOptions> for SearchOverrides {
            /// Every field set: these options whatever the defaults (the destructuring
            /// names every field, so a new option cannot be left out).
            fn from(options: SearchOptions) -> Self {
                let SearchOptions { $( $option, )* filter } = options;
                // What the service sets (`excluded`, `views`) is no request's to set.
                let crate::store::ChunkFilter { $( $filter, )* git_ref, excluded: _, views: _ } =
                    filter;
                Self {
                    $( $option: Some($option), )*
                    $( $filter: Some($filter), )*
                    git_ref,
                }
            }
        }
    };
}

overrides! {
    options {
        /// Weight of the reranker score in `finalScore` (0–1).
        rerank_weight: f32,
        /// Weight of the vector similarity in `finalScore` (0–1).
        vector_weight: f32,
        /// Results below this `finalScore` are never returned (0–1).
        minimum_relevance_threshold: f32,
        /// Token budget of the whole answer (graph, snapshots, notes): a ceiling.
        max_token_budget: usize,
        /// The encoding the budget counts in (`claude`, `o200k`, `cl100k`).
        tokenizer: crate::text::Tokenizer,
        /// Stage-1 vector candidates (at most 1,000).
        max_vector_candidates: usize,
        /// Stage-1 BM25 candidates (at most 1,000).
        max_lexical_candidates: usize,
        /// Retrievers used in stage 1.
        retrieval: Retrieval,
        /// Fusion of the two lists.
        fusion: Fusion,
        /// RRF's rank constant `k` (positive).
        rrf_k: f32,
        /// Weight of the BM25 list relative to the vector list in fusion (≥ 0).
        lexical_weight: f32,
        /// Weight of the BM25 evidence when ordering answers to sentences (≥ 0).
        sentence_lexical_weight: f32,
        /// Whether to call the configured reranker.
        rerank: bool,
        /// Ranking priors (all weights 0–1; `enabled: false` turns them off).
        priors: Priors,
    }
    filter {
        /// Only these repositories (names or ids; `repos` is read as well).
        #[serde(alias = "repos")]
        repositories,
        /// Only these paths: directory prefixes (`src/auth/`), files, or globs.
        paths,
        /// Only these languages (`typescript`, `tsx`, `javascript`, `python`, `go`, `rust`, `java`).
        languages,
        /// Only these node kinds (`function`, `method`, `class`…).
        kinds,
        /// Only files for this: `code`, `docs`, `config` (`kind` is read as well).
        #[serde(alias = "kind")]
        categories,
    }
}

#[cfg(test)]
mod overrides_tests {
    use super::*;

    #[test]
    fn overrides_replace_only_what_they_set() {
        let defaults = SearchOptions {
            max_token_budget: 3000,
            rerank: false,
            ..SearchOptions::default()
        };
        let given: SearchOverrides = serde_json::from_value(serde_json::json!({
            "minimumRelevanceThreshold": 0.2,
            "paths": ["src/"]
        }))
        .unwrap();
        let options = given.apply(defaults.clone());
        assert_eq!(options.minimum_relevance_threshold, 0.2);
        assert_eq!(options.filter.paths, vec!["src/".to_string()]);
        assert_eq!(options.max_token_budget, 3000, "the server's default stays");
        assert!(!options.rerank);
        assert_eq!(SearchOverrides::default().apply(defaults.clone()), defaults);
        // The older name of the repository list is still read.
        let older: SearchOverrides =
            serde_json::from_value(serde_json::json!({ "repos": ["api"] })).unwrap();
        assert_eq!(older.repositories, Some(vec!["api".to_string()]));
        // Options given whole replace every default.
        let whole = SearchOverrides::from(options.clone());
        assert_eq!(whole.apply(SearchOptions::default()), options);
    }
}
