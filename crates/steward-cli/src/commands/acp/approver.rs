//! Approvals as `session/request_permission`: the run's [`Approver`] for an editor. Only the
//! gate's asks reach it (a denied call is refused before anyone is asked); the answer is judged
//! by the orchestrator like any other (owner, decision token, expiry).

use std::path::{Path, PathBuf};
use steward_core::{Clock, SystemClock};

use agent_client_protocol as acp;
use async_trait::async_trait;
use steward_core::{ApprovalAnswer, ApprovalScope, Approver};
use steward_core::{ElicitationPrompt, ElicitationReply};
use steward_protocol::ApprovalRequest;
use tokio::sync::oneshot;

use super::bridge::{Bridge, Outgoing};
use super::updates::{diff_texts, tool_call_id, tool_kind, tool_title};

/// Option id: approve this call.
pub const ALLOW_ONCE: &str = "allow_once";
/// Option id: approve this call and remember a grant for the tool for the rest of the run.
pub const ALLOW_RUN: &str = "allow_run";
/// Option id: reject this call.
pub const REJECT: &str = "reject";

/// Asks the editor; the answer is the local owner's (the editor runs as this user).
pub struct EditorApprover {
    /// The session the run belongs to.
    pub session_id: acp::SessionId,
    /// The run's owner, who answers in the editor.
    pub owner_id: String,
    /// The way to the connection.
    pub bridge: Bridge,
    /// The session's workspace (the tools' paths are relative to it).
    pub workspace: PathBuf,
}

/// The permission request for `request`: the call, its proposed change and the three options.
pub fn permission_request(
    session_id: &acp::SessionId,
    workspace: &Path,
    request: &ApprovalRequest,
) -> acp::RequestPermissionRequest {
    let mut content = Vec::new();
    if let Some((old, new)) = diff_texts(&request.preview)
        && let Some(path) = request.arguments.get("path").and_then(|p| p.as_str())
    {
        content.push(acp::ToolCallContent::Diff(acp::Diff::new(workspace.join(path), new).old_text(old)));
    }
    content.push(acp::ToolCallContent::Content(acp::Content::new(acp::ContentBlock::from(format!(
        "needs approval (rule `{}`, risk {:.2}): {}\nexpires {}",
        request.rule,
        request.risk,
        request.reason,
        request.expires_at.to_rfc3339()
    )))));
    let fields = acp::ToolCallUpdateFields::new()
        .title(tool_title(&request.tool, &request.arguments))
        .kind(tool_kind(&request.tool))
        .status(acp::ToolCallStatus::Pending)
        .raw_input(request.arguments.clone())
        .content(content);
    let options = vec![
        acp::PermissionOption::new(ALLOW_ONCE, "Allow once", acp::PermissionOptionKind::AllowOnce),
        acp::PermissionOption::new(
            ALLOW_RUN,
            format!("Allow `{}` for the rest of this prompt", request.tool),
            acp::PermissionOptionKind::AllowAlways,
        ),
        acp::PermissionOption::new(REJECT, "Reject", acp::PermissionOptionKind::RejectOnce),
    ];
    acp::RequestPermissionRequest::new(
        session_id.clone(),
        acp::ToolCallUpdate::new(tool_call_id(&request.run_id, &request.call_id), fields),
        options,
    )
}

/// What the editor's `outcome` amounts to, answered at `now`: a chosen option of a request that
/// has not expired, else `NoApprover` (a late answer, a cancelled request, an unknown option).
pub fn answer_of(
    outcome: &acp::RequestPermissionOutcome,
    request: &ApprovalRequest,
    token: &str,
    owner_id: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> ApprovalAnswer {
    if now >= request.expires_at {
        return ApprovalAnswer::NoApprover;
    }
    let acp::RequestPermissionOutcome::Selected(selected) = outcome else { return ApprovalAnswer::NoApprover };
    // The call the editor was shown, so a call changed after the question cannot run on this answer.
    let call_hash = steward_core::call_hash(request);
    let approve = |scope| ApprovalAnswer::Approve {
        token: token.to_string(),
        decided_by: owner_id.to_string(),
        scope,
        call_hash: call_hash.clone(),
    };
    match &*selected.option_id.0 {
        ALLOW_ONCE => approve(ApprovalScope::Once),
        ALLOW_RUN => approve(ApprovalScope::Run),
        REJECT => ApprovalAnswer::Reject {
            reason: "rejected by the owner in the editor".into(),
            decided_by: owner_id.to_string(),
        },
        _ => ApprovalAnswer::NoApprover,
    }
}

/// How long a `cancelled` answer waits for the turn's cancellation before the call is refused.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

#[async_trait]
impl Approver for EditorApprover {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        let (tx, rx) = oneshot::channel();
        let asked = permission_request(&self.session_id, &self.workspace, request);
        if self.bridge.send(Outgoing::Permission(Box::new(asked), tx)).is_err() {
            return ApprovalAnswer::NoApprover;
        }
        // A decision made elsewhere first (`steward approve`, the web UI) or the expiry ends
        // this wait: the orchestrator drops it.
        match rx.await {
            // The editor cancelled the prompt turn (`session/cancel`, which it sends first): the
            // run's cancellation ends this wait. An editor that answers `cancelled` without
            // cancelling the turn gets the call refused after a grace period, not a question
            // left pending until it expires.
            Ok(Ok(response)) if matches!(response.outcome, acp::RequestPermissionOutcome::Cancelled) => {
                tokio::time::sleep(CANCEL_GRACE).await;
                ApprovalAnswer::NoApprover
            }
            Ok(Ok(response)) => answer_of(&response.outcome, request, token, &self.owner_id, SystemClock.now()),
            // The editor answered with an error, or the connection closed.
            _ => ApprovalAnswer::NoApprover,
        }
    }

    /// An editor has no form for an MCP server's questions over ACP: nobody answers here, so
    /// the server gets `decline`.
    async fn elicit(&self, _prompt: &ElicitationPrompt) -> ElicitationReply {
        ElicitationReply::NoApprover
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use steward_protocol::ApprovalStatus;

    fn request(expires_in: chrono::Duration) -> ApprovalRequest {
        let now = chrono::Utc::now();
        ApprovalRequest {
            id: "apr_1".into(),
            run_id: "run_a".into(),
            owner_id: "local:t".into(),
            call_id: "call_1".into(),
            tool: "edit".into(),
            arguments: serde_json::json!({"path": "note.txt", "old": "old", "new": "new"}),
            reason: "writes ask".into(),
            rule: "default:medium".into(),
            risk: 0.6,
            preview: "--- a/note.txt\n+++ b/note.txt\n@@ -1 +1 @@\n-old\n+new\n".into(),
            created_at: now,
            expires_at: now + expires_in,
            status: ApprovalStatus::Pending,
        }
    }

    fn chosen(option: &str) -> acp::RequestPermissionOutcome {
        acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(option.to_string()))
    }

    #[test]
    fn the_three_options_are_once_the_rest_of_the_run_and_reject() {
        let r = request(chrono::Duration::minutes(5));
        let now = chrono::Utc::now();
        let approved = |scope| ApprovalAnswer::Approve {
            token: "tok".into(),
            decided_by: "local:t".into(),
            scope,
            call_hash: steward_core::call_hash(&r),
        };
        assert_eq!(answer_of(&chosen(ALLOW_ONCE), &r, "tok", "local:t", now), approved(ApprovalScope::Once));
        assert_eq!(answer_of(&chosen(ALLOW_RUN), &r, "tok", "local:t", now), approved(ApprovalScope::Run));
        assert!(matches!(answer_of(&chosen(REJECT), &r, "tok", "local:t", now), ApprovalAnswer::Reject { .. }));
        assert_eq!(answer_of(&chosen("other"), &r, "tok", "local:t", now), ApprovalAnswer::NoApprover);
        let cancelled = acp::RequestPermissionOutcome::Cancelled;
        assert_eq!(answer_of(&cancelled, &r, "tok", "local:t", now), ApprovalAnswer::NoApprover);
    }

    #[test]
    fn an_answer_after_the_expiry_counts_for_nothing() {
        let r = request(chrono::Duration::minutes(5));
        let late = r.expires_at + chrono::Duration::seconds(1);
        assert_eq!(answer_of(&chosen(ALLOW_ONCE), &r, "tok", "local:t", late), ApprovalAnswer::NoApprover);
    }

    #[test]
    fn the_request_shows_the_change_as_a_diff_and_offers_three_options() {
        let asked =
            permission_request(&acp::SessionId::new("cnv_1"), Path::new("/w"), &request(chrono::Duration::minutes(5)));
        let wire = serde_json::to_value(&asked).unwrap();
        assert_eq!(wire["toolCall"]["toolCallId"], "run_a:call_1");
        assert_eq!(wire["toolCall"]["content"][0]["type"], "diff");
        assert_eq!(wire["toolCall"]["content"][0]["path"], "/w/note.txt");
        let kinds: Vec<&str> =
            wire["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, vec!["allow_once", "allow_always", "reject_once"]);
    }
}
