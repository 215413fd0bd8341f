//! The audit verification's read of SQLite: the rows of [`chain_sql`] stepped through SQLite's
//! C API on a connection locked out of sqlx's worker thread, each checked from its column
//! values in place ([`ChainState::check`]).
//!
//! sqlx would copy every value of every row and hand each row over from its worker thread,
//! which costs several times the hash. Here a row costs SQLite's step and the hash. The read
//! is one statement, so it sees one snapshot of the file (WAL mode), as sqlx's would. It runs
//! on the calling thread: on a multi-threaded runtime inside
//! [`tokio::task::block_in_place`], so the runtime moves its other tasks elsewhere meanwhile.

use std::ffi::{CString, c_int};
use std::ptr::{NonNull, null_mut};

use libsqlite3_sys as ffi;
use sqlx::SqliteConnection;

use super::verify::{ChainState, RowFields, chain_sql};

/// Checks every row of [`chain_sql`] with `chain`: whether all of them check out. A row with
/// a column of another type than the store writes (`INTEGER` for `seq` and `latency_ms`,
/// `REAL` for `risk`, `TEXT` holding UTF-8 for the rest) does not.
///
/// Errors: the connection's worker thread is gone. A statement that SQLite fails to prepare
/// or step is reported as a row that does not check out, for the full verification to run
/// (and report the error) through sqlx.
pub async fn check_audit_rows(conn: &mut SqliteConnection, chain: &mut ChainState) -> Result<bool, sqlx::Error> {
    let mut handle = conn.lock_handle().await?;
    let db = handle.as_raw_handle();
    let multi_thread = tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread;
    if multi_thread { Ok(tokio::task::block_in_place(|| check_rows(db, chain))) } else { Ok(check_rows(db, chain)) }
}

/// A prepared statement, finalized when dropped.
struct Statement(NonNull<ffi::sqlite3_stmt>);

impl Drop for Statement {
    fn drop(&mut self) {
        // SAFETY: the statement was prepared on a connection that is still locked to us (the
        // statement never outlives `check_rows`), and is finalized once.
        unsafe {
            ffi::sqlite3_finalize(self.0.as_ptr());
        }
    }
}

/// The loop of [`check_audit_rows`] on the locked connection `db`.
fn check_rows(db: NonNull<ffi::sqlite3>, chain: &mut ChainState) -> bool {
    let Ok(sql) = CString::new(chain_sql()) else { return false };
    let mut raw = null_mut();
    // SAFETY: `db` is an open connection that no other thread uses while it is locked; `sql`
    // is a NUL-terminated string that outlives the call.
    let prepared = unsafe { ffi::sqlite3_prepare_v2(db.as_ptr(), sql.as_ptr(), -1, &mut raw, null_mut()) };
    let Some(statement) = NonNull::new(raw).filter(|_| prepared == ffi::SQLITE_OK).map(Statement) else {
        return false;
    };
    let stmt = statement.0.as_ptr();
    loop {
        // SAFETY: a prepared statement of the locked connection.
        match unsafe { ffi::sqlite3_step(stmt) } {
            ffi::SQLITE_ROW => {}
            ffi::SQLITE_DONE => return true,
            _ => return false,
        }
        // SAFETY: the statement has a current row; the texts borrowed from it are used before
        // the next step.
        let Some(row) = (unsafe { row_fields(stmt) }) else { return false };
        if !chain.check(&row) {
            return false;
        }
    }
}

/// The current row's columns, when each has the type the store writes.
///
/// # Safety
///
/// `stmt` must have a current row (its last step returned `SQLITE_ROW`); the texts are valid
/// until the statement is stepped, reset or finalized.
unsafe fn row_fields<'a>(stmt: *mut ffi::sqlite3_stmt) -> Option<RowFields<'a>> {
    // SAFETY (every call below): column indexes are within the 18 columns of `chain_sql`, on
    // the current row of `stmt`.
    let int = |i: c_int| unsafe {
        (ffi::sqlite3_column_type(stmt, i) == ffi::SQLITE_INTEGER).then(|| ffi::sqlite3_column_int64(stmt, i))
    };
    let real = |i: c_int| unsafe {
        (ffi::sqlite3_column_type(stmt, i) == ffi::SQLITE_FLOAT).then(|| ffi::sqlite3_column_double(stmt, i))
    };
    let text = |i: c_int| -> Option<&'a str> {
        unsafe {
            if ffi::sqlite3_column_type(stmt, i) != ffi::SQLITE_TEXT {
                return None;
            }
            // The pointer first, then the length in bytes of that UTF-8 text (SQLite's order).
            let data = ffi::sqlite3_column_text(stmt, i);
            let len = usize::try_from(ffi::sqlite3_column_bytes(stmt, i)).ok()?;
            if data.is_null() {
                return (len == 0).then_some("");
            }
            std::str::from_utf8(std::slice::from_raw_parts(data, len)).ok()
        }
    };
    Some(RowFields {
        seq: int(0)?,
        id: text(1)?,
        at: text(2)?,
        agent: text(3)?,
        run_id: text(4)?,
        call_id: text(5)?,
        action: text(6)?,
        input: text(7)?,
        policy: text(8)?,
        risk: real(9)?,
        outcome: text(10)?,
        latency_ms: int(11)?,
        sandbox: text(12)?,
        approval_id: text(13)?,
        rollback_token: text(14)?,
        detail: text(15)?,
        prev_hash: text(16)?,
        hash: text(17)?,
    })
}
