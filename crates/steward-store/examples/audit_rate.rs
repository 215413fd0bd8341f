//! Measures the audit log as `steward-bench` does: durable appends in batches of 100 sharing
//! one forced commit, then verification of the whole chain, in records per second.
//!
//! `cargo run --release -p steward-store --example audit_rate -- [RECORDS [VERIFY_ROUNDS]]`
//! (default 50,000 records, 3 verifications).

use std::time::Instant;

use serde_json::json;
use steward_protocol::{AuditEntry, AuditOutcome};
use steward_store::{AuditVerification, SqliteStore, Store, StoreOptions};

fn entry(i: u32) -> AuditEntry {
    AuditEntry {
        agent: "steward".into(),
        run_id: "run_bench".into(),
        call_id: format!("c{i}"),
        action: "read".into(),
        input: json!({"path": "src/main.rs"}),
        policy: "default:low".into(),
        risk: 0.2,
        outcome: AuditOutcome::Completed,
        latency_ms: 1,
        sandbox: String::new(),
        approval_id: String::new(),
        rollback_token: String::new(),
        detail: String::new(),
    }
}

/// CPU time of the whole process so far (every thread, user and system), in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let records: u32 = std::env::args().nth(1).map(|n| n.parse()).transpose()?.unwrap_or(50_000);
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await?;
    let started = Instant::now();
    let cpu = cpu_seconds();
    for i in 0..records {
        store.queue_audit(entry(i)).await?;
        if i % 100 == 99 {
            store.flush().await?;
        }
    }
    store.flush().await?;
    let rate = f64::from(records) / started.elapsed().as_secs_f64();
    let cpu_us = (cpu_seconds() - cpu) * 1e6 / f64::from(records);
    println!("audit append, durable, batches of 100 (group commit): {rate:.0} records/s ({cpu_us:.2} µs CPU each)");
    let rounds: u32 = std::env::args().nth(2).map(|n| n.parse()).transpose()?.unwrap_or(3);
    for _ in 0..rounds {
        let started = Instant::now();
        let cpu = cpu_seconds();
        let total = match store.verify_audit().await? {
            AuditVerification::Valid { records } => records,
            AuditVerification::Broken { seq, problem, .. } => return Err(format!("broken at {seq}: {problem}").into()),
        };
        let rate = total as f64 / started.elapsed().as_secs_f64();
        let cpu_us = (cpu_seconds() - cpu) * 1e6 / total as f64;
        println!("audit verify ({total} records): {rate:.0} records/s ({cpu_us:.2} µs CPU each)");
    }
    Ok(())
}
