//! User-defined command tools (SPEC T5, T7, T8, T10) and output filters, driven through the
//! agent loop with the scripted fake provider and a scripted approver.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::Recorder;
use async_trait::async_trait;
use serde_json::json;
use steward_config::Config;
use steward_core::{ApprovalAnswer, ApprovalKey, ApprovalScope, Approver};
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_policy::{Redactor, Workspace};
use steward_protocol::{ApprovalRequest, AuditOutcome, Event, EventKind, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_store::{SqliteStore, Store};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

/// The scripted owner: approves every request, or rejects every request.
struct Owner(bool);

#[async_trait]
impl Approver for Owner {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        let me = "local:alice".to_string();
        if self.0 {
            let call_hash = steward_core::call_hash(request);
            ApprovalAnswer::Approve { token: token.into(), decided_by: me, scope: ApprovalScope::Once, call_hash }
        } else {
            ApprovalAnswer::Reject { reason: "no".into(), decided_by: me }
        }
    }
}

struct Harness {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    user: PathBuf,
    outputs: PathBuf,
    runtime: Runtime,
}

async fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let user = dir.path().join("user");
    std::fs::create_dir_all(ws.join("out")).unwrap();
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(ws.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(ws.join(".env"), "TOKEN=x\n").unwrap();
    std::fs::write(ws.join("build.log"), "log\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "hello notes\n").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "outside\n").unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let outputs = dir.path().join("outputs");
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    Harness { _dir: dir, ws, user, outputs, runtime }
}

/// Loads `toml` as the user's configuration.
fn config(h: &Harness, toml: &str) -> Config {
    std::fs::write(h.user.join("config.toml"), toml).unwrap();
    Config::load(Some(&h.user), &h.ws).unwrap()
}

/// One fake round calling `tool` with each argument object in turn, then an answer (JSON).
fn scenario(tool: &str, calls: &[serde_json::Value]) -> String {
    let calls: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, args)| json!({"name": tool, "id": format!("call_{i}"), "arguments": args}))
        .collect();
    json!({"round": [{"text": "Calling.", "tool_call": calls}, {"text": "Done."}]}).to_string()
}

struct Outcome {
    events: Vec<Event>,
    run_id: String,
}

impl Outcome {
    fn kinds(&self) -> Vec<&'static str> {
        self.events.iter().map(|e| e.kind.name()).collect()
    }

    fn completed(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ToolCompleted { output, .. } => Some(output.clone()),
                _ => None,
            })
            .collect()
    }

    fn denied_rules(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ToolDenied { rule, .. } => Some(rule.clone()),
                _ => None,
            })
            .collect()
    }

    fn failures(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ToolFailed { error, .. } => Some(error.clone()),
                _ => None,
            })
            .collect()
    }
}

async fn run(h: &Harness, config: Config, scenario_json: &str, approve: bool) -> Outcome {
    let ws = Workspace::open(&h.ws, &config.policy.deny_path).unwrap();
    let tools = ToolRegistry::for_config(&config, &ws).unwrap();
    let provider = Arc::new(FakeProvider::new(Scenario::from_json(scenario_json).unwrap()));
    let planner = PlannerChoice {
        kind: "model".into(),
        provider,
        model: "fake".into(),
        tool_choice: ToolChoice::Auto,
        max_tokens: None,
    };
    let recorder = Arc::new(Recorder::default());
    let request = RunRequest {
        task: "use the tool".into(),
        owner_id: "local:alice".into(),
        workspace: h.ws.clone(),
        planner,
        config,
        tools,
        approver: Arc::new(Owner(approve)),
        observer: recorder.clone(),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    let record = run_task(&h.runtime, request).await.unwrap();
    let events = recorder.0.lock().unwrap().clone();
    Outcome { events, run_id: record.id }
}

/// A tool that would leave `out/ran` behind if it ever ran.
const MARKER_TOOL: &str = r#"
[[tool]]
name = "show"
description = "Show a file."
command = ["sh", "-c", "touch out/ran && cat -- \"$1\"", "sh", { input = "file" }]
writes = ["out/**"]
[[tool.input]]
name = "file"
type = "string"
required = true
path = true

[[tool]]
name = "say"
description = "Say a word."
command = ["sh", "-c", "touch out/ran && echo \"$1\"", "sh", { input = "word" }]
writes = ["out/**"]
[[tool.input]]
name = "word"
type = "string"
required = true

[[tool]]
name = "say_dash"
description = "Say a word that may start with a dash."
command = ["echo", { input = "word" }]
[[tool.input]]
name = "word"
type = "string"
required = true
allow_dash = true
"#;

#[test]
fn config_scenario_table() {
    // (file content, expected error with the file shown as FILE, or "" for valid)
    let table: &[(&str, &str)] = &[
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\", { input = \"w\" }]\n[[tool.input]]\nname = \"w\"\ntype = \"array\"\nitems = \"string\"\nmin_items = 1\nmax_items = 3\n",
            "",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\", { input = \"nope\" }]\n",
            "FILE:2: tool `t`: command: placeholder `nope` names no declared input",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [{ input = \"w\" }]\n[[tool.input]]\nname = \"w\"\ntype = \"string\"\n",
            "FILE:2: tool `t`: command: the program (first item) must be a literal",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\"]\n\n[[tool.input]]\nname = \"w\"\ntype = \"string\"\npattern = \"([a-z\"\n",
            "FILE:7: tool `t`: input `w`: bad pattern `([a-z`: regex parse error:\n    ([a-z\n     ^\nerror: unclosed character class",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\"]\n[[tool.input]]\nname = \"w\"\ntype = \"strng\"\n",
            "FILE:7: unknown variant `strng`, expected one of `string`, `number`, `integer`, `boolean`, `array`",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\"]\nshell = true\n",
            "FILE:5: unknown field `shell`, expected one of `name`, `description`, `command`, `cwd`, `env`, `timeout_ms`, `risk`, `network`, `unix_sockets`, `writes`, `callable`, `compensate`, `input`, `approval_ttl_seconds`",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\", { inptu = \"w\" }]\n",
            "FILE:4: an argv item must be a string or { input = \"NAME\" }",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\"]\n[[tool.input]]\nname = \"w\"\ntype = \"array\"\n",
            "FILE:6: tool `t`: input `w`: an array input needs `items`",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\"]\n[[tool.input]]\nname = \"n\"\ntype = \"integer\"\nenum = [1, \"two\"]\n",
            "FILE:6: tool `t`: input `n`: enum value \"two\" is not a integer",
        ),
        (
            "[[tool]]\nname = \"bad name\"\ndescription = \"d\"\ncommand = [\"echo\"]\n",
            "FILE:2: tool `bad name`: the name must be 1 to 64 letters, digits, `_` or `-`",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\"]\nwrites = [\"a/[b\"]\n",
            "FILE:2: tool `t`: writes: bad glob `a/[b`: unclosed character class; missing ']'",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\"]\napproval_ttl_seconds = 0\n",
            "FILE:2: tool `t`: approval_ttl_seconds must be at least 1",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\"]\nenv = { X = false }\n",
            "FILE:5: an env value must be a string (set it) or true (pass it through)",
        ),
        (
            "[[output_filter]]\ntool = \"*\"\n\npattern = \"(\"\n",
            "FILE:4: output_filter: bad pattern `(`: regex parse error:\n    (\n    ^\nerror: unclosed group",
        ),
        (
            "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\"]\n[[tool]]\nname = \"t\"\ndescription = \"again\"\ncommand = [\"echo\"]\n",
            "FILE:6: duplicate tool name `t` (first defined at FILE:2)",
        ),
    ];
    for (text, expected) in table {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        let file = user.join("config.toml");
        std::fs::write(&file, text).unwrap();
        match Config::load(Some(&user), &ws) {
            Ok(config) => assert_eq!(*expected, "", "{text}: loaded {:?}", config.tools),
            Err(err) => {
                let shown = err.to_string().replace(&file.display().to_string(), "FILE");
                assert_eq!(shown, *expected, "{text}");
            }
        }
    }
}

#[tokio::test]
async fn duplicate_tool_names_across_files_name_the_second_file_and_untrusted_tools_are_ignored() {
    let h = harness().await;
    let tool = "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\"]\n";
    std::fs::write(h.user.join("a.toml"), tool).unwrap();
    std::fs::write(h.user.join("b.toml"), format!("# second\n{tool}")).unwrap();
    let err = Config::load(Some(&h.user), &h.ws).unwrap_err().to_string();
    let a = h.user.join("a.toml").display().to_string();
    let b = h.user.join("b.toml").display().to_string();
    assert_eq!(err, format!("{b}:3: duplicate tool name `t` (first defined at {a}:2)"));

    // Arrays accumulate across files; an untrusted workspace's tools, hooks and chains are
    // ignored with a warning.
    std::fs::write(h.user.join("b.toml"), tool.replace("\"t\"", "\"u\"")).unwrap();
    std::fs::create_dir_all(h.ws.join(".steward")).unwrap();
    std::fs::write(
        h.ws.join(".steward/config.toml"),
        format!(
            "{}[[hook]]\nname = \"h\"\nevents = [\"edit\"]\ncommands = [[\"true\"]]\n[[output_filter]]\npattern = \"x\"\n",
            tool.replace("\"t\"", "\"evil\"")
        ),
    )
    .unwrap();
    let c = Config::load(Some(&h.user), &h.ws).unwrap();
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t", "u"]);
    assert!(c.hooks.is_empty());
    // Output filters could hide what a tool printed: an untrusted workspace's are ignored too.
    assert!(c.output_filters.is_empty());
    assert!(c.warnings.iter().any(|w| w.contains("`tool` ignored")), "{:?}", c.warnings);
    assert!(c.warnings.iter().any(|w| w.contains("`hook` ignored")), "{:?}", c.warnings);
}

#[tokio::test]
async fn a_tool_may_not_take_a_built_in_name_or_pass_an_unlisted_variable() {
    let h = harness().await;
    let c = config(&h, "[[tool]]\nname = \"read\"\ndescription = \"d\"\ncommand = [\"cat\"]\n");
    let ws = Workspace::open(&h.ws, &[]).unwrap();
    let err = ToolRegistry::for_config(&c, &ws).err().unwrap().to_string();
    assert_eq!(err, "tool `read`: the name is taken by a built-in tool");
    let c =
        config(&h, "[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"env\"]\nenv = { AWS_SECRET = true }\n");
    let err = ToolRegistry::for_config(&c, &ws).err().unwrap().to_string();
    assert!(err.starts_with("tool `t`: env `AWS_SECRET` = true, but"), "{err}");
}

#[test]
fn t10_command_tool_schema_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        r#"
[[tool]]
name = "cargo_test"
description = "Run the tests of one crate."
command = ["cargo", "test", "-p", { input = "crate" }, "--", { input = "filters" }]
[[tool.input]]
name = "crate"
type = "string"
required = true
pattern = "^[a-z][a-z0-9_-]*$"
description = "The crate."
[[tool.input]]
name = "filters"
type = "array"
items = "string"
max_items = 5
[[tool.input]]
name = "mode"
type = "string"
enum = ["debug", "release"]
"#,
    )
    .unwrap();
    let config = Config::load(Some(dir.path()), dir.path()).unwrap();
    let tool = steward_tools::CommandTool::new(config.tools[0].clone()).unwrap();
    use steward_tools::Tool;
    let rendered = steward_provider::tool_definitions(&[tool.spec().clone()]);
    assert_eq!(
        rendered,
        json!([{
            "type": "function",
            "function": {
                "name": "cargo_test",
                "description": "Run the tests of one crate.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "crate": {"type": "string", "pattern": "^[a-z][a-z0-9_-]*$", "description": "The crate."},
                        "filters": {"type": ["array", "null"], "items": {"type": "string"}, "maxItems": 5},
                        "mode": {"type": ["string", "null"], "enum": ["debug", "release", null]}
                    },
                    "required": ["crate", "filters", "mode"],
                    "additionalProperties": false
                },
                "strict": true
            }
        }])
    );
    // The gate's own schema still accepts calls that omit optional inputs.
    assert_eq!(tool.spec().input_schema["required"], json!(["crate"]));
}

#[tokio::test]
async fn option_injection_is_refused_before_running() {
    let h = harness().await;
    let c = config(&h, MARKER_TOOL);
    let out = run(&h, c, &scenario("say", &[json!({"word": "--help"}), json!({"word": "-n"})]), true).await;
    assert_eq!(out.failures().len(), 2, "{:?}", out.kinds());
    assert!(out.failures()[0].contains("starts with `-`"), "{:?}", out.failures());
    assert!(!out.kinds().contains(&"tool_approval_required"), "nobody is asked for a refused call");
    assert!(!out.kinds().contains(&"tool_started"));
    assert!(!h.ws.join("out/ran").exists(), "the command ran");

    // A tool that allows it passes the value as one argv item.
    let c = config(&h, MARKER_TOOL);
    let out = run(&h, c, &scenario("say_dash", &[json!({"word": "-x"})]), true).await;
    assert_eq!(out.completed(), ["[exit status 0]\n-x\n"]);
}

#[tokio::test]
async fn t7_path_inputs_to_secret_ignored_or_outside_paths_are_refused_before_running() {
    let h = harness().await;
    let mut text = MARKER_TOOL.to_string();
    text.push_str("[policy]\ndeny_path = [\"private/**\"]\n");
    std::fs::create_dir_all(h.ws.join("private")).unwrap();
    std::fs::write(h.ws.join("private/p.txt"), "p\n").unwrap();
    let c = config(&h, &text);
    let calls = [
        json!({"file": ".env"}),
        json!({"file": "build.log"}),
        json!({"file": "../outside.txt"}),
        json!({"file": "private/p.txt"}),
    ];
    let out = run(&h, c, &scenario("show", &calls), true).await;
    assert_eq!(out.denied_rules(), ["secret_path", "ignored_path", "workspace_boundary", "deny_path"]);
    assert!(!out.kinds().contains(&"tool_started"));
    assert!(!h.ws.join("out/ran").exists(), "the command ran");

    // An allowed path runs (after approval: the tool writes) and is passed workspace-relative.
    let c = config(&h, MARKER_TOOL);
    let out = run(&h, c, &scenario("show", &[json!({"file": "./notes.txt"})]), true).await;
    assert_eq!(out.completed(), ["[exit status 0]\nhello notes\n"]);
    assert!(h.ws.join("out/ran").exists());
}

/// A tool with inputs not declared `path`, run in `out/`: a string, an integer and an array.
const UNDECLARED_TOOL: &str = r#"
[[tool]]
name = "show_any"
description = "Show files."
command = ["sh", "-c", "touch ran && cat -- \"$@\"", "sh", { input = "name" }, { input = "number" }, { input = "more" }]
cwd = "out"
writes = ["out/**"]
[[tool.input]]
name = "name"
type = "string"
[[tool.input]]
name = "number"
type = "integer"
[[tool.input]]
name = "more"
type = "array"
items = "string"
"#;

#[tokio::test]
async fn values_of_inputs_not_declared_paths_are_judged_by_the_files_they_name() {
    let h = harness().await;
    std::fs::hard_link(h.ws.join(".env"), h.ws.join("out/7")).unwrap();
    let c = config(&h, UNDECLARED_TOOL);
    let calls = [
        json!({"name": "../.env"}),
        json!({"number": 7}),
        json!({"more": ["../notes.txt", "x,../build.log"]}),
        json!({"name": "../../outside.txt"}),
        json!({"name": "../.env.local"}),
    ];
    let out = run(&h, c, &scenario("show_any", &calls), true).await;
    assert_eq!(out.denied_rules(), ["secret_path", "secret_path", "ignored_path", "workspace_boundary", "secret_path"]);
    assert!(!out.kinds().contains(&"tool_started"));
    assert!(!h.ws.join("out/ran").exists(), "the command ran");

    // Values that name ordinary workspace files, or nothing, run.
    let c = config(&h, UNDECLARED_TOOL);
    let out = run(&h, c, &scenario("show_any", &[json!({"name": "../notes.txt", "more": []})]), true).await;
    assert_eq!(out.completed(), ["[exit status 0]\nhello notes\n"]);
}

#[tokio::test]
async fn array_inputs_expand_to_several_argv_items_and_absent_optionals_to_none() {
    let h = harness().await;
    let c = config(
        &h,
        r#"
[[tool]]
name = "args"
description = "Print arguments."
command = ["printf", "[%s]", { input = "words" }, { input = "count" }, { input = "flag" }]
[[tool.input]]
name = "words"
type = "array"
items = { type = "string", pattern = "^[a-z ]+$" }
max_items = 3
[[tool.input]]
name = "count"
type = "integer"
[[tool.input]]
name = "flag"
type = "boolean"
"#,
    );
    let calls = [
        json!({"words": ["a b", "c"], "count": 7, "flag": true}),
        json!({"words": ["x"], "count": null}),
        json!({"words": ["a", "b", "c", "d"]}),
        json!({"words": ["UPPER"]}),
    ];
    let out = run(&h, c, &scenario("args", &calls), true).await;
    assert_eq!(out.completed(), ["[exit status 0]\n[a b][c][7][true]", "[exit status 0]\n[x]"]);
    assert_eq!(out.denied_rules(), ["invalid_arguments", "invalid_arguments"]);
}

#[tokio::test]
async fn env_values_are_set_and_allowed_names_pass() {
    let h = harness().await;
    let c = config(
        &h,
        r#"
[sandbox]
env_allow = ["STEWARD_TEST_NOT_SET_ANYWHERE"]
[[tool]]
name = "show_env"
description = "Show the environment."
command = ["sh", "-c", "echo \"mode=$MODE home=${HOME:+yes} extra=${STEWARD_TEST_NOT_SET_ANYWHERE:-none}\""]
env = { MODE = "fast", HOME = true, STEWARD_TEST_NOT_SET_ANYWHERE = true }
"#,
    );
    let out = run(&h, c, &scenario("show_env", &[json!({})]), true).await;
    assert_eq!(out.completed(), ["[exit status 0]\nmode=fast home=yes extra=none\n"]);
}

#[tokio::test]
async fn timeout_kills_the_command_and_a_non_zero_exit_is_a_failure() {
    let h = harness().await;
    let c = config(
        &h,
        r#"
[[tool]]
name = "slow"
description = "Sleep."
command = ["sleep", "5"]
timeout_ms = 200

[[tool]]
name = "fails"
description = "Fail."
command = ["sh", "-c", "echo bad >&2; exit 3"]
"#,
    );
    let started = std::time::Instant::now();
    let out = run(&h, c.clone(), &scenario("slow", &[json!({})]), true).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    assert_eq!(out.failures(), ["the command did not finish within 200 ms and was killed"]);
    let out = run(&h, c, &scenario("fails", &[json!({})]), true).await;
    assert_eq!(out.failures(), ["`fails` failed: [exit status 3]\n\n[stderr]\nbad\n"]);
}

#[tokio::test]
async fn a_writing_tool_asks_and_writes_only_under_its_writes_glob() {
    let h = harness().await;
    let tool = r#"
[[tool]]
name = "stamp"
description = "Write a stamp."
command = ["sh", "-c", "echo stamped > out/stamp.txt; echo nope > elsewhere.txt; true"]
writes = ["out/**"]
"#;
    let out = run(&h, config(&h, tool), &scenario("stamp", &[json!({})]), false).await;
    assert!(out.kinds().contains(&"tool_rejected"), "{:?}", out.kinds());
    assert!(!h.ws.join("out/stamp.txt").exists());

    let out = run(&h, config(&h, tool), &scenario("stamp", &[json!({})]), true).await;
    assert!(out.kinds().contains(&"tool_approval_required"), "{:?}", out.kinds());
    assert_eq!(out.completed().len(), 1, "{:?}", out.failures());
    assert_eq!(std::fs::read_to_string(h.ws.join("out/stamp.txt")).unwrap(), "stamped\n");
    assert!(!h.ws.join("elsewhere.txt").exists(), "wrote outside its writes glob");
}

#[tokio::test]
async fn t8_output_filter_rewrites_what_the_model_sees_and_the_audit_keeps_the_raw_digest() {
    let h = harness().await;
    let c = config(
        &h,
        r#"
[[tool]]
name = "build"
description = "Build."
command = ["printf", "   Compiling a v1\n   Compiling b v2\nFinished in 3s\n"]

[[output_filter]]
tool = "bu*"
pattern = "(?m)^\\s+Compiling .*\n"
replacement = ""

[[output_filter]]
tool = "other"
pattern = "Finished"
replacement = "XXX"
"#,
    );
    let out = run(&h, c, &scenario("build", &[json!({})]), true).await;
    assert_eq!(out.completed(), ["[exit status 0]\nFinished in 3s\n"]);
    let raw = "[exit status 0]\n   Compiling a v1\n   Compiling b v2\nFinished in 3s\n";
    let digest = steward_tools::rollback::sha256_hex(raw.as_bytes());
    let records = h.runtime.store.audit_records(Some(&out.run_id)).await.unwrap();
    let done = records.iter().find(|r| r.entry.outcome == AuditOutcome::Completed).unwrap();
    assert!(done.entry.detail.contains(&digest), "{}", done.entry.detail);
    assert!(done.entry.detail.contains("output filters applied"), "{}", done.entry.detail);
}

#[tokio::test]
async fn b25_huge_command_output_is_capped_without_splitting_utf8() {
    for (suffix, label) in [("", "ascii"), (" é漢", "multibyte")] {
        let h = harness().await;
        let script = format!(
            "i=0; while [ $i -lt 40000 ]; do printf 'LINE %07d %s{suffix}\\n' $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done"
        );
        let c = config(
            &h,
            &format!(
                "[limits]\nmax_tool_output_chars = 32768\n[[tool]]\nname = \"dump\"\ndescription = \"Dump.\"\ncommand = [\"sh\", \"-c\", {}]\ntimeout_ms = 60000\n",
                toml::Value::String(script)
            ),
        );
        let out = run(&h, c, &scenario("dump", &[json!({})]), true).await;
        let shown = &out.completed()[0];
        assert!(shown.chars().count() <= 32768, "{label}: {} chars", shown.chars().count());
        if suffix.is_empty() {
            assert!(shown.len() <= 32768, "{label}: {} bytes", shown.len());
        }
        assert!(shown.starts_with("[exit status 0]\nLINE 0000000 "), "{label}");
        assert!(shown.trim_end().ends_with(&format!("LINE 0039999 {}{suffix}", "x".repeat(40))), "{label}");
        assert!(shown.contains("characters (") && shown.contains("full output saved to"), "{label}");
        let saved = find_file(&h.outputs);
        let full = std::fs::read_to_string(saved).unwrap();
        assert_eq!(full.lines().count(), 40001, "{label}");
    }
}

fn find_file(dir: &Path) -> PathBuf {
    let first = std::fs::read_dir(dir).unwrap().next().expect("an entry").unwrap().path();
    if first.is_dir() { find_file(&first) } else { first }
}
