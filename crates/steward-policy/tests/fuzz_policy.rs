//! Fuzz targets of the policy crate:
//!
//! - `shell_split`: the splitter and normaliser on generated and arbitrary command lines:
//!   never panics, is deterministic, keeps `argv`/`dynamic` aligned, and a simple command
//!   printed back (every word single-quoted, assignments and redirections as prefixes) splits
//!   to the same argv, environment and redirections.
//! - `shell_argv`: the direct-argv splitter on arbitrary argvs.
//! - `policy_match`: the gate on generated lines: deterministic; a line followed by more
//!   commands is never judged more leniently than the line alone; a part judged as an argv
//!   (`judge_argv`) gets the decision its printed line gets.
//! - `workspace_paths`: path resolution against a workspace with links in and out and secret
//!   files: a resolved path never leaves the workspace, is never secret, and is where the
//!   kernel's own resolution of an existing path lands.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use steward_fuzz::proptest;
use steward_policy::shell::{self, SimpleCommand};
use steward_policy::{Access, Policy, Workspace, is_secret_path};

mod common;
mod shell_lines;

const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "rbash", "posh", "yash"];

fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `cmd` written back as one shell command: assignments, quoted words, redirections.
fn print(cmd: &SimpleCommand) -> String {
    let mut out: Vec<String> = cmd.env.iter().map(|(n, v)| format!("{n}={}", quote(v))).collect();
    out.extend(cmd.argv.iter().map(|w| quote(w)));
    out.extend(cmd.redirects.iter().map(|t| format!(">{}", quote(t))));
    out.extend(cmd.inputs.iter().map(|t| format!("<{}", quote(t))));
    out.join(" ")
}

/// A simple command whose words are all literal and that the splitter does not open further.
/// A simple command whose printed form means the same on a line of its own. A program named
/// `time` is not: after `|` it is the `time` program (bash reads the keyword only at the start
/// of a pipeline), and printed alone it would be the keyword.
fn printable(cmd: &SimpleCommand) -> bool {
    !cmd.argv.is_empty()
        && !cmd.dynamic.iter().any(|d| *d)
        && !SHELLS.contains(&cmd.program.as_str())
        && cmd.argv.first().is_none_or(|w| w != "time")
}

fn check_split(line: String) -> Result<(), TestCaseError> {
    let first = shell::split(&line);
    prop_assert_eq!(&first, &shell::split(&line), "the splitter is not deterministic");
    let Ok(parts) = first else { return Ok(()) };
    for cmd in &parts {
        prop_assert_eq!(cmd.argv.len(), cmd.dynamic.len(), "argv and dynamic differ in length: {:?}", cmd);
        prop_assert_eq!(cmd.program.is_empty(), cmd.argv.is_empty(), "program and argv disagree: {:?}", cmd);
        if !printable(cmd) {
            continue;
        }
        let printed = print(cmd);
        let back = shell::split(&printed)
            .map_err(|e| TestCaseError::fail(format!("{printed:?} (printed from {cmd:?}) does not split: {e}")))?;
        prop_assert_eq!(back.len(), 1, "{:?} splits into {:?}", printed, back);
        let again = &back[0];
        prop_assert_eq!(&again.argv, &cmd.argv, "argv changes through {:?}", printed);
        prop_assert_eq!(&again.env, &cmd.env, "env changes through {:?}", printed);
        prop_assert_eq!(&again.redirects, &cmd.redirects, "redirects change through {:?}", printed);
        prop_assert_eq!(&again.inputs, &cmd.inputs, "inputs change through {:?}", printed);
    }
    Ok(())
}

fn lines() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => shell_lines::line(),
        1 => any::<String>(),
        1 => prop::collection::vec(
            prop::sample::select(vec![
                " ", "'", "\"", "\\", "$", "(", ")", "{", "}", "`", ";", "&", "|", "<", ">", "#", "\n", "=", "~", "*",
                "a", "ls", "if", "then", "fi", "for", "in", "do", "done", "time", "-p", "env", "bash", "-c", "$(",
                "${", "$'", "<<<", "2>&1", "!",
            ]),
            0..24,
        )
        .prop_map(|p| p.concat()),
    ]
}

fn text_seed(bytes: &[u8]) -> Vec<String> {
    vec![String::from_utf8_lossy(bytes).into_owned()]
}

#[test]
fn fuzz_shell_split() {
    steward_fuzz::run("shell_split", lines(), text_seed, check_split);
}

fn check_argv(argv: Vec<String>) -> Result<(), TestCaseError> {
    let first = shell::split_argv(&argv, None);
    prop_assert_eq!(&first, &shell::split_argv(&argv, None), "split_argv is not deterministic");
    if let Ok(parts) = first {
        for cmd in &parts {
            prop_assert_eq!(cmd.argv.len(), cmd.dynamic.len());
            prop_assert_eq!(cmd.program.is_empty(), cmd.argv.is_empty());
        }
    }
    Ok(())
}

#[test]
fn fuzz_shell_argv() {
    let word = prop_oneof![
        3 => prop::sample::select(vec![
            "env", "time", "nice", "-n", "5", "timeout", "10", "xargs", "-I", "{}", "bash", "-c", "-lc", "sh", "ls",
            "rm", "-rf", "FOO=1", "--", "-", "command", "-v", "exec", "-a", "name", "stdbuf", "-o", "L", "nohup",
            "setsid", "builtin", "ls; rm -rf x", "$(id)", "-u", "X",
        ])
        .prop_map(str::to_string),
        1 => any::<String>(),
    ];
    steward_fuzz::run(
        "shell_argv",
        prop::collection::vec(word, 0..8),
        |bytes| vec![String::from_utf8_lossy(bytes).split('\n').map(str::to_string).collect()],
        check_argv,
    );
}

const POLICY: &str = r#"
[policy]
[[policy.rule]]
name = "no-rm-rf"
tool = "shell_command"
argv = ["rm", "-rf", "**"]
decision = "deny"
[[policy.rule]]
name = "curl-asks"
tool = "shell_command"
argv = ["curl", "**"]
decision = "ask"
[[policy.rule]]
name = "git-status"
tool = "shell_command"
argv = ["git", "status", "**"]
decision = "allow"
[[policy.rule]]
name = "read-only"
tool = "shell_command"
argv = ["{ls,cat,grep,wc,sort,head,echo,true,test}", "**"]
decision = "allow"
"#;

struct Gate {
    _dir: tempfile::TempDir,
    workspace: Workspace,
    policy: Policy,
}

fn gate() -> Gate {
    let (dir, workspace) = common::workspace(&[("a", "a\n"), ("sub/b", "b\n"), (".env", "TOKEN=abcdefgh123\n")]);
    Gate { _dir: dir, workspace, policy: common::policy(POLICY) }
}

/// Programs after which later parts run elsewhere or differently.
const CHANGES_LATER_PARTS: &[&str] = &["cd", "pushd", "popd", "set", "export", "shift"];

fn check_policy(g: &Gate, (first, second): (String, String)) -> Result<(), TestCaseError> {
    let judge = |line: &str| g.policy.judge_command(line, &g.workspace);
    let one = judge(&first);
    prop_assert_eq!(&one, &judge(&first), "the gate is not deterministic");
    let (Ok(parts), Ok(second_parts)) = (shell::split(&first), shell::split(&second)) else { return Ok(()) };
    let both = format!("{first}\n{second}");
    // A line with no command (empty, a comment) asks alone, and runs nothing in a longer line.
    if shell::split(&both).is_ok() && !parts.is_empty() && !second_parts.is_empty() {
        let joined = judge(&both);
        prop_assert!(
            joined.decision >= one.decision,
            "{both:?} is judged {:?} ({}), more leniently than its first line alone: {:?} ({})",
            joined.decision,
            joined.rule,
            one.decision,
            one.rule
        );
        if !parts.iter().any(|c| CHANGES_LATER_PARTS.contains(&c.program.as_str())) {
            let two = judge(&second);
            prop_assert!(
                joined.decision >= two.decision,
                "{both:?} is judged {:?} ({}), more leniently than its second line alone: {:?} ({})",
                joined.decision,
                joined.rule,
                two.decision,
                two.rule
            );
        }
    }
    for cmd in
        parts.iter().filter(|c| printable(c) && c.env.is_empty() && c.redirects.is_empty() && c.inputs.is_empty())
    {
        let printed = cmd.argv.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
        let as_line = judge(&printed);
        let as_argv = g.policy.judge_argv(&cmd.argv, &g.workspace);
        prop_assert_eq!(
            as_line.decision,
            as_argv.decision,
            "{:?} is judged {} as a line and {} as an argv",
            printed,
            as_line.rule,
            as_argv.rule
        );
    }
    Ok(())
}

#[test]
fn fuzz_policy_match() {
    let g = gate();
    steward_fuzz::run(
        "policy_match",
        (shell_lines::line(), shell_lines::line()),
        |bytes| {
            let text = String::from_utf8_lossy(bytes);
            let (a, b) = text.split_once("\n---\n").unwrap_or((&text, "true"));
            vec![(a.to_string(), b.to_string())]
        },
        |pair| check_policy(&g, pair),
    );
}

struct Tree {
    dir: tempfile::TempDir,
    _outside: tempfile::TempDir,
    workspace: Workspace,
    root: PathBuf,
}

/// A workspace with files, a secret, links inside, out and to the secret, and a dangling link.
fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("sub/deep")).unwrap();
    std::fs::write(p.join("a.txt"), "a").unwrap();
    std::fs::write(p.join("sub/b.txt"), "b").unwrap();
    std::fs::write(p.join(".env"), "TOKEN=abcdefgh123").unwrap();
    std::fs::write(outside.path().join("o.txt"), "o").unwrap();
    std::os::unix::fs::symlink(outside.path(), p.join("out")).unwrap();
    std::os::unix::fs::symlink("sub/deep", p.join("in")).unwrap();
    std::os::unix::fs::symlink(".env", p.join("notes")).unwrap();
    std::os::unix::fs::symlink("missing", p.join("dangling")).unwrap();
    std::os::unix::fs::symlink("..", p.join("sub/up")).unwrap();
    std::os::unix::fs::symlink("../..", p.join("sub/deep/top")).unwrap();
    let workspace = Workspace::open(p, &[]).unwrap();
    let root = workspace.root().to_path_buf();
    Tree { dir, _outside: outside, workspace, root }
}

fn path_input(root: &Path) -> impl Strategy<Value = String> + use<> {
    let root = root.display().to_string();
    let component = prop_oneof![
        6 => prop::sample::select(vec![
            "..", ".", "sub", "deep", "a.txt", "b.txt", "out", "o.txt", "in", "notes", ".env", "dangling", "up", "top",
            ".git", "x", "é", "~", ".ENV", ".env.local", "id_rsa", "new.txt",
        ])
        .prop_map(str::to_string),
        1 => "[ -~]{1,6}",
        1 => any::<String>(),
    ];
    (
        prop::sample::select(vec![
            String::new(),
            format!("{root}/"),
            "/".to_string(),
            "./".to_string(),
            "//".to_string(),
        ]),
        prop::collection::vec((component, prop::sample::select(vec!["/", "//", "/./"])), 1..6),
        prop::bool::ANY,
    )
        .prop_map(|(prefix, parts, slash)| {
            let mut out = prefix;
            for (i, (c, sep)) in parts.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                out.push_str(c);
            }
            if slash {
                out.push('/');
            }
            out
        })
}

fn check_path(t: &Tree, input: String) -> Result<(), TestCaseError> {
    for access in [Access::Read, Access::Write] {
        let Ok(resolved) = t.workspace.resolve(&input, access) else { continue };
        prop_assert!(resolved.abs.starts_with(&t.root), "{input:?} resolves outside: {:?}", resolved.abs);
        let rel = resolved.abs.strip_prefix(&t.root).unwrap_or(Path::new(""));
        prop_assert!(!is_secret_path(rel), "{input:?} resolves to the secret {rel:?}");
        prop_assert!(!is_secret_path(Path::new(&resolved.rel)), "{input:?} is the secret {:?}", resolved.rel);
        if let Ok(real) = std::fs::canonicalize(t.root.join(&input)) {
            prop_assert!(real.starts_with(&t.root), "{input:?} is allowed, but the kernel resolves it to {real:?}");
            prop_assert!(
                !is_secret_path(real.strip_prefix(&t.root).unwrap_or(Path::new(""))),
                "{input:?} reaches a secret"
            );
            prop_assert_eq!(&real, &resolved.abs, "{:?}: the kernel and the workspace disagree", input);
        }
        if access == Access::Write {
            let meta = std::fs::symlink_metadata(&resolved.abs);
            prop_assert!(!meta.is_ok_and(|m| m.file_type().is_symlink()), "{input:?}: a write through a link");
        }
    }
    Ok(())
}

#[test]
fn fuzz_workspace_paths() {
    let t = tree();
    let root = t.root.clone();
    steward_fuzz::run(
        "workspace_paths",
        path_input(&root),
        |bytes| {
            let text = String::from_utf8_lossy(bytes);
            vec![text.replace("{root}", &root.display().to_string())]
        },
        |input| check_path(&t, input),
    );
    drop(t.dir);
}
