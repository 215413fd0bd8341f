//! The risk score of a call (SPEC C2): the tool's level, then what the call touches and does
//! (paths, options of the commands it runs, size of its change) and whether the run is
//! tainted. Deterministic, clamped to `[0, 1]`, and explained factor by factor.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::Value;
use steward_protocol::{RiskFactor, ToolSpec};

use crate::argv_rule::compile_glob;
use crate::config::{DEFAULT_DESTRUCTIVE_OPTIONS, DEFAULT_PROTECTED_PATHS, DEFAULT_SOURCE_PATHS, RiskConfig};
use crate::error::PolicyError;
use crate::option_set::{OptionPattern, OptionSet};
use crate::shell::SimpleCommand;
use steward_secrets::is_secret_path;

/// What each factor adds (see [`RiskConfig`]).
const WRITES: f64 = 0.1;
const PROTECTED_PATH: f64 = 0.3;
const MANY_FILES: f64 = 0.1;
const DELETES: f64 = 0.2;
const OUTSIDE_SOURCE: f64 = 0.1;
const DESTRUCTIVE_OPTION: f64 = 0.2;
const LARGE_CHANGE: f64 = 0.1;
const TAINTED: f64 = 0.1;

/// Programs whose only purpose is to remove files.
const DELETING_PROGRAMS: &[&str] = &["rm", "rmdir", "unlink", "shred"];

/// Globs over workspace-relative paths; a path matches when it or a parent directory does.
struct PathGlobs(GlobSet);

impl PathGlobs {
    fn new(setting: &str, globs: &[String]) -> Result<PathGlobs, PolicyError> {
        let bad = |glob: &str, message: String| PolicyError::BadGlob {
            rule: format!("policy.risk.{setting}"),
            glob: glob.to_string(),
            message,
        };
        let mut builder = GlobSetBuilder::new();
        for glob in globs {
            let trimmed = glob.trim_start_matches("./").trim_end_matches('/');
            let compiled = GlobBuilder::new(trimmed)
                .literal_separator(true)
                .build()
                .map_err(|e| bad(glob, e.kind().to_string()))?;
            builder.add(compiled);
        }
        builder.build().map(PathGlobs).map_err(|e| bad(&globs.join(", "), e.kind().to_string()))
    }

    fn matches(&self, rel: &str) -> bool {
        let mut at = rel.trim_start_matches("./").trim_end_matches('/');
        while !at.is_empty() {
            if self.0.is_match(at) {
                return true;
            }
            at = at.rfind('/').map_or("", |i| &at[..i]);
        }
        false
    }
}

/// The compiled `[policy.risk]`.
pub(crate) struct RiskRules {
    protected: PathGlobs,
    source: PathGlobs,
    destructive: Vec<String>,
    many_files: usize,
    large_change_lines: usize,
}

/// What a call is scored from besides its tool and arguments.
pub(crate) struct Touches<'a> {
    /// Workspace-relative paths it touches (path inputs and the tool's target paths).
    pub paths: &'a [String],
    /// Built-in actions it performs under another name (`delete`, `create`).
    pub actions: &'a [String],
    /// The simple commands of a `shell_command` line, when it parsed.
    pub commands: &'a [SimpleCommand],
    /// The run has read untrusted content.
    pub tainted: bool,
}

impl RiskRules {
    /// Errors: [`PolicyError::BadGlob`] for a bad path glob, [`PolicyError::BadSetting`] for a
    /// destructive option that is not an option word or a count of 0.
    pub(crate) fn new(config: &RiskConfig) -> Result<RiskRules, PolicyError> {
        let or_default = |list: &Option<Vec<String>>, default: &[&str]| list.clone().unwrap_or_else(|| owned(default));
        let destructive = or_default(&config.destructive_options, DEFAULT_DESTRUCTIVE_OPTIONS);
        if let Some(bad) = destructive.iter().find(|o| o.len() < 2 || !o.starts_with('-') || o.as_str() == "--") {
            return Err(PolicyError::BadSetting {
                setting: "risk.destructive_options".into(),
                message: format!("`{bad}` is not an option (`-f`, `--force`)"),
            });
        }
        for (setting, value) in [("many_files", config.many_files), ("large_change_lines", config.large_change_lines)] {
            if value == Some(0) {
                return Err(PolicyError::BadSetting {
                    setting: format!("risk.{setting}"),
                    message: "must be at least 1".into(),
                });
            }
        }
        Ok(RiskRules {
            protected: PathGlobs::new(
                "protected_paths",
                &or_default(&config.protected_paths, DEFAULT_PROTECTED_PATHS),
            )?,
            source: PathGlobs::new("source_paths", &or_default(&config.source_paths, DEFAULT_SOURCE_PATHS))?,
            destructive,
            many_files: config.many_files.unwrap_or(10),
            large_change_lines: config.large_change_lines.unwrap_or(200),
        })
    }

    /// The score of a call of `spec` with `args`, and its factors in the order they were
    /// added. The sum is clamped to `[0, 1]`.
    pub(crate) fn score(&self, spec: &ToolSpec, args: &Value, touches: &Touches<'_>) -> (f64, Vec<RiskFactor>) {
        let mut factors = vec![factor(
            "risk_level",
            spec.risk.base_score(),
            format!("`{}` is a {}-risk tool", spec.name, spec.risk.as_str()),
        )];
        if spec.writes {
            factors.push(factor("writes", WRITES, "it changes files or state".into()));
        }
        if let Some(path) =
            touches.paths.iter().find(|p| self.protected.matches(p) || is_secret_path(std::path::Path::new(p)))
        {
            factors.push(factor("protected_path", PROTECTED_PATH, format!("`{path}` is a protected path")));
        }
        if touches.paths.len() > self.many_files {
            factors.push(factor(
                "many_files",
                MANY_FILES,
                format!("{} paths (more than {})", touches.paths.len(), self.many_files),
            ));
        }
        let deleting_program = touches
            .commands
            .iter()
            .find(|c| DELETING_PROGRAMS.contains(&c.program.as_str()))
            .map(|c| format!("`{}` removes files", c.program));
        let deletes = (spec.name == "delete" || touches.actions.iter().any(|a| a == "delete"))
            .then(|| "it deletes files".to_string())
            .or(deleting_program);
        if let Some(detail) = deletes {
            factors.push(factor("deletes", DELETES, detail));
        }
        if spec.writes
            && let Some(path) = touches.paths.iter().find(|p| !self.source.matches(p))
        {
            factors.push(factor("outside_source_paths", OUTSIDE_SOURCE, format!("`{path}` is outside source_paths")));
        }
        if let Some(detail) = self.destructive_option(touches.commands) {
            factors.push(factor("destructive_option", DESTRUCTIVE_OPTION, detail));
        }
        if spec.writes {
            let lines = changed_lines(spec, args);
            if lines > self.large_change_lines {
                factors.push(factor(
                    "large_change",
                    LARGE_CHANGE,
                    format!("{lines} changed lines (more than {})", self.large_change_lines),
                ));
            }
        }
        if touches.tainted {
            factors.push(factor("tainted", TAINTED, "the run has read untrusted content".into()));
        }
        let sum: f64 = factors.iter().map(|f| f.score).sum();
        // Rounded to hundredths so that sums of tenths compare as written (0.5 + 0.1 is 0.6).
        ((sum.clamp(0.0, 1.0) * 100.0).round() / 100.0, factors)
    }

    /// The first destructive option a command sets, as its program reads its arguments
    /// (`-rf` sets `-r` and `-f`; `-R` is `--recursive` where the program's table says so).
    /// A word expanded at run time is not taken for an option here.
    fn destructive_option(&self, commands: &[SimpleCommand]) -> Option<String> {
        for cmd in commands {
            let Some((first, words)) = cmd.argv.split_first() else { continue };
            if words.is_empty() || first.is_empty() {
                continue;
            }
            let dynamic = cmd.dynamic.get(1..).unwrap_or(&[]);
            let set = OptionSet::read(&cmd.program, words, dynamic).without_computed_options();
            for option in &self.destructive {
                let argv = [cmd.program.clone(), option.clone(), "**".to_string()];
                let Ok(Some(pattern)) =
                    OptionPattern::compile("risk.destructive_options", &argv, &|g| compile_glob("risk", g))
                else {
                    continue;
                };
                if pattern.matches(&set) {
                    return Some(format!("`{}` sets `{option}`", shell_words::join(&cmd.argv)));
                }
            }
        }
        None
    }
}

fn factor(name: &str, score: f64, detail: String) -> RiskFactor {
    RiskFactor { factor: name.to_string(), score, detail }
}

fn owned(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Lines a writing call changes, estimated from its arguments: the `+`/`-` lines of a
/// unified diff in `patch`, and the lines of every other string that is not a path input
/// (new content, texts replaced, before/after texts).
fn changed_lines(spec: &ToolSpec, args: &Value) -> usize {
    fn walk(key: &str, value: &Value, spec: &ToolSpec) -> usize {
        match value {
            Value::String(text) if key == "patch" => text
                .lines()
                .filter(|l| {
                    (l.starts_with('+') && !l.starts_with("+++")) || (l.starts_with('-') && !l.starts_with("---"))
                })
                .count(),
            Value::String(text) if !spec.path_inputs.iter().any(|p| p == key) && key != "path" => text.lines().count(),
            Value::Array(items) => items.iter().map(|v| walk(key, v, spec)).sum(),
            Value::Object(map) => map.iter().map(|(k, v)| walk(k, v, spec)).sum(),
            _ => 0,
        }
    }
    walk("", args, spec)
}
