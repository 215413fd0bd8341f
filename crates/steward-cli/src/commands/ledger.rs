//! `steward ledger …`: the work ledger from the terminal, on the local store directly (the
//! same database `steward serve` uses), as the local owner (`local:<user>`).
//!
//! `request` files a work request, `list` shows the owner's requests, `approve` approves an
//! open one pinned to its revision, a head SHA and an expiry, `revoke` revokes one. Every
//! change is audited by the store. Hubs claim approved work over HTTP from `steward serve`
//! (`/api/ledger/…`), never from here.

use anyhow::{Context, Result};
use clap::Subcommand;
use steward_core::{Clock, SystemClock};
use steward_ledger::requests::{self as api, LedgerError};
use steward_ledger::wire::{ApproveWorkRequest, NewWorkRequest, WorkKind};
use steward_store::ledger::{WorkApprovalRecord, WorkRequestRecord};
use steward_store::{LedgerStore, Store, StoreOptions};

use crate::commands::usage_error;
use crate::home::{Home, local_owner};

/// `steward ledger` subcommands.
#[derive(Subcommand)]
pub enum LedgerCommand {
    /// File a work request: ask for a summary of pull request PR of repository REPO.
    Request {
        /// The repository's name (e.g. `demo` or `org/demo`).
        #[arg(long)]
        repo: String,
        /// The pull request's number.
        #[arg(long)]
        pr: u64,
        /// Free text for the job (data, never instructions to Steward; at most 4,000 characters).
        #[arg(long, default_value = "")]
        text: String,
        /// Print the request as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List your work requests, newest first.
    List {
        /// How many.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Approve an open work request, pinned to its revision, the head commit HEAD and an expiry.
    Approve {
        /// The request id (`wrq_…`).
        id: String,
        /// The full head commit id approved (40 hex characters); a job never follows a moved head.
        #[arg(long)]
        head: String,
        /// How long the approval lasts: a number with `s`, `m`, `h` or `d` (at most 1d).
        #[arg(long, default_value = "1h")]
        expires_in: String,
        /// The revision you reviewed (default: the request's current one, which is printed).
        #[arg(long)]
        revision: Option<u32>,
    },
    /// Revoke a work request: its epoch is bumped and no hub can claim it any more.
    Revoke {
        /// The request id (`wrq_…`).
        id: String,
    },
    /// List the hub's held attempts (never re-run automatically) with what is known of them.
    ///
    /// Reads the hub's journal in the hub's own database: run it where the hub runs, with the
    /// hub's `STEWARD_HOME` (and its `STEWARD_DATABASE_URL` when the hub uses one), not the
    /// environment of `steward serve`.
    Held {
        /// JSON lines, with the evidence recorded so far.
        #[arg(long)]
        json: bool,
    },
    /// Show the hub's last failed listing of candidates: its class, failures in a row and the
    /// next attempt time (nothing when the last listing was complete).
    ///
    /// Reads the state directory of the hub: run it with the hub's `STEWARD_HOME`.
    Polls {
        /// The failure as JSON (`null` when there is none).
        #[arg(long)]
        json: bool,
    },
    /// Record your decision on a held attempt; nothing is run (`retry` needs a fresh approval).
    ///
    /// Writes to the hub's journal in the hub's own database: run it with the hub's
    /// `STEWARD_HOME` (and its `STEWARD_DATABASE_URL` when the hub uses one), as for
    /// `steward ledger held`.
    Resolve {
        /// The attempt id (`att_…`), as `steward ledger held` lists it.
        attempt: String,
        /// completed, failed, or retry (the request becomes eligible again through a new approval).
        #[arg(long = "as", value_parser = ["completed", "failed", "retry"])]
        resolution: String,
    },
}

/// Runs a `steward ledger` subcommand.
pub async fn run(command: LedgerCommand) -> Result<u8> {
    match command {
        LedgerCommand::Request { repo, pr, text, json } => request(&repo, pr, &text, json).await,
        LedgerCommand::List { limit, json } => list(limit, json).await,
        LedgerCommand::Approve { id, head, expires_in, revision } => approve(&id, &head, &expires_in, revision).await,
        LedgerCommand::Revoke { id } => revoke(&id).await,
        LedgerCommand::Held { json } => crate::commands::hub::held(json).await,
        LedgerCommand::Polls { json } => crate::commands::hub::polls(json),
        LedgerCommand::Resolve { attempt, resolution } => {
            crate::commands::hub::resolve_held(&attempt, &resolution).await
        }
    }
}

/// The local store (whose ledger the commands use).
async fn open() -> Result<std::sync::Arc<dyn Store>> {
    let home = Home::locate()?;
    home.open_store(StoreOptions::default()).await
}

fn ledger_of(store: &dyn Store) -> Result<&dyn LedgerStore> {
    store.ledger().context("this store keeps no work ledger")
}

/// A ledger refusal as a CLI error: bad input and refusals are usage errors (exit 2).
fn refused(e: LedgerError) -> anyhow::Error {
    if e.is_internal() { anyhow::anyhow!("{e}") } else { usage_error(&e.to_string()) }
}

/// Why a lifetime given to `--expires-in` is refused; holds the text as given (trimmed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LifetimeError {
    /// Not a number with an optional `s`, `m`, `h` or `d`.
    #[error("`{0}` is not a lifetime like 90s, 30m, 1h or 1d")]
    Malformed(String),
    /// More seconds than fit in 64 bits.
    #[error("`{0}` is too long")]
    TooLong(String),
}

/// Seconds of a lifetime such as `90s`, `30m`, `1h` or `1d`.
pub fn parse_lifetime(text: &str) -> Result<u64, LifetimeError> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| LifetimeError::Malformed(text.to_string()))?;
    let factor = match unit {
        "s" | "" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(LifetimeError::Malformed(text.to_string())),
    };
    n.checked_mul(factor).ok_or_else(|| LifetimeError::TooLong(text.to_string()))
}

fn line(r: &WorkRequestRecord) -> String {
    let text: String = r.text.chars().take(60).filter(|c| !c.is_control()).collect();
    format!(
        "{}  {:<9} {}#{}  rev {} epoch {}  {}  {:?}",
        r.id,
        r.status.as_str(),
        r.repository,
        r.pr_number,
        r.revision,
        r.epoch,
        r.created_at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M"),
        text
    )
}

/// `steward ledger request --repo R --pr N [--text T]`.
async fn request(repo: &str, pr: u64, text: &str, json: bool) -> Result<u8> {
    let store = open().await?;
    let owner = local_owner();
    let new =
        NewWorkRequest { kind: WorkKind::PrSummary, repository: repo.to_string(), pr_number: pr, text: text.into() };
    let record =
        api::file_request(ledger_of(store.as_ref())?, SystemClock.now(), &owner, &new).await.map_err(refused)?;
    store.flush().await?;
    if json {
        println!("{}", serde_json::to_string(&api::request_view(&record).map_err(refused)?)?);
    } else {
        println!("{}", line(&record));
        eprintln!("steward: approve it with `steward ledger approve {} --head <40-hex commit id>`", record.id);
    }
    Ok(0)
}

/// `steward ledger list`.
async fn list(limit: u32, json: bool) -> Result<u8> {
    let store = open().await?;
    let ledger = ledger_of(store.as_ref())?;
    let records = ledger.work_requests(&local_owner(), limit).await?;
    for r in &records {
        if json {
            let approvals: Vec<_> = ledger
                .work_approvals(&r.id)
                .await?
                .iter()
                .map(api::approval_view)
                .collect::<Result<_, _>>()
                .map_err(refused)?;
            let view = api::request_view(r).map_err(refused)?;
            println!("{}", serde_json::json!({"request": view, "approvals": approvals}));
        } else {
            println!("{}", line(r));
            if let Some(a) = ledger.work_approvals(&r.id).await?.last() {
                println!(
                    "    approved revision {} at {} until {} ({})",
                    a.revision,
                    a.head_sha,
                    a.expires_at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S"),
                    a.id
                );
                if let Some(authority) = ledger.authority_of(&a.id).await?
                    && let Some(result) = ledger.attempt_result(&authority.attempt_id).await?
                {
                    println!("    {}", result_line(&authority.hub_id, &result));
                }
            }
        }
    }
    if records.is_empty() && !json {
        println!("no work requests (file one with `steward ledger request --repo R --pr N`)");
    }
    Ok(0)
}

/// One line on an attempt's reported result: hub, outcome and the start of the summary (the
/// hub's text: control characters dropped, at most 200 chars).
fn result_line(hub_id: &str, result: &steward_store::ledger::ResultRecord) -> String {
    let evidence: Option<steward_ledger::wire::Evidence> = serde_json::from_str(&result.evidence).ok();
    let summary: String = evidence
        .and_then(|e| e.summary)
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    format!("{} by {} (attempt {}): {}", result.outcome, hub_id, result.attempt_id, summary.trim())
}

fn approval_line(a: &WorkApprovalRecord) -> String {
    format!(
        "approved {} (revision {}, epoch {}) {}#{} at {} until {} as {}",
        a.request_id,
        a.revision,
        a.epoch,
        a.repository,
        a.pr_number,
        a.head_sha,
        a.expires_at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S"),
        a.id
    )
}

/// `steward ledger approve ID --head SHA [--expires-in 1h] [--revision N]`.
async fn approve(id: &str, head: &str, expires_in: &str, revision: Option<u32>) -> Result<u8> {
    let expires_in_s = parse_lifetime(expires_in).map_err(|e| usage_error(&format!("--expires-in: {e}")))?;
    let store = open().await?;
    let ledger = ledger_of(store.as_ref())?;
    let owner = local_owner();
    let revision = match revision {
        Some(r) => r,
        None => match ledger.work_request(id).await? {
            Some(r) if r.requester == owner => {
                eprintln!("steward: approving revision {} of {id}: {}", r.revision, line(&r));
                r.revision
            }
            _ => {
                return Err(usage_error(&format!("you have no work request `{id}`; `steward ledger list` shows them")));
            }
        },
    };
    let body = ApproveWorkRequest { revision, head_sha: head.to_string(), expires_in_s };
    let approval = api::approve_request(ledger, SystemClock.now(), &owner, id, &body).await.map_err(refused)?;
    store.flush().await?;
    println!("{}", approval_line(&approval));
    Ok(0)
}

/// `steward ledger revoke ID`.
async fn revoke(id: &str) -> Result<u8> {
    let store = open().await?;
    let record = api::revoke_request(ledger_of(store.as_ref())?, SystemClock.now(), &local_owner(), id)
        .await
        .map_err(refused)?;
    store.flush().await?;
    println!("revoked {} (epoch is now {}): no hub can claim it", record.id, record.epoch);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_parse() {
        assert_eq!(parse_lifetime("90s"), Ok(90));
        assert_eq!(parse_lifetime("30m"), Ok(1_800));
        assert_eq!(parse_lifetime("1h"), Ok(3_600));
        assert_eq!(parse_lifetime("1d"), Ok(86_400));
        assert_eq!(parse_lifetime("45"), Ok(45));
        assert!(parse_lifetime("h").is_err());
        assert!(parse_lifetime("1w").is_err());
        assert!(parse_lifetime("-1h").is_err());
    }
}
