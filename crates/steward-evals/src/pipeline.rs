//! The role pipeline (SPEC O1–O3, `--mode roles`) as the eval runner drives it: who plays each
//! role of a case, and the roles a case makes fail.
//!
//! With a fake planner, every other role is scripted after MrEric's fake provider (drafters
//! "local implementation draft" and "cloud implementation draft", critic "critic review",
//! reviewer "reviewer review"); the synthesizer writes "final plan and implementation" and,
//! only when the failure note of a drafter reached it in its input, says that it completed
//! despite that failure. A role a case fails (`fail_roles`) gets a real OpenAI-compatible
//! provider pointed at a local port nobody listens on: its stage fails as an unreachable model
//! does, never by a scripted error class.

use std::sync::Arc;

use async_trait::async_trait;
use steward_core::{Locality, PlannerChoice, RoleAssignment, RoleName, RolePlan};
use steward_protocol::{ChatRequest, ChatResponse};
use steward_provider::fake::Round;
use steward_provider::fake::{FakeProvider, Scenario};
use steward_provider::{DeltaSink, Provider, ProviderConfig, ProviderError, ProviderKind};

use crate::scenarios::FINAL;

/// The role named `name` as a case writes it (`local_drafter`, …), if the pipeline has one.
pub fn role(name: &str) -> Option<RoleName> {
    RoleName::ALL.into_iter().find(|r| r.as_str() == name)
}

/// Why a role plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// A failing role's provider could not be built.
    #[error("the failing provider of `{role}`: {message}")]
    Provider {
        /// The role.
        role: &'static str,
        /// Why.
        message: String,
    },
    /// No port could be reserved for a failing role.
    #[error("no local port for a failing role: {0}")]
    Port(std::io::Error),
}

/// The plan of a case in roles mode: `planner` plays the planner stage, the other roles are
/// scripted (see the module documentation), and every role in `failing` gets a provider that
/// cannot be reached.
pub fn scripted_plan(planner: &PlannerChoice, failing: &[RoleName]) -> Result<RolePlan, PipelineError> {
    let mut roles = Vec::with_capacity(RoleName::ALL.len());
    for role in RoleName::ALL {
        let provider: Arc<dyn Provider> = match role {
            RoleName::Planner => planner.provider.clone(),
            RoleName::LocalDrafter => answering("local-drafter", "local implementation draft"),
            RoleName::CloudDrafter => answering("cloud-drafter", "cloud implementation draft"),
            RoleName::Critic => answering("critic", "critic review"),
            RoleName::Reviewer => answering("reviewer", "reviewer review"),
            RoleName::Synthesizer => Arc::new(Synthesizer),
        };
        roles.push(RoleAssignment {
            role,
            provider_name: provider.name().to_string(),
            provider,
            model: "fake".into(),
            locality: if role == RoleName::CloudDrafter { Locality::Cloud } else { Locality::Local },
            max_tokens: None,
        });
    }
    let mut plan = RolePlan { planner: planner.clone(), roles };
    fail_roles(&mut plan, failing)?;
    Ok(plan)
}

/// Gives every role in `failing` a provider nobody answers (the planner's choice too, when the
/// planner is among them).
pub fn fail_roles(plan: &mut RolePlan, failing: &[RoleName]) -> Result<(), PipelineError> {
    for assignment in plan.roles.iter_mut().filter(|a| failing.contains(&a.role)) {
        let provider = unreachable(assignment.role)?;
        if assignment.role == RoleName::Planner {
            plan.planner.provider = provider.clone();
        }
        assignment.provider_name = provider.name().to_string();
        assignment.provider = provider;
    }
    Ok(())
}

fn answering(name: &str, text: &str) -> Arc<dyn Provider> {
    let round = Round { text: Some(text.to_string()), ..Round::default() };
    Arc::new(FakeProvider::new(Scenario { rounds: vec![round] }).named(name))
}

/// An OpenAI-compatible provider for a loopback port that was free a moment ago and is closed
/// now: its calls fail with `provider_unreachable` after one attempt.
fn unreachable(role: RoleName) -> Result<Arc<dyn Provider>, PipelineError> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(PipelineError::Port)?
        .port();
    let mut config = ProviderConfig::new(ProviderKind::Openai);
    config.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
    config.max_retries = Some(1);
    config.default_model = Some("local-model".into());
    steward_provider::build_provider(role.as_str(), &config, &|_| None)
        .map_err(|e| PipelineError::Provider { role: role.as_str(), message: e.to_string() })
}

/// The scripted synthesizer: its answer depends on what reached it.
struct Synthesizer;

impl Synthesizer {
    /// "final plan and implementation", plus what it was told of failed drafters.
    fn answer(request: &ChatRequest) -> String {
        let seen = |needle: &str| request.messages.iter().any(|m| m.content.contains(needle));
        if seen(&format!("[{} failed (", RoleName::LocalDrafter.as_str())) {
            format!("{FINAL} completed despite a local model failure")
        } else if seen(&format!("[{} failed (", RoleName::CloudDrafter.as_str())) {
            format!("{FINAL} completed despite a cloud model failure")
        } else {
            FINAL.to_string()
        }
    }
}

#[async_trait]
impl Provider for Synthesizer {
    fn name(&self) -> &str {
        "synthesizer"
    }

    fn default_model(&self) -> &str {
        "fake"
    }

    async fn stream(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, ProviderError> {
        let round = Round { text: Some(Self::answer(request)), ..Round::default() };
        FakeProvider::new(Scenario { rounds: vec![round] }).stream(request, on_delta).await
    }

    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        Ok(vec!["fake".into()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_named_as_cases_write_them() {
        assert_eq!(role("local_drafter"), Some(RoleName::LocalDrafter));
        assert_eq!(role("synthesizer"), Some(RoleName::Synthesizer));
        assert_eq!(role("drafter"), None);
    }
}
