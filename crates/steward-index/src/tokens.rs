//! Terms of a text for keyword ranking: words (letters, digits, `_`) lowercased, plus the
//! parts of identifiers (`parse_config` and `parseConfig` also give `parse` and `config`),
//! without a short list of English stop words, a trailing plural `s` taken off.

/// Words too common in questions and prose to rank anything.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "if", "in", "into",
    "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "what", "when", "where", "which", "who", "why",
    "with", "we", "you", "use", "used", "using",
];

/// Longest term kept, in characters (longer runs are data, not words).
const MAX_TERM_CHARS: usize = 64;

/// Calls `emit` with every term of `text`, in order (a term may repeat).
pub fn terms(text: &str, mut emit: impl FnMut(String)) {
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if word.is_empty() || word.chars().count() > MAX_TERM_CHARS {
            continue;
        }
        let whole = normalise(word);
        let parts = parts(word);
        let split = parts.len() > 1;
        if let Some(whole) = whole {
            emit(whole);
        }
        if split {
            for part in parts {
                if let Some(part) = normalise(part) {
                    emit(part);
                }
            }
        }
    }
}

/// All terms of `text`, in order.
pub fn term_list(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    terms(text, |t| out.push(t));
    out
}

/// True for the words left out of queries and texts (`the`, `how`, `is` …), given lowercased.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// Lowercased, a plural `s` taken off; `None` for a stop word or a one-character term.
fn normalise(word: &str) -> Option<String> {
    let mut lower = word.trim_matches('_').to_lowercase();
    if lower.chars().count() < 2 || STOP_WORDS.contains(&lower.as_str()) {
        return None;
    }
    if lower.len() > 3 && lower.ends_with('s') && !lower.ends_with("ss") && !lower.ends_with("us") {
        lower.pop();
    }
    Some(lower)
}

/// The parts of an identifier: split at `_`, at a lower-to-upper change (`parseConfig`), at the
/// end of an upper-case run before a word (`HTTPServer` → `HTTP`, `Server`) and between
/// letters and digits.
fn parts(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for piece in word.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<(usize, char)> = piece.char_indices().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (at, c) = chars[i];
            let prev = chars[i - 1].1;
            let next = chars.get(i + 1).map(|(_, c)| *c);
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase))
                || (prev.is_alphabetic() != c.is_alphabetic() && (prev.is_numeric() || c.is_numeric()));
            if boundary {
                out.push(&piece[start..at]);
                start = at;
            }
        }
        out.push(&piece[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_give_their_parts_and_stop_words_go() {
        assert_eq!(term_list("the parse_config"), ["parse_config", "parse", "config"]);
        assert_eq!(term_list("HTTPServer"), ["httpserver", "http", "server"]);
        assert_eq!(term_list("readFiles utf8"), ["readfile", "read", "file", "utf8", "utf"]);
        assert_eq!(term_list("Where is a class? x"), ["class"]);
        assert_eq!(term_list("Überprüfung"), ["überprüfung"]);
    }
}
