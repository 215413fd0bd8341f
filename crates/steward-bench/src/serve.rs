//! `steward-bench serve`: two costs of `steward serve`, the server in this process.
//!
//! 1. Memory per run parked on an approval: N runs are started through the server's own start
//!    path (`steward_server::runs::start`, what `POST /api/runs` calls), each scripted to make
//!    one `create` call that needs approval; once every run has a pending approval the resident
//!    set size of the process (`VmRSS`) is compared with the idle server's. Then all are
//!    cancelled through the cancel path and the time until none is live is reported.
//! 2. Event latency to many browsers: the server listens on a loopback socket; C clients hold
//!    `GET /api/runs/{id}/events` open on one run (plain HTTP/1.1 over TCP, the run owner's
//!    cookie), all in a client process of their own ([`crate::serve_clients`]); once every
//!    client is subscribed the run is approved and streams K chunks, one
//!    per model round, spaced by a delay. For every (client, chunk) pair the latency is the
//!    client's arrival time minus the event's `at` stamp, which is taken when the event is
//!    published (before it is stored and broadcast). Also reported: the server's CPU time and
//!    write system calls per (client, chunk) pair, and how many events each client got per
//!    chunk round in how many pieces (one per write of the server).
//! 3. With `--floor WRITERS`, instead of the server, the floor of that latency: the same clients,
//!    frames and measurement against a minimal server on plain sockets ([`crate::serve_floor`]).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use clap::Args;
use serde_json::{Value, json};
use steward_config::Config;
use steward_core::ApprovalKey;
use steward_core::{PlannerChoice, Runtime};
use steward_policy::Redactor;
use steward_protocol::{ChatRequest, ChatResponse, ToolChoice, ToolSpec};
use steward_provider::fake::{FakeProvider, FakeToolCall, Round, Scenario};
use steward_provider::{DeltaSink, Provider, ProviderError};
use steward_server::{
    AppState, Launcher, LauncherError, Prepared, ProviderStatus, RunOptions, ServerOptions, Sessions, StartRun,
};
use steward_store::{SqliteStore, Store, StoreOptions};
use steward_tools::ToolRegistry;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::step::cpu_time;

/// The memory target: this many parked runs …
const TARGET_RUNS: usize = 10_000;
/// … in at most this many MiB.
const TARGET_MIB: f64 = 512.0;
/// The latency target for p99, in ms.
const TARGET_P99_MS: f64 = 5.0;
/// The owner of the parked runs.
const OWNER: &str = "local:bench";

/// `steward-bench serve` options.
#[derive(Args)]
pub struct BenchServeArgs {
    /// Runs parked on an approval at once (0 skips the memory measurement).
    #[arg(long, default_value_t = TARGET_RUNS)]
    runs: usize,
    /// Event-stream clients connected to one run (0 skips the latency measurement).
    #[arg(long, default_value_t = 1_000)]
    clients: usize,
    /// Chunks the run streams to the clients, one per model round.
    #[arg(long, default_value_t = 20)]
    chunks: u32,
    /// Delay before each chunk, in ms.
    #[arg(long, default_value_t = 50)]
    chunk_interval_ms: u64,
    /// Instead of the server, measure the floor: the same clients and frames served by a
    /// minimal server on plain sockets, writing each chunk to every socket from this many
    /// threads (see `serve_floor`).
    #[arg(long, value_name = "WRITERS")]
    floor: Option<usize>,
}

/// The scripted fake provider, made afresh for every call. The fake picks its reply from the
/// request alone, so this plays the script exactly; it only keeps the fake from holding a copy
/// of every request it answered (kept for tests; a real provider keeps none), which would be
/// counted as memory of the parked run.
struct Scripted(Arc<Scenario>);

#[async_trait]
impl Provider for Scripted {
    fn name(&self) -> &str {
        "fake"
    }

    fn default_model(&self) -> &str {
        "fake"
    }

    async fn stream(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, ProviderError> {
        FakeProvider::new((*self.0).clone()).stream(request, on_delta).await
    }

    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        Ok(vec!["fake".into()])
    }
}

/// Prepares every run with the same fake script, default configuration and built-in tools.
struct BenchLauncher {
    scenario: Arc<Scenario>,
    max_rounds: u32,
}

#[async_trait]
impl Launcher for BenchLauncher {
    async fn prepare(&self, workspace: &Path, _options: &RunOptions) -> Result<Prepared, LauncherError> {
        let mut config = Config::default();
        config.limits.max_rounds = self.max_rounds;
        config.limits.max_tool_calls_per_run = self.max_rounds;
        let planner = PlannerChoice {
            kind: "model".into(),
            provider: Arc::new(Scripted(self.scenario.clone())),
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        };
        Ok(Prepared::new(workspace.to_path_buf(), config, ToolRegistry::builtin(), planner, None)?)
    }

    async fn tools(&self, _workspace: &Path) -> Result<Vec<ToolSpec>, LauncherError> {
        Ok(ToolRegistry::builtin().specs())
    }

    async fn providers(&self) -> Vec<ProviderStatus> {
        vec![ProviderStatus { name: "fake".into(), reachable: true, models: vec!["fake".into()], error: String::new() }]
    }
}

/// A server state over a fresh SQLite file and workspace in `dir`.
async fn server(dir: &Path, scenario: Scenario, max_rounds: u32, max_running: usize) -> Result<AppState> {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws)?;
    let ws = std::fs::canonicalize(&ws)?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.join("serve.db"), StoreOptions::default()).await?);
    let runtime = Runtime::new(dir, store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let mut secret = rand::random::<[u8; 32]>().to_vec();
    secret.extend(rand::random::<[u8; 32]>());
    let sessions = Sessions::new(&secret, OWNER).context("session key")?;
    Ok(steward_server::app_state(
        Arc::new(runtime),
        Arc::new(BenchLauncher { scenario: Arc::new(scenario), max_rounds }),
        sessions,
        ServerOptions { workspaces: vec![ws], max_running, ..ServerOptions::default() },
    ))
}

fn create_call(path: &str) -> FakeToolCall {
    FakeToolCall {
        name: "create".into(),
        arguments: Some(json!({"path": path, "content": "x\n"})),
        ..Default::default()
    }
}

/// Runs the benchmark and prints what it measured.
pub async fn run(args: BenchServeArgs) -> Result<u8> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_string()))
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    println!(
        "steward-bench serve: `steward serve` in this process ({profile} build, {cpus} CPUs: {model}; load \
         average {load} at start; tokio multi-threaded runtime, scripted fake provider holding no copy of \
         requests, SQLite store in a temporary directory)"
    );
    if args.runs > 0 {
        bench_parked(args.runs).await?;
    }
    if args.clients > 0 {
        match args.floor {
            Some(writers) => bench_floor(&args, cpus, writers).await?,
            None => bench_latency(&args, cpus).await?,
        }
    }
    println!(
        "caveats: one machine, no network (loopback); the clients run in another process on the same CPUs as the \
         server and their reading is inside the latency, as is any other load on the machine (the latency \
         figures vary by 2x from run to run on a busy machine); RSS includes allocator slack and the \
         store's cache; a debug build is much slower and larger than a release build"
    );
    Ok(0)
}

// ----- memory per parked run ---------------------------------------------------------------

/// Resident set size and its peak, in KiB, from `/proc/self/status`.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Read and write system calls of this process so far (`syscr`, `syscw` of `/proc/self/io`;
/// zero where that file is missing).
fn io_syscalls() -> (u64, u64) {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field =
        |name: &str| io.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    (field("syscr:"), field("syscw:"))
}

/// Hands the allocator's free memory back to the system; the RSS afterwards, in KiB.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code, reason = "malloc_trim(3): glibc's, no safe wrapper")]
fn trimmed() -> Option<u64> {
    // SAFETY: malloc_trim only releases free heap pages.
    unsafe { libc::malloc_trim(0) };
    Some(rss_kib().0)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trimmed() -> Option<u64> {
    None
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Starts `n` runs as the owner, returning their ids.
async fn start_runs(state: &AppState, n: usize) -> Result<Vec<String>> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let start = StartRun { task: format!("parked run {i}"), ..Default::default() };
        let started = steward_server::runs::start(state, OWNER, start)
            .await
            .map_err(|e| anyhow::anyhow!("starting a run: {e:?}"))?;
        ids.push(started.id);
    }
    Ok(ids)
}

/// Waits until each run in `ids` has a pending approval.
async fn wait_parked(state: &AppState, ids: &[String], limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    let mut waiting: Vec<&String> = ids.iter().collect();
    while !waiting.is_empty() {
        let mut still = Vec::with_capacity(waiting.len());
        for id in waiting {
            match state.live.get(id) {
                Some(run) if !run.pending_approvals().is_empty() => {}
                Some(_) => still.push(id),
                None => bail!("run {id} ended before asking for approval"),
            }
        }
        waiting = still;
        if waiting.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            bail!("{} runs still had no pending approval after {:?}", waiting.len(), limit);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Cancels every run through the cancel path and waits until none is live.
async fn cancel_all(state: &AppState, ids: &[String]) -> Result<Duration> {
    let started = Instant::now();
    for id in ids {
        steward_server::runs::cancel(state, OWNER, id).await.map_err(|e| anyhow::anyhow!("cancelling {id}: {e:?}"))?;
    }
    while !state.live.is_empty() {
        if started.elapsed() > Duration::from_secs(600) {
            bail!("{} runs were still live ten minutes after being cancelled", state.live.len());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(started.elapsed())
}

async fn bench_parked(n: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let scenario = Scenario {
        rounds: vec![
            Round { tool_calls: vec![create_call("parked.txt")], ..Default::default() },
            Round { text: Some("done".into()), ..Default::default() },
        ],
    };
    let state = server(dir.path(), scenario, 3, n.max(1)).await?;
    // Warm up: one run parked and cancelled, so lazily built state (the store's statements,
    // the policy's caches, the runtime's buffers) is not counted per run.
    let warm = start_runs(&state, 1).await?;
    wait_parked(&state, &warm, Duration::from_secs(60)).await?;
    cancel_all(&state, &warm).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let (idle, _) = rss_kib();
    let cpu_before = cpu_time();
    let started = Instant::now();
    let ids = start_runs(&state, n).await?;
    wait_parked(&state, &ids, Duration::from_secs(1800)).await?;
    let to_park = started.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_before);
    // Let transient buffers of the start burst go before reading the figure.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (parked, peak) = rss_kib();
    let runs_kib = parked.saturating_sub(idle);
    let per_run = runs_kib as f64 / n as f64;
    let at_target = per_run * TARGET_RUNS as f64 / 1024.0;
    println!(
        "parked runs: {n} runs started via steward_server::runs::start (max_running {n}), each waiting on the \
         approval of a `create` call; all parked after {:.1} s (CPU {:.0} µs per run, all threads)",
        to_park.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "parked runs: RSS {:.1} MiB idle server -> {:.1} MiB with {n} parked (peak {:.1} MiB): {:.1} MiB for the \
         runs, {per_run:.1} KiB per parked run",
        mib(idle),
        mib(parked),
        mib(peak),
        mib(runs_kib)
    );
    let met = at_target <= TARGET_MIB;
    let basis = if n == TARGET_RUNS { "measured".to_string() } else { format!("extrapolated from {n}") };
    println!(
        "parked runs: target {TARGET_RUNS} parked runs in <= {TARGET_MIB:.0} MiB (<= {:.1} KiB each): {} \
         ({at_target:.1} MiB for {TARGET_RUNS}, {basis}; whole process {:.1} MiB)",
        TARGET_MIB * 1024.0 / TARGET_RUNS as f64,
        if met { "met" } else { "MISSED" },
        mib(idle) + at_target
    );
    let cleanup = cancel_all(&state, &ids).await?;
    let (after, _) = rss_kib();
    println!(
        "parked runs: cancelling all {n} (cancel recorded in the store) took {:.2} s ({:.0} µs per run); RSS \
         afterwards {:.1} MiB{}",
        cleanup.as_secs_f64(),
        cleanup.as_secs_f64() * 1e6 / n as f64,
        mib(after),
        trimmed()
            .map(|kib| format!(", {:.1} MiB once the allocator returns its free memory", mib(kib)))
            .unwrap_or_default()
    );
    state.shutdown.cancel();
    state.tasks.close();
    state.tasks.wait().await;
    Ok(())
}

// ----- event latency ------------------------------------------------------------------------

/// Raises the soft open-file limit to the hard limit; returns (before, after).
#[allow(unsafe_code, reason = "getrlimit(2) and setrlimit(2): std has no resource limits")]
fn raise_nofile() -> Result<(u64, u64)> {
    // SAFETY: an all-zero `rlimit` is a valid value of the plain C struct.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: getrlimit only writes into the struct passed, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        bail!("getrlimit: {}", std::io::Error::last_os_error());
    }
    let before = limit.rlim_cur;
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: setrlimit only reads the struct passed, which lives for the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            bail!("setrlimit: {}", std::io::Error::last_os_error());
        }
    }
    Ok((before as u64, limit.rlim_cur as u64))
}

/// A response: status, headers (lowercase names), body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on its own connection.
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<Response> {
    let mut stream = TcpStream::connect(addr).await?;
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()));
    } else {
        request.push_str("\r\n");
    }
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").context("no end of headers in the response")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")) {
        body = dechunk(&body)?;
    }
    Ok(Response { status, headers, body: String::from_utf8_lossy(&body).to_string() })
}

/// Decodes a complete chunked body.
fn dechunk(mut data: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let end = data.windows(2).position(|w| w == b"\r\n").context("bad chunk header")?;
        let size_text = String::from_utf8_lossy(&data[..end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)?;
        data = &data[end + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(data.get(..size).context("short chunk")?);
        data = data.get(size + 2..).context("short chunk")?;
    }
}

fn latency_scenario(chunks: u32, interval_ms: u64) -> Scenario {
    let mut rounds = vec![Round { tool_calls: vec![create_call("latency.txt")], ..Default::default() }];
    for i in 1..=chunks {
        let last = i == chunks;
        rounds.push(Round {
            text: Some(format!("tick {i}\n")),
            delay_ms: Some(interval_ms),
            tool_calls: if last {
                Vec::new()
            } else {
                vec![FakeToolCall {
                    name: "read".into(),
                    arguments: Some(json!({"path": "latency.txt"})),
                    ..Default::default()
                }]
            },
            ..Default::default()
        });
    }
    rounds.push(Round { text: Some("done".into()), ..Default::default() });
    Scenario { rounds }
}

async fn bench_latency(args: &BenchServeArgs, cpus: usize) -> Result<()> {
    let chunks = args.chunks.max(1);
    let clients = args.clients;
    let (before, after) = raise_nofile()?;
    let needed = (clients * 2 + 64) as u64;
    if after < needed {
        bail!("the open-file limit is {after} (hard limit); {clients} clients need about {needed}");
    }
    let dir = tempfile::tempdir()?;
    let state = server(dir.path(), latency_scenario(chunks, args.chunk_interval_ms), chunks + 2, 4).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let served = tokio::spawn(steward_server::serve(state.clone(), listener, stop.clone()));

    // A browser: its owner cookie and CSRF token, then the run.
    let index = http(addr, "GET", "/", &[], None).await?;
    let cookie =
        index.header("set-cookie").and_then(|c| c.split(';').next()).context("GET / set no owner cookie")?.to_string();
    let marker = "name=\"csrf-token\" content=\"";
    let csrf_at = index.body.find(marker).context("no CSRF token on the page")? + marker.len();
    let csrf = index.body.get(csrf_at..csrf_at + 64).context("short CSRF token")?.to_string();
    let auth = [("Cookie", cookie.as_str()), ("X-CSRF-Token", csrf.as_str())];
    let started = http(addr, "POST", "/api/runs", &auth, Some(r#"{"task": "stream ticks"}"#)).await?;
    if started.status != 201 {
        bail!("POST /api/runs answered {}: {}", started.status, started.body);
    }
    let run_id: String = serde_json::from_str::<Value>(&started.body)?["id"].as_str().context("no run id")?.into();
    wait_parked(&state, std::slice::from_ref(&run_id), Duration::from_secs(60)).await?;

    let (rss_before_clients, _) = rss_kib();
    let limit = Duration::from_secs(120) + Duration::from_millis(args.chunk_interval_ms * u64::from(chunks) * 4);
    let mut client_process = ClientProcess::start(addr, &run_id, &cookie, clients, limit, cpus).await?;
    let (rss_connected, _) = rss_kib();

    // Trigger: approve the pending call; the run then streams its chunks.
    let approval = state
        .live
        .get(&run_id)
        .and_then(|run| run.pending_approvals().into_iter().next())
        .context("the run has no pending approval")?;
    let cpu_before = cpu_time();
    let syscalls_before = io_syscalls();
    let stream_started = Instant::now();
    let decided =
        http(addr, "POST", &format!("/api/approvals/{}", approval.id), &auth, Some(r#"{"decision": "approve"}"#))
            .await?;
    if decided.status != 200 {
        bail!("POST /api/approvals answered {}: {}", decided.status, decided.body);
    }
    let report = client_process.report(limit).await?;
    let streamed = stream_started.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_before);
    let syscalls = syscalls_since(syscalls_before);
    stop.cancel();
    let _ = served.await;

    if before < after {
        println!(
            "event latency: open-file limit raised from {before} to {after} (the hard limit) for {clients} clients"
        );
    } else {
        println!("event latency: open-file limit {after} (already the hard limit) for {clients} clients");
    }
    println!(
        "event latency: {clients} clients on GET /api/runs/{{id}}/events (raw HTTP/1.1 over loopback TCP, owner \
         cookie, from a client process of their own with {cpus} threads), all subscribed after {:.2} s (server \
         RSS +{:.1} MiB, {:.1} KiB per open stream); then {chunks} chunks, one per model round, {} ms apart; latency = arrival at the client - the \
         event's `at` (stamped when published, before it is stored and broadcast)",
        client_process.connect_time.as_secs_f64(),
        mib(rss_connected.saturating_sub(rss_before_clients)),
        rss_connected.saturating_sub(rss_before_clients) as f64 / clients as f64,
        args.chunk_interval_ms
    );
    let cost = ServerCost { cpu, syscalls: Some(syscalls), streamed, note: "the run's other events included" };
    print_latencies("event latency", report, clients, chunks, &cost);
    Ok(())
}

/// The floor of the event latency: the same clients and measurement against a minimal
/// server on plain sockets ([`crate::serve_floor`]).
async fn bench_floor(args: &BenchServeArgs, cpus: usize, writers: usize) -> Result<()> {
    let chunks = args.chunks.max(1);
    let clients = args.clients;
    let (_, after) = raise_nofile()?;
    let needed = (clients * 2 + 64) as u64;
    if after < needed {
        bail!("the open-file limit is {after} (hard limit); {clients} clients need about {needed}");
    }
    let interval = Duration::from_millis(args.chunk_interval_ms);
    let floor = crate::serve_floor::Floor::listen(clients, chunks, interval, writers)?;
    let limit = Duration::from_secs(120) + interval * chunks * 4;
    let mut client_process =
        ClientProcess::start(floor.addr, crate::serve_floor::RUN_ID, "", clients, limit, cpus).await?;
    let cpu_before = cpu_time();
    let stream_started = Instant::now();
    floor.start()?;
    let report = client_process.report(limit).await?;
    let streamed = stream_started.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_before);
    tokio::task::spawn_blocking(move || floor.finish()).await??;
    println!(
        "event latency floor: {clients} clients (the same client process, {cpus} threads) on a minimal server of \
         plain blocking sockets (no hyper, no Steward; chunked frames made as the server makes them), all \
         subscribed after {:.2} s; then {chunks} chunks {} ms apart, each written to every socket by {} writer \
         thread(s)",
        client_process.connect_time.as_secs_f64(),
        args.chunk_interval_ms,
        writers.max(1)
    );
    // One `send` per client and tick, by construction (not counted by `/proc/self/io`).
    let cost = ServerCost { cpu, syscalls: None, streamed, note: "the ticks only" };
    print_latencies("event latency floor", report, clients, chunks, &cost);
    Ok(())
}

/// The clients' process (`steward-bench serve-clients`), on the same CPUs as the server.
struct ClientProcess {
    child: tokio::process::Child,
    out: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    /// How long until every client had subscribed.
    connect_time: Duration,
}

impl ClientProcess {
    /// Starts `clients` clients following `run_id` at `addr` with `cookie`, and waits until
    /// every one has subscribed.
    async fn start(
        addr: SocketAddr,
        run_id: &str,
        cookie: &str,
        clients: usize,
        limit: Duration,
        cpus: usize,
    ) -> Result<ClientProcess> {
        let mut child = tokio::process::Command::new(std::env::current_exe()?)
            .args(["serve-clients", "--addr", &addr.to_string(), "--run", run_id])
            .args(["--clients", &clients.to_string(), "--timeout-s", &(limit.as_secs() + 120).to_string()])
            .args(["--threads", &cpus.to_string()])
            .env(crate::serve_clients::COOKIE_VAR, cookie)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting the client process")?;
        let mut out = BufReader::new(child.stdout.take().context("no stdout of the client process")?).lines();
        let connect_started = Instant::now();
        let subscribed = tokio::time::timeout(Duration::from_secs(180), out.next_line())
            .await
            .context("the clients did not subscribe within three minutes")??
            .context("the client process ended early")?;
        let subscribed: usize =
            subscribed.strip_prefix("subscribed ").and_then(|n| n.parse().ok()).context("unexpected client output")?;
        if subscribed < clients {
            bail!("only {subscribed} of {clients} clients subscribed");
        }
        Ok(ClientProcess { child, out, connect_time: connect_started.elapsed() })
    }

    /// The clients' report once the stream has ended (within `limit`).
    async fn report(&mut self, limit: Duration) -> Result<crate::serve_clients::Report> {
        let line = tokio::time::timeout(limit, self.out.next_line())
            .await
            .context("the clients did not finish in time")??
            .context("the client process ended without a report")?;
        let report = serde_json::from_str(&line).context("the clients' report")?;
        let _ = self.child.wait().await;
        Ok(report)
    }
}

/// The read and write system calls made since `before` ([`io_syscalls`]).
fn syscalls_since(before: (u64, u64)) -> (u64, u64) {
    let now = io_syscalls();
    (now.0.saturating_sub(before.0), now.1.saturating_sub(before.1))
}

/// What the server's process spent while the chunks streamed.
struct ServerCost {
    /// CPU time, all threads.
    cpu: Duration,
    /// Read and write system calls (`read`/`write`/`writev` as `/proc/self/io` counts them;
    /// `None` where the writes are `send` calls, which it does not count).
    syscalls: Option<(u64, u64)>,
    /// From the trigger to the clients' report.
    streamed: Duration,
    /// What the figures include.
    note: &'static str,
}

/// Prints the latency figures of `report` (`clients` × `chunks` pairs expected), what the
/// server spent per pair, and whether the target is met.
fn print_latencies(label: &str, report: crate::serve_clients::Report, clients: usize, chunks: u32, cost: &ServerCost) {
    let crate::serve_clients::Report {
        latencies_ms: mut latencies,
        failed,
        unfinished,
        first_error,
        cpu_s,
        events,
        chunks: pieces,
    } = report;
    let expected = clients * chunks as usize;
    let pairs = clients as f64 * f64::from(chunks);
    latencies.sort_by(f64::total_cmp);
    let pick =
        |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
    let (p50, p99, max) = (pick(0.5), pick(0.99), pick(1.0));
    println!(
        "{label}: {} of {expected} (client, chunk) pairs received: p50 {p50:.2} ms, p99 {p99:.2} ms, max \
         {max:.2} ms; server CPU {:.1} µs per (client, chunk) pair ({}, {:.1} s), the client process \
         {:.1} µs (all its life)",
        latencies.len(),
        cost.cpu.as_secs_f64() * 1e6 / pairs,
        cost.note,
        cost.streamed.as_secs_f64(),
        cpu_s * 1e6 / pairs
    );
    if let Some((reads, writes)) = cost.syscalls {
        println!(
            "{label}: server system calls per (client, chunk) pair: {:.2} writes, {:.2} reads",
            writes as f64 / pairs,
            reads as f64 / pairs
        );
    }
    let per_client_round = |n: usize| n as f64 / pairs;
    println!(
        "{label}: after subscribing, each client got {:.1} events per chunk round in {:.1} pieces (chunks of the \
         chunked body, one per write of the server)",
        per_client_round(events),
        per_client_round(pieces)
    );
    if failed > 0 || unfinished > 0 {
        println!(
            "{label}: {failed} clients failed, {unfinished} did not see the run complete{}",
            first_error.map(|e| format!(" (first error: {e})")).unwrap_or_default()
        );
    }
    let met = latencies.len() == expected && p99 <= TARGET_P99_MS;
    println!(
        "{label}: target p99 <= {TARGET_P99_MS:.0} ms with {clients} clients, every client sees every chunk: {}",
        if met { "met" } else { "MISSED" }
    );
}
