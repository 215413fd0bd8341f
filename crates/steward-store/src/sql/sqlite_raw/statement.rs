//! A statement prepared through SQLite's C API on a connection locked out of sqlx's worker
//! thread ([`sqlx::SqliteConnection::lock_handle`]), finalized when dropped: what the audit
//! chain's read ([`super::audit`]), the rows inserted through the C API
//! ([`super::insert`]) and the batches of appends ([`super::batch`]) step.

use std::ffi::c_int;
use std::ptr::{NonNull, null_mut};

use libsqlite3_sys as ffi;

/// A prepared statement of a locked connection, finalized when dropped.
pub struct Statement(NonNull<ffi::sqlite3_stmt>);

impl Statement {
    /// Prepares the first statement of `sql` on `db`; `None` when SQLite fails to (its error
    /// is then the connection's, see [`connection_error`]).
    ///
    /// # Safety
    ///
    /// `db` must be an open connection that no other thread uses until the statement is
    /// dropped (locked out of sqlx's worker for that long).
    pub unsafe fn prepare(db: NonNull<ffi::sqlite3>, sql: &str) -> Option<Statement> {
        let len = c_int::try_from(sql.len()).ok()?;
        let mut raw = null_mut();
        // SAFETY: `db` is open and ours (the caller's promise); SQLite reads `len` bytes of
        // `sql`, which is borrowed for the call.
        let prepared = unsafe { ffi::sqlite3_prepare_v2(db.as_ptr(), sql.as_ptr().cast(), len, &mut raw, null_mut()) };
        NonNull::new(raw).filter(|_| prepared == ffi::SQLITE_OK).map(Statement)
    }

    /// The statement for SQLite's calls.
    pub fn as_ptr(&self) -> *mut ffi::sqlite3_stmt {
        self.0.as_ptr()
    }
}

impl Drop for Statement {
    fn drop(&mut self) {
        // SAFETY: the statement was prepared on a connection that is still locked to us (see
        // `prepare`), and is finalized once.
        unsafe {
            ffi::sqlite3_finalize(self.0.as_ptr());
        }
    }
}

/// The statements of one connection, each prepared on its first use and kept for the next
/// (a batch of inserts prepares the same few every time), finalized when dropped.
pub struct Statements {
    db: NonNull<ffi::sqlite3>,
    kept: Vec<(String, Statement)>,
}

impl Statements {
    /// Statements of `db`, none prepared yet.
    ///
    /// # Safety
    ///
    /// `db` must be an open connection that only the thread holding the value uses, and stays
    /// open until the value is dropped.
    pub unsafe fn new(db: NonNull<ffi::sqlite3>) -> Statements {
        Statements { db, kept: Vec::new() }
    }

    /// The connection.
    pub fn db(&self) -> NonNull<ffi::sqlite3> {
        self.db
    }

    /// The statement of `sql` (its first statement), prepared now or kept from an earlier use,
    /// reset and with no parameter bound: SQLite's error message when preparing fails. Valid
    /// until `self` is dropped.
    pub fn get(&mut self, sql: &str) -> Result<*mut ffi::sqlite3_stmt, String> {
        if let Some((_, statement)) = self.kept.iter().find(|(kept, _)| kept == sql) {
            let stmt = statement.as_ptr();
            // SAFETY: a statement of the connection `new` was promised, on its thread; a reset
            // ends a use that was left midway, and no text bound without a copy outlives it.
            unsafe {
                ffi::sqlite3_reset(stmt);
                ffi::sqlite3_clear_bindings(stmt);
            }
            return Ok(stmt);
        }
        // SAFETY: as above; the statement is finalized when `self` drops it.
        let Some(statement) = (unsafe { Statement::prepare(self.db, sql) }) else {
            // SAFETY: as above.
            return Err(unsafe { connection_error(self.db) });
        };
        let stmt = statement.as_ptr();
        self.kept.push((sql.to_string(), statement));
        Ok(stmt)
    }

    /// Finalizes every kept statement (before the connection closes).
    pub fn clear(&mut self) {
        self.kept.clear();
    }
}

/// Prepares `sql` on `db` and steps it to its end, its rows (if any) unread: SQLite's error
/// message when preparing or a step fails.
///
/// # Safety
///
/// `db` must be an open connection that no other thread uses during the call.
pub unsafe fn execute(db: NonNull<ffi::sqlite3>, sql: &str) -> Result<(), String> {
    // SAFETY: the caller's promise; the statement is dropped before this function returns.
    let Some(statement) = (unsafe { Statement::prepare(db, sql) }) else {
        // SAFETY: as above.
        return Err(unsafe { connection_error(db) });
    };
    loop {
        // SAFETY: a statement of the locked connection, with no parameters.
        match unsafe { ffi::sqlite3_step(statement.as_ptr()) } {
            ffi::SQLITE_ROW => {}
            ffi::SQLITE_DONE => return Ok(()),
            // SAFETY: as above.
            _ => return Err(unsafe { connection_error(db) }),
        }
    }
}

/// The last error of connection `db` as text: SQLite's message and its extended result code.
///
/// # Safety
///
/// `db` must be an open connection that no other thread uses meanwhile.
pub unsafe fn connection_error(db: NonNull<ffi::sqlite3>) -> String {
    // SAFETY: `db` is open and ours; SQLite's message is a NUL-terminated string that stays
    // valid until the next call on the connection, and is copied before it.
    unsafe {
        let code = ffi::sqlite3_extended_errcode(db.as_ptr());
        let message = ffi::sqlite3_errmsg(db.as_ptr());
        let message = if message.is_null() {
            "unknown error".into()
        } else {
            std::ffi::CStr::from_ptr(message).to_string_lossy()
        };
        format!("{message} (SQLite code {code})")
    }
}

/// Column `i` of the row `stmt` is on, as text (copied; invalid UTF-8 replaced).
///
/// # Safety
///
/// `stmt` must be a statement on a row with a column `i`, used by this thread only.
pub unsafe fn column_text(stmt: *mut ffi::sqlite3_stmt, i: c_int) -> String {
    // SAFETY: the caller's promise; SQLite's text stays valid until the next call on the
    // statement, and is copied before it.
    unsafe {
        let text = ffi::sqlite3_column_text(stmt, i);
        let len = usize::try_from(ffi::sqlite3_column_bytes(stmt, i)).unwrap_or(0);
        let bytes = if text.is_null() { &[][..] } else { std::slice::from_raw_parts(text, len) };
        String::from_utf8_lossy(bytes).into_owned()
    }
}
