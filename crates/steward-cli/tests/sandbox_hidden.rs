//! End to end through the real binary: what a sandboxed program of a run must not see beyond
//! the secret files — the files `deny_path` matches, and Steward's own state (keys, database,
//! configuration) wherever it lies: outside `$HOME`, inside it, inside the workspace.

use crate::common;

use common::*;
use serde_json::Value;

/// `[shell]` enabled, `deny_path`, and rules allowing each named program with any arguments.
fn config(env: &Env, deny_path: &[&str], programs: &[&str]) {
    let mut text = format!("[shell]\nenabled = true\n[policy]\ndeny_path = {deny_path:?}\n");
    for program in programs {
        text.push_str(&format!(
            "[[policy.rule]]\nname = \"{program}-ok\"\ntool = \"shell_command\"\nargv = [\"{program}\", \"**\"]\ndecision = \"allow\"\n"
        ));
    }
    env.user_config(&text);
}

/// Runs one round of `shell_command` calls with `extra` environment variables and returns the
/// output and the events.
fn run_commands(env: &Env, extra: &[(&str, &std::path::Path)], calls: &[(&str, &str)]) -> (String, Vec<Value>) {
    let mut text = String::from("[[round]]\n");
    for (id, cmd) in calls {
        text.push_str(&format!(
            "[[round.tool_call]]\nid = \"{id}\"\nname = \"shell_command\"\narguments = {{ command = {cmd:?} }}\n"
        ));
    }
    text.push_str("[[round]]\ntext = \"done\"\n");
    let path = scenario(env, &text);
    let mut command = env.command(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    for (name, value) in extra {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    (stdout(&out), events(&out))
}

/// The completed call's output (the call must have run).
fn output_of<'a>(evs: &'a [Value], id: &str) -> &'a str {
    let done = evs
        .iter()
        .find(|e| e["event"] == "tool_completed" && e["call_id"] == id)
        .unwrap_or_else(|| panic!("{id} did not complete: {evs:?}"));
    done["output"].as_str().unwrap_or_default()
}

#[test]
fn sandbox_hides_deny_path_files_from_every_reader() {
    let env = Env::new();
    let plan = "PLANWORD-merger-7731-confidential";
    env.write("private/plan.txt", &format!("{plan}\n"));
    env.write("data/dump.sqlite", &format!("rows {plan}\n"));
    env.write("src/app.py", "print('PLANWORD-public')\n");
    // A script the gate cannot look into reads the denied files by name.
    env.write("read.sh", "cat private/plan.txt data/dump.sqlite\n");
    config(&env, &["private/**", "*.sqlite"], &["grep", "cat", "tar", "sh"]);
    let (out, evs) = run_commands(
        &env,
        &[],
        &[
            ("g1", "grep -r PLANWORD ."),
            ("t1", "tar cf - private | tar xOf -"),
            ("s1", "sh read.sh"),
            ("c1", "cat src/app.py"),
        ],
    );
    let grep = output_of(&evs, "g1");
    assert!(grep.contains("./src/app.py:print('PLANWORD-public')"), "grep ran over the workspace: {grep}");
    let tar = output_of(&evs, "t1");
    assert!(tar.starts_with("[exit status 0]"), "tar read the folder: {tar}");
    assert!(output_of(&evs, "s1").starts_with("[exit status 0]"), "the covered files are empty, not missing");
    assert!(output_of(&evs, "c1").contains("PLANWORD-public"), "ordinary files stay readable");
    assert!(!out.contains("merger-7731"), "a deny_path file reached the events: {out}");
    assert!(!contains_bytes(&db(&env), "merger-7731"), "a deny_path file reached the database");
    // The files themselves are untouched.
    assert!(env.read("private/plan.txt").contains(plan));

    // Control: without the deny_path rules the same commands print them (the check can fail).
    config(&env, &[], &["grep", "cat", "tar", "sh"]);
    let (out, _) = run_commands(&env, &[], &[("g2", "grep -r PLANWORD ."), ("t2", "tar cf - private | tar xOf -")]);
    assert!(out.contains("merger-7731"), "{out}");
}

#[test]
fn sandbox_hides_steward_state_wherever_it_lives() {
    let env = Env::new();
    env.write("src/app.py", "print('hello')\n");
    // The state and the configuration outside `$HOME` (which the sandbox empties anyway).
    let outside = tempfile::tempdir().unwrap();
    let state = outside.path().join("state");
    let xdg = outside.path().join("xdg");
    std::fs::create_dir_all(xdg.join("steward")).unwrap();
    config(&env, &[], &["cat", "ls", "sh", "grep"]);
    std::fs::copy(env.dir.path().join("xdg/steward/config.toml"), xdg.join("steward/config.toml")).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("session.key"), "SESSIONKEY-4e4f-outside\n").unwrap();
    let (state_s, xdg_s) = (state.display().to_string(), xdg.display().to_string());
    env.write(
        "peek.sh",
        &format!(
            "cat {state_s}/approval.key {state_s}/session.key; ls -A {state_s}; \
             cat {xdg_s}/steward/config.toml; echo peeked\n"
        ),
    );
    let vars = [("STEWARD_HOME", state.as_path()), ("XDG_CONFIG_HOME", xdg.as_path())];
    let (out, evs) = run_commands(&env, &vars, &[("p1", "sh peek.sh"), ("c1", "cat src/app.py")]);
    let approval = std::fs::read_to_string(state.join("approval.key")).unwrap();
    let peeked = output_of(&evs, "p1");
    // An empty folder of mode 0: denied to a user, empty to root.
    let refused = |line: &str| line.contains("Permission denied") || line.contains("No such file");
    for file in ["approval.key", "session.key"] {
        assert!(peeked.lines().any(|l| l.contains(file) && refused(l)), "{file}: {peeked}");
    }
    assert!(peeked.lines().any(|l| l.contains("steward/config.toml") && refused(l)), "{peeked}");
    assert!(peeked.contains("peeked"), "{peeked}");
    assert!(!peeked.contains("steward.db") && !peeked.contains("cat-ok"), "{peeked}");
    assert!(!out.contains(approval.trim()) && !out.contains("SESSIONKEY-4e4f"), "{out}");
    assert!(output_of(&evs, "c1").contains("hello"));

    // The state inside the workspace: every reader of the workspace finds it empty.
    let inner = env.ws().join(".state");
    let (_, evs) = run_commands(
        &env,
        &[("STEWARD_HOME", inner.as_path()), ("XDG_CONFIG_HOME", xdg.as_path())],
        &[("g1", "grep -r . .")],
    );
    let approval = std::fs::read_to_string(inner.join("approval.key")).unwrap();
    let grep = output_of(&evs, "g1");
    assert!(grep.contains("./src/app.py:print('hello')"), "{grep}");
    assert!(!grep.contains(approval.trim()) && !grep.contains("./.state/"), "{grep}");
}

/// With the workspace holding Steward's own folders (a user who starts Steward in `$HOME`),
/// the built-in tools refuse them as they refuse secret files: no reading the keys, the history
/// or another workspace's snapshots, no rewriting the policy or the trust list, nothing listed.
#[test]
fn built_in_tools_refuse_stewards_own_files_when_the_workspace_holds_them() {
    let env = Env::new();
    let state = env.ws().join(".steward");
    let xdg = env.ws().join(".config");
    std::fs::create_dir_all(xdg.join("steward")).unwrap();
    std::fs::write(xdg.join("steward/trust.toml"), "[trust]\n").unwrap();
    env.write("note.txt", "hello\n");
    let check = |tool: &str, args: &str| {
        let mut cmd = env.command(&["policy", "check", tool, "--args", args, "--json"]);
        let out = cmd.env("STEWARD_HOME", &state).env("XDG_CONFIG_HOME", &xdg).output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let decision: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        (decision["decision"].as_str().unwrap_or("").to_string(), decision["rule"].as_str().unwrap_or("").to_string())
    };
    let (decision, _) = check("read", r#"{"path":"note.txt"}"#);
    assert_eq!(decision, "allow");
    for (tool, args) in [
        ("read", r#"{"path":".steward/approval.key"}"#),
        ("read", r#"{"path":".steward/chat_history"}"#),
        ("edit", r#"{"path":".config/steward/trust.toml","old":"[trust]","new":"[trust]\nx = true"}"#),
        ("create", r#"{"path":".config/steward/config.toml","content":"[policy]\n"}"#),
    ] {
        let (decision, rule) = check(tool, args);
        assert_eq!((decision.as_str(), rule.as_str()), ("deny", "secret_path"), "{tool} {args}");
    }
    let path = scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nid = \"l\"\nname = \"list\"\narguments = { path = \".\" }\n\
         [[round.tool_call]]\nid = \"c\"\nname = \"list\"\narguments = { path = \".config\" }\n[[round]]\ntext = \"ok\"\n",
    );
    let mut cmd = env.command(&["run", "--json", "--provider", "fake", "--scenario", &path, "list"]);
    let out = cmd.env("STEWARD_HOME", &state).env("XDG_CONFIG_HOME", &xdg).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let listing = output_of(&evs, "l");
    assert!(listing.contains("note.txt") && !listing.contains(".steward"), "{listing}");
    let config_dir = output_of(&evs, "c");
    assert!(!config_dir.contains("steward"), "the configuration folder is listed: {config_dir}");
}
