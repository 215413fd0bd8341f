//! `steward-bench local`: real agent runs with a real local model on small fixture
//! repositories. It starts llama.cpp's `llama-server` (or llama-cpp-python's server) on
//! loopback with the model, runs `steward run --json` for each task of `local_tasks` in a
//! fresh copy of its repository, every built-in tool offered and the file-changing ones
//! allowed, and reads what happened from the run's events and the server's own counters:
//! - a task is completed when its rule-based check holds (the answer names what was asked;
//!   the file holds the change);
//! - runs that failed are counted by error class;
//! - the prompt estimate (`prompt_fitted`, when the prompt was fitted) is set beside the
//!   server's count of the same round;
//! - the cached share is the part of the prompt tokens the server did not evaluate again
//!   (`1 - llamacpp:prompt_tokens_total / Σ usage.prompt_tokens`);
//! - rounds are the planner calls; tool calls are counted as native (the server's structured
//!   calls), recovered from text (`call_recovered_*`) or refused (undeclared or malformed
//!   calls, replies of unusable markup and replies that ran away);
//! - prompt tokens per round are the server's `usage.prompt_tokens`; wall time per round is
//!   the planner stage's duration;
//! - prompt and generation tokens/s come from llama-server's `/metrics`
//!   (`llamacpp:prompt_tokens_total / llamacpp:prompt_seconds_total`, and the same for
//!   predicted tokens), so they are the server's own timings; llama-cpp-python has no such
//!   counters and they are left out.
//!
//! Sampling is greedy (`--temp 0`, seed 42, on llama-server). Never run in CI: one task takes
//! minutes on 2 cores.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::Value;

use crate::local_tasks::{TASKS, Task, write_repo};

/// `steward-bench local` options.
#[derive(Args, Clone)]
pub struct BenchLocalArgs {
    /// The model file (GGUF) [default: $STEWARD_TEST_QWEN_MODEL]
    #[arg(long)]
    model: Option<PathBuf>,
    /// `llama-server` (llama.cpp) [default: $STEWARD_TEST_LLAMA_SERVER]
    #[arg(long)]
    llama_server: Option<PathBuf>,
    /// Serve the model with llama-cpp-python's server instead (this Python, with
    /// `llama_cpp.server`): its chat path passes tool-call markup through as text.
    #[arg(long)]
    llama_cpp_python: Option<PathBuf>,
    /// The server's context window, in tokens (`-c`).
    #[arg(long, default_value_t = 2048)]
    context: u32,
    /// Output token limit per planner call [default: Steward's own, the reply's share of the
    /// window].
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Rounds with tool calls before a run stops.
    #[arg(long, default_value_t = 4)]
    max_rounds: u32,
    /// The provider's `constrained` setting: auto, on or off.
    #[arg(long, default_value = "auto", value_parser = ["auto", "on", "off"])]
    constrained: String,
    /// Run only the tasks whose name contains this text.
    #[arg(long)]
    only: Option<String>,
    /// The `steward` binary [default: next to this program]
    #[arg(long)]
    steward: Option<PathBuf>,
}

/// What one task's run did.
#[derive(Default)]
struct Outcome {
    completed: bool,
    rounds: u32,
    native: u32,
    recovered: u32,
    refused: u32,
    constrained: u32,
    prompt_tokens: Vec<u64>,
    /// (estimated, counted) prompt tokens of rounds whose prompt was fitted.
    estimates: Vec<(u64, u64)>,
    round_ms: Vec<u64>,
    ending: String,
    /// The start of the run's final text (its answer, or what it had when stopped).
    answer: String,
}

/// A server process, killed when dropped.
struct Server(Child, u16);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn env_path(given: &Option<PathBuf>, var: &str) -> Result<PathBuf> {
    given
        .clone()
        .or_else(|| std::env::var_os(var).map(PathBuf::from))
        .with_context(|| format!("give the path or set {var}"))
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `GET path` on 127.0.0.1:`port`: `(status line, body)`.
fn get(port: u16, path: &str) -> Option<(String, String)> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_string(), body.to_string()))
}

fn start_server(args: &BenchLocalArgs, model: &Path) -> Result<Server> {
    let port = free_port()?;
    let mut command = match &args.llama_cpp_python {
        Some(python) => {
            let mut c = Command::new(python);
            c.args(["-m", "llama_cpp.server", "--model_alias", "local", "--host", "127.0.0.1", "--n_threads", "2"])
                .arg("--model")
                .arg(model)
                .args(["--port", &port.to_string(), "--n_ctx", &args.context.to_string()]);
            c
        }
        None => {
            let mut c = Command::new(env_path(&args.llama_server, "STEWARD_TEST_LLAMA_SERVER")?);
            c.arg("-m").arg(model).args(["-a", "local", "--jinja", "--host", "127.0.0.1", "--port", &port.to_string()]);
            c.args([
                "-c",
                &args.context.to_string(),
                "-t",
                "2",
                "--temp",
                "0",
                "--seed",
                "42",
                "--metrics",
                "--no-webui",
            ]);
            c
        }
    };
    let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().context("cannot start the model server")?;
    let server = Server(child, port);
    let deadline = Instant::now() + Duration::from_secs(180);
    let ready = if args.llama_cpp_python.is_some() { "/v1/models" } else { "/health" };
    while !get(port, ready).is_some_and(|(status, _)| status.contains(" 200")) {
        if Instant::now() > deadline {
            bail!("the model server did not become ready within 180 s");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    Ok(server)
}

/// llama-server's counters: (prompt tokens, prompt seconds, predicted tokens, predicted seconds).
fn counters(port: u16) -> Option<[f64; 4]> {
    let (_, body) = get(port, "/metrics")?;
    let value = |name: &str| {
        body.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().last()?.parse::<f64>().ok())
    };
    Some([
        value("llamacpp:prompt_tokens_total")?,
        value("llamacpp:prompt_seconds_total")?,
        value("llamacpp:tokens_predicted_total")?,
        value("llamacpp:tokens_predicted_seconds_total")?,
    ])
}

fn run_task(args: &BenchLocalArgs, steward: &Path, port: u16, task: &Task) -> Result<Outcome> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws)?;
    write_repo(task.repo, &ws)?;
    let config = dir.path().join("xdg/steward");
    std::fs::create_dir_all(&config)?;
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\
             probe_context_window = true\nconstrained = \"{}\"\n\
             [policy]\nallowed_actions = [\"edit\", \"create\", \"delete\", \"apply_patch\"]\n",
            args.constrained
        ),
    )?;
    let limit: Vec<String> = args.max_tokens.map(|n| vec!["--max-tokens".into(), n.to_string()]).unwrap_or_default();
    let out = Command::new(steward)
        .current_dir(&ws)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("USER", "bench")
        .env("STEWARD_HOME", dir.path().join("home"))
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .args(["run", "--json", "--provider", "local", "--model", "local"])
        .args(&limit)
        .args(["--max-rounds", &args.max_rounds.to_string()])
        .arg(task.text)
        .stdin(Stdio::null())
        .output()
        .context("cannot run steward")?;
    let events: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let mut outcome = Outcome::default();
    let mut answer = String::new();
    let mut estimate = None;
    for e in &events {
        match e["event"].as_str().unwrap_or_default() {
            "prompt_fitted" => estimate = e["estimated_tokens"].as_u64(),
            "stage_completed" | "stage_failed" if e["stage"] == "planner" => {
                outcome.rounds += 1;
                outcome.round_ms.push(e["duration_ms"].as_u64().unwrap_or(0));
                outcome.constrained += u32::from(e["constrained"] == true);
                if let Some(tokens) = e["usage"]["input_tokens"].as_u64().filter(|t| *t > 0) {
                    outcome.prompt_tokens.push(tokens);
                    if let Some(estimated) = estimate.take() {
                        outcome.estimates.push((estimated, tokens));
                    }
                }
                if e["class"] == "unparsed_tool_call" || e["class"] == "runaway_reply" {
                    outcome.refused += 1;
                }
            }
            "tool_requested" => {
                if e["call_id"].as_str().unwrap_or_default().starts_with("call_recovered") {
                    outcome.recovered += 1;
                } else {
                    outcome.native += 1;
                }
            }
            "tool_denied" if e["rule"] == "invalid_tool_call" => outcome.refused += 1,
            "run_completed" => {
                outcome.ending = e["stop_reason"].as_str().unwrap_or_default().to_string();
                let text: String = e["final"].as_str().unwrap_or_default().chars().take(60).collect();
                outcome.answer = text.replace(['\n', '|'], " ");
                // Only an answer counts as one: a run stopped by a limit reports what it had.
                if outcome.ending == "answered" {
                    answer = e["final"].as_str().unwrap_or_default().to_string();
                }
            }
            "run_failed" => outcome.ending = format!("failed: {}", e["class"].as_str().unwrap_or_default()),
            _ => {}
        }
    }
    outcome.completed = (task.check)(&ws, &answer);
    Ok(outcome)
}

fn mean(values: &[u64]) -> f64 {
    if values.is_empty() { 0.0 } else { values.iter().sum::<u64>() as f64 / values.len() as f64 }
}

/// Runs the bench and prints its table.
pub async fn run(args: BenchLocalArgs) -> Result<u8> {
    let model = env_path(&args.model, "STEWARD_TEST_QWEN_MODEL")?;
    let steward = match &args.steward {
        Some(path) => path.clone(),
        None => std::env::current_exe()?.with_file_name("steward"),
    };
    let started = Instant::now();
    let server = start_server(&args, &model)?;
    let limit = args.max_tokens.map_or("Steward's default".to_string(), |n| n.to_string());
    println!(
        "model {} on {} (context {}, max_tokens {limit}, max_rounds {}, constrained {}); server ready in {:.1} s",
        model.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default(),
        if args.llama_cpp_python.is_some() { "llama-cpp-python" } else { "llama-server --jinja" },
        args.context,
        args.max_rounds,
        args.constrained,
        started.elapsed().as_secs_f64()
    );
    println!(
        "| task | completed | ending | rounds (constrained) | calls native / from text / refused | prompt tokens per round | s per round | answer (start) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let before = counters(server.1);
    let (mut done, mut ran, mut counted_total) = (0, 0, 0u64);
    let mut endings: std::collections::BTreeMap<String, u32> = Default::default();
    let (mut estimates, mut rounds, mut task_seconds) = (Vec::new(), Vec::new(), Vec::new());
    for task in TASKS.iter().filter(|t| args.only.as_deref().is_none_or(|only| t.name.contains(only))) {
        let args = args.clone();
        let steward = steward.clone();
        let port = server.1;
        let task_started = Instant::now();
        let o = tokio::task::spawn_blocking(move || run_task(&args, &steward, port, task)).await??;
        task_seconds.push(task_started.elapsed().as_secs_f64());
        ran += 1;
        done += u32::from(o.completed);
        *endings.entry(o.ending.clone()).or_default() += 1;
        counted_total += o.prompt_tokens.iter().sum::<u64>();
        estimates.extend(o.estimates.iter().copied());
        rounds.extend(o.prompt_tokens.iter().copied());
        let tokens: Vec<String> = o.prompt_tokens.iter().map(u64::to_string).collect();
        println!(
            "| {} | {} | {} | {} ({}) | {} / {} / {} | {} | {:.1} | {} |",
            task.name,
            if o.completed { "yes" } else { "no" },
            o.ending,
            o.rounds,
            o.constrained,
            o.native,
            o.recovered,
            o.refused,
            tokens.join(", "),
            mean(&o.round_ms) / 1000.0,
            o.answer
        );
    }
    println!("tasks completed: {done} of {ran}");
    let endings: Vec<String> = endings.iter().map(|(ending, n)| format!("{n} {ending}")).collect();
    println!("endings: {}", endings.join(", "));
    if !rounds.is_empty() {
        println!(
            "prompt tokens per round (server's count): mean {:.0}, min {}, max {} over {} rounds",
            mean(&rounds),
            rounds.iter().min().unwrap_or(&0),
            rounds.iter().max().unwrap_or(&0),
            rounds.len()
        );
    }
    if !estimates.is_empty() {
        let ratios: Vec<f64> = estimates.iter().map(|(e, c)| *e as f64 / (*c).max(1) as f64).collect();
        let (low, high) = ratios.iter().fold((f64::MAX, 0f64), |(l, h), r| (l.min(*r), h.max(*r)));
        println!(
            "estimate / server's count on {} fitted rounds: mean {:.2}, from {low:.2} to {high:.2}",
            ratios.len(),
            ratios.iter().sum::<f64>() / ratios.len() as f64
        );
    }
    if !task_seconds.is_empty() {
        let total: f64 = task_seconds.iter().sum();
        println!("wall time per task: mean {:.1} s, total {total:.0} s", total / task_seconds.len() as f64);
    }
    if let (Some(a), Some(b)) = (before, counters(server.1)) {
        let rate = |tokens: f64, seconds: f64| if seconds > 0.0 { tokens / seconds } else { 0.0 };
        println!(
            "server timings: prompt {:.1} tokens/s ({} tokens evaluated), generation {:.1} tokens/s ({} tokens)",
            rate(b[0] - a[0], b[1] - a[1]),
            b[0] - a[0],
            rate(b[2] - a[2], b[3] - a[3]),
            b[2] - a[2]
        );
        if counted_total > 0 {
            println!(
                "cached share of prompt tokens: {:.0} % ({} of {} not evaluated again)",
                100.0 * (1.0 - (b[0] - a[0]) / counted_total as f64).max(0.0),
                (counted_total as f64 - (b[0] - a[0])).max(0.0),
                counted_total
            );
        }
    }
    println!("wall time {:.0} s", started.elapsed().as_secs_f64());
    Ok(0)
}
