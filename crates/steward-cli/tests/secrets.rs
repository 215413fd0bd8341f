//! End to end: secrets planted in workspace files, environment variables, model replies,
//! provider error bodies and the task never leave the process — not in `--json` output or
//! diagnostics, not in the database or saved outputs, and not in any request the model server
//! received (aimock's request journal shows exactly what the "model" got). Named `peer_*`: it
//! starts the real aimock server (`STEWARD_TEST_AIMOCK`, set by `scripts/test.sh`).

use crate::common;

use std::process::Command;

use common::*;
use serde_json::{Value, json};

/// The planted secrets, one per format.
const FILE_SECRETS: &[&str] = &[
    "Pr0dDbPassw0rd!",
    "9f8e7d6c5b4a39281706",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GOCSPX-abcdefghijklmnop1234",
    "sk_live_abcdefghijklmnop1234",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "xoxb-1234567890-abcdefghij",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9x.eyJzdWIiOiIxMjM0In0x.abcdefghijklmnop",
    "s3cr3tpw0rd",
    "glpat-abcdefghij0123456789",
    "hf_abcdefghijklmnopqrstuvwxyz0123456",
    "DOTENVSECRETVALUE123456",
];
const ENV_SECRET: &str = "tok-ENVSECRET-1234567890abcdef";
const PROVIDER_KEY: &str = "sk-aimock-providerkey-0123456789";
const MODEL_SECRETS: &[&str] = &[
    "sk-ant-api03-abcdefghijklmnopqrstuv",
    "abcdef0123456789abcdefBEARER",
    "MIIEowMODELKEYBODY",
    "AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX1",
];
const TASK_SECRET: &str = "xai-abcdefghijklmnopqrstuvwxTASK";
const ERROR_SECRET: &str = "sk-or-v1-0123456789abcdef0123ERR";

struct Aimock(steward_peers::Peer);

impl Aimock {
    fn start(fixtures: Value) -> Aimock {
        Aimock(steward_peers::aimock(fixtures, None))
    }

    /// What the server received: the body and headers of every request (the journal also
    /// holds the canned responses, which are left out).
    fn received(&self) -> String {
        let out = Command::new("curl")
            .args(["-s", &format!("http://127.0.0.1:{}/__aimock/journal", self.0.port)])
            .output()
            .unwrap();
        let entries: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the journal is JSON");
        assert!(!entries.is_empty(), "the journal is empty");
        entries.iter().map(|e| format!("{}\n{}\n", e["headers"], e["body"])).collect()
    }
}

fn all_files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() { stack.push(p) } else { files.push(p) }
        }
    }
    files
}

#[test]
fn peer_aimock_planted_secrets_never_leave_the_process() {
    let model_reply = format!(
        "Found: {} and Bearer {} and\n-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\nsee https://x.invalid/?key={} also {ENV_SECRET}",
        MODEL_SECRETS[0], MODEL_SECRETS[1], MODEL_SECRETS[2], MODEL_SECRETS[3]
    );
    let mock = Aimock::start(json!([
        {"match": {"userMessage": "audit the config", "hasToolResult": false}, "response": {"toolCalls": [
            {"name": "read", "arguments": {"path": "config.yml"}},
            {"name": "search", "arguments": {"query": "password"}},
            {"name": "read", "arguments": {"path": ".env"}}
        ]}},
        {"match": {"userMessage": "audit the config", "hasToolResult": true}, "response": {"content": model_reply}, "chunkSize": 7},
        {"match": {"userMessage": "break please"},
         "response": {"error": {"message": format!("upstream said key {ERROR_SECRET} is invalid"), "type": "invalid_request_error"}, "status": 400}}
    ]));
    let env = Env::new();
    env.write(
        "config.yml",
        &format!(
            "db:\n  password: {}\n  api_key: {}\naws_secret_access_key = {}\nclient_secret: {}\nstripe {} github {} slack {} aws {}\njwt {}\nurl: postgres://app:{}@db.local/app\ngitlab {} hf {}\n",
            FILE_SECRETS[0], FILE_SECRETS[1], FILE_SECRETS[2], FILE_SECRETS[3], FILE_SECRETS[4], FILE_SECRETS[5],
            FILE_SECRETS[6], FILE_SECRETS[7], FILE_SECRETS[8], FILE_SECRETS[9], FILE_SECRETS[10], FILE_SECRETS[11]
        ),
    );
    env.write(".env", &format!("OPENAI_API_KEY={}\n", FILE_SECRETS[12]));
    env.user_config(&format!(
        "[providers.mock]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{}/v1\"\napi_key_env = \"MOCK_LLM_API_KEY\"\ndefault_model = \"gpt-test\"\nretry_backoff_ms = 1\n",
        mock.0.port
    ));
    let run = |task: &str| {
        env.command(&["run", "--json", "--provider", "mock", task])
            .env("MOCK_LLM_API_KEY", PROVIDER_KEY)
            .env("MY_SERVICE_TOKEN", ENV_SECRET)
            .output()
            .unwrap()
    };
    let first = run(&format!("audit the config {TASK_SECRET}"));
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let evs = events(&first);
    assert!(evs.iter().filter(|e| e["event"] == "tool_completed").count() >= 2, "{:?}", names(&evs));
    assert_eq!(evs.iter().find(|e| e["event"] == "tool_denied").map(|e| e["rule"].clone()), Some(json!("secret_path")));
    assert!(find(&evs, "run_completed")["final"].as_str().unwrap().contains("[REDACTED]"));
    let second = run("break please");
    assert_eq!(code(&second), 1);
    assert!(find(&events(&second), "run_failed")["error"].as_str().unwrap().contains("[REDACTED]"));

    let mut secrets: Vec<&str> = FILE_SECRETS.iter().chain(MODEL_SECRETS).copied().collect();
    secrets.extend([ENV_SECRET, TASK_SECRET, ERROR_SECRET]);
    assert!(secrets.len() >= 20, "at least 20 planted secrets");
    let mut places: Vec<(String, String)> = vec![
        ("stdout of run 1".into(), stdout(&first)),
        ("stderr of run 1".into(), stderr(&first)),
        ("stdout of run 2".into(), stdout(&second)),
        ("stderr of run 2".into(), stderr(&second)),
    ];
    for file in all_files_under(&env.home()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        places.push((file.display().to_string(), String::from_utf8_lossy(&bytes).into_owned()));
    }
    for cmd in [vec!["show", "last", "--json"], vec!["audit", "export"], vec!["runs", "--json"]] {
        let out = env.steward(&cmd);
        assert_eq!(code(&out), 0, "steward {}: {}", cmd.join(" "), stderr(&out));
        assert!(!stdout(&out).is_empty(), "steward {} printed nothing", cmd.join(" "));
        places.push((format!("steward {}", cmd.join(" ")), stdout(&out)));
    }
    // What the model server received: every secret but the provider's own key, which is sent
    // to it on purpose in the Authorization header (and checked everywhere else below).
    let journal = mock.received();
    assert!(journal.contains("audit the config"), "the journal holds the requests: {journal:.300}");
    for secret in &secrets {
        assert!(!journal.contains(secret), "the model received {secret}");
    }
    assert!(journal.contains("[REDACTED]"), "the model saw the redacted tool output");
    secrets.push(PROVIDER_KEY);
    for (place, text) in &places {
        for secret in &secrets {
            assert!(!text.contains(secret), "{secret} leaked into {place}");
        }
    }
}
