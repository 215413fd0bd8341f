//! The session's line editor ([`rustyline`]): history kept across sessions, multi-line input
//! (a line ending in `\` goes on), and completion of the `/` commands. The terminal's own
//! scrollback stays: nothing is drawn full-screen.

use std::path::PathBuf;

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::{DefaultHistory, History};
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Config, Context, Editor, Helper};

use super::line::COMMANDS;

/// Most lines the history keeps.
const HISTORY_LINES: usize = 1_000;

/// What the prompt read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// A line (lines joined by a trailing `\` are one, with their line ends).
    Line(String),
    /// Ctrl-C at the prompt: the line typed so far is dropped.
    Interrupted,
    /// Ctrl-D on an empty line, or the end of input.
    Eof,
}

/// The line editor and where its history is kept.
pub struct LineEditor {
    editor: Editor<ChatHelper, DefaultHistory>,
    history_file: Option<PathBuf>,
}

impl LineEditor {
    /// A line editor whose history is `history_file` (read now if it exists; written, owner-only,
    /// after each line). Errors: the terminal cannot be set up.
    pub fn new(history_file: Option<PathBuf>) -> Result<LineEditor, ReadlineError> {
        let config = Config::builder().max_history_size(HISTORY_LINES)?.auto_add_history(false).build();
        let mut editor = Editor::with_config(config)?;
        editor.set_helper(Some(ChatHelper));
        if let Some(file) = &history_file
            && file.exists()
        {
            // A history that cannot be read is not worth stopping for.
            let _ = editor.load_history(file);
        }
        Ok(LineEditor { editor, history_file })
    }

    /// Reads one line after `prompt` (blocking: call it off the async runtime's threads).
    pub fn read(&mut self, prompt: &str) -> Read {
        match self.editor.readline(prompt) {
            Ok(line) => Read::Line(line.replace("\\\n", "\n")),
            Err(ReadlineError::Interrupted) => Read::Interrupted,
            Err(_) => Read::Eof,
        }
    }

    /// Remembers `entry` (already redacted by the caller) for the up arrow and in the history
    /// file.
    pub fn remember(&mut self, entry: &str) {
        if entry.trim().is_empty() {
            return;
        }
        let _ = self.editor.add_history_entry(entry);
        let Some(file) = &self.history_file else { return };
        if self.editor.history().is_empty() {
            return;
        }
        if self.editor.save_history(file).is_ok() {
            use std::os::unix::fs::PermissionsExt as _;
            let _ = std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600));
        }
    }
}

/// Completion of `/` commands and the multi-line rule.
struct ChatHelper;

impl Helper for ChatHelper {}

impl Hinter for ChatHelper {
    type Hint = String;
}

impl Highlighter for ChatHelper {}

impl Completer for ChatHelper {
    type Candidate = Pair;

    /// A `/` word at the start of the line completes to the commands it begins.
    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let typed = &line[..pos];
        if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
            return Ok((0, Vec::new()));
        }
        let matches = COMMANDS
            .iter()
            .filter(|(name, _)| name.starts_with(typed))
            .map(|(name, _)| Pair { display: name.to_string(), replacement: name.to_string() })
            .collect();
        Ok((0, matches))
    }
}

impl Validator for ChatHelper {
    /// A line ending in `\` is not finished: Enter starts the next line of the same input.
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        if ctx.input().ends_with('\\') { Ok(ValidationResult::Incomplete) } else { Ok(ValidationResult::Valid(None)) }
    }
}
