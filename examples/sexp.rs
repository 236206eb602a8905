//! Prints the tree-sitter syntax tree of a file (a debugging aid for grammar work).
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: sexp <file.ts>");
        std::process::exit(2);
    };
    let src = std::fs::read_to_string(&path).expect("readable UTF-8 file");
    let lang: tree_sitter::Language = if path.ends_with(".js") {
        tree_sitter_javascript::LANGUAGE.into()
    } else if path.ends_with(".tsx") {
        tree_sitter_typescript::LANGUAGE_TSX.into()
    } else {
        tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
    };
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&lang).expect("grammar loads");
    let tree = parser.parse(&src, None).expect("parses");
    let mut cursor = tree.walk();
    let mut depth = 0;
    loop {
        let n = cursor.node();
        println!(
            "{:indent$}{} {:?} [{}..{}] {:?}",
            "",
            n.kind(),
            cursor.field_name(),
            n.start_position(),
            n.end_position(),
            if n.child_count() == 0 {
                &src[n.byte_range()]
            } else {
                ""
            },
            indent = depth * 2
        );
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
            depth -= 1;
        }
    }
}
