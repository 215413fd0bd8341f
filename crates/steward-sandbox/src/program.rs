//! Starting the program inside the namespaces without copying memory.
//!
//! The init of the PID namespace (see `namespaces.rs`) starts the program with
//! `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own ([`ChildStack`]): the program shares
//! the init's memory until it executes, and the init waits until then. Nothing is copied
//! (a `fork` there copied the page tables of the whole, possibly large, address space, and
//! every page either side then wrote), which is the same reason `posix_spawn` uses it. In
//! that window the program runs only async-signal-safe system calls on data prepared before
//! the first fork: its confinement (rlimits, `no_new_privs`, Landlock, seccomp), then
//! [`ExecImage::exec`], which searches `PATH` like the C library's `execvp` (which a
//! `Command` uses) with the prepared argv and environment.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;

use crate::SandboxError;

/// The program, its argv and environment as C strings, and the paths to try, prepared in the
/// parent so that executing needs no allocation.
#[derive(Debug)]
pub(crate) struct ExecImage {
    /// Paths to try, in order (`PATH` entries joined with the program; the program itself
    /// when it has a `/`).
    candidates: Vec<CString>,
    /// Owners of the strings the pointer arrays point at.
    _strings: Vec<CString>,
    /// `argv` pointers, NULL-terminated.
    argv: Vec<usize>,
    /// `envp` pointers, NULL-terminated.
    envp: Vec<usize>,
    /// For each candidate, the argv of `/bin/sh CANDIDATE ARGS…` (a file without a `#!` line
    /// or ELF header is a shell script to `execvp`).
    sh_argv: Vec<Vec<usize>>,
}

/// The C library's default search path when `PATH` is unset (`confstr(_CS_PATH)`).
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

impl ExecImage {
    /// Prepares `argv` (not empty) to run with exactly `env`. Errors: a NUL byte in an
    /// argument or variable ([`SandboxError::InvalidRequest`]).
    pub(crate) fn new(argv: &[String], env: &[(OsString, OsString)]) -> Result<ExecImage, SandboxError> {
        let nul = |_| SandboxError::InvalidRequest("an argument or variable contains a NUL byte".into());
        let program = argv.first().ok_or_else(|| SandboxError::InvalidRequest("argv is empty".into()))?;
        let args = argv.iter().map(|a| CString::new(a.as_bytes()).map_err(nul)).collect::<Result<Vec<_>, _>>()?;
        let mut vars = Vec::with_capacity(env.len());
        for (name, value) in env {
            let mut pair = name.as_bytes().to_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            vars.push(CString::new(pair).map_err(nul)?);
        }
        let candidates = if program.contains('/') {
            vec![args[0].clone()]
        } else {
            let path = env.iter().find(|(k, _)| k == "PATH").map_or(DEFAULT_PATH, |(_, v)| v.as_bytes());
            path.split(|b| *b == b':')
                .map(|dir| {
                    let mut full = dir.to_vec();
                    if !full.is_empty() {
                        full.push(b'/');
                    }
                    full.extend_from_slice(program.as_bytes());
                    CString::new(full).map_err(nul)
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        let sh = CString::new(OsStr::new("/bin/sh").as_bytes()).map_err(nul)?;
        let pointers = |strings: &[&CString]| {
            let mut list: Vec<usize> = strings.iter().map(|s| s.as_ptr() as usize).collect();
            list.push(0);
            list
        };
        let argv_ptrs = pointers(&args.iter().collect::<Vec<_>>());
        let envp = pointers(&vars.iter().collect::<Vec<_>>());
        let sh_argv = candidates
            .iter()
            .map(|candidate| pointers(&[&sh, candidate].into_iter().chain(args.iter().skip(1)).collect::<Vec<_>>()))
            .collect();
        let mut strings = args;
        strings.extend(vars);
        strings.push(sh);
        Ok(ExecImage { candidates, _strings: strings, argv: argv_ptrs, envp, sh_argv })
    }

    /// Executes the program (async-signal-safe; returns only on failure, with the errno).
    /// Like `execvp`: every candidate is tried; `EACCES` is remembered and the search goes on,
    /// a missing file or folder goes on, any other error ends it; a file the kernel cannot
    /// execute (`ENOEXEC`) is run by `/bin/sh`.
    pub(crate) fn exec(&self) -> i32 {
        let mut denied = false;
        let mut last = libc::ENOENT;
        for (candidate, sh_argv) in self.candidates.iter().zip(&self.sh_argv) {
            // SAFETY: NUL-terminated strings and NULL-terminated pointer arrays that live as
            // long as `self`.
            unsafe {
                libc::execve(candidate.as_ptr(), self.argv.as_ptr().cast(), self.envp.as_ptr().cast());
                let mut errno = errno();
                if errno == libc::ENOEXEC {
                    libc::execve(sh_argv[0] as *const libc::c_char, sh_argv.as_ptr().cast(), self.envp.as_ptr().cast());
                    errno = self::errno();
                }
                match errno {
                    libc::EACCES => denied = true,
                    libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                    other => return other,
                }
                last = errno;
            }
        }
        if denied { libc::EACCES } else { last }
    }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL)
}

/// A stack for the program's start (mapped in the parent, so the forked init has it at the
/// same address), with an inaccessible guard page below it.
#[derive(Debug)]
pub(crate) struct ChildStack {
    base: usize,
    len: usize,
}

/// Stack size of the program's start, guard page included (it runs the confinement and the
/// `execve` calls only).
const STACK_BYTES: usize = 256 * 1024;

impl ChildStack {
    /// Maps the stack. Errors: the mapping failed.
    pub(crate) fn new() -> io::Result<ChildStack> {
        // SAFETY: a fresh anonymous mapping; the guard page is inside it.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                STACK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let stack = ChildStack { base: base as usize, len: STACK_BYTES };
            if libc::mprotect(base, page_size(), libc::PROT_NONE) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(stack)
        }
    }

    /// The top of the stack (stacks grow down on the supported architectures), 16-byte
    /// aligned.
    pub(crate) fn top(&self) -> *mut libc::c_void {
        ((self.base + self.len) & !15) as *mut libc::c_void
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}
