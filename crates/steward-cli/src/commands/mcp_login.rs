//! `steward mcp login NAME` and `steward mcp logout NAME`: the local owner's login to an HTTP
//! MCP server that needs one (MCP authorization, OAuth 2.1), kept owner-only under
//! `$STEWARD_HOME/mcp-logins/`.

use std::path::Path;

use anyhow::{Result, anyhow};
use steward_mcp::oauth::{Opener, TokenPlace, login as log_in};

use crate::commands::{load_config, usage_error};

/// The `url` server `name` of the configuration in `workspace` and where the local owner's
/// logins are kept. Errors (usage): no such server, a `command` server, no state folder.
fn server(workspace: &Path, name: &str) -> Result<(steward_mcp::McpServerConfig, TokenPlace)> {
    let config = load_config(workspace)?;
    let Some(server) = config.mcp_servers.get(name) else {
        return Err(usage_error(&format!("no MCP server `{name}` is configured; `steward mcp list` shows them")));
    };
    if server.url.is_none() {
        return Err(usage_error(&format!("`{name}` is a `command` server: only a `url` server has a login")));
    }
    let place = crate::commands::local_logins()
        .ok_or_else(|| usage_error("neither STEWARD_HOME nor HOME is set: there is nowhere to keep a login"))?;
    Ok((server.clone(), place))
}

/// `steward mcp login NAME [--no-browser]`: finds the server's authorization server, shows the
/// address to log in at (and opens the browser unless `no_browser`), waits up to 5 minutes for
/// the browser to come back to a loopback address, and stores the login. With
/// `oauth.grant = "client_credentials"` no browser is involved.
pub async fn login(workspace: &Path, name: &str, no_browser: bool) -> Result<u8> {
    let (server, place) = server(workspace, name)?;
    let show = |address: &str| {
        eprintln!(
            "Log in to `{name}` at this address (it opens in your browser when one is available):\n\n  {address}\n"
        );
        eprintln!("Waiting up to 5 minutes for the browser to come back to Steward…");
    };
    let state = log_in(name, &server, &place, None, Opener::Browser { open: !no_browser }, &show)
        .await
        .map_err(|e| anyhow!("{e}"))?;
    let expiry = match state.expires_at.and_then(|at| chrono::DateTime::from_timestamp(at as i64, 0)) {
        Some(at) => format!(" (token expires {})", at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M")),
        None => String::new(),
    };
    let scopes = if state.scopes.is_empty() { String::new() } else { format!("; scopes: {}", state.scopes.join(" ")) };
    println!("Logged in to `{name}`{expiry}{scopes}.");
    Ok(0)
}

/// `steward mcp logout NAME`: forgets the local owner's login to `NAME`.
pub fn logout(workspace: &Path, name: &str) -> Result<u8> {
    let (_, place) = server(workspace, name)?;
    match place.logout(name) {
        Ok(true) => println!("Logged out of `{name}`: its login is deleted."),
        Ok(false) => println!("`{name}` had no login stored."),
        Err(e) => return Err(anyhow!("cannot delete the login of `{name}`: {e}")),
    }
    Ok(0)
}
