//! Deny and ask rules that name an option read a command's options as a set (T4): every
//! spelling, grouping, order and abbreviation of an option meets the rule; allow rules stay
//! as written.

use crate::common::config;
use steward_policy::{Policy, PolicyError, Workspace};
use steward_protocol::DecisionKind::{self, Allow, Ask, Deny};

fn workspace() -> (tempfile::TempDir, Workspace) {
    crate::common::workspace(&[("src/", "")])
}

/// A policy from `(name, argv as TOML, decision)` rules.
fn policy(rules: &[(&str, &str, &str)]) -> Policy {
    let mut text = String::from("[policy]\n");
    for (name, argv, decision) in rules {
        text.push_str(&format!(
            "[[policy.rule]]\nname = \"{name}\"\ntool = \"shell_command\"\nargv = {argv}\ndecision = \"{decision}\"\n"
        ));
    }
    Policy::new(&config(&text)).unwrap()
}

fn check(policy: &Policy, ws: &Workspace, cases: &[(&str, DecisionKind, &str)]) {
    for (line, expect, rule) in cases {
        let d = policy.judge_command(line, ws);
        assert_eq!((d.decision, d.rule.as_str()), (*expect, *rule), "{line}: {:?}", d.reasons);
    }
}

fn rm_policy() -> Policy {
    policy(&[("no-rm-rf", r#"["rm", "-rf", "**"]"#, "deny"), ("rm", r#"["rm", "**"]"#, "allow")])
}

#[test]
fn option_permutations_meet_deny_rules() {
    let (_dir, ws) = workspace();
    let policy = rm_policy();
    let mut cases: Vec<(&str, DecisionKind, &str)> = [
        "rm -rf x",
        "rm -r -f x",
        "rm -f -r x",
        "rm -fr x",
        "rm -rfv x",
        "rm -vrf x",
        "rm -v -rf x",
        "rm -v -r -v -f x",
        "rm x -rf",
        "rm x -r -f",
        "rm -r x -f",
        "rm x y -fr",
        "rm --interactive=never -rf x",
        "rm -R -f x",
    ]
    .iter()
    .map(|line| (*line, Deny, "no-rm-rf"))
    .collect();
    // Without both flags, or with them after `--` (then they are file names), it is not `rm -rf`.
    cases.extend([
        ("rm -r x", Allow, "rm"),
        ("rm -f x", Allow, "rm"),
        ("rm -rv x", Allow, "rm"),
        ("rm -r -- -f", Allow, "rm"),
        ("rm -- -rf x", Allow, "rm"),
        ("rm x -- -r -f", Allow, "rm"),
    ]);
    check(&policy, &ws, &cases);
    // git clean: each of `-f`, `-d`, `-x` in any grouping.
    let policy = policy_git_clean();
    let mut cases: Vec<(&str, DecisionKind, &str)> =
        ["git clean -fdx", "git clean -xdf", "git clean -f -d -x", "git clean -d src -fx", "git clean -fd -x -q"]
            .iter()
            .map(|line| (*line, Deny, "no-clean-fdx"))
            .collect();
    cases.extend([("git clean -fd", Allow, "git"), ("git clean -n -dx", Allow, "git")]);
    check(&policy, &ws, &cases);
}

fn policy_git_clean() -> Policy {
    policy(&[("no-clean-fdx", r#"["git", "clean", "-fdx", "**"]"#, "deny"), ("git", r#"["git", "**"]"#, "allow")])
}

#[test]
fn long_and_short_spellings_are_one_option() {
    let (_dir, ws) = workspace();
    let rm = rm_policy();
    check(
        &rm,
        &ws,
        &[
            ("rm --recursive --force x", Deny, "no-rm-rf"),
            ("rm --force -R x", Deny, "no-rm-rf"),
            ("rm x --recursive -f", Deny, "no-rm-rf"),
            ("rm --recursive x", Allow, "rm"),
        ],
    );
    let policy = policy(&[
        ("no-chmod-r", r#"["chmod", "-R", "777", "**"]"#, "deny"),
        ("no-post", r#"["curl", "-X", "POST", "**"]"#, "deny"),
        ("no-docker-rm-f", r#"["docker", "rm", "-f", "**"]"#, "deny"),
        ("no-delete-all", r#"["kubectl", "delete", "--all", "**"]"#, "deny"),
        ("no-hard-reset", r#"["git", "reset", "--hard", "**"]"#, "deny"),
        ("no-find-delete", r#"["find", "-delete", "**"]"#, "deny"),
        ("ask-tag", r#"["npm", "publish", "--tag", "latest", "**"]"#, "ask"),
        ("no-clean-ignored", r#"["git", "clean", "-X", "**"]"#, "deny"),
        ("npm", r#"["npm", "**"]"#, "allow"),
        ("no-rsync-delete", r#"["rsync", "--delete", "**"]"#, "deny"),
        ("rsync", r#"["rsync", "**"]"#, "allow"),
        ("chmod", r#"["chmod", "**"]"#, "allow"),
        ("curl", r#"["curl", "**"]"#, "allow"),
        ("docker", r#"["docker", "**"]"#, "allow"),
        ("kubectl", r#"["kubectl", "**"]"#, "allow"),
        ("git", r#"["git", "**"]"#, "allow"),
    ]);
    check(
        &policy,
        &ws,
        &[
            ("chmod -R 777 src", Deny, "no-chmod-r"),
            ("chmod --recursive 777 src", Deny, "no-chmod-r"),
            ("chmod 777 src -R", Deny, "no-chmod-r"),
            ("chmod -vR 777 src", Deny, "no-chmod-r"),
            // The mode is an operand and keeps its place among the operands.
            ("chmod -R 755 src", Allow, "chmod"),
            ("chmod -R src 777", Allow, "chmod"),
            ("curl -X POST https://example.invalid", Deny, "no-post"),
            ("curl -XPOST https://example.invalid", Deny, "no-post"),
            ("curl -sSXPOST https://example.invalid", Deny, "no-post"),
            ("curl --request POST https://example.invalid", Deny, "no-post"),
            ("curl --request=POST https://example.invalid", Deny, "no-post"),
            ("curl https://example.invalid -X post", Deny, "no-post"),
            // curl(1): `-d`, `--json` and `-F` send a POST.
            ("curl -d a=b https://example.invalid", Deny, "no-post"),
            ("curl --data-binary x https://example.invalid", Deny, "no-post"),
            ("curl --json {} https://example.invalid", Deny, "no-post"),
            ("curl -sF a=b https://example.invalid", Deny, "no-post"),
            ("curl -X GET https://example.invalid", Allow, "curl"),
            // `-H` takes a value: `-X` inside it is no method.
            ("curl -H -XPOST https://example.invalid", Allow, "curl"),
            ("docker rm -f web", Deny, "no-docker-rm-f"),
            ("docker rm --force web", Deny, "no-docker-rm-f"),
            ("docker rm web -vf", Deny, "no-docker-rm-f"),
            ("docker --context prod rm web --force", Deny, "no-docker-rm-f"),
            ("docker rm -v web", Allow, "docker"),
            ("kubectl delete pods --all", Deny, "no-delete-all"),
            ("kubectl -n prod delete --all pods", Deny, "no-delete-all"),
            ("kubectl delete pods --all=true -n prod", Deny, "no-delete-all"),
            // kubectl-delete(1): `-A` is `--all-namespaces`, another option.
            ("kubectl delete pods web -A", Allow, "kubectl"),
            ("git reset --hard HEAD~1", Deny, "no-hard-reset"),
            ("git reset HEAD~1 --hard", Deny, "no-hard-reset"),
            ("git -C src reset -q --hard", Deny, "no-hard-reset"),
            ("git reset --har HEAD~1", Deny, "no-hard-reset"),
            // git refuses `--hard=REV` ("option `hard' takes no value"); read as `--hard` anyway.
            ("git reset --hard=HEAD~1", Deny, "no-hard-reset"),
            ("git reset --soft HEAD~1", Allow, "git"),
            ("find . -name '*.tmp' -delete", Deny, "no-find-delete"),
            ("find src -delete -print", Deny, "no-find-delete"),
            ("npm publish --tag=latest", Ask, "ask-tag"),
            ("npm publish --tag latest --dry-run", Ask, "ask-tag"),
            ("npm --tag latest publish", Ask, "ask-tag"),
            ("npm publish --tag next", Allow, "npm"),
            // Options compare case-insensitively on the strict side: `-x` meets a rule on `-X`.
            ("git clean -fX", Deny, "no-clean-ignored"),
            ("git clean -f -x", Deny, "no-clean-ignored"),
            ("git clean -fd", Allow, "git"),
            // rsync(1): `--del` and `--delete-after` and the like imply `--delete`.
            ("rsync -a --delete src/ dst/", Deny, "no-rsync-delete"),
            ("rsync -a src/ dst/ --del", Deny, "no-rsync-delete"),
            ("rsync -av --delete-after src/ dst/", Deny, "no-rsync-delete"),
            ("rsync --delete-excluded -a src/ dst/", Deny, "no-rsync-delete"),
            ("rsync -a src/ dst/", Allow, "rsync"),
        ],
    );
}

#[test]
fn abbreviated_long_options_meet_deny_rules() {
    let (_dir, ws) = workspace();
    let rm = rm_policy();
    check(
        &rm,
        &ws,
        &[
            ("rm --recur --forc x", Deny, "no-rm-rf"),
            ("rm --rec -f x", Deny, "no-rm-rf"),
            ("rm -r --f x", Deny, "no-rm-rf"),
            ("rm --recursive --for x", Deny, "no-rm-rf"),
            ("rm --recursive --verbose x", Allow, "rm"),
        ],
    );
    let policy = policy(&[
        ("no-force", r#"["git", "push", "--force", "**"]"#, "deny"),
        ("no-post", r#"["curl", "-X", "POST", "**"]"#, "deny"),
        // A program Steward has no table for: the rule's own spelling is abbreviated.
        ("no-frob", r#"["frob", "--everything", "**"]"#, "deny"),
        ("git", r#"["git", "**"]"#, "allow"),
        ("curl", r#"["curl", "**"]"#, "allow"),
        ("frob", r#"["frob", "**"]"#, "allow"),
    ]);
    check(
        &policy,
        &ws,
        &[
            ("git push --forc origin main", Deny, "no-force"),
            // Several long options start `--f` (`--force`, `--force-with-lease`,
            // `--follow-tags`): strictly, it is each of them.
            ("git push --f origin main", Deny, "no-force"),
            ("git push --force-w origin main", Deny, "no-force"),
            ("git push --follow-tags origin main", Allow, "git"),
            ("curl --req POST https://example.invalid", Deny, "no-post"),
            ("curl --requ=POST https://example.invalid", Deny, "no-post"),
            ("frob --every x", Deny, "no-frob"),
            ("frob --everything-else x", Allow, "frob"),
        ],
    );
}

#[test]
fn plus_refspec_is_a_force_push() {
    let (_dir, ws) = workspace();
    let policy = policy(&[
        ("no-force", r#"["git", "push", "--force", "**"]"#, "deny"),
        ("ask-delete", r#"["git", "push", "--delete", "**"]"#, "ask"),
        ("push", r#"["git", "push", "**"]"#, "allow"),
    ]);
    check(
        &policy,
        &ws,
        &[
            ("git push --force origin main", Deny, "no-force"),
            ("git push -f origin main", Deny, "no-force"),
            ("git push origin main -f", Deny, "no-force"),
            ("git push -uf origin main", Deny, "no-force"),
            ("git push origin +main", Deny, "no-force"),
            ("git push origin +HEAD:refs/heads/main", Deny, "no-force"),
            ("git push origin main +dev:dev", Deny, "no-force"),
            ("git push origin -- +main", Deny, "no-force"),
            ("git -C src push origin +main", Deny, "no-force"),
            ("git push --force-with-lease origin main", Deny, "no-force"),
            ("git push --force-with-lease=main:abc123 origin main", Deny, "no-force"),
            ("git push --force-if-includes --force-with-lease origin main", Deny, "no-force"),
            // git-push(1): `--mirror` force-updates and deletes remote refs.
            ("git push --mirror backup", Deny, "no-force"),
            ("git push origin :old", Ask, "ask-delete"),
            ("git push -d origin old", Ask, "ask-delete"),
            ("git push origin --delete old", Ask, "ask-delete"),
            ("git push origin main", Allow, "push"),
            ("git push -u origin main", Allow, "push"),
            ("git push origin main:main", Allow, "push"),
        ],
    );
}

#[test]
fn option_values_and_unknown_programs_are_read_both_ways() {
    let (_dir, ws) = workspace();
    let policy = policy(&[
        // `frob` has no table: `-o` may or may not take `out`.
        ("no-frob-o", r#"["frob", "-o", "out", "**"]"#, "deny"),
        ("no-frob-ab", r#"["frob", "-ab", "**"]"#, "deny"),
        // A global option in a deny rule is met wherever the command writes it.
        ("no-prod-delete", r#"["kubectl", "--context", "prod", "delete", "**"]"#, "deny"),
        // Go's `flag` package reads one dash or two, and `=value`.
        ("no-auto-approve", r#"["terraform", "destroy", "-auto-approve", "**"]"#, "deny"),
        ("frob", r#"["frob", "**"]"#, "allow"),
        ("kubectl", r#"["kubectl", "**"]"#, "allow"),
        ("terraform", r#"["terraform", "**"]"#, "allow"),
    ]);
    check(
        &policy,
        &ws,
        &[
            ("frob -o out x", Deny, "no-frob-o"),
            ("frob -oout x", Deny, "no-frob-o"),
            ("frob x -o out", Deny, "no-frob-o"),
            ("frob -v -o out", Deny, "no-frob-o"),
            ("frob -o other x", Allow, "frob"),
            ("frob -b -a x", Deny, "no-frob-ab"),
            ("frob x -ba", Deny, "no-frob-ab"),
            ("frob -a x", Allow, "frob"),
            ("kubectl delete pod web --context prod", Deny, "no-prod-delete"),
            ("kubectl --context=prod delete pod web", Deny, "no-prod-delete"),
            ("kubectl delete --context=prod pod web", Deny, "no-prod-delete"),
            ("kubectl delete pod web --context dev", Allow, "kubectl"),
            ("kubectl get pods --context prod", Allow, "kubectl"),
            ("terraform destroy -auto-approve", Deny, "no-auto-approve"),
            ("terraform destroy --auto-approve", Deny, "no-auto-approve"),
            ("terraform -chdir=infra destroy -auto-approve=true", Deny, "no-auto-approve"),
            ("terraform destroy -target=x -auto-approve", Deny, "no-auto-approve"),
            ("terraform destroy -target=x", Allow, "terraform"),
        ],
    );
}

#[test]
fn computed_words_may_be_any_option() {
    let (_dir, ws) = workspace();
    let policy = rm_policy();
    for line in ["rm -r $F x", "rm \"$FLAGS\" x", "rm x -f $(echo -r)"] {
        let d = policy.judge_command(line, &ws);
        assert_eq!((d.decision, d.rule.as_str()), (Deny, "no-rm-rf"), "{line}: {:?}", d.reasons);
    }
    // After `--` a computed word is a file name.
    let d = policy.judge_command("rm -r -- $F", &ws);
    assert_eq!(d.decision, Ask, "{:?}", d.reasons);
}

#[test]
fn allow_rules_stay_as_written() {
    let (_dir, ws) = workspace();
    let policy = policy(&[("rm-r", r#"["rm", "-r", "**"]"#, "allow"), ("no-rm-one", r#"["rm", "*"]"#, "ask")]);
    check(
        &policy,
        &ws,
        &[
            ("rm -r x", Allow, "rm-r"),
            ("rm -R x", Ask, "default:shell"),
            ("rm --recursive x", Ask, "default:shell"),
            ("rm x -r", Ask, "default:shell"),
            ("rm -rf x", Ask, "default:shell"),
            // A rule naming no option keeps reading words in their places.
            ("rm x", Ask, "no-rm-one"),
            ("rm -v x", Ask, "default:shell"),
        ],
    );
}

#[test]
fn rule_examples_use_the_option_reading() {
    let text = r#"
[policy]
[[policy.rule]]
name = "no-rm-rf"
tool = "shell_command"
argv = ["rm", "-rf", "**"]
decision = "deny"
match = ["rm -r -f x", "rm x --recursive --force", ["rm", "-fr", "x"]]
not_match = ["rm -r x", "rm -- -rf"]
"#;
    Policy::new(&config(text)).unwrap();
    let wrong = text.replace("\"rm -r x\", ", "\"rm -r x -f\", ");
    let err = Policy::new(&config(&wrong)).unwrap_err();
    assert!(matches!(err, PolicyError::Example { .. }), "{err}");
    // Options whose arity cannot be known multiply a rule's readings; too many is refused.
    let many = r#"
[policy]
[[policy.rule]]
name = "many"
tool = "shell_command"
argv = ["frob", "-a", "1", "-b", "2", "-c", "3", "-d", "4", "-e", "5", "-f", "6", "-g", "7"]
decision = "deny"
"#;
    let err = Policy::new(&config(many)).unwrap_err();
    assert!(matches!(err, PolicyError::BadArgvRule { .. }), "{err}");
}

#[test]
fn options_between_a_rules_words_do_not_hide_them() {
    let (_dir, ws) = workspace();
    let policy = policy(&[
        ("no-ns-delete", r#"["kubectl", "delete", "namespace", "**"]"#, "deny"),
        ("no-remote-remove", r#"["git", "remote", "remove", "**"]"#, "deny"),
        ("no-origin-main", r#"["git", "push", "origin", "main"]"#, "ask"),
        ("kubectl", r#"["kubectl", "**"]"#, "allow"),
        ("git", r#"["git", "**"]"#, "allow"),
    ]);
    check(
        &policy,
        &ws,
        &[
            ("kubectl delete namespace prod", Deny, "no-ns-delete"),
            ("kubectl delete --wait=false namespace prod", Deny, "no-ns-delete"),
            ("kubectl delete -n x --now namespace prod", Deny, "no-ns-delete"),
            ("kubectl delete pod namespace", Allow, "kubectl"),
            ("git remote -v remove origin", Deny, "no-remote-remove"),
            ("git push -v origin main", Ask, "no-origin-main"),
            ("git push origin --verbose main", Ask, "no-origin-main"),
            // Without `**` the operands are exactly the rule's.
            ("git push origin main dev", Allow, "git"),
            ("git push origin dev", Allow, "git"),
        ],
    );
}

#[test]
fn option_file_may_set_any_option() {
    let (_dir, ws) = workspace();
    let policy =
        policy(&[("no-post", r#"["curl", "-X", "POST", "**"]"#, "deny"), ("curl", r#"["curl", "**"]"#, "allow")]);
    check(
        &policy,
        &ws,
        &[
            ("curl -K cfg https://example.test", Deny, "no-post"),
            ("curl --config=cfg https://example.test", Deny, "no-post"),
            ("curl -sK cfg https://example.test", Deny, "no-post"),
            ("curl -s https://example.test", Allow, "curl"),
        ],
    );
}

#[test]
fn mode_spelled_another_way_meets_a_rule_on_its_octal_form() {
    let (_dir, ws) = workspace();
    let policy =
        policy(&[("no-777", r#"["chmod", "-R", "777", "**"]"#, "deny"), ("chmod", r#"["chmod", "**"]"#, "allow")]);
    check(
        &policy,
        &ws,
        &[
            ("chmod -R 0777 src", Deny, "no-777"),
            ("chmod --recursive 00777 src", Deny, "no-777"),
            ("chmod -R a+rwx src", Deny, "no-777"),
            ("chmod -R ugo=rwx src", Deny, "no-777"),
            ("chmod -R u=rwx,go=rwx src", Deny, "no-777"),
            ("chmod -R +rwx src", Deny, "no-777"),
            ("chmod -R 755 src", Allow, "chmod"),
            ("chmod -R a+rx src", Allow, "chmod"),
            ("chmod -R a=rwx,o-w src", Allow, "chmod"),
        ],
    );
}
