//! [`Searcher`]: runs symbol lookups and the natural-language pipeline over the stores.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tracing::Instrument;

use super::score::{self, Span, StageScores};
use super::{Fusion, Query, Retrieval, SearchError, SearchOptions, SymbolPath, classify};
use crate::chunk::CodeChunk;
use crate::embed::{Embedder, Reranker, cosine, embed_query};
use crate::index::{Indexer, Progress};
use crate::parse::SymbolKind;
use crate::store::{ChunkRow, MetaStore, PathMatcher, RepoSource, ScoredChunk, VectorStore};
use crate::text::estimate_tokens;

/// A chunk by (repository id, chunk id).
type Key = (String, String);
/// The (kind, parent id) of chunks met climbing to answer units.
type Shapes = HashMap<Key, (SymbolKind, Option<String>)>;

/// How a query was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// `symbol = …` exact lookup.
    Symbol,
    /// Natural-language pipeline.
    Semantic,
}

/// One result (or candidate).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    /// Repository id.
    pub repo_id: String,
    /// The tracked ref the hit was read on, for a search on one (see
    /// [`crate::store::ChunkFilter::git_ref`]).
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// Repository-relative path.
    pub path: String,
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (inclusive).
    pub end_line: u32,
    /// `Parent > name`.
    pub breadcrumb: String,
    /// Node kind.
    pub kind: String,
    /// Signature.
    pub signature: String,
    /// Scores per stage.
    pub scores: StageScores,
    /// Estimated tokens of the symbol's full source.
    pub tokens: usize,
    /// Breadcrumbs of enclosing candidates folded into this one (parent/child
    /// de-duplication), and `path: breadcrumb` of copies of its text elsewhere.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub folded: Vec<String>,
    /// The chunk (full source, collapsed content, imports, …).
    #[schema(value_type = Object)]
    pub chunk: CodeChunk,
}

/// Time spent per stage, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageTimings {
    /// Freshness check of working trees in scope.
    pub freshness_ms: f64,
    /// Query embedding.
    pub embed_ms: f64,
    /// Vector and BM25 retrieval beyond the query embedding (BM25 and the definitions
    /// are read while the query is embedded, the vector search follows it).
    pub retrieve_ms: f64,
    /// Lifting hits to answer units (reads the parents of nested hits).
    pub units_ms: f64,
    /// Reranking.
    pub rerank_ms: f64,
    /// Ranking priors (the definitions the question names are read during retrieval).
    pub priors_ms: f64,
    /// Structural enrichment of the results (symbol graph reads).
    pub enrich_ms: f64,
    /// Reading the results' files and rendering the answer from them (snapshots, graph,
    /// budget); 0 where the caller renders nothing.
    pub render_ms: f64,
    /// Whole search, rendering included.
    pub total_ms: f64,
}

/// The answer to one query.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchResponse {
    /// The query as given.
    pub query: String,
    /// Lookup or natural language.
    pub mode: SearchMode,
    /// Results that passed the relevance gate and fit the budget, best first, parent/child
    /// folded.
    pub results: Vec<SearchHit>,
    /// Every ranked candidate before the gate and budget (after reranking and folding).
    pub candidates: Vec<SearchHit>,
    /// Candidates that passed the relevance gate.
    pub passed_gate: usize,
    /// Tokens of the answer: of the returned results' sources as the search picks them
    /// (estimated), of the whole rendered answer once it is fitted (`render::budget`,
    /// counted in `tokenizer`).
    pub tokens_used: usize,
    /// The budget in effect.
    pub token_budget: usize,
    /// The encoding the budget and the answer's count are in.
    pub tokenizer: crate::text::Tokenizer,
    /// When the best result alone exceeded the budget: it was kept, truncated to this
    /// many tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_to: Option<usize>,
    /// Whether a reranker scored the candidates.
    pub reranked: bool,
    /// Structural metadata of each result, in result order (stage 3).
    pub metadata: Vec<crate::graph::SymbolMetadata>,
    /// Per-stage timings.
    pub timings: StageTimings,
    /// Chunks of the searched repositories (`total`) and those still without their
    /// vector (`pending`): text search covers every chunk, vector search only the
    /// embedded ones. Absent when every chunk has its vector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding: Option<crate::store::EmbeddingState>,
}

/// Searches indexed repositories.
pub struct Searcher {
    meta: Arc<dyn MetaStore>,
    vectors: Arc<dyn VectorStore>,
    embedder: Arc<dyn Embedder>,
    reranker: Option<Arc<dyn Reranker>>,
    freshness: Option<(Arc<Indexer>, Duration)>,
}

/// What an answer unit keeps of one retrieved member chunk.
struct Member {
    vector: Vec<f32>,
    score: f32,
}

struct Candidate {
    row: ChunkRow,
    scores: StageScores,
}

/// What stage 1 recalled for a question.
struct Recalled {
    query_vector: Vec<f32>,
    lexical_query: String,
    intent: super::prior::Intent,
    vector_hits: Vec<ScoredChunk>,
    lexical_hits: Vec<ScoredChunk>,
    /// The definitions the question names (read only with the priors on).
    definitions: Vec<ChunkRow>,
}

/// One candidate per answer unit of either list, with its rank in each list (renumbered
/// over units) and its best similarity to the query (its own, or its best member's).
fn candidates_of(units: [Vec<(ChunkRow, Member)>; 2], query_vector: &[f32]) -> Vec<Candidate> {
    let [vector_units, lexical_units] = units;
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut slot = |row: ChunkRow, candidates: &mut Vec<Candidate>| {
        let key = (row.repo_id.clone(), row.chunk.id.clone());
        *index.entry(key).or_insert_with(|| {
            candidates.push(Candidate {
                row,
                scores: StageScores::default(),
            });
            candidates.len() - 1
        })
    };
    let mut member_sim: HashMap<usize, f32> = HashMap::new();
    let mut next_rank = 0;
    for (unit, member) in vector_units {
        let sim = cosine(query_vector, &member.vector);
        let i = slot(unit, &mut candidates);
        if candidates[i].scores.vector_rank.is_none() {
            next_rank += 1;
            candidates[i].scores.vector_rank = Some(next_rank);
        }
        let best = member_sim.entry(i).or_insert(sim);
        *best = best.max(sim);
    }
    let mut next_rank = 0;
    for (unit, member) in lexical_units {
        let i = slot(unit, &mut candidates);
        if candidates[i].scores.lexical_rank.is_none() {
            next_rank += 1;
            candidates[i].scores.lexical_rank = Some(next_rank);
            candidates[i].scores.lexical = Some(member.score);
        }
    }
    for (i, c) in candidates.iter_mut().enumerate() {
        let own = cosine(query_vector, &c.row.vector);
        let sim = member_sim.get(&i).map_or(own, |m| m.max(own));
        c.scores.vector = Some(sim.clamp(0.0, 1.0));
    }
    candidates
}

/// Fusion: each candidate's `fused` score (reciprocal ranks, or the blend of its vector
/// similarity with its lexical evidence: BM25 relative to the best, and query-term
/// coverage), then candidates best first. Sentences are ordered with their own lexical
/// weight and gated with the usual one (a lower weight lifts the bare vector similarity,
/// which for a sentence model never falls far, over the gate).
fn fuse(
    candidates: &mut [Candidate],
    options: &SearchOptions,
    intent: &super::prior::Intent,
    lexical_query: &str,
) {
    let use_vector = options.retrieval != Retrieval::Lexical;
    let use_lexical = options.retrieval != Retrieval::Vector;
    let best_bm25 = candidates
        .iter()
        .filter(|c| c.scores.lexical_rank == Some(1))
        .find_map(|c| c.scores.lexical)
        .unwrap_or(0.0);
    // Query-term coverage only weighs BM25 in the blend.
    let terms = if options.fusion == Fusion::Blend && use_lexical {
        super::query_terms(lexical_query)
    } else {
        Default::default()
    };
    let (gate_weight, order_weight) = lexical_weights(options, intent);
    for c in candidates.iter_mut() {
        // A row whose vector has not landed yet (progressive indexing) cannot be a vector
        // hit: that channel does not count against it, so until its embedding lands a
        // question in words is answered by text as well as BM25 answers it.
        let has_vector = use_vector && !c.row.vector.is_empty();
        let s = &mut c.scores;
        let (wv, wl) = (if has_vector { 1.0 } else { 0.0 }, gate_weight);
        s.fused = match options.fusion {
            Fusion::Rrf => {
                let mut lists = Vec::new();
                if has_vector {
                    lists.push((s.vector_rank, wv));
                }
                if use_lexical {
                    lists.push((s.lexical_rank, wl));
                }
                score::rrf(&lists, options.rrf_k)
            }
            Fusion::Blend => {
                let evidence = s.lexical.map(|b| {
                    let relative = if best_bm25 > 0.0 { b / best_bm25 } else { 0.0 };
                    let coverage = super::coverage(&terms, &c.row.chunk);
                    score::lexical_evidence(relative, coverage)
                });
                s.gate = (order_weight != gate_weight)
                    .then(|| score::blend_scores(s.vector, wv, evidence, gate_weight));
                score::blend_scores(s.vector, wv, evidence, order_weight)
            }
        };
        s.final_score = s.fused;
    }
    sort_by_score(candidates, |s| s.fused);
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

impl Searcher {
    /// A searcher over the given stores, embedding queries with `embedder` (the model the
    /// index was built with) and reranking with `reranker` when given.
    pub fn new(
        meta: Arc<dyn MetaStore>,
        vectors: Arc<dyn VectorStore>,
        embedder: Arc<dyn Embedder>,
        reranker: Option<Arc<dyn Reranker>>,
    ) -> Self {
        Self {
            meta,
            vectors,
            embedder,
            reranker,
            freshness: None,
        }
    }

    /// Before each search, working-tree repositories in scope get a sync (the two-phase
    /// dirty check: cheap when nothing changed) bounded by `bound`; a sync that takes
    /// longer goes on in the background and the search answers from the index as it is,
    /// as it does at once for a repository whose sync is already running.
    pub fn with_freshness(mut self, indexer: Arc<Indexer>, bound: Duration) -> Self {
        self.freshness = Some((indexer, bound));
        self
    }

    /// Answers `query`: a `symbol = …` lookup or the natural-language pipeline.
    pub async fn search(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> Result<SearchResponse, SearchError> {
        super::validate_request(query, options)?;
        let start = Instant::now();
        let mut timings = StageTimings::default();
        let t = Instant::now();
        self.refresh(&options.filter.repositories)
            .instrument(tracing::info_span!("search.freshness"))
            .await;
        timings.freshness_ms = ms(t);
        let mut pending_vectors = None;
        let (mode, ranked, reranked) = match classify(query) {
            Query::Symbol(path) => (
                SearchMode::Symbol,
                self.lookup(&path, options)
                    .instrument(tracing::info_span!("search.lookup"))
                    .await?,
                false,
            ),
            Query::Text(text) => {
                let (ranked, embedding) = tokio::join!(
                    self.rank(&text, options, &mut timings),
                    self.embedding_state(&options.filter.repositories)
                );
                let (ranked, reranked) = ranked?;
                pending_vectors = embedding?;
                (SearchMode::Semantic, ranked, reranked)
            }
        };
        let candidates = fold_copies(fold(ranked));
        let scores: Vec<f32> = candidates.iter().map(|h| h.scores.relevance()).collect();
        let tokens: Vec<usize> = candidates.iter().map(|h| h.tokens).collect();
        let threshold = match mode {
            SearchMode::Symbol => 0.0,
            SearchMode::Semantic => options.minimum_relevance_threshold,
        };
        let selection = score::select(&scores, &tokens, threshold, options.max_token_budget);
        let results: Vec<SearchHit> = selection
            .picked
            .iter()
            .map(|&i| candidates[i].clone())
            .collect();
        let t = Instant::now();
        let metadata = super::enrich::enrich(self.meta.as_ref(), &results)
            .instrument(tracing::info_span!(
                "search.enrich",
                results = results.len()
            ))
            .await?;
        timings.enrich_ms = ms(t);
        timings.total_ms = ms(start);
        Ok(SearchResponse {
            query: query.to_string(),
            mode,
            results,
            candidates,
            passed_gate: selection.passed_gate,
            tokens_used: selection.tokens,
            token_budget: options.max_token_budget,
            tokenizer: options.tokenizer,
            truncated_to: selection.truncated_to,
            reranked,
            metadata,
            timings,
            embedding: pending_vectors,
        })
    }

    /// How much of the repositories in `scope` (all when empty) has its vectors; `None`
    /// when all of it does.
    async fn embedding_state(
        &self,
        scope: &[String],
    ) -> Result<Option<crate::store::EmbeddingState>, SearchError> {
        if self.vectors.all_embedded().await? {
            return Ok(None);
        }
        let mut state = crate::store::EmbeddingState::default();
        if scope.is_empty() {
            state = self.vectors.embedding_state(None).await?;
        } else {
            for repo in scope {
                let one = self.vectors.embedding_state(Some(repo)).await?;
                state.total += one.total;
                state.pending += one.pending;
            }
        }
        Ok((state.pending > 0).then_some(state))
    }

    /// Every chunk of each file the response's results come from, keyed by (repo id,
    /// path): what snapshots and the connection graph are rendered from.
    pub async fn result_files(
        &self,
        response: &SearchResponse,
    ) -> Result<HashMap<(String, String), Vec<CodeChunk>>, SearchError> {
        // One read per repository, not one per file (ten files: 11 ms against 63 ms at
        // 108k rows).
        let mut wanted: HashMap<&str, Vec<String>> = HashMap::new();
        for h in &response.results {
            let paths = wanted.entry(h.repo_id.as_str()).or_default();
            if !paths.contains(&h.path) {
                paths.push(h.path.clone());
            }
        }
        let mut out = HashMap::new();
        for (repo_id, paths) in wanted {
            for (path, rows) in self.vectors.files_chunks(repo_id, &paths).await? {
                out.insert(
                    (repo_id.to_string(), path),
                    rows.into_iter().map(|r| r.chunk).collect(),
                );
            }
        }
        Ok(out)
    }

    /// The freshness check a search makes before it reads the index (see
    /// [`Searcher::with_freshness`]), for other readers of the index (grep).
    pub async fn freshen(&self, scope: &[String]) {
        self.refresh(scope).await
    }

    /// The bounded freshness check (see [`Searcher::with_freshness`]).
    async fn refresh(&self, scope: &[String]) {
        let Some((indexer, bound)) = &self.freshness else {
            return;
        };
        let Ok(repos) = self.meta.list_repositories().await else {
            return;
        };
        for repo in repos {
            let in_scope =
                scope.is_empty() || scope.contains(&repo.id) || scope.contains(&repo.name);
            // A repository never synced yet has its first sync queued (its job reports
            // the work); racing it would only leave that job with nothing to do.
            if !in_scope
                || !matches!(repo.source, RepoSource::Path(_))
                || repo.status == crate::store::RepoStatus::Registered
            {
                continue;
            }
            let indexer = indexer.clone();
            let task = tokio::spawn(async move {
                let mut progress = Progress::silent(&repo.id);
                // A sync already running brings the index up to date; searches do not
                // queue behind it (nor pile up syncs to run after it).
                match indexer.sync_unless_running(&repo, &mut progress).await {
                    Some(Err(e)) => {
                        tracing::warn!(repo = %repo.name, error = %e, "freshness sync failed");
                    }
                    Some(Ok(report)) if report.indexed > 0 => {
                        // The changed files answer by text now; their vectors follow,
                        // within the bound when few (past it, this search answers and
                        // the embedding goes on in this background task).
                        if let Some(Err(e)) = indexer
                            .embed_pending_unless_running(&repo, &mut progress)
                            .await
                        {
                            tracing::warn!(repo = %repo.name, error = %e, "embedding after a freshness sync failed");
                        }
                    }
                    Some(Ok(_)) => {}
                    None => {
                        tracing::debug!(repo = %repo.name, "a sync is running; answering from the index as it is")
                    }
                }
            });
            if tokio::time::timeout(*bound, task).await.is_err() {
                tracing::debug!("freshness sync still running; answering from the index as it is");
            }
        }
    }

    /// Exact symbol lookup: every symbol whose name, parent chain and file match.
    async fn lookup(
        &self,
        path: &SymbolPath,
        options: &SearchOptions,
    ) -> Result<Vec<SearchHit>, SearchError> {
        let mut by_repo: HashMap<String, Vec<String>> = HashMap::new();
        for reading in path.readings() {
            let found = self
                .meta
                .symbols_named(&reading.name, &options.filter.repositories)
                .await?;
            for (repo, file, symbol) in found {
                if reading.matches(&file, &symbol.breadcrumb)
                    && options.filter.admits_file(&repo, &file)
                {
                    let ids = by_repo.entry(repo).or_default();
                    if !ids.contains(&symbol.chunk_id) {
                        ids.push(symbol.chunk_id);
                    }
                }
            }
        }
        let mut rows = self.rows_in_scope(by_repo, options).await?;
        rows.sort_by(|a, b| {
            (&a.repo_id, &a.chunk.relative_path, a.chunk.start_line).cmp(&(
                &b.repo_id,
                &b.chunk.relative_path,
                b.chunk.start_line,
            ))
        });
        let scores = StageScores {
            fused: 1.0,
            final_score: 1.0,
            ..StageScores::default()
        };
        let hits = rows.into_iter().map(|row| hit(row, scores)).collect();
        Ok(hits)
    }

    /// The chunk rows of `ids` (by repository) that the request's filter lets through:
    /// one chunk-store read per repository.
    async fn rows_in_scope(
        &self,
        ids: HashMap<String, Vec<String>>,
        options: &SearchOptions,
    ) -> Result<Vec<ChunkRow>, SearchError> {
        let paths = options
            .filter
            .path_matcher()
            .map_err(SearchError::InvalidOption)?;
        let mut repos: Vec<_> = ids.into_iter().collect();
        repos.sort();
        let mut rows = Vec::new();
        for (repo, ids) in repos {
            rows.extend(
                self.vectors
                    .get(&repo, &ids)
                    .await?
                    .into_iter()
                    .filter(|row| passes_filter(row, options, &paths)),
            );
        }
        Ok(rows)
    }

    /// Adds to `shape` the (kind, parent) of the parents of `cursor`'s chunks it does not
    /// know yet: one symbol-table query per repository.
    async fn learn_parents(&self, cursor: &[Key], shape: &mut Shapes) -> Result<(), SearchError> {
        let mut missing: HashMap<String, Vec<String>> = HashMap::new();
        for key in cursor {
            if let Some((_, Some(pid))) = shape.get(key)
                && !shape.contains_key(&(key.0.clone(), pid.clone()))
            {
                missing.entry(key.0.clone()).or_default().push(pid.clone());
            }
        }
        for (repo, mut ids) in missing {
            ids.sort();
            ids.dedup();
            for (_, symbol) in self.meta.symbols_by_id(&repo, &ids).await? {
                if let Some(kind) = SymbolKind::parse(&symbol.kind) {
                    shape.insert(
                        (repo.clone(), symbol.chunk_id),
                        (kind, symbol.parent_chunk_id),
                    );
                }
            }
        }
        Ok(())
    }

    /// Lifts each hit to its answer unit (see [`SymbolKind::has_code_body`]), keeping the
    /// hit order: returns (unit row, hit) pairs, import and re-export statements left out.
    ///
    /// The climb reads the symbol table (parent ids and kinds, one small SQL query per
    /// level); only the unit rows not already among the hits are then read from the chunk
    /// store, in one query per repository.
    async fn answer_units(
        &self,
        vector_hits: Vec<ScoredChunk>,
        lexical_hits: Vec<ScoredChunk>,
    ) -> Result<[Vec<(ChunkRow, Member)>; 2], SearchError> {
        // Both lists are lifted together: their parents are mostly the same rows.
        let (tags, hits): (Vec<usize>, Vec<ScoredChunk>) = vector_hits
            .into_iter()
            .map(|h| (0, h))
            .chain(lexical_hits.into_iter().map(|h| (1, h)))
            .filter(|(_, h)| {
                !matches!(
                    h.row.chunk.node_kind,
                    SymbolKind::Import | SymbolKind::ReExport
                )
            })
            .collect();
        // (kind, parent id) of every chunk met on the way up.
        let mut shape: Shapes = HashMap::new();
        let mut rows: HashMap<Key, ChunkRow> = HashMap::new();
        let mut members = Vec::with_capacity(hits.len());
        let mut cursor: Vec<Key> = Vec::with_capacity(hits.len());
        for h in hits {
            let key = (h.row.repo_id.clone(), h.row.chunk.id.clone());
            shape.insert(
                key.clone(),
                (h.row.chunk.node_kind, h.row.chunk.parent_chunk_id.clone()),
            );
            members.push(Member {
                vector: h.row.vector.clone(),
                score: h.score,
            });
            rows.insert(key.clone(), h.row);
            cursor.push(key);
        }
        // Climb one level per round, looking up the parents not yet known.
        for _ in 0..16 {
            self.learn_parents(&cursor, &mut shape).await?;
            let mut moved = false;
            for key in &mut cursor {
                let Some((kind, Some(pid))) = shape.get(key) else {
                    continue;
                };
                let parent_key = (key.0.clone(), pid.clone());
                if let Some((parent_kind, _)) = shape.get(&parent_key)
                    && (*kind == SymbolKind::Callback || parent_kind.has_code_body())
                {
                    *key = parent_key;
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        let mut wanted: HashMap<String, Vec<String>> = HashMap::new();
        for key in &cursor {
            if !rows.contains_key(key) {
                wanted.entry(key.0.clone()).or_default().push(key.1.clone());
            }
        }
        for (repo, mut ids) in wanted {
            ids.sort();
            ids.dedup();
            for row in self.vectors.get(&repo, &ids).await? {
                rows.insert((repo.clone(), row.chunk.id.clone()), row);
            }
        }
        // Each unit row moves to its last hit; hits before it that share it take a copy.
        let mut uses: HashMap<&Key, usize> = HashMap::new();
        for key in &cursor {
            *uses.entry(key).or_default() += 1;
        }
        let mut out = [Vec::new(), Vec::new()];
        for ((tag, member), key) in tags.into_iter().zip(members).zip(&cursor) {
            let left = uses.get_mut(key).map(|n| {
                *n -= 1;
                *n
            });
            // A unit the chunk store no longer holds (its file was re-indexed meanwhile)
            // drops the hit.
            let unit = match left {
                Some(0) => rows.remove(key),
                _ => rows.get(key).cloned(),
            };
            if let Some(unit) = unit {
                out[tag].push((unit, member));
            }
        }
        Ok(out)
    }

    /// Stages 1 and 2: recall, fusion, rerank, blend, priors. Returns candidates best
    /// first, and whether the reranker ran.
    async fn rank(
        &self,
        text: &str,
        options: &SearchOptions,
        timings: &mut StageTimings,
    ) -> Result<(Vec<SearchHit>, bool), SearchError> {
        let recalled = self.recall(text, options, timings).await?;
        // Answer units: a chunk inside a function body (a callback, a nested helper) is
        // part of that function, so hits are lifted to the outermost enclosing body before
        // fusion; each unit takes its best member's rank (ranks are renumbered over units)
        // and best similarity. Import and re-export statements are never answers.
        let t = Instant::now();
        let units = self
            .answer_units(recalled.vector_hits, recalled.lexical_hits)
            .instrument(tracing::info_span!("search.units"))
            .await?;
        timings.units_ms = ms(t);
        let Recalled {
            query_vector,
            lexical_query,
            intent,
            definitions,
            ..
        } = recalled;
        let mut candidates = candidates_of(units, &query_vector);
        fuse(&mut candidates, options, &intent, &lexical_query);
        let reranked = self
            .rerank_candidates(text, options, &mut candidates, timings)
            .await?;
        if options.priors.enabled {
            let t = Instant::now();
            add_definitions(
                definitions,
                options,
                &intent,
                &query_vector,
                &mut candidates,
            );
            let roles = self
                .path_roles(candidates.iter().map(|c| c.row.repo_id.clone()).collect())
                .await?;
            apply_priors(
                &mut candidates,
                &intent,
                &lexical_query,
                &options.priors.scaled(self.embedder.score_spread()),
                &roles,
            );
            timings.priors_ms = ms(t);
        }
        let hits = candidates
            .into_iter()
            .map(|c| hit(c.row, c.scores))
            .collect();
        Ok((hits, reranked))
    }

    /// Stage 1, recall: the BM25 candidates and the definitions the question names are
    /// read while the question is embedded (on the blocking pool), the vector candidates
    /// once its vector is there; a misspelt or partial name is looked for as the name it
    /// most likely means. `embed_ms` is the embedding's own time, `retrieve_ms` the
    /// recall's time beyond it.
    async fn recall(
        &self,
        text: &str,
        options: &SearchOptions,
        timings: &mut StageTimings,
    ) -> Result<Recalled, SearchError> {
        let use_vector = options.retrieval != Retrieval::Lexical;
        let use_lexical = options.retrieval != Retrieval::Vector;
        let t = Instant::now();
        let lexical_query = super::lexical_query(text);
        let filter = &options.filter;
        let retrieve = tracing::info_span!(
            "search.retrieve",
            vector_hits = tracing::field::Empty,
            lexical_hits = tracing::field::Empty
        );
        let mut intent = super::prior::understand(text);
        let filter = &*routed_filter(filter, options, &intent);
        let vector = async {
            let t = Instant::now();
            let query_vector = embed_query(self.embedder.as_ref(), text)
                .instrument(tracing::info_span!("search.embed"))
                .await?;
            let embedded = ms(t);
            let hits = if use_vector {
                self.vectors
                    .vector_search(&query_vector, options.max_vector_candidates, filter)
                    .instrument(tracing::debug_span!("search.vector"))
                    .await?
            } else {
                Vec::new()
            };
            Ok::<_, SearchError>((query_vector, hits, embedded))
        };
        let lexical = async {
            if !use_lexical {
                return Ok(Vec::new());
            }
            let wanted = options.max_lexical_candidates;
            self.vectors
                .text_search(&lexical_query, wanted, filter)
                .instrument(tracing::debug_span!("search.lexical"))
                .await
        };
        let definitions = async {
            if !options.priors.enabled {
                return Ok(Default::default());
            }
            self.definition_rows(&intent, options)
                .instrument(tracing::info_span!("search.definitions"))
                .await
        };
        let (vector, lexical_hits, definitions) =
            async { tokio::join!(vector, lexical, definitions) }
                .instrument(retrieve.clone())
                .await;
        let ((query_vector, mut vector_hits, embedded), mut lexical_hits) =
            (vector?, lexical_hits?);
        let (definitions, corrections) = definitions?;
        timings.embed_ms = embedded;
        stable_order(&mut vector_hits);
        stable_order(&mut lexical_hits);
        for (asked, meant) in corrections {
            for id in intent.identifiers.iter_mut().filter(|id| id.name == asked) {
                id.name = meant.clone();
            }
        }
        retrieve.record("vector_hits", vector_hits.len());
        retrieve.record("lexical_hits", lexical_hits.len());
        timings.retrieve_ms = (ms(t) - embedded).max(0.0);
        Ok(Recalled {
            query_vector,
            lexical_query,
            intent,
            vector_hits,
            lexical_hits,
            definitions,
        })
    }

    /// Stage 2, rerank: the configured reranker scores the candidates, blended with the
    /// vector similarity into `finalScore`; `false` when it did not run.
    async fn rerank_candidates(
        &self,
        text: &str,
        options: &SearchOptions,
        candidates: &mut [Candidate],
        timings: &mut StageTimings,
    ) -> Result<bool, SearchError> {
        let Some(reranker) = &self.reranker else {
            return Ok(false);
        };
        if !options.rerank || candidates.is_empty() {
            return Ok(false);
        }
        let t = Instant::now();
        let documents: Vec<String> = candidates
            .iter()
            .map(|c| rerank_document(&c.row.chunk))
            .collect();
        let raw = reranker
            .rerank(text, &documents)
            .instrument(tracing::info_span!(
                "search.rerank",
                candidates = documents.len()
            ))
            .await?;
        let normalized = score::normalize_rerank(&raw);
        for (c, r) in candidates.iter_mut().zip(normalized) {
            c.scores.rerank = Some(r);
            c.scores.final_score = score::final_score(
                r,
                c.scores.vector.unwrap_or(0.0),
                options.rerank_weight,
                options.vector_weight,
            );
            c.scores.gate = None;
        }
        sort_by_score(candidates, |s| s.final_score);
        timings.rerank_ms = ms(t);
        Ok(true)
    }

    /// Each given repository's own path roles (its `pathRoles` setting; a setting
    /// that no longer compiles falls back to the built-in rules).
    async fn path_roles(
        &self,
        repos: Vec<String>,
    ) -> Result<HashMap<String, crate::roles::PathRoles>, SearchError> {
        let mut out = HashMap::new();
        for repo_id in repos {
            if out.contains_key(&repo_id) {
                continue;
            }
            let roles = match self.meta.get_repository(&repo_id).await? {
                Some(repo) => crate::roles::PathRoles::compile(&repo.settings.path_roles)
                    .unwrap_or_else(|e| {
                        tracing::warn!(repo = %repo.name, error = %e, "path roles ignored");
                        crate::roles::PathRoles::default()
                    }),
                None => crate::roles::PathRoles::default(),
            };
            out.insert(repo_id, roles);
        }
        Ok(out)
    }

    /// The rows of the definitions of the identifiers the question names (a class asked
    /// for by name is often out-scored by the members and tests that mention it), source
    /// files first, at most 16 per name; [`add_definitions`] adds those recall missed.
    /// A symbol question whose identifier defines nothing looks for the name it most
    /// likely means ([`super::prior::closest_name`]); the second value lists those
    /// `(asked, found)` corrections.
    async fn definition_rows(
        &self,
        intent: &super::prior::Intent,
        options: &SearchOptions,
    ) -> Result<(Vec<ChunkRow>, Vec<(String, String)>), SearchError> {
        /// Definitions read per identifier (source files first).
        const PER_NAME: usize = 16;
        let mut wanted: HashMap<String, Vec<String>> = HashMap::new();
        let mut names: Vec<&str> = Vec::new();
        for id in &intent.identifiers {
            if !names.contains(&id.name.as_str()) {
                names.push(&id.name);
            }
        }
        let defining = |found: Vec<(String, String, crate::store::SymbolRecord)>| -> Vec<_> {
            found
                .into_iter()
                .filter(|(repo, file, s)| {
                    options.filter.admits_file(repo, file)
                        && SymbolKind::parse(&s.kind)
                            .is_some_and(|k| super::prior::kind_strength(k, 2) > 0.0)
                })
                .collect()
        };
        let repos = &options.filter.repositories;
        let mut corrections = Vec::new();
        for name in names.into_iter().take(4) {
            let mut found = defining(self.meta.symbols_named(name, repos).await?);
            if found.is_empty() && intent.symbol {
                let near = self.meta.names_starting_like(name, repos).await?;
                if let Some(meant) = super::prior::closest_name(name, &near) {
                    found = defining(self.meta.symbols_named(meant, repos).await?);
                    corrections.push((name.to_string(), meant.to_string()));
                }
            }
            // Source files first, by each repository's own path roles.
            let roles = self
                .path_roles(found.iter().map(|(repo, _, _)| repo.clone()).collect())
                .await?;
            let builtin = crate::roles::PathRoles::default();
            found.sort_by_key(|(repo, file, _)| {
                roles.get(repo).unwrap_or(&builtin).role_of(file) != super::prior::PathRole::Source
            });
            for (repo, _, symbol) in found.into_iter().take(PER_NAME) {
                wanted.entry(repo).or_default().push(symbol.chunk_id);
            }
        }
        Ok((self.rows_in_scope(wanted, options).await?, corrections))
    }
}

/// Adds the definition rows recall did not bring as candidates, scored like the others
/// from their vectors (they have no BM25 rank).
fn add_definitions(
    rows: Vec<ChunkRow>,
    options: &SearchOptions,
    intent: &super::prior::Intent,
    query_vector: &[f32],
    candidates: &mut Vec<Candidate>,
) {
    let (gate_weight, order_weight) = lexical_weights(options, intent);
    let mut known: std::collections::HashSet<(String, String)> = candidates
        .iter()
        .map(|c| (c.row.repo_id.clone(), c.row.chunk.id.clone()))
        .collect();
    for row in rows {
        if !known.insert((row.repo_id.clone(), row.chunk.id.clone())) {
            continue;
        }
        let vector = (row.vector.len() == query_vector.len())
            .then(|| cosine(query_vector, &row.vector).clamp(0.0, 1.0));
        let (fused, gate) = match options.fusion {
            Fusion::Blend => (
                score::blend_scores(vector, 1.0, None, order_weight),
                (order_weight != gate_weight)
                    .then(|| score::blend_scores(vector, 1.0, None, gate_weight)),
            ),
            Fusion::Rrf => (0.0, None),
        };
        candidates.push(Candidate {
            row,
            scores: StageScores {
                vector,
                fused,
                final_score: fused,
                gate,
                ..StageScores::default()
            },
        });
    }
}

/// The BM25 weights of a query, `(gate, order)`: both `lexicalWeight` for a symbol
/// question, `sentenceLexicalWeight` orders a sentence; 0 when BM25 is not used.
fn lexical_weights(options: &SearchOptions, intent: &super::prior::Intent) -> (f32, f32) {
    if options.retrieval == Retrieval::Vector {
        return (0.0, 0.0);
    }
    let order = if intent.symbol {
        options.lexical_weight
    } else {
        options.sentence_lexical_weight
    };
    (options.lexical_weight, order)
}

/// Applies [`super::prior::adjust`] to the candidates' final scores and re-sorts them.
fn apply_priors(
    candidates: &mut [Candidate],
    intent: &super::prior::Intent,
    lexical_query: &str,
    priors: &super::prior::Priors,
    roles: &HashMap<String, crate::roles::PathRoles>,
) {
    let terms = super::query_terms(lexical_query);
    let builtin = crate::roles::PathRoles::default();
    let facts: Vec<super::prior::Facts<'_>> = candidates
        .iter()
        .map(|c| super::prior::Facts {
            repo: &c.row.repo_id,
            path: &c.row.chunk.relative_path,
            name: &c.row.chunk.name,
            breadcrumb: &c.row.chunk.breadcrumb,
            kind: c.row.chunk.node_kind,
            role: roles
                .get(&c.row.repo_id)
                .unwrap_or(&builtin)
                .role_of(&c.row.chunk.relative_path),
            lines: c.row.chunk.end_line.saturating_sub(c.row.chunk.start_line) + 1,
            signature_only: super::prior::signature_only(
                c.row.chunk.node_kind,
                c.row.chunk.language,
                &c.row.chunk.full_source,
            ),
            exported: c.row.chunk.exported,
            deprecated: c
                .row
                .chunk
                .modifiers
                .contains(&crate::parse::Modifier::Deprecated),
            score: c.scores.final_score,
        })
        .collect();
    let adjusted = super::prior::adjust(&facts, intent, &terms, priors);
    for (c, new) in candidates.iter_mut().zip(adjusted) {
        let delta = new - c.scores.final_score;
        c.scores.prior = Some(delta);
        c.scores.final_score = new;
        // The gate reads the same adjustment on its own blend.
        c.scores.gate = c.scores.gate.map(|g| (g + delta).clamp(0.0, 1.0));
    }
    sort_by_score(candidates, |s| s.final_score);
}

fn sort_by_score(candidates: &mut [Candidate], key: impl Fn(&StageScores) -> f32) {
    candidates.sort_by(|a, b| {
        key(&b.scores)
            .total_cmp(&key(&a.scores))
            .then_with(|| a.row.chunk.relative_path.cmp(&b.row.chunk.relative_path))
            .then_with(|| a.row.chunk.start_line.cmp(&b.row.chunk.start_line))
    });
}

fn passes_filter(row: &ChunkRow, options: &SearchOptions, paths: &PathMatcher) -> bool {
    let f = &options.filter;
    (f.languages.is_empty() || f.languages.iter().any(|l| l == row.chunk.language.id()))
        && (f.kinds.is_empty() || f.kinds.iter().any(|k| k == row.chunk.node_kind.as_str()))
        && paths.is_match(&row.chunk.relative_path)
}

fn hit(row: ChunkRow, scores: StageScores) -> SearchHit {
    let chunk = row.chunk;
    SearchHit {
        repo_id: row.repo_id,
        git_ref: None,
        path: chunk.relative_path.clone(),
        start_line: chunk.start_line,
        end_line: chunk.end_line,
        breadcrumb: chunk.breadcrumb.clone(),
        kind: chunk.node_kind.as_str().to_string(),
        signature: chunk.signature.clone(),
        scores,
        tokens: estimate_tokens(&chunk.full_source),
        folded: Vec::new(),
        chunk,
    }
}

/// Copies: a candidate whose text is the same as a better-ranked one's (a vendored file,
/// a versioned copy of a documentation page) is folded into it, as `path: breadcrumb`.
fn fold_copies(ranked: Vec<SearchHit>) -> Vec<SearchHit> {
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut copies: Vec<Option<usize>> = Vec::with_capacity(ranked.len());
    for (i, hit) in ranked.iter().enumerate() {
        let text = hit.chunk.full_source.trim();
        // Short texts (`}`, one-line getters) are the same by accident, not by copying.
        if text.lines().count() < 3 {
            copies.push(None);
            continue;
        }
        copies.push(match first.get(text) {
            Some(&kept) => Some(kept),
            None => {
                first.insert(text, i);
                None
            }
        });
    }
    let mut notes: HashMap<usize, Vec<String>> = HashMap::new();
    for (i, copy) in copies.iter().enumerate() {
        if let Some(kept) = copy {
            notes
                .entry(*kept)
                .or_default()
                .push(format!("{}: {}", ranked[i].path, ranked[i].breadcrumb));
        }
    }
    ranked
        .into_iter()
        .enumerate()
        .filter(|(i, _)| copies[*i].is_none())
        .map(|(i, mut hit)| {
            hit.folded.extend(notes.remove(&i).unwrap_or_default());
            hit
        })
        .collect()
}

/// Parent/child de-duplication ([`score::fold_enclosing`]): a candidate nested in (or
/// around) a better-ranked one is folded into it.
fn fold(ranked: Vec<SearchHit>) -> Vec<SearchHit> {
    let spans: Vec<Span<'_>> = ranked
        .iter()
        .map(|h| Span {
            repo: &h.repo_id,
            path: &h.path,
            start: h.start_line,
            end: h.end_line,
            outline: h.chunk.node_kind == SymbolKind::File,
        })
        .collect();
    let groups = score::fold_enclosing(&spans);
    groups
        .into_iter()
        .map(|(keep, folded)| {
            let mut hit = ranked[keep].clone();
            for &i in &folded {
                hit.folded.push(ranked[i].breadcrumb.clone());
            }
            hit
        })
        .collect()
}

/// The filter a question's candidates are read with. A question that asks for neither
/// documentation nor configuration is answered from code: otherwise prose, which sits
/// near any question in words, takes the candidate slots and the best BM25 score that
/// code questions need (measured on jest: docs/BENCHMARKS.md). A request that names
/// categories or languages keeps them; with the priors off, nothing is routed.
fn routed_filter<'f>(
    filter: &'f crate::store::ChunkFilter,
    options: &SearchOptions,
    intent: &super::prior::Intent,
) -> std::borrow::Cow<'f, crate::store::ChunkFilter> {
    if options.priors.enabled
        && !intent.wants_docs
        && !intent.wants_config
        && filter.categories.is_empty()
        && filter.languages.is_empty()
    {
        std::borrow::Cow::Owned(crate::store::ChunkFilter {
            categories: vec![crate::parse::Category::Code.to_string()],
            ..filter.clone()
        })
    } else {
        std::borrow::Cow::Borrowed(filter)
    }
}

/// Hits of equal score in a stable order (the stores return ties in any order), so that
/// a question gets the same ranks every time.
fn stable_order(hits: &mut [ScoredChunk]) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.row.repo_id.cmp(&b.row.repo_id))
            .then_with(|| a.row.chunk.id.cmp(&b.row.chunk.id))
    });
}

/// What the reranker reads of a candidate: its embedding text while the row still has
/// it, else (a row whose text went with its vector, `store::texts`) the preamble's first
/// line (language, path, breadcrumb) and the code as the model saw it.
fn rerank_document(chunk: &crate::chunk::CodeChunk) -> String {
    if chunk.embedding_text.is_empty() {
        let head =
            crate::chunk::preamble_head(chunk.language, &chunk.relative_path, &chunk.breadcrumb);
        format!("{head}---\n{}", chunk.content)
    } else {
        chunk.embedding_text.clone()
    }
}
