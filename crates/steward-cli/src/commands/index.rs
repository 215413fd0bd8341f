//! `steward index build|status|search|clear`: the workspace search index (SPEC K) kept under
//! `$STEWARD_HOME/index`, which runs bring up to date by themselves; these commands build it
//! ahead of a run, show it, query it as the `search_index` tool does, and remove it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use clap::Subcommand;
use std::sync::Arc;

use steward_index::WorkspaceIndex;
use steward_policy::{Redactor, Workspace};
use steward_tools::{workspace_index::Embeddings, workspace_index::lookup};
use tokio_util::sync::CancellationToken;

use crate::commands::{load_config, redactor_for, usage_error};
use crate::home::Home;

/// `steward index …`
#[derive(Subcommand)]
pub enum IndexCommand {
    /// Bring the workspace's search index up to date (new and changed files read and cut into chunks, gone ones dropped; with `[search] embeddings`, new chunk texts embedded) and print what changed.
    Build {
        /// The workspace.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// One JSON object: files, chunks, added, changed, removed, unchanged, bytes_read, skipped counts, embedded, embedding_requests, embedding_error, duration_ms.
        #[arg(long)]
        json: bool,
    },
    /// Print the workspace's search index as stored: folder, files, chunks, sizes, last update (exit 1 when there is none).
    Status {
        /// The workspace.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Print the passages that best match QUERY, as the `search_index` tool ranks them (the index is brought up to date first; hybrid with `[search] embeddings`).
    Search {
        /// Words to look for.
        query: String,
        /// Most passages.
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// The workspace.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// One JSON object per passage: path, start_line, end_line, score, text.
        #[arg(long)]
        json: bool,
    },
    /// Remove the workspace's search index (the next run or `steward index build` makes it again).
    Clear {
        /// The workspace.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
}

/// Runs one `steward index` command.
pub async fn run(command: IndexCommand) -> Result<u8> {
    let state_dir = Home::locate()?.dir.join("index");
    match command {
        IndexCommand::Build { workspace, json } => build(&state_dir, &workspace, json).await,
        IndexCommand::Status { workspace, json } => {
            tokio::task::spawn_blocking(move || status(&state_dir, &workspace, json)).await?
        }
        IndexCommand::Search { query, limit, workspace, json } => {
            search(&state_dir, &workspace, &query, limit, json).await
        }
        IndexCommand::Clear { workspace } => clear(&state_dir, &workspace),
    }
}

/// The workspace (with its `deny_path`), the index options its configuration gives, and the
/// redactor chunks pass before they are stored (the run's: patterns, secret environment values,
/// declared credentials and what the workspace's secret files hold).
fn open(workspace: &Path) -> Result<(Workspace, steward_index::IndexOptions, Redactor, Embeddings)> {
    let config = load_config(workspace)?;
    if !config.search.enabled {
        eprintln!("steward: note: [search] enabled = false: runs neither use nor update this index");
    }
    let ws = Workspace::open(workspace, &config.policy.deny_path).map_err(|e| usage_error(&e.to_string()))?;
    let redactor = redactor_for(&config).with_values(steward_policy::secret_file_values(ws.root()));
    let embeddings = Embeddings::from_config(&config, &|name| std::env::var(name).ok());
    Ok((ws, config.search.index_options(), redactor, embeddings))
}

async fn build(state_dir: &Path, workspace: &Path, json: bool) -> Result<u8> {
    let (ws, options, redactor, embeddings) = open(workspace)?;
    let started = Instant::now();
    let (ws, redactor) = (Arc::new(ws), Arc::new(redactor));
    let found = lookup(state_dir, &options, &embeddings, &ws, "", 0, &CancellationToken::new(), &redactor).await?;
    let report = &found.report;
    let dir = steward_index::index_dir(state_dir, ws.root());
    let duration_ms = started.elapsed().as_millis() as u64;
    if json {
        let mut value = serde_json::to_value(report)?;
        value["duration_ms"] = duration_ms.into();
        value["dir"] = dir.display().to_string().into();
        value["embedded"] = found.embedded.into();
        value["embedding_requests"] = found.embedding_requests.into();
        value["embedding_error"] = found.embedding_error.clone().into();
        println!("{value}");
        return Ok(0);
    }
    if let Some(why) = &report.rebuilt {
        println!("rebuilt the index: {why}");
    }
    println!(
        "{} files, {} chunks in {} ({duration_ms} ms): {} added, {} changed, {} removed, {} unchanged, {} bytes read",
        report.files,
        report.chunks,
        dir.display(),
        report.added,
        report.changed,
        report.removed,
        report.unchanged,
        report.bytes_read
    );
    let skipped = report.skipped_large + report.skipped_binary + report.skipped_secret;
    if skipped > 0 {
        println!(
            "left out: {} over {} bytes, {} not UTF-8 text, {} holding a private key",
            report.skipped_large, options.max_file_bytes, report.skipped_binary, report.skipped_secret
        );
    }
    if report.truncated {
        println!("stopped at {} files ([search] max_files)", options.max_files);
    }
    if let Embeddings::Client(client) = &embeddings {
        match &found.embedding_error {
            None => println!("embedded {} chunks with {}/{}", found.embedded, client.provider(), client.model()),
            Some(why) => println!("embedded {} chunks, then stopped: {why}", found.embedded),
        }
    } else if let Some(why) = &found.embedding_error {
        println!("no embeddings: {why}");
    }
    Ok(0)
}

fn status(state_dir: &Path, workspace: &Path, json: bool) -> Result<u8> {
    let (ws, options, _, _) = open(workspace)?;
    let index = WorkspaceIndex::open(state_dir, &ws, &options)?;
    let status = index.status();
    if status.updated_at == 0 {
        eprintln!("steward: no search index for {} yet (`steward index build` makes it)", ws.root().display());
        return Ok(1);
    }
    if json {
        println!("{}", serde_json::to_string(&status)?);
        return Ok(0);
    }
    let updated = chrono::DateTime::from_timestamp(i64::try_from(status.updated_at).unwrap_or(0), 0)
        .map_or_else(String::new, |t| t.to_rfc3339());
    println!("workspace  {}", status.workspace);
    println!("index      {}", status.dir.display());
    println!("files      {} ({} bytes)", status.files, status.bytes);
    println!("chunks     {}", status.chunks);
    println!("size       {} bytes", status.index_bytes);
    println!("updated    {updated}");
    Ok(0)
}

async fn search(state_dir: &Path, workspace: &Path, query: &str, limit: usize, json: bool) -> Result<u8> {
    let (ws, options, redactor, embeddings) = open(workspace)?;
    let (ws, redactor) = (Arc::new(ws), Arc::new(redactor));
    let found =
        lookup(state_dir, &options, &embeddings, &ws, query, limit.max(1), &CancellationToken::new(), &redactor)
            .await?;
    if let Some(why) = &found.embedding_error {
        eprintln!("steward: note: ranked by keywords only: {why}");
    }
    let hits = found.hits;
    if json {
        for hit in &hits {
            println!("{}", serde_json::to_string(hit)?);
        }
    } else if hits.is_empty() {
        println!("no indexed passage matches `{query}`");
    } else {
        print!("{}", steward_tools::workspace_index::render_hits(&hits));
    }
    Ok(0)
}

fn clear(state_dir: &Path, workspace: &Path) -> Result<u8> {
    let root = std::fs::canonicalize(workspace).map_err(|e| usage_error(&format!("{}: {e}", workspace.display())))?;
    if steward_index::clear(state_dir, &root)? {
        println!("removed the search index of {}", root.display());
    } else {
        println!("no search index for {}", root.display());
    }
    Ok(0)
}
