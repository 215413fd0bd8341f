//! The embedded SQLite store.
//!
//! One file in WAL mode. Writes go through a single writer task ([`writer`]) with group commit;
//! reads use a separate pool of connections. Several processes may open the same file: the
//! writer takes the write lock with `BEGIN IMMEDIATE` (waiting up to [`BUSY_TIMEOUT`]) and reads
//! the chain head inside that transaction.

mod journal;
mod ledger;
mod rows;
mod writer;

use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::ConnectOptions;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use steward_protocol::{ApprovalRequest, AuditEntry, AuditRecord, Event};
use tokio::sync::{mpsc, oneshot};

use self::rows::{
    APPROVAL_COLUMNS, AUDIT_COLUMNS, FACT_COLUMNS, RUN_COLUMNS, approval_from_row, audit_from_row, event_from_row,
    fact_from_row, run_from_row,
};
use self::rows::{MCP_TOKEN_COLUMNS, mcp_token_from_row};
use self::writer::{Document, DocumentTable, Pending, Reply, Shared, Work};
use crate::McpTokenRecord;
use crate::chain::timestamp_text;
use crate::{
    ApprovalDecisionRecord, AuditVerification, ConversationRecord, Durability, FactRecord, GrantRecord, RollbackRecord,
    RunRecord, RunStatus, Store, StoreError, StoreOptions, verify_chain,
};

/// How long a connection waits for another one's lock before failing (10 s).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Read connections per store.
const READ_POOL_SIZE: u32 = 4;

/// The schema, applied on open (`migrations/sqlite/*.sql`).
static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// A [`Store`] in one SQLite file (or in memory). Cheap to clone: clones share the writer.
///
/// Dropping the last clone lets the writer finish what is queued and stop; call
/// [`Store::flush`] before the process exits so queued events are not lost.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    shared: Arc<Shared>,
    read: SqlitePool,
    queue: mpsc::Sender<Pending>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and applies the schema migrations.
    ///
    /// A missing parent directory is created with mode 0700 and a new file with mode 0600; an
    /// existing file readable by others is restricted to 0600 (the database holds run content).
    /// Sets WAL mode, `synchronous` from `options.durability` and a 10 s busy timeout. Must be
    /// called inside a Tokio runtime (it spawns the writer task).
    ///
    /// Errors: [`StoreError::Io`] (directory, file or permissions), [`StoreError::Open`],
    /// [`StoreError::Migrate`].
    pub async fn open(path: &Path, options: StoreOptions) -> Result<Self, StoreError> {
        let display = path.display().to_string();
        prepare_file(path).map_err(|source| StoreError::Io { path: display.clone(), source })?;
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
        let lock = tokio::task::spawn_blocking(move || crate::anchor::FileLock::acquire(&lock_path))
            .await
            .map_err(|e| StoreError::Io { path: display.clone(), source: std::io::Error::other(e.to_string()) })?
            .map_err(|source| StoreError::Io { path: display.clone(), source })?;
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .test_before_acquire(false)
            .connect_with(connect.clone())
            .await
            .map_err(|source| StoreError::Open { path: display.clone(), source })?;
        migrate(&write, &display).await?;
        drop(lock);
        let read = SqlitePoolOptions::new().max_connections(READ_POOL_SIZE).connect_lazy_with(connect);
        Ok(Self::start(display, write, read, options.audit_anchor.clone()))
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
        migrate(&pool, &display).await?;
        Ok(Self::start(display, pool.clone(), pool, None))
    }

    fn start(path: String, write: SqlitePool, read: SqlitePool, anchor: Option<std::path::PathBuf>) -> Self {
        let shared = Arc::new(Shared { path, deferred: Mutex::new(None), anchor });
        let (queue, receiver) = mpsc::channel(writer::QUEUE_CAPACITY);
        tokio::spawn(writer::run(write, Arc::clone(&shared), receiver));
        SqliteStore { shared, read, queue }
    }

    /// The database path as shown in messages (`:memory:` for an in-memory store).
    pub fn path(&self) -> &str {
        &self.shared.path
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
}

/// Creates the parent directory (0700) and the file (0600) before SQLite does, so neither is
/// ever readable by others; tightens an existing file that is.
fn prepare_file(path: &Path) -> std::io::Result<()> {
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
    Ok(())
}

/// Applies the migrations. SQLite migrations take no lock, so two processes opening a new
/// file at once can collide; the loser retries and then finds the schema in place.
impl SqliteStore {
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
        let sql = format!("SELECT body FROM {name} WHERE {column} = ? ORDER BY created_at, id");
        let rows: Vec<(String,)> =
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(key).fetch_all(&self.read).await.map_err(self.db())?;
        rows.iter()
            .map(|(body,)| {
                serde_json::from_str(body).map_err(|e| StoreError::Corrupt {
                    path: self.path().to_string(),
                    what: format!("{name}.body: {e}"),
                })
            })
            .collect()
    }
}

async fn migrate(pool: &SqlitePool, path: &str) -> Result<(), StoreError> {
    let mut attempt = 0;
    loop {
        match MIGRATOR.run(pool).await {
            Ok(()) => return Ok(()),
            Err(_) if attempt < 3 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(50 * attempt)).await;
            }
            Err(source) => return Err(StoreError::Migrate { path: path.to_string(), source }),
        }
    }
}

#[async_trait]
impl Store for SqliteStore {
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
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&self.read).await.map_err(self.db())?;
        row.map(|row| run_from_row(self.path(), &row)).transpose()
    }

    async fn list_runs(&self, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at DESC, id DESC LIMIT ?");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(i64::from(limit))
            .fetch_all(&self.read)
            .await
            .map_err(self.db())?;
        rows.iter().map(|row| run_from_row(self.path(), row)).collect()
    }

    async fn runs_with_status(&self, status: RunStatus) -> Result<Vec<RunRecord>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE status = ? ORDER BY created_at, id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(status.as_str())
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
        let rows = sqlx::query("SELECT body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq")
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
        let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE run_id = ? ORDER BY created_at, id");
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
        let sql = format!("SELECT {FACT_COLUMNS} FROM facts WHERE owner_id = ? ORDER BY created_at, id");
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
        self.flush().await?;
        let row: Option<(String,)> = sqlx::query_as("SELECT body FROM conversations WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.read)
            .await
            .map_err(self.db())?;
        row.map(|(body,)| {
            serde_json::from_str(&body).map_err(|e| StoreError::Corrupt {
                path: self.path().to_string(),
                what: format!("conversations.body: {e}"),
            })
        })
        .transpose()
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
        let row = sqlx::query("SELECT body FROM approval_decisions WHERE approval_id = ?")
            .bind(approval_id)
            .fetch_optional(&self.read)
            .await
            .map_err(self.db())?;
        let Some(row) = row else { return Ok(None) };
        let body: String = sqlx::Row::try_get(&row, "body").map_err(self.db())?;
        serde_json::from_str(&body).map(Some).map_err(|_| StoreError::Corrupt {
            path: self.path().to_string(),
            what: "approval_decisions.body is not a decision".into(),
        })
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
        let sql = format!("SELECT {MCP_TOKEN_COLUMNS} FROM mcp_tokens WHERE owner_id = ? ORDER BY created_at, id");
        let rows =
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(owner_id).fetch_all(&self.read).await.map_err(self.db())?;
        rows.iter().map(|row| mcp_token_from_row(self.path(), row)).collect()
    }

    async fn mcp_token_by_hash(&self, token_hash: &str) -> Result<Option<McpTokenRecord>, StoreError> {
        let sql = format!("SELECT {MCP_TOKEN_COLUMNS} FROM mcp_tokens WHERE token_hash = ?");
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
                let sql = format!("SELECT {AUDIT_COLUMNS} FROM audit WHERE run_id = ? ORDER BY seq");
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
        let Some(anchor_path) = &self.shared.anchor else { return Ok(verdict) };
        crate::anchor::check(anchor_path, &records, verdict)
            .map_err(|e| StoreError::Io { path: anchor_path.display().to_string(), source: e })
    }

    fn audit_anchor(&self) -> Option<&std::path::Path> {
        self.shared.anchor.as_deref()
    }

    fn ledger(&self) -> Option<&dyn crate::ledger::LedgerStore> {
        Some(self)
    }

    async fn lost_runs(&self, run_ids: &[String]) -> Result<Vec<String>, StoreError> {
        let mut lost = Vec::new();
        for id in run_ids {
            let status: Option<(String,)> = sqlx::query_as("SELECT status FROM runs WHERE id = ?")
                .bind(id)
                .fetch_optional(&self.read)
                .await
                .map_err(self.db())?;
            if status.is_some_and(|(status,)| status != RunStatus::Running.as_str()) {
                lost.push(id.clone());
            }
        }
        Ok(lost)
    }

    async fn flush(&self) -> Result<(), StoreError> {
        self.write(Work::Barrier).await?;
        let deferred = self.shared.deferred.lock().ok().and_then(|mut slot| slot.take());
        match deferred {
            Some(message) => Err(StoreError::Deferred { path: self.shared.path.clone(), message }),
            None => Ok(()),
        }
    }
}
