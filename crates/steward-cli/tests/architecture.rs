//! `ARCHITECTURE.md` stays true to the repository: every file or folder it names exists, every
//! Rust identifier it names (`Runtime::new`, `DecisionQueue`) is a word of the crates' sources,
//! and its crate table lists exactly the normal `steward-*` dependencies of each crate's
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
/// A code span shaped like a Rust name or path of names (`Runtime`, `Prepared::into_run`).
fn is_identifier(span: &str) -> bool {
    !span.is_empty()
        && span.split("::").all(|segment| {
            segment.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && segment.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// Every word (a maximal run of letters, digits and `_`) of the `.rs` files under `dir`.
fn source_words(dir: &Path, words: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("readable folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            source_words(&path, words);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            words.extend(text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map(str::to_string));
        }
    }
}

#[test]
fn every_identifier_named_is_in_the_sources() {
    let text = architecture();
    let names: BTreeSet<&str> = code_spans(&text).into_iter().filter(|s| is_identifier(s)).collect();
    assert!(names.len() >= 20, "expected the document to name its types and functions: {names:?}");
    let mut words = BTreeSet::new();
    source_words(&root().join("crates"), &mut words);
    let missing: Vec<&&str> =
        names.iter().filter(|name| !name.split("::").all(|segment| words.contains(segment))).collect();
    assert!(missing.is_empty(), "ARCHITECTURE.md names identifiers no source file has: {missing:?}");
}

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

/// A crate's modules, each with the source file that holds it: `lib.rs`/`main.rs` is the root
/// (`[]`), `a.rs` and `a/mod.rs` are `[a]`, `a/b.rs` is `[a, b]`. Test modules (`*tests.rs`)
/// and binaries under `bin/` are left out.
fn module_files(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(dir: &Path, prefix: &[String], out: &mut BTreeMap<Vec<String>, PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                if prefix.is_empty() && name == "bin" {
                    continue;
                }
                let mut inner = prefix.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                if stem.ends_with("tests") {
                    continue;
                }
                let mut module = prefix.to_vec();
                if !(stem == "mod" || (prefix.is_empty() && (stem == "lib" || stem == "main"))) {
                    module.push(stem.to_string());
                }
                out.insert(module, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, &[], &mut out);
    out
}

/// The module paths `text` (Rust source) names from its own crate, as written after
/// `crate::`, `super::` or `self::` (relative ones made absolute from `module`): in `use`
/// lists (`crate::{a, b::c}`) and in code. Comments, doc comments included, and everything
/// from the first `#[cfg(test)]` on are left out.
fn named_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let code: String = text
        .split("#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    // The segments after a prefix, following `a::b::{c, d::e}` one level of braces deep.
    fn segments(rest: &str, ident: &dyn Fn(&str) -> String) -> Vec<Vec<String>> {
        let mut path = Vec::new();
        let mut rest = rest;
        loop {
            let rest_trim = rest.trim_start();
            if let Some(group) = rest_trim.strip_prefix('{') {
                let inside = group.split('}').next().unwrap_or_default();
                return inside
                    .split(',')
                    .map(|item| {
                        let mut p = path.clone();
                        p.extend(item.trim().split("::").map(|s| ident(s.trim())).filter(|s| !s.is_empty()));
                        p
                    })
                    .collect();
            }
            let word = ident(rest_trim);
            if word.is_empty() {
                return vec![path];
            }
            rest = &rest_trim[word.len()..];
            path.push(word);
            match rest.strip_prefix("::") {
                Some(next) => rest = next,
                None => return vec![path],
            }
        }
    }
    // `super` is the parent of the module whichever file holds it; `self` the module itself.
    let parent: Vec<String> = module[..module.len().saturating_sub(1)].to_vec();
    let mut found = Vec::new();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent), ("self::", module.to_vec())] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            for tail in segments(&code[at + prefix.len()..], &ident) {
                let mut full = base.clone();
                full.extend(tail);
                found.push(full);
            }
        }
    }
    found
}

/// Cycles among the module files of one crate: an edge A → B when A names B (or an item in
/// it), except between a module and the modules it contains (a parent declares its children,
/// a child may use its parent's items).
fn module_cycles(src: &Path) -> Vec<Vec<String>> {
    let files = module_files(src);
    let modules: Vec<&Vec<String>> = files.keys().collect();
    let nested = |a: &[String], b: &[String]| a.starts_with(b) || b.starts_with(a);
    let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (i, module) in modules.iter().enumerate() {
        let path = &files[*module];
        let text = std::fs::read_to_string(path).expect("a source file reads");
        for named in named_paths(&text, module) {
            // The longest module that is a prefix of the named path.
            let target = (0..=named.len())
                .rev()
                .map(|n| &named[..n])
                .find_map(|prefix| modules.iter().position(|m| m.as_slice() == prefix));
            if let Some(j) = target
                && j != i
                && !nested(module, modules[j])
            {
                edges.entry(i).or_default().insert(j);
            }
        }
    }
    // Strongly connected components (Tarjan) with more than one module.
    struct Tarjan<'a> {
        edges: &'a BTreeMap<usize, BTreeSet<usize>>,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in self.edges.get(&v).into_iter().flatten() {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let n = modules.len();
    let mut tarjan = Tarjan {
        edges: &edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if tarjan.index[v].is_none() {
            tarjan.visit(v);
        }
    }
    tarjan.found.into_iter().map(|c| c.into_iter().map(|i| modules[i].join("::")).collect()).collect()
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let mut cycles = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).expect("crates/ exists") {
        let dir = entry.expect("crates/ entry").path();
        for cycle in module_cycles(&dir.join("src")) {
            cycles.push(format!("{}: {}", dir.display(), cycle.join(", ")));
        }
    }
    assert!(cycles.is_empty(), "modules that import each other in a cycle:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").expect("write");
    std::fs::write(src.join("a.rs"), "use crate::b::Thing;\n/// [`crate::c::Other`] is only named in a comment.\n")
        .expect("write");
    std::fs::write(src.join("b.rs"), "pub struct Thing;\nfn f() { super::a::g(); }\n").expect("write");
    std::fs::write(src.join("c.rs"), "use crate::{a, b::Thing};\n").expect("write");
    let cycles = module_cycles(src);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let mut members = cycles[0].clone();
    members.sort();
    assert_eq!(members, vec!["a".to_string(), "b".to_string()], "c only imports; a comment is no import");
}

#[test]
fn every_test_file_is_compiled() {
    // A crate with `autotests = false` builds its tests into the one binary its `[[test]]`
    // names; a file under tests/ that binary does not declare would never be compiled, and its
    // tests would silently not exist.
    let mut missing = Vec::new();
    let mut merged = 0;
    for entry in std::fs::read_dir(root().join("crates")).expect("crates/ exists") {
        let dir = entry.expect("crates/ entry").path();
        let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else { continue };
        let doc: toml::Table = toml::from_str(&text).expect("Cargo.toml parses");
        if doc["package"].get("autotests").and_then(toml::Value::as_bool) != Some(false) {
            continue;
        }
        let targets = doc.get("test").and_then(toml::Value::as_array).cloned().unwrap_or_default();
        let mains: Vec<String> =
            targets.iter().filter_map(|t| t.get("path").and_then(toml::Value::as_str)).map(String::from).collect();
        assert_eq!(mains.len(), 1, "{} has autotests = false and one [[test]] with a path", dir.display());
        merged += 1;
        let main = std::fs::read_to_string(dir.join(&mains[0])).expect("the test binary's main file reads");
        let declared: BTreeSet<&str> =
            main.lines().filter_map(|l| l.strip_prefix("mod ").and_then(|l| l.strip_suffix(';'))).collect();
        for file in std::fs::read_dir(dir.join("tests")).expect("tests/ reads") {
            let name = file.expect("tests/ entry").file_name().to_string_lossy().to_string();
            if let Some(module) = name.strip_suffix(".rs")
                && format!("tests/{name}") != mains[0]
                && !declared.contains(module)
            {
                missing.push(format!("{}/tests/{name}", dir.display()));
            }
        }
    }
    assert!(merged >= 4, "expected the crates with one test binary to be found");
    assert!(missing.is_empty(), "test files no test binary declares (add `mod NAME;`): {missing:?}");
}
