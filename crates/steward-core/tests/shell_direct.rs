//! `shell_command` runs a line that needs no shell directly: the same output, exit status
//! and environment as through bash, the same sandbox, and bash for anything else.

use crate::common;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;
use steward_tools::Network;
use steward_tools::{ShellTool, Visible, direct_argv};
use steward_tools::{Tool, ToolContext};

fn context(root: &Path) -> ToolContext {
    common::tool_context(root, "steward-shell-direct-snapshots")
}

/// A workspace with a file, a secret `.env`, a writable `out/` and an executable script.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    fs::create_dir_all(ws.join("out")).unwrap();
    fs::write(ws.join("notes.txt"), "first line\nsecond line\n").unwrap();
    fs::write(ws.join(".env"), "TOKEN=direct-path-secret\n").unwrap();
    // Tries to connect to the port given; prints `connected` or `refused`.
    let probe = ws.join("probe.sh");
    fs::write(&probe, "#!/bin/bash\nif exec 3<>/dev/tcp/127.0.0.1/$1; then echo connected; else echo refused; fi\n")
        .unwrap();
    fs::set_permissions(&probe, fs::Permissions::from_mode(0o755)).unwrap();
    (dir, ws)
}

/// Runs `line` with `tool`: `(content, sandbox profile)`.
async fn run(tool: &ShellTool, ctx: &ToolContext, line: &str) -> (String, String) {
    let out = tool.run(&json!({ "command": line }), ctx).await.unwrap();
    (out.content, out.sandbox)
}

#[tokio::test]
async fn a_line_without_shell_syntax_runs_directly_with_what_bash_would_give() {
    let (_dir, ws) = workspace();
    let ctx = context(&ws);
    let tool = ShellTool::new(vec![ws.join("out")], Network::Off, None, false);
    // Each line runs directly; the same line with its program quoted needs bash.
    for line in [
        "cat notes.txt",
        "head -n 1 notes.txt",
        "wc -c notes.txt .env",
        "ls -a",
        "ls no-such-file",
        "cat .env",
        "id -u",
        "sleep 0",
        "printenv",
    ] {
        let (direct, direct_profile) = run(&tool, &ctx, line).await;
        let (first, rest) = line.split_once(' ').unwrap_or((line, ""));
        let (through_bash, bash_profile) = run(&tool, &ctx, &format!("'{first}' {rest}")).await;
        assert!(direct_profile.ends_with(",shell=skipped"), "{line}: {direct_profile}");
        assert!(!bash_profile.contains("shell=skipped") && bash_profile.contains("shell=non-login"), "{bash_profile}");
        assert_eq!(direct_profile.trim_end_matches(",shell=skipped"), bash_profile.replace(",shell=non-login", ""));
        if first == "printenv" {
            // Same variables (their order is the program's own).
            let sorted = |text: &str| {
                let mut lines: Vec<String> = text.lines().map(String::from).collect();
                lines.sort();
                lines
            };
            assert_eq!(sorted(&direct), sorted(&through_bash), "{line}");
            assert!(direct.contains("SHLVL=0") && direct.contains("PWD=") && direct.contains("_=/"), "{direct}");
        } else {
            assert_eq!(direct, through_bash, "{line}");
        }
        assert!(!direct.contains("direct-path-secret"), "{line}: {direct}");
    }
}

#[tokio::test]
async fn the_direct_path_keeps_every_protection() {
    let (dir, ws) = workspace();
    let ctx = context(&ws);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = dir.path().join("outside.txt");

    // Answers every connection with `connected`.
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            use std::io::{Read, Write};
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\nconnected\n");
        }
    });
    let probe = format!("curl -sS --max-time 5 http://127.0.0.1:{port}/");

    let tool = ShellTool::new(vec![ws.join("out")], Network::Off, None, false);
    let (content, profile) = run(&tool, &ctx, "cat .env notes.txt").await;
    // The `.env` is masked (Steward's own folders may add masks while other tests create them).
    assert!(
        profile.ends_with(",shell=skipped") && profile.contains("mntns(mask=") && !profile.contains("mask=0"),
        "{profile}"
    );
    assert!(!content.contains("direct-path-secret") && content.contains("first line"), "{content}");

    let (content, profile) = run(&tool, &ctx, &probe).await;
    assert!(profile.ends_with(",shell=skipped") && profile.contains("netns"), "{profile}");
    assert!(!content.contains("connected"), "{content}");

    let (content, _) = run(&tool, &ctx, &format!("touch {} out/made", outside.display())).await;
    assert!(!outside.exists(), "a write outside the writable folder went through: {content}");
    assert!(ws.join("out/made").exists(), "{content}");

    // Controls: with the network the probe connects, and bash sees the same secret mask.
    let networked = ShellTool::new(Vec::new(), Network::All, None, false);
    let (content, profile) = run(&networked, &ctx, &probe).await;
    assert!(profile.ends_with(",shell=skipped") && content.contains("connected"), "{profile}: {content}");
    let (content, _) = run(&tool, &ctx, "'cat' .env").await;
    assert!(!content.contains("direct-path-secret"), "{content}");
}

#[test]
fn anything_a_shell_must_read_keeps_bash() {
    let (_dir, ws) = workspace();
    let path = std::env::var_os("PATH");
    let shown = Visible { home: None, keep: &[], mask: &[] };
    let direct = |line: &str| direct_argv(line, path.as_deref(), &ws, &shown, &[]);
    let plain = direct("cat -n notes.txt").expect("a plain line runs directly");
    assert_eq!(plain.argv, ["cat", "-n", "notes.txt"]);
    for line in [
        "./probe.sh 80",
        "/usr/bin/cat notes.txt",
        "cat *.txt",
        "cat note?.txt",
        "ls [ab]",
        "ls {a,b}",
        "cat $HOME",
        "cat ~/x",
        "cat 'notes.txt'",
        "cat \"notes.txt\"",
        "cat notes\\.txt",
        "cat notes.txt > out/x",
        "cat < notes.txt",
        "cat notes.txt | wc",
        "ls && ls",
        "ls; ls",
        "ls\nls",
        "ls &",
        "(ls)",
        "ls # comment",
        "FOO=1 ls",
        "env ls",
        "env",
        "env -0",
        "%1",
        "%cat",
        "nice ls",
        "time ls",
        "cd /",
        "echo hi",
        "true",
        "test -f x",
        "bash -c ls",
        "sh notes.txt",
        "no-such-program-anywhere",
        "notes.txt",
        "",
    ] {
        assert_eq!(direct(line), None, "{line:?} must go through bash");
    }
    // A line whose program the sandbox hides, or a variable bash sets that is passed through.
    let home = ws.parent().unwrap().to_path_buf();
    let hidden = Visible { home: Some(&home), keep: &[], mask: &[] };
    let elsewhere = tempfile::tempdir().unwrap();
    let bin = ws.join("bin");
    fs::create_dir(&bin).unwrap();
    fs::copy(ws.join("probe.sh"), bin.join("probe")).unwrap();
    let in_ws = std::ffi::OsString::from(format!("{}:/usr/bin:/bin", bin.display()));
    assert_eq!(direct_argv("probe 80", Some(&in_ws), &ws, &hidden, &[]).map(|d| d.argv.len()), Some(2));
    assert_eq!(direct_argv("probe 80", Some(&in_ws), elsewhere.path(), &hidden, &[]), None);
    assert_eq!(direct_argv("cat notes.txt", path.as_deref(), &ws, &shown, &["SHLVL".to_string()]), None);
    assert_eq!(direct_argv("cat notes.txt", Some(std::ffi::OsStr::new("bin:/usr/bin")), &ws, &shown, &[]), None);
}

/// A `PATH` folder in the workspace holding `name`, an executable `#!` script.
fn path_with(ws: &Path, name: &str) -> (PathBuf, std::ffi::OsString) {
    let bin = ws.join("bin");
    fs::create_dir_all(&bin).unwrap();
    fs::write(bin.join(name), "#!/bin/sh\necho ran\n").unwrap();
    fs::set_permissions(bin.join(name), fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::ffi::OsString::from(format!("{}:/usr/bin:/bin", bin.display()));
    (bin, path)
}

#[test]
fn a_program_the_sandbox_masks_or_bash_runs_itself_keeps_bash() {
    let (_dir, ws) = workspace();
    let (bin, path) = path_with(&ws, "tool");
    path_with(&ws, "%job");
    let shown = Visible { home: None, keep: &[], mask: &[] };
    assert!(direct_argv("tool", Some(&path), &ws, &shown, &[]).is_some());
    // Masked, by itself or by its folder: what the program is must not choose the route.
    for mask in [bin.join("tool"), bin.clone()] {
        let masked = Visible { home: None, keep: &[], mask: std::slice::from_ref(&mask) };
        assert_eq!(direct_argv("tool", Some(&path), &ws, &masked, &[]), None, "{}", mask.display());
    }
    // `%job` is bash's `fg %job`, whatever `PATH` holds.
    assert_eq!(direct_argv("%job", Some(&path), &ws, &shown, &[]), None);
    // A FIFO on `PATH` is not looked into.
    let fifo = bin.join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    fs::set_permissions(&fifo, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(direct_argv("fifo", Some(&path), &ws, &shown, &[]), None);
}

#[tokio::test]
async fn a_program_written_as_a_path_or_env_with_any_option_goes_through_bash() {
    let (_dir, ws) = workspace();
    let ctx = context(&ws);
    let tool = ShellTool::new(vec![ws.join("out")], Network::Off, None, false);
    // The masked `.env`, made to look like a program: bash reads the (empty) mask, and the
    // route taken does not depend on what the real file holds.
    fs::write(ws.join(".env"), "#!/bin/sh\necho direct-path-secret\n").unwrap();
    fs::set_permissions(ws.join(".env"), fs::Permissions::from_mode(0o755)).unwrap();
    for line in ["./.env", "./probe.sh 1"] {
        let (content, profile) = run(&tool, &ctx, line).await;
        assert!(!profile.contains("shell=skipped") && profile.contains("shell=non-login"), "{line}: {profile}");
        assert!(!content.contains("direct-path-secret"), "{content}");
    }
    // `env` options the sandbox does not read in front of a shell: bash runs them as before.
    for line in ["env -0", "env -v", "env --debug", "env --null", "env --unset HOME"] {
        let out = tool.run(&json!({ "command": line }), &ctx).await;
        let out = out.unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(out.sandbox.contains("shell=non-login") && !out.sandbox.contains("shell=skipped"), "{line}");
        assert!(out.content.contains("PATH="), "{line}: {}", out.content);
    }
}
