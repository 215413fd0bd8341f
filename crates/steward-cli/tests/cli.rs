//! End-to-end tests of the `steward` binary: classic planner offline, the JSON event
//! interface, the gate's refusals, limits and exit codes, crash recovery and the audit chain.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::*;

#[test]
fn classic_planner_shows_git_status_offline() {
    let env = Env::new();
    env.write("tracked.txt", "one\n");
    env.git_init();
    env.write("new_file.txt", "two\n");
    let out = env.steward(&["run", "show the git status"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("new_file.txt"), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("answered") && err.contains("1 tool call"), "trace summary missing: {err}");
}

/// `git_status` leaves out what `list` and the index hide: secret files (and `deny_path`).
#[test]
fn git_status_hides_secret_paths_as_list_does() {
    let env = Env::new();
    env.write("tracked.txt", "one\n");
    env.git_init();
    env.write("new_file.txt", "two\n");
    env.write(".env", "API_TOKEN=x\n");
    env.write("keys/server.pem", "-----\n");
    let out = env.steward(&["run", "--json", "show the git status"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let done = find(&evs, "tool_completed");
    assert_eq!(done["tool"], "git_status", "{done}");
    let shown = done["output"].as_str().unwrap();
    assert!(shown.contains("new_file.txt"), "{shown}");
    assert!(!shown.contains(".env") && !shown.contains("server.pem"), "{shown}");
}

#[test]
fn strict_run_exits_5_when_a_step_was_refused_and_0_when_none_was() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    // Without a terminal the edit is refused (`no_approver`); the run still answers.
    let task = "replace 'old' with 'new' in note.txt";
    assert_eq!(code(&env.steward(&["run", task])), 0);
    let strict = env.steward(&["run", "--strict", task]);
    assert_eq!(code(&strict), 5, "{}", stderr(&strict));
    assert!(stderr(&strict).contains("1 step(s) were refused"), "{}", stderr(&strict));
    assert_eq!(env.read("note.txt"), "old text\n");
    // A run whose steps all ran is a success under --strict too.
    let clean = env.steward(&["run", "--strict", "read note.txt"]);
    assert_eq!(code(&clean), 0, "{}", stderr(&clean));
}

#[test]
fn runs_lists_the_current_owners_runs_under_a_header_and_all_with_owners() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let mine = env.steward(&["run", "--json", "read a.txt"]);
    let mine = events(&mine)[0]["run_id"].as_str().unwrap().to_string();
    let theirs = env.command(&["run", "--json", "list files"]).env("USER", "someone").output().unwrap();
    assert_eq!(code(&theirs), 0, "{}", stderr(&theirs));
    let theirs = events(&theirs)[0]["run_id"].as_str().unwrap().to_string();

    let out = stdout(&env.steward(&["runs"]));
    let mut lines = out.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("RUN") && header.contains("STATUS") && header.contains("TASK"), "{out}");
    assert!(!header.contains("OWNER"), "{out}");
    assert!(out.contains(&mine) && !out.contains(&theirs), "another owner's run is not listed by default: {out}");
    // One status column, saying why the run ended.
    assert!(out.contains("completed: answered"), "{out}");
    let json = stdout(&env.steward(&["runs", "--json"]));
    assert!(json.contains(&mine) && !json.contains(&theirs), "{json}");

    let all = stdout(&env.steward(&["runs", "--all"]));
    assert!(all.lines().next().unwrap().contains("OWNER"), "{all}");
    assert!(all.contains(&mine) && all.contains(&theirs), "{all}");
    assert!(all.contains("local:someone") && all.contains("local:tester"), "{all}");

    let fresh = Env::new();
    let empty = stdout(&fresh.steward(&["runs"]));
    assert!(empty.contains("no runs of local:tester yet") && empty.contains("--all"), "{empty}");
}

#[test]
fn classic_planner_hint_says_a_workspace_provider_counts_only_after_trust() {
    let env = Env::new();
    let out = env.steward(&["run", "write me a poem about rust"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stdout(&out);
    assert!(said.contains("[providers.NAME]") && said.contains("~/.config/steward/config.toml"), "{said}");
    assert!(said.contains("ignored until you run `steward trust`"), "{said}");
}

#[test]
fn json_events_are_numbered_timestamped_and_end_with_the_answer() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    env.git_init();
    let out = env.steward(&["run", "--json", "read a.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let run_id = evs[0]["run_id"].as_str().unwrap().to_string();
    assert!(run_id.starts_with("run_"));
    for (i, e) in evs.iter().enumerate() {
        assert_eq!(e["seq"], (i + 1) as u64, "seq of {e}");
        assert_eq!(e["run_id"], run_id.as_str());
        let at = e["at"].as_str().unwrap();
        chrono::DateTime::parse_from_rfc3339(at).unwrap_or_else(|_| panic!("bad at {at}"));
    }
    assert_eq!(evs[0]["event"], "run_started");
    let last = evs.last().unwrap();
    assert_eq!(last["event"], "run_completed");
    assert_eq!(last["stop_reason"], "answered");
    assert!(last["final"].as_str().unwrap().contains("alpha"));
    let n = names(&evs);
    for expected in ["stage_started", "stage_completed", "tool_requested", "tool_started", "tool_completed"] {
        assert!(n.iter().any(|x| x == expected), "missing {expected} in {n:?}");
    }
    // The run is listed and its trace can be shown.
    let runs = env.steward(&["runs"]);
    assert!(stdout(&runs).contains(&run_id));
    let show = env.steward(&["show", &run_id]);
    assert_eq!(code(&show), 0);
    let trace = stdout(&show);
    assert!(
        trace.contains("planner round 1") && trace.contains("read") && trace.contains("total: 2 round(s)"),
        "{trace}"
    );
}

#[test]
fn an_edit_without_a_terminal_is_denied_as_no_approver_and_changes_nothing() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    let out = env.steward(&["run", "--json", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let required = find(&evs, "tool_approval_required");
    assert_eq!(required["tool"], "edit");
    assert!(required["expires_at"].as_str().is_some());
    assert!(find(&evs, "patch_proposed")["diff"].as_str().unwrap().contains("+new text"));
    assert_eq!(find(&evs, "tool_rejected")["reason"], "no_approver");
    assert!(!names(&evs).contains(&"tool_started".to_string()));
    assert_eq!(env.read("note.txt"), "old text\n");
    let run_id = evs[0]["run_id"].as_str().unwrap();
    let outcomes: Vec<_> = audit(&env, run_id).iter().map(|r| (r["outcome"].clone(), r["policy"].clone())).collect();
    assert!(outcomes.iter().any(|(o, _)| o == "escalated"), "{outcomes:?}");
    assert!(outcomes.iter().any(|(o, p)| o == "blocked" && p == "no_approver"), "{outcomes:?}");
}

#[test]
fn secret_files_are_refused_and_their_bytes_reach_no_output_or_state() {
    let env = Env::new();
    let secret = "sk-proj-TESTSECRETVALUE1234567890abcdef";
    env.write(".env", &format!("OPENAI_API_KEY={secret}\n"));
    env.write("app.py", "print('hi')\n");
    env.git_init();
    for task in ["read .env", "read ./sub/../.env", "search for OPENAI_API_KEY", "list files"] {
        let out = env.steward(&["run", "--json", task]);
        assert_eq!(code(&out), 0, "{task}: {}", stderr(&out));
        assert!(!stdout(&out).contains(secret) && !stderr(&out).contains(secret), "{task} leaked");
        if task.starts_with("read") {
            let evs = events(&out);
            let denied = find(&evs, "tool_denied");
            assert!(["secret_path", "workspace_boundary"].contains(&denied["rule"].as_str().unwrap()), "{denied}");
        }
    }
    // What the runs left behind, as the listing commands show it and as stored.
    for args in [vec!["runs"], vec!["runs", "--json"], vec!["show", "last", "--json"], vec!["audit", "list"]] {
        let out = env.steward(&args);
        assert_eq!(code(&out), 0, "steward {args:?}: {}", stderr(&out));
        assert!(!stdout(&out).is_empty(), "steward {args:?} printed nothing");
        assert!(!stdout(&out).contains(secret) && !stderr(&out).contains(secret), "steward {args:?} leaked");
    }
    assert!(!contains_bytes(&db(&env), secret), "secret stored in the database");
}

#[test]
fn max_rounds_stops_with_exit_3_and_what_it_had() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    let round = "[[round]]\n[[round.tool_call]]\nname = \"list\"\narguments = {}\n";
    let path = scenario(&env, &round.repeat(6));
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "--max-rounds", "2", "loop"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let evs = events(&out);
    let done = find(&evs, "run_completed");
    assert_eq!(done["stop_reason"], "max_rounds");
    assert_eq!(done["rounds"], 2);
    assert!(done["final"].as_str().unwrap().contains("a.txt"));
}

#[test]
fn a_missing_api_key_fails_classified_and_names_the_variable() {
    let env = Env::new();
    let out = env.steward(&["run", "--json", "--provider", "openai", "hello"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let evs = events(&out);
    let failed = find(&evs, "run_failed");
    assert_eq!(failed["class"], "missing_api_key");
    assert!(failed["error"].as_str().unwrap().contains("OPENAI_API_KEY"));
}

#[test]
fn unknown_provider_and_malformed_config_are_usage_errors() {
    let env = Env::new();
    let out = env.steward(&["run", "--provider", "nope", "hello"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("unknown provider `nope`"));
    // A scenario without a provider names what is missing, not a planner nobody chose.
    let out = env.steward(&["run", "--scenario", "s.toml", "hello"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("need a provider: pass --provider NAME"), "{}", stderr(&out));
    let out = env.steward(&["run", "--planner", "classic", "--model", "m", "hello"]);
    assert!(stderr(&out).contains("--planner classic takes no"), "{}", stderr(&out));
    env.write(".steward/config.toml", "[limits]\nmax_rounds = \"five\"\n");
    let out = env.steward(&["run", "hello"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("config.toml:2"), "{}", stderr(&out));
}

#[test]
fn unknown_tasks_get_help_instead_of_a_guess() {
    let env = Env::new();
    let out = env.steward(&["run", "make me a sandwich"]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    assert!(text.contains("--provider"), "{text}");
}

#[test]
fn runtime_limit_stops_with_exit_3_timeout() {
    let env = Env::new();
    env.write(".steward/limits.toml", "[limits]\nmax_total_runtime_ms = 300\n");
    let path = scenario(&env, "[[round]]\ndelay_ms = 20000\ntext = \"late\"\n");
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "slow"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(find(&events(&out), "run_completed")["stop_reason"], "timeout");
}

#[test]
fn ctrl_c_cancels_cleanly_with_exit_4() {
    let env = Env::new();
    let path = scenario(&env, "[[round]]\ndelay_ms = 30000\ntext = \"late\"\n");
    let mut child = env
        .command(&["run", "--json", "--provider", "fake", "--scenario", &path, "slow"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("\"stage_started\"") {
            break;
        }
    }
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(4));
    assert!(rest.iter().any(|l| l.contains("\"run_cancelled\"")), "{rest:?}");
}

#[test]
fn audit_verify_names_the_first_tampered_record() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    assert_eq!(code(&env.steward(&["run", "read a.txt"])), 0);
    assert_eq!(code(&env.steward(&["run", "list files"])), 0);
    let ok = env.steward(&["audit", "verify"]);
    assert_eq!(code(&ok), 0, "{}", stdout(&ok));
    assert!(stdout(&ok).contains("valid: 4 records"), "{}", stdout(&ok));
    let tamper = std::process::Command::new("python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"update audit set detail='nothing to see' where seq=2\"); c.commit()"])
        .arg(db(&env))
        .status()
        .unwrap();
    assert!(tamper.success());
    let bad = env.steward(&["audit", "verify"]);
    assert_eq!(code(&bad), 1);
    assert!(stdout(&bad).contains("record 2"), "{}", stdout(&bad));
}

/// Appends to the audit table a copy of its last record as the next one, linked and hashed
/// the unkeyed way (SHA-256 over the documented canonical form): what anyone with write access
/// to the database can compute.
const FORGE: &str = r#"
import hashlib, json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
cols = "seq, id, at, agent, run_id, call_id, action, input, policy, risk, outcome, latency_ms, sandbox, approval_id, rollback_token, detail, prev_hash, hash"
row = list(c.execute("select " + cols + " from audit order by seq desc limit 1").fetchone())
seq, prev = row[0] + 1, row[17]
f = [seq, "aud_forged"] + row[2:16]
s = lambda v: json.dumps(v, ensure_ascii=False)
canonical = "[" + ",".join([str(f[0]), s(f[1]), s(f[2]), s(f[3]), s(f[4]), s(f[5]), s(f[6]), f[7], s(f[8]), json.dumps(f[9]), s(f[10]), str(f[11]), s(f[12]), s(f[13]), s(f[14]), s(f[15])]) + "]"
h = hashlib.sha256((prev + canonical).encode()).hexdigest()
c.execute("insert into audit (" + cols + ") values (" + ",".join("?" * 18) + ")", f + [prev, h])
c.commit()
"#;

/// The chain is keyed (`audit.key` beside `approval.key`, not in the database): a record forged
/// with the unkeyed hash after keyed ones fails verification.
#[test]
fn audit_verify_refuses_a_record_forged_without_the_key() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    assert_eq!(code(&env.steward(&["run", "read a.txt"])), 0);
    assert_eq!(code(&env.steward(&["audit", "verify"])), 0);
    let key = env.home().join("audit.key");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&key).unwrap().permissions()) & 0o777;
    assert_eq!(mode, 0o600, "the key is the owner's only");
    let forged = std::process::Command::new("python3").args(["-c", FORGE]).arg(db(&env)).status().unwrap();
    assert!(forged.success());
    let bad = env.steward(&["audit", "verify"]);
    assert_eq!(code(&bad), 1, "{}", stdout(&bad));
    assert!(stdout(&bad).contains("record 3") && stdout(&bad).contains("unkeyed after keyed"), "{}", stdout(&bad));
}

#[test]
fn a_crash_between_decision_and_outcome_leaves_the_decision_and_an_unknown_outcome() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    env.git_init();
    // A `git` that never finishes stands in for a long tool; the process is killed meanwhile.
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let git = bin.join("git");
    std::fs::write(&git, "#!/bin/sh\nsleep 60\n").unwrap();
    std::fs::set_permissions(&git, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut child =
        env.command(&["run", "--json", "git status"]).env("PATH", &path).stdout(Stdio::piped()).spawn().unwrap();
    let mut run_id = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        run_id = v["run_id"].as_str().unwrap().to_string();
        if v["event"] == "tool_started" {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // The next start marks the run interrupted and the call's outcome unknown.
    let out = env.steward(&["runs", "--json"]);
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    let run: serde_json::Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    assert_eq!(run["id"], run_id.as_str());
    assert_eq!(run["status"], "interrupted");
    let records = audit(&env, &run_id);
    let outcomes: Vec<&str> = records.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["approved", "unknown"], "{records:?}");
    assert!(records.iter().all(|r| r["action"] == "git_status"));
    // Nothing is re-run, and the chain is intact.
    assert_eq!(code(&env.steward(&["audit", "verify"])), 0);
    let again = env.steward(&["runs", "--json"]);
    assert!(!stderr(&again).contains("interrupted"));
}

#[test]
fn policy_check_decides_without_running() {
    let env = Env::new();
    env.write(".env", "X=1\n");
    let out = env.steward(&["policy", "check", "read", "--args", "{\"path\":\".env\"}", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["rule"], "secret_path");
    let out = env.steward(&[
        "policy",
        "check",
        "edit",
        "--args",
        "{\"path\":\"a.txt\",\"old\":\"x\",\"new\":\"y\"}",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["decision"], "ask");
    assert_eq!(v["rule"], "default:medium");
    let out = env.steward(&["policy", "check", "rm_rf", "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["rule"], "unknown_tool");
    assert!(v["reasons"][0].as_str().unwrap().contains("There is no tool named `rm_rf`"), "{v}");
    // The shell tool when the shell is off: the reason says it is off and how to turn it on.
    let out = env.steward(&["policy", "check", "shell_command", "--args", "{\"command\":\"ls\"}"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stdout(&out);
    assert!(said.starts_with("deny"), "{said}");
    assert!(said.contains("`shell_command` is off") && said.contains("[shell] enabled = true"), "{said}");
    assert!(!said.contains("There is no tool named"), "{said}");
    // A low-risk command tool that writes is allowed by the rules, but cannot be rolled back:
    // the check says `ask`, as a run would.
    env.user_config(
        "[[tool]]\nname = \"gen\"\ndescription = \"d\"\ncommand = [\"true\"]\nrisk = \"low\"\nwrites = [\"out/**\"]\n",
    );
    let out = env.steward(&["policy", "check", "gen", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["decision"], "ask", "{v}");
    assert_eq!(v["rule"], "no_compensation");
}

/// A deny rule on a subcommand sees it behind global options (`cargo +nightly publish`), and
/// applies strictly behind an option Steward does not know, through the real binary with a
/// trusted workspace policy file.
#[test]
fn option_before_subcommand_is_judged_by_policy_check() {
    let env = Env::new();
    env.user_config("[shell]\nenabled = true\n");
    env.write(
        ".steward/policy.toml",
        "[[policy.rule]]\nname = \"no-publish\"\ntool = \"shell_command\"\nargv = [\"cargo\", \"publish\", \"**\"]\n\
         decision = \"deny\"\n[[policy.rule]]\nname = \"cargo\"\ntool = \"shell_command\"\nargv = [\"cargo\", \"**\"]\n\
         decision = \"allow\"\n",
    );
    let trusted = env.steward(&["trust"]);
    assert_eq!(code(&trusted), 0, "{}", stderr(&trusted));
    let check = |line: &str| {
        let args = serde_json::json!({ "command": line }).to_string();
        let out = env.steward(&["policy", "check", "shell_command", "--args", &args, "--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        serde_json::from_str::<serde_json::Value>(stdout(&out).trim()).unwrap()
    };
    for (line, decision, rule) in [
        ("cargo publish", "deny", "no-publish"),
        ("cargo +nightly publish", "deny", "no-publish"),
        ("cargo --locked -Zunstable-options --color=never publish --dry-run", "deny", "no-publish"),
        ("cargo --frobnicate publish", "deny", "unknown_option_before_subcommand"),
        ("cargo +nightly build", "allow", "cargo"),
    ] {
        let v = check(line);
        assert_eq!((v["decision"].as_str(), v["rule"].as_str()), (Some(decision), Some(rule)), "{line}: {v}");
    }
    let v = check("cargo --frobnicate publish");
    let reason = v["reasons"][0].as_str().unwrap_or("");
    assert!(
        reason.contains("`cargo --frobnicate` is not a global option Steward knows")
            && reason.contains("the deny rule `no-publish` applies as if it matched"),
        "{v}"
    );
    // The human-readable form names the rule too.
    let out = env.steward(&["policy", "check", "shell_command", "--args", "{\"command\":\"cargo +nightly publish\"}"]);
    assert!(stdout(&out).starts_with("deny (rule `no-publish`"), "{}", stdout(&out));
}

#[test]
fn option_spellings_meet_deny_rules_in_policy_check() {
    let env = Env::new();
    env.user_config("[shell]\nenabled = true\n");
    env.write(
        ".steward/policy.toml",
        "[[policy.rule]]\nname = \"no-rm-rf\"\ntool = \"shell_command\"\nargv = [\"rm\", \"-rf\", \"**\"]\n\
         decision = \"deny\"\n[[policy.rule]]\nname = \"no-force\"\ntool = \"shell_command\"\n\
         argv = [\"git\", \"push\", \"--force\", \"**\"]\ndecision = \"deny\"\n[[policy.rule]]\nname = \"rm\"\n\
         tool = \"shell_command\"\nargv = [\"rm\", \"**\"]\ndecision = \"allow\"\n[[policy.rule]]\nname = \"push\"\n\
         tool = \"shell_command\"\nargv = [\"git\", \"push\", \"**\"]\ndecision = \"allow\"\n",
    );
    let trusted = env.steward(&["trust"]);
    assert_eq!(code(&trusted), 0, "{}", stderr(&trusted));
    for (line, decision, rule) in [
        ("rm -r -f x", "deny", "no-rm-rf"),
        ("rm x --recursive --force", "deny", "no-rm-rf"),
        ("rm --recur -v -f x", "deny", "no-rm-rf"),
        ("git push origin +main", "deny", "no-force"),
        ("git push --force-with-lease origin main", "deny", "no-force"),
        ("rm -r x", "allow", "rm"),
        ("git push origin main", "allow", "push"),
    ] {
        let args = serde_json::json!({ "command": line }).to_string();
        let out = env.steward(&["policy", "check", "shell_command", "--args", &args, "--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!((v["decision"].as_str(), v["rule"].as_str()), (Some(decision), Some(rule)), "{line}: {v}");
    }
}

#[test]
fn launched_commands_and_package_scripts_are_judged_by_policy_check() {
    let env = Env::new();
    env.user_config("[shell]\nenabled = true\n");
    let mut policy = String::new();
    for (name, argv, decision) in [
        ("npm", r#"["npm", "**"]"#, "allow"),
        ("npx", r#"["npx", "**"]"#, "allow"),
        ("rustup", r#"["rustup", "**"]"#, "allow"),
        ("sed", r#"["sed", "**"]"#, "allow"),
        ("no-npm-publish", r#"["npm", "publish", "**"]"#, "deny"),
        ("no-cargo-publish", r#"["cargo", "publish", "**"]"#, "deny"),
    ] {
        policy.push_str(&format!(
            "[[policy.rule]]\nname = \"{name}\"\ntool = \"shell_command\"\nargv = {argv}\ndecision = \"{decision}\"\n"
        ));
    }
    env.write(".steward/policy.toml", &policy);
    env.write("package.json", r#"{"scripts": {"deploy": "npm publish", "lint": "npm ls"}}"#);
    let trusted = env.steward(&["trust"]);
    assert_eq!(code(&trusted), 0, "{}", stderr(&trusted));
    for (line, decision, rule) in [
        ("npx npm publish", "deny", "no-npm-publish"),
        ("npm exec -- npm publish", "deny", "no-npm-publish"),
        ("rustup run stable cargo publish", "deny", "no-cargo-publish"),
        ("npm pub", "deny", "no-npm-publish"),
        ("npm run deploy", "deny", "no-npm-publish"),
        ("sed -n '1e id' f", "ask", "runs_other_code"),
        ("npm run lint", "allow", "npm"),
    ] {
        let args = serde_json::json!({ "command": line }).to_string();
        let out = env.steward(&["policy", "check", "shell_command", "--args", &args, "--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!((v["decision"].as_str(), v["rule"].as_str()), (Some(decision), Some(rule)), "{line}: {v}");
    }
    let out = env.steward(&["policy", "check", "shell_command", "--args", r#"{"command":"npm run deploy"}"#]);
    assert!(stdout(&out).contains("runs the `deploy` script of `package.json`"), "{}", stdout(&out));
}

#[test]
fn rollback_undoes_a_runs_edits_and_never_clobbers_later_changes() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    env.write("other.txt", "keep\n");
    let user = env.dir.path().join("xdg/steward");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("config.toml"),
        "[[policy.rule]]\nname = \"edits-ok\"\ntool = \"edit\"\ndecision = \"allow\"\n",
    )
    .unwrap();
    let out = env.steward(&["run", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(env.read("note.txt"), "new text\n");
    let list = env.steward(&["rollback", "last", "--list"]);
    assert!(stdout(&list).contains("step 1") && stdout(&list).contains("pending"), "{}", stdout(&list));

    let undo = env.steward(&["rollback", "last"]);
    assert_eq!(code(&undo), 0, "{}", stdout(&undo));
    assert_eq!(env.read("note.txt"), "old text\n");
    assert!(stdout(&env.steward(&["rollback", "last", "--list"])).contains("undone"));
    let again = env.steward(&["rollback", "last"]);
    assert_eq!(code(&again), 0);
    assert!(stdout(&again).contains("already undone"), "{}", stdout(&again));

    // A second edit, then someone else changes the file: the rollback refuses to clobber it.
    let out = env.steward(&["run", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&out), 0);
    env.write("note.txt", "new text, edited by hand\n");
    let undo = env.steward(&["rollback", "last"]);
    assert_eq!(code(&undo), 1);
    assert!(stdout(&undo).contains("changed after the run wrote it"), "{}", stdout(&undo));
    assert_eq!(env.read("note.txt"), "new text, edited by hand\n");
    assert_eq!(code(&env.steward(&["audit", "verify"])), 0);
}

#[test]
fn rollback_last_means_the_newest_run_that_changed_files() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    let none = env.steward(&["rollback", "last", "--list"]);
    assert_eq!(code(&none), 0, "{}", stderr(&none));
    assert!(stdout(&none).contains("no recent run changed files"), "{}", stdout(&none));
    env.user_config("[[policy.rule]]\nname = \"edits-ok\"\ntool = \"edit\"\ndecision = \"allow\"\n");
    let edit = env.steward(&["run", "--json", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&edit), 0, "{}", stderr(&edit));
    let edit_run = events(&edit)[0]["run_id"].as_str().unwrap().to_string();
    // Newer runs that only read do not hide it.
    assert_eq!(code(&env.steward(&["run", "read note.txt"])), 0);
    assert_eq!(code(&env.steward(&["run", "read note.txt"])), 0);
    let list = env.steward(&["rollback", "last", "--list"]);
    let said = stdout(&list);
    assert!(said.contains(&format!("last run that changed files: {edit_run}")), "{said}");
    assert!(said.contains("step 1") && said.contains("note.txt"), "{said}");
    let undo = env.steward(&["rollback", "last"]);
    assert_eq!(code(&undo), 0, "{}", stdout(&undo));
    assert_eq!(env.read("note.txt"), "old text\n");
    // `--help` says what `last` means.
    let help = stdout(&env.steward(&["rollback", "--help"]));
    assert!(help.contains("your newest run that changed files"), "{help}");
}

#[test]
fn an_untrusted_workspace_config_cannot_pick_providers_or_loosen_policy() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    env.write(
        ".steward/config.toml",
        "[run]\nprovider = \"evil\"\n[providers.evil]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\ndefault_model = \"m\"\nretry_backoff_ms = 1\n\
         [policy]\ndefault = \"allow\"\n",
    );
    let out = env.steward(&["run", "--json", "list files"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("`providers` ignored") && stderr(&out).contains("steward trust"), "{}", stderr(&out));
    assert_eq!(find(&events(&out), "run_started")["planner"], "classic");

    let trusted = env.steward(&["trust"]);
    assert_eq!(code(&trusted), 0, "{}", stderr(&trusted));
    let out = env.steward(&["run", "--json", "list files"]);
    assert!(!stderr(&out).contains("ignored"), "{}", stderr(&out));
    assert_eq!(find(&events(&out), "run_started")["provider"], "evil");
}

#[test]
fn audit_verify_notices_records_cut_off_the_end() {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    assert_eq!(code(&env.steward(&["run", "read a.txt"])), 0);
    assert_eq!(code(&env.steward(&["run", "read a.txt"])), 0);
    assert_eq!(code(&env.steward(&["audit", "verify"])), 0);
    let cut = std::process::Command::new("python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from audit where seq>=3'); c.commit()"])
        .arg(db(&env))
        .status()
        .unwrap();
    assert!(cut.success());
    let bad = env.steward(&["audit", "verify"]);
    assert_eq!(code(&bad), 1, "{}", stdout(&bad));
    let said = stdout(&bad);
    assert!(said.contains("removed"), "{said}");
    // What is missing is named; no empty record id.
    assert!(!said.contains("()"), "{said}");
    assert!(said.contains("the chain ends at record 2, but the anchor") && said.contains("are missing"), "{said}");
}

/// The terminal approval (a pseudo-terminal from `script`): the proposed diff is printed once,
/// inside the prompt, with a `MM:SS` countdown; the answer ends the prompt.
#[test]
fn a_terminal_approval_shows_the_diff_once_with_a_minutes_countdown() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    let mut terminal = Terminal::start(&env, "run \"replace 'old' with 'new' in note.txt\"");
    // The prompt and its countdown may arrive in separate reads: wait for both.
    terminal.wait_for(APPROVAL_PROMPT);
    terminal.wait_for(" left)");
    let prompt = terminal.screen.clone();
    terminal.send("y\n");
    let (ok, screen) = terminal.finish();
    assert!(ok, "{screen}");
    assert_eq!(prompt.matches("+new text").count(), 1, "the diff is printed once before the answer:\n{prompt}");
    assert!(prompt.contains("proposed change to note.txt (shown below)"), "{prompt}");
    assert!(prompt.contains("(29:59 left)") || prompt.contains("(30:00 left)"), "{prompt}");
    assert!(screen.contains("approved by local:tester"), "{screen}");
    assert_eq!(env.read("note.txt"), "new text\n");
}

#[test]
fn hook_output_reaches_the_tool_completed_event_and_the_terminal_redacted() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    env.user_config(
        "[[policy.rule]]\nname = \"edits-ok\"\ntool = \"edit\"\ndecision = \"allow\"\n\
         [[hook]]\nname = \"shout\"\nevents = [\"edit\"]\npath_pattern = \"*.txt\"\n\
         commands = [[\"echo\", \"checked {path} with sk-proj-HOOKSECRET0123456789abcdef\"]]\n",
    );
    let out = env.steward(&["run", "--json", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let completed = find(&evs, "tool_completed");
    let hooks = completed["hook_output"].as_str().unwrap_or_default();
    assert!(hooks.starts_with("[hook `shout` passed after edit of `note.txt`]"), "{completed}");
    assert!(hooks.contains("checked note.txt with"), "{completed}");
    assert!(!stdout(&out).contains("HOOKSECRET"), "a secret in hook output is redacted");

    env.write("note.txt", "old text\n");
    let out = env.steward(&["run", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("[hook `shout` passed after edit of `note.txt`]"), "{shown}");
    assert!(shown.contains("checked note.txt with") && !shown.contains("HOOKSECRET"), "{shown}");

    // A call that fires no hook has no `hook_output` field.
    let out = env.steward(&["run", "--json", "read note.txt"]);
    assert!(find(&events(&out), "tool_completed").get("hook_output").is_none(), "{}", stdout(&out));
}

/// The README's first command is what a new user runs on a cold checkout: Cargo's progress
/// stays visible (no `-q`) and the README says how long the first build takes.
#[test]
fn readme_first_command_shows_build_progress_and_says_how_long_it_takes() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let first = readme.lines().find(|l| l.starts_with("cargo run")).expect("a `cargo run` command in README");
    assert!(!first.split_whitespace().any(|w| w == "-q" || w == "--quiet"), "{first}");
    let block = &readme[..readme.find(first).unwrap()];
    let comment = block.rsplit("```sh").next().unwrap_or_default();
    assert!(comment.contains("first build") && comment.contains("minutes"), "{comment}");
}

/// `last` means the caller's own newest run: another owner's run in the same state folder is
/// not what `steward show last`, `steward audit list --run last` or `steward rollback last`
/// picks.
#[test]
fn last_is_your_own_newest_run() {
    let env = Env::new();
    env.write("note.txt", "old\n");
    env.user_config("[[policy.rule]]\nname = \"edits-ok\"\ntool = \"edit\"\ndecision = \"allow\"\n");
    let as_user = |user: &str, args: &[&str]| {
        let mut command = env.command(args);
        command.env("USER", user);
        command.output().unwrap()
    };
    let run = as_user("alice", &["run", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    assert_eq!(env.read("note.txt"), "new\n");
    for args in [&["show", "last"][..], &["audit", "list", "--run", "last"], &["rollback", "last"]] {
        let out = as_user("bob", args);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!text.contains("replace 'old'") && !text.contains("note.txt"), "{args:?} showed alice's run: {text}");
    }
    assert_eq!(env.read("note.txt"), "new\n", "bob's `rollback last` undid alice's run");
    let own = as_user("alice", &["show", "last"]);
    assert!(stdout(&own).contains("note.txt") || stdout(&own).contains("replace"), "{}", stdout(&own));
}
