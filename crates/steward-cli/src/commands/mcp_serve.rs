//! `steward mcp serve`: Steward as an MCP server on stdio (SPEC M2). The protocol side lives in
//! `steward_mcp::mcp_server`; this module answers its five tools from the local store and
//! starts runs exactly as `steward run` does (configuration, tool registry, policy, store, the
//! `[run] mode`), owned by the local user (`local:<user>`).
//!
//! Runs start in background tasks of this process and use `NoApprover`: stdin is the MCP
//! channel, so nobody can answer a prompt, and a call that needs approval is denied with
//! `no_approver` (visible in `get_run` and the run's trace). No tool approves, changes policy
//! or configuration. When the client closes the session, unfinished runs get a few seconds to
//! finish, then are cancelled (a stdio server cannot outlive its session). The client is the
//! local owner with every scope (`read` and `submit`).
//!
//! The streamable HTTP variant is `/mcp` inside `steward serve` (`steward_server::mcp`): there
//! a bearer token names the owner and its scopes, and runs execute in the server, so their
//! approvals are answered by that owner in the browser.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};
use steward_core::EventObserver;
use steward_core::NoApprover;
use steward_core::{ReadyRun, RunOptions, Runtime, Task};
use steward_mcp::mcp_server::{
    Caller, GetRun, LIST_RUNS_DEFAULT, ListPendingApprovals, ListRuns, RunService, ServiceError, SubmitTask,
    SubmitWorkRequest, call_outcomes, serve_stdio,
};
use steward_policy::Redactor;
use steward_protocol::{ApprovalStatus, Event};
use steward_store::{RunRecord, RunStatus, Store};
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::commands::{load_config, prepare_run};
use crate::home::{Home, local_owner};

/// Runs started over MCP that may execute at the same time; more are refused, not queued.
const MAX_CONCURRENT_RUNS: usize = 4;
/// How long unfinished runs may go on to finish by themselves once the session has ended.
const FINISH_GRACE: Duration = Duration::from_secs(5);
/// How long cancelled runs get to record their cancellation.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// `steward mcp serve`: serves until the client closes stdin, then cancels unfinished runs.
pub async fn serve() -> Result<u8> {
    let runtime = Home::locate()?.runtime(crate::commands::redactor()).await?;
    let redactor = runtime.redactor.clone();
    let keeper_stop = CancellationToken::new();
    crate::home::spawn_lease_keeper(&runtime, keeper_stop.clone())?;
    let _stop_keeper = keeper_stop.drop_guard();
    let service = Arc::new(LocalRuns {
        runtime: Arc::new(runtime),
        owner_id: local_owner(),
        redactor,
        cancel: CancellationToken::new(),
        slots: Arc::new(Semaphore::new(MAX_CONCURRENT_RUNS)),
        tasks: Mutex::new(JoinSet::new()),
    });
    let caller = Caller::all_scopes(service.owner_id.clone());
    let served = serve_stdio(service.clone(), caller).await;
    service.shutdown().await;
    service.runtime.shutdown().await;
    served?;
    Ok(0)
}

/// The local user's runs, answered from the store; new ones started in this process. Its only
/// caller is the local user, so the methods answer for `owner_id`.
struct LocalRuns {
    runtime: Arc<Runtime>,
    owner_id: String,
    redactor: Arc<Redactor>,
    cancel: CancellationToken,
    slots: Arc<Semaphore>,
    tasks: Mutex<JoinSet<()>>,
}

impl LocalRuns {
    fn store(&self) -> &dyn Store {
        self.runtime.store.as_ref()
    }

    /// Lets unfinished runs finish for up to [`FINISH_GRACE`] (a client that submits and
    /// disconnects at once still gets a quick run done), then cancels the rest and waits up to
    /// [`CANCEL_GRACE`] for them to record it.
    async fn shutdown(&self) {
        let mut tasks = match self.tasks.lock() {
            Ok(mut guard) => std::mem::take(&mut *guard),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        let finished = tokio::time::timeout(FINISH_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
        if finished.is_err() {
            self.cancel.cancel();
            let _ = tokio::time::timeout(CANCEL_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
        }
    }

    /// The owner's run `id`; any other run is reported as absent.
    async fn owned_run(&self, id: &str) -> Result<RunRecord, ServiceError> {
        match self.store().get_run(id).await {
            Ok(Some(run)) if run.owner_id == self.owner_id => Ok(run),
            Ok(_) => Err(ServiceError(format!("no run `{id}`"))),
            Err(e) => Err(ServiceError(self.redactor.redact(&format!("store: {e}")))),
        }
    }

    /// The run `steward run` would start for `args` (same configuration, composition, mode and
    /// planner), answered by nobody and watched by `observer`.
    async fn prepare(&self, args: SubmitTask, observer: Arc<dyn EventObserver>) -> Result<ReadyRun, SetupError> {
        let given = PathBuf::from(&args.workspace);
        let workspace =
            std::fs::canonicalize(&given).map_err(|source| SetupError::Workspace { path: given.clone(), source })?;
        if !workspace.is_dir() {
            return Err(SetupError::NotADirectory(workspace));
        }
        let config = load_config(&workspace).map_err(SetupError::Config)?;
        let prepared = prepare_run(config, &workspace, &RunOptions::default()).await.map_err(SetupError::Config)?;
        Ok(prepared.into_run(Task {
            task: args.task,
            owner_id: self.owner_id.clone(),
            approver: Arc::new(NoApprover),
            observer,
            cancel: self.cancel.child_token(),
            run_id: None,
            history: Vec::new(),
            attachments: Vec::new(),
        }))
    }
}

/// Why a submitted task's run could not be set up (sent to the assistant redacted).
#[derive(Debug, thiserror::Error)]
enum SetupError {
    /// The workspace cannot be resolved.
    #[error("workspace {}: {source}", path.display())]
    Workspace {
        /// The workspace as given.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The workspace is not a directory.
    #[error("workspace {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The configuration cannot be loaded or the run composed (the whole chain of causes).
    #[error("{0:#}")]
    Config(anyhow::Error),
}

/// Where the first event's run id (or why the run failed to start) is sent, once.
type Started = Arc<Mutex<Option<oneshot::Sender<Result<String, ServiceError>>>>>;

/// Reports the run id of the first event (`run_started`), once.
struct FirstEvent(Started);

impl EventObserver for FirstEvent {
    fn on_event(&self, event: &Event) {
        if let Some(tx) = self.0.lock().ok().and_then(|mut slot| slot.take()) {
            let _ = tx.send(Ok(event.run_id.clone()));
        }
    }
}

impl RunService for LocalRuns {
    async fn submit_work_request(&self, caller: &Caller, args: SubmitWorkRequest) -> Result<Value, ServiceError> {
        let new = steward_ledger::wire::NewWorkRequest {
            kind: steward_ledger::wire::WorkKind::PrSummary,
            repository: args.repository,
            pr_number: args.pr_number,
            text: args.text,
        };
        let ledger = self.store().ledger().ok_or("this store keeps no work ledger")?;
        let record = steward_ledger::requests::file_request(ledger, self.runtime.clock.now(), &caller.owner_id, &new)
            .await
            .map_err(|e| self.redactor.redact(&e.to_string()))?;
        Ok(json!({
            "request_id": record.id,
            "status": record.status.as_str(),
            "revision": record.revision,
            "owner_id": record.requester,
            "note": "nothing runs until the owner approves it (`steward ledger approve` or the Ledger page of \
                     `steward serve`); approving is not an MCP tool",
        }))
    }

    async fn submit_task(&self, _caller: &Caller, args: SubmitTask) -> Result<Value, ServiceError> {
        let permit = self.slots.clone().try_acquire_owned().map_err(|_| {
            format!("busy: {MAX_CONCURRENT_RUNS} runs are already running; submit again when one has finished")
        })?;
        let (tx, rx) = oneshot::channel();
        let started: Started = Arc::new(Mutex::new(Some(tx)));
        let observer = Arc::new(FirstEvent(started.clone()));
        let ready = self.prepare(args, observer).await.map_err(|e| self.redactor.redact(&e.to_string()))?;
        let runtime = self.runtime.clone();
        let redactor = self.redactor.clone();
        let job = async move {
            let result = ready.run(&runtime).await;
            drop(permit);
            if let Err(e) = result {
                // Before its first event the run failed to start; after it, the store has the error.
                if let Some(tx) = started.lock().ok().and_then(|mut slot| slot.take()) {
                    let _ = tx.send(Err(ServiceError(redactor.redact(&e.to_string()))));
                } else {
                    tracing::warn!("mcp serve: run ended with a storage error: {}", redactor.redact(&e.to_string()));
                }
            }
        };
        match self.tasks.lock() {
            Ok(mut tasks) => {
                tasks.spawn(job);
            }
            Err(_) => return Err("the server is shutting down".into()),
        }
        match rx.await {
            Ok(Ok(run_id)) => Ok(json!({
                "run_id": run_id,
                "status": "running",
                "owner_id": self.owner_id,
                "note": "approvals cannot be given over MCP: calls that need one are denied (no_approver)",
            })),
            Ok(Err(message)) => Err(message),
            Err(_) => Err("the run ended before it started".into()),
        }
    }

    async fn list_runs(&self, _caller: &Caller, args: ListRuns) -> Result<Value, ServiceError> {
        let limit = args.limit.unwrap_or(LIST_RUNS_DEFAULT) as usize;
        let runs = self.store().list_runs(10_000).await.map_err(|e| self.redactor.redact(&format!("store: {e}")))?;
        let runs: Vec<Value> = runs
            .into_iter()
            .filter(|r| r.owner_id == self.owner_id)
            .take(limit)
            .map(|r| {
                json!({
                    "run_id": r.id,
                    "status": r.status.as_str(),
                    "stop_reason": r.stop_reason.map(|s| s.as_str()),
                    "task": self.redactor.redact(steward_protocol::truncate_chars(&r.task, 500)),
                    "created_at": r.created_at.to_rfc3339(),
                })
            })
            .collect();
        Ok(json!({ "runs": runs }))
    }

    async fn get_run(&self, _caller: &Caller, args: GetRun) -> Result<Value, ServiceError> {
        let run = self.owned_run(&args.run_id).await?;
        let events = self.store().events(&run.id, 0).await.map_err(|e| self.redactor.redact(&format!("store: {e}")))?;
        let redact = |text: &Option<String>| text.as_deref().map(|t| self.redactor.redact(t));
        Ok(json!({
            "run_id": run.id,
            "status": run.status.as_str(),
            "stop_reason": run.stop_reason.map(|s| s.as_str()),
            "final": redact(&run.final_text),
            "error_class": run.error_class.and_then(|c| serde_json::to_value(c).ok()),
            "error": redact(&run.error),
            "task": self.redactor.redact(&run.task),
            "workspace": run.workspace,
            "planner": run.planner,
            "created_at": run.created_at.to_rfc3339(),
            "finished_at": run.finished_at.map(|t| t.to_rfc3339()),
            "rounds": run.rounds,
            "tool_calls": run.tool_calls,
            "calls": self.redactor.redact_value(&Value::Array(call_outcomes(&events))),
        }))
    }

    async fn list_pending_approvals(
        &self,
        _caller: &Caller,
        args: ListPendingApprovals,
    ) -> Result<Value, ServiceError> {
        let store_error = |e: steward_store::StoreError| self.redactor.redact(&format!("store: {e}"));
        let runs = match &args.run_id {
            Some(id) => vec![self.owned_run(id).await?],
            None => self
                .store()
                .runs_with_status(RunStatus::Running)
                .await
                .map_err(store_error)?
                .into_iter()
                .filter(|r| r.owner_id == self.owner_id)
                .collect(),
        };
        let now = self.runtime.clock.now();
        let mut pending = Vec::new();
        for run in runs.iter().filter(|r| !r.status.is_finished()) {
            for request in self.store().approvals(&run.id).await.map_err(store_error)? {
                if request.status != ApprovalStatus::Pending || request.expires_at <= now {
                    continue;
                }
                pending.push(json!({
                    "approval_id": request.id,
                    "run_id": request.run_id,
                    "call_id": request.call_id,
                    "tool": request.tool,
                    "arguments": self.redactor.redact_value(&request.arguments),
                    "reason": self.redactor.redact(&request.reason),
                    "rule": request.rule,
                    "risk": request.risk,
                    "preview": self.redactor.redact(&request.preview),
                    "created_at": request.created_at.to_rfc3339(),
                    "expires_at": request.expires_at.to_rfc3339(),
                }));
            }
        }
        Ok(json!({
            "approvals": pending,
            "note": "read only: the owner approves in the terminal or web UI; approving is not an MCP tool",
        }))
    }
}
