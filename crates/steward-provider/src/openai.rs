//! OpenAI-compatible Chat Completions (SPEC P2): OpenAI, OpenRouter, xAI, Ollama, LM Studio,
//! llama.cpp and any server speaking the same wire format.
//!
//! Wire format: <https://platform.openai.com/docs/api-reference/chat>. `POST
//! {base_url}/chat/completions`, streamed as SSE `data:` lines of `chat.completion.chunk`
//! objects ending with `data: [DONE]`, or one `chat.completion` object when not streaming.
//! Response types are lenient: unknown fields are ignored, `null`/missing fields default,
//! `finish_reason: ""` counts as absent, arguments may be a string or an object.

use async_trait::async_trait;
use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use steward_protocol::{ChatRequest, ChatResponse, ErrorClass, Message, Role, ToolChoice, ToolSpec, Usage};

use crate::assemble::ToolCallAssembler;
use crate::constrained::ServerKind;
use crate::http::{ApiKey, Failure, Step, read_events};
use crate::reply::ReplyBuilder;
use crate::wire::{BodyStream, Settings, Wire};
use crate::{DeltaSink, ProviderError};

/// The OpenAI-compatible Chat Completions wire protocol.
#[derive(Debug)]
pub(crate) struct OpenAiWire {
    /// Role name for system messages: `system`, or `developer` for servers that want it.
    pub system_role: String,
}

/// Renders the request body. `stream` adds `stream_options.include_usage`; `default_choice`
/// applies when the request's choice is `auto`; tools and tool choice are left out when no
/// tool is offered.
pub(crate) fn render_request(
    request: &ChatRequest,
    model: &str,
    stream: bool,
    default_choice: Option<&str>,
    default_max_tokens: Option<u32>,
) -> Value {
    let mut body = json!({
        "model": model,
        "messages": request.messages.iter().map(render_message).collect::<Vec<_>>(),
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if !request.tools.is_empty() {
        body["tools"] = tool_definitions(&request.tools);
        let choice = match (&request.tool_choice, default_choice) {
            (ToolChoice::Auto, Some(d)) => ToolChoice::parse(d),
            (c, _) => c.clone(),
        };
        body["tool_choice"] = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Named(name) => json!({"type": "function", "function": {"name": name}}),
        };
    }
    if let Some(max) = request.max_tokens.or(default_max_tokens) {
        body["max_tokens"] = json!(max);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// The `tools` array of a Chat Completions request (SPEC T10): one
/// `{"type": "function", "function": {"name", "description", "parameters", "strict": true}}`
/// per tool, in order, with `parameters` = [`strict_schema`] of the tool's input schema.
/// `steward tools --json` prints exactly this.
pub fn tool_definitions(tools: &[ToolSpec]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name,
                "description": t.description,
                "parameters": strict_schema(&t.input_schema),
                "strict": true,
            }})
        })
        .collect()
}

/// A tool's input schema in the strict form of OpenAI's structured outputs
/// (<https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>), as
/// SPEC T10 requires for every tool: each object schema (nested ones and array items too)
/// gets `properties` (empty if none), `additionalProperties: false` and every property in
/// `required`; a property that was not required becomes nullable (`null` added to its
/// `type` list, and to its `enum` when it has one; a schema without `type` is wrapped as
/// `anyOf: [schema, {"type": "null"}]`). Other keywords are kept. The gate keeps validating
/// calls against the tool's own schema, which accepts omitted optional arguments too.
pub fn strict_schema(schema: &Value) -> Value {
    let Some(object) = schema.as_object() else { return schema.clone() };
    let mut out = object.clone();
    let is_object = object.get("type").and_then(Value::as_str) == Some("object") || object.contains_key("properties");
    if is_object {
        let required: Vec<&str> =
            object.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let mut properties = serde_json::Map::new();
        let mut names = Vec::new();
        if let Some(props) = object.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                let strict = strict_schema(prop);
                let strict = if required.contains(&name.as_str()) { strict } else { nullable(strict) };
                properties.insert(name.clone(), strict);
                names.push(Value::String(name.clone()));
            }
        }
        out.insert("properties".into(), Value::Object(properties));
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(items) = object.get("items") {
        out.insert("items".into(), strict_schema(items));
    }
    Value::Object(out)
}

/// `schema` that also accepts `null`.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut object) = schema else { return schema };
    let null = Value::String("null".into());
    match object.get_mut("type") {
        Some(Value::String(kind)) if kind == "null" => {}
        Some(Value::String(kind)) => {
            let kind = Value::String(std::mem::take(kind));
            object.insert("type".into(), Value::Array(vec![kind, null]));
        }
        Some(Value::Array(kinds)) => {
            if !kinds.contains(&null) {
                kinds.push(null);
            }
        }
        _ => return json!({"anyOf": [Value::Object(object), {"type": "null"}]}),
    }
    if let Some(Value::Array(values)) = object.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    Value::Object(object)
}

fn render_message(m: &Message) -> Value {
    match m.role {
        Role::System => json!({"role": "system", "content": m.content}),
        Role::User => json!({"role": "user", "content": m.content}),
        Role::Assistant => {
            // An empty string rather than `null` beside tool calls: OpenAI accepts both, but
            // llama-cpp-python's server answers `null` with HTTP 500.
            let mut v = json!({"role": "assistant", "content": m.content});
            if !m.tool_calls.is_empty() {
                v["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}}))
                    .collect();
            }
            v
        }
        Role::Tool => {
            json!({"role": "tool", "tool_call_id": m.tool_call_id.clone().unwrap_or_default(), "content": m.content})
        }
    }
}

#[derive(Deserialize, Default)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
struct Choice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    message: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize, Default)]
struct WireToolCall {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize, Default)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        Usage { input_tokens: self.prompt_tokens.unwrap_or(0), output_tokens: self.completion_tokens.unwrap_or(0) }
    }
}

/// Text of a `content` value: a string, or an array of `{"type":"text","text":…}` parts.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}

/// Arguments as text: a string as is, any other JSON value serialised (some servers send an
/// object).
fn arguments_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn stream_error(provider: &str, err: &Value) -> ProviderError {
    let message = err.get("message").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| err.to_string());
    let status = err.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok());
    let e = ProviderError::new(
        ErrorClass::ProviderError,
        format!("provider '{provider}' reported an error in the stream: {message}"),
    );
    match status {
        Some(429) => ProviderError { class: ErrorClass::RateLimited, ..e.with_status(429) },
        Some(s) => e.with_status(s),
        None => e,
    }
}

fn apply(reply: &mut ReplyBuilder, delta: &Delta, sink: DeltaSink<'_>) {
    if let Some(r) = delta.reasoning_content.as_deref().or(delta.reasoning.as_deref()) {
        reply.text.push_reasoning(r, sink);
    }
    if let Some(c) = &delta.content {
        reply.text.push_text(&content_text(c), sink);
    }
    for (i, tc) in delta.tool_calls.iter().flatten().enumerate() {
        let f = tc.function.as_ref();
        let args = f.and_then(|f| f.arguments.as_ref()).map(arguments_text);
        // A non-streamed message lists calls without indexes: position is the index.
        let index =
            tc.index.or(if delta.tool_calls.as_ref().is_some_and(|v| v.len() > 1) { Some(i as u64) } else { None });
        reply.calls.push(index, tc.id.as_deref(), f.and_then(|f| f.name.as_deref()), args.as_deref(), sink);
    }
}

/// Reads a streamed reply from raw body bytes. Ends normally at `data: [DONE]`, or at the end
/// of the body once a finish reason was received; any other end is `StreamInterrupted`, and
/// no tool call of that stream is returned.
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
    let done = read_events(provider, bytes, &mut reply, |reply, data| {
        if data == "[DONE]" {
            return Ok(Step::End);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ProviderError::new(
                ErrorClass::ProviderError,
                format!("provider '{provider}' sent an unreadable stream chunk: {e}"),
            )
        })?;
        if let Some(err) = &chunk.error {
            return Err(stream_error(provider, err).into());
        }
        if let Some(m) = chunk.model.as_deref().filter(|m| !m.is_empty()) {
            reply.model = m.to_string();
        }
        if let Some(u) = &chunk.usage {
            reply.usage = u.usage();
        }
        for choice in chunk.choices.iter().filter(|c| c.index.unwrap_or(0) == 0) {
            if let Some(delta) = choice.delta.as_ref().or(choice.message.as_ref()) {
                apply(reply, delta, sink);
            }
            reply.set_finish(choice.finish_reason.as_deref());
        }
        Ok(Step::Continue)
    })
    .await?;
    if !done && reply.finish.is_none() {
        return Err(reply.interrupted(provider, "no finish_reason and no [DONE]").into());
    }
    Ok(reply.finish(sink))
}

/// Reads a non-streamed `chat.completion` body; the whole text is passed on as one delta.
pub(crate) fn read_whole(
    provider: &str,
    body: &str,
    mut reply: ReplyBuilder,
    sink: DeltaSink<'_>,
) -> Result<ChatResponse, Failure> {
    let chunk: Chunk = serde_json::from_str(body).map_err(|e| {
        ProviderError::new(ErrorClass::ProviderError, format!("provider '{provider}' sent an unreadable reply: {e}"))
    })?;
    if let Some(err) = &chunk.error {
        return Err(stream_error(provider, err).into());
    }
    let choice = chunk.choices.iter().find(|c| c.index.unwrap_or(0) == 0).ok_or_else(|| {
        ProviderError::new(ErrorClass::ProviderError, format!("provider '{provider}' sent a reply without choices"))
    })?;
    if let Some(m) = chunk.model.as_deref().filter(|m| !m.is_empty()) {
        reply.model = m.to_string();
    }
    if let Some(u) = &chunk.usage {
        reply.usage = u.usage();
    }
    if let Some(message) = choice.message.as_ref().or(choice.delta.as_ref()) {
        apply(&mut reply, message, sink);
    }
    reply.set_finish(choice.finish_reason.as_deref().or(Some("stop")));
    Ok(reply.finish(sink))
}

#[async_trait]
impl Wire for OpenAiWire {
    const CHAT_PATH: &'static str = "/chat/completions";
    const MODELS_PATH: &'static str = "/models";
    const CONSTRAINS: bool = true;

    fn authorise(&self, key: Option<&ApiKey>, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match key {
            Some(k) => request.bearer_auth(k.expose()),
            None => request,
        }
    }

    fn body(&self, request: &ChatRequest, model: &str, settings: &Settings) -> Value {
        let mut body =
            render_request(request, model, settings.stream, settings.tool_choice.as_deref(), settings.max_tokens);
        if self.system_role != "system"
            && let Some(messages) = body["messages"].as_array_mut()
        {
            for m in messages.iter_mut().filter(|m| m["role"] == "system") {
                m["role"] = Value::String(self.system_role.clone());
            }
        }
        body
    }

    fn constrain(&self, body: &mut Value, request: &ChatRequest, kind: ServerKind) -> Option<String> {
        crate::constrained::constrain(body, request, kind)
    }

    fn assembler(&self) -> ToolCallAssembler {
        ToolCallAssembler::default()
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
#[path = "openai_tests.rs"]
mod tests;
