//! `argv` rules (SPEC C1, T4): per-element globs over the parsed argv of a simple command,
//! compiled once, with their `match` / `not_match` examples checked at load time.

use std::borrow::Cow;
use std::cell::OnceCell;

use globset::{GlobBuilder, GlobMatcher};
use steward_protocol::DecisionKind;

use crate::config::{ArgvExample, RuleConfig};
use crate::error::PolicyError;
use crate::option_set::{OptionPattern, OptionSet};
use crate::programs::options::{Unsure, global_options};
use crate::shell::{self, SimpleCommand};

/// How a rule reads words it cannot know: an allow rule must be sure, a deny or ask rule
/// errs towards matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Allow rules: case-sensitive; run-time words match only `*` / `**`; risky global
    /// options prevent a match.
    Allow,
    /// Deny and ask rules: case-insensitive; run-time words match any element.
    Strict,
}

impl Side {
    pub(crate) fn of(decision: DecisionKind) -> Side {
        if decision == DecisionKind::Allow { Side::Allow } else { Side::Strict }
    }
}

enum Element {
    /// `*`: any one element.
    Any,
    /// A glob over one element, compiled case-sensitively and case-insensitively.
    Glob { exact: GlobMatcher, folded: GlobMatcher },
}

impl Element {
    fn matches(&self, text: &str, dynamic: bool, side: Side) -> bool {
        match (self, side) {
            (Element::Any, _) => true,
            (Element::Glob { .. }, Side::Strict) if dynamic => true,
            (Element::Glob { .. }, Side::Allow) if dynamic => false,
            (Element::Glob { exact, .. }, Side::Allow) => exact.is_match(text),
            (Element::Glob { folded, .. }, Side::Strict) => folded.is_match(text),
        }
    }
}

/// A compiled `argv` pattern.
pub(crate) struct ArgvPattern {
    elements: Vec<Element>,
    /// The pattern ended in `**`.
    rest: bool,
    /// The second element as written, unless it is `*` or `**`.
    second: Option<String>,
    /// How a deny or ask rule naming an option or two words reads a command's options (see
    /// [`crate::option_set`]); `None` for other rules.
    options: Option<OptionPattern>,
}

/// How a rule matched a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Match {
    /// The rule matches the command's words.
    Sure,
    /// A deny or ask rule about a subcommand, applied because the command's subcommand
    /// cannot be known (see [`CommandView::unsure`]) and some word from there on fits it.
    AsIfMatched,
}

/// A simple command as rules see it: the program name(s) and the arguments after the
/// program's global options.
pub(crate) struct CommandView<'a> {
    /// Resolved base name.
    pub program: &'a str,
    /// Base name of `argv[0]` as written (differs from `program` for a link).
    pub spelled: &'a str,
    /// Arguments after global options; options grouped with an operand option are split
    /// out (`python -Bmpip` → `-m`, `pip`).
    pub args: Cow<'a, [String]>,
    /// `dynamic` flags of `args`.
    pub dynamic: Cow<'a, [bool]>,
    /// The arguments as written.
    pub written: &'a [String],
    /// `dynamic` flags of `written`.
    pub written_dynamic: &'a [bool],
    /// The first risky global option used (`git -c`), if any.
    pub risky: Option<String>,
    /// Why the subcommand cannot be known, and the index into `written` of the first word
    /// that may be it (the unknown option or computed word).
    pub unsure: Option<(Unsure, usize)>,
    /// The program's operand options (`python -m`), which rules about a subcommand may start with.
    operand_options: &'static [&'static str],
    /// `args` differs from `written` (global options were skipped or split).
    stripped: bool,
    /// Index into `written` of the first word after the global options, when every operand
    /// is a command of its own (`make all deploy`).
    every_operand_from: Option<usize>,
    /// The arguments read as options and operands, when a rule first needs them.
    option_set: OnceCell<OptionSet>,
}

impl<'a> CommandView<'a> {
    /// The view of `cmd`; `None` for a command with no program (redirections only).
    pub(crate) fn new(cmd: &'a SimpleCommand) -> Option<CommandView<'a>> {
        let first = cmd.argv.first()?;
        let spelled = first.rsplit('/').find(|s| !s.is_empty()).unwrap_or(first);
        let written = cmd.argv.get(1..).unwrap_or(&[]);
        let written_dynamic = cmd.dynamic.get(1..).unwrap_or(&[]);
        let options = global_options(&cmd.program, written, written_dynamic);
        let skip = options.start.min(written.len());
        let stripped = skip > 0 || options.operand.is_some();
        let (args, dynamic) = match options.operand {
            Some((option, value)) => {
                let after = (skip + 1).min(written.len());
                let mut args = vec![option];
                let mut dynamic = vec![false];
                if let Some(value) = value {
                    args.push(value);
                    dynamic.push(false);
                }
                args.extend_from_slice(&written[after..]);
                dynamic.extend_from_slice(written_dynamic.get(after..).unwrap_or(&[]));
                (Cow::Owned(args), Cow::Owned(dynamic))
            }
            None => (Cow::Borrowed(&written[skip..]), Cow::Borrowed(written_dynamic.get(skip..).unwrap_or(&[]))),
        };
        Some(CommandView {
            program: &cmd.program,
            spelled,
            args,
            dynamic,
            written,
            written_dynamic,
            risky: options.risky,
            unsure: options.unsure.map(|why| (why, skip)),
            operand_options: options.operand_options,
            stripped,
            every_operand_from: (options.every_operand && options.unsure.is_none()).then_some(skip),
            option_set: OnceCell::new(),
        })
    }

    /// The arguments as written, read as options and operands.
    fn option_set(&self) -> &OptionSet {
        self.option_set.get_or_init(|| OptionSet::read(self.program, self.written, self.written_dynamic))
    }

    /// The word from which the subcommand cannot be known, if it cannot.
    pub(crate) fn unsure_word(&self) -> Option<(Unsure, &str)> {
        let (why, at) = self.unsure?;
        Some((why, self.written.get(at).map_or("", String::as_str)))
    }
}

/// A case-insensitive glob over one argument, as deny and ask rules compile theirs.
pub(crate) fn compile_glob(rule: &str, glob: &str) -> Result<GlobMatcher, PolicyError> {
    compile(rule, glob, true)
}

fn compile(rule: &str, glob: &str, folded: bool) -> Result<GlobMatcher, PolicyError> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .case_insensitive(folded)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| PolicyError::BadGlob {
            rule: rule.to_string(),
            glob: glob.to_string(),
            message: e.kind().to_string(),
        })
}

impl ArgvPattern {
    /// Compiles `rule.argv`. Errors: [`PolicyError::BadArgvRule`] (empty program, a `/` in
    /// the program, `**` not last), [`PolicyError::BadGlob`].
    pub(crate) fn compile(rule: &str, argv: &[String]) -> Result<ArgvPattern, PolicyError> {
        let bad = |message: &str| PolicyError::BadArgvRule { rule: rule.to_string(), message: message.to_string() };
        let Some(program) = argv.first() else { return Err(bad("`argv` is empty")) };
        if program.is_empty() || program == "**" {
            return Err(bad("the first element must name the program"));
        }
        if program.contains('/') {
            return Err(bad("the program is matched by its base name; write `rm`, not `/bin/rm`"));
        }
        let second = argv.get(1).filter(|e| *e != "*" && *e != "**").cloned();
        let mut elements = Vec::with_capacity(argv.len());
        let mut rest = false;
        for (index, element) in argv.iter().enumerate() {
            if element == "**" {
                if index + 1 != argv.len() {
                    return Err(bad("`**` may only be the last element"));
                }
                rest = true;
            } else if element == "*" {
                elements.push(Element::Any);
            } else {
                elements.push(Element::Glob {
                    exact: compile(rule, element, false)?,
                    folded: compile(rule, element, true)?,
                });
            }
        }
        let options = OptionPattern::compile(rule, argv, &|glob| compile(rule, glob, true))?;
        Ok(ArgvPattern { elements, rest, second, options })
    }

    /// How the pattern matches `view`, read from `side`, if it does. Sure: the words after
    /// the global options, or the words as written, fit (or, read strictly, the words from
    /// any operand on, for a program whose every operand is a command). As if matched (deny
    /// and ask rules about a subcommand only, when the subcommand cannot be known): the words
    /// from any position on from the first unknown word fit.
    pub(crate) fn matches(&self, view: &CommandView<'_>, side: Side) -> Option<Match> {
        let program = self.elements.first()?;
        if side == Side::Allow && view.risky.is_some() {
            return None;
        }
        let program_ok = match side {
            Side::Allow => program.matches(view.program, false, side),
            Side::Strict => program.matches(view.program, false, side) || program.matches(view.spelled, false, side),
        };
        if !program_ok {
            return None;
        }
        if self.matches_at(&view.args, &view.dynamic, side)
            || (view.stripped && self.matches_at(view.written, view.written_dynamic, side))
        {
            return Some(Match::Sure);
        }
        let at_any = |from: usize| {
            (from..view.written.len())
                .any(|j| self.matches_at(&view.written[j..], view.written_dynamic.get(j..).unwrap_or(&[]), side))
        };
        if side == Side::Strict
            && let Some(from) = view.every_operand_from
            && self.about_subcommand(view.operand_options)
            && at_any(from)
        {
            return Some(Match::Sure);
        }
        if side == Side::Strict
            && let Some((_, from)) = view.unsure
            && self.about_subcommand(view.operand_options)
            && at_any(from)
        {
            return Some(Match::AsIfMatched);
        }
        if side == Side::Strict
            && let Some(options) = &self.options
            && options.matches(view.option_set())
        {
            return Some(Match::Sure);
        }
        None
    }

    /// Whether the rule names a subcommand: its second element is a word that is not an
    /// option (`["cargo", "publish", "**"]`, `["cat", ".env"]`), or one of the program's
    /// operand options (`["python", "-m", "pip", "**"]`). `["rm", "-rf", "**"]`,
    /// `["ls", "**"]` and `["git", "*", "x"]` do not.
    fn about_subcommand(&self, operand_options: &[&str]) -> bool {
        self.second.as_deref().is_some_and(|s| !s.starts_with('-') || operand_options.contains(&s))
    }

    fn matches_at(&self, args: &[String], dynamic: &[bool], side: Side) -> bool {
        let elements = self.elements.get(1..).unwrap_or(&[]);
        let count_ok = if self.rest { args.len() >= elements.len() } else { args.len() == elements.len() };
        count_ok
            && elements.iter().zip(args.iter().zip(dynamic)).all(|(e, (arg, dynamic))| e.matches(arg, *dynamic, side))
    }
}

/// A compiled `[[policy.rule]]` with `argv`.
pub(crate) struct ArgvRule {
    pub name: String,
    pub pattern: ArgvPattern,
    pub decision: DecisionKind,
    /// `approval_ttl_seconds`, if set.
    pub approval_ttl: Option<u64>,
}

impl ArgvRule {
    /// Compiles `rule` and checks its examples. Errors: [`PolicyError::BadArgvRule`],
    /// [`PolicyError::BadGlob`], [`PolicyError::Example`].
    pub(crate) fn new(rule: &RuleConfig) -> Result<ArgvRule, PolicyError> {
        let compiled = ArgvRule {
            name: rule.name.clone(),
            pattern: ArgvPattern::compile(&rule.name, &rule.argv)?,
            decision: rule.decision,
            approval_ttl: rule.approval_ttl_seconds,
        };
        for (examples, expected) in [(&rule.matches, true), (&rule.not_match, false)] {
            for example in examples {
                let cmd = example_command(&rule.name, example)?;
                let got = CommandView::new(&cmd).is_some_and(|v| compiled.matches(&v).is_some());
                if got != expected {
                    let message = if expected { "the rule does not match it" } else { "the rule matches it" };
                    return Err(PolicyError::Example {
                        rule: rule.name.clone(),
                        example: example.to_string(),
                        message: format!("{} example: {message}", if expected { "`match`" } else { "`not_match`" }),
                    });
                }
            }
        }
        Ok(compiled)
    }

    /// Makes the rule match as written only (no option reading), for the mutation check of
    /// the tests.
    pub(crate) fn drop_option_reading(&mut self) {
        self.pattern.options = None;
    }

    /// How the rule matches `view` (read from the side of its decision), if it does.
    pub(crate) fn matches(&self, view: &CommandView<'_>) -> Option<Match> {
        self.pattern.matches(view, Side::of(self.decision))
    }
}

/// The one simple command an example stands for.
fn example_command(rule: &str, example: &ArgvExample) -> Result<SimpleCommand, PolicyError> {
    let parsed = match example {
        ArgvExample::Argv(argv) => shell::split_argv(argv, None),
        ArgvExample::Line(line) => shell::split(line),
    };
    let error =
        |message: String| PolicyError::Example { rule: rule.to_string(), example: example.to_string(), message };
    let mut parts = parsed.map_err(|e| error(e.to_string()))?;
    // A login shell wrapped around the example is kept as a part of its own; the example is
    // the command inside it.
    if parts.len() > 1 && crate::programs::is_shell(&parts[0].program) {
        parts.remove(0);
    }
    if parts.len() != 1 {
        return Err(error(format!("an example must be one simple command, this is {}", parts.len())));
    }
    parts.pop().ok_or_else(|| error("no command".into()))
}
