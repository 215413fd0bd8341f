//! The one composition point of a run: configuration in, a ready run out. Every front end —
//! `steward run`, `steward serve` (web and `/mcp`), `steward mcp serve`, the hub and the evals —
//! asks [`prepare`] for a run, so a capability is wired here once:
//!
//! 1. the policy is compiled once ([`Prepared::policy`]) and that one policy judges the run;
//! 2. the tool registry: the built-in tools, `shell_command`, `[[tool]]`s and output filters
//!    ([`ToolRegistry::for_config_with_policy`]), then the tools of the configured MCP servers
//!    ([`RunOptions::connect_mcp`]);
//! 3. the planner: a `--tool-choice` naming a tool must name one of the registry; the run mode
//!    (`loop` or `roles`) and the planner (or the role plan) are resolved from the configuration
//!    and the overrides;
//! 4. the front end adds who the run is for: task, owner, approver, observer, cancellation
//!    ([`Prepared::into_run`]), and runs it ([`ReadyRun::run`]) on a [`Runtime`] made by
//!    [`Runtime::new`];
//! 5. telemetry: with `[telemetry]` or the `OTEL_*` variables, the finished run is exported as
//!    OpenTelemetry spans ([`Prepared::telemetry`], see `crate::telemetry`).
//!
//! Loading the configuration stays with the front end (where it is read from differs: the
//! user's directory, an eval case's own), and so does hardening it (the hub's read-only jobs).

mod launcher;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use steward_policy::Policy;
use steward_store::RunRecord;
use tokio_util::sync::CancellationToken;

use crate::approval::Approver;
use crate::context::Turn;
use crate::events::EventObserver;
use crate::planner::PlannerOverrides;
use crate::{PlannerChoice, RolePlan, RunError, RunMode, RunRequest, Runtime};
use steward_config::Config;
use steward_tools::ToolRegistry;

pub use launcher::{Launcher, LauncherError, ProviderStatus};

/// The environment as the process sees it.
fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// What a front end chooses about a run beyond its configuration.
#[derive(Clone)]
pub struct RunOptions {
    /// Planner, provider, model, base URL, first tool choice, scenario and output token limit
    /// (`steward run --provider …`, the start form's fields).
    pub planner: PlannerOverrides,
    /// A planner the caller built itself (the evals' scripted provider): used as it is, in the
    /// loop mode; `None` resolves it from the configuration and [`RunOptions::planner`].
    pub planner_choice: Option<PlannerChoice>,
    /// `loop` or `roles`; `None` takes `[run] mode` (default `loop`).
    pub mode: Option<RunMode>,
    /// Rounds with tool calls before the run stops (`limits.max_rounds`); `None` keeps the
    /// configuration's.
    pub max_rounds: Option<u32>,
    /// Whether the tools of the configured MCP servers join the registry (their servers are
    /// started). Every front end connects them; a caller that must not start server processes
    /// says so here.
    pub connect_mcp: bool,
    /// Where environment variables are read (API keys named by the configuration).
    pub env: fn(&str) -> Option<String>,
    /// The logins to MCP servers of the owner the run is for (`None`: a server that needs a
    /// login fails with `mcp_login_required`).
    pub mcp_logins: Option<steward_mcp::oauth::TokenPlace>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            planner: PlannerOverrides::default(),
            planner_choice: None,
            mode: None,
            max_rounds: None,
            connect_mcp: true,
            env: process_env,
            mcp_logins: None,
        }
    }
}

/// A run prepared from its configuration: everything but who it is for.
pub struct Prepared {
    /// The workspace (canonical).
    pub workspace: PathBuf,
    /// The resolved configuration.
    pub config: Config,
    /// The policy compiled from `config.policy`: the one that judges the run's calls.
    pub policy: Arc<Policy>,
    /// The tools offered.
    pub tools: ToolRegistry,
    /// The resolved planner (for `roles`, the role plan's planner).
    pub planner: PlannerChoice,
    /// The role pipeline in mode `roles`; `None` for the loop.
    pub roles: Option<RolePlan>,
    /// What was left out and why (an MCP server that did not start, telemetry that cannot be
    /// exported), for the front end to show.
    pub warnings: Vec<String>,
    /// Where the finished run's spans go (SPEC R3), exported by the runtime's exporter for
    /// these settings ([`Runtime::telemetry`]); `None` when export is off (the default).
    pub telemetry: Option<steward_telemetry::Settings>,
}

impl Prepared {
    /// A run of `tools` the caller assembled itself (tests, benchmarks, an embedding program);
    /// the policy is compiled from `config`. Errors: [`PrepareError::Policy`] when the policy
    /// does not compile.
    /// Nothing is exported ([`Prepared::telemetry`] is `None`; set it to export).
    pub fn new(
        workspace: PathBuf,
        config: Config,
        tools: ToolRegistry,
        planner: PlannerChoice,
        roles: Option<RolePlan>,
    ) -> Result<Prepared, PrepareError> {
        let policy = Arc::new(Policy::new(&config.policy)?);
        Ok(Prepared { workspace, config, policy, tools, planner, roles, warnings: Vec::new(), telemetry: None })
    }

    /// The run of `task` for its owner, ready to start.
    pub fn into_run(mut self, task: Task) -> ReadyRun {
        // The classic planner reads no context block: it is given the earlier turns' tasks
        // themselves, for "now the same in FILE".
        if self.planner.kind == "classic" && !task.history.is_empty() {
            let earlier = task.history.iter().map(|turn| turn.task.clone()).collect();
            self.planner.provider = Arc::new(crate::planner::classic::ClassicConversation::new(earlier));
        }
        ReadyRun {
            request: RunRequest {
                task: task.task,
                owner_id: task.owner_id,
                workspace: self.workspace,
                planner: self.planner,
                config: self.config,
                tools: self.tools,
                approver: task.approver,
                observer: task.observer,
                cancel: task.cancel,
                history: task.history,
                attachments: task.attachments,
                run_id: task.run_id,
                roles: self.roles,
            },
            policy: self.policy,
            telemetry: self.telemetry,
        }
    }
}

/// Who a run is for and who watches it: what a front end adds to a [`Prepared`] run.
pub struct Task {
    /// The task text.
    pub task: String,
    /// Owner id (`local:<user>`, a web owner, `local:eval-runner` …).
    pub owner_id: String,
    /// Who answers approval requests.
    pub approver: Arc<dyn Approver>,
    /// Who watches the events.
    pub observer: Arc<dyn EventObserver>,
    /// Cancelling it cancels the run.
    pub cancel: CancellationToken,
    /// The run's id when chosen beforehand; `None` gives a fresh `run_…` id.
    pub run_id: Option<String>,
    /// Earlier turns of the conversation, oldest first; empty for a single task.
    pub history: Vec<Turn>,
    /// Workspace files the owner attached to the task (`@path` in `steward chat`), whose text
    /// the task already quotes: fingerprinted like a file the run read.
    pub attachments: Vec<crate::context::Attachment>,
}

/// A run ready to start: its request, the policy compiled for it and where its spans go.
pub struct ReadyRun {
    request: RunRequest,
    policy: Arc<Policy>,
    telemetry: Option<steward_telemetry::Settings>,
}

impl ReadyRun {
    /// The request the run starts with.
    pub fn request(&self) -> &RunRequest {
        &self.request
    }

    /// Runs it to its end on `runtime` (see [`crate::run_task`]); with telemetry on, the
    /// finished run's spans are then queued for export (never failing the run).
    pub async fn run(self, runtime: &Runtime) -> Result<RunRecord, RunError> {
        let Some(settings) = self.telemetry else {
            return crate::agent::run_with_policy(runtime, self.request, &self.policy).await;
        };
        let redactor = crate::agent::run_redactor(runtime, &self.request);
        let run = crate::agent::run_with_policy(runtime, self.request, &self.policy).await?;
        crate::telemetry::record(&settings, runtime, &run, &redactor).await;
        Ok(run)
    }
}

/// Why a run could not be prepared ([`prepare`], [`registry`]): a sentence for the user;
/// nothing was started, except MCP servers, which are stopped when their tools are dropped.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The policy does not compile.
    #[error(transparent)]
    Policy(#[from] steward_policy::PolicyError),
    /// The workspace cannot be opened.
    #[error(transparent)]
    Workspace(#[from] steward_policy::PathError),
    /// A `[shell]`, `[[tool]]` or `[[output_filter]]` entry cannot be set up.
    #[error(transparent)]
    Tools(#[from] steward_tools::RegistryError),
    /// The `[mcp_servers]` settings are invalid.
    #[error(transparent)]
    Mcp(#[from] steward_mcp::McpError),
    /// `--tool-choice` names no tool of the registry.
    #[error("--tool-choice `{choice}` is not a tool; use auto, none, required or one of: {}", tools.join(", "))]
    UnknownToolChoice {
        /// The choice as given.
        choice: String,
        /// The tools offered, by name.
        tools: Vec<String>,
    },
    /// No planner (or role plan) could be chosen.
    #[error(transparent)]
    Planner(#[from] crate::planner::PlannerError),
}

/// The tools `config` offers in `workspace` (canonical), judged by `policy` (compiled from
/// `config.policy`): the built-in ones, `shell_command`, `[[tool]]`s and output filters, then,
/// with `connect_mcp`, the tools of the configured MCP servers (started here, with the logins
/// kept in `logins` for the servers that need one). Also returns
/// what was left out (an MCP server that did not start). `Err` is a sentence for the user.
pub async fn registry(
    config: &Config,
    workspace: &Path,
    policy: &Policy,
    connect_mcp: bool,
    logins: Option<&steward_mcp::oauth::TokenPlace>,
) -> Result<(ToolRegistry, Vec<String>), PrepareError> {
    let ws = steward_policy::Workspace::open(workspace, &config.policy.deny_path)?;
    let tools = ToolRegistry::for_config_with_policy(config, &ws, policy)?;
    if !connect_mcp || config.mcp_servers.is_empty() {
        return Ok((tools, Vec::new()));
    }
    let mut manager = steward_mcp::McpManager::new(&config.mcp_servers)?
        .with_hidden_paths(steward_tools::sandbox_paths::mcp_hidden_paths(ws.clone()));
    if let Some(place) = logins {
        manager = manager.with_logins(place.clone());
    }
    let required: Vec<String> = config
        .mcp_servers
        .iter()
        .filter(|(_, server)| server.enabled && server.required)
        .map(|(n, _)| n.clone())
        .collect();
    let (tools, failures) = tools.with_mcp_servers(Arc::new(manager), &required).await;
    Ok((tools, failures.into_iter().map(|failure| format!("MCP server left out: {failure}")).collect()))
}

/// Prepares a run in `workspace` (canonical) from its loaded `config` and `options`: the policy
/// compiled once, the tool registry, the mode and the planner. `Err` is a sentence for the user
/// (an invalid policy, a `[shell]` or `[[tool]]` entry that cannot be set up, a tool choice that
/// names no tool, an unknown provider …); nothing was started then, except MCP servers, which
/// are stopped when their tools are dropped.
pub async fn prepare(mut config: Config, workspace: &Path, options: &RunOptions) -> Result<Prepared, PrepareError> {
    if let Some(rounds) = options.max_rounds {
        config.limits.max_rounds = rounds;
    }
    let policy = Arc::new(Policy::new(&config.policy)?);
    let (tools, mut warnings) =
        registry(&config, workspace, &policy, options.connect_mcp, options.mcp_logins.as_ref()).await?;
    if let Some(choice) = &options.planner.tool_choice
        && !matches!(choice.as_str(), "auto" | "none" | "required")
        && tools.get(choice).is_none()
    {
        let tools = tools.specs().into_iter().map(|s| s.name).collect();
        return Err(PrepareError::UnknownToolChoice { choice: choice.clone(), tools });
    }
    let (planner, roles) = match (&options.planner_choice, options.mode) {
        (Some(choice), _) => (choice.clone(), None),
        (None, mode) => match mode.unwrap_or_else(|| config.run.mode.unwrap_or_default()) {
            RunMode::Loop => (crate::planner::resolve(&config, &options.planner, &options.env)?, None),
            RunMode::Roles => {
                let plan = crate::planner::resolve_roles(&config, &options.planner, &options.env)?;
                (plan.planner.clone(), Some(plan))
            }
        },
    };
    let telemetry = crate::telemetry::settings_for(&config, options.env, &mut warnings);
    ask_context_window_early(&planner);
    // The first redaction's one-time work, done now: the caller may still be waiting for its
    // store to open, and the run's first writes (its conversation, its record) redact.
    steward_secrets::warm_up();
    Ok(Prepared { workspace: workspace.to_path_buf(), config, policy, tools, planner, roles, warnings, telemetry })
}

/// Starts asking the planner's server for its model's context window (a local server, see
/// `steward_provider::ContextWindow`), so that the question's round trips overlap the store's
/// opening and the run's recording instead of delaying its first request, which waits for the
/// same answer (the provider asks once per model). Nothing happens for the classic planner or
/// a provider that does not ask.
fn ask_context_window_early(planner: &PlannerChoice) {
    let Ok(tokio) = tokio::runtime::Handle::try_current() else { return };
    if planner.kind == "classic" {
        return;
    }
    let (provider, model) = (planner.provider.clone(), planner.model.clone());
    tokio.spawn(async move { provider.context_window(&model).await });
}
