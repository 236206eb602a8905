//! Training pairs from documented code: (what a symbol's JSDoc says it does, the chunk
//! search would see if it had no JSDoc).
//!
//! The code-search model (`tools/train/`, issue "Sextant's own code-search model") learns
//! from these. The code side must look exactly like an undocumented chunk, or the model
//! learns to match a description against its own words: every JSDoc block of the file is
//! blanked (newlines kept, so line numbers do not move), the file is parsed and chunked
//! again, and the chunk with the same id (ids hash path, kind, name and parent chain, not
//! text) gives the embedding text. Pure: no I/O.

use std::path::Path;

use serde::Serialize;

use crate::chunk::{ChunkOptions, chunk_file, purpose_of};
use crate::parse::{ByteRange, ParseError, ParseLimits, SymbolKind, parse_bytes};
use crate::text::collapse_whitespace;

/// Fewest words (with a letter) a description needs to say something.
const MIN_DESCRIPTION_WORDS: usize = 3;
/// Fewest non-whitespace characters of collapsed code worth learning from.
const MIN_CODE_CHARS: usize = 40;
/// A file whose lines average more than this many bytes is minified or bundled.
const MAX_MEAN_LINE_BYTES: usize = 300;

/// One (description, code) pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocPair {
    /// Repository-relative path of the file.
    pub path: String,
    /// `Parent > … > name`.
    pub breadcrumb: String,
    /// Symbol kind (`function`, `method`, `class`, …).
    pub kind: SymbolKind,
    /// First sentence of the JSDoc description, inline tags resolved to their text.
    pub description: String,
    /// The chunk's embedding text with every JSDoc block of the file removed.
    pub code: String,
}

/// Why a whole file gives no pairs, when it is not simply undocumented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Skipped {
    /// Declares itself generated (`@generated`, "do not edit", "auto-generated").
    Generated,
    /// Minified or bundled: very long lines on average.
    Minified,
}

/// Returns the file's training pairs, or why it was skipped as a whole.
///
/// ```
/// use sextant::dev::pairs::doc_pairs;
///
/// let source = "/**\n * Adds two numbers and returns their sum.\n */\n\
///               export function add(a: number, b: number): number {\n  return a + b;\n}\n";
/// let pairs = doc_pairs("src/math.ts", source).unwrap().unwrap();
/// assert_eq!(pairs[0].description, "Adds two numbers and returns their sum.");
/// assert!(pairs[0].code.contains("return a + b;"));
/// assert!(!pairs[0].code.contains("Adds two"));
/// # Ok::<(), sextant::parse::ParseError>(())
/// ```
pub fn doc_pairs(
    relative_path: &str,
    source: &str,
) -> Result<Result<Vec<DocPair>, Skipped>, ParseError> {
    if is_generated(source) {
        return Ok(Err(Skipped::Generated));
    }
    if is_minified(relative_path, source) {
        return Ok(Err(Skipped::Minified));
    }
    let path = Path::new(relative_path);
    let limits = ParseLimits::default();
    let options = ChunkOptions::default();
    let parsed = parse_bytes(path, source.as_bytes(), &limits)?;
    let documented: Vec<(String, String)> = chunk_file(relative_path, source, &parsed, &options)
        .into_iter()
        .filter(|c| !c.node_kind.is_statement() && c.node_kind != SymbolKind::File)
        .filter_map(|c| {
            let description = describe(c.jsdoc.as_deref()?)?;
            Some((c.id, description))
        })
        .collect();
    if documented.is_empty() {
        return Ok(Ok(Vec::new()));
    }
    let stripped = strip_jsdoc(source, &parsed.comments);
    let parsed = parse_bytes(path, stripped.as_bytes(), &limits)?;
    let chunks = chunk_file(relative_path, &stripped, &parsed, &options);
    let pairs = documented
        .into_iter()
        .filter_map(|(id, description)| {
            let chunk = chunks.iter().find(|c| c.id == id)?;
            let code_chars = chunk.content.chars().filter(|c| !c.is_whitespace()).count();
            (code_chars >= MIN_CODE_CHARS).then(|| DocPair {
                path: relative_path.to_string(),
                breadcrumb: chunk.breadcrumb.clone(),
                kind: chunk.node_kind,
                description,
                code: chunk.embedding_text.clone(),
            })
        })
        .collect();
    Ok(Ok(pairs))
}

/// `source` with every JSDoc block (`/** … */`) among `comments` replaced by spaces, its
/// newlines kept, so every other byte and line stays where it was.
pub fn strip_jsdoc(source: &str, comments: &[ByteRange]) -> String {
    let mut bytes = source.as_bytes().to_vec();
    for range in comments {
        let Some(text) = source.get(range.start..range.end) else {
            continue;
        };
        if !text.starts_with("/**") || text.starts_with("/**/") {
            continue;
        }
        for b in &mut bytes[range.start..range.end] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }
    // Whole UTF-8 sequences inside a comment became spaces; outside it nothing changed.
    String::from_utf8(bytes).unwrap_or_else(|_| source.to_string())
}

/// The first sentence of a JSDoc description (before any block tag), with `{@link X}`
/// and `{@link X|text}` replaced by their text; `None` when it has fewer than three words.
pub fn describe(jsdoc: &str) -> Option<String> {
    let purpose = purpose_of(jsdoc);
    let text = resolve_inline_tags(&purpose);
    let sentence = first_sentence(&text);
    let words = sentence
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count();
    (words >= MIN_DESCRIPTION_WORDS).then(|| sentence.to_string())
}

/// `{@link Target}` → `Target`, `{@link Target|label}` or `{@link Target label}` → `label`.
fn resolve_inline_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{@") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('}') else {
            rest = &rest[start..];
            break;
        };
        let inner = &rest[start + 2..start + len];
        let body = inner.split_once(char::is_whitespace).map_or("", |(_, b)| b);
        let shown = match body.split_once('|') {
            Some((_, label)) => label,
            None => body,
        };
        out.push_str(shown.trim());
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    collapse_whitespace(&out)
}

/// Up to the first `.`, `!` or `?` followed by whitespace or the end (abbreviations like
/// "e.g." and "i.e." do not end a sentence).
fn first_sentence(text: &str) -> &str {
    let mut from = 0;
    while let Some(i) = text[from..].find(['.', '!', '?']).map(|i| i + from) {
        let after = &text[i + 1..];
        let word = text[..=i].rsplit(char::is_whitespace).next().unwrap_or("");
        let abbreviation = matches!(
            word.to_ascii_lowercase().as_str(),
            "e.g." | "i.e." | "etc." | "vs." | "cf."
        );
        if (after.is_empty() || after.starts_with(char::is_whitespace)) && !abbreviation {
            return text[..=i].trim();
        }
        from = i + 1;
    }
    text.trim()
}

fn is_generated(source: &str) -> bool {
    let head: String = source.chars().take(1000).collect::<String>().to_lowercase();
    [
        "@generated",
        "do not edit",
        "auto-generated",
        "autogenerated",
    ]
    .iter()
    .any(|m| head.contains(m))
}

fn is_minified(relative_path: &str, source: &str) -> bool {
    if relative_path.contains(".min.") {
        return true;
    }
    let lines = source.lines().count().max(1);
    source.len() / lines > MAX_MEAN_LINE_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_side_has_no_jsdoc_of_its_own_or_its_members() {
        let source = "/**\n * Keeps a running total of values.\n */\nexport class Total {\n  \
                      /** The sum so far, never negative here. */\n  sum = 0;\n  \
                      /**\n   * Adds one value to the running total.\n   */\n  \
                      add(v: number): void {\n    this.sum += v; // plain comments stay\n  }\n}\n";
        let pairs = doc_pairs("src/total.ts", source).unwrap().unwrap();
        let class = pairs.iter().find(|p| p.breadcrumb == "Total").unwrap();
        assert_eq!(class.description, "Keeps a running total of values.");
        let method = pairs
            .iter()
            .find(|p| p.breadcrumb == "Total > add")
            .unwrap();
        assert_eq!(method.description, "Adds one value to the running total.");
        for p in &pairs {
            assert!(!p.code.contains("running total"), "{}", p.code);
            assert!(!p.code.contains("never negative"), "{}", p.code);
            assert!(!p.code.contains("Purpose:"), "{}", p.code);
            assert!(!p.code.contains("/**"), "{}", p.code);
        }
        assert!(method.code.contains("plain comments stay"));
        assert!(method.code.contains("this.sum += v"));
    }

    #[test]
    fn stripping_keeps_lines_and_other_comments() {
        let source = "/** doc é */\nconst a = 1; /* block */ // line\n/**/ const b = 2;\n";
        let parsed = parse_bytes(
            Path::new("a.ts"),
            source.as_bytes(),
            &ParseLimits::default(),
        )
        .unwrap();
        let stripped = strip_jsdoc(source, &parsed.comments);
        assert_eq!(stripped.lines().count(), source.lines().count());
        assert!(stripped.lines().next().unwrap().trim().is_empty());
        assert!(stripped.contains("/* block */ // line"));
        assert!(stripped.contains("/**/ const b = 2;"));
    }

    #[test]
    fn descriptions_are_first_sentences_with_links_resolved() {
        assert_eq!(
            describe("Creates an {@link Observable} from e.g. an array. More text.\n@param x y")
                .as_deref(),
            Some("Creates an Observable from e.g. an array.")
        );
        assert_eq!(
            describe("Emits {@link Foo|the last value} only.").as_deref(),
            Some("Emits the last value only.")
        );
        assert_eq!(describe("Internal."), None);
        assert_eq!(describe("@deprecated use other"), None);
    }

    #[test]
    fn generated_minified_and_trivial_code_gives_nothing() {
        let generated = "// @generated by protoc\n/** Adds two numbers together always. */\n\
                         export function add(a, b) { return a + b + a + b + a + b + a + b; }\n";
        assert_eq!(
            doc_pairs("gen.js", generated).unwrap(),
            Err(Skipped::Generated)
        );
        let long = format!(
            "/** Adds two numbers together. */ function f(){{{}}}",
            "x;".repeat(400)
        );
        assert_eq!(
            doc_pairs("bundle.js", &long).unwrap(),
            Err(Skipped::Minified)
        );
        assert_eq!(
            doc_pairs("a.min.js", "var a;").unwrap(),
            Err(Skipped::Minified)
        );
        let trivial = "/** Returns the identity of its input. */\nexport const id = (x) => x;\n";
        assert_eq!(doc_pairs("id.js", trivial).unwrap(), Ok(Vec::new()));
    }
}
