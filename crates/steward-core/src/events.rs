//! Publishing a run's events (SPEC R2): numbered, timestamped, redacted, persisted, and
//! passed to an observer (a terminal printer, a JSON-lines writer, a web stream).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use steward_policy::Redactor;
use steward_protocol::{Event, EventKind};
use steward_store::{Store, StoreError};

/// Receives every event of a run, in order, after redaction.
pub trait EventObserver: Send + Sync {
    /// Called once per event, synchronously; keep it quick.
    fn on_event(&self, event: &Event);
}

/// An observer that ignores everything.
pub struct NoObserver;

impl EventObserver for NoObserver {
    fn on_event(&self, _event: &Event) {}
}

/// Numbers, redacts, persists and publishes the events of one run.
pub struct EventEmitter {
    run_id: String,
    seq: AtomicU64,
    store: Arc<dyn Store>,
    observer: Arc<dyn EventObserver>,
    redactor: Arc<Redactor>,
}

impl EventEmitter {
    /// An emitter for `run_id` starting at sequence number 1.
    pub fn new(run_id: &str, store: Arc<dyn Store>, observer: Arc<dyn EventObserver>, redactor: Arc<Redactor>) -> Self {
        EventEmitter { run_id: run_id.to_string(), seq: AtomicU64::new(0), store, observer, redactor }
    }

    /// Publishes one event: every string in it (keys and values) passes the redactor first.
    /// Returns the event as published. Fails only when the store cannot queue it.
    pub async fn emit(&self, kind: EventKind) -> Result<Event, StoreError> {
        let kind = self.redact(kind);
        let event = Event {
            run_id: self.run_id.clone(),
            seq: self.seq.fetch_add(1, Ordering::SeqCst) + 1,
            at: chrono::Utc::now(),
            kind,
        };
        self.store.append_event(&event).await?;
        self.observer.on_event(&event);
        Ok(event)
    }

    fn redact(&self, kind: EventKind) -> EventKind {
        let value = match serde_json::to_value(&kind) {
            Ok(v) => v,
            Err(_) => return kind,
        };
        let redacted = self.redactor.redact_value(&value);
        if redacted == value {
            return kind;
        }
        // A redacted event keeps its shape; should it no longer parse, drop every string field
        // rather than publish the secret.
        serde_json::from_value(redacted).unwrap_or(kind_without_text(&kind))
    }
}

fn kind_without_text(kind: &EventKind) -> EventKind {
    EventKind::StageChunk { stage: "redacted".into(), text: format!("[REDACTED {} event]", kind.name()) }
}

/// Holds back the unfinished last word of streamed text so that a secret split across two
/// chunks is still redacted as a whole. Call [`ChunkRedactor::push`] per chunk and
/// [`ChunkRedactor::finish`] at the end; each returns the text that is safe to publish.
pub struct ChunkRedactor {
    redactor: Arc<Redactor>,
    pending: String,
}

impl ChunkRedactor {
    /// Keeps at most this many characters back when no whitespace arrives.
    const MAX_HOLD_CHARS: usize = 512;

    /// A new chunk redactor.
    pub fn new(redactor: Arc<Redactor>) -> Self {
        ChunkRedactor { redactor, pending: String::new() }
    }

    /// Adds a chunk; returns the redacted text up to the last whitespace (may be empty).
    pub fn push(&mut self, chunk: &str) -> String {
        self.pending.push_str(chunk);
        let cut = match self.pending.rfind(char::is_whitespace) {
            Some(i) => i + self.pending[i..].chars().next().map_or(1, char::len_utf8),
            None if self.pending.chars().count() > Self::MAX_HOLD_CHARS => self.pending.len(),
            None => return String::new(),
        };
        let ready: String = self.pending.drain(..cut).collect();
        self.redactor.redact(&ready)
    }

    /// Returns whatever is left, redacted.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        self.redactor.redact(&rest)
    }
}
