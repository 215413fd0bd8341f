//! The global options of the programs Steward knows, one [`OptionTable`] per program (or
//! family of names). Each table cites the manual or `--help` text it follows. An option not
//! listed here is unknown: rules on a subcommand behind it are then read strictly (see
//! [`super::options`]).

use super::option_table::OptionTable;

/// An empty table for `programs`, to fill with `..` struct update syntax.
const fn table(programs: &'static [&'static str]) -> OptionTable {
    OptionTable {
        programs,
        flags: &[],
        with_value: &[],
        attached_only: &[],
        optional_number: &[],
        operand_options: &[],
        stops: &[],
        risky: &[],
        clusters: false,
        toolchain: false,
        assignments: false,
        nopt: false,
        every_operand: false,
    }
}

/// git(1) "OPTIONS" (git 2.47) and `handle_options()` in git's `git.c`, which also reads
/// `--no-literal-pathspecs` and `--shallow-file FILE`; `--super-prefix` is git's before 2.40.
/// No grouped short options and no attached `-Cdir`; `--exec-path[=path]`, `--list-cmds=group`.
/// `--version`, `--help`, `-v` and `-h` are read by git as the `version` / `help` commands.
/// Risky: `-c` and `--config-env` set any configuration (aliases, `core.pager`, hooks path),
/// `--exec-path=DIR` picks where git's own helper programs come from.
const GIT: OptionTable = OptionTable {
    flags: &[
        "-p",
        "--paginate",
        "-P",
        "--no-pager",
        "--bare",
        "--no-replace-objects",
        "--no-lazy-fetch",
        "--no-optional-locks",
        "--no-advice",
        "--literal-pathspecs",
        "--no-literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--exec-path",
        "--html-path",
        "--man-path",
        "--info-path",
    ],
    with_value: &[
        "-C",
        "-c",
        "--config-env",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--super-prefix",
        "--attr-source",
        "--shallow-file",
    ],
    attached_only: &["--exec-path", "--list-cmds"],
    stops: &["--version", "-v", "--help", "-h"],
    risky: &["-c", "--config-env", "--exec-path"],
    ..table(&["git"])
};

/// `cargo --help` (cargo 1.8x, `cargo [+toolchain] [OPTIONS] [COMMAND]`), cargo(1)
/// "OPTIONS"; clap parsing, so short options group (`-vv`) and take attached values
/// (`-Zflag`). Risky: `--config` sets any configuration (aliases, `build.rustc-wrapper`,
/// runners) or names a configuration file, `-Z` enables unstable behaviour (config includes).
const CARGO: OptionTable = OptionTable {
    flags: &[
        "-V",
        "--version",
        "--list",
        "-v",
        "--verbose",
        "-q",
        "--quiet",
        "--locked",
        "--offline",
        "--frozen",
        "-h",
        "--help",
    ],
    with_value: &["--explain", "--color", "-C", "--config", "-Z"],
    risky: &["--config", "-Z"],
    clusters: true,
    toolchain: true,
    ..table(&["cargo"])
};

/// `rustup --help` (rustup 1.2x, `rustup [OPTIONS] [+toolchain] [COMMAND]`); clap parsing.
const RUSTUP: OptionTable = OptionTable {
    flags: &["-v", "--verbose", "-q", "--quiet", "-h", "--help", "-V", "--version"],
    clusters: true,
    toolchain: true,
    ..table(&["rustup"])
};

/// npm-config(7) / `npm help config` (npm 10–11): configuration given as `--key value` or
/// `--key=value` anywhere on the line, read by `nopt` (`--flag true|false`); shorthands from
/// npm's `shorthands` list (`-g`, `-ws`, `-w`, `-C` for `--prefix`, `-c` for `--call`, …). Only a common subset is listed; any other option
/// is unknown. Risky: configuration files (`--userconfig`, `--globalconfig`), the prefix
/// (its `etc/npmrc` is read), where packages come from (`--registry`), what runs scripts
/// (`--script-shell`, `--node-options`).
const NPM: OptionTable = OptionTable {
    flags: &[
        "-g",
        "--global",
        "-ws",
        "--workspaces",
        "--include-workspace-root",
        "-y",
        "--yes",
        "--no",
        "-f",
        "--force",
        "-s",
        "--silent",
        "-q",
        "--quiet",
        "-d",
        "-dd",
        "-ddd",
        "--verbose",
        "-l",
        "--long",
        "--json",
        "--dry-run",
        "--offline",
        "--prefer-offline",
        "--prefer-online",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--no-color",
        "--no-progress",
        "--no-update-notifier",
        "-v",
        "--version",
        "-h",
        "--help",
        "--usage",
    ],
    with_value: &[
        "-C",
        "--prefix",
        "-w",
        "--workspace",
        "--registry",
        "--userconfig",
        "--globalconfig",
        "--cache",
        "--loglevel",
        "--tag",
        "--otp",
        "--scope",
        "--access",
        "--script-shell",
        "--node-options",
    ],
    risky: &["-C", "--prefix", "--registry", "--userconfig", "--globalconfig", "--script-shell", "--node-options"],
    nopt: true,
    ..table(&["npm"])
};

/// npx(1) / npm-exec(1) (npm 10–11): npm's configuration options plus `-p`/`--package`
/// (which package provides the command) and `-c`/`--call` (a shell command to run).
/// Risky: as npm, plus `--package` and `--call`, which choose what runs.
const NPX: OptionTable = OptionTable {
    flags: &[
        "-y",
        "--yes",
        "--no",
        "-q",
        "--quiet",
        "-s",
        "--silent",
        "--offline",
        "--prefer-offline",
        "-h",
        "--help",
        "-v",
        "--version",
    ],
    with_value: &[
        "-p",
        "--package",
        "-c",
        "--call",
        "--prefix",
        "-w",
        "--workspace",
        "--registry",
        "--userconfig",
        "--cache",
        "--loglevel",
    ],
    risky: &["-p", "--package", "-c", "--call", "--prefix", "--registry", "--userconfig"],
    nopt: true,
    ..table(&["npx"])
};

/// `pnpm --help` and pnpm.io "CLI options" (pnpm 9–10; options read by `nopt` as npm's are):
/// `-C`/`--dir`, `--filter`/`-F`,
/// `-w`/`--workspace-root`, `-r`. Risky: `--config.KEY=VALUE` (any configuration) is not
/// listed, so it is unknown.
const PNPM: OptionTable = OptionTable {
    flags: &[
        "-w",
        "--workspace-root",
        "-r",
        "--recursive",
        "-s",
        "--silent",
        "--stream",
        "--parallel",
        "--aggregate-output",
        "--color",
        "--no-color",
        "--fail-if-no-match",
        "--ignore-workspace",
        "--include-workspace-root",
        "--offline",
        "--prefer-offline",
        "--use-stderr",
        "-h",
        "--help",
        "-v",
        "--version",
    ],
    with_value: &[
        "-C",
        "--dir",
        "-F",
        "--filter",
        "--filter-prod",
        "--test-pattern",
        "--changed-files-ignore-pattern",
        "--reporter",
        "--loglevel",
        "--workspace-concurrency",
    ],
    nopt: true,
    ..table(&["pnpm"])
};

/// `yarn --help` (yarn 1 "Options") and yarnpkg.com CLI (yarn 2+ accepts `--cwd`).
/// Risky: `--use-yarnrc` (a configuration file), `--registry`.
const YARN: OptionTable = OptionTable {
    flags: &[
        "--verbose",
        "--offline",
        "--prefer-offline",
        "-s",
        "--silent",
        "--json",
        "--no-progress",
        "--no-default-rc",
        "--non-interactive",
        "--frozen-lockfile",
        "--pure-lockfile",
        "--no-lockfile",
        "--ignore-scripts",
        "--ignore-engines",
        "--ignore-optional",
        "--ignore-platform",
        "--production",
        "--force",
        "--flat",
        "--emoji",
        "--no-emoji",
        "-v",
        "--version",
        "-h",
        "--help",
    ],
    with_value: &[
        "--cwd",
        "--registry",
        "--use-yarnrc",
        "--cache-folder",
        "--modules-folder",
        "--global-folder",
        "--link-folder",
        "--mutex",
        "--network-timeout",
        "--network-concurrency",
        "--otp",
    ],
    risky: &["--registry", "--use-yarnrc"],
    ..table(&["yarn"])
};

/// `bun --help` (bun 1.x): `--cwd`, `-c`/`--config`, `--env-file`, `-r`/`--preload`.
/// `-e`/`--eval` and `-p`/`--print` run the code given, like python's `-c`.
/// Risky: `--config` (bunfig.toml), `--preload` (runs a module first), `--env-file`,
/// `--tsconfig-override`.
const BUN: OptionTable = OptionTable {
    flags: &[
        "--silent",
        "--watch",
        "--hot",
        "--smol",
        "--bun",
        "-b",
        "--if-present",
        "--no-install",
        "-i",
        "--prefer-offline",
        "--prefer-latest",
        "--revision",
        "-v",
        "--version",
        "-h",
        "--help",
    ],
    with_value: &["--cwd", "-c", "--config", "--env-file", "-r", "--preload", "--tsconfig-override"],
    operand_options: &["-e", "--eval", "-p", "--print"],
    risky: &["-c", "--config", "--env-file", "-r", "--preload", "--tsconfig-override"],
    ..table(&["bun"])
};

/// `pip --help` "General Options" (pip 24–25); optparse parsing, so short options group
/// (`-vq`). Risky: `--python` (another interpreter runs pip), `--isolated` is harmless.
const PIP: OptionTable = OptionTable {
    flags: &[
        "-h",
        "--help",
        "--debug",
        "--isolated",
        "--require-virtualenv",
        "-v",
        "--verbose",
        "-V",
        "--version",
        "-q",
        "--quiet",
        "--no-input",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--no-color",
        "--no-python-version-warning",
    ],
    with_value: &[
        "--python",
        "--log",
        "--keyring-provider",
        "--proxy",
        "--retries",
        "--timeout",
        "--exists-action",
        "--trusted-host",
        "--cert",
        "--client-cert",
        "--cache-dir",
        "--use-feature",
        "--use-deprecated",
        "--resume-retries",
    ],
    risky: &["--python", "--trusted-host", "--cert"],
    clusters: true,
    ..table(&["pip", "pip3"])
};

/// `uv --help` "Global options" (uv 0.5–0.8); clap parsing. Risky: `--config-file`.
const UV: OptionTable = OptionTable {
    flags: &[
        "-q",
        "--quiet",
        "-v",
        "--verbose",
        "--native-tls",
        "--offline",
        "--no-progress",
        "--no-config",
        "-n",
        "--no-cache",
        "--no-python-downloads",
        "--managed-python",
        "--no-managed-python",
        "--preview",
        "--no-preview",
        "--isolated",
        "--show-settings",
        "-h",
        "--help",
        "-V",
        "--version",
    ],
    with_value: &[
        "--color",
        "--allow-insecure-host",
        "--directory",
        "--project",
        "--config-file",
        "--cache-dir",
        "--python-preference",
    ],
    risky: &["--config-file", "--allow-insecure-host"],
    clusters: true,
    ..table(&["uv"])
};

/// python(1) / `python3 --help` (CPython 3.11–3.13): grouped short options (`-Bm`), `-c
/// cmd` and `-m mod` end the options and stand where a subcommand would (`-mpip` too).
const PYTHON: OptionTable = OptionTable {
    flags: &[
        "-b",
        "-B",
        "-d",
        "-E",
        "-h",
        "-?",
        "--help",
        "--help-env",
        "--help-xoptions",
        "--help-all",
        "-i",
        "-I",
        "-O",
        "-P",
        "-q",
        "-s",
        "-S",
        "-u",
        "-v",
        "-V",
        "--version",
        "-x",
    ],
    with_value: &["-W", "-X", "--check-hash-based-pycs"],
    operand_options: &["-c", "-m"],
    clusters: true,
    ..table(&["python", "python3"])
};

/// docker(1) / `docker --help` "Global Options" (docker 24–28); pflag parsing (grouped
/// short options, `-Hvalue`, `-H=value`). Risky: `--config` (its `config.json` names
/// credential helpers and plugin directories) and `-H`/`--host` (a daemon elsewhere, an
/// `ssh://` host reached by running `ssh`).
const DOCKER: OptionTable = OptionTable {
    flags: &["-D", "--debug", "--tls", "--tlsverify", "-v", "--version", "-h", "--help"],
    with_value: &[
        "--config",
        "-c",
        "--context",
        "-H",
        "--host",
        "-l",
        "--log-level",
        "--tlscacert",
        "--tlscert",
        "--tlskey",
    ],
    risky: &["--config", "-H", "--host"],
    clusters: true,
    ..table(&["docker"])
};

/// podman(1) "GLOBAL OPTIONS" (podman 4–5); pflag parsing. Risky: options naming programs
/// or configuration podman runs with (`--conmon`, `--runtime`, `--runtime-flag`,
/// `--hooks-dir`, `--network-cmd-path`, `--module`) and a service elsewhere (`--url`,
/// `-H`/`--host`, `--ssh`, `--identity`).
const PODMAN: OptionTable = OptionTable {
    flags: &["--noout", "-r", "--remote", "--syslog", "--transient-store", "-v", "--version", "-h", "--help"],
    with_value: &[
        "--cgroup-manager",
        "--conmon",
        "-c",
        "--connection",
        "--events-backend",
        "--hooks-dir",
        "--identity",
        "--imagestore",
        "--log-level",
        "--module",
        "--network-cmd-path",
        "--network-config-dir",
        "--out",
        "--root",
        "--runroot",
        "--runtime",
        "--runtime-flag",
        "--ssh",
        "--storage-driver",
        "--storage-opt",
        "--tmpdir",
        "--url",
        "-H",
        "--host",
        "--volumepath",
        "--cdi-spec-dir",
        "--db-backend",
    ],
    risky: &[
        "--conmon",
        "--runtime",
        "--runtime-flag",
        "--hooks-dir",
        "--network-cmd-path",
        "--module",
        "--url",
        "-H",
        "--host",
        "--ssh",
        "--identity",
    ],
    clusters: true,
    ..table(&["podman"])
};

/// `kubectl options` (kubectl 1.2x); pflag parsing (`-nNS`, `-n=NS`, `--v=5`). Risky:
/// `--kubeconfig` (a kubeconfig's `exec` credential plugins run programs).
const KUBECTL: OptionTable = OptionTable {
    flags: &[
        "--disable-compression",
        "--insecure-skip-tls-verify",
        "--match-server-version",
        "--warnings-as-errors",
        "-h",
        "--help",
    ],
    with_value: &[
        "--as",
        "--as-group",
        "--as-uid",
        "--cache-dir",
        "--certificate-authority",
        "--client-certificate",
        "--client-key",
        "--cluster",
        "--context",
        "--kubeconfig",
        "--log-flush-frequency",
        "-n",
        "--namespace",
        "--password",
        "--profile",
        "--profile-output",
        "--request-timeout",
        "-s",
        "--server",
        "--tls-server-name",
        "--token",
        "--user",
        "--username",
        "-v",
        "--v",
        "--vmodule",
    ],
    risky: &["--kubeconfig"],
    clusters: true,
    ..table(&["kubectl"])
};

/// `helm --help` "Flags" (helm 3); pflag parsing. Risky: `--kubeconfig` and the registry
/// and repository configuration files.
const HELM: OptionTable = OptionTable {
    flags: &["--debug", "--kube-insecure-skip-tls-verify", "-h", "--help"],
    with_value: &[
        "--burst-limit",
        "--kube-apiserver",
        "--kube-as-group",
        "--kube-as-user",
        "--kube-ca-file",
        "--kube-context",
        "--kube-tls-server-name",
        "--kube-token",
        "--kubeconfig",
        "-n",
        "--namespace",
        "--qps",
        "--registry-config",
        "--repository-cache",
        "--repository-config",
    ],
    risky: &["--kubeconfig", "--registry-config", "--repository-config"],
    clusters: true,
    ..table(&["helm"])
};

/// `terraform -help` "Global options" (terraform 1.x; OpenTofu's `tofu` is the same):
/// `-chdir=DIR` only with `=`; `-help`, `-version` and their spellings.
const TERRAFORM: OptionTable = OptionTable {
    flags: &["-help", "-h", "--help", "-version", "-v", "--version"],
    attached_only: &["-chdir"],
    ..table(&["terraform", "tofu"])
};

/// make(1) / `make --help` (GNU make 4.3–4.4); getopt parsing (grouped short options,
/// attached values, `-j [N]` and `-l [N]` take the next word only when it is a number).
/// `VAR=value` words before the first target set variables; every target named is a goal
/// make runs (`make all deploy`). Risky: other makefiles (`-f`,
/// `-I`), `-E`/`--eval` (makefile text), `-e` (the environment overrides the makefile), and
/// `VAR=value` words (they can change any recipe).
const MAKE: OptionTable = OptionTable {
    flags: &[
        "-b",
        "-m",
        "-B",
        "--always-make",
        "-d",
        "--debug",
        "-e",
        "--environment-overrides",
        "-h",
        "--help",
        "-i",
        "--ignore-errors",
        "-k",
        "--keep-going",
        "-L",
        "--check-symlink-times",
        "-n",
        "--just-print",
        "--dry-run",
        "--recon",
        "-O",
        "--output-sync",
        "-p",
        "--print-data-base",
        "-q",
        "--question",
        "-r",
        "--no-builtin-rules",
        "-R",
        "--no-builtin-variables",
        "-s",
        "--silent",
        "--quiet",
        "--no-silent",
        "-S",
        "--no-keep-going",
        "--stop",
        "-t",
        "--touch",
        "--trace",
        "-v",
        "--version",
        "-w",
        "--print-directory",
        "--no-print-directory",
        "--warn-undefined-variables",
        "--shuffle",
    ],
    with_value: &[
        "-C",
        "--directory",
        "-E",
        "--eval",
        "-f",
        "--file",
        "--makefile",
        "-I",
        "--include-dir",
        "-o",
        "--old-file",
        "--assume-old",
        "-W",
        "--what-if",
        "--new-file",
        "--assume-new",
        "--jobserver-style",
    ],
    attached_only: &["--debug", "-O", "--output-sync", "--shuffle", "--jobs", "--load-average", "--max-load"],
    optional_number: &["-j", "--jobs", "-l", "--load-average", "--max-load"],
    risky: &["-E", "--eval", "-f", "--file", "--makefile", "-I", "--include-dir", "-e", "--environment-overrides"],
    clusters: true,
    assignments: true,
    every_operand: true,
    ..table(&["make", "gmake"])
};

/// go(1) / `go help` (go 1.2x): `-C dir` before the command, also `-C=dir`, `--C dir`.
const GO: OptionTable = OptionTable { with_value: &["-C", "--C"], ..table(&["go"]) };

/// `gh --help` "FLAGS" (gh 2.x): only `--help` and `--version` precede a command.
const GH: OptionTable = OptionTable { flags: &["-h", "--help", "--version"], ..table(&["gh"]) };

/// systemctl(1) "OPTIONS" / `systemctl --help` (systemd 252–257); getopt parsing.
const SYSTEMCTL: OptionTable = OptionTable {
    flags: &[
        "-h",
        "--help",
        "--version",
        "--system",
        "--user",
        "--failed",
        "-a",
        "--all",
        "-l",
        "--full",
        "-r",
        "--recursive",
        "--reverse",
        "--after",
        "--before",
        "--with-dependencies",
        "-T",
        "--show-transaction",
        "--show-types",
        "--value",
        "-i",
        "--now",
        "--dry-run",
        "-q",
        "--quiet",
        "--no-warn",
        "--wait",
        "--no-block",
        "--no-wall",
        "--no-reload",
        "--no-pager",
        "--no-legend",
        "--no-ask-password",
        "--global",
        "--runtime",
        "-f",
        "--force",
        "--firmware-setup",
        "--plain",
        "--read-only",
        "--mkdir",
        "--marked",
    ],
    with_value: &[
        "-H",
        "--host",
        "-M",
        "--machine",
        "-t",
        "--type",
        "--state",
        "-p",
        "--property",
        "-P",
        "--job-mode",
        "--check-inhibitors",
        "--kill-whom",
        "--kill-value",
        "-s",
        "--signal",
        "--what",
        "--legend",
        "--preset-mode",
        "--root",
        "--image",
        "--image-policy",
        "-n",
        "--lines",
        "-o",
        "--output",
        "--boot-loader-menu",
        "--boot-loader-entry",
        "--reboot-argument",
        "--timestamp",
        "--message",
        "--drop-in",
        "--when",
    ],
    clusters: true,
    ..table(&["systemctl"])
};

/// Every table, looked up by [`super::options::table_for`].
pub(super) const OPTION_TABLES: &[OptionTable] = &[
    GIT, CARGO, RUSTUP, NPM, NPX, PNPM, YARN, BUN, PIP, UV, PYTHON, DOCKER, PODMAN, KUBECTL, HELM, TERRAFORM, MAKE, GO,
    GH, SYSTEMCTL,
];
