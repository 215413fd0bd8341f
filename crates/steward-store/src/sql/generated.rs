//! [`GeneratedToolStore`] over either database: the `generated_tools` table (migration 0011).
//! Each write is one statement in its own transaction on a connection of the read pool, so it
//! has returned only once it is committed.

use async_trait::async_trait;
use steward_protocol::Timestamp;

use super::SqlStore;
use super::dialect::{Dialect, args};
use super::rows::body_from_row;
use crate::StoreError;
use crate::chain::timestamp_text;
use crate::generated::{GeneratedToolRecord, GeneratedToolStore};

#[async_trait]
impl<D: Dialect> GeneratedToolStore for SqlStore<D> {
    async fn insert_generated_tool(&self, record: &GeneratedToolRecord) -> Result<(), StoreError> {
        let body = serde_json::to_string(record).map_err(|e| StoreError::Invalid {
            path: self.path().to_string(),
            what: format!("generated tool record is not serialisable ({e})"),
        })?;
        let sql = "INSERT INTO generated_tools (owner_id, name, version, created_at, removed_at, body) \
                   VALUES (?, ?, ?, ?, ?, ?)";
        let values = args![
            record.owner_id.as_str(),
            record.name.as_str(),
            i64::from(record.version),
            timestamp_text(&record.created_at),
            record.removed_at.as_ref().map(timestamp_text),
            body,
        ];
        self.execute(sql, values).await?;
        Ok(())
    }

    async fn generated_tools(&self, owner_id: &str) -> Result<Vec<GeneratedToolRecord>, StoreError> {
        // The body is rewritten with the removal, so it alone is the record.
        let sql = "SELECT body FROM generated_tools WHERE owner_id = ? ORDER BY name, version";
        let rows = self.fetch_all(sql, args![owner_id]).await?;
        rows.iter().map(|row| body_from_row(self.path(), "generated_tools", row)).collect()
    }

    async fn remove_generated_tool(
        &self,
        owner_id: &str,
        name: &str,
        version: Option<u32>,
        removed_by: &str,
        at: Timestamp,
    ) -> Result<Vec<u32>, StoreError> {
        let mut removed = Vec::new();
        for record in self.generated_tools(owner_id).await? {
            if record.name != name || record.removed_at.is_some() || version.is_some_and(|v| v != record.version) {
                continue;
            }
            let mut updated = record.clone();
            updated.removed_at = Some(at);
            updated.removed_by = Some(removed_by.to_string());
            let body = serde_json::to_string(&updated).map_err(|e| StoreError::Invalid {
                path: self.path().to_string(),
                what: format!("generated tool record is not serialisable ({e})"),
            })?;
            let sql = "UPDATE generated_tools SET removed_at = ?, body = ? \
                       WHERE owner_id = ? AND name = ? AND version = ? AND removed_at IS NULL";
            let values = args![timestamp_text(&at), body, owner_id, name, i64::from(record.version)];
            if self.execute(sql, values).await? == 1 {
                removed.push(record.version);
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::generated::{GeneratedToolRecord, current_versions};
    use crate::{SqliteStore, Store};

    fn record(owner: &str, name: &str, version: u32) -> GeneratedToolRecord {
        GeneratedToolRecord {
            owner_id: owner.into(),
            name: name.into(),
            version,
            description: format!("{name} v{version}"),
            input_schema: json!({"type": "object"}),
            source: "function run() { return 1; }".into(),
            source_hash: "ab".repeat(32),
            approved_by: Some(owner.into()),
            approval_id: Some("apr_1".into()),
            run_id: "run_1".into(),
            created_at: chrono::Utc::now(),
            removed_at: None,
            removed_by: None,
        }
    }

    #[tokio::test]
    async fn versions_are_kept_per_owner_removed_ones_stay_and_are_never_offered() {
        let store = SqliteStore::open_in_memory().await.unwrap();
        let registry = store.generated_registry().unwrap();
        for r in [record("alice", "to_celsius", 1), record("alice", "to_celsius", 2), record("bob", "to_celsius", 1)] {
            registry.insert_generated_tool(&r).await.unwrap();
        }
        // A version is never given twice.
        assert!(registry.insert_generated_tool(&record("alice", "to_celsius", 2)).await.is_err());
        let alice = registry.generated_tools("alice").await.unwrap();
        assert_eq!(alice.iter().map(|r| r.version).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(current_versions(&alice).iter().map(|r| r.version).collect::<Vec<_>>(), [2]);

        let removed = registry.remove_generated_tool("alice", "to_celsius", Some(2), "alice", chrono::Utc::now()).await;
        assert_eq!(removed.unwrap(), [2]);
        let alice = registry.generated_tools("alice").await.unwrap();
        assert_eq!(alice[1].removed_by.as_deref(), Some("alice"));
        assert_eq!(current_versions(&alice).iter().map(|r| r.version).collect::<Vec<_>>(), [1]);
        let removed = registry.remove_generated_tool("alice", "to_celsius", None, "alice", chrono::Utc::now()).await;
        assert_eq!(removed.unwrap(), [1]);
        assert!(current_versions(&registry.generated_tools("alice").await.unwrap()).is_empty());
        // Bob's tool is his alone and untouched.
        assert_eq!(current_versions(&registry.generated_tools("bob").await.unwrap()).len(), 1);
    }
}
