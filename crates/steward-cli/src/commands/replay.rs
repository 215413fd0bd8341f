//! `steward policy replay`: the recorded tool calls of past runs judged again under the
//! current policy files, listing those that would now be decided differently. Nothing runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use steward_core::{Clock, SystemClock};

use anyhow::Result;
use steward_core::{RunReplay, replay_run};
use steward_store::RunRecord;

use super::inspect::find_run;
use super::*;

/// Most runs one replay reads from the store.
const MAX_RUNS: u32 = 10_000;

/// `steward policy replay [--since DURATION|TIMESTAMP] [--run RUN_ID] [--json]`.
pub async fn policy_replay(since: Option<&str>, run: Option<&str>, json: bool) -> Result<u8> {
    let since = since.map(parse_since).transpose()?;
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let mut runs: Vec<RunRecord> = match run {
        Some(wanted) => vec![find_run(store.as_ref(), wanted).await?],
        None => store.list_runs(MAX_RUNS).await?,
    };
    if let Some(since) = since {
        runs.retain(|r| r.created_at >= since);
    }
    // Oldest first, as they happened.
    runs.sort_by_key(|r| r.created_at);
    // One configuration, policy and registry per workspace.
    let mut judges: BTreeMap<PathBuf, Result<Judge, JudgeError>> = BTreeMap::new();
    let (mut calls, mut changed, mut skipped) = (0usize, 0usize, 0usize);
    for run in &runs {
        let workspace = PathBuf::from(&run.workspace);
        if !judges.contains_key(&workspace) {
            let judge = Judge::open(&workspace).await;
            judges.insert(workspace.clone(), judge);
        }
        let judge = match judges.get(&workspace) {
            Some(Ok(judge)) => judge,
            Some(Err(why)) => {
                if !json {
                    println!("run {}: not judged again: {why}", run.id);
                }
                continue;
            }
            None => continue,
        };
        let events = store.events(&run.id, 0).await?;
        let replay =
            replay_run(&judge.policy, &judge.tools, &judge.workspace, &events, !judge.config.run_level_taint_only);
        calls += replay.calls.len();
        skipped += replay.skipped.len();
        changed += replay.calls.iter().filter(|c| c.changed()).count();
        print_run(run, &replay, &redactor_for(&judge.config), json)?;
    }
    if !json {
        println!(
            "{} run(s), {calls} call(s) judged again, {changed} decided differently now{}",
            runs.len(),
            if skipped > 0 { format!(", {skipped} skipped") } else { String::new() }
        );
    }
    Ok(0)
}

/// What judges the calls of runs in one workspace: its current configuration.
struct Judge {
    config: steward_config::Config,
    policy: steward_policy::Policy,
    tools: steward_tools::ToolRegistry,
    workspace: steward_policy::Workspace,
}

/// Why a workspace's runs cannot be judged again.
#[derive(Debug, thiserror::Error)]
enum JudgeError {
    /// The workspace folder is gone.
    #[error("the workspace {} no longer exists", .0.display())]
    Gone(PathBuf),
    /// Its configuration cannot be loaded.
    #[error("{0}")]
    Config(anyhow::Error),
    /// Its policy does not compile.
    #[error(transparent)]
    Policy(#[from] steward_policy::PolicyError),
    /// Its tools cannot be registered.
    #[error(transparent)]
    Tools(#[from] steward_core::PrepareError),
    /// The workspace cannot be opened for path checks.
    #[error(transparent)]
    Workspace(#[from] steward_policy::PathError),
}

impl Judge {
    /// The current policy files of `workspace`, compiled; `Err` says why they cannot judge
    /// (the workspace is gone, the configuration is invalid).
    async fn open(workspace: &Path) -> Result<Judge, JudgeError> {
        if !workspace.is_dir() {
            return Err(JudgeError::Gone(workspace.to_path_buf()));
        }
        let config = load_config(workspace).map_err(JudgeError::Config)?;
        let policy = steward_policy::Policy::new(&config.policy)?;
        // MCP servers are not started: nothing runs.
        let (tools, _) = steward_core::tool_registry(&config, workspace, &policy, false, None).await?;
        let ws = steward_policy::Workspace::open(workspace, &config.policy.deny_path)?;
        Ok(Judge { config, policy, tools, workspace: ws })
    }
}

/// Prints what `replay` found for `run`, redacted by `redactor` (its workspace's).
fn print_run(run: &RunRecord, replay: &RunReplay, redactor: &Redactor, json: bool) -> Result<()> {
    if json {
        for c in replay.calls.iter().filter(|c| c.changed()) {
            let line = serde_json::json!({
                "run_id": run.id,
                "call_id": c.call.id,
                "tool": c.call.name,
                "arguments": c.call.arguments,
                "recorded": {"decision": c.recorded.decision, "rule": c.recorded.rule},
                "now": c.now,
            });
            println!("{}", serde_json::to_string(&redactor.redact_value(&line))?);
        }
        return Ok(());
    }
    let differ = replay.calls.iter().filter(|c| c.changed()).count();
    println!(
        "run {} ({}) {}: {} call(s), {differ} decided differently now",
        run.id,
        run.created_at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M"),
        run.workspace,
        replay.calls.len()
    );
    for c in replay.calls.iter().filter(|c| c.changed()) {
        let args = steward_protocol::truncate_chars(&c.call.arguments.to_string(), 120).to_string();
        println!(
            "  {} {} {}: {} (`{}`) → {} (`{}`)",
            c.call.id,
            c.call.name,
            redactor.redact(&args),
            c.recorded.decision.as_str(),
            c.recorded.rule,
            c.now.decision.as_str(),
            c.now.rule
        );
        println!("      {}", redactor.redact(&c.now.reason()));
    }
    for s in &replay.skipped {
        println!("  {} {}: skipped: {}", s.call.id, s.call.name, s.why);
    }
    Ok(())
}

/// `--since`: an RFC 3339 time, or a duration back from now (`90s`, `30m`, `12h`, `7d`, `2w`).
fn parse_since(text: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(at.to_utc());
    }
    let bad = || usage(format!("--since `{text}` is neither a duration (90s, 30m, 12h, 7d, 2w) nor an RFC 3339 time"));
    let text = text.trim();
    let unit_at = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(unit_at);
    let n: i64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(bad()),
    };
    let span = n.checked_mul(seconds).and_then(chrono::Duration::try_seconds).ok_or_else(bad)?;
    SystemClock.now().checked_sub_signed(span).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_durations_and_times() {
        let now = chrono::Utc::now();
        let back = now - parse_since("30m").unwrap();
        assert!((back.num_seconds() - 1800).abs() <= 2, "{back}");
        let back = now - parse_since("2d").unwrap();
        assert!((back.num_seconds() - 2 * 86_400).abs() <= 2);
        assert_eq!(parse_since("2026-11-30T00:00:00Z").unwrap().to_rfc3339(), "2026-11-30T00:00:00+00:00");
        for bad in ["", "m", "10", "10y", "-5m", "yesterday"] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }
}
