//! The MCP client of Steward (SPEC M1, T12), on the official Rust SDK `rmcp`.
//!
//! Servers come from `[mcp_servers.NAME]` tables ([`McpServerConfig`]): a child process on
//! stdio (`command`) or a streamable HTTP endpoint (`url`). [`McpManager`] starts them on
//! first use, lists their tools as [`ToolSpec`]s under registry names `server__tool`
//! ([`names`]), and calls them with every fault contained: a server that dies, never
//! finishes `initialize` or stops answering gives a classified [`McpError`] within its time
//! limit and is restarted with backoff on a later use (case B22); every result becomes text
//! for a tool result, including errors, multi-part, empty and image results (case B23),
//! capped in bytes without splitting UTF-8 (case B25).
//!
//! A server may ask the person behind the client for input during a tool call
//! (`elicitation/create`, form mode only): [`elicitation`] routes it to the call's
//! [`Elicitor`] and holds the default-filling and validation every front end uses.
//!
//! [`mcp_server`] is the other direction (SPEC M2): Steward as an MCP server offering four
//! narrow tools to a remote assistant, over a service the `steward` binary implements.
//!
//! This crate knows nothing of the gate: `steward-core` wraps each [`McpTool`] in its `Tool`
//! trait so that MCP calls pass the same control layer as built-in tools. Every MCP tool
//! has `untrusted_output: true` (its output taints the run, SPEC C2) and writes unless the
//! user's `read_only_tools` says otherwise.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod config;
mod connection;
pub mod elicitation;
mod error;
mod manager;
pub mod mcp_server;
pub mod names;
pub mod oauth;
mod output;

pub use config::{
    DEFAULT_CALL_TIMEOUT_MS, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_STARTUP_TIMEOUT_MS, EnvValue, MAX_SERVER_NAME_CHARS,
    MIN_MAX_OUTPUT_BYTES, McpServerConfig, OAuthConfig, OAuthGrant, ValueError, ValueSource,
};
pub use connection::HiddenPaths;
pub use elicitation::{ElicitationAnswer, ElicitationRequest, Elicitor};
pub use error::McpError;
pub use manager::{Backoff, McpManager, McpTool, McpTools, ServerState};
pub use output::{McpCallOutput, NO_OUTPUT, head_tail_bytes};

use steward_protocol::{RiskLevel, ToolSpec};

/// Longest tool description offered to a model, in characters; longer ones are cut.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The spec of a server's `tool` under registry name `name`: its description (or title), its
/// input schema, `risk` from the server's configuration, and always `untrusted_output`.
///
/// Steward's own knowledge decides side effects, never the server's claims about itself: the
/// tool is read-only (`writes: false`) only when the user's configuration says so
/// (`read_only_by_config`, from `read_only_tools`); `readOnlyHint` is ignored. Annotations may
/// only raise caution: `destructiveHint: true` makes the risk at least `high`.
fn tool_spec(name: &str, tool: &rmcp::model::Tool, risk: RiskLevel, read_only_by_config: bool) -> ToolSpec {
    let description = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .or(tool.annotations.as_ref().and_then(|a| a.title.as_deref()))
        .unwrap_or("");
    let destructive = tool.annotations.as_ref().and_then(|a| a.destructive_hint).unwrap_or(false);
    let risk = if destructive { risk.max(RiskLevel::High) } else { risk };
    ToolSpec {
        name: name.to_string(),
        description: steward_protocol::truncate_chars(description, MAX_DESCRIPTION_CHARS).to_string(),
        input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
        risk,
        writes: !read_only_by_config,
        path_inputs: Vec::new(),
        untrusted_output: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(annotations: serde_json::Value) -> rmcp::model::Tool {
        serde_json::from_value(serde_json::json!({
            "name": "read_file",
            "description": "Read a file",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
            "annotations": annotations
        }))
        .unwrap()
    }

    #[test]
    fn read_only_hint_never_lowers_caution() {
        // The server says read-only; only the user's configuration can make it so.
        let claimed = tool(serde_json::json!({"readOnlyHint": true}));
        let spec = tool_spec("fs__read_file", &claimed, RiskLevel::Low, false);
        assert!(spec.writes);
        assert!(spec.untrusted_output);
        assert_eq!(spec.risk, RiskLevel::Low);
        assert_eq!(spec.description, "Read a file");
        assert_eq!(spec.input_schema["properties"]["path"]["type"], "string");
        let declared = tool_spec("fs__read_file", &claimed, RiskLevel::Low, true);
        assert!(!declared.writes);
        assert!(declared.untrusted_output);
        // No annotation: writing unless declared.
        let plain = tool(serde_json::json!({}));
        assert!(tool_spec("s__w", &plain, RiskLevel::Medium, false).writes);
    }

    #[test]
    fn destructive_hint_raises_risk_to_at_least_high() {
        let destructive = tool(serde_json::json!({"destructiveHint": true, "readOnlyHint": true}));
        assert_eq!(tool_spec("s__d", &destructive, RiskLevel::Low, true).risk, RiskLevel::High);
        assert_eq!(tool_spec("s__d", &destructive, RiskLevel::Dangerous, false).risk, RiskLevel::Dangerous);
        let harmless = tool(serde_json::json!({"destructiveHint": false}));
        assert_eq!(tool_spec("s__d", &harmless, RiskLevel::Low, false).risk, RiskLevel::Low);
    }
}
