//! Bases of each bypass kind (chaining, wrappers, env prefixes, shells, program spellings,
//! whitespace, groups, substitutions, look-alikes) and random compositions of them.

use steward_protocol::DecisionKind::{self, Allow, Ask, Deny};

use crate::common::{SUBCOMMANDS, subcommand_rules};
use crate::documented::{manual_options, option_variants, subcommand_rule};
use crate::{Lcg, Variant, quote, setup};

pub(crate) const POLICY: &str = r#"
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
name = "echo"
tool = "shell_command"
argv = ["echo", "**"]
decision = "allow"
[[policy.rule]]
name = "git-status"
tool = "shell_command"
argv = ["git", "status", "**"]
decision = "allow"
[[policy.rule]]
name = "ls"
tool = "shell_command"
argv = ["ls", "**"]
decision = "allow"
[[policy.rule]]
name = "cat"
tool = "shell_command"
argv = ["cat", "**"]
decision = "allow"
"#;

/// The policy: [`POLICY`] plus, per [`SUBCOMMANDS`] entry, its rule (named by
/// [`subcommand_rule`]: git's `no-push`, `sub-PROGRAM` for the others) and an allow rule for
/// the program (a policy that allows a tool but one dangerous subcommand).
pub(crate) fn policy_text() -> String {
    let rules: Vec<(String, &str, &str, DecisionKind)> = SUBCOMMANDS
        .iter()
        .map(|&(program, words, _, decision)| (subcommand_rule(program), program, words, decision))
        .collect();
    format!("{POLICY}{}", subcommand_rules(&rules))
}

/// (program, arguments, expected decision)
pub(crate) const NOT_ALLOWED: &[(&str, &str, DecisionKind)] = &[
    ("rm", "-rf build", Deny),
    ("git", "push origin main", Deny),
    ("curl", "https://example.invalid", Ask),
    ("cat", ".env", Deny),
    ("wget", "https://example.invalid", Ask),
];
pub(crate) const ALLOWED: &[(&str, &str)] =
    &[("echo", "hello"), ("git", "status"), ("ls", "src"), ("cat", "src/lib.rs")];

fn variants() -> Vec<Variant> {
    let mut out = Vec::new();
    let mut push =
        |kind: &'static str, line: String, expect: DecisionKind| out.push(Variant { kind, line, expect, rule: None });
    for &(program, args, expect) in NOT_ALLOWED {
        let base = format!("{program} {args}");
        push("base", base.clone(), expect);
        for op in [";", "&&", "||", "|", "|&", "&", "\n", " ; ", " && ", "&&\n", " || \n"] {
            for &(p, a) in ALLOWED {
                push("chain", format!("{p} {a}{op}{base}"), expect);
                push("chain", format!("{base}{op}{p} {a}"), expect);
            }
        }
        let wrappers = [
            "env",
            "env -i",
            "env FOO=1",
            "env -u HOME",
            "time",
            "time -p",
            "nohup",
            "command",
            "exec",
            "nice",
            "nice -n 5",
            "nice -5",
            "timeout 10",
            "timeout -s KILL 5",
            "stdbuf -oL",
            "setsid",
            "xargs",
            "xargs -0",
        ];
        for w in wrappers {
            push("wrapper", format!("{w} {base}"), expect);
            for w2 in ["env", "time", "nohup", "nice -n 1", "command"] {
                push("nested-wrapper", format!("{w} {w2} {base}"), expect);
            }
        }
        for prefix in ["FOO=1 ", "A=1 B=2 ", "GH_PAGER=cat ", "X='a b' ", "Y=\"$(echo hi)\" "] {
            push("env-prefix", format!("{prefix}{base}"), expect);
            push("env-prefix", format!("{prefix}env {prefix}{base}"), expect);
        }
        let q = quote(&base);
        for shell in
            ["bash -c", "sh -c", "bash -lc", "zsh -ic", "dash -c", "/bin/sh -c", "bash -xe -c", "sh -o errexit -c"]
        {
            push("shell", format!("{shell} {q}"), expect);
            push("shell-nested", format!("bash -c {}", quote(&format!("{shell} {q}"))), expect);
            push("shell-chained", format!("{shell} {}", quote(&format!("echo hi && {base}"))), expect);
        }
        for spelled in [
            format!("'{program}'"),
            format!("\"{program}\""),
            format!("\\{program}"),
            format!("{}''{}", &program[..1], &program[1..]),
            format!("\"{}\"{}", &program[..1], &program[1..]),
            format!("/bin/{program}"),
            format!("/usr/bin/{program}"),
            format!("./{program}"),
            format!("../bin/{program}"),
            format!("/usr/bin/env {program}"),
        ] {
            push("program-spelling", format!("{spelled} {args}"), expect);
        }
        for ws in [
            format!("  {base}  "),
            format!("\t{program}\t{args}"),
            format!("{program}   {}", args.replace(' ', "   ")),
            format!("{program} \\\n{args}"),
            format!("{base};"),
            format!("{base}\n"),
            format!("\n\n{base}"),
            format!("{base} # comment"),
        ] {
            push("whitespace", ws, expect);
        }
        for group in [
            format!("( {base} )"),
            format!("({base})"),
            format!("{{ {base}; }}"),
            format!("( ( {base} ) )"),
            format!("{{ {{ {base}; }}; }}"),
            format!("if true; then {base}; fi"),
            format!("while false; do {base}; done"),
            format!("! {base}"),
            format!("for i in 1; do {base}; done"),
            format!("( {base} ) > /dev/null"),
            format!("time ( {base} )"),
            format!("time -p {{ {base}; }}"),
        ] {
            push("group", group, expect);
        }
        for subst in [
            format!("echo $({base})"),
            format!("echo \"$({base})\""),
            format!("echo `{base}`"),
            format!("ls <({base})"),
            format!("X=$({base}) echo"),
            format!("echo $(echo $({base}))"),
            format!("echo a$({base})b"),
        ] {
            push("substitution", subst, expect);
        }
        // A look-alike is an unknown program (ask); a secret path argument still denies.
        let look_expect = if args.contains(".env") { Deny } else { Ask };
        for look in lookalikes(program) {
            push("lookalike", format!("{look} {args}"), look_expect);
        }
    }
    for &(program, args) in ALLOWED {
        push("allowed-base", format!("{program} {args}"), Allow);
        for look in lookalikes(program) {
            push("lookalike", format!("{look} {args}"), Ask);
        }
    }
    for opts in ["-C src", "-c k=v", "--git-dir=repo", "--no-pager", "-C . -c a=b", "-P", "--work-tree ."] {
        push("git-options", format!("git {opts} push origin main"), Deny);
        push("git-options", format!("bash -c 'git {opts} push'"), Deny);
    }
    // A flag before a rule's own flags: the options are a set (`rm -v -rf` is `rm -rf`).
    push("flag-before-flags", "rm -v -rf build".into(), Deny);
    push("flag-before-flags", "rm --interactive=never -rf build".into(), Deny);
    push("option-before-operand", "cat -n .env".into(), Deny);
    push("option-before-operand", "curl -s https://example.invalid".into(), Ask);
    push("option-before-operand", "wget -q https://example.invalid".into(), Ask);
    for path in [".ENV", ".Env", "./.env", "src/../.env", "'.env'", "\".env\"", "./src/./../.env", "SRC/../.env"] {
        push("path-case", format!("cat {path}"), Deny);
        push("path-case", format!("cat < {path}"), Deny);
        push("path-case", format!("echo x > {path}"), Deny);
    }
    out.extend(option_variants());
    out
}

/// Program names with one letter swapped for a Cyrillic or Greek look-alike.
fn lookalikes(program: &str) -> Vec<String> {
    const SWAPS: &[(char, char)] = &[
        ('r', 'г'),
        ('m', 'м'),
        ('e', 'е'),
        ('o', 'о'),
        ('c', 'с'),
        ('a', 'а'),
        ('i', 'і'),
        ('s', 'ѕ'),
        ('p', 'р'),
        ('h', 'һ'),
        ('l', 'ӏ'),
        ('t', 'τ'),
        ('g', 'ɡ'),
        ('u', 'υ'),
        ('w', 'ω'),
    ];
    let mut out = Vec::new();
    for (index, c) in program.char_indices() {
        if let Some(&(_, look)) = SWAPS.iter().find(|(plain, _)| *plain == c) {
            let mut s = program.to_string();
            s.replace_range(index..index + c.len_utf8(), &look.to_string());
            out.push(s);
        }
    }
    out
}

/// A string-prefix matcher, the kind of check B06 and B08 describe.
fn naive(line: &str) -> DecisionKind {
    let line = line.trim_start();
    for prefix in ["rm -rf", "git push"] {
        if line.starts_with(prefix) {
            return Deny;
        }
    }
    if line.starts_with("curl") {
        return Ask;
    }
    for (program, words, _, decision) in SUBCOMMANDS {
        if line.starts_with(&format!("{program} {words}")) {
            return *decision;
        }
    }
    for prefix in ["echo", "git status", "ls", "cat"] {
        if line.starts_with(prefix) {
            return Allow;
        }
    }
    for (program, ..) in SUBCOMMANDS {
        if line.starts_with(&format!("{program} ")) {
            return Allow;
        }
    }
    Ask
}

#[test]
fn corpus_has_no_bypass_and_bites_a_naive_matcher() {
    let (_dir, ws, policy) = setup();
    let corpus = variants();
    assert!(corpus.len() >= 500, "only {} variants", corpus.len());
    let mut bypasses = Vec::new();
    let mut wrong = Vec::new();
    let mut naive_bypasses = 0;
    let mut naive_bypassed_programs = std::collections::BTreeSet::new();
    for v in &corpus {
        let d = policy.judge_command(&v.line, &ws);
        if d.decision == Allow && v.expect != Allow {
            bypasses.push(format!("[{}] {:?}", v.kind, v.line));
        }
        if d.decision != v.expect || v.rule.as_ref().is_some_and(|rule| *rule != d.rule) {
            wrong.push(format!(
                "[{}] {:?}: expected {:?} by {}, got {:?} by {}",
                v.kind,
                v.line,
                v.expect,
                v.rule.as_deref().unwrap_or("any rule"),
                d.decision,
                d.rule
            ));
        }
        if naive(&v.line) == Allow && v.expect != Allow {
            naive_bypasses += 1;
            if v.kind.starts_with("global-option") || v.kind == "unknown-option" {
                naive_bypassed_programs.insert(v.line.split(' ').next().unwrap_or("").to_string());
            }
        }
    }
    assert!(bypasses.is_empty(), "{} bypasses:\n{}", bypasses.len(), bypasses.join("\n"));
    assert!(wrong.is_empty(), "{} wrong decisions:\n{}", wrong.len(), wrong.join("\n"));
    assert!(
        naive_bypasses * 4 > corpus.len(),
        "the naive matcher let only {naive_bypasses} of {} variants through",
        corpus.len()
    );
    // Options before the subcommand get past the naive matcher for every program.
    assert_eq!(naive_bypassed_programs.len(), SUBCOMMANDS.len(), "{naive_bypassed_programs:?}");
}

#[test]
fn random_compositions_of_bypass_kinds_never_allow() {
    let (_dir, ws, policy) = setup();
    let mut rng = Lcg(0x5eed);
    // (layer, needs a simple command inside, result is a simple command): wrappers such as
    // `env` cannot wrap a group or a list, so those compositions are not generated.
    type Layer = (fn(&str) -> String, bool, bool);
    const TIME_LAYER: usize = 5;
    let layers: [Layer; 9] = [
        (|c| format!("env FOO=1 {c}"), true, true),
        (|c| format!("bash -lc {}", quote(c)), false, true),
        (|c| format!("echo ok && {c}"), false, false),
        (|c| format!("( {c} )"), false, false),
        (|c| format!("{{ {c}; }}"), false, false),
        (|c| format!("time {c}"), false, false),
        (|c| format!("echo $( {c} )"), false, true),
        (|c| format!("nice -n 2 {c}"), true, true),
        (|c| format!("ls src | {c}"), false, false),
    ];
    // Bases behind up to three documented global options in random spellings come from a
    // generator of their own, after the first 400 rounds, so those keep their sequence.
    let mut options_rng = Lcg(0x0b7);
    for round in 0..800 {
        let (mut line, expect) = if round < 400 {
            let (program, args, expect) = NOT_ALLOWED[rng.next(NOT_ALLOWED.len())];
            (format!("{program} {args}"), expect)
        } else {
            rng = Lcg(options_rng.next(usize::MAX) as u64);
            let (program, words, rest, expect) = SUBCOMMANDS[rng.next(SUBCOMMANDS.len())];
            let spelled = manual_options(program);
            let mut line = program.to_string();
            for _ in 0..rng.next(4) {
                if !spelled.is_empty() {
                    line = format!("{line} {}", spelled[rng.next(spelled.len())]);
                }
            }
            (format!("{line} {words} {rest}"), expect)
        };
        let mut last_was_time = false;
        let mut simple = true;
        for _ in 0..=rng.next(4) {
            let index = rng.next(layers.len());
            let (layer, needs_simple, gives_simple) = layers[index];
            // `time time ( … )` is valid bash that Steward's splitter does not parse (it asks).
            if (needs_simple && !simple) || (index == TIME_LAYER && last_was_time) {
                continue;
            }
            line = layer(&line);
            simple = gives_simple;
            last_was_time = index == TIME_LAYER;
        }
        let d = policy.judge_command(&line, &ws);
        assert_ne!(d.decision, Allow, "bypass: {line:?}");
        assert!(d.decision >= expect, "{line:?}: {:?} by {}", d.decision, d.rule);
    }
}
