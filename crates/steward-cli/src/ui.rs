//! Terminal front end: event printers (human and JSON lines) and the terminal approver.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use steward_core::approval::{ApprovalAnswer, Approver};
use steward_core::events::EventObserver;
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
#[derive(Default)]
pub struct Human {
    /// True while the cursor is in the middle of streamed text.
    mid_line: AtomicBool,
    /// True when the last planner stage streamed its text (so the final answer was shown).
    streamed: Mutex<String>,
}

impl Human {
    fn line(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        if self.mid_line.swap(false, Ordering::SeqCst) {
            let _ = writeln!(out);
        }
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
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
            EventKind::StageChunk { text, .. } => {
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "{text}");
                let _ = out.flush();
                self.mid_line.store(!text.ends_with('\n'), Ordering::SeqCst);
                if let Ok(mut s) = self.streamed.lock() {
                    s.push_str(text);
                }
            }
            EventKind::StageFailed { error, class, .. } => self.line(&format!("✗ planner failed [{class}]: {error}")),
            EventKind::ToolRequested { tool, arguments, .. } => {
                let args = steward_protocol::truncate_chars(&arguments.to_string(), 300).to_string();
                self.line(&format!("→ {tool} {args}"));
            }
            EventKind::ToolDenied { rule, reason, .. } => self.line(&format!("  ✗ denied by `{rule}`: {reason}")),
            EventKind::PatchProposed { path, diff, .. } => {
                self.line(&format!("  proposed change to {path}:\n{}", indent(diff)))
            }
            EventKind::ToolApprovalRequired { rule, reason, .. } => {
                self.line(&format!("  ? needs approval (`{rule}`): {reason}"))
            }
            EventKind::ToolApproved { decided_by, .. } => self.line(&format!("  ✓ approved by {decided_by}")),
            EventKind::ToolRejected { reason, .. } => self.line(&format!("  ✗ rejected: {reason}")),
            EventKind::ToolApprovalExpired { .. } => self.line("  ✗ approval expired"),
            EventKind::ToolCompleted { duration_ms, output_chars, .. } => {
                self.line(&format!("  ✓ done in {duration_ms} ms ({output_chars} chars of output)"))
            }
            EventKind::ToolFailed { error, .. } => self.line(&format!("  ✗ failed: {error}")),
            EventKind::PatchApplied { path, .. } => self.line(&format!("  ✓ wrote {path}")),
            EventKind::RunCompleted { final_text, stop_reason, rounds, tool_calls, usage, duration_ms } => {
                let shown = self.streamed.lock().map(|s| s.trim() == final_text.trim()).unwrap_or(false);
                if !shown {
                    self.line(final_text);
                } else if self.mid_line.swap(false, Ordering::SeqCst) {
                    println!();
                }
                eprintln!(
                    "— {} · {} · {rounds} round{} · {tool_calls} tool call{} · {} tokens ({} in, {} out) · {:.2} s",
                    event.run_id,
                    stop_reason.as_str(),
                    plural(*rounds),
                    plural(*tool_calls),
                    usage.total(),
                    usage.input_tokens,
                    usage.output_tokens,
                    *duration_ms as f64 / 1000.0
                );
            }
            EventKind::RunFailed { error, class, rounds, duration_ms } => {
                self.line("");
                eprintln!("✗ run failed [{class}]: {error}");
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
            EventKind::StageCompleted { .. } | EventKind::ToolStarted { .. } => {}
        }
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

/// Asks on the terminal (prompt on stderr, answer on stdin) with a countdown to expiry.
/// When stdin is not a terminal nobody can answer: `NoApprover` (fail closed).
pub struct TerminalApprover {
    pub owner_id: String,
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        if !std::io::stdin().is_terminal() {
            return ApprovalAnswer::NoApprover;
        }
        eprintln!("\n┌ approval needed: {} (risk {:.2}, rule `{}`)", request.tool, request.risk, request.rule);
        eprintln!("│ arguments: {}", request.arguments);
        eprintln!("│ reason:    {}", request.reason);
        eprintln!(
            "│ expires:   {} (local time {})",
            request.expires_at.to_rfc3339(),
            request.expires_at.with_timezone(&chrono::Local).format("%H:%M:%S")
        );
        let expires_at = request.expires_at;
        let ticker = tokio::spawn(async move {
            loop {
                let left = (expires_at - chrono::Utc::now()).num_seconds().max(0);
                eprint!("\r└ approve? [y/N] ({:02}:{:02} left) ", left / 60, left % 60);
                let _ = std::io::stderr().flush();
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        })
        .await;
        ticker.abort();
        eprintln!();
        match line {
            Ok(Ok(answer)) if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
                ApprovalAnswer::Approve { token: token.to_string(), decided_by: self.owner_id.clone() }
            }
            Ok(Ok(_)) => {
                ApprovalAnswer::Reject { reason: "rejected by the owner".into(), decided_by: self.owner_id.clone() }
            }
            _ => ApprovalAnswer::NoApprover,
        }
    }
}
