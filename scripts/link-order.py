#!/usr/bin/env python3
"""Record the functions a run of Steward executes, so that release builds place them together.

A run of `steward` executes about 4,500 of the binary's 85,000 functions, some 4.6 MB of its
40 MB of code, but they lie spread over the whole `.text` section. The kernel maps a binary's
code in blocks around each page that is touched (the file's page-cache folios, or a 64 KiB
window), so a run ends up with over 20 MiB of code resident. Placed next to each other, the
executed functions fit in a few MiB.

This script:
  1. builds the release binary without the hot code gathered (`STEWARD_LINK_ORDER=0 cargo
     build --release -p steward-cli`): Valgrind attributes code outside `.text` to no object;
  2. runs it under Valgrind's callgrind (which records every function that executes, in the
     process and in the children it forks) through `scripts/compare-harness.py`: a scripted
     model server on loopback, 3 file-read steps and 3 sandboxed `cat` steps (which Valgrind
     3.19 may make fail: it does not know Landlock's system calls, so the sandbox refuses to run
     a program it cannot confine; Steward's side of the call is recorded all the same);
  3. writes the names of the binary's executed functions, in the order callgrind first
     reports them, to `crates/steward-cli/hot-functions.txt`: Rust names (v0 mangling, set in
     `.cargo/config.toml`) with `*` for each crate's disambiguator and back reference, which
     change with the compiler, the dependencies and the build's settings, so the list outlives
     them;
  4. builds the release binary again, which `crates/steward-cli/build.rs` links with those
     functions gathered in a section of their own (`.text.hot`).

Only the link changes: the same functions, compiled the same way, in another order. Functions
the recorded runs did not execute are placed after the others and work as before, only their
first use maps more of the file. Commit the new list: every release build uses it.

Needs: cargo, Python 3 (standard library only), valgrind, git (for the test workspaces).
Usage: scripts/link-order.py [--target-dir DIR] [--keep DIR]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message: str) -> None:
    print(f"link-order: {message}", file=sys.stderr)
    sys.exit(1)


HOT_FUNCTIONS = os.path.join(ROOT, "crates", "steward-cli", "hot-functions.txt")

# A Rust symbol in the legacy mangling: the path, then `17h`, 16 hex digits of hash and `E`,
# and possibly a suffix LLVM added (`.llvm.123`).
RUST_SYMBOL = re.compile(r"^(_ZN[A-Za-z0-9_.$]*17h)[0-9a-f]{16}E(\.[A-Za-z0-9_.$]*)?$")
# In a Rust symbol of the v0 mangling (.cargo/config.toml): a crate's disambiguator, a hash of
# the crate's build that changes with the compiler, the lock file and the profile, and a back
# reference, an offset into the name that moves when a disambiguator's length does.
V0_CRATE = re.compile(r"Cs[0-9A-Za-z]+_")
V0_BACKREF = re.compile(r"B[0-9A-Za-z]*_")
LLVM_SUFFIX = re.compile(r"\.llvm\.[0-9]+$")
# What build.rs accepts on a line of the list.
LISTED = re.compile(r"^[A-Za-z0-9_.$*]+$")


def build(target_dir: str, plain: bool) -> str:
    """Builds the release binary; `plain`: without the hot code gathered, as recording needs
    (Valgrind 3.19 attributes code outside `.text` to no object, so callgrind's output would not
    name the binary's functions placed in `.text.hot`)."""
    env = {**os.environ, "CARGO_TARGET_DIR": target_dir}
    env.pop("STEWARD_LINK_ORDER", None)
    if plain:
        env["STEWARD_LINK_ORDER"] = "0"
    cmd = ["cargo", "build", "--release", "--locked", "-p", "steward-cli"]
    print("link-order: " + ("STEWARD_LINK_ORDER=0 " if plain else "") + " ".join(cmd), flush=True)
    if subprocess.run(cmd, cwd=ROOT, env=env).returncode != 0:
        fail("the release build failed")
    return os.path.join(target_dir, "release", "steward")


def record(binary: str, out_dir: str) -> None:
    """Runs the scripted steps with `binary` under callgrind, one output file per process."""
    wrapper = os.path.join(out_dir, "steward-under-callgrind")
    with open(wrapper, "w") as f:
        f.write(
            "#!/bin/sh\n"
            f"exec valgrind --tool=callgrind --demangle=no --trace-children=no "
            f"--callgrind-out-file={out_dir}/callgrind.%p.out --log-file={out_dir}/valgrind.%p.log "
            f"'{binary}' \"$@\"\n"
        )
    os.chmod(wrapper, 0o755)
    for step in ("read", "shell"):
        cmd = [
            sys.executable,
            os.path.join(ROOT, "scripts", "compare-harness.py"),
            "--harness", "steward", "--bin", wrapper,
            "--runs", "1", "--steps", "3", "--step", step, "--timeout", "600",
        ]
        print(f"link-order: recording {step} steps under callgrind", flush=True)
        result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        sys.stdout.write(result.stdout)
        # Valgrind 3.19 does not know Landlock's system calls (444-446): under it the sandbox
        # finds Landlock missing and may refuse a sandboxed call. Steward's own side of such a
        # call (policy, sandbox plan, the refusal) is still recorded, so only the read steps
        # must all succeed.
        if result.returncode != 0 or (step == "read" and " 3/3" not in result.stdout):
            sys.stderr.write(result.stderr)
            fail(f"the recorded {step} steps did not all succeed")


def executed_functions(out_dir: str, binary: str) -> list[str]:
    """The binary's functions named in callgrind's outputs, first seen first.

    In callgrind's format an object (`ob=`, `cob=`) and a function (`fn=`, `cfn=`) get a
    number the first time they appear, `(N) name`, and are named by the number alone later.
    Every function that executed has an `fn=` block, under the `ob=` of its object file.
    """
    real = os.path.realpath(binary)
    order: list[str] = []
    seen: set[str] = set()
    files = sorted(f for f in os.listdir(out_dir) if f.startswith("callgrind.") and f.endswith(".out"))
    if not files:
        fail(f"callgrind wrote nothing in {out_dir}")
    entry = re.compile(r"^(ob|cob|fn|cfn)=\((\d+)\)(?: (.*))?$")
    for name in files:
        objects: dict[str, str] = {}
        functions: dict[str, str] = {}
        current = None
        with open(os.path.join(out_dir, name), errors="replace") as f:
            for line in f:
                m = entry.match(line.rstrip("\n"))
                if not m:
                    continue
                kind, number, text = m.groups()
                table = objects if kind in ("ob", "cob") else functions
                if text:
                    table[number] = text
                if kind == "ob":
                    current = objects.get(number)
                elif kind == "fn":
                    function = functions.get(number)
                    if current and os.path.realpath(current) == real and function and function not in seen:
                        seen.add(function)
                        order.append(function)
    return order


def listed_names(functions: list[str]) -> list[str]:
    """The list's lines for `functions`: v0 Rust names with `*` for each crate's disambiguator
    and back reference, legacy ones cut after `17h`, others as they are; each once, first seen
    first; names build.rs would not accept are left out."""
    names: list[str] = []
    seen: set[str] = set()
    for function in functions:
        m = RUST_SYMBOL.match(function)
        # A suffix LLVM adds to a local function it makes visible (`.llvm.123`) differs from
        # build to build; build.rs matches any suffix.
        function = LLVM_SUFFIX.sub("", function)
        if m:
            name = m.group(1)
        elif function.startswith("_R"):
            name = V0_BACKREF.sub("B*_", V0_CRATE.sub("Cs*_", function))
        else:
            name = function
        if LISTED.match(name) and name not in seen:
            seen.add(name)
            names.append(name)
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target-dir", default=os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")))
    parser.add_argument("--keep", help="keep callgrind's outputs in this folder (default: a temporary one, removed)")
    args = parser.parse_args()
    for tool in ("cargo", "valgrind", "git"):
        if shutil.which(tool) is None:
            fail(f"`{tool}` is not on PATH")
    target_dir = os.path.abspath(args.target_dir)
    binary = build(target_dir, plain=True)
    out_dir = args.keep or tempfile.mkdtemp(prefix="steward-link-order-")
    os.makedirs(out_dir, exist_ok=True)
    try:
        record(binary, out_dir)
        functions = executed_functions(out_dir, binary)
    finally:
        if not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)
    if len(functions) < 100:
        fail(f"only {len(functions)} functions of {binary} were recorded; is it the binary callgrind ran?")
    names = listed_names(functions)
    with open(HOT_FUNCTIONS, "w") as f:
        f.write(
            "# The functions scripted runs of `steward` executed, written by scripts/link-order.py;\n"
            "# release builds place them together (crates/steward-cli/build.rs). Rust names end\n"
            "# before their hash.\n"
        )
        f.write("\n".join(names) + "\n")
    print(f"link-order: {len(functions)} executed functions, {len(names)} names written to {HOT_FUNCTIONS}")
    build(target_dir, plain=False)
    print(f"link-order: {binary} is linked with them together")


if __name__ == "__main__":
    main()
