//! `steward-bench generated`: what tools the agent writes for itself (SPEC G) cost.
//!
//! - **A call of a generated tool**: each call starts a worker process (this program, as
//!   `steward-bench __tool-worker`, the way `steward` runs itself as `steward __tool-worker`)
//!   under the sandbox, sends it the source and the arguments, and reads the result. Timed
//!   per call of a trivial tool (`function run(input) { return input.c + 273.15; }`), against
//!   the same source run by the interpreter in this process (no worker, no sandbox): the
//!   difference is the worker's start-up cost.
//! - **From a planner naming an unknown tool to the tool's first call**: whole runs with
//!   `[generated_tools] enabled = true`, scripted fake providers playing the planner and the
//!   generator (one JSON draft that passes). Timed from the `tool_requested` event of
//!   the unknown tool (the planner named it) to the `tool_completed` event of its first call
//!   once registered: the generator call, static checks, compile, schema check, the probe
//!   call, the owner's approval (granted at once by the bench's approver, as a person
//!   clicking instantly would), registration in the store, the next planner round, the
//!   policy decision and approval of the call, and the call itself. Each run has a fresh
//!   state directory, so the tool is generated every time; a second run on the same state
//!   then reuses it, timed from its `tool_requested` to its `tool_completed`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use clap::Args;
use serde_json::json;
use steward_config::Config;
use steward_core::EventObserver;
use steward_core::{ApprovalAnswer, ApprovalKey, ApprovalScope, Approver};
use steward_core::{PlannerChoice, RunMode, RunOptions, Runtime, Task};
use steward_generated::protocol::{HostReply, StepOutcome, StepRequest};
use steward_generated::{HostEnv, StepLimits, StepMode, WorkerCommand};
use steward_policy::Redactor;
use steward_protocol::{ApprovalRequest, Event, EventKind, ToolChoice};
use steward_provider::fake::{FakeProvider, FakeToolCall, Round, Scenario};
use steward_store::{RunStatus, SqliteStore, Store};
use tokio_util::sync::CancellationToken;

/// The hidden first argument that makes `steward-bench` serve one step of a generated tool.
pub const WORKER_ARG: &str = "__tool-worker";

/// The trivial tool of the benchmark.
const SOURCE: &str = "function run(input) { return { kelvin: input.c + 273.15 }; }";

/// The tool's name.
const NAME: &str = "celsius_to_kelvin";

/// The owner of the benchmark's runs.
const OWNER: &str = "local:bench";

/// `steward-bench generated` options.
#[derive(Args)]
pub struct BenchGeneratedArgs {
    /// Calls of the trivial tool per line of the call measurement (at least 1).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    calls: u32,
    /// Runs of the naming-to-first-call measurement, each generating the tool anew (at least 1).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
}

/// `steward-bench generated`: every measurement, one line each.
pub async fn run(args: BenchGeneratedArgs) -> Result<u8> {
    let program = std::env::current_exe().context("where this program is")?;
    let worker = WorkerCommand { program, args: vec![WORKER_ARG.to_string()] };
    bench_calls(&worker, args.calls).await?;
    bench_generation(args.runs, &worker).await?;
    Ok(0)
}

/// The per-call lines: the interpreter in-process, then a sandboxed worker per call.
async fn bench_calls(worker: &WorkerCommand, calls: u32) -> Result<()> {
    let input = json!({ "c": 20 });
    let limits = StepLimits::default();
    let request = StepRequest {
        mode: StepMode::Call,
        source: SOURCE.into(),
        input: input.clone(),
        time_limit_ms: limits.time.as_millis() as u64,
        memory_bytes: limits.memory_bytes,
    };
    let dir = tempfile::tempdir()?;
    let host = HostEnv::live(dir.path().join(NAME), Vec::new());
    let cancel = CancellationToken::new();
    // A warm-up, which also shows the worker's sandbox profile.
    let warm = steward_generated::run_step(worker, StepMode::Call, SOURCE, &input, limits, &host, &cancel).await;
    let value = warm.outcome.map_err(|e| anyhow::anyhow!("the worker's warm-up call failed: {e}"))?;
    if value != json!({ "kelvin": 293.15 }) {
        bail!("the trivial tool returned {value}");
    }
    println!("steward-bench generated: one call of a trivial generated tool ({SOURCE}), {calls} calls per line");
    println!("worker sandbox profile: {}", warm.profile);
    let mut in_process = Vec::new();
    let mut with_worker = Vec::new();
    for _ in 0..calls {
        let started = Instant::now();
        let outcome = steward_generated::worker::run_step(&request, Box::new(|_| HostReply::Error("none".into())));
        in_process.push(started.elapsed());
        if !matches!(outcome, StepOutcome::Ok(_)) {
            bail!("the in-process call failed: {outcome:?}");
        }
        let started = Instant::now();
        let report = steward_generated::run_step(worker, StepMode::Call, SOURCE, &input, limits, &host, &cancel).await;
        with_worker.push(started.elapsed());
        report.outcome.map_err(|e| anyhow::anyhow!("a worker call failed: {e}"))?;
    }
    let inside = print_line("interpreter in this process (no worker, no sandbox), one call", &mut in_process);
    let whole = print_line(
        "sandboxed worker process started + one call (what each call of a generated tool costs)",
        &mut with_worker,
    );
    println!("worker start-up and sandbox alone (p50 difference): {:.2} ms", whole - inside);
    Ok(())
}

/// Approves every request at once, as the run's owner.
struct Owner;

#[async_trait]
impl Approver for Owner {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        ApprovalAnswer::Approve {
            token: token.to_string(),
            decided_by: request.owner_id.clone(),
            scope: ApprovalScope::Once,
            call_hash: steward_core::call_hash(request),
        }
    }
}

/// The instants of a run's tool events: (kind, tool, call id, when).
#[derive(Default)]
struct Clock(Mutex<Vec<(&'static str, String, String, Instant)>>);

impl EventObserver for Clock {
    fn on_event(&self, event: &Event) {
        let now = Instant::now();
        let seen = match &event.kind {
            EventKind::ToolRequested { call_id, tool, .. } => ("requested", tool, call_id),
            // A call counts once it returned what the tool computes.
            EventKind::ToolCompleted { call_id, tool, output, .. } if output.contains("293.15") => {
                ("completed", tool, call_id)
            }
            EventKind::ToolCompleted { call_id, tool, .. } => ("completed without 293.15", tool, call_id),
            _ => return,
        };
        if let Ok(mut v) = self.0.lock() {
            v.push((seen.0, seen.1.clone(), seen.2.clone(), now));
        }
    }
}

impl Clock {
    /// From the first request of the tool to the completion of the call `call_id`, and from
    /// that call's request to its completion; what was seen when there is no such call.
    fn span(&self, call_id: &str) -> Result<(Duration, Duration)> {
        let seen = self.0.lock().map_err(|_| anyhow::anyhow!("the event clock broke"))?;
        let at = |want: &str, call: Option<&str>| {
            seen.iter()
                .find(|(kind, tool, id, _)| *kind == want && tool == NAME && call.is_none_or(|c| c == id))
                .map(|e| e.3)
        };
        match (at("requested", None), at("requested", Some(call_id)), at("completed", Some(call_id))) {
            (Some(named), Some(asked), Some(done)) => Ok((done.duration_since(named), done.duration_since(asked))),
            _ => {
                let events: Vec<String> =
                    seen.iter().map(|(kind, tool, id, _)| format!("{kind} {tool} {id}")).collect();
                bail!("no completed call `{call_id}` of {NAME} after it was named; tool events: {}", events.join(", "))
            }
        }
    }
}

fn call(id: &str) -> Round {
    Round {
        tool_calls: vec![FakeToolCall {
            name: NAME.into(),
            arguments: Some(json!({ "c": 20 })),
            arguments_raw: None,
            id: Some(id.into()),
        }],
        ..Round::default()
    }
}

fn text(text: String) -> Round {
    Round { text: Some(text), ..Round::default() }
}

/// One run in `ws` on `runtime` with the configuration in `config_dir`, the fake planner
/// playing `rounds`; the instants of its events.
async fn one_run(
    runtime: &Runtime,
    config_dir: &std::path::Path,
    ws: &std::path::Path,
    rounds: Vec<Round>,
) -> Result<Arc<Clock>> {
    let config = Config::load(Some(config_dir), ws)?;
    let provider = Arc::new(FakeProvider::new(Scenario { rounds }));
    let planner = PlannerChoice {
        kind: "model".into(),
        provider,
        model: "fake".into(),
        tool_choice: ToolChoice::Auto,
        max_tokens: None,
    };
    let options = RunOptions { planner_choice: Some(planner), mode: Some(RunMode::Loop), ..RunOptions::default() };
    let prepared = steward_core::prepare(config, ws, &options).await?;
    let clock = Arc::new(Clock::default());
    let ready = prepared.into_run(Task {
        task: "Convert 20 degrees Celsius to Kelvin".into(),
        owner_id: OWNER.into(),
        approver: Arc::new(Owner),
        observer: clock.clone(),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
    });
    let record = ready.run(runtime).await?;
    if record.status != RunStatus::Completed {
        bail!("a benchmark run ended {:?}: {}", record.status, record.error.unwrap_or_default());
    }
    Ok(clock)
}

/// The naming-to-first-call and reuse lines.
async fn bench_generation(runs: u32, worker: &WorkerCommand) -> Result<()> {
    let draft = json!({
        "description": "Converts degrees Celsius to Kelvin.",
        "input_schema": { "type": "object", "required": ["c"], "properties": { "c": { "type": "number" } } },
        "source": SOURCE,
    });
    println!(
        "steward-bench generated: from the planner naming an unknown tool to the generated tool's first completed call \
         (fake planner and generator, checks, compile, probe, approval granted at once, registration, next round, \
         call), {runs} runs, each on a fresh state; then one run reusing it"
    );
    let (mut first, mut first_call, mut reuse) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let dir = tempfile::tempdir()?;
        let (ws, home, config_dir) = (dir.path().join("ws"), dir.path().join("home"), dir.path().join("config"));
        for d in [&ws, &home, &config_dir] {
            std::fs::create_dir_all(d)?;
        }
        let ws = std::fs::canonicalize(&ws)?;
        // The generator: its own fake provider answering with the draft (the planner's fake
        // answers by the number of assistant turns, which the generator's request lacks).
        let script = dir.path().join("generator.toml");
        std::fs::write(&script, format!("[[round]]\ntext = {}\n", serde_json::to_string(&draft.to_string())?))?;
        let config = format!(
            "[generated_tools]\nenabled = true\nprovider = \"bench_generator\"\n\n\
             [providers.bench_generator]\nkind = \"fake\"\nscenario = {}\n",
            serde_json::to_string(&script.display().to_string())?
        );
        std::fs::write(config_dir.join("config.toml"), config)?;
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open_state_dir(&home, Default::default()).await?);
        let runtime = Runtime::new(&home, store, Redactor::new(Vec::new()), ApprovalKey::generate())
            .with_tool_worker(worker.clone());
        let rounds = vec![call("named"), call("first"), text("293.15 K".into())];
        let clock = one_run(&runtime, &config_dir, &ws, rounds).await?;
        let (whole, asked) = clock.span("first")?;
        first.push(whole);
        first_call.push(asked);
        let clock = one_run(&runtime, &config_dir, &ws, vec![call("again"), text("293.15 K".into())]).await?;
        reuse.push(clock.span("again")?.0);
    }
    print_line("planner names the unknown tool -> generated tool's first call completed", &mut first);
    print_line("  of which that first call (requested -> completed: policy, approval, worker, audit)", &mut first_call);
    print_line("later run: planner names the registered tool -> call completed", &mut reuse);
    Ok(())
}

/// Prints `label: p50, p95, max` of `times` (sorted here); returns the p50 in ms.
fn print_line(label: &str, times: &mut [Duration]) -> f64 {
    times.sort();
    let pick = |q: f64| ms(times[((times.len() as f64 - 1.0) * q).round() as usize]);
    let p50 = pick(0.5);
    println!("{label}: p50 {p50:.2} ms, p95 {:.2} ms, max {:.2} ms (n = {})", pick(0.95), pick(1.0), times.len());
    p50
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
