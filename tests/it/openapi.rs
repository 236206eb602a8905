//! The committed OpenAPI document (`openapi/openapi.json`) is what the code generates:
//! CI bots read the committed file, so it must never drift. Regenerate with
//! `cargo run -- openapi > openapi/openapi.json` (or run this test with
//! `SEXTANT_UPDATE_OPENAPI=1`).

#[test]
fn committed_openapi_document_matches_the_code() {
    let generated = sextant::cli::openapi_json().unwrap() + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi/openapi.json");
    if std::env::var_os("SEXTANT_UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "openapi/openapi.json is stale: regenerate it with `cargo run -- openapi > \
         openapi/openapi.json` and commit it"
    );
    let doc: serde_json::Value = serde_json::from_str(&committed).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    // Every operation documents its error shape and is tagged.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            assert!(op["tags"].is_array(), "{method} {path} has no tag");
            assert!(
                op["description"].is_string() || op["summary"].is_string(),
                "{method} {path} is undocumented"
            );
        }
    }
}
