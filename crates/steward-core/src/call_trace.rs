//! What the events of one tool call said: whether it started executing and how it ended
//! (read by the repeated-call check, [`crate::repeats`]).

use std::collections::HashMap;

use steward_protocol::EventKind;

use crate::approval::NO_APPROVER;

/// How a tool call ended, as its events said.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallOutcome {
    /// `tool_denied` by `rule`.
    Refused { rule: String, reason: String },
    /// `tool_rejected`: the owner said no.
    Rejected { reason: String },
    /// `tool_rejected` because nobody could approve (reason `no_approver`).
    NoApprover,
    /// `tool_approval_expired`.
    Expired,
    /// `tool_failed`.
    Failed { error: String },
    /// `tool_completed`.
    Completed,
}

impl CallOutcome {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            CallOutcome::Refused { .. } => "refused",
            CallOutcome::Rejected { .. } | CallOutcome::NoApprover => "rejected",
            CallOutcome::Expired => "expired",
            CallOutcome::Failed { .. } => "failed",
            CallOutcome::Completed => "completed",
        }
    }

    /// The deciding rule (empty when none).
    pub(crate) fn rule(&self) -> &str {
        match self {
            CallOutcome::Refused { rule, .. } => rule,
            CallOutcome::NoApprover => "no_approver",
            CallOutcome::Rejected { .. } => "rejected_by_owner",
            CallOutcome::Expired => "approval_expired",
            CallOutcome::Failed { .. } | CallOutcome::Completed => "",
        }
    }

    /// True when the outcome was a decision about the call itself, which stands for the run.
    pub(crate) fn is_decision(&self) -> bool {
        matches!(
            self,
            CallOutcome::Refused { .. } | CallOutcome::Rejected { .. } | CallOutcome::NoApprover | CallOutcome::Expired
        )
    }
}

/// What the events of one call said: whether it started executing and how it ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CallTrace {
    /// True once `tool_started` was published: the call began executing.
    pub started: bool,
    /// How it ended, if it has.
    pub outcome: Option<CallOutcome>,
}

impl CallTrace {
    /// Updates `calls` from one published event.
    pub(crate) fn observe(calls: &mut HashMap<String, CallTrace>, kind: &EventKind) {
        let (call_id, outcome) = match kind {
            EventKind::ToolStarted { call_id, .. } => {
                calls.entry(call_id.clone()).or_default().started = true;
                return;
            }
            EventKind::ToolDenied { call_id, rule, reason, .. } => {
                (call_id, CallOutcome::Refused { rule: rule.clone(), reason: reason.clone() })
            }
            EventKind::ToolRejected { call_id, reason, .. } if reason == NO_APPROVER => {
                (call_id, CallOutcome::NoApprover)
            }
            EventKind::ToolRejected { call_id, reason, .. } => {
                (call_id, CallOutcome::Rejected { reason: reason.clone() })
            }
            EventKind::ToolApprovalExpired { call_id, .. } => (call_id, CallOutcome::Expired),
            EventKind::ToolFailed { call_id, error, .. } => (call_id, CallOutcome::Failed { error: error.clone() }),
            EventKind::ToolCompleted { call_id, .. } => (call_id, CallOutcome::Completed),
            _ => return,
        };
        calls.entry(call_id.clone()).or_default().outcome = Some(outcome);
    }
}
