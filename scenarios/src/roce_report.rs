//! RoCEv2 outputs, written only for `kind = "rocev2"` runs (so other fabrics' results are
//! unchanged): the `roce_*` counters of `summary.json`, the pause tree (`summary.json`
//! `pause_tree` and the terminal), extra `ports.csv` columns, `roce_ports.csv` (one row per
//! (port, priority) that saw PFC, ECN, queueing or drops), `roce_rates.csv` (per-flow rate
//! samples, when sampling is on) and `roce.json` with the fabric totals, the pause tree,
//! the deadlock, if one was detected, and HPCC's base RTT in effect.

use fabrics::engine::{Fabric, RoceState};
use fabrics::topology::Topology;
use serde::Serialize;
use sim_core::SimTime;
use std::fmt::Write;

/// `roce.json`.
#[derive(Clone, Debug, Serialize)]
pub struct RoceSummary {
    pub totals: serde_json::Value,
    /// Pause tree edges, longest paused time first.
    pub pause_tree: Vec<PauseEdge>,
    pub deadlock: Option<DeadlockInfo>,
    /// HPCC runs only: the base RTT T in effect (`base_rtt = "auto"` resolved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpcc_base_rtt_ns: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PauseEdge {
    /// The paused port (`node:port`) and the port of the congested node that paused it.
    pub paused: String,
    pub paused_by: String,
    pub priority: u8,
    pub paused_ns: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct DeadlockInfo {
    /// The cycle of (port, priority), each paused by its successor's node.
    pub cycle: Vec<(String, u8)>,
    pub formed_at_ns: f64,
    pub detected_at_ns: f64,
}

/// `node:peer` name of port `p` (the link it sends on).
fn port_name(f: &Fabric, topo: &Topology, p: u32) -> String {
    let port = &f.ports()[p as usize];
    let name = |n: u32| {
        topo.graph
            .node_indices()
            .nth(n as usize)
            .map_or_else(String::new, |i| topo.graph[i].name.clone())
    };
    format!("{}->{}", name(port.node), name(port.peer_node))
}

fn ns(ps: u64) -> f64 {
    ps as f64 / 1e3
}

pub fn summary(f: &Fabric, topo: &Topology, end: SimTime) -> Option<RoceSummary> {
    let r = f.roce()?;
    let t = &r.totals;
    Some(RoceSummary {
        totals: serde_json::json!({
            "pause_frames": t.pause_frames,
            "resume_frames": t.resume_frames,
            "ecn_marked": t.ecn_marked,
            "cnps_sent": t.cnps_sent,
            "cnps_received": t.cnps_received,
            "acks_sent": t.acks_sent,
            "nacks_sent": t.nacks_sent,
            "retransmitted": t.retransmitted,
            "timeouts": t.timeouts,
            "receiver_discards": t.receiver_discards,
            "control_drops": t.control_drops,
            "drops_headroom": t.drops_headroom,
            "drops_lossy_threshold": t.drops_lossy_threshold,
            "drops_buffer_full": t.drops_buffer_full,
            "watchdog_storms": t.watchdog_storms,
            "drops_watchdog": t.drops_watchdog,
        }),
        pause_tree: r
            .pause_edges(end)
            .into_iter()
            .map(|(a, b, prio, d)| PauseEdge {
                paused: port_name(f, topo, a),
                paused_by: port_name(f, topo, b),
                priority: prio,
                paused_ns: ns(d),
            })
            .collect(),
        deadlock: r.deadlock.as_ref().map(|d| DeadlockInfo {
            cycle: d.cycle.iter().map(|&(p, pr)| (port_name(f, topo, p), pr)).collect(),
            formed_at_ns: ns(d.formed_at.ps()),
            detected_at_ns: ns(d.detected_at.ps()),
        }),
        hpcc_base_rtt_ns: r.hpcc_base_rtt().map(|t| ns(t.ps())),
    })
}

/// `roce_ports.csv`.
pub fn ports_csv(f: &Fabric, topo: &Topology, end: SimTime) -> Option<String> {
    let r = f.roce()?;
    let mut s = String::from(
        "port,link,priority,pause_tx,resume_tx,pfc_rx,paused_fraction,ecn_marked,queue_max_bytes,headroom_max_bytes,drops_headroom,drops_lossy_threshold,drops_buffer_full\n",
    );
    let t = end.ps().max(1) as f64;
    for p in 0..f.ports().len() as u32 {
        let st = &r.port_stats[p as usize];
        for prio in 0..8u8 {
            let i = prio as usize;
            let (_, paused) = r.paused(p, prio, end);
            let active = st.pause_tx[i] + st.resume_tx[i] + st.pfc_rx[i] + st.ecn_marked[i] + st.queue_max_bytes[i] > 0;
            if !active {
                continue;
            }
            // Drops and headroom are per port: repeated on each of its rows.
            let _ = writeln!(
                s,
                "{p},{},{prio},{},{},{},{:.6},{},{},{},{},{},{}",
                port_name(f, topo, p),
                st.pause_tx[i],
                st.resume_tx[i],
                st.pfc_rx[i],
                paused.ps() as f64 / t,
                st.ecn_marked[i],
                st.queue_max_bytes[i],
                st.headroom_max_bytes,
                st.drops_headroom,
                st.drops_lossy_threshold,
                st.drops_buffer_full
            );
        }
    }
    Some(s)
}

/// Whole-run RoCEv2 counters for `summary.json` `counters` (names carry their unit).
pub fn counters(r: &RoceState, f: &Fabric, end: SimTime) -> Vec<(&'static str, u64)> {
    let t = &r.totals;
    let n_ports = f.ports().len() as u32;
    let pfc_rx: u64 = r.port_stats.iter().flat_map(|st| st.pfc_rx.iter()).sum();
    let paused_ps: u64 = (0..n_ports).map(|p| r.port_paused_time(p, end).ps()).sum();
    vec![
        ("roce_acks_sent", t.acks_sent),
        ("roce_cnps_received", t.cnps_received),
        ("roce_cnps_sent", t.cnps_sent),
        ("roce_control_drops", t.control_drops),
        ("roce_deadlock_detected", r.deadlock.is_some() as u64),
        ("roce_drops_buffer_full", t.drops_buffer_full),
        ("roce_drops_headroom", t.drops_headroom),
        ("roce_drops_lossy_threshold", t.drops_lossy_threshold),
        ("roce_drops_watchdog", t.drops_watchdog),
        ("roce_ecn_marked", t.ecn_marked),
        ("roce_gbn_timeouts", t.timeouts),
        ("roce_nacks_sent", t.nacks_sent),
        ("roce_pause_frames_received", pfc_rx),
        ("roce_pause_frames_sent", t.pause_frames),
        ("roce_paused_ps", paused_ps),
        ("roce_receiver_discards", t.receiver_discards),
        ("roce_resume_frames_sent", t.resume_frames),
        ("roce_retransmitted_packets", t.retransmitted),
        ("roce_watchdog_storms", t.watchdog_storms),
    ]
}

/// One edge of the pause tree in `summary.json` (`pause_tree`) and the terminal.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TreeEdge {
    /// Depth in the tree: 0 for a port paused by a root (a congested node none of whose ports
    /// was paused), +1 per level below.
    pub depth: u32,
    /// The paused egress port (`node -> peer`).
    pub paused: String,
    /// The port of the congested node that sent the PAUSE (`node -> peer`).
    pub paused_by: String,
    pub priority: u8,
    pub paused_ns: f64,
}

/// The pause tree depth first from its roots, each edge with its depth and followed by the
/// edges below it, longest paused first among siblings, at most `n` edges. A root is a
/// congested node none of whose ports was paused (the congestion starts at its egress); below
/// an edge come the ports that the paused port's node paused in turn. Edges on a cycle
/// (deadlock) come last.
pub fn pause_tree(r: &RoceState, f: &Fabric, topo: &Topology, end: SimTime, n: usize) -> Vec<TreeEdge> {
    let node = |p: u32| f.ports()[p as usize].node;
    // Edges longest first; a node waits for the node that paused one of its ports.
    let order = crate::tree::depth_first_from_roots(&r.pause_edges(end), |e| node(e.0), |e| node(e.1));
    order
        .into_iter()
        .take(n)
        .map(|((a, b, prio, d), depth)| TreeEdge {
            depth,
            paused: port_name(f, topo, a),
            paused_by: port_name(f, topo, b),
            priority: prio,
            paused_ns: ns(d),
        })
        .collect()
}

/// Extra `ports.csv` columns on a RoCEv2 fabric (all priorities of the port summed).
pub const PORT_COLUMNS: &str = ",paused_ns,pause_frames_tx,resume_frames_tx,pfc_frames_rx,ecn_marked,cnps_tx,cnps_rx,drops_headroom,drops_lossy_threshold,drops_buffer_full,drops_watchdog,headroom_max_bytes";

/// The extra cells of port `p`'s row (matching [`PORT_COLUMNS`]).
pub fn port_cells(r: &RoceState, p: u32, end: SimTime) -> String {
    let st = &r.port_stats[p as usize];
    format!(
        ",{:.3},{},{},{},{},{},{},{},{},{},{},{}",
        ns(r.port_paused_time(p, end).ps()),
        st.pause_tx.iter().sum::<u64>(),
        st.resume_tx.iter().sum::<u64>(),
        st.pfc_rx.iter().sum::<u64>(),
        st.ecn_marked.iter().sum::<u64>(),
        st.cnps_tx,
        st.cnps_rx,
        st.drops_headroom,
        st.drops_lossy_threshold,
        st.drops_buffer_full,
        st.drops_watchdog,
        st.headroom_max_bytes,
    )
}

/// `roce_rates.csv`: every rate sample (`[fabric.roce] rate_sample`), `None` when sampling
/// is off. A last line `# truncated ...` says the row bound stopped sampling.
pub fn rates_csv(f: &Fabric) -> Option<String> {
    let r = f.roce()?;
    r.cfg.rate_sample?;
    let mut s = String::from("flow,time_ns,rate_gbps\n");
    for &(flow, t, bps) in &r.rate_samples {
        let _ = writeln!(s, "{flow},{:.3},{:.6}", ns(t.ps()), bps as f64 / 1e9);
    }
    if r.rate_samples_truncated {
        let _ = writeln!(
            s,
            "# truncated at rate_sample_max_rows = {}",
            r.cfg.rate_sample_max_rows
        );
    }
    Some(s)
}
