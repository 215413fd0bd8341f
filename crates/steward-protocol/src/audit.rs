use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Timestamp;

/// Outcome of an audited decision or execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    /// The gate allowed the call, or the owner approved it; execution follows.
    Approved,
    /// The gate or the owner refused the call.
    Blocked,
    /// The gate asked a human.
    Escalated,
    /// The call ran and succeeded.
    Completed,
    /// The call ran and failed.
    Failed,
    /// A call recovered from the model's text had values coerced to its schema's types
    /// before it was judged (the detail lists them); the judgement follows in its own record.
    Repaired,
    /// A repeated call was answered from the run's record (an unchanged read) and not run.
    Reused,
    /// The call was approved but no outcome was recorded (the process died); never re-run
    /// automatically.
    Unknown,
}

impl AuditOutcome {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditOutcome::Approved => "approved",
            AuditOutcome::Blocked => "blocked",
            AuditOutcome::Escalated => "escalated",
            AuditOutcome::Completed => "completed",
            AuditOutcome::Failed => "failed",
            AuditOutcome::Repaired => "repaired",
            AuditOutcome::Reused => "reused",
            AuditOutcome::Unknown => "unknown",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "approved" => Self::Approved,
            "blocked" => Self::Blocked,
            "escalated" => Self::Escalated,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "repaired" => Self::Repaired,
            "reused" => Self::Reused,
            "unknown" => Self::Unknown,
            _ => return None,
        })
    }
}

/// What a caller submits to the audit log; the store adds the sequence number, id, time and
/// hash chain to make an [`AuditRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Who acted (`steward`, an owner id for human decisions).
    pub agent: String,
    /// The run.
    pub run_id: String,
    /// The tool call id, empty when none.
    pub call_id: String,
    /// The action (tool name).
    pub action: String,
    /// Redacted input.
    pub input: Value,
    /// The rule that decided.
    pub policy: String,
    /// Risk score in `[0, 1]`.
    pub risk: f64,
    /// Outcome.
    pub outcome: AuditOutcome,
    /// Latency in ms (execution time for completed/failed, 0 otherwise).
    pub latency_ms: u64,
    /// Sandbox profile and id, empty when none.
    pub sandbox: String,
    /// Approval id, empty when none.
    pub approval_id: String,
    /// Rollback token, empty when none.
    pub rollback_token: String,
    /// Free-text detail (redacted error, reason).
    pub detail: String,
}

impl AuditEntry {
    /// The record of something an owner did outside a tool call (revoking a grant, removing a
    /// generated tool, making a token, resetting the anchor): `agent` is the owner, the rule
    /// `owner`, risk 0, outcome completed, no run, call, sandbox, approval or rollback token.
    /// Callers set what else applies with struct update syntax.
    pub fn owner_action(owner: &str, action: &str, input: Value, detail: String) -> AuditEntry {
        AuditEntry {
            agent: owner.to_string(),
            run_id: String::new(),
            call_id: String::new(),
            action: action.to_string(),
            input,
            policy: "owner".into(),
            risk: 0.0,
            outcome: AuditOutcome::Completed,
            latency_ms: 0,
            sandbox: String::new(),
            approval_id: String::new(),
            rollback_token: String::new(),
            detail,
        }
    }
}

/// One append-only audit record, hash-chained to its predecessor.
///
/// `hash = sha256(prev_hash || canonical JSON of every other field)` as lowercase hex; the
/// first record's `prev_hash` is 64 zeros.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// 1-based position in the chain.
    pub seq: u64,
    /// `aud_…`
    pub id: String,
    /// When it was appended.
    pub at: Timestamp,
    /// The entry.
    #[serde(flatten)]
    pub entry: AuditEntry,
    /// Hash of the previous record.
    pub prev_hash: String,
    /// Hash of this record.
    pub hash: String,
}
