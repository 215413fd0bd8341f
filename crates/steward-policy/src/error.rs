//! What the gate reports about a configuration it cannot use.

/// A configuration the gate cannot use.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A glob does not compile. `rule` is the `[[policy.rule]]` name, or `allowed_actions` /
    /// `blocked_actions`.
    #[error("policy rule `{rule}`: bad glob `{glob}`: {message}")]
    BadGlob {
        /// Where the glob is.
        rule: String,
        /// The glob.
        glob: String,
        /// The parser's message.
        message: String,
    },
    /// A `[[policy.rule]]` has an empty name.
    #[error("a policy rule has an empty name")]
    EmptyRuleName,
    /// A rule's `argv` is malformed (empty, `**` not last, a path as program) or the rule's
    /// `tool` does not match `shell_command`.
    #[error("policy rule `{rule}`: {message}")]
    BadArgvRule {
        /// The rule name.
        rule: String,
        /// What is wrong.
        message: String,
    },
    /// A rule's `match` example does not match, a `not_match` example does, or an example
    /// does not parse into exactly one simple command.
    #[error("policy rule `{rule}`, example {example}: {message}")]
    Example {
        /// The rule name.
        rule: String,
        /// The example, as configured.
        example: String,
        /// What went wrong.
        message: String,
    },
    /// A setting has an unusable value (`taint_escalation_risk`, `credential_scope`,
    /// `approval_ttl_seconds`, `[policy.risk]`).
    #[error("policy setting `{setting}`: {message}")]
    BadSetting {
        /// The setting's name.
        setting: String,
        /// What is wrong.
        message: String,
    },
}
