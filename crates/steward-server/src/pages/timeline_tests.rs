//! The timeline from events: order, the approval in place, statuses, and nothing twice.

use std::collections::HashMap;

use chrono::{Duration, Utc};
use serde_json::json;
use steward_protocol::{ApprovalRequest, ApprovalStatus, ErrorClass, Event, EventKind, StopReason, Usage};

use super::{Item, Sources, build};
use crate::runs::RunView;

fn view(status: &str) -> RunView {
    RunView {
        id: "run_1".into(),
        owner_id: "local:ann".into(),
        status: status.into(),
        queue_position: None,
        live: status == "running",
        task: "write a note".into(),
        record: None,
    }
}

fn events(kinds: Vec<EventKind>) -> Vec<Event> {
    let at = Utc::now() - Duration::seconds(30);
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| Event {
            run_id: "run_1".into(),
            seq: i as u64 + 1,
            at: at + Duration::seconds(i as i64),
            kind,
        })
        .collect()
}

fn request(status: ApprovalStatus) -> ApprovalRequest {
    let now = Utc::now();
    ApprovalRequest {
        id: "apr_1".into(),
        run_id: "run_1".into(),
        owner_id: "local:ann".into(),
        call_id: "c1".into(),
        tool: "create".into(),
        arguments: json!({"path": "notes/one.txt", "content": "one\n"}),
        reason: "creating files asks (`ask_write`)".into(),
        rule: "ask_write".into(),
        risk: 0.5,
        preview: "--- a/notes/one.txt\n+++ b/notes/one.txt\n@@ -0,0 +1 @@\n+one\n".into(),
        created_at: now - Duration::seconds(20),
        expires_at: now + Duration::seconds(600),
        status,
    }
}

/// A round that says something and asks to create a file, waiting for an approval.
fn waiting_run() -> Vec<EventKind> {
    vec![
        EventKind::StageStarted { stage: "planner".into(), round: 1 },
        EventKind::StageChunk { stage: "planner".into(), text: "I'll **create** the note.".into() },
        EventKind::StageCompleted {
            stage: "planner".into(),
            round: 1,
            duration_ms: 5,
            usage: Usage { input_tokens: 40, output_tokens: 12 },
            tool_calls: 1,
            finish_reason: String::new(),
            response_model: String::new(),
            constrained: false,
        },
        EventKind::ToolRequested {
            call_id: "c1".into(),
            tool: "create".into(),
            arguments: json!({"path": "notes/one.txt", "content": "one\n"}),
        },
        EventKind::ToolApprovalRequired {
            approval_id: "apr_1".into(),
            call_id: "c1".into(),
            tool: "create".into(),
            arguments: json!({"path": "notes/one.txt", "content": "one\n"}),
            rule: "ask_write".into(),
            risk: 0.5,
            reason: "creating files asks".into(),
            preview: String::new(),
            expires_at: Utc::now() + Duration::seconds(600),
        },
    ]
}

fn kinds(t: &super::Timeline) -> Vec<&'static str> {
    t.entries
        .iter()
        .map(|e| match &e.item {
            Item::Text { .. } => "text",
            Item::Call(_) => "call",
            Item::Note { .. } => "note",
            Item::Answer { .. } => "answer",
        })
        .collect()
}

#[test]
fn a_waiting_approval_is_in_place_and_the_run_is_waiting_for_you() {
    let events = events(waiting_run());
    let approvals = [request(ApprovalStatus::Pending)];
    let v = view("running");
    let t = build(&Sources {
        view: &v,
        events: &events,
        approvals: &approvals,
        decisions: &HashMap::new(),
        now: Utc::now(),
    });
    assert_eq!(kinds(&t), ["text", "call"]);
    assert_eq!((t.status.text.as_str(), t.status.tone, t.waiting), ("waiting for you", "wait", 1));
    let Item::Text { html, .. } = &t.entries[0].item else { panic!() };
    assert!(html.contains("<strong>create</strong>"), "Markdown rendered: {html}");
    let Item::Call(call) = &t.entries[1].item else { panic!() };
    assert_eq!(call.decision, "waiting for you");
    assert!(
        call.short_args.contains(r#"path="notes/one.txt""#) && call.short_args.contains(r#"content="one\n""#),
        "{}",
        call.short_args
    );
    let approval = call.approval.as_ref().expect("the approval sits in its step");
    assert_eq!(approval.state, "pending");
    assert!(approval.reason_html.contains("<code>ask_write</code>"), "{}", approval.reason_html);
    let diff = call.diff.as_ref().expect("the preview is the step's diff");
    assert_eq!(diff.view.summary, "1 file, +1 −0");
    assert_eq!(t.progress.tokens, 52);
    assert_eq!(t.progress.round, 1);
}

#[test]
fn a_decided_approval_says_who_how_and_when_and_the_answer_is_shown_once() {
    let mut kinds_ = waiting_run();
    kinds_.extend([
        EventKind::ToolApproved {
            approval_id: "apr_1".into(),
            call_id: "c1".into(),
            decided_by: "local:ann".into(),
            scope: "once".into(),
        },
        EventKind::ToolStarted { call_id: "c1".into(), tool: "create".into(), allowed_by: String::new() },
        EventKind::ToolCompleted {
            call_id: "c1".into(),
            tool: "create".into(),
            duration_ms: 3,
            output_chars: 7,
            output: "created".into(),
            hook_output: String::new(),
        },
        EventKind::PatchApplied { call_id: "c1".into(), path: "notes/one.txt".into(), rollback_token: "rb".into() },
        EventKind::StageStarted { stage: "planner".into(), round: 2 },
        EventKind::StageChunk { stage: "planner".into(), text: "Done: the note exists.".into() },
        EventKind::RunCompleted {
            final_text: "Done: the note exists.".into(),
            stop_reason: StopReason::Answered,
            rounds: 2,
            tool_calls: 1,
            usage: Usage::default(),
            duration_ms: 1_234,
            limit: String::new(),
        },
    ]);
    let events = events(kinds_);
    let approvals = [request(ApprovalStatus::Approved)];
    let decided = steward_store::ApprovalDecisionRecord {
        approval_id: "apr_1".into(),
        run_id: "run_1".into(),
        decided_by: "local:ann".into(),
        approve: true,
        scope: "once".into(),
        reason: String::new(),
        created_at: Utc::now(),
        call_hash: String::new(),
    };
    let decisions = HashMap::from([("apr_1".to_string(), decided)]);
    let v = view("completed");
    let t =
        build(&Sources { view: &v, events: &events, approvals: &approvals, decisions: &decisions, now: Utc::now() });
    // The last round's text is the answer: shown once, as the answer.
    assert_eq!(kinds(&t), ["text", "call", "answer"]);
    assert_eq!((t.status.text.as_str(), t.status.tone), ("completed", "ok"));
    assert_eq!(t.files_changed, ["notes/one.txt"]);
    assert_eq!((t.progress.elapsed_ms, t.progress.elapsed.as_str()), (1_234, "1 s"));
    assert_eq!(super::elapsed_words(400), "0.4 s");
    assert_eq!(super::elapsed_words(185_000), "3 min 05 s");
    assert!(!t.progress.streaming);
    let Item::Call(call) = &t.entries[1].item else { panic!() };
    assert_eq!((call.decision.as_str(), call.output.as_str(), call.duration_ms), ("completed", "created", Some(3)));
    let approval = call.approval.as_ref().unwrap();
    assert_eq!(
        (approval.state.as_str(), approval.decided.as_str()),
        ("approved", "approved by local:ann (this call only)")
    );
    assert!(!approval.decided_at.is_empty());
}

#[test]
fn refused_calls_failures_and_cancels_have_their_own_end_states() {
    let mut denied = waiting_run();
    denied.truncate(4);
    denied.push(EventKind::ToolDenied {
        call_id: "c1".into(),
        tool: "create".into(),
        rule: "deny_path".into(),
        risk: 1.0,
        reason: "`notes/` is denied".into(),
    });
    denied.push(EventKind::RunCompleted {
        final_text: "I could not write it.".into(),
        stop_reason: StopReason::Answered,
        rounds: 2,
        tool_calls: 1,
        usage: Usage::default(),
        duration_ms: 10,
        limit: String::new(),
    });
    let v = view("completed");
    let events_ = events(denied);
    let t = build(&Sources { view: &v, events: &events_, approvals: &[], decisions: &HashMap::new(), now: Utc::now() });
    assert_eq!(t.status.text, "completed — 1 call refused");
    assert!(t.files_changed.is_empty());

    let failed = events(vec![EventKind::RunFailed {
        error: "no server".into(),
        class: ErrorClass::ProviderUnreachable,
        rounds: 0,
        duration_ms: 5,
    }]);
    let v = view("failed");
    let t = build(&Sources { view: &v, events: &failed, approvals: &[], decisions: &HashMap::new(), now: Utc::now() });
    assert_eq!((t.status.text.as_str(), t.status.tone), ("failed: provider_unreachable", "bad"));

    // Cancelled while the approval waited: it was closed by the cancel, not expired.
    let mut cancelled = waiting_run();
    cancelled.push(EventKind::ToolApprovalExpired { approval_id: "apr_1".into(), call_id: "c1".into() });
    cancelled.push(EventKind::RunCancelled { reason: "cancelled by the owner".into(), rounds: 1, duration_ms: 9 });
    let events_ = events(cancelled);
    let approvals = [request(ApprovalStatus::Expired)];
    let v = view("cancelled");
    let t = build(&Sources {
        view: &v,
        events: &events_,
        approvals: &approvals,
        decisions: &HashMap::new(),
        now: Utc::now(),
    });
    assert_eq!(t.status.text, "cancelled");
    let Item::Call(call) = &t.entries[1].item else { panic!() };
    assert_eq!(call.approval.as_ref().unwrap().state, "closed");
    assert_eq!(call.decision, "not run: the run ended");
}

#[test]
fn an_entry_keeps_its_key_and_changes_its_revision_when_what_it_shows_changes() {
    let v = view("running");
    let pending = [request(ApprovalStatus::Pending)];
    let before = events(waiting_run());
    let a =
        build(&Sources { view: &v, events: &before, approvals: &pending, decisions: &HashMap::new(), now: Utc::now() });
    // A second later, nothing happened: same revisions (the countdown is not part of them).
    let later = Utc::now() + Duration::seconds(1);
    let b = build(&Sources { view: &v, events: &before, approvals: &pending, decisions: &HashMap::new(), now: later });
    let revs = |t: &super::Timeline| t.entries.iter().map(|e| (e.key.clone(), e.rev.clone())).collect::<Vec<_>>();
    assert_eq!(revs(&a), revs(&b));
    let mut kinds_ = waiting_run();
    kinds_.push(EventKind::ToolApproved {
        approval_id: "apr_1".into(),
        call_id: "c1".into(),
        decided_by: "local:ann".into(),
        scope: "once".into(),
    });
    let after = events(kinds_);
    let approved = [request(ApprovalStatus::Approved)];
    let c = build(&Sources { view: &v, events: &after, approvals: &approved, decisions: &HashMap::new(), now: later });
    assert_eq!(a.entries[1].key, c.entries[1].key);
    assert_ne!(a.entries[1].rev, c.entries[1].rev);
    assert_eq!(a.entries[0].rev, c.entries[0].rev);
}
