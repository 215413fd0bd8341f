//! The agent loop (SPEC A1–A3): plan → gate and run the proposed tool calls → show the
//! results → plan again, until the planner answers or a limit stops the run. In `roles` mode
//! the role pipeline ([`crate::roles`]) takes the planner's answer on from there.
//!
//! A run goes through small steps, each in its own module: the set-up (`setup`: workspace,
//! record, call context, prompt), one round at a time (`round`: ask the planner, judge its
//! reply; `calls`: run the calls it proposed), and the end (`finish`).

mod calls;
mod finish;
mod round;
mod setup;

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use steward_config::Config;
use steward_policy::Policy;
use steward_protocol::ErrorClass;
use steward_store::{RunRecord, StoreError};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

use crate::Runtime;
use crate::approval::Approver;
use crate::context::{self, RoundRecord};
use crate::events::EventObserver;
use crate::roles::RolePlan;
pub use crate::stage::PlannerChoice;
use round::{CallLimit, Loop, Progress};
use setup::{Prompt, Setup, Started};

/// One task to run.
pub struct RunRequest {
    /// The task text.
    pub task: String,
    /// Owner id (`local:<user>` for the CLI).
    pub owner_id: String,
    /// Workspace directory.
    pub workspace: PathBuf,
    /// Planner.
    pub planner: PlannerChoice,
    /// Resolved configuration.
    pub config: Config,
    /// Tools offered.
    pub tools: ToolRegistry,
    /// Who answers approval requests.
    pub approver: Arc<dyn Approver>,
    /// Who watches the events.
    pub observer: Arc<dyn EventObserver>,
    /// Cancelling it cancels the run (SPEC A7).
    pub cancel: CancellationToken,
    /// Earlier turns of the conversation this task belongs to, oldest first (the last
    /// `context::MAX_HISTORY_TURNS` are given to the model); empty for a single task.
    pub history: Vec<context::Turn>,
    /// Files attached to the task (quoted in it), fingerprinted like files the run read.
    pub attachments: Vec<context::Attachment>,
    /// The run's id when the caller chose it beforehand (a server names a queued run before it
    /// starts); `None` gives a fresh `run_…` id.
    pub run_id: Option<String>,
    /// `Some` runs the role pipeline after the planner (`mode = roles`, SPEC O1–O3; set
    /// `planner` to [`RolePlan::planner`]); `None` runs the agent loop alone.
    pub roles: Option<RolePlan>,
}

/// Errors before a run could start (nothing was recorded) or from storage while it ran.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The workspace or policy is invalid.
    #[error("{0}")]
    Config(String),
    /// Persistence failed.
    #[error(transparent)]
    Storage(#[from] StoreError),
}

impl RunError {
    /// Error class.
    pub fn class(&self) -> ErrorClass {
        match self {
            RunError::Config(_) => ErrorClass::Config,
            RunError::Storage(_) => ErrorClass::Storage,
        }
    }
}

/// Provider and model of each role of `req` (see [`EventKind::RunStarted`]): the planner
/// alone in loop mode (nothing for the classic planner), every stage in roles mode with a
/// classic planner stage's provider and model left empty.
fn role_models(req: &RunRequest) -> Vec<steward_protocol::RoleModel> {
    let classic = req.planner.kind == "classic";
    match &req.roles {
        Some(plan) => plan
            .roles
            .iter()
            .map(|a| {
                let none = classic && a.role == crate::roles::RoleName::Planner;
                steward_protocol::RoleModel {
                    role: a.role.as_str().to_string(),
                    provider: if none { String::new() } else { a.provider_name.clone() },
                    model: if none { String::new() } else { a.model.clone() },
                }
            })
            .collect(),
        None if classic => Vec::new(),
        None => vec![steward_protocol::RoleModel {
            role: "planner".into(),
            provider: req.planner.provider.name().to_string(),
            model: req.planner.model.clone(),
        }],
    }
}

/// Runs one task to its end and returns the final run record.
///
/// The policy is compiled from `req.config.policy` here; a run prepared by
/// [`crate::compose::prepare`] brings the one compiled there ([`crate::compose::ReadyRun::run`]).
pub async fn run_task(rt: &Runtime, req: RunRequest) -> Result<RunRecord, RunError> {
    let policy = Policy::new(&req.config.policy).map_err(|e| RunError::Config(e.to_string()))?;
    run_with_policy(rt, req, &policy).await
}

/// The redactor of the run `req` on `rt`: the runtime's, which also knows what the workspace's
/// secret files hold, so a program the policy lets run (`git diff`) cannot pass their contents
/// on (B09, S3), and the values the configuration declares as credentials
/// (`credential_scope`, `[[tool]] env`).
pub(crate) fn run_redactor(rt: &Runtime, req: &RunRequest) -> steward_policy::Redactor {
    let declared = req.config.declared_credential_values(&|name| std::env::var(name).ok());
    (*rt.redactor).clone().with_values(steward_policy::secret_file_values(&req.workspace)).with_values(declared)
}

/// [`run_task`] judged by `policy`, compiled from `req.config.policy`: set up and record the
/// run, gather the prompt's fixed parts, run rounds until one ends the loop, then finish
/// (the role pipeline in `roles` mode, the run's end recorded and published).
pub(crate) async fn run_with_policy(rt: &Runtime, mut req: RunRequest, policy: &Policy) -> Result<RunRecord, RunError> {
    let rt = &rt.with_redactor(run_redactor(rt, &req));
    let mut setup = Setup::new(rt, &mut req).await?;
    let Started { run, executing, events } = setup::start(rt, &req, &setup).await?;
    let context_lookup = setup.context_lookup.take();
    let tool_context = setup::tool_context(rt, &req, policy, &setup, &run.id);
    let calls = setup::call_context(rt, &req, policy, &setup, &run, &events, &tool_context);
    let prompt = Prompt::gather(rt, &req, policy, &events, &calls.state, context_lookup).await?;
    // The model's context window, when the configuration sets it or the server reports it:
    // each round's prompt is shrunk to fit it before it is sent.
    let window = if req.planner.kind == "classic" {
        None
    } else {
        req.planner.provider.context_window(&req.planner.model).await
    };
    let rounds = Loop {
        rt,
        req: &req,
        calls: &calls,
        chains: &setup.chains,
        prompt: &prompt,
        window,
        limit: CallLimit::of(&req),
    };
    let mut progress = Progress::new(setup.workspace.root(), req.config.limits.max_repeated_calls);
    let ending = loop {
        match rounds.round(&mut progress).await? {
            ControlFlow::Continue(()) => {}
            ControlFlow::Break(ending) => break ending,
        }
    };
    // How the loop ended may quote what the last reads returned.
    calls.reads_on_disk().await?;
    drop(calls);
    let end = finish::End {
        rt,
        req: &req,
        events: &events,
        interrupt: &setup.interrupt,
        prompt: &prompt,
        started: setup.started,
    };
    end.finish(ending, progress, run, executing).await
}

/// The answer of a run stopped by a limit: the planner's last words and the last results.
pub(super) fn what_we_have(rounds: &[RoundRecord]) -> String {
    let Some(last) = rounds.last() else { return "Stopped before the planner produced anything.".into() };
    let mut text = String::from("Stopped by a limit before a final answer. ");
    if !last.text.trim().is_empty() {
        text.push_str(last.text.trim());
        text.push('\n');
    }
    for (call, (result, is_error)) in last.calls.iter().zip(&last.results) {
        let status = if *is_error { "failed" } else { "ok" };
        text.push_str(&format!(
            "\nLast step `{}` ({status}): {}",
            call.name,
            steward_protocol::truncate_chars(result, 1000)
        ));
    }
    text
}
