//! The children of the sandbox's one-time probes: which namespaces this process may make
//! (`limits.rs` for the network, `namespaces.rs` for mount and PID).
//!
//! A probe child tries a few kernel calls and exits with a code that says how they went. It
//! is made with `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own ([`ChildStack`]): it
//! shares this process's memory instead of getting a copy of it, and the probing thread waits
//! until it has exited. A `fork` of this multi-threaded process copies the page tables of all
//! of its memory while holding the lock that every page fault of its other threads needs, and
//! afterwards each page the process writes is a copy-on-write fault; the probes run while a
//! run starts, so that cost fell on the run's start-up.
//!
//! The child runs beside the process's other threads, on the same memory. It touches nothing
//! of theirs: it makes system calls on data prepared before the clone, writes to its own
//! stack only and exits with `_exit`. Every signal is blocked across the clone, so no signal
//! handler of the process runs in it.

use std::io;

use crate::program::ChildStack;
use crate::unavailable::ProbeError;

/// Runs `body` in a child that shares this process's memory, on `stack`, and waits for it:
/// returns the child's exit code (`body`'s return value, which must be 0–255). Errors:
/// [`ProbeError::Os`] when the clone or the wait fails, [`ProbeError::Killed`] when the child
/// died from a signal.
///
/// # Safety
///
/// `body` runs in the child, beside this process's other threads and on their memory: it may
/// only make async-signal-safe system calls on data prepared before this call (no allocation,
/// no lock, no panic). It may call `run` again with another stack. The caller must not unmap
/// `stack` while a child may still run on it: a child killed while it waits for a grandchild
/// leaves that grandchild running on the grandchild's stack.
pub(crate) unsafe fn run<F: FnMut() -> i32>(stack: &mut ChildStack, body: &mut F) -> Result<i32, ProbeError> {
    // SAFETY: the child runs `enter::<F>` on its own stack, which nothing else uses (`&mut`),
    // with a pointer to `body`, which lives on this thread's stack until the clone returns;
    // CLONE_VFORK makes this thread wait until the child has exited (it never executes a
    // program). Every signal is blocked across the clone with the system call itself (the C
    // library's `pthread_sigmask` leaves its own two internal signals unblocked) and the mask
    // is restored after.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        set_mask(&all, &mut mask);
        let pid = libc::clone(
            enter::<F>,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_mut(body).cast(),
        );
        let failed = (pid < 0).then(ProbeError::last_os_error);
        set_mask(&mask, std::ptr::null_mut());
        match failed {
            Some(error) => return Err(error),
            None => pid,
        }
    };
    wait(pid)
}

/// Sets this thread's signal mask to `mask` (the old one into `old` unless null) with the
/// `rt_sigprocmask` system call: the kernel's signal set is 8 bytes.
unsafe fn set_mask(mask: &libc::sigset_t, old: *mut libc::sigset_t) {
    // SAFETY: both point at sigset_t values at least 8 bytes long (or `old` is null).
    unsafe {
        libc::syscall(libc::SYS_rt_sigprocmask, libc::SIG_SETMASK, std::ptr::from_ref(mask), old, 8usize);
    }
}

/// The child's entry: runs the body [`run`] was given and exits with its code.
extern "C" fn enter<F: FnMut() -> i32>(body: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `body` is the `&mut F` that `run` passed to `clone`, alive while this child runs.
    let body = unsafe { &mut *body.cast::<F>() };
    let code = body();
    // SAFETY: ends this child only (exit_group of its own thread group).
    unsafe { libc::_exit(code) }
}

/// Reaps child `pid`: its exit code, or [`ProbeError::Killed`].
fn wait(pid: libc::pid_t) -> Result<i32, ProbeError> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: valid pointer to a local.
        if unsafe { libc::waitpid(pid, &mut status, 0) } >= 0 {
            break;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(ProbeError::Os(err.raw_os_error().unwrap_or(libc::EINVAL)));
        }
    }
    if libc::WIFEXITED(status) { Ok(libc::WEXITSTATUS(status)) } else { Err(ProbeError::Killed) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_exit_code_is_returned() {
        let mut stack = ChildStack::new().unwrap();
        // SAFETY: the body makes no call at all.
        assert_eq!(unsafe { run(&mut stack, &mut || 7) }, Ok(7));
        // SAFETY: as above.
        assert_eq!(unsafe { run(&mut stack, &mut || 0) }, Ok(0));
    }

    /// The child sees what the parent prepared (shared memory) and runs in another process.
    #[test]
    fn the_child_is_another_process_on_the_same_memory() {
        let mut stack = ChildStack::new().unwrap();
        let parent = std::process::id() as i32;
        let prepared = 42;
        // SAFETY: the child's body makes one system call (getpid) and reads the parent's memory.
        let code = unsafe {
            run(&mut stack, &mut || {
                // SAFETY: getpid has no preconditions.
                let own = libc::getpid();
                if own != parent && prepared == 42 { 0 } else { 1 }
            })
        };
        assert_eq!(code, Ok(0));
    }

    /// A child may start a grandchild on a second stack.
    #[test]
    fn a_child_can_run_a_grandchild() {
        let mut outer = ChildStack::new().unwrap();
        let mut inner = ChildStack::new().unwrap();
        // SAFETY: each body runs a child on its own stack and makes no other call.
        let code = unsafe {
            run(&mut outer, &mut || match run(&mut inner, &mut || 5) {
                Ok(code) => code + 1,
                Err(_) => 99,
            })
        };
        assert_eq!(code, Ok(6));
    }

    #[test]
    fn a_child_killed_by_a_signal_is_reported() {
        let mut stack = ChildStack::new().unwrap();
        // SAFETY: the child's body makes system calls only (getpid, kill).
        let code = unsafe {
            run(&mut stack, &mut || {
                // Raises SIGKILL in this (child) process only.
                libc::kill(libc::getpid(), libc::SIGKILL);
                0
            })
        };
        assert_eq!(code, Err(ProbeError::Killed));
    }
}
