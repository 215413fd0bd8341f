//! One round of the agent loop (SPEC A1, A2, P8): the planner is asked with the prompt, the
//! rounds so far and the tools on offer, its reply is judged (an answer, calls, or an unusable
//! reply the planner is told about once), and the calls it proposed are run in order.

use std::ops::ControlFlow;
use std::time::Instant;

use steward_protocol::{
    ChatRequest, ChatResponse, ErrorClass, EventKind, InvalidToolCall, StopReason, ToolCall, ToolChoice, ToolSpec,
    Usage,
};
use steward_provider::ContextWindow;
use steward_store::StoreError;

use super::setup::Prompt;
use super::{RunError, RunRequest, what_we_have};
use crate::Runtime;
use crate::chains::{ChainState, Chains};
use crate::context::{self, RoundRecord};
use crate::events::EventEmitter;
use crate::orchestrator::CallContext;
use crate::planner_reply::{self, Verdict};
use crate::repeats::Repeats;
use crate::roles::RoleName;
use crate::stage::{Ending, StageError, on_first_wait, stream_stage};

/// What every round of one run reads.
pub(super) struct Loop<'a> {
    /// The process's runtime (the run's redactor in it).
    pub rt: &'a Runtime,
    /// The run's request.
    pub req: &'a RunRequest,
    /// What the run's calls are handled with.
    pub calls: &'a CallContext<'a>,
    /// The configured tool-call chains.
    pub chains: &'a Chains,
    /// The prompt's fixed parts.
    pub prompt: &'a Prompt,
    /// The model's context window, when known.
    pub window: Option<ContextWindow>,
    /// How many tool calls the planner may make.
    pub limit: CallLimit,
}

/// The planner's tool-call limit: the run's, or in `roles` mode the planner stage's own when
/// it is lower (SPEC A2).
pub(super) struct CallLimit {
    /// The number of calls.
    pub calls: u32,
    /// The setting that says so, as a run stopped by it names it.
    pub name: String,
    /// True when it is the planner stage's own limit.
    pub per_role: bool,
}

impl CallLimit {
    /// The limit of `req`'s planner.
    pub fn of(req: &RunRequest) -> CallLimit {
        let limits = &req.config.limits;
        let role_limit = req
            .roles
            .as_ref()
            .and_then(|_| limits.max_tool_calls_per_role.get(&RoleName::Planner).copied())
            .filter(|n| *n <= limits.max_tool_calls_per_run);
        match role_limit {
            Some(n) => CallLimit {
                calls: n,
                name: format!("max_tool_calls_per_role: {} ({n})", RoleName::Planner.as_str()),
                per_role: true,
            },
            None => CallLimit {
                calls: limits.max_tool_calls_per_run,
                name: "max_tool_calls_per_run".to_string(),
                per_role: false,
            },
        }
    }
}

/// What the rounds so far leave to the next round and to the run's end.
pub(super) struct Progress {
    /// Every round: the planner's text, its calls and their results.
    pub rounds: Vec<RoundRecord>,
    /// Tokens used by the planner.
    pub usage: Usage,
    /// Requests made to the planner.
    pub planner_calls: u32,
    /// Tool calls proposed (invalid ones included).
    pub tool_calls: u32,
    /// Where the run stands in a tool-call chain.
    pub chain_state: ChainState,
    /// The calls made so far, to answer a repeat whose outcome cannot differ.
    pub repeats: Repeats,
    /// True once the planner was told that its reply was unusable.
    pub markup_retried: bool,
    /// True when the next request asks for a constrained reply (after an unusable reply or a
    /// call that could not run).
    pub constrain_next: bool,
    /// The prompt estimate's scale, from the server's count of the last prompt.
    pub scale: Option<f64>,
    /// The planner stage's own limit, when it stopped the run.
    pub stopped_by: String,
}

impl Progress {
    /// No round yet, in the workspace at `root`, with `max_repeated_calls`.
    pub fn new(root: &std::path::Path, max_repeated_calls: u32) -> Progress {
        Progress {
            rounds: Vec::new(),
            usage: Usage::default(),
            planner_calls: 0,
            tool_calls: 0,
            chain_state: ChainState::Idle,
            repeats: Repeats::new(root, max_repeated_calls),
            markup_retried: false,
            constrain_next: false,
            scale: None,
            stopped_by: String::new(),
        }
    }
}

/// A planner reply as the round got it.
struct Asked {
    /// The reply; calls of tools this request left out are among its invalid calls.
    reply: ChatResponse,
    /// The tools this request offered, when it left some out; `None` when it offered all.
    offered: Option<Vec<ToolSpec>>,
    /// How long the planner took, in ms.
    stage_ms: u64,
    /// The estimate of the prompt as sent, in tokens, when the window is known.
    estimated: Option<u32>,
}

/// What the judgement of a reply without usable calls leaves the round with.
enum Judged {
    /// The reply goes on (an answer, or calls to run).
    Proceed,
    /// The planner was told its reply was unusable and is asked again.
    AskAgain,
    /// The run ends.
    End(Ending),
}

impl Loop<'_> {
    /// Runs one round: `Break` with how the loop ended, or `Continue` for another round.
    ///
    /// Errors: storage failures (a refused or failed call is a result, not an error).
    pub async fn round(&self, p: &mut Progress) -> Result<ControlFlow<Ending>, RunError> {
        let (req, redactor) = (self.req, &self.rt.redactor);
        if let Some(i) = self.calls.run.interrupt.check() {
            return Ok(ControlFlow::Break(Ending::Interrupted(i)));
        }
        // A server the configuration says the run cannot do without is missing: no model is
        // asked to work around it.
        if let Some(why) = req.tools.required_unavailable() {
            let why = redactor.redact(&format!("a required MCP server is unavailable: {why}"));
            return Ok(ControlFlow::Break(Ending::Failed(ErrorClass::McpUnavailable, why)));
        }
        p.planner_calls += 1;
        let round = p.planner_calls;
        let Asked { mut reply, offered, stage_ms, estimated } = match self.ask(p, round).await? {
            ControlFlow::Continue(asked) => asked,
            ControlFlow::Break(ending) => return Ok(ControlFlow::Break(ending)),
        };
        p.usage.add(reply.usage);
        if let Some(estimated) = estimated {
            p.scale = crate::fit::calibration(estimated, reply.usage.input_tokens).or(p.scale);
        }
        let proposed = (reply.tool_calls.len() + reply.invalid_tool_calls.len()) as u32;
        let offered = offered.unwrap_or_else(|| {
            let mut all = req.tools.specs();
            steward_tools::offer_order(&mut all);
            all
        });
        match self.judge(p, &mut reply, proposed, &offered, round, stage_ms).await? {
            Judged::Proceed => {}
            Judged::AskAgain => return Ok(ControlFlow::Continue(())),
            Judged::End(ending) => return Ok(ControlFlow::Break(ending)),
        }
        // A usable constrained reply shows the next retry can be held too: a later unusable
        // reply is asked again.
        p.markup_retried &= !reply.constrained;
        let events = self.calls.records.events;
        events.emit(planner_reply::stage_completed("planner", round, stage_ms, &reply, proposed)).await?;
        if proposed == 0 {
            return Ok(ControlFlow::Break(Ending::Answered(reply.text)));
        }
        let audit = self.audit();
        for repair in &reply.repairs {
            if let Some(call) = reply.tool_calls.iter().find(|c| c.id == repair.call_id) {
                planner_reply::record_repair(&audit, call, repair).await?;
            }
        }
        for (written, keys) in planner_reply::ignore_extra_arguments(&mut reply.tool_calls, &offered) {
            planner_reply::record_ignored(&audit, &written, &keys).await?;
        }
        // A reply stopped before its end keeps only its start in the conversation.
        if planner_reply::stopped(&reply).is_some() {
            reply.text = steward_provider::answer::marked_start(&reply.text);
        }
        let (record, stop, limit_hit) = self.run_calls(p, &reply, round).await?;
        p.tool_calls += reply.invalid_tool_calls.len() as u32;
        p.rounds.push(record);
        if let Some(ending) = stop {
            return Ok(ControlFlow::Break(ending));
        }
        if limit_hit {
            if self.limit.per_role {
                p.stopped_by = self.limit.name.clone();
            }
            return Ok(ControlFlow::Break(Ending::Limit(StopReason::MaxToolCalls, what_we_have(&p.rounds))));
        }
        if p.rounds.len() as u32 >= req.config.limits.max_rounds {
            return Ok(ControlFlow::Break(Ending::Limit(StopReason::MaxRounds, what_we_have(&p.rounds))));
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Asks the planner for round `round`'s reply: the request is built (in chain mode only
    /// the chain's next tool is offered, SPEC T6; `[run] tools` narrows the offer), fitted to
    /// the context window, and streamed. A call of a tool the request left out becomes an
    /// invalid call. `Break` when the run is interrupted, the prompt cannot fit or the
    /// provider failed.
    async fn ask(&self, p: &mut Progress, round: u32) -> Result<ControlFlow<Ending, Asked>, RunError> {
        let (req, prompt, events) = (self.req, self.prompt, self.calls.records.events);
        let (mut offered, forced) = self.chains.offered(p.chain_state, &req.tools);
        let catalog: Vec<String> = offered.iter().map(|t| t.name.clone()).collect();
        if let Some(only) = &req.config.run.tools {
            offered.retain(|spec| only.contains(&spec.name));
        }
        let mut request = ChatRequest {
            model: req.planner.model.clone(),
            messages: context::assemble(
                prompt.instructions.as_deref(),
                prompt.facts.as_deref(),
                &prompt.task,
                &p.rounds,
                req.config.limits.max_context_chars,
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
            constrain: p.constrain_next,
        };
        // The results of reads let run before their records reached the disk are held back
        // until those records are there (the calibration below may send the prompt too).
        self.calls.reads_on_disk().await?;
        // The estimate of the prompt as sent, which the server's count calibrates next round.
        let mut estimated = None;
        if let Some(window) = self.window {
            if p.scale.is_none() {
                p.scale = crate::fit::first_calibration(req.planner.provider.as_ref(), &request, window.tokens).await;
            }
            match crate::fit::fit_calibrated(&mut request, window.tokens, &prompt.task, p.scale) {
                Ok(fitted) if fitted.changed() => {
                    events.emit(fitted.event(round, window)).await?;
                }
                Ok(_) => {}
                Err(too_big) => {
                    return Ok(ControlFlow::Break(Ending::Failed(ErrorClass::ContextOverflow, too_big.to_string())));
                }
            }
            estimated = Some(crate::fit::estimate_tokens(&request));
        }
        events.emit(EventKind::StageStarted { stage: "planner".into(), round }).await?;
        let stage_started = Instant::now();
        let stage = stream_stage(req.planner.provider.as_ref(), "planner", &request, events, self.rt.redactor.clone());
        // The sandbox's probes and the argument checks' one-time set-up start once the request
        // is on its way (a planner that does not wait for a model reaches its first call with
        // them started, not done).
        let warm_up = || {
            req.tools.warm_up_sandbox();
            steward_policy::warm_up();
        };
        let reply = self.calls.run.interrupt.run(on_first_wait(stage, warm_up)).await;
        warm_up();
        // A tool left out of this request (by `[run] tools` or to fit the context window) may
        // not be called; other names go on to the gate as before (chain rules, unknown tools).
        let offered_names: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        let cut: Vec<String> = catalog.into_iter().filter(|name| !offered_names.contains(name)).collect();
        // Markup naming a tool is judged against what this request offered when it was cut.
        let offered = if cut.is_empty() { None } else { Some(request.tools.clone()) };
        // The request (its copies of every tool's schema among them) is not needed while the
        // proposed calls run or wait for an approval, which may take long.
        drop(request);
        let stage_ms = stage_started.elapsed().as_millis() as u64;
        let mut reply = match reply {
            Err(i) => return Ok(ControlFlow::Break(Ending::Interrupted(i))),
            Ok(Err(StageError::Storage(e))) => return Err(e.into()),
            Ok(Err(StageError::Provider(err))) => {
                let error = self.rt.redactor.redact(&err.message);
                planner_failed(events, round, stage_ms, &error, err.class).await?;
                return Ok(ControlFlow::Break(Ending::Failed(err.class, error)));
            }
            Ok(Ok(reply)) => reply,
        };
        planner_reply::number_recovered_calls(&mut reply, round);
        let (kept, undeclared): (Vec<ToolCall>, Vec<ToolCall>) =
            std::mem::take(&mut reply.tool_calls).into_iter().partition(|c| !cut.contains(&c.name));
        reply.tool_calls = kept;
        for call in undeclared {
            reply.invalid_tool_calls.push(InvalidToolCall {
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
        Ok(ControlFlow::Continue(Asked { reply, offered, stage_ms, estimated }))
    }

    /// Judges a reply with `proposed` calls (SPEC P8): a reply without calls is an answer only
    /// when it holds no call and no unusable markup (an echo of the call just made is left out
    /// of it), and a reply stopped while repeating the call just made is not run again. An
    /// unusable reply is explained to the planner once (only its start goes back to the
    /// model), then the run fails.
    async fn judge(
        &self,
        p: &mut Progress,
        reply: &mut ChatResponse,
        proposed: u32,
        offered: &[ToolSpec],
        round: u32,
        stage_ms: u64,
    ) -> Result<Judged, RunError> {
        let previous = p.rounds.last().map(|r| r.calls.as_slice()).unwrap_or_default();
        let verdict = if proposed == 0 {
            Some(planner_reply::judge(reply, previous, offered))
        } else {
            planner_reply::echo_loop(reply, previous)
                .map(|why| Verdict::Unusable { class: ErrorClass::RunawayReply, why })
        };
        match verdict {
            None => Ok(Judged::Proceed),
            Some(Verdict::Answer { text, echoes, restated }) => {
                let audit = self.audit();
                for echo in &echoes {
                    planner_reply::record_echo(&audit, echo, restated).await?;
                }
                reply.text = text;
                Ok(Judged::Proceed)
            }
            Some(Verdict::Unusable { class, why }) => {
                let redactor = &self.rt.redactor;
                let why = redactor.redact(&why);
                // Asking again needs a round; without one the run fails now rather than
                // stopping at the round limit with the markup as what it had.
                let no_round_left = p.rounds.len() as u32 + 1 >= self.req.config.limits.max_rounds;
                let mut error = planner_reply::unusable_error(class, &why);
                error.push_str(if p.markup_retried {
                    "; it was told once and wrote an unusable reply again"
                } else if no_round_left {
                    "; no round is left (max_rounds) to ask it again"
                } else {
                    "; the planner is told and asked once more"
                });
                planner_failed(self.calls.records.events, round, stage_ms, &error, class).await?;
                if p.markup_retried || no_round_left {
                    return Ok(Judged::End(Ending::Failed(class, error)));
                }
                p.markup_retried = true;
                p.constrain_next = true;
                p.rounds.push(RoundRecord {
                    text: redactor.redact(&steward_provider::answer::marked_start(&reply.text)),
                    feedback: Some(planner_reply::unusable_feedback(class, &why)),
                    ..Default::default()
                });
                Ok(Judged::AskAgain)
            }
        }
    }

    /// Where the loop's own repairs and refusals of a reply are audited.
    fn audit(&self) -> planner_reply::Audit<'_> {
        planner_reply::Audit {
            store: self.rt.store.as_ref(),
            redactor: &self.rt.redactor,
            run_id: self.calls.run.run_id,
        }
    }

    /// Records an invalid call's refusal with the round, for the model to see.
    pub(super) async fn refuse_invalid(
        &self,
        record: &mut RoundRecord,
        invalid: &InvalidToolCall,
    ) -> Result<(), StoreError> {
        let call = ToolCall { id: invalid.id.clone(), name: invalid.name.clone(), arguments: serde_json::json!({}) };
        planner_reply::record_invalid(&self.audit(), self.calls.records.events, &call, &invalid.error).await?;
        record.calls.push(call);
        record.results.push((format!("Not run: {}", invalid.error), true));
        Ok(())
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
