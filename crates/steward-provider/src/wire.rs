//! One HTTP provider for every wire protocol: what differs between OpenAI-compatible Chat
//! Completions and the Anthropic Messages API (paths, auth headers, the request body, reading
//! the reply) is a [`Wire`]; sending, retrying, redacting and the [`Provider`] surface are
//! shared by [`HttpProvider`].

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;
use steward_protocol::{ChatRequest, ChatResponse};

use crate::assemble::ToolCallAssembler;
use crate::constrained::{Constraint, ServerKind};
use crate::http::{ApiKey, Attempt, Failure, HttpCore, body_stream, with_retries};
use crate::reply::ReplyBuilder;
use crate::{DeltaSink, Provider, ProviderError};

/// Settings every wire protocol reads from the provider's configuration.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Stream replies over SSE.
    pub stream: bool,
    /// Recover tool calls written as text.
    pub recover: bool,
    /// The text tool-call format per model (`None`: detect).
    pub tool_call_format: Option<crate::formats::ToolCallFormatSetting>,
    /// Tool choice used when a request says `auto`.
    pub tool_choice: Option<String>,
    /// Output token limit when a request sets none.
    pub max_tokens: Option<u32>,
    /// The server runs on this machine (an OpenAI-compatible server on a loopback address, or
    /// a local preset): when neither the request nor `max_tokens` sets an output limit, every
    /// request gets the reply's share of the context window ([`crate::reply_share`]) as its
    /// limit, so a reply that runs away stops there instead of filling the window.
    pub local: bool,
    /// Whether replies are held to the reply schema ([`crate::constrained`]).
    pub constrained: crate::constrained::ConstrainedSetting,
}

/// A reply body as a stream of byte chunks.
pub(crate) type BodyStream = BoxStream<'static, Result<bytes::Bytes, crate::http::BodyError>>;

/// What a wire protocol decides.
#[async_trait]
pub(crate) trait Wire: std::fmt::Debug + Send + Sync + 'static {
    /// Path of the chat endpoint below the base URL.
    const CHAT_PATH: &'static str;
    /// Path of the model list below the base URL.
    const MODELS_PATH: &'static str;
    /// True when [`Wire::constrain`] rewrites requests for constrained replies.
    const CONSTRAINS: bool = false;
    /// Adds authentication and protocol headers.
    fn authorise(&self, key: Option<&ApiKey>, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder;
    /// The request body.
    fn body(&self, request: &ChatRequest, model: &str, settings: &Settings) -> Value;
    /// The body as JSON text, rewritten for a constrained reply
    /// ([`crate::constrained::constrain`]); `None` when this protocol has no such rewriting or
    /// the request nothing to constrain, and `body` is sent as it is.
    fn constrain(&self, _body: &mut Value, _request: &ChatRequest, _kind: ServerKind) -> Option<String> {
        None
    }
    /// How streamed tool-call pieces are assembled.
    fn assembler(&self) -> ToolCallAssembler;
    /// Reads a streamed reply.
    async fn read_stream(
        &self,
        name: &str,
        body: BodyStream,
        reply: ReplyBuilder,
        sink: DeltaSink<'_>,
    ) -> Result<ChatResponse, Failure>;
    /// Reads a whole (non-streamed) reply.
    fn read_whole(
        &self,
        name: &str,
        text: &str,
        reply: ReplyBuilder,
        sink: DeltaSink<'_>,
    ) -> Result<ChatResponse, Failure>;
}

/// A provider speaking `W` over HTTP.
#[derive(Debug)]
pub(crate) struct HttpProvider<W: Wire> {
    pub core: HttpCore,
    pub settings: Settings,
    /// Where the model's context window comes from.
    pub window: crate::window::WindowSource,
    pub wire: W,
}

#[async_trait]
impl<W: Wire> Attempt for HttpProvider<W> {
    fn core(&self) -> &HttpCore {
        &self.core
    }

    async fn attempt(&self, request: &ChatRequest, sink: DeltaSink<'_>) -> Result<ChatResponse, Failure> {
        let mut req = request.clone();
        if req.model.is_empty() {
            req.model = self.core.default_model.clone();
        }
        if self.settings.local && req.max_tokens.is_none() && self.settings.max_tokens.is_none() {
            let window = self.window.window(&self.core, &req.model).await;
            req.max_tokens = Some(crate::reply_share(window.map(|w| w.tokens)));
        }
        let (body, constrained) = self.request_body(&req).await;
        let held = constrained.is_some();
        let post = self.core.client.post(self.core.url(W::CHAT_PATH));
        let post = match constrained {
            Some(text) => post.header(reqwest::header::CONTENT_TYPE, "application/json").body(text),
            None => post.json(&body),
        };
        let response = self.core.send(self.wire.authorise(self.core.key.as_ref(), post)).await?;
        let format = self.settings.tool_call_format.as_ref().and_then(|s| s.for_model(&req.model));
        let reply = ReplyBuilder::new(self.settings.recover, &req, self.wire.assembler()).with_format(format);
        let reply = if held { reply.constrained() } else { reply };
        let result = if self.settings.stream {
            self.wire.read_stream(&self.core.name, body_stream(response).boxed(), reply, sink).await
        } else {
            let text = response.text().await.map_err(|e| Failure::from(self.core.transport_error(&e, true)))?;
            self.wire.read_whole(&self.core.name, &text, reply, sink)
        };
        result.map_err(|mut f| {
            f.error.message = self.core.redact(&f.error.message);
            f
        })
    }
}

impl<W: Wire> HttpProvider<W> {
    /// The body of `request` (its model set), and its JSON text when it was rewritten for a
    /// constrained reply.
    async fn request_body(&self, request: &ChatRequest) -> (Value, Option<String>) {
        let mut body = self.wire.body(request, &request.model, &self.settings);
        let constraint = self.constraint(&request.model).await;
        let constrained = if constraint.applies(request.constrain) {
            self.wire.constrain(&mut body, request, constraint.kind)
        } else {
            None
        };
        (body, constrained)
    }

    /// Whether requests for `model` are constrained: the setting, and for `auto` what the
    /// context-window probe found the server to be (asked once).
    async fn constraint(&self, model: &str) -> Constraint {
        if !W::CONSTRAINS {
            return Constraint::off("not an OpenAI-compatible Chat Completions provider");
        }
        let setting = self.settings.constrained;
        let kind = match setting {
            crate::constrained::ConstrainedSetting::Off => None,
            _ => self.window.kind(&self.core, model).await,
        };
        crate::constrained::decide(setting, self.settings.local, kind)
    }
}

#[async_trait]
impl<W: Wire> Provider for HttpProvider<W> {
    fn name(&self) -> &str {
        &self.core.name
    }

    fn default_model(&self) -> &str {
        &self.core.default_model
    }

    async fn stream(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, ProviderError> {
        with_retries(self, request, on_delta).await
    }

    async fn context_window(&self, model: &str) -> Option<crate::ContextWindow> {
        let model = if model.is_empty() { self.core.default_model.as_str() } else { model };
        self.window.window(&self.core, model).await
    }

    async fn count_prompt_tokens(&self, request: &ChatRequest) -> Option<u32> {
        let mut req = request.clone();
        if req.model.is_empty() {
            req.model = self.core.default_model.clone();
        }
        // Only an OpenAI-compatible provider asks the probe, so only it can find llama.cpp.
        if self.window.kind(&self.core, &req.model).await != Some(ServerKind::LlamaCpp) {
            return None;
        }
        let (body, constrained) = self.request_body(&req).await;
        crate::tokens::llama_cpp_count(&self.core, constrained.unwrap_or_else(|| body.to_string())).await
    }

    async fn constrained(&self, model: &str) -> Constraint {
        let model = if model.is_empty() { self.core.default_model.as_str() } else { model };
        self.constraint(model).await
    }

    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        let get = self.core.client.get(self.core.url(W::MODELS_PATH));
        self.core.list_ids(self.wire.authorise(self.core.key.as_ref(), get)).await
    }
}
