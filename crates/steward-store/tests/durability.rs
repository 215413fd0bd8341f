//! When SQLite writes reach the disk, what the audit anchor names meanwhile, and that the
//! chain's one-pass verification agrees with the full one.

use std::path::Path;
use steward_store::AuditStore;
use steward_store::RunStore;

use serde_json::json;
use steward_protocol::{AuditEntry, AuditOutcome};
use steward_store::{AuditVerification, OnDisk, SqliteStore, Store, StoreOptions};

use crate::common::records::run;

fn entry(n: u64) -> AuditEntry {
    AuditEntry {
        agent: "steward".into(),
        run_id: "run_a".into(),
        call_id: format!("call_{n}"),
        action: "read".into(),
        input: json!({"path": "src/main.rs", "n": n, "nested": {"b": 1, "a": [true, null, 1.5, "é\"\\n"]}}),
        policy: "default:low".into(),
        risk: 0.25,
        outcome: AuditOutcome::Completed,
        latency_ms: n,
        sandbox: String::new(),
        approval_id: String::new(),
        rollback_token: String::new(),
        detail: "line\nbreak \u{1}".into(),
    }
}

fn anchored_seq(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

async fn tamper(db: &Path, sql: &str) {
    use sqlx::{ConnectOptions, Executor};
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new().filename(db).connect().await.unwrap();
    conn.execute(sqlx::AssertSqlSafe(sql)).await.unwrap();
}

/// The chain's first record makes the anchor before its append returns even when the record
/// need not be on disk by then (a queued one, a read's `approved` one): no later append makes
/// an anchor, so a process killed before its next forced commit would leave the chain without
/// one, which verifies as tampered with.
#[tokio::test]
async fn the_chains_first_record_makes_the_anchor_before_its_append_returns() {
    for first in ["queued", "read"] {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
        let anchor = dir.path().join(steward_store::STATE_ANCHOR_FILE);
        if first == "queued" {
            store.queue_audit(entry(1)).await.unwrap();
            store.events("run_a", 0).await.unwrap();
        } else {
            store.insert_run(&run("run_a", chrono::Utc::now())).await.unwrap();
            let approved = AuditEntry { outcome: AuditOutcome::Approved, ..entry(1) };
            store.append_audit_if_running(approved, OnDisk::Soon).await.unwrap().expect("running");
        }
        assert_eq!(anchored_seq(&anchor), 1, "{first}: the anchor is made with the first record");
    }
}

/// A queued record is committed without a disk sync of its own: the anchor does not name it
/// until a durable write or a flush has forced it to disk, and then it does.
#[tokio::test]
async fn the_anchor_names_queued_records_only_once_they_are_forced_to_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
    let anchor = dir.path().join(steward_store::STATE_ANCHOR_FILE);
    assert_eq!(store.append_audit(entry(1)).await.unwrap().seq, 1);
    assert_eq!(anchored_seq(&anchor), 1, "a durable record moves the anchor when it returns");
    store.queue_audit(entry(2)).await.unwrap();
    store.queue_audit(entry(3)).await.unwrap();
    // A read of events waits until they are committed, not until they are on disk.
    store.events("run_a", 0).await.unwrap();
    assert_eq!(store.audit_records(None).await.unwrap().len(), 3);
    assert_eq!(anchored_seq(&anchor), 1, "the anchor never names a record not yet forced to disk");
    store.flush().await.unwrap();
    assert_eq!(anchored_seq(&anchor), 3);
    // The next durable record takes the queued ones before it along.
    store.queue_audit(entry(4)).await.unwrap();
    store.events("run_a", 0).await.unwrap();
    assert_eq!(store.append_audit(entry(5)).await.unwrap().seq, 5);
    assert_eq!(anchored_seq(&anchor), 5);
    assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 5 });
}

/// A cut end is caught after queued records were forced by a flush, as after durable ones.
#[tokio::test]
async fn a_cut_end_of_queued_records_is_caught_after_the_flush() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
    for n in 1..=4 {
        store.queue_audit(entry(n)).await.unwrap();
    }
    store.flush().await.unwrap();
    tamper(&dir.path().join(steward_store::STATE_DB_FILE), "DELETE FROM audit WHERE seq = 4").await;
    match store.verify_audit().await.unwrap() {
        AuditVerification::Broken { seq, problem, .. } => {
            assert_eq!(seq, 4);
            assert!(problem.starts_with("removed: the chain ends at record 3"), "{problem}");
        }
        valid => panic!("a cut end went unnoticed: {valid:?}"),
    }
}

/// The one-pass verification and the full one agree: a record whose `input` is stored in
/// another key order (same value) or whose time is spelt otherwise is judged by decoding, as
/// before; a changed detail is reported by the full verification's words.
#[tokio::test]
async fn stored_forms_other_than_the_written_ones_are_judged_by_the_full_verification() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
    for n in 1..=3 {
        store.append_audit(entry(n)).await.unwrap();
    }
    let db = dir.path().join(steward_store::STATE_DB_FILE);
    let stored: (String,) = {
        use sqlx::{ConnectOptions, Row};
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new().filename(&db).connect().await.unwrap();
        let row = sqlx::query("SELECT input FROM audit WHERE seq = 2").fetch_one(&mut conn).await.unwrap();
        (row.get::<String, _>(0),)
    };
    assert!(stored.0.starts_with("{\"n\":2,\"nested\":{\"a\""), "written in canonical form: {}", stored.0);
    tamper(&db, "UPDATE audit SET input = '{\"path\": \"src/main.rs\", \"nested\": {\"b\": 1, \"a\": [true, null, 1.5, \"é\\\"\\\\n\"]}, \"n\": 2}' WHERE seq = 2").await;
    assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 3 });
    tamper(&db, "UPDATE audit SET detail = 'edited' WHERE seq = 3").await;
    match store.verify_audit().await.unwrap() {
        AuditVerification::Broken { seq, problem, .. } => {
            assert_eq!(seq, 3);
            assert_eq!(problem, "changed");
        }
        valid => panic!("a changed record went unnoticed: {valid:?}"),
    }
}

fn wal_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join(format!("{}-wal", steward_store::STATE_DB_FILE))).map(|m| m.len()).unwrap_or(0)
}

/// `close` leaves no write-ahead log for the next process to read back, and the store stays
/// usable after it.
#[tokio::test]
async fn close_moves_the_log_into_the_database_and_empties_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
    for n in 1..=20 {
        store.queue_audit(entry(n)).await.unwrap();
    }
    store.flush().await.unwrap();
    assert!(wal_len(dir.path()) > 0, "the appends went to the log");
    store.close().await.unwrap();
    // The log starts again with one page: a 32-byte header and one 24-byte frame header.
    assert_eq!(wal_len(dir.path()), 32 + 24 + 4096, "the log was emptied down to one page");
    assert_eq!(store.append_audit(entry(21)).await.unwrap().seq, 21);
    drop(store);
    let reopened = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
    assert_eq!(reopened.verify_audit().await.unwrap(), AuditVerification::Valid { records: 21 });
}

/// A reader of an older snapshot in another connection does not hold `close` up: it
/// checkpoints what it can, keeps the log, and the reader still sees its snapshot.
#[tokio::test]
async fn close_does_not_wait_for_another_connections_reader() {
    use sqlx::{ConnectOptions, Connection, Executor, Row};
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
    store.append_audit(entry(1)).await.unwrap();
    let db = dir.path().join(steward_store::STATE_DB_FILE);
    let mut reader = sqlx::sqlite::SqliteConnectOptions::new().filename(&db).connect().await.unwrap();
    let mut snapshot = reader.begin().await.unwrap();
    let before: i64 = snapshot.fetch_one("SELECT COUNT(*) FROM audit").await.unwrap().get(0);
    store.append_audit(entry(2)).await.unwrap();
    // The store's busy timeout is 10 s: a close that waited for the reader would take that long.
    tokio::time::timeout(std::time::Duration::from_secs(5), store.close())
        .await
        .expect("close waited for the reader")
        .unwrap();
    assert!(wal_len(dir.path()) > 0, "the log a reader still needs is kept");
    let still: i64 = snapshot.fetch_one("SELECT COUNT(*) FROM audit").await.unwrap().get(0);
    assert_eq!(before, still);
    snapshot.rollback().await.unwrap();
    assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 2 });
}

/// The writer keeps the statements of its batches (the chain head's read, the run's status,
/// the inserts) from one batch to the next, but no snapshot with them: once the writes are
/// answered, another connection checkpoints the whole log and empties it.
#[tokio::test]
async fn the_writers_kept_statements_hold_no_snapshot_between_batches() {
    use sqlx::{ConnectOptions, Row};
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
    store.insert_run(&run("run_a", chrono::Utc::now())).await.unwrap();
    for n in 1..=3 {
        store.append_audit_if_running(entry(n), OnDisk::BeforeReturn).await.unwrap().expect("running");
        store.append_audit(entry(10 + n)).await.unwrap();
    }
    let db = dir.path().join(steward_store::STATE_DB_FILE);
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new().filename(&db).connect().await.unwrap();
    let row = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").fetch_one(&mut conn).await.unwrap();
    let (busy, log, moved): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    assert_eq!((busy, log, moved), (0, 0, 0), "the whole log checkpointed and truncated");
    // The writer goes on with its kept statements after the checkpoint.
    store.append_audit_if_running(entry(4), OnDisk::BeforeReturn).await.unwrap().expect("running");
    assert_eq!(store.verify_audit().await.unwrap(), AuditVerification::Valid { records: 7 });
}

/// Queued writes, which the writer inserts on its own connection, followed by a write that is
/// not an insert (a run's update, applied statement by statement on sqlx's connection), are
/// all stored, in order: neither connection holds the write lock past its batch.
#[tokio::test]
async fn queued_writes_then_a_run_update_are_all_stored() {
    use crate::common::records::event;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
    let mut r = run("run_a", chrono::Utc::now());
    store.insert_run(&r).await.unwrap();
    for round in 1..=3 {
        for seq in 1..=40 {
            store.append_event(&event("run_a", round * 100 + seq)).await.unwrap();
        }
        r.rounds = round as u32;
        store.update_run(&r).await.unwrap();
    }
    assert_eq!(store.events("run_a", 0).await.unwrap().len(), 120);
    assert_eq!(store.get_run("run_a").await.unwrap().map(|r| r.rounds), Some(3));
    store.flush().await.unwrap();
}

/// A store opened on a database whose schema is current opens sqlx's write connection only
/// when a write first needs it (a run's update; the writer inserts on a connection of its
/// own): the writes before, through and after it are all stored.
#[tokio::test]
async fn a_reopened_store_opens_its_write_connection_when_a_write_needs_it() {
    use crate::common::records::event;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
    let mut r = run("run_a", chrono::Utc::now());
    store.insert_run(&r).await.unwrap();
    store.close().await.unwrap();
    drop(store);
    let store = SqliteStore::open_state_dir(dir.path(), StoreOptions::default()).await.unwrap();
    store.append_event(&event("run_a", 1)).await.unwrap();
    r.rounds = 2;
    store.update_run(&r).await.unwrap();
    store.append_event(&event("run_a", 2)).await.unwrap();
    assert_eq!(store.events("run_a", 0).await.unwrap().len(), 2);
    assert_eq!(store.get_run("run_a").await.unwrap().map(|r| r.rounds), Some(2));
    store.flush().await.unwrap();
}
