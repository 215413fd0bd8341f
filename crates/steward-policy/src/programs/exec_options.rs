//! Options, operands and programs that make a command run another command or code the gate
//! cannot read: `find -exec`, `tar --to-command` (any abbreviation, `-Iprog` attached or in
//! a group of letters), `rsync -essh`, `zip -TTcmd`, `less +!cmd`, `vim -ccmd` / `+cmd`,
//! interpreters given code inline (`perl -e`, `node -pe`, `php -r`), and programs that run
//! the command in their operands with options Steward does not read (`chrt`, `taskset`,
//! `flock`, `systemd-run`, `sudo` …). Such a command is never allowed by a rule on its own.
//!
//! Each program's options are read the way its parser reads them, erring towards a match:
//! getopt short letters may be grouped and take their value attached (`-xvIzstd`), so any
//! group holding a listed letter counts; a long option counts when it abbreviates a listed
//! one (getopt_long's unambiguous prefixes, `--to-comm=`) or starts with one (vim reads
//! `--cmd…` by its first letters); a listed single-dash word counts with a value attached
//! (`-TT=cmd`, `-TTcmd`). Sources: GNU findutils find(1); GNU tar manual "All options"
//! (`--to-command`, `--checkpoint-action=exec`, `-I`/`--use-compress-program`, `-F`/
//! `--info-script`/`--new-volume-script`, `--rsh-command`, `--rmt-command`) and its
//! old-style letter groups (`tar xIf`); rsync(1) (`-e`/`--rsh`, `--rsync-path`); zip(1)
//! (`-TT`/`--unzip-command`); less(1) ("+cmd", `-k`/`--lesskey-file`, `--lesskey-src`,
//! `--lesskey-content`); python(1) (`-c`); vim(1) and nvim(1) (`-c`, `+cmd`, `--cmd`, `-S`, `--remote-send`,
//! `--remote-expr`, nvim's `-l`); perlrun(1) (`-e`, `-E`); ruby(1) (`-e`); node(1) (`-e`,
//! `--eval`, `-p`, `--print`, `-r`, `--require`, `--import`, `--loader`); php(1) (`-r`,
//! `-B`, `-R`, `-E`, `-d`); lua(1) (`-e`, `-l`); Rscript (`-e`); osascript(1) (`-e`).

/// A program's options that run code.
struct ExecOptions {
    /// Program base names.
    programs: &'static [&'static str],
    /// Short option letters (getopt: grouped, value attached or the next word).
    letters: &'static [char],
    /// Long options (`--name`, `--name=value`, abbreviated).
    long: &'static [&'static str],
    /// Single-dash words, alone or with `=value` (`-exec`).
    words: &'static [&'static str],
    /// Short options of two letters, also with a value attached and among other letters
    /// (zip's `-TT`, `-TTcmd`, `-TT=cmd`, `-qTT`).
    pairs: &'static [&'static str],
    /// An operand `+cmd` is a command the program runs; those that only move (`+42`, `+G`)
    /// are read by this predicate as harmless.
    plus_command: Option<fn(&str) -> bool>,
    /// The first argument, without a dash, may be a group of option letters (`tar xIf`).
    old_style: bool,
}

const fn exec(programs: &'static [&'static str]) -> ExecOptions {
    ExecOptions { programs, letters: &[], long: &[], words: &[], pairs: &[], plus_command: None, old_style: false }
}

/// `+N`, `+`, and for less one of its moving commands after the number (`+G`, `+F`).
fn less_moves(rest: &str) -> bool {
    let rest = rest.trim_start_matches('+');
    let digits_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    matches!(&rest[digits_end..], "" | "g" | "G" | "F" | "p" | "%")
}

/// `+N` and `+` (a line number, the last line).
fn vim_moves(rest: &str) -> bool {
    rest.trim_start_matches('+').chars().all(|c| c.is_ascii_digit())
}

const EXEC_OPTIONS: &[ExecOptions] = &[
    ExecOptions {
        words: &["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"],
        ..exec(&["find"])
    },
    ExecOptions {
        letters: &['I', 'F'],
        long: &[
            "--to-command",
            "--checkpoint-action",
            "--use-compress-program",
            "--info-script",
            "--new-volume-script",
            "--rsh-command",
            "--rmt-command",
        ],
        old_style: true,
        ..exec(&["tar", "gtar", "bsdtar"])
    },
    ExecOptions { letters: &['e'], long: &["--rsh", "--rsync-path"], ..exec(&["rsync"]) },
    ExecOptions { long: &["--unzip-command"], pairs: &["TT"], ..exec(&["zip"]) },
    ExecOptions {
        letters: &['k'],
        long: &["--lesskey-file", "--lesskey-src", "--lesskey-content"],
        plus_command: Some(less_moves),
        ..exec(&["less"])
    },
    ExecOptions {
        letters: &['c', 'S'],
        long: &["--cmd", "--remote-send", "--remote-expr"],
        plus_command: Some(vim_moves),
        ..exec(&["vim", "vi", "view", "vimdiff", "gvim", "gview", "rvim", "ex", "evim"])
    },
    ExecOptions {
        letters: &['c', 'S', 'l'],
        long: &["--cmd", "--remote-send", "--remote-expr"],
        plus_command: Some(vim_moves),
        ..exec(&["nvim"])
    },
    ExecOptions { letters: &['e', 'E'], ..exec(&["perl"]) },
    ExecOptions { letters: &['c'], ..exec(&["python", "python2", "python3", "pypy", "pypy3"]) },
    ExecOptions { letters: &['e'], ..exec(&["ruby", "jruby", "osascript", "Rscript"]) },
    ExecOptions {
        letters: &['e', 'p', 'r'],
        long: &["--eval", "--print", "--require", "--import", "--loader", "--experimental-loader"],
        ..exec(&["node", "nodejs"])
    },
    ExecOptions { letters: &['e', 'p'], long: &["--eval", "--print"], ..exec(&["bun"]) },
    ExecOptions { letters: &['r', 'B', 'R', 'E', 'd'], ..exec(&["php"]) },
    ExecOptions { letters: &['e', 'l'], ..exec(&["lua", "luajit"]) },
];

/// Programs that run the command (or code) given in their operands, whose options Steward
/// does not read: scheduling and resource wrappers (`chrt`, `ionice`, `taskset`, `numactl`,
/// `prlimit`), locks and services (`flock`, `systemd-run`), other users and namespaces
/// (`sudo`, `doas`, `su`, `runuser`, `chroot`, `nsenter`, `unshare`, `setpriv`, sandboxes),
/// tracers and debuggers, job runners (`parallel`, `watch`, `entr`, `hyperfine`), terminal
/// wrappers (`unbuffer`, `script`, `expect`), session runners (`dbus-run-session`,
/// `ssh-agent CMD`), `flatpak-spawn` (`--host` leaves the sandbox), remote shells, and shells whose syntax is not
/// POSIX (`fish`, `csh`, `pwsh` …), whose `-c` script cannot be read.
const RUNNERS: &[&str] = &[
    "chrt",
    "ionice",
    "taskset",
    "numactl",
    "prlimit",
    "cpulimit",
    "flock",
    "systemd-run",
    "sudo",
    "doas",
    "su",
    "runuser",
    "sg",
    "chroot",
    "nsenter",
    "unshare",
    "setpriv",
    "firejail",
    "bwrap",
    "fakeroot",
    "faketime",
    "torsocks",
    "proxychains",
    "proxychains4",
    "strace",
    "ltrace",
    "valgrind",
    "gdb",
    "perf",
    "catchsegv",
    "parallel",
    "sem",
    "watch",
    "entr",
    "hyperfine",
    "unbuffer",
    "script",
    "expect",
    "xvfb-run",
    "dbus-run-session",
    "ssh-agent",
    "flatpak-spawn",
    "ssh",
    "fish",
    "csh",
    "tcsh",
    "nu",
    "xonsh",
    "elvish",
    "pwsh",
    "powershell",
];

/// Why `program ARGS` runs other code through an option, an operand or by what it is, if
/// it does. `args` are the words after the program.
pub(crate) fn exec_option(program: &str, args: &[String]) -> Option<String> {
    if RUNNERS.contains(&program) {
        return Some(format!("`{program}` runs the command given in its arguments, which is not judged on its own"));
    }
    let table = EXEC_OPTIONS.iter().find(|t| t.programs.contains(&program))?;
    for (index, arg) in args.iter().enumerate() {
        if arg == "--" {
            return None;
        }
        if index == 0
            && table.old_style
            && !arg.starts_with('-')
            && arg.chars().all(|c| c.is_ascii_alphabetic())
            && let Some(letter) = arg.chars().find(|c| table.letters.contains(c))
        {
            return Some(format!("`{arg}` holds `{letter}`, which makes `{program}` run another program"));
        }
        if let Some(rest) = arg.strip_prefix('+')
            && let Some(moves) = table.plus_command
            && !moves(rest)
        {
            return Some(format!("`{arg}` is a command `{program}` runs"));
        }
        if let Some(body) = arg.strip_prefix("--") {
            let name = body.split_once('=').map_or(body, |(name, _)| name);
            if name.is_empty() {
                continue;
            }
            let written = format!("--{name}");
            if let Some(long) = table.long.iter().find(|l| l.starts_with(&written) || written.starts_with(**l)) {
                return Some(format!("`{arg}` (`{long}`) makes `{program}` run another command"));
            }
            continue;
        }
        if arg.len() < 2 || !arg.starts_with('-') {
            continue;
        }
        let name = arg.split_once('=').map_or(arg.as_str(), |(name, _)| name);
        if let Some(word) = table.words.iter().find(|w| **w == name) {
            return Some(format!("`{arg}` (`{word}`) makes `{program}` run another command"));
        }
        if let Some(pair) = table.pairs.iter().find(|p| arg[1..].contains(**p)) {
            return Some(format!("`{arg}` holds `-{pair}`, which makes `{program}` run another command"));
        }
        if !table.words.is_empty() {
            // Single-dash words (find): not a group of letters.
            continue;
        }
        if let Some(letter) = arg[1..].chars().find(|c| table.letters.contains(c)) {
            return Some(format!("`{arg}` holds `-{letter}`, which makes `{program}` run other code"));
        }
    }
    None
}
