//! Assembly of streamed tool calls (cases B01, B03).
//!
//! Rules, for OpenAI-style deltas (`{index?, id?, function: {name?, arguments?}}`):
//! - a delta with a non-empty id not seen before starts a new call, even if its index repeats;
//! - a delta with a known id continues that call;
//! - a delta with an index and no id continues the most recent call with that index (so
//!   well-formed interleaved deltas are assembled strictly by index);
//! - a delta with neither continues the most recently opened call;
//! - a delta without id but with a name, aimed at a call that already has a name and complete
//!   arguments, starts a new call (servers that repeat index 0 and send no ids).
//!
//! When the reply ends, each call's arguments must parse as one complete JSON object (empty
//! text means `{}`); otherwise it becomes an [`InvalidToolCall`] with the reason. Arguments are
//! never repaired. Under `finish_reason = length` a call counts only if it is complete.

use serde_json::Value;
use steward_protocol::{InvalidToolCall, StreamDelta, ToolCall};

use crate::DeltaSink;

#[derive(Debug, Default)]
struct Partial {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
    /// The protocol said the call's block ended (Anthropic `content_block_stop`).
    closed: bool,
    announced: bool,
}

/// How the reply ended, for judging calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending<'a> {
    /// The model finished with this finish reason (wire string, e.g. `tool_calls`, `length`).
    Finished(&'a str),
    /// The model finished and said it hit the output limit.
    Length(&'a str),
}

/// Collects tool-call pieces of one reply.
#[derive(Debug, Default)]
pub(crate) struct ToolCallAssembler {
    calls: Vec<Partial>,
    /// Whether the protocol reports block ends (then an unclosed call is incomplete).
    tracks_closing: bool,
}

impl ToolCallAssembler {
    /// An assembler for a protocol that marks the end of each call (Anthropic).
    pub fn with_closing() -> Self {
        ToolCallAssembler { calls: Vec::new(), tracks_closing: true }
    }

    /// True when no call was seen.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// One OpenAI-style piece. Emits [`StreamDelta::ToolCallStarted`] once a call has a name.
    pub fn push(
        &mut self,
        index: Option<u64>,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
        sink: DeltaSink<'_>,
    ) {
        let id = id.filter(|s| !s.is_empty());
        let name = name.filter(|s| !s.is_empty());
        let target = match id {
            Some(id) => self.calls.iter().rposition(|c| c.id == id),
            None => match index {
                Some(i) => self.calls.iter().rposition(|c| c.index == Some(i)),
                None => self.calls.len().checked_sub(1),
            },
        };
        let target = match target {
            Some(t) if id.is_none() && name.is_some() && self.calls[t].looks_finished() => None,
            other => other,
        };
        let pos = match target {
            Some(t) => t,
            None => {
                let n = self.calls.len() + 1;
                self.calls.push(Partial {
                    index,
                    id: id.map(str::to_string).unwrap_or_else(|| format!("call_{n}")),
                    ..Partial::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos];
        if let Some(name) = name {
            if call.name.is_empty() {
                call.name = name.to_string();
            } else if call.name != name {
                call.name.push_str(name);
            }
        }
        if let Some(args) = arguments {
            call.arguments.push_str(args);
        }
        if !call.announced && !call.name.is_empty() {
            call.announced = true;
            sink(StreamDelta::ToolCallStarted { id: call.id.clone(), name: call.name.clone() });
        }
    }

    /// Marks the call at protocol block `index` complete (Anthropic `content_block_stop`).
    pub fn close(&mut self, index: u64) {
        if let Some(c) = self.calls.iter_mut().rev().find(|c| c.index == Some(index)) {
            c.closed = true;
        }
    }

    /// Descriptions of every call received so far, for an interrupted stream: e.g.
    /// `tool call call_w (write_file) truncated: stream ended early, 57 bytes of arguments received`.
    pub fn interrupted(&self) -> Vec<String> {
        self.calls
            .iter()
            .map(|c| {
                format!(
                    "tool call {} ({}) truncated: stream ended early, {} bytes of arguments received",
                    c.id,
                    c.name,
                    c.arguments.len()
                )
            })
            .collect()
    }

    /// Judges every call now that the reply has ended.
    pub fn finish(self, ending: Ending<'_>) -> (Vec<ToolCall>, Vec<InvalidToolCall>) {
        let mut ok = Vec::new();
        let mut invalid = Vec::new();
        for c in self.calls {
            let bytes = c.arguments.len();
            let parsed = parse_arguments(&c.arguments);
            let complete = parsed.is_ok() && (!self.tracks_closing || c.closed) && !c.arguments.trim().is_empty();
            let reason = match ending {
                Ending::Finished(r) | Ending::Length(r) => r,
            };
            let verdict = if c.name.is_empty() {
                Err(format!("tool call {} has no tool name ({bytes} bytes of arguments received)", c.id))
            } else {
                match (ending, parsed) {
                    (Ending::Length(_), _) if !complete => Err(format!(
                        "tool call {} ({}) truncated: finish_reason={reason}, {bytes} bytes of arguments received",
                        c.id, c.name
                    )),
                    (_, Err(e)) => Err(format!(
                        "tool call {} ({}): {e} ({bytes} bytes of arguments received, finish_reason={reason})",
                        c.id, c.name
                    )),
                    (_, Ok(arguments)) => Ok(arguments),
                }
            };
            match verdict {
                Ok(arguments) => ok.push(ToolCall { id: c.id, name: c.name, arguments }),
                Err(error) => {
                    invalid.push(InvalidToolCall { id: c.id, name: c.name, raw_arguments: c.arguments, error })
                }
            }
        }
        (ok, invalid)
    }
}

impl Partial {
    fn looks_finished(&self) -> bool {
        !self.name.is_empty() && !self.arguments.trim().is_empty() && parse_arguments(&self.arguments).is_ok()
    }
}

/// Why a call's arguments text is not usable.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArgumentsError {
    /// Valid JSON, but not an object.
    #[error("arguments must be a JSON object")]
    NotAnObject,
    /// Not JSON (or cut off).
    #[error("invalid JSON arguments: {0}")]
    Json(#[from] serde_json::Error),
}

/// Parses arguments text: empty → `{}`; otherwise exactly one JSON object.
pub(crate) fn parse_arguments(text: &str) -> Result<Value, ArgumentsError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<Value>(text)? {
        v @ Value::Object(_) => Ok(v),
        _ => Err(ArgumentsError::NotAnObject),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_arguments_are_an_empty_object_unless_cut_by_length() {
        let mut a = ToolCallAssembler::default();
        a.push(Some(0), Some("c1"), Some("list"), Some(""), &mut |_| {});
        let (ok, bad) = a.finish(Ending::Finished("tool_calls"));
        assert_eq!(ok[0].arguments, json!({}));
        assert!(bad.is_empty());

        let mut a = ToolCallAssembler::default();
        a.push(Some(0), Some("c1"), Some("list"), None, &mut |_| {});
        let (ok, bad) = a.finish(Ending::Length("length"));
        assert!(ok.is_empty());
        assert!(bad[0].error.contains("truncated: finish_reason=length, 0 bytes"), "{}", bad[0].error);
    }

    #[test]
    fn complete_calls_survive_length_but_the_cut_one_does_not() {
        let mut a = ToolCallAssembler::default();
        a.push(Some(0), Some("c1"), Some("read"), Some("{\"path\":\"a\"}"), &mut |_| {});
        a.push(Some(1), Some("c2"), Some("read"), Some("{\"path\":\"b"), &mut |_| {});
        let (ok, bad) = a.finish(Ending::Length("length"));
        assert_eq!(ok.len(), 1);
        assert_eq!(bad[0].id, "c2");
    }

    #[test]
    fn non_object_and_nameless_calls_are_invalid() {
        let mut a = ToolCallAssembler::default();
        a.push(Some(0), Some("c1"), Some("read"), Some("[1]"), &mut |_| {});
        a.push(Some(1), Some("c2"), None, Some("{}"), &mut |_| {});
        let (ok, bad) = a.finish(Ending::Finished("tool_calls"));
        assert!(ok.is_empty());
        assert!(bad[0].error.contains("must be a JSON object"));
        assert!(bad[1].error.contains("no tool name"));
    }

    #[test]
    fn index_zero_without_ids_and_a_new_name_starts_a_new_call() {
        let mut a = ToolCallAssembler::default();
        a.push(Some(0), None, Some("read"), Some("{\"path\":\"a\"}"), &mut |_| {});
        a.push(Some(0), None, Some("read"), Some("{\"path\":\"b\"}"), &mut |_| {});
        let (ok, bad) = a.finish(Ending::Finished("tool_calls"));
        assert!(bad.is_empty());
        assert_eq!(
            ok.iter().map(|c| c.arguments.clone()).collect::<Vec<_>>(),
            vec![json!({"path":"a"}), json!({"path":"b"})]
        );
        assert_ne!(ok[0].id, ok[1].id);
    }

    #[test]
    fn anthropic_unclosed_block_under_max_tokens_is_truncated() {
        let mut a = ToolCallAssembler::with_closing();
        a.push(Some(1), Some("toolu_1"), Some("read"), Some("{\"path\":\"a\"}"), &mut |_| {});
        let (ok, bad) = a.finish(Ending::Length("max_tokens"));
        assert!(ok.is_empty());
        assert!(bad[0].error.contains("finish_reason=max_tokens"));
    }
}
