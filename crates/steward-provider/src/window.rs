//! The model's context window, in tokens: from the provider's configuration
//! (`context_window = N`) or asked of the server once per model and remembered.
//!
//! The servers are asked in this order, the first answer winning (each with a 5 s limit; a
//! server that answers none of them leaves the window unknown, and the prompt is then sent
//! unfitted):
//! 1. llama.cpp's `llama-server`: `GET {root}/props` → `default_generation_settings.n_ctx`
//!    (the context it was started with, `-c`);
//! 2. Ollama: `POST {root}/api/show {"model": …}` → `num_ctx` among its `parameters` when the
//!    model file sets one, else `model_info.<architecture>.context_length`;
//! 3. the OpenAI-compatible model list `GET {base_url}/models`: the entry of the model (or the
//!    only entry) → `context_length`, `max_context_length`, `context_window`, `max_model_len`
//!    or `meta.n_ctx`.
//!
//! `{root}` is the base URL without a trailing `/v1`. Which of them answered also tells what
//! kind of server it is ([`ServerKind`]), which decides whether replies are constrained
//! ([`crate::constrained`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::OnceCell;

use crate::constrained::ServerKind;
use crate::http::HttpCore;

/// How long one question to the server may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The most tokens kept for a reply when nothing sets an output limit.
pub const DEFAULT_REPLY_SHARE: u32 = 1_024;

/// Tokens kept for the reply in a context window of `window` tokens when nothing sets an
/// output limit: a quarter of the window, at most [`DEFAULT_REPLY_SHARE`];
/// [`DEFAULT_REPLY_SHARE`] when the window is unknown. The prompt is fitted to the rest, and a
/// local server is sent it as `max_tokens`.
pub fn reply_share(window: Option<u32>) -> u32 {
    window.map_or(DEFAULT_REPLY_SHARE, |w| (w / 4).min(DEFAULT_REPLY_SHARE))
}

/// Where a provider's context window comes from.
#[derive(Debug, Default)]
pub(crate) struct WindowSource {
    /// `context_window` from the configuration: wins over the server.
    pub configured: Option<u32>,
    /// Whether the server is asked (for its window when nothing is configured, and what kind
    /// of server it is).
    pub probe: bool,
    /// The server's answer per model, once asked: a question in flight is shared, so callers
    /// asking at once (a run started early, then the run itself) wait for one answer.
    pub asked: Mutex<HashMap<String, Arc<OnceCell<Probed>>>>,
}

/// What the probe learnt of the server for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Probed {
    /// The window, when reported.
    pub window: Option<u32>,
    /// Which question the server answered.
    pub kind: ServerKind,
}

/// A context window and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextWindow {
    /// Its size, in tokens.
    pub tokens: u32,
    /// True when the configuration set it, false when the server reported it.
    pub configured: bool,
}

impl WindowSource {
    /// The window of `model`: the configured one, else the server's answer (asked once per
    /// model; failures are remembered as unknown too).
    pub async fn window(&self, core: &HttpCore, model: &str) -> Option<ContextWindow> {
        if let Some(tokens) = self.configured {
            return Some(ContextWindow { tokens, configured: true });
        }
        let found = self.probed(core, model).await?.window;
        found.map(|tokens| ContextWindow { tokens, configured: false })
    }

    /// The kind of server, as the probe found it; `None` when the server is not asked.
    pub async fn kind(&self, core: &HttpCore, model: &str) -> Option<ServerKind> {
        Some(self.probed(core, model).await?.kind)
    }

    /// The probe's answer for `model` (asked once), or `None` when the server is not asked.
    async fn probed(&self, core: &HttpCore, model: &str) -> Option<Probed> {
        if !self.probe {
            return None;
        }
        let answer = match self.asked.lock() {
            Ok(mut asked) => asked.entry(model.to_string()).or_default().clone(),
            Err(_) => Arc::new(OnceCell::new()),
        };
        Some(*answer.get_or_init(|| probe(core, model)).await)
    }
}

/// Asks the server (see the module's documentation).
async fn probe(core: &HttpCore, model: &str) -> Probed {
    let (base, root) = (core.base_without_query(), core.server_root());
    let get_json = |request: reqwest::RequestBuilder| core.ask_json(request, PROBE_TIMEOUT);
    let mut kind = ServerKind::Other;
    if let Some(props) = get_json(core.client.get(format!("{root}/props"))).await {
        if props.get("default_generation_settings").is_some() {
            kind = ServerKind::LlamaCpp;
        }
        if let Some(n) = llama_cpp_props(&props) {
            return Probed { window: Some(n), kind };
        }
    }
    let show = core.client.post(format!("{root}/api/show")).json(&serde_json::json!({ "model": model }));
    if let Some(shown) = get_json(show).await {
        if shown.get("model_info").is_some() || shown.get("parameters").is_some() {
            kind = ServerKind::Ollama;
        }
        if let Some(n) = ollama_show(&shown) {
            return Probed { window: Some(n), kind };
        }
    }
    let Some(models) = get_json(core.client.get(format!("{base}/models"))).await else {
        return Probed { window: None, kind };
    };
    if kind == ServerKind::Other && served_by_vllm(&models) {
        kind = ServerKind::Vllm;
    }
    Probed { window: model_list(&models, model), kind }
}

/// True when an OpenAI-compatible model list comes from vLLM (`owned_by: "vllm"`).
pub(crate) fn served_by_vllm(list: &Value) -> bool {
    list.get("data")
        .and_then(Value::as_array)
        .is_some_and(|entries| entries.iter().any(|e| e.get("owned_by").and_then(Value::as_str) == Some("vllm")))
}

fn positive(value: Option<&Value>) -> Option<u32> {
    value.and_then(Value::as_u64).filter(|n| *n > 0).map(|n| n.min(u64::from(u32::MAX)) as u32)
}

/// `default_generation_settings.n_ctx` of llama.cpp's `/props`.
pub(crate) fn llama_cpp_props(props: &Value) -> Option<u32> {
    positive(props.pointer("/default_generation_settings/n_ctx"))
}

/// Ollama's `/api/show`: `num_ctx` in `parameters` (one `name value` pair a line), else the
/// first `model_info` key ending in `.context_length`.
pub(crate) fn ollama_show(shown: &Value) -> Option<u32> {
    let from_parameters = shown.get("parameters").and_then(Value::as_str).and_then(|text| {
        text.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx")).then(|| words.next()?.parse::<u32>().ok()).flatten()
        })
    });
    from_parameters.filter(|n| *n > 0).or_else(|| {
        let info = shown.get("model_info")?.as_object()?;
        info.iter().find(|(key, _)| key.ends_with(".context_length")).and_then(|(_, v)| positive(Some(v)))
    })
}

/// The entry of `model` in an OpenAI-compatible model list (or its only entry): its
/// `context_length`, `max_context_length`, `context_window`, `max_model_len` (vLLM) or
/// `meta.n_ctx`.
pub(crate) fn model_list(list: &Value, model: &str) -> Option<u32> {
    let entries = list.get("data")?.as_array()?;
    let entry = entries
        .iter()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (entries.len() == 1).then(|| &entries[0]))?;
    ["/context_length", "/max_context_length", "/context_window", "/max_model_len", "/meta/n_ctx"]
        .iter()
        .find_map(|pointer| positive(entry.pointer(pointer)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_server_shape_gives_its_window() {
        assert_eq!(llama_cpp_props(&json!({"default_generation_settings": {"n_ctx": 2048}})), Some(2048));
        assert_eq!(llama_cpp_props(&json!({"n_ctx": 2048})), None);
        let shown = json!({
            "parameters": "stop \"<|im_end|>\"\nnum_ctx 8192",
            "model_info": {"qwen2.context_length": 32768, "general.architecture": "qwen2"}
        });
        assert_eq!(ollama_show(&shown), Some(8192), "num_ctx the model file sets wins");
        let shown = json!({"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}});
        assert_eq!(ollama_show(&shown), Some(32768));
        assert_eq!(ollama_show(&json!({"error": "model not found"})), None);
        let list = json!({"data": [{"id": "a", "context_length": 4096}, {"id": "b", "meta": {"n_ctx": 1024}}]});
        assert_eq!(model_list(&list, "b"), Some(1024));
        assert_eq!(model_list(&list, "a"), Some(4096));
        assert_eq!(model_list(&list, "c"), None, "two entries and none is the model: unknown");
        let one = json!({"data": [{"id": "only", "max_context_length": 3000}]});
        assert_eq!(model_list(&one, "other-name"), Some(3000));
        assert_eq!(model_list(&json!({"data": [{"id": "x", "context_length": 0}]}), "x"), None);
        assert!(served_by_vllm(&json!({"data": [{"id": "q", "owned_by": "vllm", "max_model_len": 4096}]})));
        assert!(!served_by_vllm(&json!({"data": [{"id": "q", "owned_by": "organization_owner"}]})));
    }
}
