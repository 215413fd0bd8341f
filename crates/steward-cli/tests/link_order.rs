//! `scripts/link-order.py` reads callgrind's outputs correctly: the functions of the binary it
//! names, each once, in the order they first appear, and none of another object's.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// The lines `expr` (Python, over `module`, `scripts/link-order.py` loaded, and `args`, the
/// strings given) prints, one per element of the list it returns.
fn call_script(expr: &str, args: &[&OsStr]) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/link-order.py");
    let program = format!(
        "import importlib.util, sys\n\
         spec = importlib.util.spec_from_file_location('link_order', sys.argv[1])\n\
         module = importlib.util.module_from_spec(spec)\n\
         spec.loader.exec_module(module)\n\
         args = sys.argv[2:]\n\
         print('\\n'.join({expr}))"
    );
    let output = Command::new("python3").arg("-c").arg(program).arg(&script).args(args).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_string).collect()
}

/// Two processes' outputs in callgrind's compressed format: objects and functions get a number
/// with their name the first time (`ob=`, `cob=`, `fn=`, `cfn=`) and the number alone later.
#[test]
fn executed_functions_are_the_binarys_own_in_first_seen_order() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("steward");
    std::fs::write(&binary, b"").unwrap();
    let bin = binary.display();
    let first = format!(
        "events: Ir\nob=(1) /usr/lib/libc.so.6\nfn=(1) memcpy\n1 5\n\
         ob=(2) {bin}\nfn=(2) _ZN4main17h01E\n1 3\ncob=(1)\ncfn=(1)\ncalls=1 0\n1 1\n\
         cfn=(3) _ZN5later17h02E\ncalls=1 0\n1 1\n\
         fn=(4) _ZN6second17h03E\n1 2\n\
         ob=(1)\nfn=(5) free\n1 1\n\
         ob=(2)\nfn=(3)\n1 4\nfn=(2)\n1 1\n"
    );
    // A forked child: its own numbering, one function already seen and one new.
    let second = format!("events: Ir\nob=(7) {bin}\nfn=(9) _ZN6second17h03E\n1 1\nfn=(8) _ZN5child17h04E\n1 1\n");
    std::fs::write(dir.path().join("callgrind.100.out"), first).unwrap();
    std::fs::write(dir.path().join("callgrind.101.out"), second).unwrap();
    let names = call_script("module.executed_functions(*args)", &[dir.path().as_os_str(), binary.as_os_str()]);
    assert_eq!(names, ["_ZN4main17h01E", "_ZN6second17h03E", "_ZN5later17h02E", "_ZN5child17h04E"]);
}

/// The list's lines: v0 Rust names with each crate disambiguator and back reference left open
/// and LLVM's `.llvm.N` suffix cut, legacy ones cut after `17h`, C names as they are; each
/// once, and nothing a linker script could read as a command.
#[test]
fn listed_names_leave_out_what_differs_between_builds() {
    let functions = [
        "_RNvMsb_NtCs56tBIkDYNse_7globset4globNtB5_6Tokens13to_regex_with",
        "_RNvMs4_NtCslNYArtu3iFV_5alloc7raw_vecNtB5_11RawVecInner11finish_growCs1JiBQD6XY7e_12steward_core.llvm.3051203521392802838",
        "_RNvMs4_NtCsAAAAAAAAAAA_5alloc7raw_vecNtB6_11RawVecInner11finish_growCsBBBBBBBBBB_12steward_core.llvm.17",
        "_ZN4core3fmt5write17h0123456789abcdefE",
        "sqlite3VdbeExec",
        "0x0000000000d46160 }",
    ];
    let args: Vec<&OsStr> = functions.iter().map(OsStr::new).collect();
    let listed = call_script("module.listed_names(args)", &args);
    assert_eq!(
        listed,
        [
            "_RNvMsb_NtCs*_7globset4globNtB*_6Tokens13to_regex_with",
            "_RNvMs4_NtCs*_5alloc7raw_vecNtB*_11RawVecInner11finish_growCs*_12steward_core",
            "_ZN4core3fmt5write17h",
            "sqlite3VdbeExec",
        ]
    );
}
