//! Packet-engine benchmark: link-hops per second on loaded fat-trees.
//!
//! Cases (all links 100 Gb/s, cables 3 m host / 20 m fabric, MTU 4096 B + 82 B header,
//! 500 ns switch latency, 64 MiB per-port tail-drop buffers so nothing drops, fixed-rate
//! senders at line rate, per-flow ECMP), as in `scenarios/catalogue/fat_tree_k8_permutation.toml`:
//!
//! - `k8-perm`: k=8 fat-tree (128 hosts), random permutation of 16 MiB flows, run to completion;
//! - `k16-perm`: k=16 (1024 hosts), permutation of 4 MiB flows, run to completion;
//! - `k16-websearch`: k=16, Poisson arrivals at load 0.5 with WebSearch sizes over 1 ms,
//!   simulated for those 1 ms;
//! - `k32-perm`: k=32 (8192 hosts), permutation of 512 KiB flows, run to completion.
//!
//! Each case is built and run twice, once with `WheelQueue` and once with `HeapQueue`; the two
//! runs must give identical totals, event counts, end times and per-flow records (a queue
//! structure must never change a result). The headline figure is link-hops per wall-clock
//! second, `RunTotals::link_hops / RunReport::wall_elapsed` (link-hops = packets placed on a
//! link). Build time is topology + routes + `Fabric::new`; peak memory is the process's
//! `VmHWM` (reset through `/proc/self/clear_refs` before each build where the kernel allows).
//!
//! Run: `cargo bench -p fabrics --bench engine` (all cases, about 1-2 minutes), or name cases:
//! `cargo bench -p fabrics --bench engine -- k8 k32`.

use fabrics::engine::{EngineConfig, Ev, Fabric, RunTotals};
use fabrics::models::{AnyBuffer, PerPortTailDrop};
use fabrics::routing::Routes;
use fabrics::topology::{LinkInfo, fat_tree};
use fabrics::traffic::{FlowSizeCdf, FlowSpec, POISSON_STREAM_BASE, PoissonSpec, TrafficLimits, permutation, poisson};
use sim_core::rng::stream;
use sim_core::{BitsPerSec, Bytes, Duration, EventQueue, HeapQueue, RngStreams, RunLimits, RunReport, SimTime, WheelQueue};
use std::ops::ControlFlow;

const WEB_SEARCH: &str = include_str!("../../scenarios/catalogue/cdf/WebSearch_distribution.txt");
const SEED: u64 = 7;
const MIB: u64 = 1 << 20;

#[derive(Clone, Copy)]
enum Workload {
    /// Every host sends `size` bytes to a distinct host at time zero.
    Permutation { size: u64 },
    /// Poisson arrivals at `load` with WebSearch sizes over `duration`.
    WebSearch { load: f64, duration: Duration },
}

#[derive(Clone, Copy)]
struct Case {
    name: &'static str,
    k: u32,
    workload: Workload,
    /// Simulated-time limit (`None`: run until every flow completes).
    end_time: Option<SimTime>,
}

const CASES: [Case; 4] = [
    Case {
        name: "k8-perm",
        k: 8,
        workload: Workload::Permutation { size: 16 * MIB },
        end_time: None,
    },
    Case {
        name: "k16-perm",
        k: 16,
        workload: Workload::Permutation { size: 4 * MIB },
        end_time: None,
    },
    Case {
        name: "k16-websearch",
        k: 16,
        workload: Workload::WebSearch {
            load: 0.5,
            duration: Duration::from_ms(1),
        },
        end_time: Some(SimTime(1_000_000_000)),
    },
    Case {
        name: "k32-perm",
        k: 32,
        workload: Workload::Permutation { size: MIB / 2 },
        end_time: None,
    },
];

impl Case {
    fn workload_label(&self) -> String {
        match self.workload {
            Workload::Permutation { size } if size >= MIB => format!("permutation {} MiB", size / MIB),
            Workload::Permutation { size } => format!("permutation {} KiB", size / 1024),
            Workload::WebSearch { load, duration } => {
                format!("WebSearch load {load}, {} ms", duration.ps() / 1_000_000_000)
            }
        }
    }
}

/// The one wall-clock reader of this benchmark (build times; runs use `RunReport::wall_elapsed`).
#[allow(clippy::disallowed_methods, reason = "benchmark timing")]
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t0 = std::time::Instant::now();
    let out = f();
    (out, t0.elapsed().as_secs_f64())
}

/// A `/proc/self/status` field in bytes (`VmHWM`, `VmRSS`), if readable.
fn proc_status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kb: u64 = line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Resets the peak-RSS counter (`echo 5 > /proc/self/clear_refs`, Linux >= 4.0).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

struct Built {
    fabric: Fabric,
    n_hosts: usize,
    n_flows: usize,
    routes_bytes: usize,
    build_s: f64,
}

fn build(case: &Case) -> Built {
    let ((fabric, n_hosts, n_flows, routes_bytes), build_s) = timed(|| {
        let host_link = LinkInfo {
            rate: BitsPerSec::from_gbps(100),
            delay: Duration::from_ns(15),
        };
        let fabric_link = LinkInfo {
            rate: BitsPerSec::from_gbps(100),
            delay: Duration::from_ns(100),
        };
        let topo = fat_tree::build(case.k, host_link, fabric_link).expect("valid fat-tree");
        let routes = Routes::ecmp(&topo);
        let routes_bytes = routes.memory_bytes();
        let n_hosts = topo.n_hosts();
        let streams = RngStreams::new(SEED);
        let limits = TrafficLimits::DEFAULT;
        let flows: Vec<FlowSpec> = match case.workload {
            Workload::Permutation { size } => {
                let mut rng = streams.stream(stream::WORKLOAD);
                permutation(n_hosts as u32, Bytes(size), SimTime::ZERO, &mut rng, limits).expect("valid permutation")
            }
            Workload::WebSearch { load, duration } => {
                let cdf = FlowSizeCdf::parse(WEB_SEARCH).expect("valid CDF");
                let spec = PoissonSpec {
                    n_hosts: n_hosts as u32,
                    load,
                    host_rate: host_link.rate,
                    start: SimTime::ZERO,
                    duration,
                };
                poisson(&spec, &cdf, &streams, POISSON_STREAM_BASE, limits).expect("valid Poisson workload")
            }
        };
        let n_flows = flows.len();
        let cfg = EngineConfig {
            buffer: AnyBuffer::PerPortTailDrop(PerPortTailDrop { buffer_bytes: 64 * MIB }),
            seed: SEED,
            ..EngineConfig::default()
        };
        let fabric = Fabric::new(&topo, routes, cfg, flows).expect("valid fabric");
        (fabric, n_hosts, n_flows, routes_bytes)
    });
    Built {
        fabric,
        n_hosts,
        n_flows,
        routes_bytes,
        build_s,
    }
}

fn run<Q: EventQueue<Ev> + Default>(fabric: &mut Fabric, case: &Case) -> RunReport {
    let mut sched = fabric.scheduler::<Q>();
    let limits = RunLimits {
        end_time: case.end_time,
        ..RunLimits::default()
    };
    let report = sim_core::run(fabric, &mut sched, &limits, |_| ControlFlow::Continue(()));
    assert!(report.outcome.is_complete(), "{}: run ended by {}", case.name, report.outcome.as_str());
    report
}

/// Everything a run produced that a queue structure must not change.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    totals: RunTotals,
    events: u64,
    end: SimTime,
    flows_digest: u64,
    latency_sum_count: (Option<u64>, u64),
}

fn outcome(fabric: &Fabric, report: &RunReport) -> Outcome {
    // Order-sensitive FNV-1a-style fold of every flow's record.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut fold = |x: u64| h = (h ^ x).wrapping_mul(0x0100_0000_01b3);
    for r in fabric.flow_records() {
        fold(r.finish.map_or(u64::MAX, |t| t.ps()));
        fold(r.last_delivery.map_or(u64::MAX, |t| t.ps()));
        fold(r.first_sent.map_or(u64::MAX, |t| t.ps()));
        fold(r.packets_sent);
        fold(r.packets_delivered);
        fold(r.packets_dropped);
        fold(r.bytes_delivered);
    }
    Outcome {
        totals: fabric.totals().clone(),
        events: report.events,
        end: report.end,
        flows_digest: h,
        latency_sum_count: (fabric.packet_latency().mean_ps(), fabric.packet_latency().count()),
    }
}

/// One (case, queue) measurement.
struct Row {
    case: Case,
    queue: &'static str,
    n_hosts: usize,
    n_flows: usize,
    build_s: f64,
    routes_bytes: usize,
    peak_rss: Option<u64>,
    link_hops: u64,
    events: u64,
    sim_end: SimTime,
    wall_s: f64,
}

impl Row {
    fn hops_per_s(&self) -> f64 {
        self.link_hops as f64 / self.wall_s
    }
    fn events_per_s(&self) -> f64 {
        self.events as f64 / self.wall_s
    }
}

fn measure<Q: EventQueue<Ev> + Default>(case: &Case, queue: &'static str) -> (Row, Outcome) {
    let can_reset = reset_peak_rss();
    let mut b = build(case);
    let report = run::<Q>(&mut b.fabric, case);
    let peak_rss = if can_reset { proc_status_bytes("VmHWM") } else { None };
    let out = outcome(&b.fabric, &report);
    let t = b.fabric.totals();
    assert_eq!(
        t.packets_injected,
        t.packets_delivered + t.packets_dropped + b.fabric.packets_in_network(),
        "{}: packet conservation",
        case.name
    );
    let row = Row {
        case: *case,
        queue,
        n_hosts: b.n_hosts,
        n_flows: b.n_flows,
        build_s: b.build_s,
        routes_bytes: b.routes_bytes,
        peak_rss,
        link_hops: t.link_hops,
        events: report.events,
        sim_end: report.end,
        wall_s: report.wall_elapsed.as_secs_f64(),
    };
    println!(
        "{:<14} {:<6} hosts {:>5}  flows {:>6}  build {:>6.3} s  sim {:>8.3} ms  wall {:>7.3} s  \
         link-hops {:>11}  {:>6.2} M/s  events {:>11}  {:>6.2} M/s  ev/hop {:.2}  peak RSS {}",
        case.name,
        queue,
        row.n_hosts,
        row.n_flows,
        row.build_s,
        row.sim_end.ps() as f64 / 1e9,
        row.wall_s,
        row.link_hops,
        row.hops_per_s() / 1e6,
        row.events,
        row.events_per_s() / 1e6,
        row.events as f64 / row.link_hops as f64,
        row.peak_rss.map_or("n/a".to_string(), |b| format!("{:.0} MiB", b as f64 / MIB as f64)),
    );
    drop(b);
    (row, out)
}

fn main() {
    // `cargo bench` passes `--bench`; other arguments select cases by substring.
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let selected: Vec<&Case> = CASES
        .iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    if selected.is_empty() {
        let names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
        eprintln!("no case matches {filters:?}; cases: {names:?}");
        std::process::exit(2);
    }
    if !reset_peak_rss() {
        println!("note: /proc/self/clear_refs is not writable: peak RSS is not reported per case");
    }
    let mut rows = Vec::new();
    for case in selected {
        let (wheel, w) = measure::<WheelQueue<Ev>>(case, "wheel");
        let (heap, h) = measure::<HeapQueue<Ev>>(case, "heap");
        assert_eq!(w, h, "{}: WheelQueue and HeapQueue runs differ", case.name);
        println!(
            "{:<14} wheel/heap identical: {} link-hops, {} events, {} flows completed, flow digest {:016x}; \
             wheel {:.2}x heap",
            case.name,
            w.totals.link_hops,
            w.events,
            w.totals.flows_completed,
            w.flows_digest,
            wheel.hops_per_s() / heap.hops_per_s()
        );
        rows.push(wheel);
        rows.push(heap);
    }

    println!();
    println!(
        "| case | hosts | workload | flows | queue | build (s) | routes (MiB) | peak RSS (MiB) | sim time (ms) | \
         link-hops | events | wall (s) | link-hops/s (M) | events/s (M) |"
    );
    println!("|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {:.2} | {:.1} | {} | {:.3} | {:.1} M | {:.1} M | {:.2} | {:.2} | {:.2} |",
            r.case.name,
            r.n_hosts,
            r.case.workload_label(),
            r.n_flows,
            r.queue,
            r.build_s,
            r.routes_bytes as f64 / MIB as f64,
            r.peak_rss.map_or("n/a".to_string(), |b| format!("{:.0}", b as f64 / MIB as f64)),
            r.sim_end.ps() as f64 / 1e9,
            r.link_hops as f64 / 1e6,
            r.events as f64 / 1e6,
            r.wall_s,
            r.hops_per_s() / 1e6,
            r.events_per_s() / 1e6,
        );
    }
}
