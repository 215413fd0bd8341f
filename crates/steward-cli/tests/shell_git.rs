//! `shell_command` and git through the real `steward` binary: each simple command judged,
//! confined and tainting the run; programs a rule allows never show a secret file, nor a
//! secret only git history holds; grouped git options and programs a repository configures
//! ask.

use crate::common;

use common::*;

#[test]
fn shell_command_is_judged_per_simple_command_confined_and_taints_the_run() {
    let env = Env::new();
    env.write("note.txt", "old\n");
    env.write(".env", "TOKEN=sk-proj-SHELLSECRET0123456789abcdef\n");
    env.user_config(
        "[shell]\nenabled = true\nnetwork = true\n\
         [[policy.rule]]\nname = \"echo-ok\"\ntool = \"shell_command\"\nargv = [\"echo\", \"**\"]\ndecision = \"allow\"\n\
         [[policy.rule]]\nname = \"touch-ok\"\ntool = \"shell_command\"\nargv = [\"touch\", \"**\"]\ndecision = \"allow\"\n\
         [[policy.rule]]\nname = \"edits-ok\"\ntool = \"edit\"\ndecision = \"allow\"\n",
    );
    let calls = [
        ("c1", r#"echo hello"#),
        ("c2", r#"echo hello && rm -rf note.txt"#),
        ("c3", r#"bash -lc 'cat .env'"#),
        ("c4", r#"touch made.txt"#),
    ];
    let mut scenario_text = String::from("[[round]]\n");
    for (id, cmd) in calls {
        scenario_text.push_str(&format!(
            "[[round.tool_call]]\nid = \"{id}\"\nname = \"shell_command\"\narguments = {{ command = {cmd:?} }}\n"
        ));
    }
    scenario_text.push_str("[[round]]\n[[round.tool_call]]\nid = \"c5\"\nname = \"edit\"\narguments = { path = \"note.txt\", old = \"old\", new = \"new\" }\n");
    scenario_text.push_str("[[round]]\ntext = \"done\"\n");
    let path = scenario(&env, &scenario_text);
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let outcome = |id: &str| -> (String, String) {
        let e = evs
            .iter()
            .rev()
            .find(|e| {
                e["call_id"] == id
                    && ["tool_completed", "tool_denied", "tool_rejected", "tool_failed"]
                        .contains(&e["event"].as_str().unwrap())
            })
            .unwrap_or_else(|| panic!("no outcome for {id}"));
        (e["event"].as_str().unwrap().to_string(), e.to_string())
    };
    let (kind, c1) = outcome("c1");
    assert_eq!(kind, "tool_completed");
    assert!(c1.contains("hello") && c1.contains("exit status 0"), "{c1}");
    assert_eq!(outcome("c2").0, "tool_rejected", "a chained rm must not ride on the echo rule");
    let (kind, c3) = outcome("c3");
    assert_eq!(kind, "tool_denied", "{c3}");
    assert!(!stdout(&out).contains("SHELLSECRET"));
    let (_, c4) = outcome("c4");
    assert!(!env.ws().join("made.txt").exists(), "the sandbox let a command write: {c4}");
    // After output of a shell with network access the run is tainted: the allowed edit now
    // needs a human.
    let (kind, c5) = outcome("c5");
    assert_eq!(kind, "tool_rejected", "{c5}");
    assert_eq!(env.read("note.txt"), "old\n");
    assert!(stdout(&out).contains("taint_escalation"), "the escalation is named");
}

/// A program a rule allows cannot open a secret file (`grep -r` over the workspace): the
/// sandbox covers it, and what the file holds never reaches the model, the events or the
/// state (B09). A plain
/// `git diff` would print the committed version of a tracked secret file (its `-` lines come
/// from the index), which redaction does not know: it asks even though a rule allows it.
#[test]
fn an_allowed_reader_shows_no_line_of_a_secret_file() {
    let env = Env::new();
    env.write(".env", "SECRET=first-value-1234\n");
    env.write("keys/id_ed25519", "b3BlbnNzaC1rZXktdjEAAAAAFIRST\n");
    env.write("note.txt", "old\n");
    env.git_init();
    env.write(".env", "SECRET=first-value-1234\nmy db pass is zebra-purple-9911\n");
    env.write("keys/id_ed25519", "b3BlbnNzaC1rZXktdjEAAAAASECOND\n");
    env.write("note.txt", "new\n");
    env.user_config(
        "[shell]\nenabled = true\n\
         [[policy.rule]]\nname = \"diff-ok\"\ntool = \"shell_command\"\nargv = [\"git\", \"diff\", \"**\"]\ndecision = \"allow\"\n\
         [[policy.rule]]\nname = \"grep-ok\"\ntool = \"shell_command\"\nargv = [\"grep\", \"**\"]\ndecision = \"allow\"\n",
    );
    let path = scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nid = \"d1\"\nname = \"shell_command\"\narguments = { command = \"git diff\" }\n\
         [[round.tool_call]]\nid = \"g1\"\nname = \"shell_command\"\narguments = { command = \"grep -rn -e pass -e SECRET= -e b3Bl .\" }\n\
         [[round.tool_call]]\nid = \"s1\"\nname = \"shell_command\"\narguments = { command = \"git diff --stat\" }\n\
         [[round]]\ntext = \"done\"\n",
    );
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let asked = evs.iter().find(|e| e["event"] == "tool_approval_required" && e["call_id"] == "d1").expect("asked");
    assert_eq!(asked["rule"], "git_history", "{asked}");
    assert!(evs.iter().any(|e| e["event"] == "tool_rejected" && e["call_id"] == "d1"));
    let done = evs.iter().find(|e| e["event"] == "tool_completed" && e["call_id"] == "g1").expect("grep ran");
    let output = done["output"].as_str().unwrap();
    // The sandbox covers the secret file: grep finds it empty.
    assert!(!output.contains(".env") && !output.contains("keys/id_ed25519"), "{output}");
    let stat = evs.iter().find(|e| e["event"] == "tool_completed" && e["call_id"] == "s1").expect("stat ran");
    assert!(stat["output"].as_str().unwrap().contains("note.txt"), "{stat}");
    for secret in ["zebra-purple-9911", "first-value-1234", "AAAAASECOND", "AAAAAFIRST"] {
        assert!(!stdout(&out).contains(secret), "{secret} reached the events");
        assert!(!contains_bytes(&db(&env), secret), "{secret} reached the database");
    }
}

/// B09 through git history: `.env` was committed and later changed, so only history holds
/// its old value. A rule allows every git command, yet `git log -p` asks (nobody can answer
/// here, so it is refused) and the old value reaches neither the model nor the output;
/// `git log --oneline` still runs, and `steward policy check` gives the same decision.
#[test]
fn git_log_p_never_shows_a_secret_that_only_history_holds() {
    let env = Env::new();
    env.write(".env", "API_TOKEN=old-history-value-7351\n");
    env.write("app.py", "print('v1')\n");
    env.git_init();
    env.write(".env", "API_TOKEN=current-value-4482\n");
    env.write("app.py", "print('v2')\n");
    for args in [
        &["add", "-A"][..],
        &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "rotate the token"],
    ] {
        let ok = std::process::Command::new("git")
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE")
            .args(args)
            .current_dir(env.ws())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
    env.user_config(
        "[shell]\nenabled = true\n\
         [[policy.rule]]\nname = \"git-any\"\ntool = \"shell_command\"\nargv = [\"git\", \"**\"]\ndecision = \"allow\"\n",
    );
    let path = scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nid = \"p1\"\nname = \"shell_command\"\narguments = { command = \"git log -p\" }\n\
         [[round.tool_call]]\nid = \"o1\"\nname = \"shell_command\"\narguments = { command = \"git --no-pager log --oneline\" }\n\
         [[round]]\ntext = \"done\"\n",
    );
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let asked = evs.iter().find(|e| e["event"] == "tool_approval_required" && e["call_id"] == "p1").expect("asked");
    assert_eq!(asked["rule"], "git_history", "{asked}");
    let reason = asked["reason"].as_str().unwrap();
    assert!(reason.contains("`git log -p` can print old versions of secret files"), "{reason}");
    let rejected = evs.iter().find(|e| e["event"] == "tool_rejected" && e["call_id"] == "p1").expect("rejected");
    assert_eq!(rejected["reason"], "no_approver");
    assert!(!evs.iter().any(|e| e["event"] == "tool_started" && e["call_id"] == "p1"));
    let log = evs.iter().find(|e| e["event"] == "tool_completed" && e["call_id"] == "o1").expect("log ran");
    assert!(log["output"].as_str().unwrap().contains("rotate the token"), "{log}");
    for text in [stdout(&out), stderr(&out)] {
        assert!(!text.contains("old-history-value-7351"), "the old secret reached the output");
    }
    assert!(!contains_bytes(&db(&env), "old-history-value-7351"), "the old secret reached the database");

    let check = env.steward(&["policy", "check", "shell_command", "--args", "{\"command\":\"git log -p\"}", "--json"]);
    assert_eq!(code(&check), 0, "{}", stderr(&check));
    let v: serde_json::Value = serde_json::from_str(stdout(&check).trim()).unwrap();
    assert_eq!((v["decision"].as_str(), v["rule"].as_str()), (Some("ask"), Some("git_history")), "{v}");
}

/// git groups short options (`-Rp` is `-R -p`), and a repository's own configuration can run
/// a program on `git status` (`core.fsmonitor`). A rule allows every git command, yet
/// `git log -1 -Rp` and `git status` ask (and are refused here): the old secret is not shown
/// and the fsmonitor program never runs. `steward policy check` agrees.
#[test]
fn grouped_git_options_and_repository_programs_ask() {
    let env = Env::new();
    env.write(".env", "API_TOKEN=old-history-value-5821\n");
    env.git_init();
    env.write(".env", "API_TOKEN=current-value-1190\n");
    let ok = std::process::Command::new("git")
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_WORK_TREE")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-am", "rotate"])
        .current_dir(env.ws())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    env.user_config(
        "[shell]\nenabled = true\n\
         [[policy.rule]]\nname = \"git-any\"\ntool = \"shell_command\"\nargv = [\"git\", \"**\"]\ndecision = \"allow\"\n",
    );
    let marker = env.ws().join("FSMONITOR_RAN");
    let hook = env.ws().join(".git/fsmon.sh");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nid = \"r1\"\nname = \"shell_command\"\narguments = { command = \"git log -1 -Rp\" }\n\
         [[round]]\ntext = \"done\"\n",
    );
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let asked = evs.iter().find(|e| e["event"] == "tool_approval_required" && e["call_id"] == "r1").expect("asked");
    assert_eq!(asked["rule"], "git_history", "{asked}");
    assert!(!evs.iter().any(|e| e["event"] == "tool_started" && e["call_id"] == "r1"));
    for text in [stdout(&out), stderr(&out)] {
        assert!(!text.contains("old-history-value-5821"), "the old secret reached the output");
    }

    let ok = std::process::Command::new("git")
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_WORK_TREE")
        .args(["config", "core.fsmonitor", &hook.display().to_string()])
        .current_dir(env.ws())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let path = scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nid = \"s1\"\nname = \"shell_command\"\narguments = { command = \"git status\" }\n\
         [[round]]\ntext = \"done\"\n",
    );
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let asked = evs.iter().find(|e| e["event"] == "tool_approval_required" && e["call_id"] == "s1").expect("asked");
    assert_eq!(asked["rule"], "repository_config", "{asked}");
    assert!(asked["reason"].as_str().unwrap().contains("core.fsmonitor"), "{asked}");
    assert!(!evs.iter().any(|e| e["event"] == "tool_started" && e["call_id"] == "s1"));
    assert!(!marker.exists(), "the repository's fsmonitor program ran");

    for (command, rule) in [("git log -1 -Rp", "git_history"), ("git status", "repository_config")] {
        let args = serde_json::json!({ "command": command }).to_string();
        let check = env.steward(&["policy", "check", "shell_command", "--args", &args, "--json"]);
        assert_eq!(code(&check), 0, "{}", stderr(&check));
        let v: serde_json::Value = serde_json::from_str(stdout(&check).trim()).unwrap();
        assert_eq!((v["decision"].as_str(), v["rule"].as_str()), (Some("ask"), Some(rule)), "{command}: {v}");
    }
    // The setting is live: git run directly does start the program.
    std::process::Command::new("git")
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_WORK_TREE")
        .args(["status", "--short"])
        .current_dir(env.ws())
        .output()
        .unwrap();
    assert!(marker.exists(), "the fsmonitor setting did not take effect");
}
