use super::*;

fn programs(line: &str) -> Vec<String> {
    split(line).unwrap_or_else(|e| panic!("{line}: {e}")).into_iter().map(|c| c.program).collect()
}

fn argvs(line: &str) -> Vec<Vec<String>> {
    split(line).unwrap_or_else(|e| panic!("{line}: {e}")).into_iter().map(|c| c.argv).collect()
}

#[test]
fn operators_split_and_quotes_do_not() {
    let table: &[(&str, &[&str])] = &[
        ("echo hello", &["echo"]),
        ("echo hello && ls", &["echo", "ls"]),
        ("a; b || c | d |& e & f", &["a", "b", "c", "d", "e", "f"]),
        ("echo hello\nrm -rf build", &["echo", "rm"]),
        ("echo 'a; b && c'", &["echo"]),
        ("echo \"a | b\" # rm -rf /", &["echo"]),
        ("echo $(cat x) `whoami`", &["cat", "whoami", "echo"]),
        ("diff <(ls a) >(tee b)", &["ls", "tee", "diff"]),
        ("( cd src && rm -rf ../dist )", &["cd", "rm"]),
        ("{ rm -rf ./dist; }", &["rm"]),
        ("if true; then rm x; else ls; fi", &["true", "rm", "ls"]),
        ("for f in $(ls); do cat \"$f\"; done", &["ls", "cat"]),
        // The loop's redirection becomes a redirect-only part (argv empty).
        ("while read l; do echo $l; done < in.txt", &["read", "echo", ""]),
        ("! grep x y", &["grep"]),
        ("echo \"$(rm -rf /)\"", &["rm", "echo"]),
        ("X=$(id) ls", &["id", "ls"]),
        // `for NAME do …` (no `in`): the body is judged, not swallowed as loop words.
        ("echo hi; for x do rm -rf x; done", &["echo", "rm"]),
        ("for x\ndo cat y; done", &["cat"]),
    ];
    for (line, expected) in table {
        assert_eq!(programs(line), *expected, "{line}");
    }
}

#[test]
fn wrappers_assignments_and_paths_are_removed() {
    let table: &[(&str, &str, &[&str])] = &[
        ("FOO=1 rm -rf ./dist", "rm", &["rm", "-rf", "./dist"]),
        ("env FOO=1 rm -rf ./dist", "rm", &["rm", "-rf", "./dist"]),
        ("env -i -u HOME A=b nice -n 5 timeout -s KILL 10 nohup time -p rm x", "rm", &["rm", "x"]),
        ("command exec -a foo \\rm x", "rm", &["rm", "x"]),
        ("'rm' -rf x", "rm", &["rm", "-rf", "x"]),
        ("\"r\"m x", "rm", &["rm", "x"]),
        ("/bin/rm -rf x", "rm", &["/bin/rm", "-rf", "x"]),
        ("bash -lc 'rm -rf ./dist'", "rm", &["rm", "-rf", "./dist"]),
        ("sh -c \"sh -c 'rm x'\"", "rm", &["rm", "x"]),
        ("zsh -x -o pipefail -c 'gh api user'", "gh", &["gh", "api", "user"]),
        ("command -v rm", "command", &["command", "-v", "rm"]),
        ("env", "env", &["env"]),
        ("bash script.sh", "bash", &["bash", "script.sh"]),
    ];
    for (line, program, argv) in table {
        let parts = split(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        let last = parts.last().unwrap();
        assert_eq!(&last.program, program, "{line}");
        if !argv.is_empty() {
            assert_eq!(last.argv, *argv, "{line}");
        }
    }
    let parts = split("GH_PAGER=cat gh api user").unwrap();
    assert_eq!(parts[0].env, [("GH_PAGER".to_string(), "cat".to_string())]);
    let parts = split("xargs -0 rm").unwrap();
    assert_eq!((parts[0].program.as_str(), parts[0].dynamic.last()), ("rm", Some(&true)));
}

#[test]
fn redirections_are_kept_out_of_argv() {
    let parts = split("echo hi > out.txt 2>&1 < in.txt >> log 2>/dev/null &> all").unwrap();
    assert_eq!(parts[0].argv, ["echo", "hi"]);
    assert_eq!(parts[0].redirects, ["out.txt", "log", "/dev/null", "all"]);
    assert_eq!(parts[0].inputs, ["in.txt"]);
    let parts = split("( cat a ) > b").unwrap();
    assert_eq!(parts[0].redirects, ["b"]);
    let parts = split("> only").unwrap();
    assert!(parts[0].argv.is_empty());
    let parts = split("cat <<< 'text'").unwrap();
    assert!(parts[0].inputs.is_empty());
}

#[test]
fn expansions_are_flagged_dynamic() {
    let parts = split("echo $HOME ${X} '$HOME' *.rs ~/x a{b,c} plain \"$Y\"").unwrap();
    assert_eq!(parts[0].dynamic, [false, true, true, false, true, true, true, false, true]);
    assert_eq!(argvs("echo 'a b' \"c\\\"d\" e\\ f"), [["echo", "a b", "c\"d", "e f"]]);
}

#[test]
fn unparseable_lines() {
    let lines = [
        "",
        "   ",
        "eval \"$CMD\"",
        "bash -c 'eval x'",
        "source ./env.sh",
        ". ./env.sh",
        "$CMD -rf /",
        "${X} y",
        "$(echo rm) -rf /",
        "echo 'unbalanced",
        "echo \"unbalanced",
        "echo `unbalanced",
        "echo $(unbalanced",
        "( ls",
        "{ ls",
        "cat <<EOF\nx\nEOF",
        "case $x in a) ls;; esac",
        "f() { ls; }",
        "echo $((1+2))",
        "ls &&",
        "; ls",
        "bash -c \"$X\"",
        "env -S 'rm -rf /'",
        "echo > $OUT",
        "alias ls='rm -rf'",
        "a=(1 2)",
        "r* -rf /",
        "echo x\\",
    ];
    for line in lines {
        assert!(matches!(split(line), Err(ShellError::Unparseable(_))), "{line:?} should be unparseable");
    }
}

#[test]
fn limits_are_enforced() {
    let long = "a".repeat(MAX_INPUT_BYTES + 1);
    assert!(split(&long).is_err());
    let mut nested = "ls".to_string();
    for _ in 0..(MAX_DEPTH + 2) {
        nested = format!("echo $({nested})");
    }
    assert!(split(&nested).is_err());
    let mut shells = "rm x".to_string();
    for _ in 0..(MAX_DEPTH + 2) {
        shells = format!("sh -c {}", shell_words::quote(&shells));
    }
    assert!(split(&shells).is_err());
    assert_eq!(split("sh -c 'sh -c \"rm x\"'").unwrap()[0].program, "rm");
}

#[test]
fn split_argv_opens_wrappers_without_shell_parsing() {
    let argv: Vec<String> = ["/bin/zsh", "-lc", "cd src && rm -rf ../dist"].iter().map(|s| s.to_string()).collect();
    let parts = split_argv(&argv, None).unwrap();
    // The login shell stays a part of its own (it re-reads profiles), then its script's commands.
    assert_eq!(parts.iter().map(|c| c.program.as_str()).collect::<Vec<_>>(), ["zsh", "cd", "rm"]);
    let argv = vec!["FOO=1".to_string(), "rm".to_string()];
    assert_eq!(split_argv(&argv, None).unwrap()[0].program, "FOO=1");
    assert!(split_argv(&[], None).is_err());
}

/// Found by the differential test against bash: the `time` keyword at the start of a pipeline
/// takes only `-p` and then `--`; GNU time's options (`-o FILE`, `-v`) are the words of the
/// command it times, so `time -o f ls` runs the program `-o`. After `|` or a prefix such as
/// `env`, `time` names the program, whose options the wrapper table reads.
#[test]
fn time_keyword_takes_only_p_and_double_dash() {
    let table: &[(&str, &[&str])] = &[
        ("time -o f ls", &["-o", "f", "ls"]),
        ("time -v ls x", &["-v", "ls", "x"]),
        ("time -p -p ls", &["-p", "ls"]),
        ("time -p -- ls a", &["ls", "a"]),
        ("time -- -p ls", &["-p", "ls"]),
        ("time time ls", &["ls"]),
        ("! time -p ls", &["ls"]),
        ("ls | time -o f cat", &["ls"]),
        ("env time -o f ls", &["ls"]),
    ];
    for (line, expected) in table {
        let first = argvs(line).into_iter().next().unwrap_or_default();
        assert_eq!(first.iter().map(String::as_str).collect::<Vec<_>>(), *expected, "{line}");
    }
    assert_eq!(argvs("ls | time -o f cat")[1], ["cat"]);
    assert_eq!(split("ls | time -o f cat").unwrap()[1].redirects, ["f"]);
    assert!(split("ls | time ( rm x )").is_err(), "after `|`, `time` is a program, which cannot take a group");
    assert_eq!(programs("time ( rm x )"), ["rm"]);
    assert_eq!(programs("time -p { rm x; }"), ["rm"]);
}
