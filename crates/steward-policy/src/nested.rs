//! Commands a command runs besides itself (SPEC T4): the program a launcher starts (`npx
//! cargo publish`, `npm exec -- npm publish`, `uv run …`, `rustup run stable cargo publish`,
//! `busybox rm -rf x`), the canonical spelling of a subcommand written another way (`npm
//! pub` is `npm publish`, `docker container run` is `docker run`), and the `package.json`
//! scripts a package manager runs (`npm run deploy`, `npm test`, the install and publish
//! lifecycle scripts). The gate judges each as a part of its own; the strictest decision
//! wins, so an allow rule on the outer program does not allow what it runs.

use std::path::{Path, PathBuf};

use crate::programs::launchers::{Launched, launchers_of, package_program};
use crate::programs::options::global_options;
use crate::programs::subcommands::{canonical, npm_command};
use crate::shell::SimpleCommand;

/// Largest `package.json` read, in bytes.
const MAX_PACKAGE_JSON: u64 = 1024 * 1024;

/// What a nested command is.
pub(crate) enum Run {
    /// An argv started in the outer command's directory, with the `dynamic` flags of its words.
    Argv { words: Vec<String>, dynamic: Vec<bool> },
    /// A shell command line, run where `dir` says.
    Line { text: String, dir: LineDir },
}

/// Where a nested command line runs.
#[derive(Clone)]
pub(crate) enum LineDir {
    /// In the outer command's directory.
    Same,
    /// In this folder, relative to the workspace root.
    Inside(PathBuf),
    /// In a folder outside the workspace (a `package.json` above it): relative paths in it
    /// are not the workspace's.
    Outside,
}

/// One command a command runs.
pub(crate) struct Nested {
    /// How it comes to run, for reasons (`its \`deploy\` script`).
    pub what: String,
    pub run: Run,
}

/// Package managers whose subcommands run `package.json` scripts.
const PACKAGE_MANAGERS: &[&str] = &["npm", "pnpm", "yarn", "bun"];

/// Scripts run by npm's install-like commands (npm-scripts(7) "Life Cycle Operation Order").
const INSTALL_SCRIPTS: &[&str] =
    &["preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare"];

/// The commands `cmd` runs besides itself, and, when part of what it runs cannot be known, a
/// sentence saying why (an option a launcher table does not list, a computed word, a
/// `package.json` that cannot be read, an unknown directory). `dir`: its absolute working
/// directory, `None` when unknown; `root`: the workspace root.
pub(crate) fn nested(cmd: &SimpleCommand, dir: Option<&Path>, root: &Path) -> (Vec<Nested>, Option<String>) {
    let mut out = Vec::new();
    let unknown = collect(&mut out, cmd, dir, root).err().map(|e| e.to_string());
    (out, unknown)
}

/// Why part of what a command runs cannot be known: the sentence [`nested`] gives.
#[derive(Debug, thiserror::Error)]
enum Unknowable {
    /// A launcher's option or computed word.
    #[error(transparent)]
    Launcher(#[from] crate::programs::launchers::LaunchError),
    /// What `make` runs.
    #[error(transparent)]
    Make(#[from] crate::makefile::MakeError),
    /// `make` in an unknown working directory.
    #[error("the working directory is unknown, so which makefile `make` reads is too")]
    MakeDirectory,
    /// A launcher or package manager whose subcommand cannot be known.
    #[error("`{0}`'s subcommand cannot be known, so what it starts or which scripts it runs cannot be known")]
    Subcommand(String),
    /// `cargo SUB` in an unknown working directory, where SUB may be an alias.
    #[error("the working directory is unknown, so whether `cargo {0}` is an alias is too")]
    CargoDirectory(String),
    /// A cargo configuration file that decides what `cargo SUB` runs cannot be read.
    #[error("whether `cargo {sub}` is an alias cannot be known: {source}")]
    CargoConfig {
        /// The subcommand.
        sub: String,
        /// Why.
        source: crate::cargo_config::CargoConfigError,
    },
    /// A file that decides what runs cannot be read.
    #[error("`{}` cannot be read: {source}", file.display())]
    Unreadable {
        /// The file.
        file: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A `package.json` that does not parse.
    #[error("`{}` cannot be parsed: {source}", file.display())]
    Unparsable {
        /// The file.
        file: std::path::PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The script name is computed at run time.
    #[error("the script name `{0}` is computed at run time")]
    ScriptName(String),
    /// An option that runs scripts of packages elsewhere.
    #[error("`{program} {option}` runs scripts of packages elsewhere, which Steward does not read")]
    Elsewhere {
        /// The package manager.
        program: String,
        /// The option.
        option: String,
    },
    /// A package manager in an unknown working directory.
    #[error("the working directory is unknown, so which `package.json` `{0}` reads is too")]
    PackageDirectory(String),
    /// An `.npmrc` that sets which shell or options run scripts.
    #[error("`{}` sets which shell or options run its scripts", .0.display())]
    Npmrc(std::path::PathBuf),
    /// `scripts` of a `package.json` is not an object.
    #[error("`{}`: `scripts` is not an object", .0.display())]
    ScriptsNotObject(std::path::PathBuf),
    /// Arguments passed to a script are computed at run time.
    #[error("arguments passed to a `{0}` script are computed at run time")]
    PassedArguments(String),
    /// A script of a `package.json` is not a string.
    #[error("`{}`: the script `{name}` is not a string", file.display())]
    ScriptNotString {
        /// The `package.json`.
        file: std::path::PathBuf,
        /// The script.
        name: String,
    },
}

fn collect(out: &mut Vec<Nested>, cmd: &SimpleCommand, dir: Option<&Path>, root: &Path) -> Result<(), Unknowable> {
    let program = cmd.program.as_str();
    let args = cmd.argv.get(1..).unwrap_or(&[]);
    let dynamic = cmd.dynamic.get(1..).unwrap_or(&[]);
    let direct = launchers_of(program).find(|l| l.path.is_empty());
    let launches = launchers_of(program).next().is_some();
    if let Some(launcher) = direct {
        let read = launcher.read(args, dynamic)?;
        launched(out, program, launcher.package_spec, &read, args, dynamic);
        return Ok(());
    }
    if program == "make" || program == "gmake" {
        let Some(dir) = dir else {
            return Err(Unknowable::MakeDirectory);
        };
        // `MAKEFILES` as make gets it: set for this command, else inherited.
        let makefiles = cmd
            .env
            .iter()
            .rev()
            .find(|(name, _)| name == "MAKEFILES")
            .map(|(_, value)| value.clone())
            .or_else(|| std::env::var("MAKEFILES").ok());
        for text in crate::makefile::recipes(args, dynamic, dir, makefiles.as_deref())? {
            out.push(Nested {
                what: format!("`{program}` runs the recipe line `{text}`"),
                run: Run::Line { text, dir: LineDir::Same },
            });
        }
        return Ok(());
    }
    let options = global_options(program, args, dynamic);
    if options.unsure.is_some() {
        if launches || PACKAGE_MANAGERS.contains(&program) {
            return Err(Unknowable::Subcommand(program.to_string()));
        }
        return Ok(());
    }
    let at = options.start;
    if at >= args.len() {
        return Ok(());
    }
    if program == "cargo"
        && !dynamic.get(at).copied().unwrap_or(true)
        && !CARGO_BUILTINS.contains(&args[at].as_str())
        && let Some((alias, from)) = cargo_alias(&args[at], &cmd.env, dir)?
    {
        let mut words = vec![program.to_string()];
        words.extend(args[..at].iter().cloned());
        words.extend(alias.iter().cloned());
        words.extend(args[at + 1..].iter().cloned());
        let flag = |k: usize| dynamic.get(k).copied().unwrap_or(true);
        let mut flags = vec![false];
        flags.extend((0..at).map(flag));
        flags.extend(alias.iter().map(|_| false));
        flags.extend((at + 1..args.len()).map(flag));
        out.push(Nested {
            what: format!("`cargo {}` is the alias `cargo {}` of {from}", args[at], alias.join(" ")),
            run: Run::Argv { words, dynamic: flags },
        });
    }
    let canonical_args = canonical(program, args, dynamic, at);
    if let Some((words, flags)) = &canonical_args {
        let mut argv = vec![program.to_string()];
        argv.extend(words.iter().cloned());
        let mut argv_dynamic = vec![false];
        argv_dynamic.extend(flags.iter().copied());
        out.push(Nested {
            what: format!("`{program} {}` is `{program} {}`", args[at], words[at]),
            run: Run::Argv { words: argv, dynamic: argv_dynamic },
        });
    }
    let (words, dynamic): (&[String], &[bool]) =
        canonical_args.as_ref().map_or((args, dynamic), |(w, d)| (w.as_slice(), d.as_slice()));
    for launcher in launchers_of(program) {
        let path = launcher.path;
        let fits = words.len() >= at + path.len() && words[at..at + path.len()].iter().zip(path).all(|(w, p)| w == p);
        if !fits || path.is_empty() {
            continue;
        }
        let from = at + path.len();
        let read = launcher.read(&words[from..], dynamic.get(from..).unwrap_or(&[]))?;
        launched(out, program, launcher.package_spec, &read, &words[from..], dynamic.get(from..).unwrap_or(&[]));
    }
    if PACKAGE_MANAGERS.contains(&program) {
        scripts(out, program, words, dynamic, at, dir, root)?;
    }
    Ok(())
}

/// Appends what a launcher starts.
fn launched(
    out: &mut Vec<Nested>,
    program: &str,
    package_spec: bool,
    read: &Launched,
    words: &[String],
    dynamic: &[bool],
) {
    for script in &read.scripts {
        out.push(Nested {
            what: format!("`{program}` runs the command line `{script}`"),
            run: Run::Line { text: script.clone(), dir: LineDir::Same },
        });
    }
    let Some(at) = read.command_at else { return };
    let mut argv: Vec<String> = words[at..].to_vec();
    let mut flags: Vec<bool> = (at..words.len()).map(|k| dynamic.get(k).copied().unwrap_or(true)).collect();
    if read.shell_mode {
        let text = argv.join(" ");
        out.push(Nested {
            what: format!("`{program}` runs the command line `{text}`"),
            run: Run::Line { text, dir: LineDir::Same },
        });
        return;
    }
    if package_spec && let Some(first) = argv.first_mut() {
        *first = package_program(first).to_string();
    }
    if read.module {
        argv.splice(0..0, ["python3".to_string(), "-m".to_string()]);
        flags.splice(0..0, [false, false]);
    }
    let shown = shell_words::join(&argv);
    out.push(Nested { what: format!("`{program}` starts `{shown}`"), run: Run::Argv { words: argv, dynamic: flags } });
}

/// Appends the `package.json` scripts `program ARGS` runs, its subcommand at `args[at]`.
fn scripts(
    out: &mut Vec<Nested>,
    program: &str,
    args: &[String],
    dynamic: &[bool],
    at: usize,
    dir: Option<&Path>,
    root: &Path,
) -> Result<(), Unknowable> {
    let sub = args[at].as_str();
    let sub = if program == "npm" { npm_command(sub).unwrap_or(sub) } else { sub };
    let operands: Vec<(usize, &String)> =
        args.iter().enumerate().skip(at + 1).filter(|(_, w)| !w.starts_with('-') || w.as_str() == "-").collect();
    let mut names: Vec<String> = Vec::new();
    let mut main: Vec<String> = Vec::new();
    let mut passed_from = None;
    // pnpm, yarn and bun run a program of that name when no script has it (`yarn tsc`).
    let mut bin_at = None;
    let cycle = |name: &str, names: &mut Vec<String>, main: &mut Vec<String>| {
        names.extend([format!("pre{name}"), name.to_string(), format!("post{name}")]);
        main.push(name.to_string());
    };
    match sub {
        "run" | "run-script" => {
            let Some((k, name)) = operands.first() else { return Ok(()) };
            if dynamic.get(*k).copied().unwrap_or(true) {
                return Err(Unknowable::ScriptName(name.to_string()));
            }
            cycle(name, &mut names, &mut main);
            passed_from = Some(k + 1);
            bin_at = (program != "npm").then_some(*k);
        }
        "test" | "start" | "stop" | "restart" => {
            cycle(sub, &mut names, &mut main);
            if sub == "restart" {
                cycle("stop", &mut names, &mut main);
                cycle("start", &mut names, &mut main);
            }
            passed_from = Some(at + 1);
        }
        "install" | "ci" | "install-test" | "install-ci-test" | "rebuild" | "add" | "i" => {
            names.extend(INSTALL_SCRIPTS.iter().map(|s| s.to_string()));
            if sub.ends_with("test") {
                cycle("test", &mut names, &mut main);
            }
        }
        "pack" => names.extend(["prepack", "prepare", "postpack"].map(String::from)),
        "publish" => names
            .extend(["prepublishOnly", "prepack", "prepare", "postpack", "publish", "postpublish"].map(String::from)),
        "version" => names.extend(["preversion", "version", "postversion"].map(String::from)),
        // pnpm, yarn and bun run a script of that name for a word that is not one of their
        // commands (`yarn deploy`).
        _ if program != "npm" && !builtin(program, sub) => {
            cycle(sub, &mut names, &mut main);
            passed_from = Some(at + 1);
            bin_at = Some(at);
        }
        _ => return Ok(()),
    }
    if program == "yarn" && sub == "install" {
        names.extend(INSTALL_SCRIPTS.iter().map(|s| s.to_string()));
    }
    const ELSEWHERE: &[&str] = &[
        "-w",
        "--workspace",
        "-ws",
        "--workspaces",
        "-C",
        "--prefix",
        "--dir",
        "--cwd",
        "-F",
        "--filter",
        "-r",
        "--recursive",
    ];
    if let Some(option) =
        args.iter().map(|a| a.split_once('=').map_or(a.as_str(), |(n, _)| n)).find(|a| ELSEWHERE.contains(a))
    {
        return Err(Unknowable::Elsewhere { program: program.to_string(), option: option.to_string() });
    }
    let Some(dir) = dir else {
        return Err(Unknowable::PackageDirectory(program.to_string()));
    };
    let launch_bin = |out: &mut Vec<Nested>| {
        if let Some(from) = bin_at {
            let words = args[from..].to_vec();
            let flags = (from..args.len()).map(|k| dynamic.get(k).copied().unwrap_or(true)).collect();
            out.push(Nested {
                what: format!("`{program}` runs the program `{}` when no script has that name", args[from]),
                run: Run::Argv { words, dynamic: flags },
            });
        }
    };
    // npm (and the others) use the nearest folder with a `package.json`, wherever it lies.
    let Some(package_dir) = dir.ancestors().find(|d| d.join("package.json").symlink_metadata().is_ok()) else {
        launch_bin(out);
        return Ok(());
    };
    let (file, table) = package_scripts(package_dir)?;
    let passed: Vec<&String> =
        passed_from.map_or(Vec::new(), |from| args.iter().skip(from).filter(|a| a.as_str() != "--").collect());
    if passed_from.is_some_and(|from| dynamic.iter().skip(from).any(|d| *d)) {
        return Err(Unknowable::PassedArguments(program.to_string()));
    }
    if main.first().is_some_and(|name| !table.as_ref().is_some_and(|t| t.contains_key(name))) {
        launch_bin(out);
    }
    names.dedup();
    let mut packages = vec![(package_dir.to_path_buf(), file, table)];
    // In a member of npm workspaces the root's configuration applies and install-like commands
    // run the root's scripts: the root's scripts of the same names are judged too.
    if let Some(root_dir) = workspaces_root(package_dir)? {
        let (file, table) = package_scripts(&root_dir)?;
        packages.push((root_dir, file, table));
    }
    for (package_dir, file, table) in packages {
        let Some(table) = table else { continue };
        let run_dir = match package_dir.strip_prefix(root) {
            Ok(rel) => LineDir::Inside(rel.to_path_buf()),
            Err(_) => LineDir::Outside,
        };
        let shown_file =
            if package_dir.starts_with(root) { "package.json".to_string() } else { file.display().to_string() };
        for name in &names {
            let Some(script) = table.get(name) else { continue };
            let Some(script) = script.as_str() else {
                return Err(Unknowable::ScriptNotString { file, name: name.clone() });
            };
            let mut text = script.to_string();
            if main.contains(name) && !passed.is_empty() {
                text.push(' ');
                text.push_str(&shell_words::join(&passed));
            }
            out.push(Nested {
                what: format!("`{program} {sub}` runs the `{name}` script of `{shown_file}`"),
                run: Run::Line { text, dir: run_dir.clone() },
            });
        }
    }
    Ok(())
}

/// The `package.json` of `package_dir` and its `scripts` (`None` when it has none), after
/// checking the `.npmrc` beside it. Errors: either cannot be read or parsed, the `.npmrc`
/// changes how scripts run, `scripts` is not an object.
fn package_scripts(
    package_dir: &Path,
) -> Result<(PathBuf, Option<serde_json::Map<String, serde_json::Value>>), Unknowable> {
    let file = package_dir.join("package.json");
    let json = read_json(&file)?;
    let npmrc = package_dir.join(".npmrc");
    if npmrc.symlink_metadata().is_ok() {
        let text = read_limited(&npmrc).map_err(|source| Unknowable::Unreadable { file: npmrc.clone(), source })?;
        if ["shell", "node-options", "userconfig", "globalconfig"].iter().any(|key| text.contains(key)) {
            return Err(Unknowable::Npmrc(npmrc));
        }
    }
    match json.get("scripts") {
        None => Ok((file, None)),
        Some(serde_json::Value::Object(table)) => Ok((file, Some(table.clone()))),
        Some(_) => Err(Unknowable::ScriptsNotObject(file)),
    }
}

/// The root of the npm workspaces `package_dir` may belong to: the nearest folder above it
/// whose `package.json` has `workspaces` (npm looks for it the same way). Errors: a
/// `package.json` on the way cannot be read or parsed.
fn workspaces_root(package_dir: &Path) -> Result<Option<PathBuf>, Unknowable> {
    for folder in package_dir.ancestors().skip(1) {
        let file = folder.join("package.json");
        if file.symlink_metadata().is_err() {
            continue;
        }
        if read_json(&file)?.get("workspaces").is_some() {
            return Ok(Some(folder.to_path_buf()));
        }
    }
    Ok(None)
}

/// A `package.json`, read and parsed. Errors: it cannot be.
fn read_json(file: &Path) -> Result<serde_json::Value, Unknowable> {
    let text = read_limited(file).map_err(|source| Unknowable::Unreadable { file: file.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|source| Unknowable::Unparsable { file: file.to_path_buf(), source })
}

/// pnpm's, yarn's and bun's own commands (`pnpm --help`, `yarn --help` for yarn 1 and 2+,
/// `bun --help`), which run no script of their name.
fn builtin(program: &str, sub: &str) -> bool {
    const PNPM: &[&str] = &[
        "add",
        "audit",
        "bin",
        "cat-file",
        "cat-index",
        "config",
        "create",
        "dedupe",
        "deploy",
        "dlx",
        "doctor",
        "env",
        "exec",
        "fetch",
        "find-hash",
        "i",
        "import",
        "init",
        "install",
        "licenses",
        "link",
        "list",
        "ln",
        "ls",
        "outdated",
        "pack",
        "patch",
        "patch-commit",
        "patch-remove",
        "prune",
        "publish",
        "rb",
        "rebuild",
        "recursive",
        "remove",
        "rm",
        "root",
        "run",
        "server",
        "setup",
        "start",
        "store",
        "t",
        "test",
        "un",
        "uninstall",
        "unlink",
        "up",
        "update",
        "why",
    ];
    const YARN: &[&str] = &[
        "add",
        "audit",
        "autoclean",
        "bin",
        "cache",
        "check",
        "config",
        "constraints",
        "create",
        "dedupe",
        "dlx",
        "exec",
        "explain",
        "generate-lock-entry",
        "global",
        "help",
        "import",
        "info",
        "init",
        "install",
        "licenses",
        "link",
        "list",
        "login",
        "logout",
        "node",
        "npm",
        "outdated",
        "owner",
        "pack",
        "patch",
        "patch-commit",
        "plugin",
        "policies",
        "publish",
        "rebuild",
        "remove",
        "run",
        "search",
        "set",
        "stage",
        "tag",
        "team",
        "test",
        "unlink",
        "unplug",
        "up",
        "upgrade",
        "upgrade-interactive",
        "version",
        "versions",
        "why",
        "workspace",
        "workspaces",
    ];
    const BUN: &[&str] = &[
        "add", "audit", "build", "create", "exec", "i", "info", "init", "install", "link", "outdated", "patch", "pm",
        "publish", "remove", "repl", "rm", "run", "test", "unlink", "update", "upgrade", "why", "x",
    ];
    match program {
        "pnpm" => PNPM.contains(&sub),
        "yarn" => YARN.contains(&sub),
        "bun" => BUN.contains(&sub),
        _ => false,
    }
}

/// cargo's built-in commands and aliases (cargo 1.8x), which a configured alias cannot
/// replace.
const CARGO_BUILTINS: &[&str] = &[
    "add",
    "b",
    "bench",
    "build",
    "c",
    "check",
    "clean",
    "config",
    "d",
    "doc",
    "fetch",
    "fix",
    "generate-lockfile",
    "git-checkout",
    "help",
    "info",
    "init",
    "install",
    "locate-project",
    "login",
    "logout",
    "metadata",
    "new",
    "owner",
    "package",
    "pkgid",
    "publish",
    "r",
    "read-manifest",
    "remove",
    "report",
    "rm",
    "run",
    "rustc",
    "rustdoc",
    "search",
    "t",
    "test",
    "tree",
    "uninstall",
    "update",
    "vendor",
    "verify-project",
    "version",
    "yank",
];

/// The alias `cargo SUB` runs in `dir`, with where it is defined: `CARGO_ALIAS_SUB` among
/// the command's assignments (`env`), else the cargo configuration files cargo reads there
/// (see [`crate::cargo_config`], which also reads `$CARGO_HOME`). Errors: the directory is
/// unknown, or a file cargo would read cannot be read or parsed.
fn cargo_alias(
    sub: &str,
    env: &[(String, String)],
    dir: Option<&Path>,
) -> Result<Option<(Vec<String>, String)>, Unknowable> {
    let variable = format!("CARGO_ALIAS_{}", sub.to_ascii_uppercase().replace('-', "_"));
    if let Some((_, value)) = env.iter().rev().find(|(name, _)| *name == variable) {
        return Ok(Some((value.split_whitespace().map(str::to_string).collect(), format!("`{variable}`"))));
    }
    let Some(dir) = dir else {
        return Err(Unknowable::CargoDirectory(sub.to_string()));
    };
    let home = crate::cargo_config::cargo_home();
    let found = crate::cargo_config::alias(sub, dir, home.as_deref())
        .map_err(|source| Unknowable::CargoConfig { sub: sub.to_string(), source })?;
    Ok(found.map(|alias| (alias.words, format!("`{}`", alias.file.display()))))
}

fn read_limited(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?.take(MAX_PACKAGE_JSON).read_to_string(&mut text)?;
    Ok(text)
}
