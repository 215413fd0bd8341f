//! Asking the run's owner (SPEC C4), in four parts: the request is opened (stored, audited,
//! queued for decisions, announced), the first valid decision awaited until the expiry (the
//! run's approver's answer or one another front end submits to the runtime's
//! [`DecisionQueue`](crate::decisions::DecisionQueue)), judged (only the owner, with a valid
//! token, approves), and the verdict recorded (a grant remembered when the owner chose one).
//!
//! Arguments and preview are shown redacted; when redaction changed them, the reason says so
//! ([`HIDDEN_PARTS_WARNING`]), since approving then lets through text nobody could read.

use steward_protocol::{ApprovalRequest, ApprovalStatus, AuditOutcome, Decision, EventKind, ToolCall};
use steward_store::{GrantScope, StoreError, new_id};

use super::grants::{grantable, remember_grant};
use super::record::{AuditRecord, Rule, STEWARD};
use super::{CallAbort, CallContext, HIDDEN_PARTS_WARNING};
use crate::approval::{ApprovalAnswer, ApprovalScope, NO_APPROVER, wait_for_answer};
use crate::decisions::Waiting;
use steward_tools::Tool;

/// Why an answer did not approve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Rejection {
    /// Someone other than the run's owner answered.
    NotOwner,
    /// The approval presented a token that does not match the request.
    InvalidToken,
    /// The approval was given for another call than the one the run would run (the request
    /// was changed where the approver read it).
    CallMismatch,
    /// The owner rejected it, saying why.
    ByOwner(String),
    /// Nobody can answer here (no terminal, no UI).
    NoApprover,
}

impl Rejection {
    /// Why, as recorded and shown.
    pub(super) fn reason(&self) -> String {
        match self {
            Rejection::NotOwner => "not_owner: only the run's owner may approve".into(),
            Rejection::InvalidToken => "invalid decision token".into(),
            Rejection::CallMismatch => "call_mismatch: the approval was given for another call than the one this run \
                                        would run (the stored request was changed); nothing was run"
                .into(),
            Rejection::ByOwner(reason) => reason.clone(),
            Rejection::NoApprover => NO_APPROVER.into(),
        }
    }

    /// The rule the refusal is recorded under.
    fn rule(&self) -> Rule {
        match self {
            Rejection::NoApprover => Rule::NoApprover,
            Rejection::CallMismatch => Rule::CallMismatch,
            Rejection::NotOwner | Rejection::InvalidToken | Rejection::ByOwner(_) => Rule::RejectedByOwner,
        }
    }
}

/// The owner's approval: the request as answered (its id and expiry) and the decision token
/// the answer presented.
pub(super) struct Approval {
    /// The approval request, now `approved`.
    pub request: ApprovalRequest,
    /// The decision token presented.
    pub token: String,
}

/// Why asking did not approve the call (already recorded).
pub(super) enum Unapproved {
    /// The request expired before anyone decided; the tool's name.
    Unanswered(String),
    /// The owner, someone else, or the lack of anyone said no.
    Rejected(Rejection),
}

/// What an answer amounts to.
enum Verdict {
    /// Approved by the owner with a valid token, for `scope`.
    Approved { token: String, decided_by: String, scope: ApprovalScope },
    /// Not approved, by `decided_by`.
    Rejected { rejection: Rejection, decided_by: String },
}

/// Asks the run's owner about `call`. `Ok(Ok(_))` is the owner's approval; `Ok(Err(_))` why
/// there is none, already recorded.
pub(super) async fn ask_owner(
    cx: &CallContext<'_>,
    call: &ToolCall,
    tool: &dyn Tool,
    decision: &Decision,
    preview: Option<&(String, String)>,
) -> Result<Result<Approval, Unapproved>, CallAbort> {
    let (mut request, token, mut waiting) = open_request(cx, call, decision, preview).await?;
    // Expiry is enforced proactively (the wait ends at `expires_at`) and reactively (a late
    // answer counts for nothing).
    let wait = approval_ttl(cx, decision).to_std().unwrap_or_default();
    let approver = cx.approvals.approver.as_ref();
    let answered =
        wait_for_answer(cx.run.interrupt, approver, cx.approvals.decisions, &mut waiting, &request, &token, wait).await;
    // The request leaves the queue: later submissions are refused.
    drop(waiting);
    let answer = match answered {
        Ok(answer) => answer,
        Err(interrupt) => {
            expire(cx, &mut request).await?;
            return Err(CallAbort::Interrupted(interrupt));
        }
    };
    let Some(answer) = answer else {
        expire(cx, &mut request).await?;
        AuditRecord::new(cx, call, Rule::ApprovalExpired.as_str(), decision.risk, AuditOutcome::Blocked)
            .approval(&request.id)
            .detail("approval expired".into())
            .write(cx)
            .await?;
        return Ok(Err(Unapproved::Unanswered(tool.spec().name.clone())));
    };
    match judge(cx, &request, answer) {
        Verdict::Approved { token, decided_by, scope } => {
            approved(cx, call, decision, &mut request, &decided_by, scope).await?;
            Ok(Ok(Approval { request, token }))
        }
        Verdict::Rejected { rejection, decided_by } => {
            rejected(cx, call, decision, &mut request, &decided_by, &rejection).await?;
            Ok(Err(Unapproved::Rejected(rejection)))
        }
    }
}

/// Creates the approval request for `call` and its decision token; stores it, records the
/// escalation, opens it in the runtime's decision queue and announces it (with the preview,
/// if any).
async fn open_request<'c>(
    cx: &CallContext<'c>,
    call: &ToolCall,
    decision: &Decision,
    preview: Option<&(String, String)>,
) -> Result<(ApprovalRequest, String, Waiting<'c, ApprovalAnswer>), CallAbort> {
    let created_at = cx.approvals.clock.now();
    let redactor = cx.records.redactor;
    let arguments = redactor.redact_value(&call.arguments);
    let shown_preview = preview.map(|(_, diff)| redactor.redact(diff)).unwrap_or_default();
    // The owner must know when the request does not show everything the call would do.
    let hidden = arguments != call.arguments || preview.is_some_and(|(_, diff)| *diff != shown_preview);
    let mut reason = decision.reason();
    if hidden {
        reason.push_str(HIDDEN_PARTS_WARNING);
    }
    let ttl = approval_ttl(cx, decision);
    if let Some(own) = &decision.approval_ttl {
        // The owner sees why this request expires sooner (or later) than others.
        reason.push_str(&format!(
            " (This request expires after {} s: approval_ttl_seconds of {}.)",
            own.seconds, own.source
        ));
    }
    let request = ApprovalRequest {
        id: new_id("apr_"),
        run_id: cx.run.run_id.to_string(),
        owner_id: cx.run.owner_id.to_string(),
        call_id: call.id.clone(),
        tool: call.name.clone(),
        arguments,
        reason,
        rule: decision.rule.clone(),
        risk: decision.risk,
        preview: shown_preview,
        created_at,
        expires_at: created_at + ttl,
        status: ApprovalStatus::Pending,
    };
    let token = cx.approvals.key.token(&request);
    cx.records.store.upsert_approval(&request).await?;
    AuditRecord::of(cx, call, decision, AuditOutcome::Escalated)
        .approval(&request.id)
        .detail(request.reason.clone())
        .write(cx)
        .await?;
    // Open for decisions before it is announced, so a front end that shows it on the event
    // finds it waiting.
    let waiting = cx.approvals.decisions.open_approval(&request, &token);
    let events = cx.records.events;
    if let Some((path, diff)) = preview {
        events
            .emit(EventKind::PatchProposed { call_id: call.id.clone(), path: path.clone(), diff: diff.clone() })
            .await?;
    }
    events
        .emit(EventKind::ToolApprovalRequired {
            approval_id: request.id.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            rule: decision.rule.clone(),
            risk: decision.risk,
            reason: request.reason.clone(),
            preview: request.preview.clone(),
            expires_at: request.expires_at,
        })
        .await?;
    Ok((request, token, waiting))
}

/// How long the approval request for a call decided as `decision` stays open: the per-action
/// expiry of the rule or `[[tool]]` that set one (SPEC C4), else `approval_timeout_seconds`.
fn approval_ttl(cx: &CallContext<'_>, decision: &Decision) -> chrono::Duration {
    match &decision.approval_ttl {
        Some(own) => chrono::Duration::seconds(own.seconds.min(crate::approval::TEN_YEARS_S) as i64),
        None => cx.approvals.ttl,
    }
}

/// What `answer` amounts to: an approval counts only from the run's owner with a token that
/// matches the request and the hash of the call this run holds (`request` is the run's own,
/// made from the call it would run, never read back from the store).
fn judge(cx: &CallContext<'_>, request: &ApprovalRequest, answer: ApprovalAnswer) -> Verdict {
    match answer {
        ApprovalAnswer::Approve { decided_by, .. } if decided_by != cx.run.owner_id => {
            Verdict::Rejected { rejection: Rejection::NotOwner, decided_by }
        }
        ApprovalAnswer::Approve { token, decided_by, .. } if !cx.approvals.key.verify(request, &token) => {
            Verdict::Rejected { rejection: Rejection::InvalidToken, decided_by }
        }
        ApprovalAnswer::Approve { decided_by, call_hash, .. } if call_hash != crate::approval::call_hash(request) => {
            Verdict::Rejected { rejection: Rejection::CallMismatch, decided_by }
        }
        ApprovalAnswer::Approve { token, decided_by, scope, .. } => Verdict::Approved { token, decided_by, scope },
        ApprovalAnswer::Reject { reason, decided_by } => {
            Verdict::Rejected { rejection: Rejection::ByOwner(reason), decided_by }
        }
        ApprovalAnswer::NoApprover => {
            Verdict::Rejected { rejection: Rejection::NoApprover, decided_by: STEWARD.into() }
        }
    }
}

/// Records an approval: the request's status, the durable `approved` record, a grant when the
/// owner chose one and the call may be granted, and the `tool_approved` event.
async fn approved(
    cx: &CallContext<'_>,
    call: &ToolCall,
    decision: &Decision,
    request: &mut ApprovalRequest,
    decided_by: &str,
    scope: ApprovalScope,
) -> Result<(), CallAbort> {
    request.status = ApprovalStatus::Approved;
    cx.records.store.upsert_approval(request).await?;
    AuditRecord::of(cx, call, decision, AuditOutcome::Approved)
        .by(decided_by)
        .approval(&request.id)
        .detail("approved by owner".into())
        .write(cx)
        .await?;
    let grant_scope = match scope {
        _ if !grantable(cx, call, decision) => None,
        ApprovalScope::Once => None,
        ApprovalScope::Run => Some(GrantScope::Run),
        ApprovalScope::Workspace => Some(GrantScope::Workspace),
    };
    if let Some(scope) = grant_scope {
        remember_grant(cx, call, request, scope).await?;
    }
    let covers = match grant_scope {
        None => "once",
        Some(GrantScope::Run) => "run",
        Some(GrantScope::Workspace) => "workspace",
    };
    cx.records
        .events
        .emit(EventKind::ToolApproved {
            approval_id: request.id.clone(),
            call_id: call.id.clone(),
            decided_by: decided_by.to_string(),
            scope: covers.to_string(),
        })
        .await?;
    Ok(())
}

/// Records a rejection: the request's status, the `blocked` record under the rejection's rule,
/// and the `tool_rejected` event.
async fn rejected(
    cx: &CallContext<'_>,
    call: &ToolCall,
    decision: &Decision,
    request: &mut ApprovalRequest,
    decided_by: &str,
    rejection: &Rejection,
) -> Result<(), CallAbort> {
    request.status = ApprovalStatus::Denied;
    cx.records.store.upsert_approval(request).await?;
    let reason = rejection.reason();
    AuditRecord::new(cx, call, rejection.rule().as_str(), decision.risk, AuditOutcome::Blocked)
        .by(decided_by)
        .approval(&request.id)
        .detail(reason.clone())
        .write(cx)
        .await?;
    cx.records
        .events
        .emit(EventKind::ToolRejected { approval_id: request.id.clone(), call_id: call.id.clone(), reason })
        .await?;
    Ok(())
}

/// Marks the request expired and announces it.
async fn expire(cx: &CallContext<'_>, request: &mut ApprovalRequest) -> Result<(), StoreError> {
    request.status = ApprovalStatus::Expired;
    cx.records.store.upsert_approval(request).await?;
    cx.records
        .events
        .emit(EventKind::ToolApprovalExpired { approval_id: request.id.clone(), call_id: request.call_id.clone() })
        .await?;
    Ok(())
}
