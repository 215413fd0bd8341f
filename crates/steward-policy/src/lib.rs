//! The pure side of Steward's execution control layer (SPEC C1, C2, T7, S1–S3).
//!
//! Everything here is synchronous and decides without side effects (it only reads the
//! filesystem to canonicalise paths and to read ignore files):
//!
//! - [`Workspace`]: path containment, secret paths, `.gitignore` / `.stewardignore` and
//!   `deny_path` rules for every path a tool touches (cases B09, B10).
//! - [`is_secret_path`]: the one shared secret-path predicate (S1); a hard link to a secret
//!   file is secret too, for every path check and walker of a [`Workspace`].
//! - [`Workspace::paths_named_by`] and [`path_parts`]: the paths a free-form argument value
//!   names (`--file=.env`, `a,.env`), so values are judged by what they name on disk.
//! - [`Redactor`] and [`scan_value`]: secret redaction and scanning (S2, S3, case B13),
//!   re-exported from `steward-secrets` with the secret-path predicate.
//! - [`Policy`]: the gate that turns a proposed [`ToolCall`](steward_protocol::ToolCall) into
//!   a [`Decision`](steward_protocol::Decision) (C1, C2), with run context ([`GateContext`]:
//!   taint, context rules, argument-level data flow through [`Fingerprints`]) and `shell_command` judged per simple command
//!   ([`Policy::judge_command`], T4, cases B06, B08); a git command that can print file
//!   contents from history or the index is never allowed by a rule while a repository is
//!   reachable (rule `git_history`, case B09).
//! - [`shell`]: the command-line splitter behind it.
//! - [`schema`]: a tool's input schema compiled into the validator of its calls' arguments.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod argv_rule;
mod cargo_config;
mod command_gate;
mod config;
mod context;
mod data_flow;
mod error;
mod gate;
mod git_history;
mod git_programs;
mod hardlinks;
mod ignore_rules;
mod makefile;
mod named_paths;
mod nested;
mod option_set;
mod paths;
mod programs;
mod risk;
pub mod schema;
pub mod shell;
mod untrusted;

pub use config::{
    ArgvExample, ContextRule, DEFAULT_APPROVAL_TIMEOUT_SECONDS, DEFAULT_DESTRUCTIVE_OPTIONS, DEFAULT_PROTECTED_PATHS,
    DEFAULT_SOURCE_PATHS, DEFAULT_TOKEN_TTL_SECONDS, PolicyConfig, RiskConfig, RuleConfig,
};
pub use context::{DEFAULT_TAINT_ESCALATION_RISK, GateContext};
pub use data_flow::{Carried, Fingerprints, MAX_FINGERPRINTS, Origin, SPAN_CHARS};
pub use error::PolicyError;
pub use gate::{Policy, SHELL_TOOL, warm_up};
pub use git_programs::{ConfigSyntaxError, GitConfigError, repository_config_programs};
pub use named_paths::path_parts;
pub use paths::{Access, Exclusion, PathError, Workspace, WorkspacePath, is_protected_path, set_steward_owned};
pub use steward_secrets::{
    Finding, REDACTED, Redactor, is_secret_path, name_looks_secret, scan_value, secret_file_values,
};
