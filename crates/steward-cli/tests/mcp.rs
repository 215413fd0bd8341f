//! MCP tools in real runs: the reference servers `server-everything` and `server-filesystem`
//! (`STEWARD_TEST_MCP_EVERYTHING`, `STEWARD_TEST_MCP_FILESYSTEM`, set by `scripts/test.sh`)
//! behind the same gate as every other tool. Named `peer_*`.

use crate::common;

use common::*;

fn everything() -> String {
    std::env::var("STEWARD_TEST_MCP_EVERYTHING")
        .expect("STEWARD_TEST_MCP_EVERYTHING is not set: run the tests through scripts/test.sh")
}

fn filesystem() -> String {
    std::env::var("STEWARD_TEST_MCP_FILESYSTEM")
        .expect("STEWARD_TEST_MCP_FILESYSTEM is not set: run the tests through scripts/test.sh")
}

fn outcome<'a>(evs: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    evs.iter()
        .rev()
        .find(|e| {
            e["call_id"] == id
                && ["tool_completed", "tool_denied", "tool_rejected", "tool_failed"]
                    .contains(&e["event"].as_str().unwrap_or(""))
        })
        .unwrap_or_else(|| panic!("no outcome for {id}: {:?}", names(evs)))
}

#[test]
fn peer_mcp_tools_are_listed_gated_called_and_taint_the_run() {
    let env = Env::new();
    env.write("note.txt", "old\n");
    env.user_config(&format!(
        "[mcp_servers.everything]\ncommand = [{:?}, \"stdio\"]\nread_only_tools = [\"echo\"]\n\
         [[policy.rule]]\nname = \"echo-ok\"\ntool = \"everything__echo\"\ndecision = \"allow\"\n\
         [[policy.rule]]\nname = \"edits-ok\"\ntool = \"edit\"\ndecision = \"allow\"\n",
        everything()
    ));
    let listed = env.steward(&["mcp", "tools", "everything"]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    assert!(stdout(&listed).lines().any(|l| l.starts_with("everything__echo ")), "{}", stdout(&listed));

    let scenario_text = "[[round]]\n[[round.tool_call]]\nid = \"m1\"\nname = \"everything__echo\"\narguments = { message = \"hello from steward\" }\n\
        [[round.tool_call]]\nid = \"m2\"\nname = \"everything__get-sum\"\narguments = { a = 2, b = 3 }\n\
        [[round]]\n[[round.tool_call]]\nid = \"e1\"\nname = \"edit\"\narguments = { path = \"note.txt\", old = \"old\", new = \"new\" }\n\
        [[round]]\ntext = \"done\"\n";
    let path = scenario(&env, scenario_text);
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "use mcp"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let m1 = outcome(&evs, "m1");
    assert_eq!(m1["event"], "tool_completed", "{m1}");
    assert!(m1["output"].as_str().unwrap().contains("hello from steward"), "{m1}");
    // No rule allows get-sum: an MCP tool asks by default, and nobody can answer here.
    assert_eq!(outcome(&evs, "m2")["event"], "tool_rejected");
    // MCP output tainted the run: the edit a rule allows now needs a human.
    let e1 = outcome(&evs, "e1");
    assert_eq!(e1["event"], "tool_rejected", "{e1}");
    assert_eq!(env.read("note.txt"), "old\n");
}

#[test]
fn peer_mcp_filesystem_server_refuses_outside_its_root_and_the_model_is_told() {
    let env = Env::new();
    let root = env.ws().join("shared");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "inside\n").unwrap();
    env.user_config(&format!(
        "[mcp_servers.fs]\ncommand = [{:?}, {:?}]\nread_only_tools = [\"read_text_file\"]\n[[policy.rule]]\nname = \"fs-read\"\ntool = \"fs__read_text_file\"\ndecision = \"allow\"\n",
        filesystem(),
        root.display().to_string()
    ));
    // One run per call: after the first MCP result the run is tainted, and the allowing rule
    // would then ask.
    let run_one = |id: &str, file: String| {
        let scenario_text = format!(
            "[[round]]\n[[round.tool_call]]\nid = \"{id}\"\nname = \"fs__read_text_file\"\narguments = {{ path = {file:?} }}\n[[round]]\ntext = \"done\"\n"
        );
        let path = scenario(&env, &scenario_text);
        let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "read"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        events(&out)
    };
    let evs = run_one("in", root.join("a.txt").display().to_string());
    let inside = outcome(&evs, "in");
    assert_eq!(inside["event"], "tool_completed", "{inside}");
    assert!(inside["output"].as_str().unwrap().contains("inside"));
    let evs = run_one("out", "/etc/hostname".to_string());
    let outside = outcome(&evs, "out");
    assert_eq!(outside["event"], "tool_failed", "{outside}");
    let error = outside["error"].as_str().unwrap().to_lowercase();
    assert!(error.contains("denied") || error.contains("outside") || error.contains("not allowed"), "{outside}");
}

/// A server that never answers `initialize` is killed when it times out, even by a command
/// that exits right after (`steward mcp list`): no server is left running. Started outside
/// the sandbox (`sandbox = false`, which the listing names), so its pid is the machine's.
#[test]
fn mcp_list_leaves_no_server_that_never_initialised() {
    let env = Env::new();
    let pid_file = env.dir.path().join("hang.pid");
    env.user_config(&format!(
        "[mcp_servers.hang]\ncommand = [\"sh\", \"-c\", \"echo $$ > {}; exec sleep 600\"]\nstartup_timeout_ms = 300\nsandbox = false\n",
        pid_file.display()
    ));
    let out = env.steward(&["mcp", "list"]);
    assert!(stdout(&out).contains("initialize timed out"), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("NOT SANDBOXED (sandbox = false)"), "{}", stdout(&out));
    let pid = std::fs::read_to_string(&pid_file).expect("the server wrote its pid");
    // SIGKILL was sent before `steward` exited; the process may still be finishing its exit.
    // Gone, or a zombie waiting for init to reap it: either way no longer running.
    let state = || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()).map(str::to_string);
        (state.unwrap_or_else(|| "gone".into()), stat)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (now, stat) = state();
        if now == "gone" || now == "Z" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the server is still running: {stat}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The last run's id and the output of its tool call.
fn last_call(env: &Env) -> (String, String) {
    let out = env.steward(&["show", "last", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let output = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "tool_completed")
        .unwrap_or_else(|| panic!("no tool_completed: {shown}"))["output"]
        .as_str()
        .unwrap()
        .to_string();
    (shown["run"]["id"].as_str().unwrap().to_string(), output)
}

fn fault_server() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../steward-mcp/tests/fixtures/fault_server.py")
        .display()
        .to_string()
}

/// `steward mcp call` prints the tool's result after the progress lines, and with `--json`
/// only the outcome as one JSON object. A secret-shaped value in the arguments would leave the
/// machine: the call asks (`data_flow`), and the secret is shown nowhere.
#[test]
fn mcp_call_prints_the_result() {
    let env = Env::new();
    env.user_config(&format!(
        "[mcp_servers.srv]\ncommand = [\"python3\", {:?}, \"normal\"]\nread_only_tools = [\"echo\", \"elicit*\"]\n\
         [[policy.rule]]\nname = \"echo-ok\"\ntool = \"srv__echo\"\ndecision = \"allow\"\n",
        fault_server()
    ));
    let args = r#"{"note": "hello"}"#;
    let out = env.steward(&["mcp", "call", "srv", "echo", "--args", args]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let shown = stdout(&out);
    let done = shown.find("✓ done in").expect("the progress line");
    let result = shown.find(r#""note": "hello""#).unwrap_or_else(|| panic!("the result is printed: {shown}"));
    assert!(done < result, "after the progress line: {shown}");
    assert!(shown.contains(r#""tool": "echo""#), "{shown}");

    let out = env.steward(&["mcp", "call", "srv", "echo", "--args", args, "--json"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let shown: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(shown["status"], "completed", "{shown}");
    assert_eq!(shown["tool"], "srv__echo");
    assert!(shown["run_id"].as_str().unwrap().starts_with("run_"), "{shown}");
    let output: serde_json::Value = serde_json::from_str(shown["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["args"]["note"], "hello");
    assert!(shown["output_chars"].as_u64().unwrap() > 0);

    let secret = "sk-ant-api03-abcdefghijklmnopqrstuv";
    let with_secret = format!(r#"{{"note": "hello", "key": "{secret}"}}"#);
    let out = env.steward(&["mcp", "call", "srv", "echo", "--args", &with_secret, "--json"]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!text.contains(secret), "redacted: {text}");
    let shown: serde_json::Value =
        serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_ne!(shown["status"], "completed", "{shown}");
    let records = audit(&env, shown["run_id"].as_str().unwrap());
    assert!(
        records.iter().any(|r| r["policy"] == "data_flow"
            && r["outcome"] == "escalated"
            && r["detail"].as_str().is_some_and(|d| d.contains("secret-shaped"))),
        "{records:?}"
    );
    assert!(!serde_json::to_string(&records).unwrap().contains(secret));

    let out = env.steward(&["mcp", "call", "srv", "rpc_error", "--json"]);
    let shown: serde_json::Value =
        serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_ne!(shown["status"], "completed", "{shown}");
    assert!(shown["error"].as_str().is_some_and(|e| !e.is_empty()), "{shown}");
}

/// A server that asks for input during `steward mcp call`, with nobody at a terminal: declined
/// at once with the reason, audited; one that asks while its tools are listed is declined too.
#[test]
fn elicitations_without_anyone_to_answer_are_declined_with_a_reason() {
    let env = Env::new();
    env.user_config(&format!(
        "[mcp_servers.srv]\ncommand = [\"python3\", {:?}, \"normal\"]\nread_only_tools = [\"echo\", \"elicit*\"]\n\
         [[policy.rule]]\nname = \"elicit-ok\"\ntool = \"srv__elicit\"\ndecision = \"allow\"\n\
         [[policy.rule]]\nname = \"odd-ok\"\ntool = \"srv__elicit_unsupported\"\ndecision = \"allow\"\n\
         [mcp_servers.lists]\ncommand = [\"python3\", {:?}, \"elicit_on_list\"]\n",
        fault_server(),
        fault_server()
    ));
    let out = env.steward(&["mcp", "call", "srv", "elicit", "--args", "{}"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("answered `decline`: no_approver"), "{shown}");
    let (run_id, output) = last_call(&env);
    assert_eq!(output, r#"{"action": "decline"}"#, "the server was told decline");
    let records = audit(&env, &run_id);
    let asked: Vec<&serde_json::Value> = records.iter().filter(|r| r["action"] == "mcp_elicitation").collect();
    assert_eq!(asked.len(), 2, "asked and answered: {records:?}");
    assert_eq!(asked[1]["outcome"], "blocked");
    assert!(asked[1]["detail"].as_str().unwrap().contains("no_approver"), "{}", asked[1]);

    // A form beyond the MCP spec's: declined without asking, with the reason on the terminal.
    let out = env.steward(&["mcp", "call", "srv", "elicit_unsupported", "--args", "{}"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("answered `decline`: unsupported_schema"), "{}", stdout(&out));
    let (run_id, output) = last_call(&env);
    assert_eq!(output, r#"{"action": "decline"}"#);
    let records = audit(&env, &run_id);
    let answer = records.iter().rfind(|r| r["action"] == "mcp_elicitation").expect("audited");
    assert!(answer["detail"].as_str().unwrap().contains("unsupported_schema"), "{answer}");

    let listed = env.steward(&["mcp", "tools", "lists"]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    assert!(stdout(&listed).contains(r#"listing elicitation answered: {"action": "decline"}"#), "{}", stdout(&listed));
    assert!(stderr(&listed).contains("declined automatically: no tool call of a run"), "{}", stderr(&listed));
}

/// The terminal prompt (`steward mcp call` on a terminal, here a pseudo-terminal from
/// `script`): the server's words shown escaped, each field asked with its default, an invalid
/// value refused with the reason and the form asked again, then sent.
#[test]
fn the_terminal_prompt_answers_a_request_for_input() {
    use std::io::{Read, Write};
    let env = Env::new();
    env.user_config(&format!(
        "[mcp_servers.srv]\ncommand = [\"python3\", {:?}, \"normal\"]\nread_only_tools = [\"echo\", \"elicit*\"]\n\
         [[policy.rule]]\nname = \"elicit-ok\"\ntool = \"srv__elicit\"\ndecision = \"allow\"\n",
        fault_server()
    ));
    let steward = env!("CARGO_BIN_EXE_steward");
    let mut child = std::process::Command::new("script")
        .args(["-qfec", &format!("{steward} mcp call srv elicit --args {{}}"), "/dev/null"])
        .current_dir(env.ws())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.dir.path())
        .env("USER", "tester")
        .env("STEWARD_HOME", env.home())
        .env("XDG_CONFIG_HOME", env.dir.path().join("xdg"))
        .env("TERM", "dumb")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    });
    let mut screen = String::new();
    let wait_for = |needle: &str, screen: &mut String| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !screen.contains(needle) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(text) => screen.push_str(&text),
                Err(_) => panic!("never saw {needle:?}:\n{screen}"),
            }
        }
        // Only what follows counts for the next wait.
        let at = screen.find(needle).unwrap() + needle.len();
        let seen = screen[..at].to_string();
        screen.drain(..at);
        seen
    };
    let mut say = |text: &str| {
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    let header = wait_for("answer? [a/d/C]", &mut screen);
    assert!(header.contains("MCP server `srv` asks you for input"), "{header}");
    assert!(header.contains("<b>who</b>") && header.contains("\\u{1b}[2J"), "the escape is shown, not run: {header}");
    assert!(header.contains("E-mail (email, required)"), "{header}");
    say("a\n");
    wait_for("Your name [Ada]: ", &mut screen);
    say("\n");
    wait_for("E-mail: ", &mut screen);
    say("not-an-address\n");
    for prompt in ["age [36]: ", "score [9.5]: ", "[green]: ", "agree [true]: "] {
        wait_for(prompt, &mut screen);
        say("\n");
    }
    let refused = wait_for("answer? [a/d/C]", &mut screen);
    assert!(refused.contains(r#"not sent: `email`: "not-an-address" is not a valid email address"#), "{refused}");
    say("a\n");
    wait_for("Your name [Ada]: ", &mut screen);
    say("Grace\n");
    // The defaults are offered again, never the value that failed.
    let asked = wait_for("E-mail", &mut screen);
    assert!(!asked.contains("not-an-address"), "{asked}");
    let field = wait_for(": ", &mut screen);
    assert_eq!(field, ": ", "no pre-filled value for the e-mail");
    say("grace@example.org\n");
    for prompt in ["age [36]: ", "score [9.5]: ", "[green]: ", "agree [true]: "] {
        wait_for(prompt, &mut screen);
        say(if prompt.starts_with("age") { "40\n" } else { "\n" });
    }
    let done = wait_for("(the MCP call is done)", &mut screen);
    assert!(done.contains("answered `accept`"), "{done}");
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let (_, output) = last_call(&env);
    let sent: serde_json::Value = serde_json::from_str(&output).unwrap();
    assert_eq!(
        sent,
        serde_json::json!({"action": "accept", "content": {
            "name": "Grace", "email": "grace@example.org", "age": 40, "score": 9.5, "color": "green", "agree": true
        }})
    );
}

/// Making and revoking an MCP bearer token are audit records naming who, the token's id and
/// scopes, and the action; never the token or its hash.
#[test]
fn mcp_tokens_made_and_revoked_are_audited_without_the_secret() {
    let env = Env::new();
    let made = env.steward(&["mcp", "token", "create", "--name", "laptop", "--scope", "read,submit"]);
    assert_eq!(code(&made), 0, "{}", stderr(&made));
    let secret = stdout(&made).trim().to_string();
    let id = stderr(&made).split_whitespace().find(|w| w.starts_with("mtk_")).unwrap().to_string();
    for _ in 0..2 {
        let revoked = env.steward(&["mcp", "token", "revoke", &id]);
        assert_eq!(code(&revoked), 0, "{}", stderr(&revoked));
    }
    let out = env.steward(&["audit", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains(&secret), "no secret in the audit log");
    assert!(!text.contains(&steward_server::tokens::hash_token(&secret)), "no hash in the audit log");
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let actions: Vec<&str> = records.iter().map(|r| r["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["mcp_token_create", "mcp_token_revoke"], "revoking twice is one revocation");
    for record in &records {
        assert_eq!(record["agent"], "local:tester");
        assert_eq!(record["input"]["token_id"], id.as_str());
        assert_eq!(record["input"]["scopes"], serde_json::json!(["read", "submit"]));
        assert_eq!(record["outcome"], "completed");
    }
    assert_eq!(code(&env.steward(&["audit", "verify"])), 0);
}

/// A sandboxed server that never answers, and a process it detached into its own session,
/// both end when `steward mcp list` gives up on it (the server's PID namespace ends).
#[test]
fn a_sandboxed_server_and_what_it_detached_end_with_it() {
    let env = Env::new();
    env.user_config(
        "[mcp_servers.hang]\ncommand = [\"sh\", \"-c\", \"setsid -f sleep 641.2727; exec sleep 642.2727\"]\nstartup_timeout_ms = 500\n",
    );
    let out = env.steward(&["mcp", "list"]);
    assert!(stdout(&out).contains("initialize timed out"), "{}\n{}", stdout(&out), stderr(&out));
    assert!(!stdout(&out).contains("NOT SANDBOXED"), "{}", stdout(&out));
    let running = |marker: &str| {
        std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(marker))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running("sleep 641.2727") || running("sleep 642.2727") {
        assert!(std::time::Instant::now() < deadline, "a process of the server outlived it");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// An MCP argument naming a secret file is refused by the one decision the run and `steward
/// policy check` share: a denial (`secret_path`) before the server is called, not a failure
/// while running.
#[test]
fn policy_check_and_the_run_deny_an_mcp_argument_naming_a_secret_file_alike() {
    let env = Env::new();
    env.write(".env", "TOKEN=mcp-secret-value-1234\n");
    env.user_config(&format!(
        "[mcp_servers.srv]\ncommand = [\"python3\", {:?}, \"normal\"]\nread_only_tools = [\"echo\"]\n\
         [[policy.rule]]\nname = \"echo-ok\"\ntool = \"srv__echo\"\ndecision = \"allow\"\n",
        fault_server()
    ));
    let args = r#"{"request": {"files": [".env"]}}"#;
    let check = env.steward(&["policy", "check", "srv__echo", "--args", args, "--json"]);
    assert_eq!(code(&check), 0, "{}", stderr(&check));
    let decision: serde_json::Value = serde_json::from_str(stdout(&check).trim()).unwrap();
    assert_eq!((decision["decision"].as_str(), decision["rule"].as_str()), (Some("deny"), Some("secret_path")));

    let out = env.steward(&["mcp", "call", "srv", "echo", "--args", args, "--json"]);
    let shown: serde_json::Value =
        serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_ne!(shown["status"], "completed", "{shown}");
    let records = audit(&env, shown["run_id"].as_str().unwrap());
    assert!(
        records.iter().any(|r| r["policy"] == "secret_path" && r["outcome"] == "blocked"),
        "refused by the decision: {records:?}"
    );
    assert!(!records.iter().any(|r| r["outcome"] == "failed" || r["outcome"] == "completed"), "{records:?}");
    assert!(!serde_json::to_string(&records).unwrap().contains("mcp-secret-value"));
}
