//! Spawning, watching and killing the confined process.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::env::child_env;
use crate::limits::{ChildSetup, net_mode};
use crate::{ExecOutput, ExecRequest, SandboxError};

/// How long the output readers may keep going after the process group was killed (a process
/// that left the group can hold the pipes open); after that the output is cut.
const READER_GRACE: Duration = Duration::from_secs(2);

/// Runs `req` confined and waits for it.
///
/// The child gets: an environment of only the allow-listed parent variables
/// ([`crate::DEFAULT_ENV_ALLOW`], `LC_*`, `req.env_allow`) plus `req.env_set`; null stdin; its
/// own process group; `RLIMIT_CORE` 0, `RLIMIT_CPU` from the timeout, `RLIMIT_AS` from
/// `memory_bytes`; and, unless `req.network`, a fresh network namespace. When the timeout
/// runs out or `cancel` fires, the whole group is killed with SIGKILL and reaped; the group
/// is also killed once the main process exits, so background children never outlive a call.
///
/// Errors: [`SandboxError::InvalidRequest`], [`SandboxError::CannotEnforce`] (nothing was
/// run), [`SandboxError::Spawn`], [`SandboxError::Io`], and [`SandboxError::Cancelled`]
/// after the group was killed. A timeout is not an error: `timed_out` is set.
pub async fn run(req: ExecRequest, cancel: CancellationToken) -> Result<ExecOutput, SandboxError> {
    validate(&req)?;
    let net = if req.network {
        None
    } else {
        Some(net_mode().map_err(|reason| SandboxError::CannotEnforce { what: "network isolation", reason })?)
    };
    let cpu_seconds = req.timeout.as_secs() + u64::from(req.timeout.subsec_nanos() > 0) + 1;
    let setup = ChildSetup::new(net, cpu_seconds, req.memory_bytes);
    let program = req.argv[0].clone();

    let mut cmd = Command::new(&program);
    cmd.args(&req.argv[1..])
        .current_dir(&req.cwd)
        .env_clear()
        .envs(child_env(std::env::vars_os(), &req.env_allow, &req.env_set))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: `ChildSetup::apply` only makes async-signal-safe calls (unshare, open, write,
    // close, getrlimit, setrlimit) on data prepared before the fork.
    unsafe {
        cmd.pre_exec(move || setup.apply());
    }

    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|source| spawn_error(&program, net.is_some(), source))?;
    let group = GroupKiller { pgid: child.id().and_then(|id| i32::try_from(id).ok()) };
    let stdout = Reader::start(child.stdout.take(), req.max_output_bytes);
    let stderr = Reader::start(child.stderr.take(), req.max_output_bytes);

    enum End {
        Exited(std::io::Result<ExitStatus>),
        TimedOut,
        Cancelled,
    }
    let end = tokio::select! {
        biased;
        _ = cancel.cancelled() => End::Cancelled,
        waited = tokio::time::timeout(req.timeout, child.wait()) => match waited {
            Ok(status) => End::Exited(status),
            Err(_) => End::TimedOut,
        },
    };
    group.kill();
    let (status, timed_out) = match end {
        End::Exited(status) => (status?, false),
        End::TimedOut => (child.wait().await?, true),
        End::Cancelled => {
            child.wait().await?;
            return Err(SandboxError::Cancelled);
        }
    };
    let ((stdout, out_cut), (stderr, err_cut)) = tokio::join!(stdout.finish(), stderr.finish());

    let mut profile = vec!["env-scrub".to_string()];
    profile.push(net.map_or("net=allowed", |m| m.profile()).to_string());
    profile.push("rlimits".into());
    profile.push("pgroup".into());
    profile.push(format!("timeout={}ms", req.timeout.as_millis()));
    Ok(ExecOutput {
        exit_code: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        timed_out,
        truncated: out_cut || err_cut,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        profile: profile.join(","),
    })
}

fn validate(req: &ExecRequest) -> Result<(), SandboxError> {
    let invalid = |m: &str| Err(SandboxError::InvalidRequest(m.to_string()));
    match req.argv.first() {
        None => return invalid("argv is empty"),
        Some(p) if p.is_empty() => return invalid("argv[0] is empty"),
        _ => {}
    }
    if req.argv.iter().any(|a| a.contains('\0')) {
        return invalid("an argument contains a NUL byte");
    }
    if req.env_set.iter().any(|(k, v)| k.is_empty() || k.contains(['=', '\0']) || v.contains('\0')) {
        return invalid("env_set has an empty name, or a name with `=` or NUL, or a value with NUL");
    }
    if !req.cwd.is_dir() {
        return invalid(&format!("working directory {} does not exist", req.cwd.display()));
    }
    if req.timeout.is_zero() {
        return invalid("timeout is zero");
    }
    Ok(())
}

/// A failed spawn is a refusal to confine when the namespace call was what failed.
fn spawn_error(program: &str, isolating: bool, source: std::io::Error) -> SandboxError {
    let confinement_errno =
        matches!(source.raw_os_error(), Some(libc::EPERM | libc::EINVAL | libc::ENOSPC | libc::EUSERS | libc::ENOSYS));
    if isolating && confinement_errno {
        SandboxError::CannotEnforce { what: "network isolation", reason: source.to_string() }
    } else {
        SandboxError::Spawn { program: program.to_string(), source }
    }
}

/// Kills a process group with SIGKILL.
struct GroupKiller {
    pgid: Option<i32>,
}

impl GroupKiller {
    fn kill(&self) {
        if let Some(pgid) = self.pgid.filter(|&p| p > 1) {
            // SAFETY: plain syscall; ESRCH (group already gone) is fine.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupKiller {
    /// If `run` is dropped midway (its caller gave up), the group must not live on.
    fn drop(&mut self) {
        self.kill();
    }
}

/// Output captured so far: `(bytes, truncated)`.
type Captured = Arc<Mutex<(Vec<u8>, bool)>>;

/// A task reading one output stream into a shared buffer.
struct Reader {
    captured: Captured,
    task: tokio::task::JoinHandle<()>,
}

impl Reader {
    /// Starts reading `stream` to its end, keeping at most `cap` bytes.
    fn start(stream: Option<impl AsyncRead + Unpin + Send + 'static>, cap: usize) -> Reader {
        let captured: Captured = Arc::default();
        let sink = Arc::clone(&captured);
        let task = tokio::spawn(async move {
            let Some(mut stream) = stream else { return };
            let mut buf = [0u8; 8192];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut guard = sink.lock().unwrap_or_else(PoisonError::into_inner);
                        let room = cap.saturating_sub(guard.0.len());
                        if n > room {
                            guard.1 = true;
                        }
                        guard.0.extend_from_slice(&buf[..n.min(room)]);
                    }
                }
            }
        });
        Reader { captured, task }
    }

    /// Waits briefly for the end of the stream and returns what was kept. A reader that is
    /// still blocked (a process escaped the group and holds the pipe) is stopped and the
    /// output counts as cut.
    async fn finish(self) -> (Vec<u8>, bool) {
        let abort = self.task.abort_handle();
        let ended = tokio::time::timeout(READER_GRACE, self.task).await.is_ok_and(|joined| joined.is_ok());
        if !ended {
            abort.abort();
        }
        let mut guard = self.captured.lock().unwrap_or_else(PoisonError::into_inner);
        let (bytes, truncated) = std::mem::take(&mut *guard);
        (bytes, truncated || !ended)
    }
}
