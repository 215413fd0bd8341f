//! The OpenAPI document of the JSON API: the committed `docs/openapi.json` equals the generated
//! one, every documented operation reaches a handler of the real router, an `/api` route the
//! document does not name is refused, and the schemas the records of other crates derive match
//! those records' real JSON.
//!
//! After changing the API, regenerate the committed document with `bash scripts/reference.sh`
//! (it runs `steward reference openapi`); the tests here only compare, never write.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};
use steward_config::Config;
use steward_core::ApprovalKey;
use steward_core::{PlannerChoice, Runtime};
use steward_policy::Redactor;
use steward_protocol::{ApprovalRequest, ApprovalStatus, Event, EventKind, StopReason, ToolChoice, ToolSpec, Usage};
use steward_provider::fake::{FakeProvider, Scenario};
use steward_server::{
    ErrorClass, Launcher, LauncherError, Prepared, ProviderStatus, RunOptions, ServerOptions, Sessions,
};
use steward_store::{FactRecord, RunRecord, RunStatus, SqliteStore, Store};
use steward_tools::ToolRegistry;
use tower::ServiceExt;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
}

fn document() -> Value {
    serde_json::to_value(steward_server::openapi::document()).unwrap()
}

#[test]
fn committed_document_is_current() {
    let path = committed_path();
    let generated = steward_server::openapi::document_json();
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let first = committed.lines().zip(generated.lines()).position(|(a, b)| a != b);
        let line = first.unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "docs/openapi.json differs from the document the code generates (first at line {}: committed {:?}, \
             generated {:?}); regenerate it with\n\n    bash scripts/reference.sh\n",
            line + 1,
            committed.lines().nth(line).unwrap_or("<end>"),
            generated.lines().nth(line).unwrap_or("<end>"),
        );
    }
}

/// The served document is the committed one.
#[tokio::test]
async fn served_document_is_the_generated_one() {
    let server = test_server().await;
    let response = server.app.clone().oneshot(server.request("get", "/api/openapi.json").body(Body::empty()).unwrap());
    let response = response.await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let served: Value = serde_json::from_str(&body_text(response).await).unwrap();
    assert_eq!(served, document());
}

/// Every error class of the API is in the document, with the same names as on the wire.
#[test]
fn error_classes_are_documented() {
    let doc = document();
    let schema = &doc["components"]["schemas"]["ApiErrorClass"];
    let documented: BTreeSet<&str> = schema["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("ApiErrorClass is an enumeration: {schema}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let classes: BTreeSet<&str> = ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(documented, classes);
    assert_eq!(
        doc["components"]["schemas"]["ErrorDetail"]["properties"]["class"]["$ref"],
        "#/components/schemas/ApiErrorClass"
    );
}

#[test]
fn document_is_openapi_3_1_for_steward() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "Steward API");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    for (path, item) in doc["paths"].as_object().unwrap() {
        assert!(path.starts_with("/api/"), "{path} is not under /api");
        for (method, op) in item.as_object().unwrap() {
            let writes = method != "get";
            let security = op["security"].as_array().unwrap_or_else(|| panic!("{method} {path} has no security"));
            if writes && path.starts_with("/api/ledger/") {
                // The ledger also takes bearer tokens, which need no CSRF token (browsers never
                // send them on their own).
                let cookie = json!({"owner_cookie": [], "csrf_token": []});
                assert!(security.iter().all(|s| *s == cookie || s.get("bearer_token").is_some()), "{method} {path}");
                assert!(op["responses"]["403"].is_object(), "{method} {path} documents the refusals");
            } else if writes {
                assert_eq!(security, &vec![json!({"owner_cookie": [], "csrf_token": []})], "{method} {path}");
                assert!(op["responses"]["403"].is_object(), "{method} {path} documents the CSRF refusal");
            }
            for (status, response) in op["responses"].as_object().unwrap() {
                if !status.starts_with('2') {
                    assert_eq!(
                        response["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody",
                        "{method} {path} {status}"
                    );
                }
            }
        }
    }
}

fn documented_operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut operations = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            assert!(METHODS.contains(&method.as_str()), "unexpected method {method} for {path}");
            operations.insert((path.clone(), method.clone()));
        }
    }
    operations
}

struct TestLauncher;

#[async_trait]
impl Launcher for TestLauncher {
    async fn prepare(&self, workspace: &Path, _options: &RunOptions) -> Result<Prepared, LauncherError> {
        let scenario = Scenario::from_toml("[[round]]\ntext = \"Done.\"\n").expect("the test scenario parses");
        let planner = PlannerChoice {
            kind: "model".into(),
            provider: Arc::new(FakeProvider::new(scenario)),
            model: "fake".into(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
        };
        Ok(Prepared::new(workspace.to_path_buf(), Config::default(), ToolRegistry::builtin(), planner, None)?)
    }
    async fn tools(&self, _workspace: &Path) -> Result<Vec<ToolSpec>, LauncherError> {
        Ok(ToolRegistry::builtin().specs())
    }
    async fn providers(&self) -> Vec<ProviderStatus> {
        vec![ProviderStatus { name: "fake".into(), reachable: true, models: vec!["fake".into()], error: String::new() }]
    }
}

async fn body_text(response: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), 10 << 20).await.unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A server on an in-memory store with a browser's owner cookie and CSRF token.
struct TestServer {
    _dir: tempfile::TempDir,
    app: axum::Router,
    cookie: String,
    csrf: String,
}

impl TestServer {
    fn request(&self, method: &str, path: &str) -> axum::http::request::Builder {
        Request::builder()
            .method(Method::from_bytes(method.to_uppercase().as_bytes()).unwrap())
            .uri(path)
            .header(header::COOKIE, &self.cookie)
            .header("x-csrf-token", &self.csrf)
    }
}

async fn test_server() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().await.unwrap());
    let runtime = Runtime::new(&ws, store, Redactor::new(Vec::new()), ApprovalKey::generate());
    let sessions = Sessions::new(&[3u8; 64], "local:tester").unwrap();
    let state = steward_server::app_state(
        Arc::new(runtime),
        Arc::new(TestLauncher),
        sessions,
        ServerOptions { workspaces: vec![ws.clone()], max_running: 2, ..ServerOptions::default() },
    );
    let app = steward_server::router(state);
    let first = app.clone().oneshot(Request::get("/").body(Body::empty()).unwrap()).await.unwrap();
    let cookie = first.headers()[header::SET_COOKIE].to_str().unwrap().split(';').next().unwrap().to_string();
    let html = body_text(first).await;
    let at = html.find("name=\"csrf-token\" content=\"").unwrap() + "name=\"csrf-token\" content=\"".len();
    let csrf = html[at..at + 64].to_string();
    TestServer { _dir: dir, app, cookie, csrf }
}

/// Every documented operation reaches a handler of the real router (no 404 from the router
/// itself, no 405), and every other method on a documented path is 405.
#[tokio::test]
async fn every_documented_operation_is_routed() {
    let server = test_server().await;
    let doc = document();
    let documented = documented_operations(&doc);
    let paths: BTreeSet<&String> = documented.iter().map(|(p, _)| p).collect();
    for path in paths {
        let concrete = path.replace("{id}", "x_unknown");
        for method in METHODS {
            let request = server.request(method, &concrete).body(Body::empty()).unwrap();
            let response = server.app.clone().oneshot(request).await.unwrap();
            let status = response.status();
            if documented.contains(&(path.clone(), method.to_string())) {
                assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
                let is_event_stream = response
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
                if is_event_stream {
                    continue; // an endless stream: its headers are enough
                }
                let body = body_text(response).await;
                if status == StatusCode::NOT_FOUND {
                    let error: Value = serde_json::from_str(&body)
                        .unwrap_or_else(|_| panic!("{method} {path}: 404 from the router itself, not a handler"));
                    assert_eq!(error["error"]["class"], "not_found", "{method} {path}");
                }
                let code = status.as_str();
                let op = &doc["paths"][path][method];
                assert!(
                    op["responses"][code].is_object(),
                    "{method} {path} answered {status}, which is not documented"
                );
            } else {
                assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path} is routed but not documented");
            }
        }
    }
}

/// An `/api/…` route the document does not name (one added by hand outside
/// `openapi::routes`) is refused before its handler runs, whichever router it was added to;
/// documented API routes and the pages are served.
#[tokio::test]
async fn an_undocumented_api_route_is_refused() {
    use axum::routing::get;
    let reached = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = |reached: &Arc<std::sync::atomic::AtomicUsize>, text: &'static str| {
        let reached = reached.clone();
        get(move || async move {
            reached.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            text
        })
    };
    let app = steward_server::openapi::documented_api_only(
        axum::Router::new()
            .route("/api/runs", count(&reached, "documented"))
            .route("/api/runs/{id}/secret", count(&reached, "hand-added"))
            .route("/api", count(&reached, "hand-added"))
            .route("/runs", count(&reached, "page")),
    );
    let call = |path: &'static str| {
        let app = app.clone();
        async move {
            let response = app.oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
            (response.status(), body_text(response).await)
        }
    };
    assert_eq!(call("/api/runs").await, (StatusCode::OK, "documented".to_string()));
    assert_eq!(call("/runs").await, (StatusCode::OK, "page".to_string()));
    for path in ["/api/runs/run_1/secret", "/api"] {
        let (status, body) = call(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        let error: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"]["class"], "not_found", "{path}");
    }
    assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 2, "only the documented route and the page ran");
}

/// Bodies and query strings the extractors refuse answer with the API's JSON error body and a
/// documented status, never axum's plain-text rejections.
#[tokio::test]
async fn refused_requests_answer_with_the_json_error() {
    let server = test_server().await;
    let json = |method: &str, path: &str, body: &str| {
        server
            .request(method, path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    let cases = [
        (server.request("post", "/api/runs").body(Body::from("task=x")).unwrap(), StatusCode::UNSUPPORTED_MEDIA_TYPE),
        (json("post", "/api/runs", "{\"task\": "), StatusCode::BAD_REQUEST),
        (json("post", "/api/runs", "{\"task\": 1}"), StatusCode::BAD_REQUEST),
        (json("post", "/api/memory", "[]"), StatusCode::BAD_REQUEST),
        (json("post", "/api/approvals/apr_x", "{\"scope\": \"run\"}"), StatusCode::BAD_REQUEST),
        (
            json("post", "/api/runs", &format!("{{\"task\": \"{}\"}}", "x".repeat(3 << 20))),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            server.request("get", "/api/runs/run_x/events?after=soon").body(Body::empty()).unwrap(),
            StatusCode::BAD_REQUEST,
        ),
        (server.request("get", "/api/tools?workspace=%FF").body(Body::empty()).unwrap(), StatusCode::BAD_REQUEST),
    ];
    let doc = document();
    for (request, expected) in cases {
        let what = format!("{} {}", request.method(), request.uri().path());
        let response = server.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let content_type = response.headers().get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap().to_string());
        let body = body_text(response).await;
        assert_eq!(status, expected, "{what}: {body}");
        assert_eq!(content_type.as_deref(), Some("application/json"), "{what}: {body}");
        let error: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"]["class"], "invalid", "{what}: {body}");
        assert!(error["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {body}");
        assert_matches(&doc, "ErrorBody", &error, Fields::Exact);
    }
}

/// A schema validator for component `name` of the document.
fn validator(doc: &Value, name: &str) -> jsonschema::Validator {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/components/schemas/{name}"),
        "components": doc["components"],
    });
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("schema {name}: {e}"))
}

/// How the fields of a record relate to the properties of its schema.
#[derive(Clone, Copy)]
enum Fields {
    /// The same names.
    Exact,
    /// Every field is a property (some properties are left out when empty).
    Described,
}

fn assert_matches(doc: &Value, name: &str, value: &Value, fields: Fields) {
    let validator = validator(doc, name);
    let errors: Vec<String> = validator.iter_errors(value).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{name} does not describe {value}: {errors:?}");
    let properties: BTreeSet<&String> = doc["components"]["schemas"][name]["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("{name} has properties"))
        .keys()
        .collect();
    let keys: BTreeSet<&String> = value.as_object().unwrap().keys().collect();
    match fields {
        Fields::Exact => assert_eq!(properties, keys, "the properties of {name} and the fields of its record differ"),
        Fields::Described => assert!(keys.is_subset(&properties), "{name}: {keys:?} not all in {properties:?}"),
    }
}

#[test]
fn schemas_describe_the_records() {
    let doc = document();
    let at = chrono::Utc::now();
    let run = RunRecord {
        id: "run_1".into(),
        owner_id: "web:0123456789abcdef".into(),
        task: "t".into(),
        planner: "model".into(),
        provider: "fake".into(),
        model: "fake".into(),
        workspace: "/w".into(),
        status: RunStatus::Failed,
        stop_reason: Some(StopReason::Failed),
        final_text: Some("f".into()),
        error_class: Some(steward_protocol::ErrorClass::Timeout),
        error: Some("e".into()),
        created_at: at,
        finished_at: Some(at),
        rounds: 1,
        tool_calls: 2,
        input_tokens: 3,
        output_tokens: 4,
        pid: 5,
    };
    assert_matches(&doc, "RunRecord", &serde_json::to_value(&run).unwrap(), Fields::Exact);
    let running = RunRecord {
        status: RunStatus::Running,
        stop_reason: None,
        final_text: None,
        error_class: None,
        error: None,
        finished_at: None,
        ..run
    };
    assert_matches(&doc, "RunRecord", &serde_json::to_value(&running).unwrap(), Fields::Exact);

    // An event is its common fields and those of its kind, as `EventKind` describes them.
    let events = validator(&doc, "Event");
    for kind in [
        EventKind::StageChunk { stage: "planner".into(), text: "x".into() },
        EventKind::RunCompleted {
            final_text: "done".into(),
            stop_reason: StopReason::Answered,
            rounds: 1,
            tool_calls: 0,
            usage: Usage::default(),
            duration_ms: 1,
            limit: String::new(),
        },
    ] {
        let event = serde_json::to_value(Event { run_id: "run_1".into(), seq: 1, at, kind }).unwrap();
        let errors: Vec<String> = events.iter_errors(&event).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "Event does not describe {event}: {errors:?}");
    }
    let chunk = EventKind::StageChunk { stage: "planner".into(), text: "x".into() };
    let mut without_text = serde_json::to_value(Event { run_id: "run_1".into(), seq: 1, at, kind: chunk }).unwrap();
    without_text.as_object_mut().unwrap().remove("text");
    assert!(!events.is_valid(&without_text), "a stage_chunk without its text passed: {without_text}");
    let unknown = json!({"event": "run_exploded", "run_id": "run_1", "seq": 1, "at": at});
    assert!(!events.is_valid(&unknown), "an event of an unknown name passed");

    let approval = ApprovalRequest {
        id: "apr_1".into(),
        run_id: "run_1".into(),
        owner_id: "web:0123456789abcdef".into(),
        call_id: "c".into(),
        tool: "edit".into(),
        arguments: json!({"path": "a"}),
        reason: "r".into(),
        rule: "default:medium".into(),
        risk: 0.5,
        preview: String::new(),
        created_at: at,
        expires_at: at,
        status: ApprovalStatus::Pending,
    };
    assert_matches(&doc, "ApprovalRequest", &serde_json::to_value(&approval).unwrap(), Fields::Exact);

    let specs = ToolRegistry::builtin().specs();
    assert!(!specs.is_empty());
    for spec in &specs {
        assert_matches(&doc, "ToolSpec", &serde_json::to_value(spec).unwrap(), Fields::Described);
    }
    let full = ToolSpec { path_inputs: vec!["path".into()], untrusted_output: true, ..specs[0].clone() };
    assert_matches(&doc, "ToolSpec", &serde_json::to_value(&full).unwrap(), Fields::Exact);

    let fact = FactRecord { id: "fct_1".into(), owner_id: "local:a".into(), text: "x".into(), created_at: at };
    assert_matches(&doc, "FactRecord", &serde_json::to_value(&fact).unwrap(), Fields::Exact);
}
