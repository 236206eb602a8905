fn main() {
    let path = std::env::args().nth(1).unwrap();
    let src = std::fs::read_to_string(&path).unwrap();
    let mut p = tree_sitter::Parser::new();
    p.set_language(&tree_sitter_javascript::LANGUAGE.into())
        .unwrap();
    let t = std::time::Instant::now();
    let tree = p.parse(&src, None).unwrap();
    let e = t.elapsed();
    println!(
        "tree-sitter only: {:?} {:.1} MB/s {}",
        e,
        src.len() as f64 / 1e6 / e.as_secs_f64(),
        tree.root_node().child_count()
    );
    let t = std::time::Instant::now();
    let parsed = sextant::parse::parse_bytes(
        std::path::Path::new(&path),
        src.as_bytes(),
        &Default::default(),
    )
    .unwrap();
    let e1 = t.elapsed();
    let chunks = sextant::chunk::chunk_file("x", &src, &parsed, &Default::default());
    let e2 = t.elapsed();
    println!(
        "parse: {:?} parse+chunk: {:?} chunks {}",
        e1,
        e2,
        chunks.len()
    );
}
