//! Records the store keeps besides the protocol types: runs, rollbacks, grants, remembered
//! facts, options and verification results.

use serde::{Deserialize, Serialize};
use steward_protocol::{ErrorClass, StopReason, Timestamp};

/// The state of a run. Wire names are snake_case (`running`, `completed`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// A process is executing it (see [`RunRecord::pid`]).
    Running,
    /// It ended with an answer or a limit.
    Completed,
    /// It failed (see the error class).
    Failed,
    /// It was cancelled.
    Cancelled,
    /// The process executing it died before it ended.
    Interrupted,
}

impl RunStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "running" => RunStatus::Running,
            "completed" => RunStatus::Completed,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            "interrupted" => RunStatus::Interrupted,
            _ => return None,
        })
    }

    /// True for every status except `running`.
    pub fn is_finished(self) -> bool {
        self != RunStatus::Running
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One run as persisted: what was asked, by whom, with which planner, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunRecord {
    /// `run_…` (see [`crate::new_id`]).
    pub id: String,
    /// Owner id (`local:<user>` for the CLI).
    pub owner_id: String,
    /// The task text, redacted.
    pub task: String,
    /// `classic` or `model`.
    pub planner: String,
    /// Provider name, empty for the classic planner.
    pub provider: String,
    /// Model id, empty for the classic planner.
    pub model: String,
    /// Canonical workspace path.
    pub workspace: String,
    /// Current status.
    pub status: RunStatus,
    /// Why it stopped, once it has.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub stop_reason: Option<StopReason>,
    /// The final answer, redacted.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub final_text: Option<String>,
    /// Error class of a failed run.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub error_class: Option<ErrorClass>,
    /// Redacted error message of a failed run.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub error: Option<String>,
    /// When it started (UTC; stored with nanosecond precision).
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    /// When it ended.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime, required = true))]
    pub finished_at: Option<Timestamp>,
    /// Planner rounds so far.
    pub rounds: u32,
    /// Tool calls proposed so far.
    pub tool_calls: u32,
    /// Input tokens used so far.
    pub input_tokens: u64,
    /// Output tokens used so far.
    pub output_tokens: u64,
    /// Id of the process that executes it, for crash detection.
    pub pid: u32,
}

/// How hard a commit waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `PRAGMA synchronous = FULL`: a commit survives power loss. The default. On PostgreSQL
    /// the server's `synchronous_commit` applies (on by default: the same guarantee).
    #[default]
    Full,
    /// `PRAGMA synchronous = NORMAL`: in WAL mode a commit survives a crash of the process but
    /// the last commits may be lost on power loss. For benchmarks. On PostgreSQL the store's
    /// writes use `synchronous_commit = off`.
    Relaxed,
}

/// Options for opening a store.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoreOptions {
    /// Commit durability; [`Durability::Full`] by default.
    pub durability: Durability,
    /// A file outside the database that keeps the newest audit `(seq, hash)`, so that records
    /// cut off the end of the chain are detected (`None`: no anchor).
    pub audit_anchor: Option<std::path::PathBuf>,
    /// The key of the audit chain's HMAC: records are appended keyed, and verification accepts
    /// an unkeyed record only before the first keyed one (see [`crate::verify_chain_keyed`]).
    /// `None`: records are appended with the unkeyed hash, and only such chains verify.
    pub audit_key: Option<crate::AuditKey>,
}

/// The result of recomputing the audit hash chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum AuditVerification {
    /// Every record is intact and linked to its predecessor.
    Valid {
        /// Number of records checked.
        records: u64,
    },
    /// The first record that does not verify.
    Broken {
        /// Its sequence number as stored.
        seq: u64,
        /// Its id as stored.
        id: String,
        /// `changed`, `removed (gap after seq N)`, `reordered` or `prev_hash mismatch`.
        problem: String,
    },
}

impl AuditVerification {
    /// True for [`AuditVerification::Valid`].
    pub fn is_valid(&self) -> bool {
        matches!(self, AuditVerification::Valid { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_status_wire_names_round_trip() {
        for status in
            [RunStatus::Running, RunStatus::Completed, RunStatus::Failed, RunStatus::Cancelled, RunStatus::Interrupted]
        {
            assert_eq!(RunStatus::parse(status.as_str()), Some(status));
            let json = serde_json::to_value(status).unwrap();
            assert_eq!(json, serde_json::Value::String(status.as_str().into()));
        }
        assert_eq!(RunStatus::parse("Running"), None);
        assert!(!RunStatus::Running.is_finished());
        assert!(RunStatus::Interrupted.is_finished());
    }

    #[test]
    fn default_durability_is_full() {
        assert_eq!(StoreOptions::default().durability, Durability::Full);
    }
}

/// Whether a rollback record's compensation has been applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RollbackStatus {
    /// Not undone yet.
    Pending,
    /// Undone by `steward rollback`.
    Undone,
    /// An undo was tried and refused (the file changed since); see `detail`.
    Failed,
}

/// The compensating action registered by one writing tool call. The audit record of
/// the call carries `token`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollbackRecord {
    /// Rollback token, `rb_…`.
    pub token: String,
    /// The run.
    pub run_id: String,
    /// The tool call it undoes.
    pub call_id: String,
    /// The tool that ran.
    pub tool: String,
    /// 1-based position among the run's writing calls.
    pub step: u32,
    /// What undoes it (a tagged JSON object defined by the core crate).
    pub compensation: serde_json::Value,
    /// Current status.
    pub status: RollbackStatus,
    /// Why an undo failed, or what it did.
    pub detail: String,
    /// When the call ran.
    pub created_at: Timestamp,
    /// When it was undone (or the undo failed).
    pub undone_at: Option<Timestamp>,
}

/// How far a remembered approval reaches (once, this run, this workspace). A
/// one-time approval is not remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantScope {
    /// Later calls of the tool in the same run.
    Run,
    /// Later calls of the tool in any run of the same owner in the same workspace.
    Workspace,
}

/// A remembered approval: later calls of `tool` that the policy would *ask* about are allowed
/// within the scope until it expires or is revoked. Never turns a denial into an allowance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrantRecord {
    /// `grt_…`
    pub id: String,
    /// Whose runs it covers.
    pub owner_id: String,
    /// Run or workspace.
    pub scope: GrantScope,
    /// The run it was given in (and, for run scope, the only run it covers).
    pub run_id: String,
    /// Canonical workspace path (for workspace scope).
    pub workspace: String,
    /// The tool it covers.
    pub tool: String,
    /// The approval it came from.
    pub approval_id: String,
    /// When it was given.
    pub created_at: Timestamp,
    /// When it stops counting (`token_ttl_seconds` after it was given).
    pub expires_at: Timestamp,
    /// When it was revoked, if it was.
    pub revoked_at: Option<Timestamp>,
}

impl RollbackRecord {
    /// `pending`, `undone` or `failed: <detail>`.
    pub fn status_text(&self) -> String {
        match self.status {
            RollbackStatus::Pending => "pending".into(),
            RollbackStatus::Undone => "undone".into(),
            RollbackStatus::Failed => format!("failed: {}", self.detail),
        }
    }
}

/// A fact an owner asked to remember. Shown to the model of every run of that owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FactRecord {
    /// `fct_…` (see [`crate::new_id`]).
    pub id: String,
    /// Whose fact it is.
    pub owner_id: String,
    /// The fact, redacted.
    pub text: String,
    /// When it was remembered (UTC; stored with nanosecond precision). Facts are listed in
    /// this order.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
}

/// A decision on an approval request made outside the process running the call:
/// the web UI answering a run that executes in a terminal. The running process answers with
/// its own decision token; the orchestrator still checks owner and expiry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalDecisionRecord {
    /// The approval request (`apr_…`).
    pub approval_id: String,
    /// Its run.
    pub run_id: String,
    /// Owner id of whoever decided.
    pub decided_by: String,
    /// True to approve, false to deny.
    pub approve: bool,
    /// For approvals: `once`, `run` or `workspace`.
    pub scope: String,
    /// For denials: why, shown to the model.
    pub reason: String,
    /// When it was decided (UTC).
    pub created_at: Timestamp,
    /// The hash of the call the decider was shown (tool and arguments as the request held
    /// them); empty in records written before decisions carried one, which match no call.
    #[serde(default)]
    pub call_hash: String,
}

/// A long-lived conversation of the web UI: one task at a time, each task an
/// ordinary run; the last turns are given to the model as context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationRecord {
    /// `cnv_…`.
    pub id: String,
    /// Whose conversation it is.
    pub owner_id: String,
    /// Workspace of its runs (canonical path).
    pub workspace: String,
    /// Planner, provider, model and mode chosen when it started (empty: as configured).
    pub planner: String,
    /// Provider name, empty for the configured one.
    pub provider: String,
    /// Model id, empty for the provider's default.
    pub model: String,
    /// `loop`, `roles` or empty.
    pub mode: String,
    /// Its turns, oldest first.
    pub turns: Vec<ConversationTurn>,
    /// When it started (UTC).
    pub created_at: Timestamp,
    /// When it ended (no viewer for the idle time, or ended by its owner); `None` while open.
    pub ended_at: Option<Timestamp>,
}

/// One message of a conversation and what answered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationTurn {
    /// The message as sent (redacted).
    pub message: String,
    /// The run that handled it; empty when no run was needed (a memory command).
    pub run_id: String,
    /// The answer when no run was needed; for a run, its final text is read from the run.
    pub reply: String,
    /// When the message was sent (UTC).
    pub at: Timestamp,
}

/// A bearer token of Steward's MCP endpoint (`/mcp` of `steward serve`): whose it is,
/// what it may do, and whether it still works. The secret itself is never stored, only its
/// SHA-256 ([`McpTokenRecord::token_hash`]); `Debug` leaves the hash out too.
#[derive(Clone, PartialEq, Eq)]
pub struct McpTokenRecord {
    /// `mtk_…` (see [`crate::new_id`]).
    pub id: String,
    /// The owner whose runs requests with this token see and start.
    pub owner_id: String,
    /// A label chosen by the owner (may be empty).
    pub name: String,
    /// Scope names (`read`, `submit`), each non-empty and without commas: they are stored as a
    /// comma list.
    pub scopes: Vec<String>,
    /// Lowercase hex SHA-256 of the secret token; unique among all tokens.
    pub token_hash: String,
    /// When it was made (UTC).
    pub created_at: Timestamp,
    /// When a request last used it (updated at most about once a minute), if ever.
    pub last_used_at: Option<Timestamp>,
    /// When it was revoked, if it was; a revoked token is refused.
    pub revoked_at: Option<Timestamp>,
}

impl std::fmt::Debug for McpTokenRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTokenRecord")
            .field("id", &self.id)
            .field("owner_id", &self.owner_id)
            .field("name", &self.name)
            .field("scopes", &self.scopes)
            .field("token_hash", &"[redacted]")
            .field("created_at", &self.created_at)
            .field("last_used_at", &self.last_used_at)
            .field("revoked_at", &self.revoked_at)
            .finish()
    }
}
