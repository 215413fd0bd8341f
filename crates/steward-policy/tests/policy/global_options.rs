//! Global options before a subcommand (T4): rules on `PROGRAM SUBCOMMAND …` see the
//! subcommand behind every global option a program documents, and apply strictly when an
//! option before it is unknown.

use crate::common::{SUBCOMMANDS, config, subcommand_rules};
use steward_policy::{Policy, Workspace};
use steward_protocol::DecisionKind::{self, Allow, Ask, Deny};

fn workspace() -> (tempfile::TempDir, Workspace) {
    crate::common::workspace(&[("src/", ""), (".env", "K=v")])
}

/// The programs with a subcommand behind global options (python's `-m pip` is no subcommand
/// word, see `python_module_and_code_options_stand_for_the_subcommand`):
/// `(program, subcommand words)`.
fn programs() -> Vec<(&'static str, &'static str)> {
    SUBCOMMANDS.iter().filter(|s| !s.1.starts_with('-')).map(|&(program, words, ..)| (program, words)).collect()
}

/// The deny rule's name for `program`'s subcommand `words`: `no-PROGRAM-FIRSTWORD`.
fn rule_name(program: &str, words: &str) -> String {
    format!("no-{program}-{}", words.split(' ').next().unwrap_or(words))
}

/// A rule `deny PROGRAM SUB… **` and `allow PROGRAM **` per program of [`programs`].
fn policy() -> Policy {
    let rules: Vec<(String, &str, &str, DecisionKind)> =
        programs().into_iter().map(|(program, words)| (rule_name(program, words), program, words, Deny)).collect();
    Policy::new(&config(&format!("[policy]\n{}", subcommand_rules(&rules)))).unwrap()
}

#[test]
fn option_before_subcommand_is_skipped_for_every_program() {
    let (_dir, ws) = workspace();
    let policy = policy();
    let cases: &[(&str, &str)] = &[
        ("git", "--no-lazy-fetch --shallow-file f --no-advice --attr-source=HEAD -C src -c a=b"),
        ("git", "--namespace ns --super-prefix p/ --git-dir=repo --work-tree . --bare --literal-pathspecs"),
        ("git", "--exec-path=/usr/lib/git-core --config-env=a.b=X -P"),
        ("cargo", "+nightly --locked -vv --color always --config k=v -Zunstable-options -C src"),
        ("rustup", "-v +stable -q"),
        ("npm", "--prefix src -w pkg --registry=https://registry.invalid -g --loglevel warn"),
        ("npx", "-y -p cowsay --prefix src"),
        ("pnpm", "-C src --filter=a -F b -w -r"),
        ("yarn", "--cwd src --offline --registry https://registry.invalid"),
        ("bun", "--cwd src --silent -c bunfig.toml"),
        ("pip", "-q --python python3 --cache-dir c --no-input -vv"),
        ("pip3", "--isolated --timeout=5 --log l"),
        ("uv", "--directory src -q --config-file uv.toml --offline"),
        ("docker", "--context prod -H tcp://h -lwarn --log-level=debug -D --config c"),
        ("podman", "--remote --connection c --root r --log-level=info"),
        ("kubectl", "-n prod --context=c --kubeconfig k -v=5 --insecure-skip-tls-verify"),
        ("helm", "--kube-context c -nprod --debug --kubeconfig=k"),
        ("terraform", "-chdir=infra"),
        ("tofu", "-chdir=infra"),
        ("make", "-C src -j4 -sk -j 2 -l -f Makefile CC=cc -Oline"),
        ("gmake", "--directory=src --jobs=3 -e"),
        ("go", "-C src"),
        ("go", "-C=src"),
        ("gh", "--help"),
        ("systemctl", "--user -H host --no-pager -t service"),
    ];
    for (program, options) in cases {
        let (_, sub) = programs().into_iter().find(|(p, _)| p == program).unwrap();
        let line = format!("{program} {options} {sub} x");
        let d = policy.judge_command(&line, &ws);
        assert_eq!(d.decision, Deny, "{line}: {d:?}");
        assert_eq!(d.rule, rule_name(program, sub), "{line}: {d:?}");
        // The same options before another subcommand leave the allow rule in charge, unless
        // one of them is risky.
        let other = format!("{program} {options} status");
        let d = policy.judge_command(&other, &ws);
        assert_ne!(d.decision, Deny, "{other}: {d:?}");
    }
    for line in ["cargo +nightly build", "npm -w pkg ls", "kubectl -n prod get pods", "make -j4 all"] {
        assert_eq!(policy.judge_command(line, &ws).decision, Allow, "{line}");
    }
    // Every target of make is a goal it runs.
    for line in ["make all deploy", "make -j4 clean deploy", "gmake all -k deploy"] {
        let d = policy.judge_command(line, &ws);
        assert_eq!(
            (d.decision, d.rule.as_str()),
            (Deny, &*format!("no-{}-deploy", &line[..line.find(' ').unwrap()])),
            "{line}"
        );
    }
    // `git --version push` is `git version push`; `git --help push` is `git help push`.
    assert_eq!(policy.judge_command("git --help push", &ws).rule, "git");
}

#[test]
fn risky_global_options_never_ride_on_an_allow_rule() {
    let (_dir, ws) = workspace();
    let policy = policy();
    for line in [
        "git -c core.pager=sh status",
        "cargo --config build.rustc-wrapper=sh build",
        "cargo -Zunstable-options build",
        "npm --userconfig other.npmrc test",
        "npm --registry=https://registry.invalid install",
        "npx -c 'sh -c id'",
        "pip --python /tmp/python list",
        "uv --config-file uv.toml sync",
        "docker --config elsewhere ps",
        "docker -H ssh://build-host ps",
        "podman --url ssh://build-host ps",
        "kubectl --kubeconfig k get pods",
        "helm --repository-config r list",
        "make -f Other.mk all",
        "make CC=sh all",
        "make --eval='x:;id' all",
        "podman --runtime /tmp/rt ps",
        "bun --preload ./x.ts test",
    ] {
        let d = policy.judge_command(line, &ws);
        assert_eq!(d.decision, Ask, "{line}: {d:?}");
    }
}

#[test]
fn unknown_option_before_subcommand_applies_strict_rules() {
    let (_dir, ws) = workspace();
    let policy = policy();
    for (program, sub) in programs() {
        for unknown in ["--frobnicate", "--frobnicate=1", "-Q"] {
            let line = format!("{program} {unknown} {sub} x");
            let d = policy.judge_command(&line, &ws);
            assert_eq!(d.decision, Deny, "{line}: {d:?}");
            assert_eq!(d.rule, "unknown_option_before_subcommand", "{line}: {d:?}");
            assert!(
                d.reasons[0].contains(&format!("`{program} {unknown}` is not a global option Steward knows"))
                    && d.reasons[0]
                        .contains(&format!("the deny rule `{}` applies as if it matched", rule_name(program, sub))),
                "{line}: {:?}",
                d.reasons
            );
        }
        // A computed word where an option could be: the same.
        let line = format!("{program} $OPTS {sub}");
        let d = policy.judge_command(&line, &ws);
        assert_eq!(d.decision, Deny, "{line}: {d:?}");
        // The subcommand's word is nowhere: the deny rule has nothing to stand for, and an
        // allow rule never matches an unsure subcommand word of its own.
        let line = format!("{program} --frobnicate status");
        assert_ne!(policy.judge_command(&line, &ws).decision, Deny, "{line}");
    }
    // An unknown option between known ones.
    let d = policy.judge_command("cargo +nightly --locked --frob publish", &ws);
    assert_eq!((d.decision, d.rule.as_str()), (Deny, "unknown_option_before_subcommand"));
    // Inside wrappers and shells too.
    let d = policy.judge_command("env A=1 bash -c 'docker --weird-flag push img'", &ws);
    assert_eq!(d.decision, Deny, "{d:?}");
}

#[test]
fn an_allow_rule_needs_a_sure_subcommand() {
    let (_dir, ws) = workspace();
    let policy = Policy::new(&config(
        r#"
[policy]
[[policy.rule]]
name = "build"
tool = "shell_command"
argv = ["cargo", "build", "**"]
decision = "allow"
match = ["cargo +nightly -q build"]
not_match = ["cargo --frobnicate build", "cargo $X build"]
"#,
    ))
    .unwrap();
    for (line, expect) in [
        ("cargo build", Allow),
        ("cargo +nightly -q --offline build --release", Allow),
        ("cargo --frobnicate build", Ask),
        ("cargo --config k=v build", Ask),
    ] {
        assert_eq!(policy.judge_command(line, &ws).decision, expect, "{line}");
    }
}

#[test]
fn rules_not_about_a_subcommand_ignore_unknown_options() {
    let (_dir, ws) = workspace();
    let policy = Policy::new(&config(
        r#"
[policy]
[[policy.rule]]
name = "no-rm"
tool = "shell_command"
argv = ["rm", "**"]
decision = "deny"
[[policy.rule]]
name = "no-rm-rf"
tool = "shell_command"
argv = ["rm", "-rf", "**"]
decision = "deny"
[[policy.rule]]
name = "ls"
tool = "shell_command"
argv = ["ls", "**"]
decision = "allow"
[[policy.rule]]
name = "no-ls-one"
tool = "shell_command"
argv = ["ls", "*"]
decision = "ask"
[[policy.rule]]
name = "no-foo-sub"
tool = "shell_command"
argv = ["foo", "sub", "**"]
decision = "deny"
[[policy.rule]]
name = "no-cat-env"
tool = "shell_command"
argv = ["cat", "notes.txt"]
decision = "ask"
[[policy.rule]]
name = "cat"
tool = "shell_command"
argv = ["cat", "**"]
decision = "allow"
"#,
    ))
    .unwrap();
    let cases: &[(&str, DecisionKind, &str)] = &[
        // A deny rule on `rm` says nothing about `ls -l`.
        ("ls -l -a", Allow, "ls"),
        ("ls --color=never -a", Allow, "ls"),
        // `*` is not a subcommand: `ls -l src` has two arguments.
        ("ls -l src", Allow, "ls"),
        ("ls src", Ask, "no-ls-one"),
        ("rm -v -rf x", Deny, "no-rm"),
        // A program with no table: an option before its first operand, and a rule naming a
        // word after it, apply strictly; a first word that is no option keeps its place.
        ("foo --x sub", Deny, "unknown_option_before_subcommand"),
        ("foo -x 1 sub y", Deny, "unknown_option_before_subcommand"),
        ("foo other sub", Ask, "default:shell"),
        ("foo --x other", Ask, "default:shell"),
        ("cat -n notes.txt", Ask, "unknown_option_before_subcommand"),
        ("cat -n src", Allow, "cat"),
    ];
    for (line, expect, rule) in cases {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (*expect, *rule), "{line}: {:?}", d.reasons);
    }
    let d = policy.judge_command("foo --x sub", &ws);
    assert!(d.reasons[0].contains("Steward knows no global options of `foo`"), "{:?}", d.reasons);
}

#[test]
fn python_module_and_code_options_stand_for_the_subcommand() {
    let (_dir, ws) = workspace();
    let policy = Policy::new(&config(
        r#"
[policy]
[[policy.rule]]
name = "pip-asks"
tool = "shell_command"
argv = ["python*", "-m", "pip", "**"]
decision = "ask"
match = ["python3 -u -m pip install x", "python -Bmpip list", "python3.12 -I -m pip"]
[[policy.rule]]
name = "no-code"
tool = "shell_command"
argv = ["python*", "-c", "**"]
decision = "deny"
match = ["python3 -B -c 'print(1)'", "python -Ic 'x'"]
not_match = ["python3 -m venv .venv"]
[[policy.rule]]
name = "python"
tool = "shell_command"
argv = ["python*", "**"]
decision = "allow"
"#,
    ))
    .unwrap();
    for (line, expect) in [
        ("python3 -m venv venv", Allow),
        ("python3 -X dev -W ignore -m pip install x", Ask),
        ("python3 -Wignore -mpip install x", Ask),
        ("python3 -Bc 'import os'", Deny),
        ("python3 --frobnicate -m pip install x", Ask),
        ("python3 -q -c 'x'", Deny),
    ] {
        assert_eq!(policy.judge_command(line, &ws).decision, expect, "{line}");
    }
}
