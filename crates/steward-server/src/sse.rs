//! The live event stream of a run as Server-Sent Events (SPEC R2; format: the WHATWG HTML
//! standard, "Server-sent events").
//!
//! Each event is sent with `id:` = its sequence number, `event:` = its kind (`stage_chunk`,
//! `tool_approval_required` …) and `data:` = the event as JSON. A client that reconnects with
//! `Last-Event-ID: N` (or `?after=N`) gets every persisted event after `N` first, then the
//! live ones, without gaps or repeats. The stream ends after the run's terminal event. A run
//! executing in another process is followed by polling the store.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use steward_protocol::Event;
use tokio::sync::broadcast::error::RecvError;

use crate::state::AppState;

/// Interval of keep-alive comments on an idle stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How often a run of another process is polled for new events.
const POLL: Duration = Duration::from_millis(300);

/// The SSE form of one event.
pub fn sse_event(event: &Event) -> SseEvent {
    let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".to_string());
    SseEvent::default().id(event.seq.to_string()).event(event.kind.name()).data(data)
}

/// The stream of run `run_id` after sequence number `after` (ownership already checked).
pub fn run_stream(
    state: AppState,
    run_id: String,
    after: u64,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let stream = async_stream(state, run_id, after);
    Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}

fn async_stream(state: AppState, run_id: String, after: u64) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(256);
    tokio::spawn(async move {
        let _ = forward(&state, &run_id, after, &tx).await;
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (Ok(sse_event(&e)), rx)) })
}

/// Sends the run's events after `after` to `tx` until the terminal event or until the
/// client goes away (`Err`).
async fn forward(
    state: &AppState,
    run_id: &str,
    mut after: u64,
    tx: &tokio::sync::mpsc::Sender<Event>,
) -> Result<(), ()> {
    let store = &state.runtime.store;
    // Subscribe before reading the store, so nothing published in between is missed.
    let mut live = state.live.get(run_id).map(|run| run.subscribe());
    loop {
        let stored = store.events(run_id, after).await.map_err(|_| ())?;
        for event in stored {
            after = event.seq;
            let terminal = event.kind.is_terminal();
            tx.send(event).await.map_err(|_| ())?;
            if terminal {
                return Ok(());
            }
        }
        match live.as_mut() {
            Some(rx) => loop {
                match rx.recv().await {
                    Ok(event) if event.seq <= after => continue,
                    Ok(event) if event.seq == after + 1 => {
                        after = event.seq;
                        let terminal = event.kind.is_terminal();
                        tx.send(event).await.map_err(|_| ())?;
                        if terminal {
                            return Ok(());
                        }
                    }
                    // A gap (this subscriber lagged): reload from the store.
                    Ok(_) | Err(RecvError::Lagged(_)) => break,
                    // The run ended and its channel closed: the store has the rest.
                    Err(RecvError::Closed) => {
                        live = None;
                        break;
                    }
                }
            },
            None => {
                let running = matches!(store.get_run(run_id).await, Ok(Some(r)) if r.status == steward_store::RunStatus::Running)
                    || state.live.get(run_id).is_some();
                if !running {
                    // Ended without a terminal event in the store (interrupted): nothing more comes.
                    let rest = store.events(run_id, after).await.map_err(|_| ())?;
                    for event in rest {
                        tx.send(event).await.map_err(|_| ())?;
                    }
                    return Ok(());
                }
                tokio::select! {
                    _ = tokio::time::sleep(POLL) => {}
                    _ = tx.closed() => return Err(()),
                }
                if live.is_none() {
                    live = state.live.get(run_id).map(|run| run.subscribe());
                }
            }
        }
    }
}
