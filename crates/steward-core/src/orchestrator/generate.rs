//! A call to a tool that does not exist, when `[generated_tools]` is on and the name is a
//! valid generated tool name that nothing else could mean (SPEC G): the generator writes it,
//! and it goes through static checks → compile → input schema → a probe call → the owner's
//! approval showing the full source and what the probe did → versioned registration → offered
//! from the next round. Up to [`MAX_ATTEMPTS`] attempts; each failed check's reason goes back
//! to the generator. Every step is an audit record under the rule `generated_tool`.
//!
//! Nothing the draft does before it is approved reaches the network or sees run data: the
//! probe's input is made from the draft's own schema ([`example_input`]), never the planner's
//! arguments, and its `http_get` is a stub that fetches nothing and records the URLs it was
//! asked for, which the approval shows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};
use steward_generated::{CheckError, HttpMode, StepError, StepLimits, StepMode, checks};
use steward_protocol::{
    ApprovalTtl, AuditOutcome, ChatRequest, Decision, DecisionKind, EventKind, Message, ToolCall, ToolChoice,
};
use steward_store::GeneratedToolRecord;

use super::ask::{Unapproved, ask_owner};
use super::record::AuditRecord;
use super::{CallAbort, CallContext, CallResult};
use crate::generated::{GeneratedTool, Generator, NO_WORKER, host_env};

/// Attempts the generator gets (SPEC G).
pub(crate) const MAX_ATTEMPTS: u32 = 3;

/// Time limit of the probe call (SPEC G: 20 s).
const PROBE_TIME: Duration = Duration::from_secs(20);

/// Seconds the owner has to approve a generated tool (SPEC G: 10 minutes).
const APPROVAL_SECONDS: u64 = 600;

/// Rule name of every record of the pipeline.
const RULE: &str = "generated_tool";

/// Risk recorded for the pipeline's records (a generated tool is at least `medium`).
const RISK: f64 = 0.5;

/// Why an attempt gave no usable draft; its text goes back to the generator (and into the
/// audit record).
#[derive(Debug, thiserror::Error)]
enum Rejection {
    /// The generator's provider failed (its message, redacted).
    #[error("the generator failed: {0}")]
    Generator(String),
    /// The answer holds no `{…}`.
    #[error("the answer holds no JSON object")]
    NoJson,
    /// The object is not a [`Draft`].
    #[error("the answer is not the JSON object asked for: {0}")]
    NotADraft(serde_json::Error),
    /// A static check of the source or of the schema failed.
    #[error(transparent)]
    Check(CheckError),
    /// The source does not compile.
    #[error("compile: {0}")]
    Compile(StepError),
    /// The planner's arguments do not match the draft's input schema.
    #[error("input schema: the planner's arguments {arguments} do not match: {problem}")]
    Arguments {
        /// The planner's arguments.
        arguments: Value,
        /// What does not match.
        problem: String,
    },
    /// The probe could not be set up.
    #[error("probe: {0}")]
    Host(String),
}

/// URLs of the probe named in the approval's reason (the approval's arguments list them all).
const SHOWN_URLS: usize = 10;

/// Host calls of the probe kept for the approval.
const SHOWN_HOST_CALLS: usize = 100;

/// What the probe call did: its input (made from the schema), its result or error, and the
/// URLs its stubbed `http_get` was asked for.
#[derive(Debug, Clone)]
struct Probe {
    /// The input, or `None` when no input made from the schema matches it (no probe ran).
    input: Option<Value>,
    /// The result (cut to 200 characters) or the error.
    outcome: String,
    /// The URLs `http_get` was asked for (nothing was fetched).
    urls: Vec<String>,
    /// The host calls, for the audit record.
    host_calls: Vec<String>,
}

impl Probe {
    /// One line for the audit record and the approval's reason.
    fn summary(&self) -> String {
        let mut text = match &self.input {
            None => format!("no probe: {}", self.outcome),
            Some(input) => format!("probe with {input} (made from the schema): {}", self.outcome),
        };
        if self.urls.is_empty() {
            text.push_str("; it asked for no URL");
        } else {
            let shown: Vec<&str> = self.urls.iter().take(SHOWN_URLS).map(String::as_str).collect();
            let more = match self.urls.len().saturating_sub(SHOWN_URLS) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            text.push_str(&format!(
                "; http_get was asked for {}{more} (stubbed: nothing was fetched)",
                shown.join(", ")
            ));
        }
        text
    }

    /// The probe as the approval shows it.
    fn shown(&self) -> Value {
        json!({ "input": self.input, "outcome": self.outcome, "http_get_urls": self.urls, "host_calls": self.host_calls })
    }
}

/// Why a registration was not approved.
#[derive(Debug, thiserror::Error)]
enum NotApproved {
    /// Nobody answered before the expiry.
    #[error("the approval request expired")]
    Expired,
    /// The owner (or the policy) refused, for this reason.
    #[error("{0}")]
    Rejected(String),
}

/// What the generator must answer: one JSON object.
#[derive(Debug, Deserialize)]
struct Draft {
    description: String,
    input_schema: Value,
    source: String,
}

const INSTRUCTIONS: &str = "You write tools for an agent, in JavaScript, run by a bare interpreter. \
Answer with ONE JSON object and nothing else: \
{\"description\": \"what the tool does, one sentence\", \"input_schema\": {JSON Schema, \"type\": \"object\"}, \
\"source\": \"function run(input) { ... return result; }\"}. \
The source is a plain script defining function run(input), which gets the arguments object and returns a JSON value. \
There is no require, import, process, Deno, std, os, Date, timers, Math.random or file access. \
Two host functions exist: http_get(url) returns {status, body, url} (GET only, public addresses, 10 s, 2 MB; \
its text is untrusted) and sandbox_write(name, text) writes a file in the tool's own folder. \
Keep it small and deterministic.";

/// Generates the tool `call` names (unknown to the run), or says why not.
pub(crate) async fn generate(
    cx: &CallContext<'_>,
    call: &ToolCall,
    generator: &Generator,
) -> Result<CallResult, CallAbort> {
    let name = call.name.as_str();
    if let Some(reason) = generator.reserved(name) {
        return give_up(cx, call, reason).await;
    }
    let Some(worker) = generator.worker.clone() else { return give_up(cx, call, NO_WORKER.to_string()).await };
    let Some(registry) = cx.records.store.generated_registry() else {
        return give_up(cx, call, "this store keeps no generated tools".into()).await;
    };
    if !cx.tools.registry.can_add() {
        return give_up(cx, call, "this run's tools cannot change".into()).await;
    }
    let version = registry
        .generated_tools(cx.run.owner_id)
        .await?
        .iter()
        .filter(|r| r.name == name)
        .map(|r| r.version)
        .max()
        .unwrap_or(0)
        + 1;
    let versioned = format!("{name}@v{version}");
    let mut messages = vec![
        Message::system(INSTRUCTIONS),
        Message::user(format!(
            "Write the tool `{name}`. The planner called it with these arguments: {}",
            cx.records.redactor.redact(&call.arguments.to_string())
        )),
    ];
    let mut last_reason = String::new();
    for attempt in 1..=MAX_ATTEMPTS {
        let text = match ask_generator(cx, generator, &messages, attempt).await? {
            Ok(text) => text,
            Err(reason) => {
                last_reason = reason.to_string();
                break;
            }
        };
        messages.push(Message::assistant(text.clone(), Vec::new()));
        let checked = match check_draft(cx, call, &worker, &text, generator).await {
            Ok(draft) => draft,
            Err(reason) => {
                step(cx, call, AuditOutcome::Failed, format!("{versioned} attempt {attempt}: {reason}")).await?;
                messages.push(Message::user(format!("Rejected: {reason}\nWrite it again, as one JSON object.")));
                last_reason = reason.to_string();
                continue;
            }
        };
        let (draft, probe) = checked;
        let hash = checks::source_hash(&draft.source);
        step(
            cx,
            call,
            AuditOutcome::Completed,
            format!(
                "{versioned} attempt {attempt}: checks, compile and schema passed (source sha256 {hash}); {}",
                probe.summary()
            ),
        )
        .await?;
        let mut record = GeneratedToolRecord {
            owner_id: cx.run.owner_id.to_string(),
            name: name.to_string(),
            version,
            description: draft.description.chars().take(500).collect(),
            input_schema: draft.input_schema,
            source: draft.source,
            source_hash: hash,
            approved_by: None,
            approval_id: None,
            run_id: cx.run.run_id.to_string(),
            created_at: cx.approvals.clock.now(),
            removed_at: None,
            removed_by: None,
        };
        let tool = Arc::new(GeneratedTool::new(record.clone(), generator));
        if generator.require_approval {
            match approve(cx, call, &record, tool.as_ref(), &probe).await? {
                Ok((approval_id, decided_by)) => {
                    record.approved_by = Some(decided_by);
                    record.approval_id = Some(approval_id);
                }
                Err(why) => {
                    let reason = format!("{versioned} was not approved: {why}");
                    return Ok(CallResult { content: format!("Not registered: {reason}."), is_error: true });
                }
            }
        }
        registry.insert_generated_tool(&record).await?;
        let tool = Arc::new(GeneratedTool::new(record.clone(), generator));
        if let Err(e) = cx.tools.registry.add_while_running(tool) {
            return give_up(cx, call, format!("{versioned} was registered but cannot be offered in this run: {e}"))
                .await;
        }
        let by = record.approved_by.clone().unwrap_or_else(|| "nobody (require_approval = false)".into());
        let detail = format!("registered {versioned} (source sha256 {}), approved by {by}", record.source_hash);
        AuditRecord::new(cx, call, RULE, RISK, AuditOutcome::Approved)
            .approval(record.approval_id.as_deref().unwrap_or(""))
            .detail(detail)
            .write(cx)
            .await?;
        return Ok(CallResult {
            content: format!(
                "The tool `{name}` did not exist; it was generated, checked, probed and registered as {versioned}. \
                 It is offered from your next step: call `{name}` again then."
            ),
            is_error: false,
        });
    }
    give_up(cx, call, format!("no usable tool after {MAX_ATTEMPTS} attempts; last reason: {last_reason}")).await
}

/// One audit record of the pipeline.
async fn step(cx: &CallContext<'_>, call: &ToolCall, outcome: AuditOutcome, detail: String) -> Result<(), CallAbort> {
    AuditRecord::new(cx, call, RULE, RISK, outcome).detail(detail).write(cx).await
}

/// Ends the pipeline without a tool: recorded, reported as a failed call.
async fn give_up(cx: &CallContext<'_>, call: &ToolCall, reason: String) -> Result<CallResult, CallAbort> {
    let reason = cx.records.redactor.redact(&reason);
    step(cx, call, AuditOutcome::Failed, format!("{} not generated: {reason}", call.name)).await?;
    cx.records
        .events
        .emit(EventKind::ToolFailed {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            duration_ms: 0,
            error: format!("not generated: {reason}"),
        })
        .await?;
    Ok(CallResult {
        content: format!("The tool `{}` does not exist and was not generated: {reason}", call.name),
        is_error: true,
    })
}

/// One generator call, as a `generator` stage: its text, or why there is none.
async fn ask_generator(
    cx: &CallContext<'_>,
    generator: &Generator,
    messages: &[Message],
    attempt: u32,
) -> Result<Result<String, Rejection>, CallAbort> {
    let events = cx.records.events;
    events.emit(EventKind::StageStarted { stage: "generator".into(), round: attempt }).await?;
    let request = ChatRequest {
        model: generator.model.clone(),
        messages: messages.to_vec(),
        tools: Vec::new(),
        tool_choice: ToolChoice::None,
        max_tokens: None,
        temperature: None,
        constrain: false,
    };
    let started = Instant::now();
    let mut sink = |_: steward_protocol::StreamDelta| {};
    let reply = cx.run.interrupt.run(generator.provider.stream(&request, &mut sink)).await;
    let duration_ms = started.elapsed().as_millis() as u64;
    match reply {
        Err(interrupt) => Err(CallAbort::Interrupted(interrupt)),
        Ok(Err(err)) => {
            let error = cx.records.redactor.redact(&err.message);
            events
                .emit(EventKind::StageFailed {
                    stage: "generator".into(),
                    round: attempt,
                    duration_ms,
                    error: error.clone(),
                    class: err.class,
                })
                .await?;
            Ok(Err(Rejection::Generator(error)))
        }
        Ok(Ok(response)) => {
            events.emit(crate::planner_reply::stage_completed("generator", attempt, duration_ms, &response, 0)).await?;
            Ok(Ok(response.text))
        }
    }
}

/// Parses and checks a draft: static checks, schema, compile, the planner's arguments
/// against the schema, then the probe call with an input made from the schema and a stubbed
/// `http_get`. The draft and what the probe did, or the reason for the generator.
async fn check_draft(
    cx: &CallContext<'_>,
    call: &ToolCall,
    worker: &steward_generated::WorkerCommand,
    text: &str,
    generator: &Generator,
) -> Result<(Draft, Probe), Rejection> {
    let json = json_object(text).ok_or(Rejection::NoJson)?;
    let draft: Draft = serde_json::from_str(json).map_err(Rejection::NotADraft)?;
    checks::check_source(&draft.source).map_err(Rejection::Check)?;
    checks::check_schema(&draft.input_schema).map_err(Rejection::Check)?;
    // The probe writes in a folder of its own, under the same quota, and fetches nothing.
    let host = host_env(
        generator.files_dir.join(".probes").join(cx.run.run_id),
        generator.write_quota,
        HttpMode::Stub,
        cx.tools.context,
    )
    .map_err(Rejection::Host)?;
    let limits = StepLimits { time: PROBE_TIME, ..StepLimits::default() };
    let cancel = &cx.tools.context.cancel;
    let compiled =
        steward_generated::run_step(worker, StepMode::Compile, &draft.source, &Value::Null, limits, &host, cancel)
            .await;
    compiled.outcome.map_err(Rejection::Compile)?;
    checks::check_input(&draft.input_schema, &call.arguments).map_err(|e| match e {
        CheckError::Schema(problem) => Rejection::Arguments { arguments: call.arguments.clone(), problem },
        other => Rejection::Check(other),
    })?;
    let input = example_input(&draft.input_schema);
    if let Err(e) = checks::check_input(&draft.input_schema, &input) {
        let outcome = format!("no input made from the schema matches it ({e})");
        return Ok((draft, Probe { input: None, outcome, urls: Vec::new(), host_calls: Vec::new() }));
    }
    let probe = steward_generated::run_step(worker, StepMode::Call, &draft.source, &input, limits, &host, cancel).await;
    let outcome = match probe.outcome {
        Ok(value) => format!("returned {}", value.to_string().chars().take(200).collect::<String>()),
        Err(e) => format!("failed: {}", e.to_string().chars().take(300).collect::<String>()),
    };
    let redact = |text: &String| cx.records.redactor.redact(text);
    Ok((
        draft,
        Probe {
            input: Some(input),
            outcome: redact(&outcome),
            urls: probe.stubbed_urls.iter().map(redact).collect(),
            host_calls: probe.host_calls.iter().take(SHOWN_HOST_CALLS).map(redact).collect(),
        },
    ))
}

/// An input for the probe made from `schema` alone (so no run data reaches the draft before
/// it is approved): for each property its `const`, `default`, first `examples` or `enum` entry,
/// else a placeholder of its type (`"example"`, `1`, `true`, one item, an object of its
/// properties; `https://example.com/` for a `uri`).
pub(crate) fn example_input(schema: &Value) -> Value {
    example(schema, 0)
}

fn example(schema: &Value, depth: u32) -> Value {
    if depth > 8 {
        return Value::Null;
    }
    for key in ["const", "default"] {
        if let Some(value) = schema.get(key) {
            return value.clone();
        }
    }
    for key in ["examples", "enum"] {
        if let Some(first) = schema.get(key).and_then(Value::as_array).and_then(|v| v.first()) {
            return first.clone();
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema.get(key).and_then(Value::as_array).and_then(|v| v.first()) {
            return example(first, depth + 1);
        }
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).find(|k| *k != "null").unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    match kind {
        "object" => {
            let mut object = serde_json::Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    object.insert(name.clone(), example(property, depth + 1));
                }
            }
            Value::Object(object)
        }
        "array" => {
            let item = schema.get("items").map_or(json!("example"), |items| example(items, depth + 1));
            let count = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1).clamp(1, 16);
            Value::Array(vec![item; count as usize])
        }
        "integer" => json!(number("minimum").map_or(1, |m| m.ceil() as i64)),
        "number" => json!(number("minimum").unwrap_or(1.0)),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => {
            let text = match schema.get("format").and_then(Value::as_str) {
                Some("uri" | "url" | "iri") => "https://example.com/".to_string(),
                Some("email") => "user@example.com".to_string(),
                Some("date") => "2024-01-01".to_string(),
                Some("date-time") => "2024-01-01T00:00:00Z".to_string(),
                _ => "example".to_string(),
            };
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0).min(1000) as usize;
            let padding = min.saturating_sub(text.chars().count());
            json!(format!("{text}{}", "x".repeat(padding)))
        }
    }
}

/// The JSON object in `text`: the whole text, or from its first `{` to its last `}` (a
/// fenced block or a sentence around it).
fn json_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (start < end).then(|| &text[start..=end])
}

/// Asks the owner to approve `record`, showing its full source, schema and hash; expires
/// after [`APPROVAL_SECONDS`]. `Ok(Ok((approval id, who)))` when approved.
async fn approve(
    cx: &CallContext<'_>,
    call: &ToolCall,
    record: &GeneratedToolRecord,
    tool: &GeneratedTool,
    probe: &Probe,
) -> Result<Result<(String, String), NotApproved>, CallAbort> {
    let shown = ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        arguments: json!({
            "register": record.versioned_name(),
            "description": record.description,
            "input_schema": record.input_schema,
            "source_sha256": record.source_hash,
            "source": record.source,
            "probe": probe.shown(),
        }),
    };
    let mut decision = Decision::new(
        DecisionKind::Ask,
        RULE,
        RISK,
        format!(
            "register the generated tool {} (JavaScript below, run without files, clock, randomness or processes; \
             it may use http_get to public addresses and write in its own folder); {}",
            record.versioned_name(),
            probe.summary()
        ),
    );
    decision.approval_ttl = Some(ApprovalTtl { seconds: APPROVAL_SECONDS, source: "generated tools".into() });
    match ask_owner(cx, &shown, tool, &decision, None).await? {
        Ok(approval) => {
            let by = cx.run.owner_id.to_string();
            Ok(Ok((approval.request.id, by)))
        }
        Err(Unapproved::Unanswered(_)) => Ok(Err(NotApproved::Expired)),
        Err(Unapproved::Rejected(rejection)) => Ok(Err(NotApproved::Rejected(rejection.reason()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_object_is_found_inside_fences_or_prose() {
        assert_eq!(json_object("{\"a\":1}"), Some("{\"a\":1}"));
        assert_eq!(json_object("Here:\n```json\n{\"a\":{\"b\":2}}\n```"), Some("{\"a\":{\"b\":2}}"));
        assert_eq!(json_object("no object"), None);
    }

    #[test]
    fn the_probe_input_comes_from_the_schema_alone_and_matches_it() {
        let schema = json!({
            "type": "object",
            "required": ["url", "data", "n", "tags", "mode"],
            "properties": {
                "url": {"type": "string", "format": "uri"},
                "data": {"type": "string", "minLength": 10},
                "n": {"type": "integer", "minimum": 3},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "mode": {"enum": ["fast", "slow"]},
                "nested": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                "maybe": {"type": ["null", "number"]}
            }
        });
        let input = example_input(&schema);
        assert_eq!(input["url"], "https://example.com/");
        assert_eq!(input["data"].as_str().unwrap().len(), 10);
        assert_eq!(input["n"], 3);
        assert_eq!(input["tags"], json!(["example", "example"]));
        assert_eq!(input["mode"], "fast");
        assert_eq!(input["nested"], json!({"ok": true}));
        checks::check_input(&schema, &input).unwrap();
    }
}
