//! Git commands that can print file contents from a repository's history or index (case
//! B09): `git log -p`, `git show HEAD~1:.env`, `git diff HEAD~1`, `git blame`, `git grep`,
//! `git cat-file -p` … Output redaction knows the *current* lines of the workspace's secret
//! files ([`crate::secret_file_values`]), never the old versions only history holds, so such a
//! command is never allowed by a rule while git can find a repository (see
//! [`repository_reachable`]); the shell judge makes it ask (rule `git_history`).
//!
//! Classification is by the parsed argv, after git's global options (git(1) "OPTIONS"), and
//! fails closed: an unknown subcommand (an alias, a `git-*` program from `PATH`), an unknown
//! global option, or a word computed at run time counts as printing history. Subcommands and
//! options follow git's manuals (git-log(1), git-diff(1) "DIFF FORMATTING", git-stash(1),
//! git-for-each-ref(1) `%(raw)` …).

use std::ffi::OsStr;
use std::path::Path;

use crate::programs::{option_name, subcommand_args};

/// Subcommands that print file contents from history, objects or the index, whatever their
/// options: `show` (blobs, `REV:path`, commit diffs), `blame`, `grep` (also `--cached` and
/// revisions), `cat-file`, exporters (`archive`, `bundle`, `fast-export`, `format-patch`,
/// `send-email`, `request-pull`, `pack-objects`, `upload-pack`, `upload-archive`), and
/// `range-diff`, `merge-tree`, `unpack-file`, `rerere` (`rerere diff`), plus the credential
/// helpers (they print stored passwords).
const ALWAYS: &[&str] = &[
    "show",
    "blame",
    "annotate",
    "pickaxe",
    "grep",
    "cat-file",
    "archive",
    "bundle",
    "fast-export",
    "format-patch",
    "send-email",
    "request-pull",
    "pack-objects",
    "upload-pack",
    "upload-archive",
    "http-backend",
    "range-diff",
    "merge-tree",
    "unpack-file",
    "rerere",
    "credential",
    "credential-store",
    "credential-cache",
];

/// Subcommands that take log options (git-log(1)): they print contents only with a patch,
/// pickaxe or notes option ([`log_prints_content`]).
const LOG_LIKE: &[&str] = &["log", "whatchanged"];

/// Low-level diff commands: raw output (object ids) unless a patch option is given.
const RAW_DIFFS: &[&str] = &["diff-tree", "diff-index", "diff-files"];

/// Subcommands that never print file contents from history or the index themselves, with the
/// options (long names, and short letters that may be bundled: `-pv`) that make them do so.
/// Long options may be abbreviated (`--pat`); a prefix of a listed one counts.
const CONDITIONAL: &[(&str, &[&str], &str)] = &[
    ("status", &["--verbose"], "v"),
    ("commit", &["--verbose", "--patch", "--interactive", "--dry-run"], "vp"),
    ("add", &["--patch", "--interactive", "--edit"], "pie"),
    ("checkout", &["--patch"], "p"),
    ("reset", &["--patch"], "p"),
    ("restore", &["--patch"], "p"),
    ("branch", &[], ""),
    ("tag", &[], ""),
    ("for-each-ref", &[], ""),
    ("remote", &[], ""),
    ("rev-parse", &[], ""),
    ("rev-list", &[], ""),
    ("shortlog", &[], ""),
    ("describe", &[], ""),
    ("ls-files", &[], ""),
    ("ls-tree", &[], ""),
    ("ls-remote", &[], ""),
    ("config", &[], ""),
    ("fetch", &[], ""),
    ("pull", &[], ""),
    ("push", &[], ""),
    ("rm", &[], ""),
    ("mv", &[], ""),
    ("switch", &[], ""),
    ("merge", &[], ""),
    ("rebase", &["--show-current-patch"], ""),
    ("cherry-pick", &[], ""),
    ("revert", &[], ""),
    ("init", &[], ""),
    ("clone", &[], ""),
    ("show-ref", &[], ""),
    ("symbolic-ref", &[], ""),
    ("count-objects", &[], ""),
    ("gc", &[], ""),
    ("fsck", &[], ""),
    ("prune", &[], ""),
    ("clean", &[], ""),
    ("apply", &[], ""),
    ("am", &["--show-current-patch"], ""),
    ("worktree", &[], ""),
    ("help", &[], ""),
    ("version", &[], ""),
    ("var", &[], ""),
    ("check-ignore", &[], ""),
    ("check-attr", &[], ""),
    ("check-ref-format", &[], ""),
    ("check-mailmap", &[], ""),
    ("name-rev", &[], ""),
    ("merge-base", &[], ""),
    ("cherry", &[], ""),
    ("show-branch", &[], ""),
    ("sparse-checkout", &[], ""),
    ("maintenance", &[], ""),
    ("repack", &[], ""),
    ("pack-refs", &[], ""),
    ("verify-commit", &[], ""),
    ("verify-tag", &[], ""),
    ("update-index", &[], ""),
    ("update-ref", &[], ""),
    ("write-tree", &[], ""),
    ("commit-tree", &[], ""),
    ("hash-object", &[], ""),
    ("mktree", &[], ""),
    ("mktag", &[], ""),
    ("interpret-trailers", &[], ""),
    ("stripspace", &[], ""),
    ("column", &[], ""),
    ("bisect", &[], ""),
    ("submodule", &[], ""),
    ("difftool", &[], ""),
    ("mergetool", &[], ""),
];

/// Log and diff options that print file contents (patches, `--check` lines, notes blobs), or
/// answer whether a string ever occurred in a file (`-S`, `-G`: an oracle), or write output
/// elsewhere (`--output`). Exact names: git's revision parser does not abbreviate.
const PATCH_LONG: &[&str] = &[
    "--patch",
    "--unified",
    "--cc",
    "--dd",
    "--remerge-diff",
    "--diff-merges",
    "--combined-all-paths",
    "--patch-with-stat",
    "--patch-with-raw",
    "--word-diff",
    "--word-diff-regex",
    "--color-words",
    "--binary",
    "--function-context",
    "--check",
    "--submodule",
    "--output",
    "--notes",
    "--show-notes",
    "--standard-notes",
    "--ext-diff",
    "--textconv",
    "--pickaxe-regex",
    "--pickaxe-all",
    "--line-range",
];

/// Letters of short log/diff options that print contents: `-p`, `-u`, `-U<n>`,
/// `-L<range>:<file>`, `-S<string>`, `-G<regex>`, `-W`, `-c` (combined diff), `-m` (diffs of
/// merges; implies a patch since git 2.31). git groups short options (`-Rp` is `-R -p`), so
/// every letter of a group counts ([`short_group_prints_content`]).
const PATCH_SHORT: &str = "puULSGWcm";

/// Letters of short log/diff options whose value is any text attached to them
/// (`-O<orderfile>`, `-I<regex>`, `-X<dirstat>`; git-log(1), git-diff(1)): the rest of a
/// group after one of them is that value, not more options.
const TEXT_VALUE_SHORT: &str = "OIX";

/// Options of `git diff` that replace the patch with a summary (no file lines).
const SUMMARY_ONLY: &[&str] = &[
    "--stat",
    "--numstat",
    "--shortstat",
    "--dirstat",
    "--dirstat-by-file",
    "--cumulative",
    "--name-only",
    "--name-status",
    "--raw",
    "--summary",
    "--compact-summary",
    "--no-patch",
    "-s",
    "--quiet",
];

/// Global options git answers without running a subcommand.
const INFORMATIONAL: &[&str] = &["--version", "-v", "--help", "-h"];

/// If `program ARGS` is a git invocation that can print file contents from history or the
/// index, the subcommand as shown in a reason (`git log -p`, `git show`). `program` is the
/// resolved base name (`git`, or a dashed `git-log`); `args` are the words after it and
/// `dynamic[i]` says whether `args[i]` expands at run time.
///
/// `None` for other programs and for git invocations classified as harmless (`git status`,
/// `git log --oneline`, `git diff --stat`, `git diff --no-index` whose files the path checks
/// see). Anything that cannot be classified counts (fail closed).
pub(crate) fn prints_history(program: &str, args: &[String], dynamic: &[bool]) -> Option<String> {
    let (sub, rest, rest_dynamic) = if program == "git" {
        let (skip, risky) = subcommand_args(program, args, dynamic);
        let first = args.get(skip)?;
        if dynamic.get(skip).copied().unwrap_or(true) {
            return Some(format!("git {first}"));
        }
        if first.starts_with('-') {
            // An option `subcommand_args` does not know, or one git answers by itself.
            return (!INFORMATIONAL.contains(&option_name(first))).then(|| format!("git {first}"));
        }
        if risky.is_some() {
            // `-c`, `--config-env`, `--exec-path`: configuration or helpers we do not model.
            return Some(format!("git {first}"));
        }
        (first.as_str(), args.get(skip + 1..).unwrap_or(&[]), dynamic.get(skip + 1..).unwrap_or(&[]))
    } else if let Some(sub) = program.strip_prefix("git-") {
        (sub, args, dynamic)
    } else {
        return None;
    };
    let shown = |flag: Option<&str>| match flag {
        Some(flag) => format!("git {sub} {flag}"),
        None => format!("git {sub}"),
    };
    if let Some((arg, _)) = rest.iter().zip(rest_dynamic).find(|(_, d)| **d) {
        return Some(shown(Some(arg)));
    }
    if ALWAYS.contains(&sub) {
        return Some(shown(None));
    }
    if LOG_LIKE.contains(&sub) || RAW_DIFFS.contains(&sub) {
        return log_prints_content(rest).map(|flag| shown(Some(flag)));
    }
    match sub {
        "diff" => diff_prints_content(rest).map(|flag| shown(flag.as_deref())),
        "reflog" => match rest.first().map(String::as_str) {
            Some("expire" | "delete" | "exists") => None,
            _ => log_prints_content(rest).map(|flag| shown(Some(flag))),
        },
        "stash" => match rest.first().map(String::as_str) {
            // `stash show` prints a patch when `stash.showPatch` is set in the repository.
            Some("show") => Some(shown(Some("show"))),
            Some("list") => {
                log_prints_content(rest.get(1..).unwrap_or(&[])).map(|flag| format!("git stash list {flag}"))
            }
            Some("pop" | "apply" | "drop" | "clear" | "branch" | "create" | "store") => None,
            Some(word) if word != "push" && word != "save" && !word.starts_with('-') => Some(shown(Some(word))),
            _ => option_from(rest, &["--patch"], "p").map(|flag| shown(Some(flag))),
        },
        "notes" => rest.iter().any(|a| a == "show").then(|| shown(Some("show"))),
        _ => match CONDITIONAL.iter().find(|(name, _, _)| *name == sub) {
            Some((_, long, short)) => {
                // `--format=%(raw)` prints the object a ref points at, which may be a blob.
                if let Some(arg) = rest.iter().take_while(|a| *a != "--").find(|a| a.contains("%(raw")) {
                    return Some(shown(Some(arg)));
                }
                option_from(rest, long, short).map(|flag| shown(Some(flag)))
            }
            None => Some(shown(None)),
        },
    }
}

/// The first option (before `--`) of a parse-options command that is one of `long` (or an
/// abbreviation of one) or a short cluster containing a letter of `short`.
fn option_from<'a>(args: &'a [String], long: &[&str], short: &str) -> Option<&'a str> {
    args.iter().take_while(|a| *a != "--").map(String::as_str).find(|arg| {
        if let Some(name) = arg.strip_prefix("--") {
            let name = name.split_once('=').map_or(name, |(n, _)| n);
            !name.is_empty() && long.iter().any(|l| l.trim_start_matches('-').starts_with(name))
        } else if let Some(cluster) = arg.strip_prefix('-') {
            cluster.chars().any(|c| short.contains(c))
        } else {
            false
        }
    })
}

/// The first option of a log-like command (before `--` or `--end-of-options`) that prints
/// file contents; see [`PATCH_LONG`] and [`PATCH_SHORT`].
fn log_prints_content(args: &[String]) -> Option<&str> {
    args.iter().take_while(|a| *a != "--" && *a != "--end-of-options").map(String::as_str).find(|arg| {
        if arg.starts_with("--") {
            let name = option_name(arg);
            PATCH_LONG.contains(&name)
                || name == "--show-notes-by-default"
                || (matches!(name, "--format" | "--pretty") && arg.contains("%N"))
        } else {
            arg.strip_prefix('-').is_some_and(short_group_prints_content)
        }
    })
}

/// Whether a group of short log/diff options (the word after its `-`: `Rp`, `1p`, `RU3`,
/// `n5`) holds a letter of [`PATCH_SHORT`], read letter by letter up to the first letter of
/// [`TEXT_VALUE_SHORT`] (whose value the rest is). Letters with a numeric value (`-n5`,
/// `-l300`, `-M50%`, `-B/70%`) and digits (`-1`) are skipped, and a letter after them still
/// counts (fail closed: `-Bp` is `-B -p` to some git versions).
fn short_group_prints_content(group: &str) -> bool {
    for c in group.chars() {
        if PATCH_SHORT.contains(c) {
            return true;
        }
        if TEXT_VALUE_SHORT.contains(c) {
            return false;
        }
    }
    false
}

/// Whether `git diff ARGS` prints file lines: a patch option, or the default patch (the `-`
/// lines of a plain `git diff` come from the index, of `git diff REV` from history) not
/// replaced by a summary option. `Some(None)` when the default patch prints.
/// `--no-index` compares two files the path checks see.
fn diff_prints_content(args: &[String]) -> Option<Option<String>> {
    let options: Vec<&str> =
        args.iter().take_while(|a| *a != "--" && *a != "--end-of-options").map(String::as_str).collect();
    if options.contains(&"--no-index") {
        return None;
    }
    if let Some(flag) = log_prints_content(args) {
        return Some(Some(flag.to_string()));
    }
    let summary = options.iter().any(|a| a.starts_with('-') && SUMMARY_ONLY.contains(&option_name(a)));
    (!summary).then_some(None)
}

/// Most directory entries [`repository_reachable`] looks at inside the workspace; past it a
/// repository is assumed.
const MAX_WALK_ENTRIES: usize = 50_000;

/// True when git started in the workspace at `root`, or in a directory below it, may find a
/// repository: `GIT_DIR` is set in Steward's environment; the root or a directory above it
/// holds a `.git` (directory or `gitdir:` file) or is a bare repository (`HEAD` plus
/// `objects/`); or any `.git` or bare repository lies inside the workspace (a nested
/// repository reached with `cd sub` or `git -C sub`). Walking stops after 50,000 entries and
/// then answers true.
pub(crate) fn repository_reachable(root: &Path) -> bool {
    if std::env::var_os("GIT_DIR").is_some() {
        return true;
    }
    if root.ancestors().any(|dir| dir.join(".git").symlink_metadata().is_ok() || is_bare_repository(dir)) {
        return true;
    }
    let walk = ignore::WalkBuilder::new(root).standard_filters(false).follow_links(false).build();
    for (seen, entry) in walk.enumerate() {
        if seen >= MAX_WALK_ENTRIES {
            return true;
        }
        let Ok(entry) = entry else { continue };
        if entry.file_name() == OsStr::new(".git")
            || (entry.file_name() == "HEAD" && entry.path().parent().is_some_and(is_bare_repository))
        {
            return true;
        }
    }
    false
}

/// A directory git accepts as a repository by itself: a `HEAD` file and an `objects`
/// directory.
fn is_bare_repository(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(line: &str) -> Option<String> {
        let words = shell_words::split(line).unwrap();
        let (program, args) = words.split_first().map_or(("", &[][..]), |(p, a)| (p.as_str(), a));
        prints_history(program, args, &vec![false; args.len()])
    }

    #[test]
    fn subcommands_that_print_history() {
        let table = [
            ("git log -p", Some("git log -p")),
            ("git log --patch -1", Some("git log --patch")),
            ("git log -u", Some("git log -u")),
            ("git log -U5", Some("git log -U5")),
            ("git log --unified=1", Some("git log --unified=1")),
            ("git log -L1,5:src/app.py", Some("git log -L1,5:src/app.py")),
            ("git log --cc", Some("git log --cc")),
            ("git log -m --first-parent", Some("git log -m")),
            ("git log --oneline -SAPI_KEY", Some("git log -SAPI_KEY")),
            ("git log -G^TOKEN= --format=%h", Some("git log -G^TOKEN=")),
            ("git log --word-diff", Some("git log --word-diff")),
            ("git log --show-notes", Some("git log --show-notes")),
            ("git whatchanged -p", Some("git whatchanged -p")),
            ("git show HEAD~1:.env", Some("git show")),
            ("git show --stat", Some("git show")),
            ("git diff HEAD~1", Some("git diff")),
            ("git diff --cached", Some("git diff")),
            ("git diff", Some("git diff")),
            ("git diff --stat -p HEAD", Some("git diff -p")),
            ("git diff --check", Some("git diff --check")),
            ("git diff-tree -p HEAD", Some("git diff-tree -p")),
            ("git diff-index --cached -p HEAD", Some("git diff-index -p")),
            ("git blame .env", Some("git blame")),
            ("git annotate app.py", Some("git annotate")),
            ("git grep -e TOKEN HEAD~3", Some("git grep")),
            ("git cat-file -p HEAD:app.py", Some("git cat-file")),
            ("git archive HEAD", Some("git archive")),
            ("git format-patch --stdout -1", Some("git format-patch")),
            ("git stash show -p", Some("git stash show")),
            ("git stash show", Some("git stash show")),
            ("git stash list -p", Some("git stash list -p")),
            ("git stash -p", Some("git stash -p")),
            ("git reflog -p", Some("git reflog -p")),
            ("git reflog show --patch HEAD", Some("git reflog --patch")),
            ("git bundle create - --all", Some("git bundle")),
            ("git fast-export --all", Some("git fast-export")),
            ("git range-diff A...B", Some("git range-diff")),
            ("git notes show HEAD", Some("git notes show")),
            ("git status -v", Some("git status -v")),
            ("git status --verb", Some("git status --verb")),
            ("git commit --dry-run -v", Some("git commit --dry-run")),
            ("git commit -v -m x", Some("git commit -v")),
            ("git add -p", Some("git add -p")),
            ("git add --pat", Some("git add --pat")),
            ("git checkout -p HEAD~1", Some("git checkout -p")),
            ("git for-each-ref --format=%(raw)", Some("git for-each-ref --format=%(raw)")),
            ("git am --show-current-patch=diff", Some("git am --show-current-patch=diff")),
            ("git rebase --show-current-patch", Some("git rebase --show-current-patch")),
            ("git -C sub --no-pager log -p", Some("git log -p")),
            ("git --git-dir=.git show HEAD", Some("git show")),
            ("git -c alias.x=log x", Some("git x")),
            ("git lg", Some("git lg")),
            ("git --exec-path=/tmp log", Some("git log")),
            ("git --unknown-option log", Some("git --unknown-option")),
            ("git-log -p", Some("git log -p")),
            ("git-cat-file -p HEAD:.env", Some("git cat-file")),
            ("git-upload-pack .", Some("git upload-pack")),
            ("git log -1 -Rp", Some("git log -Rp")),
            ("git log -1 -RU3", Some("git log -RU3")),
            ("git log -1 -zp", Some("git log -zp")),
            ("git log -1p", Some("git log -1p")),
            ("git -C . -P log -1 -Bp", Some("git log -Bp")),
            ("git log -M50%p", Some("git log -M50%p")),
            ("git diff --stat -Rp HEAD~1", Some("git diff -Rp")),
            ("git diff-tree -Rp HEAD", Some("git diff-tree -Rp")),
            ("git reflog -Rp", Some("git reflog -Rp")),
            ("git whatchanged -1 -Rp", Some("git whatchanged -Rp")),
            ("git stash list -Rp", Some("git stash list -Rp")),
            ("git log --format=%h%N", Some("git log --format=%h%N")),
            ("git log --pretty=format:%N", Some("git log --pretty=format:%N")),
            ("git log --show-notes-by-default", Some("git log --show-notes-by-default")),
        ];
        for (line, expected) in table {
            assert_eq!(judge(line).as_deref(), expected, "{line}");
        }
    }

    #[test]
    fn other_git_commands_are_not_history_readers() {
        for line in [
            "git status",
            "git status -sb",
            "git log",
            "git log --oneline -5",
            "git log --oneline",
            "git log -1 --stat",
            "git log -n 5",
            "git log -n5",
            "git log -Rz -n5 --stat",
            "git log -Ofile-with-p",
            "git diff --stat",
            "git diff -R --stat",
            "git log --stat",
            "git log --format=%H%x00%s --name-only",
            "git log -- -p",
            "git log --end-of-options -p",
            "git diff --stat HEAD~1",
            "git diff --name-only --cached",
            "git diff --no-index a.txt b.txt",
            "git diff-tree -r HEAD",
            "git branch -v",
            "git remote -v",
            "git fetch -p",
            "git stash",
            "git stash pop",
            "git reflog",
            "git reflog expire --all",
            "git notes list",
            "git add -A",
            "git add -- -p",
            "git checkout -b feature",
            "git commit -m done",
            "git rebase --continue",
            "git am --abort",
            "git rev-parse HEAD:.env",
            "git ls-files",
            "git --version",
            "git",
            "ls -p",
        ] {
            assert_eq!(judge(line), None, "{line}");
        }
    }

    #[test]
    fn a_word_computed_at_run_time_counts() {
        let args: Vec<String> = ["log", "$FLAGS"].iter().map(|s| s.to_string()).collect();
        assert_eq!(prints_history("git", &args, &[false, true]).as_deref(), Some("git log $FLAGS"));
        assert_eq!(prints_history("git", &args, &[true, false]).as_deref(), Some("git log"));
    }

    #[test]
    fn repositories_are_found_above_inside_and_bare() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let plain = root.join("plain");
        std::fs::create_dir_all(plain.join("src")).unwrap();
        assert!(
            std::env::var_os("GIT_DIR").is_none(),
            "GIT_DIR is set in the test environment: run the tests with it unset (scripts/test.sh unsets it)"
        );
        assert!(!repository_reachable(&plain));
        std::fs::create_dir_all(plain.join("vendor/lib/.git")).unwrap();
        assert!(repository_reachable(&plain));
        let above = root.join("above");
        std::fs::create_dir_all(above.join(".git")).unwrap();
        std::fs::create_dir_all(above.join("ws")).unwrap();
        assert!(repository_reachable(&above.join("ws")));
        let bare = root.join("bare");
        std::fs::create_dir_all(bare.join("inner.git/objects")).unwrap();
        std::fs::write(bare.join("inner.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(repository_reachable(&bare));
    }
}
