//! `steward mcp token create|list|revoke`: bearer tokens of `/mcp` in `steward serve`, owned
//! by the local user (`local:<user>`), the same owner the login link of `steward serve` signs
//! in as. The token is printed once at creation; only its hash is stored.

use anyhow::Result;
use serde_json::json;
use steward_core::{mcp_tokens as tokens, mcp_tokens::TokenError};
use steward_mcp::mcp_server::Scope;
use steward_store::{McpTokenRecord, StoreOptions};

use crate::commands::usage_error;
use crate::home::{Home, local_owner};

fn token_error(e: TokenError) -> anyhow::Error {
    match e {
        TokenError::Invalid(m) | TokenError::NotFound(m) => usage_error(&m),
        TokenError::Storage(e) => anyhow::Error::new(e),
    }
}

/// `steward mcp token create [--name NAME] [--scope read,submit]`: prints the token on stdout
/// (alone on its line) and, on stderr, that it will not be shown again.
pub async fn create(name: Option<&str>, scope: &str) -> Result<u8> {
    let scopes = Scope::parse_list(scope).map_err(|e| usage_error(&format!("--scope: {e}")))?;
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let owner = local_owner();
    let new = tokens::create(store.as_ref(), &steward_core::SystemClock, &owner, name.unwrap_or(""), &scopes)
        .await
        .map_err(token_error)?;
    store.flush().await?;
    eprintln!(
        "steward: created MCP token {} for {owner}, scopes {}{}",
        new.record.id,
        new.record.scopes.join(","),
        if new.record.name.is_empty() { String::new() } else { format!(", name {:?}", new.record.name) }
    );
    println!("{}", new.secret.expose());
    eprintln!("steward: this token will not be shown again: copy it now (Steward keeps only its hash).");
    eprintln!(
        "steward: {} of `steward serve`; revoke it with `steward mcp token revoke {}`",
        tokens::where_sent(&new.record.scopes, "http://HOST:PORT"),
        new.record.id
    );
    Ok(0)
}

fn when(at: &Option<steward_protocol::Timestamp>) -> String {
    at.map(|t| t.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M").to_string()).unwrap_or_else(|| "never".into())
}

fn json_line(t: &McpTokenRecord) -> serde_json::Value {
    json!({
        "id": t.id,
        "owner_id": t.owner_id,
        "name": t.name,
        "scopes": t.scopes,
        "state": tokens::token_state(t),
        "created_at": t.created_at.to_rfc3339(),
        "last_used_at": t.last_used_at.map(|at| at.to_rfc3339()),
        "revoked_at": t.revoked_at.map(|at| at.to_rfc3339()),
    })
}

/// `steward mcp token list [--json]`: the local owner's tokens, oldest first (never a secret).
pub async fn list(json: bool) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let owner = local_owner();
    let all = store.mcp_tokens(&owner).await?;
    for t in &all {
        if json {
            println!("{}", json_line(t));
            continue;
        }
        println!(
            "{}  {:<7}  {:<11}  created {}  last used {}  {}",
            t.id,
            tokens::token_state(t),
            t.scopes.join(","),
            when(&Some(t.created_at)),
            when(&t.last_used_at),
            t.name
        );
    }
    if all.is_empty() && !json {
        println!("no MCP tokens of {owner}; make one with `steward mcp token create`");
    }
    Ok(0)
}

/// `steward mcp token revoke ID`: later requests with the token are refused (401).
pub async fn revoke(id: &str) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let owner = local_owner();
    let revoked =
        tokens::revoke(store.as_ref(), &steward_core::SystemClock, &owner, id).await.map_err(|e| match e {
            TokenError::NotFound(_) => {
                usage_error(&format!("no MCP token `{id}` of {owner}; `steward mcp token list` shows them"))
            }
            other => token_error(other),
        })?;
    store.flush().await?;
    if revoked {
        println!("revoked {id}: requests with it are refused from now on");
    } else {
        println!("{id} was already revoked");
    }
    Ok(0)
}
