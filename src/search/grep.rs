//! Exact and regex search over the grep index: a pattern compiled once (bounded in size),
//! planned into trigram lookups, and run over the files the plan admits, line by line,
//! in repository, path and line order, with a cursor to continue from (pure over the
//! index's snapshots; the service resolves what the caller may see).
//!
//! Matching is line-oriented, as in grep: a line is reported once, at its first match,
//! and a match never spans lines. Rust's `regex` runs in time linear in the input, so
//! no pattern is catastrophic; its compiled size is capped ([`MAX_REGEX_BYTES`]) and a
//! query stops at its deadline with a cursor to go on from.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::store::grep::{Candidate, DocMeta, Plan, Snapshot, trigrams};
use crate::store::{ChunkFilter, PathMatcher};

/// Longest pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 4096;
/// Largest compiled pattern, in bytes (the `regex` crate's size limit).
pub const MAX_REGEX_BYTES: usize = 1 << 20;
/// Most matches one request may ask for.
pub const MAX_LIMIT: u32 = 1000;
/// Matches returned when the request does not say.
pub const DEFAULT_LIMIT: u32 = 100;
/// Most context lines before and after a match.
pub const MAX_CONTEXT: u32 = 10;
/// Longest line shown, in characters; longer lines are cut around the match.
pub const MAX_LINE_CHARS: usize = 300;
/// How long one request may search before it answers with what it has and a cursor.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// How a pattern is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(clap::ValueEnum, utoipa::ToSchema)]
pub enum GrepMode {
    /// The pattern is a literal string (the default).
    #[default]
    Literal,
    /// The pattern is a regular expression in Rust `regex` syntax.
    Regex,
}

/// One exact or regex search.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct GrepRequest {
    /// What to look for.
    pub pattern: String,
    /// `literal` (default) or `regex`.
    pub mode: GrepMode,
    /// Match regardless of case (default: case matters).
    pub case_insensitive: bool,
    /// Repositories (names or ids) to search; empty: every one the caller sees.
    pub repositories: Vec<String>,
    /// Paths: directory prefixes (`src/`), files, or globs (`src/**/*.ts`).
    pub paths: Vec<String>,
    /// Language ids (`typescript`, `python`, …).
    pub languages: Vec<String>,
    /// What the files are for: `code`, `docs`, `config` (`kind` is read as well).
    #[serde(alias = "kind")]
    pub categories: Vec<String>,
    /// Lines of context before and after each match (0–10, default 0).
    pub context: u32,
    /// Most matches to return (1–1000, default 100).
    pub limit: Option<u32>,
    /// Token budget of the answer's lines (matches and context, as shown, with each
    /// match's path): matches stop before it is exceeded, with a cursor to go on from.
    pub max_tokens: Option<u32>,
    /// The encoding `maxTokens` counts in (`claude`, the default; `o200k`; `cl100k`).
    pub tokenizer: crate::text::Tokenizer,
    /// Where to go on from: `nextCursor` of the previous answer to the same request.
    pub cursor: Option<String>,
    /// A ref the repositories track besides their default one (`repo ref add`): the
    /// files as they are on that ref.
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepMatch {
    /// Repository name.
    pub repository: String,
    /// Path relative to the repository root.
    pub path: String,
    /// Language id.
    pub language: String,
    /// Line number (from 1).
    pub line: u64,
    /// Column of the match's first byte in the line (from 1, in bytes).
    pub column: u64,
    /// The line (cut to about 300 characters around the match when longer).
    pub text: String,
    /// The matched text.
    pub matched: String,
    /// Lines before, nearest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    /// Lines after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// Content hash of the indexed version searched (git blob id for git sources).
    pub content_hash: String,
    /// The commit this version comes from (git sources; working trees have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The tracked ref searched, for a grep on one.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
}

/// Why an answer stopped before the last match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum GrepStop {
    /// `limit` matches were returned and more exist.
    Limit,
    /// The next match would exceed `maxTokens`.
    Budget,
    /// The deadline passed; `nextCursor` goes on from the last file searched.
    Deadline,
}

/// What a grep found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepResponse {
    /// Matching lines, by repository name, path and line.
    pub matches: Vec<GrepMatch>,
    /// Set when there may be more: pass it as `cursor` with the same request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Why the answer stopped early, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<GrepStop>,
    /// Files indexed in the repositories searched.
    pub files_indexed: u64,
    /// Files the trigram index could not rule out (read to find the matches).
    pub files_read: u64,
    /// Whether the trigram index narrowed the files read (a pattern without three
    /// literal characters in a row reads every file).
    pub index_used: bool,
    /// Estimated tokens of the lines returned.
    pub tokens: u64,
    /// Wall time, milliseconds.
    pub took_ms: f64,
}

/// Why a request cannot run; names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct GrepRequestError {
    /// The request field at fault.
    pub field: &'static str,
    /// What is wrong and what to do.
    pub message: String,
}

fn refused(field: &'static str, message: impl Into<String>) -> GrepRequestError {
    GrepRequestError {
        field,
        message: message.into(),
    }
}

/// Where a paged answer goes on from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Cursor {
    /// Repository name.
    r: String,
    /// Path.
    p: String,
    /// Last line done in that file (0: none of it yet).
    l: u64,
}

impl Cursor {
    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }

    fn decode(text: &str) -> Result<Cursor, GrepRequestError> {
        URL_SAFE_NO_PAD
            .decode(text)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| {
                refused(
                    "cursor",
                    "`cursor` is not one this server gave: pass `nextCursor` from the previous \
                     answer unchanged, or leave it out to start over",
                )
            })
    }

    /// Whether every line of (repository, path) is done.
    fn passed_file(&self, repo: &str, path: &str) -> bool {
        (repo, path) < (self.r.as_str(), self.p.as_str())
    }

    /// Whether (repository, path, line) is done.
    fn passed(&self, repo: &str, path: &str, line: u64) -> bool {
        (repo, path, line) <= (self.r.as_str(), self.p.as_str(), self.l)
    }
}

/// A request checked and compiled.
#[derive(Debug)]
pub struct CompiledGrep {
    regex: regex::bytes::Regex,
    plan: Plan,
    filter: ChunkFilter,
    paths: PathMatcher,
    /// Languages of the requested categories (empty: any).
    category_languages: Vec<String>,
    context: u32,
    limit: u32,
    max_tokens: Option<u64>,
    tokenizer: crate::text::Tokenizer,
    cursor: Option<Cursor>,
}

impl CompiledGrep {
    /// Checks and compiles `request` (its `repositories` are the service's to resolve).
    pub fn new(request: &GrepRequest) -> Result<CompiledGrep, GrepRequestError> {
        if request.pattern.is_empty() {
            return Err(refused(
                "pattern",
                "`pattern` is empty: pass the text or regex to find",
            ));
        }
        if request.pattern.len() > MAX_PATTERN_BYTES {
            return Err(refused(
                "pattern",
                format!(
                    "`pattern` is {} bytes long; at most {MAX_PATTERN_BYTES} are allowed",
                    request.pattern.len()
                ),
            ));
        }
        if request.context > MAX_CONTEXT {
            return Err(refused(
                "context",
                format!("`context` must be 0–{MAX_CONTEXT} lines"),
            ));
        }
        let limit = request.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(refused("limit", format!("`limit` must be 1–{MAX_LIMIT}")));
        }
        if request.max_tokens == Some(0) {
            return Err(refused("maxTokens", "`maxTokens` must be at least 1"));
        }
        let filter = ChunkFilter {
            repositories: request.repositories.clone(),
            paths: request.paths.clone(),
            languages: request.languages.clone(),
            categories: request.categories.clone(),
            ..ChunkFilter::default()
        };
        let category_languages = filter.category_languages();
        filter.validate().map_err(|m| refused("paths", m))?;
        let paths = filter.path_matcher().map_err(|m| refused("paths", m))?;
        let source = match request.mode {
            GrepMode::Literal => regex::escape(&request.pattern),
            GrepMode::Regex => request.pattern.clone(),
        };
        let regex = regex::bytes::RegexBuilder::new(&source)
            .case_insensitive(request.case_insensitive)
            .multi_line(true)
            .size_limit(MAX_REGEX_BYTES)
            .dfa_size_limit(MAX_REGEX_BYTES * 8)
            .build()
            .map_err(|e| match e {
                regex::Error::CompiledTooBig(_) => refused(
                    "pattern",
                    format!(
                        "the pattern compiles to more than {} KiB; make it simpler (fewer or \
                         smaller counted repetitions such as `{{1000}}`, narrower classes)",
                        MAX_REGEX_BYTES / 1024
                    ),
                ),
                other => refused(
                    "pattern",
                    format!("`pattern` is not a valid regex: {other}"),
                ),
            })?;
        // The planner parses the same syntax; a pattern it cannot read (none the regex
        // crate accepts should) is simply not narrowed.
        let plan = regex_syntax::ParserBuilder::new()
            .case_insensitive(request.case_insensitive)
            .multi_line(true)
            .build()
            .parse(&source)
            .map(|hir| trigrams::plan(&hir))
            .unwrap_or(Plan::All);
        Ok(CompiledGrep {
            regex,
            plan,
            filter,
            paths,
            category_languages,
            context: request.context,
            limit,
            max_tokens: request.max_tokens.map(u64::from),
            tokenizer: request.tokenizer,
            cursor: request.cursor.as_deref().map(Cursor::decode).transpose()?,
        })
    }
}

/// One repository to search: its name, the commit its index holds, and its index.
pub struct GrepScope {
    /// Repository name.
    pub name: String,
    /// Indexed commit (git sources).
    pub commit: Option<String>,
    /// Its grep index now.
    pub snapshot: Arc<Snapshot>,
    /// For a grep on a tracked ref: the ref's own files, read instead of the
    /// repository's.
    pub tracked: Option<TrackedScope>,
}

/// A tracked ref searched over its repository.
pub struct TrackedScope {
    /// The ref's name.
    pub name: String,
    /// The commit its index holds.
    pub commit: Option<String>,
    /// Its grep index now (the files it changes or adds).
    pub snapshot: Arc<Snapshot>,
    /// The repository's paths it replaces or deletes.
    pub hidden: std::collections::HashSet<String>,
}

impl GrepScope {
    /// Files the plan admits, in path order, each with the commit and ref it is read on.
    fn candidates(&self, plan: &Plan) -> Vec<(Candidate, Option<&String>, Option<&String>)> {
        let Some(tracked) = &self.tracked else {
            return self
                .snapshot
                .candidates(plan)
                .into_iter()
                .map(|c| (c, self.commit.as_ref(), None))
                .collect();
        };
        let mut out: Vec<_> = self
            .snapshot
            .candidates(plan)
            .into_iter()
            .filter(|c| !tracked.hidden.contains(&c.meta().path))
            .map(|c| (c, self.commit.as_ref(), Some(&tracked.name)))
            .chain(
                tracked
                    .snapshot
                    .candidates(plan)
                    .into_iter()
                    .map(|c| (c, tracked.commit.as_ref(), Some(&tracked.name))),
            )
            .collect();
        out.sort_by(|a, b| a.0.meta().path.cmp(&b.0.meta().path));
        out
    }
}

/// Runs `grep` over `scopes` (in name order), stopping at `deadline`.
pub fn run(grep: &CompiledGrep, mut scopes: Vec<GrepScope>, deadline: Instant) -> GrepResponse {
    let started = Instant::now();
    scopes.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = GrepResponse {
        matches: Vec::new(),
        next_cursor: None,
        stopped: None,
        files_indexed: scopes.iter().map(|s| s.snapshot.file_count() as u64).sum(),
        files_read: 0,
        index_used: !grep.plan.is_all(),
        tokens: 0,
        took_ms: 0.0,
    };
    'repos: for scope in &scopes {
        if grep
            .cursor
            .as_ref()
            .is_some_and(|c| scope.name.as_str() < c.r.as_str())
        {
            continue;
        }
        for (candidate, commit, git_ref) in scope.candidates(&grep.plan) {
            let meta = candidate.meta();
            if !grep.admits(&scope.name, meta) {
                continue;
            }
            if Instant::now() >= deadline {
                out.stopped = Some(GrepStop::Deadline);
                out.next_cursor = Some(
                    Cursor {
                        r: scope.name.clone(),
                        p: meta.path.clone(),
                        l: 0,
                    }
                    .encode(),
                );
                break 'repos;
            }
            out.files_read += 1;
            let content = match candidate.content() {
                Ok(content) => content,
                Err(e) => {
                    // Left out, said in the log with what to do.
                    tracing::warn!(path = %meta.path, error = %e, "grep skipped a damaged file");
                    continue;
                }
            };
            let content = content.as_ref();
            let mut lines = LineCounter::default();
            for found in line_matches(&grep.regex, content) {
                let line = lines.line_of(content, found.line_start);
                if let Some(c) = &grep.cursor
                    && c.passed(&scope.name, &meta.path, line)
                {
                    continue;
                }
                let hit = GrepMatch {
                    repository: scope.name.clone(),
                    path: meta.path.clone(),
                    language: meta.language.clone(),
                    line,
                    column: (found.start - found.line_start) as u64 + 1,
                    text: shown_line(content, found.line_start, found.line_end, found.start),
                    matched: String::from_utf8_lossy(&content[found.start..found.end]).into_owned(),
                    before: context_before(content, found.line_start, grep.context),
                    after: context_after(content, found.line_end, grep.context),
                    content_hash: meta.hash.clone(),
                    commit: commit.cloned(),
                    git_ref: git_ref.cloned(),
                };
                let tokens = hit_tokens(&hit, grep.tokenizer);
                if let Some(stop) = grep.stop_before(&out, tokens) {
                    // Everything before this match is done: the next page starts with
                    // it (also when it alone is over the budget, so that a caller who
                    // raises the budget goes on from here).
                    out.stopped = Some(stop);
                    out.next_cursor = Some(
                        Cursor {
                            r: hit.repository,
                            p: hit.path,
                            l: hit.line - 1,
                        }
                        .encode(),
                    );
                    break 'repos;
                }
                out.tokens += tokens;
                out.matches.push(hit);
            }
        }
    }
    out.took_ms = started.elapsed().as_secs_f64() * 1000.0;
    out
}

impl CompiledGrep {
    /// Whether a candidate file is searched: past the cursor, within the path globs,
    /// languages and categories.
    fn admits(&self, repository: &str, meta: &DocMeta) -> bool {
        let past = self
            .cursor
            .as_ref()
            .is_some_and(|c| c.passed_file(repository, &meta.path));
        let wanted =
            |filter: bool, languages: &[String]| !filter || languages.contains(&meta.language);
        !past
            && self.paths.is_match(&meta.path)
            && wanted(!self.filter.languages.is_empty(), &self.filter.languages)
            && wanted(!self.filter.categories.is_empty(), &self.category_languages)
    }

    /// Why the search stops before adding a match of `tokens` to `out`, if it does.
    fn stop_before(&self, out: &GrepResponse, tokens: u64) -> Option<GrepStop> {
        if out.matches.len() as u32 >= self.limit {
            Some(GrepStop::Limit)
        } else if self
            .max_tokens
            .is_some_and(|budget| out.tokens + tokens > budget)
        {
            Some(GrepStop::Budget)
        } else {
            None
        }
    }
}

/// Tokens of a match as the adapters show it: its path, its line and its context lines,
/// each with its line number (`render::grep`).
fn hit_tokens(hit: &GrepMatch, tokenizer: crate::text::Tokenizer) -> u64 {
    let first = hit.line.saturating_sub(hit.before.len() as u64);
    let mut tokens = tokenizer.count(&hit.path) + 1;
    tokens += tokenizer.count(&format!("  {}: {}\n", hit.line, hit.text));
    for (i, line) in hit.before.iter().enumerate() {
        tokens += tokenizer.count(&format!("  {}- {line}\n", first + i as u64));
    }
    for (i, line) in hit.after.iter().enumerate() {
        tokens += tokenizer.count(&format!("  {}- {line}\n", hit.line + 1 + i as u64));
    }
    tokens as u64
}

/// A match, with the bounds of its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Found {
    start: usize,
    end: usize,
    line_start: usize,
    line_end: usize,
}

/// The first match of each line of `content` that has one.
fn line_matches<'a>(
    regex: &'a regex::bytes::Regex,
    content: &'a [u8],
) -> impl Iterator<Item = Found> + 'a {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        while at <= content.len() {
            let m = regex.find_at(content, at)?;
            let line_start = content[..m.start()]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let line_end = content[m.start()..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(content.len(), |i| m.start() + i);
            at = line_end + 1;
            if m.end() <= line_end {
                return Some(Found {
                    start: m.start(),
                    end: m.end(),
                    line_start,
                    line_end,
                });
            }
            // The match runs past its line: the line matches only if the pattern matches
            // within it alone.
            let line = &content[line_start..line_end];
            if let Some(inner) = regex.find(line) {
                return Some(Found {
                    start: line_start + inner.start(),
                    end: line_start + inner.end(),
                    line_start,
                    line_end,
                });
            }
        }
        None
    })
}

/// Line numbers of ascending offsets, counted incrementally.
#[derive(Default)]
struct LineCounter {
    at: usize,
    line: u64,
}

impl LineCounter {
    fn line_of(&mut self, content: &[u8], offset: usize) -> u64 {
        self.line += content[self.at..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        self.at = offset;
        self.line + 1
    }
}

fn text_of(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.strip_suffix('\r').unwrap_or(&text).to_string()
}

/// The line, cut to [`MAX_LINE_CHARS`] around the match when longer.
fn shown_line(content: &[u8], line_start: usize, line_end: usize, start: usize) -> String {
    let line = text_of(&content[line_start..line_end]);
    if line.chars().count() <= MAX_LINE_CHARS {
        return line;
    }
    let before = String::from_utf8_lossy(&content[line_start..start])
        .chars()
        .count();
    let skip = before.saturating_sub(MAX_LINE_CHARS / 3);
    let cut: String = line.chars().skip(skip).take(MAX_LINE_CHARS).collect();
    format!("{}{cut}…", if skip > 0 { "…" } else { "" })
}

fn context_before(content: &[u8], line_start: usize, n: u32) -> Vec<String> {
    let mut out = Vec::new();
    let mut end = line_start;
    while out.len() < n as usize && end > 0 {
        let stop = end - 1; // the newline ending the previous line
        let start = content[..stop]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        out.push(cut(text_of(&content[start..stop])));
        end = start;
    }
    out.reverse();
    out
}

fn context_after(content: &[u8], line_end: usize, n: u32) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = line_end + 1;
    while out.len() < n as usize && start < content.len() {
        let end = content[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(content.len(), |i| start + i);
        out.push(cut(text_of(&content[start..end])));
        start = end + 1;
    }
    out
}

fn cut(line: String) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line;
    }
    let mut s: String = line.chars().take(MAX_LINE_CHARS).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, content: &str) -> Vec<(usize, String)> {
        let regex = regex::bytes::RegexBuilder::new(pattern)
            .multi_line(true)
            .build()
            .expect("valid");
        let mut lines = LineCounter::default();
        line_matches(&regex, content.as_bytes())
            .map(|f| {
                let line = lines.line_of(content.as_bytes(), f.line_start) as usize;
                (line, content[f.start..f.end].to_string())
            })
            .collect()
    }

    #[test]
    fn each_line_is_reported_once_at_its_first_match() {
        assert_eq!(
            matches("a+", "xa aa\nnone\naaa"),
            [(1, "a".to_string()), (3, "aaa".to_string())]
        );
        // Anchors are per line; an empty match reports its line.
        assert_eq!(matches("^", "a\nb").len(), 2);
        assert_eq!(matches("b$", "ab\r\nb"), [(2, "b".to_string())]);
    }

    #[test]
    fn a_match_never_spans_lines() {
        // `\s+` would run from the end of line 1 into line 2; the lines are tried alone.
        assert_eq!(matches(r"x\s+y", "x\ny\nx  y"), [(3, "x  y".to_string())]);
        assert!(matches(r"a[^z]b", "a\nb").is_empty());
    }

    #[test]
    fn long_lines_are_cut_around_the_match() {
        let line = format!("{}needle{}", "a".repeat(1000), "b".repeat(1000));
        let start = line.find("needle").expect("there");
        let shown = shown_line(line.as_bytes(), 0, line.len(), start);
        assert!(shown.contains("needle"), "{shown}");
        assert!(shown.starts_with('…') && shown.ends_with('…'));
        assert!(shown.chars().count() <= MAX_LINE_CHARS + 2);
    }

    #[test]
    fn cursors_round_trip_and_order_positions() {
        let c = Cursor {
            r: "api".into(),
            p: "src/a.ts".into(),
            l: 7,
        };
        let back = Cursor::decode(&c.encode()).expect("decodes");
        assert_eq!(back, c);
        assert!(back.passed("api", "src/a.ts", 7));
        assert!(!back.passed("api", "src/a.ts", 8));
        assert!(back.passed_file("api", "src/0.ts"));
        assert!(!back.passed_file("api", "src/a.ts"));
        assert!(!back.passed("web", "a", 1));
        assert_eq!(Cursor::decode("%%").unwrap_err().field, "cursor");
    }
}
