//! Stage 1 of the pipeline: source bytes → a hierarchical symbol tree ([`ParsedFile`]).
//!
//! Parsing goes through the [`LanguageParser`] trait so that new languages plug in without
//! touching the chunker; the language table ([`LANGUAGES`]) says, per language, which
//! extensions, grammar and walk it has. Two walks: [`typescript`] for the TypeScript
//! family, and [`lang`], one tree-sitter walk driven by a per-language `Syntax` for the
//! others.
//!
//! This layer is pure: it receives bytes and returns data. It never reads files, logs
//! per-file noise or panics on bad input; unreadable input becomes a [`ParseError`] whose
//! message says why the file was skipped.
//!
//! # Design notes
//!
//! - The language table (`parse::languages::LANGUAGES`, one row per language) picks the
//!   grammar and walk by extension: `.ts .mts .cts` → tree-sitter `typescript`, `.tsx` →
//!   `tsx`, `.js .jsx .mjs .cjs` → `javascript` (accepts JSX), `.py .pyi` → `python`,
//!   `.go` → `go`, `.rs` → `rust`, `.java` → `java`; a file without an extension by its
//!   shebang (`python`, `node`); the scanner, the git sync and the watcher read only such
//!   files' first bytes (`index::scan::language_of`). A row also gives the collapsed body
//!   (`{ … }`, or `…` for Python's indented blocks), the test-file convention and the
//!   module rules the graph resolves imports by.
//! - `parse::tree` holds what both parsers share: positions and spans, one iterative
//!   pre-order walk (`preorder_with_parent` hands each node its parent from the walk's own
//!   ancestor stack: tree-sitter's `Node::parent` descends from the root, so calling it per
//!   node makes deep nesting quadratic; no walk calls it per node), the
//!   identifier/comment/diagnostic scan, kind-id lookup tables, the extraction limits,
//!   `Ctx` and the symbol constructor (`symbol_at`). `parse::scopes` keeps the names open
//!   scopes bind for both graph walks, a shadowing stack per name, so a lookup costs one
//!   hash probe however deep scopes nest.
//! - `parse::lang` parses Python, Go, Rust and Java with one walk (`lang::Extractor`, the
//!   TypeScript walk made language-neutral) driven by a per-language `lang::Syntax` that
//!   says what a node is in a place (`Container`: root and Rust `mod` bodies, every
//!   statement an item; `Members`: type bodies; `Nested`: function bodies, definitions
//!   only). Kinds map onto one vocabulary (`class`, `struct`, `interface` for traits and
//!   Go interfaces, `impl`, `enum`, `function`, `method`, `constructor`, `property` for
//!   fields, `const`, `variable`, `type`, `macro`, `module` for Rust `mod` and Go/Java
//!   `package`), the language's own word kept in `nativeKind` (`trait`, `record`, `static`,
//!   `macro_rules`, `package`, …), which the chunk, the chunk store and search results carry. Doc comments fill the `jsdoc` slot: Python docstrings
//!   (treated as comments, so they are never chunked as code), `///` and `/** */` in Rust,
//!   the `//` block above a Go declaration, Javadoc. Rust attributes and Python decorators
//!   belong to their item's range. Go methods are root chunks named `Type.Method`;
//!   grouped Go `const`/`var` blocks are one chunk with every name in `bindings`.
//!   `Syntax::imports` describes an import statement once (`ImportSpec`: modules and
//!   per-name `Binding`s); it feeds both the chunker's `imports` and the graph's bindings.
//!   `lang::ref_walk` is the graph walk for these languages (calls, member accesses with
//!   `self`/`this`/receiver and typed locals, reads, type uses, `extends` / `implements` /
//!   trait impls, field types), the same `FileRefs` as TypeScript's; each language's
//!   `RefSyntax` gives its node shapes and a table of where names are declared.
//! - `parse::check_input` rejects over-size (`max_file_bytes`, default 16 MiB), binary (NUL
//!   byte) and non-UTF-8 input with a `ParseError` that reads as a skip reason.
//! - `parse::typescript::Extractor` walks one tree. Scopes behave differently:
//!   - container scopes (file root, `namespace`, `declare module`, `declare global`): every
//!     statement becomes a symbol or a statement item (import, re-export, export, expression,
//!     control flow; stray tokens after error recovery become `error` items, so no line is
//!     lost);
//!   - function, method, callback and statement bodies contribute only nested *definitions*:
//!     function declarations, classes, `const f = () => {…}`, object-literal methods,
//!     `x.y = function () {…}`, and anonymous functions with block bodies (`callback:forEach`,
//!     `describe('label')`, `iife`, `anonymous`);
//!   - class bodies contribute members (methods, accessors, constructors, fields,
//!     arrow-function fields as methods, class-valued fields as classes); interface bodies
//!     their property and method signatures.
//! - Overload signatures fold into the implementation (range starts at the first overload,
//!   JSDoc from the first overload, `overloads` lists the signatures). Ranges start at the
//!   first decorator and exclude JSDoc.
//! - CommonJS: `const x = require('y')` is an import; `exports.f = function` /
//!   `module.exports.f = …` are exported symbols named `f`; `module.exports = {…}` is an
//!   exported expression whose methods are children; any other assignment of a function or
//!   class at the top level (`Runner.prototype.run = function (fn) {…}`,
//!   `app.use = function use(fn) {…}`) is that function, one unit named by its target
//!   (it used to be an expression plus a function with the same lines, answered twice).
//! - React: functions/arrow consts with an upper-case name returning JSX, annotated `FC` /
//!   `FunctionComponent` / …, or wrapped in `forwardRef` / `memo`, and classes extending
//!   `(React.)(Pure)Component`, are `component`s.
//! - The walk is iterative over syntax depth (tree cursors, explicit stacks); only the
//!   descent from a symbol to its child symbols recurses, capped at `MAX_SYMBOL_DEPTH` (32).
//!   Hot kind tests use kind-id tables, not string compares.
//! - One extra pass collects identifier occurrences (for `relevantImports` and referenced
//!   symbols), comment spans (for the coverage rule) and syntax diagnostics.

mod input;
pub mod lang;
mod languages;
pub mod refs;
mod scopes;
mod symbol;
pub mod text;
mod tree;
pub mod typescript;

pub use input::{ParseError, ParseLimits, check_input};
use languages::Walker;
pub use languages::{Category, DocComment, LANGUAGES, LanguageDef, ModuleRules, ModuleSystem};
pub use symbol::{
    ByteRange, Diagnostic, IdentRef, Import, LineRange, Modifier, ParsedFile, ParsedSymbol,
    SymbolKind,
};

use std::cell::RefCell;
use std::path::Path;

use tree_sitter::{Parser, Tree};

/// A language Sextant can parse, chosen by file extension: a handle on its row of the
/// language table ([`LANGUAGES`]), where everything about it is. Two handles are equal when
/// their rows' ids are; a language serializes as its id (`python`).
///
/// The associated constants name the rows the code refers to by name; a language added to
/// the table needs none unless some code singles it out.
#[derive(Clone, Copy)]
pub struct Language(&'static LanguageDef);

impl Language {
    /// `.ts`, `.mts`, `.cts` (the tree-sitter `typescript` grammar).
    pub const TYPESCRIPT: Self = Self(&LANGUAGES[0]);
    /// `.tsx` (the tree-sitter `tsx` grammar).
    pub const TSX: Self = Self(&LANGUAGES[1]);
    /// `.js`, `.jsx`, `.mjs`, `.cjs` (the tree-sitter `javascript` grammar, which accepts JSX).
    pub const JAVASCRIPT: Self = Self(&LANGUAGES[2]);
    /// `.py`, `.pyi`, and scripts whose shebang names `python`.
    pub const PYTHON: Self = Self(&LANGUAGES[3]);
    /// `.go`.
    pub const GO: Self = Self(&LANGUAGES[4]);
    /// `.rs`.
    pub const RUST: Self = Self(&LANGUAGES[5]);
    /// `.java`.
    pub const JAVA: Self = Self(&LANGUAGES[6]);
    /// `.md`, `.markdown`, `.mdx` (sections by heading; `parse::text`).
    pub const MARKDOWN: Self = Self(&LANGUAGES[7]);
    /// `.rst` (sections by title).
    pub const RST: Self = Self(&LANGUAGES[8]);
    /// `.yaml`, `.yml` (settings by key).
    pub const YAML: Self = Self(&LANGUAGES[9]);
    /// `.json`, `.jsonc`, `.json5` (settings by top-level key).
    pub const JSON: Self = Self(&LANGUAGES[10]);
    /// `.toml` (settings by table).
    pub const TOML: Self = Self(&LANGUAGES[11]);
    /// `Dockerfile`, `Containerfile`, `*.dockerfile` (sections by stage).
    pub const DOCKERFILE: Self = Self(&LANGUAGES[12]);
    /// `.sh`, `.bash`, `.zsh`, and scripts whose shebang names a shell.
    pub const SHELL: Self = Self(&LANGUAGES[13]);
}

impl PartialEq for Language {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for Language {}

impl std::hash::Hash for Language {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.id.hash(state);
    }
}

impl std::fmt::Debug for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.id)
    }
}

impl serde::Serialize for Language {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.id)
    }
}

impl<'de> serde::Deserialize<'de> for Language {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Self::parse(&id).ok_or_else(|| {
            let known: Vec<&str> = Self::all().map(Self::id).collect();
            serde::de::Error::custom(format!(
                "unknown language `{id}` (known: {})",
                known.join(", ")
            ))
        })
    }
}

impl Language {
    /// Every language, in the order of [`LANGUAGES`].
    pub fn all() -> impl Iterator<Item = Self> {
        LANGUAGES.iter().map(Self)
    }

    /// This language's row of the language table.
    pub fn def(self) -> &'static LanguageDef {
        self.0
    }

    /// Every file extension Sextant parses, without the dot.
    pub fn extensions() -> impl Iterator<Item = &'static str> {
        LANGUAGES
            .iter()
            .flat_map(|def| def.extensions.iter().copied())
    }

    /// The language of a path by its file name (`Dockerfile`, `Dockerfile.prod`) or
    /// extension, or `None` when Sextant does not parse it.
    pub fn from_path(path: &Path) -> Option<Self> {
        let name = path.file_name()?.to_str()?;
        let by_name = Self::all().find(|l| {
            l.def().file_names.iter().any(|n| {
                name == *n
                    || name
                        .strip_prefix(n)
                        .is_some_and(|rest| rest.starts_with('.'))
            })
        });
        if by_name.is_some() {
            return by_name;
        }
        let ext = path.extension()?.to_str()?;
        Self::all().find(|l| l.def().extensions.contains(&ext))
    }

    /// Code, docs or config.
    pub fn category(self) -> Category {
        self.def().category
    }

    /// The language a script's first line names (`#!/usr/bin/env python3`,
    /// `#!/usr/bin/node`), for files without an extension.
    pub fn from_shebang(first_line: &str) -> Option<Self> {
        let rest = first_line.strip_prefix("#!")?;
        let mut words = rest.split_whitespace();
        let mut program = words.next()?.rsplit('/').next()?;
        if program == "env" {
            program = words.find(|w| !w.starts_with('-'))?;
        }
        let program = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        Self::all().find(|l| l.def().interpreters.contains(&program))
    }

    /// The language of a path by extension, else (for a file without one) by the
    /// shebang on `source`'s first line.
    pub fn detect(path: &Path, source: &[u8]) -> Option<Self> {
        if let Some(language) = Self::from_path(path) {
            return Some(language);
        }
        if path.extension().is_some() {
            return None;
        }
        let head = &source[..source.len().min(200)];
        let line = head.split(|&b| b == b'\n').next()?;
        Self::from_shebang(std::str::from_utf8(line).ok()?)
    }

    /// Stable lower-case identifier (`typescript`, `python`, …), used in stores and filters.
    pub fn id(self) -> &'static str {
        self.def().id
    }

    /// The language with this [`Language::id`].
    pub fn parse(id: &str) -> Option<Self> {
        Self::all().find(|l| l.id() == id)
    }

    /// Human label used in embedding preambles (`[TypeScript] src/a.ts > f`).
    pub fn label(self) -> &'static str {
        self.def().label
    }

    /// What a collapsed body is written as in a parent's content: `{ … }` where bodies
    /// are braced, `…` for Python's indented blocks.
    pub fn collapsed_body(self) -> &'static str {
        if self.braces() { "{ … }" } else { "…" }
    }

    /// Whether bodies are braced (`{ … }`) rather than indented (Python).
    pub fn braces(self) -> bool {
        self.def().braces
    }

    /// How a doc comment above a declaration is written.
    pub fn doc_comment(self) -> DocComment {
        self.def().doc_comment
    }

    /// Whether the grammar accepts JSX.
    pub fn has_jsx(self) -> bool {
        self.def().jsx
    }
}

/// A parser for one language. Implementations must be total: any valid UTF-8 text yields a
/// [`ParsedFile`] (with diagnostics for syntax errors), never a panic.
pub trait LanguageParser: Send + Sync {
    /// The language this parser handles.
    fn language(&self) -> Language;

    /// Parses `source` into a symbol tree.
    fn parse(&self, source: &str) -> Result<ParsedFile, ParseError>;
}

/// The parser for `language`.
pub fn parser_for(language: Language) -> Box<dyn LanguageParser> {
    match language.def().walker {
        Walker::Tree(syntax) => Box::new(lang::TreeParser::new(language, syntax)),
        Walker::TypeScript => Box::new(typescript::TsParser::new(language)),
        Walker::Text(_) => Box::new(TextParser { language }),
    }
}

/// The parser of a language read by its lines (`parse::text`).
struct TextParser {
    language: Language,
}

impl LanguageParser for TextParser {
    fn language(&self) -> Language {
        self.language
    }

    fn parse(&self, source: &str) -> Result<ParsedFile, ParseError> {
        Ok(text::parse(self.language, source))
    }
}

/// Checks raw file bytes against `limits`, picks the parser by the path's extension and
/// parses. This is the one entry point the indexer and the CLI use.
pub fn parse_bytes(
    path: &Path,
    bytes: &[u8],
    limits: &ParseLimits,
) -> Result<ParsedFile, ParseError> {
    let language =
        Language::detect(path, bytes).ok_or_else(|| ParseError::UnsupportedExtension {
            path: path.display().to_string(),
        })?;
    let source = check_input(bytes, limits)?;
    parser_for(language).parse(source)
}

/// The tree-sitter grammar of `language` (public for the parse benchmark); `None` for
/// text formats.
pub fn grammar(language: Language) -> Option<tree_sitter::Language> {
    language.def().grammar.map(|g| g())
}

thread_local! {
    /// One reusable tree-sitter parser per language per thread.
    static PARSERS: RefCell<Vec<(Language, Parser)>> = const { RefCell::new(Vec::new()) };
}

/// Parses `source` as `language` with this thread's parser for it.
fn parse_tree(language: Language, source: &str) -> Result<Tree, ParseError> {
    PARSERS.with(|cell| {
        let mut parsers = cell.borrow_mut();
        let index = match parsers.iter().position(|(l, _)| *l == language) {
            Some(i) => i,
            None => {
                let mut parser = Parser::new();
                let grammar = grammar(language).ok_or(ParseError::Grammar {
                    language: language.id(),
                    message: "a text format has no grammar".into(),
                })?;
                parser
                    .set_language(&grammar)
                    .map_err(|e| ParseError::Grammar {
                        language: language.id(),
                        message: e.to_string(),
                    })?;
                parsers.push((language, parser));
                parsers.len() - 1
            }
        };
        let parser = &mut parsers[index].1;
        parser.reset();
        parser.parse(source, None).ok_or(ParseError::ParserFailed)
    })
}
