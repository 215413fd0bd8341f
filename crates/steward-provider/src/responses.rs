//! OpenAI Responses API (`kind = "openai-responses"`), the protocol Codex speaks.
//!
//! Wire format: <https://platform.openai.com/docs/api-reference/responses>. `POST
//! {base_url}/responses` with a bearer key. System messages become `instructions`; the rest of
//! the conversation is the `input` list: `{role, content}` messages, the assistant's tool
//! calls as `function_call` items and their results as `function_call_output` items (matched
//! by `call_id`). Nothing is stored on the server (`store: false`): every request carries the
//! whole conversation, as with Chat Completions.
//!
//! Streamed events: `response.created`, `response.output_item.added` (a `function_call` item
//! names its call), `response.output_text.delta`, `response.function_call_arguments.delta`,
//! `response.reasoning_summary_text.delta` / `response.reasoning_text.delta`,
//! `response.output_item.done` (the item complete), and the end: `response.completed` with
//! usage, `response.incomplete` (the output limit: finish `length`), `response.failed` or
//! `error`. Other events are ignored.

use std::collections::HashSet;

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

/// The OpenAI Responses API wire protocol.
#[derive(Debug)]
pub(crate) struct ResponsesWire;

/// Renders the request body: system text as `instructions`, everything else as `input` items.
pub(crate) fn render_request(
    request: &ChatRequest,
    model: &str,
    stream: bool,
    default_choice: Option<&str>,
    default_max_tokens: Option<u32>,
) -> Value {
    let system: Vec<&str> =
        request.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
    let mut input = Vec::new();
    for m in &request.messages {
        match m.role {
            Role::System => {}
            Role::User => input.push(json!({"role": "user", "content": m.content})),
            Role::Assistant => {
                if !m.content.trim().is_empty() {
                    input.push(json!({"role": "assistant", "content": m.content}));
                }
                for c in &m.tool_calls {
                    input.push(json!({
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.name,
                        "arguments": c.arguments.to_string(),
                    }));
                }
            }
            Role::Tool => input.push(json!({
                "type": "function_call_output",
                "call_id": m.tool_call_id.clone().unwrap_or_default(),
                "output": m.content,
            })),
        }
    }
    let mut body = json!({"model": model, "input": input, "store": false});
    if stream {
        body["stream"] = json!(true);
    }
    if !system.is_empty() {
        body["instructions"] = json!(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": crate::openai::strict_schema(&t.input_schema),
                    "strict": true,
                })
            })
            .collect();
        let choice = match (&request.tool_choice, default_choice) {
            (ToolChoice::Auto, Some(d)) => ToolChoice::parse(d),
            (c, _) => c.clone(),
        };
        body["tool_choice"] = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Named(name) => json!({"type": "function", "name": name}),
        };
    }
    if let Some(max) = request.max_tokens.or(default_max_tokens) {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

/// The response object of `response.created`, `response.completed`, … and of a whole reply.
#[derive(Deserialize, Default)]
struct WireResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    output: Vec<Value>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Event {
    #[serde(rename = "response.created", alias = "response.in_progress")]
    Created {
        #[serde(default)]
        response: WireResponse,
    },
    #[serde(rename = "response.output_item.added")]
    ItemAdded { output_index: u64, item: Value },
    #[serde(rename = "response.output_text.delta")]
    TextDelta {
        #[serde(default)]
        delta: String,
    },
    #[serde(rename = "response.reasoning_summary_text.delta", alias = "response.reasoning_text.delta")]
    ReasoningDelta {
        #[serde(default)]
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta {
        output_index: u64,
        #[serde(default)]
        delta: String,
    },
    #[serde(rename = "response.output_item.done")]
    ItemDone { output_index: u64, item: Value },
    #[serde(rename = "response.completed", alias = "response.incomplete")]
    Ended { response: WireResponse },
    #[serde(rename = "response.failed")]
    Failed { response: WireResponse },
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        message: Option<String>,
    },
    #[serde(other)]
    Unknown,
}

/// The error an `error` event or a failed response reports; a rate limit is `rate_limited`
/// (status 429), a server error status 500 (both retried).
fn api_error(provider: &str, code: Option<&str>, message: Option<&str>) -> ProviderError {
    let code = code.unwrap_or("error");
    let e = ProviderError::new(
        ErrorClass::ProviderError,
        format!("provider '{provider}' reported {code}: {}", message.unwrap_or("")),
    );
    match code {
        "rate_limit_exceeded" | "rate_limit_error" => {
            ProviderError { class: ErrorClass::RateLimited, ..e.with_status(429) }
        }
        "server_error" | "internal_error" => e.with_status(500),
        _ => e,
    }
}

fn failed(provider: &str, response: &WireResponse) -> ProviderError {
    let err = response.error.as_ref();
    let field = |k: &str| err.and_then(|e| e.get(k)).and_then(Value::as_str);
    api_error(provider, field("code"), field("message"))
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

/// The finish reason of an ended response: `length` when it stopped at the output limit,
/// `tool_calls` when it holds calls, else `stop`.
fn finish_of(response: &WireResponse, has_calls: bool) -> &'static str {
    let reason = response.incomplete_details.as_ref().and_then(|d| d.get("reason")).and_then(Value::as_str);
    match (response.status.as_deref(), reason) {
        (Some("incomplete"), Some("max_output_tokens")) | (_, Some("max_output_tokens")) => "length",
        _ if has_calls => "tool_calls",
        _ => "stop",
    }
}

fn text_of(item: &Value, part_type: &str) -> String {
    item.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some(part_type))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

/// A whole output item (of a non-streamed reply).
fn whole_item(reply: &mut ReplyBuilder, index: u64, item: &Value, sink: DeltaSink<'_>) {
    let field = |k: &str| item.get(k).and_then(Value::as_str);
    match field("type") {
        Some("message") => reply.text.push_text(&text_of(item, "output_text"), sink),
        Some("reasoning") => {
            let summary: String = item
                .get("summary")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            if !summary.is_empty() {
                reply.text.push_reasoning(&summary, sink);
            }
        }
        Some("function_call") => {
            reply.calls.push(
                Some(index),
                field("call_id"),
                field("name"),
                Some(field("arguments").unwrap_or("")),
                sink,
            );
            reply.calls.close(index);
        }
        _ => {}
    }
}

/// Reads a streamed reply. Ends normally at `response.completed` or `response.incomplete`;
/// a stream that ends before one of them is `StreamInterrupted` and none of its tool calls is
/// returned.
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
    // Output indexes of calls whose arguments arrived as deltas: `output_item.done` then
    // only closes them (its `arguments` would repeat them).
    let mut streamed_args: HashSet<u64> = HashSet::new();
    let mut has_calls = false;
    let ended = read_events(provider, bytes, &mut reply, |reply, data| {
        if data == "[DONE]" {
            return Ok(Step::Continue);
        }
        let parsed: Event = serde_json::from_str(data).map_err(|e| {
            ProviderError::new(
                ErrorClass::ProviderError,
                format!("provider '{provider}' sent an unreadable stream event: {e}"),
            )
        })?;
        match parsed {
            Event::Created { response } => {
                if let Some(m) = response.model.filter(|m| !m.is_empty()) {
                    reply.model = m;
                }
            }
            Event::ItemAdded { output_index, item } => {
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    has_calls = true;
                    let field = |k: &str| item.get(k).and_then(Value::as_str);
                    let args = field("arguments").filter(|a| !a.is_empty());
                    if args.is_some() {
                        streamed_args.insert(output_index);
                    }
                    reply.calls.push(Some(output_index), field("call_id"), field("name"), args, sink);
                }
            }
            Event::TextDelta { delta } => reply.text.push_text(&delta, sink),
            Event::ReasoningDelta { delta } => reply.text.push_reasoning(&delta, sink),
            Event::ArgumentsDelta { output_index, delta } => {
                streamed_args.insert(output_index);
                reply.calls.push(Some(output_index), None, None, Some(&delta), sink);
            }
            Event::ItemDone { output_index, item } => {
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    has_calls = true;
                    if !streamed_args.contains(&output_index) {
                        let field = |k: &str| item.get(k).and_then(Value::as_str);
                        let args = field("arguments").unwrap_or("");
                        reply.calls.push(Some(output_index), field("call_id"), field("name"), Some(args), sink);
                    }
                    reply.calls.close(output_index);
                }
            }
            Event::Ended { response } => {
                if let Some(m) = response.model.clone().filter(|m| !m.is_empty()) {
                    reply.model = m;
                }
                add_usage(reply, response.usage.as_ref());
                reply.set_finish(Some(finish_of(&response, has_calls)));
                return Ok(Step::End);
            }
            Event::Failed { response } => return Err(failed(provider, &response).into()),
            Event::Error { code, message } => {
                return Err(api_error(provider, code.as_deref(), message.as_deref()).into());
            }
            Event::Unknown => {}
        }
        Ok(Step::Continue)
    })
    .await?;
    if !ended {
        return Err(reply.interrupted(provider, "no response.completed").into());
    }
    Ok(reply.finish(sink))
}

/// Reads a non-streamed response; the whole text is passed on as one delta.
pub(crate) fn read_whole(
    provider: &str,
    body: &str,
    mut reply: ReplyBuilder,
    sink: DeltaSink<'_>,
) -> Result<ChatResponse, Failure> {
    let unreadable = |e: serde_json::Error| {
        ProviderError::new(ErrorClass::ProviderError, format!("provider '{provider}' sent an unreadable reply: {e}"))
    };
    let value: Value = serde_json::from_str(body).map_err(unreadable)?;
    let response: WireResponse = serde_json::from_value(value).map_err(unreadable)?;
    if response.status.as_deref() == Some("failed") || response.error.as_ref().is_some_and(|e| !e.is_null()) {
        return Err(failed(provider, &response).into());
    }
    if let Some(m) = response.model.clone().filter(|m| !m.is_empty()) {
        reply.model = m;
    }
    add_usage(&mut reply, response.usage.as_ref());
    let mut has_calls = false;
    for (i, item) in response.output.iter().enumerate() {
        has_calls |= item.get("type").and_then(Value::as_str) == Some("function_call");
        whole_item(&mut reply, i as u64, item, sink);
    }
    reply.set_finish(Some(finish_of(&response, has_calls)));
    Ok(reply.finish(sink))
}

#[async_trait]
impl Wire for ResponsesWire {
    const CHAT_PATH: &'static str = "/responses";
    const MODELS_PATH: &'static str = "/models";

    fn authorise(&self, key: Option<&ApiKey>, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match key {
            Some(k) => request.bearer_auth(k.expose()),
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
#[path = "responses_tests.rs"]
mod tests;
