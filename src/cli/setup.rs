//! `sextant setup CLIENT`: writes (or prints) an MCP client's configuration so that it
//! starts Sextant's MCP server over stdio: `sextant mcp` on this data directory, or with
//! `--server` a relay to a shared server that reads its token from a file (the token is
//! never written into the client's configuration, nor printed).
//!
//! Each client's file is read, Sextant's entry set (other servers and settings kept),
//! and written back; running it again changes nothing. The editing is pure
//! ([`Client::configure`]) and unit-tested; only [`setup`] touches files.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{CliError, GlobalArgs, out, write_err};

/// An MCP client Sextant can configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: `.mcp.json` in the project (`mcpServers`).
    ClaudeCode,
    /// Cursor: `.cursor/mcp.json` in the project, or `~/.cursor/mcp.json` with --global.
    Cursor,
    /// VS Code: `.vscode/mcp.json` in the workspace (`servers`).
    Vscode,
    /// Codex: `.codex/config.toml` in a trusted project, or `~/.codex/config.toml` with
    /// --global (`[mcp_servers.NAME]`).
    Codex,
    /// Any client that reads the common `{"mcpServers": …}` JSON: printed, or written to
    /// `mcp.json` in the folder.
    Json,
}

/// Options of `sextant setup`.
#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// The client to configure.
    #[arg(value_enum)]
    pub client: Client,
    /// The project folder whose configuration is written (default: the current one).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The user's configuration rather than the project's (Cursor and Codex).
    #[arg(long)]
    pub global: bool,
    /// Print the whole configuration file instead of writing it.
    #[arg(long)]
    pub print: bool,
    /// The server's name in the client's configuration.
    #[arg(long, default_value = "sextant")]
    pub name: String,
}

/// The command a client runs to start the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program (an absolute path).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
}

impl Client {
    /// The configuration file under project folder `dir`, or (`global`) under `home`.
    fn path(self, dir: &Path, global: bool, home: Option<&Path>) -> Result<PathBuf, CliError> {
        let home = || {
            home.ok_or_else(|| {
                CliError::Failed("--global needs HOME to find the client's configuration".into())
            })
        };
        Ok(match (self, global) {
            (Self::ClaudeCode, false) => dir.join(".mcp.json"),
            (Self::Cursor, false) => dir.join(".cursor/mcp.json"),
            (Self::Cursor, true) => home()?.join(".cursor/mcp.json"),
            (Self::Vscode, false) => dir.join(".vscode/mcp.json"),
            (Self::Codex, false) => dir.join(".codex/config.toml"),
            (Self::Codex, true) => home()?.join(".codex/config.toml"),
            (Self::Json, false) => dir.join("mcp.json"),
            (Self::ClaudeCode, true) => {
                return Err(CliError::Failed(
                    "Claude Code keeps user-wide servers in ~/.claude.json, which its own \
                     `claude mcp add --scope user` edits: run `sextant setup claude-code \
                     --print` to see the command and arguments, or drop --global for the \
                     project's .mcp.json"
                        .into(),
                ));
            }
            (Self::Vscode | Self::Json, true) => {
                return Err(CliError::Failed(
                    "this client's user configuration lives where only it knows (VS Code: \
                     \"MCP: Open User Configuration\"): use --print and paste the entry, or \
                     drop --global"
                        .into(),
                ));
            }
        })
    }

    /// `existing` (the file's text, if any) with server `name` set to `launch`; every
    /// other server and setting is kept. Fails, naming the problem, when the file is
    /// not what the client reads (not JSON, not TOML, not a table).
    pub fn configure(
        self,
        existing: Option<&str>,
        name: &str,
        launch: &Launch,
    ) -> Result<String, String> {
        match self {
            Self::Codex => configure_toml(existing, name, launch),
            Self::ClaudeCode | Self::Vscode | Self::Cursor | Self::Json => {
                let (servers, entry) = match self {
                    Self::Vscode => (
                        "servers",
                        json!({ "type": "stdio", "command": launch.command, "args": launch.args }),
                    ),
                    Self::ClaudeCode => (
                        "mcpServers",
                        json!({ "type": "stdio", "command": launch.command, "args": launch.args }),
                    ),
                    _ => (
                        "mcpServers",
                        json!({ "command": launch.command, "args": launch.args }),
                    ),
                };
                configure_json(existing, servers, name, entry)
            }
        }
    }
}

/// A JSON configuration with `config[servers][name] = entry`.
fn configure_json(
    existing: Option<&str>,
    servers: &str,
    name: &str,
    entry: Value,
) -> Result<String, String> {
    let mut config: Value = match existing.filter(|t| !t.trim().is_empty()) {
        Some(text) => {
            serde_json::from_str(text).map_err(|e| format!("not JSON ({e}); fix or move it"))?
        }
        None => json!({}),
    };
    let root = config
        .as_object_mut()
        .ok_or("the file is JSON but not an object")?;
    let table = root.entry(servers).or_insert_with(|| json!({}));
    table
        .as_object_mut()
        .ok_or_else(|| format!("`{servers}` is not an object"))?
        .insert(name.to_string(), entry);
    let mut text = serde_json::to_string_pretty(&config).map_err(|e| e.to_string())?;
    text.push('\n');
    Ok(text)
}

/// A Codex `config.toml` with `[mcp_servers.NAME]` set; comments and formatting of the
/// rest kept.
fn configure_toml(existing: Option<&str>, name: &str, launch: &Launch) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = existing
        .unwrap_or("")
        .parse()
        .map_err(|e| format!("not TOML ({e}); fix or move it"))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            table.set_implicit(true);
            toml_edit::Item::Table(table)
        })
        .as_table_mut()
        .ok_or("`mcp_servers` is not a table")?;
    let mut server = toml_edit::Table::new();
    server.insert("command", toml_edit::value(launch.command.as_str()));
    let args: toml_edit::Array = launch.args.iter().map(String::as_str).collect();
    server.insert("args", toml_edit::value(args));
    servers.insert(name, toml_edit::Item::Table(server));
    Ok(doc.to_string())
}

/// The command this invocation's settings describe: `sextant [flags] mcp` on the same
/// data directory and models, or with `--server` the stdio relay with its token file.
fn launch(global: &GlobalArgs) -> Result<Launch, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Failed(format!("cannot find sextant's own path: {e}")))?;
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut args: Vec<String> = Vec::new();
    let mut flag = |name: &str, value: String| {
        args.push(format!("--{name}"));
        args.push(value);
    };
    if let Some(server) = &global.server {
        let Some(file) = &global.token_file else {
            return Err(CliError::Failed(if global.token.is_some() {
                "a client's configuration would hold the token in plain text: save it in a \
                 file only you can read and pass --token-file FILE instead of --token"
                    .into()
            } else {
                "--server needs --token-file FILE (the token, in a file the client's \
                 process can read)"
                    .into()
            }));
        };
        flag("server", server.clone());
        flag("token-file", absolute(file).display().to_string());
    } else {
        let data_dir = global
            .data_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(".sextant"));
        flag("data-dir", absolute(&data_dir).display().to_string());
        let paths = [
            ("model-dir", &global.model_dir),
            ("static-model-dir", &global.static_model_dir),
            ("model-home", &global.model_home),
        ];
        for (name, path) in paths {
            if let Some(path) = path {
                flag(name, absolute(path).display().to_string());
            }
        }
        let values = [
            ("lance-uri", global.lance_uri.clone()),
            ("embed-model", global.embed_model.clone()),
            ("embed-url", global.embed_url.clone()),
            ("embed-dims", global.embed_dims.map(|d| d.to_string())),
            (
                "embed-max-tokens",
                global.embed_max_tokens.map(|d| d.to_string()),
            ),
            ("rerank-model", global.rerank_model.clone()),
            ("rerank-url", global.rerank_url.clone()),
            ("scout-model-url", global.scout_model_url.clone()),
            ("scout-model", global.scout_model.clone()),
            ("embed-provider", non_default(global.embed_provider)),
            ("rerank-provider", non_default(global.rerank_provider)),
        ];
        for (name, value) in values {
            if let Some(value) = value {
                flag(name, value);
            }
        }
    }
    args.push("mcp".into());
    Ok(Launch {
        command: exe.display().to_string(),
        args,
    })
}

/// A flag's value when it is not the default one (the first variant).
fn non_default<T: clap::ValueEnum>(value: T) -> Option<String> {
    let name = value.to_possible_value()?.get_name().to_string();
    let default = T::value_variants()
        .first()?
        .to_possible_value()?
        .get_name()
        .to_string();
    (name != default).then_some(name)
}

/// Runs `sextant setup`.
pub fn setup(args: SetupArgs, global: &GlobalArgs) -> Result<(), CliError> {
    let launch = launch(global)?;
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut w = out();
    if args.print {
        let text = args
            .client
            .configure(None, &args.name, &launch)
            .map_err(CliError::Failed)?;
        return write!(w, "{text}").map_err(write_err);
    }
    let path = args.client.path(&dir, args.global, home.as_deref())?;
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(CliError::Read {
                path: path.display().to_string(),
                source,
            });
        }
    };
    let text = args
        .client
        .configure(existing.as_deref(), &args.name, &launch)
        .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
    if existing.as_deref() == Some(text.as_str()) {
        return writeln!(w, "{}: already set up", path.display()).map_err(write_err);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| CliError::Failed(format!("cannot create {}: {e}", parent.display())))?;
    }
    std::fs::write(&path, &text)
        .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", path.display())))?;
    writeln!(
        w,
        "{}: `{}` runs `{} {}`",
        path.display(),
        args.name,
        launch.command,
        launch.args.join(" ")
    )
    .map_err(write_err)?;
    if global.database_url.is_some() {
        writeln!(
            w,
            "note: the metadata database URL is not written (it may hold a password); \
             set DATABASE_URL in the client's environment"
        )
        .map_err(write_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> Launch {
        Launch {
            command: "/usr/bin/sextant".into(),
            args: vec!["--data-dir".into(), "/p/.sextant".into(), "mcp".into()],
        }
    }

    #[test]
    fn json_clients_get_their_own_shape_and_keep_other_servers() {
        let existing = r#"{"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}"#;
        for (client, servers, typed) in [
            (Client::ClaudeCode, "mcpServers", true),
            (Client::Cursor, "mcpServers", false),
            (Client::Json, "mcpServers", false),
        ] {
            let text = client
                .configure(Some(existing), "sextant", &launch())
                .unwrap();
            let config: Value = serde_json::from_str(&text).unwrap();
            let entry = &config[servers]["sextant"];
            assert_eq!(entry["command"], "/usr/bin/sextant", "{client:?}");
            assert_eq!(entry["args"], json!(["--data-dir", "/p/.sextant", "mcp"]));
            assert_eq!(entry.get("type").is_some(), typed, "{client:?}");
            assert_eq!(config[servers]["other"]["command"], "x", "{client:?}");
            assert_eq!(config["theme"], "dark");
            // Idempotent: a second run writes the same bytes.
            assert_eq!(
                client.configure(Some(&text), "sextant", &launch()).unwrap(),
                text
            );
        }
        let vscode = Client::Vscode
            .configure(None, "sextant", &launch())
            .unwrap();
        let config: Value = serde_json::from_str(&vscode).unwrap();
        assert_eq!(config["servers"]["sextant"]["type"], "stdio");
        assert_eq!(config["servers"]["sextant"]["args"][2], "mcp");
    }

    #[test]
    fn codex_toml_keeps_comments_and_other_tables() {
        let existing = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let text = Client::Codex
            .configure(Some(existing), "sextant", &launch())
            .unwrap();
        assert!(text.starts_with("# my settings\nmodel = \"o3\""), "{text}");
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        let server = &doc["mcp_servers"]["sextant"];
        assert_eq!(server["command"].as_str(), Some("/usr/bin/sextant"));
        let args: Vec<&str> = server["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(args, ["--data-dir", "/p/.sextant", "mcp"]);
        assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        assert_eq!(
            Client::Codex
                .configure(Some(&text), "sextant", &launch())
                .unwrap(),
            text
        );
        let fresh = Client::Codex.configure(None, "sextant", &launch()).unwrap();
        assert!(fresh.starts_with("[mcp_servers.sextant]"), "{fresh}");
    }

    #[test]
    fn files_that_are_not_configurations_are_refused_with_the_reason() {
        let bad = Client::Cursor.configure(Some("{not json"), "s", &launch());
        assert!(bad.unwrap_err().contains("not JSON"));
        let list = Client::Cursor.configure(Some("[1, 2]"), "s", &launch());
        assert!(list.unwrap_err().contains("not an object"));
        let servers = Client::Cursor.configure(Some(r#"{"mcpServers": 3}"#), "s", &launch());
        assert!(
            servers
                .unwrap_err()
                .contains("`mcpServers` is not an object")
        );
        let toml = Client::Codex.configure(Some("mcp_servers = 3"), "s", &launch());
        assert!(toml.unwrap_err().contains("not a table"));
    }
}
