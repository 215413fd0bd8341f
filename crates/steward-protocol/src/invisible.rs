//! Characters that change how text looks without being seen: the bidirectional controls
//! behind "Trojan Source" (CVE-2021-42574: `echo hi \u{202E}; rm -rf ~ #` displays as a
//! harmless echo) and the zero-width characters that make two different paths look alike.
//! Every front end shows them as visible markers wherever a person judges text from a model,
//! a tool or a file.

use std::borrow::Cow;

/// True for a bidirectional control (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069)
/// or an invisible, zero-width character (U+200B–U+200D, U+2060–U+2064, U+FEFF, U+180E,
/// U+00AD).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{180E}'
            | '\u{00AD}'
    )
}

/// `text` with each [`is_invisible`] character replaced by a visible marker such as
/// `⟨U+202E⟩`; borrowed when there is none.
pub fn reveal_invisible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_invisible) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_invisible(c) {
            out.push_str(&format!("⟨U+{:04X}⟩", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_controls_and_zero_width_characters_are_shown() {
        assert_eq!(
            reveal_invisible("echo hello \u{202E}; rm -rf ~ #\u{202C}"),
            "echo hello ⟨U+202E⟩; rm -rf ~ #⟨U+202C⟩"
        );
        assert_eq!(reveal_invisible("notes/a\u{200B}b.txt"), "notes/a⟨U+200B⟩b.txt");
        assert_eq!(reveal_invisible("\u{2067}x\u{2069}\u{FEFF}"), "⟨U+2067⟩x⟨U+2069⟩⟨U+FEFF⟩");
        assert!(matches!(reveal_invisible("plain — text ✓ é"), Cow::Borrowed(_)));
    }
}
