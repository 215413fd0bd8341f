//! The `shell_command` judge (SPEC T4, C1; cases B06, B08): every simple command of a
//! command line is judged on its own; the strictest part decides and names its rule.

use std::path::{Path, PathBuf};

use steward_protocol::{Decision, DecisionKind, RiskLevel};

use crate::argv_rule::{ArgvRule, CommandView, Match};
use crate::gate::Policy;
use crate::git_history::{prints_history, repository_reachable};
use crate::git_programs::{log_shows_default_notes, option_runs_program, repository_runs_programs};
use crate::named_paths::path_parts;
use crate::nested::{LineDir, Run, nested};
use crate::paths::{Access, PathError, Workspace};
use crate::programs::env_is_risky;
use crate::programs::options::Unsure;
use crate::shell::{self, ShellError, SimpleCommand};
use steward_secrets::is_secret_path;

/// Deepest nesting of commands started by commands (`npm run a` whose script runs `npx b`).
const MAX_NESTED: usize = 4;
/// Longest command shown in a reason, in chars.
const SHOWN_CHARS: usize = 120;
/// Redirection targets that are not files.
const DEVICES: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

/// One part's decision.
struct Verdict {
    kind: DecisionKind,
    rule: String,
    reason: String,
}

impl Verdict {
    /// Replaces the verdict when `kind` is strictly stricter.
    fn raise(&mut self, kind: DecisionKind, rule: &str, reason: impl FnOnce() -> String) {
        if kind > self.kind {
            *self = Verdict { kind, rule: rule.to_string(), reason: reason() };
        }
    }
}

/// The working directory of the next part, relative to the workspace root.
#[derive(Clone)]
enum Cwd {
    Known(PathBuf),
    /// After `cd` somewhere we cannot follow (home, `-`, outside, computed).
    Unknown,
}

impl Policy {
    /// Judges a shell command line as a `shell_command` call would be (risk 0.8, the `high`
    /// level), without tool-level checks or run escalations. See
    /// [`RuleConfig`](crate::RuleConfig) for the rule format and the escalations.
    ///
    /// Result: the strictest part's decision and rule (first among equals); `default:shell`
    /// (*ask*, or *deny* when the configured `default` is deny) for a part no rule covers or
    /// a line that runs nothing; `unparseable_command` (same decision) when the line cannot
    /// be parsed. A git part that can print file contents from history or the index
    /// (`git log -p`, `git show`, an alias …) is at least *ask* (`git_history`) while a
    /// repository is reachable from the workspace, whatever rule allows it. Reasons: the
    /// deciding part's first, then other parts that are not allowed.
    pub fn judge_command(&self, line: &str, workspace: &Workspace) -> Decision {
        self.judge_line(line, workspace, RiskLevel::High.base_score())
    }

    /// [`Policy::judge_command`] for an argv executed directly (no shell at the top level).
    pub fn judge_argv(&self, argv: &[String], workspace: &Workspace) -> Decision {
        self.judge_parts(shell::split_argv(argv, Some(workspace.root())), workspace, RiskLevel::High.base_score())
    }

    pub(crate) fn judge_line(&self, line: &str, workspace: &Workspace, risk: f64) -> Decision {
        self.judge_parts(shell::split_in(line, Some(workspace.root())), workspace, risk)
    }

    fn judge_parts(&self, parsed: Result<Vec<SimpleCommand>, ShellError>, ws: &Workspace, risk: f64) -> Decision {
        let floor =
            if self.configured_default() == Some(DecisionKind::Deny) { DecisionKind::Deny } else { DecisionKind::Ask };
        let parts = match parsed {
            Ok(parts) => parts,
            Err(ShellError::Unparseable(reason)) => {
                return Decision::new(
                    floor,
                    "unparseable_command",
                    risk,
                    format!("The command line cannot be judged ({reason}), so it is never allowed on its own."),
                );
            }
        };
        let mut cwd = Cwd::Known(PathBuf::new());
        let mut changed = None;
        let verdicts: Vec<Verdict> = parts
            .iter()
            .map(|part| {
                let mut verdict = self.judge_part(part, &mut cwd, ws, floor);
                if let Some(earlier) = &changed
                    && reads_project_configuration(part)
                {
                    verdict.raise(DecisionKind::Ask, "repository_config", || {
                        format!(
                            "`{}` reads `package.json` or cargo's configuration, which `{earlier}` earlier on the line \
                             may change, so what it runs cannot be known in advance.",
                            shown(part)
                        )
                    });
                }
                if changed.is_none() && changes_project_configuration(part) {
                    changed = Some(shown(part));
                }
                verdict
            })
            .collect();
        let Some(best) = verdicts.iter().enumerate().fold(None, |best: Option<usize>, (i, v)| match best {
            Some(b) if verdicts[b].kind >= v.kind => Some(b),
            _ => Some(i),
        }) else {
            return Decision::new(
                floor,
                "default:shell",
                risk,
                "The command line runs no program; shell commands need approval by default.",
            );
        };
        let mut reasons = vec![verdicts[best].reason.clone()];
        reasons.extend(
            verdicts
                .iter()
                .enumerate()
                .filter(|(i, v)| *i != best && v.kind != DecisionKind::Allow)
                .map(|(_, v)| v.reason.clone())
                .take(4),
        );
        let mut decision = Decision::new(verdicts[best].kind, verdicts[best].rule.clone(), risk, String::new());
        decision.reasons = reasons;
        decision
    }

    fn judge_part(&self, cmd: &SimpleCommand, cwd: &mut Cwd, ws: &Workspace, floor: DecisionKind) -> Verdict {
        self.judge_with_nested(cmd, cwd, ws, floor, 0)
    }

    /// Judges `cmd` and every command it runs besides itself ([`nested`]: a launcher's
    /// program, a subcommand's canonical spelling, `package.json` scripts), each as a part of
    /// its own; the strictest decides. `depth`: how many commands `cmd` is nested in.
    fn judge_with_nested(
        &self,
        cmd: &SimpleCommand,
        cwd: &mut Cwd,
        ws: &Workspace,
        floor: DecisionKind,
        depth: usize,
    ) -> Verdict {
        let before = cwd.clone();
        let dir = match &before {
            Cwd::Known(rel) => Some(ws.root().join(rel)),
            Cwd::Unknown => None,
        };
        let mut verdict = self.judge_part_itself(cmd, cwd, ws, floor);
        let shown = shown(cmd);
        let (list, unknown) = nested(cmd, dir.as_deref(), ws.root());
        if let Some(reason) = unknown {
            verdict.raise(DecisionKind::Ask, "runs_other_code", || format!("`{shown}`: {reason}."));
        }
        if !list.is_empty() && depth + 1 >= MAX_NESTED {
            verdict.raise(DecisionKind::Ask, "runs_other_code", || {
                format!("`{shown}` runs commands nested more than {MAX_NESTED} levels deep.")
            });
            return verdict;
        }
        for item in list {
            let (parsed, mut inner) = match item.run {
                Run::Argv { words, dynamic } => {
                    (shell::split_launched(&words, &dynamic, &cmd.env, Some(ws.root())), before.clone())
                }
                Run::Line { text, dir } => {
                    let cwd = match dir {
                        LineDir::Same => before.clone(),
                        LineDir::Inside(rel) => Cwd::Known(rel),
                        LineDir::Outside => Cwd::Unknown,
                    };
                    (shell::split_in(&text, Some(ws.root())), cwd)
                }
            };
            let parts = match parsed {
                Ok(parts) => parts,
                Err(ShellError::Unparseable(reason)) => {
                    verdict.raise(floor, "unparseable_command", || {
                        format!("`{shown}`: {}, which cannot be judged ({reason}).", item.what)
                    });
                    continue;
                }
            };
            for part in &parts {
                let inner_verdict = self.judge_with_nested(part, &mut inner, ws, floor, depth + 1);
                verdict.raise(inner_verdict.kind, &inner_verdict.rule, || {
                    format!("`{shown}`: {}; {}", item.what, inner_verdict.reason)
                });
            }
        }
        verdict
    }

    /// Judges `cmd` alone.
    fn judge_part_itself(&self, cmd: &SimpleCommand, cwd: &mut Cwd, ws: &Workspace, floor: DecisionKind) -> Verdict {
        let shown = shown(cmd);
        let mut verdict = match CommandView::new(cmd) {
            None => Verdict {
                kind: DecisionKind::Allow,
                rule: "redirect_only".into(),
                reason: format!("`{shown}` only redirects."),
            },
            Some(view) => match self.strictest_rule(&view) {
                Some((rule, Match::Sure)) => Verdict {
                    kind: rule.decision,
                    rule: rule.name.clone(),
                    reason: format!("`{shown}`: policy rule `{}` {} it.", rule.name, verb(rule.decision)),
                },
                Some((rule, Match::AsIfMatched)) => Verdict {
                    kind: rule.decision,
                    rule: UNKNOWN_OPTION_RULE.into(),
                    reason: as_if_matched(&shown, &view, rule),
                },
                None => Verdict {
                    kind: floor,
                    rule: "default:shell".into(),
                    reason: format!("No rule covers `{shown}`; shell commands need approval by default."),
                },
            },
        };
        // A rule may allow `git **`; what git prints from history is not known to redaction.
        if verdict.kind == DecisionKind::Allow
            && let Some(git) =
                prints_history(&cmd.program, cmd.argv.get(1..).unwrap_or(&[]), cmd.dynamic.get(1..).unwrap_or(&[]))
            && repository_reachable(ws.root())
        {
            verdict.raise(DecisionKind::Ask, "git_history", || {
                format!(
                    "`{shown}`: `{git}` can print old versions of secret files from the repository's history or \
                     index, which output redaction does not know; no rule allows it."
                )
            });
        }
        if verdict.kind == DecisionKind::Allow {
            let dir = match cwd {
                Cwd::Known(rel) => Some(ws.root().join(rel)),
                Cwd::Unknown => None,
            };
            let args = cmd.argv.get(1..).unwrap_or(&[]);
            if log_shows_default_notes(&cmd.program, args, cmd.dynamic.get(1..).unwrap_or(&[]), dir.as_deref()) {
                verdict.raise(DecisionKind::Ask, "git_history", || {
                    format!(
                        "`{shown}`: this repository has notes, which `git log` shows by default and which can hold \
                         old versions of secret files; use `--oneline`, `--format` or `--no-notes`."
                    )
                });
            }
        }
        // A rule may allow `git **`; the repository's own configuration or hooks can make an
        // ordinary `git status` or `git commit` run a program.
        if verdict.kind == DecisionKind::Allow {
            let dir = match cwd {
                Cwd::Known(rel) => Some(ws.root().join(rel)),
                Cwd::Unknown => None,
            };
            if let Some(reason) = repository_runs_programs(
                &cmd.program,
                cmd.argv.get(1..).unwrap_or(&[]),
                cmd.dynamic.get(1..).unwrap_or(&[]),
                dir.as_deref(),
            ) {
                verdict.raise(DecisionKind::Ask, "repository_config", || format!("`{shown}`: {reason}"));
            }
        }
        if let Some(reason) = runs_other_code(cmd, ws) {
            verdict.raise(DecisionKind::Ask, "runs_other_code", || format!("`{shown}`: {reason}"));
        }
        let args = cmd.argv.iter().zip(&cmd.dynamic).skip(1);
        if cmd.program == "git" {
            // `git show HEAD:.env`: the path after a revision's colon is a file too.
            for (arg, _) in args.clone().filter(|(a, dynamic)| !**dynamic && !a.starts_with('-')) {
                if let Some((_, path)) = arg.split_once(':')
                    && !path.is_empty()
                    && !path.starts_with('/')
                {
                    check_path(&mut verdict, path, Access::Read, &Cwd::Known(PathBuf::new()), ws);
                }
            }
        }
        if let Some((arg, _)) = args.clone().find(|(_, dynamic)| **dynamic) {
            verdict.raise(DecisionKind::Ask, "dynamic_argument", || {
                format!("`{shown}`: `{arg}` is expanded at run time, so what it names cannot be checked.")
            });
        }
        if let Some((name, _)) = cmd.env.iter().find(|(name, value)| env_is_risky(name, value)) {
            verdict.raise(DecisionKind::Ask, "env_assignment", || {
                format!("`{shown}` runs with `{name}` set, which can change what runs.")
            });
        }
        for (arg, _) in args.filter(|(_, dynamic)| !**dynamic) {
            if let Some(path) = path_candidate(arg)
                && (looks_like_path(path) || matches!(cwd, Cwd::Unknown) || exists_in(path, cwd, ws))
            {
                check_path(&mut verdict, path, Access::Read, cwd, ws);
            }
            // Parts of one word that a program splits itself (`dd if=.env`, `a,.env`), judged
            // as `[[tool]]` values are (`crate::named_paths`): when they exist or are secret.
            for part in path_parts(arg).into_iter().filter(|p| *p != arg.as_str() && !p.starts_with('-')) {
                if is_secret_path(Path::new(part)) || exists_in(part, cwd, ws) {
                    check_path(&mut verdict, part, Access::Read, cwd, ws);
                }
            }
        }
        for input in &cmd.inputs {
            check_path(&mut verdict, input, Access::Read, cwd, ws);
        }
        for output in cmd.redirects.iter().filter(|o| !DEVICES.contains(&o.as_str())) {
            check_path(&mut verdict, output, Access::Write, cwd, ws);
            verdict.raise(DecisionKind::Ask, "output_redirect", || {
                format!("`{shown}` writes to `{output}` through a redirection.")
            });
        }
        if matches!(cmd.program.as_str(), "cd" | "pushd" | "popd") {
            // Only a first `cd` from the workspace root is followed: after `cd a || cd b` or a
            // `cd` in a subshell, which directory later commands run in depends on what
            // succeeded, so it is unknown (and relative paths ask).
            let from_root = matches!(cwd, Cwd::Known(rel) if rel.as_os_str().is_empty());
            *cwd = if from_root { next_cwd(cmd, cwd, ws) } else { Cwd::Unknown };
        }
        verdict
    }

    /// The strictest matching `argv` rule and how it matched; among equals a sure match
    /// wins, then the first.
    fn strictest_rule(&self, view: &CommandView<'_>) -> Option<(&ArgvRule, Match)> {
        let mut best: Option<(&ArgvRule, Match)> = None;
        for rule in &self.argv_rules {
            let Some(how) = rule.matches(view) else { continue };
            let better = best.is_none_or(|(b, b_how)| {
                rule.decision > b.decision
                    || (rule.decision == b.decision && b_how == Match::AsIfMatched && how == Match::Sure)
            });
            if better {
                best = Some((rule, how));
            }
        }
        best
    }
}

/// Files whose content decides what a package manager or cargo runs.
const PROJECT_CONFIGURATION: &[&str] = &["package.json", ".npmrc"];

/// Whether `cmd` may change a file listed in [`PROJECT_CONFIGURATION`] or cargo's
/// configuration: it names one (as an argument or a redirection, or in a word expanded at
/// run time) or edits the package (`npm pkg`, `npm set-script`).
fn changes_project_configuration(cmd: &SimpleCommand) -> bool {
    let named = cmd.argv.iter().skip(1).chain(&cmd.redirects).any(|word| {
        let value = word.rsplit('=').next().unwrap_or(word);
        let base = value.rsplit('/').next().unwrap_or(value);
        PROJECT_CONFIGURATION.contains(&base) || value.contains(".cargo")
    });
    let edits = matches!(cmd.program.as_str(), "npm" | "pnpm" | "yarn" | "bun")
        && cmd.argv.iter().skip(1).any(|a| a == "pkg" || a == "set-script");
    named || edits || cmd.dynamic.iter().any(|d| *d) && !cmd.argv.is_empty()
}

/// Whether `cmd` reads a file listed in [`PROJECT_CONFIGURATION`] to decide what it runs.
fn reads_project_configuration(cmd: &SimpleCommand) -> bool {
    matches!(cmd.program.as_str(), "npm" | "pnpm" | "yarn" | "bun" | "cargo")
}

/// The rule reported when a deny or ask rule applies because the subcommand cannot be known.
const UNKNOWN_OPTION_RULE: &str = "unknown_option_before_subcommand";

/// Why `rule` applies to a command whose subcommand cannot be known.
fn as_if_matched(shown: &str, view: &CommandView<'_>, rule: &ArgvRule) -> String {
    let decision = if rule.decision == DecisionKind::Deny { "deny" } else { "ask" };
    let (why, word) = view.unsure_word().unwrap_or((Unsure::UnknownOption, ""));
    let program = view.program;
    let cause = match why {
        Unsure::UnknownOption => format!("`{program} {word}` is not a global option Steward knows"),
        Unsure::Dynamic => format!("`{word}` is expanded at run time where `{program}`'s options or subcommand stand"),
        Unsure::NoTable => {
            format!("Steward knows no global options of `{program}` and `{word}` comes before its first operand")
        }
    };
    format!(
        "`{shown}`: {cause}, so which word is the subcommand cannot be known; the {decision} rule `{}` applies as \
         if it matched.",
        rule.name
    )
}

fn verb(kind: DecisionKind) -> &'static str {
    match kind {
        DecisionKind::Allow => "allows",
        DecisionKind::Ask => "requires approval for",
        DecisionKind::Deny => "denies",
    }
}

/// The command as shown in reasons: quoted argv, at most [`SHOWN_CHARS`] chars.
fn shown(cmd: &SimpleCommand) -> String {
    if cmd.argv.is_empty() {
        return format!("> {}", cmd.redirects.first().or(cmd.inputs.first()).map_or("", String::as_str));
    }
    let text = shell_words::join(&cmd.argv);
    if text.chars().count() <= SHOWN_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(SHOWN_CHARS).collect();
    cut.push('…');
    cut
}

/// The part of an argument that may be a path: the whole word, or the value of
/// `--option=value`; other options are not paths.
fn path_candidate(arg: &str) -> Option<&str> {
    let value = if arg.starts_with('-') { arg.split_once('=')?.1 } else { arg };
    (!value.is_empty()).then_some(value)
}

/// Words that read as paths without looking at the filesystem.
fn looks_like_path(text: &str) -> bool {
    text.contains('/') || text.starts_with('.') || text.starts_with('~') || is_secret_path(Path::new(text))
}

fn exists_in(text: &str, cwd: &Cwd, ws: &Workspace) -> bool {
    match cwd {
        Cwd::Known(rel) => std::fs::symlink_metadata(ws.root().join(rel).join(text)).is_ok(),
        Cwd::Unknown => false,
    }
}

/// Checks one path; secret and `deny_path` paths deny, anything else refused asks.
fn check_path(verdict: &mut Verdict, text: &str, access: Access, cwd: &Cwd, ws: &Workspace) {
    let given = Path::new(text);
    let joined = match cwd {
        _ if given.is_absolute() => text.to_string(),
        Cwd::Known(rel) => rel.join(given).to_string_lossy().into_owned(),
        Cwd::Unknown => {
            verdict.raise(DecisionKind::Ask, "workspace_boundary", || {
                format!("`{text}` is relative to a working directory outside the workspace or unknown.")
            });
            return;
        }
    };
    if let Err(err) = ws.resolve(&joined, access) {
        let kind = match err {
            PathError::Secret { .. }
            | PathError::SecretLink { .. }
            | PathError::Denied { .. }
            | PathError::DeniedLink { .. }
            | PathError::Protected { .. } => DecisionKind::Deny,
            _ => DecisionKind::Ask,
        };
        verdict.raise(kind, err.rule(), || format!("`{text}`: {err}."));
    }
}

/// Why a simple command may run code its rule cannot see, if it may: a program given by a
/// path inside the workspace (a script the repository ships, not the system's `cat`), a login
/// shell (it re-reads profiles that may export secrets, case B12), or an option that makes
/// the program run another command (`find -exec`, `git --upload-pack`, `tar --to-command` …).
/// Such a part never comes out allowed: at least ask.
fn runs_other_code(cmd: &SimpleCommand, ws: &Workspace) -> Option<String> {
    let first = cmd.argv.first()?;
    if first.contains('/') {
        let inside =
            !Path::new(first).is_absolute() || std::fs::canonicalize(first).is_ok_and(|p| p.starts_with(ws.root()));
        if inside {
            return Some(format!("`{first}` is a program inside the workspace, not the system's `{}`.", cmd.program));
        }
    }
    if crate::programs::is_shell(&cmd.program)
        && cmd
            .argv
            .iter()
            .skip(1)
            .any(|a| a == "--login" || a == "-l" || (a.starts_with('-') && !a.starts_with("--") && a.contains('l')))
    {
        return Some("a login shell re-reads profile files, which may export secrets.".into());
    }
    const EXEC_SUBCOMMANDS: &[(&str, &[&str])] = &[(
        "git",
        &[
            "filter-branch",
            "bisect",
            "daemon",
            "submodule",
            "difftool",
            "mergetool",
            "instaweb",
            "send-email",
            "for-each-repo",
            "credential",
            "p4",
            "svn",
            "cvsimport",
            "cvsserver",
            "cvsexportcommit",
            "archimport",
            "quiltimport",
            "shell",
            "remote-ext",
            "remote-fd",
            "web--browse",
        ],
    )];
    if let Some(option) =
        option_runs_program(&cmd.program, cmd.argv.get(1..).unwrap_or(&[]), cmd.dynamic.get(1..).unwrap_or(&[]))
    {
        return Some(format!("`{option}` makes `git` run another program or changes what it runs."));
    }
    if let Some(reason) = crate::programs::scripts::script_runs_other_code(
        &cmd.program,
        cmd.argv.get(1..).unwrap_or(&[]),
        cmd.dynamic.get(1..).unwrap_or(&[]),
    ) {
        return Some(format!("`{}`: {reason}.", cmd.program));
    }
    if let Some(reason) = crate::programs::exec_options::exec_option(&cmd.program, cmd.argv.get(1..).unwrap_or(&[])) {
        return Some(format!("{reason}."));
    }
    let args: Vec<&str> = cmd.argv.iter().skip(1).map(String::as_str).collect();
    for (program, subcommands) in EXEC_SUBCOMMANDS {
        if cmd.program == *program
            && let Some(sub) = args.iter().find(|a| subcommands.contains(a))
        {
            return Some(format!("`{program} {sub}` runs other commands."));
        }
    }
    None
}

/// The working directory after `cd` / `pushd` / `popd`.
fn next_cwd(cmd: &SimpleCommand, cwd: &Cwd, ws: &Workspace) -> Cwd {
    let target = cmd.argv.iter().zip(&cmd.dynamic).skip(1).find(|(a, _)| !a.starts_with('-') || a.as_str() == "-");
    let (Some((target, false)), "cd" | "pushd", Cwd::Known(rel)) = (target, cmd.program.as_str(), cwd) else {
        return Cwd::Unknown;
    };
    if target == "-" {
        return Cwd::Unknown;
    }
    let given = Path::new(target.as_str());
    let joined = if given.is_absolute() { given.to_path_buf() } else { rel.join(given) };
    match ws.resolve(&joined.to_string_lossy(), Access::Read) {
        Ok(path) => Cwd::Known(PathBuf::from(path.rel)),
        Err(_) => Cwd::Unknown,
    }
}
