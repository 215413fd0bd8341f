//! Text embeddings from a provider's OpenAI-compatible `POST {base_url}/embeddings`: the
//! request is `{"model": …, "input": [text, …]}`, the reply's `data[i].embedding` is the vector
//! of `input[i]` (matched by each entry's `index` when the server gives one). The provider's
//! `base_url`, key and timeout are those of its `[providers.NAME]` entry (or preset).

use std::time::Duration;

use serde_json::{Value, json};

use crate::ProviderError;
use crate::config::{ProviderConfig, ProviderKind, resolve_base_url, resolve_key};
use crate::http::{HttpCore, build_client};
use crate::retry::RetryPolicy;

/// Why texts could not be embedded.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddingError {
    /// The provider cannot serve embeddings: an Anthropic or fake provider, no model named.
    #[error("embeddings from provider '{provider}': {why}")]
    Config {
        /// The provider's name.
        provider: String,
        /// What is wrong.
        why: String,
    },
    /// The request failed: unreachable, an HTTP error status, a missing key (classified as
    /// for model calls; the message never holds the key).
    #[error("embeddings: {0}")]
    Provider(#[from] ProviderError),
    /// The server answered something other than one vector of one length per input.
    #[error("embeddings from provider '{provider}': {why}")]
    Reply {
        /// The provider's name.
        provider: String,
        /// What was wrong with the reply.
        why: String,
    },
}

/// A client of one provider's `/embeddings` for one model.
#[derive(Debug, Clone)]
pub struct EmbeddingClient {
    core: HttpCore,
    model: String,
}

impl EmbeddingClient {
    /// The client of provider `name` (configured as `cfg`) for `model` (the provider's
    /// `default_model` when `None`). `env` looks up environment variables (the key and a
    /// `base_url_env`).
    ///
    /// Errors: [`EmbeddingError::Config`] for a provider kind without an OpenAI-compatible
    /// `/embeddings` (Anthropic, fake) or no model; [`EmbeddingError::Provider`] for a missing
    /// key or a base URL that is not `http(s)`.
    pub fn new(
        name: &str,
        cfg: &ProviderConfig,
        model: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<EmbeddingClient, EmbeddingError> {
        let config = |why: &str| EmbeddingError::Config { provider: name.to_string(), why: why.to_string() };
        if matches!(cfg.kind, ProviderKind::Anthropic | ProviderKind::Fake) {
            return Err(config("only OpenAI-compatible providers serve /embeddings"));
        }
        let model = model
            .or(cfg.default_model.as_deref())
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| config("no embedding model is named"))?
            .to_string();
        let (key, key_env) = resolve_key(name, cfg, env)?;
        let base_url = resolve_base_url(name, cfg, env)?;
        let core = HttpCore {
            name: name.to_string(),
            base_url,
            key,
            key_env,
            default_model: model.clone(),
            retry: RetryPolicy::default(),
            client: build_client(cfg.timeout_ms.map(Duration::from_millis))?,
        };
        Ok(EmbeddingClient { core, model })
    }

    /// The model asked for.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The provider's name.
    pub fn provider(&self) -> &str {
        &self.core.name
    }

    /// One vector per text of `inputs`, in order, from one request (not retried: a caller
    /// that can do without embeddings goes on without them). No request for no input.
    ///
    /// Errors: [`EmbeddingError::Provider`] when the server cannot be reached or answers an
    /// error status; [`EmbeddingError::Reply`] when the reply is not one vector of one length
    /// per input.
    pub async fn embed(&self, inputs: &[String]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let mut request = self.core.client.post(self.core.url("/embeddings"));
        if let Some(key) = &self.core.key {
            request = request.bearer_auth(key.expose());
        }
        let request = request.json(&json!({"model": self.model, "input": inputs}));
        let response = self.core.send(request).await.map_err(|f| f.error)?;
        let body: Value =
            response.json().await.map_err(|e| self.reply(&format!("unreadable reply: {}", e.without_url())))?;
        vectors(&body, inputs.len()).map_err(|why| self.reply(&why))
    }

    fn reply(&self, why: &str) -> EmbeddingError {
        EmbeddingError::Reply { provider: self.core.name.clone(), why: self.core.redact(why) }
    }
}

/// The `n` vectors of an OpenAI-compatible embeddings reply, ordered by their `index` (or by
/// position when entries carry none); every vector of the same, non-zero length.
fn vectors(body: &Value, n: usize) -> Result<Vec<Vec<f32>>, String> {
    let data = body.get("data").and_then(Value::as_array).ok_or("the reply has no `data` list")?;
    if data.len() != n {
        return Err(format!("{} vectors for {n} inputs", data.len()));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
    for (position, entry) in data.iter().enumerate() {
        let at = match entry.get("index") {
            Some(i) => i.as_u64().and_then(|i| usize::try_from(i).ok()).ok_or("an entry's `index` is not a number")?,
            None => position,
        };
        let numbers = entry.get("embedding").and_then(Value::as_array).ok_or("an entry has no `embedding` list")?;
        let vector: Vec<f32> = numbers
            .iter()
            .map(|v| v.as_f64().map(|f| f as f32).ok_or("an embedding holds something other than numbers"))
            .collect::<Result<_, _>>()?;
        let slot = out.get_mut(at).ok_or_else(|| format!("index {at} is out of range for {n} inputs"))?;
        if slot.replace(vector).is_some() {
            return Err(format!("index {at} is given twice"));
        }
    }
    let out: Vec<Vec<f32>> = out.into_iter().map(|v| v.unwrap_or_default()).collect();
    let dims = out.first().map_or(0, Vec::len);
    if dims == 0 || out.iter().any(|v| v.len() != dims) {
        return Err("the vectors are empty or of different lengths".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_ordered_by_index_and_checked() {
        let body = json!({"data": [
            {"index": 1, "embedding": [0.5, 0.25]},
            {"index": 0, "embedding": [1.0, 2.0]}
        ]});
        assert_eq!(vectors(&body, 2).unwrap(), vec![vec![1.0, 2.0], vec![0.5, 0.25]]);
        assert!(vectors(&body, 3).unwrap_err().contains("2 vectors for 3 inputs"));
        let uneven = json!({"data": [{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}]});
        assert!(vectors(&uneven, 2).unwrap_err().contains("different lengths"));
        let twice = json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]});
        assert!(vectors(&twice, 2).unwrap_err().contains("twice"));
        assert!(vectors(&json!({"error": "x"}), 1).is_err());
    }

    #[test]
    fn anthropic_and_modelless_providers_are_refused() {
        let env = |_: &str| None;
        let anthropic = ProviderConfig::new(ProviderKind::Anthropic);
        assert!(matches!(EmbeddingClient::new("a", &anthropic, Some("m"), &env), Err(EmbeddingError::Config { .. })));
        let mut openai = ProviderConfig::new(ProviderKind::Openai);
        openai.base_url = Some("http://127.0.0.1:9/v1".into());
        assert!(matches!(EmbeddingClient::new("o", &openai, None, &env), Err(EmbeddingError::Config { .. })));
        let client = EmbeddingClient::new("o", &openai, Some("minilm"), &env).unwrap();
        assert_eq!((client.provider(), client.model()), ("o", "minilm"));
    }
}
