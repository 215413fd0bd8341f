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
    /// The time each event is stamped with.
    clock: Arc<dyn crate::clock::Clock>,
    /// What the events so far say about each tool call that has not been taken yet
    /// ([`EventEmitter::take_call_trace`]).
    calls: std::sync::Mutex<std::collections::HashMap<String, crate::call_trace::CallTrace>>,
}

impl EventEmitter {
    /// An emitter for `run_id` starting at sequence number 1, stamping each event with the time
    /// `clock` shows.
    pub fn new(
        run_id: &str,
        store: Arc<dyn Store>,
        observer: Arc<dyn EventObserver>,
        redactor: Arc<Redactor>,
        clock: Arc<dyn crate::clock::Clock>,
    ) -> Self {
        EventEmitter {
            run_id: run_id.to_string(),
            seq: AtomicU64::new(0),
            store,
            observer,
            redactor,
            clock,
            calls: Default::default(),
        }
    }

    /// What the events published since the last call for `call_id` say about that call
    /// (whether it started, how it ended), and forgets it: call ids may repeat across rounds.
    pub(crate) fn take_call_trace(&self, call_id: &str) -> crate::call_trace::CallTrace {
        self.calls.lock().map(|mut calls| calls.remove(call_id).unwrap_or_default()).unwrap_or_default()
    }

    /// Publishes one event: every string in it (keys and values) passes the redactor first.
    /// Returns the event as published. Fails only when the store cannot queue it.
    pub async fn emit(&self, kind: EventKind) -> Result<Event, StoreError> {
        let kind = self.redact(kind);
        let event = Event {
            run_id: self.run_id.clone(),
            seq: self.seq.fetch_add(1, Ordering::SeqCst) + 1,
            at: self.clock.now(),
            kind,
        };
        self.store.append_event(&event).await?;
        if let Ok(mut calls) = self.calls.lock() {
            crate::call_trace::CallTrace::observe(&mut calls, &event.kind);
        }
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

/// Holds back streamed text until it is safe to redact: text is released line by line (a
/// secret and its label — `Bearer eyJ…`, `api_key: …` — are on one line), an open private-key
/// block is held until its END line, and a line longer than [`ChunkRedactor::MAX_LINE_CHARS`]
/// is released up to its last whitespace. Call [`ChunkRedactor::push`] per chunk and
/// [`ChunkRedactor::finish`] at the end; each returns the redacted text that is safe to
/// publish.
pub struct ChunkRedactor {
    redactor: Arc<Redactor>,
    pending: String,
}

impl ChunkRedactor {
    /// Longest line held back whole, in characters.
    pub const MAX_LINE_CHARS: usize = 2_000;
    /// Longest private-key block held back, in bytes; beyond it the text is released (redacted).
    pub const MAX_BLOCK_BYTES: usize = 64 * 1024;

    /// A new chunk redactor.
    pub fn new(redactor: Arc<Redactor>) -> Self {
        ChunkRedactor { redactor, pending: String::new() }
    }

    /// Adds a chunk; returns the redacted text that can be published now (may be empty).
    pub fn push(&mut self, chunk: &str) -> String {
        self.pending.push_str(chunk);
        let cut = self.safe_cut();
        if cut == 0 {
            return String::new();
        }
        let ready: String = self.pending.drain(..cut).collect();
        self.redactor.redact(&ready)
    }

    /// Returns whatever is left, redacted.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        self.redactor.redact(&rest)
    }

    /// Byte index up to which the pending text can be released.
    fn safe_cut(&self) -> usize {
        let text = &self.pending;
        if let Some(begin) = text.rfind("-----BEGIN") {
            let closed = text[begin..].contains("-----END")
                && text[begin..].rfind("-----END").is_some_and(|end| text[begin + end..].contains('\n'));
            if !closed && text.len() - begin < Self::MAX_BLOCK_BYTES {
                return text[..begin].rfind('\n').map_or(0, |i| i + 1);
            }
        }
        match text.rfind('\n') {
            Some(i) => i + 1,
            None if text.chars().count() > Self::MAX_LINE_CHARS => text
                .rfind(char::is_whitespace)
                .map_or(text.len(), |i| i + text[i..].chars().next().map_or(1, char::len_utf8)),
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(pieces: &[&str]) -> String {
        let mut chunks = ChunkRedactor::new(Arc::new(Redactor::new(Vec::new())));
        let mut out: String = pieces.iter().map(|p| chunks.push(p)).collect();
        out.push_str(&chunks.finish());
        out
    }

    #[test]
    fn secrets_split_across_chunks_are_still_redacted() {
        let out = streamed(&[
            "-----",
            "BEGIN",
            " RSA",
            " PRIVATE",
            " KEY",
            "-----",
            "\n",
            "MIIEow",
            "PRIVBODYLINE1",
            "\n",
            "-----",
            "END",
            " RSA",
            " PRIVATE",
            " KEY",
            "-----",
            "\n",
            "and",
            " Bearer",
            " eyJhbGciOiJIUzI1NiJ9.",
            "PRIVTOKENPART",
            "\nok",
        ]);
        assert!(!out.contains("PRIVBODYLINE1"), "{out}");
        assert!(!out.contains("PRIVTOKENPART"), "{out}");
        assert!(out.ends_with("ok"), "{out}");
    }

    #[test]
    fn plain_text_passes_unchanged() {
        assert_eq!(streamed(&["Hello ", "wor", "ld\nsecond ", "line"]), "Hello world\nsecond line");
    }
}
