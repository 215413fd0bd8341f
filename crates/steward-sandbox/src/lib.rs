//! Runs an approved subprocess confined (SPEC C3; case B12): a scrubbed environment, no
//! network unless asked for, its own process group killed as a whole on timeout or cancel,
//! and rlimits. When a confinement cannot be enforced, [`run`] refuses with
//! [`SandboxError::CannotEnforce`] instead of running the command unconfined.
//!
//! Linux only: the network is cut with a new network namespace (`unshare(CLONE_NEWNET)`, with
//! a user namespace when the process lacks `CAP_SYS_ADMIN`).
#![deny(missing_docs)]

mod env;
mod exec;
mod limits;

pub use env::{DEFAULT_ENV_ALLOW, env_name_looks_secret};
pub use exec::run;

use std::path::PathBuf;
use std::time::Duration;

/// What to run and under which limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// Program and arguments; `argv[0]` is looked up in the child's `PATH` when it has no `/`.
    /// No shell is involved unless argv names one.
    pub argv: Vec<String>,
    /// Working directory (must exist).
    pub cwd: PathBuf,
    /// Names passed through from the parent environment in addition to
    /// [`DEFAULT_ENV_ALLOW`] and `LC_*`.
    pub env_allow: Vec<String>,
    /// Variables set explicitly (after the allow-listed ones; they win).
    pub env_set: Vec<(String, String)>,
    /// Wall-clock limit; the process group is killed when it runs out. Also sets
    /// `RLIMIT_CPU` to the timeout rounded up to whole seconds, plus one.
    pub timeout: Duration,
    /// When false (the default stance), the child gets a network namespace of its own with
    /// no interfaces up.
    pub network: bool,
    /// Most bytes kept per stream (stdout, stderr); the rest is read and dropped.
    pub max_output_bytes: usize,
    /// Address-space limit (`RLIMIT_AS`) in bytes, if any.
    pub memory_bytes: Option<u64>,
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
    /// What was enforced, e.g. `env-scrub,netns,rlimits,pgroup,timeout=30000ms`.
    pub profile: String,
}

/// Why a command did not run (or did not finish).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The request itself is unusable (empty argv, NUL bytes, missing cwd).
    #[error("invalid exec request: {0}")]
    InvalidRequest(String),
    /// A confinement could not be put in place; the command was not run.
    #[error("cannot enforce {what}: {reason}; refusing to run the command unconfined")]
    CannotEnforce {
        /// Which confinement (`network isolation`, …).
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
