//! `steward compare`: one task with the classic and the model planner (the scripted `fake`
//! provider) through the binary, side by side with their costs; tool calls still pass the gate.

use crate::common;

use common::*;

#[test]
fn compare_runs_both_planners_and_prints_their_costs_side_by_side() {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    let planner = scenario(&env, "[[round]]\ntext = \"Model answer.\"\n");
    // Without a terminal the classic planner's edit asks and is denied, as in `steward run`.
    let task = "replace 'old' with 'new' in note.txt";
    let out = env.steward(&["compare", "--json", "--provider", "fake", "--scenario", &planner, task]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = events(&out);
    assert_eq!(lines.len(), 2, "{}", stdout(&out));
    let (classic, model) = (&lines[0], &lines[1]);
    assert_eq!(classic["planner"], "classic");
    assert_eq!(classic["label"], "Classic planner");
    assert_eq!(classic["tool_calls"], 1, "{classic}");
    assert_eq!(classic["refused"], 1, "{classic}");
    assert_eq!(model["planner"], "model");
    assert_eq!(model["provider"], "fake");
    assert_eq!(model["final"], "Model answer.");
    assert_eq!(model["stop"], "answered");
    assert_eq!(model["rounds"], 1);
    assert!(model["input_tokens"].as_u64().is_some() && model["wall_ms"].as_u64().is_some(), "{model}");
    assert_eq!(std::fs::read_to_string(env.ws().join("note.txt")).unwrap(), "old text\n");

    // The table names both planners and every cost.
    let out = env.steward(&["compare", "--provider", "fake", "--scenario", &planner, task]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    for part in
        ["Classic planner", "Model planner (fake/", "rounds", "tool calls", "1 (1 refused)", "tokens", "wall time"]
    {
        assert!(text.contains(part), "{part} missing:\n{text}");
    }
    assert!(text.contains("── Model planner (fake/") && text.contains("Model answer."), "{text}");
    // Both runs of each comparison are ordinary runs.
    let runs = env.steward(&["runs", "--json"]);
    assert_eq!(stdout(&runs).lines().count(), 4, "{}", stdout(&runs));
}

#[test]
fn compare_without_a_model_provider_is_a_usage_error_and_runs_nothing() {
    let env = Env::new();
    let out = env.steward(&["compare", "list the files"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let runs = env.steward(&["runs", "--json"]);
    assert_eq!(stdout(&runs).trim(), "", "{}", stdout(&runs));
}
