//! Persistence for Steward behind the [`Store`] trait: runs, events, approvals, remembered
//! facts and the hash-chained audit log.
//!
//! One SQL store implements it over two databases with the same contracts and the same SQL text
//! (the database's dialect holds only what really differs):
//! - [`SqliteStore`], the embedded default: one file, WAL mode, group commit through a single
//!   writer task; several processes on one machine may share the file.
//! - [`PgStore`], for several Steward processes (nodes) sharing one PostgreSQL database: the
//!   same schema (`migrations/postgres/`, applied on open) and a writer task per store; audit
//!   appends take a row lock (`audit_chain_lock`, `SELECT … FOR UPDATE`) before reading the chain
//!   head, so every node extends ONE chain. Runs are stamped with the node that inserted them
//!   ([`host_node`], or a name given to [`PgStore::open_with`]) so that crash recovery only
//!   judges process ids of its own machine ([`RunStore::local_running_runs`]). Running runs hold
//!   leases that their node renews ([`LeaseStore::renew_leases`]); the runs of a node that stopped
//!   renewing are taken over by exactly one other node for recovery
//!   ([`LeaseStore::take_over_expired_runs`], `FOR UPDATE SKIP LOCKED`). Every commit that stores
//!   events, approvals, decisions or run records sends a `NOTIFY` ([`Change`]) that the other
//!   nodes receive through [`Store::subscribe_changes`].
//!
//! Both keep timestamps as RFC 3339 `TEXT` ([`timestamp_text`]) and JSON as `TEXT`, so the audit
//! hash input and the sort orders are identical.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod anchor;
mod chain;
mod change;
mod error;
pub mod generated;
mod journal;
pub mod ledger;
mod record;
mod sql;

use async_trait::async_trait;
use rand::Rng;
use steward_protocol::Timestamp;
use steward_protocol::{ApprovalRequest, AuditEntry, AuditRecord, Event};

pub use chain::{
    AuditKey, GENESIS_HASH, audit_hash, audit_hmac, timestamp_text, verify_chain, verify_chain_keyed,
    write_canonical_json,
};
pub use change::{CHANGE_BUFFER, Change};
pub use error::StoreError;
pub use generated::{GeneratedToolRecord, GeneratedToolStore};
pub use journal::{JournalRecord, JournalState, JournalStore};
pub use ledger::LedgerStore;
pub use record::McpTokenRecord;
pub use record::{
    ApprovalDecisionRecord, AuditVerification, ConversationRecord, ConversationTurn, Durability, FactRecord,
    GrantRecord, GrantScope, RollbackRecord, RollbackStatus, RunRecord, RunStatus, StoreOptions,
};
pub use sql::SqlStore;
pub use sql::postgres::{PgStore, host_node, is_postgres_url, redact_database_url};
pub use sql::sqlite::{STATE_ANCHOR_FILE, STATE_DB_FILE, SqliteStore};
/// Connect options of a PostgreSQL database, for [`PgStore::open_with`].
pub use sqlx::postgres::PgConnectOptions;

/// A new random id: `prefix` followed by 16 lowercase hex characters (64 random bits from the
/// thread-local CSPRNG of the `rand` crate), e.g. `new_id("run_")` → `run_3f9a0c1e5b7d2468`.
pub fn new_id(prefix: &str) -> String {
    let bits: u64 = rand::rng().random();
    format!("{prefix}{bits:016x}")
}

/// Runs, their events and their rollbacks: the record of what each run did.
///
/// Part of [`Store`]; all methods return [`StoreError`] (class `storage`) on failure.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Stores a new run; fails if the id exists. Returns once committed; the commit may reach
    /// the disk only with the next durable write (the run's first audit record that lets an
    /// action run, or its end), so a crash of the machine before then loses a run that has done
    /// nothing.
    async fn insert_run(&self, run: &RunRecord) -> Result<(), StoreError>;

    /// Replaces every field of an existing run (matched by id); [`StoreError::NotFound`] when
    /// there is none. Returns once committed.
    async fn update_run(&self, run: &RunRecord) -> Result<(), StoreError>;

    /// Writes the final record of a run this store's process executed (every field, as
    /// [`RunStore::update_run`]) only if the stored run is still `running` and, on a store shared
    /// by several nodes, its lease is held by this store's node (a run without a lease row
    /// counts as held): `true` once committed; `false` when it was superseded (another node
    /// took the run over and recovered it, or it already ended), nothing written. Checked in the
    /// write transaction, with the lease row locked, so a node taking the run over at the same
    /// time either waits for this write (and then finds the run ended) or makes it return
    /// `false`. [`StoreError::NotFound`] when there is no such run.
    async fn finish_run(&self, run: &RunRecord) -> Result<bool, StoreError>;

    /// The run with exactly this id.
    async fn get_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError>;

    /// At most `limit` runs, newest (`created_at`) first; `limit` 0 gives none.
    async fn list_runs(&self, limit: u32) -> Result<Vec<RunRecord>, StoreError>;

    /// Every run with this status, oldest first (e.g. `running` ones for crash detection).
    async fn runs_with_status(&self, status: RunStatus) -> Result<Vec<RunRecord>, StoreError>;

    /// The `running` runs executed by processes of this machine, oldest first: those whose
    /// `pid` can be checked here to detect a crash. An embedded database lives on one machine,
    /// so by default these are all `running` runs; a store shared by several nodes returns only
    /// the runs inserted by a store of its own node.
    async fn local_running_runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        self.runs_with_status(RunStatus::Running).await
    }

    /// Queues an event; returns once it is ordered after every earlier event of this store
    /// (not necessarily on disk). A failure to write it (e.g. a duplicate `(run_id, seq)`) is
    /// reported by the next [`Store::flush`].
    async fn append_event(&self, event: &Event) -> Result<(), StoreError>;

    /// Events of a run with `seq > after_seq`, in `seq` order; includes every event queued on
    /// this store before the call.
    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<Event>, StoreError>;

    /// Inserts a rollback record or replaces the one with the same token. Returns once committed.
    async fn upsert_rollback(&self, record: &RollbackRecord) -> Result<(), StoreError>;

    /// Rollback records of a run in step order.
    async fn rollbacks(&self, run_id: &str) -> Result<Vec<RollbackRecord>, StoreError>;

    /// Deletes run `id` with its events, approval requests, approval decisions and rollback
    /// records, unless it is `running`; true when it was deleted. The audit chain keeps its
    /// records (they are never deleted). Returns once committed.
    async fn delete_run(&self, id: &str) -> Result<bool, StoreError>;
}

/// The hash-chained audit log (SPEC C6): appends, reads, verification and its anchor.
///
/// Part of [`Store`]; all methods return [`StoreError`] (class `storage`) on failure.
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Appends to the hash chain; returns only when the record is durable (committed with the
    /// configured durability). `seq`, `prev_hash` and `hash` are computed inside the write
    /// transaction from the last stored record, so several processes sharing one database
    /// still build a single chain. Refuses a non-finite `risk` or a `latency_ms` above
    /// `i64::MAX` ([`StoreError::Invalid`]).
    async fn append_audit(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError>;

    /// [`AuditStore::append_audit`] for a record that lets a call of run `entry.run_id` execute:
    /// appended only if that run is still `running` and, on a store shared by several nodes,
    /// its lease is held by this store's node (a run without a lease row counts as held),
    /// checked in the write transaction with the lease row locked. `Ok(None)` when it is not
    /// (another node took the run over to recover it, or the run ended or does not exist):
    /// nothing was appended and the call must not execute.
    ///
    /// `on_disk` says when the record must reach the disk: before this returns
    /// ([`OnDisk::BeforeReturn`]), or right after, while the caller goes on ([`OnDisk::Soon`],
    /// then [`AuditStore::audit_on_disk`] waits for it).
    async fn append_audit_if_running(
        &self,
        entry: AuditEntry,
        on_disk: OnDisk,
    ) -> Result<Option<AuditRecord>, StoreError>;

    /// Waits until audit record `seq`, appended through this store, is on disk (as durable as
    /// the store is configured); returns at once when it already is. What an append with
    /// [`OnDisk::Soon`] leaves to wait for.
    ///
    /// Errors: [`StoreError::Write`] when a disk sync failed before it was known on disk (from
    /// then on nothing newer is reported on disk), or the store's writer stopped first.
    async fn audit_on_disk(&self, seq: u64) -> Result<(), StoreError>;

    /// Queues an audit record and returns once it is ordered after every earlier write (not
    /// necessarily on disk): it is committed with the next batch, at the latest by the next
    /// [`AuditStore::append_audit`] or [`Store::flush`], which also reports a failure to write it.
    /// For records that nothing waits on (outcomes, refusals); a decision that lets an action
    /// run must use [`AuditStore::append_audit`].
    async fn queue_audit(&self, entry: AuditEntry) -> Result<(), StoreError>;

    /// Audit records in chain order, all of them or those of one run.
    async fn audit_records(&self, run_id: Option<&str>) -> Result<Vec<AuditRecord>, StoreError>;

    /// Recomputes the whole chain; `Valid { records }` or the first bad record (see
    /// [`verify_chain`] for the problems reported).
    async fn verify_audit(&self) -> Result<AuditVerification, StoreError>;

    /// The audit anchor file this store keeps (the newest `(seq, hash)`, outside the database), if any.
    fn audit_anchor(&self) -> Option<&std::path::Path> {
        None
    }

    /// The deliberate reset of the audit anchor: appends `entry` (the record saying who reset
    /// it, when and why), then sets the anchor to that record, the chain's head, whatever the
    /// anchor held or whether it existed. Until then a chain whose anchor was removed does not
    /// verify (`anchor missing`).
    ///
    /// Errors: appending the record fails, or the anchor file cannot be written
    /// ([`StoreError::Io`]).
    async fn reset_audit_anchor(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        let record = self.append_audit(entry).await?;
        if let Some(path) = self.audit_anchor() {
            anchor::reset(path, record.seq, &record.hash)
                .map_err(|source| StoreError::Io { path: path.display().to_string(), source })?;
        }
        Ok(record)
    }
}

/// When an audit record that lets a call run must be on disk
/// ([`AuditStore::append_audit_if_running`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnDisk {
    /// Before the append returns: for a call that changes something, so that a crash of the
    /// machine never leaves its effect without the record that allowed it.
    BeforeReturn,
    /// Committed (visible, and after every earlier write) when the append returns, and forced
    /// to disk by the store's writer right after, while the caller goes on; a crash of the
    /// process loses nothing, one of the machine may lose it until then. For a call that
    /// changes nothing (a read), whose result the caller holds back until
    /// [`AuditStore::audit_on_disk`] says the record is on disk.
    Soon,
}

/// Approval requests, the decisions recorded for them, and the grants they leave.
///
/// Part of [`Store`]; all methods return [`StoreError`] (class `storage`) on failure.
#[async_trait]
pub trait ApprovalStore: Send + Sync {
    /// Inserts an approval request or replaces the one with the same id. Returns once committed.
    async fn upsert_approval(&self, approval: &ApprovalRequest) -> Result<(), StoreError>;

    /// Approval requests of a run, oldest first.
    async fn approvals(&self, run_id: &str) -> Result<Vec<ApprovalRequest>, StoreError>;

    /// Inserts a grant or replaces the one with the same id. Returns once committed.
    async fn upsert_grant(&self, grant: &GrantRecord) -> Result<(), StoreError>;

    /// Grants of an owner (revoked and expired ones included), oldest first.
    async fn grants(&self, owner_id: &str) -> Result<Vec<GrantRecord>, StoreError>;

    /// Records `decision` unless the approval already has one; true when it was recorded.
    /// Returns once committed.
    async fn insert_approval_decision(&self, decision: &ApprovalDecisionRecord) -> Result<bool, StoreError>;

    /// The recorded decision on approval `approval_id`, if any.
    async fn approval_decision(&self, approval_id: &str) -> Result<Option<ApprovalDecisionRecord>, StoreError>;
}

/// Conversations (a run per turn) and an owner's remembered facts.
///
/// Part of [`Store`]; all methods return [`StoreError`] (class `storage`) on failure.
#[async_trait]
pub trait ConversationStore: Send + Sync {
    /// Stores a remembered fact, in one write transaction, only if its owner has fewer than
    /// `max_per_owner` facts: `true` once it is committed, `false` (nothing stored) when the
    /// owner already has `max_per_owner` or more. Fails if the id exists.
    async fn insert_fact(&self, fact: &FactRecord, max_per_owner: u32) -> Result<bool, StoreError>;

    /// Facts of an owner, oldest (`created_at`) first; includes every write queued on this
    /// store before the call.
    async fn facts(&self, owner_id: &str) -> Result<Vec<FactRecord>, StoreError>;

    /// Deletes the fact with this id if it belongs to `owner_id`: `true` once the deletion is
    /// committed, `false` when the owner has no such fact (another owner's fact is left alone).
    async fn delete_fact(&self, owner_id: &str, id: &str) -> Result<bool, StoreError>;

    /// Inserts a conversation or replaces the one with the same id. Returns once committed,
    /// which, as for [`RunStore::insert_run`], may reach the disk only with the next durable write.
    async fn upsert_conversation(&self, conversation: &ConversationRecord) -> Result<(), StoreError>;

    /// Conversations of an owner, oldest first.
    async fn conversations(&self, owner_id: &str) -> Result<Vec<ConversationRecord>, StoreError>;

    /// The conversation with exactly this id.
    async fn conversation(&self, id: &str) -> Result<Option<ConversationRecord>, StoreError>;
}

/// The bearer tokens of Steward's own MCP server, stored as hashes.
///
/// Part of [`Store`]; all methods return [`StoreError`] (class `storage`) on failure.
#[async_trait]
pub trait TokenStore: Send + Sync {
    /// Stores a new MCP bearer token. Returns once committed. Fails if the id or the
    /// `token_hash` exists, and with [`StoreError::Invalid`] (nothing stored) when a scope is
    /// empty or contains a comma (scopes are stored as one comma list and read back split).
    async fn insert_mcp_token(&self, token: &McpTokenRecord) -> Result<(), StoreError>;

    /// Tokens of an owner (revoked ones included), oldest (`created_at`, then id) first;
    /// includes every token write that has returned.
    async fn mcp_tokens(&self, owner_id: &str) -> Result<Vec<McpTokenRecord>, StoreError>;

    /// The token whose `token_hash` is exactly `token_hash` (revoked or not: the caller checks
    /// `revoked_at`); includes every token write that has returned.
    async fn mcp_token_by_hash(&self, token_hash: &str) -> Result<Option<McpTokenRecord>, StoreError>;

    /// Sets `revoked_at` to `at` on token `id` if it belongs to `owner_id` and is not revoked
    /// yet: `true` once that is committed; `false` when the owner has no such token or it was
    /// already revoked (another owner's token is left alone).
    async fn revoke_mcp_token(&self, owner_id: &str, id: &str, at: Timestamp) -> Result<bool, StoreError>;

    /// Sets `last_used_at` to `at` on token `id` (revoked or not): `true` once committed,
    /// `false` when there is no such token.
    async fn touch_mcp_token(&self, id: &str, at: Timestamp) -> Result<bool, StoreError>;
}

/// The leases of runs on a store shared by several nodes, and their takeover after a crash.
///
/// Part of [`Store`]; all methods return [`StoreError`] (class `storage`) on failure.
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Renews, to now + `ttl`, the leases of the `running` runs that process `pid` of this node
    /// executes, so that other nodes sharing the database know they are alive (call it every
    /// few seconds, well within `ttl`); a lease another node has taken over stays with it.
    /// Returns how many leases were renewed. A store on one machine keeps no leases: the
    /// default renews none (`Ok(0)`), and crash recovery there judges process ids.
    async fn renew_leases(&self, pid: u32, ttl: std::time::Duration) -> Result<u64, StoreError> {
        let _ = (pid, ttl);
        Ok(0)
    }

    /// Of `run_ids` (runs this store's process executes), those it must stop executing: the
    /// ones no longer `running` (another node recovered them, or they ended) and, on a store
    /// shared by several nodes, the ones whose lease another node has taken over. Ids of runs
    /// that do not exist are left out.
    async fn lost_runs(&self, run_ids: &[String]) -> Result<Vec<String>, StoreError>;

    /// Takes over at most `limit` `running` runs of OTHER nodes whose lease has expired (the
    /// node stopped renewing: it crashed or lost the database), for this node to recover them
    /// (see `steward-core`'s `recovery` module): each is handed to exactly one caller, even when several
    /// nodes call this at once, and stays with it for `ttl`. Nothing is changed in the runs
    /// themselves. The default (a store on one machine) takes over nothing.
    async fn take_over_expired_runs(&self, ttl: std::time::Duration, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let _ = (ttl, limit);
        Ok(Vec::new())
    }
}

/// Persistence of runs, events, approvals, remembered facts and the audit chain: one store
/// with a trait per role ([`RunStore`], [`AuditStore`], [`ApprovalStore`],
/// [`ConversationStore`], [`TokenStore`], [`LeaseStore`]), as the SQL store implements them.
///
/// Writes are ordered: every write is applied after every write queued before it on the same
/// store. All methods return [`StoreError`] (class `storage`) on failure.
#[async_trait]
pub trait Store: RunStore + AuditStore + ApprovalStore + ConversationStore + TokenStore + LeaseStore {
    /// Waits until everything queued so far is committed and on disk (as durable as the store
    /// is configured: queued events and audit records may be committed before without a disk
    /// sync of their own), the audit anchor included; reports a queued write that failed since
    /// the last flush ([`StoreError::Deferred`]).
    async fn flush(&self) -> Result<(), StoreError>;

    /// [`Store::flush`], then leaves the database as a process that is about to end should:
    /// on SQLite the write-ahead log is moved into the database file and emptied (without
    /// waiting for other processes' readers), so the next process to open it does not read the
    /// log back first. The store stays usable. Errors as [`Store::flush`], or
    /// [`StoreError::Database`] when the checkpoint fails. The default only flushes.
    async fn close(&self) -> Result<(), StoreError> {
        self.flush().await
    }

    /// Notices of changes to runs (events stored, approval requests and decisions, run
    /// records), also those written by other nodes sharing the database, from now on; a
    /// receiver that lags behind or gets [`Change::Resync`] must re-read what it follows.
    /// `None` when the store cannot notify: followers poll instead (the default).
    fn subscribe_changes(&self) -> Option<tokio::sync::broadcast::Receiver<Change>> {
        None
    }

    /// The work ledger kept in the same database ([`ledger::LedgerStore`]); `None` for a store
    /// without one.
    fn ledger(&self) -> Option<&dyn ledger::LedgerStore> {
        None
    }

    /// The registry of generated tools kept in the same database
    /// ([`generated::GeneratedToolStore`]); `None` for a store without one.
    fn generated_registry(&self) -> Option<&dyn generated::GeneratedToolStore> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_id_has_prefix_and_16_lowercase_hex() {
        let id = new_id("run_");
        let rest = id.strip_prefix("run_").unwrap();
        assert_eq!(rest.len(), 16);
        assert!(rest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_ne!(new_id("run_"), new_id("run_"));
    }
}
