//! Training pairs in the registers people ask in, beside [`super::pairs`]' doc comments:
//!
//! - **Tests** ([`test_pairs`]): what a test says it checks (`it('rejects an expired
//!   token')`, `test_rejects_expired_token`, `TestRejectsExpiredToken`, a `#[test]` or
//!   `@Test` method's name) paired with the one function of the package it exercises.
//!   The rule, fixed before any training: among the calls inside the test, the names that
//!   resolve to exactly one function or method defined outside the package's test files;
//!   one such name is the target; several are narrowed to those sharing the most words
//!   with the description (at least one), and a tie gives no pair.
//! - **Modules** ([`module_pair`]): a file's own doc (Python module docstring, Rust `//!`,
//!   Go's package comment, a leading block comment) paired with the file's outline
//!   ([`crate::chunk::outline_chunk`]) built with every comment of the file blanked, so
//!   the outline does not carry the description's words.
//!
//! Pure: no I/O. Both give [`DocPair`]s whose `register` says which.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use crate::chunk::{ChunkOptions, CodeChunk, chunk_file, outline_chunk};
use crate::parse::refs::{RefKind, RefTarget};
use crate::parse::{Language, ParseLimits, ParsedFile, ParsedSymbol, SymbolKind, parse_bytes};
use crate::text::split_identifier;

use super::pairs::{DocPair, Register, blank_ranges, capitalised, describe, simple_name};

/// Fewest words a test's description needs (after its `test` prefix is gone).
const MIN_TEST_WORDS: usize = 3;
/// Fewest non-whitespace characters of a target's code worth learning from.
const MIN_CODE_CHARS: usize = 40;
/// Longest stretch of a JavaScript file read as one `it(…)`/`test(…)` block.
const MAX_JS_TEST_BYTES: usize = 4000;

/// One source file of a package: its package-relative path and text.
#[derive(Debug, Clone)]
pub struct PackageFile {
    /// Package-relative path, `/`-separated.
    pub path: String,
    /// The file's text.
    pub source: String,
}

/// Whether a package-relative path is a test or its data, by the product's own path roles
/// ([`crate::roles::PathRole::of`]: `*.test.ts`, `*_test.go`, `test_*.py`, `*Test.java`, a
/// `tests/` folder …).
pub fn is_test_path(rel: &str) -> bool {
    matches!(
        crate::roles::PathRole::of(rel),
        crate::roles::PathRole::Test | crate::roles::PathRole::Fixture
    )
}

/// A definition a test may exercise.
struct Target<'a> {
    path: &'a str,
    chunk: CodeChunk,
}

/// The (test description, exercised function) pairs of one package; `files` are all its
/// source files, tests and the rest ([`is_test_path`] tells them apart).
///
/// ```
/// use sextant::dev::registers::{PackageFile, test_pairs};
///
/// let files = vec![
///     PackageFile { path: "auth.py".into(), source: "def validate_token(token, now):\n    \
///         if token.expires < now:\n        raise ValueError('expired')\n    return token.claims\n".into() },
///     PackageFile { path: "tests/test_auth.py".into(), source: "def test_rejects_an_expired_token():\n    \
///         validate_token(Token(expires=1), now=2)\n".into() },
/// ];
/// let pairs = test_pairs(&files);
/// assert_eq!(pairs[0].description, "rejects an expired token");
/// assert!(pairs[0].code.contains("def validate_token"));
/// ```
pub fn test_pairs(files: &[PackageFile]) -> Vec<DocPair> {
    let limits = ParseLimits::default();
    let options = ChunkOptions::default();
    let mut by_name: HashMap<String, Vec<Target<'_>>> = HashMap::new();
    for file in files.iter().filter(|f| !is_test_path(&f.path)) {
        let Ok(parsed) = parse_bytes(Path::new(&file.path), file.source.as_bytes(), &limits) else {
            continue;
        };
        for chunk in chunk_file(&file.path, &file.source, &parsed, &options) {
            // Rust keeps unit tests beside the code, in `mod tests`.
            let in_tests = chunk.breadcrumb.split(" > ").any(|part| part == "tests");
            if matches!(chunk.node_kind, SymbolKind::Function | SymbolKind::Method) && !in_tests {
                let name = simple_name(&chunk.name).to_string();
                by_name.entry(name).or_default().push(Target {
                    path: &file.path,
                    chunk,
                });
            }
        }
    }
    let mut pairs = Vec::new();
    // Test files, and Rust files (whose unit tests sit beside the code).
    let with_tests = files
        .iter()
        .filter(|f| is_test_path(&f.path) || f.path.ends_with(".rs"));
    for file in with_tests {
        let Ok(parsed) = parse_bytes(Path::new(&file.path), file.source.as_bytes(), &limits) else {
            continue;
        };
        for test in tests_of(&file.source, &parsed) {
            let called: BTreeSet<&str> = parsed
                .refs
                .references
                .iter()
                .filter(|r| r.kind == RefKind::Call && test.range.contains(&r.offset))
                .filter_map(|r| match &r.target {
                    RefTarget::Name { name } => Some(name.as_str()),
                    RefTarget::Member { member, .. } => Some(member.as_str()),
                    RefTarget::Local { .. } => None,
                })
                .filter(|name| by_name.get(*name).is_some_and(|defs| defs.len() == 1))
                .collect();
            let Some(name) = pick_target(&test.description, &called) else {
                continue;
            };
            let Some(target) = by_name.get(name).and_then(|defs| defs.first()) else {
                continue;
            };
            let code_chars = target
                .chunk
                .content
                .chars()
                .filter(|c| !c.is_whitespace())
                .count();
            if code_chars < MIN_CODE_CHARS {
                continue;
            }
            pairs.push(DocPair {
                path: target.path.to_string(),
                breadcrumb: target.chunk.breadcrumb.clone(),
                kind: target.chunk.node_kind,
                description: test.description,
                code: target.chunk.embedding_text.clone(),
                register: Register::Test,
            });
        }
    }
    pairs
}

/// The one called name a test is about (see the module docs for the rule).
fn pick_target<'a>(description: &str, called: &BTreeSet<&'a str>) -> Option<&'a str> {
    if called.len() == 1 {
        return called.first().copied();
    }
    let words: BTreeSet<String> = description.split_whitespace().map(str::to_string).collect();
    let overlap = |name: &str| {
        split_identifier(name)
            .into_iter()
            .filter(|w| words.contains(w))
            .count()
    };
    let best = called.iter().map(|n| overlap(n)).max().filter(|&b| b > 0)?;
    let mut top = called.iter().filter(|n| overlap(n) == best);
    let first = top.next().copied();
    top.next().is_none().then_some(first).flatten()
}

/// One test: what it says it checks and the bytes of its body.
struct Test {
    description: String,
    range: std::ops::Range<usize>,
}

/// The tests of one test file.
fn tests_of(source: &str, parsed: &ParsedFile) -> Vec<Test> {
    if [Language::TYPESCRIPT, Language::TSX, Language::JAVASCRIPT].contains(&parsed.language) {
        js_tests(source, parsed)
    } else {
        named_tests(source, parsed)
    }
}

/// `it('…', …)` and `test('…', …)` calls; each reaches to the next test or `describe`.
fn js_tests(source: &str, parsed: &ParsedFile) -> Vec<Test> {
    let mut calls: Vec<(usize, bool)> = parsed
        .refs
        .references
        .iter()
        .filter(|r| r.kind == RefKind::Call)
        .filter_map(|r| match &r.target {
            RefTarget::Name { name } if name == "it" || name == "test" => Some((r.offset, true)),
            RefTarget::Name { name } if name == "describe" => Some((r.offset, false)),
            _ => None,
        })
        .collect();
    calls.sort_unstable();
    let mut tests = Vec::new();
    for (i, &(offset, is_test)) in calls.iter().enumerate() {
        if !is_test {
            continue;
        }
        let end = calls
            .get(i + 1)
            .map_or(source.len(), |next| next.0)
            .min(offset + MAX_JS_TEST_BYTES);
        let Some(title) = source.get(offset..end).and_then(string_argument) else {
            continue;
        };
        if let Some(description) = words_of_title(&title) {
            tests.push(Test {
                description,
                range: offset..end,
            });
        }
    }
    tests
}

/// The text of a call's first argument when it is a plain string literal
/// (`it ( 'rejects …'` → `rejects …`); `None` for template literals with `${`.
fn string_argument(call: &str) -> Option<String> {
    let open = call.find('(')?;
    let rest = call[open + 1..].trim_start();
    let quote = rest
        .chars()
        .next()
        .filter(|c| matches!(c, '\'' | '"' | '`'))?;
    let body = &rest[1..];
    let mut out = String::new();
    let mut escaped = false;
    for c in body.chars() {
        match c {
            _ if escaped => {
                out.push(c);
                escaped = false;
            }
            '\\' => escaped = true,
            c if c == quote => return (!out.contains("${")).then_some(out),
            '\n' if quote != '`' => return None,
            c => out.push(c),
        }
    }
    None
}

/// A test title as a description: one line of lower-case words, `None` when it has
/// fewer than [`MIN_TEST_WORDS`].
fn words_of_title(title: &str) -> Option<String> {
    let words: Vec<String> = title
        .split_whitespace()
        .map(|w| w.to_lowercase())
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .collect();
    (words.len() >= MIN_TEST_WORDS).then(|| words.join(" "))
}

/// Test functions and methods known by their name or annotation: Python `test_*`, Go
/// `Test*`, Rust `#[test]` (and `#[tokio::test]`), Java `@Test` or `test*`.
fn named_tests(source: &str, parsed: &ParsedFile) -> Vec<Test> {
    let mut tests = Vec::new();
    let mut stack: Vec<&ParsedSymbol> = parsed.symbols.iter().collect();
    while let Some(symbol) = stack.pop() {
        stack.extend(symbol.children.iter());
        if !matches!(symbol.kind, SymbolKind::Function | SymbolKind::Method) {
            continue;
        }
        let name = simple_name(&symbol.name);
        let before = source
            .get(symbol.bytes.start.saturating_sub(120)..symbol.bytes.start)
            .unwrap_or("")
            // Only what lies between the previous item and this one.
            .rsplit(['}', ';'])
            .next()
            .unwrap_or("");
        let head = source
            .get(symbol.bytes.start..(symbol.bytes.start + 200).min(symbol.bytes.end))
            .unwrap_or("");
        let annotated = [before, head].iter().any(|t| {
            t.contains("#[test]")
                || t.contains("::test]")
                || t.contains("::test(")
                || t.contains("@Test")
        });
        let language = parsed.language;
        let by_name = if language == Language::PYTHON {
            name.starts_with("test_")
        } else if language == Language::GO {
            name.starts_with("Test") && !name.starts_with("TestMain")
        } else {
            language == Language::JAVA && name.starts_with("test") && name.len() > 4
        };
        if !(annotated || by_name) {
            continue;
        }
        let words: Vec<String> = split_identifier(name)
            .into_iter()
            .skip_while(|w| w == "test")
            .collect();
        if words.len() < MIN_TEST_WORDS {
            continue;
        }
        tests.push(Test {
            description: words.join(" "),
            range: symbol.bytes.start..symbol.bytes.end,
        });
    }
    tests.sort_by_key(|t| t.range.start);
    tests
}

/// The (module doc, file outline) pair of one file, or `None` when the file has no doc of
/// its own or too few declarations for an outline.
///
/// ```
/// use sextant::dev::registers::module_pair;
///
/// let source = "//! Parses and evaluates arithmetic expressions.\n\n\
///               pub fn parse(s: &str) -> Expr { todo!() }\n\
///               pub fn eval(e: &Expr) -> f64 { todo!() }\n\
///               pub fn simplify(e: Expr) -> Expr { e }\n";
/// let pair = module_pair("src/expr.rs", source).unwrap();
/// assert_eq!(pair.description, "Parses and evaluates arithmetic expressions.");
/// assert!(pair.code.contains("pub fn eval(e: &Expr) -> f64"));
/// assert!(!pair.code.contains("arithmetic"));
/// ```
pub fn module_pair(relative_path: &str, source: &str) -> Option<DocPair> {
    let path = Path::new(relative_path);
    let limits = ParseLimits::default();
    let parsed = parse_bytes(path, source.as_bytes(), &limits).ok()?;
    let doc = module_doc(source, &parsed)?;
    let description = describe(&doc)?;
    let description = without_package_name(&description)?;
    // Every comment blanked, newlines kept: the outline shows no comment's words.
    let blank = blank_ranges(source, &parsed.comments);
    let parsed = parse_bytes(path, blank.as_bytes(), &limits).ok()?;
    let chunks = chunk_file(relative_path, &blank, &parsed, &ChunkOptions::default());
    let outline = outline_chunk(relative_path, &blank, &parsed, &chunks)?;
    Some(DocPair {
        path: relative_path.to_string(),
        breadcrumb: outline.breadcrumb.clone(),
        kind: SymbolKind::File,
        description,
        code: outline.embedding_text,
        register: Register::Module,
    })
}

/// The file's own documentation: the first comment when no code comes before it and it
/// is not a licence; a Python module docstring; Rust's `//!` lines.
fn module_doc(source: &str, parsed: &ParsedFile) -> Option<String> {
    let first = parsed.comments.first()?;
    let before = source.get(..first.start)?;
    let code_before = before.lines().any(|l| {
        let t = l.trim();
        !(t.is_empty()
            || t.starts_with("#!")
            || t.starts_with("# -*-")
            || t.starts_with("# coding"))
    });
    if code_before {
        return None;
    }
    // A comment block is the run of comments with nothing but whitespace between.
    let mut end = first.end;
    for next in &parsed.comments[1..] {
        if source
            .get(end..next.start)
            .is_some_and(|gap| gap.trim().is_empty() && gap.matches('\n').count() <= 1)
        {
            end = next.end;
        } else {
            break;
        }
    }
    let block = source.get(first.start..end)?;
    let lower = block.to_ascii_lowercase();
    if lower.contains("copyright") || lower.contains("license") || lower.contains("licence") {
        return None;
    }
    // A Rust `///` or Javadoc block at the top documents the item below it, not the file.
    if block.starts_with("///") || (block.starts_with("/**") && parsed.language == Language::JAVA) {
        return None;
    }
    let text: Vec<String> = block
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches("//!")
                .trim_start_matches("//")
                .trim_start_matches("/*!")
                .trim_start_matches("/**")
                .trim_start_matches("/*")
                .trim_end_matches("*/")
                .trim_start_matches('*')
                .trim_start_matches('#')
                .trim_matches(|c| c == '"' || c == '\'')
                .trim()
                .to_string()
        })
        .collect();
    let joined = text.join("\n");
    (!joined.trim().is_empty()).then_some(joined)
}

/// Go's "Package toml implements …" as "Implements …"; `None` when nothing is left.
fn without_package_name(description: &str) -> Option<String> {
    let Some(rest) = description.strip_prefix("Package ") else {
        return Some(description.to_string());
    };
    capitalised(rest.split_once(' ').map_or("", |(_, r)| r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, source: &str) -> PackageFile {
        PackageFile {
            path: path.into(),
            source: source.into(),
        }
    }

    #[test]
    fn a_jest_test_is_paired_with_the_function_it_calls() {
        let files = [
            file(
                "src/token.ts",
                "export function verifyToken(token: string, now: number): Claims {\n  \
                 const claims = decode(token);\n  if (claims.exp < now) throw new Error('expired');\n  \
                 return claims;\n}\n",
            ),
            file(
                "src/__tests__/token.test.ts",
                "describe('tokens', () => {\n  it('rejects an expired token', () => {\n    \
                 expect(() => verifyToken(old, 5)).toThrow();\n  });\n  \
                 it('ok', () => { verifyToken(fresh, 1); });\n});\n",
            ),
        ];
        let pairs = test_pairs(&files);
        assert_eq!(pairs.len(), 1, "{pairs:?}");
        assert_eq!(pairs[0].description, "rejects an expired token");
        assert_eq!(pairs[0].path, "src/token.ts");
        assert_eq!(pairs[0].register, Register::Test);
    }

    #[test]
    fn several_callees_are_narrowed_by_the_words_they_share() {
        let files = [
            file(
                "parse.go",
                "package p\n\nfunc ParseHeader(b []byte) (Header, error) {\n\tif len(b) < 4 {\n\t\treturn Header{}, errShort\n\t}\n\treturn Header{n: int(b[0])}, nil\n}\n\n\
                 func Encode(h Header) []byte {\n\treturn []byte{byte(h.n), 0, 0, 0, 1, 2, 3, 4, 5, 6}\n}\n",
            ),
            file(
                "parse_test.go",
                "package p\n\nfunc TestParseHeaderRejectsShortInput(t *testing.T) {\n\t_, err := ParseHeader(Encode(Header{})[:2])\n\tif err == nil { t.Fatal(1) }\n}\n\n\
                 func TestEncodeThenDecode(t *testing.T) {\n\tParseHeader(Encode(Header{}))\n}\n",
            ),
        ];
        let pairs = test_pairs(&files);
        // The first test shares "parse" and "header" with ParseHeader; the second shares
        // "encode" with Encode alone.
        let got: Vec<(&str, &str)> = pairs
            .iter()
            .map(|p| (p.description.as_str(), p.breadcrumb.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("parse header rejects short input", "ParseHeader"),
                ("encode then decode", "Encode")
            ]
        );
    }

    #[test]
    fn a_tie_or_an_ambiguous_name_gives_no_pair() {
        let files = [
            file(
                "a.py",
                "def load(path):\n    with open(path) as f:\n        return f.read().split()\n",
            ),
            file(
                "b.py",
                "def load(path):\n    with open(path) as f:\n        return f.read().splitlines()\n",
            ),
            file(
                "c.py",
                "def save(path, data):\n    with open(path, 'w') as f:\n        f.write(data)\n\n\
                 def merge(left, right):\n    return sorted(set(left) | set(right))\n",
            ),
            file(
                "test_io.py",
                "def test_load_after_writing_a_file():\n    save('x', 'a b')\n    load('x')\n\n\
                 def test_round_trip_keeps_words():\n    save('x', 'a')\n    merge([1], [2])\n",
            ),
        ];
        // `load` is defined twice (ambiguous); `save` and `merge` share no word with the
        // second test (a tie at zero).
        let pairs = test_pairs(&files);
        assert_eq!(pairs.len(), 1, "{pairs:?}");
        assert_eq!(pairs[0].breadcrumb, "save");
        assert_eq!(pairs[0].description, "load after writing a file");
    }

    #[test]
    fn rust_and_java_tests_are_found_by_their_annotation() {
        let files = [
            file(
                "src/lib.rs",
                "pub fn checked_divide(a: i64, b: i64) -> Option<i64> {\n    if b == 0 { None } else { Some(a / b) }\n}\n",
            ),
            file(
                "tests/divide.rs",
                "#[test]\nfn division_by_zero_is_none() {\n    assert_eq!(checked_divide(1, 0), None);\n}\n",
            ),
            file(
                "src/main/java/Calc.java",
                "class Calc {\n  static int clampToRange(int v, int lo, int hi) {\n    return Math.max(lo, Math.min(hi, v));\n  }\n}\n",
            ),
            file(
                "src/test/java/CalcTest.java",
                "class CalcTest {\n  @Test\n  public void valuesAboveTheRangeAreClamped() {\n    assertEquals(3, Calc.clampToRange(9, 0, 3));\n  }\n}\n",
            ),
        ];
        let got: Vec<(String, String)> = test_pairs(&files)
            .into_iter()
            .map(|p| (p.description, p.breadcrumb))
            .collect();
        assert!(
            got.contains(&("division by zero is none".into(), "checked_divide".into())),
            "{got:?}"
        );
        assert!(
            got.contains(&(
                "values above the range are clamped".into(),
                "Calc > clampToRange".into()
            )),
            "{got:?}"
        );
    }

    #[test]
    fn rust_unit_tests_beside_the_code_are_read_and_never_targets() {
        let files = [file(
            "src/range.rs",
            "pub fn merge_ranges(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {\n    v.sort();\n    \
             v.dedup();\n    v\n}\n\nfn unrelated_helper() {}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    \
             fn sample_ranges_for_tests() -> Vec<(u32, u32)> { vec![(1, 2), (1, 2), (0, 5), (7, 9)] }\n\n    \
             #[test]\n    fn overlapping_ranges_are_merged() {\n        assert_eq!(merge_ranges(sample_ranges_for_tests()).len(), 3);\n    }\n}\n",
        )];
        let got: Vec<(String, String)> = test_pairs(&files)
            .into_iter()
            .map(|p| (p.description, p.breadcrumb))
            .collect();
        // The helper inside `mod tests` is neither a test (no attribute) nor a target.
        assert_eq!(
            got,
            [(
                "overlapping ranges are merged".to_string(),
                "merge_ranges".to_string()
            )]
        );
    }

    #[test]
    fn module_docs_of_go_and_python_pair_with_outlines_without_their_words() {
        let go = "// Package ring implements operations on circular lists.\npackage ring\n\n\
                  func New(n int) *Ring { return nil }\nfunc (r *Ring) Len() int { return 0 }\n\
                  func (r *Ring) Move(n int) *Ring { return r }\n";
        let pair = module_pair("ring/ring.go", go).unwrap();
        assert_eq!(pair.description, "Implements operations on circular lists.");
        assert!(!pair.code.contains("circular"), "{}", pair.code);
        assert_eq!(pair.register, Register::Module);

        let py = "\"\"\"Helpers for reading and writing configuration files.\"\"\"\n\nimport os\n\n\
                  def read(path):\n    return open(path).read()\n\ndef write(path, text):\n    open(path, 'w').write(text)\n\n\
                  def exists(path):\n    return os.path.exists(path)\n";
        let pair = module_pair("cfg.py", py).unwrap();
        assert_eq!(
            pair.description,
            "Helpers for reading and writing configuration files."
        );
        assert!(!pair.code.contains("configuration"), "{}", pair.code);
    }

    #[test]
    fn a_licence_header_or_code_first_is_no_module_doc() {
        let licensed = "// Copyright 2020 The Authors. Licensed under the MIT License.\npackage x\n\n\
                        func A() {}\nfunc B() {}\nfunc C() {}\n";
        assert!(module_pair("x.go", licensed).is_none());
        let code_first = "import os\n\"\"\"Not a docstring of the module.\"\"\"\ndef a(): pass\ndef b(): pass\ndef c(): pass\n";
        assert!(module_pair("y.py", code_first).is_none());
    }
}
