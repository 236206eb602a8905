//! Retrieval: `symbol = A > B` lookups and the natural-language pipeline.
//!
//! ```text
//! query ─ classify ─┬─ symbol = …  → exact lookup in the symbol table (no vectors)
//!                   └─ text        → stage 1: vector ANN ∥ BM25 over identifier-split text
//!                                    fusion (normalised RRF, or a calibrated blend)
//!                                    stage 2: reranker (optional) → finalScore blend
//!                                    priors: definitions, path roles and words, coherence
//!                                    parent/child folding
//!                                    relevance gate, then token budget
//!                                    stage 3: structural enrichment from the symbol graph
//! ```
//!
//! [`query`] and [`score`] are pure and unit-tested; [`engine`] and [`enrich`] hold the
//! I/O (stores, embedder, reranker) behind their traits. Metadata assembly is
//! [`crate::graph`]'s, rendering [`crate::render`]'s.
//!
//! # Design notes
//!
//! - `lexical`: the BM25 query — identifier-split like `search_text`, English function
//!   words dropped by a code-aware list (the index itself keeps every word, since `until`,
//!   `while`, `once` are parts of names).
//! - `query`: `symbol = [file >] [Parent >] name` → `SymbolPath` (a first segment with a
//!   `/` or a source extension is the file); anything else is natural language.
//!   `SymbolPath::readings` also reads a qualified name (`Store::credit`, `Invoice.total`)
//!   with its qualifiers as parents; the lookup tries each reading.
//! - `score` (pure, unit-tested with the blueprint's phase-8 cases): normalised RRF and the
//!   calibrated blend for fusion (BM25 relative to the query's best, scaled by the share
//!   of the question's stemmed words the symbol holds: `lexical::coverage`,
//!   `score::lexical_evidence`), `finalScore = rerank·w_r + vector·w_v`, rerank logits
//!   squashed to 0..1, parent/child folding by line-range containment, and `select` (the
//!   relevance gate, then the token budget in score order; a best result over budget is
//!   kept, truncated). The blend's BM25 weight depends on the question: a symbol question
//!   is ordered and gated with `lexicalWeight` (0.3); a sentence is ordered with
//!   `sentenceLexicalWeight` (0.15) and gated with the blend at `lexicalWeight` plus the
//!   same priors (`StageScores::gate`, read through `relevance()`), because a lower weight
//!   lifts the bare similarity of a sentence model, which never falls far, over the gate.
//!   `select` therefore filters by relevance rather than stopping at the first candidate
//!   below it.
//! - `prior` (pure, unit-tested): the ranking priors applied to every candidate's final
//!   score after fusion and reranking. `understand` reads the question's form:
//!   identifier-like words (`SnapshotState`, `runTests`, `load_config`, `A.b`, `A::b`;
//!   in a question of at most three words also a capitalised or lone word) and whether it
//!   is a *symbol question* (≤ 3 words with an identifier) or asks for tests, examples or
//!   declarations ("spec", "fixture", "unit tests", "tests for", "example", "typings"),
//!   documentation (a task: "how do I", "how to"; "documented", "readme", "guide") or
//!   configuration (a format: "yaml", "dockerfile"; configuring words within a task). A
//!   question that wants neither is recalled from code only (`categories: code` pushed
//!   into both retrievers, unless the request names categories or languages); docs and
//!   config candidates otherwise carry the `docs`/`config` role penalties (0.3) unless
//!   asked for. After folding, a candidate whose full text equals a better-ranked one's
//!   (a versioned copy, a vendored file) folds into it (`engine::fold_copies`).
//!   `roles::PathRole::of` tells source from tests (by directory, marker or the language's
//!   naming convention: `x.test.ts`, `x_test.go`, `test_x.py`, `XTest.java`), fixtures,
//!   examples/docs/benchmarks, `.d.ts` and generated/vendored paths; a repository's `pathRoles` setting (role → globs,
//!   `sextant repo set --path-role 'source=test/helpers/**'`, or `settings.pathRoles` over
//!   REST) is checked first (`roles::PathRoles`, validated by the indexer when saved). `adjust`: a definition of a named identifier (name equal,
//!   or ending in `.name` as `X.prototype.name` does; dotted parents must match) is ranked
//!   in a tier at 0.9–1.0 for a symbol question (ordered by kind strength × path role, the
//!   question's other words in its breadcrumb or path, then its score) and lifted by
//!   `definition` in a sentence; other candidates lose the role's penalty unless asked for,
//!   types and signatures (interfaces, type aliases, fields, body-less methods) lose
//!   `signaturePenalty` unless the question asks about types,
//!   gain `pathWords` × the share of the question's words in their file name and directory,
//!   and a file's best candidate gains `coherence` per further good candidate of the file
//!   (≤ 3). `repeat` (a per-file diminishing return) exists but is off. Weights are
//!   `Priors`, a field of `SearchOptions` (per request, server default, `--priors` JSON on
//!   `search`/`eval`); `scores.prior` shows each candidate's adjustment. The weights are in
//!   bge-small-en-v1.5's score units: the searcher scales them by `Embedder::score_spread`
//!   (the manifest's `score_spread`: how much wider a model's similarities spread between
//!   good and poor matches), so a penalty moves a result as far under every model.
//! - A symbol question whose identifier defines nothing is looked up as the name it most
//!   likely means (`prior::closest_name` over `MetaStore::names_starting_like`: the same
//!   name ignoring case and `_`/`-`, a name it begins, or one or two edits away), and the
//!   corrected identifier feeds the definition tier.
//! - `engine::Searcher`: classifies the query; lookups read `MetaStore::symbols_named` and
//!   fetch the chunks by id; text queries embed the query, run `vector_search` and
//!   `text_search` concurrently with the `ChunkFilter` pushed into LanceDB, compute the exact
//!   cosine of every candidate (its vector comes with the row), lift hits to answer units
//!   (a chunk inside a function body — callback, nested helper — counts for the outermost
//!   function-like symbol; `SymbolKind::has_code_body`; the climb reads parent ids and
//!   kinds from `MetaStore::symbols_by_id`, then the unit rows not among the hits in one
//!   chunk-store read), drop import/re-export statements, fuse, rerank when a
//!   reranker is configured, add the definitions the question names that recall missed
//!   (read by name from `MetaStore::symbols_named` while recall runs), apply the priors,
//!   fold, select, then `enrich` (stage 3) reads the results' members, edges and the
//!   names of the symbols at the other ends into `SymbolMetadata` in a fixed number of
//!   queries per repository (`symbols_and_members` beside the hits' `edges_from_any` and
//!   `edges_to_any`, those of class-likes' members, then `symbol_names`: per-symbol edge
//!   reads made enrichment 150 ms on jest). `with_freshness` runs the indexer's two-phase
//!   sync of working trees in scope before answering, bounded in time; a repository whose
//!   sync is already running is skipped (`Indexer::sync_unless_running`), so searches never
//!   queue behind a sync.
//! - Token counts everywhere are `text::estimate_tokens` (4 chars/token) of a result's full
//!   source.

pub mod engine;
pub mod enrich;
mod error;
pub mod grep;
pub mod lexical;
pub mod options;
pub mod prior;
pub mod query;
pub mod score;

pub use engine::{SearchHit, SearchMode, SearchResponse, Searcher, StageTimings};
pub use error::SearchError;
pub use lexical::{coverage, lexical_query, query_terms};
pub use options::{Fusion, MAX_QUERY_BYTES, Retrieval, SearchOptions, SearchOverrides};
pub use prior::Priors;
pub use query::{Query, SymbolPath, classify, parse_symbol_query};

/// Checks a search request before any work is done (and before its repository names are
/// looked up): the query's length and emptiness, then the options (ranges, filter sizes,
/// globs).
pub fn validate_request(query: &str, options: &SearchOptions) -> Result<(), SearchError> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(SearchError::QueryTooLong(query.len()));
    }
    if query.trim().is_empty() {
        return Err(SearchError::EmptyQuery);
    }
    options.validate().map_err(SearchError::InvalidOption)
}
