//! MCP bearer tokens in every store backend: insert, list per owner, find by hash, revoke only
//! by the owner, last use, and what survives reopening.

use crate::common;

use chrono::{Duration, Utc};
use common::Db;
use steward_protocol::Timestamp;
use steward_store::{McpTokenRecord, StoreError, new_id};

fn token(owner_id: &str, name: &str, hash: &str, created_at: Timestamp) -> McpTokenRecord {
    McpTokenRecord {
        id: new_id("mtk_"),
        owner_id: owner_id.into(),
        name: name.into(),
        scopes: vec!["read".into(), "submit".into()],
        token_hash: hash.into(),
        created_at,
        last_used_at: None,
        revoked_at: None,
    }
}

both! {
    #[tokio::test]
    async fn tokens_are_listed_per_owner_oldest_first_and_found_by_hash(db: Db) {
        let store = db.open().await;
        let now = Utc::now();
        let later = token("local:alice", "laptop", &"b".repeat(64), now + Duration::seconds(1));
        let first = token("local:alice", "", &"a".repeat(64), now);
        let mut bob = token("web:0123456789abcdef", "phone é", &"c".repeat(64), now);
        bob.scopes = vec!["read".into()];
        for t in [&later, &first, &bob] {
            store.insert_mcp_token(t).await.unwrap();
        }
        assert_eq!(store.mcp_tokens("local:alice").await.unwrap(), vec![first.clone(), later.clone()]);
        assert_eq!(store.mcp_tokens("web:0123456789abcdef").await.unwrap(), vec![bob.clone()]);
        assert!(store.mcp_tokens("local:carol").await.unwrap().is_empty());
        assert_eq!(store.mcp_token_by_hash(&"c".repeat(64)).await.unwrap(), Some(bob.clone()));
        assert_eq!(store.mcp_token_by_hash(&"d".repeat(64)).await.unwrap(), None);
        assert_eq!(store.mcp_token_by_hash("").await.unwrap(), None);
    }
}

both! {
    #[tokio::test]
    async fn duplicate_ids_or_hashes_and_bad_scopes_are_refused(db: Db) {
        let store = db.open().await;
        let now = Utc::now();
        let t = token("local:alice", "x", &"a".repeat(64), now);
        store.insert_mcp_token(&t).await.unwrap();
        let same_hash = token("local:bob", "y", &"a".repeat(64), now);
        assert!(store.insert_mcp_token(&same_hash).await.is_err(), "the hash is unique");
        let mut same_id = token("local:alice", "z", &"e".repeat(64), now);
        same_id.id = t.id.clone();
        assert!(store.insert_mcp_token(&same_id).await.is_err(), "the id is unique");
        for scopes in [vec!["read,submit".to_string()], vec![String::new()]] {
            let mut bad = token("local:alice", "bad", &"f".repeat(64), now);
            bad.scopes = scopes;
            let err = store.insert_mcp_token(&bad).await.unwrap_err();
            assert!(matches!(err, StoreError::Invalid { .. }), "{err}");
        }
        assert_eq!(store.mcp_tokens("local:alice").await.unwrap(), vec![t]);
        // No scope at all is stored and read back as none.
        let mut none = token("local:dave", "none", &"9".repeat(64), now);
        none.scopes = Vec::new();
        store.insert_mcp_token(&none).await.unwrap();
        assert_eq!(store.mcp_tokens("local:dave").await.unwrap(), vec![none]);
    }
}

both! {
    #[tokio::test]
    async fn only_the_owner_revokes_once_and_use_is_recorded(db: Db) {
        let store = db.open().await;
        let now = Utc::now();
        let t = token("local:alice", "ci", &"a".repeat(64), now);
        store.insert_mcp_token(&t).await.unwrap();

        assert!(store.touch_mcp_token(&t.id, now + Duration::seconds(5)).await.unwrap());
        assert!(!store.touch_mcp_token("mtk_missing", now).await.unwrap());
        let found = store.mcp_token_by_hash(&t.token_hash).await.unwrap().unwrap();
        assert_eq!(found.last_used_at, Some(now + Duration::seconds(5)));

        assert!(!store.revoke_mcp_token("local:mallory", &t.id, now).await.unwrap(), "not mallory's token");
        assert!(store.mcp_token_by_hash(&t.token_hash).await.unwrap().unwrap().revoked_at.is_none());
        assert!(!store.revoke_mcp_token("local:alice", "mtk_missing", now).await.unwrap());
        let at = now + Duration::seconds(9);
        assert!(store.revoke_mcp_token("local:alice", &t.id, at).await.unwrap());
        assert!(!store.revoke_mcp_token("local:alice", &t.id, at + Duration::seconds(1)).await.unwrap(), "once");
        let revoked = store.mcp_token_by_hash(&t.token_hash).await.unwrap().unwrap();
        assert_eq!(revoked.revoked_at, Some(at), "the first revocation time stays");
        assert_eq!(store.mcp_tokens("local:alice").await.unwrap(), vec![revoked.clone()], "revoked tokens are listed");
        // A revoked token's use can still be recorded (the server refuses it before that).
        assert!(store.touch_mcp_token(&t.id, at).await.unwrap());
    }
}

both! {
    #[tokio::test]
    async fn tokens_survive_reopening_and_debug_leaves_the_hash_out(db: Db) {
        let now = Utc::now();
        let t = token("local:alice", "laptop", "0123456789abcdef".repeat(4).as_str(), now);
        {
            let store = db.open().await;
            store.insert_mcp_token(&t).await.unwrap();
            assert!(store.revoke_mcp_token("local:alice", &t.id, now).await.unwrap());
            store.flush().await.unwrap();
        }
        let store = db.open().await;
        let back = store.mcp_token_by_hash(&t.token_hash).await.unwrap().unwrap();
        assert_eq!(back.revoked_at, Some(now));
        assert_eq!(back.scopes, vec!["read".to_string(), "submit".to_string()]);
        let shown = format!("{back:?}");
        assert!(!shown.contains(&t.token_hash) && shown.contains("[redacted]"), "{shown}");
    }
}
