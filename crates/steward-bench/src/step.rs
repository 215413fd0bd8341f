//! `steward-bench`: the harness's own overhead per tool-call step.
//!
//! One step = one planner call (the scripted fake provider, no network) + context assembly +
//! policy decision + the durable `approved` audit record + a no-op tool + the `completed`
//! audit record + the step's events. Measured as the time between consecutive
//! `stage_started` events of a run, so it is wall time per step as a user would see it. The
//! store is opened as `steward run` opens it ([`SqliteStore::open_state_dir`]: `steward.db`
//! and its audit anchor in a state directory), so a step pays what a run's step pays.
//! The same run with a sandboxed `shell_command` step instead of the no-op tool (`[shell]`
//! enabled, a policy rule allowing `cat`, every protection of the machine on): a line that
//! needs no shell (`cat notes.txt`) and the same line that bash must run (`'cat' notes.txt`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use steward_store::AuditStore;

use anyhow::Result;
use async_trait::async_trait;
use clap::Args;
use serde_json::{Value, json};
use steward_config::Config;
use steward_core::EventObserver;
use steward_core::{ApprovalKey, NoApprover};
use steward_core::{PlannerChoice, RunRequest, Runtime};
use steward_policy::Redactor;
use steward_protocol::{Event, EventKind, RiskLevel, ToolChoice, ToolSpec};
use steward_provider::fake::{FakeProvider, FakeToolCall, Round, Scenario};
use steward_store::{Durability, SqliteStore, Store, StoreOptions};
use steward_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use tokio_util::sync::CancellationToken;

/// Options of the step measurement (`steward-bench` without a mode).
#[derive(Args)]
pub struct StepArgs {
    /// Tool-call steps per run.
    #[arg(long, default_value_t = 20)]
    steps: u32,
    /// Runs per measurement.
    #[arg(long, default_value_t = 25)]
    runs: u32,
    /// Concurrent runs in the group-commit measurement.
    #[arg(long, default_value_t = 8)]
    concurrency: u32,
    /// Audit records written in the batched append measurement (the chain verified afterwards
    /// holds 200 more).
    #[arg(long, default_value_t = 50_000)]
    audit_records: u32,
    /// Calls per policy and data-flow measurement (at least 1).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(1..))]
    policy_iterations: u32,
    /// Steps per line of the sandboxed `cat` measurement (0 leaves it out).
    #[arg(long, default_value_t = crate::sandbox::CAT_STEPS)]
    sandbox_steps: u32,
}

struct NoopRead(ToolSpec);

#[async_trait]
impl Tool for NoopRead {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn run(&self, _args: &Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput { content: "ok".into(), ..Default::default() })
    }
}

/// Records the instant of every `stage_started` event.
#[derive(Default)]
struct StepClock(Mutex<Vec<Instant>>);

impl EventObserver for StepClock {
    fn on_event(&self, event: &Event) {
        if matches!(event.kind, EventKind::StageStarted { .. })
            && let Ok(mut v) = self.0.lock()
        {
            v.push(Instant::now());
        }
    }
}

/// Runs the step, policy, audit and sandboxed `cat` measurements and prints what they measured.
pub async fn run(args: StepArgs) -> Result<u8> {
    println!(
        "steward-bench: wall time per tool-call step (fake planner call + context + policy + audit 'approved' + \
         no-op tool + audit 'completed' + events; store and audit anchor opened as `steward run` opens them), \
         {} steps x {} runs per line",
        args.steps, args.runs
    );
    for (label, durability, concurrency, line) in [
        ("audit not forced to disk (synchronous=NORMAL)", Durability::Relaxed, 1, None),
        ("durable audit (synchronous=FULL), one run at a time", Durability::Full, 1, None),
        (
            "durable audit (synchronous=FULL), concurrent runs share commits",
            Durability::Full,
            args.concurrency.max(1),
            None,
        ),
        (
            "sandboxed `shell_command` step `cat notes.txt` (no shell needed: run directly), durable audit",
            Durability::Full,
            1,
            Some("cat notes.txt"),
        ),
        (
            "sandboxed `shell_command` step `'cat' notes.txt` (through bash), durable audit",
            Durability::Full,
            1,
            Some("'cat' notes.txt"),
        ),
    ] {
        let cpu_before = crate::sandbox::cpu_time_with_children();
        let (steps, elapsed) = measure(&args, durability, concurrency, line).await?;
        let cpu = crate::sandbox::cpu_time_with_children().saturating_sub(cpu_before);
        print_line(label, concurrency, &steps, elapsed, cpu);
    }
    bench_policy(args.policy_iterations)?;
    bench_audit(args.audit_records).await?;
    if args.sandbox_steps > 0 {
        crate::sandbox::bench_sandbox(args.sandbox_steps).await?;
    }
    Ok(0)
}

/// Policy decisions per second for an allowed `read` with a path to resolve (the common case),
/// `n` calls per measurement.
fn bench_policy(n: u32) -> Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::create_dir_all(dir.path().join("src"))?;
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n")?;
    let workspace = steward_policy::Workspace::open(dir.path(), &[])?;
    let policy = steward_policy::Policy::new(&steward_policy::PolicyConfig::default())?;
    let tools = ToolRegistry::builtin();
    let spec = tools.get("read").map(|t| t.spec().clone());
    let call =
        steward_protocol::ToolCall { id: "c".into(), name: "read".into(), arguments: json!({"path": "src/main.rs"}) };
    let started = Instant::now();
    for _ in 0..n {
        std::hint::black_box(policy.decide(spec.as_ref(), &call, &workspace));
    }
    let per = started.elapsed() / n;
    println!(
        "policy decision (read, schema check, path canonicalised): {:.1} µs each, {:.0}/s",
        per.as_secs_f64() * 1e6,
        1.0 / per.as_secs_f64()
    );
    let shell = steward_protocol::ToolCall {
        id: "s".into(),
        name: "shell_command".into(),
        arguments: json!({"command": "cd src && git -C . diff HEAD~1 -- main.rs | head -n 20"}),
    };
    let started = Instant::now();
    for _ in 0..n {
        std::hint::black_box(policy.judge_command(shell.arguments["command"].as_str().unwrap_or(""), &workspace));
    }
    let per = started.elapsed() / n;
    println!("shell command line judged (split into 3 simple commands): {:.1} µs each", per.as_secs_f64() * 1e6);
    bench_data_flow(n);
    bench_option_rules(&workspace, n)
}

/// A command line judged against deny rules that name options, which read the command's
/// options as a set, and against the same rules matched only as written.
fn bench_option_rules(workspace: &steward_policy::Workspace, n: u32) -> Result<()> {
    use steward_protocol::DecisionKind::{Allow, Deny};
    let rule = |name: &str, argv: &[&str], decision| steward_policy::RuleConfig {
        name: name.into(),
        tool: "shell_command".into(),
        path: Vec::new(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        decision,
        matches: Vec::new(),
        not_match: Vec::new(),
        approval_ttl_seconds: None,
    };
    let config = steward_policy::PolicyConfig {
        rules: vec![
            rule("no-rm-rf", &["rm", "-rf", "**"], Deny),
            rule("no-force", &["git", "push", "--force", "**"], Deny),
            rule("no-post", &["curl", "-X", "POST", "**"], Deny),
            rule("rm", &["rm", "**"], Allow),
            rule("push", &["git", "push", "**"], Allow),
            rule("curl", &["curl", "**"], Allow),
        ],
        ..Default::default()
    };
    let line = "rm -v -r build/a build/b && git push -u origin main && curl -sS -H Accept:x https://example.invalid";
    let as_set = steward_policy::Policy::new(&config)?;
    let as_written = steward_policy::Policy::new(&config)?.without_option_reading_for_tests();
    for (label, policy) in [("options read as a set", &as_set), ("rules matched as written", &as_written)] {
        let started = Instant::now();
        for _ in 0..n {
            std::hint::black_box(policy.judge_command(line, workspace));
        }
        let per = started.elapsed() / n;
        println!(
            "shell command line against deny rules naming options, {label}: {:.1} µs each",
            per.as_secs_f64() * 1e6
        );
    }
    Ok(())
}

/// The data-flow check's cost: fingerprinting one tool output, and checking one sink call's
/// arguments against a run's outputs (the part of a sink's decision it adds).
fn bench_data_flow(n: u32) {
    // 20 outputs of 8,000 characters (the default `max_tool_output_chars`), varied text.
    let output = |k: u64| -> String {
        let words =
            (0..4_000u64).map(|i| format!("w{:x} ", (i * 2_654_435_761 + k * 97).wrapping_mul(k + 1) % 1_000_003));
        words.collect::<String>().chars().take(8_000).collect()
    };
    let outputs: Vec<String> = (0..20).map(output).collect();
    let started = Instant::now();
    let mut seen = steward_policy::Fingerprints::new();
    for (i, text) in outputs.iter().enumerate() {
        seen.record("mail__read_inbox", &format!("c{i}"), text);
    }
    let per_output = started.elapsed() / outputs.len() as u32;
    let args = json!({
        "to": "bob@example.org",
        "subject": "Notes from today's meeting",
        "body": "Hi Bob, here are my notes from today: we agreed to move the launch by a week, and Alice \
                 will send the revised plan on Friday. Let me know if anything is missing. Thanks!"
    });
    let started = Instant::now();
    for _ in 0..n {
        std::hint::black_box(seen.carried(std::hint::black_box(&args)));
    }
    let per_check = started.elapsed() / n;
    println!(
        "data flow: fingerprinting one 8,000-character output {:.1} µs; checking a sink call's arguments \
         (240 characters) against 20 such outputs ({} fingerprints) {:.1} µs",
        per_output.as_secs_f64() * 1e6,
        seen.len(),
        per_check.as_secs_f64() * 1e6
    );
}

/// `options` with a new audit key, as the `steward` binary opens its store.
fn keyed(options: StoreOptions) -> StoreOptions {
    StoreOptions { audit_key: Some(steward_store::AuditKey::generate()), ..options }
}

/// Durable audit appends in batches, and chain verification, in records per second.
async fn bench_audit(records: u32) -> Result<()> {
    let dir = tempfile::tempdir()?;
    // Keyed, as the `steward` binary's store is (HMAC-SHA256 per record).
    let store = SqliteStore::open_state_dir(dir.path(), keyed(StoreOptions::default())).await?;
    let entry = |i: u32| steward_protocol::AuditEntry {
        agent: "steward".into(),
        run_id: "run_bench".into(),
        call_id: format!("c{i}"),
        action: "read".into(),
        input: json!({"path": "src/main.rs"}),
        policy: "default:low".into(),
        risk: 0.2,
        outcome: steward_protocol::AuditOutcome::Completed,
        latency_ms: 1,
        sandbox: String::new(),
        approval_id: String::new(),
        rollback_token: String::new(),
        detail: String::new(),
    };
    // One at a time: every record waits for its own forced commit.
    let single = 200.min(records);
    let started = Instant::now();
    for i in 0..single {
        store.append_audit(entry(i)).await?;
    }
    let rate = f64::from(single) / started.elapsed().as_secs_f64();
    println!("audit append, durable, one record per commit: {rate:.0} records/s");
    // Batches of 100 queued records sharing one forced commit.
    let started = Instant::now();
    for i in 0..records {
        store.queue_audit(entry(i)).await?;
        if i % 100 == 99 {
            store.flush().await?;
        }
    }
    store.flush().await?;
    let rate = f64::from(records) / started.elapsed().as_secs_f64();
    println!("audit append, durable, batches of 100 (group commit): {rate:.0} records/s");
    let started = Instant::now();
    let verdict = store.verify_audit().await?;
    let total = match verdict {
        steward_store::AuditVerification::Valid { records } => records,
        steward_store::AuditVerification::Broken { seq, problem, .. } => {
            anyhow::bail!("chain broken at {seq}: {problem}")
        }
    };
    let rate = total as f64 / started.elapsed().as_secs_f64();
    println!("audit verify (read, decode and re-hash {total} records): {rate:.0} records/s");
    Ok(())
}

/// Runs `args.runs` runs of `args.steps` steps each, `concurrency` at a time: each step calls
/// the no-op tool, or `shell_command` with `shell_line` when given.
async fn measure(
    args: &StepArgs,
    durability: Durability,
    concurrency: u32,
    shell_line: Option<&str>,
) -> Result<(Vec<Duration>, Duration)> {
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace)?;
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open_state_dir(dir.path(), keyed(StoreOptions { durability, ..Default::default() })).await?,
    );
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let mut tools = ToolRegistry::new();
    tools.insert(Arc::new(NoopRead(ToolSpec {
        name: "noop_read".into(),
        description: "Returns ok.".into(),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        risk: RiskLevel::Safe,
        writes: false,
        path_inputs: Vec::new(),
        untrusted_output: false,
    })));
    let mut config = Config::default();
    if shell_line.is_some() {
        std::fs::write(workspace.join("notes.txt"), "hello from the workspace\n")?;
        std::fs::write(workspace.join(".env"), "TOKEN=bench-secret-value\n")?;
        let user = dir.path().join("user");
        std::fs::create_dir(&user)?;
        std::fs::write(
            user.join("config.toml"),
            "[shell]\nenabled = true\n[[policy.rule]]\nname = \"cat-ok\"\ntool = \"shell_command\"\n\
             argv = [\"cat\", \"**\"]\ndecision = \"allow\"\n",
        )?;
        config = Config::load(Some(&user), &workspace)?;
        tools = ToolRegistry::for_config(&config, &steward_policy::Workspace::open(&workspace, &[])?)?;
    }
    config.limits.max_rounds = args.steps + 1;
    config.limits.max_tool_calls_per_run = args.steps + 1;

    let clocks: Vec<Arc<StepClock>> = (0..args.runs).map(|_| Arc::new(StepClock::default())).collect();
    let started = Instant::now();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency as usize));
    let mut handles = Vec::new();
    for clock in &clocks {
        let permit = semaphore.clone().acquire_owned().await?;
        let runtime = runtime.clone();
        let request = RunRequest {
            task: "benchmark".into(),
            owner_id: "local:bench".into(),
            workspace: workspace.clone(),
            planner: planner(args.steps, shell_line),
            config: config.clone(),
            tools: tools.clone(),
            approver: Arc::new(NoApprover),
            observer: clock.clone(),
            cancel: CancellationToken::new(),
            run_id: None,
            history: Vec::new(),
            attachments: Vec::new(),
            roles: None,
        };
        handles.push(tokio::spawn(async move {
            let result = steward_core::run_task(&runtime, request).await;
            drop(permit);
            result
        }));
    }
    for handle in handles {
        handle.await??;
    }
    let elapsed = started.elapsed();
    let mut steps = Vec::new();
    for clock in clocks {
        let instants = clock.0.lock().map(|v| v.clone()).unwrap_or_default();
        steps.extend(instants.windows(2).map(|w| w[1] - w[0]));
    }
    Ok((steps, elapsed))
}

fn planner(steps: u32, shell_line: Option<&str>) -> PlannerChoice {
    let (name, arguments) = match shell_line {
        Some(line) => ("shell_command", json!({ "command": line })),
        None => ("noop_read", json!({})),
    };
    let mut rounds: Vec<Round> = (0..steps)
        .map(|_| Round {
            tool_calls: vec![FakeToolCall {
                name: name.into(),
                arguments: Some(arguments.clone()),
                ..Default::default()
            }],
            ..Default::default()
        })
        .collect();
    rounds.push(Round { text: Some("done".into()), ..Default::default() });
    PlannerChoice {
        kind: "model".into(),
        provider: Arc::new(FakeProvider::new(Scenario { rounds })),
        model: "fake".into(),
        tool_choice: ToolChoice::Auto,
        max_tokens: None,
    }
}

/// CPU time (user + system) used by this process so far, all threads included.
pub(crate) fn cpu_time() -> Duration {
    crate::rusage::cpu_time(libc::RUSAGE_SELF)
}

fn print_line(label: &str, concurrency: u32, steps: &[Duration], elapsed: Duration, cpu: Duration) {
    let mut sorted = steps.to_vec();
    sorted.sort();
    let pick = |q: f64| sorted.get(((sorted.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let per_step_cpu = if sorted.is_empty() { 0.0 } else { us(cpu) / sorted.len() as f64 };
    println!(
        "{label}: concurrency {concurrency}, {} steps: wall p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs; \
         CPU {per_step_cpu:.0} µs/step (all threads and the processes it waited for, setup included); throughput {:.0} steps/s",
        sorted.len(),
        us(pick(0.5)),
        us(pick(0.99)),
        us(pick(1.0)),
        sorted.len() as f64 / elapsed.as_secs_f64()
    );
}
