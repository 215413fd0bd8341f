//! `steward mcp conformance-client URL`: the client under test of the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`, client mode).
//!
//! The suite starts a test server for each scenario, then runs this command with the server's
//! URL as its last argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO`. Everything
//! goes through Steward's own client ([`McpManager`] over streamable HTTP), exactly as for a
//! configured `url` server: connect and `initialize`, list the tools, call the ones the
//! scenario expects.
//!
//! The authorization scenarios (`auth/*`) go through Steward's login
//! ([`steward_mcp::oauth::login`]) as `steward mcp login` does, with a throw-away state folder:
//! a request refused with `mcp_login_required` starts a login from the server's
//! `WWW-Authenticate` answer, then the request is made again, at most three logins per
//! scenario. The suite's authorization server approves without a person, so the
//! authorization address is fetched by Steward itself, following its redirect back to the
//! loopback listener ([`Opener::Fetch`]). The client credentials the suite hands out for a
//! scenario (`MCP_CONFORMANCE_CONTEXT`) become the server's `oauth` table, as a user would
//! configure them; every scenario offers a client ID metadata document address.
//!
//! A server's request for input during a call (elicitation, form mode) has no human to go to
//! here, so this command plays an owner who submits the pre-filled form unchanged: the form is
//! built from the requested schema and pre-filled with its `default`s, then answered through
//! the same default-filling and validation as a person's answer on the terminal or the web
//! page ([`steward_mcp::elicitation::answer_form`]), and the values are validated once more
//! before they are sent. A form whose required fields have no defaults is therefore not sent
//! (`cancel`). Real runs never answer on their own: the run's owner does.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Result, anyhow, bail};
use async_trait::async_trait;
use serde_json::{Value, json};
use steward_mcp::elicitation::{answer_form, form_fields, prefilled_inputs};
use steward_mcp::oauth::{Opener, TokenPlace, login};
use steward_mcp::{
    ElicitationAnswer, ElicitationRequest, Elicitor, McpError, McpManager, McpServerConfig, OAuthConfig, OAuthGrant,
    ValueSource,
};
use tokio_util::sync::CancellationToken;

use crate::commands::usage_error;

/// The environment variable naming the scenario.
const SCENARIO_VAR: &str = "MCP_CONFORMANCE_SCENARIO";

/// The server name the test server is configured under.
const SERVER: &str = "conformance";

/// The environment variable holding the scenario's client credentials (JSON).
const CONTEXT_VAR: &str = "MCP_CONFORMANCE_CONTEXT";

/// The client ID metadata document address the suite's authorization servers accept.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Logins one scenario may make before it gives up (a server that keeps asking for more scope
/// must not loop a client for ever).
const MAX_LOGINS: u32 = 3;

/// The tool calls a scenario expects after `initialize` and `tools/list`: `(tool, arguments)`.
/// `None` for a scenario this client does not know.
fn expected_calls(scenario: &str) -> Option<Vec<(&'static str, Value)>> {
    match scenario {
        "initialize" => Some(Vec::new()),
        "tools_call" => Some(vec![("add_numbers", json!({"a": 5, "b": 3}))]),
        "sse-retry" => Some(vec![("test_reconnection", json!({}))]),
        "elicitation-sep1034-client-defaults" => Some(vec![("test_client_elicitation_defaults", json!({}))]),
        // The suite's protected servers offer one tool.
        auth if auth.starts_with("auth/") => Some(vec![("test-tool", json!({}))]),
        _ => None,
    }
}

/// The owner this command plays: submits every pre-filled form unchanged.
struct SubmitsPrefilledForm {
    scenario: String,
}

#[async_trait]
impl Elicitor for SubmitsPrefilledForm {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let scenario = &self.scenario;
        let fields = match form_fields(&request.schema, &request.order) {
            Ok(fields) => fields,
            Err(why) => {
                eprintln!("{scenario}: declined a request for input that is not a form Steward shows: {why}");
                return ElicitationAnswer::Decline;
            }
        };
        match answer_form(&request.schema, &fields, &prefilled_inputs(&fields)) {
            Ok(values) => {
                let names: Vec<&str> = values.keys().map(String::as_str).collect();
                println!("{scenario}: submitted the pre-filled form unchanged ({})", names.join(", "));
                ElicitationAnswer::Accept(values)
            }
            Err(problem) => {
                eprintln!("{scenario}: the pre-filled form is not a valid answer ({problem}); cancelled");
                ElicitationAnswer::Cancel
            }
        }
    }
}

/// Runs the scenario named by `MCP_CONFORMANCE_SCENARIO` against `url`. Ok(0) when every
/// step succeeded; an error naming the failed step otherwise.
pub async fn conformance_client(url: &str) -> Result<u8> {
    let scenario = std::env::var(SCENARIO_VAR)
        .map_err(|_| usage_error(&format!("{SCENARIO_VAR} is not set (the conformance suite sets it)")))?;
    let calls =
        expected_calls(&scenario).ok_or_else(|| usage_error(&format!("unknown conformance scenario `{scenario}`")))?;
    let mut config = McpServerConfig::http(url);
    config.startup_timeout_ms = 20_000;
    config.call_timeout_ms = 20_000;
    let state = tempfile::tempdir().map_err(|e| anyhow!("no temporary state folder: {e}"))?;
    let mut place = None;
    if scenario.starts_with("auth/") {
        config.oauth = Some(oauth_settings(std::env::var(CONTEXT_VAR).ok().as_deref(), state.path())?);
        place = Some(TokenPlace::new(state.path(), "local:conformance"));
    }
    let servers = BTreeMap::from([(SERVER.to_string(), config)]);
    let manager = || -> Result<McpManager> {
        let manager = McpManager::new(&servers).map_err(|e| usage_error(&e.to_string()))?;
        Ok(match &place {
            Some(place) => manager.with_logins(place.clone()),
            None => manager,
        })
    };
    let mut session = Session { scenario: scenario.clone(), logins_made: 0, place: place.clone() };
    let config = &servers[SERVER];

    let (manager, listing) = loop {
        let manager = manager()?;
        let listing = manager.tools().await;
        match listing.failures.first() {
            None => break (manager, listing),
            Some(failure) => session.log_in_or_fail(config, failure, "initialize or tools/list").await?,
        }
    };
    println!("{scenario}: initialized; {} tool(s)", listing.tools.len());
    for (tool, args) in calls {
        let Some(found) = listing.tools.iter().find(|t| t.tool == tool) else {
            bail!("scenario {scenario}: the server offers no tool `{tool}`");
        };
        let out = loop {
            let owner: Arc<dyn Elicitor> = Arc::new(SubmitsPrefilledForm { scenario: scenario.clone() });
            match manager.call_eliciting(&found.spec.name, args.clone(), CancellationToken::new(), Some(owner)).await {
                Ok(out) => break out,
                Err(e) => session.log_in_or_fail(config, &e, &format!("tools/call {tool}")).await?,
            }
        };
        if out.is_error {
            bail!("scenario {scenario}: tools/call {tool} returned an error: {}", out.text);
        }
        println!("{scenario}: {tool}: {}", out.text);
    }
    Ok(0)
}

/// One scenario's logins.
struct Session {
    scenario: String,
    logins_made: u32,
    /// Where its logins are kept (authorization scenarios only).
    place: Option<TokenPlace>,
}

impl Session {
    /// After `failure` of `what`: logs in again when the server asked for a login (from its
    /// `WWW-Authenticate` answer) and fewer than [`MAX_LOGINS`] were made; otherwise the
    /// scenario fails with `failure`.
    async fn log_in_or_fail(&mut self, config: &McpServerConfig, failure: &McpError, what: &str) -> Result<()> {
        let scenario = &self.scenario;
        let (Some(place), McpError::LoginRequired { challenge, .. }) = (&self.place, failure) else {
            bail!("scenario {scenario}: {what} failed: {failure}");
        };
        if self.logins_made >= MAX_LOGINS {
            bail!("scenario {scenario}: {what} failed after {MAX_LOGINS} logins; giving up: {failure}");
        }
        self.logins_made += 1;
        let opener = match config.oauth.as_ref().map(|o| o.grant) {
            Some(OAuthGrant::ClientCredentials) => Opener::None,
            _ => Opener::Fetch,
        };
        let login = login(SERVER, config, place, challenge.clone(), opener, &|_| {})
            .await
            .map_err(|e| anyhow!("scenario {scenario}: login {} failed: {e}", self.logins_made))?;
        println!("{scenario}: logged in (scopes: {})", login.scopes.join(" "));
        Ok(())
    }
}

/// The server's `oauth` table for an authorization scenario: the client credentials the suite
/// gave in `MCP_CONFORMANCE_CONTEXT` (a pre-registered client, or the client credentials
/// grant with a secret or a private key, written to an owner-only file in `dir` as a user
/// would keep it), and the client ID metadata document address. Errors: context that is not
/// JSON, or a key that cannot be written.
fn oauth_settings(context: Option<&str>, dir: &std::path::Path) -> Result<OAuthConfig> {
    let mut oauth = OAuthConfig { client_metadata_url: Some(CLIENT_METADATA_URL.to_string()), ..Default::default() };
    let Some(context) = context else { return Ok(oauth) };
    let context: Value = serde_json::from_str(context).map_err(|e| anyhow!("{CONTEXT_VAR} is not JSON: {e}"))?;
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_string);
    oauth.client_id = text("client_id");
    oauth.client_secret = text("client_secret").map(ValueSource::Literal);
    if let Some(pem) = text("private_key_pem") {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join("client-key.pem");
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        file.write_all(pem.as_bytes())?;
        oauth.private_key_file = Some(path);
        oauth.signing_algorithm = text("signing_algorithm");
    }
    if context.get("name").and_then(Value::as_str).is_some_and(|name| name.starts_with("auth/client-credentials")) {
        oauth.grant = OAuthGrant::ClientCredentials;
    }
    Ok(oauth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_scenario_is_known_and_others_are_refused() {
        for scenario in
            ["initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults", "auth/basic-cimd"]
        {
            assert!(expected_calls(scenario).is_some(), "{scenario}");
        }
        assert!(expected_calls("no-such-scenario").is_none());
    }

    #[tokio::test]
    async fn the_played_owner_submits_the_prefilled_form_through_the_shared_validation() {
        let owner = SubmitsPrefilledForm { scenario: "test".into() };
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}
        }});
        let request =
            |schema: Value| ElicitationRequest { server: "s".into(), message: "m".into(), schema, order: Vec::new() };
        let mut expected = serde_json::Map::new();
        expected.insert("age".into(), json!(30));
        expected.insert("name".into(), json!("John Doe"));
        assert_eq!(owner.elicit(request(schema)).await, ElicitationAnswer::Accept(expected));
        // A required field without a default cannot be submitted unchanged.
        let required = json!({"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]});
        assert_eq!(owner.elicit(request(required)).await, ElicitationAnswer::Cancel);
        let nested = json!({"type": "object", "properties": {"a": {"type": "object"}}});
        assert_eq!(owner.elicit(request(nested)).await, ElicitationAnswer::Decline);
    }
}
