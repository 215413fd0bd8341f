//! Differential test of the shell splitter against bash (target `shell_bash`): generated
//! command lines (quotes, escapes, `$'…'`, globs, brace and tilde expansion, redirections,
//! lists, subshells, groups, keywords, comments, here-strings, unicode and control
//! characters, leading assignments) are split by Steward and run by `bash -c` in an empty
//! directory with an empty environment, where every command resolves to a printer that records
//! its argv. Every argv bash really passes must be one Steward saw (a word Steward marks as
//! expanded at run time stands for any number of words), and every file a redirection created
//! must be one of Steward's redirection targets. A disagreement on a line the gate would allow
//! fails the test; one on a line the gate asks about or denies is counted and shown.
//!
//! The printer: `PATH` is an empty directory and bash's `command_not_found_handle` (defined in
//! the `BASH_ENV` file) writes its arguments to a log directory; all builtins but `printf`,
//! `return` and `enable` are disabled there, so builtins are recorded like programs. Wrappers
//! and shells (`env`, `command`, `bash -c`, …) are recorded but not compared: the printer does
//! not run what they would run.

use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

mod shell_lines;

use proptest::prelude::*;
use shell_lines::{NAMES, line};
use steward_fuzz::proptest;
use steward_policy::{Policy, PolicyConfig, Workspace, shell};
use steward_protocol::DecisionKind;

/// Names whose argv the printer records but does not compare: the splitter opens them.
const OPENED: &[&str] = &[
    "env", "time", "nohup", "builtin", "command", "exec", "nice", "timeout", "stdbuf", "setsid", "xargs", "sh", "bash",
    "zsh", "dash", "ksh", "mksh", "ash", "rbash", "posh", "yash",
];

/// The bash used as the reference.
const BASH: &str = "/usr/bin/bash";
/// Ends a line that runs too long (the environment given to bash has no usable `PATH`).
const TIMEOUT: &str = "/usr/bin/timeout";
/// The file descriptor every process of a line inherits; the line is over when it closes.
const DONE_FD: i32 = 9;

struct Harness {
    _dir: tempfile::TempDir,
    rc: PathBuf,
    path: PathBuf,
    log: PathBuf,
    runs: PathBuf,
    policy: Policy,
    next: AtomicUsize,
}

impl Harness {
    fn new() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin");
        let log = dir.path().join("log");
        let runs = dir.path().join("runs");
        for d in [&path, &log, &runs] {
            std::fs::create_dir(d).unwrap();
        }
        let rc = dir.path().join("rc.bash");
        std::fs::write(
            &rc,
            format!(
                "command_not_found_handle() {{ printf '%s\\0' \"$@\" > '{}'/r.$BASHPID.$RANDOM; return 0; }}\n\
                 for b in $(compgen -b); do case $b in printf|return|enable) ;; *) enable -n \"$b\" ;; esac; done\n\
                 enable -n enable\n",
                log.display()
            ),
        )
        .unwrap();
        let mut text = String::from("[policy]\n");
        for name in NAMES.iter().chain(OPENED) {
            text.push_str(&format!(
                "[[policy.rule]]\nname = \"allow-{name}\"\ntool = \"shell_command\"\nargv = [\"{name}\", \"**\"]\n\
                 decision = \"allow\"\n"
            ));
        }
        #[derive(serde::Deserialize)]
        struct Root {
            policy: PolicyConfig,
        }
        let config = toml::from_str::<Root>(&text).unwrap().policy;
        let policy = Policy::new(&config).unwrap();
        Harness { _dir: dir, rc, path, log, runs, policy, next: AtomicUsize::new(0) }
    }

    /// Runs `line` in a fresh empty directory; the argvs bash passed and the files created.
    fn bash(&self, line: &str, cwd: &Path) -> (Vec<Vec<String>>, BTreeSet<PathBuf>) {
        let (mut reader, writer) = std::io::pipe().unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&writer);
        let mut command = Command::new(TIMEOUT);
        command
            .args(["-s", "KILL", "10", BASH, "-c", line])
            .env_clear()
            .env("PATH", &self.path)
            .env("BASH_ENV", &self.rc)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: dup2 is async-signal-safe; only the child's descriptor table changes.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(fd, DONE_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        drop(command);
        drop(writer);
        let mut sink = Vec::new();
        let _ = reader.read_to_end(&mut sink);
        let _ = child.wait();
        let mut records = Vec::new();
        for entry in std::fs::read_dir(&self.log).unwrap().flatten() {
            let bytes = std::fs::read(entry.path()).unwrap();
            let _ = std::fs::remove_file(entry.path());
            let text = String::from_utf8_lossy(&bytes);
            let mut argv: Vec<String> = text.split('\0').map(str::to_string).collect();
            argv.pop();
            records.push(argv);
        }
        let mut created = BTreeSet::new();
        for entry in walk(cwd) {
            created.insert(entry);
        }
        (records, created)
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(entry.path());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&entry.path()));
        }
    }
    out
}

/// True when bash's `argv` is one the splitter's words describe; a dynamic word stands for
/// any number of words.
fn describes(words: &[(String, bool)], argv: &[String]) -> bool {
    match words.split_first() {
        None => argv.is_empty(),
        Some(((text, false), rest)) => argv.first() == Some(text) && describes(rest, &argv[1..]),
        Some(((_, true), rest)) => (0..=argv.len()).any(|k| describes(rest, &argv[k..])),
    }
}

/// What one line showed.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// The splitter refused the line.
    Refused,
    /// bash and the splitter agree.
    Agree,
    /// They disagree, and the gate does not allow the line.
    Gated(String),
}

/// Compares the splitter with bash on `line`; Err when they disagree and the gate allows it.
fn compare(h: &Harness, line: &str) -> Result<Outcome, String> {
    let n = h.next.fetch_add(1, Ordering::Relaxed);
    let cwd = h.runs.join(n.to_string());
    std::fs::create_dir(&cwd).unwrap();
    let result = compare_in(h, line, &cwd);
    let _ = std::fs::remove_dir_all(&cwd);
    result
}

fn compare_in(h: &Harness, line: &str, cwd: &Path) -> Result<Outcome, String> {
    let Ok(parts) = shell::split_in(line, Some(cwd)) else { return Ok(Outcome::Refused) };
    let (records, created) = h.bash(line, cwd);
    let mut problems = Vec::new();
    for argv in &records {
        if argv.first().is_some_and(|p| OPENED.contains(&p.as_str())) {
            continue;
        }
        let seen = parts.iter().any(|c| {
            let words: Vec<(String, bool)> = c.argv.iter().cloned().zip(c.dynamic.iter().copied()).collect();
            describes(&words, argv)
        });
        if !seen {
            problems.push(format!("bash ran {argv:?}, which the splitter did not see"));
        }
    }
    let targets: BTreeSet<PathBuf> =
        parts.iter().flat_map(|c| c.redirects.iter()).map(|t| normal(&cwd.join(t))).collect();
    for file in created {
        if !targets.contains(&normal(&file)) {
            problems.push(format!("bash created {}, which is no redirection target of the splitter", file.display()));
        }
    }
    if problems.is_empty() {
        return Ok(Outcome::Agree);
    }
    let workspace = Workspace::open(cwd, &[]).map_err(|e| e.to_string())?;
    let decision = h.policy.judge_command(line, &workspace);
    let shown = format!("{line:?}: {}; splitter: {parts:?}", problems.join("; "));
    if decision.decision == DecisionKind::Allow {
        return Err(format!("the gate allows {shown}"));
    }
    Ok(Outcome::Gated(shown))
}

/// `path` with `.` and `..` components resolved lexically.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn fuzz_shell_bash() {
    assert!(Path::new(BASH).exists(), "the differential test needs bash at {BASH}");
    let h = Harness::new();
    let counts = std::cell::RefCell::new([0usize; 3]);
    let gated = std::cell::RefCell::new(Vec::<String>::new());
    steward_fuzz::run_cases(
        "shell_bash",
        64,
        line(),
        |bytes| vec![String::from_utf8_lossy(bytes).into_owned()],
        |line| {
            let outcome = compare(&h, &line).map_err(TestCaseError::fail)?;
            let mut c = counts.borrow_mut();
            match outcome {
                Outcome::Refused => c[0] += 1,
                Outcome::Agree => c[1] += 1,
                Outcome::Gated(shown) => {
                    c[2] += 1;
                    gated.borrow_mut().push(shown);
                }
            }
            Ok(())
        },
    );
    let [refused, agreed, disagreed] = *counts.borrow();
    println!(
        "shell_bash: {} lines: {refused} refused by the splitter, {agreed} agree with bash, {disagreed} disagree on lines the gate does not allow",
        refused + agreed + disagreed
    );
    for shown in gated.borrow().iter().take(20) {
        println!("  gated disagreement: {shown}");
    }
}

/// The printer records what bash passes, and the comparison sees a wrong argv: without this,
/// an agreeing run would prove nothing.
#[test]
fn printer_records_what_bash_passes() {
    let h = Harness::new();
    let cwd = h.runs.join("printer");
    std::fs::create_dir(&cwd).unwrap();
    let (mut records, created) = h.bash("ls 'a b' c; cat <<< x > out; echo $'\\x41' | wc", &cwd);
    records.sort();
    assert_eq!(records, [vec!["cat"], vec!["echo", "A"], vec!["ls", "a b", "c"], vec!["wc"]]);
    assert_eq!(created.into_iter().collect::<Vec<_>>(), [cwd.join("out")]);
    let words = |w: &[(&str, bool)]| w.iter().map(|(t, d)| (t.to_string(), *d)).collect::<Vec<_>>();
    let argv = |a: &[&str]| a.iter().map(|t| t.to_string()).collect::<Vec<_>>();
    assert!(describes(&words(&[("ls", false), ("*", true)]), &argv(&["ls", "a", "b"])));
    assert!(!describes(&words(&[("ls", false), ("a b", false)]), &argv(&["ls", "a", "b"])));
}

/// Disagreement found by this test: bash's `time` keyword takes only `-p` and `--`, so
/// `time -o f ls` runs the program `-o`, while the splitter read GNU time's `-o FILE` and saw
/// `ls`.
#[test]
fn bash_time_keyword_options() {
    let h = Harness::new();
    for line in [
        "time -o f ls",
        "time -v ls x",
        "time -p -p ls",
        "time -- ls",
        "time -p -- ls",
        "ls | time -o f ls",
        "time time -o f ls",
    ] {
        assert_eq!(compare(&h, line), Ok(Outcome::Agree), "{line}");
    }
}
