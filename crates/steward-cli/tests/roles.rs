//! `steward run --mode roles`: the role pipeline end to end through the binary, with scripted
//! providers per role and a local drafter whose server is down.

use crate::common;

use common::*;

fn fake_provider(env: &Env, name: &str, text: &str) -> String {
    let path = env.dir.path().join(format!("{name}.toml"));
    std::fs::write(&path, format!("[[round]]\ntext = {text:?}\n")).unwrap();
    format!("[providers.{name}]\nkind = \"fake\"\nscenario = {:?}\n", path.display().to_string())
}

#[test]
fn roles_mode_runs_every_stage_and_survives_a_local_drafter_that_is_down() {
    let env = Env::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = String::new();
    for (name, text) in
        [("cloud", "Cloud draft."), ("critic", "Vague."), ("reviewer", "Cloud is best."), ("synth", "Final.")]
    {
        config.push_str(&fake_provider(&env, name, text));
    }
    config.push_str(&format!(
        "[providers.down]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\ndefault_model = \"qwen2.5:7b\"\nmax_retries = 1\n\
         [roles.local_drafter]\nprovider = \"down\"\n[roles.cloud_drafter]\nprovider = \"cloud\"\n\
         [roles.critic]\nprovider = \"critic\"\n[roles.reviewer]\nprovider = \"reviewer\"\n[roles.synthesizer]\nprovider = \"synth\"\n"
    ));
    env.user_config(&config);
    let planner = scenario(&env, "[[round]]\ntext = \"Findings.\"\n");
    let out =
        env.steward(&["run", "--json", "--mode", "roles", "--provider", "fake", "--scenario", &planner, "explain"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    let started: Vec<&str> =
        evs.iter().filter(|e| e["event"] == "stage_started").map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(started[0], "planner");
    assert_eq!(started[3..], ["critic", "reviewer", "synthesizer"], "{started:?}");
    let failed = find(&evs, "stage_failed");
    assert_eq!(failed["stage"], "local_drafter");
    assert_eq!(failed["class"], "provider_unreachable");
    let done = find(&evs, "run_completed");
    assert_eq!(done["final"], "Final.");
    assert_eq!(done["stop_reason"], "answered");
    // Each role's provider and model is recorded on the run and shown in its trace.
    let roles = find(&evs, "run_started")["roles"].clone();
    let who: Vec<String> = roles
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}={}/{}",
                r["role"].as_str().unwrap(),
                r["provider"].as_str().unwrap(),
                r["model"].as_str().unwrap()
            )
        })
        .collect();
    assert!(who[0].starts_with("planner=fake/"), "{who:?}");
    assert!(who.contains(&"local_drafter=down/qwen2.5:7b".to_string()), "{who:?}");
    assert!(who.iter().any(|w| w.starts_with("synthesizer=synth/")), "{who:?}");
    assert_eq!(who.len(), 6, "{who:?}");
    let shown = env.steward(&["show", "last"]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    let text = stdout(&shown);
    assert!(text.contains("role local_drafter: down · qwen2.5:7b"), "{text}");
    assert!(text.contains("role critic: critic · "), "{text}");

    // Without --json the plan is listed, with each role's locality.
    let out = env.steward(&["run", "--mode", "roles", "--provider", "fake", "--scenario", &planner, "explain"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("local_drafter · down · qwen2.5:7b (local)"), "{err}");
    assert!(
        err.contains("✗ local_drafter failed [provider_unreachable]")
            || stdout(&out).contains("✗ local_drafter failed")
    );
    assert!(stdout(&out).contains("Final."), "{}", stdout(&out));

    // The default mode is still the loop: the planner's answer is final.
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &planner, "explain"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evs = events(&out);
    assert_eq!(find(&evs, "run_completed")["final"], "Findings.");
    assert_eq!(find(&evs, "run_started")["roles"].as_array().map(Vec::len), Some(1));
    assert!(evs.iter().all(|e| e["stage"].as_str().is_none_or(|s| s == "planner")));
}

#[test]
fn roles_mode_without_providers_for_the_roles_is_a_usage_error() {
    let env = Env::new();
    let out = env.steward(&["run", "--mode", "roles", "list files"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("[roles.local_drafter]"), "{}", stderr(&out));
    let out = env.steward(&["run", "--mode", "swarm", "list files"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

/// `[limits] max_tool_calls_per_role`: the planner role stops at its own limit, the pipeline
/// goes on from what it had, and the run's end names the role; loop mode has no roles.
#[test]
fn a_role_s_tool_call_limit_stops_it_and_names_the_role() {
    let env = Env::new();
    env.write("a.txt", "1\n2\n3\n4\n5\n");
    let mut config = String::from("[limits]\nmax_tool_calls_per_role = { planner = 2 }\n");
    for (name, text) in [("drafts", "A draft."), ("critic", "Vague."), ("reviewer", "Fine."), ("synth", "Final.")] {
        config.push_str(&fake_provider(&env, name, text));
    }
    config.push_str(
        "[roles.local_drafter]\nprovider = \"drafts\"\n[roles.cloud_drafter]\nprovider = \"drafts\"\n\
         [roles.critic]\nprovider = \"critic\"\n[roles.reviewer]\nprovider = \"reviewer\"\n[roles.synthesizer]\nprovider = \"synth\"\n",
    );
    env.user_config(&config);
    let read = |line: u32| {
        format!("[[round.tool_call]]\nname = \"read\"\narguments = {{ path = \"a.txt\", start_line = {line} }}\n")
    };
    let planner = scenario(
        &env,
        &format!("[[round]]\n{}{}[[round]]\n{}[[round]]\ntext = \"Findings.\"\n", read(1), read(2), read(3)),
    );
    let out =
        env.steward(&["run", "--json", "--mode", "roles", "--provider", "fake", "--scenario", &planner, "explain"]);
    assert_eq!(code(&out), 3, "stopped by a limit: {}", stderr(&out));
    let evs = events(&out);
    let done = find(&evs, "run_completed");
    assert_eq!(done["stop_reason"], "max_tool_calls", "{done}");
    assert_eq!(done["limit"], "max_tool_calls_per_role: planner (2)", "{done}");
    assert_eq!(done["final"], "Final.", "the pipeline went on from the planner's findings");
    let ran = evs.iter().filter(|e| e["event"] == "tool_completed").count();
    assert_eq!(ran, 2, "{:?}", names(&evs));

    let out = env.steward(&["run", "--mode", "roles", "--provider", "fake", "--scenario", &planner, "explain"]);
    assert!(stderr(&out).contains("max_tool_calls (max_tool_calls_per_role: planner (2))"), "{}", stderr(&out));

    // Loop mode has no roles: the run limit alone applies.
    let out = env.steward(&["run", "--json", "--provider", "fake", "--scenario", &planner, "explain"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let done = find(&events(&out), "run_completed").clone();
    assert_eq!((done["stop_reason"].as_str(), done.get("limit")), (Some("answered"), None), "{done}");

    // A limit of 0 or an unknown role is a configuration error naming it.
    for (bad, named) in [("{ planner = 0 }", "max_tool_calls_per_role.planner"), ("{ drafter = 1 }", "drafter")] {
        env.user_config(&config.replace("{ planner = 2 }", bad));
        let out = env.steward(&["run", "--mode", "roles", "--provider", "fake", "--scenario", &planner, "explain"]);
        assert_eq!(code(&out), 2, "{bad}: {}", stderr(&out));
        assert!(stderr(&out).contains(named), "{bad}: {}", stderr(&out));
    }
}
