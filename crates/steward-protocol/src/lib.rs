//! Plain data shared by every Steward crate: no async, no I/O.
//!
//! Ops go in (a task, tool calls proposed by a planner), events come out ([`Event`], with the
//! names of SPEC R2). Decisions of the control layer ([`Decision`]), approval requests
//! ([`ApprovalRequest`]) and audit records ([`AuditRecord`]) are defined here so that every
//! front end and store speaks the same shapes.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod audit;
mod error;
mod event;
mod invisible;
mod message;
mod tool;

#[cfg(feature = "openapi")]
pub mod reference;

pub use audit::{AuditEntry, AuditOutcome, AuditRecord};
pub use error::ErrorClass;
pub use event::{ContextChunk, Event, EventKind, RoleModel, StopReason};
pub use invisible::{is_invisible, reveal_invisible};
pub use message::{
    ChatRequest, ChatResponse, FinishReason, InvalidToolCall, Message, Role, StreamDelta, ToolCallRepair, ToolChoice,
    Usage,
};
pub use tool::{
    ApprovalRequest, ApprovalStatus, ApprovalTtl, Decision, DecisionKind, RiskFactor, RiskLevel, ToolCall, ToolSpec,
};

/// A UTC timestamp; serialised as RFC 3339.
pub type Timestamp = chrono::DateTime<chrono::Utc>;

/// Cuts `text` to at most `max_chars` characters (Unicode scalar values), never splitting a
/// UTF-8 sequence. Returns the text unchanged when it is short enough.
pub fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((byte_index, _)) => &text[..byte_index],
        None => text,
    }
}

/// Keeps the head and the tail of `text` within `max_chars` characters, with a marker between
/// them saying how many characters (and lines) were cut. `note` is appended to the marker
/// (for example where the full output was saved). Never splits a UTF-8 character.
///
/// Returns `(shown_text, cut_chars)`; `cut_chars` is 0 when nothing was cut.
pub fn head_tail_chars(text: &str, max_chars: usize, note: &str) -> (String, usize) {
    let total = text.chars().count();
    if total <= max_chars {
        return (text.to_string(), 0);
    }
    let budget = max_chars.saturating_sub(160);
    let head_chars = budget * 2 / 3;
    let tail_chars = budget - head_chars;
    let head = truncate_chars(text, head_chars);
    let tail_start = text.char_indices().nth(total - tail_chars).map(|(i, _)| i).unwrap_or(text.len());
    let tail = &text[tail_start..];
    let cut = total - head_chars - tail_chars;
    let cut_lines = text[head.len()..tail_start].matches('\n').count();
    let marker = if note.is_empty() {
        format!("\n[… {cut} characters ({cut_lines} lines) cut …]\n")
    } else {
        format!("\n[… {cut} characters ({cut_lines} lines) cut; {note} …]\n")
    };
    (format!("{head}{marker}{tail}"), cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_never_splits_utf8() {
        let s = "é漢é漢";
        assert_eq!(truncate_chars(s, 1), "é");
        assert_eq!(truncate_chars(s, 2), "é漢");
        assert_eq!(truncate_chars(s, 10), s);
    }

    #[test]
    fn head_tail_keeps_both_ends_and_counts_the_cut() {
        let text: String = (0..2000).map(|i| format!("LINE {i:05} é漢\n")).collect();
        let (shown, cut) = head_tail_chars(&text, 1000, "full output saved to /x");
        assert!(shown.chars().count() <= 1000 + 120);
        assert!(shown.starts_with("LINE 00000"));
        assert!(shown.trim_end().ends_with("LINE 01999 é漢"));
        assert!(shown.contains("characters"));
        assert!(shown.contains("/x"));
        assert_eq!(cut, text.chars().count() - (1000 - 160));
    }
}
