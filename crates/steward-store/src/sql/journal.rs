//! [`JournalStore`] over either database: the `hub_journal` table (migration 0008).
//!
//! Each write is one statement in its own transaction on a connection of the store's read pool
//! (on SQLite: the same file, WAL mode, `synchronous` as configured, 10 s busy timeout; on
//! PostgreSQL the server's `synchronous_commit` applies), so a write has returned only once it is
//! committed; compare-and-set updates (`WHERE state = ?`) keep two hubs sharing the database
//! from moving one row twice.

use async_trait::async_trait;
use steward_protocol::Timestamp;

use super::SqlStore;
use super::dialect::{Dialect, ReadRow, args};
use crate::StoreError;
use crate::chain::timestamp_text;
use crate::journal::{JOURNAL_COLUMNS, JournalRecord, JournalState, JournalStore, RawJournalRow, state_list, to_i64};

fn from_row(path: &str, row: &impl ReadRow) -> Result<JournalRecord, StoreError> {
    let db = |source| StoreError::Database { path: path.to_string(), source };
    RawJournalRow {
        attempt_id: row.text("attempt_id").map_err(db)?,
        hub_id: row.text("hub_id").map_err(db)?,
        approval_id: row.text("approval_id").map_err(db)?,
        request_id: row.text("request_id").map_err(db)?,
        revision: row.int("revision").map_err(db)?,
        epoch: row.int("epoch").map_err(db)?,
        repository: row.text("repository").map_err(db)?,
        pr_number: row.int("pr_number").map_err(db)?,
        head_sha: row.text("head_sha").map_err(db)?,
        scope: row.text("scope").map_err(db)?,
        expires_at: row.text("expires_at").map_err(db)?,
        state: row.text("state").map_err(db)?,
        held_from: row.opt_text("held_from").map_err(db)?,
        authority: row.opt_text("authority").map_err(db)?,
        authority_id: row.opt_text("authority_id").map_err(db)?,
        run_id: row.opt_text("run_id").map_err(db)?,
        outcome: row.opt_text("outcome").map_err(db)?,
        evidence: row.opt_text("evidence").map_err(db)?,
        note: row.opt_text("note").map_err(db)?,
        resolution: row.opt_text("resolution").map_err(db)?,
        created_at: row.text("created_at").map_err(db)?,
        updated_at: row.text("updated_at").map_err(db)?,
    }
    .into_record(path)
}

#[async_trait]
impl<D: Dialect> JournalStore for SqlStore<D> {
    async fn journal_insert(&self, row: &JournalRecord) -> Result<bool, StoreError> {
        let path = self.path();
        let values = args![
            row.attempt_id.as_str(),
            row.hub_id.as_str(),
            row.approval_id.as_str(),
            row.request_id.as_str(),
            i64::from(row.revision),
            to_i64(path, row.epoch, "epoch")?,
            row.repository.as_str(),
            to_i64(path, row.pr_number, "pr_number")?,
            row.head_sha.as_str(),
            row.scope.as_str(),
            timestamp_text(&row.expires_at),
            row.state.as_str(),
            row.held_from.map(JournalState::as_str),
            row.authority.as_deref(),
            row.authority_id.as_deref(),
            row.run_id.as_deref(),
            row.outcome.as_deref(),
            row.evidence.as_deref(),
            row.note.as_deref(),
            row.resolution.as_deref(),
            timestamp_text(&row.created_at),
            timestamp_text(&row.updated_at),
        ];
        let sql = "INSERT INTO hub_journal (attempt_id, hub_id, approval_id, request_id, revision, epoch, repository, \
             pr_number, head_sha, scope, expires_at, state, held_from, authority, authority_id, run_id, outcome, \
             evidence, note, resolution, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING";
        Ok(self.execute(sql, values).await? == 1)
    }

    async fn journal_update(&self, row: &JournalRecord, expected: JournalState) -> Result<bool, StoreError> {
        let values = args![
            row.state.as_str(),
            row.held_from.map(JournalState::as_str),
            row.authority.as_deref(),
            row.authority_id.as_deref(),
            row.run_id.as_deref(),
            row.outcome.as_deref(),
            row.evidence.as_deref(),
            row.note.as_deref(),
            row.resolution.as_deref(),
            timestamp_text(&row.updated_at),
            row.attempt_id.as_str(),
            expected.as_str(),
        ];
        let sql = "UPDATE hub_journal SET state = ?, held_from = ?, authority = ?, authority_id = ?, run_id = ?, \
             outcome = ?, evidence = ?, note = ?, resolution = ?, updated_at = ? WHERE attempt_id = ? AND state = ?";
        Ok(self.execute(sql, values).await? == 1)
    }

    async fn journal_get(&self, attempt_id: &str) -> Result<Option<JournalRecord>, StoreError> {
        let sql = format!("SELECT {JOURNAL_COLUMNS} FROM hub_journal WHERE attempt_id = ?");
        let row = self.fetch_optional(&sql, args![attempt_id]).await?;
        row.map(|row| from_row(self.path(), &row)).transpose()
    }

    async fn journal_by_approval(&self, approval_id: &str) -> Result<Option<JournalRecord>, StoreError> {
        let sql = format!("SELECT {JOURNAL_COLUMNS} FROM hub_journal WHERE approval_id = ?");
        let row = self.fetch_optional(&sql, args![approval_id]).await?;
        row.map(|row| from_row(self.path(), &row)).transpose()
    }

    async fn journal_list(&self, states: &[JournalState]) -> Result<Vec<JournalRecord>, StoreError> {
        let filter = if states.is_empty() { String::new() } else { format!("WHERE state IN ({})", state_list(states)) };
        let sql = format!("SELECT {JOURNAL_COLUMNS} FROM hub_journal {filter} ORDER BY created_at, attempt_id");
        let rows = self.fetch_all(&sql, Vec::new()).await?;
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
            "UPDATE hub_journal SET held_from = state, state = 'held', note = 'restart', updated_at = ? \
             WHERE hub_id = ? AND state IN ({}) RETURNING attempt_id, created_at",
            state_list(states)
        );
        let rows = self.fetch_all(&sql, args![timestamp_text(&at), hub_id]).await?;
        let mut held = Vec::with_capacity(rows.len());
        for row in &rows {
            let id = row.text("attempt_id").map_err(self.db())?;
            let created = row.text("created_at").map_err(self.db())?;
            held.push((created, id));
        }
        held.sort();
        Ok(held.into_iter().map(|(_, id)| id).collect())
    }
}
