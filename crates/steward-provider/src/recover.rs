//! Tool calls written as text, and `<think>` reasoning blocks (SPEC P8, case B04).
//!
//! Local models served through OpenAI-compatible endpoints often put a tool call in the
//! message text instead of `tool_calls`. [`recover_text_tool_calls`] turns the text into
//! calls only when the *whole* trimmed content is one of these shapes:
//! - a JSON object `{"name": "<tool>", "arguments": {…}}` (`parameters` is accepted for
//!   `arguments`; no other keys but an ignored `id`), a JSON array of such objects, or several
//!   of them one after the other (`{…}{…}`, or separated by whitespace or newlines); the
//!   wrappers `{"tool_call": {…}}` and `{"tool_calls": […]}` (llama.cpp's generic format);
//! - `[TOOL_CALLS]` followed by such JSON (Mistral);
//! - `<function=NAME>{…}</function>` (Llama 3.1's custom format) or
//!   `<function=NAME><parameter=KEY>value</parameter>…</function>` (Qwen3-Coder), one or more,
//!   each possibly inside `<tool_call>` tags; parameter values are text typed by the schema;
//! - one or more `<tool_call>…</tool_call>` blocks (Hermes/Qwen format), each holding such an
//!   object or array, separated only by whitespace;
//! - a single fenced code block (```` ```json ```` or ```` ``` ````) holding such an object or
//!   array;
//!
//! and *every* name is a declared tool. Anything else (prose around JSON, an undeclared name,
//! arguments that are not an object) stays plain text and is never executed; the agent loop
//! then refuses to take such text as an answer ([`crate::markup`]). String values of a
//! recovered call are coerced to the scalar types its schema declares where unambiguous
//! ([`crate::coerce`]), and each change is reported for the audit log.
//! `<think>…</think>` blocks are moved to the reasoning first, wherever they occur; an
//! unclosed leading `<think>` makes the rest reasoning, and a lone `</think>` (the opening tag
//! was in the prompt template) makes everything before it reasoning.

use serde_json::{Map, Value};
use steward_protocol::{ToolCall, ToolCallRepair, ToolSpec};

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const CALL_OPEN: &str = "<tool_call>";
const CALL_CLOSE: &str = "</tool_call>";
const MISTRAL_OPEN: &str = "[TOOL_CALLS]";
const FUNCTION_OPEN: &str = "<function=";

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
    /// Values of recovered calls coerced to their schema's types, one entry per changed call.
    pub repairs: Vec<ToolCallRepair>,
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
/// when it is wholly one of the shapes in the module docs and every name is one of `tools`.
/// String values are coerced to the scalar type the tool's schema declares where that is
/// unambiguous (`"1"` → `1` for an integer), each change listed in [`Recovered::repairs`].
pub fn recover_text_tool_calls(text: &str, tools: &[ToolSpec]) -> Recovered {
    let (shown, reasoning) = split_think(text);
    match parse_calls(&shown, tools) {
        Ok((tool_calls, repairs)) => Recovered { text: String::new(), reasoning, tool_calls, repairs },
        Err(_) => Recovered { text: shown, reasoning, ..Recovered::default() },
    }
}

/// True when `text` (after leading `<think>` blocks and whitespace) could still grow into a
/// text tool call, so a streaming caller should hold it back. Used while streaming.
pub(crate) fn could_be_tool_call_prefix(rest: &str) -> bool {
    rest.starts_with('{')
        || rest.starts_with('[')
        || rest.starts_with(CALL_OPEN)
        || CALL_OPEN.starts_with(rest)
        || rest.starts_with(FUNCTION_OPEN)
        || FUNCTION_OPEN.starts_with(rest)
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

/// Turns `text`, wholly one of the shapes in the module docs, into calls to tools of `tools`,
/// with each string value coerced to the scalar type its schema declares where unambiguous.
/// `Err` says why it is not such text, for a model to read.
pub(crate) fn parse_calls(text: &str, tools: &[ToolSpec]) -> Result<(Vec<ToolCall>, Vec<ToolCallRepair>), String> {
    let values = parse_values(text)?;
    let mut calls = Vec::with_capacity(values.len());
    let mut repairs = Vec::new();
    for (i, value) in values.into_iter().enumerate() {
        let (name, mut arguments) = call_shape(value)?;
        let Some(spec) = tools.iter().find(|t| t.name == name) else {
            let offered: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            return Err(format!("`{name}` is not one of the offered tools ({})", offered.join(", ")));
        };
        let id = format!("call_recovered_{}", i + 1);
        let changed = crate::coerce::coerce_to_schema(&mut arguments, &spec.input_schema);
        if !changed.is_empty() {
            repairs.push(ToolCallRepair { call_id: id.clone(), detail: changed.join("; ") });
        }
        calls.push(ToolCall { id, name, arguments });
    }
    Ok((calls, repairs))
}

/// The JSON values of text that is wholly tool-call markup Steward reads: `[TOOL_CALLS]`
/// followed by JSON, `<tool_call>` blocks, one fenced block, or bare JSON values one after the
/// other (whitespace between them optional). Arrays and the `{"tool_call": …}` /
/// `{"tool_calls": […]}` wrappers are flattened.
pub(crate) fn parse_values(text: &str) -> Result<Vec<Value>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the message is empty".into());
    }
    if let Some(rest) = text.strip_prefix(MISTRAL_OPEN) {
        return json_sequence(rest.trim());
    }
    if text.starts_with(FUNCTION_OPEN)
        || text.strip_prefix(CALL_OPEN).is_some_and(|inner| inner.trim_start().starts_with(FUNCTION_OPEN))
    {
        return function_blocks(text);
    }
    if text.starts_with(CALL_OPEN) {
        let mut values = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let inner = rest
                .strip_prefix(CALL_OPEN)
                .ok_or_else(|| "there is text between or after the <tool_call> blocks".to_string())?;
            let close =
                inner.find(CALL_CLOSE).ok_or_else(|| "a <tool_call> block is not closed (cut off?)".to_string())?;
            values.extend(json_sequence(inner[..close].trim())?);
            rest = inner[close + CALL_CLOSE.len()..].trim_start();
        }
        return Ok(values);
    }
    if let Some(fenced) = text.strip_prefix("```") {
        let body = fenced.strip_suffix("```").ok_or_else(|| "the ``` block is not closed (cut off?)".to_string())?;
        let body = body.strip_prefix("json").unwrap_or(body);
        if body.contains("```") {
            return Err("there is more than one ``` block".into());
        }
        return json_sequence(body.trim());
    }
    json_sequence(text)
}

/// `<function=NAME>…</function>` blocks one after the other, each possibly inside
/// `<tool_call>…</tool_call>`: the body is a JSON object of arguments (Llama 3.1's custom
/// format) or `<parameter=KEY>value</parameter>` pairs (Qwen3-Coder), whose values are text
/// for [`crate::coerce`] to type by the schema.
fn function_blocks(text: &str) -> Result<Vec<Value>, String> {
    const CLOSE: &str = "</function>";
    let mut values = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let wrapped = rest.starts_with(CALL_OPEN);
        if wrapped {
            rest = rest[CALL_OPEN.len()..].trim_start();
        }
        let after = rest.strip_prefix(FUNCTION_OPEN).ok_or_else(|| "there is text between the calls".to_string())?;
        let end_of_name = after.find('>').ok_or_else(|| "a <function=…> tag is cut off".to_string())?;
        let name = after[..end_of_name].trim();
        let inner = &after[end_of_name + 1..];
        let close = inner.find(CLOSE).ok_or_else(|| format!("the <function={name}> block is not closed (cut off?)"))?;
        let body = inner[..close].trim();
        rest = inner[close + CLOSE.len()..].trim_start();
        if wrapped {
            rest = rest
                .strip_prefix(CALL_CLOSE)
                .ok_or_else(|| "a <tool_call> block is not closed (cut off?)".to_string())?
                .trim_start();
        }
        let arguments = if body.starts_with('{') {
            serde_json::from_str::<Value>(body).map_err(|e| format!("the arguments of `{name}` are malformed ({e})"))?
        } else {
            Value::Object(xml_parameters(name, body)?)
        };
        values.push(serde_json::json!({"name": name, "arguments": arguments}));
    }
    Ok(values)
}

/// `<parameter=KEY>value</parameter>` pairs; each value is the text between the tags without
/// one leading and one trailing newline.
fn xml_parameters(name: &str, body: &str) -> Result<Map<String, Value>, String> {
    const OPEN: &str = "<parameter=";
    const CLOSE: &str = "</parameter>";
    let mut map = Map::new();
    let mut rest = body;
    while !rest.is_empty() {
        let after = rest
            .strip_prefix(OPEN)
            .ok_or_else(|| format!("the <function={name}> block holds text outside <parameter=…> tags"))?;
        let end_of_key = after.find('>').ok_or_else(|| "a <parameter=…> tag is cut off".to_string())?;
        let key = after[..end_of_key].trim();
        let inner = &after[end_of_key + 1..];
        let close = inner.find(CLOSE).ok_or_else(|| format!("the parameter `{key}` is not closed (cut off?)"))?;
        let value = inner[..close].strip_prefix('\n').unwrap_or(&inner[..close]);
        let value = value.strip_suffix('\n').unwrap_or(value);
        if map.insert(key.to_string(), Value::String(value.to_string())).is_some() {
            return Err(format!("the parameter `{key}` of `{name}` is given twice"));
        }
        rest = inner[close + CLOSE.len()..].trim_start();
    }
    Ok(map)
}

/// One or more JSON values one after the other, flattened.
fn json_sequence(text: &str) -> Result<Vec<Value>, String> {
    let mut values = Vec::new();
    for item in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let value = item.map_err(|e| {
            if e.is_eof() {
                format!("the JSON is cut off ({e})")
            } else {
                format!("the JSON is malformed or followed by other text ({e})")
            }
        })?;
        values.extend(flatten(value));
    }
    if values.is_empty() {
        return Err("there is no JSON".into());
    }
    Ok(values)
}

fn flatten(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items.into_iter().flat_map(flatten).collect(),
        Value::Object(mut obj)
            if obj.len() == 1 && (obj.contains_key("tool_call") || obj.contains_key("tool_calls")) =>
        {
            match obj.remove("tool_call").or_else(|| obj.remove("tool_calls")) {
                Some(inner @ (Value::Object(_) | Value::Array(_))) => flatten(inner),
                Some(other) => vec![other],
                None => Vec::new(),
            }
        }
        other => vec![other],
    }
}

/// True when `value` has the shape of a tool call: an object with a string `name` and
/// `arguments` or `parameters` (or a `tool_call`/`tool_calls` wrapper of such objects).
pub(crate) fn looks_like_call(value: &Value) -> bool {
    match value {
        Value::Object(obj) => {
            (obj.get("name").is_some_and(Value::is_string)
                && (obj.contains_key("arguments") || obj.contains_key("parameters")))
                || obj.get("tool_call").is_some_and(looks_like_call)
                || obj.get("tool_calls").is_some_and(looks_like_call)
        }
        Value::Array(items) => items.iter().any(looks_like_call),
        _ => false,
    }
}

/// `{"name": "...", "arguments"|"parameters": {...}}` with no other keys but an `id` (Mistral
/// writes one; it is not used). Arguments may also be a string holding a JSON object (some chat
/// templates double-encode them); missing arguments mean `{}`.
fn call_shape(value: Value) -> Result<(String, Value), String> {
    let Value::Object(mut obj) = value else { return Err("a call must be a JSON object".into()) };
    if let Some(key) = obj.keys().find(|k| !matches!(k.as_str(), "name" | "arguments" | "parameters" | "id")) {
        return Err(format!("a call has an unexpected key `{key}` (only name and arguments)"));
    }
    obj.remove("id");
    let Some(Value::String(name)) = obj.remove("name") else {
        return Err("a call has no string `name`".into());
    };
    let args = match (obj.remove("arguments"), obj.remove("parameters")) {
        (Some(_), Some(_)) => return Err(format!("the call to `{name}` has both arguments and parameters")),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => Value::Object(Map::new()),
    };
    let not_object = || format!("the arguments of `{name}` are not a JSON object");
    let args = match args {
        Value::Object(_) => args,
        Value::String(s) => match serde_json::from_str::<Value>(&s).map_err(|_| not_object())? {
            v @ Value::Object(_) => v,
            _ => return Err(not_object()),
        },
        _ => return Err(not_object()),
    };
    Ok((name, args))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn declared(names: &[&str]) -> Vec<ToolSpec> {
        names.iter().map(|name| spec(name, json!({"type": "object"}))).collect()
    }

    fn spec(name: &str, input_schema: Value) -> ToolSpec {
        ToolSpec {
            name: name.to_string(),
            description: String::new(),
            input_schema,
            risk: steward_protocol::RiskLevel::Low,
            writes: false,
            path_inputs: Vec::new(),
            untrusted_output: false,
        }
    }

    #[test]
    fn several_bare_json_calls_in_a_row_are_all_recovered() {
        let d = declared(&["read", "list"]);
        for text in [
            r#"{"name":"read","arguments":{"path":"a"}}{"name":"list","arguments":{"path":"."}}"#,
            "{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n\n{\"name\": \"list\", \"arguments\": {\"path\": \".\"}}",
            r#"[TOOL_CALLS][{"name":"read","arguments":{"path":"a"},"id":"a1b2c3d4e"},{"name":"list","arguments":{"path":"."}}]"#,
            r#"{"tool_calls":[{"name":"read","arguments":{"path":"a"}},{"name":"list","arguments":{"path":"."}}]}"#,
        ] {
            let r = recover_text_tool_calls(text, &d);
            let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["read", "list"], "{text}");
            assert_eq!(r.tool_calls[1].id, "call_recovered_2");
            assert_eq!(r.text, "");
        }
        // One undeclared call spoils the lot: nothing of it runs.
        let r = recover_text_tool_calls(r#"{"name":"read","arguments":{}} {"name":"rm","arguments":{}}"#, &d);
        assert!(r.tool_calls.is_empty());
    }

    #[test]
    fn xml_and_function_tag_calls_are_recovered_with_schema_types() {
        let read = spec(
            "read",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "start_line": {"type": ["integer", "null"]}}}),
        );
        let tools = [read, spec("list", json!({"type": "object"}))];
        let r = recover_text_tool_calls(
            "<tool_call>\n<function=read>\n<parameter=path>\n12\n</parameter>\n<parameter=start_line>\n3\n</parameter>\n</function>\n</tool_call>\n<function=list>{\"path\": \".\"}</function>",
            &tools,
        );
        assert_eq!(r.tool_calls.len(), 2, "{r:?}");
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "12", "start_line": 3}));
        assert_eq!(r.tool_calls[1].arguments, json!({"path": "."}));
        assert_eq!(r.repairs.len(), 1);
        for text in [
            "<function=read><parameter=path>a</parameter>",
            "<function=read>prose<parameter=path>a</parameter></function>",
            "<function=rm><parameter=path>a</parameter></function>",
            "<function=read><parameter=path>a</parameter></function> and more",
        ] {
            assert!(recover_text_tool_calls(text, &tools).tool_calls.is_empty(), "{text}");
        }
    }

    #[test]
    fn string_values_are_coerced_to_the_schema_scalar_types_and_reported() {
        let edit = spec(
            "edit",
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "line": {"type": "integer"},
                "ratio": {"type": ["number", "null"]},
                "all": {"type": "boolean"},
                "label": {"type": ["string", "integer"]},
            }}),
        );
        let r = recover_text_tool_calls(
            r#"{"name":"edit","arguments":{"path":"1","line":"1","ratio":"0.5","all":"true","label":"7"}}"#,
            std::slice::from_ref(&edit),
        );
        assert_eq!(r.tool_calls[0].arguments, json!({"path":"1","line":1,"ratio":0.5,"all":true,"label":"7"}));
        assert_eq!(r.repairs.len(), 1);
        assert_eq!(r.repairs[0].call_id, "call_recovered_1");
        for field in ["`line`", "`ratio`", "`all`"] {
            assert!(r.repairs[0].detail.contains(field), "{}", r.repairs[0].detail);
        }
        // Not unambiguous: left as written for the gate to refuse.
        let r = recover_text_tool_calls(r#"{"name":"edit","arguments":{"line":"one","all":"yes"}}"#, &[edit]);
        assert_eq!(r.tool_calls[0].arguments, json!({"line":"one","all":"yes"}));
        assert!(r.repairs.is_empty());
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
