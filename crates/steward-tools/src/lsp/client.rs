//! The language servers of a run (SPEC T11): one [`LspManager`] per tool registry holds the
//! `[[lsp]]` servers whose files the workspace has, starts each one in the sandbox when a tool
//! first needs it, starts it again after it died (waiting longer after each death, and not
//! after [`MAX_RESTARTS`] in a row), and stops them all when the run ends (or, at the latest,
//! when the registry is dropped).
//!
//! The JSON-RPC framing, request ids and the routing of the server's own requests are
//! async-lsp's; the types are lsp-types'. What a server answers is derived from the
//! workspace's files (it reads them itself, inside the sandbox, where secret files are
//! covered), so it does not taint the run.

mod capped;
mod connection;
pub(crate) mod text;

use std::sync::Arc;
use std::time::{Duration, Instant};

use lsp_types::Url;
use steward_protocol::ErrorClass;

pub(crate) use connection::Connection;

use crate::{ToolContext, ToolError};
use steward_config::LspServerConfig;

/// Deaths in a row after which a server is not started again in the run.
pub const MAX_RESTARTS: u32 = 5;

/// The pause before the first restart; it doubles after each further death.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// Entries of the workspace looked at to find the files a server serves.
const MAX_PROBE_ENTRIES: usize = 50_000;

/// Why a language-server call failed.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// The server could not be started (the sandbox refused, the program is missing).
    #[error("{0}")]
    NotStarted(String),
    /// The server's process ended (or its messages stopped) before it answered.
    #[error("the language server `{server}` stopped before it answered ({how})")]
    Died {
        /// The server.
        server: String,
        /// How it ended.
        how: String,
    },
    /// No answer in time.
    #[error("the language server `{server}` did not answer within {ms} ms")]
    Timeout {
        /// The server.
        server: String,
        /// The time allowed.
        ms: u64,
    },
    /// The server answered with an error.
    #[error("the language server `{server}` refused `{method}`: {message}")]
    Server {
        /// The server.
        server: String,
        /// The request.
        method: &'static str,
        /// Its message.
        message: String,
    },
    /// The server broke the protocol.
    #[error("the language server `{server}` broke the protocol: {message}")]
    Protocol {
        /// The server.
        server: String,
        /// What was wrong.
        message: String,
    },
    /// The server died too often and is not started again in this run.
    #[error(
        "the language server `{server}` stopped {deaths} times in a row and is not started again in this run (last: {last})"
    )]
    GaveUp {
        /// The server.
        server: String,
        /// Deaths in a row.
        deaths: u32,
        /// How it ended last.
        last: String,
    },
    /// The run was cancelled.
    #[error("cancelled")]
    Cancelled,
}

impl From<LspError> for ToolError {
    fn from(err: LspError) -> Self {
        let class = match &err {
            LspError::Timeout { .. } => ErrorClass::Timeout,
            LspError::Cancelled => ErrorClass::Cancelled,
            _ => ErrorClass::ToolFailed,
        };
        ToolError { class, message: err.to_string(), rule: None }
    }
}

/// One configured server and its process, when it runs.
struct Slot {
    config: LspServerConfig,
    state: tokio::sync::Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    connection: Option<Arc<Connection>>,
    /// Deaths (or failed starts) since the last answer.
    deaths: u32,
    /// Not started again before this.
    retry_at: Option<Instant>,
    /// How it ended last.
    last_end: Option<String>,
}

/// The pause after `deaths` deaths in a row.
pub fn backoff(deaths: u32) -> Duration {
    FIRST_BACKOFF * 2u32.saturating_pow(deaths.saturating_sub(1).min(6))
}

/// The language servers of one run.
pub struct LspManager {
    slots: Vec<Slot>,
}

impl std::fmt::Debug for LspManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LspManager")
            .field("servers", &self.slots.iter().map(|s| &s.config.name).collect::<Vec<_>>())
            .finish()
    }
}

impl LspManager {
    /// A manager of `servers`; none is started yet.
    pub fn new(servers: Vec<LspServerConfig>) -> LspManager {
        LspManager {
            slots: servers
                .into_iter()
                .map(|config| Slot { config, state: tokio::sync::Mutex::new(SlotState::default()) })
                .collect(),
        }
    }

    /// The servers of `servers` that serve at least one file of `workspace` (walked as `list`
    /// walks it: ignored, secret and denied files left out; at most 50,000 entries).
    pub fn serving(workspace: &steward_policy::Workspace, servers: &[LspServerConfig]) -> Vec<LspServerConfig> {
        if servers.is_empty() {
            return Vec::new();
        }
        let Ok(root) = workspace.resolve(".", steward_policy::Access::Read) else { return Vec::new() };
        let mut found = vec![false; servers.len()];
        for entry in workspace.walk(&root).take(MAX_PROBE_ENTRIES).flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let name = entry.file_name().to_string_lossy();
            for (index, server) in servers.iter().enumerate() {
                if !found[index] && server.serves(&name) {
                    found[index] = true;
                }
            }
            if found.iter().all(|f| *f) {
                break;
            }
        }
        servers.iter().zip(found).filter(|(_, f)| *f).map(|(s, _)| s.clone()).collect()
    }

    /// The configured servers, in configuration order.
    pub fn servers(&self) -> impl Iterator<Item = &LspServerConfig> {
        self.slots.iter().map(|s| &s.config)
    }

    /// The server of the workspace-relative `path`, by its extension.
    pub fn server_for(&self, path: &str) -> Option<&LspServerConfig> {
        self.servers().find(|s| s.serves(path))
    }

    fn slot(&self, name: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.config.name == name)
    }

    /// The running connection of the server `name`, started (in the sandbox of `ctx`) when it
    /// is not running. After a death it waits for the backoff first (when it fits in
    /// `budget`). Errors: unknown server, gave up, the backoff is longer than `budget`, it
    /// could not start.
    pub(crate) async fn connection(
        &self,
        name: &str,
        ctx: &ToolContext,
        budget: Duration,
    ) -> Result<Arc<Connection>, LspError> {
        let slot = self.slot(name).ok_or_else(|| LspError::NotStarted(format!("no language server `{name}`")))?;
        let mut state = slot.state.lock().await;
        if let Some(connection) = &state.connection {
            if connection.alive() {
                return Ok(connection.clone());
            }
            let how = connection.end_text().await;
            state.connection = None;
            state.deaths += 1;
            state.retry_at = Some(Instant::now() + backoff(state.deaths));
            state.last_end = Some(how);
        }
        if state.deaths >= MAX_RESTARTS {
            return Err(LspError::GaveUp {
                server: name.to_string(),
                deaths: state.deaths,
                last: state.last_end.clone().unwrap_or_default(),
            });
        }
        if let Some(at) = state.retry_at {
            let wait = at.saturating_duration_since(Instant::now());
            if wait > budget {
                return Err(LspError::NotStarted(format!(
                    "the language server `{name}` stopped ({}); it is started again in {} ms",
                    state.last_end.clone().unwrap_or_default(),
                    wait.as_millis()
                )));
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = ctx.cancel.cancelled() => return Err(LspError::Cancelled),
            }
        }
        match Connection::start(&slot.config, ctx, budget).await {
            Ok(connection) => {
                let connection = Arc::new(connection);
                state.connection = Some(connection.clone());
                state.retry_at = None;
                Ok(connection)
            }
            Err(err) => {
                state.deaths += 1;
                state.retry_at = Some(Instant::now() + backoff(state.deaths));
                state.last_end = Some(err.to_string());
                Err(err)
            }
        }
    }

    /// Notes that the server `name` answered: its deaths in a row start again from zero.
    pub(crate) async fn answered(&self, name: &str) {
        if let Some(slot) = self.slot(name) {
            slot.state.lock().await.deaths = 0;
        }
    }

    /// Notes that the server `name` died while answering (so the next call waits for the
    /// backoff before starting it again); returns the sentence for the model.
    pub(crate) async fn died(&self, name: &str, err: &LspError) -> String {
        let Some(slot) = self.slot(name) else { return err.to_string() };
        let mut state = slot.state.lock().await;
        if state.connection.as_ref().is_some_and(|c| !c.alive()) {
            state.connection = None;
            state.deaths += 1;
            state.retry_at = Some(Instant::now() + backoff(state.deaths));
            state.last_end = Some(err.to_string());
        }
        if state.deaths >= MAX_RESTARTS {
            format!("{err}; it stopped {} times in a row and is not started again in this run", state.deaths)
        } else {
            format!(
                "{err}; it is started again on the next call (after a pause of {} ms)",
                backoff(state.deaths).as_millis()
            )
        }
    }

    /// Tells every running server that the workspace-relative `paths` changed on disk (a
    /// writing tool changed them) and gives the new text of those it has open.
    pub async fn files_changed(&self, paths: &[String], ctx: &ToolContext) {
        for slot in &self.slots {
            let connection = slot.state.lock().await.connection.clone();
            let Some(connection) = connection.filter(|c| c.alive()) else { continue };
            let open = connection.open_documents().await;
            let mut uris = Vec::new();
            for path in paths {
                let Ok(resolved) = ctx.workspace.resolve(path, steward_policy::Access::Read) else { continue };
                let Ok(uri) = Url::from_file_path(&resolved.abs) else { continue };
                if open.contains(&uri)
                    && let Ok(text) = crate::lsp::read_text(ctx, path)
                {
                    let _ = connection.sync(&uri, &text.1).await;
                }
                uris.push(uri);
            }
            let _ = connection.files_changed(uris);
        }
    }

    /// Shuts every running server down (asked to exit, then ended).
    pub async fn shutdown(&self) {
        for slot in &self.slots {
            let connection = slot.state.lock().await.connection.take();
            if let Some(connection) = connection {
                connection.shutdown().await;
            }
        }
    }

    /// Number of server processes running now.
    pub async fn running(&self) -> usize {
        let mut count = 0;
        for slot in &self.slots {
            if slot.state.lock().await.connection.as_ref().is_some_and(|c| c.alive()) {
                count += 1;
            }
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles() {
        assert_eq!(backoff(1), Duration::from_millis(250));
        assert_eq!(backoff(2), Duration::from_millis(500));
        assert_eq!(backoff(4), Duration::from_secs(2));
    }

    #[test]
    fn only_servers_with_files_in_the_workspace_serve_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/app.py"), "x = 1\n").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir_all(dir.path().join("build")).unwrap();
        std::fs::write(dir.path().join("build/gen.ts"), "let x = 1\n").unwrap();
        let server = |name: &str, ext: &str| LspServerConfig {
            name: name.into(),
            command: vec!["srv".into()],
            extensions: vec![ext.into()],
            language_id: name.into(),
            initialization_options: None,
            settings: None,
            unix_sockets: false,
        };
        let ws = steward_policy::Workspace::open(dir.path(), &[]).unwrap();
        let serving = LspManager::serving(&ws, &[server("py", "py"), server("ts", "ts")]);
        let names: Vec<&str> = serving.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["py"], "an ignored folder's files do not count");
    }
}
