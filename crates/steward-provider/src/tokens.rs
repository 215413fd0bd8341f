//! The server's own count of a prompt's tokens, where a server can give it before the request
//! is sent: llama.cpp's `llama-server` renders the request with the model's chat template
//! (`POST /apply-template`, the same body as `/v1/chat/completions`, answering
//! `{"prompt": "…"}`) and tokenizes the result (`POST /tokenize {"content": …}`, answering
//! `{"tokens": […]}`). Both are asked with a 5 s limit; any failure is "no count", and the
//! prompt is then fitted by the estimate alone.

use std::time::Duration;

use crate::http::HttpCore;

/// How long each of the two questions may take.
const COUNT_TIMEOUT: Duration = Duration::from_secs(5);

/// The number of tokens llama.cpp counts for the chat request `body` (JSON text), chat
/// template included; `None` when the server does not say.
pub(crate) async fn llama_cpp_count(core: &HttpCore, body: String) -> Option<u32> {
    let root = core.server_root();
    let post = |path: &str, body: String| {
        let request =
            core.client.post(format!("{root}{path}")).header(reqwest::header::CONTENT_TYPE, "application/json");
        core.ask_json(request.body(body), COUNT_TIMEOUT)
    };
    let rendered = post("/apply-template", body).await?;
    let prompt = rendered.get("prompt")?.as_str()?;
    let tokens = post("/tokenize", serde_json::json!({ "content": prompt }).to_string()).await?;
    let count = tokens.get("tokens")?.as_array()?.len();
    u32::try_from(count).ok().filter(|n| *n > 0)
}
