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

mod input;
pub mod lang;
mod languages;
pub mod refs;
mod scopes;
mod symbol;
mod tree;
pub mod typescript;

pub use input::{ParseError, ParseLimits, check_input};
use languages::Walker;
pub use languages::{LANGUAGES, LanguageDef, ModuleRules, ModuleSystem};
pub use symbol::{
    ByteRange, Diagnostic, IdentRef, Import, LineRange, Modifier, ParsedFile, ParsedSymbol,
    SymbolKind,
};

use std::cell::RefCell;
use std::path::Path;

use tree_sitter::{Parser, Tree};

/// A language Sextant can parse, chosen by file extension. Everything about one is its
/// row of the language table ([`LANGUAGES`]); the variants follow the table's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// `.ts`, `.mts`, `.cts` (the tree-sitter `typescript` grammar).
    TypeScript,
    /// `.tsx` (the tree-sitter `tsx` grammar).
    Tsx,
    /// `.js`, `.jsx`, `.mjs`, `.cjs` (the tree-sitter `javascript` grammar, which accepts JSX).
    JavaScript,
    /// `.py`, `.pyi`, and scripts whose shebang names `python`.
    Python,
    /// `.go`.
    Go,
    /// `.rs`.
    Rust,
    /// `.java`.
    Java,
}

impl Language {
    /// Every language, in the order of [`LANGUAGES`].
    pub fn all() -> impl Iterator<Item = Self> {
        LANGUAGES.iter().map(|def| def.language)
    }

    /// This language's row of the language table.
    pub fn def(self) -> &'static LanguageDef {
        &LANGUAGES[self as usize]
    }

    /// Every file extension Sextant parses, without the dot.
    pub fn extensions() -> impl Iterator<Item = &'static str> {
        LANGUAGES
            .iter()
            .flat_map(|def| def.extensions.iter().copied())
    }

    /// The language of a path by its extension, or `None` when Sextant does not parse it.
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?;
        Self::all().find(|l| l.def().extensions.contains(&ext))
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
        if self.def().braces { "{ … }" } else { "…" }
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

/// The tree-sitter grammar of `language` (public for the parse benchmark).
pub fn grammar(language: Language) -> tree_sitter::Language {
    (language.def().grammar)()
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
                parser
                    .set_language(&grammar(language))
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
