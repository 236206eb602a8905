//! Ranking priors (pure): what the question's form and a candidate's path and definition
//! say, on top of the text similarity of stage 1 and 2.
//!
//! - **Query understanding** ([`understand`]): identifier-like words (`SnapshotState`,
//!   `runTests`, `load_config`, `SearchSource.findRelatedTests`, `A::b`) and whether the
//!   question is a short *symbol question* (at most three words, one of them an
//!   identifier) or a sentence that mentions identifiers.
//! - **Definition over mention**: a candidate that *defines* a named identifier (its name
//!   is the identifier, or ends with `.identifier` as CommonJS `X.prototype.name` does,
//!   and its parents match a dotted path) outranks chunks that only use it. For a symbol
//!   question definitions form a tier above every other candidate; in a sentence they get a
//!   small lift.
//! - **Path roles** ([`PathRole`]): tests, fixtures, examples/docs, declaration files and
//!   generated or vendored code lose a little score, unless the question asks for them
//!   ("spec", "fixture", "unit test", "tests for", "example", …).
//! - **Path words**: a candidate whose file name or directory shares the question's words
//!   gains a little (`watch-run.cjs` for "how watch mode is implemented").
//! - **File coherence and repetition**: a file with several good candidates lifts its
//!   best one; later candidates of a file already ranked lose a little, so ten results are
//!   not one file's members.
//!
//! The weights are [`Priors`], part of the search options (per request or as the
//! server's defaults); scores stay in 0..1, so the relevance gate means what it did.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::parse::{Language, SymbolKind};
use crate::text::search_text;

pub use crate::roles::{PathRole, PathRoles};

/// Weights of the priors. Scores of stage 1/2 lie in 0..1 (cosine similarities of a
/// sentence model crowd into roughly 0.55–0.9), so the adjustments are small additions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Priors {
    /// Apply the priors at all (default true).
    pub enabled: bool,
    /// Subtracted from tests and specs, unless the question asks for tests.
    pub test_penalty: f32,
    /// Subtracted from fixtures and mocks, unless the question asks for tests.
    pub fixture_penalty: f32,
    /// Subtracted from examples, docs and benchmarks, unless the question asks for them.
    pub example_penalty: f32,
    /// Subtracted from declaration files, unless the question asks for them.
    pub declaration_penalty: f32,
    /// Subtracted from documentation (Markdown, reStructuredText), unless the question
    /// asks for docs or configuration.
    pub docs_penalty: f32,
    /// Subtracted from configuration files, unless the question asks for configuration.
    pub config_penalty: f32,
    /// Subtracted from generated and vendored code.
    pub generated_penalty: f32,
    /// Subtracted from deprecated code (and everything inside it), unless the question
    /// asks about deprecated or legacy code: the code that replaced it answers first.
    pub deprecated_penalty: f32,
    /// Subtracted from types and signatures (interfaces, type aliases, fields, methods
    /// without a body) unless the question asks about types: a question about what code
    /// does is answered by the code that does it.
    pub signature_penalty: f32,
    /// Added times the share of the question's words found in the file's name and
    /// directory.
    pub path_words: f32,
    /// Added to a definition of an identifier the question names (sentences; symbol
    /// questions put definitions in a tier above everything else).
    pub definition: f32,
    /// Added to a file's best candidate per further good candidate of that file (at most
    /// three).
    pub coherence: f32,
    /// Subtracted from each further candidate of a file already ranked, times its
    /// position among that file's candidates.
    pub repeat: f32,
}

impl Default for Priors {
    fn default() -> Self {
        Self {
            enabled: true,
            // 0.06 / 0.08 until sentences got their own lexical weight, then 0.12; 0.2
            // gains wherever tests still reached the first answers (the JavaScript,
            // TypeScript and Java sets, Python's docstring set) and changes nothing
            // elsewhere (docs/BENCHMARKS.md, "Tests yield further to source").
            test_penalty: 0.2,
            fixture_penalty: 0.2,
            example_penalty: 0.05,
            declaration_penalty: 0.04,
            // High enough that documentation and configuration answer code questions only
            // when nothing in the code comes close (jest's documentation pages sit nearer
            // to its "how does X work" questions than its code does: docs/BENCHMARKS.md).
            docs_penalty: 0.3,
            config_penalty: 0.3,
            generated_penalty: 0.08,
            deprecated_penalty: 0.12,
            // 0.1 ranks semantic questions better but costs architecture questions,
            // which interfaces answer (docs/BENCHMARKS.md, the same section).
            signature_penalty: 0.03,
            path_words: 0.05,
            definition: 0.05,
            coherence: 0.01,
            // Off: on the ranking sets it helped one repository and cost the other.
            repeat: 0.0,
        }
    }
}

impl Priors {
    /// Every weight with its JSON name.
    fn weights_mut(&mut self) -> [(&'static str, &mut f32); 13] {
        [
            ("testPenalty", &mut self.test_penalty),
            ("fixturePenalty", &mut self.fixture_penalty),
            ("examplePenalty", &mut self.example_penalty),
            ("declarationPenalty", &mut self.declaration_penalty),
            ("docsPenalty", &mut self.docs_penalty),
            ("configPenalty", &mut self.config_penalty),
            ("generatedPenalty", &mut self.generated_penalty),
            ("deprecatedPenalty", &mut self.deprecated_penalty),
            ("signaturePenalty", &mut self.signature_penalty),
            ("pathWords", &mut self.path_words),
            ("definition", &mut self.definition),
            ("coherence", &mut self.coherence),
            ("repeat", &mut self.repeat),
        ]
    }

    /// Checks that every weight lies in 0..=1.
    pub fn validate(&self) -> Result<(), String> {
        let mut copy = *self;
        for (name, w) in copy.weights_mut() {
            if !(0.0..=1.0).contains(w) {
                return Err(format!(
                    "priors.{name} must be between 0.0 and 1.0, got {w}"
                ));
            }
        }
        Ok(())
    }

    /// Every weight times `spread`: the weights are written in bge-small-en-v1.5's score
    /// units, and a model whose similarities spread wider needs them as much wider to
    /// move a result as far ([`crate::embed::Embedder::score_spread`]).
    pub fn scaled(&self, spread: f32) -> Priors {
        let mut out = *self;
        for (_, w) in out.weights_mut() {
            *w *= spread;
        }
        out
    }
}

/// An identifier the question names: `SearchSource.findRelatedTests` →
/// name `findRelatedTests`, parents `[SearchSource]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identifier {
    /// The defined name looked for.
    pub name: String,
    /// Enclosing names given with it (`A.b`, `A::b`, `A#b`), outermost first.
    pub parents: Vec<String>,
}

/// What the question's form says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Intent {
    /// Identifier-like words, in question order.
    pub identifiers: Vec<Identifier>,
    /// A short question made of an identifier (and at most two more words): answered by
    /// definitions first.
    pub symbol: bool,
    /// The other words of a symbol question, lower case (`reporter` in "Base reporter").
    pub companions: Vec<String>,
    /// The question asks for tests, specs or fixtures.
    pub wants_tests: bool,
    /// The question asks for examples, demos or docs.
    pub wants_examples: bool,
    /// The question asks for type declarations.
    pub wants_declarations: bool,
    /// The question asks for documentation (or how to configure or use something).
    pub wants_docs: bool,
    /// The question asks about configuration.
    pub wants_config: bool,
    /// The question asks about types or shapes ("type", "interface", "signature", …).
    pub wants_types: bool,
    /// The question asks about deprecated or legacy code.
    pub wants_deprecated: bool,
}

fn is_identifier_part(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

/// Whether one word is written like code: dotted or `::` paths, snake_case, camelCase or
/// PascalCase with two humps or more.
fn looks_like_code(word: &str, parts: &[&str]) -> bool {
    if parts.len() > 1 {
        return parts.iter().all(|p| is_identifier_part(p));
    }
    if !is_identifier_part(word) {
        return false;
    }
    let letters = word.trim_matches('_');
    let snake = letters.contains('_') && letters.chars().any(char::is_alphabetic);
    let humps = word
        .chars()
        .zip(word.chars().skip(1))
        .any(|(a, b)| (a.is_lowercase() || a.is_ascii_digit()) && b.is_uppercase());
    snake || humps
}

/// Reads the question's form (see the module docs).
///
/// ```
/// use sextant::search::prior::understand;
/// let i = understand("SearchSource.findRelatedTests");
/// assert!(i.symbol);
/// assert_eq!(i.identifiers[0].name, "findRelatedTests");
/// assert_eq!(i.identifiers[0].parents, ["SearchSource"]);
/// let s = understand("where does runTests skip pending tests");
/// assert!(!s.symbol);
/// assert_eq!(s.identifiers[0].name, "runTests");
/// ```
pub fn understand(question: &str) -> Intent {
    let words: Vec<&str> = question
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '$' | '.' | ':' | '#')))
        .map(|w| w.trim_matches(|c| matches!(c, '.' | ':' | '#')))
        .filter(|w| !w.is_empty())
        .collect();
    let short = words.len() <= 3;
    let mut intent = Intent::default();
    let mut plain = Vec::new();
    for word in &words {
        let parts: Vec<&str> = word
            .split(['.', ':', '#'])
            .filter(|p| !p.is_empty())
            .collect();
        // In a short question a capitalised word (`Runner`) or a lone word is a name too.
        let named = looks_like_code(word, &parts)
            || (short
                && parts.len() == 1
                && is_identifier_part(word)
                && (word.starts_with(char::is_uppercase) || words.len() == 1));
        match parts.split_last() {
            Some((name, parents)) if named => intent.identifiers.push(Identifier {
                name: (*name).to_string(),
                parents: parents.iter().map(|p| (*p).to_string()).collect(),
            }),
            _ => plain.push(word.to_ascii_lowercase()),
        }
    }
    intent.symbol = short && !intent.identifiers.is_empty();
    if intent.symbol {
        intent.companions = plain.clone();
    }
    read_wants(&mut intent, &plain);
    intent
}

/// Words that ask for tests on their own.
const TEST_WORDS: &[&str] = &["spec", "specs", "e2e", "fixture", "fixtures", "tested"];
/// Words that ask for examples.
const EXAMPLE_WORDS: &[&str] = &["example", "examples", "demo", "demos", "sample", "samples"];
/// Configuration formats: naming one asks for configuration.
const FORMAT_WORDS: &[&str] = &[
    "yaml",
    "yml",
    "json",
    "toml",
    "docker",
    "dockerfile",
    "compose",
    "workflow",
    "workflows",
];
/// Configuring words: they ask for configuration within a task.
const CONFIGURING_WORDS: &[&str] = &[
    "config",
    "configs",
    "configure",
    "configured",
    "configuring",
    "configuration",
    "setting",
    "settings",
    "option",
    "options",
];
/// Words that ask for documentation.
const DOC_WORDS: &[&str] = &[
    "doc",
    "docs",
    "documentation",
    "documented",
    "readme",
    "guide",
    "tutorial",
    "install",
    "installation",
    "changelog",
    "faq",
];
/// Words that ask for declaration files.
const DECLARATION_WORDS: &[&str] = &["declaration", "declarations", "typings", "d.ts"];
/// Words that ask for types.
const TYPE_WORDS: &[&str] = &[
    "type",
    "types",
    "typed",
    "interface",
    "interfaces",
    "shape",
    "signature",
    "signatures",
    "field",
    "fields",
    "property",
    "properties",
    // What a caller must write: the contract (an interface, an abstract class).
    "implement",
    "override",
];

/// Words that ask about code on its way out.
const DEPRECATED_WORDS: &[&str] = &[
    "deprecated",
    "deprecation",
    "legacy",
    "obsolete",
    "outdated",
];

/// Sets what the question's plain (lower-cased, non-name) words ask for beyond code.
fn read_wants(intent: &mut Intent, plain: &[String]) {
    let any = |list: &[&str]| plain.iter().any(|p| list.contains(&p.as_str()));
    let pair = |a: &[&str], b: &[&str]| {
        plain
            .windows(2)
            .any(|p| a.contains(&p[0].as_str()) && b.contains(&p[1].as_str()))
    };
    intent.wants_tests = any(TEST_WORDS)
        || pair(
            &["unit", "integration", "regression", "e2e"],
            &["test", "tests"],
        )
        || pair(&["test", "tests"], &["for", "of", "covering", "that"]);
    intent.wants_examples = any(EXAMPLE_WORDS);
    // A task the asker wants to do ("how do I …", "can we …", "how to …"), rather than
    // a question about how the code works ("how configuration files are read").
    let task = pair(&["do", "can", "should"], &["i", "we"]) || pair(&["how"], &["to"]);
    intent.wants_config = any(FORMAT_WORDS) || (any(CONFIGURING_WORDS) && task);
    intent.wants_docs = intent.wants_config || task || any(DOC_WORDS);
    intent.wants_declarations = any(DECLARATION_WORDS);
    intent.wants_types = intent.wants_declarations || any(TYPE_WORDS);
    intent.wants_deprecated = any(DEPRECATED_WORDS);
}

/// A name ignoring case, `_` and `-`: how names are compared when the asker's spelling or
/// a file's naming convention may differ (`snapshot_state`, `SnapshotState`,
/// `stable-graph`).
fn loose(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The defined name a misspelt, partial or differently cased identifier most likely
/// means, among `names` (say, those sharing its first letter): the same name
/// ignoring case, `_` and `-` (`snapshot_state` → `SnapshotState`), else the shortest name
/// it begins (`SnapshotSt` → `SnapshotState`, for four letters or more), else the nearest
/// within one edit (two for names of eight letters or more; `WorkerPol` → `WorkerPool`).
/// `None` when nothing is that close.
///
/// ```
/// use sextant::search::prior::closest_name;
/// let names = ["SnapshotState".to_string(), "snapshotResolver".to_string()];
/// assert_eq!(closest_name("snapshot_state", &names), Some("SnapshotState"));
/// assert_eq!(closest_name("SnapshotStat", &names), Some("SnapshotState"));
/// assert_eq!(closest_name("SnapshotStaet", &names), Some("SnapshotState"));
/// assert_eq!(closest_name("Snapper", &names), None);
/// ```
pub fn closest_name<'a>(wanted: &str, names: &'a [String]) -> Option<&'a str> {
    let want = loose(wanted);
    let len = want.chars().count();
    let allowed = if len >= 8 { 2 } else { 1 };
    names
        .iter()
        .filter_map(|name| {
            // Names far shorter than the question's word can be none of the three: the
            // edit distance is computed only within `allowed` of its length, so a long
            // identifier costs a length comparison per name, not a quadratic table.
            if name.chars().count() + allowed < len {
                return None;
            }
            let have = loose(name);
            let have_len = have.chars().count();
            let rank = if have == want {
                (0, 0)
            } else if len >= 4 && have.starts_with(&want) {
                (1, have.len() - want.len())
            } else {
                if len < 4 || have_len.abs_diff(len) > allowed {
                    return None;
                }
                let d = strsim::damerau_levenshtein(&want, &have);
                if d > allowed {
                    return None;
                }
                (2, d)
            };
            Some((rank, name.len(), name.as_str()))
        })
        .min()
        .map(|(_, _, name)| name)
}

/// What the priors read of one candidate.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// Repository id (files are per repository).
    pub repo: &'a str,
    /// Repository-relative path.
    pub path: &'a str,
    /// The symbol's own name.
    pub name: &'a str,
    /// `Parent > name`.
    pub breadcrumb: &'a str,
    /// Node kind.
    pub kind: SymbolKind,
    /// What its path is ([`PathRoles::role_of`]).
    pub role: PathRole,
    /// Number of lines.
    pub lines: u32,
    /// Only a type or a signature: an interface, type alias, field, or a method without
    /// a body.
    pub signature_only: bool,
    /// Whether the language exports it (`export`, `pub`, a capitalised Go name, a
    /// Python name without a leading `_`, Java's `public`).
    pub exported: bool,
    /// Marked deprecated, or inside something that is ([`crate::parse::Modifier::Deprecated`]).
    pub deprecated: bool,
    /// Score before the priors (0..1).
    pub score: f32,
}

/// How strongly a candidate defines one of the question's identifiers: 0 when it does
/// not; 1 for a class, function, method, interface, type or enum; less for a variable or
/// field, and little for a one-line alias (`exports.X = X`).
pub fn definition_strength(intent: &Intent, facts: &Facts<'_>) -> f32 {
    match facts.kind {
        // `mod acyclic;` points at a file and defines nothing where it stands.
        SymbolKind::Module | SymbolKind::Namespace if facts.signature_only => return 0.0,
        // A file's outline defines the module its file is named after (`acyclic` →
        // `acyclic.rs`), a little below the items it holds.
        SymbolKind::File => {
            let names_it = intent
                .identifiers
                .iter()
                .any(|id| id.parents.is_empty() && file_named_after(facts.path, &id.name) == 1.0);
            return if names_it { OUTLINE_STRENGTH } else { 0.0 };
        }
        _ => {}
    }
    let crumbs: Vec<&str> = facts.breadcrumb.split(" > ").collect();
    let defines = intent.identifiers.iter().any(|id| {
        let own = facts.name == id.name
            || facts
                .name
                .strip_suffix(id.name.as_str())
                .is_some_and(|head| head.ends_with('.'));
        own && id.parents.iter().all(|p| {
            crumbs.iter().any(|c| c == p)
                || facts.name.split('.').any(|segment| segment == p)
                || facts.path.rsplit('/').next().is_some_and(|f| {
                    f.split('.')
                        .next()
                        .is_some_and(|stem| stem.eq_ignore_ascii_case(p))
                })
        })
    });
    if !defines {
        return 0.0;
    }
    kind_strength(facts.kind, facts.lines)
}

/// Whether a candidate is only a type or a signature: an interface, type alias or field,
/// a method without a body (`fn f(&self);`, an abstract Java method, a TypeScript
/// overload), a module declared without its body (Rust's `mod name;`), or a Python
/// function whose body only documents it and raises, passes or says `...` (an abstract
/// method that subclasses implement).
pub fn signature_only(kind: SymbolKind, language: Language, source: &str) -> bool {
    match kind {
        SymbolKind::Interface | SymbolKind::Type | SymbolKind::Property => true,
        SymbolKind::Method | SymbolKind::Function if language == Language::PYTHON => {
            python_stub(source)
        }
        SymbolKind::Method => !source.contains('{'),
        // `mod name;`: its body is another file (a Go `package` clause is not this).
        SymbolKind::Module | SymbolKind::Namespace => {
            !source.contains('{') && source.trim_end().ends_with(';')
        }
        _ => false,
    }
}

/// Whether a Python `def` (decorators, header, body) has no statement beyond its
/// docstring, comments and one `raise`, `pass` or `...`.
fn python_stub(source: &str) -> bool {
    let mut lines = source.lines();
    // The header ends at the first line (after decorators) ending with `:`.
    let header_done = lines.by_ref().any(|l| {
        let l = l.split('#').next().unwrap_or("").trim_end();
        !l.trim_start().starts_with('@') && l.ends_with(':')
    });
    if !header_done {
        return false;
    }
    let body: Vec<&str> = lines
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut rest = body.as_slice();
    // A docstring: from a line opening a triple quote to the line that closes it.
    if let Some(first) = rest.first() {
        let opened = first.trim_start_matches(['r', 'u', 'b', 'R', 'U', 'B']);
        if let Some(quote) = ["\"\"\"", "'''"]
            .into_iter()
            .find(|q| opened.starts_with(q))
        {
            let end = if opened[3..].contains(quote) {
                0
            } else {
                match rest.iter().skip(1).position(|l| l.contains(quote)) {
                    Some(i) => i + 1,
                    None => return false,
                }
            };
            rest = &rest[end + 1..];
        }
    }
    match rest {
        [] => true,
        [only] => matches!(*only, "pass" | "..." | "raise") || only.starts_with("raise "),
        // A `raise` wrapped onto continuation lines, and nothing after it.
        [first, more @ ..] => {
            first.starts_with("raise ")
                && first.ends_with(['(', ',', '\\'])
                && more.iter().all(|l| !is_statement_start(l))
        }
    }
}

/// Whether a stripped Python line could begin a statement of its own (not continue a
/// `raise`'s arguments).
fn is_statement_start(line: &str) -> bool {
    const KEYWORDS: [&str; 10] = [
        "return", "if ", "for ", "while ", "with ", "try:", "raise", "self.", "yield", "assert ",
    ];
    KEYWORDS.iter().any(|k| line.starts_with(k)) || (line.contains(" = ") && !line.contains('('))
}

/// How much a file is named after a symbol: 1 when its name (or, for a `mod.rs`,
/// `index.ts`, `__init__.py`, `lib.rs` or `main.go`, its directory's name, or its
/// package's above a `src/` or `lib/`) is the symbol's name ignoring case, `_` and `-`
/// (`StableGraph` in `stable_graph/mod.rs`, `UnionFind` in `unionfind.rs`); 0.5 when one
/// holds the other and the shorter has at least four letters (`MemMapFs` in `memmap.go`);
/// else 0. Among definitions sharing a name, the one whose file is named after it is the
/// one a question means.
pub fn file_named_after(path: &str, name: &str) -> f32 {
    let mut segments = path.rsplit('/');
    let file = segments.next().unwrap_or("");
    let mut stem = file.split('.').next().unwrap_or(file);
    if matches!(stem, "mod" | "index" | "__init__" | "lib" | "main") {
        stem = segments.next().unwrap_or(stem);
        // A package's entry file: `packages/jest-haste-map/src/index.ts`.
        if matches!(stem, "src" | "lib") {
            stem = segments.next().unwrap_or(stem);
        }
    }
    let own = name.rsplit(['.', ':']).next().unwrap_or(name);
    let (stem, own) = (loose(stem), loose(own));
    if stem.is_empty() || own.is_empty() {
        return 0.0;
    }
    if stem == own {
        1.0
    } else if stem.len().min(own.len()) >= 4 && (own.contains(&stem) || stem.contains(&own)) {
        0.5
    } else {
        0.0
    }
}

/// How strongly a file's outline defines the module its file is named after: below an
/// item of that name (a type or function asked for by name comes first), above anything
/// that only mentions it.
const OUTLINE_STRENGTH: f32 = 0.9;

/// How much a symbol of this kind and length defines its name: 1 for a class, struct,
/// function, method, interface, type, enum or macro; 0.8 for a variable, field or
/// callback; 0.3 for a one-line one (an alias such as `exports.X = X`); 0 for statements,
/// imports, exports and Rust `impl` blocks (an impl adds to a type another item defines).
pub fn kind_strength(kind: SymbolKind, lines: u32) -> f32 {
    use SymbolKind as K;
    match kind {
        K::Class
        | K::Struct
        | K::Macro
        | K::Interface
        | K::Function
        | K::Method
        | K::Constructor
        | K::Component
        | K::Enum
        | K::Namespace
        | K::Module
        | K::Type => 1.0,
        K::Variable | K::Const | K::Property | K::Callback if lines > 1 => 0.8,
        K::Variable | K::Const | K::Property | K::Callback => 0.3,
        _ => 0.0,
    }
}

fn role_weight(role: PathRole) -> f32 {
    match role {
        PathRole::Source => 1.0,
        PathRole::Declaration => 0.7,
        PathRole::Example => 0.5,
        PathRole::Test => 0.4,
        PathRole::Fixture | PathRole::Generated => 0.3,
        PathRole::Docs | PathRole::Config => 0.5,
    }
}

fn role_penalty(role: PathRole, intent: &Intent, priors: &Priors) -> f32 {
    match role {
        PathRole::Source => 0.0,
        PathRole::Test if !intent.wants_tests => priors.test_penalty,
        PathRole::Fixture if !intent.wants_tests => priors.fixture_penalty,
        PathRole::Example if !intent.wants_examples => priors.example_penalty,
        PathRole::Declaration if !intent.wants_declarations => priors.declaration_penalty,
        PathRole::Generated => priors.generated_penalty,
        PathRole::Docs if !intent.wants_docs => priors.docs_penalty,
        PathRole::Config if !intent.wants_config => priors.config_penalty,
        _ => 0.0,
    }
}

/// The words of a path's file name and its directory, identifier-split.
fn path_words(path: &str) -> BTreeSet<String> {
    let mut segments = path.rsplit('/');
    let file = segments.next().unwrap_or("");
    let stem = file.split('.').next().unwrap_or(file);
    let dir = segments.next().unwrap_or("");
    search_text(&format!("{stem} {dir}"))
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Share of `terms` (stemmed question words, [`super::query_terms`]) found among the
/// words of the file name and directory of `path`.
pub fn path_share(terms: &BTreeSet<String>, path: &str) -> f32 {
    if terms.is_empty() {
        return 0.0;
    }
    let stemmer = frostem::Stemmer::new(frostem::Algorithm::English);
    let words: BTreeSet<String> = path_words(path)
        .iter()
        .map(|w| stemmer.stem(w).into_owned())
        .collect();
    terms.iter().filter(|t| words.contains(*t)).count() as f32 / terms.len() as f32
}

/// Candidates within this distance of the best score count as "good" for coherence.
const COHERENCE_BAND: f32 = 0.1;
/// Candidates (best first) among which a file's good candidates are counted.
const COHERENCE_WINDOW: usize = 30;

/// The scores after the priors, one per candidate in the given order. `terms` are the
/// question's stemmed words (for path words). Candidates need not be sorted.
pub fn adjust(
    candidates: &[Facts<'_>],
    intent: &Intent,
    terms: &BTreeSet<String>,
    priors: &Priors,
) -> Vec<f32> {
    if !priors.enabled {
        return candidates.iter().map(|c| c.score).collect();
    }
    let companions: BTreeSet<String> = intent.companions.iter().cloned().collect();
    let mut scores: Vec<f32> = candidates
        .iter()
        .map(|c| {
            let role = c.role;
            let strength = definition_strength(intent, c);
            let quality = strength * role_weight(role);
            let words = if role == PathRole::Source {
                path_share(terms, c.path)
            } else {
                0.0
            };
            if intent.symbol && quality >= 0.5 {
                // The definition tier: above every other candidate, ordered by how well
                // it matches (kind, role, the question's other words) and then by text.
                let text = format!("{} {}", c.breadcrumb, c.path).to_ascii_lowercase();
                let companion_share = if companions.is_empty() {
                    0.0
                } else {
                    companions
                        .iter()
                        .filter(|w| text.contains(w.as_str()))
                        .count() as f32
                        / companions.len() as f32
                };
                // Between definitions of one name, the one whose file is named after it,
                // the exported one and the top-level one come first (a public type over a
                // private one of the same name, a type over its implementation in another
                // file, a package's `Glob` over an adapter's `IOFS.Glob`).
                let top_level = !c.breadcrumb.contains(" > ") && !c.name.contains(['.', ':']);
                // A deprecated definition yields to a live one of the same name.
                let live = if c.deprecated && !intent.wants_deprecated {
                    0.5
                } else {
                    1.0
                };
                let owner = live
                    * (0.4 * file_named_after(c.path, c.name)
                        + 0.3 * f32::from(c.exported)
                        + 0.3 * f32::from(top_level));
                let tier =
                    (0.6 * quality + 0.25 * companion_share + 0.1 * owner + 0.15 * c.score) / 1.1;
                return 0.9 + 0.1 * tier.clamp(0.0, 1.0);
            }
            let shape = if c.signature_only && !intent.wants_types {
                priors.signature_penalty
            } else {
                0.0
            };
            let deprecated = if c.deprecated && !intent.wants_deprecated {
                priors.deprecated_penalty
            } else {
                0.0
            };
            c.score - role_penalty(role, intent, priors) - shape - deprecated
                + priors.path_words * words
                + priors.definition * quality
        })
        .map(|s| s.clamp(0.0, 1.0))
        .collect();
    // Coherence: a file with several good candidates lifts its best one.
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let top = order.first().map_or(0.0, |&i| scores[i]);
    let mut good: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for &i in order.iter().take(COHERENCE_WINDOW) {
        if scores[i] >= top - COHERENCE_BAND {
            good.entry((candidates[i].repo, candidates[i].path))
                .or_default()
                .push(i);
        }
    }
    for members in good.values() {
        let lift = priors.coherence * (members.len().saturating_sub(1).min(3)) as f32;
        scores[members[0]] = (scores[members[0]] + lift).min(1.0);
    }
    // Repetition: the n-th candidate of a file (n ≥ 1, best first) loses n × repeat.
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
    for &i in &order {
        let n = seen
            .entry((candidates[i].repo, candidates[i].path))
            .or_default();
        scores[i] = (scores[i] - priors.repeat * *n as f32).max(0.0);
        *n += 1;
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(path: &'a str, name: &'a str, crumb: &'a str, kind: SymbolKind) -> Facts<'a> {
        Facts {
            repo: "r",
            path,
            name,
            breadcrumb: crumb,
            kind,
            role: PathRole::of(path),
            lines: 20,
            signature_only: false,
            exported: true,
            deprecated: false,
            score: 0.8,
        }
    }

    #[test]
    fn a_huge_identifier_is_compared_by_length_first() {
        // 24,000 names sharing the first letter, as on a large repository; an 8 KiB
        // identifier (issue 37, finding 1) is within no edit distance of any of them.
        let mut names: Vec<String> = (0..24_000).map(|i| format!("handler{i}Value")).collect();
        names.push("handlerConfig".into());
        let huge = format!("h{}", "a".repeat(8 * 1024));
        let started = std::time::Instant::now();
        assert_eq!(closest_name(&huge, &names), None);
        // The figure docs/RELIABILITY.md records (`--nocapture`); not asserted.
        println!(
            "8 KiB identifier against 24,001 names: {:?}",
            started.elapsed()
        );
        // The same scan still finds near names either side of a name's length.
        assert_eq!(closest_name("handlerConfg", &names), Some("handlerConfig"));
        assert_eq!(
            closest_name("handler_config", &names),
            Some("handlerConfig")
        );
        assert_eq!(
            closest_name("handlerConfigs", &names),
            Some("handlerConfig")
        );
    }

    #[test]
    fn priors_scale_with_the_models_score_spread() {
        let base = Priors::default();
        let wide = base.scaled(1.5);
        assert!((wide.test_penalty - base.test_penalty * 1.5).abs() < 1e-6);
        assert!((wide.coherence - base.coherence * 1.5).abs() < 1e-6);
        assert!(wide.enabled);
        assert_eq!(base.scaled(1.0), base);
        assert!(
            Priors {
                repeat: 1.5,
                ..base
            }
            .validate()
            .unwrap_err()
            .contains("repeat")
        );
    }

    #[test]
    fn a_struct_or_macro_defines_its_name_and_an_impl_block_does_not() {
        // Rust: the struct and its many `impl StableGraph` blocks share the name; Go
        // structs and `macro_rules!` macros are definitions too.
        let intent = understand("StableGraph");
        let path = "src/graph_impl/stable_graph/mod.rs";
        let mut implementation = facts(path, "StableGraph", "StableGraph", SymbolKind::Impl);
        implementation.score = 0.95;
        let mut definition = facts(path, "StableGraph", "StableGraph", SymbolKind::Struct);
        definition.score = 0.6;
        let scores = adjust(
            &[implementation, definition],
            &intent,
            &BTreeSet::new(),
            &Priors::default(),
        );
        assert!(scores[1] > scores[0], "{scores:?}");
        assert_eq!(kind_strength(SymbolKind::Struct, 20), 1.0);
        assert_eq!(kind_strength(SymbolKind::Macro, 20), 1.0);
        assert_eq!(kind_strength(SymbolKind::Impl, 20), 0.0);
    }

    #[test]
    fn identifiers_and_symbol_questions_are_recognised() {
        let i = understand("SnapshotState");
        assert!(i.symbol);
        assert_eq!(i.identifiers[0].name, "SnapshotState");
        let i = understand("Base reporter");
        assert!(i.symbol);
        assert_eq!(i.companions, ["reporter"]);
        let i = understand("TestSequencer sort");
        assert_eq!(i.identifiers.len(), 1);
        assert_eq!(i.companions, ["sort"]);
        let i = understand("load_config");
        assert_eq!(i.identifiers[0].name, "load_config");
        let i = understand("tokio::spawn");
        assert_eq!(i.identifiers[0].parents, ["tokio"]);
        let i = understand("How are tests ordered");
        assert!(
            !i.symbol,
            "a capitalised first word of a sentence is not a name"
        );
        assert!(i.identifiers.is_empty());
        let i = understand("move jest.mock calls above the imports");
        assert!(!i.symbol);
        assert_eq!(
            i.identifiers,
            [Identifier {
                name: "mock".into(),
                parents: vec!["jest".into()]
            }]
        );
        assert!(understand("escape").symbol, "a lone word may be a name");
        assert!(!understand("how does it end.").symbol);
    }

    #[test]
    fn questions_that_ask_for_tests_or_examples_are_recognised() {
        assert!(understand("unit tests for the parser").wants_tests);
        assert!(understand("tests of the scheduler").wants_tests);
        assert!(understand("spec of retry").wants_tests);
        assert!(!understand("shuffle the order of tests with a seed").wants_tests);
        assert!(!understand("test runner worker pool").wants_tests);
        assert!(understand("an example of a custom reporter").wants_examples);
        assert!(understand("how do I configure the reporter").wants_config);
        assert!(understand("how to set up the docker compose stack").wants_config);
        assert!(understand("where is the release process documented").wants_docs);
        assert!(understand("how do I run a single test").wants_docs);
        assert!(!understand("how does the runner retry failed hooks").wants_docs);
        assert!(!understand("parse command line options").wants_config);
        let reading = understand("how configuration files are read, normalized and validated");
        assert!(!reading.wants_config && !reading.wants_docs);
        assert!(!understand("how the test environment sets up globals").wants_config);
    }

    #[test]
    fn definitions_are_told_from_mentions() {
        let intent = understand("Runner");
        let class = facts("lib/runner.js", "Runner", "Runner", SymbolKind::Class);
        let field = facts(
            "lib/a.js",
            "runner",
            "Context > runner",
            SymbolKind::Property,
        );
        let mut alias = facts("lib/runner.js", "Runner", "Runner", SymbolKind::Variable);
        alias.lines = 1;
        assert_eq!(definition_strength(&intent, &class), 1.0);
        assert_eq!(definition_strength(&intent, &field), 0.0, "case matters");
        assert!(definition_strength(&intent, &alias) < 0.5);
        let proto = understand("runTests");
        let assigned = facts(
            "lib/runner.cjs",
            "Runner.prototype.runTests",
            "Runner.prototype.runTests",
            SymbolKind::Function,
        );
        assert_eq!(definition_strength(&proto, &assigned), 1.0);
        let dotted = understand("SearchSource.findRelatedTests");
        let method = facts(
            "src/SearchSource.ts",
            "findRelatedTests",
            "SearchSource > findRelatedTests",
            SymbolKind::Method,
        );
        let other = facts(
            "src/Other.ts",
            "findRelatedTests",
            "Other > findRelatedTests",
            SymbolKind::Method,
        );
        assert_eq!(definition_strength(&dotted, &method), 1.0);
        assert_eq!(
            definition_strength(&dotted, &other),
            0.0,
            "parents must match"
        );
    }

    fn ranked(candidates: &[Facts<'_>], question: &str) -> Vec<String> {
        ranked_with(candidates, question, &Priors::default())
    }

    fn ranked_with(candidates: &[Facts<'_>], question: &str, priors: &Priors) -> Vec<String> {
        let terms = super::super::query_terms(&super::super::lexical_query(question));
        let scores = adjust(candidates, &understand(question), &terms, priors);
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        order
            .into_iter()
            .map(|i| format!("{}:{}", candidates[i].path, candidates[i].name))
            .collect()
    }

    #[test]
    fn a_symbol_question_puts_the_source_definition_first() {
        let mut test = facts(
            "test/runner.spec.js",
            "describe('Runner')",
            "describe('Runner')",
            SymbolKind::Callback,
        );
        test.score = 0.9;
        let mut member = facts(
            "lib/context.js",
            "runner",
            "Context > runner",
            SymbolKind::Method,
        );
        member.score = 0.88;
        let mut class = facts("lib/runner.js", "Runner", "Runner", SymbolKind::Class);
        class.score = 0.7;
        let order = ranked(&[test, member, class], "Runner");
        assert_eq!(order[0], "lib/runner.js:Runner");
    }

    #[test]
    fn between_definitions_of_one_name_the_owner_and_the_exported_one_win() {
        // Same kind, same role, same words: the file named after the name wins, though
        // the other scored higher on similarity.
        let mut elsewhere = facts(
            "src/graphmap.rs",
            "WorkerPool",
            "WorkerPool",
            SymbolKind::Struct,
        );
        elsewhere.score = 0.85;
        let mut owner = facts(
            "src/worker_pool/mod.rs",
            "WorkerPool",
            "WorkerPool",
            SymbolKind::Struct,
        );
        owner.score = 0.75;
        assert_eq!(
            ranked(&[elsewhere, owner], "WorkerPool")[0],
            "src/worker_pool/mod.rs:WorkerPool"
        );
        // A crate-private type and a public one of one name: the public one.
        let mut private = facts("src/a.rs", "Config", "Config", SymbolKind::Struct);
        private.exported = false;
        private.score = 0.85;
        let mut public = facts("src/b.rs", "Config", "Config", SymbolKind::Struct);
        public.score = 0.78;
        assert_eq!(ranked(&[private, public], "Config")[0], "src/b.rs:Config");
        // A package's function over a type's method of the same name.
        let mut method = facts("iofs.go", "IOFS.Glob", "IOFS.Glob", SymbolKind::Method);
        method.score = 0.76;
        let mut function = facts("match.go", "Glob", "Glob", SymbolKind::Function);
        function.score = 0.74;
        assert_eq!(ranked(&[method, function], "Glob")[0], "match.go:Glob");
        // The question's other words still come before ownership.
        let mut asked = facts("src/channel.rs", "Config", "Config", SymbolKind::Struct);
        asked.exported = false;
        asked.score = 0.7;
        assert_eq!(
            ranked(&[public, asked], "channel Config")[0],
            "src/channel.rs:Config"
        );
    }

    #[test]
    fn python_stubs_are_signatures_and_python_methods_are_not() {
        let py = |src: &str| signature_only(SymbolKind::Method, Language::PYTHON, src);
        // An abstract method: docstring and a raise (wrapped or not), or pass / `...`.
        assert!(py(
            "def save_token(self, token, request):\n    \"\"\"Persist the token.\n\n    :param token: the token\n    \"\"\"\n    raise NotImplementedError('Subclasses must implement this method.')\n"
        ));
        assert!(py(
            "def get_realms(self, token, request):\n    \"\"\"Realms.\"\"\"\n    raise self._subclass_must_implement(\n        \"get_realms\")\n"
        ));
        assert!(py("@abstractmethod\ndef run(self) -> None:\n    ...\n"));
        assert!(py("def hook(self):\n    # nothing by default\n    pass\n"));
        // Methods with code, whether or not they hold a brace (they used to count as
        // signatures when they held none).
        assert!(!py(
            "def scopes(self):\n    \"\"\"Scopes.\"\"\"\n    return list(self._scopes)\n"
        ));
        assert!(!py(
            "def check(self, value):\n    if not value:\n        raise ValueError('empty')\n    return value\n"
        ));
        assert!(!py(
            "def emit(self, x):\n    raise_from_error(\n        x)\n    self.done = True\n"
        ));
        // Other languages keep the brace rule.
        assert!(signature_only(
            SymbolKind::Method,
            Language::RUST,
            "fn f(&self);"
        ));
        assert!(!signature_only(
            SymbolKind::Method,
            Language::JAVA,
            "void f() { run(); }"
        ));
        assert!(!signature_only(
            SymbolKind::Function,
            Language::GO,
            "func f()"
        ));
    }

    #[test]
    fn a_module_asked_for_by_name_is_its_file_not_its_declaration() {
        // `pub mod acyclic;` in lib.rs names the module; src/acyclic.rs is the module.
        let mut declaration = facts("src/lib.rs", "acyclic", "acyclic", SymbolKind::Module);
        declaration.signature_only =
            signature_only(SymbolKind::Module, Language::RUST, "pub mod acyclic;");
        declaration.score = 0.8;
        let mut outline = facts(
            "src/acyclic.rs",
            "acyclic.rs",
            "acyclic.rs",
            SymbolKind::File,
        );
        outline.score = 0.7;
        let mut mention = facts(
            "src/graph.rs",
            "is_acyclic",
            "is_acyclic",
            SymbolKind::Function,
        );
        mention.score = 0.75;
        let order = ranked(&[declaration, mention, outline], "acyclic");
        assert_eq!(order[0], "src/acyclic.rs:acyclic.rs");
        // An item of the name still comes before its file's outline.
        let mut item = facts(
            "src/unionfind.rs",
            "UnionFind",
            "UnionFind",
            SymbolKind::Struct,
        );
        item.score = 0.6;
        let mut map = facts(
            "src/unionfind.rs",
            "unionfind.rs",
            "unionfind.rs",
            SymbolKind::File,
        );
        map.score = 0.8;
        assert_eq!(
            ranked(&[map, item], "UnionFind")[0],
            "src/unionfind.rs:UnionFind"
        );
        // A module written with its body defines its name.
        assert!(!signature_only(
            SymbolKind::Module,
            Language::RUST,
            "mod tests {\n}"
        ));
        // Nor is a Go package clause a declaration without its body.
        assert!(!signature_only(
            SymbolKind::Module,
            Language::GO,
            "// Package sftpfs serves files over SSH.\npackage sftpfs"
        ));
    }

    #[test]
    fn files_named_after_a_symbol() {
        assert_eq!(file_named_after("src/unionfind.rs", "UnionFind"), 1.0);
        assert_eq!(
            file_named_after("src/stable_graph/mod.rs", "StableGraph"),
            1.0
        );
        assert_eq!(file_named_after("lib/runner.js", "Runner.run"), 0.0);
        assert_eq!(file_named_after("pkg/token/index.ts", "Token"), 1.0);
        assert_eq!(file_named_after("memmap.go", "MemMapFs"), 0.5);
        assert_eq!(
            file_named_after("packages/jest-haste-map/src/index.ts", "HasteMap"),
            0.5
        );
        assert_eq!(
            file_named_after("packages/jest-haste-map/src/types.ts", "HasteMap"),
            0.0
        );
        assert_eq!(file_named_after("src/io.rs", "IoError"), 0.0);
        assert_eq!(file_named_after("oauthlib/common.py", "Request"), 0.0);
    }

    #[test]
    fn tests_yield_to_source_unless_asked_for() {
        let mut test = facts(
            "src/__tests__/pool.test.ts",
            "describe",
            "describe",
            SymbolKind::Callback,
        );
        test.score = 0.82;
        let mut source = facts("src/pool.ts", "Pool", "Pool", SymbolKind::Class);
        source.score = 0.79;
        let both = [test, source];
        assert_eq!(
            ranked(&both, "worker pool that runs jobs")[0],
            "src/pool.ts:Pool"
        );
        assert_eq!(
            ranked(&both, "unit tests for the worker pool")[0],
            "src/__tests__/pool.test.ts:describe"
        );
    }

    #[test]
    fn deprecated_code_yields_to_live_code_unless_asked_for() {
        let mut old = facts(
            "src/internal/runners/MethodRoadie.java",
            "runBefores",
            "MethodRoadie > runBefores",
            SymbolKind::Method,
        );
        old.score = 0.81;
        old.deprecated = true;
        let mut live = facts(
            "src/runners/BlockJUnit4ClassRunner.java",
            "withBefores",
            "BlockJUnit4ClassRunner > withBefores",
            SymbolKind::Method,
        );
        live.score = 0.78;
        let both = [old, live];
        assert_eq!(
            ranked(&both, "run the before methods ahead of a test")[0],
            "src/runners/BlockJUnit4ClassRunner.java:withBefores"
        );
        assert_eq!(
            ranked(&both, "how did the legacy runner run the before methods")[0],
            "src/internal/runners/MethodRoadie.java:runBefores"
        );
        // Without the mark the higher score wins: the penalty is what moved it.
        old.deprecated = false;
        assert_eq!(
            ranked(&[old, live], "run the before methods ahead of a test")[0],
            "src/internal/runners/MethodRoadie.java:runBefores"
        );
        // Between two definitions of a name, the live one comes first.
        let mut dead = facts(
            "a/internal/TestClass.java",
            "TestClass",
            "TestClass",
            SymbolKind::Class,
        );
        dead.deprecated = true;
        dead.score = 0.9;
        let alive = facts(
            "a/model/TestClass.java",
            "TestClass",
            "TestClass",
            SymbolKind::Class,
        );
        assert_eq!(
            ranked(&[dead, alive], "TestClass")[0],
            "a/model/TestClass.java:TestClass"
        );
    }

    #[test]
    fn implementations_outrank_their_signatures_unless_types_are_asked_for() {
        let mut sig = facts(
            "src/types.ts",
            "save",
            "Matchers > save",
            SymbolKind::Method,
        );
        sig.signature_only = true;
        sig.score = 0.81;
        let mut body = facts("src/inline.ts", "saveAll", "saveAll", SymbolKind::Function);
        body.score = 0.80;
        assert_eq!(
            ranked(&[sig, body], "write snapshots back")[0],
            "src/inline.ts:saveAll"
        );
        assert_eq!(
            ranked(&[sig, body], "the type of the snapshot matchers")[0],
            "src/types.ts:save"
        );
        // What a caller must implement is the contract.
        assert_eq!(
            ranked(
                &[sig, body],
                "which methods must a snapshot store implement"
            )[0],
            "src/types.ts:save"
        );
    }

    #[test]
    fn path_words_lift_the_file_that_names_the_topic() {
        let mut other = facts("lib/cli/run.js", "run", "run", SymbolKind::Function);
        other.score = 0.71;
        let mut named = facts(
            "lib/cli/watch-run.js",
            "watchRun",
            "watchRun",
            SymbolKind::Function,
        );
        named.score = 0.70;
        assert_eq!(
            ranked(&[other, named], "how watch mode is implemented")[0],
            "lib/cli/watch-run.js:watchRun"
        );
    }

    #[test]
    fn a_file_repeating_itself_yields_to_another_file() {
        let mut a1 = facts("src/a.ts", "one", "one", SymbolKind::Function);
        a1.score = 0.80;
        let mut a2 = facts("src/a.ts", "two", "two", SymbolKind::Function);
        a2.score = 0.795;
        let mut b = facts("src/b.ts", "three", "three", SymbolKind::Function);
        b.score = 0.79;
        let repeat = Priors {
            repeat: 0.01,
            ..Priors::default()
        };
        let order = ranked_with(&[a1, a2, b], "zzz", &repeat);
        assert_eq!(order[1], "src/b.ts:three");
        assert_eq!(
            ranked(&[a1, a2, b], "zzz")[1],
            "src/a.ts:two",
            "off by default"
        );
        let off = Priors {
            enabled: false,
            ..Priors::default()
        };
        assert_eq!(
            adjust(&[a1, a2, b], &understand("zzz"), &BTreeSet::new(), &off),
            [0.80, 0.795, 0.79]
        );
    }

    #[test]
    fn weights_outside_the_unit_range_are_refused() {
        assert!(Priors::default().validate().is_ok());
        let bad = Priors {
            repeat: 1.5,
            ..Priors::default()
        };
        assert!(bad.validate().unwrap_err().contains("priors.repeat"));
    }
}
