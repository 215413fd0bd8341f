//! Through the real binary: a `[[tool]]` with a host list reaches a listed host through
//! Steward's egress proxy and nothing else, and every connection is in the audit log.
//! `allowed.test` is pinned to a server of the test on loopback with the test-only
//! `STEWARD_EGRESS_TEST_HOSTS` (honoured by debug builds only).

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

use common::*;
use serde_json::Value;

/// Answers every request with `hello from {path}`; keeps each request line.
fn serve() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let path = head.split_whitespace().nth(1).unwrap_or("?").to_string();
            log.lock().unwrap().push(head.lines().next().unwrap_or("").to_string());
            let body = format!("hello from {path}");
            let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (addr, seen)
}

fn tool(name: &str, url: &str, hosts: &str) -> String {
    format!(
        "[[tool]]\nname = \"{name}\"\ndescription = \"Fetch a page.\"\n\
         command = [\"curl\", \"-sS\", \"-f\", \"--max-time\", \"10\", \"{url}\"]\nrisk = \"low\"\nnetwork = {hosts}\n"
    )
}

fn egress_records(env: &Env, run_id: &str) -> Vec<Value> {
    audit(env, run_id).into_iter().filter(|r| r["action"] == "egress").collect()
}

#[test]
fn a_tool_with_a_host_list_reaches_only_that_host_and_every_connection_is_audited() {
    let env = Env::new();
    let (addr, seen) = serve();
    let port = addr.port();
    let hosts = format!("[\"allowed.test:{port}\"]");
    env.user_config(&format!(
        "{}{}",
        tool("fetch_allowed", &format!("http://allowed.test:{port}/hi"), &hosts),
        tool("fetch_other", &format!("http://other.test:{port}/secret-drop"), &hosts)
    ));
    let scenario = scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nname = \"fetch_allowed\"\narguments = {}\n\
         [[round]]\n[[round.tool_call]]\nname = \"fetch_other\"\narguments = {}\n\
         [[round]]\ntext = \"done\"\n",
    );
    let out = env
        .command(&["run", "--json", "--provider", "fake", "--scenario", &scenario, "fetch"])
        .env("STEWARD_EGRESS_TEST_HOSTS", "allowed.test=127.0.0.1")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let completed = find(&evs, "tool_completed");
    assert_eq!(completed["tool"], "fetch_allowed", "{completed}");
    assert!(completed["output"].as_str().unwrap().contains("hello from /hi"), "{completed}");
    let failed = find(&evs, "tool_failed");
    assert_eq!(failed["tool"], "fetch_other", "{failed}");
    assert!(failed["error"].as_str().unwrap().contains("403"), "{failed}");
    assert_eq!(*seen.lock().unwrap(), ["GET /hi HTTP/1.1"], "the refused request reached the server");

    let run_id = evs[0]["run_id"].as_str().unwrap();
    let records = egress_records(&env, run_id);
    assert_eq!(records.len(), 2, "{records:?}");
    let (allowed, refused) = (&records[0], &records[1]);
    assert_eq!(allowed["outcome"], "completed", "{allowed}");
    assert_eq!(allowed["input"]["tool"], "fetch_allowed");
    assert_eq!(allowed["input"]["host"], "allowed.test");
    assert_eq!(allowed["input"]["port"], port);
    assert_eq!(allowed["input"]["address"], addr.to_string());
    assert!(allowed["detail"].as_str().unwrap().contains("bytes received"), "{allowed}");
    assert_eq!(allowed["call_id"], completed["call_id"]);
    assert_eq!(refused["outcome"], "blocked", "{refused}");
    assert_eq!(refused["input"]["host"], "other.test");
    assert!(refused["detail"].as_str().unwrap().contains("not on the tool's network list"), "{refused}");
    assert!(!refused.to_string().contains("secret-drop"), "a URL path was recorded: {refused}");
    assert_eq!(code(&env.steward(&["audit", "verify"])), 0);

    // The call's own record says how it was confined.
    let call = audit(&env, run_id).into_iter().find(|r| r["action"] == "fetch_allowed" && r["outcome"] == "completed");
    let sandbox = call.map(|r| r["sandbox"].as_str().unwrap_or("").to_string()).unwrap_or_default();
    assert!(sandbox.contains("+egress-proxy"), "{sandbox}");
}

#[test]
fn without_the_test_pin_a_loopback_name_is_not_reachable() {
    // `localhost` is on the list but resolves to loopback: refused by the proxy.
    let env = Env::new();
    let (addr, seen) = serve();
    let port = addr.port();
    env.user_config(&tool("fetch_local", &format!("http://localhost:{port}/"), &format!("[\"localhost:{port}\"]")));
    let scenario = scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nname = \"fetch_local\"\narguments = {}\n[[round]]\ntext = \"done\"\n",
    );
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &scenario, "fetch"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert!(find(&evs, "tool_failed")["error"].as_str().unwrap().contains("403"));
    assert!(seen.lock().unwrap().is_empty());
    let records = egress_records(&env, evs[0]["run_id"].as_str().unwrap());
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["outcome"], "blocked");
    assert!(records[0]["detail"].as_str().unwrap().contains("a loopback address"), "{}", records[0]);
}

#[test]
fn a_bad_host_list_is_a_configuration_error_and_an_untrusted_workspace_cannot_grant_hosts() {
    let env = Env::new();
    env.user_config(
        "[[tool]]\nname = \"f\"\ndescription = \"d\"\ncommand = [\"true\"]\nnetwork = [\"https://crates.io\"]\n",
    );
    let out = env.steward(&["tools", "--json"]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(stderr(&out).contains("config.toml:") && stderr(&out).contains("not a URL"), "{}", stderr(&out));

    let env = Env::new();
    env.write(
        ".steward/config.toml",
        "[shell]\nenabled = true\nnetwork = [\"evil.example\"]\n\
         [[tool]]\nname = \"f\"\ndescription = \"d\"\ncommand = [\"true\"]\nnetwork = [\"evil.example\"]\n",
    );
    let out = env.steward(&["tools", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let names: Vec<String> = serde_json::from_str::<Vec<Value>>(&stdout(&out))
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(!names.iter().any(|n| n == "f" || n == "shell_command"), "{names:?}");
    assert!(stderr(&out).contains("`shell` ignored") && stderr(&out).contains("`tool` ignored"), "{}", stderr(&out));
}

#[test]
fn shell_command_with_a_host_list_reaches_only_those_hosts() {
    let env = Env::new();
    let (addr, seen) = serve();
    let port = addr.port();
    env.user_config(&format!(
        "[shell]\nenabled = true\nnetwork = [\"allowed.test:{port}\"]\n\
         [[policy.rule]]\nname = \"curl-ok\"\ntool = \"shell_command\"\nargv = [\"curl\", \"**\"]\ndecision = \"allow\"\n"
    ));
    let line = format!("curl -sS -f http://allowed.test:{port}/sh && curl -sS -f http://other.test:{port}/no");
    let scenario = scenario(
        &env,
        &format!(
            "[[round]]\n[[round.tool_call]]\nname = \"shell_command\"\narguments = {{ command = \"{line}\" }}\n\
             [[round]]\ntext = \"done\"\n"
        ),
    );
    let out = env
        .command(&["run", "--json", "--provider", "fake", "--scenario", &scenario, "fetch"])
        .env("STEWARD_EGRESS_TEST_HOSTS", "allowed.test=127.0.0.1")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let output = find(&evs, "tool_completed")["output"].as_str().unwrap().to_string();
    assert!(output.contains("[exit status 22]") && output.contains("hello from /sh"), "{output}");
    assert_eq!(*seen.lock().unwrap(), ["GET /sh HTTP/1.1"]);
    let records = egress_records(&env, evs[0]["run_id"].as_str().unwrap());
    let outcomes: Vec<&str> = records.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["completed", "blocked"], "{records:?}");
    assert!(records.iter().all(|r| r["input"]["tool"] == "shell_command"));
}
