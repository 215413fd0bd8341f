//! `shell_command` (SPEC T4): runs one command line with `bash --noprofile --norc -c` in the
//! sandbox. Off by default (`[shell] enabled = true` turns it on).
//!
//! A line that needs no shell (one program with plain words: no quotes, variables, globs,
//! redirections, lists or pipes, no builtin, see [`direct_argv`]) runs the program directly
//! with the argv and environment bash would have given it, which saves starting bash
//! (about 1.5 ms); anything else, and anything the check cannot tell, goes through bash.
//!
//! The gate judges the line before it runs: it is split into its simple commands and each
//! is matched against the argv rules of the policy (unparseable lines never run without a
//! human). The command runs with the workspace as working directory, a scrubbed environment
//! (plus the tool's `credential_scope`), no network unless `[shell] network` is `true` (all)
//! or a host list (those hosts through the egress proxy, see [`super::network`]), and a
//! filesystem that is read-only except the `[shell] writable` folders, secret files covered
//! and `$HOME` empty (see `sandbox_paths`). With no writable folder
//! a command cannot change anything, so nothing needs undoing; with writable folders its
//! changes cannot be rolled back, so every call asks (SPEC C5). With any network its output
//! counts as untrusted and taints the run (SPEC C2).

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_protocol::{RiskLevel, ToolSpec};
use steward_sandbox::ExecRequest;

use super::network::Network;
use super::shared::{opt_u64, spec, str_arg};
use super::{Tool, ToolContext, ToolError, ToolOutput};

/// Most bytes of output kept per stream (the orchestrator caps what the model sees further).
const MAX_SHELL_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// The `shell_command` tool.
pub struct ShellTool {
    spec: ToolSpec,
    writable: Vec<PathBuf>,
    network: Network,
    memory_bytes: Option<u64>,
    unix_sockets: bool,
}

impl ShellTool {
    /// A shell tool that may write only below `writable` (absolute, inside the workspace),
    /// reach the network as `network` says (nothing, everything, or listed hosts through the
    /// egress proxy), create Unix sockets only when `unix_sockets` is true, and use at most
    /// `memory_bytes` of data memory (`None`: the `[sandbox] memory_mb` limit).
    pub fn new(writable: Vec<PathBuf>, network: Network, memory_bytes: Option<u64>, unix_sockets: bool) -> Self {
        let mut spec = spec(
            "shell_command",
            "Run one shell command line in the workspace (bash, no login files). Prefer the file and git tools; use this for builds, tests and linters. Output and the exit status are returned.",
            json!({
                "command": {"type": "string", "description": "The command line, e.g. `cargo test -p core`."},
                "timeout_ms": {"type": ["integer", "null"], "minimum": 1, "description": "Time limit in ms (at most the configured per-call timeout)."}
            }),
            &["command"],
            RiskLevel::High,
            !writable.is_empty(),
            &[],
        );
        // Without network a command sees what the workspace and the system hold, which is as
        // trusted as reading files; with network its output may come from anywhere.
        spec.untrusted_output = network.enabled();
        ShellTool { spec, writable, network, memory_bytes, unix_sockets }
    }
}

#[async_trait]
impl Tool for ShellTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let command = str_arg(args, "command")?;
        let timeout_ms = opt_u64(args, "timeout_ms")?.unwrap_or(ctx.timeout_ms).clamp(1, ctx.timeout_ms);
        let mut env_allow = ctx.env_allow.clone();
        env_allow.extend(ctx.credentials.get(&self.spec.name).cloned().unwrap_or_default());
        let argv = ["bash", "--noprofile", "--norc", "-c", command].map(String::from).to_vec();
        let request = ExecRequest {
            env_allow,
            timeout: Duration::from_millis(timeout_ms),
            max_output_bytes: MAX_SHELL_OUTPUT_BYTES,
            writable: self.writable.clone(),
            memory_bytes: self.memory_bytes.or(ctx.sandbox.memory_bytes),
            unix_sockets: self.unix_sockets,
            accept_weaker: ctx.accept_weaker.clone(),
            ..ExecRequest::new(argv, ctx.workspace.root().to_path_buf())
        };
        let mut request = super::sandbox_paths::confine(request, ctx)?;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let visible = Visible { home: home.as_deref().filter(|_| request.hide_home), keep: &request.home_keep };
        let direct =
            direct_argv(command, std::env::var_os("PATH").as_deref(), &request.cwd, &visible, &request.env_allow);
        if let Some(direct) = &direct {
            request.argv = direct.argv.clone();
            request.env_set.extend(direct.env.iter().cloned());
        }
        let output = super::network::run_with_network(request, &self.network, ctx).await?;
        let content = super::exec::render(&output, MAX_SHELL_OUTPUT_BYTES);
        let mut sandbox = output.profile;
        if direct.is_some() {
            sandbox.push_str(",shell=skipped");
        }
        Ok(ToolOutput { content, sandbox, ..Default::default() })
    }
}

/// A command line run without a shell: the argv bash would have executed, and the variables
/// bash would have added to the environment (`PWD`, `SHLVL`, `_`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectCommand {
    /// The words of the line, `argv[0]` as written (looked up in `PATH` by the sandbox).
    pub argv: Vec<String>,
    /// `PWD` (the canonical working directory), `SHLVL=0` (bash counts itself and gives the
    /// level back before it replaces itself with the program), and `_` (the program's path
    /// as bash found it).
    pub env: Vec<(String, String)>,
}

/// Bash's reserved words and builtins: a line starting with one runs inside bash.
const BASH_OWN: &[&str] = &[
    "!",
    "[[",
    "]]",
    "case",
    "coproc",
    "do",
    "done",
    "elif",
    "else",
    "esac",
    "fi",
    "for",
    "function",
    "if",
    "in",
    "select",
    "then",
    "time",
    "until",
    "while",
    "{",
    "}",
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// Shells: started directly, the sandbox would rewrite their options, so they keep bash in
/// front as before.
const SHELLS: &[&str] = &["bash", "sh", "dash", "ash", "ksh", "mksh", "zsh"];

/// Variables bash sets or changes itself; when one would be passed through, the line keeps
/// bash.
const BASH_SETS: &[&str] = &["PWD", "OLDPWD", "SHLVL", "_"];

/// The direct form of `line` when running it needs no shell, `None` when bash must run it
/// (or when this cannot tell). Direct only when all hold:
/// - the line is words of `A–Z a–z 0–9 _ - . / : , + @ % =` separated by spaces or tabs (so
///   no quoting, expansion, glob, comment, redirection, list, pipe or subshell), with no `=`
///   in the first word (an assignment);
/// - the policy's command-line parser reads it as exactly that one simple command (no
///   wrapper it would open, such as `env` or `nice`);
/// - the program is not a bash keyword or builtin, nor a shell;
/// - `path_var` (the `PATH` the sandboxed program gets) has only absolute folders and the
///   program is found there (or, written with a `/`, relative to `cwd`) as an executable
///   regular file starting with `\x7fELF` or `#!`, which `visible` says the sandbox shows;
/// - `env_allow` passes none of `PWD`, `OLDPWD`, `SHLVL`, `_`.
pub fn direct_argv(
    line: &str,
    path_var: Option<&OsStr>,
    cwd: &Path,
    visible: &Visible<'_>,
    env_allow: &[String],
) -> Option<DirectCommand> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:,+@%=".contains(c);
    if !line.chars().all(|c| plain(c) || c == ' ' || c == '\t') {
        return None;
    }
    let words: Vec<String> = line.split([' ', '\t']).filter(|w| !w.is_empty()).map(String::from).collect();
    let program = words.first()?;
    if program.contains('=')
        || BASH_OWN.contains(&program.as_str())
        || env_allow.iter().any(|n| BASH_SETS.contains(&n.as_str()))
    {
        return None;
    }
    let base = Path::new(program).file_name()?.to_str()?;
    if SHELLS.contains(&base) {
        return None;
    }
    let parts = steward_policy::shell::split_in(line, Some(cwd)).ok()?;
    let [part] = parts.as_slice() else { return None };
    let same = part.argv == words
        && part.redirects.is_empty()
        && part.inputs.is_empty()
        && part.env.is_empty()
        && part.dynamic.iter().all(|d| !d);
    if !same {
        return None;
    }
    let found = if program.contains('/') {
        let candidate = if Path::new(program).is_absolute() { PathBuf::from(program) } else { cwd.join(program) };
        (candidate, program.clone())
    } else {
        let dirs: Vec<PathBuf> = std::env::split_paths(path_var?).collect();
        if dirs.iter().any(|d| !d.is_absolute()) {
            return None;
        }
        let dir = dirs.into_iter().find(|d| executable(&d.join(program)))?;
        let shown = format!("{}/{program}", dir.display().to_string().trim_end_matches('/'));
        (dir.join(program), shown)
    };
    let (path, shown) = found;
    if !executable(&path) || !starts_like_a_program(&path) {
        return None;
    }
    let canonical = path.canonicalize().ok()?;
    let cwd = cwd.canonicalize().ok()?;
    if !visible.shows(&canonical, &cwd) {
        return None;
    }
    let env = vec![
        ("PWD".to_string(), cwd.to_str()?.to_string()),
        ("SHLVL".to_string(), "0".to_string()),
        ("_".to_string(), shown),
    ];
    Some(DirectCommand { argv: words, env })
}

/// What of the home folder the sandboxed program sees.
#[derive(Debug, Clone, Copy)]
pub struct Visible<'a> {
    /// The home folder the sandbox hides, `None` when it is shown.
    pub home: Option<&'a Path>,
    /// Paths beneath it that stay visible ([`ExecRequest::home_keep`]).
    pub keep: &'a [PathBuf],
}

impl Visible<'_> {
    /// Whether the canonical `path` is visible to a program working in the canonical `cwd`.
    fn shows(&self, path: &Path, cwd: &Path) -> bool {
        let Some(home) = self.home.and_then(|h| h.canonicalize().ok()) else { return true };
        !path.starts_with(&home)
            || path.starts_with(cwd)
            || self.keep.iter().filter_map(|k| k.canonicalize().ok()).any(|k| path.starts_with(k))
    }
}

/// A regular file with an execute bit.
fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Starts with an ELF header or `#!`: anything else bash would run as a script itself.
fn starts_like_a_program(path: &Path) -> bool {
    let mut head = [0u8; 4];
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    let n = file.read(&mut head).unwrap_or(0);
    head[..n].starts_with(b"\x7fELF") || head[..n].starts_with(b"#!")
}
