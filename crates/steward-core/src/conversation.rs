//! Conversations (SPEC A6) as every front end continues them: the web UI's conversations and
//! `steward run --continue` / `steward resume` give a new run the earlier turns through
//! [`history`], so a turn reads the same to the model wherever it was sent from.

use steward_store::{ConversationRecord, Store, StoreError};

use crate::context::{MAX_HISTORY_TURNS, Turn};

/// The earlier turns of `record` as context for its next run: the last
/// [`MAX_HISTORY_TURNS`], oldest first, each message with its answer: the stored reply of a
/// turn answered without a run, a run's final text, `(the run ended: STATUS)` for a run that
/// ended without one, or `(no record)` for a run that was removed.
///
/// Errors: the store could not be read.
pub async fn history(store: &dyn Store, record: &ConversationRecord) -> Result<Vec<Turn>, StoreError> {
    let start = record.turns.len().saturating_sub(MAX_HISTORY_TURNS);
    let mut turns = Vec::with_capacity(record.turns.len() - start);
    for turn in &record.turns[start..] {
        let answer = if turn.run_id.is_empty() {
            turn.reply.clone()
        } else {
            match store.get_run(&turn.run_id).await? {
                Some(r) => r.final_text.unwrap_or_else(|| format!("(the run ended: {})", r.status.as_str())),
                None => "(no record)".to_string(),
            }
        };
        turns.push(Turn { task: turn.message.clone(), answer });
    }
    Ok(turns)
}
