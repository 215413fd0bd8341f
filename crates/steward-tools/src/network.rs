//! The `network` setting of `[[tool]]` and `[shell]`, and running a command under it.
//!
//! - `network = false` (the default): no network at all (an empty network namespace);
//! - `network = true`: the host's whole network, anything anywhere;
//! - `network = ["crates.io", "*.example.com", "mirror.test:8080"]`: only HTTP(S) to those
//!   hosts, through Steward's egress proxy ([`steward_egress`]; the host list rules are in
//!   [`steward_egress::HostRule::parse`]), every connection written to the audit log as an
//!   `egress` record of the call.
//!
//! A host list counts as network for the policy: the tool's default risk is `medium` and its
//! output taints the run, as with `true`.
//!
//! Test-only: in debug builds the environment variable [`TEST_HOSTS_VAR`]
//! (`allowed.test=127.0.0.1;other.test=::1`) pins names under `.test` to addresses that may
//! be non-public, so the test suite can reach servers on loopback; release builds refuse to
//! start a proxy while it is set.

use std::sync::{Arc, Mutex, PoisonError};

use steward_egress::{EgressProxy, EgressRecord, HostList, ProxyConfig, TestHosts};
use steward_sandbox::{ExecOutput, ExecRequest};

use super::{ToolContext, ToolError};

/// The test-only variable pinning `.test` names (debug builds only; see the module docs).
pub const TEST_HOSTS_VAR: &str = "STEWARD_EGRESS_TEST_HOSTS";

use steward_config::Network;

/// Where a call's egress records go: set per call by the orchestrator, which writes each
/// into the audit log after the call.
#[derive(Debug, Clone, Default)]
pub struct EgressLog(Arc<Mutex<Vec<EgressRecord>>>);

impl EgressLog {
    /// Adds records.
    pub fn extend(&self, records: Vec<EgressRecord>) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend(records);
    }

    /// Takes every record so far.
    pub fn take(&self) -> Vec<EgressRecord> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Runs `request` in the sandbox with `network`: no network, everything, or only the hosts
/// of the list through an egress proxy started for this call (its records go to
/// `ctx.egress`, also when the command fails). Errors as [`super::exec::run_sandboxed`], and
/// `tool_failed` when the proxy cannot start.
pub async fn run_with_network(
    mut request: ExecRequest,
    network: &Network,
    ctx: &ToolContext,
) -> Result<ExecOutput, ToolError> {
    let hosts = match network {
        Network::Off | Network::All => {
            request.network = network == &Network::All;
            return super::exec::run_sandboxed(request, ctx).await;
        }
        Network::Hosts(hosts) => hosts,
    };
    let list = HostList::parse(hosts).map_err(|e| ToolError::failed(format!("network: {e}")))?;
    let mut config = ProxyConfig::new(list);
    config.test_hosts = test_hosts().map_err(|e| ToolError::failed(e.to_string()))?;
    let proxy = EgressProxy::start(config).map_err(|e| ToolError::failed(format!("the command was not run: {e}")))?;
    request.network = false;
    request.egress_proxy = Some(proxy.socket_path().to_path_buf());
    let mut running = RunningProxy { proxy: Some(proxy), log: ctx.egress.clone() };
    let result = super::exec::run_sandboxed(request, ctx).await;
    if let Some(proxy) = running.proxy.take() {
        deliver(running.log.as_ref(), proxy.finish().await);
    }
    result
}

/// A proxy whose records reach the log even when the call is dropped midway (the run was
/// interrupted): then the records so far are delivered as the proxy stops.
struct RunningProxy {
    proxy: Option<EgressProxy>,
    log: Option<EgressLog>,
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        if let Some(proxy) = self.proxy.take() {
            deliver(self.log.as_ref(), proxy.records());
        }
    }
}

/// Hands records to the call's log, or logs them when the call has none.
fn deliver(log: Option<&EgressLog>, records: Vec<EgressRecord>) {
    match log {
        Some(log) => log.extend(records),
        None => {
            for r in records {
                tracing::info!(host = %r.host, port = r.port, verdict = r.verdict.as_str(), reason = %r.reason, "egress");
            }
        }
    }
}

/// Why `TEST_HOSTS_VAR` is not honoured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TestHostsError {
    /// Set in a release build, which refuses the test-only setting.
    #[error("the command was not run: {TEST_HOSTS_VAR} is set, a test-only setting that release builds refuse")]
    Release,
    /// Its value is not UTF-8.
    #[error("{TEST_HOSTS_VAR} is not UTF-8")]
    NotUtf8,
    /// Its value does not parse.
    #[error("{TEST_HOSTS_VAR}: {0}")]
    Invalid(String),
}

/// The `.test` names pinned by `TEST_HOSTS_VAR` (debug builds), or the refusal to honour
/// it (release builds).
pub fn test_hosts() -> Result<TestHosts, TestHostsError> {
    let Some(value) = std::env::var_os(TEST_HOSTS_VAR) else { return Ok(TestHosts::default()) };
    if !cfg!(debug_assertions) {
        return Err(TestHostsError::Release);
    }
    let text = value.to_str().ok_or(TestHostsError::NotUtf8)?;
    TestHosts::parse(text).map_err(|e| TestHostsError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize)]
    struct Holder {
        network: Network,
    }

    fn parse(text: &str) -> Result<Network, toml::de::Error> {
        toml::from_str::<Holder>(text).map(|h| h.network)
    }

    #[test]
    fn network_is_a_boolean_or_a_checked_host_list() {
        assert_eq!(parse("network = false").unwrap(), Network::Off);
        assert_eq!(parse("network = true").unwrap(), Network::All);
        assert_eq!(
            parse("network = [\"crates.io\", \"*.example.com\", \"m.test:8080\"]").unwrap(),
            Network::Hosts(vec!["crates.io".into(), "*.example.com".into(), "m.test:8080".into()])
        );
        assert!(Network::Hosts(vec!["x.example".into()]).enabled());
        for bad in ["network = []", "network = [\"https://crates.io\"]", "network = \"crates.io\"", "network = [1]"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let err = parse("network = [\"*.com\"]").unwrap_err().to_string();
        assert!(err.contains("*.com"), "{err}");
    }

    /// A call dropped while its command runs (the run was interrupted) still hands over the
    /// records of the connections made so far.
    #[tokio::test]
    async fn egress_records_survive_a_call_dropped_midway() {
        let dir = tempfile::tempdir().unwrap();
        let log = EgressLog::default();
        let ctx = ToolContext {
            workspace: Arc::new(steward_policy::Workspace::open(dir.path(), &[]).unwrap()),
            cancel: tokio_util::sync::CancellationToken::new(),
            env_allow: Vec::new(),
            timeout_ms: 30_000,
            snapshots: crate::rollback::Snapshots::new(&dir.path().join("snapshots"), "run"),
            accept_weaker: Vec::new(),
            credentials: Default::default(),
            sandbox: Default::default(),
            elicitor: None,
            egress: Some(log.clone()),
        };
        let marker = dir.path().join("asked");
        let script = format!("curl -s http://unlisted.example/; : > {}; sleep 30", marker.display());
        let request = ExecRequest {
            writable: vec![dir.path().to_path_buf()],
            ..ExecRequest::new(vec!["sh".into(), "-c".into(), script], dir.path().to_path_buf())
        };
        let network = Network::Hosts(vec!["crates.io".into()]);
        let running = run_with_network(request, &network, &ctx);
        let asked = async {
            while !marker.exists() {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            result = running => panic!("the command ended early: {result:?}"),
            _ = asked => {}
        }
        let records = log.take();
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(records[0].host, "unlisted.example");
        assert_eq!(records[0].verdict, steward_egress::Verdict::Refused);
    }
}
