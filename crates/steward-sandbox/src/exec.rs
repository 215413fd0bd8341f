//! Spawning, watching and killing the confined process.

use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::egress::{self, Forwarder, Handover};
use crate::env::{ENV_NEVER_PASSED, child_env};
use crate::limits::ChildSetup;
use crate::plan::{Host, plan};
use crate::program::ExecImage;
use crate::shell;
use crate::{ExecOutput, ExecRequest, SandboxError};

/// How long the output readers may keep going after the process group was killed (a process
/// that left the group can hold the pipes open); after that the output is cut.
const READER_GRACE: Duration = Duration::from_secs(2);

/// Runs `req` confined and waits for it.
///
/// Before anything runs: the request is checked, a shell argv is rewritten to a non-login,
/// no-startup-file invocation (or refused, see [`ExecRequest::argv`]), and every protection
/// is planned; a required one that this machine cannot enforce refuses the call unless
/// `req.accept_weaker` lists it.
///
/// The child gets: an environment of only the allow-listed parent variables
/// ([`crate::DEFAULT_ENV_ALLOW`], `LC_*`, `req.env_allow`, never [`crate::ENV_NEVER_PASSED`])
/// plus `req.env_set`; null stdin; its own process group; mount and PID namespaces of its own
/// (`req.mask` covered, `$HOME` empty unless `req.hide_home` is false, `req.read_only`
/// read-only, a fresh `/proc`; the program is PID 2 under a small init, and when it ends the
/// namespace and everything in it ends too); `RLIMIT_CORE` 0, `RLIMIT_CPU` from the timeout,
/// `RLIMIT_DATA` from `memory_bytes` (none when `None`); unless `req.network`, a fresh network
/// namespace (and Landlock TCP denial from ABI 4), whose only way out with
/// `req.egress_proxy` is the proxy (see [`ExecRequest::egress_proxy`]); `no_new_privs`; a
/// Landlock ruleset leaving only `req.writable` (and [`crate::WRITABLE_DEVICES`]) writable;
/// and the seccomp filter of [`crate::SECCOMP_DENIED`]. When the timeout (at most
/// [`crate::MAX_LIFETIME`]) runs out or `cancel` fires, the whole group is killed with SIGKILL
/// and reaped, which ends the PID namespace; the group is also killed once the main process
/// exits.
///
/// Errors: [`SandboxError::InvalidRequest`], [`SandboxError::CannotEnforce`] (nothing was
/// run), [`SandboxError::Spawn`], [`SandboxError::Io`], and [`SandboxError::Cancelled`]
/// after the group was killed. A timeout is not an error: `timed_out` is set.
pub async fn run(req: ExecRequest, cancel: CancellationToken) -> Result<ExecOutput, SandboxError> {
    run_with_parent_env(req, cancel, std::env::vars_os().collect(), &Host::detect()).await
}

/// [`run`] with the parent environment and the machine's abilities given explicitly (the
/// doctor plants a variable this way without touching the process environment; tests
/// describe a weaker machine).
pub(crate) async fn run_with_parent_env(
    req: ExecRequest,
    cancel: CancellationToken,
    parent_env: Vec<(OsString, OsString)>,
    host: &Host,
) -> Result<ExecOutput, SandboxError> {
    let max_output_bytes = req.max_output_bytes;
    let timeout = req.timeout.min(crate::MAX_LIFETIME);
    let memory_bytes = req.memory_bytes;
    let mut prepared = prepare(req, parent_env, host)?;
    prepared.command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let ConfinedCommand { command: mut cmd, profile: parts, program, confining, ruleset, cpu_seconds, egress } =
        prepared;
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|source| spawn_error(&program, confining, source))?;
    drop(ruleset);
    let group = GroupKiller { pgid: child.id().and_then(|id| i32::try_from(id).ok()) };
    // The child's proxy port, forwarded until the call ends (dropping `group` kills the child
    // if this fails).
    let _forwarder = match egress {
        Some((handover, proxy)) => Some(Forwarder::start(handover.receive()?, proxy)?),
        None => None,
    };
    let stdout = Reader::start(child.stdout.take(), max_output_bytes);
    let stderr = Reader::start(child.stderr.take(), max_output_bytes);

    enum End {
        Exited(std::io::Result<ExitStatus>),
        TimedOut,
        Cancelled,
    }
    let end = tokio::select! {
        biased;
        _ = cancel.cancelled() => End::Cancelled,
        waited = tokio::time::timeout(timeout, child.wait()) => match waited {
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

    let mut profile = parts;
    let memory = memory_bytes.map_or_else(|| "unlimited".to_string(), |b| b.to_string());
    profile.push(format!("rlimits(core=0,cpu={cpu_seconds}s,data={memory})"));
    profile.push("pgroup".into());
    profile.push(format!("timeout={}ms", timeout.as_millis()));
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

/// A `Command` set up to run confined, not yet started: what [`command`] returns.
#[derive(Debug)]
pub struct ConfinedCommand {
    /// The program with its arguments, working directory, scrubbed environment, own process
    /// group, `kill_on_drop`, and the confinement applied between `fork` and `exec`. Set its
    /// stdio, then spawn it; a failed spawn whose error is `EPERM`, `EINVAL`, `ENOSPC`,
    /// `EUSERS` or `ENOSYS` means the confinement could not be put in place.
    pub command: Command,
    /// What is enforced, in [`ExecOutput::profile`]'s terms (without the rlimits, process
    /// group and timeout parts, which [`run`] adds).
    pub profile: Vec<String>,
    program: String,
    confining: bool,
    /// The Landlock ruleset: must stay open until the spawn has returned.
    ruleset: Option<std::os::fd::OwnedFd>,
    cpu_seconds: u64,
    /// With an egress proxy: the socket pair the child hands its listener over, and the
    /// proxy's socket ([`run`] forwards between them).
    egress: Option<(Handover, PathBuf)>,
}

impl ConfinedCommand {
    /// Spawns the command and closes the parent's copy of the Landlock ruleset. Errors:
    /// [`SandboxError::CannotEnforce`] when the confinement failed in the child,
    /// [`SandboxError::Spawn`] otherwise.
    pub fn spawn(mut self) -> Result<tokio::process::Child, SandboxError> {
        let child = self.command.spawn().map_err(|source| spawn_error(&self.program, self.confining, source))?;
        drop(self.ruleset.take());
        Ok(child)
    }
}

/// Prepares `req` for a long-running child that the caller talks to itself (an MCP stdio
/// server): the same checks, planning and confinement as [`run`], with `req.timeout` setting
/// only `RLIMIT_CPU` (the caller ends the process). `req.max_output_bytes` is not used.
/// `req.egress_proxy` is refused: only [`run`] forwards the child's proxy port.
/// Errors: [`SandboxError::InvalidRequest`], [`SandboxError::CannotEnforce`].
pub fn command(req: ExecRequest) -> Result<ConfinedCommand, SandboxError> {
    if req.egress_proxy.is_some() {
        return Err(SandboxError::InvalidRequest(
            "an egress proxy is forwarded only for a call run to its end, not for a long-running child".into(),
        ));
    }
    prepare(req, std::env::vars_os().collect(), &Host::detect())
}

fn prepare(
    req: ExecRequest,
    parent_env: Vec<(OsString, OsString)>,
    host: &Host,
) -> Result<ConfinedCommand, SandboxError> {
    validate(&req)?;
    let mut req = req;
    req.timeout = req.timeout.min(crate::MAX_LIFETIME);
    let home = parent_env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| std::path::PathBuf::from(v));
    let (argv, rewritten) = match shell::non_login(&req.argv) {
        Ok(Some(argv)) => (argv, true),
        Ok(None) => (req.argv.clone(), false),
        Err(reason) => return Err(SandboxError::InvalidRequest(format!("refused shell invocation: {reason}"))),
    };
    let plan = plan(&req, host, home.as_deref())?;
    let cpu_seconds = req.timeout.as_secs() + u64::from(req.timeout.subsec_nanos() > 0) + 1;
    let landlock_fd = plan.confinement.as_ref().map(|c| c.fd.as_raw_fd());
    let confining = plan.net.is_some() || plan.confinement.is_some() || plan.ns.is_some() || plan.seccomp.is_some();
    let handover = match &req.egress_proxy {
        Some(_) => Some(Handover::new()?),
        None => None,
    };
    let program = argv[0].clone();
    let mut env_set = req.env_set.clone();
    if req.egress_proxy.is_some() {
        env_set.extend(egress::proxy_env());
    }
    let env = child_env(parent_env, &req.env_allow, &env_set);
    let setup = ChildSetup::new(plan.net, plan.ns, cpu_seconds, req.memory_bytes, landlock_fd, plan.seccomp)
        .with_egress(handover.as_ref().map(Handover::child_end))
        .with_program(ExecImage::new(&argv, &env, req.exec_failure_exits)?)?;

    let mut cmd = Command::new(&program);
    cmd.args(&argv[1..]).current_dir(&req.cwd).env_clear().envs(env).process_group(0).kill_on_drop(true);
    // SAFETY: `ChildSetup::apply` only makes async-signal-safe calls (unshare, clone, mount,
    // open, write, close, waitpid, socket, ioctl, bind, listen, sendmsg, getrlimit,
    // setrlimit, prctl, landlock_restrict_self, seccomp, sigaction, sigprocmask, stat, access,
    // execve, _exit) on data prepared before the fork (the program's argv, environment and
    // start stack included); the Landlock fd stays open in the returned `ConfinedCommand`
    // until `spawn` has returned.
    unsafe {
        cmd.pre_exec(move || setup.apply());
    }
    let mut profile = vec![
        "env-scrub".to_string(),
        "nnp".into(),
        plan.net_profile,
        plan.fs_profile,
        plan.ns_profile,
        plan.seccomp_profile,
    ];
    if rewritten {
        profile.push("shell=non-login".into());
    }
    Ok(ConfinedCommand {
        command: cmd,
        profile,
        program,
        confining,
        ruleset: plan.confinement.map(|c| c.fd),
        cpu_seconds,
        egress: handover.zip(req.egress_proxy),
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
    if let Some((name, _)) = req.env_set.iter().find(|(k, _)| ENV_NEVER_PASSED.contains(&k.as_str())) {
        return invalid(&format!("env_set may not set {name}: it makes a shell source a file"));
    }
    if req.timeout.is_zero() {
        return invalid("timeout is zero");
    }
    if let Some(proxy) = &req.egress_proxy {
        if req.network {
            return invalid("an egress proxy and `network = true` exclude each other");
        }
        // `sockaddr_un.sun_path` holds 108 bytes, including the terminating NUL.
        if !proxy.is_absolute() || proxy.as_os_str().len() >= 108 {
            return invalid("the egress proxy socket must be an absolute path shorter than 108 bytes");
        }
    }
    Ok(())
}

/// A failed spawn is a refusal to confine when the child's setup (namespace, rlimits,
/// `no_new_privs`, Landlock) is what failed. A failed `execve` in the namespaces comes
/// marked (see `namespaces::exec_errno`) and is a failed spawn whatever its errno; without
/// namespaces the errno alone cannot say which step.
fn spawn_error(program: &str, confining: bool, source: std::io::Error) -> SandboxError {
    if let Some(errno) = source.raw_os_error().and_then(crate::namespaces::exec_errno) {
        return SandboxError::Spawn { program: program.to_string(), source: std::io::Error::from_raw_os_error(errno) };
    }
    let confinement_errno =
        matches!(source.raw_os_error(), Some(libc::EPERM | libc::EINVAL | libc::ENOSPC | libc::EUSERS | libc::ENOSYS));
    if confining && confinement_errno {
        SandboxError::CannotEnforce {
            what: "confinement",
            reason: format!("the child's sandbox setup failed before exec: {source}"),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Protection;
    use crate::limits::net_mode;

    /// A failed `execve` in the namespaces is the program's failure, whatever its errno; the
    /// same errno from the confinement refuses the call.
    #[test]
    fn a_failed_execve_is_a_failed_spawn_whatever_its_errno() {
        for errno in [libc::EPERM, libc::EINVAL, libc::ENOSPC, libc::EUSERS, libc::ENOSYS, libc::ENOENT] {
            let marked = std::io::Error::from_raw_os_error(crate::namespaces::EXEC_FAILED_BASE + errno);
            match spawn_error("prog", true, marked) {
                SandboxError::Spawn { source, .. } => assert_eq!(source.raw_os_error(), Some(errno)),
                other => panic!("{other}"),
            }
            let confinement = spawn_error("prog", true, std::io::Error::from_raw_os_error(errno));
            assert_eq!(
                matches!(confinement, SandboxError::CannotEnforce { .. }),
                errno != libc::ENOENT,
                "{confinement}"
            );
        }
    }

    /// A machine without Landlock: the command must not run at all unless the request
    /// accepts the weaker profile, and then the downgrade is in the profile.
    #[tokio::test]
    async fn unenforceable_fs_confinement_refuses_before_running_on_netns() {
        let net = steward_peers::needs::available(steward_peers::Need::Netns, net_mode());
        let dir = std::env::temp_dir().join(format!("steward-refusal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let marker = dir.join("ran");
        let _ = std::fs::remove_file(&marker);
        let weak = Host {
            landlock_abi: Err(crate::unavailable::LandlockUnavailable::NotBuiltIn),
            net: Ok(net),
            ns: crate::namespaces::ns_caps(),
            seccomp: Ok(()),
        };
        let argv = vec!["sh".into(), "-c".into(), format!("touch {}", marker.display())];
        let req = ExecRequest { writable: vec![dir.clone()], ..ExecRequest::new(argv, dir.clone()) };
        let env = std::env::vars_os().collect::<Vec<_>>();

        let err = run_with_parent_env(req.clone(), CancellationToken::new(), env.clone(), &weak).await.unwrap_err();
        assert!(matches!(err, SandboxError::CannotEnforce { what: "fs_confine", .. }), "{err}");
        assert!(!marker.exists(), "the command ran although it was refused");

        let accepted = ExecRequest { accept_weaker: vec![Protection::FsConfine], ..req };
        let out = run_with_parent_env(accepted, CancellationToken::new(), env, &weak).await.unwrap();
        assert_eq!(out.exit_code, Some(0));
        assert!(marker.exists());
        assert!(out.profile.contains("fs=unenforced(accepted)"), "{}", out.profile);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The parent's `$HOME` is an empty folder in the child: its secrets are gone even by
    /// absolute path, while the working directory, writable and kept paths beneath it stay.
    #[tokio::test]
    async fn home_is_empty_except_the_paths_the_call_needs() {
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().canonicalize().unwrap();
        for dir in [".ssh", ".aws", "proj/out", "tools/bin", ".config/gh"] {
            std::fs::create_dir_all(home_path.join(dir)).unwrap();
        }
        std::fs::write(home_path.join(".ssh/id_rsa"), "HOME-PRIVATE-KEY").unwrap();
        std::fs::write(home_path.join(".config/gh/hosts.yml"), "oauth_token: HOME-GH-TOKEN").unwrap();
        std::fs::write(home_path.join("proj/readme"), "project file").unwrap();
        std::fs::write(home_path.join("tools/bin/tool"), "kept tool").unwrap();
        let home_arg = home_path.display().to_string();
        let script = r#"cat "$1/.ssh/id_rsa"; cat ~/.config/gh/hosts.yml; ls -A "$1"; cat readme; cat "$1/tools/bin/tool"
            echo made > out/file && echo wrote-out"#;
        let argv = ["sh", "-c", script, "sh", home_arg.as_str()].map(String::from).to_vec();
        let req = ExecRequest {
            writable: vec![home_path.join("proj/out")],
            home_keep: vec![home_path.join("tools/bin")],
            // Beneath the hidden home: not there to freeze, which is no error.
            read_only: vec![home_path.join(".aws")],
            env_set: vec![("HOME".into(), home_arg.clone())],
            ..ExecRequest::new(argv, home_path.join("proj"))
        };
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os().filter(|(k, _)| k != "HOME").collect();
        env.push(("HOME".into(), home_arg.clone().into()));
        let out =
            run_with_parent_env(req.clone(), CancellationToken::new(), env.clone(), &Host::detect()).await.unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("HOME-PRIVATE-KEY") && !stdout.contains("HOME-GH-TOKEN"), "{stdout}");
        assert_eq!(stdout.lines().filter(|l| *l == "proj" || *l == "tools").count(), 2, "{stdout}");
        assert!(!stdout.lines().any(|l| l == ".ssh" || l == ".aws" || l == ".config"), "{stdout}");
        assert!(
            stdout.contains("project file") && stdout.contains("kept tool") && stdout.contains("wrote-out"),
            "{stdout}"
        );
        assert!(out.profile.contains("home=empty"), "{}", out.profile);
        assert_eq!(std::fs::read_to_string(home_path.join("proj/out/file")).unwrap(), "made\n");

        // Control: with the home shown, the key is there.
        let shown = ExecRequest { hide_home: false, ..req };
        let out = run_with_parent_env(shown, CancellationToken::new(), env, &Host::detect()).await.unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).contains("HOME-PRIVATE-KEY"));
        assert!(out.profile.contains("home=visible"), "{}", out.profile);
    }
}
