//! The ledger's columns, SQL text and row decoding, shared by both databases.

/// Columns of `ledger_requests`, in the order the row readers expect.
pub(crate) const REQUEST_COLUMNS: &str =
    "id, revision, epoch, kind, requester, repository, pr_number, text, status, created_at, updated_at";
/// Columns of `ledger_approvals`.
pub(crate) const APPROVAL_COLUMNS: &str =
    "id, request_id, revision, epoch, repository, pr_number, head_sha, scope, approved_by, approved_at, expires_at";
/// Columns of `ledger_authorities`.
pub(crate) const AUTHORITY_COLUMNS: &str = "id, approval_id, request_id, attempt_id, hub_id, token_id, issued_at";
/// Columns of `ledger_results`.
pub(crate) const RESULT_COLUMNS: &str = "attempt_id, authority_id, outcome, evidence, reported_at, duplicates";

/// SQL of the ledger with `?` placeholders (PostgreSQL numbers them, see [`super::super::dialect::numbered`]).
pub(crate) mod sql {
    /// Inserts a request (11 values).
    pub const INSERT_REQUEST: &str = "INSERT INTO ledger_requests (id, revision, epoch, kind, requester, repository, \
        pr_number, text, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    /// Inserts an approval (11 values).
    pub const INSERT_APPROVAL: &str = "INSERT INTO ledger_approvals (id, request_id, revision, epoch, repository, \
        pr_number, head_sha, scope, approved_by, approved_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    /// Inserts an authority (7 values).
    pub const INSERT_AUTHORITY: &str = "INSERT INTO ledger_authorities (id, approval_id, request_id, attempt_id, \
        hub_id, token_id, issued_at) VALUES (?, ?, ?, ?, ?, ?, ?)";
    /// Inserts a result (6 values).
    pub const INSERT_RESULT: &str = "INSERT INTO ledger_results (attempt_id, authority_id, outcome, evidence, \
        reported_at, duplicates) VALUES (?, ?, ?, ?, ?, ?)";
    /// Sets a request's status, epoch and update time (by id).
    pub const SET_REQUEST: &str = "UPDATE ledger_requests SET status = ?, epoch = ?, updated_at = ? WHERE id = ?";
    /// Counts a duplicate report (by attempt).
    pub const COUNT_DUPLICATE: &str = "UPDATE ledger_results SET duplicates = duplicates + 1 WHERE attempt_id = ?";
}

/// The candidate query: `owner`, `now`, then (with a cursor) `at`, `at`, `id`, then `limit`.
pub(crate) fn candidates_sql(with_cursor: bool) -> String {
    let columns = APPROVAL_COLUMNS.split(", ").map(|c| format!("a.{c}")).collect::<Vec<_>>().join(", ");
    format!(
        "SELECT {columns}, r.text AS request_text FROM ledger_approvals a JOIN ledger_requests r ON r.id = a.request_id \
         WHERE a.approved_by = ? AND r.status = 'approved' AND a.epoch = r.epoch AND a.revision = r.revision \
         AND a.expires_at > ? \
         AND NOT EXISTS (SELECT 1 FROM ledger_authorities x WHERE x.approval_id = a.id) {} \
         ORDER BY a.approved_at, a.id LIMIT ?",
        if with_cursor { "AND (a.approved_at > ? OR (a.approved_at = ? AND a.id > ?))" } else { "" }
    )
}

/// Reads rows of the ledger tables from either backend.
pub(crate) mod rows {
    use steward_protocol::Timestamp;

    use super::super::dialect::ReadRow;
    use crate::StoreError;
    use crate::ledger::{
        AuthorityRecord, CandidateRecord, ResultRecord, WorkApprovalRecord, WorkRequestRecord, WorkStatus,
    };

    fn corrupt(path: &str, what: impl Into<String>) -> StoreError {
        StoreError::Corrupt { path: path.to_string(), what: what.into() }
    }

    fn text(path: &str, row: &impl ReadRow, column: &str) -> Result<String, StoreError> {
        row.text(column).map_err(|e| corrupt(path, format!("ledger column {column}: {e}")))
    }

    fn int(path: &str, row: &impl ReadRow, column: &str) -> Result<i64, StoreError> {
        row.int(column).map_err(|e| corrupt(path, format!("ledger column {column}: {e}")))
    }

    fn time(path: &str, row: &impl ReadRow, column: &str) -> Result<Timestamp, StoreError> {
        let raw = text(path, row, column)?;
        chrono::DateTime::parse_from_rfc3339(&raw)
            .map(|t| t.with_timezone(&chrono::Utc))
            .map_err(|_| corrupt(path, format!("ledger column {column} is not an RFC 3339 time")))
    }

    fn u32_of(path: &str, value: i64, column: &str) -> Result<u32, StoreError> {
        u32::try_from(value).map_err(|_| corrupt(path, format!("ledger column {column} is out of range")))
    }

    fn u64_of(path: &str, value: i64, column: &str) -> Result<u64, StoreError> {
        u64::try_from(value).map_err(|_| corrupt(path, format!("ledger column {column} is out of range")))
    }

    /// A `ledger_requests` row ([`REQUEST_COLUMNS`]).
    pub fn request(path: &str, row: &impl ReadRow) -> Result<WorkRequestRecord, StoreError> {
        let status = text(path, row, "status")?;
        Ok(WorkRequestRecord {
            id: text(path, row, "id")?,
            revision: u32_of(path, int(path, row, "revision")?, "revision")?,
            epoch: u64_of(path, int(path, row, "epoch")?, "epoch")?,
            kind: text(path, row, "kind")?,
            requester: text(path, row, "requester")?,
            repository: text(path, row, "repository")?,
            pr_number: u64_of(path, int(path, row, "pr_number")?, "pr_number")?,
            text: text(path, row, "text")?,
            status: WorkStatus::parse(&status).ok_or_else(|| corrupt(path, "ledger_requests.status is unknown"))?,
            created_at: time(path, row, "created_at")?,
            updated_at: time(path, row, "updated_at")?,
        })
    }

    /// A `ledger_approvals` row ([`APPROVAL_COLUMNS`]).
    pub fn approval(path: &str, row: &impl ReadRow) -> Result<WorkApprovalRecord, StoreError> {
        Ok(WorkApprovalRecord {
            id: text(path, row, "id")?,
            request_id: text(path, row, "request_id")?,
            revision: u32_of(path, int(path, row, "revision")?, "revision")?,
            epoch: u64_of(path, int(path, row, "epoch")?, "epoch")?,
            repository: text(path, row, "repository")?,
            pr_number: u64_of(path, int(path, row, "pr_number")?, "pr_number")?,
            head_sha: text(path, row, "head_sha")?,
            scope: text(path, row, "scope")?,
            approved_by: text(path, row, "approved_by")?,
            approved_at: time(path, row, "approved_at")?,
            expires_at: time(path, row, "expires_at")?,
        })
    }

    /// A `ledger_authorities` row ([`AUTHORITY_COLUMNS`]).
    pub fn authority(path: &str, row: &impl ReadRow) -> Result<AuthorityRecord, StoreError> {
        Ok(AuthorityRecord {
            id: text(path, row, "id")?,
            approval_id: text(path, row, "approval_id")?,
            request_id: text(path, row, "request_id")?,
            attempt_id: text(path, row, "attempt_id")?,
            hub_id: text(path, row, "hub_id")?,
            token_id: text(path, row, "token_id")?,
            issued_at: time(path, row, "issued_at")?,
        })
    }

    /// A `ledger_results` row ([`RESULT_COLUMNS`]).
    pub fn result(path: &str, row: &impl ReadRow) -> Result<ResultRecord, StoreError> {
        Ok(ResultRecord {
            attempt_id: text(path, row, "attempt_id")?,
            authority_id: text(path, row, "authority_id")?,
            outcome: text(path, row, "outcome")?,
            evidence: text(path, row, "evidence")?,
            reported_at: time(path, row, "reported_at")?,
            duplicates: u32_of(path, int(path, row, "duplicates")?, "duplicates")?,
        })
    }

    /// A candidate row: the approval's columns and `request_text`.
    pub fn candidate(path: &str, row: &impl ReadRow) -> Result<CandidateRecord, StoreError> {
        Ok(CandidateRecord { approval: approval(path, row)?, text: text(path, row, "request_text")? })
    }
}
