//! `steward audit anchor`: show the audit anchor, or reset it on purpose (`--reset`).

use anyhow::Result;
use steward_protocol::AuditEntry;

use super::*;

/// The audit action of a deliberate anchor reset.
pub const ANCHOR_RESET_ACTION: &str = "audit_anchor_reset";

/// `steward audit anchor [--reset]`. Without `--reset`: prints where the anchor is and what it
/// holds (exit 0), or that it is missing (exit 1 when the chain has records). With `--reset`:
/// appends an audit record naming who reset the anchor, when, and what it held before, then
/// anchors the chain at that record; `steward audit verify` passes again if the chain itself
/// is intact.
pub async fn audit_anchor(reset: bool) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let Some(path) = store.audit_anchor().map(std::path::Path::to_path_buf) else {
        println!("this store keeps no audit anchor");
        return Ok(0);
    };
    let records = store.audit_records(None).await?;
    let before = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text.trim().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot read {}", path.display()))),
    };
    if !reset {
        match &before {
            Some(anchor) => println!("audit anchor {}: {anchor}", path.display()),
            None if records.is_empty() => {
                println!("audit anchor {}: not written yet (the chain is empty)", path.display())
            }
            None => {
                println!("audit anchor {}: missing ({} records in the chain)", path.display(), records.len());
                return Ok(1);
            }
        }
        return Ok(0);
    }
    let owner = local_owner();
    let head = records.last().map(|r| serde_json::json!({"seq": r.seq, "hash": r.hash}));
    let held = before.as_deref().unwrap_or("nothing (the file was missing)");
    let entry = AuditEntry::owner_action(
        &owner,
        ANCHOR_RESET_ACTION,
        serde_json::json!({
            "anchor": path.display().to_string(),
            "previous_anchor": before,
            "chain_head_before": head,
            "records_before": records.len(),
        }),
        format!("{owner} reset the audit anchor {}; it held {held}", path.display()),
    );
    let record = store.reset_audit_anchor(entry).await?;
    store.flush().await?;
    println!(
        "audit anchor reset by {owner} at {}: now record {} ({}); the reset is audit record {}",
        steward_store::timestamp_text(&record.at),
        record.seq,
        record.hash,
        record.id
    );
    Ok(0)
}
