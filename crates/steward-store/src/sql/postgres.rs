//! The PostgreSQL store, for several Steward processes (nodes) sharing one database.
//!
//! Same schema as SQLite (`migrations/postgres/*.sql`, applied on open; sqlx serialises
//! concurrent migrations with an advisory lock), same text forms (RFC 3339 `TEXT` timestamps,
//! so the audit hash input is byte for byte the one SQLite hashes) and the same SQL. What differs
//! lives here: every write transaction is `READ COMMITTED` and takes the locks its batch needs
//! first, always in the same order ([`lock_batch`]): the row of `audit_chain_lock` (`SELECT …
//! FOR UPDATE`) when it appends to the audit chain, then one transaction-scoped advisory lock per
//! owner whose facts it inserts (sorted). Runs are stamped with their node and hold leases
//! ([`super::leases`]); every commit sends change notices ([`super::notify`]). A commit is
//! durable when PostgreSQL says so (`synchronous_commit`, on by default).

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use sqlx::postgres::{PgArguments, PgConnectOptions, PgConnection, PgPoolOptions, PgRow};
use sqlx::{ConnectOptions, Connection, PgPool, Postgres};
use tokio::sync::broadcast;

use super::SqlStore;
use super::chain_state::ChainState;
use super::dialect::{Arg, Dialect, numbered};
use super::migrate;
use super::notify::{self, CONNECT_TIMEOUT, Hub};
use super::work::{Applied, Work};
use crate::{Change, Durability, RunRecord, StoreError, StoreOptions};

/// Read connections per store.
const READ_POOL_SIZE: u32 = 4;

/// Lease lifetime until a TTL is given: 15 s.
pub const DEFAULT_TTL_MS: u64 = 15_000;

/// The transaction every batch and ledger decision runs in. READ COMMITTED whatever the server's
/// default: each statement sees what other transactions committed before it, so the chain head
/// read right after taking the chain lock includes the last append of every other writer.
const BEGIN: &str = "BEGIN ISOLATION LEVEL READ COMMITTED";

/// True when `url` names a PostgreSQL database: it starts with `postgres://` or
/// `postgresql://` (the scheme compared without regard to case).
pub fn is_postgres_url(url: &str) -> bool {
    let lower = url.get(..13).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// `url` as it may be shown: scheme, user, host, port and database, without a password and
/// without the query string (which may carry one, e.g. `?password=…`).
pub fn redact_database_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split_once(':').map_or(user_info, |(user, _)| user);
            format!("{user}@{host}")
        }
        None => authority.to_string(),
    };
    let path = tail.split(['?', '#']).next().unwrap_or("");
    if scheme.is_empty() { format!("{authority}{path}") } else { format!("{scheme}://{authority}{path}") }
}

/// The node name of this machine: its host name (`gethostname(2)`), or `localhost` when it has
/// none. Runs are stamped with the node that executes them, so that crash recovery only judges
/// the process ids of runs started on the same machine.
#[allow(unsafe_code, reason = "gethostname(2) has no safe wrapper in std or the crate's dependencies")]
pub fn host_node() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into the buffer we own.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".to_string();
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..len]).trim().to_string();
    if name.is_empty() { "localhost".to_string() } else { name }
}

/// A [`Store`](crate::Store) in a PostgreSQL database shared by several nodes. Cheap to clone:
/// clones share the writer.
///
/// Dropping the last clone lets the writer finish what is queued and stop; call
/// [`Store::flush`](crate::Store::flush) before the process exits so queued writes are not lost.
pub type PgStore = SqlStore<PgDialect>;

/// PostgreSQL's side of the SQL store: numbered placeholders, `READ COMMITTED` transactions
/// with row and advisory locks, the node, its leases and change notices.
#[derive(Debug)]
pub struct PgDialect {
    /// The node that runs this store (see [`PgStore::node`]).
    pub(super) node: String,
    /// Lifetime in milliseconds of the lease a run gets when it is inserted (see
    /// [`super::leases`]); the last TTL given to `renew_leases`, 15,000 until then.
    pub(super) lease_ttl_ms: AtomicU64,
    /// Change notices of every node (see [`super::notify`]).
    hub: Arc<Hub>,
}

/// `query` with `args` bound in order.
fn bind_all<'q>(
    mut query: sqlx::query::Query<'q, Postgres, PgArguments>,
    args: Vec<Arg<'q>>,
) -> sqlx::query::Query<'q, Postgres, PgArguments> {
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

impl Dialect for PgDialect {
    type DB = Postgres;

    const BEGIN: &'static str = BEGIN;

    const LOCK_ROWS: &'static str = " FOR UPDATE";

    async fn execute<'c>(conn: &'c mut PgConnection, sql: &'c str, args: Vec<Arg<'c>>) -> Result<u64, sqlx::Error> {
        let done = bind_all(sqlx::query(sqlx::AssertSqlSafe(numbered(sql))), args).execute(conn).await?;
        Ok(done.rows_affected())
    }

    fn fetch_all<'c>(
        conn: &'c mut PgConnection,
        sql: &'c str,
        args: Vec<Arg<'c>>,
    ) -> impl Future<Output = Result<Vec<PgRow>, sqlx::Error>> + Send + 'c {
        bind_all(sqlx::query(sqlx::AssertSqlSafe(numbered(sql))), args).fetch_all(conn)
    }

    fn fetch<'c>(
        conn: &'c mut PgConnection,
        sql: &'c str,
    ) -> futures::stream::BoxStream<'c, Result<PgRow, sqlx::Error>> {
        sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(conn)
    }

    fn check_audit_rows<'c>(
        conn: &'c mut PgConnection,
        chain: &'c mut ChainState,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send + 'c {
        super::verify::check_rows::<Self>(conn, chain)
    }

    fn fetch_optional<'c>(
        conn: &'c mut PgConnection,
        sql: &'c str,
        args: Vec<Arg<'c>>,
    ) -> impl Future<Output = Result<Option<PgRow>, sqlx::Error>> + Send + 'c {
        bind_all(sqlx::query(sqlx::AssertSqlSafe(numbered(sql))), args).fetch_optional(conn)
    }

    fn node(&self) -> Option<&str> {
        Some(&self.node)
    }

    fn lock_batch<'c>(
        &'c self,
        conn: &'c mut PgConnection,
        path: &'c str,
        works: &'c [&'c Work],
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'c {
        lock_batch(conn, path, works)
    }

    fn run_inserted<'c>(
        &'c self,
        conn: &'c mut PgConnection,
        path: &'c str,
        run_id: &'c str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'c {
        self.insert_lease(conn, path, run_id)
    }

    fn notify<'c>(
        &'c self,
        conn: &'c mut PgConnection,
        path: &'c str,
        works: &'c [&'c Work],
        results: &'c [Applied],
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'c {
        notify::send(conn, path, works, results)
    }

    fn lost_runs<'a>(
        &'a self,
        pool: &'a PgPool,
        path: &'a str,
        run_ids: &'a [String],
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send + 'a {
        self.lost(pool, path, run_ids)
    }

    fn renew_leases<'a>(
        &'a self,
        pool: &'a PgPool,
        path: &'a str,
        pid: u32,
        ttl: Duration,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send + 'a {
        self.renew(pool, path, pid, ttl)
    }

    fn take_over<'a>(
        &'a self,
        pool: &'a PgPool,
        path: &'a str,
        ttl: Duration,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RunRecord>, StoreError>> + Send + 'a {
        self.take_over_expired(pool, path, ttl, limit)
    }

    fn subscribe(&self) -> Option<broadcast::Receiver<Change>> {
        Some(self.hub.subscribe())
    }
}

/// Takes the locks the batch needs, in a fixed order so that two writers never wait for each
/// other in a cycle over them: the audit chain lock, then the fact owners' locks (sorted).
async fn lock_batch(conn: &mut PgConnection, path: &str, works: &[&Work]) -> Result<(), StoreError> {
    let db = |source| StoreError::Database { path: path.to_string(), source };
    if works.iter().any(|w| matches!(w, Work::Audit(_) | Work::GuardedAudit(..))) {
        let locked: Option<(i32,)> = sqlx::query_as("SELECT id FROM audit_chain_lock WHERE id = 1 FOR UPDATE")
            .fetch_optional(&mut *conn)
            .await
            .map_err(db)?;
        if locked.is_none() {
            return Err(StoreError::Corrupt {
                path: path.to_string(),
                what: "audit_chain_lock: its row is missing, so appends cannot be serialised".into(),
            });
        }
    }
    let mut owners: Vec<&str> = works
        .iter()
        .filter_map(|w| if let Work::InsertFact { fact, .. } = w { Some(fact.owner_id.as_str()) } else { None })
        .collect();
    owners.sort_unstable();
    owners.dedup();
    for owner in owners {
        // Counting an owner's facts and inserting one must not interleave with another
        // writer doing the same: a lock per (schema, owner) until the commit.
        sqlx::query(
            "SELECT pg_advisory_xact_lock(hashtextextended('steward.facts/' || current_schema() || '/' || $1, 0))",
        )
        .bind(owner)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    }
    Ok(())
}

impl SqlStore<PgDialect> {
    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/database`,
    /// libpq-style query parameters such as `options[search_path]=…` accepted), applies the
    /// schema migrations and starts the writer. The node is [`host_node`]. Must be called inside
    /// a Tokio runtime.
    ///
    /// `options.durability`: [`Durability::Full`] keeps the server's `synchronous_commit`
    /// (on by default: a commit is on disk); [`Durability::Relaxed`] sets it `off` for this
    /// store's writes. `options.audit_anchor` works as for SQLite.
    ///
    /// Errors: [`StoreError::Open`] (a bad URL or no connection), [`StoreError::Migrate`].
    /// Messages name the database without its password.
    pub async fn open(url: &str, options: StoreOptions) -> Result<Self, StoreError> {
        let connect = PgConnectOptions::from_str(url)
            .map_err(|source| StoreError::Open { path: redact_database_url(url), source })?;
        Self::open_with(connect, options, &host_node()).await
    }

    /// Like [`PgStore::open`], with connect options built by the caller and an explicit node
    /// name (tests run two "nodes" in one process).
    pub async fn open_with(connect: PgConnectOptions, options: StoreOptions, node: &str) -> Result<Self, StoreError> {
        let display = display_name(&connect);
        let connect = connect.application_name("steward").disable_statement_logging();
        let write_connect = match options.durability {
            Durability::Full => connect.clone(),
            Durability::Relaxed => connect.clone().options([("synchronous_commit", "off")]),
        };
        // One connection first, so that a server that refuses or a bad password is reported
        // as such (a pool would only say that it timed out), and the migrations run on it.
        let mut first = match tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect_with(&write_connect)).await {
            Ok(connected) => connected.map_err(|source| StoreError::Open { path: display.clone(), source })?,
            Err(_) => {
                let timed_out = std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer within 10 s");
                return Err(StoreError::Open { path: display.clone(), source: sqlx::Error::Io(timed_out) });
            }
        };
        // The migrator takes an advisory lock for its three statements; a database that records
        // every migration already is recognised with one.
        let applied = sqlx::query_as::<_, (i64, Vec<u8>, bool)>(migrate::APPLIED).fetch_all(&mut first).await;
        if !applied.is_ok_and(|applied| migrate::is_current(migrate::postgres(), &applied)) {
            // `run_direct` is what `run` does once it has a connection. Through `run`, its
            // `Acquire<'a>` bound on `&mut PgConnection` keeps the compiler from proving this
            // future `Send` (sqlx's own comment on `run_direct`), and a store could then not be
            // opened on another task (`tokio::spawn`).
            migrate::postgres()
                .run_direct(None, &mut first, false)
                .await
                .map_err(|source| StoreError::Migrate { path: display.clone(), source })?;
        }
        let _ = first.close().await;
        let write = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .acquire_timeout(CONNECT_TIMEOUT)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with(write_connect);
        let hub = Arc::new(Hub::new(connect.clone(), display.clone()));
        let read = PgPoolOptions::new()
            .max_connections(READ_POOL_SIZE)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_lazy_with(connect);
        let dialect = PgDialect { node: node.to_string(), lease_ttl_ms: AtomicU64::new(DEFAULT_TTL_MS), hub };
        Self::start(display, write, read, &options, dialect)
    }

    /// The node this store writes as: runs it inserts are stamped with it, and
    /// [`crate::RunStore::local_running_runs`] returns only those.
    pub fn node(&self) -> &str {
        &self.shared.dialect.node
    }
}

/// `postgres://user@host:port/database` (or `postgres://user@[socket]/database`): what messages
/// show of a connection, never its password.
fn display_name(connect: &PgConnectOptions) -> String {
    let host = match connect.get_socket() {
        Some(socket) => format!("[{}]", socket.display()),
        None => format!("{}:{}", connect.get_host(), connect.get_port()),
    };
    format!("postgres://{}@{host}/{}", connect.get_username(), connect.get_database().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    /// Opening either store is a `Send` future (this test fails to compile otherwise), so a
    /// front end can open its store on a task of its own while it does other work.
    #[test]
    fn opening_a_store_can_run_on_another_task() {
        fn send<T: Send>(future: T) -> T {
            future
        }
        let dir = std::path::PathBuf::from("unused");
        drop(send(crate::SqliteStore::open_state_dir(&dir, crate::StoreOptions::default())));
        drop(send(crate::PgStore::open_with(crate::PgConnectOptions::new(), crate::StoreOptions::default(), "node")));
    }

    use super::*;

    #[test]
    fn urls_are_recognised_and_shown_without_password() {
        assert!(is_postgres_url("postgres://u@h/db"));
        assert!(is_postgres_url("PostgreSQL://u@h/db"));
        assert!(!is_postgres_url("sqlite:///tmp/x.db"));
        assert!(!is_postgres_url("postgres:/u@h"));
        assert!(!is_postgres_url(""));
        assert_eq!(
            redact_database_url("postgres://alice:s3cret@db.example:5433/steward"),
            "postgres://alice@db.example:5433/steward"
        );
        assert_eq!(
            redact_database_url("postgresql://bob:p%40ss@h/db?password=s3cret&sslmode=disable"),
            "postgresql://bob@h/db"
        );
        assert_eq!(redact_database_url("postgres://h/db"), "postgres://h/db");
        assert_eq!(redact_database_url("postgres://:pw@h"), "postgres://@h");
        assert_eq!(redact_database_url("postgres://u:a@b@h/db"), "postgres://u@h/db", "an unencoded @ in the password");
    }

    #[test]
    fn display_name_has_no_password() {
        let connect =
            PgConnectOptions::from_str("postgres://alice:s3cret@db.example:5433/steward?password=other").unwrap();
        let shown = display_name(&connect);
        assert_eq!(shown, "postgres://alice@db.example:5433/steward");
        assert!(!shown.contains("s3cret") && !shown.contains("other"));
    }

    #[test]
    fn the_host_node_is_never_empty() {
        assert!(!host_node().is_empty());
    }
}
