//! The `[policy]` configuration section (SPEC C1), as read from TOML.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use steward_protocol::DecisionKind;

/// Lifetime of approval decisions and grants when `token_ttl_seconds` is unset: 8 hours.
pub const DEFAULT_TOKEN_TTL_SECONDS: u64 = 8 * 3600;

/// How long an approval request waits when `approval_timeout_seconds` is unset: 30 minutes.
pub const DEFAULT_APPROVAL_TIMEOUT_SECONDS: u64 = 30 * 60;

/// The `[policy]` table. Every field is optional; unknown fields are refused.
///
/// ```toml
/// [policy]
/// default = "ask"                      # optional; otherwise by risk level
/// allowed_actions = ["read", "git_*"]  # tool-name globs allowed without asking
/// blocked_actions = ["delete"]         # tool-name globs always denied
/// deny_path = ["secrets/", "**/*.sqlite"]  # gitignore-style, workspace-relative
/// untrusted_paths = ["vendor", "**/node_modules"]  # reading these taints the run
/// max_tool_calls_per_run = 50
/// token_ttl_seconds = 1800             # lifetime of approval decisions and grants, s
/// approval_timeout_seconds = 1800      # how long an approval request stays open, s
///
/// [[policy.rule]]
/// name = "docs-edit"
/// tool = "edit"
/// path = ["docs/**"]
/// decision = "allow"
///
/// [policy.credential_scope]            # env vars a tool may receive; none by default
/// "gh_*" = ["GH_TOKEN"]
///
/// [[policy.context_rules]]
/// name = "web-then-write"
/// tool = "edit"
/// requires_human_approval = true
/// when_tainted = true                  # only once the run read untrusted content
/// ```
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Deserialize, Serialize, Default, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Decision when no rule and no allow-list entry matches; `None` means by risk level
    /// (safe/low → allow, medium and above → ask).
    pub default: Option<DecisionKind>,
    /// Tool-name globs allowed without asking (after `blocked_actions` and rules).
    pub allowed_actions: Vec<String>,
    /// Tool-name globs that are always denied.
    pub blocked_actions: Vec<String>,
    /// Gitignore-style globs over workspace-relative paths that no tool may touch.
    pub deny_path: Vec<String>,
    /// Most tool calls one run may propose; `None` for the built-in default.
    pub max_tool_calls_per_run: Option<u32>,
    /// Lifetime of approval decisions and grants, in seconds.
    #[cfg_attr(feature = "schema", schemars(extend("default" = DEFAULT_TOKEN_TTL_SECONDS)))]
    pub token_ttl_seconds: Option<u64>,
    /// How long an approval request waits for the owner, in seconds.
    #[cfg_attr(feature = "schema", schemars(extend("default" = DEFAULT_APPROVAL_TIMEOUT_SECONDS)))]
    pub approval_timeout_seconds: Option<u64>,
    /// `[[policy.rule]]` entries.
    #[serde(rename = "rule")]
    pub rules: Vec<RuleConfig>,
    /// Tool name or glob → names of environment variables that tool may receive. A tool
    /// matched by no entry receives none.
    pub credential_scope: BTreeMap<String, Vec<String>>,
    /// `[[policy.context_rules]]`: escalations that depend on the run, not the call.
    pub context_rules: Vec<ContextRule>,
    /// In a run that has read untrusted content, an allowed call whose risk score is at least
    /// this (in `[0, 1]`) needs approval instead. `None` means 0.5.
    #[cfg_attr(feature = "schema", schemars(extend("default" = crate::DEFAULT_TAINT_ESCALATION_RISK)))]
    pub taint_escalation_risk: Option<f64>,
    /// Globs over workspace-relative paths whose content is not the user's (vendored code,
    /// downloads, `node_modules`): reading a matching file (or a directory something matching
    /// may lie under) taints the run like MCP output. A path matches when it or one of its
    /// parent directories matches (`vendor` covers `vendor/a/b.c`); `/` is matched literally.
    pub untrusted_paths: Vec<String>,
    /// `[policy.risk]`: what the risk score counts.
    pub risk: RiskConfig,
}

/// `[policy.risk]`: the lists the risk score reads a call's arguments with. Every
/// field is optional; an empty list is taken as written (nothing matches).
///
/// The score of a call is the sum of these contributions, clamped to `[0, 1]`:
///
/// | factor | adds | when |
/// |---|---|---|
/// | `risk_level` | 0, 0.2, 0.5, 0.8, 1 | the tool's level: safe, low, medium, high, dangerous |
/// | `writes` | 0.1 | the tool changes files or state |
/// | `protected_path` | 0.3 | a path the call touches matches `protected_paths` or is a secret path |
/// | `many_files` | 0.1 | it touches more than `many_files` paths |
/// | `deletes` | 0.2 | it deletes files (the `delete` tool, a patch removing a file) |
/// | `outside_source_paths` | 0.1 | a writing call touches a path outside `source_paths` |
/// | `destructive_option` | 0.2 | a `shell_command` part has an option of `destructive_options` |
/// | `large_change` | 0.1 | a writing call's change is more than `large_change_lines` lines |
/// | `tainted` | 0.1 | the run has read untrusted content |
///
/// ```toml
/// [policy.risk]
/// protected_paths = [".git", ".steward", ".github/workflows"]
/// source_paths = ["src", "tests", "docs"]
/// destructive_options = ["--force", "-f", "--hard", "--delete"]
/// many_files = 10
/// large_change_lines = 200
/// ```
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Deserialize, Serialize, Default, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RiskConfig {
    /// Globs over workspace-relative paths (a path matches when it or a parent directory
    /// matches; `/` only literally). Default: [`DEFAULT_PROTECTED_PATHS`].
    pub protected_paths: Option<Vec<String>>,
    /// Globs of the folders where changes are ordinary (same matching). Default:
    /// [`DEFAULT_SOURCE_PATHS`].
    pub source_paths: Option<Vec<String>>,
    /// Options that make a command destructive, as a program reads them (`-rf` has `-r` and
    /// `-f`; `--force-with-lease` is not `--force`). Default: [`DEFAULT_DESTRUCTIVE_OPTIONS`].
    pub destructive_options: Option<Vec<String>>,
    /// More paths than this in one call count as many (default 10).
    pub many_files: Option<usize>,
    /// More changed lines than this in one writing call count as a large change (default 200).
    pub large_change_lines: Option<usize>,
}

/// Default of `[policy.risk] protected_paths`.
pub const DEFAULT_PROTECTED_PATHS: &[&str] = &[".git", ".steward", ".github", ".gitlab-ci.yml", ".env*", "**/.env*"];

/// Default of `[policy.risk] source_paths`.
pub const DEFAULT_SOURCE_PATHS: &[&str] =
    &["src", "lib", "app", "pkg", "cmd", "crates", "packages", "tests", "test", "docs", "examples", "benches"];

/// Default of `[policy.risk] destructive_options`.
pub const DEFAULT_DESTRUCTIVE_OPTIONS: &[&str] =
    &["--force", "-f", "--hard", "-D", "--delete", "--prune", "--no-verify", "--mirror"];

/// One `[[policy.context_rules]]` entry (`context_rules`). It only ever escalates:
/// an allowed call of a matching tool becomes *ask*; deny and ask stay as they are.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ContextRule {
    /// Rule name, reported as the deciding rule.
    pub name: String,
    /// Tool registry name or glob.
    pub tool: String,
    /// Allowed calls of the tool need a human's approval.
    #[serde(default)]
    pub requires_human_approval: bool,
    /// Apply only in runs that have read untrusted content (web pages, e-mail, PR bodies,
    /// MCP output).
    #[serde(default)]
    pub when_tainted: bool,
}

/// An example command for a rule's `match` / `not_match` lists: an argv array
/// (`["git", "push"]`) or a shell command line (`"git -C repo push origin"`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(untagged)]
pub enum ArgvExample {
    /// An argv that is executed directly (wrappers and `sh -c` are still opened).
    Argv(Vec<String>),
    /// A command line, parsed like `shell_command` input.
    Line(String),
}

impl std::fmt::Display for ArgvExample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArgvExample::Argv(argv) => write!(f, "{argv:?}"),
            ArgvExample::Line(line) => write!(f, "{line:?}"),
        }
    }
}

/// One `[[policy.rule]]`: a decision for calls of matching tools, paths, or shell commands.
///
/// # Tool and path rules
///
/// `tool` is a glob over tool names; `path` (optional) globs over the workspace-relative
/// paths of the call's path inputs. Among all matching rules the strictest decision wins
/// (`deny` > `ask` > `allow`), and it is reported by name.
///
/// # Shell command rules (`argv`)
///
/// A rule with `argv` judges the simple commands of a `shell_command` call (its
/// `tool` must match `shell_command`). The command line is first split into simple commands
/// (`;` `&&` `||` `|` `&` newlines, `$(…)`, backquotes, `<(…)`, `( … )`, `{ …; }`), and each
/// is normalised: `NAME=value` prefixes and transparent wrappers (`env`, `time`, `nohup`,
/// `command`, `exec`, `nice`, `timeout`, `xargs`, …) removed, `sh|bash|zsh|dash -c SCRIPT`
/// opened recursively, `\rm` / `'rm'` / `/bin/rm` reduced to `rm`. Every part must be
/// allowed for the line to be allowed; the strictest part decides; a part no rule covers
/// asks (`default:shell`); a line that cannot be parsed asks (`unparseable_command`).
///
/// `argv` is matched element by element against the parsed argv, never as a string prefix:
///
/// - the first element matches the program's base name (`rm` matches `/bin/rm` and `\rm`);
/// - `*` matches exactly one element, `**` (last element only) any number, including none;
/// - any other element is a glob over that one element (globset syntax, `/` matched
///   literally): `--format=*`, `src/**`, `*.tmp`;
/// - global options before the subcommand are skipped for the programs Steward has option
///   tables for (git, cargo, rustup, npm, npx, pnpm, yarn, bun, pip, uv, python, docker,
///   podman, kubectl, helm, terraform, tofu, make, go, gh, systemctl; each from its manual):
///   `git -C dir push`, `cargo +nightly --locked publish`, `npm --prefix=x publish`,
///   `kubectl -nprod delete` match `[PROGRAM, SUBCOMMAND, "**"]`; an option that changes
///   what runs (`git -c`, `cargo --config`, `npm --userconfig`, `make -f`, `make VAR=x`, …)
///   keeps every allow rule from matching. For `python`, `-m MODULE` and `-c CODE` stand
///   where a subcommand would (`["python3", "-m", "pip", "**"]`);
/// - when the subcommand cannot be known (an option the program's table does not list, a
///   word expanded at run time among the options, or any option before the first operand
///   of a program with no table), a deny or ask rule about a subcommand (its second element
///   is a word not starting with `-`, or `python -m`/`-c`) applies as if it matched when
///   its words fit from any later position (`cargo --frobnicate publish`), reported as
///   `unknown_option_before_subcommand`; allow rules need a sure match;
/// - deny and ask rules match case-insensitively and treat words expanded at run time
///   (`$X`, `$(…)`, globs) as matching any element; allow rules match case-sensitively and
///   let such words match only `*` / `**`;
/// - a deny or ask rule with an element that is an option (starts with `-`, is not `-` or
///   `--`, and has no glob character before any `=`), or with two or more other elements
///   after the program (`["kubectl", "delete", "namespace", "**"]`), also matches by
///   **option set**. The rule reads as "the program (and subcommand) with at least these
///   options, and these other elements, in this order, as its operands": `["rm", "-rf",
///   "**"]` is rm with the
///   options `r` and `f` and any operands; `["git", "push", "--force", "**"]` is git push
///   with a force in any spelling; `["curl", "-X", "POST", "**"]` is curl with `-X` whose
///   value is `POST`; `["chmod", "-R", "777", "**"]` is chmod with `-R` whose first operand
///   is `777`. Both the rule and the command are read as the program reads its arguments:
///   short options group (`-rfv`) and take attached values (`-XPOST`); long options take
///   `=value` or the next word and may be abbreviated (`--recur`; a prefix of several long
///   options is each of them); options after operands count (GNU permutation) but nothing
///   after `--` is an option; spellings of one option are one option, and some options and
///   operands imply others, per the command's table written from its manual (rm, chmod,
///   chown, chgrp, cp, mv, git push/clean/reset/checkout/switch/branch, curl, rsync,
///   docker and podman rm/rmi/run/prune, kubectl delete, find, npm and pnpm publish): `-R` is
///   `--recursive`, `git push origin +main`, `--force-with-lease` and `--mirror` are force
///   pushes, `curl -d`/`--json`/`-F` set `--request=POST`, `git branch -D` is `--delete
///   --force`. Where the arity of an option is not known (no table, or an option the table
///   does not list) both readings count: its next word may be its value or an operand; a
///   group of letters may also be one option (`-delete`) with one dash or two
///   (`--auto-approve`); a word expanded at run time may be any option. Extra options in
///   the command never prevent the match; the rule's other elements must fit the command's
///   operands in order, with `**` allowing more (without it, exactly as many). The values
///   of the program's global options (`kubectl --context prod`) may stand anywhere, so
///   `["kubectl", "--context", "prod", "delete", "**"]` matches `kubectl delete pod x
///   --context prod`. Options are compared case-insensitively like every strict element
///   (`git clean -x` meets a rule on `-X`). Allow rules never match this way: they match
///   only as written, and so do deny and ask rules with no option and fewer than two other
///   elements (`["ls", "*"]`, `["git", "push", "**"]`).
///
/// Independently of rules, a part escalates: arguments or redirections naming a secret
/// path or a `deny_path` → deny; escaping the workspace, ignored paths, words expanded at
/// run time, output redirection to a file, risky environment assignments (`PATH=`,
/// `LD_PRELOAD=`, `GIT_*=`, …) → at least ask. A git command that can print file contents
/// from the repository's history or index (`git show`, `git log -p`, `git diff HEAD~1`, a
/// plain `git diff`, `git blame`, `git grep`, `git cat-file`, `git archive`, an alias, …)
/// is never allowed by a rule while a repository is reachable from the workspace: it asks
/// (`git_history`), because output redaction only knows the secret files' current lines.
///
/// `match` and `not_match` list examples (argv arrays or command lines) checked when the
/// policy loads: a `match` example the rule does not match, or a `not_match` example it
/// does, is a configuration error naming the rule and the example.
///
/// ```toml
/// [[policy.rule]]
/// name = "read-only-git"
/// tool = "shell_command"
/// argv = ["git", "diff", "**"]
/// decision = "allow"
/// match = [["git", "diff"], "git -C sub diff HEAD~1 -- src"]
/// not_match = ["git difftool -y -x sh"]
///
/// [[policy.rule]]
/// name = "no-force-delete"
/// tool = "shell_command"
/// argv = ["rm", "-rf", "**"]
/// decision = "deny"
/// match = ["bash -lc 'rm -rf ./dist'", "FOO=1 /bin/rm -rf x", "rm x --recursive -f"]
/// not_match = ["rm -r x", "rm -r -- -f"]
/// ```
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Rule name, reported as the deciding rule.
    pub name: String,
    /// Tool registry name or glob (`git_*`, `*`).
    pub tool: String,
    /// Globs over the workspace-relative paths of the call's path inputs (globset syntax,
    /// `/` only matched literally: `src/*.rs` is one level, `src/**` any depth). When given,
    /// the call must have at least one path input and every one must match some glob.
    #[serde(default)]
    pub path: Vec<String>,
    /// Per-element globs over the parsed argv of each simple command of a `shell_command`
    /// call (see above). Empty for tool and path rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
    /// The decision.
    pub decision: DecisionKind,
    /// Examples the rule must match (checked by [`Policy::new`](crate::Policy::new)).
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<ArgvExample>,
    /// Examples the rule must not match (checked by [`Policy::new`](crate::Policy::new)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_match: Vec<ArgvExample>,
    /// Seconds an approval request for a call this rule matches stays open, instead of
    /// `approval_timeout_seconds` (per-action expiry; at least 1). It applies whatever
    /// decided the call, as soon as the rule matches it (its tool and paths, or its `argv` one
    /// of the line's simple commands); among several, the shortest wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_ttl_seconds: Option<u64>,
}
