//! The role pipeline (SPEC O1–O3) with scripted fake providers: stage order and streaming,
//! drafters that fail, critic/reviewer/synthesizer failures, limits, locality, and the
//! `[roles]` configuration.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use steward_config::Config;
use steward_core::EventObserver;
use steward_core::{ApprovalKey, NoApprover};
use steward_core::{Locality, PlannerChoice, RoleAssignment, RoleName, RolePlan, RunRequest, Runtime, run_task};
use steward_core::{PlannerOverrides, resolve_roles};
use steward_policy::Redactor;
use steward_protocol::{ChatRequest, ErrorClass, Event, EventKind, StopReason, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_provider::{Provider, ProviderConfig, ProviderKind};
use steward_store::{RunRecord, RunStatus, SqliteStore, Store};
use steward_tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

/// Records every event; optionally cancels the run when a stage starts.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Event>>,
    cancel_at: Option<(String, CancellationToken)>,
}

impl EventObserver for Recorder {
    fn on_event(&self, event: &Event) {
        if let (Some((stage, cancel)), EventKind::StageStarted { stage: started, .. }) = (&self.cancel_at, &event.kind)
            && stage == started
        {
            cancel.cancel();
        }
        self.events.lock().unwrap().push(event.clone());
    }
}

impl Recorder {
    fn all(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    /// `(event name, stage)` of every stage event, in order.
    fn stages(&self) -> Vec<(&'static str, String)> {
        self.all()
            .into_iter()
            .filter_map(|e| match &e.kind {
                EventKind::StageStarted { stage, .. }
                | EventKind::StageCompleted { stage, .. }
                | EventKind::StageFailed { stage, .. } => Some((e.kind.name(), stage.clone())),
                _ => None,
            })
            .collect()
    }

    /// The streamed text of `stage`.
    fn chunks(&self, stage: &str) -> String {
        self.all()
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::StageChunk { stage: s, text } if s == stage => Some(text),
                _ => None,
            })
            .collect()
    }

    /// Index of the first event matching `name` and `stage`.
    fn position(&self, name: &str, stage: &str) -> usize {
        self.stages()
            .iter()
            .position(|(n, s)| *n == name && s == stage)
            .unwrap_or_else(|| panic!("no {name} for {stage} in {:?}", self.stages()))
    }

    fn failure(&self, stage: &str) -> Option<(ErrorClass, String)> {
        self.all().into_iter().find_map(|e| match e.kind {
            EventKind::StageFailed { stage: s, class, error, .. } if s == stage => Some((class, error)),
            _ => None,
        })
    }
}

struct Harness {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    runtime: Runtime,
}

async fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("note.txt"), "the build uses cargo\n").unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(dir.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    Harness { _dir: dir, ws, runtime }
}

fn fake(name: &str, toml: &str) -> Arc<FakeProvider> {
    Arc::new(FakeProvider::new(Scenario::from_toml(toml).unwrap()).named(name))
}

fn answer(text: &str, tokens: u64) -> String {
    format!("[[round]]\ntext = {text:?}\nusage = {{ input_tokens = {tokens}, output_tokens = 1 }}\n")
}

const PLANNER: &str = r#"
[[round]]
text = "Reading."
usage = { input_tokens = 100, output_tokens = 1 }
[[round.tool_call]]
name = "read"
arguments = { path = "note.txt" }
[[round]]
chunks = ["Findings: ", "the build ", "uses cargo."]
usage = { input_tokens = 100, output_tokens = 1 }
"#;

fn planner_choice(provider: Arc<dyn Provider>) -> PlannerChoice {
    PlannerChoice {
        kind: "model".into(),
        provider,
        model: "fake".into(),
        tool_choice: ToolChoice::Auto,
        max_tokens: None,
    }
}

fn assignment(role: RoleName, provider: Arc<dyn Provider>, locality: Locality) -> RoleAssignment {
    RoleAssignment {
        role,
        provider_name: provider.name().to_string(),
        provider,
        model: "fake".into(),
        locality,
        max_tokens: None,
    }
}

/// The providers of one test, per role.
struct Cast {
    planner: Arc<FakeProvider>,
    local: Arc<dyn Provider>,
    cloud: Arc<dyn Provider>,
    critic: Arc<FakeProvider>,
    reviewer: Arc<FakeProvider>,
    synthesizer: Arc<FakeProvider>,
}

impl Cast {
    fn answering() -> Cast {
        Cast {
            planner: fake("planner-fake", PLANNER),
            local: fake(
                "local-fake",
                "[[round]]\nchunks = [\"Local \", \"draft.\"]\nusage = { input_tokens = 10, output_tokens = 1 }\n",
            ),
            cloud: fake("cloud-fake", &answer("Cloud draft.", 20)),
            critic: fake("critic-fake", &answer("The cloud draft is vague.", 30)),
            reviewer: fake("reviewer-fake", &answer("The local draft is best.", 40)),
            synthesizer: fake("synth-fake", &answer("The build uses cargo.", 50)),
        }
    }

    fn plan(&self) -> RolePlan {
        let planner: Arc<dyn Provider> = self.planner.clone();
        RolePlan {
            planner: planner_choice(planner.clone()),
            roles: vec![
                assignment(RoleName::Planner, planner, Locality::Local),
                assignment(RoleName::LocalDrafter, self.local.clone(), Locality::Local),
                assignment(RoleName::CloudDrafter, self.cloud.clone(), Locality::Cloud),
                assignment(RoleName::Critic, self.critic.clone(), Locality::Local),
                assignment(RoleName::Reviewer, self.reviewer.clone(), Locality::Local),
                assignment(RoleName::Synthesizer, self.synthesizer.clone(), Locality::Local),
            ],
        }
    }
}

async fn run_roles(h: &Harness, plan: RolePlan, config: Config, recorder: Arc<Recorder>) -> RunRecord {
    let cancel = recorder.cancel_at.as_ref().map(|(_, c)| c.clone()).unwrap_or_default();
    let request = RunRequest {
        task: "how is the project built?".into(),
        owner_id: "local:alice".into(),
        workspace: h.ws.clone(),
        planner: plan.planner.clone(),
        config,
        tools: ToolRegistry::builtin(),
        approver: Arc::new(NoApprover),
        observer: recorder,
        cancel,
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: Some(plan),
    };
    run_task(&h.runtime, request).await.unwrap()
}

/// The user message of the only request `provider` received.
fn input_of(provider: &FakeProvider) -> String {
    let requests: Vec<ChatRequest> = provider.requests();
    assert_eq!(requests.len(), 1, "{} was called {} times", provider.name(), requests.len());
    requests[0].messages.last().unwrap().content.clone()
}

#[tokio::test]
async fn all_roles_answer_in_order_and_stream_their_text() {
    let h = harness().await;
    let cast = Cast::answering();
    let recorder = Arc::new(Recorder::default());
    let run = run_roles(&h, cast.plan(), Config::default(), recorder.clone()).await;

    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.stop_reason, Some(StopReason::Answered));
    assert_eq!(run.final_text.as_deref(), Some("The build uses cargo."));
    assert_eq!(run.rounds, 2, "rounds count planner calls only");
    assert_eq!(run.tool_calls, 1);
    assert_eq!(run.input_tokens, 100 + 100 + 10 + 20 + 30 + 40 + 50, "every stage counts");
    let events = recorder.all();
    let names: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
    assert!(names.contains(&"tool_completed"), "the planner stage ran its tool: {names:?}");
    match &events.last().unwrap().kind {
        EventKind::RunCompleted { final_text, usage, rounds, .. } => {
            assert_eq!(final_text, "The build uses cargo.");
            assert_eq!(usage.input_tokens, run.input_tokens);
            assert_eq!(*rounds, 2);
        }
        other => panic!("last event {other:?}"),
    }

    // Order: planner → both drafters (in parallel) → critic → reviewer → synthesizer.
    let last_planner = recorder.stages().iter().rposition(|(_, s)| s == "planner").unwrap();
    for drafter in ["local_drafter", "cloud_drafter"] {
        assert!(last_planner < recorder.position("stage_started", drafter));
        assert!(recorder.position("stage_completed", drafter) < recorder.position("stage_started", "critic"));
    }
    assert!(recorder.position("stage_completed", "critic") < recorder.position("stage_started", "reviewer"));
    assert!(recorder.position("stage_completed", "reviewer") < recorder.position("stage_started", "synthesizer"));
    let stage_names: Vec<String> = recorder.stages().into_iter().map(|(_, s)| s).collect();
    assert_eq!(stage_names.last().map(String::as_str), Some("synthesizer"));
    assert!(recorder.stages().iter().all(|(n, _)| *n != "stage_failed"), "{:?}", recorder.stages());

    // Each stage streamed its text under its own name.
    assert!(recorder.chunks("planner").contains("Findings: the build uses cargo."));
    assert_eq!(recorder.chunks("local_drafter"), "Local draft.");
    assert_eq!(recorder.chunks("cloud_drafter"), "Cloud draft.");
    assert_eq!(recorder.chunks("critic"), "The cloud draft is vague.");
    assert_eq!(recorder.chunks("reviewer"), "The local draft is best.");
    assert_eq!(recorder.chunks("synthesizer"), "The build uses cargo.");
    for e in &events {
        if let EventKind::StageCompleted { stage, tool_calls, usage, .. } = &e.kind
            && stage != "planner"
        {
            assert_eq!(*tool_calls, 0, "{stage}");
            assert!(usage.input_tokens > 0, "{stage}");
        }
    }

    // What each role was given: drafters get the task and the findings and no tools; later
    // roles get everything before them.
    assert!(cast.critic.requests()[0].tools.is_empty(), "role stages offer no tools");
    let critic = input_of(&cast.critic);
    assert!(critic.contains("how is the project built?") && critic.contains("Findings: the build uses cargo."));
    assert!(critic.contains("### local_drafter (local: local-fake · fake)\nLocal draft."), "{critic}");
    assert!(critic.contains("### cloud_drafter (cloud: cloud-fake · fake)\nCloud draft."), "{critic}");
    let reviewer = input_of(&cast.reviewer);
    assert!(reviewer.contains("Critique:\nThe cloud draft is vague."), "{reviewer}");
    let synthesizer = input_of(&cast.synthesizer);
    assert!(synthesizer.contains("Review:\nThe local draft is best.") && synthesizer.contains("Local draft."));
    assert!(!synthesizer.contains("Every draft failed"));
    let system = &cast.synthesizer.requests()[0].messages[0].content;
    assert!(system.starts_with("You are the synthesizer"), "{system}");
    assert!(cast.synthesizer.requests()[0].tools.is_empty());
}

/// An OpenAI-compatible provider whose server is down (a loopback port nobody listens on).
fn server_down() -> Arc<dyn Provider> {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cfg = ProviderConfig::new(ProviderKind::Openai);
    cfg.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
    cfg.max_retries = Some(1);
    cfg.default_model = Some("qwen2.5:7b".into());
    steward_provider::build_provider("ollama", &cfg, &|_| None).unwrap()
}

#[tokio::test]
async fn local_model_failure_continues() {
    let h = harness().await;
    let cast = Cast { local: server_down(), ..Cast::answering() };
    let recorder = Arc::new(Recorder::default());
    let run = run_roles(&h, cast.plan(), Config::default(), recorder.clone()).await;

    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.error);
    assert_eq!(run.final_text.as_deref(), Some("The build uses cargo."));
    let (class, error) = recorder.failure("local_drafter").expect("stage_failed for local_drafter");
    assert_eq!(class, ErrorClass::ProviderUnreachable, "{error}");
    assert!(recorder.failure("cloud_drafter").is_none());
    let note = "[local_drafter failed (provider_unreachable):";
    for (who, input) in [("reviewer", input_of(&cast.reviewer)), ("synthesizer", input_of(&cast.synthesizer))] {
        assert!(input.contains(note), "{who}: {input}");
        assert!(input.contains("Cloud draft."), "{who}: {input}");
        assert!(!input.contains("Every draft failed"), "{who}: {input}");
    }
    assert!(input_of(&cast.critic).contains(note));
}

#[tokio::test]
async fn every_drafter_failing_still_completes_from_the_findings() {
    let h = harness().await;
    let failing = |class: &str| format!("[[round]]\n[round.error]\nclass = \"{class}\"\nmessage = \"no luck\"\n");
    let cast = Cast {
        local: fake("local-fake", &failing("timeout")),
        cloud: fake("cloud-fake", &failing("missing_api_key")),
        ..Cast::answering()
    };
    let recorder = Arc::new(Recorder::default());
    let run = run_roles(&h, cast.plan(), Config::default(), recorder.clone()).await;

    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.error);
    assert_eq!(run.stop_reason, Some(StopReason::Answered));
    assert_eq!(run.final_text.as_deref(), Some("The build uses cargo."));
    assert_eq!(recorder.failure("local_drafter").unwrap().0, ErrorClass::Timeout);
    assert_eq!(recorder.failure("cloud_drafter").unwrap().0, ErrorClass::MissingApiKey);
    // Critic and reviewer still ran, on the failure notes and the findings.
    for stage in ["critic", "reviewer", "synthesizer"] {
        recorder.position("stage_completed", stage);
    }
    let critic = input_of(&cast.critic);
    assert!(critic.contains("[local_drafter failed (timeout): no luck]"), "{critic}");
    assert!(critic.contains("[cloud_drafter failed (missing_api_key): no luck]"), "{critic}");
    let synthesizer = input_of(&cast.synthesizer);
    assert!(synthesizer.contains("Every draft failed"), "{synthesizer}");
    assert!(synthesizer.contains("Findings: the build uses cargo."), "{synthesizer}");
}

#[tokio::test]
async fn a_failed_critic_is_noted_and_a_failed_synthesizer_fails_the_run() {
    let h = harness().await;
    let failing = "[[round]]\n[round.error]\nclass = \"rate_limited\"\nmessage = \"slow down\"\n";
    let cast = Cast { critic: fake("critic-fake", failing), ..Cast::answering() };
    let recorder = Arc::new(Recorder::default());
    let run = run_roles(&h, cast.plan(), Config::default(), recorder.clone()).await;
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(recorder.failure("critic").unwrap().0, ErrorClass::RateLimited);
    let reviewer = input_of(&cast.reviewer);
    assert!(reviewer.contains("Critique:\n[critic failed (rate_limited): slow down]"), "{reviewer}");
    assert!(input_of(&cast.synthesizer).contains("[critic failed (rate_limited): slow down]"));

    let cast = Cast {
        synthesizer: fake("synth-fake", &failing.replace("rate_limited", "provider_error")),
        ..Cast::answering()
    };
    let recorder = Arc::new(Recorder::default());
    let run = run_roles(&h, cast.plan(), Config::default(), recorder.clone()).await;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error_class, Some(ErrorClass::ProviderError));
    assert!(run.error.as_deref().unwrap_or("").contains("slow down"), "{:?}", run.error);
    assert!(matches!(
        recorder.all().last().unwrap().kind,
        EventKind::RunFailed { class: ErrorClass::ProviderError, .. }
    ));
}

#[tokio::test]
async fn a_failed_planner_ends_the_run_before_any_role() {
    let h = harness().await;
    let failing = "[[round]]\n[round.error]\nclass = \"missing_api_key\"\nmessage = \"OPENAI_API_KEY is not set\"\n";
    let cast = Cast { planner: fake("planner-fake", failing), ..Cast::answering() };
    let recorder = Arc::new(Recorder::default());
    let run = run_roles(&h, cast.plan(), Config::default(), recorder.clone()).await;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error_class, Some(ErrorClass::MissingApiKey));
    assert!(recorder.stages().iter().all(|(_, s)| s == "planner"), "{:?}", recorder.stages());
    assert!(cast.synthesizer.requests().is_empty());
}

#[tokio::test]
async fn a_round_limit_passes_what_the_planner_had_on_and_keeps_the_reason() {
    let h = harness().await;
    let cast = Cast::answering();
    let mut config = Config::default();
    config.limits.max_rounds = 1;
    let recorder = Arc::new(Recorder::default());
    let run = run_roles(&h, cast.plan(), config, recorder.clone()).await;
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.stop_reason, Some(StopReason::MaxRounds));
    assert_eq!(run.final_text.as_deref(), Some("The build uses cargo."));
    let drafter = cast.critic.requests();
    assert!(drafter[0].messages[1].content.contains("Stopped by a limit before a final answer"));
}

#[tokio::test]
async fn cancelling_during_the_drafts_cancels_the_run() {
    let h = harness().await;
    let slow = "[[round]]\ndelay_ms = 30000\ntext = \"late\"\n";
    let cast = Cast { local: fake("local-fake", slow), ..Cast::answering() };
    let recorder = Arc::new(Recorder {
        cancel_at: Some(("cloud_drafter".into(), CancellationToken::new())),
        ..Default::default()
    });
    let started = std::time::Instant::now();
    let run = run_roles(&h, cast.plan(), Config::default(), recorder.clone()).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(run.status, RunStatus::Cancelled);
    assert!(matches!(recorder.all().last().unwrap().kind, EventKind::RunCancelled { .. }));
    assert!(cast.critic.requests().is_empty());
}

#[tokio::test]
async fn the_run_time_limit_stops_a_slow_drafter_with_the_findings() {
    let h = harness().await;
    let slow = "[[round]]\ndelay_ms = 30000\ntext = \"late\"\n";
    let cast = Cast { cloud: fake("cloud-fake", slow), ..Cast::answering() };
    let mut config = Config::default();
    config.limits.max_total_runtime_ms = 1_500;
    let recorder = Arc::new(Recorder::default());
    let run = run_roles(&h, cast.plan(), config, recorder.clone()).await;
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.stop_reason, Some(StopReason::Timeout));
    let text = run.final_text.unwrap();
    assert!(text.contains("cloud_drafter stage") && text.contains("Findings: the build uses cargo."), "{text}");
    assert!(cast.critic.requests().is_empty());
}

#[tokio::test]
async fn role_text_passes_the_redactor() {
    let h = harness().await;
    let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD";
    let cast = Cast {
        local: fake("local-fake", &answer(&format!("use key {secret}"), 1)),
        synthesizer: fake("synth-fake", &answer(&format!("the key is {secret}"), 1)),
        ..Cast::answering()
    };
    let recorder = Arc::new(Recorder::default());
    let run = run_roles(&h, cast.plan(), Config::default(), recorder.clone()).await;
    assert!(!run.final_text.unwrap().contains(secret));
    assert!(!recorder.chunks("local_drafter").contains(secret));
    assert!(!input_of(&cast.critic).contains(secret), "a draft reaches the next model redacted");
}

// --- Resolving the plan from configuration -------------------------------------------------

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn no_env(_: &str) -> Option<String> {
    None
}

#[tokio::test]
async fn locality_comes_from_the_provider_not_the_role() {
    let dir = tempfile::tempdir().unwrap();
    let (user, ws) = (dir.path().join("user"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    write(&dir.path().join("planner.toml"), "[[round]]\ntext = \"findings\"\n");
    write(&dir.path().join("draft.toml"), "[[round]]\ntext = \"a draft from a small local model\"\n");
    write(
        &user.join("config.toml"),
        &format!(
            "[providers.mini]\nkind = \"fake\"\nscenario = {:?}\n\
             [providers.box]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\ndefault_model = \"m\"\n\
             [roles.cloud_drafter]\nprovider = \"mini\"\n\
             [roles.local_drafter]\nprovider = \"openai\"\n\
             [roles.synthesizer]\nprovider = \"box\"\nmodel = \"big\"\n",
            dir.path().join("draft.toml").display().to_string()
        ),
    );
    let config = Config::load(Some(&user), &ws).unwrap();
    let overrides = PlannerOverrides {
        provider: Some("fake".into()),
        scenario: Some(dir.path().join("planner.toml")),
        ..Default::default()
    };
    let plan = resolve_roles(&config, &overrides, &no_env).unwrap();
    let who = |role: RoleName| {
        let a = plan.get(role).unwrap();
        (a.provider_name.clone(), a.model.clone(), a.locality)
    };
    assert_eq!(plan.roles.len(), 6);
    assert_eq!(who(RoleName::Planner), ("fake".into(), "fake".into(), Locality::Local));
    assert_eq!(
        who(RoleName::CloudDrafter),
        ("mini".into(), "fake".into(), Locality::Local),
        "a local provider is local"
    );
    assert_eq!(who(RoleName::LocalDrafter), ("openai".into(), "gpt-4.1-mini".into(), Locality::Cloud));
    assert_eq!(who(RoleName::Synthesizer), ("box".into(), "big".into(), Locality::Local), "loopback base URL");
    assert_eq!(who(RoleName::Critic), who(RoleName::Planner), "no entry: the planner's provider");
    assert_eq!(plan.planner.kind, "model");
    // The missing OpenAI key is not a resolution error: the stage fails with its class.
    let err = plan.get(RoleName::LocalDrafter).unwrap().provider.list_models().await.unwrap_err();
    assert_eq!(err.class, ErrorClass::MissingApiKey);

    // Run it: the critic sees the cloud_drafter role reported as local, and the local drafter's
    // missing key as a failure note.
    let h = harness().await;
    let critic = fake("critic-fake", &answer("fine", 1));
    let synthesizer = fake("synth-fake", &answer("done", 1));
    let mut plan = plan;
    for a in &mut plan.roles {
        match a.role {
            RoleName::Critic => a.provider = critic.clone(),
            RoleName::Synthesizer => a.provider = synthesizer.clone(),
            _ => {}
        }
    }
    let recorder = Arc::new(Recorder::default());
    let run = run_roles(&h, plan, config, recorder.clone()).await;
    assert_eq!(run.final_text.as_deref(), Some("done"), "{:?}", run.error);
    let input = input_of(&critic);
    assert!(input.contains("### cloud_drafter (local: mini · fake)\na draft from a small local model"), "{input}");
    assert!(
        input.contains("### local_drafter (cloud: openai · gpt-4.1-mini)\n[local_drafter failed (missing_api_key)"),
        "{input}"
    );
    assert_eq!(recorder.failure("local_drafter").unwrap().0, ErrorClass::MissingApiKey);
}

#[test]
fn resolving_roles_names_the_role_and_file_and_lets_the_command_line_win() {
    let dir = tempfile::tempdir().unwrap();
    let (user, ws) = (dir.path().join("user"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    write(&dir.path().join("s.toml"), "[[round]]\ntext = \"x\"\n");

    // The classic planner writes no drafts: every other role needs an entry.
    let config = Config::load(Some(&user), &ws).unwrap();
    let err = resolve_roles(&config, &PlannerOverrides::default(), &no_env).err().unwrap().to_string();
    assert!(err.contains("local_drafter") && err.contains("[roles.local_drafter]"), "{err}");

    // An unknown provider names the role and the file that set it.
    write(&user.join("roles.toml"), "[roles.critic]\nprovider = \"nope\"\n");
    let config = Config::load(Some(&user), &ws).unwrap();
    let overrides = PlannerOverrides {
        provider: Some("fake".into()),
        scenario: Some(dir.path().join("s.toml")),
        ..Default::default()
    };
    let err = resolve_roles(&config, &overrides, &no_env).err().unwrap().to_string();
    assert!(
        err.contains("roles.critic") && err.contains("roles.toml") && err.contains("unknown provider `nope`"),
        "{err}"
    );

    // A fake role provider needs its own scenario.
    write(&user.join("roles.toml"), "[roles.critic]\nprovider = \"fake\"\n");
    let config = Config::load(Some(&user), &ws).unwrap();
    let err = resolve_roles(&config, &overrides, &no_env).err().unwrap().to_string();
    assert!(err.contains("roles.critic") && err.contains("scenario"), "{err}");

    // [roles.planner] picks the planner unless the command line names one.
    write(
        &user.join("roles.toml"),
        &format!(
            "[providers.scripted]\nkind = \"fake\"\nscenario = {:?}\n[roles.planner]\nprovider = \"scripted\"\nmodel = \"m1\"\n",
            dir.path().join("s.toml").display().to_string()
        ),
    );
    let config = Config::load(Some(&user), &ws).unwrap();
    let plan = resolve_roles(&config, &PlannerOverrides::default(), &no_env).unwrap();
    assert_eq!(plan.planner.provider.name(), "scripted");
    assert_eq!(plan.planner.model, "m1");
    assert_eq!(plan.get(RoleName::Reviewer).unwrap().provider_name, "scripted");
    let plan = resolve_roles(&config, &overrides, &no_env).unwrap();
    assert_eq!(plan.planner.provider.name(), "fake", "--provider wins over [roles.planner]");
    assert_eq!(plan.get(RoleName::Reviewer).unwrap().provider_name, "fake");
}

#[tokio::test]
async fn an_incomplete_plan_is_refused_before_the_run_starts() {
    let h = harness().await;
    let mut plan = Cast::answering().plan();
    plan.roles.retain(|a| a.role != RoleName::Reviewer);
    let request = RunRequest {
        task: "t".into(),
        owner_id: "local:alice".into(),
        workspace: h.ws.clone(),
        planner: plan.planner.clone(),
        config: Config::default(),
        tools: ToolRegistry::builtin(),
        approver: Arc::new(NoApprover),
        observer: Arc::new(Recorder::default()),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: Some(plan),
    };
    let err = run_task(&h.runtime, request).await.unwrap_err();
    assert!(err.to_string().contains("reviewer"), "{err}");
    assert!(h.runtime.store.list_runs(10).await.unwrap().is_empty());
}

// --- Configuration -----------------------------------------------------------------------

fn load_error(workspace_file: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (user, ws) = (dir.path().join("user"), dir.path().join("ws"));
    write(&user.join("config.toml"), workspace_file);
    std::fs::create_dir_all(&ws).unwrap();
    Config::load(Some(&user), &ws).unwrap_err().to_string()
}

#[test]
fn bad_roles_configuration_names_the_file_line_and_key() {
    let err = load_error("[roles.drafter]\nprovider = \"ollama\"\n");
    assert!(err.contains("config.toml:1:") && err.contains("drafter") && err.contains("local_drafter"), "{err}");
    let err = load_error("[roles.critic]\n\nprovider = \"  \"\n");
    assert!(err.contains("config.toml:3:") && err.contains("roles.critic.provider is empty"), "{err}");
    let err = load_error("[roles.critic]\nprovider = \"ollama\"\nmodel = \"\"\n");
    assert!(err.contains("config.toml:3:") && err.contains("roles.critic.model"), "{err}");
    let err = load_error("[roles.critic]\nmodel = \"m\"\n");
    assert!(err.contains("config.toml:") && err.contains("provider"), "{err}");
    let err = load_error("[roles.critic]\nprovider = \"ollama\"\ntemperature = 1\n");
    assert!(err.contains("config.toml:3:") && err.contains("temperature"), "{err}");
    let err = load_error("[run]\nmode = \"swarm\"\n");
    assert!(err.contains("config.toml:2:") && err.contains("swarm"), "{err}");
}

#[test]
fn an_untrusted_workspace_cannot_choose_role_providers() {
    let dir = tempfile::tempdir().unwrap();
    let (user, ws) = (dir.path().join("user"), dir.path().join("ws"));
    write(&user.join("config.toml"), "[roles.reviewer]\nprovider = \"ollama\"\n[run]\nmode = \"roles\"\n");
    write(
        &ws.join(".steward/config.toml"),
        "[roles.critic]\nprovider = \"evil\"\n[roles.reviewer]\nprovider = \"openai\"\n[run]\nmode = \"loop\"\n",
    );
    let c = Config::load(Some(&user), &ws).unwrap();
    assert!(!c.trusted);
    assert_eq!(c.roles.critic, None);
    assert_eq!(c.roles.reviewer.as_ref().map(|r| r.provider.as_str()), Some("ollama"));
    assert_eq!(c.run.mode, Some(steward_core::RunMode::Roles));
    assert!(c.warnings.iter().any(|w| w.contains("`roles` ignored")), "{:?}", c.warnings);

    let trust = format!("[trust]\nworkspaces = [{:?}]\n", ws.display().to_string());
    write(&user.join("trust.toml"), &trust);
    let c = Config::load(Some(&user), &ws).unwrap();
    assert!(c.trusted);
    assert_eq!(c.roles.critic.as_ref().map(|r| r.provider.as_str()), Some("evil"));
    assert_eq!(c.roles.reviewer.as_ref().map(|r| r.provider.as_str()), Some("openai"));
    assert_eq!(c.run.mode, Some(steward_core::RunMode::Loop));
    let sources: BTreeMap<_, _> = c.entry_sources.clone();
    assert!(sources["roles.critic"].ends_with(".steward/config.toml"));
}
