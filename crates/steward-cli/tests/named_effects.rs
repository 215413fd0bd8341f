//! End to end: the gate judges what a value names on disk, not what it is called.
//!
//! - A `[[tool]]` input not declared `path = true` is still a path to the program: given
//!   `.env` (or `--file=.env`, or a path outside the workspace) the call is refused by the
//!   path rule, before anything runs.
//! - A hard link to a secret file is that secret file for every tool: `read`, `search`, a
//!   `[[tool]]` and `shell_command` refuse or leave it out.
//! - Values declared as credentials (`credential_scope` variables, `[[tool]] env` values) are
//!   redacted whatever their names, everywhere the run's text goes.
//! - An audit chain whose anchor file was removed does not verify until the anchor is reset on
//!   purpose, and the reset is itself an audit record.

use crate::common;

use common::*;
use serde_json::Value;

const CAT_TOOLS: &str = r#"
[shell]
enabled = true

[[policy.rule]]
name = "cat-ok"
tool = "shell_command"
argv = ["cat", "**"]
decision = "allow"

[[tool]]
name = "show_file"
description = "Print a file."
command = ["cat", { input = "file" }]
risk = "low"

[[tool.input]]
name = "file"
type = "string"
required = true

[[tool]]
name = "show_opt"
description = "Print the file named by --file=NAME."
command = ["sh", "-c", "cat \"${1#--file=}\"", "sh", { input = "arg" }]
risk = "low"

[[tool.input]]
name = "arg"
type = "string"
required = true
allow_dash = true

[[tool]]
name = "show_path"
description = "Print a file (a declared path input)."
command = ["cat", { input = "file" }]
risk = "low"

[[tool.input]]
name = "file"
type = "string"
required = true
path = true
"#;

/// The final event of call `id`: `(event name, the event as text)`.
fn outcome(evs: &[Value], id: &str) -> (String, String) {
    let e = evs
        .iter()
        .rev()
        .find(|e| {
            e["call_id"] == id
                && ["tool_completed", "tool_denied", "tool_rejected", "tool_failed"]
                    .contains(&e["event"].as_str().unwrap_or(""))
        })
        .unwrap_or_else(|| panic!("no outcome for {id} in {:?}", names(evs)));
    (e["event"].as_str().unwrap_or("").to_string(), e.to_string())
}

/// One round with these calls (`(id, tool, arguments as TOML inline table)`), then a final
/// answer.
fn calls_scenario(env: &Env, calls: &[(&str, &str, &str)]) -> String {
    let mut text = String::from("[[round]]\n");
    for (id, tool, args) in calls {
        text.push_str(&format!("[[round.tool_call]]\nid = \"{id}\"\nname = \"{tool}\"\narguments = {args}\n"));
    }
    text.push_str("[[round]]\ntext = \"done\"\n");
    scenario(env, &text)
}

fn assert_denied(evs: &[Value], id: &str, rule: &str) {
    let (kind, event) = outcome(evs, id);
    assert_eq!(kind, "tool_denied", "{id}: {event}");
    let denied = evs.iter().find(|e| e["call_id"] == id && e["event"] == "tool_denied").unwrap();
    assert_eq!(denied["rule"], rule, "{id}: {denied}");
}

#[test]
fn string_inputs_naming_secret_or_outside_files_are_refused_like_path_inputs() {
    let env = Env::new();
    env.write(".env", "API=short\nmarker\n");
    env.write("readme.txt", "hello readme\n");
    std::fs::write(env.dir.path().join("outside.txt"), "outside-words\n").unwrap();
    env.user_config(CAT_TOOLS);
    let path = calls_scenario(
        &env,
        &[
            ("c1", "show_file", "{ file = \".env\" }"),
            ("c2", "show_opt", "{ arg = \"--file=.env\" }"),
            ("c3", "show_file", "{ file = \"../outside.txt\" }"),
            ("c4", "show_file", "{ file = \"sub/../.env\" }"),
            ("c5", "show_file", "{ file = \"readme.txt\" }"),
        ],
    );
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert_denied(&evs, "c1", "secret_path");
    assert_denied(&evs, "c2", "secret_path");
    assert_denied(&evs, "c3", "workspace_boundary");
    assert_denied(&evs, "c4", "secret_path");
    let (kind, c5) = outcome(&evs, "c5");
    assert_eq!(kind, "tool_completed", "an ordinary file still works: {c5}");
    assert!(c5.contains("hello readme"), "{c5}");
    let text = stdout(&out);
    assert!(!text.contains("marker") && !text.contains("outside-words"), "{text}");
    // `policy check` decides the same way.
    let check = env.steward(&["policy", "check", "show_file", "--args", "{\"file\":\".env\"}", "--json"]);
    let v: Value = serde_json::from_str(stdout(&check).trim()).unwrap();
    assert_eq!((v["decision"].as_str(), v["rule"].as_str()), (Some("deny"), Some("secret_path")), "{v}");
}

#[test]
fn a_hard_link_to_a_secret_file_is_secret_for_every_tool() {
    let env = Env::new();
    // `marker` is shorter than the redactor's minimum: only the path rules keep it out.
    env.write(".env", "API_TOKEN=hl-secret-value-123456\nmarker\n");
    env.write("other.txt", "nothing here\n");
    std::fs::hard_link(env.ws().join(".env"), env.ws().join("notes.txt")).unwrap();
    env.user_config(CAT_TOOLS);
    let path = calls_scenario(
        &env,
        &[
            ("r1", "read", "{ path = \"notes.txt\" }"),
            ("s1", "search", "{ query = \"marker\" }"),
            ("s2", "search", "{ query = \"marker\", path = \"notes.txt\" }"),
            ("t1", "show_file", "{ file = \"notes.txt\" }"),
            ("t2", "show_path", "{ file = \"notes.txt\" }"),
            ("sh", "shell_command", "{ command = \"cat notes.txt\" }"),
            ("l1", "list", "{}"),
        ],
    );
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert_denied(&evs, "r1", "secret_path");
    assert_denied(&evs, "s2", "secret_path");
    assert_denied(&evs, "t1", "secret_path");
    assert_denied(&evs, "t2", "secret_path");
    assert_denied(&evs, "sh", "secret_path");
    let (kind, s1) = outcome(&evs, "s1");
    assert_eq!(kind, "tool_completed", "{s1}");
    assert!(s1.contains("no matches") && !s1.contains("notes.txt"), "search showed the linked file: {s1}");
    let (_, l1) = outcome(&evs, "l1");
    assert!(l1.contains("other.txt") && !l1.contains("notes.txt"), "list showed the linked file: {l1}");
    let denied: Vec<&Value> = evs.iter().filter(|e| e["event"] == "tool_denied").collect();
    assert!(denied.iter().all(|e| e.to_string().contains("hard link")), "the reason names the link: {denied:?}");
    assert!(!stdout(&out).contains(": marker"), "a line of the secret file was shown: {}", stdout(&out));
}

#[test]
fn a_hard_link_to_a_deny_path_file_is_denied_by_that_rule() {
    let env = Env::new();
    env.write("private/db.txt", "row-one\n");
    std::fs::hard_link(env.ws().join("private/db.txt"), env.ws().join("rows.txt")).unwrap();
    env.user_config("[policy]\ndeny_path = [\"private/**\"]\n");
    let path = calls_scenario(&env, &[("r1", "read", "{ path = \"rows.txt\" }"), ("l1", "list", "{}")]);
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert_denied(&evs, "r1", "deny_path");
    let (_, l1) = outcome(&evs, "l1");
    assert!(!l1.contains("rows.txt"), "list showed the linked file: {l1}");
    assert!(!stdout(&out).contains("row-one"), "{}", stdout(&out));
}

#[test]
fn declared_credentials_are_redacted_whatever_their_names() {
    let env = Env::new();
    let scoped = "s3cr3t-value-123";
    let literal = "literal-value-456";
    env.user_config(&format!(
        r#"
[policy.credential_scope]
echo_env = ["DEPLOY_THING"]

[[tool]]
name = "echo_env"
description = "Print two variables."
command = ["sh", "-c", "echo deploy=$DEPLOY_THING foo=$FOO; echo failing-with $DEPLOY_THING >&2; exit 3"]
env = {{ DEPLOY_THING = true, FOO = "{literal}" }}
risk = "low"
"#
    ));
    let path = calls_scenario(&env, &[("e1", "echo_env", "{}")]);
    let run = |args: &[&str]| env.command(args).env("DEPLOY_THING", scoped).output().unwrap();
    let out = run(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let (kind, e1) = outcome(&evs, "e1");
    assert_eq!(kind, "tool_failed", "{e1}");
    assert!(e1.contains("deploy=[REDACTED]") && e1.contains("foo=[REDACTED]"), "the tool ran and was redacted: {e1}");
    let run_id = evs[0]["run_id"].as_str().unwrap().to_string();
    let shown = run(&["show", &run_id]);
    let audit = run(&["audit", "list"]);
    let config = run(&["config", "show"]);
    let config_json = run(&["config", "show", "--json"]);
    assert!(stdout(&config).contains("FOO"), "config show lists the tool: {}", stdout(&config));
    for (what, output) in [
        ("run", &out),
        ("show", &shown),
        ("audit list", &audit),
        ("config show", &config),
        ("config show --json", &config_json),
    ] {
        for secret in [scoped, literal] {
            assert!(
                !stdout(output).contains(secret) && !stderr(output).contains(secret),
                "{what} shows {secret}: {}{}",
                stdout(output),
                stderr(output)
            );
        }
    }
    for secret in [scoped, literal] {
        assert!(!contains_bytes(&db(&env), secret), "{secret} stored in the database");
    }
}

#[test]
fn a_removed_audit_anchor_fails_verification_until_a_recorded_reset() {
    let env = Env::new();
    // A fresh store: no chain, no anchor, nothing to complain about.
    let fresh = env.steward(&["audit", "verify"]);
    assert_eq!(code(&fresh), 0, "{}{}", stdout(&fresh), stderr(&fresh));
    env.write("a.txt", "alpha\n");
    assert_eq!(code(&env.steward(&["run", "read a.txt"])), 0);
    assert_eq!(code(&env.steward(&["audit", "verify"])), 0);
    let anchor = env.home().join("audit.anchor");
    assert!(anchor.exists(), "the first record creates the anchor");
    std::fs::remove_file(&anchor).unwrap();
    let bad = env.steward(&["audit", "verify"]);
    assert_eq!(code(&bad), 1, "{}", stdout(&bad));
    assert!(stdout(&bad).contains("anchor missing"), "{}", stdout(&bad));
    // Another run does not quietly write a fresh anchor at the head.
    assert_eq!(code(&env.steward(&["run", "read a.txt"])), 0);
    let still = env.steward(&["audit", "verify"]);
    assert_eq!(code(&still), 1, "{}", stdout(&still));
    assert!(stdout(&still).contains("anchor missing"), "{}", stdout(&still));
    let status = env.steward(&["audit", "anchor"]);
    assert_eq!(code(&status), 1, "{}", stdout(&status));
    assert!(stdout(&status).contains("missing"), "{}", stdout(&status));
    let reset = env.steward(&["audit", "anchor", "--reset"]);
    assert_eq!(code(&reset), 0, "{}{}", stdout(&reset), stderr(&reset));
    let ok = env.steward(&["audit", "verify"]);
    assert_eq!(code(&ok), 0, "{}", stdout(&ok));
    let status = env.steward(&["audit", "anchor"]);
    assert_eq!(code(&status), 0, "{}", stdout(&status));
    let list = env.steward(&["audit", "list"]);
    let records: Vec<Value> = stdout(&list).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let last = records.last().unwrap();
    assert_eq!(last["action"], "audit_anchor_reset", "{last}");
    assert_eq!(last["agent"], "local:tester", "{last}");
    assert!(last["detail"].as_str().unwrap().contains("missing"), "{last}");
    // Cutting the chain's end after the reset is caught again.
    let cut = std::process::Command::new("python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from audit where seq=(select max(seq) from audit)'); c.commit()"])
        .arg(db(&env))
        .status()
        .unwrap();
    assert!(cut.success());
    let cut_off = env.steward(&["audit", "verify"]);
    assert_eq!(code(&cut_off), 1, "{}", stdout(&cut_off));
    assert!(stdout(&cut_off).contains("removed"), "{}", stdout(&cut_off));
}
