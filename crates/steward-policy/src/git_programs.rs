//! Git invocations that run programs other than git: options naming a command
//! ([`option_runs_program`]: `--upload-pack`, `rebase -x` …, abbreviated or grouped as git's
//! option parser accepts them), and a repository whose own configuration or hooks start
//! programs ([`repository_config_programs`], [`repository_runs_programs`]: `core.fsmonitor`
//! runs on `git status`, `.git/hooks/pre-commit` on `git commit`).
//!
//! The configuration is read from the repository's files by Steward itself (no git process):
//! `config` and `config.worktree` of the repository's common directory and those of its
//! submodules (`modules/**/config`). Anything that cannot be read or parsed counts as running
//! a program (fail closed), and so does an `include.path` / `includeIf.*.path` (the included
//! file is not followed).

use std::path::{Path, PathBuf};

use crate::programs::subcommand_args;

/// Long options (without `--`) that name a program git runs: a remote's `upload-pack` /
/// `receive-pack`, `--exec` (`rebase`, `archive`, `push`), `--exec-path` (where git finds its
/// helpers), diff drivers (`--ext-diff`, `--textconv`), tools (`difftool --extcmd`, `--tool`),
/// `grep --open-files-in-pager`, configuration given on the command line (`clone --config`,
/// `--config-env`), a template directory whose hooks `init` / `clone` install, and
/// `send-email` helpers. git accepts any unambiguous abbreviation, so any prefix counts.
const PROGRAM_LONG: &[&str] = &[
    "upload-pack",
    "receive-pack",
    "exec",
    "exec-path",
    "extcmd",
    "ext-diff",
    "textconv",
    "open-files-in-pager",
    "tool",
    "config",
    "config-env",
    "template",
    "sendmail-cmd",
    "to-cmd",
    "cc-cmd",
    "header-cmd",
    "smtp-server",
];

/// Short options that name a program (or configuration) for one subcommand: `clone -u`
/// (`--upload-pack`), `clone -c` (`--config`), `ls-remote -u`, `rebase -x` (`--exec`),
/// `grep -O` (`--open-files-in-pager`), `difftool -x` / `-t`. A letter counts anywhere in a
/// group of short options (`-ix CMD`, `-xCMD`).
const PROGRAM_SHORT: &[(&str, &str)] =
    &[("clone", "uc"), ("ls-remote", "u"), ("rebase", "x"), ("grep", "O"), ("difftool", "xt")];

/// Options of `git config` that read; without one (or a `get` / `list` subcommand, or a
/// single name) `git config` writes configuration that later git commands would obey.
const CONFIG_READ: &[&str] =
    &["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "--list", "-l"];

/// Options of `git config` that change or open the configuration.
const CONFIG_WRITE: &[&str] = &[
    "--add",
    "--replace-all",
    "--unset",
    "--unset-all",
    "--rename-section",
    "--remove-section",
    "--edit",
    "-e",
    "set",
    "unset",
    "rename-section",
    "remove-section",
    "edit",
];

/// If `git ARGS` (or the dashed `git-SUB ARGS`, `program` being the base name) runs another
/// program through an option, the option as shown in a reason. `None` for other programs.
/// Any prefix of a [`PROGRAM_LONG`] name counts (`--upload=`, `--exe`); `--no-…` forms do
/// not. A `git config` that writes configuration counts too (`git config core.pager CMD`
/// followed by `git log`).
pub(crate) fn option_runs_program(program: &str, args: &[String], dynamic: &[bool]) -> Option<String> {
    let (sub, rest) = if program == "git" {
        let (skip, _) = subcommand_args(program, args, dynamic);
        (args.get(skip).map(String::as_str), args.get(skip + 1..).unwrap_or(&[]))
    } else if let Some(sub) = program.strip_prefix("git-") {
        (Some(sub), args)
    } else {
        return None;
    };
    if let Some(arg) = args.iter().find(|arg| long_names_program(arg)) {
        return Some(arg.clone());
    }
    let sub = sub?;
    if let Some((_, letters)) = PROGRAM_SHORT.iter().find(|(name, _)| *name == sub)
        && let Some(arg) = rest.iter().take_while(|a| *a != "--").find(|arg| {
            arg.strip_prefix('-')
                .is_some_and(|group| !group.starts_with('-') && group.chars().any(|c| letters.contains(c)))
        })
    {
        return Some(arg.clone());
    }
    if sub == "config" {
        let read = rest.iter().any(|a| CONFIG_READ.contains(&a.as_str()));
        let write = rest.iter().any(|a| CONFIG_WRITE.contains(&a.as_str()));
        let words: Vec<&String> = rest.iter().filter(|a| !a.starts_with('-')).collect();
        let read_word = words.first().is_some_and(|w| *w == "get" || *w == "list");
        if write || !(read || read_word || words.len() <= 1) {
            return Some("config".into());
        }
    }
    None
}

/// Whether `--NAME[=VALUE]` abbreviates (or is) one of [`PROGRAM_LONG`].
fn long_names_program(arg: &str) -> bool {
    let Some(name) = arg.strip_prefix("--") else { return false };
    let name = name.split_once('=').map_or(name, |(n, _)| n);
    !name.is_empty() && PROGRAM_LONG.iter().any(|long| long.starts_with(name))
}

/// Subcommands that run no hook (githooks(5)): they only read the repository. Any other
/// subcommand (`commit`, `merge`, `rebase`, `am`, `push`, `checkout`, `branch` through
/// `reference-transaction` …) counts as running hooks.
const HOOK_FREE: &[&str] = &[
    "status",
    "log",
    "whatchanged",
    "diff",
    "diff-tree",
    "diff-index",
    "diff-files",
    "show",
    "blame",
    "annotate",
    "grep",
    "ls-files",
    "ls-tree",
    "ls-remote",
    "rev-parse",
    "rev-list",
    "describe",
    "shortlog",
    "cat-file",
    "show-ref",
    "for-each-ref",
    "name-rev",
    "merge-base",
    "count-objects",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "cherry",
    "show-branch",
    "var",
    "version",
    "help",
    "config",
];

/// Most files looked at under a repository's `modules/` directory (submodule repositories);
/// past it the repository counts as running a program.
const MAX_MODULE_ENTRIES: usize = 10_000;

/// Why a repository's git configuration could not be checked ([`repository_config_programs`]);
/// the message names the file or folder.
#[derive(Debug, thiserror::Error)]
pub enum GitConfigError {
    /// `modules/` holds more entries than are checked.
    #[error("{} holds too many files to check", .0.display())]
    TooManyModuleFiles(std::path::PathBuf),
    /// Walking `modules/` failed.
    #[error("{0}")]
    Walk(String),
    /// A configuration file exists but cannot be read.
    #[error("{}: {source}", file.display())]
    Read {
        /// The file.
        file: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A configuration file does not parse.
    #[error("{}: {source}", file.display())]
    Parse {
        /// The file.
        file: std::path::PathBuf,
        /// What is wrong in it.
        source: ConfigSyntaxError,
    },
}

/// What is wrong in a git configuration file (anything git itself would reject, or that is not
/// understood).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigSyntaxError {
    /// A `[section]` or `[section "sub"]` header that does not parse.
    #[error("bad section header")]
    BadSectionHeader,
    /// `[]`.
    #[error("empty section name")]
    EmptySectionName,
    /// A key followed by something other than `=`, a comment or the end of the line.
    #[error("bad line at key `{0}`")]
    BadLine(String),
    /// A key before any section header.
    #[error("key `{0}` outside a section")]
    KeyOutsideSection(String),
    /// A character that starts no header, key or comment.
    #[error("unexpected `{0}`")]
    Unexpected(char),
    /// A quote left open at the end of the line.
    #[error("unterminated quote")]
    UnterminatedQuote,
    /// A `\` escape git does not know.
    #[error("bad escape in value")]
    BadEscape,
}

/// Names (lowercase, `section.subsection.key`) of the settings in the repository at
/// `git_dir` (its `config`, `config.worktree`, and its submodules' under `modules/`) that make
/// git run a program: `core.fsmonitor` (unless false), `core.pager`, `core.editor`,
/// `core.sshCommand`, `core.hooksPath`, `filter.*.clean` / `.smudge` / `.process`,
/// `diff.*.textconv`, `diff.external`, `credential.helper`, `gpg.program`, `sequence.editor`,
/// `alias.*`, `pager.*`, `include.path` (not followed) … An empty list when none.
///
/// Errors: a configuration file that exists but cannot be read or parsed (its message names
/// the file), or more than 10,000 entries under `modules/`.
pub fn repository_config_programs(git_dir: &Path) -> Result<Vec<String>, GitConfigError> {
    let common = common_dir(git_dir);
    let mut files = vec![git_dir.join("config"), git_dir.join("config.worktree")];
    if common != git_dir {
        files.push(common.join("config"));
        files.push(common.join("config.worktree"));
    }
    let modules = common.join("modules");
    if modules.is_dir() {
        let walk = ignore::WalkBuilder::new(&modules).standard_filters(false).follow_links(false).build();
        for (seen, entry) in walk.enumerate() {
            if seen >= MAX_MODULE_ENTRIES {
                return Err(GitConfigError::TooManyModuleFiles(modules));
            }
            let entry = entry.map_err(|e| GitConfigError::Walk(e.to_string()))?;
            if entry.file_name() == "config" || entry.file_name() == "config.worktree" {
                files.push(entry.into_path());
            }
        }
    }
    let mut found = Vec::new();
    for file in files {
        let text = match std::fs::read(&file) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(GitConfigError::Read { file, source }),
        };
        let entries = parse_config(&text).map_err(|source| GitConfigError::Parse { file: file.clone(), source })?;
        for (name, value) in entries {
            if setting_runs_program(&name, &value) && !found.contains(&name) {
                found.push(name);
            }
        }
    }
    Ok(found)
}

/// Whether the setting `name = value` (name lowercase) makes some git command run a program.
fn setting_runs_program(name: &str, value: &str) -> bool {
    const EXACT: &[&str] = &[
        "core.pager",
        "core.editor",
        "core.sshcommand",
        "core.hookspath",
        "core.askpass",
        "core.gitproxy",
        "core.alternaterefscommand",
        "diff.external",
        "diff.tool",
        "merge.tool",
        "sequence.editor",
        "credential.helper",
        "gpg.program",
        "web.browser",
        "man.viewer",
        "interactive.difffilter",
        "uploadpack.packobjectshook",
        "protocol.allow",
        "protocol.ext.allow",
    ];
    const PREFIXES: &[&str] = &["include.", "includeif.", "alias.", "pager.", "hook.", "sendemail."];
    const SUFFIXES: &[(&str, &[&str])] = &[
        ("filter.", &["clean", "smudge", "process"]),
        ("diff.", &["textconv", "command"]),
        ("merge.", &["driver"]),
        ("mergetool.", &["cmd", "path"]),
        ("difftool.", &["cmd", "path"]),
        ("credential.", &["helper"]),
        ("gpg.", &["program", "defaultkeycommand"]),
        ("browser.", &["cmd", "path"]),
        ("man.", &["cmd", "path"]),
        ("remote.", &["uploadpack", "receivepack", "vcs"]),
        ("trailer.", &["command", "cmd"]),
    ];
    if name == "core.fsmonitor" {
        return !matches!(value.trim().to_ascii_lowercase().as_str(), "false" | "no" | "off" | "0");
    }
    if name.starts_with("submodule.") && name.ends_with(".update") {
        return value.trim_start().starts_with('!');
    }
    EXACT.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || SUFFIXES.iter().any(|(section, keys)| {
            name.starts_with(section)
                && name.rsplit_once('.').is_some_and(|(head, key)| head.len() >= section.len() && keys.contains(&key))
        })
}

/// The settings of one git configuration file as `(name, value)`: name lowercase
/// (`section.subsection.key`), value unquoted (`""` for a bare boolean key). Follows
/// git-config(1) "CONFIGURATION FILE": `[section]`, `[section "sub"]`, `[section.sub]`, keys
/// after a header on the same line, `#` / `;` comments, quotes, `\` escapes and
/// continuation lines. Errors: anything git itself would reject (or that is not understood).
fn parse_config(text: &str) -> Result<Vec<(String, String)>, ConfigSyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text).replace("\r\n", "\n");
    let mut chars = text.chars().peekable();
    let mut section: Option<String> = None;
    let mut out = Vec::new();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '#' || c == ';' {
            for c in chars.by_ref() {
                if c == '\n' {
                    break;
                }
            }
        } else if c == '[' {
            chars.next();
            let mut name = String::new();
            loop {
                match chars.next() {
                    Some(']') => break,
                    Some(c) if c.is_ascii_alphanumeric() || c == '-' || c == '.' => name.push(c.to_ascii_lowercase()),
                    Some(' ' | '\t') => {
                        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                            chars.next();
                        }
                        if chars.next() != Some('"') {
                            return Err(ConfigSyntaxError::BadSectionHeader);
                        }
                        name.push('.');
                        loop {
                            match chars.next() {
                                Some('"') => break,
                                Some('\\') => match chars.next() {
                                    Some('\n') | None => return Err(ConfigSyntaxError::BadSectionHeader),
                                    Some(c) => name.push(c.to_ascii_lowercase()),
                                },
                                Some('\n') | None => return Err(ConfigSyntaxError::BadSectionHeader),
                                Some(c) => name.push(c.to_ascii_lowercase()),
                            }
                        }
                        if chars.next() != Some(']') {
                            return Err(ConfigSyntaxError::BadSectionHeader);
                        }
                        break;
                    }
                    _ => return Err(ConfigSyntaxError::BadSectionHeader),
                }
            }
            if name.is_empty() {
                return Err(ConfigSyntaxError::EmptySectionName);
            }
            section = Some(name);
        } else if c.is_ascii_alphabetic() {
            let mut key = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_ascii_alphanumeric() || c == '-' {
                    key.push(c.to_ascii_lowercase());
                    chars.next();
                } else {
                    break;
                }
            }
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            let value = match chars.peek() {
                None | Some('\n' | '#' | ';') => String::new(),
                Some('=') => {
                    chars.next();
                    parse_value(&mut chars)?
                }
                Some(_) => return Err(ConfigSyntaxError::BadLine(key)),
            };
            let Some(section) = &section else { return Err(ConfigSyntaxError::KeyOutsideSection(key)) };
            out.push((format!("{section}.{key}"), value));
        } else {
            return Err(ConfigSyntaxError::Unexpected(c));
        }
    }
    Ok(out)
}

/// One value after `=`, up to an unquoted end of line or comment.
fn parse_value(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<String, ConfigSyntaxError> {
    let mut value = String::new();
    let mut quoted = false;
    while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
        chars.next();
    }
    while let Some(c) = chars.next() {
        match c {
            '\n' if quoted => return Err(ConfigSyntaxError::UnterminatedQuote),
            '\n' => break,
            '\\' => match chars.next() {
                Some('\n') => {}
                Some('n') => value.push('\n'),
                Some('t') => value.push('\t'),
                Some('b') => value.push('\u{8}'),
                Some(c @ ('"' | '\\')) => value.push(c),
                _ => return Err(ConfigSyntaxError::BadEscape),
            },
            '"' => quoted = !quoted,
            '#' | ';' if !quoted => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                break;
            }
            c => value.push(c),
        }
    }
    if quoted {
        return Err(ConfigSyntaxError::UnterminatedQuote);
    }
    Ok(value.trim_end().to_string())
}

/// The common directory of the repository at `git_dir` (`commondir` of a linked worktree),
/// where its shared `config`, `hooks/` and `modules/` live.
fn common_dir(git_dir: &Path) -> PathBuf {
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) if !text.trim().is_empty() => git_dir.join(text.trim()),
        _ => git_dir.to_path_buf(),
    }
}

/// The repository directory a `.git` entry stands for: the directory itself, or the target of
/// a `gitdir: PATH` file (relative to the file's directory). `None` when it is neither.
fn git_dir_of(dot_git: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git.to_path_buf());
    }
    let text = std::fs::read_to_string(dot_git).ok()?;
    let target = text.trim().strip_prefix("gitdir:")?.trim();
    Some(dot_git.parent().unwrap_or(Path::new("")).join(target))
}

/// The repository git finds from `start` (git-rev-parse(1) discovery): `start` or the first
/// directory above it holding a `.git` or being a bare repository (`HEAD` plus `objects/`).
fn discover(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let dot_git = dir.join(".git");
        if dot_git.symlink_metadata().is_ok() {
            return git_dir_of(&dot_git).or(Some(dot_git));
        }
        if dir.join("HEAD").is_file() && dir.join("objects").is_dir() {
            return Some(dir.to_path_buf());
        }
    }
    None
}

/// Names of the hooks in the repository at `git_dir` that git would run: files in its
/// `hooks/` directory that are executable and not `*.sample`.
fn hooks_present(git_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(common_dir(git_dir).join("hooks")) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            !name.ends_with(".sample") && entry.metadata().is_ok_and(|m| m.is_file() && is_executable(&m))
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect()
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    true
}

/// Why `git ARGS` started in `cwd` (`None`: unknown) may run a program the repository it
/// uses configures, if it may: a setting of [`repository_config_programs`] (or configuration
/// that cannot be read), or an executable hook when the subcommand is not in [`HOOK_FREE`].
/// The repository is the one `--git-dir` names, else `GIT_DIR` from Steward's environment,
/// else the one git discovers from `cwd` after its `-C` options. A working directory or `-C`
/// that cannot be known counts. `None` for other programs and when no repository is found.
pub(crate) fn repository_runs_programs(
    program: &str,
    args: &[String],
    dynamic: &[bool],
    cwd: Option<&Path>,
) -> Option<String> {
    let (sub, mut git_dir, mut start) = if program == "git" {
        let (skip, _) = subcommand_args(program, args, dynamic);
        (args.get(skip).map(String::as_str), None, cwd.map(Path::to_path_buf))
    } else if let Some(sub) = program.strip_prefix("git-") {
        (Some(sub), None, cwd.map(Path::to_path_buf))
    } else {
        return None;
    };
    if program == "git" {
        let (skip, _) = subcommand_args(program, args, dynamic);
        let mut k = 0;
        while k < skip {
            let arg = args.get(k).map_or("", String::as_str);
            let (value, step) = if arg == "-C" || arg == "--git-dir" {
                (args.get(k + 1).map(String::as_str), 2)
            } else if let Some(v) = arg.strip_prefix("--git-dir=") {
                (Some(v), 1)
            } else if let Some(v) = arg.strip_prefix("-C") {
                (Some(v), 1)
            } else {
                k += 1;
                continue;
            };
            let known = value.is_some() && !dynamic.get(k + step - 1).copied().unwrap_or(true);
            let (Some(value), true, Some(dir)) = (value, known, start.as_ref()) else {
                return Some(
                    "the directory git runs in cannot be known, so its repository's configuration cannot be checked"
                        .into(),
                );
            };
            let joined = dir.join(value);
            if arg.starts_with("--git-dir") {
                git_dir = Some(joined);
            } else {
                start = Some(joined);
            }
            k += step;
        }
    }
    let Some(start) = start else {
        return Some(
            "the directory git runs in cannot be known, so its repository's configuration cannot be checked".into(),
        );
    };
    let git_dir = match git_dir {
        Some(dir) => dir,
        None => match std::env::var_os("GIT_DIR") {
            Some(dir) => start.join(dir),
            None => discover(&start)?,
        },
    };
    match repository_config_programs(&git_dir) {
        Ok(names) => {
            if let Some(name) = names.first() {
                return Some(format!("this repository's configuration (`{name}`) can make git run a program."));
            }
        }
        Err(e) => {
            return Some(format!(
                "this repository's configuration cannot be checked for programs git would run ({e})."
            ));
        }
    }
    if !sub.is_none_or(|s| HOOK_FREE.contains(&s) || s.starts_with('-')) {
        let hooks = hooks_present(&git_dir);
        if let Some(hook) = hooks.first() {
            return Some(format!(
                "this repository has an executable hook (`{hook}`) that `git {}` may run.",
                sub.unwrap_or("")
            ));
        }
    }
    None
}

/// Whether `git log` / `git whatchanged` with these arguments, started in `cwd` (`None`:
/// unknown), shows notes through git's default format: no `--format`, `--pretty`,
/// `--oneline` or `--no-notes`, and the repository it uses has notes refs (or refs that cannot
/// be read, a reftable). Notes can hold any blob, an old secret file's among them.
pub(crate) fn log_shows_default_notes(program: &str, args: &[String], dynamic: &[bool], cwd: Option<&Path>) -> bool {
    let (skip, _) = subcommand_args(program, args, dynamic);
    let sub = if program == "git" { args.get(skip).map(String::as_str) } else { program.strip_prefix("git-") };
    if !matches!(sub, Some("log" | "whatchanged")) {
        return false;
    }
    let options = args.iter().take_while(|a| *a != "--" && *a != "--end-of-options");
    if options.clone().any(|a| {
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        matches!(name, "--format" | "--pretty" | "--oneline" | "--no-notes")
    }) {
        return false;
    }
    let Some(cwd) = cwd else { return true };
    let git_dir = match std::env::var_os("GIT_DIR") {
        Some(dir) => cwd.join(dir),
        None => match discover(cwd) {
            Some(dir) => dir,
            None => return false,
        },
    };
    let common = common_dir(&git_dir);
    if common.join("reftable").exists() {
        return true;
    }
    let loose = std::fs::read_dir(common.join("refs/notes")).is_ok_and(|mut entries| entries.next().is_some());
    let packed = std::fs::read_to_string(common.join("packed-refs")).is_ok_and(|text| text.contains(" refs/notes/"));
    loose || packed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        shell_words::split(line).unwrap()
    }

    #[test]
    fn configuration_files_are_parsed_as_git_does() {
        let text = "\u{feff}# comment\n[core]\n\tbare = false\n\tfsmonitor\n[remote \"Origin\"] url = \"a;b\" # c\n\
                    [Diff.X]\n\ttextConv = a \\\n  b\n[alias]\n\tst = \"!f() { echo \\\"x\\\"; }; f\"\n";
        let entries = parse_config(text).unwrap();
        let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["core.bare", "core.fsmonitor", "remote.origin.url", "diff.x.textconv", "alias.st"]);
        assert_eq!(entries[2].1, "a;b");
        assert_eq!(entries[3].1, "a   b");
        assert_eq!(entries[4].1, "!f() { echo \"x\"; }; f");
        for bad in ["[core\nx = 1\n", "x = 1\n", "[core]\n\tx = \"a\n", "[core]\n\tx = a\\q\n", "[core]\n\t9x = 1\n"] {
            assert!(parse_config(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn settings_that_run_programs() {
        for (name, value) in [
            ("core.fsmonitor", "./x"),
            ("core.fsmonitor", "true"),
            ("core.fsmonitor", ""),
            ("core.sshcommand", "ssh"),
            ("filter.lfs.process", "x"),
            ("diff.a.b.textconv", "x"),
            ("submodule.s.update", "!./x"),
            ("includeif.gitdir:x.path", "y"),
            ("pager.log", "x"),
            ("remote.origin.uploadpack", "x"),
        ] {
            assert!(setting_runs_program(name, value), "{name} = {value}");
        }
        for (name, value) in [
            ("core.fsmonitor", "false"),
            ("core.bare", "false"),
            ("filter.lfs.required", "true"),
            ("diff.renames", "true"),
            ("submodule.s.update", "rebase"),
            ("remote.origin.url", "x"),
            ("user.name", "x"),
        ] {
            assert!(!setting_runs_program(name, value), "{name} = {value}");
        }
    }

    #[test]
    fn the_repository_git_uses_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("repo.git/objects")).unwrap();
        std::fs::write(root.join("repo.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join("repo.git/config"), "[core]\n\tpager = ./x\n").unwrap();
        std::fs::create_dir_all(root.join("wt")).unwrap();
        std::fs::write(root.join("wt/.git"), "gitdir: ../repo.git\n").unwrap();
        let judge = |line: &str, cwd: Option<&Path>| {
            let argv = words(line);
            let dynamic: Vec<bool> = argv.iter().map(|a| a == "$D").collect();
            repository_runs_programs(&argv[0], &argv[1..], &dynamic[1..], cwd)
        };
        assert!(
            std::env::var_os("GIT_DIR").is_none(),
            "GIT_DIR is set in the test environment: run the tests with it unset (scripts/test.sh unsets it)"
        );
        assert_eq!(judge("git status", Some(root)), None);
        assert!(judge("git -C wt status", Some(root)).is_some_and(|r| r.contains("core.pager")));
        assert!(judge("git --git-dir=repo.git status", Some(root)).is_some_and(|r| r.contains("core.pager")));
        assert!(judge("git --git-dir repo.git status", Some(root)).is_some());
        assert!(judge("git status", Some(&root.join("repo.git"))).is_some());
        assert!(judge("git -C $D status", Some(root)).is_some_and(|r| r.contains("cannot be known")));
        assert!(judge("git status", None).is_some());
        assert_eq!(judge("ls -C wt", Some(root)), None);
    }

    #[test]
    fn options_running_programs() {
        let judge = |line: &str| {
            let argv = words(line);
            option_runs_program(&argv[0], &argv[1..], &vec![false; argv.len() - 1])
        };
        assert_eq!(judge("git ls-remote --upload=x .").as_deref(), Some("--upload=x"));
        assert_eq!(judge("git -C . rebase -ix y HEAD").as_deref(), Some("-ix"));
        assert_eq!(judge("git-clone -u x . y").as_deref(), Some("-u"));
        assert_eq!(judge("git config a.b c").as_deref(), Some("config"));
        for line in
            ["git log --oneline", "git -C x status", "git push -u origin", "git diff --no-ext-diff", "ls --exec"]
        {
            assert_eq!(judge(line), None, "{line}");
        }
    }
}
