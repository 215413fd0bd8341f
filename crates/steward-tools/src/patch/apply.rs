//! Applying parsed hunks to a file's bytes, byte-faithfully (cases B15, B16, B18).
//!
//! The file is split into lines, each kept as its exact bytes plus its own terminator
//! (`\r\n`, `\n`, or none for a last line without one); a UTF-8 BOM is set aside and put back.
//! Hunk lines are compared with a line's bytes *without* its terminator, so a patch written
//! with LF lines matches a CRLF file and the other way round; otherwise matching is exact
//! (tabs, spaces and case count). Context lines are copied from the file, never from the
//! patch; only `+` lines are new bytes, and they take the line ending of the lines they
//! replace (else the file's dominant style). Lines outside the hunks — and every byte that is
//! not valid UTF-8 — are copied untouched.
//!
//! Placement, strictly:
//! - numbered hunk with old lines: must match at its stated line, or at exactly one place
//!   within [`FUZZ_LINES`] lines of it (shifted by earlier hunks' offsets); two candidates at
//!   the same distance is `ambiguous`;
//! - numbered hunk with no old lines (`@@ -3,0 +4,2 @@`): inserts after the stated line;
//! - anchor hunk (`@@ class Circle:`): the anchor must be exactly one line of the file
//!   (compared trimmed); `+`-only bodies insert directly after it, other bodies apply at the
//!   first match at or after it; no such line → `anchor not found`;
//! - `@@` without position: its old lines must occur exactly once; a `+`-only body appends at
//!   the end of the file (the only case that appends).
//!
//! Final newline: a last line without a terminator stays without one unless the patch says
//! otherwise with `\ No newline at end of file` markers.

use super::super::ToolError;
use super::parse::{Hunk, HunkLine, Locator};

/// How far (in lines, either way) a numbered hunk may be found from its stated position.
pub(super) const FUZZ_LINES: usize = 32;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One line of the file: its bytes and its terminator.
#[derive(Clone, Copy)]
struct Line<'a> {
    body: &'a [u8],
    eol: &'a [u8],
}

/// Splits `bytes` (without BOM) into lines; a `\r` counts as part of the terminator only
/// right before `\n`.
fn split_lines(bytes: &[u8]) -> Vec<Line<'_>> {
    let mut lines = Vec::with_capacity(bytes.len() / 32 + 1);
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            let body_end = if i > start && bytes[i - 1] == b'\r' { i - 1 } else { i };
            lines.push(Line { body: &bytes[start..body_end], eol: &bytes[body_end..=i] });
            start = i + 1;
        }
    }
    if start < bytes.len() {
        lines.push(Line { body: &bytes[start..], eol: b"" });
    }
    lines
}

/// CRLF when more than half of the terminated lines end in CRLF, else LF.
fn dominant_eol(lines: &[Line<'_>]) -> &'static [u8] {
    let crlf = lines.iter().filter(|l| l.eol == b"\r\n").count();
    let lf = lines.iter().filter(|l| l.eol == b"\n").count();
    if crlf > lf { b"\r\n" } else { b"\n" }
}

/// Why a hunk could not be applied; the caller names the file.
fn fault(rel: &str, hunk: &Hunk, rule: &str, what: String) -> ToolError {
    ToolError::refused(rule, format!("hunk {} of `{rel}`: {what}; nothing was changed", hunk.number))
}

fn matches_at(lines: &[Line<'_>], at: usize, old: &[&str]) -> bool {
    at + old.len() <= lines.len() && old.iter().zip(&lines[at..]).all(|(o, l)| o.as_bytes() == l.body)
}

/// Where `hunk`'s old lines start in `lines` (0-based), given the offset `drift` of earlier
/// hunks and the first line it may touch (`from`).
/// Most line comparisons a search without line numbers may cost (hunk lines × file lines),
/// so that a pathological patch cannot stall a run.
const MAX_SEARCH_COMPARISONS: usize = 20_000_000;

fn locate(lines: &[Line<'_>], hunk: &Hunk, drift: isize, from: usize, rel: &str) -> Result<usize, ToolError> {
    let old = hunk.old_lines();
    let searches = !matches!(hunk.locator, Locator::Lines { .. });
    if searches && old.len().saturating_mul(lines.len()) > MAX_SEARCH_COMPARISONS {
        return Err(fault(
            rel,
            hunk,
            "too_large",
            format!(
                "a hunk of {} lines without line numbers would be searched for in {} lines; give its line numbers (`@@ -N,M +N,M @@`)",
                old.len(),
                lines.len()
            ),
        ));
    }
    match &hunk.locator {
        Locator::Lines { old_start, old_len } => {
            let stated = if *old_len == 0 { *old_start } else { old_start.saturating_sub(1) };
            let expected = stated.saturating_add_signed(drift);
            if old.is_empty() {
                if expected > lines.len() || expected < from {
                    return Err(fault(
                        rel,
                        hunk,
                        "hunk_mismatch",
                        format!("it inserts after line {old_start}, but the file has {} lines", lines.len()),
                    ));
                }
                return Ok(expected);
            }
            if expected >= from && matches_at(lines, expected, &old) {
                return Ok(expected);
            }
            for distance in 1..=FUZZ_LINES {
                let below = expected.checked_sub(distance).filter(|p| *p >= from && matches_at(lines, *p, &old));
                let above = Some(expected + distance).filter(|p| *p >= from && matches_at(lines, *p, &old));
                match (below, above) {
                    (Some(_), Some(_)) => {
                        return Err(fault(
                            rel,
                            hunk,
                            "ambiguous",
                            format!(
                                "ambiguous: its lines match both {distance} lines before and after line {old_start}"
                            ),
                        ));
                    }
                    (Some(p), None) | (None, Some(p)) => return Ok(p),
                    (None, None) => {}
                }
            }
            Err(fault(
                rel,
                hunk,
                "hunk_mismatch",
                format!(
                    "its context and removed lines do not match the file at line {old_start} (nor within {FUZZ_LINES} lines of it; matching ignores CRLF/LF but is otherwise exact) — read the file again"
                ),
            ))
        }
        Locator::Anchor(anchor) => {
            let wanted = anchor.trim().as_bytes();
            let found: Vec<usize> =
                lines.iter().enumerate().filter(|(_, l)| l.body.trim_ascii() == wanted).map(|(i, _)| i).collect();
            let at = match found.as_slice() {
                [] => {
                    return Err(fault(
                        rel,
                        hunk,
                        "anchor_not_found",
                        format!("anchor not found: no line reads `{anchor}`"),
                    ));
                }
                [one] => *one,
                many => {
                    return Err(fault(
                        rel,
                        hunk,
                        "ambiguous",
                        format!("ambiguous: the anchor `{anchor}` is on {} lines", many.len()),
                    ));
                }
            };
            if at < from {
                return Err(fault(rel, hunk, "hunk_mismatch", "it comes before an earlier hunk of the patch".into()));
            }
            if old.is_empty() {
                return Ok(at + 1);
            }
            (at..lines.len()).find(|p| matches_at(lines, *p, &old)).ok_or_else(|| {
                fault(rel, hunk, "hunk_mismatch", format!("its lines are not found after the anchor `{anchor}`"))
            })
        }
        Locator::Unplaced => {
            if old.is_empty() {
                return Ok(lines.len());
            }
            let found: Vec<usize> = (from..lines.len()).filter(|p| matches_at(lines, *p, &old)).take(2).collect();
            match found.as_slice() {
                [] => Err(fault(
                    rel,
                    hunk,
                    "hunk_mismatch",
                    "its context and removed lines are not in the file (matching ignores CRLF/LF but is otherwise exact)"
                        .into(),
                )),
                [one] => Ok(*one),
                _ => Err(fault(
                    rel,
                    hunk,
                    "ambiguous",
                    "ambiguous: its lines occur more than once; add context lines or line numbers".into(),
                )),
            }
        }
    }
}

/// A line of the result: borrowed from the file or from the patch.
struct OutLine<'a> {
    body: &'a [u8],
    eol: &'a [u8],
    added: bool,
}

/// Applies `hunks` (in order, non-overlapping) to `file`. Errors (rules `hunk_mismatch`,
/// `anchor_not_found`, `ambiguous`) name `rel` and the hunk; the input is never modified.
pub(super) fn apply_hunks(file: &[u8], hunks: &[Hunk], rel: &str) -> Result<Vec<u8>, ToolError> {
    let (bom, content) = match file.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => (&b""[..], file),
    };
    let lines = split_lines(content);
    let style = dominant_eol(&lines);
    let mut out: Vec<OutLine<'_>> = Vec::with_capacity(lines.len() + 16);
    let (mut cursor, mut drift) = (0usize, 0isize);
    let mut last_hunk: Option<&Hunk> = None;
    for hunk in hunks {
        let at = locate(&lines, hunk, drift, cursor, rel)?;
        if let Locator::Lines { old_start, old_len } = hunk.locator {
            let stated = if old_len == 0 { old_start } else { old_start.saturating_sub(1) };
            drift = at as isize - stated as isize;
        }
        out.extend(lines[cursor..at].iter().map(|l| OutLine { body: l.body, eol: l.eol, added: false }));
        let eol =
            lines[at..].iter().take(hunk.old_lines().len()).map(|l| l.eol).find(|e| !e.is_empty()).unwrap_or(style);
        let mut pos = at;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(_) => {
                    out.push(OutLine { body: lines[pos].body, eol: lines[pos].eol, added: false });
                    pos += 1;
                }
                HunkLine::Remove(_) => pos += 1,
                HunkLine::Add(text) => out.push(OutLine { body: text.as_bytes(), eol, added: true }),
            }
        }
        cursor = pos;
        last_hunk = Some(hunk);
    }
    out.extend(lines[cursor..].iter().map(|l| OutLine { body: l.body, eol: l.eol, added: false }));

    let had_final_eol = lines.last().is_none_or(|l| !l.eol.is_empty());
    let count = out.len();
    let mut bytes = Vec::with_capacity(file.len() + 256);
    bytes.extend_from_slice(bom);
    for (i, line) in out.iter().enumerate() {
        bytes.extend_from_slice(line.body);
        let eol = if i + 1 < count {
            // A line that was last (without terminator) is followed by new lines now.
            if line.eol.is_empty() { style } else { line.eol }
        } else if line.added {
            // Only reachable when the last hunk consumed the old last line.
            let hunk = last_hunk.map(|h| (h.old_no_eol, h.new_no_eol)).unwrap_or_default();
            match hunk {
                (_, true) => b"",
                (true, false) => line.eol,
                (false, false) if had_final_eol => line.eol,
                (false, false) => b"",
            }
        } else {
            line.eol
        };
        bytes.extend_from_slice(eol);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse;
    use super::*;

    fn run(file: &[u8], patch: &str) -> Result<Vec<u8>, ToolError> {
        let files = parse(patch).unwrap();
        apply_hunks(file, &files[0].hunks, "f")
    }

    #[test]
    fn missing_final_newline_stays_missing_unless_the_patch_says_otherwise() {
        let p = "--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n+c\n";
        assert_eq!(run(b"a\nb", p).unwrap(), b"a\nc");
        let p = "--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+c\n";
        assert_eq!(run(b"a\nb", p).unwrap(), b"a\nc\n");
        let p = "--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n+c\n\\ No newline at end of file\n";
        assert_eq!(run(b"a\nb\n", p).unwrap(), b"a\nc");
        let p = "--- a/f\n+++ b/f\n@@ -2 +2,2 @@\n b\n+c\n";
        assert_eq!(run(b"a\nb", p).unwrap(), b"a\nb\nc");
    }

    #[test]
    fn fuzz_window_and_ambiguity() {
        let p = "--- a/f\n+++ b/f\n@@ -2 +2 @@\n-x\n+y\n";
        assert_eq!(run(b"a\nb\nc\nx\n", p).unwrap(), b"a\nb\nc\ny\n");
        let err = run(b"x\nb\nx\n", p).unwrap_err();
        assert_eq!(err.rule.as_deref(), Some("ambiguous"));
        let far = format!("{}x\n", "l\n".repeat(FUZZ_LINES + 2));
        assert_eq!(run(far.as_bytes(), p).unwrap_err().rule.as_deref(), Some("hunk_mismatch"));
    }

    #[test]
    fn bom_and_latin1_bytes_survive() {
        let p = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(run(b"\xEF\xBB\xBFa\r\ncaf\xE9\r\n", p).unwrap(), b"\xEF\xBB\xBFb\r\ncaf\xE9\r\n");
    }
}
