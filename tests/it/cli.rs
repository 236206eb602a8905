//! The binary's commands, run as a user would.

use std::process::Command;

fn sextant() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sextant"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

#[test]
fn parse_stats_prints_the_dashboard_for_the_fixtures() {
    let out = sextant()
        .args(["parse", "--stats", "fixtures/parser"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Parser Validation Summary"));
    assert!(stdout.contains("Coverage: 100.00%"));
    assert!(stdout.contains("Global rules: all 10 hold"));
    assert!(stdout.contains("Determinism: ✓"));
}

/// A command's help lists its own options first; the settings every command shares,
/// and those that point it at a server, under their own headings after them.
#[test]
fn a_commands_help_lists_its_own_options_before_the_global_ones() {
    let out = sextant().args(["search", "--help"]).output().expect("runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let at = |needle: &str| {
        help.find(needle)
            .unwrap_or_else(|| panic!("`{needle}` not in:\n{help}"))
    };
    let own = at("\nOptions:\n");
    let global = at("\nGlobal options:\n");
    let server = at("\nWorking against a server:\n");
    for option in ["--repo <REPOS>", "--budget <BUDGET>", "--priors <PRIORS>"] {
        assert!(
            (own..global).contains(&at(option)),
            "{option} is not among search's own"
        );
    }
    for option in ["--data-dir <DATA_DIR>", "--embed-model <EMBED_MODEL>"] {
        assert!(
            (global..server).contains(&at(option)),
            "{option} is not global"
        );
    }
    assert!(at("--server <SERVER>") > server && at("--token-file") > server);
}

#[test]
fn chunks_lists_breadcrumbs_and_json_has_every_field() {
    let out = sextant()
        .args(["chunks", "fixtures/parser/classes.ts"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        stdout.contains("BaseService > dispose [method] lines 23-25"),
        "{stdout}"
    );

    let out = sextant()
        .args(["chunks", "--json", "fixtures/parser/classes.ts"])
        .output()
        .expect("runs");
    let chunks: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let first = &chunks[0];
    for field in [
        "id",
        "relativePath",
        "nodeKind",
        "fullSource",
        "embeddingText",
        "relevantImports",
        "searchText",
        "childChunkIds",
    ] {
        assert!(first.get(field).is_some(), "missing {field}");
    }
}

#[test]
fn unreadable_and_unsupported_inputs_fail_with_a_reason() {
    let out = sextant()
        .args(["chunks", "no/such/file.ts"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read no/such/file.ts"));

    let out = sextant()
        .args(["chunks", "Cargo.lock"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unsupported file type"));
}

#[test]
fn remote_providers_explain_missing_settings() {
    let out = sextant()
        .args(["embed", "--embed-provider", "voyage", "hello"])
        .env_remove("VOYAGE_API_KEY")
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("VOYAGE_API_KEY"), "{stderr}");

    let out = sextant()
        .args(["embed", "--embed-provider", "openai", "hello"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--embed-url"), "{stderr}");

    let out = sextant()
        .args(["rerank", "q", "doc"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rerank-provider"));
}

#[test]
fn model_dir_without_a_model_says_what_is_missing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = sextant()
        .args(["embed", "hello"])
        .env("SEXTANT_MODEL_DIR", tmp.path())
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("config.json is missing") && stderr.contains("sextant model fetch"),
        "{stderr}"
    );
}

/// Deployment secrets: `token create --from-file` is idempotent and checks the secret,
/// `serve --admin-token-file` starts a fresh data directory with authentication on, and
/// `sextant health` says whether the server is ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_files_bootstrap_authentication_and_health_reports_readiness() {
    let mock = crate::support::mock_http::MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let with_data = || {
        let mut c = sextant();
        c.arg("--data-dir").arg(&data);
        c.args([
            "--embed-provider",
            "openai",
            "--embed-model",
            "m",
            "--embed-dims",
            "8",
        ]);
        c.arg("--embed-url").arg(format!("{}/v1", mock.url));
        c.env_remove("SEXTANT_ADMIN_TOKEN_FILE");
        c
    };
    let short = tmp.path().join("short");
    std::fs::write(&short, "tooshort\n").unwrap();
    let refused = with_data()
        .args(["token", "create", "--scope", "admin", "--from-file"])
        .arg(&short)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("at least 32"));
    // Long enough, but one character repeated: guessable, refused.
    let repeated = tmp.path().join("repeated");
    std::fs::write(&repeated, format!("{}\n", "k".repeat(40))).unwrap();
    let refused = with_data()
        .args(["token", "create", "--scope", "admin", "--from-file"])
        .arg(&repeated)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("at least 8 of them different"),
        "{refused:?}"
    );

    let bot = tmp.path().join("bot");
    std::fs::write(&bot, "b0t5ecret-9f86d081884c7d659a2feaa0c55ad015\n").unwrap();
    for expected in ["created", "kept the existing"] {
        let made = with_data()
            .args([
                "token",
                "create",
                "--scope",
                "read",
                "--name",
                "bot",
                "--from-file",
            ])
            .arg(&bot)
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
        assert!(
            made.stdout.is_empty(),
            "a secret from a file is never printed"
        );
        assert!(
            String::from_utf8_lossy(&made.stderr).contains(expected),
            "{made:?}"
        );
    }
    let listed = with_data().args(["token", "list"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&listed.stdout).lines().count(), 1);

    let admin_secret = "a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e86f7f7a27ae3";
    let admin = tmp.path().join("admin");
    std::fs::write(&admin, admin_secret).unwrap();
    let mut command = with_data();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--admin-token-file"])
        .arg(&admin);
    let server = crate::support::process::Served::start(command);
    let base = server.url.clone();
    let http = reqwest::Client::new();
    let url = format!("{base}/api/v1/repositories");
    let anonymous = http.get(&url).send().await.unwrap().status().as_u16();
    let authed = http
        .get(&url)
        .bearer_auth(admin_secret)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    let addr = base.trim_start_matches("http://").to_string();
    let health = sextant()
        .args(["health", "--bind", &addr])
        .output()
        .unwrap();
    drop(server);
    assert_eq!((anonymous, authed), (401, 200));
    assert!(health.status.success(), "{health:?}");
    assert!(String::from_utf8_lossy(&health.stdout).contains("ready"));

    let down = sextant()
        .args(["health", "--bind", "127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(!down.status.success());
    assert!(
        String::from_utf8_lossy(&down.stderr).contains("/readyz"),
        "{down:?}"
    );
}

/// `repo set` changes a registered repository's settings and refuses bad ones with the
/// reason (it used to panic on its own `--max-file-bytes`, which the global parser
/// limit of the same name shadowed).
#[test]
fn repo_set_saves_settings_and_explains_bad_path_roles() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a.ts"), "export const a = 1;\n").unwrap();
    let data = tmp.path().join("data");
    let run = |args: &[&str]| {
        sextant()
            .arg("--data-dir")
            .arg(&data)
            // A remote embedder that is never called: settings need no model.
            .args([
                "--embed-provider",
                "openai",
                "--embed-url",
                "http://127.0.0.1:9/v1",
            ])
            .args(["--embed-model", "m", "--embed-dims", "8"])
            .args(args)
            .output()
            .unwrap()
    };
    let added = run(&["repo", "add", ws.to_str().unwrap(), "--name", "ws"]);
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let set = run(&[
        "repo",
        "set",
        "ws",
        "--max-file-size",
        "2048",
        "--path-role",
        "source=test/helpers/**",
    ]);
    let out = String::from_utf8_lossy(&set.stdout);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    assert!(out.contains("\"maxFileBytes\": 2048"), "{out}");
    assert!(out.contains("test/helpers/**"), "{out}");
    for (rule, says) in [("tests=x/**", "unknown role"), ("nonsense", "ROLE=GLOB")] {
        let bad = run(&["repo", "set", "ws", "--path-role", rule]);
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(!bad.status.success());
        assert!(err.contains(says), "{rule}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Issue 37, finding 6: the debug log of the parsed command line shows no secret: not
/// the token (flag or `SEXTANT_TOKEN`), not the database URL's password.
#[test]
fn the_debug_log_shows_no_secrets() {
    let tmp = tempfile::tempdir().unwrap();
    for (flag, env) in [(true, false), (false, true)] {
        let mut cmd = sextant();
        cmd.arg("--data-dir")
            .arg(tmp.path())
            .env("RUST_LOG", "debug")
            .env(
                "DATABASE_URL",
                "postgres://sextant:pw-9f86d0818@127.0.0.1:9/x",
            )
            .env_remove("SEXTANT_TOKEN");
        if flag {
            cmd.args(["--token", "sxt_flagsecret0123456789"]);
        }
        if env {
            cmd.env("SEXTANT_TOKEN", "sxt_envsecret0123456789");
        }
        let out = cmd
            .args(["--server", "http://127.0.0.1:9", "repo", "list"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("starting"),
            "the debug line is there: {stderr}"
        );
        assert!(stderr.contains("redacted"), "{stderr}");
        for secret in ["sxt_flagsecret", "sxt_envsecret", "pw-9f86d0818"] {
            assert!(!stderr.contains(secret), "{secret} leaked: {stderr}");
        }
    }
}

/// Issue 37, finding 5, through the binary: `sextant serve` on a data directory whose git
/// source still carries credentials in its stored URL moves them out before it serves,
/// so the repository list a read token gets shows none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_moves_old_url_credentials_out_before_serving() {
    use sextant::store::{MetaStore, NewRepository, RepoSettings, RepoSource, SqlMetaStore};
    let mock = crate::support::mock_http::MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let meta = SqlMetaStore::open_in(&data).await.unwrap();
    meta.create_repository(NewRepository {
        name: "old".into(),
        source: RepoSource::Git("https://ci-bot:ghp_0ld5ecret@git.example/org/r.git".into()),
        tracked_ref: None,
        settings: RepoSettings::default(),
    })
    .await
    .unwrap();
    meta.close().await;
    let mut command = sextant();
    command
        .arg("--data-dir")
        .arg(&data)
        .args(["--embed-provider", "openai", "--embed-model", "m"])
        .args(["--embed-dims", "8", "--embed-url"])
        .arg(format!("{}/v1", mock.url))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env_remove("SEXTANT_ADMIN_TOKEN_FILE");
    let server = crate::support::process::Served::start(command);
    let listed = reqwest::get(format!("{}/api/v1/repositories", server.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lines = server.lines().join("\n");
    drop(server);
    assert!(listed.contains("git.example/org/r.git"), "{listed}");
    assert!(
        !listed.contains("ghp_0ld5ecret") && !listed.contains("ci-bot"),
        "{listed}"
    );
    assert!(
        lines.contains("moved the credentials of 1 git source"),
        "{lines}"
    );
}

/// `sextant grep` over an indexed directory: grep-like text (file headers, `N:` lines,
/// `N-` context) and the structured answer with `--json`; a bad regex fails naming it.
#[test]
fn grep_prints_matching_lines_by_file() {
    let Some((model, tmp)) = static_workspace(
        "sextant grep (needs the static model)",
        &[
            (
                "src/auth.py",
                "import hmac\n\ndef validate_token(raw):\n    return hmac.compare_digest(raw, SECRET)\n",
            ),
            (
                "src/main.go",
                "package main\n\n// ValidateToken checks.\nfunc ValidateToken() {}\n",
            ),
        ],
    ) else {
        return;
    };
    let ws = tmp.path().join("ws");
    let data = tmp.path().join("data");
    let run = |args: &[&str]| {
        crate::support::process::sextant_static(&data, &model)
            .args(args)
            .output()
            .unwrap()
    };
    let indexed = run(&["index", ws.to_str().unwrap(), "--name", "ws"]);
    assert!(
        indexed.status.success(),
        "{}",
        String::from_utf8_lossy(&indexed.stderr)
    );

    let found = run(&["grep", "-i", "-C", "1", "validate_token"]);
    let text = String::from_utf8_lossy(&found.stdout);
    assert!(
        found.status.success(),
        "{}",
        String::from_utf8_lossy(&found.stderr)
    );
    assert!(
        text.starts_with("1 match in 1 file (read 1 of 2 indexed files)"),
        "{text}"
    );
    assert!(text.contains("ws: src/auth.py (python, version "), "{text}");
    assert!(
        text.contains("  2- \n  3: def validate_token(raw):\n  4-     return hmac"),
        "{text}"
    );

    let found = run(&["grep", "--regex", "--json", r"(?i)validate_?token\("]);
    assert!(
        found.status.success(),
        "{}",
        String::from_utf8_lossy(&found.stderr)
    );
    let body: serde_json::Value = serde_json::from_slice(&found.stdout).unwrap();
    let hits: Vec<(&str, u64)> = body["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["path"].as_str().unwrap(), m["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(hits, [("src/auth.py", 3), ("src/main.go", 4)], "{body}");

    let bad = run(&["grep", "--regex", "validate("]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(err.contains("`pattern` is not a valid regex"), "{err}");
}

/// `SEXTANT_LOG_SPANS=1` logs each traced stage as it ends with its time: a local search
/// shows its vector and BM25 legs and its rendering; without it, no such line.
#[test]
fn span_lines_show_where_a_search_spends_its_time() {
    let Some((model, tmp)) = static_workspace(
        "SEXTANT_LOG_SPANS (needs the static model)",
        &[(
            "src/auth.py",
            "def validate_token(raw):\n    \"\"\"Checks a signed token.\"\"\"\n    return raw\n",
        )],
    ) else {
        return;
    };
    let ws = tmp.path().join("ws");
    let data = tmp.path().join("data");
    let run = |args: &[&str], spans: Option<&str>| {
        let mut cmd = crate::support::process::sextant_static(&data, &model);
        cmd.args(args).env("RUST_LOG", "sextant=debug");
        match spans {
            Some(v) => cmd.env("SEXTANT_LOG_SPANS", v),
            None => cmd.env_remove("SEXTANT_LOG_SPANS"),
        };
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        err
    };
    run(&["index", ws.to_str().unwrap(), "--name", "ws"], None);
    let logged = run(&["search", "validate the token"], Some("1"));
    for stage in ["search.vector", "search.lexical", "search.render"] {
        assert!(
            logged
                .lines()
                .any(|l| l.contains(stage) && l.contains("close time.busy=")),
            "no closing line for {stage}:\n{logged}"
        );
    }
    for quiet in [None, Some("0")] {
        let plain = run(&["search", "validate the token"], quiet);
        assert!(!plain.contains("time.busy="), "{plain}");
    }
}

#[test]
fn the_static_provider_installs_the_shipped_model_on_first_use() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    crate::support::write(
        &ws,
        "src/auth.py",
        "def validate_token(raw):\n    \"\"\"Checks the signature and expiry of a token.\"\"\"\n    return raw\n",
    );
    crate::support::write(
        &ws,
        "src/colors.py",
        "def blend_colors(a, b):\n    \"\"\"Mixes two RGB colours.\"\"\"\n    return a\n",
    );
    let data = tmp.path().join("data");
    let run = |args: &[&str]| {
        let mut cmd = sextant();
        cmd.arg("--data-dir")
            .arg(&data)
            .args(["--embed-provider", "static"])
            .args(args);
        for name in [
            "SEXTANT_STATIC_MODEL_DIR",
            "SEXTANT_MODEL_HOME",
            "SEXTANT_MODELS_DIR",
            "SEXTANT_SERVER",
            "DATABASE_URL",
            "SEXTANT_LANCE_URI",
        ] {
            cmd.env_remove(name);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), err)
    };
    let static_line = |listed: String| {
        listed
            .lines()
            .find(|l| l.starts_with("sextant-code-static-v1\t"))
            .unwrap_or_else(|| panic!("not listed:\n{listed}"))
            .to_string()
    };
    let (listed, _) = run(&["model", "list"]);
    assert!(
        static_line(listed).contains("\tnot installed\t"),
        "listed before its first use"
    );
    let (indexed, first) = run(&["index", ws.to_str().unwrap(), "--name", "ws"]);
    assert!(
        first.contains("installing sextant-code-static-v1"),
        "{first}"
    );
    // The static model's vectors are written with the rows: the summary counts them as
    // embedded ("12 chunks, 12 embedded"), not as "0 embedded" by a stage that had
    // nothing left to do.
    let count = |what: &str| {
        indexed
            .split(", ")
            .find_map(|part| part.strip_suffix(what))
            .and_then(|n| n.trim().parse::<usize>().ok())
    };
    let chunks = count(" chunks").unwrap_or_else(|| panic!("no chunk count: {indexed}"));
    assert!(chunks > 0, "{indexed}");
    assert_eq!(count(" embedded"), Some(chunks), "{indexed}");
    let shipped =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/sextant-code-static-v1");
    let installed = data.join("models/sextant-code-static-v1");
    for file in ["model.safetensors", "tokenizer.json", "config.json"] {
        assert_eq!(
            std::fs::read(installed.join(file)).unwrap(),
            std::fs::read(shipped.join(file)).unwrap(),
            "{file}"
        );
    }
    let (answer, again) = run(&[
        "search",
        "check that a token is signed and not expired",
        "--retrieval",
        "vector",
        "--json",
    ]);
    assert!(!again.contains("installing"), "{again}");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["results"][0]["path"], "src/auth.py", "{answer:#}");
    // A damaged file is replaced at the next load.
    std::fs::write(installed.join("config.json"), "{}").unwrap();
    let (_, mended) = run(&["search", "token"]);
    assert!(
        mended.contains("installing sextant-code-static-v1"),
        "{mended}"
    );
    assert_eq!(
        std::fs::read(installed.join("config.json")).unwrap(),
        std::fs::read(shipped.join("config.json")).unwrap()
    );
    // `model fetch` installs it ahead of use (an image does so at build time).
    std::fs::remove_dir_all(&installed).unwrap();
    let (_, fetched) = run(&["model", "fetch"]);
    assert!(
        fetched.contains("installing sextant-code-static-v1"),
        "{fetched}"
    );
    assert!(installed.join("model.safetensors").is_file());
    // `model list` names it with its state.
    let (listed, _) = run(&["model", "list"]);
    let line = static_line(listed);
    assert!(line.contains("\tinstalled\t"), "{line}");
    // Installed and intact: `model fetch` has nothing to do unless forced.
    let (_, kept) = run(&["model", "fetch"]);
    assert!(!kept.contains("installing"), "{kept}");
    let (_, forced) = run(&["model", "fetch", "--force"]);
    assert!(
        forced.contains("installing sextant-code-static-v1"),
        "{forced}"
    );
}

/// The static model and a temporary directory whose `ws/` holds `files`; `None` (the
/// test then stops, as `support::available` says) without the model.
fn static_workspace(
    what: &str,
    files: &[(&str, &str)],
) -> Option<(std::path::PathBuf, tempfile::TempDir)> {
    let model = crate::support::available(crate::support::models::static_model(), what)?;
    let tmp = tempfile::tempdir().unwrap();
    for (path, text) in files {
        crate::support::write(&tmp.path().join("ws"), path, text);
    }
    Some((model, tmp))
}
