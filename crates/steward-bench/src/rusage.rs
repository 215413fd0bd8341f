//! CPU time as getrusage(2) counts it.

use std::time::Duration;

/// CPU time (user + system) of `who`: `libc::RUSAGE_SELF` (this process, all threads) or
/// `libc::RUSAGE_CHILDREN` (its children that ended and were waited for, with their own
/// waited-for children). Zero when the call fails.
#[allow(unsafe_code, reason = "getrusage(2): std has no resource usage")]
pub(crate) fn cpu_time(who: libc::c_int) -> Duration {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes into the struct passed, which lives for the call.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
