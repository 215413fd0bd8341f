//! Running one case once: a fresh temporary git workspace (`note.txt` = `old\n` committed, like
//! MrEric's runner), its own state directory (store, outputs, snapshots, approval key) and its
//! own configuration directory (the user's `~/.config/steward` is never read), a scripted
//! approver that approves only what the case says, and the run's outputs collected into a
//! [`RunOutcome`].

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use steward_config::Config;
use steward_core::EventObserver;
use steward_core::PlannerOverrides;
use steward_core::{ApprovalAnswer, ApprovalKey, ApprovalScope, Approver, NoApprover};
use steward_core::{PlannerChoice, RoleName, RunMode, RunOptions, Runtime, Task};
use steward_policy::Redactor;
use steward_protocol::{ApprovalRequest, Event, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{SqliteStore, Store, StoreOptions};
use tokio_util::sync::CancellationToken;

use crate::case::{ApprovalAction, Approvals, Case};
use crate::outcome::{RunOutcome, RunSummary};
use crate::{pipeline, scenarios};

/// Owner id of every eval run.
pub const OWNER: &str = "local:eval-runner";

/// How cases are run.
#[derive(Debug, Clone, Default)]
pub struct EvalOptions {
    /// Runs per case (0 is treated as 1).
    pub runs: u32,
    /// Real provider for cases without a fake scenario (overrides the case's).
    pub provider: Option<String>,
    /// Model id for that provider.
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server for that provider.
    pub base_url: Option<String>,
    /// Configuration merged over every case's own (later keys win), e.g. to show that a
    /// deliberately broken build (a policy allowing everything) makes cases fail. For testing
    /// the evals themselves; `steward eval` never sets it.
    pub config_overlay: Option<toml::Table>,
    /// How the cases' generated tools start their steps (the `steward` binary gives itself);
    /// `None` unless `STEWARD_TOOL_WORKER` names one: cases that need generated tools are
    /// skipped, saying why.
    pub tool_worker: Option<steward_generated::WorkerCommand>,
}

/// Capabilities Steward has, as named in cases' `requires`.
pub const CAPABILITIES: &[&str] =
    &["shell", "patches", "rollback", "command_tools", "hooks", "toolchains", "mcp", "memory", "roles", "rag"];

/// Why Steward cannot run a case needing `capability`, or `None` when it can.
pub fn missing_capability(capability: &str) -> Option<String> {
    if CAPABILITIES.contains(&capability) {
        return None;
    }
    Some(match capability {
        "generated_tools" => "requires generated_tools: tool generation is not built".into(),
        "conversations" => "requires conversations: conversations exist in `steward serve`, but the eval \
                            runner runs single tasks"
            .into(),
        other => format!("requires {other}, which Steward does not have"),
    })
}

/// Why `case` is skipped under `options`, or `None` when it runs.
pub fn skip_reason(case: &Case, options: &EvalOptions) -> Option<String> {
    if let Some(unknown) = case.fail_roles.iter().find(|r| pipeline::role(r).is_none()) {
        return Some(format!(
            "fails role `{unknown}`, which the role pipeline does not have (roles: {})",
            RoleName::ALL.map(|r| r.as_str()).join(", ")
        ));
    }
    let missing = |c: &String| match c.as_str() {
        // Generated tools run in the tool worker, which only the `steward` binary provides.
        "generated_tools" if options.tool_worker.is_some() || steward_core::tool_worker_from_env().is_some() => None,
        "generated_tools" => Some(format!(
            "requires generated_tools: tool generation needs the tool worker, which this process does not \
             have ({})",
            steward_core::NO_TOOL_WORKER
        )),
        // A case that continues an earlier case's run has that run as its conversation.
        "conversations" if case.after.is_some() => None,
        other => missing_capability(other),
    };
    if let Some(reason) = case.requires.iter().find_map(missing) {
        return Some(reason);
    }
    if let Some(after) = &case.after
        && case.earlier.is_none()
    {
        return Some(format!("continues the case `{after}`, which is not among the cases run"));
    }
    let fake = case.rounds.is_some() || case.scenario.is_some();
    let real =
        options.provider.is_some() || options.base_url.is_some() || case.provider.is_some() || case.base_url.is_some();
    if !fake && !real {
        return Some("no fake scenario and no provider: pass --provider/--model or --base-url".into());
    }
    None
}

/// Answers approval requests as the case says; never approves anything else.
struct CaseApprover {
    approvals: Approvals,
}

#[async_trait]
impl Approver for CaseApprover {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        match self.approvals.for_tool(&request.tool) {
            ApprovalAction::Approve => ApprovalAnswer::Approve {
                token: token.to_string(),
                decided_by: OWNER.to_string(),
                scope: ApprovalScope::Once,
                call_hash: steward_core::call_hash(request),
            },
            ApprovalAction::Reject => {
                ApprovalAnswer::Reject { reason: "rejected by the eval case".into(), decided_by: OWNER.to_string() }
            }
            ApprovalAction::None => NoApprover.ask(request, token).await,
            ApprovalAction::Ignore => std::future::pending().await,
        }
    }
}

#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl EventObserver for Recorder {
    fn on_event(&self, event: &Event) {
        match self.0.lock() {
            Ok(mut events) => events.push(event.clone()),
            Err(poisoned) => poisoned.into_inner().push(event.clone()),
        }
    }
}

impl Recorder {
    fn take(&self) -> Vec<Event> {
        match self.0.lock() {
            Ok(mut events) => std::mem::take(&mut *events),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}

/// Runs `case` once and collects what it left. Harness problems (workspace, configuration,
/// provider, storage) are reported in [`RunOutcome::harness_error`], never as a panic.
pub async fn run_once(case: &Case, options: &EvalOptions, redactor: &Arc<Redactor>) -> RunOutcome {
    let dir = match tempfile::Builder::new().prefix("steward-eval-").tempdir() {
        Ok(dir) => dir,
        Err(e) => return harness_error(format!("cannot create a temporary directory: {e}")),
    };
    match run_in(dir.path(), case, options, redactor).await {
        Ok(outcome) => outcome,
        Err(e) => harness_error(e.to_string()),
    }
}

/// Why a case could not be set up or its run read back; reported as
/// [`RunOutcome::harness_error`].
#[derive(Debug, thiserror::Error)]
enum HarnessError {
    /// A scratch folder could not be made.
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The case's configuration could not be written out as TOML.
    #[error("case config: {0}")]
    ConfigText(#[from] toml::ser::Error),
    /// The case's configuration file could not be written.
    #[error("cannot write the case config: {0}")]
    ConfigWrite(std::io::Error),
    /// The case's configuration is invalid.
    #[error("case config: {0}")]
    Config(#[from] steward_config::ConfigError),
    /// The workspace folder could not be resolved.
    #[error("workspace: {0}")]
    Workspace(std::io::Error),
    /// The run could not be composed (tools, MCP servers, policy).
    #[error(transparent)]
    Prepare(#[from] steward_core::PrepareError),
    /// The case names a built-in scenario that does not exist.
    #[error("unknown built-in scenario `{0}` (built-in: {list})", list = scenarios::BUILTIN.join(", "))]
    UnknownScenario(String),
    /// The planner could not be resolved from the options or the case.
    #[error(transparent)]
    Planner(#[from] steward_core::PlannerError),
    /// The store could not be opened or read.
    #[error("store: {0}")]
    Store(#[from] steward_store::StoreError),
    /// A case file's path leaves the workspace.
    #[error("case file `{0}` is not a relative path inside the workspace")]
    OutsideWorkspace(String),
    /// A case file lies in `.git` or `.steward`.
    #[error("case file `{0}` is inside .git or .steward, which a case may not write")]
    Protected(String),
    /// A case file could not be written.
    #[error("{rel}: {source}")]
    WriteFile {
        /// The file, relative to the workspace.
        rel: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The case runs the role pipeline, but no role plan was resolved.
    #[error("roles mode, but no role plan was resolved")]
    NoRolePlan,
    /// The role pipeline could not be scripted or given its failing roles.
    #[error(transparent)]
    Pipeline(#[from] crate::pipeline::PipelineError),
    /// A fact the case seeds could not be remembered.
    #[error("cannot remember `{fact}`: {source}")]
    Remember {
        /// The fact's text.
        fact: String,
        /// Why it was not stored.
        source: steward_core::memory::MemoryError,
    },
    /// The earlier case a case continues (`after`) could not start or store its run.
    #[error("the earlier run `{name}` could not start or store: {source}")]
    EarlierRun {
        /// The earlier case's name.
        name: String,
        /// Why its run failed.
        source: steward_core::RunError,
    },
    /// The owner's remembered facts could not be read after the run.
    #[error("facts: {0}")]
    Facts(steward_core::memory::MemoryError),
    /// A case's generator rounds could not be written out.
    #[error("cannot write the generator script: {0}")]
    GeneratorScript(std::io::Error),
    /// `git` could not be started.
    #[error("cannot run git: {0}")]
    GitSpawn(std::io::Error),
    /// A `git` command of the fixture failed.
    #[error("git {args}: {stderr}")]
    Git {
        /// Its arguments, space-separated.
        args: String,
        /// Its trimmed standard error.
        stderr: String,
    },
}

fn harness_error(message: String) -> RunOutcome {
    RunOutcome { harness_error: Some(message), ..RunOutcome::default() }
}

async fn run_in(
    dir: &Path,
    case: &Case,
    options: &EvalOptions,
    redactor: &Arc<Redactor>,
) -> Result<RunOutcome, HarnessError> {
    let ws = dir.join("ws");
    let home = dir.join("home");
    let config_dir = dir.join("config").join("steward");
    for d in [&ws, &home, &config_dir] {
        std::fs::create_dir_all(d).map_err(|source| HarnessError::CreateDir { path: d.clone(), source })?;
    }
    prepare_workspace(&ws, case).await?;
    let ws = std::fs::canonicalize(&ws).map_err(HarnessError::Workspace)?;
    let store = SqliteStore::open(
        &home.join("steward.db"),
        StoreOptions { audit_anchor: Some(home.join("audit.anchor")), ..StoreOptions::default() },
    )
    .await?;
    let store: Arc<dyn Store> = Arc::new(store);
    let runtime = Runtime::new(&home, store.clone(), redactor.clone(), ApprovalKey::generate());
    let runtime = match &options.tool_worker {
        Some(worker) => runtime.with_tool_worker(worker.clone()),
        None => runtime,
    };
    // A scenario whose search index cannot be used: its folder is a regular file.
    if case.scenario.as_deref().is_some_and(scenarios::breaks_index) {
        std::fs::write(&runtime.index_dir, "not a folder\n")
            .map_err(|source| HarnessError::CreateDir { path: runtime.index_dir.clone(), source })?;
    }
    // Remembered facts the case seeds, stored as "remember that …" stores them.
    for fact in &case.memory {
        steward_core::memory::remember(store.as_ref(), runtime.clock.as_ref(), redactor.as_ref(), OWNER, fact)
            .await
            .map_err(|source| HarnessError::Remember { fact: fact.clone(), source })?;
    }
    let places = Places { dir, ws: &ws, config_dir: &config_dir };
    // A case that continues another (`after`) runs that one first, in the same workspace and
    // state; its task and answer become this run's conversation history.
    let mut history = Vec::new();
    if let Some(earlier) = &case.earlier {
        let first = one_run(&places, earlier, options, &runtime, Vec::new()).await?;
        let tainted = first.events.iter().any(|e| matches!(e.kind, steward_protocol::EventKind::RunTainted { .. }));
        let record = first.result.map_err(|source| HarnessError::EarlierRun { name: earlier.name.clone(), source })?;
        history.push(steward_core::Turn {
            task: earlier.task.clone(),
            answer: record.final_text.unwrap_or_default(),
            run_id: record.id,
            tainted,
        });
    }
    let OneRun { result, events, duration_ms, fake } = one_run(&places, case, options, &runtime, history).await?;
    // The case's spans (telemetry on) are sent before its state is read back.
    runtime.shutdown().await;
    let mut outcome = RunOutcome { events, duration_ms, ..RunOutcome::default() };
    let record = match result {
        Ok(record) => record,
        Err(e) => {
            outcome.harness_error = Some(format!("the run could not start or store: {e}"));
            return Ok(outcome);
        }
    };
    outcome.summary = Some(RunSummary {
        status: record.status,
        stop_reason: record.stop_reason.map(|r| r.as_str().to_string()),
        final_text: record.final_text.clone(),
        error_class: record.error_class.map(|c| c.as_str().to_string()),
        error: record.error.clone(),
        rounds: record.rounds,
        tool_calls: record.tool_calls,
        input_tokens: record.input_tokens,
        output_tokens: record.output_tokens,
    });
    outcome.artifacts.push(("run".into(), serde_json::to_value(&record).unwrap_or_default()));
    let stored = store.events(&record.id, 0).await?;
    outcome.artifacts.push(("trace".into(), serde_json::to_value(&stored).unwrap_or_default()));
    for (i, audit) in store.audit_records(Some(&record.id)).await?.iter().enumerate() {
        outcome.artifacts.push((format!("audit[{i}]"), serde_json::to_value(audit).unwrap_or_default()));
    }
    outcome.rollback_tokens = store.rollbacks(&record.id).await?.into_iter().map(|r| r.token).collect();
    outcome.artifacts.extend(saved_outputs(&runtime.outputs_dir.join(&record.id)));
    if let Some(fake) = fake {
        for (i, request) in fake.requests().iter().enumerate() {
            outcome.artifacts.push((format!("model_request[{i}]"), serde_json::to_value(request).unwrap_or_default()));
            outcome
                .model_inputs
                .push(request.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n"));
        }
    }
    outcome.facts = steward_core::memory::list(store.as_ref(), OWNER)
        .await
        .map_err(HarnessError::Facts)?
        .into_iter()
        .map(|f| f.text)
        .collect();
    for path in case.expect.files.keys() {
        outcome.files.insert(path.clone(), read_workspace_file(&ws, path));
    }
    Ok(outcome)
}

/// Where a case's runs happen.
struct Places<'a> {
    dir: &'a Path,
    ws: &'a Path,
    config_dir: &'a Path,
}

/// What one run of a case left.
struct OneRun {
    result: Result<steward_store::RunRecord, steward_core::RunError>,
    events: Vec<Event>,
    duration_ms: u64,
    fake: Option<Arc<FakeProvider>>,
}

/// Writes `case`'s configuration (with its scripted generator, if any), prepares and runs it.
async fn one_run(
    places: &Places<'_>,
    case: &Case,
    options: &EvalOptions,
    runtime: &Runtime,
    history: Vec<steward_core::Turn>,
) -> Result<OneRun, HarnessError> {
    // The scenario's own configuration (an MCP server it needs) under the case's.
    let mut table = case.scenario.as_deref().map(scenarios::config).unwrap_or_default();
    merge(&mut table, case.config.clone());
    if let Some(rounds) = &case.generator_rounds {
        // The generator of generated tools: a fake provider playing the case's rounds.
        let scenario = places.dir.join(format!("generator-{}.toml", case.name));
        let mut script = toml::Table::new();
        script.insert("round".into(), toml::Value::Array(rounds.iter().cloned().map(toml::Value::Table).collect()));
        std::fs::write(&scenario, toml::to_string(&script)?).map_err(HarnessError::GeneratorScript)?;
        let mut provider = toml::Table::new();
        provider.insert("kind".into(), "fake".into());
        provider.insert("scenario".into(), scenario.display().to_string().into());
        let mut providers = toml::Table::new();
        providers.insert("case_generator".into(), provider.into());
        let mut generated = toml::Table::new();
        generated.insert("provider".into(), "case_generator".into());
        let mut overlay = toml::Table::new();
        overlay.insert("providers".into(), providers.into());
        overlay.insert("generated_tools".into(), generated.into());
        merge(&mut table, overlay);
    }
    if let Some(overlay) = &options.config_overlay {
        merge(&mut table, overlay.clone());
    }
    let text = toml::to_string(&table)?;
    std::fs::write(places.config_dir.join("config.toml"), text).map_err(HarnessError::ConfigWrite)?;
    let config = Config::load(Some(places.config_dir), places.ws)?;
    let (planner, fake) = planner_for(case, options, &config)?;
    // Composed like every run; MCP servers a case configures are connected, as `steward run`
    // connects them. In roles mode a scripted planner gets scripted roles around it; a real
    // provider plays the roles `[roles]` of the case's configuration assigns.
    let roles = case.runs_roles();
    let failing: Vec<RoleName> = case.fail_roles.iter().filter_map(|r| pipeline::role(r)).collect();
    let run_options = match (&fake, roles) {
        (Some(_), _) | (None, false) => {
            RunOptions { planner_choice: Some(planner.clone()), mode: Some(RunMode::Loop), ..RunOptions::default() }
        }
        (None, true) => {
            RunOptions { planner: real_overrides(case, options), mode: Some(RunMode::Roles), ..RunOptions::default() }
        }
    };
    let mut prepared = steward_core::prepare(config, places.ws, &run_options).await?;
    if roles {
        match (&fake, prepared.roles.as_mut()) {
            (Some(_), _) => {
                let plan = pipeline::scripted_plan(&planner, &failing)?;
                prepared.planner = plan.planner.clone();
                prepared.roles = Some(plan);
            }
            (None, Some(plan)) => {
                pipeline::fail_roles(plan, &failing)?;
                prepared.planner = plan.planner.clone();
            }
            (None, None) => return Err(HarnessError::NoRolePlan),
        }
    }
    let recorder = Arc::new(Recorder::default());
    let cancel = CancellationToken::new();
    let canceller = case.cancel_after_ms.map(|ms| {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            cancel.cancel();
        })
    });
    let ready = prepared.into_run(Task {
        task: case.task.clone(),
        owner_id: OWNER.to_string(),
        approver: Arc::new(CaseApprover { approvals: case.approvals.clone() }),
        observer: recorder.clone(),
        cancel,
        run_id: None,
        history,
        attachments: Vec::new(),
    });
    let started = Instant::now();
    let result = ready.run(runtime).await;
    let duration_ms = started.elapsed().as_millis() as u64;
    if let Some(task) = canceller {
        task.abort();
    }
    Ok(OneRun { result, events: recorder.take(), duration_ms, fake })
}

/// The planner: the fake provider playing the case's rounds or built-in scenario, else the
/// real provider from the options or the case, resolved like `steward run` does.
fn planner_for(
    case: &Case,
    options: &EvalOptions,
    config: &Config,
) -> Result<(PlannerChoice, Option<Arc<FakeProvider>>), HarnessError> {
    let rounds = match (&case.rounds, &case.scenario) {
        (Some(rounds), _) => Some(rounds.clone()),
        (None, Some(name)) => {
            Some(scenarios::builtin(name).ok_or_else(|| HarnessError::UnknownScenario(name.clone()))?)
        }
        (None, None) => None,
    };
    if let Some(rounds) = rounds {
        let fake = Arc::new(FakeProvider::new(Scenario { rounds }));
        let choice = PlannerChoice {
            kind: "model".into(),
            provider: fake.clone(),
            model: "fake".into(),
            tool_choice: ToolChoice::parse(case.tool_choice.as_deref().unwrap_or("auto")),
            max_tokens: case.max_tokens,
        };
        return Ok((choice, Some(fake)));
    }
    let env = |name: &str| std::env::var(name).ok();
    let choice = steward_core::resolve_planner(config, &real_overrides(case, options), &env)?;
    Ok((choice, None))
}

/// The real provider a case names, or the options (which win).
fn real_overrides(case: &Case, options: &EvalOptions) -> PlannerOverrides {
    let from_options = options.provider.is_some() || options.base_url.is_some();
    PlannerOverrides {
        planner: Some("model".into()),
        provider: if from_options { options.provider.clone() } else { case.provider.clone() },
        model: options.model.clone().or_else(|| case.model.clone()),
        base_url: if from_options { options.base_url.clone() } else { case.base_url.clone() },
        tool_choice: case.tool_choice.clone(),
        scenario: None,
        max_tokens: case.max_tokens,
    }
}

/// `git init`, `note.txt` = `old\n` and the case's files, committed. Git runs without the
/// user's or the system's git configuration.
async fn prepare_workspace(ws: &Path, case: &Case) -> Result<(), HarnessError> {
    let mut files = vec![("note.txt".to_string(), "old\n".to_string())];
    files.extend(case.scenario.as_deref().map(scenarios::files).unwrap_or_default());
    files.extend(case.files.iter().map(|(k, v)| (k.clone(), v.clone())));
    for (rel, content) in &files {
        let path = confined(ws, rel).ok_or_else(|| HarnessError::OutsideWorkspace(rel.clone()))?;
        // A case describes workspace content, never the repository's own machinery (`.git`
        // config and hooks run programs) or Steward's configuration (use `[case.config]`).
        if Path::new(rel).components().any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
            || steward_policy::is_protected_path(Path::new(rel))
        {
            return Err(HarnessError::Protected(rel.clone()));
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| HarnessError::WriteFile { rel: rel.clone(), source })?;
        }
        std::fs::write(&path, content).map_err(|source| HarnessError::WriteFile { rel: rel.clone(), source })?;
    }
    // Hooks and fsmonitor off: nothing in the fixture may run a program.
    let hardening = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"];
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=eval-runner",
            "-c",
            "user.email=eval-runner@localhost",
            "commit",
            "-q",
            "-m",
            "eval fixture",
        ],
    ] {
        let out = tokio::process::Command::new("git")
            .args(hardening)
            .args(args)
            .current_dir(ws)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .await
            .map_err(HarnessError::GitSpawn)?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(HarnessError::Git { args: args.join(" "), stderr });
        }
    }
    Ok(())
}

/// `rel` joined to `root` when it is relative and has only normal components.
fn confined(root: &Path, rel: &str) -> Option<PathBuf> {
    let path = Path::new(rel);
    let normal = path.components().all(|c| matches!(c, Component::Normal(_)));
    (normal && !rel.is_empty()).then(|| root.join(path))
}

fn read_workspace_file(ws: &Path, rel: &str) -> Option<String> {
    let path = confined(ws, rel)?;
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// Full outputs saved for capped tool results (`outputs/RUN_ID/*.txt`).
fn saved_outputs(dir: &Path) -> Vec<(String, serde_json::Value)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<(String, serde_json::Value)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path()).ok()?;
            Some((format!("output:{}", e.file_name().to_string_lossy()), serde_json::Value::String(text)))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Merges `overlay` into `base`, tables key by key, other values replaced.
fn merge(base: &mut toml::Table, overlay: toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_paths_must_stay_inside() {
        let root = Path::new("/ws");
        assert_eq!(confined(root, "a/b.txt"), Some(PathBuf::from("/ws/a/b.txt")));
        for bad in ["../x", "/etc/passwd", "a/../../x", "", "./a"] {
            assert_eq!(confined(root, bad), None, "{bad}");
        }
    }

    #[test]
    fn skips_name_their_reason() {
        let options = EvalOptions::default();
        let roles = Case { fail_roles: vec!["local_drafter".into()], scenario: Some("x".into()), ..Case::default() };
        assert_eq!(skip_reason(&roles, &options), None, "the runner drives the role pipeline");
        let unknown = Case { fail_roles: vec!["drafter".into()], scenario: Some("x".into()), ..Case::default() };
        assert!(skip_reason(&unknown, &options).unwrap().contains("role pipeline does not have"));
        let rag = Case { requires: vec!["rag".into()], scenario: Some("x".into()), ..Case::default() };
        assert_eq!(skip_reason(&rag, &options), None, "workspace search is built");
        let unknown = Case { requires: vec!["telepathy".into()], scenario: Some("x".into()), ..Case::default() };
        assert!(skip_reason(&unknown, &options).unwrap().contains("telepathy"));
        let real = Case::default();
        assert!(skip_reason(&real, &options).unwrap().contains("--provider"));
        let shell = Case { requires: vec!["shell".into()], scenario: Some("x".into()), ..Case::default() };
        assert_eq!(skip_reason(&shell, &options), None);
    }

    #[test]
    fn overlay_merges_tables_and_replaces_values() {
        let mut base: toml::Table =
            toml::from_str("[policy]\nblocked_actions = [\"delete\"]\n[shell]\nenabled = true").unwrap();
        let overlay: toml::Table = toml::from_str("[policy]\ndefault = \"allow\"\nallowed_actions = [\"*\"]").unwrap();
        merge(&mut base, overlay);
        assert_eq!(base["policy"]["default"].as_str(), Some("allow"));
        assert!(base["policy"]["blocked_actions"].is_array());
        assert_eq!(base["shell"]["enabled"].as_bool(), Some(true));
    }
}
