//! `steward acp`: Steward as an Agent Client Protocol agent on stdio, for editors (Zed,
//! JetBrains IDEs, Neovim plugins) that drive agents over ACP.
//!
//! Each `session/prompt` is one run prepared and executed exactly as `steward run` does
//! (`prepare_run` → `Prepared::into_run` → `ReadyRun::run`), owned by the local user, so the
//! policy, approvals, audit records and redaction are those of `steward run`. A session is a
//! conversation in the store (its id is the conversation's `cnv_…`), so `session/load` and
//! `steward resume` continue it. The run's events become `session/update`s
//! ([`updates::Mapper`]); approvals become `session/request_permission`
//! ([`approver::EditorApprover`]); `session/cancel` cancels the run. MCP servers the editor
//! passes join the run's tools through the gate like `[mcp_servers]` entries, named `editor-…`.
//!
//! Steward's own tools read and write the workspace themselves: the editor's `fs/*` methods
//! are not used (they would bypass the path rules the tools apply).

mod agent;
mod approver;
mod bridge;
mod updates;

use std::rc::Rc;

use agent_client_protocol as acp;
use anyhow::Result;
use clap::Args;
use tokio_util::compat::{TokioAsyncReadCompatExt as _, TokioAsyncWriteCompatExt as _};
use tokio_util::sync::CancellationToken;

use super::ModelArgs;
use crate::home::{Home, local_owner};

/// `steward acp` arguments: the model every session's runs use (default: the configuration's).
#[derive(Args)]
pub struct AcpArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Rounds with tool calls before a prompt's run stops with `max_rounds` (default: the
    /// configuration's limits.max_rounds).
    #[arg(long)]
    max_rounds: Option<u32>,
}

/// `steward acp`: serves the editor on stdin/stdout until it closes stdin; diagnostics go to
/// stderr. Runs still going then are cancelled.
pub async fn acp(args: AcpArgs) -> Result<u8> {
    if args.max_rounds == Some(0) {
        return Err(crate::usage::usage("--max-rounds must be at least 1"));
    }
    let runtime = Home::locate()?.runtime(super::redactor()).await?;
    let keeper_stop = CancellationToken::new();
    crate::home::spawn_lease_keeper(&runtime, keeper_stop.clone())?;
    crate::home::spawn_decision_follower(&runtime);
    let _stop_keeper = keeper_stop.drop_guard();
    let exporting = runtime.clone();
    let local = tokio::task::LocalSet::new();
    let served = local
        .run_until(async move {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let agent = Rc::new(agent::StewardAgent::new(runtime, local_owner(), args, bridge::Bridge(tx)));
            let (conn, io) = acp::AgentSideConnection::new(
                agent.clone(),
                tokio::io::stdout().compat_write(),
                tokio::io::stdin().compat(),
                |task| {
                    tokio::task::spawn_local(task);
                },
            );
            tokio::task::spawn_local(bridge::drain(Rc::new(conn), rx));
            let served = io.await;
            agent.cancel_all().await;
            served
        })
        .await;
    // The session's spans (telemetry on) are sent before the process ends.
    exporting.shutdown().await;
    served.map_err(|e| anyhow::anyhow!("the ACP connection failed: {e}"))?;
    Ok(0)
}
