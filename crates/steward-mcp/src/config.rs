//! `[mcp_servers.NAME]` configuration (SPEC M1, N).
//!
//! ```toml
//! [mcp_servers.files]
//! command = ["mcp-server-filesystem", "/srv/data"]   # stdio
//! env = { LOG_LEVEL = "info", GITHUB_TOKEN = { env = "GH_TOKEN" } }
//! tool_deny = ["write_*"]
//! read_only_tools = ["read_*", "list_directory"]      # read-only by *your* word, not the server's
//!
//! [mcp_servers.github]
//! url = "https://example.test/mcp"                     # streamable HTTP
//! headers = { Authorization = { env = "GH_MCP_TOKEN", prefix = "Bearer " } }
//! risk = "low"
//! ```
//!
//! Values in `env` and `headers` are never logged: `Debug` and `Serialize` print
//! `<redacted>` instead of literal values (environment variable *names* are shown).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize, Serializer};
use steward_protocol::RiskLevel;

use crate::McpError;

/// Header names the streamable HTTP transport sets itself; configuring them is refused.
pub(crate) const RESERVED_HEADERS: &[&str] = &["accept", "mcp-session-id", "mcp-protocol-version", "last-event-id"];
/// Default `startup_timeout_ms`: 10 s for spawn (or connect) plus `initialize`.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 10_000;
/// Default `call_timeout_ms`: 60 s per `tools/call`.
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 60_000;
/// Default `max_output_bytes`: 32 KiB of text per call result (case B25).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 32 * 1024;
/// Smallest accepted `max_output_bytes`: room for a head, a tail and the marker.
pub const MIN_MAX_OUTPUT_BYTES: usize = 1024;
/// Longest accepted server name, in ASCII characters; leaves room for `__tool` within the 64
/// characters providers accept.
pub const MAX_SERVER_NAME_CHARS: usize = 32;

/// A value given literally or read from a named environment variable when the server starts.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ValueSource {
    /// A literal value: `NAME = "value"`.
    Literal(String),
    /// `{ env = "VAR", prefix = "Bearer " }`: the variable's value (unset or empty is an
    /// error when the server starts), after the optional prefix.
    Env(EnvValue),
}

/// A value read from the environment of the Steward process.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EnvValue {
    /// Environment variable name.
    pub env: String,
    /// Text put before the variable's value (e.g. `Bearer `); empty by default.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
}

/// Why a [`ValueSource`] has no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The environment variable it names is unset or empty (the name, never a value).
    #[error("environment variable `{0}` is unset or empty")]
    UnsetVariable(String),
}

impl ValueSource {
    /// The value, reading the environment through `lookup` (`Err` names the variable when it
    /// is unset or empty; the message never contains a value).
    pub fn resolve(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ValueError> {
        match self {
            ValueSource::Literal(value) => Ok(value.clone()),
            ValueSource::Env(EnvValue { env, prefix }) => match lookup(env) {
                Some(value) if !value.is_empty() => Ok(format!("{prefix}{value}")),
                _ => Err(ValueError::UnsetVariable(env.clone())),
            },
        }
    }
}

impl fmt::Debug for ValueSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueSource::Literal(_) => f.write_str("<redacted>"),
            ValueSource::Env(EnvValue { env, .. }) => write!(f, "{{ env = {env:?} }}"),
        }
    }
}

impl Serialize for ValueSource {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ValueSource::Literal(_) => serializer.serialize_str("<redacted>"),
            ValueSource::Env(value) => value.serialize(serializer),
        }
    }
}

/// One `[mcp_servers.NAME]` table. Exactly one transport: `command` (stdio) or `url`
/// (streamable HTTP). Checked by [`McpServerConfig::validate`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Stdio transport: program and arguments, e.g. `["mcp-server-filesystem", "/srv"]`.
    /// The program is looked up in `PATH` like any command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Stdio only: working directory of the server process (default: Steward's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Stdio only: variables set for the server. The child gets the sandbox allow-list
    /// ([`steward_sandbox::DEFAULT_ENV_ALLOW`] and `LC_*`) from Steward's environment plus
    /// these, nothing else.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, ValueSource>,
    /// Streamable HTTP transport: the endpoint, `http://` or `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP only: headers sent with every request. Never logged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, ValueSource>,
    /// `false` leaves the server out entirely (default `true`).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// `true`: a run cannot do without this server. When it cannot be started or listed as
    /// the run is prepared, the run fails at once with class `mcp_unavailable`, before any
    /// model is asked, instead of going on without its tools (default `false`: the server is
    /// left out with a warning).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// Globs over the server's own tool names; when non-empty only matching tools are offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_allow: Vec<String>,
    /// Globs over the server's own tool names; matching tools are never offered (wins over
    /// `tool_allow`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_deny: Vec<String>,
    /// Globs over the server's own tool names that change nothing (no side effects), by the
    /// user's word. Only these are read-only for the gate; a server's own `readOnlyHint`
    /// annotation never makes a tool read-only (annotations are claims of the party that is
    /// not trusted). Every other tool of the server is a writing tool. Only the user's (or a
    /// trusted workspace's) configuration can set it: an untrusted workspace cannot configure
    /// MCP servers at all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only_tools: Vec<String>,
    /// Limit for starting (spawn or connect) and `initialize`, in ms (default 10,000).
    #[serde(default = "default_startup_timeout_ms")]
    pub startup_timeout_ms: u64,
    /// Limit for one `tools/list` or `tools/call`, in ms (default 60,000).
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// Largest result text handed back, in bytes (default 32 KiB); longer text keeps its head
    /// and tail around a marker.
    #[serde(default = "default_max_output_bytes")]
    pub max_output_bytes: usize,
    /// Risk level of this server's tools for the policy (default `medium`).
    #[serde(default = "default_risk")]
    pub risk: RiskLevel,
    /// Stdio only: start the server in Steward's sandbox (default `true`): its own mount
    /// namespace with `$HOME` an empty temporary folder (the top folder of `$HOME` holding
    /// the program, such as `~/.nvm`, stays), its own PID namespace (nothing it starts
    /// outlives it), the seccomp filter, an 8 GiB data limit, and the 60-minute sandbox
    /// lifetime (then it is stopped, and started again on its next use); network and writes
    /// as without it. `false` starts it unconfined, which `steward mcp list` names.
    #[serde(default = "default_true")]
    pub sandbox: bool,
    /// Stdio only: let the server create Unix sockets (default `false`: refused by the
    /// sandbox's seccomp filter; a server that talks to Docker needs `true`).
    #[serde(default)]
    pub unix_sockets: bool,
    /// HTTP only: log in to the server with MCP authorization (OAuth 2.1), `oauth = {}` for
    /// the defaults. Without it, a server that answers 401 asks for `steward mcp login NAME`
    /// too; the table only changes how the login goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthConfig>,
}

/// `[mcp_servers.NAME.oauth]`: how Steward logs in to an HTTP server that needs a login.
/// Every field is optional: with none, Steward finds the authorization server from the
/// MCP server's answers and registers itself there (client ID metadata document when
/// `client_metadata_url` is set and the server supports it, else dynamic registration).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// `authorization_code` (default: a person logs in in a browser) or
    /// `client_credentials` (machine use: no browser; needs `client_id` and `client_secret`
    /// or `private_key_file`).
    #[serde(default)]
    pub grant: OAuthGrant,
    /// A client ID registered with the authorization server beforehand; skips registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The secret of `client_id`, usually `{ env = "VAR" }`. Never logged or shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<ValueSource>,
    /// Scopes to ask for; empty (default) takes them from the server's 401 answer or its
    /// `scopes_supported`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// An `https://` address where Steward's client ID metadata document is published, used
    /// as the client ID when the authorization server supports such documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    /// `grant = "client_credentials"` with `private_key_jwt` instead of a secret: a PEM file
    /// holding the client's private key (PKCS#8 EC or RSA), which signs a short-lived
    /// assertion for each token request (RFC 7523).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_file: Option<PathBuf>,
    /// The assertion's algorithm with `private_key_file`: `ES256` (default), `ES384`,
    /// `RS256`, `RS384`, `RS512`, `PS256`, `PS384` or `PS512`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_algorithm: Option<String>,
    /// The loopback port the browser is sent back to (`http://127.0.0.1:PORT/callback`);
    /// default: any free port. A pre-registered client usually needs a fixed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_port: Option<u16>,
}

/// The `signing_algorithm`s of a `private_key_jwt` assertion.
pub(crate) const SIGNING_ALGORITHMS: &[&str] =
    &["ES256", "ES384", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"];

/// The OAuth grant a login uses.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthGrant {
    /// Authorization code with PKCE (S256): a person logs in in a browser.
    #[default]
    AuthorizationCode,
    /// Client credentials: the client logs in as itself (RFC 6749 §4.4).
    ClientCredentials,
}

fn default_true() -> bool {
    true
}
fn default_startup_timeout_ms() -> u64 {
    DEFAULT_STARTUP_TIMEOUT_MS
}
fn default_call_timeout_ms() -> u64 {
    DEFAULT_CALL_TIMEOUT_MS
}
fn default_max_output_bytes() -> usize {
    DEFAULT_MAX_OUTPUT_BYTES
}
fn default_risk() -> RiskLevel {
    RiskLevel::Medium
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("command", &self.command)
            .field("cwd", &self.cwd)
            .field("env", &self.env)
            .field("url", &self.url)
            .field("headers", &self.headers)
            .field("enabled", &self.enabled)
            .field("required", &self.required)
            .field("tool_allow", &self.tool_allow)
            .field("tool_deny", &self.tool_deny)
            .field("read_only_tools", &self.read_only_tools)
            .field("startup_timeout_ms", &self.startup_timeout_ms)
            .field("call_timeout_ms", &self.call_timeout_ms)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("risk", &self.risk)
            .field("sandbox", &self.sandbox)
            .field("unix_sockets", &self.unix_sockets)
            .field("oauth", &self.oauth)
            .finish()
    }
}

/// How a validated server is reached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdio.
    Stdio { program: String, args: Vec<String> },
    /// A streamable HTTP endpoint.
    Http { url: reqwest::Url },
}

impl McpServerConfig {
    /// A stdio server running `command` with every other setting at its default.
    pub fn stdio(command: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { command: Some(command.into_iter().map(Into::into).collect()), ..Self::empty() }
    }

    /// A streamable HTTP server at `url` with every other setting at its default.
    pub fn http(url: impl Into<String>) -> Self {
        Self { url: Some(url.into()), ..Self::empty() }
    }

    fn empty() -> Self {
        Self {
            command: None,
            cwd: None,
            env: BTreeMap::new(),
            url: None,
            headers: BTreeMap::new(),
            enabled: true,
            required: false,
            tool_allow: Vec::new(),
            tool_deny: Vec::new(),
            read_only_tools: Vec::new(),
            startup_timeout_ms: DEFAULT_STARTUP_TIMEOUT_MS,
            call_timeout_ms: DEFAULT_CALL_TIMEOUT_MS,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            risk: RiskLevel::Medium,
            sandbox: true,
            unix_sockets: false,
            oauth: None,
        }
    }

    /// Checks the table for server `name`: the name is 1–32 of `[A-Za-z0-9_-]`; exactly one of
    /// `command` (non-empty) and `url` (`http`/`https`); `cwd`/`env` only with `command`,
    /// `headers` only with `url`; header names valid (RFC 9110 tokens); variable names
    /// non-empty without `=` or NUL; globs valid; timeouts > 0;
    /// `max_output_bytes` ≥ [`MIN_MAX_OUTPUT_BYTES`]. Errors are [`McpError::Config`].
    pub fn validate(&self, name: &str) -> Result<(), McpError> {
        self.transport(name)?;
        ToolFilter::new(name, self)?;
        let bad = |m: String| Err(McpError::config(name, m));
        if self.startup_timeout_ms == 0 || self.call_timeout_ms == 0 {
            return bad("startup_timeout_ms and call_timeout_ms must be > 0".into());
        }
        if self.max_output_bytes < MIN_MAX_OUTPUT_BYTES {
            return bad(format!("max_output_bytes must be at least {MIN_MAX_OUTPUT_BYTES}"));
        }
        for key in self.env.keys() {
            if key.is_empty() || key.contains(['=', '\0']) {
                return bad(format!("invalid environment variable name {key:?}"));
            }
            if steward_sandbox::ENV_NEVER_PASSED.contains(&key.as_str()) {
                return bad(format!("`{key}` is never passed to a child (it makes shells source a file)"));
            }
        }
        if let Some(oauth) = &self.oauth {
            if self.url.is_none() {
                return bad("`oauth` is for `url` servers".into());
            }
            if oauth.client_secret.is_some() && oauth.client_id.is_none() {
                return bad("oauth.client_secret needs oauth.client_id".into());
            }
            if oauth.grant == OAuthGrant::ClientCredentials
                && (oauth.client_id.is_none() || (oauth.client_secret.is_none() && oauth.private_key_file.is_none()))
            {
                return bad(
                    "oauth.grant = \"client_credentials\" needs client_id and client_secret or private_key_file".into(),
                );
            }
            if oauth.private_key_file.is_some() && oauth.grant != OAuthGrant::ClientCredentials {
                return bad("oauth.private_key_file is for grant = \"client_credentials\"".into());
            }
            if let Some(algorithm) = &oauth.signing_algorithm
                && !SIGNING_ALGORITHMS.contains(&algorithm.as_str())
            {
                return bad(format!("oauth.signing_algorithm `{algorithm}` is not one Steward signs with"));
            }
            if let Some(url) = &oauth.client_metadata_url
                && !url.starts_with("https://")
            {
                return bad("oauth.client_metadata_url must be an https:// address".into());
            }
            if self.headers.keys().any(|k| k.eq_ignore_ascii_case("authorization")) {
                return bad("`oauth` and an `Authorization` header cannot both be set".into());
            }
        }
        for key in self.headers.keys() {
            if reqwest::header::HeaderName::from_bytes(key.as_bytes()).is_err() {
                return bad(format!("invalid header name {key:?}"));
            }
            if RESERVED_HEADERS.iter().any(|r| r.eq_ignore_ascii_case(key)) {
                return bad(format!("header `{key}` is set by the transport itself"));
            }
        }
        Ok(())
    }

    /// The parts of `url` that may be credentials, to keep out of messages (an HTTP client's
    /// error quotes the address it failed to reach): a password in the address, and each
    /// query value whose name looks secret (`api_key`, `token` …) or that is 20 characters or
    /// longer.
    pub(crate) fn url_secrets(&self) -> Vec<String> {
        let Some(url) = self.url.as_deref().and_then(|u| reqwest::Url::parse(u).ok()) else { return Vec::new() };
        let mut secrets: Vec<String> = url.password().map(String::from).into_iter().collect();
        for pair in url.query().unwrap_or_default().split('&') {
            let Some((_, raw)) = pair.split_once('=') else { continue };
            // The pair decoded as a query decodes it.
            let Some((name, value)) = reqwest::Url::parse(&format!("http://x/?{pair}"))
                .ok()
                .and_then(|u| u.query_pairs().next().map(|(n, v)| (n.into_owned(), v.into_owned())))
            else {
                continue;
            };
            if !value.is_empty() && (steward_sandbox::env_name_looks_secret(&name) || value.chars().count() >= 20) {
                // As written in the address and decoded: a message may quote either.
                secrets.push(raw.to_string());
                secrets.push(value);
            }
        }
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        secrets
    }

    /// Why the server's tool `tool` is never offered, when `tool_deny` or `tool_allow` hides
    /// it: the `tool_deny` glob that matches it, or that no `tool_allow` glob does. `None` when
    /// both let it through.
    pub fn hidden_by(&self, tool: &str) -> Option<String> {
        let matches = |glob: &&String| Glob::new(glob).is_ok_and(|g| g.compile_matcher().is_match(tool));
        if let Some(glob) = self.tool_deny.iter().find(matches) {
            return Some(format!("`tool_deny` entry \"{glob}\""));
        }
        if !self.tool_allow.is_empty() && !self.tool_allow.iter().any(|g| matches(&g)) {
            return Some(format!("`tool_allow` ({}: none matches it)", self.tool_allow.join(", ")));
        }
        None
    }

    /// The transport, after checking the name and the transport fields.
    pub(crate) fn transport(&self, name: &str) -> Result<Transport, McpError> {
        let bad = |m: &str| Err(McpError::config(name, m));
        if name.is_empty()
            || name.len() > MAX_SERVER_NAME_CHARS
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return bad("server names are 1-32 characters of A-Z, a-z, 0-9, `_` and `-`");
        }
        match (&self.command, &self.url) {
            (Some(command), None) => {
                if !self.headers.is_empty() {
                    return bad("`headers` needs `url`, not `command`");
                }
                let Some((program, args)) = command.split_first() else {
                    return bad("`command` must name a program");
                };
                if program.is_empty() {
                    return bad("`command` must name a program");
                }
                Ok(Transport::Stdio { program: program.clone(), args: args.to_vec() })
            }
            (None, Some(url)) => {
                if self.cwd.is_some() || !self.env.is_empty() {
                    return bad("`cwd` and `env` need `command`, not `url`");
                }
                let parsed = reqwest::Url::parse(url).map_err(|e| McpError::config(name, format!("`url`: {e}")))?;
                if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                    return bad("`url` must be an http:// or https:// URL with a host");
                }
                Ok(Transport::Http { url: parsed })
            }
            (Some(_), Some(_)) => bad("give either `command` (stdio) or `url` (HTTP), not both"),
            (None, None) => bad("give `command` (stdio) or `url` (HTTP)"),
        }
    }
}

/// `tool_allow` / `tool_deny` / `read_only_tools` compiled.
#[derive(Debug, Clone)]
pub(crate) struct ToolFilter {
    allow: Option<GlobSet>,
    deny: GlobSet,
    read_only: GlobSet,
}

impl ToolFilter {
    pub(crate) fn new(server: &str, config: &McpServerConfig) -> Result<Self, McpError> {
        let build = |globs: &[String], field: &str| -> Result<GlobSet, McpError> {
            let mut set = GlobSetBuilder::new();
            for glob in globs {
                set.add(Glob::new(glob).map_err(|e| McpError::config(server, format!("`{field}`: {e}")))?);
            }
            set.build().map_err(|e| McpError::config(server, format!("`{field}`: {e}")))
        };
        let allow = if config.tool_allow.is_empty() { None } else { Some(build(&config.tool_allow, "tool_allow")?) };
        Ok(Self {
            allow,
            deny: build(&config.tool_deny, "tool_deny")?,
            read_only: build(&config.read_only_tools, "read_only_tools")?,
        })
    }

    /// True when the user's configuration declares the server's tool `name` read-only.
    pub(crate) fn read_only(&self, name: &str) -> bool {
        self.read_only.is_match(name)
    }

    /// True when the server's tool `name` may be offered.
    pub(crate) fn allows(&self, name: &str) -> bool {
        !self.deny.is_match(name) && self.allow.as_ref().is_none_or(|allow| allow.is_match(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<McpServerConfig, toml::de::Error> {
        toml::from_str::<McpServerConfig>(text)
    }

    #[test]
    fn credentials_in_an_address_are_known_so_messages_can_hide_them() {
        let config = McpServerConfig::http(
            "https://user:pa55word@t.example/mcp?api_key=sk%2Dsecret&page=2&sig=abcdefghijklmnopqrstuvwxyz",
        );
        let secrets = config.url_secrets();
        for part in ["pa55word", "sk%2Dsecret", "sk-secret", "abcdefghijklmnopqrstuvwxyz"] {
            assert!(secrets.iter().any(|s| s == part), "{part} in {secrets:?}");
        }
        assert!(!secrets.iter().any(|s| s == "2"), "a short plain value stays: {secrets:?}");
        let error = McpError::unavailable(
            "t",
            "error sending request for url (https://t.example/mcp?api_key=sk%2Dsecret&page=2)",
        );
        let shown = error.masked(&secrets).to_string();
        assert!(!shown.contains("sk%2Dsecret") && shown.contains("api_key=…&page=2"), "{shown}");
        assert!(McpServerConfig::http("https://t.example/mcp").url_secrets().is_empty());
    }

    #[test]
    fn an_oauth_table_is_checked() {
        let ok = parse("url = \"https://t.example/mcp\"\n[oauth]\nclient_id = \"c\"\nclient_secret = { env = \"S\" }\nscopes = [\"a\"]").unwrap();
        ok.validate("t").unwrap();
        assert_eq!(ok.oauth.as_ref().unwrap().grant, OAuthGrant::AuthorizationCode);
        parse("url = \"https://t.example/mcp\"\noauth = {}").unwrap().validate("t").unwrap();
        for (text, problem) in [
            ("command = [\"srv\"]\noauth = {}", "for `url` servers"),
            ("url = \"https://t.example/mcp\"\noauth = { client_secret = \"s\" }", "needs oauth.client_id"),
            (
                "url = \"https://t.example/mcp\"\noauth = { grant = \"client_credentials\" }",
                "needs client_id and client_secret",
            ),
            ("url = \"https://t.example/mcp\"\noauth = { client_metadata_url = \"http://x/c.json\" }", "https://"),
            ("url = \"https://t.example/mcp\"\noauth = { private_key_file = \"/k.pem\" }", "is for grant"),
            (
                "url = \"https://t.example/mcp\"\noauth = { grant = \"client_credentials\", client_id = \"c\", private_key_file = \"/k.pem\", signing_algorithm = \"HS256\" }",
                "not one Steward signs with",
            ),
            (
                "url = \"https://t.example/mcp\"\nheaders = { authorization = \"Bearer x\" }\noauth = {}",
                "cannot both be set",
            ),
        ] {
            let error = parse(text).unwrap().validate("t").unwrap_err().to_string();
            assert!(error.contains(problem), "{text}: {error}");
        }
        let keyed = "url = \"https://t.example/mcp\"\noauth = { grant = \"client_credentials\", client_id = \"c\", private_key_file = \"/k.pem\" }";
        parse(keyed).unwrap().validate("t").unwrap();
        assert!(parse("url = \"https://t.example/mcp\"\noauth = { grant = \"password\" }").is_err());
        assert!(
            parse("url = \"https://t.example/mcp\"\noauth = { token = \"x\" }").is_err(),
            "unknown keys are refused"
        );
        // A literal secret never shows in debug output or when serialised.
        let literal =
            parse("url = \"https://t.example/mcp\"\noauth = { client_id = \"c\", client_secret = \"secret-value\" }")
                .unwrap();
        assert!(!format!("{literal:?}").contains("secret-value"));
        assert!(!serde_json::to_string(&literal).unwrap().contains("secret-value"));
    }

    #[test]
    fn stdio_and_http_tables_parse_with_defaults() {
        let stdio = parse("command = [\"srv\", \"--x\"]\nenv = { A = \"1\", T = { env = \"TOK\" } }").unwrap();
        stdio.validate("files").unwrap();
        assert_eq!(stdio.call_timeout_ms, 60_000);
        assert_eq!(stdio.startup_timeout_ms, 10_000);
        assert_eq!(stdio.max_output_bytes, 32 * 1024);
        assert_eq!(stdio.risk, RiskLevel::Medium);
        assert!(stdio.enabled);
        let http =
            parse("url = \"http://127.0.0.1:1/mcp\"\nheaders = { Authorization = { env = \"GH\", prefix = \"Bearer \" } }\nrisk = \"low\"")
                .unwrap();
        http.validate("gh").unwrap();
        assert_eq!(http.risk, RiskLevel::Low);
    }

    #[test]
    fn unknown_fields_and_bad_combinations_are_refused() {
        assert!(parse("command = [\"x\"]\ntimeout = 5").is_err());
        for (name, text) in [
            ("a", "command = [\"x\"]\nurl = \"http://h/\""),
            ("a", "enabled = true"),
            ("a", "command = []"),
            ("a", "url = \"ftp://h/\""),
            ("a", "url = \"http://h/\"\nenv = { A = \"1\" }"),
            ("a", "command = [\"x\"]\nheaders = { A = \"1\" }"),
            ("a", "command = [\"x\"]\ntool_allow = [\"[\"]"),
            ("a", "command = [\"x\"]\nmax_output_bytes = 10"),
            ("a", "command = [\"x\"]\ncall_timeout_ms = 0"),
            ("a", "url = \"http://h/\"\nheaders = { \"Bad Name\" = \"1\" }"),
            ("a", "url = \"http://h/\"\nheaders = { Mcp-Session-Id = \"1\" }"),
            ("a", "command = [\"x\"]\nenv = { BASH_ENV = \"/x\" }"),
            ("a.b", "command = [\"x\"]"),
            ("", "command = [\"x\"]"),
        ] {
            let config = parse(text).unwrap();
            let err = config.validate(name).unwrap_err();
            assert_eq!(err.class(), steward_protocol::ErrorClass::Config, "{text}");
        }
    }

    #[test]
    fn secrets_never_show_in_debug_or_serialize() {
        let config = parse(
            "url = \"http://h/\"\nheaders = { Authorization = \"Bearer sk-LITERAL\", X = { env = \"TOKVAR\", prefix = \"Bearer \" } }",
        )
        .unwrap();
        let debug = format!("{config:?}");
        assert!(!debug.contains("sk-LITERAL"));
        assert!(debug.contains("TOKVAR"));
        let json = serde_json::to_string(&config).unwrap();
        assert!(!json.contains("sk-LITERAL"));
        let resolved = config.headers["X"].resolve(&|n| (n == "TOKVAR").then(|| "abc".to_string())).unwrap();
        assert_eq!(resolved, "Bearer abc");
        let err = config.headers["X"].resolve(&|_| None).unwrap_err().to_string();
        assert!(err.contains("TOKVAR"));
    }

    #[test]
    fn allow_and_deny_globs() {
        let mut config = McpServerConfig::stdio(["x"]);
        config.tool_allow = vec!["read_*".into(), "list".into()];
        config.tool_deny = vec!["read_secret*".into()];
        let filter = ToolFilter::new("s", &config).unwrap();
        assert!(filter.allows("read_file"));
        assert!(filter.allows("list"));
        assert!(!filter.allows("read_secrets"));
        assert!(!filter.allows("write_file"));
        let open = ToolFilter::new("s", &McpServerConfig::stdio(["x"])).unwrap();
        assert!(open.allows("anything.at all"));
        // What hides a tool is named, and agrees with the filter.
        assert_eq!(config.hidden_by("read_secrets").as_deref(), Some("`tool_deny` entry \"read_secret*\""));
        assert_eq!(config.hidden_by("write_file").as_deref(), Some("`tool_allow` (read_*, list: none matches it)"));
        assert_eq!(config.hidden_by("read_file"), None);
    }
}
