use super::*;
use serde_json::json;
use steward_protocol::{FinishReason, Message, StreamDelta, ToolCall, ToolChoice, ToolSpec};

fn request(messages: Vec<Message>, tools: &[&str]) -> ChatRequest {
    ChatRequest {
        model: String::new(),
        messages,
        tools: tools
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                description: String::new(),
                input_schema: json!({"type": "object"}),
                risk: steward_protocol::RiskLevel::Low,
                writes: false,
                path_inputs: vec![],
                untrusted_output: false,
            })
            .collect(),
        tool_choice: ToolChoice::Auto,
        max_tokens: None,
        temperature: None,
        constrain: false,
    }
}

const SCENARIO: &str = r#"
[[round]]
chunks = ["I'll ", "read"]
usage = { input_tokens = 10, output_tokens = 5 }
[[round.tool_call]]
name = "read"
arguments = { path = "README.md" }
id = "call_1"

[[round]]
text = '{"name": "read", "arguments": {"path": "b"}}'

[[round]]
finish_reason = "length"
[[round.tool_call]]
name = "write"
arguments_raw = "{\"path\":"

[[round]]
[round.error]
class = "missing_api_key"
message = "OPENAI_API_KEY is not set"
"#;

fn read(id: &str, path: &str) -> ToolCall {
    ToolCall { id: id.into(), name: "read".into(), arguments: json!({"path": path}) }
}

#[test]
fn chunks_that_disagree_with_the_text_are_refused() {
    let err =
        Scenario::from_toml("[[round]]\ntext = \"I'll read the file.\"\nchunks = [\"I'll \", \"read\"]\n").unwrap_err();
    assert_eq!(err.class, ErrorClass::Config);
    assert!(err.message.contains("round 1") && err.message.contains("chunks"), "{}", err.message);
    let ok = Scenario::from_json(r#"{"round": [{"text": "ab", "chunks": ["a", "b"]}]}"#).unwrap();
    assert_eq!(ok.rounds.len(), 1);
}

#[tokio::test]
async fn rounds_follow_the_number_of_assistant_messages() {
    let fake = FakeProvider::new(Scenario::from_toml(SCENARIO).unwrap());
    let mut msgs = vec![Message::user("go")];
    let mut deltas = Vec::new();
    let r1 = fake.stream(&request(msgs.clone(), &["read", "write"]), &mut |d| deltas.push(d)).await.unwrap();
    assert_eq!(r1.text, "I'll read");
    assert_eq!(r1.tool_calls, vec![read("call_1", "README.md")]);
    assert_eq!(r1.usage.total(), 15);
    assert_eq!(&deltas[..2], &[StreamDelta::Text { text: "I'll ".into() }, StreamDelta::Text { text: "read".into() }]);

    msgs.push(Message::assistant(r1.text.clone(), r1.tool_calls.clone()));
    msgs.push(Message::tool_result("call_1", "hello", false));
    let r2 = fake.chat(&request(msgs.clone(), &["read", "write"])).await.unwrap();
    assert_eq!(r2.tool_calls, vec![read("call_recovered_1", "b")]);
    assert_eq!(r2.text, "");

    msgs.push(Message::assistant("", r2.tool_calls.clone()));
    msgs.push(Message::tool_result("call_recovered_1", "b!", false));
    let r3 = fake.chat(&request(msgs.clone(), &["read", "write"])).await.unwrap();
    assert!(r3.tool_calls.is_empty());
    assert_eq!(r3.finish_reason, Some(FinishReason::Length));
    assert!(r3.invalid_tool_calls[0].error.contains("truncated: finish_reason=length, 8 bytes"));

    msgs.push(Message::assistant("", vec![]));
    let err = fake.chat(&request(msgs.clone(), &[])).await.unwrap_err();
    assert_eq!(err.class, ErrorClass::MissingApiKey);
    assert_eq!(err.message, "OPENAI_API_KEY is not set");

    msgs.push(Message::assistant("", vec![]));
    let done = fake.chat(&request(msgs, &[])).await.unwrap();
    assert_eq!(done.text, SCENARIO_FINISHED);
    assert_eq!(fake.requests().len(), 5);
    assert_eq!(fake.list_models().await.unwrap(), vec!["fake"]);
}

#[tokio::test]
async fn missing_tool_result_is_rejected_like_a_strict_api() {
    let fake = FakeProvider::new(Scenario::default());
    let msgs = vec![
        Message::user("go"),
        Message::assistant("", vec![read("call_1", "a"), read("call_2", "b")]),
        Message::tool_result("call_1", "A", false),
        Message::user("next"),
    ];
    let err = fake.chat(&request(msgs, &["read"])).await.unwrap_err();
    assert_eq!((err.class, err.status), (ErrorClass::ProviderError, Some(400)));
    assert!(err.message.contains("call_2"), "{}", err.message);

    let out_of_order = vec![
        Message::user("go"),
        Message::assistant("", vec![read("call_1", "a"), read("call_2", "b")]),
        Message::tool_result("call_2", "B", false),
        Message::tool_result("call_1", "A", false),
    ];
    assert!(check_tool_results(&request(out_of_order, &[])).is_err());
    let stray = vec![Message::user("go"), Message::tool_result("call_9", "?", false)];
    assert!(check_tool_results(&request(stray, &[])).unwrap_err().message.contains("call_9"));
}

#[tokio::test]
async fn text_tool_call_recovery_can_be_turned_off() {
    let scenario = Scenario::from_json(r#"{"round": [{"text": "{\"name\": \"read\", \"arguments\": {}}"}]}"#).unwrap();
    let fake = FakeProvider::new(scenario).with_text_tool_calls(false);
    let r = fake.chat(&request(vec![Message::user("go")], &["read"])).await.unwrap();
    assert!(r.tool_calls.is_empty());
    assert_eq!(r.text, "{\"name\": \"read\", \"arguments\": {}}");
}

#[tokio::test]
async fn delay_is_cancelled_by_dropping_the_future() {
    let fake = FakeProvider::new(Scenario::from_toml("[[round]]\ntext = \"late\"\ndelay_ms = 60000").unwrap());
    let req = request(vec![Message::user("go")], &[]);
    let res = tokio::time::timeout(std::time::Duration::from_millis(50), fake.chat(&req)).await;
    assert!(res.is_err(), "the delay must be interruptible");
}

#[test]
fn scenario_files_by_extension_and_unknown_fields() {
    let dir = tempfile::tempdir().unwrap();
    let toml_path = dir.path().join("s.toml");
    std::fs::write(&toml_path, SCENARIO).unwrap();
    assert_eq!(FakeProvider::from_file(&toml_path).unwrap().scenario.rounds.len(), 4);
    let json_path = dir.path().join("s.json");
    std::fs::write(
        &json_path,
        r#"{"round": [{"text": "hi", "tool_call": [{"name": "read", "arguments": {"path": "a"}}]}]}"#,
    )
    .unwrap();
    assert_eq!(FakeProvider::from_file(&json_path).unwrap().scenario.rounds[0].tool_calls.len(), 1);
    let err = Scenario::from_toml("[[round]]\ntxt = \"typo\"").unwrap_err();
    assert_eq!(err.class, ErrorClass::Config);
    assert_eq!(FakeProvider::from_file(&dir.path().join("missing.toml")).unwrap_err().class, ErrorClass::Config);
}

#[tokio::test]
async fn a_round_fails_when_the_request_lacks_the_expected_text() {
    let scenario =
        Scenario::from_toml("[[round]]\ntext = \"ok\"\nexpect = [\"Task: count\", \"Answer: 42\"]\n").unwrap();
    let fake = FakeProvider::new(scenario);
    let with = request(vec![Message::system("1. Task: count\n   Answer: 42"), Message::user("next")], &[]);
    assert_eq!(fake.chat(&with).await.unwrap().text, "ok");
    let without = request(vec![Message::system("1. Task: count"), Message::user("next")], &[]);
    let err = fake.chat(&without).await.unwrap_err();
    assert_eq!((err.class, err.status), (ErrorClass::ProviderError, Some(400)));
    assert!(err.message.contains("\"Answer: 42\""), "{}", err.message);
}
