//! Continuing a conversation from the terminal: every `steward run` is a turn of a
//! conversation (SPEC A6, as in the web UI); `steward run --continue` adds a turn to the
//! newest conversation of this user in this workspace, `steward resume ID` to the one of a
//! conversation id or run id. The new run gets the earlier turns as context through
//! [`steward_core::conversation_history`], exactly as a message sent in the web UI does.

use anyhow::Result;
use steward_core::Turn;
use steward_core::{Clock, SystemClock};
use steward_store::{ConversationRecord, ConversationTurn, Store, new_id};

use super::*;

/// Which conversation a terminal run belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Thread {
    /// None: the run is not kept as a conversation turn (a scripted run for one tool call).
    Untracked,
    /// A new conversation.
    New,
    /// The newest conversation of this user in the run's workspace (`--continue`).
    Last,
    /// The conversation `cnv_…`, or the one the run `run_…` (id, unique prefix or `last`)
    /// belongs to (`steward resume`).
    Of(String),
}

/// The conversation a run joins and the context its earlier turns give.
pub struct Joined {
    /// The conversation, not yet holding the new turn.
    pub record: ConversationRecord,
    /// Its last turns as context (empty for a new conversation).
    pub history: Vec<Turn>,
}

/// When a conversation was last active: its last turn, or its start.
fn last_active(c: &ConversationRecord) -> chrono::DateTime<chrono::Utc> {
    c.turns.last().map_or(c.created_at, |t| t.at)
}

fn new_conversation(owner_id: &str, workspace: &str) -> ConversationRecord {
    ConversationRecord {
        id: new_id("cnv_"),
        owner_id: owner_id.to_string(),
        workspace: workspace.to_string(),
        planner: String::new(),
        provider: String::new(),
        model: String::new(),
        mode: String::new(),
        turns: Vec::new(),
        created_at: SystemClock.now(),
        ended_at: None,
    }
}

/// Finds (or starts) the conversation `thread` names for `owner_id`. `workspace` is the
/// canonical workspace of `--continue` and of a new conversation; `steward resume` takes the
/// conversation's own. Usage errors: no earlier conversation, an unknown id, another owner's
/// conversation or run, or a previous turn that still runs.
pub async fn join(store: &dyn Store, owner_id: &str, workspace: &str, thread: &Thread) -> Result<Option<Joined>> {
    let record = match thread {
        Thread::Untracked => return Ok(None),
        Thread::New => return Ok(Some(Joined { record: new_conversation(owner_id, workspace), history: Vec::new() })),
        Thread::Last => store
            .conversations(owner_id)
            .await?
            .into_iter()
            .filter(|c| c.workspace == workspace)
            .max_by_key(last_active)
            .ok_or_else(|| {
                usage(format!(
                    "no earlier conversation of {owner_id} in {workspace}: start one with `steward run \"TASK\"`"
                ))
            })?,
        Thread::Of(id) if id.starts_with("cnv_") => match store.conversation(id).await? {
            None => return Err(usage(format!("no conversation `{id}`"))),
            Some(c) if c.owner_id != owner_id => {
                return Err(usage(format!(
                    "conversation `{id}` belongs to another owner; only {} may continue it",
                    c.owner_id
                )));
            }
            Some(c) => c,
        },
        Thread::Of(id) => {
            let run = if id == "last" {
                // `last`: this owner's newest run, not someone else's.
                let runs = store.list_runs(10_000).await?;
                runs.into_iter()
                    .find(|r| r.owner_id == owner_id)
                    .ok_or_else(|| usage(format!("{owner_id} has no runs yet")))?
            } else {
                super::inspect::find_run(store, id).await?
            };
            if run.owner_id != owner_id {
                return Err(usage(format!(
                    "run `{}` belongs to another owner; only {} may continue it",
                    run.id, run.owner_id
                )));
            }
            let mine = store.conversations(owner_id).await?;
            match mine.into_iter().find(|c| c.turns.iter().any(|t| t.run_id == run.id)) {
                Some(c) => c,
                // A run from before conversations were kept: it becomes the first turn.
                None => {
                    let mut c = new_conversation(owner_id, &run.workspace);
                    c.created_at = run.created_at;
                    c.turns.push(ConversationTurn {
                        message: run.task.clone(),
                        run_id: run.id.clone(),
                        reply: String::new(),
                        at: run.created_at,
                    });
                    c
                }
            }
        }
    };
    if let Some(last) = record.turns.last().filter(|t| !t.run_id.is_empty())
        && let Some(run) = store.get_run(&last.run_id).await?
        && run.status == RunStatus::Running
    {
        return Err(usage(format!(
            "the previous task of conversation {} ({}) is still running; wait for it to finish or cancel it, then continue",
            record.id, run.id
        )));
    }
    let history = steward_core::conversation_history(store, &record).await?;
    Ok(Some(Joined { record, history }))
}

/// Records `task` (redacted) as the turn of `joined` handled by `run_id`; a conversation the
/// web UI had ended is open again.
pub async fn add_turn(store: &dyn Store, joined: &mut Joined, task: &str, run_id: &str) -> Result<()> {
    joined.record.turns.push(ConversationTurn {
        message: redactor().redact(task),
        run_id: run_id.to_string(),
        reply: String::new(),
        at: SystemClock.now(),
    });
    joined.record.ended_at = None;
    store.upsert_conversation(&joined.record).await?;
    Ok(())
}
