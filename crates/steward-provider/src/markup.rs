//! Tool-call markup left in a final message (SPEC P8).
//!
//! When text recovery ([`crate::recover`]) could not turn a reply into calls, the text is
//! returned as the model's answer. [`unparsed_tool_markup`] tells the agent loop when that
//! text is, or ends with, tool-call markup, so that it is never reported as an answer. It
//! knows:
//! - JSON calls (bare objects, arrays, several in a row, fenced, `<tool_call>` blocks,
//!   `[TOOL_CALLS]`, `{"tool_call": …}`), including a call cut off before it closed;
//! - the special tokens of every other format of [`crate::formats::ToolCallFormat`]
//!   (DeepSeek, harmony, Kimi, GLM, MiniMax, Gemma, Granite, Command R, Nemotron, …), read
//!   with the format's reader to say what was wrong;
//! - Python-style calls (`[read(path="a")]`, `read({...})`) of an offered tool.
//!
//! Markup counts when the message is it, or ends with it: a marker quoted inside inline code
//! or followed by more prose is taken as talk about the format.

use steward_protocol::ToolSpec;

use serde_json::Value;

use crate::formats_parse::parse_values;
use crate::recover::{looks_like_call, parse_calls, split_think};

/// Special-token openers of tool-call formats, with the closer that ends a block (empty when
/// the block runs to the end of the message) and a name for messages.
const TAGS: &[(&str, &str, &str)] = &[
    ("<tool_call>", "</tool_call>", "<tool_call>"),
    ("<function=", "</function>", "<function=…>"),
    ("[TOOL_CALLS]", "", "[TOOL_CALLS]"),
    ("<|python_tag|>", "", "<|python_tag|>"),
    ("<|python_start|>", "<|python_end|>", "<|python_start|>"),
    ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "DeepSeek tool calls"),
    ("<｜DSML｜", "", "DeepSeek DSML"),
    ("<|channel|>commentary to=", "<|call|>", "harmony"),
    ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "Kimi tool calls"),
    ("<minimax:tool_call>", "</minimax:tool_call>", "<minimax:tool_call>"),
    ("<seed:tool_call>", "</seed:tool_call>", "<seed:tool_call>"),
    ("<start_function_call>", "<end_function_call>", "<start_function_call>"),
    ("<|tool_call>", "<tool_call|>", "<|tool_call>"),
    ("<|tool_call|>", "", "<|tool_call|>"),
    ("functools[", "]", "functools[…]"),
    ("<function_call>", "</function_call>", "<function_call>"),
    ("<|START_ACTION|>", "<|END_ACTION|>", "<|START_ACTION|>"),
    ("<TOOLCALL>", "</TOOLCALL>", "<TOOLCALL>"),
    ("<|tools_prefix|>", "<|tools_suffix|>", "<|tools_prefix|>"),
    ("<|tool_call_start|>", "<|tool_call_end|>", "<|tool_call_start|>"),
    ("<|action_start|>", "<|action_end|>", "<|action_start|>"),
    ("<tool_calls>", "</tool_calls>", "<tool_calls>"),
    ("<function_calls>", "</function_calls>", "<function_calls>"),
    ("<｜tool_calls_begin｜>", "<｜tool_calls_end｜>", "Step tool calls"),
    ("```tool_code", "```", "```tool_code"),
];

/// How far back from the end the JSON search looks, in bytes.
const JSON_WINDOW: usize = 64 * 1024;
/// At most this many start positions are tried.
const MAX_STARTS: usize = 256;

/// When `text` (an assistant message that produced no calls) is, or ends with, tool-call
/// markup, says why it could not be used as calls — in words for the model, e.g. ``the call
/// follows other text …`` or ``` `rm` is not one of the offered tools (read, list) ```.
/// `None` when the text is an ordinary answer.
pub fn unparsed_tool_markup(text: &str, tools: &[ToolSpec]) -> Option<String> {
    let (shown, _) = split_think(text);
    let shown = shown.trim();
    if shown.is_empty() {
        return None;
    }
    json_markup(shown, tools).or_else(|| tag_markup(shown, tools)).or_else(|| python_markup(shown, tools))
}

/// JSON calls at the end of the text: the earliest start from which the rest is wholly JSON
/// call markup (or a call cut off before it closed).
fn json_markup(text: &str, tools: &[ToolSpec]) -> Option<String> {
    let floor = text.len().saturating_sub(JSON_WINDOW);
    let starts: Vec<usize> = text
        .char_indices()
        .filter(|&(i, c)| {
            i >= floor
                && matches!(c, '{' | '[' | '`' | '<')
                && text[..i].chars().next_back().is_none_or(|p| p.is_whitespace() || p == ':')
        })
        .map(|(i, _)| i)
        .collect();
    let starts = &starts[starts.len().saturating_sub(MAX_STARTS)..];
    for &start in starts {
        let tail = &text[start..];
        let cut_off_call = || {
            let body = tail.trim_start_matches("```json").trim_start_matches("```").trim_start();
            let body = body.strip_prefix("<tool_call>").unwrap_or(body).trim_start();
            let body = body.strip_prefix('[').unwrap_or(body).trim_start();
            body.strip_prefix('{').is_some_and(|rest| {
                let rest = rest.trim_start();
                ["\"name\"", "\"tool_call\"", "\"tool_calls\"", "\"function\""].iter().any(|k| rest.starts_with(k))
            })
        };
        let is_markup = match parse_values(tail) {
            Ok(values) => values.iter().any(|v| call_like(v, tools)),
            Err(why) => why.is_cut_off() && cut_off_call(),
        };
        if !is_markup {
            continue;
        }
        let why = match parse_calls(tail, tools, None) {
            Err(why) => why.to_string(),
            Ok(_) => String::new(),
        };
        return Some(describe(start > 0, &why));
    }
    None
}

/// A value written as a call, not as something else with a `name`: its keys are only those
/// of a call, and unless it names an offered tool its arguments are not a JSON Schema (a tool
/// *definition* `{"name", "parameters": {"type": "object", "properties": …}}` is an answer
/// about function calling, not a call).
fn call_like(value: &Value, tools: &[ToolSpec]) -> bool {
    let Value::Object(obj) = value else { return false };
    if !looks_like_call(value) {
        return false;
    }
    if obj.contains_key("tool_call") || obj.contains_key("tool_calls") {
        return true;
    }
    if obj.keys().any(|k| !matches!(k.as_str(), "name" | "arguments" | "parameters" | "id")) {
        return false;
    }
    let declared = obj.get("name").and_then(Value::as_str).is_some_and(|n| tools.iter().any(|t| t.name == n));
    let args = obj.get("arguments").or_else(|| obj.get("parameters"));
    let schema_like = args.is_some_and(|a| a.get("type").is_some() && a.get("properties").is_some());
    declared || !schema_like
}

/// A special-token format: the first marker (not quoted in inline code) from which the rest is
/// markup blocks, or an unclosed one.
fn tag_markup(text: &str, tools: &[ToolSpec]) -> Option<String> {
    let mut found: Option<(usize, &str, &str)> = None;
    for (open, close, name) in TAGS {
        let mut from = 0;
        while let Some(pos) = text[from..].find(open).map(|p| p + from) {
            from = pos + open.len();
            if text[..pos].ends_with('`') {
                continue;
            }
            if found.is_none_or(|(p, _, _)| pos < p) {
                found = Some((pos, close, name));
            }
            break;
        }
    }
    let (pos, close, name) = found?;
    let tail = &text[pos..];
    let ends_with_markup = close.is_empty()
        || match tail.rfind(close) {
            None => true,
            Some(end) => tail[end + close.len()..].trim().is_empty(),
        };
    if !ends_with_markup {
        return None;
    }
    let why = match parse_calls(tail, tools, None) {
        Ok((format, _, _)) => not_configured(format),
        Err(why) => format!("the {name} markup could not be read: {why}"),
    };
    Some(describe(pos > 0, &why))
}

/// A Python-style call of an offered tool on the last line: `read(path="a")`,
/// `[read(path="a"), list()]`, `read({"path": "a"})`.
fn python_markup(text: &str, tools: &[ToolSpec]) -> Option<String> {
    let last = text.lines().next_back()?.trim();
    let last = last.strip_prefix('[').and_then(|l| l.strip_suffix(']')).unwrap_or(last);
    let tool = tools.iter().find(|t| last.strip_prefix(t.name.as_str()).is_some_and(|rest| rest.starts_with('(')))?;
    if !last.ends_with(')') {
        return None;
    }
    let why = match parse_calls(last, tools, None) {
        Ok((format, _, _)) => not_configured(format),
        Err(why) => format!("`{}(…)` is a Python-style call that could not be read: {why}", tool.name),
    };
    Some(describe(text.lines().count() > 1, &why))
}

/// Markup that is whole calls in `format`, left as text: the provider reads another format or
/// none.
fn not_configured(format: crate::formats::ToolCallFormat) -> String {
    format!(
        "it is written in the {format} format, which this provider is not set to read (tool_call_format, text_tool_calls)"
    )
}

fn describe(after_prose: bool, why: &str) -> String {
    let mut parts = Vec::new();
    if after_prose {
        parts.push("the call follows other text, and a call written as text must be the whole message".to_string());
    }
    if !why.is_empty() {
        parts.push(why.to_string());
    }
    if parts.is_empty() {
        parts.push("it was sent as text and this provider does not read tool calls from text".to_string());
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolSpec> {
        ["read", "edit", "list"]
            .iter()
            .map(|name| ToolSpec {
                name: name.to_string(),
                description: String::new(),
                input_schema: json!({"type": "object"}),
                risk: steward_protocol::RiskLevel::Low,
                writes: false,
                path_inputs: Vec::new(),
                untrusted_output: false,
            })
            .collect()
    }

    #[test]
    fn markup_that_is_or_ends_the_message_is_found_with_the_reason() {
        let t = tools();
        let cases = [
            (r#"{"name":"edit","arguments":{"path":"a"}}{"name":"rm","arguments":{}}"#, "`rm` is not one of"),
            ("I will edit it now.\n{\"name\":\"edit\",\"arguments\":{\"path\":\"a\"}}", "follows other text"),
            ("Done:\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```", "follows other text"),
            (r#"{"name": "edit", "arguments": {"path": "a", "old": "x"#, "cut off"),
            ("<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\"", "not closed"),
            ("<tool_call><function=rm><parameter=path>a</parameter></function></tool_call>", "`rm` is not one of"),
            ("Reading it.\n<function=read><parameter=path>a</parameter></function>", "follows other text"),
            ("[TOOL_CALLS]read[ARGS]{\"path\": \"a\"}", "mistral_v11 format"),
            ("[TOOL_CALLS]rm[ARGS]{\"path\": \"a\"}", "`rm` is not one of"),
            ("<|channel|>commentary to=functions.read <|constrain|>json<|message|>{}<|call|>", "harmony"),
            (
                "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
                "deepseek_v31 format",
            ),
            ("Let me look.\n[read(path=\"a\")]", "follows other text"),
            ("[read(path=\"a\"), rm()]", "`rm` is not one of"),
            (
                "<|tool_calls_section_begin|><|tool_call_begin|>functions.read:0<|tool_call_argument_begin|>{\"path\"",
                "cut off",
            ),
            (r#"{"name":"read","arguments":"not json"}"#, "not a JSON object"),
        ];
        for (text, why) in cases {
            let found = unparsed_tool_markup(text, &t);
            assert!(found.as_deref().is_some_and(|f| f.contains(why)), "{text}: {found:?}");
        }
    }

    #[test]
    fn answers_that_mention_json_or_formats_are_not_markup() {
        let t = tools();
        for text in [
            "The answer is 42.",
            "Here is the config:\n```json\n{\"name\": \"demo\", \"version\": 1}\n```",
            "Models write `<tool_call>` blocks; Steward reads them.",
            "<tool_call>{\"name\":\"read\"}</tool_call> is the Hermes format, as shown.",
            "Use read(path) to see a file, then answer.",
            "[1, 2, 3]",
            "<think>{\"name\":\"read\",\"arguments\":{}}</think>The file is empty.",
            "A tool is declared like this:\n{\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}",
            "Its definition:\n{\"name\": \"get_weather\", \"description\": \"Weather\", \"parameters\": {}}",
        ] {
            assert_eq!(unparsed_tool_markup(text, &t), None, "{text}");
        }
    }
}
