//! Parsing unified diffs (the format `diff -u` and `git diff` print; GNU diffutils manual,
//! "Detailed Description of Unified Format") into per-file hunks.
//!
//! Accepted on top of the plain format, because models write them:
//! - `diff --git`, `index`, mode and other preamble lines are skipped;
//! - `a/` and `b/` prefixes and a tab-separated timestamp after a header path are removed;
//!   `/dev/null` marks a created (old side) or deleted (new side) file;
//! - a hunk header without line numbers is an *anchor* hunk: `@@ class Circle:` means "the
//!   line reading `class Circle:`", and `@@` or `@@ @@` alone carries no position;
//! - inside a hunk, a completely empty line is an empty context line (editors strip the
//!   leading space); in a hunk without line counts, trailing empty lines are dropped.
//!
//! Refused: renames and copies (use `move`), binary patches, `+`/`-` lines outside a hunk,
//! and numbered hunks whose body does not hold exactly the line counts of their header.

use super::super::ToolError;

/// One line of a hunk body (text without its line ending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HunkLine {
    /// ` text`: must be in the file, kept as it is.
    Context(String),
    /// `-text`: must be in the file, removed.
    Remove(String),
    /// `+text`: inserted.
    Add(String),
}

/// Where a hunk applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Locator {
    /// `@@ -old_start,old_len +new_start,new_len @@`: 1-based line numbers of the old file;
    /// with `old_len == 0`, the hunk inserts after line `old_start` (0 = before line 1).
    Lines {
        /// First old line (1-based), or the line to insert after when `old_len` is 0.
        old_start: usize,
        /// Number of context and removed lines.
        old_len: usize,
    },
    /// `@@ text`: the hunk applies after the one line whose trimmed text equals `text`.
    Anchor(String),
    /// `@@`: no position; located by its old lines, or appended at the end when it has none.
    Unplaced,
}

/// One hunk of a file patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hunk {
    /// 1-based number of the hunk within its file, for messages.
    pub number: usize,
    /// Where it applies.
    pub locator: Locator,
    /// The body.
    pub lines: Vec<HunkLine>,
    /// A `\ No newline at end of file` marker follows the last old-side line.
    pub old_no_eol: bool,
    /// A `\ No newline at end of file` marker follows the last new-side line.
    pub new_no_eol: bool,
}

impl Hunk {
    /// The old-side lines (context and removed), in order.
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }
}

/// The hunks for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FilePatch {
    /// Old path (`None` for `/dev/null`: the patch creates the file).
    pub old: Option<String>,
    /// New path (`None` for `/dev/null`: the patch deletes the file).
    pub new: Option<String>,
    /// The hunks, in the order given.
    pub hunks: Vec<Hunk>,
}

impl FilePatch {
    /// The path the patch is about (the new one, or the old one for a deletion).
    pub fn path(&self) -> &str {
        self.new.as_deref().or(self.old.as_deref()).unwrap_or_default()
    }
}

fn malformed(message: String) -> ToolError {
    ToolError::refused("invalid_patch", message)
}

/// Parses a unified diff holding one or more files.
///
/// Errors (rule `invalid_patch`): no file header, a hunk before any header, a rename, copy
/// or binary patch, a header with `/dev/null` on both sides, line counts that do not match a
/// hunk body, an unexpected line inside a hunk, or a `+`/`-` line outside one.
pub(super) fn parse(patch: &str) -> Result<Vec<FilePatch>, ToolError> {
    let mut lines: Vec<&str> = patch.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let mut files: Vec<FilePatch> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if is_file_header(&lines, i) {
            let old = header_path(&line[4..], "a/");
            let new = header_path(&lines[i + 1][4..], "b/");
            match (&old, &new) {
                (None, None) => {
                    return Err(malformed(format!("line {}: both sides of the file header are /dev/null", i + 1)));
                }
                (Some(a), Some(b)) if a != b => {
                    return Err(malformed(format!(
                        "line {}: renaming `{a}` to `{b}` is not supported in a patch; use the `move` tool",
                        i + 1
                    )));
                }
                _ => {}
            }
            files.push(FilePatch { old, new, hunks: Vec::new() });
            i += 2;
        } else if line.starts_with("@@") {
            let Some(file) = files.last_mut() else {
                return Err(malformed(format!("line {}: a hunk comes before any `---`/`+++` file header", i + 1)));
            };
            let number = file.hunks.len() + 1;
            let (hunk, next) = parse_hunk(&lines, i, number, file.path())?;
            file.hunks.push(hunk);
            i = next;
        } else if line.starts_with("GIT binary patch") || line.starts_with("Binary files ") {
            return Err(malformed(format!("line {}: binary patches are not supported", i + 1)));
        } else if ["rename from ", "rename to ", "copy from ", "copy to "].iter().any(|p| line.starts_with(p)) {
            return Err(malformed(format!(
                "line {}: renames and copies are not supported in a patch; use the `move` tool",
                i + 1
            )));
        } else if line.starts_with('+') || line.starts_with('-') || (line.starts_with(' ') && !files.is_empty()) {
            return Err(malformed(format!(
                "line {}: a diff line outside any hunk (check the hunk header's line counts)",
                i + 1
            )));
        } else {
            // `diff --git`, `index …`, mode lines, blank lines and commentary.
            i += 1;
        }
    }
    if files.is_empty() {
        return Err(malformed("no file header (`--- a/PATH` then `+++ b/PATH`) found in the patch".into()));
    }
    Ok(files)
}

fn is_file_header(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|next| next.starts_with("+++ "))
}

/// The path of a `---`/`+++` header: `None` for `/dev/null`; a trailing tab and timestamp and
/// the side's `a/`/`b/` prefix are removed.
fn header_path(raw: &str, prefix: &str) -> Option<String> {
    let path = raw.split('\t').next().unwrap_or_default().trim();
    if path == "/dev/null" {
        return None;
    }
    Some(path.strip_prefix(prefix).unwrap_or(path).to_string())
}

/// Parses the hunk whose header is at `lines[start]`; returns it and the index after it.
fn parse_hunk(lines: &[&str], start: usize, number: usize, path: &str) -> Result<(Hunk, usize), ToolError> {
    let header = lines[start];
    let (locator, counts) = parse_header(header);
    let mut hunk = Hunk { number, locator, lines: Vec::new(), old_no_eol: false, new_no_eol: false };
    let mut i = start + 1;
    let err = |at: usize, what: &str| malformed(format!("hunk {number} of `{path}` (line {}): {what}", at + 1));
    match counts {
        Some((mut old_left, mut new_left)) => {
            while old_left > 0 || new_left > 0 {
                let Some(line) = lines.get(i) else {
                    return Err(err(
                        start,
                        &format!(
                            "the patch ends early: the header promises {old_left} more old and {new_left} more new lines"
                        ),
                    ));
                };
                match body_line(line) {
                    Some(BodyLine::Line(l)) => {
                        let (old, new) = match &l {
                            HunkLine::Context(_) => (1, 1),
                            HunkLine::Remove(_) => (1, 0),
                            HunkLine::Add(_) => (0, 1),
                        };
                        if old > old_left || new > new_left {
                            return Err(err(i, "the hunk body has more lines than its header's counts"));
                        }
                        old_left -= old;
                        new_left -= new;
                        hunk.lines.push(l);
                    }
                    Some(BodyLine::NoEol) => mark_no_eol(&mut hunk),
                    None => return Err(err(i, "the hunk body has fewer lines than its header's counts")),
                }
                i += 1;
            }
            if let Some(BodyLine::NoEol) = lines.get(i).and_then(|l| body_line(l)) {
                mark_no_eol(&mut hunk);
                i += 1;
            }
        }
        None => {
            while i < lines.len() && !lines[i].starts_with("@@") && !is_file_header(lines, i) {
                if lines[i].starts_with("diff ") {
                    break;
                }
                match body_line(lines[i]) {
                    Some(BodyLine::Line(l)) => hunk.lines.push(l),
                    Some(BodyLine::NoEol) => mark_no_eol(&mut hunk),
                    None => return Err(err(i, "expected a line starting with ` `, `-`, `+` or `\\`")),
                }
                i += 1;
            }
            while hunk.lines.last() == Some(&HunkLine::Context(String::new())) {
                hunk.lines.pop();
            }
        }
    }
    if hunk.lines.is_empty() {
        return Err(err(start, "the hunk is empty"));
    }
    if let Locator::Lines { old_start: 0, old_len } = hunk.locator
        && old_len > 0
    {
        return Err(err(start, "line numbers start at 1"));
    }
    Ok((hunk, i))
}

/// The locator and, for numbered headers, the (old, new) line counts.
fn parse_header(header: &str) -> (Locator, Option<(usize, usize)>) {
    if let Some((old_start, old_len, new_len)) = numbered_header(header) {
        return (Locator::Lines { old_start, old_len }, Some((old_len, new_len)));
    }
    let text = header[2..].trim();
    let text = text.strip_suffix("@@").unwrap_or(text).trim();
    if text.is_empty() { (Locator::Unplaced, None) } else { (Locator::Anchor(text.to_string()), None) }
}

/// `@@ -A[,B] +C[,D] @@[ heading]` → `(A, B, D)` (counts default to 1).
fn numbered_header(header: &str) -> Option<(usize, usize, usize)> {
    let rest = header.strip_prefix("@@ -")?;
    let (ranges, _heading) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (old_start, old_len) = range(old)?;
    let (_, new_len) = range(new)?;
    Some((old_start, old_len, new_len))
}

enum BodyLine {
    Line(HunkLine),
    NoEol,
}

fn body_line(line: &str) -> Option<BodyLine> {
    let mut chars = line.chars();
    let rest = || line[1..].to_string();
    match chars.next() {
        None => Some(BodyLine::Line(HunkLine::Context(String::new()))),
        Some(' ') => Some(BodyLine::Line(HunkLine::Context(rest()))),
        Some('-') => Some(BodyLine::Line(HunkLine::Remove(rest()))),
        Some('+') => Some(BodyLine::Line(HunkLine::Add(rest()))),
        Some('\\') => Some(BodyLine::NoEol),
        Some(_) => None,
    }
}

/// `\ No newline at end of file` refers to the line before it.
fn mark_no_eol(hunk: &mut Hunk) {
    match hunk.lines.last() {
        Some(HunkLine::Remove(_)) => hunk.old_no_eol = true,
        Some(HunkLine::Add(_)) => hunk.new_no_eol = true,
        Some(HunkLine::Context(_)) => {
            hunk.old_no_eol = true;
            hunk.new_no_eol = true;
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_zero_context_and_anchor_headers() {
        let files = parse("--- a/s.py\n+++ b/s.py\n@@ -3,0 +4,2 @@\n+x\n+y\n@@ class C:\n+z\n").unwrap();
        assert_eq!(files[0].path(), "s.py");
        assert_eq!(files[0].hunks[0].locator, Locator::Lines { old_start: 3, old_len: 0 });
        assert_eq!(files[0].hunks[0].lines.len(), 2);
        assert_eq!(files[0].hunks[1].locator, Locator::Anchor("class C:".into()));
    }

    #[test]
    fn counts_must_match_the_body() {
        let err = parse("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+b\n").unwrap_err();
        assert!(err.message.contains("ends early"), "{}", err.message);
        let err = parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n").unwrap_err();
        assert!(err.message.contains("outside any hunk"), "{}", err.message);
    }

    #[test]
    fn markers_dev_null_renames_and_binary() {
        let files = parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n").unwrap();
        assert!(files[0].hunks[0].old_no_eol && !files[0].hunks[0].new_no_eol);
        let files = parse("--- /dev/null\n+++ b/new.rs\n@@ -0,0 +1 @@\n+fn f() {}\n").unwrap();
        assert_eq!((files[0].old.clone(), files[0].new.as_deref()), (None, Some("new.rs")));
        assert!(parse("--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n").unwrap_err().message.contains("move"));
        assert!(parse("diff --git a/x b/x\nBinary files a/x and b/x differ\n").is_err());
        assert!(parse("just words\n").unwrap_err().message.contains("no file header"));
    }
}
