//! Planners (SPEC A4): the classic keyword planner (offline, no model) and the model planner,
//! which is any [`steward_provider::Provider`]. Both answer through the same trait, so the
//! loop, the gate and the events are identical for both. [`resolve_roles`] chooses the
//! providers of the role pipeline's other roles (SPEC O1, P9).

pub mod classic;

use std::sync::Arc;

use async_trait::async_trait;
use steward_protocol::{ChatRequest, ChatResponse, ToolChoice};
use steward_provider::{DeltaSink, Provider, ProviderConfig, ProviderError};

use crate::roles::{Locality, RoleAssignment, RoleName, RolePlan};
use crate::stage::PlannerChoice;
use steward_config::{Config, RoleConfig};

/// Planner choices from the command line or a UI; each overrides the configuration.
#[derive(Debug, Clone, Default)]
pub struct PlannerOverrides {
    /// `classic` or `model`.
    pub planner: Option<String>,
    /// Provider name (a preset or `[providers.NAME]`); implies the model planner.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server; implies the model planner.
    pub base_url: Option<String>,
    /// `auto`, `none`, `required` or a tool name.
    pub tool_choice: Option<String>,
    /// Scenario file for the `fake` provider.
    pub scenario: Option<std::path::PathBuf>,
    /// Output token limit per planner call.
    pub max_tokens: Option<u32>,
}

/// Why no planner (or role plan) was chosen: a usage or configuration error, nothing was run.
/// The messages are sentences for the user and name the flag or the setting to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlannerError {
    /// `--planner classic` together with `--provider`, `--base-url`, `--model` or `--scenario`.
    #[error("--planner classic takes no --provider, --base-url, --model or --scenario")]
    ClassicWithModelFlags,
    /// `--model` or `--scenario` without a provider named anywhere.
    #[error(
        "--model and --scenario need a provider: pass --provider NAME (e.g. --provider fake --scenario FILE) or set [run] provider"
    )]
    ModelFlagsWithoutProvider,
    /// The model planner without a provider named anywhere.
    #[error(
        "the model planner needs a provider: pass --provider NAME (presets: {}) or set [run] provider in .steward/config.toml",
        steward_provider::PRESETS.join(", ")
    )]
    NoProvider,
    /// `--base-url` needs the `llamacpp` preset, which this build lacks.
    #[error("the llamacpp preset is missing")]
    NoCustomPreset,
    /// The named provider is neither a preset nor declared.
    #[error(
        "unknown provider `{0}`: use a preset ({presets}) or declare [providers.{0}] in .steward/config.toml",
        presets = steward_provider::PRESETS.join(", ")
    )]
    UnknownProvider(String),
    /// A role names a provider that is neither a preset nor declared.
    #[error(
        "unknown provider `{0}`: use a preset ({presets}) or declare [providers.{0}]",
        presets = steward_provider::PRESETS.join(", ")
    )]
    UnknownRoleProvider(String),
    /// `--scenario` with a provider other than the fake one.
    #[error("--scenario applies only to the fake provider, not `{0}`")]
    ScenarioNotFake(String),
    /// The fake provider without a scenario.
    #[error("the fake provider `{0}` needs a scenario: pass --scenario FILE (format in docs/models.md)")]
    FakeWithoutScenario(String),
    /// A role's fake provider without a scenario.
    #[error(
        "the fake provider `{0}` needs a scenario: declare [providers.NAME] with kind = \"fake\" and scenario = \"FILE\""
    )]
    RoleFakeWithoutScenario(String),
    /// The provider could not be built (its settings are invalid).
    #[error("provider `{name}`: {message}")]
    Provider {
        /// The provider's name.
        name: String,
        /// Why, from the provider.
        message: String,
    },
    /// Neither the command line nor the settings name a model, and the provider has no default.
    #[error("provider `{0}` has no default model: pass --model ID or set default_model")]
    NoModel(String),
    /// A role's entry names no model, and its provider has no default.
    #[error("provider `{0}` has no default model: set model = \"ID\"")]
    NoRoleModel(String),
    /// `--planner` or `[run] planner` names another planner.
    #[error("unknown planner `{0}`: use `classic` or `model`")]
    UnknownPlanner(String),
    /// A `[roles.NAME]` entry is wrong; `entry` names it and the file that set it.
    #[error("{entry}: {source}")]
    Role {
        /// `roles.NAME (in FILE)`.
        entry: String,
        /// What is wrong with it.
        source: Box<PlannerError>,
    },
    /// With the classic planner, a drafting role has no `[roles.NAME]` entry.
    #[error(
        "role `{0}` has no provider: the classic planner writes no drafts; set [roles.{0}] provider = \"NAME\" in .steward/config.toml or choose a model planner (--provider NAME)"
    )]
    RoleWithoutProvider(&'static str),
}

/// Chooses the planner: classic unless a provider or base URL is named (here or in
/// `[run]`), or `planner = "model"` is asked for.
///
/// Errors (usage/configuration, nothing was run): unknown planner kind, unknown provider, a
/// model planner without a provider. A provider whose API key is missing is *not* an error
/// here: the planner fails on its first call with `missing_api_key` before any request, so the
/// run records the failure.
pub fn resolve(
    config: &Config,
    overrides: &PlannerOverrides,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PlannerChoice, PlannerError> {
    resolve_with_config(config, overrides, env).map(|(choice, _)| choice)
}

/// [`resolve`], plus the settings of the model planner's provider (base URL override applied);
/// `None` for the classic planner.
fn resolve_with_config(
    config: &Config,
    overrides: &PlannerOverrides,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(PlannerChoice, Option<ProviderConfig>), PlannerError> {
    let provider_name = overrides
        .provider
        .clone()
        .or_else(|| overrides.base_url.as_ref().map(|_| "custom".to_string()))
        .or_else(|| config.run.provider.clone());
    let kind = overrides
        .planner
        .clone()
        .or_else(|| (overrides.provider.is_some() || overrides.base_url.is_some()).then(|| "model".to_string()))
        .or_else(|| config.run.planner.clone())
        .unwrap_or_else(|| if provider_name.is_some() { "model".into() } else { "classic".into() });
    match kind.as_str() {
        "classic"
            if overrides.provider.is_some()
                || overrides.base_url.is_some()
                || overrides.model.is_some()
                || overrides.scenario.is_some() =>
        {
            Err(if overrides.planner.is_some() {
                PlannerError::ClassicWithModelFlags
            } else {
                // The classic planner was chosen because no provider was named anywhere.
                PlannerError::ModelFlagsWithoutProvider
            })
        }
        "classic" => Ok((
            PlannerChoice {
                kind,
                provider: Arc::new(classic::ClassicPlanner),
                model: "classic".into(),
                tool_choice: ToolChoice::Auto,
                max_tokens: None,
            },
            None,
        )),
        "model" => {
            let name = provider_name.ok_or(PlannerError::NoProvider)?;
            let mut cfg: ProviderConfig =
                match config.providers.get(&name).cloned().or_else(|| steward_provider::preset(&name)) {
                    Some(cfg) => cfg,
                    None if overrides.base_url.is_some() => {
                        steward_provider::preset("llamacpp").ok_or(PlannerError::NoCustomPreset)?
                    }
                    None => return Err(PlannerError::UnknownProvider(name)),
                };
            if let Some(url) = &overrides.base_url {
                // `--base-url` wins over every variable.
                cfg.base_url = Some(url.clone());
                cfg.base_url_env = None;
            }
            let is_fake = cfg.kind == steward_provider::ProviderKind::Fake;
            match (&overrides.scenario, is_fake) {
                (Some(scenario), true) => cfg.scenario = Some(scenario.clone()),
                (Some(_), false) => return Err(PlannerError::ScenarioNotFake(name)),
                (None, true) if cfg.scenario.is_none() => return Err(PlannerError::FakeWithoutScenario(name)),
                (None, _) => {}
            }
            let tool_choice = overrides.tool_choice.clone().or_else(|| cfg.tool_choice.clone());
            let max_tokens = overrides.max_tokens.or(cfg.max_tokens);
            // The loop applies the tool choice to the first planner call only; the provider must
            // not force it on every call.
            let mut build = cfg.clone();
            build.tool_choice = None;
            let provider: Arc<dyn Provider> = match steward_provider::build_provider(&name, &build, env) {
                Ok(provider) => provider,
                Err(err) if err.class == steward_protocol::ErrorClass::MissingApiKey => {
                    Arc::new(Unavailable { name: name.clone(), error: err })
                }
                Err(err) => return Err(PlannerError::Provider { name, message: err.message }),
            };
            // `[run] model` belongs to `[run] provider`; another provider uses its own default.
            let run_model = config.run.model.clone().filter(|_| config.run.provider.as_deref() == Some(name.as_str()));
            let model = overrides
                .model
                .clone()
                .or(run_model)
                .or_else(|| cfg.default_model.clone())
                .unwrap_or_else(|| provider.default_model().to_string());
            if model.trim().is_empty() {
                return Err(PlannerError::NoModel(name));
            }
            Ok((
                PlannerChoice {
                    kind,
                    provider,
                    model,
                    tool_choice: ToolChoice::parse(tool_choice.as_deref().unwrap_or("auto")),
                    max_tokens,
                },
                Some(cfg),
            ))
        }
        other => Err(PlannerError::UnknownPlanner(other.to_string())),
    }
}

/// Chooses who plays each role of the role pipeline (SPEC O1, P9) from `[roles.NAME]`.
///
/// - `planner`: `[roles.planner]` when set and the command line names no planner, provider or
///   base URL (`overrides.model`, when given, still picks its model); otherwise exactly what
///   [`resolve`] gives.
/// - every other role: its `[roles.NAME]` entry (a preset or `[providers.NAME]`, its `model`
///   or the provider's default model); without an entry, the planner's provider and model.
///   The classic planner writes no drafts, so with it every other role needs an entry.
///
/// Locality comes from each provider's settings ([`Locality::of`]), never from the role.
/// Errors (usage/configuration, nothing was run) name the role and the file that set it: an
/// unknown provider, a fake provider without a scenario, a provider that cannot be built, a
/// model that resolves to nothing. As with [`resolve`], a missing API key is not an error
/// here: that role's stage fails with `missing_api_key` when it runs, and a drafter's failure
/// does not stop the run.
pub fn resolve_roles(
    config: &Config,
    overrides: &PlannerOverrides,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RolePlan, PlannerError> {
    let set_in = |role: RoleName| match config.entry_sources.get(&format!("roles.{}", role.as_str())) {
        Some(path) => format!("roles.{} (in {})", role.as_str(), path.display()),
        None => format!("roles.{}", role.as_str()),
    };
    let named_here = overrides.planner.is_some() || overrides.provider.is_some() || overrides.base_url.is_some();
    let (planner, planner_cfg) = match config.roles.planner.as_ref().filter(|_| !named_here) {
        Some(entry) => {
            let entry_overrides = PlannerOverrides {
                planner: Some("model".into()),
                provider: Some(entry.provider.clone()),
                model: overrides.model.clone().or_else(|| entry.model.clone()),
                ..overrides.clone()
            };
            resolve_with_config(config, &entry_overrides, env)
                .map_err(|e| PlannerError::Role { entry: set_in(RoleName::Planner), source: Box::new(e) })?
        }
        None => resolve_with_config(config, overrides, env)?,
    };
    let planner_role = RoleAssignment {
        role: RoleName::Planner,
        provider: planner.provider.clone(),
        provider_name: planner.provider.name().to_string(),
        model: planner.model.clone(),
        // The classic planner makes no network request.
        locality: planner_cfg.as_ref().map(Locality::of).unwrap_or(Locality::Local),
        max_tokens: planner.max_tokens,
    };
    let mut roles = vec![planner_role.clone()];
    for role in RoleName::ALL.into_iter().skip(1) {
        let assignment = match config.roles.get(role) {
            Some(entry) => role_provider(config, role, entry, env)
                .map_err(|e| PlannerError::Role { entry: set_in(role), source: Box::new(e) })?,
            None if planner_cfg.is_none() => return Err(PlannerError::RoleWithoutProvider(role.as_str())),
            None => RoleAssignment { role, ..planner_role.clone() },
        };
        roles.push(assignment);
    }
    Ok(RolePlan { planner, roles })
}

/// The provider and model of one `[roles.NAME]` entry other than the planner's.
fn role_provider(
    config: &Config,
    role: RoleName,
    entry: &RoleConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RoleAssignment, PlannerError> {
    let name = entry.provider.trim();
    let mut cfg = config
        .providers
        .get(name)
        .cloned()
        .or_else(|| steward_provider::preset(name))
        .ok_or_else(|| PlannerError::UnknownRoleProvider(name.to_string()))?;
    if cfg.kind == steward_provider::ProviderKind::Fake && cfg.scenario.is_none() {
        return Err(PlannerError::RoleFakeWithoutScenario(name.to_string()));
    }
    // Role stages offer no tools.
    cfg.tool_choice = None;
    let provider: Arc<dyn Provider> = match steward_provider::build_provider(name, &cfg, env) {
        Ok(provider) => provider,
        Err(err) if err.class == steward_protocol::ErrorClass::MissingApiKey => {
            Arc::new(Unavailable { name: name.to_string(), error: err })
        }
        Err(err) => return Err(PlannerError::Provider { name: name.to_string(), message: err.message }),
    };
    let model = entry
        .model
        .clone()
        .or_else(|| cfg.default_model.clone())
        .unwrap_or_else(|| provider.default_model().to_string());
    if model.trim().is_empty() {
        return Err(PlannerError::NoRoleModel(name.to_string()));
    }
    Ok(RoleAssignment {
        role,
        provider,
        provider_name: name.to_string(),
        model,
        locality: Locality::of(&cfg),
        max_tokens: cfg.max_tokens,
    })
}

/// A provider that cannot be used (for example its API key is missing): every call fails with
/// the stored error, before any request is made.
pub struct Unavailable {
    name: String,
    error: ProviderError,
}

#[async_trait]
impl Provider for Unavailable {
    fn name(&self) -> &str {
        &self.name
    }
    fn default_model(&self) -> &str {
        ""
    }
    async fn stream(&self, _request: &ChatRequest, _on_delta: DeltaSink<'_>) -> Result<ChatResponse, ProviderError> {
        Err(self.error.clone())
    }
    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        Err(self.error.clone())
    }
}
