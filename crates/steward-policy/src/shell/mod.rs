//! Splits a shell command line into the simple commands that would run (SPEC T4; cases B06,
//! B08), so that policy rules see every program with its real argv instead of a raw string.
//!
//! ```
//! use steward_policy::shell;
//! let parts = shell::split("FOO=1 /bin/rm -rf ./dist && bash -lc 'gh api user'").unwrap();
//! let programs: Vec<&str> = parts.iter().map(|c| c.program.as_str()).collect();
//! // A login shell stays a part of its own: it re-reads profile files before its script.
//! assert_eq!(programs, ["rm", "bash", "gh"]);
//! assert_eq!(parts[0].argv, ["/bin/rm", "-rf", "./dist"]);
//! assert!(shell::split("eval \"$CMD\"").is_err());
//! ```
//!
//! What is opened up: lists (`;` `&&` `||` `|` `|&` `&` newline), `( … )` subshells,
//! `{ …; }` groups, `$(…)` and backquote command substitution, `<(…)`/`>(…)` process
//! substitution, `if`/`while`/`until`/`for` bodies, leading `NAME=value` assignments,
//! transparent wrappers (`env`, `time`, `nohup`, `command`, `exec`, `builtin`, `nice`,
//! `timeout`, `stdbuf`, `setsid`, `xargs`; see `programs.rs`), and `sh|bash|zsh|dash|… -c
//! SCRIPT` (also `-lc`, `-ic`, `-xc`, …), recursively.
//!
//! What is refused as [`ShellError::Unparseable`]: dynamic code (`eval`, `source`, `.`,
//! `alias`, `trap`, `hash`, …), a program name or `-c` script computed at run time (`$VAR`,
//! `${…}`, `$(…)`, globs), unbalanced quotes or brackets, here-documents, `case`, function
//! definitions, arithmetic, arrays, input over [`MAX_INPUT_BYTES`] or nesting deeper than
//! [`MAX_DEPTH`].

mod normalize;
mod parse;

use std::cell::Cell;
use std::path::Path;

/// Longest command line accepted, in bytes.
pub const MAX_INPUT_BYTES: usize = 64 * 1024;
/// Deepest nesting of substitutions, groups and `sh -c` scripts accepted.
pub const MAX_DEPTH: usize = 8;

/// One simple command that would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The program's argv after wrappers and assignments are removed, quotes removed;
    /// `argv[0]` as written (`/bin/rm`, `rm`). Redirections are not part of it. Empty for a
    /// command made only of redirections (`> file`).
    pub argv: Vec<String>,
    /// The program's base name: `argv[0]`'s last component, and for a path that exists
    /// (absolute, or relative to the directory given to [`split_in`]) the base name of its
    /// target after following symbolic links. Bare names are kept as written (PATH lookup
    /// finds the program of that name). Empty when `argv` is.
    pub program: String,
    /// Files the command writes through output redirections (`>`, `>>`, `>|`, `&>`, `<>`,
    /// `>&file`, `time -o`), as written.
    pub redirects: Vec<String>,
    /// Files the command reads through input redirections (`<`), as written.
    pub inputs: Vec<String>,
    /// For each `argv` element: true when the shell expands it at run time (parameter,
    /// command or process substitution, glob, brace expansion, `~`), or when a wrapper
    /// (`xargs`) supplies it.
    pub dynamic: Vec<bool>,
    /// Environment assignments made for this command (`NAME=value` prefixes, `env NAME=value`,
    /// inherited from an enclosing `sh -c`), as `(name, value)`.
    pub env: Vec<(String, String)>,
}

/// Why a command line cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShellError {
    /// The line uses syntax or dynamic code Steward does not model; the reason says which.
    #[error("cannot parse the command line: {0}")]
    Unparseable(String),
}

pub(crate) fn unparseable(reason: impl Into<String>) -> ShellError {
    ShellError::Unparseable(reason.into())
}

/// Splits `line` into its simple commands; relative program paths are not looked up.
/// Errors: [`ShellError::Unparseable`].
pub fn split(line: &str) -> Result<Vec<SimpleCommand>, ShellError> {
    split_in(line, None)
}

/// Splits `line` into its simple commands; relative program paths (`./x`) are resolved
/// against `dir` (normally the workspace root) when they exist. An empty or blank line is
/// unparseable. Errors: [`ShellError::Unparseable`].
pub fn split_in(line: &str, dir: Option<&Path>) -> Result<Vec<SimpleCommand>, ShellError> {
    if line.len() > MAX_INPUT_BYTES {
        return Err(unparseable(format!("longer than {MAX_INPUT_BYTES} bytes")));
    }
    if line.trim().is_empty() {
        return Err(unparseable("the command line is empty"));
    }
    let raw = parse::parse_script(line, 0)?;
    let mut out = Vec::with_capacity(raw.len());
    for cmd in raw {
        normalize::normalize(cmd, dir, &[], &mut out)?;
    }
    Ok(out)
}

/// Splits an argv that is executed directly (no shell at the top level): wrappers and
/// `sh -c SCRIPT` are opened as in [`split_in`], but `argv[0]` is never an assignment and
/// no word is expanded. Errors: [`ShellError::Unparseable`] (also for an empty argv).
pub fn split_argv(argv: &[String], dir: Option<&Path>) -> Result<Vec<SimpleCommand>, ShellError> {
    if argv.is_empty() {
        return Err(unparseable("the argv is empty"));
    }
    if argv.iter().map(String::len).sum::<usize>() > MAX_INPUT_BYTES {
        return Err(unparseable(format!("longer than {MAX_INPUT_BYTES} bytes")));
    }
    let words =
        argv.iter().map(|text| parse::RawWord { text: text.clone(), dynamic: false, assign_at: None }).collect();
    let raw = parse::RawCommand { words, ..parse::RawCommand::default() };
    let mut out = Vec::new();
    normalize::normalize(raw, dir, &[], &mut out)?;
    Ok(out)
}

/// Splits the argv `words` that another program runs (`npx cargo publish` runs `cargo
/// publish`): like [`split_argv`], but `dynamic[i]` says whether `words[i]` was expanded at
/// run time by the outer command's shell, and `env` is the environment the outer command set.
/// Errors: [`ShellError::Unparseable`] (also for an empty argv).
pub(crate) fn split_launched(
    words: &[String],
    dynamic: &[bool],
    env: &[(String, String)],
    dir: Option<&Path>,
) -> Result<Vec<SimpleCommand>, ShellError> {
    if words.is_empty() {
        return Err(unparseable("no program is given to run"));
    }
    let words = words
        .iter()
        .zip(dynamic.iter().chain(std::iter::repeat(&true)))
        .map(|(text, dynamic)| parse::RawWord { text: text.clone(), dynamic: *dynamic, assign_at: None })
        .collect();
    let raw = parse::RawCommand { words, ..parse::RawCommand::default() };
    let mut out = Vec::new();
    normalize::normalize(raw, dir, env, &mut out)?;
    Ok(out)
}

thread_local! {
    /// False while [`without_wrapper_opening_for_tests`] runs on this thread.
    static WRAPPERS_OPENED: Cell<bool> = const { Cell::new(true) };
}

/// True unless [`without_wrapper_opening_for_tests`] is running on this thread.
pub(crate) fn wrappers_opened() -> bool {
    WRAPPERS_OPENED.with(Cell::get)
}

/// Runs `f` with transparent wrappers (`env`, `nice`, `timeout` …) read as programs of
/// their own on the calling thread only, so a rule on the wrapper decides instead of one on
/// the program it runs. Weaker than the real splitter: it exists so that tests can show
/// their commands need wrapper opening; no configuration reaches it. Restored when `f`
/// returns or panics.
#[doc(hidden)]
pub fn without_wrapper_opening_for_tests<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            WRAPPERS_OPENED.with(|opened| opened.set(self.0));
        }
    }
    let _restore = Restore(WRAPPERS_OPENED.with(|opened| opened.replace(false)));
    f()
}

#[cfg(test)]
mod tests;
