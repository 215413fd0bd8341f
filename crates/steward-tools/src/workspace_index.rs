//! Lookups in the workspace's search index (SPEC K): [`lookup`] is the one way every user of
//! the index (the run's context, the `search_index` tool, `steward index`) updates and ranks
//! it. With `[search] embeddings` set, new chunk texts are embedded in batches and the ranking
//! is hybrid; an embedding provider that cannot be used or fails leaves the keyword ranking,
//! and says why.

use std::sync::Arc;

use steward_config::Config;
use steward_index::{Hit, IndexError, IndexOptions, UpdateReport, WorkspaceIndex};
use steward_policy::{Redactor, Workspace};
use steward_provider::EmbeddingClient;
use tokio_util::sync::CancellationToken;

/// Chunks embedded per request to the provider.
pub const EMBEDDING_BATCH: usize = 16;

/// Whether chunks are ranked with embeddings, as `[search] embeddings` says.
#[derive(Debug, Clone)]
pub enum Embeddings {
    /// Not configured: keyword ranking.
    Off,
    /// The provider's client.
    Client(Arc<EmbeddingClient>),
    /// Configured but unusable (an unknown provider, a missing key, a provider without
    /// `/embeddings`): keyword ranking, and this says why.
    Unavailable(String),
}

impl Embeddings {
    /// The embeddings `[search]` of `config` asks for; `env` looks up environment variables
    /// (the provider's key).
    pub fn from_config(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Embeddings {
        let Some(name) = config.search.embeddings.as_deref().map(str::trim).filter(|n| !n.is_empty()) else {
            return Embeddings::Off;
        };
        let Some(provider) = config.providers.get(name).cloned().or_else(|| steward_provider::preset(name)) else {
            return Embeddings::Unavailable(format!(
                "[search] embeddings names provider '{name}', which is neither configured nor a preset"
            ));
        };
        match EmbeddingClient::new(name, &provider, config.search.embedding_model.as_deref(), env) {
            Ok(client) => Embeddings::Client(Arc::new(client)),
            Err(e) => Embeddings::Unavailable(e.to_string()),
        }
    }
}

/// What [`lookup`] found.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// What the index update did.
    pub report: UpdateReport,
    /// The best chunks, best first.
    pub hits: Vec<Hit>,
    /// `hybrid` when embeddings ranked too, else `bm25`.
    pub ranking: &'static str,
    /// Chunk texts embedded this time.
    pub embedded: usize,
    /// Requests made to the embedding provider this time (chunk batches and the query).
    pub embedding_requests: usize,
    /// Why embeddings were configured but not used, redacted.
    pub embedding_error: Option<String>,
}

/// Brings the index of `workspace` kept under `state_dir` up to date (chunks stored redacted
/// by `redactor`), embeds what is new when `embeddings` is a client, and returns the `k`
/// chunks that match `query` best (`k` = 0: only the update and the embedding). An embedding failure is not an error: the chunks embedded
/// before it are kept, the ranking is BM25's, and [`Lookup::embedding_error`] says why.
///
/// Errors: the index could not be updated or written ([`IndexError`]).
#[allow(clippy::too_many_arguments)]
pub async fn lookup(
    state_dir: &std::path::Path,
    options: &IndexOptions,
    embeddings: &Embeddings,
    workspace: &Arc<Workspace>,
    query: &str,
    k: usize,
    cancel: &CancellationToken,
    redactor: &Arc<Redactor>,
) -> Result<Lookup, IndexError> {
    let (dir, ws, opts) = (state_dir.to_path_buf(), workspace.clone(), options.clone());
    let (stop, redact) = (cancel.clone(), redactor.clone());
    let (mut index, report) = blocking(move || {
        let mut index = WorkspaceIndex::open(&dir, &ws, &opts)?;
        let report = index.update(&ws, &opts, &|| stop.is_cancelled(), &|t| redact.redact(t))?;
        Ok((index, report))
    })
    .await?;
    let client = match embeddings {
        Embeddings::Off => None,
        Embeddings::Client(client) => Some(client.clone()),
        Embeddings::Unavailable(why) => {
            let query = query.to_string();
            let hits = blocking(move || Ok(index.search(&query, k))).await?;
            return Ok(Lookup {
                report,
                hits,
                ranking: "bm25",
                embedded: 0,
                embedding_requests: 0,
                embedding_error: Some(redactor.redact(why)),
            });
        }
    };
    let Some(client) = client else {
        let query = query.to_string();
        let hits = blocking(move || Ok(index.search(&query, k))).await?;
        return Ok(Lookup { report, hits, ranking: "bm25", embedded: 0, embedding_requests: 0, embedding_error: None });
    };
    let model = format!("{}/{}", client.provider(), client.model());
    let pending = index.pending_embeddings(&model);
    let mut done = Vec::with_capacity(pending.len());
    let mut requests = 0;
    let mut error = None;
    for batch in pending.chunks(EMBEDDING_BATCH) {
        if cancel.is_cancelled() {
            error = Some("the update was cancelled".to_string());
            break;
        }
        let inputs: Vec<String> = batch.iter().map(|p| p.input.clone()).collect();
        requests += 1;
        match client.embed(&inputs).await {
            Ok(vectors) => done.extend(batch.iter().map(|p| p.key.clone()).zip(vectors)),
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    // Nothing to rank for no chunk wanted (an update only): the query is not embedded.
    let query_vector = match error {
        Some(_) => None,
        None if k == 0 => None,
        None => {
            requests += 1;
            match client.embed(&[redactor.redact(query)]).await {
                Ok(mut v) => v.pop(),
                Err(e) => {
                    error = Some(e.to_string());
                    None
                }
            }
        }
    };
    let embedded = done.len();
    let query = query.to_string();
    let hits = blocking(move || {
        index.add_embeddings(&model, done)?;
        Ok(match &query_vector {
            Some(v) => index.hybrid(&query, v, &model).into_iter().take(k).collect(),
            None => index.search(&query, k),
        })
    })
    .await?;
    Ok(Lookup {
        report,
        hits,
        ranking: if error.is_none() { "hybrid" } else { "bm25" },
        embedded,
        embedding_requests: requests,
        embedding_error: error.map(|e| redactor.redact(&e)),
    })
}

/// Runs index work off the async threads; a worker that panicked is an I/O error.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, IndexError> + Send + 'static,
) -> Result<T, IndexError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(IndexError::Io {
            path: std::path::PathBuf::from("index worker"),
            source: std::io::Error::other(e.to_string()),
        })
    })
}

/// The passages as the model sees them: `path:start-end` and the text in a fence.
pub fn render_hits(hits: &[Hit]) -> String {
    let mut out = String::new();
    for hit in hits {
        let fence = if hit.text.contains("```") { "~~~~" } else { "```" };
        out.push_str(&format!(
            "{}:{}-{} (score {:.2})\n{fence}\n{}{}{fence}\n",
            hit.path,
            hit.start_line,
            hit.end_line,
            hit.score,
            hit.text,
            if hit.text.ends_with('\n') { "" } else { "\n" }
        ));
    }
    out
}
