//! Terminal front end: event printers (human and JSON lines) and the terminal approver.
//!
//! Colour: the human printer and the prompts write through [`anstream`], which passes escape
//! codes on only when the stream written is a terminal and `NO_COLOR` is unset or empty
//! (<https://no-color.org>), unless `CLICOLOR_FORCE` asks for them (`NO_COLOR` still wins) —
//! the decision clap makes for `--help` and usage errors. Everything else is plain text. Text
//! that comes from a model, a file, a tool or a server is printed with its control characters
//! escaped ([`printable`]), so it can neither colour nor rewrite the terminal.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anstream::{eprint, eprintln, println};
use anstyle::{AnsiColor, Style};
use async_trait::async_trait;
use steward_core::EventObserver;
use steward_core::{ApprovalAnswer, ApprovalScope, Approver};
use steward_core::{Decided, DecisionQueue, Via};
use steward_core::{ElicitationPrompt, ElicitationReply};
use steward_mcp::elicitation::FieldKind;
use steward_protocol::{ApprovalRequest, Event, EventKind};

/// Writes each event as one JSON object per line on stdout (the scripting interface).
pub struct JsonLines;

impl EventObserver for JsonLines {
    fn on_event(&self, event: &Event) {
        let mut out = std::io::stdout().lock();
        if let Ok(line) = serde_json::to_string(event) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

/// Prints progress for a person: streamed text, each tool call with its decision, the final
/// answer and a one-line trace summary.
pub struct Human {
    /// True when a proposed change is shown by the terminal approval prompt (stdin is a
    /// terminal), so the printer names the change without printing its diff a second time.
    prompt_shows_diff: bool,
    /// True while the cursor is in the middle of streamed text.
    mid_line: AtomicBool,
    /// True when the last planner stage streamed its text (so the final answer was shown).
    streamed: Mutex<String>,
    /// The stage whose text was printed last (role stages get a heading when it changes).
    last_stage: Mutex<String>,
    /// True once a call was refused because nobody could approve it (`no_approver`): the end
    /// of the run names the ways to give approvals.
    no_approver: AtomicBool,
}

/// How to give the approval a `no_approver` refusal lacked, printed after the refusal and at
/// the end of the run.
const NO_APPROVER_HINT: &str = "nobody could approve it (stdin is not a terminal): run `steward` in a terminal for an interactive session that asks you, or add `--approvals wait` to wait for `steward approve`, the web UI or another terminal";

impl Default for Human {
    fn default() -> Self {
        Human {
            prompt_shows_diff: std::io::stdin().is_terminal(),
            mid_line: AtomicBool::default(),
            streamed: Mutex::default(),
            last_stage: Mutex::default(),
            no_approver: AtomicBool::default(),
        }
    }
}

impl Human {
    fn line(&self, text: &str) {
        let mut out = anstream::stdout().lock();
        if self.mid_line.swap(false, Ordering::SeqCst) {
            let _ = writeln!(out);
        }
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }

    /// Prints streamed text of `stage`, with a heading when a role stage other than the
    /// planner starts streaming.
    fn stream(&self, stage: &str, text: &str) {
        let switched = self.last_stage.lock().map(|mut last| std::mem::replace(&mut *last, stage.to_string()) != stage);
        if switched.unwrap_or(false) && stage != "planner" {
            self.line(&format!("{DIM}── {stage} ──{DIM:#}"));
        }
        let mut out = anstream::stdout().lock();
        let _ = write!(out, "{}", printable_text(text));
        let _ = out.flush();
        self.mid_line.store(!text.ends_with('\n'), Ordering::SeqCst);
        if let Ok(mut s) = self.streamed.lock() {
            s.push_str(text);
        }
    }

    /// Prints a completed run's answer (unless it was streamed already) and its summary line.
    fn run_completed(&self, event: &Event) {
        let EventKind::RunCompleted { final_text, stop_reason, rounds, tool_calls, usage, duration_ms, limit } =
            &event.kind
        else {
            return;
        };
        let shown = self.streamed.lock().map(|s| s.trim() == final_text.trim()).unwrap_or(false);
        if !shown {
            self.line(&printable_text(final_text));
        } else if self.mid_line.swap(false, Ordering::SeqCst) {
            println!();
        }
        let stopped = if limit.is_empty() {
            stop_reason.as_str().to_string()
        } else {
            format!("{} ({limit})", stop_reason.as_str())
        };
        eprintln!(
            "— {} · {} · {rounds} round{} · {tool_calls} tool call{} · {} tokens ({} in, {} out) · {:.2} s",
            event.run_id,
            stopped,
            plural(*rounds),
            plural(*tool_calls),
            usage.total(),
            usage.input_tokens,
            usage.output_tokens,
            *duration_ms as f64 / 1000.0
        );
        if self.no_approver.load(Ordering::SeqCst) {
            eprintln!("steward: a step needed approval and was refused: {NO_APPROVER_HINT}");
        }
    }
}

impl EventObserver for Human {
    fn on_event(&self, event: &Event) {
        match &event.kind {
            EventKind::RunStarted { planner, provider, model, workspace, .. } => {
                let who =
                    if planner == "classic" { "classic planner".to_string() } else { format!("{provider} · {model}") };
                eprintln!("steward: run {} · {who} · {workspace}", event.run_id);
            }
            EventKind::StageStarted { .. } => {
                if let Ok(mut s) = self.streamed.lock() {
                    s.clear();
                }
            }
            EventKind::StageChunk { stage, text } => self.stream(stage, text),
            EventKind::StageFailed { stage, error, class, .. } => {
                self.line(&format!("{} {stage} failed [{class}]: {}", bad("✗"), printable_text(error)))
            }
            EventKind::ToolRequested { tool, arguments, .. } => {
                let args = steward_protocol::truncate_chars(&arguments.to_string(), 300).to_string();
                self.line(&format!("{BOLD}→ {}{BOLD:#} {}", printable(tool), printable(&args)));
            }
            EventKind::ToolDenied { rule, reason, .. } => {
                self.line(&format!("  {} denied by `{rule}`: {}", bad("✗"), printable_text(reason)))
            }
            EventKind::RunTainted { source } => self.line(&format!(
                "  {} untrusted content from here on ({}): calls that change things ask",
                ask("!"),
                printable_text(source)
            )),
            // A change is proposed only when it asks for approval: the prompt shows the diff.
            EventKind::PatchProposed { path, .. } if self.prompt_shows_diff => {
                self.line(&format!("  proposed change to {} (shown below)", printable(path)))
            }
            EventKind::PatchProposed { path, diff, .. } => {
                self.line(&format!("  proposed change to {}:\n{}", printable(path), indent(&printable_text(diff))))
            }
            EventKind::ToolApprovalRequired { rule, reason, .. } => {
                self.line(&format!("  {} needs approval (`{rule}`): {}", ask("?"), printable_text(reason)))
            }
            EventKind::ToolApproved { decided_by, .. } => {
                self.line(&format!("  {} approved by {decided_by}", good("✓")))
            }
            EventKind::ToolRejected { reason, .. } if reason == "no_approver" => {
                self.no_approver.store(true, Ordering::SeqCst);
                self.line(&format!("  {} rejected (no_approver): {NO_APPROVER_HINT}", bad("✗")))
            }
            EventKind::ToolRejected { reason, .. } => {
                self.line(&format!("  {} rejected: {}", bad("✗"), printable_text(reason)))
            }
            EventKind::ToolApprovalExpired { .. } => self.line(&format!("  {} approval expired", bad("✗"))),
            EventKind::ToolCompleted { duration_ms, output_chars, hook_output, .. } => {
                self.line(&format!("  {} done in {duration_ms} ms ({output_chars} chars of output)", good("✓")));
                if !hook_output.is_empty() {
                    self.line(&indent(&printable_text(hook_output)));
                }
            }
            EventKind::ToolFailed { error, .. } => {
                self.line(&format!("  {} failed: {}", bad("✗"), printable_text(error)))
            }
            EventKind::ToolCallRepeated { earlier_call_id, answered_from_record: true, .. } => {
                self.line(&format!("  ↺ same as {earlier_call_id}, unchanged: answered from the run's record"))
            }
            EventKind::ToolCallRepeated { earlier_call_id, earlier_outcome, rule, repeats, .. } => {
                let by = if rule.is_empty() { String::new() } else { format!(" by `{rule}`") };
                self.line(&format!(
                    "  {} repeat {repeats} of {earlier_call_id} ({earlier_outcome}{by}): not run",
                    bad("✗")
                ))
            }
            EventKind::PatchApplied { path, .. } => self.line(&format!("  {} wrote {}", good("✓"), printable(path))),
            EventKind::ContextRetrieved { chunks, embedding_error: Some(why), .. } if chunks.is_empty() => {
                self.line(&format!("{DIM}context ranked by keywords only: {}{DIM:#}", printable_text(why)))
            }
            EventKind::ContextRetrieved { chunks, .. } if chunks.is_empty() => {}
            EventKind::ContextRetrieved { chunks, embedding_error, .. } => {
                let passages: Vec<String> =
                    chunks.iter().map(|c| format!("{}:{}-{}", printable(&c.path), c.start_line, c.end_line)).collect();
                self.line(&format!("{DIM}context: {}{DIM:#}", passages.join(", ")));
                if let Some(why) = embedding_error {
                    self.line(&format!("{DIM}context ranked by keywords only: {}{DIM:#}", printable_text(why)))
                }
            }
            EventKind::PromptFitted { .. } => {
                if let Some(summary) = steward_core::trace::prompt_fitted_summary(&event.kind) {
                    self.line(&format!("{DIM}{}{DIM:#}", printable_text(&summary)))
                }
            }
            EventKind::ContextUnavailable { error } => {
                self.line(&format!("{DIM}no workspace context: {}{DIM:#}", printable_text(error)))
            }
            // The terminal prompt shows the request itself (and this line would land inside it).
            EventKind::McpElicitationRequested { .. } => {}
            EventKind::McpElicitationAnswered { action, reason, .. } => {
                let why = if reason.is_empty() { String::new() } else { format!(": {}", printable_text(reason)) };
                let mark = if action == "accept" { good("✓") } else { bad("✗") };
                self.line(&format!("  {mark} the MCP server's request for input was answered `{action}`{why}"))
            }
            EventKind::RunCompleted { .. } => self.run_completed(event),
            EventKind::RunFailed { error, class, rounds, duration_ms } => {
                self.line("");
                eprintln!("{} run failed [{class}]: {}", bad("✗"), printable_text(error));
                eprintln!(
                    "— {} · failed · {rounds} round{} · {:.2} s",
                    event.run_id,
                    plural(*rounds),
                    *duration_ms as f64 / 1000.0
                );
            }
            EventKind::RunCancelled { rounds, duration_ms, .. } => {
                self.line("");
                eprintln!(
                    "— {} · cancelled · {rounds} round{} · {:.2} s",
                    event.run_id,
                    plural(*rounds),
                    *duration_ms as f64 / 1000.0
                );
            }
            EventKind::ToolStarted { allowed_by, .. } => {
                self.line(&format!("  {} allowed by `{allowed_by}`", good("✓")))
            }
            EventKind::StageCompleted { .. } => {}
        }
    }
}

/// Bold: a tool call, a prompt's heading.
const BOLD: Style = Style::new().bold();
/// Dim: a role stage's heading.
const DIM: Style = Style::new().dimmed();

/// `mark` in green (done, approved, allowed).
fn good(mark: &str) -> String {
    let style = AnsiColor::Green.on_default();
    format!("{style}{mark}{style:#}")
}

/// `mark` in red (denied, rejected, failed).
fn bad(mark: &str) -> String {
    let style = AnsiColor::Red.on_default();
    format!("{style}{mark}{style:#}")
}

/// `mark` in yellow (needs approval).
fn ask(mark: &str) -> String {
    let style = AnsiColor::Yellow.on_default();
    format!("{style}{mark}{style:#}")
}

/// Multi-line text from a model, a file or a tool: line ends and tabs kept (`\r\n` read as
/// `\n`), every other control character (escape sequences, a lone carriage return, backspace)
/// shown as an escape.
pub(crate) fn printable_text(text: &str) -> String {
    text.replace("\r\n", "\n")
        .chars()
        .map(|c| match c {
            '\n' | '\t' => c.to_string(),
            c if c.is_control() => c.escape_default().to_string(),
            // Bidirectional controls and zero-width characters would make a command or a path
            // read as something else.
            c if steward_protocol::is_invisible(c) => {
                steward_protocol::reveal_invisible(c.encode_utf8(&mut [0; 4])).into_owned()
            }
            c => c.to_string(),
        })
        .collect()
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

/// The decision another front end submitted on approval `id` to `decisions`, once there is
/// one; never returns while there is none (or when `id` is not pending there).
async fn decided_elsewhere(decisions: &DecisionQueue, id: &str) -> Decided<ApprovalAnswer> {
    match decisions.approval_decided(id).await {
        Some(decided) => decided,
        None => std::future::pending().await,
    }
}

/// The next line typed on the terminal (stdin), without its line end; `None` at the end of
/// input or when the terminal cannot be read. The terminal is read a line at a time (canonical
/// mode) by a blocking task that looks every [`LINE_POLL_MS`] milliseconds whether the wait was
/// abandoned (a prompt that expired or whose run was cancelled): an abandoned prompt never
/// swallows the answer meant for the next one. While it reads it holds [`TERMINAL_INPUT`], which
/// the interactive session's line editor takes before reading, so the two never read at once.
async fn terminal_line() -> Option<String> {
    let abandoned = Arc::new(AtomicBool::new(false));
    let _abandon_on_drop = SetOnDrop(abandoned.clone());
    tokio::task::spawn_blocking(move || read_line_polled(&abandoned)).await.ok().flatten()
}

/// Held by whoever reads the terminal: a prompt's answer ([`terminal_line`]) or the
/// interactive session's line editor.
pub(crate) static TERMINAL_INPUT: Mutex<()> = Mutex::new(());

/// How often (ms) a terminal read looks whether its prompt was abandoned.
const LINE_POLL_MS: libc::c_int = 100;

/// Reads stdin until a line end (or the end of input) unless `abandoned` is set first. Reads go
/// through a second, non-blocking open of the same terminal (`/dev/stdin`), so a read that
/// finds nothing (the input was flushed by Ctrl-C) returns instead of blocking, and stdin's own
/// flags (shared with the parent shell) stay as they are.
#[allow(unsafe_code, reason = "poll(2) with a timeout: std's reads of a terminal block")]
fn read_line_polled(abandoned: &AtomicBool) -> Option<String> {
    use std::io::Read as _;
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let _reading = TERMINAL_INPUT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut input = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open("/dev/stdin").ok()?;
    let mut line: Vec<u8> = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        if abandoned.load(Ordering::SeqCst) {
            return None;
        }
        let mut fds = libc::pollfd { fd: input.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: poll on one pollfd that lives for the call.
        let ready = unsafe { libc::poll(&mut fds, 1, LINE_POLL_MS) };
        if ready == 0 || (ready < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted) {
            continue;
        }
        if ready < 0 || abandoned.load(Ordering::SeqCst) {
            return None;
        }
        let n = match input.read(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock) => continue,
            Err(_) => return None,
        };
        if n == 0 {
            return (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned());
        }
        line.extend_from_slice(&buf[..n]);
        if let Some(end) = line.iter().position(|&b| b == b'\n') {
            line.truncate(end);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Some(String::from_utf8_lossy(&line).into_owned());
        }
    }
}

/// Sets its flag when dropped (a terminal read whose prompt went away stops).
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Discards what was typed before a prompt appeared, so nothing is answered unseen.
#[allow(unsafe_code, reason = "tcflush(3): std has no terminal control")]
fn discard_typed_ahead() {
    // SAFETY: tcflush on fd 0 only discards pending terminal input.
    unsafe {
        libc::tcflush(0, libc::TCIFLUSH);
    }
}

/// How a decision another front end made is reported: `via` the store means the web UI or
/// another terminal (`steward approve`/`deny`).
fn describe_decision(answer: &ApprovalAnswer, via: Via) -> String {
    let place = match via {
        Via::Store => "in the web UI or another terminal ",
        Via::Here => "",
    };
    match answer {
        ApprovalAnswer::Approve { decided_by, .. } => format!("approved {place}by {decided_by}"),
        ApprovalAnswer::Reject { decided_by, .. } => format!("denied {place}by {decided_by}"),
        ApprovalAnswer::NoApprover => "no answer".to_string(),
    }
}

/// Asks on the terminal (prompt on stderr, answer on stdin) with a countdown to expiry; the
/// answer is submitted to the runtime's decision queue. Input typed before the prompt appeared
/// is discarded, so nothing is approved unseen. While the prompt waits, a decision another
/// front end submits to `decisions` — the same owner's in `steward serve`'s web UI or from
/// `steward approve`/`deny`, recorded in the store and fed to the queue by
/// [`crate::home::spawn_decision_follower`] — ends the prompt and is the decision. When stdin
/// is not a terminal nobody can answer here: `NoApprover` (fail closed), or with
/// `wait_for_decisions` (`--approvals wait`) the request waits in the queue until it expires
/// for the owner's decision from another process.
pub struct TerminalApprover {
    /// The run's owner, who answers here.
    pub owner_id: String,
    /// The runtime's decision queue.
    pub decisions: Arc<DecisionQueue>,
    /// Without a terminal, wait for a decision made elsewhere instead of refusing at once.
    pub wait_for_decisions: bool,
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        if !std::io::stdin().is_terminal() {
            if !self.wait_for_decisions {
                return ApprovalAnswer::NoApprover;
            }
            eprintln!(
                "steward: approval {} needed for {} (risk {:.2}, rule `{}`): {}\n\
                 steward: waiting until {} for `steward approve {}` or `steward deny {}` (or the web UI)",
                request.id,
                printable(&request.tool),
                request.risk,
                request.rule,
                printable(&request.reason),
                request.expires_at.with_timezone(&chrono::Local).format("%H:%M:%S"),
                request.id,
                request.id
            );
            // Expired: the orchestrator's own deadline ends the wait and records
            // `approval_expired`.
            let Decided { answer, via } = decided_elsewhere(&self.decisions, &request.id).await;
            eprintln!("steward: {}", describe_decision(&answer, via));
            return answer;
        }
        discard_typed_ahead();
        eprintln!(
            "\n{BOLD}┌ approval needed:{BOLD:#} {} (risk {:.2}, rule `{}`)",
            printable(&request.tool),
            request.risk,
            request.rule
        );
        eprintln!("│ arguments: {}", printable(&request.arguments.to_string()));
        eprintln!("│ reason:    {}", printable(&request.reason));
        if !request.preview.is_empty() {
            let lines: Vec<&str> = request.preview.lines().collect();
            eprintln!("│ change:");
            for line in lines.iter().take(60) {
                eprintln!("│   {}", printable(line));
            }
            if lines.len() > 60 {
                eprintln!("│   … {} more lines (see the patch_proposed event)", lines.len() - 60);
            }
        }
        eprintln!(
            "│ expires:   {} (local time {})",
            request.expires_at.to_rfc3339(),
            request.expires_at.with_timezone(&chrono::Local).format("%H:%M:%S")
        );
        eprintln!(
            "│ answer:    y = once, r = `{0}` for the rest of this run, w = `{0}` in this workspace, n = no",
            request.tool
        );
        let expires_at = request.expires_at;
        let clock = self.decisions.clone();
        let ticker = tokio::spawn(async move {
            loop {
                let left = (expires_at - clock.now()).num_seconds().max(0);
                eprint!("\r└ approve? [y/r/w/N] ({:02}:{:02} left) ", left / 60, left % 60);
                let _ = std::io::stderr().flush();
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
        let _stop_ticker = AbortOnDrop(ticker);
        let line = tokio::select! {
            line = terminal_line() => line,
            Decided { answer, via } = decided_elsewhere(&self.decisions, &request.id) => {
                eprintln!("\n└ {}", describe_decision(&answer, via));
                return answer;
            }
        };
        eprintln!();
        // The hash of the call shown above, which the run compares with the call it would run.
        let call_hash = steward_core::call_hash(request);
        let approve = |scope| ApprovalAnswer::Approve {
            token: token.to_string(),
            decided_by: self.owner_id.clone(),
            scope,
            call_hash: call_hash.clone(),
        };
        match line.map(|l| l.trim().to_ascii_lowercase()) {
            Some(answer) if answer == "y" || answer == "yes" => approve(ApprovalScope::Once),
            Some(answer) if answer == "r" || answer == "run" => approve(ApprovalScope::Run),
            Some(answer) if answer == "w" || answer == "workspace" => approve(ApprovalScope::Workspace),
            Some(_) => {
                ApprovalAnswer::Reject { reason: "rejected by the owner".into(), decided_by: self.owner_id.clone() }
            }
            None => ApprovalAnswer::NoApprover,
        }
    }

    /// Shows the server's question as data (escaped, marked as the server's words) and asks
    /// for each field in turn, offering its default; values that do not fit the schema are
    /// refused with the reason and the form starts again, offering the defaults again. `d` declines, anything else (or
    /// Enter) cancels. When stdin is not a terminal nobody can answer: `NoApprover` (the
    /// server gets `decline`).
    async fn elicit(&self, prompt: &ElicitationPrompt) -> ElicitationReply {
        if !std::io::stdin().is_terminal() {
            return ElicitationReply::NoApprover;
        }
        discard_typed_ahead();
        eprintln!(
            "\n┌ MCP server `{}` asks you for input during `{}` (its words, not Steward's; answering approves nothing):",
            printable(&prompt.server),
            printable(&prompt.tool)
        );
        for line in prompt.message.lines() {
            eprintln!("│   {}", printable(line));
        }
        for field in &prompt.fields {
            let required = if field.required { ", required" } else { "" };
            eprintln!("│ · {} ({}{required})", printable(&field.label), printable(&field.hint()));
            if !field.description.is_empty() {
                eprintln!("│     {}", printable(&field.description));
            }
        }
        eprintln!(
            "│ expires:   {} (local time {})",
            prompt.expires_at.to_rfc3339(),
            prompt.expires_at.with_timezone(&chrono::Local).format("%H:%M:%S")
        );
        eprintln!("│ answer:    a = fill in the form and send it, d = decline, c = cancel");
        let me = || self.owner_id.clone();
        // Each field offers the schema's default, also after a refused answer (the message
        // names what was wrong): a value that failed the check is never offered back.
        let defaults: Vec<(String, String)> = steward_mcp::elicitation::prefilled_inputs(&prompt.fields);
        loop {
            eprint!("└ answer? [a/d/C] ");
            let _ = std::io::stderr().flush();
            match terminal_line().await.map(|l| l.trim().to_ascii_lowercase()) {
                None => return ElicitationReply::NoApprover,
                Some(a) if a == "a" || a == "accept" => {}
                Some(d) if d == "d" || d == "decline" => return ElicitationReply::Decline { decided_by: me() },
                Some(_) => return ElicitationReply::Cancel { decided_by: me() },
            }
            let mut inputs = Vec::new();
            for field in &prompt.fields {
                let choices = match &field.kind {
                    FieldKind::Choice { options } => {
                        let shown: Vec<String> = options
                            .iter()
                            .map(|o| {
                                if o.label == o.value {
                                    printable(&o.value)
                                } else {
                                    format!("{} = {}", printable(&o.value), printable(&o.label))
                                }
                            })
                            .collect();
                        format!(" {{{}}}", shown.join(", "))
                    }
                    _ => String::new(),
                };
                let offered =
                    defaults.iter().find(|(name, _)| *name == field.name).map(|(_, v)| v.clone()).unwrap_or_default();
                let default = if offered.is_empty() { String::new() } else { format!(" [{}]", printable(&offered)) };
                eprint!("  {}{choices}{default}: ", printable(&field.label));
                let _ = std::io::stderr().flush();
                let Some(text) = terminal_line().await else { return ElicitationReply::NoApprover };
                // Enter keeps what is offered.
                let text = if text.is_empty() { offered } else { text };
                inputs.push((field.name.clone(), text));
            }
            match prompt.answer(&inputs) {
                Ok(values) => return ElicitationReply::Accept { values, decided_by: me() },
                Err(problem) => eprintln!("│ {} not sent: {}; answer again", bad("✗"), printable(&problem.to_string())),
            }
        }
    }
}

/// `text` with control characters (terminal escape sequences, carriage returns) shown as
/// escapes, so that a server's words cannot rewrite the terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            c if c.is_control() => c.escape_default().to_string(),
            c if steward_protocol::is_invisible(c) => {
                steward_protocol::reveal_invisible(c.encode_utf8(&mut [0; 4])).into_owned()
            }
            c => c.to_string(),
        })
        .collect()
}

/// Aborts a task when dropped (the countdown stops when the prompt is abandoned).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
