use super::*;
use bytes::Bytes;
use steward_protocol::{FinishReason, Message, StreamDelta, ToolCall, ToolSpec};

fn request() -> ChatRequest {
    ChatRequest {
        model: "gpt-test".into(),
        messages: vec![
            Message::system("be brief"),
            Message::user("read both"),
            Message::assistant(
                "Reading.",
                vec![
                    ToolCall { id: "call_1".into(), name: "read".into(), arguments: json!({"path": "a"}) },
                    ToolCall { id: "call_2".into(), name: "read".into(), arguments: json!({"path": "b"}) },
                ],
            ),
            Message::tool_result("call_1", "A", false),
            Message::tool_result("call_2", "no such file", true),
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
        tool_choice: ToolChoice::Auto,
        max_tokens: Some(300),
        temperature: None,
        constrain: false,
    }
}

#[test]
fn request_rendering_gives_calls_and_their_outputs_as_items() {
    let body = render_request(&request(), "gpt-test", true, None, None);
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["instructions"], "be brief");
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["max_output_tokens"], 300);
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "read", "description": "Read a file", "strict": true,
            "parameters": {"type": "object", "properties": {"path": {"type": ["string", "null"]}},
                "required": ["path"], "additionalProperties": false}}])
    );
    assert_eq!(
        body["input"],
        json!([
            {"role": "user", "content": "read both"},
            {"role": "assistant", "content": "Reading."},
            {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "read", "arguments": "{\"path\":\"b\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "A"},
            {"type": "function_call_output", "call_id": "call_2", "output": "no such file"},
            {"role": "user", "content": "and now?"}
        ])
    );
    let mut named = request();
    named.tool_choice = ToolChoice::Named("read".into());
    let body = render_request(&named, "gpt-test", false, None, None);
    assert_eq!(body["tool_choice"], json!({"type": "function", "name": "read"}));
    assert!(body.get("stream").is_none());
}

fn event(v: Value) -> String {
    format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap())
}

/// A streamed reply with text, reasoning and two calls (the second call's arguments arrive
/// only in its `output_item.done`), ending with usage.
fn text_and_calls() -> Vec<u8> {
    [
        json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-test-2026", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "think"}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 1, "delta": "Grüße "}),
        json!({"type": "response.output_text.delta", "output_index": 1, "delta": "漢字🙂"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "Grüße 漢字🙂"}]}}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "read", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2, "delta": "{\"pa"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2, "delta": "th\":\"a\"}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 2, "arguments": "{\"path\":\"a\"}"}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "read", "arguments": "{\"path\":\"a\"}"}}),
        json!({"type": "response.output_item.added", "output_index": 3, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "read", "arguments": ""}}),
        json!({"type": "response.output_item.done", "output_index": 3, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "read", "arguments": "{\"path\":\"b\"}"}}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "model": "gpt-test-2026", "status": "completed", "output": [],
            "usage": {"input_tokens": 42, "output_tokens": 7, "total_tokens": 49}}}),
    ]
    .into_iter()
    .map(event)
    .collect::<String>()
    .into_bytes()
}

/// Feeds `body` split at the given byte offsets.
async fn run_split(body: &[u8], cuts: &[usize]) -> (Result<ChatResponse, Failure>, Vec<StreamDelta>) {
    let mut pieces = Vec::new();
    let mut start = 0;
    for &c in cuts.iter().chain(std::iter::once(&body.len())) {
        let c = c.clamp(start, body.len());
        pieces.push(Ok::<_, std::io::Error>(Bytes::copy_from_slice(&body[start..c])));
        start = c;
    }
    let req = request();
    let reply = ReplyBuilder::new(true, &req, ToolCallAssembler::with_closing());
    let mut deltas = Vec::new();
    let result = read_stream("test", futures::stream::iter(pieces), reply, &mut |d| deltas.push(d)).await;
    (result, deltas)
}

#[tokio::test]
async fn a_streamed_reply_gives_text_reasoning_calls_and_usage() {
    let (result, deltas) = run_split(&text_and_calls(), &[]).await;
    let reply = result.unwrap();
    assert_eq!(reply.text, "Grüße 漢字🙂");
    assert_eq!(reply.reasoning, "think");
    assert_eq!(reply.model, "gpt-test-2026");
    assert_eq!(
        reply.tool_calls,
        vec![
            ToolCall { id: "call_a".into(), name: "read".into(), arguments: json!({"path": "a"}) },
            ToolCall { id: "call_b".into(), name: "read".into(), arguments: json!({"path": "b"}) },
        ]
    );
    assert!(reply.invalid_tool_calls.is_empty(), "{:?}", reply.invalid_tool_calls);
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (42, 7));
    let texts: String = deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, "Grüße 漢字🙂", "text is streamed as it arrives");
    let started = deltas.iter().filter(|d| matches!(d, StreamDelta::ToolCallStarted { .. })).count();
    assert_eq!(started, 2);
}

/// Property-style: the same reply however the bytes are split, at every single position
/// (mid-line, mid-JSON, mid-UTF-8) and at many random multi-cut positions.
#[tokio::test]
async fn a_stream_split_anywhere_gives_the_same_reply() {
    let body = text_and_calls();
    let crlf = String::from_utf8(body.clone()).unwrap().replace('\n', "\r\n").into_bytes();
    let (whole, _) = run_split(&body, &[]).await;
    let whole = whole.unwrap();
    for body in [body, crlf] {
        for cut in 0..body.len() {
            let (r, _) = run_split(&body, &[cut]).await;
            assert_eq!(r.unwrap(), whole, "cut at {cut}");
        }
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200 {
            let mut cuts: Vec<usize> = (0..8)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed % body.len() as u64) as usize
                })
                .collect();
            cuts.sort_unstable();
            let (r, _) = run_split(&body, &cuts).await;
            assert_eq!(r.unwrap(), whole, "cuts {cuts:?}");
        }
    }
}

#[tokio::test]
async fn a_stream_cut_before_completed_is_interrupted_and_returns_no_call() {
    let body = text_and_calls();
    let text = String::from_utf8(body).unwrap();
    let cut = text.find("event: response.completed").unwrap();
    let (result, _) = run_split(&text.as_bytes()[..cut], &[]).await;
    let failure = result.unwrap_err();
    assert_eq!(failure.error.class, ErrorClass::StreamInterrupted);
    assert!(failure.error.message.contains("call_a"), "{}", failure.error.message);
    // Cut inside a call's arguments: interrupted too, never a call with half its arguments.
    let cut = text.find("th\\\"").unwrap();
    let (result, _) = run_split(&text.as_bytes()[..cut], &[]).await;
    assert_eq!(result.unwrap_err().error.class, ErrorClass::StreamInterrupted);
}

#[tokio::test]
async fn incomplete_failed_and_error_events_are_classified() {
    let incomplete = [
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "half"}),
        json!({"type": "response.incomplete", "response": {"status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 1, "output_tokens": 2}}}),
    ]
    .into_iter()
    .map(event)
    .collect::<String>();
    let reply = run_split(incomplete.as_bytes(), &[]).await.0.unwrap();
    assert_eq!(reply.finish_reason, Some(FinishReason::Length));
    assert_eq!(reply.text, "half");

    let failed = event(json!({"type": "response.failed", "response": {"status": "failed",
        "error": {"code": "server_error", "message": "boom"}}}));
    let failure = run_split(failed.as_bytes(), &[]).await.0.unwrap_err();
    assert_eq!((failure.error.class, failure.error.status), (ErrorClass::ProviderError, Some(500)));
    assert!(failure.error.message.contains("boom"));

    let limited = event(json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}));
    let failure = run_split(limited.as_bytes(), &[]).await.0.unwrap_err();
    assert_eq!(failure.error.class, ErrorClass::RateLimited);

    let garbage = "data: {not json\n\n";
    let failure = run_split(garbage.as_bytes(), &[]).await.0.unwrap_err();
    assert_eq!(failure.error.class, ErrorClass::ProviderError);
}

#[test]
fn a_whole_response_gives_text_and_calls() {
    let body = json!({"id": "resp_1", "model": "gpt-test", "status": "completed",
        "output": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
            {"type": "function_call", "call_id": "call_x", "name": "read", "arguments": "{\"path\":\"x\"}"}
        ],
        "usage": {"input_tokens": 5, "output_tokens": 3}})
    .to_string();
    let req = request();
    let reply = ReplyBuilder::new(true, &req, ToolCallAssembler::with_closing());
    let r = read_whole("test", &body, reply, &mut |_| {}).unwrap();
    assert_eq!(r.text, "Looking.");
    assert_eq!(
        r.tool_calls,
        vec![ToolCall { id: "call_x".into(), name: "read".into(), arguments: json!({"path": "x"}) }]
    );
    assert_eq!(r.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(r.usage.output_tokens, 3);
}
