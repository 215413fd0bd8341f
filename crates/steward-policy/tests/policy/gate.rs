use std::fs;

use crate::common::config;
use serde_json::{Value, json};
use steward_policy::{Policy, PolicyConfig, PolicyError, Workspace};
use steward_protocol::{DecisionKind, RiskLevel, ToolCall, ToolSpec};

fn spec(name: &str, risk: RiskLevel, writes: bool) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        input_schema: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": false
        }),
        risk,
        writes,
        path_inputs: vec!["path".into()],
        untrusted_output: false,
    }
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall { id: "call_1".into(), name: name.into(), arguments: args }
}

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("docs")).unwrap();
    fs::create_dir_all(dir.path().join("src/deep")).unwrap();
    fs::write(dir.path().join("docs/a.md"), "x").unwrap();
    fs::write(dir.path().join("src/lib.rs"), "x").unwrap();
    fs::write(dir.path().join(".env"), "K=v").unwrap();
    let ws = Workspace::open(dir.path(), &["vault/".to_string()]).unwrap();
    (dir, ws)
}

const CONFIG: &str = r#"
[policy]
allowed_actions = ["git_*", "edit"]
blocked_actions = ["delete"]

[[policy.rule]]
name = "docs-edit"
tool = "create"
path = ["docs/**"]
decision = "allow"

[[policy.rule]]
name = "src-ask"
tool = "*"
path = ["src/*.rs"]
decision = "ask"

[[policy.rule]]
name = "no-lockfiles"
tool = "*"
path = ["**/Cargo.lock"]
decision = "deny"

[[policy.rule]]
name = "edit-docs-ask"
tool = "edit"
path = ["docs/**"]
decision = "ask"
"#;

/// (spec, called name, arguments, expected decision, expected rule, expected risk)
type Row<'a> = (Option<&'a ToolSpec>, &'a str, Value, DecisionKind, &'a str, f64);

#[test]
fn decision_table() {
    let (_dir, ws) = workspace();
    let policy = Policy::new(&config(CONFIG)).unwrap();
    let read = spec("read", RiskLevel::Low, false);
    let list = spec("list", RiskLevel::Safe, false);
    let create = spec("create", RiskLevel::Medium, true);
    let edit = spec("edit", RiskLevel::Medium, true);
    let delete = spec("delete", RiskLevel::High, true);
    let shell = spec("shell_command", RiskLevel::High, false);
    let nuke = spec("nuke", RiskLevel::Dangerous, true);
    let git = spec("git_status", RiskLevel::Safe, false);
    let table: Vec<Row<'_>> = vec![
        (None, "frobnicate", json!({}), DecisionKind::Deny, "unknown_tool", 1.0),
        (Some(&read), "read", json!("src/lib.rs"), DecisionKind::Deny, "invalid_arguments", 0.2),
        (Some(&read), "read", json!({}), DecisionKind::Deny, "invalid_arguments", 0.2),
        (Some(&read), "read", json!({"path": 3}), DecisionKind::Deny, "invalid_arguments", 0.2),
        (Some(&read), "read", json!({"path": "a", "extra": 1}), DecisionKind::Deny, "invalid_arguments", 0.2),
        (Some(&read), "read", json!({"path": "../x"}), DecisionKind::Deny, "workspace_boundary", 0.2),
        (Some(&read), "read", json!({"path": ".env"}), DecisionKind::Deny, "secret_path", 0.2),
        (Some(&create), "create", json!({"path": "vault/k.txt"}), DecisionKind::Deny, "deny_path", 0.6),
        (Some(&read), "read", json!({"path": "src/lib.rs"}), DecisionKind::Ask, "src-ask", 0.2),
        (Some(&read), "read", json!({"path": "src/deep/x.rs"}), DecisionKind::Allow, "default:low", 0.2),
        (Some(&list), "list", json!({"path": "docs"}), DecisionKind::Allow, "default:safe", 0.0),
        (Some(&create), "create", json!({"path": "docs/new.md"}), DecisionKind::Allow, "docs-edit", 0.6),
        // Outside the source folders: +0.1 (`outside_source_paths`).
        (Some(&create), "create", json!({"path": "notes.md"}), DecisionKind::Ask, "default:medium", 0.7),
        (Some(&create), "create", json!({"path": "docs/Cargo.lock"}), DecisionKind::Deny, "no-lockfiles", 0.6),
        (Some(&edit), "edit", json!({"path": "docs/a.md"}), DecisionKind::Ask, "edit-docs-ask", 0.6),
        (Some(&edit), "edit", json!({"path": "README.md"}), DecisionKind::Allow, "allowed_actions", 0.7),
        // A deletion: +0.2 (`deletes`), clamped to 1.
        (Some(&delete), "delete", json!({"path": "docs/a.md"}), DecisionKind::Deny, "blocked_actions", 1.0),
        // `shell_command` is judged by its `command` string (T4); without one it is refused.
        (Some(&shell), "shell_command", json!({"path": "README.md"}), DecisionKind::Deny, "invalid_arguments", 0.8),
        (Some(&nuke), "nuke", json!({"path": "README.md"}), DecisionKind::Ask, "default:dangerous", 1.0),
        (Some(&git), "git_status", json!({"path": "."}), DecisionKind::Allow, "allowed_actions", 0.0),
    ];
    for (spec, name, args, kind, rule, risk) in table {
        let d = policy.decide(spec, &call(name, args.clone()), &ws);
        assert_eq!((d.decision, d.rule.as_str()), (kind, rule), "{name} {args}: {:?}", d.reasons);
        assert!((d.risk - risk).abs() < 1e-9, "{name} {args}: risk {}", d.risk);
        assert!(!d.reason().is_empty());
    }
}

#[test]
fn validation_message_names_the_problem() {
    let (_dir, ws) = workspace();
    let policy = Policy::new(&PolicyConfig::default()).unwrap();
    let d = policy.decide(Some(&spec("read", RiskLevel::Low, false)), &call("read", json!({})), &ws);
    assert!(d.reason().contains("path"), "{}", d.reason());
    let d = policy.decide(None, &call("frobnicate", json!({})), &ws);
    assert!(d.reason().contains("frobnicate"));
}

#[test]
fn configured_default_applies_after_rules() {
    let (_dir, ws) = workspace();
    let mut cfg = PolicyConfig { default: Some(DecisionKind::Deny), ..PolicyConfig::default() };
    cfg.allowed_actions = vec!["read".into()];
    let policy = Policy::new(&cfg).unwrap();
    let read = spec("read", RiskLevel::Low, false);
    let list = spec("list", RiskLevel::Safe, false);
    let d = policy.decide(Some(&read), &call("read", json!({"path": "docs/a.md"})), &ws);
    assert_eq!((d.decision, d.rule.as_str()), (DecisionKind::Allow, "allowed_actions"));
    let d = policy.decide(Some(&list), &call("list", json!({"path": "docs"})), &ws);
    assert_eq!((d.decision, d.rule.as_str()), (DecisionKind::Deny, "default"));
}

#[test]
fn path_rules_need_a_path_and_tools_without_paths_skip_them() {
    let (_dir, ws) = workspace();
    let policy = Policy::new(&config(CONFIG)).unwrap();
    let mut optional = spec("create", RiskLevel::Medium, true);
    optional.input_schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    // No path given: the path-restricted allow rule must not apply.
    let d = policy.decide(Some(&optional), &call("create", json!({})), &ws);
    assert_eq!((d.decision, d.rule.as_str()), (DecisionKind::Ask, "default:medium"));
}

#[test]
fn array_path_inputs_are_each_checked() {
    let (_dir, ws) = workspace();
    let policy = Policy::new(&PolicyConfig::default()).unwrap();
    let mut multi = spec("cat", RiskLevel::Low, false);
    multi.input_schema =
        json!({"type": "object", "properties": {"path": {"type": "array", "items": {"type": "string"}}}});
    let d = policy.decide(Some(&multi), &call("cat", json!({"path": ["docs/a.md", ".env"]})), &ws);
    assert_eq!((d.decision, d.rule.as_str()), (DecisionKind::Deny, "secret_path"));
    let d = policy.decide(Some(&multi), &call("cat", json!({"path": ["docs/a.md", "src/lib.rs"]})), &ws);
    assert_eq!(d.decision, DecisionKind::Allow);
}

#[test]
fn bad_globs_name_the_rule() {
    let cfg = config(
        r#"
[policy]
[[policy.rule]]
name = "broken"
tool = "read"
path = ["src/[a"]
decision = "allow"
"#,
    );
    match Policy::new(&cfg) {
        Err(PolicyError::BadGlob { rule, glob, .. }) => {
            assert_eq!(rule, "broken");
            assert_eq!(glob, "src/[a");
        }
        other => panic!("expected a bad glob error, got {other:?}"),
    }
    let cfg = PolicyConfig { blocked_actions: vec!["{".into()], ..PolicyConfig::default() };
    assert!(Policy::new(&cfg).unwrap_err().to_string().contains("blocked_actions"));
}

#[test]
fn unknown_config_fields_are_refused() {
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Root {
        policy: PolicyConfig,
    }
    assert!(toml::from_str::<Root>("[policy]\nallow = [\"x\"]\n").is_err());
    assert!(
        toml::from_str::<Root>("[policy]\n[[policy.rule]]\nname='a'\ntool='b'\ndecision='allow'\nwhen='x'\n").is_err()
    );
}

#[test]
fn paths_a_tool_names_beyond_its_inputs_are_checked_and_matched_like_inputs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("vendor")).unwrap();
    std::fs::write(dir.path().join(".env"), "K=v").unwrap();
    let ws = steward_policy::Workspace::open(dir.path(), &[]).unwrap();
    let cfg: steward_policy::PolicyConfig = toml::from_str::<toml::Table>(
        "[[rule]]\nname = \"no-vendor\"\ntool = \"*\"\npath = [\"vendor/**\"]\ndecision = \"deny\"\n",
    )
    .unwrap()
    .try_into()
    .unwrap();
    let policy = steward_policy::Policy::new(&cfg).unwrap();
    let spec = steward_protocol::ToolSpec {
        name: "apply_patch".into(),
        description: String::new(),
        input_schema: serde_json::json!({"type": "object"}),
        risk: steward_protocol::RiskLevel::Medium,
        writes: true,
        path_inputs: vec![],
        untrusted_output: false,
    };
    let call =
        steward_protocol::ToolCall { id: "c".into(), name: "apply_patch".into(), arguments: serde_json::json!({}) };
    let decide = |paths: &[&str]| {
        let ctx = steward_policy::GateContext {
            tainted: false,
            paths: paths.iter().map(|p| p.to_string()).collect(),
            ..Default::default()
        };
        policy.decide_in(Some(&spec), &call, &ws, &ctx)
    };
    assert_eq!(decide(&["src/a.rs"]).rule, "default:medium");
    assert_eq!(decide(&["src/a.rs", "vendor/lib.rs"]).rule, "no-vendor");
    assert_eq!(decide(&[".env"]).rule, "secret_path");
    assert_eq!(decide(&["../outside.txt"]).rule, "workspace_boundary");
}

#[test]
fn allow_patterns_reach_mcp_tools_only_when_they_say_so_and_blocked_actions_see_implied_actions() {
    let dir = tempfile::tempdir().unwrap();
    let ws = steward_policy::Workspace::open(dir.path(), &[]).unwrap();
    let cfg: steward_policy::PolicyConfig = toml::from_str::<toml::Table>(
        "allowed_actions = [\"git_*\", \"files__read_*\"]\nblocked_actions = [\"delete\"]\n",
    )
    .unwrap()
    .try_into()
    .unwrap();
    let policy = steward_policy::Policy::new(&cfg).unwrap();
    let spec = |name: &str, risk| steward_protocol::ToolSpec {
        name: name.into(),
        description: String::new(),
        input_schema: serde_json::json!({"type": "object"}),
        risk,
        writes: false,
        path_inputs: vec![],
        untrusted_output: true,
    };
    let decide = |name: &str, actions: &[&str]| {
        let call = steward_protocol::ToolCall { id: "c".into(), name: name.into(), arguments: serde_json::json!({}) };
        let ctx = steward_policy::GateContext {
            actions: actions.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        };
        policy.decide_in(Some(&spec(name, steward_protocol::RiskLevel::Medium)), &call, &ws, &ctx)
    };
    assert_eq!(decide("git_status", &[]).rule, "allowed_actions");
    assert_eq!(decide("git__get-env", &[]).rule, "default:medium", "`git_*` must not allow an MCP server named git");
    assert_eq!(decide("files__read_file", &[]).rule, "allowed_actions");
    assert_eq!(decide("apply_patch", &["delete"]).rule, "blocked_actions");
}

#[test]
fn data_flow_asks_for_a_carrying_sink_and_replaces_taint_only_for_sinks_that_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ws = steward_policy::Workspace::open(dir.path(), &[]).unwrap();
    let cfg: steward_policy::PolicyConfig = toml::from_str::<toml::Table>(
        "[[rule]]\nname = \"all\"\ntool = \"mail__*\"\ndecision = \"allow\"\n\
         [[rule]]\nname = \"no-wipe\"\ntool = \"mail__wipe\"\ndecision = \"deny\"\n\
         [[rule]]\nname = \"ask-post\"\ntool = \"mail__post\"\ndecision = \"ask\"\n",
    )
    .unwrap()
    .try_into()
    .unwrap();
    let policy = steward_policy::Policy::new(&cfg).unwrap();
    let spec = |name: &str, writes| steward_protocol::ToolSpec {
        name: name.into(),
        description: String::new(),
        input_schema: serde_json::json!({"type": "object"}),
        risk: steward_protocol::RiskLevel::Medium,
        writes,
        path_inputs: vec![],
        untrusted_output: true,
    };
    let carried = steward_policy::Carried::Output {
        pointer: "/to".into(),
        origin: steward_policy::Origin { tool: "mail__read".into(), call_id: "r1".into() },
    };
    let decide = |name: &str, writes, tainted, flow: Option<&steward_policy::Carried>| {
        let call = steward_protocol::ToolCall { id: "c".into(), name: name.into(), arguments: serde_json::json!({}) };
        let ctx = steward_policy::GateContext { tainted, sink: true, flow: flow.cloned(), ..Default::default() };
        policy.decide_in(Some(&spec(name, writes)), &call, &ws, &ctx)
    };
    // Carrying: asks whatever allowed it, and an ask for another reason is renamed.
    let d = decide("mail__send", false, false, Some(&carried));
    assert_eq!((d.decision, d.rule.as_str()), (DecisionKind::Ask, "data_flow"));
    assert!(d.reason().contains("`mail__read` (call r1)"), "{}", d.reason());
    let d = decide("mail__post", false, false, Some(&carried));
    assert_eq!(d.rule, "data_flow");
    assert!(d.reason().contains("ask-post"), "{}", d.reason());
    // Deny stays deny.
    assert_eq!(decide("mail__wipe", false, true, Some(&carried)).rule, "no-wipe");
    // Tainted, carrying nothing: a sink that writes nothing is allowed; one that writes asks.
    assert_eq!(decide("mail__send", false, true, None).rule, "all");
    assert_eq!(decide("mail__send", true, true, None).rule, "taint_escalation");
}
