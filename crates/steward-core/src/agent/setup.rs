//! A run's set-up, before its first round (SPEC A1, A3): the workspace and the tools the run
//! adds (the search index, the owner's generated tools), the run's record and first event,
//! what its calls run with, and the prompt's fixed parts, each of which joins the run's taint
//! and data-flow accounting by where it comes from.

use std::sync::Arc;
use std::time::{Duration, Instant};

use steward_policy::{Policy, Workspace};
use steward_protocol::EventKind;
use steward_store::{RunRecord, RunStatus, new_id};
use steward_tools::ToolContext;
use steward_tools::rollback::Snapshots;

use super::{RunError, RunRequest, role_models};
use crate::Runtime;
use crate::approval::TEN_YEARS_S;
use crate::chains::Chains;
use crate::context;
use crate::events::EventEmitter;
use crate::generated::Generator;
use crate::interrupt::Interruptible;
use crate::orchestrator::{Approvals, CallContext, Recorders, RunScope, RunState, Tools};
use crate::provenance::{self, ContextPart};
use crate::recovery::Executing;
use crate::workspace_search::{ContextLookup, Embeddings};

/// What a run needs before it is recorded, checked and built from its request.
pub(super) struct Setup {
    /// The workspace, with its path rules.
    pub workspace: Arc<Workspace>,
    /// The configured tool-call chains, checked against the run's tools.
    pub chains: Chains,
    /// The generator of new tools, when generated tools are on.
    pub generator: Option<Generator>,
    /// When the run started (its duration is measured from here).
    pub started: Instant,
    /// The run's cancellation (a child of the request's) and deadline.
    pub interrupt: Interruptible,
    /// The lookup of the workspace's passages that match the task, started here so that it
    /// runs while the run is recorded; `None` without one.
    pub context_lookup: Option<ContextLookup>,
}

impl Setup {
    /// Opens the workspace, gives the `search_index` tool (when offered) the runtime's index
    /// and the configured embeddings, checks the chains and the role plan, loads the owner's
    /// registered generated tools into `req.tools`, and starts the run's clock, deadline and
    /// context lookup.
    ///
    /// Errors: [`RunError::Config`] for a workspace, chain, role plan or generator the
    /// configuration cannot give; [`RunError::Storage`] when the registered tools cannot be read.
    pub async fn new(rt: &Runtime, req: &mut RunRequest) -> Result<Setup, RunError> {
        let workspace = Workspace::open(&req.workspace, &req.config.policy.deny_path)
            .map_err(|e| RunError::Config(e.to_string()))?;
        let workspace = Arc::new(workspace);
        // The workspace search index (SPEC K): the model's own ranked queries, over the index
        // kept in this runtime's state folder.
        let embeddings = if req.config.search.enabled {
            Embeddings::from_config(&req.config, &|name| std::env::var(name).ok())
        } else {
            Embeddings::Off
        };
        if req.tools.get(steward_tools::SEARCH_INDEX_TOOL).is_some() {
            req.tools.insert(Arc::new(
                steward_tools::SearchIndexTool::new(Some(rt.index_dir.clone()), req.config.search.index_options())
                    .with_redactor(rt.redactor.clone())
                    .with_embeddings(embeddings.clone()),
            ));
        }
        let chains = Chains::new(&req.config.chains, &req.tools).map_err(|e| RunError::Config(e.to_string()))?;
        if let Some(plan) = &req.roles {
            plan.check().map_err(|e| RunError::Config(e.to_string()))?;
        }
        // Generated tools (SPEC G): the generator, and the owner's registered tools offered
        // from the first round.
        let state_dir = rt.outputs_dir.parent().unwrap_or(&rt.outputs_dir);
        let generator = crate::generated::generator_for(&req.config, &req.planner, state_dir, rt.tool_worker.clone())
            .map_err(|e| RunError::Config(e.to_string()))?;
        if let Some(generator) = &generator {
            crate::generated::load_registered(&rt.store, &req.owner_id, &req.tools, generator).await?;
        }
        let started = Instant::now();
        // The run's own token: cancelled with `req.cancel`, or alone by the lease keeper.
        let cancel = req.cancel.child_token();
        let interrupt = Interruptible {
            cancel: cancel.clone(),
            deadline: tokio::time::Instant::now() + Duration::from_millis(req.config.limits.max_total_runtime_ms),
        };
        // The workspace's chunks that match the task (SPEC K, A3), for a model planner: looked
        // up while the run is recorded and set up, used when the first request is built.
        let search = &req.config.search;
        let context_lookup =
            (req.planner.kind != "classic" && search.enabled && search.context_chunks > 0).then(|| {
                crate::workspace_search::start_context_lookup(
                    rt.index_dir.clone(),
                    search,
                    embeddings,
                    workspace.clone(),
                    req.task.clone(),
                    cancel,
                    rt.redactor.clone(),
                )
            });
        Ok(Setup { workspace, chains, generator, started, interrupt, context_lookup })
    }
}

/// A recorded run: its record, its place among the runs this process executes, and its events.
pub(super) struct Started {
    /// The run's record, as inserted (status `running`).
    pub run: RunRecord,
    /// The run's registration with the lease keeper; dropped when the run ends.
    pub executing: Executing,
    /// Where the run's events go.
    pub events: EventEmitter,
}

/// Records the run of `req` as running, registers it with the lease keeper (which cancels it
/// as soon as another node has taken it over) and announces it (`run_started`).
///
/// Errors: the store could not record the run or its first event.
pub(super) async fn start(rt: &Runtime, req: &RunRequest, setup: &Setup) -> Result<Started, RunError> {
    let classic = req.planner.kind == "classic";
    let run = RunRecord {
        id: req.run_id.clone().unwrap_or_else(|| new_id("run_")),
        owner_id: req.owner_id.clone(),
        task: rt.redactor.redact(&req.task),
        planner: req.planner.kind.clone(),
        provider: req.planner.provider.name().to_string(),
        model: req.planner.model.clone(),
        workspace: setup.workspace.root().display().to_string(),
        status: RunStatus::Running,
        stop_reason: None,
        final_text: None,
        error_class: None,
        error: None,
        created_at: rt.clock.now(),
        finished_at: None,
        rounds: 0,
        tool_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        pid: std::process::id(),
    };
    rt.store.insert_run(&run).await?;
    let executing = rt.executing.register(&run.id, setup.interrupt.cancel.clone());
    let events =
        EventEmitter::new(&run.id, rt.store.clone(), req.observer.clone(), rt.redactor.clone(), rt.clock.clone());
    events
        .emit(EventKind::RunStarted {
            task: req.task.clone(),
            owner_id: run.owner_id.clone(),
            planner: run.planner.clone(),
            provider: if classic { String::new() } else { run.provider.clone() },
            model: if classic { String::new() } else { run.model.clone() },
            workspace: run.workspace.clone(),
            instruction_files: if classic {
                Vec::new()
            } else {
                req.config.instruction_files.iter().map(|f| f.path.display().to_string()).collect()
            },
            roles: role_models(req),
        })
        .await?;
    Ok(Started { run, executing, events })
}

/// What the tools of the run `run_id` run with: its workspace, cancellation, sandbox settings,
/// timeout, snapshots, and each tool's credentials as `policy` scopes them.
pub(super) fn tool_context(
    rt: &Runtime,
    req: &RunRequest,
    policy: &Policy,
    setup: &Setup,
    run_id: &str,
) -> ToolContext {
    let sandbox = &req.config.sandbox;
    ToolContext {
        workspace: setup.workspace.clone(),
        cancel: setup.interrupt.cancel.child_token(),
        env_allow: sandbox.env_allow.clone(),
        timeout_ms: req.config.limits.tool_timeout_ms,
        snapshots: Snapshots::new(&rt.snapshots_dir, run_id),
        accept_weaker: sandbox.accept_weaker.iter().filter_map(|n| steward_sandbox::Protection::parse(n)).collect(),
        credentials: req
            .tools
            .specs()
            .into_iter()
            .map(|spec| {
                let names = policy.credential_scope(&spec.name);
                (spec.name, names)
            })
            .filter(|(_, names)| !names.is_empty())
            .collect(),
        sandbox: sandbox.settings(),
        elicitor: None,
        egress: None,
    }
}

/// What every call of `run` is handled with: the run's scope, where decisions and outcomes are
/// recorded, who approves and for how long approvals and grants hold, and the tools.
pub(super) fn call_context<'a>(
    rt: &'a Runtime,
    req: &'a RunRequest,
    policy: &'a Policy,
    setup: &'a Setup,
    run: &'a RunRecord,
    events: &'a EventEmitter,
    tool_context: &'a ToolContext,
) -> CallContext<'a> {
    let config = &req.config;
    let ttl_seconds =
        config.policy.approval_timeout_seconds.unwrap_or(steward_policy::DEFAULT_APPROVAL_TIMEOUT_SECONDS);
    let grant_ttl_seconds = config.policy.token_ttl_seconds.unwrap_or(steward_policy::DEFAULT_TOKEN_TTL_SECONDS);
    CallContext {
        run: RunScope {
            run_id: &run.id,
            owner_id: &run.owner_id,
            workspace: &setup.workspace,
            policy,
            interrupt: &setup.interrupt,
        },
        records: Recorders { store: &rt.store, redactor: &rt.redactor, events },
        approvals: Approvals {
            key: &rt.approval_key,
            approver: &req.approver,
            decisions: &rt.decisions,
            clock: rt.clock.as_ref(),
            ttl: chrono::Duration::seconds(ttl_seconds.min(TEN_YEARS_S) as i64),
            grant_ttl: chrono::Duration::seconds(grant_ttl_seconds.min(TEN_YEARS_S) as i64),
        },
        tools: Tools {
            registry: &req.tools,
            context: tool_context,
            hooks: &config.hooks,
            max_output_chars: config.limits.max_tool_output_chars,
            outputs_dir: &rt.outputs_dir,
            generator: setup.generator.as_ref(),
        },
        state: RunState::new(!config.run_level_taint_only),
    }
}

/// The parts of every planner request that stay the same from round to round, redacted:
/// everything that reaches the model passes the redactor (S3).
pub(super) struct Prompt {
    /// The task.
    pub task: String,
    /// The workspace's instructions.
    pub instructions: Option<String>,
    /// The owner's remembered facts, the conversation's earlier turns and the workspace's
    /// passages that match the task, as one block.
    pub facts: Option<String>,
}

impl Prompt {
    /// Gathers the prompt of `req`: its task and instructions, the owner's remembered facts
    /// (SPEC A3, A5), the earlier turns, and the passages `lookup` found (passages of files
    /// under `untrusted_paths` left out: read through a tool, the same text would taint the
    /// run). Each part joins the run's taint and data-flow accounting in `state` by where it
    /// comes from (tool outputs join it call by call).
    ///
    /// Errors: the store could not read the facts or record an event.
    pub async fn gather(
        rt: &Runtime,
        req: &RunRequest,
        policy: &Policy,
        events: &EventEmitter,
        state: &RunState,
        lookup: Option<ContextLookup>,
    ) -> Result<Prompt, RunError> {
        let task = rt.redactor.redact(&req.task);
        let instructions = req.config.instructions.as_deref().map(|i| rt.redactor.redact(i));
        let facts = rt.store.facts(&req.owner_id).await?;
        let remembered = join(crate::memory::context_block(&facts), context::history_block(&req.history))
            .map(|text| rt.redactor.redact(&text));
        // The looked-up chunks; an index that cannot be used leaves them out and the trace
        // says why.
        let passages = match lookup {
            Some(lookup) => {
                let untrusted = |rel: &str| policy.reads_untrusted(rel, false);
                crate::workspace_search::context_for_task(lookup, events, &untrusted)
                    .await?
                    .map(|text| rt.redactor.redact(&text))
            }
            None => None,
        };
        let mut parts = vec![ContextPart::Task];
        parts.extend(instructions.as_ref().map(|_| ContextPart::Instructions));
        parts.extend((!facts.is_empty()).then_some(ContextPart::MemoryFacts));
        parts.extend(req.history.iter().map(ContextPart::earlier_turn));
        parts.extend(req.attachments.iter().map(|a| ContextPart::Attachment { path: &a.path, text: &a.text }));
        parts.extend(passages.as_deref().map(ContextPart::RetrievedPassages));
        provenance::admit_all(state, parts, events).await?;
        Ok(Prompt { task, instructions, facts: join(remembered, passages) })
    }
}

/// Two optional blocks as one, a blank line between them.
fn join(first: Option<String>, second: Option<String>) -> Option<String> {
    match (first, second) {
        (Some(a), Some(b)) => Some(format!("{a}\n\n{b}")),
        (a, b) => a.or(b),
    }
}
