//! Remembered grants (SPEC C4): an approval the owner gave for the run or the workspace
//! stands in for asking again about later calls of the same tool, when the ask may be
//! granted at all.

use steward_protocol::{ApprovalRequest, Decision, ToolCall};
use steward_store::{GrantRecord, GrantScope, StoreError, new_id};

use super::CallContext;

/// Where an ask came from, as far as remembered grants care: the gate names its rule, and
/// these three are never answered from a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AskOrigin {
    /// The run has read untrusted content (`taint_escalation`).
    Taint,
    /// Data from an earlier output flows into a sink (`data_flow`).
    DataFlow,
    /// A command line the gate could not parse (`unparseable_command`).
    UnparseableCommand,
    /// Any other rule.
    Rule,
}

impl AskOrigin {
    /// The origin of the gate's `decision`.
    fn of(decision: &Decision) -> Self {
        match decision.rule.as_str() {
            "taint_escalation" => AskOrigin::Taint,
            "data_flow" => AskOrigin::DataFlow,
            "unparseable_command" => AskOrigin::UnparseableCommand,
            _ => AskOrigin::Rule,
        }
    }
}

/// Whether a remembered grant may stand in for asking: never in a run that has read untrusted
/// content, never for an ask that came from taint, from data flowing into a sink or from a
/// command line that could not be parsed, and never for `shell_command`, whose calls differ in
/// everything but the tool name.
pub(super) fn grantable(cx: &CallContext<'_>, call: &ToolCall, decision: &Decision) -> bool {
    !cx.state.is_tainted() && AskOrigin::of(decision) == AskOrigin::Rule && call.name != steward_policy::SHELL_TOOL
}

/// An active grant (not revoked, not expired) of the run's owner covering this call, unless the
/// ask came from taint (content-influenced runs always ask).
pub(super) async fn remembered_grant(
    cx: &CallContext<'_>,
    call: &ToolCall,
    decision: &Decision,
) -> Result<Option<GrantRecord>, StoreError> {
    if !grantable(cx, call, decision) {
        return Ok(None);
    }
    let now = cx.approvals.clock.now();
    let workspace = cx.run.workspace.root().display().to_string();
    Ok(cx.records.store.grants(cx.run.owner_id).await?.into_iter().find(|g| {
        g.tool == call.name
            && g.revoked_at.is_none()
            && g.expires_at > now
            && match g.scope {
                GrantScope::Run => g.run_id == cx.run.run_id,
                GrantScope::Workspace => g.workspace == workspace,
            }
    }))
}

/// Stores a grant of the owner's for later calls of the same tool in `scope`.
pub(super) async fn remember_grant(
    cx: &CallContext<'_>,
    call: &ToolCall,
    request: &ApprovalRequest,
    scope: GrantScope,
) -> Result<(), StoreError> {
    let now = cx.approvals.clock.now();
    let grant = GrantRecord {
        id: new_id("grt_"),
        owner_id: cx.run.owner_id.to_string(),
        scope,
        run_id: cx.run.run_id.to_string(),
        workspace: cx.run.workspace.root().display().to_string(),
        tool: call.name.clone(),
        approval_id: request.id.clone(),
        created_at: now,
        expires_at: now + cx.approvals.grant_ttl,
        revoked_at: None,
    };
    cx.records.store.upsert_grant(&grant).await
}
