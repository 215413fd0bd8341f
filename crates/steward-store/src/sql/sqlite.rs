//! The embedded SQLite store: one file in WAL mode.
//!
//! The writer takes the file's write lock with `BEGIN IMMEDIATE` (waiting up to
//! [`BUSY_TIMEOUT`]) and reads the chain head inside that transaction, so several processes may
//! share the file; it needs no further locks ([`Dialect::lock_batch`]). A database on one
//! machine keeps no node, no leases and sends no change notices: crash recovery judges process
//! ids, and followers poll.

use std::future::Future;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, Pool, Sqlite, SqliteConnection};

use super::SqlStore;
use super::chain_state::ChainState;
use super::dialect::{Arg, Dialect, ReadRow, args};
use super::migrate;
use super::sqlite_raw::OwnConnection;
use crate::{Durability, RunStatus, StoreError, StoreOptions};

/// How long a connection waits for another one's lock before failing (10 s).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Read connections per store.
const READ_POOL_SIZE: u32 = 4;

/// The database's file name in a state directory ([`SqlStore::open_state_dir`]).
pub const STATE_DB_FILE: &str = "steward.db";

/// The audit anchor's file name in a state directory ([`SqlStore::open_state_dir`]).
pub const STATE_ANCHOR_FILE: &str = "audit.anchor";

/// A [`Store`](crate::Store) in one SQLite file (or in memory). Cheap to clone: clones share
/// the writer.
///
/// Dropping the last clone lets the writer finish what is queued and stop; call
/// [`Store::flush`](crate::Store::flush) before the process exits so queued events are not lost.
pub type SqliteStore = SqlStore<SqliteDialect>;

/// SQLite's side of the SQL store: `?` placeholders, `BEGIN IMMEDIATE`, no row locks (the
/// transaction holds the file's write lock), no node, leases or notices.
///
/// With [`Durability::Full`] on a file, a batch that nobody waits for (queued events and
/// audit records) commits with `synchronous = NORMAL`: in WAL mode its frames are written but
/// not forced to disk. The next batch somebody waits for commits with `synchronous = FULL`,
/// whose `fsync` of the WAL also makes every earlier frame durable (a checkpoint syncs the WAL
/// before copying it), and [`Store::flush`](crate::Store::flush) forces them when no such
/// batch came ([`Dialect::sync_relaxed`]: `fdatasync` of the WAL file). So a step pays one
/// disk sync, for the record that lets its action run.
#[derive(Debug, Default)]
pub struct SqliteDialect {
    /// The WAL file, when commits may be relaxed (a file database with [`Durability::Full`]).
    wal: Option<std::path::PathBuf>,
    /// The writer connection's `synchronous` setting as last set: 0 unknown, 1 NORMAL, 2 FULL.
    synchronous: std::sync::atomic::AtomicU8,
    /// The database file the writer opens a connection of its own to, for its batches of
    /// inserts (none in memory: that database is private to its one connection), and whether
    /// that connection starts with `synchronous = FULL`.
    file: Option<(std::path::PathBuf, bool)>,
    /// The writer's own connection, while it runs and once it could be opened
    /// ([`Dialect::writer_starts`]); only the writer's thread locks it.
    own: std::sync::Mutex<Option<OwnConnection>>,
}

/// A change of a writer connection's `synchronous` setting ([`SqliteDialect::synchronous_change`]).
pub struct SynchronousChange {
    /// The `PRAGMA` that makes it.
    pub sql: &'static str,
    /// The setting it makes: 1 NORMAL, 2 FULL.
    wanted: u8,
}

impl SynchronousChange {
    /// The change a commit that must (`durable`) or need not reach the disk needs on a
    /// connection whose setting is `set` (as [`SqliteDialect::synchronous`]'s), if any.
    fn from(set: u8, durable: bool) -> Option<SynchronousChange> {
        let wanted = if durable { 2 } else { 1 };
        if set == wanted {
            return None;
        }
        let sql = if durable { "PRAGMA synchronous = FULL" } else { "PRAGMA synchronous = NORMAL" };
        Some(SynchronousChange { sql, wanted })
    }
}

impl SqliteDialect {
    /// The change of `synchronous` a commit that must (`durable`) or need not reach the disk
    /// needs first, if any: none when commits are never relaxed (no WAL file) or when the
    /// setting is already right. The setting counts as unknown from here until
    /// [`SqliteDialect::synchronous_set`] says the `PRAGMA` ran: a failure leaves it in doubt.
    pub fn synchronous_change(&self, durable: bool) -> Option<SynchronousChange> {
        use std::sync::atomic::Ordering;
        self.wal.as_ref()?;
        let change = SynchronousChange::from(self.synchronous.load(Ordering::Relaxed), durable)?;
        self.synchronous.store(0, Ordering::Relaxed);
        Some(change)
    }

    /// Records that `change`'s `PRAGMA` ran.
    pub fn synchronous_set(&self, change: SynchronousChange) {
        self.synchronous.store(change.wanted, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a commit made after [`SqliteDialect::synchronous_change`]`(durable)` is forced
    /// to disk: always without a WAL file (nothing is relaxed), else when `durable`.
    pub fn forced(&self, durable: bool) -> bool {
        self.wal.is_none() || durable
    }
}

/// `query` with `args` bound in order.
fn bind_all<'q>(
    mut query: sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments>,
    args: Vec<Arg<'q>>,
) -> sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments> {
    for arg in args {
        query = match arg {
            Arg::Text(text) => query.bind(text),
            Arg::OptText(text) => query.bind(text),
            Arg::Int(value) => query.bind(value),
            Arg::Real(value) => query.bind(value),
        };
    }
    query
}

impl Dialect for SqliteDialect {
    type DB = Sqlite;

    const BEGIN: &'static str = "BEGIN IMMEDIATE";

    const LOCK_ROWS: &'static str = "";

    const WRITER_THREAD: bool = true;

    /// Without a busy wait (a reader in another process must not hold up this process's end),
    /// the log is checkpointed into the database, which is synced, and truncated; when another
    /// connection still reads an older snapshot, as much as it allows is checkpointed and the
    /// log is kept. A log left with many frames is read back whole by the next process that
    /// opens the database, before its first statement: about 1,000 page reads for a full log.
    /// An empty log costs the next process's first write two disk syncs instead (the new
    /// log's header and its folder), so one frame is written back at once: setting
    /// `user_version`, which nothing here uses, to 0 rewrites the database's first page. Its
    /// commit and those syncs happen here, at the end of this process.
    const CLOSE: &'static [&'static str] = &[
        "PRAGMA busy_timeout = 0",
        "PRAGMA wal_checkpoint(TRUNCATE)",
        "PRAGMA user_version = 0",
        "PRAGMA busy_timeout = 10000",
    ];

    async fn execute<'c>(conn: &'c mut SqliteConnection, sql: &'c str, args: Vec<Arg<'c>>) -> Result<u64, sqlx::Error> {
        let done = bind_all(sqlx::query(sqlx::AssertSqlSafe(sql)), args).execute(conn).await?;
        Ok(done.rows_affected())
    }

    fn fetch_all<'c>(
        conn: &'c mut SqliteConnection,
        sql: &'c str,
        args: Vec<Arg<'c>>,
    ) -> impl Future<Output = Result<Vec<sqlx::sqlite::SqliteRow>, sqlx::Error>> + Send + 'c {
        bind_all(sqlx::query(sqlx::AssertSqlSafe(sql)), args).fetch_all(conn)
    }

    fn fetch<'c>(
        conn: &'c mut SqliteConnection,
        sql: &'c str,
    ) -> futures::stream::BoxStream<'c, Result<sqlx::sqlite::SqliteRow, sqlx::Error>> {
        sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(conn)
    }

    fn fetch_optional<'c>(
        conn: &'c mut SqliteConnection,
        sql: &'c str,
        args: Vec<Arg<'c>>,
    ) -> impl Future<Output = Result<Option<sqlx::sqlite::SqliteRow>, sqlx::Error>> + Send + 'c {
        bind_all(sqlx::query(sqlx::AssertSqlSafe(sql)), args).fetch_optional(conn)
    }

    async fn insert_rows<'c>(
        conn: &'c mut SqliteConnection,
        path: &'c str,
        insert: &'c str,
        width: usize,
        values: Vec<Arg<'c>>,
    ) -> Result<(), StoreError> {
        super::sqlite_raw::insert_rows(conn, path, insert, width, &values).await
    }

    fn check_audit_rows<'c>(
        conn: &'c mut SqliteConnection,
        chain: &'c mut ChainState,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send + 'c {
        super::sqlite_raw::check_audit_rows(conn, chain)
    }

    fn node(&self) -> Option<&str> {
        None
    }

    async fn prepare_commit<'c>(
        &'c self,
        conn: &'c mut SqliteConnection,
        path: &'c str,
        durable: bool,
    ) -> Result<bool, StoreError> {
        if let Some(change) = self.synchronous_change(durable) {
            Self::execute(conn, change.sql, Vec::new())
                .await
                .map_err(|source| StoreError::Database { path: path.to_string(), source })?;
            self.synchronous_set(change);
        }
        Ok(self.forced(durable))
    }

    async fn apply_inserts<'c>(
        &'c self,
        conn: &'c mut SqliteConnection,
        shared: &'c super::work::Shared<Self>,
        works: &'c [&'c super::work::Work],
        durable: bool,
    ) -> Option<(Result<Vec<super::work::Applied>, super::work::BatchError>, bool)> {
        if !super::sqlite_raw::inserts_only(works) {
            return None;
        }
        let change = self.synchronous_change(durable);
        let pragma = change.as_ref().map(|c| c.sql);
        let (outcome, set) = super::sqlite_raw::apply_inserts(conn, shared, works, pragma).await;
        if let (true, Some(change)) = (set, change) {
            self.synchronous_set(change);
        }
        Some((outcome, self.forced(durable)))
    }

    fn apply_unpooled(
        &self,
        shared: &super::work::Shared<Self>,
        works: &[&super::work::Work],
        durable: bool,
    ) -> Option<(Result<Vec<super::work::Applied>, super::work::BatchError>, bool)> {
        if !super::sqlite_raw::inserts_only(works) {
            return None;
        }
        let mut slot = self.own.lock().ok()?;
        let own = slot.as_mut()?;
        let change = self.wal.as_ref().and_then(|_| SynchronousChange::from(own.synchronous(), durable));
        let (outcome, set) = super::sqlite_raw::apply_own(own, shared, works, change.as_ref().map(|c| c.sql));
        match change {
            Some(change) if set => own.set_synchronous(change.wanted),
            // The `PRAGMA` failed: the setting is in doubt.
            Some(_) => own.set_synchronous(0),
            None => {}
        }
        if own.in_transaction() {
            // A failed batch that could not be rolled back would keep the file's write lock
            // for as long as the process runs: closing the connection rolls it back, and the
            // writer goes on with sqlx's.
            tracing::warn!(path = %shared.path, "the writer's own connection was left in a transaction: closed");
            slot.take();
        }
        Some((outcome, self.forced(durable)))
    }

    /// Opens the writer's own connection to a database file (see
    /// [`super::sqlite_raw::OwnConnection`]); when it cannot be opened the writer takes sqlx's
    /// connection for every batch instead, as it does in memory.
    fn writer_starts(&self) {
        let Some((path, full)) = &self.file else { return };
        match OwnConnection::open(path, *full, BUSY_TIMEOUT) {
            Ok(own) => {
                if let Ok(mut slot) = self.own.lock() {
                    *slot = Some(own);
                }
            }
            Err(message) => {
                tracing::warn!(path = %path.display(), %message, "the writer's own connection could not be opened")
            }
        }
    }

    /// Also after a panic of the writer (the slot's lock then poisoned): closing the
    /// connection rolls back a transaction it had open.
    fn writer_stops(&self) {
        self.own.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    }

    fn sync_relaxed(&self) -> std::io::Result<()> {
        let Some(wal) = &self.wal else { return Ok(()) };
        match std::fs::File::open(wal) {
            Ok(file) => file.sync_data(),
            // No WAL file: its content was checkpointed into the database, which syncs both.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn lost_runs<'a>(
        &'a self,
        pool: &'a Pool<Sqlite>,
        path: &'a str,
        run_ids: &'a [String],
    ) -> Result<Vec<String>, StoreError> {
        let db = |source| StoreError::Database { path: path.to_string(), source };
        let mut lost = Vec::new();
        let mut conn = pool.acquire().await.map_err(db)?;
        for id in run_ids {
            let row =
                Self::fetch_optional(&mut conn, "SELECT status FROM runs WHERE id = ?", args![id]).await.map_err(db)?;
            if let Some(row) = row
                && row.text("status").map_err(db)? != RunStatus::Running.as_str()
            {
                lost.push(id.clone());
            }
        }
        Ok(lost)
    }
}

impl SqlStore<SqliteDialect> {
    /// Opens (creating if needed) the database at `path` and applies the schema migrations.
    ///
    /// A missing parent directory is created with mode 0700 and a new file with mode 0600; an
    /// existing file readable by others is restricted to 0600 (the database holds run content).
    /// Sets WAL mode, `synchronous` from `options.durability` and a 10 s busy timeout. Must be
    /// called inside a Tokio runtime (sqlx's pools use it); the writer runs on a thread of its
    /// own.
    ///
    /// Errors: [`StoreError::Io`] (directory, file or permissions, or the writer's thread),
    /// [`StoreError::Open`], [`StoreError::Migrate`].
    pub async fn open(path: &Path, options: StoreOptions) -> Result<Self, StoreError> {
        let display = path.display().to_string();
        let in_wal_mode = prepare_file(path).map_err(|source| StoreError::Io { path: display.clone(), source })?;
        let synchronous = match options.durability {
            Durability::Full => SqliteSynchronous::Full,
            Durability::Relaxed => SqliteSynchronous::Normal,
        };
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(synchronous)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(false)
            .disable_statement_logging();
        // Processes opening the same new file at once would race on switching it to WAL and on
        // the migrations: opening is serialised with a lock file beside the database.
        let lock_path = path.with_file_name(format!(
            "{}.open-lock",
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        ));
        let io = |source| StoreError::Io { path: display.clone(), source };
        let lock = match crate::anchor::FileLock::try_acquire(&lock_path).map_err(io)? {
            Some(lock) => lock,
            None => tokio::task::spawn_blocking(move || crate::anchor::FileLock::acquire(&lock_path))
                .await
                .map_err(|e| io(std::io::Error::other(e.to_string())))?
                .map_err(io)?,
        };
        let (write, read) = pools(connect, in_wal_mode, &display).await?;
        drop(lock);
        let wal = (options.durability == Durability::Full).then(|| {
            let mut name = path.as_os_str().to_owned();
            name.push("-wal");
            std::path::PathBuf::from(name)
        });
        let file = Some((path.to_path_buf(), options.durability == Durability::Full));
        let dialect = SqliteDialect { wal, file, ..Default::default() };
        Self::start(display, write, read, &options, dialect)
    }

    /// Opens the store of state directory `dir` as every `steward` command does:
    /// `dir/steward.db` ([`STATE_DB_FILE`]) with the audit anchor `dir/audit.anchor`
    /// ([`STATE_ANCHOR_FILE`]) unless `options` names another anchor. Errors as
    /// [`SqlStore::open`].
    pub async fn open_state_dir(dir: &Path, mut options: StoreOptions) -> Result<Self, StoreError> {
        options.audit_anchor.get_or_insert_with(|| dir.join(STATE_ANCHOR_FILE));
        Self::open(&dir.join(STATE_DB_FILE), options).await
    }

    /// A private database in memory, gone when the last clone is dropped. Reads and writes share
    /// its single connection.
    pub async fn open_in_memory() -> Result<Self, StoreError> {
        let display = ":memory:".to_string();
        let connect = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(|source| StoreError::Open { path: display.clone(), source })?
            .foreign_keys(false)
            .disable_statement_logging();
        // One connection that never expires: closing it would drop the database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(connect)
            .await
            .map_err(|source| StoreError::Open { path: display.clone(), source })?;
        migrate_with_retry(&pool, &display).await?;
        Self::start(display, pool.clone(), pool, &StoreOptions::default(), SqliteDialect::default())
    }
}

/// The write and read pools of a database file opened with `connect`, its schema migrated.
///
/// A file in WAL mode already (`in_wal_mode`) is first asked on a read connection whether its
/// schema is current ([`schema_is_current`]): then nothing needs sqlx's write connection at
/// start, and it opens when a write first takes it (the writer inserts on a connection of its
/// own, see [`SqliteDialect::writer_starts`]). A new file, or one whose schema is behind, opens
/// the write connection at once: switching the file to WAL mode and the migrations run on it.
///
/// Errors: [`StoreError::Open`] when the write connection cannot be opened,
/// [`StoreError::Migrate`].
async fn pools(
    connect: SqliteConnectOptions,
    in_wal_mode: bool,
    path: &str,
) -> Result<(SqlitePool, SqlitePool), StoreError> {
    let read = SqlitePoolOptions::new().max_connections(READ_POOL_SIZE).connect_lazy_with(connect.clone());
    let write =
        SqlitePoolOptions::new().max_connections(1).idle_timeout(None).max_lifetime(None).test_before_acquire(false);
    // The read connection opened for the question waits in the pool for the first read (crash
    // recovery's). A failure leaves the question unanswered, for the migrations to settle.
    if in_wal_mode && schema_is_current(&read).await {
        settle(&read).await;
        return Ok((write.connect_lazy_with(connect), read));
    }
    let write = write
        .min_connections(1)
        .connect_with(connect)
        .await
        .map_err(|source| StoreError::Open { path: path.to_string(), source })?;
    migrate_with_retry(&write, path).await?;
    Ok((write, read))
}

/// Waits, for a few turns of the runtime at most, until the connection that answered the
/// schema question is idle in `pool` again: sqlx gives a connection back from a task of its
/// own, after a round trip to the connection's thread, and the first read (crash recovery's)
/// that came before would open a second connection (a thread, the file, the schema parsed
/// again) instead of taking it.
async fn settle(pool: &SqlitePool) {
    for _ in 0..64 {
        if pool.num_idle() > 0 {
            return;
        }
        tokio::task::yield_now().await;
    }
}

/// Whether the database records every migration already ([`migrate::is_current`], one
/// statement on a connection of `pool`); false when it cannot be read.
async fn schema_is_current(pool: &SqlitePool) -> bool {
    let applied = sqlx::query_as::<_, (i64, Vec<u8>, bool)>(migrate::APPLIED).fetch_all(pool).await;
    applied.is_ok_and(|applied| migrate::is_current(migrate::sqlite(), &applied))
}

/// Creates the parent directory (0700) and the file (0600) before SQLite does, so neither is
/// ever readable by others; tightens an existing file that is. True when the file holds a
/// database in WAL mode already (its header's read and write versions are 2, see SQLite's
/// "Database File Format", section 1.3).
fn prepare_file(path: &Path) -> std::io::Result<bool> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        let mut dir = std::fs::DirBuilder::new();
        dir.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut dir, 0o700);
        dir.create(parent)?;
    }
    let mut file = std::fs::OpenOptions::new();
    file.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
    let handle = file.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = handle.metadata()?.permissions().mode();
        if mode & 0o077 != 0 {
            handle.set_permissions(std::fs::Permissions::from_mode(mode & 0o700))?;
        }
    }
    let mut header = [0u8; 20];
    let in_wal_mode = std::io::Read::read_exact(&mut &handle, &mut header).is_ok()
        && header.starts_with(b"SQLite format 3\0")
        && header[18..20] == [2, 2];
    Ok(in_wal_mode)
}

/// Applies the migrations, unless the database records every one of them already
/// ([`migrate::is_current`], one statement). SQLite migrations take no lock, so two processes
/// opening a new file at once can collide; the loser retries and then finds the schema in place.
async fn migrate_with_retry(pool: &SqlitePool, path: &str) -> Result<(), StoreError> {
    if schema_is_current(pool).await {
        return Ok(());
    }
    let mut attempt = 0;
    loop {
        match migrate::sqlite().run(pool).await {
            Ok(()) => return Ok(()),
            Err(_) if attempt < 3 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(50 * attempt)).await;
            }
            Err(source) => return Err(StoreError::Migrate { path: path.to_string(), source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `prepare_file` tells a database in WAL mode from a new or empty file and from one in
    /// rollback-journal mode, and both kinds open.
    #[tokio::test]
    async fn prepare_file_recognises_a_database_in_wal_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join("steward.db");
        assert!(!prepare_file(&path).unwrap(), "a new file");
        let store = SqlStore::<SqliteDialect>::open(&path, StoreOptions::default()).await.unwrap();
        drop(store);
        assert!(prepare_file(&path).unwrap(), "a database made by open");
        let rollback = dir.path().join("rollback.db");
        let connect = SqliteConnectOptions::new().filename(&rollback).create_if_missing(true);
        let mut conn = sqlx::ConnectOptions::connect(&connect).await.unwrap();
        sqlx::query("CREATE TABLE t (x)").execute(&mut conn).await.unwrap();
        drop(conn);
        assert!(!prepare_file(&rollback).unwrap(), "a database in rollback-journal mode");
        let store = SqlStore::<SqliteDialect>::open(&rollback, StoreOptions::default()).await.unwrap();
        drop(store);
        assert!(prepare_file(&rollback).unwrap(), "switched to WAL by open");
    }

    /// A new file opens sqlx's write connection at once (the switch to WAL mode and the
    /// migrations run on it); a database in WAL mode whose schema is current leaves it to the
    /// first write that takes it, and keeps the read connection that answered.
    #[tokio::test]
    async fn the_write_connection_of_a_current_database_opens_when_first_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let connect =
            || SqliteConnectOptions::new().filename(&path).create_if_missing(true).journal_mode(SqliteJournalMode::Wal);
        let (write, read) = pools(connect(), prepare_file(&path).unwrap(), "s.db").await.unwrap();
        assert_eq!(write.size(), 1, "a new file");
        write.close().await;
        read.close().await;
        let (write, read) = pools(connect(), prepare_file(&path).unwrap(), "s.db").await.unwrap();
        assert_eq!(write.size(), 0, "a current database in WAL mode");
        assert_eq!(read.size(), 1);
        drop(write.acquire().await.unwrap());
        assert_eq!(write.size(), 1, "opened by the first taker");
        sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 11").execute(&write).await.unwrap();
        write.close().await;
        read.close().await;
        let (write, _read) = pools(connect(), prepare_file(&path).unwrap(), "s.db").await.unwrap();
        assert_eq!(write.size(), 1, "a schema behind this build's: migrated at once");
        assert!(schema_is_current(&write).await);
    }

    /// A file store's writer inserts on a connection of its own, closed when the writer stops;
    /// one in memory has none (its database is private to the pool's connection).
    #[tokio::test]
    async fn the_writer_of_a_file_store_has_a_connection_of_its_own() {
        use crate::Store;
        let dir = tempfile::tempdir().unwrap();
        let store = SqlStore::<SqliteDialect>::open(&dir.path().join("s.db"), StoreOptions::default()).await.unwrap();
        store.flush().await.unwrap();
        assert!(store.shared.dialect.own.lock().unwrap().is_some());
        let shared = std::sync::Arc::clone(&store.shared);
        drop(store);
        for _ in 0..500 {
            if shared.dialect.own.lock().unwrap().is_none() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(shared.dialect.own.lock().unwrap().is_none(), "closed when the writer stopped");
        let memory = SqlStore::<SqliteDialect>::open_in_memory().await.unwrap();
        memory.flush().await.unwrap();
        assert!(memory.shared.dialect.own.lock().unwrap().is_none());
    }

    /// `close` gives its connection back with the busy timeout every connection opens with.
    #[test]
    fn close_restores_the_busy_timeout() {
        let restore = format!("PRAGMA busy_timeout = {}", BUSY_TIMEOUT.as_millis());
        assert_eq!(SqliteDialect::CLOSE.last().copied(), Some(restore.as_str()));
        assert_eq!(SqliteDialect::CLOSE.first().copied(), Some("PRAGMA busy_timeout = 0"));
    }
}
