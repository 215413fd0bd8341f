//! The parent side of a step: starts the worker confined by steward-sandbox (no network, no
//! writable path, reads limited to the worker program and system libraries, `$HOME` hidden,
//! rlimits), sends the request, performs or refuses each host function, and kills the worker
//! at the deadline.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use steward_sandbox::{ExecRequest, Protection};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use steward_egress::{EgressRecord, Verdict};

use crate::fetch::{FetchError, FetchPolicy, http_get};
use crate::protocol::{FailureKind, HostCall, HostReply, StepMode, StepOutcome, StepRequest, WorkerMessage};

/// Wall-clock limit of one step (SPEC G: 60 s).
pub const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// Interpreter heap limit of one step (SPEC G: 64 MB).
pub const STEP_MEMORY_BYTES: u64 = 64 * 1024 * 1024;

/// Data-segment limit of the worker process: the interpreter's heap plus the program's own.
const PROCESS_MEMORY_HEADROOM: u64 = 192 * 1024 * 1024;

/// Time the worker gets past its own deadline before it is killed.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// Largest file `sandbox_write` writes (bytes).
pub const MAX_WRITE_BYTES: usize = 1024 * 1024;

/// Default quota of one tool's `sandbox_write` folder: total bytes (1 MiB).
pub const DEFAULT_QUOTA_BYTES: u64 = 1024 * 1024;

/// Default quota of one tool's `sandbox_write` folder: number of files.
pub const DEFAULT_QUOTA_FILES: u64 = 100;

/// Longest URL kept of a probe's `http_get` (what the approver is shown).
const SHOWN_URL_CHARS: usize = 300;

/// Most URLs of a stubbed `http_get` kept in a step's report.
const MAX_STUBBED_URLS: usize = 100;

/// Largest line the worker may write (its result or a host request).
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// How to start the worker: a program and its arguments (`steward __tool-worker`, or the
/// `steward-tool-worker` binary).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// Absolute path of the program.
    pub program: PathBuf,
    /// Arguments that make it serve one step on stdio.
    pub args: Vec<String>,
}

/// What one step may use besides the interpreter.
#[derive(Debug, Clone)]
pub struct HostEnv {
    /// What `http_get` may reach.
    pub fetch: FetchPolicy,
    /// How `http_get` is answered: for real, or (a probe before anyone approved the tool) by a
    /// stub that reaches nothing and records the URL asked for.
    pub http: HttpMode,
    /// The tool's own folder for `sandbox_write` (created when first written).
    pub write_dir: PathBuf,
    /// The most the tool's folder may hold.
    pub write_quota: WriteQuota,
    /// Sandbox protections the configuration accepts running without.
    pub accept_weaker: Vec<Protection>,
}

impl HostEnv {
    /// A step that performs `http_get` for real under the default [`FetchPolicy`], writes in
    /// `write_dir` under the default quota, and accepts the sandbox protections `accept_weaker`
    /// lists as missing.
    pub fn live(write_dir: PathBuf, accept_weaker: Vec<Protection>) -> HostEnv {
        HostEnv {
            fetch: FetchPolicy::default(),
            http: HttpMode::Live,
            write_dir,
            write_quota: WriteQuota::default(),
            accept_weaker,
        }
    }
}

/// How a step's `http_get` is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMode {
    /// Performed by [`http_get`] under the step's [`FetchPolicy`].
    Live,
    /// Answered by a stub, `{status: 200, body: "", url, stub: true}`, with no connection
    /// made; the URL is kept in [`StepReport::stubbed_urls`].
    Stub,
}

/// The most one tool's `sandbox_write` folder may hold, counted over the files already there
/// and the one being written (a file written again counts once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteQuota {
    /// Total bytes.
    pub bytes: u64,
    /// Number of files.
    pub files: u64,
}

impl Default for WriteQuota {
    fn default() -> Self {
        WriteQuota { bytes: DEFAULT_QUOTA_BYTES, files: DEFAULT_QUOTA_FILES }
    }
}

/// Limits of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepLimits {
    /// Wall-clock limit.
    pub time: Duration,
    /// Interpreter heap limit in bytes.
    pub memory_bytes: u64,
}

impl Default for StepLimits {
    fn default() -> Self {
        StepLimits { time: STEP_TIMEOUT, memory_bytes: STEP_MEMORY_BYTES }
    }
}

/// What the parent learnt from one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    /// The outcome.
    pub outcome: Result<Value, StepError>,
    /// Whether the step fetched anything (its result is then untrusted).
    pub fetched: bool,
    /// Each host function call, for the audit log: `http_get <url>: <result>`.
    pub host_calls: Vec<String>,
    /// Each `http_get` performed for real, as an egress record (method, host, port, address,
    /// status, bytes each way; never the path or query).
    pub egress: Vec<EgressRecord>,
    /// The URLs a stubbed `http_get` ([`HttpMode::Stub`]) was asked for, each cut to 300
    /// characters, the first 100; nothing was fetched.
    pub stubbed_urls: Vec<String>,
    /// Whether a `sandbox_write` was refused because the folder's quota was reached.
    pub quota_hit: bool,
    /// The sandbox profile the worker ran under.
    pub profile: String,
}

/// Why a step did not produce a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// The interpreter reported a failure (compile error, exception, a limit).
    #[error("{}: {message}", kind.as_str())]
    Failed {
        /// Which.
        kind: FailureKind,
        /// The interpreter's message.
        message: String,
    },
    /// The worker was killed at the deadline (it did not stop by itself).
    #[error("timeout: the worker was killed after {0:?}")]
    Killed(Duration),
    /// The worker ended without an answer (killed by a limit, or crashed).
    #[error("the worker ended without an answer ({status}){stderr}")]
    Died {
        /// Its exit status.
        status: String,
        /// The start of its stderr, if any.
        stderr: String,
    },
    /// The worker could not be started under the sandbox.
    #[error("cannot start the worker: {0}")]
    Start(String),
    /// The worker broke the protocol.
    #[error("worker protocol: {0}")]
    Protocol(String),
    /// The run was cancelled; the worker was killed.
    #[error("cancelled")]
    Cancelled,
}

/// Runs one step: `mode` on `source` with `input`, in a fresh confined worker.
pub async fn run_step(
    worker: &WorkerCommand,
    mode: StepMode,
    source: &str,
    input: &Value,
    limits: StepLimits,
    host: &HostEnv,
    cancel: &CancellationToken,
) -> StepReport {
    let mut report = StepReport {
        outcome: Ok(Value::Null),
        fetched: false,
        host_calls: Vec::new(),
        egress: Vec::new(),
        stubbed_urls: Vec::new(),
        quota_hit: false,
        profile: String::new(),
    };
    report.outcome = step(worker, mode, source, input, limits, host, cancel, &mut report).await;
    report
}

#[allow(clippy::too_many_arguments)]
async fn step(
    worker: &WorkerCommand,
    mode: StepMode,
    source: &str,
    input: &Value,
    limits: StepLimits,
    host: &HostEnv,
    cancel: &CancellationToken,
    report: &mut StepReport,
) -> Result<Value, StepError> {
    let cwd = tempfile::Builder::new()
        .prefix("steward-tool-worker-")
        .tempdir()
        .map_err(|e| StepError::Start(e.to_string()))?;
    let mut argv = vec![worker.program.display().to_string()];
    argv.extend(worker.args.iter().cloned());
    let mut readable: Vec<PathBuf> = vec![worker.program.clone(), cwd.path().to_path_buf()];
    readable.extend(["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"].iter().map(PathBuf::from));
    let request = ExecRequest {
        timeout: limits.time + KILL_GRACE,
        memory_bytes: Some(limits.memory_bytes.saturating_add(PROCESS_MEMORY_HEADROOM)),
        readable: Some(readable),
        // The worker program itself stays visible when it lives beneath the hidden home
        // (`~/.cargo/bin/steward`, a build folder under `~`); nothing else of the home does.
        home_keep: vec![worker.program.clone()],
        accept_weaker: host.accept_weaker.clone(),
        ..ExecRequest::new(argv, cwd.path().to_path_buf())
    };
    let mut confined = steward_sandbox::command(request).map_err(|e| StepError::Start(e.to_string()))?;
    report.profile = confined.profile.join(",");
    confined.command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = confined.spawn().map_err(|e| StepError::Start(e.to_string()))?;
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(StepError::Start("the worker's stdio is not connected".into()));
    };
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + limits.time + KILL_GRACE;
    let step_request = StepRequest {
        mode,
        source: source.to_string(),
        input: input.clone(),
        time_limit_ms: u64::try_from(limits.time.as_millis()).unwrap_or(u64::MAX),
        memory_bytes: limits.memory_bytes,
    };
    let conversation = async {
        write_line(&mut stdin, &step_request).await?;
        let mut lines = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            let n = (&mut lines)
                .take(MAX_LINE_BYTES as u64)
                .read_line(&mut line)
                .await
                .map_err(|e| StepError::Protocol(e.to_string()))?;
            if n == 0 {
                return Ok(None);
            }
            let message: WorkerMessage =
                serde_json::from_str(&line).map_err(|e| StepError::Protocol(format!("unreadable line: {e}")))?;
            match message {
                WorkerMessage::Done(outcome) => return Ok(Some(outcome)),
                WorkerMessage::Host(call) => {
                    let reply = perform(call, host, report).await;
                    write_line(&mut stdin, &reply).await?;
                }
            }
        }
    };
    let ended = tokio::select! {
        ended = tokio::time::timeout_at(deadline, conversation) => ended,
        _ = cancel.cancelled() => {
            let _ = child.kill().await;
            return Err(StepError::Cancelled);
        }
    };
    match ended {
        Err(_) => {
            let _ = child.kill().await;
            Err(StepError::Killed(started.elapsed()))
        }
        Ok(Err(e)) => {
            let _ = child.kill().await;
            Err(e)
        }
        Ok(Ok(Some(StepOutcome::Ok(value)))) => {
            let _ = child.kill().await;
            Ok(value)
        }
        Ok(Ok(Some(StepOutcome::Failed { kind, message }))) => {
            let _ = child.kill().await;
            Err(StepError::Failed { kind, message })
        }
        Ok(Ok(None)) => {
            let status = match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
                Ok(Ok(status)) => describe(status),
                _ => {
                    let _ = child.kill().await;
                    "killed".into()
                }
            };
            let mut text = Vec::new();
            let _ = (&mut stderr).take(2048).read_to_end(&mut text).await;
            let text = String::from_utf8_lossy(&text).trim().to_string();
            Err(StepError::Died { status, stderr: if text.is_empty() { String::new() } else { format!(": {text}") } })
        }
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (_, Some(9)) => "killed (SIGKILL)".into(),
        (_, Some(24)) => "CPU time limit reached (SIGXCPU)".into(),
        (_, Some(signal)) => format!("signal {signal}"),
        (Some(code), _) => format!("exit code {code}"),
        _ => "unknown".into(),
    }
}

async fn write_line<T: serde::Serialize>(stdin: &mut tokio::process::ChildStdin, value: &T) -> Result<(), StepError> {
    let mut line = serde_json::to_vec(value).map_err(|e| StepError::Protocol(e.to_string()))?;
    line.push(b'\n');
    stdin.write_all(&line).await.map_err(|e| StepError::Protocol(format!("cannot write to the worker: {e}")))?;
    stdin.flush().await.map_err(|e| StepError::Protocol(format!("cannot write to the worker: {e}")))
}

/// Performs (or refuses) one host function call.
async fn perform(call: HostCall, host: &HostEnv, report: &mut StepReport) -> HostReply {
    match call {
        HostCall::HttpGet { url } if host.http == HttpMode::Stub => {
            let shown: String = url.chars().take(SHOWN_URL_CHARS).collect();
            report.host_calls.push(format!("http_get {shown}: stubbed, nothing fetched"));
            if report.stubbed_urls.len() < MAX_STUBBED_URLS {
                report.stubbed_urls.push(shown);
            }
            HostReply::Ok(serde_json::json!({ "status": 200, "body": "", "url": url, "stub": true }))
        }
        HostCall::HttpGet { url } => {
            report.fetched = true;
            let shown: String = url.chars().take(200).collect();
            let result = http_get(&url, &host.fetch).await;
            report.egress.push(egress_record(&url, &result));
            match result {
                Ok(result) => {
                    report.host_calls.push(format!(
                        "http_get {shown}: {} ({} bytes)",
                        result.status,
                        result.body.len()
                    ));
                    HostReply::Ok(serde_json::to_value(result).unwrap_or(Value::Null))
                }
                Err(e) => {
                    report.host_calls.push(format!("http_get {shown}: refused: {e}"));
                    HostReply::Error(e.to_string())
                }
            }
        }
        HostCall::SandboxWrite { name, text } => {
            let result = sandbox_write(&host.write_dir, &name, &text, host.write_quota);
            let shown: String = name.chars().take(80).collect();
            match result {
                Ok(path) => {
                    report.host_calls.push(format!("sandbox_write {shown}: {} bytes", text.len()));
                    HostReply::Ok(Value::String(path))
                }
                Err(e) => {
                    report.quota_hit |= matches!(e, WriteRefusal::Quota { .. });
                    report.host_calls.push(format!("sandbox_write {shown}: refused: {e}"));
                    HostReply::Error(e.to_string())
                }
            }
        }
    }
}

/// The egress record of one real `http_get`: host and port of the URL asked for (never its
/// path or query), the address that answered, the status or why there was none, and the bytes
/// each way (the request line's URL out, the body in).
fn egress_record(url: &str, result: &Result<crate::fetch::FetchResult, FetchError>) -> EgressRecord {
    let parsed = reqwest::Url::parse(url).ok();
    let host: String = parsed
        .as_ref()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| url.chars().take(255).collect());
    let port = parsed.as_ref().and_then(reqwest::Url::port_or_known_default).unwrap_or(0);
    let (verdict, reason, received, address) = match result {
        Ok(r) => (Verdict::Allowed, format!("http_get: status {}", r.status), r.body.len() as u64, r.address),
        Err(e @ (FetchError::BadUrl { .. } | FetchError::PrivateAddress { .. })) => {
            (Verdict::Refused, e.to_string(), 0, None)
        }
        Err(e) => (Verdict::Failed, e.to_string(), 0, None),
    };
    EgressRecord {
        method: "GET".into(),
        host,
        port,
        address,
        verdict,
        reason,
        bytes_sent: url.len() as u64,
        bytes_received: received,
    }
}

/// Why `sandbox_write` wrote nothing (told to the generated tool).
#[derive(Debug, thiserror::Error)]
enum WriteRefusal {
    /// The name is not a plain file name.
    #[error("sandbox_write refused `{0}`: a plain file name of letters, digits, . _ - only")]
    NotPlain(String),
    /// The text is too long.
    #[error("sandbox_write refused `{0}`: more than {MAX_WRITE_BYTES} bytes")]
    TooLarge(String),
    /// Something other than a regular file is at that name (a link placed there).
    #[error("sandbox_write refused `{0}`: not a regular file")]
    NotAFile(String),
    /// The folder's quota would be exceeded.
    #[error(
        "sandbox_write refused `{name}`: the tool's folder quota ({quota_bytes} bytes, {quota_files} files) is reached"
    )]
    Quota {
        /// The file name.
        name: String,
        /// The quota's bytes.
        quota_bytes: u64,
        /// The quota's files.
        quota_files: u64,
    },
    /// The tool's folder was removed.
    #[error("sandbox_write: the tool folder is gone")]
    FolderGone,
    /// The write failed.
    #[error("sandbox_write: {0}")]
    Io(#[from] std::io::Error),
}

/// Writes `text` to `dir/name` when `name` is a plain file name and the folder stays within
/// `quota`; the name written.
fn sandbox_write(dir: &Path, name: &str, text: &str, quota: WriteQuota) -> Result<String, WriteRefusal> {
    let plain = !name.is_empty()
        && name.len() <= 100
        && name != "."
        && name != ".."
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !plain {
        return Err(WriteRefusal::NotPlain(name.to_string()));
    }
    if text.len() > MAX_WRITE_BYTES {
        return Err(WriteRefusal::TooLarge(name.to_string()));
    }
    std::fs::create_dir_all(dir)?;
    let (bytes, files) = usage(dir, name)?;
    if files + 1 > quota.files || bytes + text.len() as u64 > quota.bytes {
        return Err(WriteRefusal::Quota { name: name.to_string(), quota_bytes: quota.bytes, quota_files: quota.files });
    }
    let path = dir.join(name);
    // Never through a link placed there.
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if !meta.is_file() => return Err(WriteRefusal::NotAFile(name.to_string())),
        Ok(_) | Err(_) => {}
    }
    match std::fs::write(&path, text) {
        Ok(()) => Ok(name.to_string()),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(WriteRefusal::FolderGone),
        Err(e) => Err(WriteRefusal::Io(e)),
    }
}

/// Bytes and number of the entries in `dir`, leaving out `except` (the file about to be
/// written again). Anything that is not a regular file counts as one file of no bytes.
fn usage(dir: &Path, except: &str) -> std::io::Result<(u64, u64)> {
    let (mut bytes, mut files) = (0u64, 0u64);
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name() == std::ffi::OsStr::new(except) {
            continue;
        }
        let meta = entry.metadata()?;
        files += 1;
        if meta.is_file() {
            bytes += meta.len();
        }
    }
    Ok((bytes, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_write_stops_at_the_folder_quota() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("tool");
        let quota = WriteQuota { bytes: 10, files: 2 };
        sandbox_write(&tool, "a", "12345", quota).unwrap();
        // Writing the same file again counts it once.
        sandbox_write(&tool, "a", "123456", quota).unwrap();
        let err = sandbox_write(&tool, "b", "12345", quota).unwrap_err();
        assert!(matches!(err, WriteRefusal::Quota { .. }), "{err}");
        assert!(err.to_string().contains("quota"), "{err}");
        sandbox_write(&tool, "b", "1234", quota).unwrap();
        let err = sandbox_write(&tool, "c", "", quota).unwrap_err();
        assert!(matches!(err, WriteRefusal::Quota { .. }), "{err}");
        assert!(!tool.join("c").exists());
    }
}
