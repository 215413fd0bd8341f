//! The git tools (SPEC T3): `git_status`, `git_diff`, `git_log`, `git_show`.
//!
//! Each runs `git` through [`steward_sandbox::run`] with no network, the workspace root as
//! working directory, the run's per-call timeout, and a fixed argv — never a shell. Model
//! input reaches git only as a resolved workspace path after `--`, a bounded count, or a
//! revision checked against `^[A-Za-z0-9._/~^-]{1,100}$` that cannot start with `-` (no option
//! injection) and is then pinned to a commit with `rev-parse --verify` (so a blob id cannot be
//! used to print a secret file's content).
//!
//! Repository configuration cannot start programs: external diff drivers and textconv
//! filters are disabled (`--no-ext-diff --no-textconv`), as are `core.fsmonitor` and the
//! pager.
//!
//! Secret files in diffs: `git_diff` and `git_show` pass pathspec excludes for the S1 names
//! ([`SECRET_PATHSPEC_EXCLUDES`]), and then drop every `diff --git` section whose path is a
//! secret path ([`steward_policy::is_secret_path`]), ignored, or denied by the workspace
//! rules, or whose header cannot be parsed. `git_status` passes the same excludes and drops
//! every entry whose path the walkers (`list`, the index) leave out
//! ([`steward_policy::Workspace::exclusion`]: secret, `deny_path`, ignored), saying how many.
//! Limitation: commit messages, file *names* in `git_log`, and content a commit moved from a
//! secret file into an ordinary one are shown as git prints them.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use regex::Regex;
use serde_json::{Value, json};
use steward_policy::Access;
use steward_protocol::{ErrorClass, RiskLevel, ToolSpec};
use steward_sandbox::{ExecRequest, SandboxError};

use super::shared::{opt_bool, opt_str, opt_u64, spec, str_arg};
use super::{Tool, ToolContext, ToolError, ToolOutput};

/// Default and largest `max_count` of `git_log`.
const LOG_DEFAULT: u64 = 20;
const LOG_MAX: u64 = 50;
/// Most bytes of git output kept (the orchestrator caps what the model sees further).
const MAX_GIT_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// Git pathspecs excluding the secret-path names of SPEC S1 (case-insensitive globs). They
/// mirror [`steward_policy::is_secret_path`]; the output filter applies that predicate itself,
/// so a name missing here is still removed from diffs.
pub const SECRET_PATHSPEC_EXCLUDES: &[&str] = &[
    ":(exclude,glob,icase)**/.env",
    ":(exclude,glob,icase)**/.env.*",
    ":(exclude,glob,icase)**/.env/**",
    ":(exclude,glob,icase)**/.env.*/**",
    ":(exclude,glob,icase)**/*.pem",
    ":(exclude,glob,icase)**/*.key",
    ":(exclude,glob,icase)**/*.p12",
    ":(exclude,glob,icase)**/*.pfx",
    ":(exclude,glob,icase)**/id_rsa*",
    ":(exclude,glob,icase)**/id_dsa*",
    ":(exclude,glob,icase)**/id_ecdsa*",
    ":(exclude,glob,icase)**/id_ed25519*",
    ":(exclude,glob,icase)**/.ssh/**",
    ":(exclude,glob,icase)**/.aws/credentials",
    ":(exclude,glob,icase)**/.netrc",
    ":(exclude,glob,icase)**/.npmrc",
    ":(exclude,glob,icase)**/.pypirc",
    ":(exclude,glob,icase)**/credentials.json",
    ":(exclude,glob,icase)**/.docker/config.json",
];

/// The git tools.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(GitTool::status()), Arc::new(GitTool::diff()), Arc::new(GitTool::log()), Arc::new(GitTool::show())]
}

#[derive(Clone, Copy)]
enum Command {
    Status,
    Diff,
    Log,
    Show,
}

/// One git tool; which one is fixed at construction.
pub struct GitTool {
    command: Command,
    spec: ToolSpec,
}

impl GitTool {
    /// `git_status {}` (risk `safe`): branch and short status of the working tree.
    pub fn status() -> Self {
        let spec = spec(
            "git_status",
            "Show the git branch and the short status of the workspace (changed, staged and untracked files).",
            json!({}),
            &[],
            RiskLevel::Safe,
            false,
            &[],
        );
        GitTool { command: Command::Status, spec }
    }

    /// `git_diff {path?, staged?}` (risk `low`): unstaged (or staged) changes as a diff.
    pub fn diff() -> Self {
        let spec = spec(
            "git_diff",
            "Show uncommitted changes as a unified diff: unstaged by default, staged with `staged: true`.",
            json!({
                "path": {"type": ["string", "null"], "description": "Limit to this workspace-relative file or directory."},
                "staged": {"type": ["boolean", "null"], "description": "Show staged (indexed) changes instead of unstaged ones."}
            }),
            &[],
            RiskLevel::Low,
            false,
            &["path"],
        );
        GitTool { command: Command::Diff, spec }
    }

    /// `git_log {max_count?, path?}` (risk `low`): recent commits, one line each.
    pub fn log() -> Self {
        let spec = spec(
            "git_log",
            "Show recent commits, one line each: short hash, date, author, subject.",
            json!({
                "max_count": {"type": ["integer", "null"], "minimum": 1, "maximum": LOG_MAX, "description": "How many commits (default 20, at most 50)."},
                "path": {"type": ["string", "null"], "description": "Only commits touching this workspace-relative path."}
            }),
            &[],
            RiskLevel::Low,
            false,
            &["path"],
        );
        GitTool { command: Command::Log, spec }
    }

    /// `git_show {rev}` (risk `low`): one commit with its diff.
    pub fn show() -> Self {
        let spec = spec(
            "git_show",
            "Show one commit (message and diff) by hash, branch, tag or an expression like HEAD~2.",
            json!({
                "rev": {"type": "string", "pattern": "^[A-Za-z0-9._/~^][A-Za-z0-9._/~^-]{0,99}$", "description": "The commit: a hash, branch or tag name, or e.g. HEAD~1."}
            }),
            &["rev"],
            RiskLevel::Low,
            false,
            &[],
        );
        GitTool { command: Command::Show, spec }
    }
}

/// Checks a `git_show` revision: `^[A-Za-z0-9._/~^-]{1,100}$`, not starting with `-`.
/// Errors with rule `invalid_arguments`.
pub fn validate_rev(rev: &str) -> Result<(), ToolError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._/~^-".contains(c);
    if rev.is_empty() || rev.len() > 100 || !rev.chars().all(allowed) {
        return Err(ToolError::refused(
            "invalid_arguments",
            "`rev` must be 1–100 characters of A–Z a–z 0–9 . _ / ~ ^ -",
        ));
    }
    if rev.starts_with('-') {
        return Err(ToolError::refused(
            "invalid_arguments",
            "`rev` must not start with `-` (it would be read as an option)",
        ));
    }
    Ok(())
}

/// The fixed start of every git argv.
fn git_argv(args: &[&str]) -> Vec<String> {
    let base = [
        "git",
        "--no-pager",
        "-c",
        "core.pager=cat",
        "-c",
        "color.ui=never",
        "-c",
        "core.quotePath=false",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "diff.external=",
        "-c",
        "log.showSignature=false",
    ];
    base.iter().chain(args).map(|s| s.to_string()).collect()
}

#[async_trait]
impl Tool for GitTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn pure_read(&self) -> bool {
        true
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = match opt_str(args, "path")?.filter(|p| !p.is_empty()) {
            Some(p) => Some(ctx.workspace.resolve(p, Access::Read)?.rel),
            None => None,
        };
        // Pathspec: the given path (or the whole workspace), relative to the root.
        let scope = match path.as_deref() {
            None | Some("") => ".".to_string(),
            Some(rel) => format!(":(literal){rel}"),
        };
        let (argv, filter) = match self.command {
            Command::Status => {
                let mut a = vec!["status", "--short", "--branch", "--", "."];
                a.extend(SECRET_PATHSPEC_EXCLUDES);
                (git_argv(&a), false)
            }
            Command::Diff => {
                let mut a = vec!["diff", "--no-ext-diff", "--no-textconv", "--relative"];
                if opt_bool(args, "staged")?.unwrap_or(false) {
                    a.push("--cached");
                }
                a.extend(["--", scope.as_str()]);
                a.extend(SECRET_PATHSPEC_EXCLUDES);
                (git_argv(&a), true)
            }
            Command::Log => {
                let count = opt_u64(args, "max_count")?.unwrap_or(LOG_DEFAULT).clamp(1, LOG_MAX);
                let count = format!("--max-count={count}");
                let a = ["log", &count, "--date=short", "--format=%h %ad %an: %s", "--", scope.as_str()];
                (git_argv(&a), false)
            }
            Command::Show => {
                let rev = str_arg(args, "rev")?;
                validate_rev(rev)?;
                let commit = run_git(
                    ctx,
                    git_argv(&["rev-parse", "--verify", "--quiet", "--end-of-options", &format!("{rev}^{{commit}}")]),
                )
                .await
                .map_err(|e| {
                    if e.message.starts_with("git exited") {
                        ToolError::failed(format!("`{rev}` is not a commit in this repository"))
                    } else {
                        e
                    }
                })?;
                let commit = commit.content.trim().to_string();
                let mut a = vec![
                    "show",
                    "--no-notes",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--relative",
                    "--date=iso",
                    &commit,
                    "--",
                    ".",
                ];
                a.extend(SECRET_PATHSPEC_EXCLUDES);
                (git_argv(&a), true)
            }
        };
        let mut out = run_git(ctx, argv).await?;
        if filter {
            out.content = drop_hidden_sections(&out.content, |rel| {
                steward_policy::is_secret_path(Path::new(rel))
                    || ctx.workspace.exclusion(Path::new(rel), false).is_some()
            });
            // The files the diff shows: reading one under `untrusted_paths` taints the run.
            out.quoted_paths = section_paths(&out.content);
        }
        if matches!(self.command, Command::Status) {
            out.content = drop_hidden_entries(&out.content, |rel, is_dir| {
                ctx.workspace.exclusion(Path::new(rel), is_dir).is_some()
            });
        }
        if out.content.trim().is_empty() {
            out.content = match self.command {
                Command::Diff => "no changes".into(),
                Command::Log => "no commits".into(),
                _ => out.content,
            };
        }
        Ok(out)
    }
}

/// The repository git may use: `<workspace>/.git` must be a directory inside the workspace
/// (not a `gitdir:` file pointing elsewhere, not a parent repository above the workspace), and
/// its own configuration (read by [`steward_policy::repository_config_programs`], submodules
/// included) must not make read-only commands start programs (`filter.*.clean`, `.smudge`,
/// `.process` run on `status` and `diff`; an `include.path` is not followed, so it counts).
/// Returns the environment that pins git to that repository.
fn repository_guard(ctx: &ToolContext) -> Result<Vec<(String, String)>, ToolError> {
    let root = ctx.workspace.root();
    let git_dir = root.join(".git");
    match std::fs::symlink_metadata(&git_dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(ToolError::refused(
                "workspace_boundary",
                "`.git` in the workspace is not a directory (a `gitdir:` link or a symbolic link can point outside the workspace); the git tools refuse it",
            ));
        }
        Err(_) => return Err(ToolError::failed("the workspace is not a git repository (run `git init` first)")),
    }
    let env = vec![
        ("GIT_TERMINAL_PROMPT".to_string(), "0".to_string()),
        ("GIT_OPTIONAL_LOCKS".to_string(), "0".to_string()),
        ("GIT_CONFIG_NOSYSTEM".to_string(), "1".to_string()),
        ("GIT_CONFIG_GLOBAL".to_string(), "/dev/null".to_string()),
        ("GIT_DIR".to_string(), git_dir.display().to_string()),
        ("GIT_WORK_TREE".to_string(), root.display().to_string()),
    ];
    // The shared check of `steward_policy` (the shell judge uses it too). Filter drivers run
    // on `status` and `diff`, and an include may hold one; the fixed argv above turns off the
    // other settings these read-only commands would obey (pager, fsmonitor, diff drivers).
    let names = steward_policy::repository_config_programs(&git_dir).map_err(|e| {
        ToolError::refused(
            "repository_config",
            format!(
                "the repository's own git configuration cannot be checked ({e}); the git tools refuse this repository"
            ),
        )
    })?;
    if let Some(name) = names.iter().find(|n| {
        (n.starts_with("filter.") && (n.ends_with(".clean") || n.ends_with(".smudge") || n.ends_with(".process")))
            || n.starts_with("include.")
            || n.starts_with("includeif.")
    }) {
        return Err(ToolError::refused(
            "repository_config",
            format!(
                "the repository's own git configuration sets `{name}`, which would run a program on every status or diff; the git tools refuse this repository"
            ),
        ));
    }
    Ok(env)
}

/// Runs one git argv in the sandbox; a non-zero exit becomes a `tool_failed` error carrying
/// git's stderr.
async fn run_git(ctx: &ToolContext, argv: Vec<String>) -> Result<ToolOutput, ToolError> {
    let env = repository_guard(ctx)?;
    // Read-only git commands: nothing writable (the sandbox's default), no network.
    let request = ExecRequest {
        env_allow: ctx.env_allow.clone(),
        env_set: env,
        timeout: Duration::from_millis(ctx.timeout_ms),
        network: false,
        max_output_bytes: MAX_GIT_OUTPUT_BYTES,
        memory_bytes: ctx.sandbox.memory_bytes,
        accept_weaker: ctx.accept_weaker.clone(),
        ..ExecRequest::new(argv, ctx.workspace.root().to_path_buf())
    };
    let request = super::sandbox_paths::confine(request, ctx)?;
    let output = steward_sandbox::run(request, ctx.cancel.clone()).await.map_err(sandbox_error)?;
    if output.timed_out {
        return Err(ToolError {
            class: ErrorClass::Timeout,
            message: format!("git did not finish within {} ms", ctx.timeout_ms),
            rule: None,
        });
    }
    if ctx.cancel.is_cancelled() {
        return Err(ToolError { class: ErrorClass::Cancelled, message: "cancelled".into(), rule: None });
    }
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.exit_code != Some(0) {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("not a git repository") {
            return Err(ToolError::failed("the workspace is not a git repository (run `git init` first)"));
        }
        let status = output
            .exit_code
            .map_or_else(|| "was killed by a signal".to_string(), |c| format!("exited with status {c}"));
        return Err(ToolError::failed(format!("git {status}: {}", stderr.trim())));
    }
    let mut content = stdout;
    if output.truncated {
        content.push_str(&format!("\n[git output cut at {MAX_GIT_OUTPUT_BYTES} bytes]"));
    }
    Ok(ToolOutput { content, sandbox: output.profile, ..Default::default() })
}

fn sandbox_error(err: SandboxError) -> ToolError {
    match err {
        SandboxError::Cancelled => {
            ToolError { class: ErrorClass::Cancelled, message: "cancelled; git was stopped".into(), rule: None }
        }
        other => ToolError::failed(format!("could not run git: {other}")),
    }
}

/// Removes each per-file section of a diff (a line starting with `diff `) whose path
/// `hidden` says must not be shown, or whose header cannot be parsed (fail closed), and says
/// how many were removed.
fn drop_hidden_sections(text: &str, hidden: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut dropping = false;
    let mut dropped = 0usize;
    for line in text.split_inclusive('\n') {
        if let Some(header) = line.strip_prefix("diff ") {
            dropping = match header_paths(header.trim_end_matches('\n')) {
                Some(paths) => paths.iter().any(|p| hidden(p)),
                None => true,
            };
            if dropping {
                dropped += 1;
            }
        }
        if !dropping {
            out.push_str(line);
        }
    }
    if dropped > 0 {
        out.push_str(&format!("[{dropped} file(s) hidden: secret, ignored or denied paths are not shown]\n"));
    }
    out
}

/// The paths of the per-file sections of a diff, in order, without repeats.
fn section_paths(text: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for header in text.lines().filter_map(|l| l.strip_prefix("diff ")) {
        for path in header_paths(header).unwrap_or_default() {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths
}

/// The paths named by a diff section header (after `diff `): `--git a/X b/Y` for ordinary
/// diffs, `--cc X` / `--combined X` for merges. Quoted names (git quotes unusual bytes) and
/// anything else give `None`.
fn header_paths(header: &str) -> Option<Vec<String>> {
    static GIT: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    let git = GIT.get_or_init(|| Regex::new(r"^--git a/(.+) b/(.+)$").ok()).as_ref()?;
    if header.contains('"') {
        return None;
    }
    if let Some(caps) = git.captures(header) {
        return Some(vec![caps[1].to_string(), caps[2].to_string()]);
    }
    let merged = header.strip_prefix("--cc ").or_else(|| header.strip_prefix("--combined "))?;
    Some(vec![merged.to_string()])
}

/// `git status --short --branch` output without the entries whose path (either path of a
/// rename) `hidden` says to leave out (`is_dir` for an untracked folder, shown with a trailing
/// `/`), with a line saying how many were left out. A path git quoted is unquoted first; one
/// that cannot be read is left out.
fn drop_hidden_entries(status: &str, hidden: impl Fn(&str, bool) -> bool) -> String {
    let mut out = String::with_capacity(status.len());
    let mut dropped = 0usize;
    for line in status.lines() {
        let Some(paths) = line.get(3..).filter(|_| !line.starts_with("## ")) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let hide = paths.split(" -> ").any(|path| {
            let Some(path) = unquote(path) else { return true };
            let is_dir = path.ends_with('/');
            let rel = path.trim_end_matches('/');
            rel.is_empty() || hidden(rel, is_dir)
        });
        if hide {
            dropped += 1;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if dropped > 0 {
        out.push_str(&format!("[{dropped} file(s) hidden: secret, ignored or denied paths are not shown]\n"));
    }
    out
}

/// A path as `git status` prints it: as is, or in C-style quotes (`"a\tb"`) when it holds
/// characters git quotes; `None` when a quoted path cannot be read.
fn unquote(path: &str) -> Option<String> {
    let Some(inner) = path.strip_prefix('"').and_then(|p| p.strip_suffix('"')) else {
        return Some(path.to_string());
    };
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.bytes();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match chars.next()? {
            b'n' => bytes.push(b'\n'),
            b't' => bytes.push(b'\t'),
            b'"' => bytes.push(b'"'),
            b'\\' => bytes.push(b'\\'),
            d @ b'0'..=b'7' => {
                let (d2, d3) = (chars.next()?, chars.next()?);
                let digit = |c: u8| (b'0'..=b'7').contains(&c).then(|| c - b'0');
                bytes.push(digit(d)? * 64 + digit(d2)? * 8 + digit(d3)?);
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rev_rules() {
        for ok in ["HEAD", "HEAD~2", "main", "v1.0", "feature/x", "abc123^", "a-b"] {
            assert!(validate_rev(ok).is_ok(), "{ok}");
        }
        for bad in ["", "--output=/tmp/x", "-p", "HEAD:.env", "a b", "$(id)", "x;y", &"a".repeat(101)] {
            assert!(validate_rev(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn status_entries_of_secret_paths_are_dropped_and_counted() {
        let status = "## main\n?? .env\n M app.py\nR  old.txt -> keys/id_rsa\n?? \"sp ace/.env\"\n?? .ssh/\n?? src/\n";
        let shown = drop_hidden_entries(status, |rel, _| steward_policy::is_secret_path(Path::new(rel)));
        assert_eq!(
            shown,
            "## main\n M app.py\n?? src/\n[4 file(s) hidden: secret, ignored or denied paths are not shown]\n"
        );
        assert_eq!(unquote("\"caf\\303\\251\""), Some("café".to_string()));
    }

    #[test]
    fn secret_sections_are_dropped_and_counted() {
        let diff = "diff --git a/app.py b/app.py\n+ok\ndiff --git a/sub/.env b/sub/.env\n+API_KEY=x\ndiff --git \"a/we\\tird\" \"b/we\\tird\"\n+q\ndiff --cc .env.prod\n+P=1\n";
        let shown = drop_hidden_sections(diff, |p| steward_policy::is_secret_path(Path::new(p)));
        assert_eq!(
            shown,
            "diff --git a/app.py b/app.py\n+ok\n[3 file(s) hidden: secret, ignored or denied paths are not shown]\n"
        );
    }
}
