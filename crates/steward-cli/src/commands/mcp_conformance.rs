//! `steward mcp conformance-client URL`: the client under test of the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`, client mode).
//!
//! The suite starts a test server for each scenario, then runs this command with the server's
//! URL as its last argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO`. Everything
//! goes through Steward's own client ([`McpManager`] over streamable HTTP), exactly as for a
//! configured `url` server: connect and `initialize`, list the tools, call the ones the
//! scenario expects. OAuth (`auth/*`) is not built: those scenarios connect without
//! credentials and fail.
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
use steward_mcp::{ElicitationAnswer, ElicitationRequest, Elicitor, McpManager, McpServerConfig};
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
        let owner: Arc<dyn Elicitor> = Arc::new(SubmitsPrefilledForm { scenario: scenario.clone() });
        let out = manager
            .call_eliciting(&found.spec.name, args, CancellationToken::new(), Some(owner))
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
