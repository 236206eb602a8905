//! `sextant search` and `sextant eval`: queries against the index, one at a time or as a
//! JSONL query set scored by `../shared/eval/score.py`.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;

use super::index::{fail, sync_with_bars};
use super::{CliError, out, write_err};
use crate::app::{Background, runtime};
use crate::auth::Principal;
use crate::config::Config;
use crate::parse::SymbolKind;
use crate::service::records::{
    Fusion, Priors, RepoSettings, Retrieval, SearchHit, SearchOptions, SearchResponse,
    StageTimings, Tokenizer,
};
use crate::service::{Registration, Service, Source};

/// Search knobs shared by `search` and `eval` (the blueprint's configuration table).
#[derive(Debug, Clone, clap::Args)]
pub struct SearchArgs {
    /// Retrievers for stage 1.
    #[arg(long, value_enum, default_value_t = Retrieval::Hybrid)]
    pub retrieval: Retrieval,
    /// Fusion of the vector and BM25 lists.
    #[arg(long, value_enum, default_value_t = Fusion::Blend)]
    pub fusion: Fusion,
    /// Minimum finalScore of a returned result (0.0–1.0).
    #[arg(long, default_value_t = 0.5)]
    pub min_relevance: f32,
    /// Token budget of the whole answer (graph, snapshots, notes): a ceiling.
    #[arg(long, default_value_t = 8000)]
    pub budget: usize,
    /// The encoding the budget counts in: your model's (`claude`; `o200k` for GPT-4o and
    /// later; `cl100k` for GPT-4).
    #[arg(long, value_enum, default_value_t = Tokenizer::Claude)]
    pub tokenizer: Tokenizer,
    /// Stage-1 candidates per retriever.
    #[arg(long, default_value_t = 50)]
    pub candidates: usize,
    /// Weight of the reranker score in finalScore.
    #[arg(long, default_value_t = 0.65)]
    pub rerank_weight: f32,
    /// Weight of the vector similarity in finalScore.
    #[arg(long, default_value_t = 0.35)]
    pub vector_weight: f32,
    /// Weight of the BM25 list relative to the vector list in fusion (orders symbol
    /// questions, gates all).
    #[arg(long, default_value_t = 0.3)]
    pub lexical_weight: f32,
    /// Weight of the BM25 evidence when ordering answers to sentences.
    #[arg(long, default_value_t = 0.15)]
    pub sentence_lexical_weight: f32,
    /// Skip the configured reranker.
    #[arg(long)]
    pub no_rerank: bool,
    /// Ranking priors as JSON, e.g. '{"testPenalty":0.3}' or '{"enabled":false}'
    /// (unset weights keep their defaults; see docs/ARCHITECTURE.md).
    #[arg(long, value_parser = parse_priors)]
    pub priors: Option<Priors>,
}

fn parse_priors(json: &str) -> Result<Priors, String> {
    let priors: Priors =
        serde_json::from_str(json).map_err(|e| format!("not a priors object: {e}"))?;
    priors.validate()?;
    Ok(priors)
}

impl SearchArgs {
    pub(super) fn options(&self) -> SearchOptions {
        SearchOptions {
            retrieval: self.retrieval,
            fusion: self.fusion,
            minimum_relevance_threshold: self.min_relevance,
            max_token_budget: self.budget,
            tokenizer: self.tokenizer,
            max_vector_candidates: self.candidates,
            max_lexical_candidates: self.candidates,
            rerank_weight: self.rerank_weight,
            vector_weight: self.vector_weight,
            rerank: !self.no_rerank,
            lexical_weight: self.lexical_weight,
            sentence_lexical_weight: self.sentence_lexical_weight,
            priors: self.priors.unwrap_or_default(),
            ..SearchOptions::default()
        }
    }
}

/// Output formats of `sextant search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Connection graph and snapshots as plain text.
    Text,
    /// The MCP multi-content array.
    Mcp,
    /// The structured response.
    Json,
}

/// Options of `sextant search`.
#[derive(Debug, clap::Args)]
pub struct SearchCommand {
    /// A question, or `symbol = [path >] [Parent >] name`.
    pub query: String,
    /// Only these repositories (name or id; repeatable).
    #[arg(long = "repo")]
    pub repos: Vec<String>,
    /// Only these paths: directory prefixes, files or globs (repeatable).
    #[arg(long = "path")]
    pub paths: Vec<String>,
    /// Only `code`, `docs` or `config` files.
    #[arg(long, value_enum)]
    pub kind: Option<crate::parse::Category>,
    /// Search a ref the repositories track besides their default one (`sextant repo ref
    /// add`): the code as it is on that branch, tag or commit.
    #[arg(long = "ref")]
    pub git_ref: Option<String>,
    /// Output: `text` (the connection graph, then one snapshot per file), `mcp` (the MCP
    /// content array as JSON) or `json` (the whole structured response).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Shorthand for `--format json`.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Search settings.
    #[command(flatten)]
    pub settings: SearchArgs,
}

impl SearchCommand {
    /// The output format, `--json` included.
    pub fn output(&self) -> Format {
        if self.json { Format::Json } else { self.format }
    }
}

/// Options of `sextant eval`.
#[derive(Debug, clap::Args)]
pub struct EvalCommand {
    /// Corpus directory. A query's `corpus` field names a subdirectory of it when one
    /// exists (`rxjs-stripped`); otherwise the directory itself is the repository.
    #[arg(long)]
    pub corpus: PathBuf,
    /// Queries, one JSON object per line with `id` and `query` (and optionally `corpus`,
    /// and gold answers as `gold` or `path`/`start_line`/`end_line`).
    #[arg(long)]
    pub queries: PathBuf,
    /// Results JSONL for `score.py`: per query the top results after reranking, before the
    /// relevance gate and budget.
    #[arg(long)]
    pub out: PathBuf,
    /// Results written per query.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Search settings.
    #[command(flatten)]
    pub settings: SearchArgs,
}

/// Runs one search on the local data directory, through the service as the server
/// runs it (working trees checked for changes first, bounded), and prints what
/// `--server` prints.
pub fn search(args: SearchCommand, config: &Config) -> Result<(), CliError> {
    // One question: reading the chunk store into memory (`store::flat`) would cost more
    // than it saves, and run beside the search.
    let config = &Config {
        search_memory_mb: 0,
        ..config.clone()
    };
    runtime()?.block_on(async {
        let service = crate::app::start(config, Background::None, |s| s)
            .await?
            .service;
        let mut options = args.settings.options();
        options.filter.repositories = args.repos.clone();
        options.filter.paths = args.paths.clone();
        options.filter.categories = args.kind.iter().map(|k| k.to_string()).collect();
        options.filter.git_ref = args.git_ref.clone();
        let answer = service
            .search(&Principal::local(), &args.query, options.into())
            .await
            .map_err(fail)?;
        let answer = json!({ "response": answer.response, "content": answer.content });
        print_answer(&answer, args.output())
    })
}

/// Prints a search answer (REST's `SearchResult` shape: `response` and `content`) in
/// `format`: local and `--server` searches print alike.
pub(super) fn print_answer(answer: &serde_json::Value, format: Format) -> Result<(), CliError> {
    let mut w = out();
    match format {
        Format::Json => serde_json::to_writer_pretty(&mut w, &answer["response"]).map_err(fail)?,
        Format::Mcp => {
            serde_json::to_writer_pretty(&mut w, &json!({ "content": answer["content"] }))
                .map_err(fail)?
        }
        Format::Text => {
            for item in answer["content"].as_array().into_iter().flatten() {
                let text = item["text"].as_str().unwrap_or("");
                writeln!(w, "{}\n", text.trim_end()).map_err(write_err)?;
            }
            return Ok(());
        }
    }
    writeln!(w).map_err(write_err)
}

/// A gold answer of an eval query.
#[derive(Debug, Clone, Deserialize)]
struct Gold {
    path: String,
    start_line: u32,
    end_line: u32,
}

/// One line of a query file.
#[derive(Debug, Deserialize)]
struct EvalQuery {
    id: String,
    query: String,
    #[serde(default)]
    corpus: Option<String>,
    #[serde(default)]
    gold: Vec<Gold>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    start_line: Option<u32>,
    #[serde(default)]
    end_line: Option<u32>,
}

impl EvalQuery {
    fn gold(&self) -> Vec<Gold> {
        match (&self.path, self.start_line, self.end_line) {
            (Some(path), Some(start_line), Some(end_line)) if self.gold.is_empty() => {
                vec![Gold {
                    path: path.clone(),
                    start_line,
                    end_line,
                }]
            }
            _ => self.gold.clone(),
        }
    }
}

/// `score.py`'s hit rule: same path, and the gold start inside the result or the result
/// inside the gold range.
fn is_hit(hit: &SearchHit, gold: &Gold) -> bool {
    hit.path == gold.path
        && ((hit.start_line <= gold.start_line && gold.start_line <= hit.end_line)
            || (gold.start_line <= hit.start_line && hit.end_line <= gold.end_line))
}

fn read_queries(path: &Path) -> Result<Vec<EvalQuery>, CliError> {
    let file = std::fs::File::open(path).map_err(|source| CliError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let mut queries = Vec::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| CliError::Read {
            path: path.display().to_string(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let q: EvalQuery = serde_json::from_str(&line).map_err(|e| {
            CliError::Output(format!(
                "{}:{}: not a query object with `id` and `query`: {e}",
                path.display(),
                n + 1
            ))
        })?;
        queries.push(q);
    }
    Ok(queries)
}

/// Indexes the corpus (into a temporary data directory unless `--data-dir` was given),
/// runs every query through the service as the server would, and writes the results
/// JSONL.
pub fn eval(args: EvalCommand, config: &Config, data_dir_given: bool) -> Result<(), CliError> {
    let queries = read_queries(&args.queries)?;
    let temp = if data_dir_given {
        None
    } else {
        Some(
            tempfile::tempdir()
                .map_err(|e| CliError::Output(format!("cannot create a temp dir: {e}")))?,
        )
    };
    let mut config = config.clone();
    if let Some(t) = &temp {
        // Models stay where the usual data dir keeps them, so they are fetched once.
        let models = config.embed.home(&config.data_dir).to_path_buf();
        config.embed.home = Some(models);
        config.data_dir = t.path().to_path_buf();
    }
    config.allowed_roots.clear();
    runtime()?.block_on(async {
        let service = crate::app::start(&config, Background::Queries, |s| s)
            .await?
            .service;
        let repos = index_corpora(&service, &args.corpus, &queries).await?;
        // Queries read the newest version only, one at a time.
        service.finish().await;
        let file = std::fs::File::create(&args.out)
            .map_err(|e| CliError::Output(format!("cannot create {}: {e}", args.out.display())))?;
        let mut w = std::io::BufWriter::new(file);
        let base = args.settings.options();
        let mut tally = Tally::default();
        let mut latencies = Vec::new();
        for q in &queries {
            let mut options = base.clone();
            options.filter.repositories = vec![repos[&q.corpus].clone()];
            let answer = service
                .search(&Principal::local(), &q.query, options.into())
                .await
                .map_err(fail)?;
            let response = answer.response;
            latencies.push(response.timings);
            // Function-level results leave file outlines out: an outline spans its whole
            // file, and a scorer that takes a range holding the gold as a hit would count
            // it as finding every function of a small file.
            let top: Vec<&SearchHit> = response
                .candidates
                .iter()
                .filter(|h| h.chunk.node_kind != SymbolKind::File)
                .take(args.top)
                .collect();
            serde_json::to_writer(&mut w, &result_line(q, &top, &response, args.top))
                .map_err(fail)?;
            writeln!(w).map_err(write_err)?;
            tally.add(&q.gold(), &top, &response.results);
        }
        w.flush().map_err(write_err)?;
        eprintln!(
            "sextant eval: {} queries → {} ({})",
            queries.len(),
            args.out.display(),
            latency_summary(&latencies)
        );
        tally.print(args.top);
        Ok(())
    })
}

/// Registers and syncs one repository per distinct corpus of `queries` (a query's
/// `corpus` subdirectory of `corpus` when it exists, else `corpus` itself). Returns
/// the repository id of each.
async fn index_corpora(
    service: &Service,
    corpus: &Path,
    queries: &[EvalQuery],
) -> Result<BTreeMap<Option<String>, String>, CliError> {
    let mut repos: BTreeMap<Option<String>, String> = BTreeMap::new();
    for q in queries {
        if repos.contains_key(&q.corpus) {
            continue;
        }
        let root = match &q.corpus {
            Some(sub) if corpus.join(sub).is_dir() => corpus.join(sub),
            _ => corpus.to_path_buf(),
        };
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "corpus".into());
        let registration = Registration {
            source: Source::Path(root.clone()),
            name: Some(name),
            settings: RepoSettings::default(),
        };
        let repo = service
            .add(&Principal::local(), registration)
            .await
            .map_err(fail)?;
        eprintln!("sextant eval: indexing {} ({})", root.display(), repo.name);
        let (repo, report) = sync_with_bars(service, &repo.id).await?;
        eprintln!(
            "sextant eval: {} files, {} chunks in {:.1} s ({})",
            report.indexed + report.unchanged,
            report.chunks,
            report.duration.as_secs_f64(),
            report.phases
        );
        repos.insert(q.corpus.clone(), repo.id);
    }
    Ok(repos)
}

/// One line of the results JSONL: the top function-level results with their scores,
/// the distinct files of all candidates (outlines included: they rank files), in order,
/// and the gated, budgeted answer.
fn result_line(
    q: &EvalQuery,
    top: &[&SearchHit],
    response: &SearchResponse,
    most: usize,
) -> serde_json::Value {
    let mut files: Vec<&str> = Vec::new();
    for h in &response.candidates {
        if !files.contains(&h.path.as_str()) {
            files.push(&h.path);
            if files.len() == most {
                break;
            }
        }
    }
    json!({
        "query_id": q.id,
        "files": files,
        "results": top.iter().map(|h| json!({
            "path": h.path,
            "start_line": h.start_line,
            "end_line": h.end_line,
            "symbol": h.breadcrumb.replace(" > ", "."),
            "score": h.scores.final_score,
            "scores": h.scores,
        })).collect::<Vec<_>>(),
        "answer": response.results.iter().map(|h| json!({
            "path": h.path,
            "start_line": h.start_line,
            "end_line": h.end_line,
            "kind": h.kind,
        })).collect::<Vec<_>>(),
    })
}

/// Median and 95th percentile latency, and each stage's median.
fn latency_summary(latencies: &[StageTimings]) -> String {
    let pct = |stage: fn(&StageTimings) -> f64, p: f64| {
        let mut v: Vec<f64> = latencies.iter().map(stage).collect();
        v.sort_by(f64::total_cmp);
        v.get(((v.len() as f64 - 1.0) * p) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    format!(
        "p50 {:.0} ms, p95 {:.0} ms; p50 per stage: freshness {:.1}, embed {:.1}, retrieve {:.1}, units {:.1}, rerank {:.1}, priors {:.1}, enrich {:.1}, render {:.1} ms",
        pct(|t| t.total_ms, 0.5),
        pct(|t| t.total_ms, 0.95),
        pct(|t| t.freshness_ms, 0.5),
        pct(|t| t.embed_ms, 0.5),
        pct(|t| t.retrieve_ms, 0.5),
        pct(|t| t.units_ms, 0.5),
        pct(|t| t.rerank_ms, 0.5),
        pct(|t| t.priors_ms, 0.5),
        pct(|t| t.enrich_ms, 0.5),
        pct(|t| t.render_ms, 0.5),
    )
}

/// How often the gold was found, over the queries that have gold answers.
#[derive(Debug, Default)]
struct Tally {
    graded: usize,
    in_top: usize,
    in_answer: usize,
    answer_sizes: usize,
}

impl Tally {
    /// Counts one query: whether a gold answer is among `top` and among the function-
    /// level results of `answer`.
    fn add(&mut self, gold: &[Gold], top: &[&SearchHit], answer: &[SearchHit]) {
        if gold.is_empty() {
            return;
        }
        self.graded += 1;
        self.answer_sizes += answer.len();
        let is_gold = |h: &SearchHit| gold.iter().any(|g| is_hit(h, g));
        if top.iter().any(|h| is_gold(h)) {
            self.in_top += 1;
        }
        if answer
            .iter()
            .any(|h| h.chunk.node_kind != SymbolKind::File && is_gold(h))
        {
            self.in_answer += 1;
        }
    }

    /// Prints the tally on stderr (nothing without graded queries).
    fn print(&self, top: usize) {
        if self.graded == 0 {
            return;
        }
        let share = |n: usize| n as f64 / self.graded as f64;
        eprintln!(
            "sextant eval: gold in top {top}: {}/{} ({:.3}); gold in the gated, budgeted answer: {}/{} ({:.3}), {:.1} results per answer",
            self.in_top,
            self.graded,
            share(self.in_top),
            self.in_answer,
            self.graded,
            share(self.in_answer),
            share(self.answer_sizes)
        );
    }
}
