//! Anthropic Messages API, native (SPEC P3).
//!
//! Wire format: <https://docs.anthropic.com/en/api/messages> and
//! <https://docs.anthropic.com/en/api/messages-streaming>. `POST {base_url}/v1/messages` with
//! `x-api-key` and `anthropic-version: 2023-06-01`; system text goes in the top-level `system`
//! field; tool calls are `tool_use` content blocks of the assistant, results are `tool_result`
//! blocks of the next user message. Streaming events: `message_start`, `content_block_start`,
//! `content_block_delta` (`text_delta`, `input_json_delta`, `thinking_delta`),
//! `content_block_stop`, `message_delta` (stop reason, usage), `message_stop`, `ping`,
//! `error`.

use async_trait::async_trait;
use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use steward_protocol::{ChatRequest, ChatResponse, ErrorClass, Role, ToolChoice};

use crate::assemble::ToolCallAssembler;
use crate::http::{ApiKey, Failure, Step, read_events};
use crate::reply::ReplyBuilder;
use crate::wire::{BodyStream, Settings, Wire};
use crate::{DeltaSink, ProviderError};

/// The API version header value.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` when neither the request nor the config sets one (the API requires it).
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Anthropic Messages API wire protocol.
#[derive(Debug)]
pub(crate) struct AnthropicWire;

/// Renders the request body. Consecutive messages of the same role are merged into one (the
/// API wants user and assistant turns to alternate), so consecutive tool results form one
/// user message.
pub(crate) fn render_request(
    request: &ChatRequest,
    model: &str,
    stream: bool,
    default_choice: Option<&str>,
    default_max_tokens: Option<u32>,
) -> Value {
    let system: Vec<&str> =
        request.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for m in &request.messages {
        let (role, blocks) = match m.role {
            Role::System => continue,
            Role::User => ("user", text_block(&m.content)),
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content,
                    "is_error": m.is_error,
                })],
            ),
            Role::Assistant => {
                let mut blocks = text_block(&m.content);
                blocks.extend(
                    m.tool_calls
                        .iter()
                        .map(|c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})),
                );
                ("assistant", blocks)
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens.or(default_max_tokens).unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": turns.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect::<Vec<_>>(),
    });
    if stream {
        body["stream"] = json!(true);
    }
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": crate::openai::strict_schema(&t.input_schema)}))
            .collect();
        let choice = match (&request.tool_choice, default_choice) {
            (ToolChoice::Auto, Some(d)) => ToolChoice::parse(d),
            (c, _) => c.clone(),
        };
        body["tool_choice"] = match choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Named(name) => json!({"type": "tool", "name": name}),
        };
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

fn text_block(text: &str) -> Vec<Value> {
    if text.trim().is_empty() { Vec::new() } else { vec![json!({"type": "text", "text": text})] }
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct WireMessage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        #[serde(default)]
        message: WireMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u64,
        delta: Value,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: Value,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        #[serde(default)]
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

fn api_error(provider: &str, err: &Value) -> ProviderError {
    let kind = err.get("type").and_then(Value::as_str).unwrap_or("error");
    let message = err.get("message").and_then(Value::as_str).unwrap_or("");
    let e = ProviderError::new(ErrorClass::ProviderError, format!("provider '{provider}' reported {kind}: {message}"));
    match kind {
        "overloaded_error" => e.with_status(529),
        "api_error" => e.with_status(500),
        "rate_limit_error" => ProviderError { class: ErrorClass::RateLimited, ..e.with_status(429) },
        _ => e,
    }
}

fn add_usage(reply: &mut ReplyBuilder, usage: Option<&WireUsage>) {
    if let Some(u) = usage {
        if let Some(i) = u.input_tokens {
            reply.usage.input_tokens = i;
        }
        if let Some(o) = u.output_tokens {
            reply.usage.output_tokens = o;
        }
    }
}

/// A content block of a whole (non-streamed) message or of `content_block_start`.
fn start_block(reply: &mut ReplyBuilder, index: u64, block: &Value, whole: bool, sink: DeltaSink<'_>) {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => reply.text.push_text(block.get("text").and_then(Value::as_str).unwrap_or(""), sink),
        Some("thinking") => {
            reply.text.push_reasoning(block.get("thinking").and_then(Value::as_str).unwrap_or(""), sink)
        }
        Some("tool_use") => {
            let id = block.get("id").and_then(Value::as_str);
            let name = block.get("name").and_then(Value::as_str);
            // Streamed blocks start with `input: {}` and send the arguments as deltas.
            let input = if whole { block.get("input").map(Value::to_string) } else { None };
            reply.calls.push(Some(index), id, name, input.as_deref(), sink);
            if whole {
                reply.calls.close(index);
            }
        }
        _ => {}
    }
}

/// Reads a streamed reply. Ends normally at `message_stop`, or at the end of the body once a
/// stop reason was received; any other end is `StreamInterrupted` and no tool call of that
/// stream is returned.
pub(crate) async fn read_stream<S, E>(
    provider: &str,
    bytes: S,
    mut reply: ReplyBuilder,
    sink: DeltaSink<'_>,
) -> Result<ChatResponse, Failure>
where
    S: Stream<Item = Result<bytes::Bytes, E>>,
    E: std::fmt::Display,
{
    let stopped = read_events(provider, bytes, &mut reply, |reply, data| {
        let parsed: Event = serde_json::from_str(data).map_err(|e| {
            ProviderError::new(
                ErrorClass::ProviderError,
                format!("provider '{provider}' sent an unreadable stream event: {e}"),
            )
        })?;
        match parsed {
            Event::MessageStart { message } => {
                if let Some(m) = message.model.filter(|m| !m.is_empty()) {
                    reply.model = m;
                }
                add_usage(reply, message.usage.as_ref());
            }
            Event::ContentBlockStart { index, content_block } => start_block(reply, index, &content_block, false, sink),
            Event::ContentBlockDelta { index, delta } => match delta.get("type").and_then(Value::as_str) {
                Some("text_delta") => {
                    reply.text.push_text(delta.get("text").and_then(Value::as_str).unwrap_or(""), sink)
                }
                Some("thinking_delta") => {
                    reply.text.push_reasoning(delta.get("thinking").and_then(Value::as_str).unwrap_or(""), sink)
                }
                Some("input_json_delta") => {
                    let piece = delta.get("partial_json").and_then(Value::as_str).unwrap_or("");
                    reply.calls.push(Some(index), None, None, Some(piece), sink);
                }
                _ => {}
            },
            Event::ContentBlockStop { index } => reply.calls.close(index),
            Event::MessageDelta { delta, usage } => {
                reply.set_finish(delta.get("stop_reason").and_then(Value::as_str));
                add_usage(reply, usage.as_ref());
            }
            Event::MessageStop => return Ok(Step::End),
            Event::Error { error } => return Err(api_error(provider, &error).into()),
            Event::Ping | Event::Unknown => {}
        }
        Ok(Step::Continue)
    })
    .await?;
    if !stopped && reply.finish.is_none() {
        return Err(reply.interrupted(provider, "no stop_reason and no message_stop").into());
    }
    if reply.finish.is_none() {
        reply.finish = Some("end_turn".to_string());
    }
    Ok(reply.finish(sink))
}

/// Reads a non-streamed message; the whole text is passed on as one delta.
pub(crate) fn read_whole(
    provider: &str,
    body: &str,
    mut reply: ReplyBuilder,
    sink: DeltaSink<'_>,
) -> Result<ChatResponse, Failure> {
    let value: Value = serde_json::from_str(body).map_err(|e| {
        ProviderError::new(ErrorClass::ProviderError, format!("provider '{provider}' sent an unreadable reply: {e}"))
    })?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(api_error(provider, value.get("error").unwrap_or(&Value::Null)).into());
    }
    let message: WireMessage = serde_json::from_value(value).map_err(|e| {
        ProviderError::new(ErrorClass::ProviderError, format!("provider '{provider}' sent an unreadable reply: {e}"))
    })?;
    if let Some(m) = message.model.clone().filter(|m| !m.is_empty()) {
        reply.model = m;
    }
    add_usage(&mut reply, message.usage.as_ref());
    for (i, block) in message.content.iter().enumerate() {
        start_block(&mut reply, i as u64, block, true, sink);
    }
    reply.set_finish(message.stop_reason.as_deref().or(Some("end_turn")));
    Ok(reply.finish(sink))
}

#[async_trait]
impl Wire for AnthropicWire {
    const CHAT_PATH: &'static str = "/v1/messages";
    const MODELS_PATH: &'static str = "/v1/models";

    fn authorise(&self, key: Option<&ApiKey>, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let request = request.header("anthropic-version", ANTHROPIC_VERSION);
        match key {
            Some(k) => request.header("x-api-key", k.expose()),
            None => request,
        }
    }

    fn body(&self, request: &ChatRequest, model: &str, settings: &Settings) -> Value {
        render_request(request, model, settings.stream, settings.tool_choice.as_deref(), settings.max_tokens)
    }

    fn assembler(&self) -> ToolCallAssembler {
        ToolCallAssembler::with_closing()
    }

    async fn read_stream(
        &self,
        name: &str,
        body: BodyStream,
        reply: ReplyBuilder,
        sink: DeltaSink<'_>,
    ) -> Result<ChatResponse, Failure> {
        read_stream(name, body, reply, sink).await
    }

    fn read_whole(
        &self,
        name: &str,
        text: &str,
        reply: ReplyBuilder,
        sink: DeltaSink<'_>,
    ) -> Result<ChatResponse, Failure> {
        read_whole(name, text, reply, sink)
    }
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
