use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use steward_policy::{Access, Exclusion, PathError, Workspace};

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn rule(result: Result<steward_policy::WorkspacePath, PathError>) -> &'static str {
    match result {
        Ok(_) => "allow",
        Err(e) => e.rule(),
    }
}

/// B09 workspace: the case's files, with `.agentignore` spelled `.stewardignore`.
fn b09_workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "sub/app.py", "print('hi')\n");
    write(root, "sub/.env.local", "API_KEY=PLACEHOLDER_NOT_A_REAL_KEY\n");
    write(
        root,
        "keys/id_ed25519",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nPLACEHOLDER\n-----END OPENSSH PRIVATE KEY-----\n",
    );
    write(root, ".gitignore", ".env.prod\n");
    write(root, ".env.prod", "DB_PASSWORD=PLACEHOLDER\n");
    write(root, ".stewardignore", "/sub/.env.local\n");
    let ws = Workspace::open(root, &[]).unwrap();
    (dir, ws)
}

#[test]
fn b09_read_checks() {
    let (_dir, ws) = b09_workspace();
    let abs = format!("{}/sub/.env.local", ws.root().display());
    let table = [
        ("sub/.env.local", "secret_path"),
        ("./sub/../sub/.env.local", "secret_path"),
        (abs.as_str(), "secret_path"),
        ("SUB/.ENV.LOCAL", "secret_path"),
        (".env.prod", "secret_path"),
        ("keys/id_ed25519", "secret_path"),
        ("sub/app.py", "allow"),
    ];
    for (input, expected) in table {
        assert_eq!(rule(ws.resolve(input, Access::Read)), expected, "read {input}");
        assert_eq!(rule(ws.resolve(input, Access::Write)), expected, "write {input}");
    }
}

fn walk_rel(ws: &Workspace, dir: &str) -> Vec<String> {
    let start = ws.resolve(dir, Access::Read).unwrap();
    let mut out: Vec<String> = ws
        .walk(&start)
        .map(|e| e.unwrap())
        .filter(|e| e.depth() > 0)
        .map(|e| e.path().strip_prefix(ws.root()).unwrap().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn b09_directory_expansion_omits_secret() {
    let (_dir, ws) = b09_workspace();
    assert_eq!(walk_rel(&ws, "sub/"), ["sub/app.py"]);
}

#[test]
fn b09_search_never_sees_secret_content() {
    let (_dir, ws) = b09_workspace();
    let start = ws.resolve("sub", Access::Read).unwrap();
    let mut hits = Vec::new();
    for entry in ws.walk(&start) {
        let entry = entry.unwrap();
        if entry.file_type().is_some_and(|t| t.is_file())
            && fs::read_to_string(entry.path()).unwrap().contains("API_KEY")
        {
            hits.push(entry.path().to_path_buf());
        }
    }
    assert!(hits.is_empty(), "{hits:?}");
}

#[test]
fn b09_whole_workspace_walk_hides_secret_ignored_and_git() {
    let (dir, ws) = b09_workspace();
    write(dir.path(), ".git/config", "[core]\n");
    write(dir.path(), "notes/todo.txt", "x");
    assert_eq!(
        walk_rel(&ws, "."),
        [".gitignore", ".stewardignore", "keys", "notes", "notes/todo.txt", "sub", "sub/app.py"]
    );
}

#[test]
fn stewardignore_and_nested_gitignore_refuse_non_secret_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".stewardignore", "private/\n");
    write(root, "private/plan.md", "x");
    write(root, "app/.gitignore", "*.log\n!keep.log\n");
    write(root, "app/run.log", "x");
    write(root, "app/keep.log", "x");
    write(root, "app/deep/other.log", "x");
    write(root, "app/main.rs", "x");
    write(root, "build/.gitignore", "");
    write(root, ".gitignore", "/build\n");
    write(root, "build/out.bin", "x");
    let ws = Workspace::open(root, &[]).unwrap();
    let table = [
        ("private/plan.md", "ignored_path"),
        ("private", "ignored_path"),
        ("PRIVATE/plan.md", "ignored_path"),
        ("app/run.log", "ignored_path"),
        ("app/deep/other.log", "ignored_path"),
        ("app/new.log", "ignored_path"),
        ("app/keep.log", "allow"),
        ("app/main.rs", "allow"),
        ("build/out.bin", "ignored_path"),
        ("app", "allow"),
        ("", "invalid_path"),
        ("a\0b", "invalid_path"),
        (".", "allow"),
    ];
    for (input, expected) in table {
        assert_eq!(rule(ws.resolve(input, Access::Read)), expected, "{input}");
    }
    assert_eq!(ws.exclusion(Path::new("app/run.log"), false), Some(Exclusion::Ignored));
    assert_eq!(ws.exclusion(Path::new("app/keep.log"), false), None);
    assert_eq!(ws.exclusion(Path::new(".git"), true), Some(Exclusion::Secret));
    assert_eq!(walk_rel(&ws, "app"), ["app/.gitignore", "app/deep", "app/keep.log", "app/main.rs"]);
}

#[test]
fn deny_path_globs_refuse_and_hide() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "secrets/a.txt", "x");
    write(root, "data/db.sqlite", "x");
    write(root, "src/lib.rs", "x");
    let ws = Workspace::open(root, &["secrets/".to_string(), "**/*.sqlite".to_string()]).unwrap();
    let table = [
        ("secrets/a.txt", "deny_path"),
        ("secrets", "deny_path"),
        ("data/db.sqlite", "deny_path"),
        ("data/new.SQLITE", "deny_path"),
        ("src/lib.rs", "allow"),
    ];
    for (input, expected) in table {
        assert_eq!(rule(ws.resolve(input, Access::Write)), expected, "{input}");
    }
    assert_eq!(ws.exclusion(Path::new("data/db.sqlite"), false), Some(Exclusion::Denied));
    assert_eq!(walk_rel(&ws, "."), ["data", "src", "src/lib.rs"]);
}

#[test]
fn bad_deny_glob_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let err = Workspace::open(dir.path(), &["a[".to_string()]).unwrap_err();
    assert_eq!(err.rule(), "invalid_path");
    assert!(err.to_string().contains("a["), "{err}");
}

/// The B10 layout under a temporary directory standing in for /tmp.
fn b10_layout() -> (tempfile::TempDir, PathBuf, Workspace) {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for d in ["ws", "outside", "ws_evil"] {
        fs::create_dir_all(t.join(d)).unwrap();
    }
    fs::write(t.join("outside/secret.txt"), "TOP").unwrap();
    fs::write(t.join("ws_evil/x.txt"), "SIBLING").unwrap();
    symlink(t.join("outside/secret.txt"), t.join("ws/leak")).unwrap();
    symlink(t.join("outside"), t.join("ws/dirlink")).unwrap();
    symlink(t.join("outside/new.txt"), t.join("ws/dangling")).unwrap();
    fs::create_dir_all(t.join("ws/src")).unwrap();
    fs::write(t.join("ws/src/real.txt"), "ok").unwrap();
    symlink("src/real.txt", t.join("ws/inner_link")).unwrap();
    let ws = Workspace::open(&t.join("ws"), &[]).unwrap();
    let base = t.canonicalize().unwrap();
    (tmp, base, ws)
}

#[test]
fn b10_symlink_and_sibling_containment() {
    let (_tmp, base, ws) = b10_layout();
    let evil_abs = format!("{}/ws_evil/x.txt", base.display());
    let table = [
        ("leak", Access::Read, "workspace_boundary"),
        ("dirlink/secret.txt", Access::Read, "workspace_boundary"),
        ("leak", Access::Write, "workspace_boundary"),
        ("dangling", Access::Write, "workspace_boundary"),
        ("dangling", Access::Read, "workspace_boundary"),
        ("dirlink/newdir/f.txt", Access::Write, "workspace_boundary"),
        (evil_abs.as_str(), Access::Read, "workspace_boundary"),
        ("../ws_evil/x.txt", Access::Read, "workspace_boundary"),
        ("src/../../ws_evil/x.txt", Access::Read, "workspace_boundary"),
        ("/etc/passwd", Access::Read, "workspace_boundary"),
        ("inner_link", Access::Read, "allow"),
        ("inner_link", Access::Write, "workspace_boundary"),
        ("src/real.txt", Access::Write, "allow"),
        ("src/new/deeper.txt", Access::Write, "allow"),
        ("../ws/src/real.txt", Access::Read, "allow"),
    ];
    for (input, access, expected) in table {
        assert_eq!(rule(ws.resolve(input, access)), expected, "{input} {access:?}");
    }
    // Nothing was written or created outside.
    assert_eq!(fs::read_to_string(base.join("outside/secret.txt")).unwrap(), "TOP");
    assert!(!base.join("outside/new.txt").exists());
    assert!(!base.join("outside/newdir").exists());
}

#[test]
fn b10_inner_link_resolves_to_real_path() {
    let (_tmp, _base, ws) = b10_layout();
    let p = ws.resolve("inner_link", Access::Read).unwrap();
    assert_eq!(p.rel, "src/real.txt");
    assert_eq!(p.abs, ws.root().join("src/real.txt"));
    let root = ws.resolve(".", Access::Read).unwrap();
    assert_eq!(root.rel, "");
    assert_eq!(root.abs, ws.root());
}

#[test]
fn link_to_secret_and_link_named_secret_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".env", "K=v");
    write(root, "readme.md", "x");
    symlink(".env", root.join("notes")).unwrap();
    symlink("readme.md", root.join("id_rsa")).unwrap();
    let ws = Workspace::open(root, &[]).unwrap();
    assert_eq!(rule(ws.resolve("notes", Access::Read)), "secret_path");
    assert_eq!(rule(ws.resolve("id_rsa", Access::Read)), "secret_path");
}

#[test]
fn root_is_canonical() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir_all(tmp.path().join("real")).unwrap();
    symlink(tmp.path().join("real"), tmp.path().join("alias")).unwrap();
    let ws = Workspace::open(&tmp.path().join("alias"), &[]).unwrap();
    assert_eq!(ws.root(), tmp.path().canonicalize().unwrap().join("real"));
    let missing = Workspace::open(&tmp.path().join("nope"), &[]).unwrap_err();
    assert_eq!(missing.rule(), "io");
}

/// A repository can point an ignore file at a device or a huge file; a walk must neither read
/// it (an endless read) nor enter the folder that holds it, and a path check must not read it.
#[test]
fn an_ignore_file_that_is_a_link_or_a_device_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root, "README.md", "hi\n");
    write(&root, "docs/guide.md", "guide\n");
    write(&root, "src/main.rs", "fn main() {}\n");
    symlink("/dev/zero", root.join("docs/.gitignore")).unwrap();
    symlink("/dev/urandom", root.join("src/.stewardignore")).unwrap();
    let ws = Workspace::open(&root, &[]).unwrap();
    let listed = walk_rel(&ws, ".");
    assert!(listed.contains(&"README.md".to_string()), "{listed:?}");
    assert!(!listed.iter().any(|p| p.starts_with("docs/") || p.starts_with("src/")), "{listed:?}");
    assert_eq!(rule(ws.resolve("docs/guide.md", Access::Read)), "allow");
    // At the root, nothing is walked.
    symlink("/dev/zero", root.join(".gitignore")).unwrap();
    let ws = Workspace::open(&root, &[]).unwrap();
    assert!(walk_rel(&ws, ".").is_empty(), "{:?}", walk_rel(&ws, "."));
}
