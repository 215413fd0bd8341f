//! What the store's writer task takes and gives: the queued writes ([`Work`], [`Pending`]),
//! who waits for them ([`Reply`]), what applying one produced ([`Applied`]) and the state the
//! store handles share with the writer ([`Shared`]). The writer itself is in
//! [`super::writer`].

use std::sync::Mutex;

use steward_protocol::{ApprovalRequest, AuditEntry, AuditRecord, Event};
use tokio::sync::oneshot;

use crate::{FactRecord, McpTokenRecord, OnDisk, RunRecord, StoreError};

/// State shared by the store handles and the writer.
#[derive(Debug)]
pub struct Shared<D> {
    /// The database as shown in messages: its path (`:memory:` for an in-memory SQLite store)
    /// or `postgres://user@host:port/db` (no password).
    pub path: String,
    /// The first failure of a queued write since the last flush.
    pub deferred: Mutex<Option<String>>,
    /// The audit anchor file, if any (see [`crate::anchor`]).
    pub anchor: Option<std::path::PathBuf>,
    /// The audit chain's key: appended records are keyed with it (see [`crate::AuditKey`]).
    pub audit_key: Option<crate::AuditKey>,
    /// The database's dialect and the state it keeps (node, leases, change notices).
    pub dialect: D,
    /// Notified when a write somebody waits for is queued: the writer, holding a batch of
    /// writes nobody waits for open for more to join, commits it then instead of at the end
    /// of its wait. Writes nobody waits for do not wake it one by one.
    pub urgent: tokio::sync::Notify,
    /// What the writer knows is on disk, published after every forced commit or disk sync
    /// (see [`crate::AuditStore::audit_on_disk`]).
    pub on_disk: tokio::sync::watch::Sender<Synced>,
}

/// What a store's writer knows has reached the disk.
#[derive(Clone, Debug, Default)]
pub struct Synced {
    /// The newest audit record on disk (0: none known yet).
    pub audit_seq: u64,
    /// Set by the first disk sync that failed, or when the writer stopped: the newest audit
    /// record known on disk before then, and why nothing after it is reported on disk again
    /// (after a failed sync the kernel may have dropped the pages it could not write, so a
    /// later sync that succeeds says nothing about them).
    pub failed: Option<(u64, String)>,
}

impl Synced {
    /// Notes `why` nothing after what is on disk now will be reported on disk; the first
    /// reason stays.
    pub fn fail(&mut self, why: String) {
        if self.failed.is_none() {
            self.failed = Some((self.audit_seq, why));
        }
    }

    /// Whether audit record `seq` is on disk: `Some(Ok)` when it is, `Some(Err(why))` when it
    /// will never be reported so, `None` while that is not known yet.
    pub fn answer(&self, seq: u64) -> Option<Result<(), &str>> {
        match &self.failed {
            Some((on_disk, why)) if seq > *on_disk => Some(Err(why)),
            Some(_) => Some(Ok(())),
            None => (self.audit_seq >= seq).then_some(Ok(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After a failed sync (or the writer's end) nothing newer than what was on disk then is
    /// reported on disk, even when a later sync succeeds; what was on disk before stays so.
    #[test]
    fn a_failed_sync_is_final_for_every_newer_record() {
        let mut synced = Synced::default();
        assert_eq!(synced.answer(1), None, "not known yet");
        synced.audit_seq = 3;
        assert_eq!(synced.answer(3), Some(Ok(())));
        assert_eq!(synced.answer(4), None);
        synced.fail("EIO".into());
        synced.fail("the store's writer stopped".into());
        assert_eq!(synced.answer(4), Some(Err("EIO")), "the first reason stays");
        synced.audit_seq = 9;
        assert_eq!(synced.answer(5), Some(Err("EIO")), "a later success says nothing of it");
        assert_eq!(synced.answer(2), Some(Ok(())));
    }
}

/// Why a batch of writes did not commit.
pub enum BatchError {
    /// Starting or committing the transaction failed: every write of the batch failed.
    Transaction(StoreError),
    /// One write failed; the transaction was rolled back.
    Write(StoreError),
}

/// One queued write and who waits for its result.
pub struct Pending {
    /// What to write.
    pub work: Work,
    /// Who to answer after the commit.
    pub reply: Reply,
}

/// What to write.
pub enum Work {
    /// `INSERT` a run, stamped with this store's node.
    InsertRun(Box<RunRecord>),
    /// `UPDATE` a run by id (its node is kept).
    UpdateRun(Box<RunRecord>),
    /// `UPDATE` a run by id only if it is `running` and its lease is this node's (see
    /// [`super::apply::guard_run`]); answers whether it was written.
    FinishRun(Box<RunRecord>),
    /// `INSERT` an event.
    Event(Box<Event>),
    /// Insert or replace an approval.
    Approval(Box<ApprovalRequest>),
    /// Append to the audit chain.
    Audit(Box<AuditEntry>),
    /// Append to the audit chain only if the entry's run is `running` and its lease is this
    /// node's (see [`super::apply::guard_run`]); answers the record, or `Flag(false)` when
    /// refused. With [`OnDisk::Soon`] the commit need not reach the disk before the answer:
    /// the writer forces it right after answering.
    GuardedAudit(Box<AuditEntry>, OnDisk),
    /// Insert or replace a JSON document row (`rollbacks`, `grants`).
    Document(Box<Document>),
    /// `INSERT` a fact unless its owner already has `max_per_owner` facts; answers whether it
    /// was inserted.
    InsertFact {
        /// The fact.
        fact: Box<FactRecord>,
        /// Most facts one owner may have.
        max_per_owner: u32,
    },
    /// `DELETE` a fact by id, only if it belongs to `owner_id`; answers whether one was deleted.
    DeleteFact {
        /// The owner the fact must belong to.
        owner_id: String,
        /// The fact's id.
        id: String,
    },
    /// `INSERT` an approval decision unless the approval has one; answers whether it was
    /// inserted.
    InsertDecision {
        /// The approval's id.
        approval_id: String,
        /// Its run.
        run_id: String,
        /// RFC 3339 time of the decision.
        created_at: String,
        /// The decision as JSON.
        body: String,
    },
    /// `DELETE` a run that is not running, and what belongs to it (not its audit records);
    /// answers whether the run was deleted.
    DeleteRun(String),
    /// `INSERT` an MCP bearer token (fails if its id or hash exists).
    InsertMcpToken(Box<McpTokenRecord>),
    /// Set `revoked_at` of an owner's MCP token that is not revoked yet; answers whether one
    /// was revoked.
    RevokeMcpToken {
        /// The owner the token must belong to.
        owner_id: String,
        /// The token's id.
        id: String,
        /// RFC 3339 time of the revocation.
        at: String,
    },
    /// Set `last_used_at` of an MCP token; answers whether the token exists.
    TouchMcpToken {
        /// The token's id.
        id: String,
        /// RFC 3339 time of the use.
        at: String,
    },
    /// Nothing: answered once everything queued before it is committed and, when `durable`,
    /// forced to disk (with the audit anchor).
    Barrier {
        /// Whether what was committed before it must be on disk when it is answered.
        durable: bool,
    },
}

/// A row of a table that keeps its record as JSON (`id, <key>, created_at, body`).
pub struct Document {
    /// `rollbacks` or `grants`.
    pub table: DocumentTable,
    /// Primary key.
    pub id: String,
    /// The lookup column's value (`run_id` or `owner_id`).
    pub key: String,
    /// RFC 3339 creation time (sort order).
    pub created_at: String,
    /// The record as JSON.
    pub body: String,
}

/// Tables holding JSON documents.
#[derive(Clone, Copy, Debug)]
pub enum DocumentTable {
    /// Rollback records, looked up by `run_id`.
    Rollbacks,
    /// Grants, looked up by `owner_id`.
    Grants,
    /// Conversations, looked up by `owner_id`.
    Conversations,
}

impl DocumentTable {
    /// `(table, lookup column)`.
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            DocumentTable::Rollbacks => ("rollbacks", "run_id"),
            DocumentTable::Grants => ("grants", "owner_id"),
            DocumentTable::Conversations => ("conversations", "owner_id"),
        }
    }
}

/// Who waits for a write.
pub enum Reply {
    /// Nobody (events, queued audit records): failures go to [`Shared::deferred`].
    Nobody,
    /// A caller waiting for the commit.
    Done(oneshot::Sender<Result<(), StoreError>>),
    /// A caller waiting for its audit record.
    Audit(oneshot::Sender<Result<AuditRecord, StoreError>>),
    /// A caller waiting for whether a conditional write took effect.
    Flag(oneshot::Sender<Result<bool, StoreError>>),
    /// A caller waiting for a conditional audit record (`None`: refused).
    GuardedAudit(oneshot::Sender<Result<Option<AuditRecord>, StoreError>>),
}

/// What applying one write produced.
pub enum Applied {
    /// Nothing to report.
    Nothing,
    /// The audit record appended, less its entry, which the write still holds.
    Audit(Chained),
    /// Whether a conditional write changed a row.
    Flag(bool),
}

/// What the chain gave an appended audit entry: the [`AuditRecord`] without the entry, which
/// stays with its write ([`Work::Audit`]) until a waiter is answered, so the entry of a record
/// nobody waits for is never copied.
pub struct Chained {
    /// The record's place in the chain, from 1.
    pub seq: u64,
    /// `aud_` and 16 hex digits.
    pub id: String,
    /// When it was chained.
    pub at: chrono::DateTime<chrono::Utc>,
    /// The hash of the record before it (64 hex digits).
    pub prev_hash: String,
    /// Its own hash (64 hex digits).
    pub hash: String,
}

impl Chained {
    /// The whole record, with the entry it was chained for.
    pub fn into_record(self, entry: AuditEntry) -> AuditRecord {
        AuditRecord { seq: self.seq, id: self.id, at: self.at, entry, prev_hash: self.prev_hash, hash: self.hash }
    }
}
