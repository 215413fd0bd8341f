//! The client credentials grant with `private_key_jwt` client authentication (RFC 7523 §2.2,
//! as the MCP specification's client credentials extension uses it): the client proves who it
//! is with a short-lived JWT signed by its private key instead of a secret.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::transport::auth::{AuthorizationManager, OAuthState, OAuthTokenResponse};
use serde::Serialize;

use crate::config::OAuthConfig;
use crate::error::McpError;

/// `client_assertion_type` of a JWT assertion (RFC 7523 §2.2).
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is valid, in seconds (used once, right away).
const ASSERTION_SECONDS: u64 = 60;

/// The algorithm named by `signing_algorithm` (`None`: ES256; the names are
/// [`crate::config::SIGNING_ALGORITHMS`]); `None` for one Steward does not sign with.
fn assertion_algorithm(name: Option<&str>) -> Option<Algorithm> {
    Some(match name.unwrap_or("ES256") {
        "ES256" => Algorithm::ES256,
        "ES384" => Algorithm::ES384,
        "RS256" => Algorithm::RS256,
        "RS384" => Algorithm::RS384,
        "RS512" => Algorithm::RS512,
        "PS256" => Algorithm::PS256,
        "PS384" => Algorithm::PS384,
        "PS512" => Algorithm::PS512,
        _ => return None,
    })
}

/// The claims of a client assertion (RFC 7523 §3).
#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: String,
}

/// Logs in to the server at `url` as client `oauth.client_id` with an assertion signed by the
/// key in `oauth.private_key_file`, and stores the token through `manager`'s credential store.
/// Errors: [`McpError::Config`] (no client ID, an unreadable key or an unknown algorithm),
/// [`McpError::LoginRequired`] (discovery or the token request failed).
pub(crate) async fn log_in_with_assertion(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
    manager: AuthorizationManager,
) -> Result<(), McpError> {
    let (Some(client_id), Some(key_file)) = (&oauth.client_id, &oauth.private_key_file) else {
        return Err(McpError::config(server, "private_key_jwt needs oauth.client_id and oauth.private_key_file"));
    };
    let algorithm = assertion_algorithm(oauth.signing_algorithm.as_deref())
        .ok_or_else(|| McpError::config(server, "oauth.signing_algorithm is not one Steward signs with"))?;
    let pem = std::fs::read(key_file)
        .map_err(|e| McpError::config(server, format!("oauth.private_key_file {}: {e}", key_file.display())))?;
    let key = match algorithm {
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(&pem),
        _ => EncodingKey::from_rsa_pem(&pem),
    }
    .map_err(|e| McpError::config(server, format!("oauth.private_key_file {}: {e}", key_file.display())))?;
    let failed = |what: &str, why: String| McpError::login_required(server, format!("{what} failed: {why}"), None);

    let metadata =
        manager.resolve_metadata().await.map_err(|e| failed("finding the authorization server", e.to_string()))?;
    let metadata = metadata.metadata;
    // The audience is the authorization server's issuer (RFC 7523bis), else its token endpoint.
    let audience = metadata.issuer.clone().unwrap_or_else(|| metadata.token_endpoint.clone());
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
    let claims = Claims {
        iss: client_id,
        sub: client_id,
        aud: &audience,
        iat: now,
        exp: now + ASSERTION_SECONDS,
        jti: hex::encode(rand::random::<[u8; 16]>()),
    };
    let assertion = jsonwebtoken::encode(&Header::new(algorithm), &claims, &key)
        .map_err(|e| McpError::config(server, format!("cannot sign the client assertion: {e}")))?;

    let mut form = vec![
        ("grant_type", "client_credentials".to_string()),
        ("client_assertion_type", JWT_BEARER.to_string()),
        ("client_assertion", assertion),
        ("resource", url.to_string()),
    ];
    if !oauth.scopes.is_empty() {
        form.push(("scope", oauth.scopes.join(" ")));
    }
    let client = steward_http::client_builder()
        .map_err(|e| McpError::unavailable(server, format!("http client: {e}")))?
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| McpError::unavailable(server, format!("http client: {e}")))?;
    let answer = client
        .post(&metadata.token_endpoint)
        .header(reqwest::header::ACCEPT, "application/json")
        .form(&form)
        .send()
        .await
        .map_err(|e| failed("the token request", e.to_string()))?;
    let status = answer.status();
    let body = answer.bytes().await.map_err(|e| failed("the token request", e.to_string()))?;
    if !status.is_success() {
        let said = serde_json::from_slice::<serde_json::Value>(&body).ok();
        let error = said.as_ref().and_then(|v| v["error"].as_str()).unwrap_or("no error code");
        let description = said.as_ref().and_then(|v| v["error_description"].as_str()).unwrap_or("");
        return Err(failed("the token request", format!("{status}: {error} {description}")));
    }
    let tokens: OAuthTokenResponse =
        serde_json::from_slice(&body).map_err(|e| failed("the token request", format!("not a token answer: {e}")))?;
    let mut state = OAuthState::Unauthorized(manager);
    state.set_credentials(client_id, tokens).await.map_err(|e| failed("storing the login", e.to_string()))
}
