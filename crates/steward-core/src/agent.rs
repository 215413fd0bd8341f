//! The agent loop (SPEC A1–A3): plan → gate and run the proposed tool calls → show the
//! results → plan again, until the planner answers or a limit stops the run. In `roles` mode
//! the role pipeline ([`crate::roles`]) takes the planner's answer on from there.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use steward_policy::{Policy, Redactor, Workspace};
use steward_protocol::{ChatRequest, ErrorClass, EventKind, StopReason, ToolCall, ToolChoice, Usage};
use steward_store::{RunRecord, RunStatus, Store, StoreError, new_id};
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalKey, Approver, TEN_YEARS_S};
use crate::chains::{ChainPlan, ChainState, Chains};
use crate::context::{self, RoundRecord};
use crate::events::{EventEmitter, EventObserver};
use crate::interrupt::{Interrupt, Interruptible};
use crate::orchestrator::{
    Approvals, CallAbort, CallContext, CallResult, Recorders, RunScope, RunState, Tools, handle_call, refuse_call,
};
use crate::provenance::{self, ContextPart};
use crate::roles::{RoleName, RolePlan};
pub use crate::stage::PlannerChoice;
use crate::stage::{Ending, StageError, on_first_wait, stream_stage};
use steward_config::Config;
use steward_tools::{ToolContext, ToolRegistry};

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
    /// The time approvals, elicitations and grants are judged by: when a request was made,
    /// whether it expired, whether a grant still holds.
    pub clock: Arc<dyn crate::clock::Clock>,
    /// The decisions the runs of this process wait on (approvals, MCP servers' requests for
    /// input), submitted by every front end and judged by [`Runtime::clock`].
    pub decisions: Arc<crate::decisions::DecisionQueue>,
}

/// One task to run.
pub struct RunRequest {
    /// The task text.
    pub task: String,
    /// Owner id (`local:<user>` for the CLI).
    pub owner_id: String,
    /// Workspace directory.
    pub workspace: PathBuf,
    /// Planner.
    pub planner: PlannerChoice,
    /// Resolved configuration.
    pub config: Config,
    /// Tools offered.
    pub tools: ToolRegistry,
    /// Who answers approval requests.
    pub approver: Arc<dyn Approver>,
    /// Who watches the events.
    pub observer: Arc<dyn EventObserver>,
    /// Cancelling it cancels the run (SPEC A7).
    pub cancel: CancellationToken,
    /// Earlier turns of the conversation this task belongs to, oldest first (the last
    /// [`context::MAX_HISTORY_TURNS`] are given to the model); empty for a single task.
    pub history: Vec<context::Turn>,
    /// Files attached to the task (quoted in it), fingerprinted like files the run read.
    pub attachments: Vec<context::Attachment>,
    /// The run's id when the caller chose it beforehand (a server names a queued run before it
    /// starts); `None` gives a fresh `run_…` id.
    pub run_id: Option<String>,
    /// `Some` runs the role pipeline after the planner (`mode = roles`, SPEC O1–O3; set
    /// `planner` to [`RolePlan::planner`]); `None` runs the agent loop alone.
    pub roles: Option<RolePlan>,
}

/// Errors before a run could start (nothing was recorded) or from storage while it ran.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The workspace or policy is invalid.
    #[error("{0}")]
    Config(String),
    /// Persistence failed.
    #[error(transparent)]
    Storage(#[from] StoreError),
}

impl RunError {
    /// Error class.
    pub fn class(&self) -> ErrorClass {
        match self {
            RunError::Config(_) => ErrorClass::Config,
            RunError::Storage(_) => ErrorClass::Storage,
        }
    }
}

/// Provider and model of each role of `req` (see [`EventKind::RunStarted`]): the planner
/// alone in loop mode (nothing for the classic planner), every stage in roles mode with a
/// classic planner stage's provider and model left empty.
fn role_models(req: &RunRequest) -> Vec<steward_protocol::RoleModel> {
    let classic = req.planner.kind == "classic";
    match &req.roles {
        Some(plan) => plan
            .roles
            .iter()
            .map(|a| {
                let none = classic && a.role == crate::roles::RoleName::Planner;
                steward_protocol::RoleModel {
                    role: a.role.as_str().to_string(),
                    provider: if none { String::new() } else { a.provider_name.clone() },
                    model: if none { String::new() } else { a.model.clone() },
                }
            })
            .collect(),
        None if classic => Vec::new(),
        None => vec![steward_protocol::RoleModel {
            role: "planner".into(),
            provider: req.planner.provider.name().to_string(),
            model: req.planner.model.clone(),
        }],
    }
}

/// Runs one task to its end and returns the final run record.
///
/// The policy is compiled from `req.config.policy` here; a run prepared by
/// [`crate::compose::prepare`] brings the one compiled there ([`crate::compose::ReadyRun::run`]).
pub async fn run_task(rt: &Runtime, req: RunRequest) -> Result<RunRecord, RunError> {
    let policy = Policy::new(&req.config.policy).map_err(|e| RunError::Config(e.to_string()))?;
    run_with_policy(rt, req, &policy).await
}

/// The redactor of the run `req` on `rt`: the runtime's, which also knows what the workspace's
/// secret files hold, so a program the policy lets run (`git diff`) cannot pass their contents
/// on (B09, S3), and the values the configuration declares as credentials
/// (`credential_scope`, `[[tool]] env`).
pub(crate) fn run_redactor(rt: &Runtime, req: &RunRequest) -> steward_policy::Redactor {
    let declared = req.config.declared_credential_values(&|name| std::env::var(name).ok());
    (*rt.redactor).clone().with_values(steward_policy::secret_file_values(&req.workspace)).with_values(declared)
}

/// [`run_task`] judged by `policy`, compiled from `req.config.policy`.
pub(crate) async fn run_with_policy(rt: &Runtime, mut req: RunRequest, policy: &Policy) -> Result<RunRecord, RunError> {
    let rt = &rt.with_redactor(run_redactor(rt, &req));
    let workspace =
        Workspace::open(&req.workspace, &req.config.policy.deny_path).map_err(|e| RunError::Config(e.to_string()))?;
    let workspace = Arc::new(workspace);
    // The workspace search index (SPEC K): the model's own ranked queries, over the index kept
    // in this runtime's state folder.
    let embeddings = if req.config.search.enabled {
        crate::workspace_search::Embeddings::from_config(&req.config, &|name| std::env::var(name).ok())
    } else {
        crate::workspace_search::Embeddings::Off
    };
    if req.tools.get(steward_tools::search_index::NAME).is_some() {
        req.tools.insert(Arc::new(
            steward_tools::search_index::SearchIndexTool::new(
                Some(rt.index_dir.clone()),
                req.config.search.index_options(),
            )
            .with_redactor(rt.redactor.clone())
            .with_embeddings(embeddings.clone()),
        ));
    }
    let chains = Chains::new(&req.config.chains, &req.tools).map_err(|e| RunError::Config(e.to_string()))?;
    if let Some(plan) = &req.roles {
        plan.check().map_err(|e| RunError::Config(e.to_string()))?;
    }
    // Generated tools (SPEC G): the generator, and the owner's registered tools offered from
    // the first round.
    let generator =
        crate::generated::generator_for(&req.config, &req.planner, rt.outputs_dir.parent().unwrap_or(&rt.outputs_dir))
            .map_err(|e| RunError::Config(e.to_string()))?;
    if let Some(generator) = &generator {
        crate::generated::load_registered(&rt.store, &req.owner_id, &req.tools, generator).await?;
    }
    let limits = req.config.limits.clone();
    let started = Instant::now();
    // The run's own token: cancelled with `req.cancel`, or alone by the lease keeper.
    let cancel = req.cancel.child_token();
    let interrupt = Interruptible {
        cancel: cancel.clone(),
        deadline: tokio::time::Instant::now() + std::time::Duration::from_millis(limits.max_total_runtime_ms),
    };

    // The workspace's chunks that match the task (SPEC K, A3), for a model planner: looked up
    // while the run is recorded and set up, used when the first request is built.
    let search = &req.config.search;
    let context_lookup = (req.planner.kind != "classic" && search.enabled && search.context_chunks > 0).then(|| {
        crate::workspace_search::start_context_lookup(
            rt.index_dir.clone(),
            search,
            embeddings.clone(),
            workspace.clone(),
            req.task.clone(),
            cancel.clone(),
            rt.redactor.clone(),
        )
    });

    let mut run = RunRecord {
        id: req.run_id.clone().unwrap_or_else(|| new_id("run_")),
        owner_id: req.owner_id.clone(),
        task: rt.redactor.redact(&req.task),
        planner: req.planner.kind.clone(),
        provider: req.planner.provider.name().to_string(),
        model: req.planner.model.clone(),
        workspace: workspace.root().display().to_string(),
        status: RunStatus::Running,
        stop_reason: None,
        final_text: None,
        error_class: None,
        error: None,
        created_at: chrono::Utc::now(),
        finished_at: None,
        rounds: 0,
        tool_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        pid: std::process::id(),
    };
    rt.store.insert_run(&run).await?;
    // While it runs, the lease keeper of a shared database cancels the run as soon as another
    // node has taken it over (see `recovery::keep_leases`).
    let executing = rt.executing.register(&run.id, cancel.clone());
    let events = EventEmitter::new(&run.id, rt.store.clone(), req.observer.clone(), rt.redactor.clone());
    events
        .emit(EventKind::RunStarted {
            task: req.task.clone(),
            owner_id: run.owner_id.clone(),
            planner: run.planner.clone(),
            provider: if req.planner.kind == "classic" { String::new() } else { run.provider.clone() },
            model: if req.planner.kind == "classic" { String::new() } else { run.model.clone() },
            workspace: run.workspace.clone(),
            instruction_files: if req.planner.kind == "classic" {
                Vec::new()
            } else {
                req.config.instruction_files.iter().map(|f| f.path.display().to_string()).collect()
            },
            roles: role_models(&req),
        })
        .await?;

    let tool_context = ToolContext {
        workspace: workspace.clone(),
        cancel: cancel.child_token(),
        env_allow: req.config.sandbox.env_allow.clone(),
        timeout_ms: limits.tool_timeout_ms,
        snapshots: steward_tools::rollback::Snapshots::new(&rt.snapshots_dir, &run.id),
        accept_weaker: req
            .config
            .sandbox
            .accept_weaker
            .iter()
            .filter_map(|n| steward_sandbox::Protection::parse(n))
            .collect(),
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
        sandbox: req.config.sandbox.settings(),
        elicitor: None,
        egress: None,
    };
    let ttl_seconds =
        req.config.policy.approval_timeout_seconds.unwrap_or(steward_policy::DEFAULT_APPROVAL_TIMEOUT_SECONDS);
    let grant_ttl_seconds = req.config.policy.token_ttl_seconds.unwrap_or(steward_policy::DEFAULT_TOKEN_TTL_SECONDS);
    let calls = CallContext {
        run: RunScope {
            run_id: &run.id,
            owner_id: &run.owner_id,
            workspace: &workspace,
            policy,
            interrupt: &interrupt,
        },
        records: Recorders { store: &rt.store, redactor: &rt.redactor, events: &events },
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
            context: &tool_context,
            hooks: &req.config.hooks,
            max_output_chars: limits.max_tool_output_chars,
            outputs_dir: &rt.outputs_dir,
            generator: generator.as_ref(),
        },
        state: RunState::new(!req.config.run_level_taint_only),
    };

    let mut chain_state = ChainState::Idle;
    let mut rounds: Vec<RoundRecord> = Vec::new();
    let mut usage = Usage::default();
    let mut planner_calls = 0u32;
    let mut tool_calls = 0u32;
    // In `roles` mode the planner stage may have a tool-call limit of its own (SPEC A2).
    let role_limit = req
        .roles
        .as_ref()
        .and_then(|_| limits.max_tool_calls_per_role.get(&RoleName::Planner).copied())
        .filter(|n| *n <= limits.max_tool_calls_per_run);
    let call_limit = role_limit.unwrap_or(limits.max_tool_calls_per_run);
    let limit_name = match role_limit {
        Some(n) => format!("max_tool_calls_per_role: {} ({n})", RoleName::Planner.as_str()),
        None => "max_tool_calls_per_run".to_string(),
    };
    let mut stopped_by = String::new();
    let mut repeats = crate::repeats::Repeats::new(workspace.root(), limits.max_repeated_calls);
    let mut markup_retried = false;
    // Every round after an unusable reply or a call that could not run asks for a constrained one.
    let mut constrain_next = false;
    // Everything that reaches the model passes the redactor (S3): the task, the workspace's
    // instructions, the model's own earlier text and every tool result.
    let task_for_model = rt.redactor.redact(&req.task);
    // The owner's remembered facts join the instructions of every round (SPEC A3, A5).
    let instructions_for_model = req.config.instructions.as_deref().map(|i| rt.redactor.redact(i));
    let facts = rt.store.facts(&req.owner_id).await?;
    // Remembered facts and the conversation's earlier turns (SPEC A3), redacted.
    let facts_for_model = match (crate::memory::context_block(&facts), context::history_block(&req.history)) {
        (Some(f), Some(h)) => Some(format!("{f}\n\n{h}")),
        (f, h) => f.or(h),
    }
    .map(|text| rt.redactor.redact(&text));
    // The looked-up chunks; an index that cannot be used leaves them out and the trace says why.
    let workspace_context = match context_lookup {
        Some(lookup) => {
            // Passages of files under `untrusted_paths` are left out: read through a tool, the same
            // text would taint the run, and a passage given unasked must not do less.
            let untrusted = |rel: &str| policy.reads_untrusted(rel, false);
            crate::workspace_search::context_for_task(lookup, &events, &untrusted)
                .await?
                .map(|text| rt.redactor.redact(&text))
        }
        None => None,
    };
    // Each part of the context joins the run's taint and data-flow accounting by where it
    // comes from (tool outputs join it call by call).
    let mut parts = vec![ContextPart::Task];
    parts.extend(instructions_for_model.as_ref().map(|_| ContextPart::Instructions));
    parts.extend((!facts.is_empty()).then_some(ContextPart::MemoryFacts));
    parts.extend(req.history.iter().map(ContextPart::earlier_turn));
    parts.extend(req.attachments.iter().map(|a| ContextPart::Attachment { path: &a.path, text: &a.text }));
    parts.extend(workspace_context.as_deref().map(ContextPart::RetrievedPassages));
    provenance::admit_all(&calls.state, parts, &events).await?;
    let facts_for_model = match (facts_for_model, workspace_context) {
        (Some(f), Some(w)) => Some(format!("{f}\n\n{w}")),
        (f, w) => f.or(w),
    };

    // The model's context window, when the configuration sets it or the server reports it:
    // each round's prompt is shrunk to fit it before it is sent.
    let window = if req.planner.kind == "classic" {
        None
    } else {
        req.planner.provider.context_window(&req.planner.model).await
    };
    // The prompt estimate's scale, from the server's count of the last prompt (`fit`).
    let mut scale: Option<f64> = None;

    let ending = loop {
        if let Some(i) = interrupt.check() {
            break Ending::Interrupted(i);
        }
        // A server the configuration says the run cannot do without is missing: no model is
        // asked to work around it.
        if let Some(why) = req.tools.required_unavailable() {
            break Ending::Failed(
                ErrorClass::McpUnavailable,
                rt.redactor.redact(&format!("a required MCP server is unavailable: {why}")),
            );
        }
        planner_calls += 1;
        let round = planner_calls;
        // In chain mode only the chain's next tool is offered (SPEC T6).
        let (mut offered, forced) = chains.offered(chain_state, &req.tools);
        let catalog: Vec<String> = offered.iter().map(|t| t.name.clone()).collect();
        if let Some(only) = &req.config.run.tools {
            offered.retain(|spec| only.contains(&spec.name));
        }
        let mut request = ChatRequest {
            model: req.planner.model.clone(),
            messages: context::assemble(
                instructions_for_model.as_deref(),
                facts_for_model.as_deref(),
                &task_for_model,
                &rounds,
                limits.max_context_chars,
            ),
            tools: offered,
            tool_choice: match (forced, &req.planner.tool_choice, round) {
                (Some(next_in_chain), _, _) => next_in_chain,
                (None, choice, 1) => choice.clone(),
                (None, ToolChoice::None, _) => ToolChoice::None,
                _ => ToolChoice::Auto,
            },
            max_tokens: req.planner.max_tokens,
            temperature: None,
            constrain: constrain_next,
        };
        // The estimate of the prompt as sent, which the server's count calibrates next round.
        let mut estimated = None;
        if let Some(window) = window {
            if scale.is_none() {
                scale = crate::fit::first_calibration(req.planner.provider.as_ref(), &request, window.tokens).await;
            }
            match crate::fit::fit_calibrated(&mut request, window.tokens, &task_for_model, scale) {
                Ok(fitted) if fitted.changed() => {
                    events.emit(fitted.event(round, window)).await?;
                }
                Ok(_) => {}
                Err(too_big) => break Ending::Failed(ErrorClass::ContextOverflow, too_big.to_string()),
            }
            estimated = Some(crate::fit::estimate_tokens(&request));
        }
        events.emit(EventKind::StageStarted { stage: "planner".into(), round }).await?;
        let stage_started = Instant::now();
        let stage = stream_stage(req.planner.provider.as_ref(), "planner", &request, &events, rt.redactor.clone());
        // The sandbox's probes start once the request is on its way (a planner that does not
        // wait for a model reaches its first call with them started, not done).
        let reply = interrupt.run(on_first_wait(stage, || req.tools.warm_up_sandbox())).await;
        req.tools.warm_up_sandbox();
        // A tool left out of this request (by `[run] tools` or to fit the context window) may
        // not be called; other names go on to the gate as before (chain rules, unknown tools).
        let offered_names: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        let cut: Vec<String> = catalog.into_iter().filter(|name| !offered_names.contains(name)).collect();
        // Markup naming a tool is judged against what this request offered when it was cut.
        let offered_specs = if cut.is_empty() { None } else { Some(request.tools.clone()) };
        // The request (its copies of every tool's schema among them) is not needed while the
        // proposed calls run or wait for an approval, which may take long.
        drop(request);
        let stage_ms = stage_started.elapsed().as_millis() as u64;
        let reply = match reply {
            Err(i) => break Ending::Interrupted(i),
            Ok(Err(StageError::Storage(e))) => return Err(e.into()),
            Ok(Err(StageError::Provider(err))) => {
                let error = rt.redactor.redact(&err.message);
                planner_failed(&events, round, stage_ms, &error, err.class).await?;
                break Ending::Failed(err.class, error);
            }
            Ok(Ok(reply)) => reply,
        };
        let mut reply = reply;
        crate::planner_reply::number_recovered_calls(&mut reply, round);
        let (kept, undeclared): (Vec<ToolCall>, Vec<ToolCall>) =
            std::mem::take(&mut reply.tool_calls).into_iter().partition(|c| !cut.contains(&c.name));
        reply.tool_calls = kept;
        for call in undeclared {
            reply.invalid_tool_calls.push(steward_protocol::InvalidToolCall {
                error: format!(
                    "`{}` was not offered in this request (offered: {})",
                    call.name,
                    offered_names.join(", ")
                ),
                raw_arguments: call.arguments.to_string(),
                id: call.id,
                name: call.name,
            });
        }
        usage.add(reply.usage);
        if let Some(estimated) = estimated {
            scale = crate::fit::calibration(estimated, reply.usage.input_tokens).or(scale);
        }
        let proposed = (reply.tool_calls.len() + reply.invalid_tool_calls.len()) as u32;
        let mut all_specs;
        let offered_specs: &[steward_protocol::ToolSpec] = match &offered_specs {
            Some(specs) => specs,
            None => {
                all_specs = req.tools.specs();
                steward_tools::offer_order(&mut all_specs);
                &all_specs
            }
        };
        // A reply without calls is an answer only when it holds no call and no unusable markup
        // (SPEC P8); an echo of the call just made is left out of it. A reply stopped while
        // repeating the call just made is not run again. An unusable reply is explained to
        // the planner once, then the run fails.
        let audit = crate::planner_reply::Audit { store: rt.store.as_ref(), redactor: &rt.redactor, run_id: &run.id };
        let previous = rounds.last().map(|r| r.calls.as_slice()).unwrap_or_default();
        let verdict = if proposed == 0 {
            Some(crate::planner_reply::judge(&reply, previous, offered_specs))
        } else {
            crate::planner_reply::echo_loop(&reply, previous)
                .map(|why| crate::planner_reply::Verdict::Unusable { class: ErrorClass::RunawayReply, why })
        };
        if let Some(verdict) = verdict {
            match verdict {
                crate::planner_reply::Verdict::Answer { text, echoes, restated } => {
                    for echo in &echoes {
                        crate::planner_reply::record_echo(&audit, echo, restated).await?;
                    }
                    reply.text = text;
                }
                crate::planner_reply::Verdict::Unusable { class, why } => {
                    let why = rt.redactor.redact(&why);
                    // Asking again needs a round; without one the run fails now rather than
                    // stopping at the round limit with the markup as what it had.
                    let no_round_left = rounds.len() as u32 + 1 >= limits.max_rounds;
                    let mut error = crate::planner_reply::unusable_error(class, &why);
                    error.push_str(if markup_retried {
                        "; it was told once and wrote an unusable reply again"
                    } else if no_round_left {
                        "; no round is left (max_rounds) to ask it again"
                    } else {
                        "; the planner is told and asked once more"
                    });
                    planner_failed(&events, round, stage_ms, &error, class).await?;
                    if markup_retried || no_round_left {
                        break Ending::Failed(class, error);
                    }
                    markup_retried = true;
                    constrain_next = true;
                    // Only the reply's start goes back to the model, never a run-away text whole.
                    rounds.push(RoundRecord {
                        text: rt.redactor.redact(&steward_provider::answer::marked_start(&reply.text)),
                        feedback: Some(crate::planner_reply::unusable_feedback(class, &why)),
                        ..Default::default()
                    });
                    continue;
                }
            }
        }
        // A usable constrained reply shows the next retry can be held too: a later unusable reply is asked again.
        markup_retried &= !reply.constrained;
        events.emit(crate::planner_reply::stage_completed("planner", round, stage_ms, &reply, proposed)).await?;
        if proposed == 0 {
            break Ending::Answered(reply.text);
        }
        for repair in &reply.repairs {
            if let Some(call) = reply.tool_calls.iter().find(|c| c.id == repair.call_id) {
                crate::planner_reply::record_repair(&audit, call, repair).await?;
            }
        }
        for (written, keys) in crate::planner_reply::ignore_extra_arguments(&mut reply.tool_calls, offered_specs) {
            crate::planner_reply::record_ignored(&audit, &written, &keys).await?;
        }
        // A reply stopped before its end keeps only its start in the conversation.
        if crate::planner_reply::stopped(&reply).is_some() {
            reply.text = steward_provider::answer::marked_start(&reply.text);
        }

        // The round's calls, in order; every call gets exactly one result.
        let mut record = RoundRecord { text: rt.redactor.redact(&reply.text), ..Default::default() };
        constrain_next |= !reply.invalid_tool_calls.is_empty();
        for invalid in &reply.invalid_tool_calls {
            let call =
                ToolCall { id: invalid.id.clone(), name: invalid.name.clone(), arguments: serde_json::json!({}) };
            let message = format!("Not run: {}", invalid.error);
            crate::planner_reply::record_invalid(&audit, &events, &call, &invalid.error).await?;
            record.calls.push(call);
            record.results.push((message, true));
        }
        let mut limit_hit = false;
        let mut stop: Option<Ending> = None;
        for call in &reply.tool_calls {
            if stop.is_some() || limit_hit || tool_calls >= call_limit {
                limit_hit = stop.is_none();
                let why = if stop.is_some() { "the run stopped".to_string() } else { format!("{limit_name} reached") };
                record.calls.push(call.clone());
                record.results.push((format!("Not run: {why}."), true));
                continue;
            }
            tool_calls += 1;
            record.calls.push(call.clone());
            let outcome = match chains.plan(chain_state, call, &req.tools) {
                ChainPlan::Plain => match repeats.check(call, &req.tools) {
                    // A repeat whose outcome cannot differ is not run (nor asked) again.
                    Some(repeat) => {
                        crate::repeats::report(&rt.store, &rt.redactor, &run.id, &events, call, &repeat).await?;
                        if let Some(text) = repeat.stuck {
                            stop = Some(Ending::Limit(StopReason::Stuck, text));
                        }
                        Ok(CallResult { content: repeat.message, is_error: !repeat.answered_from_record })
                    }
                    None => {
                        events.take_call_trace(&call.id);
                        let outcome = handle_call(&calls, call).await;
                        let trace = events.take_call_trace(&call.id);
                        match &outcome {
                            Ok(result) => repeats.record(call, round, trace, &result.content, &req.tools),
                            Err(_) => repeats.ran_elsewhere(call, &trace, &req.tools),
                        }
                        outcome
                    }
                },
                ChainPlan::Refuse(rule, reason) => refuse_call(&calls, call, rule, &reason).await,
                ChainPlan::Step { chain, step, call: inner } => {
                    events.take_call_trace(&inner.id);
                    let outcome = handle_call(&calls, &inner).await;
                    repeats.ran_elsewhere(&inner, &events.take_call_trace(&inner.id), &req.tools);
                    outcome.map(|mut result| {
                        let (next, note) = chains.after(chain, step, result.is_error);
                        chain_state = next;
                        if let Some(note) = note {
                            result.content.push_str(&format!("\n{note}"));
                        }
                        result
                    })
                }
            };
            match outcome {
                Ok(result) => record.results.push((result.content, result.is_error)),
                Err(CallAbort::Storage(e)) => return Err(e.into()),
                Err(CallAbort::Interrupted(i)) => {
                    record.results.push((format!("Not finished: the run was {}.", i.as_str()), true));
                    stop = Some(Ending::Interrupted(i));
                }
                Err(CallAbort::Superseded) => {
                    record.results.push(("Not run: another node took the run over.".into(), true));
                    stop = Some(Ending::Superseded);
                }
            }
        }
        tool_calls += reply.invalid_tool_calls.len() as u32;
        rounds.push(record);
        if let Some(ending) = stop {
            break ending;
        }
        if limit_hit {
            if role_limit.is_some() {
                stopped_by = limit_name.clone();
            }
            break Ending::Limit(StopReason::MaxToolCalls, what_we_have(&rounds));
        }
        if rounds.len() as u32 >= limits.max_rounds {
            break Ending::Limit(StopReason::MaxRounds, what_we_have(&rounds));
        }
    };

    // The planner loop is over: its language servers are no longer needed (SPEC T11).
    if let Some(lsp) = req.tools.lsp() {
        lsp.shutdown().await;
    }

    // In `roles` mode the planner's answer goes on to the drafters, the critic, the reviewer and
    // the synthesizer; so does what it had when a round or tool-call limit stopped it (the run
    // then keeps that limit as its stop reason).
    let stages = crate::roles::Stages {
        events: &events,
        redactor: &rt.redactor,
        interrupt: &interrupt,
        instructions: instructions_for_model.as_deref(),
        facts: facts_for_model.as_deref(),
        max_context_chars: limits.max_context_chars,
    };
    let ending = match (&req.roles, ending) {
        (Some(plan), Ending::Answered(text)) => {
            let findings = rt.redactor.redact(&text);
            crate::roles::run_pipeline(&stages, plan, &task_for_model, &findings, None, &mut usage).await?
        }
        (Some(plan), Ending::Limit(reason @ (StopReason::MaxRounds | StopReason::MaxToolCalls), text)) => {
            let findings = rt.redactor.redact(&text);
            crate::roles::run_pipeline(&stages, plan, &task_for_model, &findings, Some(reason), &mut usage).await?
        }
        (_, ending) => ending,
    };

    // The end: record it, publish it.
    let duration_ms = started.elapsed().as_millis() as u64;
    run.rounds = planner_calls;
    run.tool_calls = tool_calls;
    run.input_tokens = usage.input_tokens;
    run.output_tokens = usage.output_tokens;
    run.finished_at = Some(chrono::Utc::now());
    let terminal = match ending {
        Ending::Superseded => {
            drop(executing);
            return superseded(rt, run).await;
        }
        Ending::Answered(text) => {
            completed(&mut run, StopReason::Answered, rt.redactor.redact(&text), usage, duration_ms)
        }
        Ending::Limit(reason, text) => {
            let mut event = completed(&mut run, reason, rt.redactor.redact(&text), usage, duration_ms);
            if reason == StopReason::MaxToolCalls
                && let EventKind::RunCompleted { limit, .. } = &mut event
            {
                *limit = stopped_by;
            }
            event
        }
        Ending::Interrupted(Interrupt::Timeout) => {
            completed(&mut run, StopReason::Timeout, what_we_have(&rounds), usage, duration_ms)
        }
        Ending::Interrupted(Interrupt::Cancelled) => {
            run.status = RunStatus::Cancelled;
            run.stop_reason = Some(StopReason::Cancelled);
            run.error_class = Some(ErrorClass::Cancelled);
            EventKind::RunCancelled { reason: "cancelled by the user".into(), rounds: run.rounds, duration_ms }
        }
        Ending::Failed(class, error) => {
            run.status = RunStatus::Failed;
            run.stop_reason = Some(StopReason::Failed);
            run.error_class = Some(class);
            run.error = Some(error.clone());
            EventKind::RunFailed { error, class, rounds: run.rounds, duration_ms }
        }
    };
    // Finishing is conditional: a run another node has meanwhile recovered (marked
    // `interrupted` after this node lost its lease) keeps that record.
    drop(executing);
    if !rt.store.finish_run(&run).await? {
        return superseded(rt, run).await;
    }
    events.emit(terminal).await?;
    rt.store.flush().await?;
    Ok(run)
}

/// The end of a run this process may no longer write as its own (another node took it over
/// after its lease expired, or it was ended elsewhere): nothing of the run record is
/// written; the queued records are flushed and the stored run returned, as `interrupted` when
/// the recovering node has not recorded it yet.
async fn superseded(rt: &Runtime, mut run: RunRecord) -> Result<RunRecord, RunError> {
    tracing::warn!(run = %run.id, "the run was taken over by another node; it stops here without recording its end");
    rt.store.flush().await?;
    match rt.store.get_run(&run.id).await? {
        Some(stored) if stored.status != RunStatus::Running => Ok(stored),
        _ => {
            run.status = RunStatus::Interrupted;
            run.stop_reason = None;
            run.final_text = None;
            run.error_class = None;
            run.error = Some("another node took the run over after this node lost its lease; not finished here".into());
            Ok(run)
        }
    }
}

/// Announces that the planner's round `round` failed after `duration_ms` with `class`.
async fn planner_failed(
    events: &EventEmitter,
    round: u32,
    duration_ms: u64,
    error: &str,
    class: ErrorClass,
) -> Result<(), StoreError> {
    let failed =
        EventKind::StageFailed { stage: "planner".into(), round, duration_ms, error: error.to_string(), class };
    events.emit(failed).await.map(|_| ())
}

fn completed(run: &mut RunRecord, reason: StopReason, text: String, usage: Usage, duration_ms: u64) -> EventKind {
    run.status = RunStatus::Completed;
    run.stop_reason = Some(reason);
    run.final_text = Some(text.clone());
    EventKind::RunCompleted {
        final_text: text,
        stop_reason: reason,
        rounds: run.rounds,
        tool_calls: run.tool_calls,
        usage,
        duration_ms,
        limit: String::new(),
    }
}

/// The answer of a run stopped by a limit: the planner's last words and the last results.
fn what_we_have(rounds: &[RoundRecord]) -> String {
    let Some(last) = rounds.last() else { return "Stopped before the planner produced anything.".into() };
    let mut text = String::from("Stopped by a limit before a final answer. ");
    if !last.text.trim().is_empty() {
        text.push_str(last.text.trim());
        text.push('\n');
    }
    for (call, (result, is_error)) in last.calls.iter().zip(&last.results) {
        let status = if *is_error { "failed" } else { "ok" };
        text.push_str(&format!(
            "\nLast step `{}` ({status}): {}",
            call.name,
            steward_protocol::truncate_chars(result, 1000)
        ));
    }
    text
}
