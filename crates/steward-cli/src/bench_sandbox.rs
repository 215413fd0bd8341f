//! `steward bench`: the cost of one sandboxed command step (`cat` of a workspace file through
//! `steward_sandbox::run`, every protection this machine enforces included), against the same
//! `cat` started without a sandbox; the difference is the sandbox's setup cost. The workspace
//! holds a `.env`, so a file mask is made every step, and the walk that finds secret paths
//! (done by the tools before each step) is timed on its own, here and on the current folder.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use steward_core::tools::sandbox_paths::sandbox_paths;
use steward_sandbox::ExecRequest;
use tokio_util::sync::CancellationToken;

/// Steps measured per line.
const STEPS: u32 = 40;

/// Prints the wall time per sandboxed `cat` step, per plain `cat` spawn, and the difference.
pub async fn bench_sandbox() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "hello from the workspace\n")?;
    std::fs::write(dir.path().join(".env"), "TOKEN=bench-secret-value\n")?;
    let file_arg = file.display().to_string();
    let paths = sandbox_paths(dir.path()).map_err(anyhow::Error::msg)?;
    let request = ExecRequest {
        mask: paths.mask,
        read_only: paths.read_only,
        ..ExecRequest::new(vec!["cat".into(), file_arg.clone()], dir.path().to_path_buf())
    };

    // One warm-up each (page cache, first namespace probes).
    let warm = steward_sandbox::run(request.clone(), CancellationToken::new()).await?;
    let profile = warm.profile;
    plain_cat(&file_arg).await?;

    let started = Instant::now();
    for _ in 0..STEPS {
        let out = steward_sandbox::run(request.clone(), CancellationToken::new()).await?;
        if out.exit_code != Some(0) {
            bail!("the sandboxed `cat` failed: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let sandboxed = started.elapsed() / STEPS;
    let started = Instant::now();
    for _ in 0..STEPS {
        plain_cat(&file_arg).await?;
    }
    let plain = started.elapsed() / STEPS;
    println!(
        "sandboxed `cat` step ({profile}): {:.2} ms each; plain `cat` spawn: {:.2} ms; sandbox setup alone: {:.2} ms",
        ms(sandboxed),
        ms(plain),
        ms(sandboxed.saturating_sub(plain))
    );
    for (label, root) in
        [("the bench workspace", dir.path().to_path_buf()), ("the current folder", std::env::current_dir()?)]
    {
        let started = Instant::now();
        let walked = sandbox_paths(&root);
        let took = started.elapsed();
        match walked {
            Ok(paths) => println!(
                "secret-path walk of {label} ({}): {:.2} ms ({} masked, {} read-only)",
                root.display(),
                ms(took),
                paths.mask.len(),
                paths.read_only.len()
            ),
            Err(e) => println!("secret-path walk of {label}: {e}"),
        }
    }
    Ok(())
}

async fn plain_cat(file: &str) -> Result<()> {
    let status = tokio::process::Command::new("cat")
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .await?;
    if !status.status.success() {
        bail!("plain `cat` failed");
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
