//! Replies that repeat themselves: a small model sometimes writes the same call line, or the
//! same lines of a patch, over and over until the output limit stops it. A reply whose text
//! ends with the same piece repeated is stopped there ([`repeated_tail`]) and keeps only the
//! first copy of the piece; its finish reason is [`REPETITION`].

/// The finish reason of a reply stopped because it repeated itself.
pub const REPETITION: &str = "repetition";

/// Shortest repeated piece looked for, in bytes (shorter periods are found through their
/// multiples).
const MIN_PERIOD: usize = 8;
/// Longest repeated piece looked for, in bytes.
const MAX_PERIOD: usize = 512;
/// Copies of the piece, one after the other, that make a repetition.
const MIN_COPIES: usize = 4;
/// Different characters the repeated piece must hold (so a long rule line is not a repetition).
const MIN_DISTINCT_CHARS: usize = 3;
/// Bytes the repeated copies must span at least, so short legitimate repeats (a few identical
/// short lines of code) are not taken for a runaway reply.
const MIN_SPAN: usize = 160;

/// When `text` ends with one piece of `MIN_PERIOD`–`MAX_PERIOD` bytes holding something
/// other than white space and at least three different characters, repeated at least `MIN_COPIES` times over at least `MIN_SPAN`
/// bytes, the byte offset to cut `text` at so that it keeps everything before the repetition
/// and one copy of the piece (ending at a line break when the piece holds one). `None`
/// otherwise.
pub fn repeated_tail(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let longest = MAX_PERIOD.min(n / MIN_COPIES);
    (MIN_PERIOD..=longest).find_map(|period| {
        let span = (period * MIN_COPIES).max(MIN_SPAN.div_ceil(period) * period);
        if span > n || !(n - span + period..n).all(|i| bytes[i] == bytes[i - period]) {
            return None;
        }
        if bytes[n - period..].iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        // A rule or a bar (`=====`, `────`) is drawn with one or two characters: that is layout,
        // not a model saying the same thing again.
        let mut kinds: Vec<char> = String::from_utf8_lossy(&bytes[n - period..]).chars().collect();
        kinds.sort_unstable();
        kinds.dedup();
        if kinds.len() < MIN_DISTINCT_CHARS {
            return None;
        }
        // Where the repetition starts: the earliest offset from which the text repeats.
        let mut start = n - span;
        while start > 0 && bytes[start - 1] == bytes[start - 1 + period] {
            start -= 1;
        }
        // One copy kept, ending at a line break when the piece holds one.
        let first = start + period;
        let cut = (first..first + period).find(|&i| i > 0 && bytes[i - 1] == b'\n').unwrap_or(first);
        // A cut inside a character moves to the end of that character.
        let cut = (cut..=n).find(|&i| text.is_char_boundary(i)).unwrap_or(n);
        Some(cut)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_lines_are_layout_not_repetition() {
        for line in ["=".repeat(300), "─".repeat(120), "-+".repeat(150), format!("{}\n", "#".repeat(200))] {
            let text = format!("Results:\n{line}");
            assert_eq!(repeated_tail(&text), None, "{line:.20}…");
        }
    }

    const CALL: &str = r#"{"name": "read", "arguments": {"path": "notes.txt"}}"#;

    #[test]
    fn the_same_call_line_over_and_over_keeps_one_copy() {
        let text = format!("{CALL}\n").repeat(12) + "{\"name\": \"re";
        let cut = repeated_tail(&text).expect("a repetition");
        assert_eq!(&text[..cut], format!("{CALL}\n"));
    }

    #[test]
    fn what_comes_before_the_repetition_is_kept() {
        let text = format!("I will read it.\n{}", format!("{CALL}\n").repeat(6));
        let cut = repeated_tail(&text).expect("a repetition");
        assert_eq!(&text[..cut], format!("I will read it.\n{CALL}\n"));
    }

    #[test]
    fn a_patch_repeating_its_lines_inside_a_json_string_is_found() {
        let text = format!(
            "{{\"name\": \"apply_patch\", \"arguments\": {{\"patch\": \"--- a/x.py\\n+++ b/x.py\\n@@ -1 +1,9 @@\\n{}",
            "+print('hello world')\\n".repeat(20)
        );
        let cut = repeated_tail(&text).expect("a repetition");
        assert!(cut < text.len() / 2, "{cut} of {}", text.len());
        assert_eq!(text[..cut].matches("+print('hello world')").count(), 1, "{}", &text[..cut]);
    }

    #[test]
    fn ordinary_answers_and_short_repeats_are_not_repetition() {
        for text in [
            "The file holds the code word BLUEBIRD.",
            "fn a() {}\nfn b() {}\n    }\n    }\n    }\n    }\n",
            "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n",
            "x = 1\nx = 1\nx = 1\nx = 1\n",
            &" ".repeat(400),
            &format!("{CALL}\n{CALL}\n"),
        ] {
            assert_eq!(repeated_tail(text), None, "{text:?}");
        }
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let text = "é, ".repeat(100);
        let cut = repeated_tail(&text).expect("a repetition");
        assert!(text.is_char_boundary(cut));
    }
}
