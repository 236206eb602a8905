//! The web console: one page at the server's root (under `--base-path`), its script and
//! style embedded in the binary. It speaks only the public REST + SSE API under
//! `/api/v1` (and `/metrics`), with the token the person signs in with, so it is also an
//! example client; it imports nothing from the other adapters.
//!
//! Written by hand, without a front-end toolchain: plain HTML, CSS and one script of
//! standard JavaScript (no dependencies), so building the server needs no Node.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};

/// The page; `{{BASE}}` becomes the base path.
const INDEX: &str = include_str!("assets/index.html");
/// The script.
const APP_JS: &str = include_str!("assets/app.js");
/// The style.
const APP_CSS: &str = include_str!("assets/app.css");
/// The icon.
const ICON: &str = include_str!("assets/icon.svg");

/// What the page may load and reach: its own origin only, no inline script.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'self'; form-action 'none'; frame-ancestors 'none'";

/// The console's routes, relative to the base path `base` (`""` or `/x`).
pub fn routes(base: &str) -> Router {
    Router::new()
        .route("/", page(base))
        .route(
            "/console/app.js",
            get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/console/app.css",
            get(|| async { asset(APP_CSS, "text/css; charset=utf-8") }),
        )
        .route(
            "/console/icon.svg",
            get(|| async { asset(ICON, "image/svg+xml") }),
        )
}

/// The page, for a server under the base path `base`.
pub fn page(base: &str) -> MethodRouter {
    let page = INDEX.replace("{{BASE}}", &format!("{base}/"));
    get(move || {
        let page = page.clone();
        async move { asset(page, "text/html; charset=utf-8") }
    })
}

/// An asset with its type, revalidated on every load (the binary may change), under the
/// page's content security policy.
fn asset(body: impl Into<String>, content_type: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
        ],
        body.into(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_its_base_and_loads_no_inline_script() {
        let page = INDEX.replace("{{BASE}}", "/sextant/");
        assert!(page.contains(r#"<base href="/sextant/">"#));
        assert!(!page.contains("{{"));
        // Every script is a file of the console (the policy forbids inline ones).
        for (i, _) in page.match_indices("<script") {
            let tag = &page[i..page[i..].find('>').map_or(page.len(), |e| i + e)];
            assert!(tag.contains(r#"src="console/"#), "{tag}");
        }
    }
}
