//! Tool calls written as text, and reasoning written into the text (SPEC P8, case B04).
//!
//! Local models served through OpenAI-compatible endpoints often put a tool call in the
//! message text instead of `tool_calls`. [`recover_with_format`] turns the text into calls
//! only when the *whole* message (reasoning removed, trimmed) is calls in one of the formats
//! of [`crate::formats::ToolCallFormat`] — the configured one, or the one detected from how
//! the message starts — and *every* name is a declared tool. Anything else (prose around the
//! markup, an undeclared name, arguments that are not an object, markup cut off) stays plain
//! text and is never executed; the agent loop then refuses to take such text as an answer
//! ([`crate::markup`]). Values of a recovered call are coerced to the types its schema
//! declares where unambiguous (`crate::coerce`); formats whose values are text (Qwen3-Coder,
//! GLM, MiniMax, DSML, Seed, Step, per-tool XML) get their types this way. Every recovered
//! call is reported in [`Recovered::repairs`] with the format's name, for the audit log.
//!
//! Reasoning (`<think>…</think>`, text before a lone `</think>`, `[THINK]…[/THINK]`,
//! `<|START_THINKING|>…`, the harmony `analysis` channel) is moved out first
//! ([`split_think`]); it is never an answer and never a call.

use steward_protocol::{ToolCall, ToolCallRepair, ToolSpec};

pub use crate::formats::RecoverError;
use crate::formats::{ToolCallFormat, detect};
use crate::formats_parse::parse;
pub use crate::reasoning::split_think;

/// The result of [`recover_with_format`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Recovered {
    /// The text to show: empty when tool calls were recovered, otherwise the content with the
    /// reasoning removed (trimmed).
    pub text: String,
    /// The reasoning blocks, joined by newlines.
    pub reasoning: String,
    /// Recovered calls with ids `call_recovered_1`, `call_recovered_2`, …
    pub tool_calls: Vec<ToolCall>,
    /// One entry per recovered call: the format, and the values coerced to the schema's types.
    pub repairs: Vec<ToolCallRepair>,
    /// The format the calls were read from.
    pub format: Option<ToolCallFormat>,
}

/// [`recover_with_format`] with the format detected.
pub fn recover_text_tool_calls(text: &str, tools: &[ToolSpec]) -> Recovered {
    recover_with_format(text, tools, None)
}

/// Moves reasoning out of `text`, then recovers tool calls from the rest when it is wholly
/// calls in `format` (detected when `None`) and every name is one of `tools`. llama.cpp's
/// generic `{"response": "…"}` becomes the text it holds.
pub fn recover_with_format(text: &str, tools: &[ToolSpec], format: Option<ToolCallFormat>) -> Recovered {
    let (shown, reasoning) = split_think(text);
    match parse_calls(&shown, tools, format) {
        Ok((format, tool_calls, repairs)) => {
            Recovered { text: String::new(), reasoning, tool_calls, repairs, format: Some(format) }
        }
        Err(_) => Recovered { text: generic_response(&shown).unwrap_or(shown), reasoning, ..Recovered::default() },
    }
}

/// The text of llama.cpp's generic-format answer `{"response": "…"}`, when `shown` is one.
pub(crate) fn generic_response(shown: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(shown.trim()).ok()?;
    let obj = value.as_object().filter(|o| o.len() == 1)?;
    obj.get("response").and_then(serde_json::Value::as_str).filter(|r| !r.trim().is_empty()).map(str::to_string)
}

/// Turns `text` (reasoning removed), wholly calls in `format` (detected when `None`), into
/// calls to tools of `tools`, values coerced to their schema's types. Returns the format read,
/// the calls and one repair per call.
pub(crate) fn parse_calls(
    text: &str,
    tools: &[ToolSpec],
    format: Option<ToolCallFormat>,
) -> Result<(ToolCallFormat, Vec<ToolCall>, Vec<ToolCallRepair>), RecoverError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(RecoverError::Empty);
    }
    let format = match format {
        Some(f) if f.claims(text, tools) => f,
        Some(configured) => {
            return Err(match detect(text, tools) {
                Some(found) => RecoverError::OtherFormat { found, configured },
                None => RecoverError::NotMarkup,
            });
        }
        None => detect(text, tools).ok_or(RecoverError::NotMarkup)?,
    };
    let raw = parse(format, text, tools)?;
    if raw.is_empty() {
        return Err(RecoverError::NotMarkup);
    }
    let mut calls = Vec::with_capacity(raw.len());
    let mut repairs = Vec::with_capacity(raw.len());
    for (i, call) in raw.into_iter().enumerate() {
        let Some(spec) = tools.iter().find(|t| t.name == call.name) else {
            let offered: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            return Err(RecoverError::UndeclaredTool { name: call.name, offered: offered.join(", ") });
        };
        let mut arguments = call.arguments;
        if !arguments.is_object() {
            return Err(RecoverError::ArgumentsNotObject(call.name));
        }
        let id = format!("call_recovered_{}", i + 1);
        let changed = crate::coerce::coerce_to_schema(&mut arguments, &spec.input_schema);
        repairs.push(ToolCallRepair {
            call_id: id.clone(),
            format: format.name().to_string(),
            detail: changed.join("; "),
        });
        calls.push(ToolCall { id, name: call.name, arguments });
    }
    Ok((format, calls, repairs))
}

/// True when `value` has the shape of a JSON tool call: an object with a string `name` and
/// `arguments` or `parameters` (or a `tool_call`/`tool_calls` wrapper of such objects).
pub(crate) fn looks_like_call(value: &serde_json::Value) -> bool {
    use serde_json::Value;
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

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
