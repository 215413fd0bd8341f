//! `doctor`: checks each protection on this machine by applying it to real child processes
//! and watching whether it holds. Each probe runs a control that must succeed without the
//! protection (so a probe that cannot observe anything reports "not enforced", never a
//! false "enforced"). Probes need `sh`, `bash`, `env`, `cat`, `dd`, `sleep`, `setsid` and
//! `unshare` on the `PATH`, and `/proc`.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use crate::exec::run_with_parent_env;
use crate::plan::Host;
use crate::unavailable::{NsUnavailable, SeccompUnavailable};
use crate::{ExecOutput, ExecRequest, Protection, SandboxError};

/// The outcome of one doctor probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    /// The protection probed.
    pub protection: Protection,
    /// True when a child under the protection was observed to be stopped by it (and the
    /// control without it was not).
    pub enforced: bool,
    /// What was observed, or why the protection could not be checked or enforced.
    pub detail: String,
}

/// Wall-clock limit of each probe's children (generous: the machine may be busy).
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// Data-segment limit of the rlimit probe, and the buffer its child allocates.
const PROBE_MEMORY_BYTES: u64 = 32 * 1024 * 1024;
const PROBE_ALLOC: &str = "bs=64M";

/// Probes every [`Protection`] in [`Protection::ALL`] order, one after another. Each probe
/// accepts the loss of the *other* protections (`accept_weaker`), so one missing protection
/// does not hide the state of the rest.
pub async fn doctor() -> Vec<ProbeResult> {
    let mut results = Vec::with_capacity(Protection::ALL.len());
    for protection in Protection::ALL {
        let outcome = match protection {
            Protection::EnvScrub => env_scrub().await,
            Protection::NetworkDeny => network_deny().await,
            Protection::FsConfine => fs_confine().await,
            Protection::FsMask => fs_mask().await,
            Protection::PidNamespace => pid_namespace().await,
            Protection::Seccomp => seccomp().await,
            Protection::Rlimits => rlimits().await,
            Protection::Timeout => timeout().await,
        };
        let (enforced, detail) = match outcome {
            Ok(detail) => (true, detail),
            Err(detail) => (false, detail),
        };
        results.push(ProbeResult { protection, enforced, detail });
    }
    results
}

/// `Ok(detail)`: enforced; `Err(detail)`: not enforced or not checkable. Both sides are the
/// detail line shown to the user, not an error to handle.
type Probe = Result<String, String>;

/// Why a probe could not set itself up (it then reports the protection as not checkable).
#[derive(Debug, thiserror::Error)]
enum SetupError {
    /// Accepting on the loopback listener failed.
    #[error("accept failed: {0}")]
    Accept(std::io::Error),
    /// A scratch path cannot be passed as a UTF-8 argument.
    #[error("{} is not UTF-8", .0.display())]
    NotUtf8(PathBuf),
}

impl From<SetupError> for String {
    /// The probe's detail text.
    fn from(err: SetupError) -> String {
        err.to_string()
    }
}

fn probe_request(protection: Protection, argv: &[&str]) -> ExecRequest {
    ExecRequest {
        timeout: PROBE_TIMEOUT,
        env_set: vec![("LC_ALL".into(), "C".into())],
        accept_weaker: Protection::ALL.into_iter().filter(|p| *p != protection).collect(),
        ..ExecRequest::new(argv.iter().map(|a| a.to_string()).collect(), std::env::temp_dir())
    }
}

async fn exec(req: ExecRequest) -> Result<ExecOutput, SandboxError> {
    run_with_parent_env(req, CancellationToken::new(), std::env::vars_os().collect(), &Host::detect()).await
}

/// A value no environment holds by chance.
fn unique(tag: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("steward-doctor-{tag}-{}-{nanos}", std::process::id())
}

fn not_run(what: &str, err: &SandboxError) -> String {
    format!("{what} did not run: {err}")
}

async fn env_scrub() -> Probe {
    let name = "STEWARD_DOCTOR_PLANTED_TOKEN";
    let value = unique("env");
    let host = Host::detect();
    let mut parent: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    parent.push((name.into(), value.clone().into()));
    let run_env = |allow: Vec<String>| {
        let req = ExecRequest { env_allow: allow, ..probe_request(Protection::EnvScrub, &["env"]) };
        run_with_parent_env(req, CancellationToken::new(), parent.clone(), &host)
    };
    let control = run_env(vec![name.to_string()]).await.map_err(|e| not_run("the control", &e))?;
    if !String::from_utf8_lossy(&control.stdout).contains(&value) {
        return Err("inconclusive: the control child did not see the planted variable".into());
    }
    let scrubbed = run_env(Vec::new()).await.map_err(|e| not_run("the probe", &e))?;
    let seen = String::from_utf8_lossy(&scrubbed.stdout);
    if scrubbed.exit_code != Some(0) || !seen.contains("PATH=") {
        return Err(format!("inconclusive: `env` exited with {:?}", scrubbed.exit_code));
    }
    if seen.contains(&value) {
        return Err(format!("the planted variable {name} reached the child"));
    }
    Ok(format!("a planted {name} was absent from the child's environment ({})", scrubbed.profile))
}

/// Tries to connect to `port` on loopback; exits 0 when connected.
fn connect_argv(port: u16) -> Vec<String> {
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    ["bash", "-c", script.as_str()].iter().map(|s| s.to_string()).collect()
}

/// True when a connection is waiting on `listener` (non-blocking), after a few short tries.
async fn was_connected(listener: &TcpListener) -> Result<bool, SetupError> {
    for _ in 0..10 {
        match listener.accept() {
            Ok(_) => return Ok(true),
            Err(e) if e.kind() == ErrorKind::WouldBlock => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => return Err(SetupError::Accept(e)),
        }
    }
    Ok(false)
}

async fn network_deny() -> Probe {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot open a loopback listener: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| format!("cannot make the listener non-blocking: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let base = probe_request(Protection::NetworkDeny, &[]);
    let control = ExecRequest { argv: connect_argv(port), network: true, ..base.clone() };
    exec(control).await.map_err(|e| not_run("the control", &e))?;
    if !was_connected(&listener).await? {
        return Err("inconclusive: the control child (bash /dev/tcp) could not reach the listener".into());
    }
    let probe = ExecRequest { argv: connect_argv(port), ..base };
    let out = exec(probe).await.map_err(|e| not_run("the probe", &e))?;
    if was_connected(&listener).await? {
        return Err(format!("a sandboxed child connected to a loopback listener ({})", out.profile));
    }
    Ok(format!("a sandboxed child could not connect to a loopback listener ({})", out.profile))
}

/// Removes the probe directory when dropped.
struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn fs_confine() -> Probe {
    let scratch = ScratchDir(std::env::temp_dir().join(unique("fs")));
    let inside = scratch.0.join("inside");
    let outside = scratch.0.join("outside");
    for dir in [&inside, &outside] {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let script = "echo x > \"$1/file\"; echo x > \"$2/file\"";
    let argv = ["sh", "-c", script, "sh", &path_str(&inside)?, &path_str(&outside)?];
    let req = ExecRequest { writable: vec![inside.clone()], ..probe_request(Protection::FsConfine, &argv) };
    let out = exec(req).await.map_err(|e| not_run("the probe", &e))?;
    let wrote_inside = inside.join("file").exists();
    let wrote_outside = outside.join("file").exists();
    match (wrote_inside, wrote_outside) {
        (true, false) => {
            Ok(format!("a write inside the writable path succeeded and one outside was denied ({})", out.profile))
        }
        (_, true) => Err(format!("a child wrote outside its writable paths ({})", out.profile)),
        (false, false) => {
            Err(format!("inconclusive: the child could not write inside its writable path ({})", out.profile))
        }
    }
}

/// A file in a masked path reads as nothing, and its content is printed without the mask.
async fn fs_mask() -> Probe {
    let scratch = ScratchDir(std::env::temp_dir().join(unique("mask")));
    std::fs::create_dir_all(&scratch.0).map_err(|e| format!("cannot create {}: {e}", scratch.0.display()))?;
    let secret = scratch.0.join(".env");
    let value = unique("secret");
    std::fs::write(&secret, &value).map_err(|e| format!("cannot write {}: {e}", secret.display()))?;
    let argv = ["cat", &path_str(&secret)?];
    let control_req =
        ExecRequest { accept_weaker: Protection::ALL.to_vec(), ..probe_request(Protection::FsMask, &argv) };
    let control = exec(control_req).await.map_err(|e| not_run("the control", &e))?;
    if !String::from_utf8_lossy(&control.stdout).contains(&value) {
        return Err("inconclusive: the control child could not read the unmasked file".into());
    }
    let req = ExecRequest { mask: vec![secret.clone()], ..probe_request(Protection::FsMask, &argv) };
    let out = exec(req).await.map_err(|e| not_run("the probe", &e))?;
    if String::from_utf8_lossy(&out.stdout).contains(&value) {
        return Err(format!("a child read a masked file ({})", out.profile));
    }
    if !out.profile.contains("mntns(") {
        return Err(format!("no mount namespace was made ({})", out.profile));
    }
    Ok(format!("a child could not read a masked file that it reads without the mask ({})", out.profile))
}

/// A process that left the session (`setsid`) and sleeps: without the PID namespace it is
/// still there after its call ended, with it the call's end killed it. Each process is found
/// by a unique word of its command line (`/proc/PID/cmdline`), so the probe does not depend on
/// how fast a busy machine runs it: a survivor sleeps 30 s, far longer than the look takes.
async fn pid_namespace() -> Probe {
    let scratch = ScratchDir(std::env::temp_dir().join(unique("pid")));
    std::fs::create_dir_all(&scratch.0).map_err(|e| format!("cannot create {}: {e}", scratch.0.display()))?;
    let control_word = path_str(&scratch.0.join("control"))?;
    let probe_word = path_str(&scratch.0.join("probe"))?;
    // The detached `sh` (named by the word, its `$0`) says it is running once it has left the
    // session; the call waits for that, so its end cannot catch it still in the call's process
    // group. `; :` keeps `sh` from replacing itself with `sleep`.
    let script = "setsid sh -c ': > \"$0.ready\"; sleep 30; :' \"$1\" </dev/null >/dev/null 2>&1 & \
                  while [ ! -e \"$1.ready\" ]; do sleep 0.05; done";
    let run_one = |word: String, without: bool| {
        let argv = ["sh", "-c", script, "sh", word.as_str()];
        let mut req =
            ExecRequest { writable: vec![scratch.0.clone()], ..probe_request(Protection::PidNamespace, &argv) };
        let host = Host::detect();
        let host = if without {
            req.accept_weaker = Protection::ALL.to_vec();
            Host { ns: Err(NsUnavailable::ForControl), ..host }
        } else {
            host
        };
        async move { run_with_parent_env(req, CancellationToken::new(), std::env::vars_os().collect(), &host).await }
    };
    let _survivors = KillOnDrop(vec![control_word.clone(), probe_word.clone()]);
    let (control, probe) = tokio::join!(run_one(control_word.clone(), true), run_one(probe_word.clone(), false));
    control.map_err(|e| not_run("the control", &e))?;
    let out = probe.map_err(|e| not_run("the probe", &e))?;
    if !wait_for_processes(&control_word, true).await {
        return Err("inconclusive: the control's detached process could not be found".into());
    }
    if !wait_for_processes(&probe_word, false).await {
        return Err(format!("a detached process outlived its call ({})", out.profile));
    }
    Ok(format!(
        "a process that left the session ended with its call; without the PID namespace it lived on ({})",
        out.profile
    ))
}

/// Waits up to 5 s until processes whose command line holds `word` exist (`present`) or are
/// all gone (`!present`); true when that state was reached.
async fn wait_for_processes(word: &str, present: bool) -> bool {
    for _ in 0..100 {
        if processes_with(word).is_empty() != present {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Ids of the processes one of whose arguments is exactly `word`.
fn processes_with(word: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|cmdline| cmdline.split(|b| *b == 0).any(|arg| arg == word.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// Kills, when dropped, the process groups of the processes carrying each word (the detached
/// `sh` leads its own group, so its `sleep` goes with it).
struct KillOnDrop(Vec<String>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for word in &self.0 {
            for pid in processes_with(word) {
                // SAFETY: kill(2) with a negative pid signals that process group; no memory is shared.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// `unshare --user true` succeeds without the filter and fails under it.
async fn seccomp() -> Probe {
    let argv = ["unshare", "--user", "true"];
    let control_req =
        ExecRequest { accept_weaker: Protection::ALL.to_vec(), ..probe_request(Protection::Seccomp, &argv) };
    let host = Host { seccomp: Err(SeccompUnavailable::ForControl), ..Host::detect() };
    let control = run_with_parent_env(control_req, CancellationToken::new(), std::env::vars_os().collect(), &host)
        .await
        .map_err(|e| not_run("the control", &e))?;
    if control.exit_code != Some(0) {
        return Err(format!(
            "inconclusive: the control `unshare --user true` failed: {}",
            String::from_utf8_lossy(&control.stderr).trim()
        ));
    }
    let out = exec(probe_request(Protection::Seccomp, &argv)).await.map_err(|e| not_run("the probe", &e))?;
    if out.exit_code == Some(0) {
        return Err(format!("a child made a user namespace under the filter ({})", out.profile));
    }
    Ok(format!("a child could not call unshare, which it can without the filter ({})", out.profile))
}

fn path_str(path: &Path) -> Result<String, SetupError> {
    path.to_str().map(str::to_string).ok_or_else(|| SetupError::NotUtf8(path.to_path_buf()))
}

async fn rlimits() -> Probe {
    let argv = ["dd", "if=/dev/zero", "of=/dev/null", PROBE_ALLOC, "count=1"];
    let unlimited = ExecRequest { memory_bytes: None, ..probe_request(Protection::Rlimits, &argv) };
    let control = exec(unlimited).await.map_err(|e| not_run("the control", &e))?;
    if control.exit_code != Some(0) {
        return Err(format!("inconclusive: the unlimited control `dd {PROBE_ALLOC}` failed ({:?})", control.exit_code));
    }
    let limited = ExecRequest { memory_bytes: Some(PROBE_MEMORY_BYTES), ..probe_request(Protection::Rlimits, &argv) };
    let out = exec(limited).await.map_err(|e| not_run("the probe", &e))?;
    if out.exit_code == Some(0) {
        return Err(format!("a child allocated {PROBE_ALLOC} under a {PROBE_MEMORY_BYTES}-byte data limit"));
    }
    Ok(format!(
        "a child allocating {PROBE_ALLOC} failed under a {PROBE_MEMORY_BYTES}-byte data limit, and succeeded without it ({})",
        out.profile
    ))
}

async fn timeout() -> Probe {
    let req =
        ExecRequest { timeout: Duration::from_millis(300), ..probe_request(Protection::Timeout, &["sleep", "30"]) };
    let out = exec(req).await.map_err(|e| not_run("the probe", &e))?;
    if out.timed_out && out.signal == Some(libc::SIGKILL) && out.duration_ms < 15_000 {
        Ok(format!("a sleeping child was killed after {} ms (timeout 300 ms)", out.duration_ms))
    } else {
        Err(format!(
            "a sleeping child was not killed on time (timed_out={}, signal={:?}, {} ms)",
            out.timed_out, out.signal, out.duration_ms
        ))
    }
}
