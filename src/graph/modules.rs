//! Module specifier → repository file, the way TypeScript resolves them: relative paths
//! with extension and `index` probing (including `.js` specifiers that name `.ts`
//! sources), `tsconfig.json` / `jsconfig.json` `paths` and `baseUrl` (nearest config up
//! the tree, `extends` followed), and workspace packages by their `package.json` name.
//! Pure: configuration files come in as text.

use std::collections::HashSet;

use serde_json::Value;

/// Extensions probed after a specifier without one, in TypeScript's order.
const EXTENSIONS: &[&str] = &[
    ".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mts", ".cts", ".mjs", ".cjs",
];

/// Compiler options of one `tsconfig.json` that affect module resolution.
#[derive(Debug, Clone, Default)]
struct TsConfig {
    /// Directory of the config, repository-relative (`""` at the root).
    dir: String,
    /// `baseUrl`, resolved to a repository-relative directory.
    base_url: Option<String>,
    /// `paths` patterns with their substitutions, resolved against `baseUrl` or `dir`.
    paths: Vec<(String, Vec<String>)>,
}

/// A workspace package.
#[derive(Debug, Clone)]
struct Package {
    name: String,
    dir: String,
    entries: Vec<String>,
}

/// Resolves module specifiers to files of one repository.
#[derive(Debug, Clone, Default)]
pub struct ModuleResolver {
    files: HashSet<String>,
    /// The same paths indexed for the other languages' resolution.
    paths: super::packages::Paths,
    configs: Vec<TsConfig>,
    packages: Vec<Package>,
}

/// `tsconfig.json` allows comments and trailing commas; this strips both (outside
/// strings) so that `serde_json` can read it.
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                out.extend(chars.next());
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            (',', _) => {
                // Drop a comma followed (after whitespace) by a closing bracket.
                let rest: String = chars.clone().take_while(|c| c.is_whitespace()).collect();
                let next = chars.clone().nth(rest.chars().count());
                if !matches!(next, Some('}' | ']')) {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

fn parse_json(text: &str) -> Option<Value> {
    serde_json::from_str(&strip_jsonc(text)).ok()
}

/// `a/b/../c/./d` → `a/c/d`; `None` when it climbs above the root.
pub fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// Directory of a repository-relative path (`""` for a root file).
pub fn dir_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

fn join(dir: &str, rel: &str) -> Option<String> {
    if dir.is_empty() {
        normalize(rel)
    } else {
        normalize(&format!("{dir}/{rel}"))
    }
}

impl ModuleResolver {
    /// A resolver over `files` (every indexed path) and `configs` (`(path, text)` of the
    /// repository's `tsconfig.json`, `jsconfig.json` and `package.json` files). Configs
    /// that do not parse are ignored.
    pub fn new(
        files: impl IntoIterator<Item = String>,
        configs: &[(String, String)],
    ) -> ModuleResolver {
        let files: HashSet<String> = files.into_iter().collect();
        let mut resolver = ModuleResolver {
            paths: super::packages::Paths::new(&files),
            files,
            ..ModuleResolver::default()
        };
        let texts: std::collections::HashMap<&str, &str> = configs
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        for (path, text) in configs {
            let name = path.rsplit('/').next().unwrap_or(path);
            match name {
                "tsconfig.json" | "jsconfig.json" => {
                    if let Some(config) = read_tsconfig(path, &texts) {
                        resolver.configs.push(config);
                    }
                }
                "package.json" => {
                    if let Some(package) = read_package(path, text) {
                        resolver.packages.push(package);
                    }
                }
                _ => {}
            }
        }
        // Deepest directories first: the nearest config wins.
        resolver.configs.sort_by_key(|c| {
            std::cmp::Reverse(c.dir.matches('/').count() + !c.dir.is_empty() as usize)
        });
        resolver
            .packages
            .sort_by_key(|p| std::cmp::Reverse(p.name.len()));
        resolver
    }

    /// Whether `path` is an indexed file.
    pub fn has_file(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    /// The files of directory `dir` (not below it) with extension `ext` (no dot): a Go or
    /// Java package.
    pub fn package_files<'a>(
        &'a self,
        dir: &'a str,
        ext: &'a str,
    ) -> impl Iterator<Item = &'a String> + 'a {
        super::packages::package_files(&self.paths, dir, ext)
    }

    /// The file `spec`, imported from the file `from`, names; `None` for external
    /// packages, globals and anything that does not resolve to an indexed file. A Go
    /// import names a package directory, returned with a trailing `/`.
    pub fn resolve(&self, from: &str, spec: &str) -> Option<String> {
        if let Some(resolved) = super::packages::resolve(&self.paths, from, spec) {
            return resolved;
        }
        if spec.starts_with("./") || spec.starts_with("../") || spec == "." || spec == ".." {
            return self.probe(&join(dir_of(from), spec)?);
        }
        if spec.starts_with('/') {
            return None;
        }
        if let Some(config) = self.config_for(from) {
            for (pattern, substitutions) in &config.paths {
                let Some(star) = match_pattern(pattern, spec) else {
                    continue;
                };
                for sub in substitutions {
                    if let Some(found) = normalize(&sub.replace('*', star))
                        .and_then(|candidate| self.probe(&candidate))
                    {
                        return Some(found);
                    }
                }
            }
            if let Some(base) = &config.base_url
                && let Some(found) = join(base, spec).and_then(|c| self.probe(&c))
            {
                return Some(found);
            }
        }
        for package in &self.packages {
            let rest = if spec == package.name {
                ""
            } else if let Some(rest) = spec
                .strip_prefix(package.name.as_str())
                .and_then(|r| r.strip_prefix('/'))
            {
                rest
            } else {
                continue;
            };
            if rest.is_empty() {
                for entry in &package.entries {
                    if let Some(found) = join(&package.dir, entry).and_then(|c| self.probe(&c)) {
                        return Some(found);
                    }
                }
                return ["src/index", "index"]
                    .iter()
                    .find_map(|e| join(&package.dir, e).and_then(|c| self.probe(&c)));
            }
            return join(&package.dir, rest)
                .and_then(|c| self.probe(&c))
                .or_else(|| {
                    join(&package.dir, &format!("src/{rest}")).and_then(|c| self.probe(&c))
                });
        }
        None
    }

    fn config_for(&self, from: &str) -> Option<&TsConfig> {
        let dir = dir_of(from);
        self.configs
            .iter()
            .find(|c| c.dir.is_empty() || dir == c.dir || dir.starts_with(&format!("{}/", c.dir)))
    }

    /// The indexed file a resolved base path names: as is, with a TypeScript source for a
    /// JavaScript extension, with each extension, or as a directory's `index`.
    fn probe(&self, base: &str) -> Option<String> {
        let base = base.trim_end_matches('/');
        if self.files.contains(base) {
            return Some(base.to_string());
        }
        let swaps: &[(&str, &[&str])] = &[
            (".js", &[".ts", ".tsx", ".d.ts"]),
            (".jsx", &[".tsx"]),
            (".mjs", &[".mts", ".d.mts"]),
            (".cjs", &[".cts", ".d.cts"]),
        ];
        for (ext, replacements) in swaps {
            if let Some(stem) = base.strip_suffix(ext) {
                for r in *replacements {
                    let candidate = format!("{stem}{r}");
                    if self.files.contains(&candidate) {
                        return Some(candidate);
                    }
                }
            }
        }
        let index = if base.is_empty() {
            "index".to_string()
        } else {
            format!("{base}/index")
        };
        for stem in [base, index.as_str()] {
            if stem.is_empty() {
                continue;
            }
            for ext in EXTENSIONS {
                let candidate = format!("{stem}{ext}");
                if self.files.contains(&candidate) {
                    return Some(candidate);
                }
            }
        }
        None
    }
}

/// The part of `spec` matched by the `*` of `pattern` (`""` for an exact pattern).
fn match_pattern<'a>(pattern: &str, spec: &'a str) -> Option<&'a str> {
    match pattern.split_once('*') {
        None => (pattern == spec).then_some(""),
        Some((prefix, suffix)) => spec
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(suffix)),
    }
}

/// Reads a tsconfig with its `extends` chain (relative extends only, at most 8 deep).
fn read_tsconfig(path: &str, texts: &std::collections::HashMap<&str, &str>) -> Option<TsConfig> {
    let dir = dir_of(path).to_string();
    let mut chain: Vec<(String, Value)> = Vec::new();
    let mut current = path.to_string();
    for _ in 0..8 {
        let Some(value) = texts.get(current.as_str()).and_then(|t| parse_json(t)) else {
            break;
        };
        let next = value
            .get("extends")
            .and_then(Value::as_str)
            .filter(|e| e.starts_with('.'))
            .and_then(|e| {
                let target = join(dir_of(&current), e)?;
                Some(if target.ends_with(".json") {
                    target
                } else {
                    format!("{target}.json")
                })
            });
        chain.push((dir_of(&current).to_string(), value));
        match next {
            Some(n) => current = n,
            None => break,
        }
    }
    if chain.is_empty() {
        return None;
    }
    let mut config = TsConfig {
        dir,
        ..TsConfig::default()
    };
    let mut paths_from: Option<(String, serde_json::Map<String, Value>)> = None;
    // Nearest first: the first config that sets an option wins.
    for (config_dir, value) in &chain {
        let options = value.get("compilerOptions");
        if config.base_url.is_none()
            && let Some(base) = options
                .and_then(|o| o.get("baseUrl"))
                .and_then(Value::as_str)
        {
            config.base_url = join(config_dir, base);
        }
        if paths_from.is_none()
            && let Some(paths) = options
                .and_then(|o| o.get("paths"))
                .and_then(Value::as_object)
        {
            paths_from = Some((config_dir.clone(), paths.clone()));
        }
    }
    if let Some((config_dir, paths)) = paths_from {
        let root = config.base_url.clone().unwrap_or(config_dir);
        for (pattern, subs) in paths {
            let subs = subs
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .filter_map(|s| join(&root, s))
                        .collect()
                })
                .unwrap_or_default();
            config.paths.push((pattern, subs));
        }
    }
    Some(config)
}

fn read_package(path: &str, text: &str) -> Option<Package> {
    let value = parse_json(text)?;
    let name = value.get("name")?.as_str()?.to_string();
    let entries = ["types", "typings", "source", "module", "main"]
        .iter()
        .filter_map(|k| value.get(*k).and_then(Value::as_str))
        .map(|e| {
            let e = e.trim_start_matches("./");
            e.strip_suffix(".d.ts")
                .or_else(|| e.strip_suffix(".js"))
                .unwrap_or(e)
                .to_string()
        })
        .collect();
    Some(Package {
        name,
        dir: dir_of(path).to_string(),
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver(files: &[&str], configs: &[(&str, &str)]) -> ModuleResolver {
        let configs: Vec<(String, String)> = configs
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        ModuleResolver::new(files.iter().map(|f| f.to_string()), &configs)
    }

    #[test]
    fn relative_specifiers_probe_extensions_and_index() {
        let r = resolver(
            &[
                "src/a.ts",
                "src/lib/index.ts",
                "src/c.tsx",
                "src/d.d.ts",
                "src/e.mts",
            ],
            &[],
        );
        assert_eq!(r.resolve("src/x.ts", "./a").as_deref(), Some("src/a.ts"));
        assert_eq!(r.resolve("src/x.ts", "./a.js").as_deref(), Some("src/a.ts"));
        assert_eq!(
            r.resolve("src/x.ts", "./lib").as_deref(),
            Some("src/lib/index.ts")
        );
        assert_eq!(r.resolve("src/lib/y.ts", "..").as_deref(), None);
        assert_eq!(
            r.resolve("src/lib/y.ts", "../c").as_deref(),
            Some("src/c.tsx")
        );
        assert_eq!(r.resolve("src/x.ts", "./d").as_deref(), Some("src/d.d.ts"));
        assert_eq!(
            r.resolve("src/x.ts", "./e.mjs").as_deref(),
            Some("src/e.mts")
        );
        assert_eq!(r.resolve("src/x.ts", "./missing"), None);
        assert_eq!(r.resolve("src/x.ts", "../../../etc"), None);
        assert_eq!(r.resolve("src/x.ts", "react"), None);
    }

    #[test]
    fn tsconfig_paths_base_url_and_extends() {
        let r = resolver(
            &["app/src/util/log.ts", "app/src/main.ts", "shared/types.ts"],
            &[
                (
                    "tsconfig.base.json",
                    r#"{ // comment
                        "compilerOptions": { "paths": { "@shared/*": ["shared/*"], }, },
                    }"#,
                ),
                (
                    "app/tsconfig.json",
                    r#"{ "extends": "../tsconfig.base.json", /* c */ "compilerOptions": { "baseUrl": "src" } }"#,
                ),
            ],
        );
        assert_eq!(
            r.resolve("app/src/main.ts", "util/log").as_deref(),
            Some("app/src/util/log.ts")
        );
        // `paths` of the extended config resolve against the nearest baseUrl.
        assert_eq!(r.resolve("app/src/main.ts", "@shared/types"), None);
        let r = resolver(
            &["shared/types.ts", "app/main.ts"],
            &[(
                "tsconfig.json",
                r#"{ "compilerOptions": { "paths": { "@shared/*": ["./shared/*"] } } }"#,
            )],
        );
        assert_eq!(
            r.resolve("app/main.ts", "@shared/types").as_deref(),
            Some("shared/types.ts")
        );
    }

    #[test]
    fn workspace_packages_by_name() {
        let r = resolver(
            &[
                "packages/core/src/index.ts",
                "packages/core/src/util.ts",
                "packages/ui/lib/main.ts",
            ],
            &[
                ("packages/core/package.json", r#"{ "name": "@acme/core" }"#),
                (
                    "packages/ui/package.json",
                    r#"{ "name": "@acme/ui", "main": "./lib/main.js" }"#,
                ),
            ],
        );
        assert_eq!(
            r.resolve("x.ts", "@acme/core").as_deref(),
            Some("packages/core/src/index.ts")
        );
        assert_eq!(
            r.resolve("x.ts", "@acme/core/util").as_deref(),
            Some("packages/core/src/util.ts")
        );
        assert_eq!(
            r.resolve("x.ts", "@acme/ui").as_deref(),
            Some("packages/ui/lib/main.ts")
        );
        assert_eq!(r.resolve("x.ts", "@acme/other"), None);
    }

    #[test]
    fn jsonc_keeps_strings_intact() {
        let v = parse_json(r#"{ "a": "http://x/*y*/", "b": [1, 2,], } // end"#).expect("parses");
        assert_eq!(v["a"], "http://x/*y*/");
        assert_eq!(v["b"].as_array().map(Vec::len), Some(2));
    }
}
