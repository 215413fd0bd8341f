//! The CI scripts' installers keep the test log readable: `.ci/chromium.sh` sends apt-get's
//! and dpkg's progress to a log file and prints one line, or the log's end when it fails, and
//! `.ci/peers.sh` does the same for each of its phases.

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/chromium.sh")
}

/// A fake `apt-get` in `bin` printing `lines` lines per call; `install` creates an executable
/// `chromium` at `$FAKE_CHROMIUM` unless `fail` (then it exits 100).
fn fake_apt(bin: &Path, lines: u32, fail: bool) {
    std::fs::create_dir_all(bin).unwrap();
    let install = if fail {
        "echo 'E: Unable to locate package chromium'; exit 100".to_string()
    } else {
        "printf '#!/bin/sh\\necho Chromium 1.2.3\\n' > \"$FAKE_CHROMIUM\"; chmod +x \"$FAKE_CHROMIUM\"".to_string()
    };
    let script = format!(
        "#!/bin/sh\ni=0\nwhile [ $i -lt {lines} ]; do echo \"Unpacking libfoo$i (1.0) ...\"; i=$((i+1)); done\n\
         if [ \"$1\" = install ] || [ \"$2\" = install ] || [ \"$3\" = install ] || [ \"$4\" = install ]; then {install}; fi\n"
    );
    let path = bin.join("apt-get");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn install(dir: &Path, bin: &Path) -> std::process::Output {
    let chromium = dir.join("chromium");
    Command::new("bash")
        .args(["-c", "source \"$1\"; install_chromium \"$2\" \"$3\"", "_"])
        .arg(chromium_script())
        .arg(&chromium)
        .arg(dir.join("apt.log"))
        .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()))
        .env("FAKE_CHROMIUM", &chromium)
        .output()
        .unwrap()
}

#[test]
fn chromium_install_output_goes_to_a_log_file_and_the_test_log_gets_one_line() {
    let dir = tempfile::TempDir::new().unwrap();
    let bin = dir.path().join("bin");
    fake_apt(&bin, 110, false);
    let out = install(dir.path(), &bin);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(out.stdout.is_empty(), "nothing on stdout (peers.sh prints export lines there)");
    assert!(!err.contains("Unpacking"), "{err}");
    assert!(err.lines().count() <= 2, "{err}");
    assert!(err.contains("chromium installed: Chromium 1.2.3"), "{err}");
    let log = std::fs::read_to_string(dir.path().join("apt.log")).unwrap();
    assert_eq!(log.lines().filter(|l| l.starts_with("Unpacking")).count(), 220, "update and install both logged");
}

#[test]
fn a_failed_chromium_install_shows_the_end_of_its_log_and_fails() {
    let dir = tempfile::TempDir::new().unwrap();
    let bin = dir.path().join("bin");
    fake_apt(&bin, 110, true);
    let out = install(dir.path(), &bin);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("E: Unable to locate package chromium"), "{err}");
    assert!(err.contains("ERROR: could not install Debian chromium"), "{err}");
    assert!(err.lines().count() <= 23, "only the log's end is shown: {err}");
}

/// A phase of `.ci/peers.sh` names what it does, how long it takes and its log in one line;
/// the installer's output goes to that log, and when it fails only the log's end is shown.
#[test]
fn a_peers_phase_prints_one_line_with_its_log_and_the_log_s_end_when_it_fails() {
    let dir = tempfile::TempDir::new().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // `python3 -m venv` of the first phase (llama-cpp-python): a compiler's worth of output, then
    // a failure.
    let python = bin.join("python3");
    std::fs::write(
        &python,
        "#!/bin/sh\ni=0\nwhile [ $i -lt 500 ]; do echo \"[ $i%] Building CXX object ggml.cpp.o\"; i=$((i+1)); done\n\
         echo 'error: compiler exploded' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = dir.path().join("cache");
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/peers.sh"))
        .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()))
        .env("STEWARD_CI_CACHE", &cache)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(out.stdout.is_empty(), "no export lines after a failure: {}", String::from_utf8_lossy(&out.stdout));
    let log = cache.join("logs/llama-cpp-python.log");
    let first = err.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!(
            "[peers] building llama-cpp-python 0.3.36 from source (about 11 min on 2 idle cores, 20 when busy; log: {})",
            log.display()
        ),
        "{err}"
    );
    assert!(err.contains("[peers]   error: compiler exploded"), "the log's end: {err}");
    assert!(err.contains("ERROR: the phase failed (exit 1)") && err.contains(&log.display().to_string()), "{err}");
    assert!(err.lines().count() <= 33, "only the log's end is shown: {err}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.lines().filter(|l| l.contains("Building CXX")).count(), 500, "{logged}");
}
