//! Tests against the real aimock server (npm `@copilotkit/aimock`), a canned OpenAI/Anthropic
//! wire server. `STEWARD_TEST_AIMOCK` must name its `llmock` binary (see `.ci/peers.sh`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use steward_protocol::{ChatRequest, FinishReason, Message, RiskLevel, StreamDelta, ToolCall, ToolChoice, ToolSpec};
use steward_provider::{ApiKeyEnv, ErrorClass, Provider, ProviderConfig, ProviderKind, build_provider};

const KEY: &str = "sk-aimock-peer-test-0123456789";

/// A running aimock; killed when dropped.
struct Aimock(steward_peers::Peer);

impl Aimock {
    /// aimock answering 401 unless a request carries exactly [`KEY`].
    fn start(fixtures: Value) -> Aimock {
        Aimock(steward_peers::aimock(fixtures, Some(KEY)))
    }

    fn url(&self) -> String {
        self.0.url()
    }

    fn provider(&self, kind: ProviderKind, backoff_ms: u64) -> Arc<dyn Provider> {
        self.provider_with_key(kind, backoff_ms, KEY)
    }

    fn provider_with_key(&self, kind: ProviderKind, backoff_ms: u64, key: &str) -> Arc<dyn Provider> {
        let mut cfg = ProviderConfig::new(kind);
        cfg.base_url = Some(match kind {
            ProviderKind::Anthropic => self.url(),
            _ => format!("{}/v1", self.url()),
        });
        cfg.api_key_env = Some(ApiKeyEnv::One("PEER_TEST_KEY".into()));
        cfg.default_model = Some("gpt-4o".into());
        cfg.retry_backoff_ms = Some(backoff_ms);
        cfg.timeout_ms = Some(10_000);
        build_provider("aimock", &cfg, &|name| (name == "PEER_TEST_KEY").then(|| key.to_string())).unwrap()
    }

    /// Requests the server received on `path`, from its journal.
    async fn journal(&self, path: &str) -> Vec<Value> {
        let all: Vec<Value> = reqwest::Client::new()
            .get(format!("{}/__aimock/journal", self.url()))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        all.into_iter().filter(|e| e["path"] == path).collect()
    }
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        model: String::new(),
        messages: vec![Message::system("test"), Message::user(text)],
        tools: ["read_file", "write_file"]
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                description: format!("{n} tool"),
                input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
                risk: RiskLevel::Low,
                writes: false,
                path_inputs: vec![],
                untrusted_output: false,
            })
            .collect(),
        tool_choice: ToolChoice::Auto,
        max_tokens: None,
        temperature: None,
        constrain: false,
    }
}

async fn stream(
    p: &Arc<dyn Provider>,
    text: &str,
) -> (Result<steward_protocol::ChatResponse, steward_provider::ProviderError>, Vec<StreamDelta>) {
    let mut deltas = Vec::new();
    let r = p.stream(&request(text), &mut |d| deltas.push(d)).await;
    (r, deltas)
}

fn fixtures() -> Value {
    json!([
        {"match": {"userMessage": "say hello"}, "response": {"content": "Hi there, friend!"}, "chunkSize": 4},
        {"match": {"userMessage": "read both"}, "response": {"toolCalls": [
            {"name": "read_file", "arguments": {"path": "src/a.rs"}},
            {"name": "read_file", "arguments": {"path": "src/b.rs"}}
        ]}},
        {"match": {"userMessage": "rate limited", "sequenceIndex": 0},
         "response": {"error": {"message": "slow down", "type": "rate_limit_error"}, "status": 429, "retryAfter": 2}},
        {"match": {"userMessage": "rate limited", "sequenceIndex": 1}, "response": {"content": "finally"}},
        {"match": {"userMessage": "always broken"}, "response": {"error": {"message": "boom", "type": "server_error"}, "status": 500}},
        {"match": {"userMessage": "drop the write"},
         "response": {"toolCalls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "a long long long long text"}}]},
         "truncateAfterChunks": 4, "chunkSize": 5, "latency": 20},
        {"match": {"userMessage": "drop the text"},
         "response": {"content": "Some long text that is cut off in the middle of it"},
         "truncateAfterChunks": 3, "chunkSize": 5, "latency": 20}
    ])
}

fn text_of(deltas: &[StreamDelta]) -> String {
    deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn peer_aimock_openai_streamed_text() {
    let mock = Aimock::start(fixtures());
    let p = mock.provider(ProviderKind::Openai, 10);
    let (r, deltas) = stream(&p, "say hello").await;
    let reply = r.unwrap();
    assert_eq!(reply.text, "Hi there, friend!");
    assert_eq!(text_of(&deltas), "Hi there, friend!");
    assert!(deltas.iter().filter(|d| matches!(d, StreamDelta::Text { .. })).count() > 1, "text arrives in pieces");
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
    assert!(reply.usage.output_tokens > 0, "include_usage gives a usage chunk");

    // aimock checked the key (AIMOCK_API_KEYS); it travels in the Authorization header,
    // never in the URL or the body.
    let sent = mock.journal("/v1/chat/completions").await;
    assert_eq!(sent.len(), 1);
    assert!(sent[0]["headers"]["authorization"].is_string());
    assert!(!sent[0]["path"].as_str().unwrap().contains('?'));
    assert!(!sent[0]["body"].to_string().contains(KEY));
    assert_eq!(sent[0]["body"]["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent[0]["body"]["model"], "gpt-4o");
    // A server on this machine (loopback) gets the reply's share of the window as its output
    // limit when nothing sets one; its window is unknown here, so the whole share.
    assert_eq!(sent[0]["body"]["max_tokens"], json!(steward_provider::DEFAULT_REPLY_SHARE));

    let models = p.list_models().await.unwrap();
    assert!(models.iter().any(|m| m == "gpt-4o"), "{models:?}");

    // A rejected key: classified, not retried, and the key is not in the message.
    let wrong = "sk-wrong-key-0000000000";
    let err = mock.provider_with_key(ProviderKind::Openai, 10, wrong).chat(&request("say hello")).await.unwrap_err();
    assert_eq!((err.class, err.status), (ErrorClass::ProviderError, Some(401)));
    assert!(err.message.contains("rejected the API key") && err.message.contains("PEER_TEST_KEY"), "{}", err.message);
    assert!(!err.message.contains(wrong), "{}", err.message);
}

#[tokio::test]
async fn peer_aimock_openai_streamed_tool_calls() {
    let mock = Aimock::start(fixtures());
    let p = mock.provider(ProviderKind::Openai, 10);
    let (r, deltas) = stream(&p, "read both").await;
    let reply = r.unwrap();
    let shape: Vec<(String, Value)> = reply.tool_calls.iter().map(|c| (c.name.clone(), c.arguments.clone())).collect();
    assert_eq!(
        shape,
        vec![("read_file".into(), json!({"path": "src/a.rs"})), ("read_file".into(), json!({"path": "src/b.rs"}))]
    );
    assert!(reply.invalid_tool_calls.is_empty());
    assert_ne!(reply.tool_calls[0].id, reply.tool_calls[1].id);
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(deltas.iter().filter(|d| matches!(d, StreamDelta::ToolCallStarted { .. })).count(), 2);
}

#[tokio::test]
async fn peer_aimock_429_retry_after_then_success() {
    let mock = Aimock::start(fixtures());
    let p = mock.provider(ProviderKind::Openai, 10);
    let started = Instant::now();
    let (r, deltas) = stream(&p, "rate limited").await;
    let elapsed = started.elapsed();
    assert_eq!(r.unwrap().text, "finally");
    assert!(elapsed >= Duration::from_secs(2), "Retry-After: 2 must be honoured, waited {elapsed:?}");
    assert!(deltas.iter().any(|d| matches!(d, StreamDelta::Notice { .. })), "a retry notice is sent");
    assert_eq!(mock.journal("/v1/chat/completions").await.len(), 2);
}

#[tokio::test]
async fn peer_aimock_500_is_classified_after_retries() {
    let mock = Aimock::start(fixtures());
    let p = mock.provider(ProviderKind::Openai, 10);
    let (r, deltas) = stream(&p, "always broken").await;
    let err = r.unwrap_err();
    assert_eq!((err.class, err.status), (ErrorClass::ProviderError, Some(500)));
    assert!(err.message.contains("HTTP 500") && err.message.contains("boom"), "{}", err.message);
    assert!(err.message.contains("after 3 tries"), "{}", err.message);
    assert!(!err.message.contains(KEY));
    assert_eq!(mock.journal("/v1/chat/completions").await.len(), 3, "3 tries in total");
    assert_eq!(text_of(&deltas), "");
}

#[tokio::test]
async fn peer_aimock_mid_stream_disconnect() {
    let mock = Aimock::start(fixtures());
    let p = mock.provider(ProviderKind::Openai, 10);

    let (r, deltas) = stream(&p, "drop the write").await;
    let err = r.unwrap_err();
    assert_eq!(err.class, ErrorClass::StreamInterrupted);
    assert!(err.message.contains("ended before the reply was complete"), "{}", err.message);
    assert!(err.message.contains("(write_file) truncated: stream ended early"), "{}", err.message);
    assert!(deltas.iter().any(|d| matches!(d, StreamDelta::ToolCallStarted { name, .. } if name == "write_file")));
    // A delta was shown, so the call is not retried.
    assert_eq!(mock.journal("/v1/chat/completions").await.len(), 1);

    let (r, _) = stream(&p, "drop the text").await;
    assert_eq!(r.unwrap_err().class, ErrorClass::StreamInterrupted);
}

#[tokio::test]
async fn peer_aimock_anthropic_streamed_text_and_tool_use() {
    let mock = Aimock::start(fixtures());
    let p = mock.provider(ProviderKind::Anthropic, 10);

    let (r, deltas) = stream(&p, "say hello").await;
    let reply = r.unwrap();
    assert_eq!(reply.text, "Hi there, friend!");
    assert_eq!(text_of(&deltas), "Hi there, friend!");
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));

    let (r, _) = stream(&p, "read both").await;
    let reply = r.unwrap();
    let calls: Vec<ToolCall> = reply.tool_calls.clone();
    assert_eq!(calls.len(), 2);
    assert!(calls[0].id.starts_with("toolu_"), "{}", calls[0].id);
    assert_eq!(calls[0].arguments, json!({"path": "src/a.rs"}));
    assert_eq!(calls[1].arguments, json!({"path": "src/b.rs"}));
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));

    let sent = mock.journal("/v1/messages").await;
    assert_eq!(sent.len(), 2);
    assert!(sent[0]["headers"]["x-api-key"].is_string());
    assert_eq!(sent[0]["headers"]["anthropic-version"], "2023-06-01");
    assert!(sent[0]["headers"].get("authorization").is_none());
}

/// The OpenAI Responses API (`kind = "openai-responses"`): streamed text, streamed function
/// calls, and the calls with their `function_call_output` items on the next request.
#[tokio::test]
async fn peer_aimock_openai_responses_text_calls_and_outputs() {
    let mock = Aimock::start(json!([
        {"match": {"toolCallId": "call_r2"}, "response": {"content": "Both files read."}, "chunkSize": 5},
        {"match": {"userMessage": "read both"}, "response": {"toolCalls": [
            {"id": "call_r1", "name": "read_file", "arguments": {"path": "src/a.rs"}},
            {"id": "call_r2", "name": "read_file", "arguments": {"path": "src/b.rs"}}
        ]}, "chunkSize": 3},
        {"match": {"userMessage": "say hello"}, "response": {"content": "Hi there, friend!"}, "chunkSize": 4}
    ]));
    let p = mock.provider(ProviderKind::OpenaiResponses, 10);

    let (r, deltas) = stream(&p, "say hello").await;
    let reply = r.unwrap();
    assert_eq!(reply.text, "Hi there, friend!");
    assert_eq!(text_of(&deltas), "Hi there, friend!");
    assert!(deltas.iter().filter(|d| matches!(d, StreamDelta::Text { .. })).count() > 1, "text arrives in pieces");
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));

    let (r, deltas) = stream(&p, "read both").await;
    let reply = r.unwrap();
    assert_eq!(
        reply.tool_calls,
        vec![
            ToolCall { id: "call_r1".into(), name: "read_file".into(), arguments: json!({"path": "src/a.rs"}) },
            ToolCall { id: "call_r2".into(), name: "read_file".into(), arguments: json!({"path": "src/b.rs"}) },
        ]
    );
    assert!(reply.invalid_tool_calls.is_empty(), "{:?}", reply.invalid_tool_calls);
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(deltas.iter().filter(|d| matches!(d, StreamDelta::ToolCallStarted { .. })).count(), 2);

    // The next request carries the calls and their outputs; aimock answers it only when the
    // last item is the output of `call_r2`.
    let mut next = request("read both");
    next.messages.push(Message::assistant("", reply.tool_calls.clone()));
    next.messages.push(Message::tool_result("call_r1", "fn a() {}", false));
    next.messages.push(Message::tool_result("call_r2", "fn b() {}", false));
    let mut pieces = Vec::new();
    let reply = p.stream(&next, &mut |d| pieces.push(d)).await.unwrap();
    assert_eq!(reply.text, "Both files read.");

    // aimock's journal holds each request as it read it, in Chat Completions terms: the
    // instructions as the system message, each `function_call` item as an assistant tool call
    // and each `function_call_output` as a tool message.
    let sent = mock.journal("/v1/responses").await;
    assert_eq!(sent.len(), 3, "{sent:?}");
    let body = &sent[2]["body"];
    assert_eq!(body["model"], "gpt-4o");
    assert_eq!(body["stream"], true);
    let messages: Vec<&Value> = body["messages"].as_array().unwrap().iter().collect();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[0]["content"], "test");
    let calls: Vec<(&str, &str)> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|c| (c["id"].as_str().unwrap(), c["function"]["arguments"].as_str().unwrap()))
        .collect();
    assert_eq!(calls, vec![("call_r1", r#"{"path":"src/a.rs"}"#), ("call_r2", r#"{"path":"src/b.rs"}"#)]);
    let outputs: Vec<(&str, &str)> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| (m["tool_call_id"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(outputs, vec![("call_r1", "fn a() {}"), ("call_r2", "fn b() {}")]);
    assert!(sent[2]["headers"]["authorization"].is_string());
    assert!(!body.to_string().contains(KEY));
}
