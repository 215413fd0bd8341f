//! The role pipeline's names as configuration uses them (`[run] mode`, `[roles.NAME]`).

use serde::{Deserialize, Serialize};

/// How a run answers: the agent loop alone, or the role pipeline after it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunMode {
    /// The single-agent loop: the planner's answer is the run's answer.
    #[default]
    Loop,
    /// The role pipeline: planner, drafters, critic, reviewer, synthesizer.
    Roles,
}

impl RunMode {
    /// `loop` or `roles`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::Loop => "loop",
            RunMode::Roles => "roles",
        }
    }

    /// The mode called `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "loop" => Some(RunMode::Loop),
            "roles" => Some(RunMode::Roles),
            _ => None,
        }
    }
}

/// The roles of the pipeline, in the order they run.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleName {
    /// Runs the agent loop with tools; its answer is the findings.
    Planner,
    /// Drafts an answer, meant for a model on this machine.
    LocalDrafter,
    /// Drafts an answer, meant for a hosted model.
    CloudDrafter,
    /// Criticises the drafts.
    Critic,
    /// Picks the best draft and says what is wrong with it.
    Reviewer,
    /// Writes the final answer.
    Synthesizer,
}

impl RoleName {
    /// Every role, in pipeline order.
    pub const ALL: [RoleName; 6] = [
        RoleName::Planner,
        RoleName::LocalDrafter,
        RoleName::CloudDrafter,
        RoleName::Critic,
        RoleName::Reviewer,
        RoleName::Synthesizer,
    ];

    /// The role's name, which is also its stage name in events (`local_drafter`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RoleName::Planner => "planner",
            RoleName::LocalDrafter => "local_drafter",
            RoleName::CloudDrafter => "cloud_drafter",
            RoleName::Critic => "critic",
            RoleName::Reviewer => "reviewer",
            RoleName::Synthesizer => "synthesizer",
        }
    }

    /// The role called `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        RoleName::ALL.into_iter().find(|r| r.as_str() == name)
    }
}
