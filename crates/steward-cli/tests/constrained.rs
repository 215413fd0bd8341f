//! Constrained replies through `steward run` against an OpenAI-compatible server in this test
//! that answers like llama.cpp's `llama-server` (`GET /props`): each request offering tools
//! carries the reply schema as `json_schema` and lists the tools in the system message
//! instead of `tools`; the model's JSON is read as a call or as the answer; the trace, `steward
//! show` and `steward models` say the replies were constrained; `constrained = "off"` sends
//! the tools natively and no schema. The real llama-server holds a real model to the schema in
//! `local_models.rs`.

use crate::common;

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use common::{Env, code, events, find, stderr, stdout};
use serde_json::{Value, json};

type Seen = Arc<Mutex<Vec<String>>>;

/// Replies in turn: a call of `read` written as the schema's JSON, then the answer.
async fn chat(State(seen): State<Seen>, body: String) -> Json<Value> {
    let parsed: Value = serde_json::from_str(&body).unwrap_or_default();
    let answered = parsed["messages"].as_array().is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    seen.lock().unwrap().push(body);
    let content = if answered {
        r#"{"response": "The code word is PELICAN."}"#
    } else {
        r#"{"name": "read", "arguments": {"path": "notes.txt"}}"#
    };
    Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "qwen",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920}
    }))
}

async fn props() -> Json<Value> {
    Json(json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}))
}

async fn models() -> Json<Value> {
    Json(json!({"object": "list", "data": [{"id": "qwen", "object": "model", "owned_by": "llamacpp"}]}))
}

/// A llama.cpp-like server on loopback, and the bodies of the chat requests it received.
async fn server() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .route("/v1/models", axum::routing::get(models))
        .route("/props", axum::routing::get(props))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

fn configure(env: &Env, url: &str, setting: &str) {
    env.write("notes.txt", "The launch code word is PELICAN.\n");
    env.user_config(&format!(
        "[providers.local]\nkind = \"openai\"\nbase_url = \"{url}\"\nstream = false\ndefault_model = \"qwen\"\n\
         probe_context_window = true\n{setting}\n[run]\ntools = [\"read\", \"list\"]\n"
    ));
}

async fn steward(env: &Env, args: &[&str]) -> std::process::Output {
    let mut cmd = env.command(args);
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_llama_cpp_server_gets_the_reply_schema_and_its_json_is_a_call_then_the_answer() {
    let (url, seen) = server().await;
    let env = Env::new();
    configure(&env, &url, "");
    let out = steward(&env, &["run", "--json", "--provider", "local", "what is the code word in notes.txt?"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert_eq!(find(&evs, "tool_completed")["tool"], "read");
    assert_eq!(find(&evs, "run_completed")["final"], "The code word is PELICAN.");
    let stages: Vec<&Value> = evs.iter().filter(|e| e["event"] == "stage_completed").collect();
    assert_eq!(stages.len(), 2);
    assert!(stages.iter().all(|e| e["constrained"] == true), "{stages:#?}");

    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    for text in &bodies {
        let body: Value = serde_json::from_str(text).unwrap();
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none(), "{body}");
        let schema = &body["json_schema"];
        let names: Vec<&Value> =
            schema["anyOf"].as_array().unwrap().iter().map(|o| &o["properties"]["name"]["const"]).collect();
        assert_eq!(names, [&json!("read"), &json!("list"), &Value::Null], "the two offered tools and the answer");
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains("Reply with exactly one JSON object") && system.contains("\n- read: "), "{system}");
        // The name comes before the arguments in the schema the server turns into a grammar.
        let schema_text = &text[text.find(r#""json_schema":"#).unwrap()..];
        let name = schema_text.find(r#""name":{"const":"read"}"#).unwrap();
        assert!(name < schema_text.find(r#""arguments":"#).unwrap(), "{schema_text}");
    }

    let run_id = evs[0]["run_id"].as_str().unwrap().to_string();
    let show = steward(&env, &["show", &run_id]).await;
    assert!(stdout(&show).contains("reply constrained"), "{}", stdout(&show));
    let listed = steward(&env, &["models", "--json"]).await;
    let local: Value = stdout(&listed)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["provider"] == "local")
        .unwrap_or_else(|| panic!("{}", stdout(&listed)));
    assert_eq!(local["constrained"], true, "{local}");
    assert_eq!(local["constrained_why"], "on (llama.cpp)");
    let listed = steward(&env, &["models"]).await;
    assert!(stdout(&listed).contains("replies constrained: on (llama.cpp)"), "{}", stdout(&listed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constrained_off_sends_the_tools_natively_and_no_schema() {
    let (url, seen) = server().await;
    let env = Env::new();
    configure(&env, &url, "constrained = \"off\"");
    let out = steward(&env, &["run", "--json", "--provider", "local", "what is the code word in notes.txt?"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Unconstrained, the same JSON is still recovered from the text (the `json` format).
    assert_eq!(find(&events(&out), "run_completed")["final"], "The code word is PELICAN.");
    assert!(events(&out).iter().all(|e| e.get("constrained").is_none()));
    let first: Value = serde_json::from_str(&seen.lock().unwrap()[0]).unwrap();
    assert_eq!(first["tools"].as_array().map(Vec::len), Some(2), "{first}");
    assert!(first.get("json_schema").is_none() && first.get("response_format").is_none());
    let listed = steward(&env, &["models"]).await;
    assert!(stdout(&listed).contains("replies constrained: off (constrained = \"off\")"), "{}", stdout(&listed));
}
