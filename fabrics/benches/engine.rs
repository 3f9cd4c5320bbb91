//! Packet-engine benchmark: link-hops per second on loaded fat-trees.
//!
//! Cases (all links 100 Gb/s, cables 3 m host / 20 m fabric at 5 ns/m, MTU 4096 B + 82 B
//! header, 500 ns switch latency, 64 MiB per-port tail-drop buffers so nothing drops, senders
//! at line rate with no congestion control, per-flow ECMP), after
//! `scenarios/catalogue/fat_tree_k8_permutation.toml`:
//!
//! - `k8-perm`: k=8 fat-tree (128 hosts), random permutation of 16 MiB flows, run to completion;
//! - `k16-perm`: k=16 (1024 hosts), permutation of 4 MiB flows, run to completion;
//! - `k16-websearch`: k=16, Poisson arrivals at load 0.5 with WebSearch sizes
//!   (`scenarios/catalogue/cdf/WebSearch_distribution.txt`) over 1 ms, simulated for that 1 ms;
//! - `k32-perm`: k=32 (8192 hosts), permutation of 512 KiB flows, run to completion;
//! - `k16-ib-perm`, `k32-ib-perm`: the same permutations on InfiniBand (EDR 100 Gb/s links,
//!   26-B headers, 130 ns cut-through switches, one VL with 1024-credit input buffers,
//!   credits returned by flow-control packets, which count as link-hops).
//!
//! Every (case, queue) run happens in a fresh child process (this binary with `--child`), so
//! that each peak RSS (`VmHWM` from `/proc/self/status`) is that run's own and no run inherits
//! another's heap. Each case runs with `WheelQueue` and with `HeapQueue`, `--reps` times
//! (default 3), interleaved; the figure kept is the fastest repetition (the machine is shared
//! and noisy; the minimum wall time is the least disturbed). All runs of a case must agree on
//! a digest of totals, event count, end time, packet latencies and every flow's record:
//! the queue structure (and the process) must never change a result.
//!
//! Figures: link-hops per wall-clock second, `RunTotals::link_hops / RunReport::wall_elapsed`
//! (link-hops = packets placed on a link), and events per second. Build time is topology +
//! routes + workload + `Fabric::new`.
//!
//! Run: `cargo bench -p fabrics --bench engine` (all cases, about a minute), or pick cases,
//! queue and repetitions: `cargo bench -p fabrics --bench engine -- k32 --queue=wheel --reps=1`.

use fabrics::engine::{EngineConfig, Ev, Fabric};
use fabrics::models::{AnyBuffer, PerPortTailDrop};
use fabrics::routing::Routes;
use fabrics::topology::{LinkInfo, LinkKind, fat_tree};
use fabrics::traffic::{FlowSizeCdf, FlowSpec, POISSON_STREAM_BASE, PoissonSpec, TrafficLimits, permutation, poisson};
use sim_core::rng::stream;
use sim_core::{BitsPerSec, Bytes, Duration, EventQueue, HeapQueue, RngStreams, RunLimits, SimTime, WheelQueue};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::process::Command;

const WEB_SEARCH: &str = include_str!("../../scenarios/catalogue/cdf/WebSearch_distribution.txt");
const SEED: u64 = 7;
const MIB: u64 = 1 << 20;
const QUEUES: [&str; 2] = ["wheel", "heap"];

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
    /// InfiniBand (credit-based) instead of the plain Ethernet fabric.
    ib: bool,
    workload: Workload,
    /// Simulated-time limit (`None`: run until every flow completes).
    end_time: Option<SimTime>,
}

const CASES: [Case; 6] = [
    Case {
        name: "k8-perm",
        k: 8,
        ib: false,
        workload: Workload::Permutation { size: 16 * MIB },
        end_time: None,
    },
    Case {
        name: "k16-perm",
        k: 16,
        ib: false,
        workload: Workload::Permutation { size: 4 * MIB },
        end_time: None,
    },
    Case {
        name: "k16-websearch",
        k: 16,
        ib: false,
        workload: Workload::WebSearch {
            load: 0.5,
            duration: Duration::from_ms(1),
        },
        end_time: Some(SimTime(1_000_000_000)),
    },
    Case {
        name: "k32-perm",
        k: 32,
        ib: false,
        workload: Workload::Permutation { size: MIB / 2 },
        end_time: None,
    },
    Case {
        name: "k16-ib-perm",
        k: 16,
        ib: true,
        workload: Workload::Permutation { size: 4 * MIB },
        end_time: None,
    },
    Case {
        name: "k32-ib-perm",
        k: 32,
        ib: true,
        workload: Workload::Permutation { size: MIB / 2 },
        end_time: None,
    },
];

impl Case {
    fn workload_label(&self) -> String {
        match self.workload {
            Workload::Permutation { size } if size >= MIB => format!("permutation, {} MiB flows", size / MIB),
            Workload::Permutation { size } => format!("permutation, {} KiB flows", size / 1024),
            Workload::WebSearch { load, duration } => {
                format!("WebSearch Poisson, load {load}, {} ms", duration.ps() / 1_000_000_000)
            }
        }
    }
}

/// The one wall-clock reader of this benchmark (build time; runs use `RunReport::wall_elapsed`).
#[allow(clippy::disallowed_methods, reason = "benchmark timing")]
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t0 = std::time::Instant::now();
    let out = f();
    (out, t0.elapsed().as_secs_f64())
}

/// A `/proc/self/status` field in bytes (`VmHWM`, `VmRSS`), or 0 if unreadable.
fn proc_status_bytes(field: &str) -> u64 {
    let read = || -> Option<u64> {
        let s = std::fs::read_to_string("/proc/self/status").ok()?;
        let rest = s.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    };
    read().unwrap_or(0)
}

/// Builds topology, routes, workload and engine; returns the fabric, its routes' size in
/// bytes and its number of hosts.
fn build(case: &Case) -> (Fabric, usize, u32) {
    let host_link = LinkInfo {
        rate: BitsPerSec::from_gbps(100),
        delay: Duration::from_ns(15),
        kind: LinkKind::Network,
    };
    let fabric_link = LinkInfo {
        rate: BitsPerSec::from_gbps(100),
        delay: Duration::from_ns(100),
        kind: LinkKind::Network,
    };
    let topo = fat_tree::build(case.k, host_link, fabric_link).expect("valid fat-tree");
    let routes = Routes::ecmp(&topo);
    let routes_bytes = routes.memory_bytes();
    let n_hosts = topo.n_hosts() as u32;
    let streams = RngStreams::new(SEED);
    let limits = TrafficLimits::DEFAULT;
    let flows: Vec<FlowSpec> = match case.workload {
        Workload::Permutation { size } => {
            let mut rng = streams.stream(stream::WORKLOAD);
            permutation(n_hosts, Bytes(size), SimTime::ZERO, &mut rng, limits).expect("valid permutation")
        }
        Workload::WebSearch { load, duration } => {
            let cdf = FlowSizeCdf::parse(WEB_SEARCH).expect("valid CDF");
            let spec = PoissonSpec {
                n_hosts,
                load,
                host_rate: host_link.rate,
                start: SimTime::ZERO,
                duration,
            };
            poisson(&spec, &cdf, &streams, POISSON_STREAM_BASE, limits).expect("valid Poisson workload")
        }
    };
    let cfg = if case.ib {
        EngineConfig {
            header_bytes: fabrics::ib::link::BASE_HEADER_BYTES,
            switch_latency: fabrics::ib::DEFAULT_IB_SWITCH_LATENCY,
            ib: Some(fabrics::ib::IbConfig::default()),
            seed: SEED,
            ..EngineConfig::default()
        }
    } else {
        EngineConfig {
            buffer: AnyBuffer::PerPortTailDrop(PerPortTailDrop { buffer_bytes: 64 * MIB }),
            seed: SEED,
            ..EngineConfig::default()
        }
    };
    let fabric = Fabric::new(&topo, routes, cfg, flows).expect("valid fabric");
    (fabric, routes_bytes, n_hosts)
}

/// Order-sensitive FNV-1a-style fold.
struct Digest(u64);

impl Digest {
    fn fold(&mut self, x: u64) {
        self.0 = (self.0 ^ x).wrapping_mul(0x0100_0000_01b3);
    }
}

/// Digest of everything a run produced that neither the queue nor the process may change.
fn outcome_digest(fabric: &Fabric, events: u64, end: SimTime) -> u64 {
    let mut d = Digest(0xcbf2_9ce4_8422_2325);
    let t = fabric.totals();
    for x in [
        t.link_hops,
        t.packets_injected,
        t.packets_delivered,
        t.packets_dropped,
        t.payload_bytes_injected,
        t.payload_bytes_delivered,
        t.payload_bytes_dropped,
        t.flows_started,
        t.flows_completed,
        events,
        end.ps(),
        fabric.packet_latency().count(),
        fabric.packet_latency().mean_ps().unwrap_or(u64::MAX),
        fabric.packet_latency().quantile_ps(0.99).unwrap_or(u64::MAX),
        fabric.packets_in_network(),
    ] {
        d.fold(x);
    }
    for r in fabric.flow_records() {
        for x in [
            r.finish.map_or(u64::MAX, |t| t.ps()),
            r.last_delivery.map_or(u64::MAX, |t| t.ps()),
            r.first_sent.map_or(u64::MAX, |t| t.ps()),
            r.packets_sent,
            r.packets_delivered,
            r.packets_dropped,
            r.bytes_delivered,
        ] {
            d.fold(x);
        }
    }
    d.0
}

/// The child side: builds and runs one case with queue `Q`, prints one `key=value` line.
fn child<Q: EventQueue<Ev> + Default>(case: &Case) {
    let ((mut fabric, routes_bytes, n_hosts), build_s) = timed(|| build(case));
    let rss_built = proc_status_bytes("VmRSS");
    let mut sched = fabric.scheduler::<Q>();
    let limits = RunLimits {
        end_time: case.end_time,
        ..RunLimits::default()
    };
    let report = sim_core::run(&mut fabric, &mut sched, &limits, |_| ControlFlow::Continue(()));
    let peak_rss = proc_status_bytes("VmHWM");
    assert!(
        report.outcome.is_complete(),
        "{}: run ended by {}",
        case.name,
        report.outcome.as_str()
    );
    let t = fabric.totals();
    assert_eq!(
        t.packets_injected,
        t.packets_delivered + t.packets_dropped + fabric.packets_in_network(),
        "{}: packet conservation",
        case.name
    );
    println!(
        "RESULT hosts={n_hosts} flows={} build_s={build_s} routes_bytes={routes_bytes} rss_built={rss_built} \
         peak_rss={peak_rss} link_hops={} events={} sim_end_ps={} wall_s={} flows_completed={} digest={}",
        fabric.flows().len(),
        t.link_hops,
        report.events,
        report.end.ps(),
        report.wall_elapsed.as_secs_f64(),
        t.flows_completed,
        outcome_digest(&fabric, report.events, report.end),
    );
}

/// One child's figures.
#[derive(Clone)]
struct Run {
    fields: BTreeMap<String, String>,
}

impl Run {
    fn get(&self, key: &str) -> &str {
        self.fields.get(key).map_or("?", String::as_str)
    }
    fn num(&self, key: &str) -> f64 {
        self.get(key).parse().unwrap_or(f64::NAN)
    }
    fn wall_s(&self) -> f64 {
        self.num("wall_s")
    }
    fn hops_per_s(&self) -> f64 {
        self.num("link_hops") / self.wall_s()
    }
    fn events_per_s(&self) -> f64 {
        self.num("events") / self.wall_s()
    }
}

fn spawn_child(case: &Case, queue: &str) -> Run {
    let exe = std::env::current_exe().expect("path of the running benchmark");
    let out = Command::new(exe)
        .arg(format!("--child={}:{queue}", case.name))
        .output()
        .expect("spawn a benchmark child process");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| l.strip_prefix("RESULT "));
    let Some(line) = line.filter(|_| out.status.success()) else {
        eprintln!("{} / {queue}: child failed ({})", case.name, out.status);
        eprintln!("{}{}", stdout, String::from_utf8_lossy(&out.stderr));
        std::process::exit(1);
    };
    let fields = line
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Run { fields }
}

fn mib(bytes: f64) -> f64 {
    bytes / MIB as f64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(spec) = args.iter().find_map(|a| a.strip_prefix("--child=")) {
        let (name, queue) = spec.split_once(':').expect("--child=<case>:<queue>");
        let case = CASES.iter().find(|c| c.name == name).expect("known case");
        match queue {
            "wheel" => child::<WheelQueue<Ev>>(case),
            "heap" => child::<HeapQueue<Ev>>(case),
            other => panic!("unknown queue {other}"),
        }
        return;
    }

    // `cargo bench` passes `--bench`; other arguments select cases by substring.
    let queues: Vec<&str> = match args.iter().find_map(|a| a.strip_prefix("--queue=")) {
        None | Some("both") => QUEUES.to_vec(),
        Some(q) if QUEUES.contains(&q) => vec![q],
        Some(q) => {
            eprintln!("--queue={q}: expected wheel, heap or both");
            std::process::exit(2);
        }
    };
    let reps: usize = args
        .iter()
        .find_map(|a| a.strip_prefix("--reps="))
        .map_or(3, |r| r.parse().expect("--reps=<n>"));
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let selected: Vec<&Case> = CASES
        .iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    if selected.is_empty() {
        let names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
        eprintln!("no case matches {filters:?}; cases: {names:?}");
        std::process::exit(2);
    }

    let mut table = Vec::new();
    for case in selected {
        let mut best: BTreeMap<&str, Run> = BTreeMap::new();
        let mut digests = Vec::new();
        for rep in 0..reps.max(1) {
            for &queue in &queues {
                let r = spawn_child(case, queue);
                println!(
                    "{:<14} {:<6} rep {rep}  build {:>6.3} s  wall {:>7.3} s  link-hops {:>10}  {:>6.2} M/s  \
                     events {:>10}  {:>6.2} M/s  peak RSS {:>5.0} MiB",
                    case.name,
                    queue,
                    r.num("build_s"),
                    r.wall_s(),
                    r.get("link_hops"),
                    r.hops_per_s() / 1e6,
                    r.get("events"),
                    r.events_per_s() / 1e6,
                    mib(r.num("peak_rss")),
                );
                digests.push((queue, r.get("digest").to_string()));
                if best.get(queue).is_none_or(|b| r.wall_s() < b.wall_s()) {
                    best.insert(queue, r);
                }
            }
        }
        let first = &digests[0].1;
        if let Some((q, d)) = digests.iter().find(|(_, d)| d != first) {
            eprintln!(
                "{}: results differ between runs ({} gave digest {d}, {} gave {first})",
                case.name, q, digests[0].0
            );
            std::process::exit(1);
        }
        println!(
            "{:<14} all {} runs identical (digest {first}){}",
            case.name,
            digests.len(),
            match (best.get("wheel"), best.get("heap")) {
                (Some(w), Some(h)) => format!("; wheel {:.2}x heap", h.wall_s() / w.wall_s()),
                _ => String::new(),
            }
        );
        for q in &queues {
            table.push((*case, *q, best[q].clone()));
        }
    }

    println!();
    println!(
        "| case | hosts | workload | flows | queue | build (s) | routes (MiB) | peak RSS (MiB) | sim time (ms) | \
         link-hops | events | wall (s) | link-hops/s | events/s |"
    );
    println!("|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (case, queue, r) in &table {
        println!(
            "| {} | {} | {} | {} | {} | {:.3} | {:.1} | {:.0} | {:.3} | {:.2} M | {:.2} M | {:.2} | {:.2} M | {:.2} M |",
            case.name,
            r.get("hosts"),
            case.workload_label(),
            r.get("flows"),
            queue,
            r.num("build_s"),
            mib(r.num("routes_bytes")),
            mib(r.num("peak_rss")),
            r.num("sim_end_ps") / 1e9,
            r.num("link_hops") / 1e6,
            r.num("events") / 1e6,
            r.wall_s(),
            r.hops_per_s() / 1e6,
            r.events_per_s() / 1e6,
        );
    }
}
