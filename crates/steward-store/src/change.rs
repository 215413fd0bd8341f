//! Notices that something of a run changed in the store, fanned out to every node sharing a
//! PostgreSQL database (`LISTEN/NOTIFY`, see [`crate::Store::subscribe_changes`]).
//!
//! A notice carries identifiers only (run id, sequence number, approval id), never content:
//! whoever receives one reads what changed from the store, with its own ownership checks.

use serde::{Deserialize, Serialize};

/// Capacity of a change subscription: a receiver that falls further behind gets
/// `RecvError::Lagged` and should re-read everything it follows.
pub const CHANGE_BUFFER: usize = 1024;

/// What changed. As JSON (the `NOTIFY` payload): `{"kind":"event","run_id":"run_…","seq":12}`,
/// `{"kind":"approval","run_id":…,"approval_id":"apr_…"}`, `{"kind":"decision",…}`,
/// `{"kind":"run","run_id":…}`, `{"kind":"resync"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// Events of the run up to sequence number `seq` are stored.
    Event {
        /// `run_…`.
        run_id: String,
        /// The highest sequence number stored by the write that sent the notice.
        seq: u64,
    },
    /// An approval request of the run was stored or changed (e.g. it expired).
    Approval {
        /// `run_…`.
        run_id: String,
        /// `apr_…`.
        approval_id: String,
    },
    /// A decision on an approval was recorded (`approval_decisions`).
    Decision {
        /// `run_…`.
        run_id: String,
        /// `apr_…`.
        approval_id: String,
    },
    /// The run's record changed (status, counters, end).
    Run {
        /// `run_…`.
        run_id: String,
    },
    /// Notices may have been lost (the listening connection was re-established): re-read
    /// everything followed.
    Resync,
}

impl Change {
    /// The run this notice is about; `None` for [`Change::Resync`].
    pub fn run_id(&self) -> Option<&str> {
        match self {
            Change::Event { run_id, .. }
            | Change::Approval { run_id, .. }
            | Change::Decision { run_id, .. }
            | Change::Run { run_id } => Some(run_id),
            Change::Resync => None,
        }
    }

    /// True when a follower of run `run_id` must look at the store again: a notice about that
    /// run, or [`Change::Resync`].
    pub fn concerns(&self, run_id: &str) -> bool {
        self.run_id().is_none_or(|id| id == run_id)
    }

    /// The notice as its `NOTIFY` payload (JSON, well below PostgreSQL's 8,000-byte limit for
    /// the identifiers Steward makes).
    pub fn to_payload(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{\"kind\":\"resync\"}".to_string())
    }

    /// A notice from a payload; `None` when it is not one (another program's notice).
    pub fn from_payload(payload: &str) -> Option<Change> {
        serde_json::from_str(payload).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_name_the_run() {
        let changes = [
            Change::Event { run_id: "run_1".into(), seq: 12 },
            Change::Approval { run_id: "run_1".into(), approval_id: "apr_1".into() },
            Change::Decision { run_id: "run_2".into(), approval_id: "apr_2".into() },
            Change::Run { run_id: "run_3".into() },
            Change::Resync,
        ];
        for change in changes {
            assert_eq!(Change::from_payload(&change.to_payload()), Some(change.clone()));
        }
        assert_eq!(
            Change::Event { run_id: "run_1".into(), seq: 3 }.to_payload(),
            r#"{"kind":"event","run_id":"run_1","seq":3}"#
        );
        assert!(Change::Run { run_id: "run_1".into() }.concerns("run_1"));
        assert!(!Change::Run { run_id: "run_1".into() }.concerns("run_2"));
        assert!(Change::Resync.concerns("run_2"));
        assert_eq!(Change::from_payload("hello"), None);
    }
}
