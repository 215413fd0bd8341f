//! The audit verification's read of SQLite: the rows of [`chain_sql`] stepped through SQLite's
//! C API on a connection locked out of sqlx's worker thread ([`check_audit_rows`]).
//!
//! sqlx would copy every value of a row into a row of its own and hand each row over from its
//! worker thread, which costs several times the hash. Here this thread steps the statement and
//! copies the columns of [`CHUNK_ROWS`] rows at a time into one buffer, and a second thread
//! checks them ([`ChainState::check`]) meanwhile, so reading and hashing run on two cores. The
//! read is one statement, so it sees one snapshot of the file (WAL mode), as sqlx's would. It
//! runs on the calling thread: on a multi-threaded runtime inside
//! [`tokio::task::block_in_place`], so the runtime moves its other tasks elsewhere meanwhile.

use std::ffi::c_int;
use std::ptr::NonNull;
use std::sync::mpsc;

use libsqlite3_sys as ffi;
use sqlx::SqliteConnection;

use super::statement::Statement;
use crate::chain::StoredFields;
use crate::sql::chain_state::{ChainState, RowFields};
use crate::sql::on_this_thread;
use crate::sql::verify::chain_sql;

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
    Ok(on_this_thread(|| check_rows(db, chain)))
}

/// Rows handed from the reading thread to the checking one at a time.
const CHUNK_ROWS: usize = 512;

/// Chunks on their way to the checking thread at most (the reader waits for more room).
const CHUNKS_AHEAD: usize = 4;

/// The loop of [`check_audit_rows`] on the locked connection `db`: this thread steps the
/// statement and copies the rows out in chunks ([`read_chunks`]), a second one checks them
/// ([`check_chunks`]), so a row's read and the previous rows' hashes run on two cores.
fn check_rows(db: NonNull<ffi::sqlite3>, chain: &mut ChainState) -> bool {
    // SAFETY: `db` is an open connection that no other thread uses while it is locked, and
    // the statement is dropped before this function returns.
    let Some(statement) = (unsafe { Statement::prepare(db, &chain_sql()) }) else { return false };
    std::thread::scope(|scope| {
        let (full, to_check) = mpsc::sync_channel(CHUNKS_AHEAD);
        let (checked, spent) = mpsc::sync_channel(CHUNKS_AHEAD + 1);
        let checker = scope.spawn(move || check_chunks(&to_check, &checked, chain));
        // Ends the checker's loop once it has checked every chunk read.
        let read = read_chunks(&statement, full, &spent);
        let all_checked = checker.join().unwrap_or(false);
        read && all_checked
    })
}

/// Rows copied out of the statement: per row its numbers and where its texts end in `texts`.
#[derive(Default)]
struct Chunk {
    rows: Vec<CopiedRow>,
    texts: Vec<u8>,
}

/// One row of a [`Chunk`].
struct CopiedRow {
    seq: i64,
    risk: f64,
    latency_ms: i64,
    /// The end in `texts` of each of the 15 text columns, in [`chain_sql`] order; each starts
    /// where the one before it ends (a row's first where the previous row's last ends, or at 0).
    ends: [usize; 15],
}

/// Steps `statement` to its end, sending its rows in chunks to `full` and reusing the chunks
/// that come back on `spent`: `false` at a row with a column of another type than the store
/// writes, a failed step, or when the checker stopped taking chunks (it found a bad row).
fn read_chunks(statement: &Statement, full: mpsc::SyncSender<Chunk>, spent: &mpsc::Receiver<Chunk>) -> bool {
    let stmt = statement.as_ptr();
    loop {
        let mut chunk = spent.try_recv().unwrap_or_default();
        chunk.rows.clear();
        chunk.texts.clear();
        let mut done = false;
        while chunk.rows.len() < CHUNK_ROWS {
            // SAFETY: a prepared statement of the locked connection.
            match unsafe { ffi::sqlite3_step(stmt) } {
                ffi::SQLITE_ROW => {}
                ffi::SQLITE_DONE => {
                    done = true;
                    break;
                }
                _ => return false,
            }
            // SAFETY: the statement has a current row.
            if unsafe { !copy_row(stmt, &mut chunk) } {
                return false;
            }
        }
        if full.send(chunk).is_err() {
            return false;
        }
        if done {
            return true;
        }
    }
}

/// Appends the statement's current row to `chunk`: `false` when a column has another type than
/// the store writes (`INTEGER` for `seq` and `latency_ms`, `REAL` for `risk`, `TEXT` else).
///
/// # Safety
///
/// `stmt` must have a current row (its last step returned `SQLITE_ROW`).
unsafe fn copy_row(stmt: *mut ffi::sqlite3_stmt, chunk: &mut Chunk) -> bool {
    // Every column index below is within the 18 columns of `chain_sql`, on the current row of
    // `stmt`; a text's bytes are read before the next call on the statement.
    // SAFETY: a column's type, read on the current row (the caller's promise).
    let typed = |i: c_int, ty: c_int| unsafe { ffi::sqlite3_column_type(stmt, i) == ty };
    if !(typed(0, ffi::SQLITE_INTEGER) && typed(9, ffi::SQLITE_FLOAT) && typed(11, ffi::SQLITE_INTEGER)) {
        return false;
    }
    let mut ends = [0usize; 15];
    for (end, i) in ends.iter_mut().zip(TEXT_COLUMNS) {
        if !typed(i, ffi::SQLITE_TEXT) {
            return false;
        }
        // The pointer first, then the length in bytes of that UTF-8 text (SQLite's order).
        // SAFETY: a text column of the current row, read before the statement moves on.
        let (data, len) = unsafe { (ffi::sqlite3_column_text(stmt, i), ffi::sqlite3_column_bytes(stmt, i)) };
        let Ok(len) = usize::try_from(len) else { return false };
        if !data.is_null() {
            // SAFETY: SQLite keeps `len` bytes at `data` until the statement moves on.
            chunk.texts.extend_from_slice(unsafe { std::slice::from_raw_parts(data, len) });
        } else if len != 0 {
            return false;
        }
        *end = chunk.texts.len();
    }
    // SAFETY: as above.
    let (seq, risk, latency_ms) = unsafe {
        (ffi::sqlite3_column_int64(stmt, 0), ffi::sqlite3_column_double(stmt, 9), ffi::sqlite3_column_int64(stmt, 11))
    };
    chunk.rows.push(CopiedRow { seq, risk, latency_ms, ends });
    true
}

/// The columns of [`chain_sql`] that hold texts.
const TEXT_COLUMNS: [c_int; 15] = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 13, 14, 15, 16, 17];

/// Checks the rows of every chunk from `to_check` with `chain`, in order, handing each chunk
/// back on `checked`: whether all of them check out (a text that is not UTF-8 does not).
fn check_chunks(to_check: &mpsc::Receiver<Chunk>, checked: &mpsc::SyncSender<Chunk>, chain: &mut ChainState) -> bool {
    for chunk in to_check {
        // One pass over all texts of the chunk: each text is then valid UTF-8 exactly when it
        // starts and ends at a character boundary of the whole.
        let Ok(all) = std::str::from_utf8(&chunk.texts) else { return false };
        let mut start = 0;
        for row in &chunk.rows {
            let mut texts = [""; 15];
            for (text, &end) in texts.iter_mut().zip(&row.ends) {
                let Some(t) = all.get(start..end) else { return false };
                *text = t;
                start = end;
            }
            let [
                id,
                at,
                agent,
                run_id,
                call_id,
                action,
                input,
                policy,
                outcome,
                sandbox,
                approval_id,
                rollback_token,
                detail,
                prev_hash,
                hash,
            ] = texts;
            let (Ok(seq), Ok(latency_ms)) = (u64::try_from(row.seq), u64::try_from(row.latency_ms)) else {
                return false;
            };
            let fields = RowFields {
                fields: StoredFields {
                    seq,
                    id,
                    at,
                    agent,
                    run_id,
                    call_id,
                    action,
                    input,
                    policy,
                    risk: row.risk,
                    outcome,
                    latency_ms,
                    sandbox,
                    approval_id,
                    rollback_token,
                    detail,
                },
                prev_hash,
                hash,
            };
            if !chain.check(&fields) {
                return false;
            }
        }
        // The reader makes a new chunk when none comes back.
        let _ = checked.try_send(chunk);
    }
    true
}
