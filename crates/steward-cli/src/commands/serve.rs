//! `steward serve`: the web UI and JSON API (crate `steward-server`) on this machine's
//! configuration, store and tools. Runs are composed by `steward_core::prepare`, as `steward run`'s.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use async_trait::async_trait;
use clap::Args;
use steward_config::{Config, ConfigError};
use steward_core::{Launcher, LauncherError, PrepareError, Prepared, ProviderStatus, RunOptions};
use steward_protocol::ToolSpec;
use steward_server::{ServerOptions, Sessions};
use tokio_util::sync::CancellationToken;

use crate::commands::{load_config, provider_statuses, usage_error, user_config_dir};
use crate::home::{Home, local_owner};

/// `steward serve` arguments.
#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port; the address taken is printed first). Only loopback addresses unless --allow-remote.
    #[arg(long, default_value = "127.0.0.1:7878")]
    bind: SocketAddr,
    /// Allow a non-loopback --bind (anyone who can reach it gets their own owner and can start runs in the served workspaces).
    #[arg(long)]
    allow_remote: bool,
    /// Workspace runs may use (repeatable; exactly these folders, not folders inside them). The first is the default. Default: the current directory.
    #[arg(long)]
    workspace: Vec<PathBuf>,
    /// Runs executing at once; later ones wait in a queue.
    #[arg(long, default_value_t = 4)]
    max_running: usize,
    /// Scenario file for runs that use the `fake` provider (format in docs/models.md).
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Finished runs kept; older ones beyond this count are deleted (checked at start and every 10 minutes).
    #[arg(long, default_value_t = 1000)]
    keep_runs: usize,
    /// Finished runs older than this many days are deleted.
    #[arg(long, default_value_t = 30)]
    keep_days: u32,
    /// Minutes a conversation lives without an open page.
    #[arg(long, default_value_t = 15)]
    conversation_idle_minutes: u64,
    /// File holding the session key (at least 64 bytes as hex, mode 0600) instead of `session.key` in the state directory: give every node sharing one database the same file, so that each accepts the owner cookies of the others.
    #[arg(long)]
    session_key_file: Option<PathBuf>,
}

/// How long a provider probe may take for the start page.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the start page reuses a provider probe.
const PROBE_CACHE: Duration = Duration::from_secs(30);

/// `steward serve`.
pub async fn serve(args: ServeArgs) -> Result<u8> {
    if !args.bind.ip().is_loopback() && !args.allow_remote {
        return Err(usage_error(&format!(
            "--bind {} is not a loopback address; pass --allow-remote to serve other machines",
            args.bind
        )));
    }
    if args.max_running == 0 {
        return Err(usage_error("--max-running must be at least 1"));
    }
    let mut workspaces = Vec::new();
    let given = if args.workspace.is_empty() { vec![PathBuf::from(".")] } else { args.workspace.clone() };
    for w in given {
        let canonical =
            std::fs::canonicalize(&w).map_err(|e| usage_error(&format!("workspace {}: {e}", w.display())))?;
        if !canonical.is_dir() {
            return Err(usage_error(&format!("workspace {} is not a directory", w.display())));
        }
        workspaces.push(canonical);
    }
    if let Some(s) = &args.scenario
        && !s.is_file()
    {
        return Err(usage_error(&format!("--scenario {}: no such file", s.display())));
    }
    let notice_poll = crate::home::notice_poll()?;
    let home = Home::locate()?;
    let runtime = home.runtime(crate::commands::redactor()).await?;
    let owner = local_owner();
    let session_key = match &args.session_key_file {
        Some(path) => {
            steward_config::state_paths::register(path);
            crate::home::read_session_key(path)?
        }
        None => home.session_key()?,
    };
    let sessions = Sessions::new(&session_key, &owner).context("the session key is too short")?;
    let login_token = sessions.issue_login_token();
    let launcher = Arc::new(CliLauncher {
        scenario: args.scenario.clone(),
        probes: Mutex::new(None),
        default: workspaces[0].clone(),
    });
    let state = steward_server::app_state(
        Arc::new(runtime),
        launcher,
        sessions,
        ServerOptions {
            workspaces,
            max_running: args.max_running,
            conversation_idle: Duration::from_secs(args.conversation_idle_minutes.max(1) * 60),
            keep_runs: args.keep_runs,
            keep_for: Duration::from_secs(u64::from(args.keep_days) * 24 * 3600),
            // Other machines reach the server by names and addresses it cannot know.
            allowed_hosts: if args.allow_remote { None } else { ServerOptions::default().allowed_hosts },
            notice_poll,
        },
    );
    let listener = tokio::net::TcpListener::bind(args.bind)
        .await
        .map_err(|e| usage_error(&format!("cannot listen on {}: {e}", args.bind)))?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "steward: warning: serving on {addr}, reachable from other machines; traffic is not encrypted (plain HTTP)"
        );
    }
    println!("steward: serving on http://{addr}");
    println!("steward: open http://{addr}/login?token={login_token} to sign in as {owner} (the link works once)");
    println!("steward: MCP over streamable HTTP at http://{addr}/mcp (bearer tokens: `steward mcp token create`)");
    let stop = CancellationToken::new();
    crate::home::spawn_lease_keeper(&state.runtime, stop.clone())?;
    let on_signal = stop.clone();
    tokio::spawn(async move {
        // Ctrl-C or SIGTERM (a service manager stopping it): cancel live runs and record it.
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate => {}
        }
        eprintln!("\nsteward: stopping: cancelling live runs");
        on_signal.cancel();
    });
    let runtime = state.runtime.clone();
    steward_server::serve(state, listener, stop).await?;
    // The runs' spans (telemetry on) are sent before the process ends.
    runtime.shutdown().await;
    Ok(0)
}

/// Prepares runs from this machine's configuration.
struct CliLauncher {
    scenario: Option<PathBuf>,
    probes: Mutex<Option<(Instant, Vec<ProviderStatus>)>>,
    default: PathBuf,
}

#[async_trait]
impl Launcher for CliLauncher {
    async fn prepare(&self, workspace: &Path, options: &RunOptions) -> Result<Prepared, LauncherError> {
        let mut options = options.clone();
        // The scripted provider plays the scenario `steward serve` was given.
        if options.planner.provider.as_deref() == Some("fake") {
            options.planner.scenario = self.scenario.clone();
        }
        let config = served_config(workspace)?;
        let prepared = steward_core::prepare(config, workspace, &options).await?;
        warn(&prepared.warnings);
        Ok(prepared)
    }

    async fn tools(&self, workspace: &Path) -> Result<Vec<ToolSpec>, LauncherError> {
        let config = served_config(workspace)?;
        let policy = steward_policy::Policy::new(&config.policy).map_err(PrepareError::from)?;
        let (tools, warnings) = steward_core::tool_registry(&config, workspace, &policy, true, None).await?;
        warn(&warnings);
        Ok(tools.specs())
    }

    async fn providers(&self) -> Vec<ProviderStatus> {
        if let Ok(cache) = self.probes.lock()
            && let Some((at, statuses)) = cache.as_ref()
            && at.elapsed() < PROBE_CACHE
        {
            return statuses.clone();
        }
        let Ok(config) = load_config(&self.default) else { return Vec::new() };
        let mut statuses: Vec<ProviderStatus> = provider_statuses(&config, PROBE_TIMEOUT)
            .await
            .into_iter()
            .map(|(name, result)| match result {
                Ok(reached) => ProviderStatus { name, reachable: true, models: reached.models, error: String::new() },
                Err(error) => ProviderStatus { name, reachable: false, models: Vec::new(), error: error.to_string() },
            })
            .collect();
        // The scripted provider is offered when a scenario was given.
        if self.scenario.is_some() && !statuses.iter().any(|s| s.name == "fake") {
            statuses.push(ProviderStatus {
                name: "fake".into(),
                reachable: true,
                models: vec!["fake".into()],
                error: String::new(),
            });
        }
        if let Ok(mut cache) = self.probes.lock() {
            *cache = Some((Instant::now(), statuses.clone()));
        }
        statuses
    }
}

/// The configuration of a served workspace, its warnings printed on the server's stderr.
fn served_config(workspace: &Path) -> Result<Config, ConfigError> {
    let config = Config::load(user_config_dir().as_deref(), workspace)?;
    warn(&config.warnings);
    Ok(config)
}

/// Prints what was left out of a served run on the server's stderr.
fn warn(warnings: &[String]) {
    for warning in warnings {
        eprintln!("steward: warning: {warning}");
    }
}
