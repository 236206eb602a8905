//! Chunk filters and their translation into store predicates (pure).

use serde::{Deserialize, Serialize};

/// Restricts chunk queries. Empty lists mean "no restriction"; a chunk must match every
/// non-empty list (and any one entry within a list).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct ChunkFilter {
    /// Repository ids.
    // The schema bounds repeat `MAX_FILTER_ENTRIES` (a literal is required here; a test
    // in `api` checks that they agree).
    #[schema(max_items = 100)]
    #[serde(alias = "repos")]
    pub repositories: Vec<String>,
    /// Paths: a directory prefix (`src/auth/`), an exact file (`src/a.ts`) or a glob
    /// (`**/*.test.ts`, `src/*/index.ts`).
    #[schema(max_items = 100)]
    pub paths: Vec<String>,
    /// Language ids (`typescript`, `tsx`, `javascript`, `python`, `go`, `rust`, `java`).
    #[schema(max_items = 100)]
    pub languages: Vec<String>,
    /// Node kinds (`function`, `method`, `class`, …).
    #[schema(max_items = 100)]
    pub kinds: Vec<String>,
    /// What the files are for: `code`, `docs` (Markdown, reStructuredText), `config`
    /// (YAML, JSON, TOML, Dockerfiles); `kind` is read as well.
    #[schema(max_items = 3)]
    #[serde(alias = "kind")]
    pub categories: Vec<String>,
    /// A ref the repositories track besides their default one (a branch, tag or commit
    /// added with `repo ref add`): the code as it is on that ref. Default: each
    /// repository's default ref.
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub git_ref: Option<String>,
    /// Set by the service, never by a request: repository ids not searched (the tracked
    /// refs not asked for).
    #[serde(skip)]
    pub excluded: Vec<String>,
    /// Set by the service, never by a request: for a search on a tracked ref, each
    /// repository's files the ref replaces or deletes.
    #[serde(skip)]
    pub views: Vec<RefView>,
}

/// A repository seen through one of its tracked refs: the ref's own rows, and the
/// repository's rows except the files the ref holds its own version (or deletion) of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefView {
    /// The repository's id.
    pub repository: String,
    /// The tracked ref's id.
    pub tracked: String,
    /// Paths of the repository the ref hides.
    pub hidden: std::collections::HashSet<String>,
}

fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

fn any_of(column: &str, values: &[String]) -> Option<String> {
    match values {
        [] => None,
        [one] => Some(format!("{column} = {}", quote(one))),
        many => Some(format!(
            "{column} IN ({})",
            many.iter().map(|v| quote(v)).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Translates a glob into a SQL `LIKE` pattern (escape character `\`). `*` and `**` become
/// `%`, `?` becomes `_`; LIKE's own wildcards are escaped. `*` therefore also matches
/// across `/`: the pattern is a superset, exact glob semantics are re-checked by
/// [`PathMatcher`].
pub fn glob_to_like(glob: &str) -> String {
    let mut out = String::with_capacity(glob.len() + 4);
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                while chars.peek() == Some(&'*') {
                    chars.next();
                }
                if !out.ends_with('%') {
                    out.push('%');
                }
            }
            '?' => out.push('_'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether a path filter entry is a glob (rather than a prefix or an exact file).
pub(crate) fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '[', '{'])
}

/// Most entries one filter list (`repositories`, `paths`, `languages`, `kinds`) may hold: the
/// store predicate and the path matcher grow with them, so a request cannot make either
/// unbounded.
pub const MAX_FILTER_ENTRIES: usize = 100;

/// Longest filter entry, in bytes.
pub const MAX_FILTER_ENTRY_BYTES: usize = 1024;

/// Exact path check compiled once per query from a [`ChunkFilter`]'s `paths` (see
/// [`ChunkFilter::path_matcher`]): globs with `globset` semantics (`*` stays within a path
/// segment, `**` crosses them), directory prefixes and exact files. Used to refine rows
/// of the pushed-down `LIKE` superset.
#[derive(Debug, Clone, Default)]
pub struct PathMatcher {
    /// No path restriction at all.
    any: bool,
    globs: globset::GlobSet,
    /// Entries ending in `/` (or empty): a prefix.
    prefixes: Vec<String>,
    /// Entries naming a file or a directory written without its slash.
    files: Vec<String>,
}

impl PathMatcher {
    /// Whether `relative_path` passes the filter's paths.
    pub fn is_match(&self, relative_path: &str) -> bool {
        self.any
            || self.prefixes.iter().any(|p| relative_path.starts_with(p))
            || self.files.iter().any(|p| {
                relative_path == p
                    || relative_path
                        .strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
            || self.globs.is_match(relative_path)
    }
}

impl ChunkFilter {
    /// Whether any path entry is a glob (needs the exact [`PathMatcher`] check).
    pub fn has_glob(&self) -> bool {
        self.paths.iter().any(|p| is_glob(p))
    }

    /// Whether a file of `repository` is in scope as far as tracked refs go: not of an
    /// excluded repository, and not hidden by the ref a view reads.
    pub fn admits_file(&self, repository: &str, path: &str) -> bool {
        !self.excluded.iter().any(|e| e == repository)
            && !self
                .views
                .iter()
                .any(|v| v.repository == repository && v.hidden.contains(path))
    }

    /// Whether the filter restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.excluded.is_empty()
            && self.views.is_empty()
            && self.repositories.is_empty()
            && self.paths.is_empty()
            && self.languages.is_empty()
            && self.kinds.is_empty()
            && self.categories.is_empty()
    }

    /// Checks the filter's size and its globs; the message names the field and the limit.
    pub fn validate(&self) -> Result<(), String> {
        for (name, list) in [
            ("repositories", &self.repositories),
            ("paths", &self.paths),
            ("languages", &self.languages),
            ("kinds", &self.kinds),
            ("categories", &self.categories),
        ] {
            if list.len() > MAX_FILTER_ENTRIES {
                return Err(format!(
                    "`{name}` has {} entries; at most {MAX_FILTER_ENTRIES} are allowed \
                     (use a directory prefix or one glob such as `src/**/*.ts` instead of many paths)",
                    list.len()
                ));
            }
            if let Some(long) = list.iter().find(|v| v.len() > MAX_FILTER_ENTRY_BYTES) {
                return Err(format!(
                    "an entry of `{name}` is {} bytes long; at most {MAX_FILTER_ENTRY_BYTES} are allowed",
                    long.len()
                ));
            }
        }
        if let Some(bad) = self
            .categories
            .iter()
            .find(|c| c.parse::<crate::parse::Category>().is_err())
        {
            return Err(format!(
                "`categories` entry `{bad}` is not one of `code`, `docs`, `config`"
            ));
        }
        self.path_matcher().map(|_| ())
    }

    /// The language ids of the filter's `categories` (empty when it names none).
    pub fn category_languages(&self) -> Vec<String> {
        let wanted: Vec<crate::parse::Category> = self
            .categories
            .iter()
            .filter_map(|c| c.parse().ok())
            .collect();
        crate::parse::Language::all()
            .filter(|l| wanted.contains(&l.category()))
            .map(|l| l.id().to_string())
            .collect()
    }

    /// The exact path check, compiled once (one `GlobSet` for every glob entry). Fails
    /// with a message naming the entry when a glob does not parse.
    pub fn path_matcher(&self) -> Result<PathMatcher, String> {
        let mut matcher = PathMatcher {
            any: self.paths.is_empty(),
            ..PathMatcher::default()
        };
        let mut globs = globset::GlobSetBuilder::new();
        for p in &self.paths {
            let p = p.trim_start_matches("./");
            if is_glob(p) {
                let glob = globset::GlobBuilder::new(p)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| format!("`paths` entry `{p}` is not a valid glob: {e}"))?;
                globs.add(glob);
            } else if p.ends_with('/') || p.is_empty() {
                matcher.prefixes.push(p.to_string());
            } else {
                matcher.files.push(p.to_string());
            }
        }
        matcher.globs = globs
            .build()
            .map_err(|e| format!("`paths` globs cannot be compiled: {e}"))?;
        Ok(matcher)
    }

    /// The filter as a SQL predicate over the chunk table's columns (`repo_id`,
    /// `relative_path`, `language`, `node_kind`), or `None` when it restricts nothing.
    ///
    /// Its size is bounded by [`MAX_FILTER_ENTRIES`] per list (checked by
    /// [`ChunkFilter::validate`]): value lists become one `IN`, path entries one flat
    /// `OR` of at most that many terms, and any brace or class glob (not expressible in
    /// `LIKE`) drops the path clause altogether, leaving the [`PathMatcher`] to decide.
    pub fn to_sql(&self) -> Option<String> {
        let mut clauses = Vec::new();
        clauses.extend(any_of("repo_id", &self.repositories));
        if let Some(excluded) = any_of("repo_id", &self.excluded) {
            clauses.push(format!("NOT ({excluded})"));
        }
        for view in &self.views {
            let mut hidden: Vec<String> = view.hidden.iter().cloned().collect();
            hidden.sort();
            if let Some(paths) = any_of("relative_path", &hidden) {
                clauses.push(format!(
                    "NOT (repo_id = {} AND {paths})",
                    quote(&view.repository)
                ));
            }
        }
        clauses.extend(any_of("language", &self.languages));
        clauses.extend(any_of("node_kind", &self.kinds));
        if !self.categories.is_empty() {
            let languages = self.category_languages();
            // A category with no language can match nothing.
            clauses.push(any_of("language", &languages).unwrap_or_else(|| "false".into()));
        }
        let unexpressible = self
            .paths
            .iter()
            .any(|p| is_glob(p) && p.contains(['[', '{']));
        if !self.paths.is_empty() && !unexpressible {
            let mut exact = Vec::new();
            let mut parts: Vec<String> = Vec::new();
            for p in &self.paths {
                let p = p.trim_start_matches("./");
                if is_glob(p) {
                    parts.push(format!(
                        "relative_path LIKE {} ESCAPE '\\'",
                        quote(&glob_to_like(p))
                    ));
                } else if p.ends_with('/') || p.is_empty() {
                    parts.push(format!(
                        "relative_path LIKE {} ESCAPE '\\'",
                        quote(&format!("{}%", glob_to_like(p)))
                    ));
                } else {
                    // A file, or a directory written without its slash.
                    exact.push(p.to_string());
                    parts.push(format!(
                        "relative_path LIKE {} ESCAPE '\\'",
                        quote(&format!("{}/%", glob_to_like(p)))
                    ));
                }
            }
            parts.extend(any_of("relative_path", &exact));
            clauses.push(if parts.len() == 1 {
                parts.into_iter().next().unwrap_or_default()
            } else {
                format!("({})", parts.join(" OR "))
            });
        }
        (!clauses.is_empty()).then(|| clauses.join(" AND "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ref_view_hides_the_repository_files_it_replaces() {
        let f = ChunkFilter {
            repositories: vec!["r".into(), "r-ref".into()],
            excluded: vec!["other-ref".into()],
            views: vec![RefView {
                repository: "r".into(),
                tracked: "r-ref".into(),
                hidden: ["b.ts".to_string(), "a'.ts".to_string()].into(),
            }],
            ..ChunkFilter::default()
        };
        assert_eq!(
            f.to_sql().as_deref(),
            Some(
                "repo_id IN ('r', 'r-ref') AND NOT (repo_id = 'other-ref') AND \
                 NOT (repo_id = 'r' AND relative_path IN ('a''.ts', 'b.ts'))"
            )
        );
        assert!(!f.admits_file("r", "b.ts"));
        assert!(f.admits_file("r-ref", "b.ts"));
        assert!(f.admits_file("r", "c.ts"));
        assert!(!f.admits_file("other-ref", "c.ts"));
    }

    #[test]
    fn empty_filter_is_no_predicate() {
        assert_eq!(ChunkFilter::default().to_sql(), None);
    }

    #[test]
    fn builds_quoted_predicates() {
        let f = ChunkFilter {
            repositories: vec!["r1".into()],
            paths: vec!["src/auth/".into(), "lib/o'neil.ts".into()],
            languages: vec!["typescript".into(), "tsx".into()],
            ..ChunkFilter::default()
        };
        assert_eq!(
            f.to_sql().as_deref(),
            Some(
                "repo_id = 'r1' AND language IN ('typescript', 'tsx') AND \
                 (relative_path LIKE 'src/auth/%' ESCAPE '\\' OR \
                 relative_path LIKE 'lib/o''neil.ts/%' ESCAPE '\\' OR \
                 relative_path = 'lib/o''neil.ts')"
            )
        );
    }

    #[test]
    fn globs_become_like_patterns_and_are_refined_exactly() {
        assert_eq!(glob_to_like("**/*.test.ts"), "%/%.test.ts");
        assert_eq!(glob_to_like("src/a_b%?.ts"), "src/a\\_b\\%_.ts");
        let f = ChunkFilter {
            paths: vec!["src/*.ts".into()],
            ..Default::default()
        }
        .path_matcher()
        .unwrap();
        assert!(f.is_match("src/a.ts"));
        assert!(!f.is_match("src/deep/a.ts"), "* stays within a segment");
        let f = ChunkFilter {
            paths: vec!["src/auth".into(), "lib/".into(), "**/*.{md,txt}".into()],
            ..Default::default()
        }
        .path_matcher()
        .unwrap();
        assert!(f.is_match("src/auth/token.ts"));
        assert!(f.is_match("src/auth"));
        assert!(!f.is_match("src/authz/x.ts"));
        assert!(f.is_match("lib/x/y.ts"));
        assert!(f.is_match("docs/a.md") && !f.is_match("docs/a.rs"));
        assert!(
            ChunkFilter::default()
                .path_matcher()
                .unwrap()
                .is_match("any")
        );
    }

    #[test]
    fn filters_are_bounded_and_globs_checked() {
        let many = |n: usize| (0..n).map(|i| format!("src/f{i}.ts")).collect::<Vec<_>>();
        let ok = ChunkFilter {
            paths: many(MAX_FILTER_ENTRIES),
            ..Default::default()
        };
        assert_eq!(ok.validate(), Ok(()));
        // One flat OR of at most one LIKE per entry plus one IN list: bounded.
        let sql = ok.to_sql().unwrap();
        assert_eq!(sql.matches(" OR ").count(), MAX_FILTER_ENTRIES);
        for field in ["repositories", "paths", "languages", "kinds"] {
            let mut f = ChunkFilter::default();
            let list = match field {
                "repositories" => &mut f.repositories,
                "paths" => &mut f.paths,
                "languages" => &mut f.languages,
                _ => &mut f.kinds,
            };
            *list = many(MAX_FILTER_ENTRIES + 1);
            let e = f.validate().unwrap_err();
            assert!(e.contains(field) && e.contains("at most"), "{e}");
        }
        let long = ChunkFilter {
            kinds: vec!["k".repeat(MAX_FILTER_ENTRY_BYTES + 1)],
            ..Default::default()
        };
        assert!(long.validate().unwrap_err().contains("bytes"));
        let bad = ChunkFilter {
            paths: vec!["src/{a,b".into()],
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("src/{a,b"));
        // Brace globs cannot be pushed down: no path clause, the matcher decides.
        let braces = ChunkFilter {
            paths: vec!["src/{a,b}.ts".into(), "lib/".into()],
            ..Default::default()
        };
        assert_eq!(braces.to_sql(), None);
    }

    #[test]
    fn categories_become_their_languages() {
        let f = ChunkFilter {
            categories: vec!["docs".into()],
            ..ChunkFilter::default()
        };
        assert_eq!(
            f.to_sql().as_deref(),
            Some("language IN ('markdown', 'rst')")
        );
        assert_eq!(f.validate(), Ok(()));
        let bad = ChunkFilter {
            categories: vec!["prose".into()],
            ..ChunkFilter::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .contains("`code`, `docs`, `config`")
        );
    }
}
