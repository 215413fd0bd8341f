//! A finished run as OpenTelemetry spans, following the GenAI semantic conventions: one
//! `invoke_agent` span for the run, a `chat` child per model call and an `execute_tool` child
//! per tool call, timed by the run's recorded events and carrying Steward's own attributes
//! (`steward.*`): the gate's decision, its rule and risk, the approval and how long it waited,
//! the sandbox profile, and the audit records of the call with their chain hash.
//!
//! Everything comes from what the run recorded — its events (already redacted) and its audit
//! records — so the spans say exactly what `steward show` and `steward audit list` say.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};
use steward_protocol::{AuditRecord, Event, EventKind, RoleModel, Timestamp};

/// Longest tool argument or result put on a span, in characters.
pub const CONTENT_CHARS: usize = 4096;

/// The run's redactor, applied to tool content before it goes on a span.
pub type Redact<'a> = &'a dyn Fn(&str) -> String;

fn at(time: &Timestamp) -> SystemTime {
    SystemTime::from(*time)
}

fn text(key: &'static str, value: impl Into<String>) -> KeyValue {
    KeyValue::new(key, value.into())
}

fn int(key: &'static str, value: u64) -> KeyValue {
    KeyValue::new(key, i64::try_from(value).unwrap_or(i64::MAX))
}

/// Builds and ends the spans of one run from its `events` (in order) and `audit` records
/// (chain order). With `content`, tool arguments and results go on the tool spans, passed
/// through it and cut to [`CONTENT_CHARS`]. A run without a `run_started` event gives no span.
pub fn record_run<T>(tracer: &T, events: &[Event], audit: &[AuditRecord], content: Option<Redact<'_>>)
where
    T: Tracer,
    T::Span: Send + Sync + 'static,
{
    let Some((first, started)) = events.iter().find_map(|e| match &e.kind {
        EventKind::RunStarted { planner, provider, model, roles, .. } => Some((e, (planner, provider, model, roles))),
        _ => None,
    }) else {
        return;
    };
    let (planner, provider, model, roles) = started;
    let run_id = first.run_id.as_str();
    let mut attributes = vec![
        text("gen_ai.operation.name", "invoke_agent"),
        text("gen_ai.agent.name", "steward"),
        text("gen_ai.agent.id", run_id),
        text("steward.run.id", run_id),
        text("steward.planner", planner.as_str()),
    ];
    attributes.extend(model_attributes(provider, model, "gen_ai.request.model"));
    let run_span = tracer
        .span_builder("invoke_agent steward")
        .with_kind(SpanKind::Internal)
        .with_start_time(at(&first.at))
        .with_attributes(attributes)
        .start_with_context(tracer, &Context::new());
    let cx = Context::new().with_span(run_span);
    let roles: BTreeMap<&str, &RoleModel> = roles.iter().map(|r| (r.role.as_str(), r)).collect();
    let mut calls = Calls::default();
    let mut end = at(&first.at);
    for event in events {
        end = end.max(at(&event.at));
        match &event.kind {
            EventKind::StageCompleted { .. } | EventKind::StageFailed { .. } => {
                chat_span(tracer, &cx, event, run_id, &roles, (provider, model));
            }
            EventKind::RunCompleted { stop_reason, rounds, tool_calls, usage, limit, .. } => {
                let span = cx.span();
                span.set_attribute(text("steward.stop_reason", stop_reason.as_str()));
                span.set_attribute(int("steward.rounds", u64::from(*rounds)));
                span.set_attribute(int("steward.tool_calls", u64::from(*tool_calls)));
                span.set_attribute(int("gen_ai.usage.input_tokens", usage.input_tokens));
                span.set_attribute(int("gen_ai.usage.output_tokens", usage.output_tokens));
                if !limit.is_empty() {
                    span.set_attribute(text("steward.limit", limit.as_str()));
                }
                span.set_status(Status::Ok);
            }
            EventKind::RunFailed { error, class, rounds, .. } => {
                let span = cx.span();
                span.set_attribute(text("steward.stop_reason", "failed"));
                span.set_attribute(int("steward.rounds", u64::from(*rounds)));
                span.set_attribute(text("error.type", class.as_str()));
                span.set_status(Status::error(error.clone()));
            }
            EventKind::RunCancelled { reason, rounds, .. } => {
                let span = cx.span();
                span.set_attribute(text("steward.stop_reason", "cancelled"));
                span.set_attribute(int("steward.rounds", u64::from(*rounds)));
                span.set_attribute(text("steward.cancel_reason", reason.as_str()));
            }
            kind => calls.observe(event, kind),
        }
    }
    let finished = calls.finish(end);
    let audit_by_call = audit_by_call(audit);
    for call in &finished {
        let records = audit_for(&audit_by_call, call, &finished);
        tool_span(tracer, &cx, run_id, call, &records, content);
    }
    cx.span().end_with_timestamp(end);
}

/// `gen_ai.provider.name` (and the older `gen_ai.system`) and the model under `model_key`,
/// left out when empty (the classic planner has neither).
fn model_attributes(provider: &str, model: &str, model_key: &'static str) -> Vec<KeyValue> {
    let mut out = Vec::new();
    if !provider.is_empty() {
        out.push(text("gen_ai.provider.name", provider));
        out.push(text("gen_ai.system", provider));
    }
    if !model.is_empty() {
        out.push(text(model_key, model));
    }
    out
}

fn chat_span<T>(
    tracer: &T,
    cx: &Context,
    event: &Event,
    run_id: &str,
    roles: &BTreeMap<&str, &RoleModel>,
    run_model: (&String, &String),
) where
    T: Tracer,
{
    let (stage, round, duration_ms) = match &event.kind {
        EventKind::StageCompleted { stage, round, duration_ms, .. }
        | EventKind::StageFailed { stage, round, duration_ms, .. } => (stage, round, duration_ms),
        _ => return,
    };
    let (provider, model) = match roles.get(stage.as_str()) {
        Some(role) => (role.provider.as_str(), role.model.as_str()),
        None if stage == "planner" => (run_model.0.as_str(), run_model.1.as_str()),
        // A stage outside the run's roles (the generator of generated tools): its model is
        // only known from the reply.
        None => ("", ""),
    };
    let end = at(&event.at);
    let start = end.checked_sub(Duration::from_millis(*duration_ms)).unwrap_or(end);
    let mut attributes = vec![
        text("gen_ai.operation.name", "chat"),
        text("steward.run.id", run_id),
        text("steward.stage", stage.as_str()),
        int("steward.round", u64::from(*round)),
    ];
    attributes.extend(model_attributes(provider, model, "gen_ai.request.model"));
    let mut status = Status::Unset;
    match &event.kind {
        EventKind::StageCompleted { usage, tool_calls, finish_reason, response_model, .. } => {
            attributes.push(int("gen_ai.usage.input_tokens", usage.input_tokens));
            attributes.push(int("gen_ai.usage.output_tokens", usage.output_tokens));
            attributes.push(int("steward.tool_calls", u64::from(*tool_calls)));
            if !finish_reason.is_empty() {
                let reasons = Array::String(vec![StringValue::from(finish_reason.clone())]);
                attributes.push(KeyValue::new("gen_ai.response.finish_reasons", Value::Array(reasons)));
            }
            if !response_model.is_empty() {
                attributes.push(text("gen_ai.response.model", response_model.as_str()));
            }
        }
        EventKind::StageFailed { error, class, .. } => {
            attributes.push(text("error.type", class.as_str()));
            status = Status::error(error.clone());
        }
        _ => {}
    }
    let name = if model.is_empty() { "chat".to_string() } else { format!("chat {model}") };
    let mut span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Client)
        .with_start_time(start)
        .with_attributes(attributes)
        .start_with_context(tracer, cx);
    span.set_status(status);
    span.end_with_timestamp(end);
}

/// What the events say about one tool call.
#[derive(Debug, Default, Clone)]
struct Call {
    call_id: String,
    tool: String,
    start: Option<SystemTime>,
    end: Option<SystemTime>,
    /// `allow`, `ask`, `deny` or `repeat`.
    decision: Option<&'static str>,
    rule: String,
    risk: Option<f64>,
    approval_id: String,
    asked_at: Option<SystemTime>,
    approval_wait_ms: Option<u64>,
    /// `approved`, `rejected` or `expired`.
    approval: Option<&'static str>,
    decided_by: String,
    /// `completed`, `failed`, `denied`, `rejected`, `expired`, `repeated` or `unknown`.
    outcome: Option<&'static str>,
    error: String,
    arguments: Option<serde_json::Value>,
    result: Option<String>,
    duration_ms: Option<u64>,
    patched: Vec<String>,
}

/// The calls of a run in the order they were proposed. A call id can come back in a later
/// round, so a call is open from its first event until an event that ends it.
#[derive(Default)]
struct Calls {
    done: Vec<Call>,
    open: HashMap<String, Call>,
    order: Vec<String>,
}

impl Calls {
    fn call(&mut self, call_id: &str, tool: &str, time: SystemTime) -> &mut Call {
        if !self.open.contains_key(call_id) {
            self.order.push(call_id.to_string());
        }
        let call = self.open.entry(call_id.to_string()).or_insert_with(|| Call {
            call_id: call_id.to_string(),
            start: Some(time),
            ..Default::default()
        });
        if call.tool.is_empty() {
            call.tool = tool.to_string();
        }
        call.end = Some(time);
        call
    }

    fn close(&mut self, call_id: &str) {
        if let Some(call) = self.open.remove(call_id) {
            self.order.retain(|id| id != call_id);
            self.done.push(call);
        }
    }

    fn observe(&mut self, event: &Event, kind: &EventKind) {
        let time = at(&event.at);
        match kind {
            EventKind::ToolRequested { call_id, tool, arguments } => {
                self.close(call_id);
                self.call(call_id, tool, time).arguments = Some(arguments.clone());
            }
            EventKind::ToolDenied { call_id, tool, rule, risk, reason } => {
                let call = self.call(call_id, tool, time);
                call.decision = Some("deny");
                call.rule = rule.clone();
                call.risk = Some(*risk);
                call.outcome = Some("denied");
                call.error = reason.clone();
                self.close(call_id);
            }
            EventKind::ToolApprovalRequired { approval_id, call_id, tool, rule, risk, .. } => {
                let call = self.call(call_id, tool, time);
                call.decision = Some("ask");
                call.rule = rule.clone();
                call.risk = Some(*risk);
                call.approval_id = approval_id.clone();
                call.asked_at = Some(time);
            }
            EventKind::ToolApproved { call_id, decided_by, .. } => {
                let call = self.call(call_id, "", time);
                call.answer("approved", time);
                call.decided_by = decided_by.clone();
            }
            EventKind::ToolRejected { call_id, reason, .. } => {
                let call = self.call(call_id, "", time);
                call.answer("rejected", time);
                call.outcome = Some("rejected");
                call.error = reason.clone();
                self.close(call_id);
            }
            EventKind::ToolApprovalExpired { call_id, .. } => {
                let call = self.call(call_id, "", time);
                call.answer("expired", time);
                call.outcome = Some("expired");
                self.close(call_id);
            }
            EventKind::ToolStarted { call_id, tool, allowed_by } => {
                let call = self.call(call_id, tool, time);
                if call.decision.is_none() {
                    call.decision = Some("allow");
                    call.rule = allowed_by.clone();
                }
            }
            EventKind::ToolCompleted { call_id, tool, duration_ms, output, .. } => {
                let call = self.call(call_id, tool, time);
                call.outcome = Some("completed");
                call.duration_ms = Some(*duration_ms);
                call.result = Some(output.clone());
                self.close(call_id);
            }
            EventKind::ToolFailed { call_id, tool, duration_ms, error } => {
                let call = self.call(call_id, tool, time);
                call.outcome = Some("failed");
                call.duration_ms = Some(*duration_ms);
                call.error = error.clone();
                self.close(call_id);
            }
            EventKind::ToolCallRepeated { call_id, tool, arguments, rule, earlier_outcome, .. } => {
                let call = self.call(call_id, tool, time);
                call.decision = Some("repeat");
                call.rule = rule.clone();
                call.outcome = Some("repeated");
                call.error = format!("repeats an earlier call ({earlier_outcome})");
                call.arguments.get_or_insert_with(|| arguments.clone());
                self.close(call_id);
            }
            EventKind::PatchProposed { call_id, path, .. } | EventKind::PatchApplied { call_id, path, .. } => {
                let call = self.call(call_id, "", time);
                if !call.patched.contains(path) {
                    call.patched.push(path.clone());
                }
            }
            _ => {}
        }
    }

    /// Every call in proposal order; those still open end at `end` with outcome `unknown`.
    fn finish(mut self, end: SystemTime) -> Vec<Call> {
        for id in std::mem::take(&mut self.order) {
            if let Some(mut call) = self.open.remove(&id) {
                call.end = Some(call.end.unwrap_or(end));
                call.outcome.get_or_insert("unknown");
                self.done.push(call);
            }
        }
        self.done.sort_by_key(|c| c.start);
        self.done
    }
}

impl Call {
    fn answer(&mut self, outcome: &'static str, time: SystemTime) {
        self.approval = Some(outcome);
        if let Some(asked) = self.asked_at {
            self.approval_wait_ms = time.duration_since(asked).ok().map(|d| d.as_millis() as u64);
        }
    }
}

fn audit_by_call(audit: &[AuditRecord]) -> HashMap<&str, Vec<&AuditRecord>> {
    let mut by_call: HashMap<&str, Vec<&AuditRecord>> = HashMap::new();
    for record in audit.iter().filter(|r| !r.entry.call_id.is_empty()) {
        by_call.entry(record.entry.call_id.as_str()).or_default().push(record);
    }
    by_call
}

/// The audit records of `call`: those of its id; when the id was used by several calls of
/// the run, those written from its start until the next call with that id started.
fn audit_for<'a>(by_call: &HashMap<&str, Vec<&'a AuditRecord>>, call: &Call, all: &[Call]) -> Vec<&'a AuditRecord> {
    let Some(records) = by_call.get(call.call_id.as_str()) else { return Vec::new() };
    let same: Vec<&Call> = all.iter().filter(|c| c.call_id == call.call_id).collect();
    if same.len() < 2 {
        return records.clone();
    }
    let start = call.start;
    let next = same.iter().filter_map(|c| c.start).filter(|s| Some(*s) > start).min();
    let first = same.first().is_some_and(|c| c.start == start);
    records
        .iter()
        .filter(|r| {
            let time = Some(at(&r.at));
            (first || time >= start) && next.is_none_or(|n| time < Some(n))
        })
        .copied()
        .collect()
}

fn tool_span<T>(
    tracer: &T,
    cx: &Context,
    run_id: &str,
    call: &Call,
    records: &[&AuditRecord],
    content: Option<Redact<'_>>,
) where
    T: Tracer,
{
    let mut attributes = vec![
        text("gen_ai.operation.name", "execute_tool"),
        text("gen_ai.tool.name", call.tool.as_str()),
        text("gen_ai.tool.call.id", call.call_id.as_str()),
        text("gen_ai.tool.type", "function"),
        text("steward.run.id", run_id),
        text("steward.outcome", call.outcome.unwrap_or("unknown")),
    ];
    let decision = call.decision.or_else(|| records.first().map(|_| "allow"));
    if let Some(decision) = decision {
        attributes.push(text("steward.decision", decision));
    }
    let rule = if call.rule.is_empty() {
        records.first().map(|r| r.entry.policy.clone()).unwrap_or_default()
    } else {
        call.rule.clone()
    };
    if !rule.is_empty() {
        attributes.push(text("steward.rule", rule));
    }
    if let Some(risk) = call.risk.or_else(|| records.first().map(|r| r.entry.risk)) {
        attributes.push(KeyValue::new("steward.risk", risk));
    }
    let approval_id = if call.approval_id.is_empty() {
        records.iter().map(|r| r.entry.approval_id.as_str()).find(|a| !a.is_empty()).unwrap_or_default().to_string()
    } else {
        call.approval_id.clone()
    };
    if !approval_id.is_empty() {
        attributes.push(text("steward.approval.id", approval_id));
    }
    if let Some(outcome) = call.approval {
        attributes.push(text("steward.approval.outcome", outcome));
    }
    if let Some(waited) = call.approval_wait_ms {
        attributes.push(int("steward.approval.wait_ms", waited));
    }
    if !call.decided_by.is_empty() {
        attributes.push(text("steward.approval.decided_by", call.decided_by.as_str()));
    }
    if let Some(sandbox) = records.iter().map(|r| r.entry.sandbox.as_str()).find(|s| !s.is_empty()) {
        // `PROFILE; sbx_…`: the profile, then the id of the sandboxed execution.
        let (profile, id) = sandbox.split_once("; ").unwrap_or((sandbox, ""));
        attributes.push(text("steward.sandbox.profile", profile.to_string()));
        if !id.is_empty() {
            attributes.push(text("steward.sandbox.id", id.to_string()));
        }
    }
    if let Some(last) = records.last() {
        attributes.push(text("steward.audit.record_id", last.id.as_str()));
        attributes.push(text("steward.audit.hash", last.hash.as_str()));
        let ids = records.iter().map(|r| StringValue::from(r.id.clone())).collect();
        attributes.push(KeyValue::new("steward.audit.record_ids", Value::Array(Array::String(ids))));
    }
    if let Some(ms) = call.duration_ms {
        attributes.push(int("steward.tool.duration_ms", ms));
    }
    if !call.patched.is_empty() {
        let paths = call.patched.iter().map(|p| StringValue::from(p.clone())).collect();
        attributes.push(KeyValue::new("steward.patch.paths", Value::Array(Array::String(paths))));
    }
    if let Some(redact) = content {
        if let Some(arguments) = &call.arguments {
            attributes.push(text("gen_ai.tool.call.arguments", capped(&redact(&arguments.to_string()))));
        }
        if let Some(result) = &call.result {
            attributes.push(text("gen_ai.tool.call.result", capped(&redact(result))));
        }
    }
    let failed = call.outcome == Some("failed");
    if failed {
        attributes.push(text("error.type", "tool_error"));
    } else if !call.error.is_empty() {
        attributes.push(text("steward.reason", call.error.as_str()));
    }
    let end = call.end.or(call.start).unwrap_or_else(SystemTime::now);
    let mut span = tracer
        .span_builder(format!("execute_tool {}", call.tool))
        .with_kind(SpanKind::Internal)
        .with_start_time(call.start.unwrap_or(end))
        .with_attributes(attributes)
        .start_with_context(tracer, cx);
    if failed {
        span.set_status(Status::error(call.error.clone()));
    }
    span.end_with_timestamp(end);
}

/// `text` cut to [`CONTENT_CHARS`] characters, saying so.
fn capped(text: &str) -> String {
    if text.chars().count() <= CONTENT_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(CONTENT_CHARS).collect();
    out.push_str("… [cut]");
    out
}
