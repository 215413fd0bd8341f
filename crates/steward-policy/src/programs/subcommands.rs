//! Other spellings of a subcommand that run the same command: abbreviations and aliases the
//! program resolves itself (`npm pub` is `npm publish`, `cargo b` is `cargo build`) and
//! management-command forms (`docker container run` is `docker run`). Deny and ask rules
//! are written against one spelling; the gate judges the canonical one too.
//!
//! Sources: npm 11 `lib/utils/cmd-list.js` (command names, aliases, and unique prefixes of
//! either resolving to a command), cargo(1) "Built-in aliases", docker(1) / podman(1)
//! management commands, docker-create(1) (the container `run` would start), git-send-pack(1) (pushes like git-push), terraform's `apply
//! -destroy` (the same as `terraform destroy`).

/// npm's commands (npm 11).
const NPM_COMMANDS: &[&str] = &[
    "access",
    "adduser",
    "approve-scripts",
    "audit",
    "bugs",
    "cache",
    "ci",
    "completion",
    "config",
    "dedupe",
    "deny-scripts",
    "deprecate",
    "diff",
    "dist-tag",
    "docs",
    "doctor",
    "edit",
    "exec",
    "explain",
    "explore",
    "find-dupes",
    "fund",
    "get",
    "help",
    "help-search",
    "init",
    "install",
    "install-ci-test",
    "install-scripts",
    "install-test",
    "link",
    "ll",
    "login",
    "logout",
    "ls",
    "org",
    "outdated",
    "owner",
    "pack",
    "ping",
    "pkg",
    "prefix",
    "profile",
    "prune",
    "publish",
    "query",
    "rebuild",
    "repo",
    "restart",
    "root",
    "run",
    "sbom",
    "search",
    "set",
    "shrinkwrap",
    "stage",
    "star",
    "stars",
    "start",
    "stop",
    "team",
    "test",
    "token",
    "trust",
    "undeprecate",
    "uninstall",
    "unpublish",
    "unstar",
    "update",
    "version",
    "view",
    "whoami",
];

/// npm's aliases and accepted misspellings (npm 11), older releases' `run-script` included.
const NPM_ALIASES: &[(&str, &str)] = &[
    ("author", "owner"),
    ("home", "docs"),
    ("issues", "bugs"),
    ("info", "view"),
    ("show", "view"),
    ("find", "search"),
    ("add", "install"),
    ("unlink", "uninstall"),
    ("remove", "uninstall"),
    ("rm", "uninstall"),
    ("r", "uninstall"),
    ("un", "uninstall"),
    ("rb", "rebuild"),
    ("list", "ls"),
    ("ln", "link"),
    ("create", "init"),
    ("i", "install"),
    ("it", "install-test"),
    ("cit", "install-ci-test"),
    ("u", "update"),
    ("up", "update"),
    ("c", "config"),
    ("s", "search"),
    ("se", "search"),
    ("tst", "test"),
    ("t", "test"),
    ("ddp", "dedupe"),
    ("v", "view"),
    ("x", "exec"),
    ("why", "explain"),
    ("la", "ll"),
    ("verison", "version"),
    ("ic", "ci"),
    ("innit", "init"),
    ("in", "install"),
    ("ins", "install"),
    ("inst", "install"),
    ("insta", "install"),
    ("instal", "install"),
    ("isnt", "install"),
    ("isnta", "install"),
    ("isntal", "install"),
    ("isntall", "install"),
    ("hlep", "help"),
    ("upgrade", "update"),
    ("udpate", "update"),
    ("rum", "run"),
    ("urn", "run"),
    ("run-script", "run"),
    ("sit", "install-ci-test"),
    ("ogr", "org"),
];

/// The npm command `word` runs, as npm resolves it: camelCase read as kebab-case, then a
/// command, an alias, or a unique prefix of a command or alias; `None` when npm knows none.
pub(crate) fn npm_command(word: &str) -> Option<&'static str> {
    let mut kebab = String::with_capacity(word.len() + 4);
    for c in word.chars() {
        if c.is_ascii_uppercase() {
            kebab.push('-');
            kebab.push(c.to_ascii_lowercase());
        } else {
            kebab.push(c);
        }
    }
    let alias = |name: &str| NPM_ALIASES.iter().find(|(a, _)| *a == name).map(|(_, to)| *to);
    if let Some(command) = NPM_COMMANDS.iter().find(|c| **c == kebab) {
        return Some(command);
    }
    if let Some(command) = alias(&kebab) {
        return Some(command);
    }
    if kebab.is_empty() {
        return None;
    }
    let mut prefixed =
        NPM_COMMANDS.iter().copied().chain(NPM_ALIASES.iter().map(|(a, _)| *a)).filter(|n| n.starts_with(&kebab));
    let only = prefixed.next()?;
    if prefixed.next().is_some() {
        return None;
    }
    alias(only).or(Some(only))
}

/// cargo's built-in aliases.
const CARGO_ALIASES: &[(&str, &str)] =
    &[("b", "build"), ("c", "check"), ("d", "doc"), ("t", "test"), ("r", "run"), ("rm", "remove")];

/// docker / podman management commands with a top-level equivalent.
const DOCKER_MANAGED: &[(&str, &str, &str)] = &[
    ("container", "attach", "attach"),
    ("container", "commit", "commit"),
    ("container", "cp", "cp"),
    // A created container is the one `run` would start (docker-create(1)).
    ("container", "create", "run"),
    ("container", "diff", "diff"),
    ("container", "exec", "exec"),
    ("container", "export", "export"),
    ("container", "kill", "kill"),
    ("container", "logs", "logs"),
    ("container", "ls", "ps"),
    ("container", "list", "ps"),
    ("container", "ps", "ps"),
    ("container", "pause", "pause"),
    ("container", "port", "port"),
    ("container", "rename", "rename"),
    ("container", "restart", "restart"),
    ("container", "rm", "rm"),
    ("container", "remove", "rm"),
    ("container", "run", "run"),
    ("container", "start", "start"),
    ("container", "stats", "stats"),
    ("container", "stop", "stop"),
    ("container", "top", "top"),
    ("container", "unpause", "unpause"),
    ("container", "update", "update"),
    ("container", "wait", "wait"),
    ("image", "build", "build"),
    ("image", "history", "history"),
    ("image", "import", "import"),
    ("image", "load", "load"),
    ("image", "ls", "images"),
    ("image", "list", "images"),
    ("image", "pull", "pull"),
    ("image", "push", "push"),
    ("image", "rm", "rmi"),
    ("image", "remove", "rmi"),
    ("image", "save", "save"),
    ("image", "tag", "tag"),
    ("builder", "build", "build"),
    ("buildx", "build", "build"),
];

/// The canonical form of `program ARGS` whose subcommand is `args[at]`, when it is spelled
/// another way: the arguments with the subcommand word(s) replaced, and their `dynamic`
/// flags (`dynamic[i]`: `args[i]` is expanded at run time).
pub(crate) fn canonical(
    program: &str,
    args: &[String],
    dynamic: &[bool],
    at: usize,
) -> Option<(Vec<String>, Vec<bool>)> {
    let sub = args.get(at)?.as_str();
    if dynamic.get(at).copied().unwrap_or(true) {
        return None;
    }
    let flag = |k: usize| dynamic.get(k).copied().unwrap_or(true);
    let replace = |words: usize, with: &[&str]| {
        let mut out: Vec<String> = args[..at].to_vec();
        let mut flags: Vec<bool> = (0..at).map(flag).collect();
        out.extend(with.iter().map(|w| w.to_string()));
        flags.extend(with.iter().map(|_| false));
        out.extend_from_slice(args.get(at + words..).unwrap_or(&[]));
        flags.extend((at + words..args.len()).map(flag));
        (out, flags)
    };
    match program {
        "npm" => npm_command(sub).filter(|c| *c != sub).map(|c| replace(1, &[c])),
        "cargo" => CARGO_ALIASES.iter().find(|(a, _)| *a == sub).map(|(_, c)| replace(1, &[c])),
        "docker" | "podman" if sub == "create" => Some(replace(1, &["run"])),
        "docker" | "podman" => {
            let next = args.get(at + 1)?.as_str();
            if flag(at + 1) {
                return None;
            }
            DOCKER_MANAGED.iter().find(|(m, s, _)| *m == sub && *s == next).map(|(_, _, c)| replace(2, &[c]))
        }
        "git" if sub == "send-pack" || sub == "http-push" => Some(replace(1, &["push"])),
        "terraform" | "tofu" if sub == "apply" => {
            let destroy = args[at + 1..].iter().position(|a| a == "-destroy" || a == "--destroy")?;
            let (mut out, mut flags) = replace(1, &["destroy"]);
            out.remove(at + 1 + destroy);
            flags.remove(at + 1 + destroy);
            Some((out, flags))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    fn canonical(program: &str, args: &[String], at: usize) -> Option<Vec<String>> {
        super::canonical(program, args, &vec![false; args.len()], at).map(|(words, _)| words)
    }

    #[test]
    fn npm_resolves_abbreviations_and_aliases() {
        for (word, command) in [
            ("pub", Some("publish")),
            ("publi", Some("publish")),
            ("x", Some("exec")),
            ("exe", Some("exec")),
            ("rum", Some("run")),
            ("unp", Some("unpublish")),
            ("installTest", Some("install-test")),
            ("p", None),
            ("publishh", None),
        ] {
            assert_eq!(npm_command(word), command, "{word}");
        }
    }

    #[test]
    fn subcommand_spellings_have_a_canonical_form() {
        assert_eq!(canonical("npm", &words("--prefix x pub --tag y"), 2), Some(words("--prefix x publish --tag y")));
        assert_eq!(canonical("npm", &words("publish"), 0), None);
        assert_eq!(canonical("docker", &words("container run --privileged x"), 0), Some(words("run --privileged x")));
        assert_eq!(canonical("docker", &words("image rm x"), 0), Some(words("rmi x")));
        assert_eq!(
            canonical("terraform", &words("apply -auto-approve -destroy"), 0),
            Some(words("destroy -auto-approve"))
        );
        assert_eq!(canonical("terraform", &words("apply -auto-approve"), 0), None);
        assert_eq!(canonical("cargo", &words("b --release"), 0), Some(words("build --release")));
    }
}
