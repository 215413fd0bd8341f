//! End to end through the real binary: what a sandboxed `shell_command` can reach. Secret
//! files are covered in the program's mount namespace (so no reader, spelling or encoding can
//! print them), `$HOME` is empty, a process that leaves its session ends with the call, and a
//! Unix socket listening outside cannot be reached.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::Value;

/// `[shell]` enabled, and rules allowing each named program with any arguments.
fn allow_programs(env: &Env, programs: &[&str]) {
    let mut config = String::from("[shell]\nenabled = true\n");
    for program in programs {
        config.push_str(&format!(
            "[[policy.rule]]\nname = \"{program}-ok\"\ntool = \"shell_command\"\nargv = [\"{program}\", \"**\"]\ndecision = \"allow\"\n"
        ));
    }
    env.user_config(&config);
}

/// Runs one round of `shell_command` calls and returns the events.
fn run_commands(env: &Env, calls: &[(&str, &str)]) -> (std::process::Output, Vec<Value>) {
    let mut text = String::from("[[round]]\n");
    for (id, cmd) in calls {
        text.push_str(&format!(
            "[[round.tool_call]]\nid = \"{id}\"\nname = \"shell_command\"\narguments = {{ command = {cmd:?} }}\n"
        ));
    }
    text.push_str("[[round]]\ntext = \"done\"\n");
    let path = scenario(env, &text);
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    (out, evs)
}

/// The completed call's output (the call must have run).
fn output_of<'a>(evs: &'a [Value], id: &str) -> &'a str {
    let done = evs
        .iter()
        .find(|e| e["event"] == "tool_completed" && e["call_id"] == id)
        .unwrap_or_else(|| panic!("{id} did not complete: {evs:?}"));
    done["output"].as_str().unwrap_or_default()
}

#[test]
fn secret_files_reach_no_allowed_reader_by_any_route() {
    let env = Env::new();
    let secret = "sk-live-MASKTEST-98765abcdef";
    env.write(".env", &format!("OPENAI_API_KEY={secret}\n"));
    env.write("src/app.py", "print('hello')\n");
    std::fs::hard_link(env.ws().join(".env"), env.ws().join("notes.txt")).unwrap();
    // The user's home (HOME of the steward process) holds a private key.
    let ssh = env.dir.path().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY-----\nHOMEKEY-b3BlbnNzaC1rZXkt-4242\n").unwrap();
    allow_programs(&env, &["cat", "grep", "base64", "sh"]);
    // A script the gate cannot look into reads the home by absolute path and through `$HOME`.
    let home = env.dir.path().display().to_string();
    env.write(
        "show.sh",
        &format!("cat {home}/.ssh/id_rsa; cat \"$HOME/.ssh/id_rsa\"; grep -r HOMEKEY {home}; ls -A ~\n"),
    );
    // The gate refuses the hard link by name where it sees it; a script reads it where the
    // gate cannot look.
    env.write("link.sh", "cat notes.txt; base64 notes.txt\n");
    let (out, evs) = run_commands(
        &env,
        &[
            ("g1", "grep -ro . ."),
            ("c1", "cat notes.txt"),
            ("b1", "base64 notes.txt"),
            ("b2", "base64 .env"),
            ("h1", "cat ~/.ssh/id_rsa"),
            ("h2", "sh show.sh"),
            ("l1", "sh link.sh"),
            ("p1", "cat src/app.py"),
        ],
    );
    // The gate already stops the spellings it can see (`base64 .env`, `~`); the sandbox stops
    // the ones it cannot: another name of the file, every file at once, the home by path.
    let all_events_of = |id: &str| -> String {
        evs.iter().filter(|e| e["call_id"] == id).map(Value::to_string).collect::<Vec<_>>().join("\n")
    };
    // One character a line: no line of `.env` or its hard link may appear at all.
    let grep = output_of(&evs, "g1");
    assert!(grep.contains("./src/app.py:h"), "grep ran over the workspace: {grep}");
    assert!(!grep.lines().any(|l| l.starts_with("./.env:") || l.starts_with("./notes.txt:")), "{grep}");
    let linked = output_of(&evs, "l1");
    assert!(
        !linked.contains("MASKTEST") && !linked.contains("T1BFTkFJX0FQSV9LRVk9"),
        "the hard link read from a script: {linked}"
    );
    let from_home = output_of(&evs, "h2");
    assert!(!from_home.contains("HOMEKEY-b3B") && from_home.contains("No such file"), "{from_home}");
    assert!(
        from_home.contains("ws") && !from_home.contains(".ssh\n"),
        "only the workspace is left in $HOME: {from_home}"
    );
    for id in ["c1", "b1", "b2", "h1"] {
        let shown = all_events_of(id);
        assert!(!shown.contains("MASKTEST") && !shown.contains("HOMEKEY-b3B"), "{shown}");
    }
    assert!(output_of(&evs, "p1").contains("print('hello')"), "ordinary files stay readable");
    for needle in [secret, "MASKTEST", "HOMEKEY-b3B", "T1BFTkFJX0FQSV9LRVk9"] {
        assert!(!stdout(&out).contains(needle), "{needle} reached the events");
        assert!(!contains_bytes(&db(&env), needle), "{needle} reached the database");
    }
    // The files themselves are untouched.
    assert!(env.read(".env").contains(secret));

    // Control: with the home shown, the same script reads the key (the check can fail); the
    // redactor then catches the private-key block, the last guard.
    let mut config = std::fs::read_to_string(env.dir.path().join("xdg/steward/config.toml")).unwrap();
    config.insert_str(0, "[sandbox]\nshow_home = true\n");
    env.user_config(&config);
    let (_, evs) = run_commands(&env, &[("h3", "sh show.sh")]);
    let shown = output_of(&evs, "h3");
    assert!(!shown.contains("No such file") && shown.contains("[REDACTED]"), "{shown}");
}

/// True when a process whose command line contains `marker` is running.
fn process_running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(marker))
    })
}

#[test]
fn a_process_that_starts_its_own_session_ends_with_the_call() {
    let env = Env::new();
    allow_programs(&env, &["setsid", "nohup", "sleep"]);
    // Distinct durations identify the escaped processes on this machine.
    let (_, evs) =
        run_commands(&env, &[("s1", "setsid -f sleep 731.5151"), ("n1", "nohup sleep 732.5151 >/dev/null 2>&1 &")]);
    output_of(&evs, "s1");
    output_of(&evs, "n1");
    std::thread::sleep(Duration::from_millis(500));
    for marker in ["sleep 731.5151", "sleep 732.5151"] {
        assert!(!process_running(marker), "`{marker}` outlived its call");
    }
}

#[test]
fn a_unix_socket_listening_outside_cannot_be_reached() {
    if !std::path::Path::new("/usr/bin/perl").exists() {
        eprintln!("no /usr/bin/perl; skipped");
        return;
    }
    let env = Env::new();
    // Outside the (hidden) home, so only the socket filter stands in the way.
    let socket_dir = tempfile::tempdir().unwrap();
    let socket = socket_dir.path().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    allow_programs(&env, &["perl"]);
    // A script file: code given inline (`perl -e`) asks whatever rule allows `perl`.
    env.write(
        "connect.pl",
        &format!(
            "use Socket;\nsocket(my $s, PF_UNIX, SOCK_STREAM, 0) or die qq(socket: $!\\n);\n\
             connect($s, pack_sockaddr_un(q({}))) or die qq(connect: $!\\n);\nprint qq(connected\\n);\n",
            socket.display()
        ),
    );
    let script = "perl connect.pl";
    let (_, evs) = run_commands(&env, &[("u1", script)]);
    let output = output_of(&evs, "u1");
    assert!(!output.contains("connected\n") && output.contains("socket: Operation not permitted"), "{output}");
    assert!(listener.accept().is_err(), "a sandboxed command connected to the socket");

    // Control: `[shell] unix_sockets = true` lets the same command connect.
    let config = std::fs::read_to_string(env.dir.path().join("xdg/steward/config.toml")).unwrap();
    env.user_config(&config.replace("[shell]\nenabled = true\n", "[shell]\nenabled = true\nunix_sockets = true\n"));
    let (_, evs) = run_commands(&env, &[("u2", script)]);
    assert!(output_of(&evs, "u2").contains("connected"), "{}", output_of(&evs, "u2"));
}

/// A `[[tool]]` runs in the same sandbox: its fixed argv reading every file of the workspace
/// (`grep -r`) finds the secret file and its hard link empty.
#[test]
fn a_command_tool_reads_no_secret_file_either() {
    let env = Env::new();
    env.write(".env", "DB_PASSWORD=tool-route-secret-31337\n");
    env.write("src/main.rs", "fn main() {}\n");
    std::fs::hard_link(env.ws().join(".env"), env.ws().join("backup.txt")).unwrap();
    env.user_config(
        "[[tool]]\nname = \"grep_all\"\ndescription = \"Search every file.\"\ncommand = [\"grep\", \"-r\", \"-e\", \"=\", \"-e\", \"fn\", \".\"]\nrisk = \"low\"\n\
         [[policy.rule]]\nname = \"grep-all-ok\"\ntool = \"grep_all\"\ndecision = \"allow\"\n",
    );
    let path = scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nid = \"t1\"\nname = \"grep_all\"\narguments = {}\n[[round]]\ntext = \"done\"\n",
    );
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &path, "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let output = output_of(&evs, "t1");
    assert!(output.contains("./src/main.rs:fn main"), "the tool ran over the workspace: {output}");
    assert!(!output.contains(".env:") && !output.contains("backup.txt:"), "{output}");
    assert!(!stdout(&out).contains("tool-route-secret") && !contains_bytes(&db(&env), "tool-route-secret"));
}
