//! Starting, reading, cancelling runs and deciding approvals: the operations behind both the
//! JSON API and the HTML forms, each checking the caller's ownership (SPEC C7).

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use steward_core::Task;
use steward_core::{ApprovalScope, QueueApprover};
use steward_protocol::{ApprovalRequest, ApprovalStatus, Event};
use steward_store::{ApprovalDecisionRecord, RunRecord, new_id};

use crate::error::{ApiError, ErrorClass};
use crate::live::{Broadcast, DecideError, Decision, ElicitError, ElicitationAction};
use crate::state::{AppState, StartRun};

/// Longest task accepted, in characters.
pub const MAX_TASK_CHARS: usize = 20_000;

/// Answer to a start request.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Started {
    /// The new run's id.
    pub id: String,
    /// `queued` or `running`.
    #[schema(schema_with = started_status_schema)]
    pub status: &'static str,
    /// Position in the queue (1 = next), null when running.
    #[schema(required = true)]
    pub queue_position: Option<usize>,
}

fn started_status_schema() -> utoipa::openapi::Object {
    crate::schema::string_enum(&["queued", "running"], "`queued` or `running`.")
}

/// A run as the API shows it: the stored record, or a queued run that has none yet.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunView {
    /// `run_…`.
    pub id: String,
    /// Owner id.
    pub owner_id: String,
    /// `queued`, `running`, `completed`, `failed`, `cancelled` or `interrupted`.
    #[schema(schema_with = run_view_status_schema)]
    pub status: String,
    /// Position in the queue when queued, null otherwise.
    #[schema(required = true)]
    pub queue_position: Option<usize>,
    /// True while this server executes or queues it (decisions can reach it).
    pub live: bool,
    /// The task (redacted), also while queued.
    pub task: String,
    /// The stored record (null while queued).
    #[schema(required = true)]
    pub record: Option<RunRecord>,
}

fn run_view_status_schema() -> utoipa::openapi::Object {
    crate::schema::string_enum(
        &["queued", "running", "completed", "failed", "cancelled", "interrupted"],
        "`queued`, `running`, `completed`, `failed`, `cancelled` or `interrupted`.",
    )
}

/// Resolves the requested workspace against the served ones: absent/empty gives the default;
/// otherwise its canonical path must be exactly one of them. A folder inside a served
/// workspace is refused: the gate judges paths relative to the workspace and reads its
/// `.steward/`, so a sub-folder (`.git`, `.steward`, an ignored or denied folder) would slip
/// past the rules of the repository it belongs to. Every refusal reads the same, so the answer
/// does not tell whether a path exists.
pub fn resolve_workspace(state: &AppState, requested: Option<&str>) -> Result<PathBuf, ApiError> {
    let allowed = &state.options.workspaces;
    let requested = requested.map(str::trim).filter(|w| !w.is_empty());
    let Some(requested) = requested else {
        return allowed.first().cloned().ok_or_else(|| ApiError::invalid("the server has no workspace configured"));
    };
    let refused = || {
        ApiError::invalid(format!(
            "workspace {requested} is not one this server serves; start `steward serve --workspace DIR` to add it"
        ))
    };
    let canonical = std::fs::canonicalize(requested).map_err(|_| refused())?;
    if allowed.iter().any(|root| &canonical == root) { Ok(canonical) } else { Err(refused()) }
}

/// Starts a run for `owner_id`; it waits in the queue when the concurrency limit is reached.
pub async fn start(state: &AppState, owner_id: &str, start: StartRun) -> Result<Started, ApiError> {
    start_with_history(state, owner_id, start, Vec::new()).await
}

/// Starts a run for `owner_id` that continues a conversation: `history` holds its earlier
/// turns, oldest first.
pub async fn start_with_history(
    state: &AppState,
    owner_id: &str,
    start: StartRun,
    history: Vec<steward_core::Turn>,
) -> Result<Started, ApiError> {
    let task = start.task.trim().to_string();
    if task.is_empty() {
        return Err(ApiError::invalid("the task is empty: say what to do"));
    }
    if task.chars().count() > MAX_TASK_CHARS {
        return Err(ApiError::invalid(format!("the task is longer than {MAX_TASK_CHARS} characters")));
    }
    let mut options = start.options().map_err(|e| ApiError::invalid(e.to_string()))?;
    // Only this owner's logins reach the MCP servers of the run.
    options.mcp_logins = Some(state.runtime.mcp_logins(owner_id));
    let workspace = resolve_workspace(state, start.workspace.as_deref())?;
    let prepared = state
        .launcher
        .prepare(&workspace, &options)
        .await
        .map_err(|e| ApiError::invalid(state.runtime.redactor.redact(&e.to_string())))?;
    let id = new_id("run_");
    let run = state.live.register(&id, owner_id, state.shutdown.child_token());
    run.set_submitted(&state.runtime.redactor.redact(&task), state.now());
    let ready = prepared.into_run(Task {
        task,
        owner_id: owner_id.to_string(),
        approver: Arc::new(QueueApprover),
        observer: Arc::new(Broadcast(run.clone())),
        cancel: run.cancel.clone(),
        run_id: Some(id.clone()),
        history,
        attachments: Vec::new(),
    });
    let state2 = state.clone();
    state.tasks.spawn(async move {
        // A run cancelled while queued still runs to its first check, so it is recorded as
        // cancelled rather than vanishing.
        let permit = state2.live.wait_for_slot(&run).await;
        let result = ready.run(&state2.runtime).await;
        drop(permit);
        if let Err(e) = result {
            tracing::warn!("run {} did not start: {}", run.id, state2.runtime.redactor.redact(&e.to_string()));
        }
        state2.live.remove(&run.id);
        let _ = state2.run_finished.send(run.id.clone());
    });
    // Answer once the run is recorded or waits in the queue, so that a page shown right away
    // has its task and status.
    for _ in 0..300 {
        if state.live.queue_position(&id).is_some()
            || state.runtime.store.get_run(&id).await.map_err(ApiError::storage)?.is_some()
            || state.live.get(&id).is_none()
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let queue_position = state.live.queue_position(&id);
    Ok(Started { id, status: if queue_position.is_some() { "queued" } else { "running" }, queue_position })
}

/// The run `id` if `owner_id` owns it: `not_found` when there is none, `not_owner` when it is
/// someone else's.
pub async fn owned(state: &AppState, owner_id: &str, id: &str) -> Result<RunView, ApiError> {
    let live = state.live.get(id);
    let record = state.runtime.store.get_run(id).await.map_err(ApiError::storage)?;
    let owner = match (&record, &live) {
        (Some(r), _) => r.owner_id.clone(),
        (None, Some(l)) => l.owner_id.clone(),
        (None, None) => return Err(ApiError::not_found(format!("no run `{id}`"))),
    };
    if owner != owner_id {
        return Err(ApiError::not_owner("this run"));
    }
    let queue_position = state.live.queue_position(id);
    let status = match (&record, queue_position) {
        (_, Some(_)) => "queued".to_string(),
        (Some(r), None) => r.status.as_str().to_string(),
        (None, None) => "queued".to_string(),
    };
    let task = match (&record, &live) {
        (Some(r), _) => r.task.clone(),
        (None, Some(l)) => l.submitted_task().unwrap_or_default(),
        (None, None) => String::new(),
    };
    Ok(RunView { id: id.to_string(), owner_id: owner, status, queue_position, live: live.is_some(), task, record })
}

/// The owner's runs, newest first (at most `limit`), queued ones included.
pub async fn list(state: &AppState, owner_id: &str, limit: usize) -> Result<Vec<RunView>, ApiError> {
    let records = state.runtime.store.list_runs(10_000).await.map_err(ApiError::storage)?;
    // Queued runs have no record yet: newest first, ahead of the recorded ones.
    let mut queued = state.live.queued_of(owner_id);
    queued.reverse();
    let queued = queued.into_iter().map(|(id, task, _)| RunView {
        queue_position: state.live.queue_position(&id),
        owner_id: owner_id.to_string(),
        status: "queued".to_string(),
        live: true,
        task,
        record: None,
        id,
    });
    let recorded = records.into_iter().filter(|r| r.owner_id == owner_id).map(|r| RunView {
        id: r.id.clone(),
        owner_id: r.owner_id.clone(),
        status: r.status.as_str().to_string(),
        queue_position: None,
        live: state.live.get(&r.id).is_some(),
        task: r.task.clone(),
        record: Some(r),
    });
    Ok(queued.chain(recorded).take(limit).collect())
}

/// A run's events and approvals (the owner's only).
pub async fn trace(
    state: &AppState,
    owner_id: &str,
    id: &str,
) -> Result<(RunView, Vec<Event>, Vec<ApprovalRequest>), ApiError> {
    let view = owned(state, owner_id, id).await?;
    let events = state.runtime.store.events(id, 0).await.map_err(ApiError::storage)?;
    let mut approvals = state.runtime.store.approvals(id).await.map_err(ApiError::storage)?;
    // Pending requests of a run that has ended can never be answered.
    if !view.live && view.status != "running" {
        for a in approvals.iter_mut().filter(|a| a.status == ApprovalStatus::Pending) {
            a.status = ApprovalStatus::Expired;
        }
    }
    Ok((view, events, approvals))
}

/// Cancels the owner's run: `not_pending` (409) when it has already ended or runs in another
/// process.
pub async fn cancel(state: &AppState, owner_id: &str, id: &str) -> Result<RunView, ApiError> {
    let view = owned(state, owner_id, id).await?;
    match state.live.get(id) {
        Some(live) => {
            live.cancel.cancel();
            Ok(view)
        }
        None if view.status == "running" => Err(ApiError::conflict(
            ErrorClass::NotPending,
            "this run executes in another process (a terminal, or another node): cancel it there",
        )),
        None => Err(ApiError::conflict(ErrorClass::NotPending, format!("the run has already ended ({})", view.status))),
    }
}

/// Decides approval `approval_id` as `owner_id`: submitted at once to the runtime's decision
/// queue for a run of this server, or recorded in the store for a run executing in another
/// process, whose decision queue is fed from the store: a terminal's, or another node's
/// sharing the database (woken by its change notice).
///
/// `call_hash` is the hash of the call the approver was shown
/// ([`steward_core::call_hash`]); without it, the request as read here (from the
/// decision queue, or from the store) counts as shown. The run refuses an approval whose hash is
/// not that of the call it would run.
pub async fn decide(
    state: &AppState,
    owner_id: &str,
    approval_id: &str,
    decision: Decision,
    call_hash: Option<String>,
) -> Result<(), ApiError> {
    // A page that showed another call (the stored arguments changed since) is told so before
    // anything is decided: the request keeps waiting for a decision on what it really holds.
    if let (Some(shown), Some(request)) = (&call_hash, state.live.pending_approval(approval_id))
        && request.owner_id == owner_id
        && *shown != steward_core::call_hash(&request)
    {
        return Err(ApiError::conflict(
            ErrorClass::Conflict,
            "the call waiting for this approval is not the one your page showed; reload the page and decide again",
        ));
    }
    let recorded = match state.live.decide(approval_id, owner_id, decision, call_hash.clone()) {
        Ok(()) => return Ok(()),
        Err(DecideError::NotOwner) => return Err(ApiError::not_owner("this approval")),
        Err(DecideError::AlreadyDecided) => {
            return Err(ApiError::conflict(ErrorClass::NotPending, "the approval has already been decided"));
        }
        Err(DecideError::Expired) => {
            return Err(ApiError::conflict(
                ErrorClass::Expired,
                "the approval has expired; it can no longer be approved",
            ));
        }
        Err(DecideError::NotPending(decision)) => decision,
    };
    let Some((run, approval)) = find_approval(state, approval_id).await? else {
        return Err(ApiError::not_found(format!("no approval `{approval_id}`")));
    };
    if approval.owner_id != owner_id {
        return Err(ApiError::not_owner("this approval"));
    }
    let now = state.now();
    match approval.status {
        ApprovalStatus::Pending if approval.expires_at <= now => {
            Err(ApiError::conflict(ErrorClass::Expired, "the approval has expired; it can no longer be approved"))
        }
        ApprovalStatus::Pending
            if run.status == steward_store::RunStatus::Running && state.live.get(&run.id).is_none() =>
        {
            let (approve, scope, reason) = match recorded {
                Decision::Approve(scope) => (true, scope_name(scope), String::new()),
                Decision::Deny(reason) => (false, "once", reason),
            };
            let record = ApprovalDecisionRecord {
                approval_id: approval_id.to_string(),
                run_id: run.id.clone(),
                decided_by: owner_id.to_string(),
                approve,
                scope: scope.to_string(),
                reason,
                created_at: now,
                call_hash: call_hash.unwrap_or_else(|| steward_core::call_hash(&approval)),
            };
            if state.runtime.store.insert_approval_decision(&record).await.map_err(ApiError::storage)? {
                Ok(())
            } else {
                Err(ApiError::conflict(ErrorClass::NotPending, "the approval has already been decided"))
            }
        }
        ApprovalStatus::Pending => {
            Err(ApiError::conflict(ErrorClass::Expired, "the run waiting on this approval has ended"))
        }
        ApprovalStatus::Expired => Err(ApiError::conflict(ErrorClass::Expired, "the approval has expired")),
        s => Err(ApiError::conflict(ErrorClass::NotPending, format!("the approval is already {}", s.as_str()))),
    }
}

/// Delivers `owner_id`'s answer to an MCP server's request for input (elicitation) `id` of a
/// run of this server. Refused: `not_owner` for another owner's run, `expired` once its
/// time is up (the server was told `cancel`), `not_found` when none waits here, `invalid`
/// (with what is wrong) for values that do not fit the requested schema — the request then
/// keeps waiting.
pub fn answer_elicitation(
    state: &AppState,
    owner_id: &str,
    id: &str,
    action: ElicitationAction,
) -> Result<(), ApiError> {
    state.live.answer_elicitation(id, owner_id, action).map_err(|e| match e {
        ElicitError::NotOwner => ApiError::not_owner("this request for input"),
        ElicitError::Expired => {
            ApiError::conflict(ErrorClass::Expired, "the request for input has expired; the server was told `cancel`")
        }
        ElicitError::NotPending => ApiError::not_found(format!(
            "no request for input `{id}` is waiting here (it was answered, it expired, or its run has ended)"
        )),
        ElicitError::Invalid(problem) => ApiError::invalid(format!("not sent: {problem}")),
    })
}

fn scope_name(scope: ApprovalScope) -> &'static str {
    match scope {
        ApprovalScope::Once => "once",
        ApprovalScope::Run => "run",
        ApprovalScope::Workspace => "workspace",
    }
}

/// The stored approval `approval_id` with its run (looked up among recent runs).
async fn find_approval(state: &AppState, approval_id: &str) -> Result<Option<(RunRecord, ApprovalRequest)>, ApiError> {
    let runs = state.runtime.store.list_runs(500).await.map_err(ApiError::storage)?;
    for run in runs {
        let approvals = state.runtime.store.approvals(&run.id).await.map_err(ApiError::storage)?;
        if let Some(a) = approvals.into_iter().find(|a| a.id == approval_id) {
            return Ok(Some((run, a)));
        }
    }
    Ok(None)
}

/// Parses a decision from the API or a form: `approve` (scope `once`, `run` or `workspace`)
/// or `deny` (with an optional reason for the model).
pub fn parse_decision(decision: &str, scope: Option<&str>, reason: Option<&str>) -> Result<Decision, ApiError> {
    match decision {
        "approve" => {
            let scope = match scope.unwrap_or("once") {
                "" | "once" => ApprovalScope::Once,
                "run" => ApprovalScope::Run,
                "workspace" => ApprovalScope::Workspace,
                other => return Err(ApiError::invalid(format!("unknown scope `{other}`; use once, run or workspace"))),
            };
            Ok(Decision::Approve(scope))
        }
        "deny" => Ok(Decision::Deny(
            reason
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .unwrap_or("denied by the owner")
                .chars()
                .take(500)
                .collect(),
        )),
        other => Err(ApiError::invalid(format!("unknown decision `{other}`; use approve or deny"))),
    }
}

/// `active`, `revoked` or `expired` (a run grant also ends with its run; the gate checks that).
pub fn grant_state(grant: &steward_store::GrantRecord, now: chrono::DateTime<chrono::Utc>) -> &'static str {
    if grant.revoked_at.is_some() {
        "revoked"
    } else if grant.expires_at <= now {
        "expired"
    } else {
        "active"
    }
}

/// Revokes the owner's grant `id` (`not_found` when the owner has none with that id); later
/// calls of its tool ask again.
pub async fn revoke_grant(state: &AppState, owner_id: &str, id: &str) -> Result<(), ApiError> {
    let grants = state.runtime.store.grants(owner_id).await.map_err(ApiError::storage)?;
    let Some(mut grant) = grants.into_iter().find(|g| g.id == id) else {
        return Err(ApiError::not_found(format!("you have no grant `{id}`")));
    };
    if grant.revoked_at.is_none() {
        grant.revoked_at = Some(state.now());
        state.runtime.store.upsert_grant(&grant).await.map_err(ApiError::storage)?;
    }
    Ok(())
}

/// Deletes finished runs beyond the newest `keep_runs` and those older than `keep_for`
/// (SPEC R4), with their events, approvals and saved outputs and snapshots; running and live
/// runs are never touched, and the audit chain keeps its records. Returns how many were
/// deleted.
pub async fn cleanup(state: &AppState) -> Result<usize, ApiError> {
    let store = &state.runtime.store;
    let runs = store.list_runs(1_000_000).await.map_err(ApiError::storage)?;
    let cutoff = state.now() - chrono::Duration::from_std(state.options.keep_for).unwrap_or(chrono::Duration::MAX);
    let mut finished = 0usize;
    let mut deleted = 0usize;
    for run in runs {
        if run.status == steward_store::RunStatus::Running || state.live.get(&run.id).is_some() {
            continue;
        }
        finished += 1;
        if finished <= state.options.keep_runs && run.created_at >= cutoff {
            continue;
        }
        if store.delete_run(&run.id).await.map_err(ApiError::storage)? {
            deleted += 1;
            for dir in [&state.runtime.outputs_dir, &state.runtime.snapshots_dir] {
                let path = dir.join(&run.id);
                if path.starts_with(dir) && path.is_dir() {
                    let _ = std::fs::remove_dir_all(&path);
                }
            }
        }
    }
    Ok(deleted)
}
