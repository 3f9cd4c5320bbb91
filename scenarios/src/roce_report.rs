//! RoCEv2 outputs, written only for `kind = "rocev2"` runs (so other fabrics' results are
//! unchanged): `roce_ports.csv`, one row per (port, priority) that saw PFC, ECN, queueing or
//! drops, and `roce.json` with the fabric totals, the pause tree (which port paused which)
//! and the deadlock, if one was detected.

use fabrics::engine::Fabric;
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
            // Drops and headroom are per port; reported on its lowest active priority row.
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
