//! Long-lived conversations (SPEC A6): a conversation handles one task at a time (each task is
//! an ordinary run of its owner, given the last 4 turns as context), is kept in the store so a
//! page reload finds it as it was, and ends after a while without a viewer (15 minutes by
//! default): its running task is then cancelled and further messages are refused with
//! `ended`. A message sent while a task is still running is refused with `busy` and a reason,
//! never queued or lost silently (the page keeps the text). Conversations share nothing but
//! the store: a failing one never affects another.
//!
//! A viewer is an open event stream (`GET /api/conversations/{id}/events`, which the page
//! keeps open); the idle clock starts when the last viewer leaves, and at creation.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use steward_core::{memory, memory::MemoryCommand};
use steward_store::{ConversationRecord, ConversationTurn, new_id};

use crate::error::{ApiError, ErrorClass};
use crate::runs;
pub use crate::state::Conversations;
use crate::state::{AppState, StartRun};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Settings of a new conversation (form or `POST /api/conversations`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewConversation {
    /// Workspace (as for a run; empty: the server's default).
    #[serde(default)]
    pub workspace: Option<String>,
    /// `classic` or `model`; empty: as configured.
    #[serde(default)]
    pub planner: Option<String>,
    /// Provider name; empty: as configured.
    #[serde(default)]
    pub provider: Option<String>,
    /// Model id; empty: the provider's default.
    #[serde(default)]
    pub model: Option<String>,
    /// `loop` or `roles`; empty: as configured.
    #[serde(default)]
    pub mode: Option<String>,
}

/// One turn as shown: the message, and the reply or the run that handles it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TurnView {
    /// The message as sent (redacted).
    pub message: String,
    /// The run handling it; empty when none was needed.
    pub run_id: String,
    /// `running`, `queued`, `completed`, `failed`, `cancelled`, `interrupted`, or `answered`
    /// for a reply without a run.
    pub status: String,
    /// The answer (a run's final text, or the reply); empty while running.
    pub reply: String,
}

/// A conversation as shown.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConversationView {
    /// `cnv_…`.
    pub id: String,
    /// Workspace of its runs.
    pub workspace: String,
    /// True once it has ended.
    pub ended: bool,
    /// True while a task of it runs (a new message would be refused with `busy`).
    pub busy: bool,
    /// Its turns, oldest first.
    pub turns: Vec<TurnView>,
}

fn clean(v: &Option<String>) -> String {
    v.as_deref().map(str::trim).unwrap_or_default().to_string()
}

/// Starts a conversation for `owner_id`.
pub async fn create(state: &AppState, owner_id: &str, new: NewConversation) -> Result<ConversationRecord, ApiError> {
    let workspace = runs::resolve_workspace(state, new.workspace.as_deref())?;
    let mode = clean(&new.mode);
    if !mode.is_empty() && steward_core::RunMode::parse(&mode).is_none() {
        return Err(ApiError::invalid(format!("unknown mode `{mode}`; use `loop` or `roles`")));
    }
    let record = ConversationRecord {
        id: new_id("cnv_"),
        owner_id: owner_id.to_string(),
        workspace: workspace.display().to_string(),
        planner: clean(&new.planner),
        provider: clean(&new.provider),
        model: clean(&new.model),
        mode,
        turns: Vec::new(),
        created_at: state.now(),
        ended_at: None,
    };
    state.runtime.store.upsert_conversation(&record).await.map_err(ApiError::storage)?;
    arm_idle_timer(state, &record.id);
    Ok(record)
}

/// The owner's conversation `id`: `not_found` or `not_owner` otherwise.
pub async fn owned(state: &AppState, owner_id: &str, id: &str) -> Result<ConversationRecord, ApiError> {
    match state.runtime.store.conversation(id).await.map_err(ApiError::storage)? {
        None => Err(ApiError::not_found(format!("no conversation `{id}`"))),
        Some(c) if c.owner_id != owner_id => Err(ApiError::not_owner("this conversation")),
        Some(c) => {
            // One this process has not seen yet (the server restarted): its idle clock starts now.
            let known = lock(&state.conversations.open).contains_key(id);
            if !known && c.ended_at.is_none() {
                arm_idle_timer(state, id);
            }
            Ok(c)
        }
    }
}

/// The owner's conversations, newest first.
pub async fn list(state: &AppState, owner_id: &str) -> Result<Vec<ConversationRecord>, ApiError> {
    let mut all = state.runtime.store.conversations(owner_id).await.map_err(ApiError::storage)?;
    all.reverse();
    Ok(all)
}

/// What each turn shows: replies as stored, runs' answers and statuses from their records.
pub async fn view(state: &AppState, record: &ConversationRecord) -> Result<ConversationView, ApiError> {
    let mut turns = Vec::with_capacity(record.turns.len());
    for turn in &record.turns {
        if turn.run_id.is_empty() {
            turns.push(TurnView {
                message: turn.message.clone(),
                run_id: String::new(),
                status: "answered".into(),
                reply: turn.reply.clone(),
            });
            continue;
        }
        let run = state.runtime.store.get_run(&turn.run_id).await.map_err(ApiError::storage)?;
        let queued = state.live.queue_position(&turn.run_id).is_some();
        let (status, reply) = match run {
            _ if queued => ("queued".to_string(), String::new()),
            Some(r) => (r.status.as_str().to_string(), r.final_text.or(r.error).unwrap_or_default()),
            None if state.live.get(&turn.run_id).is_some() => ("queued".to_string(), String::new()),
            None => ("removed".to_string(), String::new()),
        };
        turns.push(TurnView { message: turn.message.clone(), run_id: turn.run_id.clone(), status, reply });
    }
    let busy = record.turns.last().is_some_and(|t| !t.run_id.is_empty() && state.live.get(&t.run_id).is_some());
    Ok(ConversationView {
        id: record.id.clone(),
        workspace: record.workspace.clone(),
        ended: record.ended_at.is_some(),
        busy,
        turns,
    })
}

/// What sending a message did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Sent {
    /// The run started for it; empty when none was needed.
    pub run_id: String,
    /// The reply when no run was needed (a memory command); empty otherwise.
    pub reply: String,
}

/// Sends `text` to the owner's conversation `id`: a memory command ("remember that …",
/// "forget fact N") is answered at once; anything else starts a run with the last turns as
/// context. Refused with `ended` when the conversation has ended and with `busy` while its
/// previous task still runs.
pub async fn send(state: &AppState, owner_id: &str, id: &str, text: &str) -> Result<Sent, ApiError> {
    let open = state.conversations.open(id);
    let _one_at_a_time = open.sending.lock().await;
    let mut record = owned(state, owner_id, id).await?;
    if record.ended_at.is_some() {
        return Err(ApiError::conflict(ErrorClass::Ended, "this conversation has ended; start a new one"));
    }
    if let Some(last) = record.turns.last()
        && !last.run_id.is_empty()
        && state.live.get(&last.run_id).is_some()
    {
        return Err(ApiError::conflict(
            ErrorClass::Busy,
            "the previous task of this conversation is still running; wait for it to finish or cancel it, then send again",
        ));
    }
    let text = text.trim();
    if text.is_empty() {
        return Err(ApiError::invalid("the message is empty"));
    }
    let store = state.runtime.store.as_ref();
    let (run_id, reply) = match memory::parse_command(text) {
        Some(MemoryCommand::Remember(fact)) => {
            let reply =
                match memory::remember(store, state.runtime.clock.as_ref(), &state.runtime.redactor, owner_id, &fact)
                    .await
                {
                    Ok(f) => format!("Remembered: {}", f.text),
                    Err(e) => format!("Not remembered: {e}"),
                };
            let _ = state.facts_changed.send(owner_id.to_string());
            (String::new(), reply)
        }
        Some(MemoryCommand::Forget(n)) => {
            let reply = match memory::forget(store, owner_id, n).await {
                Ok(f) => format!("Forgot fact {n}: {}", f.text),
                Err(e) => format!("Nothing forgotten: {e}"),
            };
            let _ = state.facts_changed.send(owner_id.to_string());
            (String::new(), reply)
        }
        None => {
            let history = steward_core::conversation_history(store, &record).await.map_err(ApiError::storage)?;
            let non_empty = |v: &str| (!v.is_empty()).then(|| v.to_string());
            let start = StartRun {
                task: text.to_string(),
                workspace: Some(record.workspace.clone()),
                planner: non_empty(&record.planner),
                provider: non_empty(&record.provider),
                model: non_empty(&record.model),
                mode: non_empty(&record.mode),
            };
            let started = runs::start_with_history(state, owner_id, start, history).await?;
            (started.id, String::new())
        }
    };
    record.turns.push(ConversationTurn {
        message: state.runtime.redactor.redact(text),
        run_id: run_id.clone(),
        reply: reply.clone(),
        at: state.now(),
    });
    state.runtime.store.upsert_conversation(&record).await.map_err(ApiError::storage)?;
    let _ = state.conversations_changed.send(record.id.clone());
    Ok(Sent { run_id, reply })
}

/// Ends the owner's conversation now: its running task is cancelled.
pub async fn end(state: &AppState, owner_id: &str, id: &str) -> Result<(), ApiError> {
    owned(state, owner_id, id).await?;
    end_now(state, id).await
}

async fn end_now(state: &AppState, id: &str) -> Result<(), ApiError> {
    let open = state.conversations.open(id);
    let _one_at_a_time = open.sending.lock().await;
    let Some(mut record) = state.runtime.store.conversation(id).await.map_err(ApiError::storage)? else {
        return Ok(());
    };
    if record.ended_at.is_some() {
        return Ok(());
    }
    record.ended_at = Some(state.now());
    state.runtime.store.upsert_conversation(&record).await.map_err(ApiError::storage)?;
    if let Some(run) = record.turns.last().and_then(|t| state.live.get(&t.run_id)) {
        run.cancel.cancel();
    }
    let _ = state.conversations_changed.send(id.to_string());
    Ok(())
}

/// Starts (or restarts) the idle clock of conversation `id`: unless a viewer arrives, it ends
/// after `conversation_idle`.
fn arm_idle_timer(state: &AppState, id: &str) {
    let open = state.conversations.open(id);
    let (state2, id2) = (state.clone(), id.to_string());
    let idle = state.options.conversation_idle;
    let timer = state.tasks.spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep(idle) => {}
            // A stopping server ends nothing: the conversation stays as it was in the store.
            _ = state2.shutdown.cancelled() => return,
        }
        let open = state2.conversations.open(&id2);
        if open.viewers.load(Ordering::SeqCst) == 0 {
            if let Err(e) = end_now(&state2, &id2).await {
                tracing::warn!("ending idle conversation {id2}: {e}");
            }
            lock(&state2.conversations.open).remove(&id2);
        }
    });
    if let Some(previous) = lock(&open.idle).replace(timer) {
        previous.abort();
    }
}

/// A viewer of conversation `id` (an open event stream); dropping it leaves.
pub struct Viewer {
    state: AppState,
    id: String,
}

/// Registers a viewer: the idle clock stops until the last viewer leaves.
pub fn join(state: &AppState, id: &str) -> Viewer {
    let open = state.conversations.open(id);
    open.viewers.fetch_add(1, Ordering::SeqCst);
    if let Some(timer) = lock(&open.idle).take() {
        timer.abort();
    }
    Viewer { state: state.clone(), id: id.to_string() }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let open = self.state.conversations.open(&self.id);
        if open.viewers.fetch_sub(1, Ordering::SeqCst) == 1 {
            arm_idle_timer(&self.state, &self.id);
        }
    }
}
