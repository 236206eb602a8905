use std::path::Path;

use super::go::package_name;
use super::python::docstring_text;
use crate::parse::refs::{Imported, RefBase, RefKind, RefTarget};
use crate::parse::{Language, Modifier, ParseLimits, ParsedFile, SymbolKind, parse_bytes};

fn parse(path: &str, source: &str) -> ParsedFile {
    parse_bytes(Path::new(path), source.as_bytes(), &ParseLimits::default()).expect("parses")
}

#[test]
fn languages_by_extension_and_shebang() {
    assert_eq!(
        Language::from_path(Path::new("a/b.pyi")),
        Some(Language::PYTHON)
    );
    assert_eq!(
        Language::from_path(Path::new("main.go")),
        Some(Language::GO)
    );
    assert_eq!(
        Language::from_shebang("#!/usr/bin/env python3.12"),
        Some(Language::PYTHON)
    );
    assert_eq!(
        Language::from_shebang("#!/usr/bin/node"),
        Some(Language::JAVASCRIPT)
    );
    assert_eq!(Language::from_shebang("#!/bin/sh"), Some(Language::SHELL));
    assert_eq!(
        Language::from_shebang("#!/usr/bin/env bash"),
        Some(Language::SHELL)
    );
    assert_eq!(Language::from_shebang("#!/usr/bin/perl"), None);
    assert_eq!(
        Language::from_path(Path::new("deploy/Dockerfile.prod")),
        Some(Language::DOCKERFILE)
    );
    assert_eq!(
        Language::from_path(Path::new("a/README.md")),
        Some(Language::MARKDOWN)
    );
    assert_eq!(
        Language::detect(Path::new("bin/tool"), b"#!/usr/bin/env -S python3\n"),
        Some(Language::PYTHON)
    );
    // An extension Sextant does not parse is not rescued by a shebang.
    assert_eq!(
        Language::detect(Path::new("run.pl"), b"#!/usr/bin/env python\n"),
        None
    );
    for l in Language::all() {
        assert_eq!(Language::parse(l.id()), Some(l));
    }
}

#[test]
fn docstrings_are_cleaned_like_inspect_cleandoc() {
    assert_eq!(
        docstring_text("r\"\"\"Summary.\n\n    Details here.\n      Indented.\n    \"\"\"")
            .as_deref(),
        Some("Summary.\n\nDetails here.\n  Indented.")
    );
    assert_eq!(docstring_text("'one line'").as_deref(), Some("one line"));
    assert_eq!(docstring_text("\"\"\"   \"\"\""), None);
}

#[test]
fn go_import_paths_bind_their_package_name() {
    assert_eq!(package_name("github.com/acme/app/store"), "store");
    assert_eq!(package_name("gopkg.in/yaml.v3"), "yaml.v3");
    assert_eq!(package_name("github.com/jackc/pgx/v5"), "pgx");
    assert_eq!(package_name("github.com/mattn/go-sqlite3"), "sqlite3");
}

#[test]
fn python_members_docstrings_and_imports() {
    let parsed = parse(
        "svc.py",
        "from .models import User as U, Group\nimport os.path\n\nclass Svc:\n    \"\"\"Doc.\"\"\"\n    limit = 3\n    def __init__(self, store: Store):\n        self.store = store\n    def get(self, k):\n        return self.store.fetch(U(k))\n",
    );
    let class = &parsed.symbols[2];
    assert_eq!(
        (class.kind, class.name.as_str()),
        (SymbolKind::Class, "Svc")
    );
    assert_eq!(class.jsdoc.as_deref(), Some("Doc."));
    let kinds: Vec<_> = class
        .children
        .iter()
        .map(|c| (c.kind, c.name.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (SymbolKind::Property, "limit"),
            (SymbolKind::Constructor, "__init__"),
            (SymbolKind::Method, "get")
        ]
    );
    assert_eq!(parsed.imports[0].bindings, ["U", "Group"]);
    assert_eq!(parsed.imports[1].bindings, ["os"]);
    let imports = &parsed.refs.imports;
    assert!(imports.iter().any(|b| b.local == "U"
        && b.module == ".models"
        && b.imported == Imported::Named("User".into())));
    // `self.store.fetch(…)` is a call on a member of `self`; `k` is a parameter.
    let refs = &parsed.refs.references;
    assert!(refs.iter().any(|r| r.kind == RefKind::Call
        && r.target
            == RefTarget::Member {
                base: RefBase::ThisMember("store".into()),
                member: "fetch".into()
            }));
    assert!(
        refs.iter()
            .any(|r| r.kind == RefKind::Call && r.target == RefTarget::Name { name: "U".into() })
    );
    assert!(
        !refs
            .iter()
            .any(|r| matches!(&r.target, RefTarget::Name { name } if name == "k"))
    );
}

#[test]
fn rust_items_attributes_docs_and_typed_receivers() {
    let source = "use crate::db::{Meta, meta::Entry as E};\n\n/// A point.\n#[derive(Debug)]\npub struct P { pub x: u32 }\n\nimpl P {\n    pub fn get(&self, m: Meta) -> u32 { m.size() + self.x }\n}\n";
    let parsed = parse("src/p.rs", source);
    let point = &parsed.symbols[1];
    assert_eq!((point.kind, point.name.as_str()), (SymbolKind::Struct, "P"));
    assert_eq!(point.range.start, 4, "the attribute belongs to the item");
    assert_eq!(point.jsdoc.as_deref(), Some("A point."));
    assert!(point.exported);
    let imp = &parsed.symbols[2];
    assert_eq!(
        (imp.kind, imp.children[0].kind),
        (SymbolKind::Impl, SymbolKind::Method)
    );
    let bindings: Vec<_> = parsed
        .refs
        .imports
        .iter()
        .map(|b| (b.local.as_str(), b.module.as_str()))
        .collect();
    assert_eq!(bindings, [("Meta", "crate::db"), ("E", "crate::db::meta")]);
    let refs = &parsed.refs.references;
    assert!(refs.iter().any(|r| r.target
        == RefTarget::Member {
            base: RefBase::Typed("Meta".into()),
            member: "size".into()
        }));
}

#[test]
fn go_methods_are_named_by_receiver_and_java_members_nest() {
    let go = parse(
        "s.go",
        "package s\n\n// Store keeps.\ntype Store struct {\n\tn int\n}\n\n// Get gets.\nfunc (s *Store) Get() int { return s.n }\n",
    );
    let names: Vec<_> = go.symbols.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["package s", "Store", "Store.Get"]);
    assert_eq!(go.symbols[2].jsdoc.as_deref(), Some("Get gets."));
    let java = parse(
        "A.java",
        "package p;\n/** A. */\npublic class A {\n  static class B { void m() {} }\n  enum E { X; void f() {} }\n}\n",
    );
    let a = &java.symbols[1];
    assert_eq!(a.jsdoc.as_deref(), Some("A."));
    let b = &a.children[0];
    assert_eq!((b.name.as_str(), b.children[0].name.as_str()), ("B", "m"));
    let e: Vec<_> = a.children[1]
        .children
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(e, ["X", "f"]);
}

/// The names `file` holds marked deprecated, depth first.
fn deprecated_names(file: &ParsedFile) -> Vec<String> {
    file.symbols
        .iter()
        .flat_map(|s| s.walk())
        .filter(|s| s.modifiers.contains(&Modifier::Deprecated))
        .map(|s| s.name.clone())
        .collect()
}

#[test]
fn deprecation_is_read_in_every_language_and_covers_what_is_inside() {
    let java = parse(
        "Old.java",
        "/** @deprecated use {@link New} */\nclass Old {\n  void run() {}\n}\n\
         class Mixed {\n  @Deprecated\n  public void before() {}\n  void after() {}\n}\n\
         @java.lang.Deprecated class Older { int n; }\n\
         class New {\n  /** Not {@deprecated} here, nor @deprecated mid-line. */\n  void run() {}\n}\n",
    );
    assert_eq!(
        deprecated_names(&java),
        ["Old", "run", "before", "Older", "n"]
    );
    let rust = parse(
        "a.rs",
        "#[deprecated(since = \"1.2\", note = \"use b\")]\npub fn a() {}\n\
         /// Deprecated: use `C`.\npub struct B;\n\
         #[deprecated]\nimpl B {\n    pub fn x(&self) {}\n}\n\
         pub fn c() {}\n",
    );
    assert_eq!(deprecated_names(&rust), ["a", "B", "B", "x"]);
    let go = parse(
        "a.go",
        "package a\n\n// Old does it.\n//\n// Deprecated: use New.\nfunc Old() {}\n\n\
         // New does it; Deprecated: is not at a line start here.\nfunc New() {}\n",
    );
    assert_eq!(deprecated_names(&go), ["Old"]);
    let python = parse(
        "a.py",
        "from typing_extensions import deprecated\n\n\
         @deprecated(\"use g\")\ndef f():\n    pass\n\n\
         class C:\n    \"\"\"A class.\n\n    .. deprecated:: 2.0\n       Use D.\n    \"\"\"\n\n    def m(self):\n        pass\n\n\
         def g():\n    \"\"\"Replaces the deprecated f.\"\"\"\n\n\
         def h():\n    \"\"\"Deprecated function for signing: use g.\"\"\"\n\n\
         def deprecation_notice():\n    \"\"\"Deprecations are listed here.\"\"\"\n",
    );
    assert_eq!(deprecated_names(&python), ["f", "C", "m", "h"]);
    // A marker is a whole word: a decorator that only starts like one marks nothing.
    let aliased = parse(
        "b.py",
        "@deprecated_alias(old=\"new\")\ndef f(new):\n    pass\n",
    );
    assert!(deprecated_names(&aliased).is_empty());
    let ts = parse(
        "a.ts",
        "/** @deprecated Use `next`. */\nexport function prev() {}\n\
         /** Runs it. */\nexport class Runner {\n  /**\n   * @deprecated\n   */\n  old() {}\n  now() {}\n}\n",
    );
    assert_eq!(deprecated_names(&ts), ["prev", "old"]);
    // Overloads: one deprecated way to call a function leaves it live; all of them, not.
    let overloads = parse(
        "o.ts",
        "export class Observable {
  subscribe(observer?: Observer): Subscription;
           /** @deprecated Pass an observer. */
  subscribe(next?: () => void, error?: () => void): Subscription;
           subscribe(a?: any, b?: any): Subscription {
    return new Subscription();
  }
}
         /** @deprecated Use `combineLatestWith`. */
export function combine<A>(a: A): A;
         /** @deprecated Use `combineLatestWith`. */
export function combine<A, B>(a: A, b: B): [A, B];
         export function combine(...args: any[]): any {
  return args;
}
",
    );
    assert_eq!(deprecated_names(&overloads), ["combine"]);
}
