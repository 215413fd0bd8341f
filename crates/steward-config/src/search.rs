//! `[search]`: the workspace search index (SPEC K). On by default; embeddings only when the
//! user names a provider for them.

use serde::{Deserialize, Serialize};

/// `[search]`: the workspace is indexed under `$STEWARD_HOME/index` (brought up to date at the
/// start of each model-planner run), the chunks that match the task are given to the planner
/// with it, and the `search_index` tool ranks chunks for the model's own queries. An index that
/// cannot be used never fails a run: the run goes on without it, and its trace says why
/// (`context_unavailable`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SearchConfig {
    /// Index the workspace, give the planner matching chunks and offer `search_index`
    /// (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Chunks (about 1,600 characters each) given to the model planner with the task, best
    /// first (default 4; 0 gives none and keeps the `search_index` tool).
    #[serde(default = "default_context_chunks")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = DEFAULT_CONTEXT_CHUNKS)))]
    pub context_chunks: usize,
    /// Files indexed at most; the walk stops there (default 20,000).
    #[serde(default = "default_max_files")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = DEFAULT_MAX_FILES)))]
    pub max_files: usize,
    /// Rank with embeddings too: the provider (a `[providers.NAME]` entry or a preset) whose
    /// OpenAI-compatible `/embeddings` embeds each chunk (after the redactor, once per new or
    /// changed text) and each query; the keyword and vector rankings are fused by reciprocal
    /// rank (k = 60). Unset (the default): keyword ranking only. When the provider cannot be
    /// used or fails, chunks are ranked by keywords alone and the trace says why.
    #[serde(default)]
    pub embeddings: Option<String>,
    /// The embedding model asked of `embeddings` (default: that provider's `default_model`).
    #[serde(default)]
    pub embedding_model: Option<String>,
}

/// Default of [`SearchConfig::context_chunks`].
pub const DEFAULT_CONTEXT_CHUNKS: usize = 4;
/// Default of [`SearchConfig::max_files`].
pub const DEFAULT_MAX_FILES: usize = 20_000;

fn yes() -> bool {
    true
}

fn default_context_chunks() -> usize {
    DEFAULT_CONTEXT_CHUNKS
}

fn default_max_files() -> usize {
    DEFAULT_MAX_FILES
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            enabled: true,
            context_chunks: DEFAULT_CONTEXT_CHUNKS,
            max_files: DEFAULT_MAX_FILES,
            embeddings: None,
            embedding_model: None,
        }
    }
}

impl SearchConfig {
    /// The index options these settings give.
    pub fn index_options(&self) -> steward_index::IndexOptions {
        steward_index::IndexOptions { max_files: self.max_files, ..steward_index::IndexOptions::default() }
    }
}
