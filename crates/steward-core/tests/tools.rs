//! The built-in tools against real temporary workspaces: cases B09, B10, B16, B18, B19, the
//! writing tools, and the git tools in a fresh repository.

use crate::common;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use steward_tools::{ToolContext, ToolError, ToolOutput, ToolRegistry};

fn context(root: &Path) -> ToolContext {
    common::tool_context(root, "steward-tool-test-snapshots")
}

fn put(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

async fn call(ctx: &ToolContext, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
    let registry = ToolRegistry::builtin();
    registry.get(tool).unwrap_or_else(|| panic!("no tool {tool}")).run(&args, ctx).await
}

async fn preview(ctx: &ToolContext, tool: &str, args: Value) -> Result<Option<(String, String)>, ToolError> {
    ToolRegistry::builtin().get(tool).unwrap().preview(&args, ctx).await
}

fn refused_rule(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Ok(out) => panic!("expected a refusal, got {:?}", out.content),
        Err(err) => err.rule.unwrap_or_else(|| format!("(no rule) {}", err.message)),
    }
}

// ----- B09 ----------------------------------------------------------------------------------

fn b09_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    put(root, "sub/app.py", b"print('hi')\n");
    put(root, "sub/.env.local", b"API_KEY=PLACEHOLDER_NOT_A_REAL_KEY\n");
    put(
        root,
        "keys/id_ed25519",
        b"-----BEGIN OPENSSH PRIVATE KEY-----\nPLACEHOLDER\n-----END OPENSSH PRIVATE KEY-----\n",
    );
    put(root, ".gitignore", b".env.prod\n");
    put(root, ".env.prod", b"DB_PASSWORD=PLACEHOLDER\n");
    put(root, ".agentignore", b"/sub/.env.local\n");
    dir
}

#[tokio::test]
async fn b09_read_checks() {
    let dir = b09_workspace();
    let ctx = context(dir.path());
    let abs = format!("{}/sub/.env.local", ctx.workspace.root().display());
    for path in
        ["sub/.env.local", "./sub/../sub/.env.local", abs.as_str(), "SUB/.ENV.LOCAL", ".env.prod", "keys/id_ed25519"]
    {
        let result = call(&ctx, "read", json!({"path": path})).await;
        let err = result.expect_err(path);
        assert!(!err.message.contains("PLACEHOLDER"), "{path}: {}", err.message);
        assert_eq!(err.rule.as_deref(), Some("secret_path"), "{path}: {}", err.message);
    }
    let ok = call(&ctx, "read", json!({"path": "sub/app.py"})).await.unwrap();
    assert_eq!(ok.content, "print('hi')\n");
}

#[tokio::test]
async fn b09_attach_directory_lists_only_app_py() {
    let dir = b09_workspace();
    let ctx = context(dir.path());
    let listed = call(&ctx, "list", json!({"path": "sub/"})).await.unwrap();
    assert_eq!(listed.content, "sub/app.py");
    let everything = call(&ctx, "list", json!({"recursive": true})).await.unwrap();
    assert_eq!(everything.content, ".agentignore\n.gitignore\nkeys/\nsub/\nsub/app.py");
    let top = call(&ctx, "list", json!({"path": null})).await.unwrap();
    assert_eq!(top.content, ".agentignore\n.gitignore\nkeys/\nsub/");
}

#[tokio::test]
async fn b09_grep_reports_no_match_from_secret_files() {
    let dir = b09_workspace();
    let ctx = context(dir.path());
    let found = call(&ctx, "search", json!({"query": "API_KEY", "path": "sub"})).await.unwrap();
    assert_eq!(found.content, "no matches for `API_KEY`");
    let everywhere = call(&ctx, "search", json!({"query": "placeholder"})).await.unwrap();
    assert_eq!(everywhere.content, "no matches for `placeholder`");
    let hit = call(&ctx, "search", json!({"query": "print\\(", "regex": true})).await.unwrap();
    assert_eq!(hit.content, "sub/app.py:1: print('hi')");
    let denied = call(&ctx, "search", json!({"query": "x", "path": "sub/.env.local"})).await;
    assert_eq!(refused_rule(denied), "secret_path");
}

// ----- B10 ----------------------------------------------------------------------------------

struct B10 {
    _base: tempfile::TempDir,
    ws: std::path::PathBuf,
    outside: std::path::PathBuf,
    evil: std::path::PathBuf,
}

fn b10_setup() -> B10 {
    let base = tempfile::tempdir().unwrap();
    let ws = base.path().join("ws");
    let outside = base.path().join("outside");
    let evil = base.path().join("ws_evil");
    for d in [&ws, &outside, &evil] {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(outside.join("secret.txt"), "TOP").unwrap();
    fs::write(evil.join("x.txt"), "SIBLING").unwrap();
    symlink(outside.join("secret.txt"), ws.join("leak")).unwrap();
    symlink(&outside, ws.join("dirlink")).unwrap();
    symlink(outside.join("new.txt"), ws.join("dangling")).unwrap();
    put(&ws, "src/real.txt", b"ok");
    symlink("src/real.txt", ws.join("inner_link")).unwrap();
    B10 { _base: base, ws, outside, evil }
}

#[tokio::test]
async fn b10_reads_outside_are_denied_inside_link_allowed() {
    let b = b10_setup();
    let ctx = context(&b.ws);
    let evil_abs = b.evil.join("x.txt").display().to_string();
    for path in ["leak", "dirlink/secret.txt", evil_abs.as_str(), "../ws_evil/x.txt"] {
        let result = call(&ctx, "read", json!({"path": path})).await;
        let err = result.expect_err(path);
        assert_eq!(err.rule.as_deref(), Some("workspace_boundary"), "{path}: {}", err.message);
        assert!(!err.message.contains("TOP") && !err.message.contains("SIBLING"));
    }
    let inner = call(&ctx, "read", json!({"path": "inner_link"})).await.unwrap();
    assert_eq!(inner.content, "ok");
}

#[tokio::test]
async fn b10_writes_through_links_are_denied() {
    let b = b10_setup();
    let ctx = context(&b.ws);
    let leak = call(&ctx, "create", json!({"path": "leak", "content": "X"})).await;
    assert!(leak.is_err());
    let patch = call(&ctx, "edit", json!({"path": "leak", "old": "TOP", "new": "X"})).await;
    assert_eq!(refused_rule(patch), "workspace_boundary");
    assert!(preview(&ctx, "edit", json!({"path": "leak", "old": "TOP", "new": "X"})).await.is_err());
    assert_eq!(fs::read_to_string(b.outside.join("secret.txt")).unwrap(), "TOP");

    let dangling = call(&ctx, "create", json!({"path": "dangling", "content": "X"})).await;
    assert!(dangling.is_err());
    assert!(!b.outside.join("new.txt").exists());

    let nested = call(&ctx, "create", json!({"path": "dirlink/newdir/f.txt", "content": "X"})).await;
    assert_eq!(refused_rule(nested), "workspace_boundary");
    assert!(!b.outside.join("newdir").exists());

    let delete = call(&ctx, "delete", json!({"path": "leak"})).await;
    assert!(delete.is_err());
    assert!(fs::symlink_metadata(b.ws.join("leak")).is_ok());
    let moved = call(&ctx, "move", json!({"from": "src/real.txt", "to": "dirlink/stolen.txt"})).await;
    assert_eq!(refused_rule(moved), "workspace_boundary");
    assert!(!b.outside.join("stolen.txt").exists());
}

// ----- B16 ----------------------------------------------------------------------------------

#[tokio::test]
async fn b16_lf_edit_on_crlf_file_keeps_crlf() {
    let dir = tempfile::tempdir().unwrap();
    let before = "int main() {\r\n\tint x = 1;\r\n\tif (x) {\r\n\t\treturn 1;\r\n\t}\r\n\treturn 0;\r\n}\r\n";
    put(dir.path(), "main.c", before.as_bytes());
    let ctx = context(dir.path());
    let args =
        json!({"path": "main.c", "old": "\tif (x) {\n\t\treturn 1;\n\t}", "new": "\tif (x > 0) {\n\t\treturn 2;\n\t}"});
    let out = call(&ctx, "edit", args).await.unwrap();
    let expected = "int main() {\r\n\tint x = 1;\r\n\tif (x > 0) {\r\n\t\treturn 2;\r\n\t}\r\n\treturn 0;\r\n}\r\n";
    assert_eq!(fs::read(dir.path().join("main.c")).unwrap(), expected.as_bytes());
    let (path, diff) = out.changes[0].clone();
    assert_eq!(path, "main.c");
    assert!(diff.contains("+\tif (x > 0) {"), "{diff}");
}

#[tokio::test]
async fn b16_variant_crlf_edit_on_lf_file_keeps_lf() {
    let dir = tempfile::tempdir().unwrap();
    let before = "int main() {\n\tint x = 1;\n\tif (x) {\n\t\treturn 1;\n\t}\n\treturn 0;\n}\n";
    put(dir.path(), "main.c", before.as_bytes());
    let ctx = context(dir.path());
    let args = json!({"path": "main.c", "old": "\tif (x) {\r\n\t\treturn 1;\r\n\t}", "new": "\tif (x > 0) {\r\n\t\treturn 2;\r\n\t}"});
    call(&ctx, "edit", args).await.unwrap();
    let expected = "int main() {\n\tint x = 1;\n\tif (x > 0) {\n\t\treturn 2;\n\t}\n\treturn 0;\n}\n";
    assert_eq!(fs::read(dir.path().join("main.c")).unwrap(), expected.as_bytes());
}

#[tokio::test]
async fn b16_ambiguous_after_normalisation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let before = "a\r\nb\r\na\nb\n";
    put(dir.path(), "f.txt", before.as_bytes());
    let ctx = context(dir.path());
    let result = call(&ctx, "edit", json!({"path": "f.txt", "old": "a\nb", "new": "c"})).await;
    let err = result.unwrap_err();
    assert_eq!(err.rule.as_deref(), Some("ambiguous"));
    assert!(err.message.contains("2 times"), "{}", err.message);
    assert_eq!(fs::read(dir.path().join("f.txt")).unwrap(), before.as_bytes());
    let missing = call(&ctx, "edit", json!({"path": "f.txt", "old": "zzz", "new": "c"})).await;
    assert_eq!(refused_rule(missing), "edit_not_found");
}

// ----- B18 ----------------------------------------------------------------------------------

#[tokio::test]
async fn b18_latin1_bytes_survive_an_ascii_edit() {
    let dir = tempfile::tempdir().unwrap();
    let before =
        hex::decode("636f6e73742078203d20313b0a2f2f20636166e9206175206c6169740a636f6e73742079203d20323b0a").unwrap();
    put(dir.path(), "legacy.js", &before);
    let ctx = context(dir.path());
    call(&ctx, "edit", json!({"path": "legacy.js", "old": "const x = 1;", "new": "const x = 3;"})).await.unwrap();
    let after = fs::read(dir.path().join("legacy.js")).unwrap();
    assert_eq!(
        hex::encode(&after),
        "636f6e73742078203d20333b0a2f2f20636166e9206175206c6169740a636f6e73742079203d20323b0a"
    );
    assert_eq!(after, b"const x = 3;\n// caf\xe9 au lait\nconst y = 2;\n");

    let read = call(&ctx, "read", json!({"path": "legacy.js"})).await.unwrap_err();
    assert_eq!(read.message, "`legacy.js` is not valid UTF-8 (byte 0xE9 at offset 19); it is not read as text");
}

#[tokio::test]
async fn b18_variant_bom_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let before = hex::decode("efbbbf636f6e7374206e203d20313b202f2f20c3a974c3a90a").unwrap();
    put(dir.path(), "bom.js", &before);
    let ctx = context(dir.path());
    call(&ctx, "edit", json!({"path": "bom.js", "old": "const n = 1;", "new": "const n = 2;"})).await.unwrap();
    let after = fs::read(dir.path().join("bom.js")).unwrap();
    assert_eq!(hex::encode(&after), "efbbbf636f6e7374206e203d20323b202f2f20c3a974c3a90a");
    assert_eq!(after, b"\xef\xbb\xbfconst n = 2; // \xc3\xa9t\xc3\xa9\n");
    let read = call(&ctx, "read", json!({"path": "bom.js"})).await.unwrap();
    assert_eq!(read.content, "const n = 2; // été\n");
}

// ----- B19 ----------------------------------------------------------------------------------

#[tokio::test]
async fn b19_edit_reapplies_against_the_concurrent_version() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "NOTES.md", b"# Notes\n- alpha\n");
    let ctx = context(dir.path());
    let args = json!({"path": "NOTES.md", "old": "- alpha\n", "new": "- ALPHA\n"});
    // The model (and the approval prompt) saw v1 …
    let (_, diff) = preview(&ctx, "edit", args.clone()).await.unwrap().unwrap();
    assert!(diff.contains("+- ALPHA"));
    // … then another agent made v2 before the edit ran.
    let v2 = "# Notes\n- alpha\n- beta (added by another agent)\n";
    fs::write(dir.path().join("NOTES.md"), v2).unwrap();
    call(&ctx, "edit", args).await.unwrap();
    assert_eq!(
        fs::read_to_string(dir.path().join("NOTES.md")).unwrap(),
        "# Notes\n- ALPHA\n- beta (added by another agent)\n"
    );
}

#[tokio::test]
async fn b19_full_write_based_on_stale_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let v2 = "# Notes\n- alpha\n- beta (added by another agent)\n";
    put(dir.path(), "NOTES.md", v2.as_bytes());
    let ctx = context(dir.path());
    let result = call(&ctx, "create", json!({"path": "NOTES.md", "content": "# Notes\n- alpha\n- gamma\n"})).await;
    assert_eq!(refused_rule(result), "file_exists");
    assert_eq!(fs::read_to_string(dir.path().join("NOTES.md")).unwrap(), v2);
    // A targeted edit whose text is gone is refused readably and changes nothing.
    let gone =
        call(&ctx, "edit", json!({"path": "NOTES.md", "old": "- gamma\n", "new": "- delta\n"})).await.unwrap_err();
    assert!(gone.message.contains("read the file again"), "{}", gone.message);
    assert_eq!(fs::read_to_string(dir.path().join("NOTES.md")).unwrap(), v2);
}

// ----- create / edit / delete / move ---------------------------------------------------------

#[tokio::test]
async fn create_makes_parents_and_refuses_existing() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let (path, diff) =
        preview(&ctx, "create", json!({"path": "a/b/c.txt", "content": "hello\n"})).await.unwrap().unwrap();
    assert_eq!(path, "a/b/c.txt");
    assert!(diff.contains("+hello"));
    assert!(!dir.path().join("a").exists(), "preview must not write");
    let out = call(&ctx, "create", json!({"path": "a/b/c.txt", "content": "hello\n"})).await.unwrap();
    assert_eq!(fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(), "hello\n");
    assert_eq!(out.changes[0].0, "a/b/c.txt");
    let again = call(&ctx, "create", json!({"path": "a/b/c.txt", "content": "other"})).await;
    assert_eq!(refused_rule(again), "file_exists");
    assert_eq!(fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(), "hello\n");
    let secret = call(&ctx, "create", json!({"path": "conf/.env", "content": "K=V"})).await;
    assert_eq!(refused_rule(secret), "secret_path");
    let extra = call(&ctx, "create", json!({"path": "x.txt"})).await;
    assert_eq!(refused_rule(extra), "invalid_arguments");
}

#[tokio::test]
async fn edit_keeps_permissions_and_preview_does_not_write() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "run.sh", b"#!/bin/sh\necho one\n");
    fs::set_permissions(dir.path().join("run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    let ctx = context(dir.path());
    let args = json!({"path": "run.sh", "old": "echo one", "new": "echo two"});
    let (_, diff) = preview(&ctx, "edit", args.clone()).await.unwrap().unwrap();
    assert!(diff.contains("-echo one\n+echo two"), "{diff}");
    assert_eq!(fs::read_to_string(dir.path().join("run.sh")).unwrap(), "#!/bin/sh\necho one\n");
    call(&ctx, "edit", args).await.unwrap();
    assert_eq!(fs::read_to_string(dir.path().join("run.sh")).unwrap(), "#!/bin/sh\necho two\n");
    assert_eq!(fs::metadata(dir.path().join("run.sh")).unwrap().permissions().mode() & 0o777, 0o750);
    let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "temporary file left behind: {leftovers:?}");
}

#[tokio::test]
async fn delete_removes_files_only() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "d/f.txt", b"bye\n");
    let ctx = context(dir.path());
    let folder = call(&ctx, "delete", json!({"path": "d"})).await;
    assert_eq!(refused_rule(folder), "not_regular_file");
    let out = call(&ctx, "delete", json!({"path": "d/f.txt"})).await.unwrap();
    assert!(!dir.path().join("d/f.txt").exists());
    let (path, diff) = out.changes[0].clone();
    assert_eq!(path, "d/f.txt");
    assert!(diff.contains("-bye"));
    assert!(call(&ctx, "delete", json!({"path": "d/f.txt"})).await.is_err());
}

#[tokio::test]
async fn move_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "a.txt", b"A");
    put(dir.path(), "b.txt", b"B");
    let ctx = context(dir.path());
    let clobber = call(&ctx, "move", json!({"from": "a.txt", "to": "b.txt"})).await;
    assert_eq!(refused_rule(clobber), "file_exists");
    assert_eq!(fs::read_to_string(dir.path().join("b.txt")).unwrap(), "B");
    let out = call(&ctx, "move", json!({"from": "a.txt", "to": "new/dir/a.txt"})).await.unwrap();
    assert!(!dir.path().join("a.txt").exists());
    assert_eq!(fs::read_to_string(dir.path().join("new/dir/a.txt")).unwrap(), "A");
    assert_eq!(out.changes[0].0, "new/dir/a.txt");
    let to_secret = call(&ctx, "move", json!({"from": "b.txt", "to": ".env"})).await;
    assert_eq!(refused_rule(to_secret), "secret_path");
}

#[tokio::test]
async fn read_ranges_and_binary_refusal() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "lines.txt", b"one\ntwo\nthree\nfour\n");
    put(dir.path(), "blob.bin", b"ab\0cd");
    let ctx = context(dir.path());
    let part = call(&ctx, "read", json!({"path": "lines.txt", "start_line": 2, "max_lines": 2})).await.unwrap();
    assert_eq!(part.content, "two\nthree\n");
    let past = call(&ctx, "read", json!({"path": "lines.txt", "start_line": 9})).await;
    assert!(past.is_err());
    let binary = call(&ctx, "read", json!({"path": "blob.bin"})).await;
    assert_eq!(refused_rule(binary), "binary_file");
    let folder = call(&ctx, "read", json!({"path": "."})).await;
    assert_eq!(refused_rule(folder), "not_regular_file");
}

#[tokio::test]
async fn search_caps_matches_and_skips_binary() {
    let dir = tempfile::tempdir().unwrap();
    let many: String = (0..250).map(|i| format!("needle {i}\n")).collect();
    put(dir.path(), "many.txt", many.as_bytes());
    put(dir.path(), "blob.bin", b"needle\0");
    let ctx = context(dir.path());
    let out = call(&ctx, "search", json!({"query": "NEEDLE"})).await.unwrap();
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(lines[0], "many.txt:1: needle 0");
    assert_eq!(lines.iter().filter(|l| l.starts_with("many.txt:")).count(), 200);
    assert!(out.content.contains("more were cut"));
    let exact = call(&ctx, "search", json!({"query": "NEEDLE", "case_sensitive": true})).await.unwrap();
    assert!(exact.content.starts_with("no matches"), "{}", exact.content);
    let bad = call(&ctx, "search", json!({"query": "(", "regex": true})).await;
    assert_eq!(refused_rule(bad), "invalid_arguments");
}

// ----- git ----------------------------------------------------------------------------------

fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_WORK_TREE")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn git_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    put(root, "app.py", b"print('v1')\n");
    put(root, ".env", b"TOKEN=COMMITTED_SECRET_V1\n");
    git(root, &["add", "-f", "app.py", ".env"]);
    git(root, &["commit", "-q", "-m", "first commit"]);
    put(root, "app.py", b"print('v2')\n");
    put(root, ".env", b"TOKEN=CHANGED_SECRET_V2\n");
    git(root, &["add", "-f", "app.py", ".env"]);
    git(root, &["commit", "-q", "-m", "second commit"]);
    put(root, "app.py", b"print('v3')\n");
    put(root, ".env", b"TOKEN=WORKTREE_SECRET_V3\n");
    dir
}

#[tokio::test]
async fn git_tools_in_a_fresh_repository() {
    let dir = git_repo();
    let ctx = context(dir.path());
    let status = call(&ctx, "git_status", json!({})).await.unwrap();
    assert!(status.content.contains("## main"), "{}", status.content);
    assert!(status.content.contains(" M app.py"), "{}", status.content);
    assert!(!status.sandbox.is_empty());

    let diff = call(&ctx, "git_diff", json!({})).await.unwrap();
    assert!(diff.content.contains("+print('v3')"), "{}", diff.content);
    assert!(!diff.content.contains("SECRET"), "{}", diff.content);
    let staged = call(&ctx, "git_diff", json!({"staged": true, "path": ""})).await.unwrap();
    assert_eq!(staged.content, "no changes");
    let one = call(&ctx, "git_diff", json!({"path": "app.py"})).await.unwrap();
    assert!(one.content.contains("+print('v3')"));
    let secret = call(&ctx, "git_diff", json!({"path": ".env"})).await;
    assert_eq!(refused_rule(secret), "secret_path");

    let log = call(&ctx, "git_log", json!({"max_count": 1})).await.unwrap();
    assert_eq!(log.content.lines().count(), 1);
    assert!(log.content.contains("Test: second commit"), "{}", log.content);

    let show = call(&ctx, "git_show", json!({"rev": "HEAD"})).await.unwrap();
    assert!(show.content.contains("second commit"));
    assert!(show.content.contains("+print('v2')"), "{}", show.content);
    assert!(!show.content.contains("SECRET"), "{}", show.content);
    let first = call(&ctx, "git_show", json!({"rev": "HEAD~1"})).await.unwrap();
    assert!(first.content.contains("+print('v1')") && !first.content.contains("SECRET"), "{}", first.content);
}

#[tokio::test]
async fn git_show_and_log_print_no_notes() {
    // A note can hold any blob, e.g. an old version of a secret file: the git tools never
    // print notes.
    let dir = git_repo();
    let blob = git(dir.path(), &["rev-parse", "HEAD~1:.env"]);
    git(dir.path(), &["notes", "add", "-C", blob.trim(), "HEAD"]);
    assert!(git(dir.path(), &["show", "HEAD"]).contains("COMMITTED_SECRET_V1"), "the note is shown by plain git show");
    let ctx = context(dir.path());
    let show = call(&ctx, "git_show", json!({"rev": "HEAD"})).await.unwrap();
    assert!(show.content.contains("second commit"), "{}", show.content);
    assert!(!show.content.contains("SECRET") && !show.content.contains("Notes:"), "{}", show.content);
    let log = call(&ctx, "git_log", json!({})).await.unwrap();
    assert!(!log.content.contains("SECRET") && !log.content.contains("Notes:"), "{}", log.content);
}

#[tokio::test]
async fn git_show_refuses_option_injection_and_non_commits() {
    let dir = git_repo();
    let ctx = context(dir.path());
    let outside = tempfile::tempdir().unwrap();
    let pwned = outside.path().join("steward-pwned");
    let output = format!("--output={}", pwned.display());
    for rev in [output.as_str(), "-p", "--all", "HEAD:.env", "HEAD;id", "$(id)", ""] {
        let result = call(&ctx, "git_show", json!({"rev": rev})).await;
        assert_eq!(refused_rule(result), "invalid_arguments", "{rev}");
    }
    assert!(!pwned.exists());
    // A blob id would print file content (here a secret's): only commits are shown.
    let blob = git(dir.path(), &["rev-parse", "HEAD:.env"]);
    let result = call(&ctx, "git_show", json!({"rev": blob.trim()})).await.unwrap_err();
    assert!(result.message.contains("is not a commit"), "{}", result.message);
    assert!(!result.message.contains("SECRET"));
}

#[tokio::test]
async fn git_tools_outside_a_repository_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let err = call(&ctx, "git_status", json!({})).await.unwrap_err();
    assert!(err.message.contains("not a git repository"), "{}", err.message);
}

#[tokio::test]
async fn git_tools_refuse_a_gitdir_pointing_outside_and_repository_filters() {
    // A `.git` file redirecting to another repository.
    let outside = tempfile::tempdir().unwrap();
    git(outside.path(), &["init", "-q"]);
    put(outside.path(), "private.txt", b"OUTSIDE CONTENT\n");
    git(outside.path(), &["add", "-A"]);
    git(outside.path(), &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "x"]);
    let ws = tempfile::tempdir().unwrap();
    put(ws.path(), ".git", format!("gitdir: {}/.git\n", outside.path().display()).as_bytes());
    let ctx = context(ws.path());
    assert_eq!(refused_rule(call(&ctx, "git_show", json!({"rev": "HEAD"})).await), "workspace_boundary");

    // A repository-local clean filter would run a program on `git status`.
    let ws = tempfile::tempdir().unwrap();
    git(ws.path(), &["init", "-q"]);
    git(ws.path(), &["config", "filter.evil.clean", "touch PWNED; cat"]);
    put(ws.path(), ".gitattributes", b"* filter=evil\n");
    put(ws.path(), "a.txt", b"x\n");
    let ctx = context(ws.path());
    assert_eq!(refused_rule(call(&ctx, "git_status", json!({})).await), "repository_config");
    assert!(!ws.path().join("PWNED").exists());

    // The same filter behind an include (which the check does not follow) is refused too.
    let ws = tempfile::tempdir().unwrap();
    git(ws.path(), &["init", "-q"]);
    put(ws.path(), "extra.cfg", b"[filter \"evil\"]\n\tclean = touch PWNED; cat\n");
    git(ws.path(), &["config", "include.path", "../extra.cfg"]);
    put(ws.path(), ".gitattributes", b"* filter=evil\n");
    let ctx = context(ws.path());
    assert_eq!(refused_rule(call(&ctx, "git_status", json!({})).await), "repository_config");
    assert!(!ws.path().join("PWNED").exists());
}
