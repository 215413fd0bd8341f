use super::*;
use bytes::Bytes;
use steward_protocol::{FinishReason, Message, StreamDelta, ToolCall, ToolSpec};

fn request() -> ChatRequest {
    ChatRequest {
        model: "claude-test".into(),
        messages: vec![
            Message::system("be brief"),
            Message::user("read both"),
            Message::assistant(
                "Reading.",
                vec![
                    ToolCall { id: "toolu_1".into(), name: "read".into(), arguments: json!({"path": "a"}) },
                    ToolCall { id: "toolu_2".into(), name: "read".into(), arguments: json!({"path": "b"}) },
                ],
            ),
            Message::tool_result("toolu_1", "A", false),
            Message::tool_result("toolu_2", "no such file", true),
            Message::user("and now?"),
        ],
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            risk: steward_protocol::RiskLevel::Low,
            writes: false,
            path_inputs: vec![],
            untrusted_output: false,
        }],
        tool_choice: ToolChoice::Required,
        max_tokens: None,
        temperature: None,
        constrain: false,
    }
}

#[test]
fn request_rendering_merges_tool_results_into_one_user_turn() {
    let body = render_request(&request(), "claude-test", true, None, None);
    assert_eq!(body["system"], "be brief");
    assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    assert_eq!(body["stream"], true);
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        body["tools"],
        json!([{"name": "read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"path": {"type": ["string", "null"]}}, "required": ["path"], "additionalProperties": false}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "read both"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file", "is_error": true},
                {"type": "text", "text": "and now?"}
            ]}
        ])
    );
    let mut req = request();
    req.tool_choice = ToolChoice::Named("read".into());
    req.max_tokens = Some(50);
    let body = render_request(&req, "m", false, None, Some(10));
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "read"}));
    assert_eq!(body["max_tokens"], 50);
    assert!(body.get("stream").is_none());
    req.tool_choice = ToolChoice::Auto;
    assert_eq!(render_request(&req, "m", false, Some("none"), None)["tool_choice"], json!({"type": "none"}));
}

fn events(list: &[Value]) -> Vec<u8> {
    list.iter()
        .map(|e| format!("event: {}\ndata: {}\n\n", e["type"].as_str().unwrap(), e))
        .collect::<String>()
        .into_bytes()
}

async fn run(body: Vec<u8>) -> (Result<ChatResponse, Failure>, Vec<StreamDelta>) {
    let req = request();
    let reply = ReplyBuilder::new(true, &req, ToolCallAssembler::with_closing());
    let mut deltas = Vec::new();
    let stream = futures::stream::iter(
        body.chunks(7).map(|c| Ok::<_, std::io::Error>(Bytes::copy_from_slice(c))).collect::<Vec<_>>(),
    );
    let r = read_stream("anthropic", stream, reply, &mut |d| deltas.push(d)).await;
    (r, deltas)
}

fn tool_stream(stop_reason: &str, close: bool) -> Vec<Value> {
    let mut list = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-served", "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me read."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_9", "name": "read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\":"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": " \"src/é.rs\"}"}}),
    ];
    if close {
        list.push(json!({"type": "content_block_stop", "index": 1}));
    }
    list.push(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 30}}));
    list.push(json!({"type": "message_stop"}));
    list
}

#[tokio::test]
async fn streamed_text_and_tool_use() {
    let (r, deltas) = run(events(&tool_stream("tool_use", true))).await;
    let reply = r.unwrap();
    assert_eq!(reply.text, "Let me read.");
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall { id: "toolu_9".into(), name: "read".into(), arguments: json!({"path": "src/é.rs"}) }]
    );
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (12, 30));
    assert_eq!(reply.model, "claude-served");
    assert!(deltas.contains(&StreamDelta::ToolCallStarted { id: "toolu_9".into(), name: "read".into() }));
}

#[tokio::test]
async fn max_tokens_cuts_an_open_tool_use_block() {
    let (r, _) = run(events(&tool_stream("max_tokens", false))).await;
    let reply = r.unwrap();
    assert!(reply.tool_calls.is_empty());
    assert_eq!(reply.finish_reason, Some(FinishReason::Length));
    assert!(
        reply.invalid_tool_calls[0].error.starts_with("tool call toolu_9 (read) truncated: finish_reason=max_tokens")
    );
}

#[tokio::test]
async fn stream_ending_early_is_interrupted() {
    let mut list = tool_stream("tool_use", true);
    list.truncate(7);
    let (r, _) = run(events(&list)).await;
    let err = r.unwrap_err().error;
    assert_eq!(err.class, ErrorClass::StreamInterrupted);
    assert!(err.message.contains("tool call toolu_9 (read) truncated: stream ended early, 8 bytes"), "{}", err.message);
}

#[tokio::test]
async fn error_event_is_classified() {
    let list = vec![json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})];
    let (r, _) = run(events(&list)).await;
    let err = r.unwrap_err().error;
    assert_eq!(err.status, Some(529));
    assert!(err.is_retryable());
}

#[test]
fn non_streamed_message() {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}
        ],
        "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 4}
    });
    let req = request();
    let reply = read_whole(
        "a",
        &body.to_string(),
        ReplyBuilder::new(true, &req, ToolCallAssembler::with_closing()),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall { id: "toolu_1".into(), name: "read".into(), arguments: json!({"path": "a"}) }]
    );
    assert_eq!(reply.reasoning, "hmm");
    assert_eq!(reply.text, "Reading.");
    let err = read_whole(
        "a",
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        ReplyBuilder::new(true, &req, ToolCallAssembler::with_closing()),
        &mut |_| {},
    )
    .unwrap_err()
    .error;
    assert_eq!(err.class, ErrorClass::RateLimited);
}
