//! `steward mcp list | tools | call`: the configured MCP servers and their tools.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Result;
use serde_json::{Value, json};
use steward_core::EventObserver;
use steward_mcp::{McpManager, ServerState};
use steward_protocol::{Event, EventKind};

use crate::commands::{load_config, usage_error};
use crate::ui;

fn manager(workspace: &Path) -> Result<(steward_config::Config, McpManager)> {
    let config = load_config(workspace)?;
    let ws = steward_policy::Workspace::open(workspace, &config.policy.deny_path)
        .map_err(|e| usage_error(&e.to_string()))?;
    let mut manager = McpManager::new(&config.mcp_servers)
        .map_err(|e| usage_error(&e.to_string()))?
        .with_hidden_paths(steward_tools::sandbox_paths::mcp_hidden_paths(ws));
    if let Some(place) = crate::commands::local_logins() {
        manager = manager.with_logins(place);
    }
    Ok((config, manager))
}

/// The login state of `url` server `name` for the local owner: `None` for a server that has
/// no login and needs none (no `oauth` table, nothing stored); else `logged in (expires …)`
/// or `not logged in`.
fn login_text(name: &str, server: &steward_mcp::McpServerConfig) -> Option<(bool, Option<u64>, String)> {
    let url = server.url.as_deref()?;
    let state = crate::commands::local_logins()?.state(name, url);
    if !state.logged_in && server.oauth.is_none() {
        return None;
    }
    let text = match (state.logged_in, state.expires_at) {
        (false, _) => format!("not logged in (`steward mcp login {name}`)"),
        (true, Some(at)) => {
            let when = chrono::DateTime::from_timestamp(at as i64, 0)
                .map(|t| t.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M").to_string())
                .unwrap_or_else(|| at.to_string());
            let renew = if state.renewable { ", renewed by itself" } else { "" };
            format!("logged in (token expires {when}{renew})")
        }
        (true, None) => "logged in".to_string(),
    };
    Some((state.logged_in, state.expires_at, text))
}

/// What `mcp list` and `mcp tools` say when there is nothing to list.
const NONE_CONFIGURED: &str = "no MCP servers are configured ([mcp_servers.NAME] in $XDG_CONFIG_HOME/steward/*.toml, by default ~/.config/steward/, or a trusted workspace's .steward/*.toml or .mcp.json)";

/// The file server `name` came from: relative to `workspace` when it is inside it
/// (`.mcp.json`, `.steward/config.toml`), else its full path (the user's configuration).
fn source(config: &steward_config::Config, workspace: &Path, name: &str) -> String {
    match config.entry_sources.get(&format!("mcp_servers.{name}")) {
        Some(file) => {
            let canonical = (std::fs::canonicalize(workspace), std::fs::canonicalize(file));
            let relative = match &canonical {
                (Ok(workspace), Ok(file)) => file.strip_prefix(workspace).ok(),
                _ => file.strip_prefix(workspace).ok(),
            };
            relative.unwrap_or(file).display().to_string()
        }
        None => "unknown".to_string(),
    }
}

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
        // Read-only by the user's `read_only_tools`, never by the server's annotations.
        let read_only = listing.tools.iter().filter(|t| t.server == name && !t.spec.writes).count();
        let state_text = match &state {
            ServerState::Disabled => "disabled".to_string(),
            ServerState::Idle => "not started".to_string(),
            ServerState::Running => "running".to_string(),
            ServerState::Failed { reason, .. } => format!("failed: {reason}"),
        };
        // A stdio server started outside the sandbox is named loudly.
        let unsandboxed =
            config.mcp_servers.get(&name).is_some_and(|server| server.command.is_some() && !server.sandbox);
        let from = source(&config, workspace, &name);
        let login = config.mcp_servers.get(&name).and_then(|server| login_text(&name, server));
        if json {
            let (logged_in, expires_at) = login.as_ref().map_or((None, None), |(l, e, _)| (Some(*l), *e));
            println!(
                "{}",
                json!({"server": name, "state": state_text, "tools": tools, "read_only_tools": read_only,
                    "sandboxed": !unsandboxed, "source": from, "logged_in": logged_in, "expires_at": expires_at})
            );
        } else if let Some((_, _, login)) = login {
            println!(
                "{name}: {state_text} · {tools} tool(s), {read_only} read-only by configuration · {login} · from {from}"
            );
        } else if unsandboxed {
            println!(
                "{name}: {state_text} · {tools} tool(s), {read_only} read-only by configuration · NOT SANDBOXED (sandbox = false) · from {from}"
            );
        } else {
            println!("{name}: {state_text} · {tools} tool(s), {read_only} read-only by configuration · from {from}");
        }
    }
    Ok(0)
}

/// `steward mcp tools [SERVER]`: one line per tool, its registry name, `[read-only]` when the
/// user's `read_only_tools` declares it so (a server's own annotations never do), then its
/// description.
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
                json!({"name": tool.spec.name, "server": tool.server, "tool": tool.tool,
                    "read_only": !tool.spec.writes, "description": tool.spec.description})
            );
        } else {
            let marker = if tool.spec.writes { "" } else { "  [read-only by configuration]" };
            println!("{}{marker}  {}", tool.spec.name, tool.spec.description.replace('\n', " "));
        }
    }
    Ok(0)
}

/// `steward mcp call SERVER TOOL --args JSON` (or `steward mcp call SERVER__TOOL`, the name
/// `steward mcp tools` prints): one call through the whole control layer (policy, approval,
/// audit, redaction), as a run whose scripted planner makes exactly that call.
///
/// Prints the run's progress and then the tool's result text, redacted and capped as a model
/// would see it, on stdout. With `json`, stdout is one JSON object instead (see
/// [`CallResult`]) and no progress is printed; prompts still go to stderr. A tool the server's
/// `tool_deny` or `tool_allow` hides is refused, naming the entry.
pub async fn call(workspace: &Path, server: &str, tool: Option<&str>, args: &str, json: bool) -> Result<u8> {
    let arguments: serde_json::Value =
        serde_json::from_str(args).map_err(|e| usage_error(&format!("--args is not JSON: {e}")))?;
    let (config, manager) = manager(workspace)?;
    let manager = Arc::new(manager);
    let listing = manager.tools().await;
    let found = match tool {
        Some(tool) => listing.tools.iter().find(|t| t.server == server && t.tool == tool),
        None => listing.tools.iter().find(|t| t.spec.name == server),
    };
    let Some(found) = found else {
        for failure in &listing.failures {
            eprintln!("steward: {failure}");
        }
        return Err(not_offered(&config, workspace, server, tool));
    };
    let scenario = format!(
        "[[round]]\n[[round.tool_call]]\nid = \"call_mcp\"\nname = {}\narguments_raw = {}\n[[round]]\ntext = \"(the MCP call is done)\"\n",
        toml::Value::String(found.spec.name.clone()),
        toml::Value::String(arguments.to_string())
    );
    let result = Arc::new(CallResult::new(json, &found.server, &found.tool));
    let observer: Arc<dyn EventObserver> = result.clone();
    let task = format!("mcp call {} {}", found.server, found.tool);
    let code = crate::commands::run_scripted(workspace, &scenario, &task, Some(observer)).await?;
    if json {
        println!("{}", result.json(&found.spec.name));
    }
    Ok(code)
}

/// The usage error of a call to a tool that is not offered: hidden by the server's own
/// `tool_deny` / `tool_allow` (named, with the file that sets it), a server that is not
/// configured, or a tool the server does not list. `tool` is `None` when `server` is the
/// qualified name `SERVER__TOOL`.
fn not_offered(config: &steward_config::Config, workspace: &Path, server: &str, tool: Option<&str>) -> anyhow::Error {
    let (server, tool) = match tool {
        Some(tool) => (server, tool),
        // The longest configured server name the qualified name starts with.
        None => match config
            .mcp_servers
            .keys()
            .filter_map(|name| server.strip_prefix(&format!("{name}__")).map(|tool| (name.as_str(), tool)))
            .max_by_key(|(name, _)| name.len())
        {
            Some(split) => split,
            None => {
                return usage_error(&format!(
                    "no MCP tool `{server}` is offered: name it as `steward mcp tools` prints it (SERVER__TOOL), or as SERVER TOOL"
                ));
            }
        },
    };
    let Some(settings) = config.mcp_servers.get(server) else {
        return usage_error(&format!("no MCP server `{server}` is configured; `steward mcp list` shows them"));
    };
    if let Some(rule) = settings.hidden_by(tool) {
        return usage_error(&format!(
            "tool `{tool}` of server `{server}` is denied by its {rule} ([mcp_servers.{server}] in {}): it is never offered or called",
            source(config, workspace, server)
        ));
    }
    usage_error(&format!("server `{server}` offers no tool `{tool}`; `steward mcp tools {server}` lists them"))
}

/// What `steward mcp call` shows of its run: the terminal printer's lines with the tool's
/// result text after them, or (`--json`) the outcome gathered for one JSON object:
/// `{"run_id", "tool", "status": "completed" | "failed" | "denied" | "rejected" |
/// "not_run", "output": text (redacted, capped; completed only), "output_chars": number
/// (before capping), "duration_ms", "error": text (failed, denied, rejected)}`.
struct CallResult {
    /// `None` with `--json`: nothing but the final object goes to stdout.
    human: Option<ui::Human>,
    /// What the run's first line names instead of its scripted planner: `server · tool`.
    called: String,
    seen: Mutex<Value>,
}

impl CallResult {
    fn new(json: bool, server: &str, tool: &str) -> Self {
        CallResult {
            human: (!json).then(ui::Human::default),
            called: format!("MCP server {server} · tool {tool}"),
            seen: Mutex::new(json!({"status": "not_run"})),
        }
    }

    /// The JSON object for `tool`.
    fn json(&self, tool: &str) -> Value {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
        seen["tool"] = json!(tool);
        seen
    }
}

impl EventObserver for CallResult {
    fn on_event(&self, event: &Event) {
        if let Some(human) = &self.human {
            match &event.kind {
                // The run's planner is the script making this one call: name the call instead.
                EventKind::RunStarted { workspace, .. } => {
                    eprintln!("steward: run {} · {} · {workspace}", event.run_id, self.called);
                }
                _ => human.on_event(event),
            }
        }
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen["run_id"] = json!(event.run_id);
        match &event.kind {
            EventKind::ToolCompleted { duration_ms, output_chars, output, .. } => {
                if self.human.is_some() {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{output}");
                    let _ = out.flush();
                }
                *seen = json!({
                    "run_id": event.run_id, "status": "completed", "output": output,
                    "output_chars": output_chars, "duration_ms": duration_ms,
                });
            }
            EventKind::ToolFailed { duration_ms, error, .. } => {
                *seen = json!({"run_id": event.run_id, "status": "failed", "error": error, "duration_ms": duration_ms});
            }
            EventKind::ToolDenied { rule, reason, .. } => {
                *seen = json!({"run_id": event.run_id, "status": "denied", "error": format!("denied by `{rule}`: {reason}")});
            }
            EventKind::ToolRejected { reason, .. } => {
                *seen = json!({"run_id": event.run_id, "status": "rejected", "error": reason});
            }
            EventKind::ToolApprovalExpired { .. } => {
                *seen = json!({"run_id": event.run_id, "status": "rejected", "error": "approval expired"});
            }
            _ => {}
        }
    }
}
