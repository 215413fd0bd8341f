//! Builders shared by the policy crate's test binaries (`policy`, `corpus`, `fuzz_policy`):
//! a policy from TOML text, a workspace holding given files, and the programs whose
//! subcommands sit behind global options, with the rules the tests put on them.
#![allow(dead_code)]

use steward_policy::{Policy, PolicyConfig, Workspace};
use steward_protocol::DecisionKind::{self, Ask, Deny};

/// The `[policy]` table of a TOML text (panics on a text the test wrote wrong).
pub fn config(toml_text: &str) -> PolicyConfig {
    #[derive(serde::Deserialize)]
    struct Root {
        policy: PolicyConfig,
    }
    toml::from_str::<Root>(toml_text).unwrap().policy
}

/// The policy of a TOML text holding a `[policy]` table.
pub fn policy(toml_text: &str) -> Policy {
    Policy::new(&config(toml_text)).unwrap()
}

/// A workspace in a new temporary folder holding `files` (path relative to the root, content;
/// a path ending in `/` is an empty folder), with no extra secret patterns.
pub fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let at = dir.path().join(path);
        if path.ends_with('/') {
            std::fs::create_dir_all(&at).unwrap();
            continue;
        }
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, content).unwrap();
    }
    let ws = Workspace::open(dir.path(), &[]).unwrap();
    (dir, ws)
}

/// A program that takes global options before a subcommand, one of its subcommands a policy
/// would stop, arguments for it, and the decision the tests' rule on it gives:
/// `(program, subcommand words, further arguments, decision)`.
pub const SUBCOMMANDS: &[(&str, &str, &str, DecisionKind)] = &[
    ("git", "push", "origin main", Deny),
    ("cargo", "publish", "--allow-dirty", Deny),
    ("rustup", "self uninstall", "-y", Deny),
    ("npm", "publish", "", Deny),
    ("npx", "cowsay", "hi", Ask),
    ("pnpm", "publish", "", Deny),
    ("yarn", "publish", "", Deny),
    ("bun", "publish", "", Deny),
    ("pip", "install", "requests", Ask),
    ("pip3", "install", "requests", Ask),
    ("uv", "publish", "", Deny),
    ("python", "-m pip", "install requests", Ask),
    ("python3", "-m pip", "install requests", Ask),
    ("docker", "push", "img", Deny),
    ("podman", "push", "img", Deny),
    ("kubectl", "delete", "pod web", Deny),
    ("helm", "uninstall", "web", Deny),
    ("terraform", "destroy", "", Deny),
    ("tofu", "destroy", "", Deny),
    ("make", "deploy", "", Deny),
    ("gmake", "deploy", "", Deny),
    ("go", "generate", "gen", Ask),
    ("gh", "release", "create v1", Deny),
    ("systemctl", "stop", "web", Deny),
];

/// `[[policy.rule]]` tables for `shell_command`: for each `(name, program, subcommand words,
/// decision)` a rule on `[PROGRAM, WORDS…, "**"]`, and after each such rule an allow rule
/// `[PROGRAM, "**"]` named after the program (a policy that allows a tool but one subcommand).
pub fn subcommand_rules(rules: &[(String, &str, &str, DecisionKind)]) -> String {
    let mut text = String::new();
    for (name, program, words, decision) in rules {
        let elements: Vec<String> = words.split(' ').map(|w| format!("{w:?}")).collect();
        text.push_str(&format!(
            "[[policy.rule]]\nname = \"{name}\"\ntool = \"shell_command\"\n\
             argv = [\"{program}\", {}, \"**\"]\ndecision = \"{}\"\n",
            elements.join(", "),
            decision.as_str()
        ));
        text.push_str(&format!(
            "[[policy.rule]]\nname = \"{program}\"\ntool = \"shell_command\"\nargv = [\"{program}\", \"**\"]\n\
             decision = \"allow\"\n"
        ));
    }
    text
}
