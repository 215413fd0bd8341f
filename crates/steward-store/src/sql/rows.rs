//! Conversions between rows and records: column names, timestamps, integers and wire names.
//! Both databases hold the same values (RFC 3339 `TEXT` timestamps, JSON as `TEXT`, 64-bit
//! integers, double-precision risks), so one decoding serves both.

use serde::de::DeserializeOwned;
use steward_protocol::{ApprovalRequest, ApprovalStatus, AuditEntry, AuditOutcome, AuditRecord, Event, Timestamp};

use super::dialect::ReadRow;
use crate::{FactRecord, McpTokenRecord, RunRecord, RunStatus, StoreError};

/// Columns of `runs` (without `node`), in the order [`run_from_row`] and the writer use.
pub const RUN_COLUMNS: &str = "id, owner_id, task, planner, provider, model, workspace, status, stop_reason, \
     final_text, error_class, error, created_at, finished_at, rounds, tool_calls, input_tokens, output_tokens, pid";

/// Columns of `approvals`.
pub const APPROVAL_COLUMNS: &str =
    "id, run_id, owner_id, call_id, tool, arguments, reason, rule, risk, preview, created_at, expires_at, status";

/// Columns of `audit`.
pub const AUDIT_COLUMNS: &str = "seq, id, at, agent, run_id, call_id, action, input, policy, risk, outcome, \
     latency_ms, sandbox, approval_id, rollback_token, detail, prev_hash, hash";

/// Columns of `facts`.
pub const FACT_COLUMNS: &str = "id, owner_id, text, created_at";

/// Columns of `mcp_tokens`.
pub const MCP_TOKEN_COLUMNS: &str = "id, owner_id, name, scopes, token_hash, created_at, last_used_at, revoked_at";

/// Reads rows of one table, turning every failure into a [`StoreError::Corrupt`] that names
/// the database, table and column (never the content).
struct RowReader<'a> {
    path: &'a str,
    table: &'static str,
}

impl<'a> RowReader<'a> {
    fn new(path: &'a str, table: &'static str) -> Self {
        RowReader { path, table }
    }

    fn corrupt(&self, column: &str, why: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt { path: self.path.to_string(), what: format!("{}.{column}: {why}", self.table) }
    }

    fn text(&self, row: &impl ReadRow, column: &str) -> Result<String, StoreError> {
        row.text(column).map_err(|e| self.corrupt(column, e))
    }

    fn opt_text(&self, row: &impl ReadRow, column: &str) -> Result<Option<String>, StoreError> {
        row.opt_text(column).map_err(|e| self.corrupt(column, e))
    }

    fn real(&self, row: &impl ReadRow, column: &str) -> Result<f64, StoreError> {
        row.real(column).map_err(|e| self.corrupt(column, e))
    }

    fn int<T: TryFrom<i64>>(&self, row: &impl ReadRow, column: &str) -> Result<T, StoreError> {
        let raw = row.int(column).map_err(|e| self.corrupt(column, e))?;
        T::try_from(raw).map_err(|_| self.corrupt(column, "integer out of range"))
    }

    fn time(&self, row: &impl ReadRow, column: &str) -> Result<Timestamp, StoreError> {
        let text = self.text(row, column)?;
        self.parse_time(column, &text)
    }

    fn opt_time(&self, row: &impl ReadRow, column: &str) -> Result<Option<Timestamp>, StoreError> {
        self.opt_text(row, column)?.map(|text| self.parse_time(column, &text)).transpose()
    }

    fn parse_time(&self, column: &str, text: &str) -> Result<Timestamp, StoreError> {
        chrono::DateTime::parse_from_rfc3339(text)
            .map(|t| t.to_utc())
            .map_err(|e| self.corrupt(column, format!("not an RFC 3339 timestamp ({e})")))
    }

    fn json(&self, row: &impl ReadRow, column: &str) -> Result<serde_json::Value, StoreError> {
        let text = self.text(row, column)?;
        serde_json::from_str(&text).map_err(|e| self.corrupt(column, format!("invalid JSON ({e})")))
    }

    /// A snake_case wire name decoded through serde (for enums without a `parse`).
    fn wire<T: DeserializeOwned>(&self, column: &str, name: String) -> Result<T, StoreError> {
        serde_json::from_value(serde_json::Value::String(name)).map_err(|_| self.corrupt(column, "unknown name"))
    }
}

/// A `runs` row.
pub fn run_from_row(path: &str, row: &impl ReadRow) -> Result<RunRecord, StoreError> {
    let r = RowReader::new(path, "runs");
    let status = r.text(row, "status")?;
    Ok(RunRecord {
        id: r.text(row, "id")?,
        owner_id: r.text(row, "owner_id")?,
        task: r.text(row, "task")?,
        planner: r.text(row, "planner")?,
        provider: r.text(row, "provider")?,
        model: r.text(row, "model")?,
        workspace: r.text(row, "workspace")?,
        status: RunStatus::parse(&status).ok_or_else(|| r.corrupt("status", "unknown status"))?,
        stop_reason: r.opt_text(row, "stop_reason")?.map(|s| r.wire("stop_reason", s)).transpose()?,
        final_text: r.opt_text(row, "final_text")?,
        error_class: r.opt_text(row, "error_class")?.map(|s| r.wire("error_class", s)).transpose()?,
        error: r.opt_text(row, "error")?,
        created_at: r.time(row, "created_at")?,
        finished_at: r.opt_time(row, "finished_at")?,
        rounds: r.int(row, "rounds")?,
        tool_calls: r.int(row, "tool_calls")?,
        input_tokens: r.int(row, "input_tokens")?,
        output_tokens: r.int(row, "output_tokens")?,
        pid: r.int(row, "pid")?,
    })
}

/// An `approvals` row.
pub fn approval_from_row(path: &str, row: &impl ReadRow) -> Result<ApprovalRequest, StoreError> {
    let r = RowReader::new(path, "approvals");
    let status = r.text(row, "status")?;
    Ok(ApprovalRequest {
        id: r.text(row, "id")?,
        run_id: r.text(row, "run_id")?,
        owner_id: r.text(row, "owner_id")?,
        call_id: r.text(row, "call_id")?,
        tool: r.text(row, "tool")?,
        arguments: r.json(row, "arguments")?,
        reason: r.text(row, "reason")?,
        rule: r.text(row, "rule")?,
        risk: r.real(row, "risk")?,
        preview: r.text(row, "preview")?,
        created_at: r.time(row, "created_at")?,
        expires_at: r.time(row, "expires_at")?,
        status: ApprovalStatus::parse(&status).ok_or_else(|| r.corrupt("status", "unknown status"))?,
    })
}

/// An `audit` row.
pub fn audit_from_row(path: &str, row: &impl ReadRow) -> Result<AuditRecord, StoreError> {
    let r = RowReader::new(path, "audit");
    let outcome = r.text(row, "outcome")?;
    Ok(AuditRecord {
        seq: r.int(row, "seq")?,
        id: r.text(row, "id")?,
        at: r.time(row, "at")?,
        entry: AuditEntry {
            agent: r.text(row, "agent")?,
            run_id: r.text(row, "run_id")?,
            call_id: r.text(row, "call_id")?,
            action: r.text(row, "action")?,
            input: r.json(row, "input")?,
            policy: r.text(row, "policy")?,
            risk: r.real(row, "risk")?,
            outcome: AuditOutcome::parse(&outcome).ok_or_else(|| r.corrupt("outcome", "unknown outcome"))?,
            latency_ms: r.int(row, "latency_ms")?,
            sandbox: r.text(row, "sandbox")?,
            approval_id: r.text(row, "approval_id")?,
            rollback_token: r.text(row, "rollback_token")?,
            detail: r.text(row, "detail")?,
        },
        prev_hash: r.text(row, "prev_hash")?,
        hash: r.text(row, "hash")?,
    })
}

/// A `facts` row.
pub fn fact_from_row(path: &str, row: &impl ReadRow) -> Result<FactRecord, StoreError> {
    let r = RowReader::new(path, "facts");
    Ok(FactRecord {
        id: r.text(row, "id")?,
        owner_id: r.text(row, "owner_id")?,
        text: r.text(row, "text")?,
        created_at: r.time(row, "created_at")?,
    })
}

/// An `mcp_tokens` row; `scopes` is a comma list (empty: no scope).
pub fn mcp_token_from_row(path: &str, row: &impl ReadRow) -> Result<McpTokenRecord, StoreError> {
    let r = RowReader::new(path, "mcp_tokens");
    let scopes = r.text(row, "scopes")?;
    Ok(McpTokenRecord {
        id: r.text(row, "id")?,
        owner_id: r.text(row, "owner_id")?,
        name: r.text(row, "name")?,
        scopes: scopes.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect(),
        token_hash: r.text(row, "token_hash")?,
        created_at: r.time(row, "created_at")?,
        last_used_at: r.opt_time(row, "last_used_at")?,
        revoked_at: r.opt_time(row, "revoked_at")?,
    })
}

/// An `events` row: the `body` column holds the whole event as JSON.
pub fn event_from_row(path: &str, row: &impl ReadRow) -> Result<Event, StoreError> {
    let r = RowReader::new(path, "events");
    let body = r.text(row, "body")?;
    serde_json::from_str(&body).map_err(|e| r.corrupt("body", format!("not an event ({e})")))
}

/// A `body` column holding a record as JSON (`rollbacks`, `grants`, `approval_decisions`).
pub fn body_from_row<T: DeserializeOwned>(
    path: &str,
    table: &'static str,
    row: &impl ReadRow,
) -> Result<T, StoreError> {
    let r = RowReader::new(path, table);
    let body = r.text(row, "body")?;
    serde_json::from_str(&body).map_err(|e| r.corrupt("body", e))
}

/// A `u64`/`u32` for a 64-bit integer column; [`StoreError::Invalid`] above `i64::MAX`.
pub fn to_i64(path: &str, what: &str, value: impl TryInto<i64>) -> Result<i64, StoreError> {
    value
        .try_into()
        .map_err(|_| StoreError::Invalid { path: path.to_string(), what: format!("{what} exceeds i64::MAX") })
}

/// A risk score for a `REAL`/`DOUBLE PRECISION` column; [`StoreError::Invalid`] when not finite
/// (SQLite would store NaN as NULL, and the hash could not be recomputed from what is read back).
pub fn finite(path: &str, what: &str, value: f64) -> Result<f64, StoreError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(StoreError::Invalid { path: path.to_string(), what: format!("{what} is not a finite number") })
    }
}
