//! The hub, the local execution owner (SPEC H2–H6).
//!
//! - [`intake`]: the strict HTTP client of the ledger API.
//! - [`poller`]: complete listings, one at a time, with backoff.
//! - [`forge`]: the local git repository a PR is read from, and private clones at one commit.
//! - [`launch`]: a job as an ordinary, read-only Steward run.
//! - [`engine`]: the loop itself, journaling each step in [`steward_store::JournalStore`]
//!   before taking it, and the restart rule (in-flight rows become `held`).
//! - [`resolve`]: listing held attempts and recording a human's decision.
//! - [`crash`]: the `STEWARD_HUB_CRASH_AT` test hook.

pub mod crash;
pub mod engine;
pub mod forge;
pub mod intake;
pub mod launch;
pub mod poller;
pub mod resolve;

pub use engine::{Handled, Hub, HubError, HubSettings, Pass, Recovery};
pub use intake::{HubToken, IntakeError, LedgerClient};
pub use launch::{Job, JobEnd, LaunchError, PlannerCheckError, RunLauncher};
