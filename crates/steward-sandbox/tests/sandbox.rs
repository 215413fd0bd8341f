//! Integration tests of steward-sandbox: env scrub and no login shells (B12), no network,
//! filesystem confinement, refusal, rlimits, timeouts, cancel, caps, doctor.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use steward_sandbox::{ExecOutput, ExecRequest, Protection, SYSTEM_READ_PATHS, SandboxError, doctor, run};
use tokio_util::sync::CancellationToken;

fn req(argv: &[&str]) -> ExecRequest {
    ExecRequest {
        timeout: Duration::from_secs(10),
        max_output_bytes: 64 * 1024,
        ..ExecRequest::new(argv.iter().map(|s| s.to_string()).collect(), PathBuf::from("/"))
    }
}

async fn exec(r: ExecRequest) -> ExecOutput {
    run(r, CancellationToken::new()).await.unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn b12_child_env_has_only_allowed_names() {
    // The planted variables are given to a copy of this test binary that runs this test alone,
    // never set in this process, where other tests read the environment.
    const PLANTED: &str = "STEWARD_TEST_PLANTED_ENV";
    if std::env::var_os(PLANTED).is_none() {
        let name = "b12_child_env_has_only_allowed_names";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(PLANTED, "1")
            .env("OPENAI_API_KEY", "sk-PLACEHOLDER")
            .env("ANTHROPIC_API_KEY", "sk-ant-PLACEHOLDER")
            .env("AWS_SECRET_ACCESS_KEY", "PLACEHOLDER")
            .env("GITHUB_TOKEN", "ghp_PLACEHOLDER")
            .env("MY_FLAG", "1")
            .env("LANG", "C.UTF-8")
            .env("HOME", "/home/user")
            .output()
            .unwrap();
        let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{shown}");
        assert!(shown.contains("1 passed"), "the check did not run in the child:\n{shown}");
        return;
    }
    let mut r = req(&["env"]);
    r.env_allow = vec!["MY_FLAG".into()];
    r.env_set = vec![("STEWARD_CALL".into(), "tc_1".into())];
    let out = exec(r).await;
    assert_eq!(out.exit_code, Some(0), "{}", text(&out.stderr));
    let env = text(&out.stdout);
    let allowed =
        ["PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TZ", "TMPDIR", "SHELL", "MY_FLAG", "STEWARD_CALL"];
    for line in env.lines() {
        let name = line.split('=').next().unwrap_or_default();
        assert!(allowed.contains(&name) || name.starts_with("LC_"), "unexpected variable {name}");
    }
    for must in ["PATH=", "HOME=/home/user", "LANG=C.UTF-8", "MY_FLAG=1", "STEWARD_CALL=tc_1"] {
        assert!(env.lines().any(|l| l.starts_with(must)), "missing {must} in {env}");
    }
    assert!(!env.contains("PLACEHOLDER") && !env.contains("_KEY") && !env.contains("_TOKEN"), "{env}");
}

/// Tries to connect to `port` on loopback with bash's /dev/tcp; prints `connected` or `refused`.
fn connect_argv(port: u16) -> Vec<String> {
    let script = format!("if exec 3<>/dev/tcp/127.0.0.1/{port}; then echo connected; else echo refused; fi");
    vec!["bash".into(), "--noprofile".into(), "--norc".into(), "-c".into(), script]
}

#[tokio::test]
async fn network_is_unavailable_by_default() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut r = req(&[]);
    r.argv = connect_argv(port);
    let out = exec(r.clone()).await;
    assert_eq!(text(&out.stdout).trim(), "refused", "{}", text(&out.stderr));
    assert!(out.profile.contains("netns"), "{}", out.profile);

    // The same command with the network allowed reaches the listener: the check can fail.
    r.network = true;
    let out = exec(r).await;
    assert_eq!(text(&out.stdout).trim(), "connected", "{}", text(&out.stderr));
    assert!(out.profile.contains("net=allowed"), "{}", out.profile);
}

#[tokio::test]
async fn only_loopback_interface_exists() {
    let out = exec(req(&["cat", "/proc/net/dev"])).await;
    let interfaces: Vec<String> =
        text(&out.stdout).lines().skip(2).filter_map(|l| l.split(':').next().map(|s| s.trim().to_string())).collect();
    assert_eq!(interfaces, ["lo"]);
}

/// A shell script whose background process (started as `launch` says, with `{body}` as the
/// command it runs) writes the file `$1/marker` after one second.
fn late_marker(launch: &str) -> String {
    launch.replace("{body}", "sleep 1; echo alive > \"$1/marker\"")
}

/// Runs `script` (given the folder as `$1`, writable) and reports whether the marker
/// appeared within 2.5 s after the call returned.
async fn marker_written_after_call(script: &str, timeout: Duration) -> (ExecOutput, bool) {
    let dir = tempfile::tempdir().unwrap();
    let r = ExecRequest { writable: vec![dir.path().to_path_buf()], timeout, ..sh(script, &[dir.path()]) };
    let out = exec(r).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let written = dir.path().join("marker").exists();
    (out, written)
}

#[tokio::test]
async fn timeout_kills_child_and_grandchild() {
    let script = late_marker("(sh -c '{body}' &) ; sleep 30");
    let started = Instant::now();
    let (out, written) = marker_written_after_call(&script, Duration::from_millis(500)).await;
    assert!(started.elapsed() < Duration::from_secs(6));
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(libc::SIGKILL));
    assert_eq!(out.exit_code, None);
    assert!(!written, "a grandchild outlived the timeout");
    assert!(out.profile.ends_with("timeout=500ms"), "{}", out.profile);
}

/// Every way of leaving the call behind — a plain background job, a new session
/// (`setsid -f`), a double fork, `nohup … &` — ends with the call (PID namespace).
#[tokio::test]
async fn pid_namespace_ends_every_escape_with_the_call() {
    let forms = [
        "sh -c '{body}' >/dev/null 2>&1 &",
        "setsid -f sh -c '{body}' </dev/null >/dev/null 2>&1",
        "(sh -c '(sh -c \"{body}\" &) &' &)",
        "nohup sh -c '{body}' </dev/null >/dev/null 2>&1 &",
    ];
    let runs = forms.map(|form| {
        let script = late_marker(form);
        async move { (form, marker_written_after_call(&script, Duration::from_secs(10)).await) }
    });
    for (form, (out, written)) in futures_join(runs).await {
        assert_eq!(out.exit_code, Some(0), "{form}: {}", text(&out.stderr));
        assert!(out.profile.contains("pidns"), "{}", out.profile);
        assert!(!written, "{form}: a background process outlived the call");
    }
    // The program is PID 2 under the namespace's init, so it signals itself normally.
    let out = exec(req(&["sh", "-c", "echo $$"])).await;
    assert_eq!(text(&out.stdout).trim(), "2");
}

/// Awaits all futures concurrently.
async fn futures_join<F: std::future::Future>(futures: [F; 4]) -> Vec<F::Output> {
    let [a, b, c, d] = futures;
    let (a, b, c, d) = tokio::join!(a, b, c, d);
    vec![a, b, c, d]
}

#[tokio::test]
async fn cancel_kills_the_group() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let watched = pid_file.clone();
    tokio::spawn(async move {
        // Cancel once the grandchild exists (its pid was written).
        while !std::fs::read_to_string(&watched).is_ok_and(|s| s.ends_with('\n')) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        trigger.cancel();
    });
    let marker = dir.path().join("marker");
    let script = format!("(sleep 1; echo alive > {}) & echo $! > {}; sleep 30", marker.display(), pid_file.display());
    let started = Instant::now();
    let r = ExecRequest { writable: vec![dir.path().to_path_buf()], ..req(&["sh", "-c", &script]) };
    let err = run(r, cancel).await.unwrap_err();
    assert!(matches!(err, SandboxError::Cancelled), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(!marker.exists(), "a grandchild survived cancel");
}

#[tokio::test]
async fn output_is_capped_per_stream() {
    let mut r = req(&["sh", "-c", "head -c 100000 /dev/zero; echo err >&2"]);
    r.max_output_bytes = 1000;
    let out = exec(r).await;
    assert_eq!(out.stdout.len(), 1000);
    assert_eq!(text(&out.stderr), "err\n");
    assert!(out.truncated);
    assert_eq!(out.exit_code, Some(0));
}

#[tokio::test]
async fn rlimits_are_set() {
    let mut r = req(&["sh", "-c", "ulimit -c; ulimit -t; ulimit -d"]);
    r.timeout = Duration::from_millis(2500);
    r.memory_bytes = Some(512 * 1024 * 1024);
    let out = exec(r).await;
    assert_eq!(text(&out.stdout), "0\n4\n524288\n", "{}", text(&out.stderr));
    assert!(out.profile.contains("rlimits"));
}

#[tokio::test]
async fn exit_codes_signals_stdin_and_cwd() {
    let out = exec(req(&["sh", "-c", "exit 3"])).await;
    assert_eq!((out.exit_code, out.signal), (Some(3), None));
    let out = exec(req(&["sh", "-c", "kill -TERM $$"])).await;
    assert_eq!((out.exit_code, out.signal), (None, Some(libc::SIGTERM)));
    let out = exec(req(&["cat"])).await;
    assert_eq!((out.exit_code, out.stdout.len()), (Some(0), 0));
    let dir = tempfile::tempdir().unwrap();
    let mut r = req(&["pwd"]);
    r.cwd = dir.path().to_path_buf();
    let out = exec(r).await;
    assert_eq!(PathBuf::from(text(&out.stdout).trim()), dir.path().canonicalize().unwrap());
}

#[tokio::test]
async fn bad_requests_are_refused() {
    let err = run(req(&[]), CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, SandboxError::InvalidRequest(_)), "{err}");
    let mut r = req(&["true"]);
    r.cwd = PathBuf::from("/nonexistent/dir");
    assert!(matches!(run(r, CancellationToken::new()).await.unwrap_err(), SandboxError::InvalidRequest(_)));
    let err = run(req(&["/nonexistent/program"]), CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, SandboxError::Spawn { .. }), "{err}");
}

#[tokio::test]
async fn a_process_that_leaves_the_group_cannot_hold_the_call_open() {
    let started = Instant::now();
    let out = exec(req(&["sh", "-c", "setsid sleep 5 & echo hi"])).await;
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert_eq!(text(&out.stdout), "hi\n");
    // Whether the escaped `sleep` still held the pipe when the group was killed depends on
    // scheduling, so `truncated` may be either; the call must not wait for it either way.
}

/// The Landlock ABI the sandbox used, from the profile (`fs=landlock-v7`).
fn landlock_abi(profile: &str) -> Option<u32> {
    let rest = profile.split(',').find_map(|part| part.strip_prefix("fs=landlock-v"))?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

fn sh(script: &str, args: &[&Path]) -> ExecRequest {
    let mut argv = vec!["sh".to_string(), "-c".into(), script.into(), "sh".into()];
    argv.extend(args.iter().map(|p| p.display().to_string()));
    ExecRequest { argv, ..req(&[]) }
}

#[tokio::test]
async fn fs_writes_only_beneath_writable_paths() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    // Shares the name prefix of `work` but is a different directory: not writable.
    let sibling = root.path().join("work2");
    std::fs::create_dir_all(work.join("sub")).unwrap();
    std::fs::create_dir(&sibling).unwrap();
    std::fs::write(sibling.join("keep"), "original").unwrap();

    let script = r#"echo new > "$1/sub/a" && mkdir "$1/d" && mv "$1/sub/a" "$1/d/b" && echo ok-inside
        echo x > /dev/null && echo ok-devnull
        echo evil > "$2/keep" || echo denied-write
        (: > "$2/keep") || echo denied-truncate
        rm -f "$2/keep" || echo denied-remove
        echo x > "$2/new" || echo denied-create
        mkdir "$3/made-in-root" || echo denied-mkdir"#;
    let r = ExecRequest { writable: vec![work.clone()], ..sh(script, &[&work, &sibling, root.path()]) };
    let out = exec(r).await;
    let stdout = text(&out.stdout);
    for expected in
        ["ok-inside", "ok-devnull", "denied-write", "denied-truncate", "denied-remove", "denied-create", "denied-mkdir"]
    {
        assert!(stdout.lines().any(|l| l == expected), "missing {expected}: {stdout} {}", text(&out.stderr));
    }
    assert_eq!(std::fs::read_to_string(work.join("d/b")).unwrap(), "new\n");
    assert_eq!(std::fs::read_to_string(sibling.join("keep")).unwrap(), "original");
    assert!(!sibling.join("new").exists() && !root.path().join("made-in-root").exists());
    assert!(landlock_abi(&out.profile).is_some_and(|abi| abi >= 3), "{}", out.profile);

    // Nothing writable by default.
    let out = exec(sh(r#"echo x > "$1/f" || echo denied"#, &[&work])).await;
    assert_eq!(text(&out.stdout).trim(), "denied");
    assert!(!work.join("f").exists());
}

#[tokio::test]
async fn fs_reads_limited_when_readable_is_given() {
    let secret_dir = tempfile::tempdir().unwrap();
    std::fs::write(secret_dir.path().join("s"), "hidden").unwrap();
    let system: Vec<PathBuf> = SYSTEM_READ_PATHS.iter().map(PathBuf::from).collect();
    let script = r#"cat "$1/s" || echo denied"#;

    let r = ExecRequest { readable: Some(system.clone()), ..sh(script, &[secret_dir.path()]) };
    let out = exec(r).await;
    assert_eq!(text(&out.stdout).trim(), "denied", "{}", text(&out.stderr));

    let mut with_dir = system;
    with_dir.push(secret_dir.path().to_path_buf());
    let r = ExecRequest { readable: Some(with_dir), ..sh(script, &[secret_dir.path()]) };
    assert_eq!(text(&exec(r).await.stdout), "hidden");
}

#[tokio::test]
async fn bad_sandbox_paths_are_refused() {
    for writable in [PathBuf::from("relative"), PathBuf::from("/nonexistent/steward/writable")] {
        let r = ExecRequest { writable: vec![writable], ..req(&["true"]) };
        let err = run(r, CancellationToken::new()).await.unwrap_err();
        assert!(matches!(err, SandboxError::InvalidRequest(_)), "{err}");
    }
    let r = ExecRequest { env_set: vec![("BASH_ENV".into(), "/etc/profile".into())], ..req(&["true"]) };
    assert!(matches!(run(r, CancellationToken::new()).await.unwrap_err(), SandboxError::InvalidRequest(_)));
}

#[tokio::test]
async fn landlock_also_denies_tcp_and_outside_signals() {
    let out = exec(req(&["true"])).await;
    let Some(abi) = landlock_abi(&out.profile) else { panic!("no Landlock: {}", out.profile) };
    if abi >= 4 {
        assert!(out.profile.contains("+landlock-tcp"), "{}", out.profile);
    }
    if abi >= 6 {
        // A process outside the sandbox cannot be signalled from inside it.
        let mut outside = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let script = format!("kill -TERM {} || echo denied", outside.id());
        let out = exec(req(&["sh", "-c", &script])).await;
        let still_running = outside.try_wait().unwrap().is_none();
        outside.kill().unwrap();
        outside.wait().unwrap();
        assert_eq!(text(&out.stdout).trim(), "denied");
        assert!(still_running);
    }
}

/// A HOME whose startup files all export a fake secret.
fn poisoned_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let export = "export OPENAI_API_KEY=sk-PLACEHOLDER-FROM-PROFILE\n";
    for file in [".bash_profile", ".bash_login", ".profile", ".bashrc", ".zshenv", ".zprofile", ".zshrc"] {
        std::fs::write(home.path().join(file), export).unwrap();
    }
    home
}

#[tokio::test]
async fn b12_login_shells_do_not_source_profile_files() {
    let home = poisoned_home();
    let home_str = home.path().display().to_string();
    let with_home = |argv: &[&str]| ExecRequest { env_set: vec![("HOME".into(), home_str.clone())], ..req(argv) };
    // Control: the poisoned file really exports the secret when sourced.
    let control = exec(with_home(&["bash", "-c", ". \"$HOME/.bash_profile\"; env"])).await;
    assert!(text(&control.stdout).contains("sk-PLACEHOLDER-FROM-PROFILE"), "{}", text(&control.stdout));

    let mut forms: Vec<Vec<&str>> = vec![
        vec!["bash", "-lc", "env | sort"],
        vec!["bash", "-l", "-c", "env | sort"],
        vec!["/usr/bin/bash", "--login", "-c", "env | sort"],
        vec!["bash", "-ilc", "env | sort"],
        vec!["env", "bash", "-lc", "env | sort"],
        vec!["sh", "-lc", "env | sort"],
        vec!["sh", "-l", "-i", "-c", "env | sort"],
    ];
    if Path::new("/usr/bin/dash").exists() {
        forms.push(vec!["dash", "-lc", "env | sort"]);
    }
    if Path::new("/usr/bin/zsh").exists() || Path::new("/bin/zsh").exists() {
        forms.push(vec!["zsh", "-lc", "env | sort"]);
    }
    let allowed = ["PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TZ", "TMPDIR", "SHELL"];
    // Variables a shell sets in its own environment for its children.
    let shell_set = ["PWD", "OLDPWD", "SHLVL", "_"];
    for form in forms {
        let out = exec(with_home(&form)).await;
        let env = text(&out.stdout);
        assert_eq!(out.exit_code, Some(0), "{form:?}: {}", text(&out.stderr));
        assert!(env.contains(&format!("HOME={home_str}")), "{form:?}: {env}");
        assert!(!env.contains("PLACEHOLDER") && !env.contains("_KEY="), "{form:?} leaked: {env}");
        for line in env.lines() {
            let name = line.split('=').next().unwrap_or_default();
            assert!(
                allowed.contains(&name) || shell_set.contains(&name) || name.starts_with("LC_"),
                "{form:?}: unexpected {name}"
            );
        }
        assert!(out.profile.contains("shell=non-login"), "{}", out.profile);
    }
}

#[tokio::test]
async fn b12_unparseable_shell_invocations_are_refused() {
    for argv in [&["bash", "--rcfile", "/etc/profile", "-c", "env"][..], &["env", "-S", "bash -l", "-c", "env"]] {
        let err = run(req(argv), CancellationToken::new()).await.unwrap_err();
        assert!(matches!(err, SandboxError::InvalidRequest(_)), "{argv:?}: {err}");
    }
}

#[tokio::test]
async fn memory_limit_is_a_data_limit_on_by_default() {
    let out = exec(req(&["sh", "-c", "ulimit -d; ulimit -v"])).await;
    assert_eq!(text(&out.stdout), "2097152\nunlimited\n", "2 GiB of data, no address-space limit");
    assert!(out.profile.contains("data=2147483648"), "{}", out.profile);
    let out = exec(ExecRequest { memory_bytes: None, ..req(&["sh", "-c", "ulimit -d"]) }).await;
    assert_eq!(text(&out.stdout).trim(), "unlimited");
    assert!(out.profile.contains("data=unlimited"), "{}", out.profile);

    let alloc = ["dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"];
    assert_eq!(exec(req(&alloc)).await.exit_code, Some(0));
    let limited = ExecRequest { memory_bytes: Some(32 * 1024 * 1024), ..req(&alloc) };
    let out = exec(limited).await;
    assert_ne!(out.exit_code, Some(0), "dd allocated 64 MiB under a 32 MiB limit");
    assert!(out.profile.contains("data=33554432"), "{}", out.profile);
}

#[tokio::test]
async fn doctor_probes_every_protection_on_this_machine() {
    let results = doctor().await;
    let probed: Vec<Protection> = results.iter().map(|r| r.protection).collect();
    assert_eq!(probed, Protection::ALL);
    for result in &results {
        assert!(!result.detail.is_empty());
        eprintln!("{}: enforced={} {}", result.protection, result.enforced, result.detail);
    }
    let enforced = |p: Protection| results.iter().any(|r| r.protection == p && r.enforced);
    // These three never depend on kernel features.
    for p in [Protection::EnvScrub, Protection::Rlimits, Protection::Timeout] {
        assert!(enforced(p), "{p}: {results:?}");
    }
    // The doctor agrees with what `run` does on this machine.
    let fs_run =
        run(ExecRequest { writable: vec![std::env::temp_dir()], ..req(&["true"]) }, CancellationToken::new()).await;
    assert_eq!(enforced(Protection::FsConfine), fs_run.is_ok(), "{results:?}");
    let net_run = run(req(&["true"]), CancellationToken::new()).await;
    assert_eq!(enforced(Protection::NetworkDeny), net_run.is_ok(), "{results:?}");
}

/// Masked files and folders read as nothing whatever program or route reads them; they
/// cannot be written, linked, or unmounted; other files stay readable.
#[tokio::test]
async fn masked_paths_read_as_nothing_by_any_route() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let out_dir = root.join("out");
    std::fs::create_dir_all(root.join(".ssh")).unwrap();
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(root.join(".env"), "OPENAI_API_KEY=sk-MASKED-VALUE-1234\n").unwrap();
    std::fs::write(root.join(".ssh/id_rsa"), "MASKED-PRIVATE-KEY\n").unwrap();
    std::fs::hard_link(root.join(".env"), root.join("linked.txt")).unwrap();
    std::fs::write(root.join("plain.txt"), "visible\n").unwrap();
    let script = r#"cat .env; cat linked.txt; base64 .env; grep -ro . . ; cat .ssh/id_rsa; ls -a .ssh
        echo x > .env || echo denied-write
        ln .env out/copy || echo denied-link
        umount .env || echo denied-umount
        cat plain.txt"#;
    let r = ExecRequest {
        cwd: root.clone(),
        writable: vec![out_dir.clone()],
        mask: vec![root.join(".env"), root.join(".ssh"), root.join("linked.txt")],
        ..sh(script, &[])
    };
    let out = exec(r).await;
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    for secret in ["MASKED-VALUE", "MASKED-PRIVATE", "c2stTUFTS0VE", "T1BFTkFJ"] {
        assert!(!all.contains(secret), "{secret} leaked: {all}");
    }
    // `grep -ro . .` prints one character a line: no line of the secret file may appear.
    assert!(!text(&out.stdout).lines().any(|l| l.starts_with("./.env:") || l.starts_with("./linked.txt:")), "{all}");
    for expected in ["denied-write", "denied-link", "denied-umount", "visible"] {
        assert!(text(&out.stdout).lines().any(|l| l == expected), "missing {expected}: {all}");
    }
    assert!(out.profile.contains("mntns(mask=3"), "{}", out.profile);
    assert_eq!(std::fs::read_to_string(root.join(".env")).unwrap(), "OPENAI_API_KEY=sk-MASKED-VALUE-1234\n");
    assert!(!out_dir.join("copy").exists());

    // Control: without the masks the same command prints the secret.
    let r = ExecRequest { cwd: root.clone(), ..sh("cat .env", &[]) };
    assert!(text(&exec(r).await.stdout).contains("MASKED-VALUE"));
}

/// `read_only` paths stay read-only beneath a writable folder.
#[tokio::test]
async fn read_only_paths_stay_read_only_beneath_writable_folders() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap().join("work");
    std::fs::create_dir_all(work.join(".git/hooks")).unwrap();
    std::fs::write(work.join(".bashrc"), "").unwrap();
    let script = r#"echo x > "$1/.git/hooks/pre-commit" || echo denied-hook
        echo x >> "$1/.bashrc" || echo denied-rc
        echo x > "$1/ok" && echo ok"#;
    let r = ExecRequest {
        writable: vec![work.clone()],
        read_only: vec![work.join(".git/hooks"), work.join(".bashrc")],
        ..sh(script, &[&work])
    };
    let out = exec(r).await;
    assert_eq!(text(&out.stdout), "denied-hook\ndenied-rc\nok\n", "{}", text(&out.stderr));

    assert!(!work.join(".git/hooks/pre-commit").exists());
}

/// The seccomp filter refuses each listed system call with EPERM (called by number from
/// perl, so no C is needed), and `socket(AF_UNIX)` unless the request allows Unix sockets.
#[cfg(target_arch = "x86_64")]
#[tokio::test]
async fn seccomp_refuses_the_listed_system_calls() {
    if !Path::new("/usr/bin/perl").exists() {
        eprintln!("no /usr/bin/perl; skipped");
        return;
    }
    // x86_64 numbers: io_uring_setup, io_uring_enter, ptrace, bpf, keyctl, add_key,
    // request_key, mount, umount2, unshare, setns, pivot_root, perf_event_open, userfaultfd,
    // open_by_handle_at, process_vm_readv, open_tree, move_mount, fsopen.
    let numbers = "425 426 101 321 250 248 249 165 166 272 308 155 298 323 304 310 428 429 430";
    let script = r#"for my $n (split / /, $ARGV[0]) { my $r = syscall($n, 0, 0, 0, 0, 0); exit 0 if $r == 0 && $n == 56; print "$n ", ($r == -1 ? $!+0 : "ok"), "\n" }
        my $r = syscall(56, 0x10000000 | 17, 0, 0, 0, 0); exit 0 if $r == 0; print "clone-newuser ", ($r == -1 ? $!+0 : "ok"), "\n";
        print "clone3 ", (syscall(435, 0, 0) == -1 ? $!+0 : "ok"), "\n";
        print "unix ", (socket(my $s, 1, 1, 0) ? "ok" : $!+0), "\n";
        print "inet ", (socket(my $t, 2, 1, 0) ? "ok" : $!+0), "\n";"#;
    let argv = ["/usr/bin/perl", "-e", script, numbers];
    let out = exec(req(&argv)).await;
    let stdout = text(&out.stdout);
    for n in numbers.split(' ') {
        assert!(stdout.lines().any(|l| l == format!("{n} 1")), "syscall {n} not refused with EPERM: {stdout}");
    }
    assert!(stdout.lines().any(|l| l == "clone-newuser 1"), "{stdout}");
    // clone3 fails with ENOSYS (38) so the C library falls back to clone.
    assert!(stdout.lines().any(|l| l == "clone3 38"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "unix 1"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "inet ok"), "other sockets stay allowed: {stdout}");
    assert!(out.profile.contains("seccomp(unix=denied)"), "{}", out.profile);

    let allowed = exec(ExecRequest { unix_sockets: true, ..req(&argv) }).await;
    assert!(text(&allowed.stdout).lines().any(|l| l == "unix ok"), "{}", text(&allowed.stdout));
    assert!(allowed.profile.contains("seccomp(unix=allowed)"), "{}", allowed.profile);
}

/// A Unix socket listening outside cannot be reached by path from inside.
#[tokio::test]
async fn unix_socket_listening_outside_is_unreachable() {
    if !Path::new("/usr/bin/perl").exists() {
        eprintln!("no /usr/bin/perl; skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let script = r#"use Socket; socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_un($ARGV[0])) or die "connect: $!\n"; print "connected\n""#;
    let path_arg = path.display().to_string();
    let argv = ["/usr/bin/perl", "-e", script, path_arg.as_str()];
    let out = exec(req(&argv)).await;
    assert!(!text(&out.stdout).contains("connected"), "{}", text(&out.stdout));
    assert!(listener.accept().is_err(), "a sandboxed process connected");
    // Control: with Unix sockets allowed the same program connects.
    let out = exec(ExecRequest { unix_sockets: true, ..req(&argv) }).await;
    assert_eq!(text(&out.stdout).trim(), "connected", "{}", text(&out.stderr));
}

/// `/dev` holds only the devices a program uses: no disk or memory device can be read, even
/// by a program running as root; the kept devices work.
#[tokio::test]
async fn dev_holds_only_the_devices_a_program_uses() {
    let out = exec(req(&[
        "sh",
        "-c",
        "ls -A /dev; echo x > /dev/null && head -c 4 /dev/zero | wc -c; ls /proc/self/fd/ >/dev/null && echo fd-ok",
    ]))
    .await;
    let stdout = text(&out.stdout);
    let allowed =
        ["null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts", "shm", "fd", "stdin", "stdout", "stderr"];
    assert!(stdout.ends_with("4\nfd-ok\n"), "{stdout} {}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    let listing = &lines[..lines.len() - 2];
    assert!(listing.iter().all(|name| allowed.contains(name)), "unexpected device in {listing:?}");
    assert!(listing.contains(&"null") && listing.contains(&"urandom"), "{stdout}");
    assert!(out.profile.contains("dev=minimal"), "{}", out.profile);
    // Control: the machine's own /dev has more in it.
    let host: Vec<String> =
        std::fs::read_dir("/dev").unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(host.iter().any(|n| !allowed.contains(&n.as_str())), "{host:?}");
}

/// Folders `a` and `b` (in that order on `PATH`) each holding `prog`, `b`'s printing `second`.
fn two_path_folders(first: &[u8]) -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in [("a", first), ("b", b"#!/bin/sh\necho second\n".as_slice())] {
        std::fs::create_dir(dir.path().join(name)).unwrap();
        let prog = dir.path().join(name).join("prog");
        std::fs::write(&prog, content).unwrap();
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{0}/a:{0}/b:/usr/bin:/bin", dir.path().display());
    (dir, path)
}

fn exits_like_bash(argv: &[&str], path: &str) -> ExecRequest {
    let mut r = req(argv);
    r.env_set.push(("PATH".into(), path.into()));
    r.exec_failure_exits = true;
    r
}

#[tokio::test]
async fn a_program_is_found_and_fails_like_bash_says() {
    // The first `PATH` match has a missing interpreter: bash stops there with 127, it does not
    // run the next match.
    let (_dir, path) = two_path_folders(b"#!/nonexistent/interpreter\n");
    let out = exec(exits_like_bash(&["prog"], &path)).await;
    assert_eq!(out.exit_code, Some(127), "{out:?}");
    assert!(!text(&out.stdout).contains("second"), "{out:?}");
    assert!(text(&out.stderr).contains("/a/prog: cannot execute: required file not found"), "{out:?}");

    // An ELF header on a file that is no binary: 126, and its text is never run by a shell.
    let (_dir, path) = two_path_folders(b"\x7fELF\necho embedded-shell-text\n");
    let out = exec(exits_like_bash(&["prog"], &path)).await;
    assert_eq!(out.exit_code, Some(126), "{out:?}");
    assert!(!text(&out.stdout).contains("embedded-shell-text") && !text(&out.stdout).contains("second"), "{out:?}");
    assert!(text(&out.stderr).contains("/a/prog: cannot execute binary file: Exec format error"), "{out:?}");

    // Not executable in `a`: bash takes the executable one in `b`.
    let (dir, path) = two_path_folders(b"#!/bin/sh\necho first\n");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path().join("a/prog"), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let out = exec(exits_like_bash(&["prog"], &path)).await;
    assert_eq!((out.exit_code, text(&out.stdout).trim()), (Some(0), "second"), "{out:?}");

    // Nowhere on `PATH`: 127 and bash's message, as the call's result.
    let out = exec(exits_like_bash(&["no-such-program-anywhere"], &path)).await;
    assert_eq!(out.exit_code, Some(127), "{out:?}");
    assert_eq!(text(&out.stderr), "bash: no-such-program-anywhere: command not found\n");
}

#[tokio::test]
async fn a_program_that_cannot_be_executed_is_not_blamed_on_the_sandbox() {
    let (_dir, path) = two_path_folders(b"\x7fELF\necho embedded-shell-text\n");
    let mut r = req(&["prog"]);
    r.env_set.push(("PATH".into(), path));
    match run(r, CancellationToken::new()).await {
        // Executed by the sandbox itself (with namespaces): a failed spawn of that program.
        Err(SandboxError::Spawn { source, .. }) => assert_eq!(source.raw_os_error(), Some(libc::ENOEXEC)),
        // Executed by the C library without namespaces, which may hand it to `/bin/sh`.
        Ok(out) => assert!(!out.profile.contains("pidns"), "{out:?}"),
        Err(other) => panic!("{other}"),
    }
}
