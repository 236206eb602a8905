//! The search pipeline on real stores (SQLite + LanceDB in a temp dir) with a
//! deterministic bag-of-words embedder and a scripted reranker: the blueprint's phase-6
//! lookups and phase-8 cases at the engine level (blending, gate, budget, path filter in
//! the store, empty, single), parent/child folding and the freshness check.

use std::sync::Arc;
use std::time::Duration;

use crate::support;

use support::write;

use async_trait::async_trait;
use sextant::embed::{EmbedError, Reranker};
use sextant::index::Indexer;
use sextant::search::{Fusion, Retrieval, SearchMode, SearchOptions, Searcher};
use sextant::store::{LanceStore, RepoSettings, SqlMetaStore};
use support::embedders::BagOfWords;

const FILES: &[(&str, &str)] = &[
    (
        "src/auth/token.ts",
        "import { decode } from './jwt';\n\nexport class TokenService {\n  private secret = 'k';\n\n  validateToken(token: string): boolean {\n    const payload = decode(token, this.secret);\n    return payload.expiry > Date.now();\n  }\n\n  refresh(token: string) {\n    return token + '!';\n  }\n}\n",
    ),
    (
        "src/auth/jwt.ts",
        "export function decode(token: string, secret: string) {\n  return { expiry: token.length + secret.length };\n}\n",
    ),
    (
        "src/server/listen.ts",
        "export class HttpServer {\n  listen(port: number) {\n    return port;\n  }\n}\n\nexport function validateToken(header: string) {\n  return header.startsWith('Bearer');\n}\n",
    ),
    (
        "src/util/debounce.ts",
        "export function debounce(fn: () => void, wait: number) {\n  let timer: any;\n  return () => {\n    clearTimeout(timer);\n    timer = setTimeout(fn, wait);\n  };\n}\n",
    ),
];

struct World {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    meta: Arc<SqlMetaStore>,
    vectors: Arc<LanceStore>,
    indexer: Arc<Indexer>,
}

async fn world() -> World {
    world_of(FILES).await
}

async fn world_of(files: &[(&str, &str)]) -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    for (rel, text) in files {
        write(&root, rel, text);
    }
    let (meta, vectors, indexer) = support::bow_indexer(tmp.path()).await;
    support::index_path(&indexer, &root, "ws", RepoSettings::default()).await;
    World {
        _tmp: tmp,
        root,
        meta,
        vectors,
        indexer,
    }
}

impl World {
    fn searcher(&self, reranker: Option<Arc<dyn Reranker>>) -> Searcher {
        Searcher::new(
            self.meta.clone(),
            self.vectors.clone(),
            Arc::new(BagOfWords),
            reranker,
        )
    }
}

fn open() -> SearchOptions {
    SearchOptions {
        minimum_relevance_threshold: 0.0,
        ..SearchOptions::default()
    }
}

fn crumbs(hits: &[sextant::search::SearchHit]) -> Vec<String> {
    hits.iter()
        .map(|h| format!("{} > {}", h.path, h.breadcrumb))
        .collect()
}

#[tokio::test]
async fn symbol_lookup_by_name_parent_and_file() {
    let w = world().await;
    let s = w.searcher(None);
    let o = SearchOptions::default();

    let any = s.search("symbol = validateToken", &o).await.unwrap();
    assert_eq!(any.mode, SearchMode::Symbol);
    assert_eq!(
        crumbs(&any.results),
        [
            "src/auth/token.ts > TokenService > validateToken",
            "src/server/listen.ts > validateToken"
        ],
        "an ambiguous name returns every match"
    );
    assert!(any.results[0].chunk.full_source.contains("decode(token"));

    let scoped = s
        .search("symbol = TokenService > validateToken", &o)
        .await
        .unwrap();
    assert_eq!(
        crumbs(&scoped.results),
        ["src/auth/token.ts > TokenService > validateToken"]
    );

    let filed = s
        .search("symbol = src/server/listen.ts > validateToken", &o)
        .await
        .unwrap();
    assert_eq!(
        crumbs(&filed.results),
        ["src/server/listen.ts > validateToken"]
    );

    let wrong_parent = s
        .search("symbol = HttpServer > validateToken", &o)
        .await
        .unwrap();
    assert!(wrong_parent.results.is_empty());

    let unknown = s.search("symbol = nonExistentSymbol", &o).await.unwrap();
    assert!(unknown.results.is_empty() && unknown.candidates.is_empty());
    assert_eq!(unknown.tokens_used, 0);
}

#[tokio::test]
async fn natural_language_finds_the_function_by_its_words() {
    let w = world().await;
    let s = w.searcher(None);
    let rrf = SearchOptions {
        fusion: Fusion::Rrf,
        ..open()
    };
    let r = s
        .search("debounce a function call with a wait timer", &rrf)
        .await
        .unwrap();
    assert_eq!(r.mode, SearchMode::Semantic);
    assert_eq!(r.results[0].breadcrumb, "debounce");
    let top = r.results[0].scores;
    assert_eq!(top.vector_rank, Some(1));
    assert_eq!(top.lexical_rank, Some(1));
    assert!(
        (top.fused - 1.0).abs() < 1e-6,
        "first in both lists: {top:?}"
    );
    // The blend: the weighted mean of the vector similarity (weight 1) and BM25 relative
    // to the best (the lexical weight: a sentence's own for the order, the usual one for
    // the gate).
    let options = open();
    let r = s
        .search("debounce a function call with a wait timer", &options)
        .await
        .unwrap();
    assert_eq!(r.results[0].breadcrumb, "debounce");
    let top = r.results[0].scores;
    let blend = |lw: f32| (top.vector.unwrap() + lw) / (1.0 + lw);
    assert!(
        (top.fused - blend(options.sentence_lexical_weight)).abs() < 1e-5,
        "{top:?}"
    );
    let prior = top.prior.unwrap_or(0.0);
    assert!(
        (top.gate.unwrap() - (blend(options.lexical_weight) + prior)).abs() < 1e-5,
        "{top:?}"
    );
    // Scores are non-increasing.
    let finals: Vec<f32> = r.candidates.iter().map(|h| h.scores.final_score).collect();
    assert!(finals.windows(2).all(|p| p[0] >= p[1]), "{finals:?}");
}

#[tokio::test]
async fn path_filter_is_applied_by_the_stores() {
    let w = world().await;
    let s = w.searcher(None);
    let mut o = open();
    o.filter.paths = vec!["src/auth/".into()];
    let r = s.search("validate token", &o).await.unwrap();
    assert!(!r.candidates.is_empty());
    assert!(
        r.candidates.iter().all(|h| h.path.starts_with("src/auth/")),
        "{:?}",
        crumbs(&r.candidates)
    );
    o.filter.paths = vec!["src/**/listen.ts".into()];
    let r = s.search("validate token", &o).await.unwrap();
    assert!(
        r.candidates
            .iter()
            .all(|h| h.path == "src/server/listen.ts")
    );
    // A scope with nothing in it: a clean empty answer.
    o.filter.paths = vec!["docs/".into()];
    let r = s.search("validate token", &o).await.unwrap();
    assert!(r.results.is_empty() && r.candidates.is_empty());
}

#[tokio::test]
async fn relevance_gate_and_budget_bound_the_answer() {
    let w = world().await;
    let s = w.searcher(None);
    // Gate: nothing reaches a threshold above every possible fused score.
    let mut o = SearchOptions {
        minimum_relevance_threshold: 1.0,
        ..SearchOptions::default()
    };
    let r = s.search("cats and dogs", &o).await.unwrap();
    assert!(
        r.results.is_empty(),
        "never padded: {:?}",
        crumbs(&r.results)
    );
    // Gate 0.5: every returned result scores at least the threshold.
    o.minimum_relevance_threshold = 0.5;
    let r = s.search("validate token", &o).await.unwrap();
    assert!(!r.results.is_empty());
    assert!(r.results.iter().all(|h| h.scores.relevance() >= 0.5));
    assert_eq!(
        r.passed_gate,
        r.candidates
            .iter()
            .filter(|h| h.scores.relevance() >= 0.5)
            .count()
    );
    // Budget: one too small for the first two results keeps the first, passes over the
    // second and takes the later ones that still fit, in rank order; one that fits none
    // returns the best, truncated.
    let mut o = open();
    let all = s.search("validate token", &o).await.unwrap();
    assert!(all.results.len() >= 3);
    let budget = all.results[0].tokens + all.results[1].tokens - 1;
    o.max_token_budget = budget;
    let r = s.search("validate token", &o).await.unwrap();
    let mut left = budget;
    let expected: Vec<&str> = all
        .results
        .iter()
        .filter(|h| {
            let fits = h.tokens <= left;
            left -= if fits { h.tokens } else { 0 };
            fits
        })
        .map(|h| h.chunk.id.as_str())
        .collect();
    let got: Vec<&str> = r.results.iter().map(|h| h.chunk.id.as_str()).collect();
    assert_eq!(got, expected);
    assert!(
        got.len() >= 2,
        "the fixture has later results short enough: {got:?}"
    );
    assert_eq!(got[0], all.results[0].chunk.id);
    assert!(!got.contains(&all.results[1].chunk.id.as_str()));
    assert_eq!(r.tokens_used, budget - left);
    o.max_token_budget = 3;
    let r = s.search("validate token", &o).await.unwrap();
    assert_eq!(r.results.len(), 1);
    assert_eq!(r.truncated_to, Some(3));
}

/// Scores 0.9 for documents mentioning `listen`, 0.1 otherwise.
struct Scripted;

#[async_trait]
impl Reranker for Scripted {
    fn model_id(&self) -> &str {
        "scripted"
    }
    async fn rerank(&self, _: &str, documents: &[String]) -> Result<Vec<f32>, EmbedError> {
        Ok(documents
            .iter()
            .map(|d| if d.contains("listen(") { 0.9 } else { 0.1 })
            .collect())
    }
}

#[tokio::test]
async fn reranker_scores_are_blended_with_vector_similarity() {
    let w = world().await;
    let s = w.searcher(Some(Arc::new(Scripted)));
    // The blueprint's blend, before the ranking priors adjust it.
    let mut plain = open();
    plain.priors.enabled = false;
    let r = s.search("validate token", &plain).await.unwrap();
    assert!(r.reranked);
    for h in &r.candidates {
        let sc = h.scores;
        let want = sc.rerank.unwrap() * 0.65 + sc.vector.unwrap() * 0.35;
        assert!((sc.final_score - want).abs() < 1e-5, "{sc:?}");
    }
    // The reranker dominates, priors or not: every chunk quoting `listen(` outranks the
    // rest.
    let r = s.search("validate token", &open()).await.unwrap();
    let first_other = r
        .candidates
        .iter()
        .position(|h| h.scores.rerank == Some(0.1))
        .unwrap();
    assert!(
        r.candidates[..first_other]
            .iter()
            .all(|h| h.scores.rerank == Some(0.9))
    );
    assert!(first_other > 0);
    // Turning reranking off per request falls back to fused scores.
    let mut o = open();
    o.rerank = false;
    let plain = s.search("validate token", &o).await.unwrap();
    assert!(!plain.reranked && plain.candidates.iter().all(|h| h.scores.rerank.is_none()));
}

#[tokio::test]
async fn a_class_and_its_method_fold_into_one_result() {
    let w = world().await;
    let s = w.searcher(None);
    let r = s.search("http server listen port", &open()).await.unwrap();
    let server: Vec<_> = r
        .candidates
        .iter()
        .filter(|h| h.breadcrumb.starts_with("HttpServer"))
        .collect();
    assert_eq!(server.len(), 1, "{:?}", crumbs(&r.candidates));
    let other = if server[0].breadcrumb == "HttpServer" {
        "HttpServer > listen"
    } else {
        "HttpServer"
    };
    assert_eq!(server[0].folded, [other]);
}

#[tokio::test]
async fn invalid_options_and_empty_queries_are_clear_errors() {
    let w = world().await;
    let s = w.searcher(None);
    let o = SearchOptions {
        minimum_relevance_threshold: 1.5,
        ..SearchOptions::default()
    };
    let e = s.search("x", &o).await.unwrap_err().to_string();
    assert!(e.contains("minimumRelevanceThreshold"), "{e}");
    let e = s
        .search("   ", &SearchOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty"), "{e}");
}

#[tokio::test]
async fn freshness_check_reindexes_dirty_files_before_answering() {
    let w = world().await;
    let s = w
        .searcher(None)
        .with_freshness(w.indexer.clone(), Duration::from_secs(30));
    write(
        &w.root,
        "src/util/throttle.ts",
        "export function throttleRequests(limit: number) {\n  return limit;\n}\n",
    );
    let r = s
        .search("symbol = throttleRequests", &open())
        .await
        .unwrap();
    assert_eq!(
        crumbs(&r.results),
        ["src/util/throttle.ts > throttleRequests"]
    );
}

#[tokio::test]
async fn symbol_lookups_render_in_the_same_format_as_searches() {
    let w = world().await;
    let s = w.searcher(None);
    for query in [
        "symbol = TokenService > validateToken",
        "validate token expiry",
    ] {
        let r = s.search(query, &open()).await.unwrap();
        let files = s.result_files(&r).await.unwrap();
        let content = sextant::render::content_items(&r, &files);
        assert!(content.len() >= 2, "{query}: graph + snapshots");
        assert!(
            content[0]
                .text
                .starts_with(&format!("Search: \"{query}\" | "))
        );
        assert_eq!(content[0].annotations.priority, 1.0);
        for snapshot in &content[1..] {
            assert!(snapshot.text.starts_with("// src/"), "{}", snapshot.text);
        }
    }
    let r = s
        .search("symbol = TokenService > validateToken", &open())
        .await
        .unwrap();
    let files = s.result_files(&r).await.unwrap();
    let content = sextant::render::content_items(&r, &files);
    assert_eq!(content.len(), 2);
    assert!(content[1].text.contains("import { decode } from './jwt';"));
    assert!(content[1].text.contains("private secret = 'k';"));
    assert!(!content[1].text.contains("refresh("));
}

#[tokio::test]
async fn results_carry_their_structural_metadata_and_the_graph_marks_connections() {
    let w = world().await;
    let s = w.searcher(None);
    // Two results that call one another: the caller and the callee.
    let method = s
        .search(
            "symbol = TokenService > validateToken",
            &SearchOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(method.metadata.len(), 1);
    let meta = &method.metadata[0];
    assert_eq!(meta.name, "TokenService.validateToken");
    let calls: Vec<(&str, Option<&str>)> = meta
        .calls
        .iter()
        .map(|r| (r.name.as_str(), r.path.as_deref()))
        .collect();
    assert_eq!(calls, [("decode", Some("src/auth/jwt.ts"))]);
    let uses: Vec<&str> = meta.types_used.iter().map(|r| r.name.as_str()).collect();
    assert!(uses.is_empty(), "{uses:?}");

    let decode = s
        .search("symbol = decode", &SearchOptions::default())
        .await
        .unwrap();
    let callers: Vec<&str> = decode.metadata[0]
        .callers
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(callers, ["TokenService.validateToken"]);
    assert_eq!(decode.metadata[0].reference_files, ["src/auth/token.ts"]);

    // Both in one response: each names the other with ★.
    let mut both = method.clone();
    both.results.extend(decode.results.clone());
    both.metadata.extend(decode.metadata.clone());
    let (graph, _) = sextant::render::connection_graph(&both, 0);
    assert!(graph.contains(" Calls: decode ★"), "{graph}");
    assert!(
        graph.contains(" Called by: TokenService.validateToken ★"),
        "{graph}"
    );
    assert!(graph.contains("★ = in results"), "{graph}");

    // The class lists its members.
    let class = s
        .search("symbol = TokenService", &SearchOptions::default())
        .await
        .unwrap();
    assert_eq!(
        class.metadata[0].members,
        ["secret", "validateToken()", "refresh()"]
    );
}

#[tokio::test]
async fn hits_inside_function_bodies_lift_to_the_outermost_function() {
    // The words "exponential jitter" are only in the innermost callback's own chunk
    // (the function's and the outer callback's embedding texts collapse it), two levels
    // below the function: vector search finds the callback, the answer is the function.
    let w = world().await;
    write(
        &w.root,
        "src/jobs/retry.ts",
        "import { backoff } from './backoff';\n\nexport function retryQueue(jobs: string[]) {\n  return jobs.map((job) => {\n    return [job].forEach((attempt) => {\n      backoff(attempt, 'exponential jitter');\n    });\n  });\n}\n",
    );
    let s = w
        .searcher(None)
        .with_freshness(w.indexer.clone(), Duration::from_secs(30));
    for retrieval in [Retrieval::Vector, Retrieval::Lexical, Retrieval::Hybrid] {
        let options = SearchOptions {
            retrieval,
            ..open()
        };
        let r = s.search("exponential jitter", &options).await.unwrap();
        let top = &r.candidates[0];
        assert_eq!(
            (
                top.path.as_str(),
                top.breadcrumb.as_str(),
                top.kind.as_str()
            ),
            ("src/jobs/retry.ts", "retryQueue", "function"),
            "{retrieval:?}: {:?}",
            crumbs(&r.candidates)
        );
        assert!(
            r.candidates
                .iter()
                .all(|h| h.kind != "callback" && h.kind != "import"),
            "{retrieval:?}: callbacks and imports are never answers: {:?}",
            crumbs(&r.candidates)
        );
    }
}

#[tokio::test]
async fn a_question_sharing_one_word_with_the_code_is_not_answered() {
    // BM25 relative to the query's best always gives the best match 1.0; sharing one
    // word ("token") of eight with the question must not carry it past the default gate.
    let w = world().await;
    let s = w.searcher(None);
    let r = s
        .search(
            "rotate the kubernetes ingress certificate token daily with helm charts",
            &SearchOptions::default(),
        )
        .await
        .unwrap();
    let top = &r.candidates[0];
    assert!(
        top.scores.lexical_rank.is_some(),
        "{:?}",
        crumbs(&r.candidates)
    );
    assert!(
        r.results.is_empty(),
        "{:?}",
        r.results
            .iter()
            .map(|h| (&h.breadcrumb, h.scores))
            .collect::<Vec<_>>()
    );
    // A question the code does answer still passes the same gate.
    let r = s
        .search("validate the token", &SearchOptions::default())
        .await
        .unwrap();
    assert!(
        crumbs(&r.results)
            .iter()
            .any(|c| c.ends_with("validateToken")),
        "{:?}",
        crumbs(&r.results)
    );
}

/// A class, a test that names it over and over, and a field typed by it.
const POOL: &[(&str, &str)] = &[
    (
        "src/pool/WorkerPool.ts",
        "export class WorkerPool {\n  private jobs: string[] = [];\n\n  run(job: string) {\n    this.jobs.push(job);\n    return this.jobs.length;\n  }\n}\n",
    ),
    (
        "src/__tests__/WorkerPool.test.ts",
        "import { WorkerPool } from '../pool/WorkerPool';\n\ndescribe('WorkerPool', () => {\n  it('runs a job on the WorkerPool', () => {\n    const pool = new WorkerPool();\n    expect(pool.run('WorkerPool job')).toBe(1);\n  });\n});\n",
    ),
    (
        "src/farm.ts",
        "import { WorkerPool } from './pool/WorkerPool';\n\nexport class Farm {\n  constructor(private workerPool: WorkerPool) {}\n\n  start(job: string) {\n    return this.workerPool.run(job);\n  }\n}\n",
    ),
];

/// [`BagOfWords`], declaring similarities that spread twice as wide as bge-small's.
struct Wide;

#[async_trait]
impl sextant::embed::Embedder for Wide {
    fn model_id(&self) -> &str {
        BagOfWords.model_id()
    }
    fn dims(&self) -> usize {
        BagOfWords.dims()
    }
    fn limits(&self) -> sextant::embed::BatchLimits {
        BagOfWords.limits()
    }
    fn score_spread(&self) -> f32 {
        2.0
    }
    async fn embed(
        &self,
        texts: &[String],
        kind: sextant::embed::InputKind,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        BagOfWords.embed(texts, kind).await
    }
}

/// The prior `s` gives the [`POOL`] test file's candidate for `question`.
async fn prior_of_the_test(s: &Searcher, question: &str) -> f32 {
    let r = s.search(question, &open()).await.unwrap();
    let test = r
        .candidates
        .iter()
        .find(|h| h.path.contains("__tests__"))
        .expect("the test is a candidate");
    test.scores.prior.unwrap()
}

#[tokio::test]
async fn a_bare_identifier_is_answered_by_its_definition_and_tests_yield_to_source() {
    let w = world_of(POOL).await;
    let s = w.searcher(None);
    let r = s.search("WorkerPool", &open()).await.unwrap();
    let first = &r.results[0];
    assert_eq!(
        (first.path.as_str(), first.breadcrumb.as_str()),
        ("src/pool/WorkerPool.ts", "WorkerPool"),
        "{:?}",
        crumbs(&r.results)
    );
    assert!(first.scores.final_score >= 0.9, "{:?}", first.scores);
    // The test that names the class most is still found, below its definition.
    assert!(r.candidates.iter().any(|h| h.path.contains("__tests__")));

    // A sentence that does not ask for tests: test code loses a little; one that does
    // keeps its score.
    let test_prior = |question: &'static str| prior_of_the_test(&s, question);
    let narrow = test_prior("run a job on the worker pool").await;
    assert!(narrow < 0.0);
    assert!(test_prior("unit tests for the worker pool").await >= 0.0);

    // The priors are in bge-small's units: under a model whose similarities spread twice
    // as wide, the same test moves twice as far.
    let wide_model = Searcher::new(w.meta.clone(), w.vectors.clone(), Arc::new(Wide), None);
    let wide = prior_of_the_test(&wide_model, "run a job on the worker pool").await;
    assert!((wide - 2.0 * narrow).abs() < 1e-4, "{wide} vs {narrow}");

    // The repository can say its tests are code: then they lose nothing.
    let mut settings = RepoSettings::default();
    settings
        .path_roles
        .insert("source".into(), vec!["src/__tests__/**".into()]);
    w.indexer
        .update_settings("ws", None, settings)
        .await
        .unwrap();
    assert!(test_prior("run a job on the worker pool").await >= 0.0);
    let mut bad = RepoSettings::default();
    bad.path_roles.insert("tests".into(), vec!["x/**".into()]);
    let err = w
        .indexer
        .update_settings("ws", None, bad)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unknown role"), "{err}");

    // Priors off: scores are the fused scores, untouched.
    let mut plain = open();
    plain.priors.enabled = false;
    let r = s.search("WorkerPool", &plain).await.unwrap();
    assert!(r.candidates.iter().all(|h| h.scores.prior.is_none()));
}

#[tokio::test]
async fn a_file_outline_answers_for_its_file_beside_its_code() {
    use sextant::store::MetaStore;
    let w = world().await;
    let s = w.searcher(None);
    // token.ts and listen.ts declare three things each: they have outlines; jwt.ts and
    // debounce.ts declare one: they have none.
    let mut only_files = open();
    only_files.filter.kinds = vec!["file".into()];
    let r = s
        .search("token service validate refresh", &only_files)
        .await
        .unwrap();
    let mut paths: Vec<&str> = r.candidates.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(paths[0], "src/auth/token.ts");
    paths.sort_unstable();
    assert_eq!(paths, ["src/auth/token.ts", "src/server/listen.ts"]);
    let outline = &r.candidates[0];
    assert_eq!(outline.kind, "file");
    assert_eq!((outline.start_line, outline.end_line), (1, 14));
    assert!(
        outline
            .chunk
            .content
            .contains("export class TokenService\n  validateToken(token: string): boolean\n  refresh(token: string)\n"),
        "{}",
        outline.chunk.content
    );
    assert!(outline.chunk.content.contains("// imports: ./jwt"));

    // Unfiltered, the outline stands beside the methods it lists: neither folds the other.
    let r = s
        .search("token service validate refresh", &open())
        .await
        .unwrap();
    let token_units: Vec<&str> = r
        .candidates
        .iter()
        .filter(|h| h.path == "src/auth/token.ts")
        .map(|h| h.kind.as_str())
        .collect();
    assert!(token_units.contains(&"file"), "{token_units:?}");
    assert!(token_units.contains(&"method"), "{token_units:?}");

    // The outline is not a symbol: the file's symbols and the graph do not see it.
    let repo = w.indexer.find_repo("ws").await.unwrap();
    let symbols = w
        .meta
        .file_symbols(&repo.id, "src/auth/token.ts")
        .await
        .unwrap();
    assert!(!symbols.is_empty());
    assert!(symbols.iter().all(|s| s.kind != "file"), "{symbols:?}");
}

#[tokio::test]
async fn a_misspelt_or_partial_name_is_answered_by_the_definition_it_means() {
    let w = world_of(POOL).await;
    let s = w.searcher(None);
    for asked in ["WrokerPool", "worker_pool", "WorkerPoo", "workerpool"] {
        let r = s.search(asked, &open()).await.unwrap();
        let first = &r.results[0];
        assert_eq!(
            (first.path.as_str(), first.breadcrumb.as_str()),
            ("src/pool/WorkerPool.ts", "WorkerPool"),
            "{asked}: {:?}",
            crumbs(&r.results)
        );
        assert!(
            first.scores.final_score >= 0.9,
            "{asked}: {:?}",
            first.scores
        );
    }
    // A name nothing is close to is not guessed: no definition tier.
    let r = s.search("ThreadQueue", &open()).await.unwrap();
    assert!(
        r.candidates.iter().all(|h| h.scores.final_score < 0.9),
        "{:?}",
        crumbs(&r.candidates)
    );
}

#[tokio::test]
async fn sentences_are_ordered_with_their_own_lexical_weight_and_gated_with_the_usual_one() {
    let w = world().await;
    let s = w.searcher(None);
    let question = "validate the token of a request";
    let r = s.search(question, &open()).await.unwrap();
    let hit = r
        .candidates
        .iter()
        .find(|h| h.scores.lexical.is_some())
        .expect("a candidate with BM25 evidence");
    let gate = hit
        .scores
        .gate
        .expect("a sentence is gated on its own blend");
    assert_ne!(gate, hit.scores.final_score);
    // The same weight for both: nothing differs, no separate gate score.
    let same = SearchOptions {
        sentence_lexical_weight: open().lexical_weight,
        ..open()
    };
    let r = s.search(question, &same).await.unwrap();
    assert!(r.candidates.iter().all(|h| h.scores.gate.is_none()));
    // A symbol question is ordered and gated with `lexicalWeight`.
    let r = s.search("validateToken", &open()).await.unwrap();
    assert!(r.candidates.iter().all(|h| h.scores.gate.is_none()));
    // The gate reads the gate score: at a threshold between the two, a candidate is
    // answered or not by its gate score alone.
    let strict = SearchOptions {
        minimum_relevance_threshold: 0.99,
        ..open()
    };
    let r = s.search(question, &strict).await.unwrap();
    assert!(
        r.results.iter().all(|h| h.scores.relevance() >= 0.99),
        "{:?}",
        crumbs(&r.results)
    );
}

#[tokio::test]
async fn a_polyglot_repository_answers_in_each_language_and_across_them() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/graph/polyglot");
    let (files, _) = sextant::index::read_sources(&dir).expect("readable fixture");
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let w = world_of(&files).await;
    let s = w.searcher(None);
    let o = SearchOptions::default();
    let lookup = |q: &'static str| {
        let s = &s;
        let o = &o;
        async move { crumbs(&s.search(q, o).await.unwrap().results) }
    };
    // Symbol lookups, with the separators each language writes.
    assert_eq!(
        lookup("symbol = Invoice.total").await,
        ["api/app/models.py > Invoice > total"]
    );
    assert_eq!(
        lookup("symbol = Store.Add").await,
        ["backend/store/store.go > Store.Add"]
    );
    assert_eq!(
        lookup("symbol = MemoryStore::credit").await,
        ["core/src/store/mod.rs > MemoryStore > credit"]
    );
    assert_eq!(
        lookup("symbol = com.acme.billing.Billing.chargeNew").await,
        ["server/src/main/java/com/acme/billing/Billing.java > Billing > chargeNew"]
    );

    // Each language's own name for a construct travels with its results.
    let store = s.search("symbol = Store", &o).await.unwrap();
    let trait_hit = store
        .results
        .iter()
        .find(|h| h.path.ends_with(".rs"))
        .expect("the Rust trait Store");
    assert_eq!(trait_hit.chunk.native_kind.as_deref(), Some("trait"));
    // A question answered in its language, with the docstring's words.
    let remind = s
        .search("mail a reminder for an unpaid invoice", &open())
        .await
        .unwrap();
    assert_eq!(
        crumbs(&remind.results).first().map(String::as_str),
        Some("api/app/services/billing.py > remind"),
        "{:?}",
        crumbs(&remind.results)
    );
    // Its graph crosses files within Python.
    let meta = remind
        .metadata
        .iter()
        .find(|m| m.name == "remind")
        .expect("metadata of remind");
    let calls: Vec<&str> = meta.calls.iter().map(|r| r.name.as_str()).collect();
    assert!(
        calls.contains(&"send") && calls.contains(&"Invoice.total"),
        "{calls:?}"
    );

    // Across languages: balances live in Rust and Java; the language filter keeps one.
    let any = s.search("balance of an account", &open()).await.unwrap();
    let languages: std::collections::BTreeSet<&str> = any
        .results
        .iter()
        .chain(&any.candidates)
        .map(|h| h.chunk.language.id())
        .collect();
    assert!(
        languages.contains("rust") && languages.contains("java"),
        "{languages:?}"
    );
    let mut only_java = open();
    only_java.filter.languages = vec!["java".into()];
    let java = s.search("balance of an account", &only_java).await.unwrap();
    assert!(!java.results.is_empty());
    assert!(java.results.iter().all(|h| h.path.ends_with(".java")));
}

/// Issue 39: the first minutes after a registration answer as well as BM25 does. A
/// repository registered over REST whose model has not embedded a thing yet: a question
/// in words, with the default relevance gate, gets the right function by text, and the
/// answer says vectors are still landing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_vectors_are_pending_a_question_is_answered_by_text_through_the_server() {
    use crate::support::embedders::{BagOfWords, Gated};
    use serde_json::{Value, json};

    let model = Arc::new(Gated::closed(Arc::new(BagOfWords)));
    let setup = crate::support::app::Setup {
        index_model: Some(model.clone()),
        ..Default::default()
    };
    let server = crate::support::app::start_with(true, Default::default(), setup).await;
    let http = reqwest::Client::new();
    let created = http
        .post(format!("{}/api/v1/repositories", server.base))
        .json(&json!({"path": server.root, "name": "ws"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let answer: Value = loop {
        let answer = crate::support::process::json_of(
            http.post(format!("{}/api/v1/search", server.base))
                .json(&json!({"query": "validate token"})),
        )
        .await;
        if answer["response"]["results"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
        {
            break answer;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no answer by text: {answer}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(
        answer["response"]["results"][0]["breadcrumb"], "validateToken",
        "{answer}"
    );
    let pending = &answer["response"]["embedding"];
    assert!(pending["pending"].as_u64().unwrap_or(0) > 0, "{answer}");
    let texts: String = answer["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect();
    assert!(texts.contains("still being embedded"), "{texts}");
    model.gate.add_permits(1_000);
}
