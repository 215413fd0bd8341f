//! `steward run` with a real local instruct model: Qwen2.5-Coder-0.5B-Instruct (Q4) served by
//! llama.cpp's `llama-server --jinja` and by llama-cpp-python's server. Named `peer_*` so they
//! run one at a time; each takes minutes on 2 cores, so their prompts are small and their
//! rounds few.
//!
//! They assert what the harness does with whatever the model writes, not how clever the model
//! is: a request that fits the server's window, every well-formed call recovered (audited as
//! repaired, naming its format), gated and run, and markup that cannot be used never run and
//! explained to the model. Sampling is greedy (`--temp 0`, fixed seed), and the tasks name the
//! tool to use, which this model does reliably in its first round.
//!
//! Needs `STEWARD_TEST_LLAMA_SERVER`, `STEWARD_TEST_QWEN_MODEL` and `STEWARD_TEST_LLAMA_PYTHON`
//! (`scripts/test.sh` sets them from `.ci/peers.sh`).

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const NOTES: &str = "The launch code word is PELICAN.\n";

fn fixture() -> Env {
    let env = Env::new();
    env.write("notes.txt", NOTES);
    env.write("src/main.py", "print('hello')\n");
    env.git_init();
    env
}

fn all<'a>(evs: &'a [Value], name: &str) -> Vec<&'a Value> {
    evs.iter().filter(|e| e["event"] == name).collect()
}

/// What the harness must have done with every call, whatever the model wrote: each requested
/// call has exactly one outcome; each one read from text is audited as repaired naming its
/// format; no tool ran in a round whose reply was unusable markup.
fn assert_every_call_accounted_for(env: &Env, evs: &[Value]) {
    let run_id = evs[0]["run_id"].as_str().unwrap();
    let audit = audit(env, run_id);
    for requested in all(evs, "tool_requested") {
        let id = &requested["call_id"];
        let outcomes = evs
            .iter()
            .filter(|e| {
                e["call_id"] == *id
                    && ["tool_completed", "tool_failed", "tool_denied", "tool_rejected", "tool_call_repeated"]
                        .contains(&e["event"].as_str().unwrap_or_default())
            })
            .count();
        assert_eq!(outcomes, 1, "call {id} has {outcomes} outcomes: {evs:#?}");
        if id.as_str().unwrap().starts_with("call_recovered") {
            let repaired = audit.iter().find(|r| r["call_id"] == *id && r["outcome"] == "repaired");
            let detail = repaired.unwrap_or_else(|| panic!("{id} not audited as repaired: {audit:#?}"))["detail"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(detail.contains("format"), "{detail}");
        }
    }
    // A round that failed as unusable markup proposed nothing that ran: the next tool event,
    // if any, belongs to a later round.
    for (i, e) in evs.iter().enumerate() {
        if e["event"] == "stage_failed" && e["class"] == "unparsed_tool_call" {
            let next = evs[i + 1..].iter().find(|n| n["event"] == "stage_started" || n["event"] == "tool_started");
            assert!(next.is_none_or(|n| n["event"] == "stage_started"), "a tool ran after unusable markup: {evs:#?}");
            assert!(e["error"].as_str().unwrap().contains("could not be used"), "{e}");
        }
    }
}

/// `steward run --json` of `task` against the model `qwen` at `url`, 60 tokens a reply and at
/// most `rounds` rounds; its events, which must not be none.
fn run_qwen(env: &Env, url: &str, rounds: u32, task: &str) -> Vec<Value> {
    let rounds = rounds.to_string();
    let out = env.steward(&[
        "run",
        "--json",
        "--base-url",
        url,
        "--model",
        "qwen",
        "--max-tokens",
        "60",
        "--max-rounds",
        &rounds,
        task,
    ]);
    let evs = events(&out);
    assert!(!evs.is_empty(), "{}", stderr(&out));
    evs
}

#[test]
fn peer_qwen_in_a_2048_token_window_gets_a_fitted_prompt_and_reads_a_file_through_a_real_call() {
    let started = Instant::now();
    let server = steward_peers::qwen_llama_server(2048);
    let env = fixture();
    let url = format!("{}/v1", server.url());
    // The whole catalog (13 tools) is far more than 2,048 tokens: the prompt must be fitted.
    let evs = run_qwen(&env, &url, 2, "Use the read tool to read notes.txt, then tell me the code word it holds.");
    let fitted = find(&evs, "prompt_fitted");
    assert_eq!(fitted["window"], 2048, "{fitted}");
    assert_eq!(fitted["window_source"], "server");
    assert_eq!(fitted["reserved_for_reply"], 60);
    let estimated = fitted["estimated_tokens"].as_u64().unwrap();
    assert!(fitted["before_tokens"].as_u64().unwrap() > 2048 && estimated <= 2048 - 60, "{fitted}");
    assert_eq!(fitted["descriptions_shortened"], true, "{fitted}");
    // The server accepted the fitted request, and counted no more tokens than estimated.
    let first = all(&evs, "stage_completed").into_iter().find(|e| e["round"] == 1).unwrap_or_else(|| {
        panic!("the first request was not answered: {evs:#?}");
    });
    let counted = first["usage"]["input_tokens"].as_u64().unwrap();
    assert!(counted > 0 && counted <= estimated, "server counted {counted}, estimate {estimated}");
    // The model named the tool in the task: its call was recovered, allowed (a read) and run.
    let requested = all(&evs, "tool_requested");
    assert_eq!(requested.first().map(|r| r["tool"].clone()), Some("read".into()), "{evs:#?}");
    let read = all(&evs, "tool_completed").into_iter().find(|e| e["tool"] == "read").expect("read ran");
    assert!(read["output"].as_str().unwrap().contains("PELICAN"), "{read}");
    assert_every_call_accounted_for(&env, &evs);
    // Whatever the second round did, the run ended in one of the ways the harness defines.
    let last = evs.last().unwrap();
    assert!(["run_completed", "run_failed"].contains(&last["event"].as_str().unwrap()), "{last}");
    let show = env.steward(&["show", evs[0]["run_id"].as_str().unwrap()]);
    assert!(stdout(&show).contains("prompt fitted to a 2048-token window"), "{}", stdout(&show));
    eprintln!("peer_qwen fitted read: {:?}", started.elapsed());
}

#[test]
fn peer_qwen_edit_waits_for_the_owners_approval_and_runs_once_approved() {
    let started = Instant::now();
    let server = steward_peers::qwen_llama_server(2048);
    let env = fixture();
    env.user_config("[run]\ntools = [\"edit\"]\n");
    let url = format!("{}/v1", server.url());
    let task = "Use the edit tool on notes.txt to replace PELICAN with HERON.";
    let args = ["run", "--json", "--approvals", "wait", "--base-url", &url, "--model", "qwen", "--max-tokens", "80"];
    let args = [&args[..], &["--max-rounds", "1", task]].concat();
    let mut child = env.command(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout_pipe = child.stdout.take().unwrap();
    let stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout_pipe).unwrap_or_default());
    let errors = std::thread::spawn(move || std::io::read_to_string(stderr_pipe).unwrap_or_default());
    let mut child = Killed(child);
    // The test is the owner's approver, from another process.
    let deadline = Instant::now() + Duration::from_secs(600);
    let approval = loop {
        let out = env.steward(&["approvals", "pending", "--json"]);
        if let Some(line) = stdout(&out).lines().next() {
            break serde_json::from_str::<Value>(line).unwrap();
        }
        if let Some(status) = child.0.try_wait().unwrap() {
            let (out, err) = (reader.join().unwrap(), errors.join().unwrap());
            panic!("the run ended ({status}) without asking: {out}\nstderr: {err}");
        }
        assert!(Instant::now() < deadline, "no approval was asked for within 10 minutes");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(approval["tool"], "edit", "{approval}");
    assert_eq!(env.read("notes.txt"), NOTES, "nothing changed before the approval");
    let id = approval["approval_id"].as_str().unwrap();
    let approved = env.steward(&["approve", id]);
    assert_eq!(code(&approved), 0, "{}", stderr(&approved));
    let status = child.0.wait().unwrap();
    let text = reader.join().unwrap();
    let evs: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(status.code().is_some(), "{text}");
    let requested = find(&evs, "tool_requested");
    assert_eq!(requested["tool"], "edit");
    assert_eq!(requested["arguments"]["path"], "notes.txt", "{requested}");
    find(&evs, "tool_approval_required");
    find(&evs, "tool_approved");
    let completed = all(&evs, "tool_completed");
    let failed = all(&evs, "tool_failed");
    // Approved, the edit ran: it changed the file as its arguments said, or failed and said why
    // (a model may quote the text wrongly); either way exactly once.
    assert_eq!(completed.len() + failed.len(), 1, "{evs:#?}");
    if completed.len() == 1 {
        let new = requested["arguments"]["new"].as_str().unwrap();
        assert!(env.read("notes.txt").contains(new), "{}", env.read("notes.txt"));
    } else {
        assert_eq!(env.read("notes.txt"), NOTES);
    }
    assert_every_call_accounted_for(&env, &evs);
    eprintln!("peer_qwen approved edit: {:?}", started.elapsed());
}

/// Held to the reply schema on every round (`constrained = "on"`; llama-server is recognised
/// by its `/props`), every reply is a call of an offered tool with valid arguments or the
/// answer: nothing the model writes is refused as markup, undeclared or malformed.
#[test]
fn peer_qwen_held_to_the_reply_schema_only_calls_offered_tools_and_never_writes_unusable_markup() {
    let started = Instant::now();
    let server = steward_peers::qwen_llama_server(4096);
    let env = fixture();
    env.user_config(&format!(
        "[run]\ntools = [\"read\", \"list\", \"search\"]\n[providers.qwen]\nkind = \"openai\"\n\
         base_url = \"{}/v1\"\nprobe_context_window = true\nconstrained = \"on\"\n",
        server.url()
    ));
    let task = "What is the code word in notes.txt?";
    let out = env.steward(&["run", "--json", "--provider", "qwen", "--model", "qwen", "--max-rounds", "3", task]);
    let evs = events(&out);
    assert!(!evs.is_empty(), "{}", stderr(&out));
    let stages = all(&evs, "stage_completed");
    assert!(!stages.is_empty() && stages.iter().all(|e| e["constrained"] == true), "{evs:#?}");
    assert!(all(&evs, "stage_failed").is_empty(), "no reply was unusable: {evs:#?}");
    for requested in all(&evs, "tool_requested") {
        assert!(["read", "list", "search"].contains(&requested["tool"].as_str().unwrap()), "{requested}");
    }
    assert!(evs.iter().all(|e| e["rule"] != "invalid_tool_call"), "{evs:#?}");
    assert_every_call_accounted_for(&env, &evs);
    let last = evs.last().unwrap();
    assert_eq!(last["event"], "run_completed", "{last}");
    eprintln!("peer_qwen constrained: {:?}, ended {} with {:?}", started.elapsed(), last["stop_reason"], last["final"]);
}

#[test]
fn peer_qwen_on_llama_cpp_python_writes_its_call_as_text_and_it_is_recovered_and_gated() {
    let started = Instant::now();
    let server = steward_peers::qwen_llama_cpp_python();
    let env = fixture();
    env.user_config("[run]\ntools = [\"read\"]\n");
    let url = format!("{}/v1", server.url());
    let evs = run_qwen(&env, &url, 1, "Use the read tool to read notes.txt.");
    // This server's chat path passes the model's markup through as text: only Steward's text
    // recovery can make it a call.
    let requested = find(&evs, "tool_requested");
    assert_eq!(requested["tool"], "read", "{requested}");
    assert!(requested["call_id"].as_str().unwrap().starts_with("call_recovered"), "{requested}");
    let read = find(&evs, "tool_completed");
    assert!(read["output"].as_str().unwrap().contains("PELICAN"), "{read}");
    assert_every_call_accounted_for(&env, &evs);
    eprintln!("peer_qwen llama-cpp-python text call: {:?}", started.elapsed());
}

#[test]
fn a_prompt_that_cannot_fit_the_configured_window_fails_before_any_request() {
    let env = fixture();
    // Nothing listens on port 9: a request would fail as `provider_unreachable`.
    env.user_config(
        "[providers.tiny]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\ndefault_model = \"m\"\n\
         context_window = 300\nretry_backoff_ms = 1\n",
    );
    let out = env.steward(&["run", "--json", "--provider", "tiny", "--max-tokens", "100", "Read notes.txt"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let evs = events(&out);
    let failed = find(&evs, "run_failed");
    assert_eq!(failed["class"], "context_overflow", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(error.contains("context window of 300 tokens") && error.contains("100 kept for the reply"), "{error}");
    assert!(all(&evs, "stage_started").is_empty(), "no model call was made: {evs:#?}");
}

#[test]
fn a_call_of_a_tool_left_out_by_run_tools_is_refused_and_the_model_told_why() {
    let env = fixture();
    let path = scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nname = \"list\"\narguments = { path = \".\" }\n\
         [[round.tool_call]]\nname = \"read\"\narguments = { path = \"notes.txt\" }\n[[round]]\ntext = \"PELICAN\"\n",
    );
    env.user_config(&format!("[run]\ntools = [\"read\"]\n[providers.local]\nkind = \"fake\"\nscenario = \"{path}\"\n"));
    let out = env.steward(&["run", "--json", "--provider", "local", "what is the code word?"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let denied = find(&evs, "tool_denied");
    assert_eq!(denied["tool"], "list");
    assert_eq!(denied["rule"], "invalid_tool_call");
    assert!(denied["reason"].as_str().unwrap().contains("was not offered"), "{denied}");
    let ran: Vec<&Value> = all(&evs, "tool_started");
    assert_eq!(ran.len(), 1, "only the offered tool ran: {ran:?}");
    assert_eq!(ran[0]["tool"], "read");
}
