//! `steward mcp import FILE`: MCP server entries written for other clients, printed as
//! Steward's `[mcp_servers.NAME]` tables.
//!
//! Understood:
//! - JSON with an `mcpServers` object (a project's `.mcp.json`, Claude Desktop's
//!   `claude_desktop_config.json`): per entry `command` + `args`, `env`, `cwd`, `url`,
//!   `headers`, and `type` (`stdio`, `http` or `streamable-http`). A value `${VAR}` becomes
//!   `{ env = "VAR" }`, and `Bearer ${VAR}` `{ env = "VAR", prefix = "Bearer " }`.
//! - TOML with `[mcp_servers.NAME]` tables (Codex's `config.toml`): `command` + `args`, `env`,
//!   `env_vars`, `cwd`, `url`, `bearer_token_env_var`, `http_headers`, `env_http_headers`,
//!   `enabled`, `enabled_tools`, `disabled_tools`, `startup_timeout_sec`, `tool_timeout_sec`.
//!
//! Anything else (another key, an `sse` server, `${VAR:-default}`) is an error naming the file
//! and the entry; nothing is printed then. Every result is checked as Steward's configuration
//! loader checks it. The conversion is the configuration loader's own
//! ([`steward_config::mcp_json`]), which also reads a trusted workspace's `.mcp.json`.

use std::path::Path;

use anyhow::{Result, anyhow};
use steward_config::mcp_json::{convert_servers, hide_literal_secrets};
use toml::Table;

/// Prints the servers of `file` as `[mcp_servers.NAME]` TOML on stdout (a header comment names
/// the file); exit code 0. Errors: the file cannot be read or parsed, or an entry holds
/// something not understood (named `FILE: mcpServers.NAME: …`).
pub fn import(file: &Path) -> Result<u8> {
    let text = std::fs::read_to_string(file).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let servers = convert_servers(file, &text)?;
    if servers.is_empty() {
        return Err(anyhow!(
            "{}: no MCP servers found (expected `mcpServers` or `[mcp_servers.NAME]`)",
            file.display()
        ));
    }
    let mut servers = servers;
    let patterns = steward_policy::Redactor::new(Vec::new());
    for (name, table) in servers.iter_mut() {
        let Some(table) = table.as_table_mut() else { continue };
        for (key, variable) in hide_literal_secrets(name, table, &patterns) {
            eprintln!(
                "steward: warning: {}: mcp server `{name}`: `{key}` held a literal secret, which is not printed; it now reads ${variable}: export it before starting steward",
                file.display()
            );
        }
    }
    let mut root = Table::new();
    root.insert("mcp_servers".into(), toml::Value::Table(servers));
    let body = toml::to_string_pretty(&root).map_err(|e| anyhow!("{}: cannot write TOML: {e}", file.display()))?;
    // A secret elsewhere (an argument, a URL, a value under an innocent name) has no variable
    // to move to: it is printed redacted, and the warning says so.
    let redacted = patterns.redact(&body);
    if redacted != body {
        eprintln!(
            "steward: warning: {}: a secret in an argument, URL or other value is printed as {}; move it into an environment variable before using these tables",
            file.display(),
            steward_policy::REDACTED
        );
    }
    let body = redacted;
    print!("# MCP servers imported from {}\n{body}", file.display());
    Ok(0)
}
