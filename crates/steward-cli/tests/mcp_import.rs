//! `steward mcp import FILE`: a project's `.mcp.json` and a Codex `config.toml` become
//! `[mcp_servers.NAME]` tables that Steward's own loader accepts; anything not understood is an
//! error naming the file and the entry.

use crate::common;

use common::{Env, code, stderr, stdout};

const MCP_JSON: &str = r#"{
  "mcpServers": {
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"],
      "env": { "LOG_LEVEL": "info", "GITHUB_TOKEN": "${GH_TOKEN}" }
    },
    "remote": {
      "type": "http",
      "url": "https://mcp.example.test/mcp",
      "headers": { "Authorization": "Bearer ${REMOTE_TOKEN}" }
    }
  }
}"#;

const CODEX_TOML: &str = r#"
model = "o3"

[mcp_servers.docs]
command = "docs-server"
args = ["--stdio"]
env_vars = ["DOCS_HOME"]
startup_timeout_sec = 20
tool_timeout_sec = 90.5
disabled_tools = ["write_*"]

[mcp_servers.api]
url = "https://api.example.test/mcp"
bearer_token_env_var = "API_TOKEN"
http_headers = { "X-Team" = "core" }
"#;

#[test]
fn a_mcp_json_file_becomes_tables_the_loader_accepts() {
    let env = Env::new();
    env.write(".mcp.json", MCP_JSON);
    let out = env.steward(&["mcp", "import", ".mcp.json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let parsed: toml::Table = toml::from_str(&text).expect("TOML");
    let files = &parsed["mcp_servers"]["files"];
    let argv: Vec<&str> = files["command"].as_array().expect("argv").iter().filter_map(|v| v.as_str()).collect();
    assert_eq!(argv, ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]);
    assert_eq!(files["env"]["LOG_LEVEL"].as_str(), Some("info"));
    assert_eq!(files["env"]["GITHUB_TOKEN"]["env"].as_str(), Some("GH_TOKEN"));
    let auth = &parsed["mcp_servers"]["remote"]["headers"]["Authorization"];
    assert_eq!((auth["env"].as_str(), auth["prefix"].as_str()), (Some("REMOTE_TOKEN"), Some("Bearer ")));

    // The printed tables load as the user's configuration.
    env.user_config(&text);
    let shown = env.steward(&["config", "show"]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    assert!(stdout(&shown).contains("# mcp_servers.remote from"), "{}", stdout(&shown));
}

#[test]
fn a_codex_config_becomes_tables_the_loader_accepts() {
    let env = Env::new();
    env.write("codex.toml", CODEX_TOML);
    let out = env.steward(&["mcp", "import", "codex.toml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let parsed: toml::Table = toml::from_str(&text).expect("TOML");
    let docs = &parsed["mcp_servers"]["docs"];
    assert_eq!(docs["startup_timeout_ms"].as_integer(), Some(20_000));
    assert_eq!(docs["call_timeout_ms"].as_integer(), Some(90_500));
    assert_eq!(docs["env"]["DOCS_HOME"]["env"].as_str(), Some("DOCS_HOME"));
    assert_eq!(docs["tool_deny"].as_array().map(Vec::len), Some(1));
    let api = &parsed["mcp_servers"]["api"]["headers"];
    assert_eq!(api["Authorization"]["env"].as_str(), Some("API_TOKEN"));
    assert_eq!(api["X-Team"].as_str(), Some("core"));
    env.user_config(&text);
    let shown = env.steward(&["config", "show"]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
}

#[test]
fn what_is_not_understood_is_named_with_its_file_and_entry() {
    let env = Env::new();
    for (body, expected) in [
        (r#"{"mcpServers": {"old": {"type": "sse", "url": "https://x.test/sse"}}}"#, "mcpServers.old: `sse`"),
        (
            r#"{"mcpServers": {"odd": {"command": "x", "autoApprove": ["a"]}}}"#,
            "mcpServers.odd: `autoApprove` is not understood",
        ),
        (r#"{"mcpServers": {"dflt": {"command": "x", "env": {"A": "${B:-c}"}}}}"#, "mcpServers.dflt: `env.A`"),
        (r#"{"mcpServers": {"both": {"command": "x", "url": "https://x.test/mcp"}}}"#, "both"),
        (r#"{"servers": {}}"#, "no `mcpServers`"),
    ] {
        env.write("bad.json", body);
        let out = env.steward(&["mcp", "import", "bad.json"]);
        assert_eq!(code(&out), 1, "{body}: {}", stdout(&out));
        assert!(stdout(&out).is_empty(), "nothing printed on error: {}", stdout(&out));
        assert!(stderr(&out).contains("bad.json") && stderr(&out).contains(expected), "{body}: {}", stderr(&out));
    }
}

#[test]
fn a_literal_secret_is_never_printed_and_becomes_a_variable_reference() {
    let env = Env::new();
    env.write(
        ".mcp.json",
        r#"{"mcpServers": {
            "gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_literalvalue0123456789", "LOG_LEVEL": "info"}},
            "remote": {"type": "http", "url": "https://mcp.example.test/mcp",
                       "headers": {"Authorization": "Bearer sk-literal-header-value", "X-Team": "core"}}
        }}"#,
    );
    let out = env.steward(&["mcp", "import", ".mcp.json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (text, warnings) = (stdout(&out), stderr(&out));
    for secret in ["ghp_literalvalue0123456789", "sk-literal-header-value"] {
        assert!(!text.contains(secret) && !warnings.contains(secret), "{secret} shown:\n{text}\n{warnings}");
    }
    let parsed: toml::Table = toml::from_str(&text).expect("TOML");
    let gh = &parsed["mcp_servers"]["gh"]["env"];
    assert_eq!(gh["GITHUB_TOKEN"]["env"].as_str(), Some("GITHUB_TOKEN"));
    assert_eq!(gh["LOG_LEVEL"].as_str(), Some("info"));
    let headers = &parsed["mcp_servers"]["remote"]["headers"];
    let auth = &headers["Authorization"];
    assert_eq!((auth["env"].as_str(), auth["prefix"].as_str()), (Some("MCP_REMOTE_AUTHORIZATION"), Some("Bearer ")));
    assert_eq!(headers["X-Team"].as_str(), Some("core"));
    assert!(warnings.contains("$MCP_REMOTE_AUTHORIZATION") && warnings.contains("$GITHUB_TOKEN"), "{warnings}");
}

#[test]
fn a_secret_under_an_innocent_name_or_in_an_argument_is_not_printed_either() {
    let env = Env::new();
    env.write(
        ".mcp.json",
        r#"{"mcpServers": {
            "gh": {"command": "gh-mcp", "args": ["--token", "ghp_0123456789abcdefghijABCDEFGHIJ012345"],
                   "env": {"UPSTREAM": "ghp_abcdefghij0123456789ABCDEFGHIJ987654"}}
        }}"#,
    );
    let out = env.steward(&["mcp", "import", ".mcp.json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (text, warnings) = (stdout(&out), stderr(&out));
    for secret in ["ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_abcdefghij0123456789ABCDEFGHIJ987654"] {
        assert!(!text.contains(secret) && !warnings.contains(secret), "{secret} shown:\n{text}\n{warnings}");
    }
    let parsed: toml::Table = toml::from_str(&text).expect("TOML");
    assert_eq!(parsed["mcp_servers"]["gh"]["env"]["UPSTREAM"]["env"].as_str(), Some("UPSTREAM"));
    assert!(warnings.contains("argument, URL or other value"), "{warnings}");
}
