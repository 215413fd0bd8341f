//! One model stage of a run: who plays the planner, how a stage's model call streams its text
//! as events, and how the loop (or the role pipeline after it) ended.

use std::sync::Arc;

use steward_policy::Redactor;
use steward_protocol::{ChatRequest, ErrorClass, EventKind, StopReason, StreamDelta, ToolChoice};
use steward_provider::Provider;
use steward_store::StoreError;

use crate::events::{ChunkRedactor, EventEmitter};
use crate::interrupt::Interrupt;

/// The planner of a run: the classic planner or a model behind a provider.
#[derive(Clone)]
pub struct PlannerChoice {
    /// `classic` or `model`.
    pub kind: String,
    /// The provider answering planner calls (the classic planner is one too).
    pub provider: Arc<dyn Provider>,
    /// Model id sent with each request.
    pub model: String,
    /// Tool choice for the first round; later rounds use `auto` unless this is `none`.
    pub tool_choice: ToolChoice,
    /// Output token limit per planner call.
    pub max_tokens: Option<u32>,
}

/// How the loop (or the role pipeline after it) ended.
pub(crate) enum Ending {
    /// The planner (or the synthesizer) answered with this text.
    Answered(String),
    /// A limit stopped the run; the text is what it has.
    Limit(StopReason, String),
    /// Cancelled or out of time.
    Interrupted(Interrupt),
    /// A model call failed: class and message.
    Failed(ErrorClass, String),
    /// Another node took the run over (this node lost its lease) and recovered it: nothing
    /// more of it is written here.
    Superseded,
}

/// Why a stage's model call produced no reply.
pub(crate) enum StageError {
    /// The provider failed.
    Provider(steward_provider::ProviderError),
    /// An event could not be stored.
    Storage(StoreError),
}

/// One model call of stage `stage`, publishing its text as `stage_chunk` events while it
/// streams.
pub(crate) async fn stream_stage(
    provider: &dyn Provider,
    stage: &str,
    request: &ChatRequest,
    events: &EventEmitter,
    redactor: Arc<Redactor>,
) -> Result<steward_protocol::ChatResponse, StageError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let call = async move {
        let mut sink = move |delta: StreamDelta| {
            if let StreamDelta::Text { text } = delta {
                let _ = tx.send(text);
            }
        };
        provider.stream(request, &mut sink).await
    };
    let forward = async {
        let mut chunks = ChunkRedactor::new(redactor);
        while let Some(text) = rx.recv().await {
            let ready = chunks.push(&text);
            if !ready.is_empty() {
                events.emit(EventKind::StageChunk { stage: stage.into(), text: ready }).await?;
            }
        }
        let rest = chunks.finish();
        if !rest.is_empty() {
            events.emit(EventKind::StageChunk { stage: stage.into(), text: rest }).await?;
        }
        Ok::<(), StoreError>(())
    };
    let (reply, forwarded) = tokio::join!(call, forward);
    forwarded.map_err(StageError::Storage)?;
    reply.map_err(StageError::Provider)
}

/// Polls `stage` and calls `waiting` the first time it waits: for a model's stage, when its
/// request is on its way (connecting or sent) and the run waits for the reply.
pub(crate) async fn on_first_wait<T>(stage: impl Future<Output = T>, waiting: impl FnOnce()) -> T {
    let mut stage = std::pin::pin!(stage);
    let mut waiting = Some(waiting);
    std::future::poll_fn(|cx| {
        let polled = stage.as_mut().poll(cx);
        if polled.is_pending()
            && let Some(waiting) = waiting.take()
        {
            waiting();
        }
        polled
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::on_first_wait;

    /// The callback runs once, when the stage first waits, before the stage goes on.
    #[tokio::test]
    async fn the_callback_runs_once_when_the_stage_first_waits() {
        let calls = Cell::new(0);
        let stage = async {
            let before = calls.get();
            tokio::task::yield_now().await;
            let after_first_wait = calls.get();
            tokio::task::yield_now().await;
            (before, after_first_wait)
        };
        let seen = on_first_wait(stage, || calls.set(calls.get() + 1)).await;
        assert_eq!(seen, (0, 1));
        assert_eq!(calls.get(), 1);
    }

    #[tokio::test]
    async fn a_stage_that_never_waits_does_not_run_the_callback() {
        let called = Cell::new(false);
        assert_eq!(on_first_wait(async { 7 }, || called.set(true)).await, 7);
        assert!(!called.get());
    }
}
