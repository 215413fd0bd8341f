use std::path::Path;

use super::*;

fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn workspace(root: &Path) -> Workspace {
    Workspace::open(root, &[]).unwrap()
}

fn never() -> bool {
    false
}

fn keep(text: &str) -> String {
    text.to_string()
}

/// A workspace with one file of each kind the index must leave out.
fn fixture() -> (tempfile::TempDir, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "src/config.rs", "/// Reads the configuration file.\npub fn parse_config(text: &str) {}\n");
    write(root, "docs/guide.md", "# Guide\nHow the retry backoff works.\n");
    write(root, ".env", "OPENAI_API_KEY=sk-not-to-be-indexed\n");
    write(root, "secrets/id_rsa", "key\n");
    write(root, "notes/key.txt", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n");
    write(root, "node_modules/pkg/index.js", "retry backoff config\n");
    write(root, "target/debug/out.txt", "retry backoff config\n");
    write(root, ".gitignore", "ignored.txt\n");
    write(root, "ignored.txt", "retry backoff config\n");
    write(root, ".git/config", "[core]\n");
    write(root, ".steward/config.toml", "[run]\n");
    write(root, "Cargo.lock", "retry\n");
    write(root, "big.txt", "retry ".repeat(12_000));
    write(root, "image.bin", [0u8, 159, 146, 150]);
    write(root, "latin1.txt", [b'r', b'e', 0xE9, b'\n']);
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "outside.txt", "retry backoff config outside\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path().join("outside.txt"), root.join("link.txt")).unwrap();
    (ws, outside)
}

#[test]
fn only_plain_text_files_the_tools_may_read_are_indexed() {
    let (ws, _outside) = fixture();
    let state = tempfile::tempdir().unwrap();
    let w = workspace(ws.path());
    let options = IndexOptions::default();
    let mut index = WorkspaceIndex::open(state.path(), &w, &options).unwrap();
    let report = index.update(&w, &options, &never, &keep).unwrap();
    assert_eq!(index.paths(), [".gitignore", "docs/guide.md", "src/config.rs"], "{report:?}");
    assert_eq!((report.added, report.skipped_large, report.skipped_binary, report.skipped_secret), (3, 1, 2, 1));
    let hits = index.search("how does retry backoff work", 5);
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].path.as_str(), hits[0].start_line, hits[0].end_line), ("docs/guide.md", 1, 2));
    assert_eq!(index.search("parse the config", 5)[0].path, "src/config.rs");
    // Nothing of a secret, ignored or outside file reached the index file.
    let stored = std::fs::read_to_string(index.dir().join("index.json")).unwrap();
    for absent in ["sk-not-to-be-indexed", "outside", "PRIVATE KEY", "node_modules", "[run]"] {
        assert!(!stored.contains(absent), "{absent}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(index.dir().join("index.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn updates_read_only_what_changed_and_drop_what_is_gone() {
    let (ws, _outside) = fixture();
    let state = tempfile::tempdir().unwrap();
    let w = workspace(ws.path());
    let options = IndexOptions::default();
    let mut index = WorkspaceIndex::open(state.path(), &w, &options).unwrap();
    index.update(&w, &options, &never, &keep).unwrap();
    // Reopened from disk: nothing changed, nothing read.
    let mut index = WorkspaceIndex::open(state.path(), &w, &options).unwrap();
    let report = index.update(&w, &options, &never, &keep).unwrap();
    assert_eq!((report.unchanged, report.added, report.changed, report.bytes_read), (3, 0, 0, 0), "{report:?}");
    write(ws.path(), "src/config.rs", "pub fn load_settings() {}\n");
    std::fs::remove_file(ws.path().join("docs/guide.md")).unwrap();
    write(ws.path(), "src/new.rs", "fn tokenizer() {}\n");
    let report = index.update(&w, &options, &never, &keep).unwrap();
    assert_eq!((report.changed, report.removed, report.added, report.unchanged), (1, 1, 1, 1), "{report:?}");
    assert!(index.search("retry backoff", 5).is_empty());
    assert_eq!(index.search("load settings", 5)[0].path, "src/config.rs");
    assert!(index.search("parse", 5).is_empty());
}

#[test]
fn an_unreadable_index_is_rebuilt_and_clear_removes_it() {
    let (ws, _outside) = fixture();
    let state = tempfile::tempdir().unwrap();
    let w = workspace(ws.path());
    let options = IndexOptions::default();
    let mut index = WorkspaceIndex::open(state.path(), &w, &options).unwrap();
    index.update(&w, &options, &never, &keep).unwrap();
    std::fs::write(index.dir().join("index.json"), "{not json").unwrap();
    let mut index = WorkspaceIndex::open(state.path(), &w, &options).unwrap();
    let report = index.update(&w, &options, &never, &keep).unwrap();
    assert!(report.rebuilt.as_deref().is_some_and(|r| r.contains("could not be read")), "{report:?}");
    assert_eq!(report.added, 3);
    assert_eq!(index.status().files, 3);
    assert!(clear(state.path(), w.root()).unwrap());
    assert!(!clear(state.path(), w.root()).unwrap());
    // A state folder that cannot hold the index is an error, not a panic.
    let blocked = state.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let failed = WorkspaceIndex::open(&blocked, &w, &options).and_then(|mut i| i.update(&w, &options, &never, &keep));
    assert!(matches!(failed, Err(IndexError::Io { .. })), "{failed:?}");
    assert!(matches!(index.update(&w, &options, &|| true, &keep), Err(IndexError::Cancelled)));
}

#[test]
fn a_state_folder_inside_the_workspace_is_never_indexed() {
    let (ws, _outside) = fixture();
    let w = workspace(ws.path());
    let options = IndexOptions::default();
    let state = w.root().join("state").join("index");
    let mut index = WorkspaceIndex::open(&state, &w, &options).unwrap();
    index.update(&w, &options, &never, &keep).unwrap();
    let report = index.update(&w, &options, &never, &keep).unwrap();
    assert_eq!(index.paths(), [".gitignore", "docs/guide.md", "src/config.rs"], "{report:?}");
}

/// A made-up vector per input: which of two words it holds, so the test knows the cosines.
fn toy_vector(input: &str) -> Vec<f32> {
    vec![f32::from(u8::from(input.contains("alpha"))), f32::from(u8::from(input.contains("beta"))), 0.1]
}

#[test]
fn embeddings_are_kept_per_chunk_text_and_only_new_text_is_pending() {
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    write(ws.path(), "a.txt", "alpha one\n");
    write(ws.path(), "b.txt", "beta two\n");
    let (workspace, options) = (workspace(ws.path()), IndexOptions::default());
    let mut index = WorkspaceIndex::open(state.path(), &workspace, &options).unwrap();
    index.update(&workspace, &options, &never, &keep).unwrap();
    let pending = index.pending_embeddings("m");
    assert_eq!(
        pending.iter().map(|p| p.input.as_str()).collect::<Vec<_>>(),
        ["a.txt\nalpha one\n", "b.txt\nbeta two\n"]
    );
    let vectors = pending.iter().map(|p| (p.key.clone(), toy_vector(&p.input))).collect();
    assert_eq!(index.add_embeddings("m", vectors).unwrap(), 2);
    assert!(index.pending_embeddings("m").is_empty());
    // Another model's vectors do not count.
    assert_eq!(index.pending_embeddings("other").len(), 2);

    // Stored: a fresh load finds them; one changed file leaves one chunk pending.
    let mut index = WorkspaceIndex::open(state.path(), &workspace, &options).unwrap();
    assert_eq!(index.embedded_chunks("m"), 2);
    std::fs::write(ws.path().join("b.txt"), "beta three, longer now\n").unwrap();
    index.update(&workspace, &options, &never, &keep).unwrap();
    let pending = index.pending_embeddings("m");
    assert_eq!(pending.len(), 1);
    assert!(pending[0].input.starts_with("b.txt\n"));
    // The gone chunk's vector is dropped when the new one is stored.
    let vectors = pending.iter().map(|p| (p.key.clone(), toy_vector(&p.input))).collect();
    assert_eq!(index.add_embeddings("m", vectors).unwrap(), 2);

    // The vector ranking decides where no word is shared; fused scores are RRF's.
    let hits = index.hybrid("nothing shared", &[0.0, 1.0, 0.0], "m");
    assert_eq!(hits.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(), ["b.txt", "a.txt"]);
    assert!((hits[0].score - 1.0 / (hybrid::RRF_K + 1.0)).abs() < 1e-12);
    // Without vectors of the model asked for, the BM25 ranking.
    assert_eq!(index.hybrid("alpha", &[0.0, 1.0, 0.0], "other"), index.ranked("alpha"));
}
