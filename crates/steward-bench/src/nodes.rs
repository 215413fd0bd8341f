//! `steward-bench nodes`: how fast an event stored by one node reaches another node sharing
//! the PostgreSQL database (`LISTEN/NOTIFY`, SPEC H3).
//!
//! Two stores are opened in this process as two nodes (`bench-node-1`, `bench-node-2`), each
//! with its own connections, writer and listener, on a temporary schema of the database named
//! by `--database-url` or `$STEWARD_DATABASE_URL` (created, then dropped; the user needs the
//! right to create schemas). Node 2 subscribes to change notices. For each of N events, one
//! at a time: node 1 stores it (`append_event` + `flush`, i.e. committed), and two latencies
//! are taken from the moment before the store call:
//! - notice: until node 2's subscriber receives the notice for that event's `seq`;
//! - readable: until node 2 has also read the event back from the store (what an event stream
//!   of `steward serve` does when woken).
//!
//! The commit alone (node 1's `append_event` + `flush`) is reported for comparison.

use std::str::FromStr;
use std::time::{Duration, Instant};
use steward_store::RunStore;

use anyhow::{Context, Result, bail};
use clap::Args;
use sqlx::ConnectOptions;
use sqlx::Connection;
use steward_protocol::{Event, EventKind};
use steward_store::{Change, PgConnectOptions, PgStore, Store, StoreOptions};

/// `steward-bench nodes` options.
#[derive(Args)]
pub struct BenchNodesArgs {
    /// Events sent from node 1 to node 2, one at a time.
    #[arg(long, default_value_t = 1_000)]
    events: u32,
    /// PostgreSQL database (default: `$STEWARD_DATABASE_URL`). A temporary schema is created in it and dropped at the end.
    #[arg(long)]
    database_url: Option<String>,
}

/// Runs the measurement and prints what it measured.
pub async fn run(args: BenchNodesArgs) -> Result<u8> {
    let url = match args.database_url.clone() {
        Some(url) => url,
        None => crate::database_url()?.ok_or_else(|| {
            crate::usage_error("give --database-url or set STEWARD_DATABASE_URL (a PostgreSQL database)")
        })?,
    };
    if !steward_store::is_postgres_url(&url) {
        return Err(crate::usage_error("--database-url must be a postgres:// or postgresql:// URL"));
    }
    let shown = steward_store::redact_database_url(&url);
    let base = PgConnectOptions::from_str(&url)
        .map_err(|_| crate::usage_error(&format!("{shown} is not a usable PostgreSQL URL")))?
        .disable_statement_logging();
    let schema = steward_store::new_id("steward_bench_");
    let mut admin =
        sqlx::PgConnection::connect_with(&base).await.with_context(|| format!("cannot connect to {shown}"))?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&mut admin)
        .await
        .with_context(|| format!("cannot create a temporary schema in {shown}"))?;
    let measured = measure(&base, &schema, args.events).await;
    let dropped =
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))).execute(&mut admin).await;
    let _ = admin.close().await;
    if let Err(e) = dropped {
        eprintln!("steward-bench: warning: the temporary schema {schema} could not be dropped: {e}");
    }
    let (commit, notice, readable) = measured?;
    println!(
        "steward-bench nodes: cross-node event latency on {shown} (two stores in this process as two nodes, \
         {} events one at a time; from before node 1 stores an event to node 2)",
        notice.len()
    );
    print_line("node 1 commit alone (append_event + flush)", &commit);
    print_line("event stored on node 1 -> notice received on node 2", &notice);
    print_line("event stored on node 1 -> notice + event read back on node 2", &readable);
    Ok(0)
}

/// `(commit, notice, readable)` latencies of `events` events.
async fn measure(
    base: &PgConnectOptions,
    schema: &str,
    events: u32,
) -> Result<(Vec<Duration>, Vec<Duration>, Vec<Duration>)> {
    let connect = base.clone().options([("search_path", schema)]);
    let node1 = PgStore::open_with(connect.clone(), StoreOptions::default(), "bench-node-1").await?;
    let node2 = PgStore::open_with(connect, StoreOptions::default(), "bench-node-2").await?;
    let Some(mut changes) = node2.subscribe_changes() else { bail!("the store sends no change notices") };
    // The listener announces itself once it listens.
    match tokio::time::timeout(Duration::from_secs(10), changes.recv()).await {
        Ok(Ok(Change::Resync)) => {}
        _ => bail!("node 2 did not start listening within 10 s"),
    }
    let run_id = steward_store::new_id("run_");
    let (mut commit, mut notice, mut readable) = (Vec::new(), Vec::new(), Vec::new());
    for seq in 1..=u64::from(events) {
        let event = Event {
            run_id: run_id.clone(),
            seq,
            at: chrono::Utc::now(),
            kind: EventKind::StageChunk { stage: "planner".into(), text: format!("chunk {seq}") },
        };
        let started = Instant::now();
        node1.append_event(&event).await?;
        node1.flush().await?;
        commit.push(started.elapsed());
        let wait = async {
            loop {
                match changes.recv().await {
                    Ok(Change::Event { run_id: id, seq: got }) if id == run_id && got >= seq => return Ok(()),
                    Ok(_) => {}
                    Err(e) => return Err(e),
                }
            }
        };
        match tokio::time::timeout(Duration::from_secs(10), wait).await {
            Ok(Ok(())) => notice.push(started.elapsed()),
            Ok(Err(e)) => bail!("node 2 lost notices: {e}"),
            Err(_) => bail!("no notice for event {seq} within 10 s"),
        }
        let read = node2.events(&run_id, seq - 1).await?;
        if read.first().map(|e| e.seq) != Some(seq) {
            bail!("node 2 could not read event {seq} after its notice");
        }
        readable.push(started.elapsed());
    }
    Ok((commit, notice, readable))
}

fn print_line(label: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let pick = |q: f64| sorted.get(((sorted.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("{label}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms", ms(pick(0.5)), ms(pick(0.99)), ms(pick(1.0)));
}
