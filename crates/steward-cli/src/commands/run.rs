//! `steward run` and `steward models`.

use std::path::Path;

use anyhow::Result;

use steward_core::RunMode;

use super::resume::Thread;
use super::*;

/// `steward run` arguments.
#[derive(Args)]
pub struct RunArgs {
    /// The task, in plain words.
    task: String,
    /// Workspace directory (default: the current directory; for `steward resume`, the
    /// conversation's workspace).
    #[arg(long)]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
    /// Tool choice for the first planner call: auto, none, required, or a tool name.
    #[arg(long)]
    tool_choice: Option<String>,
    /// classic (keyword rules, no model) or model.
    #[arg(long, value_parser = ["classic", "model"])]
    planner: Option<String>,
    /// Rounds with tool calls before the run stops with `max_rounds` (default 5).
    #[arg(long)]
    max_rounds: Option<u32>,
    /// Output token limit per planner call.
    #[arg(long)]
    max_tokens: Option<u32>,
    /// loop (the planner answers; default, or [run] mode) or roles (the planner's answer goes to two drafters, a critic, a reviewer and a synthesizer; providers per role in [roles.NAME]).
    #[arg(long, value_parser = ["loop", "roles"])]
    mode: Option<String>,
    /// Print events as JSON lines on stdout (diagnostics go to stderr).
    #[arg(long)]
    json: bool,
    /// Exit 5 instead of 0 when the run answered but a step was refused (denied, rejected,
    /// expired) or failed.
    #[arg(long)]
    strict: bool,
    /// Continue the newest conversation of this user in this workspace: the new run gets its
    /// last 4 turns as context, as in the web UI.
    #[arg(long = "continue")]
    continue_last: bool,
    /// What a call that needs approval does when stdin is not a terminal: `fail` (refused at
    /// once with `no_approver`; the default, or [run] approvals) or `wait` (wait until the
    /// approval expires for `steward approve`/`deny`, the web UI, or another process of the
    /// owner).
    #[arg(long, value_parser = ["fail", "wait"])]
    approvals: Option<String>,
}

/// `steward resume` arguments.
#[derive(Args)]
pub struct ResumeArgs {
    /// The conversation (`cnv_…`) or one of its runs (`run_…`, a unique prefix, or `last`).
    id: String,
    #[command(flatten)]
    run: RunArgs,
}

/// Exit code of `steward run --strict`: answered, but a step was refused or failed.
pub const EXIT_STRICT: u8 = 5;

/// Runs `task` with the scripted planner `scenario` (the fake provider's TOML format): used to
/// send one chosen call through the whole control layer.
/// `observer` sees the run's events (the terminal printers when `None`).
pub async fn run_scripted(
    workspace: &Path,
    scenario: &str,
    task: &str,
    observer: Option<Arc<dyn steward_core::EventObserver>>,
) -> Result<u8> {
    let mut file = tempfile::Builder::new().suffix(".toml").tempfile()?;
    std::io::Write::write_all(&mut file, scenario.as_bytes())?;
    let args = RunArgs {
        task: task.to_string(),
        workspace: Some(workspace.to_path_buf()),
        model: ModelArgs {
            provider: ProviderArgs { provider: Some("fake".into()), ..ProviderArgs::default() },
            scenario: Some(file.path().to_path_buf()),
        },
        tool_choice: None,
        planner: None,
        max_rounds: Some(2),
        max_tokens: None,
        mode: Some("loop".into()),
        json: false,
        strict: false,
        continue_last: false,
        approvals: None,
    };
    run_observed(args, observer, Thread::Untracked).await
}

/// `steward run`: a new conversation, or with `--continue` the next turn of the newest one.
pub async fn run(args: RunArgs) -> Result<u8> {
    let thread = if args.continue_last { Thread::Last } else { Thread::New };
    run_observed(args, None, thread).await
}

/// `steward resume ID TASK`: the next turn of a conversation, in its workspace.
pub async fn resume(args: ResumeArgs) -> Result<u8> {
    if args.run.continue_last {
        return Err(usage("`steward resume` names its conversation; leave out --continue"));
    }
    run_observed(args.run, None, Thread::Of(args.id)).await
}

/// [`run`], its events going to `observer` instead of the terminal printers when given.
async fn run_observed(
    args: RunArgs,
    observer: Option<Arc<dyn steward_core::EventObserver>>,
    thread: Thread,
) -> Result<u8> {
    let owner_id = local_owner();
    // `steward resume` works in the conversation's workspace: find it first.
    let (early_runtime, joined_early) = match &thread {
        Thread::Of(_) => {
            let runtime = Home::locate()?.runtime(redactor()).await?;
            let joined = super::resume::join(runtime.store.as_ref(), &owner_id, "", &thread).await?;
            (Some(runtime), joined)
        }
        _ => (None, None),
    };
    let workspace_arg = match (&args.workspace, &joined_early) {
        (Some(w), Some(j)) => {
            let given = std::fs::canonicalize(w).map_err(|e| usage(format!("workspace {}: {e}", w.display())))?;
            if given.display().to_string() != j.record.workspace {
                return Err(usage(format!(
                    "conversation {} works in {}, not {}",
                    j.record.id,
                    j.record.workspace,
                    given.display()
                )));
            }
            given
        }
        (Some(w), None) => w.clone(),
        (None, Some(j)) => PathBuf::from(&j.record.workspace),
        (None, None) => PathBuf::from("."),
    };
    let workspace = std::fs::canonicalize(&workspace_arg)
        .map_err(|e| usage(format!("workspace {}: {e}", workspace_arg.display())))?;
    // `--continue`: find the conversation before preparing anything.
    let (early_runtime, joined_early) = match (&thread, early_runtime) {
        (Thread::Last, None) => {
            let runtime = Home::locate()?.runtime(redactor()).await?;
            let joined =
                super::resume::join(runtime.store.as_ref(), &owner_id, &workspace.display().to_string(), &thread)
                    .await?;
            (Some(runtime), joined)
        }
        (_, early) => (early, joined_early),
    };
    // The arguments are checked before anything is opened.
    let mode = checked_mode(&args)?;
    // The store (opened already to find the conversation) opens, and recovers the runs a crash
    // interrupted, while the configuration is read and the run is prepared.
    let home = Home::locate()?;
    let opening = match early_runtime {
        Some(early) => tokio::spawn(async move { Ok(early.store) }),
        None => {
            let home = home.clone();
            tokio::spawn(async move { home.open_store(StoreOptions::default()).await })
        }
    };
    let config = load_config(&workspace)?;
    let redactor = redactor_for(&config);
    let options = run_options(&args, mode);
    let wait_for_decisions = match args.approvals.as_deref() {
        Some(mode) => mode == "wait",
        None => config.run.approvals == steward_config::ApprovalsMode::Wait,
    };
    let mut history = Vec::new();
    let prepared = prepare_run(config, &workspace, &options).await?;
    if let Some(plan) = prepared.roles.as_ref().filter(|_| !args.json) {
        for role in &plan.roles {
            eprintln!(
                "steward: {} · {} · {} ({})",
                role.role.as_str(),
                role.provider_name,
                role.model,
                role.locality.as_str()
            );
        }
    }

    // The run's own runtime redacts what this workspace's configuration declares as a credential.
    let store = opening.await.map_err(|e| anyhow::anyhow!("opening the state database stopped: {e}"))??;
    let runtime = home.runtime_on(store, redactor)?;
    let joined = match joined_early {
        Some(j) => Some(j),
        None => {
            super::resume::join(runtime.store.as_ref(), &owner_id, &workspace.display().to_string(), &thread).await?
        }
    };
    let run_id = steward_store::new_id("run_");
    if let Some(mut joined) = joined {
        if !joined.history.is_empty() && !args.json {
            eprintln!("steward: continuing {} ({} earlier turn(s) as context)", joined.record.id, joined.history.len());
        }
        super::resume::add_turn(runtime.store.as_ref(), &mut joined, &args.task, &run_id).await?;
        history = joined.history;
    }
    let cancel = CancellationToken::new();
    // Renewed until the process ends, also while a cancelled run records its end.
    crate::home::spawn_lease_keeper(&runtime, CancellationToken::new())?;
    crate::home::spawn_decision_follower(&runtime);
    cancel_on_ctrl_c(&cancel);
    let observer: Arc<dyn steward_core::EventObserver> = match observer {
        Some(observer) => observer,
        None if args.json => Arc::new(ui::JsonLines),
        None => Arc::new(ui::Human::default()),
    };
    let ready = prepared.into_run(Task {
        task: args.task,
        owner_id: owner_id.clone(),
        approver: Arc::new(ui::TerminalApprover { owner_id, decisions: runtime.decisions.clone(), wait_for_decisions }),
        observer,
        cancel,
        run_id: Some(run_id),
        history,
        attachments: Vec::new(),
    });
    let run = ready.run(&runtime).await.map_err(|e| match e {
        steward_core::RunError::Config(msg) => usage(msg),
        other => anyhow::Error::new(other),
    })?;
    let mut code = exit_code(run.status, run.stop_reason);
    if args.strict && code == 0 {
        let events = runtime.store.events(&run.id, 0).await?;
        let (refused, failed) = refused_and_failed(&events);
        if refused + failed > 0 {
            eprintln!(
                "steward: --strict: answered, but {refused} step(s) were refused and {failed} failed (exit {EXIT_STRICT})"
            );
            code = EXIT_STRICT;
        }
    }
    // The run's spans (telemetry on) are sent; what is left is tidying the database for the
    // next process.
    runtime.shutdown().await;
    if let Err(error) = runtime.store.close().await {
        eprintln!("steward: the state database was not tidied at exit: {error}");
    }
    Ok(code)
}

/// The run mode `--mode` names, after checking the arguments that need no file or store
/// (`--max-rounds` and `--max-tokens` at least 1, a task that is not empty).
fn checked_mode(args: &RunArgs) -> Result<Option<RunMode>> {
    if args.max_rounds == Some(0) {
        return Err(usage("--max-rounds must be at least 1"));
    }
    if args.max_tokens == Some(0) {
        return Err(usage("--max-tokens must be at least 1"));
    }
    if args.task.trim().is_empty() {
        return Err(usage("the task is empty: say what to do, e.g. steward run \"show the git status\""));
    }
    Ok(match args.mode.as_deref() {
        Some(name) => {
            Some(RunMode::parse(name).ok_or_else(|| usage(format!("unknown mode `{name}`: use loop or roles")))?)
        }
        None => None,
    })
}

/// What the arguments choose about the run beyond its configuration, in `mode`.
fn run_options(args: &RunArgs, mode: Option<RunMode>) -> RunOptions {
    RunOptions {
        planner: PlannerOverrides {
            planner: args.planner.clone(),
            provider: args.model.provider.provider.clone(),
            model: args.model.provider.model.clone(),
            base_url: args.model.provider.base_url.clone(),
            tool_choice: args.tool_choice.clone(),
            scenario: args.model.scenario.clone(),
            max_tokens: args.max_tokens,
        },
        mode,
        max_rounds: args.max_rounds,
        mcp_logins: crate::commands::local_logins(),
        ..RunOptions::default()
    }
}

/// Cancels `cancel` at the first Ctrl-C; a second one ends the process at once (exit 130).
pub(super) fn cancel_on_ctrl_c(cancel: &CancellationToken) {
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\nsteward: cancelling (Ctrl-C again to quit at once)");
            on_interrupt.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
}

/// How many tool calls of a run were refused (denied by the gate, rejected, or left to
/// expire) and how many failed, counted from its events.
fn refused_and_failed(events: &[steward_protocol::Event]) -> (usize, usize) {
    let mut refused = 0;
    let mut failed = 0;
    for event in events {
        match event.kind {
            EventKind::ToolDenied { .. } | EventKind::ToolRejected { .. } | EventKind::ToolApprovalExpired { .. } => {
                refused += 1
            }
            EventKind::ToolFailed { .. } => failed += 1,
            _ => {}
        }
    }
    (refused, failed)
}

fn exit_code(status: RunStatus, stop: Option<StopReason>) -> u8 {
    match (status, stop) {
        (RunStatus::Completed, Some(StopReason::Answered)) => 0,
        (RunStatus::Completed, _) => 3,
        (RunStatus::Cancelled, _) => 4,
        _ => 1,
    }
}

/// Why a provider's model list could not be had ([`provider_statuses`]). Texts that come
/// from the provider or its configuration are redacted before they are kept here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderUnavailable {
    /// No configured provider or preset has this name.
    #[error("unknown provider `{0}`")]
    Unknown(String),
    /// The provider cannot be built from its settings (e.g. a missing key).
    #[error("{class}: {message}")]
    Settings {
        /// The error class (`missing_api_key` …).
        class: String,
        /// What is wrong.
        message: String,
    },
    /// The model list did not come within the timeout, in seconds.
    #[error("unreachable: no answer within {0} s")]
    Timeout(u64),
    /// The model list request failed.
    #[error("unreachable ({class}): {message}")]
    Unreachable {
        /// The error class (`provider_unreachable` …).
        class: String,
        /// What went wrong.
        message: String,
    },
}

impl ProviderUnavailable {
    /// The same failure with its texts redacted by `redactor`.
    fn redacted(self, redactor: &steward_policy::Redactor) -> ProviderUnavailable {
        match self {
            ProviderUnavailable::Unknown(name) => ProviderUnavailable::Unknown(redactor.redact(&name)),
            ProviderUnavailable::Settings { class, message } => {
                ProviderUnavailable::Settings { class, message: redactor.redact(&message) }
            }
            ProviderUnavailable::Timeout(s) => ProviderUnavailable::Timeout(s),
            ProviderUnavailable::Unreachable { class, message } => {
                ProviderUnavailable::Unreachable { class, message: redactor.redact(&message) }
            }
        }
    }
}

/// A provider that answered: its models, and whether its replies are constrained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reachable {
    /// Model ids it serves.
    pub models: Vec<String>,
    /// Whether replies to its default model are held to "one call of an offered tool, or an
    /// answer", and why (`on (llama.cpp)`, `off (not a server on this machine)`).
    pub constrained: steward_provider::Constraint,
}

/// Configured providers plus the presets usable here (local ones, and keyed ones whose key is
/// set), each with its model list or why it is unreachable (redacted). Each probe waits at
/// most `timeout`.
pub async fn provider_statuses(
    config: &Config,
    timeout: std::time::Duration,
) -> Vec<(String, Result<Reachable, ProviderUnavailable>)> {
    let mut names: Vec<String> = config.providers.keys().cloned().collect();
    for preset in steward_provider::PRESETS {
        let Some(cfg) = steward_provider::preset(preset) else { continue };
        let local = !cfg.key_required();
        let key_names = cfg.api_key_env.as_ref().map(|k| k.names()).unwrap_or_default();
        let has_key = key_names.iter().any(|n| env_lookup(n).is_some_and(|v| !v.is_empty()));
        if *preset != "fake" && (local || has_key) && !names.iter().any(|n| n == preset) {
            names.push(preset.to_string());
        }
    }
    let checks = names.iter().map(|name| {
        let cfg = config.providers.get(name).cloned().or_else(|| steward_provider::preset(name));
        async move {
            let result = match cfg {
                None => Err(ProviderUnavailable::Unknown(name.clone())),
                Some(cfg) => match steward_provider::build_provider(name, &cfg, &env_lookup) {
                    Err(e) => Err(ProviderUnavailable::Settings { class: e.class.to_string(), message: e.message }),
                    Ok(p) => match tokio::time::timeout(timeout, p.list_models()).await {
                        Err(_) => Err(ProviderUnavailable::Timeout(timeout.as_secs())),
                        Ok(Err(e)) => {
                            Err(ProviderUnavailable::Unreachable { class: e.class.to_string(), message: e.message })
                        }
                        Ok(Ok(models)) => {
                            let constrained = match tokio::time::timeout(timeout, p.constrained("")).await {
                                Ok(constraint) => constraint,
                                Err(_) => {
                                    steward_provider::Constraint::off("the server did not say what it is in time")
                                }
                            };
                            Ok(Reachable { models, constrained })
                        }
                    },
                },
            };
            (name.clone(), result)
        }
    });
    let redactor = redactor_for(config);
    futures::future::join_all(checks)
        .await
        .into_iter()
        .map(|(name, r)| (name, r.map_err(|e| e.redacted(&redactor))))
        .collect()
}

/// `steward models`.
pub async fn models(workspace: &Path, json: bool) -> Result<u8> {
    let config = load_config(workspace)?;
    for (name, result) in provider_statuses(&config, std::time::Duration::from_secs(5)).await {
        match (&result, json) {
            (Ok(reached), true) => println!(
                "{}",
                serde_json::json!({"provider": name, "reachable": true, "models": reached.models,
                    "constrained": reached.constrained.name(), "constrained_why": reached.constrained.why})
            ),
            (Err(e), true) => {
                println!("{}", serde_json::json!({"provider": name, "reachable": false, "error": e.to_string()}))
            }
            (Ok(reached), false) => {
                let count = reached.models.len();
                println!("{name}: {count} model{}", if count == 1 { "" } else { "s" });
                for m in &reached.models {
                    println!("  {m}");
                }
                println!("  replies constrained: {}", reached.constrained.why);
            }
            (Err(e), false) => println!("{name}: {e}"),
        }
    }
    Ok(0)
}
