//! `steward` (no arguments) and `steward chat`: an interactive session in the terminal.
//!
//! Each message is one turn of a stored conversation, run exactly as `steward run --continue`
//! runs it — configuration loaded, [`prepare_run`], `into_run` with the terminal approver and
//! printer, the earlier turns as context — so every decision, approval, audit record and
//! redaction is the same. Between turns the line editor ([`editor`]) owns the terminal; during a
//! turn the run prints as it streams, approvals are asked inline (the same prompt as `steward
//! run`, input typed ahead discarded), and Ctrl-C cancels the turn, not the session.

mod changes;
mod editor;
mod line;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use steward_core::{RunOptions, Runtime, Task};
use steward_store::{Store, StoreOptions, new_id};
use tokio_util::sync::CancellationToken;

use self::editor::{LineEditor, Read};
use self::line::{COMMANDS, Command, Line};
use super::resume::{Joined, Thread};
use super::{ModelArgs, load_config, prepare_run, redactor, redactor_for};
use crate::home::{Home, local_owner};
use crate::ui;
use crate::usage::usage;

/// `steward chat` arguments (also what `steward` alone uses, with every default).
#[derive(Args, Default)]
pub struct ChatArgs {
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
    /// classic (keyword rules, no model) or model.
    #[arg(long, value_parser = ["classic", "model"])]
    planner: Option<String>,
    /// Rounds with tool calls per turn before the turn stops with `max_rounds` (default 5).
    #[arg(long)]
    max_rounds: Option<u32>,
    /// Output token limit per planner call.
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Continue a conversation (`cnv_…`, a run id, or `last`) instead of starting a new one.
    #[arg(long = "resume", value_name = "ID")]
    resume: Option<String>,
}

/// Runs the interactive session until `/exit`, Ctrl-D or the end of input; exit code 0. Without
/// a terminal on stdin it is a usage error naming `steward run`.
pub async fn chat(args: ChatArgs) -> Result<u8> {
    if !std::io::stdin().is_terminal() {
        return Err(usage(
            "the interactive session needs a terminal; without one, run a task with `steward run \"TASK\"` \
             (`steward --help` lists every command)",
        ));
    }
    if args.max_rounds == Some(0) {
        return Err(usage("--max-rounds must be at least 1"));
    }
    if args.max_tokens == Some(0) {
        return Err(usage("--max-tokens must be at least 1"));
    }
    let workspace_arg = args.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
    let workspace = std::fs::canonicalize(&workspace_arg)
        .map_err(|e| usage(format!("workspace {}: {e}", workspace_arg.display())))?;
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let runtime = home.runtime_on(store, redactor())?;
    crate::home::spawn_lease_keeper(&runtime, CancellationToken::new())?;
    crate::home::spawn_decision_follower(&runtime);
    let mut session = Session {
        owner_id: local_owner(),
        workspace,
        overrides: steward_core::PlannerOverrides {
            planner: args.planner,
            provider: args.model.provider.provider,
            model: args.model.provider.model,
            base_url: args.model.provider.base_url,
            tool_choice: None,
            scenario: args.model.scenario,
            max_tokens: args.max_tokens,
        },
        max_rounds: args.max_rounds,
        conversation: None,
        runtime,
    };
    if let Some(id) = &args.resume {
        session.resume(id).await?;
    }
    session.header().await?;
    let mut editor =
        LineEditor::new(Some(home.dir.join("chat_history"))).map_err(|e| anyhow::anyhow!("the terminal: {e}"))?;
    loop {
        // The editor reads on a blocking thread and comes back with what it read.
        let read;
        (editor, read) = tokio::task::spawn_blocking(move || {
            // A prompt of the last turn that was abandoned stops reading first.
            let _reading = ui::TERMINAL_INPUT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let read = editor.read("› ");
            (editor, read)
        })
        .await?;
        let text = match read {
            Read::Eof => break,
            Read::Interrupted => {
                eprintln!("(Ctrl-D or /exit leaves)");
                continue;
            }
            Read::Line(text) => text,
        };
        editor.remember(&redactor().redact(&text));
        let outcome = match line::parse(&text) {
            Line::Empty => Ok(true),
            Line::Command(command) => session.command(command).await,
            Line::Message { text, attachments } => session.turn(&text, &attachments).await.map(|()| true),
        };
        match outcome {
            Ok(true) => {}
            Ok(false) => break,
            // A turn or command that failed leaves the session as it was.
            Err(error) => eprintln!("steward: {}", redactor().redact(&format!("{error:#}"))),
        }
    }
    if let Some(c) = &session.conversation {
        eprintln!("conversation {} kept: `steward chat --resume {}` continues it", c.record.id, c.record.id);
    }
    // The session's spans (telemetry on) are sent before the database is tidied.
    session.runtime.shutdown().await;
    if let Err(error) = session.runtime.store.close().await {
        eprintln!("steward: the state database was not tidied at exit: {error}");
    }
    Ok(0)
}

/// The session's state between turns.
struct Session {
    owner_id: String,
    /// The workspace (canonical); `/resume` moves to the conversation's.
    workspace: PathBuf,
    /// Planner, provider and model for the next turn (`/model` changes the model).
    overrides: steward_core::PlannerOverrides,
    max_rounds: Option<u32>,
    /// The conversation so far; `None` until the first turn (or after `/new`).
    conversation: Option<Joined>,
    /// Shared by every turn: the store, the approval key, the decision queue.
    runtime: Runtime,
}

impl Session {
    fn options(&self) -> RunOptions {
        RunOptions {
            planner: self.overrides.clone(),
            max_rounds: self.max_rounds,
            mcp_logins: crate::commands::local_logins(),
            ..RunOptions::default()
        }
    }

    fn store(&self) -> &dyn Store {
        self.runtime.store.as_ref()
    }

    /// One line: workspace, trust, planner, sandbox; then how to use the session.
    async fn header(&self) -> Result<()> {
        let config = load_config(&self.workspace)?;
        let own_config = self.workspace.join(".steward").is_dir() || self.workspace.join(".mcp.json").is_file();
        let trust = match (config.trusted, own_config) {
            (true, _) => "trusted",
            (false, true) => "not trusted (`steward trust` to use its .steward/ and .mcp.json)",
            (false, false) => "no workspace configuration",
        };
        let options = RunOptions { connect_mcp: false, ..self.options() };
        let support = tokio::task::spawn_blocking(steward_sandbox::host_support);
        let prepared = prepare_run(config, &self.workspace, &options).await?;
        let planner = if prepared.planner.kind == "classic" {
            "classic planner (no model)".to_string()
        } else {
            format!("{} · {}", prepared.planner.provider.name(), prepared.planner.model)
        };
        let support = support.await?;
        let missing: Vec<&str> = support.iter().filter(|m| m.state.is_err()).map(|m| m.name).collect();
        let sandbox = if missing.is_empty() {
            let used: Vec<String> = support
                .iter()
                .map(|m| match m.state.as_deref() {
                    Ok("yes") | Err(_) => m.name.to_string(),
                    Ok(detail) => format!("{} {detail}", m.name),
                })
                .collect();
            format!("sandbox: {}", used.join(", "))
        } else {
            format!("sandbox: NO {} on this machine (`steward doctor` says what is enforced)", missing.join(", "))
        };
        eprintln!("steward · {} · {trust} · {planner} · {sandbox}", self.workspace.display());
        if let Some(c) = &self.conversation {
            eprintln!("continuing {} ({} earlier turn(s))", c.record.id, c.record.turns.len());
        }
        eprintln!(
            "Type a task; /help lists commands; a line ending in \\ goes on; Ctrl-C cancels a turn; Ctrl-D leaves."
        );
        Ok(())
    }

    /// Runs `text` as the next turn of the conversation.
    async fn turn(&mut self, text: &str, attachments: &[String]) -> Result<()> {
        let config = load_config(&self.workspace)?;
        let run_redactor = redactor_for(&config);
        let prepared = prepare_run(config, &self.workspace, &self.options()).await?;
        let (task, attached) = attach(&prepared, text, attachments)?;
        let runtime = self.runtime.with_redactor(run_redactor);
        let thread = match &self.conversation {
            None => Thread::New,
            Some(c) => Thread::Of(c.record.id.clone()),
        };
        let workspace = self.workspace.display().to_string();
        let Some(mut joined) = super::resume::join(self.store(), &self.owner_id, &workspace, &thread).await? else {
            return Err(anyhow::anyhow!("the conversation could not be joined"));
        };
        let run_id = new_id("run_");
        super::resume::add_turn(self.store(), &mut joined, &task, &run_id).await?;
        let history = std::mem::take(&mut joined.history);
        self.conversation = Some(joined);
        let cancel = CancellationToken::new();
        let interrupt = tokio::spawn(cancel_on_interrupt(cancel.clone()));
        let ready = prepared.into_run(Task {
            task,
            owner_id: self.owner_id.clone(),
            approver: Arc::new(ui::TerminalApprover {
                owner_id: self.owner_id.clone(),
                decisions: runtime.decisions.clone(),
                wait_for_decisions: false,
            }),
            observer: Arc::new(ui::Human::default()),
            cancel,
            run_id: Some(run_id),
            history,
            attachments: attached,
        });
        let result = ready.run(&runtime).await;
        interrupt.abort();
        match result {
            Ok(_) => Ok(()),
            Err(steward_core::RunError::Config(message)) => Err(usage(message)),
            Err(other) => Err(other.into()),
        }
    }

    /// Carries out a `/` command; `Ok(false)` leaves the session.
    async fn command(&mut self, command: Command) -> Result<bool> {
        match command {
            Command::Help => {
                for (name, help) in COMMANDS {
                    println!("  {name:<11} {help}");
                }
                println!(
                    "  @PATH       in a message, attaches a workspace file (the path rules decide, as for `read`)"
                );
                println!("  //TEXT      sends /TEXT as a message");
            }
            Command::Exit => return Ok(false),
            Command::Diff => self.diff().await?,
            Command::Undo => self.undo().await?,
            Command::Show => match self.last_run_id() {
                Some(id) => {
                    super::show(&id, false).await?;
                }
                None => println!("no turn yet in this conversation"),
            },
            Command::Approvals => {
                super::grants_list(false, false).await?;
            }
            Command::Revoke(id) => {
                super::grants_revoke(&id).await?;
            }
            Command::Model(None) => match (&self.overrides.provider, &self.overrides.model) {
                (_, Some(model)) => println!("model {model} (from the next turn on)"),
                _ => println!("the configured default (`[run] model`, or the provider's default model)"),
            },
            Command::Model(Some(model)) => {
                // Checked as the next turn would prepare it; a model the planner cannot take
                // (the classic planner has none) leaves the session as it was.
                let before = self.overrides.model.replace(model.clone());
                let config = load_config(&self.workspace)?;
                let options = RunOptions { connect_mcp: false, ..self.options() };
                if let Err(error) = prepare_run(config, &self.workspace, &options).await {
                    self.overrides.model = before;
                    return Err(error.context(format!("/model {model} not taken")));
                }
                println!("the next turn asks {model}");
            }
            Command::New => {
                self.conversation = None;
                println!("new conversation: the next message starts it");
            }
            Command::Resume(id) => {
                self.resume(&id).await?;
                let c = self.conversation.as_ref().map(|c| (c.record.id.clone(), c.record.turns.len()));
                if let Some((id, turns)) = c {
                    println!("continuing {id} ({turns} earlier turn(s)) in {}", self.workspace.display());
                }
            }
            Command::Tools => {
                super::tools::tools(&self.workspace, false).await?;
            }
            Command::Unknown(what) => println!("{what}"),
        }
        Ok(true)
    }

    /// Joins conversation (or run) `id` of this owner; the session moves to its workspace.
    async fn resume(&mut self, id: &str) -> Result<()> {
        let thread = Thread::Of(id.to_string());
        let joined = super::resume::join(self.store(), &self.owner_id, "", &thread).await?;
        let Some(joined) = joined else { return Err(usage(format!("no conversation `{id}`"))) };
        let workspace = PathBuf::from(&joined.record.workspace);
        if !workspace.is_dir() {
            return Err(usage(format!(
                "conversation {} worked in {}, which is not a folder any more",
                joined.record.id,
                workspace.display()
            )));
        }
        self.workspace = workspace;
        self.conversation = Some(joined);
        Ok(())
    }

    /// The run ids of this conversation's turns, oldest first.
    fn run_ids(&self) -> Vec<String> {
        self.conversation
            .as_ref()
            .map(|c| c.record.turns.iter().filter(|t| !t.run_id.is_empty()).map(|t| t.run_id.clone()).collect())
            .unwrap_or_default()
    }

    fn last_run_id(&self) -> Option<String> {
        self.run_ids().pop()
    }

    /// `/diff`: each file this conversation changed, as a unified diff, then the totals.
    async fn diff(&self) -> Result<()> {
        let config = load_config(&self.workspace)?;
        let workspace = steward_policy::Workspace::open(&self.workspace, &config.policy.deny_path)
            .map_err(|e| usage(e.to_string()))?;
        let (files, notes) = changes::conversation_changes(self.store(), &self.run_ids(), &workspace).await?;
        let redactor = redactor_for(&config);
        let (mut added, mut removed) = (0, 0);
        for file in &files {
            let (diff, plus, minus) = changes::render(file);
            added += plus;
            removed += minus;
            print!("{}", ui::printable_text(&redactor.redact(&diff)));
        }
        for note in &notes {
            println!("{}", ui::printable_text(note));
        }
        match files.len() {
            0 if notes.is_empty() => println!("this conversation changed no files (or its changes were rolled back)"),
            0 => {}
            n => println!("{n} file{} changed, +{added} −{removed}", if n == 1 { "" } else { "s" }),
        }
        Ok(())
    }

    /// `/undo`: rolls back the newest turn of this conversation whose changes are not undone.
    async fn undo(&self) -> Result<()> {
        for run_id in self.run_ids().iter().rev() {
            let records = self.store().rollbacks(run_id).await?;
            if records.iter().any(|r| r.status != steward_store::RollbackStatus::Undone) {
                println!("rolling back {run_id}");
                super::rollback(run_id, None, false).await?;
                return Ok(());
            }
        }
        println!("no turn of this conversation changed files that are not rolled back already");
        Ok(())
    }
}

/// Cancels `cancel` on Ctrl-C (the turn ends `cancelled`); a second Ctrl-C in the same turn
/// quits at once, as in `steward run`.
async fn cancel_on_interrupt(cancel: CancellationToken) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    eprintln!("\nsteward: cancelling this turn (Ctrl-C again to quit at once)");
    cancel.cancel();
    if tokio::signal::ctrl_c().await.is_ok() {
        std::process::exit(130);
    }
}

/// The first `limit` bytes of the regular file at `path` (a link to one is followed). A device,
/// a FIFO or a folder is refused: reading one could block or never end.
pub(crate) fn read_regular_file(path: &std::path::Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Most bytes of one attached file put into the message.
const MAX_ATTACHMENT_BYTES: usize = 64 * 1024;

/// The task with each `@path` file's content appended, after each is judged as a `read` of
/// that path by the run's own policy and tools. Refused (nothing is sent): a path the gate
/// denies (a secret file, outside the workspace, `deny_path`) or would ask about, and a path
/// under `untrusted_paths` (its content must reach the model through `read`, which marks the run
/// as having read untrusted content). Errors are usage errors naming the path and the rule.
fn attach(
    prepared: &steward_core::Prepared,
    text: &str,
    attachments: &[String],
) -> Result<(String, Vec<steward_core::Attachment>)> {
    if attachments.is_empty() {
        return Ok((text.to_string(), Vec::new()));
    }
    let mut attached = Vec::new();
    let workspace = steward_policy::Workspace::open(&prepared.workspace, &prepared.config.policy.deny_path)
        .map_err(|e| usage(e.to_string()))?;
    let Some(read_tool) = prepared.tools.get("read") else {
        return Err(usage("@PATH attaches through the `read` tool, which this configuration does not offer"));
    };
    let mut task = text.to_string();
    for path in attachments {
        let arguments = serde_json::json!({ "path": path });
        let call = steward_protocol::ToolCall { id: "attach".into(), name: read_tool.spec().name.clone(), arguments };
        let decision = steward_core::decide(&prepared.policy, &prepared.tools, &call, &workspace, false, None);
        if decision.decision != steward_protocol::DecisionKind::Allow {
            return Err(usage(format!(
                "@{path} not attached ({} by `{}`: {}); nothing was sent",
                decision.decision.as_str(),
                decision.rule,
                decision.reasons.join("; ")
            )));
        }
        if steward_core::reads_untrusted(&prepared.policy, &workspace, read_tool.as_ref(), &call.arguments) {
            return Err(usage(format!(
                "@{path} not attached: it is under `untrusted_paths`; ask the agent to read it instead, so the run \
                 is judged as having read untrusted content; nothing was sent"
            )));
        }
        let resolved = workspace
            .resolve(path, steward_policy::Access::Read)
            .map_err(|e| usage(format!("@{path} not attached: {e}; nothing was sent")))?;
        let bytes = read_regular_file(&resolved.abs, MAX_ATTACHMENT_BYTES as u64 + 1)
            .map_err(|e| usage(format!("@{path} not attached: {e}; nothing was sent")))?;
        let content = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_ATTACHMENT_BYTES)]).into_owned();
        let cut = if bytes.len() > MAX_ATTACHMENT_BYTES {
            format!(" (its first {MAX_ATTACHMENT_BYTES} bytes)")
        } else {
            String::new()
        };
        task.push_str(&format!("\n\nAttached file {path}{cut}:\n```\n{content}\n```"));
        attached.push(steward_core::Attachment { path: path.clone(), text: content });
    }
    Ok((task, attached))
}
