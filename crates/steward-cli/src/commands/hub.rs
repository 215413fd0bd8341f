//! `steward hub`: the local execution owner (SPEC H2–H6) — polls the ledger of a
//! `steward serve`, claims approved work, runs it once as a read-only Steward run and reports
//! evidence, journaling every step first. Also `steward ledger held` and `steward ledger
//! resolve`, which read and decide the hub's held attempts.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use steward_core::{Clock, SystemClock};

use anyhow::{Context, Result};
use clap::Args;
use steward_core::PlannerOverrides;
use steward_ledger::hub::crash::CrashPoint;
use steward_ledger::hub::poller::PollFailure;
use steward_ledger::hub::resolve::{self, Resolution};
use steward_ledger::hub::{Handled, Hub, HubSettings, HubToken, LedgerClient, RunLauncher};
use steward_store::{JournalRecord, JournalStore, Store, StoreOptions};
use tokio_util::sync::CancellationToken;

use crate::commands::{ModelArgs, usage_error, user_config_dir};
use crate::home::{Home, local_owner};

/// `steward hub` arguments.
#[derive(Args)]
pub struct HubArgs {
    /// Base URL of the `steward serve` whose ledger to poll, e.g. http://127.0.0.1:8080.
    #[arg(long)]
    url: String,
    /// File holding the hub's bearer token (a `hub`-scoped token; mode 0600).
    #[arg(long)]
    token_file: PathBuf,
    /// A repository the hub serves: NAME=PATH, NAME as the ledger names it, PATH a local git
    /// repository where `refs/pull/N/head` is PR N's head. Repeatable.
    #[arg(long = "repo", value_name = "NAME=PATH", required = true)]
    repos: Vec<String>,
    /// This hub's stable id (default `hub:<host name>`).
    #[arg(long)]
    hub_id: Option<String>,
    /// One complete pass, then exit (0 when the listing was complete, 1 when not).
    #[arg(long)]
    once: bool,
    /// Seconds between complete passes.
    #[arg(long, default_value_t = 10)]
    poll_interval_s: u64,
    // The jobs' runs' planner: provider, model, server and scenario, as in `steward run`.
    #[command(flatten)]
    model: ModelArgs,
    /// classic or model.
    #[arg(long, value_parser = ["classic", "model"])]
    planner: Option<String>,
}

/// Opens the state store and its journal view (the same database: `steward.db`, or
/// `$STEWARD_DATABASE_URL`), after marking runs of dead processes interrupted.
pub async fn open_stores(home: &Home) -> Result<(Arc<dyn Store>, Arc<dyn JournalStore>)> {
    home.open_store_with_journal(StoreOptions::default()).await
}

fn read_token(path: &PathBuf) -> Result<HubToken> {
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        anyhow::bail!("{} is readable by others (mode {mode:o}); run chmod 600 on it", path.display());
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    HubToken::new(&text).ok_or_else(|| usage_error(&format!("{} holds no usable token", path.display())))
}

fn parse_repos(specs: &[String]) -> Result<BTreeMap<String, PathBuf>> {
    let mut repos = BTreeMap::new();
    for spec in specs {
        let (name, path) = spec
            .split_once('=')
            .filter(|(n, p)| !n.trim().is_empty() && !p.trim().is_empty())
            .ok_or_else(|| usage_error(&format!("--repo `{spec}` must be NAME=PATH")))?;
        let path = std::fs::canonicalize(path).map_err(|e| usage_error(&format!("--repo {name}: {path}: {e}")))?;
        if repos.insert(name.trim().to_string(), path).is_some() {
            return Err(usage_error(&format!("--repo {name} given twice")));
        }
    }
    Ok(repos)
}

fn handled_json(approval_id: &str, handled: &Handled) -> serde_json::Value {
    let (kind, detail) = match handled {
        Handled::AlreadyJournaled(state) => ("already_journaled", Some(state.as_str().to_string())),
        Handled::Ignored(why) => ("ignored", Some(why.to_string())),
        Handled::Deferred => ("deferred", None),
        Handled::Denied(why) => ("denied", Some(why.clone())),
        Handled::Held(why) => ("held", Some(why.clone())),
        Handled::Finished { outcome, acknowledged } => (
            if *acknowledged { "acknowledged" } else { "finished" },
            Some(steward_ledger::hub::engine::outcome_word(*outcome).to_string()),
        ),
    };
    serde_json::json!({"approval_id": approval_id, "handled": kind, "detail": detail})
}

/// `steward hub`.
pub async fn hub(args: HubArgs) -> Result<u8> {
    let crash = CrashPoint::from_env().map_err(|e| usage_error(&e.to_string()))?;
    let repos = parse_repos(&args.repos)?;
    let token = read_token(&args.token_file)?;
    let client = LedgerClient::new(&args.url, token.clone()).map_err(|e| usage_error(&format!("--url: {e}")))?;
    let hub_id = args.hub_id.clone().unwrap_or_else(|| format!("hub:{}", steward_store::host_node()));
    let home = Home::locate()?;
    let (store, journal) = open_stores(&home).await?;
    let runtime = home.runtime_on(store, crate::commands::redactor())?;
    let launcher = RunLauncher {
        runtime: runtime.clone(),
        user_config_dir: user_config_dir(),
        overrides: PlannerOverrides {
            planner: args.planner.clone(),
            provider: args.model.provider.provider.clone(),
            model: args.model.provider.model.clone(),
            base_url: args.model.provider.base_url.clone(),
            tool_choice: None,
            scenario: args.model.scenario.clone(),
            max_tokens: None,
        },
        owner_id: local_owner(),
        hub_token: token,
    };
    launcher.check_planner().map_err(|e| usage_error(&e.to_string()))?;
    let settings = HubSettings {
        hub_id,
        repos,
        poll_interval: Duration::from_secs(args.poll_interval_s.max(1)),
        backoff_base: Duration::from_secs(1),
        backoff_max: Duration::from_secs(300),
        page_limit: steward_ledger::hub::poller::PAGE_LIMIT,
        status_file: Some(poll_status_path(&home)),
    };
    let hub = Hub::new(settings, client, journal, Arc::new(launcher), crash);
    let recovery = hub.recover().await?;
    for id in &recovery.acknowledged {
        eprintln!("steward: attempt {id}: its result report was sent again and acknowledged");
    }
    for id in &recovery.held {
        eprintln!("steward: attempt {id} was in flight when the hub stopped; now held (see `steward ledger held`)");
    }
    let claiming = CancellationToken::new();
    let on_signal = claiming.clone();
    // The first Ctrl-C or SIGTERM stops claiming and lets the attempt in flight finish; a second
    // one quits at once (what was in flight is held at the next start).
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot watch for SIGTERM")?;
    tokio::spawn(async move {
        for signals in 0.. {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            if signals > 0 {
                eprintln!("steward: hub quitting now; the attempt in flight will be held at the next start");
                std::process::exit(130);
            }
            eprintln!("steward: hub stopping: no new claims; waiting for the attempt in flight (again to quit now)");
            on_signal.cancel();
        }
    });
    if args.once {
        let pass = hub.pass(&claiming).await?;
        for (approval_id, handled) in &pass.handled {
            println!("{}", handled_json(approval_id, handled));
        }
        if pass.complete {
            hub.note_poll(None);
        } else {
            let failure = hub.poll_failure(&pass, 1, None);
            hub.note_poll(Some(&failure));
            eprintln!("steward: the listing of candidates is incomplete ({})", failure.class);
        }
        runtime.shutdown().await;
        return Ok(if pass.complete { 0 } else { 1 });
    }
    hub.run(
        claiming,
        &|approval_id, handled| eprintln!("steward: hub: {}", handled_json(approval_id, handled)),
        &|failure| eprintln!("steward: hub: {}", poll_failure_line(failure)),
    )
    .await?;
    // The attempts' spans (telemetry on) are sent before the process ends.
    runtime.shutdown().await;
    Ok(0)
}

/// Where `steward hub` records its last failed listing of candidates (`hub-poll.json` in the
/// state directory; see [`PollFailure`]).
pub fn poll_status_path(home: &Home) -> PathBuf {
    home.dir.join("hub-poll.json")
}

/// One line saying how the listing failed and when the hub tries again.
fn poll_failure_line(f: &PollFailure) -> String {
    let next = match f.next_attempt_at {
        Some(t) => format!("next attempt at {}", t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        None => "no further attempt (--once)".to_string(),
    };
    format!(
        "listing the ledger's candidates failed ({}) at {}, {} failure(s) in a row; {next}",
        f.class,
        f.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        f.failures
    )
}

/// `steward ledger polls`: the hub's last failed listing of candidates, if the last one failed.
pub fn polls(json: bool) -> Result<u8> {
    let home = Home::locate()?;
    let path = poll_status_path(&home);
    let failure = PollFailure::load(&path).with_context(|| format!("cannot read {}", path.display()))?;
    match (failure, json) {
        (Some(f), true) => println!("{}", serde_json::to_string(&f)?),
        (Some(f), false) => println!("{}", poll_failure_line(&f)),
        (None, true) => println!("null"),
        (None, false) => println!("no failed listing: the hub's last listing was complete, or it has not run here"),
    }
    Ok(0)
}

fn row_json(row: &JournalRecord) -> serde_json::Value {
    serde_json::json!({
        "attempt_id": row.attempt_id,
        "hub_id": row.hub_id,
        "approval_id": row.approval_id,
        "request_id": row.request_id,
        "revision": row.revision,
        "epoch": row.epoch,
        "repository": row.repository,
        "pr_number": row.pr_number,
        "head_sha": row.head_sha,
        "scope": row.scope,
        "state": row.state.as_str(),
        "held_from": row.held_from.map(|s| s.as_str()),
        "note": row.note,
        "authority": row.authority,
        "authority_id": row.authority_id,
        "run_id": row.run_id,
        "outcome": row.outcome,
        "evidence": row.evidence.as_deref().and_then(|e| serde_json::from_str::<serde_json::Value>(e).ok()),
        "resolution": row.resolution,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    })
}

/// `steward ledger held`: the hub's held attempts with what is known of them.
pub async fn held(json: bool) -> Result<u8> {
    let home = Home::locate()?;
    let (_, journal) = open_stores(&home).await?;
    let rows = resolve::held(journal.as_ref()).await?;
    for row in &rows {
        if json {
            println!("{}", row_json(row));
        } else {
            println!(
                "{}  {} PR #{} @ {}  held from {} ({}){}",
                row.attempt_id,
                row.repository,
                row.pr_number,
                &row.head_sha[..row.head_sha.len().min(12)],
                row.held_from.map_or("?", |s| s.as_str()),
                row.note.as_deref().unwrap_or("-"),
                row.run_id.as_deref().map(|r| format!("  run {r}")).unwrap_or_default(),
            );
        }
    }
    if rows.is_empty() && !json {
        println!("no held attempts");
    }
    Ok(0)
}

/// `steward ledger resolve ATTEMPT --as completed|failed|retry`.
pub async fn resolve_held(attempt_id: &str, resolution: &str) -> Result<u8> {
    let resolution =
        Resolution::parse(resolution).ok_or_else(|| usage_error("--as must be completed, failed or retry"))?;
    let home = Home::locate()?;
    let (store, journal) = open_stores(&home).await?;
    let row =
        resolve::resolve(journal.as_ref(), store.as_ref(), attempt_id, resolution, &local_owner(), SystemClock.now())
            .await
            .map_err(|e| match e {
                resolve::ResolveError::Store(e) => anyhow::Error::new(e),
                other => usage_error(&other.to_string()),
            })?;
    println!("{} resolved as {}", row.attempt_id, resolution.as_str());
    if resolution == Resolution::Retry {
        println!(
            "nothing was run: this approval is never attempted again; file a new work request \
             (`steward ledger request`) and approve it to run the work"
        );
    }
    Ok(0)
}
