//! Usage and configuration errors: the ones that end a command with exit code 2.

/// A usage or configuration error: exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A usage or configuration error (exit code 2) from any text.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// A usage or configuration error (exit code 2) from a message.
pub fn usage_error(message: &str) -> anyhow::Error {
    usage(message)
}
