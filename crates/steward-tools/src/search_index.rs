//! `search_index {query, limit?}`: the workspace search index ranked for the model's own query
//! (SPEC K). Offered when `[search] enabled` (the default); the index is brought up to date
//! before each query, so what it finds is what the workspace holds now.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_index::IndexOptions;
use steward_policy::Redactor;
use steward_protocol::{RiskLevel, ToolSpec};

use super::shared::{opt_u64, spec, str_arg};
use super::{Tool, ToolContext, ToolError, ToolOutput};
pub use crate::workspace_index::render_hits;
use crate::workspace_index::{Embeddings, lookup};

/// The tool's name.
pub const NAME: &str = "search_index";

/// Chunks a call returns by default.
const DEFAULT_LIMIT: u64 = 5;
/// Most chunks a call returns.
const MAX_LIMIT: u64 = 10;

/// The `search_index` tool over the indexes kept in one state folder.
pub struct SearchIndexTool {
    spec: ToolSpec,
    state_dir: Option<PathBuf>,
    options: IndexOptions,
    redactor: Option<Arc<Redactor>>,
    embeddings: Embeddings,
}

impl SearchIndexTool {
    /// The tool keeping its indexes in `state_dir` (`$STEWARD_HOME/index`). Without one (the
    /// registry a configuration gives, before a run places it), a call fails saying so; every
    /// run gives the tool its runtime's folder.
    pub fn new(state_dir: Option<PathBuf>, options: IndexOptions) -> SearchIndexTool {
        let spec = spec(
            NAME,
            "Find the passages of the workspace that best match a question or a few keywords (ranked keyword search over chunks of the workspace's text files); returns paths with line ranges and the passages. Use it to find where something is before reading whole files.",
            json!({
                "query": {"type": "string", "description": "Words to look for, e.g. `retry backoff on 429` or a question."},
                "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_LIMIT, "description": "Most passages to return (default 5, at most 10)."}
            }),
            &["query"],
            RiskLevel::Low,
            false,
            &[],
        );
        SearchIndexTool { spec, state_dir, options, redactor: None, embeddings: Embeddings::Off }
    }

    /// The same tool storing chunks redacted by `redactor` (the run's).
    pub fn with_redactor(self, redactor: Arc<Redactor>) -> SearchIndexTool {
        SearchIndexTool { redactor: Some(redactor), ..self }
    }

    /// The same tool ranking with `embeddings` too (`[search] embeddings`).
    pub fn with_embeddings(self, embeddings: Embeddings) -> SearchIndexTool {
        SearchIndexTool { embeddings, ..self }
    }
}

#[async_trait]
impl Tool for SearchIndexTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn pure_read(&self) -> bool {
        true
    }

    /// With an embeddings client, changed chunks and the query go to its provider.
    fn sends_data(&self) -> bool {
        matches!(self.embeddings, Embeddings::Client(_))
    }

    /// The whole workspace is read.
    fn default_read_paths(&self, _args: &Value) -> Vec<String> {
        vec![".".into()]
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let query = str_arg(args, "query")?.to_string();
        if query.trim().is_empty() {
            return Err(ToolError::refused("invalid_arguments", "`query` must not be empty"));
        }
        let limit = opt_u64(args, "limit")?.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
        let (Some(state_dir), Some(redactor)) = (&self.state_dir, &self.redactor) else {
            return Err(ToolError::failed("the search index has no state folder in this process"));
        };
        let found =
            lookup(state_dir, &self.options, &self.embeddings, &ctx.workspace, &query, limit, &ctx.cancel, redactor)
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
        let mut content = if found.hits.is_empty() {
            format!("no indexed passage matches `{query}`; try other words or the `search` tool")
        } else {
            render_hits(&found.hits)
        };
        if let Some(why) = &found.embedding_error {
            content.push_str(&format!("(ranked by keywords only: {why})\n"));
        }
        Ok(ToolOutput { content, ..ToolOutput::default() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keyword search sends nothing anywhere; with an embeddings client the chunks and the
    /// query go to its provider, so a call is no longer let run before its record is on disk.
    #[test]
    fn only_a_search_with_embeddings_sends_data() {
        let tool = || SearchIndexTool::new(None, IndexOptions::default());
        assert!(tool().pure_read());
        assert!(!tool().sends_data());
        assert!(!tool().with_embeddings(Embeddings::Unavailable("no key".into())).sends_data());
        let mut config = steward_config::Config::default();
        config.search.embeddings = Some("ollama".into());
        let client = Embeddings::from_config(&config, &|_| None);
        assert!(matches!(client, Embeddings::Client(_)), "the local preset needs no key");
        assert!(tool().with_embeddings(client).sends_data());
    }
}
