//! A batch of inserts (a run's record, documents such as its conversation, a run's events and
//! audit records, the record that lets a call run among them) applied on SQLite in one call on
//! the connection locked out of sqlx's worker thread ([`apply_inserts`]) or on the writer's own
//! ([`apply_own`]).
//!
//! Through sqlx the same batch is up to five hand-overs between this thread and the worker's:
//! the `synchronous` setting when it changes, `BEGIN IMMEDIATE`, the chain head's read, the rows
//! (already stepped here), `COMMIT`. Each waits for the other thread to be scheduled, which on
//! a loaded machine costs more than the batch's own work. Here the connection is taken from the
//! worker once (or is the writer's own, and is not taken from anyone) and everything runs on this
//! thread ([`on_this_thread`]), the commit's disk sync included.

use libsqlite3_sys as ffi;
use sqlx::SqliteConnection;
use steward_protocol::{AuditEntry, Event};

use super::insert::{row_insert, step_rows};
use super::own::OwnConnection;
use super::statement::{Statements, column_text, connection_error, execute};
use crate::sql::apply::{
    AUDIT_WIDTH, EVENT_INSERT, EVENT_WIDTH, HEAD_SQL, RUN_STATUS_SQL, audit_insert, chain_audits, chain_head,
    document_upsert, event_rows, run_insert,
};
use crate::sql::on_this_thread;
use crate::sql::work::{Applied, BatchError, Shared, Work};
use crate::{RunStatus, StoreError};

/// Whether `works` is a batch [`apply_inserts`] takes: one insert at least, and every write an
/// insert (a new run's record, a document, an event, an audit record, guarded or not) or a
/// barrier (a flush, which only waits for the commit: the batch of queued appends that a flush
/// ends is one of these). A guarded record's check is the run's status alone: SQLite has no
/// node, so no lease.
pub fn inserts_only(works: &[&Work]) -> bool {
    let insert = |w: &&Work| {
        matches!(w, Work::InsertRun(_) | Work::Document(_) | Work::Event(_) | Work::Audit(_) | Work::GuardedAudit(..))
    };
    works.iter().any(insert) && works.iter().all(|w| insert(w) || matches!(w, Work::Barrier { .. }))
}

/// Applies `works` ([`inserts_only`]) in one transaction: `synchronous` first when given (the
/// `PRAGMA` a commit's durability needs), `BEGIN IMMEDIATE` (waiting for another connection's
/// lock as sqlx's would, up to the connection's busy timeout), the inserts in order (the chain
/// head read on the first audit record), `COMMIT`. Answers the outcome and whether the
/// `synchronous` statement ran.
///
/// Errors: [`BatchError::Transaction`] when the connection cannot be taken from its worker,
/// or `synchronous`, `BEGIN` or `COMMIT` fails; [`BatchError::Write`] when a write fails (the
/// transaction is rolled back).
pub async fn apply_inserts<D>(
    conn: &mut SqliteConnection,
    shared: &Shared<D>,
    works: &[&Work],
    synchronous: Option<&str>,
) -> (Result<Vec<Applied>, BatchError>, bool) {
    let mut handle = match conn.lock_handle().await {
        Ok(handle) => handle,
        Err(source) => {
            let error = StoreError::Database { path: shared.path.clone(), source };
            return (Err(BatchError::Transaction(error)), false);
        }
    };
    // SAFETY: the connection is locked to us until `handle` is dropped, after `statements`.
    let mut statements = unsafe { Statements::new(handle.as_raw_handle()) };
    on_this_thread(|| apply_on(&mut statements, shared, works, synchronous))
}

/// [`apply_inserts`] on the writer's own connection: no hand-over to another thread, and the
/// statements prepared for one batch are kept for the next.
pub fn apply_own<D>(
    own: &mut OwnConnection,
    shared: &Shared<D>,
    works: &[&Work],
    synchronous: Option<&str>,
) -> (Result<Vec<Applied>, BatchError>, bool) {
    let statements = own.statements();
    on_this_thread(|| apply_on(statements, shared, works, synchronous))
}

/// [`apply_inserts`] on the connection of `statements`.
fn apply_on<D>(
    statements: &mut Statements,
    shared: &Shared<D>,
    works: &[&Work],
    synchronous: Option<&str>,
) -> (Result<Vec<Applied>, BatchError>, bool) {
    let path = shared.path.as_str();
    let db = statements.db();
    let transaction = |message: String| BatchError::Transaction(StoreError::Write { path: path.to_string(), message });
    let mut set = false;
    let mut run = || {
        if let Some(sql) = synchronous {
            // SAFETY: `statements`' connection, on its thread (the promise of `Statements::new`).
            unsafe { execute(db, sql) }.map_err(transaction)?;
            set = true;
        }
        // SAFETY: as above.
        unsafe { execute(db, "BEGIN IMMEDIATE") }.map_err(transaction)?;
        let applied = insert_all(statements, shared, works)
            // SAFETY: as above.
            .and_then(|results| unsafe { execute(db, "COMMIT") }.map(|()| results).map_err(transaction));
        // SAFETY: as above.
        if applied.is_err() && unsafe { ffi::sqlite3_get_autocommit(db.as_ptr()) } == 0 {
            // SAFETY: as above. (SQLite rolls back by itself after the errors that end a
            // transaction, in which case it is no longer open here.)
            if let Err(message) = unsafe { execute(db, "ROLLBACK") } {
                tracing::warn!(path, %message, "a failed batch could not be rolled back");
            }
        }
        applied
    };
    let outcome = run();
    (outcome, set)
}

/// Inserts `works`' rows in order, consecutive events in one statement's steps and consecutive
/// audit records in another's, inside the open transaction of `statements`' connection.
fn insert_all<D>(statements: &mut Statements, shared: &Shared<D>, works: &[&Work]) -> Result<Vec<Applied>, BatchError> {
    let path = shared.path.as_str();
    let write = |message: String| BatchError::Write(StoreError::Write { path: path.to_string(), message });
    let mut head: Option<(u64, String)> = None;
    let mut results = Vec::with_capacity(works.len());
    let mut rest = works;
    while let Some(first) = rest.first() {
        let kind = std::mem::discriminant(*first);
        let run = rest.iter().take_while(|w| std::mem::discriminant(**w) == kind).count();
        let (group, after) = rest.split_at(run);
        rest = after;
        if let Work::Barrier { .. } = first {
            // Nothing to write: answered once the batch has committed.
            results.extend(group.iter().map(|_| Applied::Nothing));
            continue;
        }
        if let Work::InsertRun(_) | Work::Document(_) = first {
            for work in group {
                let (sql, args) = match work {
                    // SQLite keeps no node: the row as `apply` inserts it there.
                    Work::InsertRun(run) => run_insert(path, run, None).map_err(BatchError::Write)?,
                    Work::Document(doc) => document_upsert(doc),
                    _ => continue,
                };
                step_rows(statements, &sql, args.len(), &args).map_err(write)?;
                results.push(Applied::Nothing);
            }
            continue;
        }
        if let Work::Event(_) = first {
            let events: Vec<&Event> =
                group.iter().filter_map(|w| if let Work::Event(e) = w { Some(&**e) } else { None }).collect();
            let rows = event_rows(path, &events).map_err(BatchError::Write)?;
            step_rows(statements, &row_insert(EVENT_INSERT, EVENT_WIDTH), EVENT_WIDTH, &rows).map_err(write)?;
            results.extend(events.iter().map(|_| Applied::Nothing));
            continue;
        }
        if let Work::GuardedAudit(..) = first {
            for work in group {
                let Work::GuardedAudit(entry, _) = work else { continue };
                // Refused unless the run exists and is running.
                let status = read_text(statements, RUN_STATUS_SQL, &entry.run_id).map_err(write)?;
                if status.as_deref() == Some(RunStatus::Running.as_str()) {
                    results.extend(append(statements, shared, &[&**entry], &mut head)?);
                } else {
                    results.push(Applied::Flag(false));
                }
            }
            continue;
        }
        let entries: Vec<&AuditEntry> =
            group.iter().filter_map(|w| if let Work::Audit(e) = w { Some(&**e) } else { None }).collect();
        results.extend(append(statements, shared, &entries, &mut head)?);
    }
    Ok(results)
}

/// Appends `entries` to the chain whose head is `head` (read first when `None`) and moves
/// `head` to the last of them, inside the open transaction of `statements`' connection, which
/// holds the write lock.
fn append<D>(
    statements: &mut Statements,
    shared: &Shared<D>,
    entries: &[&AuditEntry],
    head: &mut Option<(u64, String)>,
) -> Result<Vec<Applied>, BatchError> {
    let path = shared.path.as_str();
    let write = |message: String| BatchError::Write(StoreError::Write { path: path.to_string(), message });
    let known = match head.take() {
        Some(known) => known,
        None => chain_head(path, read_head(statements).map_err(write)?).map_err(BatchError::Write)?,
    };
    let chained = chain_audits(shared, entries, known.clone()).map_err(BatchError::Write)?;
    step_rows(statements, audit_row_insert(), AUDIT_WIDTH, &chained.rows()).map_err(write)?;
    *head = Some(chained.head().unwrap_or(known));
    Ok(chained.records.into_iter().map(Applied::Audit).collect())
}

/// The single-row insert of an audit record, made once.
fn audit_row_insert() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| row_insert(&audit_insert(), AUDIT_WIDTH))
}

/// The first column of the first row `sql` returns with `param` bound as its one parameter,
/// as text (`None`: no row); a value that is not text reads as an error. The statement is
/// reset before returning: a kept statement left on a row would hold its snapshot open.
fn read_text(statements: &mut Statements, sql: &str, param: &str) -> Result<Option<String>, String> {
    let db = statements.db();
    let stmt = statements.get(sql)?;
    // SAFETY: a statement of `statements`' connection, on its thread (the promise of
    // `Statements::new`), with one parameter; the text is bound without a copy and outlives its
    // use: the statement is stepped and reset here, and its bindings are cleared before its
    // next use (`Statements::get`).
    let bound = unsafe {
        ffi::sqlite3_bind_text64(
            stmt,
            1,
            param.as_ptr().cast(),
            param.len() as u64,
            ffi::SQLITE_STATIC(),
            ffi::SQLITE_UTF8 as u8,
        )
    };
    if bound != ffi::SQLITE_OK {
        // SAFETY: as above.
        return Err(unsafe { connection_error(db) });
    }
    // SAFETY: as above, every parameter bound.
    let read = match unsafe { ffi::sqlite3_step(stmt) } {
        ffi::SQLITE_DONE => Ok(None),
        // SAFETY: a row of the statement, whose first column exists; the text is copied before
        // the next call on the statement.
        ffi::SQLITE_ROW => unsafe {
            if ffi::sqlite3_column_type(stmt, 0) == ffi::SQLITE_TEXT {
                Ok(Some(column_text(stmt, 0)))
            } else {
                Err(format!("`{sql}` gave a value that is not text"))
            }
        },
        // SAFETY: as above.
        _ => Err(unsafe { connection_error(db) }),
    };
    // SAFETY: as above.
    unsafe { ffi::sqlite3_reset(stmt) };
    read
}

/// [`HEAD_SQL`]'s row: the newest audit record's `seq` and `hash`, `None` for an empty chain.
/// A `seq` that is not an integer or a `hash` that is not text reads as an error. The
/// statement is reset before returning, as in [`read_text`].
fn read_head(statements: &mut Statements) -> Result<Option<(i64, String)>, String> {
    let db = statements.db();
    let stmt = statements.get(HEAD_SQL)?;
    // SAFETY: a statement of `statements`' connection, on its thread (the promise of
    // `Statements::new`), with no parameters.
    let read = match unsafe { ffi::sqlite3_step(stmt) } {
        ffi::SQLITE_DONE => Ok(None),
        // SAFETY: a row of the statement, whose two columns exist; the text is copied before
        // the next call on the statement.
        ffi::SQLITE_ROW => unsafe {
            if ffi::sqlite3_column_type(stmt, 0) == ffi::SQLITE_INTEGER
                && ffi::sqlite3_column_type(stmt, 1) == ffi::SQLITE_TEXT
            {
                Ok(Some((ffi::sqlite3_column_int64(stmt, 0), column_text(stmt, 1))))
            } else {
                Err("the newest audit record's seq is not an integer or its hash not text".into())
            }
        },
        // SAFETY: as above.
        _ => Err(unsafe { connection_error(db) }),
    };
    // SAFETY: as above.
    unsafe { ffi::sqlite3_reset(stmt) };
    read
}

#[cfg(test)]
mod tests {
    use super::*;
    use steward_protocol::AuditOutcome;

    fn audit() -> Work {
        Work::Audit(Box::new(AuditEntry {
            agent: "steward".into(),
            run_id: "run_a".into(),
            call_id: "c1".into(),
            action: "read".into(),
            input: serde_json::json!({}),
            policy: "default:low".into(),
            risk: 0.1,
            outcome: AuditOutcome::Completed,
            latency_ms: 1,
            sandbox: String::new(),
            approval_id: String::new(),
            rollback_token: String::new(),
            detail: String::new(),
        }))
    }

    /// The flush that ends a burst of queued appends joins their batch, which stays on the
    /// one-call path, as do documents (a run's conversation); a batch of barriers alone, or
    /// with a write that is not an insert, does not.
    #[test]
    fn appends_ended_by_a_flush_are_still_inserts_only() {
        let (first, second, flush) = (audit(), audit(), Work::Barrier { durable: true });
        assert!(inserts_only(&[&first, &second, &flush]));
        assert!(inserts_only(&[&first]));
        assert!(!inserts_only(&[&flush]), "nothing to insert");
        let document = Work::Document(Box::new(crate::sql::work::Document {
            table: crate::sql::work::DocumentTable::Conversations,
            id: "cnv_a".into(),
            key: "local:alice".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            body: "{}".into(),
        }));
        assert!(inserts_only(&[&document, &first, &flush]));
        assert!(!inserts_only(&[]));
        let delete = Work::DeleteRun("run_a".into());
        assert!(!inserts_only(&[&first, &delete, &flush]));
        let Work::Audit(entry) = audit() else { unreachable!() };
        let guarded = Work::GuardedAudit(entry, crate::OnDisk::Soon);
        assert!(inserts_only(&[&guarded]), "the record that lets a call run");
        assert!(inserts_only(&[&first, &guarded, &second]));
    }
}
