//! Through the binary: per-action approval expiry (SPEC C4), the explained risk score (C2),
//! `steward policy replay`, and where `config show` says each value came from (N).

use crate::common;

use std::io::Read;
use std::process::Stdio;

use common::*;
use serde_json::Value;

fn check(env: &Env, tool: &str, args: &str, extra: &[&str]) -> Value {
    let mut argv = vec!["policy", "check", tool, "--args", args, "--json"];
    argv.extend_from_slice(extra);
    let out = env.steward(&argv);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}

fn seconds_between(from: &Value, to: &Value) -> i64 {
    let at = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    (at(to) - at(from)).num_milliseconds()
}

#[test]
fn a_rule_s_approval_ttl_sets_the_request_s_expiry_and_is_shown() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    env.user_config(
        "[[policy.rule]]\nname = \"quick-edits\"\ntool = \"edit\"\ndecision = \"ask\"\napproval_ttl_seconds = 90\n",
    );
    let out = env.steward(&["run", "--json", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let asked = find(&evs, "tool_approval_required");
    let ms = seconds_between(&asked["at"], &asked["expires_at"]);
    assert!((89_000..=90_000).contains(&ms), "expires 90 s after it was asked, not 30 min: {ms} ms");
    let reason = asked["reason"].as_str().unwrap();
    assert!(reason.contains("expires after 90 s: approval_ttl_seconds of policy rule `quick-edits`"), "{reason}");

    // Without the setting the default (30 minutes) applies.
    env.user_config("[[policy.rule]]\nname = \"quick-edits\"\ntool = \"edit\"\ndecision = \"ask\"\n");
    let out = env.steward(&["run", "--json", "replace 'old' with 'new' in note.txt"]);
    let evs = events(&out);
    let asked = find(&evs, "tool_approval_required");
    let ms = seconds_between(&asked["at"], &asked["expires_at"]);
    assert!((1_799_000..=1_800_000).contains(&ms), "{ms}");
    assert!(!asked["reason"].as_str().unwrap().contains("approval_ttl_seconds"));
}

/// Nobody answers the terminal prompt: the request expires after the rule's 2 seconds (the
/// proactive timer), the call does not run, and the prompt counted down from 2 s.
#[test]
fn a_short_approval_ttl_expires_an_unanswered_terminal_prompt() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    env.user_config(
        "[[policy.rule]]\nname = \"quick-edits\"\ntool = \"edit\"\ndecision = \"ask\"\napproval_ttl_seconds = 2\n",
    );
    let steward = env!("CARGO_BIN_EXE_steward");
    let started = std::time::Instant::now();
    let mut child = std::process::Command::new("script")
        .args(["-qfec", &format!("{steward} run \"replace 'old' with 'new' in note.txt\""), "/dev/null"])
        .current_dir(env.ws())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.dir.path())
        .env("USER", "tester")
        .env("STEWARD_HOME", env.home())
        .env("XDG_CONFIG_HOME", env.dir.path().join("xdg"))
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Keep stdin open (and silent) until the run ends.
    let _stdin = child.stdin.take().unwrap();
    let mut screen = String::new();
    child.stdout.take().unwrap().read_to_string(&mut screen).unwrap();
    let status = child.wait().unwrap();
    let took = started.elapsed();
    assert!(status.success(), "{screen}");
    assert!(took < std::time::Duration::from_secs(60), "{took:?}");
    assert!(screen.contains("(00:02 left)") || screen.contains("(00:01 left)"), "{screen}");
    assert!(screen.contains("approval expired"), "{screen}");
    assert!(screen.contains("approval_ttl_seconds of policy rule `quick-edits`"), "{screen}");
    assert_eq!(env.read("note.txt"), "old text\n");
    let out = env.steward(&["show", "last", "--json"]);
    assert!(stdout(&out).contains("tool_approval_expired"), "{}", stdout(&out));
}

#[test]
fn tool_and_rule_ttls_combine_and_an_untrusted_workspace_cannot_lengthen_them() {
    let env = Env::new();
    env.user_config(
        "[policy]\napproval_timeout_seconds = 600\n\
         [[tool]]\nname = \"deploy\"\ndescription = \"Deploy.\"\ncommand = [\"true\"]\nrisk = \"high\"\napproval_ttl_seconds = 120\n",
    );
    let d = check(&env, "deploy", "{}", &[]);
    assert_eq!(d["decision"], "ask");
    assert_eq!(d["approval_ttl"]["seconds"], 120);
    assert_eq!(d["approval_ttl"]["source"], "tool `deploy`");
    let out = env.steward(&["policy", "check", "deploy"]);
    assert!(stdout(&out).contains("approval expires after 120 s (tool `deploy`)"), "{}", stdout(&out));

    // A workspace (untrusted) rule may shorten it …
    env.write(
        ".steward/policy.toml",
        "[[policy.rule]]\nname = \"ws-short\"\ntool = \"deploy\"\ndecision = \"ask\"\napproval_ttl_seconds = 30\n",
    );
    let d = check(&env, "deploy", "{}", &[]);
    assert_eq!(
        (d["approval_ttl"]["seconds"].as_u64(), d["approval_ttl"]["source"].as_str()),
        (Some(30), Some("policy rule `ws-short`"))
    );

    // … but not lengthen anything beyond the user's own approval_timeout_seconds.
    env.write(
        ".steward/policy.toml",
        "[[policy.rule]]\nname = \"ws-long\"\ntool = \"edit\"\ndecision = \"ask\"\napproval_ttl_seconds = 86400\n",
    );
    let out = env.steward(&["policy", "check", "edit", "--args", r#"{"path":"a.txt","old":"x","new":"y"}"#, "--json"]);
    assert!(stderr(&out).contains("lowered to 600"), "{}", stderr(&out));
    let d: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(d["approval_ttl"]["seconds"], 600, "{d}");

    // A TTL of 0 is a configuration error.
    env.user_config(
        "[[policy.rule]]\nname = \"zero\"\ntool = \"edit\"\ndecision = \"ask\"\napproval_ttl_seconds = 0\n",
    );
    let out = env.steward(&["policy", "check", "edit"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("approval_ttl_seconds"), "{}", stderr(&out));
}

#[test]
fn policy_check_explains_the_risk_score_from_the_arguments() {
    let env = Env::new();
    env.user_config("[shell]\nenabled = true\n");
    env.write("src/lib.rs", "fn a() {}\n");
    env.write(".github/workflows/ci.yml", "on: push\n");

    let factors = |d: &Value| -> Vec<String> {
        d["risk_factors"].as_array().unwrap().iter().map(|f| f["factor"].as_str().unwrap().to_string()).collect()
    };
    // A plain read: the level alone.
    let d = check(&env, "read", r#"{"path":"src/lib.rs"}"#, &[]);
    assert_eq!(d["risk"], 0.2);
    assert_eq!(factors(&d), ["risk_level"]);
    assert_eq!(d["decision"], "allow");
    // The same read in a tainted run.
    let d = check(&env, "read", r#"{"path":"src/lib.rs"}"#, &["--tainted"]);
    assert_eq!((d["risk"].as_f64(), factors(&d)), (Some(0.3), vec!["risk_level".into(), "tainted".into()]));
    assert_eq!(d["decision"], "allow", "0.3 stays under the taint threshold");
    // An edit inside src/ and one of a CI workflow (protected, outside the source folders).
    let d = check(&env, "edit", r#"{"path":"src/lib.rs","old":"a","new":"b"}"#, &[]);
    assert_eq!((d["risk"].as_f64(), factors(&d)), (Some(0.6), vec!["risk_level".into(), "writes".into()]));
    let d = check(&env, "edit", r#"{"path":".github/workflows/ci.yml","old":"push","new":"pull"}"#, &[]);
    assert_eq!(d["risk"], 1.0);
    assert_eq!(factors(&d), ["risk_level", "writes", "protected_path", "outside_source_paths"]);
    assert_eq!(d["decision"], "ask", "the decision itself is unchanged");
    // Options are read as the program reads them: `rm -rf` sets `--force` (its `-f`);
    // `--force-with-lease` is a force push.
    for (line, option) in [
        ("rm -rf build", "--force"),
        ("git push --force-with-lease origin main", "--force"),
        ("git reset --hard HEAD~1", "--hard"),
    ] {
        let d = check(&env, "shell_command", &serde_json::json!({ "command": line }).to_string(), &[]);
        let destructive = d["risk_factors"].as_array().unwrap().iter().find(|f| f["factor"] == "destructive_option");
        let detail = destructive.unwrap_or_else(|| panic!("{line}: {d}"))["detail"].as_str().unwrap().to_string();
        assert!(detail.contains(&format!("`{option}`")), "{line}: {detail}");
    }
    // Not by substring: a file named like an option after `--`, or `-f` inside a word.
    for line in ["ls -- -f", "echo x-force", "git status"] {
        let d = check(&env, "shell_command", &serde_json::json!({ "command": line }).to_string(), &[]);
        assert!(!factors(&d).contains(&"destructive_option".to_string()), "{line}: {d}");
    }
    // The text form prints each contribution.
    let out = env.steward(&["policy", "check", "shell_command", "--args", r#"{"command":"rm -rf build"}"#]);
    let text = stdout(&out);
    for expected in ["+0.80 risk_level", "+0.20 deletes", "+0.20 destructive_option", "clamped to 1"] {
        assert!(text.contains(expected), "{expected}: {text}");
    }

    // The lists are configurable.
    env.user_config(
        "[shell]\nenabled = true\n[policy.risk]\ndestructive_options = [\"--dry-run\"]\nsource_paths = [\".github\"]\n",
    );
    let d = check(&env, "shell_command", r#"{"command":"rm -rf build"}"#, &[]);
    assert!(!factors(&d).contains(&"destructive_option".to_string()), "{d}");
    let d = check(&env, "edit", r#"{"path":".github/workflows/ci.yml","old":"push","new":"pull"}"#, &[]);
    assert_eq!(factors(&d), ["risk_level", "writes", "protected_path"]);
}

#[test]
fn policy_replay_lists_recorded_calls_the_current_policy_decides_differently() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    let out = env.steward(&["run", "--json", "read note.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let read_run = events(&out)[0]["run_id"].as_str().unwrap().to_string();
    let out = env.steward(&["run", "--json", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(env.read("note.txt"), "old text\n");

    // Under the same policy nothing differs.
    let out = env.steward(&["policy", "replay", "--since", "1h"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("2 run(s),") && stdout(&out).contains(", 0 decided differently now"),
        "{}",
        stdout(&out)
    );

    // Reading notes is now denied, editing them allowed.
    env.user_config(
        "[[policy.rule]]\nname = \"no-notes\"\ntool = \"read\"\npath = [\"note.txt\"]\ndecision = \"deny\"\n\
         [[policy.rule]]\nname = \"edits-ok\"\ntool = \"edit\"\ndecision = \"allow\"\n",
    );
    let out = env.steward(&["policy", "replay", "--since", "1h"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(" read {\"path\":\"note.txt\""), "{text}");
    assert!(text.contains(": allow (`default:low`) → deny (`no-notes`)"), "{text}");
    assert!(text.contains(" edit {"), "{text}");
    assert!(text.contains(": ask (`default:medium`) → allow (`edits-ok`)"), "{text}");
    assert!(!text.contains(" 0 decided differently now"), "{text}");
    assert_eq!(env.read("note.txt"), "old text\n", "replay runs nothing");

    let out = env.steward(&["policy", "replay", "--run", &read_run, "--json"]);
    let lines = events(&out);
    assert_eq!(lines.len(), 1, "{}", stdout(&out));
    assert_eq!(lines[0]["run_id"], read_run.as_str());
    assert_eq!(lines[0]["recorded"]["decision"], "allow");
    assert_eq!(lines[0]["now"]["decision"], "deny");
    assert_eq!(lines[0]["now"]["rule"], "no-notes");

    // Runs before --since are left out; a bad --since is a usage error.
    let future = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let out = env.steward(&["policy", "replay", "--since", &future]);
    assert!(stdout(&out).contains("0 run(s)"), "{}", stdout(&out));
    let out = env.steward(&["policy", "replay", "--since", "yesterday"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn config_show_names_real_sources_and_the_defaults_in_effect() {
    let env = Env::new();
    env.user_config("[limits]\nmax_tool_output_chars = 900\n");
    // An untrusted workspace tries to raise one limit and lowers another.
    env.write(".steward/config.toml", "[limits]\nmax_rounds = 50\nmax_repeated_calls = 1\n");
    let out = env.steward(&["config", "show", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["sources"]["limits.max_repeated_calls"].as_str().unwrap().ends_with(".steward/config.toml"));
    assert!(v["sources"]["limits.max_tool_output_chars"].as_str().unwrap().ends_with("xdg/steward/config.toml"));
    assert!(v["sources"].get("limits.max_rounds").is_none(), "an ignored value has no source: {}", v["sources"]);
    assert_eq!(v["defaults"]["limits.max_rounds"], 5);
    assert_eq!(v["config"]["limits"]["max_rounds"], 5);
    assert_eq!(v["defaults"]["policy.approval_timeout_seconds"], 1800);
    assert!(v["defaults"].get("limits.max_tool_output_chars").is_none());

    let out = env.steward(&["config", "show"]);
    let text = stdout(&out);
    assert!(text.contains("# policy.approval_timeout_seconds = 1800 (default)"), "{text}");
    assert!(text.contains("# limits.max_rounds = 5 (default)"), "{text}");
    assert!(!text.contains("# limits.max_rounds from"), "{text}");
    assert!(text.contains("# limits.max_repeated_calls from ./.steward/config.toml"), "{text}");
}

/// A workspace below the repository root (`repo/svc`): the root's cargo alias and
/// `package.json` script, the cargo home's alias, are what cargo and npm run there, so the
/// gate reads them and judges what they run.
#[test]
fn parent_folder_configuration_is_read_as_the_program_reads_it() {
    let env = Env::new();
    let repo = env.ws().join("repo");
    let svc = repo.join("svc");
    std::fs::create_dir_all(&svc).unwrap();
    env.user_config(
        "[shell]\nenabled = true\n\
         [[policy.rule]]\nname = \"cargo-ok\"\ntool = \"shell_command\"\nargv = [\"cargo\", \"**\"]\ndecision = \"allow\"\n\
         [[policy.rule]]\nname = \"npm-ok\"\ntool = \"shell_command\"\nargv = [\"npm\", \"**\"]\ndecision = \"allow\"\n\
         [[policy.rule]]\nname = \"no-publish\"\ntool = \"shell_command\"\nargv = [\"cargo\", \"publish\", \"**\"]\ndecision = \"deny\"\n\
         [[policy.rule]]\nname = \"no-rm-rf\"\ntool = \"shell_command\"\nargv = [\"rm\", \"-rf\", \"**\"]\ndecision = \"deny\"\n",
    );
    let svc_arg = svc.display().to_string();
    let judge = |command: &str| {
        let args = serde_json::json!({ "command": command }).to_string();
        check(&env, "shell_command", &args, &["--workspace", &svc_arg])
    };
    assert_eq!(judge("cargo ship")["decision"], "allow");
    assert_eq!(judge("npm test")["decision"], "allow");

    std::fs::create_dir_all(repo.join(".cargo")).unwrap();
    std::fs::write(repo.join(".cargo/config.toml"), "[alias]\nship = \"publish\"\n").unwrap();
    std::fs::write(repo.join("package.json"), r#"{"scripts": {"test": "rm -rf .."}}"#).unwrap();
    let d = judge("cargo ship");
    assert_eq!((d["decision"].as_str(), d["rule"].as_str()), (Some("deny"), Some("no-publish")), "{d}");
    let d = judge("npm test");
    assert_eq!((d["decision"].as_str(), d["rule"].as_str()), (Some("deny"), Some("no-rm-rf")), "{d}");

    // cargo's home (`$HOME/.cargo` here) is read too; one that cannot be parsed asks.
    let cargo_home = env.dir.path().join(".cargo");
    std::fs::create_dir_all(&cargo_home).unwrap();
    std::fs::write(cargo_home.join("config.toml"), "[alias]\nfar = \"publish --allow-dirty\"\n").unwrap();
    assert_eq!(judge("cargo far")["rule"], "no-publish");
    std::fs::write(cargo_home.join("config.toml"), "[alias\n").unwrap();
    let d = judge("cargo far");
    assert_eq!((d["decision"].as_str(), d["rule"].as_str()), (Some("ask"), Some("runs_other_code")), "{d}");
}
