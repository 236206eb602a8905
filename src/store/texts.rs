//! How a chunk row's copies of its code are stored without repeating them.
//!
//! A chunk carries its code up to three times: `full_source`, `content` (the source with
//! nested definitions collapsed: for a function or any chunk without children, the
//! source itself) and `embedding_text` (a preamble — path, breadcrumb, imports — then
//! `content`, unless it was cut to fit the model). The chunk store writes `full_source`
//! as it is and the other two relative to it:
//!
//! - `content` equal to `full_source` is stored as [`SAME`];
//! - `embedding_text` that ends with `content` is stored as [`SAME`] and its preamble;
//! - any other value is stored as it is, behind [`LITERAL`] when it begins with one of
//!   the two marks (never the case for code the scanner reads, which skips binary files,
//!   but the encoding holds for every string).
//!
//! Rows written before this encoding hold the texts themselves and read back unchanged.
//! At 1M lines (c1m, docs/BENCHMARKS.md) the two columns take 27 MB on disk instead of 51.
//!
//! `embedding_text` is kept only while the row waits for its vector
//! ([`pack_embedding_until_embedded`]): a row written with its vector stores it empty, and
//! reads back with an empty `embedding_text`. Nothing reads it after: a change of model
//! chunks every file again (`Indexer::adopt_model`), which writes the texts anew. At 1M
//! lines this leaves out the preambles' 14 MB.

use std::borrow::Cow;

/// Marks a text stored relative to another (a NUL, which source text does not hold).
pub const SAME: char = '\0';

/// Marks a text stored as it is although it begins with a mark.
pub const LITERAL: char = '\u{1}';

fn literal(text: &str) -> Cow<'_, str> {
    if text.starts_with([SAME, LITERAL]) {
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

/// `content` from its stored form and the row's `full_source`.
pub fn unpack_content(full_source: &str, stored: String) -> String {
    if stored.len() == SAME.len_utf8() && stored.starts_with(SAME) {
        full_source.to_string()
    } else if stored.starts_with(LITERAL) {
        unliteral(&stored).to_string()
    } else {
        stored
    }
}

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

    #[test]
    fn rows_written_before_read_back_unchanged() {
        assert_eq!(unpack_content("full", "collapsed".into()), "collapsed");
        assert_eq!(
            unpack_embedding("code", "// pre\ncode".into()),
            "// pre\ncode"
        );
    }
}
