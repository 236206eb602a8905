#!/usr/bin/env python3
"""Docstring-derived query candidates for Python, Go, Rust and Java corpora, by the rules
of ../shared/eval/tools/extract_jsdoc.js (the TypeScript set), and a stripped copy of the
corpus with every target's documentation blanked (line numbers unchanged).

Usage: extract.py LANG CORPUS_DIR LABEL CANDIDATES.jsonl STRIPPED_DIR

The parser is the py-tree-sitter grammar for the language, not Sextant's, so the gold
ranges do not come from the system under test. Targets: documented functions, methods,
classes, structs, enums, traits and interfaces outside test code. The documentation is the
language's own: Python docstrings, Go comment blocks, Rust `///` and `/** */`, Javadoc.
The query is the first sentence of the description with inline markup removed and the
symbol's own name taken out; fewer than 6 words (4 after the name goes) is no target.
A target is ambiguous when another documentation block in the corpus has the same first
sentence or another target the same query (../shared/eval/tools/sample_jsdoc.py drops
those, and the ones whose sentence still occurs in the stripped corpus).
"""
import html
import json
import os
import re
import shutil
import sys
from collections import Counter

from tree_sitter import Language, Parser

MIN_WORDS = 6
MIN_WORDS_AFTER_NAME_REMOVAL = 4
ABBREV = {"e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "no.", "ex.", "incl."}


def grammar(lang):
    if lang == "python":
        import tree_sitter_python as m
    elif lang == "go":
        import tree_sitter_go as m
    elif lang == "rust":
        import tree_sitter_rust as m
    elif lang == "java":
        import tree_sitter_java as m
    else:
        sys.exit(f"unknown language {lang}: python, go, rust or java")
    return Language(m.language())


EXTENSIONS = {"python": (".py",), "go": (".go",), "rust": (".rs",), "java": (".java",)}
TEST_PATH = {
    "python": re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$"),
    "go": re.compile(r"_test\.go$|(^|/)testdata/"),
    "rust": re.compile(r"(^|/)(tests|benches|examples)/"),
    "java": re.compile(r"(^|/)src/test/|(^|/)test/|Test\.java$|Tests\.java$"),
}


# ---- text handling (the rules of extract_jsdoc.js) ----------------------------------

def description_paragraph(lines):
    """The first paragraph of a description, up to block tags or a code fence."""
    para = []
    for line in lines:
        if re.match(r"^\s*@[A-Za-z]", line) or re.match(r"^\s*(#\s|Args:|Arguments:|Returns:|Raises:|Example|Parameters|:param|:return|>>>)", line):
            break
        if not line.strip():
            if para:
                break
            continue
        if re.match(r"^\s*(```|~~~)", line) or re.match(r"^\s*#", line):
            break
        # Javadoc: <p> opens the next paragraph; <pre> and lists end the prose.
        cut = re.search(r"<(p|pre|ul|ol|table|h[1-6])\b[^>]*>", line, flags=re.I)
        if cut:
            if line[: cut.start()].strip():
                para.append(line[: cut.start()].strip())
            if para:
                break
            line = line[cut.end():]
            if not line.strip():
                continue
        para.append(line.strip())
    return " ".join(para)


def clean_inline(s):
    # Javadoc / JSDoc links and code: {@link Foo#bar text} -> text, else Foo.bar
    def link(m):
        target, text = m.group(1), (m.group(2) or "").strip()
        if text:
            return text
        if target.startswith("http"):
            return ""
        return target.replace("#", ".").lstrip(".")
    s = re.sub(r"\{@(?:link|linkplain|linkcode)\s+([^}\s]+)\s*([^}]*)\}", link, s)
    s = re.sub(r"\{@(?:code|literal)\s+([^}]*)\}", r"\1", s)
    s = re.sub(r"\{@inheritDoc[^}]*\}", "", s, flags=re.I)
    # reST roles and literals (Python): :class:`Foo` -> Foo, ``x`` -> x
    s = re.sub(r":[a-z:]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", s)
    s = re.sub(r"``([^`]*)``", r"\1", s)
    # rustdoc intra-doc links: [`Foo`] / [Foo](path) -> Foo
    s = re.sub(r"\[`?([^\]`]+)`?\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[`([^\]`]+)`\](\[[^\]]*\])?", r"\1", s)
    s = re.sub(r"`([^`]*)`", r"\1", s)
    s = re.sub(r"</?[a-zA-Z][^>]*>", "", s)
    s = re.sub(r"https?://\S+", "", s)
    s = re.sub(r"\*\*([^*]+)\*\*", r"\1", s)
    s = html.unescape(s)
    return re.sub(r"\s+", " ", s).strip()


def first_sentence(para):
    for m in re.finditer(r"[.!?](?=\s|$)", para):
        upto = para[: m.start() + 1]
        if upto.split()[-1].lower() in ABBREV:
            continue
        return upto.strip()
    return para.strip()


def word_count(s):
    return sum(1 for w in s.split() if re.search(r"[A-Za-z]", w))


def tidy(s):
    s = re.sub(r"\s+([.,;:!?])(?=\s|$)", r"\1", s)
    s = re.sub(r"\(\s*\)", "", s)
    s = re.sub(r"\s+", " ", s)
    return re.sub(r"^[\s,.;:'\"-]+", "", s).strip()


def name_variants(short, full):
    out = [short]
    for sep in (".", "::"):
        if sep in full:
            out += [full, full.replace("::", ".")]
    return out


def remove_own_name_raw(raw, short, full):
    s = raw
    for n in name_variants(short, full):
        e = re.escape(n)
        s = re.sub(r"`[.#]?" + e + r"(\([^`]*\))?`", "", s)
        s = re.sub(r"\{@link(?:code|plain)?\s+[.#]?" + e + r"(\(\))?(\s[^}]*)?\}", "", s)
        s = re.sub(r"\[`" + e + r"`\](\([^)]*\))?", "", s)
    return s


def remove_own_name(sentence, short, full):
    names = []
    if "." in full or "::" in full:
        names += [full, full.replace("::", ".")]
    if re.search(r"[A-Z_$0-9]", short):
        names.append(short)
    s = sentence
    for n in names:
        s = re.sub(r"(^|[^A-Za-z0-9_$.#])[.#]?" + re.escape(n) + r"(\(\))?(?![A-Za-z0-9_$])", r"\1", s)
    return tidy(s)


def normalize_key(s):
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


# ---- per-language documentation ------------------------------------------------------

def text_of(src, node):
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def python_doc(src, node):
    """(description lines, [byte spans]) of a def's or class's docstring."""
    body = node.child_by_field_name("body")
    if body is None or body.named_child_count == 0:
        return None
    first = body.named_children[0]
    if first.type != "expression_statement" or first.named_child_count != 1:
        return None
    string = first.named_children[0]
    if string.type != "string":
        return None
    raw = text_of(src, string)
    raw = re.sub(r'^[rRuUbB]*("""|\'\'\'|"|\')', "", raw)
    raw = re.sub(r'("""|\'\'\'|"|\')$', "", raw)
    return raw.split("\n"), [(string.start_byte, string.end_byte, '""')]


def comments_above(node, is_doc, skip=lambda n: False):
    """Doc comment nodes directly above `node` (no blank line between), in order."""
    out = []
    row = node.start_point[0]
    cur = node.prev_sibling
    while cur is not None:
        if skip(cur):
            row = cur.start_point[0]
            cur = cur.prev_sibling
            continue
        if not is_doc(cur) or cur.end_point[0] < row - 1:
            break
        out.append(cur)
        row = cur.start_point[0]
        cur = cur.prev_sibling
    return list(reversed(out))


def line_comment_doc(src, node, prefix, skip=lambda n: False):
    def is_doc(n):
        if n.type not in ("comment", "line_comment", "block_comment"):
            return False
        t = text_of(src, n)
        if prefix == "//":
            return t.startswith("//") and not t.startswith("//go:") and not t.startswith("//nolint")
        return (t.startswith("///") and not t.startswith("////")) or (t.startswith("/**") and not t.startswith("/***"))
    nodes = comments_above(node, is_doc, skip)
    if not nodes:
        return None
    lines = []
    for n in nodes:
        t = text_of(src, n)
        if t.startswith("/*"):
            lines += javadoc_lines(t)
        else:
            lines += [re.sub(r"^//+ ?", "", l) for l in t.split("\n")]
    return lines, [(n.start_byte, n.end_byte, "") for n in nodes]


def javadoc_lines(raw):
    body = re.sub(r"^/\*\*", "", raw)
    body = re.sub(r"\*/$", "", body)
    return [re.sub(r"^\s*\*? ?", "", l) for l in body.split("\n")]


def java_doc(src, node):
    prev = node.prev_named_sibling
    if prev is None or prev.type != "block_comment":
        return None
    t = text_of(src, prev)
    if not t.startswith("/**") or t.startswith("/***"):
        return None
    # The comment must sit right above (annotations are inside the declaration).
    if prev.end_point[0] < node.start_point[0] - 1:
        return None
    return javadoc_lines(t), [(prev.start_byte, prev.end_byte, "")]


# ---- per-language targets ------------------------------------------------------------

def python_targets(node, container, out):
    for child in node.named_children:
        item, start = child, child
        if child.type == "decorated_definition":
            item = child.child_by_field_name("definition")
            if item is None:
                continue
        if item.type not in ("function_definition", "class_definition"):
            continue
        name = item.child_by_field_name("name")
        if name is None:
            continue
        name = name.text.decode()
        is_class = item.type == "class_definition"
        kind = "class" if is_class else ("method" if container else "function")
        out.append((kind, name, container, item, start.start_byte, child.end_byte, "python"))
        if is_class:
            body = item.child_by_field_name("body")
            if body is not None:
                python_targets(body, container + [name], out)


def go_receiver(src, node):
    recv = node.child_by_field_name("receiver")
    if recv is None:
        return None
    for p in recv.named_children:
        t = p.child_by_field_name("type")
        while t is not None and t.type in ("pointer_type", "generic_type", "parenthesized_type"):
            t = t.child_by_field_name("type") or (t.named_children[0] if t.named_children else None)
        if t is not None:
            return text_of(src, t)
    return None


def go_targets(src, root, out):
    for child in root.named_children:
        if child.type == "function_declaration":
            name = child.child_by_field_name("name").text.decode()
            out.append(("function", name, [], child, child.start_byte, child.end_byte, "go"))
        elif child.type == "method_declaration":
            name = child.child_by_field_name("name").text.decode()
            recv = go_receiver(src, child)
            out.append(("method", name, [recv] if recv else [], child, child.start_byte, child.end_byte, "go"))
        elif child.type == "type_declaration":
            specs = [c for c in child.named_children if c.type == "type_spec"]
            if len(specs) != 1:
                continue
            spec = specs[0]
            ty = spec.child_by_field_name("type")
            kind = {"struct_type": "struct", "interface_type": "interface"}.get(ty.type if ty else "", "type")
            name = spec.child_by_field_name("name").text.decode()
            out.append((kind, name, [], child, child.start_byte, child.end_byte, "go"))


RUST_KINDS = {"function_item": "function", "struct_item": "struct", "enum_item": "enum",
              "trait_item": "trait", "union_item": "struct", "macro_definition": "macro"}


def rust_targets(src, node, container, out):
    for child in node.named_children:
        t = child.type
        if t in RUST_KINDS:
            name = child.child_by_field_name("name")
            if name is None:
                continue
            name = name.text.decode()
            kind = RUST_KINDS[t]
            if kind == "function" and container:
                kind = "method"
            start = child
            # attributes between the doc comment and the item belong to the item
            cur = child.prev_named_sibling
            while cur is not None and cur.type == "attribute_item":
                start = cur
                cur = cur.prev_named_sibling
            out.append((kind, name, container, child, start.start_byte, child.end_byte, "rust"))
            if t == "trait_item":
                body = child.child_by_field_name("body")
                if body is not None:
                    rust_targets(src, body, container + [name], out)
        elif t == "impl_item":
            ty = child.child_by_field_name("type")
            body = child.child_by_field_name("body")
            if ty is not None and body is not None:
                base = re.sub(r"<.*", "", text_of(src, ty)).split("::")[-1]
                rust_targets(src, body, container + [base], out)
        elif t == "mod_item":
            name = child.child_by_field_name("name")
            body = child.child_by_field_name("body")
            if name is not None and body is not None and name.text.decode() != "tests":
                is_test = any(a.type == "attribute_item" and "test" in text_of(src, a)
                              for a in [child.prev_named_sibling] if a is not None)
                if not is_test:
                    rust_targets(src, body, container, out)


JAVA_TYPES = {"class_declaration": "class", "interface_declaration": "interface",
              "enum_declaration": "enum", "record_declaration": "class",
              "annotation_type_declaration": "interface"}


def java_targets(node, container, out):
    for child in node.named_children:
        t = child.type
        if t in JAVA_TYPES or t in ("method_declaration", "constructor_declaration"):
            name = child.child_by_field_name("name")
            if name is None:
                continue
            name = name.text.decode()
            kind = JAVA_TYPES.get(t, "method")
            if t == "method_declaration" and child.child_by_field_name("body") is None \
                    and not container:
                continue
            out.append((kind, name, container, child, child.start_byte, child.end_byte, "java"))
            if t in JAVA_TYPES:
                body = child.child_by_field_name("body")
                if body is not None:
                    java_targets(body, container + [name], out)
        elif t == "enum_body_declarations":
            java_targets(child, container, out)


def doc_of(lang, src, item):
    if lang == "python":
        return python_doc(src, item)
    if lang == "go":
        return line_comment_doc(src, item, "//")
    if lang == "rust":
        return line_comment_doc(src, item, "///", skip=lambda n: n.type == "attribute_item")
    return java_doc(src, item)


def all_doc_blocks(lang, src, root):
    """Every documentation block's first sentence in a file (for duplicate detection)."""
    keys = []
    def walk(n):
        d = None
        if lang == "python" and n.type in ("function_definition", "class_definition"):
            d = python_doc(src, n)
        elif lang == "java" and n.type == "block_comment":
            t = text_of(src, n)
            if t.startswith("/**"):
                d = (javadoc_lines(t), [(n.start_byte, n.end_byte, "")])
        elif lang in ("go", "rust") and n.type in ("comment", "line_comment", "block_comment"):
            nxt = n.next_named_sibling
            if nxt is not None and nxt.type not in ("comment", "line_comment", "block_comment"):
                d = doc_of(lang, src, nxt)
        if d:
            sent = clean_inline(first_sentence(description_paragraph(d[0])))
            if sent:
                keys.append((normalize_key(sent), d[1][0][0]))
        for c in n.children:
            walk(c)
    walk(root)
    return keys


def main():
    lang, corpus, label, out_file, stripped = sys.argv[1:6]
    parser = Parser(grammar(lang))
    files = []
    for d, dirs, names in os.walk(corpus):
        dirs.sort()
        for f in sorted(names):
            if f.endswith(EXTENSIONS[lang]):
                files.append(os.path.relpath(os.path.join(d, f), corpus))
    records, doc_keys = [], []
    for rel in files:
        src = open(os.path.join(corpus, rel), "rb").read()
        tree = parser.parse(src)
        line_of = lambda b: src.count(b"\n", 0, b) + 1
        doc_keys += [(k, rel, pos) for k, pos in all_doc_blocks(lang, src, tree.root_node)]
        if TEST_PATH[lang].search(rel):
            continue
        targets = []
        if lang == "python":
            python_targets(tree.root_node, [], targets)
        elif lang == "go":
            go_targets(src, tree.root_node, targets)
        elif lang == "rust":
            rust_targets(src, tree.root_node, [], targets)
        else:
            java_targets(tree.root_node, [], targets)
        sep = "::" if lang == "rust" else "."
        for kind, short, container, item, start, end, _ in targets:
            doc = doc_of(lang, src, item)
            if not doc:
                continue
            lines, spans = doc
            raw = first_sentence(description_paragraph(lines))
            chosen = clean_inline(raw)
            if not chosen or word_count(chosen) < MIN_WORDS:
                continue
            symbol = sep.join(container + [short])
            query = remove_own_name(clean_inline(remove_own_name_raw(raw, short, symbol)), short, symbol)
            if word_count(query) < MIN_WORDS_AFTER_NAME_REMOVAL:
                continue
            records.append({
                "repo": label, "path": rel, "symbol": symbol, "kind": kind,
                "start_line": line_of(start), "end_line": line_of(max(start, end - 1)),
                "query": query, "doc_first_sentence": chosen, "doc_key": normalize_key(chosen),
                "doc_spans": [list(s) for s in spans],
            })
    key_count = Counter(k for k, _, _ in doc_keys)
    own = {(rel, pos, k) for k, rel, pos in doc_keys}
    query_count = Counter(normalize_key(r["query"]) for r in records)
    seen = set()
    for r in records:
        mine = sum(1 for s in r["doc_spans"] if (r["path"], s[0], r["doc_key"]) in own)
        r["dup_count"] = key_count[r["doc_key"]] - mine
        r["query_dup_count"] = query_count[normalize_key(r["query"])] - 1
        r["ambiguous"] = r["dup_count"] > 0 or r["query_dup_count"] > 0
        rid = f"{label}:{r['path']}:{r['symbol']}"
        if rid in seen:
            rid += f"#L{r['start_line']}"
        seen.add(rid)
        r["id"] = rid

    # The stripped corpus: every target's documentation blanked, newlines kept.
    spans_by_file = {}
    for r in records:
        spans_by_file.setdefault(r["path"], []).extend(tuple(s) for s in r["doc_spans"])
    shutil.rmtree(stripped, ignore_errors=True)
    for d, dirs, names in os.walk(corpus):
        for f in names:
            src_path = os.path.join(d, f)
            rel = os.path.relpath(src_path, corpus)
            dst = os.path.join(stripped, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if rel not in spans_by_file:
                shutil.copyfile(src_path, dst)
                continue
            data = open(src_path, "rb").read()
            out, last = bytearray(), 0
            for a, b, keep in sorted(set(spans_by_file[rel])):
                if a < last:
                    continue
                piece = data[a:b]
                blank = bytes(c if c in b"\r\n" else 0x20 for c in piece)
                keep = keep.encode()
                if keep and len(piece) >= len(keep):
                    blank = keep + blank[len(keep):] if b"\n" not in piece[: len(keep)] else blank
                out += data[last:a] + blank
                last = b
            out += data[last:]
            assert out.count(b"\n") == data.count(b"\n"), rel
            open(dst, "wb").write(bytes(out))

    with open(out_file, "w", encoding="utf-8") as f:
        for r in records:
            rid = r.pop("id")
            f.write(json.dumps({"id": rid, **r}, ensure_ascii=False) + "\n")
    amb = sum(r["ambiguous"] for r in records)
    print(f"{label}: {len(files)} files, {len(records)} candidate symbols ({amb} ambiguous)", file=sys.stderr)


if __name__ == "__main__":
    main()
