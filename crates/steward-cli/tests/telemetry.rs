//! OpenTelemetry export (SPEC R3) through the real binary: a run with the fake provider and
//! three tool calls (allowed and sandboxed, asked and refused for want of an approver, denied)
//! sends its spans to a real OTLP/HTTP receiver (PyPI oteltap, `STEWARD_TEST_OTLP_RECEIVER`,
//! started by the test on loopback): names, parents, the GenAI attributes, Steward's decision,
//! rule, approval, sandbox and audit attributes, and no secret. An endpoint that refuses or
//! never answers, and a protocol Steward does not speak, leave the run as it is.

use crate::common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// A value the workspace's `.env` holds: the run's redactor knows it.
const SECRET: &str = "DOTENVSECRETVALUE123456";

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"].as_array()?.iter().find(|a| a["key"] == key).map(|a| &a["value"])
}

fn text(span: &Value, key: &str) -> String {
    attribute(span, key).and_then(|v| v["stringValue"].as_str()).unwrap_or_default().to_string()
}

/// OTLP JSON writes 64-bit integers as strings.
fn int(span: &Value, key: &str) -> Option<i64> {
    let value = &attribute(span, key)?["intValue"];
    value.as_str().and_then(|s| s.parse().ok()).or_else(|| value.as_i64())
}

fn strings(span: &Value, key: &str) -> Vec<String> {
    attribute(span, key)
        .and_then(|v| v["arrayValue"]["values"].as_array())
        .map(|values| values.iter().filter_map(|v| v["stringValue"].as_str().map(String::from)).collect())
        .unwrap_or_default()
}

fn setup(env: &Env, capture: bool) -> String {
    env.write(".env", &format!("API_TOKEN={SECRET}\n"));
    env.write("notes.txt", &format!("the token is {SECRET}\n"));
    env.user_config(&format!(
        "[telemetry]\ncapture_content = {capture}\n\n[[tool]]\nname = \"show_notes\"\n\
         description = \"Print notes.txt.\"\ncommand = [\"cat\", \"notes.txt\"]\nrisk = \"low\"\n"
    ));
    scenario(
        env,
        r#"
[[round]]
text = "Looking."
usage = { input_tokens = 11, output_tokens = 7 }
[[round.tool_call]]
name = "show_notes"
arguments = {}
id = "call_show"
[[round.tool_call]]
name = "create"
arguments = { path = "out.txt", content = "hello" }
id = "call_create"
[[round.tool_call]]
name = "read"
arguments = { path = ".env" }
id = "call_env"
[[round]]
text = "Done."
usage = { input_tokens = 20, output_tokens = 3 }
"#,
    )
}

#[test]
fn peer_otlp_a_run_exports_its_agent_chat_and_tool_spans_to_a_real_receiver() {
    let receiver = steward_peers::otlp_receiver();
    let env = Env::new();
    let path = setup(&env, true);
    let mut command = env.command(&["run", "--json", "--provider", "fake", "--scenario", &path, "show the notes"]);
    command.env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint());
    let out = command.output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let run_id = find(&events(&out), "run_started")["run_id"].as_str().unwrap().to_string();
    let ours = |spans: &[Value]| -> Vec<Value> {
        spans.iter().filter(|s| text(s, "steward.run.id") == run_id).cloned().collect()
    };
    // One run, two model calls, three tool calls.
    let spans = ours(&receiver.spans_when(Duration::from_secs(30), |spans| ours(spans).len() >= 6));
    assert_eq!(spans.len(), 6, "{spans:#?}");
    let everything = serde_json::to_string(&spans).unwrap();
    assert!(!everything.contains(SECRET), "a secret reached the receiver: {everything}");

    let run = spans.iter().find(|s| text(s, "gen_ai.operation.name") == "invoke_agent").expect("an invoke_agent span");
    assert_eq!(run["name"], "invoke_agent steward");
    assert_eq!(run["parentSpanId"], "", "the run's span is the root");
    assert_eq!(text(run, "gen_ai.provider.name"), "fake");
    assert_eq!(text(run, "gen_ai.system"), "fake");
    assert!(!text(run, "gen_ai.request.model").is_empty(), "{run:#}");
    assert_eq!(text(run, "steward.stop_reason"), "answered");
    assert_eq!(int(run, "gen_ai.usage.input_tokens"), Some(31));
    assert_eq!(int(run, "gen_ai.usage.output_tokens"), Some(10));
    let trace = run["traceId"].as_str().unwrap();
    let root = run["spanId"].as_str().unwrap();
    for span in &spans {
        assert_eq!(span["traceId"], trace, "one trace per run: {span:#}");
        if span["spanId"] != root {
            assert_eq!(span["parentSpanId"], root, "every other span is a child of the run's: {span:#}");
        }
    }

    let mut chats: Vec<&Value> = spans.iter().filter(|s| text(s, "gen_ai.operation.name") == "chat").collect();
    chats.sort_by_key(|s| int(s, "steward.round"));
    assert_eq!(chats.len(), 2, "{spans:#?}");
    assert!(chats[0]["name"].as_str().unwrap().starts_with("chat"), "{:#}", chats[0]);
    assert_eq!(text(chats[0], "gen_ai.provider.name"), "fake");
    assert_eq!(int(chats[0], "gen_ai.usage.input_tokens"), Some(11));
    assert_eq!(int(chats[0], "gen_ai.usage.output_tokens"), Some(7));
    assert_eq!(strings(chats[0], "gen_ai.response.finish_reasons"), ["tool_calls"]);
    assert_eq!(strings(chats[1], "gen_ai.response.finish_reasons"), ["stop"]);
    assert_eq!(int(chats[1], "gen_ai.usage.input_tokens"), Some(20));

    let tool = |id: &str| -> &Value {
        spans
            .iter()
            .find(|s| text(s, "gen_ai.tool.call.id") == id)
            .unwrap_or_else(|| panic!("no span of {id}: {spans:#?}"))
    };
    let audit = audit(&env, &run_id);
    let last_record = |call: &str| -> &Value {
        audit.iter().rev().find(|r| r["call_id"] == call).unwrap_or_else(|| panic!("no audit record of {call}"))
    };

    let shown = tool("call_show");
    assert_eq!(shown["name"], "execute_tool show_notes");
    assert_eq!(text(shown, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(text(shown, "gen_ai.tool.name"), "show_notes");
    assert_eq!(text(shown, "steward.decision"), "allow");
    assert_eq!(text(shown, "steward.outcome"), "completed");
    assert!(!text(shown, "steward.rule").is_empty(), "{shown:#}");
    assert!(attribute(shown, "steward.risk").is_some(), "{shown:#}");
    assert!(!text(shown, "steward.sandbox.profile").is_empty(), "a command tool runs sandboxed: {shown:#}");
    assert_eq!(text(shown, "steward.audit.record_id"), last_record("call_show")["id"].as_str().unwrap());
    assert_eq!(text(shown, "steward.audit.hash"), last_record("call_show")["hash"].as_str().unwrap());
    assert!(strings(shown, "steward.audit.record_ids").len() >= 2, "the decision and the outcome: {shown:#}");
    // Content was asked for: the result is there, redacted with the run's redactor.
    let result = text(shown, "gen_ai.tool.call.result");
    assert!(result.contains("the token is") && result.contains("[REDACTED]"), "{result}");
    assert_eq!(text(shown, "gen_ai.tool.call.arguments"), "{}");

    let asked = tool("call_create");
    assert_eq!(text(asked, "gen_ai.tool.name"), "create");
    assert_eq!(text(asked, "steward.decision"), "ask");
    assert_eq!(text(asked, "steward.outcome"), "rejected");
    assert!(text(asked, "steward.approval.id").starts_with("apr_"), "{asked:#}");
    assert_eq!(text(asked, "steward.approval.outcome"), "rejected");
    assert!(int(asked, "steward.approval.wait_ms").is_some(), "{asked:#}");
    assert_eq!(text(asked, "steward.audit.record_id"), last_record("call_create")["id"].as_str().unwrap());
    assert!(text(asked, "gen_ai.tool.call.arguments").contains("out.txt"), "{asked:#}");

    let denied = tool("call_env");
    assert_eq!(text(denied, "steward.decision"), "deny");
    assert_eq!(text(denied, "steward.outcome"), "denied");
    assert!(!text(denied, "steward.rule").is_empty(), "{denied:#}");
    assert!(attribute(denied, "steward.risk").is_some(), "{denied:#}");
}

#[test]
fn peer_otlp_tool_content_stays_off_the_spans_unless_asked_for() {
    let receiver = steward_peers::otlp_receiver();
    let env = Env::new();
    let path = setup(&env, false);
    let mut command = env.command(&["run", "--json", "--provider", "fake", "--scenario", &path, "show the notes"]);
    command.env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", format!("{}/v1/traces", receiver.endpoint()));
    let out = command.output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let spans = receiver.spans_when(Duration::from_secs(30), |spans| spans.len() >= 6);
    let tools: Vec<&Value> = spans.iter().filter(|s| text(s, "gen_ai.operation.name") == "execute_tool").collect();
    assert_eq!(tools.len(), 3, "{spans:#?}");
    for span in tools {
        assert!(attribute(span, "gen_ai.tool.call.arguments").is_none(), "{span:#}");
        assert!(attribute(span, "gen_ai.tool.call.result").is_none(), "{span:#}");
    }
}

/// A run of the fake provider that answers at once, exporting to `endpoint`; its output and
/// how long it took.
fn run_exporting_to(env: &Env, vars: &[(&str, &str)]) -> (std::process::Output, Duration) {
    let path = scenario(env, "[[round]]\ntext = \"Hello.\"\n");
    let mut command = env.command(&["run", "--provider", "fake", "--scenario", &path, "say hello"]);
    for (name, value) in vars {
        command.env(name, value);
    }
    let started = Instant::now();
    let out = command.output().unwrap();
    (out, started.elapsed())
}

#[test]
fn an_otlp_endpoint_that_refuses_or_never_answers_does_not_fail_or_hold_up_the_run() {
    let env = Env::new();
    // Refused: a port nothing listens on any more.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (out, took) = run_exporting_to(&env, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &format!("http://127.0.0.1:{closed}"))]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("Hello."), "{}", stdout(&out));
    let said = stderr(&out);
    assert_eq!(said.matches("spans could not be exported").count(), 1, "reported once: {said}");
    assert!(took < Duration::from_secs(30), "{took:?}");
    // Never answers: a socket that accepts connections (the kernel's backlog) but nobody reads;
    // the end-of-process flush gives up after its short limit.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let (out, took) = run_exporting_to(&env, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &format!("http://127.0.0.1:{port}"))]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("Hello."), "{}", stdout(&out));
    assert!(took < Duration::from_secs(30), "the flush at exit is bounded: {took:?}");
    drop(silent);
}

#[test]
fn otlp_over_grpc_is_refused_with_a_sentence_and_the_run_goes_on() {
    let env = Env::new();
    let (out, _) = run_exporting_to(
        &env,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("telemetry is off") && said.contains("gRPC") && said.contains("http/protobuf"), "{said}");
    // The same from the user's configuration.
    env.user_config("[telemetry]\nendpoint = \"http://127.0.0.1:4317\"\nprotocol = \"grpc\"\n");
    let (out, _) = run_exporting_to(&env, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("[telemetry] protocol = grpc"), "{}", stderr(&out));
}

#[test]
fn a_workspace_cannot_send_the_trace_elsewhere() {
    let env = Env::new();
    env.write(".steward/telemetry.toml", "[telemetry]\nendpoint = \"http://127.0.0.1:9\"\n");
    let (out, _) = run_exporting_to(&env, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("`telemetry` ignored"), "{said}");
    assert!(!said.contains("spans could not be exported"), "nothing is exported: {said}");
}
