//! Shared helpers for fabricsim's end-to-end tests (the tests themselves are in `tests/`).

use fabrics::engine::{EngineConfig, Fabric};
use fabrics::routing::Routes;
use fabrics::topology::{LinkInfo, Topology};
use fabrics::traffic::FlowSpec;
use sim_core::{BitsPerSec, Duration, RunLimits, RunReport, WheelQueue};
use std::ops::ControlFlow;
use std::path::PathBuf;

/// Path of a shipped scenario in `scenarios/catalogue/`.
pub fn catalogue(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/catalogue")
        .join(name)
}

pub fn link(gbps: u64, delay_ns: u64) -> LinkInfo {
    LinkInfo {
        rate: BitsPerSec::from_gbps(gbps),
        delay: Duration::from_ns(delay_ns),
        kind: fabrics::topology::LinkKind::Network,
    }
}

/// Exit status and the text written to stdout and stderr by one `fabricsim` command.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `fabricsim <args>` in-process, with the plain (one-line) error rendering.
pub fn fabricsim<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Out {
    let argv =
        std::iter::once(std::ffi::OsString::from("fabricsim")).chain(args.iter().map(|a| a.as_ref().to_os_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = scenarios::cli::run(argv, &mut out, &mut err, false);
    Out {
        code,
        stdout: String::from_utf8(out).expect("stdout is UTF-8"),
        stderr: String::from_utf8(err).expect("stderr is UTF-8"),
    }
}

/// Every file of results directory `dir` but `timing.json` (the only one that differs
/// between identical runs), by name, sorted.
pub fn outputs(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "timing.json"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The time series `<stem>.parquet` of the results directory `out` (the default
/// `sample_format`), read back by fabricsim's own reader (`scenarios::columns`): the column
/// names and the rows as text cells (empty where a value is missing). `tests/tests/timeseries.rs`
/// checks that reader against the `parquet` crate's and against the CSV of the same run.
pub fn series(out: &std::path::Path, stem: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let path = out.join(format!("{stem}.parquet"));
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    scenarios::columns::read_parquet(file).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A test path as `&str` (test paths are UTF-8).
pub fn s(p: &std::path::Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// A flow of `size_bytes` from host `src` to host `dst` at time zero, class 0.
pub fn flow(src: u32, dst: u32, size_bytes: u64) -> FlowSpec {
    FlowSpec {
        src,
        dst,
        size: sim_core::Bytes(size_bytes),
        ..Default::default()
    }
}

/// Builds the engine for `topo` with ECMP routes and runs it to completion (or `limits`).
pub fn run(topo: &Topology, cfg: EngineConfig, flows: Vec<FlowSpec>, limits: RunLimits) -> (Fabric, RunReport) {
    let routes = Routes::ecmp(topo);
    let mut fabric = Fabric::new(topo, routes, cfg, flows).expect("valid engine inputs");
    let mut sched = fabric.scheduler::<WheelQueue<_>>();
    let report = sim_core::run(&mut fabric, &mut sched, &limits, |_| ControlFlow::Continue(()));
    (fabric, report)
}

/// Max-min fair rates (progressive filling) of flows over paths of egress ports, given each
/// port's capacity. Returns one rate per flow, in the capacities' unit.
pub fn max_min_rates(paths: &[Vec<u32>], capacity: &dyn Fn(u32) -> f64) -> Vec<f64> {
    use std::collections::BTreeMap;
    let mut rate = vec![0.0; paths.len()];
    let mut frozen = vec![false; paths.len()];
    let mut links: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (f, p) in paths.iter().enumerate() {
        for &l in p {
            links.entry(l).or_default().push(f);
        }
    }
    let mut left: BTreeMap<u32, f64> = links.keys().map(|&l| (l, capacity(l))).collect();
    while frozen.iter().any(|&z| !z) {
        // The tightest link decides the next increment.
        let mut best: Option<(f64, u32)> = None;
        for (&l, fs) in &links {
            let active = fs.iter().filter(|&&f| !frozen[f]).count();
            if active == 0 {
                continue;
            }
            let share = left[&l] / active as f64;
            if best.is_none_or(|(s, _)| share < s) {
                best = Some((share, l));
            }
        }
        let Some((inc, _)) = best else { break };
        for f in 0..paths.len() {
            if !frozen[f] {
                rate[f] += inc;
                for l in &paths[f] {
                    *left.get_mut(l).unwrap() -= inc;
                }
            }
        }
        for (&l, fs) in &links {
            if left[&l] <= 1e-9 * capacity(l) {
                for &f in fs {
                    frozen[f] = true;
                }
            }
        }
    }
    rate
}

/// SplitMix64: a tiny, value-stable generator for randomized tests (they must not depend on a
/// crate's RNG staying the same across versions).
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_min_textbook_case() {
        // Two links of capacity 1: flow 0 uses both, flows 1 and 2 one each -> 1/2 each... and
        // the parking-lot case: flow 0 on links A and B, flow 1 on A, flow 2 and 3 on B.
        let paths = vec![vec![0, 1], vec![0], vec![1], vec![1]];
        let r = max_min_rates(&paths, &|_| 1.0);
        let want = [1.0 / 3.0, 2.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0];
        for (a, b) in r.iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "{r:?}");
        }
    }
}
