//! The event → session update mapping.

use serde_json::{Value, json};
use steward_protocol::{ErrorClass, Usage};

use super::*;

fn event(seq: u64, kind: EventKind) -> Event {
    Event { run_id: "run_a".into(), seq, at: chrono::Utc::now(), kind }
}

/// The updates as their JSON wire form.
fn wire(updates: Vec<acp::SessionUpdate>) -> Vec<Value> {
    updates.into_iter().map(|u| serde_json::to_value(u).unwrap()).collect()
}

fn one(mapper: &mut Mapper, seq: u64, kind: EventKind) -> Value {
    let mut updates = wire(mapper.updates(&event(seq, kind)));
    assert_eq!(updates.len(), 1, "{updates:?}");
    updates.remove(0)
}

fn requested(call_id: &str, tool: &str, arguments: Value) -> EventKind {
    EventKind::ToolRequested { call_id: call_id.into(), tool: tool.into(), arguments }
}

/// The texts of an update's tool call content blocks.
fn texts(update: &Value) -> Vec<String> {
    update["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["content"]["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn model_text_streams_as_agent_message_chunks_and_role_drafts_as_thoughts() {
    let mut m = Mapper::new(Path::new("/w"));
    let chunk = one(&mut m, 1, EventKind::StageChunk { stage: "planner".into(), text: "Hel".into() });
    assert_eq!(chunk, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}}));
    let draft = one(&mut m, 2, EventKind::StageChunk { stage: "drafter_a".into(), text: "idea".into() });
    assert_eq!(draft["sessionUpdate"], "agent_thought_chunk");
    // The next model call's text starts a paragraph of its own.
    m.updates(&event(3, EventKind::StageStarted { stage: "planner".into(), round: 2 }));
    let next = one(&mut m, 4, EventKind::StageChunk { stage: "planner".into(), text: "Done.".into() });
    assert_eq!(next["content"]["text"], "\n\nDone.");
}

#[test]
fn an_allowed_call_is_pending_then_in_progress_with_its_rule_then_completed_with_its_output() {
    let mut m = Mapper::new(Path::new("/w"));
    let call = one(&mut m, 1, requested("call_1", "read", json!({"path": "src/a.rs"})));
    assert_eq!(call["sessionUpdate"], "tool_call");
    assert_eq!(call["toolCallId"], "run_a:call_1");
    assert_eq!(call["title"], "read src/a.rs");
    assert_eq!(call["kind"], "read");
    // `pending` is the protocol's default, left out of the message.
    assert!(call["status"].is_null() || call["status"] == "pending", "{call}");
    assert_eq!(call["locations"][0]["path"], "/w/src/a.rs");
    assert_eq!(call["rawInput"], json!({"path": "src/a.rs"}));
    let started = one(
        &mut m,
        2,
        EventKind::ToolStarted { call_id: "call_1".into(), tool: "read".into(), allowed_by: "default:low".into() },
    );
    assert_eq!(started["sessionUpdate"], "tool_call_update");
    assert_eq!(started["status"], "in_progress");
    assert_eq!(texts(&started), vec!["allowed by `default:low`"]);
    let done = one(
        &mut m,
        3,
        EventKind::ToolCompleted {
            call_id: "call_1".into(),
            tool: "read".into(),
            duration_ms: 3,
            output_chars: 5,
            output: "fn a".into(),
            hook_output: String::new(),
        },
    );
    assert_eq!(done["status"], "completed");
    assert_eq!(texts(&done), vec!["allowed by `default:low`".to_string(), "done in 3 ms\nfn a".to_string()]);
}

#[test]
fn a_denied_call_fails_naming_the_rule_and_reason() {
    let mut m = Mapper::new(Path::new("/w"));
    m.updates(&event(1, requested("c", "read", json!({"path": ".env"}))));
    let denied = one(
        &mut m,
        2,
        EventKind::ToolDenied {
            call_id: "c".into(),
            tool: "read".into(),
            rule: "secret_path".into(),
            risk: 1.0,
            reason: "a secret file".into(),
        },
    );
    assert_eq!(denied["status"], "failed");
    assert_eq!(texts(&denied), vec!["denied by `secret_path`: a secret file"]);
}

#[test]
fn a_proposed_change_is_acp_diff_content_and_a_rejection_fails_the_call() {
    let mut m = Mapper::new(Path::new("/w"));
    m.updates(&event(1, requested("c", "edit", json!({"path": "note.txt", "old": "old", "new": "new"}))));
    let diff = "--- a/note.txt\n+++ b/note.txt\n@@ -1,2 +1,2 @@\n keep\n-old text\n+new text\n";
    let proposed =
        one(&mut m, 2, EventKind::PatchProposed { call_id: "c".into(), path: "note.txt".into(), diff: diff.into() });
    assert_eq!(
        proposed["content"][0],
        json!({"type": "diff", "path": "/w/note.txt", "oldText": "keep\nold text\n", "newText": "keep\nnew text\n"})
    );
    let rejected = one(
        &mut m,
        3,
        EventKind::ToolRejected {
            approval_id: "apr_1".into(),
            call_id: "c".into(),
            reason: "rejected by the owner in the editor".into(),
        },
    );
    assert_eq!(rejected["status"], "failed");
    // The diff stays shown beside why the call did not run.
    assert_eq!(rejected["content"][0]["type"], "diff");
    assert_eq!(texts(&rejected), vec!["rejected: rejected by the owner in the editor"]);
}

#[test]
fn hunks_of_a_diff_become_old_and_new_texts_joined_by_an_elision() {
    let diff = "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-a\n+b\n@@ -9,2 +9,3 @@\n x\n+y\n z\n\\ No newline at end of file\n";
    assert_eq!(diff_texts(diff), Some(("a\n⋮\nx\nz\n".to_string(), "b\n⋮\nx\ny\nz\n".to_string())));
    assert_eq!(diff_texts("no hunks here"), None);
}

#[test]
fn an_answer_that_was_not_streamed_is_sent_when_the_run_completes_and_a_limit_is_named() {
    let completed = |text: &str, stop_reason| EventKind::RunCompleted {
        final_text: text.into(),
        stop_reason,
        rounds: 1,
        tool_calls: 0,
        usage: Usage::default(),
        duration_ms: 1,
        limit: String::new(),
    };
    let mut m = Mapper::new(Path::new("/w"));
    m.updates(&event(1, EventKind::StageChunk { stage: "planner".into(), text: "Done.".into() }));
    assert!(m.updates(&event(2, completed("Done.", StopReason::Answered))).is_empty());
    let mut m = Mapper::new(Path::new("/w"));
    let updates = wire(m.updates(&event(1, completed("Partial.", StopReason::MaxRounds))));
    assert_eq!(updates[0]["content"]["text"], "Partial.");
    assert_eq!(updates[1]["sessionUpdate"], "agent_thought_chunk");
    assert!(updates[1]["content"]["text"].as_str().unwrap().contains("max_rounds"));
    let failed = wire(m.updates(&event(
        2,
        EventKind::RunFailed { error: "no key".into(), class: ErrorClass::MissingApiKey, rounds: 0, duration_ms: 1 },
    )));
    assert!(failed[0]["content"]["text"].as_str().unwrap().contains("missing_api_key"));
}

#[test]
fn a_run_s_end_is_the_prompt_s_stop_reason() {
    use steward_store::RunStatus;
    assert_eq!(stop_reason(RunStatus::Completed, Some(StopReason::Answered)), Some(acp::StopReason::EndTurn));
    assert_eq!(stop_reason(RunStatus::Cancelled, Some(StopReason::Cancelled)), Some(acp::StopReason::Cancelled));
    assert_eq!(stop_reason(RunStatus::Completed, Some(StopReason::MaxRounds)), Some(acp::StopReason::MaxTurnRequests));
    assert_eq!(stop_reason(RunStatus::Completed, Some(StopReason::Stuck)), Some(acp::StopReason::Refusal));
    assert_eq!(stop_reason(RunStatus::Failed, Some(StopReason::Failed)), None);
}

#[test]
fn tool_call_ids_differ_between_runs_of_a_session() {
    assert_ne!(tool_call_id("run_a", "call_1_1"), tool_call_id("run_b", "call_1_1"));
}
