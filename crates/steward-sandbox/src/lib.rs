//! Runs an approved subprocess confined (SPEC C3; case B12): a scrubbed environment, no
//! network unless asked for, a filesystem that is read-only except the paths the call may
//! write, its own process group killed as a whole on timeout or cancel, rlimits, and never a
//! login or rc-reading shell. Every [`Protection`] is required: when one cannot be enforced,
//! [`run`] refuses with [`SandboxError::CannotEnforce`] before running anything, unless the
//! request lists it in [`ExecRequest::accept_weaker`], in which case the downgrade is written
//! into [`ExecOutput::profile`]. There is no silent downgrade. [`doctor`] checks each
//! protection on the running machine with real child processes.
//!
//! Linux only: the network is cut with a new network namespace (`unshare(CLONE_NEWNET)`, with
//! a user namespace when the process lacks `CAP_SYS_ADMIN`), whose only way out can be an
//! egress proxy ([`ExecRequest::egress_proxy`]); the filesystem is confined with Landlock
//! (kernel ≥ 5.13, complete from Landlock ABI 3, kernel 6.2); secret files are covered in a
//! mount namespace of the child's own and `$HOME` is an empty folder there; the child runs in
//! a PID namespace whose end kills every process it started; a seccomp filter refuses the
//! system calls listed in [`SECCOMP_DENIED`].
//!
//! The system calls the standard library does not wrap are made in `unsafe` blocks, each with
//! a `// SAFETY:` comment saying why it is sound (clippy checks that there is one); the modules
//! that make none forbid `unsafe` code.
#![deny(missing_docs)]

mod doctor;
mod egress;
mod env;
mod exec;
mod fs_rules;
mod limits;
mod namespaces;
mod plan;
mod probe;
mod program;
mod seccomp;
mod shell;
mod unavailable;

pub use doctor::{ProbeResult, doctor};
pub use egress::{PROXY_PORT, PROXY_URL};
pub use env::{DEFAULT_ENV_ALLOW, ENV_NEVER_PASSED, env_name_looks_secret};
pub use exec::{ConfinedCommand, command, run};
pub use fs_rules::{SYSTEM_READ_PATHS, WRITABLE_DEVICES};
pub use plan::{Mechanism, host_support};
pub use seccomp::SECCOMP_DENIED;

use std::path::PathBuf;
use std::time::Duration;

/// Starts the sandbox's one-time probes on a background thread: the Landlock ABI, which
/// network, mount and PID namespaces this process may make (each tried on a child process
/// that shares this process's memory instead of a fork of it, see `probe.rs`), whether seccomp
/// works, and both compiled seccomp filters. Their answers are cached for the
/// life of the process, so a sandboxed call made after they finished does not wait for them;
/// one made while they run waits only for the rest. Without this call the first sandboxed
/// call runs them itself. Calling it again does nothing; if the thread cannot be started the
/// first call probes as before.
pub fn warm_up() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let probes = std::thread::Builder::new().name("sandbox-probes".into()).spawn(|| {
            let _ = plan::Host::detect();
            let _ = seccomp::filters(true);
        });
        if let Err(e) = probes {
            tracing::debug!(error = %e, "the sandbox probes run at the first sandboxed call instead");
        }
    });
}

/// Per-call timeout of SPEC C3 (30 s), used by [`ExecRequest::new`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Per-stream output cap used by [`ExecRequest::new`] (1 MiB).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// Data-segment limit used by [`ExecRequest::new`] (2 GiB, SPEC C3's memory limit).
pub const DEFAULT_MEMORY_BYTES: u64 = 2048 * 1024 * 1024;

/// Sandbox lifetime of SPEC C3 (60 min): no sandboxed process lives longer; a longer
/// [`ExecRequest::timeout`] is cut to it.
pub const MAX_LIFETIME: Duration = Duration::from_secs(60 * 60);

/// One protection the sandbox applies to a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protection {
    /// Only allow-listed environment variables reach the child.
    EnvScrub,
    /// No network (own network namespace; TCP also denied by Landlock from ABI 4).
    NetworkDeny,
    /// Writes only beneath `writable` (Landlock); reads limited when `readable` is set.
    FsConfine,
    /// `RLIMIT_CORE`, `RLIMIT_CPU`, and `RLIMIT_DATA` when `memory_bytes` is set.
    Rlimits,
    /// The process group is killed when the wall-clock timeout runs out.
    Timeout,
    /// A mount namespace of the child's own: `mask` paths covered by empty read-only
    /// files or folders, `$HOME` an empty folder, `read_only` paths read-only.
    FsMask,
    /// A PID namespace: the program's end (or the call's) kills every process it started,
    /// also those that left its process group or session.
    PidNamespace,
    /// A seccomp filter refusing [`SECCOMP_DENIED`] with `EPERM`.
    Seccomp,
}

impl Protection {
    /// Every protection, in reporting order.
    pub const ALL: [Protection; 8] = [
        Protection::EnvScrub,
        Protection::NetworkDeny,
        Protection::FsConfine,
        Protection::FsMask,
        Protection::PidNamespace,
        Protection::Seccomp,
        Protection::Rlimits,
        Protection::Timeout,
    ];

    /// Parses a name from [`Protection::as_str`]; `None` for anything else.
    pub fn parse(name: &str) -> Option<Protection> {
        Protection::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Stable snake_case name: `env_scrub`, `network_deny`, `fs_confine`, `fs_mask`,
    /// `pid_namespace`, `seccomp`, `rlimits`, `timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protection::EnvScrub => "env_scrub",
            Protection::NetworkDeny => "network_deny",
            Protection::FsConfine => "fs_confine",
            Protection::FsMask => "fs_mask",
            Protection::PidNamespace => "pid_namespace",
            Protection::Seccomp => "seccomp",
            Protection::Rlimits => "rlimits",
            Protection::Timeout => "timeout",
        }
    }
}

impl std::fmt::Display for Protection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to run and under which limits. Build it with [`ExecRequest::new`] and struct update
/// syntax so that new fields get their safe defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// Program and arguments; `argv[0]` is looked up in the child's `PATH` when it has no `/`.
    /// No shell is involved unless argv names one; a shell is always run non-login and
    /// without startup files (bash gets `--noprofile --norc`, zsh `-f`; `-l`, `-i`, `--login`
    /// are removed), and unparseable shell options are refused (case B12).
    pub argv: Vec<String>,
    /// Working directory (must exist).
    pub cwd: PathBuf,
    /// Names passed through from the parent environment in addition to
    /// [`DEFAULT_ENV_ALLOW`] and `LC_*`.
    pub env_allow: Vec<String>,
    /// Variables set explicitly (after the allow-listed ones; they win).
    pub env_set: Vec<(String, String)>,
    /// Wall-clock limit; the process group (and the PID namespace) is killed when it runs
    /// out. At most [`MAX_LIFETIME`] (a longer one is cut to it). Also sets `RLIMIT_CPU` to
    /// the timeout rounded up to whole seconds, plus one.
    pub timeout: Duration,
    /// When false (the default stance), the child gets a network namespace of its own with
    /// no interfaces up (or only the proxy port, with `egress_proxy`). True: the host's whole
    /// network.
    pub network: bool,
    /// The Unix socket of an HTTP proxy (Steward's egress proxy) that is the child's only way
    /// out: the child gets its own network namespace with `lo` up and [`PROXY_URL`]
    /// (`127.0.0.1:`[`PROXY_PORT`]) forwarded to this socket, Landlock TCP rules allowing
    /// only that port (ABI ≥ 4), and `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and their
    /// lower-case forms) set to [`PROXY_URL`] with `NO_PROXY` empty, overriding `env_set`.
    /// Needs `network == false` and an absolute path; refused when the machine cannot make a
    /// network namespace, even if `accept_weaker` lists `network_deny`. The listener is made
    /// by the init of the PID namespace (or by the child itself without one), inside the new
    /// network namespace, before the seccomp filter applies. Only [`run`] forwards it:
    /// [`command`] refuses a request that has one.
    pub egress_proxy: Option<PathBuf>,
    /// Most bytes kept per stream (stdout, stderr); the rest is read and dropped.
    pub max_output_bytes: usize,
    /// Data-segment limit (`RLIMIT_DATA`: heap and private writable mappings) in bytes;
    /// [`DEFAULT_MEMORY_BYTES`] by default. `None` sets none (the child keeps the parent's,
    /// normally unlimited). Not an address-space limit: Node-based MCP servers and language
    /// servers reserve far more address space (inaccessible mappings) than they use and fail
    /// under `RLIMIT_AS`, while `RLIMIT_DATA` counts only memory that can be written.
    pub memory_bytes: Option<u64>,
    /// Absolute, existing paths the child may write beneath (files and directories; the
    /// Landlock rule follows symlinks when it is made). Everything else is read-only, except
    /// [`WRITABLE_DEVICES`]. Empty: nothing is writable.
    pub writable: Vec<PathBuf>,
    /// `None`: the whole filesystem is readable. `Some(paths)`: only beneath these absolute
    /// paths, the `writable` ones and `/dev/{null,zero,full,tty,ptmx,pts,urandom,random}`;
    /// missing paths are skipped. Nothing is added implicitly: include
    /// [`SYSTEM_READ_PATHS`] (or narrower) so the program can start, and `cwd`.
    pub readable: Option<Vec<PathBuf>>,
    /// Absolute paths to cover in the child's mount namespace: a file becomes an empty
    /// read-only file (still a regular file, so `git status` works), a folder an empty
    /// read-only folder. The caller computes
    /// them (for a workspace: every secret path and every hard link to a secret file).
    /// Missing paths are skipped; a path that cannot be covered fails the call.
    pub mask: Vec<PathBuf>,
    /// Absolute paths made read-only in the child's mount namespace (with everything beneath
    /// them), even beneath `writable` paths. Missing paths are skipped.
    pub read_only: Vec<PathBuf>,
    /// Whether the parent's `$HOME` folder is replaced by an empty folder in the child's
    /// mount namespace (default: true, so `~/.ssh`, `~/.aws`, `~/.npmrc`, `~/.config/gh`
    /// are not there). `cwd`, the `writable` paths and `home_keep` stay visible where they
    /// lie beneath it. Not applied when `$HOME` is unset, not a folder, `/`, or holds a
    /// `cwd` or `writable` path's ancestor (then the masks are the only guard).
    pub hide_home: bool,
    /// Absolute paths beneath `$HOME` that stay visible when `hide_home` is set (for example
    /// a toolchain in `~/.cargo`); read-only unless beneath a `writable` path.
    pub home_keep: Vec<PathBuf>,
    /// Allow creating `AF_UNIX` sockets (default false: the seccomp filter refuses
    /// `socket(AF_UNIX, …)`, so no Unix socket can be reached by path or by name).
    pub unix_sockets: bool,
    /// Protections the caller accepts to lose when the machine cannot enforce them; the run
    /// goes ahead and `ExecOutput::profile` records it (e.g. `fs=unenforced(accepted)`).
    /// Empty (the default): any unenforceable protection refuses the call.
    pub accept_weaker: Vec<Protection>,
    /// When the program cannot be executed (not found on `PATH`, not executable, a missing
    /// `#!` interpreter, not a valid binary), end the call like `bash -c` would instead of
    /// failing it: bash's message on stderr and exit status 127 (not found) or 126 (cannot
    /// execute). For a command line run without bash. Default false: the call fails with
    /// [`SandboxError::Spawn`]. Either way the program is found like bash finds it (the
    /// first `PATH` entry with an executable regular file) and never handed to `/bin/sh`.
    pub exec_failure_exits: bool,
}

impl ExecRequest {
    /// A request with the strict defaults: empty `env_allow`/`env_set`, [`DEFAULT_TIMEOUT`],
    /// no network, [`DEFAULT_MAX_OUTPUT_BYTES`], [`DEFAULT_MEMORY_BYTES`], nothing writable,
    /// everything readable, nothing masked, `$HOME` hidden, no Unix sockets, no weaker
    /// profile accepted.
    pub fn new(argv: Vec<String>, cwd: PathBuf) -> ExecRequest {
        ExecRequest {
            argv,
            cwd,
            env_allow: Vec::new(),
            env_set: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            network: false,
            egress_proxy: None,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            memory_bytes: Some(DEFAULT_MEMORY_BYTES),
            writable: Vec::new(),
            readable: None,
            mask: Vec::new(),
            read_only: Vec::new(),
            hide_home: true,
            home_keep: Vec::new(),
            unix_sockets: false,
            accept_weaker: Vec::new(),
            exec_failure_exits: false,
        }
    }
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// Exit code, `None` when killed by a signal.
    pub exit_code: Option<i32>,
    /// Signal that ended the process, if any.
    pub signal: Option<i32>,
    /// Captured stdout, at most `max_output_bytes`.
    pub stdout: Vec<u8>,
    /// Captured stderr, at most `max_output_bytes`.
    pub stderr: Vec<u8>,
    /// True when the timeout ran out and the group was killed.
    pub timed_out: bool,
    /// True when either stream was cut at `max_output_bytes`.
    pub truncated: bool,
    /// Wall time in ms.
    pub duration_ms: u64,
    /// What was enforced, comma-separated, e.g.
    /// `env-scrub,nnp,netns+userns+landlock-tcp,fs=landlock-v7,mntns(mask=2,home=empty),pidns,seccomp(unix=denied),rlimits(core=0,cpu=31s,data=2147483648),pgroup,timeout=30000ms`;
    /// `shell=non-login` when argv was rewritten; an accepted downgrade shows as
    /// `net=unenforced(accepted)`, `fs=unenforced(accepted)` or `fs=landlock-v2(partial,accepted)`.
    pub profile: String,
}

/// Why a command did not run (or did not finish).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The request itself is unusable (empty argv, NUL bytes, missing cwd, relative or
    /// missing writable path, `BASH_ENV`/`ENV` in `env_set`, a refused shell invocation).
    #[error("invalid exec request: {0}")]
    InvalidRequest(String),
    /// A required protection could not be put in place; the command was not run.
    #[error("cannot enforce {what}: {reason}; refusing to run the command unconfined")]
    CannotEnforce {
        /// Which protection ([`Protection::as_str`], e.g. `network_deny`, `fs_confine`), or
        /// `confinement` when the child's setup failed after the fork.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// The program could not be started.
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// `argv[0]`.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Waiting for or reading from the child failed.
    #[error("sandbox I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The cancellation token fired; the process group was killed and reaped.
    #[error("cancelled; the process group was killed")]
    Cancelled,
}
