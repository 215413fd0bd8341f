//! Positions between the model's terms (1-based line and column, counted in characters) and
//! LSP's (0-based line, column in UTF-16 code units), and finding a name in a file.

use lsp_types::Position;

/// The 0-based LSP position of the 1-based `line` and `column` (in characters) of `text`.
/// A column past the end of its line is put at the line's end. `None` when the line does not
/// exist or a number is 0.
pub(crate) fn to_lsp(text: &str, line: u32, column: u32) -> Option<Position> {
    if line == 0 || column == 0 {
        return None;
    }
    let content = text.split('\n').nth(line as usize - 1)?;
    let units: usize = content.chars().take(column as usize - 1).map(char::len_utf16).sum();
    Some(Position::new(line - 1, u32::try_from(units).ok()?))
}

/// The 1-based line and column (in characters) of the LSP position `pos` in `text`; a
/// position past the text is kept as given (plus one).
pub(crate) fn from_lsp(text: &str, pos: Position) -> (u32, u32) {
    let line = pos.line.saturating_add(1);
    let Some(content) = text.split('\n').nth(pos.line as usize) else {
        return (line, pos.character.saturating_add(1));
    };
    let mut units = 0u32;
    let mut column = 1u32;
    for c in content.chars() {
        if units >= pos.character {
            break;
        }
        units += c.len_utf16() as u32;
        column += 1;
    }
    (line, column)
}

/// Line `line` (1-based) of `text`, trimmed, at most `max` characters (with `…` when cut).
pub(crate) fn line_snippet(text: &str, line: u32, max: usize) -> Option<String> {
    let content = text.split('\n').nth((line as usize).checked_sub(1)?)?;
    let trimmed = content.trim();
    if trimmed.chars().count() > max {
        Some(format!("{}…", trimmed.chars().take(max).collect::<String>()))
    } else {
        Some(trimmed.to_string())
    }
}

/// The 1-based line and column of the first whole-word occurrence of `name` in `text`, on
/// `line` only when given.
pub(crate) fn find_word(text: &str, name: &str, line: Option<u32>) -> Option<(u32, u32)> {
    if name.is_empty() {
        return None;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    for (index, content) in text.split('\n').enumerate() {
        let number = index as u32 + 1;
        if line.is_some_and(|l| l != number) {
            continue;
        }
        let mut from = 0;
        while let Some(at) = content[from..].find(name) {
            let start = from + at;
            let end = start + name.len();
            let before = content[..start].chars().next_back();
            let after = content[end..].chars().next();
            if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
                return Some((number, content[..start].chars().count() as u32 + 1));
            }
            from = start + name.chars().next().map_or(1, char::len_utf8);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_for_the_model_and_utf16_units_for_the_server() {
        let text = "a = 1\nx = \"é😀\" + b\n";
        assert_eq!(to_lsp(text, 2, 1), Some(Position::new(1, 0)));
        // `+` is the 10th character; before it `😀` takes two UTF-16 units.
        assert_eq!(to_lsp(text, 2, 10), Some(Position::new(1, 10)));
        assert_eq!(from_lsp(text, Position::new(1, 10)), (2, 10));
        assert_eq!(to_lsp(text, 9, 1), None);
        assert_eq!(to_lsp(text, 0, 1), None);
        assert_eq!(line_snippet(text, 2, 4).as_deref(), Some("x = …"));
    }

    #[test]
    fn words_are_found_whole() {
        let text = "helper_x = 1\ndef helper(a):\n    return helper(a)\n";
        assert_eq!(find_word(text, "helper", None), Some((2, 5)));
        assert_eq!(find_word(text, "helper", Some(3)), Some((3, 12)));
        assert_eq!(find_word(text, "help", None), None);
    }
}
