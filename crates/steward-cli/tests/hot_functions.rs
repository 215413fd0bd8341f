//! The list of the functions a run executes (`hot-functions.txt`, which release builds place
//! together, see `build.rs`) still names the binary's functions: when code is renamed, moved
//! or removed, names of the list stop matching and the release binary's hot code spreads out
//! again. Checked against this build of the binary, whose symbol names are the release build's
//! but for the hash that ends a Rust name, which the list leaves out.

use std::collections::HashSet;

/// Least share of the list's names this build must still have. A list just recorded finds
/// about 89 % of its names here: this unoptimized build leaves out some instances of generic
/// functions the release build has, or puts them elsewhere. A list that found 84 % (recorded
/// before code moved into new crates) left a run's peak resident set at 23.4 MiB instead of
/// 16.8 with the list recorded again, so 86 % is the least: renaming or moving a few percent
/// of a run's functions calls for recording the list again.
const LEAST_FOUND: f64 = 0.86;

/// The names of the list: its lines but empty ones and `#` comments.
fn listed() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/hot-functions.txt");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
}

/// A symbol name as the list holds it: a v0 Rust name (`_R…`) with each crate disambiguator
/// (`Cs` + base-62 digits + `_`) as `Cs*_` and then each back reference (`B` + base-62 digits +
/// `_`) as `B*_`; a legacy Rust name cut after the `17h` that starts its hash (`_ZN…17h` + 16
/// hex digits + `E`, then maybe a suffix such as `.llvm.123`); any other name as it is.
fn listed_form(symbol: &str) -> String {
    // A suffix LLVM adds to a local function it makes visible (`.llvm.123`) is left out.
    let symbol = match symbol.rfind(".llvm.") {
        Some(at) if symbol[at + 6..].bytes().all(|b| b.is_ascii_digit()) => &symbol[..at],
        _ => symbol,
    };
    if symbol.starts_with("_ZN")
        && let Some(at) = symbol.rfind("17h")
    {
        let hash = &symbol.as_bytes()[at + 3..];
        if hash.len() > 16 && hash[..16].iter().all(u8::is_ascii_hexdigit) && hash[16] == b'E' {
            return symbol[..at + 3].to_string();
        }
    }
    if !symbol.starts_with("_R") {
        return symbol.to_string();
    }
    wildcard(&wildcard(symbol, "Cs", 1), "B", 0)
}

/// `name` with every `tag` followed by at least `least` ASCII letters or digits and a `_`
/// written as `tag*_`, left to right.
fn wildcard(name: &str, tag: &str, least: usize) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find(tag) {
        let start = at + tag.len();
        let digits = rest[start..].bytes().take_while(u8::is_ascii_alphanumeric).count();
        let end = start + digits;
        if digits >= least && rest.as_bytes().get(end) == Some(&b'_') {
            out.push_str(&rest[..at]);
            out.push_str(tag);
            out.push_str("*_");
            rest = &rest[end + 1..];
        } else {
            out.push_str(&rest[..start]);
            rest = &rest[start..];
        }
    }
    out.push_str(rest);
    out
}

/// A listed name as this test compares it with this build's: without the crate a generic
/// function was instantiated in (the trailing `Cs*_` + length + name of a v0 name), which a
/// build that shares generic instances between crates (this one, unoptimized) picks
/// differently, and without the suffix GCC gives a copy it made of a C function (`.part.0`,
/// `.constprop.0`, `.isra.0`, `.cold`).
fn comparable(name: &str) -> &str {
    let name = match name.find(['.']) {
        Some(at) if !name.starts_with("_R") && !name.starts_with("_ZN") => &name[..at],
        _ => name,
    };
    if !name.starts_with("_R") {
        return name;
    }
    let Some(at) = name.rfind("Cs*_") else { return name };
    let tail = &name[at + 4..];
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    match tail[..digits].parse::<usize>() {
        Ok(len) if digits > 0 && tail.len() == digits + len && at > 2 => &name[..at],
        _ => name,
    }
}

/// Every NUL-terminated string of the binary that could be a symbol name, in its listed form:
/// the symbol table's names are among them.
fn binary_names() -> HashSet<String> {
    let path = env!("CARGO_BIN_EXE_steward");
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes
        .split(|b| *b == 0)
        .filter(|s| s.len() > 1 && s.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$')))
        .filter_map(|s| std::str::from_utf8(s).ok())
        .map(|s| comparable(&listed_form(s)).to_string())
        .collect()
}

#[test]
fn a_rust_name_is_listed_without_its_hash() {
    assert_eq!(listed_form("_ZN4core3fmt5write17h0123456789abcdefE"), "_ZN4core3fmt5write17h");
    assert_eq!(listed_form("_ZN4core3fmt5write17h0123456789abcdefE.llvm.42"), "_ZN4core3fmt5write17h");
    assert_eq!(listed_form("_ZN3foo17h0123E"), "_ZN3foo17h0123E", "no hash of 16 digits");
    assert_eq!(listed_form("sqlite3VdbeExec"), "sqlite3VdbeExec");
    assert_eq!(comparable("sqlite3FindCollSeq.part.0"), "sqlite3FindCollSeq");
    assert_eq!(
        comparable("_RINvNtCs*_4core3ptr13drop_in_placeNtNtNtCs*_3std2io5error5ErrorECs*_12steward_core"),
        "_RINvNtCs*_4core3ptr13drop_in_placeNtNtNtCs*_3std2io5error5ErrorE"
    );
    assert_eq!(comparable("_RNvCs*_7steward4main"), "_RNvCs*_7steward4main", "a crate root, not a suffix");
    assert_eq!(listed_form("_RNvNtCsgEmfK2I1SDS_4core3fmt5write"), "_RNvNtCs*_4core3fmt5write");
    assert_eq!(
        listed_form("_RNvXs3_NtNtNtCsjrHSEGnQ3l9_3std3sys5stdio4unixNtB5_6StderrNtNtBb_2io5Write5write"),
        "_RNvXs3_NtNtNtCs*_3std3sys5stdio4unixNtB*_6StderrNtNtB*_2io5Write5write"
    );
}

#[test]
fn the_hot_function_list_still_names_the_binarys_functions() {
    let names = listed();
    assert!(names.len() >= 1000, "hot-functions.txt names only {} functions", names.len());
    let present = binary_names();
    let missing: Vec<&String> = names.iter().filter(|n| !present.contains(comparable(n))).collect();
    let found = 1.0 - missing.len() as f64 / names.len() as f64;
    assert!(
        found >= LEAST_FOUND,
        "{} of the {} functions hot-functions.txt names are not in the binary ({:.1} % found, at least {:.0} % \
         wanted): record the list again with scripts/link-order.py. First missing: {:?}",
        missing.len(),
        names.len(),
        found * 100.0,
        LEAST_FOUND * 100.0,
        missing.iter().take(10).collect::<Vec<_>>()
    );
}
