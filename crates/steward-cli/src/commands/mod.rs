//! The subcommands, and what they share: configuration loading, usage errors, the redactor.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use steward_config::Config;
use steward_core::PlannerOverrides;
use steward_core::{Prepared, RunOptions, Task};
use steward_policy::Redactor;
use steward_protocol::{EventKind, StopReason};
use steward_store::{AuditVerification, RunStatus, StoreOptions};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

use crate::home::{Home, local_owner};
use crate::ui;
use crate::usage::usage;
pub use crate::usage::{UsageError, usage_error};

/// The redactor of a command that loaded no configuration: pattern rules and the values of
/// secret-looking environment variables.
pub fn redactor() -> Redactor {
    Redactor::from_env_vars(std::env::vars())
}

/// The redactor of a command working with `config`: [`redactor`] plus the values `config`
/// declares as credentials ([`Config::declared_credential_values`]: `credential_scope`
/// variables, `[[tool]] env` values), so `config show`, the runs and error messages never
/// print them.
pub fn redactor_for(config: &Config) -> Redactor {
    let mut values = config.declared_credential_values(&env_lookup);
    // The local owner's MCP logins: a server that echoes its token never shows it.
    if let Some(place) = local_logins() {
        for (name, server) in &config.mcp_servers {
            if let Some(url) = &server.url {
                values.extend(place.secret_values(name, url));
            }
        }
    }
    redactor().with_values(values)
}

/// Where the local owner's MCP logins are kept (`$STEWARD_HOME/mcp-logins/…`); `None` when
/// neither `STEWARD_HOME` nor `HOME` is set.
pub(crate) fn local_logins() -> Option<steward_mcp::oauth::TokenPlace> {
    let home = crate::home::Home::locate().ok()?;
    Some(steward_mcp::oauth::TokenPlace::new(&home.dir, &crate::home::local_owner()))
}

/// A usage error (exit code 2) whose text is redacted by `redactor`: errors made from a loaded
/// configuration may quote what it declares as a credential.
fn redacted_usage(redactor: &Redactor, message: impl std::fmt::Display) -> anyhow::Error {
    usage(redactor.redact(&message.to_string()))
}

pub(crate) fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// `$XDG_CONFIG_HOME/steward`, else `~/.config/steward`.
pub(crate) fn user_config_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|d| d.join("steward"))
}

pub(crate) fn load_config(workspace: &Path) -> Result<Config> {
    let config = Config::load(user_config_dir().as_deref(), workspace).map_err(|e| usage(e.to_string()))?;
    for warning in &config.warnings {
        eprintln!("steward: warning: {warning}");
    }
    Ok(config)
}

/// The tools this configuration offers in `workspace`, MCP servers' tools included (those that
/// did not start are named in warnings on stderr).
pub(crate) async fn registry(config: &Config, workspace: &Path) -> Result<ToolRegistry> {
    let redactor = redactor_for(config);
    let policy = steward_policy::Policy::new(&config.policy).map_err(|e| redacted_usage(&redactor, e))?;
    let logins = local_logins();
    let (tools, warnings) = steward_core::tool_registry(config, workspace, &policy, true, logins.as_ref())
        .await
        .map_err(|e| redacted_usage(&redactor, e))?;
    for warning in warnings {
        eprintln!("steward: warning: {warning}");
    }
    Ok(tools)
}

/// The run `config` (loaded by [`load_config`]) gives in `workspace` (canonical) with `options`,
/// composed by [`steward_core::prepare`]; what was left out is named in warnings on stderr.
/// Errors are usage errors.
pub(crate) async fn prepare_run(config: Config, workspace: &Path, options: &RunOptions) -> Result<Prepared> {
    let redactor = redactor_for(&config);
    let prepared = steward_core::prepare(config, workspace, options).await.map_err(|e| redacted_usage(&redactor, e))?;
    for warning in &prepared.warnings {
        eprintln!("steward: warning: {warning}");
    }
    Ok(prepared)
}

pub(crate) mod acp;
mod anchor;
mod chat;
mod compare;
mod control;
mod decide;
pub(crate) mod eval;
pub(crate) mod generated;
pub(crate) mod hub;
pub(crate) mod index;
mod inspect;
pub(crate) mod ledger;
pub(crate) mod mcp;
pub(crate) mod mcp_conformance;
pub(crate) mod mcp_import;
pub(crate) mod mcp_login;
pub(crate) mod mcp_serve;
pub(crate) mod mcp_token;
mod provider_args;
pub(crate) mod reference;
mod replay;
mod resume;
mod run;
pub(crate) mod serve;
pub(crate) mod tools;

pub use anchor::audit_anchor;
pub use chat::{ChatArgs, chat};
pub use compare::{CompareArgs, compare};
pub use control::{config_show, doctor, grants_list, grants_revoke, policy_check, rollback, trust};
pub use decide::{decide, pending as approvals_pending};
pub use inspect::{audit_export, audit_list, audit_verify, runs, show};
pub use provider_args::{ModelArgs, ProviderArgs};
pub use replay::policy_replay;
pub use run::{ResumeArgs, RunArgs, models, provider_statuses, resume, run, run_scripted};
