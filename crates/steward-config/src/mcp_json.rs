//! MCP server entries written for other clients, read as Steward's `[mcp_servers.NAME]`
//! tables: a project's `.mcp.json` (loaded by [`super::Config::load`] in a trusted workspace)
//! and what `steward mcp import` converts.
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
//! and the entry. Every result is checked as `[mcp_servers]` tables are.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toml::Table;

use super::ConfigError;

/// The name of a project's MCP server file, at the workspace root.
pub const MCP_JSON: &str = ".mcp.json";

/// Adds the servers of `workspace`'s `.mcp.json` to the `[mcp_servers]` of `merged` (Steward's
/// own files, already merged) when the workspace is `trusted`, each noted in `sources`; a
/// server `merged` already defines is kept as it is. Returns the file when its servers were
/// read. An untrusted workspace's file is not read, and one that cannot be read or understood
/// adds nothing: either way a line in `warnings` says why.
pub(super) fn read_mcp_json(
    workspace: &Path,
    trusted: bool,
    merged: &mut Table,
    sources: &mut BTreeMap<String, PathBuf>,
    warnings: &mut Vec<String>,
) -> Option<PathBuf> {
    let path = workspace.join(MCP_JSON);
    if !path.exists() {
        return None;
    }
    if !trusted {
        warnings.push(format!(
            "{}: MCP servers ignored: the workspace is not trusted (trust it with `steward trust {}`)",
            path.display(),
            workspace.display()
        ));
        return None;
    }
    let servers =
        std::fs::read_to_string(&path).map_err(|e| error(&path, e)).and_then(|text| mcp_json_servers(&path, &text));
    let servers = match servers {
        Ok(servers) => servers,
        Err(e) => {
            warnings.push(format!("{e} (its MCP servers are not loaded)"));
            return None;
        }
    };
    let section = merged.entry("mcp_servers").or_insert_with(|| toml::Value::Table(Table::new()));
    // Anything but a table fails when the merged configuration is resolved.
    let section = section.as_table_mut()?;
    for (name, server) in servers {
        if section.contains_key(&name) {
            continue;
        }
        sources.insert(format!("mcp_servers.{name}"), path.clone());
        section.insert(name, server);
    }
    Some(path)
}

/// An error about `file`.
fn error(file: &Path, message: impl std::fmt::Display) -> ConfigError {
    ConfigError::Entry { path: file.to_path_buf(), message: message.to_string() }
}

/// The Steward tables of every server in `text` (JSON or TOML, by the first character), each
/// checked by [`steward_mcp::McpServerConfig::validate`]. Errors name `file` and the entry
/// (`mcpServers.NAME: …`); a JSON syntax error names its line and column.
pub fn convert_servers(file: &Path, text: &str) -> Result<Table, ConfigError> {
    if text.trim_start().starts_with('{') {
        return mcp_json_servers(file, text);
    }
    let table: Table = toml::from_str(text).map_err(|e| error(file, format!("not valid TOML: {}", e.message())))?;
    let servers = from_codex(file, &table)?;
    check(file, &servers)?;
    Ok(servers)
}

/// The Steward tables of the `mcpServers` of a JSON file such as a project's `.mcp.json`,
/// each checked by [`steward_mcp::McpServerConfig::validate`].
pub fn mcp_json_servers(file: &Path, text: &str) -> Result<Table, ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| error(file, format!("not valid JSON: {e}")))?;
    let servers = from_json(file, &value)?;
    check(file, &servers)?;
    Ok(servers)
}

/// Each table deserialises as an `[mcp_servers.NAME]` table and passes its checks.
fn check(file: &Path, servers: &Table) -> Result<(), ConfigError> {
    for (name, table) in servers {
        let config: steward_mcp::McpServerConfig =
            table.clone().try_into().map_err(|e: toml::de::Error| error(file, format!("{name}: {}", e.message())))?;
        config.validate(name).map_err(|e| error(file, format!("{name}: {e}")))?;
    }
    Ok(())
}

/// Replaces every literal value in `table`'s `env` and `headers` that is under a secret-looking
/// name (an `Authorization` header included) or that `patterns` finds a secret in with a reference to an environment variable, so the
/// secret is never printed: `env` entries read the variable of their own name, headers
/// `MCP_<SERVER>_<HEADER>` (upper case, other characters as `_`), a `Bearer ` prefix kept.
/// Returns each replaced key with its variable.
pub fn hide_literal_secrets(
    server: &str,
    table: &mut Table,
    patterns: &steward_policy::Redactor,
) -> Vec<(String, String)> {
    let mut replaced = Vec::new();
    for section in ["env", "headers"] {
        let Some(values) = table.get_mut(section).and_then(toml::Value::as_table_mut) else { continue };
        for (key, value) in values.iter_mut() {
            let Some(literal) = value.as_str() else { continue };
            let named_secret = steward_sandbox::env_name_looks_secret(key) || key.eq_ignore_ascii_case("authorization");
            if !named_secret && !patterns.contains_secret(literal) {
                continue;
            }
            let variable = if section == "env" { key.clone() } else { variable_name(&format!("MCP_{server}_{key}")) };
            let mut reference = Table::new();
            reference.insert("env".into(), toml::Value::String(variable.clone()));
            if let Some(prefix) =
                ["Bearer ", "bearer ", "Basic ", "Token "].into_iter().find(|p| literal.starts_with(p))
            {
                reference.insert("prefix".into(), toml::Value::String(prefix.to_string()));
            }
            *value = toml::Value::Table(reference);
            replaced.push((format!("{section}.{key}"), variable));
        }
    }
    replaced
}

/// `text` as an environment variable name: ASCII letters upper-cased, digits kept, anything
/// else `_`.
fn variable_name(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect()
}

/// `mcpServers` of a `.mcp.json` or Claude Desktop file.
fn from_json(file: &Path, value: &Value) -> Result<Table, ConfigError> {
    let Some(entries) = value.get("mcpServers") else {
        return Err(error(file, "no `mcpServers` object"));
    };
    let Some(entries) = entries.as_object() else {
        return Err(error(file, "`mcpServers` is not an object"));
    };
    let mut out = Table::new();
    for (name, entry) in entries {
        let fail = |message: String| error(file, format!("mcpServers.{name}: {message}"));
        let Some(entry) = entry.as_object() else { return Err(fail("not an object".into())) };
        let mut table = Table::new();
        let mut args = Vec::new();
        for (key, field) in entry {
            match key.as_str() {
                "command" => table.insert(
                    "command".into(),
                    toml::Value::Array(vec![string(field, key).map_err(|e| fail(e.to_string()))?.into()]),
                ),
                "args" => {
                    args = strings(field, key).map_err(|e| fail(e.to_string()))?;
                    None
                }
                "cwd" => table.insert("cwd".into(), string(field, key).map_err(|e| fail(e.to_string()))?.into()),
                "url" => table.insert("url".into(), string(field, key).map_err(|e| fail(e.to_string()))?.into()),
                "env" | "headers" => {
                    let Some(values) = field.as_object() else { return Err(fail(format!("`{key}` is not an object"))) };
                    let mut map = Table::new();
                    for (name, value) in values {
                        let text = value.as_str().ok_or_else(|| fail(format!("`{key}.{name}` is not a string")))?;
                        map.insert(name.clone(), reference(text).map_err(|m| fail(format!("`{key}.{name}`: {m}")))?);
                    }
                    table.insert(key.clone(), toml::Value::Table(map))
                }
                "type" => match field.as_str() {
                    Some("stdio" | "http" | "streamable-http" | "streamableHttp") => None,
                    Some("sse") => {
                        return Err(fail("`sse` servers are not supported: Steward speaks streamable HTTP".into()));
                    }
                    _ => return Err(fail(format!("`type` {field} is not understood (stdio, http, streamable-http)"))),
                },
                other => return Err(fail(format!("`{other}` is not understood"))),
            };
        }
        if !args.is_empty() {
            match table.get_mut("command") {
                Some(toml::Value::Array(argv)) => argv.extend(args.into_iter().map(toml::Value::String)),
                _ => return Err(fail("`args` without `command`".into())),
            }
        }
        out.insert(name.clone(), toml::Value::Table(table));
    }
    Ok(out)
}

/// `[mcp_servers.NAME]` of a Codex `config.toml`.
fn from_codex(file: &Path, table: &Table) -> Result<Table, ConfigError> {
    let Some(entries) = table.get("mcp_servers") else {
        return Err(error(file, "no `[mcp_servers.NAME]` tables"));
    };
    let Some(entries) = entries.as_table() else {
        return Err(error(file, "`mcp_servers` is not a table"));
    };
    let mut out = Table::new();
    for (name, entry) in entries {
        let fail = |message: String| error(file, format!("mcp_servers.{name}: {message}"));
        let Some(entry) = entry.as_table() else { return Err(fail("not a table".into())) };
        let json = |v: &toml::Value| serde_json::to_value(v).unwrap_or(Value::Null);
        let mut table = Table::new();
        let mut args = Vec::new();
        let mut headers = Table::new();
        let mut env = Table::new();
        for (key, field) in entry {
            let field_json = json(field);
            match key.as_str() {
                "command" => {
                    table.insert(
                        "command".into(),
                        toml::Value::Array(vec![string(&field_json, key).map_err(|e| fail(e.to_string()))?.into()]),
                    );
                }
                "args" => args = strings(&field_json, key).map_err(|e| fail(e.to_string()))?,
                "cwd" | "url" => {
                    table.insert(key.clone(), string(&field_json, key).map_err(|e| fail(e.to_string()))?.into());
                }
                "env" | "http_headers" => {
                    let Some(values) = field.as_table() else { return Err(fail(format!("`{key}` is not a table"))) };
                    let target = if key == "env" { &mut env } else { &mut headers };
                    for (name, value) in values {
                        let text = value.as_str().ok_or_else(|| fail(format!("`{key}.{name}` is not a string")))?;
                        target.insert(name.clone(), text.into());
                    }
                }
                "env_vars" => {
                    for var in strings(&field_json, key).map_err(|e| fail(e.to_string()))? {
                        env.insert(var.clone(), env_ref(&var, ""));
                    }
                }
                "env_http_headers" => {
                    let Some(values) = field.as_table() else { return Err(fail(format!("`{key}` is not a table"))) };
                    for (name, value) in values {
                        let var = value.as_str().ok_or_else(|| fail(format!("`{key}.{name}` is not a string")))?;
                        headers.insert(name.clone(), env_ref(var, ""));
                    }
                }
                "bearer_token_env_var" => {
                    let var = string(&field_json, key).map_err(|e| fail(e.to_string()))?;
                    headers.insert("Authorization".into(), env_ref(&var, "Bearer "));
                }
                "enabled" => {
                    let on = field.as_bool().ok_or_else(|| fail("`enabled` is not a boolean".into()))?;
                    table.insert("enabled".into(), on.into());
                }
                "enabled_tools" | "disabled_tools" => {
                    let globs = strings(&field_json, key).map_err(|e| fail(e.to_string()))?;
                    let to = if key == "enabled_tools" { "tool_allow" } else { "tool_deny" };
                    table.insert(to.into(), toml::Value::Array(globs.into_iter().map(toml::Value::String).collect()));
                }
                "startup_timeout_sec" | "tool_timeout_sec" => {
                    let seconds = field
                        .as_float()
                        .or_else(|| field.as_integer().map(|i| i as f64))
                        .filter(|s| *s > 0.0 && s.is_finite())
                        .ok_or_else(|| fail(format!("`{key}` is not a positive number of seconds")))?;
                    let to = if key == "startup_timeout_sec" { "startup_timeout_ms" } else { "call_timeout_ms" };
                    table.insert(to.into(), toml::Value::Integer((seconds * 1000.0).round() as i64));
                }
                other => return Err(fail(format!("`{other}` is not understood"))),
            }
        }
        if !args.is_empty() {
            match table.get_mut("command") {
                Some(toml::Value::Array(argv)) => argv.extend(args.into_iter().map(toml::Value::String)),
                _ => return Err(fail("`args` without `command`".into())),
            }
        }
        if !env.is_empty() {
            table.insert("env".into(), toml::Value::Table(env));
        }
        if !headers.is_empty() {
            table.insert("headers".into(), toml::Value::Table(headers));
        }
        out.insert(name.clone(), toml::Value::Table(table));
    }
    Ok(out)
}

/// A field of an imported server entry with the wrong type; holds the field's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum FieldError {
    /// Not a string.
    #[error("`{0}` is not a string")]
    Text(String),
    /// Not an array.
    #[error("`{0}` is not an array of strings")]
    List(String),
    /// An array with an item that is not a string.
    #[error("`{0}` holds a value that is not a string")]
    Item(String),
}

fn string(value: &Value, key: &str) -> Result<String, FieldError> {
    value.as_str().map(str::to_string).ok_or_else(|| FieldError::Text(key.to_string()))
}

fn strings(value: &Value, key: &str) -> Result<Vec<String>, FieldError> {
    let items = value.as_array().ok_or_else(|| FieldError::List(key.to_string()))?;
    items
        .iter()
        .map(|item| item.as_str().map(str::to_string).ok_or_else(|| FieldError::Item(key.to_string())))
        .collect()
}

/// A `.mcp.json` value that cannot become an environment reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ReferenceError {
    /// A `$` and a `{` that do not form `${VAR}`.
    #[error("a `$` reference that is not `${{VAR}}`")]
    NotAReference,
    /// `${` is never closed.
    #[error("`${{` without `}}`")]
    Unclosed,
    /// Text follows the reference.
    #[error("text after `${{VAR}}` is not supported (only a prefix before it)")]
    TextAfter,
    /// The name inside is not a plain variable name (e.g. `${VAR:-default}`); holds it.
    #[error("`${{{0}}}` is not understood (`${{VAR:-default}}` and the like are not supported)")]
    NotUnderstood(String),
}

/// `{ env = VAR, prefix = … }`.
fn env_ref(var: &str, prefix: &str) -> toml::Value {
    let mut table = Table::new();
    table.insert("env".into(), var.into());
    if !prefix.is_empty() {
        table.insert("prefix".into(), prefix.into());
    }
    toml::Value::Table(table)
}

/// A `.mcp.json` value: literal text, `${VAR}`, or `PREFIX${VAR}` (the variable last).
fn reference(text: &str) -> Result<toml::Value, ReferenceError> {
    let Some(start) = text.find("${") else {
        if text.contains('$') && text.contains('{') {
            return Err(ReferenceError::NotAReference);
        }
        return Ok(text.into());
    };
    let rest = &text[start + 2..];
    let Some(end) = rest.find('}') else { return Err(ReferenceError::Unclosed) };
    let var = &rest[..end];
    if !rest[end + 1..].is_empty() {
        return Err(ReferenceError::TextAfter);
    }
    if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(ReferenceError::NotUnderstood(var.to_string()));
    }
    Ok(env_ref(var, &text[..start]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_become_environment_values() {
        assert_eq!(reference("plain").ok(), Some("plain".into()));
        assert_eq!(reference("${TOKEN}").ok(), Some(env_ref("TOKEN", "")));
        assert_eq!(reference("Bearer ${TOKEN}").ok(), Some(env_ref("TOKEN", "Bearer ")));
        assert!(reference("${TOKEN:-x}").is_err());
        assert!(reference("${A}/path").is_err());
    }
}
