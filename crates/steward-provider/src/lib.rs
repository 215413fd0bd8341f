//! Model providers (SPEC P1–P9).
//!
//! A [`Provider`] streams a reply to a [`ChatRequest`]: text deltas go to a callback as they
//! arrive, and the complete [`ChatResponse`] (assembled tool calls, usage, finish reason) is
//! returned at the end. The whole-reply [`Provider::chat`] is a default built on `stream`.
//!
//! Modules, top to bottom:
//! - [`config`]: [`ProviderConfig`], presets and [`build_provider`];
//! - [`constrained`]: replies held to "one call of an offered tool, or an answer";
//! - [`embeddings`]: text embeddings from an OpenAI-compatible `/embeddings`;
//! - `openai` / `anthropic` / `responses`: the wire protocols (Chat Completions, Messages
//!   API, OpenAI Responses API);
//! - [`fake`]: the scripted provider used by tests and evals;
//! - `assemble`: streamed tool-call assembly (cases B01, B03);
//! - [`recover`]: tool calls written as text (SPEC P8, case B04), in the formats of
//!   [`formats`] (readers in `formats_parse` and `literals`), with `coerce` giving their
//!   values the types of the schema, and reasoning written into the text (`reasoning`);
//! - [`markup`]: tool-call markup left in a final message, never taken as an answer;
//! - [`answer`]: the answer of a reply that made no calls (an echo of the last call left out,
//!   a complete call never taken as one);
//! - [`repetition`]: replies that repeat themselves, stopped after the first copy;
//! - [`retry`]: which failures are retried and how long to wait (SPEC P7);
//! - `redact`: keeping keys out of error messages (case B13);
//! - `window`: the model's context window, configured or asked of the server;
//! - `tokens`: the server's own count of a prompt's tokens (llama.cpp).
//!
//! TLS and the HTTP client builder come from `steward-http`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod answer;
mod anthropic;
mod assemble;
mod coerce;
pub mod config;
pub mod constrained;
pub mod embeddings;
pub mod fake;
pub mod formats;
mod formats_parse;
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod literals;
pub mod markup;
mod openai;
mod reasoning;
pub mod recover;
pub mod repetition;
mod reply;
mod responses;
pub mod retry;
mod tokens;
mod window;
mod wire;

use async_trait::async_trait;
pub use steward_protocol::{ChatRequest, ChatResponse, ErrorClass, StreamDelta};

pub use config::{ApiKeyEnv, PRESETS, ProviderConfig, ProviderKind, build_provider, preset};
pub use constrained::{Constrained, ConstrainedSetting, Constraint, ServerKind};
pub use embeddings::{EmbeddingClient, EmbeddingError};
pub use fake::{FakeProvider, Scenario};
pub use formats::{ToolCallFormat, ToolCallFormatSetting};
pub use markup::unparsed_tool_markup;
/// Strict function schemas (SPEC T10), as rendered for every provider.
pub use openai::{strict_schema, tool_definitions};
pub use recover::{RecoverError, Recovered, recover_text_tool_calls, recover_with_format};
pub use window::{ContextWindow, DEFAULT_REPLY_SHARE, reply_share};

/// A provider failure with its class (SPEC P5, P7).
///
/// `message` never contains an API key or a URL carrying one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{class}: {message}")]
pub struct ProviderError {
    /// Error class, e.g. `missing_api_key`, `rate_limited`, `provider_unreachable`.
    pub class: ErrorClass,
    /// What went wrong, readable by a user and a model.
    pub message: String,
    /// HTTP status when the server answered with one.
    pub status: Option<u16>,
}

impl ProviderError {
    /// A new error.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        ProviderError { class, message: message.into(), status: None }
    }

    /// The same error with an HTTP status attached.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// True when trying the same request again may succeed (SPEC P7): the provider was
    /// unreachable or timed out, the stream broke, or the status is 408, 429, 5xx or 529.
    /// Whether a retry is actually allowed also depends on whether output was already shown.
    pub fn is_retryable(&self) -> bool {
        match self.class {
            ErrorClass::ProviderUnreachable
            | ErrorClass::StreamInterrupted
            | ErrorClass::Timeout
            | ErrorClass::RateLimited => true,
            ErrorClass::ProviderError => self.status.is_some_and(retry::is_retryable_status),
            _ => false,
        }
    }
}

/// Callback receiving stream deltas as they arrive.
pub type DeltaSink<'a> = &'a mut (dyn FnMut(StreamDelta) + Send);

/// A model provider (SPEC P1). Cancelling = dropping the returned future.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The configured name (`ollama`, `openai`, `fake`, a `[providers.NAME]` name).
    fn name(&self) -> &str;

    /// The model used when the caller names none.
    fn default_model(&self) -> &str;

    /// Streams one reply. Deltas are passed to `on_delta` as they arrive; the assembled reply
    /// is returned when the model has finished.
    async fn stream(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, ProviderError>;

    /// The whole reply at once.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.stream(request, &mut |_| {}).await
    }

    /// The context window of `model` (the default model when empty), in tokens: the
    /// configured `context_window`, else what the server reports when the provider asks it
    /// (`probe_context_window`); `None` when unknown, and the prompt is then sent as it is.
    async fn context_window(&self, _model: &str) -> Option<ContextWindow> {
        None
    }

    /// The number of tokens the server counts for `request`'s prompt as it would be sent, chat
    /// template included, when it can say before the request (llama.cpp's `/apply-template`
    /// and `/tokenize`, for a server the context-window probe recognised); `None` otherwise.
    async fn count_prompt_tokens(&self, _request: &ChatRequest) -> Option<u32> {
        None
    }

    /// Whether replies to requests for `model` (the default model when empty) are constrained
    /// to a call of an offered tool or an answer ([`constrained`]), and why.
    async fn constrained(&self, _model: &str) -> Constraint {
        Constraint::off("not an OpenAI-compatible Chat Completions provider")
    }

    /// Model ids the provider serves.
    async fn list_models(&self) -> Result<Vec<String>, ProviderError>;
}
