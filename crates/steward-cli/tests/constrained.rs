//! Constrained replies through `steward run` against an OpenAI-compatible server in this test
//! that answers like llama.cpp's `llama-server` (`GET /props`): a constrained request carries
//! the reply schema as `json_schema` and lists the tools in the system message instead of
//! `tools`; the model's JSON is read as a call or as the answer; the trace, `steward show` and
//! `steward models` say which replies were constrained. `constrained = "on"` constrains every
//! reply, `auto` the one after a reply that could not be used, `off` none. The real
//! llama-server holds a real model to the schema in `local_models.rs`.

use crate::common;

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use common::{Env, code, events, find, stderr, stdout};
use serde_json::{Value, json};

type Seen = Arc<Mutex<Vec<String>>>;

/// Replies in turn: a call of `read` written as the schema's JSON, then the answer. Asked
/// without the schema first and with `mul` in the task, it calls `mul`, a tool nobody offered.
async fn chat(State(seen): State<Seen>, body: String) -> Json<Value> {
    let parsed: Value = serde_json::from_str(&body).unwrap_or_default();
    let messages = parsed["messages"].as_array().cloned().unwrap_or_default();
    let answered = messages.iter().any(|m| m["role"] == "tool");
    let invented = messages.iter().any(|m| m["content"].as_str().is_some_and(|c| c.contains("mul")));
    let constrained = parsed.get("json_schema").is_some();
    let first = seen.lock().unwrap().iter().all(|b| !b.starts_with('{'));
    seen.lock().unwrap().push(body);
    let content = match (answered, invented && first && !constrained) {
        (_, true) => r#"{"name": "mul", "arguments": {"a": 2, "b": 3}}"#,
        (true, _) if !constrained => "The code word is PELICAN.",
        (true, _) => r#"{"response": "The code word is PELICAN."}"#,
        (false, _) => r#"{"name": "read", "arguments": {"path": "notes.txt"}}"#,
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

/// A window too small for the prompt by Steward's estimate, large enough by the server's count.
async fn small_props() -> Json<Value> {
    Json(json!({"default_generation_settings": {"n_ctx": 1000}, "total_slots": 1}))
}

/// llama.cpp's `/apply-template`: the body it was given, as the prompt.
async fn apply_template(State(seen): State<Seen>, body: String) -> Json<Value> {
    seen.lock().unwrap().push(format!("apply-template {body}"));
    Json(json!({"prompt": body}))
}

/// llama.cpp's `/tokenize`: one token per 16 bytes, far fewer than Steward estimates.
async fn tokenize(State(seen): State<Seen>, Json(body): Json<Value>) -> Json<Value> {
    let prompt = body["content"].as_str().unwrap_or_default();
    seen.lock().unwrap().push(format!("tokenize {}", prompt.len()));
    Json(json!({"tokens": vec![1; prompt.len() / 16]}))
}

async fn models() -> Json<Value> {
    Json(json!({"object": "list", "data": [{"id": "qwen", "object": "model", "owned_by": "llamacpp"}]}))
}

/// A llama.cpp-like server on loopback, and the bodies of the chat requests it received. With
/// `counting`, its window is small and it counts prompts (`/apply-template`, `/tokenize`).
async fn server(counting: bool) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .route("/v1/models", axum::routing::get(models));
    let app = match counting {
        false => app.route("/props", axum::routing::get(props)),
        true => app
            .route("/props", axum::routing::get(small_props))
            .route("/apply-template", axum::routing::post(apply_template))
            .route("/tokenize", axum::routing::post(tokenize)),
    };
    let app = app.with_state(seen.clone());
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
async fn constrained_on_holds_every_reply_to_the_schema_and_its_json_is_a_call_then_the_answer() {
    let (url, seen) = server(false).await;
    let env = Env::new();
    configure(&env, &url, "constrained = \"on\"");
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
    assert_eq!(local["constrained"], "every", "{local}");
    assert_eq!(local["constrained_why"], "every reply (constrained = \"on\")");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constrained_off_sends_the_tools_natively_and_no_schema() {
    let (url, seen) = server(false).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_count_fits_the_first_prompt_where_the_estimate_alone_would_shorten_it() {
    let (url, seen) = server(true).await;
    let env = Env::new();
    configure(&env, &url, "");
    let out = steward(&env, &["run", "--json", "--provider", "local", "what is the code word in notes.txt?"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let first_round_fitted =
        |evs: &[Value]| evs.iter().find(|e| e["event"] == "prompt_fitted" && e["round"] == 1).cloned();
    assert_eq!(first_round_fitted(&evs), None, "the counted prompt fits as it is");
    let seen = seen.lock().unwrap().clone();
    // The first request was counted as it was then sent: the same body, rendered and tokenized.
    let rendered = seen[0].strip_prefix("apply-template ").expect("asked to render first");
    assert!(seen[1].starts_with("tokenize "), "{seen:?}");
    let mut first_chat: Value = serde_json::from_str(seen.iter().find(|s| s.starts_with('{')).unwrap()).unwrap();
    first_chat.as_object_mut().unwrap().remove("max_tokens");
    assert_eq!(serde_json::from_str::<Value>(rendered).unwrap(), first_chat, "only the output limit differs");

    // A window the prompt fits even at twice its estimate: nothing to decide, nothing asked.
    let (url, seen) = server(true).await;
    let env = Env::new();
    configure(&env, &url, "context_window = 32000");
    let out = steward(&env, &["run", "--json", "--provider", "local", "what is the code word in notes.txt?"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().all(|s| s.starts_with('{')), "only chat requests: {seen:?}");

    // The same server without its tokenizer: the estimate shortens the tool descriptions.
    let (url, _) = server(false).await;
    let env = Env::new();
    configure(&env, &url, "context_window = 1000");
    let out = steward(&env, &["run", "--json", "--provider", "local", "what is the code word in notes.txt?"]).await;
    let fitted = first_round_fitted(&events(&out)).unwrap_or_else(|| panic!("{}", stdout(&out)));
    assert_eq!(fitted["descriptions_shortened"], true, "{fitted}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_constrains_the_replies_after_one_that_called_a_tool_nobody_offered() {
    let (url, seen) = server(false).await;
    let env = Env::new();
    configure(&env, &url, "");
    let task = "read notes.txt; do not use mul";
    let out = steward(&env, &["run", "--json", "--provider", "local", task]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert_eq!(find(&evs, "run_completed")["final"], "The code word is PELICAN.");
    let flags: Vec<bool> =
        evs.iter().filter(|e| e["event"] == "stage_completed").map(|e| e["constrained"] == true).collect();
    assert_eq!(find(&evs, "stage_failed")["class"], "unparsed_tool_call", "the call of `mul` could not be used");
    assert_eq!(flags, [true, true], "every reply after the unusable one is constrained: {evs:#?}");
    let bodies: Vec<Value> = seen.lock().unwrap().iter().map(|b| serde_json::from_str(b).unwrap()).collect();
    assert_eq!(bodies.len(), 3);
    assert!(bodies[0].get("tools").is_some() && bodies[0].get("json_schema").is_none());
    assert!(bodies[1].get("tools").is_none() && bodies[1].get("json_schema").is_some(), "{}", bodies[1]);
    assert!(bodies[2].get("tools").is_none() && bodies[2].get("json_schema").is_some());
    let listed = steward(&env, &["models"]).await;
    let expected = "replies constrained: the replies after an unusable one (llama.cpp)";
    assert!(stdout(&listed).contains(expected), "{}", stdout(&listed));
}

/// Replies by turn: `mul` (not offered) unconstrained, `read` constrained, `mul` again (as if
/// a constrained reply had been cut short), then the answer.
async fn chat_unusable_twice(State(seen): State<Seen>, body: String) -> Json<Value> {
    let turn = seen.lock().unwrap().len();
    seen.lock().unwrap().push(body);
    let content = match turn {
        0 | 2 => r#"{"name": "mul", "arguments": {"a": 2, "b": 3}}"#,
        1 => r#"{"name": "read", "arguments": {"path": "notes.txt"}}"#,
        _ => r#"{"response": "The code word is PELICAN."}"#,
    };
    Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "qwen",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920}
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_usable_constrained_reply_a_later_unusable_one_is_asked_again_not_fatal() {
    let seen: Seen = Arc::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat_unusable_twice))
        .route("/props", axum::routing::get(props))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let env = Env::new();
    configure(&env, &format!("http://{addr}/v1"), "");
    let out = steward(&env, &["run", "--json", "--provider", "local", "--max-rounds", "6", "read notes.txt"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert_eq!(find(&evs, "run_completed")["final"], "The code word is PELICAN.");
    let failed = evs.iter().filter(|e| e["event"] == "stage_failed").count();
    assert_eq!(failed, 2, "both calls of `mul` were refused as unusable");
    let bodies: Vec<Value> = seen.lock().unwrap().iter().map(|b| serde_json::from_str(b).unwrap()).collect();
    let constrained: Vec<bool> = bodies.iter().map(|b| b.get("json_schema").is_some()).collect();
    assert_eq!(constrained, [false, true, true, true], "every reply after the first unusable one is constrained");
}
