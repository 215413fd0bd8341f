//! `steward run` against a real OpenAI-compatible model server: llama-cpp-python's server
//! serving the TinyStories 260K model. Named `peer_*` so they run one at a time.
//!
//! Needs `STEWARD_TEST_LLAMA_PYTHON` (a Python with `llama_cpp.server`) and
//! `STEWARD_TEST_MODEL` (the GGUF file); `scripts/test.sh` sets both.

use crate::common;

use common::*;

/// The llama-cpp-python server's OpenAI-compatible base URL.
fn base_url(server: &steward_peers::Peer) -> String {
    format!("{}/v1", server.url())
}

/// `steward run --json --base-url URL --model stories260k` against `server`, then `rest`.
fn run_on(env: &Env, server: &steward_peers::Peer, rest: &[&str]) -> std::process::Output {
    let url = base_url(server);
    let mut args = vec!["run", "--json", "--base-url", &url, "--model", "stories260k"];
    args.extend_from_slice(rest);
    env.steward(&args)
}

#[test]
fn peer_llama_streams_a_text_answer_to_the_final_output() {
    let server = steward_peers::llama_server();
    let env = Env::new();
    let out = run_on(&env, &server, &["--max-tokens", "60", "Once upon a time"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let chunks: Vec<&str> =
        evs.iter().filter(|e| e["event"] == "stage_chunk").map(|e| e["text"].as_str().unwrap()).collect();
    assert!(chunks.len() >= 2, "the answer was not streamed: {chunks:?}");
    let done = find(&evs, "run_completed");
    let final_text = done["final"].as_str().unwrap();
    assert!(!final_text.trim().is_empty());
    assert_eq!(chunks.concat().trim(), final_text.trim());
    assert_eq!(find(&evs, "run_started")["model"], "stories260k");
}

#[test]
fn peer_llama_non_streamed_provider_from_config_reports_usage() {
    let server = steward_peers::llama_server();
    let env = Env::new();
    env.user_config(
        &format!(
            "[providers.tiny]\nkind = \"openai\"\nbase_url = \"{}\"\nstream = false\ndefault_model = \"stories260k\"\nmax_tokens = 40\n",
            base_url(&server)
        ),
    );
    let out = env.steward(&["run", "--json", "--provider", "tiny", "Once upon a time"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let done = find(&evs, "run_completed");
    assert!(!done["final"].as_str().unwrap().trim().is_empty());
    assert!(done["usage"]["output_tokens"].as_u64().unwrap() > 0, "usage tokens missing: {done}");
    assert!(done["usage"]["input_tokens"].as_u64().unwrap() > 0, "usage tokens missing: {done}");
    assert_eq!(find(&evs, "run_started")["provider"], "tiny");
}

#[test]
fn peer_llama_http_500_is_retried_then_fails_classified() {
    // llama-cpp-python answers the `developer` role with HTTP 500.
    let server = steward_peers::llama_server();
    let env = Env::new();
    env.user_config(&format!(
        "[providers.tiny]\nkind = \"openai\"\nbase_url = \"{}\"\nsystem_role = \"developer\"\nretry_backoff_ms = 10\n",
        base_url(&server)
    ));
    let out = env.steward(&["run", "--json", "--provider", "tiny", "--model", "stories260k", "hello"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let evs = events(&out);
    let failed = find(&evs, "run_failed");
    assert_eq!(failed["class"], "provider_error");
    let error = failed["error"].as_str().unwrap();
    assert!(error.contains("500") && error.contains("3 tries"), "{error}");
}

#[test]
fn peer_llama_named_tool_choice_yields_a_real_streamed_call_that_is_gated_and_run() {
    let server = steward_peers::llama_server();
    let env = Env::new();
    env.write("tracked.txt", "one\n");
    env.git_init();
    env.write("fresh_untracked.txt", "two\n");
    let out = run_on(
        &env,
        &server,
        &["--tool-choice", "git_status", "--max-tokens", "200", "What is the status of the repository?"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let requested = find(&evs, "tool_requested");
    assert_eq!(requested["tool"], "git_status");
    assert!(requested["call_id"].as_str().unwrap().starts_with("call_"), "{requested}");
    let completed = find(&evs, "tool_completed");
    assert!(completed["output"].as_str().unwrap().contains("fresh_untracked.txt"), "{completed}");
    let run_id = evs[0]["run_id"].as_str().unwrap();
    let outcomes: Vec<String> =
        audit(&env, run_id).iter().map(|r| r["outcome"].as_str().unwrap().to_string()).collect();
    assert_eq!(outcomes, ["approved", "completed"]);
    assert_eq!(find(&evs, "run_completed")["stop_reason"], "answered");
}

#[test]
fn peer_llama_forced_call_invokes_a_user_defined_tool() {
    let server = steward_peers::llama_server();
    let env = Env::new();
    env.write("tracked.txt", "one\n");
    env.git_init();
    env.write("fresh_untracked.txt", "two\n");
    env.user_config(
        "[[tool]]\nname = \"short_status\"\ndescription = \"Short git status of the workspace.\"\n\
         command = [\"git\", \"status\", \"--short\"]\nrisk = \"low\"\n",
    );
    let listed = env.steward(&["tools", "--json", "--workspace", env.ws().to_str().unwrap()]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let definitions: serde_json::Value = serde_json::from_str(&stdout(&listed)).unwrap();
    let ours = definitions.as_array().unwrap().iter().find(|d| d["function"]["name"] == "short_status").unwrap();
    assert_eq!(
        ours["function"]["parameters"],
        serde_json::json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
    );
    let out = run_on(&env, &server, &["--tool-choice", "short_status", "--max-tokens", "200", "What changed?"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert_eq!(find(&evs, "tool_requested")["tool"], "short_status");
    let completed = find(&evs, "tool_completed");
    assert_eq!(completed["tool"], "short_status");
    assert!(completed["output"].as_str().unwrap().contains("?? fresh_untracked.txt"), "{completed}");
    let run_id = evs[0]["run_id"].as_str().unwrap();
    let outcomes: Vec<String> =
        audit(&env, run_id).iter().map(|r| r["outcome"].as_str().unwrap().to_string()).collect();
    assert_eq!(outcomes, ["approved", "completed"]);
}

#[test]
fn peer_llama_call_cut_by_max_tokens_is_never_executed_and_the_model_is_told() {
    let server = steward_peers::llama_server();
    let env = Env::new();
    let out = run_on(
        &env,
        &server,
        &["--tool-choice", "create", "--max-tokens", "25", "--max-rounds", "1", "Write a story into story.txt"],
    );
    let evs = events(&out);
    let denied = find(&evs, "tool_denied");
    assert_eq!(denied["rule"], "invalid_tool_call", "{denied}");
    assert_eq!(denied["tool"], "create");
    assert!(!names(&evs).iter().any(|n| n == "tool_started"), "a cut call ran");
    assert!(!env.ws().join("story.txt").exists());
    assert!(std::fs::read_dir(env.ws()).unwrap().next().is_none(), "something was written to the workspace");
    // The run stops at its one round, with the refusal as what it had.
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(find(&evs, "run_completed")["final"].as_str().unwrap().contains("create"));
}

#[test]
fn peer_llama_context_overflow_is_a_clear_error() {
    // Non-streamed, the server says why (HTTP 400) and Steward does not retry it.
    let server = steward_peers::llama_server();
    let env = Env::new();
    env.user_config(&format!(
        "[providers.tiny]\nkind = \"openai\"\nbase_url = \"{}\"\nstream = false\n",
        base_url(&server)
    ));
    let task = "word ".repeat(3000);
    let out = env.steward(&["run", "--json", "--provider", "tiny", "--model", "stories260k", &task]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let evs = events(&out);
    let failed = find(&evs, "run_failed");
    assert_eq!(failed["class"], "provider_error");
    let error = failed["error"].as_str().unwrap();
    assert!(error.contains("400") && error.contains("context length"), "{error}");
    assert!(!error.contains("tries"), "a 400 was retried: {error}");

    // Streamed, this server answers 200 with an empty stream: Steward says the stream ended
    // early instead of reporting an empty answer.
    let out = run_on(&env, &server, &[&task]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let failed = find(&events(&out), "run_failed").clone();
    assert_eq!(failed["class"], "stream_interrupted");
    assert!(failed["error"].as_str().unwrap().contains("ended before the reply was complete"), "{failed}");
}

/// A loopback proxy in front of `upstream` (an OpenAI-compatible base URL) that sets
/// `tool_choice` to the function `tool` on every chat request offering tools, as a server
/// that always forces that tool would; everything else passes through unchanged, streamed.
/// Returns the proxy's base URL.
fn forcing_proxy(upstream: String, tool: &'static str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let client = reqwest::Client::new();
            let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
                let (client, upstream) = (client.clone(), upstream.clone());
                async move {
                    let (parts, body) = request.into_parts();
                    let mut body = axum::body::to_bytes(body, 16 << 20).await.unwrap_or_default().to_vec();
                    if let Ok(mut json) = serde_json::from_slice::<serde_json::Value>(&body)
                        && json.get("tools").is_some()
                    {
                        json["tool_choice"] = serde_json::json!({"type": "function", "function": {"name": tool}});
                        body = serde_json::to_vec(&json).unwrap();
                    }
                    let path = parts.uri.path().trim_start_matches("/v1");
                    let reply = client
                        .request(parts.method, format!("{upstream}{path}"))
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await
                        .unwrap();
                    let mut response = axum::response::Response::builder().status(reply.status().as_u16());
                    if let Some(kind) = reply.headers().get("content-type") {
                        response = response.header("content-type", kind.as_bytes());
                    }
                    response.body(axum::body::Body::from_stream(reply.bytes_stream())).unwrap()
                }
            });
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{addr}/v1")
}

#[test]
fn peer_llama_repeated_refused_call_ends_the_run_stuck_without_running_the_repeats() {
    // The model is forced to call `list_folder` in every round (Steward itself forces a tool
    // on the first planner call only, so a proxy in front of the server forces the rest), and
    // the tool's schema allows one value, so the grammar-constrained model writes the same call
    // each time: `/path/to/folder`, outside the workspace, what a small model wrote when asked
    // to list "this folder".
    let server = steward_peers::llama_server();
    let proxy = forcing_proxy(base_url(&server), "list_folder");
    let env = Env::new();
    env.write("a.txt", "x\n");
    env.user_config(&format!(
        "[providers.tiny]\nkind = \"openai\"\nbase_url = \"{proxy}\"\ndefault_model = \"stories260k\"\n\
         max_tokens = 200\n\n\
         [[tool]]\nname = \"list_folder\"\ndescription = \"List a folder.\"\ncommand = [\"ls\", {{ input = \"dir\" }}]\n\
         risk = \"low\"\n[[tool.input]]\nname = \"dir\"\ntype = \"string\"\nrequired = true\npath = true\n\
         enum = [\"/path/to/folder\"]\n"
    ));
    let out =
        env.steward(&["run", "--json", "--provider", "tiny", "--max-rounds", "6", "list the files in this folder"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let evs = events(&out);
    let requested: Vec<&serde_json::Value> = evs.iter().filter(|e| e["event"] == "tool_requested").collect();
    assert_eq!(requested.len(), 3, "{:?}", names(&evs));
    assert!(requested.iter().all(|e| e["arguments"]["dir"] == "/path/to/folder"), "{requested:?}");
    let denied: Vec<&serde_json::Value> = evs.iter().filter(|e| e["event"] == "tool_denied").collect();
    assert_eq!(denied.len(), 1, "only the first call reached the gate");
    assert_eq!(denied[0]["rule"], "workspace_boundary");
    let repeats: Vec<&serde_json::Value> = evs.iter().filter(|e| e["event"] == "tool_call_repeated").collect();
    assert_eq!(repeats.len(), 2);
    assert!(repeats.iter().all(|e| e["rule"] == "workspace_boundary" && e["answered_from_record"] == false));
    assert!(!names(&evs).iter().any(|n| n == "tool_started"), "a repeat ran");
    let done = find(&evs, "run_completed");
    assert_eq!(done["stop_reason"], "stuck");
    assert_eq!(done["rounds"], 3);
}
