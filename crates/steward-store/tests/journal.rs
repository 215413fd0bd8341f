//! The hub's journal in every store backend: one row per approval, compare-and-set steps,
//! holding in-flight rows at restart, listing by state, and what survives reopening.

use crate::common;

use std::sync::Arc;

use chrono::{Duration, Utc};
use common::Db;
use steward_store::{JournalRecord, JournalState, JournalStore, SqliteStore, StoreOptions, new_id};

async fn journal(db: &Db) -> Arc<dyn JournalStore> {
    match db {
        Db::Sqlite { .. } => Arc::new(SqliteStore::open(&db.path(), StoreOptions::default()).await.unwrap()),
        Db::Postgres { .. } => Arc::new(db.open_pg("node-a", StoreOptions::default()).await),
    }
}

fn row(hub: &str, approval: &str, at: chrono::DateTime<Utc>) -> JournalRecord {
    JournalRecord {
        attempt_id: new_id("att_"),
        hub_id: hub.into(),
        approval_id: approval.into(),
        request_id: "wrq_0000000000000001".into(),
        revision: 2,
        epoch: u64::MAX >> 1,
        repository: "demo".into(),
        pr_number: 7,
        head_sha: "a".repeat(40),
        scope: "read".into(),
        expires_at: at + Duration::hours(1),
        state: JournalState::Intent,
        held_from: None,
        authority: None,
        authority_id: None,
        run_id: None,
        outcome: None,
        evidence: None,
        note: None,
        resolution: None,
        created_at: at,
        updated_at: at,
    }
}

both! {
    #[tokio::test]
    async fn one_row_per_approval_and_steps_are_compare_and_set(db: Db) {
        let j = journal(&db).await;
        let now = Utc::now();
        let first = row("hub:a", "wap_1", now);
        assert!(j.journal_insert(&first).await.unwrap());
        // The same approval again (another attempt id, another hub): refused.
        assert!(!j.journal_insert(&row("hub:b", "wap_1", now)).await.unwrap());
        let mut claimed = first.clone();
        claimed.state = JournalState::Claimed;
        claimed.authority = Some("issued".into());
        claimed.authority_id = Some("ath_1".into());
        assert!(j.journal_update(&claimed, JournalState::Intent).await.unwrap());
        // A second writer expecting `intent` loses.
        assert!(!j.journal_update(&claimed, JournalState::Intent).await.unwrap());
        let got = j.journal_get(&first.attempt_id).await.unwrap().unwrap();
        assert_eq!(got.state, JournalState::Claimed);
        assert_eq!(got.authority_id.as_deref(), Some("ath_1"));
        assert_eq!(got.epoch, u64::MAX >> 1);
        assert_eq!(j.journal_by_approval("wap_1").await.unwrap().unwrap().attempt_id, first.attempt_id);
        assert!(j.journal_by_approval("wap_2").await.unwrap().is_none());
    }
}

both! {
    #[tokio::test]
    async fn restart_holds_only_in_flight_rows_of_its_hub(db: Db) {
        let j = journal(&db).await;
        let now = Utc::now();
        let mut ids = Vec::new();
        for (i, state) in JournalState::ALL.into_iter().enumerate() {
            let mut r = row("hub:a", &format!("wap_{i}"), now + Duration::seconds(i as i64));
            r.state = state;
            assert!(j.journal_insert(&r).await.unwrap());
            ids.push((state, r.attempt_id));
        }
        let other = row("hub:b", "wap_other", now);
        assert!(j.journal_insert(&other).await.unwrap());
        let held = j.journal_hold("hub:a", &JournalState::IN_FLIGHT, now).await.unwrap();
        let expected: Vec<String> =
            ids.iter().filter(|(s, _)| JournalState::IN_FLIGHT.contains(s)).map(|(_, id)| id.clone()).collect();
        assert_eq!(held, expected);
        for (state, id) in &ids {
            let r = j.journal_get(id).await.unwrap().unwrap();
            if JournalState::IN_FLIGHT.contains(state) {
                assert_eq!((r.state, r.held_from, r.note.as_deref()), (JournalState::Held, Some(*state), Some("restart")));
            } else {
                assert_eq!(r.state, *state);
            }
        }
        assert_eq!(j.journal_get(&other.attempt_id).await.unwrap().unwrap().state, JournalState::Intent);
        let listed = j.journal_list(&[JournalState::Held]).await.unwrap();
        assert_eq!(listed.len(), JournalState::IN_FLIGHT.len() + 1);
        assert_eq!(j.journal_list(&[]).await.unwrap().len(), JournalState::ALL.len() + 1);
        // Reopened, everything is still there.
        drop(j);
        let j = journal(&db).await;
        assert_eq!(j.journal_list(&[JournalState::Held]).await.unwrap().len(), JournalState::IN_FLIGHT.len() + 1);
    }
}
