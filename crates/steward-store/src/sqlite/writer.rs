//! The single writer task: group commit of queued writes.
//!
//! Writes arrive over a bounded channel. The task takes the first one, drains whatever else is
//! already queued (up to [`MAX_BATCH`]), applies them all in ONE `BEGIN IMMEDIATE` transaction,
//! commits once and then answers every waiter, so concurrent runs share one fsync. When one
//! write of a batch fails, the batch is rolled back and each write is retried in its own
//! transaction, so a bad write fails alone.

use std::sync::{Arc, Mutex};

use chrono::Utc;
use sqlx::pool::PoolConnection;
use sqlx::{Connection, Sqlite, SqliteConnection, SqlitePool};
use steward_protocol::{ApprovalRequest, AuditEntry, AuditRecord, Event};
use tokio::sync::{mpsc, oneshot};

use super::rows::MCP_TOKEN_COLUMNS;
use super::rows::{APPROVAL_COLUMNS, AUDIT_COLUMNS, FACT_COLUMNS, RUN_COLUMNS, finite, to_i64};
use crate::McpTokenRecord;
use crate::chain::{GENESIS_HASH, audit_hash, timestamp_text};
use crate::{FactRecord, RunRecord, RunStatus, StoreError, new_id};

/// Most writes committed in one transaction.
pub const MAX_BATCH: usize = 256;

/// Capacity of the write queue (writes); senders wait when it is full.
pub const QUEUE_CAPACITY: usize = 1024;

/// State shared by the store handles and the writer.
#[derive(Debug)]
pub struct Shared {
    /// The database path for messages (`:memory:` for an in-memory store).
    pub path: String,
    /// The first failure of a queued event since the last flush.
    pub deferred: Mutex<Option<String>>,
    /// The audit anchor file, if any (see [`crate::anchor`]).
    pub anchor: Option<std::path::PathBuf>,
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
    /// `INSERT` a run.
    InsertRun(Box<RunRecord>),
    /// `UPDATE` a run by id.
    UpdateRun(Box<RunRecord>),
    /// `UPDATE` a run by id only if it is `running`; answers whether it was written.
    FinishRun(Box<RunRecord>),
    /// `INSERT` an event.
    Event(Box<Event>),
    /// Insert or replace an approval.
    Approval(Box<ApprovalRequest>),
    /// Append to the audit chain.
    Audit(Box<AuditEntry>),
    /// Append to the audit chain only if the entry's run is `running`; answers the record, or
    /// `Flag(false)` when refused.
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
    /// Nobody (events): failures go to [`Shared::deferred`].
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
enum Applied {
    Nothing,
    Audit(Box<AuditRecord>),
    /// Whether a conditional write (a fact insert or delete) changed a row.
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
pub async fn run(pool: SqlitePool, shared: Arc<Shared>, mut queue: mpsc::Receiver<Pending>) {
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
}

async fn process(pool: &SqlitePool, shared: &Shared, batch: Vec<Pending>) {
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
    match apply_batch(&mut conn, &shared.path, &works).await {
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
fn advance_anchor(shared: &Shared, results: &[Applied]) {
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

async fn retry_one_by_one(conn: &mut PoolConnection<Sqlite>, shared: &Shared, batch: Vec<Pending>) {
    for pending in batch {
        let result = match apply_batch(conn, &shared.path, &[&pending.work]).await {
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

fn fail_all(shared: &Shared, batch: Vec<Pending>, message: &str) {
    for pending in batch {
        let error = StoreError::Write { path: shared.path.clone(), message: message.to_string() };
        answer(shared, pending.reply, Err(error));
    }
}

fn answer(shared: &Shared, reply: Reply, result: Result<Applied, StoreError>) {
    // A waiter that went away (its future was dropped) no longer needs an answer.
    match reply {
        Reply::Nobody => {
            if let Err(error) = result {
                tracing::warn!(path = %shared.path, error = %error, "a queued event could not be stored");
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

/// Applies `works` in one `BEGIN IMMEDIATE` transaction and commits.
async fn apply_batch(
    conn: &mut PoolConnection<Sqlite>,
    path: &str,
    works: &[&Work],
) -> Result<Vec<Applied>, BatchError> {
    let db = |source| StoreError::Database { path: path.to_string(), source };
    let mut tx = (**conn).begin_with("BEGIN IMMEDIATE").await.map_err(|e| BatchError::Transaction(db(e)))?;
    // Head of the chain, read inside this transaction on the first audit write: with the
    // write lock held no other connection can append until the commit.
    let mut head: Option<(u64, String)> = None;
    let mut results = Vec::with_capacity(works.len());
    // Consecutive events and consecutive audit records go in one multi-row INSERT each: every
    // statement is a round trip to SQLite's worker thread.
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
                insert_events(&mut tx, path, &events).await.map_err(BatchError::Write)?;
                results.extend(events.iter().map(|_| Applied::Nothing));
            }
            Work::Audit(_) => {
                let entries: Vec<&AuditEntry> = works[i..end]
                    .iter()
                    .filter_map(|w| if let Work::Audit(e) = w { Some(&**e) } else { None })
                    .collect();
                let records = append_audits(&mut tx, path, &entries, &mut head).await.map_err(BatchError::Write)?;
                results.extend(records.into_iter().map(|r| Applied::Audit(Box::new(r))));
            }
            _ => {
                for work in &works[i..end] {
                    results.push(apply(&mut tx, path, work, &mut head).await.map_err(BatchError::Write)?);
                }
            }
        }
        i = end;
    }
    tx.commit().await.map_err(|e| BatchError::Transaction(db(e)))?;
    Ok(results)
}

async fn apply(
    conn: &mut SqliteConnection,
    path: &str,
    work: &Work,
    head: &mut Option<(u64, String)>,
) -> Result<Applied, StoreError> {
    let db = |source| StoreError::Database { path: path.to_string(), source };
    match work {
        Work::InsertRun(run) => {
            let sql = format!(
                "INSERT INTO runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            );
            bind_run(sqlx::query(sqlx::AssertSqlSafe(sql)), path, run)?.execute(&mut *conn).await.map_err(db)?;
        }
        Work::FinishRun(run) => {
            match run_is_running(conn, path, &run.id).await? {
                Some(true) => {}
                Some(false) => return Ok(Applied::Flag(false)),
                None => return Err(StoreError::NotFound { path: path.to_string(), what: format!("run {}", run.id) }),
            }
            let sql = "UPDATE runs SET id = ?, owner_id = ?, task = ?, planner = ?, provider = ?, model = ?, \
                       workspace = ?, status = ?, stop_reason = ?, final_text = ?, error_class = ?, error = ?, \
                       created_at = ?, finished_at = ?, rounds = ?, tool_calls = ?, input_tokens = ?, \
                       output_tokens = ?, pid = ? WHERE id = ? AND status = ?";
            let done = bind_run(sqlx::query(sql), path, run)?
                .bind(&run.id)
                .bind(RunStatus::Running.as_str())
                .execute(&mut *conn)
                .await
                .map_err(db)?;
            return Ok(Applied::Flag(done.rows_affected() > 0));
        }
        Work::GuardedAudit(entry) => {
            if run_is_running(conn, path, &entry.run_id).await? != Some(true) {
                return Ok(Applied::Flag(false));
            }
            let mut records = append_audits(conn, path, &[entry], head).await?;
            return records.pop().map(|r| Applied::Audit(Box::new(r))).ok_or_else(|| StoreError::Write {
                path: path.to_string(),
                message: "the audit write produced no record".into(),
            });
        }
        Work::UpdateRun(run) => {
            let sql = "UPDATE runs SET id = ?, owner_id = ?, task = ?, planner = ?, provider = ?, model = ?, \
                       workspace = ?, status = ?, stop_reason = ?, final_text = ?, error_class = ?, error = ?, \
                       created_at = ?, finished_at = ?, rounds = ?, tool_calls = ?, input_tokens = ?, \
                       output_tokens = ?, pid = ? WHERE id = ?";
            let done = bind_run(sqlx::query(sql), path, run)?.bind(&run.id).execute(&mut *conn).await.map_err(db)?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound { path: path.to_string(), what: format!("run {}", run.id) });
            }
        }
        Work::Event(event) => insert_events(conn, path, &[event]).await?,
        Work::Approval(a) => {
            let sql = format!(
                "INSERT INTO approvals ({APPROVAL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, owner_id = excluded.owner_id, \
                 call_id = excluded.call_id, tool = excluded.tool, arguments = excluded.arguments, \
                 reason = excluded.reason, rule = excluded.rule, risk = excluded.risk, \
                 preview = excluded.preview, created_at = excluded.created_at, \
                 expires_at = excluded.expires_at, status = excluded.status"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(&a.id)
                .bind(&a.run_id)
                .bind(&a.owner_id)
                .bind(&a.call_id)
                .bind(&a.tool)
                .bind(a.arguments.to_string())
                .bind(&a.reason)
                .bind(&a.rule)
                .bind(finite(path, "approval risk", a.risk)?)
                .bind(&a.preview)
                .bind(timestamp_text(&a.created_at))
                .bind(timestamp_text(&a.expires_at))
                .bind(a.status.as_str())
                .execute(&mut *conn)
                .await
                .map_err(db)?;
        }
        Work::Audit(entry) => {
            let mut records = append_audits(conn, path, &[entry], head).await?;
            return records.pop().map(|r| Applied::Audit(Box::new(r))).ok_or_else(|| StoreError::Write {
                path: path.to_string(),
                message: "the audit write produced no record".into(),
            });
        }
        Work::Document(doc) => {
            let (table, key) = doc.table.names();
            let sql = format!(
                "INSERT INTO {table} (id, {key}, created_at, body) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (id) DO UPDATE SET {key} = excluded.{key}, created_at = excluded.created_at, body = excluded.body"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(&doc.id)
                .bind(&doc.key)
                .bind(&doc.created_at)
                .bind(&doc.body)
                .execute(&mut *conn)
                .await
                .map_err(db)?;
        }
        Work::InsertFact { fact, max_per_owner } => {
            // The count is read in the same statement, inside this write transaction: no
            // other write can add a fact of this owner in between.
            let sql = format!(
                "INSERT INTO facts ({FACT_COLUMNS}) SELECT ?, ?, ?, ? \
                 WHERE (SELECT COUNT(*) FROM facts WHERE owner_id = ?) < ?"
            );
            let done = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(&fact.id)
                .bind(&fact.owner_id)
                .bind(&fact.text)
                .bind(timestamp_text(&fact.created_at))
                .bind(&fact.owner_id)
                .bind(i64::from(*max_per_owner))
                .execute(&mut *conn)
                .await
                .map_err(db)?;
            return Ok(Applied::Flag(done.rows_affected() > 0));
        }
        Work::DeleteFact { owner_id, id } => {
            let done = sqlx::query("DELETE FROM facts WHERE id = ? AND owner_id = ?")
                .bind(id)
                .bind(owner_id)
                .execute(&mut *conn)
                .await
                .map_err(db)?;
            return Ok(Applied::Flag(done.rows_affected() > 0));
        }
        Work::InsertDecision { approval_id, run_id, created_at, body } => {
            let done = sqlx::query(
                "INSERT INTO approval_decisions (approval_id, run_id, created_at, body) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (approval_id) DO NOTHING",
            )
            .bind(approval_id)
            .bind(run_id)
            .bind(created_at)
            .bind(body)
            .execute(&mut *conn)
            .await
            .map_err(db)?;
            return Ok(Applied::Flag(done.rows_affected() > 0));
        }
        Work::DeleteRun(id) => {
            let done = sqlx::query("DELETE FROM runs WHERE id = ? AND status <> 'running'")
                .bind(id)
                .execute(&mut *conn)
                .await
                .map_err(db)?;
            if done.rows_affected() == 0 {
                return Ok(Applied::Flag(false));
            }
            for table in ["events", "approvals", "approval_decisions", "rollbacks"] {
                sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE run_id = ?")))
                    .bind(id)
                    .execute(&mut *conn)
                    .await
                    .map_err(db)?;
            }
            return Ok(Applied::Flag(true));
        }
        Work::InsertMcpToken(token) => {
            let sql = format!("INSERT INTO mcp_tokens ({MCP_TOKEN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(&token.id)
                .bind(&token.owner_id)
                .bind(&token.name)
                .bind(token.scopes.join(","))
                .bind(&token.token_hash)
                .bind(timestamp_text(&token.created_at))
                .bind(token.last_used_at.as_ref().map(timestamp_text))
                .bind(token.revoked_at.as_ref().map(timestamp_text))
                .execute(&mut *conn)
                .await
                .map_err(db)?;
        }
        Work::RevokeMcpToken { owner_id, id, at } => {
            let done = sqlx::query(
                "UPDATE mcp_tokens SET revoked_at = ? WHERE id = ? AND owner_id = ? AND revoked_at IS NULL",
            )
            .bind(at)
            .bind(id)
            .bind(owner_id)
            .execute(&mut *conn)
            .await
            .map_err(db)?;
            return Ok(Applied::Flag(done.rows_affected() > 0));
        }
        Work::TouchMcpToken { id, at } => {
            let done = sqlx::query("UPDATE mcp_tokens SET last_used_at = ? WHERE id = ?")
                .bind(at)
                .bind(id)
                .execute(&mut *conn)
                .await
                .map_err(db)?;
            return Ok(Applied::Flag(done.rows_affected() > 0));
        }
        Work::Barrier => {}
    }
    Ok(Applied::Nothing)
}

/// Whether run `run_id` is `running`, read inside the write transaction (which holds the
/// database's write lock, so it stays so until the commit); `None` when there is no such run.
async fn run_is_running(conn: &mut SqliteConnection, path: &str, run_id: &str) -> Result<Option<bool>, StoreError> {
    let status: Option<(String,)> = sqlx::query_as("SELECT status FROM runs WHERE id = ?")
        .bind(run_id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|source| StoreError::Database { path: path.to_string(), source })?;
    Ok(status.map(|(status,)| status == RunStatus::Running.as_str()))
}

/// Inserts events in one statement.
async fn insert_events(conn: &mut SqliteConnection, path: &str, events: &[&Event]) -> Result<(), StoreError> {
    let mut rows = Vec::with_capacity(events.len());
    for event in events {
        let body = serde_json::to_string(event).map_err(|e| StoreError::Invalid {
            path: path.to_string(),
            what: format!("event is not serialisable ({e})"),
        })?;
        rows.push((
            event.run_id.clone(),
            to_i64(path, "event seq", event.seq)?,
            timestamp_text(&event.at),
            event.kind.name(),
            body,
        ));
    }
    let mut insert = sqlx::QueryBuilder::<Sqlite>::new("INSERT INTO events (run_id, seq, at, name, body) ");
    insert.push_values(rows, |mut row, (run_id, seq, at, name, body)| {
        row.push_bind(run_id).push_bind(seq).push_bind(at).push_bind(name).push_bind(body);
    });
    insert
        .build()
        .execute(&mut *conn)
        .await
        .map_err(|source| StoreError::Database { path: path.to_string(), source })?;
    Ok(())
}

/// Appends audit records to the chain in one statement; `head` is the chain's last
/// `(seq, hash)`, read inside the transaction the first time it is needed.
async fn append_audits(
    conn: &mut SqliteConnection,
    path: &str,
    entries: &[&AuditEntry],
    head: &mut Option<(u64, String)>,
) -> Result<Vec<AuditRecord>, StoreError> {
    let db = |source| StoreError::Database { path: path.to_string(), source };
    let (mut last_seq, mut prev_hash) = match head.take() {
        Some(known) => known,
        None => {
            let last: Option<(i64, String)> = sqlx::query_as("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")
                .fetch_optional(&mut *conn)
                .await
                .map_err(db)?;
            match last {
                Some((seq, hash)) => (
                    u64::try_from(seq).map_err(|_| StoreError::Corrupt {
                        path: path.to_string(),
                        what: "audit.seq: negative".into(),
                    })?,
                    hash,
                ),
                None => (0, GENESIS_HASH.to_string()),
            }
        }
    };
    let mut records = Vec::with_capacity(entries.len());
    let mut checked = Vec::with_capacity(entries.len());
    for entry in entries {
        let risk = finite(path, "audit risk", entry.risk)?;
        let latency_ms = to_i64(path, "audit latency_ms", entry.latency_ms)?;
        let mut record = AuditRecord {
            seq: last_seq + 1,
            id: new_id("aud_"),
            at: Utc::now(),
            entry: (*entry).clone(),
            prev_hash: prev_hash.clone(),
            hash: String::new(),
        };
        record.hash = audit_hash(&record.prev_hash, &record);
        last_seq = record.seq;
        prev_hash = record.hash.clone();
        checked.push((to_i64(path, "audit seq", record.seq)?, risk, latency_ms));
        records.push(record);
    }
    let mut insert = sqlx::QueryBuilder::<Sqlite>::new(format!("INSERT INTO audit ({AUDIT_COLUMNS}) "));
    insert.push_values(records.iter().zip(&checked), |mut row, (record, (seq, risk, latency_ms))| {
        let entry = &record.entry;
        row.push_bind(*seq)
            .push_bind(record.id.clone())
            .push_bind(timestamp_text(&record.at))
            .push_bind(entry.agent.clone())
            .push_bind(entry.run_id.clone())
            .push_bind(entry.call_id.clone())
            .push_bind(entry.action.clone())
            .push_bind(entry.input.to_string())
            .push_bind(entry.policy.clone())
            .push_bind(*risk)
            .push_bind(entry.outcome.as_str())
            .push_bind(*latency_ms)
            .push_bind(entry.sandbox.clone())
            .push_bind(entry.approval_id.clone())
            .push_bind(entry.rollback_token.clone())
            .push_bind(entry.detail.clone())
            .push_bind(record.prev_hash.clone())
            .push_bind(record.hash.clone());
    });
    insert.build().execute(&mut *conn).await.map_err(db)?;
    *head = Some((last_seq, prev_hash));
    Ok(records)
}

type SqliteQuery<'q> = sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments>;

/// Binds the run's fields in [`RUN_COLUMNS`] order.
fn bind_run<'q>(query: SqliteQuery<'q>, path: &str, run: &'q RunRecord) -> Result<SqliteQuery<'q>, StoreError> {
    Ok(query
        .bind(&run.id)
        .bind(&run.owner_id)
        .bind(&run.task)
        .bind(&run.planner)
        .bind(&run.provider)
        .bind(&run.model)
        .bind(&run.workspace)
        .bind(run.status.as_str())
        .bind(run.stop_reason.map(|s| s.as_str()))
        .bind(run.final_text.as_deref())
        .bind(run.error_class.map(|c| c.as_str()))
        .bind(run.error.as_deref())
        .bind(timestamp_text(&run.created_at))
        .bind(run.finished_at.as_ref().map(timestamp_text))
        .bind(i64::from(run.rounds))
        .bind(i64::from(run.tool_calls))
        .bind(to_i64(path, "run input_tokens", run.input_tokens)?)
        .bind(to_i64(path, "run output_tokens", run.output_tokens)?)
        .bind(i64::from(run.pid)))
}
