//! Judging and repairing a planner's reply before the loop acts on it (SPEC P8):
//! - a reply without calls is an answer only when [`steward_provider::answer::judge_answer`]
//!   says so (an echo of the call just made left out, a restated result unwrapped, never a
//!   complete call); otherwise it is unusable, and a reply that ran away (cut by the output
//!   limit, or stopped for repeating itself) is classed `runaway_reply`;
//! - a call of a tool that takes no arguments runs with the extra keys a model gave it ignored;
//! - every such repair is an audit record (outcome `repaired`), as are calls read from text;
//!   the records go to the run's store through its redactor ([`Audit`]).

use steward_protocol::{
    AuditEntry, AuditOutcome, ChatResponse, ErrorClass, EventKind, FinishReason, ToolCall, ToolCallRepair, ToolSpec,
};
use steward_provider::answer::{Echo, Judged, judge_answer};
use steward_store::StoreError;

use steward_policy::Redactor;
use steward_store::Store;

use crate::events::EventEmitter;

/// What a reply without calls is.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    /// An answer: its text, and the repeats of the previous round's calls left out of it.
    Answer { text: String, echoes: Vec<Echo>, restated: bool },
    /// Not usable: the class it fails the run with if it happens again, and why.
    Unusable { class: ErrorClass, why: String },
}

/// The `stage_completed` event of a model call of `stage` that returned `reply` after
/// `duration_ms`, proposing `tool_calls` calls.
pub(crate) fn stage_completed(
    stage: &str,
    round: u32,
    duration_ms: u64,
    reply: &ChatResponse,
    tool_calls: u32,
) -> steward_protocol::EventKind {
    steward_protocol::EventKind::StageCompleted {
        stage: stage.to_string(),
        round,
        duration_ms,
        usage: reply.usage,
        tool_calls,
        finish_reason: reply.finish_reason.as_ref().map(|f| f.as_str().to_string()).unwrap_or_default(),
        response_model: reply.model.clone(),
        constrained: reply.constrained,
    }
}

/// How a reply was stopped before its natural end, in words; `None` when it ended on its own.
pub(crate) fn stopped(reply: &ChatResponse) -> Option<&'static str> {
    match &reply.finish_reason {
        Some(FinishReason::Length) => Some("it reached the output limit"),
        Some(FinishReason::Other(reason)) if reason == steward_provider::repetition::REPETITION => {
            Some("it repeated the same text over and over and was stopped")
        }
        _ => None,
    }
}

/// Judges the text of `reply`, which proposed no calls; `previous` are the calls of the round
/// before, `tools` those this request offered.
pub(crate) fn judge(reply: &ChatResponse, previous: &[ToolCall], tools: &[ToolSpec]) -> Verdict {
    match judge_answer(&reply.text, previous, tools) {
        Judged::Answer { text, echoes, restated } => Verdict::Answer { text, echoes, restated },
        Judged::NotAnswer(why) => match stopped(reply) {
            Some(how) => Verdict::Unusable { class: ErrorClass::RunawayReply, why: format!("{how}: {why}") },
            None => Verdict::Unusable { class: ErrorClass::UnparsedToolCall, why },
        },
    }
}

/// When `reply` was stopped for repeating itself and its calls only repeat calls of the
/// previous round (`previous`), why it is unusable: the model was looping on the call it had
/// just made instead of answering, and running it again would only repeat it.
pub(crate) fn echo_loop(reply: &ChatResponse, previous: &[ToolCall]) -> Option<String> {
    let repeated = matches!(&reply.finish_reason,
        Some(FinishReason::Other(reason)) if reason == steward_provider::repetition::REPETITION);
    let echoes = !reply.tool_calls.is_empty()
        && reply.invalid_tool_calls.is_empty()
        && reply.tool_calls.iter().all(|c| previous.iter().any(|p| p.name == c.name && p.arguments == c.arguments));
    (repeated && echoes).then(|| {
        let names: Vec<&str> = reply.tool_calls.iter().map(|c| c.name.as_str()).collect();
        format!(
            "it repeated the call just made (`{}`) over and over and was stopped; that call's result is above",
            names.join("`, `")
        )
    })
}

/// The run's error for an unusable reply of class `class`.
pub(crate) fn unusable_error(class: ErrorClass, why: &str) -> String {
    match class {
        ErrorClass::RunawayReply => format!("the planner's reply ran away and gave neither calls nor an answer: {why}"),
        _ => format!("the planner's reply is, or ends with, tool-call markup that could not be used: {why}"),
    }
}

/// What the planner is told when its reply could not be used.
pub(crate) fn unusable_feedback(class: ErrorClass, why: &str) -> String {
    let what = match class {
        ErrorClass::RunawayReply => format!("it ran away ({why}); only its start is kept above"),
        _ => format!("it is, or holds, tool-call markup that could not be used ({why})"),
    };
    format!(
        "Your last message was not accepted as an answer: {what}. Nothing was run. To call a tool, reply with \
         only the call, once: one JSON object per call, {{\"name\": \"<tool>\", \"arguments\": {{...}}}}, using \
         only the tools offered, with values of the types their schema gives (numbers and booleans unquoted). \
         To answer, reply in plain text without any tool-call markup."
    )
}

/// Gives the calls `reply` read from text ids unique in the run: the provider numbers them
/// `call_recovered_1`, `call_recovered_2`, … in every reply, which round `round` turns into
/// `call_recovered_{round}_1`, … (the repairs follow), so that no two calls of a run's
/// conversation, events or audit share an id.
pub(crate) fn number_recovered_calls(reply: &mut ChatResponse, round: u32) {
    const PREFIX: &str = "call_recovered_";
    let renumber = |id: &mut String| {
        if let Some(n) = id.strip_prefix(PREFIX).filter(|n| n.bytes().all(|b| b.is_ascii_digit())) {
            *id = format!("{PREFIX}{round}_{n}");
        }
    };
    reply.tool_calls.iter_mut().for_each(|c| renumber(&mut c.id));
    reply.repairs.iter_mut().for_each(|r| renumber(&mut r.call_id));
}

/// True when `schema` takes no arguments at all: an object schema without properties that
/// allows no others (`additionalProperties: false`, no `patternProperties`).
fn takes_no_arguments(schema: &serde_json::Value) -> bool {
    let no_properties = schema.get("properties").is_none_or(|p| p.as_object().is_some_and(|o| o.is_empty()));
    no_properties
        && schema.get("additionalProperties") == Some(&serde_json::Value::Bool(false))
        && schema.get("patternProperties").is_none()
}

/// Clears the arguments of calls to tools that take none (see [`takes_no_arguments`]) and
/// name no path: a small model often copies another tool's `path` or `recursive` into them.
/// Returns each repaired call as the model wrote it, with the keys ignored. Calls of any
/// other tool are left for the gate to judge as they are.
pub(crate) fn ignore_extra_arguments(calls: &mut [ToolCall], tools: &[ToolSpec]) -> Vec<(ToolCall, Vec<String>)> {
    let mut repaired = Vec::new();
    for call in calls.iter_mut() {
        let Some(spec) = tools.iter().find(|t| t.name == call.name) else { continue };
        if !spec.path_inputs.is_empty() || !takes_no_arguments(&spec.input_schema) {
            continue;
        }
        let Some(keys) = call.arguments.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()) else { continue };
        if keys.is_empty() {
            continue;
        }
        let written = call.clone();
        call.arguments = serde_json::json!({});
        repaired.push((written, keys));
    }
    repaired
}

/// Where a run's audit records go: its store, through its redactor.
pub(crate) struct Audit<'a> {
    /// The run's store.
    pub store: &'a dyn Store,
    /// The run's redactor.
    pub redactor: &'a Redactor,
    /// The run.
    pub run_id: &'a str,
}

/// Queues the audit record of a reply the loop judged itself (`agent` steward, no latency,
/// sandbox, approval or rollback): `input` as given, `detail` redacted.
async fn queue(
    rt: &Audit<'_>,
    call: &ToolCall,
    input: serde_json::Value,
    policy: &str,
    (risk, outcome): (f64, AuditOutcome),
    detail: &str,
) -> Result<(), StoreError> {
    rt.store
        .queue_audit(AuditEntry {
            agent: "steward".into(),
            run_id: rt.run_id.to_string(),
            call_id: call.id.clone(),
            action: call.name.clone(),
            input,
            policy: policy.into(),
            risk,
            outcome,
            latency_ms: 0,
            sandbox: String::new(),
            approval_id: String::new(),
            rollback_token: String::new(),
            detail: rt.redactor.redact(detail),
        })
        .await
}

/// An audit record of a repair (policy `policy`, outcome `repaired`) of `call`.
async fn audit_repair(rt: &Audit<'_>, call: &ToolCall, policy: &str, detail: &str) -> Result<(), StoreError> {
    let input = rt.redactor.redact_value(&call.arguments);
    queue(rt, call, input, policy, (0.0, AuditOutcome::Repaired), detail).await
}

/// Audits a call recovered from text: the format it was read from and the values coerced
/// (policy `text_recovery`, outcome `repaired`).
pub(crate) async fn record_repair(rt: &Audit<'_>, call: &ToolCall, repair: &ToolCallRepair) -> Result<(), StoreError> {
    let mut detail = match repair.format.as_str() {
        "" => "read from text".to_string(),
        format => format!("read from text written in the {format} format"),
    };
    if !repair.detail.is_empty() {
        detail.push_str("; values coerced to the schema's types: ");
        detail.push_str(&repair.detail);
    }
    audit_repair(rt, call, "text_recovery", &detail).await
}

/// Audits an answer whose start repeated a call of the previous round (policy
/// `text_recovery`, outcome `repaired`): the repeat was left out and not run again.
pub(crate) async fn record_echo(rt: &Audit<'_>, echo: &Echo, restated: bool) -> Result<(), StoreError> {
    let call = ToolCall { id: echo.call_id.clone(), name: echo.name.clone(), arguments: echo.arguments.clone() };
    let mut detail = format!(
        "the answer began with a repeat of the call just made, written in the {} format; the repeat was left out \
         and not run again, and the text after it is the answer",
        echo.format
    );
    if restated {
        detail.push_str(" (unwrapped from its restatement of the result)");
    }
    audit_repair(rt, &call, "text_recovery", &detail).await
}

/// Audits a call of a tool that takes no arguments whose extra keys were ignored (policy
/// `ignored_arguments`, outcome `repaired`; the input is the arguments as the model wrote
/// them).
pub(crate) async fn record_ignored(rt: &Audit<'_>, written: &ToolCall, keys: &[String]) -> Result<(), StoreError> {
    let detail = format!("`{}` takes no arguments; `{}` ignored", written.name, keys.join("`, `"));
    audit_repair(rt, written, "ignored_arguments", &detail).await
}

/// Audits and publishes a call that could not be used (policy `invalid_tool_call`, outcome
/// `blocked`, a `tool_denied` event).
pub(crate) async fn record_invalid(
    rt: &Audit<'_>,
    events: &EventEmitter,
    call: &ToolCall,
    error: &str,
) -> Result<(), StoreError> {
    queue(rt, call, serde_json::json!({}), "invalid_tool_call", (1.0, AuditOutcome::Blocked), error).await?;
    events
        .emit(EventKind::ToolDenied {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            rule: "invalid_tool_call".into(),
            risk: 1.0,
            reason: error.to_string(),
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use steward_protocol::RiskLevel;

    fn spec(name: &str, schema: serde_json::Value, path_inputs: &[&str]) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: schema,
            risk: RiskLevel::Safe,
            writes: false,
            path_inputs: path_inputs.iter().map(|p| p.to_string()).collect(),
            untrusted_output: false,
        }
    }

    fn tools() -> Vec<ToolSpec> {
        let none = json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false});
        let list = json!({"type": "object", "properties": {"path": {"type": ["string", "null"]}},
            "additionalProperties": false});
        vec![
            spec("git_status", none.clone(), &[]),
            spec("list", list, &["path"]),
            spec("open_schema", json!({"type": "object"}), &[]),
            spec("named_path", none, &["path"]),
        ]
    }

    fn reply(text: &str, finish: FinishReason) -> ChatResponse {
        ChatResponse { text: text.into(), finish_reason: Some(finish), ..Default::default() }
    }

    #[test]
    fn a_no_argument_tool_called_with_list_arguments_runs_with_them_ignored() {
        let mut calls = vec![
            ToolCall { id: "a".into(), name: "git_status".into(), arguments: json!({"path": ".", "recursive": true}) },
            ToolCall { id: "b".into(), name: "list".into(), arguments: json!({"path": ".", "bogus": 1}) },
            ToolCall { id: "c".into(), name: "open_schema".into(), arguments: json!({"x": 1}) },
            ToolCall { id: "d".into(), name: "named_path".into(), arguments: json!({"path": "/etc"}) },
            ToolCall { id: "e".into(), name: "git_status".into(), arguments: json!({}) },
        ];
        let repaired = ignore_extra_arguments(&mut calls, &tools());
        assert_eq!(repaired.len(), 1);
        assert_eq!(repaired[0].0.arguments, json!({"path": ".", "recursive": true}));
        assert_eq!(repaired[0].1, ["path", "recursive"]);
        assert_eq!(calls[0].arguments, json!({}));
        assert_eq!(calls[1].arguments, json!({"path": ".", "bogus": 1}), "a tool taking a path is never repaired");
        assert_eq!(calls[2].arguments, json!({"x": 1}), "a schema open to any key is not a no-argument tool");
        assert_eq!(calls[3].arguments, json!({"path": "/etc"}), "a tool naming a path input is never repaired");
    }

    #[test]
    fn a_reply_cut_off_or_repeating_inside_markup_is_a_runaway_and_plain_markup_is_unparsed() {
        let cut = reply("{\"name\": \"list\", \"arguments\": {\"path\": \"src", FinishReason::Length);
        let Verdict::Unusable { class, why } = judge(&cut, &[], &tools()) else { panic!("an answer") };
        assert_eq!(class, ErrorClass::RunawayReply);
        assert!(why.starts_with("it reached the output limit: "), "{why}");
        let repeated = reply(
            "{\"name\": \"list\", \"arguments\": {\"path\": \"src",
            FinishReason::Other(steward_provider::repetition::REPETITION.into()),
        );
        let Verdict::Unusable { class, why } = judge(&repeated, &[], &tools()) else { panic!("an answer") };
        assert_eq!(class, ErrorClass::RunawayReply);
        assert!(why.contains("repeated the same text"), "{why}");
        let after_prose = reply("Listing.\n{\"name\": \"list\", \"arguments\": {}}", FinishReason::Stop);
        let Verdict::Unusable { class, .. } = judge(&after_prose, &[], &tools()) else { panic!("an answer") };
        assert_eq!(class, ErrorClass::UnparsedToolCall);
    }

    #[test]
    fn recovered_calls_are_numbered_by_round_and_their_repairs_follow() {
        let mut recovered = reply("", FinishReason::ToolCalls);
        recovered.tool_calls = vec![
            ToolCall { id: "call_recovered_1".into(), name: "list".into(), arguments: json!({}) },
            ToolCall { id: "call_9".into(), name: "list".into(), arguments: json!({}) },
        ];
        recovered.repairs =
            vec![ToolCallRepair { call_id: "call_recovered_1".into(), format: "json".into(), detail: String::new() }];
        number_recovered_calls(&mut recovered, 3);
        assert_eq!(recovered.tool_calls[0].id, "call_recovered_3_1");
        assert_eq!(recovered.tool_calls[1].id, "call_9", "a native id is the server's");
        assert_eq!(recovered.repairs[0].call_id, "call_recovered_3_1");
    }

    #[test]
    fn a_reply_stopped_while_repeating_the_call_just_made_is_an_echo_loop() {
        let previous = [ToolCall { id: "c1".into(), name: "create".into(), arguments: json!({"path": "a"}) }];
        let mut looping = reply("", FinishReason::Other(steward_provider::repetition::REPETITION.into()));
        looping.tool_calls = vec![ToolCall { id: "r1".into(), ..previous[0].clone() }];
        assert!(echo_loop(&looping, &previous).is_some_and(|why| why.contains("`create`")));
        let mut ended = looping.clone();
        ended.finish_reason = Some(FinishReason::ToolCalls);
        assert_eq!(echo_loop(&ended, &previous), None, "a plain repeat is for the repeated-call rules");
        looping.tool_calls[0].arguments = json!({"path": "b"});
        assert_eq!(echo_loop(&looping, &previous), None, "a new call runs");
    }

    #[test]
    fn a_repeating_answer_kept_to_its_first_copy_and_an_echoed_call_then_text_are_answers() {
        let repeated =
            reply("The folder holds a.txt.", FinishReason::Other(steward_provider::repetition::REPETITION.into()));
        assert!(matches!(judge(&repeated, &[], &tools()), Verdict::Answer { .. }));
        let previous = [ToolCall { id: "c1".into(), name: "git_status".into(), arguments: json!({}) }];
        let echoed = reply("{\"name\": \"git_status\", \"arguments\": {}}\nNothing changed.", FinishReason::Stop);
        let Verdict::Answer { text, echoes, .. } = judge(&echoed, &previous, &tools()) else { panic!("not answer") };
        assert_eq!(text, "Nothing changed.");
        assert_eq!(echoes[0].call_id, "c1");
    }
}
