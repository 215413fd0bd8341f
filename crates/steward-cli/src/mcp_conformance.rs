//! `steward mcp conformance-client URL`: the client under test of the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`, client mode).
//!
//! The suite starts a test server for each scenario, then runs this command with the server's
//! URL as its last argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO`. Everything
//! goes through Steward's own client ([`McpManager`] over streamable HTTP), exactly as for a
//! configured `url` server: connect and `initialize`, list the tools, call the ones the
//! scenario expects. OAuth (`auth/*`) is not built: those scenarios connect without
//! credentials and fail. Steward declares no elicitation, so the elicitation scenario's
//! request is declined.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow, bail};
use serde_json::{Value, json};
use steward_mcp::{McpManager, McpServerConfig};
use tokio_util::sync::CancellationToken;

use crate::commands::usage_error;

/// The environment variable naming the scenario.
const SCENARIO_VAR: &str = "MCP_CONFORMANCE_SCENARIO";

/// The server name the test server is configured under.
const SERVER: &str = "conformance";

/// The tool calls a scenario expects after `initialize` and `tools/list`: `(tool, arguments)`.
/// `None` for a scenario this client does not know.
fn expected_calls(scenario: &str) -> Option<Vec<(&'static str, Value)>> {
    match scenario {
        "initialize" => Some(Vec::new()),
        "tools_call" => Some(vec![("add_numbers", json!({"a": 5, "b": 3}))]),
        "sse-retry" => Some(vec![("test_reconnection", json!({}))]),
        "elicitation-sep1034-client-defaults" => Some(vec![("test_client_elicitation_defaults", json!({}))]),
        // OAuth is not built: connect as for any server (and be refused).
        auth if auth.starts_with("auth/") => Some(Vec::new()),
        _ => None,
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
    let manager =
        McpManager::new(&BTreeMap::from([(SERVER.to_string(), config)])).map_err(|e| usage_error(&e.to_string()))?;

    let listing = manager.tools().await;
    if let Some(failure) = listing.failures.first() {
        bail!("scenario {scenario}: initialize or tools/list failed: {failure}");
    }
    println!("{scenario}: initialized; {} tool(s)", listing.tools.len());
    for (tool, args) in calls {
        let Some(found) = listing.tools.iter().find(|t| t.tool == tool) else {
            bail!("scenario {scenario}: the server offers no tool `{tool}`");
        };
        let out = manager
            .call(&found.spec.name, args, CancellationToken::new())
            .await
            .map_err(|e| anyhow!("scenario {scenario}: tools/call {tool} failed: {e}"))?;
        if out.is_error {
            bail!("scenario {scenario}: tools/call {tool} returned an error: {}", out.text);
        }
        println!("{scenario}: {tool}: {}", out.text);
    }
    Ok(0)
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
}
