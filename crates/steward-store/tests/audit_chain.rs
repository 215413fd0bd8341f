//! The audit chain on both backends: round trips, queued records, record ids, values that
//! cannot be hashed back, tampering of every kind (modified, edited, deleted, renumbered,
//! reordered, cut off, anchor removed, values of another type), a long chain, concurrency
//! within one store and across two stores on one database, and a throughput figure.

use crate::common;

use std::sync::Arc;
use std::time::Instant;

use common::Db;
use common::records::*;
use sqlx::Connection;
use steward_store::{AuditVerification, Durability, StoreError, StoreOptions};

both! {
    #[tokio::test]
    async fn audit_round_trip_and_valid_chain(db: Db) {
        let store = db.open().await;
        let mut appended = Vec::new();
        for i in 1..=5 {
            appended.push(store.append_audit(entry(if i % 2 == 0 { "run_b" } else { "run_a" }, i)).await.unwrap());
        }
        assert_eq!(appended[0].seq, 1);
        assert_eq!(appended[0].prev_hash, steward_store::GENESIS_HASH);
        assert_eq!(appended[1].prev_hash, appended[0].hash);
        assert!(appended[0].id.starts_with("aud_"));
        assert_eq!(store.audit_records(None).await.unwrap(), appended);
        let run_b: Vec<u64> = store.audit_records(Some("run_b")).await.unwrap().iter().map(|r| r.seq).collect();
        assert_eq!(run_b, vec![2, 4]);
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 5 });
        for r in &appended {
            assert_eq!(steward_store::audit_hash(&r.prev_hash, r), r.hash);
        }
    }
}

both! {
    #[tokio::test]
    async fn queued_audit_records_join_the_chain_in_order(db: Db) {
        let store = db.open().await;
        store.queue_audit(entry("run_a", 1)).await.unwrap();
        store.queue_audit(entry("run_a", 2)).await.unwrap();
        let third = store.append_audit(entry("run_a", 3)).await.unwrap();
        assert_eq!(third.seq, 3, "queued records are committed before a later append");
        store.queue_audit(entry("run_a", 4)).await.unwrap();
        store.flush().await.unwrap();
        let calls: Vec<String> =
            store.audit_records(None).await.unwrap().into_iter().map(|r| r.entry.call_id).collect();
        assert_eq!(calls, ["call_1", "call_2", "call_3", "call_4"]);
        let mut bad = entry("run_a", 5);
        bad.risk = f64::INFINITY;
        store.queue_audit(bad).await.unwrap();
        assert!(matches!(store.flush().await.unwrap_err(), StoreError::Deferred { .. }));
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 4 });
    }
}

both! {
    #[tokio::test]
    async fn audit_refuses_values_it_cannot_hash_back(db: Db) {
        let store = db.open().await;
        let mut bad = entry("run_a", 1);
        bad.risk = f64::NAN;
        assert!(matches!(store.append_audit(bad).await.unwrap_err(), StoreError::Invalid { .. }));
        let mut big = entry("run_a", 1);
        big.latency_ms = u64::MAX;
        assert!(matches!(store.append_audit(big).await.unwrap_err(), StoreError::Invalid { .. }));
        let ok = store.append_audit(entry("run_a", 2)).await.unwrap();
        assert_eq!(ok.seq, 1, "refused entries take no seq");
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 1 });
    }
}

both! {
    #[tokio::test]
    async fn verify_detects_a_modified_record(db: Db) {
        let store = db.open().await;
        chain_of(store.as_ref(), 6).await;
        db.tamper("UPDATE audit SET outcome = 'blocked' WHERE seq = 3").await;
        let (seq, _, problem) = broken(store.verify_audit().await.unwrap());
        assert_eq!((seq, problem.as_str()), (3, "changed"));
    }
}

both! {
    #[tokio::test]
    async fn verify_detects_an_edited_input_and_an_unreadable_row(db: Db) {
        let store = db.open().await;
        chain_of(store.as_ref(), 4).await;
        db.tamper(r#"UPDATE audit SET input = '{"path":"other.rs"}' WHERE seq = 2"#).await;
        assert_eq!(broken(store.verify_audit().await.unwrap()).2, "changed");
        db.tamper("UPDATE audit SET input = (SELECT input FROM audit WHERE seq = 1) WHERE seq = 2").await;
        db.tamper("UPDATE audit SET at = 'yesterday' WHERE seq = 4").await;
        let (seq, _, problem) = broken(store.verify_audit().await.unwrap());
        assert_eq!((seq, problem.as_str()), (2, "changed"), "the earliest bad record is reported");
    }
}

both! {
    #[tokio::test]
    async fn verify_detects_a_deleted_record(db: Db) {
        let store = db.open().await;
        chain_of(store.as_ref(), 6).await;
        db.tamper("DELETE FROM audit WHERE seq = 3").await;
        let (seq, _, problem) = broken(store.verify_audit().await.unwrap());
        assert_eq!((seq, problem.as_str()), (4, "removed (gap after seq 2)"));
    }
}

both! {
    #[tokio::test]
    async fn verify_detects_a_deletion_hidden_by_renumbering(db: Db) {
        let store = db.open().await;
        chain_of(store.as_ref(), 6).await;
        db.tamper(
            "DELETE FROM audit WHERE seq = 3; UPDATE audit SET seq = -(seq - 1) WHERE seq > 3; \
             UPDATE audit SET seq = -seq WHERE seq < 0",
        )
        .await;
        let (seq, _, problem) = broken(store.verify_audit().await.unwrap());
        assert_eq!((seq, problem.as_str()), (3, "removed (gap after seq 2)"));
    }
}

both! {
    #[tokio::test]
    async fn verify_detects_reordered_records(db: Db) {
        let store = db.open().await;
        chain_of(store.as_ref(), 6).await;
        let records = store.audit_records(None).await.unwrap();
        db.tamper(
            "UPDATE audit SET seq = -1 WHERE seq = 3; UPDATE audit SET seq = 3 WHERE seq = 4; \
             UPDATE audit SET seq = 4 WHERE seq = -1",
        )
        .await;
        let (seq, id, problem) = broken(store.verify_audit().await.unwrap());
        assert_eq!((seq, problem.as_str()), (3, "reordered"));
        assert_eq!(id, records[3].id, "the record that moved up is reported");
    }
}

both! {
    /// The verification of a long chain, on a runtime with several threads, names a record
    /// changed deep inside it as the one of a short chain.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn verify_names_a_record_changed_deep_in_a_long_chain(db: Db) {
        let store = db.open().await;
        for i in 1..=3000 {
            store.queue_audit(entry("run_a", i)).await.unwrap();
        }
        store.flush().await.unwrap();
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 3000 });
        let records = store.audit_records(None).await.unwrap();
        db.tamper("UPDATE audit SET detail = 'edited' WHERE seq = 2049").await;
        let (seq, id, problem) = broken(store.verify_audit().await.unwrap());
        assert_eq!((seq, id.as_str(), problem.as_str()), (2049, records[2048].id.as_str(), "changed"));
        db.tamper("UPDATE audit SET detail = 'ok' WHERE seq = 2049; DELETE FROM audit WHERE seq = 2999").await;
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Broken {
            seq: 3000,
            id: records[2999].id.clone(),
            problem: "removed (gap after seq 2998)".into()
        });
    }
}

both! {
    #[tokio::test]
    async fn audit_ids_are_distinct_and_increase_along_the_chain(db: Db) {
        let store = db.open().await;
        chain_of(store.as_ref(), 3).await;
        for i in 4..=6 {
            store.queue_audit(entry("run_a", i)).await.unwrap();
        }
        store.flush().await.unwrap();
        let ids: Vec<String> = store.audit_records(None).await.unwrap().into_iter().map(|r| r.id).collect();
        assert!(ids.iter().all(|id| id.len() == 20 && id.starts_with("aud_")), "{ids:?}");
        // Wrapping past `aud_ffffffffffffffff` is left out: a start that close to it is
        // vanishingly rare.
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    }
}

both! {
    #[tokio::test]
    async fn a_failing_audit_insert_in_a_batch_fails_alone(db: Db) {
        let store = db.open().await;
        chain_of(store.as_ref(), 1).await;
        // An index added behind the store's back makes an entry with a repeated call id fail
        // at the insert itself, after it was hashed.
        db.tamper("CREATE UNIQUE INDEX audit_call_once ON audit (call_id)").await;
        store.queue_audit(entry("run_a", 2)).await.unwrap();
        store.queue_audit(entry("run_a", 1)).await.unwrap();
        store.queue_audit(entry("run_a", 3)).await.unwrap();
        let err = store.flush().await.unwrap_err();
        assert!(matches!(err, StoreError::Deferred { .. }), "{err}");
        assert!(err.to_string().contains(&db.shown()), "{err}");
        let (repeated, next) =
            tokio::join!(store.append_audit(entry("run_a", 2)), store.append_audit(entry("run_a", 4)));
        assert!(repeated.is_err(), "{repeated:?}");
        assert_eq!(next.unwrap().seq, 4, "the failed writes took no seq");
        let records = store.audit_records(None).await.unwrap();
        let calls: Vec<&str> = records.iter().map(|r| r.entry.call_id.as_str()).collect();
        assert_eq!(calls, ["call_1", "call_2", "call_3", "call_4"]);
        assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 4 });
    }
}

both! {
    #[tokio::test]
    async fn events_and_audit_records_queued_together_commit_in_order_and_a_bad_one_fails_alone(db: Db) {
        let store = db.open().await;
        chain_of(store.as_ref(), 1).await;
        // Queued back to back, the writes of a run's steps go in one batch: events between
        // audit records, and an event that repeats `(run_id, seq)` fails at its insert.
        store.append_event(&event("run_a", 1)).await.unwrap();
        store.queue_audit(entry("run_a", 2)).await.unwrap();
        store.queue_audit(entry("run_a", 3)).await.unwrap();
        store.append_event(&event("run_a", 2)).await.unwrap();
        store.append_event(&event("run_a", 1)).await.unwrap();
        store.queue_audit(entry("run_a", 4)).await.unwrap();
        let err = store.flush().await.unwrap_err();
        assert!(matches!(err, StoreError::Deferred { .. }), "{err}");
        let seqs: Vec<u64> = store.events("run_a", 0).await.unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2], "the good events of the batch were kept");
        let records = store.audit_records(None).await.unwrap();
        let calls: Vec<&str> = records.iter().map(|r| r.entry.call_id.as_str()).collect();
        assert_eq!(calls, ["call_1", "call_2", "call_3", "call_4"]);
        assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
        // The next batch goes on from the head the retried writes left.
        store.append_event(&event("run_a", 3)).await.unwrap();
        assert_eq!(store.append_audit(entry("run_a", 5)).await.unwrap().seq, 5);
        store.flush().await.unwrap();
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 5 });
    }
}

/// The records SQLite stores hold their values with the types the verification reads
/// (`INTEGER` `seq` and `latency_ms`, `REAL` `risk`, `TEXT` else) and exactly the texts
/// appended, a NUL or a character beyond ASCII included.
#[tokio::test]
async fn audit_rows_on_sqlite_are_stored_as_appended() {
    let db = Db::sqlite();
    let store = db.open().await;
    let mut odd = entry("run_a", 2);
    odd.detail = "nul \u{0} inside, é漢 and a quote \" too".into();
    odd.sandbox = String::new();
    store.queue_audit(entry("run_a", 1)).await.unwrap();
    store.queue_audit(odd.clone()).await.unwrap();
    let third = store.append_audit(entry("run_b", 3)).await.unwrap();
    assert_eq!(third.seq, 3);
    let records = store.audit_records(None).await.unwrap();
    assert_eq!(records[1].entry, odd);
    assert_eq!(records[2], third);
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(db.path());
    let mut conn = sqlx::SqliteConnection::connect_with(&options).await.unwrap();
    let types: Vec<(String,)> = sqlx::query_as(
        "SELECT typeof(seq) || typeof(id) || typeof(at) || typeof(agent) || typeof(run_id) || typeof(call_id) \
         || typeof(action) || typeof(input) || typeof(policy) || typeof(risk) || typeof(outcome) \
         || typeof(latency_ms) || typeof(sandbox) || typeof(approval_id) || typeof(rollback_token) \
         || typeof(detail) || typeof(prev_hash) || typeof(hash) FROM audit ORDER BY seq",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let expected = format!("integer{}real{}integer{}", "text".repeat(8), "text", "text".repeat(6));
    assert_eq!(types, vec![(expected,); 3]);
    let detail: (Vec<u8>,) =
        sqlx::query_as("SELECT CAST(detail AS BLOB) FROM audit WHERE seq = 2").fetch_one(&mut conn).await.unwrap();
    assert_eq!(detail.0, odd.detail.as_bytes());
    conn.close().await.unwrap();
    assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 3 });
}

/// The audit table of an earlier schema (`seq BIGINT PRIMARY KEY`, an index of `seq` beside
/// the table) is keyed by its rowid when the store opens: the same records, a chain that
/// verifies and goes on from its head, one index fewer.
#[tokio::test]
async fn an_audit_table_of_the_earlier_schema_is_keyed_by_seq_when_opened() {
    let db = Db::sqlite();
    let store = db.open().await;
    store.append_audit(entry("run_a", 1)).await.unwrap();
    store.append_audit(entry("run_b", 2)).await.unwrap();
    store.append_audit(entry("run_a", 3)).await.unwrap();
    let before = store.audit_records(None).await.unwrap();
    store.close().await.unwrap();
    drop(store);
    let audit_indexes = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit'";
    let earlier = "CREATE TABLE audit_earlier (seq BIGINT PRIMARY KEY NOT NULL, id TEXT NOT NULL UNIQUE, \
        at TEXT NOT NULL, agent TEXT NOT NULL, run_id TEXT NOT NULL, call_id TEXT NOT NULL, action TEXT NOT NULL, \
        input TEXT NOT NULL, policy TEXT NOT NULL, risk DOUBLE PRECISION NOT NULL, outcome TEXT NOT NULL, \
        latency_ms BIGINT NOT NULL, sandbox TEXT NOT NULL, approval_id TEXT NOT NULL, \
        rollback_token TEXT NOT NULL, detail TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
        INSERT INTO audit_earlier SELECT * FROM audit;
        DROP TABLE audit;
        ALTER TABLE audit_earlier RENAME TO audit;
        CREATE INDEX audit_run ON audit (run_id, seq);
        DELETE FROM _sqlx_migrations WHERE version = 12";
    db.tamper(earlier).await;
    let count = |sql: &'static str| {
        let path = db.path();
        async move {
            let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
            let mut conn = sqlx::SqliteConnection::connect_with(&options).await.unwrap();
            let (n,): (i64,) = sqlx::query_as(sql).fetch_one(&mut conn).await.unwrap();
            conn.close().await.unwrap();
            n
        }
    };
    assert_eq!(count(audit_indexes).await, 3, "seq, id and run_id indexed in the earlier schema");

    let store = db.open().await;
    assert_eq!(store.audit_records(None).await.unwrap(), before);
    let run_a: Vec<u64> = store.audit_records(Some("run_a")).await.unwrap().iter().map(|r| r.seq).collect();
    assert_eq!(run_a, vec![1, 3]);
    assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 3 });
    let next = store.append_audit(entry("run_a", 4)).await.unwrap();
    assert_eq!((next.seq, next.prev_hash.as_str()), (4, before[2].hash.as_str()));
    assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 4 });
    store.close().await.unwrap();
    drop(store);
    assert_eq!(count(audit_indexes).await, 2, "seq is the rowid: only id and run_id are indexed");
}

/// A column holding a value of another type than the store writes, which SQLite allows and
/// sqlx refuses to decode, or a text that is not UTF-8, makes its record `changed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_on_sqlite_judges_values_of_another_type_changed() {
    let db = Db::sqlite();
    let store = db.open().await;
    chain_of(store.as_ref(), 5).await;
    let records = store.audit_records(None).await.unwrap();
    // The same bytes, as a BLOB: it would hash as before.
    db.tamper("UPDATE audit SET agent = CAST(agent AS BLOB) WHERE seq = 4").await;
    let (seq, id, problem) = broken(store.verify_audit().await.unwrap());
    assert_eq!((seq, id.as_str(), problem.as_str()), (4, records[3].id.as_str(), "changed"));
    db.tamper("UPDATE audit SET detail = CAST(X'C328' AS TEXT) WHERE seq = 2").await;
    let (seq, _, problem) = broken(store.verify_audit().await.unwrap());
    assert_eq!((seq, problem.as_str()), (2, "changed"), "the earliest bad record is reported");
}

both! {
    #[tokio::test]
    async fn records_cut_off_the_end_are_caught_by_the_anchor(db: Db) {
        let anchor = tempfile::tempdir().unwrap();
        let options = StoreOptions { audit_anchor: Some(anchor.path().join("audit.anchor")), ..Default::default() };
        let store = db.open_with(options).await;
        chain_of(store.as_ref(), 5).await;
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 5 });
        db.tamper("DELETE FROM audit WHERE seq >= 4").await;
        let (seq, _, problem) = broken(store.verify_audit().await.unwrap());
        assert_eq!(seq, 4);
        assert!(problem.starts_with("removed: the chain ends at record 3"), "{problem}");
    }
}

both! {
    #[tokio::test]
    async fn a_removed_anchor_breaks_verification_until_a_recorded_reset(db: Db) {
        let anchor = tempfile::tempdir().unwrap();
        let path = anchor.path().join("audit.anchor");
        let options = StoreOptions { audit_anchor: Some(path.clone()), ..Default::default() };
        let store = db.open_with(options).await;
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 0 });
        chain_of(store.as_ref(), 3).await;
        assert!(path.exists(), "the chain's first record writes the anchor");
        std::fs::remove_file(&path).unwrap();
        let (seq, _, problem) = broken(store.verify_audit().await.unwrap());
        assert_eq!(seq, 3);
        assert!(problem.starts_with("anchor missing"), "{problem}");
        // Appends do not write a fresh anchor at the head.
        store.append_audit(entry("run_later", 9)).await.unwrap();
        store.flush().await.unwrap();
        assert!(!path.exists(), "an append recreated the anchor");
        let (_, _, problem) = broken(store.verify_audit().await.unwrap());
        assert!(problem.starts_with("anchor missing"), "{problem}");
        let reset = store.reset_audit_anchor(entry("", 0)).await.unwrap();
        assert_eq!(reset.seq, 5);
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 5 });
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.trim(), format!("5 {}", reset.hash));
    }
}

both! {
    #[tokio::test]
    async fn concurrent_appends_build_one_chain_of_400(db: Db) {
        let store = db.open().await;
        let mut tasks = Vec::new();
        for t in 0..8u64 {
            let store = Arc::clone(&store);
            tasks.push(tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in 0..50 {
                    seqs.push(store.append_audit(entry(&format!("run_{t}"), i)).await.unwrap().seq);
                }
                seqs
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            let seqs = t.await.unwrap();
            assert!(seqs.windows(2).all(|w| w[0] < w[1]), "one task's appends are ordered");
            all.extend(seqs);
        }
        all.sort_unstable();
        assert_eq!(all, (1..=400).collect::<Vec<_>>());
        assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 400 });
        let stored: Vec<u64> = store.audit_records(None).await.unwrap().iter().map(|r| r.seq).collect();
        assert_eq!(stored, (1..=400).collect::<Vec<_>>());
    }
}

both! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_stores_on_one_database_share_a_single_chain(db: Db) {
        let (a, b) = tokio::join!(db.open(), db.open());
        let stores = [a, b];
        let mut tasks = Vec::new();
        for (s, store) in stores.iter().enumerate() {
            for t in 0..4 {
                let store = Arc::clone(store);
                tasks.push(tokio::spawn(async move {
                    for i in 0..25 {
                        store.append_audit(entry(&format!("run_{s}_{t}"), i)).await.unwrap();
                        store.append_event(&event(&format!("run_{s}_{t}"), i + 1)).await.unwrap();
                    }
                }));
            }
        }
        for t in tasks {
            t.await.unwrap();
        }
        for store in &stores {
            store.flush().await.unwrap();
            assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 200 });
        }
        assert_eq!(stores[0].events("run_1_3", 0).await.unwrap().len(), 25, "sees the other store's events");
    }
}

both! {
    /// Two stores (two processes, or two nodes on PostgreSQL) appending 200 records each at the
    /// same time build one chain of 400 records, each `seq` taken once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn two_stores_appending_at_once_never_fork_the_chain(db: Db) {
        let (a, b) = tokio::join!(db.open(), db.open());
        let mut tasks = Vec::new();
        for (s, store) in [a, b].into_iter().enumerate() {
            tasks.push(tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in 0..200 {
                    let e = entry(&format!("run_{s}"), i);
                    if i % 10 == 9 {
                        store.queue_audit(e).await.unwrap();
                    } else {
                        seqs.push(store.append_audit(e).await.unwrap().seq);
                    }
                }
                store.flush().await.unwrap();
                (store, seqs)
            }));
        }
        let mut returned = Vec::new();
        let mut stores = Vec::new();
        for t in tasks {
            let (store, seqs) = t.await.unwrap();
            assert!(seqs.windows(2).all(|w| w[0] < w[1]), "one store's appends are ordered");
            returned.extend(seqs);
            stores.push(store);
        }
        let records = stores[0].audit_records(None).await.unwrap();
        let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, (1..=400).collect::<Vec<_>>(), "no gap and no duplicate seq");
        returned.sort_unstable();
        returned.dedup();
        assert_eq!(returned.len(), 360, "every waited-for append got a seq of its own");
        for store in &stores {
            assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 400 });
        }
        for s in 0..2 {
            let calls: Vec<String> = stores[1]
                .audit_records(Some(&format!("run_{s}")))
                .await
                .unwrap()
                .into_iter()
                .map(|r| r.entry.call_id)
                .collect();
            let expected: Vec<String> = (0..200).map(|i| format!("call_{i}")).collect();
            assert_eq!(calls, expected, "each store's records keep their order in the chain");
        }
    }
}

both! {
    /// Throughput of `append_audit` with `Durability::Full`: one task after another, then 16
    /// concurrent tasks sharing commits. Run with `--ignored --nocapture`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "a throughput figure, not a check: run with --ignored --nocapture"]
    async fn audit_throughput(db: Db) {
        for durability in [Durability::Full, Durability::Relaxed] {
            // The second round extends the first round's chain.
            let store = db.open_with(StoreOptions { durability, ..Default::default() }).await;
            let n = 300u64;
            let start = Instant::now();
            chain_of(store.as_ref(), n).await;
            let single = n as f64 / start.elapsed().as_secs_f64();

            let tasks = 16u64;
            let per_task = 200u64;
            let start = Instant::now();
            let mut handles = Vec::new();
            for t in 0..tasks {
                let store = Arc::clone(&store);
                handles.push(tokio::spawn(async move {
                    for i in 0..per_task {
                        store.append_audit(entry(&format!("run_{t}"), i)).await.unwrap();
                    }
                }));
            }
            for h in handles {
                h.await.unwrap();
            }
            let concurrent = (tasks * per_task) as f64 / start.elapsed().as_secs_f64();
            let backend = if db.is_postgres() { "postgres" } else { "sqlite" };
            println!(
                "{backend} {durability:?}: single {single:.0} records/s, {tasks} concurrent tasks {concurrent:.0} records/s"
            );
            assert!(store.verify_audit().await.unwrap().is_valid());
        }
    }
}

both! {
    #[tokio::test]
    async fn a_keyed_chain_goes_on_from_an_unkeyed_one_and_refuses_a_forged_unkeyed_record(db: Db) {
        // Two records written before the chain had a key.
        let old = db.open().await;
        chain_of(old.as_ref(), 2).await;
        old.flush().await.unwrap();
        drop(old);
        let key = steward_store::AuditKey::generate();
        let keyed = db.open_with(StoreOptions { audit_key: Some(key.clone()), ..StoreOptions::default() }).await;
        for i in 3..=4 {
            keyed.append_audit(entry("run_a", i)).await.unwrap();
        }
        keyed.flush().await.unwrap();
        assert_eq!(keyed.verify_audit().await.unwrap(), AuditVerification::Valid { records: 4 });
        let records = keyed.audit_records(None).await.unwrap();
        assert_eq!(steward_store::audit_hash(&records[1].prev_hash, &records[1]), records[1].hash);
        assert_eq!(steward_store::audit_hmac(&key, &records[3].prev_hash, &records[3]), records[3].hash);
        assert_ne!(steward_store::audit_hash(&records[3].prev_hash, &records[3]), records[3].hash);
        // Without the key the keyed records do not verify; with another key neither.
        assert_eq!(broken(steward_store::verify_chain(&records)).0, 3);
        let other = steward_store::AuditKey::generate();
        assert_eq!(broken(steward_store::verify_chain_keyed(&records, Some(&other))).0, 3);

        // Someone with write access to the database appends a record hashed the unkeyed way.
        let last = records.last().unwrap();
        let mut forged = steward_protocol::AuditRecord {
            seq: 5,
            id: "aud_forged".into(),
            prev_hash: last.hash.clone(),
            hash: String::new(),
            ..last.clone()
        };
        forged.hash = steward_store::audit_hash(&forged.prev_hash, &forged);
        db.tamper(&format!(
            "INSERT INTO audit (seq, id, at, agent, run_id, call_id, action, input, policy, risk, outcome, latency_ms, \
             sandbox, approval_id, rollback_token, detail, prev_hash, hash) SELECT 5, 'aud_forged', at, agent, run_id, \
             call_id, action, input, policy, risk, outcome, latency_ms, sandbox, approval_id, rollback_token, detail, \
             hash, '{}' FROM audit WHERE seq = 4",
            forged.hash
        ))
        .await;
        let (seq, id, problem) = broken(keyed.verify_audit().await.unwrap());
        assert_eq!((seq, id.as_str(), problem.as_str()), (5, "aud_forged", "unkeyed after keyed"));
    }
}
