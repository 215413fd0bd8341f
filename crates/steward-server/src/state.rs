//! What every request handler shares, and what a start request asks of the run's composition.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use steward_core::Launcher;
use steward_core::PlannerOverrides;
use steward_core::mcp_tokens::NewToken;
use steward_core::{RunMode, RunOptions, Runtime};
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

/// `mode` of a [`StartRun`] names no run mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{0}`; use `loop` or `roles`")]
pub struct UnknownMode(pub String);

impl StartRun {
    /// The run options this request asks for: planner, provider, model and mode (blank fields
    /// are absent). `Err` names an unknown mode.
    pub fn options(&self) -> Result<RunOptions, UnknownMode> {
        let non_empty = |v: &Option<String>| v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
        let mode = match non_empty(&self.mode) {
            Some(name) => Some(RunMode::parse(&name).ok_or_else(|| UnknownMode(name.clone()))?),
            None => None,
        };
        Ok(RunOptions {
            planner: PlannerOverrides {
                planner: non_empty(&self.planner),
                provider: non_empty(&self.provider),
                model: non_empty(&self.model),
                ..PlannerOverrides::default()
            },
            mode,
            ..RunOptions::default()
        })
    }
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
    /// How often an event stream of a run executing in another process looks at the store
    /// when the store sends change notices, only in case a notice was lost (default 3 s).
    /// Without notices (SQLite) streams poll every 300 ms whatever this says.
    pub notice_poll: std::time::Duration,
}

/// The default of [`ServerOptions::notice_poll`].
pub const DEFAULT_NOTICE_POLL: std::time::Duration = std::time::Duration::from_secs(3);

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
            notice_poll: DEFAULT_NOTICE_POLL,
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

impl Inner {
    /// The current time by the runtime's clock.
    pub fn now(&self) -> steward_protocol::Timestamp {
        self.runtime.clock.now()
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
    pub conversations: Conversations,
    /// Ids of conversations that changed (a turn added, ended).
    pub conversations_changed: broadcast::Sender<String>,
    /// Ids of runs of this server that have ended.
    pub run_finished: broadcast::Sender<String>,
    /// Event streams open now (counted by the event-stream handlers).
    pub open_streams: std::sync::atomic::AtomicUsize,
    /// MCP tokens just made, shown once on their owner's next Tokens page.
    pub tokens_just_made: JustMade,
}

/// In-memory state of the open conversations: viewers, idle timers, and a lock per
/// conversation so two messages cannot both pass the one-task-at-a-time check.
#[derive(Default)]
pub struct Conversations {
    pub(crate) open: Mutex<HashMap<String, Arc<Open>>>,
}

/// One open conversation: its viewers, its idle timer and its one-message-at-a-time lock.
#[derive(Default)]
pub(crate) struct Open {
    pub(crate) viewers: AtomicUsize,
    pub(crate) idle: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pub(crate) sending: tokio::sync::Mutex<()>,
}

impl Conversations {
    /// The entry of conversation `id`, made when missing.
    pub(crate) fn open(&self, id: &str) -> Arc<Open> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).entry(id.to_string()).or_default().clone()
    }
}

/// Tokens just made, by owner, waiting to be shown once on the owner's next `GET /tokens`
/// (within the tokens page's time limit): the form post answers with a redirect, so
/// reloading the page never makes another.
pub type JustMade = Mutex<HashMap<String, (NewToken, std::time::Instant)>>;
