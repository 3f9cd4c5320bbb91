//! What the operating system says this process used: CPU time and peak resident memory, for
//! `timing.json` and the benchmark. Linux `/proc`; `None` where it is not available. Never
//! read inside the simulation (the figures differ between identical runs).

/// CPU time this process has run so far, seconds (`/proc/self/schedstat`, first field, ns).
pub fn cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
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
