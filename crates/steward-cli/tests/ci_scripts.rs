//! The CI scripts' installers keep the test log readable: `.ci/chromium.sh` sends apt-get's
//! and dpkg's progress to a log file and prints one line, or the log's end when it fails.

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
