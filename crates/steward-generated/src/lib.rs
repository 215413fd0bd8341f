//! Tools the agent writes for itself (SPEC G), run where they have no ambient authority.
//!
//! - [`worker`]: the interpreter (QuickJS through rquickjs) serving one step in a process of
//!   its own; `steward __tool-worker` and the `steward-tool-worker` binary run it.
//! - [`host`]: the parent side: starts the worker confined by steward-sandbox, performs its
//!   host functions ([`fetch`] for `http_get`, a per-tool folder for `sandbox_write`) and
//!   kills it at the deadline.
//! - [`checks`]: the name, static source and input schema checks.
//! - [`protocol`]: the JSON lines between the two.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod checks;
pub mod fetch;
pub mod host;
pub mod protocol;
pub mod worker;

pub use checks::{CheckError, source_hash, valid_name};
pub use fetch::{FetchPolicy, http_get};
pub use host::{HostEnv, HttpMode, StepError, StepLimits, StepReport, WorkerCommand, WriteQuota, run_step};
pub use protocol::{FailureKind, StepMode};
