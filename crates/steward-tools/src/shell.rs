//! `shell_command` (SPEC T4): runs one command line with `bash --noprofile --norc -c` in the
//! sandbox. Off by default (`[shell] enabled = true` turns it on).
//!
//! A line that needs no shell (one program named by a bare name found on `PATH`, with plain
//! words: no quotes, variables, globs, redirections, lists or pipes, no builtin, see
//! [`direct_argv`]) runs the program directly with the argv and environment bash would have
//! given it, which saves starting bash (about 1.5 ms); anything else, and anything the check
//! cannot tell, goes through bash. The sandbox then finds the program like bash does and, if
//! it cannot be executed, ends the call with bash's message and status (127 or 126).
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

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_protocol::{RiskLevel, ToolSpec};
use steward_sandbox::ExecRequest;

use super::shared::{opt_u64, spec, str_arg};
use super::{Tool, ToolContext, ToolError, ToolOutput};
use steward_config::Network;

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

    fn reaches_any_host(&self) -> bool {
        self.network == Network::All
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
        let direct = direct_off_runtime(command, &request).await;
        if let Some(direct) = &direct {
            request.argv = direct.argv.clone();
            request.env_set.extend(direct.env.iter().cloned());
            request.exec_failure_exits = true;
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

/// [`direct_argv`] for `line` under `request`, on a blocking thread: it looks at files on the
/// host (`stat`, and reading the program's first bytes), which must not hold up the async
/// runtime. `None` (bash) when the thread cannot run.
async fn direct_off_runtime(line: &str, request: &ExecRequest) -> Option<DirectCommand> {
    let line = line.to_string();
    let home = std::env::var_os("HOME").map(PathBuf::from).filter(|_| request.hide_home);
    let path_var: Option<OsString> = std::env::var_os("PATH");
    let (cwd, keep, mask, env_allow) =
        (request.cwd.clone(), request.home_keep.clone(), request.mask.clone(), request.env_allow.clone());
    tokio::task::spawn_blocking(move || {
        let visible = Visible { home: home.as_deref(), keep: &keep, mask: &mask };
        direct_argv(&line, path_var.as_deref(), &cwd, &visible, &env_allow)
    })
    .await
    .ok()
    .flatten()
}

/// A command line run without a shell: the argv bash would have executed, and the variables
/// bash would have added to the environment (`PWD`, `SHLVL`, `_`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectCommand {
    /// The words of the line, `argv[0]` as written: a bare name, looked up in `PATH` by the
    /// sandbox like bash does.
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

/// Programs the sandbox checks and rewrites itself when they are its argv (shells, whose
/// options it makes non-login, and `env`, whose options it reads to find a shell behind
/// it): started directly they could be refused where bash runs them, so they keep bash in
/// front as before.
const REWRITTEN: &[&str] = &["bash", "sh", "dash", "ash", "ksh", "mksh", "zsh", "env"];

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
/// - the program is a bare name (no `/`: a path names a file the line's author chose, which
///   only bash looks at), not a bash keyword or builtin, not a job (`%1`), not a shell nor
///   `env` (which the sandbox rewrites);
/// - `path_var` (the `PATH` the sandboxed program gets) has only absolute folders and the
///   first that holds an executable regular file of that name (as bash searches) holds one
///   starting with `\x7fELF` or `#!` (its canonical path opened without following a symlink
///   or waiting on a FIFO, and read only when a regular file was opened), at a path `visible`
///   says the sandbox shows;
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
    if program.contains(['=', '/'])
        || program.starts_with('%')
        || BASH_OWN.contains(&program.as_str())
        || REWRITTEN.contains(&program.as_str())
        || env_allow.iter().any(|n| BASH_SETS.contains(&n.as_str()))
    {
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
    let dirs: Vec<PathBuf> = std::env::split_paths(path_var?).collect();
    if dirs.iter().any(|d| !d.is_absolute()) {
        return None;
    }
    let dir = dirs.into_iter().find(|d| executable(&d.join(program)))?;
    let shown = format!("{}/{program}", dir.display().to_string().trim_end_matches('/'));
    let path = dir.join(program);
    let canonical = path.canonicalize().ok()?;
    let cwd = cwd.canonicalize().ok()?;
    if !visible.shows(&path, &canonical, &cwd) || !starts_like_a_program(&canonical) {
        return None;
    }
    let env = vec![
        ("PWD".to_string(), cwd.to_str()?.to_string()),
        ("SHLVL".to_string(), "0".to_string()),
        ("_".to_string(), shown),
    ];
    Some(DirectCommand { argv: words, env })
}

/// What the sandboxed program sees of the host's files.
#[derive(Debug, Clone, Copy)]
pub struct Visible<'a> {
    /// The home folder the sandbox hides, `None` when it is shown.
    pub home: Option<&'a Path>,
    /// Paths beneath it that stay visible ([`ExecRequest::home_keep`]).
    pub keep: &'a [PathBuf],
    /// Paths the sandbox covers with an empty file or folder ([`ExecRequest::mask`]).
    pub mask: &'a [PathBuf],
}

impl Visible<'_> {
    /// Whether the program at `path` (canonical: `canonical`) is visible, unmasked, to a
    /// program working in the canonical `cwd`. A path this cannot tell counts as hidden.
    fn shows(&self, path: &Path, canonical: &Path, cwd: &Path) -> bool {
        let beneath = |p: &Path| {
            p.canonicalize().is_ok_and(|c| canonical.starts_with(&c) || path.starts_with(&c))
                || canonical.starts_with(p)
                || path.starts_with(p)
        };
        if self.mask.iter().any(|m| beneath(m)) {
            return false;
        }
        let Some(home) = self.home else { return true };
        let Ok(home) = home.canonicalize() else { return false };
        !(canonical.starts_with(&home) || path.starts_with(&home))
            || canonical.starts_with(cwd)
            || self.keep.iter().filter_map(|k| k.canonicalize().ok()).any(|k| canonical.starts_with(k))
    }
}

/// A regular file with an execute bit (`stat` only: it opens nothing).
fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Starts with an ELF header or `#!`: anything else bash would run as a script itself.
/// `path` is canonical: it is opened without following a symlink put in its place, and
/// without blocking (a FIFO swapped in opens at once), and read only when what was opened is
/// an executable regular file.
fn starts_like_a_program(path: &Path) -> bool {
    let flags = libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW;
    let opened = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path);
    let Ok(mut file) = opened else { return false };
    let regular = file.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if !regular {
        return false;
    }
    let mut head = [0u8; 4];
    let n = file.read(&mut head).unwrap_or(0);
    head[..n].starts_with(b"\x7fELF") || head[..n].starts_with(b"#!")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO in place of the program (swapped in after its `stat`) is opened without
    /// waiting for a writer, and not read.
    #[test]
    fn a_fifo_in_place_of_the_program_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("prog");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = send.send(starts_like_a_program(&fifo));
        });
        let answer = receive.recv_timeout(Duration::from_secs(10));
        assert_eq!(answer, Ok(false), "the check waited on a FIFO");
        // A symlink put in place of the canonical path is not followed.
        let script = dir.path().join("script");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(starts_like_a_program(&script));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&script, &link).unwrap();
        assert!(!starts_like_a_program(&link));
    }
}
