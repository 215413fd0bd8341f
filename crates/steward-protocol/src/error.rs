use serde::{Deserialize, Serialize};

/// Error classes shared by providers, tools, the loop and stores.
///
/// Serialised in snake_case (`missing_api_key`, `provider_unreachable`, …); these strings are
/// part of the JSON event interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// A provider needs an API key and its environment variable is unset or empty.
    MissingApiKey,
    /// The provider could not be reached (connection refused, DNS, TLS).
    ProviderUnreachable,
    /// The provider answered 429 after every retry.
    RateLimited,
    /// The provider answered with an error status or a body that is not a valid reply.
    ProviderError,
    /// The provider's stream ended before the reply was complete.
    StreamInterrupted,
    /// A model proposed a tool call that is unknown, malformed or truncated.
    InvalidToolCall,
    /// The model's final message was (or ended with) tool-call markup that could not be
    /// turned into valid calls, even after it was told once what was wrong.
    UnparsedToolCall,
    /// A tool ran and failed.
    ToolFailed,
    /// A time limit ran out.
    Timeout,
    /// The run was cancelled.
    Cancelled,
    /// The configuration is invalid.
    Config,
    /// Persistence failed.
    Storage,
    /// An MCP server could not be used.
    McpUnavailable,
    /// An MCP server needs a login (`steward mcp login NAME`): none is stored for the run's
    /// owner, the server refused its token, or it needs a scope the login lacks.
    McpLoginRequired,
    /// The prompt does not fit the model's context window even after it was shrunk (fewer
    /// earlier rounds, shorter tool descriptions, fewer tools).
    ContextOverflow,
    /// The model's reply ran away: it reached the output limit, or repeated the same text over
    /// and over, without giving usable calls or an answer, even after it was told once.
    RunawayReply,
    /// Anything else.
    Internal,
}

impl ErrorClass {
    /// The wire name (`missing_api_key`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::MissingApiKey => "missing_api_key",
            ErrorClass::ProviderUnreachable => "provider_unreachable",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::ProviderError => "provider_error",
            ErrorClass::StreamInterrupted => "stream_interrupted",
            ErrorClass::InvalidToolCall => "invalid_tool_call",
            ErrorClass::UnparsedToolCall => "unparsed_tool_call",
            ErrorClass::ToolFailed => "tool_failed",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::Config => "config",
            ErrorClass::Storage => "storage",
            ErrorClass::McpUnavailable => "mcp_unavailable",
            ErrorClass::McpLoginRequired => "mcp_login_required",
            ErrorClass::ContextOverflow => "context_overflow",
            ErrorClass::RunawayReply => "runaway_reply",
            ErrorClass::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
