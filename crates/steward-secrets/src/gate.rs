//! Where each pattern rule needs to look: the lines holding one of its keywords.
//!
//! Every tool output passes the redactor, so most text it sees holds no secret, and most lines
//! of the text that does hold none either. One pass of one Aho-Corasick automaton over the
//! text finds the keywords of every rule ([`crate::patterns::Rule::keywords`]); a rule with
//! keywords then runs its regex only on the lines that hold one of them.
//!
//! This gives the same result as running the rule on the whole text: none of these rules
//! matches across a line break (`secret_line` may start at the line break before its line, as
//! its `(?m)^` would match right after it), none looks at text around a match except `\b`,
//! `^` and `$`, which see the same thing at the start and end of a line as at the start and
//! end of the text, and a match that a rule refuses only moves the search forward within its
//! own line. So the matches a rule finds in a run of whole lines are the ones it finds there in
//! the whole text, and a line without any of the rule's keywords holds no match it accepts.

use std::ops::Range;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use crate::patterns::RULES;

/// The keyword automaton and, for each of its patterns, the rules that keyword is for.
struct Keywords {
    automaton: AhoCorasick,
    /// Bit `i` set: the keyword is one of rule `i`'s.
    rules: Vec<u64>,
}

static KEYWORDS: LazyLock<Keywords> = LazyLock::new(|| {
    let mut words: Vec<&'static str> = Vec::new();
    let mut rules: Vec<u64> = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        for &word in rule.keywords {
            match words.iter().position(|w| *w == word) {
                Some(at) => rules[at] |= 1 << i,
                None => {
                    words.push(word);
                    rules.push(1 << i);
                }
            }
        }
    }
    // The keywords are constants of patterns.rs; the unit tests build this automaton.
    #[allow(clippy::expect_used)]
    let automaton = AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .build(&words)
        .expect("the secret rules' keywords build an automaton");
    Keywords { automaton, rules }
});

/// Builds the secret rules' keyword automaton on the calling thread, unless a redaction has
/// built it already: the one-time part of a process's first redaction (about half a
/// millisecond). A caller with time to spare, such as a run waiting for its store to open,
/// calls it so that its first redaction afterwards does not wait for the build. Calling it
/// again does nothing.
pub fn warm_up() {
    LazyLock::force(&KEYWORDS);
}

/// Per rule, where in one text it has to run.
pub(crate) struct Candidates {
    /// Per rule (by index in [`RULES`]): the byte ranges of runs of whole lines holding one of
    /// its keywords, in order, not touching; unused for rules without keywords.
    regions: Vec<Vec<Range<usize>>>,
}

impl Candidates {
    /// Finds the keywords of every rule in `text`.
    pub(crate) fn of(text: &str) -> Candidates {
        assert!(RULES.len() <= 64, "one bit per rule");
        let keywords = &*KEYWORDS;
        let bytes = text.as_bytes();
        let mut regions: Vec<Vec<Range<usize>>> = RULES.iter().map(|_| Vec::new()).collect();
        // The line of the last keyword found (keywords hold no line break, and are found in
        // the order of their ends, so line by line), so that many keywords on one long line
        // (a minified bundle) cost one search for its ends.
        let mut line: Option<Range<usize>> = None;
        for found in keywords.automaton.find_overlapping_iter(text) {
            let (at, until) = (found.start(), found.end());
            let known = line.as_ref().is_some_and(|l| at >= l.start && until <= l.end);
            if !known {
                // Back to the previous line's break at most (or the start of the text).
                let from = line.as_ref().map_or(0, |l| l.end.min(at));
                let start = memchr::memrchr(b'\n', &bytes[from..at]).map_or(from, |i| from + i + 1);
                let end = memchr::memchr(b'\n', &bytes[until..]).map_or(bytes.len(), |i| until + i);
                line = Some(start..end);
            }
            let Some(current) = line.as_ref() else { continue };
            let mut mask = keywords.rules[found.pattern().as_usize()];
            while mask != 0 {
                let rule = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let list = &mut regions[rule];
                match list.last_mut() {
                    // The same line, or the line right after the last one: one run.
                    Some(last) if last.end >= current.start || last.end + 1 == current.start => {
                        last.end = last.end.max(current.end);
                    }
                    _ => list.push(current.clone()),
                }
            }
        }
        Candidates { regions }
    }

    /// The byte ranges of the secrets rule `index` finds in `text` (the text these candidates
    /// were found in), in order, not overlapping.
    pub(crate) fn secret_ranges(&self, index: usize, text: &str) -> Vec<Range<usize>> {
        let rule = &RULES[index];
        if rule.keywords.is_empty() {
            return rule.secret_ranges(text);
        }
        let mut ranges = Vec::new();
        for region in &self.regions[index] {
            let offset = region.start;
            ranges.extend(
                rule.secret_ranges(&text[region.clone()]).into_iter().map(|r| r.start + offset..r.end + offset),
            );
        }
        ranges
    }

    /// True when rule `index` finds a secret in `text`.
    pub(crate) fn has_secret(&self, index: usize, text: &str) -> bool {
        let rule = &RULES[index];
        if rule.keywords.is_empty() {
            return !rule.secret_ranges(text).is_empty();
        }
        self.regions[index].iter().any(|region| !rule.secret_ranges(&text[region.clone()]).is_empty())
    }
}

#[cfg(test)]
mod tests {
    use steward_fuzz::proptest::prelude::*;
    use steward_fuzz::proptest::test_runner::TestCaseError;

    use super::*;

    /// Pieces that make the rules match, refuse and nearly match: keywords in several cases,
    /// names that look secret and names that do not, separators, quotes, line breaks (also
    /// `\r\n` and U+2028), values, provider key prefixes and an earlier redaction.
    const PIECES: &[&str] = &[
        "api_key",
        "API-KEY",
        "x-api-key",
        "apikey",
        "primary_key",
        "monkey",
        "key",
        "KEY",
        "Token",
        "max_tokens",
        "access_token",
        "gh_pat",
        "my-pat",
        "path",
        "secret",
        "client_SECRET",
        "Password",
        "passwd",
        "credential",
        "Cookie",
        "Set-Cookie",
        "Authorization",
        "proxy-authorization",
        "x-auth-token",
        "name",
        "a",
        "_9",
        "9x",
        "db.password",
        "Bearer ",
        "bearer\t",
        "https://",
        "user:pw@",
        "?key=",
        "&token=",
        ";secret=",
        "=",
        ":",
        ": ",
        " = ",
        "\"",
        "'",
        " ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        "\u{2028}",
        ",",
        ";",
        "{",
        "}",
        "(",
        ")",
        "#",
        "-",
        "[",
        "`",
        "hunter2",
        "abc123def456",
        "Pr0duction-Value",
        "xyzxyzxyzxyzxyzxyzxyz",
        "é",
        "[REDACTED]",
        "sk-",
        "sk-ant-api03-",
        "ghp_",
        "AKIA",
        "xoxb-",
        "glpat-",
        "hf_",
        "npm_",
        "AIza",
        "eyJ",
        ".eyJ",
        "SG.",
        "shpat_",
        "dop_v1_",
        "pypi-AgEIcHlwaS5vcmc",
        "PMAK-",
        "dp.pt.",
        "AGE-SECRET-KEY-1",
        "lin_api_",
        "glsa_",
        "dapi",
        "0123456789abcdef0123456789abcdef",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "hooks.slack.com/services/",
        "discord.com/api/webhooks/1/",
    ];

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 0..48).prop_map(|pieces| pieces.concat())
    }

    /// The gated search gives exactly the ranges of the rule run on the whole text, for every
    /// rule; so `redact` gives what running every rule on the whole text gives.
    fn check(text: String) -> Result<(), TestCaseError> {
        let candidates = Candidates::of(&text);
        for (index, rule) in RULES.iter().enumerate() {
            let whole = rule.secret_ranges(&text);
            prop_assert_eq!(
                candidates.secret_ranges(index, &text),
                whole.clone(),
                "rule {} ({}) on {:?}",
                index,
                rule.kind,
                text
            );
            prop_assert_eq!(candidates.has_secret(index, &text), !whole.is_empty());
        }
        Ok(())
    }

    #[test]
    fn fuzz_secrets_gate() {
        steward_fuzz::run("secrets_gate", text(), |bytes| vec![String::from_utf8_lossy(bytes).into_owned()], check);
    }

    #[test]
    fn many_keywords_on_one_long_line_are_one_region() {
        let line = "var a={api_key:1};".repeat(10_000);
        let text = format!("first line\n{line}\nlast line with token: \"abc123def456\"\n");
        let candidates = Candidates::of(&text);
        let field = RULES.iter().position(|r| r.kind == "secret_field").expect("the field rule");
        let start = "first line\n".len();
        assert_eq!(candidates.regions[field], vec![start..text.len() - 1]);
        assert_eq!(candidates.secret_ranges(field, &text), RULES[field].secret_ranges(&text));
        assert_eq!(candidates.secret_ranges(field, &text).len(), 1);
    }
}
