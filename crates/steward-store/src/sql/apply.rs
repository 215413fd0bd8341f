//! The statements of each queued write, applied inside the writer's transaction: one SQL text
//! per write for both databases.

use chrono::Utc;
use steward_protocol::{AuditEntry, Event};

use super::dialect::{Arg, Conn, Dialect, ReadRow, args, row_placeholders};
use super::rows::{APPROVAL_COLUMNS, AUDIT_COLUMNS, FACT_COLUMNS, MCP_TOKEN_COLUMNS, RUN_COLUMNS, finite, to_i64};
use super::work::{Applied, Chained, Document, Shared, Work};
use crate::chain::{GENESIS_HASH, StoredFields, canonical_json, timestamp_text};
use crate::{RunRecord, RunStatus, StoreError};

/// Every column of a run but its id, set by an update (the node a run was inserted by is kept).
const SET_RUN: &str = "UPDATE runs SET id = ?, owner_id = ?, task = ?, planner = ?, provider = ?, model = ?, \
     workspace = ?, status = ?, stop_reason = ?, final_text = ?, error_class = ?, error = ?, created_at = ?, \
     finished_at = ?, rounds = ?, tool_calls = ?, input_tokens = ?, output_tokens = ?, pid = ?";

/// The tables holding what belongs to a run, deleted with it (`run_leases` is empty on SQLite).
const RUN_TABLES: [&str; 5] = ["events", "approvals", "approval_decisions", "rollbacks", "run_leases"];

/// Applies one write inside the open transaction `conn`.
pub async fn apply<D: Dialect>(
    conn: &mut Conn<D>,
    shared: &Shared<D>,
    work: &Work,
    head: &mut Option<(u64, String)>,
) -> Result<Applied, StoreError> {
    let path = shared.path.as_str();
    let db = |source| StoreError::Database { path: path.to_string(), source };
    match work {
        Work::InsertRun(run) => {
            let (sql, args) = run_insert(path, run, shared.dialect.node())?;
            D::execute(conn, &sql, args).await.map_err(db)?;
            shared.dialect.run_inserted(conn, path, &run.id).await?;
        }
        Work::FinishRun(run) => {
            match guard_run(conn, shared, &run.id).await? {
                Some(true) => {}
                Some(false) => return Ok(Applied::Flag(false)),
                None => return Err(StoreError::NotFound { path: path.to_string(), what: format!("run {}", run.id) }),
            }
            let mut args = run_args(path, run)?;
            args.extend(args![run.id.as_str(), RunStatus::Running.as_str()]);
            let sql = format!("{SET_RUN} WHERE id = ? AND status = ?");
            let done = D::execute(conn, &sql, args).await.map_err(db)?;
            return Ok(Applied::Flag(done > 0));
        }
        Work::GuardedAudit(entry, _) => {
            if guard_run(conn, shared, &entry.run_id).await? != Some(true) {
                return Ok(Applied::Flag(false));
            }
            return one_audit::<D>(conn, shared, entry, head).await;
        }
        Work::UpdateRun(run) => {
            let mut args = run_args(path, run)?;
            args.push(Arg::from(run.id.as_str()));
            let sql = format!("{SET_RUN} WHERE id = ?");
            let done = D::execute(conn, &sql, args).await.map_err(db)?;
            if done == 0 {
                return Err(StoreError::NotFound { path: path.to_string(), what: format!("run {}", run.id) });
            }
        }
        Work::Event(event) => insert_events::<D>(conn, path, &[event]).await?,
        Work::Approval(a) => {
            let sql = format!(
                "INSERT INTO approvals ({APPROVAL_COLUMNS}) VALUES {} \
                 ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, owner_id = excluded.owner_id, \
                 call_id = excluded.call_id, tool = excluded.tool, arguments = excluded.arguments, \
                 reason = excluded.reason, rule = excluded.rule, risk = excluded.risk, \
                 preview = excluded.preview, created_at = excluded.created_at, \
                 expires_at = excluded.expires_at, status = excluded.status",
                row_placeholders(13)
            );
            let args = args![
                a.id.as_str(),
                a.run_id.as_str(),
                a.owner_id.as_str(),
                a.call_id.as_str(),
                a.tool.as_str(),
                a.arguments.to_string(),
                a.reason.as_str(),
                a.rule.as_str(),
                finite(path, "approval risk", a.risk)?,
                a.preview.as_str(),
                timestamp_text(&a.created_at),
                timestamp_text(&a.expires_at),
                a.status.as_str(),
            ];
            D::execute(conn, &sql, args).await.map_err(db)?;
        }
        Work::Audit(entry) => return one_audit::<D>(conn, shared, entry, head).await,
        Work::Document(doc) => {
            let (sql, args) = document_upsert(doc);
            D::execute(conn, &sql, args).await.map_err(db)?;
        }
        Work::InsertFact { fact, max_per_owner } => {
            // The count is read in the same statement, inside this write transaction, which
            // holds the write lock (SQLite) or the owner's lock (PostgreSQL, see
            // `Dialect::lock_batch`): no other writer counts or adds facts of this owner until
            // the commit.
            let sql = format!(
                "INSERT INTO facts ({FACT_COLUMNS}) SELECT ?, ?, ?, ? \
                 WHERE (SELECT COUNT(*) FROM facts WHERE owner_id = ?) < ?"
            );
            let args = args![
                fact.id.as_str(),
                fact.owner_id.as_str(),
                fact.text.as_str(),
                timestamp_text(&fact.created_at),
                fact.owner_id.as_str(),
                i64::from(*max_per_owner),
            ];
            let done = D::execute(conn, &sql, args).await.map_err(db)?;
            return Ok(Applied::Flag(done > 0));
        }
        Work::DeleteFact { owner_id, id } => {
            let sql = "DELETE FROM facts WHERE id = ? AND owner_id = ?";
            let done = D::execute(conn, sql, args![id, owner_id]).await.map_err(db)?;
            return Ok(Applied::Flag(done > 0));
        }
        Work::InsertDecision { approval_id, run_id, created_at, body } => {
            let sql = "INSERT INTO approval_decisions (approval_id, run_id, created_at, body) VALUES (?, ?, ?, ?) \
                       ON CONFLICT (approval_id) DO NOTHING";
            let done = D::execute(conn, sql, args![approval_id, run_id, created_at, body]).await.map_err(db)?;
            return Ok(Applied::Flag(done > 0));
        }
        Work::DeleteRun(id) => {
            let sql = "DELETE FROM runs WHERE id = ? AND status <> 'running'";
            if D::execute(conn, sql, args![id]).await.map_err(db)? == 0 {
                return Ok(Applied::Flag(false));
            }
            for table in RUN_TABLES {
                let sql = format!("DELETE FROM {table} WHERE run_id = ?");
                D::execute(conn, &sql, args![id]).await.map_err(db)?;
            }
            return Ok(Applied::Flag(true));
        }
        Work::InsertMcpToken(token) => {
            let sql = format!("INSERT INTO mcp_tokens ({MCP_TOKEN_COLUMNS}) VALUES {}", row_placeholders(8));
            let args = args![
                token.id.as_str(),
                token.owner_id.as_str(),
                token.name.as_str(),
                token.scopes.join(","),
                token.token_hash.as_str(),
                timestamp_text(&token.created_at),
                token.last_used_at.as_ref().map(timestamp_text),
                token.revoked_at.as_ref().map(timestamp_text),
            ];
            D::execute(conn, &sql, args).await.map_err(db)?;
        }
        Work::RevokeMcpToken { owner_id, id, at } => {
            let sql = "UPDATE mcp_tokens SET revoked_at = ? WHERE id = ? AND owner_id = ? AND revoked_at IS NULL";
            let done = D::execute(conn, sql, args![at, id, owner_id]).await.map_err(db)?;
            return Ok(Applied::Flag(done > 0));
        }
        Work::TouchMcpToken { id, at } => {
            let sql = "UPDATE mcp_tokens SET last_used_at = ? WHERE id = ?";
            let done = D::execute(conn, sql, args![at, id]).await.map_err(db)?;
            return Ok(Applied::Flag(done > 0));
        }
        Work::Barrier { .. } => {}
    }
    Ok(Applied::Nothing)
}

/// Appends one audit record.
async fn one_audit<D: Dialect>(
    conn: &mut Conn<D>,
    shared: &Shared<D>,
    entry: &AuditEntry,
    head: &mut Option<(u64, String)>,
) -> Result<Applied, StoreError> {
    let path = shared.path.as_str();
    let mut records = append_audits::<D>(conn, shared, &[entry], head).await?;
    records.pop().map(Applied::Audit).ok_or_else(|| StoreError::Write {
        path: path.to_string(),
        message: "the audit write produced no record".into(),
    })
}

/// The status of the run whose id is bound.
pub const RUN_STATUS_SQL: &str = "SELECT status FROM runs WHERE id = ?";

/// Whether run `run_id` may still be written as executed by this store: it is `running` and,
/// on a database shared by several nodes, its lease row, locked here until the commit (`FOR
/// UPDATE`, so a node taking it over, which skips locked leases, waits or finds it held), names
/// this node or does not exist. On SQLite the transaction holds the database's write lock, so
/// the status stays as read until the commit. `None` when there is no such run.
pub async fn guard_run<D: Dialect>(
    conn: &mut Conn<D>,
    shared: &Shared<D>,
    run_id: &str,
) -> Result<Option<bool>, StoreError> {
    let db = |source| StoreError::Database { path: shared.path.clone(), source };
    if let Some(node) = shared.dialect.node() {
        let sql = format!("SELECT node FROM run_leases WHERE run_id = ?{}", D::LOCK_ROWS);
        let lease = D::fetch_optional(conn, &sql, args![run_id]).await.map_err(db)?;
        if let Some(lease) = lease
            && lease.text("node").map_err(db)? != node
        {
            return Ok(Some(false));
        }
    }
    let status = D::fetch_optional(conn, RUN_STATUS_SQL, args![run_id]).await.map_err(db)?;
    status.map(|row| row.text("status").map(|s| s == RunStatus::Running.as_str()).map_err(db)).transpose()
}

/// `INSERT INTO events` naming the [`EVENT_WIDTH`] columns [`event_rows`] gives values for.
pub const EVENT_INSERT: &str = "INSERT INTO events (run_id, seq, at, name, body)";

/// Columns of [`EVENT_INSERT`].
pub const EVENT_WIDTH: usize = 5;

/// `INSERT INTO audit` naming the [`AUDIT_WIDTH`] columns [`ChainedAudits::rows`] gives values
/// for.
pub fn audit_insert() -> String {
    format!("INSERT INTO audit ({AUDIT_COLUMNS})")
}

/// Columns of [`audit_insert`].
pub const AUDIT_WIDTH: usize = 18;

/// The values of `events`' rows, [`EVENT_WIDTH`] per event in [`EVENT_INSERT`]'s order.
/// Errors: [`StoreError::Invalid`] for an event that does not serialise or a `seq` over
/// `i64::MAX`.
pub fn event_rows<'a>(path: &str, events: &[&'a Event]) -> Result<Vec<Arg<'a>>, StoreError> {
    let mut args = Vec::with_capacity(events.len() * EVENT_WIDTH);
    for event in events {
        let body = serde_json::to_string(event).map_err(|e| StoreError::Invalid {
            path: path.to_string(),
            what: format!("event is not serialisable ({e})"),
        })?;
        args.extend(args![
            event.run_id.as_str(),
            to_i64(path, "event seq", event.seq)?,
            timestamp_text(&event.at),
            event.kind.name(),
            body,
        ]);
    }
    Ok(args)
}

/// Inserts events in one insert ([`Dialect::insert_rows`]).
pub async fn insert_events<D: Dialect>(conn: &mut Conn<D>, path: &str, events: &[&Event]) -> Result<(), StoreError> {
    let args = event_rows(path, events)?;
    D::insert_rows(conn, path, EVENT_INSERT, EVENT_WIDTH, args).await
}

/// The query of the audit chain's head, the newest record's `seq` and `hash` (no row: an empty
/// chain, whose head is `(0, GENESIS_HASH)`).
pub const HEAD_SQL: &str = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1";

/// The chain's head from [`HEAD_SQL`]'s row, `None` for no row. Errors:
/// [`StoreError::Corrupt`] for a negative `seq`.
pub fn chain_head(path: &str, row: Option<(i64, String)>) -> Result<(u64, String), StoreError> {
    match row {
        Some((seq, hash)) => {
            let seq = u64::try_from(seq)
                .map_err(|_| StoreError::Corrupt { path: path.to_string(), what: "audit.seq: negative".into() })?;
            Ok((seq, hash))
        }
        None => Ok((0, GENESIS_HASH.to_string())),
    }
}

/// Audit records chained after a head, with the text forms that are both hashed and stored.
pub struct ChainedAudits<'a> {
    /// What the chain gave each entry, oldest first.
    pub records: Vec<Chained>,
    /// The entries, in the same order.
    entries: &'a [&'a AuditEntry],
    /// Per record: `seq`, `risk` and `latency_ms` as checked, the time and the input as stored.
    stored: Vec<(i64, f64, i64, String, String)>,
}

impl ChainedAudits<'_> {
    /// The records' values, [`AUDIT_WIDTH`] per record in [`audit_insert`]'s order.
    pub fn rows(&self) -> Vec<Arg<'_>> {
        let mut args: Vec<Arg<'_>> = Vec::with_capacity(self.records.len() * AUDIT_WIDTH);
        let each = self.records.iter().zip(self.entries).zip(&self.stored);
        for ((record, entry), (seq, risk, latency_ms, at_text, input)) in each {
            args.extend(args![
                *seq,
                record.id.as_str(),
                at_text.as_str(),
                entry.agent.as_str(),
                entry.run_id.as_str(),
                entry.call_id.as_str(),
                entry.action.as_str(),
                input.as_str(),
                entry.policy.as_str(),
                *risk,
                entry.outcome.as_str(),
                *latency_ms,
                entry.sandbox.as_str(),
                entry.approval_id.as_str(),
                entry.rollback_token.as_str(),
                entry.detail.as_str(),
                record.prev_hash.as_str(),
                record.hash.as_str(),
            ]);
        }
        args
    }

    /// The chain's head once the records are appended: the newest one's `(seq, hash)`, or
    /// `None` when there are none.
    pub fn head(&self) -> Option<(u64, String)> {
        self.records.last().map(|r| (r.seq, r.hash.clone()))
    }
}

/// Chains `entries` after `head` (`(seq, hash)` of the chain's newest record), stamped now and
/// keyed with the store's audit key. Errors: [`StoreError::Invalid`] for a risk that is not
/// finite or a number over `i64::MAX`; [`StoreError::Write`] if a hash were not text (its hex
/// digits always are).
pub fn chain_audits<'a, D>(
    shared: &Shared<D>,
    entries: &'a [&'a AuditEntry],
    head: (u64, String),
) -> Result<ChainedAudits<'a>, StoreError> {
    let path = shared.path.as_str();
    let key = shared.audit_key.as_ref();
    let (mut last_seq, mut prev_hash) = head;
    let mut records = Vec::with_capacity(entries.len());
    let mut stored = Vec::with_capacity(entries.len());
    let mut buf = String::with_capacity(512);
    for entry in entries {
        let risk = finite(path, "audit risk", entry.risk)?;
        let latency_ms = to_i64(path, "audit latency_ms", entry.latency_ms)?;
        let seq = last_seq + 1;
        let id = audit_id(seq);
        let at = Utc::now();
        let at_text = timestamp_text(&at);
        let input = canonical_json(&entry.input);
        let fields = StoredFields {
            seq,
            id: &id,
            at: &at_text,
            agent: &entry.agent,
            run_id: &entry.run_id,
            call_id: &entry.call_id,
            action: &entry.action,
            input: &input,
            policy: &entry.policy,
            risk: entry.risk,
            outcome: entry.outcome.as_str(),
            latency_ms: entry.latency_ms,
            sandbox: &entry.sandbox,
            approval_id: &entry.approval_id,
            rollback_token: &entry.rollback_token,
            detail: &entry.detail,
        };
        let hex = fields.hash_with(key, &prev_hash, &mut buf);
        // Lowercase hex digits are ASCII: checked as a whole, not pushed one char at a time.
        let hash = String::from_utf8(hex.to_vec()).map_err(|_| StoreError::Write {
            path: path.to_string(),
            message: "an audit hash was not hex digits".into(),
        })?;
        let record = Chained { seq, id, at, prev_hash: std::mem::replace(&mut prev_hash, hash.clone()), hash };
        last_seq = seq;
        stored.push((to_i64(path, "audit seq", seq)?, risk, latency_ms, at_text, input));
        records.push(record);
    }
    Ok(ChainedAudits { records, entries, stored })
}

/// Appends audit records to the chain in one insert ([`Dialect::insert_rows`]: one multi-row
/// statement, or on SQLite one single-row statement stepped per record); `head` is the chain's
/// last `(seq, hash)`, read inside the transaction (which holds the write or chain lock) the
/// first time it is needed.
pub async fn append_audits<D: Dialect>(
    conn: &mut Conn<D>,
    shared: &Shared<D>,
    entries: &[&AuditEntry],
    head: &mut Option<(u64, String)>,
) -> Result<Vec<Chained>, StoreError> {
    let path = shared.path.as_str();
    let db = |source| StoreError::Database { path: path.to_string(), source };
    let known = match head.take() {
        Some(known) => known,
        None => {
            let row = match D::fetch_optional(conn, HEAD_SQL, Vec::new()).await.map_err(db)? {
                Some(row) => Some((row.int("seq").map_err(db)?, row.text("hash").map_err(db)?)),
                None => None,
            };
            chain_head(path, row)?
        }
    };
    let chained = chain_audits(shared, entries, known.clone())?;
    D::insert_rows(conn, path, &audit_insert(), AUDIT_WIDTH, chained.rows()).await?;
    *head = Some(chained.head().unwrap_or(known));
    Ok(chained.records)
}

/// The statement that inserts `run` and its values, with the `node` column when the database
/// keeps one. Errors: [`StoreError::Invalid`] when a count does not fit the column.
pub fn run_insert<'a>(
    path: &str,
    run: &'a RunRecord,
    node: Option<&'a str>,
) -> Result<(String, Vec<Arg<'a>>), StoreError> {
    let mut args = run_args(path, run)?;
    let sql = match node {
        Some(node) => {
            args.push(Arg::from(node));
            format!("INSERT INTO runs ({RUN_COLUMNS}, node) VALUES {}", row_placeholders(20))
        }
        None => format!("INSERT INTO runs ({RUN_COLUMNS}) VALUES {}", row_placeholders(19)),
    };
    Ok((sql, args))
}

/// The statement that inserts `doc`, or replaces the document of its id, and its values.
pub fn document_upsert(doc: &Document) -> (String, Vec<Arg<'_>>) {
    let (table, key) = doc.table.names();
    let sql = format!(
        "INSERT INTO {table} (id, {key}, created_at, body) VALUES (?, ?, ?, ?) \
         ON CONFLICT (id) DO UPDATE SET {key} = excluded.{key}, created_at = excluded.created_at, body = excluded.body"
    );
    (sql, args![doc.id.as_str(), doc.key.as_str(), doc.created_at.as_str(), doc.body.as_str()])
}

/// The id of audit record `seq`: `aud_` and 16 lowercase hex digits, like [`crate::new_id`],
/// but of a random start drawn once per process plus `seq` (wrapping), so the records a process
/// appends have increasing ids. A fresh random id for each record would insert into `audit`'s
/// unique index on `id` at a random place, and a batch of appends would rewrite one index
/// page per record; these go in next to each other. Unique within a chain because `seq` is;
/// two processes appending to one database start at random places of the 2^64 ids.
fn audit_id(seq: u64) -> String {
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(rand::random::<u64>);
    format!("aud_{:016x}", start.wrapping_add(seq))
}

/// The run's fields in [`RUN_COLUMNS`] order.
fn run_args<'a>(path: &str, run: &'a RunRecord) -> Result<Vec<Arg<'a>>, StoreError> {
    Ok(args![
        run.id.as_str(),
        run.owner_id.as_str(),
        run.task.as_str(),
        run.planner.as_str(),
        run.provider.as_str(),
        run.model.as_str(),
        run.workspace.as_str(),
        run.status.as_str(),
        run.stop_reason.map(|s| s.as_str()),
        run.final_text.as_deref(),
        run.error_class.map(|c| c.as_str()),
        run.error.as_deref(),
        timestamp_text(&run.created_at),
        run.finished_at.as_ref().map(timestamp_text),
        i64::from(run.rounds),
        i64::from(run.tool_calls),
        to_i64(path, "run input_tokens", run.input_tokens)?,
        to_i64(path, "run output_tokens", run.output_tokens)?,
        i64::from(run.pid),
    ])
}
