//! Commands a command runs besides itself (T4): the program a launcher starts, the canonical
//! spelling of an abbreviated or aliased subcommand, and `package.json` scripts are judged
//! as parts of their own, so an allow rule on the outer program never lets through what a
//! deny or ask rule forbids.

use std::fs;

use steward_policy::{Policy, PolicyConfig, Workspace};
use steward_protocol::DecisionKind::{Allow, Ask, Deny};

fn policy() -> Policy {
    let rules: &[(&str, &str, &str)] = &[
        ("allow", "npm", r#"["npm", "**"]"#),
        ("allow", "npx", r#"["npx", "**"]"#),
        ("allow", "pnpm", r#"["pnpm", "**"]"#),
        ("allow", "yarn", r#"["yarn", "**"]"#),
        ("allow", "uv", r#"["uv", "**"]"#),
        ("allow", "uvx", r#"["uvx", "**"]"#),
        ("allow", "rustup", r#"["rustup", "**"]"#),
        ("allow", "busybox", r#"["busybox", "**"]"#),
        ("allow", "ssh-agent", r#"["ssh-agent", "**"]"#),
        ("allow", "flatpak-spawn", r#"["flatpak-spawn", "**"]"#),
        ("allow", "cargo", r#"["cargo", "**"]"#),
        ("allow", "git", r#"["git", "**"]"#),
        ("allow", "docker", r#"["docker", "**"]"#),
        ("allow", "terraform", r#"["terraform", "**"]"#),
        ("allow", "rm", r#"["rm", "**"]"#),
        ("allow", "jest", r#"["jest", "**"]"#),
        ("allow", "cd", r#"["cd", "**"]"#),
        ("allow", "sed", r#"["sed", "**"]"#),
        ("allow", "make", r#"["make", "**"]"#),
        ("allow", "awk", r#"["awk", "**"]"#),
        ("allow", "pytest", r#"["python3", "-m", "pytest", "**"]"#),
        ("deny", "no-npm-publish", r#"["npm", "publish", "**"]"#),
        ("deny", "no-cargo-publish", r#"["cargo", "publish", "**"]"#),
        ("deny", "no-force", r#"["git", "push", "--force", "**"]"#),
        ("ask", "push", r#"["git", "push", "**"]"#),
        ("deny", "no-rm-rf", r#"["rm", "-rf", "**"]"#),
        ("deny", "no-privileged", r#"["docker", "run", "--privileged", "**"]"#),
        ("deny", "no-rmi", r#"["docker", "rmi", "**"]"#),
        ("deny", "no-destroy", r#"["terraform", "destroy", "**"]"#),
    ];
    let mut text = String::from("[policy]\n");
    for (decision, name, argv) in rules {
        text.push_str(&format!(
            "[[policy.rule]]\nname = \"{name}\"\ntool = \"shell_command\"\nargv = {argv}\ndecision = \"{decision}\"\n"
        ));
    }
    #[derive(serde::Deserialize)]
    struct Root {
        policy: PolicyConfig,
    }
    Policy::new(&toml::from_str::<Root>(&text).unwrap().policy).unwrap()
}

fn workspace(package_json: &str) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("app/src")).unwrap();
    fs::write(dir.path().join("package.json"), package_json).unwrap();
    let ws = Workspace::open(dir.path(), &[]).unwrap();
    (dir, ws)
}

#[test]
fn launched_program_is_judged_by_its_own_rules() {
    let (_dir, ws) = workspace("{}");
    let policy = policy();
    for (line, rule) in [
        ("npx npm publish", "no-npm-publish"),
        ("npx -y npm@10 publish", "no-npm-publish"),
        ("npx --yes true npm publish", "no-npm-publish"),
        ("npx -c 'npm publish'", "no-npm-publish"),
        ("npm exec -- npm publish", "no-npm-publish"),
        ("npm --loglevel warn x npm publish", "no-npm-publish"),
        ("pnpm dlx --shell-mode npm publish", "no-npm-publish"),
        ("uv run cargo publish", "no-cargo-publish"),
        ("uv run --with x -- cargo publish", "no-cargo-publish"),
        ("uvx npm publish", "no-npm-publish"),
        ("rustup run stable cargo publish", "no-cargo-publish"),
        ("rustup run --install nightly cargo +nightly publish", "no-cargo-publish"),
        ("busybox rm -rf x", "no-rm-rf"),
        ("npx sh -c 'git push --force'", "no-force"),
        ("npm explore lodash -- npm publish", "no-npm-publish"),
    ] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (Deny, rule), "{line}: {:?}", d.reasons);
    }
    // What a launcher starts is allowed only when a rule allows it too.
    assert_eq!(policy.judge_command("uv run -m pytest -q", &ws).decision, Allow);
    assert_eq!(policy.judge_command("npx jest --ci", &ws).decision, Allow);
    assert_eq!(policy.judge_command("npx prettier .", &ws).decision, Ask);
    // An option a launcher table does not list, or a computed word, leaves what runs unknown.
    for line in ["npx --frobnicate npm publish", "uv run --frob cargo publish", "npx $TOOL publish"] {
        let d = policy.judge_command(line, &ws);
        assert_ne!(d.decision, Allow, "{line}: {d:?}");
    }
}

#[test]
fn subcommand_spelled_another_way_meets_the_rules_of_its_canonical_form() {
    let (_dir, ws) = workspace("{}");
    let policy = policy();
    for (line, rule) in [
        ("npm pub", "no-npm-publish"),
        ("npm publi --tag next", "no-npm-publish"),
        ("npm --prefix . pub", "no-npm-publish"),
        ("docker container run --privileged img", "no-privileged"),
        ("docker image rm img", "no-rmi"),
        ("terraform apply -auto-approve -destroy", "no-destroy"),
        ("git send-pack --force origin main", "no-force"),
        ("docker create --privileged img", "no-privileged"),
        ("docker container create --privileged img", "no-privileged"),
    ] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (Deny, rule), "{line}: {:?}", d.reasons);
    }
    for line in ["npm p", "docker container ls", "terraform apply -auto-approve", "cargo b --release"] {
        assert_eq!(policy.judge_command(line, &ws).decision, Allow, "{line}");
    }
}

#[test]
fn package_script_is_judged_as_the_command_line_it_is() {
    let (dir, ws) = workspace(
        r#"{"scripts": {"deploy": "npm run build && npm publish", "build": "rm -r dist", "test": "jest",
            "pretest": "git push --force", "push": "git push", "release": "npm run deploy",
            "clean": "cd app && rm -r src"}}"#,
    );
    let policy = policy();
    for (line, decision, rule) in [
        ("npm run deploy", Deny, "no-npm-publish"),
        ("npm run-script deploy", Deny, "no-npm-publish"),
        ("npm rum release", Deny, "no-npm-publish"),
        ("npm test", Deny, "no-force"),
        ("npm t", Deny, "no-force"),
        ("yarn deploy", Deny, "no-npm-publish"),
        ("pnpm run release", Deny, "no-npm-publish"),
        // Without a script of that name, pnpm, yarn and bun run the program.
        ("yarn exec npm publish", Deny, "no-npm-publish"),
        ("pnpm run npm publish", Deny, "no-npm-publish"),
        ("yarn jest --ci", Allow, "yarn"),
        ("pnpm why react", Allow, "pnpm"),
        // Arguments after the script name are appended to its command line.
        ("npm run push -- --force", Deny, "no-force"),
        ("npm run build -- -f", Deny, "no-rm-rf"),
        ("npm run push", Ask, "push"),
        ("npm run build", Allow, "npm"),
        ("npm run clean", Allow, "npm"),
        ("npm run missing", Allow, "npm"),
        ("npm run", Allow, "npm"),
    ] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (decision, rule), "{line}: {:?}", d.reasons);
    }
    // A subfolder's commands read the nearest package.json above it.
    let d = policy.judge_command("cd app/src && npm run deploy", &ws);
    assert_eq!((d.decision, d.rule.as_str()), (Deny, "no-npm-publish"), "{:?}", d.reasons);
    // Scripts that cannot be read, or of packages elsewhere, are not allowed unseen.
    for line in ["npm -w pkg run deploy", "npm run $NAME", "npm run push -- $X", "cd $D && npm test"] {
        let d = policy.judge_command(line, &ws);
        assert_ne!(d.decision, Allow, "{line}: {d:?}");
    }
    // A script changed earlier on the same line is not the one read now.
    for line in [
        "npm pkg set scripts.build='npm publish' && npm run build",
        "cp other.json package.json; npm run build",
        "echo '{}' > package.json && npm test",
    ] {
        let d = policy.judge_command(line, &ws);
        assert_ne!(d.decision, Allow, "{line}: {d:?}");
    }
    fs::write(dir.path().join("package.json"), "{not json").unwrap();
    assert_eq!(policy.judge_command("npm test", &ws).decision, Ask);
    // Install and publish run lifecycle scripts.
    fs::write(dir.path().join("package.json"), r#"{"scripts": {"postinstall": "git push --force"}}"#).unwrap();
    assert_eq!(policy.judge_command("npm ci", &ws).decision, Deny);
    assert_eq!(policy.judge_command("npm i", &ws).decision, Deny);
}

#[test]
fn configuration_that_renames_a_command_is_not_trusted() {
    let (dir, ws) = workspace(r#"{"scripts": {"build": "jest"}}"#);
    let policy = policy();
    let d = policy.judge_command("cargo p", &ws);
    assert_eq!(d.decision, Allow, "{:?}", d.reasons);
    // An alias defined in the workspace's cargo configuration is judged as what it stands for.
    fs::create_dir_all(dir.path().join(".cargo")).unwrap();
    fs::write(dir.path().join(".cargo/config.toml"), "[alias]\np = \"publish\"\nt2 = [\"test\", \"-q\"]\n").unwrap();
    for line in ["cargo p", "cd app && cargo p", "cargo -v p --dry-run", "CARGO_ALIAS_Q=publish cargo q"] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (Deny, "no-cargo-publish"), "{line}: {:?}", d.reasons);
    }
    assert_eq!(policy.judge_command("cargo build", &ws).decision, Allow);
    assert_eq!(policy.judge_command("cargo t2", &ws).decision, Allow);
    // Configuration through the environment asks.
    for line in ["env npm_config_script_shell=./x npm run build", "MAKEFILES=x.mk make"] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (Ask, "env_assignment"), "{line}: {:?}", d.reasons);
    }
    // A project .npmrc that picks the shell running scripts leaves the scripts unknown.
    assert_eq!(policy.judge_command("npm run build", &ws).decision, Allow);
    fs::write(dir.path().join(".npmrc"), "script-shell=./x\n").unwrap();
    assert_eq!(policy.judge_command("npm run build", &ws).decision, Ask);
}

#[test]
fn script_language_that_runs_commands_is_never_allowed_by_a_rule() {
    let (_dir, ws) = workspace("{}");
    let policy = policy();
    for line in [
        "sed -n '1e rm -rf x' f",
        "sed 's/a/rm -rf x/e' f",
        "sed -e p -e 'w out' f",
        "sed '1r .env' f",
        "sed -f script.sed f",
        "awk 'BEGIN{system(\"rm -rf x\")}'",
        "awk '{print | \"sh\"}' f",
    ] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (Ask, "runs_other_code"), "{line}: {:?}", d.reasons);
    }
    for line in ["sed -i 's/a/b/g' f", "sed -n '2,5p' f", "awk -F: '{print $1}' f"] {
        assert_eq!(policy.judge_command(line, &ws).decision, Allow, "{line}");
    }
}

#[test]
fn makefile_recipe_is_judged_as_the_command_line_it_is() {
    let (dir, ws) = workspace("{}");
    fs::write(
        dir.path().join("Makefile"),
        "PUSH := git push\nall: test\ntest:\n\tcargo test\nrelease: test\n\t@npm publish\n\
         ship:\n\t$(PUSH) --force\ninline: ; -rm -rf dist\nvar:\n\t$(TOOL) publish\n",
    )
    .unwrap();
    let policy = policy();
    for (line, decision, rule) in [
        ("make", Allow, "make"),
        ("make test", Allow, "make"),
        ("make -j4 release", Deny, "no-npm-publish"),
        ("make ship", Deny, "no-force"),
        ("make inline", Deny, "no-rm-rf"),
        ("make TOOL=npm var", Deny, "no-npm-publish"),
        ("make var", Ask, "unparseable_command"),
    ] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (decision, rule), "{line}: {:?}", d.reasons);
    }
    fs::write(dir.path().join("Makefile"), "include other.mk\nall:\n\tcargo test\n").unwrap();
    assert_eq!(policy.judge_command("make", &ws).decision, Ask);
}

/// A workspace `repo/svc` below the repository `repo`: what cargo, npm and make read above it.
fn nested_workspace() -> (tempfile::TempDir, std::path::PathBuf, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().canonicalize().unwrap().join("repo");
    fs::create_dir_all(repo.join("svc/src")).unwrap();
    let ws = Workspace::open(&repo.join("svc"), &[]).unwrap();
    (dir, repo, ws)
}

#[test]
fn cargo_reads_its_configuration_from_every_parent_and_its_home() {
    let (dir, repo, ws) = nested_workspace();
    let policy = policy();
    assert_eq!(policy.judge_command("cargo ship", &ws).decision, Allow);
    fs::create_dir_all(repo.join(".cargo")).unwrap();
    fs::write(repo.join(".cargo/config.toml"), "[alias]\nship = \"publish\"\n").unwrap();
    for line in ["cargo ship", "cd src && cargo ship --allow-dirty"] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (Deny, "no-cargo-publish"), "{line}: {:?}", d.reasons);
        assert!(d.reasons[0].contains("repo/.cargo/config.toml"), "{:?}", d.reasons);
    }
    // A file cargo would read that cannot be parsed (or read) asks.
    fs::write(repo.join(".cargo/config"), "[alias\n").unwrap();
    for line in ["cargo ship", "cargo other"] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (Ask, "runs_other_code"), "{line}: {:?}", d.reasons);
        assert!(d.reasons[0].contains("repo/.cargo/config` is not valid TOML"), "{:?}", d.reasons);
    }
    assert_eq!(policy.judge_command("cargo build", &ws).decision, Allow, "built-ins are never aliases");
    drop(dir);
}

#[test]
fn npm_reads_the_nearest_package_json_and_the_workspaces_root() {
    let (_dir, repo, ws) = nested_workspace();
    let policy = policy();
    assert_eq!(policy.judge_command("npm test", &ws).decision, Allow);
    // No package.json in the workspace: npm runs the repository's.
    fs::write(repo.join("package.json"), r#"{"scripts": {"test": "rm -rf ..", "build": "jest"}}"#).unwrap();
    for line in ["npm test", "npm t", "cd src && npm test"] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (Deny, "no-rm-rf"), "{line}: {:?}", d.reasons);
    }
    // Relative paths of a script run above the workspace are not the workspace's.
    fs::write(repo.join("package.json"), r#"{"scripts": {"test": "jest ../x"}}"#).unwrap();
    assert_eq!(policy.judge_command("npm test", &ws).decision, Ask);
    // A member of npm workspaces: its own script and the root's of the same name.
    fs::write(ws.root().join("package.json"), r#"{"scripts": {"test": "jest"}}"#).unwrap();
    assert_eq!(policy.judge_command("npm test", &ws).decision, Allow, "not a workspaces root");
    fs::write(repo.join("package.json"), r#"{"workspaces": ["svc"], "scripts": {"test": "npm publish"}}"#).unwrap();
    let d = policy.judge_command("npm test", &ws);
    assert_eq!((d.decision, d.rule.as_str()), (Deny, "no-npm-publish"), "{:?}", d.reasons);
    // A package.json on the way that cannot be parsed asks.
    fs::write(repo.join("package.json"), "{").unwrap();
    let d = policy.judge_command("npm test", &ws);
    assert_eq!((d.decision, d.rule.as_str()), (Ask, "runs_other_code"), "{:?}", d.reasons);
}

#[test]
fn make_reads_the_makefiles_it_is_given() {
    let (dir, ws) = workspace("{}");
    let policy = policy();
    fs::write(dir.path().join("Makefile"), "all:\n\tcargo test\n").unwrap();
    fs::write(dir.path().join("release.mk"), "all:\n\tnpm publish\n").unwrap();
    fs::write(dir.path().join("extra.mk"), "clean:\n\trm -rf /\n%.o:\n\tgit push --force\n").unwrap();
    for (line, decision, rule) in [
        ("make", Allow, "make"),
        ("make -f release.mk", Deny, "no-npm-publish"),
        ("make --file=release.mk", Deny, "no-npm-publish"),
        ("make -frelease.mk all", Deny, "no-npm-publish"),
    ] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (decision, rule), "{line}: {:?}", d.reasons);
    }
    // A makefile that cannot be read, or standard input, is not known: it asks.
    for line in ["make -f missing.mk", "make -f -", "make -f release.mk -C sub"] {
        let d = policy.judge_command(line, &ws);
        assert_eq!(d.decision, Ask, "{line}: {:?}", d.reasons);
    }
    // MAKEFILES is read first; its pattern rules may run, its first rule is no default goal.
    let d = policy.judge_command("MAKEFILES=extra.mk make", &ws);
    assert_eq!((d.decision, d.rule.as_str()), (Deny, "no-force"), "{:?}", d.reasons);
    assert!(!d.reasons.iter().any(|r| r.contains("rm -rf /")), "{:?}", d.reasons);
    let d = policy.judge_command("MAKEFILES=extra.mk make clean", &ws);
    assert_eq!(d.decision, Deny, "{:?}", d.reasons);
}

#[test]
fn session_runners_are_judged_with_the_command_they_run() {
    let (_dir, ws) = workspace("{}");
    let policy = policy();
    for (line, rule) in [
        ("ssh-agent rm -rf x", "no-rm-rf"),
        ("ssh-agent -t 60 cargo publish", "no-cargo-publish"),
        ("flatpak-spawn --host rm -rf x", "no-rm-rf"),
        ("flatpak-spawn --host --env=A=b -- git push --force", "no-force"),
    ] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (Deny, rule), "{line}: {:?}", d.reasons);
    }
    // Never allowed by a rule on their own, even when what they run is.
    for line in ["ssh-agent cargo build", "flatpak-spawn --host cargo build"] {
        let d = policy.judge_command(line, &ws);
        assert_eq!(d.decision, Ask, "{line}: {:?}", d.reasons);
    }
}
