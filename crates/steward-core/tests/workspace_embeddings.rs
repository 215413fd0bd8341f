//! Hybrid ranking of the workspace search index against a real embedding server: the
//! sentence-embedding model all-MiniLM-L6-v2 (converted to GGUF by `scripts/bert-to-gguf.py`)
//! served by llama-cpp-python's OpenAI-compatible `/v1/embeddings` on loopback. A question
//! worded unlike the code is found only with embeddings; an update embeds only new chunk
//! text; a server that dies leaves keyword ranking, and the run goes on saying why.

use std::path::Path;
use std::sync::{Arc, Mutex};

use steward_config::{Config, SearchConfig};
use steward_core::EventObserver;
use steward_core::{ApprovalKey, NoApprover};
use steward_core::{PlannerChoice, RunRequest, Runtime, run_task};
use steward_index::IndexOptions;
use steward_peers::{EMBEDDING_MODEL_ID, Peer, embedding_server};
use steward_policy::{Redactor, Workspace};
use steward_protocol::{Event, EventKind, ToolChoice};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_provider::{ProviderConfig, ProviderKind};
use steward_store::{RunStatus, SqliteStore, Store};
use steward_tools::ToolRegistry;
use steward_tools::{
    workspace_index::EMBEDDING_BATCH, workspace_index::Embeddings, workspace_index::Lookup, workspace_index::lookup,
};
use tokio_util::sync::CancellationToken;

/// The question: it shares no word with `src/retry.rs`, the file that answers it.
const QUESTION: &str = "How long should we pause between tries when a network call keeps failing?";

/// A small project: the answer, two files sharing words with the question but not answering
/// it, and unrelated ones.
const FILES: &[(&str, &str)] = &[
    (
        "src/retry.rs",
        "/// After a failure, sleep twice the previous delay: 100 ms, then 200 ms, 400 ms and so on,\n\
         /// capped at 30 seconds.\n\
         pub fn backoff(attempt: u32) -> std::time::Duration {\n    \
         std::time::Duration::from_millis((100u64 << attempt.min(9)).min(30_000))\n}\n",
    ),
    (
        "src/http.rs",
        "/// Sends one network call to the server and returns the body of its answer.\n\
         pub fn send(url: &str, body: &[u8]) -> Vec<u8> {\n    transport::post(url, body)\n}\n",
    ),
    (
        "docs/locks.md",
        "# Locks\n\nA writer must wait for the file lock before it changes the ledger; readers never take it.\n",
    ),
    (
        "src/render.rs",
        "/// Lays the rows out as a text table with aligned columns.\npub fn render_table(rows: &[Vec<String>]) -> String {\n    columns::align(rows)\n}\n",
    ),
    (
        "src/config.rs",
        "/// Reads the TOML settings file and fills in defaults.\npub fn parse_config(text: &str) -> Settings {\n    toml::from_str(text).unwrap_or_default()\n}\n",
    ),
    (
        "src/cache.rs",
        "/// Least recently used entries are evicted first once the cache holds `capacity` items.\npub struct Lru { capacity: usize }\n",
    ),
    ("README.md", "# Demo\n\nA demo project: a table renderer, a settings reader and a cache.\n"),
];

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    for (rel, text) in FILES {
        write(ws.path(), rel, text);
    }
    ws
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `[search] embeddings` naming an OpenAI-compatible provider at `base_url`.
fn config(base_url: &str) -> Config {
    let mut provider = ProviderConfig::new(ProviderKind::Openai);
    provider.base_url = Some(base_url.to_string());
    provider.timeout_ms = Some(30_000);
    let mut config = Config {
        search: SearchConfig {
            embeddings: Some("embed".into()),
            embedding_model: Some(EMBEDDING_MODEL_ID.into()),
            ..SearchConfig::default()
        },
        ..Config::default()
    };
    config.providers.insert("embed".into(), provider);
    config
}

fn embeddings(server: &Peer) -> Embeddings {
    let embeddings = Embeddings::from_config(&config(&format!("{}/v1", server.url())), &|_| None);
    assert!(matches!(embeddings, Embeddings::Client(_)), "{embeddings:?}");
    embeddings
}

async fn search(state: &Path, ws: &Path, embeddings: &Embeddings, query: &str, k: usize) -> Lookup {
    let workspace = Arc::new(Workspace::open(ws, &[]).unwrap());
    let redactor = Arc::new(Redactor::new(Vec::new()));
    lookup(state, &IndexOptions::default(), embeddings, &workspace, query, k, &CancellationToken::new(), &redactor)
        .await
        .unwrap()
}

fn paths(found: &Lookup) -> Vec<&str> {
    found.hits.iter().map(|h| h.path.as_str()).collect()
}

#[tokio::test]
async fn peer_embedding_hybrid_ranking_finds_a_question_worded_unlike_the_code() {
    let server = embedding_server();
    let (ws, state) = (workspace(), tempfile::tempdir().unwrap());

    // Keywords alone: the answer shares no word with the question, so it is not ranked at all,
    // while the files that share words are.
    let keyword = search(state.path(), ws.path(), &Embeddings::Off, QUESTION, 10).await;
    assert_eq!(keyword.ranking, "bm25");
    assert!(!paths(&keyword).contains(&"src/retry.rs"), "{:?}", paths(&keyword));
    assert!(paths(&keyword).contains(&"src/http.rs"), "{:?}", paths(&keyword));

    // Hybrid: the answer is the question's nearest chunk by cosine, so its fused score is
    // exactly 1 / (60 + 1), and it is among the passages a run is given.
    let hybrid = search(state.path(), ws.path(), &embeddings(&server), QUESTION, 4).await;
    assert_eq!((hybrid.ranking, hybrid.embedding_error.as_deref()), ("hybrid", None));
    assert_eq!(hybrid.embedded, FILES.len());
    let answer =
        hybrid.hits.iter().find(|h| h.path == "src/retry.rs").unwrap_or_else(|| panic!("{:?}", paths(&hybrid)));
    assert!((answer.score - 1.0 / 61.0).abs() < 1e-9, "{:?}", hybrid.hits);
}

#[tokio::test]
async fn peer_embedding_an_update_embeds_only_the_changed_files_chunks() {
    let server = embedding_server();
    let embeddings = embeddings(&server);
    let (ws, state) = (workspace(), tempfile::tempdir().unwrap());
    // Enough files for several batches: the first update embeds every chunk.
    for n in 0..40 {
        write(
            ws.path(),
            &format!("notes/note{n}.md"),
            &format!("# Note {n}\n\nMeeting {n} moved to room {}.\n", n + 100),
        );
    }
    let first = search(state.path(), ws.path(), &embeddings, "meeting room", 3).await;
    let chunks = first.report.chunks;
    assert_eq!(chunks, FILES.len() + 40);
    assert_eq!(first.embedded, chunks);
    assert_eq!(first.embedding_requests, chunks.div_ceil(EMBEDDING_BATCH) + 1, "chunk batches and the query");

    // Nothing changed: only the query is embedded.
    let again = search(state.path(), ws.path(), &embeddings, "meeting room", 3).await;
    assert_eq!((again.embedded, again.embedding_requests), (0, 1));

    // One file changed: its one chunk, and the query.
    write(ws.path(), "notes/note7.md", "# Note 7\n\nMeeting 7 is cancelled; the budget review takes its slot.\n");
    let changed = search(state.path(), ws.path(), &embeddings, "budget review", 3).await;
    assert_eq!(changed.report.changed, 1);
    assert_eq!((changed.embedded, changed.embedding_requests), (1, 2));
    assert_eq!(changed.hits[0].path, "notes/note7.md");
}

#[derive(Default)]
struct Events(Mutex<Vec<Event>>);

impl EventObserver for Events {
    fn on_event(&self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}

/// A model-planner run (a scripted planner) of [`QUESTION`] in `ws`; the planner's requests,
/// the run's events and its status.
async fn run(runtime: &Runtime, ws: &Path, config: Config) -> (Arc<FakeProvider>, Vec<Event>, RunStatus) {
    let provider = Arc::new(FakeProvider::new(Scenario::from_toml("[[round]]\ntext = \"answered\"\n").unwrap()));
    let events = Arc::new(Events::default());
    let workspace = Workspace::open(ws, &[]).unwrap();
    let request = RunRequest {
        task: QUESTION.into(),
        owner_id: "local:alice".into(),
        workspace: ws.to_path_buf(),
        planner: PlannerChoice {
            kind: "model".into(),
            provider: provider.clone(),
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        },
        tools: ToolRegistry::for_config(&config, &workspace).unwrap(),
        config,
        approver: Arc::new(NoApprover),
        observer: events.clone(),
        cancel: CancellationToken::new(),
        run_id: None,
        history: Vec::new(),
        attachments: Vec::new(),
        roles: None,
    };
    let record = run_task(runtime, request).await.unwrap();
    let events = events.0.lock().unwrap().clone();
    (provider, events, record.status)
}

/// The `context_retrieved` event's ranking and embedding error.
fn retrieved(events: &[Event]) -> (String, Option<String>) {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ContextRetrieved { ranking, embedding_error, .. } => {
                Some((ranking.clone(), embedding_error.clone()))
            }
            _ => None,
        })
        .expect("context_retrieved")
}

#[tokio::test]
async fn peer_embedding_a_run_ranks_hybrid_and_goes_on_with_keywords_when_the_server_dies() {
    let (ws, home) = (workspace(), tempfile::tempdir().unwrap());
    let ws = std::fs::canonicalize(ws.path()).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(home.path(), store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let server = embedding_server();
    let config = self::config(&format!("{}/v1", server.url()));

    // Alive: the answer reaches the planner through the vector ranking.
    let (provider, events, status) = run(&runtime, &ws, config.clone()).await;
    assert_eq!(status, RunStatus::Completed);
    assert_eq!(retrieved(&events), ("hybrid".to_string(), None));
    assert!(provider.requests()[0].messages[0].content.contains("pub fn backoff"));

    // Dead: the run goes on with keyword ranking, and its trace says why.
    drop(server);
    write(&ws, "src/retry.rs", &format!("{}// (touched)\n", FILES[0].1));
    let (provider, events, status) = run(&runtime, &ws, config).await;
    assert_eq!(status, RunStatus::Completed);
    let (ranking, error) = retrieved(&events);
    assert_eq!(ranking, "bm25");
    let error = error.expect("embedding_error");
    assert!(error.contains("cannot reach provider 'embed'"), "{error}");
    assert!(!provider.requests()[0].messages[0].content.contains("pub fn backoff"));
}
