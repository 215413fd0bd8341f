//! The pure side of Steward's execution control layer (SPEC C1, C2, T7, S1–S3).
//!
//! Everything here is synchronous and decides without side effects (it only reads the
//! filesystem to canonicalise paths and to read ignore files):
//!
//! - [`Workspace`]: path containment, secret paths, `.gitignore` / `.stewardignore` and
//!   `deny_path` rules for every path a tool touches (cases B09, B10).
//! - [`is_secret_path`]: the one shared secret-path predicate (S1).
//! - [`Redactor`] and [`scan_value`]: secret redaction and scanning (S2, S3, case B13).
//! - [`Policy`]: the gate that turns a proposed [`ToolCall`](steward_protocol::ToolCall) into
//!   a [`Decision`](steward_protocol::Decision) (C1, C2).
#![deny(missing_docs)]

mod config;
mod gate;
mod ignore_rules;
mod names;
mod paths;
mod patterns;
mod redact;
mod scan;
mod secrets;

pub use config::{PolicyConfig, RuleConfig};
pub use gate::{Policy, PolicyError};
pub use names::name_looks_secret;
pub use paths::{Access, Exclusion, PathError, Workspace, WorkspacePath};
pub use redact::{REDACTED, Redactor};
pub use scan::{Finding, scan_value};
pub use secrets::is_secret_path;
