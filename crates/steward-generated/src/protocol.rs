//! What the parent and the worker say to each other: one JSON object per line on the worker's
//! stdin and stdout.
//!
//! 1. The parent writes one [`StepRequest`].
//! 2. The worker may write any number of [`WorkerMessage::Host`] requests; the parent answers
//!    each with one [`HostReply`] line before the worker goes on.
//! 3. The worker writes one [`WorkerMessage::Done`] and exits.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a step does with the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepMode {
    /// Compile the source and check that it defines `run`; nothing is called.
    Compile,
    /// Compile the source and call `run(input)`.
    Call,
}

/// The one request a worker serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRequest {
    /// Compile only, or call.
    pub mode: StepMode,
    /// The tool's JavaScript source (a script defining `function run(input)`).
    pub source: String,
    /// The arguments object passed to `run`.
    pub input: Value,
    /// Wall-clock limit of the step in milliseconds, checked by the interpreter (the parent
    /// kills the worker shortly after).
    pub time_limit_ms: u64,
    /// Heap limit of the interpreter in bytes.
    pub memory_bytes: u64,
}

/// A host function call the worker asks the parent to perform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum HostCall {
    /// `http_get(url)`.
    HttpGet {
        /// The URL as the script gave it.
        url: String,
    },
    /// `sandbox_write(name, text)`.
    SandboxWrite {
        /// A plain file name (no folder part).
        name: String,
        /// The text to write.
        text: String,
    },
}

/// The parent's answer to one [`HostCall`]: a value for the script, or an error it sees as a
/// thrown `Error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostReply {
    /// The function's result.
    Ok(Value),
    /// Why it was refused or failed.
    Error(String),
}

/// A line the worker writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerMessage {
    /// Please perform this host function.
    Host(HostCall),
    /// The step's end.
    Done(StepOutcome),
}

/// How a step ended, as the worker saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    /// `Compile`: the source compiled and defines `run`. `Call`: what `run` returned.
    Ok(Value),
    /// The step failed.
    Failed {
        /// Which limit or error ended it.
        kind: FailureKind,
        /// The interpreter's message.
        message: String,
    },
}

/// Why a step failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The source does not compile, or defines no `run` function.
    Compile,
    /// `run` threw, or returned something that is not JSON.
    Exception,
    /// The time limit was reached.
    Timeout,
    /// The heap limit was reached.
    Memory,
    /// The call stack limit was reached (runaway recursion).
    Stack,
    /// The request could not be read.
    Protocol,
}

impl FailureKind {
    /// The wire name (`compile`, `timeout`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Compile => "compile",
            FailureKind::Exception => "exception",
            FailureKind::Timeout => "timeout",
            FailureKind::Memory => "memory",
            FailureKind::Stack => "stack",
            FailureKind::Protocol => "protocol",
        }
    }
}
