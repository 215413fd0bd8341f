//! What every request handler shares, and how the server learns to prepare runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use steward_core::config::Config;
use steward_core::tools::ToolRegistry;
use steward_core::{PlannerChoice, Runtime};
use steward_protocol::ToolSpec;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::live::LiveRuns;
use crate::session::Sessions;

/// A request to start a run, from the start form or `POST /api/runs`.
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::ToSchema)]
pub struct StartRun {
    /// The task, in plain words (required, not blank, at most 20,000 characters).
    #[schema(min_length = 1)]
    pub task: String,
    /// Workspace directory; empty or absent means the server's default workspace. It must be
    /// exactly one of the workspaces the server was started with.
    #[serde(default)]
    pub workspace: Option<String>,
    /// `classic` or `model`; empty or absent: as `steward run` decides.
    #[serde(default)]
    pub planner: Option<String>,
    /// Provider name (a preset or `[providers.NAME]`).
    #[serde(default)]
    pub provider: Option<String>,
    /// Model id; empty or absent: the provider's default.
    #[serde(default)]
    pub model: Option<String>,
    /// `loop` (the single-agent loop) or `roles` (the role pipeline); empty or absent: `[run]
    /// mode`, else `loop`.
    #[serde(default)]
    pub mode: Option<String>,
}

/// A run prepared exactly as `steward run` would prepare it.
pub struct Prepared {
    /// The resolved planner (provider and model actually called).
    pub planner: PlannerChoice,
    /// The workspace's resolved configuration.
    pub config: Config,
    /// The tools offered.
    pub tools: ToolRegistry,
    /// The role pipeline for mode `roles` (its planner is `planner`); `None` for the loop.
    pub roles: Option<steward_core::RolePlan>,
}

/// A provider as the start page shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ProviderStatus {
    /// Provider name.
    pub name: String,
    /// True when it answered its model list.
    pub reachable: bool,
    /// Models it offers (empty when unreachable).
    pub models: Vec<String>,
    /// Why it is unreachable (redacted), empty otherwise.
    pub error: String,
}

/// What the server needs from the program embedding it: configuration, tool registries and
/// planners are resolved the same way as for `steward run`.
#[async_trait]
pub trait Launcher: Send + Sync {
    /// Prepares a run of `start` in `workspace` (canonical, allowed). `Err` is a sentence for
    /// the user (bad configuration, unknown provider …); nothing was started.
    async fn prepare(&self, start: &StartRun, workspace: &Path) -> Result<Prepared, String>;
    /// The tools a run in `workspace` is offered.
    async fn tools(&self, workspace: &Path) -> Result<Vec<ToolSpec>, String>;
    /// Configured and preset providers with their reachability (each probe bounded in time).
    async fn providers(&self) -> Vec<ProviderStatus>;
}

/// Settings of `steward serve`.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Workspaces runs may use (canonical); the first one is the default.
    pub workspaces: Vec<PathBuf>,
    /// Runs executing at once; more wait in a queue (SPEC R4).
    pub max_running: usize,
    /// How long a conversation lives without a viewer (SPEC A6; default 15 minutes).
    pub conversation_idle: std::time::Duration,
    /// Finished runs kept; older ones beyond this count are deleted (default 1,000).
    pub keep_runs: usize,
    /// Finished runs older than this are deleted (default 30 days).
    pub keep_for: std::time::Duration,
    /// Host names requests may carry in their `Host` header (any port); `None` accepts any.
    /// A loopback server accepts only `localhost`, `127.0.0.1` and `[::1]`, so a web page on
    /// another site cannot reach it through DNS rebinding.
    pub allowed_hosts: Option<Vec<String>>,
}

/// Host names of a loopback server.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            workspaces: Vec::new(),
            max_running: 4,
            conversation_idle: std::time::Duration::from_secs(15 * 60),
            keep_runs: 1_000,
            keep_for: std::time::Duration::from_secs(30 * 24 * 3600),
            allowed_hosts: Some(LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect()),
        }
    }
}

/// Shared state of all handlers (cheap to clone).
#[derive(Clone)]
pub struct AppState(pub Arc<Inner>);

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// The fields of [`AppState`].
pub struct Inner {
    /// Store, redactor, approval key, directories.
    pub runtime: Arc<Runtime>,
    /// Prepares runs.
    pub launcher: Arc<dyn Launcher>,
    /// Runs of this process.
    pub live: LiveRuns,
    /// Owner cookies, CSRF, login token.
    pub sessions: Sessions,
    /// Settings.
    pub options: ServerOptions,
    /// Cancelled at shutdown; every run's token is a child of it.
    pub shutdown: CancellationToken,
    /// The runs' tasks, awaited at shutdown.
    pub tasks: TaskTracker,
    /// Owner ids whose remembered facts changed (for live updates in every open tab).
    pub facts_changed: broadcast::Sender<String>,
    /// Open conversations: viewers and idle clocks.
    pub conversations: crate::conversations::Conversations,
    /// Ids of conversations that changed (a turn added, ended).
    pub conversations_changed: broadcast::Sender<String>,
    /// Ids of runs of this server that have ended.
    pub run_finished: broadcast::Sender<String>,
    /// Event streams open now (see [`crate::sse::open_stream`]).
    pub open_streams: std::sync::atomic::AtomicUsize,
    /// MCP tokens just made, shown once on their owner's next Tokens page.
    pub tokens_just_made: crate::tokens::JustMade,
}
