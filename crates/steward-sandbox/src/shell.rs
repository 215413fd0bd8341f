//! No login or rc-reading shells (case B12): a login shell sources `~/.bash_profile`,
//! `~/.profile`, … and can export again the secrets the environment scrub removed.
//!
//! Policy (chosen: rewrite, refuse what cannot be parsed): when `argv[0]` (or the command
//! after an `env` prefix) is a known shell — `bash`, `sh`, `dash`, `ash`, `ksh`, `mksh`, `zsh`,
//! by bare name or any path — the argv is rewritten to a non-login, non-interactive
//! invocation that reads no startup file:
//! - `-l`, `-i` (also inside clusters like `-lc`, `-ilc`) and `--login` are removed;
//! - bash additionally gets `--noprofile --norc` (its only long options kept are
//!   `--posix`, `--restricted`, `--verbose`, `--noediting`, `--version`, `--help`);
//! - zsh additionally gets `-f` (`NO_RCS`: no `~/.zshenv`, `~/.zshrc`, …), and `+f` is refused;
//! - `sh`/`dash`/`ash`/`ksh`/`mksh` only lose the flags (they read nothing when
//!   non-interactive and non-login; `ENV` is never passed to any child, see `env.rs`).
//!
//! Refused (the command is not run): an option the parser does not know for that shell, an
//! `-o`/`+o`/`-O`/`+O` value naming `login`, `interactive`, `rcs`, `globalrcs` or
//! `login_shell`, an `env` prefix with options other than `-i`, `-`, `-u NAME`, `-C DIR`,
//! `--ignore-environment`, `--unset=NAME`, `--chdir=DIR` (e.g. `-S` can hide a shell), and an
//! `env` assignment of `BASH_ENV` or `ENV`. Limitation: a shell started from inside the
//! command (`sh -c 'bash -l'`) is not seen here; it still gets the scrubbed environment.
#![forbid(unsafe_code)]

use std::path::Path;

/// Which startup-file rules a shell follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shell {
    Bash,
    Zsh,
    /// POSIX-style: `sh`, `dash`, `ash`, `ksh`, `mksh`.
    Posix,
}

fn shell_of(program: &str) -> Option<Shell> {
    let name = Path::new(program).file_name()?.to_str()?;
    match name {
        "bash" => Some(Shell::Bash),
        "zsh" => Some(Shell::Zsh),
        "sh" | "dash" | "ash" | "ksh" | "mksh" => Some(Shell::Posix),
        _ => None,
    }
}

/// Why a shell invocation is refused in the sandbox ([`non_login`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ShellRefusal {
    /// An `env` option in front of the command that can hide a shell.
    #[error("`env {0}` is not allowed in front of a command (it can hide a shell)")]
    EnvOption(String),
    /// `env BASH_ENV=…` or `env ENV=…`.
    #[error("`env {0}=…` would make a shell source a file")]
    SourcedFile(String),
    /// A shell option the rewrite does not know.
    #[error("shell option `{0}` is not supported in the sandbox")]
    UnknownOption(String),
    /// `zsh +f`.
    #[error("`zsh +f` would read startup files")]
    ZshStartupFiles,
    /// An option that takes a value is the last word.
    #[error("shell option `{0}` is missing its value")]
    MissingValue(String),
    /// An option value that turns login or rc reading back on.
    #[error("shell option `{option} {value}` would make a login or rc-reading shell")]
    LoginValue {
        /// The option.
        option: String,
        /// Its value.
        value: String,
    },
}

/// Rewrites `argv` as described in the module docs. `Ok(None)`: not a shell (run as is);
/// `Ok(Some(argv))`: the non-login argv to run; `Err`: refused, and why.
pub(crate) fn non_login(argv: &[String]) -> Result<Option<Vec<String>>, ShellRefusal> {
    let Some(program) = argv.first() else { return Ok(None) };
    if Path::new(program).file_name().and_then(|n| n.to_str()) == Some("env") {
        return env_prefixed(argv);
    }
    match shell_of(program) {
        Some(shell) => rewrite(shell, argv).map(Some),
        None => Ok(None),
    }
}

/// `env [OPTION]... [NAME=VALUE]... COMMAND...`: rewrites COMMAND when it is a shell.
fn env_prefixed(argv: &[String]) -> Result<Option<Vec<String>>, ShellRefusal> {
    let mut i = 1;
    while let Some(arg) = argv.get(i) {
        let takes_value = matches!(arg.as_str(), "-u" | "-C");
        let flag = matches!(arg.as_str(), "-i" | "-" | "--ignore-environment")
            || arg.starts_with("--unset=")
            || arg.starts_with("--chdir=");
        if takes_value {
            i += 2;
        } else if flag {
            i += 1;
        } else if arg == "--" {
            i += 1;
            break;
        } else if arg.starts_with('-') {
            return Err(ShellRefusal::EnvOption(arg.clone()));
        } else {
            break;
        }
    }
    while let Some((name, _)) = argv.get(i).and_then(|a| a.split_once('=')) {
        if name == "BASH_ENV" || name == "ENV" {
            return Err(ShellRefusal::SourcedFile(name.to_string()));
        }
        i += 1;
    }
    let Some(command) = argv.get(i) else { return Ok(None) };
    match shell_of(command) {
        Some(shell) => {
            let mut out = argv[..i].to_vec();
            out.extend(rewrite(shell, &argv[i..])?);
            Ok(Some(out))
        }
        None => Ok(None),
    }
}

/// Option values that would turn login/rc behaviour back on.
fn forbidden_value(value: &str) -> bool {
    let normal: String = value.chars().filter(|c| *c != '_').collect::<String>().to_ascii_lowercase();
    matches!(normal.as_str(), "login" | "interactive" | "rcs" | "globalrcs" | "loginshell")
}

/// Rewrites one shell argv (`argv[0]` is the shell).
fn rewrite(shell: Shell, argv: &[String]) -> Result<Vec<String>, ShellRefusal> {
    let mut out = vec![argv[0].clone()];
    match shell {
        Shell::Bash => out.extend(["--noprofile".to_string(), "--norc".to_string()]),
        Shell::Zsh => out.push("-f".into()),
        Shell::Posix => {}
    }
    let mut i = 1;
    while let Some(arg) = argv.get(i) {
        if arg == "--" || arg == "-" || !(arg.starts_with('-') || arg.starts_with('+')) {
            // End of options: the script or command string and its arguments, verbatim.
            out.extend_from_slice(&argv[i..]);
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let keep = match (shell, long) {
                (_, "login") | (Shell::Bash, "noprofile" | "norc") | (Shell::Zsh, "interactive") => false,
                (Shell::Bash, "posix" | "restricted" | "verbose" | "noediting" | "version" | "help") => true,
                (Shell::Zsh, "no-rcs" | "no-globalrcs" | "norcs" | "noglobalrcs") => true,
                _ => return Err(ShellRefusal::UnknownOption(arg.clone())),
            };
            if keep {
                out.push(arg.clone());
            }
            i += 1;
            continue;
        }
        let (sign, letters) = arg.split_at(1);
        let mut kept = String::new();
        let mut values = 0usize;
        for letter in letters.chars() {
            match letter {
                'l' | 'i' => {}
                'f' if shell == Shell::Zsh && sign == "+" => {
                    return Err(ShellRefusal::ZshStartupFiles);
                }
                'o' | 'O' => {
                    kept.push(letter);
                    values += 1;
                }
                c if c.is_ascii_alphabetic() => kept.push(c),
                _ => return Err(ShellRefusal::UnknownOption(arg.clone())),
            }
        }
        if !kept.is_empty() {
            out.push(format!("{sign}{kept}"));
        }
        for _ in 0..values {
            i += 1;
            let Some(value) = argv.get(i) else {
                return Err(ShellRefusal::MissingValue(arg.clone()));
            };
            if forbidden_value(value) {
                return Err(ShellRefusal::LoginValue { option: arg.clone(), value: value.clone() });
            }
            out.push(value.clone());
        }
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    fn rewritten(words: &[&str]) -> Vec<String> {
        non_login(&argv(words)).unwrap().unwrap()
    }

    #[test]
    fn b12_bash_login_forms_become_non_login() {
        let cmd = "env | sort";
        for form in [
            &["bash", "-lc", cmd][..],
            &["bash", "-l", "-c", cmd],
            &["bash", "--login", "-c", cmd],
            &["bash", "-ilc", cmd],
            &["bash", "-c", cmd],
            &["bash", "--norc", "-c", cmd],
        ] {
            assert_eq!(rewritten(form), argv(&["bash", "--noprofile", "--norc", "-c", cmd]), "{form:?}");
        }
        assert_eq!(
            rewritten(&["/usr/bin/bash", "-xlc", cmd, "name", "arg"]),
            argv(&["/usr/bin/bash", "--noprofile", "--norc", "-xc", cmd, "name", "arg"])
        );
        assert_eq!(rewritten(&["bash", "-l"]), argv(&["bash", "--noprofile", "--norc"]));
        // Operands after the command string are never treated as options.
        assert_eq!(
            rewritten(&["bash", "-c", cmd, "-l", "--login"]),
            argv(&["bash", "--noprofile", "--norc", "-c", cmd, "-l", "--login"])
        );
        assert_eq!(
            rewritten(&["bash", "-o", "pipefail", "-lc", cmd]),
            argv(&["bash", "--noprofile", "--norc", "-o", "pipefail", "-c", cmd])
        );
    }

    #[test]
    fn b12_posix_and_zsh_shells() {
        assert_eq!(rewritten(&["sh", "-lc", "env"]), argv(&["sh", "-c", "env"]));
        assert_eq!(rewritten(&["/bin/dash", "-l", "-i", "-c", "env"]), argv(&["/bin/dash", "-c", "env"]));
        assert_eq!(rewritten(&["zsh", "-lc", "env"]), argv(&["zsh", "-f", "-c", "env"]));
        assert_eq!(rewritten(&["zsh", "--login", "-c", "env"]), argv(&["zsh", "-f", "-c", "env"]));
        assert_eq!(
            rewritten(&["env", "A=1", "bash", "-lc", "env"]),
            argv(&["env", "A=1", "bash", "--noprofile", "--norc", "-c", "env"])
        );
        assert_eq!(rewritten(&["/usr/bin/env", "-i", "sh", "-l"]), argv(&["/usr/bin/env", "-i", "sh"]));
    }

    #[test]
    fn b12_unparseable_or_rc_enabling_forms_are_refused() {
        for form in [
            &["bash", "--rcfile", "x", "-c", "env"][..],
            &["bash", "-O", "login_shell", "-c", "env"],
            &["zsh", "-o", "login", "-c", "env"],
            &["zsh", "+o", "RCS", "-c", "env"],
            &["zsh", "+f", "-c", "env"],
            &["zsh", "--rcs", "-c", "env"],
            &["bash", "-o"],
            &["sh", "-%", "env"],
            &["env", "-S", "bash -l", "-c", "env"],
            &["env", "BASH_ENV=/home/u/.bashrc", "bash", "-c", "env"],
        ] {
            assert!(non_login(&argv(form)).is_err(), "{form:?}");
        }
    }

    #[test]
    fn other_programs_are_left_alone() {
        for form in [&["git", "status"][..], &["bashful", "-l"], &["env", "git", "-l"], &["env"], &["python3", "-i"]] {
            assert_eq!(non_login(&argv(form)).unwrap(), None, "{form:?}");
        }
    }
}
