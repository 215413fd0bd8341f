//! What differs between the two databases, and the few primitives the shared SQL code runs
//! statements with.
//!
//! Every statement of the store is written once, with `?` placeholders; [`Dialect::execute`],
//! [`Dialect::fetch_all`] and [`Dialect::fetch_optional`] bind [`Arg`]s to it on the database's
//! own connection type (PostgreSQL numbers the placeholders, see [`numbered`]);
//! [`Dialect::insert_rows`] inserts many rows of one table at once (SQLite through its C API).
//! Rows are read through [`ReadRow`]. The rest of the trait is what really differs: how a
//! write transaction starts and locks ([`Dialect::BEGIN`], [`Dialect::LOCK_ROWS`],
//! [`Dialect::lock_batch`]), the node and leases of a store shared by several machines, change
//! notices, and how the audit verification reads the chain ([`Dialect::check_audit_rows`]:
//! SQLite's C API directly).

use std::borrow::Cow;
use std::future::Future;

use std::time::Duration;

use futures::stream::BoxStream;
use sqlx::{ColumnIndex, Database, Decode, Pool, Row, Type};
use tokio::sync::broadcast;

use super::chain_state::ChainState;
use super::work::{Applied, BatchError, Shared, Work};
use crate::{Change, RunRecord, StoreError};

/// The native connection of a dialect's database.
pub type Conn<D> = <<D as Dialect>::DB as Database>::Connection;

/// A row of a dialect's database.
pub type DbRow<D> = <<D as Dialect>::DB as Database>::Row;

/// One value bound to a `?` placeholder.
#[derive(Debug, Clone)]
pub enum Arg<'a> {
    /// `TEXT`.
    Text(Cow<'a, str>),
    /// `TEXT` or `NULL`.
    OptText(Option<Cow<'a, str>>),
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Real(f64),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(value: &'a str) -> Self {
        Arg::Text(Cow::Borrowed(value))
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(value: &'a String) -> Self {
        Arg::Text(Cow::Borrowed(value.as_str()))
    }
}

impl From<String> for Arg<'_> {
    fn from(value: String) -> Self {
        Arg::Text(Cow::Owned(value))
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(value: Option<&'a str>) -> Self {
        Arg::OptText(value.map(Cow::Borrowed))
    }
}

impl From<Option<String>> for Arg<'_> {
    fn from(value: Option<String>) -> Self {
        Arg::OptText(value.map(Cow::Owned))
    }
}

impl From<i64> for Arg<'_> {
    fn from(value: i64) -> Self {
        Arg::Int(value)
    }
}

impl From<f64> for Arg<'_> {
    fn from(value: f64) -> Self {
        Arg::Real(value)
    }
}

/// `[Arg; N]` from values of mixed types: `args![id, seq, Some(name)]`.
macro_rules! args {
    ($($value:expr),* $(,)?) => {
        vec![$($crate::sql::dialect::Arg::from($value)),*]
    };
}
pub(crate) use args;

/// Reads columns of a row by name.
pub trait ReadRow: Send + Sync {
    /// A non-null `TEXT` column.
    fn text(&self, column: &str) -> Result<String, sqlx::Error>;
    /// A `TEXT` column that may be `NULL`.
    fn opt_text(&self, column: &str) -> Result<Option<String>, sqlx::Error>;
    /// An integer column.
    fn int(&self, column: &str) -> Result<i64, sqlx::Error>;
    /// A floating-point column.
    fn real(&self, column: &str) -> Result<f64, sqlx::Error>;
    /// The non-null `TEXT` column at `index` (0-based), borrowed from the row.
    fn text_at(&self, index: usize) -> Result<&str, sqlx::Error>;
    /// The integer column at `index`.
    fn int_at(&self, index: usize) -> Result<i64, sqlx::Error>;
    /// The floating-point column at `index`.
    fn real_at(&self, index: usize) -> Result<f64, sqlx::Error>;
}

impl<R> ReadRow for R
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    usize: ColumnIndex<R>,
    for<'r> &'r str: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> f64: Decode<'r, R::Database> + Type<R::Database>,
{
    fn text(&self, column: &str) -> Result<String, sqlx::Error> {
        self.try_get(column)
    }

    fn opt_text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        self.try_get(column)
    }

    fn int(&self, column: &str) -> Result<i64, sqlx::Error> {
        self.try_get(column)
    }

    fn real(&self, column: &str) -> Result<f64, sqlx::Error> {
        self.try_get(column)
    }

    fn text_at(&self, index: usize) -> Result<&str, sqlx::Error> {
        self.try_get(index)
    }

    fn int_at(&self, index: usize) -> Result<i64, sqlx::Error> {
        self.try_get(index)
    }

    fn real_at(&self, index: usize) -> Result<f64, sqlx::Error> {
        self.try_get(index)
    }
}

/// One database's SQL dialect and the state a store keeps for it.
pub trait Dialect: Send + Sync + std::fmt::Debug + Sized + 'static {
    /// The sqlx database.
    type DB: Database<Row: ReadRow>;

    /// The statement that starts a write transaction.
    const BEGIN: &'static str;

    /// Appended to a `SELECT` inside a write transaction to lock the rows it reads until the
    /// commit (`""` where the transaction already holds the database's write lock).
    const LOCK_ROWS: &'static str;

    /// Statements run in order on one connection by [`crate::Store::close`] after its flush:
    /// they move a write-ahead log kept beside the database into it and empty the log, without
    /// waiting for other connections. None by default.
    const CLOSE: &'static [&'static str] = &[];

    /// Whether the store's writer runs on a thread of its own (with a single-threaded runtime)
    /// instead of as a task of the caller's runtime: where its statements and disk syncs block
    /// the thread that makes them (SQLite's C calls), so that blocking hands nothing over to
    /// another thread. False by default (a network database's writer awaits its server).
    const WRITER_THREAD: bool = false;

    /// Runs `sql` with `args` bound; the number of rows it changed.
    fn execute<'c>(
        conn: &'c mut Conn<Self>,
        sql: &'c str,
        args: Vec<Arg<'c>>,
    ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send + 'c;

    /// Inserts rows: `insert` is `INSERT INTO table (columns)` naming `width` columns, `values`
    /// the rows' values in that order, one row after another. By default one multi-row
    /// `INSERT` of them all (one round trip to the server); SQLite steps a single-row `INSERT`
    /// per row through its C API instead. Errors: [`StoreError::Invalid`] when `values` is not
    /// whole rows of `width`; the statement's failure.
    fn insert_rows<'c>(
        conn: &'c mut Conn<Self>,
        path: &'c str,
        insert: &'c str,
        width: usize,
        values: Vec<Arg<'c>>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'c {
        async move {
            let rows = whole_rows(path, width, values.len())?;
            let row = row_placeholders(width);
            let mut sql = format!("{insert} VALUES ");
            for i in 0..rows {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&row);
            }
            Self::execute(conn, &sql, values)
                .await
                .map_err(|source| StoreError::Database { path: path.to_string(), source })?;
            Ok(())
        }
    }

    /// Runs `sql` with `args` bound; every row it returned.
    fn fetch_all<'c>(
        conn: &'c mut Conn<Self>,
        sql: &'c str,
        args: Vec<Arg<'c>>,
    ) -> impl Future<Output = Result<Vec<DbRow<Self>>, sqlx::Error>> + Send + 'c;

    /// Runs `sql` (no placeholders) and streams its rows as the database returns them.
    fn fetch<'c>(conn: &'c mut Conn<Self>, sql: &'c str) -> BoxStream<'c, Result<DbRow<Self>, sqlx::Error>>;

    /// Runs `sql` with `args` bound; its first row, if any.
    fn fetch_optional<'c>(
        conn: &'c mut Conn<Self>,
        sql: &'c str,
        args: Vec<Arg<'c>>,
    ) -> impl Future<Output = Result<Option<DbRow<Self>>, sqlx::Error>> + Send + 'c;

    /// Checks every stored audit record, in `seq` order, with `chain`: whether all of them
    /// check out. PostgreSQL streams the rows through sqlx, SQLite reads them through its C API.
    fn check_audit_rows<'c>(
        conn: &'c mut Conn<Self>,
        chain: &'c mut ChainState,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send + 'c;

    /// The node this store writes as, on a database shared by several machines: runs it inserts
    /// are stamped with it and get a lease. `None` for a database on one machine.
    fn node(&self) -> Option<&str>;

    /// Takes, at the start of a write transaction, the locks the batch `works` needs beyond
    /// [`Dialect::BEGIN`] (none by default).
    fn lock_batch<'c>(
        &'c self,
        conn: &'c mut Conn<Self>,
        path: &'c str,
        works: &'c [&'c Work],
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'c {
        let _ = (conn, path, works);
        async { Ok(()) }
    }

    /// Called before each write transaction starts, outside it: `durable` says whether its
    /// commit must reach the disk before it returns (a write somebody waits for) or may be
    /// forced later (queued events and audit records, see [`Dialect::sync_relaxed`]). `Ok(true)`
    /// when the commit will be forced as the store's durability says; `Ok(false)` when it was
    /// relaxed and needs a later forced commit or [`Dialect::sync_relaxed`]. The default never
    /// relaxes: every commit is as durable as configured.
    fn prepare_commit<'c>(
        &'c self,
        conn: &'c mut Conn<Self>,
        path: &'c str,
        durable: bool,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send + 'c {
        let _ = (conn, path, durable);
        async { Ok(true) }
    }

    /// Called on the writer's thread before it takes its first write (nothing to do by
    /// default; SQLite opens a connection of the writer's own there).
    fn writer_starts(&self) {}

    /// Called on the writer's thread when it stops, after its last write and its pool's close,
    /// or when it panics (nothing to do by default; SQLite closes the writer's own connection).
    fn writer_stops(&self) {}

    /// Forces every relaxed commit so far to disk without a new transaction (after
    /// [`Dialect::prepare_commit`] returned `false`); nothing to do by default.
    fn sync_relaxed(&self) -> std::io::Result<()> {
        Ok(())
    }

    /// Called inside the transaction that inserted run `run_id` (gives it its lease).
    fn run_inserted<'c>(
        &'c self,
        conn: &'c mut Conn<Self>,
        path: &'c str,
        run_id: &'c str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'c {
        let _ = (conn, path, run_id);
        async { Ok(()) }
    }

    /// Applies a batch made of inserts only, as [`Dialect::apply_inserts`] answers, without a
    /// connection of the write pool, where the writer has one of its own (SQLite's, opened by
    /// [`Dialect::writer_starts`]): `None` when it has none (the default) or when `works` holds
    /// another kind of write, and the writer then takes the pool's.
    fn apply_unpooled(
        &self,
        shared: &Shared<Self>,
        works: &[&Work],
        durable: bool,
    ) -> Option<(Result<Vec<Applied>, BatchError>, bool)> {
        let _ = (shared, works, durable);
        None
    }

    /// Applies a batch made of inserts only (a run's record, documents, events and audit
    /// records: the writes of a run's start and of its steps) in one transaction and with fewer
    /// hand-overs between threads than a statement at a time, where this database has a way
    /// to: `None` when it has not (the default) or when `works` holds another kind of write,
    /// and the writer then applies it statement by statement after [`Dialect::prepare_commit`]. Otherwise the outcome and whether the
    /// commit was forced to disk (`durable` as for [`Dialect::prepare_commit`]).
    fn apply_inserts<'c>(
        &'c self,
        conn: &'c mut Conn<Self>,
        shared: &'c Shared<Self>,
        works: &'c [&'c Work],
        durable: bool,
    ) -> impl Future<Output = Option<(Result<Vec<Applied>, BatchError>, bool)>> + Send + 'c {
        let _ = (conn, shared, works, durable);
        async { None }
    }

    /// Called last inside a batch's transaction: sends its change notices, if this database
    /// delivers any (none by default).
    fn notify<'c>(
        &'c self,
        conn: &'c mut Conn<Self>,
        path: &'c str,
        works: &'c [&'c Work],
        results: &'c [Applied],
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'c {
        let _ = (conn, path, works, results);
        async { Ok(()) }
    }

    /// Of `run_ids`, those this store's process must stop executing (see
    /// [`crate::Store::lost_runs`]).
    fn lost_runs<'a>(
        &'a self,
        pool: &'a Pool<Self::DB>,
        path: &'a str,
        run_ids: &'a [String],
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send + 'a;

    /// Renews the leases of process `pid`'s runs (see [`crate::Store::renew_leases`]); a
    /// database without leases renews none.
    fn renew_leases<'a>(
        &'a self,
        pool: &'a Pool<Self::DB>,
        path: &'a str,
        pid: u32,
        ttl: Duration,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send + 'a {
        let _ = (pool, path, pid, ttl);
        async { Ok(0) }
    }

    /// Takes over expired runs of other nodes (see [`crate::Store::take_over_expired_runs`]); a
    /// database without leases takes over none.
    fn take_over<'a>(
        &'a self,
        pool: &'a Pool<Self::DB>,
        path: &'a str,
        ttl: Duration,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RunRecord>, StoreError>> + Send + 'a {
        let _ = (pool, path, ttl, limit);
        async { Ok(Vec::new()) }
    }

    /// A receiver of change notices from every store sharing the database, when it delivers
    /// them (see [`crate::Store::subscribe_changes`]).
    fn subscribe(&self) -> Option<broadcast::Receiver<Change>> {
        None
    }
}

/// `sql` with its `?` placeholders numbered `$1`, `$2` … (PostgreSQL's syntax). The store's SQL
/// has no `?` inside literals or identifiers.
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// `count` placeholders for one row of a multi-row `VALUES`: `(?, ?, ?)`.
pub fn row_placeholders(count: usize) -> String {
    let mut out = String::with_capacity(count * 3 + 2);
    out.push('(');
    for i in 0..count {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('?');
    }
    out.push(')');
    out
}

/// How many rows of `width` values `len` values make. Errors: [`StoreError::Invalid`] when
/// they are not whole rows (or `width` is 0).
pub fn whole_rows(path: &str, width: usize, len: usize) -> Result<usize, StoreError> {
    if width == 0 || !len.is_multiple_of(width) {
        return Err(StoreError::Invalid {
            path: path.to_string(),
            what: format!("{len} values are not rows of {width}"),
        });
    }
    Ok(len / width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(
            numbered("SELECT a FROM t WHERE b = ? AND c IN (?, ?)"),
            "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)"
        );
        assert_eq!(numbered("SELECT 1"), "SELECT 1");
        assert_eq!(row_placeholders(3), "(?, ?, ?)");
        assert_eq!(row_placeholders(1), "(?)");
    }
}
