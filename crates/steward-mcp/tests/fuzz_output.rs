//! Fuzz target `mcp_output`: turning a `tools/call` result (any mix of text, image, audio,
//! resource link and embedded resource blocks, structured content, `isError`) into capped
//! text. Invariants: never panics; never empty; within the cap (for caps of 128 bytes and
//! more); the head is a prefix and the tail a suffix of the full text, and the omitted byte
//! count is exactly what is missing between them; the full text is kept exactly when
//! something was cut.

use proptest::prelude::*;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use steward_fuzz::proptest;
use steward_mcp::{McpCallOutput, NO_OUTPUT, head_tail_bytes};

fn block() -> impl Strategy<Value = Value> {
    let text = prop_oneof![3 => any::<String>(), 1 => "[a-zé日\n]{0,300}", 1 => "(x{0,50}\n){0,40}"];
    prop_oneof![
        4 => text.prop_map(|t| json!({"type": "text", "text": t})),
        1 => "[A-Za-z0-9+/]{0,40}={0,2}".prop_map(|d| json!({"type": "image", "data": d, "mimeType": "image/png"})),
        1 => "[A-Za-z0-9+/ \n]{0,40}".prop_map(|d| json!({"type": "audio", "data": d, "mimeType": "audio/wav"})),
        1 => "[a-z:/.]{1,20}".prop_map(|u| json!({"type": "resource_link", "uri": u, "name": "n"})),
        1 => (any::<String>()).prop_map(|t| json!({"type": "resource", "resource": {"uri": "file:///x", "text": t}})),
        1 => "[A-Za-z0-9+/]{0,20}".prop_map(|b| json!({"type": "resource", "resource": {"uri": "file:///y", "blob": b}})),
    ]
}

fn result() -> impl Strategy<Value = (Value, usize)> {
    (
        prop::collection::vec(block(), 0..5),
        prop::option::of(prop_oneof![Just(Value::Null), any::<String>().prop_map(|s| json!({"s": s}))]),
        prop::option::of(any::<bool>()),
        prop_oneof![0usize..200, 100usize..5000],
    )
        .prop_map(|(content, structured, is_error, max)| {
            let mut v = json!({"content": content});
            if let Some(s) = structured {
                v["structuredContent"] = s;
            }
            if let Some(e) = is_error {
                v["isError"] = json!(e);
            }
            (v, max)
        })
}

fn check_cap(full: &str, max: usize) -> Result<(), TestCaseError> {
    let (shown, omitted) = head_tail_bytes(full, max);
    if omitted == 0 {
        prop_assert_eq!(&shown, full, "an uncut text changed");
        prop_assert!(full.len() <= max || full.is_empty() || max >= full.len(), "a text over the cap is not cut");
        return Ok(());
    }
    prop_assert!(full.len() > max, "a text within the cap is cut");
    if max >= 128 {
        prop_assert!(shown.len() <= max, "{} bytes shown for a cap of {max}", shown.len());
    }
    let start = shown.find("\n[… ").ok_or_else(|| TestCaseError::fail("no marker"))?;
    let end = shown.rfind(" …]\n").ok_or_else(|| TestCaseError::fail("no marker end"))? + " …]\n".len();
    let (head, tail) = (&shown[..start], &shown[end..]);
    prop_assert!(full.starts_with(head), "the head is not the start of the text");
    prop_assert!(full.ends_with(tail), "the tail is not the end of the text");
    prop_assert_eq!(head.len() + omitted + tail.len(), full.len(), "the omitted byte count is wrong");
    let omitted_text = &full[head.len()..full.len() - tail.len()];
    let marker = &shown[start..end];
    prop_assert!(
        marker.contains(&format!("{omitted} bytes ({} lines)", omitted_text.matches('\n').count())),
        "the marker {marker:?} miscounts"
    );
    Ok(())
}

fn check((value, max): (Value, usize)) -> Result<(), TestCaseError> {
    let Ok(result) = serde_json::from_value::<CallToolResult>(value.clone()) else { return Ok(()) };
    let out = McpCallOutput::from_result(&result, max);
    prop_assert!(!out.text.is_empty(), "an empty tool result");
    prop_assert_eq!(out.is_error, value["isError"].as_bool().unwrap_or(false));
    prop_assert_eq!(out.full_text.is_some(), out.omitted_bytes > 0);
    let full = out.full_text.clone().unwrap_or_else(|| out.text.clone());
    if result.content.is_empty() && out.full_text.is_none() && value.get("structuredContent").is_none_or(Value::is_null)
    {
        prop_assert_eq!(&out.text, NO_OUTPUT);
    }
    check_cap(&full, max)?;
    let (again, omitted) = head_tail_bytes(&full, max);
    prop_assert_eq!((again, omitted), (out.text, out.omitted_bytes), "capping is not deterministic");
    Ok(())
}

#[test]
fn fuzz_mcp_output() {
    steward_fuzz::run(
        "mcp_output",
        prop_oneof![
            3 => result().prop_map(Ok),
            1 => (any::<String>(), 0usize..400).prop_map(Err),
        ],
        |bytes| {
            let text = String::from_utf8_lossy(bytes).into_owned();
            match serde_json::from_str::<Value>(&text) {
                Ok(v) => vec![Ok((v.clone(), 128)), Ok((v, 4096))],
                Err(_) => vec![Err((text.clone(), 128)), Err((text, 0))],
            }
        },
        |input: Result<(Value, usize), (String, usize)>| match input {
            Ok(pair) => check(pair),
            Err((text, max)) => check_cap(&text, max),
        },
    );
}
