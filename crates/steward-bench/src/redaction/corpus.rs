//! The corpus of `steward-bench redaction`: text files taken from folders (minified bundles,
//! crate sources), generated logs, and secrets of the kinds gitleaks' default rules detect,
//! planted at random places with a fixed seed (so every run plants the same ones).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Largest file taken from a source folder, in bytes.
const MAX_FILE: u64 = 4_000_000;
/// Size of one generated log file, in bytes.
const LOG_FILE: usize = 1_000_000;

/// Where a file of the corpus comes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Part {
    /// A file of one line over 100 kB (a minified bundle).
    Bundle,
    /// Any other file taken from a source folder.
    Source,
    /// A generated log.
    Log,
}

impl Part {
    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Part::Bundle => "minified bundles",
            Part::Source => "source files",
            Part::Log => "logs",
        }
    }
}

/// One file of the corpus.
pub struct File {
    /// Its path in the corpus folder.
    pub path: String,
    /// Its text.
    pub text: String,
    /// What it is.
    pub part: Part,
}

/// A secret planted in the corpus.
pub struct Planted {
    /// The gitleaks rule that detects this kind.
    pub kind: &'static str,
    /// Index of the file in the corpus.
    pub file: usize,
    /// Pieces of the secret (12 characters each) none of which may be left after redaction;
    /// the first is what a gitleaks finding must contain to count for this secret.
    pub probes: Vec<String>,
}

/// The corpus: files and the secrets planted in them.
pub struct Corpus {
    pub files: Vec<File>,
    pub planted: Vec<Planted>,
}

impl Corpus {
    /// Total size in bytes.
    pub fn bytes(&self) -> usize {
        self.files.iter().map(|f| f.text.len()).sum()
    }

    /// Writes every file under `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        for file in &self.files {
            let path = dir.join(&file.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, &file.text).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }
}

/// Builds the corpus: files from `sources` (in order, each folder's files sorted by path)
/// until `total - logs` bytes, then `logs` bytes of generated logs, then `per_kind` secrets of
/// each kind planted.
pub fn build(sources: &[PathBuf], total: usize, logs: usize, per_kind: usize) -> Result<Corpus> {
    let mut files = Vec::new();
    let mut size = 0usize;
    let budget = total.saturating_sub(logs);
    for (n, source) in sources.iter().enumerate() {
        let mut paths = Vec::new();
        walk(source, &mut paths).with_context(|| format!("reading {}", source.display()))?;
        paths.sort();
        for path in paths {
            if size >= budget {
                break;
            }
            let Ok(bytes) = std::fs::read(&path) else { continue };
            if bytes.contains(&0) {
                continue;
            }
            let Ok(text) = String::from_utf8(bytes) else { continue };
            let rel = path.strip_prefix(source).unwrap_or(&path).display().to_string();
            let part = if text.len() > 100_000 && text.lines().count() <= 3 { Part::Bundle } else { Part::Source };
            size += text.len();
            files.push(File { path: format!("source{n}/{rel}"), text, part });
        }
    }
    let mut rng = StdRng::seed_from_u64(0x5ec2_e75e_ed00_0001);
    let mut n = 0;
    let mut left = logs;
    while left > 0 {
        let text = log_file(&mut rng, LOG_FILE.min(left));
        left = left.saturating_sub(text.len().max(1));
        files.push(File { path: format!("logs/app-{n:03}.log"), text, part: Part::Log });
        n += 1;
    }
    let mut corpus = Corpus { files, planted: Vec::new() };
    plant(&mut corpus, &mut rng, per_kind);
    Ok(corpus)
}

/// Every regular file under `dir`, recursively (symbolic links not followed).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(&entry.path(), out)?;
        } else if kind.is_file() && entry.metadata()?.len() <= MAX_FILE {
            out.push(entry.path());
        }
    }
    Ok(())
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const HEX: &[u8] = b"0123456789abcdef";
const DIGITS: &[u8] = b"0123456789";
const URL_SAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const BASE32_AWS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const BECH32: &[u8] = b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn pick(rng: &mut StdRng, set: &[u8], n: usize) -> String {
    (0..n).map(|_| set[rng.random_range(0..set.len())] as char).collect()
}

/// A secret of the kind named by its gitleaks rule, and the text around it on its line
/// (`{}` marks the secret).
fn secret(rng: &mut StdRng, kind: &str) -> (String, &'static str) {
    const CODE: &str = "    let client = Client::new(\"{}\");";
    match kind {
        "aws-access-token" => (format!("AKIA{}", pick(rng, BASE32_AWS, 16)), CODE),
        "github-pat" => (format!("ghp_{}", pick(rng, ALNUM, 36)), CODE),
        "github-fine-grained-pat" => (format!("github_pat_{}", pick(rng, ALNUM, 82)), CODE),
        "gitlab-pat" => (format!("glpat-{}", pick(rng, ALNUM, 20)), CODE),
        "slack-bot-token" => {
            let (a, b) = (pick(rng, DIGITS, 12), pick(rng, DIGITS, 13));
            (format!("xoxb-{a}-{b}-{}", pick(rng, ALNUM, 24)), CODE)
        }
        "slack-webhook-url" => {
            let (t, b) = (pick(rng, UPPER_ALNUM, 8), pick(rng, UPPER_ALNUM, 10));
            (format!("https://hooks.slack.com/services/T{t}/B{b}/{}", pick(rng, ALNUM, 24)), CODE)
        }
        "stripe-access-token" => (format!("sk_live_{}", pick(rng, ALNUM, 24)), CODE),
        "openai-api-key" => {
            let (a, b) = (pick(rng, ALNUM, 74), pick(rng, URL_SAFE, 74));
            (format!("sk-proj-{a}T3BlbkFJ{b}"), CODE)
        }
        "anthropic-api-key" => (format!("sk-ant-api03-{}AA", pick(rng, URL_SAFE, 93)), CODE),
        "jwt" => {
            let header = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";
            (format!("{header}.eyJ{}.{}", pick(rng, ALNUM, 60), pick(rng, URL_SAFE, 43)), CODE)
        }
        "generic-api-key" => (pick(rng, ALNUM, 32), "api_key = \"{}\""),
        "npm-access-token" => (format!("npm_{}", pick(rng, ALNUM, 36)), CODE),
        "huggingface-access-token" => (format!("hf_{}", pick(rng, LETTERS, 34)), CODE),
        "gcp-api-key" => (format!("AIza{}", pick(rng, URL_SAFE, 35)), CODE),
        "sendgrid-api-token" => (format!("SG.{}.{}", pick(rng, URL_SAFE, 22), pick(rng, URL_SAFE, 43)), CODE),
        "shopify-access-token" => (format!("shpat_{}", pick(rng, HEX, 32)), CODE),
        "digitalocean-pat" => (format!("dop_v1_{}", pick(rng, HEX, 64)), CODE),
        "pypi-upload-token" => (format!("pypi-AgEIcHlwaS5vcmc{}", pick(rng, URL_SAFE, 60)), CODE),
        "postman-api-token" => (format!("PMAK-{}-{}", pick(rng, HEX, 24), pick(rng, HEX, 34)), CODE),
        "doppler-api-token" => (format!("dp.pt.{}", pick(rng, ALNUM, 43)), CODE),
        "age-secret-key" => (format!("AGE-SECRET-KEY-1{}", pick(rng, BECH32, 58)), CODE),
        "linear-api-key" => (format!("lin_api_{}", pick(rng, ALNUM, 40)), CODE),
        "grafana-service-account-token" => (format!("glsa_{}_{}", pick(rng, ALNUM, 32), pick(rng, HEX, 8)), CODE),
        "databricks-api-token" => (format!("dapi{}", pick(rng, HEX, 32)), CODE),
        "curl-auth-header" => {
            (pick(rng, ALNUM, 40), "curl -H \"Authorization: Bearer {}\" https://api.example.com/v1/items")
        }
        _ => (pick(rng, BASE64, 64), "{}"),
    }
}

/// The gitleaks rules whose kinds are planted (all in gitleaks' default configuration).
pub const KINDS: &[&str] = &[
    "aws-access-token",
    "github-pat",
    "github-fine-grained-pat",
    "gitlab-pat",
    "slack-bot-token",
    "slack-webhook-url",
    "stripe-access-token",
    "openai-api-key",
    "anthropic-api-key",
    "private-key",
    "jwt",
    "generic-api-key",
    "npm-access-token",
    "huggingface-access-token",
    "gcp-api-key",
    "sendgrid-api-token",
    "shopify-access-token",
    "digitalocean-pat",
    "pypi-upload-token",
    "postman-api-token",
    "doppler-api-token",
    "age-secret-key",
    "linear-api-key",
    "grafana-service-account-token",
    "databricks-api-token",
    "curl-auth-header",
];

/// 12-character pieces of `value`: its middle and its end.
fn probes(value: &str) -> Vec<String> {
    let len = value.len();
    let mid = len / 2;
    vec![value[mid - 6..mid + 6].to_string(), value[len - 12..].to_string()]
}

/// Plants `per_kind` secrets of every kind of [`KINDS`] at random places: a line of its own
/// in a source file or log, or a statement in the middle of a bundle's one line.
fn plant(corpus: &mut Corpus, rng: &mut StdRng, per_kind: usize) {
    if corpus.files.is_empty() {
        return;
    }
    for &kind in KINDS {
        for _ in 0..per_kind {
            let file = rng.random_range(0..corpus.files.len());
            let part = corpus.files[file].part;
            let (value, line, probes) = if kind == "private-key" {
                let body: Vec<String> = (0..12).map(|_| pick(rng, BASE64, 64)).collect();
                let block =
                    format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", body.join("\n"));
                let probes = vec![probes(&body[0])[0].clone(), probes(&body[11])[1].clone()];
                (block.clone(), block, probes)
            } else {
                let (value, around) = secret(rng, kind);
                let line = around.replacen("{}", &value, 1);
                let probes = probes(&value);
                (value, line, probes)
            };
            let text = &mut corpus.files[file].text;
            if part == Part::Bundle && kind != "private-key" {
                // After a `;` near a random place of the one line.
                let at = floor_char(text, rng.random_range(0..text.len()));
                let at = text[at..].find(';').map_or(text.len(), |i| at + i + 1);
                text.insert_str(at, &format!("var k=\"{value}\";"));
            } else {
                let at = floor_char(text, rng.random_range(0..=text.len()));
                let at = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
                let line =
                    if at == text.len() && !text.ends_with('\n') { format!("\n{line}\n") } else { format!("{line}\n") };
                text.insert_str(at, &line);
            }
            corpus.planted.push(Planted { kind, file, probes });
        }
    }
}

/// The largest character boundary of `text` at or before `at`.
fn floor_char(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A generated log of about `size` bytes: the structured lines of a web service (tracing's
/// text format, JSON lines, an access log), a build's output and a stack trace now and then.
fn log_file(rng: &mut StdRng, size: usize) -> String {
    const LEVELS: &[&str] = &["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"];
    const TARGETS: &[&str] = &[
        "steward_core::orchestrator",
        "steward_server::runs",
        "hyper_util::client::legacy::pool",
        "sqlx::query",
        "steward_provider::http",
    ];
    const PATHS: &[&str] = &["/api/runs", "/api/approvals", "/v1/chat/completions", "/static/app.js", "/healthz"];
    const AGENTS: &[&str] = &[
        "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        "curl/8.11.1",
        "python-requests/2.32.3",
    ];
    let mut out = String::with_capacity(size + 512);
    let mut second = 0u64;
    while out.len() < size {
        second += rng.random_range(0..3);
        let (h, m, s) = (second / 3600 % 24, second / 60 % 60, second % 60);
        let micros = rng.random_range(0..1_000_000);
        let id = pick(rng, HEX, 16);
        match rng.random_range(0..10) {
            0..=3 => {
                let level = LEVELS[rng.random_range(0..LEVELS.len())];
                let target = TARGETS[rng.random_range(0..TARGETS.len())];
                let elapsed = rng.random_range(1..5000);
                out.push_str(&format!(
                    "2026-12-02T{h:02}:{m:02}:{s:02}.{micros:06}Z {level:>5} {target}: tool call finished \
                     run=run_{id} call=call_{} tool=read_file elapsed_ms={elapsed} bytes={}\n",
                    pick(rng, ALNUM, 8),
                    rng.random_range(0..100_000)
                ));
            }
            4..=6 => {
                let path = PATHS[rng.random_range(0..PATHS.len())];
                out.push_str(&format!(
                    "{{\"level\":\"info\",\"ts\":\"2026-12-02T{h:02}:{m:02}:{s:02}.{micros:06}Z\",\"msg\":\"request\",\
                     \"method\":\"POST\",\"path\":\"{path}\",\"status\":200,\"duration_ms\":{},\"request_id\":\"{id}\",\
                     \"user_agent\":\"{}\"}}\n",
                    rng.random_range(1..900),
                    AGENTS[rng.random_range(0..AGENTS.len())]
                ));
            }
            7..=8 => {
                let path = PATHS[rng.random_range(0..PATHS.len())];
                out.push_str(&format!(
                    "127.0.0.1 - - [02/Dec/2026:{h:02}:{m:02}:{s:02} +0000] \"GET {path}?page={}&sort=created_at \
                     HTTP/1.1\" {} {} \"-\" \"{}\"\n",
                    rng.random_range(1..50),
                    [200, 200, 304, 404][rng.random_range(0..4)],
                    rng.random_range(100..90_000),
                    AGENTS[rng.random_range(0..AGENTS.len())]
                ));
            }
            _ => {
                out.push_str(&format!(
                    "   Compiling steward-core v0.1.0 (/work/crates/steward-core)\nerror[E0308]: mismatched types\n  \
                     --> crates/steward-core/src/run.rs:{}:{}\n   |\n   = note: expected `Result<String, Error>`, \
                     found `Option<String>`\nthread 'main' panicked at src/main.rs:{}:5:\ncalled `Option::unwrap()` on \
                     a `None` value\nstack backtrace:\n   0: rust_begin_unwind\n   1: core::panicking::panic_fmt\n",
                    rng.random_range(1..800),
                    rng.random_range(1..100),
                    rng.random_range(1..300)
                ));
            }
        }
    }
    out
}
