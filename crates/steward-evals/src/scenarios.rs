//! Built-in fake-provider scenarios, named after the cases of SPEC E and MrEric's golden file
//! (behaviour described in `shared/peers/mreric/README.md`), played by Steward's single
//! planner loop: where MrEric's planner, critic and reviewer each request a tool until they
//! have seen a result, Steward's planner requests the tool once and, after seeing its result,
//! answers "final plan and implementation after SCENARIO".

use serde_json::json;
use steward_protocol::ErrorClass;
use steward_provider::fake::{FakeError, FakeToolCall, Round};

/// The answer of the default scenario.
pub const FINAL: &str = "final plan and implementation";

/// The dummy secret the `secret_leak_check` scenario replies with (MrEric's own value).
pub const DUMMY_SECRET: &str = "OPENAI_API_KEY=sk-phase9dummysecret123456789";

/// Names of the built-in scenarios.
pub const BUILTIN: &[&str] = &[
    "simple_planning",
    "tool_denied",
    "tool_approval_required",
    "tool_approval_rejected",
    "patch_proposal_requires_approval",
    "patch_apply_after_approval",
    "cancelled_run",
    "provider_missing_api_key_error",
    "secret_leak_check",
    "mcp_unavailable_is_safe",
    "mcp_disabled_is_not_called",
    "local_model_failure_continues",
    "use_memory",
    "rag_context_used",
    "rag_failure_does_not_break_run",
];

/// The marker of the workspace file `rag_context_used` adds, which must reach the planner
/// (MrEric's `phase9-rag-context`).
pub const RAG_MARKER: &str = "phase9-rag-context";

/// The workspace files scenario `name` adds to the case's: for the RAG scenarios, a document
/// about the RAG module holding [`RAG_MARKER`], which the task's words find in the search
/// index. Empty for the others.
pub fn files(name: &str) -> Vec<(String, String)> {
    match name {
        "rag_context_used" | "rag_failure_does_not_break_run" => vec![(
            "docs/rag.md".into(),
            format!(
                "# The RAG module\n\nBasic RAG context lookup exists in this workspace; its marker is {RAG_MARKER}.\n"
            ),
        )],
        _ => Vec::new(),
    }
}

/// True when scenario `name` runs with a search index that cannot be used
/// (`rag_failure_does_not_break_run`: the index folder is a regular file).
pub fn breaks_index(name: &str) -> bool {
    name == "rag_failure_does_not_break_run"
}

/// The MCP server `mcp_unavailable_is_safe` configures: required, and started from a program
/// that does not exist, so it is configured but never running.
pub const UNAVAILABLE_MCP_SERVER: &str = "phase9";

/// The configuration scenario `name` needs under the case's own (the case's keys win): for
/// `mcp_unavailable_is_safe`, a `required` MCP server whose command does not exist. Empty for
/// the others.
pub fn config(name: &str) -> toml::Table {
    match name {
        "mcp_unavailable_is_safe" => {
            let text = format!(
                "[mcp_servers.{UNAVAILABLE_MCP_SERVER}]\ncommand = [\"/nonexistent/steward-eval/{UNAVAILABLE_MCP_SERVER}-mcp-server\"]\n\
                 required = true\nstartup_timeout_ms = 5000\n"
            );
            toml::from_str(&text).unwrap_or_default()
        }
        _ => toml::Table::new(),
    }
}

/// True when the scenario calls `shell_command`, which a case must enable (`[shell] enabled`).
pub fn needs_shell(name: &str) -> bool {
    matches!(name, "tool_approval_required" | "tool_approval_rejected")
}

fn text(t: &str) -> Round {
    Round { text: Some(t.to_string()), ..Round::default() }
}

fn call_then_answer(scenario: &str, tool: &str, arguments: serde_json::Value) -> Vec<Round> {
    let call = FakeToolCall { name: tool.to_string(), arguments: Some(arguments), ..FakeToolCall::default() };
    vec![Round { tool_calls: vec![call], ..Round::default() }, text(&format!("{FINAL} after {scenario}"))]
}

/// The rounds of the built-in scenario `name`, or `None` when there is no such scenario.
///
/// - `simple_planning`: answers [`FINAL`].
/// - `tool_denied`: calls the unknown tool `phase9_unknown_tool`.
/// - `tool_approval_required`, `tool_approval_rejected`: `shell_command` `{"command":"pwd"}`.
/// - `patch_proposal_requires_approval`, `patch_apply_after_approval`: `apply_patch` changing
///   `note.txt` from `old\n` to `new from phase9\n`.
/// - `cancelled_run`: answers after 500 ms (a case cancels it earlier).
/// - `provider_missing_api_key_error`: the first planner call fails with `missing_api_key`.
/// - `secret_leak_check`: answers with [`DUMMY_SECRET`] in the text.
/// - `mcp_unavailable_is_safe`: would answer [`FINAL`], but its configuration ([`config`])
///   requires an MCP server that is not running, so the run fails (`mcp_unavailable`) before
///   the planner is asked.
/// - `mcp_disabled_is_not_called`: answers without calling any tool.
/// - `local_model_failure_continues`: the planner answers [`FINAL`]; in roles mode the case
///   fails the local drafter (see [`crate::pipeline`]).
/// - `use_memory`: answers "Your favourite editor is helix." (the case checks that the
///   remembered fact reached the planner's request).
/// - `rag_context_used`: answers "… used rag context" (the case checks that [`RAG_MARKER`]
///   reached the planner's request, from the workspace search index).
/// - `rag_failure_does_not_break_run`: answers "… continued after rag failure" (the index
///   cannot be used; the run goes on without it).
pub fn builtin(name: &str) -> Option<Vec<Round>> {
    let patch = json!({"changes": [{"path": "note.txt", "before": "old\n", "after": "new from phase9\n"}]});
    let rounds = match name {
        "simple_planning" => vec![text(FINAL)],
        "tool_denied" => call_then_answer(name, "phase9_unknown_tool", json!({})),
        "tool_approval_required" | "tool_approval_rejected" => {
            call_then_answer(name, "shell_command", json!({"command": "pwd"}))
        }
        "patch_proposal_requires_approval" | "patch_apply_after_approval" => {
            call_then_answer(name, "apply_patch", patch)
        }
        "cancelled_run" => vec![Round { delay_ms: Some(500), ..text(FINAL) }],
        "provider_missing_api_key_error" => vec![Round {
            error: Some(FakeError {
                class: ErrorClass::MissingApiKey,
                message: "OPENAI_API_KEY is not set".into(),
                status: None,
            }),
            ..Round::default()
        }],
        "secret_leak_check" => vec![text(&format!("{FINAL} with {DUMMY_SECRET}"))],
        "mcp_unavailable_is_safe" | "local_model_failure_continues" => vec![text(FINAL)],
        "use_memory" => vec![text("Your favourite editor is helix.")],
        "mcp_disabled_is_not_called" => vec![text(&format!("{FINAL} without mcp calls"))],
        "rag_context_used" => vec![text(&format!("{FINAL} used rag context"))],
        "rag_failure_does_not_break_run" => vec![text(&format!("{FINAL} continued after rag failure"))],
        _ => return None,
    };
    Some(rounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_scenario_exists_and_unknown_ones_do_not() {
        for name in BUILTIN {
            assert!(builtin(name).is_some_and(|r| !r.is_empty()), "{name}");
        }
        assert!(builtin("no_such_scenario").is_none());
    }

    #[test]
    fn tool_scenarios_call_once_then_answer_naming_the_scenario() {
        let rounds = builtin("patch_apply_after_approval").unwrap();
        assert_eq!(rounds.len(), 2);
        assert_eq!(rounds[0].tool_calls[0].name, "apply_patch");
        assert_eq!(rounds[1].text.as_deref(), Some("final plan and implementation after patch_apply_after_approval"));
    }
}
