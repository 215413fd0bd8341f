//! Two `steward serve` nodes on one PostgreSQL database (SPEC §16 D, H3), as real processes
//! with their own state directories and ports, sharing one session key file:
//! - a run started on node B is watched through node A's event stream (woken by B's change
//!   notices) and approved through node A; B picks the decision up and completes the run;
//!   another owner gets `not_owner` on either node;
//! - node B is killed (`kill -9`) while a run waits on an approval: after the lease lifetime
//!   node A reports it `interrupted` with the approval `expired`, and the tool never ran;
//! - a `steward run` node paused (`kill -STOP`) past the lease lifetime resumes after node A
//!   recovered its run: it runs no further tool call and leaves the run `interrupted`.
//!
//! The database is a fresh schema of `STEWARD_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`), dropped at the end; without a reachable
//! PostgreSQL the tests fail (`STEWARD_TEST_SKIP=postgres` opts out: `steward_peers::needs`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;
use std::time::{Duration, Instant};

use common::{Env, Killed, Served};
use serde_json::{Value, json};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

/// Lease lifetime and renewal interval the nodes run with, in seconds.
const LEASE_TTL: &str = "3";
const LEASE_RENEW: &str = "1";
/// How often the nodes' event streams look at the store in case a change notice was lost:
/// longer than any wait of these tests, so only a notice can wake a stream in time.
const NOTICE_POLL: Duration = Duration::from_secs(3600);
/// How long a change on one node may take to show on the other: generous, for a loaded
/// machine, and still far below [`NOTICE_POLL`].
const NOTICE_DEADLINE: Duration = Duration::from_secs(30);

/// A schema of its own in the test database, dropped when this is dropped.
struct Schema {
    base: String,
    name: String,
}

impl Schema {
    async fn create() -> Schema {
        let (base, name) = steward_peers::fresh_postgres_schema().await;
        Schema { base, name }
    }

    /// The URL the nodes get: the test database with this schema first on the search path.
    fn url(&self) -> String {
        steward_peers::with_search_path(&self.base, &self.name)
    }

    /// The first column of every row of `sql`, run in the schema.
    async fn column(&self, sql: &str) -> Vec<String> {
        let connect = PgConnectOptions::from_str(&self.url()).unwrap();
        let mut conn = PgConnection::connect_with(&connect).await.unwrap();
        let rows: Vec<(String,)> =
            sqlx::query_as(sqlx::AssertSqlSafe(sql.to_string())).fetch_all(&mut conn).await.unwrap();
        conn.close().await.unwrap();
        rows.into_iter().map(|(v,)| v).collect()
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let (base, name) = (self.base.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            runtime.block_on(async {
                let connect = PgConnectOptions::from_str(&base).ok()?;
                let mut conn = PgConnection::connect_with(&connect).await.ok()?;
                sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {name} CASCADE")))
                    .execute(&mut conn)
                    .await
                    .ok()?;
                conn.close().await.ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(()))) {
            eprintln!("notice: the test schema could not be dropped");
        }
    }
}

/// One `steward serve` node.
type Node = Served;

/// Starts `steward serve` as node `name` on the shared database, serving `workspaces`. Its event
/// streams look at the store on their own only every [`NOTICE_POLL`], so whatever reaches
/// them sooner came through the database's change notices.
fn start_node(env: &Env, name: &str, url: &str, key_file: &Path, scenario: &Path, workspaces: &[PathBuf]) -> Node {
    let mut args = vec![
        "--scenario".to_string(),
        scenario.display().to_string(),
        "--session-key-file".into(),
        key_file.display().to_string(),
    ];
    for w in workspaces {
        args.push("--workspace".into());
        args.push(w.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = env.serve_command(&args);
    command
        .env("STEWARD_DATABASE_URL", url)
        .env("STEWARD_NODE", name)
        // Nodes sharing a database share the audit chain's key.
        .env("STEWARD_AUDIT_KEY", "5e7a11ed5e7a11ed5e7a11ed5e7a11ed")
        .env("STEWARD_LEASE_TTL_SECONDS", LEASE_TTL)
        .env("STEWARD_LEASE_RENEW_SECONDS", LEASE_RENEW)
        .env("STEWARD_NOTICE_POLL_SECONDS", NOTICE_POLL.as_secs().to_string());
    Served::start(command)
}

/// Signs in with the login link; returns the owner cookie and the CSRF token.
async fn sign_in(http: &reqwest::Client, node: &Node) -> (String, String) {
    let response = http.get(&node.login).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let cookie = response.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    (cookie.clone(), csrf_of(http, &node.base, &cookie).await)
}

/// The owner id and CSRF token a page of `base` shows to the holder of `cookie`.
async fn csrf_of(http: &reqwest::Client, base: &str, cookie: &str) -> String {
    let page = http.get(format!("{base}/")).header("cookie", cookie).send().await.unwrap().text().await.unwrap();
    let at = page.find("name=\"csrf-token\" content=\"").unwrap() + "name=\"csrf-token\" content=\"".len();
    page[at..at + 64].to_string()
}

async fn get_json(http: &reqwest::Client, url: &str, cookie: &str) -> Value {
    http.get(url).header("cookie", cookie).send().await.unwrap().json().await.unwrap()
}

async fn start_run(http: &reqwest::Client, node: &Node, cookie: &str, csrf: &str, workspace: &Path) -> String {
    let started = http
        .post(format!("{}/api/runs", node.base))
        .header("cookie", cookie)
        .header("x-csrf-token", csrf)
        .json(&json!({"task": "change the note", "provider": "fake", "workspace": workspace.display().to_string()}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 201);
    let started: Value = started.json().await.unwrap();
    started["id"].as_str().unwrap().to_string()
}

/// Reads an SSE response until `until` accepts an event, for at most [`NOTICE_DEADLINE`];
/// returns every event read, as `(name, data)`.
async fn read_sse(response: &mut reqwest::Response, until: impl Fn(&str) -> bool) -> Vec<(String, Value)> {
    let mut buffer = String::new();
    let mut events = Vec::new();
    let deadline = Instant::now() + NOTICE_DEADLINE;
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let name = block.lines().find_map(|l| l.strip_prefix("event:")).map(|n| n.trim().to_string());
            let data = block.lines().find_map(|l| l.strip_prefix("data:")).map(|d| d.trim().to_string());
            if let (Some(name), Some(data)) = (name, data) {
                let stop = until(&name);
                events.push((name, serde_json::from_str(&data).unwrap()));
                if stop {
                    return events;
                }
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, response.chunk()).await.expect("the event stream went quiet");
        match chunk.unwrap() {
            Some(bytes) => buffer.push_str(&String::from_utf8_lossy(&bytes)),
            None => panic!("the event stream ended early; got {:?}", events.iter().map(|e| &e.0).collect::<Vec<_>>()),
        }
    }
}

/// Polls node `base` for run `id` until `ready` accepts its trace (at most `wait`).
async fn wait_trace(
    http: &reqwest::Client,
    base: &str,
    cookie: &str,
    id: &str,
    wait: Duration,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + wait;
    loop {
        let trace = get_json(http, &format!("{base}/api/runs/{id}"), cookie).await;
        if ready(&trace) {
            return trace;
        }
        assert!(Instant::now() < deadline, "run {id} never got there; last seen: {trace}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn peer_two_nodes_share_runs_approvals_and_recover_a_killed_node_on_postgres() {
    let schema = Schema::create().await;
    let url = schema.url();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let env_a = Env::new();
    let env_b = Env::new();
    // Two workspaces on node B, each with a note the scenario edits after an approval.
    let ws1 = env_b.ws();
    let ws2 = env_b.dir.path().join("ws2");
    std::fs::create_dir_all(&ws2).unwrap();
    std::fs::write(ws1.join("note.txt"), "old\n").unwrap();
    std::fs::write(ws2.join("note.txt"), "old\n").unwrap();
    let scenario = env_b.dir.path().join("scenario.toml");
    std::fs::write(
        &scenario,
        r#"
[[round]]
text = "Editing."
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "old", new = "new" }
[[round]]
text = "Changed."
"#,
    )
    .unwrap();
    // The session key every node reads: 64 random bytes as hex, owner-only.
    let key_file = env_a.dir.path().join("shared-session.key");
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&key_file).unwrap();
        file.write_all(hex::encode(rand::random::<[u8; 64]>()).as_bytes()).unwrap();
    }

    let node_b = start_node(&env_b, "node-b", &url, &key_file, &scenario, &[ws1.clone(), ws2.clone()]);
    let node_a = start_node(&env_a, "node-a", &url, &key_file, &scenario, &[env_a.ws()]);
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (cookie, csrf) = sign_in(&http, &node_b).await;
    assert_eq!(csrf_of(&http, &node_a.base, &cookie).await, csrf, "node A accepts node B's owner cookie");

    // Run 1: started on B, watched and approved through A, completed on B.
    let run1 = start_run(&http, &node_b, &cookie, &csrf, &ws1).await;
    // Node A knows the run once node B has stored it (B answers while the run may still queue).
    wait_trace(&http, &node_a.base, &cookie, &run1, Duration::from_secs(30), |t| t["run"]["id"] == run1.as_str()).await;
    let mut stream =
        http.get(format!("{}/api/runs/{run1}/events", node_a.base)).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    let seen = read_sse(&mut stream, |name| name == "tool_approval_required").await;
    let approval = seen.last().unwrap().1["approval_id"].as_str().expect("the approval id").to_string();

    // Another owner (a browser that never signed in) is refused on node A.
    let stranger = http.get(format!("{}/", node_a.base)).send().await.unwrap();
    let stranger_cookie = stranger.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let stranger_csrf = csrf_of(&http, &node_a.base, &stranger_cookie).await;
    let refused = http
        .post(format!("{}/api/approvals/{approval}", node_a.base))
        .header("cookie", &stranger_cookie)
        .header("x-csrf-token", &stranger_csrf)
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    assert!(refused.text().await.unwrap().contains("not_owner"));

    let decided_at = Instant::now();
    let decided = http
        .post(format!("{}/api/approvals/{approval}", node_a.base))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), 200, "{}", decided.text().await.unwrap());
    let rest = read_sse(&mut stream, |name| name == "run_completed" || name == "run_failed").await;
    let names: Vec<&str> = rest.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"tool_approved") && names.contains(&"tool_completed"), "{names:?}");
    assert_eq!(names.last(), Some(&"run_completed"), "{names:?}");
    // Node B learns of the decision only through a notice (it never polls for one), and node
    // A's stream sees B's events within the deadline only through notices (NOTICE_POLL).
    assert!(decided_at.elapsed() < NOTICE_DEADLINE, "took {:?}", decided_at.elapsed());
    assert_eq!(std::fs::read_to_string(ws1.join("note.txt")).unwrap(), "new\n");
    let on_b = get_json(&http, &format!("{}/api/runs/{run1}", node_b.base), &cookie).await;
    assert_eq!(on_b["run"]["status"], "completed");
    assert_eq!(schema.column(&format!("SELECT node FROM runs WHERE id = '{run1}'")).await, vec!["node-b"]);

    // Run 2: parked on an approval on B when B is killed.
    let run2 = start_run(&http, &node_b, &cookie, &csrf, &ws2).await;
    wait_trace(&http, &node_a.base, &cookie, &run2, Duration::from_secs(30), |t| {
        t["approvals"].as_array().is_some_and(|a| a.iter().any(|a| a["status"] == "pending"))
    })
    .await;
    let Served { process: mut b_process, .. } = node_b;
    b_process.0.kill().unwrap(); // SIGKILL: no chance to record anything
    b_process.0.wait().unwrap();
    let killed_at = Instant::now();
    let trace = wait_trace(&http, &node_a.base, &cookie, &run2, Duration::from_secs(30), |t| {
        t["run"]["status"] == "interrupted"
    })
    .await;
    let after = killed_at.elapsed();
    assert!(after >= Duration::from_secs(2), "interrupted only once the lease expired, not after {after:?}");
    let error = trace["run"]["record"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("lease"), "{error}");
    assert_eq!(
        schema.column(&format!("SELECT status FROM approvals WHERE run_id = '{run2}'")).await,
        vec!["expired"],
        "the pending approval expired in the store"
    );
    // Nothing re-runs it: the edit never happened, also after several more lease lifetimes.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(std::fs::read_to_string(ws2.join("note.txt")).unwrap(), "old\n");
    let trace = get_json(&http, &format!("{}/api/runs/{run2}", node_a.base), &cookie).await;
    assert_eq!(trace["run"]["status"], "interrupted");
    let names: Vec<&str> = trace["events"].as_array().unwrap().iter().filter_map(|e| e["event"].as_str()).collect();
    assert!(!names.contains(&"tool_started") && !names.contains(&"tool_completed"), "{names:?}");
    let outcomes = schema.column(&format!("SELECT outcome FROM audit WHERE run_id = '{run2}' ORDER BY seq")).await;
    assert!(!outcomes.iter().any(|o| o == "completed" || o == "approved" || o == "failed"), "{outcomes:?}");
    drop(node_a);
}

#[tokio::test]
async fn peer_a_paused_node_resumes_without_running_the_call_of_a_recovered_run_on_postgres() {
    let schema = Schema::create().await;
    let url = schema.url();
    let env_a = Env::new();
    let env_b = Env::new();
    std::fs::write(env_b.ws().join("a.txt"), "hello\n").unwrap();
    let scenario = env_b.dir.path().join("scenario.toml");
    std::fs::write(
        &scenario,
        r#"
[[round]]
delay_ms = 2000
text = "Reading."
[[round.tool_call]]
name = "read"
arguments = { path = "a.txt" }
[[round]]
text = "Read it."
"#,
    )
    .unwrap();
    let key_file = env_a.dir.path().join("shared-session.key");
    std::fs::write(&key_file, hex::encode(rand::random::<[u8; 64]>())).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let node_a = start_node(&env_a, "node-a", &url, &key_file, &scenario, &[env_a.ws()]);
    let scenario_arg = scenario.display().to_string();
    let mut b = Killed(
        env_b
            .command(&["run", "--json", "--provider", "fake", "--scenario", &scenario_arg, "read the file"])
            .env("STEWARD_DATABASE_URL", &url)
            .env("STEWARD_NODE", "node-b")
            .env("STEWARD_LEASE_TTL_SECONDS", LEASE_TTL)
            .env("STEWARD_LEASE_RENEW_SECONDS", LEASE_RENEW)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start steward run"),
    );
    let started = Instant::now();
    let run_id = loop {
        let ids = schema.column("SELECT id FROM runs WHERE node = 'node-b'").await;
        if let Some(id) = ids.into_iter().next() {
            break id;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "node B never stored its run");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Paused while its planner waits, for more than twice the lease lifetime: node A recovers.
    let pid = b.0.id().to_string();
    assert!(std::process::Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    // At least twice the lease lifetime, then up to 60 s for node A's recovery on a busy machine.
    let paused = Instant::now();
    let status = loop {
        let status = schema.column(&format!("SELECT status FROM runs WHERE id = '{run_id}'")).await;
        let waited = paused.elapsed();
        if (waited >= Duration::from_secs(7) && status == ["interrupted"]) || waited >= Duration::from_secs(60) {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let resumed = std::process::Command::new("kill").args(["-CONT", &pid]).status().unwrap().success();
    assert!(resumed);
    assert_eq!(status, vec!["interrupted"], "node A recovered the paused node's run");
    // Node B resumes and ends without running the call or finishing the run its own way.
    let deadline = Instant::now() + Duration::from_secs(30);
    while b.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "node B did not stop");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        schema.column(&format!("SELECT status FROM runs WHERE id = '{run_id}'")).await,
        vec!["interrupted"],
        "the recovery is not overwritten"
    );
    let outcomes = schema.column(&format!("SELECT outcome FROM audit WHERE run_id = '{run_id}' ORDER BY seq")).await;
    assert!(!outcomes.iter().any(|o| o == "approved" || o == "completed"), "{outcomes:?}");
    drop(node_a);
}
