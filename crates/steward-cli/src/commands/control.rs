//! Changing or checking the control layer: rollback, grants, trust, doctor, policy and configuration.

use std::path::Path;
use steward_core::{Clock, SystemClock};

use anyhow::Result;
use steward_core::RollbackError;

use super::inspect::find_run;
use super::*;

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
    println!(
        "trusted {path}: its .steward/ configuration and .mcp.json servers now apply in full ({})",
        file.display()
    );
    Ok(0)
}

/// `steward rollback`: `last` means your newest run that changed files.
pub async fn rollback(run_id: &str, step: Option<u32>, list: bool) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let (run, records) = if run_id == "last" {
        let Some((run, records)) = steward_core::last_changing_run(store.as_ref(), &crate::home::local_owner()).await?
        else {
            println!("no recent run changed files; nothing to roll back");
            return Ok(0);
        };
        println!(
            "last run that changed files: {} ({}) {}",
            run.id,
            run.created_at.format("%Y-%m-%d %H:%M:%S"),
            run.task
        );
        (run, records)
    } else {
        let run = find_run(store.as_ref(), run_id).await?;
        let records = store.rollbacks(&run.id).await?;
        (run, records)
    };
    if records.is_empty() {
        println!("run {} changed no files; nothing to roll back", run.id);
        return Ok(0);
    }
    if list {
        for r in &records {
            let what = match r.compensation.get("kind").and_then(|v| v.as_str()) {
                Some("run_compensate") => "(its compensate command)",
                _ => r
                    .compensation
                    .get("path")
                    .or_else(|| r.compensation.get("to"))
                    .and_then(|v| v.as_str())
                    .unwrap_or(""),
            };
            println!("step {:<3} {:<8} {:<40} {}", r.step, r.tool, what, r.status_text());
        }
        return Ok(0);
    }
    let mut print = |undo: &steward_core::StepUndo| {
        let mark = if undo.undone { "undone" } else { "NOT UNDONE" };
        println!("step {} ({}): {mark}: {}", undo.step, undo.tool, undo.detail)
    };
    // A `[[tool]]`'s compensation runs as the run's workspace configures the tool now (and only
    // if the definition is unchanged since the call).
    let runner = compensation_runner(&home, &run);
    let done = steward_core::roll_back(
        store.as_ref(),
        &steward_core::SystemClock,
        &run,
        records,
        step,
        &local_owner(),
        &redactor(),
        runner.as_ref(),
        &mut print,
    )
    .await
    .map_err(|e| match e {
        RollbackError::NoSuchStep { run, step } => {
            usage(format!("run {run} has no step {step}; `steward rollback {run} --list` shows them"))
        }
        RollbackError::Workspace { .. } => usage(e.to_string()),
        RollbackError::Storage(e) => anyhow::Error::new(e),
    })?;
    if done.attempted == 0 {
        println!("run {}: already undone; nothing to roll back (`steward rollback {} --list`)", run.id, run.id);
    }
    if done.failed > 0 {
        let steps = |list: &[u32]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ");
        eprintln!("steward: rollback stopped: a step could not be undone (see above); it is left as it is");
        if !done.undone.is_empty() {
            eprintln!("steward: undone before it: step(s) {}", steps(&done.undone));
        }
        if !done.not_tried.is_empty() {
            eprintln!(
                "steward: not undone, not tried: step(s) {} (fix the cause, then `steward rollback {}` again)",
                steps(&done.not_tried),
                run.id
            );
        }
        return Ok(1);
    }
    Ok(0)
}

/// The runner of `[[tool]]` compensations for `run`'s workspace, or why there is none (its
/// configuration cannot be read).
fn compensation_runner(
    home: &Home,
    run: &steward_store::RunRecord,
) -> Result<steward_core::CompensationRunner, steward_core::CompensateError> {
    use steward_core::{CompensateError, CompensationRunner};
    let workspace = Path::new(&run.workspace);
    // Loaded as every command loads it, so the values it declares as credentials are redacted.
    let config = load_config(workspace).map_err(|e| CompensateError::Config(e.to_string()))?;
    let snapshots = steward_tools::rollback::Snapshots::new(&home.dir.join("snapshots"), &run.id);
    CompensationRunner::new(config, workspace, snapshots)
}

/// `steward approvals list`.
pub async fn grants_list(all: bool, json: bool) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let now = SystemClock.now();
    let mut shown = 0;
    for grant in store.grants(&local_owner()).await? {
        // A grant for one run counts only while that run goes on.
        let run_over = grant.scope == steward_store::GrantScope::Run
            && store.get_run(&grant.run_id).await?.is_none_or(|r| r.status != steward_store::RunStatus::Running);
        let state = match (grant.revoked_at, grant.expires_at <= now || run_over) {
            (Some(_), _) => "revoked",
            (None, true) if run_over => "ended",
            (None, true) => "expired",
            (None, false) => "active",
        };
        if !all && state != "active" {
            continue;
        }
        shown += 1;
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
    // JSON lines stay empty; a person gets a word.
    if shown == 0 && !json {
        println!(
            "{}",
            if all {
                "no remembered approvals"
            } else {
                "no active remembered approvals (--all shows revoked, expired and ended ones)"
            }
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
    grant.revoked_at = Some(SystemClock.now());
    store.upsert_grant(&grant).await?;
    store
        .append_audit(steward_protocol::AuditEntry {
            run_id: grant.run_id.clone(),
            approval_id: grant.approval_id.clone(),
            ..steward_protocol::AuditEntry::owner_action(
                &owner,
                "revoke_grant",
                serde_json::json!({"grant": grant.id, "tool": grant.tool}),
                format!("grant {} revoked; `{}` asks again", grant.id, grant.tool),
            )
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

/// `steward policy check`.
pub async fn policy_check(tool: &str, args: &str, workspace: &Path, json: bool, tainted: bool) -> Result<u8> {
    let arguments: serde_json::Value =
        serde_json::from_str(args).map_err(|e| usage(format!("--args is not JSON: {e}")))?;
    if !arguments.is_object() {
        return Err(usage("--args must be a JSON object"));
    }
    let config = load_config(workspace)?;
    let ws = steward_policy::Workspace::open(workspace, &config.policy.deny_path).map_err(|e| usage(e.to_string()))?;
    let policy = steward_policy::Policy::new(&config.policy).map_err(|e| usage(e.to_string()))?;
    let registry = registry(&config, workspace).await?;
    let call = steward_protocol::ToolCall { id: "check".into(), name: tool.to_string(), arguments };
    let decision =
        steward_core::decide(&policy, &registry, &call, &ws, tainted, Some(&steward_policy::Fingerprints::new()));
    if json {
        println!("{}", serde_json::to_string(&decision)?);
    } else {
        println!("{} (rule `{}`, risk {:.2})", decision.decision.as_str(), decision.rule, decision.risk);
        for reason in &decision.reasons {
            println!("  {reason}");
        }
        if !decision.risk_factors.is_empty() {
            println!("risk {:.2} =", decision.risk);
            for factor in &decision.risk_factors {
                println!("  {:+.2} {:<20} {}", factor.score, factor.factor, factor.detail);
            }
            let sum: f64 = decision.risk_factors.iter().map(|f| f.score).sum();
            if sum > 1.0 {
                println!("  (sum {sum:.2}, clamped to 1)");
            }
        }
        if let Some(ttl) = &decision.approval_ttl {
            println!("approval expires after {} s ({})", ttl.seconds, ttl.source);
        }
    }
    Ok(0)
}

/// `steward config show`.
pub fn config_show(workspace: &Path, json: bool) -> Result<u8> {
    let config = load_config(workspace)?;
    #[derive(serde::Serialize)]
    struct View<'a> {
        run: &'a steward_config::RawRun,
        roles: &'a steward_config::RawRoles,
        limits: &'a steward_config::Limits,
        sandbox: &'a steward_config::RawSandbox,
        shell: &'a steward_config::RawShell,
        policy: &'a steward_policy::PolicyConfig,
        providers: &'a std::collections::BTreeMap<String, steward_provider::ProviderConfig>,
        tool: &'a [steward_tools::CommandToolConfig],
        output_filter: &'a [steward_tools::OutputFilterConfig],
        hook: &'a [steward_core::HookConfig],
        tool_call_chain: &'a [steward_core::ChainConfig],
        lsp: &'a [steward_config::LspServerConfig],
        /// Literal `env` and `headers` values print as `<redacted>`.
        mcp_servers: &'a std::collections::BTreeMap<String, steward_mcp::McpServerConfig>,
    }
    let view = View {
        run: &config.run,
        roles: &config.roles,
        limits: &config.limits,
        sandbox: &config.sandbox,
        shell: &config.shell,
        policy: &config.policy,
        providers: &config.providers,
        tool: &config.tools,
        output_filter: &config.output_filters,
        hook: &config.hooks,
        tool_call_chain: &config.chains,
        lsp: &config.lsp,
        mcp_servers: &config.mcp_servers,
    };
    let redactor = redactor_for(&config);
    let defaults = config.defaults_in_effect();
    if json {
        let value = serde_json::json!({
            "config": view,
            "sources": config.entry_sources,
            "defaults": defaults,
            "files": config.sources,
            "trusted": config.trusted,
            "instructions": config.instructions.is_some(),
            "instruction_files": config.instruction_files,
        });
        println!("{}", serde_json::to_string_pretty(&redactor.redact_value(&value))?);
        return Ok(0);
    }
    for source in &config.sources {
        println!("# file: {}", source.display());
    }
    for (entry, file) in &config.entry_sources {
        println!("# {entry} from {}", file.display());
    }
    for (entry, value) in &defaults {
        println!("# {entry} = {value} (default)");
    }
    println!("# workspace configuration trusted: {}", config.trusted);
    let text = toml::to_string_pretty(&view).map_err(|e| anyhow::anyhow!("cannot print the configuration: {e}"))?;
    println!("{}", redactor.redact(&text));
    for file in &config.instruction_files {
        let cut = if file.truncated { ", cut" } else { "" };
        println!(
            "# instructions for model planners: {} (applies to {}; {} characters{cut})",
            file.path.display(),
            file.applies_to,
            file.chars
        );
    }
    Ok(0)
}
