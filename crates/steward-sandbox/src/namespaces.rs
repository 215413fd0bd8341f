//! The mount and PID namespaces of a sandboxed program.
//!
//! Three processes take part, all between `fork` and `exec` of the `Command`:
//! - the *keeper* (the process `Command::spawn` made, whose pid the caller sees) calls
//!   `unshare` for the new namespaces (user when needed, mount, PID, network), writes the id
//!   maps, and forks the *init*. It waits for the init's setup to succeed (a failure is
//!   returned from `pre_exec`, so `spawn` fails and nothing runs), closes every descriptor it
//!   holds (so the caller's pipes and `spawn`'s error pipe belong to the program alone), waits
//!   for the init and ends the way the program ended (same exit code or signal).
//! - the *init* is PID 1 of the new PID namespace: it makes its mounts private, hides `$HOME`
//!   and replaces `/dev` by a minimal one, makes the read-only paths read-only, covers the
//!   masked paths, mounts a fresh `/proc`,
//!   changes to the working directory again (the old one may lie beneath a new mount), opens
//!   the egress listener when the call has one, then starts the program and reaps every
//!   process of the namespace until the program ends. Then
//!   it reports the program's status and exits, and the kernel kills whatever is left in the
//!   namespace: nothing the program started outlives it, whatever session or group it made.
//! - the *program* (PID 2) is started with `clone(CLONE_VM | CLONE_VFORK)` (see
//!   `program.rs`): sharing the init's memory until it executes, it sets its rlimits,
//!   `no_new_privs`, Landlock and seccomp, then executes the program. A failed confinement
//!   and a failed execution (a missing program too) are reported to the keeper under
//!   different tags, and its `pre_exec` returns them so that the spawn's error tells them
//!   apart: the first refuses the call, the second is a failed spawn of that program. A
//!   program whose request asks for it ends like bash's instead (message, status 127/126).
//!
//! The egress listener of a proxied call ([`crate::egress`]) is made in the init, after the
//! mounts and before the program is started: inside the new network namespace (which the
//! keeper's `unshare` made), handed to Steward over the socket pair and closed there, so
//! neither the init nor the program holds it, and before the program's Landlock ruleset and
//! seccomp filter apply. A failure there fails the setup like a failed mount.
//!
//! Only async-signal-safe system calls run in these processes (the parent is
//! multi-threaded): every path is a C string prepared before the fork, and forks are raw
//! `clone` system calls (no `atfork` handlers that could wait on locks of vanished threads;
//! the C library's `clone` wrapper that starts the program runs none either).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::egress::ChildListen;
use crate::program::ChildStack;
use crate::unavailable::{MountPathError, NsUnavailable, ProbeError};

/// What namespaces this process can make, found once per process on a real child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NsCaps {
    /// A user namespace is needed (no `CAP_SYS_ADMIN`).
    pub(crate) user: bool,
    /// A fresh `/proc` can be mounted in the new PID namespace.
    pub(crate) fresh_proc: bool,
}

/// Message tags on the status pipe from the init to the keeper.
const TAG_SETUP_FAILED: i32 = 1;
const TAG_SETUP_DONE: i32 = 2;
const TAG_PROGRAM_STATUS: i32 = 3;
/// The program's own confinement (rlimits, `no_new_privs`, Landlock, seccomp) failed.
const TAG_CONFINE_FAILED: i32 = 4;
/// The program's `execve` failed (or it was not found), with its confinement in place.
const TAG_EXEC_FAILED: i32 = 5;

/// Added to the errno of a failed `execve` that [`NsSetup::enter`] returns, so that the
/// spawn's error tells it from a failed confinement (see [`exec_errno`]).
pub(crate) const EXEC_FAILED_BASE: i32 = 1 << 16;

/// The errno of a failed `execve` when `code` (a spawn's raw OS error) reports one.
pub(crate) fn exec_errno(code: i32) -> Option<i32> {
    (code > EXEC_FAILED_BASE).then(|| code - EXEC_FAILED_BASE)
}

/// How the program's start failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartFailure {
    /// Its confinement failed, with this errno: the call is refused.
    Confine(i32),
    /// Its `execve` failed, with this errno (`ENOENT` when not found).
    Exec(i32),
}

/// `MOVE_MOUNT_F_EMPTY_PATH`, `OPEN_TREE_CLONE`, `MOUNT_ATTR_*` (linux/mount.h).
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x0000_0004;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
const MOUNT_ATTR_NOSUID: u64 = 0x0000_0002;
const MOUNT_ATTR_NODEV: u64 = 0x0000_0004;
const MOUNT_ATTR_NOEXEC: u64 = 0x0000_0008;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Finds out once per process whether mount and PID namespaces can be made (first without a
/// user namespace, then with one), and whether a fresh `/proc` can be mounted in them.
pub(crate) fn ns_caps() -> Result<NsCaps, NsUnavailable> {
    static CAPS: OnceLock<Result<NsCaps, NsUnavailable>> = OnceLock::new();
    CAPS.get_or_init(|| {
        let plain = match probe(false) {
            Ok(fresh_proc) => return Ok(NsCaps { user: false, fresh_proc }),
            Err(e) => e,
        };
        match probe(true) {
            Ok(fresh_proc) => Ok(NsCaps { user: true, fresh_proc }),
            Err(user) => Err(NsUnavailable::Refused { plain, user }),
        }
    })
    .clone()
}

/// Runs a probe child ([`crate::probe`]) that makes the namespaces and a grandchild (PID 1)
/// that mounts `/proc`. `Ok(true)`: all worked; `Ok(false)`: namespaces work, `/proc` cannot
/// be mounted.
fn probe(user: bool) -> Result<bool, ProbeError> {
    let maps = IdMaps::new(user);
    let proc_path = c("/proc");
    let stacks = ChildStack::new().and_then(|child| Ok((child, ChildStack::new()?)));
    let (mut child_stack, mut init_stack) =
        stacks.map_err(|e| ProbeError::Os(e.raw_os_error().unwrap_or(libc::ENOMEM)))?;
    let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    if user {
        flags |= libc::CLONE_NEWUSER;
    }
    let mut mount_proc = || {
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        // SAFETY: C strings prepared before the clone.
        let ok =
            unsafe { libc::mount(c"proc".as_ptr(), proc_path.as_ptr(), c"proc".as_ptr(), flags, std::ptr::null()) };
        if ok == 0 { 0 } else { 100 }
    };
    let init = &mut init_stack;
    // SAFETY: both bodies make system calls on data prepared before the clone (the id maps'
    // C strings and contents, the `/proc` path); the child starts the init on a stack of its
    // own; if the child is killed while the init runs, the init's stack is not unmapped.
    let outcome = unsafe {
        crate::probe::run(&mut child_stack, &mut || {
            if libc::unshare(flags) != 0 {
                return errno().clamp(1, 99);
            }
            maps.write();
            if libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return errno().clamp(1, 99);
            }
            // The first child made after the `unshare` is PID 1 of the new namespace.
            match crate::probe::run(init, &mut mount_proc) {
                Ok(code) => code,
                Err(ProbeError::Os(errno)) => errno.clamp(1, 99),
                Err(_) => 101,
            }
        })
    };
    // A child that exited waited for the init first (CLONE_VFORK); a killed one may have
    // left it running on its stack, which then stays mapped.
    if outcome.is_err() {
        std::mem::forget(init_stack);
    }
    let code = outcome?;
    match code {
        0 => Ok(true),
        100 => Ok(false),
        101 => Err(ProbeError::Pid1Killed),
        code => Err(ProbeError::Os(code)),
    }
}

/// The errno of the calling thread's last failed system call (in a child sharing this
/// process's memory, the child's own: it runs on the thread-local storage of the thread that
/// cloned it, which waits).
pub(crate) fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM)
}

/// A fork as a raw `clone` system call: no `atfork` handlers run (they take locks another
/// thread of the original process may have held at its fork).
fn raw_fork() -> libc::c_long {
    // SAFETY: `clone` with only SIGCHLD and no stack behaves like fork.
    unsafe { libc::syscall(libc::SYS_clone, libc::c_long::from(libc::SIGCHLD), 0usize, 0usize, 0usize, 0usize) }
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

fn c_path(path: &Path) -> Result<CString, MountPathError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| MountPathError::Nul(path.to_path_buf()))
}

/// The `/proc/self/{setgroups,uid_map,gid_map}` writes for a user namespace mapping the
/// caller's own ids (so created files keep their owner); empty without a user namespace.
#[derive(Debug, Default)]
pub(crate) struct IdMaps(Vec<(CString, Vec<u8>)>);

impl IdMaps {
    pub(crate) fn new(user: bool) -> IdMaps {
        if !user {
            return IdMaps::default();
        }
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        IdMaps(vec![
            (c("/proc/self/setgroups"), b"deny".to_vec()),
            (c("/proc/self/uid_map"), format!("{uid} {uid} 1").into_bytes()),
            (c("/proc/self/gid_map"), format!("{gid} {gid} 1").into_bytes()),
        ])
    }

    /// Writes the maps (async-signal-safe). Best effort: without a map the child runs as
    /// the overflow id, which only reduces what it can do.
    pub(crate) fn write(&self) {
        for (path, content) in &self.0 {
            // SAFETY: open/write/close on a valid C string and buffer.
            unsafe {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::write(fd, content.as_ptr().cast(), content.len());
                    libc::close(fd);
                }
            }
        }
    }
}

/// A path beneath the hidden home that stays visible: its mount tree is cloned before the
/// home is covered and moved back onto the same path inside the empty home.
#[derive(Debug)]
struct Keep {
    source: CString,
    /// Folders to create inside the empty home, outermost first (the last is the mount
    /// point when `is_dir`).
    dirs: Vec<CString>,
    /// The mount point (a folder in `dirs`, or an empty file made for a kept file).
    target: CString,
    is_dir: bool,
    /// The cloned tree's descriptor, set in the init between the clone and the move.
    fd: AtomicI32,
}

/// A folder covered by an empty tmpfs, with what stays visible in it.
#[derive(Debug)]
struct Hide {
    target: CString,
    /// tmpfs options (`mode=…,size=…`).
    options: &'static std::ffi::CStr,
    keeps: Vec<Keep>,
    /// Symbolic links recreated inside: `(link target, link path)`.
    links: Vec<(CString, CString)>,
}

/// What stays of `/dev`: the devices a program uses (the same nodes, so the Landlock device
/// rules still apply), the terminal and shared-memory mounts, and the `/proc/self/fd` links.
/// Disks, memory and every other device are gone, even for a program running as root.
const DEV_KEPT: &[&str] =
    &["null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts", "shm", "fd", "stdin", "stdout", "stderr"];

/// What the init mounts, prepared in the parent.
#[derive(Debug)]
pub(crate) struct MountPlan {
    /// The home first (when hidden), then `/dev`.
    hides: Vec<Hide>,
    /// `(path, is_dir)`.
    masks: Vec<(CString, bool)>,
    /// Whether a file is masked (then an empty file is made to cover it).
    file_masks: bool,
    read_only: Vec<CString>,
    fresh_proc: bool,
    cwd: CString,
    /// How many masks, for the profile.
    pub(crate) mask_count: usize,
    /// Whether the home is hidden, for the profile.
    pub(crate) home_hidden: bool,
    /// Whether `/dev` holds only [`DEV_KEPT`], for the profile.
    pub(crate) dev_minimal: bool,
}

/// The keeps of `wanted` paths beneath `hidden` (outermost only).
fn keeps_beneath(hidden: &Path, wanted: &[PathBuf]) -> Result<Vec<Keep>, MountPathError> {
    let mut beneath: Vec<&PathBuf> = wanted.iter().filter(|w| w.starts_with(hidden) && *w != hidden).collect();
    beneath.sort();
    beneath.dedup();
    let mut kept: Vec<&PathBuf> = Vec::new();
    for path in beneath {
        if !kept.iter().any(|k| path.starts_with(k)) {
            kept.push(path);
        }
    }
    let mut keeps = Vec::new();
    for path in kept {
        let is_dir = path.is_dir();
        let mut ancestors: Vec<&Path> =
            path.ancestors().skip(1).take_while(|a| a.starts_with(hidden) && *a != hidden).collect();
        ancestors.reverse();
        let mut dirs = ancestors.into_iter().map(c_path).collect::<Result<Vec<_>, _>>()?;
        let target = c_path(path)?;
        if is_dir {
            dirs.push(target.clone());
        }
        keeps.push(Keep { source: target.clone(), dirs, target, is_dir, fd: AtomicI32::new(-1) });
    }
    Ok(keeps)
}

/// The minimal `/dev` ([`DEV_KEPT`]): devices and folders are kept, links recreated.
fn minimal_dev() -> Result<Hide, MountPathError> {
    let dev = Path::new("/dev");
    let mut wanted = Vec::new();
    let mut links = Vec::new();
    for name in DEV_KEPT {
        let path = dev.join(name);
        let Ok(meta) = path.symlink_metadata() else { continue };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(&path) {
                links.push((c_path(&target)?, c_path(&path)?));
            }
        } else {
            wanted.push(path);
        }
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        let path = dev.join(name);
        if path.symlink_metadata().is_err() {
            links.push((c_path(Path::new(target))?, c_path(&path)?));
        }
    }
    Ok(Hide { target: c_path(dev)?, options: c"mode=0755,size=64k", keeps: keeps_beneath(dev, &wanted)?, links })
}

/// What the caller asked to hide and keep.
pub(crate) struct MountRequest<'a> {
    pub(crate) home: Option<&'a Path>,
    pub(crate) cwd: &'a Path,
    pub(crate) writable: &'a [PathBuf],
    pub(crate) home_keep: &'a [PathBuf],
    pub(crate) mask: &'a [PathBuf],
    pub(crate) read_only: &'a [PathBuf],
}

impl MountPlan {
    /// Prepares the mounts. Errors: a relative or NUL-containing path.
    pub(crate) fn new(req: &MountRequest<'_>, fresh_proc: bool) -> Result<MountPlan, MountPathError> {
        for path in req.mask.iter().chain(req.read_only).chain(req.home_keep) {
            if !path.is_absolute() {
                return Err(MountPathError::NotAbsolute(path.clone()));
            }
        }
        let cwd = req.cwd.canonicalize().unwrap_or_else(|_| req.cwd.to_path_buf());
        let home = req.home.and_then(|h| h.canonicalize().ok()).filter(|h| h.is_dir() && h.parent().is_some());
        // Paths that must stay visible: the working directory, the writable paths, the kept ones.
        let wanted: Vec<PathBuf> = std::iter::once(cwd.clone())
            .chain(req.writable.iter().cloned())
            .chain(req.home_keep.iter().cloned())
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        // A home that is (or lies beneath) a path to keep cannot be hidden.
        let home = home.filter(|h| !wanted.iter().any(|w| h.starts_with(w)));
        let mut hides = Vec::new();
        if let Some(home) = &home {
            hides.push(Hide {
                target: c_path(home)?,
                options: c"mode=0700,size=256m",
                keeps: keeps_beneath(home, &wanted)?,
                links: Vec::new(),
            });
        }
        // `/dev` is replaced unless the call works beneath it.
        let dev_minimal = !wanted.iter().any(|w| w.starts_with("/dev")) && Path::new("/dev").is_dir();
        if dev_minimal {
            hides.push(minimal_dev()?);
        }
        let mut masks = Vec::new();
        for path in req.mask {
            let Ok(meta) = std::fs::metadata(path) else { continue };
            masks.push((c_path(path)?, meta.is_dir()));
        }
        let file_masks = masks.iter().any(|(_, is_dir)| !is_dir);
        let mut read_only = Vec::new();
        for path in req.read_only.iter().filter(|p| p.exists()) {
            read_only.push(c_path(path)?);
        }
        Ok(MountPlan {
            home_hidden: home.is_some(),
            dev_minimal,
            hides,
            mask_count: masks.len(),
            masks,
            file_masks,
            read_only,
            fresh_proc,
            cwd: c_path(&cwd)?,
        })
    }

    /// Runs in the init (async-signal-safe): the mounts in the order of the module docs.
    /// Returns the errno of the first step that failed.
    fn apply(&self) -> Result<(), i32> {
        let null = std::ptr::null::<libc::c_char>();
        let check = |rc: libc::c_int| if rc == 0 { Ok(()) } else { Err(errno()) };
        // SAFETY: mount-related system calls on C strings prepared before the fork.
        unsafe {
            check(libc::mount(null, c"/".as_ptr(), null, libc::MS_REC | libc::MS_PRIVATE, null.cast()))?;
            for hide in &self.hides {
                for keep in &hide.keeps {
                    let flags = OPEN_TREE_CLONE | libc::AT_RECURSIVE as libc::c_uint | libc::O_CLOEXEC as libc::c_uint;
                    let fd = libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, keep.source.as_ptr(), flags);
                    if fd < 0 {
                        return Err(errno());
                    }
                    keep.fd.store(fd as i32, Ordering::Relaxed);
                }
                let flags = libc::MS_NOSUID | libc::MS_NODEV;
                check(libc::mount(
                    c"tmpfs".as_ptr(),
                    hide.target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    flags,
                    hide.options.as_ptr().cast(),
                ))?;
                for keep in &hide.keeps {
                    for dir in &keep.dirs {
                        if libc::mkdir(dir.as_ptr(), 0o755) != 0 && errno() != libc::EEXIST {
                            return Err(errno());
                        }
                    }
                    if !keep.is_dir {
                        let fd =
                            libc::open(keep.target.as_ptr(), libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC, 0o600);
                        if fd < 0 {
                            return Err(errno());
                        }
                        libc::close(fd);
                    }
                    let fd = keep.fd.load(Ordering::Relaxed);
                    let rc = libc::syscall(
                        libc::SYS_move_mount,
                        fd,
                        c"".as_ptr(),
                        libc::AT_FDCWD,
                        keep.target.as_ptr(),
                        MOVE_MOUNT_F_EMPTY_PATH,
                    );
                    libc::close(fd);
                    if rc != 0 {
                        return Err(errno());
                    }
                }
                for (target, link) in &hide.links {
                    if libc::symlink(target.as_ptr(), link.as_ptr()) != 0 && errno() != libc::EEXIST {
                        return Err(errno());
                    }
                }
            }
            for path in &self.read_only {
                if libc::mount(path.as_ptr(), path.as_ptr(), null, libc::MS_BIND | libc::MS_REC, null.cast()) != 0 {
                    // Gone, or beneath the hidden home: nothing there to write.
                    if errno() == libc::ENOENT {
                        continue;
                    }
                    return Err(errno());
                }
                set_attr(path, MOUNT_ATTR_RDONLY, true)?;
            }
            let covered = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
            // The source of file masks: an empty read-only file on a small tmpfs mounted over
            // `/proc` for the moment (a descriptor opened before the namespace was made
            // belongs to the old one and cannot be cloned here).
            let mut empty = -1;
            if self.file_masks {
                let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                check(libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/proc".as_ptr(),
                    c"tmpfs".as_ptr(),
                    flags,
                    c"mode=0755,size=4k".as_ptr().cast(),
                ))?;
                empty = libc::open(c"/proc/empty".as_ptr(), libc::O_CREAT | libc::O_RDONLY | libc::O_CLOEXEC, 0o444);
                if empty < 0 {
                    return Err(errno());
                }
            }
            for (path, is_dir) in &self.masks {
                let rc = if *is_dir {
                    let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                    libc::mount(
                        c"tmpfs".as_ptr(),
                        path.as_ptr(),
                        c"tmpfs".as_ptr(),
                        flags,
                        c"mode=0000,size=4k".as_ptr().cast(),
                    )
                } else {
                    // A bind mount of the empty file: a regular file (so `git status` still
                    // works) with no content.
                    let flags = OPEN_TREE_CLONE | libc::AT_EMPTY_PATH as libc::c_uint | libc::O_CLOEXEC as libc::c_uint;
                    let fd = libc::syscall(libc::SYS_open_tree, empty, c"".as_ptr(), flags);
                    if fd < 0 {
                        return Err(errno());
                    }
                    let rc = libc::syscall(
                        libc::SYS_move_mount,
                        fd,
                        c"".as_ptr(),
                        libc::AT_FDCWD,
                        path.as_ptr(),
                        MOVE_MOUNT_F_EMPTY_PATH,
                    );
                    libc::close(fd as libc::c_int);
                    rc as libc::c_int
                };
                if rc != 0 {
                    // Removed since the plan was made: nothing to cover.
                    if errno() == libc::ENOENT {
                        continue;
                    }
                    return Err(errno());
                }
                if !*is_dir {
                    set_attr(path, covered, false)?;
                }
            }
            if empty >= 0 {
                libc::close(empty);
                check(libc::umount2(c"/proc".as_ptr(), libc::MNT_DETACH))?;
            }
            if self.fresh_proc {
                let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                check(libc::mount(c"proc".as_ptr(), c"/proc".as_ptr(), c"proc".as_ptr(), flags, null.cast()))?;
            }
            check(libc::chdir(self.cwd.as_ptr()))?;
        }
        Ok(())
    }
}

/// `mount_setattr(path, attrs)`, recursively when `recursive`.
unsafe fn set_attr(path: &CString, attrs: u64, recursive: bool) -> Result<(), i32> {
    let attr = MountAttr { attr_set: attrs, attr_clr: 0, propagation: 0, userns_fd: 0 };
    let flags = if recursive { libc::AT_RECURSIVE } else { 0 };
    // SAFETY: valid C string and struct of the size passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            std::ptr::from_ref(&attr),
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc == 0 { Ok(()) } else { Err(errno()) }
}

/// The namespace part of a child's setup.
#[derive(Debug)]
pub(crate) struct NsSetup {
    /// `unshare` flags (mount and PID namespaces, user and network when needed).
    pub(crate) flags: libc::c_int,
    pub(crate) maps: IdMaps,
    pub(crate) mounts: MountPlan,
}

/// How the init starts the program: `start` runs in a process sharing the init's memory on
/// `stack` (see `program.rs`); it executes the program, and returns only with what failed.
pub(crate) struct Start<'a> {
    pub(crate) start: &'a dyn Fn() -> StartFailure,
    pub(crate) stack: &'a ChildStack,
}

/// What the program's start needs, on the init's stack (shared with the program).
struct Job<'a> {
    start: &'a dyn Fn() -> StartFailure,
    /// The init's signal mask before it blocked every signal for the clone.
    mask: &'a libc::sigset_t,
    /// Set by the program when its start failed: the errno of its confinement, or minus the
    /// errno of its `execve`.
    failed: &'a AtomicI32,
}

/// The program's first function: signal handlers back to their defaults (the inherited ones
/// belong to Steward), the init's signal mask back, then `start`.
extern "C" fn program_main(job: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `job` points at a `Job` on the stack of the init, which waits (CLONE_VFORK)
    // until this process executes or exits; only async-signal-safe calls follow.
    unsafe {
        let job = &*(job as *const Job<'_>);
        for signal in 1..=libc::SIGRTMAX() {
            let mut action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut action) == 0
                && action.sa_sigaction != libc::SIG_DFL
                && action.sa_sigaction != libc::SIG_IGN
            {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        libc::sigprocmask(libc::SIG_SETMASK, job.mask, std::ptr::null_mut());
        let failed = match (job.start)() {
            StartFailure::Confine(errno) => errno.max(1),
            StartFailure::Exec(errno) => -errno.max(1),
        };
        job.failed.store(failed, Ordering::Relaxed);
        libc::_exit(127)
    }
}

impl NsSetup {
    /// Runs in the keeper (the spawned process). Never returns when the setup succeeded: the
    /// keeper ends like the program, the init reaps the namespace, and the program is started
    /// by `start`. Returns the error of the setup or of the program's start.
    /// With `egress`, the init opens the proxy port in the new network namespace and hands it
    /// over before starting the program.
    pub(crate) fn enter(&self, egress: Option<&ChildListen>, start: &Start<'_>) -> io::Error {
        // SAFETY: async-signal-safe system calls only, on data prepared before the fork.
        unsafe {
            if libc::unshare(self.flags) != 0 {
                return io::Error::last_os_error();
            }
            self.maps.write();
            let mut pipe = [-1; 2];
            if libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return io::Error::last_os_error();
            }
            let [read_end, write_end] = pipe;
            let init = raw_fork();
            if init < 0 {
                return io::Error::last_os_error();
            }
            if init == 0 {
                libc::close(read_end);
                self.init(write_end, egress, start);
            }
            libc::close(write_end);
            keep(init as libc::pid_t, read_end)
        }
    }

    /// The init: PID 1 of the new namespace. Never returns.
    unsafe fn init(&self, status_fd: libc::c_int, egress: Option<&ChildListen>, start: &Start<'_>) -> ! {
        // SAFETY: async-signal-safe system calls only.
        unsafe {
            // If the keeper is killed, the init (and so the namespace) goes too.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if let Err(e) = self.mounts.apply() {
                send(status_fd, TAG_SETUP_FAILED, e);
                libc::_exit(1);
            }
            // The egress listener: made in the new network namespace, handed over and
            // closed before the program exists.
            if let Some(egress) = egress
                && let Err(e) = egress.listen()
            {
                send(status_fd, TAG_SETUP_FAILED, e.raw_os_error().unwrap_or(libc::EPERM));
                libc::_exit(1);
            }
            // Every signal blocked across the clone, so that no handler of Steward's runs in
            // the program on the shared memory before its handlers are reset.
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::sigprocmask(libc::SIG_SETMASK, &all, &mut mask);
            let failed = AtomicI32::new(0);
            let job = Job { start: start.start, mask: &mask, failed: &failed };
            let program = libc::clone(
                program_main,
                start.stack.top(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                std::ptr::from_ref(&job).cast_mut().cast(),
            );
            let clone_errno = errno();
            libc::sigprocmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
            if program < 0 {
                send(status_fd, TAG_SETUP_FAILED, clone_errno);
                libc::_exit(1);
            }
            // The clone returns once the program executed or exited.
            let start_failed = failed.load(Ordering::Relaxed);
            if start_failed != 0 {
                let mut ignored = 0;
                libc::waitpid(program, &mut ignored, 0);
                if start_failed < 0 {
                    send(status_fd, TAG_EXEC_FAILED, -start_failed);
                } else {
                    send(status_fd, TAG_CONFINE_FAILED, start_failed);
                }
                libc::_exit(1);
            }
            send(status_fd, TAG_SETUP_DONE, 0);
            close_all_but(status_fd);
            let mut program_status = None;
            loop {
                let mut status = 0;
                let pid = libc::waitpid(-1, &mut status, 0);
                if pid == program {
                    program_status = Some(status);
                    break;
                }
                if pid < 0 && errno() != libc::EINTR {
                    break;
                }
            }
            if let Some(status) = program_status {
                send(status_fd, TAG_PROGRAM_STATUS, status);
            }
            libc::_exit(0)
        }
    }
}

/// The keeper's part after the init was forked: returns the init's setup failure or the
/// program's failed start, else waits and ends like the program did (never returns).
unsafe fn keep(init: libc::pid_t, status_fd: libc::c_int) -> io::Error {
    // SAFETY: async-signal-safe system calls only.
    unsafe {
        let (tag, value) = receive(status_fd);
        if tag != TAG_SETUP_DONE {
            let mut ignored = 0;
            libc::waitpid(init, &mut ignored, 0);
            // The program's `execve` failed (`ENOENT` for a missing program): marked so that
            // the spawn reports it as such, not as a failed confinement.
            if tag == TAG_EXEC_FAILED {
                return io::Error::from_raw_os_error(EXEC_FAILED_BASE + value.max(1));
            }
            // Reported as a failed confinement whatever the step's own error was (an `ENOENT`
            // here must not read as "program not found").
            let setup_errnos = [libc::EPERM, libc::EINVAL, libc::ENOSPC, libc::EUSERS, libc::ENOSYS];
            let confine = tag == TAG_SETUP_FAILED || tag == TAG_CONFINE_FAILED;
            let errno = if confine && setup_errnos.contains(&value) { value } else { libc::EPERM };
            return io::Error::from_raw_os_error(errno);
        }
        // The caller's pipes and `spawn`'s error pipe now belong to the program alone.
        close_all_but(status_fd);
        let (tag, value) = receive(status_fd);
        let mut init_status = 0;
        while libc::waitpid(init, &mut init_status, 0) < 0 && errno() == libc::EINTR {}
        let status = if tag == TAG_PROGRAM_STATUS { value } else { init_status };
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(signal, &action, std::ptr::null_mut());
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 1 })
    }
}

unsafe fn send(fd: libc::c_int, tag: i32, value: i32) {
    let mut message = [0u8; 8];
    message[..4].copy_from_slice(&tag.to_ne_bytes());
    message[4..].copy_from_slice(&value.to_ne_bytes());
    // SAFETY: valid buffer; a short write of 8 bytes to a pipe does not happen.
    unsafe {
        libc::write(fd, message.as_ptr().cast(), message.len());
    }
}

/// One message, or `(0, 0)` when the writer ended without sending one.
unsafe fn receive(fd: libc::c_int) -> (i32, i32) {
    let mut message = [0u8; 8];
    let mut got = 0;
    while got < message.len() {
        // SAFETY: valid buffer of the given remaining length.
        let n = unsafe { libc::read(fd, message[got..].as_mut_ptr().cast(), message.len() - got) };
        if n > 0 {
            got += n as usize;
        } else if n == 0 || errno() != libc::EINTR {
            return (0, 0);
        }
    }
    let tag = i32::from_ne_bytes([message[0], message[1], message[2], message[3]]);
    let value = i32::from_ne_bytes([message[4], message[5], message[6], message[7]]);
    (tag, value)
}

/// Closes every descriptor except `keep`.
unsafe fn close_all_but(keep: libc::c_int) {
    // SAFETY: close_range only closes descriptors.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as libc::c_uint, 0u32);
        }
        libc::syscall(libc::SYS_close_range, (keep + 1) as libc::c_uint, libc::c_uint::MAX, 0u32);
    }
}
