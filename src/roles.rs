//! What a repository path is, for ranking (pure): product source, tests, fixtures,
//! examples and docs, type declarations, or generated code — by built-in rules
//! ([`PathRole::of`]) or a repository's own `pathRoles` setting ([`PathRoles`]). Search
//! reads it ([`crate::search::prior`]); the indexer checks the setting when it is saved.

use std::collections::BTreeMap;

/// What a file's path says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::EnumString, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum PathRole {
    /// Code of the product.
    Source,
    /// Tests and specs (`test/`, `__tests__/`, `e2e/`, `*.test.ts`, `*.spec.js`).
    Test,
    /// Test data (`fixtures/`, `__mocks__/`, `testdata/`, `__snapshots__/`).
    Fixture,
    /// Examples, demos, docs sites and benchmarks.
    Example,
    /// Type declaration files (`*.d.ts`).
    Declaration,
    /// Generated, built or vendored code (`dist/`, `build/`, `vendor/`, `*.min.js`).
    Generated,
    /// Documentation (Markdown, reStructuredText).
    Docs,
    /// Configuration (YAML, JSON, TOML, Dockerfiles).
    Config,
}

const FIXTURE_DIRS: &[&str] = &[
    "__fixtures__",
    "__mocks__",
    "__snapshots__",
    "fixture",
    "fixtures",
    "test-data",
    "testdata",
];
const TEST_DIRS: &[&str] = &[
    "__tests__",
    "__typetests__",
    "e2e",
    "spec",
    "specs",
    "test",
    "tests",
    "typetests",
];
const EXAMPLE_DIRS: &[&str] = &[
    "bench",
    "benchmark",
    "benchmarks",
    "demo",
    "demos",
    "docs",
    "example",
    "examples",
    "sample",
    "samples",
    "website",
];
const GENERATED_DIRS: &[&str] = &[
    "__generated__",
    "build",
    "dist",
    "generated",
    "node_modules",
    "out",
    "vendor",
    "vendored",
];

impl PathRole {
    /// The role of a repository-relative path.
    ///
    /// ```
    /// use sextant::roles::PathRole;
    /// assert_eq!(PathRole::of("src/runner.ts"), PathRole::Source);
    /// assert_eq!(PathRole::of("src/__tests__/runner.test.ts"), PathRole::Test);
    /// assert_eq!(PathRole::of("test/fixtures/a.js"), PathRole::Fixture);
    /// assert_eq!(PathRole::of("types/index.d.ts"), PathRole::Declaration);
    /// ```
    pub fn of(path: &str) -> Self {
        let lower = path.to_ascii_lowercase();
        let mut segments: Vec<&str> = lower.split('/').collect();
        let file = segments.pop().unwrap_or("");
        let any_dir = |names: &[&str]| segments.iter().any(|s| names.contains(s));
        let category =
            crate::parse::Language::from_path(std::path::Path::new(path)).map(|l| l.category());
        if any_dir(GENERATED_DIRS) || file.contains(".min.") || file.contains(".bundle.") {
            Self::Generated
        } else if category == Some(crate::parse::Category::Docs) {
            Self::Docs
        } else if category == Some(crate::parse::Category::Config) {
            Self::Config
        } else if any_dir(FIXTURE_DIRS) || file.contains(".fixture.") {
            Self::Fixture
        } else if any_dir(TEST_DIRS)
            || [".test.", ".spec.", "_test.", "-test.", ".test-d.", "_spec."]
                .iter()
                .any(|m| file.contains(m))
            || is_test_file_by_convention(path.rsplit('/').next().unwrap_or(path))
        {
            Self::Test
        } else if any_dir(EXAMPLE_DIRS) {
            Self::Example
        } else if [".d.ts", ".d.mts", ".d.cts"]
            .iter()
            .any(|e| file.ends_with(e))
        {
            Self::Declaration
        } else {
            Self::Source
        }
    }
}

/// Test files named by their language's convention rather than a marker (Python's
/// `test_x.py`, Java's `XTest.java`): the language table's rule for the file's language.
fn is_test_file_by_convention(file: &str) -> bool {
    crate::parse::Language::from_path(std::path::Path::new(file))
        .is_some_and(|language| (language.def().test_file)(file))
}

/// A repository's own path roles (its `pathRoles` setting: role name → globs), checked
/// before the built-in rules of [`PathRole::of`]: `{"source": ["test/helpers/**"]}`
/// makes shared test helpers count as code, `{"generated": ["src/gen/**"]}` marks code
/// a generator wrote.
#[derive(Debug, Clone, Default)]
pub struct PathRoles {
    rules: Vec<(globset::GlobMatcher, PathRole)>,
}

impl PathRoles {
    /// Compiles a `pathRoles` setting; the error names the role or glob at fault and
    /// the roles there are.
    pub fn compile(setting: &BTreeMap<String, Vec<String>>) -> Result<Self, String> {
        let mut rules = Vec::new();
        for (name, globs) in setting {
            let role: PathRole = name.parse().map_err(|_| {
                format!(
                    "pathRoles: unknown role {name:?}; use source, test, fixture, example, \
                     declaration, generated, docs or config"
                )
            })?;
            for glob in globs {
                let matcher = globset::Glob::new(glob)
                    .map_err(|e| format!("pathRoles.{name}: bad glob {glob:?}: {e}"))?
                    .compile_matcher();
                rules.push((matcher, role));
            }
        }
        Ok(Self { rules })
    }

    /// The role of `path`: the first rule whose glob matches, else [`PathRole::of`].
    pub fn role_of(&self, path: &str) -> PathRole {
        self.rules
            .iter()
            .find(|(glob, _)| glob.is_match(path))
            .map_or_else(|| PathRole::of(path), |(_, role)| *role)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_get_their_roles() {
        let cases = [
            ("lib/runner.js", PathRole::Source),
            ("packages/core/src/__tests__/a.ts", PathRole::Test),
            ("test/unit/runner.spec.cjs", PathRole::Test),
            ("src/util.test.ts", PathRole::Test),
            ("e2e/custom/sequencer.js", PathRole::Test),
            ("test/integration/fixtures/a.fixture.js", PathRole::Fixture),
            ("src/__mocks__/fs.ts", PathRole::Fixture),
            ("examples/basic/index.ts", PathRole::Example),
            ("lib/types.d.ts", PathRole::Declaration),
            ("dist/index.min.js", PathRole::Generated),
            ("packages/test-utils/src/index.ts", PathRole::Source),
            ("pkg/store_test.go", PathRole::Test),
            ("src/app/test_billing.py", PathRole::Test),
            ("src/app/contest.py", PathRole::Source),
            ("src/main/java/a/BillingTest.java", PathRole::Test),
            ("src/main/java/a/Contest.java", PathRole::Source),
            ("README.md", PathRole::Docs),
            ("docs/guide/config.rst", PathRole::Docs),
            (".github/workflows/ci.yml", PathRole::Config),
            ("deploy/Dockerfile", PathRole::Config),
            ("package.json", PathRole::Config),
            ("scripts/release.sh", PathRole::Source),
        ];
        for (path, role) in cases {
            assert_eq!(PathRole::of(path), role, "{path}");
        }
    }

    #[test]
    fn a_repository_can_give_its_own_paths_roles() {
        let setting = BTreeMap::from([
            ("source".to_string(), vec!["test/helpers/**".to_string()]),
            ("generated".to_string(), vec!["src/gen/**".to_string()]),
        ]);
        let roles = PathRoles::compile(&setting).unwrap();
        assert_eq!(roles.role_of("test/helpers/setup.js"), PathRole::Source);
        assert_eq!(roles.role_of("src/gen/api.ts"), PathRole::Generated);
        assert_eq!(
            roles.role_of("test/unit/a.spec.js"),
            PathRole::Test,
            "built-in rules"
        );
        let bad = BTreeMap::from([("tests".to_string(), vec!["x/**".to_string()])]);
        assert!(
            PathRoles::compile(&bad)
                .unwrap_err()
                .contains("unknown role \"tests\"")
        );
        let glob = BTreeMap::from([("test".to_string(), vec!["a/[".to_string()])]);
        assert!(PathRoles::compile(&glob).unwrap_err().contains("bad glob"));
    }
}
