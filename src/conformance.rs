//! The blueprint's ten global validation rules, checked on one file's parse + chunks.
//!
//! Used by the fixture and real-corpus tests and by `sextant parse --stats`. Pure.
//!
//! # Design notes
//!
//! `check_rules` implements rules 1–7, 9, 10 of the blueprint; `check_determinism` rule 8.
//! Two interpretations are fixed here: rule 1 treats comment-only lines and lone `;` (empty
//! statements) as non-code; rule 2 lets siblings share one boundary line when their byte
//! spans are disjoint (`}, () => {`, `a(); b();`).

use std::collections::HashMap;

use serde::Serialize;

use crate::chunk::CodeChunk;
use crate::parse::{ParsedFile, SymbolKind};
use crate::text::estimate_tokens;

/// Token limit of rule 5 (Voyage Code 3's document limit).
pub const RULE5_MAX_TOKENS: usize = 32_000;

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Rule number (1–10), as numbered in the blueprint.
    pub rule: u8,
    /// What is wrong, with the chunk or line concerned.
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rule {} ({}): {}",
            self.rule,
            rule_name(self.rule),
            self.message
        )
    }
}

/// Short name of a rule.
pub fn rule_name(rule: u8) -> &'static str {
    match rule {
        1 => "full coverage",
        2 => "no overlap",
        3 => "source fidelity",
        4 => "hierarchy consistency",
        5 => "token limit",
        6 => "collapsed children",
        7 => "breadcrumb accuracy",
        8 => "deterministic ids",
        9 => "root-level isolation",
        10 => "relevantImports tracking",
        _ => "unknown",
    }
}

/// Checks rules 1–7, 9 and 10 on one file. Rule 8 (determinism) needs two runs: see
/// [`check_determinism`].
pub fn check_rules(source: &str, parsed: &ParsedFile, chunks: &[CodeChunk]) -> Vec<Violation> {
    let raw_lines: Vec<&str> = source.split('\n').collect();
    let mut check = Checker {
        source,
        lines: raw_lines
            .iter()
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .collect(),
        raw_lines,
        parsed,
        chunks,
        by_id: chunks.iter().map(|c| (c.id.as_str(), c)).collect(),
        found: Vec::new(),
    };
    check.full_coverage();
    check.no_sibling_overlap();
    for c in chunks {
        check.source_fidelity(c);
        check.hierarchy(c);
        check.token_limit(c);
        check.collapsed_children(c);
        check.breadcrumb(c);
        check.relevant_imports(c);
    }
    check.root_isolation();
    check.found
}

/// One file under [`check_rules`]: what the rules read, and the violations found so far.
struct Checker<'a> {
    source: &'a str,
    /// Lines as split on `\n` (a `\r` kept), for comparing with `fullSource`.
    raw_lines: Vec<&'a str>,
    /// The same lines without their `\r`.
    lines: Vec<&'a str>,
    parsed: &'a ParsedFile,
    chunks: &'a [CodeChunk],
    by_id: HashMap<&'a str, &'a CodeChunk>,
    found: Vec<Violation>,
}

impl<'a> Checker<'a> {
    fn push(&mut self, rule: u8, message: String) {
        self.found.push(Violation { rule, message });
    }

    /// 1. Full coverage: every non-blank, non-comment line lies in some chunk.
    fn full_coverage(&mut self) {
        let mut covered = vec![false; self.lines.len() + 2];
        for c in self.chunks {
            for l in c.start_line..=c.end_line {
                if let Some(slot) = covered.get_mut(l as usize) {
                    *slot = true;
                }
            }
        }
        let code_lines = code_lines(self.source, self.parsed);
        for (i, is_code) in code_lines.iter().enumerate() {
            if *is_code && !covered[i + 1] {
                let line = self.lines.get(i).copied().unwrap_or("");
                self.push(
                    1,
                    format!("line {} is not covered by any chunk: {line:?}", i + 1),
                );
            }
        }
    }

    /// 2. No overlap between siblings (sharing one boundary line is allowed when the byte
    ///    spans are disjoint, e.g. `}, () => {`).
    fn no_sibling_overlap(&mut self) {
        let mut siblings: HashMap<Option<&str>, Vec<&CodeChunk>> = HashMap::new();
        for c in self.chunks {
            siblings
                .entry(c.parent_chunk_id.as_deref())
                .or_default()
                .push(c);
        }
        for group in siblings.values() {
            let mut sorted = group.clone();
            sorted.sort_by_key(|c| (c.bytes.start, c.bytes.end));
            for pair in sorted.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                let bytes_overlap = a.bytes.overlaps(&b.bytes);
                let lines_overlap = b.start_line < a.end_line;
                if bytes_overlap || lines_overlap {
                    self.push(
                        2,
                        format!(
                            "siblings `{}` (lines {}-{}) and `{}` (lines {}-{}) overlap",
                            a.breadcrumb,
                            a.start_line,
                            a.end_line,
                            b.breadcrumb,
                            b.start_line,
                            b.end_line
                        ),
                    );
                }
            }
        }
    }

    /// 3. Source fidelity: `fullSource` is exactly the chunk's lines.
    fn source_fidelity(&mut self, c: &CodeChunk) {
        let expected = self
            .raw_lines
            .get(c.start_line as usize - 1..c.end_line as usize)
            .map(|l| l.join("\n"))
            .map(|t| t.strip_suffix('\r').map(str::to_string).unwrap_or(t));
        if expected.as_deref() != Some(c.full_source.as_str()) {
            self.push(
                3,
                format!(
                    "fullSource of `{}` differs from lines {}-{}",
                    c.breadcrumb, c.start_line, c.end_line
                ),
            );
        }
    }

    /// 4. Hierarchy consistency: parent and children name each other, depths agree.
    fn hierarchy(&mut self, c: &CodeChunk) {
        let problem = match c.parent_chunk_id.as_deref() {
            None if c.depth != 0 => Some(format!(
                "`{}` has depth {} but no parent",
                c.breadcrumb, c.depth
            )),
            Some(pid) => match self.by_id.get(pid) {
                None => Some(format!("`{}` names a missing parent {pid}", c.breadcrumb)),
                Some(p) if !p.child_chunk_ids.contains(&c.id) => Some(format!(
                    "parent `{}` does not list child `{}`",
                    p.breadcrumb, c.breadcrumb
                )),
                Some(p) if p.depth + 1 != c.depth => Some(format!(
                    "`{}` depth {} under parent depth {}",
                    c.breadcrumb, c.depth, p.depth
                )),
                _ => None,
            },
            _ => None,
        };
        if let Some(problem) = problem {
            self.push(4, problem);
        }
        for child in &c.child_chunk_ids {
            let points_back = self
                .by_id
                .get(child.as_str())
                .and_then(|ch| ch.parent_chunk_id.as_deref())
                == Some(c.id.as_str());
            if !points_back {
                self.push(
                    4,
                    format!(
                        "`{}` lists child {child} that does not point back",
                        c.breadcrumb
                    ),
                );
            }
        }
    }

    /// 5. Token limit of the embedding text.
    fn token_limit(&mut self, c: &CodeChunk) {
        let tokens = estimate_tokens(&c.embedding_text);
        if tokens > RULE5_MAX_TOKENS {
            self.push(
                5,
                format!("`{}` embeddingText is {tokens} tokens", c.breadcrumb),
            );
        }
    }

    /// 6. Collapsed children: bodies of body-bearing children are not in the parent's
    ///    content, and are in the child's fullSource.
    fn collapsed_children(&mut self, c: &CodeChunk) {
        for child_id in &c.child_chunk_ids {
            let Some(child) = self.by_id.get(child_id.as_str()).copied() else {
                continue;
            };
            let Some(body) = body_of(self.parsed, child) else {
                continue;
            };
            let body_text = self.source.get(body.0..body.1).unwrap_or("");
            // Counted, not searched: the same text may stand elsewhere in the parent (two
            // identical blocks), and only the child's own copy must be collapsed.
            if body_text.lines().count() >= 3
                && c.content.matches(body_text).count() >= c.full_source.matches(body_text).count()
            {
                self.push(
                    6,
                    format!(
                        "`{}` shows the body of child `{}`",
                        c.breadcrumb, child.breadcrumb
                    ),
                );
            }
            if !child
                .full_source
                .contains(body_text.lines().next().unwrap_or(""))
            {
                self.push(
                    6,
                    format!("child `{}` fullSource lacks its body", child.breadcrumb),
                );
            }
        }
    }

    /// 7. Breadcrumb accuracy: the parent's breadcrumb, then the name.
    fn breadcrumb(&mut self, c: &CodeChunk) {
        let parent = c.parent_chunk_id.as_deref().and_then(|p| self.by_id.get(p));
        let expected = match parent {
            Some(p) => format!("{} > {}", p.breadcrumb, c.name),
            None => c.name.clone(),
        };
        if c.breadcrumb != expected {
            self.push(
                7,
                format!("breadcrumb `{}` should be `{expected}`", c.breadcrumb),
            );
        }
    }

    /// 10. relevantImports: each listed import binds a name the content uses.
    fn relevant_imports(&mut self, c: &CodeChunk) {
        for imp_text in &c.relevant_imports {
            let Some(imp) = self.parsed.imports.iter().find(|i| &i.text == imp_text) else {
                self.push(
                    10,
                    format!("`{}` lists unknown import `{imp_text}`", c.breadcrumb),
                );
                continue;
            };
            if !imp.bindings.iter().any(|b| contains_word(&c.content, b)) {
                self.push(
                    10,
                    format!(
                        "`{}` lists `{imp_text}` but uses none of its names",
                        c.breadcrumb
                    ),
                );
            }
        }
    }

    /// 9. Root-level isolation: each root import / expression / re-export statement is
    ///    exactly one root chunk, and no root chunk holds two of them.
    fn root_isolation(&mut self) {
        let parsed = self.parsed;
        let roots: Vec<&CodeChunk> = self.chunks.iter().filter(|c| c.depth == 0).collect();
        let root_imports = parsed.imports.iter().filter(|i| {
            parsed
                .symbols
                .iter()
                .any(|s| s.depth == 0 && s.bytes == i.bytes)
        });
        for imp in root_imports {
            let holders: Vec<&&CodeChunk> = roots
                .iter()
                .filter(|c| c.bytes.contains(&imp.bytes))
                .collect();
            if holders.len() != 1 || holders[0].node_kind != SymbolKind::Import {
                self.push(
                    9,
                    format!(
                        "import `{}` is held by {} root chunks",
                        imp.text,
                        holders.len()
                    ),
                );
            }
        }
        let statement_roots = parsed.symbols.iter().filter(|s| {
            matches!(
                s.kind,
                SymbolKind::Import | SymbolKind::Expression | SymbolKind::ReExport
            )
        });
        for s in statement_roots {
            let n = roots.iter().filter(|c| c.bytes == s.bytes).count();
            if n != 1 {
                self.push(
                    9,
                    format!("root statement `{}` produced {n} chunks", s.name),
                );
            }
        }
    }
}

/// Rule 8: two chunkings of the same file must give the same ids, and ids must be unique.
pub fn check_determinism(first: &[CodeChunk], second: &[CodeChunk]) -> Vec<Violation> {
    let mut v = Vec::new();
    let a: Vec<&str> = first.iter().map(|c| c.id.as_str()).collect();
    let b: Vec<&str> = second.iter().map(|c| c.id.as_str()).collect();
    if a != b {
        v.push(Violation {
            rule: 8,
            message: "chunk ids differ between two runs".into(),
        });
    }
    let mut seen = std::collections::HashSet::new();
    for c in first {
        if !seen.insert(c.id.as_str()) {
            v.push(Violation {
                rule: 8,
                message: format!("duplicate id for `{}`", c.breadcrumb),
            });
        }
    }
    v
}

/// For each line (0-indexed), whether it holds code: a character outside comments that is
/// neither whitespace nor `;` (a lone `;` is an empty statement and gets no chunk).
pub fn code_lines(source: &str, parsed: &ParsedFile) -> Vec<bool> {
    let mut out = Vec::new();
    let mut comment = parsed.comments.iter().peekable();
    let mut offset = 0usize;
    for line in source.split('\n') {
        let mut is_code = false;
        for (i, ch) in line.char_indices() {
            // A `;` on its own is an empty statement: nothing to retrieve, no chunk.
            if ch.is_whitespace() || ch == ';' {
                continue;
            }
            let at = offset + i;
            while comment.peek().is_some_and(|c| c.end <= at) {
                comment.next();
            }
            if !comment.peek().is_some_and(|c| c.contains_offset(at)) {
                is_code = true;
                break;
            }
        }
        out.push(is_code);
        offset += line.len() + 1;
    }
    out
}

fn body_of(parsed: &ParsedFile, chunk: &CodeChunk) -> Option<(usize, usize)> {
    parsed
        .walk()
        .find(|s| s.bytes == chunk.bytes && s.name == chunk.name)
        .and_then(|s| s.body)
        .map(|b| (b.start, b.end))
}

fn contains_word(haystack: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    haystack.match_indices(word).any(|(i, _)| {
        let before = haystack[..i].chars().next_back();
        let after = haystack[i + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Everything learned from validating one file.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// Path as given (relative to the validated directory).
    pub path: String,
    /// Input size in bytes.
    pub bytes: usize,
    /// Symbols extracted (all depths, statements included).
    pub symbols: usize,
    /// Chunks produced.
    pub chunks: usize,
    /// Root-level statement items (imports, expressions, re-exports, …).
    pub root_items: usize,
    /// Deepest symbol depth.
    pub max_depth: u32,
    /// Largest embedding text, in estimated tokens, and its breadcrumb.
    pub max_chunk_tokens: (usize, String),
    /// Lines holding code.
    pub code_lines: usize,
    /// Code lines covered by a chunk.
    pub covered_code_lines: usize,
    /// Chunks whose embedding text was truncated to the token limit.
    pub truncated_chunks: usize,
    /// Syntax errors recovered from.
    pub diagnostics: usize,
    /// Broken rules.
    pub violations: Vec<Violation>,
    /// Time spent parsing and chunking (first run only).
    pub elapsed: std::time::Duration,
}

/// Parses and chunks `source` twice and checks all ten rules.
pub fn validate_source(
    path: &std::path::Path,
    relative_path: &str,
    source: &str,
    config: &crate::config::Config,
) -> Result<FileReport, crate::parse::ParseError> {
    let started = std::time::Instant::now();
    let parsed = crate::parse::parse_bytes(path, source.as_bytes(), &config.parse)?;
    let chunks = crate::chunk::chunk_file(relative_path, source, &parsed, &config.chunk);
    let elapsed = started.elapsed();
    let again = crate::parse::parse_bytes(path, source.as_bytes(), &config.parse)?;
    let chunks_again = crate::chunk::chunk_file(relative_path, source, &again, &config.chunk);
    let mut violations = check_rules(source, &parsed, &chunks);
    violations.extend(check_determinism(&chunks, &chunks_again));

    let code = code_lines(source, &parsed);
    let mut covered = vec![false; code.len() + 2];
    for c in &chunks {
        for l in c.start_line..=c.end_line {
            if let Some(slot) = covered.get_mut(l as usize) {
                *slot = true;
            }
        }
    }
    let max_chunk = chunks
        .iter()
        .max_by_key(|c| c.embedding_tokens)
        .map(|c| (c.embedding_tokens, c.breadcrumb.clone()))
        .unwrap_or_default();
    Ok(FileReport {
        path: relative_path.to_string(),
        bytes: source.len(),
        symbols: parsed.walk().count(),
        chunks: chunks.len(),
        root_items: parsed
            .symbols
            .iter()
            .filter(|s| s.kind.is_statement())
            .count(),
        max_depth: parsed.walk().map(|s| s.depth).max().unwrap_or(0),
        max_chunk_tokens: max_chunk,
        code_lines: code.iter().filter(|c| **c).count(),
        covered_code_lines: code
            .iter()
            .enumerate()
            .filter(|(i, c)| **c && covered[i + 1])
            .count(),
        truncated_chunks: chunks.iter().filter(|c| c.truncated).count(),
        diagnostics: parsed.diagnostics.len(),
        violations,
        elapsed,
    })
}

/// The blueprint's metrics dashboard, accumulated over many files.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// Files with no violations.
    pub passed: usize,
    /// Files with at least one violation.
    pub failed: usize,
    /// Files skipped, with the reason.
    pub skipped: Vec<(String, String)>,
    /// Sum of symbols.
    pub symbols: usize,
    /// Sum of chunks.
    pub chunks: usize,
    /// Sum of root items.
    pub root_items: usize,
    /// Sum of input bytes.
    pub bytes: usize,
    /// Code lines and covered code lines.
    pub code_lines: (usize, usize),
    /// Largest chunk: tokens, `file > breadcrumb`.
    pub max_chunk: (usize, String),
    /// Deepest symbol: depth, file.
    pub max_depth: (u32, String),
    /// Chunks truncated to the token limit.
    pub truncated_chunks: usize,
    /// Files with syntax errors.
    pub files_with_syntax_errors: usize,
    /// Whether every file's ids were stable across two runs.
    pub deterministic: bool,
    /// Violations by file.
    pub violations: Vec<(String, Violation)>,
    /// Parse + chunk time.
    pub elapsed: std::time::Duration,
}

impl Summary {
    /// An empty summary.
    pub fn new() -> Self {
        Self {
            deterministic: true,
            ..Self::default()
        }
    }

    /// Adds one file's report.
    pub fn add(&mut self, report: FileReport) {
        if report.violations.is_empty() {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
        self.symbols += report.symbols;
        self.chunks += report.chunks;
        self.root_items += report.root_items;
        self.bytes += report.bytes;
        self.code_lines.0 += report.code_lines;
        self.code_lines.1 += report.covered_code_lines;
        if report.max_chunk_tokens.0 > self.max_chunk.0 {
            self.max_chunk = (
                report.max_chunk_tokens.0,
                format!("{} > {}", report.path, report.max_chunk_tokens.1),
            );
        }
        if report.max_depth > self.max_depth.0 || self.max_depth.1.is_empty() {
            self.max_depth = (report.max_depth.max(self.max_depth.0), report.path.clone());
        }
        self.truncated_chunks += report.truncated_chunks;
        if report.diagnostics > 0 {
            self.files_with_syntax_errors += 1;
        }
        if report.violations.iter().any(|v| v.rule == 8) {
            self.deterministic = false;
        }
        self.elapsed += report.elapsed;
        self.violations.extend(
            report
                .violations
                .into_iter()
                .map(|v| (report.path.clone(), v)),
        );
    }

    /// Records a skipped file.
    pub fn skip(&mut self, path: String, reason: String) {
        self.skipped.push((path, reason));
    }

    /// Coverage of code lines in percent.
    pub fn coverage_percent(&self) -> f64 {
        if self.code_lines.0 == 0 {
            100.0
        } else {
            100.0 * self.code_lines.1 as f64 / self.code_lines.0 as f64
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let uncovered = self.code_lines.0 - self.code_lines.1;
        writeln!(f, "Parser Validation Summary")?;
        writeln!(f, "═══════════════════════════════════")?;
        writeln!(
            f,
            "Files: {} passed, {} failed, {} skipped",
            self.passed,
            self.failed,
            self.skipped.len()
        )?;
        writeln!(f, "Total symbols extracted: {}", self.symbols)?;
        writeln!(f, "Total chunks produced: {}", self.chunks)?;
        writeln!(f, "Root-level items: {}", self.root_items)?;
        writeln!(
            f,
            "Coverage: {:.2}% ({uncovered} uncovered code lines of {})",
            self.coverage_percent(),
            self.code_lines.0
        )?;
        writeln!(
            f,
            "Max chunk token count: {} ({})",
            self.max_chunk.0, self.max_chunk.1
        )?;
        writeln!(
            f,
            "Max depth observed: {} ({})",
            self.max_depth.0, self.max_depth.1
        )?;
        writeln!(
            f,
            "Chunks truncated to the token limit: {}",
            self.truncated_chunks
        )?;
        writeln!(
            f,
            "Files with recovered syntax errors: {}",
            self.files_with_syntax_errors
        )?;
        writeln!(
            f,
            "Determinism: {}",
            if self.deterministic {
                "✓ (all IDs stable across 2 runs)"
            } else {
                "✗ (ids changed between runs)"
            }
        )?;
        writeln!(
            f,
            "Throughput: {:.1} MB/s, {:.0} chunks/s ({} bytes in {:.3}s, one core)",
            self.bytes as f64 / 1e6 / secs,
            self.chunks as f64 / secs,
            self.bytes,
            secs
        )?;
        let mut by_rule: std::collections::BTreeMap<u8, usize> = Default::default();
        for (_, v) in &self.violations {
            *by_rule.entry(v.rule).or_default() += 1;
        }
        if by_rule.is_empty() {
            writeln!(f, "Global rules: all 10 hold")?;
        } else {
            writeln!(f, "Global rule violations:")?;
            for (rule, n) in &by_rule {
                writeln!(f, "  rule {rule} ({}): {n}", rule_name(*rule))?;
            }
            for (path, v) in self.violations.iter().take(20) {
                writeln!(f, "  {path}: {v}")?;
            }
        }
        if !self.skipped.is_empty() {
            writeln!(f, "Skipped:")?;
            for (path, reason) in self.skipped.iter().take(20) {
                writeln!(f, "  {path}: {reason}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{ChunkOptions, chunk_file};
    use crate::parse::{ParseLimits, parse_bytes};

    const SOURCE: &str = "import { a } from './a';\n\nexport class Box {\n  open() {\n    a();\n    a();\n    return 1;\n  }\n}\n\nconsole.log(a);\n";

    fn file() -> (ParsedFile, Vec<CodeChunk>) {
        let parsed = parse_bytes(
            std::path::Path::new("box.ts"),
            SOURCE.as_bytes(),
            &ParseLimits::default(),
        )
        .unwrap();
        let chunks = chunk_file("box.ts", SOURCE, &parsed, &ChunkOptions::default());
        (parsed, chunks)
    }

    fn rules_broken(parsed: &ParsedFile, chunks: &[CodeChunk]) -> Vec<u8> {
        let mut rules: Vec<u8> = check_rules(SOURCE, parsed, chunks)
            .iter()
            .map(|v| v.rule)
            .collect();
        rules.dedup();
        rules
    }

    /// Every rule passes on what the chunker makes, and each one catches its own breakage.
    #[test]
    fn each_rule_catches_what_it_names() {
        let (parsed, chunks) = file();
        assert_eq!(rules_broken(&parsed, &chunks), Vec::<u8>::new());
        let method = chunks.iter().position(|c| c.name == "open").unwrap();
        let class = chunks.iter().position(|c| c.name == "Box").unwrap();
        let import = chunks
            .iter()
            .position(|c| c.node_kind == SymbolKind::Import)
            .unwrap();

        let mut broken = chunks.clone();
        broken.remove(import);
        let rules = rules_broken(&parsed, &broken);
        assert!(rules.contains(&1) && rules.contains(&9), "{rules:?}");

        let mut broken = chunks.clone();
        let copy = broken[import].clone();
        broken[import].end_line += 2;
        broken[import].bytes.end = copy.bytes.end + 2;
        broken.push(CodeChunk {
            id: "twin".into(),
            ..broken[class].clone()
        });
        assert!(rules_broken(&parsed, &broken).contains(&2));

        let mut broken = chunks.clone();
        broken[method].full_source.push_str("\n// edited");
        assert_eq!(rules_broken(&parsed, &broken), vec![3]);

        let mut broken = chunks.clone();
        broken[method].depth = 5;
        assert_eq!(rules_broken(&parsed, &broken), vec![4]);

        let mut broken = chunks.clone();
        broken[method].embedding_text = "word ".repeat(RULE5_MAX_TOKENS * 2);
        assert_eq!(rules_broken(&parsed, &broken), vec![5]);

        let mut broken = chunks.clone();
        broken[class].content = broken[class].full_source.clone();
        assert_eq!(rules_broken(&parsed, &broken), vec![6]);

        let mut broken = chunks.clone();
        broken[method].breadcrumb = "open".into();
        assert!(rules_broken(&parsed, &broken).contains(&7));

        let mut broken = chunks.clone();
        broken[method]
            .relevant_imports
            .push("import { b } from './b';".into());
        assert_eq!(rules_broken(&parsed, &broken), vec![10]);
    }
}
