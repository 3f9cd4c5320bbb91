//! The selection guide's tables and verdicts, from the study's runs (`studies/selection-guide/`).
//!
//! File names say what a run measures: `p2p_<x>` (listed in the manifest), `srv_<shape>_<n>`
//! (n GPUs in one server), `cl_<net>_<servers>_t<tiers>` (AllReduce and all-to-all across
//! servers), `tail_<net>_<servers>` (small-message latency under load). Every table is a pure
//! function of the runs' summaries and the manifest. Numbers are written with fixed decimals so
//! the report is byte-identical for identical runs.

use super::{Counts, Family, Manifest, StudyError, StudyRun};
use crate::report::{GroupSummary, Summary};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Bandwidth within this fraction of the guide's figure: "holds".
pub const BW_TOLERANCE: f64 = 0.15;
/// Latency within this fraction of the guide's figure: "holds".
pub const LAT_TOLERANCE: f64 = 0.30;
/// PCIe 4.0 x16 payload bound, GB/s: 16 GT/s x 16 lanes x 128/130 / 8 x 256/(256 + 24).
pub const PCIE4_FRAMING_BOUND_GBS: f64 = 16.0 * 16.0 * 128.0 / 130.0 / 8.0 * 256.0 / 280.0;
/// The guide's "over 1,000 servers" row: the size the scaling fit is extrapolated to.
pub const EXTRAPOLATE_SERVERS: f64 = 1000.0;

/// In-server shapes in table order: (file key, label, is NVLink).
pub const SHAPES: [(&str, &str, bool); 8] = [
    ("nvswitch3", "NVLink 3 + NVSwitch (HGX A100)", true),
    ("nvswitch4", "NVLink 4 + NVSwitch (HGX H100)", true),
    ("mesh3", "NVLink 3 full mesh", true),
    ("mesh4", "NVLink 4 full mesh", true),
    ("ring3", "NVLink 3 ring", true),
    ("ring4", "NVLink 4 ring", true),
    ("pcie4", "PCIe 4.0 x16 (switch + root complex)", false),
    ("pcie5", "PCIe 5.0 x16 (switch + root complex)", false),
];

/// Networks between servers in table order: (file key, label).
pub const NETWORKS: [(&str, &str); 4] = [
    ("ib_ndr", "InfiniBand NDR 400G"),
    ("roce400", "RoCEv2 400G + DCQCN"),
    ("roce200", "RoCEv2 200G + DCQCN"),
    ("ib_ndr_cc", "InfiniBand NDR 400G + IB CC (Annex A10)"),
];

fn group<'a>(s: &'a Summary, name: &str) -> Option<&'a GroupSummary> {
    s.groups.iter().find(|g| g.name == name)
}

/// (size, busbw GB/s, time us) of a collective workload's rows.
fn coll(s: &Summary, workload: &str) -> Vec<(u64, f64, f64)> {
    s.collectives
        .iter()
        .flatten()
        .filter(|r| r.workload == workload)
        .filter_map(|r| Some((r.size_bytes, r.busbw_gbytes_per_s?, r.time_us?)))
        .collect()
}

pub(super) fn size_label(b: u64) -> String {
    const MIB: u64 = 1 << 20;
    if b >= 1 << 30 && b.is_multiple_of(1 << 30) {
        format!("{} GiB", b >> 30)
    } else if b >= MIB && b.is_multiple_of(MIB) {
        format!("{} MiB", b / MIB)
    } else if b >= 1024 && b.is_multiple_of(1024) {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}

fn opt(x: Option<f64>, decimals: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "–".to_string(),
    }
}

fn pct(now: f64, reference: f64) -> String {
    format!("{:+.0} %", (now / reference - 1.0) * 100.0)
}

/// Least-squares fit of log y = a + b log x; returns (a, b) or `None` with fewer than 2 points.
pub fn power_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

/// The measured point-to-point figures of one interconnect.
#[derive(Clone, Debug, PartialEq)]
pub struct P2p {
    pub label: String,
    pub family: Family,
    /// Payload GB/s of one direction while both directions run.
    pub one_way_gbs: f64,
    /// Both directions together.
    pub both_gbs: f64,
    /// One 64-B message on the idle path, first bit sent to last bit received, us.
    pub wire_us: f64,
    pub endpoint_us: f64,
    /// Endpoint processing without the sender's PCIe fetch (an inline send); = `endpoint_us`
    /// for GPU-to-GPU rows.
    pub endpoint_inline_us: f64,
    pub guide_gbs: Option<f64>,
    pub guide_counts: Option<Counts>,
    pub guide_us: Option<f64>,
}

impl P2p {
    /// Simulated bandwidth counted as the guide counts it.
    pub fn as_guide_counts(&self) -> f64 {
        match self.guide_counts {
            Some(Counts::Both) => self.both_gbs,
            _ => self.one_way_gbs,
        }
    }
    pub fn total_us(&self) -> f64 {
        self.wire_us + self.endpoint_us
    }
    pub fn inline_us(&self) -> f64 {
        self.wire_us + self.endpoint_inline_us
    }
}

/// The in-server results: (shape key, GPUs) -> (AllReduce rows, AllGather rows).
pub type ServerResults = BTreeMap<(String, u32), (Vec<(u64, f64, f64)>, Vec<(u64, f64, f64)>)>;

/// One cluster run's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cluster {
    pub net: String,
    pub servers: u32,
    pub tiers: u32,
    pub ar: Vec<(u64, f64, f64)>,
    pub a2a: Vec<(u64, f64, f64)>,
    pub network: super::NetworkSize,
    pub cost_per_gpu: Option<f64>,
}

/// One latency-under-load run's figures, us.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tail {
    pub net: String,
    pub servers: u32,
    pub idle_p50_us: Option<f64>,
    pub loaded_p50_us: Option<f64>,
    pub loaded_p99_us: Option<f64>,
    pub loaded_max_us: Option<f64>,
    pub background_p99_us: Option<f64>,
    pub drops: u64,
}

/// Everything the tables are made of.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub p2p: Vec<P2p>,
    pub server: ServerResults,
    pub clusters: Vec<Cluster>,
    pub tails: Vec<Tail>,
}

fn complete(run: &StudyRun) -> Result<(), StudyError> {
    if run.summary.run.complete {
        Ok(())
    } else {
        Err(StudyError::Table(format!(
            "{}: the run did not finish (outcome {}); results are partial",
            run.stem, run.summary.run.outcome
        )))
    }
}

/// A collective sweep must end before the next workload starts (they would share the fabric).
fn no_overlap(run: &StudyRun, first: &[(u64, f64, f64)], next_start_ps: Option<u64>) -> Result<(), StudyError> {
    let span_us: f64 =
        first.iter().map(|r| r.2).sum::<f64>() + run.starts_ps.first().copied().unwrap_or(0) as f64 / 1e6;
    if let Some(next) = next_start_ps
        && span_us * 1e6 > next as f64
    {
        return Err(StudyError::Table(format!(
            "{}: the first collective sweep takes {span_us:.1} us and overlaps the next workload (start {} us): move it later in gen.sh",
            run.stem,
            next as f64 / 1e6
        )));
    }
    Ok(())
}

/// Reads the tables' figures out of the runs.
pub fn measure(m: &Manifest, runs: &[StudyRun]) -> Result<Measured, StudyError> {
    let by_stem: BTreeMap<&str, &StudyRun> = runs.iter().map(|r| (r.stem.as_str(), r)).collect();
    let mut out = Measured::default();
    for run in runs {
        complete(run)?;
    }
    let e = &m.endpoint;
    for row in &m.p2p {
        let Some(run) = by_stem.get(row.stem.as_str()) else {
            continue;
        };
        let s = &run.summary;
        let missing = |g: &str| StudyError::Table(format!("{}: no completed group `{g}`", row.stem));
        let lat = group(s, "lat")
            .and_then(|g| g.fct_ns.max)
            .ok_or_else(|| missing("lat"))?;
        let fwd = group(s, "fwd").ok_or_else(|| missing("fwd"))?;
        let rev = group(s, "rev").ok_or_else(|| missing("rev"))?;
        let (tf, tr) = (
            fwd.fct_ns.max.ok_or_else(|| missing("fwd"))?,
            rev.fct_ns.max.ok_or_else(|| missing("rev"))?,
        );
        let (endpoint_ns, inline_ns) = match row.family {
            // The NIC/HCA processing is simulated (in `wire`); the DMA read of a non-inline send is not.
            Family::Network => (e.pcie_rtt_ns, 0.0),
            Family::Pcie | Family::Nvlink => (2.0 * e.gpu_ns, 2.0 * e.gpu_ns),
        };
        out.p2p.push(P2p {
            label: row.label.clone(),
            family: row.family,
            one_way_gbs: fwd.payload_bytes as f64 / tf,
            both_gbs: (fwd.payload_bytes + rev.payload_bytes) as f64 / tf.max(tr),
            wire_us: lat / 1000.0,
            endpoint_us: endpoint_ns / 1000.0,
            endpoint_inline_us: inline_ns / 1000.0,
            guide_gbs: row.guide_gbs,
            guide_counts: row.guide_counts,
            guide_us: row.guide_us,
        });
    }
    for run in runs {
        let parts: Vec<&str> = run.stem.split('_').collect();
        match parts.as_slice() {
            ["srv", shape, n] => {
                let n: u32 = n
                    .parse()
                    .map_err(|_| StudyError::Table(format!("{}: bad GPU count", run.stem)))?;
                let ar = coll(&run.summary, "ar");
                let ag = coll(&run.summary, "ag");
                no_overlap(run, &ar, run.starts_ps.get(1).copied())?;
                out.server.insert((shape.to_string(), n), (ar, ag));
            }
            ["cl", net @ .., servers, tiers] if tiers.starts_with('t') => {
                let net = net.join("_");
                let servers: u32 = servers
                    .parse()
                    .map_err(|_| StudyError::Table(format!("{}: bad server count", run.stem)))?;
                let tiers: u32 = tiers[1..]
                    .parse()
                    .map_err(|_| StudyError::Table(format!("{}: bad tier count", run.stem)))?;
                let ar = coll(&run.summary, "ar");
                no_overlap(run, &ar, run.starts_ps.get(1).copied())?;
                let cost_per_gpu = m
                    .prices
                    .get(&net)
                    .map(|p| run.network.cost(p, tiers) / run.network.gpus.max(1) as f64);
                out.clusters.push(Cluster {
                    a2a: coll(&run.summary, "a2a"),
                    net,
                    servers,
                    tiers,
                    ar,
                    network: run.network,
                    cost_per_gpu,
                });
            }
            ["tail", net @ .., servers] => {
                let s = &run.summary;
                let us = |g: &str, f: fn(&crate::report::Percentiles) -> Option<f64>| {
                    group(s, g).and_then(|g| f(&g.fct_ns)).map(|v| v / 1000.0)
                };
                out.tails.push(Tail {
                    net: net.join("_"),
                    servers: servers
                        .parse()
                        .map_err(|_| StudyError::Table(format!("{}: bad server count", run.stem)))?,
                    idle_p50_us: us("idle", |p| p.p50),
                    loaded_p50_us: us("loaded", |p| p.p50),
                    loaded_p99_us: us("loaded", |p| p.p99),
                    loaded_max_us: us("loaded", |p| p.max),
                    background_p99_us: us("background", |p| p.p99),
                    drops: s.packets.dropped,
                });
            }
            _ => {}
        }
    }
    let order = |net: &str| NETWORKS.iter().position(|n| n.0 == net).unwrap_or(NETWORKS.len());
    out.clusters.sort_by_key(|c| (c.tiers, order(&c.net), c.servers));
    out.tails.sort_by_key(|t| (order(&t.net), t.servers));
    Ok(out)
}

fn largest(rows: &[(u64, f64, f64)]) -> Option<(u64, f64)> {
    rows.iter().max_by_key(|r| r.0).map(|r| (r.0, r.1))
}

pub(super) fn net_label(key: &str) -> &str {
    NETWORKS.iter().find(|n| n.0 == key).map_or(key, |n| n.1)
}

/// The verdict words.
pub const HOLDS: &str = "holds";
pub const HOLDS_IF: &str = "holds with a condition";
pub const FAILS: &str = "does not hold in this model";

/// Verdict of a point-to-point row: (bandwidth verdict, latency verdict).
pub fn p2p_verdict(p: &P2p) -> String {
    let bw = p
        .guide_gbs
        .map(|g| (p.as_guide_counts() / g - 1.0).abs() <= BW_TOLERANCE);
    let within = |x: f64, g: f64| (x / g - 1.0).abs() <= LAT_TOLERANCE;
    let lat = p.guide_us.map(|g| within(p.total_us(), g));
    let inline = p.guide_us.is_some_and(|g| within(p.inline_us(), g));
    match (bw, lat) {
        (Some(true), Some(false)) if inline => format!(
            "{HOLDS_IF}: latency within {:.0} % only for an inline send (no PCIe fetch)",
            LAT_TOLERANCE * 100.0
        ),
        (None, None) => "no guide figure".to_string(),
        (Some(true), Some(true)) | (Some(true), None) | (None, Some(true)) => HOLDS.to_string(),
        (Some(true), Some(false)) => format!(
            "{HOLDS_IF}: bandwidth within {:.0} %, latency not",
            BW_TOLERANCE * 100.0
        ),
        (Some(false), Some(true)) => format!(
            "{HOLDS_IF}: latency within {:.0} %, bandwidth not",
            LAT_TOLERANCE * 100.0
        ),
        _ => FAILS.to_string(),
    }
}

fn p2p_why(p: &P2p) -> &'static str {
    match p.family {
        Family::Pcie => {
            "guide: raw signalling, both directions; model: 128b/130b, 24 B of TLP/DLLP overhead per 256-B MPS, credit-paced"
        }
        Family::Nvlink => {
            "guide: raw, both directions, all links; model: a 16-B header flit per 256-B packet, striped over the links through NVSwitch"
        }
        Family::Network => {
            "guide: signalling rate; model: data rate after encoding/FEC, 4096-B packets with 26 B (IB) or 82 B (RoCEv2) of headers"
        }
    }
}

/// The whole report.
pub fn report(m: &Manifest, runs: &[StudyRun], variant: &str) -> Result<String, StudyError> {
    let d = measure(m, runs)?;
    Ok(render(m, &d, variant))
}

/// Renders the Markdown.
pub fn render(m: &Manifest, d: &Measured, variant: &str) -> String {
    let mut o = String::new();
    let figs = super::figures::figures(d);
    let e = &m.endpoint;
    let _ = writeln!(o, "# The interconnect selection guide, measured\n");
    let _ = writeln!(
        o,
        "Generated by `fabricsim study studies/selection-guide/study.toml{}` (variant `{variant}`); do not edit by hand: \
         change the study (`studies/selection-guide/`) and rerun. Method, inputs and caveats: \
         `studies/selection-guide/README.md`. Every simulated figure is one deterministic packet-level run (seed 1).\n",
        if variant == "full" { " --full" } else { "" }
    );
    if variant != "full" {
        let _ = writeln!(
            o,
            "**This is the reduced (CI) variant**: smaller messages and at most 16 servers. Run with `--full` for \
             1 MiB .. 1 GiB inside servers and 4 .. 128 servers with 2- and 3-tier fat-trees.\n"
        );
    }

    // ---- 1 ----
    let _ = writeln!(o, "## 1. Bandwidth and latency, point to point\n");
    let _ = writeln!(
        o,
        "Bandwidth: two flows at once, one each way, of the same size; payload bytes / completion time. \
         Latency: one 64-B message on the idle path, posted to in memory (`wire`: for the network rows the \
         simulated NIC/HCA processing included, `[fabric.latency]` IB 250 + 200 ns, Ethernet 400 + 350 ns), plus \
         the endpoint processing the engine does not simulate (`study.toml` `[endpoint]`: PCIe DMA round trip \
         {:.0} ns of a non-inline send for the network rows; GPU {:.0} ns per side for PCIe/NVLink). The network \
         rows cross one switch (IB 130 ns, Ethernet 500 ns, 2 m cables). Verdict: bandwidth within {:.0} % and \
         latency within {:.0} % of the guide's figure.\n",
        e.pcie_rtt_ns,
        e.gpu_ns,
        BW_TOLERANCE * 100.0,
        LAT_TOLERANCE * 100.0
    );
    let _ = writeln!(
        o,
        "| interconnect | guide GB/s | sim GB/s one way | sim GB/s as the guide counts | vs guide | guide µs | sim wire µs | + endpoint µs | total µs | vs guide | total, inline send µs | verdict | why they differ |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for p in &d.p2p {
        let counts = match p.guide_counts {
            Some(Counts::Both) => " (both ways)",
            Some(Counts::One) => " (one way)",
            None => "",
        };
        let _ = writeln!(
            o,
            "| {} | {}{} | {:.1} | {:.1} | {} | {} | {:.3} | {:.3} | {:.3} | {} | {:.3} | {} | {} |",
            p.label,
            opt(p.guide_gbs, 1),
            counts,
            p.one_way_gbs,
            p.as_guide_counts(),
            p.guide_gbs.map_or("–".to_string(), |g| pct(p.as_guide_counts(), g)),
            opt(p.guide_us, 1),
            p.wire_us,
            p.endpoint_us,
            p.total_us(),
            p.guide_us.map_or("–".to_string(), |g| pct(p.total_us(), g)),
            p.inline_us(),
            p2p_verdict(p),
            p2p_why(p)
        );
    }
    let _ = writeln!(o);

    // ---- 2 ----
    let _ = writeln!(o, "## 2. Inside one server: AllReduce and AllGather bus bandwidth\n");
    let _ = writeln!(
        o,
        "Ring algorithms (NCCL's ring, one channel), nccl-tests busbw in GB/s (AllReduce: algbw x 2(n-1)/n; AllGather: x (n-1)/n). \
         NVSwitch rows use `ranks = n` GPUs of an 8-GPU HGX board; mesh, ring and PCIe rows build an n-GPU server \
         (PCIe: 2 GPUs per switch, switches on 2 root complexes). A ring needs 3 or more GPUs (2 GPUs in a ring are a mesh).\n"
    );
    for (op, idx) in [("AllReduce", 0usize), ("AllGather", 1)] {
        let sizes: Vec<u64> = {
            let mut s: Vec<u64> = d
                .server
                .values()
                .flat_map(|v| if idx == 0 { &v.0 } else { &v.1 }.iter().map(|r| r.0))
                .collect();
            s.sort_unstable();
            s.dedup();
            s
        };
        let _ = writeln!(o, "### {op} busbw (GB/s)\n");
        let _ = write!(o, "| shape | GPUs |");
        for s in &sizes {
            let _ = write!(o, " {} |", size_label(*s));
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "|---|---|{}", "---|".repeat(sizes.len()));
        for n in [2u32, 4, 8] {
            for (key, label, _) in SHAPES {
                let Some(v) = d.server.get(&(key.to_string(), n)) else {
                    continue;
                };
                let rows = if idx == 0 { &v.0 } else { &v.1 };
                let _ = write!(o, "| {label} | {n} |");
                for s in &sizes {
                    let _ = write!(o, " {} |", opt(rows.iter().find(|r| r.0 == *s).map(|r| r.1), 1));
                }
                let _ = writeln!(o);
            }
        }
        let _ = writeln!(o);
    }
    embed(&mut o, m, &figs, "server_");
    let server_v = server_verdict(d);
    let _ = writeln!(o, "{}\n", server_v.1);

    // ---- 3 ----
    let _ = writeln!(o, "## 3. Between servers: HGX H100 clusters\n");
    let _ = writeln!(
        o,
        "Rail-optimised clusters of HGX H100 servers (8 GPUs, 8 NICs each, GPUDirect path GPU - PCIe switch - NIC), \
         a partial k-ary fat-tree. `2-tier`: k chosen so a rail's servers share one pod (leaf + spine); `3-tier`: a \
         smaller k, so rails span pods and cross the core. AllReduce: hierarchical (ring reduce-scatter on NVLink, ring \
         AllReduce per rail across servers, ring all-gather on NVLink); all-to-all: direct, every GPU to every GPU. \
         RoCEv2: PFC on priority 3, ECN with NVIDIA Onyx's 150/1500 kB thresholds, DCQCN with the firmware preset. \
         busbw in GB/s per GPU (nccl-tests definitions).\n"
    );
    let ar_sizes: Vec<u64> = sorted_sizes(d.clusters.iter().flat_map(|c| c.ar.iter().map(|r| r.0)));
    let a2a_sizes: Vec<u64> = sorted_sizes(d.clusters.iter().flat_map(|c| c.a2a.iter().map(|r| r.0)));
    let _ = write!(o, "| network | servers | GPUs | tiers | switches |");
    for s in &ar_sizes {
        let _ = write!(o, " AllReduce {} |", size_label(*s));
    }
    for s in &a2a_sizes {
        let _ = write!(o, " all-to-all {} |", size_label(*s));
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "|---|---|---|---|---|{}",
        "---|".repeat(ar_sizes.len() + a2a_sizes.len())
    );
    for c in &d.clusters {
        let _ = write!(
            o,
            "| {} | {} | {} | {} | {} |",
            net_label(&c.net),
            c.servers,
            c.network.gpus,
            c.tiers,
            c.network.within(c.tiers).switches
        );
        for s in &ar_sizes {
            let _ = write!(o, " {} |", opt(c.ar.iter().find(|r| r.0 == *s).map(|r| r.1), 1));
        }
        for s in &a2a_sizes {
            let _ = write!(o, " {} |", opt(c.a2a.iter().find(|r| r.0 == *s).map(|r| r.1), 1));
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o);
    embed(&mut o, m, &figs, "cluster_");
    let _ = writeln!(o, "### Small-message latency under load\n");
    let _ = writeln!(
        o,
        "64-B messages between GPUs of different servers (GPU - NVLink/PCIe - NIC - network - NIC - GPU): 10 on the idle \
         fabric, then 200 (one every 0.5 µs) while every GPU sends one flow to another (a random permutation) and 16 GPUs send 1 MiB each \
         to GPU 0 (an incast). Completion times in µs (HdrHistogram, 3 significant digits); p99 of 200 probes is their \
         second-largest. The last network runs InfiniBand with Annex A10 congestion control on (FECN/BECN, CCT; \
         `docs/models/infiniband.md` defaults) for this table only.\n"
    );
    let _ = writeln!(
        o,
        "| network | servers | idle p50 | loaded p50 | loaded p99 | loaded max | background flow p99 | drops |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|");
    for t in &d.tails {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            net_label(&t.net),
            t.servers,
            opt(t.idle_p50_us, 2),
            opt(t.loaded_p50_us, 2),
            opt(t.loaded_p99_us, 2),
            opt(t.loaded_max_us, 2),
            opt(t.background_p99_us, 1),
            t.drops
        );
    }
    let _ = writeln!(o);
    embed(&mut o, m, &figs, "tail_");
    let _ = writeln!(o, "### Scaling, and what is out of reach\n");
    let fits = scaling(d);
    let max_servers = d.clusters.iter().map(|c| c.servers).max().unwrap_or(0);
    let _ = writeln!(
        o,
        "The largest cluster run here has {max_servers} servers ({} GPUs). A packet-level run of 1,000+ servers \
         (8,000+ GPUs, 8,000+ NICs) is out of reach of this variant on a shared 2-core machine; the trend is fitted \
         instead: busbw = a x servers^b (least squares in log-log over the 2-tier runs, largest AllReduce size) and \
         extrapolated to {EXTRAPOLATE_SERVERS:.0} servers. An extrapolation assumes the fabric keeps the same shape; \
         beyond a 2-tier fat-tree's reach it does not (a third tier adds hops and ECMP collisions).\n",
        max_servers * 8
    );
    let _ = writeln!(
        o,
        "| network | points | exponent b | busbw at {EXTRAPOLATE_SERVERS:.0} servers (extrapolated) |"
    );
    let _ = writeln!(o, "|---|---|---|---|");
    for (net, n, fit) in &fits {
        let (b, at) = match fit {
            Some((a, b)) => (
                format!("{b:+.3}"),
                format!("{:.1}", (a + b * EXTRAPOLATE_SERVERS.ln()).exp()),
            ),
            None => ("–".to_string(), "–".to_string()),
        };
        let _ = writeln!(o, "| {} | {n} | {b} | {at} |", net_label(net));
    }
    let _ = writeln!(o);

    // ---- 4 ----
    let _ = writeln!(o, "## 4. Cost and performance per unit cost\n");
    let _ = writeln!(
        o,
        "Network cost = NICs x NIC price + switch ports x port price + network links x link price (`study.toml` \
         `[prices.*]`; the shipped prices are **assumptions**, set your own). Per GPU, in US dollars; performance per \
         cost = busbw per GPU (GB/s) per $1,000 of network per GPU.\n"
    );
    let _ = writeln!(o, "| network | price NIC / port / link ($) |");
    let _ = writeln!(o, "|---|---|");
    for (key, label) in NETWORKS {
        if let Some(p) = m.prices.get(key) {
            let _ = writeln!(
                o,
                "| {label} | {:.0} / {:.0} / {:.0} (assumption) |",
                p.nic, p.switch_port, p.link
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "| network | servers | tiers | NICs | switch ports | links | network $ per GPU | AllReduce busbw (largest) | per $1k/GPU | all-to-all busbw (largest) | per $1k/GPU |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &d.clusters {
        let ar = largest(&c.ar).map(|x| x.1);
        let a2a = largest(&c.a2a).map(|x| x.1);
        let per = |x: Option<f64>| match (x, c.cost_per_gpu) {
            (Some(x), Some(cost)) if cost > 0.0 => Some(x / (cost / 1000.0)),
            _ => None,
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            net_label(&c.net),
            c.servers,
            c.tiers,
            c.network.nics,
            c.network.within(c.tiers).ports,
            c.network.within(c.tiers).links,
            opt(c.cost_per_gpu, 0),
            opt(ar, 1),
            opt(per(ar), 2),
            opt(a2a, 1),
            opt(per(a2a), 2)
        );
    }
    let _ = writeln!(o);

    // ---- 5 ----
    let _ = writeln!(o, "## 5. Verdicts\n");
    let _ = writeln!(o, "| the guide says | verdict | the numbers |");
    let _ = writeln!(o, "|---|---|---|");
    let _ = writeln!(
        o,
        "| 2-8 GPUs in one server: NVLink first | {} | {} |",
        server_v.0, server_v.2
    );
    for (claim, (v, why)) in cluster_verdicts(d) {
        let _ = writeln!(o, "| {claim} | {v} | {why} |");
    }
    for p in &d.p2p {
        if p.guide_gbs.is_none() && p.guide_us.is_none() {
            continue;
        }
        let _ = writeln!(
            o,
            "| {}: {} GB/s, ~{} µs | {} | simulated {:.1} GB/s counted as the guide counts ({}), {:.3} µs with endpoint processing ({}) |",
            p.label,
            opt(p.guide_gbs, 1),
            opt(p.guide_us, 1),
            p2p_verdict(p),
            p.as_guide_counts(),
            p.guide_gbs.map_or("–".to_string(), |g| pct(p.as_guide_counts(), g)),
            p.total_us(),
            p.guide_us.map_or("–".to_string(), |g| pct(p.total_us(), g)),
        );
    }
    let _ = writeln!(o);
    notes(&mut o, m, d);
    o
}

/// Links to the figures whose file names start with `prefix` (`figures.rs`), one per paragraph,
/// in the directory named after the report.
fn embed(o: &mut String, m: &Manifest, figs: &[super::figures::Figure], prefix: &str) {
    let dir = super::figures::dir_name(&m.study.doc);
    for f in figs.iter().filter(|f| f.file.starts_with(prefix)) {
        let _ = writeln!(o, "![{}]({dir}/{})\n", f.title, f.file);
    }
}

/// Section 6: how to read the tables; the statements that depend on the numbers are computed.
fn notes(o: &mut String, m: &Manifest, d: &Measured) {
    let _ = writeln!(o, "## 6. Reading the tables\n");
    let _ = writeln!(
        o,
        "- **Bandwidth counting.** The guide's PCIe and NVLink figures are the sum of both directions at the \
         signalling rate; its InfiniBand figures are one direction. The simulated figures are payload: PCIe loses \
         128b/130b and 24 B per 256-B TLP, NVLink a 16-B header flit per 256 B, InfiniBand 26 B and RoCEv2 82 B per \
         4096-B packet. Framing explains the difference to within a few per cent{}.",
        d.p2p
            .iter()
            .find(|p| p.label.starts_with("PCIe 4.0"))
            .map_or(String::new(), |p| format!(
                " (PCIe 4.0: {:.1} GB/s simulated against a {:.1} GB/s framing bound, 16 GT/s x 16 x 128/130 x 256/280; \
                 credit returns take the rest)",
                p.one_way_gbs,
                PCIE4_FRAMING_BOUND_GBS
            ))
    );
    let _ = writeln!(
        o,
        "- **Latency.** The engine's wire latency is cables, switch traversal, serialization and, on the network \
         rows, the NIC/HCA send and receive processing (calibrated to ConnectX-6's \"sub-600 ns\" and ~0.6 µs \
         over one IB switch); NVLink's 100 ns per link (NVLink 4: 164.2 ns with its PAM4 FEC) and 200 ns per \
         NVSwitch, PCIe's 150 ns per link are assumptions, the PCIe switches' 105 ns (Gen4) and 115 ns (Gen5) \
         Broadcom's figures (`docs/models/nvlink.md`, `docs/models/pcie.md`). The guide's network latencies \
         (0.4-0.7 µs) match adapter-and-switch hardware figures: the `total, inline send` column (no PCIe fetch) \
         is within or near them, the full path with a DMA read of the payload is not. The DMA read and the GPUs' \
         own time are added to, not simulated in, the one-way latency."
    );
    let mesh8 = d
        .server
        .get(&("mesh4".to_string(), 8))
        .and_then(|v| largest(&v.0))
        .map(|x| x.1);
    let ring8 = d
        .server
        .get(&("ring4".to_string(), 8))
        .and_then(|v| largest(&v.0))
        .map(|x| x.1);
    if let (Some(m), Some(r)) = (mesh8, ring8) {
        let _ = writeln!(
            o,
            "- **A surprise: the full mesh.** A ring AllReduce on an 8-GPU NVLink full mesh uses one neighbour's \
             links, 1/7 of the GPU's NVLinks (NVLink 4: 2 of 18), so the mesh ({m:.1} GB/s) is slower than an 8-GPU \
             ring with the same links per GPU ({r:.1} GB/s) and than PCIe 5.0. NCCL would run several rings over different \
             permutations on a mesh; this study runs one channel, the guide's statement is about the links."
        );
    }
    let _ = writeln!(
        o,
        "- **Scaling.** The fit is at a fixed message size. A hierarchical AllReduce's inter-server ring has \
         2(servers-1) steps, so at a fixed size its per-step messages shrink and latency takes over: busbw falls \
         with the server count for every network. That is the trend the fit extrapolates, not a bandwidth limit of \
         the fabric (the fat-trees are non-blocking)."
    );
    let common = d
        .tails
        .iter()
        .filter(|t| t.net == "ib_ndr")
        .filter_map(|t| {
            let r = d.tails.iter().find(|x| x.net == "roce400" && x.servers == t.servers)?;
            Some((t.servers, t.loaded_p99_us?, r.loaded_p99_us?))
        })
        .collect::<Vec<_>>();
    let ib_worse = common.iter().filter(|c| c.1 > c.2).count();
    if !common.is_empty() {
        let _ = writeln!(
            o,
            "- **Tail latency.** Under the permutation and the incast, InfiniBand's loaded p99 is above RoCEv2 \
             400G's at {ib_worse} of {} server counts. Lossless credit flow control spreads the incast's \
             back-pressure upstream (a congestion tree) and probes that share a link wait behind it; DCQCN slows \
             the senders at the source instead. Annex A10 congestion control with the model's default CCT and \
             timer (last rows) does not lower the tail here; it is left at its defaults rather than tuned to the \
             guide. 200 probes per run and one seed: read differences under ~2x as noise.",
            common.len()
        );
    }
    let a2a = d
        .clusters
        .iter()
        .filter(|c| c.net == "ib_ndr")
        .filter_map(|c| {
            let r = d
                .clusters
                .iter()
                .find(|x| x.net == "roce400" && x.servers == c.servers && x.tiers == c.tiers)?;
            Some((largest(&c.a2a)?.1, largest(&r.a2a)?.1))
        })
        .collect::<Vec<_>>();
    let roce_ahead = a2a.iter().filter(|x| x.1 > x.0).count();
    if roce_ahead > 0 {
        let _ = writeln!(
            o,
            "- **All-to-all.** RoCEv2 400G's all-to-all busbw is above NDR InfiniBand's at {roce_ahead} of {} \
             cluster sizes, although the links have the same rate and IB's headers are smaller. The InfiniBand \
             switches queue per output (virtual output queues, `[fabric.infiniband] input_queues = \"voq\"`, the \
             default), but their credits are per input port and VL: 64 KiB each by default, where a RoCEv2 switch \
             here shares 512 KiB per port, so one congested output holds a whole input's credits. With \
             `vl_buffer = \"128KiB\"` (the most a 2048-credit window uses) NDR overtakes RoCEv2 (a hand run at 16 \
             servers: `studies/selection-guide/README.md`, Status).",
            a2a.len()
        );
    }
    let _ = writeln!(
        o,
        "- **Cost.** Only the network is priced (NICs, switch ports, links), at the shipped assumed prices; a \
         2-tier design is priced without the core switches the fat-tree builder adds (they carry no traffic \
         when every NIC is in one pod). Servers, GPUs, power and software are the same for every network \
         and left out, so the per-dollar figures compare networks, not clusters."
    );
    let _ = writeln!(
        o,
        "- **Figures.** The charts are drawn by `fabricsim study` from the same runs as the tables (`{}/*.svg`, \
         next to this file); a line joins measured points only, nothing between them is simulated, and the x axes \
         (message size, servers) are logarithmic.",
        super::figures::dir_name(&m.study.doc)
    );
    let _ = writeln!(o);
}

fn sorted_sizes(it: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut v: Vec<u64> = it.collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// (network, points, fitted (a, b) of busbw = e^a x servers^b).
pub type Fit = (String, usize, Option<(f64, f64)>);

/// The fit of AllReduce busbw at the largest size against servers, over the 2-tier runs.
pub fn scaling(d: &Measured) -> Vec<Fit> {
    NETWORKS
        .iter()
        .filter_map(|(net, _)| {
            let pts: Vec<(f64, f64)> = d
                .clusters
                .iter()
                .filter(|c| c.net == *net && c.tiers == 2)
                .filter_map(|c| largest(&c.ar).map(|(_, bw)| (c.servers as f64, bw)))
                .collect();
            (!pts.is_empty()).then(|| (net.to_string(), pts.len(), power_fit(&pts)))
        })
        .collect()
}

/// (verdict, paragraph for section 2, numbers for the verdict table).
pub fn server_verdict(d: &Measured) -> (String, String, String) {
    let mut worst_ratio = f64::INFINITY;
    let mut lines = Vec::new();
    let mut all_sizes_win = true;
    let mut losers = Vec::new();
    for n in [2u32, 4, 8] {
        let at = |nvlink: bool| -> Vec<(&str, f64)> {
            SHAPES
                .iter()
                .filter(|s| s.2 == nvlink)
                .filter_map(|s| {
                    d.server
                        .get(&(s.0.to_string(), n))
                        .and_then(|v| largest(&v.0))
                        .map(|x| (s.1, x.1))
                })
                .collect()
        };
        let (nv, pc) = (at(true), at(false));
        let worst_nv = nv.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
        let best_pc = pc.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some(b) = best_pc {
            for x in nv.iter().filter(|x| x.1 <= b.1) {
                losers.push(format!("{} with {n} GPUs ({:.1} GB/s)", x.0, x.1));
            }
        }
        if let (Some(w), Some(b)) = (worst_nv, best_pc) {
            let r = w.1 / b.1;
            worst_ratio = worst_ratio.min(r);
            lines.push(format!(
                "{n} GPUs: slowest NVLink shape {} {:.1} GB/s vs fastest PCIe {} {:.1} GB/s ({r:.1}x)",
                w.0, w.1, b.0, b.1
            ));
        }
        // Every size, every NVLink shape against every PCIe shape.
        for s in SHAPES.iter().filter(|s| s.2) {
            for p in SHAPES.iter().filter(|s| !s.2) {
                if let (Some(a), Some(b)) = (d.server.get(&(s.0.to_string(), n)), d.server.get(&(p.0.to_string(), n))) {
                    for (x, y) in a.0.iter().zip(&b.0).chain(a.1.iter().zip(&b.1)) {
                        if x.0 == y.0 && x.1 <= y.1 {
                            all_sizes_win = false;
                        }
                    }
                }
            }
        }
    }
    if lines.is_empty() {
        return (
            "not measured".to_string(),
            String::new(),
            "no in-server runs".to_string(),
        );
    }
    let verdict = if worst_ratio > 1.0 && all_sizes_win {
        HOLDS.to_string()
    } else if worst_ratio > 1.0 {
        format!("{HOLDS_IF}: at the largest size; PCIe matches or beats some NVLink shape at a smaller size")
    } else {
        format!(
            "{HOLDS_IF}: NVLink through NVSwitch or wired as a ring; slower than the best PCIe server: {}",
            losers.join(", ")
        )
    };
    let para = format!(
        "At the largest size (AllReduce): {}. Every NVLink shape beats every PCIe server at every size and GPU count measured: {}.",
        lines.join("; "),
        if all_sizes_win { "yes" } else { "no" }
    );
    (verdict, para.clone(), para)
}

/// (AllReduce busbw at the largest size, busbw per $1k per GPU, loaded p99 us, $ per GPU).
type AtServers = (f64, Option<f64>, Option<f64>, Option<f64>);

/// The per-network figures at one server count (2-tier runs).
fn at_servers(d: &Measured, net: &str, servers: u32) -> Option<AtServers> {
    let c = d
        .clusters
        .iter()
        .find(|c| c.net == net && c.servers == servers && c.tiers == 2)?;
    let (_, bw) = largest(&c.ar)?;
    let per = c.cost_per_gpu.filter(|x| *x > 0.0).map(|cost| bw / (cost / 1000.0));
    let p99 = d
        .tails
        .iter()
        .find(|t| t.net == net && t.servers == servers)
        .and_then(|t| t.loaded_p99_us);
    Some((bw, per, p99, c.cost_per_gpu))
}

/// Verdicts of the guide's between-server rows.
pub fn cluster_verdicts(d: &Measured) -> Vec<(&'static str, (String, String))> {
    let mut out = Vec::new();
    let servers: Vec<u32> = sorted_sizes(d.clusters.iter().filter(|c| c.tiers == 2).map(|c| c.servers as u64))
        .into_iter()
        .map(|s| s as u32)
        .collect();
    let describe = |s: u32| -> String {
        NETWORKS
            .iter()
            .filter_map(|(net, label)| {
                at_servers(d, net, s).map(|(bw, per, p99, cost)| {
                    format!(
                        "{label}: {bw:.1} GB/s, ${} per GPU, {} GB/s per $1k, p99 {} µs",
                        opt(cost, 0),
                        opt(per, 2),
                        opt(p99, 2)
                    )
                })
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    // Under 100 servers: RoCEv2 100-200G is the price-performance choice.
    let small: Vec<u32> = servers.iter().copied().filter(|s| *s < 100).collect();
    let best_per = |s: u32| -> Option<&str> {
        NETWORKS
            .iter()
            .filter_map(|(net, _)| at_servers(d, net, s).and_then(|x| x.1).map(|p| (*net, p)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|x| x.0)
    };
    let wins = small.iter().filter(|s| best_per(**s) == Some("roce200")).count();
    let v = if small.is_empty() {
        ("not measured".to_string(), "no runs under 100 servers".to_string())
    } else {
        let verdict = if wins == small.len() {
            HOLDS.to_string()
        } else if wins > 0 {
            format!(
                "{HOLDS_IF}: RoCEv2 200G has the best busbw per dollar at {wins} of {} sizes",
                small.len()
            )
        } else {
            FAILS.to_string()
        };
        let last = *small.last().expect("not empty");
        (
            format!("{verdict} (with the shipped prices)"),
            format!(
                "best AllReduce busbw per dollar: {}. At {last} servers: {}",
                small
                    .iter()
                    .map(|s| format!("{s} servers {}", best_per(*s).map_or("–", net_label)))
                    .collect::<Vec<_>>()
                    .join(", "),
                describe(last)
            ),
        )
    };
    out.push((
        "under 100 servers: RoCEv2 at 100-200G is the price-performance choice",
        v,
    ));
    // Over 100 servers: IB HDR/NDR.
    let big = servers.iter().copied().filter(|s| *s > 100).max();
    let largest_s = servers.last().copied();
    let v = match (big.or(largest_s), at_servers_pair(d, big.or(largest_s))) {
        (Some(s), Some(((ib_bw, ib_p99), (re_bw, re_p99)))) => {
            let faster = ib_bw >= re_bw * 0.99;
            let tail = match (ib_p99, re_p99) {
                (Some(a), Some(b)) => Some(a <= b),
                _ => None,
            };
            let measured_there = big.is_some();
            let verdict = match (faster, tail, measured_there) {
                (true, Some(true), true) => HOLDS.to_string(),
                (true, Some(true), false) => {
                    format!("{HOLDS_IF}: measured only up to {s} servers (run --full for 128)")
                }
                (true, _, _) | (false, Some(true), _) => {
                    format!(
                        "{HOLDS_IF}: InfiniBand wins on {} only",
                        if faster { "bandwidth" } else { "tail latency" }
                    )
                }
                _ => FAILS.to_string(),
            };
            (
                verdict,
                format!(
                    "at {s} servers, NDR IB {ib_bw:.1} vs RoCEv2 400G {re_bw:.1} GB/s AllReduce busbw; loaded p99 {} vs {} µs. {}",
                    opt(ib_p99, 2),
                    opt(re_p99, 2),
                    describe(s)
                ),
            )
        }
        _ => (
            "not measured".to_string(),
            "no InfiniBand / RoCEv2 400G pair".to_string(),
        ),
    };
    out.push(("over 100 servers: InfiniBand HDR/NDR", v));
    // Over 1,000 servers: NDR with a 3-tier fat-tree.
    let fits = scaling(d);
    let fit_of = |net: &str| fits.iter().find(|f| f.0 == net).and_then(|f| f.2);
    let three: Vec<&Cluster> = d.clusters.iter().filter(|c| c.tiers == 3).collect();
    let three_txt = if three.is_empty() {
        "no 3-tier run in this variant (--full runs 64 and 128 servers with 3 tiers)".to_string()
    } else {
        three
            .iter()
            .filter_map(|c| {
                let two = d
                    .clusters
                    .iter()
                    .find(|x| x.tiers == 2 && x.net == c.net && x.servers == c.servers)?;
                Some(format!(
                    "{} at {} servers: 3-tier {} vs 2-tier {} GB/s",
                    net_label(&c.net),
                    c.servers,
                    opt(largest(&c.ar).map(|x| x.1), 1),
                    opt(largest(&two.ar).map(|x| x.1), 1)
                ))
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let v = match (fit_of("ib_ndr"), fit_of("roce400")) {
        (Some((a, b)), Some((ra, rb))) => {
            let x = EXTRAPOLATE_SERVERS.ln();
            let (ib, re) = ((a + b * x).exp(), (ra + rb * x).exp());
            (
                format!(
                    "{HOLDS_IF}: not simulated at 1,000+ servers; {} by extrapolation",
                    if ib >= re {
                        "NDR IB stays ahead"
                    } else {
                        "NDR IB falls behind RoCEv2 400G"
                    }
                ),
                format!(
                    "fitted busbw ~ servers^b: IB b = {b:+.3}, RoCEv2 400G b = {rb:+.3}; at {EXTRAPOLATE_SERVERS:.0} servers {ib:.1} vs {re:.1} GB/s. {three_txt}"
                ),
            )
        }
        _ => ("not measured".to_string(), three_txt),
    };
    out.push(("over 1,000 servers: InfiniBand NDR, NVLink inside, 3-tier fat-tree", v));
    // Tight budget: RoCEv2.
    let v = match servers.last() {
        Some(&s) => {
            let cheapest = NETWORKS
                .iter()
                .filter_map(|(net, _)| at_servers(d, net, s).and_then(|x| x.3).map(|c| (*net, c)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let verdict = match (cheapest, best_per(s)) {
                (Some((c, _)), Some(b)) if c.starts_with("roce") && b.starts_with("roce") => HOLDS.to_string(),
                (Some((c, _)), _) if c.starts_with("roce") => {
                    format!("{HOLDS_IF}: RoCEv2 is the cheapest, not the best per dollar")
                }
                _ => FAILS.to_string(),
            };
            (format!("{verdict} (with the shipped prices)"), describe(s))
        }
        None => ("not measured".to_string(), String::new()),
    };
    out.push(("on a tight budget: RoCEv2", v));
    out
}

type Pair = ((f64, Option<f64>), (f64, Option<f64>));

fn at_servers_pair(d: &Measured, s: Option<u32>) -> Option<Pair> {
    let s = s?;
    let ib = at_servers(d, "ib_ndr", s)?;
    let re = at_servers(d, "roce400", s)?;
    Some(((ib.0, ib.2), (re.0, re.2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_fit_recovers_an_exact_power_law() {
        let pts: Vec<(f64, f64)> = [2.0f64, 4.0, 8.0, 16.0]
            .iter()
            .map(|x| (*x, 300.0 * x.powf(-0.5)))
            .collect();
        let (a, b) = power_fit(&pts).unwrap();
        assert!((b + 0.5).abs() < 1e-12, "b = {b}");
        assert!((a.exp() - 300.0).abs() < 1e-9, "a = {a}");
        assert!(power_fit(&pts[..1]).is_none());
        assert!(power_fit(&[(4.0, 1.0), (4.0, 2.0)]).is_none());
    }

    fn row(gbs: f64, wire_us: f64) -> P2p {
        P2p {
            label: "x".into(),
            family: Family::Network,
            one_way_gbs: gbs,
            both_gbs: 2.0 * gbs,
            wire_us,
            endpoint_us: 1.0,
            endpoint_inline_us: 0.5,
            guide_gbs: Some(50.0),
            guide_counts: Some(Counts::One),
            guide_us: Some(0.6),
        }
    }

    #[test]
    fn p2p_verdicts_follow_the_tolerances() {
        assert_eq!(p2p_verdict(&row(49.0, -0.4)), HOLDS); // total 0.6 us
        assert!(p2p_verdict(&row(49.0, 0.15)).contains("inline send")); // total 1.15, inline 0.65
        assert!(p2p_verdict(&row(49.0, 1.0)).starts_with(HOLDS_IF)); // latency off, bandwidth ok
        assert_eq!(p2p_verdict(&row(30.0, 1.0)), FAILS);
    }

    #[test]
    fn size_labels() {
        assert_eq!(size_label(1 << 30), "1 GiB");
        assert_eq!(size_label(512 << 10), "512 KiB");
        assert_eq!(size_label(3 << 20), "3 MiB");
        assert_eq!(size_label(100), "100 B");
    }
}
