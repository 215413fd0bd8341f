//! Fuzz targets `sse_openai` and `sse_anthropic`: the SSE readers and tool-call assembly of
//! both wires on generated streams (text, tool calls whose arguments arrive in pieces,
//! finish reasons, keep-alive comments, CRLF line ends), on mutations of them, and on
//! arbitrary bytes, each body cut into network reads at random places.
//!
//! Invariants: nothing panics; the result does not depend on where the body is cut; a
//! well-formed stream yields exactly the calls and text it carries; every returned call has
//! object arguments; an interrupted stream returns no call.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use steward_fuzz::proptest;
use steward_protocol::{ChatRequest, Message, RiskLevel, ToolChoice, ToolSpec};
use steward_provider::fuzzing::{Protocol, read_stream};
use steward_provider::recover::split_think;

fn request() -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        messages: vec![Message::user("go")],
        tools: ["read", "write"]
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                description: String::new(),
                input_schema: json!({"type": "object"}),
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

#[derive(Debug, Clone)]
struct Planned {
    text: Vec<String>,
    calls: Vec<(String, Map<String, Value>, Vec<usize>)>,
    crlf: bool,
    keepalive: bool,
    done: bool,
}

fn planned() -> impl Strategy<Value = Planned> {
    let args = prop::collection::btree_map(
        "[a-z]{1,6}",
        prop_oneof![any::<String>().prop_map(Value::String), any::<i32>().prop_map(|n| json!(n))],
        0..3,
    );
    (
        prop::collection::vec("[a-zA-Z .,é日\n]{1,12}", 0..3),
        prop::collection::vec(
            (prop::sample::select(vec!["read", "write"]), args, prop::collection::vec(any::<usize>(), 0..4)),
            0..3,
        ),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(text, calls, crlf, keepalive, done)| Planned {
            text,
            calls: calls.into_iter().map(|(n, a, cuts)| (n.to_string(), a.into_iter().collect(), cuts)).collect(),
            crlf,
            keepalive,
            done,
        })
}

/// `text` cut at the given char-boundary-adjusted offsets.
fn pieces(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut i = c % (text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        })
        .collect();
    at.push(text.len());
    at.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for end in at {
        if end > start {
            out.push(text[start..end].to_string());
            start = end;
        }
    }
    out
}

fn frame(lines: Vec<String>, p: &Planned) -> Vec<u8> {
    let nl = if p.crlf { "\r\n" } else { "\n" };
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        if p.keepalive && i % 2 == 0 {
            out.push_str(&format!(": keep-alive{nl}{nl}"));
        }
        out.push_str(&l.replace('\n', nl));
        out.push_str(nl);
        out.push_str(nl);
    }
    out.into_bytes()
}

fn openai_body(p: &Planned) -> Vec<u8> {
    let mut lines = Vec::new();
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}",
            json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    for t in &p.text {
        lines.push(chunk(json!({"content": t}), Value::Null));
    }
    for (i, (name, args, cuts)) in p.calls.iter().enumerate() {
        let text = Value::Object(args.clone()).to_string();
        lines.push(chunk(
            json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in pieces(&text, cuts) {
            lines.push(chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}), Value::Null));
        }
    }
    let finish = if p.calls.is_empty() { "stop" } else { "tool_calls" };
    lines.push(chunk(json!({}), json!(finish)));
    if p.done {
        lines.push("data: [DONE]".into());
    }
    frame(lines, p)
}

fn anthropic_body(p: &Planned) -> Vec<u8> {
    let mut lines = Vec::new();
    let event = |v: Value| format!("event: {}\ndata: {v}", v["type"].as_str().unwrap_or_default());
    lines.push(event(json!({"type": "message_start", "message": {"id": "msg", "model": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}})));
    let mut index = 0;
    if !p.text.is_empty() {
        lines.push(event(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        for t in &p.text {
            lines.push(event(
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
            ));
        }
        lines.push(event(json!({"type": "content_block_stop", "index": 0})));
        index = 1;
    }
    for (i, (name, args, cuts)) in p.calls.iter().enumerate() {
        let at = index + i;
        lines.push(event(json!({"type": "content_block_start", "index": at, "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": name, "input": {}}})));
        for piece in pieces(&Value::Object(args.clone()).to_string(), cuts) {
            lines.push(event(json!({"type": "content_block_delta", "index": at, "delta": {"type": "input_json_delta", "partial_json": piece}})));
        }
        lines.push(event(json!({"type": "content_block_stop", "index": at})));
    }
    let stop = if p.calls.is_empty() { "end_turn" } else { "tool_use" };
    lines.push(event(json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}})));
    if p.done {
        lines.push(event(json!({"type": "message_stop"})));
    }
    frame(lines, p)
}

#[derive(Debug, Clone)]
enum Input {
    /// A well-formed stream, and two sets of cut points.
    Planned(Planned, Vec<usize>, Vec<usize>),
    /// Any body, and two sets of cut points.
    Raw(Vec<u8>, Vec<usize>, Vec<usize>),
}

fn cut(body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    at.push(body.len());
    at.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for end in at {
        out.push(body[start..end].to_vec());
        start = end;
    }
    out
}

fn body_of(protocol: Protocol, p: &Planned) -> Vec<u8> {
    match protocol {
        Protocol::OpenAi => openai_body(p),
        Protocol::Anthropic => anthropic_body(p),
    }
}

fn check(protocol: Protocol, input: Input) -> Result<(), TestCaseError> {
    let request = request();
    let (body, a, b, plan) = match input {
        Input::Planned(p, a, b) => (body_of(protocol, &p), a, b, Some(p)),
        Input::Raw(body, a, b) => (body, a, b, None),
    };
    let (first, deltas_a) = read_stream(protocol, &cut(&body, &a), &request, true);
    let (second, deltas_b) = read_stream(protocol, &cut(&body, &b), &request, true);
    prop_assert_eq!(format!("{first:?}"), format!("{second:?}"), "the result depends on where the body is cut");
    prop_assert_eq!(&deltas_a, &deltas_b, "the deltas depend on where the body is cut");
    if let Ok(reply) = &first {
        for call in &reply.tool_calls {
            prop_assert!(call.arguments.is_object(), "a call with arguments {}", call.arguments);
        }
    }
    let Some(plan) = plan else { return Ok(()) };
    // OpenAI: a stream without [DONE] that has a finish reason is complete; Anthropic likewise
    // once the stop reason came.
    let reply = first.map_err(|e| TestCaseError::fail(format!("a well-formed stream fails: {e:?}")))?;
    let (plain, _) = read_stream(protocol, &cut(&body, &a), &request, false);
    let plain = plain.map_err(|e| TestCaseError::fail(format!("a well-formed stream fails: {e:?}")))?;
    prop_assert_eq!(plain.text, split_think(&plan.text.concat()).0, "the text changes");
    let calls: Vec<(String, Value)> = reply.tool_calls.iter().map(|c| (c.name.clone(), c.arguments.clone())).collect();
    let want: Vec<(String, Value)> = plan.calls.iter().map(|(n, a, _)| (n.clone(), Value::Object(a.clone()))).collect();
    prop_assert_eq!(calls, want, "the calls change");
    prop_assert!(reply.invalid_tool_calls.is_empty(), "invalid calls: {:?}", reply.invalid_tool_calls);
    Ok(())
}

fn mutated(protocol: Protocol) -> impl Strategy<Value = Vec<u8>> {
    (planned(), prop::collection::vec((any::<usize>(), 0usize..3, any::<u8>()), 1..4)).prop_map(move |(p, edits)| {
        let mut body = body_of(protocol, &p);
        for (at, kind, byte) in edits {
            let i = at % (body.len() + 1);
            match kind {
                0 => body.insert(i, byte),
                1 if i < body.len() => {
                    body.remove(i);
                }
                _ => body.truncate(i),
            }
        }
        body
    })
}

fn inputs(protocol: Protocol) -> impl Strategy<Value = Input> {
    let cuts = || prop::collection::vec(any::<usize>(), 0..6);
    prop_oneof![
        3 => (planned(), cuts(), cuts()).prop_map(|(p, a, b)| Input::Planned(p, a, b)),
        2 => (mutated(protocol), cuts(), cuts()).prop_map(|(body, a, b)| Input::Raw(body, a, b)),
        1 => (any::<Vec<u8>>(), cuts(), cuts()).prop_map(|(body, a, b)| Input::Raw(body, a, b)),
    ]
}

/// A seed file is a whole body; it is replayed unsplit, split into bytes and split in halves.
fn seeds(bytes: &[u8]) -> Vec<Input> {
    let all: Vec<usize> = (0..bytes.len()).collect();
    vec![
        Input::Raw(bytes.to_vec(), vec![], all),
        Input::Raw(bytes.to_vec(), vec![bytes.len() / 2], vec![bytes.len() / 3, 2 * bytes.len() / 3]),
    ]
}

#[test]
fn fuzz_sse_openai() {
    steward_fuzz::run("sse_openai", inputs(Protocol::OpenAi), seeds, |i| check(Protocol::OpenAi, i));
}

#[test]
fn fuzz_sse_anthropic() {
    steward_fuzz::run("sse_anthropic", inputs(Protocol::Anthropic), seeds, |i| check(Protocol::Anthropic, i));
}
