//! Smart structural snapshots (pure): for the target chunks of one file, the file's
//! relevant imports, the same-file declarations the targets use (constants, variables,
//! type aliases, interfaces, enums; class properties through their wrapper), the wrappers
//! of member targets (class, namespace, object headers), and the targets fully expanded
//! under the first paragraph of their doc comment (written in the language's style: the
//! parser keeps a doc comment's text, and a chunk's code starts below it).
//! Everything else is left out, with no collapse markers.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::chunk::CodeChunk;
use crate::parse::{DocComment, SymbolKind};

/// Identifier-like words of `text`.
fn identifiers(text: &str) -> HashSet<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Kinds of root-level declarations a snapshot shows when a target uses their name.
fn is_context_declaration(kind: SymbolKind) -> bool {
    matches!(
        kind,
        SymbolKind::Const
            | SymbolKind::Variable
            | SymbolKind::Type
            | SymbolKind::Interface
            | SymbolKind::Enum
    )
}

/// The opening line(s) of a wrapper: its source up to the line that opens its body
/// (ending in `{` where bodies are braced, in `:` where they are indented), never into
/// its first member, and without the blank and comment lines that lead into that member
/// (a Go `const (` group opens with its `const (` line alone). At least its first line.
fn header(chunk: &CodeChunk, by_id: &ById) -> String {
    let first_member = chunk
        .child_chunk_ids
        .iter()
        .filter_map(|id| by_id.get(id.as_str()))
        .map(|c| c.start_line)
        .min();
    let room = first_member.map_or(usize::MAX, |line| {
        (line.saturating_sub(chunk.start_line) as usize).max(1)
    });
    let opener = if chunk.language.braces() { '{' } else { ':' };
    let mut out: Vec<&str> = Vec::new();
    for line in chunk.full_source.lines().take(room) {
        out.push(line);
        if line.trim_end().ends_with(opener) {
            break;
        }
    }
    while out.len() > 1 && out.last().is_some_and(|l| leads_in(l)) {
        out.pop();
    }
    out.join("\n")
}

/// A blank or comment line (what may stand between a wrapper's opening and its first
/// member).
fn leads_in(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || ["//", "#", "/*", "*", "--"]
            .iter()
            .any(|p| t.starts_with(p))
}

/// What closes a wrapper after its shown members: nothing where bodies are indented (a
/// Python class's last line is its last member's, even a lone `]`); else its own last
/// line when that holds only closing punctuation (`}`, `};`, `});`, a Go group's `)`),
/// or `}` at the opening's indent.
fn closing(chunk: &CodeChunk, head: &str) -> Option<String> {
    if !chunk.language.braces() {
        return None;
    }
    let mut lines = chunk.full_source.lines();
    let last = lines.next_back().filter(|_| lines.next().is_some());
    if let Some(last) = last.filter(|l| {
        let t = l.trim();
        !t.is_empty() && t.chars().all(|c| "})];,".contains(c))
    }) {
        return Some(last.trim_end().to_string());
    }
    Some(format!("{}}}", indentation(head)))
}

fn indentation(text: &str) -> &str {
    let first = text.lines().next().unwrap_or("");
    &first[..first.len() - first.trim_start().len()]
}

/// Renders the snapshot of `path` for `targets` (ids of chunks in `file_chunks`, all
/// chunks of the file). Targets that are not in `file_chunks` are ignored. A file outline
/// ([`SymbolKind::File`]) among the targets is shown first, as written; the other
/// targets follow it as usual.
pub fn snapshot(path: &str, targets: &[&str], file_chunks: &[CodeChunk]) -> String {
    let outline = file_chunks
        .iter()
        .find(|c| c.node_kind == SymbolKind::File && targets.contains(&c.id.as_str()));
    let code: Vec<&CodeChunk> = file_chunks
        .iter()
        .filter(|c| c.node_kind != SymbolKind::File)
        .collect();
    let Some(outline) = outline else {
        return code_snapshot(path, targets, &code);
    };
    let mut out = outline.content.trim_end().to_string();
    out.push('\n');
    let header = format!("// {path}\n");
    let rest = code_snapshot(path, targets, &code);
    if let Some(body) = rest.strip_prefix(&header).filter(|b| !b.trim().is_empty()) {
        out.push_str(body);
    }
    out
}

/// The chunks of one file, by id.
type ById<'a> = HashMap<&'a str, &'a CodeChunk>;

/// [`snapshot`] of code chunks only, in stages: what encloses a target, what is shown
/// whole (targets and the declarations they use), the wrappers around those, the
/// imports they need, and the layout.
fn code_snapshot(path: &str, targets: &[&str], file_chunks: &[&CodeChunk]) -> String {
    let by_id: ById = file_chunks.iter().map(|c| (c.id.as_str(), *c)).collect();
    let targets: Vec<&CodeChunk> = targets
        .iter()
        .filter_map(|id| by_id.get(id).copied())
        .collect();
    let enclosing: HashSet<&str> = file_chunks
        .iter()
        .filter(|c| {
            targets
                .iter()
                .any(|t| c.start_line <= t.start_line && t.end_line <= c.end_line)
        })
        .map(|c| c.id.as_str())
        .collect();
    let mut whole = shown_whole(&targets, file_chunks, &enclosing, &by_id);
    drop_nested(&mut whole, &by_id);
    let wrappers = wrappers_of(&whole, &by_id);
    let imports = imports_of(&whole, &wrappers, &by_id, file_chunks);
    let target_ids: HashSet<&str> = targets.iter().map(|t| t.id.as_str()).collect();
    let blocks = layout(file_chunks, &whole, &wrappers, &target_ids, &by_id);
    let mut out = format!("// {path}\n");
    if !imports.is_empty() {
        out.push('\n');
        out.push_str(&imports.join("\n"));
        out.push('\n');
    }
    if !blocks.is_empty() {
        out.push('\n');
        out.push_str(&blocks);
        out.push('\n');
    }
    out
}

/// The chunks shown whole: the targets and the declarations they (or the headers of
/// chunks enclosing them) use, and what those use in turn (a shown `private cache = new
/// Cache(TTL)` brings `TTL`), to a fixed point. A name brings root-level context
/// declarations (and the members of a root-level group, Go's `const ( … )`, inside
/// their group) and properties of a class that wraps a target (`this.secret`) or of a
/// root-level struct the target or its wrappers name (`l.cacheTime` of a Go method on
/// `*Layered`, `self.nodes` in `impl Stable`), never a chunk that itself encloses a
/// target. A worklist: each chunk's text is read once and each name looked up once, so
/// a long chain of constants costs linear time.
fn shown_whole<'a>(
    targets: &[&'a CodeChunk],
    file_chunks: &[&'a CodeChunk],
    enclosing: &HashSet<&str>,
    by_id: &ById,
) -> HashSet<&'a str> {
    // Names the targets and their enclosing headers use: where the worklist starts, and
    // which root-level structs (a Go method's receiver, a Rust `impl`'s type) lend their
    // fields as a wrapping class does.
    let named: HashSet<String> = targets
        .iter()
        .flat_map(|t| identifiers(&t.full_source))
        .map(str::to_string)
        .chain(
            file_chunks
                .iter()
                .filter(|c| enclosing.contains(c.id.as_str()))
                .flat_map(|c| {
                    identifiers(&header(c, by_id))
                        .into_iter()
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                }),
        )
        .collect();
    let mut eligible: HashMap<&str, Vec<&CodeChunk>> = HashMap::default();
    for c in file_chunks {
        if enclosing.contains(c.id.as_str()) {
            continue;
        }
        let parent = c.parent_chunk_id.as_deref().and_then(|p| by_id.get(p));
        // A root-level declaration, or one of a root-level group's (Go's `const ( … )`).
        let root_declaration = is_context_declaration(c.node_kind)
            && (c.depth == 0
                || parent.is_some_and(|p| p.depth == 0 && is_context_declaration(p.node_kind)));
        let wrapped_property = c.node_kind == SymbolKind::Property
            && parent.is_some_and(|p| {
                enclosing.contains(p.id.as_str())
                    || (p.depth == 0
                        && p.node_kind == SymbolKind::Struct
                        && named.contains(p.name.as_str()))
            });
        if root_declaration || wrapped_property {
            eligible.entry(c.name.as_str()).or_default().push(c);
        }
    }
    let mut whole: HashSet<&str> = targets.iter().map(|t| t.id.as_str()).collect();
    let mut seen_names: HashSet<String> = named
        .into_iter()
        .filter(|name| eligible.contains_key(name.as_str()))
        .collect();
    let mut queue: Vec<String> = seen_names.iter().cloned().collect();
    let mut use_words = |text: &str, queue: &mut Vec<String>| {
        for w in identifiers(text) {
            if eligible.contains_key(w) && seen_names.insert(w.to_string()) {
                queue.push(w.to_string());
            }
        }
    };
    while let Some(name) = queue.pop() {
        for c in eligible.get(name.as_str()).into_iter().flatten() {
            if whole.insert(c.id.as_str()) {
                use_words(&c.full_source, &mut queue);
            }
        }
    }
    whole
}

/// Drops whole chunks nested in another whole chunk (a class target holds its methods):
/// in (start, -end) order, a chunk is nested when an earlier one reaches past its end,
/// or reaches exactly to it from an earlier start (equal spans keep both).
fn drop_nested(whole: &mut HashSet<&str>, by_id: &ById) {
    let mut spans: Vec<&CodeChunk> = whole.iter().map(|id| by_id[id]).collect();
    spans.sort_by_key(|c| (c.start_line, std::cmp::Reverse(c.end_line)));
    let mut reach: Option<(u32, u32)> = None; // (end, start of the first chunk reaching it)
    for c in spans {
        let nested = reach.is_some_and(|(end, start)| {
            end > c.end_line || (end == c.end_line && start < c.start_line)
        });
        if nested {
            whole.remove(c.id.as_str());
        }
        if reach.is_none_or(|(end, _)| c.end_line > end) {
            reach = Some((c.end_line, c.start_line));
        }
    }
}

/// Wrappers: every ancestor of a whole chunk.
fn wrappers_of<'a>(whole: &HashSet<&str>, by_id: &ById<'a>) -> HashSet<&'a str> {
    let mut wrappers: HashSet<&str> = HashSet::default();
    for id in whole {
        let mut parent = by_id[id].parent_chunk_id.as_deref();
        while let Some(p) = parent.and_then(|p| by_id.get(p)) {
            if !wrappers.insert(p.id.as_str()) {
                break;
            }
            parent = p.parent_chunk_id.as_deref();
        }
    }
    wrappers
}

/// An import statement with its whitespace collapsed: a chunk's relevant imports hold
/// multi-line statements on one line (`use crate::{ a, b, };`), the file's import chunks
/// as written, and both name the same statement.
fn collapsed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` without its string literals (`"…"`, `'…'`, `` `…` ``, each replaced by a
/// space): an import statement's module paths.
fn without_strings(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push(' ');
            }
            Some(_) => {}
            None if matches!(c, '"' | '\'' | '`') => quote = Some(c),
            None => out.push(c),
        }
    }
    out
}

/// The imports the whole chunks use, and those a shown wrapper's head uses (`class A
/// extends Base`), each statement once, in the file's order.
fn imports_of<'a>(
    whole: &HashSet<&str>,
    wrappers: &HashSet<&str>,
    by_id: &ById<'a>,
    file_chunks: &[&'a CodeChunk],
) -> Vec<&'a str> {
    let mut imports: Vec<&str> = Vec::new();
    let mut listed: HashSet<String> = HashSet::default();
    for id in whole {
        for import in &by_id[id].relevant_imports {
            if listed.insert(collapsed(import)) {
                imports.push(import);
            }
        }
    }
    let heads: HashSet<String> = wrappers
        .iter()
        .flat_map(|id| {
            identifiers(&header(by_id[id], by_id))
                .into_iter()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut import_lines: HashMap<String, u32> = HashMap::default();
    for c in file_chunks
        .iter()
        .filter(|c| c.node_kind == SymbolKind::Import)
    {
        let text = c.content.trim();
        import_lines.entry(collapsed(text)).or_insert(c.start_line);
        // Names the statement binds, not the words of the paths it imports from (a Go
        // group importing `…/promql/parser/posrange` binds no `parser`).
        let unquoted = without_strings(text);
        let binds = identifiers(&unquoted)
            .into_iter()
            .filter(|w| !matches!(*w, "import" | "from" | "as" | "type" | "default"))
            .any(|w| heads.contains(w));
        if binds && listed.insert(collapsed(text)) {
            imports.push(text);
        }
    }
    // In the file's order; statements no import chunk holds as such (one of a Go
    // `import ( … )` group) after them, alphabetically, as gofmt orders a group.
    imports.sort_by_key(|text| {
        let line = import_lines.get(&collapsed(text)).copied();
        (line.unwrap_or(u32::MAX), *text)
    });
    imports
}

/// The whole chunks inside their wrappers' opening and closing lines, in file order.
fn layout(
    file_chunks: &[&CodeChunk],
    whole: &HashSet<&str>,
    wrappers: &HashSet<&str>,
    targets: &HashSet<&str>,
    by_id: &ById,
) -> String {
    let mut children: HashMap<Option<&str>, Vec<&CodeChunk>> = HashMap::default();
    for c in file_chunks {
        if whole.contains(c.id.as_str()) || wrappers.contains(c.id.as_str()) {
            children
                .entry(c.parent_chunk_id.as_deref())
                .or_default()
                .push(c);
        }
    }
    for list in children.values_mut() {
        list.sort_by_key(|c| c.start_line);
    }
    let mut blocks = Vec::new();
    let shown = Shown {
        children: &children,
        whole,
        targets,
        by_id,
    };
    shown.emit(None, &mut blocks);
    join(&blocks)
}

/// What [`layout`] writes out: each shown chunk under its parent, which of them are
/// shown whole, and which are the targets (written with their documentation).
struct Shown<'s, 'a> {
    children: &'s HashMap<Option<&'a str>, Vec<&'a CodeChunk>>,
    whole: &'s HashSet<&'a str>,
    targets: &'s HashSet<&'a str>,
    by_id: &'s ById<'a>,
}

impl Shown<'_, '_> {
    /// Blocks of one level: `(text, whether it is a one-part declaration)`.
    fn emit(&self, parent: Option<&str>, out: &mut Vec<(String, bool)>) {
        for c in self.children.get(&parent).into_iter().flatten() {
            if self.whole.contains(c.id.as_str()) {
                let plain = c.is_leaf() && !c.node_kind.has_code_body();
                let code = c.full_source.trim_end();
                let doc = self.targets.contains(c.id.as_str()).then(|| doc_comment(c));
                let text = match doc.flatten() {
                    Some(doc) => format!("{doc}\n{code}"),
                    None => code.to_string(),
                };
                out.push((text, plain));
            } else {
                let mut inner = Vec::new();
                self.emit(Some(c.id.as_str()), &mut inner);
                let head = header(c, self.by_id);
                let mut text = format!("{head}\n{}", join(&inner));
                if let Some(close) = closing(c, &head) {
                    text.push('\n');
                    text.push_str(&close);
                }
                out.push((text, false));
            }
        }
    }
}

/// Most lines of a target's documentation a snapshot shows: its first paragraph, which
/// says what the code is for (the rest, arguments and examples, costs the budget more
/// than it tells).
const DOC_LINES: usize = 6;

/// Most characters of those lines: a paragraph written as one long line (generated or
/// minified docs) is cut at a word, with `…`.
const DOC_CHARS: usize = 400;

/// A target's documentation as the comment above it in its language: the first
/// paragraph of its doc comment (up to a blank line, a tag such as `@param`, a heading
/// such as `# Examples` or a code fence), indented as the target is. `None` where the
/// language documents inside the body (Python), the chunk has no doc comment, or its
/// code already shows it.
fn doc_comment(chunk: &CodeChunk) -> Option<String> {
    let style = chunk.language.doc_comment();
    if style == DocComment::None {
        return None;
    }
    let doc = chunk.jsdoc.as_deref()?;
    let mut lines: Vec<String> = Vec::new();
    let mut chars = 0;
    for line in doc
        .lines()
        .map(str::trim_end)
        .take_while(|l| !l.trim().is_empty() && !l.starts_with(['@', '#']) && !l.starts_with("```"))
        .take(DOC_LINES)
    {
        let n = line.chars().count();
        if !lines.is_empty() && chars + n > DOC_CHARS {
            break;
        }
        chars += n;
        lines.push(if n > DOC_CHARS {
            let cut = crate::text::truncate_chars(line, DOC_CHARS);
            let at_word = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
            format!("{} …", at_word.trim_end_matches(['…', ' ']))
        } else {
            line.to_string()
        });
    }
    let first = lines.first()?;
    let opening: String = chunk.full_source.lines().take(3).collect();
    if opening.contains(first.trim()) {
        return None;
    }
    let indent = indentation(&chunk.full_source);
    match style {
        DocComment::None => None,
        DocComment::Block if lines.len() == 1 => Some(format!("{indent}/** {first} */")),
        DocComment::Block => {
            let mut out = format!("{indent}/**");
            for line in &lines {
                out.push_str(&format!("\n{indent} * {line}"));
            }
            out.push_str(&format!("\n{indent} */"));
            Some(out)
        }
        DocComment::Lines(prefix) => Some(
            lines
                .iter()
                .map(|l| format!("{indent}{prefix} {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
}

/// Consecutive plain declarations (fields, constants) stay together; anything with a
/// body is set off by blank lines.
fn join(blocks: &[(String, bool)]) -> String {
    let mut out = String::new();
    for (i, (text, plain)) in blocks.iter().enumerate() {
        if i > 0 {
            out.push_str(if *plain && blocks[i - 1].1 {
                "\n"
            } else {
                "\n\n"
            });
        }
        out.push_str(text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{ChunkOptions, chunk_file};
    use crate::parse::{ParseLimits, parse_bytes};

    /// Every chunk of `source` read as `path`.
    fn chunks(path: &str, source: &str) -> Vec<CodeChunk> {
        let parsed = parse_bytes(
            std::path::Path::new(path),
            source.as_bytes(),
            &ParseLimits::default(),
        )
        .expect("parses");
        chunk_file(path, source, &parsed, &ChunkOptions::default())
    }

    /// The chunk named `name` of `source` read as `path`.
    fn chunk(path: &str, source: &str, name: &str) -> CodeChunk {
        chunks(path, source)
            .into_iter()
            .find(|c| c.name == name)
            .expect("chunk")
    }

    #[test]
    fn a_targets_doc_is_its_first_paragraph_in_its_languages_comment() {
        for (path, source, name, doc) in [
            (
                "a.ts",
                "/**\n * Checks a token.\n * Never throws.\n * @param token the token\n */\nexport function check(token: string) {\n  return token;\n}\n",
                "check",
                "/**\n * Checks a token.\n * Never throws.\n */",
            ),
            (
                "a.js",
                "/** Checks a token. */\nfunction check() {}\n",
                "check",
                "/** Checks a token. */",
            ),
            (
                "a.rs",
                "struct S;\nimpl S {\n    /// Adds one.\n    ///\n    /// # Examples\n    /// ```\n    /// s.add();\n    /// ```\n    pub fn add(&self) {}\n}\n",
                "add",
                "    /// Adds one.",
            ),
            (
                "a.go",
                "package a\n\n// Add adds.\n// It never fails.\nfunc Add() {}\n",
                "Add",
                "// Add adds.\n// It never fails.",
            ),
            (
                "A.java",
                "class A {\n  /**\n   * Adds.\n   * @return the sum\n   */\n  int add() { return 1; }\n}\n",
                "add",
                "  /** Adds. */",
            ),
        ] {
            assert_eq!(
                doc_comment(&chunk(path, source, name)).as_deref(),
                Some(doc),
                "{path}"
            );
        }
    }

    #[test]
    fn no_doc_where_the_code_holds_it_or_there_is_none() {
        let py = "def add(a):\n    \"\"\"Adds one.\"\"\"\n    return a + 1\n";
        assert_eq!(doc_comment(&chunk("a.py", py, "add")), None);
        let bare = "function add(a) {\n  return a + 1;\n}\n";
        assert_eq!(doc_comment(&chunk("a.js", bare, "add")), None);
        let long = format!(
            "/**\n{} */\nfunction add() {{}}\n",
            (1..=10)
                .map(|i| format!(" * Line {i}.\n"))
                .collect::<String>()
        );
        let doc = doc_comment(&chunk("a.js", &long, "add")).expect("doc");
        assert_eq!(doc.lines().count(), DOC_LINES + 2, "{doc}");
        // One long line is cut at a word; long lines after the first are left out.
        let word = "word ".repeat(200);
        let wide = format!("/**\n * {word}\n * {word}\n */\nfunction add() {{}}\n");
        let doc = doc_comment(&chunk("a.js", &wide, "add")).expect("doc");
        assert!(
            doc.starts_with("/** word word") && doc.ends_with("word … */"),
            "{doc}"
        );
        assert!(doc.chars().count() < DOC_CHARS + 10, "{doc}");
    }

    #[test]
    fn only_targets_show_their_docs() {
        let ts = "/** The limit. */\nconst LIMIT = 3;\n\n/** Checks a token. */\nexport function check(n: number) {\n  return n < LIMIT;\n}\n";
        let chunks = chunks("a.ts", ts);
        let target = chunks.iter().find(|c| c.name == "check").expect("check");
        let text = snapshot("a.ts", &[target.id.as_str()], &chunks);
        assert!(
            text.contains("/** Checks a token. */\nexport function check"),
            "{text}"
        );
        assert!(text.contains("const LIMIT = 3;"), "{text}");
        assert!(
            !text.contains("The limit"),
            "context is shown without its doc: {text}"
        );
    }

    /// A wrapper's head binds an import by the names it brings in, not by the words of
    /// its module path: a method of `parser` shows the import it uses, not the whole group
    /// because one path ends in `…/parser/posrange`.
    #[test]
    fn a_wrappers_head_does_not_bind_an_import_by_its_path() {
        let go = "package parser\n\nimport (\n\t\"fmt\"\n\t\"time\"\n\n\t\"example.com/promql/parser/posrange\"\n)\n\ntype parser struct {\n\topts int\n\tpos  posrange.Pos\n}\n\nfunc (p *parser) wait(d time.Duration) {\n\ttime.Sleep(d)\n}\n\nfunc other() { fmt.Println(\"x\") }\n";
        let chunks = chunks("parse.go", go);
        let target = chunks
            .iter()
            .find(|c| c.name.ends_with("wait"))
            .expect("wait");
        let text = snapshot("parse.go", &[target.id.as_str()], &chunks);
        assert!(text.contains("import \"time\""), "{text}");
        assert!(!text.contains("import ("), "the whole group: {text}");
        assert!(!text.contains("fmt"), "{text}");
        assert_eq!(
            without_strings("import { A } from \"./a/A\";"),
            "import { A } from  ;"
        );
    }
}
