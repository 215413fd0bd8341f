//! Generated tools through the real `steward` binary, which is also their worker
//! (`steward __tool-worker`): off by default, generated and used in the next round, listed,
//! shown and removed; the `celsius` eval cases.

use crate::common;

use common::{Env, code, events, names, stderr, stdout};

const PLANNER: &str = r#"
[[round]]
[[round.tool_call]]
name = "fahrenheit_to_celsius"
arguments = { fahrenheit = 100 }
[[round]]
[[round.tool_call]]
name = "fahrenheit_to_celsius"
arguments = { fahrenheit = 100 }
[[round]]
text = "100 F is 37.8 C."
"#;

const GENERATOR: &str = r#"
[[round]]
text = '''{"description": "Converts Fahrenheit to Celsius.", "input_schema": {"type": "object", "required": ["fahrenheit"], "properties": {"fahrenheit": {"type": "number"}}}, "source": "function run(input) { return { celsius: Math.round((input.fahrenheit - 32) * 50 / 9) / 10 }; }"}'''
"#;

fn setup(enabled: bool) -> (Env, String) {
    let env = Env::new();
    env.write("note.txt", "old\n");
    env.git_init();
    let planner = env.dir.path().join("planner.toml");
    std::fs::write(&planner, PLANNER).unwrap();
    let generator = env.dir.path().join("generator.toml");
    std::fs::write(&generator, GENERATOR).unwrap();
    if enabled {
        env.user_config(&format!(
            "[generated_tools]\nenabled = true\nprovider = \"gen\"\nrequire_approval = false\n\
             [providers.gen]\nkind = \"fake\"\nscenario = {:?}\n\
             [[policy.rule]]\nname = \"celsius\"\ntool = \"fahrenheit_to_celsius\"\ndecision = \"allow\"\n",
            generator.display().to_string()
        ));
    }
    (env, planner.display().to_string())
}

#[test]
fn an_unknown_tool_is_denied_when_generation_is_off() {
    let (env, planner) = setup(false);
    let out = env.steward(&["run", "--provider", "fake", "--scenario", &planner, "--json", "Convert 100 F to C"]);
    let names = names(&events(&out));
    assert!(names.contains(&"tool_denied".to_string()), "{names:?}\n{}", stderr(&out));
    assert!(!names.contains(&"tool_completed".to_string()), "{names:?}");
    let list = env.steward(&["tools", "generated"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    assert!(stdout(&list).contains("No generated tools"), "{}", stdout(&list));
}

#[test]
fn a_generated_tool_is_used_next_round_listed_shown_and_removed() {
    let (env, planner) = setup(true);
    let out = env.steward(&["run", "--provider", "fake", "--scenario", &planner, "--json", "Convert 100 F to C"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let events = events(&out);
    let completed: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "tool_completed").collect();
    assert_eq!(completed.len(), 1, "{:?}", names(&events));
    assert_eq!(completed[0]["tool"], "fahrenheit_to_celsius");
    assert!(completed[0]["output"].as_str().unwrap().contains("\"celsius\":37.8"), "{}", completed[0]);
    assert!(events.iter().any(|e| e["event"] == "stage_started" && e["stage"] == "generator"), "{:?}", names(&events));

    let list = env.steward(&["tools", "generated"]);
    let text = stdout(&list);
    assert!(text.contains("fahrenheit_to_celsius@v1") && text.contains("offered"), "{text}");
    let shown = env.steward(&["tools", "generated", "show", "fahrenheit_to_celsius@v1"]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    assert!(stdout(&shown).contains("function run(input)"), "{}", stdout(&shown));
    assert!(stdout(&shown).contains("source sha256 "), "{}", stdout(&shown));

    // A later run offers it from its first round: no generation.
    let reuse = env.dir.path().join("reuse.toml");
    std::fs::write(&reuse, "[[round]]\n[[round.tool_call]]\nname = \"fahrenheit_to_celsius\"\narguments = { fahrenheit = 212 }\n[[round]]\ntext = \"100 C.\"\n").unwrap();
    let out =
        env.steward(&["run", "--provider", "fake", "--scenario", &reuse.display().to_string(), "--json", "212 F?"]);
    let events = common::events(&out);
    assert!(!events.iter().any(|e| e["stage"] == "generator"), "{:?}", names(&events));
    let done = events.iter().find(|e| e["event"] == "tool_completed").expect("the tool ran");
    assert!(done["output"].as_str().unwrap().contains("\"celsius\":100"), "{done}");

    let removed = env.steward(&["tools", "generated", "remove", "fahrenheit_to_celsius"]);
    assert_eq!(code(&removed), 0, "{}", stderr(&removed));
    assert!(stdout(&removed).contains("fahrenheit_to_celsius@v1"), "{}", stdout(&removed));
    let list = stdout(&env.steward(&["tools", "generated", "--json"]));
    assert!(list.contains("\"state\":\"removed\""), "{list}");
    let audit = stdout(&env.steward(&["audit", "list"]));
    assert!(audit.contains("generated_tool_remove"), "{audit}");
    assert!(audit.contains("generated_tool"), "{audit}");
}

#[test]
fn the_celsius_eval_cases_pass_through_the_binary() {
    let env = Env::new();
    let out = env.steward(&["eval", "--case", "celsius_reuse"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("celsius_reuse: passed"), "{}", stderr(&out));
    let out = env.steward(&["eval", "--case", "celsius"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("celsius: passed"), "{}", stderr(&out));
}
