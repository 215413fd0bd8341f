//! [`Store`] over either database: reads on the read pool, writes through the writer task.

use std::time::Duration;

use async_trait::async_trait;
use steward_protocol::{ApprovalRequest, AuditEntry, AuditRecord, Event, Timestamp};
use tokio::sync::oneshot;

use super::SqlStore;
use super::dialect::{Dialect, ReadRow, args};
use super::rows::{
    APPROVAL_COLUMNS, AUDIT_COLUMNS, FACT_COLUMNS, MCP_TOKEN_COLUMNS, RUN_COLUMNS, approval_from_row, audit_from_row,
    body_from_row, event_from_row, fact_from_row, mcp_token_from_row, run_from_row,
};
use super::work::{DocumentTable, Reply, Work};
use crate::chain::timestamp_text;
use crate::{
    ApprovalDecisionRecord, ApprovalStore, AuditStore, AuditVerification, Change, ConversationRecord,
    ConversationStore, FactRecord, GrantRecord, LeaseStore, McpTokenRecord, OnDisk, RollbackRecord, RunRecord,
    RunStatus, RunStore, Store, StoreError, TokenStore, verify_chain_keyed,
};

#[async_trait]
impl<D: Dialect> RunStore for SqlStore<D> {
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
        let row = self.fetch_optional(&sql, args![id]).await?;
        row.map(|row| run_from_row(self.path(), &row)).transpose()
    }

    async fn list_runs(&self, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at DESC, id DESC LIMIT ?");
        let rows = self.fetch_all(&sql, args![i64::from(limit)]).await?;
        rows.iter().map(|row| run_from_row(self.path(), row)).collect()
    }

    async fn runs_with_status(&self, status: RunStatus) -> Result<Vec<RunRecord>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE status = ? ORDER BY created_at, id");
        let rows = self.fetch_all(&sql, args![status.as_str()]).await?;
        rows.iter().map(|row| run_from_row(self.path(), row)).collect()
    }

    async fn local_running_runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        // A database on one machine: every running run is local.
        let Some(node) = self.shared.dialect.node() else { return self.runs_with_status(RunStatus::Running).await };
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE status = ? AND node = ? ORDER BY created_at, id");
        let rows = self.fetch_all(&sql, args![RunStatus::Running.as_str(), node]).await?;
        rows.iter().map(|row| run_from_row(self.path(), row)).collect()
    }

    async fn append_event(&self, event: &Event) -> Result<(), StoreError> {
        self.enqueue(Work::Event(Box::new(event.clone())), Reply::Nobody).await
    }

    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<Event>, StoreError> {
        // Read our own queued events: wait until they are committed.
        self.write(Work::Barrier { durable: false }).await?;
        let sql = "SELECT body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq";
        let rows = self.fetch_all(sql, args![run_id, i64::try_from(after_seq).unwrap_or(i64::MAX)]).await?;
        rows.iter().map(|row| event_from_row(self.path(), row)).collect()
    }

    async fn upsert_rollback(&self, record: &RollbackRecord) -> Result<(), StoreError> {
        let doc = self.document(DocumentTable::Rollbacks, &record.token, &record.run_id, &record.created_at, record)?;
        self.write(doc).await
    }

    async fn rollbacks(&self, run_id: &str) -> Result<Vec<RollbackRecord>, StoreError> {
        let mut records: Vec<RollbackRecord> = self.documents(DocumentTable::Rollbacks, run_id).await?;
        records.sort_by_key(|r| r.step);
        Ok(records)
    }

    async fn delete_run(&self, id: &str) -> Result<bool, StoreError> {
        self.write_flag(Work::DeleteRun(id.to_string())).await
    }
}

#[async_trait]
impl<D: Dialect> AuditStore for SqlStore<D> {
    async fn queue_audit(&self, entry: AuditEntry) -> Result<(), StoreError> {
        self.enqueue(Work::Audit(Box::new(entry)), Reply::Nobody).await
    }

    async fn append_audit(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(Work::Audit(Box::new(entry)), Reply::Audit(tx)).await?;
        rx.await.map_err(|_| self.closed())?
    }

    async fn append_audit_if_running(
        &self,
        entry: AuditEntry,
        on_disk: OnDisk,
    ) -> Result<Option<AuditRecord>, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(Work::GuardedAudit(Box::new(entry), on_disk), Reply::GuardedAudit(tx)).await?;
        rx.await.map_err(|_| self.closed())?
    }

    async fn audit_on_disk(&self, seq: u64) -> Result<(), StoreError> {
        let mut synced = self.shared.on_disk.subscribe();
        let state = synced.wait_for(|s| s.answer(seq).is_some()).await.map_err(|_| self.closed())?;
        match state.answer(seq) {
            Some(Err(why)) => Err(StoreError::Write { path: self.shared.path.clone(), message: why.to_string() }),
            _ => Ok(()),
        }
    }

    async fn audit_records(&self, run_id: Option<&str>) -> Result<Vec<AuditRecord>, StoreError> {
        let rows = match run_id {
            Some(run_id) => {
                let sql = format!("SELECT {AUDIT_COLUMNS} FROM audit WHERE run_id = ? ORDER BY seq");
                self.fetch_all(&sql, args![run_id]).await?
            }
            None => self.fetch_all(&format!("SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq"), Vec::new()).await?,
        };
        rows.iter().map(|row| audit_from_row(self.path(), row)).collect()
    }

    async fn verify_audit(&self) -> Result<AuditVerification, StoreError> {
        // One pass hashing the rows as stored (see `verify`); it only ever concludes that the chain
        // is intact. Anything else is judged by decoding every record, below.
        let anchor = match &self.shared.anchor {
            Some(path) => Some(
                crate::anchor::read(path)
                    .map_err(|source| StoreError::Io { path: path.display().to_string(), source })?,
            ),
            None => None,
        };
        if let Some(valid) = self.verify_streaming(&anchor).await? {
            return Ok(valid);
        }
        let rows = self.fetch_all(&format!("SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq"), Vec::new()).await?;
        let mut records = Vec::with_capacity(rows.len());
        for row in &rows {
            match audit_from_row(self.path(), row) {
                Ok(record) => records.push(record),
                // A row that no longer decodes was edited: the first such row breaks the chain
                // unless an earlier record is already bad.
                Err(_) => {
                    let seq = row.int("seq").unwrap_or(0);
                    let id = row.text("id").unwrap_or_default();
                    if let broken @ AuditVerification::Broken { .. } =
                        verify_chain_keyed(&records, self.shared.audit_key.as_ref())
                    {
                        return Ok(broken);
                    }
                    let seq = u64::try_from(seq).unwrap_or(0);
                    return Ok(AuditVerification::Broken { seq, id, problem: "changed".into() });
                }
            }
        }
        let verdict = verify_chain_keyed(&records, self.shared.audit_key.as_ref());
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
}

#[async_trait]
impl<D: Dialect> ApprovalStore for SqlStore<D> {
    async fn upsert_approval(&self, approval: &ApprovalRequest) -> Result<(), StoreError> {
        self.write(Work::Approval(Box::new(approval.clone()))).await
    }

    async fn approvals(&self, run_id: &str) -> Result<Vec<ApprovalRequest>, StoreError> {
        let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE run_id = ? ORDER BY created_at, id");
        let rows = self.fetch_all(&sql, args![run_id]).await?;
        rows.iter().map(|row| approval_from_row(self.path(), row)).collect()
    }

    async fn upsert_grant(&self, grant: &GrantRecord) -> Result<(), StoreError> {
        let doc = self.document(DocumentTable::Grants, &grant.id, &grant.owner_id, &grant.created_at, grant)?;
        self.write(doc).await
    }

    async fn grants(&self, owner_id: &str) -> Result<Vec<GrantRecord>, StoreError> {
        self.documents(DocumentTable::Grants, owner_id).await
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
        let sql = "SELECT body FROM approval_decisions WHERE approval_id = ?";
        let row = self.fetch_optional(sql, args![approval_id]).await?;
        row.map(|row| body_from_row(self.path(), "approval_decisions", &row)).transpose()
    }
}

#[async_trait]
impl<D: Dialect> ConversationStore for SqlStore<D> {
    async fn insert_fact(&self, fact: &FactRecord, max_per_owner: u32) -> Result<bool, StoreError> {
        self.write_flag(Work::InsertFact { fact: Box::new(fact.clone()), max_per_owner }).await
    }

    async fn facts(&self, owner_id: &str) -> Result<Vec<FactRecord>, StoreError> {
        // No barrier: facts are only written by writes that are waited for (never queued like
        // events and audit records), so every fact write of this store that returned is
        // committed already, and a run's first request does not wait for its queued events.
        let sql = format!("SELECT {FACT_COLUMNS} FROM facts WHERE owner_id = ? ORDER BY created_at, id");
        let rows = self.fetch_all(&sql, args![owner_id]).await?;
        rows.iter().map(|row| fact_from_row(self.path(), row)).collect()
    }

    async fn delete_fact(&self, owner_id: &str, id: &str) -> Result<bool, StoreError> {
        self.write_flag(Work::DeleteFact { owner_id: owner_id.to_string(), id: id.to_string() }).await
    }

    async fn upsert_conversation(&self, c: &ConversationRecord) -> Result<(), StoreError> {
        let doc = self.document(DocumentTable::Conversations, &c.id, &c.owner_id, &c.created_at, c)?;
        self.write(doc).await
    }

    async fn conversations(&self, owner_id: &str) -> Result<Vec<ConversationRecord>, StoreError> {
        self.documents(DocumentTable::Conversations, owner_id).await
    }

    async fn conversation(&self, id: &str) -> Result<Option<ConversationRecord>, StoreError> {
        // Reads see every write queued before them.
        self.visible().await?;
        let row = self.fetch_optional("SELECT body FROM conversations WHERE id = ?", args![id]).await?;
        row.map(|row| body_from_row(self.path(), "conversations", &row)).transpose()
    }
}

#[async_trait]
impl<D: Dialect> TokenStore for SqlStore<D> {
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
        let rows = self.fetch_all(&sql, args![owner_id]).await?;
        rows.iter().map(|row| mcp_token_from_row(self.path(), row)).collect()
    }

    async fn mcp_token_by_hash(&self, token_hash: &str) -> Result<Option<McpTokenRecord>, StoreError> {
        let sql = format!("SELECT {MCP_TOKEN_COLUMNS} FROM mcp_tokens WHERE token_hash = ?");
        let row = self.fetch_optional(&sql, args![token_hash]).await?;
        row.map(|row| mcp_token_from_row(self.path(), &row)).transpose()
    }

    async fn revoke_mcp_token(&self, owner_id: &str, id: &str, at: Timestamp) -> Result<bool, StoreError> {
        self.write_flag(Work::RevokeMcpToken {
            owner_id: owner_id.to_string(),
            id: id.to_string(),
            at: timestamp_text(&at),
        })
        .await
    }

    async fn touch_mcp_token(&self, id: &str, at: Timestamp) -> Result<bool, StoreError> {
        self.write_flag(Work::TouchMcpToken { id: id.to_string(), at: timestamp_text(&at) }).await
    }
}

#[async_trait]
impl<D: Dialect> LeaseStore for SqlStore<D> {
    async fn renew_leases(&self, pid: u32, ttl: Duration) -> Result<u64, StoreError> {
        self.shared.dialect.renew_leases(&self.read, self.path(), pid, ttl).await
    }

    async fn lost_runs(&self, run_ids: &[String]) -> Result<Vec<String>, StoreError> {
        self.shared.dialect.lost_runs(&self.read, self.path(), run_ids).await
    }

    async fn take_over_expired_runs(&self, ttl: Duration, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        self.shared.dialect.take_over(&self.read, self.path(), ttl, limit).await
    }
}

#[async_trait]
impl<D: Dialect> Store for SqlStore<D> {
    fn ledger(&self) -> Option<&dyn crate::ledger::LedgerStore> {
        Some(self)
    }

    fn generated_registry(&self) -> Option<&dyn crate::generated::GeneratedToolStore> {
        Some(self)
    }

    async fn flush(&self) -> Result<(), StoreError> {
        self.write(Work::Barrier { durable: true }).await?;
        let deferred = self.shared.deferred.lock().ok().and_then(|mut slot| slot.take());
        match deferred {
            Some(message) => Err(StoreError::Deferred { path: self.shared.path.clone(), message }),
            None => Ok(()),
        }
    }

    async fn close(&self) -> Result<(), StoreError> {
        self.flush().await?;
        if D::CLOSE.is_empty() {
            return Ok(());
        }
        let mut conn = self.read.acquire().await.map_err(self.db())?;
        for sql in D::CLOSE {
            if let Err(source) = D::execute(&mut conn, sql, Vec::new()).await {
                // Its settings are in doubt: it is not given back to the pool.
                conn.close_on_drop();
                return Err(StoreError::Database { path: self.shared.path.clone(), source });
            }
        }
        Ok(())
    }

    fn subscribe_changes(&self) -> Option<tokio::sync::broadcast::Receiver<Change>> {
        self.shared.dialect.subscribe()
    }
}
