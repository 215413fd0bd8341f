use super::*;
use bytes::Bytes;
use serde_json::json;
use steward_protocol::{FinishReason, StreamDelta, ToolCall, ToolSpec};

const CASES: &str = include_str!("testdata/cases_b01_b03_b04.json");

fn case(id: &str) -> Value {
    serde_json::from_str::<Value>(CASES).unwrap()[id].clone()
}

fn lines(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect()
}

fn request(tools: &[&str]) -> ChatRequest {
    ChatRequest {
        model: "test-model".into(),
        messages: vec![Message::user("go")],
        tools: tools
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                description: format!("{n} tool"),
                input_schema: json!({"type": "object"}),
                risk: steward_protocol::RiskLevel::Low,
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

/// SSE body bytes from complete `data:` lines.
fn sse_body(data_lines: &[String]) -> Vec<u8> {
    data_lines.iter().map(|l| format!("{l}\n\n")).collect::<String>().into_bytes()
}

/// Feeds `body` split at the given byte offsets.
async fn run_split(
    body: &[u8],
    cuts: &[usize],
    tools: &[&str],
    recover: bool,
) -> (Result<ChatResponse, Failure>, Vec<StreamDelta>) {
    let mut pieces = Vec::new();
    let mut start = 0;
    for &c in cuts.iter().chain(std::iter::once(&body.len())) {
        let c = c.clamp(start, body.len());
        pieces.push(Ok::<_, std::io::Error>(Bytes::copy_from_slice(&body[start..c])));
        start = c;
    }
    let req = request(tools);
    let reply = ReplyBuilder::new(recover, &req, ToolCallAssembler::default());
    let mut deltas = Vec::new();
    let result = read_stream("test", futures::stream::iter(pieces), reply, &mut |d| deltas.push(d)).await;
    (result, deltas)
}

async fn run(data_lines: &[String], tools: &[&str]) -> Result<ChatResponse, Failure> {
    run_split(&sse_body(data_lines), &[], tools, true).await.0
}

fn read_file(id: &str, path: &str) -> ToolCall {
    ToolCall { id: id.into(), name: "read_file".into(), arguments: json!({"path": path}) }
}

#[tokio::test]
async fn b01_same_index_parallel_calls() {
    let input = case("B01");
    for stream in ["stream_same_index", "stream_missing_index", "control_well_formed_interleaved"] {
        let reply =
            run(&lines(&input[stream]), &["read_file"]).await.unwrap_or_else(|f| panic!("{stream}: {:?}", f.error));
        assert_eq!(
            reply.tool_calls,
            vec![read_file("call_A", "src/a.rs"), read_file("call_B", "src/b.rs")],
            "{stream}"
        );
        assert!(reply.invalid_tool_calls.is_empty(), "{stream}");
        assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(reply.model, "test-model");
    }
}

#[tokio::test]
async fn b03_truncated_arguments_finish_length() {
    let input = case("B03");
    let reply = run(&lines(&input["stream_finish_length"]), &["write_file"]).await.unwrap();
    assert!(reply.tool_calls.is_empty());
    assert_eq!(reply.finish_reason, Some(FinishReason::Length));
    let bad = &reply.invalid_tool_calls[0];
    let raw = "{\"path\":\"notes.md\",\"content\":\"# Title\\nline one\\nline two";
    assert_eq!((bad.id.as_str(), bad.name.as_str(), bad.raw_arguments.as_str()), ("call_w", "write_file", raw));
    assert_eq!(
        bad.error,
        format!(
            "tool call call_w (write_file) truncated: finish_reason=length, {} bytes of arguments received",
            raw.len()
        )
    );
}

#[tokio::test]
async fn b03_truncated_arguments_eof() {
    let input = case("B03");
    let first_two: Vec<String> = lines(&input["stream_finish_length"]).into_iter().take(2).collect();
    let failure = run(&first_two, &["write_file"]).await.unwrap_err();
    let raw_len = "{\"path\":\"notes.md\",\"content\":\"# Title\\nline one\\nline two".len();
    assert_eq!(failure.error.class, ErrorClass::StreamInterrupted);
    assert!(failure.error.message.contains("ended before the reply was complete"), "{}", failure.error.message);
    assert!(
        failure.error.message.contains(&format!(
            "tool call call_w (write_file) truncated: stream ended early, {raw_len} bytes of arguments received"
        )),
        "{}",
        failure.error.message
    );
}

#[tokio::test]
async fn llama_cpp_cut_call_with_finish_tool_calls_is_invalid() {
    let data = vec![
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"src/"}}]},"finish_reason":null}]}"#.to_string(),
        r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.to_string(),
        "data: [DONE]".to_string(),
    ];
    let reply = run(&data, &["read_file"]).await.unwrap();
    assert!(reply.tool_calls.is_empty());
    assert_eq!(reply.invalid_tool_calls[0].id, "call_x");
    assert!(
        reply.invalid_tool_calls[0].error.contains("invalid JSON arguments"),
        "{}",
        reply.invalid_tool_calls[0].error
    );
}

/// B04's NDJSON content pieces, re-sent as OpenAI-compatible content deltas (Ollama's `/v1`
/// endpoint streams the same text this way).
fn b04_as_sse(ndjson: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for line in lines(ndjson) {
        let v: Value = serde_json::from_str(&line).unwrap();
        let content = v["message"]["content"].as_str().unwrap();
        let finish = if v["done"].as_bool().unwrap() { json!(v["done_reason"]) } else { Value::Null };
        let chunk = json!({"model": v["model"], "choices": [{"index": 0, "delta": {"role": "assistant", "content": content}, "finish_reason": finish}]});
        out.push(format!("data: {chunk}"));
    }
    out.push("data: [DONE]".into());
    out
}

#[tokio::test]
async fn b04_tool_call_in_content() {
    let input = case("B04");
    let tools = ["get_current_location"];

    let (result, deltas) = run_split(&sse_body(&b04_as_sse(&input["stream"])), &[], &tools, true).await;
    let reply = result.unwrap();
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall { id: "call_recovered_1".into(), name: "get_current_location".into(), arguments: json!({}) }]
    );
    assert_eq!(reply.text, "");
    assert!(!deltas.iter().any(|d| matches!(d, StreamDelta::Text { .. })), "JSON must not be shown: {deltas:?}");

    let undeclared = run(&b04_as_sse(&input["variant_undeclared_name"]), &tools).await.unwrap();
    assert!(undeclared.tool_calls.is_empty());
    assert_eq!(undeclared.text, "{\"name\": \"delete_all_files\", \"arguments\": {}}");

    let prose = run(&b04_as_sse(&input["variant_prose_with_json"]), &tools).await.unwrap();
    assert!(prose.tool_calls.is_empty());
    assert_eq!(
        prose.text,
        "Here is an example payload: {\"name\": \"get_current_location\", \"parameters\": {}} - no call needed."
    );

    for variant in ["stream", "variant_undeclared_name", "variant_prose_with_json"] {
        let (result, _) = run_split(&sse_body(&b04_as_sse(&input[variant])), &[], &tools, false).await;
        let reply = result.unwrap();
        assert!(reply.tool_calls.is_empty(), "{variant}");
        assert!(!reply.text.is_empty(), "{variant}");
    }
}

#[tokio::test]
async fn think_blocks_and_reasoning_fields_become_reasoning() {
    let data = vec![
        r#"data: {"choices":[{"index":0,"delta":{"reasoning_content":"field thought"}}]}"#.to_string(),
        r#"data: {"choices":[{"index":0,"delta":{"content":"<think>tag thought</think>\n\nHello"}}]}"#.to_string(),
        r#"data: {"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#.to_string(),
        "data: [DONE]".to_string(),
    ];
    let reply = run(&data, &[]).await.unwrap();
    assert_eq!(reply.text, "Hello there");
    assert_eq!(reply.reasoning, "field thought\ntag thought");
    assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (7, 3));
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
}

#[tokio::test]
async fn lenient_chunks_empty_finish_reason_null_content_and_usage_chunk() {
    let data = vec![
        r#"data: {"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":""}],"extra":{"a":1}}"#.to_string(),
        r#"data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop","logprobs":null}]}"#.to_string(),
        r#"data: {"choices":[],"usage":{"prompt_tokens":5}}"#.to_string(),
    ];
    // No [DONE], but a finish reason arrived: complete.
    let reply = run(&data, &[]).await.unwrap();
    assert_eq!(reply.text, "ok");
    assert_eq!(reply.usage.input_tokens, 5);
}

#[tokio::test]
async fn text_then_eof_without_finish_is_interrupted() {
    let data = vec![r#"data: {"choices":[{"index":0,"delta":{"content":"partial"}}]}"#.to_string()];
    let failure = run(&data, &[]).await.unwrap_err();
    assert_eq!(failure.error.class, ErrorClass::StreamInterrupted);
}

#[tokio::test]
async fn error_object_in_stream_is_classified() {
    let data = vec![r#"data: {"error":{"message":"upstream overloaded","code":502}}"#.to_string()];
    let failure = run(&data, &[]).await.unwrap_err();
    assert_eq!((failure.error.class, failure.error.status), (ErrorClass::ProviderError, Some(502)));
    assert!(failure.error.is_retryable());
}

/// Property-style: the B01 and B03 streams (plus multi-byte text) give the same result
/// however the bytes are split, including mid-line, mid-`\r\n` and mid-UTF-8.
#[tokio::test]
async fn sse_split_anywhere_gives_the_same_reply() {
    let b01 = case("B01");
    let mut text_stream: Vec<String> = ["Grüße ", "漢字🙂", " — fin"]
        .iter()
        .map(|t| format!("data: {}", json!({"choices":[{"index":0,"delta":{"content":t}}]})))
        .collect();
    text_stream.push(r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.into());
    text_stream.push("data: [DONE]".into());
    let crlf_body: Vec<u8> = String::from_utf8(sse_body(&text_stream)).unwrap().replace('\n', "\r\n").into_bytes();
    let bodies = vec![sse_body(&lines(&b01["stream_same_index"])), sse_body(&text_stream), crlf_body];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for body in bodies {
        let (whole, _) = run_split(&body, &[], &["read_file"], true).await;
        let whole = whole.unwrap();
        // Every single cut position.
        for cut in 0..body.len() {
            let (r, _) = run_split(&body, &[cut], &["read_file"], true).await;
            assert_eq!(r.unwrap(), whole, "cut at {cut}");
        }
        // Many random multi-cut splits (xorshift, deterministic).
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
            let (r, _) = run_split(&body, &cuts, &["read_file"], true).await;
            assert_eq!(r.unwrap(), whole, "cuts {cuts:?}");
        }
    }
}

#[test]
fn request_rendering() {
    let mut req = request(&["read_file"]);
    req.messages = vec![
        Message::system("sys"),
        Message::user("hi"),
        Message::assistant("", vec![read_file("call_1", "a")]),
        Message::tool_result("call_1", "contents", false),
    ];
    req.tool_choice = ToolChoice::Named("read_file".into());
    req.max_tokens = Some(100);
    let body = render_request(&req, "m", true, None, None);
    assert_eq!(body["model"], "m");
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "read_file", "description": "read_file tool", "parameters": {"type": "object", "properties": {}, "required": [], "additionalProperties": false}, "strict": true}}])
    );
    assert_eq!(body["tool_choice"], json!({"type": "function", "function": {"name": "read_file"}}));
    assert_eq!(body["max_tokens"], 100);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "contents"}
        ])
    );

    req.tool_choice = ToolChoice::Auto;
    assert_eq!(render_request(&req, "m", false, Some("required"), None)["tool_choice"], "required");
    let plain = render_request(&request(&[]), "m", false, Some("required"), Some(9));
    assert!(
        plain.get("tools").is_none() && plain.get("tool_choice").is_none() && plain.get("stream_options").is_none()
    );
    assert_eq!(plain["max_tokens"], 9);
}

#[test]
fn non_streamed_reply() {
    let body = r#"{"id":"c","model":"served","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":{"path":"a"}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#;
    let req = request(&["read_file"]);
    let mut deltas = Vec::new();
    let reply =
        read_whole("t", body, ReplyBuilder::new(true, &req, ToolCallAssembler::default()), &mut |d| deltas.push(d))
            .unwrap();
    assert_eq!(reply.tool_calls, vec![read_file("call_1", "a")]);
    assert_eq!(reply.text, "Hello");
    assert_eq!(reply.model, "served");
    assert_eq!(deltas.iter().filter(|d| matches!(d, StreamDelta::Text { .. })).count(), 1);
}

#[test]
fn t10_strict_schema_lists_every_property_and_makes_optional_ones_nullable() {
    let schema = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "p"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "limit": {"type": ["integer", "null"], "minimum": 1},
            "any": {"description": "no type"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}
        },
        "required": ["path"]
    });
    assert_eq!(
        strict_schema(&schema),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "p"},
                "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
                "limit": {"type": ["integer", "null"], "minimum": 1},
                "any": {"anyOf": [{"description": "no type"}, {"type": "null"}]},
                "items": {"type": ["array", "null"], "items": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"], "additionalProperties": false}}
            },
            "required": ["any", "items", "limit", "mode", "path"],
            "additionalProperties": false
        })
    );
}

/// A reply writing the same call line over and over is not read to its end: the stream is
/// left after the repetition shows, and one copy of the call is kept and recovered.
#[tokio::test]
async fn a_reply_repeating_the_same_call_line_is_stopped_and_keeps_one_copy() {
    let line = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n";
    let chunk = |text: &str| format!("data: {}", json!({"choices": [{"index": 0, "delta": {"content": text}}]}));
    let mut data: Vec<String> = std::iter::repeat_n(chunk(line), 40).collect();
    // Never reached: the reading stops at the repetition (no finish reason, no [DONE] either).
    data.push("data: {not json".to_string());
    let reply = run(&data, &["read_file"]).await.unwrap();
    assert_eq!(reply.tool_calls, vec![ToolCall { id: "call_recovered_1".into(), ..read_file("", "notes.txt") }]);
    assert_eq!(reply.finish_reason, Some(FinishReason::Other(crate::repetition::REPETITION.into())));
    assert!(reply.text.is_empty());
}
