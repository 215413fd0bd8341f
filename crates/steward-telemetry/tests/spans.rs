//! A recorded run as spans, checked on the SDK's own span data (no network): the tree, the
//! times taken from the events, the approval wait, the audit records of a call id used twice,
//! and tool content only through the redactor.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{Status, TracerProvider as _};
use opentelemetry::{Array, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::json;
use steward_protocol::{AuditRecord, Event};

#[derive(Debug, Clone, Default)]
struct Collect(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Collect {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

const T0: &str = "2026-03-04T05:06:07Z";

fn at(ms: i64) -> String {
    let t0 = chrono::DateTime::parse_from_rfc3339(T0).unwrap();
    (t0 + chrono::Duration::milliseconds(ms)).to_rfc3339()
}

fn time(ms: u64) -> SystemTime {
    SystemTime::from(chrono::DateTime::parse_from_rfc3339(T0).unwrap()) + Duration::from_millis(ms)
}

fn events() -> Vec<Event> {
    let list = json!([
        {"event": "run_started", "at": at(0), "task": "t", "owner_id": "local:u", "planner": "model",
         "provider": "ollama", "model": "qwen3:8b", "workspace": "/w",
         "roles": [{"role": "planner", "provider": "ollama", "model": "qwen3:8b"}]},
        {"event": "stage_started", "at": at(5), "stage": "planner", "round": 1},
        {"event": "stage_completed", "at": at(100), "stage": "planner", "round": 1, "duration_ms": 90,
         "usage": {"input_tokens": 120, "output_tokens": 30}, "tool_calls": 1, "finish_reason": "tool_calls",
         "response_model": "qwen3:8b-q4"},
        {"event": "tool_requested", "at": at(110), "call_id": "call_1", "tool": "create",
         "arguments": {"path": "a.txt", "content": "key sk-live-SECRETSECRET"}},
        {"event": "tool_approval_required", "at": at(120), "approval_id": "apr_1", "call_id": "call_1",
         "tool": "create", "arguments": {}, "rule": "default:medium", "risk": 0.5, "reason": "writes",
         "preview": "", "expires_at": at(600_000)},
        {"event": "tool_approved", "at": at(620), "approval_id": "apr_1", "call_id": "call_1", "decided_by": "local:u"},
        {"event": "tool_started", "at": at(630), "call_id": "call_1", "tool": "create", "allowed_by": "approved"},
        {"event": "tool_completed", "at": at(700), "call_id": "call_1", "tool": "create", "duration_ms": 70,
         "output_chars": 9, "output": "wrote sk-live-SECRETSECRET"},
        {"event": "tool_requested", "at": at(800), "call_id": "call_1", "tool": "delete", "arguments": {"path": "a.txt"}},
        {"event": "tool_denied", "at": at(810), "call_id": "call_1", "tool": "delete", "rule": "no-delete",
         "risk": 0.9, "reason": "blocked"},
        {"event": "stage_failed", "at": at(900), "stage": "planner", "round": 2, "duration_ms": 50,
         "error": "refused", "class": "provider_error"},
        {"event": "run_failed", "at": at(1000), "error": "the provider refused", "class": "provider_error",
         "rounds": 2, "duration_ms": 1000}
    ]);
    list.as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut e = e.clone();
            e["run_id"] = json!("run_0123456789abcdef");
            e["seq"] = json!(i + 1);
            serde_json::from_value(e).unwrap()
        })
        .collect()
}

fn record(seq: u64, ms: i64, outcome: &str, sandbox: &str, approval: &str) -> AuditRecord {
    serde_json::from_value(json!({
        "seq": seq, "id": format!("aud_{seq}"), "at": at(ms), "agent": "steward", "run_id": "run_0123456789abcdef",
        "call_id": "call_1", "action": "create", "input": {}, "policy": "default:medium", "risk": 0.5,
        "outcome": outcome, "latency_ms": 0, "sandbox": sandbox, "approval_id": approval, "rollback_token": "",
        "detail": "", "prev_hash": "0".repeat(64), "hash": format!("{seq:064}")
    }))
    .unwrap()
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    attribute(span, key).map(|v| v.as_str().to_string()).unwrap_or_default()
}

fn spans(content: bool) -> Vec<SpanData> {
    let collected = Collect::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(collected.clone()).build();
    let tracer = provider.tracer("test");
    let audit = vec![
        record(1, 625, "approved", "", "apr_1"),
        record(2, 700, "completed", "landlock", "apr_1"),
        record(3, 810, "blocked", "", ""),
    ];
    let redact = |text: &str| text.replace("sk-live-SECRETSECRET", "[REDACTED]");
    let redact: &dyn Fn(&str) -> String = &redact;
    steward_telemetry::spans::record_run(&tracer, &events(), &audit, content.then_some(redact));
    let _ = provider.shutdown();
    collected.0.lock().unwrap().clone()
}

#[test]
fn a_run_is_one_trace_of_an_agent_span_with_chat_and_tool_children() {
    let spans = spans(false);
    assert_eq!(spans.len(), 5, "{spans:#?}");
    let run = spans.iter().find(|s| s.name == "invoke_agent steward").unwrap();
    assert_eq!(run.start_time, time(0));
    assert_eq!(run.end_time, time(1000));
    assert_eq!(run.status, Status::error("the provider refused"));
    assert_eq!(text(run, "error.type"), "provider_error");
    assert_eq!(text(run, "gen_ai.provider.name"), "ollama");
    for span in spans.iter().filter(|s| s.name != run.name) {
        assert_eq!(span.parent_span_id, run.span_context.span_id(), "{}", span.name);
        assert_eq!(span.span_context.trace_id(), run.span_context.trace_id());
    }

    let chat =
        spans.iter().find(|s| s.name == "chat qwen3:8b" && attribute(s, "steward.round") == Some(&Value::I64(1)));
    let chat = chat.unwrap();
    assert_eq!((chat.start_time, chat.end_time), (time(10), time(100)), "timed by the event and its duration");
    assert_eq!(attribute(chat, "gen_ai.usage.input_tokens"), Some(&Value::I64(120)));
    assert_eq!(text(chat, "gen_ai.response.model"), "qwen3:8b-q4");
    assert_eq!(
        attribute(chat, "gen_ai.response.finish_reasons"),
        Some(&Value::Array(Array::String(vec!["tool_calls".into()])))
    );
    let failed = spans.iter().find(|s| attribute(s, "steward.round") == Some(&Value::I64(2))).unwrap();
    assert_eq!(text(failed, "error.type"), "provider_error");

    let create = spans.iter().find(|s| s.name == "execute_tool create").unwrap();
    assert_eq!((create.start_time, create.end_time), (time(110), time(700)));
    assert_eq!(text(create, "steward.decision"), "ask");
    assert_eq!(text(create, "steward.rule"), "default:medium");
    assert_eq!(text(create, "steward.approval.id"), "apr_1");
    assert_eq!(text(create, "steward.approval.outcome"), "approved");
    assert_eq!(text(create, "steward.approval.decided_by"), "local:u");
    assert_eq!(attribute(create, "steward.approval.wait_ms"), Some(&Value::I64(500)));
    assert_eq!(text(create, "steward.sandbox.profile"), "landlock");
    assert_eq!(text(create, "steward.outcome"), "completed");
    assert_eq!(text(create, "steward.audit.record_id"), "aud_2", "the call's own records, not the later call's");
    assert_eq!(text(create, "steward.audit.hash"), format!("{:064}", 2));
    assert!(attribute(create, "gen_ai.tool.call.arguments").is_none(), "content only when asked for");

    let delete = spans.iter().find(|s| s.name == "execute_tool delete").unwrap();
    assert_eq!(text(delete, "gen_ai.tool.call.id"), "call_1");
    assert_eq!(text(delete, "steward.decision"), "deny");
    assert_eq!(text(delete, "steward.rule"), "no-delete");
    assert_eq!(attribute(delete, "steward.risk"), Some(&Value::F64(0.9)));
    assert_eq!(text(delete, "steward.audit.record_id"), "aud_3");
}

#[test]
fn tool_content_goes_through_the_redactor_when_asked_for() {
    let spans = spans(true);
    let create = spans.iter().find(|s| s.name == "execute_tool create").unwrap();
    let arguments = text(create, "gen_ai.tool.call.arguments");
    assert!(
        arguments.contains("a.txt") && arguments.contains("[REDACTED]") && !arguments.contains("SECRET"),
        "{arguments}"
    );
    assert_eq!(text(create, "gen_ai.tool.call.result"), "wrote [REDACTED]");
}

#[test]
fn a_run_without_its_start_gives_no_span() {
    let collected = Collect::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(collected.clone()).build();
    let later: Vec<Event> = events().into_iter().skip(1).collect();
    steward_telemetry::spans::record_run(&provider.tracer("test"), &later, &[], None);
    let _ = provider.shutdown();
    assert!(collected.0.lock().unwrap().is_empty());
}
