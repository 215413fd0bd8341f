//! Case B21: a tool call must not run again because its result was never acknowledged.
//!
//! 1. The tool ran, but every follow-up request carrying its result to the model fails (an
//!    OpenAI-compatible server in this test answers 500 after the first call): the provider's
//!    retries re-send the stored result, the run fails with the delivery error, and the side
//!    effect happened exactly once.
//! 2. The process is killed while the tool runs: after a restart the call's outcome is
//!    `unknown` in the audit log, the run is `interrupted`, and nothing is re-run.
//!
//! The tool writes, so it asks; a workspace grant given earlier by the owner answers the ask.

use crate::common;
use steward_store::ApprovalStore;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use common::{Env, code, stderr, stdout};
use steward_store::{GrantRecord, GrantScope, SqliteStore, Store, StoreOptions, new_id};

const APPEND_TOOL: &str = r#"
[[tool]]
name = "append_run"
description = "Append one line to out/counter.txt."
command = ["sh", "-c", "echo run >> out/counter.txt; sleep SLEEP"]
writes = ["out/**"]
timeout_ms = 60000
"#;

fn setup(env: &Env, sleep_s: u32, provider: &str) {
    std::fs::create_dir_all(env.ws().join("out")).unwrap();
    env.write("out/counter.txt", "");
    env.user_config(&format!("{}{provider}", APPEND_TOOL.replace("SLEEP", &sleep_s.to_string())));
}

/// The owner's earlier "w" answer: `append_run` is granted in this workspace.
async fn grant(env: &Env) {
    let store = SqliteStore::open(&env.home().join("steward.db"), StoreOptions::default()).await.unwrap();
    let now = chrono::Utc::now();
    store
        .upsert_grant(&GrantRecord {
            id: new_id("grt_"),
            owner_id: "local:tester".into(),
            scope: GrantScope::Workspace,
            run_id: "run_0000000000000000".into(),
            workspace: std::fs::canonicalize(env.ws()).unwrap().display().to_string(),
            tool: "append_run".into(),
            approval_id: "apr_0000000000000000".into(),
            created_at: now,
            expires_at: now + chrono::Duration::hours(1),
            revoked_at: None,
        })
        .await
        .unwrap();
    store.flush().await.unwrap();
}

fn lines(env: &Env) -> usize {
    env.read("out/counter.txt").lines().count()
}

type Seen = Arc<Mutex<Vec<serde_json::Value>>>;

async fn chat(State(seen): State<Seen>, Json(body): Json<serde_json::Value>) -> Response {
    let answered = body["messages"].as_array().is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    seen.lock().unwrap().push(body);
    if answered {
        return (StatusCode::INTERNAL_SERVER_ERROR, "upstream failed").into_response();
    }
    Json(serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "tu_1", "type": "function", "function": {"name": "append_run", "arguments": "{}"}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    }))
    .into_response()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b21_an_undelivered_tool_result_is_resent_never_rerun() {
    let seen: Seen = Arc::default();
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(chat)).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let env = Env::new();
    setup(
        &env,
        0,
        &format!(
            "[providers.flaky]\nkind = \"openai\"\nbase_url = \"http://{addr}/v1\"\nstream = false\n\
             api_key_required = false\ndefault_model = \"m\"\n"
        ),
    );
    grant(&env).await;
    let mut cmd = env.command(&["run", "--json", "--provider", "flaky", "append one line"]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(code(&out), 1, "the run fails with the delivery error: {}", stderr(&out));
    assert_eq!(lines(&env), 1, "the tool ran exactly once");
    let bodies = seen.lock().unwrap().clone();
    let followups: Vec<&serde_json::Value> = bodies.iter().skip(1).collect();
    assert!(followups.len() >= 2, "the provider retried the delivery: {} requests", bodies.len());
    for body in &followups {
        let results: Vec<&serde_json::Value> =
            body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").collect();
        assert_eq!(results.len(), 1, "each retry re-delivers the one stored result");
        assert_eq!(results[0]["tool_call_id"], "tu_1");
    }
    let completed = stdout(&out).lines().filter(|l| l.contains("\"tool_completed\"")).count();
    assert_eq!(completed, 1);
    // A later start (recovery runs on every open) changes nothing.
    let again = env.steward(&["runs", "--json"]);
    assert_eq!(code(&again), 0);
    assert!(stdout(&again).contains("\"failed\""), "{}", stdout(&again));
    assert_eq!(lines(&env), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b21_a_tool_killed_mid_run_is_unknown_after_restart_and_not_rerun() {
    let env = Env::new();
    setup(&env, 10, "");
    grant(&env).await;
    let scenario = common::scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nid = \"tu_1\"\nname = \"append_run\"\narguments = {}\n[[round]]\ntext = \"done\"\n",
    );
    let mut child = env
        .command(&["run", "--provider", "fake", "--scenario", &scenario, "append one line"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while lines(&env) == 0 {
        assert!(started.elapsed() < Duration::from_secs(30), "the tool never ran");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before the tool ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Restart: any command opens the store and recovers.
    let out = env.steward(&["runs", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("tool call tu_1"), "{}", stderr(&out));
    assert!(stderr(&out).contains("unknown outcome"), "{}", stderr(&out));
    let run: serde_json::Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    assert_eq!(run["status"], "interrupted");
    let audit = common::audit(&env, run["id"].as_str().unwrap());
    let last = audit.iter().rev().find(|r| r["call_id"] == "tu_1").unwrap();
    assert_eq!(last["outcome"], "unknown");
    assert!(!audit.iter().any(|r| r["call_id"] == "tu_1" && r["outcome"] == "completed"));
    // Nothing resumes it: later starts leave the single line alone.
    let out = env.steward(&["runs"]);
    assert_eq!(code(&out), 0);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(lines(&env), 1);
}
