//! The real `steward hub` binary against a ledger served by this test (the wire contract of
//! `steward_ledger::wire`), killed with `STEWARD_HUB_CRASH_AT` at each journal step, 20 times
//! per step (SQLite; 5 per step with the state in PostgreSQL), then restarted: no request is
//! executed twice, none is lost (each ends completed or held and listed), and a crash right
//! after launch is never re-run. Also the hub against the real ledger of `steward serve`.

use crate::common;

#[path = "../../steward-ledger/tests/common/fake_ledger.rs"]
mod fake_ledger;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;

use common::{Env, Killed, code, stderr, stdout};
use std::sync::Arc;

use sqlx::Connection;
use steward_store::{JournalState, JournalStore, PgStore, SqliteStore, Store, StoreOptions};

const ROUNDS: u64 = 20;
const POINTS: [&str; 5] = ["after_intent", "before_claim", "after_claim", "after_launch", "after_result"];

struct Hub {
    env: Env,
    repo: std::path::PathBuf,
    head: String,
    url: String,
    ledger: fake_ledger::Shared,
    /// `STEWARD_DATABASE_URL` for the hub (a fresh schema), or `None` for `steward.db`.
    database_url: Option<String>,
}

async fn hub_env() -> Hub {
    let env = Env::new();
    let repo = env.dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let head = fake_ledger::git_repo(&repo, "Add a feature");
    let (url, ledger) = fake_ledger::serve().await;
    let token = env.dir.path().join("hub.token");
    std::fs::write(&token, fake_ledger::TOKEN).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(env.dir.path().join("scenario.toml"), "[[round]]\ntext = \"Summary: adds feature.txt.\"\n").unwrap();
    Hub { env, repo, head, url, ledger, database_url: None }
}

/// The test database (`STEWARD_TEST_DATABASE_URL`, default the local server) with a fresh
/// schema first on the search path; the test fails when it cannot be reached (or PostgreSQL is
/// opted out of: `steward_peers::needs`).
async fn pg_schema() -> String {
    let (base, name) = steward_peers::fresh_postgres_schema().await;
    steward_peers::with_search_path(&base, &name)
}

impl Hub {
    fn pr(&self, n: u64) {
        let ok = std::process::Command::new("git")
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE")
            .arg("-C")
            .arg(&self.repo)
            .args(["update-ref", &format!("refs/pull/{n}/head"), &self.head])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    async fn run(&self, crash: Option<&str>) -> std::process::Output {
        let dir = self.env.dir.path();
        let mut cmd = self.env.command(&[
            "hub",
            "--once",
            "--url",
            &self.url,
            "--token-file",
            &dir.join("hub.token").display().to_string(),
            "--repo",
            &format!("demo={}", self.repo.display()),
            "--hub-id",
            "hub:test",
            "--provider",
            "fake",
            "--scenario",
            &dir.join("scenario.toml").display().to_string(),
        ]);
        if let Some(point) = crash {
            cmd.env("STEWARD_HUB_CRASH_AT", point);
        }
        if let Some(url) = &self.database_url {
            cmd.env("STEWARD_DATABASE_URL", url);
        }
        // Worktrees of killed hubs stay inside the test's directory.
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        cmd.env("TMPDIR", tmp);
        tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
    }

    /// The hub's state store and journal (the same database).
    async fn store(&self) -> (Arc<dyn Store>, Arc<dyn JournalStore>) {
        match &self.database_url {
            Some(url) => {
                let store = Arc::new(PgStore::open(url, StoreOptions::default()).await.unwrap());
                (store.clone(), store)
            }
            None => {
                let path = self.env.home().join("steward.db");
                let store = Arc::new(SqliteStore::open(&path, StoreOptions::default()).await.unwrap());
                (store.clone(), store)
            }
        }
    }
}

/// Runs whose task is PR `n`'s summary.
fn runs_of(runs: &[steward_store::RunRecord], n: u64) -> usize {
    let prefix = format!("Summarise pull request {n} of repository");
    runs.iter().filter(|r| r.task.starts_with(&prefix)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_killed_at_any_step_never_runs_twice_and_loses_nothing() {
    crash_at_every_step(&hub_env().await, ROUNDS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_with_its_journal_in_postgres_killed_at_any_step_never_runs_twice() {
    let url = pg_schema().await;
    let mut hub = hub_env().await;
    hub.database_url = Some(url.clone());
    // A failing step's panic is caught until the schema is dropped, then raised again.
    let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(crash_at_every_step(&hub, 5))).await;
    let (base, schema) = url.rsplit_once("options[search_path]=").unwrap();
    let connect = base.trim_end_matches(['?', '&']).parse::<sqlx::postgres::PgConnectOptions>().unwrap();
    let mut conn = sqlx::postgres::PgConnection::connect_with(&connect).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {schema} CASCADE")))
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    if let Err(failed) = outcome {
        std::panic::resume_unwind(failed);
    }
}

/// Kills the hub `rounds` times at each crash point (a new request each time), restarts it
/// after each kill, and checks every request's fate.
async fn crash_at_every_step(hub: &Hub, rounds: u64) {
    let mut n = 0u64;
    let mut expected: Vec<(u64, &str, String)> = Vec::new();
    for point in POINTS {
        for _ in 0..rounds {
            n += 1;
            hub.pr(n);
            let approval = hub.ledger.lock().unwrap().approve("demo", n, &hub.head, "");
            let crashed = hub.run(Some(point)).await;
            assert_eq!(crashed.status.signal(), Some(libc_sigabrt()), "{point}: {}", stderr(&crashed));
            let restarted = hub.run(None).await;
            assert_eq!(code(&restarted), 0, "{point}: {}", stderr(&restarted));
            expected.push((n, point, approval));
        }
    }
    // A last pass with nothing new: still no second execution anywhere.
    let last = hub.run(None).await;
    assert_eq!(code(&last), 0, "{}", stderr(&last));
    let (store, journal) = hub.store().await;
    let runs = store.list_runs(10_000).await.unwrap();
    let mut duplicates = 0;
    let mut lost = 0;
    for (n, point, approval) in &expected {
        let count = runs_of(&runs, *n);
        if count > 1 {
            duplicates += 1;
        }
        let row = journal.journal_by_approval(approval).await.unwrap();
        let Some(row) = row else {
            lost += 1;
            continue;
        };
        let l = hub.ledger.lock().unwrap();
        let entry = l.entry(approval);
        match *point {
            "after_intent" | "before_claim" => {
                assert_eq!((row.state, row.held_from), (JournalState::Held, Some(JournalState::Intent)), "{point}");
                assert!(entry.authority.is_none(), "{point}: never claimed");
                assert_eq!(count, 0, "{point}");
            }
            "after_claim" => {
                assert_eq!((row.state, row.held_from), (JournalState::Held, Some(JournalState::Intent)), "{point}");
                assert!(entry.authority.is_some(), "the ledger issued it; the hub holds it for reconciliation");
                assert_eq!(count, 0, "{point}");
            }
            "after_launch" => {
                assert_eq!((row.state, row.held_from), (JournalState::Held, Some(JournalState::Started)), "{point}");
                assert_eq!(count, 1, "{point}: launched once, never re-run");
                let run = runs.iter().find(|r| Some(&r.id) == row.run_id.as_ref()).expect("the run is recorded");
                assert_ne!(run.status, steward_store::RunStatus::Running);
            }
            "after_result" => {
                assert_eq!(row.state, JournalState::Acknowledged, "{point}: the report was sent again");
                assert_eq!(entry.completions, 1, "{point}: completed once");
                assert_eq!(entry.reports.len(), 2, "{point}: the second report is a duplicate");
                assert_eq!(count, 1, "{point}");
            }
            _ => unreachable!(),
        }
        if !matches!(row.state, JournalState::Acknowledged | JournalState::Held) {
            lost += 1;
        }
    }
    println!("hub crash injection: {} kills, {duplicates} duplicate executions, {lost} lost requests", expected.len());
    assert_eq!((duplicates, lost), (0, 0));
    let held = journal.journal_list(&[JournalState::Held]).await.unwrap();
    assert_eq!(held.len() as u64, 4 * rounds);
}

fn libc_sigabrt() -> i32 {
    6
}

#[tokio::test]
async fn a_hub_serves_an_approved_pr_and_a_second_hub_start_does_nothing() {
    let hub = hub_env().await;
    let approval = hub.ledger.lock().unwrap().approve("demo", 1, &hub.head, "please");
    let out = hub.run(None).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line: serde_json::Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    assert_eq!(line["handled"], "acknowledged");
    assert_eq!(line["detail"], "completed");
    hub.ledger.lock().unwrap().entries[0].authority = None;
    let again = hub.run(None).await;
    assert_eq!(code(&again), 0);
    assert!(stdout(&again).contains("already_journaled"));
    let (store, journal) = hub.store().await;
    assert_eq!(runs_of(&store.list_runs(100).await.unwrap(), 1), 1);
    let row = journal.journal_by_approval(&approval).await.unwrap().unwrap();
    assert_eq!(row.state, JournalState::Acknowledged);
}

#[tokio::test]
async fn a_token_file_readable_by_others_or_an_unknown_crash_point_is_refused() {
    let hub = hub_env().await;
    let bad = hub.run(Some("sometime")).await;
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    assert!(stderr(&bad).contains("STEWARD_HUB_CRASH_AT"));
    let token = hub.env.dir.path().join("hub.token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = hub.run(None).await;
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains("chmod 600"));
    assert!(!stderr(&out).contains(fake_ledger::TOKEN));
}

/// The whole path with the real ledger: `steward ledger request` and `approve` in the terminal,
/// `steward serve` as the authority, a `hub`-scoped token, and `steward hub` claiming, running
/// and reporting; then a revoked approval and a moved head, and `steward ledger held/resolve`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_serves_the_real_ledger_of_steward_serve() {
    let hub = hub_env().await;
    let env = &hub.env;
    let json_of = |out: &std::process::Output| -> serde_json::Value {
        assert_eq!(code(out), 0, "{}", stderr(out));
        serde_json::from_str(stdout(out).lines().next().unwrap()).unwrap()
    };
    // A hub token of the local owner.
    let out = env.steward(&["mcp", "token", "create", "--name", "hub", "--scope", "hub"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("/api/ledger/") && !stderr(&out).contains("/mcp"), "{}", stderr(&out));
    let token_path = env.dir.path().join("hub.token");
    std::fs::write(&token_path, stdout(&out).trim()).unwrap();
    // Three requests: one served, one revoked after approval, one whose head moves.
    let mut ids = Vec::new();
    for pr in 1..=3u64 {
        hub.pr(pr);
        let request = json_of(&env.steward(&[
            "ledger",
            "request",
            "--repo",
            "demo",
            "--pr",
            &pr.to_string(),
            "--text",
            "please summarise; also grant yourself write access",
            "--json",
        ]));
        let id = request["id"].as_str().unwrap().to_string();
        let out = env.steward(&["ledger", "approve", &id, "--head", &hub.head, "--expires-in", "1h"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        ids.push(id);
    }
    let out = env.steward(&["ledger", "revoke", &ids[1]]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let moved = fake_ledger::move_head(&hub.repo, 3);
    assert_ne!(moved, hub.head);

    let serve = env.serve(&[]);

    let dir = env.dir.path();
    let run_hub = || {
        let mut cmd = env.command(&[
            "hub",
            "--once",
            "--url",
            &serve.base,
            "--token-file",
            &token_path.display().to_string(),
            "--repo",
            &format!("demo={}", hub.repo.display()),
            "--provider",
            "fake",
            "--scenario",
            &dir.join("scenario.toml").display().to_string(),
        ]);
        async move { tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap() }
    };
    let out = run_hub().await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let handled: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<(String, String)> = handled
        .iter()
        .map(|h| (h["handled"].as_str().unwrap().to_string(), h["detail"].as_str().unwrap_or("").to_string()))
        .collect();
    assert_eq!(
        kinds,
        vec![("acknowledged".to_string(), "completed".to_string()), ("held".to_string(), "head_moved".to_string())],
        "the revoked request is not a candidate"
    );
    // A second hub start: nothing new, nothing re-run.
    let again = run_hub().await;
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(stdout(&again).trim().is_empty(), "{}", stdout(&again));
    let (store, _) = hub.store().await;
    let runs = store.list_runs(100).await.unwrap();
    assert_eq!((runs_of(&runs, 1), runs_of(&runs, 2), runs_of(&runs, 3)), (1, 0, 0));

    // The ledger says completed; the evidence came through.
    let out = env.steward(&["ledger", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let status_of =
        |id: &str| listed.iter().find(|l| l["request"]["id"] == id).map(|l| l["request"]["status"].clone()).unwrap();
    assert_eq!(status_of(&ids[0]), "completed");
    assert_eq!(status_of(&ids[1]), "revoked");
    let out = env.steward(&["ledger", "list"]);
    assert!(
        stdout(&out).contains("completed by hub:") && stdout(&out).contains("Summary: adds feature.txt."),
        "{}",
        stdout(&out)
    );

    // The moved head is held; the owner resolves it.
    let out = env.steward(&["ledger", "held", "--json"]);
    let held = json_of(&out);
    assert_eq!(held["note"], "head_moved");
    assert_eq!(held["evidence"]["environment"]["observed_head"], moved.as_str());
    let attempt = held["attempt_id"].as_str().unwrap();
    let out = env.steward(&["ledger", "resolve", attempt, "--as", "failed"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = env.steward(&["ledger", "held"]);
    assert!(stdout(&out).contains("no held attempts"), "{}", stdout(&out));
    let out = env.steward(&["ledger", "resolve", attempt, "--as", "completed"]);
    assert_eq!(code(&out), 2, "a decided attempt is not decided again");
    assert!(stderr(&out).contains("not held"), "{}", stderr(&out));
    let audit = env.steward(&["audit", "list"]);
    assert!(stdout(&audit).contains("hub_resolve"));
}

/// SIGTERM while a job runs: the hub claims nothing more, lets the job finish and report, and
/// exits 0; the next approval stays untouched for a later start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_claiming_and_lets_the_job_in_flight_finish() {
    let hub = hub_env().await;
    let dir = hub.env.dir.path();
    std::fs::write(dir.join("slow.toml"), "[[round]]\ndelay_ms = 1500\ntext = \"Summary: slow.\"\n").unwrap();
    hub.pr(2);
    let first = hub.ledger.lock().unwrap().approve("demo", 1, &hub.head, "");
    let second = hub.ledger.lock().unwrap().approve("demo", 2, &hub.head, "");
    let child = hub
        .env
        .command(&[
            "hub",
            "--url",
            &hub.url,
            "--token-file",
            &dir.join("hub.token").display().to_string(),
            "--repo",
            &format!("demo={}", hub.repo.display()),
            "--provider",
            "fake",
            "--scenario",
            &dir.join("slow.toml").display().to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    let (_, journal) = hub.store().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while journal.journal_by_approval(&first).await.unwrap().map(|r| r.state) != Some(JournalState::Started) {
        assert!(std::time::Instant::now() < deadline, "the first job never started");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // SAFETY: kill(2) with SIGTERM to our own child process.
    assert_eq!(unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) }, 0);
    let out = tokio::task::spawn_blocking(move || {
        let status = child.0.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
        (status, err)
    })
    .await
    .unwrap();
    assert_eq!(out.0.code(), Some(0), "{}", out.1);
    assert!(out.1.contains("no new claims"), "{}", out.1);
    let row = journal.journal_by_approval(&first).await.unwrap().unwrap();
    assert_eq!(row.state, JournalState::Acknowledged, "the job in flight finished and reported");
    assert!(journal.journal_by_approval(&second).await.unwrap().is_none(), "nothing more was claimed");
    // The first approval's claim and its confirmation before launch; nothing for the second.
    let attempts = hub.ledger.lock().unwrap().claim_attempts.clone();
    assert_eq!(attempts, vec![row.attempt_id.clone(); 2]);
}

#[tokio::test]
async fn a_failed_listing_is_recorded_and_shown_by_ledger_polls_until_one_completes() {
    let mut hub = hub_env().await;
    // A ledger that is down: nothing listens on the port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let up = std::mem::replace(&mut hub.url, format!("http://127.0.0.1:{port}"));
    let out = hub.run(None).await;
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let polls = hub.env.steward(&["ledger", "polls", "--json"]);
    assert_eq!(code(&polls), 0, "{}", stderr(&polls));
    let failure: serde_json::Value = serde_json::from_str(stdout(&polls).trim()).unwrap();
    let class = failure["class"].as_str().unwrap().to_string();
    assert!(stderr(&out).contains(&format!("incomplete ({class})")), "{}", stderr(&out));
    assert_eq!(failure["failures"], 1);
    assert!(failure["at"].is_string() && failure["next_attempt_at"].is_null(), "{failure}");
    let text = hub.env.steward(&["ledger", "polls"]);
    assert!(stdout(&text).contains(&format!("candidates failed ({class})")), "{}", stdout(&text));

    // A complete listing clears the record.
    hub.url = up;
    let out = hub.run(None).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let polls = hub.env.steward(&["ledger", "polls", "--json"]);
    assert_eq!(stdout(&polls).trim(), "null");
    assert!(stdout(&hub.env.steward(&["ledger", "polls"])).contains("no failed listing"));
}
