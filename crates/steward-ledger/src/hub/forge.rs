//! The forge as the hub sees it: a local git repository in which `refs/pull/N/head` names pull
//! request N's head commit, and the head commit's message is the PR's description.
//!
//! Every git command runs with hooks disabled (`core.hooksPath=/dev/null`), without
//! `GIT_DIR`/`GIT_WORK_TREE` from the environment, and its output is data.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::wire::{Check, CheckOutcome};

/// Longest PR description handed to a job, in characters (the rest is cut).
pub const MAX_DESCRIPTION_CHARS: usize = 8000;

/// What the forge shows of a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrView {
    /// `refs/pull/N/head` does not exist (or the repository cannot be read).
    NotVisible,
    /// The PR's head commit (40 lowercase hex).
    Head(String),
}

/// A git command's result: its argv (for evidence), exit code and stdout.
#[derive(Debug, Clone)]
pub struct GitRun {
    /// The command as run.
    pub argv: Vec<String>,
    /// Exit code; `None` when it could not be started or was killed.
    pub exit_code: Option<i32>,
    /// Standard output (lossy UTF-8).
    pub stdout: String,
}

impl GitRun {
    /// The run as an evidence check: `passed` on exit 0, `failed` on another exit, `error`
    /// when it did not run to an exit.
    pub fn check(&self) -> Check {
        let outcome = match self.exit_code {
            Some(0) => CheckOutcome::Passed,
            Some(_) => CheckOutcome::Failed,
            None => CheckOutcome::Error,
        };
        Check { command: self.argv.clone(), outcome, exit_code: self.exit_code, log_ref: None }
    }
}

/// Runs `git -C dir ARGS…` (hooks off, no inherited repository variables).
pub async fn git(dir: &Path, args: &[&str]) -> GitRun {
    let mut argv: Vec<String> = vec!["git".into(), "-C".into(), dir.display().to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let output = tokio::process::Command::new("git")
        .arg("-c")
        .arg("core.hooksPath=/dev/null")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .await;
    match output {
        Ok(out) => {
            GitRun { argv, exit_code: out.status.code(), stdout: String::from_utf8_lossy(&out.stdout).into_owned() }
        }
        Err(_) => GitRun { argv, exit_code: None, stdout: String::new() },
    }
}

/// True for 40 lowercase hex characters.
pub fn is_sha(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// PR `pr`'s head in `repo`, with the `git rev-parse` run that found it (for evidence).
pub async fn pr_head(repo: &Path, pr: u64) -> (PrView, GitRun) {
    let reference = format!("refs/pull/{pr}/head^{{commit}}");
    let run = git(repo, &["rev-parse", "--verify", "--quiet", &reference]).await;
    let sha = run.stdout.trim().to_string();
    if run.exit_code == Some(0) && is_sha(&sha) { (PrView::Head(sha), run) } else { (PrView::NotVisible, run) }
}

/// The message of commit `sha` (the PR's description), at most [`MAX_DESCRIPTION_CHARS`].
pub async fn description(repo: &Path, sha: &str) -> String {
    let run = git(repo, &["log", "-1", "--format=%B", sha]).await;
    run.stdout.trim().chars().take(MAX_DESCRIPTION_CHARS).collect()
}

/// A working tree of a repository at one commit, in a private temporary directory: a local
/// clone (`git clone --local --no-checkout`, objects hard-linked or copied, so commits that only
/// `refs/pull/N/head` reaches are there too) with the commit checked out detached. It has a
/// `.git` directory of its own, so the job's git tools can read its history; the configured
/// repository is never changed. Removed with its directory when dropped.
#[derive(Debug)]
pub struct Worktree {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Worktree {
    /// Clones `repo` into a new temporary directory and checks out `sha` detached. Errors: the
    /// failing git run (its exit code), or a `mktemp` run without an exit code when the
    /// directory cannot be made.
    pub async fn create(repo: &Path, sha: &str) -> Result<(Worktree, GitRun), GitRun> {
        let dir = tempfile::Builder::new().prefix("steward-hub-").tempdir().map_err(|_| GitRun {
            argv: vec!["mktemp".into()],
            exit_code: None,
            stdout: String::new(),
        })?;
        let path = dir.path().join("ws");
        let path_text = path.display().to_string();
        let clone = git(repo, &["clone", "--quiet", "--local", "--no-checkout", ".", &path_text]).await;
        if clone.exit_code != Some(0) {
            return Err(clone);
        }
        let checkout = git(&path, &["checkout", "--quiet", "--detach", sha]).await;
        if checkout.exit_code != Some(0) {
            return Err(checkout);
        }
        Ok((Worktree { path, _dir: dir }, checkout))
    }

    /// The working tree's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
