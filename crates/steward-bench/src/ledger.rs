//! `steward-bench ledger`: claims per second of the work ledger with several hubs at once.
//!
//! Each hub is a task with a store handle of its own (on SQLite another connection to the same
//! file, as another process would have; on PostgreSQL another pool, as another node would
//! have). A claim is what `POST /api/ledger/claims` does in the store: one locked write
//! transaction (`BEGIN IMMEDIATE` on SQLite, `SELECT … FOR UPDATE` on PostgreSQL) that reads
//! the approval and its request, checks every pin, inserts the authority and marks the request
//! claimed, then the durable audit record. HTTP is not part of the measurement.
//!
//! Two measurements per backend: hubs claiming distinct approvals (each approval claimed
//! once), and hubs racing for the same approvals (every approval claimed by every hub: exactly
//! one `issued` each, the rest `spent`). PostgreSQL is measured in a schema of its own, dropped
//! afterwards, in the database named by `--database-url` or `$STEWARD_DATABASE_URL`.

use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use chrono::Utc;
use clap::Args;
use sqlx::{ConnectOptions, Connection};
use steward_store::ledger::{ApproveInput, ApproveOutcome, ClaimInput, ClaimOutcome, WorkApprovalRecord};
use steward_store::ledger::{WorkRequestRecord, WorkStatus};
use steward_store::{PgConnectOptions, PgStore, SqliteStore, Store, StoreOptions, new_id, redact_database_url};

const OWNER: &str = "local:bench";
const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

/// `steward-bench ledger` options.
#[derive(Args)]
pub struct BenchLedgerArgs {
    /// Concurrent hubs.
    #[arg(long, default_value_t = 4)]
    hubs: usize,
    /// Approvals claimed per measurement.
    #[arg(long, default_value_t = 1_000)]
    claims: usize,
    /// PostgreSQL database to measure in (a schema of its own, dropped afterwards); default
    /// `$STEWARD_DATABASE_URL`; without either, PostgreSQL is skipped.
    #[arg(long)]
    database_url: Option<String>,
}

/// Runs the measurements and prints what they measured.
pub async fn run(args: BenchLedgerArgs) -> Result<u8> {
    if args.hubs == 0 || args.claims == 0 {
        bail!("--hubs and --claims must be at least 1");
    }
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    println!(
        "steward-bench ledger: claims per second, {} hubs at once, {} approvals per line ({profile} build); a claim = \
         one locked write transaction (read approval and request, check pins, insert authority, mark claimed) + \
         its durable audit record",
        args.hubs, args.claims
    );
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    let mut handles: Vec<Arc<dyn Store>> = Vec::new();
    for _ in 0..args.hubs {
        handles.push(Arc::new(SqliteStore::open(&path, StoreOptions::default()).await?));
    }
    measure("SQLite (one file, WAL, synchronous=FULL)", &handles, args.claims).await?;

    let url = args.database_url.clone().or_else(|| std::env::var(crate::DATABASE_URL_VAR).ok());
    match url.filter(|u| !u.is_empty()) {
        Some(url) => {
            let shown = redact_database_url(&url);
            let connect = PgConnectOptions::from_str(&url)
                .with_context(|| format!("{shown} is not a PostgreSQL URL"))?
                .disable_statement_logging();
            let schema = new_id("bench_");
            let mut admin = sqlx::postgres::PgConnection::connect_with(&connect)
                .await
                .with_context(|| format!("cannot connect to {shown}"))?;
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&mut admin).await?;
            let result = async {
                let mut handles: Vec<Arc<dyn Store>> = Vec::new();
                for i in 0..args.hubs {
                    let options = connect.clone().options([("search_path", schema.as_str())]);
                    handles.push(Arc::new(
                        PgStore::open_with(options, StoreOptions::default(), &format!("bench-hub-{i}")).await?,
                    ));
                }
                measure(&format!("PostgreSQL ({shown}, one pool per hub)"), &handles, args.claims).await
            }
            .await;
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"))).execute(&mut admin).await?;
            let _ = admin.close().await;
            result?;
        }
        None => println!("PostgreSQL: skipped (give --database-url or set {})", crate::DATABASE_URL_VAR),
    }
    Ok(0)
}

/// Files and approves `n` requests through `store`.
async fn approvals(store: &dyn Store, n: usize) -> Result<Vec<WorkApprovalRecord>> {
    let ledger = store.ledger().context("no ledger")?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let now = Utc::now();
        let request = WorkRequestRecord {
            id: new_id("wrq_"),
            revision: 1,
            epoch: 1,
            kind: "pr_summary".into(),
            requester: OWNER.into(),
            repository: "bench".into(),
            pr_number: i as u64 + 1,
            text: String::new(),
            status: WorkStatus::Open,
            created_at: now,
            updated_at: now,
        };
        ledger.insert_work_request(&request).await?;
        let input = ApproveInput {
            request_id: request.id.clone(),
            owner_id: OWNER.into(),
            revision: 1,
            head_sha: HEAD.into(),
            scope: "read".into(),
            at: now,
            expires_at: now + chrono::Duration::hours(1),
        };
        match ledger.approve_work_request(&input).await? {
            ApproveOutcome::Approved(a) => out.push(a),
            other => bail!("approving failed: {other:?}"),
        }
    }
    Ok(out)
}

fn claim_of(a: &WorkApprovalRecord, hub: usize) -> ClaimInput {
    ClaimInput {
        approval_id: a.id.clone(),
        request_id: a.request_id.clone(),
        revision: a.revision,
        epoch: a.epoch,
        head_sha: a.head_sha.clone(),
        owner_id: OWNER.into(),
        hub_id: format!("hub:bench-{hub}"),
        token_id: format!("tok_bench-{hub}"),
        attempt_id: new_id("att_"),
        at: Utc::now(),
    }
}

/// Runs every hub's claims at once; answers the wall time and the (issued, spent) counts.
async fn race(handles: &[Arc<dyn Store>], work: Vec<Vec<WorkApprovalRecord>>) -> Result<(Duration, usize, usize)> {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (hub, (store, mine)) in handles.iter().cloned().zip(work).enumerate() {
        tasks.push(tokio::spawn(async move {
            let ledger = store.ledger().context("no ledger")?;
            let (mut issued, mut spent) = (0, 0);
            for a in &mine {
                match ledger.claim_approval(&claim_of(a, hub)).await? {
                    ClaimOutcome::Issued(_) => issued += 1,
                    ClaimOutcome::Spent(_) => spent += 1,
                    ClaimOutcome::Denied(reason) => bail!("claim denied: {}", reason.as_str()),
                }
            }
            Ok::<_, anyhow::Error>((issued, spent))
        }));
    }
    let (mut issued, mut spent) = (0, 0);
    for task in tasks {
        let (i, s) = task.await??;
        issued += i;
        spent += s;
    }
    Ok((started.elapsed(), issued, spent))
}

async fn measure(label: &str, handles: &[Arc<dyn Store>], n: usize) -> Result<()> {
    let hubs = handles.len();
    // Distinct approvals: hub h claims approvals h, h + hubs, …
    let all = approvals(handles[0].as_ref(), n).await?;
    let mut work = vec![Vec::new(); hubs];
    for (i, a) in all.into_iter().enumerate() {
        work[i % hubs].push(a);
    }
    let (elapsed, issued, spent) = race(handles, work).await?;
    if issued != n || spent != 0 {
        bail!("distinct approvals: {issued} issued and {spent} spent of {n}");
    }
    println!(
        "{label}, {hubs} hubs on distinct approvals: {:.0} claims/s ({n} issued in {:.2} s)",
        n as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    // The same approvals for every hub: one issued each, the others spent.
    let all = approvals(handles[0].as_ref(), n).await?;
    let work = (0..hubs)
        .map(|h| {
            let mut mine = all.clone();
            mine.rotate_left(h * n / hubs);
            mine
        })
        .collect();
    let (elapsed, issued, spent) = race(handles, work).await?;
    if issued != n || spent != n * (hubs - 1) {
        bail!("contended approvals: {issued} issued and {spent} spent of {n} approvals x {hubs} hubs");
    }
    println!(
        "{label}, {hubs} hubs racing for the same approvals: {:.0} claim decisions/s ({} claims in {:.2} s: {issued} \
         issued, {spent} spent, none issued twice)",
        (n * hubs) as f64 / elapsed.as_secs_f64(),
        n * hubs,
        elapsed.as_secs_f64()
    );
    Ok(())
}
