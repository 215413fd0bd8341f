//! Logins to HTTP MCP servers that need one: MCP authorization, which is OAuth 2.1 with the
//! discovery and registration order of the MCP specification (2025-06-18 and later, with the
//! 2025-03-26 fallbacks).
//!
//! The protocol work is the MCP SDK's (`rmcp`'s `auth` feature): protected-resource metadata
//! (RFC 9728, from the 401's `WWW-Authenticate` or the well-known paths), authorization-server
//! metadata (RFC 8414, then OpenID discovery), client registration in the specification's order
//! (a pre-registered client, a client ID metadata document, dynamic registration per RFC 7591),
//! the authorization code grant with PKCE (S256) and the resource indicator (RFC 8707), scope
//! selection, refresh, and the client credentials grant. The SDK refuses metadata whose
//! `resource` is not the server it was asked for, and addresses outside the server's own kind
//! (a public server cannot point discovery at a loopback or link-local address).
//!
//! What is Steward's:
//! - where a login is kept ([`TokenPlace`]): one file per owner and server under
//!   `$STEWARD_HOME/mcp-logins/`, owner-only (0700 folders, 0600 files), bound to the server's
//!   address, so a login is never sent to another address after the configuration changes,
//!   and never shared between owners;
//! - the login itself ([`login`]): the browser is sent back to a loopback address Steward
//!   listens on, the `state` is checked before the code is exchanged;
//! - what a refused login becomes ([`crate::McpError::LoginRequired`], class
//!   `mcp_login_required`): a sentence naming `steward mcp login NAME`, never a hang.
//!
//! `$STEWARD_HOME` is hidden from sandboxed programs and refused to the built-in tools, so a
//! login is never visible to a program the model runs or to the model.

mod assertion;
mod callback;
mod login;
mod store;

pub use login::{Opener, login};
pub use store::{LoginState, TokenPlace};

use std::sync::Arc;

use rmcp::transport::auth::{AuthorizationManager, OAuthClientConfig};

use crate::config::{McpServerConfig, OAuthGrant};
use crate::error::McpError;

/// The authorization manager a connection to `server` at `url` sends its requests through:
/// the login stored in `place`, renewed with its refresh token when it has expired. A server
/// with `grant = "client_credentials"` logs in first (no person is needed) when no login is
/// stored or its token has run out (that grant gives no refresh token). `Ok(None)`: nothing is stored, the requests go without a token (a server that
/// needs one answers 401, which becomes [`McpError::LoginRequired`]). Errors:
/// [`McpError::LoginRequired`] when the authorization server cannot be found again,
/// [`McpError::Config`] for an unreadable `client_secret`.
pub(crate) async fn authorized_manager(
    server: &str,
    url: &str,
    config: &McpServerConfig,
    place: &TokenPlace,
) -> Result<Option<AuthorizationManager>, McpError> {
    let oauth = config.oauth.clone().unwrap_or_default();
    let stored = place.state(server, url);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    if oauth.grant == OAuthGrant::ClientCredentials && needs_new_grant(&stored, now) {
        login(server, config, place, None, Opener::None, &|_| {}).await?;
    } else if !stored.logged_in {
        return Ok(None);
    }
    steward_http::install_crypto_provider();
    let refused = |e: rmcp::transport::auth::AuthError| {
        McpError::login_required(server, format!("the stored login cannot be used ({e})"), None)
    };
    let mut manager = AuthorizationManager::new(url).await.map_err(refused)?;
    manager.set_credential_store(place.store(server, url));
    if !manager.initialize_from_store().await.map_err(refused)? {
        return Ok(None);
    }
    if let (Some(id), Some(secret)) = (&oauth.client_id, &oauth.client_secret) {
        let secret = secret
            .resolve(&|var| std::env::var(var).ok())
            .map_err(|e| McpError::config(server, format!("oauth.client_secret: {e}")))?;
        let client = OAuthClientConfig::new(id.clone(), callback::PLACEHOLDER_REDIRECT).with_client_secret(secret);
        manager.configure_client(client).map_err(refused)?;
    }
    Ok(Some(manager))
}

/// Whether a login made by the client credentials grant must be made again at `now` (seconds
/// since the epoch): none is stored, or its token has less than a minute left and cannot be
/// renewed (the grant gives no refresh token; a call may take that minute).
fn needs_new_grant(stored: &LoginState, now: u64) -> bool {
    let running_out = stored.expires_at.is_some_and(|at| at <= now.saturating_add(60));
    !stored.logged_in || (running_out && !stored.renewable)
}

/// Why the server refused `what`, from its `WWW-Authenticate` answer: the scope it asks for
/// (RFC 6750 §3.1 `insufficient_scope`), else a refused or missing token.
pub(crate) fn refusal(challenge: Option<&str>, what: &str) -> String {
    let challenge = challenge.unwrap_or_default();
    if challenge.contains("insufficient_scope") {
        let scope = challenge.split("scope=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or("");
        if scope.is_empty() {
            format!("the server needs more scope for {what} than the login has")
        } else {
            format!("the server needs the scope `{scope}` for {what}")
        }
    } else {
        format!("the server refused {what} without a valid login")
    }
}

/// Where the logins of the owner a manager works for are kept (see [`TokenPlace`]); shared by
/// its connections.
pub type SharedTokenPlace = Arc<TokenPlace>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_login_is_made_again_when_its_token_runs_out() {
        let fresh = LoginState { logged_in: true, expires_at: Some(10_000), renewable: false, scopes: Vec::new() };
        assert!(!needs_new_grant(&fresh, 9_000));
        assert!(needs_new_grant(&fresh, 9_950), "less than a minute left");
        assert!(needs_new_grant(&fresh, 20_000));
        assert!(!needs_new_grant(&LoginState { renewable: true, ..fresh.clone() }, 20_000), "a refresh renews it");
        assert!(!needs_new_grant(&LoginState { expires_at: None, ..fresh.clone() }, 20_000), "no expiry given");
        assert!(needs_new_grant(&LoginState::default(), 0), "nothing stored");
    }

    #[test]
    fn a_refusal_names_the_scope_the_server_asks_for() {
        let scope = r#"Bearer error="insufficient_scope", scope="files:write", resource_metadata="http://x/""#;
        assert_eq!(refusal(Some(scope), "tools/call x"), "the server needs the scope `files:write` for tools/call x");
        let no_scope = r#"Bearer error="insufficient_scope""#;
        assert!(refusal(Some(no_scope), "initialize").contains("more scope"));
        assert!(refusal(Some(r#"Bearer error="invalid_token""#), "initialize").contains("without a valid login"));
        assert!(refusal(None, "tools/list").contains("without a valid login"));
    }
}
