//! The calls of one round, in order (SPEC A1, A2, T6): every call gets exactly one result —
//! its outcome, the answer from the record for a repeat whose outcome cannot differ, a chain
//! step's outcome with the chain's note, or why it was not run (the tool-call limit, the run
//! stopping, an invalid call).

use steward_protocol::{ChatResponse, StopReason, ToolCall};

use super::RunError;
use super::round::{Loop, Progress};
use crate::chains::ChainPlan;
use crate::context::RoundRecord;
use crate::orchestrator::{CallAbort, CallResult, handle_call, refuse_call};
use crate::stage::Ending;

impl Loop<'_> {
    /// Runs the calls of `reply` (round `round`): its invalid calls are refused first, then its
    /// calls run one at a time until the run stops or the tool-call limit is reached, after
    /// which the rest are answered as not run. Returns the round's record, how the run ends
    /// when a call ended it, and whether the limit was hit.
    ///
    /// Errors: storage failures.
    pub(super) async fn run_calls(
        &self,
        p: &mut Progress,
        reply: &ChatResponse,
        round: u32,
    ) -> Result<(RoundRecord, Option<Ending>, bool), RunError> {
        let mut record = RoundRecord { text: self.rt.redactor.redact(&reply.text), ..Default::default() };
        p.constrain_next |= !reply.invalid_tool_calls.is_empty();
        for invalid in &reply.invalid_tool_calls {
            self.refuse_invalid(&mut record, invalid).await?;
        }
        let mut limit_hit = false;
        let mut stop: Option<Ending> = None;
        for call in &reply.tool_calls {
            record.calls.push(call.clone());
            if stop.is_some() || limit_hit || p.tool_calls >= self.limit.calls {
                limit_hit = stop.is_none();
                let why =
                    if stop.is_some() { "the run stopped".to_string() } else { format!("{} reached", self.limit.name) };
                record.results.push((format!("Not run: {why}."), true));
                continue;
            }
            p.tool_calls += 1;
            match self.run_call(p, call, round, &mut stop).await {
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
        Ok((record, stop, limit_hit))
    }

    /// Runs one call as the run's chains plan it: a plain call (unless it repeats one whose
    /// outcome cannot differ; a run stuck repeating itself sets `stop`), a call refused by a
    /// chain rule, or a chain's step (whose outcome moves the chain on).
    async fn run_call(
        &self,
        p: &mut Progress,
        call: &ToolCall,
        round: u32,
        stop: &mut Option<Ending>,
    ) -> Result<CallResult, CallAbort> {
        let (calls, tools, events) = (self.calls, &self.req.tools, self.calls.records.events);
        match self.chains.plan(p.chain_state, call, tools) {
            ChainPlan::Plain => match p.repeats.check(call, tools) {
                // A repeat whose outcome cannot differ is not run (nor asked) again.
                Some(repeat) => {
                    let store = &self.rt.store;
                    crate::repeats::report(store, &self.rt.redactor, calls.run.run_id, events, call, &repeat).await?;
                    if let Some(text) = repeat.stuck {
                        *stop = Some(Ending::Limit(StopReason::Stuck, text));
                    }
                    Ok(CallResult { content: repeat.message, is_error: !repeat.answered_from_record })
                }
                None => {
                    events.take_call_trace(&call.id);
                    let outcome = handle_call(calls, call).await;
                    let trace = events.take_call_trace(&call.id);
                    match &outcome {
                        Ok(result) => p.repeats.record(call, round, trace, &result.content, tools),
                        Err(_) => p.repeats.ran_elsewhere(call, &trace, tools),
                    }
                    outcome
                }
            },
            ChainPlan::Refuse(rule, reason) => refuse_call(calls, call, rule, &reason).await,
            ChainPlan::Step { chain, step, call: inner } => {
                events.take_call_trace(&inner.id);
                let outcome = handle_call(calls, &inner).await;
                p.repeats.ran_elsewhere(&inner, &events.take_call_trace(&inner.id), tools);
                outcome.map(|mut result| {
                    let (next, note) = self.chains.after(chain, step, result.is_error);
                    p.chain_state = next;
                    if let Some(note) = note {
                        result.content.push_str(&format!("\n{note}"));
                    }
                    result
                })
            }
        }
    }
}
