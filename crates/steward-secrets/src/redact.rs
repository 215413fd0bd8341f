//! S3: the redactor applied at every boundary that leaves the process or reaches a model.

use std::borrow::Cow;

use regex::Regex;
use serde_json::{Map, Value};

use crate::gate::Candidates;
use crate::names::name_looks_secret;
use crate::patterns::{REDACTED, RULES};

/// Known secret values shorter than this (in bytes) are ignored: too likely to occur by chance.
const MIN_KNOWN_LEN: usize = 8;

/// Well-known provider variables treated as secret whatever their name looks like.
const PROVIDER_KEY_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
    "XAI_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "TOGETHER_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "STEWARD_HMAC_KEY",
    "STEWARD_AUDIT_KEY",
    "STEWARD_APPROVAL_KEY",
    "STEWARD_SESSION_SECRET",
];

/// Replaces secrets in text and JSON with `[REDACTED]`: the exact values it was given (known
/// secrets, e.g. from the environment) and pattern rules for provider key formats
/// (`sk-…`, `sk-ant-…`, `sk-or-…`, `xai-…`, `AIza…`, `ghp_…`/`github_pat_…`, `xox?-…`,
/// `AKIA…`, and the published formats of SendGrid, Shopify, DigitalOcean, PyPI, Postman,
/// Doppler, age, Linear, Grafana and Databricks keys), `Bearer` tokens, auth headers (`Authorization`, `x-api-key`,
/// `x-goog-api-key`), PEM private key blocks, secret URL query parameters (`key=`,
/// `api_key=`, `token=`, … — the rest of the URL is kept), URL passwords, and assignments
/// whose name looks secret (`OPENAI_API_KEY=…`, `"password": "…"`).
///
/// The set of known values is fixed at construction; nothing grows from input.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// One alternation of the escaped known values, longest first; `None` when there are none
    /// or the set is too large for one automaton (then `values` are replaced one by one).
    known: Option<Regex>,
    /// The known values, longest first.
    values: Vec<String>,
}

impl Redactor {
    /// A redactor for these exact secret values plus the pattern rules. Values shorter than 8
    /// bytes (after trimming) are ignored.
    pub fn new(known_secret_values: impl IntoIterator<Item = String>) -> Redactor {
        let mut values: Vec<String> = known_secret_values
            .into_iter()
            .map(|v| v.trim().to_string())
            .filter(|v| v.len() >= MIN_KNOWN_LEN)
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        let known = if values.is_empty() {
            None
        } else {
            let pattern = values.iter().map(|v| regex::escape(v)).collect::<Vec<_>>().join("|");
            Regex::new(&pattern).ok()
        };
        Redactor { known, values }
    }

    /// A redactor for the values of the variables whose names look secret (`*_KEY`,
    /// `*_TOKEN`, `*SECRET*`, `*PASSWORD*`, `*_PAT`, see [`name_looks_secret`]) or are
    /// well-known provider key variables.
    pub fn from_env_vars(vars: impl IntoIterator<Item = (String, String)>) -> Redactor {
        Redactor::new(vars.into_iter().filter_map(|(name, value)| {
            let secret = name_looks_secret(&name) || PROVIDER_KEY_VARS.contains(&name.to_ascii_uppercase().as_str());
            secret.then_some(value)
        }))
    }

    /// This redactor with `more` known values added (same rules as [`Redactor::new`]).
    pub fn with_values(self, more: impl IntoIterator<Item = String>) -> Redactor {
        Redactor::new(self.values.into_iter().chain(more))
    }

    /// `text` with every known value and every pattern match replaced by `[REDACTED]`.
    pub fn redact(&self, text: &str) -> String {
        let mut out: Cow<'_, str> = match &self.known {
            Some(re) => re.replace_all(text, REDACTED),
            None => {
                let mut out = Cow::Borrowed(text);
                for v in &self.values {
                    if out.contains(v.as_str()) {
                        out = Cow::Owned(out.replace(v.as_str(), REDACTED));
                    }
                }
                out
            }
        };
        // The rules run one after the other, each on the text the ones before it left; where
        // each has to look is found again only after one changed the text.
        let mut candidates = Candidates::of(&out);
        for index in 0..RULES.len() {
            let ranges = candidates.secret_ranges(index, &out);
            if ranges.is_empty() {
                continue;
            }
            let mut next = String::with_capacity(out.len());
            let mut last = 0;
            for range in ranges {
                next.push_str(&out[last..range.start]);
                next.push_str(REDACTED);
                last = range.end;
            }
            next.push_str(&out[last..]);
            out = Cow::Owned(next);
            candidates = Candidates::of(&out);
        }
        out.into_owned()
    }

    /// A copy of `value` with keys and string values redacted, at any depth. A string or
    /// number under a key whose name looks secret (`api_key`, `password`, `Authorization`)
    /// is replaced whole.
    pub fn redact_value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.redact(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.redact_value(v)).collect()),
            Value::Object(map) => {
                let mut out = Map::with_capacity(map.len());
                for (key, v) in map {
                    let redacted = match v {
                        Value::String(s) if name_looks_secret(key) && !s.is_empty() => Value::String(REDACTED.into()),
                        Value::Number(_) if name_looks_secret(key) => Value::String(REDACTED.into()),
                        other => self.redact_value(other),
                    };
                    out.insert(self.redact(key), redacted);
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    /// True when [`Redactor::redact`] would change `text`.
    pub fn contains_secret(&self, text: &str) -> bool {
        let known = match &self.known {
            Some(re) => re.is_match(text),
            None => self.values.iter().any(|v| text.contains(v.as_str())),
        };
        if known {
            return true;
        }
        let candidates = Candidates::of(text);
        (0..RULES.len()).any(|index| candidates.has_secret(index, text))
    }
}
