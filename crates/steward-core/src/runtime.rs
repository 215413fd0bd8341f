//! What every run of a process shares ([`Runtime`]) and how it is made: the store, the
//! redactor, the approval key, the state folders, the registry of executing runs, the clock,
//! the decision queue, the generated tools' worker and the telemetry exporters.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use steward_policy::Redactor;
use steward_store::Store;

use crate::approval::ApprovalKey;
use crate::clock::{Clock, SystemClock};
use crate::decisions::DecisionQueue;
use crate::recovery::ExecutingRuns;

/// What every run of this process shares.
#[derive(Clone)]
pub struct Runtime {
    /// Persistence.
    pub store: Arc<dyn Store>,
    /// Redactor for every boundary (S3).
    pub redactor: Arc<Redactor>,
    /// Key for approval decision tokens (C4).
    pub approval_key: ApprovalKey,
    /// The state folder (`$STEWARD_HOME`).
    pub home_dir: PathBuf,
    /// Where full outputs of capped tool results are saved (`$STEWARD_HOME/outputs`).
    pub outputs_dir: PathBuf,
    /// Where rollback snapshots are kept (`$STEWARD_HOME/snapshots`, owner-only).
    pub snapshots_dir: PathBuf,
    /// Where the workspaces' search indexes are kept (`$STEWARD_HOME/index`, one owner-only
    /// folder per workspace; SPEC K).
    pub index_dir: PathBuf,
    /// The runs this process executes, shared with the lease keeper
    /// ([`crate::recovery::keep_leases`]) and the front ends that cancel or list them.
    pub executing: Arc<crate::recovery::ExecutingRuns>,
    /// The time the runs of this process stamp and judge by: when a run, an event, a request
    /// was made; whether an approval or an elicitation expired, whether a grant still holds.
    pub clock: Arc<dyn crate::clock::Clock>,
    /// The decisions the runs of this process wait on (approvals, MCP servers' requests for
    /// input), submitted by every front end and judged by [`Runtime::clock`].
    pub decisions: Arc<crate::decisions::DecisionQueue>,
    /// How the steps of generated tools are started (`steward __tool-worker` for the `steward`
    /// binary, [`Runtime::with_tool_worker`]); `None`: generated tools fail closed, saying why.
    pub tool_worker: Option<steward_generated::WorkerCommand>,
    /// The OpenTelemetry exporters its runs started (SPEC R3; one per distinct settings, none
    /// while export is off), flushed by [`Runtime::shutdown`].
    pub telemetry: Arc<steward_telemetry::Exporters>,
}

impl Runtime {
    /// The runtime of the state directory `home`: full outputs of capped tool results go to
    /// `home/outputs`, rollback snapshots to `home/snapshots`, search indexes to `home/index`
    /// (all created when first needed);
    /// `store`, `redactor` and `approval_key` are shared by every run of the process, and so
    /// are the registry of the runs it executes (empty at first), the clock approvals and
    /// grants are judged by (the system clock; [`Runtime::with_clock`] sets another), the
    /// queue of the decisions its runs wait on (empty at first) and the telemetry exporters
    /// (none started). `home` is registered with [`steward_config::state_paths::register`]: no
    /// sandboxed program of the process sees it.
    pub fn new(
        home: &Path,
        store: Arc<dyn Store>,
        redactor: impl Into<Arc<Redactor>>,
        approval_key: ApprovalKey,
    ) -> Runtime {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        // No sandboxed program of this process sees the state folder.
        steward_config::state_paths::register(home);
        Runtime {
            store,
            redactor: redactor.into(),
            approval_key,
            home_dir: home.to_path_buf(),
            outputs_dir: home.join("outputs"),
            snapshots_dir: home.join("snapshots"),
            index_dir: home.join("index"),
            executing: Arc::new(ExecutingRuns::new()),
            clock: clock.clone(),
            decisions: Arc::new(DecisionQueue::new(clock)),
            tool_worker: crate::generated::worker_from_env(),
            telemetry: Arc::new(steward_telemetry::Exporters::new()),
        }
    }

    /// Sends the spans its runs queued for export and stops the exporters, waiting at most
    /// [`steward_telemetry::SHUTDOWN_TIMEOUT`] (an unreachable receiver costs at most that);
    /// nothing to do while export is off. Call it when the front end is done with the runtime
    /// (a command's end, a server's stop); a run after it starts its exporter afresh.
    pub async fn shutdown(&self) {
        self.telemetry.shutdown(steward_telemetry::SHUTDOWN_TIMEOUT).await;
    }

    /// Where the MCP logins of `owner` are kept (`$STEWARD_HOME/mcp-logins/…`, see
    /// [`steward_mcp::oauth::TokenPlace`]).
    pub fn mcp_logins(&self, owner: &str) -> steward_mcp::oauth::TokenPlace {
        steward_mcp::oauth::TokenPlace::new(&self.home_dir, owner)
    }

    /// The same runtime reading the time from `clock` (a [`crate::clock::ManualClock`] in a
    /// test that moves time on to expire approvals and grants), with a fresh decision queue
    /// judging expiry by it: set the clock before any run starts.
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Runtime {
        Runtime { decisions: Arc::new(DecisionQueue::new(clock.clone())), clock, ..self }
    }

    /// The same runtime starting generated tools' steps with `worker`, unless
    /// `STEWARD_TOOL_WORKER` names another (`WORKER_ENV`, which wins).
    pub fn with_tool_worker(self, worker: steward_generated::WorkerCommand) -> Runtime {
        Runtime { tool_worker: crate::generated::worker_from_env().or(Some(worker)), ..self }
    }

    /// The same runtime with `redactor` in place of its own (a redactor that also knows more
    /// secret values: the hub's bearer credential, a workspace's secret files).
    pub fn with_redactor(&self, redactor: Redactor) -> Runtime {
        Runtime { redactor: Arc::new(redactor), ..self.clone() }
    }
}
