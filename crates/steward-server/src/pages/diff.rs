//! Unified diffs (as Steward's file tools write them for approvals and patches) made readable:
//! one block per file with its `+N −M` summary, old and new line numbers, the `+`/`−` sign
//! kept beside the colour, and word-level highlights inside a changed line.

use serde::Serialize;

/// A diff as the run page shows it.
#[derive(Debug, Serialize, Default)]
pub(super) struct DiffView {
    pub files: Vec<FileDiff>,
    /// `1 file, +2 −1`.
    pub summary: String,
}

/// One file of a diff.
#[derive(Debug, Serialize, Default)]
pub(super) struct FileDiff {
    /// The path after the change (before it, for a deleted file), without `a/`/`b/`.
    pub path: String,
    pub added: usize,
    pub removed: usize,
    pub lines: Vec<DiffLine>,
}

/// One line of a file's diff.
#[derive(Debug, Serialize)]
pub(super) struct DiffLine {
    /// `add`, `del`, `ctx` (unchanged) or `hunk` (an `@@` header or a `\ No newline` note).
    pub kind: &'static str,
    /// The line's number before the change (`del`, `ctx`).
    pub old: Option<u32>,
    /// The line's number after the change (`add`, `ctx`).
    pub new: Option<u32>,
    /// `+`, `-` or a space.
    pub sign: &'static str,
    /// The text in parts; `changed` parts are highlighted (words that differ from the paired
    /// removed or added line).
    pub parts: Vec<Part>,
}

/// A run of text within a diff line.
#[derive(Debug, Serialize)]
pub(super) struct Part {
    pub text: String,
    pub changed: bool,
}

fn whole(text: &str) -> Vec<Part> {
    vec![Part { text: text.to_string(), changed: false }]
}

/// Parses `diff` (unified format: `--- a/P`, `+++ b/P`, `@@ -l,s +l,s @@`, then lines that
/// start with ` `, `+`, `-` or `\`). Text before the first `---` line, or a diff that is not
/// in this format, yields no files: the caller shows the text as it is.
pub(super) fn parse(diff: &str) -> DiffView {
    let mut files: Vec<FileDiff> = Vec::new();
    let (mut old, mut new) = (0u32, 0u32);
    // Lines of the current hunk still to come, by its `@@` header: a line that looks like a
    // file header inside a hunk is content, not a new file.
    let (mut old_left, mut new_left) = (0u32, 0u32);
    let mut lines = diff.lines().peekable();
    while let Some(line) = lines.next() {
        if old_left == 0 && new_left == 0 {
            if let Some(before) = line.strip_prefix("--- ")
                && let Some(after) = lines.peek().and_then(|l| l.strip_prefix("+++ "))
            {
                let path = if after.trim() == "/dev/null" { before } else { after };
                let path = path.trim().trim_start_matches("a/").trim_start_matches("b/");
                files.push(FileDiff { path: path.to_string(), ..FileDiff::default() });
                lines.next();
                continue;
            }
            let Some(file) = files.last_mut() else { continue };
            if let Some(header) = line.strip_prefix("@@") {
                let (old_range, new_range) = hunk_ranges(header);
                (old, old_left) = old_range;
                (new, new_left) = new_range;
            }
            // A hunk header, a `\ No newline` note, or anything else between hunks: shown as
            // it is, never hidden.
            file.lines.push(DiffLine { kind: "hunk", old: None, new: None, sign: " ", parts: whole(line) });
            continue;
        }
        let Some(file) = files.last_mut() else { continue };
        if let Some(text) = line.strip_prefix('+') {
            file.added += 1;
            file.lines.push(DiffLine { kind: "add", old: None, new: Some(new), sign: "+", parts: whole(text) });
            new += 1;
            new_left = new_left.saturating_sub(1);
        } else if let Some(text) = line.strip_prefix('-') {
            file.removed += 1;
            file.lines.push(DiffLine { kind: "del", old: Some(old), new: None, sign: "-", parts: whole(text) });
            old += 1;
            old_left = old_left.saturating_sub(1);
        } else if line.starts_with('\\') {
            file.lines.push(DiffLine { kind: "hunk", old: None, new: None, sign: " ", parts: whole(line) });
        } else {
            let text = line.strip_prefix(' ').unwrap_or(line);
            file.lines.push(DiffLine { kind: "ctx", old: Some(old), new: Some(new), sign: " ", parts: whole(text) });
            old += 1;
            new += 1;
            old_left = old_left.saturating_sub(1);
            new_left = new_left.saturating_sub(1);
        }
    }
    for file in &mut files {
        highlight_words(&mut file.lines);
    }
    let (added, removed): (usize, usize) = files.iter().fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
    let summary = match files.len() {
        0 => String::new(),
        1 => format!("1 file, +{added} −{removed}"),
        n => format!("{n} files, +{added} −{removed}"),
    };
    DiffView { files, summary }
}

/// The old and new ranges of a hunk header's rest (` -3,7 +3,8 @@ …`): each its first line
/// and its number of lines (1 when the count is left out, as unified diffs do).
fn hunk_ranges(header: &str) -> ((u32, u32), (u32, u32)) {
    let range = |sign: char| {
        let text = header.split_whitespace().find_map(|w| w.strip_prefix(sign)).unwrap_or("1");
        let mut parts = text.split(',');
        let start = parts.next().and_then(|n| n.parse::<u32>().ok()).unwrap_or(1);
        let count = parts.next().map_or(Some(1), |n| n.parse::<u32>().ok()).unwrap_or(1);
        (start, count)
    };
    (range('-'), range('+'))
}

/// Pairs each run of removed lines with the run of added lines right after it, line by line,
/// and marks the words that differ. A pair with no word in common is left whole: the sign
/// and colour already say the line changed.
fn highlight_words(lines: &mut [DiffLine]) {
    let mut i = 0;
    while i < lines.len() {
        let dels = lines[i..].iter().take_while(|l| l.kind == "del").count();
        if dels == 0 {
            i += 1;
            continue;
        }
        let adds = lines[i + dels..].iter().take_while(|l| l.kind == "add").count();
        for k in 0..dels.min(adds) {
            let (before, after) = (text(&lines[i + k]), text(&lines[i + dels + k]));
            if let Some((old_parts, new_parts)) = word_parts(&before, &after) {
                lines[i + k].parts = old_parts;
                lines[i + dels + k].parts = new_parts;
            }
        }
        i += dels + adds.max(1);
    }
}

fn text(line: &DiffLine) -> String {
    line.parts.iter().map(|p| p.text.as_str()).collect()
}

/// The parts of `before` and `after` with the differing words marked, or `None` when the two
/// have nothing in common (or are long enough that a word diff is not worth its time).
fn word_parts(before: &str, after: &str) -> Option<(Vec<Part>, Vec<Part>)> {
    if before.len() + after.len() > 4_000 {
        return None;
    }
    let diff = similar::TextDiff::from_words(before, after);
    let mut old_parts: Vec<Part> = Vec::new();
    let mut new_parts: Vec<Part> = Vec::new();
    let mut common = false;
    let push = |parts: &mut Vec<Part>, text: &str, changed: bool| match parts.last_mut() {
        Some(last) if last.changed == changed => last.text.push_str(text),
        _ => parts.push(Part { text: text.to_string(), changed }),
    };
    for change in diff.iter_all_changes() {
        let value = change.value();
        match change.tag() {
            similar::ChangeTag::Equal => {
                common |= !value.trim().is_empty();
                push(&mut old_parts, value, false);
                push(&mut new_parts, value, false);
            }
            similar::ChangeTag::Delete => push(&mut old_parts, value, true),
            similar::ChangeTag::Insert => push(&mut new_parts, value, true),
        }
    }
    common.then_some((old_parts, new_parts))
}

#[cfg(test)]
mod tests {
    use super::parse;

    const EDIT: &str = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -2,3 +2,4 @@\n fn a() {}\n-let x = 1;\n+let x = 2;\n+let y = 3;\n fn b() {}\n";

    #[test]
    fn a_diff_has_a_summary_line_numbers_and_signs() {
        let view = parse(EDIT);
        assert_eq!(view.summary, "1 file, +2 −1");
        let file = &view.files[0];
        assert_eq!(file.path, "src/lib.rs");
        let numbered: Vec<_> = file.lines.iter().map(|l| (l.kind, l.old, l.new, l.sign)).collect();
        assert_eq!(
            numbered,
            vec![
                ("hunk", None, None, " "),
                ("ctx", Some(2), Some(2), " "),
                ("del", Some(3), None, "-"),
                ("add", None, Some(3), "+"),
                ("add", None, Some(4), "+"),
                ("ctx", Some(4), Some(5), " "),
            ]
        );
    }

    #[test]
    fn changed_words_are_marked_in_a_changed_line() {
        let view = parse(EDIT);
        let lines = &view.files[0].lines;
        let marked =
            |i: usize| -> Vec<(String, bool)> { lines[i].parts.iter().map(|p| (p.text.clone(), p.changed)).collect() };
        // Words are what whitespace separates.
        assert_eq!(marked(2), vec![("let x = ".into(), false), ("1;".into(), true)]);
        assert_eq!(marked(3), vec![("let x = ".into(), false), ("2;".into(), true)]);
        // An added line with no removed partner stays whole.
        assert_eq!(marked(4), vec![("let y = 3;".into(), false)]);
        // Lines with nothing in common are not split into words.
        let view = parse("--- a/n\n+++ b/n\n@@ -1 +1 @@\n-old\n+new\n");
        assert!(view.files[0].lines.iter().all(|l| l.parts.len() == 1 && !l.parts[0].changed));
    }

    #[test]
    fn a_line_that_looks_like_a_file_header_inside_a_hunk_is_content() {
        // The edit turns `-- a/decoy.txt` into `++ b/decoy.txt` plus a new line: inside the
        // hunk those lines read `--- a/decoy.txt` and `+++ b/decoy.txt`.
        let diff = "--- a/schema.sql\n+++ b/schema.sql\n@@ -1,2 +1,3 @@\n create table t;\n--- a/decoy.txt\n+++ b/decoy.txt\n+DROP TABLE users;\n";
        let view = parse(diff);
        assert_eq!(view.summary, "1 file, +2 −1");
        assert_eq!(view.files[0].path, "schema.sql");
        let kinds: Vec<_> = view.files[0].lines.iter().map(|l| l.kind).collect();
        assert_eq!(kinds, ["hunk", "ctx", "del", "add", "add"]);
    }

    #[test]
    fn new_and_deleted_files_and_text_that_is_no_diff() {
        let created = parse("--- a/notes/one.txt\n+++ b/notes/one.txt\n@@ -0,0 +1 @@\n+one\n");
        assert_eq!((created.summary.as_str(), created.files[0].lines[1].new), ("1 file, +1 −0", Some(1)));
        let deleted = parse("--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n");
        assert_eq!(deleted.files[0].path, "gone.txt");
        let two = parse(&format!("{EDIT}--- a/b\n+++ b/b\n@@ -1 +1 @@\n-x\n+y\n"));
        assert_eq!(two.summary, "2 files, +3 −2");
        assert!(parse("just some words\n+ not a diff").files.is_empty());
    }
}
