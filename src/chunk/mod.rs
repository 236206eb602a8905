//! Stage 2 of the pipeline: a [`ParsedFile`] → [`CodeChunk`]s.
//!
//! Every symbol and every root statement becomes one chunk whose content is its source
//! with the bodies of body-bearing descendants collapsed to `{ … }` (`…` in Python: the
//! blueprint's "content with children collapsed"). Each chunk also gets the exact `fullSource` of its
//! line range, the imports it uses, a deterministic id, its breadcrumb, the embedding
//! text (metadata preamble + collapsed code) and a lexical search text with identifiers
//! split. Pure: no I/O, language-neutral (it reads only the parser's data model).
//!
//! # Design notes
//!
//! - One chunk per symbol and per root statement, emitted depth-first (parents first).
//! - Content = the symbol's bytes with the body of every nearest body-bearing descendant
//!   replaced by the language's collapsed body (`{ … }`, `…` in Python), following lines
//!   dedented by the symbol's column.
//! - `relevantImports`: imports (outside the chunk) with a binding among the identifiers used
//!   in the content (collapsed bodies excluded).
//! - Ids: first 16 bytes of SHA-256 over (path, parent id, kind, name, ordinal among same-kind
//!   same-name siblings), hex. Stable across runs and across body edits; distinct for
//!   overload-free duplicates (getter + setter, repeated `it('x')`).
//! - Embedding text is capped at `ChunkOptions::max_embedding_tokens` (32,000); over-size
//!   containers (bundled files) are cut at a line with a note and flagged `truncated`.
//! - File outlines (`outline::outline_chunk`, the "module answer"): after `chunk_file`, a file
//!   that declares at least three listable things (named root declarations, variables only
//!   when exported or documented, members of root classes/interfaces/namespaces/object
//!   literals) gets one more unit of kind `file`: the path, the leading comment (licence
//!   headers skipped), the imported modules, then one line per declaration (signature,
//!   `export` when exported, and the first sentence of its documentation), at most 60.
//!   Its range is the whole file but its `fullSource`/`content` are the outline text. The
//!   indexer stores it with the chunks (so it is embedded and searchable) and keeps it out of
//!   the symbol table and the graph (`FileFacts` are computed before it is added). Search
//!   never folds it into, or folds into it, the file's code (`score::Span::outline`);
//!   snapshots show it above the file's other targets; `filter.kinds = ["file"]` asks for
//!   outlines only. `sextant eval` leaves outlines out of its function-level `results` (a
//!   whole-file range would count as finding every function of a small file) and ranks
//!   files with them in `files`.
//! - Extension point: cross-file referenced-symbol signatures will come from `graph` (issue
//!   "Structural analysis"); today the preamble quotes same-file declarations only.
//! - Training pairs (`pairs::doc_pairs`, for the code-search model in `tools/train/`): each
//!   documented symbol's first JSDoc sentence (inline `{@link}` resolved) against its
//!   embedding text after every `/** … */` block of the file is blanked (newlines kept) and
//!   the file chunked again; the chunk is found by id (ids do not depend on text). Generated
//!   and minified files, and chunks under 40 code characters, give none.
//!   `examples/mine_pairs.rs` runs it over a folder for `tools/train/mine.py`.

pub(crate) mod content;
mod ids;
pub mod outline;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::parse::{ByteRange, Import, Language, Modifier, ParsedFile, ParsedSymbol, SymbolKind};
use crate::text::{
    CHARS_PER_TOKEN, collapse_whitespace, estimate_tokens, search_text, truncate_chars,
};

pub use outline::{leading_comment, outline_chunk};

/// The version of what parsing and chunking make of a file. Bump it with any change that
/// gives the same file other symbols or chunks (the test `the_index_format_names_its_output`
/// over `fixtures/parser` says when): an index built at another format has every file read
/// again by its next sync ([`crate::index::Indexer::adopt_format`]), so that an upgrade
/// never leaves unchanged files with the chunks an older version made.
pub const FORMAT: u32 = 2;

/// Chunker settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkOptions {
    /// Largest embedding text, in estimated tokens (default 32,000: the Voyage Code 3
    /// document limit). Larger chunks keep their `fullSource` but their embedding text is
    /// cut at a line boundary with a note, and `truncated` is set.
    pub max_embedding_tokens: usize,
    /// At most this many one-hop referenced symbols are quoted in the preamble.
    pub max_referenced_symbols: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        Self {
            max_embedding_tokens: 32_000,
            max_referenced_symbols: 8,
        }
    }
}

/// One retrievable unit: a symbol or root statement, per the blueprint's `CodeChunk`
/// (vector, content hash and mtime are added by the indexer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeChunk {
    /// Deterministic id: hash of path, kind, name and parent chain (with overload /
    /// duplicate ordinals), 32 hex characters.
    pub id: String,
    /// Path relative to the repository root, `/`-separated.
    pub relative_path: String,
    /// Language the file was parsed as.
    pub language: Language,
    /// What the chunk is (`function`, `method`, `class`, `import`, …).
    pub node_kind: SymbolKind,
    /// The language's own name for the construct when it differs from `nodeKind`'s
    /// (`trait`, `record`, `annotation`, `const group`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_kind: Option<String>,
    /// Symbol name or statement label.
    pub name: String,
    /// Enclosing symbol's name.
    pub parent_name: Option<String>,
    /// Enclosing symbol's chunk id.
    pub parent_chunk_id: Option<String>,
    /// Child chunk ids in source order.
    pub child_chunk_ids: Vec<String>,
    /// Nesting depth (0 = root).
    pub depth: u32,
    /// `Parent > … > name` (without the file).
    pub breadcrumb: String,
    /// Declaration head as written.
    pub signature: String,
    /// Modifiers.
    pub modifiers: Vec<Modifier>,
    /// Whether the symbol is exported.
    pub exported: bool,
    /// JSDoc text.
    pub jsdoc: Option<String>,
    /// First line (1-indexed).
    pub start_line: u32,
    /// Last line (inclusive).
    pub end_line: u32,
    /// Byte span of the symbol (token granularity; lines are whole in `full_source`).
    pub bytes: ByteRange,
    /// Exact source of lines `start_line..=end_line`.
    pub full_source: String,
    /// The symbol's source with body-bearing descendants collapsed.
    pub content: String,
    /// Whether `content` collapses at least one body.
    pub has_collapsed_children: bool,
    /// The bodies `content` collapses, as byte ranges of the file, in order (what lets a
    /// store keep `content` as a few offsets into `full_source`: `store::texts`). Not
    /// serialized; read back from a store where it kept `content` as offsets.
    #[serde(skip)]
    pub collapsed: Vec<ByteRange>,
    /// Import statements (collapsed text) whose bindings the content uses.
    pub relevant_imports: Vec<String>,
    /// Metadata preamble + `---` + content.
    pub embedding_text: String,
    /// Estimated tokens of `embedding_text` (see [`crate::text::estimate_tokens`]).
    pub embedding_tokens: usize,
    /// Whether `embedding_text` was cut to fit `max_embedding_tokens`.
    pub truncated: bool,
    /// Lexical text with identifiers split, for BM25.
    pub search_text: String,
}

impl CodeChunk {
    /// `path > breadcrumb`, the form used in preambles and output.
    pub fn qualified_breadcrumb(&self) -> String {
        format!("{} > {}", self.relative_path, self.breadcrumb)
    }

    /// Whether the chunk has no child chunks.
    pub fn is_leaf(&self) -> bool {
        self.child_chunk_ids.is_empty()
    }
}

/// Chunks one parsed file. `relative_path` is the repository-relative path used in ids,
/// breadcrumbs and preambles. Chunks come in depth-first pre-order (parents first).
///
/// ```
/// use std::path::Path;
/// use sextant::chunk::{ChunkOptions, chunk_file};
/// use sextant::parse::{ParseLimits, parse_bytes};
///
/// let source = "import jwt from 'jsonwebtoken';\n\
///               export class Auth {\n  check(t: string) {\n    return jwt.verify(t, 'k');\n  }\n}\n";
/// let parsed = parse_bytes(Path::new("auth.ts"), source.as_bytes(), &ParseLimits::default())?;
/// let chunks = chunk_file("src/auth.ts", source, &parsed, &ChunkOptions::default());
/// let crumbs: Vec<&str> = chunks.iter().map(|c| c.breadcrumb.as_str()).collect();
/// assert_eq!(crumbs, ["import:jsonwebtoken", "Auth", "Auth > check"]);
/// assert!(chunks[1].content.contains("check(t: string) { … }"));
/// assert_eq!(chunks[2].relevant_imports, ["import jwt from 'jsonwebtoken';"]);
/// # Ok::<(), sextant::parse::ParseError>(())
/// ```
pub fn chunk_file(
    relative_path: &str,
    source: &str,
    parsed: &ParsedFile,
    options: &ChunkOptions,
) -> Vec<CodeChunk> {
    let ctx = FileContext::new(relative_path, source, parsed, options);
    let mut chunks = Vec::new();
    let ids = ids::sibling_ids(relative_path, "", &parsed.symbols);
    for (symbol, id) in parsed.symbols.iter().zip(ids) {
        ctx.emit(symbol, id, None, &[], &mut chunks);
    }
    chunks
}

/// File-wide lookups shared by every chunk of one file.
struct FileContext<'a> {
    path: &'a str,
    source: &'a str,
    parsed: &'a ParsedFile,
    options: &'a ChunkOptions,
    /// Byte offset where each line starts.
    line_starts: Vec<usize>,
    /// Named declarations at container level, by name (first wins).
    definitions: HashMap<&'a str, &'a ParsedSymbol>,
}

impl<'a> FileContext<'a> {
    fn new(
        path: &'a str,
        source: &'a str,
        parsed: &'a ParsedFile,
        options: &'a ChunkOptions,
    ) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
        let mut definitions = HashMap::new();
        let mut stack: Vec<&ParsedSymbol> = parsed.symbols.iter().collect();
        while let Some(sym) = stack.pop() {
            if sym.kind.is_statement() || sym.kind == SymbolKind::Callback {
                continue;
            }
            definitions.entry(sym.name.as_str()).or_insert(sym);
            if matches!(sym.kind, SymbolKind::Namespace | SymbolKind::Module) {
                stack.extend(sym.children.iter());
            }
        }
        Self {
            path,
            source,
            parsed,
            options,
            line_starts,
            definitions,
        }
    }

    /// Exact text of whole lines `start..=end` (1-indexed), without the final newline.
    fn lines(&self, start: u32, end: u32) -> &'a str {
        let from = self
            .line_starts
            .get(start as usize - 1)
            .copied()
            .unwrap_or(self.source.len());
        let to = self
            .line_starts
            .get(end as usize)
            .map_or(self.source.len(), |next| next - 1);
        let text = self.source.get(from..to.max(from)).unwrap_or("");
        text.strip_suffix('\r').unwrap_or(text)
    }

    fn column_of(&self, offset: usize) -> usize {
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        self.source
            .get(start..offset)
            .map_or(0, |s| s.chars().count())
    }

    fn emit(
        &self,
        symbol: &'a ParsedSymbol,
        id: String,
        parent_id: Option<&str>,
        ancestors: &[&'a ParsedSymbol],
        out: &mut Vec<CodeChunk>,
    ) {
        let breadcrumb = ancestors
            .iter()
            .map(|a| a.name.as_str())
            .chain(std::iter::once(symbol.name.as_str()))
            .collect::<Vec<_>>()
            .join(" > ");
        let child_ids = ids::sibling_ids(self.path, &id, &symbol.children);
        let collapsed = content::collapsed_bodies(symbol);
        let content = content::render(
            self.source,
            symbol.bytes,
            &collapsed,
            self.column_of(symbol.bytes.start),
            self.parsed.language.collapsed_body(),
        );
        let names = self.names_used(symbol.bytes, &collapsed);
        let imports: Vec<&Import> = self
            .parsed
            .imports
            .iter()
            .filter(|imp| !symbol.bytes.contains(&imp.bytes))
            .filter(|imp| imp.bindings.iter().any(|b| names.contains(b.as_str())))
            .collect();
        let referenced = self.referenced_symbols(symbol, ancestors, &content, &names);
        let preamble = self.preamble(symbol, &breadcrumb, &imports, &referenced);
        let (embedding_text, truncated) = self.embedding_text(&preamble, &content);
        let full_source = self.lines(symbol.range.start, symbol.range.end);
        // Lexical text: the file path, breadcrumb, signature and JSDoc, then the code. A
        // function-like symbol is searched by its whole source (its callbacks and nested
        // helpers are part of what it does); containers keep their collapsed content so a
        // class does not match every word of every method.
        // The symbol's own name is written twice: a name match weighs more than a word
        // somewhere in the body (a cheap field boost for BM25).
        let search = search_text(&format!(
            "{} {} {} {} {} {}",
            self.path,
            breadcrumb,
            symbol.name,
            symbol.signature,
            symbol.jsdoc.as_deref().unwrap_or(""),
            if symbol.kind.has_code_body() {
                full_source
            } else {
                &content
            }
        ));
        let index = out.len();
        out.push(CodeChunk {
            id: id.clone(),
            relative_path: self.path.to_string(),
            language: self.parsed.language,
            node_kind: symbol.kind,
            native_kind: symbol.native_kind.clone(),
            name: symbol.name.clone(),
            parent_name: symbol.parent_name.clone(),
            parent_chunk_id: parent_id.map(str::to_string),
            child_chunk_ids: child_ids.clone(),
            depth: symbol.depth,
            breadcrumb,
            signature: symbol.signature.clone(),
            modifiers: symbol.modifiers.clone(),
            exported: symbol.exported,
            jsdoc: symbol.jsdoc.clone(),
            start_line: symbol.range.start,
            end_line: symbol.range.end,
            bytes: symbol.bytes,
            full_source: full_source.to_string(),
            has_collapsed_children: !collapsed.is_empty(),
            collapsed,
            content,
            relevant_imports: imports.iter().map(|i| i.text.clone()).collect(),
            embedding_tokens: estimate_tokens(&embedding_text),
            embedding_text,
            truncated,
            search_text: search,
        });
        debug_assert_eq!(out[index].id, id);
        let mut lineage = ancestors.to_vec();
        lineage.push(symbol);
        for (child, child_id) in symbol.children.iter().zip(child_ids) {
            self.emit(child, child_id, Some(&id), &lineage, out);
        }
    }

    /// Identifier names used in `range` outside the collapsed bodies.
    fn names_used(&self, range: ByteRange, collapsed: &[ByteRange]) -> HashSet<&'a str> {
        // Both lists are sorted by offset: one merge walk.
        let idents = &self.parsed.identifiers;
        let first = idents.partition_point(|i| i.offset < range.start);
        let mut bodies = collapsed.iter().peekable();
        let mut names = HashSet::new();
        for ident in idents[first..].iter().take_while(|i| i.offset < range.end) {
            while bodies.peek().is_some_and(|b| b.end <= ident.offset) {
                bodies.next();
            }
            if !bodies
                .peek()
                .is_some_and(|b| b.contains_offset(ident.offset))
            {
                names.insert(ident.name.as_str());
            }
        }
        names
    }

    /// Same-file declarations the content names, with a one-line summary each.
    fn referenced_symbols(
        &self,
        symbol: &ParsedSymbol,
        ancestors: &[&ParsedSymbol],
        content: &str,
        names: &HashSet<&str>,
    ) -> Vec<(String, String)> {
        let mut found: Vec<(usize, &ParsedSymbol)> = names
            .iter()
            .filter_map(|n| self.definitions.get(n).map(|d| (*d, *n)))
            .filter(|(def, _)| {
                !std::ptr::eq(*def, symbol)
                    && !ancestors.iter().any(|a| std::ptr::eq(*a, *def))
                    && !symbol.bytes.contains(&def.bytes)
            })
            .map(|(def, name)| (content.find(name).unwrap_or(usize::MAX), def))
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
        found
            .into_iter()
            .take(self.options.max_referenced_symbols)
            .map(|(_, def)| (def.name.clone(), self.summary(def)))
            .collect()
    }

    fn summary(&self, def: &ParsedSymbol) -> String {
        match def.kind {
            SymbolKind::Interface | SymbolKind::Type | SymbolKind::Enum => {
                let text = self
                    .source
                    .get(def.bytes.start..def.bytes.end)
                    .unwrap_or("");
                let text = collapse_whitespace(text);
                let text = ["export default ", "export ", "declare "]
                    .iter()
                    .fold(text.as_str(), |t, p| t.strip_prefix(p).unwrap_or(t));
                truncate_chars(text, 200)
            }
            _ => def.signature.clone(),
        }
    }

    fn preamble(
        &self,
        symbol: &ParsedSymbol,
        breadcrumb: &str,
        imports: &[&Import],
        referenced: &[(String, String)],
    ) -> String {
        let mut p = preamble_head(self.parsed.language, self.path, breadcrumb);
        if let Some(purpose) = symbol
            .jsdoc
            .as_deref()
            .map(purpose_of)
            .filter(|p| !p.is_empty())
        {
            p.push_str(&format!("Purpose: {purpose}\n"));
        }
        if !symbol.kind.is_statement() && !symbol.signature.is_empty() {
            p.push_str(&format!("Signature: {}\n", symbol.signature));
        }
        let mut modules: Vec<&str> = Vec::new();
        for imp in imports {
            if !modules.contains(&imp.module.as_str()) {
                modules.push(&imp.module);
            }
        }
        if !modules.is_empty() {
            p.push_str(&format!("Dependencies: {}\n", modules.join(", ")));
        }
        if !referenced.is_empty() {
            p.push_str("\nReferenced symbols:\n");
            for (name, summary) in referenced {
                p.push_str(&format!("- {name}: {summary}\n"));
            }
        }
        if p.lines().count() > 1 {
            p.push('\n');
        }
        p.push_str("---\n");
        p
    }

    /// Preamble + content, cut at a line boundary when over the token limit.
    fn embedding_text(&self, preamble: &str, content: &str) -> (String, bool) {
        let text = format!("{preamble}{content}");
        let max = self.options.max_embedding_tokens;
        if estimate_tokens(&text) <= max {
            return (text, false);
        }
        let note_room = 120;
        let budget_chars =
            (max * CHARS_PER_TOKEN).saturating_sub(preamble.chars().count() + note_room);
        let mut kept = 0usize;
        let mut end = 0usize;
        for line in content.split_inclusive('\n') {
            let n = line.chars().count();
            if kept + n > budget_chars {
                break;
            }
            kept += n;
            end += line.len();
        }
        let rest = content[end..].lines().count();
        let text = format!(
            "{preamble}{}\n// … truncated: {rest} more lines (their symbols are separate chunks)",
            content[..end].trim_end()
        );
        (text, true)
    }
}

/// The first line of a chunk's embedding preamble: `[Language] path > breadcrumb`.
pub fn preamble_head(language: Language, path: &str, breadcrumb: &str) -> String {
    format!("[{}] {path} > {breadcrumb}\n", language.label())
}

/// The JSDoc description before the first block tag, on one line.
pub(crate) fn purpose_of(jsdoc: &str) -> String {
    let description: Vec<&str> = jsdoc
        .lines()
        .take_while(|l| !l.trim_start().starts_with('@'))
        .collect();
    truncate_chars(&collapse_whitespace(&description.join(" ")), 300)
}

#[cfg(test)]
mod tests;
