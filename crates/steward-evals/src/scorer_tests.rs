//! The scorer on its own: one hand-made run record that passes every check, and for each check
//! a change that makes exactly that check fail.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use steward_policy::Redactor;
use steward_protocol::Event;
use steward_store::RunStatus;

use super::*;
use crate::outcome::{RunOutcome, RunSummary};

fn event(seq: u64, fields: Value) -> Event {
    let mut value = json!({"run_id": "run_1", "seq": seq, "at": "2026-01-02T03:04:05Z"});
    for (k, v) in fields.as_object().unwrap() {
        value[k] = v.clone();
    }
    serde_json::from_value(value).unwrap()
}

fn good_outcome() -> RunOutcome {
    let events = vec![
        event(
            1,
            json!({"event": "run_started", "task": "t", "owner_id": "o", "planner": "model", "provider": "fake", "model": "fake", "workspace": "/ws"}),
        ),
        event(2, json!({"event": "tool_started", "call_id": "c1", "tool": "apply_patch"})),
        event(
            3,
            json!({"event": "patch_applied", "call_id": "c1", "path": "note.txt", "rollback_token": "rb_0123456789abcdef"}),
        ),
        event(4, json!({"event": "stage_chunk", "stage": "planner", "text": "OPENAI_API_KEY=[REDACTED]"})),
        event(
            5,
            json!({"event": "tool_completed", "call_id": "c1", "tool": "apply_patch", "duration_ms": 1, "output_chars": 9, "output": "{\"ok\":37}"}),
        ),
    ];
    RunOutcome {
        summary: Some(RunSummary {
            status: RunStatus::Completed,
            stop_reason: Some("answered".into()),
            final_text: Some("final plan and implementation".into()),
            error_class: None,
            error: None,
            rounds: 2,
            tool_calls: 1,
            input_tokens: 10,
            output_tokens: 5,
        }),
        events,
        artifacts: vec![("audit[0]".into(), json!({"detail": "ok", "rollback_token": "rb_0123456789abcdef"}))],
        rollback_tokens: vec!["rb_0123456789abcdef".into()],
        files: BTreeMap::from([("note.txt".to_string(), Some("new\n".to_string()))]),
        ..RunOutcome::default()
    }
}

fn good_expect() -> Expect {
    Expect {
        status: Some(RunStatus::Completed),
        stop_reason: Some("answered".into()),
        final_contains: vec!["plan".into(), "implementation".into()],
        events: vec!["run_started".into(), "tool_approved|patch_applied".into()],
        forbidden_events: vec!["run_failed".into(), "tool_denied|tool_rejected".into()],
        no_secret_leak: true,
        patch_applied: Some(true),
        error_class: None,
        min_rounds: Some(1),
        max_rounds: Some(2),
        tools_used: vec!["apply_patch".into()],
        tools_not_used: vec!["shell_command".into()],
        tool_output_contains: vec!["\"ok\":37".into()],
        rollback: Some(true),
        files: BTreeMap::from([("note.txt".to_string(), "new\n".to_string())]),
        ..Expect::default()
    }
}

fn summary(o: &mut RunOutcome) -> &mut RunSummary {
    o.summary.as_mut().unwrap()
}

fn failed_checks(expect: &Expect, outcome: &RunOutcome) -> Vec<String> {
    score(expect, outcome, &Redactor::default()).into_iter().map(|f| f.check).collect()
}

#[test]
fn a_matching_run_passes_every_check() {
    assert_eq!(score(&good_expect(), &good_outcome(), &Redactor::default()), Vec::new());
}

#[test]
fn each_check_fails_on_its_own() {
    type Change = Box<dyn Fn(&mut Expect, &mut RunOutcome)>;
    let table: Vec<(&str, Change)> = vec![
        ("status", Box::new(|_, o| summary(o).status = RunStatus::Failed)),
        ("stop_reason", Box::new(|_, o| summary(o).stop_reason = Some("max_rounds".into()))),
        ("final_contains", Box::new(|_, o| summary(o).final_text = Some("a plan".into()))),
        ("events", Box::new(|_, o| o.events.retain(|e| e.kind.name() != "run_started"))),
        ("forbidden_events", Box::new(|e, _| e.forbidden_events.push("stage_chunk".into()))),
        (
            "no_secret_leak",
            Box::new(|_, o| o.artifacts.push(("output:c1.txt".into(), json!("key sk-abcdefghijklmnopqrstuvwx1234")))),
        ),
        ("patch_applied", Box::new(|e, _| e.patch_applied = Some(false))),
        ("error_class", Box::new(|e, _| e.error_class = Some("missing_api_key".into()))),
        ("rounds", Box::new(|_, o| summary(o).rounds = 3)),
        ("rounds", Box::new(|e, _| e.min_rounds = Some(3))),
        ("tools_used", Box::new(|e, _| e.tools_used.push("read".into()))),
        ("tools_not_used", Box::new(|e, _| e.tools_not_used.push("apply_patch".into()))),
        ("tool_output_contains", Box::new(|e, _| e.tool_output_contains.push("37.8".into()))),
        ("rollback", Box::new(|_, o| o.rollback_tokens.clear())),
        ("rollback", Box::new(|e, _| e.rollback = Some(false))),
        ("files", Box::new(|_, o| *o.files.get_mut("note.txt").unwrap() = Some("old\n".into()))),
        ("files", Box::new(|_, o| *o.files.get_mut("note.txt").unwrap() = None)),
    ];
    for (check, change) in table {
        let (mut expect, mut outcome) = (good_expect(), good_outcome());
        change(&mut expect, &mut outcome);
        assert_eq!(failed_checks(&expect, &outcome), vec![check.to_string()], "{check}");
    }
}

#[test]
fn a_run_that_never_started_fails_the_harness_check_only() {
    let outcome = RunOutcome { harness_error: Some("case config: bad".into()), ..RunOutcome::default() };
    assert_eq!(failed_checks(&good_expect(), &outcome), vec!["harness".to_string()]);
}

#[test]
fn alternatives_match_either_event_and_forbid_both() {
    let mut expect = Expect { events: vec!["tool_rejected|patch_applied".into()], ..Expect::default() };
    assert_eq!(failed_checks(&expect, &good_outcome()), Vec::<String>::new());
    expect.forbidden_events = vec!["tool_rejected|patch_applied".into()];
    assert_eq!(failed_checks(&expect, &good_outcome()), vec!["forbidden_events".to_string()]);
}

#[test]
fn leak_check_can_be_turned_off() {
    let mut outcome = good_outcome();
    outcome.artifacts.push(("audit[1]".into(), json!({"detail": "Bearer abcdefghijklmnopqrstuvwxyz0123"})));
    assert_eq!(failed_checks(&good_expect(), &outcome), vec!["no_secret_leak".to_string()]);
    let expect = Expect { no_secret_leak: false, ..good_expect() };
    assert_eq!(failed_checks(&expect, &outcome), Vec::<String>::new());
}

#[test]
fn model_saw_reads_the_first_request_and_facts_compare_exactly() {
    let expect = Expect {
        model_saw: vec!["editor is helix".into()],
        facts: Some(vec!["My editor is helix.".into()]),
        ..Expect::default()
    };
    let mut outcome = good_outcome();
    assert_eq!(failed_checks(&expect, &outcome), ["model_saw", "facts"], "nothing recorded");
    outcome.model_inputs = vec!["task\nMy editor is vim.".into(), "My editor is helix.".into()];
    outcome.facts = vec!["My editor is helix.".into(), "Another.".into()];
    assert_eq!(failed_checks(&expect, &outcome), ["model_saw", "facts"], "only a later request held it");
    outcome.model_inputs.swap(0, 1);
    outcome.facts.pop();
    assert_eq!(failed_checks(&expect, &outcome), Vec::<String>::new());
}
