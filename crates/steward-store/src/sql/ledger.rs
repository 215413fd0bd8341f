//! [`LedgerStore`] over either database: every decision runs in one write transaction
//! ([`Dialect::BEGIN`]) on a connection of its own that first reads the rows it depends on under
//! a lock: on SQLite `BEGIN IMMEDIATE` holds the database's write lock (shared by every process
//! using the file) from its first read to its commit; on PostgreSQL the transaction is `READ
//! COMMITTED` and locks the rows with `SELECT … FOR UPDATE` ([`Dialect::LOCK_ROWS`]: the
//! approval, then its request; a revocation locks the request; a result locks its authority),
//! so concurrent decisions on the same rows from any node wait for each other and then read what
//! the first one committed. The audit record is appended after the commit.

use crate::AuditStore;
use async_trait::async_trait;
use sqlx::Connection;
use steward_protocol::Timestamp;

use super::SqlStore;
use super::dialect::{Conn, Dialect, args};
use super::ledger_decide::{self as decide, LedgerTx};
use super::ledger_rows::{
    APPROVAL_COLUMNS, AUTHORITY_COLUMNS, REQUEST_COLUMNS, RESULT_COLUMNS, candidates_sql, rows, sql,
};
use crate::ledger::{
    self, ApproveInput, ApproveOutcome, AuthorityRecord, CandidateCursor, CandidateRecord, ClaimInput, ClaimOutcome,
    LedgerStore, ResultInput, ResultOutcome, ResultRecord, RevokeOutcome, WorkApprovalRecord, WorkRequestRecord,
    WorkStatus,
};
use crate::{StoreError, timestamp_text};

/// The open transaction's connection.
struct Tx<'c, D: Dialect> {
    conn: &'c mut Conn<D>,
    path: &'c str,
}

impl<D: Dialect> Tx<'_, D> {
    fn db(&self) -> impl Fn(sqlx::Error) -> StoreError + Copy + '_ {
        |source| StoreError::Database { path: self.path.to_string(), source }
    }
}

fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// `SELECT` of one row by `column`, locking it until the commit when `lock` is set.
fn by(columns: &str, table: &str, column: &str, lock: &str) -> String {
    format!("SELECT {columns} FROM {table} WHERE {column} = ?{lock}")
}

/// [`Dialect::LOCK_ROWS`] when `lock` is set.
fn lock_rows<D: Dialect>(lock: bool) -> &'static str {
    if lock { D::LOCK_ROWS } else { "" }
}

#[async_trait]
impl<D: Dialect> LedgerTx for Tx<'_, D> {
    async fn request(&mut self, id: &str, lock: bool) -> Result<Option<WorkRequestRecord>, StoreError> {
        let q = by(REQUEST_COLUMNS, "ledger_requests", "id", lock_rows::<D>(lock));
        let row = D::fetch_optional(&mut *self.conn, &q, args![id]).await.map_err(self.db())?;
        row.map(|r| rows::request(self.path, &r)).transpose()
    }

    async fn approval(&mut self, id: &str, lock: bool) -> Result<Option<WorkApprovalRecord>, StoreError> {
        let q = by(APPROVAL_COLUMNS, "ledger_approvals", "id", lock_rows::<D>(lock));
        let row = D::fetch_optional(&mut *self.conn, &q, args![id]).await.map_err(self.db())?;
        row.map(|r| rows::approval(self.path, &r)).transpose()
    }

    async fn authority_by_approval(&mut self, approval_id: &str) -> Result<Option<AuthorityRecord>, StoreError> {
        let q = by(AUTHORITY_COLUMNS, "ledger_authorities", "approval_id", "");
        let row = D::fetch_optional(&mut *self.conn, &q, args![approval_id]).await.map_err(self.db())?;
        row.map(|r| rows::authority(self.path, &r)).transpose()
    }

    async fn authority(&mut self, id: &str, lock: bool) -> Result<Option<AuthorityRecord>, StoreError> {
        let q = by(AUTHORITY_COLUMNS, "ledger_authorities", "id", lock_rows::<D>(lock));
        let row = D::fetch_optional(&mut *self.conn, &q, args![id]).await.map_err(self.db())?;
        row.map(|r| rows::authority(self.path, &r)).transpose()
    }

    async fn result(&mut self, attempt_id: &str) -> Result<Option<ResultRecord>, StoreError> {
        let q = by(RESULT_COLUMNS, "ledger_results", "attempt_id", "");
        let row = D::fetch_optional(&mut *self.conn, &q, args![attempt_id]).await.map_err(self.db())?;
        row.map(|r| rows::result(self.path, &r)).transpose()
    }

    async fn insert_approval(&mut self, a: &WorkApprovalRecord) -> Result<(), StoreError> {
        let values = args![
            a.id.as_str(),
            a.request_id.as_str(),
            i64::from(a.revision),
            int(a.epoch),
            a.repository.as_str(),
            int(a.pr_number),
            a.head_sha.as_str(),
            a.scope.as_str(),
            a.approved_by.as_str(),
            timestamp_text(&a.approved_at),
            timestamp_text(&a.expires_at),
        ];
        D::execute(&mut *self.conn, sql::INSERT_APPROVAL, values).await.map_err(self.db())?;
        Ok(())
    }

    async fn set_request(&mut self, id: &str, status: WorkStatus, epoch: u64, at: Timestamp) -> Result<(), StoreError> {
        let values = args![status.as_str(), int(epoch), timestamp_text(&at), id];
        D::execute(&mut *self.conn, sql::SET_REQUEST, values).await.map_err(self.db())?;
        Ok(())
    }

    async fn insert_authority(&mut self, a: &AuthorityRecord) -> Result<(), StoreError> {
        let values = args![
            a.id.as_str(),
            a.approval_id.as_str(),
            a.request_id.as_str(),
            a.attempt_id.as_str(),
            a.hub_id.as_str(),
            a.token_id.as_str(),
            timestamp_text(&a.issued_at),
        ];
        D::execute(&mut *self.conn, sql::INSERT_AUTHORITY, values).await.map_err(self.db())?;
        Ok(())
    }

    async fn insert_result(&mut self, r: &ResultRecord) -> Result<(), StoreError> {
        let values = args![
            r.attempt_id.as_str(),
            r.authority_id.as_str(),
            r.outcome.as_str(),
            r.evidence.as_str(),
            timestamp_text(&r.reported_at),
            i64::from(r.duplicates),
        ];
        D::execute(&mut *self.conn, sql::INSERT_RESULT, values).await.map_err(self.db())?;
        Ok(())
    }

    async fn count_duplicate(&mut self, attempt_id: &str) -> Result<(), StoreError> {
        D::execute(&mut *self.conn, sql::COUNT_DUPLICATE, args![attempt_id]).await.map_err(self.db())?;
        Ok(())
    }
}

/// Runs `$body` (an expression using `$tx: &mut dyn LedgerTx`) in one write transaction
/// ([`Dialect::BEGIN`]) on a connection of the read pool and commits it; an error rolls it back.
macro_rules! locked {
    ($store:expr, |$tx:ident| $body:expr) => {{
        let store = $store;
        let mut conn = store.read.acquire().await.map_err(store.db())?;
        let mut transaction = (*conn).begin_with(D::BEGIN).await.map_err(store.db())?;
        let value = {
            let mut inner = Tx::<D> { conn: &mut *transaction, path: store.path() };
            let $tx: &mut dyn LedgerTx = &mut inner;
            $body.await
        };
        match value {
            Ok(value) => {
                transaction.commit().await.map_err(store.db())?;
                Ok::<_, StoreError>(value)
            }
            Err(e) => {
                let _ = transaction.rollback().await;
                Err(e)
            }
        }
    }};
}

#[async_trait]
impl<D: Dialect> LedgerStore for SqlStore<D> {
    async fn insert_work_request(&self, r: &WorkRequestRecord) -> Result<(), StoreError> {
        let values = args![
            r.id.as_str(),
            i64::from(r.revision),
            int(r.epoch),
            r.kind.as_str(),
            r.requester.as_str(),
            r.repository.as_str(),
            int(r.pr_number),
            r.text.as_str(),
            r.status.as_str(),
            timestamp_text(&r.created_at),
            timestamp_text(&r.updated_at),
        ];
        self.execute(sql::INSERT_REQUEST, values).await?;
        self.append_audit(ledger::request_audit(r)).await?;
        Ok(())
    }

    async fn work_request(&self, id: &str) -> Result<Option<WorkRequestRecord>, StoreError> {
        let row = self.fetch_optional(&by(REQUEST_COLUMNS, "ledger_requests", "id", ""), args![id]).await?;
        row.map(|r| rows::request(self.path(), &r)).transpose()
    }

    async fn work_requests(&self, requester: &str, limit: u32) -> Result<Vec<WorkRequestRecord>, StoreError> {
        let q = format!(
            "SELECT {REQUEST_COLUMNS} FROM ledger_requests WHERE requester = ? ORDER BY created_at DESC, id DESC LIMIT ?"
        );
        let found = self.fetch_all(&q, args![requester, i64::from(limit)]).await?;
        found.iter().map(|r| rows::request(self.path(), r)).collect()
    }

    async fn work_approvals(&self, request_id: &str) -> Result<Vec<WorkApprovalRecord>, StoreError> {
        let q =
            format!("SELECT {APPROVAL_COLUMNS} FROM ledger_approvals WHERE request_id = ? ORDER BY approved_at, id");
        let found = self.fetch_all(&q, args![request_id]).await?;
        found.iter().map(|r| rows::approval(self.path(), r)).collect()
    }

    async fn authority_of(&self, approval_id: &str) -> Result<Option<AuthorityRecord>, StoreError> {
        let q = by(AUTHORITY_COLUMNS, "ledger_authorities", "approval_id", "");
        let row = self.fetch_optional(&q, args![approval_id]).await?;
        row.map(|r| rows::authority(self.path(), &r)).transpose()
    }

    async fn attempt_result(&self, attempt_id: &str) -> Result<Option<ResultRecord>, StoreError> {
        let q = by(RESULT_COLUMNS, "ledger_results", "attempt_id", "");
        let row = self.fetch_optional(&q, args![attempt_id]).await?;
        row.map(|r| rows::result(self.path(), &r)).transpose()
    }

    async fn approve_work_request(&self, input: &ApproveInput) -> Result<ApproveOutcome, StoreError> {
        let outcome = locked!(self, |tx| decide::approve_in(tx, input))?;
        self.append_audit(ledger::approve_audit(input, &outcome)).await?;
        Ok(outcome)
    }

    async fn revoke_work_request(
        &self,
        request_id: &str,
        owner_id: &str,
        at: Timestamp,
    ) -> Result<RevokeOutcome, StoreError> {
        let outcome = locked!(self, |tx| decide::revoke_in(tx, request_id, owner_id, at))?;
        self.append_audit(ledger::revoke_audit(request_id, owner_id, &outcome)).await?;
        Ok(outcome)
    }

    async fn ledger_candidates(
        &self,
        owner_id: &str,
        after: Option<&CandidateCursor>,
        limit: u32,
        now: Timestamp,
    ) -> Result<Vec<CandidateRecord>, StoreError> {
        let q = candidates_sql(after.is_some());
        let mut values = args![owner_id, timestamp_text(&now)];
        if let Some(c) = after {
            values.extend(args![c.approved_at.as_str(), c.approved_at.as_str(), c.approval_id.as_str()]);
        }
        values.extend(args![i64::from(limit)]);
        let found = self.fetch_all(&q, values).await?;
        found.iter().map(|r| rows::candidate(self.path(), r)).collect()
    }

    async fn claim_approval(&self, claim: &ClaimInput) -> Result<ClaimOutcome, StoreError> {
        let outcome = locked!(self, |tx| decide::claim_in(tx, claim))?;
        self.append_audit(ledger::claim_audit(claim, &outcome)).await?;
        Ok(outcome)
    }

    async fn record_result(&self, input: &ResultInput) -> Result<ResultOutcome, StoreError> {
        let (outcome, request_id) = locked!(self, |tx| decide::result_in(tx, input))?;
        self.append_audit(ledger::result_audit(input, request_id.as_deref(), &outcome)).await?;
        Ok(outcome)
    }
}
