//! The single writer task of a store: group commit of queued writes.
//!
//! Writes arrive over a bounded channel. The task takes the first one, drains whatever else is
//! already queued (up to [`MAX_BATCH`]), applies them all in ONE transaction on its own
//! connection ([`Dialect::BEGIN`]: `BEGIN IMMEDIATE` on SQLite, which takes the file's write
//! lock; `READ COMMITTED` on PostgreSQL, which then takes the locks the batch needs, see
//! [`Dialect::lock_batch`]), commits once and then answers every waiter, so concurrent runs share
//! one fsync. When one write of a batch fails, the batch is rolled back and each write is retried
//! in its own transaction, so a bad write fails alone.
//!
//! With the write lock (SQLite) or the audit chain lock (PostgreSQL) held, the chain head read
//! inside the transaction stays the head until the commit, so two writers never compute the same
//! `seq`.

use std::sync::{Arc, Mutex};

use sqlx::pool::PoolConnection;
use sqlx::{Connection, Pool};
use steward_protocol::{ApprovalRequest, AuditEntry, AuditRecord, Event};
use tokio::sync::{mpsc, oneshot};

use super::apply::{append_audits, apply, insert_events};
use super::dialect::Dialect;
use crate::{FactRecord, McpTokenRecord, RunRecord, StoreError};

/// Most writes committed in one transaction.
pub const MAX_BATCH: usize = 256;

/// Capacity of the write queue (writes); senders wait when it is full.
pub const QUEUE_CAPACITY: usize = 1024;

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
    /// The database's dialect and the state it keeps (node, leases, change notices).
    pub dialect: D,
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
    /// refused.
    GuardedAudit(Box<AuditEntry>),
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
    /// Nothing: answered once everything queued before it is committed.
    Barrier,
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
    /// The audit record appended.
    Audit(Box<AuditRecord>),
    /// Whether a conditional write changed a row.
    Flag(bool),
}

/// Why a batch did not commit.
enum BatchError {
    /// Starting or committing the transaction failed: every write of the batch failed.
    Transaction(StoreError),
    /// One write failed; the transaction was rolled back.
    Write(StoreError),
}

/// Runs until every sender is gone, then returns after answering what was queued.
pub async fn run<D: Dialect>(pool: Pool<D::DB>, shared: Arc<Shared<D>>, mut queue: mpsc::Receiver<Pending>) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        process(&pool, &shared, batch).await;
    }
    pool.close().await;
}

async fn process<D: Dialect>(pool: &Pool<D::DB>, shared: &Shared<D>, batch: Vec<Pending>) {
    if batch.iter().all(|p| matches!(p.work, Work::Barrier)) {
        for pending in batch {
            answer(shared, pending.reply, Ok(Applied::Nothing));
        }
        return;
    }
    let mut conn = match pool.acquire().await {
        Ok(conn) => conn,
        Err(source) => {
            let message = StoreError::Database { path: shared.path.clone(), source }.to_string();
            fail_all(shared, batch, &message);
            return;
        }
    };
    let works: Vec<&Work> = batch.iter().map(|p| &p.work).collect();
    match apply_batch(&mut conn, shared, &works).await {
        Ok(results) => {
            advance_anchor(shared, &results);
            for (pending, result) in batch.into_iter().zip(results) {
                answer(shared, pending.reply, Ok(result));
            }
        }
        Err(BatchError::Transaction(error)) => fail_all(shared, batch, &error.to_string()),
        Err(BatchError::Write(error)) if batch.len() == 1 => {
            if let Some(pending) = batch.into_iter().next() {
                answer(shared, pending.reply, Err(error));
            }
        }
        Err(BatchError::Write(_)) => retry_one_by_one(&mut conn, shared, batch).await,
    }
}

/// Moves the anchor to the newest audit record of a committed batch. A failure is logged: the
/// record is committed either way, and `verify_audit` reports an anchor that lags (or, when
/// the file was removed, one that is missing: only the chain's first record creates it).
fn advance_anchor<D>(shared: &Shared<D>, results: &[Applied]) {
    let Some(path) = &shared.anchor else { return };
    let newest = results
        .iter()
        .filter_map(|r| match r {
            Applied::Audit(record) => Some((record.seq, record.hash.as_str())),
            Applied::Nothing | Applied::Flag(_) => None,
        })
        .max_by_key(|(seq, _)| *seq);
    let starts_chain = results.iter().any(|r| matches!(r, Applied::Audit(record) if record.seq == 1));
    if let Some((seq, hash)) = newest
        && let Err(error) = crate::anchor::advance(path, seq, hash, starts_chain)
    {
        tracing::warn!(anchor = %path.display(), %error, "the audit anchor could not be updated");
    }
}

async fn retry_one_by_one<D: Dialect>(conn: &mut PoolConnection<D::DB>, shared: &Shared<D>, batch: Vec<Pending>) {
    for pending in batch {
        let result = match apply_batch(conn, shared, &[&pending.work]).await {
            Ok(results) => {
                advance_anchor(shared, &results);
                let mut results = results;
                Ok(results.pop().unwrap_or(Applied::Nothing))
            }
            Err(BatchError::Transaction(error) | BatchError::Write(error)) => Err(error),
        };
        answer(shared, pending.reply, result);
    }
}

fn fail_all<D>(shared: &Shared<D>, batch: Vec<Pending>, message: &str) {
    for pending in batch {
        let error = StoreError::Write { path: shared.path.clone(), message: message.to_string() };
        answer(shared, pending.reply, Err(error));
    }
}

fn answer<D>(shared: &Shared<D>, reply: Reply, result: Result<Applied, StoreError>) {
    // A waiter that went away (its future was dropped) no longer needs an answer.
    match reply {
        Reply::Nobody => {
            if let Err(error) = result {
                tracing::warn!(path = %shared.path, error = %error, "a queued write could not be stored");
                if let Ok(mut slot) = shared.deferred.lock() {
                    slot.get_or_insert_with(|| error.to_string());
                }
            }
        }
        Reply::Done(tx) => {
            let _ = tx.send(result.map(|_| ()));
        }
        Reply::Audit(tx) => {
            let _ = tx.send(result.and_then(|applied| match applied {
                Applied::Audit(record) => Ok(*record),
                Applied::Nothing | Applied::Flag(_) => Err(StoreError::Write {
                    path: shared.path.clone(),
                    message: "the audit write produced no record".into(),
                }),
            }));
        }
        Reply::Flag(tx) => {
            let _ = tx.send(result.and_then(|applied| match applied {
                Applied::Flag(changed) => Ok(changed),
                Applied::Nothing | Applied::Audit(_) => Err(StoreError::Write {
                    path: shared.path.clone(),
                    message: "the conditional write produced no result".into(),
                }),
            }));
        }
        Reply::GuardedAudit(tx) => {
            let _ = tx.send(result.and_then(|applied| match applied {
                Applied::Audit(record) => Ok(Some(*record)),
                Applied::Flag(false) => Ok(None),
                Applied::Nothing | Applied::Flag(true) => Err(StoreError::Write {
                    path: shared.path.clone(),
                    message: "the audit write produced no record".into(),
                }),
            }));
        }
    }
}

/// Applies `works` in one transaction ([`Dialect::BEGIN`]) and commits.
async fn apply_batch<D: Dialect>(
    conn: &mut PoolConnection<D::DB>,
    shared: &Shared<D>,
    works: &[&Work],
) -> Result<Vec<Applied>, BatchError> {
    let path = shared.path.as_str();
    let db = |source| StoreError::Database { path: path.to_string(), source };
    let mut tx = (**conn).begin_with(D::BEGIN).await.map_err(|e| BatchError::Transaction(db(e)))?;
    shared.dialect.lock_batch(&mut *tx, path, works).await.map_err(BatchError::Write)?;
    // Head of the chain, read inside this transaction (under the write or chain lock) on the
    // first audit write.
    let mut head: Option<(u64, String)> = None;
    let mut results = Vec::with_capacity(works.len());
    // Consecutive events and consecutive audit records go in one multi-row INSERT each: every
    // statement is a round trip (to SQLite's worker thread, or to the server).
    let mut i = 0;
    while i < works.len() {
        let same_kind = |w: &&&Work| std::mem::discriminant(**w) == std::mem::discriminant(works[i]);
        let end = i + works[i..].iter().take_while(same_kind).count();
        match works[i] {
            Work::Event(_) => {
                let events: Vec<&Event> = works[i..end]
                    .iter()
                    .filter_map(|w| if let Work::Event(e) = w { Some(&**e) } else { None })
                    .collect();
                insert_events::<D>(&mut *tx, path, &events).await.map_err(BatchError::Write)?;
                results.extend(events.iter().map(|_| Applied::Nothing));
            }
            Work::Audit(_) => {
                let entries: Vec<&AuditEntry> = works[i..end]
                    .iter()
                    .filter_map(|w| if let Work::Audit(e) = w { Some(&**e) } else { None })
                    .collect();
                let records =
                    append_audits::<D>(&mut *tx, path, &entries, &mut head).await.map_err(BatchError::Write)?;
                results.extend(records.into_iter().map(|r| Applied::Audit(Box::new(r))));
            }
            _ => {
                for work in &works[i..end] {
                    results.push(apply(&mut *tx, shared, work, &mut head).await.map_err(BatchError::Write)?);
                }
            }
        }
        i = end;
    }
    // Delivered to every listening node when (and only if) the transaction commits.
    shared.dialect.notify(&mut *tx, path, works, &results).await.map_err(BatchError::Write)?;
    tx.commit().await.map_err(|e| BatchError::Transaction(db(e)))?;
    Ok(results)
}
