//! Results of a run: the summary (`summary.json`), CSV tables, histogram files and the
//! terminal table. Everything is computed from the engine's integer state at the end of the
//! run, so the same run always yields the same bytes.

use fabrics::engine::{Fabric, FlowRecord, IdealPath, Port};
use fabrics::topology::Topology;
use serde::Serialize;
use sim_core::{LatencyHistogram, RunReport, SimTime};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Version tag of `summary.json`; bump it when the schema changes (see `docs/results.md`).
pub const SUMMARY_SCHEMA: &str = "fabricsim.summary/2";

/// `run.outcome` of a run ended by a signal (Ctrl-C, SIGTERM): `sim_core`'s `stopped`, the
/// only stop the CLI's progress callback asks for.
pub const OUTCOME_INTERRUPTED: &str = "interrupted";

/// `summary.json`. Field order is the order written. Times are in nanoseconds (decimal).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub schema: &'static str,
    pub scenario: ScenarioInfo,
    pub topology: TopologyInfo,
    pub run: RunInfo,
    pub packets: PacketTotals,
    pub flows: FlowTotals,
    pub packet_latency_ns: Percentiles,
    pub fct_ns: Percentiles,
    /// Only when flows that started did not finish: the FCT percentiles with each of them
    /// counted at its elapsed time at the end of the run (censored: a lower bound of its FCT),
    /// so that losing flows never makes the tail look better.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fct_with_unfinished_ns: Option<Percentiles>,
    /// FCT over the ideal FCT of each flow alone on its path (`fct_report.rs`).
    pub slowdown: crate::fct_report::SlowdownSummary,
    pub throughput: Throughput,
    pub hotspots: Vec<Hotspot>,
    /// Per workload group (`[[workload]]` entry), in workload order.
    pub groups: Vec<GroupSummary>,
    /// Whole-run counters of the fabric model, by name ([`fabric_counters`]).
    pub counters: BTreeMap<String, u64>,
    /// InfiniBand: the congestion tree, longest credit stalls first (absent otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub congestion_tree: Vec<crate::ib_report::TreeEdge>,
    /// InfiniBand: the cycle of credit-starved output port/VL pairs of a run that ended
    /// `deadlocked` with packets held (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credit_deadlock: Option<crate::ib_report::CreditDeadlock>,
    /// RoCEv2: the pause tree, breadth-first from its roots (absent when nothing paused).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pause_tree: Vec<crate::roce_report::TreeEdge>,
    /// Collective workloads (`collective_report.rs`); absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<Vec<crate::collective_report::CollectiveRow>>,
    /// Training-step workloads (`training_report.rs`); absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<Vec<crate::training_report::TrainingRow>>,
    /// Per-stage times of hierarchical collectives (`collective_stages.rs`); absent when
    /// there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collective_stages: Option<Vec<crate::collective_stages::StageRow>>,
    /// `trace.json` (`[output] trace`, `trace.rs`); absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::TraceInfo>,
    /// The time series (`[output] sample`, `timeseries.rs`); absent without sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<crate::timeseries::TimeseriesInfo>,
    /// The packet capture (`[output] pcap`, `pcap.rs`); absent without capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcap: Option<crate::pcap::PcapInfo>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ScenarioInfo {
    pub name: String,
    pub description: String,
    pub seed: u64,
    /// SHA-256 of `scenario.resolved.toml` (the scenario with every default filled in).
    pub resolved_sha256: String,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TopologyInfo {
    pub description: String,
    pub hosts: usize,
    pub switches: usize,
    pub links: usize,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunInfo {
    /// What happened: `completed`, `deadlocked`, `stalled`, `end_time`, `event_budget`,
    /// `wall_clock_budget`, `interrupted` ([`crate::outcome::Outcome`]).
    pub outcome: &'static str,
    /// `false` when a budget or a signal cut the run short: the results are partial.
    pub complete: bool,
    pub sim_time_ns: f64,
    pub events: u64,
    /// Packets placed on a link (every hop counts).
    pub link_hops: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PacketTotals {
    pub injected: u64,
    pub delivered: u64,
    pub dropped: u64,
    /// Still queued or on a wire when the run stopped.
    pub in_network: u64,
    pub payload_bytes_injected: u64,
    pub payload_bytes_delivered: u64,
    pub payload_bytes_dropped: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowTotals {
    pub total: u64,
    pub started: u64,
    pub completed: u64,
    /// Flows with at least one dropped packet.
    pub with_drops: u64,
}

/// Percentiles of a histogram, in nanoseconds; all `null` when it is empty.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub mean: Option<f64>,
    pub min: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

/// The FCT histogram `fct` of the finished flows plus every started, unfinished flow of
/// `recs` at its elapsed time at `end`; `None` when every started flow finished.
fn fct_with_unfinished(fct: &LatencyHistogram, recs: &[FlowRecord], end: SimTime) -> Option<Percentiles> {
    let mut unfinished = recs.iter().filter(|r| r.finish.is_none() && r.start <= end).peekable();
    unfinished.peek()?;
    let mut h = fct.clone();
    for r in unfinished {
        h.record(end.since(r.start));
    }
    Some(Percentiles::of(&h))
}

impl Percentiles {
    pub fn of(h: &LatencyHistogram) -> Self {
        let ns = |v: Option<u64>| v.map(ps_to_ns);
        Percentiles {
            count: h.count(),
            mean: ns(h.mean_ps()),
            min: ns(h.min_ps()),
            p50: ns(h.quantile_ps(0.5)),
            p90: ns(h.quantile_ps(0.9)),
            p99: ns(h.quantile_ps(0.99)),
            p999: ns(h.quantile_ps(0.999)),
            max: ns(h.max_ps()),
        }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Throughput {
    /// Payload delivered over the simulated time, all hosts together.
    pub delivered_gbps: f64,
    /// Mean over flows with deliveries of their goodput (bytes delivered / (last delivery - start)).
    pub mean_flow_gbps: Option<f64>,
    /// The same, as a fraction of the bottleneck rate of each flow's path (a GPU's flow that
    /// leaves its server is measured against its NIC, not its NVLink).
    pub mean_flow_fraction_of_bottleneck: Option<f64>,
}

/// One row of the congested-ports ranking.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Hotspot {
    pub port: u32,
    pub node: String,
    pub peer: String,
    pub drops: u64,
    pub mean_queue_bytes: f64,
    pub max_queue_bytes: u64,
    pub utilisation: f64,
    /// Utilisation over the port's active interval (`docs/results.md`).
    pub utilisation_active: f64,
}

/// One workload group: the flows of one `[[workload]]` entry.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GroupSummary {
    /// The entry's `name`, default `workload<i>` (`i` its index, from 0).
    pub name: String,
    /// Traffic class of its flows.
    pub class: u8,
    pub flows: u64,
    pub completed: u64,
    /// Flows with at least one dropped packet.
    pub with_drops: u64,
    pub payload_bytes: u64,
    pub payload_bytes_delivered: u64,
    pub packets_sent: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    /// The group's payload delivered over the simulated time.
    pub delivered_gbps: f64,
    /// Mean goodput over the group's flows with at least one delivery.
    pub mean_flow_gbps: Option<f64>,
    /// Flow completion times of the group's completed flows.
    pub fct_ns: Percentiles,
    /// FCT slowdowns of the group's completed non-empty flows.
    pub slowdown: crate::fct_report::SlowdownStats,
}

/// Name and traffic class of every workload group, in `[[workload]]` order; the name
/// defaults to `workload<i>`.
pub fn group_names(sc: &crate::schema::Scenario) -> Vec<(String, u8)> {
    sc.workload
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let name = w.name().map_or_else(|| format!("workload{i}"), str::to_owned);
            (name, sc.class_of(w))
        })
        .collect()
}

/// The fabric model's whole-run counters, by name: `summary.json` `counters`. `fabricsim
/// check` compares every entry (as `counters.<name>`), so a model adds a counter here and
/// nowhere else.
pub fn fabric_counters(fabric: &Fabric, end: SimTime) -> BTreeMap<String, u64> {
    let t = fabric.totals();
    let ib = fabric
        .ib()
        .map(|ib| crate::ib_report::counters(ib, fabric, end))
        .unwrap_or_default();
    let roce = fabric
        .roce()
        .map(|r| crate::roce_report::counters(r, fabric, end))
        .unwrap_or_default();
    // The base fabric's loss recovery (on RoCEv2 these are among the `roce_` counters).
    let transport = match (fabric.roce(), fabric.transport()) {
        (None, Some(t)) => vec![
            ("transport_acks_sent", t.acks_sent),
            ("transport_nacks_sent", t.nacks_sent),
            ("transport_retransmitted_packets", t.retransmitted),
            ("transport_gbn_timeouts", t.timeouts),
            ("transport_receiver_discards", t.receiver_discards),
            ("transport_control_drops", t.control_drops),
        ],
        _ => Vec::new(),
    };
    [
        ("link_hops", t.link_hops),
        ("packets_injected", t.packets_injected),
        ("packets_delivered", t.packets_delivered),
        ("packets_dropped", t.packets_dropped),
        ("payload_bytes_injected", t.payload_bytes_injected),
        ("payload_bytes_delivered", t.payload_bytes_delivered),
        ("payload_bytes_dropped", t.payload_bytes_dropped),
        ("flows_started", t.flows_started),
        ("flows_completed", t.flows_completed),
    ]
    .into_iter()
    .chain(ib)
    .chain(roce)
    .chain(transport)
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Per-group figures. `groups` gives the name and class of every group (see [`group_names`]);
/// a flow whose group has no entry there is counted under `workload<group>`.
pub fn group_summaries(
    fabric: &Fabric,
    groups: &[(String, u8)],
    ideals: &[Option<IdealPath>],
    end: SimTime,
) -> Vec<GroupSummary> {
    let flows = fabric.flows();
    let n_groups = flows
        .iter()
        .map(|f| f.group as usize + 1)
        .max()
        .unwrap_or(0)
        .max(groups.len());
    let mut members: Vec<Vec<&FlowRecord>> = vec![Vec::new(); n_groups];
    let mut slowdowns = crate::fct_report::per_group(fabric, ideals, n_groups).into_iter();
    for r in fabric.flow_records() {
        members[flows[r.id as usize].group as usize].push(r);
    }
    members
        .iter()
        .enumerate()
        .map(|(g, recs)| {
            let (name, class) = groups.get(g).cloned().unwrap_or_else(|| {
                (
                    format!("workload{g}"),
                    recs.first().map_or(0, |r| flows[r.id as usize].class),
                )
            });
            let goodputs: Vec<f64> = recs.iter().filter_map(|r| r.goodput_bps()).collect();
            let delivered: u64 = recs.iter().map(|r| r.bytes_delivered).sum();
            // One histogram at a time (each is ~330 KiB), only for groups with completions.
            let fct_ns = if recs.iter().any(|r| r.finish.is_some()) {
                let mut h = LatencyHistogram::new();
                for ps in recs.iter().filter_map(|r| r.fct_ps()) {
                    h.record(sim_core::Duration(ps));
                }
                Percentiles::of(&h)
            } else {
                Percentiles::of(&LatencyHistogram::new())
            };
            GroupSummary {
                name,
                class,
                flows: recs.len() as u64,
                completed: recs.iter().filter(|r| r.finish.is_some()).count() as u64,
                with_drops: recs.iter().filter(|r| r.packets_dropped > 0).count() as u64,
                payload_bytes: recs.iter().map(|r| r.size_bytes).sum(),
                payload_bytes_delivered: delivered,
                packets_sent: recs.iter().map(|r| r.packets_sent).sum(),
                packets_delivered: recs.iter().map(|r| r.packets_delivered).sum(),
                packets_dropped: recs.iter().map(|r| r.packets_dropped).sum(),
                delivered_gbps: gbps(delivered, end),
                mean_flow_gbps: (!goodputs.is_empty())
                    .then(|| goodputs.iter().sum::<f64>() / goodputs.len() as f64 / 1e9),
                fct_ns,
                slowdown: slowdowns.next().expect("one per group"),
            }
        })
        .collect()
}

/// `bytes x 8` over `[0, end]`, in Gb/s; 0 when `end` is 0.
fn gbps(bytes: u64, end: SimTime) -> f64 {
    if end.ps() == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / end.ps() as f64 * 1000.0
    }
}

pub fn ps_to_ns(ps: u64) -> f64 {
    ps as f64 / 1000.0
}

/// Per-port figures derived at the end of a run.
pub struct PortRow<'a> {
    pub id: u32,
    pub port: &'a Port,
    pub node: &'a str,
    pub port_index: u32,
    pub peer: &'a str,
    pub mean_queue_bytes: f64,
    /// Busy time over the whole run `[0, end]`.
    pub utilisation: f64,
    /// Busy time over the port's active interval ([`active_intervals`]); the whole run for a
    /// port no flow is routed through (reverse ACK/CNP paths, other sprayed links).
    pub utilisation_active: f64,
}

/// The active interval of every port: from the first packet sent to the last delivered of
/// the flows routed through it (`flows.csv` `path`; a flow still open at `end` counts to
/// `end`). `None` for a port no flow is routed through.
pub fn active_intervals(
    fabric: &Fabric,
    ideals: &[Option<IdealPath>],
    end: SimTime,
) -> Vec<Option<(SimTime, SimTime)>> {
    let mut v: Vec<Option<(SimTime, SimTime)>> = vec![None; fabric.ports().len()];
    for r in fabric.flow_records() {
        let (Some(first), Some(path)) = (r.first_sent, ideals[r.id as usize].as_ref()) else {
            continue;
        };
        let last = if r.finish.is_some() {
            r.last_delivery.unwrap_or(end)
        } else {
            end
        };
        for &p in &path.ports {
            let e = &mut v[p as usize];
            *e = Some(e.map_or((first, last), |(a, b)| (a.min(first), b.max(last))));
        }
    }
    v
}

pub fn port_rows<'a>(
    fabric: &'a Fabric,
    topo: &'a Topology,
    end: SimTime,
    ideals: &[Option<IdealPath>],
) -> Vec<PortRow<'a>> {
    let names: Vec<&str> = topo.graph.node_indices().map(|n| topo.graph[n].name.as_str()).collect();
    let base = fabric.port_base();
    let active = active_intervals(fabric, ideals, end);
    let busy_over = |busy_ps: u64, span_ps: u64| {
        if span_ps == 0 {
            0.0
        } else {
            (busy_ps as f64 / span_ps as f64).min(1.0)
        }
    };
    fabric
        .ports()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let busy_ps = sim_core::serialization_time(sim_core::Bytes(p.stats.bytes_tx), p.rate).ps();
            PortRow {
                id: i as u32,
                port: p,
                node: names[p.node as usize],
                port_index: i as u32 - base[p.node as usize],
                peer: names[p.peer_node as usize],
                mean_queue_bytes: p.stats.queue_bytes.mean_until(end),
                utilisation: busy_over(busy_ps, end.ps()),
                utilisation_active: busy_over(busy_ps, active[i].map_or(end, |(a, b)| SimTime(b.ps() - a.ps())).ps()),
            }
        })
        .collect()
}

/// Ports ranked by congestion: drops first, then mean queue, max queue, utilisation.
pub fn hotspots(rows: &[PortRow<'_>], n: usize) -> Vec<Hotspot> {
    let mut idx: Vec<usize> = (0..rows.len()).collect();
    idx.sort_by(|&a, &b| {
        let (ra, rb) = (&rows[a], &rows[b]);
        rb.port
            .stats
            .drops
            .cmp(&ra.port.stats.drops)
            .then(rb.mean_queue_bytes.total_cmp(&ra.mean_queue_bytes))
            .then(rb.port.stats.queue_bytes.max().cmp(&ra.port.stats.queue_bytes.max()))
            .then(rb.utilisation.total_cmp(&ra.utilisation))
            .then(a.cmp(&b))
    });
    idx.into_iter()
        .take(n)
        .map(|i| &rows[i])
        .filter(|r| r.port.stats.drops > 0 || r.port.stats.queue_bytes.max() > 0)
        .map(|r| Hotspot {
            port: r.id,
            node: r.node.to_string(),
            peer: r.peer.to_string(),
            drops: r.port.stats.drops,
            mean_queue_bytes: r.mean_queue_bytes,
            max_queue_bytes: r.port.stats.queue_bytes.max(),
            utilisation: r.utilisation,
            utilisation_active: r.utilisation_active,
        })
        .collect()
}

/// What the report reads besides the fabric: the run's path of every flow and the
/// `[output]` choices.
pub struct ReportInputs<'a> {
    /// Path and ideal FCT of every flow ([`crate::fct_report::ideals`]).
    pub ideals: &'a [Option<IdealPath>],
    /// Rows of the hotspot ranking and of the trees.
    pub n_hotspots: usize,
    /// User flow-size bucket edges in bytes, if any.
    pub slowdown_edges: Option<&'a [u64]>,
}

/// Builds the summary of a finished run. `groups`: name and class of every workload group
/// ([`group_names`]).
pub fn summarize(
    fabric: &Fabric,
    topo: &Topology,
    meta: ScenarioInfo,
    report: &RunReport,
    inputs: &ReportInputs<'_>,
    groups: &[(String, u8)],
) -> Summary {
    let n_hotspots = inputs.n_hotspots;
    let ideals = inputs.ideals;
    let t = fabric.totals();
    let end = report.end;
    let outcome = crate::outcome::Outcome::of(report, fabric);
    let rows = port_rows(fabric, topo, end, ideals);
    let recs = fabric.flow_records();
    let bottleneck = |r: &FlowRecord| ideals[r.id as usize].as_ref().map(|p| p.bottleneck.get() as f64);
    let goodputs: Vec<(f64, f64)> = recs
        .iter()
        .filter_map(|r| {
            let g = r.goodput_bps()?;
            Some((g, g / bottleneck(r)?))
        })
        .collect();
    let mean = |f: fn(&(f64, f64)) -> f64| {
        (!goodputs.is_empty()).then(|| goodputs.iter().map(f).sum::<f64>() / goodputs.len() as f64)
    };
    Summary {
        schema: SUMMARY_SCHEMA,
        scenario: meta,
        topology: TopologyInfo {
            description: topo.description.clone(),
            hosts: topo.n_hosts(),
            switches: topo.n_switches(),
            links: topo.n_links(),
        },
        run: RunInfo {
            outcome: outcome.as_str(),
            complete: outcome.complete(),
            sim_time_ns: ps_to_ns(end.ps()),
            events: report.events,
            link_hops: t.link_hops,
        },
        packets: PacketTotals {
            injected: t.packets_injected,
            delivered: t.packets_delivered,
            dropped: t.packets_dropped,
            in_network: fabric.packets_in_network(),
            payload_bytes_injected: t.payload_bytes_injected,
            payload_bytes_delivered: t.payload_bytes_delivered,
            payload_bytes_dropped: t.payload_bytes_dropped,
        },
        flows: FlowTotals {
            total: recs.len() as u64,
            started: t.flows_started,
            completed: t.flows_completed,
            with_drops: recs.iter().filter(|r| r.packets_dropped > 0).count() as u64,
        },
        packet_latency_ns: Percentiles::of(fabric.packet_latency()),
        fct_ns: Percentiles::of(fabric.fct()),
        fct_with_unfinished_ns: fct_with_unfinished(fabric.fct(), recs, end),
        slowdown: crate::fct_report::summary(fabric, ideals, inputs.slowdown_edges),
        throughput: Throughput {
            delivered_gbps: gbps(t.payload_bytes_delivered, end),
            mean_flow_gbps: mean(|g| g.0 / 1e9),
            mean_flow_fraction_of_bottleneck: mean(|g| g.1),
        },
        hotspots: hotspots(&rows, n_hotspots),
        groups: group_summaries(fabric, groups, ideals, end),
        counters: fabric_counters(fabric, end),
        congestion_tree: fabric
            .ib()
            .map(|ib| crate::ib_report::congestion_tree(ib, fabric, topo, n_hotspots))
            .unwrap_or_default(),
        credit_deadlock: match (outcome, fabric.ib()) {
            (crate::outcome::Outcome::Deadlocked, Some(ib)) if fabric.roce().is_none_or(|r| r.deadlock.is_none()) => {
                crate::ib_report::credit_deadlock(ib, fabric, topo)
            }
            _ => None,
        },
        pause_tree: fabric
            .roce()
            .map(|r| crate::roce_report::pause_tree(r, fabric, topo, end, n_hotspots))
            .unwrap_or_default(),
        collectives: None,
        training: None,
        collective_stages: None,
        trace: None,
        timeseries: None,
        pcap: None,
    }
}

fn opt_ns(v: Option<u64>) -> String {
    v.map(|ps| format!("{:.3}", ps_to_ns(ps))).unwrap_or_default()
}

/// `flows.csv`: one row per flow. `groups`: the group names ([`group_names`]).
pub fn flows_csv(fabric: &Fabric, groups: &[(String, u8)], ideals: &[Option<IdealPath>]) -> String {
    let mut s = String::from(
        "flow,src,dst,size_bytes,start_ns,first_sent_ns,finish_ns,fct_ns,goodput_gbps,packets_sent,packets_delivered,packets_dropped,bytes_delivered",
    );
    s.push_str(crate::fct_report::FLOW_COLUMNS);
    s.push_str(",completed,group\n");
    let flows = fabric.flows();
    for r in fabric.flow_records() {
        let g = flows[r.id as usize].group as usize;
        let group = groups
            .get(g)
            .map_or_else(|| format!("workload{g}"), |(name, _)| csv_field(name));
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}{},{},{}",
            r.id,
            r.src,
            r.dst,
            r.size_bytes,
            opt_ns(Some(r.start.ps())),
            opt_ns(r.first_sent.map(|t| t.ps())),
            opt_ns(r.finish.map(|t| t.ps())),
            opt_ns(r.fct_ps()),
            r.goodput_bps().map(|g| format!("{:.6}", g / 1e9)).unwrap_or_default(),
            r.packets_sent,
            r.packets_delivered,
            r.packets_dropped,
            r.bytes_delivered,
            crate::fct_report::flow_cells(r, ideals[r.id as usize].as_ref()),
            r.finish.is_some(),
            group,
        );
    }
    s
}

/// A CSV cell: quoted (RFC 4180) when it holds a comma, quote or line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// The level of a node of `kind` in the drawings (`ports.csv` `node_level`): 0 endpoints
/// (hosts, GPUs), 1 the devices inside a server (GPU hubs, NVSwitch chips, PCIe switches, root
/// complexes, NICs), 2 + t network switches of tier t.
pub fn node_level(kind: fabrics::topology::NodeKind) -> u8 {
    use fabrics::topology::NodeKind;
    match kind {
        NodeKind::Host => 0,
        NodeKind::Switch { tier } => tier.saturating_add(2),
        _ => 1,
    }
}

/// `ports.csv`: one row per egress port.
pub fn ports_csv(fabric: &Fabric, topo: &Topology, end: SimTime, ideals: &[Option<IdealPath>]) -> String {
    let mut s = String::from(
        "port,node,port_index,peer,rate_gbps,packets_tx,bytes_tx,utilisation,drops,drop_bytes,max_queue_bytes,mean_queue_bytes,utilisation_active,node_level,peer_level",
    );
    let levels: Vec<u8> = topo
        .graph
        .node_indices()
        .map(|n| node_level(topo.graph[n].kind))
        .collect();
    if fabric.ib().is_some() {
        s.push_str(crate::ib_report::PORT_COLUMNS);
    }
    if fabric.roce().is_some() {
        s.push_str(crate::roce_report::PORT_COLUMNS);
    }
    s.push('\n');
    for r in port_rows(fabric, topo, end, ideals) {
        let st = &r.port.stats;
        let _ = write!(
            s,
            "{},{},{},{},{},{},{},{:.6},{},{},{},{:.3},{:.6},{},{}",
            r.id,
            r.node,
            r.port_index,
            r.peer,
            r.port.rate.as_gbps_f64(),
            st.packets_tx,
            st.bytes_tx,
            r.utilisation,
            st.drops,
            st.drop_bytes,
            st.queue_bytes.max(),
            r.mean_queue_bytes,
            r.utilisation_active,
            levels[r.port.node as usize],
            levels[r.port.peer_node as usize],
        );
        if let Some(ib) = fabric.ib() {
            s.push_str(&crate::ib_report::port_cells(ib, r.id, end));
        }
        if let Some(roce) = fabric.roce() {
            s.push_str(&crate::roce_report::port_cells(roce, r.id, end));
        }
        s.push('\n');
    }
    s
}

/// A percentile table in the style of HdrHistogram's `outputPercentileDistribution`, in ns.
pub fn percentile_table(h: &LatencyHistogram) -> String {
    let mut s = String::from("percentile,value_ns,count_at_or_below\n");
    if h.is_empty() {
        return s;
    }
    for q in [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0] {
        let v = h.quantile_ps(q).unwrap_or(0);
        let c = h.inner().count_between(0, v);
        let _ = writeln!(s, "{q},{:.3},{c}", ps_to_ns(v));
    }
    s
}

/// An HdrHistogram interval log (one interval covering the run, values in ps, base64
/// V2+Deflate), readable by HdrHistogram's standard tools (`HistogramLogReader`).
pub fn hdr_log(h: &LatencyHistogram, tag: &str, end: SimTime) -> Result<Vec<u8>, String> {
    use hdrhistogram::serialization::V2DeflateSerializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    let mut out = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    let mut w = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(1e12)
        .add_comment("fabricsim histogram: values in picoseconds; max shown in seconds")
        .begin_log_with(&mut out, &mut ser)
        .map_err(|e| e.to_string())?;
    let tag = Tag::new(tag).ok_or("invalid histogram tag")?;
    let dur = std::time::Duration::from_nanos(end.ps() / 1000);
    w.write_histogram(h.inner(), std::time::Duration::ZERO, dur, Some(tag))
        .map_err(|e| format!("{e:?}"))?;
    drop(w);
    Ok(out)
}

/// The short table printed at the end of a run.
pub fn terminal_table(s: &Summary) -> String {
    let mut o = String::new();
    let f = |v: Option<f64>| match v {
        None => "-".to_string(),
        Some(ns) if ns >= 1e6 => format!("{:.3}ms", ns / 1e6),
        Some(ns) if ns >= 1e3 => format!("{:.3}us", ns / 1e3),
        Some(ns) => format!("{ns:.1}ns"),
    };
    let _ = writeln!(o, "scenario   {} (seed {})", s.scenario.name, s.scenario.seed);
    let _ = writeln!(o, "topology   {}", s.topology.description);
    let _ = writeln!(
        o,
        "run        {} at {}, {} events, {} link-hops{}",
        s.run.outcome,
        f(Some(s.run.sim_time_ns)),
        s.run.events,
        s.run.link_hops,
        crate::outcome::Outcome::parse(s.run.outcome).map_or("", crate::outcome::Outcome::note)
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:<16}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}",
        "", "p50", "p90", "p99", "p99.9", "max", "count"
    );
    for (name, p) in [("packet latency", &s.packet_latency_ns), ("flow compl.", &s.fct_ns)] {
        let _ = writeln!(
            o,
            "{:<16}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}",
            name,
            f(p.p50),
            f(p.p90),
            f(p.p99),
            f(p.p999),
            f(p.max),
            p.count
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "throughput {:.3} Gb/s delivered; mean flow goodput {}",
        s.throughput.delivered_gbps,
        match (
            s.throughput.mean_flow_gbps,
            s.throughput.mean_flow_fraction_of_bottleneck
        ) {
            (Some(g), Some(fr)) => format!("{g:.3} Gb/s ({:.1}% of the path bottleneck)", fr * 100.0),
            _ => "-".into(),
        }
    );
    let _ = writeln!(
        o,
        "flows      {} of {} completed; packets {} delivered, {} dropped, {} in network",
        s.flows.completed, s.flows.total, s.packets.delivered, s.packets.dropped, s.packets.in_network
    );
    if let Some(p) = &s.fct_with_unfinished_ns {
        let _ = writeln!(
            o,
            "WARNING    {} of {} flows did not finish: the FCT row counts finished flows only; with the unfinished at their elapsed time (a lower bound) FCT p50 {} p99 {} max {}",
            s.flows.total - s.flows.completed,
            s.flows.total,
            f(p.p50),
            f(p.p99),
            f(p.max),
        );
    }
    let counter = |k: &str| {
        ["transport_", "roce_"]
            .iter()
            .find_map(|p| s.counters.get(&format!("{p}{k}")).copied())
    };
    if let (Some(resent), Some(timeouts)) = (counter("retransmitted_packets"), counter("gbn_timeouts"))
        && resent + timeouts > 0
    {
        let _ = writeln!(
            o,
            "recovery   go-back-N resent {resent} packets ({timeouts} timeouts, {} NACKs); the receivers discarded {} out of order",
            counter("nacks_sent").unwrap_or(0),
            counter("receiver_discards").unwrap_or(0),
        );
    }
    let slowdown = crate::fct_report::terminal_table(&s.slowdown);
    if !slowdown.is_empty() {
        let _ = writeln!(o);
        o.push_str(&slowdown);
    }
    if s.groups.len() > 1 {
        let _ = writeln!(o);
        let _ = writeln!(o, "per workload group");
        let _ = writeln!(
            o,
            "  {:<20}{:>8}{:>10}{:>12}{:>12}{:>12}{:>10}{:>10}",
            "group", "flows", "done", "fct p50", "fct p99", "fct max", "slow p50", "slow p99"
        );
        let sd = |v: Option<f64>| v.map_or_else(|| "-".into(), |x| format!("{x:.2}"));
        for g in &s.groups {
            let _ = writeln!(
                o,
                "  {:<20}{:>8}{:>10}{:>12}{:>12}{:>12}{:>10}{:>10}",
                g.name,
                g.flows,
                g.completed,
                f(g.fct_ns.p50),
                f(g.fct_ns.p99),
                f(g.fct_ns.max),
                sd(g.slowdown.p50),
                sd(g.slowdown.p99)
            );
        }
    }
    if let Some(note) = s.timeseries.as_ref().and_then(|t| t.note()) {
        let _ = writeln!(o);
        let _ = writeln!(o, "{note}");
    }
    if let Some(w) = s.pcap.as_ref().and_then(|p| p.warning()) {
        let _ = writeln!(o);
        let _ = writeln!(o, "{w}");
    }
    if !s.hotspots.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(o, "most congested ports");
        let _ = writeln!(
            o,
            "  {:<14}{:<14}{:>10}{:>14}{:>14}{:>8}{:>8}",
            "port", "to", "drops", "mean queue", "max queue", "util", "active"
        );
        for h in &s.hotspots {
            let _ = writeln!(
                o,
                "  {:<14}{:<14}{:>10}{:>13.0}B{:>13}B{:>7.1}%{:>7.1}%",
                h.node,
                h.peer,
                h.drops,
                h.mean_queue_bytes,
                h.max_queue_bytes,
                h.utilisation * 100.0,
                h.utilisation_active * 100.0
            );
        }
    }
    if !s.congestion_tree.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "congestion tree (credit stalls: port -> the port its downstream head waits for; indented by depth)"
        );
        for e in &s.congestion_tree {
            let _ = writeln!(
                o,
                "  {:<40} waits for {:<28} {:>12.3}us",
                indented(e.depth, &e.stalled),
                e.waits_for,
                e.stall_ns / 1e3
            );
        }
    }
    if let Some(d) = &s.credit_deadlock {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "credit deadlock: {} output port/VL pairs wait for each other's credits in a cycle, formed at {:.3}us",
            d.cycle.len(),
            d.formed_ns / 1e3
        );
        for l in &d.cycle {
            let _ = writeln!(o, "  {:<28} VL {}", l.port, l.vl);
        }
    }
    if !s.pause_tree.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "pause tree (PFC: port -> the port that paused it; indented by depth)"
        );
        for e in &s.pause_tree {
            let _ = writeln!(
                o,
                "  {:<40} paused by {:<28} prio {} {:>12.3}us",
                indented(e.depth, &e.paused),
                e.paused_by,
                e.priority,
                e.paused_ns / 1e3
            );
        }
    }
    o
}

/// `text` indented two spaces per level of `depth` (a tree row), with a branch mark below
/// the roots.
fn indented(depth: u32, text: &str) -> String {
    if depth == 0 {
        text.to_owned()
    } else {
        format!("{}└ {text}", "  ".repeat(depth as usize - 1))
    }
}
