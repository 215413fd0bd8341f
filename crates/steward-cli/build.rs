//! Build script of the `steward` binary: packs its relative relocations where the C library
//! can read them packed, and in release builds places the code a run executes together.
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
//! **Hot code together.** A run executes a few thousand of the binary's 85,000 functions,
//! spread over its 40 MB of code; the kernel maps code in blocks around each page a run
//! touches, so a run ends up with over 20 MiB of code resident. `hot-functions.txt` (beside
//! this script, written by `scripts/link-order.py` from the functions scripted runs executed)
//! names them, one per line, as symbol names with the hash that ends a Rust symbol cut off
//! (`_ZN…17h`) and, in the v0 names of the standard library's own functions, `*` for each
//! crate's disambiguator (`Cs*_`), so the list outlives the rebuilds that change those hashes. In a release build
//! for Linux the binary is linked with a linker script ([`hot_code_script`]) that gathers the
//! sections of those functions (`.text.NAME`, one per function) into an output section of
//! their own, `.text.hot`, placed before `.text`: a run then maps a few MiB of code. Only the
//! placement changes, not the code. It works with LLD (Rust's linker for
//! `x86_64-unknown-linux-gnu`) and GNU ld; it is left out when the flags name another linker
//! (mold, gold), and `STEWARD_LINK_ORDER=0` turns it off. A test of the binary
//! (`tests/hot_functions.rs`) fails when the list has gone stale: when many of the functions it
//! names no longer exist.

use std::path::{Path, PathBuf};

/// The list of the functions a run executes, beside this script.
const HOT_FUNCTIONS: &str = "hot-functions.txt";

fn main() {
    println!("cargo:rerun-if-env-changed=STEWARD_LINK_ORDER");
    println!("cargo:rerun-if-env-changed=STEWARD_PACK_RELOCS");
    println!("cargo:rerun-if-changed={HOT_FUNCTIONS}");
    println!("cargo:rerun-if-changed=build.rs");
    if pack_relocations() {
        println!("cargo:rustc-link-arg-bin=steward=-Wl,-z,pack-relative-relocs");
    }
    match hot_code_script() {
        Ok(Some(script)) => println!("cargo:rustc-link-arg-bin=steward=-Wl,-T,{}", script.display()),
        Ok(None) => {}
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(1);
        }
    }
}

/// Writes the linker script that gathers the functions of [`HOT_FUNCTIONS`] into `.text.hot`
/// (see the module's documentation) into `OUT_DIR`: its path, or `None` when it does not apply
/// (not a release build for Linux, turned off, another linker, no list or an empty one).
///
/// Errors: the list or the script cannot be read or written, or `OUT_DIR` holds a comma
/// (`-Wl,` splits its argument at commas).
fn hot_code_script() -> Result<Option<PathBuf>, String> {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("PROFILE") != "release" || var("CARGO_CFG_TARGET_OS") != "linux" || var("STEWARD_LINK_ORDER") == "0" {
        return Ok(None);
    }
    // Flags that choose another linker than LLD or GNU ld: mold and gold do not take this script.
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if ["mold", "gold"].iter().any(|linker| flags.contains(linker)) {
        return Ok(None);
    }
    let list = Path::new(&var("CARGO_MANIFEST_DIR")).join(HOT_FUNCTIONS);
    let text = match std::fs::read_to_string(&list) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("cargo:warning={} is missing: the binary is linked without its hot code together", list.display());
            return Ok(None);
        }
        Err(e) => return Err(format!("{}: {e}", list.display())),
    };
    let Some(script) = linker_script(&text) else { return Ok(None) };
    let path = Path::new(&var("OUT_DIR")).join("hot-code.ld");
    if path.display().to_string().contains(',') {
        return Err(format!("{}: a path with a comma cannot be passed to the linker", path.display()));
    }
    std::fs::write(&path, script).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some(path))
}

/// The linker script for the list `text`: two section patterns per name, `.text.NAME*` and
/// `.text.unlikely.NAME*` (a `*` in the name stands for a v0 Rust name's crate disambiguator or
/// back reference, or a legacy one's hash), all in one output section inserted before `.text`. Lines that are empty, start with `#`, or hold a character no line of the list has
/// (anything but ASCII letters, digits, `_`, `.`, `$` and `*`) are skipped, so no line can add
/// other commands to the script. `None` when no name is left.
fn linker_script(text: &str) -> Option<String> {
    let valid = |name: &str| name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$' | b'*'));
    let names: Vec<&str> =
        text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#') && valid(l)).collect();
    if names.is_empty() {
        return None;
    }
    let mut script = String::with_capacity(names.iter().map(|n| n.len() + 12).sum::<usize>() + 128);
    script.push_str("SECTIONS\n{\n  .text.hot :\n  {\n    *(\n");
    for name in names {
        // LLVM names the section of a function it judges cold `.text.unlikely.NAME`, and adds
        // `.llvm.N` to a local function it makes visible to other units.
        script.push_str(&format!("      .text.{name}*\n      .text.unlikely.{name}*\n"));
    }
    script.push_str("    )\n  }\n}\nINSERT BEFORE .text;\n");
    Some(script)
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
