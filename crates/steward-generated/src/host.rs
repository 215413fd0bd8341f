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

use crate::fetch::{FetchPolicy, http_get};
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
    /// The tool's own folder for `sandbox_write` (created when first written).
    pub write_dir: PathBuf,
    /// Sandbox protections the configuration accepts running without.
    pub accept_weaker: Vec<Protection>,
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
    let mut report =
        StepReport { outcome: Ok(Value::Null), fetched: false, host_calls: Vec::new(), profile: String::new() };
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
        HostCall::HttpGet { url } => {
            report.fetched = true;
            let shown: String = url.chars().take(200).collect();
            match http_get(&url, &host.fetch).await {
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
            let result = sandbox_write(&host.write_dir, &name, &text);
            let shown: String = name.chars().take(80).collect();
            match result {
                Ok(path) => {
                    report.host_calls.push(format!("sandbox_write {shown}: {} bytes", text.len()));
                    HostReply::Ok(Value::String(path))
                }
                Err(e) => {
                    report.host_calls.push(format!("sandbox_write {shown}: refused: {e}"));
                    HostReply::Error(e.to_string())
                }
            }
        }
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
    /// The tool's folder was removed.
    #[error("sandbox_write: the tool folder is gone")]
    FolderGone,
    /// The write failed.
    #[error("sandbox_write: {0}")]
    Io(#[from] std::io::Error),
}

/// Writes `text` to `dir/name` when `name` is a plain file name; the name written.
fn sandbox_write(dir: &Path, name: &str, text: &str) -> Result<String, WriteRefusal> {
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
