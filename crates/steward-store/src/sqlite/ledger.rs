//! [`LedgerStore`] on SQLite: every decision runs in a `BEGIN IMMEDIATE` transaction on a
//! connection of its own, so it holds the database's write lock (shared by every process using
//! the file) from its first read to its commit; the audit record is appended after the commit.

use async_trait::async_trait;
use sqlx::{Connection, SqliteConnection};
use steward_protocol::Timestamp;

use super::SqliteStore;
use crate::ledger::{
    self, APPROVAL_COLUMNS, AUTHORITY_COLUMNS, ApproveInput, ApproveOutcome, AuthorityRecord, CandidateCursor,
    CandidateRecord, ClaimInput, ClaimOutcome, LedgerStore, LedgerTx, REQUEST_COLUMNS, RESULT_COLUMNS, ResultInput,
    ResultOutcome, ResultRecord, RevokeOutcome, WorkApprovalRecord, WorkRequestRecord, WorkStatus, rows, sql,
};
use crate::{Store, StoreError, timestamp_text};

/// The open transaction's connection.
struct Tx<'c> {
    conn: &'c mut SqliteConnection,
    path: &'c str,
}

impl Tx<'_> {
    fn db(&self) -> impl Fn(sqlx::Error) -> StoreError + '_ {
        |source| StoreError::Database { path: self.path.to_string(), source }
    }
}

fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[async_trait]
impl LedgerTx for Tx<'_> {
    async fn request(&mut self, id: &str, _lock: bool) -> Result<Option<WorkRequestRecord>, StoreError> {
        let q = format!("SELECT {REQUEST_COLUMNS} FROM ledger_requests WHERE id = ?");
        let row = sqlx::query(sqlx::AssertSqlSafe(q)).bind(id).fetch_optional(&mut *self.conn).await;
        row.map_err(self.db())?.map(|r| rows::request(self.path, &r)).transpose()
    }

    async fn approval(&mut self, id: &str, _lock: bool) -> Result<Option<WorkApprovalRecord>, StoreError> {
        let q = format!("SELECT {APPROVAL_COLUMNS} FROM ledger_approvals WHERE id = ?");
        let row = sqlx::query(sqlx::AssertSqlSafe(q)).bind(id).fetch_optional(&mut *self.conn).await;
        row.map_err(self.db())?.map(|r| rows::approval(self.path, &r)).transpose()
    }

    async fn authority_by_approval(&mut self, approval_id: &str) -> Result<Option<AuthorityRecord>, StoreError> {
        let q = format!("SELECT {AUTHORITY_COLUMNS} FROM ledger_authorities WHERE approval_id = ?");
        let row = sqlx::query(sqlx::AssertSqlSafe(q)).bind(approval_id).fetch_optional(&mut *self.conn).await;
        row.map_err(self.db())?.map(|r| rows::authority(self.path, &r)).transpose()
    }

    async fn authority(&mut self, id: &str, _lock: bool) -> Result<Option<AuthorityRecord>, StoreError> {
        let q = format!("SELECT {AUTHORITY_COLUMNS} FROM ledger_authorities WHERE id = ?");
        let row = sqlx::query(sqlx::AssertSqlSafe(q)).bind(id).fetch_optional(&mut *self.conn).await;
        row.map_err(self.db())?.map(|r| rows::authority(self.path, &r)).transpose()
    }

    async fn result(&mut self, attempt_id: &str) -> Result<Option<ResultRecord>, StoreError> {
        let q = format!("SELECT {RESULT_COLUMNS} FROM ledger_results WHERE attempt_id = ?");
        let row = sqlx::query(sqlx::AssertSqlSafe(q)).bind(attempt_id).fetch_optional(&mut *self.conn).await;
        row.map_err(self.db())?.map(|r| rows::result(self.path, &r)).transpose()
    }

    async fn insert_approval(&mut self, a: &WorkApprovalRecord) -> Result<(), StoreError> {
        sqlx::query(sql::INSERT_APPROVAL)
            .bind(&a.id)
            .bind(&a.request_id)
            .bind(i64::from(a.revision))
            .bind(int(a.epoch))
            .bind(&a.repository)
            .bind(int(a.pr_number))
            .bind(&a.head_sha)
            .bind(&a.scope)
            .bind(&a.approved_by)
            .bind(timestamp_text(&a.approved_at))
            .bind(timestamp_text(&a.expires_at))
            .execute(&mut *self.conn)
            .await
            .map_err(self.db())?;
        Ok(())
    }

    async fn set_request(&mut self, id: &str, status: WorkStatus, epoch: u64, at: Timestamp) -> Result<(), StoreError> {
        sqlx::query(sql::SET_REQUEST)
            .bind(status.as_str())
            .bind(int(epoch))
            .bind(timestamp_text(&at))
            .bind(id)
            .execute(&mut *self.conn)
            .await
            .map_err(self.db())?;
        Ok(())
    }

    async fn insert_authority(&mut self, a: &AuthorityRecord) -> Result<(), StoreError> {
        sqlx::query(sql::INSERT_AUTHORITY)
            .bind(&a.id)
            .bind(&a.approval_id)
            .bind(&a.request_id)
            .bind(&a.attempt_id)
            .bind(&a.hub_id)
            .bind(&a.token_id)
            .bind(timestamp_text(&a.issued_at))
            .execute(&mut *self.conn)
            .await
            .map_err(self.db())?;
        Ok(())
    }

    async fn insert_result(&mut self, r: &ResultRecord) -> Result<(), StoreError> {
        sqlx::query(sql::INSERT_RESULT)
            .bind(&r.attempt_id)
            .bind(&r.authority_id)
            .bind(&r.outcome)
            .bind(&r.evidence)
            .bind(timestamp_text(&r.reported_at))
            .bind(i64::from(r.duplicates))
            .execute(&mut *self.conn)
            .await
            .map_err(self.db())?;
        Ok(())
    }

    async fn count_duplicate(&mut self, attempt_id: &str) -> Result<(), StoreError> {
        sqlx::query(sql::COUNT_DUPLICATE).bind(attempt_id).execute(&mut *self.conn).await.map_err(self.db())?;
        Ok(())
    }
}

/// Runs `$body` (an expression using `$tx: &mut dyn LedgerTx`) in one `BEGIN IMMEDIATE`
/// transaction and commits it; an error rolls it back.
macro_rules! immediate {
    ($store:expr, |$tx:ident| $body:expr) => {{
        let store: &SqliteStore = $store;
        let mut conn = store.read.acquire().await.map_err(store.db())?;
        let mut transaction = (*conn).begin_with("BEGIN IMMEDIATE").await.map_err(store.db())?;
        let value = {
            let mut inner = Tx { conn: &mut *transaction, path: store.path() };
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
impl LedgerStore for SqliteStore {
    async fn insert_work_request(&self, r: &WorkRequestRecord) -> Result<(), StoreError> {
        sqlx::query(sql::INSERT_REQUEST)
            .bind(&r.id)
            .bind(i64::from(r.revision))
            .bind(int(r.epoch))
            .bind(&r.kind)
            .bind(&r.requester)
            .bind(&r.repository)
            .bind(int(r.pr_number))
            .bind(&r.text)
            .bind(r.status.as_str())
            .bind(timestamp_text(&r.created_at))
            .bind(timestamp_text(&r.updated_at))
            .execute(&self.read)
            .await
            .map_err(self.db())?;
        self.append_audit(ledger::request_audit(r)).await?;
        Ok(())
    }

    async fn work_request(&self, id: &str) -> Result<Option<WorkRequestRecord>, StoreError> {
        let q = format!("SELECT {REQUEST_COLUMNS} FROM ledger_requests WHERE id = ?");
        let row = sqlx::query(sqlx::AssertSqlSafe(q)).bind(id).fetch_optional(&self.read).await.map_err(self.db())?;
        row.map(|r| rows::request(self.path(), &r)).transpose()
    }

    async fn work_requests(&self, requester: &str, limit: u32) -> Result<Vec<WorkRequestRecord>, StoreError> {
        let q = format!(
            "SELECT {REQUEST_COLUMNS} FROM ledger_requests WHERE requester = ? ORDER BY created_at DESC, id DESC LIMIT ?"
        );
        let found = sqlx::query(sqlx::AssertSqlSafe(q))
            .bind(requester)
            .bind(i64::from(limit))
            .fetch_all(&self.read)
            .await
            .map_err(self.db())?;
        found.iter().map(|r| rows::request(self.path(), r)).collect()
    }

    async fn work_approvals(&self, request_id: &str) -> Result<Vec<WorkApprovalRecord>, StoreError> {
        let q =
            format!("SELECT {APPROVAL_COLUMNS} FROM ledger_approvals WHERE request_id = ? ORDER BY approved_at, id");
        let found =
            sqlx::query(sqlx::AssertSqlSafe(q)).bind(request_id).fetch_all(&self.read).await.map_err(self.db())?;
        found.iter().map(|r| rows::approval(self.path(), r)).collect()
    }

    async fn authority_of(&self, approval_id: &str) -> Result<Option<AuthorityRecord>, StoreError> {
        let q = format!("SELECT {AUTHORITY_COLUMNS} FROM ledger_authorities WHERE approval_id = ?");
        let row = sqlx::query(sqlx::AssertSqlSafe(q))
            .bind(approval_id)
            .fetch_optional(&self.read)
            .await
            .map_err(self.db())?;
        row.map(|r| rows::authority(self.path(), &r)).transpose()
    }

    async fn attempt_result(&self, attempt_id: &str) -> Result<Option<ResultRecord>, StoreError> {
        let q = format!("SELECT {RESULT_COLUMNS} FROM ledger_results WHERE attempt_id = ?");
        let row =
            sqlx::query(sqlx::AssertSqlSafe(q)).bind(attempt_id).fetch_optional(&self.read).await.map_err(self.db())?;
        row.map(|r| rows::result(self.path(), &r)).transpose()
    }

    async fn approve_work_request(&self, input: &ApproveInput) -> Result<ApproveOutcome, StoreError> {
        let outcome = immediate!(self, |tx| ledger::approve_in(tx, input))?;
        self.append_audit(ledger::approve_audit(input, &outcome)).await?;
        Ok(outcome)
    }

    async fn revoke_work_request(
        &self,
        request_id: &str,
        owner_id: &str,
        at: Timestamp,
    ) -> Result<RevokeOutcome, StoreError> {
        let outcome = immediate!(self, |tx| ledger::revoke_in(tx, request_id, owner_id, at))?;
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
        let q = ledger::candidates_sql(after.is_some());
        let mut query = sqlx::query(sqlx::AssertSqlSafe(q)).bind(owner_id).bind(timestamp_text(&now));
        if let Some(c) = after {
            query = query.bind(c.approved_at.clone()).bind(c.approved_at.clone()).bind(c.approval_id.clone());
        }
        let found = query.bind(i64::from(limit)).fetch_all(&self.read).await.map_err(self.db())?;
        found.iter().map(|r| rows::candidate(self.path(), r)).collect()
    }

    async fn claim_approval(&self, claim: &ClaimInput) -> Result<ClaimOutcome, StoreError> {
        let outcome = immediate!(self, |tx| ledger::claim_in(tx, claim))?;
        self.append_audit(ledger::claim_audit(claim, &outcome)).await?;
        Ok(outcome)
    }

    async fn record_result(&self, input: &ResultInput) -> Result<ResultOutcome, StoreError> {
        let (outcome, request_id) = immediate!(self, |tx| ledger::result_in(tx, input))?;
        self.append_audit(ledger::result_audit(input, request_id.as_deref(), &outcome)).await?;
        Ok(outcome)
    }
}
