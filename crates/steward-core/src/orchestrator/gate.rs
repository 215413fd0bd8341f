//! The permit step: what the gate decided becomes a [`Permit`] to run (an allow, a remembered
//! grant, or the owner's approval with its token and expiry) or a typed [`Refusal`].

use std::sync::Arc;

use steward_protocol::{ApprovalRequest, AuditOutcome, Decision, DecisionKind, ToolCall};
use steward_store::{GrantRecord, GrantScope, StoreError};

use super::ask::{Rejection, ask_owner};
use super::record::{AuditRecord, Rule, refused};
use super::{CallAbort, CallContext, CallResult};
use crate::tools::Tool;

/// What lets a call run: its tool, and on whose authority.
pub(super) struct Permit<'t> {
    /// The tool that runs the call.
    pub tool: &'t Arc<dyn Tool>,
    /// What allowed it.
    pub authority: Authority,
}

/// On whose authority a call runs.
pub(super) enum Authority {
    /// A rule of the gate allowed it (the rule's name).
    Rule(String),
    /// The owner approved it: the request (its id and expiry) and the decision token presented.
    Approval {
        /// The approval request as answered.
        request: ApprovalRequest,
        /// The decision token the answer presented.
        token: String,
    },
    /// A grant the owner gave earlier covers it.
    Grant(GrantRecord),
}

impl Authority {
    /// The approval the call runs under (empty for an allow).
    pub(super) fn approval_id(&self) -> &str {
        match self {
            Authority::Rule(_) => "",
            Authority::Approval { request, .. } => &request.id,
            Authority::Grant(grant) => &grant.approval_id,
        }
    }

    /// What allowed the call, as shown: a rule, `approval apr_…` or
    /// `grant grt_… (approval apr_…)`.
    pub(super) fn allowed_by(&self) -> String {
        match self {
            Authority::Rule(rule) => rule.clone(),
            Authority::Approval { request, .. } => format!("approval {}", request.id),
            Authority::Grant(grant) => format!("grant {} (approval {})", grant.id, grant.approval_id),
        }
    }
}

/// Why a call does not run.
pub(super) enum Refusal {
    /// The gate denied it, it names no tool, or its approval failed the last check: recorded
    /// and reported when the refusal is reported.
    Denied(Decision),
    /// The approval request expired before anyone decided (already recorded); the tool's name.
    Unanswered(String),
    /// The owner, someone else, or the lack of anyone said no (already recorded).
    Rejected(Rejection),
}

impl Refusal {
    /// Reports the refusal of `call`, which the gate judged as `decision`.
    pub(super) async fn report(
        self,
        cx: &CallContext<'_>,
        call: &ToolCall,
        decision: &Decision,
    ) -> Result<CallResult, CallAbort> {
        let content = match self {
            Refusal::Denied(denial) => return refused(cx, call, &denial).await,
            Refusal::Unanswered(tool) => {
                format!("Not run: the approval request for `{tool}` expired before anyone decided.")
            }
            Refusal::Rejected(Rejection::NoApprover) => format!(
                "Not run: `{}` needs the owner's approval ({}) and nobody can approve it here (no_approver).",
                call.name,
                decision.reason()
            ),
            Refusal::Rejected(rejection) => {
                format!("Not run: the owner rejected `{}`: {}", call.name, rejection.reason())
            }
        };
        Ok(CallResult { content, is_error: true })
    }
}

/// The permit step: an allow is recorded (durably) and permitted; an ask is permitted by a
/// remembered grant or by the owner's approval, checked once more right before anything runs;
/// a deny, or a call naming no tool, is refused.
pub(super) async fn permit<'t>(
    cx: &CallContext<'_>,
    call: &ToolCall,
    tool: Option<&'t Arc<dyn Tool>>,
    decision: &Decision,
    preview: Option<&(String, String)>,
) -> Result<Result<Permit<'t>, Refusal>, CallAbort> {
    let authority = match (decision.decision, tool) {
        (DecisionKind::Deny, _) | (DecisionKind::Ask, None) => return Ok(Err(Refusal::Denied(decision.clone()))),
        (DecisionKind::Allow, _) => {
            AuditRecord::of(cx, call, decision, AuditOutcome::Approved).write(cx).await?;
            Authority::Rule(decision.rule.clone())
        }
        (DecisionKind::Ask, Some(tool)) => match remembered_grant(cx, call, decision).await? {
            Some(grant) => {
                AuditRecord::of(cx, call, decision, AuditOutcome::Approved)
                    .by(&grant.owner_id)
                    .approval(&grant.approval_id)
                    .detail(format!("allowed by remembered grant {} ({:?} scope)", grant.id, grant.scope))
                    .write(cx)
                    .await?;
                Authority::Grant(grant)
            }
            None => match ask_owner(cx, call, tool.as_ref(), decision, preview).await?.and_then(|approval| {
                // The decision token is checked once more right before anything runs.
                confirmed(cx, approval, decision)
            }) {
                Ok(approval) => approval,
                Err(refusal) => return Ok(Err(refusal)),
            },
        },
    };
    Ok(match tool {
        Some(tool) => Ok(Permit { tool, authority }),
        None => Err(Refusal::Denied(decision.clone())),
    })
}

/// The owner's approval, checked once more: its decision token must still match the request
/// and the request must not have expired; otherwise refused under `approval_expired`.
fn confirmed(cx: &CallContext<'_>, approval: Authority, decision: &Decision) -> Result<Authority, Refusal> {
    if let Authority::Approval { request, token } = &approval
        && (!cx.approvals.key.verify(request, token) || chrono::Utc::now() >= request.expires_at)
    {
        let expired = Decision::new(
            DecisionKind::Deny,
            Rule::ApprovalExpired.as_str(),
            decision.risk,
            "the approval expired or its token no longer matches",
        );
        return Err(Refusal::Denied(expired));
    }
    Ok(approval)
}

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
async fn remembered_grant(
    cx: &CallContext<'_>,
    call: &ToolCall,
    decision: &Decision,
) -> Result<Option<GrantRecord>, StoreError> {
    if !grantable(cx, call, decision) {
        return Ok(None);
    }
    let now = chrono::Utc::now();
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
