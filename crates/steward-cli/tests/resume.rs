//! `steward run --continue` and `steward resume`: the next turn of a conversation gets the
//! earlier turns as context, as in the web UI. The fake provider's `expect` checks what reached
//! the model: a round fails (exit 1) when the request lacks the expected text.

use crate::common;

use common::{Env, code, events, stderr};

/// Runs `steward run --json --provider fake --scenario FILE ARGS…` with a scenario answering
/// `answer` after checking that its request contains each of `expect`; returns the output.
fn turn(env: &Env, command: &[&str], expect: &[&str], answer: &str) -> std::process::Output {
    let path = env.dir.path().join(format!("scenario-{}.toml", answer.len()));
    let expect: Vec<String> = expect.iter().map(|e| format!("{e:?}")).collect();
    std::fs::write(&path, format!("[[round]]\ntext = {answer:?}\nexpect = [{}]\n", expect.join(", "))).unwrap();
    let path = path.display().to_string();
    let (verb, rest) = command.split_first().unwrap();
    let args = [&[*verb], rest, &["--json", "--provider", "fake", "--scenario", &path]].concat();
    env.steward(&args)
}

fn run_id(out: &std::process::Output) -> String {
    events(out)[0]["run_id"].as_str().unwrap().to_string()
}

#[test]
fn continue_gives_the_last_turns_to_the_model_and_resume_finds_the_conversation_of_a_run() {
    let env = Env::new();
    let first = turn(&env, &["run", "how many files are there"], &[], "There are 42 files.");
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let first_id = run_id(&first);

    // A new run is a new conversation: the earlier turn is not in its request.
    let fresh = turn(&env, &["run", "and how many lines"], &["There are 42 files."], "x");
    assert_eq!(code(&fresh), 1, "without --continue nothing earlier reaches the model: {}", stderr(&fresh));
    let said = format!("{}{}", common::stdout(&fresh), stderr(&fresh));
    assert!(said.contains("does not contain the expected text"), "{said}");

    // `--continue` takes the newest conversation in this workspace: the one `fresh` started.
    let second = turn(
        &env,
        &["run", "--continue", "and the largest one"],
        &["Earlier in this conversation", "Task: and how many lines"],
        "The largest is big.rs.",
    );
    assert_eq!(code(&second), 0, "{}", stderr(&second));

    // `resume RUN` continues the conversation that run belongs to, with every earlier turn.
    let third = turn(
        &env,
        &["resume", &first_id, "list them"],
        &["1. Task: how many files are there", "Answer: There are 42 files."],
        "a.rs, b.rs",
    );
    assert_eq!(code(&third), 0, "{}", stderr(&third));
    let fourth = turn(
        &env,
        &["resume", &run_id(&third), "thanks"],
        &["Task: how many files are there", "2. Task: list them", "Answer: a.rs, b.rs"],
        "You're welcome.",
    );
    assert_eq!(code(&fourth), 0, "{}", stderr(&fourth));
    assert!(!stderr(&fourth).contains("and the largest one"));
}

#[test]
fn resume_by_conversation_id_and_only_by_its_owner() {
    let env = Env::new();
    let first = turn(&env, &["run", "what is the version"], &[], "Version 1.2.3.");
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    // Without --json the continuing run names its conversation.
    let path = env.dir.path().join("plain.toml");
    std::fs::write(&path, "[[round]]\ntext = \"ok\"\nexpect = [\"Answer: Version 1.2.3.\"]\n").unwrap();
    let plain =
        env.steward(&["run", "--continue", "--provider", "fake", "--scenario", &path.display().to_string(), "bump it"]);
    assert_eq!(code(&plain), 0, "{}", stderr(&plain));
    let err = stderr(&plain);
    let at = err.find("continuing cnv_").unwrap_or_else(|| panic!("{err}"));
    let conversation: String = err[at + "continuing ".len()..].chars().take_while(|c| !c.is_whitespace()).collect();

    let by_id = turn(&env, &["resume", &conversation, "again"], &["Task: bump it", "Answer: ok"], "done");
    assert_eq!(code(&by_id), 0, "{}", stderr(&by_id));

    for target in [conversation.as_str(), &run_id(&first)] {
        let mut other = env.command(&["resume", target, "mine now", "--provider", "fake"]);
        let other = other.env("USER", "mallory").output().unwrap();
        assert_eq!(code(&other), 2, "another owner cannot continue it: {}", stderr(&other));
        assert!(stderr(&other).contains("another owner"), "{}", stderr(&other));
    }
    let mut other = env.command(&["run", "--continue", "mine now", "--provider", "fake"]);
    let other = other.env("USER", "mallory").output().unwrap();
    assert_eq!(code(&other), 2, "another owner has no conversation here: {}", stderr(&other));
    assert!(stderr(&other).contains("no earlier conversation of local:mallory"), "{}", stderr(&other));
}
