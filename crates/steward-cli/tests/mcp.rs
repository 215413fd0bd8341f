//! MCP tools in real runs: the reference servers `server-everything` and `server-filesystem`
//! (`STEWARD_TEST_MCP_EVERYTHING`, `STEWARD_TEST_MCP_FILESYSTEM`, set by `scripts/test.sh`)
//! behind the same gate as every other tool. Named `peer_*`.

mod common;

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
        "[mcp_servers.everything]\ncommand = [{:?}, \"stdio\"]\n\
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
        "[mcp_servers.fs]\ncommand = [{:?}, {:?}]\n[[policy.rule]]\nname = \"fs-read\"\ntool = \"fs__read_text_file\"\ndecision = \"allow\"\n",
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
/// that exits right after (`steward mcp list`): no server is left running.
#[test]
fn mcp_list_leaves_no_server_that_never_initialised() {
    let env = Env::new();
    let pid_file = env.dir.path().join("hang.pid");
    env.user_config(&format!(
        "[mcp_servers.hang]\ncommand = [\"sh\", \"-c\", \"echo $$ > {}; exec sleep 600\"]\nstartup_timeout_ms = 300\n",
        pid_file.display()
    ));
    let out = env.steward(&["mcp", "list"]);
    assert!(stdout(&out).contains("initialize timed out"), "{}\n{}", stdout(&out), stderr(&out));
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
