//! Remote embedding and rerank providers against a local mock HTTP server: request
//! shapes, batching, ordering, auth, retries, timeouts and bad answers.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use sextant::embed::http::{HttpClient, RetryPolicy};
use sextant::embed::openai::OpenAiOptions;
use sextant::embed::rerank::RerankStyle;
use sextant::embed::voyage::VoyageOptions;
use sextant::embed::{
    CachedEmbedder, EmbedConfig, EmbedError, EmbedProvider, Embedder, HttpReranker, InputKind,
    MemoryCache, OpenAiEmbedder, Reranker, VoyageEmbedder, VoyageReranker, embed_all, embed_query,
};
use support::mock_http::{Behaviour, MockServer, mock_vector};

fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(50),
        timeout: Duration::from_millis(500),
    }
}

fn client(key: Option<&str>) -> HttpClient {
    HttpClient::new("mock", key.map(str::to_string), fast_policy()).expect("client")
}

fn openai(server: &MockServer, dims: usize, send_dimensions: bool) -> OpenAiEmbedder {
    OpenAiEmbedder::new(
        client(Some("sk-test")),
        OpenAiOptions {
            base_url: format!("{}/v1", server.url),
            model: "mock-embed".into(),
            dims,
            send_dimensions,
            query_prefix: "search_query: ".into(),
            document_prefix: "search_document: ".into(),
            max_text_tokens: 1000,
            max_texts: 64,
            max_batch_tokens: 100_000,
        },
    )
}

fn texts(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("function f{i}() {{ return {i}; }}"))
        .collect()
}

#[tokio::test]
async fn openai_compatible_batches_orders_and_prefixes() {
    let server = MockServer::start().await;
    let embedder = openai(&server, 8, false);
    let input = texts(150);
    let vectors = embed_all(&embedder, &input, InputKind::Document)
        .await
        .expect("embed");
    assert_eq!(vectors.len(), 150);
    // The mock answers in reverse order with indexes: results must be back in input order.
    for (t, v) in input.iter().zip(&vectors) {
        assert_eq!(v, &mock_vector(&format!("search_document: {t}"), 8));
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "64 texts per request");
    assert_eq!(requests[0].auth.as_deref(), Some("Bearer sk-test"));
    assert_eq!(requests[0].body["model"], "mock-embed");
    assert!(requests[0].body.get("dimensions").is_none());

    let q = embed_query(&embedder, "auth token").await.expect("query");
    assert_eq!(q, mock_vector("search_query: auth token", 8));
}

#[tokio::test]
async fn openai_compatible_sends_dimensions_and_checks_width() {
    let server = MockServer::start().await;
    let embedder = openai(&server, 16, true);
    let v = embedder
        .embed(&texts(2), InputKind::Document)
        .await
        .expect("embed");
    assert_eq!(v[0].len(), 16);
    assert_eq!(server.requests()[0].body["dimensions"], 16);

    // Configured 32 but the server (ignoring `dimensions`) answers 8: refused.
    let wrong = openai(&server, 32, false);
    let err = wrong
        .embed(&texts(1), InputKind::Document)
        .await
        .expect_err("width mismatch");
    assert!(matches!(err, EmbedError::BadResponse { .. }), "{err}");
}

#[tokio::test]
async fn openai_dims_are_probed_when_not_configured() {
    let server = MockServer::start().await;
    let config = EmbedConfig {
        provider: EmbedProvider::Openai,
        base_url: Some(format!("{}/v1", server.url)),
        model: Some("mock-embed".into()),
        ..EmbedConfig::default()
    };
    let embedder = config
        .build(std::path::Path::new("/nonexistent"), |_| {})
        .await
        .expect("build");
    assert_eq!(embedder.dims(), 8);
    assert_eq!(embedder.model_id(), "openai:mock-embed:8");

    let missing = EmbedConfig {
        provider: EmbedProvider::Openai,
        ..EmbedConfig::default()
    };
    let err = missing
        .build(std::path::Path::new("/nonexistent"), |_| {})
        .await
        .err()
        .expect("no URL");
    assert!(err.to_string().contains("--embed-url"), "{err}");
}

#[tokio::test]
async fn voyage_sends_input_type_dimension_and_key() {
    let server = MockServer::start().await;
    let embedder = VoyageEmbedder::new(
        client(Some("pa-key")),
        VoyageOptions {
            base_url: format!("{}/v1", server.url),
            model: "voyage-code-3".into(),
            dims: 256,
        },
    )
    .expect("voyage");
    assert_eq!(embedder.dims(), 256);
    let docs = embedder
        .embed(&texts(3), InputKind::Document)
        .await
        .expect("docs");
    assert_eq!(docs[2], mock_vector(&texts(3)[2], 256));
    embed_query(&embedder, "where is the token validated")
        .await
        .expect("query");
    let requests = server.requests();
    assert_eq!(requests[0].body["input_type"], "document");
    assert_eq!(requests[0].body["output_dimension"], 256);
    assert_eq!(requests[0].body["truncation"], true);
    assert_eq!(requests[1].body["input_type"], "query");
    assert_eq!(requests[1].auth.as_deref(), Some("Bearer pa-key"));

    let bad = VoyageEmbedder::new(
        client(Some("k")),
        VoyageOptions {
            dims: 300,
            ..VoyageOptions::default()
        },
    );
    assert!(matches!(bad, Err(EmbedError::Config(_))));
}

#[tokio::test]
async fn transient_failures_are_retried_and_permanent_ones_are_not() {
    let server = MockServer::start().await;
    let embedder = openai(&server, 8, false);

    // 429 with Retry-After 0, then 503: the third attempt succeeds.
    server.plan([Behaviour::Fail(429, Some(0)), Behaviour::Fail(503, None)]);
    embedder
        .embed(&texts(2), InputKind::Document)
        .await
        .expect("retried to success");
    assert_eq!(server.requests().len(), 3);

    // 400 is the caller's fault: no retry.
    server.plan([Behaviour::Fail(400, None)]);
    let err = embedder
        .embed(&texts(1), InputKind::Document)
        .await
        .expect_err("400");
    assert!(matches!(err, EmbedError::Http { status: 400, .. }), "{err}");
    assert_eq!(server.requests().len(), 4);

    // A server that keeps failing: 1 + max_retries attempts, then the last error.
    server.plan(std::iter::repeat_n(Behaviour::Fail(502, None), 10));
    let err = embedder
        .embed(&texts(1), InputKind::Document)
        .await
        .expect_err("502");
    assert!(matches!(err, EmbedError::Http { status: 502, .. }), "{err}");
    assert_eq!(server.requests().len(), 4 + 4);
}

#[tokio::test]
async fn timeouts_are_retried_then_reported() {
    let server = MockServer::start().await;
    let embedder = openai(&server, 8, false);
    server.plan([Behaviour::Stall(Duration::from_secs(2))]);
    embedder
        .embed(&texts(1), InputKind::Document)
        .await
        .expect("a stalled request is retried");
    assert_eq!(server.requests().len(), 2);

    server.plan(std::iter::repeat_n(
        Behaviour::Stall(Duration::from_secs(2)),
        4,
    ));
    let err = embedder
        .embed(&texts(1), InputKind::Document)
        .await
        .expect_err("always stalled");
    assert!(matches!(err, EmbedError::Transport { .. }), "{err}");
}

#[tokio::test]
async fn short_answers_are_refused() {
    let server = MockServer::start().await;
    let embedder = openai(&server, 8, false);
    server.plan([Behaviour::DropOne]);
    let err = embedder
        .embed(&texts(3), InputKind::Document)
        .await
        .expect_err("one vector missing");
    assert!(err.to_string().contains("2 vectors for 3 texts"), "{err}");
}

#[tokio::test]
async fn rerankers_return_scores_in_document_order() {
    let server = MockServer::start().await;
    let docs: Vec<String> = [
        "parse csv rows",
        "validate the auth token",
        "token bucket rate limiter",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let query = "validate auth token";
    let expected = vec![0.0, 3.0, 1.0];

    let voyage = VoyageReranker::new(
        client(Some("k")),
        &format!("{}/v1", server.url),
        "rerank-2.5",
    );
    assert_eq!(voyage.rerank(query, &docs).await.expect("voyage"), expected);
    let tei = HttpReranker::new(
        client(None),
        &format!("{}/tei", server.url),
        None,
        RerankStyle::Tei,
    );
    assert_eq!(tei.rerank(query, &docs).await.expect("tei"), expected);
    let cohere = HttpReranker::new(
        client(Some("c")),
        &format!("{}/cohere/v1", server.url),
        Some("rerank-english-v3.0".into()),
        RerankStyle::Cohere,
    );
    assert_eq!(cohere.rerank(query, &docs).await.expect("cohere"), expected);

    let requests = server.requests();
    assert_eq!(requests[0].body["model"], "rerank-2.5");
    assert!(requests[1].body.get("texts").is_some() && requests[1].auth.is_none());
    assert_eq!(requests[2].body["model"], "rerank-english-v3.0");
    assert!(voyage.rerank(query, &[]).await.expect("empty").is_empty());
    assert_eq!(server.requests().len(), 3, "no request for no documents");
}

#[tokio::test]
async fn the_cache_spares_repeated_requests() {
    let server = MockServer::start().await;
    let cached = CachedEmbedder::new(
        Arc::new(openai(&server, 8, false)),
        Arc::new(MemoryCache::new(1000)),
    );
    let input = texts(10);
    let first = embed_all(&cached, &input, InputKind::Document)
        .await
        .expect("first");
    let second = embed_all(&cached, &input, InputKind::Document)
        .await
        .expect("second");
    assert_eq!(first, second);
    assert_eq!(server.requests().len(), 1);
    assert_eq!(cached.stats().misses, 10);
    assert_eq!(cached.stats().hits, 10);
}
