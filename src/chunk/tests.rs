use super::*;
use crate::parse::parse_bytes;
use std::path::Path;

fn chunks_of(name: &str, source: &str) -> Vec<CodeChunk> {
    let parsed =
        parse_bytes(Path::new(name), source.as_bytes(), &Default::default()).expect("parses");
    chunk_file(name, source, &parsed, &ChunkOptions::default())
}

fn find<'a>(chunks: &'a [CodeChunk], breadcrumb: &str) -> &'a CodeChunk {
    chunks
        .iter()
        .find(|c| c.breadcrumb == breadcrumb)
        .unwrap_or_else(|| {
            panic!(
                "no chunk {breadcrumb}; have {:?}",
                chunks.iter().map(|c| &c.breadcrumb).collect::<Vec<_>>()
            )
        })
}

const SERVICE: &str = "import jwt from 'jsonwebtoken';
import { JwtPayload } from '../models/auth';
import { unused } from './unused';

export interface Claims { userId: string; exp: number }

const TOKEN_EXPIRY = 3600;

export class TokenService {
  private secret: string;

  /** Validates a JWT token and returns the decoded payload. */
  async validateToken(token: string): Promise<JwtPayload | null> {
    try {
      return jwt.verify(token, this.secret) as JwtPayload;
    } catch {
      return null;
    }
  }

  refresh(claims: Claims): string {
    const helper = () => {
      return jwt.sign(claims, this.secret, { expiresIn: TOKEN_EXPIRY });
    };
    return helper();
  }
}
";

#[test]
fn parent_collapses_method_bodies_and_children_keep_them() {
    let chunks = chunks_of("src/auth/tokenService.ts", SERVICE);
    let class = find(&chunks, "TokenService");
    assert!(class.has_collapsed_children);
    assert!(
        class
            .content
            .contains("async validateToken(token: string): Promise<JwtPayload | null> { … }")
    );
    assert!(!class.content.contains("jwt.verify"));
    assert!(
        class.content.contains("private secret: string;"),
        "non-body members stay"
    );
    let method = find(&chunks, "TokenService > validateToken");
    assert!(method.content.contains("jwt.verify(token, this.secret)"));
    assert!(method.is_leaf());
    // A method's nested function is collapsed in the method and expanded in its own chunk.
    let refresh = find(&chunks, "TokenService > refresh");
    assert!(refresh.content.contains("const helper = () => { … };"));
    let helper = find(&chunks, "TokenService > refresh > helper");
    assert!(helper.content.contains("jwt.sign"));
    assert_eq!(helper.parent_chunk_id.as_deref(), Some(refresh.id.as_str()));
    assert!(refresh.child_chunk_ids.contains(&helper.id));
}

#[test]
fn relevant_imports_are_exactly_the_used_ones() {
    let chunks = chunks_of("src/auth/tokenService.ts", SERVICE);
    let method = find(&chunks, "TokenService > validateToken");
    assert_eq!(
        method.relevant_imports,
        [
            "import jwt from 'jsonwebtoken';",
            "import { JwtPayload } from '../models/auth';"
        ]
    );
    // The class content shows only signatures: it uses JwtPayload, not jwt.
    let class = find(&chunks, "TokenService");
    assert_eq!(
        class.relevant_imports,
        ["import { JwtPayload } from '../models/auth';"]
    );
    // Imports never list themselves.
    assert!(find(&chunks, "import:./unused").relevant_imports.is_empty());
}

#[test]
fn embedding_text_has_the_blueprint_preamble() {
    let chunks = chunks_of("src/auth/tokenService.ts", SERVICE);
    let method = find(&chunks, "TokenService > validateToken");
    let expected_head = "[TypeScript] src/auth/tokenService.ts > TokenService > validateToken
Purpose: Validates a JWT token and returns the decoded payload.
Signature: async validateToken(token: string): Promise<JwtPayload | null>
Dependencies: jsonwebtoken, ../models/auth

---
async validateToken(token: string): Promise<JwtPayload | null> {
  try {";
    assert!(
        method.embedding_text.starts_with(expected_head),
        "{}",
        method.embedding_text
    );
    let refresh = find(&chunks, "TokenService > refresh");
    assert!(
        refresh.embedding_text.contains(
            "Referenced symbols:\n- Claims: interface Claims { userId: string; exp: number }\n"
        ),
        "{}",
        refresh.embedding_text
    );
    let import = find(&chunks, "import:jsonwebtoken");
    assert_eq!(
        import.embedding_text,
        "[TypeScript] src/auth/tokenService.ts > import:jsonwebtoken\n---\nimport jwt from 'jsonwebtoken';"
    );
}

#[test]
fn search_text_splits_identifiers() {
    let chunks = chunks_of(
        "a.ts",
        "export const MAX_RETRY_COUNT = 3;\nfunction validateToken() {}\n",
    );
    assert!(
        find(&chunks, "MAX_RETRY_COUNT")
            .search_text
            .contains("max retry count")
    );
    assert!(
        find(&chunks, "validateToken")
            .search_text
            .contains("validate token")
    );
}

#[test]
fn ids_are_deterministic_and_distinct_for_duplicates() {
    let src = "describe('a', () => {\n  it('x', () => {\n    run();\n  });\n  it('x', () => {\n    run();\n  });\n});\n";
    let first = chunks_of("a.test.ts", src);
    let second = chunks_of("a.test.ts", src);
    assert_eq!(first, second);
    let ids: std::collections::HashSet<_> = first.iter().map(|c| &c.id).collect();
    assert_eq!(ids.len(), first.len(), "duplicate names get distinct ids");
    // Ids depend on the path.
    let moved = chunks_of("b.test.ts", src);
    assert_ne!(first[0].id, moved[0].id);
    // Editing a body does not move ids.
    let edited = chunks_of("a.test.ts", &src.replace("run();", "other();"));
    assert_eq!(
        first.iter().map(|c| &c.id).collect::<Vec<_>>(),
        edited.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
}

#[test]
fn oversized_embedding_text_is_cut_at_a_line_with_a_note() {
    let mut src = String::from("export const TABLE = [\n");
    for i in 0..400 {
        src.push_str(&format!("  'entry number {i} with some padding text',\n"));
    }
    src.push_str("];\n");
    let parsed =
        parse_bytes(Path::new("t.ts"), src.as_bytes(), &Default::default()).expect("parses");
    let options = ChunkOptions {
        max_embedding_tokens: 500,
        ..ChunkOptions::default()
    };
    let chunks = chunk_file("t.ts", &src, &parsed, &options);
    let table = &chunks[0];
    assert!(table.truncated);
    assert!(
        table.embedding_tokens <= 500,
        "{} tokens",
        table.embedding_tokens
    );
    assert!(table.embedding_text.contains("// … truncated:"));
    assert!(table.full_source.ends_with("];"), "fullSource stays whole");
}

#[test]
fn full_source_is_whole_lines_and_content_is_dedented() {
    let chunks = chunks_of(
        "a.ts",
        "class A {\n    m() {\n        return 1;\n    }\n}\n",
    );
    let m = find(&chunks, "A > m");
    assert_eq!(m.full_source, "    m() {\n        return 1;\n    }");
    assert_eq!(m.content, "m() {\n    return 1;\n}");
    assert_eq!((m.start_line, m.end_line), (2, 4));
}

#[test]
fn python_bodies_collapse_to_an_ellipsis() {
    let source = "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        x = 1\n        return x\n";
    let parsed = crate::parse::parse_bytes(
        std::path::Path::new("a.py"),
        source.as_bytes(),
        &crate::parse::ParseLimits::default(),
    )
    .expect("parses");
    let chunks = crate::chunk::chunk_file("a.py", source, &parsed, &Default::default());
    let class = &chunks[0];
    assert!(
        class.content.contains("def f(self):\n        …"),
        "{}",
        class.content
    );
    assert!(!class.content.contains("return x"));
}
