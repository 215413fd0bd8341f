//! One tool call from proposal to result, top to bottom:
//! request → policy and validation → approval → execution → audit → result for the model.
//!
//! Every decision is an audit record, and the record that lets a call run is durable before
//! the call starts: a crash between the two leaves an `approved` record without an outcome,
//! which the next start marks `unknown` and never re-runs.

use std::sync::Arc;
use std::time::Instant;

use steward_policy::{Policy, Redactor, Workspace};
use steward_protocol::{
    ApprovalRequest, ApprovalStatus, AuditEntry, AuditOutcome, Decision, DecisionKind, EventKind, ToolCall,
    head_tail_chars,
};
use steward_store::{Store, StoreError, new_id};

mod egress;
mod elicit;

use crate::approval::{ApprovalAnswer, ApprovalKey, ApprovalScope, Approver, wait_for_answer};
use crate::events::EventEmitter;
use crate::interrupt::{Interrupt, Interruptible};
use crate::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};

/// Appended to the reason of an approval request whose arguments or preview had parts
/// redacted.
pub(crate) const HIDDEN_PARTS_WARNING: &str = " — WARNING: parts of this call are shown as [REDACTED] because they look \
     like secrets, so you cannot see everything it would write or run; deny it unless you expect a secret there.";

/// Everything one run's tool calls need.
pub(crate) struct CallContext<'a> {
    pub run_id: &'a str,
    pub owner_id: &'a str,
    pub store: &'a Arc<dyn Store>,
    pub redactor: &'a Redactor,
    pub approval_key: &'a ApprovalKey,
    pub approval_ttl: chrono::Duration,
    pub policy: &'a Policy,
    pub workspace: &'a Arc<Workspace>,
    pub tools: &'a ToolRegistry,
    pub tool_context: &'a ToolContext,
    pub approver: &'a Arc<dyn Approver>,
    pub events: &'a EventEmitter,
    pub interrupt: &'a Interruptible,
    pub max_output_chars: usize,
    pub outputs_dir: &'a std::path::Path,
    /// Lifetime of remembered grants (`token_ttl_seconds`).
    pub grant_ttl: chrono::Duration,
    /// Hooks of the configuration (SPEC T9).
    pub hooks: &'a [crate::hooks::HookConfig],
    /// Set once the run has seen untrusted content (SPEC C2); never cleared.
    pub tainted: std::sync::atomic::AtomicBool,
    /// Fingerprints of every tool output of the run so far (SPEC C2, [`crate::data_flow`]);
    /// `None` when the configuration turned the check off ([`crate::config::Config::run_level_taint_only`]).
    pub seen: Option<std::sync::Mutex<steward_policy::Fingerprints>>,
    /// Writing calls that registered a compensation so far (their rollback step numbers).
    pub write_steps: std::sync::atomic::AtomicU32,
}

/// What the model is told about one call.
pub(crate) struct CallResult {
    pub content: String,
    pub is_error: bool,
}

/// Why a call could not finish and the run must stop.
pub(crate) enum CallAbort {
    Interrupted(Interrupt),
    Storage(StoreError),
    /// The run is no longer this process's to execute: another node sharing the database took
    /// it over (its lease expired) and recovered it, or it was ended elsewhere. Nothing more
    /// of it runs here.
    Superseded,
}

impl From<StoreError> for CallAbort {
    fn from(err: StoreError) -> Self {
        CallAbort::Storage(err)
    }
}

/// Takes one proposed call through the control layer and, if allowed, runs it.
pub(crate) async fn handle_call(cx: &CallContext<'_>, call: &ToolCall) -> Result<CallResult, CallAbort> {
    // 1. The request, as the model made it (redacted).
    cx.events
        .emit(EventKind::ToolRequested {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
        })
        .await?;

    // 2. Policy and validation: pure, synchronous, strictest rule wins; a change that cannot
    // be undone is never made without the owner (SPEC C5).
    let tool = cx.tools.get(&call.name);
    let decision = crate::decide::decide(
        cx.policy,
        cx.tools,
        call,
        cx.workspace,
        cx.tainted.load(std::sync::atomic::Ordering::SeqCst),
        cx.seen.as_ref().map(|seen| seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)).as_deref(),
    );

    // 3. The tool's own dry run: a change that cannot apply fails before anyone is asked.
    let mut preview = None;
    if let (Some(tool), DecisionKind::Allow | DecisionKind::Ask) = (tool, decision.decision) {
        match tool.preview(&call.arguments, cx.tool_context).await {
            Ok(p) => preview = p,
            Err(err) => return cannot_apply(cx, call, &decision, &err).await,
        }
    }

    // The approval the call runs under (none for an allow), and what allowed it, as shown.
    let (approval_id, allowed_by) = match decision.decision {
        DecisionKind::Deny => return refuse(cx, call, &decision).await,
        DecisionKind::Ask => {
            let Some(tool) = tool else { return refuse(cx, call, &decision).await };
            if let Some(grant) = remembered_grant(cx, call, &decision).await? {
                let detail = format!("allowed by remembered grant {} ({:?} scope)", grant.id, grant.scope);
                audit(
                    cx,
                    call,
                    &decision.rule,
                    decision.risk,
                    AuditOutcome::Approved,
                    &grant.owner_id,
                    &grant.approval_id,
                    0,
                    "",
                    &detail,
                )
                .await?;
                let allowed_by = format!("grant {} (approval {})", grant.id, grant.approval_id);
                (grant.approval_id, allowed_by)
            } else {
                match ask_owner(cx, call, tool.as_ref(), &decision, preview.as_ref()).await? {
                    Ok(approved) => {
                        // The decision token is checked once more right before anything runs.
                        if !cx.approval_key.verify(&approved.request, &approved.token)
                            || chrono::Utc::now() >= approved.request.expires_at
                        {
                            let refusal = Decision::new(
                                DecisionKind::Deny,
                                "approval_expired",
                                decision.risk,
                                "the approval expired or its token no longer matches",
                            );
                            return refuse(cx, call, &refusal).await;
                        }
                        let allowed_by = format!("approval {}", approved.request.id);
                        (approved.request.id, allowed_by)
                    }
                    Err(refusal) => return Ok(refusal),
                }
            }
        }
        DecisionKind::Allow => {
            audit(cx, call, &decision.rule, decision.risk, AuditOutcome::Approved, "steward", "", 0, "", "").await?;
            (String::new(), decision.rule.clone())
        }
    };
    let Some(tool) = tool else { return refuse(cx, call, &decision).await };

    // 4. Execution. The `approved` record above is already durable.
    execute(cx, call, tool.as_ref(), &decision, &approval_id, allowed_by).await
}

/// An approval the owner gave in time, with what it was bound to.
struct Approved {
    request: ApprovalRequest,
    token: String,
}

/// An active grant (not revoked, not expired) of the run's owner covering this call, unless the
/// ask came from taint (content-influenced runs always ask).
async fn remembered_grant(
    cx: &CallContext<'_>,
    call: &ToolCall,
    decision: &Decision,
) -> Result<Option<steward_store::GrantRecord>, StoreError> {
    if !grantable(cx, call, decision) {
        return Ok(None);
    }
    let now = chrono::Utc::now();
    let workspace = cx.workspace.root().display().to_string();
    Ok(cx.store.grants(cx.owner_id).await?.into_iter().find(|g| {
        g.tool == call.name
            && g.revoked_at.is_none()
            && g.expires_at > now
            && match g.scope {
                steward_store::GrantScope::Run => g.run_id == cx.run_id,
                steward_store::GrantScope::Workspace => g.workspace == workspace,
            }
    }))
}

/// Refuses a call without judging it (chain mode, chain-only tools): recorded and reported
/// like any refusal by the gate.
pub(crate) async fn refuse_call(
    cx: &CallContext<'_>,
    call: &ToolCall,
    rule: &str,
    reason: &str,
) -> Result<CallResult, CallAbort> {
    cx.events
        .emit(EventKind::ToolRequested {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
        })
        .await?;
    refuse(cx, call, &Decision::new(DecisionKind::Deny, rule, 1.0, reason)).await
}

/// Whether a remembered grant may stand in for asking: never in a run that has read untrusted
/// content, never for an ask that came from taint, from data flowing into a sink or from a
/// command line that could not be parsed, and never for `shell_command`, whose calls differ in
/// everything but the tool name.
fn grantable(cx: &CallContext<'_>, call: &ToolCall, decision: &Decision) -> bool {
    !cx.tainted.load(std::sync::atomic::Ordering::SeqCst)
        && !matches!(decision.rule.as_str(), "taint_escalation" | "data_flow" | "unparseable_command")
        && call.name != steward_policy::SHELL_TOOL
}

/// Records and reports a refusal by the gate.
async fn refuse(cx: &CallContext<'_>, call: &ToolCall, decision: &Decision) -> Result<CallResult, CallAbort> {
    let reason = decision.reason();
    audit(cx, call, &decision.rule, decision.risk, AuditOutcome::Blocked, "steward", "", 0, "", &reason).await?;
    cx.events
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
async fn cannot_apply(
    cx: &CallContext<'_>,
    call: &ToolCall,
    decision: &Decision,
    err: &crate::tools::ToolError,
) -> Result<CallResult, CallAbort> {
    let error = cx.redactor.redact(&err.message);
    let rule = err.rule.as_deref().unwrap_or(&decision.rule);
    let detail = format!("not run: {error}");
    audit(cx, call, rule, decision.risk, AuditOutcome::Failed, "steward", "", 0, "", &detail).await?;
    cx.events
        .emit(EventKind::ToolFailed {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            duration_ms: 0,
            error: error.clone(),
        })
        .await?;
    Ok(CallResult { content: format!("Not run: {error}"), is_error: true })
}

/// Asks the run's owner. `Ok(Ok(approved))` when approved in time with a valid token;
/// `Ok(Err(result))` with the result for the model otherwise.
///
/// Arguments and preview are shown redacted; when redaction changed them, the reason says so
/// ([`HIDDEN_PARTS_WARNING`]), since approving then lets through text nobody could read.
async fn ask_owner(
    cx: &CallContext<'_>,
    call: &ToolCall,
    tool: &dyn Tool,
    decision: &Decision,
    preview: Option<&(String, String)>,
) -> Result<Result<Approved, CallResult>, CallAbort> {
    let created_at = chrono::Utc::now();
    let wait = cx.approval_ttl.to_std().unwrap_or_default();
    let arguments = cx.redactor.redact_value(&call.arguments);
    let shown_preview = preview.map(|(_, diff)| cx.redactor.redact(diff)).unwrap_or_default();
    // The owner must know when the request does not show everything the call would do.
    let hidden = arguments != call.arguments || preview.is_some_and(|(_, diff)| *diff != shown_preview);
    let mut reason = decision.reason();
    if hidden {
        reason.push_str(HIDDEN_PARTS_WARNING);
    }
    let mut request = ApprovalRequest {
        id: new_id("apr_"),
        run_id: cx.run_id.to_string(),
        owner_id: cx.owner_id.to_string(),
        call_id: call.id.clone(),
        tool: call.name.clone(),
        arguments,
        reason,
        rule: decision.rule.clone(),
        risk: decision.risk,
        preview: shown_preview,
        created_at,
        expires_at: created_at + cx.approval_ttl,
        status: ApprovalStatus::Pending,
    };
    let token = cx.approval_key.token(&request);
    cx.store.upsert_approval(&request).await?;
    audit(
        cx,
        call,
        &decision.rule,
        decision.risk,
        AuditOutcome::Escalated,
        "steward",
        &request.id,
        0,
        "",
        &request.reason,
    )
    .await?;
    if let Some((path, diff)) = preview {
        cx.events
            .emit(EventKind::PatchProposed { call_id: call.id.clone(), path: path.clone(), diff: diff.clone() })
            .await?;
    }
    cx.events
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

    // Expiry is enforced proactively (the wait ends at `expires_at`) and reactively (a late
    // answer counts for nothing).
    let answer = match wait_for_answer(cx.interrupt, cx.approver.as_ref(), &request, &token, wait).await {
        Ok(answer) => answer,
        Err(interrupt) => {
            expire(cx, &mut request).await?;
            return Err(CallAbort::Interrupted(interrupt));
        }
    };
    let mut scope = ApprovalScope::Once;
    let mut token_presented = String::new();
    let (status, outcome_reason, decided_by) = match answer {
        None => {
            expire(cx, &mut request).await?;
            audit(
                cx,
                call,
                "approval_expired",
                decision.risk,
                AuditOutcome::Blocked,
                "steward",
                &request.id,
                0,
                "",
                "approval expired",
            )
            .await?;
            let msg =
                format!("Not run: the approval request for `{}` expired before anyone decided.", tool.spec().name);
            return Ok(Err(CallResult { content: msg, is_error: true }));
        }
        Some(ApprovalAnswer::Approve { token: presented, decided_by, scope: chosen }) => {
            scope = chosen;
            token_presented = presented.clone();
            if decided_by != cx.owner_id {
                (ApprovalStatus::Denied, "not_owner: only the run's owner may approve".to_string(), decided_by)
            } else if !cx.approval_key.verify(&request, &presented) {
                (ApprovalStatus::Denied, "invalid decision token".to_string(), decided_by)
            } else {
                (ApprovalStatus::Approved, String::new(), decided_by)
            }
        }
        Some(ApprovalAnswer::Reject { reason, decided_by }) => (ApprovalStatus::Denied, reason, decided_by),
        Some(ApprovalAnswer::NoApprover) => (ApprovalStatus::Denied, "no_approver".to_string(), "steward".to_string()),
    };
    request.status = status;
    cx.store.upsert_approval(&request).await?;
    if status == ApprovalStatus::Approved {
        audit(
            cx,
            call,
            &decision.rule,
            decision.risk,
            AuditOutcome::Approved,
            &decided_by,
            &request.id,
            0,
            "",
            "approved by owner",
        )
        .await?;
        if let Some(grant_scope) = match scope {
            _ if !grantable(cx, call, decision) => None,
            ApprovalScope::Once => None,
            ApprovalScope::Run => Some(steward_store::GrantScope::Run),
            ApprovalScope::Workspace => Some(steward_store::GrantScope::Workspace),
        } {
            let now = chrono::Utc::now();
            let grant = steward_store::GrantRecord {
                id: new_id("grt_"),
                owner_id: cx.owner_id.to_string(),
                scope: grant_scope,
                run_id: cx.run_id.to_string(),
                workspace: cx.workspace.root().display().to_string(),
                tool: call.name.clone(),
                approval_id: request.id.clone(),
                created_at: now,
                expires_at: now + cx.grant_ttl,
                revoked_at: None,
            };
            cx.store.upsert_grant(&grant).await?;
        }
        cx.events
            .emit(EventKind::ToolApproved { approval_id: request.id.clone(), call_id: call.id.clone(), decided_by })
            .await?;
        return Ok(Ok(Approved { request, token: token_presented }));
    }
    let rule = if outcome_reason == "no_approver" { "no_approver" } else { "rejected_by_owner" };
    audit(cx, call, rule, decision.risk, AuditOutcome::Blocked, &decided_by, &request.id, 0, "", &outcome_reason)
        .await?;
    cx.events
        .emit(EventKind::ToolRejected {
            approval_id: request.id.clone(),
            call_id: call.id.clone(),
            reason: outcome_reason.clone(),
        })
        .await?;
    let content = if rule == "no_approver" {
        format!(
            "Not run: `{}` needs the owner's approval ({}) and nobody can approve it here (no_approver).",
            call.name,
            decision.reason()
        )
    } else {
        format!("Not run: the owner rejected `{}`: {outcome_reason}", call.name)
    };
    Ok(Err(CallResult { content, is_error: true }))
}

async fn expire(cx: &CallContext<'_>, request: &mut ApprovalRequest) -> Result<(), StoreError> {
    request.status = ApprovalStatus::Expired;
    cx.store.upsert_approval(request).await?;
    cx.events
        .emit(EventKind::ToolApprovalExpired { approval_id: request.id.clone(), call_id: request.call_id.clone() })
        .await?;
    Ok(())
}

/// Runs an approved call and records its outcome. `allowed_by` names what allowed it (a
/// rule, `approval apr_…` or `grant grt_… (approval apr_…)`).
async fn execute(
    cx: &CallContext<'_>,
    call: &ToolCall,
    tool: &dyn Tool,
    decision: &Decision,
    approval_id: &str,
    allowed_by: String,
) -> Result<CallResult, CallAbort> {
    cx.events.emit(EventKind::ToolStarted { call_id: call.id.clone(), tool: call.name.clone(), allowed_by }).await?;
    let started = Instant::now();
    // An MCP server may ask the owner for input while the call runs (SPEC M1).
    let (elicitor, mut asked) = elicit::channel();
    let egress = crate::tools::network::EgressLog::default();
    let tool_context =
        ToolContext { elicitor: Some(elicitor), egress: Some(egress.clone()), ..cx.tool_context.clone() };
    let running = elicit::run_answering(cx, call, tool.run(&call.arguments, &tool_context), &mut asked);
    let result = match cx.interrupt.run(running).await {
        Ok(Err(storage)) => return Err(CallAbort::Storage(storage)),
        Ok(Ok(result)) => Ok(result),
        Err(interrupt) => Err(interrupt),
    };
    let ms = started.elapsed().as_millis() as u64;
    // Each connection the call made through the egress proxy, before the call's own outcome.
    egress::queue(cx, call, egress.take()).await?;
    match result {
        Err(interrupt) => {
            let detail = format!("{}: stopped while running; its effect is unknown", interrupt.as_str());
            audit(
                cx,
                call,
                &decision.rule,
                decision.risk,
                AuditOutcome::Unknown,
                "steward",
                approval_id,
                ms,
                "",
                &detail,
            )
            .await?;
            cx.events
                .emit(EventKind::ToolFailed {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    duration_ms: ms,
                    error: detail,
                })
                .await?;
            Err(CallAbort::Interrupted(interrupt))
        }
        Ok(Err(err)) => {
            // A failure's text can come from outside too (an MCP server's error message).
            if tool_output_taints(cx, call) {
                cx.tainted.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            // Capped like any output: an error can be as long as a result (an MCP server's).
            let error = cap_output(cx, call, &cx.redactor.redact(&err.message), None);
            remember_output(cx, call, &error);
            audit(
                cx,
                call,
                &decision.rule,
                decision.risk,
                AuditOutcome::Failed,
                "steward",
                approval_id,
                ms,
                "",
                &error,
            )
            .await?;
            cx.events
                .emit(EventKind::ToolFailed {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    duration_ms: ms,
                    error: error.clone(),
                })
                .await?;
            Ok(CallResult { content: format!("Error: {error}"), is_error: true })
        }
        Ok(Ok(output)) => Ok(completed(cx, call, decision, approval_id, ms, output).await?),
    }
}

async fn completed(
    cx: &CallContext<'_>,
    call: &ToolCall,
    decision: &Decision,
    approval_id: &str,
    ms: u64,
    output: ToolOutput,
) -> Result<CallResult, CallAbort> {
    // Output filters (SPEC T8) rewrite the redacted output; the audit keeps the digest of the
    // unfiltered output.
    let redacted = cx.redactor.redact(&output.content);
    let filtered = cx.tools.filter_output(&call.name, &redacted);
    let was_filtered = filtered != redacted;
    let full = filtered.into_owned();
    let digest = crate::rollback::sha256_hex(output.content.as_bytes());
    let filter_note = if was_filtered { ", output filters applied" } else { "" };
    let detail = format!("output sha256 {digest}, {} chars{filter_note}", output.content.chars().count());
    let rollback_token = match &output.compensation {
        Some(compensation) => register_rollback(cx, call, compensation).await?,
        None => String::new(),
    };
    // Queued: committed with the next decision or the run's final flush.
    cx.store
        .queue_audit(AuditEntry {
            latency_ms: ms,
            sandbox: output.sandbox.clone(),
            approval_id: approval_id.to_string(),
            rollback_token: rollback_token.clone(),
            detail,
            ..call_entry(cx, call, &decision.rule, decision.risk, AuditOutcome::Completed)
        })
        .await?;
    for (path, _diff) in &output.changes {
        cx.events
            .emit(EventKind::PatchApplied {
                call_id: call.id.clone(),
                path: path.clone(),
                rollback_token: rollback_token.clone(),
            })
            .await?;
    }
    if tool_output_taints(cx, call) {
        cx.tainted.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    let complete = output.full_content.as_deref().map(|text| cx.redactor.redact(text));
    let shown = cap_output(cx, call, &full, complete.as_deref());
    // Hooks run before the call is reported complete, so their reports reach the event (and
    // every front end) as well as the model.
    let mut hook_output = String::new();
    for (path, _diff) in &output.changes {
        hook_output.push_str(&run_hooks(cx, call, path).await?);
    }
    remember_output(cx, call, &shown);
    remember_output(cx, call, &hook_output);
    cx.events
        .emit(EventKind::ToolCompleted {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            duration_ms: ms,
            output_chars: full.chars().count() as u64,
            output: shown.clone(),
            hook_output: hook_output.trim_start().to_string(),
        })
        .await?;
    Ok(CallResult { content: shown + &hook_output, is_error: false })
}

/// Runs the hooks a change fires (SPEC T9) and returns their reports for the model (empty
/// when none ran). Each hook run is an audit record; a failing hook is reported, not fatal.
async fn run_hooks(cx: &CallContext<'_>, call: &ToolCall, path: &str) -> Result<String, StoreError> {
    // A patch edits files: `edit` hooks (formatters) run for each file it changed too.
    let events: &[&str] = if call.name == "apply_patch" { &["apply_patch", "edit"] } else { &[call.name.as_str()] };
    let reports = crate::hooks::run_hooks(cx.hooks, events, path, cx.tool_context).await;
    let mut text = String::new();
    for report in reports {
        let output = cx.redactor.redact(&report.output);
        let status = if report.ok { "passed" } else { "FAILED" };
        text.push_str(&format!(
            "\n\n[hook `{}` {status} after {} of `{path}`]\n{}",
            report.name,
            call.name,
            output.trim_end()
        ));
        cx.store
            .queue_audit(AuditEntry {
                action: format!("hook:{}", report.name),
                input: serde_json::json!({"event": call.name, "path": path}),
                sandbox: report.sandbox,
                detail: format!("hook {status}"),
                ..call_entry(
                    cx,
                    call,
                    "hook",
                    0.0,
                    if report.ok { AuditOutcome::Completed } else { AuditOutcome::Failed },
                )
            })
            .await?;
    }
    Ok(text)
}

/// True when the call's tool returns text from outside the user's control, or reads a
/// workspace path under `[policy] untrusted_paths`.
fn tool_output_taints(cx: &CallContext<'_>, call: &ToolCall) -> bool {
    cx.tools.get(&call.name).is_some_and(|t| {
        t.spec().untrusted_output
            || crate::data_flow::reads_untrusted(cx.policy, cx.workspace, t.as_ref(), &call.arguments)
    })
}

/// Fingerprints what the model is shown of a call's output (result or error), whatever the
/// tool, for the `data_flow` check of later calls.
fn remember_output(cx: &CallContext<'_>, call: &ToolCall, shown: &str) {
    if let Some(seen) = &cx.seen {
        seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).record(&call.name, &call.id, shown);
    }
}

/// Stores the compensation of a completed writing call; returns its rollback token.
async fn register_rollback(
    cx: &CallContext<'_>,
    call: &ToolCall,
    compensation: &crate::rollback::Compensation,
) -> Result<String, StoreError> {
    let token = new_id("rb_");
    let step = cx.write_steps.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    let record = steward_store::RollbackRecord {
        token: token.clone(),
        run_id: cx.run_id.to_string(),
        call_id: call.id.clone(),
        tool: call.name.clone(),
        step,
        compensation: serde_json::to_value(compensation).unwrap_or(serde_json::Value::Null),
        status: steward_store::RollbackStatus::Pending,
        detail: String::new(),
        created_at: chrono::Utc::now(),
        undone_at: None,
    };
    cx.store.upsert_rollback(&record).await?;
    Ok(token)
}

/// Caps a (redacted) output to `max_output_chars`, keeping head and tail; the full output is
/// saved under `outputs_dir/RUN_ID/CALL_ID.txt` and the marker says so.
/// `complete` is the whole output when the tool already cut `full` itself (an MCP server's
/// byte cap); it is what gets saved then.
fn cap_output(cx: &CallContext<'_>, call: &ToolCall, full: &str, complete: Option<&str>) -> String {
    let too_long = full.chars().count() > cx.max_output_chars;
    if !too_long && complete.is_none() {
        return full.to_string();
    }
    let dir = cx.outputs_dir.join(cx.run_id);
    let file = dir.join(format!("{}.txt", safe_file_name(&call.id)));
    let saved = save_private(&dir, &file, complete.unwrap_or(full));
    if !too_long {
        return match saved {
            Ok(()) => format!("{full}\n[the complete output is saved to {}]", file.display()),
            Err(_) => full.to_string(),
        };
    }
    let note = match saved {
        Ok(()) => format!("full output saved to {}", file.display()),
        Err(e) => format!("full output could not be saved: {e}"),
    };
    head_tail_chars(full, cx.max_output_chars, &note).0
}

/// Writes `text` to `file` (mode 0600) in `dir` (created with mode 0700).
fn save_private(dir: &std::path::Path, file: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut out = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(file)?;
    out.write_all(text.as_bytes())
}

fn safe_file_name(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).take(80).collect()
}

/// The audit entry of `call` by `steward` with its redacted input; the other fields empty.
pub(crate) fn call_entry(
    cx: &CallContext<'_>,
    call: &ToolCall,
    policy: &str,
    risk: f64,
    outcome: AuditOutcome,
) -> AuditEntry {
    AuditEntry {
        agent: "steward".into(),
        run_id: cx.run_id.to_string(),
        call_id: call.id.clone(),
        action: call.name.clone(),
        input: cx.redactor.redact_value(&call.arguments),
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

/// Appends one audit record for `call`. A record that lets the call run (`approved`) is
/// durable when this returns, and written only while the run is still `running` and this
/// node holds its lease ([`Store::append_audit_if_running`]); otherwise a `blocked` record
/// saying the call was not executed is queued and [`CallAbort::Superseded`] returned. Every
/// other record is queued and committed with the next durable one or the run's final flush,
/// so a step pays for one forced write, not two.
#[allow(clippy::too_many_arguments)]
async fn audit(
    cx: &CallContext<'_>,
    call: &ToolCall,
    policy: &str,
    risk: f64,
    outcome: AuditOutcome,
    agent: &str,
    approval_id: &str,
    latency_ms: u64,
    sandbox: &str,
    detail: &str,
) -> Result<(), CallAbort> {
    let entry = AuditEntry {
        agent: agent.to_string(),
        latency_ms,
        sandbox: sandbox.to_string(),
        approval_id: approval_id.to_string(),
        detail: cx.redactor.redact(detail),
        ..call_entry(cx, call, policy, risk, outcome)
    };
    if outcome != AuditOutcome::Approved {
        return Ok(cx.store.queue_audit(entry).await?);
    }
    // The record that lets the call run is only written while the run is still this node's
    // (fail closed): a node that was paused or cut off past its lease finds here that another
    // node has recovered the run, and the call does not execute.
    if cx.store.append_audit_if_running(entry.clone()).await?.is_some() {
        return Ok(());
    }
    tracing::warn!(run = %cx.run_id, call = %call.id, "the run was taken over by another node; the call is not executed");
    cx.store
        .queue_audit(AuditEntry {
            agent: "steward".into(),
            outcome: AuditOutcome::Blocked,
            detail: "not executed: this node no longer holds the run (its lease expired and another node \
                     recovered it, or the run ended)"
                .into(),
            ..entry
        })
        .await?;
    Err(CallAbort::Superseded)
}
