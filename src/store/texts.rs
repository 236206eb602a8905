//! How a chunk row's copies of its code are stored without repeating them.
//!
//! A chunk carries its code up to three times: `full_source`, `content` (the source with
//! nested definitions collapsed: for a function or any chunk without children, the
//! source itself) and `embedding_text` (a preamble — path, breadcrumb, imports — then
//! `content`, unless it was cut to fit the model). The chunk store writes `full_source`
//! as it is and the other two relative to it:
//!
//! - `content` equal to `full_source` is stored as [`SAME`];
//! - `content` that `full_source` makes again (a nested method: its code dedented; a
//!   class: its code with its members' bodies collapsed) is stored as [`DERIVED`] and the
//!   offsets that remake it ([`pack_chunk_content`]: where the symbol starts in its first
//!   line, its length, the collapsed bodies and their placeholder); it is stored so only
//!   when remaking it gives the same text, byte for byte;
//! - `embedding_text` that ends with `content` is stored as [`SAME`] and its preamble;
//! - any other value is stored as it is, behind [`LITERAL`] when it begins with one of
//!   the marks (never the case for code the scanner reads, which skips binary files,
//!   but the encoding holds for every string).
//!
//! `full_source` itself is stored as [`FROM_FILE`] where it is lines of its file and the
//! chunk store reads files from the grep index ([`pack_full_source`]): the code is then
//! held once, in the grep index (zstd, a file at a time), and the row keeps only its
//! lines (`start_line`, `end_line`) and the file's version (`content_hash`). At 1M lines
//! this leaves out the code column's 25 MB (docs/BENCHMARKS.md).
//!
//! Rows written before this encoding hold the texts themselves and read back unchanged
//! (a stored text that begins with [`DERIVED`] but does not parse as offsets is read as
//! it is). At 1M lines (c1m, docs/BENCHMARKS.md) the two columns took 27 MB on disk
//! instead of 51, and `content` 10 MB of those until it was stored as offsets.
//!
//! `embedding_text` is kept only while the row waits for its vector
//! ([`pack_embedding_until_embedded`]): a row written with its vector stores it empty, and
//! reads back with an empty `embedding_text`. Nothing reads it after: a change of model
//! chunks every file again (`Indexer::adopt_model`), which writes the texts anew. At 1M
//! lines this leaves out the preambles' 14 MB.

use std::borrow::Cow;

use crate::chunk::CodeChunk;

/// Marks a text stored relative to another (a NUL, which source text does not hold).
pub const SAME: char = '\0';

/// Marks a text stored as it is although it begins with a mark.
pub const LITERAL: char = '\u{1}';

/// Marks a `content` stored as the offsets that remake it from `full_source`.
pub const DERIVED: char = '\u{2}';

fn literal(text: &str) -> Cow<'_, str> {
    if text.starts_with([SAME, LITERAL, DERIVED]) {
        Cow::Owned(format!("{LITERAL}{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

fn unliteral(stored: &str) -> &str {
    stored.strip_prefix(LITERAL).unwrap_or(stored)
}

/// The stored form of `content`, given the row's `full_source`.
pub fn pack_content<'a>(full_source: &str, content: &'a str) -> Cow<'a, str> {
    if content == full_source {
        Cow::Owned(SAME.to_string())
    } else {
        literal(content)
    }
}

/// The stored form of a chunk's `content`: [`SAME`], [`DERIVED`] offsets when they
/// remake it exactly, else the text ([`pack_content`]).
pub fn pack_chunk_content(chunk: &CodeChunk) -> Cow<'_, str> {
    if chunk.content == chunk.full_source {
        return Cow::Owned(SAME.to_string());
    }
    match Derivation::of(chunk) {
        Some(d) if d.remake(&chunk.full_source).as_deref() == Some(chunk.content.as_str()) => {
            Cow::Owned(d.stored())
        }
        _ => pack_content(&chunk.full_source, &chunk.content),
    }
}

/// How a chunk's `content` is made again from its `full_source`: the text from byte
/// `start` (where the symbol begins in its first line) for `len` bytes, with the
/// `collapsed` ranges (relative to `start`) replaced by `placeholder`, and the lines after
/// the first dedented by the symbol's column (as `chunk::content::render` made it).
#[derive(Debug, PartialEq)]
struct Derivation<'a> {
    start: usize,
    len: usize,
    collapsed: Vec<(usize, usize)>,
    placeholder: Cow<'a, str>,
}

impl<'a> Derivation<'a> {
    /// The derivation of a freshly chunked `chunk` (`None` when its first line does not
    /// hold the start of its content).
    fn of(chunk: &'a CodeChunk) -> Option<Self> {
        let base = chunk.bytes.start;
        // The content's first line is the source's own up to its first collapsed body.
        let mut first = chunk.content.split(['\n', '\r']).next()?;
        if let Some(body) = chunk.collapsed.first() {
            first = first.get(..body.start.checked_sub(base)?.min(first.len()))?;
        }
        if first.is_empty() {
            return None;
        }
        let start = chunk.full_source.find(first)?;
        Some(Self {
            start,
            len: chunk.bytes.end.checked_sub(base)?,
            collapsed: chunk
                .collapsed
                .iter()
                .map(|r| Some((r.start.checked_sub(base)?, r.end.checked_sub(base)?)))
                .collect::<Option<_>>()?,
            placeholder: Cow::Borrowed(chunk.language.collapsed_body()),
        })
    }

    /// `content` made from `full_source`, or `None` where the offsets do not fit it.
    fn remake(&self, full_source: &str) -> Option<String> {
        let end = self.start.checked_add(self.len)?;
        full_source.get(self.start..end)?;
        let mut bodies = Vec::with_capacity(self.collapsed.len());
        let mut at = 0;
        for &(s, e) in &self.collapsed {
            if s < at || e < s || e > self.len {
                return None;
            }
            full_source.get(self.start + s..self.start + e)?;
            bodies.push(crate::parse::ByteRange {
                start: self.start + s,
                end: self.start + e,
            });
            at = e;
        }
        let column = full_source.get(..self.start)?.chars().count();
        Some(crate::chunk::content::render(
            full_source,
            crate::parse::ByteRange {
                start: self.start,
                end,
            },
            &bodies,
            column,
            &self.placeholder,
        ))
    }

    /// `DERIVED` `start,len` then `;s-e` per collapsed body and `|placeholder` when any.
    fn stored(&self) -> String {
        let mut out = format!("{DERIVED}{},{}", self.start, self.len);
        for (s, e) in &self.collapsed {
            out.push_str(&format!(";{s}-{e}"));
        }
        if !self.collapsed.is_empty() {
            out.push('|');
            out.push_str(&self.placeholder);
        }
        out
    }

    /// Reads [`Derivation::stored`]'s form (without its mark).
    fn parse(text: &'a str) -> Option<Self> {
        let (offsets, placeholder) = match text.split_once('|') {
            Some((o, p)) => (o, p),
            None => (text, ""),
        };
        let mut parts = offsets.split(';');
        let (start, len) = parts.next()?.split_once(',')?;
        let collapsed = parts
            .map(|p| {
                let (s, e) = p.split_once('-')?;
                Some((s.parse().ok()?, e.parse().ok()?))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            start: start.parse().ok()?,
            len: len.parse().ok()?,
            collapsed,
            placeholder: Cow::Borrowed(placeholder),
        })
    }
}

/// A row's `content` from its stored form and `full_source`, with the bodies it
/// collapses as byte ranges of the file whose symbol starts at `symbol_start` (known only
/// where it was stored as offsets; else empty): what a row read back carries in
/// `CodeChunk::collapsed`, so that writing it again (its vector stored) keeps the offsets.
pub fn unpack_chunk_content(
    full_source: &str,
    stored: String,
    symbol_start: usize,
) -> (String, Vec<crate::parse::ByteRange>) {
    let derived = stored.strip_prefix(DERIVED).and_then(Derivation::parse);
    if let Some((d, made)) = derived.and_then(|d| d.remake(full_source).map(|m| (d, m))) {
        let ranges = d
            .collapsed
            .iter()
            .map(|&(s, e)| crate::parse::ByteRange {
                start: symbol_start + s,
                end: symbol_start + e,
            })
            .collect();
        return (made, ranges);
    }
    (unpack_content(full_source, stored), Vec::new())
}

/// `content` from its stored form and the row's `full_source`.
pub fn unpack_content(full_source: &str, stored: String) -> String {
    if stored.len() == SAME.len_utf8() && stored.starts_with(SAME) {
        full_source.to_string()
    } else if let Some(made) = stored
        .strip_prefix(DERIVED)
        .and_then(Derivation::parse)
        .and_then(|d| d.remake(full_source))
    {
        made
    } else if stored.starts_with(LITERAL) {
        unliteral(&stored).to_string()
    } else {
        stored
    }
}

/// Where each line of a text starts: what cuts many symbols' lines out of one file
/// without reading it again for each ([`LineStarts::lines`]).
#[derive(Debug, Clone)]
pub struct LineStarts(Vec<usize>);

impl LineStarts {
    /// The line starts of `text` (the first at 0; one after each line break).
    pub fn of(text: &str) -> Self {
        Self(
            std::iter::once(0)
                .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
                .collect(),
        )
    }

    /// Lines `start_line..=end_line` (1-based) of `text` (the text these starts are of),
    /// as the chunker cuts a symbol's `full_source`: from the first line's start to the
    /// last line's end, without its line break (and without a `\r` before it). `None`
    /// when the text has fewer lines.
    pub fn lines<'t>(&self, text: &'t str, start_line: u32, end_line: u32) -> Option<&'t str> {
        if start_line == 0 || end_line < start_line {
            return None;
        }
        let from = *self.0.get(start_line as usize - 1)?;
        let to = self
            .0
            .get(end_line as usize)
            .map_or(text.len(), |next| next - 1);
        let lines = text.get(from..to.max(from))?;
        Some(lines.strip_suffix('\r').unwrap_or(lines))
    }
}

/// A file's text with its line starts: read once (from the grep index), then cut into
/// the code of each of its rows ([`FileText::lines`]).
#[derive(Debug)]
pub struct FileText {
    text: String,
    starts: LineStarts,
}

impl FileText {
    /// `text` and its line starts.
    pub fn new(text: String) -> Self {
        let starts = LineStarts::of(&text);
        Self { text, starts }
    }

    /// The text of `bytes` (invalid UTF-8 replaced, as `String::from_utf8_lossy` does;
    /// valid bytes are not copied).
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Self::new(text)
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Lines `start_line..=end_line` (1-based), as [`LineStarts::lines`] cuts them.
    pub fn lines(&self, start_line: u32, end_line: u32) -> Option<&str> {
        self.starts.lines(&self.text, start_line, end_line)
    }

    /// Bytes it holds: the text and its line starts.
    pub fn held_bytes(&self) -> usize {
        self.text.len() + self.starts.0.len() * std::mem::size_of::<usize>()
    }
}

/// The stored form of a row's `full_source`: [`SAME`] alone where it is the lines of its
/// file that the chunk store can read again ([`super::FileSource`]), else the code.
pub fn pack_full_source(row: &super::ChunkRow, sources: bool) -> &str {
    if sources && row.code_in_file {
        FROM_FILE
    } else {
        &row.chunk.full_source
    }
}

/// A `full_source` stored as "the lines `start_line..=end_line` of the row's file" (a
/// NUL alone: code the scanner reads never holds one, so no code is stored so).
pub const FROM_FILE: &str = "\0";

/// The stored form of `embedding_text`, given the row's `content` (unpacked).
pub fn pack_embedding<'a>(content: &str, embedding_text: &'a str) -> Cow<'a, str> {
    match embedding_text.strip_suffix(content) {
        Some(preamble) if !content.is_empty() => Cow::Owned(format!("{SAME}{preamble}")),
        _ => literal(embedding_text),
    }
}

/// The stored form of a row's `embedding_text`: [`pack_embedding`] while the row has no
/// vector, empty once it has one.
pub fn pack_embedding_until_embedded(row: &super::ChunkRow) -> Cow<'_, str> {
    if row.vector.is_empty() {
        pack_embedding(&row.chunk.content, &row.chunk.embedding_text)
    } else {
        Cow::Borrowed("")
    }
}

/// `embedding_text` from its stored form and the row's `content` (unpacked).
pub fn unpack_embedding(content: &str, stored: String) -> String {
    if let Some(preamble) = stored.strip_prefix(SAME) {
        format!("{preamble}{content}")
    } else if stored.starts_with(LITERAL) {
        unliteral(&stored).to_string()
    } else {
        stored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`LineStarts::lines`] of a text read once.
    fn file_lines(text: &str, start_line: u32, end_line: u32) -> Option<&str> {
        LineStarts::of(text).lines(text, start_line, end_line)
    }

    /// Packs and unpacks one row's texts; returns the stored forms.
    fn round_trip(full: &str, content: &str, emb: &str) -> (String, String) {
        let c = pack_content(full, content).into_owned();
        let e = pack_embedding(content, emb).into_owned();
        let content_back = unpack_content(full, c.clone());
        assert_eq!(content_back, content);
        assert_eq!(unpack_embedding(&content_back, e.clone()), emb);
        (c, e)
    }

    #[test]
    fn a_leaf_stores_its_code_once() {
        let code = "function add(a, b) {\n  return a + b;\n}";
        let emb = format!("// src/math.ts > add\n{code}");
        let (c, e) = round_trip(code, code, &emb);
        assert_eq!(c, "\0");
        assert_eq!(e, "\0// src/math.ts > add\n");
    }

    #[test]
    fn a_container_keeps_its_collapsed_content_and_a_cut_text_is_kept_whole() {
        let full = "class A {\n  m() { return 1; }\n}";
        let content = "class A {\n  m() { … }\n}";
        let (c, e) = round_trip(full, content, &format!("// a.ts > A\n{content}"));
        assert_eq!(c, content);
        assert!(e.starts_with('\0'));
        let cut = "// a.ts > A\nclass A {\n// … truncated";
        let (_, e) = round_trip(full, content, cut);
        assert_eq!(e, cut, "no suffix to share: stored as it is");
    }

    #[test]
    fn file_lines_cut_as_the_chunker_does() {
        let text = "a\r\nbb\n\nccc\n";
        assert_eq!(file_lines(text, 1, 1), Some("a"));
        assert_eq!(file_lines(text, 1, 2), Some("a\r\nbb"));
        assert_eq!(file_lines(text, 3, 4), Some("\nccc"));
        assert_eq!(
            file_lines(text, 5, 5),
            Some(""),
            "the empty line after the last break"
        );
        assert_eq!(file_lines(text, 6, 6), None, "past the end");
        assert_eq!(file_lines(text, 0, 1), None);
        assert_eq!(file_lines(text, 2, 1), None);
        assert_eq!(
            file_lines("x", 1, 3),
            Some("x"),
            "a last line without a break"
        );
    }

    /// A file read back from its bytes: invalid UTF-8 replaced as `from_utf8_lossy`
    /// replaces it, and its lines cut as [`LineStarts`] cuts them from the text.
    #[test]
    fn a_file_text_is_its_lossy_text_and_cuts_its_lines() {
        let bytes = b"def f():\r\n    return '\xff'\n\nz".to_vec();
        let file = FileText::from_bytes(bytes.clone());
        assert_eq!(file.text(), String::from_utf8_lossy(&bytes));
        assert!(file.text().contains('\u{fffd}'));
        for (start, end) in [(1, 1), (1, 2), (2, 4), (4, 4), (5, 5), (0, 1), (3, 2)] {
            assert_eq!(
                file.lines(start, end),
                file_lines(file.text(), start, end),
                "lines {start}..={end}"
            );
        }
        assert_eq!(file.lines(2, 2), Some("    return '\u{fffd}'"));
        let valid = FileText::from_bytes(b"a\nb".to_vec());
        assert_eq!(valid.lines(2, 2), Some("b"));
        assert!(valid.held_bytes() >= 3);
    }

    #[test]
    fn texts_that_begin_with_a_mark_or_are_empty_survive() {
        for (full, content, emb) in [
            ("\0x", "\0x", "\0x"),
            ("a", "\0", "\u{1}b"),
            ("", "", ""),
            ("x", "", "pre"),
            ("\u{1}", "\u{1}", "p\u{1}"),
            ("a", "b", "\0"),
        ] {
            round_trip(full, content, emb);
        }
    }

    /// Every chunk of every parser fixture (six languages) reads back its `content`
    /// exactly; nested members and containers store offsets, not text.
    #[test]
    fn content_is_stored_as_offsets_where_the_source_remakes_it() {
        use crate::chunk::{ChunkOptions, chunk_file};
        use crate::parse::{ParseLimits, parse_bytes};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/parser");
        let (mut derived, mut nested, mut containers, mut in_file) = (0, 0, 0, 0);
        let mut files: Vec<_> = walkdir::WalkDir::new(&root)
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file())
            .map(|e| e.into_path())
            .filter(|p| !p.to_string_lossy().ends_with(".json"))
            .collect();
        files.sort();
        for path in files {
            let Ok(source) = std::fs::read_to_string(&path) else {
                continue;
            };
            let rel = path.strip_prefix(&root).unwrap_or(&path).to_string_lossy();
            let Ok(parsed) = parse_bytes(&path, source.as_bytes(), &ParseLimits::default()) else {
                continue;
            };
            for chunk in chunk_file(&rel, &source, &parsed, &ChunkOptions::default()) {
                // The code of a symbol is its lines of the file, as the store reads them.
                if chunk.node_kind != crate::parse::SymbolKind::File {
                    assert_eq!(
                        file_lines(&source, chunk.start_line, chunk.end_line),
                        Some(chunk.full_source.as_str()),
                        "{rel} > {}",
                        chunk.breadcrumb
                    );
                    in_file += 1;
                }
                let stored = pack_chunk_content(&chunk).into_owned();
                assert_eq!(
                    unpack_content(&chunk.full_source, stored.clone()),
                    chunk.content,
                    "{rel} > {}: stored as {stored:?}",
                    chunk.breadcrumb
                );
                if stored.starts_with(DERIVED) {
                    derived += 1;
                    nested += usize::from(chunk.depth > 0 && !chunk.has_collapsed_children);
                    containers += usize::from(chunk.has_collapsed_children);
                }
            }
        }
        assert!(derived > 100, "{derived} stored as offsets");
        assert!(
            in_file > 300,
            "{in_file} symbols' code read from their file"
        );
        assert!(
            nested > 50 && containers > 20,
            "{nested} members, {containers} containers"
        );
    }

    #[test]
    fn a_derived_content_is_offsets_and_never_wrong() {
        let full = "    fn a() {\n        x\n    }\n";
        let d = Derivation {
            start: 4,
            len: 24,
            collapsed: vec![],
            placeholder: Cow::Borrowed(""),
        };
        assert_eq!(d.remake(full).as_deref(), Some("fn a() {\n    x\n}"));
        assert_eq!(d.stored(), "\u{2}4,24");
        assert_eq!(unpack_content(full, d.stored()), "fn a() {\n    x\n}");
        let class = "class A {\n  m() { return 1; }\n}";
        let d = Derivation {
            start: 0,
            len: class.len(),
            collapsed: vec![(16, 29)],
            placeholder: Cow::Borrowed("{ … }"),
        };
        assert_eq!(
            d.remake(class).as_deref(),
            Some("class A {\n  m() { … }\n}")
        );
        assert_eq!(
            unpack_chunk_content(class, d.stored(), 100),
            (
                "class A {\n  m() { … }\n}".to_string(),
                vec![crate::parse::ByteRange {
                    start: 116,
                    end: 129
                }]
            )
        );
        assert_eq!(
            unpack_chunk_content(class, "\0".into(), 0),
            (class.to_string(), vec![])
        );
        assert_eq!(Derivation::parse(&d.stored()[1..]), Some(d));
        // Offsets that do not fit the source, or a text that only looks derived (a row
        // written before, or a literal), read back as stored.
        for stored in ["\u{2}4,99", "\u{2}x", "\u{2}0,3;2-1|…", "\u{2}"] {
            assert_eq!(unpack_content("abc", stored.to_string()), stored);
        }
        let (c, _) = round_trip("a", "\u{2}0,1", "e");
        assert!(c.starts_with(LITERAL));
    }

    #[test]
    fn rows_written_before_read_back_unchanged() {
        assert_eq!(unpack_content("full", "collapsed".into()), "collapsed");
        assert_eq!(
            unpack_embedding("code", "// pre\ncode".into()),
            "// pre\ncode"
        );
    }
}
