//! The tools' arguments as agents send them (pure: no I/O), and how each becomes a
//! request of the service's. The tool router deserializes `arguments` into these with
//! serde; [`ToolArgs::parse`] does the same by tool name, for the fuzzer of the JSON-RPC
//! envelope (`crate::dev::fuzz::mcp_message`).

use rmcp::schemars;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::service::records::{GrepMode, GrepRequest, SearchOverrides, Tokenizer};

/// Token budget of a `grep` answer when the call does not set one.
pub const DEFAULT_GREP_TOKENS: u32 = 4000;

/// Where a search or a grep looks: the arguments both tools share.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct ScopeArgs {
    /// Only these repositories (names or ids); default: all.
    #[serde(default)]
    pub repositories: Vec<String>,
    /// Only these paths: directory prefixes (`src/auth/`), files, or globs (`**/*.ts`).
    /// (`path`, the blueprint's name, is read as well.)
    #[serde(default, alias = "path")]
    pub paths: Vec<String>,
    /// Only these languages (`typescript`, `tsx`, `javascript`, `python`, `go`, `rust`,
    /// `java`, `markdown`, `yaml`, `json`, `toml`, `shell`, …).
    #[serde(default)]
    pub languages: Vec<String>,
    /// Only `code`, `docs` (Markdown, reStructuredText) or `config` (YAML, JSON, TOML,
    /// Dockerfiles); default: all.
    pub kind: Option<String>,
    /// A branch, tag or commit the repositories track besides their default ref (their
    /// refs are listed by `index_status`): the code as it is there. Default: the
    /// default ref.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
}

/// Arguments of `codebase_search`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchArgs {
    /// What to find: a natural-language question ("where do we validate the auth
    /// token?"), or an exact lookup `symbol = [path/file.ts >] [Parent >] name`.
    pub query: String,
    /// Where to look.
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Most tokens of the whole answer, graph and code together (default 8000).
    pub max_token_budget: Option<usize>,
    /// The encoding `maxTokenBudget` counts in: your model's (`claude`, the default;
    /// `o200k` for GPT-4o and later; `cl100k` for GPT-4).
    pub tokenizer: Option<Tokenizer>,
    /// Minimum relevance (0–1) of a returned result (default 0.5).
    pub minimum_relevance_threshold: Option<f32>,
}

/// Arguments of `get_file_symbols`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FileArgs {
    /// Repository name or id.
    pub repository: String,
    /// File path relative to the repository root (`src/auth/token.ts`).
    pub path: String,
    /// On this ref the repository tracks besides its default one (see
    /// `index_status`); default: the default ref.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
}

/// Arguments of `get_symbol`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SymbolArgs {
    /// The symbol: `name`, `Parent > name`, or `path/file.ts > Parent > name`.
    pub name: String,
    /// Only this repository (name or id); default: all.
    pub repository: Option<String>,
    /// On this ref the repositories track besides their default one (see
    /// `index_status`); default: the default ref.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
}

/// Arguments of `add_repository`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AddRepositoryArgs {
    /// A directory on the server to index (give this or `git`).
    pub path: Option<String>,
    /// A git URL to clone and index (give this or `path`).
    pub git: Option<String>,
    /// Git only: the branch, tag or commit to track.
    #[serde(rename = "ref")]
    pub tracked_ref: Option<String>,
    /// Display name (default: the directory or repository name).
    pub name: Option<String>,
    /// Include globs (`src/**`); default: everything supported.
    #[serde(default)]
    pub include: Vec<String>,
    /// Exclude globs (`**/*.test.ts`).
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// Arguments of `scout`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ScoutArgs {
    /// What you want to know, naming the symbol: "what breaks if I add a variant to
    /// ShapeKind", "parseConfig gets a new parameter", or `symbol = path/file.ts > Name`.
    pub query: String,
    /// Interest signals: `exhaustive`, `pattern-match`, `record`, `implements`,
    /// `overrides`, `subclass`, `call-site`, `type-only`, `reference`, `test`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Most symbols to explore (default 20, at most 200).
    pub budget: Option<u32>,
    /// Only these repositories (names or ids); default: all.
    #[serde(default)]
    pub repositories: Vec<String>,
    /// On this ref the repositories track besides their default one (see
    /// `index_status`); default: the default ref.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
}

/// Arguments of `grep`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepArgs {
    /// The exact text to find (or, with `regex: true`, a Rust regex).
    pub pattern: String,
    /// Read `pattern` as a regular expression (Rust `regex` syntax) rather than literal text.
    #[serde(default)]
    pub regex: bool,
    /// Match regardless of case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Where to look.
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Lines of context around each match (0–10, default 0).
    #[serde(default)]
    pub context: u32,
    /// Most matching lines (1–1000, default 100).
    pub limit: Option<u32>,
    /// Token budget of the answer (default 4000).
    pub max_tokens: Option<u32>,
    /// The encoding `maxTokens` counts in: your model's (`claude`, the default; `o200k`;
    /// `cl100k`).
    pub tokenizer: Option<Tokenizer>,
    /// `cursor` from a previous answer, to see the matches after it.
    pub cursor: Option<String>,
}

impl GrepArgs {
    /// The service request.
    pub fn into_request(self) -> GrepRequest {
        GrepRequest {
            pattern: self.pattern,
            mode: if self.regex {
                GrepMode::Regex
            } else {
                GrepMode::Literal
            },
            case_insensitive: self.case_insensitive,
            repositories: self.scope.repositories,
            paths: self.scope.paths,
            languages: self.scope.languages,
            categories: self.scope.kind.into_iter().collect(),
            context: self.context,
            limit: self.limit,
            max_tokens: Some(self.max_tokens.unwrap_or(DEFAULT_GREP_TOKENS)),
            tokenizer: self.tokenizer.unwrap_or_default(),
            cursor: self.cursor,
            git_ref: self.scope.git_ref,
        }
    }
}

/// Arguments of `index_status`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RepoArgs {
    /// Repository name or id.
    pub repository: String,
}

/// Arguments of `compare_refs`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CompareArgs {
    /// Repository name or id.
    pub repository: String,
    /// The ref compared from; default: the repository's default ref.
    pub base: Option<String>,
    /// The ref compared to (a branch, tag or commit the repository tracks).
    pub head: String,
}

/// Arguments of `track_ref`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TrackRefArgs {
    /// Repository name or id.
    pub repository: String,
    /// A branch, tag or commit of a git repository; for a local directory, a worktree's
    /// branch, name or directory.
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// Stop tracking it instead (what only it held is deleted).
    #[serde(default)]
    pub drop: bool,
}

impl SearchArgs {
    /// The question and the search options this call overrides.
    pub fn into_search(self) -> (String, SearchOverrides) {
        let given = SearchOverrides {
            max_token_budget: self.max_token_budget,
            tokenizer: self.tokenizer,
            minimum_relevance_threshold: self.minimum_relevance_threshold,
            repositories: Some(self.scope.repositories),
            paths: Some(self.scope.paths),
            languages: Some(self.scope.languages),
            categories: Some(self.scope.kind.into_iter().collect()),
            git_ref: self.scope.git_ref,
            ..SearchOverrides::default()
        };
        (self.query, given)
    }
}

/// One tool call's arguments, by tool.
#[derive(Debug)]
pub enum ToolArgs {
    /// `codebase_search`.
    Search(SearchArgs),
    /// `get_symbol`.
    Symbol(SymbolArgs),
    /// `scout`.
    Scout(ScoutArgs),
    /// `add_repository`.
    AddRepository(AddRepositoryArgs),
    /// `get_file_symbols`.
    File(FileArgs),
    /// `index_status`.
    Repo(RepoArgs),
    /// `grep`.
    Grep(GrepArgs),
    /// `compare_refs`.
    Compare(CompareArgs),
    /// `track_ref`.
    TrackRef(TrackRefArgs),
    /// `list_repositories` (no arguments).
    None,
}

impl ToolArgs {
    /// The arguments of a call of `tool`, deserialized as the tool router does (absent
    /// arguments read as `{}`); `None` for a tool Sextant does not have.
    pub fn parse(
        tool: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Option<Result<Self, serde_json::Error>> {
        fn read<T: DeserializeOwned>(
            arguments: Option<serde_json::Map<String, serde_json::Value>>,
        ) -> Result<T, serde_json::Error> {
            serde_json::from_value(serde_json::Value::Object(arguments.unwrap_or_default()))
        }
        Some(match tool {
            "codebase_search" => read(arguments).map(Self::Search),
            "get_symbol" => read(arguments).map(Self::Symbol),
            "scout" => read(arguments).map(Self::Scout),
            "add_repository" => read(arguments).map(Self::AddRepository),
            "get_file_symbols" => read(arguments).map(Self::File),
            "index_status" => read(arguments).map(Self::Repo),
            "grep" => read(arguments).map(Self::Grep),
            "compare_refs" => read(arguments).map(Self::Compare),
            "track_ref" => read(arguments).map(Self::TrackRef),
            "list_repositories" => Ok(Self::None),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_arguments_become_overrides() {
        let arguments = serde_json::json!({
            "query": "where is the token checked",
            "repositories": ["api"],
            "path": ["src/auth/"],
            "maxTokenBudget": 1200,
        });
        let Some(Ok(ToolArgs::Search(args))) =
            ToolArgs::parse("codebase_search", arguments.as_object().cloned())
        else {
            panic!("codebase_search arguments read");
        };
        let (query, given) = args.into_search();
        assert_eq!(query, "where is the token checked");
        assert_eq!(given.max_token_budget, Some(1200));
        assert_eq!(given.repositories, Some(vec!["api".to_string()]));
        assert_eq!(given.paths, Some(vec!["src/auth/".to_string()]));
        assert_eq!(given.languages, Some(vec![]));
        // `paths` is the name REST and the schema use; `path` (the blueprint's) is read too.
        let arguments = serde_json::json!({ "query": "q", "paths": ["lib/"] });
        let Some(Ok(ToolArgs::Search(args))) =
            ToolArgs::parse("codebase_search", arguments.as_object().cloned())
        else {
            panic!("codebase_search arguments read");
        };
        assert_eq!(args.into_search().1.paths, Some(vec!["lib/".to_string()]));
        // A missing required field is the agent's error, not a panic.
        assert!(matches!(ToolArgs::parse("get_symbol", None), Some(Err(_))));
    }
}
