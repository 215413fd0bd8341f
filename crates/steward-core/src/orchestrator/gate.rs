//! The permit step: what the gate decided becomes a [`Permit`] to run (an allow, a remembered
//! grant, or the owner's approval with its token and expiry) or a typed [`Refusal`].

use std::sync::Arc;

use steward_protocol::{ApprovalRequest, AuditOutcome, Decision, DecisionKind, Timestamp, ToolCall};
use steward_store::GrantRecord;

use super::ask::{Approval, Rejection, Unapproved, ask_owner};
use super::grants::remembered_grant;
use super::record::{AuditRecord, Rule, refused};
use super::{CallAbort, CallContext, CallResult};
use crate::approval::ApprovalKey;
use steward_tools::Tool;

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

    /// Checks an approval once more: its decision token must still match the request and the
    /// request must not have expired; otherwise the call is refused under `approval_expired`.
    /// A rule or a grant needs no check here.
    fn confirm(&self, cx: &CallContext<'_>, decision: &Decision) -> Result<(), Refusal> {
        let Authority::Approval { request, token } = self else { return Ok(()) };
        if approval_holds(cx.approvals.key, request, token, cx.approvals.clock.now()) {
            return Ok(());
        }
        let expired = Decision::new(
            DecisionKind::Deny,
            Rule::ApprovalExpired.as_str(),
            decision.risk,
            "the approval expired or its token no longer matches",
        );
        Err(Refusal::Denied(expired))
    }
}

/// Why a call does not run.
pub(super) enum Refusal {
    /// The gate denied it, it names no tool, or its approval failed the last check: recorded
    /// and reported when the refusal is reported.
    Denied(Decision),
    /// Asking the owner did not approve it (already recorded).
    Unapproved(Unapproved),
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
            Refusal::Unapproved(Unapproved::Unanswered(tool)) => {
                format!("Not run: the approval request for `{tool}` expired before anyone decided.")
            }
            Refusal::Unapproved(Unapproved::Rejected(Rejection::NoApprover)) => format!(
                "Not run: `{}` needs the owner's approval ({}) and nobody can approve it here (no_approver).",
                call.name,
                decision.reason()
            ),
            Refusal::Unapproved(Unapproved::Rejected(rejection)) => {
                format!("Not run: the owner rejected `{}`: {}", call.name, rejection.reason())
            }
        };
        Ok(CallResult { content, is_error: true })
    }
}

/// Whether a call of `tool` only reads and sends nothing anywhere while it runs: its
/// `approved` record may then reach the disk while it runs ([`AuditRecord::only_reads`]).
fn only_reads(tool: &dyn Tool) -> bool {
    tool.pure_read() && !tool.sends_data()
}

/// True while an approval holds at `now`: the decision token matches the request and the
/// request has not expired.
fn approval_holds(key: &ApprovalKey, request: &ApprovalRequest, token: &str, now: Timestamp) -> bool {
    key.verify(request, token) && now < request.expires_at
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
            AuditRecord::of(cx, call, decision, AuditOutcome::Approved)
                .only_reads(tool.is_some_and(|t| only_reads(t.as_ref())))
                .write(cx)
                .await?;
            Authority::Rule(decision.rule.clone())
        }
        (DecisionKind::Ask, Some(tool)) => match remembered_grant(cx, call, decision).await? {
            Some(grant) => {
                AuditRecord::of(cx, call, decision, AuditOutcome::Approved)
                    .by(&grant.owner_id)
                    .approval(&grant.approval_id)
                    .detail(format!("allowed by remembered grant {} ({:?} scope)", grant.id, grant.scope))
                    .only_reads(only_reads(tool.as_ref()))
                    .write(cx)
                    .await?;
                Authority::Grant(grant)
            }
            None => match ask_owner(cx, call, tool.as_ref(), decision, preview).await? {
                Ok(Approval { request, token }) => Authority::Approval { request, token },
                Err(unapproved) => return Ok(Err(Refusal::Unapproved(unapproved))),
            },
        },
    };
    // The decision token is checked once more right before anything runs.
    if let Err(refusal) = authority.confirm(cx, decision) {
        return Ok(Err(refusal));
    }
    Ok(match tool {
        Some(tool) => Ok(Permit { tool, authority }),
        None => Err(Refusal::Denied(decision.clone())),
    })
}

#[cfg(test)]
mod tests {
    use steward_protocol::ApprovalStatus;

    use super::*;
    use crate::clock::{Clock, ManualClock};

    #[test]
    fn an_approval_holds_until_its_expiry_and_only_with_its_token() {
        let start = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().to_utc();
        let clock = ManualClock::new(start);
        let request = ApprovalRequest {
            id: "apr_1".into(),
            run_id: "run_1".into(),
            owner_id: "local:me".into(),
            call_id: "c1".into(),
            tool: "edit".into(),
            arguments: serde_json::json!({"path": "a.txt"}),
            reason: "asks".into(),
            rule: "default:medium".into(),
            risk: 0.5,
            preview: String::new(),
            created_at: clock.now(),
            expires_at: clock.now() + chrono::Duration::seconds(60),
            status: ApprovalStatus::Approved,
        };
        let key = ApprovalKey::generate();
        let token = key.token(&request);
        assert!(approval_holds(&key, &request, &token, clock.now()));
        assert!(!approval_holds(&key, &request, "not-the-token", clock.now()));
        clock.advance(chrono::Duration::seconds(59));
        assert!(approval_holds(&key, &request, &token, clock.now()));
        clock.advance(chrono::Duration::seconds(1));
        assert!(!approval_holds(&key, &request, &token, clock.now()), "expired at expires_at");
    }
}
