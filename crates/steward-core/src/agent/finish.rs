//! The end of a run (SPEC A1, O1–O3, R3): the planner's language servers stop, in `roles`
//! mode the planner's answer goes on through the role pipeline, and the run's end is recorded
//! and published — unless another node has taken the run over meanwhile.

use std::time::Instant;

use steward_protocol::{ErrorClass, EventKind, StopReason, Usage};
use steward_store::{RunRecord, RunStatus};

use super::round::Progress;
use super::setup::Prompt;
use super::{RunError, RunRequest, what_we_have};
use crate::Runtime;
use crate::events::EventEmitter;
use crate::interrupt::{Interrupt, Interruptible};
use crate::recovery::Executing;
use crate::stage::Ending;

/// What the end of one run reads.
pub(super) struct End<'a> {
    /// The process's runtime (the run's redactor in it).
    pub rt: &'a Runtime,
    /// The run's request.
    pub req: &'a RunRequest,
    /// Where the run's events go.
    pub events: &'a EventEmitter,
    /// The run's cancellation and deadline.
    pub interrupt: &'a Interruptible,
    /// The prompt's fixed parts, which the role pipeline is given too.
    pub prompt: &'a Prompt,
    /// When the run started.
    pub started: Instant,
}

impl End<'_> {
    /// Ends the run whose loop ended with `ending`: the role pipeline when the run has one, then
    /// the record (`run` updated from `progress`) and the terminal event; `executing` is
    /// released before the record is written. Returns the run as stored.
    ///
    /// Errors: storage failures.
    pub async fn finish(
        &self,
        ending: Ending,
        mut progress: Progress,
        mut run: RunRecord,
        executing: Executing,
    ) -> Result<RunRecord, RunError> {
        // The planner loop is over: its language servers are no longer needed (SPEC T11).
        if let Some(lsp) = self.req.tools.lsp() {
            lsp.shutdown().await;
        }
        let ending = self.roles(ending, &mut progress.usage).await?;
        let duration_ms = self.started.elapsed().as_millis() as u64;
        run.rounds = progress.planner_calls;
        run.tool_calls = progress.tool_calls;
        run.input_tokens = progress.usage.input_tokens;
        run.output_tokens = progress.usage.output_tokens;
        run.finished_at = Some(self.rt.clock.now());
        let Some(terminal) = self.terminal(ending, &progress, &mut run, duration_ms) else {
            drop(executing);
            return superseded(self.rt, run).await;
        };
        // Finishing is conditional: a run another node has meanwhile recovered (marked
        // `interrupted` after this node lost its lease) keeps that record.
        drop(executing);
        if !self.rt.store.finish_run(&run).await? {
            return superseded(self.rt, run).await;
        }
        self.events.emit(terminal).await?;
        self.rt.store.flush().await?;
        Ok(run)
    }

    /// In `roles` mode the planner's answer goes on to the drafters, the critic, the reviewer
    /// and the synthesizer; so does what it had when a round or tool-call limit stopped it (the
    /// run then keeps that limit as its stop reason). Other endings, and every ending of a run
    /// without roles, stay as they are.
    async fn roles(&self, ending: Ending, usage: &mut Usage) -> Result<Ending, RunError> {
        let Some(plan) = &self.req.roles else { return Ok(ending) };
        let redactor = &self.rt.redactor;
        let stages = crate::roles::Stages {
            events: self.events,
            redactor,
            interrupt: self.interrupt,
            instructions: self.prompt.instructions.as_deref(),
            facts: self.prompt.facts.as_deref(),
            max_context_chars: self.req.config.limits.max_context_chars,
        };
        let task = &self.prompt.task;
        Ok(match ending {
            Ending::Answered(text) => {
                crate::roles::run_pipeline(&stages, plan, task, &redactor.redact(&text), None, usage).await?
            }
            Ending::Limit(reason @ (StopReason::MaxRounds | StopReason::MaxToolCalls), text) => {
                crate::roles::run_pipeline(&stages, plan, task, &redactor.redact(&text), Some(reason), usage).await?
            }
            ending => ending,
        })
    }

    /// `run` as `ending` leaves it, and the event that announces it; `None` for a run another
    /// node took over.
    fn terminal(
        &self,
        ending: Ending,
        progress: &Progress,
        run: &mut RunRecord,
        duration_ms: u64,
    ) -> Option<EventKind> {
        let (redactor, usage) = (&self.rt.redactor, progress.usage);
        Some(match ending {
            Ending::Superseded => return None,
            Ending::Answered(text) => completed(run, StopReason::Answered, redactor.redact(&text), usage, duration_ms),
            Ending::Limit(reason, text) => {
                let mut event = completed(run, reason, redactor.redact(&text), usage, duration_ms);
                if reason == StopReason::MaxToolCalls
                    && let EventKind::RunCompleted { limit, .. } = &mut event
                {
                    *limit = progress.stopped_by.clone();
                }
                event
            }
            Ending::Interrupted(Interrupt::Timeout) => {
                completed(run, StopReason::Timeout, what_we_have(&progress.rounds), usage, duration_ms)
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
        })
    }
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

/// `run` completed for `reason` with `text` as its answer, and its `run_completed` event.
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
