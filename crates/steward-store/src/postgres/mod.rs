//! The PostgreSQL store, for several Steward processes (nodes) sharing one database.
//!
//! Same schema as SQLite (`migrations/postgres/*.sql`, applied on open; sqlx serialises
//! concurrent migrations with an advisory lock), same text forms (RFC 3339 `TEXT` timestamps,
//! so the audit hash input is byte for byte the one SQLite hashes) and the same contracts:
//! writes of one store go through a single writer task ([`writer`]) with group commit, reads use
//! a separate pool. The audit chain stays ONE chain with several writers: every transaction
//! that appends locks the row of `audit_chain_lock` first and reads the chain head after it.
//! A commit is durable when PostgreSQL says so (`synchronous_commit`, on by default).

mod journal;
mod leases;
mod ledger;
mod notify;
mod rows;
mod writer;

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};
use steward_protocol::{ApprovalRequest, AuditEntry, AuditRecord, Event};
use tokio::sync::{mpsc, oneshot};

use self::rows::{
    APPROVAL_COLUMNS, AUDIT_COLUMNS, FACT_COLUMNS, MCP_TOKEN_COLUMNS, RUN_COLUMNS, approval_from_row, audit_from_row,
    body_from_row, event_from_row, fact_from_row, mcp_token_from_row, run_from_row,
};
use self::writer::{Document, DocumentTable, Pending, Reply, Shared, Work};
use crate::chain::timestamp_text;
use crate::{
    ApprovalDecisionRecord, AuditVerification, Change, ConversationRecord, Durability, FactRecord, GrantRecord,
    McpTokenRecord, RollbackRecord, RunRecord, RunStatus, Store, StoreError, StoreOptions, verify_chain,
};

/// Read connections per store.
const READ_POOL_SIZE: u32 = 4;

/// How long opening waits for a connection before failing (10 s).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema, applied on open (`migrations/postgres/*.sql`).
static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

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

/// A [`Store`] in a PostgreSQL database shared by several nodes. Cheap to clone: clones share
/// the writer.
///
/// Dropping the last clone lets the writer finish what is queued and stop; call
/// [`Store::flush`] before the process exits so queued writes are not lost.
#[derive(Clone, Debug)]
pub struct PgStore {
    shared: Arc<Shared>,
    read: PgPool,
    queue: mpsc::Sender<Pending>,
    /// Change notices of every node (see [`notify`]).
    hub: Arc<notify::Hub>,
}

impl PgStore {
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
        MIGRATOR.run(&mut first).await.map_err(|source| StoreError::Migrate { path: display.clone(), source })?;
        let _ = first.close().await;
        let write = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .acquire_timeout(CONNECT_TIMEOUT)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with(write_connect);
        let hub = Arc::new(notify::Hub::new(connect.clone(), display.clone()));
        let read = PgPoolOptions::new()
            .max_connections(READ_POOL_SIZE)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_lazy_with(connect);
        let shared = Arc::new(Shared {
            path: display,
            node: node.to_string(),
            deferred: Mutex::new(None),
            anchor: options.audit_anchor.clone(),
            lease_ttl_ms: std::sync::atomic::AtomicU64::new(leases::DEFAULT_TTL_MS),
        });
        let (queue, receiver) = mpsc::channel(writer::QUEUE_CAPACITY);
        tokio::spawn(writer::run(write, Arc::clone(&shared), receiver));
        Ok(PgStore { shared, read, queue, hub })
    }

    /// The database as shown in messages: `postgres://user@host:port/database`, no password.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The node this store writes as: runs it inserts are stamped with it, and
    /// [`Store::local_running_runs`] returns only those.
    pub fn node(&self) -> &str {
        &self.shared.node
    }

    fn db(&self) -> impl Fn(sqlx::Error) -> StoreError + '_ {
        |source| StoreError::Database { path: self.shared.path.clone(), source }
    }

    fn closed(&self) -> StoreError {
        StoreError::Closed { path: self.shared.path.clone() }
    }

    async fn enqueue(&self, work: Work, reply: Reply) -> Result<(), StoreError> {
        self.queue.send(Pending { work, reply }).await.map_err(|_| self.closed())
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

    async fn put_document<T: serde::Serialize>(
        &self,
        table: DocumentTable,
        id: &str,
        key: &str,
        created_at: &steward_protocol::Timestamp,
        record: &T,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_string(record).map_err(|e| StoreError::Invalid {
            path: self.path().to_string(),
            what: format!("{} record is not serialisable ({e})", table.names().0),
        })?;
        let doc =
            Document { table, id: id.to_string(), key: key.to_string(), created_at: timestamp_text(created_at), body };
        self.write(Work::Document(Box::new(doc))).await
    }

    async fn documents<T: serde::de::DeserializeOwned>(
        &self,
        table: DocumentTable,
        key: &str,
    ) -> Result<Vec<T>, StoreError> {
        let (name, column) = table.names();
        // Reads see every write queued before them.
        self.flush().await?;
        let sql = format!("SELECT body FROM {name} WHERE {column} = $1 ORDER BY created_at, id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(key).fetch_all(&self.read).await.map_err(self.db())?;
        rows.iter().map(|row| body_from_row(self.path(), name, row)).collect()
    }

    /// Compares a valid chain with the anchor file, if there is one (as the SQLite store does).
    fn check_anchor(
        &self,
        records: &[AuditRecord],
        verdict: AuditVerification,
    ) -> Result<AuditVerification, StoreError> {
        let Some(anchor_path) = &self.shared.anchor else { return Ok(verdict) };
        crate::anchor::check(anchor_path, records, verdict)
            .map_err(|e| StoreError::Io { path: anchor_path.display().to_string(), source: e })
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

#[async_trait]
impl Store for PgStore {
    async fn insert_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.write(Work::InsertRun(Box::new(run.clone()))).await
    }

    async fn update_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.write(Work::UpdateRun(Box::new(run.clone()))).await
    }

    async fn finish_run(&self, run: &RunRecord) -> Result<bool, StoreError> {
        self.write_flag(Work::FinishRun(Box::new(run.clone()))).await
    }

    async fn get_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&self.read).await.map_err(self.db())?;
        row.map(|row| run_from_row(self.path(), &row)).transpose()
    }

    async fn list_runs(&self, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at DESC, id DESC LIMIT $1");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(i64::from(limit))
            .fetch_all(&self.read)
            .await
            .map_err(self.db())?;
        rows.iter().map(|row| run_from_row(self.path(), row)).collect()
    }

    async fn runs_with_status(&self, status: RunStatus) -> Result<Vec<RunRecord>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE status = $1 ORDER BY created_at, id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(status.as_str())
            .fetch_all(&self.read)
            .await
            .map_err(self.db())?;
        rows.iter().map(|row| run_from_row(self.path(), row)).collect()
    }

    async fn local_running_runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE status = $1 AND node = $2 ORDER BY created_at, id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(RunStatus::Running.as_str())
            .bind(&self.shared.node)
            .fetch_all(&self.read)
            .await
            .map_err(self.db())?;
        rows.iter().map(|row| run_from_row(self.path(), row)).collect()
    }

    async fn append_event(&self, event: &Event) -> Result<(), StoreError> {
        self.enqueue(Work::Event(Box::new(event.clone())), Reply::Nobody).await
    }

    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<Event>, StoreError> {
        // Read our own queued events: wait until they are committed.
        self.write(Work::Barrier).await?;
        let rows = sqlx::query("SELECT body FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq")
            .bind(run_id)
            .bind(i64::try_from(after_seq).unwrap_or(i64::MAX))
            .fetch_all(&self.read)
            .await
            .map_err(self.db())?;
        rows.iter().map(|row| event_from_row(self.path(), row)).collect()
    }

    async fn upsert_approval(&self, approval: &ApprovalRequest) -> Result<(), StoreError> {
        self.write(Work::Approval(Box::new(approval.clone()))).await
    }

    async fn approvals(&self, run_id: &str) -> Result<Vec<ApprovalRequest>, StoreError> {
        let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE run_id = $1 ORDER BY created_at, id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(run_id).fetch_all(&self.read).await.map_err(self.db())?;
        rows.iter().map(|row| approval_from_row(self.path(), row)).collect()
    }

    async fn upsert_rollback(&self, record: &RollbackRecord) -> Result<(), StoreError> {
        self.put_document(DocumentTable::Rollbacks, &record.token, &record.run_id, &record.created_at, record).await
    }

    async fn rollbacks(&self, run_id: &str) -> Result<Vec<RollbackRecord>, StoreError> {
        let mut records: Vec<RollbackRecord> = self.documents(DocumentTable::Rollbacks, run_id).await?;
        records.sort_by_key(|r| r.step);
        Ok(records)
    }

    async fn upsert_grant(&self, grant: &GrantRecord) -> Result<(), StoreError> {
        self.put_document(DocumentTable::Grants, &grant.id, &grant.owner_id, &grant.created_at, grant).await
    }

    async fn grants(&self, owner_id: &str) -> Result<Vec<GrantRecord>, StoreError> {
        self.documents(DocumentTable::Grants, owner_id).await
    }

    async fn insert_fact(&self, fact: &FactRecord, max_per_owner: u32) -> Result<bool, StoreError> {
        self.write_flag(Work::InsertFact { fact: Box::new(fact.clone()), max_per_owner }).await
    }

    async fn facts(&self, owner_id: &str) -> Result<Vec<FactRecord>, StoreError> {
        // Reads see every write queued before them.
        self.write(Work::Barrier).await?;
        let sql = format!("SELECT {FACT_COLUMNS} FROM facts WHERE owner_id = $1 ORDER BY created_at, id");
        let rows =
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(owner_id).fetch_all(&self.read).await.map_err(self.db())?;
        rows.iter().map(|row| fact_from_row(self.path(), row)).collect()
    }

    async fn delete_fact(&self, owner_id: &str, id: &str) -> Result<bool, StoreError> {
        self.write_flag(Work::DeleteFact { owner_id: owner_id.to_string(), id: id.to_string() }).await
    }

    async fn upsert_conversation(&self, c: &ConversationRecord) -> Result<(), StoreError> {
        self.put_document(DocumentTable::Conversations, &c.id, &c.owner_id, &c.created_at, c).await
    }

    async fn conversations(&self, owner_id: &str) -> Result<Vec<ConversationRecord>, StoreError> {
        self.documents(DocumentTable::Conversations, owner_id).await
    }

    async fn conversation(&self, id: &str) -> Result<Option<ConversationRecord>, StoreError> {
        // Reads see every write queued before them.
        self.flush().await?;
        let row = sqlx::query("SELECT body FROM conversations WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.read)
            .await
            .map_err(self.db())?;
        row.map(|row| body_from_row(self.path(), "conversations", &row)).transpose()
    }

    async fn delete_run(&self, id: &str) -> Result<bool, StoreError> {
        self.write_flag(Work::DeleteRun(id.to_string())).await
    }

    async fn insert_approval_decision(&self, decision: &ApprovalDecisionRecord) -> Result<bool, StoreError> {
        let body = serde_json::to_string(decision)
            .map_err(|e| StoreError::Invalid { path: self.path().to_string(), what: e.to_string() })?;
        self.write_flag(Work::InsertDecision {
            approval_id: decision.approval_id.clone(),
            run_id: decision.run_id.clone(),
            created_at: timestamp_text(&decision.created_at),
            body,
        })
        .await
    }

    async fn approval_decision(&self, approval_id: &str) -> Result<Option<ApprovalDecisionRecord>, StoreError> {
        let row = sqlx::query("SELECT body FROM approval_decisions WHERE approval_id = $1")
            .bind(approval_id)
            .fetch_optional(&self.read)
            .await
            .map_err(self.db())?;
        row.map(|row| body_from_row(self.path(), "approval_decisions", &row)).transpose()
    }

    async fn insert_mcp_token(&self, token: &McpTokenRecord) -> Result<(), StoreError> {
        if let Some(bad) = token.scopes.iter().find(|s| s.is_empty() || s.contains(',')) {
            return Err(StoreError::Invalid {
                path: self.path().to_string(),
                what: format!("MCP token scope {bad:?} is empty or contains a comma"),
            });
        }
        self.write(Work::InsertMcpToken(Box::new(token.clone()))).await
    }

    async fn mcp_tokens(&self, owner_id: &str) -> Result<Vec<McpTokenRecord>, StoreError> {
        // Token writes are committed before they return: no barrier needed.
        let sql = format!("SELECT {MCP_TOKEN_COLUMNS} FROM mcp_tokens WHERE owner_id = $1 ORDER BY created_at, id");
        let rows =
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(owner_id).fetch_all(&self.read).await.map_err(self.db())?;
        rows.iter().map(|row| mcp_token_from_row(self.path(), row)).collect()
    }

    async fn mcp_token_by_hash(&self, token_hash: &str) -> Result<Option<McpTokenRecord>, StoreError> {
        let sql = format!("SELECT {MCP_TOKEN_COLUMNS} FROM mcp_tokens WHERE token_hash = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(token_hash)
            .fetch_optional(&self.read)
            .await
            .map_err(self.db())?;
        row.map(|row| mcp_token_from_row(self.path(), &row)).transpose()
    }

    async fn revoke_mcp_token(
        &self,
        owner_id: &str,
        id: &str,
        at: steward_protocol::Timestamp,
    ) -> Result<bool, StoreError> {
        self.write_flag(Work::RevokeMcpToken {
            owner_id: owner_id.to_string(),
            id: id.to_string(),
            at: timestamp_text(&at),
        })
        .await
    }

    async fn touch_mcp_token(&self, id: &str, at: steward_protocol::Timestamp) -> Result<bool, StoreError> {
        self.write_flag(Work::TouchMcpToken { id: id.to_string(), at: timestamp_text(&at) }).await
    }

    async fn queue_audit(&self, entry: AuditEntry) -> Result<(), StoreError> {
        self.enqueue(Work::Audit(Box::new(entry)), Reply::Nobody).await
    }

    async fn append_audit(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(Work::Audit(Box::new(entry)), Reply::Audit(tx)).await?;
        rx.await.map_err(|_| self.closed())?
    }

    async fn append_audit_if_running(&self, entry: AuditEntry) -> Result<Option<AuditRecord>, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(Work::GuardedAudit(Box::new(entry)), Reply::GuardedAudit(tx)).await?;
        rx.await.map_err(|_| self.closed())?
    }

    async fn audit_records(&self, run_id: Option<&str>) -> Result<Vec<AuditRecord>, StoreError> {
        let rows = match run_id {
            Some(run_id) => {
                let sql = format!("SELECT {AUDIT_COLUMNS} FROM audit WHERE run_id = $1 ORDER BY seq");
                sqlx::query(sqlx::AssertSqlSafe(sql)).bind(run_id).fetch_all(&self.read).await
            }
            None => {
                let sql = format!("SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq");
                sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&self.read).await
            }
        }
        .map_err(self.db())?;
        rows.iter().map(|row| audit_from_row(self.path(), row)).collect()
    }

    async fn verify_audit(&self) -> Result<AuditVerification, StoreError> {
        let sql = format!("SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&self.read).await.map_err(self.db())?;
        let mut records = Vec::with_capacity(rows.len());
        for row in &rows {
            match audit_from_row(self.path(), row) {
                Ok(record) => records.push(record),
                // A row that no longer decodes was edited: the first such row breaks the chain
                // unless an earlier record is already bad.
                Err(_) => {
                    let seq: i64 = sqlx::Row::try_get(row, "seq").unwrap_or(0);
                    let id: String = sqlx::Row::try_get(row, "id").unwrap_or_default();
                    if let broken @ AuditVerification::Broken { .. } = verify_chain(&records) {
                        return Ok(broken);
                    }
                    let seq = u64::try_from(seq).unwrap_or(0);
                    return Ok(AuditVerification::Broken { seq, id, problem: "changed".into() });
                }
            }
        }
        let verdict = verify_chain(&records);
        if !matches!(verdict, AuditVerification::Valid { .. }) {
            return Ok(verdict);
        }
        self.check_anchor(&records, verdict)
    }

    fn audit_anchor(&self) -> Option<&std::path::Path> {
        self.shared.anchor.as_deref()
    }

    fn ledger(&self) -> Option<&dyn crate::ledger::LedgerStore> {
        Some(self)
    }

    async fn flush(&self) -> Result<(), StoreError> {
        self.write(Work::Barrier).await?;
        let deferred = self.shared.deferred.lock().ok().and_then(|mut slot| slot.take());
        match deferred {
            Some(message) => Err(StoreError::Deferred { path: self.shared.path.clone(), message }),
            None => Ok(()),
        }
    }

    async fn renew_leases(&self, pid: u32, ttl: Duration) -> Result<u64, StoreError> {
        self.renew(pid, ttl).await
    }

    async fn lost_runs(&self, run_ids: &[String]) -> Result<Vec<String>, StoreError> {
        self.lost(run_ids).await
    }

    async fn take_over_expired_runs(&self, ttl: Duration, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        self.take_over(ttl, limit).await
    }

    fn subscribe_changes(&self) -> Option<tokio::sync::broadcast::Receiver<Change>> {
        Some(self.hub.subscribe())
    }
}

#[cfg(test)]
mod tests {
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
