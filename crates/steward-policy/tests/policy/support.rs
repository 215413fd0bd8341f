//! Helpers shared by the policy tests.

use steward_policy::PolicyConfig;

/// The `[policy]` table of a TOML text (panics on a text the test wrote wrong).
pub fn config(toml_text: &str) -> PolicyConfig {
    #[derive(serde::Deserialize)]
    struct Root {
        policy: PolicyConfig,
    }
    toml::from_str::<Root>(toml_text).unwrap().policy
}
