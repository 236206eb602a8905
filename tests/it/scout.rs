//! Scout on the fixture project (`fixtures/scout/`): the five scenarios with the
//! exact pointers a person would list, through the service, REST and MCP.

use std::path::Path;

use sextant::auth::Principal;
use sextant::index::Progress;
use sextant::scout::{Risk, ScoutResponse};
use sextant::service::ScoutRequest;

use crate::support;

/// A server (no job runner) with the fixture project indexed as `scout`.
async fn indexed() -> support::app::TestServer {
    let server = support::app::start(false).await;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scout");
    let repo = server
        .indexer
        .register_path(&root, Some("scout"), Default::default())
        .await
        .unwrap();
    server
        .indexer
        .sync(&repo, &mut Progress::silent(&repo.id))
        .await
        .unwrap();
    server
}

async fn scout(server: &support::app::TestServer, query: &str) -> ScoutResponse {
    let request = ScoutRequest {
        query: query.into(),
        ..ScoutRequest::default()
    };
    server
        .state
        .service
        .scout(&Principal::local(), request, |_, _| {})
        .await
        .unwrap()
}

/// `(location, risk)` of every pointer.
fn pointers(r: &ScoutResponse) -> Vec<(String, Risk)> {
    r.pointers.iter().map(|p| (p.location.clone(), p.risk)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_the_fixture() {
    let server = indexed().await;
    for q in [
        "what breaks if I add a variant to ShapeKind",
        "Color: adding a variant",
        "add a parameter to parseConfig",
        "add a member to the Store interface",
        "symbol = Solid > volume",
        "checkToken gets a second parameter",
    ] {
        let r = scout(&server, q).await;
        eprintln!("=== {q}\n{}\n{:?}\n{:#?}", r.summary, r.meta, pointers(&r));
    }
}
