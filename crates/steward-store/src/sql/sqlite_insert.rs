//! Rows inserted through SQLite's C API ([`insert_rows`]): one prepared single-row `INSERT`
//! stepped once per row on the connection locked out of sqlx's worker thread.
//!
//! Through sqlx a batch is one multi-row `INSERT` whose text (and prepared statement) differs
//! with the number of rows, and whose every value is copied into an argument of sqlx's, handed
//! to its worker thread and copied again by SQLite. Here the statement is prepared once per
//! call and each row's values are bound in place (texts without a copy: they outlive the step)
//! and stepped on the calling thread.

use std::ffi::c_int;
use std::ptr::NonNull;

use libsqlite3_sys as ffi;
use sqlx::SqliteConnection;

use super::dialect::{Arg, CHAIN_HEAD_SQL, chain_head, row_placeholders};
use super::sqlite_statement::{Statement, connection_error};
use crate::StoreError;
use crate::chain::GENESIS_HASH;

/// Runs `insert` (`INSERT INTO table (columns)`, naming `width` columns) with `VALUES` of one
/// row once per `width` values of `values`, in order, inside whatever transaction `conn` has
/// open. The rows' CPU time (microseconds each) is spent on the calling thread; the commit,
/// and its disk sync, stay with sqlx.
///
/// Errors: [`StoreError::Invalid`] when `values` is not whole rows of `width`;
/// [`StoreError::Database`] when the connection's worker thread is gone;
/// [`StoreError::Write`] with SQLite's message when preparing or a row's step fails (the rows
/// before it stay inserted in the open transaction, which the caller rolls back).
pub async fn insert_rows(
    conn: &mut SqliteConnection,
    path: &str,
    insert: &str,
    width: usize,
    values: &[Arg<'_>],
) -> Result<(), StoreError> {
    whole_rows(path, width, values)?;
    let mut handle =
        conn.lock_handle().await.map_err(|source| StoreError::Database { path: path.to_string(), source })?;
    let db = handle.as_raw_handle();
    // SAFETY: the connection is locked to us until `handle` is dropped, after `step_rows`.
    unsafe { step_rows(db, insert, width, values) }
        .map_err(|message| StoreError::Write { path: path.to_string(), message })
}

/// [`Dialect::append_to_chain`](super::dialect::Dialect::append_to_chain) on SQLite: with the
/// connection taken from sqlx's worker once, reads the chain's head unless `head` is known,
/// has `rows` make the values and steps them as [`insert_rows`] does. Errors: as
/// [`insert_rows`]; [`StoreError::Write`] when the head cannot be read, or is not an integer
/// and a text; [`StoreError::Corrupt`] for a negative `seq`; `rows`' own.
pub async fn append_to_chain<'c, T>(
    conn: &mut SqliteConnection,
    path: &str,
    head: Option<(u64, String)>,
    insert: &str,
    width: usize,
    rows: impl FnOnce((u64, String)) -> Result<(T, Vec<Arg<'c>>), StoreError>,
) -> Result<T, StoreError> {
    let write = |message| StoreError::Write { path: path.to_string(), message };
    let mut handle =
        conn.lock_handle().await.map_err(|source| StoreError::Database { path: path.to_string(), source })?;
    let db = handle.as_raw_handle();
    let head = match head {
        Some(known) => known,
        // SAFETY: the connection is locked to us until `handle` is dropped.
        None => match unsafe { read_head(db) }.map_err(write)? {
            Some((seq, hash)) => chain_head(path, seq, hash)?,
            None => (0, GENESIS_HASH.to_string()),
        },
    };
    let (made, values) = rows(head)?;
    whole_rows(path, width, &values)?;
    // SAFETY: as above.
    unsafe { step_rows(db, insert, width, &values) }.map_err(write)?;
    Ok(made)
}

/// [`StoreError::Invalid`] unless `values` is whole rows of `width`.
fn whole_rows(path: &str, width: usize, values: &[Arg<'_>]) -> Result<(), StoreError> {
    if width == 0 || !values.len().is_multiple_of(width) {
        return Err(StoreError::Invalid {
            path: path.to_string(),
            what: format!("{} values are not rows of {width}", values.len()),
        });
    }
    Ok(())
}

/// The row of [`CHAIN_HEAD_SQL`] on `db`: `None` for an empty chain; SQLite's error, or a
/// message naming the column, when it cannot be read or holds another type than the store
/// writes (`INTEGER` `seq`, `TEXT` `hash`).
///
/// # Safety
///
/// `db` must be an open connection that no other thread uses during the call.
unsafe fn read_head(db: NonNull<ffi::sqlite3>) -> Result<Option<(i64, String)>, String> {
    // SAFETY: the caller's promise; the statement is dropped before this function returns.
    let Some(statement) = (unsafe { Statement::prepare(db, CHAIN_HEAD_SQL) }) else {
        // SAFETY: as above.
        return Err(unsafe { connection_error(db) });
    };
    let stmt = statement.as_ptr();
    // SAFETY: a statement of the locked connection; its columns are read while it has a row
    // (column 0 and 1 of the two of `CHAIN_HEAD_SQL`), the text copied before the next call.
    unsafe {
        match ffi::sqlite3_step(stmt) {
            ffi::SQLITE_ROW => {}
            ffi::SQLITE_DONE => return Ok(None),
            _ => return Err(connection_error(db)),
        }
        if ffi::sqlite3_column_type(stmt, 0) != ffi::SQLITE_INTEGER {
            return Err("audit.seq of the chain's head is not an integer".into());
        }
        if ffi::sqlite3_column_type(stmt, 1) != ffi::SQLITE_TEXT {
            return Err("audit.hash of the chain's head is not a text".into());
        }
        let seq = ffi::sqlite3_column_int64(stmt, 0);
        let (data, len) = (ffi::sqlite3_column_text(stmt, 1), ffi::sqlite3_column_bytes(stmt, 1));
        let len = usize::try_from(len).map_err(|_| "audit.hash of the chain's head has no length".to_string())?;
        let bytes = if data.is_null() { &[][..] } else { std::slice::from_raw_parts(data, len) };
        let hash =
            String::from_utf8(bytes.to_vec()).map_err(|_| "audit.hash of the chain's head is not UTF-8".to_string())?;
        Ok(Some((seq, hash)))
    }
}

/// Prepares `insert` with `VALUES` of one row on `db` and steps it once per `width` values of
/// `values`: SQLite's error message when preparing, binding or a step fails.
///
/// # Safety
///
/// `db` must be an open connection that no other thread uses during the call.
unsafe fn step_rows(db: NonNull<ffi::sqlite3>, insert: &str, width: usize, values: &[Arg<'_>]) -> Result<(), String> {
    let sql = format!("{insert} VALUES {}", row_placeholders(width));
    // SAFETY: the caller's promise; the statement is dropped before this function returns.
    let Some(statement) = (unsafe { Statement::prepare(db, &sql) }) else {
        // SAFETY: as above.
        return Err(unsafe { connection_error(db) });
    };
    let stmt = statement.as_ptr();
    for row in values.chunks(width) {
        for (i, value) in row.iter().enumerate() {
            let index = c_int::try_from(i + 1).map_err(|_| "too many columns".to_string())?;
            // SAFETY: a statement of the locked connection, `index` within its parameters
            // (SQLite reports one that is not); a text is bound without a copy
            // (`SQLITE_STATIC`) and outlives the statement's use of it: the statement is
            // stepped, then reset and rebound or finalized, while `values` is borrowed.
            let bound = unsafe {
                match value {
                    Arg::Text(text) | Arg::OptText(Some(text)) => ffi::sqlite3_bind_text64(
                        stmt,
                        index,
                        text.as_ptr().cast(),
                        text.len() as u64,
                        ffi::SQLITE_STATIC(),
                        ffi::SQLITE_UTF8 as u8,
                    ),
                    Arg::OptText(None) => ffi::sqlite3_bind_null(stmt, index),
                    Arg::Int(n) => ffi::sqlite3_bind_int64(stmt, index, *n),
                    Arg::Real(x) => ffi::sqlite3_bind_double(stmt, index, *x),
                }
            };
            if bound != ffi::SQLITE_OK {
                // SAFETY: as above.
                return Err(unsafe { connection_error(db) });
            }
        }
        // SAFETY: a statement of the locked connection with every parameter bound.
        let stepped = unsafe { ffi::sqlite3_step(stmt) };
        // SAFETY: as above; the error is read before the reset, which keeps it anyway.
        let error = (stepped != ffi::SQLITE_DONE).then(|| unsafe { connection_error(db) });
        // SAFETY: as above.
        unsafe { ffi::sqlite3_reset(stmt) };
        if let Some(message) = error {
            return Err(message);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use sqlx::{Connection, Row};

    use super::*;
    use crate::sql::dialect::args;

    async fn table() -> SqliteConnection {
        let mut conn = SqliteConnection::connect("sqlite::memory:").await.unwrap();
        sqlx::query("CREATE TABLE t (n INTEGER PRIMARY KEY NOT NULL, name TEXT NOT NULL, note TEXT, x REAL NOT NULL)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn
    }

    #[tokio::test]
    async fn the_chain_head_is_read_on_the_locked_connection() {
        let mut conn = SqliteConnection::connect("sqlite::memory:").await.unwrap();
        sqlx::query("CREATE TABLE audit (seq BIGINT PRIMARY KEY NOT NULL, hash TEXT NOT NULL)")
            .execute(&mut conn)
            .await
            .unwrap();
        let insert = "INSERT INTO audit (seq, hash)";
        let head = |mut conn: SqliteConnection, known: Option<(u64, String)>| async move {
            let seen = append_to_chain(&mut conn, "db", known, insert, 2, |head| Ok((head, Vec::new()))).await;
            (conn, seen)
        };
        let (mut conn, seen) = head(conn, None).await;
        assert_eq!(seen.unwrap(), (0, GENESIS_HASH.to_string()), "an empty chain starts at genesis");
        let appended = append_to_chain(&mut conn, "db", None, insert, 2, |(seq, _)| {
            Ok(((), args![i64::try_from(seq).unwrap() + 1, "h1", i64::try_from(seq).unwrap() + 2, "h2"]))
        })
        .await;
        appended.unwrap();
        let (conn, seen) = head(conn, None).await;
        assert_eq!(seen.unwrap(), (2, "h2".to_string()));
        let (mut conn, seen) = head(conn, Some((7, "known".into()))).await;
        assert_eq!(seen.unwrap(), (7, "known".to_string()), "a known head is not read again");
        sqlx::query("INSERT INTO audit (seq, hash) VALUES (3, X'37')").execute(&mut conn).await.unwrap();
        let (mut conn, seen) = head(conn, None).await;
        assert!(matches!(seen, Err(StoreError::Write { .. })), "a hash that is not a text: {seen:?}");
        sqlx::query("DELETE FROM audit WHERE seq = 3").execute(&mut conn).await.unwrap();
        sqlx::query("UPDATE audit SET seq = -5 WHERE seq = 1").execute(&mut conn).await.unwrap();
        sqlx::query("DELETE FROM audit WHERE seq = 2").execute(&mut conn).await.unwrap();
        let (_, seen) = head(conn, None).await;
        assert!(matches!(seen, Err(StoreError::Corrupt { .. })), "a negative seq: {seen:?}");
    }

    #[tokio::test]
    async fn rows_are_inserted_with_their_types_and_a_failing_row_names_its_error() {
        let mut conn = table().await;
        let insert = "INSERT INTO t (n, name, note, x)";
        let values = args![1i64, "one", Some("a\u{0}b"), 0.5f64, 2i64, String::from("two"), None::<&str>, -1.0f64];
        insert_rows(&mut conn, "db", insert, 4, &values).await.unwrap();
        let rows =
            sqlx::query("SELECT n, name, note, x, typeof(n) || typeof(name) || typeof(note) || typeof(x) FROM t")
                .fetch_all(&mut conn)
                .await
                .unwrap();
        let read: Vec<(i64, String, Option<String>, f64, String)> =
            rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))).collect();
        assert_eq!(
            read,
            vec![
                (1, "one".into(), Some("a\u{0}b".into()), 0.5, "integertexttextreal".into()),
                (2, "two".into(), None, -1.0, "integertextnullreal".into()),
            ]
        );
        let repeated = args![3i64, "three", None::<&str>, 0.0f64, 1i64, "again", None::<&str>, 0.0f64];
        let err = insert_rows(&mut conn, "db", insert, 4, &repeated).await.unwrap_err();
        assert!(matches!(&err, StoreError::Write { message, .. } if message.contains("UNIQUE")), "{err}");
        let short = args![4i64, "four", None::<&str>];
        let err = insert_rows(&mut conn, "db", insert, 4, &short).await.unwrap_err();
        assert!(matches!(err, StoreError::Invalid { .. }), "{err}");
        // Without a transaction each row commits by itself: the row before the failing one stays.
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t").fetch_one(&mut conn).await.unwrap();
        assert_eq!(count, 3);
    }
}
