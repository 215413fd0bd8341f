//! The subcommands.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use steward_core::config::Config;
use steward_core::planner::PlannerOverrides;
use steward_core::tools::ToolRegistry;
use steward_core::{RunRequest, Runtime};
use steward_policy::Redactor;
use steward_protocol::{EventKind, StopReason};
use steward_store::{AuditVerification, RunStatus, StoreOptions};
use tokio_util::sync::CancellationToken;

use crate::home::{Home, local_owner};
use crate::ui;

/// A usage or configuration error: exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// A usage or configuration error (exit code 2) for other modules.
pub fn usage_error(message: &str) -> anyhow::Error {
    usage(message)
}

/// The redactor for this process: pattern rules plus the values of secret-looking
/// environment variables.
pub fn redactor() -> Redactor {
    Redactor::from_env_vars(std::env::vars())
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// `$XDG_CONFIG_HOME/steward`, else `~/.config/steward`.
fn user_config_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|d| d.join("steward"))
}

pub(crate) fn load_config(workspace: &Path) -> Result<Config> {
    let config = Config::load(user_config_dir().as_deref(), workspace).map_err(|e| usage(e.to_string()))?;
    for warning in &config.warnings {
        eprintln!("steward: warning: {warning}");
    }
    Ok(config)
}

/// `steward trust [DIR]`: adds the workspace to `[trust] workspaces` in the user's
/// `trust.toml`.
pub fn trust(workspace: &Path) -> Result<u8> {
    let workspace = std::fs::canonicalize(workspace).map_err(|e| usage(format!("{}: {e}", workspace.display())))?;
    let dir = user_config_dir().ok_or_else(|| usage("neither XDG_CONFIG_HOME nor HOME is set"))?;
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("trust.toml");
    let mut table: toml::Table = match std::fs::read_to_string(&file) {
        Ok(text) => toml::from_str(&text).map_err(|e| usage(format!("{}: {}", file.display(), e.message())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => toml::Table::new(),
        Err(e) => return Err(e.into()),
    };
    let trust = table.entry("trust").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(trust) = trust.as_table_mut() else {
        return Err(usage(format!("{}: [trust] is not a table", file.display())));
    };
    let list = trust.entry("workspaces").or_insert_with(|| toml::Value::Array(Vec::new()));
    let Some(list) = list.as_array_mut() else {
        return Err(usage(format!("{}: trust.workspaces is not a list", file.display())));
    };
    let path = workspace.display().to_string();
    if list.iter().any(|v| v.as_str() == Some(path.as_str())) {
        println!("{path} is already trusted");
        return Ok(0);
    }
    list.push(toml::Value::String(path.clone()));
    std::fs::write(&file, toml::to_string_pretty(&table)?)?;
    println!("trusted {path}: its .steward/ configuration now applies in full ({})", file.display());
    Ok(0)
}

/// The tools this configuration offers in `workspace`.
pub(crate) fn registry(config: &Config, workspace: &Path) -> Result<ToolRegistry> {
    let ws = steward_policy::Workspace::open(workspace, &config.policy.deny_path).map_err(|e| usage(e.to_string()))?;
    ToolRegistry::for_config(config, &ws).map_err(usage)
}

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
    /// Scenario file for `--provider fake` (see README).
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Print events as JSON lines on stdout (diagnostics go to stderr).
    #[arg(long)]
    json: bool,
}

/// `steward run`.
pub async fn run(args: RunArgs) -> Result<u8> {
    let workspace = std::fs::canonicalize(&args.workspace)
        .map_err(|e| usage(format!("workspace {}: {e}", args.workspace.display())))?;
    let mut config = load_config(&workspace)?;
    if let Some(n) = args.max_rounds {
        if n == 0 {
            return Err(usage("--max-rounds must be at least 1"));
        }
        config.limits.max_rounds = n;
    }
    let overrides = PlannerOverrides {
        planner: args.planner.clone(),
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        tool_choice: args.tool_choice.clone(),
        scenario: args.scenario.clone(),
        max_tokens: args.max_tokens,
    };
    if args.max_tokens == Some(0) {
        return Err(usage("--max-tokens must be at least 1"));
    }
    if args.task.trim().is_empty() {
        return Err(usage("the task is empty: say what to do, e.g. steward run \"show the git status\""));
    }
    let tools = registry(&config, &workspace)?;
    if let Some(choice) = &args.tool_choice
        && !matches!(choice.as_str(), "auto" | "none" | "required")
        && tools.get(choice).is_none()
    {
        let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
        return Err(usage(format!(
            "--tool-choice `{choice}` is not a tool; use auto, none, required or one of: {}",
            names.join(", ")
        )));
    }
    let planner = steward_core::planner::resolve(&config, &overrides, &env_lookup).map_err(usage)?;

    let home = Home::locate()?;
    let runtime = Runtime {
        store: home.open_store(StoreOptions::default()).await?,
        redactor: Arc::new(redactor()),
        approval_key: home.approval_key()?,
        outputs_dir: home.outputs_dir(),
        snapshots_dir: home.snapshots_dir(),
    };
    let owner_id = local_owner();
    let cancel = CancellationToken::new();
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
    let observer: Arc<dyn steward_core::events::EventObserver> =
        if args.json { Arc::new(ui::JsonLines) } else { Arc::new(ui::Human::default()) };
    let request = RunRequest {
        task: args.task,
        owner_id: owner_id.clone(),
        workspace,
        planner,
        config,
        tools,
        approver: Arc::new(ui::TerminalApprover { owner_id }),
        observer,
        cancel,
    };
    let run = steward_core::run_task(&runtime, request).await.map_err(|e| match e {
        steward_core::RunError::Config(msg) => usage(msg),
        other => anyhow::Error::new(other),
    })?;
    Ok(exit_code(run.status, run.stop_reason))
}

fn exit_code(status: RunStatus, stop: Option<StopReason>) -> u8 {
    match (status, stop) {
        (RunStatus::Completed, Some(StopReason::Answered)) => 0,
        (RunStatus::Completed, _) => 3,
        (RunStatus::Cancelled, _) => 4,
        _ => 1,
    }
}

/// `steward models`.
pub async fn models(workspace: &Path, json: bool) -> Result<u8> {
    let config = load_config(workspace)?;
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
                    Ok(p) => match tokio::time::timeout(std::time::Duration::from_secs(5), p.list_models()).await {
                        Err(_) => Err("unreachable: no answer within 5 s".to_string()),
                        Ok(Err(e)) => Err(format!("unreachable ({}): {}", e.class, e.message)),
                        Ok(Ok(models)) => Ok(models),
                    },
                },
            };
            (name.clone(), result)
        }
    });
    let redactor = redactor();
    for (name, result) in futures::future::join_all(checks).await {
        match (&result, json) {
            (Ok(models), true) => {
                println!("{}", serde_json::json!({"provider": name, "reachable": true, "models": models}))
            }
            (Err(e), true) => {
                println!("{}", serde_json::json!({"provider": name, "reachable": false, "error": redactor.redact(e)}))
            }
            (Ok(models), false) => {
                println!("{name}: {} model{}", models.len(), if models.len() == 1 { "" } else { "s" });
                for m in models {
                    println!("  {m}");
                }
            }
            (Err(e), false) => println!("{name}: {}", redactor.redact(e)),
        }
    }
    Ok(0)
}

/// `steward runs`.
pub async fn runs(limit: u32, json: bool) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    for run in store.list_runs(limit).await? {
        if json {
            println!("{}", serde_json::to_string(&run)?);
        } else {
            let stop = run.stop_reason.map(|s| s.as_str()).unwrap_or("-");
            let task = steward_protocol::truncate_chars(&run.task, 60);
            println!(
                "{}  {:<11} {:<14} {}  {}",
                run.id,
                run.status.as_str(),
                stop,
                run.created_at.format("%Y-%m-%d %H:%M:%S"),
                task.replace('\n', " ")
            );
        }
    }
    Ok(0)
}

/// `steward show RUN_ID`.
pub async fn show(run_id: &str, json: bool) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let run = find_run(store.as_ref(), run_id).await?;
    let run_id = run.id.as_str();
    let events = store.events(run_id, 0).await?;
    if json {
        println!("{}", serde_json::json!({"run": run, "events": events}));
        return Ok(0);
    }
    println!("run {} · {} · {}", run.id, run.status.as_str(), run.stop_reason.map(|s| s.as_str()).unwrap_or("-"));
    println!("task: {}", steward_protocol::truncate_chars(&run.task, 500));
    let who = if run.planner == "classic" {
        "classic planner".to_string()
    } else {
        format!("{} · {}", run.provider, run.model)
    };
    println!("planner: {who} · owner {} · workspace {}", run.owner_id, run.workspace);
    let mut asked_at = std::collections::HashMap::new();
    for event in &events {
        match &event.kind {
            EventKind::StageCompleted { round, duration_ms, usage, tool_calls, .. } => println!(
                "  planner round {round:<3} {duration_ms:>7} ms  {:>6} tokens ({} in, {} out)  {tool_calls} tool call(s)",
                usage.total(),
                usage.input_tokens,
                usage.output_tokens
            ),
            EventKind::StageFailed { round, duration_ms, class, error, .. } => {
                println!("  planner round {round:<3} {duration_ms:>7} ms  failed [{class}]: {error}")
            }
            EventKind::ToolDenied { tool, rule, reason, .. } => println!("    {tool:<12} denied by `{rule}`: {reason}"),
            EventKind::ToolApprovalRequired { call_id, tool, rule, .. } => {
                asked_at.insert(call_id.clone(), event.at);
                println!("    {tool:<12} asked the owner (`{rule}`)");
            }
            EventKind::ToolApproved { call_id, .. }
            | EventKind::ToolRejected { call_id, .. }
            | EventKind::ToolApprovalExpired { call_id, .. } => {
                let waited = asked_at.get(call_id).map(|t| (event.at - *t).num_milliseconds()).unwrap_or(0);
                println!("    {:<12} {} after waiting {waited} ms", "approval", event.kind.name());
            }
            EventKind::ToolCompleted { tool, duration_ms, output_chars, .. } => {
                println!("    {tool:<12} {duration_ms:>7} ms  completed ({output_chars} chars)")
            }
            EventKind::ToolFailed { tool, duration_ms, error, .. } => {
                println!("    {tool:<12} {duration_ms:>7} ms  failed: {error}")
            }
            EventKind::RunCompleted { final_text, .. } => println!("final:\n{final_text}"),
            EventKind::RunFailed { error, class, .. } => println!("failed [{class}]: {error}"),
            _ => {}
        }
    }
    let took = run.finished_at.map(|f| (f - run.created_at).num_milliseconds()).unwrap_or(0);
    println!(
        "total: {} round(s) · {} tool call(s) · {} tokens ({} in, {} out) · {} ms",
        run.rounds,
        run.tool_calls,
        run.input_tokens + run.output_tokens,
        run.input_tokens,
        run.output_tokens,
        took
    );
    Ok(0)
}

/// A run by exact id, unique id prefix, or `last` (the newest run).
async fn find_run(store: &dyn steward_store::Store, wanted: &str) -> Result<steward_store::RunRecord> {
    if wanted == "last" {
        return store.list_runs(1).await?.into_iter().next().ok_or_else(|| usage("there are no runs yet"));
    }
    if let Some(run) = store.get_run(wanted).await? {
        return Ok(run);
    }
    let matches: Vec<_> = store.list_runs(10_000).await?.into_iter().filter(|r| r.id.starts_with(wanted)).collect();
    match matches.len() {
        1 => Ok(matches.into_iter().next().ok_or_else(|| usage("no run"))?),
        0 => Err(usage(format!("no run `{wanted}`; `steward runs` lists them"))),
        n => Err(usage(format!("`{wanted}` matches {n} runs; give more of the id"))),
    }
}

/// `steward rollback`.
pub async fn rollback(run_id: &str, step: Option<u32>, list: bool) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let run = find_run(store.as_ref(), run_id).await?;
    let records = store.rollbacks(&run.id).await?;
    if records.is_empty() {
        println!("run {} changed no files; nothing to roll back", run.id);
        return Ok(0);
    }
    if list {
        for r in &records {
            let what =
                r.compensation.get("path").or_else(|| r.compensation.get("to")).and_then(|v| v.as_str()).unwrap_or("");
            println!("step {:<3} {:<8} {:<40} {}", r.step, r.tool, what, r.status_text());
        }
        return Ok(0);
    }
    if let Some(n) = step
        && !records.iter().any(|r| r.step == n)
    {
        return Err(usage(format!("run {} has no step {n}; `steward rollback {} --list` shows them", run.id, run.id)));
    }
    let workspace = steward_policy::Workspace::open(Path::new(&run.workspace), &[])
        .map_err(|e| usage(format!("the run's workspace {}: {e}", run.workspace)))?;
    let redactor = redactor();
    let mut failures = 0;
    for mut record in records.into_iter().rev() {
        if record.status == steward_store::RollbackStatus::Undone || step.is_some_and(|n| n != record.step) {
            continue;
        }
        let outcome = serde_json::from_value::<steward_core::rollback::Compensation>(record.compensation.clone())
            .map_err(|e| format!("unreadable compensation: {e}"))
            .and_then(|c| steward_core::rollback::undo(&c, &workspace));
        let (status, audit_outcome, detail) = match outcome {
            Ok(done) => (steward_store::RollbackStatus::Undone, steward_protocol::AuditOutcome::Completed, done),
            Err(why) => {
                failures += 1;
                (steward_store::RollbackStatus::Failed, steward_protocol::AuditOutcome::Failed, why)
            }
        };
        let detail = redactor.redact(&detail);
        println!("step {} ({}): {}", record.step, record.tool, detail);
        record.status = status;
        record.detail = detail.clone();
        record.undone_at = Some(chrono::Utc::now());
        store.upsert_rollback(&record).await?;
        store
            .append_audit(steward_protocol::AuditEntry {
                agent: local_owner(),
                run_id: run.id.clone(),
                call_id: record.call_id.clone(),
                action: "rollback".into(),
                input: serde_json::json!({"step": record.step, "tool": record.tool}),
                policy: "rollback".into(),
                risk: 0.0,
                outcome: audit_outcome,
                latency_ms: 0,
                sandbox: String::new(),
                approval_id: String::new(),
                rollback_token: record.token.clone(),
                detail,
            })
            .await?;
    }
    store.flush().await?;
    if failures > 0 {
        println!("{failures} step(s) could not be undone (see above); nothing else was touched");
        return Ok(1);
    }
    Ok(0)
}

/// `steward approvals list`.
pub async fn grants_list(all: bool, json: bool) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let now = chrono::Utc::now();
    for grant in store.grants(&local_owner()).await? {
        let state = match (grant.revoked_at, grant.expires_at <= now) {
            (Some(_), _) => "revoked",
            (None, true) => "expired",
            (None, false) => "active",
        };
        if !all && state != "active" {
            continue;
        }
        if json {
            println!("{}", serde_json::json!({"grant": grant, "state": state}));
            continue;
        }
        let covers = match grant.scope {
            steward_store::GrantScope::Run => format!("run {}", grant.run_id),
            steward_store::GrantScope::Workspace => format!("workspace {}", grant.workspace),
        };
        println!(
            "{}  {:<7} {:<10} {covers}  until {}",
            grant.id,
            state,
            grant.tool,
            grant.expires_at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M")
        );
    }
    Ok(0)
}

/// `steward approvals revoke ID`.
pub async fn grants_revoke(id: &str) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let owner = local_owner();
    let Some(mut grant) = store.grants(&owner).await?.into_iter().find(|g| g.id == id) else {
        return Err(usage(format!("no grant `{id}` of {owner}; `steward approvals list --all` shows them")));
    };
    if grant.revoked_at.is_some() {
        println!("{id} was already revoked");
        return Ok(0);
    }
    grant.revoked_at = Some(chrono::Utc::now());
    store.upsert_grant(&grant).await?;
    store
        .append_audit(steward_protocol::AuditEntry {
            agent: owner,
            run_id: grant.run_id.clone(),
            call_id: String::new(),
            action: "revoke_grant".into(),
            input: serde_json::json!({"grant": grant.id, "tool": grant.tool}),
            policy: "owner".into(),
            risk: 0.0,
            outcome: steward_protocol::AuditOutcome::Completed,
            latency_ms: 0,
            sandbox: String::new(),
            approval_id: grant.approval_id.clone(),
            rollback_token: String::new(),
            detail: format!("grant {} revoked; `{}` asks again", grant.id, grant.tool),
        })
        .await?;
    store.flush().await?;
    println!("revoked {id}: `{}` asks again", grant.tool);
    Ok(0)
}

/// `steward doctor`: exit 0 when every protection is enforced, 1 otherwise.
pub async fn doctor(json: bool) -> Result<u8> {
    let results = steward_sandbox::doctor().await;
    for r in &results {
        if json {
            println!(
                "{}",
                serde_json::json!({"protection": r.protection.as_str(), "enforced": r.enforced, "detail": r.detail})
            );
        } else {
            let mark = if r.enforced { "enforced" } else { "NOT ENFORCED" };
            println!("{:<14} {mark:<13} {}", r.protection.as_str(), r.detail);
        }
    }
    Ok(if results.iter().all(|r| r.enforced) { 0 } else { 1 })
}

/// `steward audit verify`.
pub async fn audit_verify() -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    match store.verify_audit().await? {
        AuditVerification::Valid { records } => {
            println!("audit chain valid: {records} records");
            Ok(0)
        }
        AuditVerification::Broken { seq, id, problem } => {
            println!("audit chain broken at record {seq} ({id}): {problem}");
            Ok(1)
        }
    }
}

/// `steward audit list`.
pub async fn audit_list(run: Option<&str>) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    for record in store.audit_records(run).await? {
        println!("{}", serde_json::to_string(&record)?);
    }
    Ok(0)
}

/// `steward audit export`.
pub async fn audit_export(since: Option<&str>, output: Option<&Path>) -> Result<u8> {
    enum Since {
        All,
        Seq(u64),
        Time(chrono::DateTime<chrono::Utc>),
    }
    let since = match since {
        None => Since::All,
        Some(text) => match (text.parse::<u64>(), chrono::DateTime::parse_from_rfc3339(text)) {
            (Ok(seq), _) => Since::Seq(seq),
            (_, Ok(time)) => Since::Time(time.with_timezone(&chrono::Utc)),
            _ => return Err(usage(format!("--since `{text}` is neither a sequence number nor an RFC 3339 time"))),
        },
    };
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let mut out: Box<dyn std::io::Write> = match output {
        Some(path) => {
            use std::os::unix::fs::OpenOptionsExt;
            Box::new(std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?)
        }
        None => Box::new(std::io::stdout().lock()),
    };
    let mut written = 0u64;
    for record in store.audit_records(None).await? {
        let keep = match since {
            Since::All => true,
            Since::Seq(seq) => record.seq >= seq,
            Since::Time(time) => record.at >= time,
        };
        if keep {
            writeln!(out, "{}", serde_json::to_string(&record)?)?;
            written += 1;
        }
    }
    out.flush()?;
    if output.is_some() {
        eprintln!("steward: wrote {written} audit records");
    }
    Ok(0)
}

/// `steward policy check`.
pub fn policy_check(tool: &str, args: &str, workspace: &Path, json: bool, tainted: bool) -> Result<u8> {
    let arguments: serde_json::Value =
        serde_json::from_str(args).map_err(|e| usage(format!("--args is not JSON: {e}")))?;
    if !arguments.is_object() {
        return Err(usage("--args must be a JSON object"));
    }
    let config = load_config(workspace)?;
    let ws = steward_policy::Workspace::open(workspace, &config.policy.deny_path).map_err(|e| usage(e.to_string()))?;
    let policy = steward_policy::Policy::new(&config.policy).map_err(|e| usage(e.to_string()))?;
    let registry = ToolRegistry::for_config(&config, &ws).map_err(usage)?;
    let call = steward_protocol::ToolCall { id: "check".into(), name: tool.to_string(), arguments };
    let context = steward_policy::GateContext { tainted };
    let decision = policy.decide_in(registry.get(tool).map(|t| t.spec()), &call, &ws, &context);
    if json {
        println!("{}", serde_json::to_string(&decision)?);
    } else {
        println!("{} (rule `{}`, risk {:.2})", decision.decision.as_str(), decision.rule, decision.risk);
        for reason in &decision.reasons {
            println!("  {reason}");
        }
    }
    Ok(0)
}

/// `steward config show`.
pub fn config_show(workspace: &Path) -> Result<u8> {
    let config = load_config(workspace)?;
    for source in &config.sources {
        println!("# from {}", source.display());
    }
    #[derive(serde::Serialize)]
    struct View<'a> {
        run: &'a steward_core::config::RawRun,
        limits: &'a steward_core::config::Limits,
        sandbox: &'a steward_core::config::RawSandbox,
        policy: &'a steward_policy::PolicyConfig,
        providers: &'a std::collections::BTreeMap<String, steward_provider::ProviderConfig>,
    }
    let view = View {
        run: &config.run,
        limits: &config.limits,
        sandbox: &config.sandbox,
        policy: &config.policy,
        providers: &config.providers,
    };
    let text = toml::to_string_pretty(&view).map_err(|e| anyhow::anyhow!("cannot print the configuration: {e}"))?;
    println!("{}", redactor().redact(&text));
    if config.instructions.is_some() {
        println!("# AGENTS.md instructions are given to model planners");
    }
    Ok(0)
}
