//! Training pairs from documented code: (what a symbol's documentation says it does, the
//! chunk search would see if it had none), in every language the parser reads.
//!
//! The code-search model (`tools/train/`, issue "Sextant's own code-search model") learns
//! from these. The code side must look exactly like an undocumented chunk, or the model
//! learns to match a description against its own words: every documentation comment of
//! the file is blanked (newlines kept, so line numbers do not move), the file is parsed
//! and chunked again, and the chunk with the same id (ids hash path, kind, name and parent
//! chain, not text) gives the embedding text. Documentation is what the parser puts in a
//! symbol's doc slot: JSDoc and Javadoc blocks, Rust's `///` and `//!`, Python docstrings,
//! and the comments directly above a documented definition (Go's doc comments). Pure: no
//! I/O.

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
    /// First sentence of the documentation, inline tags and markup resolved to their text.
    pub description: String,
    /// The chunk's embedding text with every documentation comment of the file removed.
    pub code: String,
    /// Which kind of text the description is.
    pub register: Register,
}

/// Where a pair's description comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Register {
    /// A symbol's documentation comment ([`doc_pairs`]).
    Doc,
    /// What a test says it checks ([`super::registers::test_pairs`]).
    Test,
    /// A file's own doc paired with its outline ([`super::registers::module_pair`]).
    Module,
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
    let documented: Vec<(String, String, usize)> =
        chunk_file(relative_path, source, &parsed, &options)
            .into_iter()
            .filter(|c| !c.node_kind.is_statement() && c.node_kind != SymbolKind::File)
            .filter_map(|c| {
                let description = describe(c.jsdoc.as_deref()?)?;
                let description = without_leading_name(&description, &c.name)?;
                Some((c.id, description, c.bytes.start))
            })
            .collect();
    if documented.is_empty() {
        return Ok(Ok(Vec::new()));
    }
    let starts: Vec<usize> = documented.iter().map(|d| d.2).collect();
    let stripped = strip_docs(source, &parsed.comments, &starts);
    let parsed = parse_bytes(path, stripped.as_bytes(), &limits)?;
    let chunks = chunk_file(relative_path, &stripped, &parsed, &options);
    let pairs = documented
        .into_iter()
        .filter_map(|(id, description, _)| {
            let chunk = chunks.iter().find(|c| c.id == id)?;
            let code_chars = chunk.content.chars().filter(|c| !c.is_whitespace()).count();
            (code_chars >= MIN_CODE_CHARS).then(|| DocPair {
                path: relative_path.to_string(),
                breadcrumb: chunk.breadcrumb.clone(),
                kind: chunk.node_kind,
                description,
                code: chunk.embedding_text.clone(),
                register: Register::Doc,
            })
        })
        .collect();
    Ok(Ok(pairs))
}

/// `source` with every documentation comment among `comments` replaced by spaces, its
/// newlines kept, so every other byte and line stays where it was.
///
/// A comment is documentation by its form (`/** */` but not `/**/`, `///`, `//!`, `/*!`,
/// or a string literal: the parser reports Python docstrings as comments), or by its
/// place: directly above (no blank line between) one of `documented` (the start bytes of
/// documented definitions) or above another comment that is, as Go writes its doc
/// comments.
pub fn strip_docs(source: &str, comments: &[ByteRange], documented: &[usize]) -> String {
    let mut anchors: std::collections::BTreeSet<usize> = documented.iter().copied().collect();
    let mut blank = vec![false; comments.len()];
    let mut order: Vec<usize> = (0..comments.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(comments[i].start));
    for i in order {
        let range = comments[i];
        let Some(text) = source.get(range.start..range.end) else {
            continue;
        };
        let above = anchors.range(range.end..).next().is_some_and(|&next| {
            source
                .get(range.end..next)
                .is_some_and(|gap| gap.trim().is_empty() && gap.matches('\n').count() <= 1)
        });
        if is_doc_form(text) || above {
            blank[i] = true;
            anchors.insert(range.start);
        }
    }
    let blanked = comments.iter().zip(&blank).filter(|(_, b)| **b);
    blank_ranges(source, blanked.map(|(range, _)| range))
}

/// `source` with every byte of `ranges` but line breaks turned into a space, so that
/// lines and offsets stay as they were.
pub(super) fn blank_ranges<'a>(
    source: &str,
    ranges: impl IntoIterator<Item = &'a ByteRange>,
) -> String {
    let mut bytes = source.as_bytes().to_vec();
    for range in ranges {
        if let Some(span) = bytes.get_mut(range.start..range.end) {
            span.iter_mut()
                .filter(|b| **b != b'\n' && **b != b'\r')
                .for_each(|b| *b = b' ');
        }
    }
    // Whole UTF-8 sequences inside a comment became spaces; outside it nothing changed.
    String::from_utf8(bytes).unwrap_or_else(|_| source.to_string())
}

/// Whether a comment's text is documentation by its form alone.
fn is_doc_form(text: &str) -> bool {
    let unprefixed = text
        .char_indices()
        .take(3)
        .find(|(_, c)| !"rRuUbBfF".contains(*c))
        .map_or(text, |(i, _)| &text[i..]);
    (text.starts_with("/**") && !text.starts_with("/**/"))
        || text.starts_with("///")
        || text.starts_with("//!")
        || text.starts_with("/*!")
        || unprefixed.starts_with(['"', '\''])
}

/// A description that begins with the symbol's own name (Go's "Reader reads …", Java's
/// "Foo does …") without it, so that the model learns from what the text says rather than
/// from a name the code also holds; `None` when nothing is left.
fn without_leading_name(description: &str, name: &str) -> Option<String> {
    let name = simple_name(name);
    let Some(rest) = description
        .strip_prefix(name)
        .filter(|r| r.starts_with(' ') && !name.is_empty())
    else {
        return Some(description.to_string());
    };
    capitalised(rest)
}

/// A name without the receiver, type or module it may carry (`(*Buffer).Push`,
/// `Buffer.Push`, `Buffer::push`).
pub(super) fn simple_name(name: &str) -> &str {
    name.rsplit(['.', ' ', ':']).next().unwrap_or(name)
}

/// `rest` (what follows a name a description began with) as a sentence of its own: its
/// first letter upper-cased; `None` when it has too few words to describe anything.
pub(super) fn capitalised(rest: &str) -> Option<String> {
    let mut chars = rest.trim_start().chars();
    let first = chars.next()?;
    let text: String = first.to_uppercase().chain(chars).collect();
    let words = text
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count();
    (words >= MIN_DESCRIPTION_WORDS).then_some(text)
}

/// The first sentence of a JSDoc description (before any block tag), with `{@link X}`
/// and `{@link X|text}` replaced by their text; `None` when it has fewer than three words.
pub fn describe(jsdoc: &str) -> Option<String> {
    let purpose = purpose_of(jsdoc);
    let text = plain_text(&resolve_inline_tags(&purpose));
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

/// Markup a reader does not type, removed: HTML tags (`<p>`, `<code>`), Markdown code
/// spans and link brackets (`` [`Foo`] `` → `Foo`, `[text](url)` → `text`), and
/// reStructuredText roles (`` :class:`Foo` `` → `Foo`).
fn plain_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let tail = &rest[c.len_utf8()..];
        match c {
            '<' if tail.starts_with(|n: char| n.is_ascii_alphabetic() || n == '/') => {
                match tail.find('>') {
                    Some(end) => rest = &tail[end + 1..],
                    None => {
                        out.push(c);
                        rest = tail;
                    }
                }
            }
            ']' if tail.starts_with('(') => match tail.find(')') {
                Some(end) => rest = &tail[end + 1..],
                None => rest = tail,
            },
            '`' | '[' | ']' => rest = tail,
            ':' => {
                let role = tail.find(':').filter(|&end| {
                    end > 0
                        && tail[..end]
                            .chars()
                            .all(|r| r.is_ascii_alphanumeric() || r == '_')
                        && tail[end + 1..].starts_with('`')
                });
                match role {
                    Some(end) => rest = &tail[end + 1..],
                    None => {
                        out.push(c);
                        rest = tail;
                    }
                }
            }
            _ => {
                out.push(c);
                rest = tail;
            }
        }
    }
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
        let stripped = strip_docs(source, &parsed.comments, &[]);
        assert_eq!(stripped.lines().count(), source.lines().count());
        assert!(stripped.lines().next().unwrap().trim().is_empty());
        assert!(stripped.contains("/* block */ // line"));
        assert!(stripped.contains("/**/ const b = 2;"));
    }

    /// Each pair's code holds none of the file's documentation, and keeps its other
    /// comments and its code.
    fn assert_undocumented(pairs: &[DocPair], docs: &[&str], kept: &[&str]) {
        assert!(!pairs.is_empty());
        for p in pairs {
            for d in docs {
                assert!(!p.code.contains(d), "{d:?} left in {}", p.code);
            }
        }
        let all: String = pairs.iter().map(|p| p.code.as_str()).collect();
        for k in kept {
            assert!(all.contains(k), "{k:?} missing from {all}");
        }
    }

    #[test]
    fn python_docstrings_are_descriptions_and_leave_the_code() {
        let source = "class Ledger:\n    \"\"\"Keeps the balance of one account.\"\"\"\n\n    \
                      def deposit(self, amount):\n        \"\"\"Adds :class:`Money` to the \
                      balance and records it.\n\n        :param amount: how much\n        \
                      \"\"\"\n        # a plain comment\n        self.balance += amount\n        \
                      self.history.append(amount)\n";
        let pairs = doc_pairs("ledger.py", source).unwrap().unwrap();
        let method = pairs.iter().find(|p| p.breadcrumb == "Ledger > deposit");
        assert_eq!(
            method.map(|p| p.description.as_str()),
            Some("Adds Money to the balance and records it.")
        );
        assert_undocumented(
            &pairs,
            &["Keeps the balance", "records it", ":param"],
            &["# a plain comment", "self.history.append(amount)"],
        );
    }

    #[test]
    fn go_doc_comments_lose_their_leading_name() {
        let source = "package ring\n\n// Buffer holds the last values written to it.\n// It is not safe \
                      for concurrent use.\ntype Buffer struct {\n\tvalues []int\n\tnext   int\n\t\
                      size   int\n}\n\n// Push stores v, dropping the oldest value when full.\n\
                      func (b *Buffer) Push(v int) {\n\t// wrap around\n\tb.values[b.next] = v\n\t\
                      b.next = (b.next + 1) % b.size\n}\n";
        let pairs = doc_pairs("ring.go", source).unwrap().unwrap();
        let descriptions: Vec<&str> = pairs.iter().map(|p| p.description.as_str()).collect();
        assert!(
            descriptions.contains(&"Holds the last values written to it."),
            "{descriptions:?}"
        );
        assert!(
            descriptions.contains(&"Stores v, dropping the oldest value when full."),
            "{descriptions:?}"
        );
        assert_undocumented(
            &pairs,
            &["last values", "oldest value", "concurrent use"],
            &["// wrap around", "b.values[b.next] = v"],
        );
    }

    #[test]
    fn rust_and_java_doc_comments_leave_the_code() {
        let rust = "/// Counts the [`Token`]s of a line, see [the guide](http://x).\n\
                    #[inline]\npub fn count(line: &str) -> usize {\n    // split on spaces\n    \
                    line.split(' ').filter(|w| !w.is_empty()).count()\n}\n";
        let pairs = doc_pairs("src/count.rs", rust).unwrap().unwrap();
        assert_eq!(
            pairs[0].description,
            "Counts the Tokens of a line, see the guide."
        );
        assert_undocumented(&pairs, &["Counts the", "guide"], &["// split on spaces"]);
        let java = "package a;\n\n/**\n * Parses a <code>version</code> string into \
                    {@code Version} parts.\n * @param s text\n */\npublic final class Versions {\n  \
                    /** Returns the major part of the given version text. */\n  public static int \
                    major(String s) {\n    // before the dot\n    return Integer.parseInt(s.split(\"\\\\.\")[0]);\n  }\n}\n";
        let pairs = doc_pairs("a/Versions.java", java).unwrap().unwrap();
        let class = pairs.iter().find(|p| p.breadcrumb == "Versions");
        assert_eq!(
            class.map(|p| p.description.as_str()),
            Some("Parses a version string into Version parts.")
        );
        assert_undocumented(&pairs, &["Parses a", "major part"], &["// before the dot"]);
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
