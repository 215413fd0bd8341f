//! What a line typed in the interactive session means: a `/` command, or a message to the
//! agent with the files it attaches (`@path`).

/// A line typed at the session's prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Nothing but white space: the prompt comes back.
    Empty,
    /// A message for the agent: the text as typed and the `@path` words it attaches, in order.
    Message {
        /// The whole line (the `@path` words stay in it, so the model sees what was meant).
        text: String,
        /// The paths of the `@path` words, as written (workspace-relative or absolute).
        attachments: Vec<String>,
    },
    /// A session command.
    Command(Command),
}

/// The session's `/` commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/help`: the commands.
    Help,
    /// `/exit` or `/quit`: leave the session.
    Exit,
    /// `/diff`: what this conversation changed in the workspace.
    Diff,
    /// `/undo`: roll back the newest turn of this conversation that changed files.
    Undo,
    /// `/show`: the trace of the last turn.
    Show,
    /// `/approvals`: the grants of this conversation's runs and of the workspace.
    Approvals,
    /// `/approvals revoke ID`: revoke a grant.
    Revoke(String),
    /// `/model`: the model in use; `/model NAME`: use NAME from the next turn on.
    Model(Option<String>),
    /// `/new`: start a new conversation.
    New,
    /// `/resume ID`: continue conversation `cnv_…` or the one run `run_…` belongs to.
    Resume(String),
    /// `/tools`: the tools the model is offered.
    Tools,
    /// A `/` word that is not a command, or a command with wrong arguments: what to say.
    Unknown(String),
}

/// The commands with one line of help each, as `/help` prints them (and the completer offers).
pub const COMMANDS: &[(&str, &str)] = &[
    ("/help", "these commands"),
    ("/diff", "what this conversation changed in the workspace"),
    ("/undo", "roll back the newest turn that changed files (as `steward rollback`)"),
    ("/show", "the last turn's trace: planner rounds, tool steps, decisions, durations"),
    ("/approvals", "your grants (remembered approvals); `/approvals revoke grt_…` revokes one"),
    ("/model", "the model in use; `/model NAME` uses NAME from the next turn on"),
    ("/new", "start a new conversation"),
    ("/resume", "`/resume cnv_…` (or a run id) continues an earlier conversation"),
    ("/tools", "the tools the model is offered here"),
    ("/exit", "leave (Ctrl-D too)"),
];

/// Reads one typed line. A line whose first word starts with `/` is a command (`//text` sends
/// `/text` as a message); any other line is a message, and each of its words that starts with
/// `@` (and has more after it) attaches that path. A trailing `,`, `.`, `;`, `:`, `!` or `?`
/// is not part of an attached path (`read @src/lib.rs.` attaches `src/lib.rs`).
pub fn parse(input: &str) -> Line {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Line::Empty;
    }
    if let Some(rest) = trimmed.strip_prefix("//") {
        return message(&format!("/{rest}"));
    }
    if trimmed.starts_with('/') {
        return Line::Command(command(trimmed));
    }
    message(trimmed)
}

fn message(text: &str) -> Line {
    let attachments = text
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|path| path.trim_end_matches([',', '.', ';', ':', '!', '?']))
        .filter(|path| !path.is_empty())
        .map(str::to_string)
        .collect();
    Line::Message { text: text.to_string(), attachments }
}

fn command(line: &str) -> Command {
    let mut words = line.split_whitespace();
    let name = words.next().unwrap_or_default();
    let args: Vec<&str> = words.collect();
    let no_args = |cmd: Command| {
        if args.is_empty() { cmd } else { Command::Unknown(format!("{name} takes no arguments")) }
    };
    match name {
        "/help" | "/?" => no_args(Command::Help),
        "/exit" | "/quit" => no_args(Command::Exit),
        "/diff" => no_args(Command::Diff),
        "/undo" => no_args(Command::Undo),
        "/show" => no_args(Command::Show),
        "/new" => no_args(Command::New),
        "/tools" => no_args(Command::Tools),
        "/approvals" => match args.as_slice() {
            [] => Command::Approvals,
            ["revoke", id] => Command::Revoke(id.to_string()),
            _ => Command::Unknown("use `/approvals` or `/approvals revoke grt_…`".into()),
        },
        "/model" => match args.as_slice() {
            [] => Command::Model(None),
            [model] => Command::Model(Some(model.to_string())),
            _ => Command::Unknown("use `/model` or `/model NAME`".into()),
        },
        "/resume" => match args.as_slice() {
            [id] => Command::Resume(id.to_string()),
            _ => Command::Unknown("use `/resume cnv_…` (or a run id, or `last`)".into()),
        },
        other => Command::Unknown(format!("unknown command `{other}`; /help lists the commands")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slash_word_is_a_command_and_a_double_slash_sends_the_text() {
        assert_eq!(parse("  /help "), Line::Command(Command::Help));
        assert_eq!(parse("/quit"), Line::Command(Command::Exit));
        assert_eq!(parse("/model qwen2.5:7b"), Line::Command(Command::Model(Some("qwen2.5:7b".into()))));
        assert_eq!(parse("/approvals revoke grt_1"), Line::Command(Command::Revoke("grt_1".into())));
        assert!(matches!(parse("/undo now"), Line::Command(Command::Unknown(_))));
        assert!(matches!(parse("/frobnicate"), Line::Command(Command::Unknown(_))));
        assert_eq!(parse("//etc is a folder"), Line::Message { text: "/etc is a folder".into(), attachments: vec![] });
        assert_eq!(parse("   "), Line::Empty);
    }

    #[test]
    fn at_words_attach_paths_without_trailing_punctuation() {
        assert_eq!(
            parse("compare @src/a.rs and @b.txt. Also mail me@x"),
            Line::Message {
                text: "compare @src/a.rs and @b.txt. Also mail me@x".into(),
                attachments: vec!["src/a.rs".into(), "b.txt".into()]
            }
        );
        assert_eq!(parse("just @ here"), Line::Message { text: "just @ here".into(), attachments: vec![] });
    }
}
