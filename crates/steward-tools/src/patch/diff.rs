//! Unified diffs of planned changes, for approval prompts, tool results and stale refusals
//! (rendered with the `similar` crate; only display text, never written to files).

use super::Target;

/// A unified diff (3 lines of context) for display; bytes that are not UTF-8 are shown as
/// U+FFFD here only. Lines the two sides share at the start and the end (beyond the context)
/// are left out before diffing, so a small change to a large file diffs in time proportional
/// to the change; hunk line numbers are then shifted back to whole-file numbers.
pub(super) fn diff_text(old_name: &str, new_name: &str, before: &[u8], after: &[u8]) -> String {
    const CONTEXT: usize = 3;
    let common_start = before.iter().zip(after).take_while(|(a, b)| a == b).count();
    let mut skipped_lines = 0;
    let mut head = 0;
    // Back up to a line start, then keep CONTEXT whole lines before the first difference.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(before[..common_start].iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1))
        .collect();
    if starts.len() > CONTEXT + 1 {
        skipped_lines = starts.len() - 1 - CONTEXT;
        head = starts[skipped_lines];
    }
    let max_tail = before.len().min(after.len()) - head;
    let common_end = before.iter().rev().zip(after.iter().rev()).take(max_tail).take_while(|(a, b)| a == b).count();
    let mut tail = 0;
    let ends: Vec<usize> = before[before.len() - common_end..]
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| before.len() - common_end + i + 1)
        .collect();
    if ends.len() > CONTEXT + 1 {
        tail = before.len() - ends[CONTEXT];
    }
    let (before, after) = (
        String::from_utf8_lossy(&before[head..before.len() - tail]),
        String::from_utf8_lossy(&after[head..after.len() - tail]),
    );
    let diff = similar::TextDiff::from_lines(before.as_ref(), after.as_ref())
        .unified_diff()
        .context_radius(CONTEXT)
        .header(old_name, new_name)
        .to_string();
    if skipped_lines == 0 {
        return diff;
    }
    diff.split_inclusive('\n').map(|line| shift_hunk_header(line, skipped_lines)).collect()
}

/// `@@ -A,B +C,D @@` with `offset` added to A and C; other lines unchanged.
fn shift_hunk_header(line: &str, offset: usize) -> std::borrow::Cow<'_, str> {
    let shifted = (|| {
        let rest = line.strip_prefix("@@ -")?;
        let (ranges, tail) = rest.split_once(" @@")?;
        let (old, new) = ranges.split_once(" +")?;
        let shift = |range: &str| -> Option<String> {
            let (start, len) = range.split_once(',').map_or((range, None), |(s, l)| (s, Some(l)));
            let start = start.parse::<usize>().ok()? + offset;
            Some(match len {
                Some(len) => format!("{start},{len}"),
                None => start.to_string(),
            })
        };
        Some(format!("@@ -{} +{} @@{tail}", shift(old)?, shift(new)?))
    })();
    shifted.map_or(std::borrow::Cow::Borrowed(line), std::borrow::Cow::Owned)
}

/// The diff of every target, `/dev/null` marking created and deleted files.
pub(super) fn render_diff(targets: &[Target]) -> String {
    let mut out = String::new();
    for target in targets {
        let rel = &target.path.rel;
        let old = if target.before.is_some() { format!("a/{rel}") } else { "/dev/null".into() };
        let new = if target.after.is_some() { format!("b/{rel}") } else { "/dev/null".into() };
        if target.after.is_none() {
            out.push_str(&format!("# DELETES `{rel}`\n"));
        }
        let before = target.before.as_deref().unwrap_or_default();
        let after = target.after.as_deref().unwrap_or_default();
        out.push_str(&diff_text(&old, &new, before, after));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_shared_lines_gives_the_same_diff_as_the_full_one() {
        let before: String = (1..=200).map(|n| format!("line {n}\n")).collect();
        for changed in ["line 100\n", "line 1\n", "line 200\n", "line 4\n", "line 197\n"] {
            let after = before.replace(changed, "new\nlines\n");
            let full = similar::TextDiff::from_lines(&before, &after)
                .unified_diff()
                .context_radius(3)
                .header("a/f", "b/f")
                .to_string();
            assert_eq!(diff_text("a/f", "b/f", before.as_bytes(), after.as_bytes()), full, "{changed}");
        }
    }
}
