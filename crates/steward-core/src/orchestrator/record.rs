//! The record step: audit records of a call ([`AuditRecord`]), the rules the orchestrator
//! applies itself ([`Rule`]), and the rollback registration of a completed change.

use steward_protocol::{AuditEntry, AuditOutcome, Decision, EventKind, ToolCall};
use steward_store::{OnDisk, RollbackRecord, RollbackStatus, StoreError, new_id};

use super::{CallAbort, CallContext, CallResult};
use steward_tools::ToolError;

/// The agent name of records Steward writes on its own account.
pub(super) const STEWARD: &str = "steward";

/// The rules the orchestrator applies itself, as recorded in the audit log's `policy` and in
/// events. (The gate's own rules come named in its [`Decision`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rule {
    /// An approval request expired unanswered, or its token no longer matched.
    ApprovalExpired,
    /// Nobody could answer the approval request here.
    NoApprover,
    /// The owner (or someone who is not the owner) said no.
    RejectedByOwner,
    /// An approval named another call than the one the run would run.
    CallMismatch,
    /// A hook ran after a change.
    Hook,
    /// A connection through the egress proxy.
    EgressProxy,
}

impl Rule {
    /// The rule's name in records.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Rule::ApprovalExpired => "approval_expired",
            Rule::NoApprover => "no_approver",
            Rule::RejectedByOwner => "rejected_by_owner",
            Rule::CallMismatch => "call_mismatch",
            Rule::Hook => "hook",
            Rule::EgressProxy => "egress_proxy",
        }
    }
}

/// The audit entry of `call` by `steward` with its redacted input; the other fields empty.
fn call_entry(cx: &CallContext<'_>, call: &ToolCall, policy: &str, risk: f64, outcome: AuditOutcome) -> AuditEntry {
    AuditEntry {
        agent: STEWARD.into(),
        run_id: cx.run.run_id.to_string(),
        call_id: call.id.clone(),
        action: call.name.clone(),
        input: cx.records.redactor.redact_value(&call.arguments),
        policy: policy.to_string(),
        risk,
        outcome,
        latency_ms: 0,
        sandbox: String::new(),
        approval_id: String::new(),
        rollback_token: String::new(),
        detail: String::new(),
    }
}

/// One audit record of a call, built step by step: by `steward` unless [`AuditRecord::by`]
/// says who, with the call's redacted input and the deciding rule and risk.
pub(super) struct AuditRecord {
    entry: AuditEntry,
    /// When an `approved` record must be on disk.
    on_disk: OnDisk,
}

impl AuditRecord {
    /// A record of `call` under `policy` (a rule name) and `risk` with `outcome`.
    pub(super) fn new(cx: &CallContext<'_>, call: &ToolCall, policy: &str, risk: f64, outcome: AuditOutcome) -> Self {
        AuditRecord { entry: call_entry(cx, call, policy, risk, outcome), on_disk: OnDisk::BeforeReturn }
    }

    /// A record under the gate's deciding rule and risk.
    pub(super) fn of(cx: &CallContext<'_>, call: &ToolCall, decision: &Decision, outcome: AuditOutcome) -> Self {
        Self::new(cx, call, &decision.rule, decision.risk, outcome)
    }

    /// Who decided (an owner id, or `steward`).
    pub(super) fn by(mut self, agent: &str) -> Self {
        self.entry.agent = agent.to_string();
        self
    }

    /// For an `approved` record: whether the call only reads (`Tool::pure_read`: it changes
    /// nothing, and its result depends on the workspace alone) and sends nothing anywhere while
    /// it runs (not `Tool::sends_data`). Its record may then reach the
    /// disk while it runs ([`OnDisk::Soon`]); the model is not shown its result before the
    /// record is on disk (the run waits for that before its next model request).
    pub(super) fn only_reads(mut self, pure_read: bool) -> Self {
        if pure_read {
            self.on_disk = OnDisk::Soon;
        }
        self
    }

    /// The approval the call runs (or was refused) under.
    pub(super) fn approval(mut self, approval_id: &str) -> Self {
        self.entry.approval_id = approval_id.to_string();
        self
    }

    /// How long the call ran, in ms.
    pub(super) fn latency(mut self, ms: u64) -> Self {
        self.entry.latency_ms = ms;
        self
    }

    /// The sandbox profile the call (or hook) ran under, followed by an id of this sandboxed
    /// execution (`PROFILE; sbx_…`) that tells two executions under one profile apart; empty
    /// when it ran unconfined.
    pub(super) fn sandbox(mut self, profile: &str) -> Self {
        self.entry.sandbox = if profile.is_empty() { String::new() } else { format!("{profile}; {}", new_id("sbx_")) };
        self
    }

    /// The rollback token of the change the call made.
    pub(super) fn rollback(mut self, token: &str) -> Self {
        self.entry.rollback_token = token.to_string();
        self
    }

    /// The recorded action, when it is not the call's tool (`hook:NAME`, `egress`).
    pub(super) fn action(mut self, action: String) -> Self {
        self.entry.action = action;
        self
    }

    /// The recorded input, when it is not the call's arguments (already redacted).
    pub(super) fn input(mut self, input: serde_json::Value) -> Self {
        self.entry.input = input;
        self
    }

    /// What happened, as written (see [`AuditRecord::write`] for the redacted form).
    pub(super) fn detail(mut self, detail: String) -> Self {
        self.entry.detail = detail;
        self
    }

    /// Queues the record as built: committed with the next durable record or the run's final
    /// flush.
    pub(super) async fn queue(self, cx: &CallContext<'_>) -> Result<(), StoreError> {
        cx.records.store.queue_audit(self.entry).await
    }

    /// Writes the record with its detail redacted. A record that lets the call run
    /// (`approved`) is durable when this returns (for a call that only reads, see
    /// [`AuditRecord::only_reads`], committed, and owed to the disk by the run), and written
    /// only while the run is still
    /// `running` and this node holds its lease ([`steward_store::Store::append_audit_if_running`]);
    /// otherwise a `blocked` record saying the call was not executed is queued and
    /// [`CallAbort::Superseded`] returned. Every other record is queued and committed with the
    /// next durable one or the run's final flush, so a step pays for one forced write, not two.
    pub(super) async fn write(self, cx: &CallContext<'_>) -> Result<(), CallAbort> {
        let entry = AuditEntry { detail: cx.records.redactor.redact(&self.entry.detail), ..self.entry };
        if entry.outcome != AuditOutcome::Approved {
            return Ok(cx.records.store.queue_audit(entry).await?);
        }
        // The record that lets the call run is only written while the run is still this
        // node's (fail closed): a node that was paused or cut off past its lease finds here
        // that another node has recovered the run, and the call does not execute.
        if let Some(record) = cx.records.store.append_audit_if_running(entry.clone(), self.on_disk).await? {
            if self.on_disk == OnDisk::Soon {
                cx.state.owe_on_disk(record.seq);
            }
            return Ok(());
        }
        tracing::warn!(run = %cx.run.run_id, call = %entry.call_id, "the run was taken over by another node; the call is not executed");
        cx.records
            .store
            .queue_audit(AuditEntry {
                agent: STEWARD.into(),
                outcome: AuditOutcome::Blocked,
                detail: "not executed: this node no longer holds the run (its lease expired and another node \
                         recovered it, or the run ended)"
                    .into(),
                ..entry
            })
            .await?;
        Err(CallAbort::Superseded)
    }
}

/// Records and reports a refusal by the gate.
pub(super) async fn refused(
    cx: &CallContext<'_>,
    call: &ToolCall,
    decision: &Decision,
) -> Result<CallResult, CallAbort> {
    let reason = decision.reason();
    AuditRecord::of(cx, call, decision, AuditOutcome::Blocked).detail(reason.clone()).write(cx).await?;
    cx.records
        .events
        .emit(EventKind::ToolDenied {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            rule: decision.rule.clone(),
            risk: decision.risk,
            reason: reason.clone(),
        })
        .await?;
    Ok(CallResult { content: format!("Refused by rule `{}`: {reason}", decision.rule), is_error: true })
}

/// Records and reports a call whose dry run showed it cannot succeed (for example the text to
/// replace is not in the file): nothing ran and nobody was asked.
pub(super) async fn cannot_apply(
    cx: &CallContext<'_>,
    call: &ToolCall,
    decision: &Decision,
    err: &ToolError,
) -> Result<CallResult, CallAbort> {
    let error = cx.records.redactor.redact(&err.message);
    let rule = err.rule.as_deref().unwrap_or(&decision.rule);
    AuditRecord::new(cx, call, rule, decision.risk, AuditOutcome::Failed)
        .detail(format!("not run: {error}"))
        .write(cx)
        .await?;
    cx.records
        .events
        .emit(EventKind::ToolFailed {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            duration_ms: 0,
            error: error.clone(),
        })
        .await?;
    Ok(CallResult { content: format!("Not run: {error}"), is_error: true })
}

/// Stores the compensation of a completed writing call; returns its rollback token.
pub(super) async fn register_rollback(
    cx: &CallContext<'_>,
    call: &ToolCall,
    compensation: &steward_tools::rollback::Compensation,
) -> Result<String, StoreError> {
    let token = new_id("rb_");
    let record = RollbackRecord {
        token: token.clone(),
        run_id: cx.run.run_id.to_string(),
        call_id: call.id.clone(),
        tool: call.name.clone(),
        step: cx.state.next_write_step(),
        compensation: serde_json::to_value(compensation).unwrap_or(serde_json::Value::Null),
        status: RollbackStatus::Pending,
        detail: String::new(),
        created_at: cx.approvals.clock.now(),
        undone_at: None,
    };
    cx.records.store.upsert_rollback(&record).await?;
    Ok(token)
}
