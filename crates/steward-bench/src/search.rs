//! `steward-bench search`: the workspace search index (SPEC K) measured on a real source tree.
//!
//! - **Recall@k** over a labelled query set (`bench/search/queries.toml`: questions written
//!   for the source of a crates.io package, each with the files that answer it): a query
//!   counts when one of its files is among the first k results. Two rankers: plain grep (files
//!   ordered by how many of their lines contain any of the query's words, case-insensitive, as
//!   `grep -c -i -e w1 -e w2 …` would count them; ties by path) and the index's BM25 over
//!   chunks (a chunk's file counts once, at its best rank).
//! - **Indexing throughput**: a full build of a fresh index of a tree (the corpus, and Steward's
//!   own source tree when given), in MB of indexed files per second, median of several builds.
//! - **Incremental update**: the time to bring a built index up to date after one file changed
//!   (walk, stat, re-read and re-cut the one file, write the index), and with nothing changed.
//! - **Query latency**: ranking one query over the loaded index.
//! - **Hybrid ranking** (with `--embeddings URL`, an OpenAI-compatible server): recall@k of
//!   BM25 and embeddings fused by reciprocal rank, the full build with every chunk embedded
//!   (MB/s and chunks/s), the update after one changed file with its chunks embedded, and one
//!   hybrid query (the query embedded, then ranked), through the same lookup runs use.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use serde::Deserialize;
use steward_index::{IndexOptions, WorkspaceIndex};
use steward_policy::Workspace;

/// `steward-bench search` options.
#[derive(Args, Clone)]
pub struct BenchSearchArgs {
    /// The labelled queries [default: bench/search/queries.toml of this crate].
    #[arg(long)]
    queries: Option<PathBuf>,
    /// The corpus folder [default: the package the query file names, as cargo unpacked it in
    /// its registry cache: the workspace depends on it, so any build fetched it].
    #[arg(long)]
    corpus: Option<PathBuf>,
    /// A further tree to measure indexing throughput and updates on (e.g. Steward's checkout).
    #[arg(long)]
    tree: Option<PathBuf>,
    /// Results looked at per query.
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// Builds (and updates) timed per tree; the median is printed.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// The base URL of an OpenAI-compatible embeddings server (`…/v1`): measure hybrid ranking
    /// with it too.
    #[arg(long)]
    embeddings: Option<String>,
    /// The model asked of `--embeddings`.
    #[arg(long, default_value = "all-minilm-l6-v2")]
    embedding_model: String,
}

/// The query file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryFile {
    /// The corpus: a crates.io package as `NAME-VERSION`, found in cargo's registry cache.
    corpus: String,
    /// Where the corpus comes from (printed with the figures).
    source: String,
    #[serde(rename = "query")]
    queries: Vec<Query>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Query {
    text: String,
    /// Corpus-relative files that answer it.
    files: Vec<String>,
}

fn default_queries() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/search/queries.toml")
}

/// The unpacked source of crates.io package `name_version` (`similar-2.7.0`) in cargo's
/// registry cache (`$CARGO_HOME/registry/src/*/`, `~/.cargo` by default). Errors: not there
/// (say how to fetch it, or to pass `--corpus`).
fn registry_source(name_version: &str) -> Result<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set; pass --corpus")?;
    let registries = cargo_home.join("registry/src");
    for entry in std::fs::read_dir(&registries).with_context(|| format!("{}", registries.display()))? {
        let candidate = entry?.path().join(name_version);
        if candidate.is_dir() {
            return Ok(candidate);
        }
    }
    anyhow::bail!(
        "{name_version} is not unpacked under {} (run `cargo fetch` in the workspace, which depends on it, or pass --corpus)",
        registries.display()
    )
}

/// Runs the measurements and prints one line per figure.
pub async fn run(args: BenchSearchArgs) -> Result<u8> {
    let measured = args.clone();
    let code = tokio::task::spawn_blocking(move || measure(&measured)).await??;
    if let Some(url) = &args.embeddings {
        hybrid(&args, url).await?;
    }
    Ok(code)
}

/// The labelled queries and the corpus folder `args` name.
fn load(args: &BenchSearchArgs) -> Result<(QueryFile, PathBuf)> {
    let path = args.queries.clone().unwrap_or_else(default_queries);
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    let file: QueryFile = toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
    let corpus = match &args.corpus {
        Some(dir) => dir.clone(),
        None => registry_source(&file.corpus)?,
    };
    Ok((file, corpus))
}

/// The first `k` distinct files of `hits`.
fn top_files(hits: &[steward_index::Hit], k: usize) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for hit in hits {
        if !seen.contains(&hit.path) {
            seen.push(hit.path.clone());
        }
        if seen.len() == k {
            break;
        }
    }
    seen
}

/// Hybrid ranking with the embeddings server at `url`: recall@k, the full build with
/// embeddings, the update after one changed file, one query.
async fn hybrid(args: &BenchSearchArgs, url: &str) -> Result<()> {
    use std::sync::Arc;
    use steward_tools::{workspace_index::Embeddings, workspace_index::lookup};
    let (file, corpus) = load(args)?;
    let mut provider = steward_provider::ProviderConfig::new(steward_provider::ProviderKind::Openai);
    provider.base_url = Some(url.to_string());
    let client = steward_provider::EmbeddingClient::new("bench", &provider, Some(&args.embedding_model), &|_| None)?;
    let embeddings = Embeddings::Client(Arc::new(client));
    let redactor = Arc::new(steward_policy::Redactor::new(Vec::new()));
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = IndexOptions::default();
    let k = args.k.max(1);

    // Full builds, every chunk embedded.
    let workspace = Arc::new(Workspace::open(&corpus, &[])?);
    let mut builds = Vec::new();
    let (mut bytes, mut chunks, mut embedded) = (0, 0, 0);
    for _ in 0..args.repeat.max(1) {
        let state = tempfile::tempdir()?;
        let started = Instant::now();
        let found = lookup(state.path(), &options, &embeddings, &workspace, "", 0, &cancel, &redactor).await?;
        builds.push(started.elapsed());
        anyhow::ensure!(found.embedding_error.is_none(), "embeddings failed: {:?}", found.embedding_error);
        (bytes, chunks, embedded) = (found.report.bytes_read, found.report.chunks, found.embedded);
    }
    let build = median(&mut builds).as_secs_f64().max(1e-9);
    println!(
        "search index build with embeddings corpus: {chunks} chunks ({embedded} embedded), {:.2} MB in {:.0} ms (median of {}): {:.3} MB/s, {:.1} chunks/s",
        bytes as f64 / 1e6,
        build * 1000.0,
        builds.len(),
        bytes as f64 / 1e6 / build,
        embedded as f64 / build
    );

    // Recall@k and query time, over one built index.
    let state = tempfile::tempdir()?;
    lookup(state.path(), &options, &embeddings, &workspace, "", 0, &cancel, &redactor).await?;
    let mut hits = 0;
    let mut times = Vec::new();
    for query in &file.queries {
        let started = Instant::now();
        let found =
            lookup(state.path(), &options, &embeddings, &workspace, &query.text, 50, &cancel, &redactor).await?;
        times.push(started.elapsed());
        anyhow::ensure!(found.ranking == "hybrid", "embeddings failed: {:?}", found.embedding_error);
        if top_files(&found.hits, k).iter().any(|f| query.files.contains(f)) {
            hits += 1;
        }
    }
    let n = file.queries.len().max(1) as f64;
    println!("search recall@{k} hybrid: {:.2} ({hits}/{})", hits as f64 / n, file.queries.len());
    println!(
        "search query hybrid: median {:.1} ms over {} queries (walk and stat, the query embedded, both rankings fused)",
        ms(median(&mut times)),
        file.queries.len()
    );

    // One changed file, in a scratch copy.
    let scratch = tempfile::tempdir()?;
    let paths: Vec<String> = {
        let mut index = WorkspaceIndex::open(state.path(), &workspace, &options)?;
        index.update(&workspace, &options, &|| false, &keep)?;
        index.paths().into_iter().map(String::from).collect()
    };
    for rel in &paths {
        let to = scratch.path().join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(workspace.root().join(rel), &to)?;
    }
    let copy = Arc::new(Workspace::open(scratch.path(), &[])?);
    let target = paths
        .iter()
        .max_by_key(|p| std::fs::metadata(copy.root().join(p)).map_or(0, |m| m.len()))
        .context("the corpus has no indexed file")?
        .clone();
    let state = tempfile::tempdir()?;
    lookup(state.path(), &options, &embeddings, &copy, "", 0, &cancel, &redactor).await?;
    let mut changed = Vec::new();
    let mut embedded = 0;
    for i in 0..args.repeat.max(1) {
        let path = copy.root().join(&target);
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str(&format!("\n// change {i}\n"));
        std::fs::write(&path, text)?;
        let started = Instant::now();
        let found = lookup(state.path(), &options, &embeddings, &copy, "", 0, &cancel, &redactor).await?;
        changed.push(started.elapsed());
        anyhow::ensure!(found.report.changed == 1, "expected one changed file, got {:?}", found.report);
        embedded = found.embedded;
    }
    println!(
        "search index update with embeddings corpus: one changed file ({target}, {embedded} chunks embedded): median {:.1} ms ({} runs)",
        ms(median(&mut changed)),
        changed.len()
    );
    Ok(())
}

fn measure(args: &BenchSearchArgs) -> Result<u8> {
    let (file, corpus) = load(args)?;
    let workspace = Workspace::open(&corpus, &[]).with_context(|| format!("corpus {}", corpus.display()))?;
    let state = tempfile::tempdir()?;
    let options = IndexOptions::default();
    let mut index = WorkspaceIndex::open(state.path(), &workspace, &options)?;
    let report = index.update(&workspace, &options, &|| false, &keep)?;
    let files: Vec<String> = index.paths().into_iter().map(String::from).collect();
    for query in &file.queries {
        for f in &query.files {
            anyhow::ensure!(files.contains(f), "query `{}` names `{f}`, which is not indexed", query.text);
        }
    }
    println!(
        "search corpus: {} ({}), {} files, {} chunks, {} bytes; {} labelled queries, recall@{} = share of queries with a labelled file in the first {} results",
        file.corpus,
        file.source,
        report.files,
        report.chunks,
        report.bytes_read,
        file.queries.len(),
        args.k,
        args.k
    );
    let k = args.k.max(1);
    let mut grep_hits = 0;
    let mut bm25_hits = 0;
    let mut query_times = Vec::new();
    for query in &file.queries {
        let wanted: BTreeSet<&str> = query.files.iter().map(String::as_str).collect();
        let grep = grep_rank(&corpus, &files, &query.text);
        if grep.iter().take(k).any(|f| wanted.contains(f.as_str())) {
            grep_hits += 1;
        }
        let started = Instant::now();
        let ranked = index.ranked(&query.text);
        query_times.push(started.elapsed());
        if top_files(&ranked, k).iter().any(|f| wanted.contains(f.as_str())) {
            bm25_hits += 1;
        }
    }
    let n = file.queries.len().max(1) as f64;
    println!("search recall@{k} grep: {:.2} ({grep_hits}/{})", grep_hits as f64 / n, file.queries.len());
    println!("search recall@{k} bm25: {:.2} ({bm25_hits}/{})", bm25_hits as f64 / n, file.queries.len());
    println!("search query bm25: median {:.3} ms over {} queries", ms(median(&mut query_times)), file.queries.len());
    if args.embeddings.is_none() {
        println!("search recall@{k} hybrid: not measured (no --embeddings server)");
    }
    timings("corpus", &corpus, args.repeat)?;
    if let Some(tree) = &args.tree {
        timings("tree", tree, args.repeat)?;
    }
    Ok(0)
}

/// Files ordered by the number of their lines holding any word of `query` (lowercased, two
/// characters or more), most first; files without such a line are left out.
fn grep_rank(root: &Path, files: &[String], query: &str) -> Vec<String> {
    let words: Vec<String> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .filter(|w| !steward_index::tokens::is_stop_word(w))
        .collect();
    let mut counted: Vec<(usize, &String)> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(root.join(f)).ok()?;
            let count = text
                .lines()
                .filter(|l| {
                    let l = l.to_lowercase();
                    words.iter().any(|w| l.contains(w.as_str()))
                })
                .count();
            (count > 0).then_some((count, f))
        })
        .collect();
    counted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    counted.into_iter().map(|(_, f)| f.clone()).collect()
}

/// Full builds, updates after one change, updates with none, of `tree`.
fn timings(label: &str, tree: &Path, repeat: usize) -> Result<()> {
    let workspace = Workspace::open(tree, &[]).with_context(|| format!("{}", tree.display()))?;
    let options = IndexOptions::default();
    let mut builds = Vec::new();
    let mut bytes = 0;
    let mut files = 0;
    for _ in 0..repeat.max(1) {
        let state = tempfile::tempdir()?;
        let started = Instant::now();
        let mut index = WorkspaceIndex::open(state.path(), &workspace, &options)?;
        let report = index.update(&workspace, &options, &|| false, &keep)?;
        builds.push(started.elapsed());
        bytes = report.bytes_read;
        files = report.files;
    }
    let build = median(&mut builds);
    println!(
        "search index build {label}: {files} files, {:.2} MB in {:.1} ms (median of {}): {:.1} MB/s",
        bytes as f64 / 1e6,
        ms(build),
        builds.len(),
        bytes as f64 / 1e6 / build.as_secs_f64().max(1e-9)
    );
    // One scratch copy of the tree's indexed files, so changing one never touches the tree.
    let scratch = tempfile::tempdir()?;
    let state = tempfile::tempdir()?;
    let mut index = WorkspaceIndex::open(state.path(), &workspace, &options)?;
    index.update(&workspace, &options, &|| false, &keep)?;
    for rel in index.paths() {
        let to = scratch.path().join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(workspace.root().join(rel), &to)?;
    }
    let copy = Workspace::open(scratch.path(), &[])?;
    let target =
        index.paths().into_iter().max_by_key(|p| std::fs::metadata(copy.root().join(p)).map_or(0, |m| m.len()));
    let target = target.map(String::from).context("the tree has no indexed file")?;
    let state = tempfile::tempdir()?;
    let mut index = WorkspaceIndex::open(state.path(), &copy, &options)?;
    index.update(&copy, &options, &|| false, &keep)?;
    let mut changed = Vec::new();
    let mut unchanged = Vec::new();
    for i in 0..repeat.max(1) {
        let path = copy.root().join(&target);
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str(&format!("\n// change {i}\n"));
        std::fs::write(&path, text)?;
        let started = Instant::now();
        let report = index.update(&copy, &options, &|| false, &keep)?;
        changed.push(started.elapsed());
        anyhow::ensure!(report.changed == 1, "expected one changed file, got {report:?}");
        let started = Instant::now();
        index.update(&copy, &options, &|| false, &keep)?;
        unchanged.push(started.elapsed());
    }
    println!(
        "search index update {label}: one changed file ({target}): median {:.1} ms; nothing changed: median {:.1} ms ({} runs)",
        ms(median(&mut changed)),
        ms(median(&mut unchanged)),
        changed.len()
    );
    Ok(())
}

/// The corpus holds no secret: chunks are kept as they are.
fn keep(text: &str) -> String {
    text.to_string()
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
