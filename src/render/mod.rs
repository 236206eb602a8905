//! Output formats (pure: results and chunks in, text out; no I/O).
//!
//! - `snapshot`: smart structural snapshots, one per file, targets merged.
//! - [`graph`] / [`connection_graph`]: the blueprint's connection graph (summary line, one
//!   entry per result with hierarchy, calls, callers, type flows, ★/◆ markers, shared
//!   dependencies), from the results' [`crate::graph::SymbolMetadata`].
//! - [`grep::render`]: a grep answer as grep-like text (matches grouped by file, context
//!   lines, the cursor to go on with).
//! - [`content_items`]: the MCP multi-content response: the graph first (priority 1.0),
//!   then the snapshots in score order with priority from `finalScore`, every item for
//!   `audience: ["assistant"]`.
//! - [`budget::fit_content`]: the same within the request's token budget, counted over the
//!   whole answer (graph, snapshots, notes): lowest-ranked results left out until it fits.
//!
//! # Design notes
//!
//! - `snapshot::snapshot(path, targets, file_chunks)`: a file outline among the targets comes
//!   first, as written; then the `// path` header (once), the targets shown
//!   whole; root-level constants, variables, types, interfaces and enums whose names the
//!   shown code uses, and properties of a class that wraps a target, to a fixed point (a
//!   shown `private cache = new Cache(TTL)` brings `TTL`); every ancestor as a wrapper (its
//!   lines up to the one opening the body, then `}`); the imports the shown code and the
//!   wrapper heads use, in source order. Plain declarations stay together; bodies are set off
//!   by blank lines. Name use is by identifier (a local that shadows a same-file constant
//!   still pulls the constant in).
//! - `graph::render(GraphInput)`: the connection graph. Entries list kind + modifiers,
//!   `exported`, `refs: N files`, signature (not for class-likes, whose heritage lines say
//!   it), Extends / Implements / Subtypes, Members, Calls, Called by / Used by, Types in /
//!   out. In multi-result graphs a symbol that is a result is marked `★`, a non-result symbol
//!   2+ results depend on (calls, types, parents) `◆` and listed under "Shared dependencies
//!   not in results" with how it is used; single-result graphs give paths instead. The
//!   summary's token count covers the graph and the snapshots (a fixed point, since the
//!   count is part of the text).
//! - `content_items`: the graph first (priority 1.0), then one snapshot per file in score
//!   order, priority = the file's best `finalScore`.

pub mod budget;
pub mod graph;
pub mod grep;
pub mod snapshot;

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::chunk::CodeChunk;
use crate::search::{SearchHit, SearchResponse};
use crate::text::Tokenizer;
pub use snapshot::snapshot;

/// `1234567` → `1,234,567`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The dotted display name of a hit (`TokenService.validateToken`).
pub fn display_name(hit: &SearchHit) -> String {
    hit.breadcrumb.replace(" > ", ".")
}

/// The chunks of every file a response's results come from, keyed by (repo id, path).
pub type FileChunks = HashMap<(String, String), Vec<CodeChunk>>;

/// One item of a rendered answer (the shape MCP content has: a text with its audience and
/// priority), as REST and MCP both return it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ContentItem {
    /// Always `text`.
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: &'static str,
    /// The text.
    pub text: String,
    /// Audience and priority.
    pub annotations: Annotations,
}

/// A content item's annotations.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Annotations {
    /// Always `["assistant"]`.
    #[schema(value_type = Vec<String>)]
    pub audience: Vec<&'static str>,
    /// 1.0 for the graph; the file's best `finalScore` for a snapshot.
    pub priority: f32,
}

fn item(text: String, priority: f32) -> ContentItem {
    ContentItem {
        kind: "text",
        text,
        annotations: Annotations {
            audience: vec!["assistant"],
            priority: (priority.clamp(0.0, 1.0) * 100.0).round() / 100.0,
        },
    }
}

/// The connection graph text of a response and its own tokens: its results' structural
/// metadata ([`SearchResponse::metadata`]) rendered by [`graph::render_counted`], with
/// the summary counting the graph and `snapshot_tokens` (the rest of the answer) together.
pub fn connection_graph(response: &SearchResponse, snapshot_tokens: usize) -> (String, usize) {
    let results = if response.metadata.len() == response.results.len() {
        std::borrow::Cow::Borrowed(response.metadata.as_slice())
    } else {
        std::borrow::Cow::Owned(
            response
                .results
                .iter()
                .map(crate::search::enrich::from_hit)
                .collect(),
        )
    };
    graph::render_counted(&graph::GraphInput {
        query: response.query.clone(),
        token_budget: response.token_budget,
        snapshot_tokens,
        tokenizer: response.tokenizer,
        results,
    })
}

/// Renders answers from one set of files, each file's snapshot for a set of targets
/// made once and each text counted once: fitting an answer to its budget
/// ([`budget::fit_content`]) renders it again after every change, and most of its
/// snapshots come back unchanged (a result left out changes one).
pub struct Renderer<'a> {
    files: &'a FileChunks,
    /// Snapshots made, by (repository, path, target ids in result order).
    made: FxHashMap<(String, String, Vec<String>), String>,
    /// Tokens of the texts counted, in the encoding `counted_in`.
    counts: FxHashMap<String, usize>,
    counted_in: Option<Tokenizer>,
}

impl<'a> Renderer<'a> {
    /// A renderer of answers whose results come from `files`.
    pub fn new(files: &'a FileChunks) -> Self {
        Self {
            files,
            made: FxHashMap::default(),
            counts: FxHashMap::default(),
            counted_in: None,
        }
    }

    /// The MCP multi-content response: connection graph first, then one snapshot per
    /// file, then a note while the searched repositories are still being embedded.
    pub fn content_items(&mut self, response: &SearchResponse) -> Vec<ContentItem> {
        self.answer(response).0
    }

    /// [`Renderer::content_items`] and their tokens in the response's encoding, as
    /// [`budget::content_tokens`] counts them.
    pub fn answer(&mut self, response: &SearchResponse) -> (Vec<ContentItem>, usize) {
        let snaps = self.snapshots(response);
        let tokenizer = response.tokenizer;
        let snapshot_tokens: usize = snaps
            .iter()
            .map(|(_, text)| self.count(tokenizer, text))
            .sum();
        let (graph, graph_tokens) = connection_graph(response, snapshot_tokens);
        let mut tokens = graph_tokens + snapshot_tokens;
        let mut out = vec![item(graph, 1.0)];
        out.extend(snaps.into_iter().map(|(score, text)| item(text, score)));
        if let Some(state) = &response.embedding {
            let note = format!(
                "Note: {} of {} chunks in the searched repositories are still being embedded \
                 (indexing is progressive); they were matched by text only. Asking again \
                 shortly finds semantic matches among them too.",
                state.pending, state.total
            );
            tokens += tokenizer.count(&note);
            out.push(item(note, 0.1));
        }
        // One token for each item's separator.
        tokens += out.len();
        (out, tokens)
    }

    /// Tokens of `text`, each text counted once.
    fn count(&mut self, tokenizer: Tokenizer, text: &str) -> usize {
        if self.counted_in != Some(tokenizer) {
            self.counts.clear();
            self.counted_in = Some(tokenizer);
        }
        if let Some(&n) = self.counts.get(text) {
            return n;
        }
        let n = tokenizer.count(text);
        self.counts.insert(text.to_string(), n);
        n
    }

    /// Snapshots per file, in score order: (best finalScore, text).
    fn snapshots(&mut self, response: &SearchResponse) -> Vec<(f32, String)> {
        let mut order: Vec<(&str, &str)> = Vec::new();
        let mut targets: HashMap<(&str, &str), (f32, Vec<&str>)> = HashMap::new();
        for h in &response.results {
            let key = (h.repo_id.as_str(), h.path.as_str());
            let entry = targets.entry(key).or_insert_with(|| {
                order.push(key);
                (h.scores.final_score, Vec::new())
            });
            entry.1.push(h.chunk.id.as_str());
        }
        order
            .into_iter()
            .map(|(repo, path)| {
                let (score, ids) = &targets[&(repo, path)];
                let made_key = (
                    repo.to_string(),
                    path.to_string(),
                    ids.iter().map(|id| id.to_string()).collect(),
                );
                let text = match self.made.get(&made_key) {
                    Some(text) => text.clone(),
                    None => {
                        let text = self.snapshot(response, repo, path, ids);
                        self.made.insert(made_key, text.clone());
                        text
                    }
                };
                (*score, truncate_snapshot(text, response))
            })
            .collect()
    }

    /// The snapshot of one file for `ids`, the results' chunks in it.
    fn snapshot(&self, response: &SearchResponse, repo: &str, path: &str, ids: &[&str]) -> String {
        if let Some(chunks) = self.files.get(&(repo.to_string(), path.to_string())) {
            return snapshot(path, ids, chunks);
        }
        // The file's chunks are unknown: the targets alone.
        let mut t = format!("// {path}\n");
        for h in response
            .results
            .iter()
            .filter(|h| (h.repo_id.as_str(), h.path.as_str()) == (repo, path))
        {
            t.push('\n');
            t.push_str(h.chunk.full_source.trim_end());
            t.push('\n');
        }
        t
    }
}

/// A best result over the whole budget is returned cut to the budget, on a line boundary,
/// with a note saying so and what to do.
fn truncate_snapshot(text: String, response: &SearchResponse) -> String {
    let Some(limit) = response.truncated_to else {
        return text;
    };
    let full = response.tokenizer.count(&text);
    if full <= limit {
        return text;
    }
    let mut cut = text[..response.tokenizer.fitting_lines(&text, limit)].to_string();
    if !cut.is_empty() && !cut.ends_with('\n') {
        cut.push('\n');
    }
    cut.push_str(&format!(
        "// … truncated: this result is ~{} tokens, over the {}-token budget. Raise \
         maxTokenBudget, or look up a member with `symbol = Parent > name`.\n",
        thousands(full),
        thousands(response.token_budget)
    ));
    cut
}

/// The MCP multi-content response: connection graph first, then one snapshot per file
/// ([`Renderer::content_items`]).
pub fn content_items(response: &SearchResponse, files: &FileChunks) -> Vec<ContentItem> {
    Renderer::new(files).content_items(response)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::chunk::{ChunkOptions, chunk_file};
    use crate::parse::{ParseLimits, parse_bytes};
    use crate::search::score::StageScores;
    use crate::search::{SearchMode, StageTimings};

    pub(super) const SERVICE: &str = "// Token handling for the API.\nimport jwt from 'jsonwebtoken';\nimport { JwtPayload } from '../models/auth';\nimport { Unused } from './unused';\nimport { RefreshTokenStore } from './refreshStore';\n\nconst TOKEN_EXPIRY = 3600;\nconst UNRELATED = 'x';\n\nexport class TokenService extends BaseValidator {\n  private secret: string;\n  private store: RefreshTokenStore;\n  private other = 1;\n\n  async validateToken(token: string): Promise<JwtPayload | null> {\n    try {\n      return jwt.verify(token, this.secret) as JwtPayload;\n    } catch {\n      return null;\n    }\n  }\n\n  async refreshToken(token: string): Promise<string> {\n    const payload = await this.validateToken(token);\n    await this.store.save(token);\n    return jwt.sign({ id: payload }, this.secret, { expiresIn: TOKEN_EXPIRY });\n  }\n\n  unrelated() {\n    return this.other;\n  }\n}\n";

    pub(super) fn chunks(path: &str, source: &str) -> Vec<CodeChunk> {
        let parsed = parse_bytes(Path::new(path), source.as_bytes(), &ParseLimits::default())
            .expect("parse");
        chunk_file(path, source, &parsed, &ChunkOptions::default())
    }

    fn id(chunks: &[CodeChunk], crumb: &str) -> String {
        chunks
            .iter()
            .find(|c| c.breadcrumb == crumb)
            .unwrap_or_else(|| panic!("no chunk {crumb}"))
            .id
            .clone()
    }

    fn reparses_cleanly(path: &str, text: &str) {
        let parsed =
            parse_bytes(Path::new(path), text.as_bytes(), &ParseLimits::default()).expect("parse");
        assert!(
            parsed.diagnostics.is_empty(),
            "{:?}\n{text}",
            parsed.diagnostics
        );
    }

    #[test]
    fn a_method_snapshot_shows_only_what_it_uses() {
        let all = chunks("src/auth/tokenService.ts", SERVICE);
        let target = id(&all, "TokenService > validateToken");
        let text = snapshot("src/auth/tokenService.ts", &[target.as_str()], &all);
        let want = "// src/auth/tokenService.ts\n\nimport jwt from 'jsonwebtoken';\nimport { JwtPayload } from '../models/auth';\n\nexport class TokenService extends BaseValidator {\n  private secret: string;\n\n  async validateToken(token: string): Promise<JwtPayload | null> {\n    try {\n      return jwt.verify(token, this.secret) as JwtPayload;\n    } catch {\n      return null;\n    }\n  }\n}\n";
        assert_eq!(text, want);
        reparses_cleanly("x.ts", &text);
    }

    #[test]
    fn same_file_targets_merge_into_one_snapshot() {
        let all = chunks("src/auth/tokenService.ts", SERVICE);
        let a = id(&all, "TokenService > validateToken");
        let b = id(&all, "TokenService > refreshToken");
        let text = snapshot("src/auth/tokenService.ts", &[b.as_str(), a.as_str()], &all);
        for needed in [
            "import { RefreshTokenStore } from './refreshStore';",
            "const TOKEN_EXPIRY = 3600;",
            "private store: RefreshTokenStore;",
            "private secret: string;",
            "async validateToken(",
            "async refreshToken(",
        ] {
            assert_eq!(text.matches(needed).count(), 1, "{needed} once in:\n{text}");
        }
        for absent in ["Unused", "UNRELATED", "unrelated()", "private other"] {
            assert!(!text.contains(absent), "{absent} in:\n{text}");
        }
        // Source order: validateToken before refreshToken.
        assert!(text.find("validateToken(token").unwrap() < text.find("refreshToken(").unwrap());
        reparses_cleanly("x.ts", &text);
    }

    #[test]
    fn a_file_outline_is_shown_above_the_files_other_targets() {
        let path = "src/auth/tokenService.ts";
        let parsed = parse_bytes(Path::new(path), SERVICE.as_bytes(), &ParseLimits::default())
            .expect("parse");
        let mut all = chunk_file(path, SERVICE, &parsed, &ChunkOptions::default());
        let alone = snapshot(
            path,
            &[id(&all, "TokenService > validateToken").as_str()],
            &all,
        );
        let outline = crate::chunk::outline_chunk(path, SERVICE, &parsed, &all).expect("outline");
        let outline_id = outline.id.clone();
        all.push(outline);
        let method = id(&all, "TokenService > validateToken");
        // Present but not a target: the snapshot is what it was.
        assert_eq!(snapshot(path, &[method.as_str()], &all), alone);
        let only = snapshot(path, &[outline_id.as_str()], &all);
        assert_eq!(
            only,
            "// src/auth/tokenService.ts\n// Token handling for the API.\n// imports: jsonwebtoken, ../models/auth, ./unused, ./refreshStore\n\nexport class TokenService extends BaseValidator\n  async validateToken(token: string): Promise<JwtPayload | null>\n  async refreshToken(token: string): Promise<string>\n  unrelated()\n"
        );
        let both = snapshot(path, &[outline_id.as_str(), method.as_str()], &all);
        assert_eq!(
            both,
            format!(
                "{only}{}",
                alone.trim_start_matches("// src/auth/tokenService.ts\n")
            )
        );
    }

    #[test]
    fn a_class_target_is_shown_whole_once() {
        let all = chunks("a.ts", SERVICE);
        let class = id(&all, "TokenService");
        let method = id(&all, "TokenService > validateToken");
        let text = snapshot("a.ts", &[class.as_str(), method.as_str()], &all);
        assert_eq!(text.matches("async validateToken(").count(), 1);
        assert!(text.contains("unrelated()"));
        reparses_cleanly("x.ts", &text);
    }

    pub(super) fn hit(chunk: &CodeChunk, score: f32) -> SearchHit {
        SearchHit {
            repo_id: "r".into(),
            git_ref: None,
            path: chunk.relative_path.clone(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            breadcrumb: chunk.breadcrumb.clone(),
            kind: chunk.node_kind.as_str().into(),
            signature: chunk.signature.clone(),
            scores: StageScores {
                final_score: score,
                ..StageScores::default()
            },
            tokens: crate::text::estimate_tokens(&chunk.full_source),
            folded: Vec::new(),
            chunk: chunk.clone(),
        }
    }

    pub(super) fn response(results: Vec<SearchHit>) -> SearchResponse {
        SearchResponse {
            query: "token validation".into(),
            mode: SearchMode::Semantic,
            candidates: results.clone(),
            passed_gate: results.len(),
            tokens_used: results.iter().map(|h| h.tokens).sum(),
            results,
            token_budget: 8000,
            tokenizer: crate::text::Tokenizer::default(),
            truncated_to: None,
            reranked: false,
            metadata: Vec::new(),
            timings: StageTimings::default(),
            embedding: None,
        }
    }

    #[test]
    fn mcp_content_says_when_vectors_are_still_landing() {
        let mut r = response(Vec::new());
        assert_eq!(content_items(&r, &FileChunks::new()).len(), 1);
        r.embedding = Some(crate::store::EmbeddingState {
            total: 40,
            pending: 12,
        });
        let content = content_items(&r, &FileChunks::new());
        let note = &content.last().expect("a note").text;
        assert!(note.contains("12 of 40 chunks"), "{note}");
    }

    #[test]
    fn mcp_content_puts_the_graph_first_then_snapshots_by_score() {
        let service = chunks("src/auth/tokenService.ts", SERVICE);
        let util = chunks(
            "src/util.ts",
            "export function verifyHeader(h: string): boolean {\n  return h.length > 0;\n}\n",
        );
        let a = service.iter().find(|c| c.name == "validateToken").unwrap();
        let b = service.iter().find(|c| c.name == "refreshToken").unwrap();
        let u = &util[0];
        let r = response(vec![hit(a, 0.91), hit(u, 0.7), hit(b, 0.6)]);
        let mut files = FileChunks::new();
        files.insert(
            ("r".into(), "src/auth/tokenService.ts".into()),
            service.clone(),
        );
        files.insert(("r".into(), "src/util.ts".into()), util.clone());
        let content = content_items(&r, &files);
        assert_eq!(content.len(), 3, "graph + one snapshot per file");
        assert!(
            content
                .iter()
                .all(|c| c.annotations.audience == ["assistant"] && c.kind == "text")
        );
        assert_eq!(content[0].annotations.priority, 1.0);
        assert_eq!(content[1].annotations.priority, 0.91);
        assert_eq!(content[2].annotations.priority, 0.7);
        assert!(content[1].text.starts_with("// src/auth/tokenService.ts"));
        assert!(content[2].text.starts_with("// src/util.ts"));
        let graph = &content[0].text;
        let first = graph.lines().next().unwrap();
        assert!(
            first.starts_with("Search: \"token validation\" | 3 results across 2 files | "),
            "{first}"
        );
        let total: usize = content.iter().map(|c| r.tokenizer.count(&c.text)).sum();
        let shown = format!("{}/8,000 tokens", thousands(total));
        assert!(first.ends_with(&shown), "{first} vs {shown}");
        assert!(graph.contains("[1] TokenService.validateToken\n src/auth/tokenService.ts\n async method\n Signature: async validateToken(token: string): Promise<JwtPayload | null>"), "{graph}");
        assert!(
            graph.contains("[2] verifyHeader\n src/util.ts\n function | exported"),
            "{graph}"
        );
    }

    #[test]
    fn single_and_empty_responses() {
        let util = chunks(
            "src/util.ts",
            "export class A {\n  x = 1;\n  run() {\n    return this.x;\n  }\n}\n",
        );
        let class = &util[0];
        let mut r = response(vec![hit(class, 1.0)]);
        let mut meta = crate::search::enrich::from_hit(&r.results[0]);
        meta.members = vec!["x".into(), "run()".into()];
        r.metadata = vec![meta];
        let mut files = FileChunks::new();
        files.insert(("r".into(), "src/util.ts".into()), util.clone());
        let content = content_items(&r, &files);
        assert_eq!(content.len(), 2);
        let graph = &content[0].text;
        assert!(graph.contains("| 1 result |"), "{graph}");
        assert!(
            graph.contains("\n\nA\n src/util.ts\n class | exported\n"),
            "{graph}"
        );
        assert!(graph.contains("Members: x, run()"), "{graph}");
        let empty = content_items(&response(Vec::new()), &FileChunks::new());
        assert_eq!(empty.len(), 1);
        assert!(empty[0].text.contains("| no results |"));
        assert!(empty[0].text.contains("No indexed code matched"));
    }

    #[test]
    fn an_over_budget_result_is_cut_with_a_note() {
        let all = chunks("a.ts", SERVICE);
        let class = all.iter().find(|c| c.name == "TokenService").unwrap();
        let mut r = response(vec![hit(class, 0.9)]);
        r.token_budget = 40;
        r.truncated_to = Some(40);
        let mut files = FileChunks::new();
        files.insert(("r".into(), "a.ts".into()), all.clone());
        let content = content_items(&r, &files);
        let snap = &content[1].text;
        assert!(snap.contains("// … truncated: this result is ~"), "{snap}");
        assert!(snap.contains("over the 40-token budget"), "{snap}");
        let body = snap.rsplit_once("// … truncated").unwrap().0;
        assert!(body.chars().count() <= 40 * 4, "{body}");
        assert!(body.starts_with("// a.ts\n"));
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(8000), "8,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
