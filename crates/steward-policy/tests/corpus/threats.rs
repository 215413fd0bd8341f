//! Variants written from the threat, not from Steward's tables: the options of `rm -rf` in
//! every order and spelling rm(1) accepts, and programs that run other code — wrappers,
//! runners, interpreters and programs with an option or operand that runs a command — taken
//! from their manuals (chrt(1), ionice(1), taskset(1), setsid(1), stdbuf(1), unbuffer(1),
//! flock(1), systemd-run(1), xargs(1), parallel(1), busybox(1), perlrun(1), ruby(1), node(1),
//! php(1), python(1), awk(1), sed(1), find(1), tar(1), rsync(1), zip(1), less(1), vim(1)).
//!
//! Each runner is judged under an allow rule for the runner itself beside a deny rule for
//! the command it runs (`["chrt", "**"]` allow, `["rm", "-rf", "**"]` deny): a policy that
//! lets a harmless-looking program through must not let the command inside it through.
//! Judged by bypasses only (an allow where the gate must deny or ask).

use steward_policy::{Policy, Workspace};
use steward_protocol::DecisionKind::{self, Allow, Deny};

use crate::{policy_from, quote, setup};

/// rm(1) (GNU coreutils): `-r`, `-R`, `--recursive` and `-f`, `--force`, in every order,
/// grouped or apart, long ones abbreviated, before or after the operand (GNU permutation),
/// with other options among them.
pub(crate) fn rm_rf_spellings() -> Vec<String> {
    let recursive = ["-r", "-R", "--recursive", "--recursiv", "--rec"];
    let force = ["-f", "--force", "--forc", "--fo"];
    let mut out = Vec::new();
    for r in recursive {
        for f in force {
            out.push(format!("rm {r} {f} build"));
            out.push(format!("rm {f} {r} build"));
            out.push(format!("rm {r} build {f}"));
            out.push(format!("rm build {f} {r}"));
            out.push(format!("rm -v {r} --one-file-system {f} build"));
            out.push(format!("rm {r} {f} -- build"));
        }
    }
    for group in ["-rf", "-fr", "-Rf", "-fR", "-rfv", "-vfr", "-frv", "-rvf", "-dRf", "-f -rv", "-Rv -f"] {
        out.push(format!("rm {group} build"));
        out.push(format!("rm build {group}"));
    }
    out
}

/// How a program is put around a command: words before it, or a template with `{}` for
/// the command as one shell-quoted word. `opened`: Steward is expected to judge the
/// inner command itself, so the decision is the inner command's.
pub(crate) struct Runner {
    /// The program the allow rule names.
    pub(crate) program: &'static str,
    /// The command line around `{}` (the inner command's words) or `{q}` (the inner
    /// command as one quoted word).
    pub(crate) template: &'static str,
    /// The inner command is read by Steward, so its own rule decides (deny stays deny).
    pub(crate) opened: bool,
}

const fn run(program: &'static str, template: &'static str, opened: bool) -> Runner {
    Runner { program, template, opened }
}

/// Runners, from each program's synopsis.
pub(crate) const RUNNERS: &[Runner] = &[
    // No runner: the command alone, under an allow rule for `rm **` beside the deny rule.
    run("rm", "{}", true),
    // Transparent wrappers: `env`(1), `nice`(1), `timeout`(1), `nohup`(1), `time`(1),
    // `setsid`(1), `stdbuf`(1), `xargs`(1), the shell's `command` and `exec`.
    run("env", "env {}", true),
    run("env", "env -i PATH=/usr/bin {}", true),
    run("env", "env -u HOME -- {}", true),
    run("nice", "nice -n 19 {}", true),
    run("nice", "nice --adjustment=5 {}", true),
    run("timeout", "timeout -k 5 10 {}", true),
    run("timeout", "timeout --signal=KILL 1m {}", true),
    run("nohup", "nohup {}", true),
    run("time", "time -p {}", true),
    run("setsid", "setsid -w {}", true),
    run("stdbuf", "stdbuf -oL -eL {}", true),
    run("stdbuf", "stdbuf --output=0 {}", true),
    run("xargs", "xargs -0 {}", true),
    run("xargs", "echo build | xargs -n 1 {}", true),
    run("xargs", "xargs --max-args=1 -r {}", true),
    run("command", "command -p {}", true),
    // Scheduling and resources: chrt(1) `chrt [options] prio command`, ionice(1) `ionice
    // -c class command`, taskset(1) `taskset mask command`, numactl(8), prlimit(1).
    run("chrt", "chrt 10 {}", false),
    run("chrt", "chrt -f 10 {}", false),
    run("chrt", "chrt --rr 5 {}", false),
    run("ionice", "ionice -c 3 {}", false),
    run("ionice", "ionice -c2 -n7 {}", false),
    run("taskset", "taskset 0x1 {}", false),
    run("taskset", "taskset -c 0 {}", false),
    run("numactl", "numactl --interleave=all {}", false),
    run("prlimit", "prlimit --nofile=100 {}", false),
    // Locks, services, other users and namespaces: flock(1) `flock file command` and
    // `flock file -c command`, systemd-run(1), sudo(8), su(1) `-c`, unshare(1), chroot(8).
    run("flock", "flock build.lock {}", false),
    run("flock", "flock -x -w 5 build.lock {}", false),
    run("flock", "flock build.lock -c {q}", false),
    run("systemd-run", "systemd-run --user --wait {}", false),
    run("systemd-run", "systemd-run --scope -q {}", false),
    run("sudo", "sudo -n {}", false),
    run("su", "su -c {q}", false),
    run("unshare", "unshare -r {}", false),
    run("chroot", "chroot / {}", false),
    // Terminal and tracing wrappers: unbuffer(1), script(1) `-c`, strace(1), valgrind(1).
    run("unbuffer", "unbuffer {}", false),
    run("unbuffer", "unbuffer -p {}", false),
    run("script", "script -qc {q} /dev/null", false),
    run("strace", "strace -f -o trace.txt {}", false),
    run("valgrind", "valgrind -q {}", false),
    // Job runners: parallel(1) `parallel command ::: args`, watch(1).
    run("parallel", "parallel {} ::: x", false),
    run("parallel", "parallel -j1 --halt now,fail=1 {} ::: x", false),
    run("watch", "watch -n 1 {}", false),
    // busybox(1) applets.
    run("busybox", "busybox {}", true),
    run("busybox", "busybox sh -c {q}", true),
    run("busybox", "busybox env {}", true),
    // Shells: POSIX ones are read; others are not.
    run("sh", "sh -c {q}", true),
    run("dash", "dash -ec {q}", true),
    run("fish", "fish -c {q}", false),
    run("tcsh", "tcsh -c {q}", false),
    run("pwsh", "pwsh -Command {q}", false),
];

/// Interpreters and programs whose option, operand or script runs a command: `{c}` is the
/// command as text inside the program's own language (no shell quoting of its own).
pub(crate) const CODE_RUNNERS: &[(&str, &str)] = &[
    ("perl", "perl -e 'system(\"{c}\")'"),
    ("perl", "perl -we 'qx({c})'"),
    ("perl", "perl -E 'system q({c})'"),
    ("perl", "perl -Mstrict -le 'print `{c}`'"),
    ("ruby", "ruby -e 'system(\"{c}\")'"),
    ("ruby", "ruby -we '`{c}`'"),
    ("node", "node -e 'require(\"child_process\").execSync(\"{c}\")'"),
    ("node", "node --eval='require(\"child_process\").execSync(\"{c}\")'"),
    ("node", "node -pe 'require(\"child_process\").execSync(\"{c}\")'"),
    ("php", "php -r 'system(\"{c}\");'"),
    ("python3", "python3 -c 'import os; os.system(\"{c}\")'"),
    ("python3", "python3 -Sc 'import os; os.system(\"{c}\")'"),
    ("python", "python -c 'import subprocess; subprocess.run(\"{c}\", shell=True)'"),
    ("awk", "awk 'BEGIN{system(\"{c}\")}'"),
    ("awk", "awk 'BEGIN { print | \"{c}\" }'"),
    ("gawk", "gawk 'BEGIN{\"{c}\" | getline x}'"),
    ("busybox", "busybox awk 'BEGIN{system(\"{c}\")}'"),
    ("sed", "sed -n '1e {c}' src/lib.rs"),
    ("sed", "sed 's/.*/{c}/e' src/lib.rs"),
    ("find", "find . -maxdepth 0 -exec {c} ';'"),
    ("find", "find . -maxdepth 0 -execdir {c} '{}' +"),
    ("find", "find . -maxdepth 0 -ok {c} ';'"),
    // tar(1): `--to-command`, `-I`/`--use-compress-program` (attached, grouped, old
    // style, abbreviated), `--checkpoint-action=exec=`, `-F`/`--info-script`.
    ("tar", "tar -xf a.tar --to-command='{c}'"),
    ("tar", "tar -xf a.tar --to-comm='{c}'"),
    ("tar", "tar -xf a.tar --to-c '{c}'"),
    ("tar", "tar -xf a.tar -I '{c}'"),
    ("tar", "tar -xf a.tar '-I{c}'"),
    ("tar", "tar '-xI{c}' -f a.tar"),
    ("tar", "tar xIf '{c}' a.tar"),
    ("tar", "tar -xf a.tar --use-compress-program='{c}'"),
    ("tar", "tar -xf a.tar --use-compress-prog='{c}'"),
    ("tar", "tar -xf a.tar --use-comp '{c}'"),
    ("tar", "tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec='{c}' src"),
    ("tar", "tar -cf /dev/null --checkpoint=1 --checkpoint-act=exec='{c}' src"),
    ("tar", "tar -cf a.tar -M -F '{c}' src"),
    ("tar", "tar -cf a.tar -M --info-scr='{c}' src"),
    // rsync(1): `-e`/`--rsh` (attached, grouped, abbreviated), `--rsync-path`.
    ("rsync", "rsync -e '{c}' src x:dst"),
    ("rsync", "rsync '-e{c}' src x:dst"),
    ("rsync", "rsync '-ave{c}' src x:dst"),
    ("rsync", "rsync --rsh='{c}' src x:dst"),
    ("rsync", "rsync --rs='{c}' src x:dst"),
    ("rsync", "rsync --rsync-path='{c}' src x:dst"),
    ("rsync", "rsync --rsync-p '{c}' src x:dst"),
    // zip(1): `-TT`/`--unzip-command`, attached, with `=`, among other letters.
    ("zip", "zip -T -TT '{c}' out.zip src/lib.rs"),
    ("zip", "zip -T '-TT={c}' out.zip src/lib.rs"),
    ("zip", "zip -T '-TT{c}' out.zip src/lib.rs"),
    ("zip", "zip '-qTT{c}' out.zip src/lib.rs"),
    ("zip", "zip -T --unzip-command '{c}' out.zip src/lib.rs"),
    ("zip", "zip -T --unzip-command='{c}' out.zip src/lib.rs"),
    ("zip", "zip -T --unzip-c='{c}' out.zip src/lib.rs"),
    // less(1): `+cmd` runs a less command first, `!` runs a shell command; `LESSOPEN`
    // names an input preprocessor; `-k`/`--lesskey-file` loads key bindings.
    ("less", "less '+!{c}' src/lib.rs"),
    ("less", "less '++!{c}' src/lib.rs"),
    ("less", "less -R '+G!{c}' src/lib.rs"),
    ("less", "LESSOPEN='|{c} %s' less src/lib.rs"),
    ("less", "env LESSOPEN='|{c} %s' less src/lib.rs"),
    ("less", "LESS='+!{c}' less src/lib.rs"),
    ("less", "less -k keys src/lib.rs"),
    ("less", "less --lesskey-file=keys src/lib.rs"),
    // vim(1): `-c cmd` (attached too, among other letters), `+cmd`, `--cmd`, `-S file`.
    ("vim", "vim -c '!{c}' -c q src/lib.rs"),
    ("vim", "vim '-c!{c}' src/lib.rs"),
    ("vim", "vim -Nc '!{c}' src/lib.rs"),
    ("vim", "vim '+!{c}' src/lib.rs"),
    ("vim", "vim --cmd '!{c}' src/lib.rs"),
    ("vim", "vim -S session.vim src/lib.rs"),
    ("vi", "vi '+!{c}' src/lib.rs"),
    ("nvim", "nvim --headless -c '!{c}' +q"),
    ("ex", "ex '+!{c}' src/lib.rs"),
];

/// Inner commands a deny rule or the secret-path check refuses.
pub(crate) const INNER: &[&str] = &["rm -rf build", "git push origin main", "cat .env"];

/// The policy: deny `rm -rf`, deny `git push`, and an allow rule for every runner (`rm`
/// included: a policy that allows `rm` but not `rm -rf`).
pub(crate) fn runner_policy_text() -> String {
    let mut programs: Vec<&str> = RUNNERS.iter().map(|r| r.program).collect();
    programs.extend(CODE_RUNNERS.iter().map(|(p, _)| *p));
    programs.sort_unstable();
    programs.dedup();
    let mut text = String::from(
        "[policy]\n[[policy.rule]]\nname = \"no-rm-rf\"\ntool = \"shell_command\"\nargv = [\"rm\", \"-rf\", \"**\"]\n\
         decision = \"deny\"\n[[policy.rule]]\nname = \"no-push\"\ntool = \"shell_command\"\n\
         argv = [\"git\", \"push\", \"**\"]\ndecision = \"deny\"\n",
    );
    for program in programs {
        text.push_str(&format!(
            "[[policy.rule]]\nname = \"allow-{program}\"\ntool = \"shell_command\"\nargv = [\"{program}\", \"**\"]\n\
             decision = \"allow\"\n"
        ));
    }
    text
}

/// One generated line and the least strict decision it may get.
pub(crate) struct Case {
    pub(crate) line: String,
    /// Deny: the inner command's own rule must decide; otherwise ask or deny.
    pub(crate) expect: DecisionKind,
}

/// Every runner around every inner command and every rm(1) spelling, and every code runner
/// with every inner command.
pub(crate) fn runner_cases() -> Vec<Case> {
    let mut inner: Vec<String> = INNER.iter().map(|s| s.to_string()).collect();
    inner.extend(rm_rf_spellings());
    let mut out = Vec::new();
    for runner in RUNNERS {
        for command in &inner {
            let line = runner.template.replace("{q}", &quote(command)).replace("{}", command);
            let expect = if runner.opened { Deny } else { DecisionKind::Ask };
            out.push(Case { line, expect });
        }
    }
    for (_, template) in CODE_RUNNERS {
        for command in INNER {
            out.push(Case { line: template.replace("{c}", command), expect: DecisionKind::Ask });
        }
    }
    out
}

/// The cases `policy` lets through (allow where at least `expect` is needed), and those
/// decided less strictly than expected.
pub(crate) fn judge(policy: &Policy, ws: &Workspace, cases: &[Case]) -> (Vec<String>, Vec<String>) {
    let mut bypasses = Vec::new();
    let mut weaker = Vec::new();
    for case in cases {
        let d = policy.judge_command(&case.line, ws);
        if d.decision == Allow {
            bypasses.push(format!("{:?} allowed by {}", case.line, d.rule));
        } else if d.decision < case.expect {
            weaker.push(format!("{:?}: {:?} by {}, expected {:?}", case.line, d.decision, d.rule, case.expect));
        }
    }
    (bypasses, weaker)
}

#[test]
fn rm_rf_in_every_order_and_spelling_is_denied() {
    let (_dir, ws, policy) = setup();
    let lines = rm_rf_spellings();
    assert!(lines.len() >= 100, "only {} spellings", lines.len());
    let wrong: Vec<String> = lines
        .iter()
        .filter_map(|line| {
            let d = policy.judge_command(line, &ws);
            (d.decision != Deny || d.rule != "no-rm-rf").then(|| format!("{line:?}: {:?} by {}", d.decision, d.rule))
        })
        .collect();
    assert!(wrong.is_empty(), "{} of {}:\n{}", wrong.len(), lines.len(), wrong.join("\n"));
}

#[test]
fn programs_that_run_other_code_never_let_a_denied_command_through() {
    let (_dir, ws, _) = setup();
    let policy = policy_from(&runner_policy_text());
    let cases = runner_cases();
    assert!(cases.len() >= 2000, "only {} cases", cases.len());
    let (bypasses, weaker) = judge(&policy, &ws, &cases);
    assert!(bypasses.is_empty(), "{} bypasses of {}:\n{}", bypasses.len(), cases.len(), bypasses.join("\n"));
    assert!(weaker.is_empty(), "{} weaker than expected:\n{}", weaker.len(), weaker.join("\n"));
}

#[test]
fn the_runner_corpus_bites_a_first_word_matcher() {
    // A matcher that decides by the first program's rule alone, as a string-prefix rule
    // list does, lets every case through: each runner has an allow rule.
    let cases = runner_cases();
    let first_word_allowed = |line: &str| {
        let first = line.split_whitespace().find(|w| !w.contains('=')).unwrap_or("");
        RUNNERS.iter().any(|r| r.program == first) || CODE_RUNNERS.iter().any(|(p, _)| *p == first)
    };
    let through = cases.iter().filter(|c| first_word_allowed(&c.line)).count();
    assert!(through * 10 >= cases.len() * 9, "a first-word matcher let only {through} of {} through", cases.len());
}

#[test]
fn blocked_options_of_tar_rsync_zip_less_and_vim_ask_in_attached_and_abbreviated_forms() {
    let (_dir, ws, _) = setup();
    let policy = policy_from(&runner_policy_text());
    for line in [
        "tar -Iprog -xf a.tar",
        "tar -xIprog -f a.tar",
        "tar xIf prog a.tar",
        "tar --to-comm=prog -xf a.tar",
        "tar --use-compress-prog=prog -xf a.tar",
        "tar --checkpoint-act=exec=prog -cf a.tar src",
        "rsync -eprog src x:dst",
        "rsync -avzeprog src x:dst",
        "rsync --rsh=prog src x:dst",
        "rsync --rs prog src x:dst",
        "zip -TT=prog out.zip src/lib.rs",
        "zip -TTprog out.zip src/lib.rs",
        "zip --unzip-command prog out.zip src/lib.rs",
        "zip --unzip-comm=prog out.zip src/lib.rs",
        "less +!prog src/lib.rs",
        "less -kkeys src/lib.rs",
        "LESSOPEN='|prog %s' less src/lib.rs",
        "vim -c '!prog' src/lib.rs",
        "vim -c!prog src/lib.rs",
        "vim +!prog src/lib.rs",
        "vim --cmd '!prog' src/lib.rs",
    ] {
        let d = policy.judge_command(line, &ws);
        let rule = if line.starts_with("LESSOPEN") { "env_assignment" } else { "runs_other_code" };
        assert_eq!((d.decision, d.rule.as_str()), (DecisionKind::Ask, rule), "{line}: {:?}", d.reasons);
    }
    // The same programs without those options stay allowed by their rules.
    for line in [
        "tar -xzf a.tar",
        "tar -tvf a.tar --totals",
        "tar czf a.tgz src",
        "rsync -avz --delete src dst",
        "zip -r out.zip src",
        "less -R +G src/lib.rs",
        "less +42 src/lib.rs",
        "vim -R +12 src/lib.rs",
        "find . -executable -name x",
        "perl -w src/lib.rs",
        "node src/lib.rs",
    ] {
        let d = policy.judge_command(line, &ws);
        assert_eq!(d.decision, Allow, "{line}: {} {:?}", d.rule, d.reasons);
    }
}
