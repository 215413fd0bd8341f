//! The agent loop and its composition (SPEC A, C, O): planners, the role pipeline, and the
//! orchestrator that runs policy → approval → sandboxed execution → audit for every tool call.
//! The built-in tools are `steward-tools`'s and the configuration is `steward-config`'s; the
//! run loop (`agent`), the roles and the context fitting are reached through the items
//! re-exported here.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod agent;
pub mod approval;
mod call_trace;
pub mod chains;
pub mod clock;
pub mod compare;
pub mod compensate;
pub mod compose;
pub mod context;
pub mod conversation;
pub mod data_flow;
pub mod decide;
pub mod decisions;
pub mod elicitation;
pub mod events;
pub mod fit;
pub mod generated;
pub mod hooks;
mod interrupt;
pub mod mcp_tokens;
pub mod memory;
mod orchestrator;
pub mod planner;
mod planner_reply;
pub(crate) mod provenance;
pub mod recovery;
mod repeats;
pub mod replay;
mod roles;
mod runtime;
mod stage;
mod telemetry;
pub mod trace;
pub mod undo;
pub mod workspace_search;

pub use agent::{PlannerChoice, RunError, RunRequest, run_task};
pub use compose::{Launcher, LauncherError, Prepared, ReadyRun, RunOptions, Task, prepare};
pub use roles::{Locality, RoleAssignment, RoleName, RolePlan, RunMode};
pub use runtime::Runtime;
