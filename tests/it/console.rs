//! The web console in a real browser (issue 42): headless Chromium driven over WebDriver
//! against the real binary serving under `--base-path /sextant` with tokens. An admin
//! signs in, registers a small repository and watches its sync reach `ready`, searches,
//! opens a symbol, runs Scout and creates a read token; the read token's person signs
//! in and finds no admin action, and the server refuses one sent anyway. Screenshots of
//! each page are saved (in `target/console-shots` by default, `SEXTANT_SHOTS` to choose).

use crate::support;

use std::path::PathBuf;

use serde_json::json;
use support::available;
use support::models::static_model;
use support::process::{Served, json_of};
use support::webdriver::Browser;

fn shots() -> PathBuf {
    std::env::var_os("SEXTANT_SHOTS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/console-shots"),
        PathBuf::from,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_index_search_and_scout_in_a_real_browser() {
    let Some(model) = available(
        static_model(),
        "the console in a browser (needs the static model)",
    ) else {
        return;
    };
    let Some(browser) = available(
        Browser::start(1280, 900, &shots()).await,
        "the console in a browser",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = (tmp.path().join("data"), tmp.path().join("ws"));
    support::token_workspace(&ws);
    // A git working tree with a worktree whose uncommitted work changes `decode`.
    {
        let git = git2::Repository::init(&ws).unwrap();
        let mut index = git.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = git.find_tree(index.write_tree().unwrap()).unwrap();
        let who = git2::Signature::now("t", "t@example.com").unwrap();
        let head = git
            .commit(Some("HEAD"), &who, &who, "initial", &tree, &[])
            .unwrap();
        let branch = git
            .branch("feature", &git.find_commit(head).unwrap(), false)
            .unwrap();
        let mut options = git2::WorktreeAddOptions::new();
        options.reference(Some(branch.get()));
        let feature = tmp.path().join("ws-feature");
        git.worktree("feature", &feature, Some(&options)).unwrap();
        support::write(
            &feature,
            "src/jwt.ts",
            "export function decode(token: string, strict = false) {\n  return strict ? 0 : token.split('.').length;\n}\n",
        );
    }
    let created = support::process::sextant_static(&data, &model)
        .args([
            "token",
            "create",
            "--scope",
            "admin",
            "--name",
            "console-admin",
        ])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let admin = String::from_utf8(created.stdout)
        .unwrap()
        .trim()
        .to_string();
    let mut command = support::process::sextant_static(&data, &model);
    command.args(["serve", "--bind", "127.0.0.1:0", "--base-path", "/sextant"]);
    let server = Served::start(command);
    let base = server.url.clone();
    assert!(base.ends_with("/sextant"), "{base}");

    // The page, under the base path with or without its slash; no token yet: sign in.
    let http = reqwest::Client::new();
    for url in [base.clone(), format!("{base}/")] {
        let page = http.get(&url).send().await.unwrap();
        assert_eq!(page.status(), 200, "{url}");
        assert!(
            page.text()
                .await
                .unwrap()
                .contains(r#"<base href="/sextant/">"#)
        );
    }
    browser.open(&format!("{base}/")).await;
    browser.find("#token", 20).await;
    browser.fill("#token", "sxt_not_a_token").await;
    browser.click("#sign-in").await;
    browser
        .wait_text("#main", "unknown or revoked API token", 10)
        .await;
    browser.screenshot("1-sign-in").await;
    browser.fill("#token", &admin).await;
    browser.click("#sign-in").await;
    browser.wait_text("#whoami", "admin", 10).await;

    // Register the repository; its page follows the sync to `ready`.
    browser
        .wait_text("#main", "No repository is registered yet", 10)
        .await;
    browser.fill("#source", &ws.to_string_lossy()).await;
    browser.fill("#repo-name", "ws").await;
    browser.click("#register").await;
    browser.wait_text("h1", "ws", 10).await;
    browser.wait_text("#main", "ready", 60).await;
    browser.wait_text("#main", "Recent jobs", 10).await;
    browser.screenshot("2-repository").await;
    browser.open(&format!("{base}/#/repos")).await;
    browser.wait_text("tr[data-repo=ws]", "ready", 10).await;

    // Search as an agent gets it.
    let q = "where is the bearer token checked";
    browser
        .open(&format!("{base}/#/search?q={}", q.replace(' ', "%20")))
        .await;
    browser.wait_text("#summary", "tokens", 30).await;
    let first = browser.wait_text("#result-0", "validateToken", 10).await;
    assert!(first.contains("src/auth.ts"), "{first}");
    // Its callee is a link to the callee's symbol page, by name.
    let link = browser.text("#result-0 .muted a").await;
    assert_eq!(link, "decode");
    assert!(browser.find_now("svg.graph g.node").await.is_some());
    browser.screenshot("3-search").await;
    // On a phone's width nothing runs off the side.
    browser.resize(390, 844).await;
    let overflow = browser
        .script(
            "return document.documentElement.scrollWidth - window.innerWidth;",
            json!([]),
        )
        .await;
    assert!(overflow.as_i64().is_some_and(|o| o <= 0), "{overflow}");
    browser.screenshot("3-search-phone").await;
    browser.resize(1280, 900).await;
    // A system in dark mode gets the dark page.
    let background = "return getComputedStyle(document.body).backgroundColor;";
    let light = browser.script(background, json!([])).await;
    browser
        .cdp(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
        )
        .await;
    let dark = browser.script(background, json!([])).await;
    assert_eq!(light, json!("rgb(250, 251, 252)"));
    assert_eq!(dark, json!("rgb(15, 20, 25)"));
    browser.screenshot("3-search-dark").await;
    browser
        .cdp(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": "light"}]}),
        )
        .await;

    // The symbol page: its definition and what it calls.
    browser.click("#result-0 strong a").await;
    browser.wait_text("#symbol", "validateToken", 20).await;
    browser.wait_text("#symbol", "decode", 10).await;
    assert!(browser.find_now("#symbol svg.graph g.node").await.is_some());
    browser.screenshot("4-symbol").await;

    // Scout streams its exploration, then its answer.
    browser
        .open(&format!(
            "{base}/#/scout?q={}",
            "what breaks if decode changes".replace(' ', "%20")
        ))
        .await;
    browser.wait_text("#scout-result", "Summary", 60).await;
    browser.wait_text("#scout-feed", "validateToken", 10).await;
    browser.screenshot("5-scout").await;

    // Settings: changed as JSON, saved, shown.
    browser.open(&format!("{base}/#/repo/ws")).await;
    browser.wait_text("#main", "Recent jobs", 10).await;
    browser.click("#main details summary").await;
    browser
        .script(
            "const t = document.getElementById('settings-json'); \
             const s = JSON.parse(t.value); s.exclude = ['**/*.test.ts']; \
             t.value = JSON.stringify(s);",
            json!([]),
        )
        .await;
    browser.click("#save-settings").await;
    browser.wait_text("#main", "**/*.test.ts", 10).await;

    // A worktree tracked as a ref, indexed, and compared: what its change may break.
    browser.fill("#new-ref", "feature").await;
    browser.click("#track-ref").await;
    browser.wait_text("tr[data-ref=feature]", "ready", 60).await;
    browser.click("tr[data-ref=feature] a").await;
    let compared = browser.wait_text("#comparison", "src/jwt.ts", 20).await;
    assert!(compared.contains("validateToken"), "{compared}");
    browser.screenshot("5b-compare").await;

    // Server: tokens. A read token for `ws` is created; its secret shown once.
    browser.open(&format!("{base}/#/server")).await;
    browser.wait_text("#tokens", "console-admin", 20).await;
    browser
        .wait_text("#metrics", "Requests per second", 20)
        .await;
    browser.fill("#token-name", "reader").await;
    browser.fill("#token-repos", "ws").await;
    browser.click("#create-token").await;
    let secret = browser.wait_text("#new-secret", "sxt_", 10).await;
    browser.screenshot("6-server").await;

    // The reader signs in: no admin action is offered, and the server refuses one sent
    // anyway.
    browser.click("#who button").await;
    browser.fill("#token", secret.trim()).await;
    browser.click("#sign-in").await;
    browser.wait_text("#whoami", "read", 10).await;
    let who = browser.text("#whoami").await;
    assert!(who.contains("only ws"), "{who}");
    browser.wait_text("tr[data-repo=ws]", "ready", 10).await;
    assert!(browser.find_now("#register").await.is_none());
    assert!(
        browser
            .script(
                "return document.getElementById('nav-server').hidden;",
                json!([])
            )
            .await
            == json!(true)
    );
    browser.open(&format!("{base}/#/repo/ws")).await;
    browser.wait_text("#main", "Recent jobs", 10).await;
    assert!(browser.find_now("#sync").await.is_none());
    assert!(browser.find_now("#remove").await.is_none());
    let refused = browser
        .script(
            "return fetch('api/v1/repositories/ws/sync', {method: 'POST', headers: \
             {Authorization: 'Bearer ' + sessionStorage.getItem('sextant.token')}}) \
             .then(r => r.status);",
            json!([]),
        )
        .await;
    assert_eq!(refused, json!(403));
    let tokens = browser
        .script(
            "return fetch('api/v1/tokens', {headers: \
             {Authorization: 'Bearer ' + sessionStorage.getItem('sextant.token')}}) \
             .then(r => r.status);",
            json!([]),
        )
        .await;
    assert_eq!(tokens, json!(403));
    browser.screenshot("7-read-token").await;
}

/// Without tokens (a loopback server) the console needs no sign-in: `/me` is the local
/// administrator. The page and its script come with a policy that allows no inline
/// script and no other origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tokens_the_console_needs_no_sign_in() {
    let server = support::app::start(false).await;
    let http = reqwest::Client::new();
    let me = json_of(http.get(format!("{}/api/v1/me", server.base))).await;
    assert_eq!(me["name"], "local", "{me}");
    assert_eq!(me["scope"], "admin", "{me}");
    assert_eq!(me["managesServer"], true, "{me}");
    assert!(
        me["token"].is_null() && me["repositories"].is_null(),
        "{me}"
    );
    for (path, kind) in [
        ("/", "text/html"),
        ("/console/app.js", "text/javascript"),
        ("/console/app.css", "text/css"),
        ("/console/icon.svg", "image/svg+xml"),
    ] {
        let r = http
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let header = |name: &str| {
            r.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        assert!(header("content-type").starts_with(kind), "{path}");
        let policy = header("content-security-policy");
        assert!(
            policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"),
            "{path}: {policy}"
        );
    }
    // Tokens over REST: created (the secret once), listed without it, revoked.
    let created = json_of(
        http.post(format!("{}/api/v1/tokens", server.base))
            .json(&json!({"name": "ci", "scope": "read"})),
    )
    .await;
    let id = created["token"]["id"].as_str().unwrap().to_string();
    assert!(created["secret"].as_str().unwrap().starts_with("sxt_"));
    let listed = json_of(http.get(format!("{}/api/v1/tokens", server.base)))
        .await
        .to_string();
    assert!(listed.contains(&id) && !listed.contains("sxt_"), "{listed}");
    let revoked = json_of(http.delete(format!("{}/api/v1/tokens/{id}", server.base))).await;
    assert!(revoked["revokedAt"].is_i64(), "{revoked}");
}
