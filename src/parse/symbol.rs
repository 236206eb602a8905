//! The data the parser produces. Language-neutral: nothing here mentions tree-sitter.

use serde::{Deserialize, Serialize};

/// An inclusive, 1-indexed line range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LineRange {
    /// First line (1-indexed).
    pub start: u32,
    /// Last line (1-indexed, inclusive).
    pub end: u32,
}

impl LineRange {
    /// Number of lines in the range.
    pub fn len(&self) -> u32 {
        self.end - self.start + 1
    }

    /// Always false: a range holds at least one line. Present for API symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// A half-open byte range `[start, end)` into the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ByteRange {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl ByteRange {
    /// Whether `other` lies entirely inside `self`.
    pub fn contains(&self, other: &ByteRange) -> bool {
        self.start <= other.start && other.end <= self.end
    }

    /// Whether `offset` lies inside `self`.
    pub fn contains_offset(&self, offset: usize) -> bool {
        self.start <= offset && offset < self.end
    }

    /// Whether the two ranges share at least one byte.
    pub fn overlaps(&self, other: &ByteRange) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// What a symbol (or root-level statement) is. Serialised in kebab-case
/// (`"re-export"`), which is also the chunk `nodeKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::Display, strum::EnumString, strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "kebab-case")]
pub enum SymbolKind {
    /// Function declaration, or a variable bound to a function/arrow expression.
    Function,
    /// Class or object-literal method, accessor, or arrow-function property.
    Method,
    /// Class constructor.
    Constructor,
    /// Class field or interface property.
    Property,
    /// Class declaration or named class expression (Java records too).
    Class,
    /// Interface declaration, a Rust trait, a Go interface type.
    Interface,
    /// A Rust or Go struct (Rust unions too).
    Struct,
    /// A Rust `impl` block: the methods of one type, or its implementation of one trait.
    Impl,
    /// A Rust macro definition (`macro_rules!`).
    Macro,
    /// Type alias.
    Type,
    /// Enum (including `const enum`).
    Enum,
    /// `namespace X {}` / `module X {}`.
    Namespace,
    /// `declare module 'x' {}` / `declare global {}`; a Rust `mod`; a Go or Java
    /// `package` clause.
    Module,
    /// React function or class component.
    Component,
    /// `let` / `var` binding.
    Variable,
    /// `const` binding that is not a function.
    Const,
    /// `import …`, `import x = require()`, or `const x = require('y')`.
    Import,
    /// `export … from '…'` / `export * from '…'`.
    ReExport,
    /// `export { a }`, `export default <expr>`, `export = x`, `export as namespace X`.
    Export,
    /// A root-level expression statement.
    Expression,
    /// Root-level control flow or other statement (`if`, `for`, `try`, blocks, …).
    Statement,
    /// Anonymous function passed as an argument, or otherwise unnamed, with a block body.
    Callback,
    /// A region tree-sitter could not parse; its recovered declarations are its children.
    Error,
    /// A section of a document (a Markdown or reStructuredText heading and its text) or
    /// a Dockerfile build stage.
    Section,
    /// A configuration setting: a YAML or JSON key, a TOML table.
    Setting,
    /// A whole document or script with no structure to divide it by.
    Document,
    /// A whole file's outline, the answer to "how is this organised" (made by
    /// [`crate::chunk::outline_chunk`], never by a parser).
    File,
}

impl SymbolKind {
    /// The kebab-case name (`"re-export"`), as used in chunk `nodeKind`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The kind named `name` (as produced by [`SymbolKind::as_str`]).
    pub fn parse(name: &str) -> Option<Self> {
        name.parse().ok()
    }

    /// Whether the symbol's body is code that runs (functions, methods, constructors,
    /// callbacks, components): what is declared inside such a body belongs to it.
    pub fn has_code_body(self) -> bool {
        matches!(
            self,
            Self::Function | Self::Method | Self::Constructor | Self::Callback | Self::Component
        )
    }

    /// Whether this is a non-symbol statement (import, expression, re-export, export,
    /// control flow, error region) rather than a named declaration.
    pub fn is_statement(self) -> bool {
        matches!(
            self,
            Self::Import
                | Self::ReExport
                | Self::Export
                | Self::Expression
                | Self::Statement
                | Self::Error
        )
    }
}

/// A declaration modifier. Serialised in lower case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::EnumString, strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "lowercase")]
pub enum Modifier {
    /// `export` (or CommonJS `exports.x` / `module.exports`).
    Exported,
    /// `export default`.
    Default,
    /// `declare` / ambient.
    Declare,
    /// `abstract`.
    Abstract,
    /// `public`.
    Public,
    /// `private` or an ECMAScript `#private` name.
    Private,
    /// `protected`.
    Protected,
    /// `static`.
    Static,
    /// `readonly`.
    Readonly,
    /// `override`.
    Override,
    /// `async`.
    Async,
    /// Generator (`function*`, `*method()`).
    Generator,
    /// `get` accessor.
    Getter,
    /// `set` accessor.
    Setter,
    /// `const enum`.
    Const,
    /// Optional member (`x?: T`).
    Optional,
    /// Marked deprecated (Java's `@Deprecated`, Rust's `#[deprecated]`, a Python
    /// `@deprecated` decorator, `@deprecated` in JSDoc or Javadoc, a Go `Deprecated:`
    /// paragraph, Sphinx's `.. deprecated::`), or inside a symbol that is.
    Deprecated,
}

impl Modifier {
    /// The modifier named `name` (as produced by [`Modifier::as_str`]).
    pub fn parse(name: &str) -> Option<Self> {
        name.parse().ok()
    }

    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Adds [`Modifier::Deprecated`] to every symbol of `symbols` (and below) that its own
/// declaration or documentation marks deprecated, and to everything inside one: a
/// deprecated class's methods are as deprecated as the class. `source` is the text the
/// symbols were parsed from.
pub(crate) fn mark_deprecated(symbols: &mut [ParsedSymbol], source: &str) {
    mark_below(symbols, source, false);
}

fn mark_below(symbols: &mut [ParsedSymbol], source: &str, inherited: bool) {
    for symbol in symbols {
        let deprecated = inherited
            || symbol.modifiers.contains(&Modifier::Deprecated)
            || declared_deprecated(symbol, source);
        if deprecated && !symbol.modifiers.contains(&Modifier::Deprecated) {
            symbol.modifiers.push(Modifier::Deprecated);
            symbol.modifiers.sort();
        }
        mark_below(&mut symbol.children, source, deprecated);
    }
}

/// Annotations, attributes and decorators that mark what follows deprecated, as a line of
/// a declaration's head begins with them.
const DEPRECATED_HEADS: &[&str] = &[
    "@Deprecated",
    "@java.lang.Deprecated",
    "#[deprecated",
    "@deprecated",
    "@warnings.deprecated",
    "@typing_extensions.deprecated",
];
/// How documentation says so, at the start of one of its lines.
const DEPRECATED_DOCS: &[&str] = &["@deprecated", "Deprecated:", ".. deprecated::"];
/// Bytes of a declaration's head read for a marker.
const HEAD_BYTES: usize = 2048;

/// Whether a line of `text` begins with one of `marks` as a whole word (`@deprecated`,
/// not `@deprecated_alias`).
fn starts_any(text: &str, marks: &[&str]) -> bool {
    text.lines().any(|l| {
        marks.iter().any(|m| {
            l.trim_start()
                .strip_prefix(m)
                .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        })
    })
}

/// Whether documentation says that what it documents is deprecated: a line that begins
/// with a tag or directive ([`DEPRECATED_DOCS`]), or a first sentence that begins with
/// the word ("Deprecated function for …", "DEPRECATED. Use …").
pub(crate) fn doc_deprecated(doc: Option<&str>) -> bool {
    doc.is_some_and(|doc| {
        let first = doc.trim_start();
        let opens = ["Deprecated", "DEPRECATED"].iter().any(|w| {
            first
                .strip_prefix(w)
                .is_some_and(|rest| !rest.starts_with(char::is_alphanumeric))
        });
        opens || starts_any(doc, DEPRECATED_DOCS)
    })
}

/// Whether `symbol`'s own head (decorators and annotations up to its body) or its
/// documentation marks it deprecated. Overloads merged into one symbol are decided by
/// [`super::tree::merge_overloads`] (one deprecated way to call a function does not make
/// it deprecated): their documentation is the first one's, and their head holds every
/// signature.
fn declared_deprecated(symbol: &ParsedSymbol, source: &str) -> bool {
    if !symbol.overloads.is_empty() {
        return false;
    }
    if doc_deprecated(symbol.jsdoc.as_deref()) {
        return true;
    }
    let start = symbol.bytes.start;
    let mut end = symbol
        .body
        .map_or(symbol.bytes.end, |b| b.start)
        .min(start.saturating_add(HEAD_BYTES))
        .min(source.len());
    while end > start && !source.is_char_boundary(end) {
        end -= 1;
    }
    starts_any(source.get(start..end).unwrap_or(""), DEPRECATED_HEADS)
}

/// One symbol or root-level statement, with its nested symbols.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParsedSymbol {
    /// Declared name; for statements a short label (`import:jsonwebtoken`, `app.use(cors())`).
    pub name: String,
    /// What the symbol is.
    pub kind: SymbolKind,
    /// Nesting depth, 0 at the file root.
    pub depth: u32,
    /// Name of the enclosing symbol, `None` at the root.
    pub parent_name: Option<String>,
    /// 1-indexed inclusive lines, from the first token (decorators included, JSDoc
    /// excluded; the first overload for overloaded functions) to the last.
    pub range: LineRange,
    /// Byte span matching `range` at token granularity.
    pub bytes: ByteRange,
    /// The body that a parent chunk collapses to `{ … }`; `None` for leaf declarations
    /// (properties, type aliases, expression-bodied arrows, signatures).
    pub body: Option<ByteRange>,
    /// Declaration head as written: parameters and return type for functions, heritage for
    /// classes, the collapsed text for short declarations.
    pub signature: String,
    /// The language's own name for the construct when it differs from `kind`'s
    /// (`trait`, `record`, `static`, `macro_rules`, `decorated`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_kind: Option<String>,
    /// Signatures of overload declarations merged into this symbol, in source order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overloads: Vec<String>,
    /// Modifiers in a fixed order.
    pub modifiers: Vec<Modifier>,
    /// JSDoc text (delimiters and leading `*` removed), when a `/** */` block precedes it.
    pub jsdoc: Option<String>,
    /// Whether the symbol is exported from its module or namespace.
    pub exported: bool,
    /// Every name this symbol binds when it binds more than its `name` (destructuring,
    /// several declarators, import bindings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bindings: Vec<String>,
    /// Nested symbols in source order.
    pub children: Vec<ParsedSymbol>,
}

impl ParsedSymbol {
    /// A root symbol of `kind` named `name` over `range` and `bytes`; everything else
    /// empty, for the caller to fill in.
    pub fn bare(kind: SymbolKind, name: String, range: LineRange, bytes: ByteRange) -> Self {
        ParsedSymbol {
            name,
            kind,
            depth: 0,
            parent_name: None,
            range,
            bytes,
            body: None,
            signature: String::new(),
            native_kind: None,
            overloads: Vec::new(),
            modifiers: Vec::new(),
            jsdoc: None,
            exported: false,
            bindings: Vec::new(),
            children: Vec::new(),
        }
    }

    /// Whether a parent collapses this symbol's body.
    pub fn is_body_bearing(&self) -> bool {
        self.body.is_some()
    }

    /// Depth-first, pre-order iterator over this symbol and its descendants.
    pub fn walk(&self) -> impl Iterator<Item = &ParsedSymbol> {
        let mut stack = vec![self];
        std::iter::from_fn(move || {
            let next = stack.pop()?;
            stack.extend(next.children.iter().rev());
            Some(next)
        })
    }
}

/// One import statement (ES `import`, `import x = require()`, or a CommonJS `require`
/// binding at the root) and the local names it binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Import {
    /// Module specifier as written, without quotes (`jsonwebtoken`, `../models/auth`).
    pub module: String,
    /// Local names bound (`jwt`, `JwtPayload`, `ns`); empty for side-effect imports.
    pub bindings: Vec<String>,
    /// Statement text, whitespace collapsed.
    pub text: String,
    /// Byte span of the statement.
    pub bytes: ByteRange,
    /// `import type …`.
    pub type_only: bool,
}

/// A syntax problem tree-sitter recovered from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// 1-indexed line.
    pub line: u32,
    /// 1-indexed column (in bytes).
    pub column: u32,
    /// What is wrong.
    pub message: String,
}

/// An identifier occurrence in reference position (identifiers and type names; not
/// property names after a dot).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentRef {
    /// Byte offset of the identifier.
    pub offset: usize,
    /// The identifier text.
    pub name: String,
}

/// Everything the parser knows about one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParsedFile {
    /// The language it was parsed as.
    pub language: super::Language,
    /// Root symbols and statements in source order.
    pub symbols: Vec<ParsedSymbol>,
    /// Import statements at the root (and inside namespaces / ambient modules).
    pub imports: Vec<Import>,
    /// Identifier occurrences sorted by offset.
    pub identifiers: Vec<IdentRef>,
    /// Comment spans sorted by offset.
    pub comments: Vec<ByteRange>,
    /// Syntax errors tree-sitter recovered from (empty for a clean file).
    pub diagnostics: Vec<Diagnostic>,
    /// Number of lines in the file.
    pub line_count: u32,
    /// Name facts for the symbol graph (imports, exports, reference occurrences).
    #[serde(default)]
    pub refs: super::refs::FileRefs,
}

impl ParsedFile {
    /// Depth-first, pre-order iterator over every symbol in the file.
    pub fn walk(&self) -> impl Iterator<Item = &ParsedSymbol> {
        self.symbols.iter().flat_map(|s| s.walk())
    }
}

#[cfg(test)]
mod tests {
    use strum::IntoEnumIterator;

    use super::*;

    #[test]
    fn names_round_trip_and_agree_with_serde() {
        for kind in SymbolKind::iter() {
            assert_eq!(SymbolKind::parse(kind.as_str()), Some(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            assert_eq!(kind.to_string(), kind.as_str());
        }
        assert_eq!(SymbolKind::ReExport.as_str(), "re-export");
        for modifier in Modifier::iter() {
            assert_eq!(Modifier::parse(modifier.as_str()), Some(modifier));
            assert_eq!(serde_json::to_value(modifier).unwrap(), modifier.as_str());
        }
        assert_eq!(SymbolKind::parse("no-such-kind"), None);
    }
}
