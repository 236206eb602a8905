//! Raters: what gives each link its [`Rubric`]. The default, [`StructuralRater`], is
//! offline and deterministic.

use async_trait::async_trait;

use super::{Link, Relation, Rubric, ScoutQuery};

/// A rating and, when something must be done, what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rating {
    /// The rubric.
    pub rubric: Rubric,
    /// What to do (`add a case for the new variant`), for links that must change.
    pub action: Option<String>,
}

/// Rates links for a query. One call rates a batch (the links of one explored node).
#[async_trait]
pub trait Rater: Send + Sync {
    /// One rating per link, in order.
    async fn rate(&self, query: &ScoutQuery, links: &[Link]) -> Vec<Rating>;
}

/// Rates from what the graph and the syntax say. The rules, in order:
///
/// 1. **Imports and re-exports** (an `import`, `export … from`, or `export { … }`
///    statement, or a file-level import): relevance 1, risk 1, tag `import` or
///    `re-export`. They name the symbol without depending on its shape: safe to ignore.
/// 2. **Exhaustive uses** of an enum or a type alias (a union): in the neighbour's source,
///    a `Record<T, …>` or a mapped type `[K in T]` (tags `exhaustive`, `record`), a
///    `switch` with `case T.…` (or, for a union, `case '…'`) (tag `pattern-match`, plus
///    `exhaustive` when a `never` / `assertNever` guard or `satisfies` closes it): risk
///    5, relevance 5. Adding a variant breaks them.
/// 3. **Implementations** of an interface (`implements`), **overrides** of a method
///    (`overrides`: a subclass's method or an implementation's member of the same name):
///    risk 5. A new member or a changed signature breaks them.
/// 4. **Subclasses** (`subclass`): risk 4.
/// 5. **Call sites** (`call-site`): risk 4 when the called symbol is the one the query
///    names (a changed signature breaks the call), 2 further out (callers of callers
///    change only if their callee's behaviour does).
/// 6. **Type uses** (`type-only`): risk 3 next to the symbol, 2 further out.
/// 7. **Other references** (`reference`): risk 3 next to the symbol, 2 further out.
///
/// A neighbour in a test file (`*.test.*`, `*.spec.*`, `__tests__/`, `test/`, `tests/`)
/// also gets `test` and one point less relevance. Complexity grows with the neighbour's
/// length (1 + lines / 25, at most 5); confidence is 5 for a link the graph resolved with
/// certainty, 4 for a syntax match, 3 otherwise.
#[derive(Debug, Clone, Copy, Default)]
pub struct StructuralRater;

#[async_trait]
impl Rater for StructuralRater {
    async fn rate(&self, _query: &ScoutQuery, links: &[Link]) -> Vec<Rating> {
        links.iter().map(rate_link).collect()
    }
}

/// The rules above for one link (pure).
pub fn rate_link(link: &Link) -> Rating {
    let near = link.depth == 0;
    let lines = (link.neighbour.end_line - link.neighbour.start_line).max(0);
    let complexity = (1 + lines / 25).clamp(1, 5) as u8;
    let confidence = if link.certain { 5 } else { 3 };
    let node = &link.node;
    let neighbour = &link.neighbour;
    let rating = |relevance: u8, risk: u8, tags: &[&str], action: Option<String>| Rating {
        rubric: Rubric {
            relevance,
            risk,
            complexity,
            confidence,
            tags: tags.iter().map(|t| t.to_string()).collect(),
        },
        action,
    };
    let mut out = match link.relation {
        _ if matches!(neighbour.kind.as_str(), "re-export" | "export") => {
            let mut r = rating(1, 1, &["re-export"], None);
            r.rubric.complexity = 1;
            r
        }
        Relation::Imports => rating(1, 1, &["import"], None),
        _ if neighbour.kind == "import" => rating(1, 1, &["import"], None),
        relation => match exhaustive_use(&link.source, node) {
            Some(found) if near || relation != Relation::Calls => {
                let mut r = rating(5, 5, &found.tags, Some(found.action));
                r.rubric.confidence = 4;
                r
            }
            _ => match relation {
                Relation::Implements => rating(
                    4,
                    if near { 5 } else { 3 },
                    &["implements"],
                    near.then(|| format!("give it any member added to `{}`", node.name)),
                ),
                Relation::Overrides => rating(
                    4,
                    if near { 5 } else { 3 },
                    &["overrides"],
                    near.then(|| {
                        format!(
                            "rename it or change its signature with `{}`",
                            node.breadcrumb
                        )
                    }),
                ),
                Relation::Extends => rating(
                    4,
                    if near { 4 } else { 2 },
                    &["subclass"],
                    near.then(|| {
                        format!("check what it overrides or inherits from `{}`", node.name)
                    }),
                ),
                Relation::Calls => rating(
                    4,
                    if near { 4 } else { 2 },
                    &["call-site"],
                    near.then(|| {
                        format!(
                            "update this call of `{}` if its signature or behaviour changes",
                            node.name
                        )
                    }),
                ),
                Relation::UsesType => rating(3, if near { 3 } else { 2 }, &["type-only"], None),
                _ => rating(3, if near { 3 } else { 2 }, &["reference"], None),
            },
        },
    };
    if is_test_path(&neighbour.path) {
        out.rubric.tags.push("test".into());
        out.rubric.relevance = out.rubric.relevance.saturating_sub(1).max(1);
    }
    out
}

/// What an exhaustive use of `node` looks like in `source`.
struct Exhaustive {
    tags: Vec<&'static str>,
    action: String,
}

/// Finds a `Record<T, …>`, a mapped type over `T`, or a `switch` over `T`'s variants in
/// `source` (only when `node` is an enum or a type alias: their variants are what a
/// change adds).
fn exhaustive_use(source: &str, node: &super::Node) -> Option<Exhaustive> {
    if !matches!(node.kind.as_str(), "enum" | "type") || source.is_empty() {
        return None;
    }
    let name = node.name.as_str();
    let code = strip_comments(source);
    let names_it =
        |prefix: &str| find_word(&code, name, |before| before.trim_end().ends_with(prefix));
    let keyed = names_it("Record<") || mapped_over(&code, name);
    let cases = code.contains("switch")
        && (code.contains(&format!("case {name}."))
            || (node.kind == "type"
                && (code.contains("case '")
                    || code.contains("case \"")
                    || code.contains("case `"))
                && find_word(&code, name, |_| true)));
    let guarded =
        code.contains("never") || code.contains("assertNever") || code.contains("satisfies");
    if keyed {
        return Some(Exhaustive {
            tags: vec!["exhaustive", "record"],
            action: format!("add an entry for the new variant of `{name}`"),
        });
    }
    if cases {
        let mut tags = vec!["pattern-match"];
        if guarded {
            tags.push("exhaustive");
        }
        return Some(Exhaustive {
            tags,
            action: format!("add a `case` for the new variant of `{name}`"),
        });
    }
    None
}

/// Whether `code` has a mapped type over `name`: `[K in Name]`, `[K in keyof typeof Name]`.
fn mapped_over(code: &str, name: &str) -> bool {
    code.match_indices('[').any(|(i, _)| {
        let rest = &code[i + 1..];
        let inner = rest.split(']').next().unwrap_or("");
        let mut words = inner.split_whitespace();
        words.next().is_some()
            && words.next() == Some("in")
            && words
                .filter(|w| *w != "keyof" && *w != "typeof")
                .any(|w| w == name)
    })
}

/// Whether `word` occurs in `code` as a whole identifier with `before` (the text before
/// it) accepted.
fn find_word(code: &str, word: &str, before: impl Fn(&str) -> bool) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    code.match_indices(word).any(|(i, _)| {
        let head = &code[..i];
        let tail = &code[i + word.len()..];
        !head.ends_with(ident) && !tail.starts_with(ident) && before(head)
    })
}

/// `code` without `//` line comments and `/* … */` blocks (strings are kept; a comment
/// marker inside one is rare enough in the code Scout reads).
fn strip_comments(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(i) = rest.find('/') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("//") {
            rest = after.find('\n').map_or("", |n| &after[n..]);
        } else if let Some(after) = tail.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |n| &after[n + 2..]);
        } else {
            out.push('/');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Whether `path` is a test file.
pub(crate) fn is_test_path(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.contains(".test.")
        || file.contains(".spec.")
        || path
            .split('/')
            .any(|d| matches!(d, "__tests__" | "test" | "tests"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scout::Node;

    fn node(name: &str, kind: &str, path: &str) -> Node {
        Node {
            repo_id: "r".into(),
            chunk_id: format!("{path}#{name}"),
            path: path.into(),
            name: name.into(),
            breadcrumb: name.into(),
            kind: kind.into(),
            signature: String::new(),
            start_line: 1,
            end_line: 10,
            parent: None,
        }
    }

    fn link(neighbour: Node, relation: Relation, target: Node, source: &str, depth: u32) -> Link {
        Link {
            neighbour,
            relation,
            node: target,
            line: None,
            certain: true,
            source: source.into(),
            depth,
        }
    }

    #[test]
    fn exhaustive_uses_of_a_union_or_enum_are_high_risk() {
        let kind = node("Kind", "type", "src/kind.ts");
        let switch = "function label(k: Kind): string {\n  switch (k) {\n    case 'a': return 'A';\n    case 'b': return 'B';\n    default: { const _x: never = k; return _x; }\n  }\n}";
        let r = rate_link(&link(
            node("label", "function", "src/label.ts"),
            Relation::UsesType,
            kind.clone(),
            switch,
            0,
        ));
        assert_eq!(r.rubric.risk, 5);
        assert_eq!(r.rubric.tags, ["pattern-match", "exhaustive"]);
        assert!(r.action.unwrap().contains("case"));

        let record = "const LABELS: Record<Kind, string> = { a: 'A', b: 'B' };";
        let r = rate_link(&link(
            node("LABELS", "const", "src/labels.ts"),
            Relation::UsesType,
            kind.clone(),
            record,
            0,
        ));
        assert_eq!(r.rubric.tags, ["exhaustive", "record"]);

        let mapped = "type Handlers = { [K in Kind]: () => void };";
        let r = rate_link(&link(
            node("Handlers", "type", "src/h.ts"),
            Relation::UsesType,
            kind.clone(),
            mapped,
            0,
        ));
        assert_eq!(r.rubric.risk, 5);

        // Only naming the type is a type-only use, and a comment does not count.
        let plain = "// Record<Kind, string> once\nfunction f(k: Kind) { return k; }";
        let r = rate_link(&link(
            node("f", "function", "src/f.ts"),
            Relation::UsesType,
            kind.clone(),
            plain,
            0,
        ));
        assert_eq!(
            (r.rubric.risk, r.rubric.tags.clone()),
            (3, vec!["type-only".to_string()])
        );
        // `Record<KindOf, …>` is another name.
        let other = "const X: Record<KindOf, string> = {};";
        assert_eq!(
            rate_link(&link(
                node("X", "const", "src/x.ts"),
                Relation::UsesType,
                kind,
                other,
                0
            ))
            .rubric
            .risk,
            3
        );

        // An enum: `case Kind.A`.
        let e = node("Color", "enum", "src/color.ts");
        let sw = "switch (c) { case Color.Red: return 1; case Color.Blue: return 2; }";
        let r = rate_link(&link(
            node("paint", "function", "src/p.ts"),
            Relation::References,
            e,
            sw,
            0,
        ));
        assert_eq!(r.rubric.tags, ["pattern-match"]);
    }

    #[test]
    fn imports_and_reexports_are_safe_and_depth_lowers_risk() {
        let f = node("parse", "function", "src/parse.ts");
        let import = rate_link(&link(
            node("import:./parse", "import", "src/a.ts"),
            Relation::References,
            f.clone(),
            "",
            0,
        ));
        assert_eq!(
            (import.rubric.risk, import.rubric.tags.clone()),
            (1, vec!["import".to_string()])
        );
        let barrel = rate_link(&link(
            node("export * from './parse'", "re-export", "src/index.ts"),
            Relation::References,
            f.clone(),
            "",
            0,
        ));
        assert_eq!(barrel.rubric.tags, ["re-export"]);
        let call = rate_link(&link(
            node("run", "function", "src/run.ts"),
            Relation::Calls,
            f.clone(),
            "parse(x)",
            0,
        ));
        assert_eq!(
            (call.rubric.risk, call.rubric.tags.clone()),
            (4, vec!["call-site".to_string()])
        );
        assert!(call.action.is_some());
        let far = rate_link(&link(
            node("main", "function", "src/main.ts"),
            Relation::Calls,
            node("run", "function", "src/run.ts"),
            "run()",
            1,
        ));
        assert_eq!((far.rubric.risk, far.action), (2, None));
        let test = rate_link(&link(
            node("it", "function", "src/parse.test.ts"),
            Relation::Calls,
            f,
            "parse(x)",
            0,
        ));
        assert!(test.rubric.tags.contains(&"test".to_string()));
        assert_eq!(test.rubric.relevance, 3);
    }

    #[test]
    fn comments_are_stripped_and_tests_recognised() {
        assert_eq!(strip_comments("a // b\nc /* d */ e / f"), "a \nc  e / f");
        assert!(is_test_path("src/__tests__/a.ts") && is_test_path("a.spec.ts"));
        assert!(!is_test_path("src/testing.ts"));
        assert!(mapped_over("{ [K in keyof typeof Kind]: 1 }", "Kind"));
        assert!(!mapped_over("{ [K in Kinds]: 1 }", "Kind"));
    }
}
