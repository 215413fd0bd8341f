//! The classic planner (SPEC A4): task → tool call table, follow-up answers, help text.

use serde_json::{Value, json};
use steward_core::ClassicPlanner;
use steward_protocol::{ChatRequest, ChatResponse, FinishReason, Message, StreamDelta, ToolCall, ToolChoice, Usage};
use steward_provider::Provider;
use steward_tools::ToolRegistry;

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: "classic".into(),
        messages,
        tools: ToolRegistry::builtin().specs(),
        tool_choice: ToolChoice::Auto,
        max_tokens: None,
        temperature: None,
        constrain: false,
    }
}

async fn ask(messages: Vec<Message>) -> ChatResponse {
    ClassicPlanner.chat(&request(messages)).await.unwrap()
}

#[tokio::test]
async fn task_to_tool_call_table() {
    let table: Vec<(&str, &str, Value)> = vec![
        ("list files", "list", json!({"path": "."})),
        ("ls", "list", json!({"path": "."})),
        ("ls src/", "list", json!({"path": "src"})),
        ("List the files in the directory docs", "list", json!({"path": "docs"})),
        ("what files are in sub?", "list", json!({"path": "sub"})),
        ("list all files recursively", "list", json!({"path": ".", "recursive": true})),
        ("read README.md", "read", json!({"path": "README.md"})),
        ("Please show src/main.rs.", "read", json!({"path": "src/main.rs"})),
        ("cat 'my notes.txt'", "read", json!({"path": "my notes.txt"})),
        ("open the file Cargo.toml", "read", json!({"path": "Cargo.toml"})),
        ("show status.txt", "read", json!({"path": "status.txt"})),
        ("git status", "git_status", json!({})),
        ("status", "git_status", json!({})),
        ("What's the git status?", "git_status", json!({})),
        ("git diff", "git_diff", json!({})),
        ("diff src/lib.rs", "git_diff", json!({"path": "src/lib.rs"})),
        ("what changed?", "git_diff", json!({})),
        ("git diff --staged", "git_diff", json!({"staged": true})),
        ("git log", "git_log", json!({})),
        ("history of src/lib.rs", "git_log", json!({"path": "src/lib.rs"})),
        ("show recent commits", "git_log", json!({})),
        ("search for TODO", "search", json!({"query": "TODO"})),
        ("grep API_KEY in sub", "search", json!({"query": "API_KEY", "path": "sub"})),
        ("find \"error handling\"", "search", json!({"query": "error handling"})),
        ("search for `fn main` in src", "search", json!({"query": "fn main", "path": "src"})),
        ("replace foo with bar in a.txt", "edit", json!({"path": "a.txt", "old": "foo", "new": "bar"})),
        (
            "replace 'x = 1' with \"x = 2\" in src/a.py",
            "edit",
            json!({"path": "src/a.py", "old": "x = 1", "new": "x = 2"}),
        ),
        (
            "Replace `let a` with `let mut a` in `src/main.rs`",
            "edit",
            json!({"path": "src/main.rs", "old": "let a", "new": "let mut a"}),
        ),
        ("change 'red' to 'blue' in style.css", "edit", json!({"path": "style.css", "old": "red", "new": "blue"})),
    ];
    for (task, tool, arguments) in table {
        let reply = ask(vec![Message::system("rules"), Message::user(task)]).await;
        assert_eq!(reply.tool_calls.len(), 1, "{task}: {}", reply.text);
        let call = &reply.tool_calls[0];
        assert_eq!((call.name.as_str(), &call.arguments), (tool, &arguments), "{task}");
        assert_eq!(call.id, "tc_classic_1");
        assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(reply.usage, Usage::default());
    }
}

#[tokio::test]
async fn half_understood_tasks_get_help_not_a_guess() {
    for task in ["replace foo with bar", "list the TODOs in src", "read", "hello"] {
        let reply = ask(vec![Message::user(task)]).await;
        assert!(reply.tool_calls.is_empty(), "{task}: {:?}", reply.tool_calls);
        assert!(reply.text.contains("I am the classic planner"), "{task}");
    }
}

#[tokio::test]
async fn only_offered_tools_are_called() {
    let mut req = request(vec![Message::user("git status")]);
    req.tools.retain(|t| t.name != "git_status");
    let reply = ClassicPlanner.chat(&req).await.unwrap();
    assert!(reply.tool_calls.is_empty());
    assert!(reply.text.contains("`git_status` tool is not available"), "{}", reply.text);
}

fn follow_up(call: ToolCall, result: Message) -> Vec<Message> {
    vec![Message::system("rules"), Message::user("task"), Message::assistant("", vec![call]), result]
}

#[tokio::test]
async fn follow_up_answers_with_the_tool_output() {
    let call = ToolCall { id: "tc_classic_1".into(), name: "read".into(), arguments: json!({"path": "a.txt"}) };
    let reply = ask(follow_up(call, Message::tool_result("tc_classic_1", "hello\nworld\n", false))).await;
    assert!(reply.tool_calls.is_empty());
    assert_eq!(reply.text, "hello\nworld\n");
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
}

#[tokio::test]
async fn follow_up_says_a_refused_call_was_not_done_and_why() {
    let call =
        ToolCall { id: "tc_classic_1".into(), name: "read".into(), arguments: json!({"path": "sub/.env.local"}) };
    let reason = "`sub/.env.local` is a secret path and is never read or written";
    let reply = ask(follow_up(call, Message::tool_result("tc_classic_1", reason, true))).await;
    assert_eq!(reply.text, format!("The `read` of `sub/.env.local` was not done: {reason}\n"));
}

#[tokio::test]
async fn unknown_task_gets_help_streamed_in_pieces() {
    let mut pieces = Vec::new();
    let reply = ClassicPlanner
        .stream(&request(vec![Message::user("write me a poem about rust")]), &mut |d| pieces.push(d))
        .await
        .unwrap();
    assert!(reply.tool_calls.is_empty());
    assert!(reply.text.contains("--provider ollama --model qwen2.5"), "{}", reply.text);
    assert!(reply.text.contains("[providers.NAME]") && reply.text.contains(".steward/config.toml"));
    assert!(reply.text.contains("read FILE") && reply.text.contains("git status"));
    assert!(pieces.len() > 1);
    let streamed: String = pieces
        .into_iter()
        .map(|d| match d {
            StreamDelta::Text { text } => text,
            other => panic!("unexpected delta {other:?}"),
        })
        .collect();
    assert_eq!(streamed, reply.text);
}

#[tokio::test]
async fn provider_identity() {
    assert_eq!(ClassicPlanner.name(), "classic");
    assert_eq!(ClassicPlanner.default_model(), "classic");
    assert_eq!(ClassicPlanner.list_models().await.unwrap(), vec!["classic".to_string()]);
}
