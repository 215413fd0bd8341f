//! Generated tools (SPEC G) as the rest of Steward sees them: the [`GeneratedTool`] a run
//! offers once it is registered, the generator that writes new ones, where the worker
//! program is, and loading an owner's registered tools into a run's registry.
//!
//! The pipeline that writes, checks, probes, approves and registers a tool is
//! `orchestrator::generate`; the interpreter and its confinement are in `steward-generated`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::Value;
use steward_generated::{FetchPolicy, HostEnv, HttpMode, StepLimits, StepMode, WorkerCommand, WriteQuota};
use steward_protocol::{RiskLevel, ToolSpec};
use steward_provider::Provider;
use steward_store::{GeneratedToolRecord, Store, StoreError};

use crate::stage::PlannerChoice;
use steward_config::Config;
use steward_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};

/// Environment variable naming a `steward-tool-worker` program to use instead of
/// `steward __tool-worker` (for embedding programs and tests).
pub const WORKER_ENV: &str = "STEWARD_TOOL_WORKER";

/// The worker `WORKER_ENV` names, when it is set (it wins over the one a front end gives
/// its runtime, [`crate::Runtime::with_tool_worker`]).
pub fn worker_from_env() -> Option<WorkerCommand> {
    let path = std::env::var_os(WORKER_ENV).filter(|p| !p.is_empty())?;
    Some(WorkerCommand { program: PathBuf::from(path), args: Vec::new() })
}

/// Why generated tools cannot run in this process.
pub const NO_WORKER: &str = "generated tools need the tool worker: run Steward through the `steward` binary, or set \
                             STEWARD_TOOL_WORKER to a steward-tool-worker program";

/// Who writes generated tools, and where they keep their files.
#[derive(Clone)]
pub struct Generator {
    /// The generator's provider.
    pub provider: Arc<dyn Provider>,
    /// Its model.
    pub model: String,
    /// Ask the owner before registering (default true).
    pub require_approval: bool,
    /// Where each tool's `sandbox_write` folder is (`<state>/generated/<name>/`).
    pub files_dir: PathBuf,
    /// The most each tool's folder may hold (`[generated_tools] write_quota_bytes`,
    /// `write_quota_files`).
    pub write_quota: WriteQuota,
    /// Names a generated tool may not take besides the built-in ones: the configuration's
    /// `[[tool]]` names (sorted).
    pub configured: Vec<String>,
    /// How generated tools' steps are started (the runtime's); `None`: they fail closed with
    /// [`NO_WORKER`].
    pub worker: Option<WorkerCommand>,
}

/// Why the generator could not be set up; the run does not start.
#[derive(Debug, thiserror::Error)]
pub enum GeneratorError {
    /// `[generated_tools] provider` names no provider.
    #[error("[generated_tools] provider `{0}` is neither a preset nor a [providers.NAME]")]
    UnknownProvider(String),
    /// The provider cannot be built.
    #[error("[generated_tools] provider `{name}`: {message}")]
    Provider {
        /// Its name.
        name: String,
        /// Why.
        message: String,
    },
}

/// The generator of `config` (its own provider, or the planner's), or `None` when generated
/// tools are off.
pub fn generator_for(
    config: &Config,
    planner: &PlannerChoice,
    state_dir: &std::path::Path,
    worker: Option<WorkerCommand>,
) -> Result<Option<Generator>, GeneratorError> {
    let settings = &config.generated_tools;
    if !settings.enabled {
        return Ok(None);
    }
    let files_dir = state_dir.join("generated");
    let (provider, default_model) = match &settings.provider {
        None => (planner.provider.clone(), planner.model.clone()),
        Some(name) => {
            let cfg = config
                .providers
                .get(name)
                .cloned()
                .or_else(|| steward_provider::preset(name))
                .ok_or_else(|| GeneratorError::UnknownProvider(name.clone()))?;
            let env = |n: &str| std::env::var(n).ok();
            let provider = steward_provider::build_provider(name, &cfg, &env)
                .map_err(|e| GeneratorError::Provider { name: name.clone(), message: e.message })?;
            let model = cfg.default_model.clone().unwrap_or_else(|| provider.default_model().to_string());
            (provider, model)
        }
    };
    let model = settings.model.clone().unwrap_or(default_model);
    let write_quota = WriteQuota { bytes: settings.write_quota_bytes, files: settings.write_quota_files };
    let mut configured: Vec<String> = config.tools.iter().map(|t| t.name.clone()).collect();
    configured.sort();
    Ok(Some(Generator {
        provider,
        model,
        require_approval: settings.require_approval,
        files_dir,
        write_quota,
        configured,
        worker,
    }))
}

impl Generator {
    /// Why a generated tool may not be named `name`, or `None` when it may: a name that a
    /// built-in tool (offered in this run or not: `shell_command`, `search_index`, the `lsp_*`
    /// tools), a `[[tool]]` or an MCP server's tools (`SERVER__TOOL`) could mean.
    pub fn reserved(&self, name: &str) -> Option<String> {
        let why = if name.contains("__") {
            "names with `__` are MCP tools' (`SERVER__TOOL`)"
        } else if ToolRegistry::builtin().get(name).is_some()
            || name == steward_policy::SHELL_TOOL
            || name == steward_tools::SEARCH_INDEX_TOOL
        {
            "it is a built-in tool's name (offered only when its configuration turns it on)"
        } else if name.starts_with("lsp_") {
            "`lsp_*` names are the language-server tools'"
        } else if self.configured.binary_search_by(|n| n.as_str().cmp(name)).is_ok() {
            "a `[[tool]]` of the configuration has it"
        } else {
            return None;
        };
        Some(format!("`{name}` is reserved: {why}; a generated tool may not take it"))
    }
}

/// A registered generated tool, as a run offers it. Risk `medium` (so the default policy asks
/// before each call; a policy rule may say otherwise, never making it `safe`), no workspace
/// access, and an untrusted output: what it returns may come from the web.
pub struct GeneratedTool {
    spec: ToolSpec,
    record: GeneratedToolRecord,
    files_dir: PathBuf,
    write_quota: WriteQuota,
    worker: Option<WorkerCommand>,
}

impl GeneratedTool {
    /// The tool of a registered version, written by `generator` (its folder and quota).
    pub fn new(record: GeneratedToolRecord, generator: &Generator) -> Self {
        let spec = ToolSpec {
            name: record.name.clone(),
            description: format!(
                "{} (generated tool {}, source sha256 {})",
                record.description,
                record.versioned_name(),
                &record.source_hash[..12.min(record.source_hash.len())]
            ),
            input_schema: record.input_schema.clone(),
            risk: RiskLevel::Medium,
            writes: false,
            path_inputs: Vec::new(),
            untrusted_output: true,
        };
        // Each owner's tools write in a folder of that owner's: two owners' tools of one name
        // never share files.
        let files_dir = generator.files_dir.join(owner_folder(&record.owner_id)).join(&record.name);
        GeneratedTool { spec, record, files_dir, write_quota: generator.write_quota, worker: generator.worker.clone() }
    }
}

/// The folder name of `owner_id`'s generated tools: the first 16 hex digits of its SHA-256 (an
/// owner id holds `:` and other characters a folder name should not).
fn owner_folder(owner_id: &str) -> String {
    steward_tools::rollback::sha256_hex(owner_id.as_bytes())[..16].to_string()
}

/// The host side of a step: `http_get` as `http` says (public addresses only when live, plus
/// the `.test` names the egress test hook pins in debug builds), the tool's own folder under
/// `quota`, the configuration's accepted weaker sandbox. Fails, for a live `http_get`, when the
/// test hook is set in a release build (or does not parse).
pub(crate) fn host_env(
    files_dir: PathBuf,
    quota: WriteQuota,
    http: HttpMode,
    ctx: &ToolContext,
) -> Result<HostEnv, String> {
    // A stubbed `http_get` reaches nothing: the test hook does not concern it.
    let test_hosts = match http {
        HttpMode::Live => steward_tools::test_hosts().map_err(|e| e.to_string())?,
        HttpMode::Stub => steward_egress::TestHosts::default(),
    };
    Ok(HostEnv {
        fetch: FetchPolicy { test_hosts, ..FetchPolicy::default() },
        http,
        write_dir: files_dir,
        write_quota: quota,
        accept_weaker: ctx.accept_weaker.clone(),
    })
}

#[async_trait]
impl Tool for GeneratedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// `http_get` reaches any public address.
    fn reaches_any_host(&self) -> bool {
        true
    }

    fn is_generated(&self) -> bool {
        true
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let worker = self.worker.clone().ok_or_else(|| ToolError::failed(NO_WORKER))?;
        let host =
            host_env(self.files_dir.clone(), self.write_quota, HttpMode::Live, ctx).map_err(ToolError::failed)?;
        let started = Instant::now();
        let report = steward_generated::run_step(
            &worker,
            StepMode::Call,
            &self.record.source,
            args,
            StepLimits::default(),
            &host,
            &ctx.cancel,
        )
        .await;
        // Each real `http_get` is an egress record of the call (host, port, status, bytes).
        if let Some(log) = &ctx.egress {
            log.extend(report.egress.clone());
        }
        let mut content = match report.outcome {
            Ok(value) => serde_json::to_string(&value).unwrap_or_else(|_| "null".into()),
            Err(e) => {
                return Err(ToolError::failed(format!(
                    "{} failed after {} ms: {e}",
                    self.record.versioned_name(),
                    started.elapsed().as_millis()
                )));
            }
        };
        if !report.host_calls.is_empty() {
            content.push_str(&format!("\n(host calls: {})", report.host_calls.join("; ")));
        }
        if report.quota_hit {
            content.push_str(&format!(
                "\n(sandbox_write quota reached: {} bytes, {} files per tool)",
                self.write_quota.bytes, self.write_quota.files
            ));
        }
        Ok(ToolOutput { content, sandbox: format!("generated:{}", report.profile), ..ToolOutput::default() })
    }
}

/// Adds the owner's registered tools (the newest version of each name not removed) to
/// `tools`, which must allow adding; names a built-in or configured tool has are skipped.
/// Returns the names added.
pub async fn load_registered(
    store: &Arc<dyn Store>,
    owner_id: &str,
    tools: &ToolRegistry,
    generator: &Generator,
) -> Result<Vec<String>, StoreError> {
    let Some(registry) = store.generated_registry() else { return Ok(Vec::new()) };
    let records = registry.generated_tools(owner_id).await?;
    let mut added = Vec::new();
    for record in steward_store::generated::current_versions(&records) {
        if generator.reserved(&record.name).is_some() {
            continue;
        }
        if tools.add_while_running(Arc::new(GeneratedTool::new(record.clone(), generator))).is_ok() {
            added.push(record.versioned_name());
        }
    }
    Ok(added)
}

/// Removes the owner's generated tool `name` (every version, or only `version`) on behalf of
/// `by` and writes the audit record of it (action `generated_tool_remove`). Returns the
/// versions removed now; empty when there was nothing left to remove (nothing is recorded
/// then). A removed version number is never given again. `clock` dates the removal.
pub async fn remove_registered(
    store: &Arc<dyn Store>,
    clock: &dyn crate::clock::Clock,
    owner_id: &str,
    name: &str,
    version: Option<u32>,
    by: &str,
) -> Result<Vec<u32>, StoreError> {
    let Some(registry) = store.generated_registry() else { return Ok(Vec::new()) };
    let removed = registry.remove_generated_tool(owner_id, name, version, by, clock.now()).await?;
    if removed.is_empty() {
        return Ok(removed);
    }
    let versions: Vec<String> = removed.iter().map(|v| format!("{name}@v{v}")).collect();
    store
        .append_audit(steward_protocol::AuditEntry::owner_action(
            by,
            "generated_tool_remove",
            serde_json::json!({ "owner": owner_id, "name": name, "versions": removed }),
            format!("{by} removed the generated tool {}", versions.join(", ")),
        ))
        .await?;
    store.flush().await?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_owner_has_a_folder_of_its_own() {
        let (ann, bob) = (super::owner_folder("local:ann"), super::owner_folder("web:0123456789abcdef"));
        assert_ne!(ann, bob);
        assert!(ann.len() == 16 && ann.bytes().all(|b| b.is_ascii_hexdigit()), "{ann}");
        assert_eq!(ann, super::owner_folder("local:ann"), "the same owner, the same folder");
    }
}
