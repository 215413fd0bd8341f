//! `propose_patch` and `apply_patch` against real temporary workspaces: cases B15, B16, B18,
//! B19, multi-file atomicity, path refusals, the new-file allow-list and rollback.

use crate::common;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::{Value, json};
use steward_tools::{ToolContext, ToolError, ToolOutput, ToolRegistry};
use steward_tools::{rollback, rollback::Compensation, rollback::sha256_hex};

fn context(root: &Path) -> ToolContext {
    common::tool_context(root, "steward-patch-test-snapshots")
}

fn put(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

fn get(root: &Path, rel: &str) -> Vec<u8> {
    fs::read(root.join(rel)).unwrap()
}

async fn call(ctx: &ToolContext, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
    ToolRegistry::builtin().get(tool).unwrap_or_else(|| panic!("no tool {tool}")).run(&args, ctx).await
}

async fn preview(ctx: &ToolContext, tool: &str, args: Value) -> Result<Option<(String, String)>, ToolError> {
    ToolRegistry::builtin().get(tool).unwrap().preview(&args, ctx).await
}

async fn apply(ctx: &ToolContext, patch: &str) -> Result<ToolOutput, ToolError> {
    call(ctx, "apply_patch", json!({"patch": patch})).await
}

fn refusal(result: Result<ToolOutput, ToolError>) -> (String, String) {
    match result {
        Ok(out) => panic!("expected a refusal, got {}", out.content),
        Err(err) => (err.rule.unwrap_or_default(), err.message),
    }
}

/// Only the given names are in `dir` (no temporary or set-aside files left behind).
fn assert_listing(dir: &Path, names: &[&str]) {
    let mut found: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    found.sort();
    assert_eq!(found, names);
}

// ----- B15 ----------------------------------------------------------------------------------

const SHAPES: &str = "class Circle:\n    def area(self):\n        return 3.14 * self.r ** 2\n\nclass Square:\n    def area(self):\n        return self.s ** 2\n";
const PERIMETER: &str = "+    def perimeter(self):\n+        return 2 * 3.14 * self.r\n";

#[tokio::test]
async fn b15_zero_context_hunk_inserts_after_its_line() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "shapes.py", SHAPES.as_bytes());
    let ctx = context(dir.path());
    apply(&ctx, &format!("--- a/shapes.py\n+++ b/shapes.py\n@@ -3,0 +4,2 @@\n{PERIMETER}")).await.unwrap();
    assert_eq!(
        String::from_utf8(get(dir.path(), "shapes.py")).unwrap(),
        "class Circle:\n    def area(self):\n        return 3.14 * self.r ** 2\n    def perimeter(self):\n        return 2 * 3.14 * self.r\n\nclass Square:\n    def area(self):\n        return self.s ** 2\n"
    );
}

#[tokio::test]
async fn b15_anchor_hunk_inserts_directly_after_the_anchor() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "shapes.py", SHAPES.as_bytes());
    let ctx = context(dir.path());
    apply(&ctx, &format!("--- a/shapes.py\n+++ b/shapes.py\n@@ class Circle:\n{PERIMETER}")).await.unwrap();
    assert_eq!(
        String::from_utf8(get(dir.path(), "shapes.py")).unwrap(),
        "class Circle:\n    def perimeter(self):\n        return 2 * 3.14 * self.r\n    def area(self):\n        return 3.14 * self.r ** 2\n\nclass Square:\n    def area(self):\n        return self.s ** 2\n"
    );
}

#[tokio::test]
async fn b15_missing_anchor_is_refused_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "shapes.py", SHAPES.as_bytes());
    let ctx = context(dir.path());
    let patch = format!("--- a/shapes.py\n+++ b/shapes.py\n@@ class Triangle:\n{PERIMETER}");
    let err = preview(&ctx, "apply_patch", json!({"patch": patch})).await.unwrap_err();
    assert!(err.message.contains("anchor not found"), "{}", err.message);
    let (rule, message) = refusal(apply(&ctx, &patch).await);
    assert_eq!(rule, "anchor_not_found");
    assert!(message.contains("anchor not found") && message.contains("shapes.py"), "{message}");
    assert_eq!(get(dir.path(), "shapes.py"), SHAPES.as_bytes());
    // An anchor on two lines is ambiguous, never guessed.
    let patch = format!("--- a/shapes.py\n+++ b/shapes.py\n@@ def area(self):\n{PERIMETER}");
    assert_eq!(refusal(apply(&ctx, &patch).await).0, "ambiguous");
    assert_eq!(get(dir.path(), "shapes.py"), SHAPES.as_bytes());
}

// ----- B16 ----------------------------------------------------------------------------------

const B16_HUNK: &str = "@@ -3,3 +3,3 @@\n-\tif (x) {\n-\t\treturn 1;\n+\tif (x > 0) {\n+\t\treturn 2;\n \t}\n";

#[tokio::test]
async fn b16_lf_patch_on_crlf_file_keeps_crlf() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "main.c",
        b"int main() {\r\n\tint x = 1;\r\n\tif (x) {\r\n\t\treturn 1;\r\n\t}\r\n\treturn 0;\r\n}\r\n",
    );
    let ctx = context(dir.path());
    apply(&ctx, &format!("--- a/main.c\n+++ b/main.c\n{B16_HUNK}")).await.unwrap();
    assert_eq!(
        get(dir.path(), "main.c"),
        b"int main() {\r\n\tint x = 1;\r\n\tif (x > 0) {\r\n\t\treturn 2;\r\n\t}\r\n\treturn 0;\r\n}\r\n"
    );
}

#[tokio::test]
async fn b16_variant_crlf_patch_on_lf_file_keeps_lf() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "main.c", b"int main() {\n\tint x = 1;\n\tif (x) {\n\t\treturn 1;\n\t}\n\treturn 0;\n}\n");
    let ctx = context(dir.path());
    let patch = format!("--- a/main.c\n+++ b/main.c\n{B16_HUNK}").replace('\n', "\r\n");
    apply(&ctx, &patch).await.unwrap();
    assert_eq!(
        get(dir.path(), "main.c"),
        b"int main() {\n\tint x = 1;\n\tif (x > 0) {\n\t\treturn 2;\n\t}\n\treturn 0;\n}\n"
    );
}

#[tokio::test]
async fn b16_whole_file_change_with_lf_text_keeps_crlf() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "main.c", b"int main() {\r\n\tif (x) {\r\n\t}\r\n}\r\n");
    let ctx = context(dir.path());
    let change = json!({"path": "main.c", "before": "int main() {\n\tif (x) {\n\t}\n}\n", "after": "int main() {\n\tif (x > 0) {\n\t}\n}\n"});
    call(&ctx, "apply_patch", json!({"changes": [change]})).await.unwrap();
    assert_eq!(get(dir.path(), "main.c"), b"int main() {\r\n\tif (x > 0) {\r\n\t}\r\n}\r\n");
}

// ----- B18 ----------------------------------------------------------------------------------

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

#[tokio::test]
async fn b18_latin1_bytes_survive_a_hunk_and_whole_file_changes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let before = unhex("636f6e73742078203d20313b0a2f2f20636166e9206175206c6169740a636f6e73742079203d20323b0a");
    put(dir.path(), "legacy.js", &before);
    let ctx = context(dir.path());
    // The whole-file form cannot express the Latin-1 byte: refused, naming it, bytes untouched.
    let change = json!({"path": "legacy.js", "before": "const x = 1;\n// café au lait\nconst y = 2;\n", "after": "const x = 3;\n"});
    let (rule, message) = refusal(call(&ctx, "apply_patch", json!({"changes": [change]})).await);
    assert_eq!(rule, "not_utf8");
    assert!(message.contains("file is not valid UTF-8 (byte 0xE9 at offset 19)"), "{message}");
    assert_eq!(get(dir.path(), "legacy.js"), before);
    // A hunk applies byte-preservingly.
    apply(&ctx, "--- a/legacy.js\n+++ b/legacy.js\n@@ -1 +1 @@\n-const x = 1;\n+const x = 3;\n").await.unwrap();
    assert_eq!(
        get(dir.path(), "legacy.js"),
        unhex("636f6e73742078203d20333b0a2f2f20636166e9206175206c6169740a636f6e73742079203d20323b0a")
    );
}

#[tokio::test]
async fn b18_variant_bom_is_kept_in_both_forms() {
    let dir = tempfile::tempdir().unwrap();
    let before = unhex("efbbbf636f6e7374206e203d20313b202f2f20c3a974c3a90a");
    let expected = unhex("efbbbf636f6e7374206e203d20323b202f2f20c3a974c3a90a");
    put(dir.path(), "a.js", &before);
    put(dir.path(), "b.js", &before);
    let ctx = context(dir.path());
    apply(&ctx, "--- a/a.js\n+++ b/a.js\n@@ -1 +1 @@\n-const n = 1; // été\n+const n = 2; // été\n").await.unwrap();
    assert_eq!(get(dir.path(), "a.js"), expected);
    let change = json!({"path": "b.js", "before": "const n = 1; // été\n", "after": "const n = 2; // été\n"});
    call(&ctx, "apply_patch", json!({"changes": [change]})).await.unwrap();
    assert_eq!(get(dir.path(), "b.js"), expected);
}

// ----- B19 ----------------------------------------------------------------------------------

const V1: &str = "# Notes\n- alpha\n";
const V2: &str = "# Notes\n- alpha\n- beta (added by another agent)\n";

#[tokio::test]
async fn b19_stale_full_file_change_is_refused_with_a_diff() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "NOTES.md", V2.as_bytes());
    let ctx = context(dir.path());
    let change = json!({"path": "NOTES.md", "before": V1, "after": "# Notes\n- alpha\n- gamma\n"});
    let (rule, message) = refusal(call(&ctx, "apply_patch", json!({"changes": [change]})).await);
    assert_eq!(rule, "stale");
    assert!(message.contains("+- beta (added by another agent)"), "{message}");
    assert!(message.contains(&sha256_hex(V2.as_bytes())), "{message}");
    assert_eq!(get(dir.path(), "NOTES.md"), V2.as_bytes());
}

#[tokio::test]
async fn b19_targeted_hunk_applies_after_a_concurrent_change() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "NOTES.md", V2.as_bytes());
    let ctx = context(dir.path());
    apply(&ctx, "--- a/NOTES.md\n+++ b/NOTES.md\n@@ -1,2 +1,2 @@\n # Notes\n-- alpha\n+- ALPHA\n").await.unwrap();
    assert_eq!(get(dir.path(), "NOTES.md"), b"# Notes\n- ALPHA\n- beta (added by another agent)\n");
}

#[tokio::test]
async fn b19_stale_proposal_hash_is_refused_once_with_a_fresh_diff_and_hash() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "NOTES.md", V1.as_bytes());
    let ctx = context(dir.path());
    let patch = "--- a/NOTES.md\n+++ b/NOTES.md\n@@ -2 +2 @@\n-- alpha\n+- ALPHA\n";
    let proposal = call(&ctx, "propose_patch", json!({"patch": patch})).await.unwrap();
    let v1_hash = sha256_hex(V1.as_bytes());
    assert!(proposal.content.contains(&v1_hash), "{}", proposal.content);
    assert!(proposal.changes.is_empty() && proposal.compensation.is_none());
    assert_eq!(get(dir.path(), "NOTES.md"), V1.as_bytes(), "a proposal never writes");
    put(dir.path(), "NOTES.md", V2.as_bytes());
    let args = json!({"patch": patch, "expected_sha256": {"NOTES.md": v1_hash}});
    let (rule, message) = refusal(call(&ctx, "apply_patch", args).await);
    assert_eq!(rule, "stale");
    let v2_hash = sha256_hex(V2.as_bytes());
    assert!(message.contains(&v2_hash) && message.contains("+- ALPHA"), "{message}");
    assert_eq!(get(dir.path(), "NOTES.md"), V2.as_bytes());
    // The refusal carries what the model needs: the next attempt with the fresh hash applies.
    call(&ctx, "apply_patch", json!({"patch": patch, "expected_sha256": {"NOTES.md": v2_hash}})).await.unwrap();
    assert_eq!(get(dir.path(), "NOTES.md"), b"# Notes\n- ALPHA\n- beta (added by another agent)\n");
}

// ----- Atomicity ----------------------------------------------------------------------------

#[tokio::test]
async fn three_file_patch_failing_on_its_third_file_leaves_all_three_untouched() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.py", "b.py", "c.py"] {
        put(dir.path(), name, b"one\ntwo\nthree\n");
    }
    let ctx = context(dir.path());
    let patch = "--- a/a.py\n+++ b/a.py\n@@ -2 +2 @@\n-two\n+TWO\n\
                 --- a/b.py\n+++ b/b.py\n@@ -2 +2 @@\n-two\n+TWO\n\
                 --- a/c.py\n+++ b/c.py\n@@ -2 +2 @@\n-zwei\n+TWO\n";
    let (rule, message) = refusal(apply(&ctx, patch).await);
    assert_eq!(rule, "hunk_mismatch");
    assert!(message.contains("hunk 1 of `c.py`"), "{message}");
    for name in ["a.py", "b.py", "c.py"] {
        assert_eq!(get(dir.path(), name), b"one\ntwo\nthree\n", "{name}");
    }
    assert_listing(dir.path(), &["a.py", "b.py", "c.py"]);
    // The same patch with a good third hunk changes all three.
    apply(&ctx, &patch.replace("-zwei", "-two")).await.unwrap();
    for name in ["a.py", "b.py", "c.py"] {
        assert_eq!(get(dir.path(), name), b"one\nTWO\nthree\n", "{name}");
    }
    assert_listing(dir.path(), &["a.py", "b.py", "c.py"]);
}

// ----- Path refusals and the new-file allow-list --------------------------------------------

#[tokio::test]
async fn paths_in_a_patch_are_checked_one_by_one() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("ws");
    put(&root, "ok.py", b"x = 1\n");
    put(&root, ".env", b"TOKEN=PLACEHOLDER\n");
    put(&root, "target.py", b"x = 1\n");
    put(outer.path(), "outside.py", b"x = 1\n");
    symlink(root.join("target.py"), root.join("link.py")).unwrap();
    put(&root, "linked.py", b"x = 1\n");
    fs::hard_link(root.join("linked.py"), root.join("other_name.py")).unwrap();
    let ctx = context(&root);
    let hunk = "@@ -1 +1 @@\n-x = 1\n+x = 2\n";
    let good = format!("--- a/ok.py\n+++ b/ok.py\n{hunk}");
    for (path, expected) in [
        (".env", "secret_path"),
        ("../outside.py", "workspace_boundary"),
        ("link.py", "workspace_boundary"),
        ("linked.py", "hard_link"),
    ] {
        let patch = format!("{good}--- a/{path}\n+++ b/{path}\n{hunk}");
        assert_eq!(refusal(apply(&ctx, &patch).await).0, expected, "{path}");
        let change = json!({"path": path, "before": "x = 1\n", "after": "x = 2\n"});
        assert_eq!(refusal(call(&ctx, "apply_patch", json!({"changes": [change]})).await).0, expected, "{path}");
    }
    assert_eq!(get(&root, "ok.py"), b"x = 1\n");
    assert_eq!(get(&root, ".env"), b"TOKEN=PLACEHOLDER\n");
    assert_eq!(get(outer.path(), "outside.py"), b"x = 1\n");
    assert_eq!(get(&root, "target.py"), b"x = 1\n");
    assert_eq!(get(&root, "linked.py"), b"x = 1\n");
}

#[tokio::test]
async fn new_files_need_an_allowed_extension() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let create = |path: &str| format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+hello\n");
    for path in ["run.exe", "lib.so", "noext", "image.png"] {
        assert_eq!(refusal(apply(&ctx, &create(path)).await).0, "new_file_extension", "{path}");
        assert!(!dir.path().join(path).exists());
    }
    apply(&ctx, &create("src/new.py")).await.unwrap();
    assert_eq!(get(dir.path(), "src/new.py"), b"hello\n");
    apply(&ctx, &create("Makefile")).await.unwrap();
    let change = json!({"path": "tool.bin", "before": null, "after": "x"});
    assert_eq!(refusal(call(&ctx, "apply_patch", json!({"changes": [change]})).await).0, "new_file_extension");
    // Creating over an existing file is refused.
    assert_eq!(refusal(apply(&ctx, &create("src/new.py")).await).0, "file_exists");
}

// ----- Rollback -----------------------------------------------------------------------------

#[tokio::test]
async fn an_applied_multi_file_patch_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "keep.rs", b"fn a() {}\nfn b() {}\n");
    put(dir.path(), "gone.txt", b"old\nnotes\n");
    let ctx = context(dir.path());
    let patch = "--- a/keep.rs\n+++ b/keep.rs\n@@ -2 +2 @@\n-fn b() {}\n+fn b() { a() }\n\
                 --- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-old\n-notes\n\
                 --- /dev/null\n+++ b/src/fresh.rs\n@@ -0,0 +1 @@\n+pub fn fresh() {}\n";
    let shown = preview(&ctx, "apply_patch", json!({"patch": patch})).await.unwrap().unwrap();
    assert!(shown.1.contains("+++ /dev/null") && shown.1.contains("DELETES `gone.txt`"), "{}", shown.1);
    let out = apply(&ctx, patch).await.unwrap();
    assert_eq!(get(dir.path(), "keep.rs"), b"fn a() {}\nfn b() { a() }\n");
    assert!(!dir.path().join("gone.txt").exists());
    assert_eq!(get(dir.path(), "src/fresh.rs"), b"pub fn fresh() {}\n");
    let compensation = out.compensation.unwrap();
    assert!(matches!(&compensation, Compensation::RestorePatch { files } if files.len() == 3));
    // A later change to one file blocks the whole undo.
    put(dir.path(), "src/fresh.rs", b"edited by the user\n");
    assert!(rollback::undo(&compensation, &ctx.workspace).unwrap_err().to_string().contains("changed after"));
    assert_eq!(get(dir.path(), "keep.rs"), b"fn a() {}\nfn b() { a() }\n");
    put(dir.path(), "src/fresh.rs", b"pub fn fresh() {}\n");
    rollback::undo(&compensation, &ctx.workspace).unwrap();
    assert_eq!(get(dir.path(), "keep.rs"), b"fn a() {}\nfn b() {}\n");
    assert_eq!(get(dir.path(), "gone.txt"), b"old\nnotes\n");
    assert!(!dir.path().join("src/fresh.rs").exists());
}

// ----- Speed --------------------------------------------------------------------------------

#[tokio::test]
#[ignore = "timing; run with --release -- --ignored --nocapture"]
async fn apply_time_for_a_10_mb_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::with_capacity(10 * 1024 * 1024);
    let mut n = 0;
    while text.len() < 10 * 1000 * 1000 {
        text.push_str(&format!("line {n:07} of a large generated file, padded to look like code;\n"));
        n += 1;
    }
    put(dir.path(), "big.txt", text.as_bytes());
    let ctx = context(dir.path());
    let mid = n / 2;
    let patch = format!(
        "--- a/big.txt\n+++ b/big.txt\n@@ -{},3 +{},3 @@\n line {:07} of a large generated file, padded to look like code;\n-line {:07} of a large generated file, padded to look like code;\n+changed line\n line {:07} of a large generated file, padded to look like code;\n",
        mid,
        mid,
        mid - 1,
        mid,
        mid + 1
    );
    let started = std::time::Instant::now();
    apply(&ctx, &patch).await.unwrap();
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    println!("apply_patch: {} bytes, one hunk in the middle: {ms:.1} ms", text.len());
    let removed = format!("line {mid:07} of a large generated file, padded to look like code;\n");
    assert_eq!(get(dir.path(), "big.txt"), text.replace(&removed, "changed line\n").into_bytes());
}
