//! InfiniBand additions to the results: counters, per-port and per-VL credit stalls, input
//! buffer occupancy, and the congestion tree (which stalled port waited for which).

use fabrics::engine::{Fabric, IbState};
use fabrics::topology::Topology;
use serde::Serialize;
use sim_core::SimTime;
use std::fmt::Write as _;

/// One edge of the congestion tree: port `stalled` waited `stall_ns` for credits while the
/// head packet of the buffer it feeds waited for port `waits_for`. A port that appears only
/// as `waits_for` is a root of congestion.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TreeEdge {
    /// Depth in the tree: 0 for a port that waits for a root, +1 per level below.
    pub depth: u32,
    pub stalled: String,
    pub waits_for: String,
    pub stall_ns: f64,
}

/// A credit-loop deadlock (`summary.json` `credit_deadlock`): the output port/VL pairs that
/// wait for each other's credits in a cycle, each for the credits of the next and the last for
/// the first, and when the cycle formed (the latest stall start among them).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CreditDeadlock {
    pub formed_ns: f64,
    pub cycle: Vec<CycleLane>,
}

/// One member of a credit cycle: output port `port` (`node -> peer`) on lane `vl`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CycleLane {
    pub port: String,
    pub vl: u8,
}

/// The credit cycle of a run that stopped with packets held and no event left (issue 14),
/// found by [`fabrics::ib::deadlock::find_cycle`] on the final state: an output lane waits for
/// the lane that the head of the input buffer it feeds (the peer's port of the same link)
/// waits for. `None` when no cycle exists.
pub fn credit_deadlock(ib: &IbState, fabric: &Fabric, topo: &Topology) -> Option<CreditDeadlock> {
    let ports = fabric.ports();
    let (n, nv) = (ports.len() as u32, ib.n_vls());
    // The output each input lane's head waits for.
    // An input FIFO's head waits for one output; an input feeding virtual output queues
    // waits for any output holding one of its packets: a stalled one when there is one (once
    // nothing can move, every output holding its packets is stalled).
    let mut waits = vec![u32::MAX; n as usize * nv as usize];
    for q in 0..n {
        for vl in 0..nv {
            let stalled = ib.credit_stall_since(q, vl).is_some();
            for x in ib.requesters(q, vl).chain(fabric.voq_inputs(q, vl)) {
                let w = &mut waits[x as usize * nv as usize + vl as usize];
                if *w == u32::MAX || (stalled && ib.credit_stall_since(*w, vl).is_none()) {
                    *w = q;
                }
            }
        }
    }
    let next = |p: u32, vl: u8| {
        let x = ports[p as usize].peer_port;
        let q = waits[x as usize * nv as usize + vl as usize];
        (q != u32::MAX).then_some((q, vl))
    };
    let c = fabrics::ib::deadlock::find_cycle(n, nv, |p, vl| ib.credit_stall_since(p, vl), next)?;
    let names = names(topo);
    Some(CreditDeadlock {
        formed_ns: crate::report::ps_to_ns(c.formed_at.ps()),
        cycle: c
            .lanes
            .iter()
            .map(|&(p, vl)| CycleLane {
                port: port_name(fabric, &names, p),
                vl,
            })
            .collect(),
    })
}

/// Node names by node index.
fn names(topo: &Topology) -> Vec<&str> {
    topo.graph.node_indices().map(|n| topo.graph[n].name.as_str()).collect()
}

/// `node -> peer` name of port `p`.
fn port_name(fabric: &Fabric, names: &[&str], p: u32) -> String {
    let port = &fabric.ports()[p as usize];
    format!("{} -> {}", names[port.node as usize], names[port.peer_node as usize])
}

/// Whole-run InfiniBand counters (names carry their unit where they have one).
pub fn counters(ib: &IbState, fabric: &Fabric, end: SimTime) -> Vec<(&'static str, u64)> {
    let t = &ib.totals;
    let stall_ps: u64 = (0..fabric.ports().len() as u32)
        .map(|p| ib.port_credit_stall(p, end).ps())
        .sum();
    vec![
        ("ib_becn_received", t.becn_received),
        ("ib_becn_sent", t.becn_sent),
        ("ib_credit_stall_ps", stall_ps),
        ("ib_fc_packets", t.fc_packets),
        ("ib_fecn_marked", t.fecn_marked),
        ("ib_hoq_drops", t.hoq_drops),
    ]
}

/// The congestion tree depth first from its roots (ports that others wait for but that never
/// waited for credits themselves), longest stalls first among siblings, each edge with its
/// depth; at most `n` edges. Edges whose downstream head waited for nothing (credits in
/// flight) come last.
pub fn congestion_tree(ib: &IbState, fabric: &Fabric, topo: &Topology, n: usize) -> Vec<TreeEdge> {
    let names = names(topo);
    let order = crate::tree::depth_first_from_roots(&ib.congestion_edges(), |e| e.0, |e| e.1);
    order
        .into_iter()
        .take(n)
        .map(|((a, b, ps), depth)| TreeEdge {
            depth,
            stalled: port_name(fabric, &names, a),
            waits_for: if b == u32::MAX {
                "(credits in flight)".to_owned()
            } else {
                port_name(fabric, &names, b)
            },
            stall_ns: ps as f64 / 1000.0,
        })
        .collect()
}

/// Extra `ports.csv` columns on an InfiniBand fabric.
pub const PORT_COLUMNS: &str =
    ",credit_stall_ns,fc_packets_tx,hoq_drops,fecn_marked,input_buffer_mean_bytes,input_buffer_max_bytes";

/// The extra cells of port `p`'s row (matching [`PORT_COLUMNS`]).
pub fn port_cells(ib: &IbState, p: u32, end: SimTime) -> String {
    let st = &ib.port_stats[p as usize];
    format!(
        ",{:.3},{},{},{},{:.3},{}",
        ib.port_credit_stall(p, end).ps() as f64 / 1000.0,
        st.fc_packets_tx,
        st.hoq_drops,
        st.fecn_marked,
        st.input_buffer_bytes.mean_until(end),
        st.input_buffer_bytes.max(),
    )
}

/// `ib_vls.csv`: credit-stall time per port and VL, for every port-VL that stalled.
pub fn vls_csv(ib: &IbState, fabric: &Fabric, topo: &Topology, end: SimTime) -> String {
    let names = names(topo);
    let mut s = String::from("port,name,vl,credit_stall_ns\n");
    for p in 0..fabric.ports().len() as u32 {
        for vl in 0..ib.n_vls() {
            let d = ib.credit_stall(p, vl, end).ps();
            if d > 0 {
                let _ = writeln!(s, "{p},{},{vl},{:.3}", port_name(fabric, &names, p), d as f64 / 1000.0);
            }
        }
    }
    s
}

/// `ib_buffer_occupancy.csv`: percentiles of switch input-buffer occupancy (bytes, all VLs)
/// as seen by each arriving packet.
pub fn occupancy_percentiles(ib: &IbState) -> String {
    let h = ib.occupancy_on_arrival.histogram();
    let mut s = String::from("percentile,occupancy_bytes,count_at_or_below\n");
    if h.is_empty() {
        return s;
    }
    for q in [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0] {
        let v = h.value_at_quantile(q);
        let _ = writeln!(s, "{q},{v},{}", h.count_between(0, v));
    }
    s
}
