//! Credentials by declaration (SPEC S3): values a configuration says are credentials are
//! redacted whatever their names look like. A variable named in `[policy.credential_scope]`
//! is one a tool needs as a credential (`DEPLOY_THING` is as secret as `DEPLOY_TOKEN`), and a
//! value written into a `[[tool]]`'s `env` table is configuration the model never sees, so
//! neither may come back through tool output, events, errors, the store or `config show`.

use crate::Config;
use crate::EnvValue;

impl Config {
    /// The values this configuration declares as credentials: the values (looked up with
    /// `env`) of every variable named in `[policy.credential_scope]`, and of every `[[tool]]`
    /// `env = true` variable listed there too, plus every literal `[[tool]] env` value and every
    /// literal MCP server `env` or `headers` value under a secret-looking name.
    /// Variables on the sandbox's always-passed list (`PATH`, `HOME`, `LANG`, `LC_*` …) are
    /// left out: every sandboxed program receives them, so they are not credentials. The
    /// redactor ignores values shorter than 8 bytes.
    pub fn declared_credential_values(&self, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
        let always_passed = |name: &str| steward_sandbox::DEFAULT_ENV_ALLOW.contains(&name) || name.starts_with("LC_");
        let mut values = Vec::new();
        for name in self.policy.credential_scope.values().flatten() {
            if !always_passed(name)
                && let Some(value) = env(name)
            {
                values.push(value);
            }
        }
        for tool in &self.tools {
            for (name, value) in &tool.env {
                if let EnvValue::Set(text) = value
                    && !always_passed(name)
                {
                    values.push(text.clone());
                }
            }
        }
        // An MCP server's literal `env` or `headers` value under a secret-looking name (a
        // project's `.mcp.json` may hold one) must not come back through what the server says.
        for server in self.mcp_servers.values() {
            for (name, value) in server.env.iter().chain(&server.headers) {
                if let steward_mcp::ValueSource::Literal(text) = value
                    && (steward_sandbox::env_name_looks_secret(name) || name.eq_ignore_ascii_case("authorization"))
                {
                    values.push(text.clone());
                }
            }
            // A login's client secret, literal or from the environment.
            if let Some(secret) = server.oauth.as_ref().and_then(|oauth| oauth.client_secret.as_ref())
                && let Ok(value) = secret.resolve(env)
            {
                values.push(value);
            }
        }
        values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_variables_and_literal_tool_env_values_are_declared_credentials() {
        let raw: crate::RawConfig = toml::from_str(
            r#"
[policy.credential_scope]
deploy = ["DEPLOY_THING", "PATH"]

[[tool]]
name = "deploy"
description = "d"
command = ["true"]
env = { FOO = "literal-value", LANG = "en_US.UTF-8", HOME = true }

[mcp_servers.proj]
command = ["srv"]
env = { SERVICE_TOKEN = "mcp-literal-token", LOG_LEVEL = "verbose-info", REF_KEY = { env = "X" } }
"#,
        )
        .unwrap();
        let config = Config::resolve(raw).unwrap();
        let env = |name: &str| match name {
            "DEPLOY_THING" => Some("s3cr3t-value-123".to_string()),
            "PATH" => Some("/usr/bin:/bin".to_string()),
            _ => None,
        };
        let mut values = config.declared_credential_values(&env);
        values.sort();
        assert_eq!(values, ["literal-value", "mcp-literal-token", "s3cr3t-value-123"]);
    }
}
