//! `steward mcp list | tools | call`: the configured MCP servers and their tools.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use serde_json::json;
use steward_mcp::{McpManager, ServerState};

use crate::commands::{load_config, usage_error};

fn manager(workspace: &Path) -> Result<(steward_core::config::Config, McpManager)> {
    let config = load_config(workspace)?;
    let manager = McpManager::new(&config.mcp_servers).map_err(|e| usage_error(&e.to_string()))?;
    Ok((config, manager))
}

/// What `mcp list` and `mcp tools` say when there is nothing to list.
const NONE_CONFIGURED: &str = "no MCP servers are configured ([mcp_servers.NAME] in $XDG_CONFIG_HOME/steward/*.toml, by default ~/.config/steward/)";

/// `steward mcp list`: each server, whether it started, and how many tools it offers.
pub async fn list(workspace: &Path, json: bool) -> Result<u8> {
    let (config, manager) = manager(workspace)?;
    if config.mcp_servers.is_empty() {
        println!("{NONE_CONFIGURED}");
        return Ok(0);
    }
    let listing = manager.tools().await;
    for declined in &listing.declined_elicitations {
        eprintln!("steward: warning: {declined}");
    }
    for (name, state) in manager.status().await {
        let tools = listing.tools.iter().filter(|t| t.server == name).count();
        let state_text = match &state {
            ServerState::Disabled => "disabled".to_string(),
            ServerState::Idle => "not started".to_string(),
            ServerState::Running => "running".to_string(),
            ServerState::Failed { reason, .. } => format!("failed: {reason}"),
        };
        if json {
            println!("{}", json!({"server": name, "state": state_text, "tools": tools}));
        } else {
            println!("{name}: {state_text} · {tools} tool(s)");
        }
    }
    Ok(0)
}

/// `steward mcp tools [SERVER]`: one line per tool, its registry name then its description.
pub async fn tools(workspace: &Path, server: Option<&str>, json: bool) -> Result<u8> {
    let (config, manager) = manager(workspace)?;
    if let Some(name) = server
        && !config.mcp_servers.contains_key(name)
    {
        return Err(usage_error(&format!("no MCP server `{name}` is configured; `steward mcp list` shows them")));
    }
    if config.mcp_servers.is_empty() && !json {
        println!("{NONE_CONFIGURED}");
        return Ok(0);
    }
    let listing = manager.tools().await;
    for failure in &listing.failures {
        eprintln!("steward: warning: {failure}");
    }
    for declined in &listing.declined_elicitations {
        eprintln!("steward: warning: {declined}");
    }
    for tool in listing.tools.iter().filter(|t| server.is_none_or(|s| s == t.server)) {
        if json {
            println!(
                "{}",
                json!({"name": tool.spec.name, "server": tool.server, "tool": tool.tool, "description": tool.spec.description})
            );
        } else {
            println!("{}  {}", tool.spec.name, tool.spec.description.replace('\n', " "));
        }
    }
    Ok(0)
}

/// `steward mcp call SERVER TOOL --args JSON`: one call through the whole control layer (policy,
/// approval, audit, redaction), as a run whose scripted planner makes exactly that call.
pub async fn call(workspace: &Path, server: &str, tool: &str, args: &str) -> Result<u8> {
    let arguments: serde_json::Value =
        serde_json::from_str(args).map_err(|e| usage_error(&format!("--args is not JSON: {e}")))?;
    let (_, manager) = manager(workspace)?;
    let manager = Arc::new(manager);
    let listing = manager.tools().await;
    let Some(found) = listing.tools.iter().find(|t| t.server == server && t.tool == tool) else {
        for failure in &listing.failures {
            eprintln!("steward: {failure}");
        }
        return Err(usage_error(&format!(
            "server `{server}` offers no tool `{tool}`; `steward mcp tools {server}` lists them"
        )));
    };
    let scenario = format!(
        "[[round]]\n[[round.tool_call]]\nid = \"call_mcp\"\nname = {}\narguments_raw = {}\n[[round]]\ntext = \"(the MCP call is done)\"\n",
        toml::Value::String(found.spec.name.clone()),
        toml::Value::String(arguments.to_string())
    );
    crate::commands::run_scripted(workspace, &scenario, &format!("mcp call {server} {tool}")).await
}
