//! The role pipeline (SPEC O1–O3), `mode = roles`: an alternative to answering with the
//! planner alone.
//!
//! 1. `planner`: the agent loop exactly as in loop mode (tools, gate, limits); its answer
//!    becomes the findings the other roles work from.
//! 2. `local_drafter` and `cloud_drafter`, in parallel: each writes a draft answer from the task
//!    and the findings, without tools. A drafter that fails (server down, no key, timeout) emits
//!    `stage_failed`, and a note saying so takes the place of its draft: the run goes on.
//! 3. `critic`: criticises the drafts (failure notes included).
//! 4. `reviewer`: says which draft is best and what is wrong with it.
//! 5. `synthesizer`: writes the final answer from everything above (from the findings alone,
//!    and told so, when every draft failed). If it fails, the run fails with its error class.
//!
//! A failed critic or reviewer is noted and the pipeline continues. Every stage emits
//! `stage_started`, `stage_chunk`s as its text streams, then `stage_completed` or
//! `stage_failed` under its role's name; all of them count towards the run's usage, stop on
//! cancellation and on `max_total_runtime_ms`, and pass their text through the run's redactor.
//!
//! Which provider and model plays each role comes from `[roles.NAME]` (see
//! [`steward_config::RawRoles`]) and is resolved by [`crate::planner::resolve_roles`].

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use steward_policy::Redactor;
use steward_protocol::{ChatRequest, ErrorClass, EventKind, Message, StopReason, ToolChoice, Usage};
use steward_provider::config::is_loopback_url;
use steward_provider::{Provider, ProviderConfig, ProviderKind};
use steward_store::StoreError;

use crate::events::EventEmitter;
use crate::interrupt::{Interrupt, Interruptible};
use crate::stage::{Ending, PlannerChoice, StageError, stream_stage};
pub use steward_config::{RoleName, RunMode};

/// Where a provider runs, judged from the provider (never from the role it plays).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Locality {
    /// On this machine: what is sent to it does not leave the machine.
    Local,
    /// Anywhere else.
    Cloud,
}

impl Locality {
    /// `local` or `cloud`.
    pub fn as_str(self) -> &'static str {
        match self {
            Locality::Local => "local",
            Locality::Cloud => "cloud",
        }
    }

    /// The locality of a provider configured by `cfg`: local when it makes no network request
    /// (the `fake` kind) or its base URL's host is a loopback name or address (`localhost`,
    /// `*.localhost`, `127.0.0.0/8`, `::1`, or the unspecified `0.0.0.0`/`::`); cloud otherwise.
    ///
    /// Whether a key is required does not count: a key-less server on another host still
    /// receives everything sent to it, and a local proxy may ask for a key.
    pub fn of(cfg: &ProviderConfig) -> Locality {
        match (cfg.kind, cfg.base_url.as_deref()) {
            (ProviderKind::Fake, _) => Locality::Local,
            (_, Some(url)) if is_loopback_url(url) => Locality::Local,
            _ => Locality::Cloud,
        }
    }
}

/// One role and who plays it.
#[derive(Clone)]
pub struct RoleAssignment {
    /// The role.
    pub role: RoleName,
    /// The provider answering the role's call.
    pub provider: Arc<dyn Provider>,
    /// The provider's configured name (a preset or `[providers.NAME]`).
    pub provider_name: String,
    /// Model id sent with the role's request.
    pub model: String,
    /// Where the provider runs.
    pub locality: Locality,
    /// Output token limit of the role's call (`None`: the provider's own setting).
    pub max_tokens: Option<u32>,
}

/// Who plays each role of a run in `roles` mode.
#[derive(Clone)]
pub struct RolePlan {
    /// The planner stage's choice, as [`crate::planner::resolve`] would give it (or as
    /// `[roles.planner]` names it). The run's planner stage uses
    /// [`crate::RunRequest::planner`], so pass this there.
    pub planner: PlannerChoice,
    /// One assignment per role, in pipeline order; the `planner` entry describes the planner
    /// stage, the others are the pipeline's stages.
    pub roles: Vec<RoleAssignment>,
}

impl RolePlan {
    /// The assignment of `role`, if the plan has one.
    pub fn get(&self, role: RoleName) -> Option<&RoleAssignment> {
        self.roles.iter().find(|a| a.role == role)
    }

    /// Checks that every stage after the planner has exactly one assignment.
    pub fn check(&self) -> Result<(), RolePlanError> {
        for role in &RoleName::ALL[1..] {
            match self.roles.iter().filter(|a| a.role == *role).count() {
                1 => {}
                0 => return Err(RolePlanError::Missing(role.as_str())),
                _ => return Err(RolePlanError::Repeated(role.as_str())),
            }
        }
        Ok(())
    }
}

/// Why a role plan cannot run ([`RolePlan::check`]); names the role.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RolePlanError {
    /// A stage after the planner has no assignment.
    #[error("the role plan has no `{0}`")]
    Missing(&'static str),
    /// A stage after the planner has more than one assignment.
    #[error("the role plan names `{0}` more than once")]
    Repeated(&'static str),
}

/// Instructions of the drafters.
pub const DRAFTER_PROMPT: &str = "You are a drafter in Steward's role pipeline. A planner has \
already studied the workspace with tools; its findings follow the task. Write a complete, \
self-contained answer to the task from the task and the findings. You cannot call tools or run \
anything. Be concise and concrete; do not invent facts the findings do not support.";

/// Instructions of the critic.
pub const CRITIC_PROMPT: &str = "You are the critic in Steward's role pipeline. You are given a \
task, a planner's findings and drafts of an answer; a draft may be a note that its model failed. \
List, briefly and per draft, what is wrong, missing or unsupported by the findings. Do not write \
a new answer.";

/// Instructions of the reviewer.
pub const REVIEWER_PROMPT: &str = "You are the reviewer in Steward's role pipeline. You are given \
a task, a planner's findings, drafts of an answer (a draft may be a note that its model failed) \
and a critique. Say which draft is best and why, and what must be fixed in it. If no draft is \
usable, say so and judge the planner's findings instead. Be brief.";

/// Instructions of the synthesizer.
pub const SYNTHESIZER_PROMPT: &str = "You are the synthesizer in Steward's role pipeline. Write \
the final answer to the task for the user: start from the best draft, fix what the critique and \
the review found, and rely on the planner's findings for facts. If the drafts failed, answer \
from the planner's findings. Reply with the answer only, without mentioning drafts, critics or \
reviewers.";

/// What the pipeline's stages share with the run.
pub(crate) struct Stages<'a> {
    /// The run's events.
    pub events: &'a EventEmitter,
    /// The run's redactor.
    pub redactor: &'a Arc<Redactor>,
    /// Cancellation and the run's deadline.
    pub interrupt: &'a Interruptible,
    /// The workspace's instructions, redacted.
    pub instructions: Option<&'a str>,
    /// The owner's remembered facts, redacted.
    pub facts: Option<&'a str>,
    /// `max_context_chars`: each input section gets a sixth of it.
    pub max_context_chars: usize,
}

/// How one stage ended.
enum Outcome {
    /// Its (redacted) text.
    Done(String),
    /// Its provider failed: class and redacted message.
    Failed(ErrorClass, String),
    /// The run was cancelled or ran out of time.
    Interrupted(Interrupt),
}

/// Runs the stages after the planner. `task` and `findings` are the task and the planner's
/// answer (both already redacted); `cut_short` is the limit that stopped the planner before it
/// answered, if one did. The usage of every stage is added to `usage`. The result is how the
/// run ends: the synthesizer's answer (with `cut_short` as its stop reason, if any), the
/// synthesizer's failure, or an interrupt.
pub(crate) async fn run_pipeline(
    st: &Stages<'_>,
    plan: &RolePlan,
    task: &str,
    findings: &str,
    cut_short: Option<StopReason>,
    usage: &mut Usage,
) -> Result<Ending, StoreError> {
    let cap = (st.max_context_chars / 6).max(1_000);
    let assignment = |role: RoleName| plan.get(role).ok_or(role);
    let (Ok(local), Ok(cloud), Ok(critic), Ok(reviewer), Ok(synthesizer)) = (
        assignment(RoleName::LocalDrafter),
        assignment(RoleName::CloudDrafter),
        assignment(RoleName::Critic),
        assignment(RoleName::Reviewer),
        assignment(RoleName::Synthesizer),
    ) else {
        // `run_task` checks the plan before the run starts.
        return Ok(Ending::Failed(ErrorClass::Config, "the role plan is incomplete".into()));
    };
    let interrupted = |i: Interrupt, stage: RoleName| match i {
        Interrupt::Cancelled => Ending::Interrupted(Interrupt::Cancelled),
        Interrupt::Timeout => Ending::Limit(
            StopReason::Timeout,
            format!(
                "Stopped by the time limit during the {} stage. The planner's answer:\n\n{findings}",
                stage.as_str()
            ),
        ),
    };

    let mut input = format!("Task:\n{}\n\nPlanner's findings:\n{}", capped(task, cap), capped(findings, cap));

    // Drafters, in parallel.
    let (first, second) =
        tokio::join!(run_stage(st, local, DRAFTER_PROMPT, &input), run_stage(st, cloud, DRAFTER_PROMPT, &input));
    let drafts = [(local, first?), (cloud, second?)];
    let mut all_failed = true;
    input.push_str("\n\nDrafts:");
    for (who, (outcome, spent)) in &drafts {
        usage.add(*spent);
        let text = match outcome {
            Outcome::Interrupted(i) => return Ok(interrupted(*i, who.role)),
            Outcome::Failed(class, error) => failure_note(who.role, *class, error),
            Outcome::Done(text) => {
                all_failed = false;
                capped(text, cap)
            }
        };
        input.push_str(&format!(
            "\n\n### {} ({}: {} · {})\n{}",
            who.role.as_str(),
            who.locality.as_str(),
            who.provider_name,
            who.model,
            text
        ));
    }
    if all_failed {
        input.push_str("\n\nEvery draft failed: there is no draft to judge. Work from the planner's findings.");
    }

    // Critic, then reviewer: a failure is noted and the pipeline goes on.
    for (who, prompt, heading) in [(critic, CRITIC_PROMPT, "Critique"), (reviewer, REVIEWER_PROMPT, "Review")] {
        let (outcome, spent) = run_stage(st, who, prompt, &input).await?;
        usage.add(spent);
        let text = match outcome {
            Outcome::Interrupted(i) => return Ok(interrupted(i, who.role)),
            Outcome::Failed(class, error) => failure_note(who.role, class, &error),
            Outcome::Done(text) => capped(&text, cap),
        };
        input.push_str(&format!("\n\n{heading}:\n{text}"));
    }

    // Synthesizer: its answer is the run's.
    let (outcome, spent) = run_stage(st, synthesizer, SYNTHESIZER_PROMPT, &input).await?;
    usage.add(spent);
    Ok(match (outcome, cut_short) {
        (Outcome::Interrupted(i), _) => interrupted(i, RoleName::Synthesizer),
        (Outcome::Failed(class, error), _) => Ending::Failed(class, format!("synthesizer: {error}")),
        (Outcome::Done(text), Some(reason)) => Ending::Limit(reason, text),
        (Outcome::Done(text), None) => Ending::Answered(text),
    })
}

/// What stands in for the output of a stage that failed.
fn failure_note(role: RoleName, class: ErrorClass, error: &str) -> String {
    format!("[{} failed ({class}): {}]", role.as_str(), error.trim())
}

/// `text` cut to `max` characters, saying how much was left out.
fn capped(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "(no text)".into();
    }
    let head = steward_protocol::truncate_chars(text, max);
    if head.len() == text.len() {
        return text.to_string();
    }
    let cut = text[head.len()..].chars().count();
    format!("{head}\n[… {cut} more characters left out]")
}

/// One stage: a single call without tools, its text streamed as `stage_chunk`s. Returns how
/// it ended and the tokens it used.
async fn run_stage(
    st: &Stages<'_>,
    who: &RoleAssignment,
    prompt: &str,
    input: &str,
) -> Result<(Outcome, Usage), StoreError> {
    let stage = who.role.as_str();
    st.events.emit(EventKind::StageStarted { stage: stage.into(), round: 1 }).await?;
    let request = ChatRequest {
        model: who.model.clone(),
        messages: vec![
            Message::system(crate::context::system_text(prompt, st.instructions, st.facts)),
            Message::user(input),
        ],
        tools: Vec::new(),
        tool_choice: ToolChoice::None,
        max_tokens: who.max_tokens,
        temperature: None,
        constrain: false,
    };
    let started = Instant::now();
    let reply =
        st.interrupt.run(stream_stage(who.provider.as_ref(), stage, &request, st.events, st.redactor.clone())).await;
    let duration_ms = started.elapsed().as_millis() as u64;
    match reply {
        Err(i) => Ok((Outcome::Interrupted(i), Usage::default())),
        Ok(Err(StageError::Storage(e))) => Err(e),
        Ok(Err(StageError::Provider(err))) => {
            let error = st.redactor.redact(&err.message);
            st.events
                .emit(EventKind::StageFailed {
                    stage: stage.into(),
                    round: 1,
                    duration_ms,
                    error: error.clone(),
                    class: err.class,
                })
                .await?;
            Ok((Outcome::Failed(err.class, error), Usage::default()))
        }
        Ok(Ok(reply)) => {
            st.events.emit(crate::planner_reply::stage_completed(stage, 1, duration_ms, &reply, 0)).await?;
            Ok((Outcome::Done(st.redactor.redact(&reply.text)), reply.usage))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_are_local_and_others_are_not() {
        for url in [
            "http://localhost:11434/v1",
            "http://LOCALHOST/v1",
            "http://127.0.0.1:8080/v1",
            "http://127.1.2.3/v1",
            "https://[::1]:1234/v1",
            "http://user:pw@127.0.0.1:9/v1",
            "http://ollama.localhost/v1",
            "http://0.0.0.0:8000",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://192.168.1.5:11434/v1",
            "http://localhost.example.com/v1",
            "http://127.0.0.1.nip.io/v1",
            "ftp://127.0.0.1/",
            "localhost:11434",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }

    #[test]
    fn locality_comes_from_the_provider_configuration() {
        for (name, expected) in [
            ("ollama", Locality::Local),
            ("lmstudio", Locality::Local),
            ("llamacpp", Locality::Local),
            ("fake", Locality::Local),
            ("openai", Locality::Cloud),
            ("anthropic", Locality::Cloud),
            ("xai", Locality::Cloud),
        ] {
            let cfg = steward_provider::preset(name).unwrap();
            assert_eq!(Locality::of(&cfg), expected, "{name}");
        }
        // A key-less server elsewhere is still elsewhere.
        let mut lan = ProviderConfig::new(ProviderKind::Openai);
        lan.base_url = Some("http://10.0.0.7:11434/v1".into());
        assert_eq!(Locality::of(&lan), Locality::Cloud);
        // Anthropic without a base URL goes to api.anthropic.com.
        assert_eq!(Locality::of(&ProviderConfig::new(ProviderKind::Anthropic)), Locality::Cloud);
    }

    #[test]
    fn role_and_mode_names_round_trip() {
        for role in RoleName::ALL {
            assert_eq!(RoleName::parse(role.as_str()), Some(role));
        }
        assert_eq!(RoleName::parse("drafter"), None);
        assert_eq!(RunMode::parse("roles"), Some(RunMode::Roles));
        assert_eq!(RunMode::parse(RunMode::default().as_str()), Some(RunMode::Loop));
    }

    #[test]
    fn long_sections_are_cut_with_a_note() {
        assert_eq!(capped("  ", 10), "(no text)");
        assert_eq!(capped("short", 10), "short");
        let cut = capped(&"é".repeat(25), 10);
        assert!(cut.starts_with(&"é".repeat(10)) && cut.ends_with("[… 15 more characters left out]"), "{cut}");
    }
}
