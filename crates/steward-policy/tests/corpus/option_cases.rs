//! Deny rules that name options, met by every spelling of those options the manuals give.

use steward_policy::Policy;
use steward_protocol::DecisionKind::Allow;

use crate::{policy_from, quote, setup};

/// A deny rule naming options, with each option's spellings as the program's manual gives
/// them (written here, not taken from Steward's tables).
pub(crate) struct OptionCase {
    /// The deny rule's `argv` and the allow rule beside it, as TOML arrays.
    rule: &'static str,
    allow: &'static str,
    /// The program and its subcommand words.
    command: &'static str,
    /// Per option the rule needs, its spellings (a value after a space or `=`).
    needs: &'static [&'static [&'static str]],
    /// The operands, in order.
    operands: &'static str,
    /// Operands that meet the rule without any option (git push's `+refspec`).
    operand_forms: &'static [&'static str],
    /// Options that change nothing the rule is about.
    extra: &'static [&'static str],
    /// Another safeguard asks for the command even where a rule allows it.
    guarded: bool,
}

const fn case(rule: &'static str, allow: &'static str, command: &'static str) -> OptionCase {
    OptionCase { rule, allow, command, needs: &[], operands: "", operand_forms: &[], extra: &[], guarded: false }
}

/// Sources: GNU coreutils rm(1), chmod(1), chown(1), cp(1); git-push(1) (`-f`/`--force`,
/// `--force-with-lease[=<refname>]`, `--mirror`, "+<src>:<dst>" refspecs), git-clean(1),
/// git-reset(1), git-branch(1) (`-D` is `--delete --force`); curl(1) (`-X`/`--request`;
/// `-d`/`--data*`, `--json`, `-F`/`--form` send a POST); docker-rm(1), podman-rm(1);
/// kubectl-delete(1); git-remote(1) (`-v` before the subcommand); GNU findutils find(1).
pub(crate) const OPTION_CASES: &[OptionCase] = &[
    OptionCase {
        needs: &[&["-r", "-R", "--recursive"], &["-f", "--force"]],
        operands: "build",
        extra: &["-v", "--verbose", "-d", "--one-file-system", "--interactive=never"],
        ..case(r#"["rm", "-rf", "**"]"#, r#"["rm", "**"]"#, "rm")
    },
    OptionCase {
        needs: &[&["-f", "--force", "--force-with-lease", "--force-with-lease=main:abc", "--mirror"]],
        operands: "origin main",
        operand_forms: &["origin +main", "origin main +dev:dev", "origin +HEAD:refs/heads/main", "origin -- +main"],
        extra: &["-u", "--set-upstream", "--atomic", "-q", "--verbose", "-o ci.skip", "--push-option=ci.skip"],
        ..case(r#"["git", "push", "--force", "**"]"#, r#"["git", "push", "**"]"#, "git push")
    },
    OptionCase {
        needs: &[&["-f", "--force"], &["-d"], &["-x"]],
        operands: "src",
        extra: &["-q", "--quiet", "-e tmp", "--exclude=tmp"],
        ..case(r#"["git", "clean", "-fdx", "**"]"#, r#"["git", "clean", "**"]"#, "git clean")
    },
    OptionCase {
        needs: &[&["--hard"]],
        operands: "HEAD~1",
        extra: &["-q", "--quiet"],
        ..case(r#"["git", "reset", "--hard", "**"]"#, r#"["git", "reset", "**"]"#, "git reset")
    },
    OptionCase {
        needs: &[&["-D", "-d -f", "--delete --force", "-df"]],
        operands: "old",
        extra: &["-q", "--quiet", "-r"],
        ..case(r#"["git", "branch", "-D", "**"]"#, r#"["git", "branch", "**"]"#, "git branch")
    },
    OptionCase {
        needs: &[&["-R", "--recursive"]],
        operands: "777 src",
        extra: &["-v", "--verbose", "-c", "--changes", "-f", "--silent"],
        ..case(r#"["chmod", "-R", "777", "**"]"#, r#"["chmod", "**"]"#, "chmod")
    },
    OptionCase {
        needs: &[&["-R", "--recursive"]],
        operands: "root src",
        extra: &["-h", "--no-dereference", "-v"],
        ..case(r#"["chown", "-R", "root", "**"]"#, r#"["chown", "**"]"#, "chown")
    },
    OptionCase {
        needs: &[&["-r", "-R", "--recursive", "-a", "--archive"]],
        operands: "src dst",
        extra: &["-v", "-p", "-n", "--preserve=mode"],
        ..case(r#"["cp", "-r", "**"]"#, r#"["cp", "**"]"#, "cp")
    },
    OptionCase {
        needs: &[&[
            "-X POST",
            "--request POST",
            "--request=POST",
            "-d a=b",
            "--data a=b",
            "--data-raw a=b",
            "--data-binary @f",
            "--data-urlencode a=b",
            "--json {}",
            "-F a=b",
            "--form a=b",
        ]],
        operands: "https://example.invalid",
        extra: &["-s", "-S", "-L", "--silent", "-H Accept:x", "-o out"],
        ..case(r#"["curl", "-X", "POST", "**"]"#, r#"["curl", "**"]"#, "curl")
    },
    OptionCase {
        needs: &[&["-f", "--force"]],
        operands: "web",
        extra: &["-v", "--volumes", "-l"],
        ..case(r#"["docker", "rm", "-f", "**"]"#, r#"["docker", "**"]"#, "docker rm")
    },
    OptionCase {
        needs: &[&["-f", "--force"]],
        operands: "web",
        extra: &["-v", "--volumes", "-i"],
        ..case(r#"["podman", "rm", "-f", "**"]"#, r#"["podman", "**"]"#, "podman rm")
    },
    OptionCase {
        needs: &[&["--all"]],
        operands: "pods",
        extra: &["--now", "--force", "-n prod", "--namespace=prod", "--wait=false"],
        ..case(r#"["kubectl", "delete", "--all", "**"]"#, r#"["kubectl", "**"]"#, "kubectl delete")
    },
    OptionCase {
        operands: "namespace prod",
        extra: &["--wait=false", "--now", "-n prod", "--grace-period 0", "--force"],
        ..case(r#"["kubectl", "delete", "namespace", "**"]"#, r#"["kubectl", "**"]"#, "kubectl delete")
    },
    OptionCase {
        operands: "remove origin",
        extra: &["-v", "--verbose"],
        ..case(r#"["git", "remote", "remove", "**"]"#, r#"["git", "remote", "**"]"#, "git remote")
    },
    OptionCase {
        needs: &[&["-delete"]],
        operands: ".",
        extra: &["-name x", "-type f", "-print"],
        // `find -delete` asks as code Steward does not judge (`runs_other_code`).
        guarded: true,
        ..case(r#"["find", "-delete", "**"]"#, r#"["find", "**"]"#, "find")
    },
];

/// Every way of writing one choice of spellings: in order and reversed, before, after and
/// around the operands, with another option among them, short letters grouped (other
/// letters inside), a short option's value attached, and long options abbreviated.
fn option_layouts(c: &OptionCase, chosen: &[&str]) -> Vec<String> {
    let p = c.command;
    let o = c.operands;
    let line = |parts: &[&str]| parts.iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    let mut reversed = chosen.to_vec();
    reversed.reverse();
    out.push(line(&[&[p], chosen, &[o]].concat()));
    out.push(line(&[&[p], &reversed[..], &[o]].concat()));
    out.push(line(&[&[p, o], chosen].concat()));
    if let Some((first, rest)) = chosen.split_first() {
        out.push(line(&[&[p, first, o], rest].concat()));
    }
    let (o_first, o_rest) = o.split_once(' ').unwrap_or((o, ""));
    for extra in c.extra {
        out.push(line(&[&[p, o_first, extra], chosen, &[o_rest]].concat()));
        out.push(line(&[&[p, extra], chosen, &[o]].concat()));
        out.push(line(&[&[p], chosen, &[extra, o]].concat()));
        out.push(line(&[&[p, o], &reversed[..], &[extra]].concat()));
    }
    let short_flag = |s: &str| s.len() == 2 && s.starts_with('-') && !s.starts_with("--");
    let extra_letters: Vec<&str> = c.extra.iter().filter(|e| short_flag(e)).map(|e| &e[1..]).collect();
    if chosen.iter().all(|s| short_flag(s)) && chosen.len() > 1 {
        let letters: String = chosen.iter().map(|s| &s[1..]).collect();
        let backwards: String = reversed.iter().map(|s| &s[1..]).collect();
        out.push(line(&[p, &format!("-{letters}"), o]));
        out.push(line(&[p, o, &format!("-{backwards}")]));
        for e in &extra_letters {
            let (head, tail) = letters.split_at(1);
            out.push(line(&[p, &format!("-{head}{e}{tail}"), o]));
            out.push(line(&[p, &format!("-{e}{backwards}"), o]));
        }
    }
    for (index, spelled) in chosen.iter().enumerate() {
        let mut with = |replacement: String| {
            let mut words: Vec<String> = chosen.iter().map(|s| s.to_string()).collect();
            words[index] = replacement;
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            out.push(line(&[&[p], &words[..], &[o]].concat()));
            out.push(line(&[&[p, o], &words[..]].concat()));
        };
        // `-X POST` → `-XPOST`, and behind other letters: `-sXPOST`.
        if let Some((option, value)) = spelled.split_once(' ')
            && short_flag(option)
        {
            with(format!("{option}{value}"));
            for e in &extra_letters {
                with(format!("-{e}{}{value}", &option[1..]));
            }
        }
        // `--recursive` → `--recursiv` … `--r`; `--request POST` → `--req POST`.
        if spelled.starts_with("--") && !spelled.contains(" --") {
            let cut = spelled.find([' ', '=']).unwrap_or(spelled.len());
            let (name, value) = spelled.split_at(cut);
            for end in 3..name.len() {
                with(format!("{}{value}", &name[..end]));
            }
        }
    }
    out
}

/// Every option variant: each choice of one spelling per needed option in every layout,
/// and the operand forms.
pub(crate) fn option_case_variants(c: &OptionCase) -> Vec<String> {
    let mut choices: Vec<Vec<&str>> = vec![Vec::new()];
    for spellings in c.needs {
        choices = choices.iter().flat_map(|so_far| spellings.iter().map(|s| [&so_far[..], &[*s]].concat())).collect();
    }
    let mut out: Vec<String> = choices.iter().flat_map(|chosen| option_layouts(c, chosen)).collect();
    for form in c.operand_forms {
        out.push(format!("{} {form}", c.command));
        for extra in c.extra {
            out.push(format!("{} {extra} {form}", c.command));
        }
    }
    let wrapped: Vec<String> =
        out.iter().step_by(7).map(|l| format!("bash -c {}", quote(&format!("env {l}")))).collect();
    out.extend(wrapped);
    out
}

pub(crate) fn option_policy() -> Policy {
    let mut text = String::from("[policy]\n");
    for (index, c) in OPTION_CASES.iter().enumerate() {
        text.push_str(&format!(
            "[[policy.rule]]\nname = \"deny-{index}\"\ntool = \"shell_command\"\nargv = {}\ndecision = \"deny\"\n\
             [[policy.rule]]\nname = \"allow-{index}\"\ntool = \"shell_command\"\nargv = {}\ndecision = \"allow\"\n",
            c.rule, c.allow
        ));
    }
    policy_from(&text)
}

#[test]
fn option_spellings_from_the_manuals_never_get_past_deny_rules() {
    let (_dir, ws, _) = setup();
    let policy = option_policy();
    let positional = option_policy().without_option_reading_for_tests();
    let mut total = 0;
    let mut bypasses = Vec::new();
    let mut positional_bypasses = 0;
    for (index, c) in OPTION_CASES.iter().enumerate() {
        let variants = option_case_variants(c);
        assert!(variants.len() >= 10, "{}: only {} variants", c.command, variants.len());
        let mut caught = 0;
        for line in &variants {
            total += 1;
            let d = policy.judge_command(line, &ws);
            if d.decision == Allow {
                bypasses.push(format!("{line:?} allowed by {}", d.rule));
            }
            if positional.judge_command(line, &ws).decision == Allow {
                caught += 1;
            }
        }
        // Matching rules as written lets spellings of every unguarded case through.
        assert!(c.guarded || caught > 0, "case {index} ({}): no variant needs the option reading", c.command);
        positional_bypasses += caught;
    }
    assert!(total >= 1000, "only {total} variants");
    assert!(bypasses.is_empty(), "{} bypasses of {total}:\n{}", bypasses.len(), bypasses.join("\n"));
    assert!(
        positional_bypasses * 2 > total,
        "matching as written let only {positional_bypasses} of {total} variants through"
    );
}
