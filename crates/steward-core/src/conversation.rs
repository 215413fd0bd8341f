//! Conversations (SPEC A6) as every front end continues them: the web UI's conversations and
//! `steward run --continue` / `steward resume` give a new run the earlier turns through
//! [`history`], so a turn reads the same to the model wherever it was sent from.

use steward_protocol::EventKind;
use steward_store::{ConversationRecord, Store, StoreError};

use crate::context::{MAX_HISTORY_TURNS, Turn};

/// The earlier turns of `record` as context for its next run: the last
/// `MAX_HISTORY_TURNS`, oldest first, each message with its answer: the stored reply of a
/// turn answered without a run, a run's final text, `(the run ended: STATUS)` for a run that
/// ended without one, or `(no record)` for a run that was removed; each with whether its run
/// had seen untrusted content.
///
/// Errors: the store could not be read.
pub async fn history(store: &dyn Store, record: &ConversationRecord) -> Result<Vec<Turn>, StoreError> {
    let start = record.turns.len().saturating_sub(MAX_HISTORY_TURNS);
    let mut turns = Vec::with_capacity(record.turns.len() - start);
    for turn in &record.turns[start..] {
        let (answer, tainted) = if turn.run_id.is_empty() {
            (turn.reply.clone(), false)
        } else {
            match store.get_run(&turn.run_id).await? {
                Some(r) => {
                    let events = store.events(&turn.run_id, 0).await?;
                    let tainted = events.iter().any(|e| matches!(e.kind, EventKind::RunTainted { .. }));
                    (r.final_text.unwrap_or_else(|| format!("(the run ended: {})", r.status.as_str())), tainted)
                }
                None => ("(no record)".to_string(), false),
            }
        };
        turns.push(Turn { task: turn.message.clone(), answer, run_id: turn.run_id.clone(), tainted });
    }
    Ok(turns)
}

#[cfg(test)]
mod tests {
    use steward_protocol::StopReason;
    use steward_store::{ConversationTurn, RunRecord, RunStatus, RunStore, SqliteStore, StoreOptions};

    use super::*;

    fn run(id: &str, status: RunStatus, final_text: Option<&str>) -> RunRecord {
        RunRecord {
            id: id.into(),
            owner_id: "local:t".into(),
            task: String::new(),
            planner: "classic".into(),
            provider: String::new(),
            model: String::new(),
            workspace: "/w".into(),
            status,
            stop_reason: final_text.map(|_| StopReason::Answered),
            final_text: final_text.map(str::to_string),
            error_class: None,
            error: None,
            created_at: chrono::Utc::now(),
            finished_at: None,
            rounds: 0,
            tool_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            pid: 0,
        }
    }

    fn turn(message: &str, run_id: &str, reply: &str) -> ConversationTurn {
        ConversationTurn { message: message.into(), run_id: run_id.into(), reply: reply.into(), at: chrono::Utc::now() }
    }

    #[tokio::test]
    async fn the_last_turns_give_each_message_with_its_answer_or_how_its_run_ended() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("steward.db"), StoreOptions::default()).await.unwrap();
        store.insert_run(&run("run_a", RunStatus::Completed, Some("42 files"))).await.unwrap();
        store.insert_run(&run("run_b", RunStatus::Failed, None)).await.unwrap();
        let record = ConversationRecord {
            id: "cnv_1".into(),
            owner_id: "local:t".into(),
            workspace: "/w".into(),
            planner: String::new(),
            provider: String::new(),
            model: String::new(),
            mode: String::new(),
            turns: vec![
                turn("too old", "", "left out"),
                turn("count", "run_a", ""),
                turn("remember that x", "", "Remembered: x"),
                turn("break", "run_b", ""),
                turn("gone", "run_removed", ""),
            ],
            created_at: chrono::Utc::now(),
            ended_at: None,
        };
        let turns = history(&store, &record).await.unwrap();
        let pairs: Vec<(&str, &str)> = turns.iter().map(|t| (t.task.as_str(), t.answer.as_str())).collect();
        assert_eq!(
            pairs,
            vec![
                ("count", "42 files"),
                ("remember that x", "Remembered: x"),
                ("break", "(the run ended: failed)"),
                ("gone", "(no record)"),
            ]
        );
    }
}
