//! MrEric's golden eval file (`priv/evals/phase9_golden_cases.json` of SilentMalachite/MrEric,
//! described in `shared/peers/mreric/README.md`), read unchanged and mapped onto [`Case`]s.
//!
//! The file is a JSON array of objects with the fields `name, task, scenario,
//! approval_action, cancel_after_ms, fail_role, requires, expected_status,
//! expected_final_contains, expected_events, forbidden_events, expected_no_secret_leak,
//! expected_approval_required, expected_tool_denied, expected_tool_rejected,
//! expected_patch_applied, expected_error_classification`. Mapping:
//! - `scenario` → the built-in scenario of that name ([`crate::scenarios`]); scenarios calling
//!   `shell_command` get `[shell] enabled = true` (no allow rule, so the call asks);
//! - `approval_action` → [`Approvals::All`]; absent → nobody approves (`none`);
//! - event names: `tool_approval_requested` → `tool_approval_required`,
//!   `tool_approval_resolved` → `tool_approved|tool_rejected`; the others are Steward's too;
//! - `expected_approval_required` / `expected_tool_denied` / `expected_tool_rejected` → the
//!   events `tool_approval_required` / `tool_denied` / `tool_rejected` must occur (or, when
//!   false, must not);
//! - `expected_patch_applied` → `patch_applied` (event) and `note.txt` = `new from phase9\n`
//!   when true, `old\n` when false;
//! - `expected_error_classification` → the run's error class;
//! - `fail_role` and `requires` are kept: the runner skips what Steward cannot do;
//! - the RAG scenarios add their document to the workspace ([`scenarios::files`]);
//!   `rag_context_used` also expects `context_retrieved` and the marker in the planner's
//!   request, `rag_failure_does_not_break_run` expects `context_unavailable`.

use serde::Deserialize;

use crate::case::{ApprovalAction, Approvals, Case, Expect};
use crate::scenarios;

/// One entry of MrEric's file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct GoldenCase {
    name: String,
    task: String,
    scenario: String,
    #[serde(default)]
    approval_action: Option<ApprovalAction>,
    #[serde(default)]
    cancel_after_ms: Option<u64>,
    #[serde(default)]
    fail_role: Option<String>,
    #[serde(default)]
    requires: Vec<String>,
    #[serde(default)]
    expected_status: Option<String>,
    #[serde(default)]
    expected_final_contains: Vec<String>,
    #[serde(default)]
    expected_events: Vec<String>,
    #[serde(default)]
    forbidden_events: Vec<String>,
    #[serde(default)]
    expected_no_secret_leak: Option<bool>,
    #[serde(default)]
    expected_approval_required: Option<bool>,
    #[serde(default)]
    expected_tool_denied: Option<bool>,
    #[serde(default)]
    expected_tool_rejected: Option<bool>,
    #[serde(default)]
    expected_patch_applied: Option<bool>,
    #[serde(default)]
    expected_error_classification: Option<String>,
}

/// True when `value` has the shape of MrEric's file: a JSON array whose first element is an
/// object with `name`, `task` and `scenario`.
pub fn looks_like_golden_file(value: &serde_json::Value) -> bool {
    value
        .as_array()
        .and_then(|a| a.first())
        .and_then(|c| c.as_object())
        .is_some_and(|c| ["name", "task", "scenario"].iter().all(|k| c.contains_key(*k)))
}

/// Steward's name for one of MrEric's event names (`a|b` when either counts).
pub fn map_event(name: &str) -> String {
    match name {
        "tool_approval_requested" => "tool_approval_required".into(),
        "tool_approval_resolved" => "tool_approved|tool_rejected".into(),
        other => other.into(),
    }
}

/// Parses MrEric's file into cases. Errors: not JSON, not the expected shape, an unknown
/// field or a bad value (named by `serde_json`), an unknown `expected_status`.
pub fn parse(text: &str) -> Result<Vec<Case>, GoldenError> {
    let golden: Vec<GoldenCase> = serde_json::from_str(text)?;
    golden.into_iter().map(to_case).collect()
}

/// Why MrEric's golden file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GoldenError {
    /// Not JSON, not the expected shape, an unknown field or a bad value.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A case's `expected_status` is not a run status.
    #[error("case {case}: unknown expected_status `{status}`")]
    UnknownStatus {
        /// The case's name.
        case: String,
        /// The value given.
        status: String,
    },
}

fn to_case(g: GoldenCase) -> Result<Case, GoldenError> {
    let status = match g.expected_status.as_deref() {
        None => None,
        Some(s) => Some(
            serde_json::from_value(serde_json::Value::String(s.to_string()))
                .map_err(|_| GoldenError::UnknownStatus { case: g.name.clone(), status: s.to_string() })?,
        ),
    };
    let mut expect = Expect {
        status,
        final_contains: g.expected_final_contains,
        events: g.expected_events.iter().map(|e| map_event(e)).collect(),
        forbidden_events: g.forbidden_events.iter().map(|e| map_event(e)).collect(),
        no_secret_leak: g.expected_no_secret_leak.unwrap_or(true),
        patch_applied: g.expected_patch_applied,
        error_class: g.expected_error_classification,
        ..Expect::default()
    };
    for (flag, event) in [
        (g.expected_approval_required, "tool_approval_required"),
        (g.expected_tool_denied, "tool_denied"),
        (g.expected_tool_rejected, "tool_rejected"),
    ] {
        match flag {
            Some(true) => expect.events.push(event.into()),
            Some(false) => expect.forbidden_events.push(event.into()),
            None => {}
        }
    }
    if let Some(applied) = g.expected_patch_applied {
        let note = if applied { "new from phase9\n" } else { "old\n" };
        expect.files.insert("note.txt".into(), note.into());
    }
    // The RAG scenarios: a document for the index to find, and what shows it was used (the
    // marker reached the planner) or that its failure was recorded.
    match g.scenario.as_str() {
        "rag_context_used" => {
            expect.model_saw.push(scenarios::RAG_MARKER.into());
            expect.events.push("context_retrieved".into());
        }
        "rag_failure_does_not_break_run" => {
            expect.events.push("context_unavailable".into());
            expect.forbidden_events.push("context_retrieved".into());
        }
        _ => {}
    }
    let mut config = toml::Table::new();
    if scenarios::needs_shell(&g.scenario) {
        let mut shell = toml::Table::new();
        shell.insert("enabled".into(), toml::Value::Boolean(true));
        config.insert("shell".into(), toml::Value::Table(shell));
    }
    Ok(Case {
        name: g.name,
        task: g.task,
        scenario: Some(g.scenario),
        approvals: Approvals::All(g.approval_action.unwrap_or_default()),
        cancel_after_ms: g.cancel_after_ms,
        fail_roles: g.fail_role.into_iter().collect(),
        requires: g.requires,
        config,
        expect,
        ..Case::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_detection_and_event_mapping() {
        assert!(looks_like_golden_file(&serde_json::json!([{"name": "a", "task": "t", "scenario": "s"}])));
        assert!(!looks_like_golden_file(&serde_json::json!({"round": []})));
        assert_eq!(map_event("tool_approval_resolved"), "tool_approved|tool_rejected");
        assert_eq!(map_event("tool_approval_requested"), "tool_approval_required");
        assert_eq!(map_event("run_started"), "run_started");
    }

    #[test]
    fn flags_become_events_files_and_config() {
        let cases = parse(
            r#"[{"name":"p","task":"t","scenario":"tool_approval_rejected","approval_action":"reject",
                 "expected_tool_rejected":true,"expected_patch_applied":false,"expected_tool_denied":false}]"#,
        )
        .unwrap();
        let c = &cases[0];
        assert_eq!(c.approvals, Approvals::All(ApprovalAction::Reject));
        assert!(c.expect.events.contains(&"tool_rejected".to_string()));
        assert!(c.expect.forbidden_events.contains(&"tool_denied".to_string()));
        assert_eq!(c.expect.files["note.txt"], "old\n");
        assert_eq!(c.config["shell"]["enabled"].as_bool(), Some(true));
    }

    #[test]
    fn unknown_fields_and_statuses_are_errors() {
        assert!(parse(r#"[{"name":"a","task":"t","scenario":"s","expected_magic":1}]"#).is_err());
        assert!(parse(r#"[{"name":"a","task":"t","scenario":"s","expected_status":"done"}]"#).is_err());
    }
}
