//! `steward approvals pending`, `steward approve` and `steward deny`: deciding, from another
//! terminal, the approvals a run waits on (`--approvals wait`, the web UI's runs, a terminal
//! prompt).

use anyhow::Result;
use steward_core::{Clock, SystemClock};
use steward_core::{DecisionError, OwnerDecision, pending_decisions, record_decision};

use super::*;

/// `steward approvals pending`: the approvals your running runs wait on.
pub async fn pending(json: bool) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let owner = local_owner();
    let now = SystemClock.now();
    let found = pending_decisions(store.as_ref(), &owner, now).await?;
    let redactor = redactor();
    if json {
        for (run, request) in &found {
            let line = serde_json::json!({
                "approval_id": request.id,
                "run_id": run.id,
                "tool": request.tool,
                "arguments": redactor.redact_value(&request.arguments),
                "reason": redactor.redact(&request.reason),
                "rule": request.rule,
                "risk": request.risk,
                "expires_at": request.expires_at.to_rfc3339(),
                "call_hash": steward_core::call_hash(request),
            });
            println!("{line}");
        }
        return Ok(0);
    }
    if found.is_empty() {
        println!("no approvals of {owner} are pending");
        return Ok(0);
    }
    println!("{:<22}  {:<22}  {:<9}  {:<20}  ARGUMENTS", "APPROVAL", "RUN", "EXPIRES", "TOOL");
    for (run, request) in &found {
        let left = (request.expires_at - now).num_seconds().max(0);
        let args = redactor.redact(&request.arguments.to_string());
        println!(
            "{:<22}  {:<22}  {:<9}  {:<20}  {}",
            request.id,
            run.id,
            format!("in {:02}:{:02}", left / 60, left % 60),
            request.tool,
            steward_protocol::truncate_chars(&args, 60).replace('\n', " ")
        );
    }
    Ok(0)
}

/// `steward approve ID` (`scope`: once, run or workspace) and `steward deny ID`: records the
/// decision for the run waiting on it. Exit 1 when it was not recorded (not found, another
/// owner's, expired, already decided).
pub async fn decide(approval_id: &str, decision: OwnerDecision) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let owner = local_owner();
    let what = match &decision {
        OwnerDecision::Approve(scope) => format!("approved ({scope})"),
        OwnerDecision::Deny(_) => "denied".to_string(),
    };
    match record_decision(store.as_ref(), &owner, approval_id, decision, SystemClock.now()).await {
        Ok(request) => {
            // What was decided: the run refuses an approval for any other call.
            let args = redactor().redact(&request.arguments.to_string());
            println!("{approval_id} {what}: {} {}", request.tool, steward_protocol::truncate_chars(&args, 200));
            println!("the run waiting on it goes on (or refuses it if that is not the call it would run)");
            Ok(0)
        }
        Err(DecisionError::Store(e)) => Err(e.into()),
        Err(e) => {
            eprintln!("steward: {e}");
            Ok(1)
        }
    }
}
