//! Programs that start another program given on their command line as their subcommand's
//! operands: `npx cargo publish`, `npm exec -- npm publish`, `uv run cargo publish`,
//! `rustup run stable cargo publish`, `busybox rm -rf x`. Unlike the transparent wrappers of
//! [`super::Wrapper`] the launcher itself stays a part that rules judge (`npx **` may be
//! allowed or not); the program it starts is judged as a part of its own.
//!
//! Option lists follow each program's manual or `--help`: npm-exec(1) and npx(1) (npm
//! 10–11), npm-explore(1), `pnpm exec --help` / `pnpm dlx --help` (pnpm 9–10), `yarn exec` / `yarn dlx`
//! (yarnpkg.com CLI), `bunx --help` (bun 1.x), `uv run --help` / `uv tool run --help`
//! (uv 0.5–0.8), rustup(1) `run`, busybox(1), `poetry run`, `pipenv run`, `conda run --help`,
//! ssh-agent(1), flatpak-spawn(1).

/// A launcher: `program SUBCOMMAND… [OPTIONS] [--] COMMAND ARGS…`.
pub(crate) struct Launcher {
    /// Program base name.
    pub program: &'static str,
    /// Subcommand words after the program's global options (`["exec"]`, `["tool", "run"]`);
    /// empty for a program that launches directly (`npx`).
    pub path: &'static [&'static str],
    /// Options without a value.
    pub flags: &'static [&'static str],
    /// Options taking a value (next word or `--long=value`).
    pub with_value: &'static [&'static str],
    /// Options whose value is a shell command line the launcher runs (`npx -c 'cmd'`).
    pub script: &'static [&'static str],
    /// Flags after which the command's words are joined into a shell command line
    /// (`pnpm exec --shell-mode`).
    pub shell_mode: &'static [&'static str],
    /// The command's words are always one shell command line (`npm explore PKG -- CMD`).
    pub shell_line: bool,
    /// Flags after which the first word names a Python module (`uv run -m pytest`).
    pub module: &'static [&'static str],
    /// Words before the command (`rustup run TOOLCHAIN`).
    pub positional: usize,
    /// The command word may be a package spec (`npm@10`, `@scope/tool@1`): the program is
    /// its name without scope and version.
    pub package_spec: bool,
    /// Options are read by npm's `nopt`: a flag takes a following `true`/`false`.
    pub nopt: bool,
}

const fn launcher(program: &'static str, path: &'static [&'static str]) -> Launcher {
    Launcher {
        program,
        path,
        flags: &[],
        with_value: &[],
        script: &[],
        shell_mode: &[],
        shell_line: false,
        module: &[],
        positional: 0,
        package_spec: false,
        nopt: false,
    }
}

/// npm-exec(1) / npx(1) options (npm's configuration options that commonly appear).
const NPM_EXEC: Launcher = Launcher {
    flags: &[
        "-y",
        "--yes",
        "--no",
        "--no-yes",
        "-q",
        "--quiet",
        "-s",
        "--silent",
        "--offline",
        "--prefer-offline",
        "--prefer-online",
        "--ignore-scripts",
        "--include-workspace-root",
        "-ws",
        "--workspaces",
        "-g",
        "--global",
    ],
    with_value: &[
        "-p",
        "--package",
        "--prefix",
        "-w",
        "--workspace",
        "--registry",
        "--userconfig",
        "--cache",
        "--loglevel",
        "--script-shell",
        "--node-options",
    ],
    script: &["-c", "--call"],
    package_spec: true,
    nopt: true,
    ..launcher("npm", &["exec"])
};

/// `uv run --help` (uv 0.5–0.8).
const UV_RUN_FLAGS: &[&str] = &[
    "-q",
    "--quiet",
    "-v",
    "--verbose",
    "-n",
    "--no-cache",
    "--offline",
    "--isolated",
    "--no-sync",
    "--locked",
    "--frozen",
    "--no-project",
    "--all-packages",
    "--all-extras",
    "--no-dev",
    "--dev",
    "--only-dev",
    "--no-default-groups",
    "--all-groups",
    "--exact",
    "--inexact",
    "--active",
    "--no-active",
    "--no-editable",
    "--no-env-file",
    "--gui-script",
    "-s",
    "--script",
    "--refresh",
    "-U",
    "--upgrade",
    "--reinstall",
    "--compile-bytecode",
    "--no-build-isolation",
    "--no-build",
    "--no-binary",
    "--no-config",
    "--native-tls",
    "--no-progress",
    "--managed-python",
    "--no-managed-python",
    "--no-python-downloads",
    "--preview",
];
const UV_RUN_VALUES: &[&str] = &[
    "--with",
    "--with-editable",
    "--with-requirements",
    "--extra",
    "--no-extra",
    "--group",
    "--no-group",
    "--only-group",
    "--package",
    "-p",
    "--python",
    "--env-file",
    "--directory",
    "--project",
    "--index",
    "--default-index",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--index-strategy",
    "--keyring-provider",
    "--resolution",
    "--prerelease",
    "--exclude-newer",
    "--link-mode",
    "--refresh-package",
    "-P",
    "--upgrade-package",
    "--reinstall-package",
    "--python-preference",
    "--cache-dir",
    "--color",
    "--config-file",
    "--from",
];

/// Every launcher Steward opens.
pub(crate) const LAUNCHERS: &[Launcher] = &[
    NPM_EXEC,
    Launcher { program: "npx", path: &[], ..NPM_EXEC },
    // npm-explore(1): runs the command in an installed package's folder.
    Launcher { positional: 1, shell_line: true, ..launcher("npm", &["explore"]) },
    Launcher {
        flags: &["-r", "--recursive", "--parallel", "--no-bail", "--report-summary", "-c", "--shell-mode"],
        with_value: &["--resume-from", "--package", "--allow-build", "-C", "--dir", "--filter", "-F"],
        shell_mode: &["-c", "--shell-mode"],
        package_spec: true,
        nopt: true,
        ..launcher("pnpm", &["exec"])
    },
    Launcher {
        flags: &["-c", "--shell-mode", "--silent", "-s"],
        with_value: &["--package", "--allow-build"],
        shell_mode: &["-c", "--shell-mode"],
        package_spec: true,
        nopt: true,
        ..launcher("pnpm", &["dlx"])
    },
    Launcher {
        flags: &["-c", "--shell-mode", "--silent", "-s"],
        with_value: &["--package", "--allow-build"],
        shell_mode: &["-c", "--shell-mode"],
        package_spec: true,
        nopt: true,
        ..launcher("pnpx", &[])
    },
    launcher("yarn", &["exec"]),
    Launcher {
        flags: &["-q", "--quiet"],
        with_value: &["-p", "--package"],
        package_spec: true,
        ..launcher("yarn", &["dlx"])
    },
    Launcher {
        flags: &["--bun", "--silent", "--verbose", "--no-install"],
        with_value: &["-p", "--package"],
        package_spec: true,
        ..launcher("bunx", &[])
    },
    Launcher {
        flags: &["--bun", "--silent", "--verbose", "--no-install"],
        with_value: &["-p", "--package"],
        package_spec: true,
        ..launcher("bun", &["x"])
    },
    Launcher {
        flags: UV_RUN_FLAGS,
        with_value: UV_RUN_VALUES,
        module: &["-m", "--module"],
        ..launcher("uv", &["run"])
    },
    Launcher { flags: UV_RUN_FLAGS, with_value: UV_RUN_VALUES, package_spec: true, ..launcher("uv", &["tool", "run"]) },
    Launcher { flags: UV_RUN_FLAGS, with_value: UV_RUN_VALUES, package_spec: true, ..launcher("uvx", &[]) },
    Launcher { flags: &["--install"], positional: 1, ..launcher("rustup", &["run"]) },
    // ssh-agent(1): `ssh-agent [-c | -s] [-Dd] [-a bind_address] [-E fingerprint_hash]
    // [-O option] [-P allowed_providers] [-t life] [command [arg ...]]`.
    Launcher {
        flags: &["-c", "-s", "-D", "-d", "-k"],
        with_value: &["-a", "-E", "-O", "-P", "-t"],
        ..launcher("ssh-agent", &[])
    },
    // flatpak-spawn(1): `flatpak-spawn [OPTION…] COMMAND [ARGUMENT…]`.
    Launcher {
        flags: &[
            "--host",
            "--clear-env",
            "--watch-bus",
            "--expose-pids",
            "--share-pids",
            "--latest-version",
            "--no-network",
            "--sandbox",
            "--sandbox-a11y",
            "-v",
            "--verbose",
        ],
        with_value: &[
            "--env",
            "--unset-env",
            "--forward-fd",
            "--directory",
            "--sandbox-expose",
            "--sandbox-expose-ro",
            "--sandbox-expose-path",
            "--sandbox-expose-path-ro",
            "--sandbox-flag",
            "--app-path",
            "--usr-path",
        ],
        ..launcher("flatpak-spawn", &[])
    },
    launcher("busybox", &[]),
    launcher("toybox", &[]),
    Launcher { flags: &["-q", "--quiet", "-v", "--verbose", "-n", "--no-interaction"], ..launcher("poetry", &["run"]) },
    launcher("pipenv", &["run"]),
    Launcher {
        flags: &["--no-capture-output", "--live-stream", "-v", "--verbose", "--debug"],
        with_value: &["-n", "--name", "-p", "--prefix", "--cwd"],
        ..launcher("conda", &["run"])
    },
];

/// The launchers of `program`.
pub(crate) fn launchers_of(program: &str) -> impl Iterator<Item = &'static Launcher> + '_ {
    LAUNCHERS.iter().filter(move |l| l.program == program)
}

/// What a launcher starts, read from the words after its subcommand.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Launched {
    /// Index into the words of the program's first word (`None`: it starts none itself).
    pub command_at: Option<usize>,
    /// Shell command lines given to options (`npx -c 'npm publish'`).
    pub scripts: Vec<String>,
    /// The command's words are one shell command line.
    pub shell_mode: bool,
    /// The first word is a Python module.
    pub module: bool,
}

/// Which option or computed word keeps a launcher's command from being known
/// ([`Launcher::read`]); `program` is the launcher's program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LaunchError {
    /// A word is expanded at run time where the launcher reads its options.
    #[error("`{word}` is expanded at run time where `{program}` reads its options")]
    Computed { program: &'static str, word: String },
    /// An option that takes a command line is the last word.
    #[error("`{program} {option}` has no value")]
    MissingValue { program: &'static str, option: String },
    /// The command line given to an option is computed at run time.
    #[error("the `{program} {option}` command line is computed at run time")]
    ComputedScript { program: &'static str, option: String },
    /// An option the launcher's table does not list.
    #[error(
        "`{program} {subcommand}` option `{word}` is not one Steward knows, so which program it starts cannot be known"
    )]
    UnknownOption { program: &'static str, subcommand: String, word: String },
}

impl Launcher {
    /// Reads the launcher's options in `words` (after its subcommand). Errors: which option or
    /// computed word keeps the command from being known.
    pub(crate) fn read(&self, words: &[String], dynamic: &[bool]) -> Result<Launched, LaunchError> {
        let mut out = Launched { shell_mode: self.shell_line, ..Launched::default() };
        let mut positional = self.positional;
        let mut k = 0;
        while let Some(word) = words.get(k) {
            if dynamic.get(k).copied().unwrap_or(true) {
                return Err(LaunchError::Computed { program: self.program, word: word.clone() });
            }
            if word == "--" {
                k += 1;
                break;
            }
            if !(word.starts_with('-') && word.len() > 1) {
                if positional > 0 {
                    positional -= 1;
                    k += 1;
                    continue;
                }
                break;
            }
            let (name, attached) = match word.split_once('=') {
                Some((name, value)) if name.starts_with("--") => (name, Some(value)),
                _ => (word.as_str(), None),
            };
            let next = words.get(k + 1);
            if self.script.contains(&name) {
                let value = match attached {
                    Some(value) => value.to_string(),
                    None => next
                        .cloned()
                        .ok_or_else(|| LaunchError::MissingValue { program: self.program, option: name.to_string() })?,
                };
                if attached.is_none() && dynamic.get(k + 1).copied().unwrap_or(true) {
                    return Err(LaunchError::ComputedScript { program: self.program, option: name.to_string() });
                }
                out.scripts.push(value);
                k += if attached.is_some() { 1 } else { 2 };
            } else if self.flags.contains(&name) || self.module.contains(&name) || self.shell_mode.contains(&name) {
                out.shell_mode |= self.shell_mode.contains(&name);
                out.module |= self.module.contains(&name);
                let boolean = self.nopt
                    && attached.is_none()
                    && next.is_some_and(|n| n == "true" || n == "false")
                    && !dynamic.get(k + 1).copied().unwrap_or(true);
                k += if boolean { 2 } else { 1 };
            } else if self.with_value.contains(&name) {
                k += if attached.is_some() { 1 } else { 2 };
            } else {
                return Err(LaunchError::UnknownOption {
                    program: self.program,
                    subcommand: self.path.join(" "),
                    word: word.clone(),
                });
            }
        }
        if positional > 0 && k >= words.len() {
            return Ok(out);
        }
        out.command_at = (k < words.len()).then_some(k);
        Ok(out)
    }
}

/// The program a package spec names: `npm@10` → `npm`, `@scope/tool@1` → `tool`; a path or
/// anything else unchanged.
pub(crate) fn package_program(spec: &str) -> &str {
    if spec.starts_with('.') || spec.starts_with('/') || spec.contains(':') {
        return spec;
    }
    let unscoped = match spec.strip_prefix('@') {
        Some(rest) => rest.split_once('/').map_or(rest, |(_, name)| name),
        None => spec,
    };
    unscoped.split('@').next().unwrap_or(unscoped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn launcher_options_are_read_up_to_the_command() {
        let npx = launchers_of("npx").next().unwrap();
        let w = words("--yes -p x npm publish");
        let got = npx.read(&w, &vec![false; w.len()]).unwrap();
        assert_eq!(got.command_at, Some(3));
        let w = words("--yes true -- npm publish");
        assert_eq!(npx.read(&w, &vec![false; w.len()]).unwrap().command_at, Some(3));
        let w = words("-c script");
        assert_eq!(npx.read(&w, &vec![false; w.len()]).unwrap().scripts, ["script"]);
        let w = words("--frob npm publish");
        assert!(npx.read(&w, &vec![false; w.len()]).is_err());
        let rustup = launchers_of("rustup").next().unwrap();
        let w = words("--install stable cargo publish");
        assert_eq!(rustup.read(&w, &vec![false; w.len()]).unwrap().command_at, Some(2));
    }

    #[test]
    fn package_specs_name_their_program() {
        assert_eq!(package_program("npm@10"), "npm");
        assert_eq!(package_program("@scope/tool@1.2"), "tool");
        assert_eq!(package_program("./bin/x"), "./bin/x");
        assert_eq!(package_program("cargo"), "cargo");
    }
}
