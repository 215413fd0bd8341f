//! `--approvals wait`: a run whose stdin is not a terminal waits for its owner's decision from
//! another process (`steward approve` / `steward deny`) until the approval expires; the
//! default stays fail-closed `no_approver` (tested in cli.rs).

use crate::common;

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{Env, Killed, code, events, find, names, stderr, stdout};

const TASK: &str = "replace 'old' with 'new' in note.txt";

/// A run in the background, killed when dropped; its output is read as it comes.
struct Background {
    process: Killed,
    stdout: Option<std::thread::JoinHandle<Vec<u8>>>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
}

fn read_all(mut from: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = from.read_to_end(&mut all);
        all
    })
}

/// Starts `steward run --json ARGS TASK` in the background, stdin from /dev/null.
fn start(env: &Env, extra: &[&str]) -> Background {
    env.write("note.txt", "old text\n");
    let args = [&["run", "--json"], extra, &[TASK]].concat();
    let mut child = env.command(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout = read_all(child.stdout.take().unwrap());
    let stderr = read_all(child.stderr.take().unwrap());
    Background { process: Killed(child), stdout: Some(stdout), stderr: Some(stderr) }
}

/// The one approval `steward approvals pending --json` lists, once it appears (60 s at most);
/// when none does, the failure shows what the run printed.
fn pending_id(env: &Env, run: &mut Background) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = env.steward(&["approvals", "pending", "--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        if let Some(line) = stdout(&out).lines().next() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["tool"], "edit", "{v}");
            return v["approval_id"].as_str().unwrap().to_string();
        }
        if Instant::now() >= deadline {
            let _ = run.process.0.kill();
            let _ = run.process.0.wait();
            let said = |h: &mut Option<std::thread::JoinHandle<Vec<u8>>>| {
                h.take()
                    .and_then(|h| h.join().ok())
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default()
            };
            let (out, err) = (said(&mut run.stdout), said(&mut run.stderr));
            panic!("no approval became pending within 60 s; the run printed:\n{out}\n{err}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits (60 s at most) for the run to end and returns its output.
fn finish(mut run: Background) -> Output {
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = run.process.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the run did not end");
        std::thread::sleep(Duration::from_millis(100));
    };
    let joined = |h: Option<std::thread::JoinHandle<Vec<u8>>>| h.map(|h| h.join().unwrap()).unwrap_or_default();
    Output { status, stdout: joined(run.stdout.take()), stderr: joined(run.stderr.take()) }
}

#[test]
fn a_waiting_run_goes_on_when_its_owner_approves_from_another_terminal_and_nobody_else_can() {
    let env = Env::new();
    let mut run = start(&env, &["--approvals", "wait"]);
    let id = pending_id(&env, &mut run);

    let mut other = env.command(&["approve", &id]);
    let other = other.env("USER", "mallory").output().unwrap();
    assert_eq!(code(&other), 1, "another owner cannot approve: {}", stderr(&other));
    assert!(stderr(&other).contains("not_owner"), "{}", stderr(&other));
    // Nor does another owner see it pending.
    let mut listed = env.command(&["approvals", "pending", "--json"]);
    let listed = listed.env("USER", "mallory").output().unwrap();
    assert_eq!(stdout(&listed), "", "another owner's pending approvals are not listed");
    assert_eq!(env.read("note.txt"), "old text\n");

    let approved = env.steward(&["approve", &id]);
    assert_eq!(code(&approved), 0, "{}", stderr(&approved));
    let out = finish(run);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert_eq!(find(&evs, "tool_approved")["approval_id"], id.as_str(), "{:?}", names(&evs));
    assert!(names(&evs).contains(&"tool_completed".to_string()), "{:?}", names(&evs));
    assert_eq!(env.read("note.txt"), "new text\n");
    assert!(stderr(&out).contains(&format!("steward approve {id}")), "says how to decide: {}", stderr(&out));

    let again = env.steward(&["approve", &id]);
    assert_eq!(code(&again), 1, "a decided approval cannot be decided again: {}", stderr(&again));
}

#[test]
fn a_denial_from_another_terminal_refuses_the_call() {
    let env = Env::new();
    let mut run = start(&env, &["--approvals", "wait"]);
    let id = pending_id(&env, &mut run);
    let denied = env.steward(&["deny", &id, "--reason", "not today"]);
    assert_eq!(code(&denied), 0, "{}", stderr(&denied));
    let out = finish(run);
    let evs = events(&out);
    let rejected = find(&evs, "tool_rejected");
    assert_eq!(rejected["reason"], "not today", "{rejected}");
    assert!(!names(&evs).contains(&"tool_started".to_string()));
    assert_eq!(env.read("note.txt"), "old text\n");
}

#[test]
fn without_a_decision_the_approval_expires_and_the_call_is_refused() {
    let env = Env::new();
    // `[run] approvals = "wait"` in the configuration does what the flag does.
    env.user_config("[run]\napprovals = \"wait\"\n\n[policy]\napproval_timeout_seconds = 4\n");
    let mut run = start(&env, &[]);
    let id = pending_id(&env, &mut run);
    let out = finish(run);
    let evs = events(&out);
    assert_eq!(find(&evs, "tool_approval_expired")["approval_id"], id.as_str(), "{:?}", names(&evs));
    assert!(!names(&evs).contains(&"tool_started".to_string()));
    assert_eq!(env.read("note.txt"), "old text\n");
    let late = env.steward(&["approve", &id]);
    assert_eq!(code(&late), 1, "an expired approval cannot be approved: {}", stderr(&late));
}

/// Changes the stored arguments of approval `id` in the database, as someone with write access
/// to it could between the request and the owner's decision.
fn tamper_stored_arguments(env: &Env, id: &str, arguments: &str) {
    use sqlx::Connection;
    let db = common::db(env);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&db);
        let mut conn = sqlx::SqliteConnection::connect_with(&options).await.unwrap();
        let changed = sqlx::query("UPDATE approvals SET arguments = ? WHERE id = ?")
            .bind(arguments)
            .bind(id)
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(changed.rows_affected(), 1);
    });
}

/// The approver approves the call it was shown (here: the arguments as changed in the
/// database); the run holds another call, so it refuses the approval and runs nothing.
#[test]
fn call_mismatch_an_approval_of_a_changed_stored_call_runs_nothing() {
    let env = Env::new();
    let mut run = start(&env, &["--approvals", "wait"]);
    let id = pending_id(&env, &mut run);
    tamper_stored_arguments(&env, &id, r#"{"path":"note.txt","old":"old","new":"harmless"}"#);
    let approved = env.steward(&["approve", &id]);
    assert_eq!(code(&approved), 0, "{}", stderr(&approved));
    assert!(stdout(&approved).contains("harmless"), "says what was approved: {}", stdout(&approved));
    let out = finish(run);
    let evs = events(&out);
    let rejected = find(&evs, "tool_rejected");
    assert!(rejected["reason"].as_str().unwrap().starts_with("call_mismatch"), "{rejected}");
    assert!(!names(&evs).contains(&"tool_started".to_string()), "{:?}", names(&evs));
    assert_eq!(env.read("note.txt"), "old text\n");
    let audit = stdout(&env.steward(&["audit", "list"]));
    assert!(audit.contains("call_mismatch"), "the refusal is audited: {audit}");
}
