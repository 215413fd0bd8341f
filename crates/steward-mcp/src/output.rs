//! Turning a `tools/call` result into text for a tool result (case B23), capped in bytes
//! (case B25).
//!
//! Content blocks follow the MCP `ContentBlock` union (spec 2025-06-18 and later: text, image,
//! audio, resource_link, resource). Text parts are kept in order, joined by a newline; binary
//! parts become a one-line note; an empty result becomes [`NO_OUTPUT`].

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The text of a result with no content at all (never an empty tool result: B23 d).
pub const NO_OUTPUT: &str = "(no output)";

/// What a call produced, ready to become a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCallOutput {
    /// The result text, at most the server's `max_output_bytes` bytes, never empty.
    pub text: String,
    /// True when the server flagged the result as an error (`isError: true`); the caller
    /// records it as a failed tool call with this text.
    pub is_error: bool,
    /// Bytes cut from the middle by the cap; 0 when the text is complete.
    pub omitted_bytes: usize,
    /// The complete text when it was cut, so the caller can save it as an artifact.
    pub full_text: Option<String>,
}

impl McpCallOutput {
    /// Maps a result: text parts in order, notes for binary parts, structured content when
    /// there is nothing else, [`NO_OUTPUT`] when empty; then caps it to `max_bytes`.
    pub fn from_result(result: &CallToolResult, max_bytes: usize) -> Self {
        let full = result_text(result);
        let (text, omitted_bytes) = head_tail_bytes(&full, max_bytes);
        let full_text = (omitted_bytes > 0).then_some(full);
        McpCallOutput { text, is_error: result.is_error.unwrap_or(false), omitted_bytes, full_text }
    }
}

/// All content of a result as text.
fn result_text(result: &CallToolResult) -> String {
    let parts: Vec<String> = result.content.iter().map(block_text).collect();
    let mut text = parts.join("\n");
    if text.is_empty()
        && let Some(structured) = &result.structured_content
        && !structured.is_null()
    {
        text = structured.to_string();
    }
    if text.is_empty() { NO_OUTPUT.to_string() } else { text }
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("[image: {}, {} bytes]", image.mime_type, base64_len(&image.data)),
        ContentBlock::Audio(audio) => format!("[audio: {}, {} bytes]", audio.mime_type, base64_len(&audio.data)),
        ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => format!("[resource: {uri}]\n{text}"),
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => format!(
                "[resource: {uri}, {}, {} bytes]",
                mime_type.as_deref().unwrap_or("application/octet-stream"),
                base64_len(blob)
            ),
            // The union is non-exhaustive: name what was skipped rather than drop it silently.
            #[allow(unreachable_patterns)]
            _ => "[resource]".to_string(),
        },
        #[allow(unreachable_patterns)]
        _ => "[unsupported content]".to_string(),
    }
}

/// Decoded size of standard base64 text (RFC 4648 §4), without decoding it.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count().min(2);
    let symbols = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    (symbols * 3 / 4).saturating_sub(padding)
}

/// Keeps the head (about two thirds) and the tail of `text` within `max_bytes` bytes, with a
/// marker between them saying how many bytes and lines were omitted. Never splits a UTF-8
/// character: the head ends and the tail starts on character boundaries.
///
/// Returns `(shown_text, omitted_bytes)`; the text is unchanged and `omitted_bytes` is 0 when
/// it fits. `shown_text.len() <= max_bytes` whenever `max_bytes` ≥ 128.
pub fn head_tail_bytes(text: &str, max_bytes: usize) -> (String, usize) {
    if text.len() <= max_bytes {
        return (text.to_string(), 0);
    }
    // The marker's size depends on the counts; reserve room for the longest one.
    let budget = max_bytes.saturating_sub(marker(usize::MAX, usize::MAX).len());
    let head_end = floor_char_boundary(text, budget * 2 / 3);
    let tail_start = ceil_char_boundary(text, text.len() - (budget - budget * 2 / 3));
    let omitted = &text[head_end..tail_start];
    let shown =
        format!("{}{}{}", &text[..head_end], marker(omitted.len(), omitted.matches('\n').count()), &text[tail_start..]);
    (shown, omitted.len())
}

fn marker(bytes: usize, lines: usize) -> String {
    format!("\n[… {bytes} bytes ({lines} lines) omitted from the middle of the MCP result …]\n")
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock, ResourceContents};

    fn result(content: Vec<ContentBlock>, is_error: Option<bool>) -> CallToolResult {
        let mut r = CallToolResult::success(content);
        r.is_error = is_error;
        r
    }

    #[test]
    fn b23_parts_in_order_empty_and_image() {
        let two = McpCallOutput::from_result(
            &result(vec![ContentBlock::text("part 1"), ContentBlock::text("part 2")], Some(false)),
            32768,
        );
        assert_eq!(two.text, "part 1\npart 2");
        assert!(!two.is_error);
        let empty = McpCallOutput::from_result(&result(vec![], Some(false)), 32768);
        assert_eq!(empty.text, NO_OUTPUT);
        let image = McpCallOutput::from_result(
            &result(vec![ContentBlock::text("see image"), ContentBlock::image("iVBORw0KGgo=", "image/png")], None),
            32768,
        );
        assert_eq!(image.text, "see image\n[image: image/png, 8 bytes]");
        let denied =
            McpCallOutput::from_result(&result(vec![ContentBlock::text("denied by server")], Some(true)), 32768);
        assert!(denied.is_error);
        assert_eq!(denied.text, "denied by server");
    }

    #[test]
    fn resources_and_structured_content() {
        let text = ContentBlock::resource(ResourceContents::TextResourceContents {
            uri: "file:///a".into(),
            mime_type: None,
            text: "hello".into(),
            meta: None,
        });
        let out = McpCallOutput::from_result(&result(vec![text], None), 32768);
        assert_eq!(out.text, "[resource: file:///a]\nhello");
        let mut structured = result(vec![], None);
        structured.structured_content = Some(serde_json::json!({"n": 1}));
        assert_eq!(McpCallOutput::from_result(&structured, 32768).text, "{\"n\":1}");
    }

    #[test]
    fn base64_sizes() {
        assert_eq!(base64_len("iVBORw0KGgo="), 8);
        assert_eq!(base64_len("QUJD"), 3);
        assert_eq!(base64_len("QUI="), 2);
        assert_eq!(base64_len("QQ=="), 1);
        assert_eq!(base64_len(""), 0);
    }

    #[test]
    fn b25_byte_cap_never_splits_utf8() {
        for ending in ["", "é漢"] {
            let text: String = (0..40000).map(|i| format!("LINE {i:07} {}{ending}\n", "x".repeat(40))).collect();
            for cap in [1024usize, 32768, 32769, 32770, 32771] {
                let (shown, omitted) = head_tail_bytes(&text, cap);
                assert!(shown.len() <= cap, "{} > {cap}", shown.len());
                assert!(shown.starts_with("LINE 0000000 "));
                assert!(shown.ends_with(&format!("LINE 0039999 {}{ending}\n", "x".repeat(40))));
                assert!(shown.contains(&format!("{omitted} bytes (")));
                assert!(omitted > 0);
            }
        }
        assert_eq!(head_tail_bytes("short", 1024), ("short".to_string(), 0));
    }
}
