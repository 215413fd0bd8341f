//! The registry of tools the agent wrote for itself (SPEC G): one row per owner, name and
//! version (`name@v1`, `name@v2` …), each with its full source and who approved it.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use steward_protocol::Timestamp;

use crate::StoreError;

/// One version of a generated tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratedToolRecord {
    /// The owner whose runs offer it.
    pub owner_id: String,
    /// The tool's name (`^[a-z][a-z0-9_]{2,49}$`).
    pub name: String,
    /// Its version: 1, 2, … per owner and name, never given twice.
    pub version: u32,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: serde_json::Value,
    /// The JavaScript source (defines `function run(input)`).
    pub source: String,
    /// SHA-256 of `source`, lowercase hex.
    pub source_hash: String,
    /// Who approved it (the run's owner), or `None` when the configuration registers
    /// generated tools without approval.
    pub approved_by: Option<String>,
    /// The approval request that approved it, if any.
    pub approval_id: Option<String>,
    /// The run that generated it.
    pub run_id: String,
    /// When it was registered.
    pub created_at: Timestamp,
    /// When it was removed, if it was.
    pub removed_at: Option<Timestamp>,
    /// Who removed it.
    pub removed_by: Option<String>,
}

impl GeneratedToolRecord {
    /// `name@vN`.
    pub fn versioned_name(&self) -> String {
        format!("{}@v{}", self.name, self.version)
    }
}

/// Storage of generated tools, in the same database as the runs.
#[async_trait]
pub trait GeneratedToolStore: Send + Sync {
    /// Stores a new version; fails when `(owner_id, name, version)` exists. Returns once
    /// committed.
    async fn insert_generated_tool(&self, record: &GeneratedToolRecord) -> Result<(), StoreError>;

    /// Every version of the owner's generated tools, removed ones included, by name then
    /// version.
    async fn generated_tools(&self, owner_id: &str) -> Result<Vec<GeneratedToolRecord>, StoreError>;

    /// Marks versions of the owner's tool `name` removed (`version` `None`: every version);
    /// returns the versions that were removed now (those already removed are left alone).
    async fn remove_generated_tool(
        &self,
        owner_id: &str,
        name: &str,
        version: Option<u32>,
        removed_by: &str,
        at: Timestamp,
    ) -> Result<Vec<u32>, StoreError>;
}

/// The newest version of each of `records`' names that is not removed, by name.
pub fn current_versions(records: &[GeneratedToolRecord]) -> Vec<&GeneratedToolRecord> {
    let mut current: std::collections::BTreeMap<&str, &GeneratedToolRecord> = std::collections::BTreeMap::new();
    for record in records.iter().filter(|r| r.removed_at.is_none()) {
        let newer = current.get(record.name.as_str()).is_none_or(|seen| seen.version < record.version);
        if newer {
            current.insert(&record.name, record);
        }
    }
    current.into_values().collect()
}
