//! Provider configuration, presets and construction (SPEC P2, P5, P9).
//!
//! TOML shape (one `[providers.NAME]` table per provider; the loader lives elsewhere):
//!
//! ```toml
//! [providers.grok]
//! kind = "openai"                       # "openai" | "anthropic" | "fake"
//! base_url = "https://api.x.ai/v1"
//! api_key_env = ["XAI_API_KEY", "GROK_API_KEY"]   # or one name; tried in order
//! default_model = "grok-4"
//! tool_call_format = "hermes"           # optional: the text tool-call format (see `formats`)
//! ```
//!
//! Keys are read only through the `env` function given to [`build_provider`], sent only in
//! headers (`Authorization: Bearer …` or `x-api-key`), and never shown in messages or `Debug`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use steward_protocol::ErrorClass;

use crate::anthropic::AnthropicWire;
use crate::constrained::ConstrainedSetting;
use crate::fake::FakeProvider;
use crate::formats::ToolCallFormatSetting;
use crate::http::{ApiKey, HttpCore, build_client};
use crate::openai::OpenAiWire;
use crate::responses::ResponsesWire;
use crate::retry::{DEFAULT_BACKOFF_MS, DEFAULT_TRIES, RetryPolicy};
use crate::window::WindowSource;
use crate::wire::{HttpProvider, Settings};
use crate::{Provider, ProviderError};

/// Which wire protocol a provider speaks.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions.
    Openai,
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Responses API (`POST {base_url}/responses`, as Codex speaks it); `kind =
    /// "openai-responses"`.
    #[serde(rename = "openai-responses", alias = "openai_responses")]
    OpenaiResponses,
    /// The scripted fake provider.
    Fake,
}

/// One environment variable name, or several tried in order.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(untagged)]
pub enum ApiKeyEnv {
    /// `api_key_env = "OPENAI_API_KEY"`
    One(String),
    /// `api_key_env = ["XAI_API_KEY", "GROK_API_KEY"]`
    Many(Vec<String>),
}

impl ApiKeyEnv {
    /// The names in order.
    pub fn names(&self) -> Vec<String> {
        match self {
            ApiKeyEnv::One(n) => vec![n.clone()],
            ApiKeyEnv::Many(ns) => ns.clone(),
        }
    }
}

/// Settings of one provider. Unknown fields are rejected.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Wire protocol.
    pub kind: ProviderKind,
    /// Endpoint root, e.g. `https://api.openai.com/v1` (OpenAI-compatible: the path before
    /// `/chat/completions`; `openai-responses`: before `/responses`, the default) or
    /// `https://api.anthropic.com` (Anthropic: before `/v1/messages`, the default).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Environment variable that, when set and not empty, replaces `base_url` (the presets
    /// read `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL` and `OLLAMA_HOST`, as the tools they come
    /// from do; `OLLAMA_HOST` is read as Ollama reads it, see [`ollama_host_url`]).
    #[serde(default)]
    pub base_url_env: Option<String>,
    /// Environment variable(s) holding the key, tried in order; the first non-empty one wins.
    #[serde(default)]
    pub api_key_env: Option<ApiKeyEnv>,
    /// Whether a missing key is an error; defaults to true when `api_key_env` is set.
    #[serde(default)]
    pub api_key_required: Option<bool>,
    /// Model used when a request names none.
    #[serde(default)]
    pub default_model: Option<String>,
    /// Default tool choice: `auto`, `none`, `required` or a tool name.
    #[serde(default)]
    pub tool_choice: Option<String>,
    /// Stream replies over SSE (default true).
    #[serde(default = "yes")]
    pub stream: bool,
    /// Recover tool calls written as text (default true).
    #[serde(default = "yes")]
    pub text_tool_calls: bool,
    /// The text tool-call format the models of this provider write: one name
    /// (`tool_call_format = "hermes"`) or a table from model id (or `prefix*`) to name. Unset,
    /// or a model no entry names: the format is detected from how each message starts.
    #[serde(default)]
    pub tool_call_format: Option<ToolCallFormatSetting>,
    /// Scenario file of the fake provider (TOML or JSON, by extension).
    #[serde(default)]
    pub scenario: Option<PathBuf>,
    /// Output token limit when a request sets none (Anthropic requires one: default 4096; a
    /// server on this machine gets a quarter of its context window, at most 1024).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Connect timeout and longest silence while reading a reply, in ms (default: none).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Tries in total for a model call, first included (default 3).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(extend("default" = DEFAULT_TRIES)))]
    pub max_retries: Option<u32>,
    /// Base of the exponential backoff between tries, in ms (default 500).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(extend("default" = DEFAULT_BACKOFF_MS)))]
    pub retry_backoff_ms: Option<u64>,
    /// OpenAI-compatible only: the role name of system messages, `system` (default) or
    /// `developer` (preferred by OpenAI's reasoning models).
    #[serde(default)]
    pub system_role: Option<String>,
    /// The model's context window in tokens. When set (or reported by the server, see
    /// `probe_context_window`), the planner's prompt is shrunk to fit it before it is sent.
    #[serde(default)]
    pub context_window: Option<u32>,
    /// OpenAI-compatible only: ask the server for the model's context window when
    /// `context_window` is unset (llama.cpp `/props`, Ollama `/api/show`, the model list's
    /// metadata). Default: true for the `llamacpp`, `ollama` and `lmstudio` presets (and
    /// `--base-url`), false otherwise.
    #[serde(default)]
    pub probe_context_window: Option<bool>,
    /// OpenAI-compatible only: hold a reply that may call tools to "one call of an offered
    /// tool, with arguments matching its schema, or an answer" by a JSON Schema sent with the
    /// request. `auto` (default): the replies after one that could not be used (unusable
    /// markup, a run-away reply, a call of a tool not offered), on a server on this machine that the
    /// context-window probe (`probe_context_window`) finds to be llama.cpp, Ollama or vLLM;
    /// `on`: every reply (set by the `lmstudio` preset); `off`: none.
    #[serde(default)]
    pub constrained: ConstrainedSetting,
}

fn yes() -> bool {
    true
}

impl ProviderConfig {
    /// A config of `kind` with every option at its default.
    pub fn new(kind: ProviderKind) -> Self {
        ProviderConfig {
            kind,
            base_url: None,
            base_url_env: None,
            api_key_env: None,
            api_key_required: None,
            default_model: None,
            tool_choice: None,
            stream: true,
            text_tool_calls: true,
            tool_call_format: None,
            scenario: None,
            max_tokens: None,
            timeout_ms: None,
            max_retries: None,
            retry_backoff_ms: None,
            system_role: None,
            context_window: None,
            probe_context_window: None,
            constrained: ConstrainedSetting::Auto,
        }
    }

    /// Whether a key must be present: `api_key_required`, else true when `api_key_env` is set.
    pub fn key_required(&self) -> bool {
        self.api_key_required.unwrap_or(self.api_key_env.is_some())
    }

    /// The retry policy from `max_retries` and `retry_backoff_ms`.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            tries: self.max_retries.unwrap_or(DEFAULT_TRIES).max(1),
            backoff: Duration::from_millis(self.retry_backoff_ms.unwrap_or(DEFAULT_BACKOFF_MS)),
        }
    }
}

/// Names of the built-in presets, for listings and `--provider` completion.
pub const PRESETS: &[&str] = &["openai", "openrouter", "xai", "anthropic", "ollama", "lmstudio", "llamacpp", "fake"];

/// The built-in settings of a preset (see [`PRESETS`]), or `None` for an unknown name.
///
/// | preset | base URL (variable replacing it) | key variable(s) | default model |
/// |---|---|---|---|
/// | `openai` | `https://api.openai.com/v1` (`OPENAI_BASE_URL`) | `OPENAI_API_KEY` | `gpt-4.1-mini` |
/// | `openrouter` | `https://openrouter.ai/api/v1` | `OPENROUTER_API_KEY` | `openai/gpt-4.1-mini` |
/// | `xai` | `https://api.x.ai/v1` | `XAI_API_KEY`, then `GROK_API_KEY` | `grok-4` |
/// | `anthropic` | `https://api.anthropic.com` (`ANTHROPIC_BASE_URL`) | `ANTHROPIC_API_KEY` | `claude-sonnet-4-5` |
/// | `ollama` | `http://localhost:11434/v1` (`OLLAMA_HOST`) | `OLLAMA_API_KEY` (optional) | `qwen3:8b` |
/// | `lmstudio` | `http://localhost:1234/v1` | `LMSTUDIO_API_KEY` (optional) | `local-model` |
/// | `llamacpp` | `http://localhost:8080/v1` | none | `local-model` |
/// | `fake` | – | none | `fake` |
pub fn preset(name: &str) -> Option<ProviderConfig> {
    let (kind, base, keys, required, model): (ProviderKind, Option<&str>, &[&str], bool, &str) = match name {
        "openai" => {
            (ProviderKind::Openai, Some("https://api.openai.com/v1"), &["OPENAI_API_KEY"], true, "gpt-4.1-mini")
        }
        "openrouter" => (
            ProviderKind::Openai,
            Some("https://openrouter.ai/api/v1"),
            &["OPENROUTER_API_KEY"],
            true,
            "openai/gpt-4.1-mini",
        ),
        "xai" => (ProviderKind::Openai, Some("https://api.x.ai/v1"), &["XAI_API_KEY", "GROK_API_KEY"], true, "grok-4"),
        "anthropic" => (
            ProviderKind::Anthropic,
            Some("https://api.anthropic.com"),
            &["ANTHROPIC_API_KEY"],
            true,
            "claude-sonnet-4-5",
        ),
        "ollama" => (ProviderKind::Openai, Some("http://localhost:11434/v1"), &["OLLAMA_API_KEY"], false, "qwen3:8b"),
        "lmstudio" => {
            (ProviderKind::Openai, Some("http://localhost:1234/v1"), &["LMSTUDIO_API_KEY"], false, "local-model")
        }
        "llamacpp" => (ProviderKind::Openai, Some("http://localhost:8080/v1"), &[], false, "local-model"),
        "fake" => (ProviderKind::Fake, None, &[], false, "fake"),
        _ => return None,
    };
    let mut cfg = ProviderConfig::new(kind);
    cfg.base_url = base.map(str::to_string);
    cfg.api_key_env = match keys {
        [] => None,
        [one] => Some(ApiKeyEnv::One(one.to_string())),
        many => Some(ApiKeyEnv::Many(many.iter().map(|s| s.to_string()).collect())),
    };
    cfg.api_key_required = Some(required);
    cfg.default_model = Some(model.to_string());
    cfg.base_url_env = match name {
        "openai" => Some("OPENAI_BASE_URL".to_string()),
        "anthropic" => Some("ANTHROPIC_BASE_URL".to_string()),
        "ollama" => Some(OLLAMA_HOST.to_string()),
        _ => None,
    };
    if matches!(name, "llamacpp" | "ollama" | "lmstudio") {
        cfg.probe_context_window = Some(true);
    }
    if name == "lmstudio" {
        cfg.constrained = ConstrainedSetting::On;
    }
    Some(cfg)
}

/// True when the host of the `http(s)` URL `url` is this machine: a loopback name or address
/// (`localhost`, `*.localhost`, `127.0.0.0/8`, `::1`) or the unspecified `0.0.0.0`/`::`.
pub fn is_loopback_url(url: &str) -> bool {
    let Some(rest) = url.trim().strip_prefix("http://").or_else(|| url.trim().strip_prefix("https://")) else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    }
    .to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
}

/// True when an OpenAI-compatible provider configured by `cfg`, sending to `base_url`, talks
/// to a server on this machine: its base URL is a loopback address, or it asks the server for
/// its context window (the `llamacpp`, `ollama` and `lmstudio` presets, `--base-url`,
/// `probe_context_window = true`), which only local servers answer.
pub(crate) fn is_local_server(cfg: &ProviderConfig, base_url: &str) -> bool {
    is_loopback_url(base_url) || cfg.probe_context_window.unwrap_or(false)
}

/// The endpoint root a provider built from `cfg` talks to: the value of `base_url_env` when
/// that variable is set and not empty, else `base_url`, else OpenAI's public API for the
/// `openai-responses` kind or Anthropic's public API for the
/// `anthropic` kind; without a trailing `/`.
///
/// Errors (`config`): no URL at all, a URL that is not `http(s)`, an `OLLAMA_HOST` that is not
/// a host.
pub(crate) fn resolve_base_url(
    name: &str,
    cfg: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ProviderError> {
    let from_env = match cfg.base_url_env.as_deref() {
        Some(var) => match env(var).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
            Some(value) if var == OLLAMA_HOST => Some(ollama_host_url(&value).ok_or_else(|| {
                ProviderError::new(ErrorClass::Config, format!("provider '{name}': {var} is not a host[:port] or URL"))
            })?),
            other => other,
        },
        None => None,
    };
    let base_url = from_env
        .as_deref()
        .or(cfg.base_url.as_deref())
        .or(match cfg.kind {
            ProviderKind::Anthropic => Some("https://api.anthropic.com"),
            ProviderKind::OpenaiResponses => Some("https://api.openai.com/v1"),
            _ => None,
        })
        .ok_or_else(|| ProviderError::new(ErrorClass::Config, format!("provider '{name}' has no base_url")))?
        .trim_end_matches('/')
        .to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(ProviderError::new(
            ErrorClass::Config,
            format!(
                "provider '{name}': base_url must start with http:// or https:// (got {})",
                crate::http::redact_url(&base_url)
            ),
        ));
    }
    Ok(base_url)
}

/// The key of provider `name` (the first non-empty variable of `api_key_env`) and the names
/// of those variables.
///
/// Errors: `missing_api_key` naming the variable(s) when a required key is unset or empty.
pub(crate) fn resolve_key(
    name: &str,
    cfg: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Option<ApiKey>, Vec<String>), ProviderError> {
    let names = cfg.api_key_env.as_ref().map(ApiKeyEnv::names).unwrap_or_default();
    let key = names.iter().find_map(|n| env(n).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()));
    if key.is_none() && cfg.key_required() {
        let what = match names.as_slice() {
            [] => "no api_key_env is configured".to_string(),
            [one] => format!("{one} is not set"),
            many => format!("none of {} is set", many.join(", ")),
        };
        return Err(ProviderError::new(
            ErrorClass::MissingApiKey,
            format!("provider '{name}' needs an API key: {what}"),
        ));
    }
    Ok((key.map(ApiKey::new), names))
}

/// The variable Ollama's own tools read for the server's address.
const OLLAMA_HOST: &str = "OLLAMA_HOST";

/// The OpenAI-compatible base URL of the Ollama server an `OLLAMA_HOST` value names, read as
/// Ollama reads it: an optional scheme (`http` when absent), a host (`127.0.0.1` when empty),
/// an optional port (11434 when absent, 80/443 for a URL with `http://`/`https://` and no
/// port) and an optional path, followed by `/v1`. `None` for a value that is not a host
/// (contains whitespace, or a scheme other than `http`/`https`).
pub fn ollama_host_url(value: &str) -> Option<String> {
    let value = value.trim().trim_end_matches('/');
    if value.chars().any(char::is_whitespace) {
        return None;
    }
    let (scheme, rest, default_port) = match value.split_once("://") {
        Some(("http", rest)) => ("http", rest, "80"),
        Some(("https", rest)) => ("https", rest, "443"),
        Some(_) => return None,
        None => ("http", value, "11434"),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        // A bracketed IPv6 address without a port ends with `]`.
        Some((host, port)) if !port.ends_with(']') => (host, port),
        _ => (authority, default_port),
    };
    let host = if host.is_empty() { "127.0.0.1" } else { host };
    Some(format!("{scheme}://{host}:{port}{path}/v1"))
}

/// Builds the provider `name` from `cfg`. `env` looks up environment variables (the only
/// place keys come from).
///
/// Errors: `missing_api_key` naming the variable(s) when a required key is unset or empty
/// (checked before any request); `config` when the base URL is missing or not `http(s)`, or
/// the fake scenario cannot be read.
pub fn build_provider(
    name: &str,
    cfg: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    if cfg.kind == ProviderKind::Fake {
        let fake = match &cfg.scenario {
            Some(path) => FakeProvider::from_file(path)?,
            None => FakeProvider::new(crate::fake::Scenario::default()),
        };
        return Ok(Arc::new(
            fake.named(name)
                .with_text_tool_calls(cfg.text_tool_calls)
                .with_tool_call_format(cfg.tool_call_format.clone()),
        ));
    }
    let (key, names) = resolve_key(name, cfg, env)?;
    if let Some(role) = cfg.system_role.as_deref()
        && !matches!(role, "system" | "developer")
    {
        return Err(ProviderError::new(
            ErrorClass::Config,
            format!("provider '{name}': system_role must be \"system\" or \"developer\" (got {role:?})"),
        ));
    }
    let base_url = resolve_base_url(name, cfg, env)?;
    let core = HttpCore {
        name: name.to_string(),
        base_url,
        key,
        key_env: names,
        default_model: cfg.default_model.clone().unwrap_or_default(),
        retry: cfg.retry_policy(),
        client: build_client(cfg.timeout_ms.map(Duration::from_millis))?,
    };
    let settings = Settings {
        stream: cfg.stream,
        recover: cfg.text_tool_calls,
        tool_call_format: cfg.tool_call_format.clone(),
        tool_choice: cfg.tool_choice.clone(),
        max_tokens: cfg.max_tokens,
        local: cfg.kind == ProviderKind::Openai && is_local_server(cfg, &core.base_url),
        constrained: cfg.constrained,
    };
    let window = WindowSource {
        configured: cfg.context_window.filter(|n| *n > 0),
        probe: cfg.kind == ProviderKind::Openai && cfg.probe_context_window.unwrap_or(false),
        asked: Default::default(),
    };
    Ok(match cfg.kind {
        ProviderKind::Anthropic => Arc::new(HttpProvider { core, settings, window, wire: AnthropicWire }),
        ProviderKind::OpenaiResponses => Arc::new(HttpProvider { core, settings, window, wire: ResponsesWire }),
        _ => {
            let system_role = cfg.system_role.clone().unwrap_or_else(|| "system".to_string());
            Arc::new(HttpProvider { core, settings, window, wire: OpenAiWire { system_role } })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn every_preset_exists_and_parses_back() {
        for name in PRESETS {
            let cfg = preset(name).unwrap_or_else(|| panic!("{name}"));
            assert!(cfg.default_model.is_some(), "{name}");
        }
        assert!(preset("nope").is_none());
        assert_eq!(preset("xai").unwrap().api_key_env.unwrap().names(), vec!["XAI_API_KEY", "GROK_API_KEY"]);
    }

    #[test]
    fn ollama_host_is_read_as_ollama_reads_it() {
        for (value, url) in [
            ("127.0.0.1", "http://127.0.0.1:11434/v1"),
            ("0.0.0.0:9999", "http://0.0.0.0:9999/v1"),
            ("gpu-box:11500", "http://gpu-box:11500/v1"),
            ("http://gpu-box", "http://gpu-box:80/v1"),
            ("https://ollama.example.com/", "https://ollama.example.com:443/v1"),
            ("https://example.com:8443/ollama", "https://example.com:8443/ollama/v1"),
            ("[::1]:11434", "http://[::1]:11434/v1"),
            ("[::1]", "http://[::1]:11434/v1"),
            (":11435", "http://127.0.0.1:11435/v1"),
        ] {
            assert_eq!(ollama_host_url(value).as_deref(), Some(url), "{value}");
        }
        assert_eq!(ollama_host_url("ftp://x"), None);
        assert_eq!(ollama_host_url("a b"), None);
    }

    fn built_url(name: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, ProviderError> {
        resolve_base_url(name, &preset(name).expect("preset"), env)
    }

    #[test]
    fn preset_base_urls_follow_the_variables_other_tools_read() {
        let env = |var: &str| match var {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:4000/v1/".to_string()),
            "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:4001".to_string()),
            "OLLAMA_HOST" => Some("127.0.0.1:4002".to_string()),
            "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" => Some("k".to_string()),
            _ => None,
        };
        assert_eq!(built_url("openai", &env).unwrap(), "http://127.0.0.1:4000/v1");
        assert_eq!(built_url("anthropic", &env).unwrap(), "http://127.0.0.1:4001");
        assert_eq!(built_url("ollama", &env).unwrap(), "http://127.0.0.1:4002/v1");
        // Other presets keep theirs; an empty variable counts as unset.
        assert_eq!(built_url("lmstudio", &env).unwrap(), "http://localhost:1234/v1");
        let empty = |var: &str| (var == "OLLAMA_HOST").then(|| " ".to_string());
        assert_eq!(built_url("ollama", &empty).unwrap(), "http://localhost:11434/v1");
        let bad = |var: &str| (var == "OLLAMA_HOST").then(|| "ftp://x".to_string());
        assert_eq!(built_url("ollama", &bad).unwrap_err().class, ErrorClass::Config);
    }

    #[test]
    fn missing_key_names_the_variables_before_any_request() {
        let err = build_provider("openai", &preset("openai").unwrap(), &no_env).err().unwrap();
        assert_eq!(err.class, ErrorClass::MissingApiKey);
        assert!(err.message.contains("OPENAI_API_KEY"), "{}", err.message);

        let err = build_provider("xai", &preset("xai").unwrap(), &|_| Some("  ".into())).err().unwrap();
        assert!(err.message.contains("XAI_API_KEY") && err.message.contains("GROK_API_KEY"), "{}", err.message);

        // The second name is used when the first is unset.
        let p =
            build_provider("xai", &preset("xai").unwrap(), &|n| (n == "GROK_API_KEY").then(|| "xai-secret-1".into()))
                .unwrap();
        assert_eq!(p.name(), "xai");
    }

    #[test]
    fn local_servers_are_loopback_urls_and_the_presets_that_probe_their_window() {
        for name in ["llamacpp", "ollama", "lmstudio"] {
            let cfg = preset(name).unwrap();
            assert!(is_local_server(&cfg, "http://gpu-box.lan:8080/v1"), "{name} asks its server for the window");
        }
        let mut custom = ProviderConfig::new(ProviderKind::Openai);
        assert!(is_local_server(&custom, "http://127.0.0.1:8080/v1"));
        assert!(is_local_server(&custom, "http://[::1]:11434/v1"));
        assert!(!is_local_server(&custom, "https://api.openai.com/v1"));
        assert!(!is_local_server(&preset("openai").unwrap(), "https://api.openai.com/v1"));
        custom.probe_context_window = Some(true);
        assert!(is_local_server(&custom, "https://models.internal/v1"));
        assert!(!is_loopback_url("https://localhost.example.com/v1"));
    }

    #[test]
    fn local_presets_need_no_key() {
        for name in ["ollama", "lmstudio", "llamacpp", "fake"] {
            assert!(build_provider(name, &preset(name).unwrap(), &no_env).is_ok(), "{name}");
        }
    }

    #[test]
    fn config_toml_accepts_one_or_many_key_names_and_rejects_unknown_fields() {
        let cfg: ProviderConfig =
            toml::from_str("kind = \"openai\"\nbase_url = \"http://x\"\napi_key_env = \"K\"").unwrap();
        assert!(cfg.key_required() && cfg.stream && cfg.text_tool_calls);
        let cfg: ProviderConfig =
            toml::from_str("kind = \"anthropic\"\napi_key_env = [\"A\", \"B\"]\napi_key_required = false").unwrap();
        assert!(!cfg.key_required());
        assert!(toml::from_str::<ProviderConfig>("kind = \"openai\"\nbogus = 1").is_err());
    }

    #[test]
    fn tool_call_format_is_one_name_or_one_per_model() {
        use crate::formats::ToolCallFormat;
        let cfg: ProviderConfig = toml::from_str("kind = \"openai\"\ntool_call_format = \"hermes\"").unwrap();
        let setting = cfg.tool_call_format.expect("set");
        assert_eq!(setting.for_model("anything"), Some(ToolCallFormat::Hermes));
        // An alias names the same format.
        let cfg: ProviderConfig = toml::from_str("kind = \"openai\"\ntool_call_format = \"gpt_oss\"").unwrap();
        assert_eq!(cfg.tool_call_format.and_then(|s| s.for_model("m")), Some(ToolCallFormat::Harmony));
        let cfg: ProviderConfig = toml::from_str(
            "kind = \"openai\"\n[tool_call_format]\n\"qwen3-coder*\" = \"qwen3_coder\"\n\"qwen3-coder:30b-q8\" = \"hermes\"\n\"*\" = \"kimi_k2\"",
        )
        .unwrap();
        let setting = cfg.tool_call_format.expect("set");
        assert_eq!(setting.for_model("qwen3-coder:30b"), Some(ToolCallFormat::Qwen3Coder));
        assert_eq!(setting.for_model("qwen3-coder:30b-q8"), Some(ToolCallFormat::Hermes));
        assert_eq!(setting.for_model("kimi-k2"), Some(ToolCallFormat::KimiK2));
        let err = toml::from_str::<ProviderConfig>("kind = \"openai\"\ntool_call_format = \"hermez\"").unwrap_err();
        assert!(err.to_string().contains("unknown tool_call_format `hermez`"), "{err}");
        assert!(err.to_string().contains("qwen3_coder"), "{err}");
    }

    #[test]
    fn bad_base_url_is_a_config_error_without_the_key() {
        let mut cfg = ProviderConfig::new(ProviderKind::Openai);
        cfg.base_url = Some("ftp://h/?key=abcd1234".into());
        let err = build_provider("x", &cfg, &no_env).err().unwrap();
        assert_eq!(err.class, ErrorClass::Config);
        assert!(!err.message.contains("abcd1234"));
    }
}
