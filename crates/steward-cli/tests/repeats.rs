//! Through the real binary with the fake provider: repeated calls are not run again (a run
//! that keeps repeating a refused call ends `stuck`, exit 3), and tool-call markup that could
//! not be used is never reported as an answer (`unparsed_tool_call`).

use crate::common;

use common::*;
use serde_json::Value;

fn count(evs: &[Value], name: &str) -> usize {
    evs.iter().filter(|e| e["event"] == name).count()
}

fn run_id(evs: &[Value]) -> String {
    find(evs, "run_started")["run_id"].as_str().unwrap().to_string()
}

#[test]
fn repeated_refused_call_is_not_run_again_and_the_run_ends_stuck_with_exit_3() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    // What a small local model did: the same refused call, again and again.
    let round = "[[round]]\n[[round.tool_call]]\nname = \"list\"\narguments = { path = \"/path/to/folder\" }\n";
    let path = scenario(&env, &round.repeat(5));
    let out =
        env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "list the files in this folder"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let evs = events(&out);
    let done = find(&evs, "run_completed");
    assert_eq!(done["stop_reason"], "stuck");
    assert_eq!(done["rounds"], 3, "stopped at the second repeat (limits.max_repeated_calls = 2)");
    assert!(done["final"].as_str().unwrap().contains("stuck"), "{done}");
    // The gate judged the first call only; the repeats never reached it.
    assert_eq!(count(&evs, "tool_denied"), 1);
    assert_eq!(count(&evs, "tool_started"), 0);
    let repeats: Vec<&Value> = evs.iter().filter(|e| e["event"] == "tool_call_repeated").collect();
    assert_eq!(repeats.len(), 2);
    assert_eq!(repeats[0]["rule"], "workspace_boundary");
    assert_eq!(repeats[0]["answered_from_record"], false);
    assert_eq!(repeats[1]["repeats"], 2);
    let told = repeats[0]["message"].as_str().unwrap();
    assert!(told.contains("workspace_boundary") && told.contains("`list` with `.` lists it"), "{told}");
    // Each repeat is an audit record, and the trace shows it.
    let id = run_id(&evs);
    let audit = audit(&env, &id);
    let repeated: Vec<&Value> = audit.iter().filter(|r| r["policy"] == "repeated_call").collect();
    assert_eq!(repeated.len(), 2, "{audit:?}");
    assert!(repeated.iter().all(|r| r["outcome"] == "blocked"));
    let show = stdout(&env.steward(&["show", &id]));
    assert!(show.contains("stuck") && show.contains("repeat 2 of"), "{show}");

    // The limit is configurable: one repeat is enough to stop.
    env.user_config("[limits]\nmax_repeated_calls = 1\n");
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "list"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let evs = events(&out);
    assert_eq!(find(&evs, "run_completed")["stop_reason"], "stuck");
    assert_eq!(count(&evs, "tool_call_repeated"), 1);
}

#[test]
fn repeated_unchanged_read_is_answered_from_the_record_not_run() {
    let env = Env::new();
    env.write("a.txt", "first line\n");
    let round = "[[round]]\n[[round.tool_call]]\nname = \"read\"\narguments = { path = \"./a.txt\" }\n";
    let path = scenario(&env, &format!("{}[[round]]\ntext = \"It says: first line.\"\n", round.repeat(2)));
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "read a.txt twice"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert_eq!(find(&evs, "run_completed")["stop_reason"], "answered");
    assert_eq!(count(&evs, "tool_started"), 1, "the second read was not run");
    let repeat = find(&evs, "tool_call_repeated");
    assert_eq!(repeat["answered_from_record"], true);
    assert_eq!(repeat["earlier_outcome"], "completed");
    let audit = audit(&env, &run_id(&evs));
    assert!(audit.iter().any(|r| r["policy"] == "repeated_call" && r["outcome"] == "reused"), "{audit:?}");
}

#[test]
fn tool_call_markup_that_cannot_be_used_is_never_the_answer() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    // Two bare JSON calls in a row, one naming a tool nobody offered: nothing runs, and the
    // model is told once before the run fails.
    let markup = r#"{"name": "edit", "arguments": {"path": "a.txt", "old": "x", "new": "y"}}
{"name": "rewrite_file", "arguments": {"path": "a.txt", "line": "1"}}"#;
    let round = format!("[[round]]\ntext = '''{markup}'''\n");
    let path = scenario(&env, &round.repeat(2));
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "edit a.txt"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let evs = events(&out);
    assert_eq!(count(&evs, "run_completed"), 0, "never reported as an answer");
    let failed = find(&evs, "run_failed");
    assert_eq!(failed["class"], "unparsed_tool_call");
    assert!(failed["error"].as_str().unwrap().contains("`rewrite_file` is not one of the offered tools"), "{failed}");
    let stage_failures: Vec<&Value> = evs.iter().filter(|e| e["event"] == "stage_failed").collect();
    assert_eq!(stage_failures.len(), 2);
    assert!(stage_failures.iter().all(|e| e["class"] == "unparsed_tool_call"));
    assert_eq!(count(&evs, "tool_requested"), 0);
    assert_eq!(env.read("a.txt"), "x\n");
    let show = stdout(&env.steward(&["show", &run_id(&evs)]));
    assert!(show.contains("failed [unparsed_tool_call]"), "{show}");

    // Told once, a model that answers in plain text gets its answer through.
    let path = scenario(&env, &format!("{round}[[round]]\ntext = \"I cannot edit it with these tools.\"\n"));
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "edit a.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let done = find(&evs, "run_completed");
    assert_eq!(done["stop_reason"], "answered");
    assert_eq!(done["final"], "I cannot edit it with these tools.");
    assert_eq!(count(&evs, "stage_failed"), 1);
}

#[test]
fn recovered_calls_in_a_row_with_quoted_numbers_are_coerced_audited_and_run() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\nthree\n");
    let markup = r#"{"name": "read", "arguments": {"path": "a.txt", "start_line": "2", "max_lines": "1"}}{"name": "list", "arguments": {"path": "."}}"#;
    let path = scenario(&env, &format!("[[round]]\ntext = '''{markup}'''\n[[round]]\ntext = \"Line two is two.\"\n"));
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "what is line 2?"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let requested: Vec<&Value> = evs.iter().filter(|e| e["event"] == "tool_requested").collect();
    assert_eq!(requested.len(), 2);
    assert_eq!(requested[0]["arguments"]["start_line"], 2, "\"2\" became the integer 2");
    assert_eq!(count(&evs, "tool_denied"), 0);
    let read = evs.iter().find(|e| e["event"] == "tool_completed" && e["tool"] == "read").expect("read ran");
    let output = read["output"].as_str().unwrap();
    assert!(output.contains("two") && !output.contains("three"), "{output}");
    let audit = audit(&env, &run_id(&evs));
    let repairs: Vec<&Value> = audit.iter().filter(|r| r["outcome"] == "repaired").collect();
    assert_eq!(repairs.len(), 2, "every recovered call is audited: {audit:?}");
    let repair = repairs[0];
    assert_eq!(repair["policy"], "text_recovery");
    let detail = repair["detail"].as_str().unwrap();
    assert!(detail.contains("`start_line`") && detail.contains("the json format"), "{repair}");
}

/// Starts `steward serve` for `env`, signs in with its login link and returns the server
/// (killed on drop) and the owner's session cookie.
async fn signed_in(env: &Env, http: &reqwest::Client) -> (Served, String) {
    let server = env.serve(&[]);
    let response = http.get(&server.login).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let cookie = response.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    (server, cookie)
}

#[tokio::test]
async fn web_run_and_trace_pages_show_repeats_and_the_stuck_stop() {
    let env = Env::new();
    let round = "[[round]]\n[[round.tool_call]]\nname = \"list\"\narguments = { path = \"/path/to/folder\" }\n";
    let path = scenario(&env, &round.repeat(3));
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "list"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let id = run_id(&events(&out));

    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (server, cookie) = signed_in(&env, &http).await;
    let base = server.base.clone();
    let page = |path: String| {
        let (http, cookie) = (http.clone(), cookie.clone());
        async move {
            let response = http.get(path).header("cookie", cookie).send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.text().await.unwrap()
        }
    };
    let run_page = page(format!("{base}/runs/{id}")).await;
    assert_eq!(run_page.matches("repeat, not run").count(), 2, "{run_page}");
    assert!(run_page.contains("Stopped: the model is stuck"), "{run_page}");
    let trace = page(format!("{base}/runs/{id}/trace")).await;
    assert_eq!(trace.matches("repeated call").count(), 2, "{trace}");
    assert!(trace.contains("Status completed (stuck)"), "{trace}");
}
