//! The agent loop and its composition (SPEC A, C, O): planners, the role pipeline, tools,
//! configuration, and the orchestrator that runs policy → approval → sandboxed execution →
//! audit for every tool call.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod agent;
pub mod approval;
mod call_trace;
pub mod chains;
pub mod clock;
pub mod compare;
pub mod compensate;
pub mod compose;
pub mod config;
pub mod context;
pub mod conversation;
mod credentials;
pub mod data_flow;
pub mod decide;
pub mod decisions;
pub mod elicitation;
pub mod events;
pub mod fit;
pub mod generated;
pub mod hooks;
pub mod interrupt;
pub mod mcp_tokens;
pub mod memory;
mod orchestrator;
pub mod planner;
mod planner_reply;
pub(crate) mod provenance;
pub mod recovery;
mod repeats;
pub mod replay;
pub mod roles;
pub mod rollback;
mod stage;
pub mod state_paths;
mod telemetry;
pub mod tools;
pub mod trace;
pub mod undo;
pub mod workspace_search;

pub use agent::{PlannerChoice, RunError, RunRequest, Runtime, run_task};
pub use compose::{Launcher, LauncherError, Prepared, ReadyRun, RunOptions, Task, prepare};
pub use roles::{Locality, RoleAssignment, RoleName, RolePlan, RunMode};
