//! Colour and escape codes in the real binary's output: colour only on a terminal with
//! `NO_COLOR` unset or empty (or when `CLICOLOR_FORCE` asks, which `NO_COLOR` still beats), and
//! never an escape code that came from a model.

use crate::common;

use std::process::Output;

use common::{Env, code, scenario, stderr, stdout};

const ESC: char = '\u{1b}';

/// A run whose model lists the workspace (an allowed call: a green mark when coloured) and
/// then answers with text that holds escape sequences.
fn run(env: &Env, vars: &[(&str, &str)]) -> Output {
    let path = scenario(
        env,
        "[[round]]\n[[round.tool_call]]\nname = \"list\"\narguments = {}\n\
         [[round]]\ntext = \"\\u001B[31mred\\u001B[0m and \\u001B]0;title\\u0007 done\"\n",
    );
    let mut cmd = env.command(&["run", "--provider", "fake", "--scenario", &path, "list the files"]);
    for (name, value) in vars {
        cmd.env(name, value);
    }
    cmd.output().expect("steward runs")
}

fn has_escape(out: &Output) -> bool {
    stdout(out).contains(ESC) || stderr(out).contains(ESC)
}

#[test]
fn piped_output_has_no_escape_codes_and_the_models_are_shown_as_text() {
    let env = Env::new();
    env.write("note.txt", "text\n");
    let out = run(&env, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!has_escape(&out), "stdout: {:?}\nstderr: {:?}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("\\u{1b}[31mred\\u{1b}[0m"), "the model's escapes are shown: {}", stdout(&out));
    assert!(stdout(&out).contains("✓ allowed by"), "{}", stdout(&out));
}

#[test]
fn no_color_wins_over_a_forced_colour_and_an_empty_one_does_not() {
    let env = Env::new();
    env.write("note.txt", "text\n");
    let forced = run(&env, &[("CLICOLOR_FORCE", "1")]);
    assert_eq!(code(&forced), 0, "{}", stderr(&forced));
    assert!(stdout(&forced).contains("\u{1b}[32m✓"), "forced colour marks: {:?}", stdout(&forced));
    assert!(!stdout(&forced).contains("\u{1b}[31mred"), "a model's escapes never pass: {:?}", stdout(&forced));

    let no_color = run(&env, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert_eq!(code(&no_color), 0, "{}", stderr(&no_color));
    assert!(!has_escape(&no_color), "stdout: {:?}\nstderr: {:?}", stdout(&no_color), stderr(&no_color));

    let empty = run(&env, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "")]);
    assert!(stdout(&empty).contains("\u{1b}[32m✓"), "an empty NO_COLOR is unset: {:?}", stdout(&empty));
}

#[test]
fn help_and_usage_errors_follow_the_same_rule() {
    let env = Env::new();
    for args in [&["--help"][..], &["run", "--help"], &["no-such-command"]] {
        let piped = env.steward(args);
        assert!(!has_escape(&piped), "{args:?}: {:?}", stderr(&piped));
        let mut cmd = env.command(args);
        cmd.env("CLICOLOR_FORCE", "1").env("NO_COLOR", "1");
        let no_color = cmd.output().expect("steward runs");
        assert!(!has_escape(&no_color), "{args:?}: {:?}", stderr(&no_color));
    }
    let mut cmd = env.command(&["--help"]);
    cmd.env("CLICOLOR_FORCE", "1");
    assert!(has_escape(&cmd.output().expect("steward runs")), "clap colours help when asked to");
}
