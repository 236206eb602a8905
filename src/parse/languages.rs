//! The language table: everything Sextant knows about a language, in one row.
//!
//! Parsing (extension, shebang, grammar, walker), chunking (label, collapsed body), path
//! roles (the language's test-file convention) and the graph's module resolution (which
//! module system, how names are seen across files) all read [`LANGUAGES`]. Adding a
//! language is a [`Language`] variant, its row here, and its walker: a new
//! [`lang::Syntax`](super::lang) file (see ARCHITECTURE.md, "Adding a language").

use super::lang::{self, Syntax};
use super::text::TextFormat;

/// What a language's files are for: the search filter `kind` and the ranking read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::Display, strum::EnumString, strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "lowercase")]
#[derive(clap::ValueEnum)]
pub enum Category {
    /// Source code (shell scripts included).
    Code,
    /// Documentation: Markdown, reStructuredText.
    Docs,
    /// Configuration: YAML, JSON, TOML, Dockerfiles.
    Config,
}

/// How a language writes a doc comment above a declaration: what a snapshot writes its
/// targets' documentation as (the parser keeps the comment's text, not its lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocComment {
    /// No comment above declarations documents them (Python's docstrings are inside the
    /// body, text formats have none).
    None,
    /// A `/** … */` block, ` * ` before each inner line (TypeScript, JavaScript, Java).
    Block,
    /// A line comment before each line (`///` in Rust, `//` in Go).
    Lines(&'static str),
}

/// One language's row of [`LANGUAGES`].
pub struct LanguageDef {
    /// Stable lower-case identifier, used in stores and filters (`python`).
    pub id: &'static str,
    /// Human label used in embedding preambles (`[Python] app/models.py > User`).
    pub label: &'static str,
    /// File extensions, without the dot.
    pub extensions: &'static [&'static str],
    /// Whole file names that are this language whatever their extension (`Dockerfile`);
    /// a name followed by `.` and a suffix counts too (`Dockerfile.prod`).
    pub file_names: &'static [&'static str],
    /// Code, docs or config.
    pub category: Category,
    /// Programs a shebang line names for scripts without an extension (`python3` counts
    /// as `python`: trailing version digits are ignored).
    pub interpreters: &'static [&'static str],
    /// The tree-sitter grammar (`None` for text formats read by their lines).
    pub grammar: Option<fn() -> tree_sitter::Language>,
    /// Which walk turns the tree into symbols.
    pub(crate) walker: Walker,
    /// Whether bodies are braced (`{ … }` when collapsed) rather than indented (`…`).
    pub braces: bool,
    /// Whether the grammar accepts JSX.
    pub jsx: bool,
    /// How a doc comment above a declaration is written.
    pub doc_comment: DocComment,
    /// Test files named by the language's convention rather than a marker such as
    /// `.test.` (given the file name).
    pub test_file: fn(&str) -> bool,
    /// How imports and names resolve across files.
    pub modules: ModuleRules,
}

impl LanguageDef {
    /// A code row with a grammar, braced bodies, no JSX, no shebangs, no test-file
    /// convention and ECMAScript's module rules; rows change what differs.
    const fn new(
        id: &'static str,
        label: &'static str,
        extensions: &'static [&'static str],
        grammar: fn() -> tree_sitter::Language,
        walker: Walker,
    ) -> Self {
        Self {
            grammar: Some(grammar),
            walker,
            braces: true,
            doc_comment: DocComment::Block,
            modules: ModuleRules::ECMASCRIPT,
            ..Self::text(id, label, extensions, Category::Code, TextFormat::Document)
        }
    }

    /// A row read by its lines in `format` (`Walker::Text`): no grammar, no module
    /// system, bodies collapsed to `…`, no JSX, no shebangs, no test-file convention.
    const fn text(
        id: &'static str,
        label: &'static str,
        extensions: &'static [&'static str],
        category: Category,
        format: TextFormat,
    ) -> Self {
        Self {
            id,
            label,
            extensions,
            file_names: &[],
            category,
            interpreters: &[],
            grammar: None,
            walker: Walker::Text(format),
            braces: false,
            jsx: false,
            doc_comment: DocComment::None,
            test_file: no_convention,
            modules: ModuleRules::of(ModuleSystem::None),
        }
    }
}

/// The walk that turns a language's tree into symbols.
#[derive(Clone, Copy)]
pub(crate) enum Walker {
    /// The TypeScript family's own walk (`parse::typescript`).
    TypeScript,
    /// The shared walk of `parse::lang`, driven by the language's [`Syntax`].
    Tree(&'static dyn Syntax),
    /// Read by its lines (`parse::text`) in a format: documentation, configuration, shell.
    Text(TextFormat),
}

/// Which resolver turns an import into a repository file (see `graph::modules` and
/// `graph::packages`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleSystem {
    /// Relative and package specifiers, `tsconfig` paths, workspace packages.
    EcmaScript,
    /// Dotted modules from the file's package or a source root.
    Python,
    /// `crate::`, `self::`, `super::` module paths.
    Rust,
    /// Import paths naming a package directory.
    Go,
    /// Fully qualified class names.
    Java,
    /// No imports (documentation and configuration).
    None,
}

/// How a language's imports and names are seen across files (read by the graph).
#[derive(Debug, Clone, Copy)]
pub struct ModuleRules {
    /// Which resolver turns an import into a file.
    pub system: ModuleSystem,
    /// Whether an import may name an item its module does not export (Python's
    /// `_helper`, Rust's parent items, Java's package-private members).
    pub imports_see_private: bool,
    /// What joins a module and a name when the name is a submodule (`pkg.name`,
    /// `crate::name`); `None` where an imported name is never a module.
    pub submodule_separator: Option<&'static str>,
    /// Whether an imported name that is a submodule is preferred to an item of that
    /// name (Rust's `use crate::unicode` names the file, not the `mod` line).
    pub submodule_first: bool,
    /// Whether a module's own imports are its attributes (Python's `pkg/__init__.py`,
    /// Rust's `pub use`).
    pub imports_are_exports: bool,
    /// Whether the files of one directory see each other's names without imports (Go,
    /// Java).
    pub package_scope: bool,
    /// Whether methods are declared beside their type as `Type.Method` (Go).
    pub methods_beside_type: bool,
    /// Whether a class member sees the members of enclosing classes by name (Java).
    pub enclosing_members: bool,
}

impl ModuleRules {
    /// The rules of ECMAScript modules: imports name exports only, nothing implicit.
    const ECMASCRIPT: Self = Self::of(ModuleSystem::EcmaScript);

    /// `system` with every other rule off (rows switch on what their language does).
    const fn of(system: ModuleSystem) -> Self {
        Self {
            system,
            imports_see_private: false,
            submodule_separator: None,
            submodule_first: false,
            imports_are_exports: false,
            package_scope: false,
            methods_beside_type: false,
            enclosing_members: false,
        }
    }
}

/// Never a test file by name alone.
fn no_convention(_: &str) -> bool {
    false
}

/// Every language, one row each. [`Language`]'s named constants point at rows by position
/// (a test checks each); a new row goes last.
pub static LANGUAGES: [LanguageDef; 14] = [
    LanguageDef {
        interpreters: &["ts-node", "tsx"],
        ..LanguageDef::new(
            "typescript",
            "TypeScript",
            &["ts", "mts", "cts"],
            || tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Walker::TypeScript,
        )
    },
    LanguageDef {
        jsx: true,
        ..LanguageDef::new(
            "tsx",
            "TypeScript",
            &["tsx"],
            || tree_sitter_typescript::LANGUAGE_TSX.into(),
            Walker::TypeScript,
        )
    },
    LanguageDef {
        interpreters: &["node", "nodejs", "deno", "bun"],
        jsx: true,
        ..LanguageDef::new(
            "javascript",
            "JavaScript",
            &["js", "jsx", "mjs", "cjs"],
            || tree_sitter_javascript::LANGUAGE.into(),
            Walker::TypeScript,
        )
    },
    LanguageDef {
        interpreters: &["python", "pypy"],
        braces: false,
        doc_comment: DocComment::None,
        // pytest's and unittest's discovery: `test_x.py`.
        test_file: |file| file.starts_with("test_") && file.ends_with(".py"),
        modules: ModuleRules {
            imports_see_private: true,
            imports_are_exports: true,
            submodule_separator: Some("."),
            ..ModuleRules::of(ModuleSystem::Python)
        },
        ..LanguageDef::new(
            "python",
            "Python",
            &["py", "pyi"],
            || tree_sitter_python::LANGUAGE.into(),
            Walker::Tree(&lang::python::Python),
        )
    },
    // `x_test.go` is a test by the `_test.` marker every language shares.
    LanguageDef {
        doc_comment: DocComment::Lines("//"),
        modules: ModuleRules {
            package_scope: true,
            methods_beside_type: true,
            ..ModuleRules::of(ModuleSystem::Go)
        },
        ..LanguageDef::new(
            "go",
            "Go",
            &["go"],
            || tree_sitter_go::LANGUAGE.into(),
            Walker::Tree(&lang::go::Go),
        )
    },
    LanguageDef {
        doc_comment: DocComment::Lines("///"),
        modules: ModuleRules {
            imports_see_private: true,
            submodule_first: true,
            imports_are_exports: true,
            submodule_separator: Some("::"),
            ..ModuleRules::of(ModuleSystem::Rust)
        },
        ..LanguageDef::new(
            "rust",
            "Rust",
            &["rs"],
            || tree_sitter_rust::LANGUAGE.into(),
            Walker::Tree(&lang::rust::Rust),
        )
    },
    LanguageDef {
        // Maven Surefire's `XTest.java` / `XTests.java`; case matters (`Contest.java`).
        test_file: |file| {
            let stem = file.strip_suffix(".java").unwrap_or(file);
            stem.ends_with("Test") || stem.ends_with("Tests")
        },
        modules: ModuleRules {
            imports_see_private: true,
            package_scope: true,
            enclosing_members: true,
            ..ModuleRules::of(ModuleSystem::Java)
        },
        ..LanguageDef::new(
            "java",
            "Java",
            &["java"],
            || tree_sitter_java::LANGUAGE.into(),
            Walker::Tree(&lang::java::Java),
        )
    },
    LanguageDef::text(
        "markdown",
        "Markdown",
        &["md", "markdown", "mdx"],
        Category::Docs,
        TextFormat::Markdown,
    ),
    LanguageDef::text(
        "rst",
        "reStructuredText",
        &["rst"],
        Category::Docs,
        TextFormat::Rst,
    ),
    LanguageDef::text(
        "yaml",
        "YAML",
        &["yaml", "yml"],
        Category::Config,
        TextFormat::Yaml,
    ),
    LanguageDef::text(
        "json",
        "JSON",
        &["json", "jsonc", "json5"],
        Category::Config,
        TextFormat::Json,
    ),
    LanguageDef::text(
        "toml",
        "TOML",
        &["toml"],
        Category::Config,
        TextFormat::Toml,
    ),
    LanguageDef {
        file_names: &["Dockerfile", "Containerfile", "dockerfile"],
        ..LanguageDef::text(
            "dockerfile",
            "Dockerfile",
            &["dockerfile", "containerfile"],
            Category::Config,
            TextFormat::Dockerfile,
        )
    },
    LanguageDef {
        interpreters: &["sh", "bash", "zsh", "dash", "ksh"],
        braces: true,
        ..LanguageDef::text(
            "shell",
            "Shell",
            &["sh", "bash", "zsh"],
            Category::Code,
            TextFormat::Shell,
        )
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::Language;

    #[test]
    fn named_languages_point_at_their_rows_and_ids_and_extensions_are_unique() {
        let named = [
            (Language::TYPESCRIPT, "typescript"),
            (Language::TSX, "tsx"),
            (Language::JAVASCRIPT, "javascript"),
            (Language::PYTHON, "python"),
            (Language::GO, "go"),
            (Language::RUST, "rust"),
            (Language::JAVA, "java"),
            (Language::MARKDOWN, "markdown"),
            (Language::RST, "rst"),
            (Language::YAML, "yaml"),
            (Language::JSON, "json"),
            (Language::TOML, "toml"),
            (Language::DOCKERFILE, "dockerfile"),
            (Language::SHELL, "shell"),
        ];
        for (language, id) in named {
            assert_eq!(language.id(), id);
            assert!(std::ptr::eq(
                language.def(),
                Language::parse(id).unwrap().def()
            ));
        }
        let mut ids = std::collections::HashSet::new();
        let mut extensions = std::collections::HashSet::new();
        for def in &LANGUAGES {
            assert!(ids.insert(def.id), "{} twice", def.id);
            for ext in def.extensions {
                assert!(extensions.insert(*ext), ".{ext} claimed twice");
            }
        }
    }

    #[test]
    fn a_language_serializes_as_its_id_and_an_unknown_id_says_which_are_known() {
        assert_eq!(serde_json::to_string(&Language::GO).unwrap(), "\"go\"");
        let back: Language = serde_json::from_str("\"rust\"").unwrap();
        assert_eq!(back, Language::RUST);
        let err = serde_json::from_str::<Language>("\"cobol\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown language `cobol`"),
            "{err}"
        );
        assert!(err.to_string().contains("python"), "{err}");
    }

    #[test]
    fn every_grammar_loads_into_a_parser() {
        for def in &LANGUAGES {
            let mut parser = tree_sitter::Parser::new();
            match (def.grammar, def.walker) {
                (Some(grammar), _) => {
                    assert!(parser.set_language(&grammar()).is_ok(), "{}", def.id)
                }
                (None, Walker::Text(_)) => {}
                (None, _) => panic!("{} has a tree walk but no grammar", def.id),
            }
        }
    }
}
