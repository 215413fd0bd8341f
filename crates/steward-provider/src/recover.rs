//! Tool calls written as text, and `<think>` reasoning blocks (SPEC P8, case B04).
//!
//! Local models served through OpenAI-compatible endpoints often put a tool call in the
//! message text instead of `tool_calls`. [`recover_text_tool_calls`] turns the text into
//! calls only when the *whole* trimmed content is one of these shapes:
//! - a JSON object `{"name": "<tool>", "arguments": {…}}` (`parameters` is accepted for
//!   `arguments`; no other keys), or a JSON array of such objects;
//! - one or more `<tool_call>…</tool_call>` blocks (Hermes/Qwen format), each holding such an
//!   object or array, separated only by whitespace;
//! - a single fenced code block (```` ```json ```` or ```` ``` ````) holding such an object or
//!   array;
//!
//! and *every* name is a declared tool. Anything else (prose around JSON, an undeclared name,
//! arguments that are not an object) stays plain text and is never executed.
//! `<think>…</think>` blocks are moved to the reasoning first, wherever they occur; an
//! unclosed leading `<think>` makes the rest reasoning, and a lone `</think>` (the opening tag
//! was in the prompt template) makes everything before it reasoning.

use serde_json::{Map, Value};
use steward_protocol::ToolCall;

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const CALL_OPEN: &str = "<tool_call>";
const CALL_CLOSE: &str = "</tool_call>";

/// The result of [`recover_text_tool_calls`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Recovered {
    /// The text to show: empty when tool calls were recovered, otherwise the content with the
    /// `<think>` blocks removed (trimmed).
    pub text: String,
    /// The content of the `<think>` blocks, joined by newlines.
    pub reasoning: String,
    /// Recovered calls with ids `call_recovered_1`, `call_recovered_2`, …
    pub tool_calls: Vec<ToolCall>,
}

/// Splits `<think>` blocks out of `text`: returns `(text without them, trimmed; reasoning)`.
pub fn split_think(text: &str) -> (String, String) {
    let mut reasoning: Vec<&str> = Vec::new();
    let mut shown = String::new();
    let mut rest = text;
    // A closing tag with no opening tag before it: the template opened the block.
    if let Some(close) = rest.find(THINK_CLOSE)
        && !rest[..close].contains(THINK_OPEN)
    {
        reasoning.push(rest[..close].trim());
        rest = &rest[close + THINK_CLOSE.len()..];
    }
    while let Some(open) = rest.find(THINK_OPEN) {
        shown.push_str(&rest[..open]);
        let inner = &rest[open + THINK_OPEN.len()..];
        match inner.find(THINK_CLOSE) {
            Some(close) => {
                reasoning.push(inner[..close].trim());
                rest = &inner[close + THINK_CLOSE.len()..];
            }
            None => {
                reasoning.push(inner.trim());
                rest = "";
            }
        }
    }
    shown.push_str(rest);
    let reasoning: Vec<&str> = reasoning.into_iter().filter(|r| !r.is_empty()).collect();
    (shown.trim().to_string(), reasoning.join("\n"))
}

/// Moves `<think>` blocks to the reasoning, then recovers tool calls from the remaining text
/// when it is wholly one of the shapes in the module docs and every name is in `declared`.
pub fn recover_text_tool_calls(text: &str, declared: &[String]) -> Recovered {
    let (shown, reasoning) = split_think(text);
    match parse_calls(&shown, declared) {
        Some(tool_calls) => Recovered { text: String::new(), reasoning, tool_calls },
        None => Recovered { text: shown, reasoning, tool_calls: Vec::new() },
    }
}

/// True when `text` (after leading `<think>` blocks and whitespace) could still grow into a
/// text tool call, so a streaming caller should hold it back. Used while streaming.
pub(crate) fn could_be_tool_call_prefix(rest: &str) -> bool {
    rest.starts_with('{')
        || rest.starts_with('[')
        || rest.starts_with(CALL_OPEN)
        || CALL_OPEN.starts_with(rest)
        || rest.starts_with("```")
        || "```".starts_with(rest)
}

/// Leading `<think>` handling for streaming: returns `(complete think contents, text after
/// them with leading whitespace trimmed, whether a think block is still open or its opening
/// tag is still incomplete)`.
pub(crate) fn leading_think(text: &str) -> (Vec<&str>, &str, bool) {
    let mut thoughts = Vec::new();
    let mut rest = text.trim_start();
    loop {
        if let Some(inner) = rest.strip_prefix(THINK_OPEN) {
            match inner.find(THINK_CLOSE) {
                Some(close) => {
                    thoughts.push(inner[..close].trim());
                    rest = inner[close + THINK_CLOSE.len()..].trim_start();
                }
                None => return (thoughts, rest, true),
            }
        } else {
            let partial_tag = !rest.is_empty() && THINK_OPEN.starts_with(rest);
            return (thoughts, rest, partial_tag);
        }
    }
}

fn parse_calls(text: &str, declared: &[String]) -> Option<Vec<ToolCall>> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let values: Vec<Value> = if text.starts_with(CALL_OPEN) {
        let mut values = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let inner = rest.strip_prefix(CALL_OPEN)?;
            let close = inner.find(CALL_CLOSE)?;
            values.extend(flatten(serde_json::from_str(inner[..close].trim()).ok()?));
            rest = inner[close + CALL_CLOSE.len()..].trim_start();
        }
        values
    } else if let Some(fenced) = text.strip_prefix("```") {
        let body = fenced.strip_suffix("```")?;
        let body = body.strip_prefix("json").unwrap_or(body);
        if body.contains("```") {
            return None;
        }
        flatten(serde_json::from_str(body.trim()).ok()?)
    } else {
        flatten(serde_json::from_str(text).ok()?)
    };
    if values.is_empty() {
        return None;
    }
    let mut calls = Vec::with_capacity(values.len());
    for (i, value) in values.into_iter().enumerate() {
        let (name, arguments) = call_shape(value)?;
        if !declared.contains(&name) {
            return None;
        }
        calls.push(ToolCall { id: format!("call_recovered_{}", i + 1), name, arguments });
    }
    Some(calls)
}

fn flatten(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items,
        other => vec![other],
    }
}

/// `{"name": "...", "arguments"|"parameters": {...}}` with no other keys. Arguments may also
/// be a string holding a JSON object (some chat templates double-encode them); missing
/// arguments mean `{}`.
fn call_shape(value: Value) -> Option<(String, Value)> {
    let Value::Object(mut obj) = value else { return None };
    if obj.keys().any(|k| !matches!(k.as_str(), "name" | "arguments" | "parameters")) {
        return None;
    }
    let Some(Value::String(name)) = obj.remove("name") else { return None };
    let args = match (obj.remove("arguments"), obj.remove("parameters")) {
        (Some(_), Some(_)) => return None,
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => Value::Object(Map::new()),
    };
    let args = match args {
        Value::Object(_) => args,
        Value::String(s) => match serde_json::from_str::<Value>(&s).ok()? {
            v @ Value::Object(_) => v,
            _ => return None,
        },
        _ => return None,
    };
    Some((name, args))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn declared(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn object_array_tagged_and_fenced_shapes() {
        let d = declared(&["read", "list"]);
        let r = recover_text_tool_calls(r#" {"name": "read", "arguments": {"path": "a"}} "#, &d);
        assert_eq!(
            r.tool_calls,
            vec![ToolCall { id: "call_recovered_1".into(), name: "read".into(), arguments: json!({"path": "a"}) }]
        );
        assert_eq!(r.text, "");

        let r = recover_text_tool_calls(r#"[{"name":"read","parameters":{"path":"a"}},{"name":"list"}]"#, &d);
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[1].id, "call_recovered_2");
        assert_eq!(r.tool_calls[1].arguments, json!({}));

        let r = recover_text_tool_calls(
            "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n<tool_call>{\"name\":\"list\",\"arguments\":\"{\\\"dir\\\":\\\".\\\"}\"}</tool_call>",
            &d,
        );
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[1].arguments, json!({"dir": "."}));

        let r = recover_text_tool_calls("```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```", &d);
        assert_eq!(r.tool_calls.len(), 1);
    }

    #[test]
    fn anything_else_stays_text() {
        let d = declared(&["read"]);
        for text in [
            r#"{"name": "rm", "arguments": {}}"#,
            r#"[{"name": "read"}, {"name": "rm"}]"#,
            r#"Call {"name": "read", "arguments": {}} now"#,
            r#"{"name": "read", "arguments": {}, "extra": 1}"#,
            r#"{"name": "read", "arguments": [1]}"#,
            r#"{"name": "read", "arguments": {}"#,
            "<tool_call>{\"name\": \"read\"}</tool_call> and then prose",
            "```json\n{\"name\": \"read\"}\n```\n```json\n{\"name\": \"read\"}\n```",
            "```python\nprint(1)\n```",
            "{}",
            "[]",
        ] {
            let r = recover_text_tool_calls(text, &d);
            assert!(r.tool_calls.is_empty(), "{text}");
            assert_eq!(r.text, text.trim(), "{text}");
        }
    }

    #[test]
    fn think_blocks_move_to_reasoning() {
        let d = declared(&["read"]);
        let r = recover_text_tool_calls(
            "<think>I should read a.</think>\n{\"name\":\"read\",\"arguments\":{\"path\":\"a\"}}",
            &d,
        );
        assert_eq!(r.reasoning, "I should read a.");
        assert_eq!(r.tool_calls.len(), 1);

        assert_eq!(split_think("Hi <think>x</think>there"), ("Hi there".to_string(), "x".to_string()));
        assert_eq!(split_think("plan first</think>Answer"), ("Answer".to_string(), "plan first".to_string()));
        assert_eq!(split_think("<think>cut off"), (String::new(), "cut off".to_string()));
        assert_eq!(split_think("no tags"), ("no tags".to_string(), String::new()));
    }

    #[test]
    fn streaming_prefix_detection() {
        assert_eq!(leading_think("  <think>a</think> {\"n"), (vec!["a"], "{\"n", false));
        assert_eq!(leading_think("<thi"), (vec![], "<thi", true));
        assert_eq!(leading_think("<think>still"), (vec![], "<think>still", true));
        assert!(could_be_tool_call_prefix("<tool_"));
        assert!(could_be_tool_call_prefix("`"));
        assert!(could_be_tool_call_prefix("[{"));
        assert!(!could_be_tool_call_prefix("Hello"));
        assert!(!could_be_tool_call_prefix("<b>"));
    }
}
