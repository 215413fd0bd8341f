//! One login: find the authorization server, register or use the configured client, get the
//! person's consent in a browser (or log in as the client itself), store the tokens.

use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, ClientCredentialsConfig, OAuthState,
};

use super::callback::Callback;
use super::store::{LoginState, TokenPlace};
use crate::config::{McpServerConfig, OAuthGrant, Transport};
use crate::error::McpError;

/// How long a person has to finish a login in the browser.
const CONSENT_LIMIT: Duration = Duration::from_secs(300);

/// The client name sent with dynamic client registration.
const CLIENT_NAME: &str = "Steward";

/// How the authorization address reaches the person who logs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opener {
    /// Shown (through the caller's `show`) and, when `open` is true, handed to the system's
    /// browser (`xdg-open`, or `open` on macOS; a failure to start it is ignored).
    Browser {
        /// Whether to start the system's browser.
        open: bool,
    },
    /// Fetched by Steward itself, following the authorization server's redirect back to the
    /// loopback listener: for authorization servers that approve without a person (test
    /// servers such as the MCP conformance suite's). Never for a person's login.
    Fetch,
    /// No browser: only for `grant = "client_credentials"`.
    None,
}

/// Logs `place`'s owner in to `server` (a `url` server configured by `config`) and stores the
/// login, replacing an earlier one. `challenge` is the server's `WWW-Authenticate` answer
/// when the caller has one (a 403 asking for more scope); without it the server is asked.
/// `show` receives the authorization address to give the person. Returns the stored login's
/// state. Errors: [`McpError::Config`] (not a `url` server, unreadable `client_secret`),
/// [`McpError::LoginRequired`] (discovery, registration, consent or the token exchange
/// failed; the reason says which).
pub async fn login(
    server: &str,
    config: &McpServerConfig,
    place: &TokenPlace,
    challenge: Option<String>,
    opener: Opener,
    show: &(dyn Fn(&str) + Sync),
) -> Result<LoginState, McpError> {
    let Transport::Http { url } = config.transport(server)? else {
        return Err(McpError::config(server, "only a `url` server has a login"));
    };
    let url = url.to_string();
    let oauth = config.oauth.clone().unwrap_or_default();
    let failed = |what: &str, e: AuthError| McpError::login_required(server, format!("{what} failed: {e}"), None);
    let secret = match &oauth.client_secret {
        Some(source) => Some(
            source
                .resolve(&|var| std::env::var(var).ok())
                .map_err(|e| McpError::config(server, format!("oauth.client_secret: {e}")))?,
        ),
        None => None,
    };
    let challenge = match challenge {
        Some(challenge) => Some(challenge),
        None => ask_challenge(server, &url, config).await?,
    };
    steward_http::install_crypto_provider();
    let mut manager = AuthorizationManager::new(url.as_str()).await.map_err(|e| failed("setting up", e))?;
    manager.set_credential_store(place.store(server, &url));
    let mut state = OAuthState::Unauthorized(manager);

    if oauth.grant == OAuthGrant::ClientCredentials && oauth.private_key_file.is_some() {
        let OAuthState::Unauthorized(manager) = state else {
            return Err(McpError::login_required(server, "the login could not start", None));
        };
        super::assertion::log_in_with_assertion(server, &url, &oauth, manager).await?;
        return stored(server, &url, place);
    }
    if oauth.grant == OAuthGrant::ClientCredentials {
        let (Some(client_id), Some(client_secret)) = (oauth.client_id.clone(), secret) else {
            return Err(McpError::config(
                server,
                "oauth.grant = \"client_credentials\" needs client_id and client_secret",
            ));
        };
        let grant = ClientCredentialsConfig::ClientSecret {
            client_id,
            client_secret,
            scopes: oauth.scopes,
            resource: Some(url.clone()),
        };
        state.authenticate_client_credentials(grant).await.map_err(|e| failed("the client credentials grant", e))?;
        return stored(server, &url, place);
    }
    if opener == Opener::None {
        return Err(McpError::config(server, "a browser login needs a person: run `steward mcp login` in a terminal"));
    }

    let callback = Callback::bind(oauth.redirect_port)
        .await
        .map_err(|e| McpError::login_required(server, format!("cannot listen for the browser's return: {e}"), None))?;
    let mut request = AuthorizationRequest::new(callback.redirect_uri()).with_client_name(CLIENT_NAME);
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    if let Some(client_id) = &oauth.client_id {
        request = request.with_preregistered_client(client_id.clone());
        if let Some(secret) = &secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    if let Some(document) = &oauth.client_metadata_url {
        request = request.with_client_metadata_url(document.clone());
    }
    if !oauth.scopes.is_empty() {
        request = request.with_scopes(oauth.scopes.clone());
    }
    state.start_authorization(request).await.map_err(|e| failed("finding the authorization server", e))?;
    let address = state.get_authorization_url().await.map_err(|e| failed("building the login address", e))?;
    let sent_state = reqwest::Url::parse(&address)
        .ok()
        .and_then(|url| url.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()))
        .ok_or_else(|| McpError::login_required(server, "the login address carries no `state`", None))?;
    show(&address);
    let fetcher = match opener {
        Opener::Browser { open: true } => {
            open_browser(&address);
            None
        }
        Opener::Fetch => Some(tokio::spawn(fetch_consent(address.clone()))),
        _ => None,
    };
    let returned =
        callback.wait(CONSENT_LIMIT, sent_state).await.map_err(|why| McpError::login_required(server, why, None));
    if let Some(fetcher) = fetcher {
        fetcher.abort();
    }
    state.handle_callback_url(&returned?).await.map_err(|e| failed("the token exchange", e))?;
    stored(server, &url, place)
}

/// The stored login after a successful grant (the SDK saved it through the store).
fn stored(server: &str, url: &str, place: &TokenPlace) -> Result<LoginState, McpError> {
    let state = place.state(server, url);
    if state.logged_in { Ok(state) } else { Err(McpError::login_required(server, "the login was not stored", None)) }
}

/// The server's `WWW-Authenticate` answer to an `initialize` without a token: `None` when it
/// accepts one (it may ask for a login on later requests only). Errors:
/// [`McpError::Unavailable`] when it cannot be reached.
async fn ask_challenge(server: &str, url: &str, config: &McpServerConfig) -> Result<Option<String>, McpError> {
    let client = steward_http::client_builder()
        .map_err(|e| McpError::unavailable(server, format!("http client: {e}")))?
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_millis(config.startup_timeout_ms))
        .build()
        .map_err(|e| McpError::unavailable(server, format!("http client: {e}")))?;
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "steward", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let answer = client
        .post(url)
        .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .map_err(|e| McpError::unavailable(server, format!("cannot reach it: {e}")))?;
    let challenge =
        answer.headers().get(reqwest::header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).map(String::from);
    Ok(match answer.status().as_u16() {
        401 | 403 => Some(challenge.unwrap_or_default()).filter(|c| !c.is_empty()),
        _ => None,
    })
}

/// Starts the system's browser on `address`, when there is a display to show it on.
fn open_browser(address: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some() {
        "xdg-open"
    } else {
        return;
    };
    let _ = std::process::Command::new(program)
        .arg(address)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// [`Opener::Fetch`]: asks for `address` and follows the redirect it answers with once (to
/// the loopback listener). Failures show as a login that never comes back.
async fn fetch_consent(address: String) {
    let Ok(builder) = steward_http::client_builder() else { return };
    let Ok(client) = builder.redirect(reqwest::redirect::Policy::none()).build() else { return };
    let Ok(answer) = client.get(&address).send().await else { return };
    let Some(location) = answer.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()) else {
        return;
    };
    let Ok(back) = reqwest::Url::parse(location) else { return };
    // Only ever back to the loopback listener.
    if back.host_str() == Some("127.0.0.1") {
        let _ = client.get(back).send().await;
    }
}
