//! Cutting a file's text into chunks of about [`CHUNK_CHARS`] characters that end at line
//! ends and overlap by up to [`OVERLAP_CHARS`] characters of whole lines, so a passage cut at a
//! chunk's end is whole in the next one.

use serde::{Deserialize, Serialize};

/// Characters of one chunk (a line longer than this is cut into pieces of this size).
pub const CHUNK_CHARS: usize = 1_600;
/// Characters of whole lines a chunk repeats from the end of the one before.
pub const OVERLAP_CHARS: usize = 160;

/// One chunk of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (1-based, inclusive).
    pub end_line: u32,
    /// The text of those lines.
    pub text: String,
}

/// A line, or a piece of a line longer than the chunk size.
struct Segment<'a> {
    line: u32,
    text: &'a str,
    chars: usize,
}

fn segments(text: &str, size: usize) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let mut rest = line;
        loop {
            let cut = rest.char_indices().nth(size).map_or(rest.len(), |(at, _)| at);
            let (piece, after) = rest.split_at(cut);
            out.push(Segment { line: line_no, text: piece, chars: piece.chars().count() });
            if after.is_empty() {
                break;
            }
            rest = after;
        }
    }
    out
}

/// The chunks of `text`: each as many whole lines as fit in `size` characters (at least one
/// segment), the next starting with the last lines of the one before that fit in `overlap`.
/// No chunks for an empty text.
pub fn chunks(text: &str, size: usize, overlap: usize) -> Vec<Chunk> {
    let size = size.max(1);
    let segs = segments(text, size);
    let mut out = Vec::new();
    let mut i = 0;
    while i < segs.len() {
        let mut j = i;
        let mut len = 0;
        while j < segs.len() && (j == i || len + segs[j].chars <= size) {
            len += segs[j].chars;
            j += 1;
        }
        out.push(Chunk {
            start_line: segs[i].line,
            end_line: segs[j - 1].line,
            text: segs[i..j].iter().map(|s| s.text).collect(),
        });
        if j >= segs.len() {
            break;
        }
        let mut k = j;
        let mut back = 0;
        while k > i + 1 && back + segs[k - 1].chars <= overlap {
            k -= 1;
            back += segs[k].chars;
        }
        i = k;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_end_at_lines_fit_the_size_and_overlap() {
        let text: String = (1..=100).map(|i| format!("line number {i:03} of the file\n")).collect();
        let cs = chunks(&text, CHUNK_CHARS, OVERLAP_CHARS);
        assert!(cs.len() >= 2);
        assert_eq!(cs[0].start_line, 1);
        assert_eq!(cs.last().unwrap().end_line, 100);
        for pair in cs.windows(2) {
            assert!(pair[0].text.chars().count() <= CHUNK_CHARS);
            let overlap = pair[0].end_line + 1 - pair[1].start_line;
            // 28-character lines: five of them fit in 160 characters.
            assert_eq!(overlap, 5, "{} {}", pair[0].end_line, pair[1].start_line);
            assert!(pair[1].text.starts_with(&format!("line number {:03}", pair[1].start_line)));
        }
        assert!(chunks("", 10, 2).is_empty());
    }

    #[test]
    fn a_long_line_is_cut_and_every_character_is_kept() {
        let text = format!("short\n{}\nend", "é".repeat(3_500));
        let cs = chunks(&text, CHUNK_CHARS, OVERLAP_CHARS);
        assert!(cs.iter().all(|c| c.text.chars().count() <= CHUNK_CHARS));
        assert_eq!(cs.iter().map(|c| c.text.matches('é').count()).sum::<usize>(), 3_500);
        assert_eq!(cs.last().unwrap().end_line, 3);
    }
}
