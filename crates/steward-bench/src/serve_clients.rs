//! The browsers of `steward-bench serve`'s event-latency measurement, in a process of their
//! own (`steward-bench serve-clients`, started by `steward-bench serve`), so that the server's
//! process does none of their work: C clients hold `GET /api/runs/{id}/events` open on one
//! run; once all are subscribed the process says so on stdout (`subscribed N`), then every
//! client timestamps the `tick` chunks as they arrive, and at the end the process prints one
//! JSON line with every latency ([`Report`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Event-stream connections opened at once while clients connect.
const CONNECTS_IN_FLIGHT: usize = 64;
/// The variable holding the owner's cookie (kept out of the command line).
pub const COOKIE_VAR: &str = "STEWARD_BENCH_COOKIE";

/// `steward-bench serve-clients` options (started by `steward-bench serve`).
#[derive(Args)]
pub struct ServeClientsArgs {
    /// The server's address.
    #[arg(long)]
    pub addr: SocketAddr,
    /// The run to follow.
    #[arg(long)]
    pub run: String,
    /// Clients.
    #[arg(long)]
    pub clients: usize,
    /// Give up after this many seconds.
    #[arg(long)]
    pub timeout_s: u64,
    /// Worker threads of the clients' runtime.
    #[arg(long)]
    pub threads: usize,
}

/// What the client process reports at the end.
#[derive(serde::Serialize, serde::Deserialize, Default)]
pub struct Report {
    /// Latency of every (client, chunk) pair received, in ms.
    pub latencies_ms: Vec<f64>,
    /// Clients that failed.
    pub failed: usize,
    /// Clients that did not see the run complete.
    pub unfinished: usize,
    /// The first client error.
    pub first_error: Option<String>,
    /// CPU time of the client process, in seconds.
    pub cpu_s: f64,
    /// Events received after subscribing, all clients together.
    pub events: usize,
    /// Pieces the events arrived in after subscribing, all clients together: chunks of a
    /// chunked body (one per write of the server), else reads that returned bytes.
    pub chunks: usize,
}

/// Runs the clients (on a runtime of their own) and reports on stdout.
pub fn run(args: ServeClientsArgs) -> Result<u8> {
    let cookie: Arc<str> = std::env::var(COOKIE_VAR).unwrap_or_default().into();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .thread_name("bench-client")
        .enable_all()
        .build()?;
    let report = runtime.block_on(clients(&args, cookie))?;
    println!("{}", serde_json::to_string(&report)?);
    runtime.shutdown_background();
    Ok(0)
}

async fn clients(args: &ServeClientsArgs, cookie: Arc<str>) -> Result<Report> {
    let ready = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Semaphore::new(CONNECTS_IN_FLIGHT));
    let run_id: Arc<str> = args.run.as_str().into();
    let started = Instant::now();
    let limit = Duration::from_secs(args.timeout_s);
    let handles: Vec<_> = (0..args.clients)
        .map(|_| tokio::spawn(sse_client(args.addr, run_id.clone(), cookie.clone(), ready.clone(), gate.clone())))
        .collect();
    while ready.load(Ordering::SeqCst) < args.clients {
        if started.elapsed() > limit || handles.iter().any(|h| h.is_finished()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("subscribed {}", ready.load(Ordering::SeqCst));
    let mut report = Report::default();
    for handle in handles {
        match tokio::time::timeout(limit.saturating_sub(started.elapsed()), handle).await {
            Ok(Ok(Ok(seen))) => {
                report.unfinished += usize::from(!seen.finished);
                report.latencies_ms.extend(seen.latencies_ms);
                report.events += seen.events;
                report.chunks += seen.chunks;
            }
            Ok(Ok(Err(e))) => {
                report.failed += 1;
                report.first_error.get_or_insert(format!("{e:#}"));
            }
            Ok(Err(e)) => {
                report.failed += 1;
                report.first_error.get_or_insert(e.to_string());
            }
            Err(_) => report.unfinished += 1,
        }
    }
    report.cpu_s = crate::step::cpu_time().as_secs_f64();
    Ok(report)
}

/// Splits a byte stream into Server-Sent Events without allocating per event.
#[derive(Default)]
struct SseParser {
    buf: Vec<u8>,
    pos: usize,
    data: String,
}

impl SseParser {
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete event: (event name, data).
    fn next(&mut self) -> Option<(&str, &str)> {
        let Some(end) = self.buf[self.pos..].windows(2).position(|w| w == b"\n\n") else {
            self.buf.drain(..self.pos);
            self.pos = 0;
            return None;
        };
        let (start, stop) = (self.pos, self.pos + end);
        self.pos = stop + 2;
        let block = std::str::from_utf8(&self.buf[start..stop]).unwrap_or("");
        let mut name = "";
        self.data.clear();
        for line in block.split('\n') {
            let Some((field, value)) = line.split_once(':') else { continue };
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => name = value,
                "data" => {
                    if !self.data.is_empty() {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                }
                _ => {}
            }
        }
        Some((name, &self.data))
    }
}

/// The publication time of a `stage_chunk` event whose text starts with `tick `, read
/// without parsing the whole event.
fn tick_at(data: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    if !data.contains("\"text\":\"tick ") {
        return None;
    }
    let at = data.find("\"at\":\"")? + 6;
    let end = at + data[at..].find('"')?;
    chrono::DateTime::parse_from_rfc3339(&data[at..end]).ok().map(|t| t.with_timezone(&chrono::Utc))
}

/// What one client saw.
#[derive(Default)]
struct Seen {
    /// Latency of each `tick` chunk, in ms.
    latencies_ms: Vec<f64>,
    /// True when the stream ended with the run's terminal event.
    finished: bool,
    /// Events received after subscribing.
    events: usize,
    /// Pieces they arrived in (see [`Report::chunks`]).
    chunks: usize,
}

/// One browser following the run: subscribes (counted in `ready` once the stored
/// `tool_approval_required` event arrived, which the server sends after subscribing it to the
/// live events), then timestamps every `tick` chunk on arrival.
async fn sse_client(
    addr: SocketAddr,
    run_id: Arc<str>,
    cookie: Arc<str>,
    ready: Arc<AtomicUsize>,
    gate: Arc<tokio::sync::Semaphore>,
) -> Result<Seen> {
    let permit = gate.acquire_owned().await?;
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let mut stream = BufReader::new(stream);
    let request = format!(
        "GET /api/runs/{run_id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nAccept: text/event-stream\r\n\r\n"
    );
    stream.get_mut().write_all(request.as_bytes()).await?;
    let mut line = String::new();
    stream.read_line(&mut line).await?;
    if line.split_whitespace().nth(1) != Some("200") {
        bail!("event stream answered {}", line.trim());
    }
    let mut chunked = false;
    loop {
        line.clear();
        if stream.read_line(&mut line).await? == 0 || line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    drop(permit);
    let mut parser = SseParser::default();
    let mut seen = Seen::default();
    let mut subscribed = false;
    let mut payload = Vec::new();
    loop {
        if chunked {
            line.clear();
            if stream.read_line(&mut line).await? == 0 {
                break;
            }
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)?;
            if size == 0 {
                break;
            }
            payload.resize(size + 2, 0);
            stream.read_exact(&mut payload).await?;
            parser.push(&payload[..size]);
        } else {
            let buf = stream.fill_buf().await?;
            if buf.is_empty() {
                break;
            }
            parser.push(buf);
            let n = buf.len();
            stream.consume(n);
        }
        let arrived = chrono::Utc::now();
        seen.chunks += usize::from(subscribed);
        while let Some((name, data)) = parser.next() {
            seen.events += usize::from(subscribed);
            match name {
                "tool_approval_required" if !subscribed => {
                    subscribed = true;
                    ready.fetch_add(1, Ordering::SeqCst);
                }
                "stage_chunk" => {
                    if let Some(at) = tick_at(data) {
                        let micros = (arrived - at).num_microseconds().unwrap_or(i64::MAX);
                        seen.latencies_ms.push(micros as f64 / 1000.0);
                    }
                }
                "run_completed" | "run_failed" | "run_cancelled" => {
                    seen.finished = name == "run_completed";
                    return Ok(seen);
                }
                _ => {}
            }
        }
    }
    Ok(seen)
}
