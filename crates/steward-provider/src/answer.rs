//! The answer of a reply that made no calls (SPEC P8).
//!
//! After a tool result, a small model often starts its answer by repeating the call it just
//! made, then restates the result (`{"response": "created hello.txt (2 bytes)"}`, or the
//! result followed by `</tool_response>`), and only then, if at all, answers.
//! [`judge_answer`] reads such a reply:
//! 1. reasoning is moved out;
//! 2. each leading exact repeat of a call of the previous round (same tool, same arguments),
//!    in any format text recovery reads, is left out and reported as an [`Echo`];
//! 3. after an echo, a `<tool_response>` wrapper and a `{"response": …}` or `{"error": …}`
//!    restatement are unwrapped: what they hold is the answer;
//! 4. text without a letter or digit (`…`, the placeholder a small model copies from the
//!    reply's described shape) is not an answer;
//! 5. text that is or ends with unusable markup ([`crate::markup::unparsed_tool_markup`],
//!    which says best what is wrong with it), or that still contains a complete call to an
//!    offered tool anywhere, is never an answer ([`Judged::NotAnswer`]).

use serde_json::Value;
use steward_protocol::{ToolCall, ToolSpec};

use crate::formats::{ToolCallFormat, detect};
use crate::markup::unparsed_tool_markup;
use crate::recover::{parse_calls, split_think};

/// At most this many start positions are tried when looking for a call inside the text.
const MAX_STARTS: usize = 32;
/// At most this many end positions are tried for one start.
const MAX_ENDS: usize = 128;
/// A call is looked for within this many bytes of its start.
const MAX_CALL_BYTES: usize = 16 * 1024;
/// Characters of an unusable reply kept in the conversation ([`marked_start`]).
pub const MARKED_START_CHARS: usize = 200;

/// A repeat of a call of the previous round, left out of the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Echo {
    /// The id of the previous round's call it repeats.
    pub call_id: String,
    /// The tool it names.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
    /// The text format it was written in.
    pub format: ToolCallFormat,
}

/// What a reply without calls is.
#[derive(Debug, Clone, PartialEq)]
pub enum Judged {
    /// An answer.
    Answer {
        /// The answer's text.
        text: String,
        /// Repeats of the previous round's calls left out of its start, in order.
        echoes: Vec<Echo>,
        /// True when the answer was unwrapped from a `{"response": …}` or `{"error": …}`
        /// restatement or a `<tool_response>` wrapper.
        restated: bool,
    },
    /// Not an answer: why, in words for the model.
    NotAnswer(String),
}

/// Reads the text of a reply that made no calls (see the module's documentation): `previous`
/// are the calls of the round before it, `tools` the tools offered.
pub fn judge_answer(text: &str, previous: &[ToolCall], tools: &[ToolSpec]) -> Judged {
    let (shown, _) = split_think(text);
    let mut rest = shown.trim();
    let mut echoes = Vec::new();
    while let Some((end, format, calls)) = leading_calls(rest, tools) {
        let Some(repeated) = calls.iter().map(|c| same_call(previous, c)).collect::<Option<Vec<_>>>() else { break };
        echoes.extend(repeated.into_iter().map(|p| Echo {
            call_id: p.id.clone(),
            name: p.name.clone(),
            arguments: p.arguments.clone(),
            format,
        }));
        rest = rest[end..].trim_start();
    }
    let (answer, restated) = if echoes.is_empty() { (rest.to_string(), false) } else { unwrap_restatement(rest) };
    if !echoes.is_empty() && answer.trim().is_empty() {
        return Judged::NotAnswer(format!(
            "it only repeats the call just made (`{}`) and gives no answer; its result is above",
            echoes[0].name
        ));
    }
    let answer = answer.trim();
    if !answer.is_empty() && !answer.chars().any(char::is_alphanumeric) {
        return Judged::NotAnswer(format!(
            "`{answer}` holds no word: it is the placeholder of a reply's shape, not an answer; write the answer itself"
        ));
    }
    if let Some(why) = unparsed_tool_markup(answer, tools) {
        return Judged::NotAnswer(why);
    }
    if let Some((start, end, format, calls)) = call_inside(answer, tools)
        && (start > 0 || end < answer.len())
    {
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        let place = match (start, end == answer.len()) {
            (0, _) => "is followed by other text",
            (_, true) => "follows other text",
            _ => "comes among other text",
        };
        return Judged::NotAnswer(format!(
            "it holds a complete call of `{}` (written in the {format} format) that {place}; a call written as \
             text must be the whole message, and an answer must hold no call",
            names.join("`, `")
        ));
    }
    Judged::Answer { text: answer.to_string(), echoes, restated }
}

/// The start of an unusable reply, as it is kept in the conversation: its first
/// [`MARKED_START_CHARS`] characters, and when there was more, a line saying how much was
/// left out. The model is never sent a run-away reply whole.
pub fn marked_start(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MARKED_START_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => format!(
            "{}\n[… the rest of this reply, {} more characters, is left out here]",
            &text[..cut],
            text[cut..].chars().count()
        ),
    }
}

/// The call of `previous` that `call` repeats exactly (same tool, same arguments).
fn same_call<'a>(previous: &'a [ToolCall], call: &ToolCall) -> Option<&'a ToolCall> {
    previous.iter().find(|p| p.name == call.name && p.arguments == call.arguments)
}

/// The shortest start of `text` that is whole calls to offered tools: where it ends, its
/// format and the calls.
fn leading_calls(text: &str, tools: &[ToolSpec]) -> Option<(usize, ToolCallFormat, Vec<ToolCall>)> {
    detect(text, tools)?;
    let limit = text.len().min(MAX_CALL_BYTES);
    text.char_indices()
        .take_while(|(i, _)| *i < limit)
        .filter(|(_, c)| matches!(c, '}' | ']' | '>' | ')' | '`' | '\n'))
        .map(|(i, c)| i + c.len_utf8())
        .take(MAX_ENDS)
        .chain((text.len() <= limit).then_some(text.len()))
        .find_map(|end| parse_calls(&text[..end], tools, None).ok().map(|(format, calls, _)| (end, format, calls)))
}

/// The first complete call to an offered tool inside `text`, starting at the text's start or
/// after white space, `:` or `>` (a call quoted in inline code does not count): where it starts,
/// where it ends, its format and the calls.
fn call_inside(text: &str, tools: &[ToolSpec]) -> Option<(usize, usize, ToolCallFormat, Vec<ToolCall>)> {
    text.char_indices()
        .filter(|&(i, _)| {
            text[..i].chars().next_back().is_none_or(|p| p.is_whitespace() || p == ':' || p == '>')
                && detect(&text[i..], tools).is_some()
        })
        .take(MAX_STARTS)
        .find_map(|(i, _)| leading_calls(&text[i..], tools).map(|(end, format, calls)| (i, i + end, format, calls)))
}

/// The answer held by what follows an echo: inside a `<tool_response>` wrapper, and the text
/// of a `{"response": …}` or `{"error": …}` object. True when something was unwrapped.
fn unwrap_restatement(rest: &str) -> (String, bool) {
    let mut text = rest.trim();
    let mut unwrapped = false;
    if let Some(inner) = text.strip_prefix("<tool_response>") {
        text = inner.trim();
        unwrapped = true;
    }
    if let Some(inner) = text.strip_suffix("</tool_response>") {
        text = inner.trim();
        unwrapped = true;
    }
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(text)
        && object.len() == 1
        && let Some(value) = object.get("response").or_else(|| object.get("error"))
    {
        let said = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return (said, true);
    }
    (text.to_string(), unwrapped)
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
