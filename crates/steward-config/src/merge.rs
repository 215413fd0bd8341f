//! Merging configuration files: later files override earlier ones key by key, some arrays
//! accumulate, and an untrusted workspace may only make things stricter.

use std::path::Path;

use super::Limits;

/// Sections only the user's configuration may set: a workspace's, trusted or not, are dropped.
pub(super) const USER_ONLY: &[&str] = &["trust", "tested_compensations", "telemetry"];

/// Sections an untrusted workspace may not set at all. `tool`, `hook`, `tool_call_chain`,
/// `mcp_servers` and `lsp` would run commands the workspace chose; `providers`, `run` and
/// `roles` decide where data is sent (and so does `telemetry`, which only the user's
/// configuration sets); `sandbox` and `shell` loosen containment, `generated_tools` runs code a
/// model wrote; `output_filter` rewrites what the model sees; `search` decides how much of the
/// workspace is stored under the user's state folder and given to the model.
pub(super) const UNTRUSTED_IGNORED: &[&str] = &[
    "providers",
    "run",
    "roles",
    "sandbox",
    "trust",
    "tested_compensations",
    "shell",
    "tool",
    "hook",
    "tool_call_chain",
    "output_filter",
    "mcp_servers",
    "generated_tools",
    "lsp",
    "telemetry",
    "search",
];

/// Keys of `[policy]` an untrusted workspace keeps (all others are dropped), each further
/// restricted by [`merge_stricter`] as [`UNTRUSTED_RULES`] says.
pub(super) const UNTRUSTED_POLICY_KEPT: &[&str] =
    &["blocked_actions", "deny_path", "context_rules", "max_tool_calls_per_run", "rule", "default", "untrusted_paths"];

/// Lists of `[policy]` an untrusted workspace adds to the user's instead of replacing them.
pub(super) const UNTRUSTED_POLICY_ADDED: &[&str] =
    &["blocked_actions", "deny_path", "context_rules", "rule", "untrusted_paths"];

/// What [`restrict_untrusted`] and [`merge_stricter`] do to the keys an untrusted workspace
/// keeps, by dotted key (a section name covers its keys): the text of the configuration
/// reference.
#[cfg(feature = "schema")]
pub(super) const UNTRUSTED_RULES: &[(&str, &str)] = &[
    ("limits", "only lower than the value already in effect"),
    ("policy.max_tool_calls_per_run", "only lower than the value already in effect"),
    ("policy.default", "not `allow`; ignored when the user's default is `deny`"),
    (
        "policy.rule",
        "added to the user's; only rules that deny or ask, and only those that deny when the user's default is `deny`; an `approval_ttl_seconds` longer than the user's `approval_timeout_seconds` is lowered to it",
    ),
    ("policy.deny_path", "added to the user's; entries starting with `!` are ignored"),
    ("policy.blocked_actions", "added to the user's"),
    ("policy.context_rules", "added to the user's"),
    ("policy.untrusted_paths", "added to the user's"),
];

/// True when the user's `[trust] workspaces` lists `workspace` (both canonicalised).
pub(super) fn is_trusted(user: &toml::Table, workspace: &Path) -> bool {
    let Ok(workspace) = std::fs::canonicalize(workspace) else { return false };
    let listed = user.get("trust").and_then(|t| t.get("workspaces")).and_then(|w| w.as_array());
    listed
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .any(|dir| std::fs::canonicalize(dir).is_ok_and(|d| d == workspace))
}

/// Removes from an untrusted workspace file everything that could loosen the user's settings
/// or send data elsewhere; returns the dotted names of what was removed.
pub(super) fn restrict_untrusted(table: &mut toml::Table) -> Vec<String> {
    let mut ignored = Vec::new();
    for key in UNTRUSTED_IGNORED {
        if table.remove(*key).is_some() {
            ignored.push(key.to_string());
        }
    }
    if let Some(toml::Value::Table(policy)) = table.get_mut("policy") {
        let keys: Vec<String> = policy.keys().cloned().collect();
        for key in keys {
            if !UNTRUSTED_POLICY_KEPT.contains(&key.as_str()) {
                policy.remove(&key);
                ignored.push(format!("policy.{key}"));
            }
        }
        if policy.get("default").and_then(|d| d.as_str()).is_some_and(|d| d == "allow") {
            policy.remove("default");
            ignored.push("policy.default = \"allow\"".into());
        }
        if let Some(toml::Value::Array(rules)) = policy.get_mut("rule") {
            let before = rules.len();
            rules.retain(|r| r.get("decision").and_then(|d| d.as_str()).is_some_and(|d| d == "deny" || d == "ask"));
            if rules.len() != before {
                ignored.push(format!("{} policy.rule(s) that allow", before - rules.len()));
            }
        }
    }
    ignored
}

/// Merges an untrusted workspace table: lists in `[policy]` are appended to the user's
/// (a workspace cannot drop a user's blocked action or deny rule); anything else merges as
/// usual (only the stricter keys are left in it). Returns what was ignored, and the table as
/// it was merged (what the workspace file really contributes, for noting sources).
pub(super) fn merge_stricter(base: &mut toml::Table, mut over: toml::Table) -> (Vec<String>, toml::Table) {
    let mut ignored = Vec::new();
    // Limits may only come down: a workspace must not give a run more time or rounds.
    let defaults = Limits::default();
    let effective = |table: &toml::Table, section: &str, key: &str| -> Option<i64> {
        table.get(section).and_then(|s| s.get(key)).and_then(|v| v.as_integer())
    };
    if let Some(toml::Value::Table(limits)) = over.get_mut("limits") {
        // Per role: at most the user's own value for the role, else the run's limit.
        if let Some(toml::Value::Table(roles)) = limits.get_mut("max_tool_calls_per_role") {
            let per_run = effective(base, "limits", "max_tool_calls_per_run")
                .unwrap_or(i64::from(defaults.max_tool_calls_per_run));
            let names: Vec<String> = roles.keys().cloned().collect();
            for role in names {
                let mine = base
                    .get("limits")
                    .and_then(|l| l.get("max_tool_calls_per_role"))
                    .and_then(|r| r.get(&role))
                    .and_then(|v| v.as_integer())
                    .unwrap_or(per_run);
                if roles.get(&role).and_then(|v| v.as_integer()).is_none_or(|theirs| theirs > mine) {
                    roles.remove(&role);
                    ignored.push(format!("limits.max_tool_calls_per_role.{role} (a workspace may only lower limits)"));
                }
            }
        }
        let keys: Vec<String> = limits.keys().cloned().collect();
        for key in keys {
            let default = match key.as_str() {
                "max_rounds" => i64::from(defaults.max_rounds),
                "max_tool_calls_per_run" => i64::from(defaults.max_tool_calls_per_run),
                "max_total_runtime_ms" => defaults.max_total_runtime_ms as i64,
                "max_tool_output_chars" => defaults.max_tool_output_chars as i64,
                "max_context_chars" => defaults.max_context_chars as i64,
                "tool_timeout_ms" => defaults.tool_timeout_ms as i64,
                "max_repeated_calls" => i64::from(defaults.max_repeated_calls),
                _ => continue,
            };
            let mine = effective(base, "limits", &key).unwrap_or(default);
            if limits.get(&key).and_then(|v| v.as_integer()).is_none_or(|theirs| theirs > mine) {
                limits.remove(&key);
                ignored.push(format!("limits.{key} (a workspace may only lower limits)"));
            }
        }
    }
    if let Some(toml::Value::Table(over_policy)) = over.get_mut("policy") {
        // `!pattern` would re-include what the user's `deny_path` excludes.
        if let Some(toml::Value::Array(globs)) = over_policy.get_mut("deny_path") {
            let before = globs.len();
            globs.retain(|g| g.as_str().is_some_and(|g| !g.trim_start().starts_with('!')));
            if globs.len() != before {
                ignored.push("policy.deny_path entries starting with `!`".into());
            }
        }
        if let Some(theirs) = over_policy.get("max_tool_calls_per_run").and_then(|v| v.as_integer()) {
            let mine = effective(base, "policy", "max_tool_calls_per_run")
                .or_else(|| effective(base, "limits", "max_tool_calls_per_run"))
                .unwrap_or(i64::from(defaults.max_tool_calls_per_run));
            if theirs > mine {
                over_policy.remove("max_tool_calls_per_run");
                ignored.push("policy.max_tool_calls_per_run (a workspace may only lower limits)".into());
            }
        }
        // A per-action approval expiry may only be shorter than the user's own setting: a
        // longer one is lowered to it.
        let longest = effective(base, "policy", "approval_timeout_seconds")
            .unwrap_or(steward_policy::DEFAULT_APPROVAL_TIMEOUT_SECONDS as i64);
        if let Some(toml::Value::Array(rules)) = over_policy.get_mut("rule") {
            for rule in rules.iter_mut().filter_map(toml::Value::as_table_mut) {
                let Some(theirs) = rule.get("approval_ttl_seconds").and_then(|v| v.as_integer()) else { continue };
                if theirs > longest {
                    let name = rule.get("name").and_then(|n| n.as_str()).unwrap_or("").to_string();
                    rule.insert("approval_ttl_seconds".into(), toml::Value::Integer(longest));
                    ignored.push(format!(
                        "policy.rule `{name}` approval_ttl_seconds = {theirs} (lowered to {longest}: a workspace may only shorten approval expiry)"
                    ));
                }
            }
        }
        if base.get("policy").and_then(|p| p.get("default")).and_then(|d| d.as_str()) == Some("deny") {
            over_policy.remove("default");
            // Against a default of deny, a rule that asks would loosen it: only denials count.
            if let Some(toml::Value::Array(rules)) = over_policy.get_mut("rule") {
                let before = rules.len();
                rules.retain(|r| r.get("decision").and_then(|d| d.as_str()) == Some("deny"));
                if rules.len() != before {
                    ignored.push("policy.rule entries that ask (your default is deny)".into());
                }
            }
        }
    }
    let kept = over.clone();
    if let Some(toml::Value::Table(over_policy)) = over.get_mut("policy")
        && let Some(toml::Value::Table(base_policy)) = base.get_mut("policy")
    {
        // `untrusted_paths` only ever adds taint.
        for key in UNTRUSTED_POLICY_ADDED {
            if let Some(toml::Value::Array(theirs)) = over_policy.remove(*key) {
                match base_policy.get_mut(*key) {
                    Some(toml::Value::Array(mine)) => mine.extend(theirs),
                    _ => {
                        base_policy.insert(key.to_string(), toml::Value::Array(theirs));
                    }
                }
            }
        }
    }
    merge(base, over);
    (ignored, kept)
}
/// Top-level arrays of tables that accumulate across files instead of being replaced.
const CONCATENATED: &[&str] = &["tool", "output_filter", "hook", "tool_call_chain", "lsp"];

/// Deep-merges `over` into `base`: tables merge key by key, the [`CONCATENATED`] arrays and
/// every other array of tables (`[[policy.rule]]`) are appended, anything else (plain values,
/// lists of strings such as `blocked_actions`) is replaced by the later file.
pub(super) fn merge(base: &mut toml::Table, mut over: toml::Table) {
    for key in CONCATENATED {
        if let Some(toml::Value::Array(theirs)) = over.remove(*key) {
            match base.get_mut(*key) {
                Some(toml::Value::Array(mine)) => mine.extend(theirs),
                _ => {
                    base.insert(key.to_string(), toml::Value::Array(theirs));
                }
            }
        }
    }
    merge_tables(base, over);
}

fn merge_tables(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_tables(b, o),
            // Arrays of tables (`[[policy.rule]]`, `[[policy.context_rules]]`) add up across
            // files like `[[tool]]`: a rule in one file never silently replaces another's.
            (Some(toml::Value::Array(mine)), toml::Value::Array(theirs))
                if mine.iter().chain(&theirs).all(toml::Value::is_table) && !theirs.is_empty() =>
            {
                mine.extend(theirs);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}
