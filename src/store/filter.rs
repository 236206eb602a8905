//! Chunk filters and their translation into store predicates (pure).

use serde::{Deserialize, Serialize};

/// Restricts chunk queries. Empty lists mean "no restriction"; a chunk must match every
/// non-empty list (and any one entry within a list).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct ChunkFilter {
    /// Repository ids.
    pub repos: Vec<String>,
    /// Paths: a directory prefix (`src/auth/`), an exact file (`src/a.ts`) or a glob
    /// (`**/*.test.ts`, `src/*/index.ts`).
    pub paths: Vec<String>,
    /// Language ids (`typescript`, `tsx`, `javascript`).
    pub languages: Vec<String>,
    /// Node kinds (`function`, `method`, `class`, …).
    pub kinds: Vec<String>,
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
/// [`ChunkFilter::matches_path`].
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

impl ChunkFilter {
    /// Whether any path entry is a glob (needs the exact [`ChunkFilter::matches_path`] check).
    pub fn has_glob(&self) -> bool {
        self.paths.iter().any(|p| is_glob(p))
    }

    /// Whether the filter restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.repos.is_empty()
            && self.paths.is_empty()
            && self.languages.is_empty()
            && self.kinds.is_empty()
    }

    /// The filter as a SQL predicate over the chunk table's columns (`repo_id`,
    /// `relative_path`, `language`, `node_kind`), or `None` when it restricts nothing.
    pub fn to_sql(&self) -> Option<String> {
        let mut clauses = Vec::new();
        clauses.extend(any_of("repo_id", &self.repos));
        clauses.extend(any_of("language", &self.languages));
        clauses.extend(any_of("node_kind", &self.kinds));
        if !self.paths.is_empty() {
            let parts: Vec<String> = self
                .paths
                .iter()
                .map(|p| {
                    let p = p.trim_start_matches("./");
                    if is_glob(p) {
                        // Brace/class globs are not expressible in LIKE: match everything
                        // here and let `matches_path` decide.
                        if p.contains(['[', '{']) {
                            "relative_path IS NOT NULL".to_string()
                        } else {
                            format!("relative_path LIKE {} ESCAPE '\\'", quote(&glob_to_like(p)))
                        }
                    } else if p.ends_with('/') || p.is_empty() {
                        format!(
                            "relative_path LIKE {} ESCAPE '\\'",
                            quote(&format!("{}%", glob_to_like(p)))
                        )
                    } else {
                        // A file, or a directory written without its slash.
                        format!(
                            "(relative_path = {} OR relative_path LIKE {} ESCAPE '\\')",
                            quote(p),
                            quote(&format!("{}/%", glob_to_like(p)))
                        )
                    }
                })
                .collect();
            clauses.push(if parts.len() == 1 {
                parts.into_iter().next().unwrap_or_default()
            } else {
                format!("({})", parts.join(" OR "))
            });
        }
        (!clauses.is_empty()).then(|| clauses.join(" AND "))
    }

    /// Exact path check (globs with `globset` semantics: `*` stays within a path segment,
    /// `**` crosses them). Used to refine results of the pushed-down `LIKE` superset.
    pub fn matches_path(&self, relative_path: &str) -> bool {
        if self.paths.is_empty() {
            return true;
        }
        self.paths.iter().any(|p| {
            let p = p.trim_start_matches("./");
            if is_glob(p) {
                globset::GlobBuilder::new(p)
                    .literal_separator(true)
                    .build()
                    .map(|g| g.compile_matcher().is_match(relative_path))
                    .unwrap_or(false)
            } else if p.ends_with('/') || p.is_empty() {
                relative_path.starts_with(p)
            } else {
                relative_path == p
                    || relative_path
                        .strip_prefix(p)
                        .is_some_and(|rest| rest.starts_with('/'))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_filter_is_no_predicate() {
        assert_eq!(ChunkFilter::default().to_sql(), None);
    }

    #[test]
    fn builds_quoted_predicates() {
        let f = ChunkFilter {
            repos: vec!["r1".into()],
            paths: vec!["src/auth/".into(), "lib/o'neil.ts".into()],
            languages: vec!["typescript".into(), "tsx".into()],
            kinds: vec![],
        };
        assert_eq!(
            f.to_sql().as_deref(),
            Some(
                "repo_id = 'r1' AND language IN ('typescript', 'tsx') AND \
                 (relative_path LIKE 'src/auth/%' ESCAPE '\\' OR \
                 (relative_path = 'lib/o''neil.ts' OR relative_path LIKE 'lib/o''neil.ts/%' ESCAPE '\\'))"
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
        };
        assert!(f.matches_path("src/a.ts"));
        assert!(!f.matches_path("src/deep/a.ts"), "* stays within a segment");
        let f = ChunkFilter {
            paths: vec!["src/auth".into()],
            ..Default::default()
        };
        assert!(f.matches_path("src/auth/token.ts"));
        assert!(f.matches_path("src/auth"));
        assert!(!f.matches_path("src/authz/x.ts"));
    }
}
