//! Repeated calls (SPEC A1): a model that proposes again a call it already made in the run
//! (same tool, same arguments after normalising) is not run again when the outcome cannot
//! differ.
//!
//! - A repeat of a call the gate **refused**, the owner **rejected**, nobody could approve
//!   (`no_approver`) or whose approval **expired** is not executed, and the owner is not asked
//!   again: the answer to exactly this call was already given in this run, and asking until
//!   someone clicks "approve" is how approval fatigue is exploited. The model is told which
//!   earlier call it repeats, why that one was refused and what would change the outcome.
//! - A repeat of a call that **failed** is treated the same while nothing that could change the
//!   result happened since (no call of a tool that is not a pure read ran, and the files it
//!   names are unchanged); otherwise it runs again. Failures of tools that reach outside the
//!   workspace (`untrusted_output`: network commands, MCP tools) may pass, so their repeats run.
//! - A repeat of a **successful pure read** ([`steward_tools::Tool::pure_read`]) under the same
//!   conditions is answered from the run's record, with a note, and not run again.
//!
//! Refused repeats are counted; at `limits.max_repeated_calls` the run stops with the stop
//! reason `stuck`. Each repeat is a `tool_call_repeated` event and an audit record (policy
//! `repeated_call`).
//!
//! Normalising: object keys sorted, `null` arguments dropped (tools treat them as absent), and
//! the tool's path arguments lexically normalised (`./a//b/` → `a/b`, `` → `.`); `..` is kept.
//! Two calls that differ after this are different calls, and the gate judges each.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;
use steward_protocol::{AuditEntry, AuditOutcome, EventKind, ToolCall};

use steward_tools::ToolRegistry;

pub(crate) use crate::call_trace::{CallOutcome, CallTrace};

/// Size and modification time of each path a call names (`None` when it does not exist).
type Fingerprint = Vec<Option<(u64, SystemTime)>>;

/// An earlier call whose outcome a repeat gets.
#[derive(Debug, Clone)]
struct Earlier {
    call_id: String,
    round: u32,
    outcome: CallOutcome,
    /// What the model was told (for a read answered from the record).
    content: String,
    /// [`Repeats::epoch`] when it ended.
    epoch: u64,
    fingerprint: Fingerprint,
}

/// A repeat that is not executed.
#[derive(Debug, Clone)]
pub(crate) struct Repeat {
    /// What the model is told instead of a result.
    pub message: String,
    /// True for an unchanged read answered from the record (the message holds the result).
    pub answered_from_record: bool,
    /// The earlier call.
    pub earlier_call_id: String,
    /// `refused`, `rejected`, `expired`, `failed` or `completed`.
    pub earlier_outcome: &'static str,
    /// The earlier deciding rule (empty when none).
    pub rule: String,
    /// Refused repeats in the run so far (0 for an answered read).
    pub repeats: u32,
    /// Set when this repeat reached `max_repeated_calls`: the run stops.
    pub stuck: Option<String>,
}

/// The record of one run's calls, for spotting repeats.
pub(crate) struct Repeats {
    earlier: HashMap<String, Earlier>,
    /// Bumped each time a call of a tool that is not a pure read starts executing: results
    /// from before may no longer hold.
    epoch: u64,
    repeats: u32,
    max_repeats: u32,
    root: std::path::PathBuf,
}

impl Repeats {
    /// An empty record for a run in the workspace `root`, stopping at `max_repeats` refused
    /// repeats.
    pub(crate) fn new(root: &Path, max_repeats: u32) -> Self {
        Repeats {
            earlier: HashMap::new(),
            epoch: 0,
            repeats: 0,
            max_repeats: max_repeats.max(1),
            root: root.to_path_buf(),
        }
    }

    /// Checks a proposed call against the record: `None` when it must go through the gate as
    /// usual, else the repeat to report instead.
    pub(crate) fn check(&mut self, call: &ToolCall, tools: &ToolRegistry) -> Option<Repeat> {
        let earlier = self.earlier.get(&key(call, tools))?;
        let unchanged = earlier.epoch == self.epoch && earlier.fingerprint == fingerprint(&self.root, call, tools);
        if !earlier.outcome.is_decision() && !unchanged {
            return None;
        }
        let tool = &call.name;
        let what = format!("`{tool}` call `{}` of round {}", earlier.call_id, earlier.round);
        let mut repeat = Repeat {
            message: String::new(),
            answered_from_record: false,
            earlier_call_id: earlier.call_id.clone(),
            earlier_outcome: earlier.outcome.name(),
            rule: earlier.outcome.rule().to_string(),
            repeats: 0,
            stuck: None,
        };
        if earlier.outcome == CallOutcome::Completed {
            repeat.answered_from_record = true;
            repeat.message = format!(
                "[Same call as {what}; nothing has changed since, so this is its result from the run's record, \
                 not run again.]\n{}",
                earlier.content
            );
            return Some(repeat);
        }
        self.repeats += 1;
        repeat.repeats = self.repeats;
        let earlier_said = match &earlier.outcome {
            CallOutcome::Refused { rule, reason } => {
                format!("was refused by rule `{rule}`: {}", reason.trim_end_matches('.'))
            }
            CallOutcome::NoApprover => {
                "needs the owner's approval and nobody can approve here (no_approver)".to_string()
            }
            CallOutcome::Rejected { reason } => {
                format!("was rejected by the owner: {}", reason.trim_end_matches('.'))
            }
            CallOutcome::Expired => "waited for the owner's approval until the request expired".to_string(),
            CallOutcome::Failed { error } => format!("failed: {}", error.trim_end_matches('.')),
            CallOutcome::Completed => String::new(),
        };
        let offered: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
        repeat.message = format!(
            "Not run: this repeats {what} with the same arguments, which {earlier_said}. The same call gets the \
             same outcome, so it was not run or asked again. {} (Repeated calls in this run: {} of {}; at {} the \
             run stops.)",
            hint(&earlier.outcome, tool, &offered),
            self.repeats,
            self.max_repeats,
            self.max_repeats
        );
        if self.repeats >= self.max_repeats {
            repeat.stuck = Some(format!(
                "Stopped: the model is stuck. It repeated calls that were already refused or failed {} times \
                 (limits.max_repeated_calls = {}); none of the repeats ran. The last: `{tool}` with {}, which {earlier_said}.",
                self.repeats,
                self.max_repeats,
                canonical(&call.arguments)
            ));
        }
        Some(repeat)
    }

    /// Records how a call that went through the gate ended (`result` is what the model was
    /// told), from the events it produced.
    pub(crate) fn record(&mut self, call: &ToolCall, round: u32, trace: CallTrace, result: &str, tools: &ToolRegistry) {
        let pure = tools.get(&call.name).is_some_and(|t| t.pure_read());
        if trace.started && !pure {
            self.epoch += 1;
        }
        let Some(outcome) = trace.outcome else { return };
        // Successful calls are kept only for pure reads; a repeated write goes to the gate again.
        if outcome == CallOutcome::Completed && !pure {
            return;
        }
        // A tool that reaches outside (network, MCP) may fail for a passing reason: its retry runs.
        if matches!(outcome, CallOutcome::Failed { .. })
            && tools.get(&call.name).is_none_or(|t| t.spec().untrusted_output)
        {
            return;
        }
        let earlier = Earlier {
            call_id: call.id.clone(),
            round,
            outcome,
            content: result.to_string(),
            epoch: self.epoch,
            fingerprint: fingerprint(&self.root, call, tools),
        };
        self.earlier.insert(key(call, tools), earlier);
    }

    /// Notes that a call ran outside [`Repeats::record`] (a chain step): earlier results may
    /// no longer hold.
    pub(crate) fn ran_elsewhere(&mut self, call: &ToolCall, trace: &CallTrace, tools: &ToolRegistry) {
        if trace.started && !tools.get(&call.name).is_some_and(|t| t.pure_read()) {
            self.epoch += 1;
        }
    }
}

/// Publishes a repeat that is not executed: the `tool_requested` of the proposal, an audit
/// record (policy `repeated_call`: `reused` for a read answered from the record, `blocked`
/// otherwise) and `tool_call_repeated`.
pub(crate) async fn report(
    store: &std::sync::Arc<dyn steward_store::Store>,
    redactor: &steward_policy::Redactor,
    run_id: &str,
    events: &crate::events::EventEmitter,
    call: &ToolCall,
    repeat: &Repeat,
) -> Result<(), steward_store::StoreError> {
    events
        .emit(EventKind::ToolRequested {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
        })
        .await?;
    let (outcome, detail) = if repeat.answered_from_record {
        (AuditOutcome::Reused, format!("repeat of {}; answered from the run's record, not run", repeat.earlier_call_id))
    } else {
        let rule = if repeat.rule.is_empty() { String::new() } else { format!(" by `{}`", repeat.rule) };
        (
            AuditOutcome::Blocked,
            format!(
                "repeat {} of {} ({}{rule}); not run{}",
                repeat.repeats,
                repeat.earlier_call_id,
                repeat.earlier_outcome,
                if repeat.stuck.is_some() { "; the run stops: stuck" } else { "" }
            ),
        )
    };
    store
        .queue_audit(AuditEntry {
            agent: "steward".into(),
            run_id: run_id.to_string(),
            call_id: call.id.clone(),
            action: call.name.clone(),
            input: redactor.redact_value(&call.arguments),
            policy: "repeated_call".into(),
            risk: 0.0,
            outcome,
            latency_ms: 0,
            sandbox: String::new(),
            approval_id: String::new(),
            rollback_token: String::new(),
            detail,
        })
        .await?;
    events
        .emit(EventKind::ToolCallRepeated {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            earlier_call_id: repeat.earlier_call_id.clone(),
            earlier_outcome: repeat.earlier_outcome.to_string(),
            rule: repeat.rule.clone(),
            answered_from_record: repeat.answered_from_record,
            repeats: repeat.repeats,
            message: if repeat.answered_from_record {
                repeat.message.lines().next().unwrap_or_default().to_string()
            } else {
                repeat.message.clone()
            },
        })
        .await?;
    Ok(())
}

/// What would change the outcome of a call that ended as `outcome`.
fn hint(outcome: &CallOutcome, tool: &str, offered: &[String]) -> String {
    let generic = "Change the call (another tool, path or arguments) or answer without it.".to_string();
    match outcome {
        CallOutcome::Failed { .. } => {
            "Nothing has changed since, so it would fail the same way: change the arguments or the approach.".into()
        }
        CallOutcome::NoApprover => {
            "Do the task another way, or answer and say what you would do and what needs approval.".into()
        }
        CallOutcome::Rejected { .. } => "The owner rejected exactly this call and is not asked again in this run: \
             choose a different approach, or answer and say what you need."
            .into(),
        CallOutcome::Expired => "It is not asked again in this run: answer and say what needs approval, so the \
             owner can approve it in a new run."
            .into(),
        CallOutcome::Refused { rule, .. } => match rule.as_str() {
            "workspace_boundary" => {
                let example = if tool == "list" {
                    "`list` with `.` lists it".to_string()
                } else {
                    "`list` with `.` shows what is there".to_string()
                };
                format!(
                    "Paths are relative to the workspace root: `.` is the root itself ({example}), `dir/file` is \
                     below it; absolute paths and `..` that leave the workspace are always refused."
                )
            }
            "secret_path" | "secret_file" => "Secret files (.env, keys, credentials) are never readable by tools: \
                 continue without their content, or tell the user."
                .into(),
            "protected_path" => ".git and .steward are never changed by tools: work on other files.".into(),
            "ignored_path" => "Files ignored by .gitignore are not readable by tools: pick another file.".into(),
            "deny_path" => "The workspace policy denies this path: pick another file.".into(),
            "invalid_path" => "Give a plain workspace-relative path such as `src/main.rs`.".into(),
            "invalid_arguments" => {
                "Fix the arguments to match the tool's schema: the right types (numbers unquoted) and every \
                 required field."
                    .into()
            }
            "unknown_tool" => format!("Call only the tools offered: {}.", offered.join(", ")),
            "blocked_actions" | "allowed_actions" => {
                "The policy does not allow this action: do the task another way, or explain in your answer.".into()
            }
            "approval_expired" => "Its approval expired: answer and say what needs approval.".into(),
            _ => generic,
        },
        CallOutcome::Completed => generic,
    }
}

/// The identity of a call: its tool and its normalised arguments.
fn key(call: &ToolCall, tools: &ToolRegistry) -> String {
    let path_inputs = tools.get(&call.name).map(|t| t.spec().path_inputs.clone()).unwrap_or_default();
    let mut arguments = call.arguments.clone();
    if let Value::Object(map) = &mut arguments {
        map.retain(|_, v| !v.is_null());
        for name in &path_inputs {
            match map.get_mut(name) {
                Some(Value::String(p)) => *p = normalise_path(p),
                Some(Value::Array(items)) => {
                    for item in items {
                        if let Value::String(p) = item {
                            *p = normalise_path(p);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    format!("{}\u{0}{}", call.name, canonical(&arguments))
}

/// JSON text with object keys sorted at every level.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let ordered: BTreeMap<&String, Value> = map.iter().map(|(k, v)| (k, sorted(v))).collect();
                Value::Object(ordered.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    // Serialising a map whose keys were inserted in order keeps that order with or without
    // serde_json's `preserve_order`.
    sorted(value).to_string()
}

/// Lexical normalisation of a path argument: empty and `.` components and repeated or
/// trailing slashes are dropped; `..` is kept (it is the gate's to judge).
fn normalise_path(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    match (path.starts_with('/'), parts.is_empty()) {
        (true, _) => format!("/{}", parts.join("/")),
        (false, true) => ".".into(),
        (false, false) => parts.join("/"),
    }
}

/// Size and modification time of the files a call names, below `root`.
fn fingerprint(root: &Path, call: &ToolCall, tools: &ToolRegistry) -> Fingerprint {
    let Some(tool) = tools.get(&call.name) else { return Vec::new() };
    let mut paths = Vec::new();
    for name in &tool.spec().path_inputs {
        match call.arguments.get(name) {
            Some(Value::String(p)) => paths.push(p.clone()),
            Some(Value::Array(items)) => paths.extend(items.iter().filter_map(Value::as_str).map(str::to_string)),
            _ => {}
        }
    }
    paths
        .iter()
        .map(|p| {
            let meta = std::fs::metadata(root.join(normalise_path(p).trim_start_matches('/'))).ok()?;
            Some((meta.len(), meta.modified().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall { id: "c".into(), name: name.into(), arguments }
    }

    fn refused(rule: &str) -> CallTrace {
        CallTrace {
            started: false,
            outcome: Some(CallOutcome::Refused { rule: rule.into(), reason: "outside the workspace".into() }),
        }
    }

    #[test]
    fn identical_calls_after_normalising_share_a_key_and_others_do_not() {
        let tools = ToolRegistry::builtin();
        let k = |name: &str, args: Value| key(&call(name, args), &tools);
        assert_eq!(k("list", json!({"path": "./src//"})), k("list", json!({"path": "src"})));
        assert_eq!(k("list", json!({"path": ""})), k("list", json!({"path": "."})));
        assert_eq!(k("read", json!({"path": "a", "start_line": null})), k("read", json!({"path": "a"})));
        assert_eq!(
            k("search", json!({"query": "x", "path": "src"})),
            k("search", json!({"path": "./src", "query": "x"}))
        );
        assert_ne!(k("list", json!({"path": "../x"})), k("list", json!({"path": "x"})));
        assert_ne!(k("list", json!({"path": "/path/to/folder"})), k("list", json!({"path": "path/to/folder"})));
        assert_ne!(k("read", json!({"path": "a"})), k("list", json!({"path": "a"})));
        // Only path arguments are normalised.
        assert_ne!(k("search", json!({"query": "./x"})), k("search", json!({"query": "x"})));
    }

    #[test]
    fn refused_repeats_are_not_run_and_the_limit_makes_the_run_stuck() {
        let dir = tempfile::tempdir().unwrap();
        let tools = ToolRegistry::builtin();
        let mut repeats = Repeats::new(dir.path(), 2);
        let c = call("list", json!({"path": "/path/to/folder"}));
        assert!(repeats.check(&c, &tools).is_none());
        repeats.record(&c, 1, refused("workspace_boundary"), "Refused", &tools);
        let first = repeats.check(&c, &tools).expect("a repeat");
        assert!(!first.answered_from_record && first.stuck.is_none() && first.repeats == 1);
        assert!(first.message.contains("workspace_boundary") && first.message.contains("`list` with `.` lists it"));
        let second = repeats.check(&call("list", json!({"path": "/path/to/folder/"})), &tools).expect("a repeat");
        assert!(second.stuck.as_deref().is_some_and(|s| s.contains("max_repeated_calls = 2")), "{second:?}");
        // A different call is judged as usual.
        assert!(repeats.check(&call("list", json!({"path": "."})), &tools).is_none());
    }

    #[test]
    fn reads_are_answered_from_the_record_until_something_changes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        let tools = ToolRegistry::builtin();
        let mut repeats = Repeats::new(dir.path(), 2);
        let read = call("read", json!({"path": "a.txt"}));
        let done = CallTrace { started: true, outcome: Some(CallOutcome::Completed) };
        repeats.record(&read, 1, done.clone(), "one", &tools);
        let again = repeats.check(&read, &tools).expect("answered from the record");
        assert!(again.answered_from_record && again.message.ends_with("one") && again.repeats == 0);
        // The file changed on disk: read again.
        std::fs::write(dir.path().join("a.txt"), "one and two\n").unwrap();
        assert!(repeats.check(&read, &tools).is_none());
        repeats.record(&read, 2, done, "one and two", &tools);
        assert!(repeats.check(&read, &tools).is_some());
        // A writing call ran since: read again.
        let edit = call("edit", json!({"path": "b.txt"}));
        repeats.record(&edit, 3, CallTrace { started: true, outcome: Some(CallOutcome::Completed) }, "ok", &tools);
        assert!(repeats.check(&read, &tools).is_none());
    }

    #[test]
    fn failures_repeat_only_while_nothing_changed_but_decisions_stand() {
        let dir = tempfile::tempdir().unwrap();
        let tools = ToolRegistry::builtin();
        let mut repeats = Repeats::new(dir.path(), 5);
        let read = call("read", json!({"path": "missing.txt"}));
        let failed = CallTrace { started: true, outcome: Some(CallOutcome::Failed { error: "not found".into() }) };
        repeats.record(&read, 1, failed, "Error", &tools);
        assert!(repeats.check(&read, &tools).is_some_and(|r| r.message.contains("failed: not found")));
        let rejected = call("edit", json!({"path": "x", "old": "a", "new": "b"}));
        let owner_said_no = CallTrace { started: false, outcome: Some(CallOutcome::Rejected { reason: "no".into() }) };
        repeats.record(&rejected, 1, owner_said_no, "Not run", &tools);
        let create = call("create", json!({"path": "missing.txt", "content": "x"}));
        repeats.record(&create, 2, CallTrace { started: true, outcome: Some(CallOutcome::Completed) }, "ok", &tools);
        assert!(repeats.check(&read, &tools).is_none(), "the file was created since");
        let again = repeats.check(&rejected, &tools).expect("the owner is not asked again");
        assert_eq!(again.rule, "rejected_by_owner");
        assert!(again.message.contains("not asked again"));
    }
}
