//! `steward-bench sandbox`: wall time of sandboxed steps, every protection this machine
//! enforces included, all in one temporary workspace that holds a `.env` (so a file mask is
//! made every step):
//! - a plain `cat` spawn (no sandbox) against the same `cat` through `steward_sandbox::run`;
//!   the difference of their medians is the sandbox's setup cost;
//! - one `[[tool]]` call by network setting: `network = false` against a host list (egress
//!   proxy started and stopped per call), with a command that does nothing (`true`) and with
//!   one that makes one HTTP request (`curl`) to a server of the benchmark on loopback
//!   (reached directly with `network = true`, through the proxy with the host list naming its
//!   address `127.0.0.1:PORT`);
//! - the walk that finds secret paths (done by the tools before each step), timed on its own,
//!   on the bench workspace and on the current folder.
//!
//! - a `shell_command` step (the tool a run calls) whose line needs no shell (`cat FILE`, run
//!   directly) against the same line that bash must run (`'cat' FILE`: the quotes keep bash);
//! - the first sandboxed call of a fresh process against its second call, each in a new
//!   process of this benchmark (`--first-calls`, alternating): cold (the one-time probes of
//!   the sandbox run inside the first call) and warm (`steward_sandbox::warm_up` called at
//!   start, the call made [`WARM_GAP`] later, as a run's start-up gives it).
//!
//! The cases are run round-robin, so that the machine's load changes weigh on each alike. Each
//! line also gives the CPU time per step of this process and of the processes the step
//! started and waited for (`getrusage` of itself and of its children), which the machine's
//! load changes far less than wall time.
//! `steward-bench` (without a mode) runs the `cat` lines and the walk only, with
//! [`CAT_STEPS`] steps by default (`--sandbox-steps`).

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::json;
use steward_sandbox::ExecRequest;
use steward_tools::Network;
use steward_tools::ShellTool;
use steward_tools::sandbox_paths::sandbox_paths;
use steward_tools::{ArgItem, CommandTool, CommandToolConfig};
use steward_tools::{Tool, ToolContext};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// Steps per line when `steward-bench` runs the `cat` lines.
pub const CAT_STEPS: u32 = 40;

/// How long after `warm_up` the warm first call is made (a run's start-up before its first
/// tool call takes longer than this).
pub const WARM_GAP: Duration = Duration::from_millis(20);

/// `steward-bench sandbox` options.
#[derive(Args)]
pub struct BenchSandboxArgs {
    /// Steps per measurement (at least 1).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    calls: u32,
    /// Fresh processes per first-call measurement (cold and warm each; 0 skips it).
    #[arg(long, default_value_t = 20)]
    first_calls: u32,
    /// Internal: run as one fresh process of the first-call measurement (`cold` or `warm`)
    /// and print the first and second call's wall time in microseconds.
    #[arg(long, hide = true)]
    first_call_child: Option<String>,
}

/// The wall time and the CPU time (with the step's processes) of each step of a case.
type StepTimes = Vec<(Duration, Duration)>;

/// What one case runs per step.
enum Step {
    /// `cat FILE` without a sandbox.
    Plain(String),
    /// A request through `steward_sandbox::run`.
    Sandboxed(ExecRequest),
    /// A `[[tool]]` call.
    Tool(CommandTool),
    /// A `shell_command` call with these arguments.
    Shell(Arc<ShellTool>, serde_json::Value),
}

/// `steward-bench sandbox`: every measurement, one line each.
pub async fn run(args: BenchSandboxArgs) -> Result<u8> {
    if let Some(mode) = args.first_call_child {
        first_call_child(&mode).await?;
        return Ok(0);
    }
    measure(args.calls, true).await?;
    if args.first_calls > 0 {
        first_calls(args.first_calls).await?;
    }
    Ok(0)
}

/// A workspace with a file to read and a `.env` to mask, and the sandboxed `cat` of the file.
fn cat_workspace() -> Result<(tempfile::TempDir, ExecRequest)> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "hello from the workspace\n")?;
    std::fs::write(dir.path().join(".env"), "TOKEN=bench-secret-value\n")?;
    let paths = sandbox_paths(&steward_policy::Workspace::open(dir.path(), &[])?)?;
    let request = ExecRequest {
        mask: paths.mask,
        read_only: paths.read_only,
        ..ExecRequest::new(vec!["cat".into(), file.display().to_string()], dir.path().to_path_buf())
    };
    Ok((dir, request))
}

/// One fresh process of the first-call measurement: prints `FIRST_US SECOND_US`.
async fn first_call_child(mode: &str) -> Result<()> {
    if mode == "warm" {
        steward_sandbox::warm_up();
    }
    let (_dir, request) = cat_workspace()?;
    if mode == "warm" {
        tokio::time::sleep(WARM_GAP).await;
    }
    let mut took = Vec::new();
    for _ in 0..2 {
        let started = Instant::now();
        let out = steward_sandbox::run(request.clone(), CancellationToken::new()).await?;
        took.push(started.elapsed().as_micros());
        if out.exit_code != Some(0) {
            bail!("the sandboxed `cat` failed: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    println!("{} {}", took[0], took[1]);
    Ok(())
}

/// Starts `processes` fresh processes per mode (cold and warm alternating) and prints the
/// first and second call's wall time.
async fn first_calls(processes: u32) -> Result<()> {
    let exe = std::env::current_exe()?;
    let mut times: [(Vec<f64>, Vec<f64>); 2] = Default::default();
    for _ in 0..processes {
        for (i, mode) in ["cold", "warm"].into_iter().enumerate() {
            let out = tokio::process::Command::new(&exe)
                .args(["sandbox", "--first-call-child", mode])
                .stdin(Stdio::null())
                .output()
                .await?;
            let text = String::from_utf8_lossy(&out.stdout);
            let mut fields = text.split_whitespace().map(str::parse::<f64>);
            match (fields.next(), fields.next()) {
                (Some(Ok(first)), Some(Ok(second))) if out.status.success() => {
                    times[i].0.push(first / 1e3);
                    times[i].1.push(second / 1e3);
                }
                _ => bail!("the first-call process failed: {}", String::from_utf8_lossy(&out.stderr)),
            }
        }
    }
    println!("first sandboxed `cat` of a fresh process ({processes} processes per line, alternating):");
    for (label, (first, second)) in ["cold (probes in the call)", "warm (warm_up at start)"].iter().zip(times) {
        let (first, second) = (spread(first), spread(second));
        println!(
            "  {label}: first call p50 {:.2} ms (min {:.2}, max {:.2}); second call p50 {:.2} ms (min {:.2}, max {:.2})",
            first.0, first.1, first.2, second.0, second.1, second.2
        );
    }
    Ok(())
}

/// `(median, min, max)` of `values` (not empty).
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2], values[0], values[values.len() - 1])
}

/// The `cat` lines and the secret-path walk, `steps` steps per line, for `steward-bench`.
pub async fn bench_sandbox(steps: u32) -> Result<()> {
    measure(steps, false).await
}

/// Runs `steps` steps of each case (the `[[tool]]` cases only `with_tools`) and prints them.
async fn measure(steps: u32, with_tools: bool) -> Result<()> {
    let (dir, request) = cat_workspace()?;
    let file_arg = request.argv[1].clone();
    // A warm-up (page cache, first namespace probes), which also shows the profile.
    let warm = steward_sandbox::run(request.clone(), CancellationToken::new()).await?;
    if warm.exit_code != Some(0) {
        bail!("the sandboxed `cat` failed: {}", String::from_utf8_lossy(&warm.stderr));
    }

    let workspace = Arc::new(steward_policy::Workspace::open(dir.path(), &[])?);
    let ctx = ToolContext {
        workspace,
        cancel: CancellationToken::new(),
        env_allow: Vec::new(),
        timeout_ms: 30_000,
        snapshots: steward_tools::rollback::Snapshots::new(&dir.path().join("snapshots"), "run_bench"),
        accept_weaker: Vec::new(),
        credentials: Default::default(),
        sandbox: Default::default(),
        elicitor: None,
        egress: None,
    };
    let port = serve().await?;
    let url = format!("http://127.0.0.1:{port}/");
    let hosts = Network::Hosts(vec![format!("127.0.0.1:{port}")]);
    let curl = ["curl", "-sS", "-f", "-o", "/dev/null", url.as_str()];

    println!("steward-bench sandbox: wall time per step, {steps} steps per line");
    println!("sandbox profile: {}", warm.profile);
    let mut cases: Vec<(&str, Step, StepTimes)> = vec![
        ("plain `cat` spawn (no sandbox)", Step::Plain(file_arg), Vec::new()),
        ("sandboxed `cat` step", Step::Sandboxed(request), Vec::new()),
    ];
    let tool_cases = [
        ("[[tool]] `true`, network = false", &["true"][..], Network::Off),
        ("[[tool]] `true`, host list (proxy started and stopped)", &["true"][..], hosts.clone()),
        ("[[tool]] `curl` one request, network = true (direct)", &curl[..], Network::All),
        ("[[tool]] `curl` one request, host list (through the proxy)", &curl[..], hosts.clone()),
    ];
    let shell = Arc::new(ShellTool::new(Vec::new(), Network::Off, None, false));
    let shell_cases = [
        ("`shell_command` `cat notes.txt` (no shell needed: run directly)", "cat notes.txt"),
        ("`shell_command` `'cat' notes.txt` (quoted: through bash)", "'cat' notes.txt"),
    ];
    for (label, line) in shell_cases.into_iter().filter(|_| with_tools) {
        cases.push((label, Step::Shell(shell.clone(), json!({ "command": line })), Vec::new()));
    }
    for (label, command, network) in tool_cases.into_iter().filter(|_| with_tools) {
        let tool = CommandTool::new(CommandToolConfig {
            name: "bench".into(),
            description: "benchmark".into(),
            command: command.iter().map(|a| ArgItem::Literal(a.to_string())).collect(),
            cwd: None,
            env: Default::default(),
            timeout_ms: None,
            risk: None,
            network,
            unix_sockets: false,
            writes: Vec::new(),
            callable: Default::default(),
            compensate: None,
            inputs: Vec::new(),
            approval_ttl_seconds: None,
        })?;
        cases.push((label, Step::Tool(tool), Vec::new()));
    }
    for _ in 0..steps {
        for (label, step, times) in &mut cases {
            let cpu = cpu_time_with_children();
            let started = Instant::now();
            match step {
                Step::Plain(file) => plain_cat(file).await?,
                Step::Sandboxed(request) => {
                    let out = steward_sandbox::run(request.clone(), CancellationToken::new()).await?;
                    if out.exit_code != Some(0) {
                        bail!("{label} failed: {}", String::from_utf8_lossy(&out.stderr));
                    }
                }
                Step::Tool(tool) => {
                    tool.run(&json!({}), &ctx).await.map_err(|e| anyhow::anyhow!("{label}: {e}"))?;
                }
                Step::Shell(tool, args) => {
                    let out = tool.run(args, &ctx).await.map_err(|e| anyhow::anyhow!("{label}: {e}"))?;
                    if !out.content.contains("hello from the workspace") {
                        bail!("{label} failed: {}", out.content);
                    }
                }
            }
            times.push((started.elapsed(), cpu_time_with_children().saturating_sub(cpu)));
        }
    }
    let mut medians = Vec::new();
    for (label, _, steps) in cases {
        let mut times: Vec<Duration> = steps.iter().map(|s| s.0).collect();
        let mut cpu: Vec<Duration> = steps.iter().map(|s| s.1).collect();
        times.sort();
        cpu.sort();
        let pick = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
        let p50 = ms(pick(0.5));
        println!(
            "{label}: p50 {p50:.2} ms, p95 {:.2} ms, max {:.2} ms; CPU p50 {:.2} ms (this process and the step's processes)",
            ms(pick(0.95)),
            ms(pick(1.0)),
            ms(cpu[cpu.len() / 2])
        );
        medians.push(p50);
    }
    println!("sandbox setup alone (sandboxed `cat` against plain `cat`, p50): {:.2} ms", medians[1] - medians[0]);
    if with_tools {
        println!("shell skipped (direct against through bash, p50): {:+.2} ms", medians[2] - medians[3]);
        println!(
            "egress proxy per call (host list against network = false, `true`, p50): {:+.2} ms",
            medians[5] - medians[4]
        );
    }

    for (label, root) in
        [("the bench workspace", dir.path().to_path_buf()), ("the current folder", std::env::current_dir()?)]
    {
        let started = Instant::now();
        let walked = steward_policy::Workspace::open(&root, &[])
            .map_err(anyhow::Error::from)
            .and_then(|workspace| Ok(sandbox_paths(&workspace)?));
        let took = started.elapsed();
        match walked {
            Ok(paths) => println!(
                "secret-path walk of {label} ({}): {:.2} ms ({} masked, {} read-only)",
                root.display(),
                ms(took),
                paths.mask.len(),
                paths.read_only.len()
            ),
            Err(e) => println!("secret-path walk of {label}: {e}"),
        }
    }
    Ok(())
}

async fn plain_cat(file: &str) -> Result<()> {
    let output = tokio::process::Command::new("cat")
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .await?;
    if !output.status.success() {
        bail!("plain `cat` failed");
    }
    Ok(())
}

/// CPU time (user + system) of this process and of its children that ended and were waited
/// for (with their own waited-for children: a sandboxed program, its init and keeper).
pub(crate) fn cpu_time_with_children() -> Duration {
    crate::rusage::cpu_time(libc::RUSAGE_SELF) + crate::rusage::cpu_time(libc::RUSAGE_CHILDREN)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A loopback HTTP server answering `ok` to every request; returns its port.
async fn serve() -> Result<u16> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.context("bench server")?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok").await;
            });
        }
    });
    Ok(port)
}
