//! A run as one timeline, in the order things happened: the model's text, each tool step with
//! its decision (and, where the run waits, the approval form in place), notes of the control
//! layer, and the answer last. The run page, the conversation page and the side-by-side page
//! render it with `timeline.html`; `static/app.js` refetches it (`GET /runs/{id}/timeline`) and
//! swaps the entries whose `rev` changed.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use chrono::{DateTime, Utc};
use serde::Serialize;
use steward_protocol::{ApprovalRequest, ApprovalStatus, Event, EventKind, StopReason};
use steward_store::ApprovalDecisionRecord;

use super::{diff, markdown};
use crate::runs::RunView;

/// Most characters of a tool's output kept on the page (the rest is in `steward show`).
const MAX_OUTPUT_CHARS: usize = 20_000;
/// Most characters of the one-line argument summary of a tool step.
const SHORT_ARGS_CHARS: usize = 90;

/// A run's timeline and the state shown above and below it.
#[derive(Serialize)]
pub(super) struct Timeline {
    pub run_id: String,
    pub entries: Vec<Entry>,
    pub status: Status,
    pub progress: Progress,
    /// Files the run changed (`patch_applied`), in order, with their rollback tokens.
    pub files_changed: Vec<String>,
    /// Approvals waiting for the owner now.
    pub waiting: usize,
    /// True once every change of the run was rolled back (set by the caller, which reads the
    /// rollback records).
    pub rolled_back: bool,
    pub ended: bool,
    pub last_seq: u64,
}

/// The run's state as a badge: `text` (`waiting for you`, `completed — 2 calls refused`,
/// `failed: provider_unreachable` …), `tone` (`ok`, `bad`, `wait`, `info`) and the run's plain
/// status (`running`, `completed` …) in `status`.
#[derive(Serialize)]
pub(super) struct Status {
    pub text: String,
    pub tone: &'static str,
    pub status: String,
}

/// Progress figures: when the run started, how long it has taken (ms, final once ended), its
/// round, tokens so far and whether the model is writing right now.
#[derive(Serialize, Default)]
pub(super) struct Progress {
    pub started_at: String,
    pub elapsed_ms: u64,
    /// `elapsed_ms` for people: `0.4 s`, `12 s`, `3 min 05 s` (the format `app.js` ticks in).
    pub elapsed: String,
    pub round: u32,
    pub tokens: u64,
    pub streaming: bool,
}

/// One entry: a stable `key` (the kind and the seq of the event that opened it) and a `rev`
/// that changes whenever what the entry shows changes.
#[derive(Serialize)]
pub(super) struct Entry {
    pub key: String,
    pub rev: String,
    #[serde(flatten)]
    pub item: Item,
}

/// What an entry shows.
#[derive(Serialize, Hash)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum Item {
    /// Text of a model stage (`planner`, or a role's), as safe HTML from Markdown.
    Text { stage: String, round: u32, html: String, streaming: bool },
    /// A tool step.
    Call(Box<Call>),
    /// A note of the control layer (`tone` as for [`Status`]).
    Note { text: String, tone: &'static str },
    /// The final answer, as safe HTML from Markdown.
    Answer { html: String },
}

/// A tool step as the timeline shows it.
#[derive(Serialize, Hash, Default)]
pub(super) struct Call {
    pub call_id: String,
    pub tool: String,
    /// `path=notes/one.txt, content="one\n"`, cut to a line.
    pub short_args: String,
    /// Each argument: name and value (strings as they are, other values as JSON).
    pub args: Vec<(String, String)>,
    pub args_json: String,
    /// `requested`, `waiting for you`, `denied`, `running`, `completed` …
    pub decision: String,
    pub tone: &'static str,
    pub rule: String,
    /// Why it was refused or failed, as safe HTML.
    pub reason_html: String,
    pub output: String,
    pub duration_ms: Option<u64>,
    pub approval: Option<ApprovalItem>,
    /// The change it proposes or made.
    pub diff: Option<DiffItem>,
}

/// A diff with its parsed view (empty `view.files` when it is not a unified diff).
#[derive(Serialize)]
pub(super) struct DiffItem {
    pub text: String,
    pub view: diff::DiffView,
}

impl DiffItem {
    /// The diff `text` with invisible characters shown, and its parsed view.
    fn of(text: &str) -> Self {
        let text = shown(text);
        DiffItem { view: diff::parse(&text), text }
    }
}

impl Hash for DiffItem {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text.hash(state)
    }
}

/// An approval request in its step.
#[derive(Serialize)]
pub(super) struct ApprovalItem {
    pub id: String,
    /// `pending`, `approved`, `denied`, `expired` or `closed` (the run ended first).
    pub state: String,
    pub risk: String,
    pub rule: String,
    pub reason_html: String,
    pub expires_at: String,
    /// `MM:SS` left when the page was made (not part of the entry's revision).
    pub time_left: String,
    pub call_hash: String,
    /// `approved by local:ann (this call only)`; empty while pending.
    pub decided: String,
    /// When it was decided (RFC 3339), for the page to show in local time.
    pub decided_at: String,
}

impl Hash for ApprovalItem {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (&self.id, &self.state, &self.reason_html, &self.decided, &self.decided_at).hash(state)
    }
}

/// What [`build`] reads besides the events.
pub(super) struct Sources<'a> {
    pub view: &'a RunView,
    pub events: &'a [Event],
    pub approvals: &'a [ApprovalRequest],
    pub decisions: &'a HashMap<String, ApprovalDecisionRecord>,
    pub now: DateTime<Utc>,
}

/// The timeline of a run from its stored events, approval requests and recorded decisions.
pub(super) fn build(src: &Sources<'_>) -> Timeline {
    let mut b =
        Builder { src, entries: Vec::new(), texts: HashMap::new(), calls: HashMap::new(), raw_texts: HashMap::new() };
    let mut progress = Progress {
        started_at: src.view.record.as_ref().map(|r| rfc3339(r.created_at)).unwrap_or_default(),
        ..Progress::default()
    };
    let mut files_changed: Vec<String> = Vec::new();
    let mut end: Option<(u64, Ending)> = None;
    let mut refused = 0usize;
    for event in src.events {
        if call_event(&mut b, event, &mut refused, &mut files_changed) {
            continue;
        }
        match &event.kind {
            EventKind::StageStarted { stage, round } => {
                progress.round = progress.round.max(*round);
                progress.streaming = true;
                b.open_text(event.seq, stage, *round);
            }
            EventKind::StageChunk { stage, text } => b.push_text(event.seq, stage, text),
            EventKind::StageCompleted { usage, .. } => {
                progress.tokens += usage.input_tokens + usage.output_tokens;
                progress.streaming = false;
                b.close_texts();
            }
            EventKind::StageFailed { stage, round, error, class, .. } => {
                progress.streaming = false;
                b.close_texts();
                b.note(event.seq, format!("{stage}, round {round}, failed ({}): {error}", class.as_str()), "bad");
            }
            EventKind::ContextRetrieved { chunks, .. } if !chunks.is_empty() => {
                let mut files: Vec<&str> = chunks.iter().map(|c| c.path.as_str()).collect();
                files.dedup();
                let text = format!("Gave the model {} passage(s) of the workspace: {}", chunks.len(), files.join(", "));
                b.note(event.seq, text, "info");
            }
            EventKind::PromptFitted { round, rounds_dropped, tools_dropped, .. } => {
                let mut text = format!("Round {round}: the prompt was shortened to fit the model's window");
                if *rounds_dropped > 0 {
                    text.push_str(&format!(", {rounds_dropped} earlier round(s) left out"));
                }
                if !tools_dropped.is_empty() {
                    text.push_str(&format!(", tools left out: {}", tools_dropped.join(", ")));
                }
                b.note(event.seq, text, "info");
            }
            EventKind::RunTainted { source } => {
                let text = format!(
                    "From here on the run has seen untrusted content ({source}): calls that change things ask, \
                     and what it saw cannot leave without an ask"
                );
                b.note(event.seq, text, "wait")
            }
            EventKind::RunCompleted { final_text, stop_reason, duration_ms, .. } => {
                progress.streaming = false;
                b.close_texts();
                b.drop_repeated_answer(final_text);
                if !final_text.trim().is_empty() {
                    b.push(event.seq, "answer", Item::Answer { html: markdown::to_html(final_text) });
                }
                end = Some((*duration_ms, Ending::Completed(*stop_reason)));
            }
            EventKind::RunFailed { error, class, duration_ms, .. } => {
                progress.streaming = false;
                b.close_texts();
                b.note(event.seq, format!("The run failed ({}): {error}", class.as_str()), "bad");
                end = Some((*duration_ms, Ending::Failed(class.as_str().to_string())));
            }
            EventKind::RunCancelled { reason, duration_ms, .. } => {
                progress.streaming = false;
                b.close_texts();
                b.note(event.seq, format!("Cancelled: {reason}"), "bad");
                end = Some((*duration_ms, Ending::Cancelled));
            }
            _ => {}
        }
    }
    let waiting = b.waiting();
    let ended = end.is_some() || !matches!(src.view.status.as_str(), "queued" | "running");
    progress.elapsed_ms = match &end {
        Some((ms, _)) => *ms,
        None => {
            src.view.record.as_ref().map(|r| (src.now - r.created_at).num_milliseconds().max(0) as u64).unwrap_or(0)
        }
    };
    if ended {
        progress.streaming = false;
    }
    progress.elapsed = elapsed_words(progress.elapsed_ms);
    let status = status(src.view, end.as_ref().map(|(_, e)| e), waiting, refused);
    let last_seq = src.events.last().map(|e| e.seq).unwrap_or(0);
    let entries = b.finish();
    Timeline {
        run_id: src.view.id.clone(),
        entries,
        status,
        progress,
        files_changed,
        waiting,
        rolled_back: false,
        ended,
        last_seq,
    }
}

/// Applies `event` when it is about a tool call (its request, decision, progress, outcome,
/// patch) to `b`, counting the calls refused in `refused` and the files changed in
/// `files_changed`; false for any other event.
fn call_event(b: &mut Builder<'_, '_>, event: &Event, refused: &mut usize, files_changed: &mut Vec<String>) -> bool {
    match &event.kind {
        EventKind::ToolRequested { call_id, tool, arguments } => b.open_call(event.seq, call_id, tool, arguments),
        EventKind::ToolDenied { call_id, rule, reason, .. } => {
            *refused += 1;
            b.update(call_id, |c| {
                set(c, "denied", "bad", rule);
                c.reason_html = markdown::to_html(reason);
            })
        }
        EventKind::ToolApprovalRequired { call_id, approval_id, rule, .. } => {
            let approval = b.approval(approval_id);
            b.update(call_id, |c| {
                set(c, "approval required", "wait", rule);
                if approval.as_ref().is_some_and(|a| a.state == "pending") {
                    c.decision = "waiting for you".into();
                }
                c.approval = approval;
            })
        }
        EventKind::ToolApproved { call_id, .. } => b.update(call_id, |c| set(c, "approved", "ok", "")),
        EventKind::ToolRejected { call_id, reason, .. } => {
            *refused += 1;
            b.update(call_id, |c| {
                set(c, "denied by you", "bad", "");
                c.reason_html = markdown::to_html(reason);
            })
        }
        EventKind::ToolApprovalExpired { call_id, approval_id } => {
            *refused += 1;
            let state = b.approval(approval_id).map(|a| a.state).unwrap_or_default();
            let text = if state == "closed" { "not run: the run ended" } else { "expired unanswered" };
            b.update(call_id, |c| set(c, text, "bad", ""))
        }
        // An approval is shown in the step already; a grant or a rule is named.
        EventKind::ToolStarted { call_id, allowed_by, .. } => {
            let rule = if allowed_by.starts_with("approval ") { "" } else { allowed_by.as_str() };
            b.update(call_id, |c| set(c, "running", "info", rule))
        }
        EventKind::McpElicitationRequested { call_id, .. } => {
            b.update(call_id, |c| set(c, "waiting for your input", "wait", ""))
        }
        EventKind::McpElicitationAnswered { call_id, .. } => b.update(call_id, |c| set(c, "running", "info", "")),
        EventKind::ToolCompleted { call_id, output, hook_output, duration_ms, .. } => {
            let shown = if hook_output.is_empty() { output.clone() } else { format!("{output}\n\n{hook_output}") };
            b.update(call_id, |c| {
                set(c, "completed", "ok", "");
                c.output = cut(&shown, MAX_OUTPUT_CHARS);
                c.duration_ms = Some(*duration_ms);
            })
        }
        EventKind::ToolFailed { call_id, error, duration_ms, .. } => b.update(call_id, |c| {
            set(c, "failed", "bad", "");
            c.reason_html = markdown::to_html(error);
            c.duration_ms = Some(*duration_ms);
        }),
        EventKind::ToolCallRepeated { call_id, rule, answered_from_record, message, .. } => {
            if !answered_from_record {
                *refused += 1;
            }
            let (text, tone) =
                if *answered_from_record { ("answered from the record", "info") } else { ("repeat, not run", "bad") };
            b.update(call_id, |c| {
                set(c, text, tone, rule);
                c.reason_html = markdown::to_html(message);
            })
        }
        EventKind::PatchProposed { call_id, diff, .. } => b.update(call_id, |c| {
            // The approval's preview (redacted) is the one shown when there is one.
            if c.diff.is_none() {
                c.diff = Some(DiffItem::of(diff));
            }
        }),
        EventKind::PatchApplied { path, .. } if !files_changed.contains(&shown(path)) => {
            files_changed.push(shown(path))
        }
        EventKind::PatchApplied { .. } => {}
        _ => return false,
    }
    true
}

/// How a run ended, from its last event.
enum Ending {
    Completed(StopReason),
    Failed(String),
    Cancelled,
}

/// The status badge: `waiting for you` while an approval waits; the end state with what it
/// means once the run is over.
fn status(view: &RunView, end: Option<&Ending>, waiting: usize, refused: usize) -> Status {
    let plain = view.status.clone();
    let (text, tone) = match (plain.as_str(), end) {
        ("queued", _) => match view.queue_position {
            Some(n) => (format!("queued (position {n})"), "info"),
            None => ("queued".to_string(), "info"),
        },
        ("running", _) if waiting > 0 => ("waiting for you".to_string(), "wait"),
        ("running", _) => ("running".to_string(), "info"),
        (_, Some(Ending::Completed(StopReason::Stuck))) => ("stuck".to_string(), "bad"),
        (_, Some(Ending::Completed(StopReason::Answered))) if refused > 0 => {
            let calls = if refused == 1 { "call" } else { "calls" };
            (format!("completed — {refused} {calls} refused"), "wait")
        }
        (_, Some(Ending::Completed(StopReason::Answered))) => ("completed".to_string(), "ok"),
        (_, Some(Ending::Completed(reason))) => (format!("stopped: {}", reason.as_str()), "wait"),
        (_, Some(Ending::Failed(class))) => (format!("failed: {class}"), "bad"),
        (_, Some(Ending::Cancelled)) => ("cancelled".to_string(), "bad"),
        (other, None) => (other.to_string(), if other == "failed" || other == "interrupted" { "bad" } else { "info" }),
    };
    Status { text, tone, status: plain }
}

fn set(call: &mut Call, decision: &str, tone: &'static str, rule: &str) {
    call.decision = decision.to_string();
    call.tone = tone;
    if !rule.is_empty() {
        call.rule = rule.to_string();
    }
}

/// A duration in milliseconds for people: `0.4 s` under a second, `12 s` under a minute,
/// `3 min 05 s` beyond.
fn elapsed_words(ms: u64) -> String {
    match ms {
        0..1_000 => format!("0.{} s", ms / 100),
        1_000..60_000 => format!("{} s", ms / 1_000),
        _ => format!("{} min {:02} s", ms / 60_000, (ms / 1_000) % 60),
    }
}

/// What an approval's scope (`once`, `run`, `workspace`) covers, in words.
fn scope_words(scope: &str) -> &'static str {
    match scope {
        "run" => "for this run",
        "workspace" => "in this workspace",
        _ => "this call only",
    }
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `text` with bidirectional controls and zero-width characters shown as markers
/// ([`steward_protocol::reveal_invisible`]): a person judges what is there, not what it looks
/// like.
fn shown(text: &str) -> String {
    steward_protocol::reveal_invisible(text).into_owned()
}

/// `text` cut to `max` characters, saying how much was left out; invisible characters shown.
fn cut(text: &str, max: usize) -> String {
    let text = &shown(text);
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}\n… ({} more characters)", &text[..at], text[at..].chars().count()),
        None => text.to_string(),
    }
}

/// The arguments as `name=value` pairs on one line, cut to [`SHORT_ARGS_CHARS`].
fn short_args(arguments: &serde_json::Value) -> (String, Vec<(String, String)>) {
    let pairs: Vec<(String, String)> = match arguments.as_object() {
        Some(map) => map
            .iter()
            .map(|(k, v)| (shown(k), shown(&v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))))
            .collect(),
        None => vec![(String::new(), arguments.to_string())],
    };
    let line: Vec<String> = match arguments.as_object() {
        Some(map) => map.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        None => vec![arguments.to_string()],
    };
    let line = shown(&line.join(", ").replace('\n', " "));
    (super::run::short(&line, SHORT_ARGS_CHARS), pairs)
}

/// Builds the entries in event order.
struct Builder<'s, 'a> {
    src: &'s Sources<'a>,
    entries: Vec<Entry>,
    /// Open text entries by stage: index into `entries`.
    texts: HashMap<String, usize>,
    /// Raw text of each text entry (by index), rendered at the end.
    raw_texts: HashMap<usize, String>,
    /// The latest call entry of each call id (call ids may repeat across rounds).
    calls: HashMap<String, usize>,
}

impl Builder<'_, '_> {
    fn push(&mut self, seq: u64, prefix: &str, item: Item) -> usize {
        self.entries.push(Entry { key: format!("{prefix}{seq}"), rev: String::new(), item });
        self.entries.len() - 1
    }

    fn note(&mut self, seq: u64, text: String, tone: &'static str) {
        self.push(seq, "n", Item::Note { text: shown(&text), tone });
    }

    fn open_text(&mut self, seq: u64, stage: &str, round: u32) {
        let at =
            self.push(seq, "t", Item::Text { stage: stage.to_string(), round, html: String::new(), streaming: true });
        self.raw_texts.insert(at, String::new());
        self.texts.insert(stage.to_string(), at);
    }

    fn push_text(&mut self, seq: u64, stage: &str, text: &str) {
        let at = match self.texts.get(stage) {
            Some(at) => *at,
            None => {
                self.open_text(seq, stage, 0);
                self.texts[stage]
            }
        };
        self.raw_texts.entry(at).or_default().push_str(text);
    }

    fn close_texts(&mut self) {
        for (_, at) in self.texts.drain() {
            if let Item::Text { streaming, .. } = &mut self.entries[at].item {
                *streaming = false;
            }
        }
    }

    /// The answer is usually the last round's text as well: shown once, as the answer.
    fn drop_repeated_answer(&mut self, answer: &str) {
        let last_text = self.entries.iter().rposition(|e| matches!(e.item, Item::Text { .. }));
        if let Some(at) = last_text
            && self.raw_texts.get(&at).is_some_and(|t| t.trim() == answer.trim())
        {
            self.raw_texts.insert(at, String::new());
        }
    }

    fn open_call(&mut self, seq: u64, call_id: &str, tool: &str, arguments: &serde_json::Value) {
        let (short, args) = short_args(arguments);
        let call = Call {
            call_id: call_id.to_string(),
            tool: shown(tool),
            short_args: short,
            args,
            args_json: shown(&serde_json::to_string_pretty(arguments).unwrap_or_default()),
            decision: "requested".into(),
            tone: "info",
            ..Call::default()
        };
        let at = self.push(seq, "c", Item::Call(Box::new(call)));
        self.calls.insert(call_id.to_string(), at);
    }

    fn update(&mut self, call_id: &str, change: impl FnOnce(&mut Call)) {
        if let Some(at) = self.calls.get(call_id)
            && let Item::Call(call) = &mut self.entries[*at].item
        {
            change(call);
        }
    }

    /// Approvals waiting now.
    fn waiting(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(&e.item, Item::Call(c) if c.approval.as_ref().is_some_and(|a| a.state == "pending")))
            .count()
    }

    /// The approval request `id` as its step shows it.
    fn approval(&self, id: &str) -> Option<ApprovalItem> {
        let request = self.src.approvals.iter().find(|a| a.id == id)?;
        let now = self.src.now;
        let ended = !matches!(self.src.view.status.as_str(), "queued" | "running");
        // An expiry announced before the request's time ran out was the run ending.
        let closed_early = self.src.events.iter().any(|e| {
            matches!(&e.kind, EventKind::ToolApprovalExpired { approval_id, .. } if approval_id == id)
                && e.at < request.expires_at
        });
        let state = match request.status {
            ApprovalStatus::Pending if ended => "closed",
            ApprovalStatus::Pending if request.expires_at <= now => "expired",
            ApprovalStatus::Expired if closed_early => "closed",
            s => s.as_str(),
        };
        let decision = self.src.decisions.get(id);
        let (decided, decided_at) = match (request.status, decision) {
            (ApprovalStatus::Approved, Some(d)) => {
                (format!("approved by {} ({})", d.decided_by, scope_words(&d.scope)), rfc3339(d.created_at))
            }
            (ApprovalStatus::Denied, Some(d)) => (format!("denied by {}", d.decided_by), rfc3339(d.created_at)),
            _ => self.decided_from_events(id),
        };
        Some(ApprovalItem {
            id: request.id.clone(),
            state: state.to_string(),
            risk: format!("{:.2}", request.risk),
            rule: request.rule.clone(),
            reason_html: markdown::to_html(&request.reason),
            expires_at: request.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            time_left: super::run::minutes_seconds((request.expires_at - now).num_seconds()),
            call_hash: steward_core::call_hash(request),
            decided,
            decided_at,
        })
    }

    /// Who decided approval `id` and when, from its events (a decision made in a terminal or
    /// an editor has no decision record).
    fn decided_from_events(&self, id: &str) -> (String, String) {
        for e in self.src.events {
            match &e.kind {
                EventKind::ToolApproved { approval_id, decided_by, scope, .. } if approval_id == id => {
                    let covers = if scope.is_empty() { String::new() } else { format!(" ({})", scope_words(scope)) };
                    return (format!("approved by {decided_by}{covers}"), rfc3339(e.at));
                }
                EventKind::ToolRejected { approval_id, .. } if approval_id == id => {
                    return ("denied".to_string(), rfc3339(e.at));
                }
                EventKind::ToolApprovalExpired { approval_id, .. } if approval_id == id => {
                    return (String::new(), rfc3339(e.at));
                }
                _ => {}
            }
        }
        (String::new(), String::new())
    }

    /// The entries with their text rendered and their revisions set; empty text entries (an
    /// answer shown as the answer, a round that only called tools) are left out.
    fn finish(mut self) -> Vec<Entry> {
        let preview_of = |call: &Call| -> Option<String> {
            let id = &call.approval.as_ref()?.id;
            let request = self.src.approvals.iter().find(|a| &a.id == id)?;
            (!request.preview.is_empty()).then(|| request.preview.clone())
        };
        for (at, entry) in self.entries.iter_mut().enumerate() {
            match &mut entry.item {
                Item::Text { html, .. } => {
                    *html = markdown::to_html(self.raw_texts.get(&at).map(String::as_str).unwrap_or(""))
                }
                Item::Call(call) => {
                    if let Some(preview) = preview_of(call) {
                        call.diff = Some(DiffItem::of(&preview));
                    }
                }
                _ => {}
            }
        }
        let raw = &self.raw_texts;
        let mut entries: Vec<Entry> = self
            .entries
            .into_iter()
            .enumerate()
            .filter(|(at, e)| {
                !matches!(e.item, Item::Text { streaming: false, .. })
                    || raw.get(at).is_some_and(|t| !t.trim().is_empty())
            })
            .map(|(_, e)| e)
            .collect();
        for entry in &mut entries {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            entry.item.hash(&mut hasher);
            entry.rev = format!("{:x}", hasher.finish());
        }
        entries
    }
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
