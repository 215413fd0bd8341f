//! Starting the program inside the namespaces without copying memory.
//!
//! The init of the PID namespace (see `namespaces.rs`) starts the program with
//! `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own ([`ChildStack`]): the program shares
//! the init's memory until it executes, and the init waits until then. Nothing is copied
//! (a `fork` there copied the page tables of the whole, possibly large, address space, and
//! every page either side then wrote), which is the same reason `posix_spawn` uses it. In
//! that window the program runs only async-signal-safe system calls on data prepared before
//! the first fork: its confinement (rlimits, `no_new_privs`, Landlock, seccomp), then
//! [`ExecImage::exec`], which finds the program like bash does (the first `PATH` entry holding
//! an executable regular file, else the first holding a regular file) and executes exactly that
//! file, once, with the prepared argv and environment. A file the kernel cannot execute is
//! never handed to `/bin/sh`.

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;

use crate::SandboxError;

/// The program, its argv and environment as C strings, and the paths to try, prepared in the
/// parent so that executing needs no allocation.
#[derive(Debug)]
pub(crate) struct ExecImage {
    /// Paths to look at, in order (`PATH` entries joined with the program; the program itself
    /// when it has a `/`).
    candidates: Vec<CString>,
    /// Whether the program was written with a `/` (then it is executed whatever it is).
    has_slash: bool,
    /// Owners of the strings the pointer arrays point at.
    strings: Vec<CString>,
    /// `argv` pointers, NULL-terminated.
    argv: Vec<usize>,
    /// `envp` pointers, NULL-terminated.
    envp: Vec<usize>,
    /// Whether a failed execution ends the program like bash would (message on stderr, status
    /// 127 or 126) instead of being returned (see [`crate::ExecRequest::exec_failure_exits`]).
    exits: bool,
}

/// The C library's default search path when `PATH` is unset (`confstr(_CS_PATH)`).
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// Why the program could not be executed: not found, or the errno of `execve` on the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExecFailure {
    /// No `PATH` entry holds a regular file of that name.
    NotFound,
    /// `execve` of the candidate at this index failed with this errno.
    Failed(usize, i32),
}

impl ExecFailure {
    /// The errno a spawn reports for it (`ENOENT` when not found).
    pub(crate) fn errno(self) -> i32 {
        match self {
            ExecFailure::NotFound => libc::ENOENT,
            ExecFailure::Failed(_, errno) => errno,
        }
    }
}

impl ExecImage {
    /// Prepares `argv` (not empty) to run with exactly `env`; with `exits`, a failed
    /// execution ends the program like bash would. Errors: a NUL byte in an argument or
    /// variable ([`SandboxError::InvalidRequest`]).
    pub(crate) fn new(argv: &[String], env: &[(OsString, OsString)], exits: bool) -> Result<ExecImage, SandboxError> {
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
        let has_slash = program.contains('/');
        let candidates = if has_slash {
            vec![args[0].clone()]
        } else {
            let path = env.iter().find(|(k, _)| k == "PATH").map_or(DEFAULT_PATH, |(_, v)| v.as_bytes());
            path.split(|b| *b == b':')
                .map(|dir| {
                    // An empty entry is the working directory, as for bash.
                    let mut full = if dir.is_empty() { b".".to_vec() } else { dir.to_vec() };
                    full.push(b'/');
                    full.extend_from_slice(program.as_bytes());
                    CString::new(full).map_err(nul)
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        let pointers = |strings: &[CString]| {
            let mut list: Vec<usize> = strings.iter().map(|s| s.as_ptr() as usize).collect();
            list.push(0);
            list
        };
        let argv_ptrs = pointers(&args);
        let envp = pointers(&vars);
        let mut strings = args;
        strings.extend(vars);
        Ok(ExecImage { candidates, has_slash, strings, argv: argv_ptrs, envp, exits })
    }

    /// Whether a failed execution ends the program like bash would.
    pub(crate) fn exits(&self) -> bool {
        self.exits
    }

    /// Executes the program (async-signal-safe). Returns only on failure: with `exits` it
    /// never returns (it writes bash's message to stderr and exits 127 or 126), else it
    /// returns why.
    pub(crate) fn exec(&self) -> ExecFailure {
        let failure = self.try_exec();
        if self.exits {
            self.exit_like_bash(failure)
        }
        failure
    }

    /// Finds the program like bash and executes it once.
    fn try_exec(&self) -> ExecFailure {
        let chosen = if self.has_slash { Some(0) } else { self.find() };
        let Some(index) = chosen else { return ExecFailure::NotFound };
        // SAFETY: NUL-terminated strings and NULL-terminated pointer arrays that live as long
        // as `self`.
        unsafe {
            libc::execve(self.candidates[index].as_ptr(), self.argv.as_ptr().cast(), self.envp.as_ptr().cast());
        }
        ExecFailure::Failed(index, errno())
    }

    /// The index of the first candidate that is an executable regular file, else of the first
    /// regular file (bash executes it and reports why it failed), else `None`.
    fn find(&self) -> Option<usize> {
        let mut first_file = None;
        for (index, candidate) in self.candidates.iter().enumerate() {
            // SAFETY: `stat` and `access` on a NUL-terminated path into a local buffer.
            unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                if libc::stat(candidate.as_ptr(), &mut st) != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
                    continue;
                }
                if libc::access(candidate.as_ptr(), libc::X_OK) == 0 {
                    return Some(index);
                }
            }
            first_file.get_or_insert(index);
        }
        first_file
    }

    /// Writes bash's message for `failure` to stderr and exits with bash's status: 127 when
    /// the program or its interpreter is missing, 126 when it cannot be executed.
    fn exit_like_bash(&self, failure: ExecFailure) -> ! {
        let (subject, text, status): (&[u8], &[u8], i32) = match failure {
            ExecFailure::NotFound => (self.strings[0].as_bytes(), b"command not found", 127),
            ExecFailure::Failed(index, errno) => {
                let path = self.candidates[index].as_bytes();
                let text: &[u8] = match errno {
                    libc::ENOENT if self.has_slash && !exists(&self.candidates[index]) => b"No such file or directory",
                    libc::ENOENT => b"cannot execute: required file not found",
                    libc::ENOEXEC => b"cannot execute binary file: Exec format error",
                    libc::EACCES if is_dir(&self.candidates[index]) => b"Is a directory",
                    libc::EACCES => b"Permission denied",
                    libc::EPERM => b"Operation not permitted",
                    libc::ENOTDIR => b"Not a directory",
                    libc::E2BIG => b"Argument list too long",
                    libc::ETXTBSY => b"Text file busy",
                    libc::ENOMEM => b"Cannot allocate memory",
                    libc::ELOOP => b"Too many levels of symbolic links",
                    libc::ENAMETOOLONG => b"File name too long",
                    _ => b"cannot execute",
                };
                (path, text, if errno == libc::ENOENT { 127 } else { 126 })
            }
        };
        // SAFETY: `write` and `_exit` are async-signal-safe; the buffers outlive the calls.
        unsafe {
            for part in [b"bash: ".as_slice(), subject, b": ", text, b"\n"] {
                libc::write(2, part.as_ptr().cast(), part.len());
            }
            libc::_exit(status)
        }
    }
}

/// Whether `path` exists (async-signal-safe).
fn exists(path: &CString) -> bool {
    // SAFETY: `stat` on a NUL-terminated path into a local buffer.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::stat(path.as_ptr(), &mut st) == 0
    }
}

/// Whether `path` is a folder (async-signal-safe).
fn is_dir(path: &CString) -> bool {
    // SAFETY: as in `exists`.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::stat(path.as_ptr(), &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFDIR
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
