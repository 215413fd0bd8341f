//! The shell grammar subset Steward understands: words with quoting and expansions, lists
//! (`;` `&&` `||` `|` `|&` `&` newline), subshells `( … )`, groups `{ …; }`, command and
//! process substitution, redirections, and the `if`/`while`/`for` keywords (their bodies are
//! ordinary lists). The syntax follows the POSIX Shell Command Language (XCU §2) and the
//! bash manual. Anything whose meaning depends on run-time values (`case`, function
//! definitions, arithmetic, here-documents, arrays) is refused as unparseable.
//!
//! The result is a flat list of [`RawCommand`]s: every command that may run, the ones inside
//! substitutions and groups included, in source order (inner substitutions first).

use super::{MAX_DEPTH, ShellError, unparseable};

/// One word after quote removal.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawWord {
    /// The text after quote removal; expansions are kept as written.
    pub text: String,
    /// True when the shell will expand part of the word at run time (parameters, command or
    /// process substitution, globs, brace expansion, `~`, `$'…'`).
    pub dynamic: bool,
    /// Byte offset in `text` of an unquoted `=` preceded only by unquoted plain characters:
    /// a candidate `NAME=value` assignment.
    pub assign_at: Option<usize>,
}

/// One simple command as written, before wrappers are opened.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawCommand {
    /// Words, assignments included.
    pub words: Vec<RawWord>,
    /// Output redirection targets (`>`, `>>`, `>|`, `&>`, `<>`, `>&file`).
    pub outputs: Vec<String>,
    /// Input redirection sources (`<`).
    pub inputs: Vec<String>,
    /// Nesting depth the command was found at.
    pub depth: usize,
}

impl RawCommand {
    fn is_empty(&self) -> bool {
        self.words.is_empty() && self.outputs.is_empty() && self.inputs.is_empty()
    }
}

/// Parses `text` at nesting `depth`. Errors: [`ShellError::Unparseable`].
pub(crate) fn parse_script(text: &str, depth: usize) -> Result<Vec<RawCommand>, ShellError> {
    if depth > MAX_DEPTH {
        return Err(unparseable(format!("nested more than {MAX_DEPTH} levels deep")));
    }
    let mut parser = Parser { chars: text.chars().collect(), pos: 0, depth, cmds: Vec::new(), after_pipe: false };
    parser.list(Close::Eof)?;
    Ok(parser.cmds)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Close {
    Eof,
    Paren,
    Brace,
}

/// Keywords skipped at the start of a command: what follows is an ordinary command.
const PREFIX_KEYWORDS: &[&str] = &["!", "if", "then", "else", "elif", "do", "while", "until"];
/// Keywords that close a compound command; only redirections may follow.
const CLOSING_KEYWORDS: &[&str] = &["fi", "done"];
/// Keywords whose grammar we do not model.
const REFUSED_KEYWORDS: &[&str] = &["case", "esac", "function", "coproc", "select", "[["];

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    cmds: Vec<RawCommand>,
    /// The last operator was `|` or `|&`: the next command is not the first of its pipeline.
    after_pipe: bool,
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Characters that end an unquoted word.
fn ends_word(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>')
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    /// Skips blanks and backslash-newline continuations.
    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(c) if is_blank(c) => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    /// At the start of a word, `#` begins a comment that runs to the end of the line.
    fn skip_comment(&mut self) {
        if self.peek() == Some('#') {
            while self.peek().is_some_and(|c| c != '\n') {
                self.pos += 1;
            }
        }
    }

    /// Runs `f` one nesting level deeper.
    fn nested(&mut self, f: impl FnOnce(&mut Parser) -> Result<(), ShellError>) -> Result<(), ShellError> {
        if self.depth >= MAX_DEPTH {
            return Err(unparseable(format!("nested more than {MAX_DEPTH} levels deep")));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    /// The unquoted plain word at the cursor, if it is followed by a word end.
    fn plain_word_ahead(&self) -> Option<String> {
        let mut end = self.pos;
        while let Some(&c) = self.chars.get(end) {
            if ends_word(c) || matches!(c, '\'' | '"' | '\\' | '$' | '`') {
                break;
            }
            end += 1;
        }
        match self.chars.get(end) {
            Some(&c) if !ends_word(c) => None,
            _ if end == self.pos => None,
            _ => Some(self.chars[self.pos..end].iter().collect()),
        }
    }

    fn at_word(&self, word: &str) -> bool {
        self.plain_word_ahead().as_deref() == Some(word)
    }

    /// A list of commands up to `close` (consumed).
    fn list(&mut self, close: Close) -> Result<(), ShellError> {
        let mut pending = false;
        loop {
            self.skip_blanks();
            self.skip_comment();
            let Some(c) = self.peek() else {
                if close != Close::Eof {
                    return Err(unparseable("a `(`, `$(` or `{` is never closed"));
                }
                if pending {
                    return Err(unparseable("the command line ends after an operator"));
                }
                return Ok(());
            };
            match c {
                '\n' => {
                    self.pos += 1;
                    continue;
                }
                ')' if close == Close::Paren && !pending => {
                    self.pos += 1;
                    return Ok(());
                }
                ')' | ';' | '&' | '|' => return Err(unparseable(format!("unexpected `{c}`"))),
                _ => {}
            }
            if close == Close::Brace && !pending && self.at_word("}") {
                self.pos += 1;
                return Ok(());
            }
            self.command()?;
            pending = self.operator()?;
        }
    }

    /// Consumes the operator after a command; true when another command must follow.
    fn operator(&mut self) -> Result<bool, ShellError> {
        self.skip_blanks();
        self.skip_comment();
        let (Some(c), next) = (self.peek(), self.peek_at(1)) else { return Ok(false) };
        let (len, pending) = match (c, next) {
            (';', Some(';')) => return Err(unparseable("`;;` (case clauses are not supported)")),
            ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&')) => (2, true),
            ('|', _) => (1, true),
            (';' | '&' | '\n', _) => (1, false),
            (')', _) => (0, false),
            (other, _) => return Err(unparseable(format!("unexpected `{other}` after a command"))),
        };
        self.pos += len;
        self.after_pipe = c == '|' && next != Some('|');
        Ok(pending)
    }

    /// One simple command, subshell or group (with its trailing redirections).
    fn command(&mut self) -> Result<(), ShellError> {
        let mut cmd = RawCommand { depth: self.depth, ..RawCommand::default() };
        let mut closed = false;
        // `time` is a keyword only at the start of a pipeline; after `|` it names a program.
        let pipeline_start = !std::mem::take(&mut self.after_pipe);
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else { break };
            let at_start = cmd.is_empty() && !closed;
            match c {
                '#' => {
                    self.skip_comment();
                    break;
                }
                '&' if self.peek_at(1) == Some('>') => {
                    self.redirect(&mut cmd)?;
                    continue;
                }
                '\n' | ';' | '&' | '|' | ')' => break,
                '(' if at_start => {
                    if self.peek_at(1) == Some('(') {
                        return Err(unparseable("arithmetic commands `((…))` are not supported"));
                    }
                    self.pos += 1;
                    return self.group(Close::Paren);
                }
                '(' => return Err(unparseable("`(` inside a command (function definition or array)")),
                '<' | '>' if self.peek_at(1) != Some('(') => {
                    self.redirect(&mut cmd)?;
                    continue;
                }
                _ => {}
            }
            if at_start && let Some(word) = self.plain_word_ahead() {
                let len = word.chars().count();
                if word == "{" {
                    self.pos += len;
                    return self.group(Close::Brace);
                }
                if PREFIX_KEYWORDS.contains(&word.as_str()) {
                    self.pos += len;
                    continue;
                }
                if CLOSING_KEYWORDS.contains(&word.as_str()) {
                    self.pos += len;
                    closed = true;
                    continue;
                }
                if REFUSED_KEYWORDS.contains(&word.as_str()) {
                    return Err(unparseable(format!("`{word}` is not supported")));
                }
                if word == "time" && pipeline_start {
                    self.time_keyword(len);
                    continue;
                }
                if word == "for" {
                    self.pos += len;
                    if self.for_clause()? {
                        // `for NAME do BODY`: the body's first command starts here.
                        continue;
                    }
                    return Ok(());
                }
            }
            let word = self.word()?;
            let is_fd = !word.dynamic
                && !word.text.is_empty()
                && word.text.chars().all(|c| c.is_ascii_digit())
                && matches!(self.peek(), Some('<' | '>'));
            if is_fd {
                self.redirect(&mut cmd)?;
                continue;
            }
            if closed {
                return Err(unparseable(format!("unexpected `{}` after `fi`/`done`", word.text)));
            }
            cmd.words.push(word);
        }
        if !cmd.is_empty() {
            self.cmds.push(cmd);
        }
        Ok(())
    }

    /// The `time` keyword at the start of a pipeline, with bash's only options `-p` and then
    /// `--`: consumes them. What follows is timed as a whole, so it is parsed like any command:
    /// `time -o f ls` runs the program `-o` (GNU time's options belong to `/usr/bin/time`,
    /// which is what `time` names after `|` or a prefix such as `env`).
    fn time_keyword(&mut self, len: usize) {
        self.pos += len;
        self.skip_blanks();
        if self.at_word("-p") {
            self.pos += 2;
            self.skip_blanks();
        }
        if self.at_word("--") {
            self.pos += 2;
        }
    }

    /// A subshell or group body, then its redirections, which apply to every inner command.
    fn group(&mut self, close: Close) -> Result<(), ShellError> {
        let start = self.cmds.len();
        self.nested(|p| p.list(close))?;
        let mut outer = RawCommand { depth: self.depth, ..RawCommand::default() };
        loop {
            self.skip_blanks();
            match (self.peek(), self.peek_at(1)) {
                (Some('<' | '>'), next) if next != Some('(') => self.redirect(&mut outer)?,
                (Some('&'), Some('>')) => self.redirect(&mut outer)?,
                _ => break,
            }
        }
        if start == self.cmds.len() {
            if !outer.is_empty() {
                self.cmds.push(outer);
            }
            return Ok(());
        }
        for cmd in &mut self.cmds[start..] {
            cmd.outputs.extend(outer.outputs.iter().cloned());
            cmd.inputs.extend(outer.inputs.iter().cloned());
        }
        Ok(())
    }

    /// `for NAME [in WORDS]`: the words are data (their substitutions still run). Without
    /// `in`, only `;`, a newline or `do` may follow the name — `do` and the loop body are left
    /// for the caller, so the body's commands are judged like any other.
    /// Returns true when it stopped after a `do` (consumed) that directly follows the name.
    fn for_clause(&mut self) -> Result<bool, ShellError> {
        self.skip_blanks();
        if self.peek() == Some('(') {
            return Err(unparseable("arithmetic `for ((…))` loops are not supported"));
        }
        self.word()?;
        self.skip_blanks();
        if self.at_word("do") {
            self.pos += 2;
            return Ok(true);
        }
        if self.at_word("in") {
            self.pos += 2;
        } else if !matches!(self.peek(), None | Some(';' | '\n')) {
            return Err(unparseable("a `for` loop without `in` must be followed by `;`, a newline or `do`"));
        }
        loop {
            self.skip_blanks();
            match self.peek() {
                None | Some(';' | '\n') => return Ok(false),
                Some(c) if ends_word(c) => return Err(unparseable(format!("unexpected `{c}` in a for loop"))),
                Some(_) => {
                    self.word()?;
                }
            }
        }
    }

    /// A redirection operator (optionally after an fd number) and its target.
    fn redirect(&mut self, cmd: &mut RawCommand) -> Result<(), ShellError> {
        enum Kind {
            Output,
            Input,
            Dup,
            HereString,
        }
        let first = self.peek();
        self.pos += 1;
        let kind = match first {
            Some('&') => {
                self.pos += 1; // the `>` of `&>`
                if self.peek() == Some('>') {
                    self.pos += 1;
                }
                Kind::Output
            }
            Some('>') => match self.peek() {
                Some('>' | '|') => {
                    self.pos += 1;
                    Kind::Output
                }
                Some('&') => {
                    self.pos += 1;
                    Kind::Dup
                }
                _ => Kind::Output,
            },
            _ => match self.peek() {
                Some('<') if self.peek_at(1) == Some('<') => {
                    self.pos += 2;
                    Kind::HereString
                }
                Some('<') => return Err(unparseable("here-documents are not supported")),
                Some('&') => {
                    self.pos += 1;
                    Kind::Dup
                }
                Some('>') => {
                    self.pos += 1;
                    Kind::Output
                }
                _ => Kind::Input,
            },
        };
        self.skip_blanks();
        if self.peek().is_none_or(ends_word) {
            return Err(unparseable("a redirection has no target"));
        }
        let target = self.word()?;
        let is_fd = target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit());
        match kind {
            Kind::HereString => return Ok(()),
            Kind::Dup if is_fd && !target.dynamic => return Ok(()),
            _ => {}
        }
        if target.dynamic {
            return Err(unparseable(format!("the redirection target `{}` is computed at run time", target.text)));
        }
        match kind {
            Kind::Input => cmd.inputs.push(target.text),
            _ => cmd.outputs.push(target.text),
        }
        Ok(())
    }

    /// One word: quotes removed, escapes applied, expansions kept as written and flagged.
    fn word(&mut self) -> Result<RawWord, ShellError> {
        let mut word = RawWord::default();
        let mut plain = true;
        let mut brace_open = false;
        while let Some(c) = self.peek() {
            match c {
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    self.substitution(&mut word, 2)?;
                    plain = false;
                }
                c if ends_word(c) => break,
                '\\' => {
                    match self.peek_at(1) {
                        None => return Err(unparseable("the command line ends with a backslash")),
                        Some('\n') => {}
                        Some(next) => {
                            word.text.push(next);
                            plain = false;
                        }
                    }
                    self.pos += 2;
                }
                '\'' => {
                    self.pos += 1;
                    loop {
                        match self.peek() {
                            None => return Err(unparseable("unbalanced single quote")),
                            Some('\'') => break,
                            Some(inner) => word.text.push(inner),
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                    plain = false;
                }
                '"' => {
                    self.pos += 1;
                    self.double_quoted(&mut word)?;
                    plain = false;
                }
                '$' => {
                    self.dollar(&mut word, false)?;
                    plain = false;
                }
                '`' => {
                    self.backtick(&mut word)?;
                    plain = false;
                }
                _ => {
                    match c {
                        '*' | '?' | '[' => word.dynamic = true,
                        '~' if word.text.is_empty() || (plain && word.text.ends_with(['=', ':'])) => {
                            word.dynamic = true;
                        }
                        '{' => brace_open = true,
                        '}' if brace_open => word.dynamic = true,
                        '=' if plain && word.assign_at.is_none() => word.assign_at = Some(word.text.len()),
                        _ => {}
                    }
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(word)
    }

    /// Inside `"…"` (the opening quote consumed).
    fn double_quoted(&mut self, word: &mut RawWord) -> Result<(), ShellError> {
        loop {
            match self.peek() {
                None => return Err(unparseable("unbalanced double quote")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => {
                    match self.peek_at(1) {
                        None => return Err(unparseable("unbalanced double quote")),
                        Some('\n') => {}
                        Some(next @ ('$' | '`' | '"' | '\\')) => word.text.push(next),
                        Some(next) => {
                            word.text.push('\\');
                            word.text.push(next);
                        }
                    }
                    self.pos += 2;
                }
                Some('$') => self.dollar(word, true)?,
                Some('`') => self.backtick(word)?,
                Some(c) => {
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// `$…`: parameter expansion, `$(…)`, `${…}`, `$'…'`, `$"…"`, or a literal `$`.
    fn dollar(&mut self, word: &mut RawWord, in_quotes: bool) -> Result<(), ShellError> {
        let start = self.pos;
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                return Err(unparseable("arithmetic expansion `$((…))` is not supported"));
            }
            Some('(') => return self.substitution(word, 2),
            Some('{') => {
                self.pos += 2;
                let mut level = 1;
                while level > 0 {
                    match self.peek() {
                        None => return Err(unparseable("unbalanced `${`")),
                        Some('{') => level += 1,
                        Some('}') => level -= 1,
                        Some('`') => return Err(unparseable("command substitution inside `${…}`")),
                        Some('$') if self.peek_at(1) == Some('(') => {
                            return Err(unparseable("command substitution inside `${…}`"));
                        }
                        Some(_) => {}
                    }
                    self.pos += 1;
                }
            }
            Some('\'') if !in_quotes => {
                self.pos += 2;
                loop {
                    match self.peek() {
                        None => return Err(unparseable("unbalanced `$'`")),
                        Some('\\') => self.pos += 2,
                        Some('\'') => break,
                        Some(_) => self.pos += 1,
                    }
                }
                self.pos += 1;
            }
            Some('"') if !in_quotes => {
                // Locale translation: the quoted text follows.
                self.pos += 1;
                return Ok(());
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.pos += 2;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    self.pos += 1;
                }
            }
            Some(c) if c.is_ascii_digit() || matches!(c, '@' | '*' | '#' | '?' | '$' | '!' | '-') => self.pos += 2,
            _ => {
                word.text.push('$');
                self.pos += 1;
                return Ok(());
            }
        }
        let end = self.pos.min(self.chars.len());
        word.text.extend(&self.chars[start..end]);
        word.dynamic = true;
        Ok(())
    }

    /// `$(…)`, `<(…)` or `>(…)`: the body is parsed as a list; `open` is the opener's length.
    fn substitution(&mut self, word: &mut RawWord, open: usize) -> Result<(), ShellError> {
        let start = self.pos;
        self.pos += open;
        self.nested(|p| p.list(Close::Paren))?;
        word.text.extend(&self.chars[start..self.pos]);
        word.dynamic = true;
        Ok(())
    }

    /// `` `…` ``: the body (with `\``, `\\` and `\$` unescaped) is parsed as a script.
    fn backtick(&mut self, word: &mut RawWord) -> Result<(), ShellError> {
        let start = self.pos;
        self.pos += 1;
        let mut body = String::new();
        loop {
            match self.peek() {
                None => return Err(unparseable("unbalanced backquote")),
                Some('`') => break,
                Some('\\') => {
                    match self.peek_at(1) {
                        Some(next @ ('`' | '\\' | '$')) => body.push(next),
                        Some(next) => {
                            body.push('\\');
                            body.push(next);
                        }
                        None => return Err(unparseable("unbalanced backquote")),
                    }
                    self.pos += 2;
                    continue;
                }
                Some(c) => body.push(c),
            }
            self.pos += 1;
        }
        self.pos += 1;
        let inner = parse_script(&body, self.depth + 1)?;
        self.cmds.extend(inner);
        word.text.extend(&self.chars[start..self.pos]);
        word.dynamic = true;
        Ok(())
    }
}
