//! Stage 1 of the pipeline: source bytes → a hierarchical symbol tree ([`ParsedFile`]).
//!
//! Parsing goes through the [`LanguageParser`] trait so that new languages plug in without
//! touching the chunker. Sextant ships one implementation today, [`typescript`], a
//! tree-sitter based parser for all eight TypeScript/JavaScript extensions.
//!
//! This layer is pure: it receives bytes and returns data. It never reads files, logs
//! per-file noise or panics on bad input; unreadable input becomes a [`ParseError`] whose
//! message says why the file was skipped.

mod input;
pub mod refs;
mod symbol;
pub mod typescript;

pub use input::{ParseError, ParseLimits, check_input};
pub use symbol::{
    ByteRange, Diagnostic, IdentRef, Import, LineRange, Modifier, ParsedFile, ParsedSymbol,
    SymbolKind,
};

use std::path::Path;

/// A language Sextant can parse, chosen by file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// `.ts`, `.mts`, `.cts` (the tree-sitter `typescript` grammar).
    TypeScript,
    /// `.tsx` (the tree-sitter `tsx` grammar).
    Tsx,
    /// `.js`, `.jsx`, `.mjs`, `.cjs` (the tree-sitter `javascript` grammar, which accepts JSX).
    JavaScript,
}

impl Language {
    /// Every file extension Sextant parses, without the dot.
    pub const EXTENSIONS: [&'static str; 8] =
        ["ts", "tsx", "js", "jsx", "mts", "mjs", "cts", "cjs"];

    /// The language of a path by its extension, or `None` when Sextant does not parse it.
    pub fn from_path(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()? {
            "ts" | "mts" | "cts" => Some(Self::TypeScript),
            "tsx" => Some(Self::Tsx),
            "js" | "jsx" | "mjs" | "cjs" => Some(Self::JavaScript),
            _ => None,
        }
    }

    /// Stable lower-case identifier (`typescript`, `tsx`, `javascript`), used in stores and filters.
    pub fn id(self) -> &'static str {
        match self {
            Self::TypeScript => "typescript",
            Self::Tsx => "tsx",
            Self::JavaScript => "javascript",
        }
    }

    /// The language with this [`Language::id`].
    pub fn parse(id: &str) -> Option<Self> {
        [Self::TypeScript, Self::Tsx, Self::JavaScript]
            .into_iter()
            .find(|l| l.id() == id)
    }

    /// Human label used in embedding preambles (`[TypeScript] src/a.ts > f`).
    pub fn label(self) -> &'static str {
        match self {
            Self::TypeScript | Self::Tsx => "TypeScript",
            Self::JavaScript => "JavaScript",
        }
    }

    /// Whether the grammar accepts JSX.
    pub fn has_jsx(self) -> bool {
        matches!(self, Self::Tsx | Self::JavaScript)
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
    Box::new(typescript::TsParser::new(language))
}

/// Checks raw file bytes against `limits`, picks the parser by the path's extension and
/// parses. This is the one entry point the indexer and the CLI use.
pub fn parse_bytes(
    path: &Path,
    bytes: &[u8],
    limits: &ParseLimits,
) -> Result<ParsedFile, ParseError> {
    let language = Language::from_path(path).ok_or_else(|| ParseError::UnsupportedExtension {
        path: path.display().to_string(),
    })?;
    let source = check_input(bytes, limits)?;
    parser_for(language).parse(source)
}
