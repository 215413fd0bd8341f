//! Build script of the `steward` binary: lays out its code in a recorded order when asked.
//!
//! When `STEWARD_LINK_ORDER` names a file of symbol names, one per line (written by
//! `scripts/link-order.py` from the functions a scripted run executed), the binary is linked
//! with LLD's `--symbol-ordering-file`: those functions are placed first and next to each
//! other in `.text`, so a run maps a few MiB of code instead of pages spread over the whole
//! binary. Names the file holds that the binary lacks are ignored
//! (`--no-warn-symbol-ordering`). Without the variable nothing changes. LLD is the linker
//! Rust uses for `x86_64-unknown-linux-gnu` by default; another linker rejects the option and
//! the link fails with its message.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=STEWARD_LINK_ORDER");
    let Some(path) = std::env::var_os("STEWARD_LINK_ORDER").filter(|p| !p.is_empty()) else {
        return;
    };
    let given = PathBuf::from(path);
    // The linker runs in another folder than this script: hand it the absolute path.
    let path = match std::fs::canonicalize(&given) {
        Ok(path) if path.is_file() => path,
        _ => {
            eprintln!("STEWARD_LINK_ORDER names {}, which is not a file", given.display());
            std::process::exit(1);
        }
    };
    let shown = path.display().to_string();
    // `-Wl,` splits its argument at commas.
    if shown.contains(',') {
        eprintln!("STEWARD_LINK_ORDER names {shown}: a path with a comma cannot be passed to the linker");
        std::process::exit(1);
    }
    println!("cargo:rerun-if-changed={shown}");
    println!("cargo:rustc-link-arg-bin=steward=-Wl,--symbol-ordering-file={shown}");
    println!("cargo:rustc-link-arg-bin=steward=-Wl,--no-warn-symbol-ordering");
}
