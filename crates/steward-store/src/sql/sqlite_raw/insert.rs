//! Rows inserted through SQLite's C API ([`insert_rows`]): one prepared single-row `INSERT`
//! stepped once per row on the connection locked out of sqlx's worker thread.
//!
//! Through sqlx a batch is one multi-row `INSERT` whose text (and prepared statement) differs
//! with the number of rows, and whose every value is copied into an argument of sqlx's, handed
//! to its worker thread and copied again by SQLite. Here the statement is prepared once per
//! call and each row's values are bound in place (texts without a copy: they outlive the step)
//! and stepped on the calling thread.

use std::ffi::c_int;

use libsqlite3_sys as ffi;
use sqlx::SqliteConnection;

use super::statement::{Statements, connection_error};
use crate::StoreError;
use crate::sql::dialect::{Arg, row_placeholders, whole_rows};

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
    whole_rows(path, width, values.len())?;
    let mut handle =
        conn.lock_handle().await.map_err(|source| StoreError::Database { path: path.to_string(), source })?;
    // SAFETY: the connection is locked to us until `handle` is dropped, after `statements`.
    let mut statements = unsafe { Statements::new(handle.as_raw_handle()) };
    let sql = row_insert(insert, width);
    step_rows(&mut statements, &sql, width, values)
        .map_err(|message| StoreError::Write { path: path.to_string(), message })
}

/// `insert` (`INSERT INTO table (columns)` naming `width` columns) with `VALUES` of one row.
pub fn row_insert(insert: &str, width: usize) -> String {
    format!("{insert} VALUES {}", row_placeholders(width))
}

/// Steps the statement of `sql` (a [`row_insert`], prepared once per connection, see
/// [`Statements`]) once per `width` values of `values`: SQLite's error message when preparing,
/// binding or a step fails.
pub fn step_rows(statements: &mut Statements, sql: &str, width: usize, values: &[Arg<'_>]) -> Result<(), String> {
    let db = statements.db();
    let stmt = statements.get(sql)?;
    for row in values.chunks(width) {
        for (i, value) in row.iter().enumerate() {
            let index = c_int::try_from(i + 1).map_err(|_| "too many columns".to_string())?;
            // SAFETY: a statement of `statements`' connection, on its thread (the promise of
            // `Statements::new`), `index` within its parameters (SQLite reports one that is
            // not); a text is bound without a copy (`SQLITE_STATIC`) and outlives the
            // statement's use of it: the statement is stepped and reset while `values` is
            // borrowed, and its bindings are cleared before its next use (`Statements::get`).
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
        // SAFETY: as above, with every parameter bound.
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
