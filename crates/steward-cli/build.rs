//! Build script of the `steward` binary: packs its relative relocations where the C library
//! can read them packed, and lays out its code in a recorded order when asked.
//!
//! **Packed relocations.** Most of the binary's dynamic relocations (about 73,000) are
//! relative ones, which the dynamic loader applies at every start. As `Elf64_Rela` entries
//! they fill a 1.7 MB `.rela.dyn` section that each start reads (and so maps, about 1.7 MB of
//! resident set); packed as `DT_RELR` (`-z pack-relative-relocs`, LLD 15 and GNU ld 2.38)
//! they take 21 KB. The C library must know the format: glibc 2.36 and later, which the
//! binary then names as a required version (`GLIBC_ABI_DT_RELR`), so that an older glibc
//! refuses to start it with that message instead of running it unrelocated. It is used when
//! building for Linux with glibc on a machine whose own glibc (`getconf GNU_LIBC_VERSION`) is
//! 2.36 or later, and not when cross-compiling; `STEWARD_PACK_RELOCS=0` turns it off (for a
//! binary meant for machines with an older glibc).
//!
//! **Code order.** When `STEWARD_LINK_ORDER` names a file of symbol names, one per line (written by
//! `scripts/link-order.py` from the functions a scripted run executed), the binary is linked with
//! LLD's `--symbol-ordering-file`: those functions are placed first and next to each other in
//! `.text`, so a run maps a few MiB of code instead of pages spread over the whole binary. Names
//! the file holds that the binary lacks are ignored (`--no-warn-symbol-ordering`). Without the
//! variable nothing changes. LLD is the linker Rust uses for `x86_64-unknown-linux-gnu` by default;
//! another linker rejects the option and the link fails with its message.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=STEWARD_LINK_ORDER");
    println!("cargo:rerun-if-env-changed=STEWARD_PACK_RELOCS");
    if pack_relocations() {
        println!("cargo:rustc-link-arg-bin=steward=-Wl,-z,pack-relative-relocs");
    }
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

/// Whether to link with `-z pack-relative-relocs` (see the module's documentation).
fn pack_relocations() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("STEWARD_PACK_RELOCS") == "0" {
        return false;
    }
    let native = var("HOST") == var("TARGET");
    if !native || var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return false;
    }
    // `glibc 2.36`
    let Ok(out) = std::process::Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().strip_prefix("glibc ").unwrap_or_default();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    matches!((parts.next(), parts.next()), (Some(Some(major)), Some(Some(minor))) if (major, minor) >= (2, 36))
}
