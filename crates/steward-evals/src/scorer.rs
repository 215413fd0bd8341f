//! Rule-based scoring (SPEC E): a run's [`RunOutcome`] against a case's [`Expect`]. Never
//! model-graded; every failed rule is named.

use serde::Serialize;
use steward_policy::Redactor;

use crate::case::Expect;
use crate::leak::find_leaks;
use crate::outcome::RunOutcome;

/// One failed check: its name (`status`, `final_contains`, `events`, `forbidden_events`,
/// `no_secret_leak`, `patch_applied`, `error_class`, `stop_reason`, `rounds`, `tools_used`,
/// `tool_output_contains`, `tools_not_used`, `rollback`, `files`, `model_saw`, `facts`, `harness`)
/// and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckFailure {
    /// The check's name.
    pub check: String,
    /// What was expected and what happened (never a secret: texts are Steward's redacted ones).
    pub detail: String,
}

fn fail(out: &mut Vec<CheckFailure>, check: &str, detail: String) {
    out.push(CheckFailure { check: check.to_string(), detail });
}

/// True when an event named in `pattern` (`a` or `a|b|…`) occurred.
fn occurred(pattern: &str, names: &[&str]) -> bool {
    pattern.split('|').map(str::trim).any(|p| names.contains(&p))
}

/// Checks `outcome` against `expect`; empty when every check passes. `redactor` is the run's
/// redactor (it knows the environment's secret values) for the leak check.
pub fn score(expect: &Expect, outcome: &RunOutcome, redactor: &Redactor) -> Vec<CheckFailure> {
    let mut out = Vec::new();
    if let Some(error) = &outcome.harness_error {
        fail(&mut out, "harness", error.clone());
    }
    let Some(summary) = &outcome.summary else {
        if outcome.harness_error.is_none() {
            fail(&mut out, "harness", "the run left no record".into());
        }
        return out;
    };
    let names = outcome.event_names();

    if let Some(status) = expect.status
        && status != summary.status
    {
        fail(&mut out, "status", format!("expected {status:?}, got {:?}", summary.status).to_lowercase());
    }
    if let Some(reason) = &expect.stop_reason
        && summary.stop_reason.as_deref() != Some(reason.as_str())
    {
        fail(
            &mut out,
            "stop_reason",
            format!("expected {reason}, got {}", summary.stop_reason.as_deref().unwrap_or("none")),
        );
    }
    let final_text = summary.final_text.as_deref().unwrap_or("");
    for needle in &expect.final_contains {
        if !final_text.contains(needle.as_str()) {
            let shown = steward_protocol::truncate_chars(final_text, 200);
            fail(&mut out, "final_contains", format!("final text lacks {needle:?}: {shown:?}"));
        }
    }
    let missing: Vec<&str> =
        expect.events.iter().map(String::as_str).filter(|pattern| !occurred(pattern, &names)).collect();
    if !missing.is_empty() {
        fail(&mut out, "events", format!("missing {}", missing.join(", ")));
    }
    let present: Vec<&str> =
        expect.forbidden_events.iter().map(String::as_str).filter(|pattern| occurred(pattern, &names)).collect();
    if !present.is_empty() {
        fail(&mut out, "forbidden_events", format!("occurred: {}", present.join(", ")));
    }
    if expect.no_secret_leak {
        let leaks = find_leaks(outcome, redactor);
        if !leaks.is_empty() {
            let more = if leaks.len() > 5 { format!(" (and {} more)", leaks.len() - 5) } else { String::new() };
            fail(&mut out, "no_secret_leak", format!("{}{more}", leaks[..leaks.len().min(5)].join("; ")));
        }
    }
    if let Some(applied) = expect.patch_applied {
        let was = names.contains(&"patch_applied");
        if applied != was {
            let what = if applied { "expected a patch_applied event, none occurred" } else { "a patch was applied" };
            fail(&mut out, "patch_applied", what.into());
        }
    }
    if let Some(class) = &expect.error_class
        && summary.error_class.as_deref() != Some(class.as_str())
    {
        fail(
            &mut out,
            "error_class",
            format!("expected {class}, got {}", summary.error_class.as_deref().unwrap_or("none")),
        );
    }
    let below = expect.min_rounds.is_some_and(|min| summary.rounds < min);
    let above = expect.max_rounds.is_some_and(|max| summary.rounds > max);
    if below || above {
        let min = expect.min_rounds.map_or("-".to_string(), |n| n.to_string());
        let max = expect.max_rounds.map_or("-".to_string(), |n| n.to_string());
        fail(&mut out, "rounds", format!("{} rounds, expected within [{min}, {max}]", summary.rounds));
    }
    let started = outcome.tools_started();
    let unused: Vec<&str> =
        expect.tools_used.iter().map(String::as_str).filter(|t| !started.iter().any(|s| s == t)).collect();
    if !unused.is_empty() {
        fail(&mut out, "tools_used", format!("never ran: {}", unused.join(", ")));
    }
    let used: Vec<&str> =
        expect.tools_not_used.iter().map(String::as_str).filter(|t| started.iter().any(|s| s == t)).collect();
    if !used.is_empty() {
        fail(&mut out, "tools_not_used", format!("ran: {}", used.join(", ")));
    }
    let outputs: Vec<&str> = outcome
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            steward_protocol::EventKind::ToolCompleted { output, .. } => Some(output.as_str()),
            _ => None,
        })
        .collect();
    let missing: Vec<&str> = expect
        .tool_output_contains
        .iter()
        .map(String::as_str)
        .filter(|want| !outputs.iter().any(|o| o.contains(want)))
        .collect();
    if !missing.is_empty() {
        fail(&mut out, "tool_output_contains", format!("no completed call's output contains: {}", missing.join(", ")));
    }
    if let Some(rollback) = expect.rollback {
        let applied = names.iter().filter(|n| **n == "patch_applied").count();
        let stored = outcome.rollback_tokens.iter().filter(|t| !t.is_empty()).count();
        match rollback {
            true if applied == 0 => fail(&mut out, "rollback", "no change was applied".into()),
            true if stored < applied => {
                fail(&mut out, "rollback", format!("{applied} changes applied, {stored} rollback records stored"))
            }
            false if stored > 0 => fail(&mut out, "rollback", format!("{stored} rollback records stored")),
            _ => {}
        }
    }
    if !expect.model_saw.is_empty() {
        match outcome.model_inputs.first() {
            None => fail(
                &mut out,
                "model_saw",
                "no model request was recorded (only the fake provider records them)".into(),
            ),
            Some(first) => {
                let unseen: Vec<&str> =
                    expect.model_saw.iter().map(String::as_str).filter(|n| !first.contains(n)).collect();
                if !unseen.is_empty() {
                    fail(&mut out, "model_saw", format!("the planner's first request lacks {}", unseen.join(", ")));
                }
            }
        }
    }
    if let Some(facts) = &expect.facts
        && *facts != outcome.facts
    {
        fail(&mut out, "facts", format!("expected {facts:?}, got {:?}", outcome.facts));
    }
    for (path, want) in &expect.files {
        match outcome.files.get(path).cloned().flatten() {
            Some(got) if got == *want => {}
            Some(got) => fail(&mut out, "files", format!("{path}: expected {want:?}, got {got:?}")),
            None => fail(&mut out, "files", format!("{path}: missing or not text")),
        }
    }
    out
}

#[cfg(test)]
#[path = "scorer_tests.rs"]
mod tests;
