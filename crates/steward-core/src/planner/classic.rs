//! The classic planner: deterministic keyword rules, offline, no model.
//!
//! It is an ordinary [`Provider`] so the loop treats both planners alike. Given a
//! conversation it does one of three things:
//!
//! 1. The last message is the user's task: map it to one tool call by the rules below (only
//!    for tools offered in the request).
//! 2. Tool results follow its calls: answer in plain words — the tool output itself for
//!    successful calls, and "was not done" with the reason for refused or failed ones.
//! 3. Anything it does not understand: a help text listing what it understands and how to
//!    configure a model.
//!
//! Rules (case-insensitive; quotes `'…'`, `"…"` or backticks are optional around arguments,
//! leading "please"/"can you" and a trailing `.`/`?`/`!` are ignored):
//!
//! | task | call |
//! |---|---|
//! | `replace X with Y in FILE` (also `change X to Y in FILE`) | `edit {path: FILE, old: X, new: Y}` |
//! | `git status`, `status` | `git_status {}` |
//! | `git diff [PATH]`, `diff [PATH]`, `what changed`; `staged` | `git_diff {path?, staged?}` |
//! | `git log [PATH]`, `history [of PATH]`, `recent commits` | `git_log {path?}` |
//! | `list files [in DIR]`, `ls [DIR]`, `what files are in DIR`; `recursively` | `list {path, recursive?}` |
//! | `search for TEXT [in PATH]`, `find TEXT`, `grep TEXT` | `search {query, path?}` |
//! | `read FILE`, `show FILE`, `cat FILE`, `open FILE` | `read {path}` |
//! | `now the same in FILE`, `do the same for FILE`, `same in FILE` (a later turn of a conversation) | the newest earlier task's call that names a path, with `path` = FILE |
//!
//! Earlier turns reach the planner as their tasks ([`ClassicConversation`]), never from text
//! in the request, which a file or a tool result could have written.

use std::sync::OnceLock;

use async_trait::async_trait;
use regex::{Captures, Regex};
use serde_json::{Value, json};
use steward_protocol::{ChatRequest, ChatResponse, FinishReason, Message, Role, StreamDelta, ToolCall};
use steward_provider::{DeltaSink, Provider, ProviderError};

/// The planner's provider name and its only model id.
pub const CLASSIC: &str = "classic";

/// The classic keyword planner. Stateless; usage is always zero tokens.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClassicPlanner;

impl ClassicPlanner {
    /// A new planner.
    pub fn new() -> Self {
        ClassicPlanner
    }
}

#[async_trait]
impl Provider for ClassicPlanner {
    fn name(&self) -> &str {
        CLASSIC
    }

    fn default_model(&self) -> &str {
        CLASSIC
    }

    /// Never fails: every conversation gets a tool call or an answer.
    async fn stream(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, ProviderError> {
        let (text, tool_calls) = respond(request);
        Ok(streamed(text, tool_calls, on_delta))
    }

    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        Ok(vec![CLASSIC.to_string()])
    }
}

/// The classic planner in a later turn of a conversation: it also knows the tasks of the
/// earlier turns, so "now the same in FILE" repeats the newest one that names a path.
#[derive(Debug, Clone, Default)]
pub struct ClassicConversation {
    /// The earlier turns' tasks, oldest first.
    earlier_tasks: Vec<String>,
}

impl ClassicConversation {
    /// The planner of a turn that follows `earlier_tasks` (oldest first).
    pub fn new(earlier_tasks: Vec<String>) -> Self {
        ClassicConversation { earlier_tasks }
    }
}

#[async_trait]
impl Provider for ClassicConversation {
    fn name(&self) -> &str {
        CLASSIC
    }

    fn default_model(&self) -> &str {
        CLASSIC
    }

    /// Never fails, as [`ClassicPlanner`].
    async fn stream(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, ProviderError> {
        let (text, tool_calls) = respond_after(request, &self.earlier_tasks);
        Ok(streamed(text, tool_calls, on_delta))
    }

    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        Ok(vec![CLASSIC.to_string()])
    }
}

/// The reply of `text` and `tool_calls`, its text streamed to `on_delta` a line at a time.
fn streamed(text: String, tool_calls: Vec<ToolCall>, on_delta: DeltaSink<'_>) -> ChatResponse {
    for piece in text.split_inclusive('\n') {
        on_delta(StreamDelta::Text { text: piece.to_string() });
    }
    let finish = if tool_calls.is_empty() { FinishReason::Stop } else { FinishReason::ToolCalls };
    ChatResponse {
        text,
        tool_calls,
        finish_reason: Some(finish),
        model: CLASSIC.to_string(),
        ..ChatResponse::default()
    }
}

/// Decides the reply to a conversation: `(text, tool calls)`.
fn respond(request: &ChatRequest) -> (String, Vec<ToolCall>) {
    respond_after(request, &[])
}

/// [`respond`] in a turn that follows `earlier_tasks` (oldest first).
fn respond_after(request: &ChatRequest, earlier_tasks: &[String]) -> (String, Vec<ToolCall>) {
    let last = request.messages.iter().rev().find(|m| matches!(m.role, Role::User | Role::Tool));
    match last {
        Some(message) if message.role == Role::Tool => (summarise_results(&request.messages), Vec::new()),
        Some(task) => plan(task, request, earlier_tasks),
        None => (help_text(), Vec::new()),
    }
}

/// Maps the task to one call of an offered tool, or explains why it cannot.
fn plan(task: &Message, request: &ChatRequest, earlier_tasks: &[String]) -> (String, Vec<ToolCall>) {
    let understood = match interpret(&task.content) {
        Some(call) => Some(call),
        None => match follow_up(&task.content, earlier_tasks) {
            FollowUp::NotOne => None,
            FollowUp::Repeats(call) => Some(call),
            FollowUp::NothingToRepeat(path) => {
                let text = format!(
                    "I understood this as \"the same in {path}\", but no earlier task of this conversation is one I can repeat in another file (replace, read, list, search, diff or log with a path), so I did nothing.\n"
                );
                return (text, Vec::new());
            }
        },
    };
    let Some((tool, arguments)) = understood else {
        return (help_text(), Vec::new());
    };
    if !request.tools.iter().any(|spec| spec.name == tool) {
        let text = format!(
            "I understood this as a `{tool}` request, but the `{tool}` tool is not available in this run, so I did nothing."
        );
        return (text, Vec::new());
    }
    let round = request.messages.iter().filter(|m| m.role == Role::Assistant).count() + 1;
    let text = format!("Calling `{tool}` with {arguments}.");
    (text, vec![ToolCall { id: format!("tc_classic_{round}"), name: tool.to_string(), arguments }])
}

/// The tool call a task asks for, by the rules in the module documentation; `None` when no
/// rule matches.
pub fn interpret(task: &str) -> Option<(&'static str, Value)> {
    let task = tidy(task);
    edit_call(&task)
        .or_else(|| status_call(&task))
        .or_else(|| diff_call(&task))
        .or_else(|| log_call(&task))
        .or_else(|| list_call(&task))
        .or_else(|| search_call(&task))
        .or_else(|| read_call(&task))
}

/// What a task says as a follow-up to earlier turns.
enum FollowUp {
    /// Not "the same in FILE".
    NotOne,
    /// The newest earlier task's call that names a path, with the new path.
    Repeats((&'static str, Value)),
    /// "The same in FILE" (holds FILE), but no earlier task has a call with a path.
    NothingToRepeat(String),
}

/// "now the same in FILE" / "do the same for FILE" / "same thing in FILE": the newest of
/// `earlier_tasks` whose call has a `path` argument, with `path` replaced by FILE.
fn follow_up(task: &str, earlier_tasks: &[String]) -> FollowUp {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        compile(&format!(
            r"(?i)^(?:(?:now|and|also|then)\s+)*(?:do\s+)?(?:the\s+)?same(?:\s+thing)?(?:\s+again)?\s+(?:in|for|to|on|with)\s+(?:the\s+)?(?:file\s+)?(?P<path>{QUOTED}|\S+)(?:\s+too|\s+as\s+well)?$"
        ))
    });
    let Some(path) = re.captures(&tidy(task)).and_then(|caps| group(&caps, "path")) else {
        return FollowUp::NotOne;
    };
    let repeated = earlier_tasks.iter().rev().find_map(|earlier| {
        let (tool, mut arguments) = interpret(earlier)?;
        arguments.get("path")?;
        arguments["path"] = json!(path);
        Some((tool, arguments))
    });
    match repeated {
        Some(call) => FollowUp::Repeats(call),
        None => FollowUp::NothingToRepeat(path),
    }
}

/// Trims, drops a trailing `.`, `?` or `!` and a leading "please" / "can you" / "could you".
fn tidy(task: &str) -> String {
    static POLITE: OnceLock<Regex> = OnceLock::new();
    let polite = POLITE.get_or_init(|| compile(r"(?i)^(?:(?:please|can you|could you|would you|kindly)\s+)+"));
    let trimmed = task.trim().trim_end_matches(['.', '?', '!']).trim();
    polite.replace(trimmed, "").into_owned()
}

/// One argument: quoted (any of `'…'`, `"…"`, backticks) or bare.
const QUOTED: &str = r#"'[^']*'|"[^"]*"|`[^`]*`"#;

fn compile(pattern: &str) -> Regex {
    // The patterns are constants of this file; a typo is caught by the unit tests.
    Regex::new(pattern).unwrap_or_else(|e| panic!("classic planner pattern {pattern:?}: {e}"))
}

/// Removes one pair of matching quotes around `text`.
fn unquote(text: &str) -> String {
    for q in ['\'', '"', '`'] {
        if text.len() >= 2 && text.starts_with(q) && text.ends_with(q) {
            return text[1..text.len() - 1].to_string();
        }
    }
    text.to_string()
}

fn group(caps: &Captures<'_>, name: &str) -> Option<String> {
    caps.name(name).map(|m| unquote(m.as_str())).filter(|s| !s.is_empty() || name != "path")
}

fn edit_call(task: &str) -> Option<(&'static str, Value)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        compile(&format!(
            r"(?is)^(?:replace|change)\s+(?P<old>{QUOTED}|.+?)\s+(?:with|to|by)\s+(?P<new>{QUOTED}|.*?)\s+in\s+(?:the\s+)?(?:file\s+)?(?P<path>{QUOTED}|\S+)$"
        ))
    });
    let caps = re.captures(task)?;
    Some(("edit", json!({"path": group(&caps, "path")?, "old": group(&caps, "old")?, "new": group(&caps, "new")?})))
}

fn status_call(task: &str) -> Option<(&'static str, Value)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        compile(r"(?i)\bgit\s+status\b|^(?:(?:show|what'?s|what\s+is)\s+)?(?:me\s+)?(?:the\s+)?(?:repo\s+|repository\s+)?status$")
    });
    re.is_match(task).then(|| ("git_status", json!({})))
}

fn diff_call(task: &str) -> Option<(&'static str, Value)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        compile(
            r"(?i)^(?:(?:show|what\s+is)\s+(?:me\s+)?)?(?:the\s+)?(?:git\s+diff|diff|what(?:'s|\s+has|\s+have)?\s+changed)(?:\s+(?:staged|--staged|--cached))?(?:\s+(?:of|for|in)?\s*(?P<path>[^\s-]\S*))?(?:\s+(?:staged|--staged|--cached))?$",
        )
    });
    let caps = re.captures(task)?;
    let mut args = json!({});
    if let Some(path) = group(&caps, "path").filter(|p| !p.eq_ignore_ascii_case("staged")) {
        args["path"] = json!(path);
    }
    if task.to_lowercase().contains("staged") || task.contains("--cached") {
        args["staged"] = json!(true);
    }
    Some(("git_diff", args))
}

fn log_call(task: &str) -> Option<(&'static str, Value)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        compile(
            r"(?i)^(?:show\s+(?:me\s+)?)?(?:the\s+)?(?:git\s+log|(?:git\s+|commit\s+)?history|(?:recent|last|latest)\s+commits|commit\s+log)(?:\s+(?:of|for|on|touching)?\s*(?P<path>\S+))?$",
        )
    });
    let caps = re.captures(task)?;
    let mut args = json!({});
    if let Some(path) = group(&caps, "path") {
        args["path"] = json!(path);
    }
    Some(("git_log", args))
}

fn list_call(task: &str) -> Option<(&'static str, Value)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        compile(r"(?i)^(?:ls|list|dir|(?:what|which)\s+files|show\s+(?:me\s+)?(?:all\s+)?(?:the\s+)?files)(?:\s+(?P<rest>.*))?$")
    });
    const FILLER: &[&str] = &[
        "all",
        "the",
        "files",
        "file",
        "are",
        "is",
        "there",
        "in",
        "under",
        "inside",
        "of",
        "directory",
        "folder",
        "dir",
        "contents",
        "entries",
        "recursively",
        "recursive",
        "me",
    ];
    let caps = re.captures(task)?;
    let rest = caps.name("rest").map_or("", |m| m.as_str());
    let words: Vec<&str> = rest.split_whitespace().collect();
    let recursive = words.iter().any(|w| {
        let w = w.to_lowercase();
        w == "recursively" || w == "recursive" || (w.starts_with('-') && w.contains('r'))
    });
    let named: Vec<&str> =
        words.iter().copied().filter(|w| !w.starts_with('-') && !FILLER.contains(&w.to_lowercase().as_str())).collect();
    let dir = match named.as_slice() {
        [] => String::new(),
        [one] => unquote(one),
        _ => return None,
    };
    let dir = if dir.len() > 1 { dir.trim_end_matches('/').to_string() } else { dir };
    let dir = if dir.is_empty() || dir == "./" { ".".to_string() } else { dir };
    let mut args = json!({"path": dir});
    if recursive {
        args["recursive"] = json!(true);
    }
    Some(("list", args))
}

fn search_call(task: &str) -> Option<(&'static str, Value)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        compile(&format!(
            r"(?is)^(?:search|grep|find|look)\s+(?:for\s+)?(?P<query>{QUOTED}|.+?)(?:\s+in\s+(?:the\s+)?(?:(?:directory|folder|dir|file)\s+)?(?P<path>{QUOTED}|\S+))?$"
        ))
    });
    let caps = re.captures(task)?;
    let query = group(&caps, "query").filter(|q| !q.is_empty())?;
    let mut args = json!({"query": query});
    if let Some(path) = group(&caps, "path") {
        args["path"] = json!(path);
    }
    Some(("search", args))
}

fn read_call(task: &str) -> Option<(&'static str, Value)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        compile(&format!(
            r"(?i)^(?:read|show|cat|open|print|display|view)\s+(?:me\s+)?(?:the\s+)?(?:contents?\s+of\s+)?(?:the\s+)?(?:file\s+)?(?P<path>{QUOTED}|\S+)$"
        ))
    });
    let caps = re.captures(task)?;
    Some(("read", json!({"path": group(&caps, "path")?})))
}

/// The final answer once tool results have arrived: each result of the last assistant
/// message's calls, in order.
fn summarise_results(messages: &[Message]) -> String {
    let asked = messages.iter().rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty());
    let (calls, results): (&[ToolCall], &[Message]) = match asked {
        Some(i) => (&messages[i].tool_calls, &messages[i + 1..]),
        None => (&[], messages),
    };
    let results: Vec<&Message> = results.iter().filter(|m| m.role == Role::Tool).collect();
    let several = results.len() > 1;
    let mut parts = Vec::new();
    for result in results {
        let call = calls.iter().find(|c| Some(&c.id) == result.tool_call_id.as_ref());
        let what = call.map_or_else(|| "the tool call".to_string(), describe);
        let text = result.content.trim_end();
        let part = if result.is_error {
            format!("{} was not done: {text}", capitalise(&what))
        } else if several {
            format!("{}:\n{text}", capitalise(&what))
        } else {
            text.to_string()
        };
        parts.push(part);
    }
    if parts.is_empty() {
        return "There were no tool results to report.".to_string();
    }
    let mut answer = parts.join("\n\n");
    answer.push('\n');
    answer
}

/// "the `read` of `README.md`", "the `git_status` call".
fn describe(call: &ToolCall) -> String {
    let target = ["path", "from", "rev", "query"].iter().find_map(|k| call.arguments.get(*k).and_then(Value::as_str));
    match target {
        Some(t) if !t.is_empty() => format!("the `{}` of `{t}`", call.name),
        _ => format!("the `{}` call", call.name),
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| c.to_uppercase().collect::<String>() + chars.as_str())
}

/// What the classic planner understands, and how to use a model instead.
pub fn help_text() -> String {
    "I am the classic planner: I follow simple keyword rules and use no model. I understand:\n\
     - list files [in DIR] / ls [DIR] / what files are in DIR\n\
     - read FILE / show FILE / cat FILE / open FILE\n\
     - search for TEXT [in PATH] / find TEXT / grep TEXT\n\
     - replace 'OLD' with 'NEW' in FILE\n\
     - git status / git diff [PATH] / what changed / git log / recent commits\n\
     For anything else, configure a model: run with `--provider ollama --model qwen2.5` \
     (or another provider), or set `[run] provider = \"NAME\"` (a preset or a \
     `[providers.NAME]` section) in ~/.config/steward/config.toml. A workspace's own \
     `.steward/config.toml` may say the same, but its `[run]` and `[providers]` are ignored until you run \
     `steward trust` in that workspace.\n"
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_says_a_workspace_provider_needs_trust() {
        let help = help_text();
        assert!(help.contains("~/.config/steward/config.toml"), "{help}");
        assert!(help.contains("ignored until you run `steward trust`"), "{help}");
    }

    #[test]
    fn every_pattern_compiles() {
        for task in ["replace a with b in c", "git status", "diff", "git log", "ls", "grep x", "read y"] {
            assert!(interpret(task).is_some(), "{task}");
        }
    }

    #[test]
    fn the_same_in_another_file_repeats_the_newest_call_with_a_path() {
        let earlier = ["replace 'old' with 'new' in note.txt".to_string(), "git status".to_string()];
        let FollowUp::Repeats((tool, args)) = follow_up("now the same in README.md", &earlier) else {
            panic!("a follow-up")
        };
        assert_eq!((tool, args), ("edit", json!({"path": "README.md", "old": "old", "new": "new"})));
        assert!(matches!(follow_up("do the same for `b.txt`.", &earlier), FollowUp::Repeats(("edit", _))));
        assert!(
            matches!(follow_up("same in x", &["git status".to_string()]), FollowUp::NothingToRepeat(p) if p == "x")
        );
        assert!(matches!(follow_up("read the same file", &earlier), FollowUp::NotOne));
    }

    #[test]
    fn unquote_only_strips_matching_pairs() {
        assert_eq!(unquote("'a'"), "a");
        assert_eq!(unquote("`a b`"), "a b");
        assert_eq!(unquote("'a\""), "'a\"");
        assert_eq!(unquote("'"), "'");
    }
}
