//! Undoing a run's changes (SPEC C5): its rollback records applied newest first — file
//! snapshots of the built-in writers, `compensate` commands of `[[tool]]`s — each attempt
//! recorded in the rollback record and the audit log; the first failure stops the rollback.
//! `steward rollback` renders it.

use std::path::Path;

use steward_policy::{Redactor, Workspace};
use steward_protocol::{AuditEntry, AuditOutcome};
use steward_store::{RollbackRecord, RollbackStatus, RunRecord, Store, StoreError};

use crate::compensate::{CompensateError, CompensationRunner};
use steward_tools::{rollback::Compensation, rollback::undo};

/// How many of the newest runs [`last_changing_run`] looks through for one that changed files.
pub const LAST_CHANGING_RUN_SCAN: u32 = 1000;

/// The newest run of `owner_id` that changed files (the newest run often only read), with its
/// rollback records; `None` when none of the newest `LAST_CHANGING_RUN_SCAN` runs did.
pub async fn last_changing_run(
    store: &dyn Store,
    owner_id: &str,
) -> Result<Option<(RunRecord, Vec<RollbackRecord>)>, StoreError> {
    for run in store.list_runs(LAST_CHANGING_RUN_SCAN).await?.into_iter().filter(|r| r.owner_id == owner_id) {
        let records = store.rollbacks(&run.id).await?;
        if !records.is_empty() {
            return Ok(Some((run, records)));
        }
    }
    Ok(None)
}

/// One undo attempt, as it was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepUndo {
    /// The step (1-based position among the run's writing calls).
    pub step: u32,
    /// The tool whose change it undid (or tried to).
    pub tool: String,
    /// True when undone; false when it must not or could not be undone.
    pub undone: bool,
    /// What was done, or why not (redacted).
    pub detail: String,
}

/// What a rollback did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RollbackSummary {
    /// Steps tried (steps already undone are not tried again).
    pub attempted: usize,
    /// Steps that could not be undone (at most one: the rollback stops at the first).
    pub failed: usize,
    /// Steps undone by this rollback, in the order they were undone (newest first).
    pub undone: Vec<u32>,
    /// Steps left as they are because an undo failed before their turn (newest first).
    pub not_tried: Vec<u32>,
}

/// Most characters of a compensating command's output kept in the rollback record and audit.
const MAX_COMPENSATION_DETAIL_CHARS: usize = 2_000;

/// Why a rollback did not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    /// The run has no step with that number.
    #[error("run {run} has no step {step}")]
    NoSuchStep {
        /// The run's id.
        run: String,
        /// The step asked for.
        step: u32,
    },
    /// The run's workspace cannot be opened any more.
    #[error("the run's workspace {path}: {why}")]
    Workspace {
        /// The workspace as recorded.
        path: String,
        /// Why it cannot be opened.
        why: String,
    },
    /// Persistence failed.
    #[error(transparent)]
    Storage(#[from] StoreError),
}

/// Undoes `records` (the rollback records of `run`) newest first, or only step `step`; steps
/// already undone are skipped. Every attempt is recorded — the rollback record's status and
/// detail, and an audit entry by `agent` — and reported to `on_step` as it happens. An undo
/// never overwrites a later change (see [`steward_tools::rollback::undo`]); it fails instead. A
/// `[[tool]]`'s compensation runs through `commands` (the runner for the run's workspace, or
/// why there is none). The first failed step stops the rollback: older steps are left as they
/// are and listed in [`RollbackSummary::not_tried`].
#[allow(clippy::too_many_arguments)]
pub async fn roll_back(
    store: &dyn Store,
    clock: &dyn crate::clock::Clock,
    run: &RunRecord,
    records: Vec<RollbackRecord>,
    step: Option<u32>,
    agent: &str,
    redactor: &Redactor,
    commands: Result<&CompensationRunner, &CompensateError>,
    on_step: &mut (dyn FnMut(&StepUndo) + Send),
) -> Result<RollbackSummary, RollbackError> {
    if let Some(n) = step
        && !records.iter().any(|r| r.step == n)
    {
        return Err(RollbackError::NoSuchStep { run: run.id.clone(), step: n });
    }
    let workspace = Workspace::open(Path::new(&run.workspace), &[])
        .map_err(|e| RollbackError::Workspace { path: run.workspace.clone(), why: e.to_string() })?;
    let mut summary = RollbackSummary::default();
    for mut record in records.into_iter().rev() {
        if record.status == RollbackStatus::Undone || step.is_some_and(|n| n != record.step) {
            continue;
        }
        if summary.failed > 0 {
            summary.not_tried.push(record.step);
            continue;
        }
        summary.attempted += 1;
        let (outcome, sandbox, command) = match serde_json::from_value::<Compensation>(record.compensation.clone()) {
            Err(e) => (Err(format!("unreadable compensation: {e}")), String::new(), false),
            Ok(Compensation::RunCompensate { tool, definition_sha256, arguments }) => {
                let ran = match commands {
                    Ok(runner) => runner.undo(&tool, &definition_sha256, &arguments).await,
                    Err(why) => Err(CompensateError::Config(why.to_string())),
                };
                match ran {
                    Ok(done) => {
                        let (output, _) = steward_protocol::head_tail_chars(
                            done.output.trim_end(),
                            MAX_COMPENSATION_DETAIL_CHARS,
                            "",
                        );
                        (Ok(format!("ran the compensation of `{tool}`: {output}")), done.sandbox, true)
                    }
                    Err(e) => {
                        (Err(format!("the compensation of `{tool}` did not undo the change: {e}")), String::new(), true)
                    }
                }
            }
            Ok(c) => (undo(&c, &workspace).map_err(|e| e.to_string()), String::new(), false),
        };
        let (status, audit_outcome, detail) = match outcome {
            Ok(done) => {
                summary.undone.push(record.step);
                (RollbackStatus::Undone, AuditOutcome::Completed, done)
            }
            Err(why) => {
                summary.failed += 1;
                (RollbackStatus::Failed, AuditOutcome::Failed, why)
            }
        };
        let (detail, _) =
            steward_protocol::head_tail_chars(&redactor.redact(&detail), MAX_COMPENSATION_DETAIL_CHARS, "");
        on_step(&StepUndo {
            step: record.step,
            tool: record.tool.clone(),
            undone: status == RollbackStatus::Undone,
            detail: detail.clone(),
        });
        record.status = status;
        record.detail = detail.clone();
        record.undone_at = Some(clock.now());
        store.upsert_rollback(&record).await?;
        store
            .append_audit(AuditEntry {
                agent: agent.to_string(),
                run_id: run.id.clone(),
                call_id: record.call_id.clone(),
                action: "rollback".into(),
                input: if command {
                    serde_json::json!({"step": record.step, "tool": record.tool, "compensation": "command"})
                } else {
                    serde_json::json!({"step": record.step, "tool": record.tool})
                },
                policy: "rollback".into(),
                risk: 0.0,
                outcome: audit_outcome,
                latency_ms: 0,
                sandbox,
                approval_id: String::new(),
                rollback_token: record.token.clone(),
                detail,
            })
            .await?;
    }
    store.flush().await?;
    Ok(summary)
}
