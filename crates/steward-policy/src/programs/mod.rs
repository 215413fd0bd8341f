//! Everything Steward knows about particular programs, in one place: transparent wrappers
//! and their options, shells whose `-c SCRIPT` is opened, builtins that run dynamic code,
//! per-program global options read before a subcommand ([`options`], with the tables in
//! `tables.rs`), the options of particular commands as deny and ask rules read them
//! ([`command_options`]), and environment variables that change what a command runs.
//!
//! Option lists follow the programs' manuals: GNU coreutils `env`, `nice`, `timeout`,
//! `nohup`, `stdbuf`; GNU `time`; findutils `xargs`; util-linux `setsid`; bash builtins
//! `command`, `exec`, `builtin`, `time`; each option table cites its program's manual.

pub(crate) mod command_options;
pub(crate) mod exec_options;
pub(crate) mod launchers;
mod option_table;
pub(crate) mod options;
pub(crate) mod scripts;
pub(crate) mod subcommands;
mod tables;

pub(crate) use options::subcommand_args;

/// A program that runs another program given on its command line.
pub(crate) struct Wrapper {
    /// Program base name.
    pub name: &'static str,
    /// Options without a value.
    pub flags: &'static [&'static str],
    /// Options taking a value (next word, `--long=value`, or `-xVALUE`).
    pub with_value: &'static [&'static str],
    /// Value options whose value is a file the wrapper writes.
    pub writes_value: &'static [&'static str],
    /// Options that make the wrapper run nothing (`command -v`).
    pub no_exec: &'static [&'static str],
    /// Options whose effect we do not model; the command is unparseable.
    pub refused: &'static [&'static str],
    /// Positional words before the program (`timeout DURATION`).
    pub positional: usize,
    /// `NAME=value` words before the program set the environment (`env`).
    pub assignments: bool,
    /// `-N` numeric options (`nice -10`).
    pub numeric_options: bool,
    /// The wrapper appends words it reads at run time (`xargs`).
    pub appends_args: bool,
}

const fn wrapper(name: &'static str) -> Wrapper {
    Wrapper {
        name,
        flags: &[],
        with_value: &[],
        writes_value: &[],
        no_exec: &[],
        refused: &[],
        positional: 0,
        assignments: false,
        numeric_options: false,
        appends_args: false,
    }
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        flags: &["-", "-i", "--ignore-environment", "-0", "--null", "-v", "--debug"],
        with_value: &["-u", "--unset"],
        refused: &["-C", "--chdir", "-S", "--split-string", "-P"],
        assignments: true,
        ..wrapper("env")
    },
    Wrapper {
        flags: &["-p", "-v", "-a", "-q", "--portability", "--verbose", "--append", "--quiet"],
        with_value: &["-f", "--format", "-o", "--output"],
        writes_value: &["-o", "--output"],
        ..wrapper("time")
    },
    wrapper("nohup"),
    wrapper("builtin"),
    Wrapper { flags: &["-p"], no_exec: &["-v", "-V"], ..wrapper("command") },
    Wrapper { flags: &["-c", "-l"], with_value: &["-a"], ..wrapper("exec") },
    Wrapper { with_value: &["-n", "--adjustment"], numeric_options: true, ..wrapper("nice") },
    Wrapper {
        flags: &["--preserve-status", "--foreground", "-v", "--verbose"],
        with_value: &["-s", "--signal", "-k", "--kill-after"],
        positional: 1,
        ..wrapper("timeout")
    },
    Wrapper { with_value: &["-i", "-o", "-e", "--input", "--output", "--error"], ..wrapper("stdbuf") },
    Wrapper { flags: &["-f", "--fork", "-w", "--wait", "-c", "--ctty"], ..wrapper("setsid") },
    Wrapper {
        flags: &[
            "-0",
            "--null",
            "-r",
            "--no-run-if-empty",
            "-t",
            "--verbose",
            "-p",
            "--interactive",
            "-x",
            "--exit",
            "-o",
            "--open-tty",
            "-i",
        ],
        with_value: &[
            "-I",
            "--replace",
            "-L",
            "--max-lines",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
            "-d",
            "--delimiter",
            "-E",
            "--eof",
            "-a",
            "--arg-file",
        ],
        appends_args: true,
        ..wrapper("xargs")
    },
];

/// The wrapper named `program`, if it is one.
pub(crate) fn wrapper_named(program: &str) -> Option<&'static Wrapper> {
    WRAPPERS.iter().find(|w| w.name == program)
}

/// Shells whose `-c SCRIPT` is parsed as a nested command line (POSIX-syntax shells only).
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "rbash", "posh", "yash"];

/// True for a POSIX-syntax shell.
pub(crate) fn is_shell(program: &str) -> bool {
    SHELLS.contains(&program)
}

/// Long shell options that take the next word as a value.
pub(crate) const SHELL_LONG_WITH_VALUE: &[&str] = &["--rcfile", "--init-file"];

/// Builtins that run code built at run time, or change what later names mean; a command
/// line using one cannot be judged from its text.
const DYNAMIC_CODE: &[&str] = &[
    "eval",
    "source",
    ".",
    "alias",
    "trap",
    "hash",
    "enable",
    "fc",
    "let",
    "declare",
    "typeset",
    "readarray",
    "mapfile",
    "bind",
    "complete",
    "coproc",
];

/// True when `program` runs dynamic code (see [`DYNAMIC_CODE`]).
pub(crate) fn runs_dynamic_code(program: &str) -> bool {
    DYNAMIC_CODE.contains(&program)
}

/// `--name=value` → `--name`; anything else unchanged.
pub(crate) fn option_name(arg: &str) -> &str {
    if arg.starts_with("--") { arg.split_once('=').map_or(arg, |(name, _)| name) } else { arg }
}

/// True for a valid shell variable name (`[A-Za-z_][A-Za-z0-9_]*`).
pub(crate) fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Environment variables that make a program load or run other code, or look elsewhere for
/// its configuration. Setting one for a command makes it need approval.
const RISKY_ENV: &[&str] = &[
    "PATH",
    "ENV",
    "BASH_ENV",
    "IFS",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "CDPATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "NODE_PATH",
    "PERL5LIB",
    "PERL5OPT",
    "RUBYLIB",
    "RUBYOPT",
    "RUSTC",
    "RUSTDOC",
    "CC",
    "CXX",
    "SHELL",
    "MAKEFLAGS",
    "MFLAGS",
    "GNUMAKEFLAGS",
    "MAKEFILES",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "KUBECONFIG",
    "CURL_HOME",
    "WGETRC",
    // less(1) "ENVIRONMENT": an input preprocessor, options (`+!cmd`), key bindings.
    "LESSOPEN",
    "LESSCLOSE",
    "LESS",
    "LESSKEY",
    "LESSKEYIN",
    "LESSKEY_CONTENT",
    "LESSEDIT",
    // vim(1) "ENVIRONMENT": commands run at startup.
    "VIMINIT",
    "EXINIT",
    "MYVIMRC",
    // rsync(1): the remote shell and a program to connect through; zip(1): default options.
    "RSYNC_RSH",
    "RSYNC_CONNECT_PROG",
    "ZIPOPT",
    "BROWSER",
    "FCEDIT",
];
/// Prefixes of variables that configure a program: cargo's `CARGO_*` configuration
/// (`CARGO_ALIAS_P=publish` makes `cargo p` publish), npm's `npm_config_*`, yarn's
/// `YARN_*`, pnpm's, bun's, uv's and pip's settings, docker's and compose's,
/// terraform's `TF_CLI_ARGS*` (arguments added to every command).
const RISKY_ENV_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "GIT_",
    "BASH_FUNC_",
    "CARGO_",
    "RUSTUP_",
    "NPM_CONFIG_",
    "YARN_",
    "PNPM_",
    "BUN_",
    "UV_",
    "PIP_",
    "DOCKER_",
    "COMPOSE_",
    "TF_CLI_",
    "HELM_",
];
const RISKY_ENV_SUFFIXES: &[&str] = &["_COMMAND", "WRAPPER", "RUNNER", "ASKPASS", "_OPTIONS", "OPTS", "_PRELOAD"];
/// `…PAGER` / `…EDITOR` variables name a program to run; these values are harmless.
const SAFE_PAGERS: &[&str] = &["", "cat", "less", "more"];

/// True when setting `name=value` for a command could change what it runs.
pub(crate) fn env_is_risky(name: &str, value: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if RISKY_ENV.contains(&upper.as_str())
        || RISKY_ENV_PREFIXES.iter().any(|p| upper.starts_with(p))
        || RISKY_ENV_SUFFIXES.iter().any(|s| upper.ends_with(s))
    {
        return true;
    }
    (upper.ends_with("PAGER") || upper.ends_with("EDITOR") || upper == "VISUAL") && !SAFE_PAGERS.contains(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn risky_environment_names() {
        assert!(env_is_risky("PATH", "/tmp"));
        assert!(env_is_risky("LD_PRELOAD", "x.so"));
        assert!(env_is_risky("GIT_SSH_COMMAND", "sh"));
        assert!(env_is_risky("GH_PAGER", "sh -c x"));
        assert!(!env_is_risky("GH_PAGER", "cat"));
        assert!(!env_is_risky("FOO", "1"));
        assert!(!env_is_risky("GH_TOKEN", "x"));
        // Configuration through the environment: an alias, a script shell, extra arguments.
        assert!(env_is_risky("CARGO_ALIAS_P", "publish"));
        assert!(env_is_risky("npm_config_script_shell", "./x"));
        assert!(env_is_risky("TF_CLI_ARGS_apply", "-destroy"));
        assert!(env_is_risky("MAKEFILES", "x.mk"));
    }
}
