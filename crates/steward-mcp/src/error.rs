//! Errors of the MCP client, each with the [`ErrorClass`] the run records.

use steward_protocol::ErrorClass;

/// Why an MCP operation failed. Every message names the server; none carries a header value
/// or an environment value from the configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// The `[mcp_servers.NAME]` configuration is invalid (class `config`).
    #[error("[mcp_servers.{server}]: {message}")]
    Config {
        /// Server name from the configuration.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// The server could not be started or reached, died, or is waiting out its restart
    /// backoff (class `mcp_unavailable`).
    #[error("mcp server `{server}` unavailable: {message}")]
    Unavailable {
        /// Server name.
        server: String,
        /// What happened, with the exit status when the process exited.
        message: String,
    },
    /// `initialize` or a call did not finish within its time limit (class `timeout`).
    #[error("mcp server `{server}`: {what} timed out after {after_ms} ms")]
    Timeout {
        /// Server name.
        server: String,
        /// `initialize`, `tools/list` or `tools/call NAME`.
        what: String,
        /// The limit that ran out, in ms.
        after_ms: u64,
    },
    /// The server answered a call with a JSON-RPC error (class `tool_failed`).
    #[error("mcp server `{server}` returned error {code}: {message}")]
    Rpc {
        /// Server name.
        server: String,
        /// JSON-RPC error code, e.g. `-32603`.
        code: i32,
        /// The server's error message.
        message: String,
    },
    /// The server answered with something that is not a valid result for the request, such
    /// as a task handle for a plain `tools/call` (class `tool_failed`).
    #[error("mcp server `{server}`: {message}")]
    Protocol {
        /// Server name.
        server: String,
        /// What was wrong.
        message: String,
    },
    /// No configured, enabled and allowed tool has this registry name (class
    /// `invalid_tool_call`).
    #[error("unknown mcp tool `{0}`")]
    UnknownTool(String),
    /// The call's arguments are not a JSON object (class `invalid_tool_call`).
    #[error("mcp tool `{tool}`: arguments must be a JSON object, got {got}")]
    InvalidArguments {
        /// Registry name of the tool.
        tool: String,
        /// The JSON type that was given.
        got: &'static str,
    },
    /// The server needs a login Steward does not hold for this owner, refused the token it was
    /// sent (expired and not renewable, or revoked), or needs a scope the login lacks (class
    /// `mcp_login_required`). The message names `steward mcp login SERVER`.
    #[error("mcp server `{server}` needs a login: {reason}; run `steward mcp login {server}`")]
    LoginRequired {
        /// Server name.
        server: String,
        /// Why, e.g. `no login is stored` or `the server needs the scope files:write`.
        reason: String,
        /// The server's `WWW-Authenticate` answer, when it gave one (what a new login starts
        /// from: where the authorization server is, which scopes it wants).
        challenge: Option<String>,
    },
    /// The caller cancelled the call; the server was sent `notifications/cancelled`
    /// (class `cancelled`).
    #[error("mcp call to `{server}` cancelled")]
    Cancelled {
        /// Server name.
        server: String,
    },
}

impl McpError {
    /// The error class recorded for this error (SPEC E): `config`, `mcp_unavailable`,
    /// `mcp_login_required`, `timeout`, `tool_failed`, `invalid_tool_call` or `cancelled`.
    pub fn class(&self) -> ErrorClass {
        match self {
            McpError::Config { .. } => ErrorClass::Config,
            McpError::Unavailable { .. } => ErrorClass::McpUnavailable,
            McpError::Timeout { .. } => ErrorClass::Timeout,
            McpError::Rpc { .. } | McpError::Protocol { .. } => ErrorClass::ToolFailed,
            McpError::UnknownTool(_) | McpError::InvalidArguments { .. } => ErrorClass::InvalidToolCall,
            McpError::Cancelled { .. } => ErrorClass::Cancelled,
            McpError::LoginRequired { .. } => ErrorClass::McpLoginRequired,
        }
    }

    pub(crate) fn config(server: &str, message: impl Into<String>) -> Self {
        McpError::Config { server: server.to_string(), message: message.into() }
    }

    pub(crate) fn unavailable(server: &str, message: impl Into<String>) -> Self {
        McpError::Unavailable { server: server.to_string(), message: message.into() }
    }

    /// The same error with each of `secrets` in its text replaced by `…` (the credentials a
    /// server's address carries, which an HTTP client's error quotes).
    pub(crate) fn masked(self, secrets: &[String]) -> Self {
        if secrets.is_empty() {
            return self;
        }
        let mask = |text: String| secrets.iter().fold(text, |text, secret| text.replace(secret.as_str(), "…"));
        match self {
            McpError::Unavailable { server, message } => McpError::Unavailable { server, message: mask(message) },
            McpError::Protocol { server, message } => McpError::Protocol { server, message: mask(message) },
            McpError::Rpc { server, code, message } => McpError::Rpc { server, code, message: mask(message) },
            McpError::LoginRequired { server, reason, challenge } => {
                McpError::LoginRequired { server, reason: mask(reason), challenge }
            }
            other => other,
        }
    }

    pub(crate) fn login_required(server: &str, reason: impl Into<String>, challenge: Option<String>) -> Self {
        McpError::LoginRequired { server: server.to_string(), reason: reason.into(), challenge }
    }
}
