//! Global options as each program's manual documents them, written here independently of
//! Steward's option tables, before each base command.

use crate::Variant;
use crate::bases::SUBCOMMANDS;
use crate::quote;

/// Global options as each program documents them: words that stand alone (flags, and
/// values only ever attached such as `-chdir=DIR`), and options with a sample value, which
/// are written separately, with `=` (long options) and attached (short options).
pub(crate) struct Documented {
    pub(crate) programs: &'static [&'static str],
    pub(crate) words: &'static [&'static str],
    pub(crate) values: &'static [(&'static str, &'static str)],
}

/// Sources: git(1) "OPTIONS" (2.47); `cargo --help`; `rustup --help`; npm-config(7); npx(1);
/// pnpm.io "CLI options"; `yarn --help`; `bun --help`; `pip --help` "General Options"; `uv
/// --help` "Global options"; `python3 --help`; `docker --help` "Global Options"; podman(1)
/// "GLOBAL OPTIONS"; `kubectl options`; `helm --help` "Flags"; `terraform -help`; `make
/// --help`; `go help`; `gh --help`; `systemctl --help`.
pub(crate) const DOCUMENTED: &[Documented] = &[
    Documented {
        programs: &["git"],
        words: &[
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
            "--exec-path=libexec",
            "--list-cmds=main",
        ],
        values: &[
            ("-C", "src"),
            ("-c", "a.b=c"),
            ("--config-env", "a.b=ENV"),
            ("--git-dir", "repo"),
            ("--work-tree", "src"),
            ("--namespace", "ns"),
            ("--super-prefix", "sub"),
            ("--attr-source", "HEAD"),
            ("--shallow-file", "shallow"),
        ],
    },
    Documented {
        programs: &["cargo"],
        words: &[
            "+nightly",
            "-V",
            "--list",
            "-v",
            "-vv",
            "--verbose",
            "-q",
            "--quiet",
            "--locked",
            "--offline",
            "--frozen",
        ],
        values: &[
            ("--explain", "E0382"),
            ("--color", "never"),
            ("-C", "src"),
            ("--config", "net.offline=true"),
            ("-Z", "unstable-options"),
        ],
    },
    Documented { programs: &["rustup"], words: &["+stable", "-v", "--verbose", "-q", "--quiet"], values: &[] },
    Documented {
        programs: &["npm"],
        words: &[
            // npm-config(7): a boolean option may be followed by `true` or `false`.
            "--force false",
            "-g true",
            "-g",
            "--global",
            "-ws",
            "--workspaces",
            "-y",
            "--yes",
            "-f",
            "--force",
            "-s",
            "--silent",
            "-q",
            "--json",
            "--dry-run",
            "--offline",
        ],
        values: &[
            ("--prefix", "src"),
            ("-C", "src"),
            ("-w", "pkg"),
            ("--workspace", "pkg"),
            ("--registry", "https://registry.invalid"),
            ("--userconfig", "npmrc"),
            ("--loglevel", "warn"),
            ("--tag", "next"),
            ("--otp", "123456"),
        ],
    },
    Documented {
        programs: &["npx"],
        words: &["-y", "--yes", "--no", "-q"],
        values: &[("--prefix", "src"), ("-w", "pkg"), ("--registry", "https://registry.invalid")],
    },
    Documented {
        programs: &["pnpm"],
        words: &["-r false", "-w", "--workspace-root", "-r", "--recursive", "-s", "--silent", "--stream", "--parallel"],
        values: &[
            ("-C", "src"),
            ("--dir", "src"),
            ("--filter", "web"),
            ("-F", "web"),
            ("--reporter", "silent"),
            ("--loglevel", "warn"),
        ],
    },
    Documented {
        programs: &["yarn"],
        words: &[
            "--verbose",
            "--offline",
            "--silent",
            "-s",
            "--json",
            "--no-progress",
            "--frozen-lockfile",
            "--non-interactive",
        ],
        values: &[
            ("--cwd", "src"),
            ("--registry", "https://registry.invalid"),
            ("--use-yarnrc", "yarnrc"),
            ("--cache-folder", "cache"),
            ("--mutex", "file"),
            ("--network-timeout", "1000"),
        ],
    },
    Documented {
        programs: &["bun"],
        words: &["--silent", "--smol", "--bun", "-b", "--prefer-offline"],
        values: &[
            ("--cwd", "src"),
            ("--config", "bunfig.toml"),
            ("-c", "bunfig.toml"),
            ("--env-file", "env.txt"),
            ("--preload", "setup.ts"),
            ("-r", "setup.ts"),
        ],
    },
    Documented {
        programs: &["pip", "pip3"],
        words: &[
            "--debug",
            "--isolated",
            "--require-virtualenv",
            "-v",
            "-vv",
            "--verbose",
            "-q",
            "--quiet",
            "--no-input",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--no-color",
        ],
        values: &[
            ("--python", "python3"),
            ("--log", "pip.log"),
            ("--proxy", "http://proxy.invalid"),
            ("--retries", "2"),
            ("--timeout", "5"),
            ("--exists-action", "i"),
            ("--trusted-host", "h"),
            ("--cert", "cabundle"),
            ("--cache-dir", "cache"),
            ("--use-feature", "truststore"),
        ],
    },
    Documented {
        programs: &["uv"],
        words: &[
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
            "--preview",
            "--isolated",
        ],
        values: &[
            ("--color", "never"),
            ("--directory", "src"),
            ("--project", "src"),
            ("--config-file", "uv.toml"),
            ("--cache-dir", "cache"),
            ("--allow-insecure-host", "h"),
        ],
    },
    Documented {
        programs: &["python", "python3"],
        words: &[
            "-b", "-bb", "-B", "-d", "-E", "-i", "-I", "-O", "-OO", "-P", "-q", "-s", "-S", "-u", "-v", "-x", "-IB",
        ],
        values: &[("-W", "ignore"), ("-X", "dev"), ("--check-hash-based-pycs", "never")],
    },
    Documented {
        programs: &["docker"],
        words: &["-D", "--debug", "--tls", "--tlsverify"],
        values: &[
            ("--config", "dockercfg"),
            ("-c", "prod"),
            ("--context", "prod"),
            ("-H", "tcp://host:2375"),
            ("--host", "tcp://host:2375"),
            ("-l", "warn"),
            ("--log-level", "warn"),
            ("--tlscacert", "ca.pem"),
            ("--tlscert", "cert.pem"),
            ("--tlskey", "key.pem"),
        ],
    },
    Documented {
        programs: &["podman"],
        words: &["-r", "--remote", "--noout", "--syslog"],
        values: &[
            ("-c", "prod"),
            ("--connection", "prod"),
            ("--log-level", "warn"),
            ("--root", "storage"),
            ("--runroot", "run"),
            ("--url", "unix:///run/podman.sock"),
            ("--storage-driver", "overlay"),
            ("--runtime", "crun"),
            ("--conmon", "conmon"),
        ],
    },
    Documented {
        programs: &["kubectl"],
        words: &[
            "--insecure-skip-tls-verify",
            "--match-server-version",
            "--warnings-as-errors",
            "--disable-compression",
        ],
        values: &[
            ("-n", "prod"),
            ("--namespace", "prod"),
            ("--context", "prod"),
            ("--cluster", "c"),
            ("--user", "u"),
            ("--kubeconfig", "kubeconfig"),
            ("-s", "https://api.invalid"),
            ("--server", "https://api.invalid"),
            ("--as", "admin"),
            ("--request-timeout", "5s"),
            ("-v", "6"),
            ("--token", "t"),
        ],
    },
    Documented {
        programs: &["helm"],
        words: &["--debug", "--kube-insecure-skip-tls-verify"],
        values: &[
            ("-n", "prod"),
            ("--namespace", "prod"),
            ("--kube-context", "prod"),
            ("--kubeconfig", "kubeconfig"),
            ("--kube-apiserver", "https://api.invalid"),
            ("--registry-config", "registry.json"),
            ("--repository-config", "repos.yaml"),
            ("--burst-limit", "50"),
        ],
    },
    Documented { programs: &["terraform", "tofu"], words: &["-chdir=infra"], values: &[] },
    Documented {
        programs: &["make", "gmake"],
        words: &[
            "-B",
            "--always-make",
            "-e",
            "-i",
            "-k",
            "--keep-going",
            "-n",
            "--dry-run",
            "-s",
            "--silent",
            "-j",
            "-j4",
            "--jobs=4",
            "-l",
            "-Oline",
            "--output-sync=target",
            "--debug=b",
            "-sk",
            "CC=cc",
            "--no-print-directory",
        ],
        values: &[
            ("-C", "src"),
            ("--directory", "src"),
            ("-f", "Makefile"),
            ("--file", "Makefile"),
            ("-I", "mk"),
            ("-E", "X=1"),
            ("--eval", "X=1"),
            ("-o", "old"),
            ("-W", "new"),
        ],
    },
    Documented { programs: &["go"], words: &["-C=src", "--C=src"], values: &[("-C", "src")] },
    Documented { programs: &["gh"], words: &["--help"], values: &[] },
    Documented {
        programs: &["systemctl"],
        words: &[
            "--user",
            "--system",
            "--no-pager",
            "--no-block",
            "-q",
            "--quiet",
            "--now",
            "-f",
            "--force",
            "--no-ask-password",
            "-a",
            "-l",
        ],
        values: &[
            ("-H", "host"),
            ("--host", "host"),
            ("-M", "box"),
            ("--machine", "box"),
            ("-t", "service"),
            ("--type", "service"),
            ("-s", "KILL"),
            ("--signal", "KILL"),
            ("--root", "image"),
            ("-n", "5"),
        ],
    },
];

/// The words of each spelling of a documented option: alone, `--long=value` / `-x value` /
/// `-xvalue` for value options.
pub(crate) fn spellings(d: &Documented) -> Vec<String> {
    let mut out: Vec<String> = d.words.iter().map(|w| w.to_string()).collect();
    for (option, value) in d.values {
        out.push(format!("{option} {value}"));
        if option.starts_with("--") {
            out.push(format!("{option}={value}"));
        } else if option.len() == 2 {
            out.push(format!("{option}{value}"));
        }
    }
    out
}

/// Every documented global option (in each spelling) of every program before its base
/// command, two options at once, the base wrapped in a shell, an unknown option, and a
/// computed word where an option could be.
pub(crate) fn option_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for &(program, words, rest, expect) in SUBCOMMANDS {
        let sub = format!("{words} {rest}");
        let sub = sub.trim_end();
        let Some(documented) = DOCUMENTED.iter().find(|d| d.programs.contains(&program)) else {
            panic!("no documented options for {program}");
        };
        let rule = Some(if program == "git" { "no-push".to_string() } else { format!("sub-{program}") });
        let known = |kind, line: String| Variant { kind, line, expect, rule: rule.clone() };
        out.push(known("subcommand-base", format!("{program} {sub}")));
        let spelled = spellings(documented);
        for option in &spelled {
            out.push(known("global-option", format!("{program} {option} {sub}")));
        }
        if let (Some(first), Some(last)) = (spelled.first(), spelled.last()) {
            out.push(known("global-options", format!("{program} {first} {last} {sub}")));
            out.push(known("global-options", format!("{program} {last} {first} {sub}")));
            out.push(known("global-option-shell", format!("bash -c {}", quote(&format!("{program} {last} {sub}")))));
        }
        if program.ends_with("make") {
            // make(1): every target named is a goal make runs.
            out.push(known("every-goal", format!("{program} all {sub}")));
            out.push(known("every-goal", format!("{program} -k all -j2 {sub}")));
        }
        let unsure = Some("unknown_option_before_subcommand".to_string());
        for unknown in ["--steward-unknown", "--steward-unknown=1", "-%"] {
            out.push(Variant {
                kind: "unknown-option",
                line: format!("{program} {unknown} {sub}"),
                expect,
                rule: unsure.clone(),
            });
        }
        if let Some(first) = spelled.first() {
            out.push(Variant {
                kind: "unknown-option",
                line: format!("{program} {first} --steward-unknown {sub}"),
                expect,
                rule: unsure.clone(),
            });
        }
        out.push(Variant { kind: "computed-option", line: format!("{program} \"$OPTS\" {sub}"), expect, rule: None });
    }
    out
}
