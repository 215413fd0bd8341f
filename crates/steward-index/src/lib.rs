//! The workspace search index (SPEC K).
//!
//! Files are found as every tool finds them, through [`Workspace::walk_pruned`]: `.gitignore`
//! and `.stewardignore` honoured, secret paths (the one predicate of `steward-secrets`), `.git`
//! and `deny_path` matches never yielded, symbolic links never followed (and never indexed).
//! On top of that the index leaves out dependency and build folders ([`SKIPPED_DIRS`]), lock
//! files ([`SKIPPED_FILES`]), Steward's own `.steward/`, files over
//! [`IndexOptions::max_file_bytes`], files that are not UTF-8 text (or hold a NUL byte) and
//! files holding a private key block.
//!
//! Each file is cut into chunks of about 1,600 characters with 160 of overlap
//! ([`chunk::chunks`]) and ranked with BM25 ([`bm25::Bm25`]). The index of one workspace is
//! one JSON file, `index.json`, in its own folder under the state directory
//! ([`index_dir`]), owner-only. [`WorkspaceIndex::update`] brings it up to date
//! incrementally: a file whose size and modification time are unchanged is not read; one
//! whose content hash (SHA-256) is unchanged is not cut again.
//!
//! Optionally, each chunk's embedding (from a provider, see `steward-core`) is kept in the same
//! file, keyed by the SHA-256 of the chunk's path and redacted text, so an update embeds only
//! chunks whose text is new ([`WorkspaceIndex::pending_embeddings`],
//! [`WorkspaceIndex::add_embeddings`]); [`WorkspaceIndex::hybrid`] then fuses the BM25 and
//! cosine rankings ([`hybrid::reciprocal_rank_fusion`]).
#![forbid(unsafe_code)]

pub mod bm25;
pub mod chunk;
pub mod hybrid;
pub mod tokens;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use steward_policy::{Access, Workspace};

pub use bm25::Bm25;
pub use chunk::{CHUNK_CHARS, Chunk, OVERLAP_CHARS};

/// Folders never indexed, by name, wherever they are: dependencies, build output, caches.
pub const SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    "bower_components",
    "vendor",
    "target",
    "build",
    "_build",
    "dist",
    "deps",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".gradle",
    ".next",
    ".nuxt",
    ".terraform",
    ".cache",
    "Pods",
];

/// Files never indexed, by name: lock files (generated, long, no prose).
pub const SKIPPED_FILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "composer.lock",
    "Gemfile.lock",
    "mix.lock",
    "go.sum",
];

/// Version of the file format; an index of another version is rebuilt.
const FORMAT: u32 = 1;
/// Name of the index file in its folder.
const INDEX_FILE: &str = "index.json";

/// What is indexed and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexOptions {
    /// Larger files are left out (default 64 KiB).
    pub max_file_bytes: u64,
    /// Files indexed at most; the walk stops there (default 20,000).
    pub max_files: usize,
    /// Characters of a chunk (default [`CHUNK_CHARS`]).
    pub chunk_chars: usize,
    /// Characters of overlap between chunks (default [`OVERLAP_CHARS`]).
    pub overlap_chars: usize,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            max_file_bytes: 64 * 1024,
            max_files: 20_000,
            chunk_chars: CHUNK_CHARS,
            overlap_chars: OVERLAP_CHARS,
        }
    }
}

/// Why the index could not be used.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The index folder or file could not be made, read or written.
    #[error("search index {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The workspace root could not be walked.
    #[error("search index: {0}")]
    Workspace(#[from] steward_policy::PathError),
    /// The update was stopped.
    #[error("search index: the update was cancelled")]
    Cancelled,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io { path: path.to_path_buf(), source }
}

/// One indexed file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileEntry {
    size: u64,
    mtime_ns: u64,
    sha256: String,
    chunks: Vec<Chunk>,
}

/// The index file's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    format: u32,
    workspace: String,
    chunk_chars: usize,
    overlap_chars: usize,
    /// Unix seconds of the last update that changed something (0: never written).
    updated_at: u64,
    /// Files by workspace-relative, `/`-separated path.
    files: BTreeMap<String, FileEntry>,
    /// The chunks' embeddings, when a provider gave them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vectors: Option<Vectors>,
}

/// The embeddings of the chunks, from one model.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Vectors {
    /// Which model made them (`provider/model`); another model's are dropped.
    model: String,
    /// By [`embedding_key`] of the chunk, the vector ([`hybrid::encode`]).
    by_key: BTreeMap<String, String>,
}

/// The text a chunk of `path` is embedded as: its path on the first line, then its text.
pub fn embedding_input(path: &str, text: &str) -> String {
    format!("{path}\n{text}")
}

/// The key of a chunk's vector: the SHA-256 (hex) of its [`embedding_input`].
fn embedding_key(path: &str, text: &str) -> String {
    hex::encode(Sha256::digest(embedding_input(path, text).as_bytes()))
}

/// A chunk waiting for its embedding: the key [`WorkspaceIndex::add_embeddings`] takes back,
/// and the text to embed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingEmbedding {
    /// The key the vector is stored under.
    pub key: String,
    /// The text to embed ([`embedding_input`]: path and redacted chunk text).
    pub input: String,
}

/// What an update did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UpdateReport {
    /// Files indexed after the update.
    pub files: usize,
    /// Chunks after the update.
    pub chunks: usize,
    /// Files new to the index.
    pub added: usize,
    /// Files whose content changed (cut again).
    pub changed: usize,
    /// Files gone or no longer indexable.
    pub removed: usize,
    /// Files whose size and time (or content) were unchanged.
    pub unchanged: usize,
    /// Bytes read and cut this time.
    pub bytes_read: u64,
    /// Files left out for their size.
    pub skipped_large: usize,
    /// Files left out as not UTF-8 text (not UTF-8, or a NUL byte).
    pub skipped_binary: usize,
    /// Files left out for holding a private key block.
    pub skipped_secret: usize,
    /// True when [`IndexOptions::max_files`] stopped the walk.
    pub truncated: bool,
    /// Why the stored index was not used and was rebuilt (unreadable, another format or
    /// other chunk sizes); `None` when it was used or there was none.
    pub rebuilt: Option<String>,
}

/// One ranked chunk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// Workspace-relative path.
    pub path: String,
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (inclusive).
    pub end_line: u32,
    /// BM25 score (or fused rank score).
    pub score: f64,
    /// The chunk's text.
    pub text: String,
}

/// The state of a stored index, for `steward index status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    /// The index folder.
    pub dir: PathBuf,
    /// The workspace it indexes.
    pub workspace: String,
    /// Files indexed.
    pub files: usize,
    /// Chunks.
    pub chunks: usize,
    /// Bytes of the indexed files.
    pub bytes: u64,
    /// Bytes of the index file.
    pub index_bytes: u64,
    /// Unix seconds of the last update that changed something.
    pub updated_at: u64,
}

/// The folder of `workspace_root`'s index under `state_dir` (`$STEWARD_HOME/index`): named
/// after the SHA-256 of the canonical workspace path, so each workspace has its own.
pub fn index_dir(state_dir: &Path, workspace_root: &Path) -> PathBuf {
    let digest = Sha256::digest(workspace_root.as_os_str().as_encoded_bytes());
    state_dir.join(hex::encode(&digest[..8]))
}

/// True when `rel` (workspace-relative) is never indexed for its name: a dependency or build
/// folder, a lock file, or Steward's own configuration.
pub fn is_skipped(rel: &Path, is_dir: bool) -> bool {
    if steward_policy::is_protected_path(rel) {
        return true;
    }
    let Some(name) = rel.file_name().and_then(|n| n.to_str()) else { return false };
    if is_dir { SKIPPED_DIRS.contains(&name) } else { SKIPPED_FILES.contains(&name) }
}

/// A private key block: a line starting `-----BEGIN ` and ending `PRIVATE KEY-----` (the test
/// the `read` tool makes).
fn holds_private_key(bytes: &[u8]) -> bool {
    bytes.split(|b| *b == b'\n').any(|line| {
        let line = line.trim_ascii_start();
        line.starts_with(b"-----BEGIN ") && line.trim_ascii_end().ends_with(b"PRIVATE KEY-----")
    })
}

/// The index of one workspace, loaded in memory.
#[derive(Debug)]
pub struct WorkspaceIndex {
    dir: PathBuf,
    stored: Stored,
    ranker: Option<Bm25>,
    /// The [`embedding_key`] of every chunk, in ranking order (made with the ranker).
    keys: Option<Vec<String>>,
    /// The chunks' vectors decoded (model, index order), made on first use.
    decoded: Option<(String, Vec<Option<Vec<f32>>>)>,
    rebuilt: Option<String>,
}

impl WorkspaceIndex {
    /// The index of `workspace` kept under `state_dir`, as stored (empty when there is none;
    /// an unreadable one, of another format or of other chunk sizes, is started afresh and
    /// the next update says so). Nothing is written until [`WorkspaceIndex::update`].
    pub fn open(state_dir: &Path, workspace: &Workspace, options: &IndexOptions) -> Result<WorkspaceIndex, IndexError> {
        let root = workspace.root();
        let dir = index_dir(state_dir, root);
        let fresh = Stored {
            format: FORMAT,
            workspace: root.display().to_string(),
            chunk_chars: options.chunk_chars,
            overlap_chars: options.overlap_chars,
            updated_at: 0,
            files: BTreeMap::new(),
            vectors: None,
        };
        let path = dir.join(INDEX_FILE);
        let (stored, rebuilt) = match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (fresh, None),
            Err(e) => return Err(io(&path)(e)),
            Ok(bytes) => match serde_json::from_slice::<Stored>(&bytes) {
                Ok(s)
                    if s.format == FORMAT
                        && s.workspace == fresh.workspace
                        && s.chunk_chars == options.chunk_chars
                        && s.overlap_chars == options.overlap_chars =>
                {
                    (s, None)
                }
                Ok(_) => (fresh, Some("it was made with another format or other chunk sizes".to_string())),
                Err(e) => (fresh, Some(format!("it could not be read ({e})"))),
            },
        };
        Ok(WorkspaceIndex { dir, stored, ranker: None, keys: None, decoded: None, rebuilt })
    }

    /// The folder holding the index file.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Brings the index up to date with `workspace`: new and changed files are read and cut,
    /// each chunk's text passed through `redact` before it is kept (so a secret a workspace
    /// file holds is not stored), gone ones dropped, and the index file is written when
    /// anything changed. `cancelled` is asked between files.
    pub fn update(
        &mut self,
        workspace: &Workspace,
        options: &IndexOptions,
        cancelled: &dyn Fn() -> bool,
        redact: &dyn Fn(&str) -> String,
    ) -> Result<UpdateReport, IndexError> {
        let mut report = UpdateReport { rebuilt: self.rebuilt.take(), ..UpdateReport::default() };
        // Written only when something changed (or it was never written).
        let mut dirty = report.rebuilt.is_some() || self.stored.updated_at == 0;
        let root = workspace.root().to_path_buf();
        let start = workspace.resolve(".", Access::Read)?;
        // The state folder itself, when it lies inside the workspace, is never indexed.
        let state_rel = self.dir.parent().and_then(|state| state.strip_prefix(&root).ok()).map(Path::to_path_buf);
        let prune = move |rel: &Path, is_dir: bool| {
            is_skipped(rel, is_dir)
                || state_rel.as_deref().is_some_and(|s| !s.as_os_str().is_empty() && rel.starts_with(s))
        };
        let mut old = std::mem::take(&mut self.stored.files);
        let mut files = BTreeMap::new();
        for entry in workspace.walk_pruned(&start, prune) {
            if cancelled() {
                self.stored.files = old;
                return Err(IndexError::Cancelled);
            }
            let Ok(entry) = entry else { continue };
            // Regular files only: a symbolic link is never followed or indexed.
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&root) else { continue };
            let Some(rel) = rel.to_str().map(|r| r.replace('\\', "/")) else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            if meta.len() > options.max_file_bytes {
                report.skipped_large += 1;
                continue;
            }
            if files.len() == options.max_files {
                report.truncated = true;
                break;
            }
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            let previous = match old.remove(&rel) {
                Some(p) if p.size == meta.len() && p.mtime_ns == mtime_ns => {
                    report.unchanged += 1;
                    files.insert(rel, p);
                    continue;
                }
                other => other,
            };
            let Ok(bytes) = std::fs::read(entry.path()) else { continue };
            if bytes.len() as u64 > options.max_file_bytes {
                report.skipped_large += 1;
                continue;
            }
            let text = match std::str::from_utf8(&bytes) {
                Ok(text) if !bytes.contains(&0) => text,
                _ => {
                    report.skipped_binary += 1;
                    continue;
                }
            };
            if holds_private_key(&bytes) {
                report.skipped_secret += 1;
                continue;
            }
            let sha256 = hex::encode(Sha256::digest(&bytes));
            let entry = match previous {
                Some(mut p) if p.sha256 == sha256 => {
                    report.unchanged += 1;
                    dirty = true;
                    p.size = meta.len();
                    p.mtime_ns = mtime_ns;
                    p
                }
                previous => {
                    dirty = true;
                    if previous.is_some() {
                        report.changed += 1;
                    } else {
                        report.added += 1;
                    }
                    report.bytes_read += bytes.len() as u64;
                    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
                    let mut chunks = chunk::chunks(text, options.chunk_chars, options.overlap_chars);
                    for c in &mut chunks {
                        c.text = redact(&c.text);
                    }
                    FileEntry { size: meta.len(), mtime_ns, sha256, chunks }
                }
            };
            files.insert(rel, entry);
        }
        report.removed = old.len();
        report.files = files.len();
        report.chunks = files.values().map(|f| f.chunks.len()).sum();
        self.stored.files = files;
        if dirty || report.removed > 0 {
            self.stored.updated_at =
                std::time::SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()).max(1);
            self.ranker = None;
            self.keys = None;
            self.decoded = None;
            self.save()?;
        }
        Ok(report)
    }

    /// Writes the index file (owner-only), replacing the old one at once.
    ///
    /// The file is a cache of what the workspace holds, so it is not synced to disk: a file
    /// that a crash left empty or cut short does not parse, and [`WorkspaceIndex::open`]
    /// rebuilds it. That keeps a disk sync off the way to a run's first model request.
    fn save(&self) -> Result<(), IndexError> {
        create_private_dir(&self.dir)?;
        let path = self.dir.join(INDEX_FILE);
        let tmp = self.dir.join(format!("{INDEX_FILE}.{}.tmp", std::process::id()));
        let bytes = serde_json::to_vec(&self.stored).map_err(|e| io(&path)(e.into()))?;
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        let mut file = open.open(&tmp).map_err(io(&tmp))?;
        file.write_all(&bytes).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))
    }

    /// The `k` chunks that match `query` best, best first (none when no term matches).
    pub fn search(&mut self, query: &str, k: usize) -> Vec<Hit> {
        let ranked = self.ranked(query);
        ranked.into_iter().take(k).collect()
    }

    /// Every chunk matching `query`, best first.
    pub fn ranked(&mut self, query: &str) -> Vec<Hit> {
        let ranked = self.keyword_ranking(query);
        self.hits(ranked)
    }

    /// The BM25 ranking of `query`: chunk numbers (index order) and scores, best first.
    fn keyword_ranking(&mut self, query: &str) -> Vec<(usize, f64)> {
        let files = &self.stored.files;
        let ranker = self.ranker.get_or_insert_with(|| {
            Bm25::new(files.iter().flat_map(|(path, f)| f.chunks.iter().map(move |c| (path.as_str(), c.text.as_str()))))
        });
        ranker.rank(query)
    }

    /// The chunks numbered in `ranked` (index order), as hits with the scores given.
    fn hits(&self, ranked: Vec<(usize, f64)>) -> Vec<Hit> {
        let chunks: Vec<(&String, &Chunk)> =
            self.stored.files.iter().flat_map(|(path, f)| f.chunks.iter().map(move |c| (path, c))).collect();
        ranked
            .into_iter()
            .filter_map(|(n, score)| {
                let (path, chunk) = chunks.get(n)?;
                Some(Hit {
                    path: (*path).clone(),
                    start_line: chunk.start_line,
                    end_line: chunk.end_line,
                    score,
                    text: chunk.text.clone(),
                })
            })
            .collect()
    }

    /// Every chunk's [`embedding_key`], in the order [`Bm25`] numbers them.
    fn chunk_keys(&mut self) -> &[String] {
        let files = &self.stored.files;
        self.keys.get_or_insert_with(|| {
            files.iter().flat_map(|(path, f)| f.chunks.iter().map(move |c| embedding_key(path, &c.text))).collect()
        })
    }

    /// The chunks that have no embedding from `model` yet, one per distinct text, in index
    /// order: what an update must embed. Every chunk, when the stored vectors came from
    /// another model.
    pub fn pending_embeddings(&mut self, model: &str) -> Vec<PendingEmbedding> {
        let held = match &self.stored.vectors {
            Some(v) if v.model == model => Some(&v.by_key),
            _ => None,
        };
        let mut seen = std::collections::BTreeSet::new();
        let mut pending = Vec::new();
        for (path, file) in &self.stored.files {
            for chunk in &file.chunks {
                let key = embedding_key(path, &chunk.text);
                if held.is_some_and(|h| h.contains_key(&key)) || !seen.insert(key.clone()) {
                    continue;
                }
                pending.push(PendingEmbedding { key, input: embedding_input(path, &chunk.text) });
            }
        }
        pending
    }

    /// Stores the vectors `embedded` (key from [`WorkspaceIndex::pending_embeddings`], vector)
    /// made by `model`, drops the vectors of chunks no longer indexed (and all of another
    /// model's), and writes the index file when anything changed. Returns the chunks that have
    /// a vector now.
    pub fn add_embeddings(&mut self, model: &str, embedded: Vec<(String, Vec<f32>)>) -> Result<usize, IndexError> {
        let live: std::collections::BTreeSet<String> = self.chunk_keys().iter().cloned().collect();
        let vectors = self.stored.vectors.get_or_insert_with(Vectors::default);
        let mut changed = false;
        if vectors.model != model {
            *vectors = Vectors { model: model.to_string(), by_key: BTreeMap::new() };
            changed = true;
        }
        let before = vectors.by_key.len();
        vectors.by_key.retain(|key, _| live.contains(key));
        changed |= vectors.by_key.len() != before;
        for (key, vector) in embedded {
            if live.contains(&key) {
                vectors.by_key.insert(key, hybrid::encode(&vector));
                changed = true;
            }
        }
        let held = live.iter().filter(|k| vectors.by_key.contains_key(*k)).count();
        self.decoded = None;
        if changed {
            self.save()?;
        }
        Ok(held)
    }

    /// Every chunk ranked for `query` by reciprocal rank fusion ([`hybrid::RRF_K`]) of its
    /// BM25 rank and the rank of its vector's cosine similarity to `query_vector` (chunks
    /// with a vector from `model` only), best first; each hit's score is the fused score. With
    /// no vector of `model` stored, the BM25 ranking.
    pub fn hybrid(&mut self, query: &str, query_vector: &[f32], model: &str) -> Vec<Hit> {
        let keyword = self.keyword_ranking(query);
        let vectors = self.chunk_vectors(model);
        if vectors.iter().all(Option::is_none) {
            return self.hits(keyword);
        }
        let mut similar: Vec<(usize, f64)> = vectors
            .iter()
            .enumerate()
            .filter_map(|(n, v)| Some((n, hybrid::cosine(v.as_deref()?, query_vector))))
            .collect();
        similar.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let semantic: Vec<usize> = similar.into_iter().map(|(n, _)| n).collect();
        let keyword: Vec<usize> = keyword.into_iter().map(|(n, _)| n).collect();
        let fused = hybrid::reciprocal_rank_fusion(&[&keyword, &semantic], vectors.len());
        self.hits(fused)
    }

    /// Every chunk's vector from `model` (index order), `None` for a chunk without one;
    /// decoded once per loaded index.
    fn chunk_vectors(&mut self, model: &str) -> &[Option<Vec<f32>>] {
        if self.decoded.as_ref().is_some_and(|(m, _)| m != model) {
            self.decoded = None;
        }
        self.chunk_keys();
        let keys = self.keys.as_deref().unwrap_or_default();
        let by_key = self.stored.vectors.as_ref().filter(|v| v.model == model).map(|v| &v.by_key);
        let (_, decoded) = self.decoded.get_or_insert_with(|| {
            let decoded = keys.iter().map(|k| by_key.and_then(|b| b.get(k)).and_then(|v| hybrid::decode(v))).collect();
            (model.to_string(), decoded)
        });
        decoded
    }

    /// The chunks that have a vector from `model`.
    pub fn embedded_chunks(&mut self, model: &str) -> usize {
        self.chunk_vectors(model).iter().filter(|v| v.is_some()).count()
    }

    /// The indexed files' workspace-relative paths, sorted.
    pub fn paths(&self) -> Vec<&str> {
        self.stored.files.keys().map(String::as_str).collect()
    }

    /// The state of the index as stored now.
    pub fn status(&self) -> Status {
        let index_bytes = std::fs::metadata(self.dir.join(INDEX_FILE)).map_or(0, |m| m.len());
        Status {
            dir: self.dir.clone(),
            workspace: self.stored.workspace.clone(),
            files: self.stored.files.len(),
            chunks: self.stored.files.values().map(|f| f.chunks.len()).sum(),
            bytes: self.stored.files.values().map(|f| f.size).sum(),
            index_bytes,
            updated_at: self.stored.updated_at,
        }
    }
}

/// Removes the index of `workspace_root` under `state_dir`; false when there was none.
pub fn clear(state_dir: &Path, workspace_root: &Path) -> Result<bool, IndexError> {
    let dir = index_dir(state_dir, workspace_root);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(&dir)(e)),
    }
}

/// Creates `dir` and its parents, the last one owner-only.
fn create_private_dir(dir: &Path) -> Result<(), IndexError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(io(dir))
}

#[cfg(test)]
mod tests;
