//! The examples in `README.md` and `docs/*.md` are run, so that documentation cannot drift
//! from the binary:
//! - every `steward` command line of a `sh` block is parsed by the real binary (its
//!   subcommand and options must exist: `steward ARGS --help` succeeds), and the ones that
//!   work on a workspace without a server are executed in a temporary git repository, in the
//!   order the documents give them; a line asking for a model gets the scripted fake provider
//!   instead, since no model server is reachable here;
//! - every `toml` block is loaded: configuration by `steward config show` (as the file its
//!   first comment names, else the user's `config.toml`), a fake-provider scenario by a run
//!   that plays it, and an eval case file by `steward eval`.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Env, code, stderr, stdout};

/// One fenced block of a document.
struct Block {
    file: String,
    line: usize,
    lang: String,
    body: String,
}

fn docs_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `README.md` and every `docs/*.md`, in a fixed order (README first, then by name).
fn documents() -> Vec<PathBuf> {
    let root = docs_root();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root.join("README.md"));
    docs
}

/// The fenced blocks (```` ```lang ````) of a Markdown text.
fn blocks(file: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(lang)) => {
                open = Some(Block {
                    file: file.to_string(),
                    line: n + 1,
                    lang: lang.trim().to_string(),
                    body: String::new(),
                })
            }
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some(block), None) => {
                block.body.push_str(line);
                block.body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

fn all_blocks() -> Vec<Block> {
    documents()
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).expect("document readable");
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            blocks(&name, &text)
        })
        .collect()
}

/// A command line without its trailing `# comment` (a `#` after a space, outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return &line[..i],
            None => {}
        }
        previous = c;
    }
    line
}

/// The `steward` invocations of the `sh` blocks: `(where, argv after "steward")`. Continued
/// lines are joined, leading `VAR=value` words dropped, the first simple command kept (up to
/// `|`, `>` or `&&`), and the optional parts of a usage line (`[--all]`) taken as written.
fn invocations(blocks: &[Block]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for block in blocks.iter().filter(|b| b.lang == "sh") {
        let joined = block.body.replace("\\\n", " ");
        for line in joined.lines() {
            let line = strip_comment(line).trim();
            let Ok(words) = shell_words::split(&line.replace(['[', ']'], "")) else {
                panic!("{}:{}: an example line does not parse as a shell line: {line}", block.file, block.line)
            };
            let mut words = words.into_iter().skip_while(|w| w.contains('=') && !w.starts_with('-')).peekable();
            if words.peek().map(String::as_str) != Some("steward") {
                continue;
            }
            let argv: Vec<String> = words.skip(1).take_while(|w| !matches!(w.as_str(), "|" | ">" | "&&")).collect();
            out.push((format!("{}:{} `steward {}`", block.file, block.line, argv.join(" ")), argv));
        }
    }
    out
}

/// A word standing for a value the reader supplies (`run_…`, `path/to/…`, `~/repo`).
fn is_placeholder(word: &str) -> bool {
    word.contains('…') || word.starts_with("path/to/") || word.starts_with('~') || word.starts_with("/path/")
}

/// Subcommands that work on a local workspace with no server, model or database to start, and
/// end by themselves.
const EXECUTED: &[&str] =
    &["run", "show", "runs", "audit", "policy", "config", "rollback", "approvals", "trust", "tools", "eval"];

fn workspace() -> Env {
    let env = Env::new();
    env.write("note.txt", "old text\n");
    env.write(".env", "API_KEY=sk-live-0123456789abcdef0123\n");
    env.write("src/main.rs", "fn main() {}\n");
    env.write("src/lib.rs", "pub fn old_name() {} // TODO: rename\n");
    env.git_init();
    env
}

#[test]
fn every_documented_command_line_parses_and_the_local_ones_run() {
    let blocks = all_blocks();
    let lines = invocations(&blocks);
    assert!(lines.len() >= 40, "the documents hold the command examples ({} found)", lines.len());
    let env = workspace();
    let scenario = env.dir.path().join("answer.toml");
    std::fs::write(&scenario, "[[round]]\ntext = \"Done.\"\n").expect("scenario written");
    let mut executed = 0;
    for (place, argv) in &lines {
        let shape: Vec<String> = argv.iter().map(|w| if is_placeholder(w) { "X".into() } else { w.clone() }).collect();
        let mut help: Vec<&str> = shape.iter().map(String::as_str).collect();
        help.push("--help");
        let out = env.steward(&help);
        assert_eq!(code(&out), 0, "{place}: the binary does not accept it: {}", stderr(&out));

        let runnable = argv.first().is_some_and(|c| EXECUTED.contains(&c.as_str()))
            && !argv.iter().any(|w| is_placeholder(w))
            // A case file of another project (`steward eval FILE`) is not part of this checkout.
            && !(argv[0] == "eval" && argv.len() > 1);
        if !runnable {
            continue;
        }
        let args = with_fake_model(argv, &scenario);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env.steward(&args);
        assert_eq!(code(&out), 0, "{place} failed:\n{}\n{}", stdout(&out), stderr(&out));
        executed += 1;
    }
    assert!(executed >= 25, "most examples run for real ({executed} ran)");
}

/// `argv` with `--provider NAME` / `--base-url URL` replaced by the scripted fake provider.
fn with_fake_model(argv: &[String], scenario: &Path) -> Vec<String> {
    if argv[0] != "run" || !argv.iter().any(|w| w == "--provider" || w == "--base-url") {
        return argv.to_vec();
    }
    let mut out = vec!["run".to_string(), "--provider".into(), "fake".into(), "--scenario".into()];
    out.push(scenario.display().to_string());
    let mut words = argv[1..].iter();
    while let Some(word) = words.next() {
        if word == "--provider" || word == "--base-url" {
            words.next();
        } else {
            out.push(word.clone());
        }
    }
    out
}

#[test]
fn every_documented_toml_example_loads() {
    let blocks = all_blocks();
    let tomls: Vec<&Block> = blocks.iter().filter(|b| b.lang == "toml").collect();
    assert!(tomls.len() >= 8, "the documents hold the TOML examples ({} found)", tomls.len());
    for block in tomls {
        let place = format!("{}:{}", block.file, block.line);
        let env = workspace();
        let out = if block.body.contains("[[round]]") {
            let path = env.dir.path().join("scenario.toml");
            std::fs::write(&path, &block.body).expect("scenario written");
            let out = env.steward(&[
                "run",
                "--provider",
                "fake",
                "--scenario",
                &path.display().to_string(),
                "read the readme",
            ]);
            // A scenario may script a failing planner call: the run then fails with exactly
            // that message, which shows the scenario was read and played.
            if let Some(message) = scripted_error(&block.body) {
                assert_eq!(code(&out), 1, "{place}: {}", stderr(&out));
                assert!(stderr(&out).contains(&message), "{place}: the scripted error is not shown:\n{}", stderr(&out));
                continue;
            }
            out
        } else if block.body.contains("[[case]]") {
            let path = env.dir.path().join("cases.toml");
            std::fs::write(&path, &block.body).expect("cases written");
            env.steward(&["eval", &path.display().to_string()])
        } else {
            let target = config_file(&env, &block.body);
            std::fs::create_dir_all(target.parent().expect("a folder")).expect("config folder");
            std::fs::write(&target, &block.body).expect("config written");
            if target.starts_with(env.ws()) {
                // A repository's own `.steward/` counts in full once trusted.
                let trust = env.steward(&["trust"]);
                assert_eq!(code(&trust), 0, "{place}: {}", stderr(&trust));
            }
            env.steward(&["config", "show"])
        };
        assert_eq!(code(&out), 0, "{place} does not load:\n{}\n{}", stdout(&out), stderr(&out));
        assert!(!stderr(&out).contains("ignored"), "{place}: settings were ignored:\n{}", stderr(&out));
    }
}

/// The `message` of a scenario's scripted `[round.error]`, if it has one.
fn scripted_error(body: &str) -> Option<String> {
    let value: toml::Table = body.parse().ok()?;
    let rounds = value.get("round")?.as_array()?;
    rounds.iter().find_map(|r| Some(r.get("error")?.get("message")?.as_str()?.to_string()))
}

/// Where a configuration example belongs: the file its first comment names
/// (`# ~/.config/steward/mcp.toml`, `# .steward/config.toml`), else the user's `config.toml`.
fn config_file(env: &Env, body: &str) -> PathBuf {
    let user = env.dir.path().join("xdg/steward");
    let named =
        body.lines().next().and_then(|l| l.strip_prefix("# ")).map(|l| l.split_whitespace().next().unwrap_or(""));
    match named {
        Some(path) if path.starts_with("~/.config/steward/") && path.ends_with(".toml") => {
            user.join(path.trim_start_matches("~/.config/steward/"))
        }
        Some(path) if path.starts_with(".steward/") && path.ends_with(".toml") => env.ws().join(path),
        _ => user.join("config.toml"),
    }
}

/// The pages under `docs/reference/` are what the code generates now. A test never rewrites
/// them: `scripts/reference.sh` does, and the change is then reviewed and committed.
#[test]
fn reference_pages_are_current() {
    let env = Env::new();
    for (page, file) in
        [("cli", "cli.md"), ("events", "events.md"), ("config", "configuration.md"), ("man", "steward.1")]
    {
        let out = env.steward(&["reference", page]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let path = docs_root().join(format!("docs/reference/{file}"));
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == stdout(&out),
            "docs/reference/{file} is stale: run scripts/reference.sh and commit the result"
        );
    }
}

/// `steward reference man --out DIR` writes one manual page per visible command, each a roff
/// page that names itself.
#[test]
fn manual_pages_are_written_to_a_folder() {
    let env = Env::new();
    let dir = env.dir.path().join("man1");
    let out = env.steward(&["reference", "man", "--out", dir.to_str().expect("UTF-8 path")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let main = std::fs::read_to_string(dir.join("steward.1")).expect("steward.1 written");
    assert!(main.starts_with(".ie \\n(.g .ds Aq") || main.contains(".TH steward 1"), "{main}");
    let run = std::fs::read_to_string(dir.join("steward-run.1")).expect("steward-run.1 written");
    assert!(run.contains(".TH steward-run 1") && run.contains("\\-\\-json"), "{run}");
    assert!(!dir.join("steward-reference.1").exists(), "hidden commands get no page");
    assert!(stdout(&out).contains("steward-run.1"), "{}", stdout(&out));
    let refused = env.steward(&["reference", "cli", "--out", dir.to_str().expect("UTF-8 path")]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
}

/// `steward completions SHELL` prints a script the shell accepts.
#[test]
fn bash_completion_script_loads_in_bash() {
    let env = Env::new();
    let out = env.steward(&["completions", "bash"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let script = env.dir.path().join("steward.bash");
    std::fs::write(&script, &out.stdout).expect("script written");
    let check = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p steward", script.display()))
        .output()
        .expect("bash runs");
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    assert!(String::from_utf8_lossy(&check.stdout).contains("steward"), "no completion registered");
}
