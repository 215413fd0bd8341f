//! Fitting the planner's prompt to the model's context window, deterministically, before the
//! server would refuse it.
//!
//! The prompt's size is an estimate, not the server's count: every message's text, tool calls
//! and the tool definitions as the wire sends them (JSON), at one token per
//! [`BYTES_PER_TOKEN`] bytes, plus [`PER_MESSAGE_TOKENS`] a message, [`PER_TOOL_TOKENS`] a
//! tool and [`TEMPLATE_TOKENS`] for the chat template's own text. Three bytes a token
//! over-counts English prose and JSON for the BPE tokenizers of today's local models (about
//! four bytes a token), so the estimate errs on the side of a prompt that fits; the real-model
//! test checks it against llama.cpp's own count.
//!
//! The estimate is calibrated ([`calibration`]): the server's own count of a prompt divided by
//! that prompt's estimate, plus a [`CALIBRATION_MARGIN`], scales the estimate (between
//! [`MIN_SCALE`] and [`MAX_SCALE`]), so a prompt that over-counts by a third no longer loses
//! rounds or descriptions it has room for. In the first round the count is the server's
//! tokenizer's, where it has one ([`first_calibration`]: llama.cpp); from the second round on
//! it is the previous prompt's `usage.prompt_tokens`.
//!
//! When the estimate plus the reply's reserve exceeds the window, the request is shrunk in
//! this order, each step only as far as needed:
//! 1. earlier rounds (an assistant message with its calls and their results) are left out,
//!    oldest first; the latest round is always kept, and the task says how many were left out
//!    and, one line each, which changes among them succeeded (a call of a tool that writes
//!    whose result was not an error), so that the model does not make them again;
//! 2. every tool's description is cut to its first sentence (at most
//!    [`SHORT_DESCRIPTION_CHARS`] characters) and the descriptions inside its argument schema
//!    are removed;
//! 3. tools are left out one at a time, the least relevant to the task first (relevance: how
//!    many of the task's words of three letters or more appear in the tool's name and
//!    description; ties leave out the later tool of the catalog first). A tool the request
//!    forces, and a tool already called in the prompt's rounds, is never left out.
//!
//! A prompt that does not fit after all three is a [`FitError`]: the run fails with
//! `context_overflow` rather than sending a request the server refuses.

use std::collections::BTreeSet;

use serde_json::Value;
use steward_protocol::{ChatRequest, EventKind, Message, Role, ToolChoice, ToolSpec};
use steward_provider::ContextWindow;

/// Bytes of prompt text counted as one token.
pub const BYTES_PER_TOKEN: usize = 3;
/// Tokens counted for each message's role markers.
pub const PER_MESSAGE_TOKENS: u32 = 6;
/// Tokens counted for each tool's framing in the chat template.
pub const PER_TOOL_TOKENS: u32 = 10;
/// Tokens counted for the chat template's own text (tool-use instructions and markers).
pub const TEMPLATE_TOKENS: u32 = 150;
/// Longest tool description kept by step 2, in characters.
pub const SHORT_DESCRIPTION_CHARS: usize = 100;
/// Tokens kept free for the reply when the request sets no output limit: a quarter of the
/// window, at most this many (a local server is sent the same share as `max_tokens`).
#[cfg(test)]
const DEFAULT_REPLY_RESERVE: u32 = steward_provider::DEFAULT_REPLY_SHARE;

/// Added to the server's count over the estimate before it scales the next estimate, so that a
/// prompt a little denser than the last one still fits.
pub const CALIBRATION_MARGIN: f64 = 0.05;
/// The smallest scale a calibration gives the estimate.
pub const MIN_SCALE: f64 = 0.5;
/// The largest scale a calibration gives the estimate.
pub const MAX_SCALE: f64 = 2.0;
/// Longest line, in characters, summarising a successful change left out with its round.
const CHANGE_LINE_CHARS: usize = 160;

/// The scale of the next estimate from the last prompt: `counted` tokens by the server
/// (`usage.prompt_tokens`) against `estimated` by [`estimate_tokens`], plus
/// [`CALIBRATION_MARGIN`], within [`MIN_SCALE`]..=[`MAX_SCALE`]. `None` when either is zero
/// (a server that reports no usage leaves the estimate as it is).
pub fn calibration(estimated: u32, counted: u64) -> Option<f64> {
    if estimated == 0 || counted == 0 {
        return None;
    }
    Some((counted as f64 / f64::from(estimated) + CALIBRATION_MARGIN).clamp(MIN_SCALE, MAX_SCALE))
}

/// The scale of the first round's estimate, before any reply has told the server's count: the
/// server's own count of the whole `request` against its estimate ([`calibration`]), when the
/// provider can give one (llama.cpp's tokenizer); `None` otherwise, and when the request fits
/// a `window`-token window even at [`MAX_SCALE`] (nothing to decide, so the server is not
/// asked).
pub async fn first_calibration(
    provider: &dyn steward_provider::Provider,
    request: &ChatRequest,
    window: u32,
) -> Option<f64> {
    let estimated = estimate_tokens(request);
    if f64::from(estimated) * MAX_SCALE <= f64::from(window.saturating_sub(reply_reserve(request, window))) {
        return None;
    }
    let counted = provider.count_prompt_tokens(request).await?;
    calibration(estimated, u64::from(counted))
}

/// What was done to make a request fit; nothing when it fitted as it was.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fitted {
    /// The estimate before shrinking, in tokens.
    pub before_tokens: u32,
    /// The estimate as it will be sent, in tokens.
    pub estimated_tokens: u32,
    /// Tokens kept free for the reply.
    pub reserved_for_reply: u32,
    /// Earlier rounds left out.
    pub rounds_dropped: u32,
    /// Whether tool descriptions were shortened.
    pub descriptions_shortened: bool,
    /// Tools left out, in the order they were dropped.
    pub tools_dropped: Vec<String>,
}

impl Fitted {
    /// True when the request was changed.
    pub fn changed(&self) -> bool {
        self.rounds_dropped > 0 || self.descriptions_shortened || !self.tools_dropped.is_empty()
    }

    /// The `prompt_fitted` event saying what was done to round `round`'s request to fit
    /// `window`.
    pub fn event(self, round: u32, window: ContextWindow) -> EventKind {
        EventKind::PromptFitted {
            round,
            window: window.tokens,
            window_source: if window.configured { "config" } else { "server" }.into(),
            reserved_for_reply: self.reserved_for_reply,
            before_tokens: self.before_tokens,
            estimated_tokens: self.estimated_tokens,
            rounds_dropped: self.rounds_dropped,
            descriptions_shortened: self.descriptions_shortened,
            tools_dropped: self.tools_dropped,
        }
    }
}

/// A prompt that cannot fit the window even shrunk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the prompt needs about {needed} tokens even shrunk (earlier rounds, tool descriptions and {tools_dropped} \
     tools left out), but the model's context window of {window} tokens leaves {budget} after {reserved} kept \
     for the reply: give the server a larger context (llama-server -c, Ollama num_ctx), set a smaller \
     max_tokens, offer fewer tools, or shorten the task"
)]
pub struct FitError {
    /// The smallest estimate reached, in tokens.
    pub needed: u32,
    /// The window, in tokens.
    pub window: u32,
    /// Tokens the prompt may take.
    pub budget: u32,
    /// Tokens kept free for the reply.
    pub reserved: u32,
    /// Tools it had left out.
    pub tools_dropped: usize,
}

/// The estimated size of `request`'s prompt, in tokens (see the module's documentation).
pub fn estimate_tokens(request: &ChatRequest) -> u32 {
    let mut bytes = 0usize;
    for message in &request.messages {
        bytes += message.content.len();
        for call in &message.tool_calls {
            bytes += call.name.len() + call.id.len() + call.arguments.to_string().len();
        }
    }
    let tools = steward_provider::tool_definitions(&request.tools).to_string().len();
    let tokens = (bytes + tools).div_ceil(BYTES_PER_TOKEN) as u64
        + u64::from(PER_MESSAGE_TOKENS) * request.messages.len() as u64
        + u64::from(PER_TOOL_TOKENS) * request.tools.len() as u64
        + u64::from(TEMPLATE_TOKENS);
    tokens.min(u64::from(u32::MAX)) as u32
}

/// Tokens kept free for the reply in a window of `window` tokens: the request's output limit,
/// else a quarter of the window, at most `steward_provider::DEFAULT_REPLY_SHARE`.
pub fn reply_reserve(request: &ChatRequest, window: u32) -> u32 {
    request.max_tokens.unwrap_or(steward_provider::reply_share(Some(window)))
}

/// Shrinks `request` until its estimate fits `window` less the reply's reserve (see the
/// module's documentation); `task` is the run's task, which ranks the tools.
///
/// Errors: [`FitError`] when it does not fit after every step; `request` is then left shrunk.
#[cfg(test)]
fn fit(request: &mut ChatRequest, window: u32, task: &str) -> Result<Fitted, FitError> {
    fit_calibrated(request, window, task, None)
}

/// Shrinks `request` until its estimate, scaled by `scale` (from [`calibration`]; `None`:
/// unscaled), fits `window` less the reply's reserve (see the module's documentation); `task`
/// is the run's task, which ranks the tools. The [`Fitted`] and [`FitError`] figures are the
/// scaled estimates.
///
/// Errors: [`FitError`] when it does not fit after every step; `request` is then left shrunk.
pub fn fit_calibrated(
    request: &mut ChatRequest,
    window: u32,
    task: &str,
    scale: Option<f64>,
) -> Result<Fitted, FitError> {
    let scale = scale.unwrap_or(1.0).clamp(MIN_SCALE, MAX_SCALE);
    let estimate =
        |request: &ChatRequest| (f64::from(estimate_tokens(request)) * scale).ceil().min(f64::from(u32::MAX)) as u32;
    let reserved = reply_reserve(request, window);
    let budget = window.saturating_sub(reserved);
    let before = estimate(request);
    let mut fitted =
        Fitted { before_tokens: before, estimated_tokens: before, reserved_for_reply: reserved, ..Default::default() };
    let fits = |request: &ChatRequest| estimate(request) <= budget;
    if before <= budget {
        return Ok(fitted);
    }
    // 1. Earlier rounds, oldest first; the latest is kept.
    let original = request.messages.clone();
    let rounds = round_starts(&original);
    if rounds.len() > 1 {
        for drop in 1..rounds.len() {
            request.messages = without_rounds(&original, &rounds, drop, &request.tools);
            fitted.rounds_dropped = drop as u32;
            if fits(request) {
                break;
            }
        }
    }
    // 2. Shorter tool descriptions.
    if !fits(request) && !request.tools.is_empty() {
        for tool in &mut request.tools {
            tool.description = first_sentence(&tool.description);
            strip_descriptions(&mut tool.input_schema);
        }
        fitted.descriptions_shortened = true;
    }
    // 3. Fewer tools, the least relevant first.
    if !fits(request) {
        let keep = kept_tools(request);
        let mut order: Vec<(usize, usize)> = request
            .tools
            .iter()
            .enumerate()
            .filter(|(_, t)| !keep.contains(&t.name))
            .map(|(i, t)| (relevance(task, &t.name, &t.description), i))
            .collect();
        // Least relevant first; among equals, the later tool first.
        order.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let names: Vec<String> = order.iter().map(|(_, i)| request.tools[*i].name.clone()).collect();
        for name in names {
            request.tools.retain(|t| t.name != name);
            fitted.tools_dropped.push(name);
            if fits(request) {
                break;
            }
        }
    }
    fitted.estimated_tokens = estimate(request);
    if fitted.estimated_tokens > budget {
        return Err(FitError {
            needed: fitted.estimated_tokens,
            window,
            budget,
            reserved,
            tools_dropped: fitted.tools_dropped.len(),
        });
    }
    Ok(fitted)
}

/// Indexes of the messages that start a round: each assistant message after the task.
fn round_starts(messages: &[Message]) -> Vec<usize> {
    messages.iter().enumerate().filter(|(_, m)| m.role == Role::Assistant).map(|(i, _)| i).collect()
}

/// `messages` without the first `drop` rounds, the task saying how many were left out and,
/// one line each, which changes among them succeeded (calls of a tool of `tools` that writes,
/// whose result is not an error).
fn without_rounds(messages: &[Message], rounds: &[usize], drop: usize, tools: &[ToolSpec]) -> Vec<Message> {
    let first_round = rounds[0];
    let kept_from = rounds[drop];
    let changes = successful_changes(&messages[first_round..kept_from], tools);
    let mut out: Vec<Message> = messages[..first_round].to_vec();
    if let Some(task) = out.iter_mut().rev().find(|m| m.role == Role::User) {
        task.content.push_str(&format!(
            "\n\n({drop} earlier step{} of this task {} left out here to fit the model's context window.",
            if drop == 1 { "" } else { "s" },
            if drop == 1 { "is" } else { "are" }
        ));
        if !changes.is_empty() {
            task.content.push_str(" Changes made in them, already done:");
            for change in changes {
                task.content.push_str("\n- ");
                task.content.push_str(&change);
            }
        }
        task.content.push(')');
    }
    out.extend_from_slice(&messages[kept_from..]);
    out
}

/// One line per successful change among `messages`: `` `tool` {arguments} → first line of
/// the result ``, at most [`CHANGE_LINE_CHARS`] characters.
fn successful_changes(messages: &[Message], tools: &[ToolSpec]) -> Vec<String> {
    let writes = |name: &str| tools.iter().any(|t| t.name == name && t.writes);
    let mut lines = Vec::new();
    for call in messages.iter().flat_map(|m| &m.tool_calls).filter(|c| writes(&c.name)) {
        let result = messages.iter().find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(&call.id));
        let Some(result) = result.filter(|r| !r.is_error) else { continue };
        let line = format!(
            "`{}` {} → {}",
            call.name,
            call.arguments,
            result.content.lines().next().unwrap_or_default().trim()
        );
        lines.push(match line.char_indices().nth(CHANGE_LINE_CHARS) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line,
        });
    }
    lines
}

/// The first sentence of `text` (up to a `. ` or a line break), at most
/// [`SHORT_DESCRIPTION_CHARS`] characters.
fn first_sentence(text: &str) -> String {
    let end = [text.find(". ").map(|i| i + 1), text.find('\n')].into_iter().flatten().min().unwrap_or(text.len());
    let sentence = text[..end].trim();
    match sentence.char_indices().nth(SHORT_DESCRIPTION_CHARS) {
        Some((cut, _)) => format!("{}…", sentence[..cut].trim_end()),
        None => sentence.to_string(),
    }
}

/// Removes every `description` of a JSON Schema's properties, recursively.
fn strip_descriptions(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for prop in props.values_mut() {
                    if let Value::Object(p) = prop {
                        p.remove("description");
                    }
                    strip_descriptions(prop);
                }
            }
            if let Some(items) = map.get_mut("items") {
                if let Value::Object(i) = items {
                    i.remove("description");
                }
                strip_descriptions(items);
            }
        }
        Value::Array(values) => values.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

/// Tools never left out: the one the request forces and those called in its rounds.
fn kept_tools(request: &ChatRequest) -> BTreeSet<String> {
    let mut keep: BTreeSet<String> =
        request.messages.iter().flat_map(|m| m.tool_calls.iter().map(|c| c.name.clone())).collect();
    if let ToolChoice::Named(name) = &request.tool_choice {
        keep.insert(name.clone());
    }
    keep
}

/// How many distinct words of `task` (three letters or more, lower-cased) appear in the tool's
/// name (its `_`-separated parts) or description.
fn relevance(task: &str, name: &str, description: &str) -> usize {
    let words = |text: &str| -> BTreeSet<String> {
        text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 3).map(str::to_lowercase).collect()
    };
    let tool: BTreeSet<String> =
        words(&format!("{name} {}", name.replace('_', " "))).union(&words(description)).cloned().collect();
    words(task).intersection(&tool).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use steward_protocol::{RiskLevel, ToolCall, ToolSpec};

    fn tool(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "A workspace path, relative to the root, of the file to use."}
            }, "required": ["path"]}),
            risk: RiskLevel::Low,
            writes: false,
            path_inputs: vec![],
            untrusted_output: false,
        }
    }

    fn catalog() -> Vec<ToolSpec> {
        let long = "Does a thing. ".repeat(20);
        vec![
            tool("read_file", &format!("Read a file of the workspace. {long}")),
            tool("git_status", &format!("Show the repository status. {long}")),
            tool("web_fetch", &format!("Fetch a web page. {long}")),
            tool("write_file", &format!("Write a file of the workspace. {long}")),
        ]
    }

    fn round(i: usize, result_chars: usize) -> Vec<Message> {
        let call = ToolCall { id: format!("c{i}"), name: "read_file".into(), arguments: json!({"path": "a.txt"}) };
        vec![
            Message::assistant(String::new(), vec![call]),
            Message::tool_result(format!("c{i}"), "x".repeat(result_chars), false),
        ]
    }

    fn request(rounds: usize) -> ChatRequest {
        let mut messages =
            vec![Message::system("rules"), Message::user("Read the file notes.txt and say what it holds")];
        for i in 0..rounds {
            messages.extend(round(i, 900));
        }
        ChatRequest {
            model: "m".into(),
            messages,
            tools: catalog(),
            tool_choice: ToolChoice::Auto,
            max_tokens: Some(200),
            temperature: None,
            constrain: false,
        }
    }

    #[test]
    fn a_prompt_that_fits_is_left_alone() {
        let mut req = request(2);
        let before = req.clone();
        let fitted = fit(&mut req, 100_000, "task").unwrap();
        assert!(!fitted.changed());
        assert_eq!(req, before);
        assert_eq!(fitted.reserved_for_reply, 200);
    }

    #[test]
    fn earlier_rounds_go_first_oldest_first_and_the_latest_stays() {
        let mut req = request(4);
        let full = estimate_tokens(&req);
        // Room for about two rounds fewer.
        let window = full - 500 + 200;
        let fitted = fit(&mut req, window, "Read the file notes.txt").unwrap();
        assert_eq!(fitted.rounds_dropped, 2, "{fitted:?}");
        assert!(!fitted.descriptions_shortened && fitted.tools_dropped.is_empty());
        assert!(fitted.estimated_tokens <= window - 200);
        let ids: Vec<&str> = req.messages.iter().filter_map(|m| m.tool_call_id.as_deref()).collect();
        assert_eq!(ids, ["c2", "c3"], "the latest rounds stay, each call with its result");
        assert!(
            req.messages[1].content.contains("2 earlier steps of this task are left out"),
            "{}",
            req.messages[1].content
        );
    }

    #[test]
    fn then_descriptions_are_shortened_then_the_least_relevant_tools_dropped() {
        let mut req = request(0);
        let shortened = {
            let mut r = req.clone();
            for t in &mut r.tools {
                t.description = first_sentence(&t.description);
                strip_descriptions(&mut t.input_schema);
            }
            estimate_tokens(&r)
        };
        let mut only_short = req.clone();
        let fitted = fit(&mut only_short, shortened + 200, "Read the file notes.txt").unwrap();
        assert!(fitted.descriptions_shortened && fitted.tools_dropped.is_empty(), "{fitted:?}");
        assert_eq!(only_short.tools[0].description, "Read a file of the workspace.");
        assert!(only_short.tools[0].input_schema["properties"]["path"].get("description").is_none());

        let fitted = fit(&mut req, shortened + 200 - 40, "Read the file notes.txt").unwrap();
        // web_fetch and git_status share no word with the task; git_status comes earlier in
        // the catalog, so web_fetch goes first.
        assert_eq!(fitted.tools_dropped, ["web_fetch"], "{fitted:?}");
        let names: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["read_file", "git_status", "write_file"]);
    }

    #[test]
    fn forced_and_already_called_tools_are_never_dropped_and_too_small_a_window_fails() {
        let mut req = request(1);
        req.tool_choice = ToolChoice::Named("web_fetch".into());
        let err = fit(&mut req, 400, "say hello").unwrap_err();
        let names: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["read_file", "web_fetch"], "called and forced tools stay");
        assert_eq!(err.window, 400);
        assert_eq!(err.reserved, 200);
        assert!(err.needed > err.budget);
        assert!(err.to_string().contains("context window of 400 tokens"), "{err}");
    }

    #[test]
    fn fitting_is_deterministic() {
        let mut a = request(3);
        let mut b = request(3);
        let window = estimate_tokens(&a) / 2;
        assert_eq!(fit(&mut a, window, "Read notes"), fit(&mut b, window, "Read notes"));
        assert_eq!(a, b);
    }

    #[test]
    fn the_calibration_follows_the_servers_count_with_a_margin_and_bounds() {
        let scale = calibration(1300, 1000).unwrap();
        assert!((scale - (1000.0 / 1300.0 + CALIBRATION_MARGIN)).abs() < 1e-9, "{scale}");
        assert_eq!(calibration(0, 1000), None);
        assert_eq!(calibration(1000, 0), None, "a server reporting no usage leaves the estimate alone");
        assert_eq!(calibration(1000, 100), Some(MIN_SCALE));
        assert_eq!(calibration(100, 1000), Some(MAX_SCALE));
    }

    #[test]
    fn a_calibrated_estimate_keeps_rounds_the_raw_one_would_drop() {
        let mut raw = request(4);
        let full = estimate_tokens(&raw);
        let window = full * 85 / 100 + 200;
        let dropped = fit(&mut raw, window, "Read the file notes.txt").unwrap();
        assert!(dropped.rounds_dropped > 0, "{dropped:?}");
        let mut calibrated = request(4);
        let scale = calibration(full, u64::from(full) * 100 / 129);
        let kept = fit_calibrated(&mut calibrated, window, "Read the file notes.txt", scale).unwrap();
        assert!(!kept.changed(), "{kept:?}");
        assert!(kept.estimated_tokens < full);
    }

    #[test]
    fn a_successful_change_left_out_with_its_round_is_summarised_in_one_line() {
        let mut writer = tool("write_file", "Write a file of the workspace.");
        writer.writes = true;
        let write = ToolCall { id: "w1".into(), name: "write_file".into(), arguments: json!({"path": "hello.txt"}) };
        let failed = ToolCall { id: "w2".into(), name: "write_file".into(), arguments: json!({"path": "/etc/x"}) };
        let mut messages = vec![Message::system("rules"), Message::user("Create hello.txt, then read notes.txt")];
        messages.push(Message::assistant(String::new(), vec![write, failed]));
        messages.push(Message::tool_result(
            "w1",
            format!("created hello.txt (2 bytes)\n{}", "diff ".repeat(200)),
            false,
        ));
        messages.push(Message::tool_result("w2", "refused: workspace_boundary", true));
        messages.extend(round(1, 900));
        let mut req = ChatRequest { messages, tools: vec![tool("read_file", "Read a file."), writer], ..request(0) };
        let window = estimate_tokens(&req) - 20 + 200;
        let fitted = fit(&mut req, window, "Create hello.txt").unwrap();
        assert_eq!(fitted.rounds_dropped, 1, "{fitted:?}");
        let task = &req.messages[1].content;
        assert!(
            task.contains("Changes made in them, already done:\n- `write_file` {\"path\":\"hello.txt\"} → created hello.txt (2 bytes))"),
            "{task}"
        );
        assert!(!task.contains("/etc/x"), "a failed change is not one: {task}");
    }

    #[test]
    fn the_reply_reserve_is_the_output_limit_else_a_capped_quarter() {
        let mut req = request(0);
        assert_eq!(reply_reserve(&req, 2048), 200);
        req.max_tokens = None;
        assert_eq!(reply_reserve(&req, 2048), 512);
        assert_eq!(reply_reserve(&req, 32_768), DEFAULT_REPLY_RESERVE);
    }
}
