//! The writer's own connection to a database file ([`OwnConnection`]), opened through SQLite's
//! C API on the writer's thread and used by that thread alone.
//!
//! A connection of sqlx's belongs to a worker thread of sqlx's: taking it for a batch
//! ([`sqlx::SqliteConnection::lock_handle`]) is a message to that thread, which gives the
//! connection up and wakes the writer, and giving it back wakes that thread again. On a busy
//! machine each of those wake-ups waits for a core. A connection of the writer's own is
//! there whenever the writer has a batch of inserts: the batch's only hand-overs are the one
//! that wakes the writer and the answers to its waiters.

use std::ffi::{CString, c_int};
use std::path::Path;
use std::ptr::{NonNull, null, null_mut};
use std::time::Duration;

use libsqlite3_sys as ffi;

use super::statement::{Statement, Statements, column_text, connection_error, execute};
use crate::sql::apply::HEAD_SQL;

/// A connection to a database file in WAL mode that only the thread holding it uses, closed
/// when dropped.
pub struct OwnConnection {
    db: NonNull<ffi::sqlite3>,
    /// The statements of its batches, kept from one batch to the next.
    statements: Statements,
    /// The `synchronous` setting as last set: 0 unknown, 1 NORMAL, 2 FULL.
    synchronous: u8,
}

impl std::fmt::Debug for OwnConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnConnection").field("synchronous", &self.synchronous).finish_non_exhaustive()
    }
}

// SAFETY: the connection is used by one thread at a time (whoever holds the value; the store
// keeps it behind a mutex); opened with `SQLITE_OPEN_NOMUTEX` (multi-thread mode) it may move
// between threads as long as no two use it at once.
unsafe impl Send for OwnConnection {}

impl OwnConnection {
    /// Opens the existing database at `path` (in WAL mode: its schema is applied and its
    /// journal mode set when sqlx opened it) with the settings of the store's other
    /// connections: `synchronous` FULL when `full` else NORMAL, a busy timeout of `busy`, no
    /// foreign keys. Reads the schema, so the first batch does not.
    ///
    /// Errors: SQLite's message when the file cannot be opened, is not in WAL mode, or a
    /// setting fails.
    pub fn open(path: &Path, full: bool, busy: Duration) -> Result<OwnConnection, String> {
        let name = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| format!("{} holds a NUL byte", path.display()))?;
        let mut raw = null_mut();
        let flags = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_NOMUTEX;
        // SAFETY: `name` is a NUL-terminated string borrowed for the call; `raw` receives the
        // handle (also on failure, which `own` then closes).
        let opened = unsafe { ffi::sqlite3_open_v2(name.as_ptr(), &mut raw, flags, null()) };
        let Some(db) = NonNull::new(raw) else { return Err("SQLite could not allocate a connection".into()) };
        // SAFETY: the connection is this value's, used by whoever holds it, and closed after
        // its statements are finalized (see `Drop`).
        let mut own = OwnConnection { db, statements: unsafe { Statements::new(db) }, synchronous: 0 };
        if opened != ffi::SQLITE_OK {
            // SAFETY: the handle is open (failed opens return one that holds the error) and ours.
            return Err(unsafe { connection_error(db) });
        }
        let busy_ms = c_int::try_from(busy.as_millis()).unwrap_or(c_int::MAX);
        // SAFETY: an open connection of this thread's.
        unsafe { ffi::sqlite3_busy_timeout(db.as_ptr(), busy_ms) };
        let journal = own.query_text("PRAGMA journal_mode")?;
        if !journal.eq_ignore_ascii_case("wal") {
            return Err(format!("the database's journal mode is {journal}, not WAL"));
        }
        let synchronous = if full { "PRAGMA synchronous = FULL" } else { "PRAGMA synchronous = NORMAL" };
        for sql in [synchronous, "PRAGMA foreign_keys = OFF"] {
            // SAFETY: an open connection of this thread's.
            unsafe { execute(db, sql) }?;
        }
        own.synchronous = if full { 2 } else { 1 };
        // Preparing a statement that reads a table reads the schema.
        // SAFETY: as above; the statement is finalized at once.
        match unsafe { Statement::prepare(db, HEAD_SQL) } {
            Some(statement) => drop(statement),
            // SAFETY: as above.
            None => return Err(unsafe { connection_error(db) }),
        }
        Ok(own)
    }

    /// The connection's statements, for SQLite's calls on the thread that holds `self`.
    pub fn statements(&mut self) -> &mut Statements {
        &mut self.statements
    }

    /// Whether a transaction is open (one a failed batch could not roll back).
    pub fn in_transaction(&self) -> bool {
        // SAFETY: an open connection, used by the thread that holds `self`.
        unsafe { ffi::sqlite3_get_autocommit(self.db.as_ptr()) == 0 }
    }

    /// The `synchronous` setting as last set (1 NORMAL, 2 FULL), 0 when in doubt.
    pub fn synchronous(&self) -> u8 {
        self.synchronous
    }

    /// Records the `synchronous` setting just made (`wanted`, as [`OwnConnection::synchronous`]).
    pub fn set_synchronous(&mut self, wanted: u8) {
        self.synchronous = wanted;
    }

    /// The first column of the first row of `sql`, as text (empty when it has no row).
    fn query_text(&mut self, sql: &str) -> Result<String, String> {
        // SAFETY: an open connection of this thread's; the statement is finalized when dropped,
        // and the column's text is copied before that.
        unsafe {
            let Some(statement) = Statement::prepare(self.db, sql) else { return Err(connection_error(self.db)) };
            match ffi::sqlite3_step(statement.as_ptr()) {
                ffi::SQLITE_ROW => Ok(column_text(statement.as_ptr(), 0)),
                ffi::SQLITE_DONE => Ok(String::new()),
                _ => Err(connection_error(self.db)),
            }
        }
    }
}

impl Drop for OwnConnection {
    fn drop(&mut self) {
        // Finalized first: a connection with statements left does not close.
        self.statements.clear();
        // SAFETY: the connection is ours and closed once, with every statement prepared on it
        // finalized (the kept ones just now; any other is dropped within the call that made it).
        unsafe {
            ffi::sqlite3_close(self.db.as_ptr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database in WAL mode opens with the settings asked for; a file in another journal
    /// mode, or none, is refused with a message.
    #[test]
    fn opens_a_database_in_wal_mode_only() {
        let dir = tempfile::tempdir().unwrap();
        let missing = OwnConnection::open(&dir.path().join("none.db"), true, Duration::from_secs(1));
        assert!(missing.is_err(), "no file is created");
        let rollback = dir.path().join("rollback.db");
        let mut raw = null_mut();
        let name = CString::new(rollback.as_os_str().as_encoded_bytes()).unwrap();
        let flags = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE;
        // SAFETY: a new connection of this test's, closed below.
        unsafe {
            assert_eq!(ffi::sqlite3_open_v2(name.as_ptr(), &mut raw, flags, null()), ffi::SQLITE_OK);
            let db = NonNull::new(raw).unwrap();
            execute(db, "CREATE TABLE audit (seq INTEGER, hash TEXT)").unwrap();
            let err = OwnConnection::open(&rollback, true, Duration::from_secs(1)).err().unwrap();
            assert!(err.contains("not WAL"), "{err}");
            execute(db, "PRAGMA journal_mode = WAL").unwrap();
            ffi::sqlite3_close(db.as_ptr());
        }
        let mut own = OwnConnection::open(&rollback, false, Duration::from_secs(1)).unwrap();
        assert_eq!(own.synchronous(), 1);
        assert_eq!(own.query_text("PRAGMA synchronous").unwrap(), "1");
        assert_eq!(own.query_text("PRAGMA busy_timeout").unwrap(), "1000");
        let own = OwnConnection::open(&rollback, true, Duration::from_secs(1)).unwrap();
        assert_eq!(own.synchronous(), 2);
    }
}
