//! Exact and regex search (`POST /api/v1/grep`, the MCP tool `grep`, `sextant grep`)
//! over the grep index the syncs write: literal, regex and case, filters, caps and
//! cursors, budgets, refused patterns, the indexed version (not the file on disk), a
//! hidden repository that never leaks, and an index rebuilt when it is missing.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support;

async fn grep(server: &support::app::TestServer, token: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{}/api/v1/grep", server.base))
        .json(&body);
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    let response = request.send().await.unwrap();
    (
        response.status().as_u16(),
        response.json().await.unwrap_or(Value::Null),
    )
}

fn lines(body: &Value) -> Vec<(String, u64)> {
    body["matches"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap_or("").to_string(),
                m["line"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_finds_literals_and_regexes_with_filters_caps_and_cursors() {
    let server = support::app::start(false).await;
    let many: String = (1..=30).map(|i| format!("needle_{i:02} = {i}\n")).collect();
    support::write(&server.root, "lib/many.py", &many);
    support::write(
        &server.root,
        "lib/slow.py",
        &format!("s = \"{}!\"\n", "a".repeat(20_000)),
    );
    let repo = server.index(&server.root, "ws").await;

    // A literal: the one line, its column, and the version it was read from.
    let (status, body) = grep(&server, None, json!({ "pattern": "validateToken" })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(lines(&body), [("src/auth.ts".to_string(), 3)]);
    let hit = &body["matches"][0];
    assert_eq!(hit["column"], 17, "{hit}");
    assert_eq!(hit["repository"], "ws");
    assert_eq!(hit["language"], "typescript");
    let record = server
        .indexer
        .meta()
        .get_file(&repo.id, "src/auth.ts")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(hit["contentHash"].as_str(), record.content_hash.as_deref());
    assert_eq!(body["indexUsed"], true);
    assert!(
        body["filesRead"].as_u64().unwrap() < body["filesIndexed"].as_u64().unwrap(),
        "the trigram index narrows the files read: {body}"
    );

    // Case: exact by default, either way on request.
    let (_, body) = grep(&server, None, json!({ "pattern": "VALIDATETOKEN" })).await;
    assert!(lines(&body).is_empty(), "{body}");
    let (_, body) = grep(
        &server,
        None,
        json!({ "pattern": "VALIDATETOKEN", "caseInsensitive": true }),
    )
    .await;
    assert_eq!(lines(&body), [("src/auth.ts".to_string(), 3)]);

    // Regex, and the same characters as a literal.
    let (_, body) = grep(
        &server,
        None,
        json!({ "pattern": r"decode\(\w+\) >", "mode": "regex" }),
    )
    .await;
    assert_eq!(lines(&body), [("src/auth.ts".to_string(), 4)], "{body}");
    assert_eq!(body["matches"][0]["matched"], "decode(token) >");
    let (_, body) = grep(&server, None, json!({ "pattern": "decode(token)" })).await;
    assert_eq!(lines(&body), [("src/auth.ts".to_string(), 4)], "{body}");

    // Filters: paths (prefix, file, glob) and languages.
    for (filter, expected) in [
        (json!({ "paths": ["src/jwt.ts"] }), vec!["src/jwt.ts"]),
        (
            json!({ "paths": ["src/"] }),
            vec!["src/auth.ts", "src/jwt.ts"],
        ),
        (json!({ "paths": ["**/auth.*"] }), vec!["src/auth.ts"]),
        (json!({ "languages": ["python"] }), vec![]),
    ] {
        let mut request = json!({ "pattern": "token: string" });
        for (k, v) in filter.as_object().unwrap() {
            request[k] = v.clone();
        }
        let (status, body) = grep(&server, None, request).await;
        assert_eq!(status, 200, "{body}");
        let mut paths: Vec<String> = lines(&body).into_iter().map(|(p, _)| p).collect();
        paths.dedup();
        assert_eq!(paths, expected, "{filter}: {body}");
    }

    // Context lines.
    let (_, body) = grep(
        &server,
        None,
        json!({ "pattern": "needle_10", "context": 2 }),
    )
    .await;
    assert_eq!(
        body["matches"][0]["before"],
        json!(["needle_08 = 8", "needle_09 = 9"])
    );
    assert_eq!(
        body["matches"][0]["after"],
        json!(["needle_11 = 11", "needle_12 = 12"])
    );

    // Caps: pages of 7 follow each other without gaps or repeats, in line order.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let mut request = json!({ "pattern": "needle_", "limit": 7 });
        if let Some(c) = &cursor {
            request["cursor"] = json!(c);
        }
        let (status, body) = grep(&server, None, request).await;
        assert_eq!(status, 200, "{body}");
        let page = lines(&body);
        assert!(page.len() <= 7);
        seen.extend(page.into_iter().map(|(_, line)| line));
        cursor = body["nextCursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            assert!(body["stopped"].is_null(), "{body}");
            break;
        }
        assert_eq!(body["stopped"], "limit");
    }
    assert_eq!(seen, (1..=30).collect::<Vec<u64>>());

    // A token budget stops before it is exceeded, with a cursor.
    let (_, body) = grep(
        &server,
        None,
        json!({ "pattern": "needle_", "maxTokens": 40 }),
    )
    .await;
    assert_eq!(body["stopped"], "budget", "{body}");
    let shown = lines(&body).len();
    assert!((1..30).contains(&shown), "{body}");
    assert!(body["tokens"].as_u64().unwrap() <= 40);
    assert!(body["nextCursor"].is_string());

    // The indexed version answers, not the file on disk (until a sync reads it).
    support::write(&server.root, "src/jwt.ts", "export const changed = 1;\n");
    let (_, body) = grep(&server, None, json!({ "pattern": "token.length" })).await;
    assert_eq!(lines(&body), [("src/jwt.ts".to_string(), 2)], "{body}");
    server.index(&server.root, "ws").await;
    let (_, body) = grep(&server, None, json!({ "pattern": "token.length" })).await;
    assert!(lines(&body).is_empty(), "{body}");
    let (_, body) = grep(&server, None, json!({ "pattern": "changed = 1" })).await;
    assert_eq!(lines(&body), [("src/jwt.ts".to_string(), 1)], "{body}");

    // A pattern that backtracking engines take exponential time on runs in linear time
    // here; one whose compiled form is too large is refused at once, with the field named.
    let started = Instant::now();
    let (status, body) = grep(
        &server,
        None,
        json!({ "pattern": "(a+)+$", "mode": "regex" }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(lines(&body).is_empty(), "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let (status, body) = grep(
        &server,
        None,
        json!({ "pattern": r"(\w{100}){100}{100}", "mode": "regex" }),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("pattern") && message.contains("simpler"),
        "{body}"
    );

    // Other refusals name their field.
    for (request, field) in [
        (json!({ "pattern": "" }), "pattern"),
        (json!({ "pattern": "(", "mode": "regex" }), "pattern"),
        (json!({ "pattern": "x", "limit": 0 }), "limit"),
        (json!({ "pattern": "x", "context": 11 }), "context"),
        (
            json!({ "pattern": "x", "cursor": "not-a-cursor" }),
            "cursor",
        ),
        (json!({ "pattern": "x", "paths": ["src/[a"] }), "paths"),
    ] {
        let (status, body) = grep(&server, None, request.clone()).await;
        assert_eq!(status, 400, "{request}: {body}");
        assert_eq!(body["error"]["code"], "bad_request", "{request}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("`{field}`")), "{request}: {body}");
    }
    let (status, body) = grep(
        &server,
        None,
        json!({ "pattern": "x", "repositories": ["nope"] }),
    )
    .await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_repository_never_answers_grep() {
    let server = support::app::start_with_tokens(false).await;
    let other = server.tmp.path().join("other");
    support::write(
        &other,
        "src/secret.ts",
        "export const secretThing = 'validateToken';\n",
    );
    server.index(&server.root, "ws").await;
    server.index(&other, "other").await;
    let reader = server.token("read", &["ws"]).await;
    let admin = server.token("admin", &[]).await;

    let (status, body) = grep(&server, Some(&admin), json!({ "pattern": "validateToken" })).await;
    assert_eq!(status, 200, "{body}");
    let repos: Vec<&str> = body["matches"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["repository"].as_str())
        .collect();
    assert_eq!(repos, ["other", "ws"], "{body}");

    let (status, body) = grep(
        &server,
        Some(&reader),
        json!({ "pattern": "validateToken" }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(lines(&body), [("src/auth.ts".to_string(), 3)], "{body}");
    assert_eq!(
        body["filesIndexed"], 2,
        "only ws's files are counted: {body}"
    );
    let (status, body) = grep(&server, Some(&reader), json!({ "pattern": "secretThing" })).await;
    assert_eq!(status, 200, "{body}");
    assert!(lines(&body).is_empty(), "{body}");
    // Naming it reads exactly like a repository that does not exist.
    let (status, body) = grep(
        &server,
        Some(&reader),
        json!({ "pattern": "secretThing", "repositories": ["other"] }),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert!(!body.to_string().contains("secret.ts"), "{body}");
    let (status, _) = grep(&server, None, json!({ "pattern": "secretThing" })).await;
    assert_eq!(status, 401);
}

/// An index written before the grep index existed (or whose grep index was lost) gets
/// one from its next sync, which reads the files again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_grep_index_is_rebuilt_by_the_next_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    support::write(&root, "a.py", "def alpha():\n    return 'first'\n");
    support::write(&root, "b.py", "def beta():\n    return 'second'\n");
    let (meta, vectors, indexer, repo) = support::bow_synced(tmp.path(), &root).await;
    let mut progress = sextant::index::Progress::silent(&repo.id);
    let grep_dir = tmp.path().join("grep");
    assert_eq!(
        indexer.grep().unwrap().snapshot(&repo.id).file_count(),
        2,
        "the sync wrote both files"
    );
    drop(indexer);
    std::fs::remove_dir_all(&grep_dir).unwrap();

    let indexer = sextant::index::Indexer::new(
        meta,
        vectors,
        std::sync::Arc::new(support::embedders::BagOfWords),
        sextant::index::IndexOptions::default(),
    )
    .unwrap()
    .with_grep(std::sync::Arc::new(
        sextant::store::grep::GrepIndex::open(&grep_dir).unwrap(),
    ));
    let repo = indexer.find_repo("ws").await.unwrap();
    let report = indexer.sync(&repo, &mut progress).await.unwrap();
    assert_eq!(report.indexed, 2, "{report:?}");
    let snapshot = indexer.grep().unwrap().snapshot(&repo.id);
    assert_eq!(snapshot.file_count(), 2);
    // And a sync after that has nothing to do.
    let repo = indexer.find_repo("ws").await.unwrap();
    let report = indexer.sync(&repo, &mut progress).await.unwrap();
    assert_eq!(report.indexed, 0, "{report:?}");
    // A removed file leaves the grep index with its records.
    std::fs::remove_file(root.join("b.py")).unwrap();
    let report = indexer.sync(&repo, &mut progress).await.unwrap();
    assert_eq!(report.removed, 1);
    let files = indexer.grep().unwrap().snapshot(&repo.id).files();
    assert_eq!(files.keys().collect::<Vec<_>>(), ["a.py"]);
    // Removing the repository removes its grep index.
    indexer.remove_repo("ws").await.unwrap();
    assert!(!grep_dir.join(&repo.id).exists());
}

/// Documentation and configuration are indexed beside code, in units of their own
/// (sections, keys), and the `kind` filter (`categories`) keeps to one of code, docs and
/// config in search and grep alike; lock files and oversized configuration are skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docs_and_config_are_indexed_beside_code_and_filtered_by_kind() {
    let server = support::app::start(false).await;
    support::write(
        &server.root,
        "README.md",
        "# Tokens\n\nIntro.\n\n## Rotating the secret\n\nSet `rotate_after` in tokenkit.yaml to rotate the signing secret;\n`validateToken` then accepts both.\n",
    );
    support::write(
        &server.root,
        "deploy/tokenkit.yaml",
        "signing:\n  rotate_after: 30\n  algorithm: HS256\nserver:\n  port: 8080\n",
    );
    support::write(
        &server.root,
        "package-lock.json",
        "{\n  \"lockfileVersion\": 3\n}\n",
    );
    let big = format!("{{\n  \"rows\": [{}0]\n}}\n", "1, ".repeat(60_000));
    support::write(&server.root, "data/rows.json", &big);
    let repo = server.index(&server.root, "ws").await;

    let files = server.indexer.meta().list_files(&repo.id).await.unwrap();
    let record = |path: &str| files.iter().find(|f| f.path == path).cloned();
    assert_eq!(
        record("README.md").unwrap().language.as_deref(),
        Some("markdown")
    );
    assert_eq!(
        record("deploy/tokenkit.yaml").unwrap().language.as_deref(),
        Some("yaml")
    );
    let lock = record("package-lock.json").expect("recorded as skipped");
    assert!(lock.skip_reason.unwrap().contains("lock file"));
    let data = record("data/rows.json").expect("recorded as skipped");
    assert!(
        data.skip_reason
            .unwrap()
            .contains("data rather than configuration")
    );

    // Sections and keys are units with breadcrumbs.
    let symbols = server
        .indexer
        .meta()
        .file_symbols(&repo.id, "README.md")
        .await
        .unwrap();
    let crumbs: Vec<&str> = symbols.iter().map(|s| s.breadcrumb.as_str()).collect();
    assert!(
        crumbs.contains(&"Tokens > Rotating the secret"),
        "{crumbs:?}"
    );
    let symbols = server
        .indexer
        .meta()
        .file_symbols(&repo.id, "deploy/tokenkit.yaml")
        .await
        .unwrap();
    let crumbs: Vec<&str> = symbols.iter().map(|s| s.breadcrumb.as_str()).collect();
    assert!(crumbs.contains(&"signing > rotate_after"), "{crumbs:?}");

    // grep by kind.
    for (kind, expected) in [
        ("docs", vec!["README.md"]),
        ("config", vec!["deploy/tokenkit.yaml"]),
        ("code", vec![]),
    ] {
        let (status, body) = grep(
            &server,
            None,
            json!({ "pattern": "rotate_after", "kind": [kind] }),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let paths: Vec<String> = lines(&body).into_iter().map(|(p, _)| p).collect();
        assert_eq!(paths, expected, "{kind}: {body}");
    }
    let (status, body) = grep(
        &server,
        None,
        json!({ "pattern": "x", "categories": ["prose"] }),
    )
    .await;
    assert_eq!(status, 400, "{body}");

    // Search by kind: only documentation answers.
    let (status, body) = {
        let response = reqwest::Client::new()
            .post(format!("{}/api/v1/search", server.base))
            .json(&json!({
                "query": "how do I rotate the signing secret",
                "categories": ["docs"],
                "minimumRelevanceThreshold": 0.0,
            }))
            .send()
            .await
            .unwrap();
        (
            response.status().as_u16(),
            response.json::<Value>().await.unwrap(),
        )
    };
    assert_eq!(status, 200, "{body}");
    let results = body["response"]["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{body}");
    assert!(results.iter().all(|r| r["path"] == "README.md"), "{body}");
    assert_eq!(
        results[0]["breadcrumb"], "Tokens > Rotating the secret",
        "{body}"
    );
    // Inline code that names a code symbol links the section to it.
    let mentions = &body["response"]["metadata"][0]["mentions"];
    assert_eq!(mentions[0]["name"], "validateToken", "{body}");
    assert_eq!(mentions[0]["path"], "src/auth.ts", "{body}");
    assert_eq!(
        mentions.as_array().map(Vec::len),
        Some(1),
        "`rotate_after` names no code: {body}"
    );
    let graph = body["content"][0]["text"].as_str().unwrap_or("");
    assert!(graph.contains("Mentions: validateToken"), "{graph}");
}

/// The code of a chunk is stored once, in the grep index: the chunk store keeps where a
/// row lies in its file (the lines of the file's version) and reads the lines back; rows
/// whose file version the grep index no longer holds are left out of reads until the
/// next sync writes them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunks_code_is_kept_once_in_the_grep_index() {
    use sextant::store::VectorStore;

    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    let source = "import os\n\n\nclass Greeter:\n    \"\"\"Says hello.\"\"\"\n\n    def greet(self, name):\n        return 'hello ' + name\n\n    def part(self, name):\n        return 'bye ' + name\n\n\ndef farewell(name):\r\n    return os.sep + name\n";
    support::write(&root, "greet.py", source);
    let (meta, vectors, indexer, repo) = support::bow_synced(tmp.path(), &root).await;
    let mut progress = sextant::index::Progress::silent(&repo.id);

    // Each row reads back exactly its lines of the file (a `\r\n` line included).
    let rows = vectors.file_chunks(&repo.id, "greet.py").await.unwrap();
    let lines: Vec<&str> = source.split('\n').collect();
    let names: Vec<&str> = rows.iter().map(|r| r.chunk.name.as_str()).collect();
    for want in ["Greeter", "greet", "part", "farewell"] {
        assert!(names.contains(&want), "{want} among {names:?}");
    }
    for row in &rows {
        let c = &row.chunk;
        if c.node_kind == sextant::parse::SymbolKind::File {
            // The file's outline is made, not cut: it keeps its text.
            assert!(!row.code_in_file);
            continue;
        }
        let expected = lines[c.start_line as usize - 1..c.end_line as usize].join("\n");
        assert_eq!(c.full_source, expected.trim_end_matches('\r'), "{}", c.name);
        assert!(row.code_in_file, "{} read from the grep index", c.name);
    }
    let method = rows.iter().find(|r| r.chunk.name == "greet").unwrap();
    assert!(
        method.chunk.content.starts_with("def greet"),
        "{:?}",
        method.chunk.content
    );

    // The chunk table holds no copy of the code: a NUL stands for it.
    let kept: Vec<Vec<String>> = support::stored_texts(tmp.path(), &["name", "full_source"])
        .await
        .into_iter()
        .filter(|row| row[1] != "\0")
        .collect();
    assert!(
        !kept
            .iter()
            .any(|row| ["Greeter", "greet", "part", "farewell"].contains(&row[0].as_str())),
        "code stored in the chunk table: {kept:?}"
    );

    // A search answers with the code.
    let hits = vectors
        .text_search("farewell", 5, &Default::default())
        .await
        .unwrap();
    let top = hits
        .iter()
        .find(|h| h.row.chunk.name == "farewell")
        .expect("found");
    assert!(top.row.chunk.full_source.contains("os.sep + name"));

    // A grep index lost: the rows are left out (no error), and the next sync rewrites the
    // file, after which they read back again.
    drop(indexer);
    std::fs::remove_dir_all(tmp.path().join("grep")).unwrap();
    let grep = std::sync::Arc::new(
        sextant::store::grep::GrepIndex::open(tmp.path().join("grep")).unwrap(),
    );
    let lance = sextant::store::LanceStore::open(sextant::store::LanceStoreOptions::new(
        tmp.path().join("lance").to_string_lossy(),
        support::embedders::BOW_DIMS,
    ))
    .await
    .unwrap()
    .with_sources(grep.clone());
    let lance = std::sync::Arc::new(lance);
    let left = lance.file_chunks(&repo.id, "greet.py").await.unwrap();
    assert!(
        left.iter()
            .all(|r| r.chunk.node_kind == sextant::parse::SymbolKind::File),
        "only the outline, which keeps its text: {:?}",
        left.iter().map(|r| &r.chunk.name).collect::<Vec<_>>()
    );
    let indexer = sextant::index::Indexer::new(
        meta,
        lance.clone(),
        std::sync::Arc::new(support::embedders::BagOfWords),
        sextant::index::IndexOptions::default(),
    )
    .unwrap()
    .with_grep(grep);
    let repo = indexer.find_repo("ws").await.unwrap();
    // `sextant doctor`'s audit says which files' code is missing (a repair changes nothing
    // here: the sync reads them again).
    for repair in [false, true] {
        let audit = indexer.audit(repair).await.unwrap().remove(0);
        assert_eq!(audit.missing_code, ["greet.py"], "{audit:?}");
        assert!(audit.missing_chunks.is_empty() && audit.orphan_chunks.is_empty());
        assert!(!audit.is_consistent());
    }
    let report = indexer.sync(&repo, &mut progress).await.unwrap();
    assert_eq!(report.indexed, 1, "{report:?}");
    let audit = indexer.audit(false).await.unwrap().remove(0);
    assert!(audit.is_consistent(), "{audit:?}");
    let again = lance.file_chunks(&repo.id, "greet.py").await.unwrap();
    assert_eq!(again.len(), rows.len());
    assert!(again.iter().all(|r| !r.chunk.full_source.is_empty()
        && (r.code_in_file || r.chunk.node_kind == sextant::parse::SymbolKind::File)));
}
