//! What the operating system says this process used: CPU time and peak resident memory, for
//! `timing.json` and the benchmark. Linux `/proc`; `None` where it is not available. Never
//! read inside the simulation (the figures differ between identical runs).

/// CPU time this process has run so far, seconds: the main thread's (`/proc/self/schedstat`,
/// first field, ns) and that of the worker threads that have ended (`fabricsim run --threads`).
pub fn cpu_seconds() -> Option<f64> {
    let ns = schedstat_ns("/proc/self/schedstat")?;
    let workers = WORKER_CPU_NS.load(std::sync::atomic::Ordering::Relaxed);
    Some((ns + workers) as f64 / 1e9)
}

/// CPU time of the threads that have ended, ns: a thread adds its own
/// ([`note_thread_cpu`]) as it ends, since `/proc/self/schedstat` counts the main thread only.
static WORKER_CPU_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Adds the calling thread's CPU time to the process's (call it last thing in a worker thread).
pub fn note_thread_cpu() {
    if let Some(ns) = schedstat_ns("/proc/thread-self/schedstat") {
        WORKER_CPU_NS.fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
    }
}

fn schedstat_ns(path: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.split_whitespace().next()?.parse().ok()
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
        if std::path::Path::new("/proc/self/schedstat").exists() {
            assert!(cpu_seconds().is_some_and(|s| s > 0.0));
        }
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(peak_rss_bytes().is_some_and(|b| b > 0));
        }
    }
}
