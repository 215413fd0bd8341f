//! `steward tools generated [show|remove]`: the tools the agent wrote for itself (SPEC G),
//! owned by the local user (`local:<user>`): every version with its source hash and who
//! approved it, the full source of one, and removal (audited; the version number is never
//! given again).

use anyhow::{Result, anyhow};
use clap::Subcommand;
use serde_json::json;
use steward_store::{GeneratedToolRecord, StoreOptions};

use crate::commands::usage_error;
use crate::home::{Home, local_owner};

/// `steward tools generated …`
#[derive(Subcommand, Debug)]
pub enum GeneratedCommand {
    /// Print the source of a generated tool: NAME (its newest version) or NAME@vN.
    Show {
        /// `NAME` or `NAME@vN`.
        tool: String,
    },
    /// Remove a generated tool (every version) or one version (NAME@vN); runs stop offering it.
    Remove {
        /// `NAME` or `NAME@vN`.
        tool: String,
    },
}

/// `NAME` or `NAME@vN` → (name, version).
fn parse(tool: &str) -> Result<(String, Option<u32>)> {
    let (name, version) = match tool.split_once("@v") {
        Some((name, v)) => {
            let v: u32 = v.parse().map_err(|_| usage_error(&format!("`{tool}`: the version is not a number")))?;
            (name, Some(v))
        }
        None => (tool, None),
    };
    if !steward_generated::valid_name(name) {
        return Err(usage_error(&format!("`{name}` is not a generated tool name (^[a-z][a-z0-9_]{{2,49}}$)")));
    }
    Ok((name.to_string(), version))
}

async fn records() -> Result<(std::sync::Arc<dyn steward_store::Store>, Vec<GeneratedToolRecord>)> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let registry = store.generated_registry().ok_or_else(|| anyhow!("this store keeps no generated tools"))?;
    let all = registry.generated_tools(&local_owner()).await?;
    Ok((store, all))
}

/// Lists every version, by name then version: state (offered, older, removed), source hash,
/// who approved it, when.
pub async fn list(json: bool) -> Result<u8> {
    let (_, all) = records().await?;
    let current: Vec<(String, u32)> =
        steward_store::generated::current_versions(&all).iter().map(|r| (r.name.clone(), r.version)).collect();
    if all.is_empty() && !json {
        println!("No generated tools (enable them with [generated_tools] enabled = true).");
    }
    for r in &all {
        let state = if r.removed_at.is_some() {
            "removed"
        } else if current.contains(&(r.name.clone(), r.version)) {
            "offered"
        } else {
            "older"
        };
        if json {
            println!(
                "{}",
                json!({
                    "name": r.name,
                    "version": r.version,
                    "state": state,
                    "description": r.description,
                    "source_sha256": r.source_hash,
                    "approved_by": r.approved_by,
                    "approval_id": r.approval_id,
                    "run_id": r.run_id,
                    "created_at": r.created_at.to_rfc3339(),
                    "removed_at": r.removed_at.map(|t| t.to_rfc3339()),
                    "removed_by": r.removed_by,
                })
            );
            continue;
        }
        println!(
            "{:<30} {:<8} sha256 {}  approved by {}  {}  {}",
            r.versioned_name(),
            state,
            &r.source_hash[..16.min(r.source_hash.len())],
            r.approved_by.as_deref().unwrap_or("nobody"),
            r.created_at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M"),
            r.description
        );
    }
    Ok(0)
}

/// Prints one version's header (hash, approval, schema) and its full source.
pub async fn show(tool: &str) -> Result<u8> {
    let (name, version) = parse(tool)?;
    let (_, all) = records().await?;
    let found = all
        .iter()
        .filter(|r| r.name == name && version.is_none_or(|v| v == r.version))
        .filter(|r| version.is_some() || r.removed_at.is_none())
        .max_by_key(|r| r.version)
        .ok_or_else(|| usage_error(&format!("no generated tool `{tool}` (see `steward tools generated`)")))?;
    // Model-written text: printed with its control characters escaped, so an escape sequence in
    // the source cannot hide a line of it from the person reviewing it.
    println!("// {} — {}", found.versioned_name(), crate::ui::printable_text(&found.description));
    println!("// source sha256 {}", found.source_hash);
    println!("// approved by {}", found.approved_by.as_deref().unwrap_or("nobody (require_approval = false)"));
    if let Some(at) = found.removed_at {
        println!("// removed {} by {}", at.to_rfc3339(), found.removed_by.as_deref().unwrap_or("?"));
    }
    println!("// input schema {}", found.input_schema);
    println!("{}", crate::ui::printable_text(&found.source));
    Ok(0)
}

/// Removes a tool (or one version) and writes an audit record of it.
pub async fn remove(tool: &str) -> Result<u8> {
    let (name, version) = parse(tool)?;
    let (store, _) = records().await?;
    let owner = local_owner();
    let removed =
        steward_core::remove_generated_tool(&store, &steward_core::SystemClock, &owner, &name, version, &owner).await?;
    if removed.is_empty() {
        return Err(usage_error(&format!("no generated tool `{tool}` to remove (see `steward tools generated`)")));
    }
    let versions: Vec<String> = removed.iter().map(|v| format!("{name}@v{v}")).collect();
    println!("Removed {}.", versions.join(", "));
    Ok(0)
}
