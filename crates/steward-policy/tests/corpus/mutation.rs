//! The corpus bites Steward's own gate: with wrapper opening or option reading switched
//! off, the same variants come out allowed. A corpus that still passed would not be
//! testing either.

use steward_policy::shell::without_wrapper_opening_for_tests;
use steward_protocol::DecisionKind::Deny;

use crate::option_cases::{OPTION_CASES, option_case_variants, option_policy};
use crate::threats::{RUNNERS, judge, runner_cases, runner_policy_text};
use crate::{policy_from, setup};

#[test]
fn without_wrapper_opening_the_runner_corpus_finds_bypasses() {
    let (_dir, ws, _) = setup();
    let policy = policy_from(&runner_policy_text());
    let cases = runner_cases();
    let (bypasses, _) = without_wrapper_opening_for_tests(|| judge(&policy, &ws, &cases));
    // Every transparent wrapper the corpus names lets the command inside it through.
    for wrapper in ["env", "nice", "timeout", "nohup", "time", "setsid", "stdbuf", "xargs", "command"] {
        assert!(
            bypasses.iter().any(|b| b.contains(&format!("allowed by allow-{wrapper}"))),
            "without wrapper opening no `{wrapper}` variant came out allowed"
        );
    }
    let opened = RUNNERS.iter().filter(|r| r.opened).count();
    assert!(bypasses.len() >= opened * 10, "only {} bypasses without wrapper opening", bypasses.len());
    // The switch is per call: the gate opens wrappers again afterwards.
    let (after, _) = judge(&policy, &ws, &cases);
    assert!(after.is_empty(), "{after:?}");
}

#[test]
fn without_option_reading_the_corpus_finds_bypasses() {
    let (_dir, ws, _) = setup();
    let policy = policy_from(&runner_policy_text()).without_option_reading_for_tests();
    let (bypasses, _) = judge(&policy, &ws, &runner_cases());
    // `rm -fr`, `rm -r -f`, `rm --recursive --force` … meet the `rm **` allow rule instead.
    for spelled in ["rm -fr build", "rm -r -f build", "rm --recursive --force build", "rm build -rf"] {
        assert!(bypasses.iter().any(|b| b.starts_with(&format!("{spelled:?}"))), "{spelled} was not let through");
    }
    assert!(bypasses.len() >= 100, "only {} bypasses without option reading", bypasses.len());
    let options = option_policy().without_option_reading_for_tests();
    let through = OPTION_CASES
        .iter()
        .flat_map(option_case_variants)
        .filter(|line| options.judge_command(line, &ws).decision != Deny)
        .count();
    assert!(through >= 500, "only {through} option variants got past the deny rules");
}
