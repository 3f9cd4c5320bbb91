//! What the operating system says this process used: CPU time (the POSIX CPU clocks) and
//! peak resident memory (Linux `/proc`), for `timing.json` and the benchmark; `None` where
//! they are not available. Never read inside the simulation (the figures differ between
//! identical runs).

/// CPU time this process has run so far, every thread (ended ones too), seconds.
pub fn cpu_seconds() -> Option<f64> {
    cpu_clock_ns(Clock::Process).map(|ns| ns as f64 / 1e9)
}

/// CPU time the calling thread and the worker threads that have ended have run so far, ns:
/// a simulation's, between two readings on the thread that runs it (or starts its workers),
/// wherever that thread is (`fabricsim run`'s main thread, a test's own), and without the
/// process's other threads.
pub fn simulation_cpu_ns() -> Option<u64> {
    let ns = cpu_clock_ns(Clock::Thread)?;
    Some(ns + WORKER_CPU_NS.load(std::sync::atomic::Ordering::Relaxed))
}

/// CPU time of the worker threads that have ended, ns: a thread adds its own
/// ([`note_thread_cpu`]) as it ends.
static WORKER_CPU_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Adds the calling thread's CPU time to the simulation's (call it last thing in a worker thread).
pub fn note_thread_cpu() {
    if let Some(ns) = cpu_clock_ns(Clock::Thread) {
        WORKER_CPU_NS.fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
    }
}

enum Clock {
    Process,
    Thread,
}

/// A CPU clock, ns (`clock_gettime`: exact to the moment, where `/proc/*/schedstat` can lag
/// by a scheduler tick or more on a tickless kernel).
#[cfg(unix)]
fn cpu_clock_ns(clock: Clock) -> Option<u64> {
    use rustix::time::{ClockId, clock_gettime};
    let t = clock_gettime(match clock {
        Clock::Process => ClockId::ProcessCPUTime,
        Clock::Thread => ClockId::ThreadCPUTime,
    });
    let (s, ns) = (u64::try_from(t.tv_sec).ok()?, u64::try_from(t.tv_nsec).ok()?);
    Some(s.saturating_mul(1_000_000_000).saturating_add(ns))
}

#[cfg(not(unix))]
fn cpu_clock_ns(_clock: Clock) -> Option<u64> {
    None
}

/// Peak resident set size of this process, bytes (`VmHWM` of `/proc/self/status`).
pub fn peak_rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_hwm(&text)
}

fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line["VmHWM:".len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_rss_is_parsed_in_bytes() {
        let status = "Name:\tfabricsim\nVmPeak:\t  20000 kB\nVmHWM:\t    1536 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(1536 * 1024));
        assert_eq!(parse_vm_hwm("Name: x\n"), None);
    }

    #[test]
    fn this_process_has_used_cpu_and_memory() {
        if cfg!(unix) {
            assert!(cpu_seconds().is_some_and(|s| s > 0.0));
            // This thread's CPU time grows as it works, and is part of the process's.
            let before = simulation_cpu_ns().expect("a thread CPU clock");
            let mut x = 1u64;
            for i in 0..20_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
            let after = simulation_cpu_ns().expect("a thread CPU clock");
            assert!(after > before, "{x}");
            assert!(after as f64 / 1e9 <= cpu_seconds().expect("a process CPU clock"));
        }
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(peak_rss_bytes().is_some_and(|b| b > 0));
        }
    }
}
