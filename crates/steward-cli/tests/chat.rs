//! The interactive session (`steward` alone, `steward chat`) on a real pseudo-terminal (from
//! `script`): turns run through the same gate as `steward run`, approvals are asked inline,
//! `/diff` and `/undo` work on the conversation, Ctrl-C cancels a turn and keeps the session, a
//! secret `@path` is refused before anything is sent, and the conversation is the one
//! `steward run --continue` continues.

use crate::common;

use common::*;

/// Waits until the session has shown its prompt `seen` times in all.
fn wait_for_prompt(terminal: &mut Terminal, seen: usize) {
    terminal.wait_for_count("› ", seen);
}

fn runs(env: &Env) -> Vec<serde_json::Value> {
    let out = env.steward(&["runs", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn without_a_terminal_the_session_names_steward_run() {
    let env = Env::new();
    for args in [&[][..], &["chat"][..]] {
        let out = env.steward(args);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(stderr(&out).contains("steward run \"TASK\""), "{}", stderr(&out));
    }
}

#[test]
fn a_session_approves_diffs_undoes_cancels_and_keeps_its_conversation() {
    let env = Env::new();
    env.write("note.txt", "old\n");
    env.write(".env", "API_TOKEN=do-not-show-7731\n");
    let mut terminal = Terminal::start(&env, "");
    terminal.wait_for("classic planner (no model)");
    terminal.wait_for("Ctrl-D leaves.");
    wait_for_prompt(&mut terminal, 1);

    // Turn 1: an edit that asks; approved inline.
    terminal.send("replace 'old' with 'new' in note.txt\r");
    terminal.wait_for(APPROVAL_PROMPT);
    assert!(terminal.screen.contains("-old") && terminal.screen.contains("+new"), "{}", terminal.screen);
    terminal.send("y\n");
    terminal.wait_for("approved by local:tester");
    wait_for_prompt(&mut terminal, 2);
    assert_eq!(env.read("note.txt"), "new\n");

    // What the conversation changed, then undone.
    terminal.send("/diff\r");
    terminal.wait_for("1 file changed, +1 −1");
    wait_for_prompt(&mut terminal, 3);
    terminal.send("/undo\r");
    terminal.wait_for("undone");
    wait_for_prompt(&mut terminal, 4);
    assert_eq!(env.read("note.txt"), "old\n");

    // A secret file is refused in the prompt line: no run starts.
    let before = runs(&env).len();
    terminal.send("summarise @.env\r");
    terminal.wait_for("@.env not attached");
    wait_for_prompt(&mut terminal, 5);
    assert_eq!(runs(&env).len(), before, "a refused attachment started a run");
    assert!(!terminal.screen.contains("do-not-show-7731"), "{}", terminal.screen);

    // A model the classic planner cannot take is refused; the session stays as it was.
    terminal.send("/model qwen2.5:7b\r");
    terminal.wait_for("/model qwen2.5:7b not taken");
    wait_for_prompt(&mut terminal, 6);

    // Turn 2: Ctrl-C at the approval prompt cancels the turn; nothing is applied.
    terminal.send("replace 'old' with 'gone' in note.txt\r");
    terminal.wait_for_count(APPROVAL_PROMPT, 2);
    terminal.wait_for_count(" left)", 2);
    terminal.send("\x03");
    terminal.wait_for("· cancelled ·");
    wait_for_prompt(&mut terminal, 7);
    assert_eq!(env.read("note.txt"), "old\n", "a cancelled turn changed the file");

    // Turn 3: the session goes on.
    terminal.send("list files\r");
    terminal.wait_for("note.txt");
    wait_for_prompt(&mut terminal, 8);
    terminal.send("/exit\r");
    let (ok, screen) = terminal.finish();
    assert!(ok, "{screen}");
    assert!(!screen.contains("do-not-show-7731"), "{screen}");
    assert!(screen.contains("`steward chat --resume cnv_"), "the session names its conversation: {screen}");

    // Three runs of one conversation: completed, cancelled, completed (newest first).
    let all = runs(&env);
    let statuses: Vec<&str> = all.iter().map(|r| r["status"].as_str().unwrap_or("")).collect();
    assert_eq!(statuses, ["completed", "cancelled", "completed"], "{all:?}");
    // `steward run --continue` continues the same conversation, with the session's turns.
    let path = env.dir.path().join("next.toml");
    std::fs::write(
        &path,
        "[[round]]\ntext = \"ok\"\nexpect = [\"Task: list files\", \"Task: replace 'old' with 'new' in note.txt\"]\n",
    )
    .unwrap();
    let out = env.steward(&[
        "run",
        "--continue",
        "--provider",
        "fake",
        "--scenario",
        &path.display().to_string(),
        "and now?",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// A file attached with `@path` reaches the model inside the task, and is accounted for like a
/// file the run read: a network tool carrying its words asks `data_flow`, naming the file.
#[test]
fn an_attached_file_is_fingerprinted_like_a_read_one() {
    let env = Env::new();
    env.write("notes/plan.txt", "Quarterly plan: acquire the competitor before the summer announcement.\n");
    env.user_config(
        "[[tool]]\nname = \"post\"\ndescription = \"Posts a message to the team chat.\"\n\
         command = [\"true\", { input = \"text\" }]\nnetwork = [\"chat.example.test\"]\nrisk = \"low\"\n\
         [[tool.input]]\nname = \"text\"\ntype = \"string\"\nrequired = true\n",
    );
    let path = scenario(
        &env,
        "[[round]]\n[[round.tool_call]]\nid = \"p1\"\nname = \"post\"\n\
         arguments = { text = \"acquire the competitor before the summer\" }\n[[round]]\ntext = \"done\"\n",
    );
    let mut terminal = Terminal::start(&env, &format!("chat --provider fake --scenario {path}"));
    wait_for_prompt(&mut terminal, 1);
    terminal.send("share the gist of @notes/plan.txt\r");
    terminal.wait_for(APPROVAL_PROMPT);
    assert!(
        terminal.screen.contains("data_flow") && terminal.screen.contains("attached file notes/plan.txt"),
        "{}",
        terminal.screen
    );
    terminal.send("n\n");
    wait_for_prompt(&mut terminal, 2);
}
