//! Integration tests of the stores: round trips, reopening, several stores on one database
//! (the audit chain is `audit_chain`'s). Every contract test runs twice, on
//! SQLite and on PostgreSQL (see `common`); tests of one backend's specifics say so.

use crate::common;
use steward_store::RunStore;

use std::path::Path;
use std::sync::Arc;

use chrono::{Duration, Utc};
use common::Db;
use common::records::*;
use serde_json::json;
use steward_protocol::{
    ApprovalRequest, ApprovalStatus, AuditEntry, AuditOutcome, ErrorClass, Event, StopReason, Timestamp,
};
use steward_store::{
    AuditVerification, ConversationRecord, ConversationTurn, Durability, FactRecord, McpTokenRecord, OnDisk, PgStore,
    RunRecord, RunStatus, SqliteStore, Store, StoreError, StoreOptions, new_id,
};

both! {
    #[tokio::test]
    async fn runs_round_trip_update_list_and_status(db: Db) {
        let store = db.open().await;
        let t0 = Utc::now();
        let mut first = run(&new_id("run_"), t0);
        let second = run(&new_id("run_"), t0 + Duration::seconds(1));
        let third = run(&new_id("run_"), t0 + Duration::seconds(2));
        for r in [&first, &second, &third] {
            store.insert_run(r).await.unwrap();
        }
        assert_eq!(store.get_run(&first.id).await.unwrap().as_ref(), Some(&first));
        assert_eq!(store.get_run(&first.id[..8]).await.unwrap(), None, "ids match exactly, not by prefix");

        first.status = RunStatus::Failed;
        first.stop_reason = Some(StopReason::Failed);
        first.final_text = Some(String::new());
        first.error_class = Some(ErrorClass::ProviderUnreachable);
        first.error = Some("connection refused".into());
        first.finished_at = Some(t0 + Duration::milliseconds(1500));
        first.rounds = 3;
        first.tool_calls = 7;
        first.input_tokens = u64::from(u32::MAX) + 5;
        first.output_tokens = 99;
        store.update_run(&first).await.unwrap();
        assert_eq!(store.get_run(&first.id).await.unwrap().as_ref(), Some(&first));

        let listed: Vec<String> = store.list_runs(10).await.unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(listed, vec![third.id.clone(), second.id.clone(), first.id.clone()]);
        assert_eq!(store.list_runs(2).await.unwrap().len(), 2);
        assert!(store.list_runs(0).await.unwrap().is_empty());

        let running: Vec<String> =
            store.runs_with_status(RunStatus::Running).await.unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(running, vec![second.id.clone(), third.id.clone()]);
        assert_eq!(store.runs_with_status(RunStatus::Failed).await.unwrap(), vec![first.clone()]);

        let missing = store.update_run(&run("run_missing", t0)).await.unwrap_err();
        assert!(matches!(missing, StoreError::NotFound { .. }));
        assert_eq!(missing.class(), ErrorClass::Storage);
        assert!(missing.to_string().contains(&db.shown()), "{missing}");
        assert!(store.insert_run(&second).await.is_err(), "duplicate id is refused");
    }
}

both! {
    #[tokio::test]
    async fn a_run_finishes_and_approves_calls_only_while_running(db: Db) {
        let store = db.open().await;
        let id = new_id("run_");
        let mut r = run(&id, Utc::now());
        store.insert_run(&r).await.unwrap();
        let approved = AuditEntry { outcome: AuditOutcome::Approved, ..entry(&id, 1) };
        assert!(store.append_audit_if_running(approved.clone(), OnDisk::BeforeReturn).await.unwrap().is_some());
        assert!(store.lost_runs(std::slice::from_ref(&id)).await.unwrap().is_empty());
        // A read's record is committed when the append returns and forced to disk right after,
        // which `audit_on_disk` waits for (without it nobody would force it: nothing follows).
        let read = AuditEntry { call_id: "call_read".into(), ..approved.clone() };
        let soon = store.append_audit_if_running(read.clone(), OnDisk::Soon).await.unwrap().expect("running");
        assert_eq!(soon.seq, 2);
        let on_disk = store.audit_on_disk(soon.seq);
        tokio::time::timeout(std::time::Duration::from_secs(30), on_disk).await.expect("forced to disk").unwrap();

        // Another process marked the run interrupted (crash recovery).
        let mut interrupted = r.clone();
        interrupted.status = RunStatus::Interrupted;
        interrupted.error = Some("recovered".into());
        store.update_run(&interrupted).await.unwrap();
        assert_eq!(store.lost_runs(std::slice::from_ref(&id)).await.unwrap(), vec![id.clone()]);
        assert!(store.append_audit_if_running(approved.clone(), OnDisk::BeforeReturn).await.unwrap().is_none(), "refused");
        assert!(store.append_audit_if_running(read, OnDisk::Soon).await.unwrap().is_none(), "refused");
        assert_eq!(store.audit_records(Some(&id)).await.unwrap().len(), 2, "nothing appended");
        r.status = RunStatus::Completed;
        r.final_text = Some("done".into());
        assert!(!store.finish_run(&r).await.unwrap(), "superseded");
        assert_eq!(store.get_run(&id).await.unwrap(), Some(interrupted));
        assert!(matches!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 2 }));

        // A running run finishes once.
        let other = new_id("run_");
        let mut o = run(&other, Utc::now());
        store.insert_run(&o).await.unwrap();
        o.status = RunStatus::Completed;
        assert!(store.finish_run(&o).await.unwrap());
        assert_eq!(store.get_run(&other).await.unwrap(), Some(o.clone()));
        assert!(!store.finish_run(&o).await.unwrap(), "no longer running");
        let missing = store.finish_run(&run("run_missing", Utc::now())).await.unwrap_err();
        assert!(matches!(missing, StoreError::NotFound { .. }));
        let stray = AuditEntry { outcome: AuditOutcome::Approved, ..entry("run_missing", 2) };
        assert!(store.append_audit_if_running(stray.clone(), OnDisk::BeforeReturn).await.unwrap().is_none(), "no such run");
        assert!(store.append_audit_if_running(stray, OnDisk::Soon).await.unwrap().is_none(), "no such run");
    }
}

both! {
    #[tokio::test]
    async fn runs_with_equal_times_are_ordered_by_id_bytes(db: Db) {
        // Text order is byte order on both backends (PostgreSQL columns use the "C" collation).
        let store = db.open().await;
        let t0 = Utc::now();
        let ids = ["run_B", "run_a", "run_A", "run_b", "run__"];
        for id in ids {
            store.insert_run(&run(id, t0)).await.unwrap();
        }
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        let running: Vec<String> =
            store.runs_with_status(RunStatus::Running).await.unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(running, sorted);
    }
}

both! {
    #[tokio::test]
    async fn events_keep_order_and_filter_after_seq(db: Db) {
        let store = db.open().await;
        let mut expected = Vec::new();
        for seq in 1..=120 {
            let e = event("run_a", seq);
            store.append_event(&e).await.unwrap();
            store.append_event(&event("run_b", seq)).await.unwrap();
            expected.push(e);
        }
        // Read-your-writes: no flush needed before reading.
        let got = store.events("run_a", 0).await.unwrap();
        assert_eq!(got, expected);
        let tail = store.events("run_a", 117).await.unwrap();
        assert_eq!(tail.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![118, 119, 120]);
        assert!(store.events("run_c", 0).await.unwrap().is_empty());
        assert!(store.events("run_a", u64::MAX).await.unwrap().is_empty());
        store.flush().await.unwrap();
    }
}

both! {
    #[tokio::test]
    async fn concurrent_event_writers_keep_each_runs_order(db: Db) {
        let store = db.open().await;
        let mut tasks = Vec::new();
        for r in 0..6 {
            let store = Arc::clone(&store);
            tasks.push(tokio::spawn(async move {
                for seq in 1..=60 {
                    store.append_event(&event(&format!("run_{r}"), seq)).await.unwrap();
                    if seq % 7 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        store.flush().await.unwrap();
        for r in 0..6 {
            let seqs: Vec<u64> = store.events(&format!("run_{r}"), 0).await.unwrap().iter().map(|e| e.seq).collect();
            assert_eq!(seqs, (1..=60).collect::<Vec<_>>());
        }
    }
}

both! {
    #[tokio::test]
    async fn failed_queued_event_is_reported_by_flush_and_fails_alone(db: Db) {
        let store = db.open().await;
        store.append_event(&event("run_a", 1)).await.unwrap();
        store.append_event(&event("run_a", 1)).await.unwrap(); // duplicate (run_id, seq)
        store.append_event(&event("run_a", 2)).await.unwrap();
        let err = store.flush().await.unwrap_err();
        assert!(matches!(err, StoreError::Deferred { .. }), "{err}");
        assert!(err.to_string().contains(&db.shown()), "{err}");
        assert_eq!(store.events("run_a", 0).await.unwrap().len(), 2, "the good events of the batch were kept");
        store.flush().await.unwrap();
    }
}

both! {
    #[tokio::test]
    async fn approvals_upsert_and_list(db: Db) {
        let store = db.open().await;
        let now = Utc::now();
        let mut a = ApprovalRequest {
            id: new_id("apr_"),
            run_id: "run_a".into(),
            owner_id: "local:alice".into(),
            call_id: "call_1".into(),
            tool: "shell".into(),
            arguments: json!({"command": "cargo test"}),
            reason: "runs a program".into(),
            rule: "default:high".into(),
            risk: 0.8,
            preview: String::new(),
            created_at: now,
            expires_at: now + Duration::minutes(5),
            status: ApprovalStatus::Pending,
        };
        let mut b = a.clone();
        b.id = new_id("apr_");
        b.created_at = now + Duration::seconds(1);
        store.upsert_approval(&b).await.unwrap();
        store.upsert_approval(&a).await.unwrap();
        assert_eq!(store.approvals("run_a").await.unwrap(), vec![a.clone(), b.clone()]);
        a.status = ApprovalStatus::Approved;
        store.upsert_approval(&a).await.unwrap();
        assert_eq!(store.approvals("run_a").await.unwrap(), vec![a, b]);
        assert!(store.approvals("run_other").await.unwrap().is_empty());
    }
}

both! {
    #[tokio::test]
    async fn reopening_keeps_everything(db: Db) {
        let r = run("run_keep", Utc::now());
        let (records, events) = {
            let store = db.open().await;
            store.insert_run(&r).await.unwrap();
            let events: Vec<Event> = (1..=3).map(|s| event("run_keep", s)).collect();
            for e in &events {
                store.append_event(e).await.unwrap();
            }
            chain_of(store.as_ref(), 3).await;
            store.flush().await.unwrap();
            (store.audit_records(None).await.unwrap(), events)
        };
        let store = db.open_with(StoreOptions { durability: Durability::Relaxed, ..Default::default() }).await;
        assert_eq!(store.get_run("run_keep").await.unwrap(), Some(r));
        assert_eq!(store.events("run_keep", 0).await.unwrap(), events);
        assert_eq!(store.audit_records(None).await.unwrap(), records);
        let next = store.append_audit(entry("run_keep", 9)).await.unwrap();
        assert_eq!((next.seq, next.prev_hash.as_str()), (4, records[2].hash.as_str()));
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 4 });
    }
}

/// Opens the store of `db` once more and closes it: `Err` when it cannot be opened.
async fn open_again(db: &Db) -> Result<(), StoreError> {
    let store: Arc<dyn Store> = match db {
        Db::Sqlite { .. } => Arc::new(SqliteStore::open(&db.path(), StoreOptions::default()).await?),
        Db::Postgres { .. } => Arc::new(PgStore::open_with(db.pg_connect(), StoreOptions::default(), "node-a").await?),
    };
    store.close().await
}

both! {
    /// A database that records every migration opens without running the migrator; any other
    /// state of the migrations table still goes through it and is applied or reported.
    #[tokio::test]
    async fn a_reopened_database_is_checked_against_the_migrations(db: Db) {
        let store = db.open().await;
        store.insert_run(&run("run_migrated", Utc::now())).await.unwrap();
        store.close().await.unwrap();
        drop(store);
        open_again(&db).await.unwrap();
        let refused = |outcome: Result<(), StoreError>, why: &str| match outcome {
            Err(StoreError::Migrate { .. }) => {}
            other => panic!("{why}: opened with {other:?}"),
        };
        // A migration that failed half-way.
        db.tamper("UPDATE _sqlx_migrations SET success = false WHERE version = 11").await;
        refused(open_again(&db).await, "a failed migration");
        db.tamper("UPDATE _sqlx_migrations SET success = true WHERE version = 11").await;
        open_again(&db).await.unwrap();
        // A migration of a newer build.
        let newer = if db.is_postgres() {
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (99, 'newer', true, decode('00', 'hex'), 0)"
        } else {
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (99, 'newer', true, X'00', 0)"
        };
        db.tamper(newer).await;
        refused(open_again(&db).await, "a migration this build does not know");
        db.tamper("DELETE FROM _sqlx_migrations WHERE version = 99").await;
        open_again(&db).await.unwrap();
        // A migration file changed since it was applied.
        let changed = if db.is_postgres() {
            "UPDATE _sqlx_migrations SET checksum = decode('00', 'hex') WHERE version = 3"
        } else {
            "UPDATE _sqlx_migrations SET checksum = X'00' WHERE version = 3"
        };
        db.tamper(changed).await;
        refused(open_again(&db).await, "a changed migration");
    }
}

#[cfg(unix)]
#[tokio::test]
async fn new_database_is_private_to_its_owner() {
    // SQLite only: PostgreSQL keeps its own files.
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a").join("b").join("steward.db");
    let store = open(&path).await;
    chain_of(&store, 1).await;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    assert_eq!(mode(&dir.path().join("a")), 0o700);

    let loose = dir.path().join("loose.db");
    std::fs::write(&loose, b"").unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    let _store = open(&loose).await;
    assert_eq!(mode(&loose), 0o600, "an existing world-readable file is tightened");
}

#[tokio::test]
async fn open_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not_a_dir");
    std::fs::write(&blocker, b"x").unwrap();
    let path = blocker.join("steward.db");
    let err = SqliteStore::open(&path, StoreOptions::default()).await.unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
    assert!(err.to_string().contains(&path.display().to_string()), "{err}");
}

#[tokio::test]
async fn pg_store_open_errors_name_the_database_without_its_password() {
    // Port 1 refuses connections: no server is needed.
    let err =
        PgStore::open("postgres://steward:hunter2@127.0.0.1:1/ledger", StoreOptions::default()).await.unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    let text = format!("{err} {err:?}");
    assert!(text.contains("postgres://steward@127.0.0.1:1/ledger"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    let err = PgStore::open("postgres://steward:hunter2@127.0.0.1:notaport/ledger", StoreOptions::default())
        .await
        .unwrap_err();
    assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");
}

fn fact(owner_id: &str, text: &str, created_at: Timestamp) -> FactRecord {
    FactRecord { id: new_id("fct_"), owner_id: owner_id.into(), text: text.into(), created_at }
}

both! {
    #[tokio::test]
    async fn facts_are_listed_oldest_first_and_deleted_only_by_their_owner(db: Db) {
        let store = db.open().await;
        let now = Utc::now();
        let b = fact("local:alice", "the build uses cargo nextest", now + Duration::seconds(1));
        let a = fact("local:alice", "prefers short answers é漢", now);
        let bob = fact("local:bob", "works on the server crate", now);
        for f in [&b, &a, &bob] {
            assert!(store.insert_fact(f, 50).await.unwrap());
        }
        assert_eq!(store.facts("local:alice").await.unwrap(), vec![a.clone(), b.clone()]);
        assert_eq!(store.facts("local:bob").await.unwrap(), vec![bob.clone()]);
        assert!(store.facts("local:carol").await.unwrap().is_empty());

        assert!(!store.delete_fact("local:bob", &a.id).await.unwrap(), "not bob's fact");
        assert!(!store.delete_fact("local:alice", "fct_missing").await.unwrap());
        assert_eq!(store.facts("local:alice").await.unwrap().len(), 2);
        assert!(store.delete_fact("local:alice", &a.id).await.unwrap());
        assert!(!store.delete_fact("local:alice", &a.id).await.unwrap(), "already gone");
        assert_eq!(store.facts("local:alice").await.unwrap(), vec![b]);
        assert_eq!(store.facts("local:bob").await.unwrap(), vec![bob]);
    }
}

both! {
    #[tokio::test]
    async fn insert_fact_stops_at_the_owners_limit(db: Db) {
        let store = db.open().await;
        let now = Utc::now();
        for i in 0..3 {
            assert!(store.insert_fact(&fact("local:alice", &format!("fact {i}"), now), 3).await.unwrap());
        }
        let refused = fact("local:alice", "one too many", now);
        assert!(!store.insert_fact(&refused, 3).await.unwrap());
        assert_eq!(store.facts("local:alice").await.unwrap().len(), 3, "nothing was stored");
        assert!(store.insert_fact(&fact("local:bob", "another owner", now), 3).await.unwrap(), "limits are per owner");
        assert!(!store.insert_fact(&fact("local:alice", "none allowed", now), 0).await.unwrap());

        let first = store.facts("local:alice").await.unwrap().remove(0);
        assert!(store.delete_fact("local:alice", &first.id).await.unwrap());
        assert!(store.insert_fact(&refused, 3).await.unwrap(), "room again after a deletion");
        assert_eq!(store.facts("local:alice").await.unwrap().len(), 3);

        let err = store.insert_fact(&refused, 50).await.unwrap_err();
        assert!(matches!(err, StoreError::Database { .. }), "a duplicate id fails: {err}");
    }
}

both! {
    #[tokio::test]
    async fn concurrent_fact_inserts_never_exceed_the_limit(db: Db) {
        // Inserts queued together are committed in one batch: each one must count the ones before it.
        let store = db.open().await;
        let mut tasks = Vec::new();
        for i in 0..40 {
            let store = Arc::clone(&store);
            tasks.push(tokio::spawn(async move {
                store.insert_fact(&fact("local:alice", &format!("fact {i}"), Utc::now()), 10).await.unwrap()
            }));
        }
        let mut inserted = 0;
        for t in tasks {
            inserted += usize::from(t.await.unwrap());
        }
        assert_eq!(inserted, 10);
        assert_eq!(store.facts("local:alice").await.unwrap().len(), 10);
    }
}

both! {
    #[tokio::test]
    async fn a_failing_fact_insert_in_a_batch_fails_alone(db: Db) {
        let store = db.open().await;
        let first = fact("local:alice", "first", Utc::now());
        assert!(store.insert_fact(&first, 2).await.unwrap());
        let second = fact("local:alice", "second", Utc::now());
        let third = fact("local:alice", "third", Utc::now());
        // Queued together: the duplicate id fails, the batch is retried write by write in order.
        let (dup, a, b) =
            tokio::join!(store.insert_fact(&first, 2), store.insert_fact(&second, 2), store.insert_fact(&third, 2));
        assert!(matches!(dup, Err(StoreError::Database { .. })), "{dup:?}");
        assert_eq!((a.unwrap(), b.unwrap()), (true, false));
        assert_eq!(store.facts("local:alice").await.unwrap(), vec![first, second]);
    }
}

both! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_stores_on_one_database_share_the_fact_limit_and_see_each_others_facts(db: Db) {
        let (a, b) = tokio::join!(db.open(), db.open());
        let stores = [a, b];
        let mut tasks = Vec::new();
        for (s, store) in stores.iter().enumerate() {
            for i in 0..15 {
                let store = Arc::clone(store);
                tasks.push(tokio::spawn(async move {
                    store.insert_fact(&fact("local:alice", &format!("fact {s} {i}"), Utc::now()), 20).await.unwrap()
                }));
            }
        }
        let mut inserted = 0;
        for t in tasks {
            inserted += usize::from(t.await.unwrap());
        }
        assert_eq!(inserted, 20);
        let seen_a = stores[0].facts("local:alice").await.unwrap();
        assert_eq!(seen_a.len(), 20);
        assert_eq!(stores[1].facts("local:alice").await.unwrap(), seen_a);
        assert!(stores[1].delete_fact("local:alice", &seen_a[0].id).await.unwrap());
        assert_eq!(stores[0].facts("local:alice").await.unwrap(), seen_a[1..].to_vec(), "a deletion is seen at once");
    }
}

both! {
    #[tokio::test]
    async fn facts_survive_reopening(db: Db) {
        let kept = fact("local:alice", "the staging host is build-02", Utc::now());
        {
            let store = db.open().await;
            assert!(store.insert_fact(&kept, 50).await.unwrap());
        }
        let store = db.open().await;
        assert_eq!(store.facts("local:alice").await.unwrap(), vec![kept]);
    }
}

both! {
    #[tokio::test]
    async fn the_first_approval_decision_wins_and_another_process_reads_it(db: Db) {
        let writer = db.open().await;
        let reader = db.open().await;
        let decision = |approve: bool| steward_store::ApprovalDecisionRecord {
            approval_id: "apr_1".into(),
            run_id: "run_1".into(),
            decided_by: "local:alice".into(),
            approve,
            scope: "once".into(),
            reason: String::new(),
            created_at: Utc::now(),
            call_hash: String::new(),
        };
        assert_eq!(reader.approval_decision("apr_1").await.unwrap(), None);
        assert!(writer.insert_approval_decision(&decision(true)).await.unwrap());
        assert!(!writer.insert_approval_decision(&decision(false)).await.unwrap(), "a second decision is refused");
        let read = reader.approval_decision("apr_1").await.unwrap().unwrap();
        assert!(read.approve, "the first decision stands");
        assert_eq!(read.decided_by, "local:alice");
    }
}

both! {
    #[tokio::test]
    async fn deleting_a_run_removes_what_belongs_to_it_but_never_a_running_one_or_the_audit(db: Db) {
        let store = db.open().await;
        let mut finished = run("run_old", Utc::now());
        finished.status = RunStatus::Completed;
        store.insert_run(&finished).await.unwrap();
        let mut live = run("run_live", Utc::now());
        live.status = RunStatus::Running;
        store.insert_run(&live).await.unwrap();
        store.append_event(&event("run_old", 1)).await.unwrap();
        store.append_audit(entry("run_old", 1)).await.unwrap();
        assert!(store.delete_run("run_old").await.unwrap());
        assert!(!store.delete_run("run_live").await.unwrap(), "a running run stays");
        assert!(!store.delete_run("run_none").await.unwrap());
        assert!(store.get_run("run_old").await.unwrap().is_none());
        assert!(store.events("run_old", 0).await.unwrap().is_empty());
        assert!(store.get_run("run_live").await.unwrap().is_some());
        assert_eq!(store.audit_records(Some("run_old")).await.unwrap().len(), 1, "the audit chain is kept");
        assert!(matches!(store.verify_audit().await.unwrap(), AuditVerification::Valid { .. }));
    }
}

both! {
    #[tokio::test]
    async fn rollbacks_and_grants_round_trip(db: Db) {
        let store = db.open().await;
        let now = Utc::now();
        let rollback = |step: u32| steward_store::RollbackRecord {
            token: new_id("rb_"),
            run_id: "run_a".into(),
            call_id: format!("call_{step}"),
            tool: "edit".into(),
            step,
            compensation: json!({"kind": "restore", "path": "a.txt"}),
            status: steward_store::RollbackStatus::Pending,
            detail: String::new(),
            created_at: now + Duration::seconds(i64::from(step)),
            undone_at: None,
        };
        let (mut one, two) = (rollback(1), rollback(2));
        store.upsert_rollback(&two).await.unwrap();
        store.upsert_rollback(&one).await.unwrap();
        one.status = steward_store::RollbackStatus::Undone;
        one.undone_at = Some(now);
        store.upsert_rollback(&one).await.unwrap();
        assert_eq!(store.rollbacks("run_a").await.unwrap(), vec![one, two]);
        let grant = steward_store::GrantRecord {
            id: new_id("grt_"),
            owner_id: "local:alice".into(),
            scope: steward_store::GrantScope::Workspace,
            run_id: "run_a".into(),
            workspace: "/work/ws".into(),
            tool: "edit".into(),
            approval_id: "apr_1".into(),
            created_at: now,
            expires_at: now + Duration::hours(1),
            revoked_at: None,
        };
        store.upsert_grant(&grant).await.unwrap();
        assert_eq!(store.grants("local:alice").await.unwrap(), vec![grant]);
        assert!(store.grants("local:bob").await.unwrap().is_empty());
    }
}

/// A new conversation of `local:alice` in `/work/ws` with `turns`.
fn conversation(turns: Vec<ConversationTurn>, now: chrono::DateTime<Utc>) -> ConversationRecord {
    ConversationRecord {
        id: new_id("cnv_"),
        owner_id: "local:alice".into(),
        workspace: "/work/ws".into(),
        planner: String::new(),
        provider: String::new(),
        model: String::new(),
        mode: String::new(),
        turns,
        created_at: now,
        ended_at: None,
    }
}

both! {
    #[tokio::test]
    async fn conversations_round_trip(db: Db) {
        let store = db.open().await;
        let now = Utc::now();
        let mut c = conversation(Vec::new(), now);
        store.upsert_conversation(&c).await.unwrap();
        c.turns.push(ConversationTurn { message: "list files".into(), run_id: "run_a".into(), reply: String::new(), at: now });
        store.upsert_conversation(&c).await.unwrap();
        assert_eq!(store.conversation(&c.id).await.unwrap(), Some(c.clone()));
        assert_eq!(store.conversations("local:alice").await.unwrap(), vec![c]);
        assert!(store.conversations("local:bob").await.unwrap().is_empty());
        assert_eq!(store.conversation("cnv_missing").await.unwrap(), None);
    }
}

both! {
    #[tokio::test]
    async fn a_run_and_its_conversation_queued_together_commit_and_a_duplicate_run_fails_alone(db: Db) {
        let store = db.open().await;
        let now = Utc::now();
        let taken = run(&new_id("run_"), now);
        store.insert_run(&taken).await.unwrap();
        let fresh = run(&new_id("run_"), now);
        let turn = ConversationTurn { message: "list files".into(), run_id: fresh.id.clone(), reply: String::new(), at: now };
        let mut conversation = conversation(vec![turn], now);
        // Queued together, they share a batch: the duplicate fails, the others are kept.
        let (kept, dup, inserted) =
            tokio::join!(store.upsert_conversation(&conversation), store.insert_run(&taken), store.insert_run(&fresh));
        kept.unwrap();
        inserted.unwrap();
        assert!(dup.is_err(), "a duplicate id is refused");
        assert_eq!(store.get_run(&fresh.id).await.unwrap().as_ref(), Some(&fresh));
        assert_eq!(store.conversation(&conversation.id).await.unwrap().as_ref(), Some(&conversation));
        // An upsert replaces the document of its id.
        conversation.ended_at = Some(now);
        let third = run(&new_id("run_"), now);
        let (again, other) = tokio::join!(store.upsert_conversation(&conversation), store.insert_run(&third));
        again.unwrap();
        other.unwrap();
        assert_eq!(store.conversations("local:alice").await.unwrap(), vec![conversation]);
        assert_eq!(store.list_runs(10).await.unwrap().len(), 3);
    }
}

both! {
    #[tokio::test]
    async fn mcp_tokens_round_trip_revoke_and_touch(db: Db) {
        let store = db.open().await;
        let now = Utc::now();
        let token = McpTokenRecord {
            id: new_id("mtk_"),
            owner_id: "local:alice".into(),
            name: "laptop".into(),
            scopes: vec!["read".into(), "submit".into()],
            token_hash: "a".repeat(64),
            created_at: now,
            last_used_at: None,
            revoked_at: None,
        };
        store.insert_mcp_token(&token).await.unwrap();
        assert!(store.insert_mcp_token(&McpTokenRecord { id: new_id("mtk_"), ..token.clone() }).await.is_err());
        assert_eq!(store.mcp_tokens("local:alice").await.unwrap(), vec![token.clone()]);
        assert_eq!(store.mcp_token_by_hash(&"a".repeat(64)).await.unwrap(), Some(token.clone()));
        assert!(store.touch_mcp_token(&token.id, now).await.unwrap());
        assert!(!store.revoke_mcp_token("local:bob", &token.id, now).await.unwrap(), "not bob's token");
        assert!(store.revoke_mcp_token("local:alice", &token.id, now).await.unwrap());
        assert!(!store.revoke_mcp_token("local:alice", &token.id, now).await.unwrap(), "already revoked");
        let stored = store.mcp_token_by_hash(&"a".repeat(64)).await.unwrap().unwrap();
        assert_eq!((stored.last_used_at, stored.revoked_at), (Some(now), Some(now)));
    }
}

/// On a shared database each node recovers only the runs it started: another node's process
/// ids mean nothing here.
#[tokio::test]
async fn postgres_nodes_see_only_their_own_running_runs_as_local() {
    let db = Db::postgres().await;
    let here = db.open_pg("node-a", StoreOptions::default()).await;
    let there = db.open_pg("node-b", StoreOptions::default()).await;
    assert_eq!((here.node(), there.node()), ("node-a", "node-b"));
    let t0 = Utc::now();
    here.insert_run(&run("run_here", t0)).await.unwrap();
    there.insert_run(&run("run_there", t0 + Duration::seconds(1))).await.unwrap();
    let mut done = run("run_done", t0);
    done.status = RunStatus::Completed;
    here.insert_run(&done).await.unwrap();
    let ids = |runs: Vec<RunRecord>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(here.local_running_runs().await.unwrap()), ["run_here"]);
    assert_eq!(ids(there.local_running_runs().await.unwrap()), ["run_there"]);
    assert_eq!(ids(here.runs_with_status(RunStatus::Running).await.unwrap()), ["run_here", "run_there"]);
    // An update from another node (a cancel from its web UI) does not move the run.
    let mut moved = run("run_here", t0);
    moved.rounds = 2;
    there.update_run(&moved).await.unwrap();
    assert_eq!(ids(here.local_running_runs().await.unwrap()), ["run_here"]);
}

#[tokio::test]
async fn sqlite_treats_every_running_run_as_local() {
    let db = Db::sqlite();
    let store = db.open().await;
    store.insert_run(&run("run_1", Utc::now())).await.unwrap();
    let other = db.open().await;
    assert_eq!(other.local_running_runs().await.unwrap().len(), 1);
}

#[tokio::test]
async fn postgres_refuses_to_append_without_the_chain_lock_row() {
    let db = Db::postgres().await;
    let store = db.open().await;
    store.append_audit(entry("run_a", 1)).await.unwrap();
    db.tamper("DELETE FROM audit_chain_lock").await;
    let err = store.append_audit(entry("run_a", 2)).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("audit_chain_lock"), "{err}");
    // Appends stay refused (nothing would serialise them) until the row is back.
    db.tamper("INSERT INTO audit_chain_lock (id) VALUES (1)").await;
    assert_eq!(store.append_audit(entry("run_a", 3)).await.unwrap().seq, 2);
}
