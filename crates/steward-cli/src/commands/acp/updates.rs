//! A run's events as Agent Client Protocol session updates: streamed model text as agent
//! message chunks, each tool call as a `tool_call` followed by `tool_call_update`s that carry
//! the gate's decision (allowed or denied, with the rule), the approval's outcome, the result
//! (completed or failed) and a proposed change as ACP diff content.
//!
//! The events come redacted (the run's event sink redacts before observers see them), so
//! nothing here needs a redactor. Pure: the same events give the same updates, which is what
//! `session/load` relies on when it replays a stored run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol as acp;
use steward_protocol::{Event, EventKind, StopReason};

/// Longest tool output shown in a tool call's content, in characters (the model gets the run's
/// own capped output; the editor gets this much of it).
const SHOWN_OUTPUT_CHARS: usize = 4_000;

/// The tool call id an editor sees for call `call_id` of run `run_id`: call ids repeat across
/// the runs of one session (`call_1_1` …), so the run's id is part of it.
pub fn tool_call_id(run_id: &str, call_id: &str) -> acp::ToolCallId {
    acp::ToolCallId::new(format!("{run_id}:{call_id}"))
}

/// What kind of tool `tool` is, for the editor's icon.
pub fn tool_kind(tool: &str) -> acp::ToolKind {
    match tool {
        "read" | "list" | "git_status" | "git_diff" | "git_log" | "git_show" => acp::ToolKind::Read,
        "search" | "search_index" => acp::ToolKind::Search,
        "create" | "edit" | "apply_patch" | "propose_patch" => acp::ToolKind::Edit,
        "move" => acp::ToolKind::Move,
        "delete" => acp::ToolKind::Delete,
        "shell_command" => acp::ToolKind::Execute,
        "http_get" | "fetch" => acp::ToolKind::Fetch,
        t if t.starts_with("lsp_") => acp::ToolKind::Search,
        _ => acp::ToolKind::Other,
    }
}

/// A one-line title: the tool and the path or command it names, else its arguments cut short.
pub fn tool_title(tool: &str, arguments: &serde_json::Value) -> String {
    let named = ["path", "command", "query", "pattern", "from"]
        .iter()
        .find_map(|key| arguments.get(key).and_then(|v| v.as_str()).map(str::to_string));
    match named {
        Some(what) => format!("{tool} {}", steward_protocol::truncate_chars(&what, 120)),
        None => {
            let args = arguments.to_string();
            if args == "{}" || args == "null" {
                tool.to_string()
            } else {
                format!("{tool} {}", steward_protocol::truncate_chars(&args, 120))
            }
        }
    }
}

/// The files a call's arguments name (`path`, `from`, `to`), absolute under `workspace`, for the
/// editor to follow along.
fn locations(workspace: &Path, arguments: &serde_json::Value) -> Vec<acp::ToolCallLocation> {
    ["path", "from", "to"]
        .iter()
        .filter_map(|key| arguments.get(key).and_then(|v| v.as_str()))
        .map(|p| acp::ToolCallLocation::new(absolute(workspace, p)))
        .collect()
}

/// `path` (workspace-relative as the tools give it, or already absolute) under `workspace`.
fn absolute(workspace: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() { p.to_path_buf() } else { workspace.join(p) }
}

/// A text block.
fn text(text: impl Into<String>) -> acp::ToolCallContent {
    acp::ToolCallContent::Content(acp::Content::new(acp::ContentBlock::from(text.into())))
}

/// The old and new text of a unified diff's hunks (context lines in both), hunks joined by a
/// `⋮` line: ACP diff content wants texts, and the event carries the diff. `None` when `diff`
/// has no hunk.
pub fn diff_texts(diff: &str) -> Option<(String, String)> {
    let mut old = String::new();
    let mut new = String::new();
    let mut hunks = 0;
    let mut in_hunk = false;
    for line in diff.lines() {
        if line.starts_with("@@") {
            if hunks > 0 {
                old.push_str("⋮\n");
                new.push_str("⋮\n");
            }
            hunks += 1;
            in_hunk = true;
            continue;
        }
        if !in_hunk {
            continue;
        }
        if let Some(rest) = line.strip_prefix(' ') {
            old.push_str(rest);
            old.push('\n');
            new.push_str(rest);
            new.push('\n');
        } else if let Some(rest) = line.strip_prefix('-') {
            old.push_str(rest);
            old.push('\n');
        } else if let Some(rest) = line.strip_prefix('+') {
            new.push_str(rest);
            new.push('\n');
        } else if line.is_empty() {
            old.push('\n');
            new.push('\n');
        } else if line.starts_with("---") || line.starts_with("diff ") {
            // The next file's header (apply_patch): its hunks follow.
            in_hunk = false;
        }
        // `\ No newline at end of file` and anything else: not part of either text.
    }
    (hunks > 0).then_some((old, new))
}

/// How a run ended, as the `session/prompt` stop reason: `None` for a failed run (answered with
/// an error instead).
pub fn stop_reason(status: steward_store::RunStatus, stop: Option<StopReason>) -> Option<acp::StopReason> {
    use steward_store::RunStatus;
    match (status, stop) {
        (RunStatus::Cancelled, _) | (_, Some(StopReason::Cancelled)) => Some(acp::StopReason::Cancelled),
        (RunStatus::Completed, Some(StopReason::Answered)) => Some(acp::StopReason::EndTurn),
        (RunStatus::Completed, Some(StopReason::MaxRounds | StopReason::MaxToolCalls | StopReason::Timeout)) => {
            Some(acp::StopReason::MaxTurnRequests)
        }
        (RunStatus::Completed, Some(StopReason::Stuck)) => Some(acp::StopReason::Refusal),
        (RunStatus::Completed, None) => Some(acp::StopReason::EndTurn),
        _ => None,
    }
}

/// One tool call as the editor last saw it.
#[derive(Default)]
struct Call {
    /// Everything shown in the call so far (an update replaces the whole list).
    content: Vec<acp::ToolCallContent>,
}

/// Turns one run's events into session updates, keeping what a call has shown so far.
pub struct Mapper {
    /// The session's workspace (tools name paths relative to it).
    workspace: PathBuf,
    /// The calls of the run, by the run's call id.
    calls: HashMap<String, Call>,
    /// The text the current model stage streamed (to tell whether the answer was shown).
    streamed: String,
    /// Whether an earlier stage of the run streamed text (the next stage's text starts a new
    /// paragraph).
    spoke: bool,
}

impl Mapper {
    /// A mapper for a run in `workspace`.
    pub fn new(workspace: &Path) -> Mapper {
        Mapper { workspace: workspace.to_path_buf(), calls: HashMap::new(), streamed: String::new(), spoke: false }
    }

    /// The updates `event` gives (none for bookkeeping events).
    pub fn updates(&mut self, event: &Event) -> Vec<acp::SessionUpdate> {
        let id = |call_id: &str| tool_call_id(&event.run_id, call_id);
        match &event.kind {
            EventKind::StageStarted { .. } => {
                self.spoke |= !self.streamed.is_empty();
                self.streamed.clear();
                vec![]
            }
            EventKind::StageChunk { stage, text } if stage == "planner" || stage == "synthesizer" => {
                let shown = if self.streamed.is_empty() && self.spoke { format!("\n\n{text}") } else { text.clone() };
                self.streamed.push_str(text);
                vec![acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(shown.into()))]
            }
            // The drafts, critique and review of the roles mode: the agent's thinking.
            EventKind::StageChunk { text, .. } => {
                vec![acp::SessionUpdate::AgentThoughtChunk(acp::ContentChunk::new(text.clone().into()))]
            }
            EventKind::StageFailed { stage, error, class, .. } => {
                vec![thought(format!("{stage} failed [{}]: {error}\n", class.as_str()))]
            }
            EventKind::ToolRequested { call_id, tool, arguments } => {
                self.calls.insert(call_id.clone(), Call::default());
                let call = acp::ToolCall::new(id(call_id), tool_title(tool, arguments))
                    .kind(tool_kind(tool))
                    .status(acp::ToolCallStatus::Pending)
                    .locations(locations(&self.workspace, arguments))
                    .raw_input(arguments.clone());
                vec![acp::SessionUpdate::ToolCall(call)]
            }
            EventKind::ToolDenied { call_id, rule, reason, .. } => {
                self.finish(event, call_id, acp::ToolCallStatus::Failed, format!("denied by `{rule}`: {reason}"))
            }
            EventKind::PatchProposed { call_id, path, diff } => {
                let shown = match diff_texts(diff) {
                    Some((old, new)) => {
                        acp::ToolCallContent::Diff(acp::Diff::new(absolute(&self.workspace, path), new).old_text(old))
                    }
                    None => text(format!("proposed change to {path}:\n{diff}")),
                };
                self.add(event, call_id, None, shown)
            }
            EventKind::ToolApprovalRequired { call_id, rule, reason, .. } => {
                self.add(event, call_id, None, text(format!("needs approval (`{rule}`): {reason}")))
            }
            EventKind::ToolApproved { call_id, decided_by, .. } => {
                self.add(event, call_id, None, text(format!("approved by {decided_by}")))
            }
            EventKind::ToolRejected { call_id, reason, .. } => {
                self.finish(event, call_id, acp::ToolCallStatus::Failed, format!("rejected: {reason}"))
            }
            EventKind::ToolApprovalExpired { call_id, .. } => {
                self.finish(event, call_id, acp::ToolCallStatus::Failed, "approval expired".to_string())
            }
            EventKind::ToolStarted { call_id, allowed_by, .. } => self.add(
                event,
                call_id,
                Some(acp::ToolCallStatus::InProgress),
                text(format!("allowed by `{allowed_by}`")),
            ),
            EventKind::ToolCompleted { call_id, output, duration_ms, .. } => {
                let shown = steward_protocol::truncate_chars(output, SHOWN_OUTPUT_CHARS);
                let cut = if shown.len() < output.len() { "\n…" } else { "" };
                let mut updates = self.add(
                    event,
                    call_id,
                    Some(acp::ToolCallStatus::Completed),
                    text(format!("done in {duration_ms} ms\n{shown}{cut}")),
                );
                self.calls.remove(call_id);
                updates.truncate(1);
                updates
            }
            EventKind::ToolFailed { call_id, error, .. } => {
                self.finish(event, call_id, acp::ToolCallStatus::Failed, format!("failed: {error}"))
            }
            EventKind::ToolCallRepeated { call_id, tool, arguments, message, .. } => {
                // A repeat never reached the gate: it has no `tool_requested` of its own.
                self.calls.insert(call_id.clone(), Call::default());
                let call = acp::ToolCall::new(id(call_id), tool_title(tool, arguments))
                    .kind(tool_kind(tool))
                    .status(acp::ToolCallStatus::Failed)
                    .raw_input(arguments.clone())
                    .content(vec![text(message.clone())]);
                self.calls.remove(call_id);
                vec![acp::SessionUpdate::ToolCall(call)]
            }
            EventKind::McpElicitationRequested { call_id, server, .. } => self.add(
                event,
                call_id,
                None,
                text(format!("the MCP server `{server}` asked for input (an editor cannot answer it here: declined)")),
            ),
            EventKind::McpElicitationAnswered { call_id, action, .. } => self.add(
                event,
                call_id,
                None,
                text(format!("the MCP server's request for input was answered `{action}`")),
            ),
            EventKind::RunCompleted { final_text, stop_reason, limit, .. } => {
                let mut updates = Vec::new();
                if self.streamed.trim() != final_text.trim() && !final_text.trim().is_empty() {
                    updates
                        .push(acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(final_text.clone().into())));
                }
                if *stop_reason != StopReason::Answered {
                    let why = if limit.is_empty() { String::new() } else { format!(" ({limit})") };
                    updates.push(thought(format!("\nstopped: {}{why}", stop_reason.as_str())));
                }
                updates
            }
            EventKind::RunFailed { error, class, .. } => {
                vec![acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(
                    format!("\nThe run failed [{}]: {error}", class.as_str()).into(),
                ))]
            }
            _ => vec![],
        }
    }

    /// Adds `shown` to the content of call `call_id` (and sets `status` when given): one
    /// `tool_call_update` with the whole content.
    fn add(
        &mut self,
        event: &Event,
        call_id: &str,
        status: Option<acp::ToolCallStatus>,
        shown: acp::ToolCallContent,
    ) -> Vec<acp::SessionUpdate> {
        let call = self.calls.entry(call_id.to_string()).or_default();
        call.content.push(shown);
        let fields = acp::ToolCallUpdateFields::new().content(call.content.clone()).status(status);
        vec![acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(tool_call_id(&event.run_id, call_id), fields))]
    }

    /// The call's last update: `status` with `why` added to its content.
    fn finish(
        &mut self,
        event: &Event,
        call_id: &str,
        status: acp::ToolCallStatus,
        why: String,
    ) -> Vec<acp::SessionUpdate> {
        let updates = self.add(event, call_id, Some(status), text(why));
        self.calls.remove(call_id);
        updates
    }
}

/// A line of the agent's thinking (limits, a failed stage).
fn thought(text: String) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentThoughtChunk(acp::ContentChunk::new(text.into()))
}

#[cfg(test)]
#[path = "updates_tests.rs"]
mod tests;
