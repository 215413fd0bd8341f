//! The live event stream of a run as Server-Sent Events (SPEC R2; format: the WHATWG HTML
//! standard, "Server-sent events").
//!
//! Each event is sent with `id:` = its sequence number, `event:` = its kind (`stage_chunk`,
//! `tool_approval_required` …) and `data:` = the event as JSON. A live event is turned into
//! these bytes once ([`LiveEvent::frame`]) and the same bytes are written to every client;
//! events that are ready together go out in one write. A client that reconnects with
//! `Last-Event-ID: N` (or `?after=N`) gets every persisted event after `N` first, then the
//! live ones, without gaps or repeats. The stream ends after the run's terminal event. A run
//! executing in another process is followed through the store: woken by the store's change
//! notices when it sends them (PostgreSQL `LISTEN/NOTIFY`: another node stored events), with a
//! slow poll in case a notice is lost ([`crate::ServerOptions::notice_poll`]); by polling every
//! 300 ms otherwise (SQLite).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::header;
use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use steward_protocol::Event;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::{Instant, Sleep};

use crate::live::LiveEvent;
use crate::state::AppState;

/// Interval of keep-alive comments on an event stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// A keep-alive comment.
const KEEP_ALIVE_FRAME: &[u8] = b":\n\n";
/// Most bytes of events that are ready together written at once.
const MAX_BATCH: usize = 64 * 1024;
/// How often a run of another process is polled for new events when the store sends no
/// change notices.
const POLL: Duration = Duration::from_millis(300);
/// How many times (each up to [`POLL`]) the stream of a run whose record says it ended looks
/// for its terminal event before ending without it.
const END_CHECKS: u32 = 10;

/// The SSE form of one event.
pub fn sse_event(event: &Event) -> SseEvent {
    let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".to_string());
    SseEvent::default().id(event.seq.to_string()).event(event.kind.name()).data(data)
}

/// Most event streams open at once, all owners together: far below the open-file limit a
/// server gets, so that clients holding streams open cannot starve it of sockets.
pub const MAX_OPEN_STREAMS: usize = 4096;

/// A place among the open event streams, given back when dropped.
pub struct StreamSlot(AppState);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Takes a place for one more event stream: `busy` (429) when [`MAX_OPEN_STREAMS`] are open.
pub fn open_stream(state: &AppState) -> Result<StreamSlot, crate::error::ApiError> {
    let before = state.open_streams.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let slot = StreamSlot(state.clone());
    if before >= MAX_OPEN_STREAMS {
        return Err(crate::error::ApiError {
            status: axum::http::StatusCode::TOO_MANY_REQUESTS,
            class: crate::error::ErrorClass::Busy,
            message: format!("{MAX_OPEN_STREAMS} event streams are open; close one and try again"),
        });
    }
    Ok(slot)
}

/// The stream of run `run_id` after sequence number `after` (ownership already checked),
/// holding `slot` while it is open: a `text/event-stream` response.
pub fn run_stream(state: AppState, run_id: String, after: u64, slot: StreamSlot) -> Response {
    // Subscribe before reading the store, so nothing published in between is missed.
    let live = state.live.get(&run_id).map(|run| run.subscribe());
    let changes = if live.is_none() { state.runtime.store.subscribe_changes() } else { None };
    let follow = Follow {
        changes,
        state,
        run_id,
        after,
        live,
        backlog: VecDeque::new(),
        reload: true,
        last: false,
        done: false,
        end_checks: 0,
        keep_alive: Box::pin(tokio::time::sleep(KEEP_ALIVE)),
        _slot: slot,
    };
    let stream = futures::stream::unfold(follow, |mut follow| async move {
        let bytes = follow.next_write().await?;
        Some((Ok::<_, Infallible>(bytes), follow))
    });
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], Body::from_stream(stream))
        .into_response()
}

/// What a stream sends next.
enum Next {
    /// An event.
    Event(Arc<LiveEvent>),
    /// A keep-alive comment.
    KeepAlive,
}

/// One client following one run: the stored events after `after`, then the live ones, until
/// the terminal event. The connection reads it directly (no task per client); the client
/// going away drops it.
struct Follow {
    /// Held while the stream is open.
    _slot: StreamSlot,
    state: AppState,
    run_id: String,
    /// Sequence number of the last event sent.
    after: u64,
    live: Option<broadcast::Receiver<Arc<LiveEvent>>>,
    /// The store's change notices, while following a run of another process.
    changes: Option<broadcast::Receiver<steward_store::Change>>,
    /// Stored events still to send.
    backlog: VecDeque<Event>,
    /// Read the store before waiting for live events.
    reload: bool,
    /// Nothing more comes after the backlog (the run ended without a terminal event).
    last: bool,
    /// The terminal event was sent.
    done: bool,
    /// Looks for the terminal event of a run whose record says it ended.
    end_checks: u32,
    /// When the next keep-alive comment is due (every [`KEEP_ALIVE`], events or not: one timer
    /// per stream, not one per event).
    keep_alive: Pin<Box<Sleep>>,
}

impl Follow {
    /// The bytes of the next write: the next event, with the events ready right after it
    /// (up to [`MAX_BATCH`] bytes), or a keep-alive comment; `None` ends the stream.
    async fn next_write(&mut self) -> Option<Bytes> {
        let first = match self.next().await? {
            Next::KeepAlive => return Some(Bytes::from_static(KEEP_ALIVE_FRAME)),
            Next::Event(event) => event,
        };
        let Some(second) = self.ready_now() else {
            // The common case: one event, its shared bytes written as they are.
            return Some(first.frame.clone());
        };
        let mut batch = BytesMut::with_capacity(first.frame.len() + second.frame.len());
        batch.extend_from_slice(&first.frame);
        batch.extend_from_slice(&second.frame);
        while batch.len() < MAX_BATCH {
            let Some(more) = self.ready_now() else { break };
            batch.extend_from_slice(&more.frame);
        }
        Some(batch.freeze())
    }

    /// The next event if it can be had without waiting: from the backlog, or already in the
    /// live channel.
    fn ready_now(&mut self) -> Option<Arc<LiveEvent>> {
        if self.done {
            return None;
        }
        if let Some(event) = self.backlog.pop_front() {
            return Some(self.sent(Arc::new(LiveEvent::new(event))));
        }
        if self.reload || self.last {
            return None;
        }
        let rx = self.live.as_mut()?;
        loop {
            match rx.try_recv() {
                Ok(live) if live.event.seq <= self.after => {}
                Ok(live) if live.event.seq == self.after + 1 => return Some(self.sent(live)),
                // A gap: `next` reloads from the store.
                Ok(_) | Err(TryRecvError::Lagged(_)) => {
                    self.reload = true;
                    return None;
                }
                Err(TryRecvError::Closed) => {
                    self.live = None;
                    self.reload = true;
                    return None;
                }
                Err(TryRecvError::Empty) => return None,
            }
        }
    }

    /// Whether the keep-alive comment is due now; if so, the next one is due a
    /// [`KEEP_ALIVE`] later.
    fn keep_alive_due(&mut self) -> bool {
        if self.keep_alive.deadline() > Instant::now() {
            return false;
        }
        self.keep_alive.as_mut().reset(Instant::now() + KEEP_ALIVE);
        true
    }

    /// The next thing to send; `None` ends the stream.
    async fn next(&mut self) -> Option<Next> {
        loop {
            if self.done {
                return None;
            }
            if let Some(event) = self.backlog.pop_front() {
                return Some(Next::Event(self.sent(Arc::new(LiveEvent::new(event)))));
            }
            if self.last {
                return None;
            }
            if self.keep_alive_due() {
                return Some(Next::KeepAlive);
            }
            let store = &self.state.runtime.store;
            if self.reload {
                self.reload = false;
                self.backlog.extend(store.events(&self.run_id, self.after).await.ok()?);
                continue;
            }
            match self.live.as_mut() {
                Some(rx) => match tokio::select! {
                    biased;
                    received = rx.recv() => received,
                    // Comes round to `keep_alive_due` at the top of the loop.
                    () = self.keep_alive.as_mut() => continue,
                } {
                    Ok(live) if live.event.seq <= self.after => {}
                    Ok(live) if live.event.seq == self.after + 1 => return Some(Next::Event(self.sent(live))),
                    // A gap (this subscriber lagged): reload from the store.
                    Ok(_) | Err(RecvError::Lagged(_)) => self.reload = true,
                    // The run ended and its channel closed: the store has the rest.
                    Err(RecvError::Closed) => {
                        self.live = None;
                        self.reload = true;
                    }
                },
                None => {
                    let status = match store.get_run(&self.run_id).await {
                        Ok(Some(r)) => Some(r.status),
                        _ => None,
                    };
                    let running = status == Some(steward_store::RunStatus::Running)
                        || self.state.live.get(&self.run_id).is_some();
                    if !running {
                        let rest = store.events(&self.run_id, self.after).await.ok()?;
                        let terminal = rest.iter().any(|e| e.kind.is_terminal());
                        self.backlog.extend(rest);
                        // A run's record is updated just before its terminal event is stored:
                        // give that event a moment, except for a run that never gets one.
                        if !terminal
                            && status != Some(steward_store::RunStatus::Interrupted)
                            && self.end_checks < END_CHECKS
                        {
                            self.end_checks += 1;
                            self.wait_for_change(POLL).await;
                            continue;
                        }
                        // Ended without a terminal event in the store (interrupted): nothing more comes.
                        self.last = true;
                        continue;
                    }
                    let at_most = self.state.options.notice_poll;
                    self.wait_for_change(at_most).await;
                    if self.live.is_none() {
                        self.live = self.state.live.get(&self.run_id).map(|run| run.subscribe());
                    }
                    self.reload = true;
                }
            }
        }
    }

    /// Waits until the store notices a change of this run (or may have missed one), at most
    /// `at_most`; [`POLL`] when the store sends no notices.
    async fn wait_for_change(&mut self, at_most: Duration) {
        let Some(changes) = self.changes.as_mut() else {
            tokio::time::sleep(POLL).await;
            return;
        };
        let run_id = self.run_id.as_str();
        let noticed = async {
            loop {
                match changes.recv().await {
                    Ok(change) if change.concerns(run_id) => return true,
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => return true,
                    Err(RecvError::Closed) => return false,
                }
            }
        };
        match tokio::time::timeout(at_most, noticed).await {
            Ok(true) | Err(_) => {}
            // The notices stopped: poll from now on.
            Ok(false) => self.changes = None,
        }
    }

    fn sent(&mut self, live: Arc<LiveEvent>) -> Arc<LiveEvent> {
        self.after = live.event.seq;
        self.done = live.event.kind.is_terminal();
        live
    }
}
