//! `steward serve` as a user runs it: the one-time login link makes the browser the local
//! owner, so a run started with `steward run` in a terminal shows up in the web UI and its
//! approval can be given there; the terminal prompt takes the answer and the call runs.

use crate::common;

use std::time::{Duration, Instant};

use common::{Env, Served, Terminal, scenario};
use serde_json::{Value, json};

/// Signs in with the login link; returns the owner cookie and the CSRF token.
async fn sign_in(http: &reqwest::Client, base: &str, login: &str) -> (String, String) {
    let response = http.get(login).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let cookie = response.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let page = http.get(format!("{base}/")).header("cookie", &cookie).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("<code id=\"owner\">local:tester</code>"), "signed in as the local owner");
    let at = page.find("name=\"csrf-token\" content=\"").unwrap() + "name=\"csrf-token\" content=\"".len();
    (cookie, page[at..at + 64].to_string())
}

/// A browser signed in to `steward serve`, looking at the pending approval of a terminal run.
struct Browser {
    _server: Served,
    base: String,
    http: reqwest::Client,
    cookie: String,
    csrf: String,
    /// The pending approval's id.
    approval: String,
}

impl Browser {
    /// Posts `decision` (the JSON body) on the pending approval.
    async fn decide(&self, decision: Value) -> reqwest::Response {
        self.http
            .post(format!("{}/api/approvals/{}", self.base, self.approval))
            .header("cookie", &self.cookie)
            .header("x-csrf-token", &self.csrf)
            .json(&decision)
            .send()
            .await
            .unwrap()
    }
}

/// A terminal run (`steward run` on a terminal, so it prompts and waits instead of failing
/// closed) whose edit of `note.txt` waits for approval, and the browser that sees it pending.
async fn terminal_run_waiting_in_the_browser(env: &Env) -> (Browser, Terminal) {
    env.write("note.txt", "old\n");
    let script = scenario(
        env,
        r#"
[[round]]
text = "Editing."
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "old", new = "new" }
[[round]]
text = "Changed."
"#,
    );
    let server = env.serve(&[]);
    let (base, login) = (server.base.clone(), server.login.clone());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (cookie, csrf) = sign_in(&http, &base, &login).await;
    let run = Terminal::start(env, &format!("run 'change the note' --provider fake --scenario {script}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let approval = loop {
        assert!(Instant::now() < deadline, "the terminal run never showed a pending approval in the web UI");
        let runs: Value =
            http.get(format!("{base}/api/runs")).header("cookie", &cookie).send().await.unwrap().json().await.unwrap();
        if let Some(id) = runs["runs"].as_array().and_then(|r| r.first()).and_then(|r| r["id"].as_str()) {
            let trace: Value = http
                .get(format!("{base}/api/runs/{id}"))
                .header("cookie", &cookie)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if let Some(a) = trace["approvals"].as_array().and_then(|a| a.iter().find(|a| a["status"] == "pending")) {
                break a["id"].as_str().unwrap().to_string();
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    (Browser { _server: server, base, http, cookie, csrf, approval }, run)
}

#[tokio::test]
async fn a_terminal_run_is_approved_in_the_browser() {
    let env = Env::new();
    let (browser, run) = terminal_run_waiting_in_the_browser(&env).await;
    let decided = browser.decide(json!({"decision": "approve"})).await;
    assert_eq!(decided.status(), 200, "{}", decided.text().await.unwrap());

    let (ok, out) = run.finish();
    assert!(ok, "steward run failed: {out}");
    assert!(out.contains("approved in the web UI or another terminal by local:tester"), "{out}");
    assert_eq!(env.read("note.txt"), "new\n");

    // A second decision on the same approval is refused.
    let again = browser.decide(json!({"decision": "deny"})).await;
    assert_eq!(again.status(), 409);
}

/// An approval sent with the hash of another call than the one the run holds (what a page
/// shows after the stored request was changed) is refused by the run: nothing is changed.
#[tokio::test]
async fn call_mismatch_a_browser_approval_of_another_call_runs_nothing() {
    let env = Env::new();
    let (browser, run) = terminal_run_waiting_in_the_browser(&env).await;
    let decided = browser.decide(json!({"decision": "approve", "call_hash": "0".repeat(64)})).await;
    assert_eq!(decided.status(), 200, "{}", decided.text().await.unwrap());
    let (_, out) = run.finish();
    assert!(out.contains("call_mismatch"), "{out}");
    assert_eq!(env.read("note.txt"), "old\n");
}
