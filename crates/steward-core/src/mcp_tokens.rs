//! Bearer tokens of `/mcp` and of the work ledger (SPEC M2): made by an owner (`steward mcp
//! token create` for the local owner, the Tokens page of `steward serve` for a browser's owner),
//! shown once, scoped, revocable.
//!
//! A token is `stw_` followed by 64 lowercase hex characters (32 random bytes from the thread
//! CSPRNG). The store keeps only the lowercase hex SHA-256 of the whole token string
//! ([`hash_token`]), and a request is matched by that hash. A token's [`Scope`]s say which MCP
//! tools it may call; its owner is whose runs it sees and starts. Revoking sets `revoked_at`:
//! every later request with it is refused. Secrets never reach logs: [`Secret`]'s `Debug`
//! prints `[redacted]`, and messages name tokens by id only.

use crate::clock::Clock;
use sha2::{Digest, Sha256};
use steward_mcp::mcp_server::{Caller, Scope};
use steward_store::{McpTokenRecord, Store, StoreError, new_id};

/// What every token starts with.
pub const TOKEN_PREFIX: &str = "stw_";
/// Longest token name, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Most tokens one owner may have that are not revoked.
pub const MAX_ACTIVE_TOKENS: usize = 50;
/// A token's last use is recorded at most this often (seconds), to spare the store a write
/// per request.
const TOUCH_EVERY_SECONDS: i64 = 60;

/// A token's secret: shown once to its owner, never stored or logged.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The token itself (`stw_…`), to show its owner once.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// A token just made: its stored record and its secret.
#[derive(Debug, Clone)]
pub struct NewToken {
    /// What the store keeps.
    pub record: McpTokenRecord,
    /// The token to give the client; it cannot be shown again.
    pub secret: Secret,
}

/// Why a token operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// A bad name or scope list, or too many tokens (the message says which).
    #[error("{0}")]
    Invalid(String),
    /// The owner has no token with this id.
    #[error("{0}")]
    NotFound(String),
    /// The store failed.
    #[error("storage: {0}")]
    Storage(#[from] StoreError),
}

/// Why a request's token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthError {
    /// No `Authorization: Bearer …` header.
    Missing,
    /// Not a token of this server.
    Invalid,
    /// Revoked by its owner.
    Revoked,
    /// The store could not be read.
    Storage,
}

/// The lowercase hex SHA-256 of `token` (the whole string, prefix included).
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// True when `token` has the shape of a token (`stw_` and 64 lowercase hex characters).
pub fn looks_like_token(token: &str) -> bool {
    token
        .strip_prefix(TOKEN_PREFIX)
        .is_some_and(|rest| rest.len() == 64 && rest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// `active` or `revoked`.
pub fn token_state(token: &McpTokenRecord) -> &'static str {
    if token.revoked_at.is_some() { "revoked" } else { "active" }
}

/// Checks a token name: trimmed, at most [`MAX_NAME_CHARS`] characters, no control characters.
pub fn check_name(name: &str) -> Result<String, TokenError> {
    let name = name.trim();
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(TokenError::Invalid(format!("the name is longer than {MAX_NAME_CHARS} characters")));
    }
    if name.chars().any(char::is_control) {
        return Err(TokenError::Invalid("the name contains control characters".into()));
    }
    Ok(name.to_string())
}

/// Makes a token for `owner_id` with `scopes` (at least one), stores its hash and appends an
/// audit record (owner, token id, scopes; never the secret or its hash). Refused when the name
/// is bad or the owner already has [`MAX_ACTIVE_TOKENS`] active tokens. `clock` dates it.
pub async fn create(
    store: &dyn Store,
    clock: &dyn Clock,
    owner_id: &str,
    name: &str,
    scopes: &[Scope],
) -> Result<NewToken, TokenError> {
    let name = check_name(name)?;
    if scopes.is_empty() {
        return Err(TokenError::Invalid("choose at least one scope (read, submit, hub)".into()));
    }
    let mut scopes = scopes.to_vec();
    scopes.sort();
    scopes.dedup();
    let active = store.mcp_tokens(owner_id).await?.iter().filter(|t| t.revoked_at.is_none()).count();
    if active >= MAX_ACTIVE_TOKENS {
        return Err(TokenError::Invalid(format!(
            "you already have {active} active tokens (at most {MAX_ACTIVE_TOKENS}); revoke one first"
        )));
    }
    let secret = Secret(format!("{TOKEN_PREFIX}{}", hex::encode(rand::random::<[u8; 32]>())));
    let record = McpTokenRecord {
        id: new_id("mtk_"),
        owner_id: owner_id.to_string(),
        name,
        scopes: scopes.iter().map(|s| s.as_str().to_string()).collect(),
        token_hash: hash_token(secret.expose()),
        created_at: clock.now(),
        last_used_at: None,
        revoked_at: None,
    };
    store.insert_mcp_token(&record).await?;
    audit(store, "mcp_token_create", &record).await?;
    Ok(NewToken { record, secret })
}

/// Appends the audit record of a token made or revoked by its owner: who, the token's id and
/// scopes, and the action. Never the secret or its hash.
async fn audit(store: &dyn Store, action: &str, token: &McpTokenRecord) -> Result<(), StoreError> {
    let done = if action == "mcp_token_create" { "created" } else { "revoked" };
    store
        .append_audit(steward_protocol::AuditEntry::owner_action(
            &token.owner_id,
            action,
            serde_json::json!({ "token_id": token.id, "scopes": token.scopes }),
            format!("{} {done} MCP token {} (scopes {})", token.owner_id, token.id, token.scopes.join(",")),
        ))
        .await
        .map(|_| ())
}

/// Revokes the owner's token `id`: `Ok(true)` when it was revoked now (an audit record says
/// so), `Ok(false)` when it already was; [`TokenError::NotFound`] when the owner has no such
/// token. `clock` dates the revocation.
pub async fn revoke(store: &dyn Store, clock: &dyn Clock, owner_id: &str, id: &str) -> Result<bool, TokenError> {
    let revoked = store.revoke_mcp_token(owner_id, id, clock.now()).await?;
    match store.mcp_tokens(owner_id).await?.into_iter().find(|t| t.id == id) {
        Some(token) if revoked => {
            audit(store, "mcp_token_revoke", &token).await?;
            Ok(true)
        }
        Some(_) => Ok(false),
        None => Err(TokenError::NotFound(format!("you have no MCP token `{id}`"))),
    }
}

/// The caller a presented token stands for: its owner and its known scopes (unknown scope
/// names are ignored). Records the token's use (at most once a minute, by `clock`).
pub async fn authenticate(store: &dyn Store, clock: &dyn Clock, presented: &str) -> Result<Caller, AuthError> {
    authenticate_with_id(store, clock, presented).await.map(|(_, caller)| caller)
}

/// Like [`authenticate`], also answering the token's id (`mcp_…`; never its secret), which the
/// work ledger records with what the token claims.
pub async fn authenticate_with_id(
    store: &dyn Store,
    clock: &dyn Clock,
    presented: &str,
) -> Result<(String, Caller), AuthError> {
    if !looks_like_token(presented) {
        return Err(AuthError::Invalid);
    }
    let token = match store.mcp_token_by_hash(&hash_token(presented)).await {
        Ok(Some(token)) => token,
        Ok(None) => return Err(AuthError::Invalid),
        Err(e) => {
            tracing::warn!("mcp: looking up a token failed: {e}");
            return Err(AuthError::Storage);
        }
    };
    if token.revoked_at.is_some() {
        return Err(AuthError::Revoked);
    }
    let now = clock.now();
    if token.last_used_at.is_none_or(|at| (now - at).num_seconds() >= TOUCH_EVERY_SECONDS)
        && let Err(e) = store.touch_mcp_token(&token.id, now).await
    {
        tracing::warn!("mcp: recording the use of token {} failed: {e}", token.id);
    }
    let scopes = token.scopes.iter().filter_map(|s| Scope::parse(s)).collect();
    Ok((token.id, Caller { owner_id: token.owner_id, scopes }))
}

/// Where a token with `scopes` is sent, as `Authorization: Bearer <token>`, to the server
/// at `base` (`http://HOST:PORT`, no trailing slash): `base/mcp` for `read` and `submit`,
/// `base/api/ledger/…` for `hub` (what `steward hub --token-file` calls). One sentence,
/// without a final stop, for the CLI and the Tokens page.
pub fn where_sent(scopes: &[String], base: &str) -> String {
    let mcp = scopes.iter().any(|s| s == "read" || s == "submit");
    let hub = scopes.iter().any(|s| s == "hub");
    let ledger = format!("{base}/api/ledger/… (the work ledger; a hub uses it with `steward hub --token-file FILE`)");
    let target = match (mcp, hub) {
        (true, true) => format!("{base}/mcp (its read/submit tools) and to {ledger}"),
        (false, true) => ledger,
        _ => format!("{base}/mcp"),
    };
    format!("clients send it as `Authorization: Bearer <token>` to {target}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_a_fixed_shape_and_secrets_are_not_debug_printed() {
        assert!(looks_like_token(&format!("stw_{}", "0a".repeat(32))));
        assert!(!looks_like_token(&format!("stw_{}", "0A".repeat(32))));
        assert!(!looks_like_token(&format!("stw_{}", "0a".repeat(31))));
        assert!(!looks_like_token(&format!("xyz_{}", "0a".repeat(32))));
        assert_eq!(hash_token("stw_x").len(), 64);
        assert_ne!(hash_token("stw_x"), hash_token("stw_y"));
        let secret = Secret("stw_abc".into());
        assert_eq!(format!("{secret:?}"), "Secret([redacted])");
    }

    #[test]
    fn the_hint_names_where_each_scope_is_used() {
        let scopes = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let base = "http://h:1";
        let mcp = where_sent(&scopes(&["read", "submit"]), base);
        assert!(mcp.ends_with("to http://h:1/mcp"), "{mcp}");
        let hub = where_sent(&scopes(&["hub"]), base);
        assert!(hub.contains("http://h:1/api/ledger/") && hub.contains("steward hub --token-file"), "{hub}");
        assert!(!hub.contains("/mcp"), "a hub token is not for /mcp: {hub}");
        let both = where_sent(&scopes(&["read", "hub"]), base);
        assert!(both.contains("http://h:1/mcp") && both.contains("http://h:1/api/ledger/"), "{both}");
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(check_name("  laptop ").unwrap(), "laptop");
        assert!(check_name(&"x".repeat(MAX_NAME_CHARS + 1)).is_err());
        assert!(check_name("a\nb").is_err());
    }
}
