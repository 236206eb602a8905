//! The file outline (pure): one extra unit per file that answers "how is this
//! organised" with the file itself: its path, leading comment, dependencies and the
//! signatures of what it declares (with each one's purpose), classes with their members.
//!
//! It is built from the file's chunks after [`super::chunk_file`], so the chunker's own
//! output and its global rules are untouched. Its range is the whole file, but its
//! `full_source` and `content` are the outline text, not the file's lines: search folds
//! no other unit into it, and snapshots show it as the outline above the file's other
//! targets.

use crate::parse::{ByteRange, Modifier, ParsedFile, SymbolKind};
use crate::text::{estimate_tokens, search_text, truncate_chars};

use super::{CodeChunk, ids, purpose_of};

/// Files with fewer outline entries than this get no outline: a file with one or two
/// declarations is answered by those declarations.
pub const MIN_ENTRIES: usize = 3;
/// At most this many entries are listed; the rest are counted.
pub const MAX_ENTRIES: usize = 60;
/// Longest signature shown, in characters.
const MAX_SIGNATURE: usize = 120;
/// Longest purpose shown after a signature, in characters.
const MAX_PURPOSE: usize = 100;
/// Longest leading comment kept, in characters.
const MAX_COMMENT: usize = 400;
/// At most this many dependencies are named.
const MAX_DEPENDENCIES: usize = 20;

/// The outline unit of one chunked file, or `None` when the file declares fewer than
/// [`MIN_ENTRIES`] things worth listing. `chunks` are the file's chunks from
/// [`super::chunk_file`] (pre-order).
///
/// ```
/// use std::path::Path;
/// use sextant::chunk::{ChunkOptions, chunk_file, outline_chunk};
/// use sextant::parse::{ParseLimits, SymbolKind, parse_bytes};
///
/// let source = "import jwt from 'jsonwebtoken';\n\
///               /** Checks tokens. */\n\
///               export class Auth {\n  check(t: string) { return jwt.verify(t, 'k'); }\n}\n\
///               export function sign(claims: object) { return jwt.sign(claims, 'k'); }\n";
/// let parsed = parse_bytes(Path::new("auth.ts"), source.as_bytes(), &ParseLimits::default())?;
/// let chunks = chunk_file("src/auth.ts", source, &parsed, &ChunkOptions::default());
/// let outline = outline_chunk("src/auth.ts", source, &parsed, &chunks).expect("three entries");
/// assert_eq!(outline.node_kind, SymbolKind::File);
/// assert!(outline.content.contains("export class Auth  // Checks tokens."));
/// assert!(outline.content.contains("  check(t: string)"));
/// # Ok::<(), sextant::parse::ParseError>(())
/// ```
pub fn outline_chunk(
    relative_path: &str,
    source: &str,
    parsed: &ParsedFile,
    chunks: &[CodeChunk],
) -> Option<CodeChunk> {
    let entries = entries(chunks);
    if entries.len() < MIN_ENTRIES {
        return None;
    }
    let file_name = relative_path.rsplit('/').next().unwrap_or(relative_path);
    let comment = leading_comment(source);
    let mut dependencies: Vec<&str> = Vec::new();
    for import in &parsed.imports {
        if !dependencies.contains(&import.module.as_str()) {
            dependencies.push(&import.module);
        }
    }
    let text = outline_text(relative_path, comment.as_deref(), &dependencies, &entries);
    let mut preamble = format!(
        "[{}] {relative_path} (file outline)\n",
        parsed.language.label()
    );
    if let Some(comment) = &comment {
        preamble.push_str(&format!("Purpose: {comment}\n"));
    }
    preamble.push_str("---\n");
    let embedding_text = format!("{preamble}{text}");
    let names: Vec<&str> = entries.iter().map(|(c, _)| c.name.as_str()).collect();
    // A file whose every declaration is deprecated is: its outline is too.
    let modifiers = if entries
        .iter()
        .all(|(c, _)| c.modifiers.contains(&Modifier::Deprecated))
    {
        vec![Modifier::Deprecated]
    } else {
        Vec::new()
    };
    let search = search_text(&format!(
        "{relative_path} {relative_path} {} {} {}",
        comment.as_deref().unwrap_or(""),
        names.join(" "),
        dependencies.join(" ")
    ));
    Some(CodeChunk {
        id: ids::id_of(&[relative_path, "", "file", relative_path, "0"]),
        relative_path: relative_path.to_string(),
        language: parsed.language,
        node_kind: SymbolKind::File,
        native_kind: None,
        name: file_name.to_string(),
        parent_name: None,
        parent_chunk_id: None,
        child_chunk_ids: Vec::new(),
        depth: 0,
        breadcrumb: file_name.to_string(),
        signature: relative_path.to_string(),
        modifiers,
        exported: false,
        jsdoc: comment,
        start_line: 1,
        end_line: parsed.line_count.max(1),
        bytes: ByteRange {
            start: 0,
            end: source.len(),
        },
        full_source: text.clone(),
        content: text,
        has_collapsed_children: true,
        collapsed: Vec::new(),
        relevant_imports: Vec::new(),
        embedding_tokens: estimate_tokens(&embedding_text),
        embedding_text,
        truncated: false,
        search_text: search,
    })
}

/// The outline's text: the path, the file's leading comment, its imports (at most
/// [`MAX_DEPENDENCIES`]) and one line per entry (at most [`MAX_ENTRIES`]).
fn outline_text(
    relative_path: &str,
    comment: Option<&str>,
    dependencies: &[&str],
    entries: &[(&CodeChunk, bool)],
) -> String {
    let mut text = format!("// {relative_path}\n");
    if let Some(comment) = comment {
        text.push_str(&format!("// {comment}\n"));
    }
    if !dependencies.is_empty() {
        let shown = &dependencies[..dependencies.len().min(MAX_DEPENDENCIES)];
        // A specifier is a string literal: it may hold a line break.
        text.push_str(&format!(
            "// imports: {}",
            crate::text::collapse_whitespace(&shown.join(", "))
        ));
        if dependencies.len() > shown.len() {
            text.push_str(&format!(" and {} more", dependencies.len() - shown.len()));
        }
        text.push('\n');
    }
    text.push('\n');
    for (chunk, nested) in entries.iter().take(MAX_ENTRIES) {
        text.push_str(&line(chunk, *nested));
        text.push('\n');
    }
    if entries.len() > MAX_ENTRIES {
        text.push_str(&format!(
            "// … and {} more declarations\n",
            entries.len() - MAX_ENTRIES
        ));
    }
    text
}

/// What the outline lists, in source order: named declarations at the root (variables
/// only when exported or documented), and the members of root classes, interfaces,
/// namespaces and object literals. `(chunk, nested)`.
fn entries(chunks: &[CodeChunk]) -> Vec<(&CodeChunk, bool)> {
    use SymbolKind as K;
    let listed_root = |c: &CodeChunk| match c.node_kind {
        K::Function
        | K::Method
        | K::Constructor
        | K::Class
        | K::Interface
        | K::Type
        | K::Enum
        | K::Namespace
        | K::Module
        | K::Component => true,
        K::Const | K::Variable => c.exported || c.jsdoc.is_some(),
        K::Export | K::ReExport => true,
        _ => false,
    };
    let listed_member = |c: &CodeChunk| {
        matches!(
            c.node_kind,
            K::Method | K::Constructor | K::Function | K::Class | K::Interface | K::Type | K::Enum
        )
    };
    let roots: std::collections::HashMap<&str, &CodeChunk> = chunks
        .iter()
        .filter(|c| c.depth == 0)
        .map(|c| (c.id.as_str(), c))
        .collect();
    chunks
        .iter()
        .filter_map(|c| {
            if c.depth == 0 {
                return listed_root(c).then_some((c, false));
            }
            let parent = c.parent_chunk_id.as_deref().and_then(|p| roots.get(p))?;
            (c.depth == 1 && !parent.node_kind.has_code_body() && listed_member(c))
                .then_some((c, true))
        })
        .collect()
}

/// One outline line: the signature on one line, then the purpose of its documentation.
fn line(chunk: &CodeChunk, nested: bool) -> String {
    let signature = crate::text::collapse_whitespace(if chunk.signature.is_empty() {
        &chunk.name
    } else {
        &chunk.signature
    });
    let export = if chunk.exported && !signature.starts_with("export") {
        "export "
    } else {
        ""
    };
    let mut out = format!(
        "{}{export}{}",
        if nested { "  " } else { "" },
        truncate_chars(&signature, MAX_SIGNATURE)
    );
    if let Some(purpose) = chunk
        .jsdoc
        .as_deref()
        .map(describe)
        .filter(|p| !p.is_empty())
    {
        out.push_str("  // ");
        out.push_str(&truncate_chars(first_sentence(&purpose), MAX_PURPOSE));
    }
    out
}

/// A documentation comment's description: its text before the first tag, or else the
/// text of its `@description` tag.
fn describe(jsdoc: &str) -> String {
    let purpose = purpose_of(jsdoc);
    if !purpose.is_empty() {
        return purpose;
    }
    let mut lines = jsdoc.lines().map(str::trim);
    let Some(first) = lines.find_map(|l| l.strip_prefix("@description")) else {
        return String::new();
    };
    let rest: Vec<&str> = lines.take_while(|l| !l.starts_with('@')).collect();
    crate::text::collapse_whitespace(&format!("{first} {}", rest.join(" ")))
}

/// Text up to and including the first full stop followed by a space (or all of it).
fn first_sentence(text: &str) -> &str {
    text.find(". ").map_or(text, |i| &text[..=i])
}

/// The file's leading comment: the first comment block before any code that is not a
/// licence or copyright header, as one line without comment markers and tags (the text
/// of `@fileoverview`, `@file`, `@description` and `@module` is kept).
pub fn leading_comment(source: &str) -> Option<String> {
    let mut lines = source.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.is_empty()
            || t.starts_with("#!")
            || matches!(t.trim_end_matches(';'), "'use strict'" | "\"use strict\"")
        {
            continue;
        }
        let mut block = Vec::new();
        if t.starts_with("/*") {
            let mut current = t;
            loop {
                block.push(current.to_string());
                if current.contains("*/") {
                    break;
                }
                match lines.next() {
                    Some(next) => current = next.trim(),
                    None => break,
                }
            }
        } else if t.starts_with("//") {
            block.push(t.to_string());
            while let Some(next) = lines.peek().map(|l| l.trim()) {
                if !next.starts_with("//") {
                    break;
                }
                block.push(next.to_string());
                lines.next();
            }
        } else {
            // Code: there is no leading comment.
            return None;
        }
        let joined = block.join("\n").to_ascii_lowercase();
        if joined.contains("copyright") || joined.contains("license") || joined.contains("licence")
        {
            continue;
        }
        let text = clean_comment(&block);
        if !text.is_empty() {
            return Some(truncate_chars(&text, MAX_COMMENT));
        }
    }
    None
}

/// A comment block's words: markers and tag lines removed, one line of text.
fn clean_comment(block: &[String]) -> String {
    const KEPT_TAGS: [&str; 4] = ["@fileoverview", "@file", "@description", "@module"];
    let mut words = Vec::new();
    for raw in block {
        let mut t = raw.trim();
        for marker in ["/**", "/*", "*/", "//"] {
            t = t.strip_prefix(marker).unwrap_or(t).trim();
        }
        t = t.strip_suffix("*/").unwrap_or(t).trim();
        t = t.strip_prefix('*').unwrap_or(t).trim();
        if t.starts_with('@') {
            match KEPT_TAGS.iter().find(|tag| t.starts_with(*tag)) {
                Some(tag) => t = t[tag.len()..].trim(),
                None => continue,
            }
        }
        if !t.is_empty() {
            words.push(t);
        }
    }
    crate::text::collapse_whitespace(&words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{ChunkOptions, chunk_file};
    use crate::parse::parse_bytes;
    use std::path::Path;

    fn outline(path: &str, source: &str) -> Option<CodeChunk> {
        let parsed =
            parse_bytes(Path::new(path), source.as_bytes(), &Default::default()).expect("parses");
        let chunks = chunk_file(path, source, &parsed, &ChunkOptions::default());
        outline_chunk(path, source, &parsed, &chunks)
    }

    const REPORTER: &str = "'use strict';
/**
 * Copyright (c) Somebody. Licensed under the MIT license.
 */
/**
 * @module Base
 * Base reporter: all reporters inherit from it.
 */
var diff = require('diff');
var ms = require('ms');
var EVENT = 'pass';

/**
 * @abstract
 * @description Constructs a reporter. Listens to the runner.
 */
class Base {
  constructor(runner) { this.runner = runner; }
  /** Prints the summary. */
  epilogue() { return summary(this.runner); }
}

Base.color = function (type, str) { return str; };

function summary(runner) {
  return [1, 2].map(function (n) { return n * 2; });
}

module.exports = Base;
";

    #[test]
    fn an_outline_lists_signatures_members_and_purposes() {
        let o = outline("lib/reporters/base.js", REPORTER).expect("an outline");
        assert_eq!(o.node_kind, SymbolKind::File);
        assert_eq!((o.start_line, o.end_line), (1, 29));
        assert_eq!(o.name, "base.js");
        let lines: Vec<&str> = o.content.lines().collect();
        assert_eq!(
            lines,
            [
                "// lib/reporters/base.js",
                "// Base Base reporter: all reporters inherit from it.",
                "// imports: diff, ms",
                "",
                "class Base  // Constructs a reporter.",
                "  constructor(runner)",
                "  epilogue()  // Prints the summary.",
                "Base.color = function (type, str)",
                "function summary(runner)",
            ]
        );
        // Undocumented, unexported variables and callbacks are not listed.
        assert!(!o.content.contains("EVENT"));
        assert!(!o.content.contains("function (n)"));
        assert!(o.embedding_text.starts_with(
            "[JavaScript] lib/reporters/base.js (file outline)\nPurpose: Base Base reporter"
        ));
        assert!(o.search_text.contains("epilogue"));
        assert!(o.search_text.contains("reporters"));
    }

    #[test]
    fn a_file_whose_every_declaration_is_deprecated_has_a_deprecated_outline() {
        let old = "/** @deprecated use New */\npublic class Old {\n  public void a() {}\n  public void b() {}\n}\n";
        let o = outline("src/Old.java", old).expect("an outline");
        assert_eq!(o.modifiers, [Modifier::Deprecated]);
        let mixed = format!("{old}class Live {{\n  void c() {{}}\n}}\n");
        let mixed = outline("src/Old.java", &mixed).expect("an outline");
        assert!(mixed.modifiers.is_empty(), "{:?}", mixed.content);
    }

    #[test]
    fn the_outline_id_is_stable_and_distinct_from_every_chunk() {
        let a = outline("lib/base.js", REPORTER).expect("an outline");
        let b =
            outline("lib/base.js", &REPORTER.replace("str; }", "str + ''; }")).expect("an outline");
        assert_eq!(a.id, b.id);
        let parsed = parse_bytes(
            Path::new("lib/base.js"),
            REPORTER.as_bytes(),
            &Default::default(),
        )
        .expect("parses");
        let chunks = chunk_file("lib/base.js", REPORTER, &parsed, &ChunkOptions::default());
        assert!(chunks.iter().all(|c| c.id != a.id));
        assert_ne!(
            a.id,
            outline("lib/other.js", REPORTER).expect("an outline").id
        );
    }

    #[test]
    fn small_files_get_no_outline() {
        assert!(
            outline(
                "a.ts",
                "export function one() {}\nexport function two() {}\n"
            )
            .is_none()
        );
        assert!(outline("empty.ts", "").is_none());
    }

    #[test]
    fn long_files_list_the_first_entries_and_count_the_rest() {
        let source: String = (0..70)
            .map(|i| format!("export function f{i}() {{}}\n"))
            .collect();
        let o = outline("many.ts", &source).expect("an outline");
        assert!(o.content.contains("export function f59()"));
        assert!(!o.content.contains("export function f60()"));
        assert!(o.content.ends_with("// … and 10 more declarations\n"));
    }

    #[test]
    fn leading_comments_skip_licences_and_code() {
        assert_eq!(
            leading_comment("#!/usr/bin/env node\n// Copyright 2020\n// MIT license\n\n/** @fileoverview Runs the CLI. */\nmain();\n").as_deref(),
            Some("Runs the CLI.")
        );
        assert_eq!(leading_comment("const a = 1;\n/** Not leading. */\n"), None);
        assert_eq!(
            leading_comment("// Watches files\n// and re-runs.\nwatch();\n").as_deref(),
            Some("Watches files and re-runs.")
        );
    }
}
