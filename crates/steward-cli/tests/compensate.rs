//! A `[[tool]]`'s `compensate` as an undo step (SPEC C5), through the real binary: the test
//! that lets the policy trust it, the rollback that runs it (sandboxed, audited), a failing
//! compensation that stops the rollback, and hostile input that stays one argument.

use crate::common;

use common::{Env, audit, code, events, scenario, stderr, stdout};
use serde_json::Value;

/// A tool that creates `out/NAME` and whose compensation removes it. `compensate` is the
/// template as TOML; `extra` is appended to the user's configuration.
fn config(compensate: &str, extra: &str) -> String {
    format!(
        "[[tool]]\nname = \"mk\"\ndescription = \"Create one file in out/.\"\ncommand = [\"touch\", {{ input = \"name\" }}]\n\
         cwd = \"out\"\nwrites = [\"out/**\"]\nrisk = \"low\"\ncompensate = {compensate}\n\
         [[tool.input]]\nname = \"name\"\ntype = \"string\"\nrequired = true\n{extra}"
    )
}

const REMOVE: &str = "[\"rm\", \"--\", { input = \"name\" }]";

fn check(env: &Env, name: &str) -> Value {
    let args = serde_json::json!({ "name": name }).to_string();
    let out = env.steward(&["policy", "check", "mk", "--args", &args, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

fn test_compensation(env: &Env, name: &str) -> std::process::Output {
    let args = serde_json::json!({ "name": name }).to_string();
    env.steward(&["tools", "test-compensation", "mk", "--args", &args])
}

/// Runs the fake provider through `calls` (TOML tool-call tables) and returns the run's id.
fn run(env: &Env, calls: &[(&str, &str, String)]) -> (String, Vec<Value>) {
    let mut text = String::new();
    for (id, tool, arguments) in calls {
        text.push_str(&format!(
            "[[round]]\n[[round.tool_call]]\nid = \"{id}\"\nname = \"{tool}\"\narguments = {arguments}\n"
        ));
    }
    text.push_str("[[round]]\ntext = \"done\"\n");
    let path = scenario(env, &text);
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "make the files"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let id = evs.iter().find_map(|e| e["run_id"].as_str()).unwrap().to_string();
    (id, evs)
}

fn completed(evs: &[Value], call: &str) -> bool {
    evs.iter().any(|e| e["event"] == "tool_completed" && e["call_id"] == call)
}

#[test]
fn a_tested_compensation_is_trusted_and_undoes_the_call_in_a_rollback() {
    let env = Env::new();
    env.write("out/keep.txt", "keep\n");
    env.user_config(&config(REMOVE, ""));
    // Declared but not tested: the call still asks, and says why.
    let v = check(&env, "made.txt");
    assert_eq!((v["decision"].as_str(), v["rule"].as_str()), (Some("ask"), Some("compensation_untested")), "{v}");

    let tested = test_compensation(&env, "probe.txt");
    assert_eq!(code(&tested), 0, "{}{}", stdout(&tested), stderr(&tested));
    assert!(stdout(&tested).contains("restored `out/probe.txt`"), "{}", stdout(&tested));
    assert!(!env.ws().join("out/probe.txt").exists(), "the test leaves nothing behind");
    let recorded = std::fs::read_to_string(env.dir.path().join("xdg/steward/tested-compensations.toml")).unwrap();
    assert!(recorded.contains("[tested_compensations]") && recorded.contains("mk = "), "{recorded}");
    // Now decided like a built-in writer: its low risk allows it.
    let v = check(&env, "made.txt");
    assert_eq!((v["decision"].as_str(), v["rule"].as_str()), (Some("allow"), Some("default:low")), "{v}");

    let (run_id, evs) = run(&env, &[("c1", "mk", "{ name = \"made.txt\" }".into())]);
    assert!(completed(&evs, "c1"), "{evs:?}");
    assert!(env.ws().join("out/made.txt").exists());
    let list = env.steward(&["rollback", "last", "--list"]);
    assert!(stdout(&list).contains("step 1") && stdout(&list).contains("pending"), "{}", stdout(&list));

    let undo = env.steward(&["rollback", "last"]);
    assert_eq!(code(&undo), 0, "{}{}", stdout(&undo), stderr(&undo));
    assert!(!env.ws().join("out/made.txt").exists(), "the compensation removed the file");
    assert_eq!(env.read("out/keep.txt"), "keep\n");
    let records = audit(&env, &run_id);
    let rollback = records.iter().find(|r| r["action"] == "rollback").expect("a rollback record");
    assert_eq!(rollback["outcome"], "completed", "{rollback}");
    assert_eq!(rollback["input"]["compensation"], "command", "{rollback}");
    assert_eq!(rollback["input"]["tool"], "mk", "{rollback}");
    assert!(rollback["detail"].as_str().unwrap().contains("ran the compensation of `mk`"), "{rollback}");
    assert!(!rollback["sandbox"].as_str().unwrap().is_empty(), "it ran sandboxed: {rollback}");
    assert_eq!(code(&env.steward(&["audit", "verify"])), 0);

    // Any change to the definition needs a new test.
    env.user_config(&config(REMOVE, "").replace("risk = \"low\"", "risk = \"low\"\ntimeout_ms = 5000"));
    let v = check(&env, "made.txt");
    assert_eq!(v["rule"], "compensation_untested", "{v}");
}

#[test]
fn a_test_that_does_not_restore_everything_records_nothing() {
    let env = Env::new();
    env.write("out/keep.txt", "keep\n");
    env.user_config(&config("[\"true\"]", ""));
    let tested = test_compensation(&env, "probe.txt");
    assert_eq!(code(&tested), 1, "{}{}", stdout(&tested), stderr(&tested));
    assert!(stderr(&tested).contains("did not restore `out/probe.txt`"), "{}", stderr(&tested));
    assert!(!env.dir.path().join("xdg/steward/tested-compensations.toml").exists());
    assert_eq!(check(&env, "made.txt")["rule"], "compensation_untested");
    let out = env.steward(&["audit", "list"]);
    let failed = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["action"] == "test_compensation")
        .expect("the failed test is audited");
    assert_eq!(failed["outcome"], "failed", "{failed}");
}

#[test]
fn a_failing_compensation_stops_the_rollback_and_says_what_was_not_undone() {
    let env = Env::new();
    env.write("out/keep.txt", "keep\n");
    env.user_config(&config(
        REMOVE,
        "[[policy.rule]]\nname = \"creates-ok\"\ntool = \"create\"\ndecision = \"allow\"\n",
    ));
    assert_eq!(code(&test_compensation(&env, "probe.txt")), 0);
    let (run_id, evs) = run(
        &env,
        &[
            ("c1", "create", "{ path = \"a.txt\", content = \"a\" }".into()),
            ("c2", "mk", "{ name = \"made.txt\" }".into()),
        ],
    );
    assert!(completed(&evs, "c1") && completed(&evs, "c2"), "{evs:?}");
    // Someone removes the file first: `rm` fails, and the older step is not tried.
    std::fs::remove_file(env.ws().join("out/made.txt")).unwrap();
    let undo = env.steward(&["rollback", "last"]);
    assert_eq!(code(&undo), 1, "{}{}", stdout(&undo), stderr(&undo));
    let (said, warned) = (stdout(&undo), stderr(&undo));
    assert!(
        said.contains("step 2 (mk): NOT UNDONE") && said.contains("the compensation of `mk` did not undo"),
        "{said}"
    );
    assert!(!said.contains("step 1"), "step 1 was not tried: {said}");
    assert!(warned.contains("rollback stopped") && warned.contains("not tried: step(s) 1"), "{warned}");
    assert_eq!(env.read("a.txt"), "a", "the older step is left as it is");
    let records = audit(&env, &run_id);
    let rollbacks: Vec<&Value> = records.iter().filter(|r| r["action"] == "rollback").collect();
    assert_eq!(rollbacks.len(), 1, "{rollbacks:?}");
    assert_eq!(rollbacks[0]["outcome"], "failed");
    assert_eq!(code(&env.steward(&["audit", "verify"])), 0);
    // Once the cause is gone (the failed step is fixed by hand), the rest is undone.
    let list = stdout(&env.steward(&["rollback", "last", "--list"]));
    assert!(list.contains("failed") && list.contains("pending"), "{list}");
    let again = env.steward(&["rollback", &run_id, "--step", "1"]);
    assert_eq!(code(&again), 0, "{}{}", stdout(&again), stderr(&again));
    assert!(!env.ws().join("a.txt").exists());
}

#[test]
fn hostile_input_stays_one_argument_of_the_compensation() {
    let env = Env::new();
    // Canaries: a shell splitting the value would remove `out/x` and create `out/injected`.
    env.write("out/x", "canary\n");
    env.user_config(&config(REMOVE, ""));
    assert_eq!(code(&test_compensation(&env, "probe.txt")), 0);
    let hostile = "x; touch injected && touch $(echo injected2)";
    let (_, evs) = run(&env, &[("c1", "mk", format!("{{ name = {} }}", Value::from(hostile)))]);
    assert!(completed(&evs, "c1"), "{evs:?}");
    assert!(env.ws().join("out").join(hostile).exists(), "the command got one argument");
    let undo = env.steward(&["rollback", "last"]);
    assert_eq!(code(&undo), 0, "{}{}", stdout(&undo), stderr(&undo));
    assert!(!env.ws().join("out").join(hostile).exists(), "the compensation removed exactly that file");
    assert_eq!(env.read("out/x"), "canary\n");
    for name in ["out/injected", "out/injected2", "injected", "injected2"] {
        assert!(!env.ws().join(name).exists(), "{name} was created: the value reached a shell");
    }
}
