//! [`JournalStore`] on PostgreSQL: the `hub_journal` table (migration 0008).
//!
//! Each write is one statement in its own transaction on a connection of the store's pool
//! (the server's `synchronous_commit` applies), so a write has returned only once it is
//! committed; compare-and-set updates (`WHERE state = $n`) keep two hubs sharing the database
//! from moving one row twice.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::PgRow;
use steward_protocol::Timestamp;

use super::PgStore;
use crate::StoreError;
use crate::chain::timestamp_text;
use crate::journal::{JOURNAL_COLUMNS, JournalRecord, JournalState, JournalStore, RawJournalRow, state_list, to_i64};

fn from_row(path: &str, row: &PgRow) -> Result<JournalRecord, StoreError> {
    let db = |source| StoreError::Database { path: path.to_string(), source };
    RawJournalRow {
        attempt_id: row.try_get("attempt_id").map_err(db)?,
        hub_id: row.try_get("hub_id").map_err(db)?,
        approval_id: row.try_get("approval_id").map_err(db)?,
        request_id: row.try_get("request_id").map_err(db)?,
        revision: row.try_get("revision").map_err(db)?,
        epoch: row.try_get("epoch").map_err(db)?,
        repository: row.try_get("repository").map_err(db)?,
        pr_number: row.try_get("pr_number").map_err(db)?,
        head_sha: row.try_get("head_sha").map_err(db)?,
        scope: row.try_get("scope").map_err(db)?,
        expires_at: row.try_get("expires_at").map_err(db)?,
        state: row.try_get("state").map_err(db)?,
        held_from: row.try_get("held_from").map_err(db)?,
        authority: row.try_get("authority").map_err(db)?,
        authority_id: row.try_get("authority_id").map_err(db)?,
        run_id: row.try_get("run_id").map_err(db)?,
        outcome: row.try_get("outcome").map_err(db)?,
        evidence: row.try_get("evidence").map_err(db)?,
        note: row.try_get("note").map_err(db)?,
        resolution: row.try_get("resolution").map_err(db)?,
        created_at: row.try_get("created_at").map_err(db)?,
        updated_at: row.try_get("updated_at").map_err(db)?,
    }
    .into_record(path)
}

#[async_trait]
impl JournalStore for PgStore {
    async fn journal_insert(&self, row: &JournalRecord) -> Result<bool, StoreError> {
        let path = self.path();
        let result = sqlx::query(
            "INSERT INTO hub_journal (attempt_id, hub_id, approval_id, request_id, revision, epoch, repository, \
             pr_number, head_sha, scope, expires_at, state, held_from, authority, authority_id, run_id, outcome, \
             evidence, note, resolution, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22) ON CONFLICT DO NOTHING",
        )
        .bind(&row.attempt_id)
        .bind(&row.hub_id)
        .bind(&row.approval_id)
        .bind(&row.request_id)
        .bind(i64::from(row.revision))
        .bind(to_i64(path, row.epoch, "epoch")?)
        .bind(&row.repository)
        .bind(to_i64(path, row.pr_number, "pr_number")?)
        .bind(&row.head_sha)
        .bind(&row.scope)
        .bind(timestamp_text(&row.expires_at))
        .bind(row.state.as_str())
        .bind(row.held_from.map(JournalState::as_str))
        .bind(&row.authority)
        .bind(&row.authority_id)
        .bind(&row.run_id)
        .bind(&row.outcome)
        .bind(&row.evidence)
        .bind(&row.note)
        .bind(&row.resolution)
        .bind(timestamp_text(&row.created_at))
        .bind(timestamp_text(&row.updated_at))
        .execute(&self.read)
        .await
        .map_err(self.db())?;
        Ok(result.rows_affected() == 1)
    }

    async fn journal_update(&self, row: &JournalRecord, expected: JournalState) -> Result<bool, StoreError> {
        let result = sqlx::query(
            "UPDATE hub_journal SET state = $1, held_from = $2, authority = $3, authority_id = $4, run_id = $5, \
             outcome = $6, evidence = $7, note = $8, resolution = $9, updated_at = $10 WHERE attempt_id = $11 AND state = $12",
        )
        .bind(row.state.as_str())
        .bind(row.held_from.map(JournalState::as_str))
        .bind(&row.authority)
        .bind(&row.authority_id)
        .bind(&row.run_id)
        .bind(&row.outcome)
        .bind(&row.evidence)
        .bind(&row.note)
        .bind(&row.resolution)
        .bind(timestamp_text(&row.updated_at))
        .bind(&row.attempt_id)
        .bind(expected.as_str())
        .execute(&self.read)
        .await
        .map_err(self.db())?;
        Ok(result.rows_affected() == 1)
    }

    async fn journal_get(&self, attempt_id: &str) -> Result<Option<JournalRecord>, StoreError> {
        let sql = format!("SELECT {JOURNAL_COLUMNS} FROM hub_journal WHERE attempt_id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(attempt_id)
            .fetch_optional(&self.read)
            .await
            .map_err(self.db())?;
        row.map(|row| from_row(self.path(), &row)).transpose()
    }

    async fn journal_by_approval(&self, approval_id: &str) -> Result<Option<JournalRecord>, StoreError> {
        let sql = format!("SELECT {JOURNAL_COLUMNS} FROM hub_journal WHERE approval_id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(approval_id)
            .fetch_optional(&self.read)
            .await
            .map_err(self.db())?;
        row.map(|row| from_row(self.path(), &row)).transpose()
    }

    async fn journal_list(&self, states: &[JournalState]) -> Result<Vec<JournalRecord>, StoreError> {
        let filter = if states.is_empty() { String::new() } else { format!("WHERE state IN ({})", state_list(states)) };
        let sql = format!("SELECT {JOURNAL_COLUMNS} FROM hub_journal {filter} ORDER BY created_at, attempt_id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&self.read).await.map_err(self.db())?;
        rows.iter().map(|row| from_row(self.path(), row)).collect()
    }

    async fn journal_hold(
        &self,
        hub_id: &str,
        states: &[JournalState],
        at: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        if states.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "UPDATE hub_journal SET held_from = state, state = 'held', note = 'restart', updated_at = $1 \
             WHERE hub_id = $2 AND state IN ({}) RETURNING attempt_id, created_at",
            state_list(states)
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(timestamp_text(&at))
            .bind(hub_id)
            .fetch_all(&self.read)
            .await
            .map_err(self.db())?;
        let mut held = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = row.try_get("attempt_id").map_err(self.db())?;
            let created: String = row.try_get("created_at").map_err(self.db())?;
            held.push((created, id));
        }
        held.sort();
        Ok(held.into_iter().map(|(_, id)| id).collect())
    }
}
