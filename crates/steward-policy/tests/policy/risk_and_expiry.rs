//! The risk score read from a call's arguments (SPEC C2) and per-action approval expiry (C4).

use crate::common::config;
use serde_json::{Value, json};
use steward_policy::{GateContext, Policy, PolicyError, Workspace};
use steward_protocol::{Decision, RiskLevel, ToolCall, ToolSpec};

fn spec(name: &str, risk: RiskLevel, writes: bool, inputs: &[&str]) -> ToolSpec {
    let properties: serde_json::Map<String, Value> =
        inputs.iter().map(|i| (i.to_string(), json!({"type": ["string", "array"]}))).collect();
    ToolSpec {
        name: name.into(),
        description: String::new(),
        input_schema: json!({"type": "object", "properties": properties}),
        risk,
        writes,
        path_inputs: if inputs.contains(&"path") { vec!["path".into()] } else { Vec::new() },
        untrusted_output: false,
    }
}

fn decide(policy: &Policy, spec: &ToolSpec, args: Value, ws: &Workspace, ctx: &GateContext) -> Decision {
    policy.decide_in(Some(spec), &ToolCall { id: "c".into(), name: spec.name.clone(), arguments: args }, ws, ctx)
}

fn factors(d: &Decision) -> Vec<&str> {
    d.risk_factors.iter().map(|f| f.factor.as_str()).collect()
}

#[test]
fn the_score_adds_up_what_the_call_touches_and_never_leaves_zero_to_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    let ws = Workspace::open(dir.path(), &[]).unwrap();
    let policy = Policy::new(&config("[policy]\n[policy.risk]\nmany_files = 2\nlarge_change_lines = 3\n")).unwrap();
    let edit = spec("edit", RiskLevel::Medium, true, &["path", "new"]);
    let shell = spec("shell_command", RiskLevel::High, true, &["command"]);
    let none = GateContext::default();

    let d = decide(&policy, &edit, json!({"path": "src/a.rs", "new": "x"}), &ws, &none);
    assert_eq!((d.risk, factors(&d)), (0.6, vec!["risk_level", "writes"]));
    let d = decide(&policy, &edit, json!({"path": "src/a.rs", "new": "1\n2\n3\n4\n"}), &ws, &none);
    assert_eq!((d.risk, factors(&d)), (0.7, vec!["risk_level", "writes", "large_change"]));
    let d = decide(&policy, &edit, json!({"path": ".github/ci.yml", "new": "x"}), &ws, &none);
    assert_eq!(factors(&d), ["risk_level", "writes", "protected_path", "outside_source_paths"], "{:?}", d.reasons);
    assert_eq!(d.risk, 1.0);
    // Paths a patch touches (the gate context's) count too, and so does taint.
    let many = GateContext {
        paths: vec!["src/a.rs".into(), "src/b.rs".into(), "src/c.rs".into()],
        actions: vec!["delete".into()],
        tainted: true,
        ..GateContext::default()
    };
    let d = decide(&policy, &edit, json!({"path": "src/a.rs", "new": "x"}), &ws, &many);
    assert_eq!(factors(&d), ["risk_level", "writes", "many_files", "deletes", "tainted"]);
    assert_eq!(d.risk, 1.0);

    // Same call, same score: deterministic.
    let line = json!({"command": "git clean -fdx && git branch -D old"});
    let (a, b) = (decide(&policy, &shell, line.clone(), &ws, &none), decide(&policy, &shell, line, &ws, &none));
    assert_eq!((a.risk, &a.risk_factors), (b.risk, &b.risk_factors));
    assert!(factors(&a).contains(&"destructive_option"), "{:?}", a.risk_factors);
    for line in ["ls -la", "grep -rn x src", "echo -- --force", "cat $X"] {
        let d = decide(&policy, &shell, json!({"command": line}), &ws, &none);
        assert!(!factors(&d).contains(&"destructive_option"), "{line}: {:?}", d.risk_factors);
    }
}

#[test]
fn risk_settings_are_checked() {
    for (text, setting) in [
        ("[policy.risk]\ndestructive_options = [\"force\"]\n", "risk.destructive_options"),
        ("[policy.risk]\nmany_files = 0\n", "risk.many_files"),
        (
            "[[policy.rule]]\nname = \"r\"\ntool = \"edit\"\ndecision = \"ask\"\napproval_ttl_seconds = 0\n",
            "approval_ttl_seconds",
        ),
    ] {
        match Policy::new(&config(&format!("[policy]\n{text}"))) {
            Err(PolicyError::BadSetting { setting: got, .. }) => assert!(got.contains(setting), "{got}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    assert!(matches!(
        Policy::new(&config("[policy]\n[policy.risk]\nprotected_paths = [\"[\"]\n")),
        Err(PolicyError::BadGlob { .. })
    ));
}

#[test]
fn the_shortest_expiry_of_the_rules_that_match_a_call_applies() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(dir.path(), &[]).unwrap();
    let policy = Policy::new(&config(
        "[policy]\n\
         [[policy.rule]]\nname = \"edits\"\ntool = \"edit\"\ndecision = \"ask\"\napproval_ttl_seconds = 600\n\
         [[policy.rule]]\nname = \"docs\"\ntool = \"*\"\npath = [\"docs/**\"]\ndecision = \"allow\"\napproval_ttl_seconds = 60\n\
         [[policy.rule]]\nname = \"pushes\"\ntool = \"shell_command\"\nargv = [\"git\", \"push\", \"**\"]\ndecision = \"ask\"\napproval_ttl_seconds = 45\n",
    ))
    .unwrap();
    let edit = spec("edit", RiskLevel::Medium, true, &["path"]);
    let shell = spec("shell_command", RiskLevel::High, true, &["command"]);
    let none = GateContext::default();
    let ttl = |d: &Decision| d.approval_ttl.as_ref().map(|t| (t.seconds, t.source.clone()));
    let d = decide(&policy, &edit, json!({"path": "a.txt"}), &ws, &none);
    assert_eq!(ttl(&d), Some((600, "policy rule `edits`".into())));
    // Both rules match; the shorter wins although the stricter decided.
    let d = decide(&policy, &edit, json!({"path": "docs/a.md"}), &ws, &none);
    assert_eq!((d.rule.as_str(), ttl(&d)), ("edits", Some((60, "policy rule `docs`".into()))));
    // An argv rule counts when it matches any command of the line.
    let d = decide(&policy, &shell, json!({"command": "git status && git -C . push origin"}), &ws, &none);
    assert_eq!(ttl(&d), Some((45, "policy rule `pushes`".into())));
    let d = decide(&policy, &shell, json!({"command": "git status"}), &ws, &none);
    assert_eq!(ttl(&d), None);
    // Escalations keep it.
    let tainted = GateContext { tainted: true, ..GateContext::default() };
    let d = decide(&policy, &edit, json!({"path": "docs/a.md"}), &ws, &tainted);
    assert_eq!(ttl(&d), Some((60, "policy rule `docs`".into())));
}
