//! Several nodes on one PostgreSQL database: leases of running runs (renewed by their node,
//! taken over by exactly one other node once expired) and change notices (`LISTEN/NOTIFY`)
//! from one node's writes to another node's subscribers. PostgreSQL only; SQLite keeps no
//! leases and sends no notices.

use crate::common;
use steward_store::ApprovalStore;
use steward_store::AuditStore;
use steward_store::LeaseStore;
use steward_store::RunStore;

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::Utc;
use common::Db;
use steward_protocol::{AuditEntry, AuditOutcome, Event, EventKind};
use steward_store::{Change, OnDisk, PgStore, RunRecord, RunStatus, Store, StoreOptions, new_id};

fn running(id: &str, pid: u32) -> RunRecord {
    RunRecord {
        id: id.into(),
        owner_id: "local:alice".into(),
        task: "fix the tests".into(),
        planner: "model".into(),
        provider: "fake".into(),
        model: "fake".into(),
        workspace: "/work/ws".into(),
        status: RunStatus::Running,
        stop_reason: None,
        final_text: None,
        error_class: None,
        error: None,
        created_at: Utc::now(),
        finished_at: None,
        rounds: 0,
        tool_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        pid,
    }
}

async fn node(db: &Db, name: &str) -> PgStore {
    db.open_pg(name, StoreOptions::default()).await
}

/// Lets the leases of node `node` expire now (as if it had stopped renewing a while ago).
async fn expire_leases_of(db: &Db, node: &str) {
    db.tamper(&format!("UPDATE run_leases SET expires_at = now() - interval '1 second' WHERE node = '{node}'")).await;
}

#[tokio::test]
async fn two_recoverers_never_take_over_the_same_expired_run_on_postgres() {
    let db = Db::postgres().await;
    let dead = node(&db, "node-dead").await;
    let mut ids = BTreeSet::new();
    for _ in 0..40 {
        let id = new_id("run_");
        dead.insert_run(&running(&id, 7)).await.unwrap();
        ids.insert(id);
    }
    // A finished run of the dead node is never taken over, expired lease or not.
    let mut finished = running(&new_id("run_"), 7);
    dead.insert_run(&finished).await.unwrap();
    finished.status = RunStatus::Completed;
    dead.update_run(&finished).await.unwrap();
    expire_leases_of(&db, "node-dead").await;

    let a = node(&db, "node-a").await;
    let b = node(&db, "node-b").await;
    let ttl = Duration::from_secs(60);
    let take_all = |store: PgStore| async move {
        let mut taken = Vec::new();
        loop {
            let batch = store.take_over_expired_runs(ttl, 3).await.unwrap();
            if batch.is_empty() {
                return taken;
            }
            taken.extend(batch.into_iter().map(|r| r.id));
        }
    };
    let (by_a, by_b) = tokio::join!(take_all(a.clone()), take_all(b.clone()));
    let set_a: BTreeSet<String> = by_a.iter().cloned().collect();
    let set_b: BTreeSet<String> = by_b.iter().cloned().collect();
    assert_eq!(set_a.len(), by_a.len(), "node-a took a run twice");
    assert_eq!(set_b.len(), by_b.len(), "node-b took a run twice");
    assert!(set_a.is_disjoint(&set_b), "both nodes took over {:?}", set_a.intersection(&set_b).collect::<Vec<_>>());
    let all: BTreeSet<String> = set_a.union(&set_b).cloned().collect();
    assert_eq!(all, ids, "every expired running run is taken over exactly once, the finished one never");
    // Taken over for the TTL: nobody takes them again meanwhile.
    assert!(a.take_over_expired_runs(ttl, 100).await.unwrap().is_empty());
    assert!(b.take_over_expired_runs(ttl, 100).await.unwrap().is_empty());
}

#[tokio::test]
async fn renewed_leases_are_not_taken_over_and_a_node_never_takes_its_own_on_postgres() {
    let db = Db::postgres().await;
    let b = node(&db, "node-b").await;
    let a = node(&db, "node-a").await;
    let mine = new_id("run_");
    let other_process = new_id("run_");
    b.insert_run(&running(&mine, 100)).await.unwrap();
    b.insert_run(&running(&other_process, 200)).await.unwrap();
    expire_leases_of(&db, "node-b").await;
    // Node b's process 100 renews: only its own run's lease comes back.
    assert_eq!(b.renew_leases(100, Duration::from_secs(30)).await.unwrap(), 1);
    assert!(b.take_over_expired_runs(Duration::from_secs(30), 10).await.unwrap().is_empty(), "not its own");
    let taken = a.take_over_expired_runs(Duration::from_secs(30), 10).await.unwrap();
    assert_eq!(taken.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec![other_process.as_str()]);
    // A taken-over lease stays with the node that took it, even if the old node renews.
    assert_eq!(b.renew_leases(200, Duration::from_secs(30)).await.unwrap(), 0);
    expire_leases_of(&db, "node-a").await;
    let again = b.take_over_expired_runs(Duration::from_secs(30), 10).await.unwrap();
    assert_eq!(again.len(), 1, "a recoverer that stopped in turn hands the run on");
}

#[tokio::test]
async fn a_lease_expires_when_its_node_stops_renewing_on_postgres() {
    let db = Db::postgres().await;
    let b = node(&db, "node-b").await;
    let a = node(&db, "node-a").await;
    // Leases of 5 s from now on, the first one included: long enough that a loaded machine
    // still looks before it ends, and then polled until it has ended.
    let ttl = Duration::from_secs(5);
    let renewed = std::time::Instant::now();
    b.renew_leases(1, ttl).await.unwrap();
    let id = new_id("run_");
    b.insert_run(&running(&id, 1)).await.unwrap();
    let mut taken = a.take_over_expired_runs(Duration::from_secs(30), 10).await.unwrap();
    if renewed.elapsed() < ttl {
        assert!(taken.is_empty(), "taken over while its lease was valid");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while taken.is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        taken = a.take_over_expired_runs(Duration::from_secs(30), 10).await.unwrap();
    }
    assert!(renewed.elapsed() >= ttl, "taken over after {:?}", renewed.elapsed());
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].id, id);
}

#[tokio::test]
async fn a_node_that_lost_its_lease_can_neither_approve_a_call_nor_finish_the_run_on_postgres() {
    let db = Db::postgres().await;
    let b = node(&db, "node-b").await;
    let a = node(&db, "node-a").await;
    let id = new_id("run_");
    let mut run = running(&id, 100);
    b.insert_run(&run).await.unwrap();
    let approved = AuditEntry {
        agent: "steward".into(),
        run_id: id.clone(),
        call_id: "call_1".into(),
        action: "write".into(),
        input: serde_json::json!({"path": "side-effect.txt"}),
        policy: "default".into(),
        risk: 0.5,
        outcome: AuditOutcome::Approved,
        latency_ms: 0,
        sandbox: String::new(),
        approval_id: String::new(),
        rollback_token: String::new(),
        detail: String::new(),
    };
    assert!(b.append_audit_if_running(approved.clone(), OnDisk::BeforeReturn).await.unwrap().is_some(), "lease held");
    assert!(b.lost_runs(std::slice::from_ref(&id)).await.unwrap().is_empty());

    // Node b stops renewing (paused past the TTL); node a takes the run over.
    expire_leases_of(&db, "node-b").await;
    assert_eq!(a.take_over_expired_runs(Duration::from_secs(30), 10).await.unwrap().len(), 1);
    // Still `running` (a has not recorded the recovery yet), but no longer b's.
    assert_eq!(b.lost_runs(std::slice::from_ref(&id)).await.unwrap(), vec![id.clone()]);
    assert!(
        b.append_audit_if_running(approved.clone(), OnDisk::BeforeReturn).await.unwrap().is_none(),
        "lease lost: refused"
    );
    let mut completed = run.clone();
    completed.status = RunStatus::Completed;
    completed.final_text = Some("done".into());
    assert!(!b.finish_run(&completed).await.unwrap(), "lease lost: not finished");

    // Node a records the recovery; b's late final write does not overwrite it.
    run.status = RunStatus::Interrupted;
    run.error = Some("recovered by node-a".into());
    assert!(a.finish_run(&run).await.unwrap());
    assert!(!b.finish_run(&completed).await.unwrap());
    assert!(!a.finish_run(&run).await.unwrap(), "ended once");
    assert_eq!(b.get_run(&id).await.unwrap().map(|r| r.status), Some(RunStatus::Interrupted));
    assert_eq!(a.audit_records(Some(&id)).await.unwrap().len(), 1, "only the approval made while held");
    // Renewing does not bring the lease back to b.
    assert_eq!(b.renew_leases(100, Duration::from_secs(30)).await.unwrap(), 0);
}

/// The next notice about `run_id`, within 10 s.
async fn next_about(rx: &mut tokio::sync::broadcast::Receiver<Change>, run_id: &str) -> Change {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match rx.recv().await.unwrap() {
                change if change.run_id() == Some(run_id) => return change,
                _ => {}
            }
        }
    })
    .await
    .expect("a notice within 10 s")
}

#[tokio::test]
async fn writes_of_one_node_notify_the_subscribers_of_another_on_postgres() {
    let db = Db::postgres().await;
    let other_schema = Db::postgres().await;
    let a = node(&db, "node-a").await;
    let b = node(&db, "node-b").await;
    let elsewhere = node(&other_schema, "node-c").await;
    let mut rx = a.subscribe_changes().expect("PostgreSQL sends notices");
    let mut rx_elsewhere = elsewhere.subscribe_changes().unwrap();
    // The listener is connected once it has said so.
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap(), Change::Resync);
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), rx_elsewhere.recv()).await.unwrap().unwrap(),
        Change::Resync
    );

    let id = new_id("run_");
    b.insert_run(&running(&id, 1)).await.unwrap();
    assert_eq!(next_about(&mut rx, &id).await, Change::Run { run_id: id.clone() });
    for seq in 1..=5 {
        let kind = EventKind::StageStarted { stage: "planner".into(), round: 1 };
        b.append_event(&Event { run_id: id.clone(), seq, at: Utc::now(), kind }).await.unwrap();
    }
    b.flush().await.unwrap();
    // Events of one commit are folded into one notice with the highest seq.
    let mut seen = 0;
    while seen < 5 {
        match next_about(&mut rx, &id).await {
            Change::Event { seq, .. } => {
                assert!(seq > seen, "notices in order");
                seen = seq;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let decision = steward_store::ApprovalDecisionRecord {
        approval_id: "apr_1".into(),
        run_id: id.clone(),
        decided_by: "local:alice".into(),
        approve: true,
        scope: "once".into(),
        reason: String::new(),
        created_at: Utc::now(),
        call_hash: String::new(),
    };
    assert!(b.insert_approval_decision(&decision).await.unwrap());
    assert_eq!(next_about(&mut rx, &id).await, Change::Decision { run_id: id.clone(), approval_id: "apr_1".into() });
    // A second decision is not recorded, so nothing is announced for it.
    assert!(!b.insert_approval_decision(&decision).await.unwrap());
    let mut finished = running(&id, 1);
    finished.status = RunStatus::Completed;
    b.update_run(&finished).await.unwrap();
    assert_eq!(next_about(&mut rx, &id).await, Change::Run { run_id: id.clone() });
    // Another schema hears nothing of this one.
    assert!(rx_elsewhere.try_recv().is_err());
}
