//! The presets follow the environment variables users already set for the tools they come
//! from: `OPENAI_BASE_URL` and `OLLAMA_HOST` send `steward run` to another server.

use crate::common;

use std::sync::{Arc, Mutex};

use axum::response::IntoResponse;
use common::{Env, code, events, find, stderr};

/// Paths the server was asked for.
type Seen = Arc<Mutex<Vec<String>>>;

/// An OpenAI-compatible chat endpoint that streams one fixed answer.
async fn chat(axum::extract::State(seen): axum::extract::State<Seen>, uri: axum::http::Uri) -> impl IntoResponse {
    seen.lock().expect("lock").push(uri.path().to_string());
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let body = format!(
        "{}{}data: [DONE]\n\n",
        chunk("{\"role\":\"assistant\",\"content\":\"answer from the variable's server\"}", "null"),
        chunk("{}", "\"stop\"")
    );
    ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], body)
}

async fn server() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .route("/proxy/v1/chat/completions", axum::routing::post(chat))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (addr, seen)
}

async fn run(env: Env, vars: Vec<(&'static str, String)>, provider: &'static str) -> std::process::Output {
    let mut cmd = env.command(&["run", "--json", "--provider", provider, "--model", "m", "say hello"]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    tokio::task::spawn_blocking(move || cmd.output().expect("steward runs")).await.expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_base_url_sends_the_openai_preset_to_that_server() {
    let (addr, seen) = server().await;
    let out = run(
        Env::new(),
        vec![("OPENAI_BASE_URL", format!("http://{addr}/proxy/v1")), ("OPENAI_API_KEY", "k-test".into())],
        "openai",
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let completed = find(&events(&out), "run_completed").clone();
    assert_eq!(completed["final"], "answer from the variable's server");
    assert_eq!(seen.lock().expect("lock").as_slice(), ["/proxy/v1/chat/completions"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_host_sends_the_ollama_preset_to_that_host_and_port() {
    let (addr, seen) = server().await;
    let out = run(Env::new(), vec![("OLLAMA_HOST", addr)], "ollama").await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(find(&events(&out), "run_completed")["final"], "answer from the variable's server");
    assert_eq!(seen.lock().expect("lock").as_slice(), ["/v1/chat/completions"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_url_flag_wins_over_the_variable() {
    let (addr, seen) = server().await;
    let out = Env::new();
    let mut cmd = out.command(&[
        "run",
        "--json",
        "--provider",
        "ollama",
        "--base-url",
        &format!("http://{addr}/proxy/v1"),
        "--model",
        "m",
        "say hello",
    ]);
    cmd.env("OLLAMA_HOST", "127.0.0.1:1");
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("steward runs")).await.expect("join");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(seen.lock().expect("lock").as_slice(), ["/proxy/v1/chat/completions"]);
}
