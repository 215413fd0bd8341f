//! Elicitations during a tool call (SPEC M1; see [`crate::elicitation`]): the elicitor handed
//! to the call, and putting each request to the run's owner while the call runs.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use steward_mcp::elicitation::form_fields;
use steward_mcp::{ElicitationAnswer, ElicitationRequest, Elicitor};
use steward_protocol::{AuditEntry, AuditOutcome, EventKind, ToolCall};
use steward_store::{StoreError, new_id};
use tokio::sync::{mpsc, oneshot};

use super::CallContext;
use crate::decisions::Via;
use crate::elicitation::{ElicitationPrompt, ElicitationReply};

/// A server's request on its way from the MCP client to the orchestrator, with where to send
/// the answer.
pub(crate) struct Asked {
    request: ElicitationRequest,
    reply: oneshot::Sender<ElicitationAnswer>,
}

/// The elicitor handed to one tool call: forwards each request to the orchestrator, which
/// asks the owner while the call runs.
struct CallElicitor(mpsc::Sender<Asked>);

#[async_trait]
impl Elicitor for CallElicitor {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let (reply, answer) = oneshot::channel();
        if self.0.send(Asked { request, reply }).await.is_err() {
            return ElicitationAnswer::Cancel;
        }
        answer.await.unwrap_or(ElicitationAnswer::Cancel)
    }
}

/// An elicitor for one call and the receiving end the orchestrator answers from.
pub(crate) fn channel() -> (Arc<dyn Elicitor>, mpsc::Receiver<Asked>) {
    let (tx, rx) = mpsc::channel(4);
    (Arc::new(CallElicitor(tx)), rx)
}

/// Drives `run` (a tool call) to its end, putting each elicitation it makes to the owner
/// meanwhile. `Err` only when the store fails.
pub(crate) async fn run_answering<T>(
    cx: &CallContext<'_>,
    call: &ToolCall,
    run: impl std::future::Future<Output = T>,
    asked: &mut mpsc::Receiver<Asked>,
) -> Result<T, StoreError> {
    tokio::pin!(run);
    loop {
        tokio::select! {
            out = &mut run => return Ok(out),
            Some(Asked { request, reply }) = asked.recv() => {
                let answer = ask(cx, call, request).await?;
                let _ = reply.send(answer);
            }
        }
    }
}

/// Puts one server request to the owner and records it; returns the answer for the server.
async fn ask(
    cx: &CallContext<'_>,
    call: &ToolCall,
    request: ElicitationRequest,
) -> Result<ElicitationAnswer, StoreError> {
    let id = new_id("eli_");
    // Redacted, and with control characters (terminal escapes) written out as text.
    let message: String = cx
        .records
        .redactor
        .redact(&request.message)
        .chars()
        .map(|c| if c.is_control() && c != '\n' && c != '\t' { c.escape_default().to_string() } else { c.to_string() })
        .collect();
    // Titles, descriptions, choices and defaults are the server's text too.
    let shown_schema = cx.records.redactor.redact_value(&request.schema);
    let names: Vec<String> = match form_fields(&shown_schema, &request.order) {
        Ok(fields) => fields.iter().map(|f| f.name.clone()).collect(),
        Err(_) => Vec::new(),
    };
    let input = cx.records.redactor.redact_value(&json!({
        "server": request.server, "tool": call.name, "message": message, "fields": names,
    }));
    let entry = |outcome, agent: &str, detail: String, latency_ms| AuditEntry {
        agent: agent.to_string(),
        run_id: cx.run.run_id.to_string(),
        call_id: call.id.clone(),
        action: "mcp_elicitation".into(),
        input: input.clone(),
        policy: "mcp_elicitation".into(),
        risk: 0.0,
        outcome,
        latency_ms,
        sandbox: String::new(),
        approval_id: id.clone(),
        rollback_token: String::new(),
        detail: cx.records.redactor.redact(&detail),
    };
    let fields = match form_fields(&shown_schema, &request.order) {
        Ok(fields) => fields,
        Err(why) => {
            let reason = format!("unsupported_schema: not a form Steward can show: {why}");
            cx.records
                .store
                .append_audit(entry(AuditOutcome::Blocked, "steward", format!("declined: {reason}"), 0))
                .await?;
            answered(cx, call, &id, "decline", "steward", &reason).await?;
            return Ok(ElicitationAnswer::Decline);
        }
    };
    let created_at = cx.approvals.clock.now();
    let prompt = ElicitationPrompt {
        id: id.clone(),
        run_id: cx.run.run_id.to_string(),
        owner_id: cx.run.owner_id.to_string(),
        call_id: call.id.clone(),
        tool: call.name.clone(),
        server: request.server.clone(),
        message: message.clone(),
        fields,
        schema: request.schema.clone(),
        created_at,
        expires_at: created_at + cx.approvals.ttl,
    };
    let detail =
        format!("server `{}` asks the owner for input; expires {}", request.server, prompt.expires_at.to_rfc3339());
    cx.records.store.queue_audit(entry(AuditOutcome::Escalated, "steward", detail, 0)).await?;
    // Expiry as for an approval: the wait ends at `expires_at`, and a late answer counts for
    // nothing. (Cancelling the run ends the tool call, and this wait with it.) The first valid
    // answer wins: the run's approver's (submitted for it) or one another front end submits to
    // the runtime's decision queue (the run's page in the web UI).
    let started = std::time::Instant::now();
    let wait = cx.approvals.ttl.to_std().unwrap_or_default();
    let queue = cx.approvals.decisions;
    let mut open = queue.open_elicitation(&prompt);
    let own = cx.approvals.approver.elicit(&prompt);
    let first = open.first(own, |reply| queue.submit_elicitation(&id, reply, Via::Here));
    let waiting = tokio::time::timeout(wait, first);
    tokio::pin!(waiting);
    // One poll lets the approver take the request in before the event announces it (the
    // queue already lists it for the web UI, so a page loaded on the event shows the form).
    let early = tokio::select! {
        biased;
        reply = &mut waiting => Some(reply),
        _ = std::future::ready(()) => None,
    };
    cx.records
        .events
        .emit(EventKind::McpElicitationRequested {
            elicitation_id: id.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            server: request.server.clone(),
            message,
            fields: prompt.fields.iter().map(|f| f.name.clone()).collect(),
            expires_at: prompt.expires_at,
        })
        .await?;

    let reply = match match early {
        Some(reply) => reply,
        None => waiting.await,
    } {
        Ok(_) if cx.approvals.clock.now() >= prompt.expires_at => None,
        Ok(reply) => reply,
        Err(_elapsed) => None,
    };
    let ms = started.elapsed().as_millis() as u64;
    let owner = cx.run.owner_id;
    let (answer, outcome, decided_by, reason, detail) = match reply {
        None => {
            let reason = "expired before anyone answered".to_string();
            (ElicitationAnswer::Cancel, AuditOutcome::Blocked, "steward".to_string(), reason.clone(), reason)
        }
        Some(ElicitationReply::NoApprover) => {
            let reason = "no_approver: nobody can answer here".to_string();
            (ElicitationAnswer::Decline, AuditOutcome::Blocked, "steward".to_string(), reason.clone(), reason)
        }
        Some(
            ElicitationReply::Accept { decided_by, .. }
            | ElicitationReply::Decline { decided_by }
            | ElicitationReply::Cancel { decided_by },
        ) if decided_by != owner => {
            let reason = format!("not_owner: {decided_by} answered, but only the run's owner may");
            (ElicitationAnswer::Cancel, AuditOutcome::Blocked, "steward".to_string(), reason.clone(), reason)
        }
        Some(ElicitationReply::Accept { values, decided_by }) => {
            match steward_mcp::elicitation::validate(&prompt.schema, &values) {
                Ok(()) => {
                    let given: Vec<&str> = values.keys().map(String::as_str).collect();
                    let detail = format!("accepted; fields given: {} (values not recorded)", given.join(", "));
                    (ElicitationAnswer::Accept(values), AuditOutcome::Approved, decided_by, String::new(), detail)
                }
                Err(_) => {
                    let reason = "the answer does not fit the requested schema".to_string();
                    (ElicitationAnswer::Cancel, AuditOutcome::Blocked, decided_by, reason.clone(), reason)
                }
            }
        }
        Some(ElicitationReply::Decline { decided_by }) => {
            (ElicitationAnswer::Decline, AuditOutcome::Blocked, decided_by, String::new(), "declined".to_string())
        }
        Some(ElicitationReply::Cancel { decided_by }) => {
            (ElicitationAnswer::Cancel, AuditOutcome::Blocked, decided_by, String::new(), "cancelled".to_string())
        }
    };
    cx.records.store.append_audit(entry(outcome, &decided_by, detail, ms)).await?;
    answered(cx, call, &id, answer.action(), &decided_by, &reason).await?;
    Ok(answer)
}

async fn answered(
    cx: &CallContext<'_>,
    call: &ToolCall,
    id: &str,
    action: &str,
    decided_by: &str,
    reason: &str,
) -> Result<(), StoreError> {
    cx.records
        .events
        .emit(EventKind::McpElicitationAnswered {
            elicitation_id: id.to_string(),
            call_id: call.id.clone(),
            action: action.to_string(),
            decided_by: decided_by.to_string(),
            reason: reason.to_string(),
        })
        .await
        .map(|_| ())
}
