//! Global options before a subcommand, as literal command lines written from each program's
//! manual (the page and section are named above each group), with the decision and rule the
//! corpus policy must give. The lines are the manuals' options, not Steward's option tables:
//! an option the tables miss comes out `unknown_option_before_subcommand` instead of the
//! subcommand's rule, and a program without a table does too, so either fails a line here.
//!
//! The policy ([`crate::bases::policy_text`]) denies or asks about one subcommand per
//! program (`no-push` for git, `sub-PROGRAM` for the others) and allows everything else of
//! the program. A line with an option before that subcommand must meet the subcommand's rule;
//! an option a manual says runs other code or reads other configuration keeps the allow rule
//! from matching another subcommand (`default:shell`, ask); `--help` and `--version` make
//! the words after them no subcommand.

use steward_protocol::DecisionKind::{self, Allow, Ask, Deny};

use crate::Variant;
use crate::common::SUBCOMMANDS;
use crate::quote;

/// One program's manual as command lines: `(line, decision, deciding rule)`.
pub(crate) struct Manual {
    /// The program as typed.
    pub(crate) program: &'static str,
    pub(crate) lines: &'static [(&'static str, DecisionKind, &'static str)],
}

/// Asks because the allow rule cannot match past an option that runs other code.
const ASKS: &str = "default:shell";

/// Every program with a subcommand rule, from its manual.
pub(crate) const MANUALS: &[Manual] = &[
    Manual {
        program: "git",
        lines: &[
            // git(1) "OPTIONS": -C <path>, -c <name>=<value>, --config-env=<name>=<envvar>.
            ("git -C src push origin main", Deny, "no-push"),
            ("git -C src -C .. push origin main", Deny, "no-push"),
            ("git -c user.name=x push origin main", Deny, "no-push"),
            ("git --config-env=user.name=NAME push origin main", Deny, "no-push"),
            ("git --config-env user.name=NAME push origin main", Deny, "no-push"),
            // git(1) "OPTIONS": --exec-path[=<path>], -p, --paginate, -P, --no-pager.
            ("git --exec-path=libexec push origin main", Deny, "no-push"),
            ("git -p push origin main", Deny, "no-push"),
            ("git --paginate push origin main", Deny, "no-push"),
            ("git -P push origin main", Deny, "no-push"),
            ("git --no-pager push origin main", Deny, "no-push"),
            // git(1) "OPTIONS": --git-dir=<path>, --work-tree=<path>, --namespace=<path>, --bare.
            ("git --git-dir=repo push origin main", Deny, "no-push"),
            ("git --git-dir repo push origin main", Deny, "no-push"),
            ("git --work-tree=src push origin main", Deny, "no-push"),
            ("git --work-tree src push origin main", Deny, "no-push"),
            ("git --namespace=ns push origin main", Deny, "no-push"),
            ("git --bare push origin main", Deny, "no-push"),
            // git(1) "OPTIONS": --no-replace-objects, --no-lazy-fetch, --no-optional-locks,
            // --no-advice, --literal-pathspecs, --glob-pathspecs, --noglob-pathspecs,
            // --icase-pathspecs, --attr-source=<tree-ish>.
            ("git --no-replace-objects push origin main", Deny, "no-push"),
            ("git --no-lazy-fetch push origin main", Deny, "no-push"),
            ("git --no-optional-locks push origin main", Deny, "no-push"),
            ("git --no-advice push origin main", Deny, "no-push"),
            ("git --literal-pathspecs push origin main", Deny, "no-push"),
            ("git --glob-pathspecs push origin main", Deny, "no-push"),
            ("git --noglob-pathspecs push origin main", Deny, "no-push"),
            ("git --icase-pathspecs push origin main", Deny, "no-push"),
            ("git --attr-source=HEAD push origin main", Deny, "no-push"),
            ("git --no-pager -C src -c a.b=c --bare push origin main", Deny, "no-push"),
            // git(1) "OPTIONS": -c and --config-env set any variable (core.pager runs a
            // program); --exec-path=<path> is "where your core Git programs are installed".
            ("git -c core.pager=./pager status", Ask, ASKS),
            ("git --config-env=core.pager=PAGER log", Ask, ASKS),
            ("git --exec-path=/tmp/bin status", Ask, ASKS),
            // git(1) "OPTIONS": --version and --help; `git --help push` is `git help push`.
            ("git --help push", Allow, "git"),
            ("git --version push", Allow, "git"),
        ],
    },
    Manual {
        program: "cargo",
        lines: &[
            // cargo(1) "SYNOPSIS": cargo [+toolchain] [options] command; "OPTIONS": -v,
            // --verbose (twice for "very verbose"), -q, --quiet, --color when.
            ("cargo +nightly publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo -v publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo -vv publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo --verbose --verbose publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo -q publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo --quiet publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo --color never publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo --color=always publish --allow-dirty", Deny, "sub-cargo"),
            // cargo(1) "Manifest Options": --locked, --offline, --frozen; "Common Options":
            // -C path, --config KEY=VALUE or PATH, -Z flag.
            ("cargo --locked publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo --offline publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo --frozen publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo -C src publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo --config net.offline=true publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo --config=net.offline=true publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo -Z unstable-options publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo -Zunstable-options publish --allow-dirty", Deny, "sub-cargo"),
            ("cargo +nightly -q --locked -C src publish --allow-dirty", Deny, "sub-cargo"),
            // cargo-config(5): `build.rustc-wrapper` runs a program; -Z enables config-include.
            ("cargo --config build.rustc-wrapper=./wrap build", Ask, ASKS),
            ("cargo -Zunstable-options build", Ask, ASKS),
        ],
    },
    Manual {
        program: "rustup",
        lines: &[
            // `rustup --help` "Usage: rustup [OPTIONS] [+toolchain] [COMMAND]"; "Options":
            // -v, --verbose, -q, --quiet.
            ("rustup -v self uninstall -y", Deny, "sub-rustup"),
            ("rustup --verbose self uninstall -y", Deny, "sub-rustup"),
            ("rustup -q self uninstall -y", Deny, "sub-rustup"),
            ("rustup --quiet self uninstall -y", Deny, "sub-rustup"),
            ("rustup +stable self uninstall -y", Deny, "sub-rustup"),
            ("rustup -v +stable self uninstall -y", Deny, "sub-rustup"),
        ],
    },
    Manual {
        program: "npm",
        lines: &[
            // npm-config(7) "Shorthands and Other CLI Niceties": -g for --global, -w for
            // --workspace, -ws for --workspaces, -y for --yes, -f for --force, -s for
            // --loglevel silent, -q for --loglevel warn, -C for --prefix; a boolean may be
            // followed by `true` or `false`.
            ("npm -g publish", Deny, "sub-npm"),
            ("npm --global publish", Deny, "sub-npm"),
            ("npm -g true publish", Deny, "sub-npm"),
            ("npm --force false publish", Deny, "sub-npm"),
            ("npm -w pkg publish", Deny, "sub-npm"),
            ("npm --workspace pkg publish", Deny, "sub-npm"),
            ("npm --workspace=pkg publish", Deny, "sub-npm"),
            ("npm -ws publish", Deny, "sub-npm"),
            ("npm --workspaces publish", Deny, "sub-npm"),
            ("npm -y publish", Deny, "sub-npm"),
            ("npm --yes publish", Deny, "sub-npm"),
            ("npm -f publish", Deny, "sub-npm"),
            ("npm --force publish", Deny, "sub-npm"),
            ("npm -s publish", Deny, "sub-npm"),
            ("npm --silent publish", Deny, "sub-npm"),
            ("npm -q publish", Deny, "sub-npm"),
            // npm-config(7) "Config Settings": json, dry-run, offline, loglevel, tag, otp,
            // prefix, registry, userconfig.
            ("npm --json publish", Deny, "sub-npm"),
            ("npm --dry-run publish", Deny, "sub-npm"),
            ("npm --offline publish", Deny, "sub-npm"),
            ("npm --loglevel warn publish", Deny, "sub-npm"),
            ("npm --tag next publish", Deny, "sub-npm"),
            ("npm --otp=123456 publish", Deny, "sub-npm"),
            ("npm --prefix src publish", Deny, "sub-npm"),
            ("npm -C src publish", Deny, "sub-npm"),
            ("npm --registry https://registry.invalid publish", Deny, "sub-npm"),
            ("npm --userconfig other.npmrc publish", Deny, "sub-npm"),
            // npm-config(7): userconfig and globalconfig name configuration files; registry is
            // where packages come from; script-shell runs the scripts.
            ("npm --userconfig other.npmrc test", Ask, ASKS),
            ("npm --globalconfig other.npmrc test", Ask, ASKS),
            ("npm --registry=https://registry.invalid install", Ask, ASKS),
            ("npm --script-shell ./sh run build", Ask, ASKS),
        ],
    },
    Manual {
        program: "npx",
        lines: &[
            // npm-exec(1) / npx(1) "Configuration": yes (-y), no, package (-p), call (-c),
            // workspace (-w), and npm's configuration (prefix, registry, loglevel).
            ("npx cowsay hi", Ask, "sub-npx"),
            ("npx -y cowsay hi", Ask, "sub-npx"),
            ("npx --yes cowsay hi", Ask, "sub-npx"),
            ("npx --no cowsay hi", Ask, "sub-npx"),
            ("npx -q cowsay hi", Ask, "sub-npx"),
            ("npx -w pkg cowsay hi", Ask, "sub-npx"),
            ("npx --workspace=pkg cowsay hi", Ask, "sub-npx"),
            ("npx --loglevel warn cowsay hi", Ask, "sub-npx"),
            ("npx --prefix src cowsay hi", Ask, "sub-npx"),
            ("npx --registry https://registry.invalid cowsay hi", Ask, "sub-npx"),
        ],
    },
    Manual {
        program: "pnpm",
        lines: &[
            // pnpm.io "pnpm CLI" > "Options": -C <path>, --dir <path>, -w,
            // --workspace-root; "Filtering": --filter, -F; "-r, --recursive"; "--reporter";
            // "--loglevel"; "--stream"; "--parallel"; "-s, --silent".
            ("pnpm -C src publish", Deny, "sub-pnpm"),
            ("pnpm --dir src publish", Deny, "sub-pnpm"),
            ("pnpm --dir=src publish", Deny, "sub-pnpm"),
            ("pnpm -w publish", Deny, "sub-pnpm"),
            ("pnpm --workspace-root publish", Deny, "sub-pnpm"),
            ("pnpm --filter web publish", Deny, "sub-pnpm"),
            ("pnpm --filter=web publish", Deny, "sub-pnpm"),
            ("pnpm -F web publish", Deny, "sub-pnpm"),
            ("pnpm -r publish", Deny, "sub-pnpm"),
            ("pnpm --recursive publish", Deny, "sub-pnpm"),
            ("pnpm -r false publish", Deny, "sub-pnpm"),
            ("pnpm --reporter silent publish", Deny, "sub-pnpm"),
            ("pnpm --loglevel warn publish", Deny, "sub-pnpm"),
            ("pnpm --stream publish", Deny, "sub-pnpm"),
            ("pnpm --parallel publish", Deny, "sub-pnpm"),
            ("pnpm -s publish", Deny, "sub-pnpm"),
            ("pnpm --silent publish", Deny, "sub-pnpm"),
        ],
    },
    Manual {
        program: "yarn",
        lines: &[
            // `yarn --help` (yarn 1) "Options": --cwd, --offline, --verbose, -s, --silent,
            // --json, --no-progress, --frozen-lockfile, --non-interactive, --registry,
            // --use-yarnrc, --cache-folder, --mutex, --network-timeout.
            ("yarn --cwd src publish", Deny, "sub-yarn"),
            ("yarn --cwd=src publish", Deny, "sub-yarn"),
            ("yarn --offline publish", Deny, "sub-yarn"),
            ("yarn --verbose publish", Deny, "sub-yarn"),
            ("yarn -s publish", Deny, "sub-yarn"),
            ("yarn --silent publish", Deny, "sub-yarn"),
            ("yarn --json publish", Deny, "sub-yarn"),
            ("yarn --no-progress publish", Deny, "sub-yarn"),
            ("yarn --frozen-lockfile publish", Deny, "sub-yarn"),
            ("yarn --non-interactive publish", Deny, "sub-yarn"),
            ("yarn --registry https://registry.invalid publish", Deny, "sub-yarn"),
            ("yarn --use-yarnrc other.yarnrc publish", Deny, "sub-yarn"),
            ("yarn --cache-folder cache publish", Deny, "sub-yarn"),
            ("yarn --mutex file publish", Deny, "sub-yarn"),
            ("yarn --network-timeout 1000 publish", Deny, "sub-yarn"),
            // --use-yarnrc: "specifies a yarnrc file that Yarn should use"; --registry.
            ("yarn --use-yarnrc other.yarnrc install", Ask, ASKS),
            ("yarn --registry https://registry.invalid install", Ask, ASKS),
        ],
    },
    Manual {
        program: "bun",
        lines: &[
            // `bun --help` "Flags": --cwd, --silent, --smol, -b/--bun, --prefer-offline,
            // -c/--config, --env-file, -r/--preload.
            ("bun --cwd src publish", Deny, "sub-bun"),
            ("bun --cwd=src publish", Deny, "sub-bun"),
            ("bun --silent publish", Deny, "sub-bun"),
            ("bun --smol publish", Deny, "sub-bun"),
            ("bun -b publish", Deny, "sub-bun"),
            ("bun --bun publish", Deny, "sub-bun"),
            ("bun --prefer-offline publish", Deny, "sub-bun"),
            ("bun -c bunfig.toml publish", Deny, "sub-bun"),
            ("bun --config=bunfig.toml publish", Deny, "sub-bun"),
            ("bun --env-file env.txt publish", Deny, "sub-bun"),
            ("bun -r setup.ts publish", Deny, "sub-bun"),
            ("bun --preload setup.ts publish", Deny, "sub-bun"),
            // --preload: "Import a module before other modules are loaded"; --config, --env-file.
            ("bun --preload ./x.ts test", Ask, ASKS),
            ("bun --config other.toml test", Ask, ASKS),
            ("bun --env-file settings.txt test", Ask, ASKS),
        ],
    },
    Manual {
        program: "pip",
        lines: &[
            // `pip --help` "General Options": --debug, --isolated, --require-virtualenv, -v,
            // --verbose, -q, --quiet, --no-input, --no-cache-dir,
            // --disable-pip-version-check, --no-color, --python, --log, --proxy, --retries,
            // --timeout, --exists-action, --trusted-host, --cert, --cache-dir, --use-feature.
            ("pip --debug install requests", Ask, "sub-pip"),
            ("pip --isolated install requests", Ask, "sub-pip"),
            ("pip --require-virtualenv install requests", Ask, "sub-pip"),
            ("pip -v install requests", Ask, "sub-pip"),
            ("pip -vv install requests", Ask, "sub-pip"),
            ("pip --verbose install requests", Ask, "sub-pip"),
            ("pip -q install requests", Ask, "sub-pip"),
            ("pip -vq install requests", Ask, "sub-pip"),
            ("pip --quiet install requests", Ask, "sub-pip"),
            ("pip --no-input install requests", Ask, "sub-pip"),
            ("pip --no-cache-dir install requests", Ask, "sub-pip"),
            ("pip --disable-pip-version-check install requests", Ask, "sub-pip"),
            ("pip --no-color install requests", Ask, "sub-pip"),
            ("pip --python python3 install requests", Ask, "sub-pip"),
            ("pip --log pip.log install requests", Ask, "sub-pip"),
            ("pip --proxy http://proxy.invalid install requests", Ask, "sub-pip"),
            ("pip --retries 2 install requests", Ask, "sub-pip"),
            ("pip --timeout=5 install requests", Ask, "sub-pip"),
            ("pip --exists-action i install requests", Ask, "sub-pip"),
            ("pip --trusted-host h install requests", Ask, "sub-pip"),
            ("pip --cert cabundle install requests", Ask, "sub-pip"),
            ("pip --cache-dir cache install requests", Ask, "sub-pip"),
            ("pip --use-feature truststore install requests", Ask, "sub-pip"),
            // --python: "Run pip with the specified Python interpreter".
            ("pip --python /tmp/python list", Ask, ASKS),
        ],
    },
    Manual {
        program: "pip3",
        lines: &[
            // The same program as pip ("General Options").
            ("pip3 --isolated install requests", Ask, "sub-pip3"),
            ("pip3 -q --no-input install requests", Ask, "sub-pip3"),
            ("pip3 --timeout 5 --log pip.log install requests", Ask, "sub-pip3"),
            ("pip3 --python /tmp/python list", Ask, ASKS),
        ],
    },
    Manual {
        program: "uv",
        lines: &[
            // `uv --help` "Global options": -q, --quiet, -v, --verbose, --native-tls,
            // --offline, --no-progress, --no-config, -n, --no-cache, --preview, --isolated,
            // --color, --directory, --project, --config-file, --cache-dir,
            // --allow-insecure-host.
            ("uv -q publish", Deny, "sub-uv"),
            ("uv --quiet publish", Deny, "sub-uv"),
            ("uv -v publish", Deny, "sub-uv"),
            ("uv --verbose publish", Deny, "sub-uv"),
            ("uv --native-tls publish", Deny, "sub-uv"),
            ("uv --offline publish", Deny, "sub-uv"),
            ("uv --no-progress publish", Deny, "sub-uv"),
            ("uv --no-config publish", Deny, "sub-uv"),
            ("uv -n publish", Deny, "sub-uv"),
            ("uv --no-cache publish", Deny, "sub-uv"),
            ("uv --preview publish", Deny, "sub-uv"),
            ("uv --isolated publish", Deny, "sub-uv"),
            ("uv --color never publish", Deny, "sub-uv"),
            ("uv --directory src publish", Deny, "sub-uv"),
            ("uv --project=src publish", Deny, "sub-uv"),
            ("uv --config-file uv.toml publish", Deny, "sub-uv"),
            ("uv --cache-dir cache publish", Deny, "sub-uv"),
            ("uv --allow-insecure-host h publish", Deny, "sub-uv"),
            // --config-file: "The path to a uv.toml file to use for configuration".
            ("uv --config-file other.toml sync", Ask, ASKS),
        ],
    },
    Manual {
        program: "python",
        lines: &[
            // python(1) "COMMAND LINE OPTIONS": -b, -B, -d, -E, -i, -I, -O, -OO, -P, -q, -s,
            // -S, -u, -v, -x, -W argument, -X option, --check-hash-based-pycs mode; -m
            // module ends the interpreter's options; short options group.
            ("python -b -m pip install requests", Ask, "sub-python"),
            ("python -B -m pip install requests", Ask, "sub-python"),
            ("python -d -m pip install requests", Ask, "sub-python"),
            ("python -E -m pip install requests", Ask, "sub-python"),
            ("python -I -m pip install requests", Ask, "sub-python"),
            ("python -O -m pip install requests", Ask, "sub-python"),
            ("python -OO -m pip install requests", Ask, "sub-python"),
            ("python -P -m pip install requests", Ask, "sub-python"),
            ("python -q -m pip install requests", Ask, "sub-python"),
            ("python -s -m pip install requests", Ask, "sub-python"),
            ("python -S -m pip install requests", Ask, "sub-python"),
            ("python -u -m pip install requests", Ask, "sub-python"),
            ("python -v -m pip install requests", Ask, "sub-python"),
            ("python -x -m pip install requests", Ask, "sub-python"),
            ("python -W ignore -m pip install requests", Ask, "sub-python"),
            ("python -Wignore -m pip install requests", Ask, "sub-python"),
            ("python -X dev -m pip install requests", Ask, "sub-python"),
            ("python --check-hash-based-pycs never -m pip install requests", Ask, "sub-python"),
            ("python -IB -m pip install requests", Ask, "sub-python"),
        ],
    },
    Manual {
        program: "python3",
        lines: &[
            // The same interpreter as python (python(1) "COMMAND LINE OPTIONS").
            ("python3 -u -m pip install requests", Ask, "sub-python3"),
            ("python3 -I -B -m pip install requests", Ask, "sub-python3"),
            ("python3 -X dev -W ignore -m pip install requests", Ask, "sub-python3"),
        ],
    },
    Manual {
        program: "docker",
        lines: &[
            // `docker --help` "Global Options": --config, -c/--context, -D/--debug,
            // -H/--host, -l/--log-level, --tls, --tlscacert, --tlscert, --tlskey, --tlsverify.
            ("docker --config dockercfg push img", Deny, "sub-docker"),
            ("docker -c prod push img", Deny, "sub-docker"),
            ("docker --context prod push img", Deny, "sub-docker"),
            ("docker --context=prod push img", Deny, "sub-docker"),
            ("docker -D push img", Deny, "sub-docker"),
            ("docker --debug push img", Deny, "sub-docker"),
            ("docker -H tcp://host:2375 push img", Deny, "sub-docker"),
            ("docker --host=tcp://host:2375 push img", Deny, "sub-docker"),
            ("docker -l warn push img", Deny, "sub-docker"),
            ("docker -lwarn push img", Deny, "sub-docker"),
            ("docker --log-level warn push img", Deny, "sub-docker"),
            ("docker --tls push img", Deny, "sub-docker"),
            ("docker --tlsverify push img", Deny, "sub-docker"),
            ("docker --tlscacert ca.pem push img", Deny, "sub-docker"),
            ("docker --tlscert cert.pem push img", Deny, "sub-docker"),
            ("docker --tlskey key.pem push img", Deny, "sub-docker"),
            // --config: "Location of client config files" (credential helpers, plugins);
            // -H: "Daemon socket to connect to" (ssh:// runs ssh).
            ("docker --config elsewhere ps", Ask, ASKS),
            ("docker -H ssh://build-host ps", Ask, ASKS),
        ],
    },
    Manual {
        program: "podman",
        lines: &[
            // podman(1) "GLOBAL OPTIONS": --connection, -c, --log-level, --noout, --remote,
            // -r, --root, --runroot, --storage-driver, --syslog, --tmpdir, --url, --conmon,
            // --runtime, --cgroup-manager, --events-backend, --transient-store.
            ("podman -c prod push img", Deny, "sub-podman"),
            ("podman --connection prod push img", Deny, "sub-podman"),
            ("podman --log-level=warn push img", Deny, "sub-podman"),
            ("podman --noout push img", Deny, "sub-podman"),
            ("podman -r push img", Deny, "sub-podman"),
            ("podman --remote push img", Deny, "sub-podman"),
            ("podman --root storage push img", Deny, "sub-podman"),
            ("podman --runroot run push img", Deny, "sub-podman"),
            ("podman --storage-driver overlay push img", Deny, "sub-podman"),
            ("podman --syslog push img", Deny, "sub-podman"),
            ("podman --tmpdir tmp push img", Deny, "sub-podman"),
            ("podman --cgroup-manager systemd push img", Deny, "sub-podman"),
            ("podman --events-backend file push img", Deny, "sub-podman"),
            ("podman --transient-store push img", Deny, "sub-podman"),
            ("podman --url unix:///run/podman.sock push img", Deny, "sub-podman"),
            ("podman --runtime crun push img", Deny, "sub-podman"),
            // --runtime and --conmon: paths of programs podman runs; --url: a service elsewhere.
            ("podman --runtime /tmp/rt ps", Ask, ASKS),
            ("podman --conmon /tmp/conmon ps", Ask, ASKS),
            ("podman --url ssh://build-host ps", Ask, ASKS),
        ],
    },
    Manual {
        program: "kubectl",
        lines: &[
            // `kubectl options`: --as, --cluster, --context, --insecure-skip-tls-verify,
            // --kubeconfig, --match-server-version, -n/--namespace, --request-timeout,
            // -s/--server, --token, --user, -v/--v, --warnings-as-errors,
            // --disable-compression, --cache-dir, --tls-server-name.
            ("kubectl --as admin delete pod web", Deny, "sub-kubectl"),
            ("kubectl --cluster c delete pod web", Deny, "sub-kubectl"),
            ("kubectl --context=prod delete pod web", Deny, "sub-kubectl"),
            ("kubectl --insecure-skip-tls-verify delete pod web", Deny, "sub-kubectl"),
            ("kubectl --kubeconfig kubeconfig delete pod web", Deny, "sub-kubectl"),
            ("kubectl --match-server-version delete pod web", Deny, "sub-kubectl"),
            ("kubectl -n prod delete pod web", Deny, "sub-kubectl"),
            ("kubectl -nprod delete pod web", Deny, "sub-kubectl"),
            ("kubectl --namespace=prod delete pod web", Deny, "sub-kubectl"),
            ("kubectl --request-timeout 5s delete pod web", Deny, "sub-kubectl"),
            ("kubectl -s https://api.invalid delete pod web", Deny, "sub-kubectl"),
            ("kubectl --server https://api.invalid delete pod web", Deny, "sub-kubectl"),
            ("kubectl --token t delete pod web", Deny, "sub-kubectl"),
            ("kubectl --user u delete pod web", Deny, "sub-kubectl"),
            ("kubectl -v 6 delete pod web", Deny, "sub-kubectl"),
            ("kubectl --v=6 delete pod web", Deny, "sub-kubectl"),
            ("kubectl --warnings-as-errors delete pod web", Deny, "sub-kubectl"),
            ("kubectl --disable-compression delete pod web", Deny, "sub-kubectl"),
            ("kubectl --cache-dir cache delete pod web", Deny, "sub-kubectl"),
            ("kubectl --tls-server-name api delete pod web", Deny, "sub-kubectl"),
            // --kubeconfig: a kubeconfig's `exec` credential plugins run programs.
            ("kubectl --kubeconfig other get pods", Ask, ASKS),
        ],
    },
    Manual {
        program: "helm",
        lines: &[
            // `helm --help` "Flags": --burst-limit, --debug, --kube-apiserver,
            // --kube-as-user, --kube-context, --kube-insecure-skip-tls-verify, --kube-token,
            // --kubeconfig, -n/--namespace, --qps, --registry-config, --repository-cache,
            // --repository-config.
            ("helm --burst-limit 50 uninstall web", Deny, "sub-helm"),
            ("helm --debug uninstall web", Deny, "sub-helm"),
            ("helm --kube-apiserver https://api.invalid uninstall web", Deny, "sub-helm"),
            ("helm --kube-as-user u uninstall web", Deny, "sub-helm"),
            ("helm --kube-context prod uninstall web", Deny, "sub-helm"),
            ("helm --kube-insecure-skip-tls-verify uninstall web", Deny, "sub-helm"),
            ("helm --kube-token t uninstall web", Deny, "sub-helm"),
            ("helm --kubeconfig=kubeconfig uninstall web", Deny, "sub-helm"),
            ("helm -n prod uninstall web", Deny, "sub-helm"),
            ("helm --namespace prod uninstall web", Deny, "sub-helm"),
            ("helm --qps 5 uninstall web", Deny, "sub-helm"),
            ("helm --registry-config registry.json uninstall web", Deny, "sub-helm"),
            ("helm --repository-cache cache uninstall web", Deny, "sub-helm"),
            ("helm --repository-config repos.yaml uninstall web", Deny, "sub-helm"),
            // The kubeconfig and the registry and repository configuration files.
            ("helm --repository-config other.yaml list", Ask, ASKS),
            ("helm --kubeconfig other list", Ask, ASKS),
        ],
    },
    Manual {
        program: "terraform",
        lines: &[
            // `terraform -help` "Global options": -chdir=DIR (only with `=`).
            ("terraform -chdir=infra destroy", Deny, "sub-terraform"),
            ("terraform -chdir=infra -chdir=more destroy", Deny, "sub-terraform"),
        ],
    },
    Manual {
        program: "tofu",
        lines: &[
            // OpenTofu's `tofu -help` "Global options": the same -chdir=DIR.
            ("tofu -chdir=infra destroy", Deny, "sub-tofu"),
        ],
    },
    Manual {
        program: "make",
        lines: &[
            // make(1) "OPTIONS": -B, --always-make, -C dir, --directory=dir, -d, --debug[=FLAGS],
            // -e, -i, -I dir, -j [jobs], -k, -l [load], -L, -n, -o file, -O[type], -p, -q, -r,
            // -R, -s, -S, -t, --trace, -w, --no-print-directory, -W file,
            // --warn-undefined-variables; "variable=value" on the command line.
            ("make -B deploy", Deny, "sub-make"),
            ("make --always-make deploy", Deny, "sub-make"),
            ("make -C src deploy", Deny, "sub-make"),
            ("make -Csrc deploy", Deny, "sub-make"),
            ("make --directory=src deploy", Deny, "sub-make"),
            ("make -d deploy", Deny, "sub-make"),
            ("make --debug=b deploy", Deny, "sub-make"),
            ("make -e deploy", Deny, "sub-make"),
            ("make -i deploy", Deny, "sub-make"),
            ("make -I mk deploy", Deny, "sub-make"),
            ("make -j deploy", Deny, "sub-make"),
            ("make -j4 deploy", Deny, "sub-make"),
            ("make -j 4 deploy", Deny, "sub-make"),
            ("make --jobs=4 deploy", Deny, "sub-make"),
            ("make -k deploy", Deny, "sub-make"),
            ("make --keep-going deploy", Deny, "sub-make"),
            ("make -l deploy", Deny, "sub-make"),
            ("make -l 2 deploy", Deny, "sub-make"),
            ("make -L deploy", Deny, "sub-make"),
            ("make -n deploy", Deny, "sub-make"),
            ("make --dry-run deploy", Deny, "sub-make"),
            ("make -o old deploy", Deny, "sub-make"),
            ("make -Oline deploy", Deny, "sub-make"),
            ("make --output-sync=target deploy", Deny, "sub-make"),
            ("make -p deploy", Deny, "sub-make"),
            ("make -q deploy", Deny, "sub-make"),
            ("make -r deploy", Deny, "sub-make"),
            ("make -R deploy", Deny, "sub-make"),
            ("make -s deploy", Deny, "sub-make"),
            ("make --silent deploy", Deny, "sub-make"),
            ("make -S deploy", Deny, "sub-make"),
            ("make -t deploy", Deny, "sub-make"),
            ("make --trace deploy", Deny, "sub-make"),
            ("make -w deploy", Deny, "sub-make"),
            ("make --no-print-directory deploy", Deny, "sub-make"),
            ("make -W new deploy", Deny, "sub-make"),
            ("make --warn-undefined-variables deploy", Deny, "sub-make"),
            ("make -sk deploy", Deny, "sub-make"),
            ("make -f Makefile deploy", Deny, "sub-make"),
            ("make --file=Makefile deploy", Deny, "sub-make"),
            ("make --eval X=1 deploy", Deny, "sub-make"),
            ("make CC=cc deploy", Deny, "sub-make"),
            // make(1): "targets" are every goal make is to build.
            ("make all deploy", Deny, "sub-make"),
            ("make -k all -j2 deploy", Deny, "sub-make"),
            // -f and -I read other makefiles; --eval is makefile text; a variable set on the
            // command line overrides any recipe's.
            ("make -f Other.mk all", Ask, ASKS),
            ("make -I elsewhere all", Ask, ASKS),
            ("make --eval='x:;id' all", Ask, ASKS),
            ("make CC=./cc all", Ask, ASKS),
        ],
    },
    Manual {
        program: "gmake",
        lines: &[
            // GNU make installed as gmake: make(1) "OPTIONS".
            ("gmake --directory=src deploy", Deny, "sub-gmake"),
            ("gmake --jobs=3 -e deploy", Deny, "sub-gmake"),
            ("gmake all -k deploy", Deny, "sub-gmake"),
        ],
    },
    Manual {
        program: "go",
        lines: &[
            // `go help` / go(1): "go [-C dir] <command> [arguments]"; Go's flag package reads
            // -C dir, -C=dir and --C dir alike.
            ("go -C src generate gen", Ask, "sub-go"),
            ("go -C=src generate gen", Ask, "sub-go"),
            ("go --C src generate gen", Ask, "sub-go"),
        ],
    },
    Manual {
        program: "gh",
        lines: &[
            // `gh --help` "FLAGS": --help and --version; no other option comes before a
            // command. Flags are read anywhere on the line, so the command is still named.
            ("gh release create v1", Deny, "sub-gh"),
            ("gh --help release create v1", Deny, "sub-gh"),
            ("gh --version release create v1", Deny, "sub-gh"),
        ],
    },
    Manual {
        program: "systemctl",
        lines: &[
            // systemctl(1) "OPTIONS": -t/--type, --state, -p/--property, -a/--all,
            // -r/--recursive, --reverse, --after, --before, -l/--full, --value, --show-types,
            // --job-mode, -i, --no-block, --wait, --user, --system, --no-wall, --global,
            // --no-reload, --no-ask-password, --kill-whom, -s/--signal, --now, --root,
            // --runtime, -n/--lines, -o/--output, --plain, -H/--host, -M/--machine,
            // --no-pager, --no-legend, -q/--quiet, -f/--force, --dry-run.
            ("systemctl -t service stop web", Deny, "sub-systemctl"),
            ("systemctl --type=service stop web", Deny, "sub-systemctl"),
            ("systemctl --state failed stop web", Deny, "sub-systemctl"),
            ("systemctl -p MainPID stop web", Deny, "sub-systemctl"),
            ("systemctl -a stop web", Deny, "sub-systemctl"),
            ("systemctl --all stop web", Deny, "sub-systemctl"),
            ("systemctl -r stop web", Deny, "sub-systemctl"),
            ("systemctl --reverse stop web", Deny, "sub-systemctl"),
            ("systemctl -l stop web", Deny, "sub-systemctl"),
            ("systemctl --full stop web", Deny, "sub-systemctl"),
            ("systemctl --value stop web", Deny, "sub-systemctl"),
            ("systemctl --job-mode=fail stop web", Deny, "sub-systemctl"),
            ("systemctl -i stop web", Deny, "sub-systemctl"),
            ("systemctl --no-block stop web", Deny, "sub-systemctl"),
            ("systemctl --wait stop web", Deny, "sub-systemctl"),
            ("systemctl --user stop web", Deny, "sub-systemctl"),
            ("systemctl --system stop web", Deny, "sub-systemctl"),
            ("systemctl --no-wall stop web", Deny, "sub-systemctl"),
            ("systemctl --no-ask-password stop web", Deny, "sub-systemctl"),
            ("systemctl --kill-whom=main stop web", Deny, "sub-systemctl"),
            ("systemctl -s KILL stop web", Deny, "sub-systemctl"),
            ("systemctl --signal=KILL stop web", Deny, "sub-systemctl"),
            ("systemctl --now stop web", Deny, "sub-systemctl"),
            ("systemctl --root image stop web", Deny, "sub-systemctl"),
            ("systemctl --runtime stop web", Deny, "sub-systemctl"),
            ("systemctl -n 5 stop web", Deny, "sub-systemctl"),
            ("systemctl -o json stop web", Deny, "sub-systemctl"),
            ("systemctl --plain stop web", Deny, "sub-systemctl"),
            ("systemctl -H host stop web", Deny, "sub-systemctl"),
            ("systemctl --host=host stop web", Deny, "sub-systemctl"),
            ("systemctl -M box stop web", Deny, "sub-systemctl"),
            ("systemctl --machine box stop web", Deny, "sub-systemctl"),
            ("systemctl --no-pager stop web", Deny, "sub-systemctl"),
            ("systemctl --no-legend stop web", Deny, "sub-systemctl"),
            ("systemctl -q stop web", Deny, "sub-systemctl"),
            ("systemctl --quiet stop web", Deny, "sub-systemctl"),
            ("systemctl -f stop web", Deny, "sub-systemctl"),
            ("systemctl --force stop web", Deny, "sub-systemctl"),
            ("systemctl --dry-run stop web", Deny, "sub-systemctl"),
            ("systemctl --user -q --no-pager stop web", Deny, "sub-systemctl"),
        ],
    },
];

/// The rule of `program`'s subcommand in the corpus policy.
pub(crate) fn subcommand_rule(program: &str) -> String {
    if program == "git" { "no-push".to_string() } else { format!("sub-{program}") }
}

/// The options of `program`'s manual lines that reach its subcommand rule: the words between
/// the program and the subcommand, when they start with an option (`-` or `+`).
pub(crate) fn manual_options(program: &str) -> Vec<String> {
    let Some((_, words, rest, _)) = SUBCOMMANDS.iter().find(|s| s.0 == program) else { return Vec::new() };
    let sub = format!(" {words} {rest}");
    let sub = sub.trim_end();
    let rule = subcommand_rule(program);
    MANUALS
        .iter()
        .filter(|m| m.program == program)
        .flat_map(|m| m.lines)
        .filter(|(_, _, r)| *r == rule)
        .filter_map(|(line, _, _)| {
            let options = line.strip_prefix(program)?.strip_suffix(sub)?.trim();
            options.starts_with(['-', '+']).then(|| options.to_string())
        })
        .collect()
}

/// Every manual line, and per program with a subcommand rule: two of its manual's options at
/// once (both orders), the line inside a shell, unknown options before the subcommand (alone
/// and after a known one), and a computed word where an option could be.
pub(crate) fn option_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for manual in MANUALS {
        for &(line, expect, rule) in manual.lines {
            out.push(Variant { kind: "global-option", line: line.to_string(), expect, rule: Some(rule.to_string()) });
        }
    }
    for &(program, words, rest, expect) in SUBCOMMANDS {
        let sub = format!("{words} {rest}");
        let sub = sub.trim_end();
        let rule = Some(subcommand_rule(program));
        let known = |kind, line: String| Variant { kind, line, expect, rule: rule.clone() };
        let options = manual_options(program);
        if let (Some(first), Some(last)) = (options.first(), options.last()) {
            out.push(known("global-options", format!("{program} {first} {last} {sub}")));
            out.push(known("global-options", format!("{program} {last} {first} {sub}")));
            out.push(known("global-option-shell", format!("bash -c {}", quote(&format!("{program} {last} {sub}")))));
        }
        let unsure = Some("unknown_option_before_subcommand".to_string());
        let mut unknown: Vec<String> =
            ["--steward-unknown", "--steward-unknown=1", "-%"].iter().map(|u| format!("{program} {u} {sub}")).collect();
        if let Some(first) = options.first() {
            unknown.push(format!("{program} {first} --steward-unknown {sub}"));
        }
        for line in unknown {
            out.push(Variant { kind: "unknown-option", line, expect, rule: unsure.clone() });
        }
        out.push(Variant { kind: "computed-option", line: format!("{program} \"$OPTS\" {sub}"), expect, rule: None });
    }
    out
}

#[test]
fn every_documented_global_option_reaches_the_rule_its_manual_implies() {
    let (_dir, ws, policy) = crate::setup();
    let mut wrong = Vec::new();
    for manual in MANUALS {
        for (line, expect, rule) in manual.lines {
            assert!(line.starts_with(&format!("{} ", manual.program)), "{line:?} is not a line of {}", manual.program);
            let d = policy.judge_command(line, &ws);
            if (d.decision, d.rule.as_str()) != (*expect, *rule) {
                wrong.push(format!(
                    "{line:?}: expected {expect:?} by {rule}, got {:?} by {}: {:?}",
                    d.decision, d.rule, d.reasons
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{} lines judged against their manual:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn every_program_with_a_subcommand_rule_has_manual_lines_with_options() {
    for (program, ..) in SUBCOMMANDS {
        let options = manual_options(program);
        assert!(!options.is_empty(), "no manual line puts an option before the subcommand of {program}");
    }
}
