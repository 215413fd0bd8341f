//! `ARCHITECTURE.md` stays true to the repository: every file or folder it names exists, and
//! its crate table lists exactly the normal `steward-*` dependencies of each crate's
//! `Cargo.toml`, in an order where every crate depends only on crates above it (so the graph
//! has no cycle).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn architecture() -> String {
    std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md exists at the repository root")
}

/// The texts between backticks.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A code span that names a path of the repository (`crates/…`, `docs/…`, `scripts/…`, or a
/// Markdown file).
fn is_repository_path(span: &str) -> bool {
    !span.contains(char::is_whitespace)
        && (["crates/", "docs/", "scripts/", "tests/", "fuzz/"].iter().any(|top| span.starts_with(top))
            || span.ends_with(".md"))
}

#[test]
fn every_path_named_exists() {
    let text = architecture();
    let paths: BTreeSet<&str> = code_spans(&text).into_iter().filter(|s| is_repository_path(s)).collect();
    assert!(paths.len() >= 20, "expected the document to name its files: {paths:?}");
    let missing: Vec<&&str> = paths.iter().filter(|p| !root().join(p).exists()).collect();
    assert!(missing.is_empty(), "ARCHITECTURE.md names paths that do not exist: {missing:?}");
    // Markdown links too.
    for link in text.split("](").skip(1) {
        let target = link.split(')').next().unwrap_or_default();
        if !target.contains("://") && !target.starts_with('#') {
            let file = target.split('#').next().unwrap_or_default();
            assert!(root().join(file).exists(), "ARCHITECTURE.md links to a missing {target}");
        }
    }
}

/// The `steward-*` crates of `[dependencies]` of each crate's `Cargo.toml`.
fn manifest_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).expect("crates/ exists") {
        let manifest = entry.expect("crates/ entry").path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else { continue };
        let doc: toml::Table = toml::from_str(&text).expect("Cargo.toml parses");
        let name = doc["package"]["name"].as_str().expect("package.name").to_string();
        let deps = doc
            .get("dependencies")
            .and_then(|d| d.as_table())
            .map(|d| d.keys().filter(|k| k.starts_with("steward-")).cloned().collect())
            .unwrap_or_default();
        graph.insert(name, deps);
    }
    graph
}

/// The rows of the crate table, in order: crate → the crates it depends on.
fn documented_graph(text: &str) -> Vec<(String, BTreeSet<String>)> {
    text.lines()
        .filter(|line| line.starts_with("| `steward-"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let name = cells[1].trim_matches('`').to_string();
            let deps = code_spans(cells[2]).into_iter().map(String::from).collect();
            (name, deps)
        })
        .collect()
}

#[test]
fn the_crate_table_matches_the_manifests_and_has_no_cycle() {
    let text = architecture();
    let documented = documented_graph(&text);
    let manifests = manifest_graph();
    let names: BTreeSet<&String> = documented.iter().map(|(name, _)| name).collect();
    assert_eq!(names, manifests.keys().collect(), "the table lists every crate once");
    assert_eq!(names.len(), documented.len(), "no crate is listed twice");
    let mut above: BTreeSet<&str> = BTreeSet::new();
    for (name, deps) in &documented {
        assert_eq!(deps, &manifests[name], "dependencies of {name} in ARCHITECTURE.md");
        let later: Vec<&String> = deps.iter().filter(|d| !above.contains(d.as_str())).collect();
        assert!(later.is_empty(), "{name} depends on {later:?}, listed below it (or a cycle)");
        above.insert(name);
    }
}
