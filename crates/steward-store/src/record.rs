//! Records the store keeps besides the protocol types: runs, options and verification results.

use serde::{Deserialize, Serialize};
use steward_protocol::{ErrorClass, StopReason, Timestamp};

/// The state of a run. Wire names are snake_case (`running`, `completed`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    pub stop_reason: Option<StopReason>,
    /// The final answer, redacted.
    pub final_text: Option<String>,
    /// Error class of a failed run.
    pub error_class: Option<ErrorClass>,
    /// Redacted error message of a failed run.
    pub error: Option<String>,
    /// When it started (UTC; stored with nanosecond precision).
    pub created_at: Timestamp,
    /// When it ended.
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
    /// `PRAGMA synchronous = FULL`: a commit survives power loss. The default.
    #[default]
    Full,
    /// `PRAGMA synchronous = NORMAL`: in WAL mode a commit survives a crash of the process but
    /// the last commits may be lost on power loss. For benchmarks.
    Relaxed,
}

/// Options for opening a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreOptions {
    /// Commit durability; [`Durability::Full`] by default.
    pub durability: Durability,
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
