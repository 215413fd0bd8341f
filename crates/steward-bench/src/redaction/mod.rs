//! `steward-bench redaction`: the secret redactor every tool output passes, on a realistic
//! corpus, against gitleaks on the same corpus.
//!
//! The corpus ([`corpus`]): the text files of the `--source` folders (minified bundles and
//! crate sources, as `scripts/bench-redaction.sh` gathers them) until it is `--corpus-mb`
//! large, generated logs, and `--per-kind` secrets of each of [`corpus::KINDS`], kinds that
//! gitleaks' default rules detect, planted with a fixed seed.
//!
//! Steward: every file is one tool output, redacted on its own by one
//! `Redactor::from_env_vars` over an environment with provider keys (as `steward run` builds
//! it); MB/s = corpus bytes / the median time of `--passes` passes, one thread. A planted
//! secret counts as found when none of its 12-character pieces is left in the redacted file.
//!
//! gitleaks: `gitleaks dir` over the corpus written to a folder, default rules, a JSON
//! report; MB/s = corpus bytes / the median wall time of the passes (it scans files on every
//! core). A planted secret counts as found when a finding in its file holds its middle piece.
//! gitleaks' other findings (in the real sources) are reported with how many of them Steward
//! redacts too.

mod corpus;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use steward_policy::Redactor;

use corpus::{Corpus, Part};

/// The throughput target: this many times gitleaks' …
const TARGET_RATIO: f64 = 5.0;

/// `steward-bench redaction` options.
#[derive(Args)]
pub struct BenchRedactionArgs {
    /// A folder whose text files go into the corpus (repeatable; taken in order, each one's
    /// files sorted by path, until the corpus is full).
    #[arg(long = "source", required = true)]
    sources: Vec<PathBuf>,
    /// Size of the corpus in MB (10^6 bytes), the generated logs included.
    #[arg(long, default_value_t = 52.0)]
    corpus_mb: f64,
    /// Generated logs in the corpus, in MB.
    #[arg(long, default_value_t = 10.0)]
    logs_mb: f64,
    /// Secrets planted per kind.
    #[arg(long, default_value_t = 12)]
    per_kind: usize,
    /// Passes over the corpus per measurement (the median is reported; at least 1).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    passes: u32,
    /// The gitleaks binary to compare with (`scripts/bench-redaction.sh` installs 8.30.1);
    /// without it only Steward is measured.
    #[arg(long)]
    gitleaks: Option<PathBuf>,
    /// Write the corpus to this folder and keep it (default: a temporary folder).
    #[arg(long)]
    keep_corpus: Option<PathBuf>,
}

/// One gitleaks finding (the fields used).
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Finding {
    #[serde(rename = "RuleID")]
    rule_id: String,
    secret: String,
    file: String,
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Runs the benchmark and prints what it measured.
pub async fn run(args: BenchRedactionArgs) -> Result<u8> {
    tokio::task::spawn_blocking(move || measure(&args)).await?
}

fn measure(args: &BenchRedactionArgs) -> Result<u8> {
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let total = (args.corpus_mb * 1e6) as usize;
    let logs = ((args.logs_mb * 1e6) as usize).min(total);
    let corpus = corpus::build(&args.sources, total, logs, args.per_kind)?;
    let bytes = corpus.bytes();
    let by_part = |part: Part| corpus.files.iter().filter(|f| f.part == part).map(|f| f.text.len()).sum::<usize>();
    println!(
        "steward-bench redaction ({profile} build): corpus of {} files, {:.2} MB: {:.2} MB minified bundles, {:.2} MB \
         source files, {:.2} MB generated logs; {} secrets planted ({} of each of {} kinds gitleaks' default rules \
         detect)",
        corpus.files.len(),
        mb(bytes),
        mb(by_part(Part::Bundle)),
        mb(by_part(Part::Source)),
        mb(by_part(Part::Log)),
        corpus.planted.len(),
        args.per_kind,
        corpus::KINDS.len()
    );

    // Steward.
    let (steward_time, part_times, redacted) = redact_passes(&corpus, args.passes);
    let steward_mbs = mb(bytes) / steward_time.as_secs_f64();
    let found_by_steward: Vec<bool> = corpus
        .planted
        .iter()
        .map(|p| p.probes.iter().all(|probe| !redacted[p.file].contains(probe.as_str())))
        .collect();
    let steward_recall = found_by_steward.iter().filter(|f| **f).count();
    let parts: Vec<String> = [Part::Bundle, Part::Source, Part::Log]
        .iter()
        .filter_map(|part| {
            let time = median(part_times.get(part.name())?.clone());
            Some(format!("{} {:.0} MB/s", part.name(), mb(by_part(*part)) / time.as_secs_f64()))
        })
        .collect();
    println!(
        "redaction: Steward {steward_mbs:.1} MB/s ({:.3} s per pass, median of {}; one thread, each file redacted \
         as one tool output; {}); recall {steward_recall}/{} planted secrets",
        steward_time.as_secs_f64(),
        args.passes,
        parts.join(", "),
        corpus.planted.len()
    );
    print_missed("Steward", &corpus, &found_by_steward);

    let Some(gitleaks) = &args.gitleaks else {
        println!("redaction: gitleaks not measured (no --gitleaks; scripts/bench-redaction.sh installs it)");
        return Ok(0);
    };
    let kept;
    let dir = match &args.keep_corpus {
        Some(dir) => dir.clone(),
        None => {
            kept = tempfile::tempdir()?;
            kept.path().to_path_buf()
        }
    };
    let corpus_dir = dir.join("corpus");
    if corpus_dir.exists() {
        std::fs::remove_dir_all(&corpus_dir)?;
    }
    corpus.write(&corpus_dir)?;
    let report = dir.join("gitleaks.json");
    let version = Command::new(gitleaks).arg("version").output().context("running gitleaks")?;
    let mut times = Vec::new();
    let cpu_before = crate::rusage::cpu_time(libc::RUSAGE_CHILDREN);
    for _ in 0..args.passes {
        let started = Instant::now();
        let status = Command::new(gitleaks)
            .args(["dir", ".", "--no-banner", "--log-level", "error", "--exit-code", "0", "--report-format", "json"])
            .arg("--report-path")
            .arg(&report)
            .current_dir(&corpus_dir)
            .status()
            .context("running gitleaks")?;
        times.push(started.elapsed());
        if !status.success() {
            bail!("gitleaks failed: {status}");
        }
    }
    let gitleaks_cpu = (crate::rusage::cpu_time(libc::RUSAGE_CHILDREN).saturating_sub(cpu_before)).as_secs_f64()
        / f64::from(args.passes);
    let gitleaks_time = median(times);
    let gitleaks_mbs = mb(bytes) / gitleaks_time.as_secs_f64();
    let findings: Vec<Finding> = serde_json::from_slice(&std::fs::read(&report)?).context("gitleaks' report")?;
    let index: HashMap<&str, usize> = corpus.files.iter().enumerate().map(|(i, f)| (f.path.as_str(), i)).collect();
    let file_of = |f: &Finding| index.get(f.file.trim_start_matches("./")).copied();
    let found_by_gitleaks: Vec<bool> = corpus
        .planted
        .iter()
        .map(|p| findings.iter().any(|f| file_of(f) == Some(p.file) && f.secret.contains(p.probes[0].as_str())))
        .collect();
    let gitleaks_recall = found_by_gitleaks.iter().filter(|f| **f).count();
    println!(
        "redaction: gitleaks {} {gitleaks_mbs:.1} MB/s ({:.3} s wall per pass, median of {}; {:.2} s CPU per pass \
         on {} CPUs; `gitleaks dir`, default rules, JSON report); recall {gitleaks_recall}/{} planted secrets",
        String::from_utf8_lossy(&version.stdout).trim(),
        gitleaks_time.as_secs_f64(),
        args.passes,
        gitleaks_cpu,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        corpus.planted.len()
    );
    print_missed("gitleaks", &corpus, &found_by_gitleaks);
    // gitleaks' findings that are not planted secrets: does Steward redact them too?
    let planted_hit = |f: &Finding| {
        corpus
            .planted
            .iter()
            .any(|p| file_of(f) == Some(p.file) && p.probes.iter().any(|x| f.secret.contains(x.as_str())))
    };
    let others: Vec<&Finding> = findings.iter().filter(|f| !planted_hit(f)).collect();
    let covered = others.iter().filter(|f| file_of(f).is_some_and(|i| !redacted[i].contains(f.secret.trim()))).count();
    let mut rules: Vec<&str> = others.iter().map(|f| f.rule_id.as_str()).collect();
    rules.sort();
    rules.dedup();
    println!(
        "redaction: gitleaks' {} other findings in the real files (rules: {}): Steward redacts {covered} of them",
        others.len(),
        if rules.is_empty() { "none".to_string() } else { rules.join(", ") }
    );
    let ratio = steward_mbs / gitleaks_mbs;
    let met = ratio >= TARGET_RATIO && steward_recall >= gitleaks_recall;
    println!(
        "redaction: target >= {TARGET_RATIO:.0}x gitleaks' MB/s at recall >= gitleaks': {} ({ratio:.1}x, recall \
         {steward_recall} vs {gitleaks_recall})",
        if met { "met" } else { "MISSED" }
    );
    println!(
        "caveats: one machine, shared with other work; gitleaks scans files on every CPU, Steward redacts on one; \
         both read the corpus from memory or page cache; the planted secrets are random values in formats gitleaks \
         detects, not real keys"
    );
    Ok(0)
}

/// Redacts every file of `corpus` as one tool output, `passes` times, on this thread: the
/// median time of a pass, each part's times per pass (by part name), and the first pass's
/// redacted texts (in the corpus' file order).
fn redact_passes(corpus: &Corpus, passes: u32) -> (Duration, HashMap<&'static str, Vec<Duration>>, Vec<String>) {
    let redactor = Redactor::from_env_vars(bench_environment());
    let mut times = Vec::new();
    let mut part_times: HashMap<&'static str, Vec<Duration>> = HashMap::new();
    let mut redacted = Vec::new();
    for pass in 0..passes {
        let mut parts: HashMap<&'static str, Duration> = HashMap::new();
        let mut out = Vec::with_capacity(corpus.files.len());
        let started = Instant::now();
        for file in &corpus.files {
            let one = Instant::now();
            let text = redactor.redact(&file.text);
            *parts.entry(file.part.name()).or_default() += one.elapsed();
            out.push(text);
        }
        times.push(started.elapsed());
        for (part, time) in parts {
            part_times.entry(part).or_default().push(time);
        }
        if pass == 0 {
            redacted = out;
        }
    }
    (median(times), part_times, redacted)
}

/// The planted secrets a scanner missed, counted by kind.
fn print_missed(who: &str, corpus: &Corpus, found: &[bool]) {
    let mut missed: Vec<(&str, usize)> = Vec::new();
    for (planted, found) in corpus.planted.iter().zip(found) {
        if *found {
            continue;
        }
        match missed.iter_mut().find(|(k, _)| *k == planted.kind) {
            Some((_, n)) => *n += 1,
            None => missed.push((planted.kind, 1)),
        }
    }
    if !missed.is_empty() {
        let list: Vec<String> = missed.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!("redaction: {who} missed {}", list.join(", "));
    }
}

/// The environment `steward run` would build its redactor from: a few provider keys (random
/// values, none of them in the corpus) and ordinary variables.
fn bench_environment() -> Vec<(String, String)> {
    let value = |n: u64| format!("bench-{:032x}", n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    vec![
        ("OPENAI_API_KEY".into(), value(1)),
        ("ANTHROPIC_API_KEY".into(), value(2)),
        ("GITHUB_TOKEN".into(), value(3)),
        ("DATABASE_PASSWORD".into(), value(4)),
        ("HOME".into(), "/home/bench".into()),
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
    ]
}
