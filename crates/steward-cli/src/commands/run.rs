//! `steward run` and `steward models`.

use std::path::Path;

use anyhow::Result;

use steward_core::RunMode;

use super::*;

/// `steward run` arguments.
#[derive(Args)]
pub struct RunArgs {
    /// The task, in plain words.
    task: String,
    /// Workspace directory (default: the current directory).
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Provider: a preset (openai, openrouter, xai, anthropic, ollama, lmstudio, llamacpp, fake) or a [providers.NAME] entry. Implies --planner model.
    #[arg(long)]
    provider: Option<String>,
    /// Model id (default: the provider's default model).
    #[arg(long)]
    model: Option<String>,
    /// Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1. Implies --planner model.
    #[arg(long)]
    base_url: Option<String>,
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
    /// Scenario file for `--provider fake` (format in docs/models.md).
    #[arg(long)]
    scenario: Option<PathBuf>,
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
    observer: Option<Arc<dyn steward_core::events::EventObserver>>,
) -> Result<u8> {
    let mut file = tempfile::Builder::new().suffix(".toml").tempfile()?;
    std::io::Write::write_all(&mut file, scenario.as_bytes())?;
    let args = RunArgs {
        task: task.to_string(),
        workspace: workspace.to_path_buf(),
        provider: Some("fake".into()),
        model: None,
        base_url: None,
        tool_choice: None,
        planner: None,
        max_rounds: Some(2),
        max_tokens: None,
        scenario: Some(file.path().to_path_buf()),
        mode: Some("loop".into()),
        json: false,
        strict: false,
    };
    run_observed(args, observer).await
}

/// `steward run`.
pub async fn run(args: RunArgs) -> Result<u8> {
    run_observed(args, None).await
}

/// [`run`], its events going to `observer` instead of the terminal printers when given.
async fn run_observed(args: RunArgs, observer: Option<Arc<dyn steward_core::events::EventObserver>>) -> Result<u8> {
    let workspace = std::fs::canonicalize(&args.workspace)
        .map_err(|e| usage(format!("workspace {}: {e}", args.workspace.display())))?;
    let config = load_config(&workspace)?;
    if args.max_rounds == Some(0) {
        return Err(usage("--max-rounds must be at least 1"));
    }
    if args.max_tokens == Some(0) {
        return Err(usage("--max-tokens must be at least 1"));
    }
    if args.task.trim().is_empty() {
        return Err(usage("the task is empty: say what to do, e.g. steward run \"show the git status\""));
    }
    let mode = match args.mode.as_deref() {
        Some(name) => {
            Some(RunMode::parse(name).ok_or_else(|| usage(format!("unknown mode `{name}`: use loop or roles")))?)
        }
        None => None,
    };
    let options = RunOptions {
        planner: PlannerOverrides {
            planner: args.planner.clone(),
            provider: args.provider.clone(),
            model: args.model.clone(),
            base_url: args.base_url.clone(),
            tool_choice: args.tool_choice.clone(),
            scenario: args.scenario.clone(),
            max_tokens: args.max_tokens,
        },
        mode,
        max_rounds: args.max_rounds,
        ..RunOptions::default()
    };
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

    let runtime = Home::locate()?.runtime().await?;
    let owner_id = local_owner();
    let cancel = CancellationToken::new();
    // Renewed until the process ends, also while a cancelled run records its end.
    crate::home::spawn_lease_keeper(&runtime, CancellationToken::new())?;
    crate::home::spawn_decision_follower(&runtime);
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
    let observer: Arc<dyn steward_core::events::EventObserver> = match observer {
        Some(observer) => observer,
        None if args.json => Arc::new(ui::JsonLines),
        None => Arc::new(ui::Human::default()),
    };
    let ready = prepared.into_run(Task {
        task: args.task,
        owner_id: owner_id.clone(),
        approver: Arc::new(ui::TerminalApprover { owner_id, decisions: runtime.decisions.clone() }),
        observer,
        cancel,
        run_id: None,
        history: Vec::new(),
    });
    let run = ready.run(&runtime).await.map_err(|e| match e {
        steward_core::RunError::Config(msg) => usage(msg),
        other => anyhow::Error::new(other),
    })?;
    let code = exit_code(run.status, run.stop_reason);
    if args.strict && code == 0 {
        let events = runtime.store.events(&run.id, 0).await?;
        let (refused, failed) = refused_and_failed(&events);
        if refused + failed > 0 {
            eprintln!(
                "steward: --strict: answered, but {refused} step(s) were refused and {failed} failed (exit {EXIT_STRICT})"
            );
            return Ok(EXIT_STRICT);
        }
    }
    Ok(code)
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

/// Configured providers plus the presets usable here (local ones, and keyed ones whose key is
/// set), each with its model list or why it is unreachable (redacted). Each probe waits at
/// most `timeout`.
pub async fn provider_statuses(
    config: &Config,
    timeout: std::time::Duration,
) -> Vec<(String, Result<Vec<String>, String>)> {
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
                None => Err(format!("unknown provider `{name}`")),
                Some(cfg) => match steward_provider::build_provider(name, &cfg, &env_lookup) {
                    Err(e) => Err(format!("{}: {}", e.class, e.message)),
                    Ok(p) => match tokio::time::timeout(timeout, p.list_models()).await {
                        Err(_) => Err(format!("unreachable: no answer within {} s", timeout.as_secs())),
                        Ok(Err(e)) => Err(format!("unreachable ({}): {}", e.class, e.message)),
                        Ok(Ok(models)) => Ok(models),
                    },
                },
            };
            (name.clone(), result)
        }
    });
    let redactor = redactor();
    futures::future::join_all(checks)
        .await
        .into_iter()
        .map(|(name, r)| (name, r.map_err(|e| redactor.redact(&e))))
        .collect()
}

/// `steward models`.
pub async fn models(workspace: &Path, json: bool) -> Result<u8> {
    let config = load_config(workspace)?;
    for (name, result) in provider_statuses(&config, std::time::Duration::from_secs(5)).await {
        match (&result, json) {
            (Ok(models), true) => {
                println!("{}", serde_json::json!({"provider": name, "reachable": true, "models": models}))
            }
            (Err(e), true) => {
                println!("{}", serde_json::json!({"provider": name, "reachable": false, "error": e}))
            }
            (Ok(models), false) => {
                println!("{name}: {} model{}", models.len(), if models.len() == 1 { "" } else { "s" });
                for m in models {
                    println!("  {m}");
                }
            }
            (Err(e), false) => println!("{name}: {e}"),
        }
    }
    Ok(0)
}
