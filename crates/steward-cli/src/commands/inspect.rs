//! Looking at what happened: runs, traces, the audit log.

use std::path::Path;

use anyhow::Result;
use steward_core::trace::TraceStep;

use super::*;

/// How many of the newest runs `steward runs` looks through for the current owner's.
const OWN_RUNS_SCAN: u32 = 10_000;

/// `steward runs`: the newest `limit` runs of the current owner (`local:<user>`), or of every
/// owner (web sessions, other users) with `all`.
pub async fn runs(limit: u32, json: bool, all: bool) -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let owner = local_owner();
    let listed: Vec<_> = if all {
        store.list_runs(limit).await?
    } else {
        let runs = store.list_runs(OWN_RUNS_SCAN.max(limit)).await?;
        runs.into_iter().filter(|r| r.owner_id == owner).take(limit as usize).collect()
    };
    if json {
        for run in &listed {
            println!("{}", serde_json::to_string(run)?);
        }
        return Ok(0);
    }
    if listed.is_empty() {
        if all {
            println!("no runs yet");
        } else {
            println!("no runs of {owner} yet; `steward runs --all` lists every owner's");
        }
        return Ok(0);
    }
    let owner_column = |text: &str| if all { format!("{text:<24} ") } else { String::new() };
    println!("{:<30}  {:<26} {:<19}  {}TASK", "RUN", "STATUS", "STARTED (UTC)", owner_column("OWNER"));
    for run in &listed {
        let task = steward_protocol::truncate_chars(&run.task, 60);
        println!(
            "{:<30}  {:<26} {}  {}{}",
            run.id,
            run_status(run),
            run.created_at.format("%Y-%m-%d %H:%M:%S"),
            owner_column(&run.owner_id),
            task.replace('\n', " ")
        );
    }
    Ok(0)
}

/// One column for a run's state: the status, and for a run that ended the reason
/// (`completed: answered`, `completed: max_rounds`, `failed: provider_unreachable`).
fn run_status(run: &steward_store::RunRecord) -> String {
    let status = run.status.as_str();
    let why = match run.status {
        RunStatus::Completed => run.stop_reason.map(|s| s.as_str()),
        RunStatus::Failed => run.error_class.map(|c| c.as_str()),
        _ => None,
    };
    match why {
        Some(why) => format!("{status}: {why}"),
        None => status.to_string(),
    }
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
    for r in steward_core::trace::roles(&events) {
        let who = if r.provider.is_empty() {
            "classic planner".to_string()
        } else {
            format!("{} · {}", r.provider, r.model)
        };
        println!("role {}: {who}", r.role);
    }
    for step in steward_core::trace::steps(&events) {
        print_step(&step);
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

/// One line (or block) of `steward show` for a trace step.
fn print_step(step: &TraceStep) {
    match step {
        TraceStep::StageCompleted { stage, round, duration_ms, usage, tool_calls, constrained } => println!(
            "  {} {duration_ms:>7} ms  {:>6} tokens ({} in, {} out)  {tool_calls} tool call(s){}",
            stage_label(stage, *round),
            usage.total(),
            usage.input_tokens,
            usage.output_tokens,
            if *constrained { ", reply constrained" } else { "" }
        ),
        TraceStep::StageFailed { stage, round, duration_ms, class, error } => {
            println!("  {} {duration_ms:>7} ms  failed [{class}]: {error}", stage_label(stage, *round))
        }
        TraceStep::Denied { tool, rule, reason } => println!("    {tool:<12} denied by `{rule}`: {reason}"),
        TraceStep::ApprovalAsked { tool, rule } => println!("    {tool:<12} asked the owner (`{rule}`)"),
        TraceStep::ApprovalAnswered { event, waited_ms, .. } => {
            println!("    {:<12} {event} after waiting {} ms", "approval", waited_ms.unwrap_or(0))
        }
        TraceStep::InputAsked { tool, server } => {
            println!("    {tool:<12} MCP server `{server}` asked the owner for input")
        }
        TraceStep::InputAnswered { action, decided_by, reason, waited_ms, .. } => {
            let why = if reason.is_empty() { String::new() } else { format!(" ({reason})") };
            let waited = waited_ms.unwrap_or(0);
            println!("    {:<12} `{action}` by {decided_by} after waiting {waited} ms{why}", "input");
        }
        TraceStep::Tool { tool, duration_ms, output_chars: Some(chars), .. } => {
            println!("    {tool:<12} {duration_ms:>7} ms  completed ({chars} chars)")
        }
        TraceStep::Tool { tool, duration_ms, error, .. } => {
            println!("    {tool:<12} {duration_ms:>7} ms  failed: {}", error.as_deref().unwrap_or(""))
        }
        TraceStep::Repeated { tool, earlier_call_id, answered_from_record: true, .. } => {
            println!("    {tool:<12} repeat of {earlier_call_id}: answered from the run's record, not run")
        }
        TraceStep::Repeated { tool, earlier_call_id, earlier_outcome, rule, repeats, .. } => {
            let by = if rule.is_empty() { String::new() } else { format!(" by `{rule}`") };
            println!("    {tool:<12} repeat {repeats} of {earlier_call_id} ({earlier_outcome}{by}): not run")
        }
        TraceStep::Context { error: Some(error), .. } => println!("  context            no workspace context: {error}"),
        TraceStep::Context { passages, duration_ms, embedding_error, .. } if passages.is_empty() => {
            println!("  context    {duration_ms:>7} ms  no indexed passage matched the task");
            if let Some(why) = embedding_error {
                println!("                         ranked by keywords only: {why}");
            }
        }
        TraceStep::Context { passages, duration_ms, ranking, embedding_error, .. } => {
            println!("  context    {duration_ms:>7} ms  {} ({ranking})", passages.join(", "));
            if let Some(why) = embedding_error {
                println!("                         ranked by keywords only: {why}");
            }
        }
        TraceStep::PromptFitted { round, summary } => println!("  fit        round {round}  {summary}"),
        TraceStep::Answered { text } => println!("final:\n{text}"),
        TraceStep::Failed { class, error } => println!("failed [{class}]: {error}"),
    }
}

/// A run by exact id, unique id prefix, or `last` (your newest run: the local owner's, as
/// `steward runs` lists yours).
pub(super) async fn find_run(store: &dyn steward_store::Store, wanted: &str) -> Result<steward_store::RunRecord> {
    if wanted == "last" {
        let owner = crate::home::local_owner();
        return store
            .list_runs(LAST_RUN_SCAN)
            .await?
            .into_iter()
            .find(|run| run.owner_id == owner)
            .ok_or_else(|| usage("you have no runs yet (`steward runs --all` lists every owner's)"));
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

/// How many of the newest runs `last` looks through for one of yours.
const LAST_RUN_SCAN: u32 = 1000;

/// `steward audit verify`.
pub async fn audit_verify() -> Result<u8> {
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    match store.verify_audit().await? {
        AuditVerification::Valid { records } => {
            println!("audit chain valid: {records} records");
            Ok(0)
        }
        // A record cut off the end has no id: name the problem alone, which says what is missing.
        AuditVerification::Broken { problem, id, .. } if id.is_empty() => {
            println!("audit chain broken: {problem}");
            Ok(1)
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
    // `--run` takes what `show` takes: an id, a unique prefix, or `last`.
    let run_id = match run {
        Some(wanted) => Some(find_run(store.as_ref(), wanted).await?.id),
        None => None,
    };
    for record in store.audit_records(run_id.as_deref()).await? {
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

/// `planner round N` for a planner round, the role's name for a stage of the role pipeline
/// (one call each), in one column.
fn stage_label(stage: &str, round: u32) -> String {
    if stage == "planner" { format!("planner round {round:<3}") } else { format!("{stage:<17}") }
}
