//! The SQL store: one implementation of [`Store`], [`crate::LedgerStore`] and
//! [`crate::JournalStore`] over SQLite and PostgreSQL.
//!
//! Every statement is written once, with `?` placeholders, and run through the database's
//! [`Dialect`], which holds only what really differs between the two: how a write transaction
//! starts and locks, the node and leases of a database shared by several machines, change
//! notices, and how a store is opened ([`sqlite`], [`postgres`]). Writes of a store go through
//! a single writer task ([`writer`]) with group commit; reads use a separate pool of
//! connections.

mod apply;
mod chain_state;
pub(crate) mod dialect;
mod generated;
mod journal;
mod leases;
mod ledger;
mod ledger_decide;
mod ledger_rows;
mod migrate;
mod notify;
pub(crate) mod postgres;
mod rows;
pub(crate) mod sqlite;
#[allow(
    unsafe_code,
    reason = "SQLite's C API, for the reads and writes sqlx's row copies and hand-overs would slow down; the crate's only raw SQLite"
)]
mod sqlite_raw;
mod store;
mod verify;
pub(crate) mod work;
pub(crate) mod writer;

use std::sync::{Arc, Mutex};

use sqlx::Pool;
use tokio::sync::{mpsc, oneshot};

use self::dialect::{Arg, DbRow, Dialect};
use self::rows::body_from_row;
use self::work::{Document, DocumentTable, Pending, Reply, Shared, Work};
use crate::StoreError;
use crate::chain::timestamp_text;

/// A [`Store`](crate::Store) in a SQL database: [`crate::SqliteStore`] or [`crate::PgStore`].
/// Cheap to clone: clones share the writer.
///
/// Dropping the last clone lets the writer finish what is queued and stop; call
/// [`Store::flush`](crate::Store::flush) before the process exits so queued writes are not lost.
pub struct SqlStore<D: Dialect> {
    shared: Arc<Shared<D>>,
    read: Pool<D::DB>,
    queue: mpsc::Sender<Pending>,
}

impl<D: Dialect> Clone for SqlStore<D> {
    fn clone(&self) -> Self {
        SqlStore { shared: Arc::clone(&self.shared), read: self.read.clone(), queue: self.queue.clone() }
    }
}

impl<D: Dialect> std::fmt::Debug for SqlStore<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore").field("shared", &self.shared).field("read", &self.read).finish_non_exhaustive()
    }
}

impl<D: Dialect> SqlStore<D> {
    /// Starts the writer on `write` (on a thread of its own where [`Dialect::WRITER_THREAD`],
    /// else as a task of the current runtime) and returns the store reading through `read`.
    ///
    /// Errors: [`StoreError::Io`] when the writer's thread cannot be started.
    fn start(
        path: String,
        write: Pool<D::DB>,
        read: Pool<D::DB>,
        options: &crate::StoreOptions,
        dialect: D,
    ) -> Result<Self, StoreError> {
        let (anchor, audit_key) = (options.audit_anchor.clone(), options.audit_key.clone());
        let shared = Arc::new(Shared {
            path,
            deferred: Mutex::new(None),
            anchor,
            audit_key,
            dialect,
            urgent: tokio::sync::Notify::new(),
            on_disk: tokio::sync::watch::Sender::new(work::Synced::default()),
        });
        let (queue, receiver) = mpsc::channel(writer::QUEUE_CAPACITY);
        let writer = writer::run(write, Arc::clone(&shared), receiver);
        if D::WRITER_THREAD {
            let shown = shared.path.clone();
            // The runtime is made on the thread: one dropped here, in the caller's runtime, if
            // the thread could not be started would panic. Timers for the batch's linger and the
            // pool's acquire; no I/O driver: the database's calls block this thread, which does
            // nothing else. Should it fail, the writer is dropped and every write fails with
            // `StoreError::Closed`.
            let run = move || match tokio::runtime::Builder::new_current_thread().enable_time().build() {
                Ok(runtime) => runtime.block_on(writer),
                Err(error) => tracing::error!(path = %shown, %error, "the store's writer could not start"),
            };
            std::thread::Builder::new()
                .name("steward-store-writer".into())
                .spawn(run)
                .map_err(|source| StoreError::Io { path: shared.path.clone(), source })?;
        } else {
            tokio::spawn(writer);
        }
        Ok(SqlStore { shared, read, queue })
    }

    /// The database as shown in messages: its path (`:memory:` for an in-memory SQLite store),
    /// or `postgres://user@host:port/database` without a password.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    fn db(&self) -> impl Fn(sqlx::Error) -> StoreError + Copy + '_ {
        |source| StoreError::Database { path: self.shared.path.clone(), source }
    }

    fn closed(&self) -> StoreError {
        StoreError::Closed { path: self.shared.path.clone() }
    }

    /// Every row `sql` returns, read on a connection of the read pool.
    async fn fetch_all(&self, sql: &str, args: Vec<Arg<'_>>) -> Result<Vec<DbRow<D>>, StoreError> {
        let mut conn = self.read.acquire().await.map_err(self.db())?;
        D::fetch_all(&mut conn, sql, args).await.map_err(self.db())
    }

    /// The first row `sql` returns, if any, read on a connection of the read pool.
    async fn fetch_optional(&self, sql: &str, args: Vec<Arg<'_>>) -> Result<Option<DbRow<D>>, StoreError> {
        let mut conn = self.read.acquire().await.map_err(self.db())?;
        D::fetch_optional(&mut conn, sql, args).await.map_err(self.db())
    }

    /// Runs `sql` in a transaction of its own on a connection of the read pool (a single
    /// statement commits when it returns); the number of rows it changed.
    async fn execute(&self, sql: &str, args: Vec<Arg<'_>>) -> Result<u64, StoreError> {
        let mut conn = self.read.acquire().await.map_err(self.db())?;
        D::execute(&mut conn, sql, args).await.map_err(self.db())
    }

    async fn enqueue(&self, work: Work, reply: Reply) -> Result<(), StoreError> {
        let waited = !matches!(reply, Reply::Nobody);
        self.queue.send(Pending { work, reply }).await.map_err(|_| self.closed())?;
        if waited {
            self.shared.urgent.notify_one();
        }
        Ok(())
    }

    /// Waits until everything queued so far is committed (not necessarily on disk) and reports
    /// a queued write that failed since the last flush, as [`crate::Store::flush`] does: what
    /// a read needs to see this store's own writes.
    async fn visible(&self) -> Result<(), StoreError> {
        self.write(Work::Barrier { durable: false }).await?;
        let deferred = self.shared.deferred.lock().ok().and_then(|mut slot| slot.take());
        match deferred {
            Some(message) => Err(StoreError::Deferred { path: self.shared.path.clone(), message }),
            None => Ok(()),
        }
    }

    /// Queues `work` and waits for its commit.
    async fn write(&self, work: Work) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(work, Reply::Done(tx)).await?;
        rx.await.map_err(|_| self.closed())?
    }

    /// Queues a conditional `work` and waits for its commit and whether it changed a row.
    async fn write_flag(&self, work: Work) -> Result<bool, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(work, Reply::Flag(tx)).await?;
        rx.await.map_err(|_| self.closed())?
    }

    /// The write that inserts or replaces `record` as document `id` of `table`. Errors:
    /// [`StoreError::Invalid`] when `record` cannot be serialised.
    fn document<T: serde::Serialize>(
        &self,
        table: DocumentTable,
        id: &str,
        key: &str,
        created_at: &steward_protocol::Timestamp,
        record: &T,
    ) -> Result<Work, StoreError> {
        let body = serde_json::to_string(record).map_err(|e| StoreError::Invalid {
            path: self.path().to_string(),
            what: format!("{} record is not serialisable ({e})", table.names().0),
        })?;
        let doc =
            Document { table, id: id.to_string(), key: key.to_string(), created_at: timestamp_text(created_at), body };
        Ok(Work::Document(Box::new(doc)))
    }

    async fn documents<T: serde::de::DeserializeOwned>(
        &self,
        table: DocumentTable,
        key: &str,
    ) -> Result<Vec<T>, StoreError> {
        let (name, column) = table.names();
        // Reads see every write queued before them.
        self.visible().await?;
        let sql = format!("SELECT body FROM {name} WHERE {column} = ? ORDER BY created_at, id");
        let rows = self.fetch_all(&sql, dialect::args![key]).await?;
        rows.iter().map(|row| body_from_row(self.path(), name, row)).collect()
    }
}

/// Runs `work` (blocking: SQLite's calls on a locked connection, a disk sync) on the calling
/// thread: on a multi-threaded runtime inside [`tokio::task::block_in_place`], so the runtime
/// moves its other tasks (the one this thread just woke among them) elsewhere meanwhile.
pub fn on_this_thread<T>(work: impl FnOnce() -> T) -> T {
    let flavor = tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor());
    if matches!(flavor, Ok(tokio::runtime::RuntimeFlavor::MultiThread)) {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}
