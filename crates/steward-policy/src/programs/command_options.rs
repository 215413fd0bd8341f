//! The options of particular commands (a program, or a program's subcommand), as deny and
//! ask rules read them (see `crate::option_set`): which spellings are one option (`-r`,
//! `-R`, `--recursive`), which options take a value (`curl -X POST`, `-XPOST`), and what an
//! option or an operand implies (`git push --force-with-lease` and `git push origin +main`
//! are force pushes). Each table cites the manual it follows. An option a table does not
//! list is still read, letter by letter and with or without a value (whichever matches).

/// How an option takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value {
    /// None (a flag).
    None,
    /// The next word, or attached (`-XPOST`, `--request=POST`).
    Required,
    /// Only attached (`--interactive=never`, `--force-with-lease=main`).
    Optional,
}

/// One option and all its spellings.
pub(crate) struct Opt {
    /// Every spelling: short (`-r`), long (`--recursive`), or single-dash words (`-delete`).
    pub names: &'static [&'static str],
    /// How it takes a value.
    pub value: Value,
    /// Other options it also sets, by one of their spellings, with a value after `=` when it
    /// sets one (`curl -d` implies `--request=POST`); [`ANY_OPTION`] for an option that reads
    /// further options from a file (`curl -K FILE`), so that it may set any option.
    pub implies: &'static [&'static str],
}

/// In [`Opt::implies`]: the option may set any option.
pub(crate) const ANY_OPTION: &str = "*";

const fn flag(names: &'static [&'static str]) -> Opt {
    Opt { names, value: Value::None, implies: &[] }
}

const fn valued(names: &'static [&'static str]) -> Opt {
    Opt { names, value: Value::Required, implies: &[] }
}

const fn optional(names: &'static [&'static str]) -> Opt {
    Opt { names, value: Value::Optional, implies: &[] }
}

/// The options of one command.
pub(crate) struct CommandOptions {
    /// Program base names (lower case).
    pub programs: &'static [&'static str],
    /// The subcommand words after the program's global options (`["push"]`,
    /// `["container", "rm"]`); empty for the program itself.
    pub path: &'static [&'static str],
    /// The options.
    pub options: &'static [Opt],
    /// Options are whole single-dash words (`find -delete`), never groups of letters.
    pub words: bool,
    /// An operand starting with this prefix (and longer than it) sets this option
    /// (`git push origin +main` forces, `:main` deletes).
    pub operand_prefixes: &'static [(&'static str, &'static str)],
}

impl CommandOptions {
    /// The option spelled exactly `name` (case-sensitive: `git clean -x` and `-X` differ).
    pub(crate) fn exact(&self, name: &str) -> Option<&'static Opt> {
        self.options.iter().find(|o| o.names.contains(&name))
    }

    /// Long options `--name` abbreviates (getopt_long and git's parse-options accept an
    /// unambiguous prefix; when several fit, all are returned). Empty unless `name` is
    /// `--` followed by at least one character.
    pub(crate) fn abbreviated(&self, name: &str) -> Vec<&'static Opt> {
        if name.len() <= 2 || !name.starts_with("--") {
            return Vec::new();
        }
        self.options.iter().filter(|o| o.names.iter().any(|n| n.starts_with("--") && n.starts_with(name))).collect()
    }
}

const fn command(programs: &'static [&'static str], path: &'static [&'static str]) -> CommandOptions {
    CommandOptions { programs, path, options: &[], words: false, operand_prefixes: &[] }
}

/// GNU coreutils rm(1) (coreutils 9.x).
const RM: &[Opt] = &[
    flag(&["-r", "-R", "--recursive"]),
    flag(&["-f", "--force"]),
    flag(&["-i"]),
    flag(&["-I"]),
    optional(&["--interactive"]),
    flag(&["-d", "--dir"]),
    flag(&["-v", "--verbose"]),
    flag(&["--one-file-system"]),
    flag(&["--no-preserve-root"]),
    optional(&["--preserve-root"]),
];

/// GNU coreutils chmod(1): `-R`/`--recursive`, `-f`/`--silent`/`--quiet`, `--reference=FILE`.
const CHMOD: &[Opt] = &[
    flag(&["-R", "--recursive"]),
    flag(&["-f", "--silent", "--quiet"]),
    flag(&["-v", "--verbose"]),
    flag(&["-c", "--changes"]),
    flag(&["--no-preserve-root"]),
    flag(&["--preserve-root"]),
    valued(&["--reference"]),
];

/// GNU coreutils chown(1) and chgrp(1): as chmod, plus `-h`, `-H`, `-L`, `-P`, `--from`.
const CHOWN: &[Opt] = &[
    flag(&["-R", "--recursive"]),
    flag(&["-f", "--silent", "--quiet"]),
    flag(&["-v", "--verbose"]),
    flag(&["-c", "--changes"]),
    flag(&["-h", "--no-dereference"]),
    flag(&["--dereference"]),
    flag(&["-H"]),
    flag(&["-L"]),
    flag(&["-P"]),
    flag(&["--no-preserve-root"]),
    flag(&["--preserve-root"]),
    valued(&["--from"]),
    valued(&["--reference"]),
];

/// GNU coreutils cp(1): `-a`/`--archive` is `-dR --preserve=all`.
const CP: &[Opt] = &[
    Opt { names: &["-a", "--archive"], value: Value::None, implies: &["-R", "-d"] },
    flag(&["-r", "-R", "--recursive"]),
    flag(&["-f", "--force"]),
    flag(&["-i", "--interactive"]),
    flag(&["-n", "--no-clobber"]),
    flag(&["-d"]),
    flag(&["-l", "--link"]),
    flag(&["-s", "--symbolic-link"]),
    flag(&["-u"]),
    optional(&["--update"]),
    flag(&["-v", "--verbose"]),
    flag(&["-p"]),
    optional(&["--preserve"]),
    valued(&["--no-preserve"]),
    flag(&["-P", "--no-dereference"]),
    flag(&["-L", "--dereference"]),
    flag(&["-H"]),
    flag(&["-x", "--one-file-system"]),
    flag(&["-b"]),
    optional(&["--backup"]),
    valued(&["-S", "--suffix"]),
    valued(&["-t", "--target-directory"]),
    flag(&["-T", "--no-target-directory"]),
    optional(&["--reflink"]),
    valued(&["--sparse"]),
    flag(&["--remove-destination"]),
    flag(&["--parents"]),
    flag(&["--strip-trailing-slashes"]),
    flag(&["--attributes-only"]),
];

/// GNU coreutils mv(1).
const MV: &[Opt] = &[
    flag(&["-f", "--force"]),
    flag(&["-i", "--interactive"]),
    flag(&["-n", "--no-clobber"]),
    flag(&["-u"]),
    optional(&["--update"]),
    flag(&["-v", "--verbose"]),
    flag(&["-b"]),
    optional(&["--backup"]),
    valued(&["-S", "--suffix"]),
    valued(&["-t", "--target-directory"]),
    flag(&["-T", "--no-target-directory"]),
    flag(&["--strip-trailing-slashes"]),
    flag(&["--exchange"]),
    flag(&["--no-copy"]),
];

/// git-push(1) (git 2.47): `--mirror` force-updates and deletes remote refs; a refspec
/// `+src:dst` forces that update, `:dst` deletes; `--force-with-lease[=ref[:expect]]` and
/// `--force-if-includes` are forms of a force push.
const GIT_PUSH: &[Opt] = &[
    flag(&["-f", "--force"]),
    Opt { names: &["--force-with-lease"], value: Value::Optional, implies: &["--force"] },
    Opt { names: &["--force-if-includes"], value: Value::None, implies: &["--force"] },
    Opt { names: &["--mirror"], value: Value::None, implies: &["--force", "--delete", "--prune"] },
    flag(&["-d", "--delete"]),
    // "Remove remote branches that don't have a local counterpart."
    Opt { names: &["--prune"], value: Value::None, implies: &["--delete"] },
    flag(&["--all", "--branches"]),
    flag(&["--tags"]),
    flag(&["--follow-tags"]),
    flag(&["--atomic"]),
    flag(&["-n", "--dry-run"]),
    flag(&["--porcelain"]),
    flag(&["-u", "--set-upstream"]),
    flag(&["--thin"]),
    flag(&["-q", "--quiet"]),
    flag(&["-v", "--verbose"]),
    flag(&["--progress"]),
    flag(&["--no-verify", "--verify"]),
    flag(&["-4", "--ipv4"]),
    flag(&["-6", "--ipv6"]),
    valued(&["-o", "--push-option"]),
    valued(&["--repo"]),
    valued(&["--receive-pack", "--exec"]),
    valued(&["--recurse-submodules"]),
    optional(&["--signed"]),
];

/// git-clean(1): `-f`/`--force`, `-d`, `-x`, `-X`, `-e`/`--exclude PATTERN`.
const GIT_CLEAN: &[Opt] = &[
    flag(&["-f", "--force"]),
    flag(&["-d"]),
    flag(&["-x"]),
    flag(&["-X"]),
    flag(&["-n", "--dry-run"]),
    flag(&["-q", "--quiet"]),
    flag(&["-i", "--interactive"]),
    valued(&["-e", "--exclude"]),
];

/// git-reset(1): the modes `--soft`, `--mixed`, `--hard`, `--merge`, `--keep`.
const GIT_RESET: &[Opt] = &[
    flag(&["--hard"]),
    flag(&["--soft"]),
    flag(&["--mixed"]),
    flag(&["--merge"]),
    flag(&["--keep"]),
    flag(&["-q", "--quiet"]),
    flag(&["-p", "--patch"]),
    flag(&["-N", "--intent-to-add"]),
    optional(&["--recurse-submodules"]),
    valued(&["--pathspec-from-file"]),
    flag(&["--pathspec-file-nul"]),
];

/// git-checkout(1) and git-switch(1): `-f`/`--force` throws local changes away; `-b`, `-B`,
/// `--orphan` take a branch name.
const GIT_CHECKOUT: &[Opt] = &[
    flag(&["-f", "--force"]),
    flag(&["-q", "--quiet"]),
    valued(&["-b"]),
    valued(&["-B"]),
    valued(&["--orphan"]),
    flag(&["--detach"]),
    flag(&["-m", "--merge"]),
    flag(&["-p", "--patch"]),
    flag(&["--ours"]),
    flag(&["--theirs"]),
    valued(&["--conflict"]),
    valued(&["--pathspec-from-file"]),
];

/// git-branch(1): `-D` is `--delete --force`, `-M` is `--move --force`, `-C` is `--copy
/// --force`.
const GIT_BRANCH: &[Opt] = &[
    flag(&["-d", "--delete"]),
    Opt { names: &["-D"], value: Value::None, implies: &["--delete", "--force"] },
    flag(&["-f", "--force"]),
    flag(&["-m", "--move"]),
    Opt { names: &["-M"], value: Value::None, implies: &["--move", "--force"] },
    flag(&["-c", "--copy"]),
    Opt { names: &["-C"], value: Value::None, implies: &["--copy", "--force"] },
    flag(&["-r", "--remotes"]),
    flag(&["-a", "--all"]),
    flag(&["-l", "--list"]),
    flag(&["-v", "--verbose"]),
    flag(&["-q", "--quiet"]),
    valued(&["-u", "--set-upstream-to"]),
    optional(&["--track"]),
];

/// curl(1) (curl 8.x): `-X`/`--request METHOD`; `-d`/`--data*`, `--json`, `-F`/`--form*`
/// send a POST, `-T`/`--upload-file` a PUT, `-I`/`--head` a HEAD. Short options group
/// (`-sSL`) and a value may be attached (`-XPOST`).
const CURL: &[Opt] = &[
    valued(&["-X", "--request"]),
    Opt { names: &["-d", "--data", "--data-ascii"], value: Value::Required, implies: &["--request=POST"] },
    Opt { names: &["--data-raw"], value: Value::Required, implies: &["--request=POST"] },
    Opt { names: &["--data-binary"], value: Value::Required, implies: &["--request=POST"] },
    Opt { names: &["--data-urlencode"], value: Value::Required, implies: &["--request=POST"] },
    Opt { names: &["--json"], value: Value::Required, implies: &["--request=POST"] },
    Opt { names: &["-F", "--form"], value: Value::Required, implies: &["--request=POST"] },
    Opt { names: &["--form-string"], value: Value::Required, implies: &["--request=POST"] },
    Opt { names: &["-T", "--upload-file"], value: Value::Required, implies: &["--request=PUT"] },
    Opt { names: &["-I", "--head"], value: Value::None, implies: &["--request=HEAD"] },
    flag(&["-G", "--get"]),
    valued(&["-H", "--header"]),
    valued(&["-o", "--output"]),
    flag(&["-O", "--remote-name"]),
    valued(&["-u", "--user"]),
    valued(&["-A", "--user-agent"]),
    valued(&["-e", "--referer"]),
    valued(&["-b", "--cookie"]),
    valued(&["-c", "--cookie-jar"]),
    valued(&["-x", "--proxy"]),
    Opt { names: &["-K", "--config"], value: Value::Required, implies: &[ANY_OPTION] },
    valued(&["-w", "--write-out"]),
    valued(&["-m", "--max-time"]),
    valued(&["--connect-timeout"]),
    valued(&["-r", "--range"]),
    valued(&["-E", "--cert"]),
    valued(&["--url"]),
    flag(&["-s", "--silent"]),
    flag(&["-S", "--show-error"]),
    flag(&["-L", "--location"]),
    flag(&["-f", "--fail"]),
    flag(&["-k", "--insecure"]),
    flag(&["-v", "--verbose"]),
    flag(&["-i", "--include"]),
    flag(&["-N", "--no-buffer"]),
    flag(&["-#", "--progress-bar"]),
];

/// docker-rm(1), docker-container-rm(1), podman-rm(1): `-f`/`--force`, `-v`/`--volumes`.
const CONTAINER_RM: &[Opt] = &[
    flag(&["-f", "--force"]),
    flag(&["-v", "--volumes"]),
    flag(&["-l", "--link"]),
    flag(&["-a", "--all"]),
    valued(&["-t", "--time"]),
    flag(&["--depend"]),
    flag(&["-i", "--ignore"]),
];

/// docker-rmi(1), docker-image-rm(1), podman-rmi(1).
const IMAGE_RM: &[Opt] = &[flag(&["-f", "--force"]), flag(&["--no-prune"]), flag(&["-a", "--all"])];

/// docker-system-prune(1), docker-volume-prune(1), podman-system-prune(1).
const PRUNE: &[Opt] = &[
    flag(&["-a", "--all"]),
    flag(&["-f", "--force"]),
    flag(&["--volumes"]),
    flag(&["--external"]),
    valued(&["--filter"]),
];

/// docker-run(1), docker-container-run(1), podman-run(1) (a subset: options that grant the
/// container the host, and the common options taking a value).
const CONTAINER_RUN: &[Opt] = &[
    flag(&["--privileged"]),
    flag(&["--rm"]),
    flag(&["-d", "--detach"]),
    flag(&["-i", "--interactive"]),
    flag(&["-t", "--tty"]),
    flag(&["-P", "--publish-all"]),
    flag(&["--init"]),
    flag(&["--read-only"]),
    valued(&["-v", "--volume"]),
    valued(&["--mount"]),
    valued(&["-e", "--env"]),
    valued(&["--env-file"]),
    valued(&["-p", "--publish"]),
    valued(&["--name"]),
    valued(&["--network", "--net"]),
    valued(&["--pid"]),
    valued(&["--ipc"]),
    valued(&["--uts"]),
    valued(&["--userns"]),
    valued(&["-u", "--user"]),
    valued(&["-w", "--workdir"]),
    valued(&["--entrypoint"]),
    valued(&["--cap-add"]),
    valued(&["--cap-drop"]),
    valued(&["--security-opt"]),
    valued(&["--device"]),
    valued(&["-h", "--hostname"]),
    valued(&["-l", "--label"]),
    valued(&["--platform"]),
    valued(&["--pull"]),
    valued(&["-m", "--memory"]),
    valued(&["--cpus"]),
    valued(&["--gpus"]),
];

/// kubectl-delete(1) (kubectl 1.2x): `--all` (every resource of the type) and
/// `-A`/`--all-namespaces` are different options; `--force`, `--grace-period`, `--now`.
const KUBECTL_DELETE: &[Opt] = &[
    flag(&["--all"]),
    flag(&["-A", "--all-namespaces"]),
    flag(&["--force"]),
    flag(&["--now"]),
    flag(&["--wait"]),
    flag(&["-i", "--interactive"]),
    flag(&["--ignore-not-found"]),
    flag(&["-R", "--recursive"]),
    valued(&["--grace-period"]),
    valued(&["--cascade"]),
    valued(&["-f", "--filename"]),
    valued(&["-k", "--kustomize"]),
    valued(&["-l", "--selector"]),
    valued(&["--field-selector"]),
    valued(&["-o", "--output"]),
    valued(&["--timeout"]),
    valued(&["--dry-run"]),
    valued(&["--raw"]),
    valued(&["-n", "--namespace"]),
    valued(&["--context"]),
    valued(&["--kubeconfig"]),
    valued(&["--cluster"]),
    valued(&["--user"]),
    valued(&["-s", "--server"]),
];

/// GNU findutils find(1): expressions are single-dash words; the tests and actions listed
/// take one value.
const FIND: &[Opt] = &[
    flag(&["-delete"]),
    flag(&["-print"]),
    flag(&["-print0"]),
    flag(&["-prune"]),
    flag(&["-quit"]),
    flag(&["-depth"]),
    flag(&["-xdev", "-mount"]),
    flag(&["-follow"]),
    flag(&["-empty"]),
    flag(&["-ls"]),
    flag(&["-not"]),
    flag(&["-o", "-or"]),
    flag(&["-a", "-and"]),
    valued(&["-name"]),
    valued(&["-iname"]),
    valued(&["-path", "-wholename"]),
    valued(&["-ipath", "-iwholename"]),
    valued(&["-regex"]),
    valued(&["-iregex"]),
    valued(&["-type"]),
    valued(&["-xtype"]),
    valued(&["-user"]),
    valued(&["-group"]),
    valued(&["-perm"]),
    valued(&["-size"]),
    valued(&["-mtime"]),
    valued(&["-mmin"]),
    valued(&["-atime"]),
    valued(&["-ctime"]),
    valued(&["-newer"]),
    valued(&["-maxdepth"]),
    valued(&["-mindepth"]),
    valued(&["-fprint"]),
    valued(&["-fprint0"]),
    valued(&["-fls"]),
    valued(&["-printf"]),
];

/// rsync(1) (rsync 3.2): `-a`/`--archive` is `-rlptgoD`; `--del` is `--delete-during`, and
/// `--delete-before`, `-during`, `-delay`, `-after` and `--delete-excluded` each imply
/// `--delete`.
const RSYNC: &[Opt] = &[
    Opt { names: &["-a", "--archive"], value: Value::None, implies: &["-r", "-l", "-p", "-t", "-g", "-o", "-D"] },
    flag(&["-r", "--recursive"]),
    flag(&["--delete"]),
    Opt { names: &["--delete-before"], value: Value::None, implies: &["--delete"] },
    Opt { names: &["--delete-during", "--del"], value: Value::None, implies: &["--delete"] },
    Opt { names: &["--delete-delay"], value: Value::None, implies: &["--delete"] },
    Opt { names: &["--delete-after"], value: Value::None, implies: &["--delete"] },
    Opt { names: &["--delete-excluded"], value: Value::None, implies: &["--delete"] },
    flag(&["--delete-missing-args"]),
    flag(&["--remove-source-files"]),
    flag(&["--force"]),
    flag(&["-l", "--links"]),
    flag(&["-p", "--perms"]),
    flag(&["-t", "--times"]),
    flag(&["-g", "--group"]),
    flag(&["-o", "--owner"]),
    flag(&["-D"]),
    flag(&["-v", "--verbose"]),
    flag(&["-q", "--quiet"]),
    flag(&["-z", "--compress"]),
    flag(&["-n", "--dry-run"]),
    flag(&["-u", "--update"]),
    flag(&["-c", "--checksum"]),
    flag(&["-h", "--human-readable"]),
    flag(&["-i", "--itemize-changes"]),
    flag(&["-P"]),
    flag(&["-H", "--hard-links"]),
    flag(&["-A", "--acls"]),
    flag(&["-X", "--xattrs"]),
    valued(&["-e", "--rsh"]),
    valued(&["--rsync-path"]),
    valued(&["-f", "--filter"]),
    valued(&["--exclude"]),
    valued(&["--include"]),
    valued(&["--exclude-from"]),
    valued(&["--include-from"]),
    valued(&["--files-from"]),
    valued(&["--backup-dir"]),
    valued(&["--suffix"]),
    valued(&["--log-file"]),
    valued(&["--password-file"]),
    valued(&["--port"]),
    valued(&["--chmod"]),
    valued(&["--chown"]),
    valued(&["--timeout"]),
    valued(&["--bwlimit"]),
    valued(&["-T", "--temp-dir"]),
    valued(&["--compare-dest"]),
    valued(&["--copy-dest"]),
    valued(&["--link-dest"]),
    valued(&["-M", "--remote-option"]),
    valued(&["--max-size"]),
    valued(&["--min-size"]),
    valued(&["--partial-dir"]),
    valued(&["--out-format"]),
    valued(&["-B", "--block-size"]),
];

/// npm-publish(1) (npm 10–11): `--tag`, `--access`, `--otp` take a value.
const NPM_PUBLISH: &[Opt] = &[
    valued(&["--tag"]),
    valued(&["--access"]),
    valued(&["--otp"]),
    valued(&["-w", "--workspace"]),
    flag(&["--dry-run"]),
    flag(&["--provenance"]),
    flag(&["-f", "--force"]),
    flag(&["-ws", "--workspaces"]),
];

/// Every table, looked up by [`command_options`].
const TABLES: &[CommandOptions] = &[
    CommandOptions { options: RM, ..command(&["rm"], &[]) },
    CommandOptions { options: CHMOD, ..command(&["chmod"], &[]) },
    CommandOptions { options: CHOWN, ..command(&["chown", "chgrp"], &[]) },
    CommandOptions { options: CP, ..command(&["cp"], &[]) },
    CommandOptions { options: MV, ..command(&["mv"], &[]) },
    CommandOptions {
        options: GIT_PUSH,
        operand_prefixes: &[("+", "--force"), (":", "--delete")],
        ..command(&["git"], &["push"])
    },
    CommandOptions { options: GIT_CLEAN, ..command(&["git"], &["clean"]) },
    CommandOptions { options: GIT_RESET, ..command(&["git"], &["reset"]) },
    CommandOptions { options: GIT_CHECKOUT, ..command(&["git"], &["checkout"]) },
    CommandOptions { options: GIT_CHECKOUT, ..command(&["git"], &["switch"]) },
    CommandOptions { options: GIT_BRANCH, ..command(&["git"], &["branch"]) },
    CommandOptions { options: CURL, ..command(&["curl"], &[]) },
    CommandOptions { options: RSYNC, ..command(&["rsync"], &[]) },
    CommandOptions { options: CONTAINER_RM, ..command(&["docker", "podman"], &["rm"]) },
    CommandOptions { options: CONTAINER_RM, ..command(&["docker", "podman"], &["container", "rm"]) },
    CommandOptions { options: IMAGE_RM, ..command(&["docker", "podman"], &["rmi"]) },
    CommandOptions { options: IMAGE_RM, ..command(&["docker", "podman"], &["image", "rm"]) },
    CommandOptions { options: PRUNE, ..command(&["docker", "podman"], &["system", "prune"]) },
    CommandOptions { options: PRUNE, ..command(&["docker", "podman"], &["volume", "prune"]) },
    CommandOptions { options: CONTAINER_RUN, ..command(&["docker", "podman"], &["run"]) },
    CommandOptions { options: CONTAINER_RUN, ..command(&["docker", "podman"], &["container", "run"]) },
    CommandOptions { options: KUBECTL_DELETE, ..command(&["kubectl"], &["delete"]) },
    CommandOptions { options: FIND, words: true, ..command(&["find"], &[]) },
    CommandOptions { options: NPM_PUBLISH, ..command(&["npm", "pnpm"], &["publish"]) },
];

/// The table for `program` whose subcommand words begin `words` (compared case-
/// insensitively; the longest path wins). `None` when no table fits.
pub(crate) fn command_options(program: &str, words: &[&str]) -> Option<&'static CommandOptions> {
    let program = program.to_ascii_lowercase();
    TABLES
        .iter()
        .filter(|t| t.programs.contains(&program.as_str()))
        .filter(|t| t.path.len() <= words.len() && t.path.iter().zip(words).all(|(p, w)| p.eq_ignore_ascii_case(w)))
        .max_by_key(|t| t.path.len())
}
