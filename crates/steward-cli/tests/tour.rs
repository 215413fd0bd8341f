//! The README's tour on the default (classic) planner, as a new user runs it: a refused edit
//! names the ways to approve, and "now the same in FILE" continues the conversation.

use crate::common;

use common::{Env, code, events, find, stderr, stdout};

/// Without a terminal an edit is refused (`no_approver`); the printer and the end of the run
/// say how to give the approval: the interactive session, or `--approvals wait`.
#[test]
fn a_refused_edit_names_the_ways_to_approve() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    let out = env.steward(&["run", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let printed = stdout(&out);
    let rejected = printed.lines().find(|l| l.contains("rejected")).unwrap_or_else(|| panic!("{printed}"));
    assert!(rejected.contains("no_approver") && rejected.contains("--approvals wait"), "{rejected}");
    assert!(rejected.contains("run `steward` in a terminal"), "{rejected}");
    let end = stderr(&out);
    let last = end.lines().last().unwrap_or_default();
    assert!(last.contains("--approvals wait") && last.contains("`steward`"), "the end of the run: {end}");
    assert_eq!(env.read("note.txt"), "old text\n");
}

/// `steward run --continue "now the same in README.md"` repeats the previous turn's replacement
/// in the other file; the classic planner needs no model for it.
#[test]
fn now_the_same_in_another_file_repeats_the_previous_replacement() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    env.write("README.md", "an old readme\n");
    env.git_init();
    let first = env.steward(&["run", "--json", "replace 'old' with 'new' in note.txt"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let out = env.steward(&["run", "--json", "--continue", "now the same in README.md"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let requested = find(&evs, "tool_requested");
    assert_eq!(requested["tool"], "edit", "{requested}");
    assert_eq!(requested["arguments"], serde_json::json!({"path": "README.md", "old": "old", "new": "new"}));
    assert!(find(&evs, "patch_proposed")["diff"].as_str().unwrap().contains("+an new readme"), "{evs:?}");

    // With nothing to repeat, it says so instead of printing its help.
    let other = Env::new();
    let out = other.steward(&["run", "--json", "git status"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = other.steward(&["run", "--json", "--continue", "now the same in README.md"]);
    let evs = events(&out);
    let done = find(&evs, "run_completed");
    assert!(done["final"].as_str().unwrap().contains("no earlier task"), "{done}");
}
