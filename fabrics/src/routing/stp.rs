//! The spanning tree of a layer-2 domain (IEEE 802.1D-2004 clause 17, RSTP), computed from
//! the topology graph before a run: what a converged RSTP domain forwards on. RoCEv1 fabrics
//! forward over it ([`super::Routes::try_tree`], `docs/models/rocev1.md`).
//!
//! ## What is computed
//! Bridges are the non-host nodes; a host's port is an edge port (always forwarding). Every
//! bridge has the default priority (32768), so the bridge id orders like the MAC address,
//! which here is the **node index**: the root bridge of each connected group of bridges is
//! its lowest node index. The port id of a port is its port number (the default port
//! priority 128 is the same everywhere).
//! 1. **Path cost** of a link: RSTP's recommended port path cost, 20 Tb/s / rate
//!    (100 Gb/s: 200; 400 Gb/s: 50), clamped to 1..=200 000 000 ([`port_path_cost`]).
//! 2. **Root path cost** of each bridge: the least sum of link costs to the root (Dijkstra).
//! 3. **Root port** of each non-root bridge B: among the ports whose neighbour N has
//!    `cost(N) + cost(link) = cost(B)`, the best received priority vector: lowest designated
//!    bridge id (N's node index), then lowest designated port id (N's port number on that
//!    link), then lowest own port id.
//! 4. **Designated port** of each bridge-bridge link: the end whose bridge offers the better
//!    vector (root path cost, bridge id, port id); the link's other end is the root port of
//!    its bridge (the link forwards) or an **alternate** port (blocked: the link carries no
//!    data in either direction).
//!
//! Each non-root bridge has exactly one root port, so a connected group of `n` bridges keeps
//! `n - 1` forwarding bridge-bridge links: a tree. Integer costs and index tie-breaks make the
//! result a pure function of the graph.
//!
//! ## What is not modelled
//! BPDU exchange and timers (the tree is the converged state), topology changes, MSTP
//! (one tree per VLAN group), TRILL/SPB shortest-path bridging, MAC learning and flooding:
//! forwarding tables are computed, as if every MAC were learnt. Max Age is kept as a limit
//! only: [`RSTP_MAX_AGE_HOPS`].

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use petgraph::graph::NodeIndex;
use sim_core::BitsPerSec;

use crate::topology::Topology;

/// RSTP's path-cost numerator: cost = 20 Tb/s / link rate (802.1D-2004 Table 17-3: 200 000
/// at 100 Mb/s, 20 000 at 1 Gb/s, 2 000 at 10 Gb/s).
pub const RSTP_COST_NUMERATOR_BPS: u64 = 20_000_000_000_000;
/// Largest RSTP port path cost (802.1D-2004 Table 17-3).
pub const MAX_PATH_COST: u64 = 200_000_000;
/// Bridges at most this many hops from the root receive its information: RSTP's default Max
/// Age is 20 and each bridge adds max(1, Max Age / 16) = 1 to a BPDU's Message Age
/// (802.1D-2004 clause 17, recalled), so a bridge deeper than 20 hops ages the root out.
pub const RSTP_MAX_AGE_HOPS: u32 = 20;

/// Not a bridge (hosts), or no value.
pub const NONE: u32 = u32::MAX;

/// RSTP port path cost of a link of `rate`: 20 Tb/s / rate, clamped to 1..=200 000 000.
pub fn port_path_cost(rate: BitsPerSec) -> u64 {
    (RSTP_COST_NUMERATOR_BPS / rate.get().max(1)).clamp(1, MAX_PATH_COST)
}

/// The role of one port in the converged tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortRole {
    /// A host's port or a bridge's port to a host: forwarding, no BPDUs.
    Edge,
    /// The bridge's port toward the root.
    Root,
    /// The best port of its link toward the root: forwarding.
    Designated,
    /// Blocked (discarding): a redundant path to the root.
    Alternate,
}

/// The converged spanning tree of a topology (see the module docs). Plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanningTree {
    /// Node index -> the root bridge of its group; [`NONE`] for hosts.
    pub root_bridge: Vec<u32>,
    /// Node index -> root path cost; `u64::MAX` for hosts.
    pub root_path_cost: Vec<u64>,
    /// Node index -> root port (`None` at a root and at hosts).
    pub root_port: Vec<Option<u16>>,
    /// Node index -> bridges between it and the root along the tree (0 at a root); [`NONE`]
    /// for hosts.
    pub depth: Vec<u32>,
    /// Node index -> role of each of its ports, in port order.
    pub roles: Vec<Vec<PortRole>>,
    /// Link (edge index) -> carries data.
    pub forwarding: Vec<bool>,
}

impl SpanningTree {
    /// Computes the tree of `topo`'s bridges (a pure function of the graph).
    pub fn compute(topo: &Topology) -> SpanningTree {
        let n = topo.n_nodes();
        let ports: Vec<Vec<(usize, usize)>> = (0..n)
            .map(|v| {
                topo.ports(NodeIndex::new(v))
                    .into_iter()
                    .map(|(e, w)| (e.index(), w.index()))
                    .collect()
            })
            .collect();
        let is_bridge: Vec<bool> = (0..n).map(|v| !topo.is_host(NodeIndex::new(v))).collect();
        let cost: Vec<u64> = topo.graph.edge_weights().map(|l| port_path_cost(l.rate)).collect();
        // The port number of link e at node v (links are a node's ports in edge order).
        let port_of = |v: usize, e: usize| ports[v].iter().position(|&(x, _)| x == e).expect("a port of the link");

        // Roots and root path costs: Dijkstra from the lowest index of each group.
        let mut root_bridge = vec![NONE; n];
        let mut root_path_cost = vec![u64::MAX; n];
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
        for r in 0..n {
            if !is_bridge[r] || root_bridge[r] != NONE {
                continue;
            }
            root_path_cost[r] = 0;
            root_bridge[r] = r as u32;
            heap.push(Reverse((0, r)));
            while let Some(Reverse((c, u))) = heap.pop() {
                if c > root_path_cost[u] {
                    continue;
                }
                for &(e, w) in &ports[u] {
                    let cw = c + cost[e];
                    if is_bridge[w] && cw < root_path_cost[w] {
                        root_path_cost[w] = cw;
                        root_bridge[w] = r as u32;
                        heap.push(Reverse((cw, w)));
                    }
                }
            }
        }

        // Root ports: the best received vector among least-cost neighbours.
        let mut root_port: Vec<Option<u16>> = vec![None; n];
        for b in (0..n).filter(|&b| is_bridge[b] && root_bridge[b] != b as u32) {
            root_port[b] = ports[b]
                .iter()
                .enumerate()
                .filter(|&(_, &(e, w))| {
                    is_bridge[w] && root_path_cost[w].checked_add(cost[e]) == Some(root_path_cost[b])
                })
                .min_by_key(|&(p, &(e, w))| (w, port_of(w, e), p))
                .map(|(p, _)| p as u16);
        }

        // Roles and forwarding links.
        let mut forwarding = vec![false; topo.n_links()];
        let mut roles: Vec<Vec<PortRole>> = ports.iter().map(|p| vec![PortRole::Edge; p.len()]).collect();
        for (e, fwd) in forwarding.iter_mut().enumerate() {
            let (a, b) = topo
                .graph
                .edge_endpoints(petgraph::graph::EdgeIndex::new(e))
                .expect("an edge");
            let (a, b) = (a.index(), b.index());
            if !(is_bridge[a] && is_bridge[b]) {
                *fwd = true; // a host link
                continue;
            }
            let (pa, pb) = (port_of(a, e), port_of(b, e));
            let is_root = |v: usize, p: usize| root_port[v] == Some(p as u16);
            let (ra, rb) = if is_root(a, pa) {
                (PortRole::Root, PortRole::Designated)
            } else if is_root(b, pb) {
                (PortRole::Designated, PortRole::Root)
            } else if (root_path_cost[a], a, pa) < (root_path_cost[b], b, pb) {
                (PortRole::Designated, PortRole::Alternate)
            } else {
                (PortRole::Alternate, PortRole::Designated)
            };
            roles[a][pa] = ra;
            roles[b][pb] = rb;
            *fwd = ra == PortRole::Root || rb == PortRole::Root;
        }

        // Depth along the tree, breadth-first from each root.
        let mut depth = vec![NONE; n];
        let mut q: VecDeque<usize> = VecDeque::new();
        for r in (0..n).filter(|&r| is_bridge[r] && root_bridge[r] == r as u32) {
            depth[r] = 0;
            q.push_back(r);
        }
        while let Some(u) = q.pop_front() {
            for (p, &(e, w)) in ports[u].iter().enumerate() {
                // w is a child of u when w's root port is this very link.
                let child =
                    roles[u][p] == PortRole::Designated && root_port[w].is_some_and(|rp| ports[w][rp as usize].0 == e);
                if child && depth[w] == NONE {
                    depth[w] = depth[u] + 1;
                    q.push_back(w);
                }
            }
        }
        SpanningTree {
            root_bridge,
            root_path_cost,
            root_port,
            depth,
            roles,
            forwarding,
        }
    }

    /// The root bridges (one per connected group of bridges), ascending.
    pub fn roots(&self) -> Vec<u32> {
        (0..self.root_bridge.len() as u32)
            .filter(|&v| self.root_bridge[v as usize] == v)
            .collect()
    }

    /// The blocked (alternate) ports as `(node, port)`, in node then port order.
    pub fn blocked_ports(&self) -> Vec<(u32, u16)> {
        let mut out = Vec::new();
        for (v, r) in self.roles.iter().enumerate() {
            for (p, &role) in r.iter().enumerate() {
                if role == PortRole::Alternate {
                    out.push((v as u32, p as u16));
                }
            }
        }
        out
    }

    /// The deepest bridge's hops from its root (0 with no bridge or a single one).
    pub fn max_depth(&self) -> u32 {
        self.depth.iter().copied().filter(|&d| d != NONE).max().unwrap_or(0)
    }

    /// Links (by edge index) that carry no data: the complement of `forwarding`.
    pub fn blocked_links(&self) -> Vec<bool> {
        self.forwarding.iter().map(|&f| !f).collect()
    }

    /// A text report for `fabricsim topo`: roots, link counts, depth, then one line per
    /// blocked port (`blocked leaf1 port 3 (to spine1)`), in node then port order.
    pub fn describe(&self, topo: &Topology) -> String {
        use std::fmt::Write;
        let name = |v: u32| topo.graph[NodeIndex::new(v as usize)].name.as_str();
        let roots: Vec<&str> = self.roots().into_iter().map(name).collect();
        let blocked = self.blocked_ports();
        let n_fwd = topo
            .graph
            .edge_indices()
            .filter(|&e| {
                let (a, b) = topo.graph.edge_endpoints(e).expect("an edge");
                !topo.is_host(a) && !topo.is_host(b) && self.forwarding[e.index()]
            })
            .count();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "spanning tree (RSTP, bridge id = node index): root {}, {n_fwd} forwarding and {} blocked switch-switch links, depth {}",
            roots.join(", "),
            blocked.len(),
            self.max_depth()
        );
        for (v, p) in blocked {
            let peer = topo.ports(NodeIndex::new(v as usize))[p as usize].1;
            let _ = writeln!(out, "  blocked {} port {p} (to {})", name(v), topo.graph[peer].name);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::test_link as link;
    use crate::topology::{Topology, fat_tree, leaf_spine};

    /// Bridge-bridge links that forward, and whether the forwarding links join every bridge
    /// of each group to its root.
    fn check_tree(t: &Topology, st: &SpanningTree) {
        let bridges: Vec<usize> = (0..t.n_nodes()).filter(|&v| !t.is_host(NodeIndex::new(v))).collect();
        let groups = st.roots().len();
        let fwd_bridge_links = t
            .graph
            .edge_indices()
            .filter(|&e| {
                let (a, b) = t.graph.edge_endpoints(e).unwrap();
                !t.is_host(a) && !t.is_host(b) && st.forwarding[e.index()]
            })
            .count();
        assert_eq!(fwd_bridge_links, bridges.len() - groups, "a forest: n - groups links");
        // Every bridge reaches its root over forwarding links (so, with n - 1 links, a tree).
        for &b in &bridges {
            let mut v = b;
            let mut hops = 0;
            while let Some(p) = st.root_port[v] {
                let (e, w) = t.ports(NodeIndex::new(v))[p as usize];
                assert!(st.forwarding[e.index()]);
                v = w.index();
                hops += 1;
                assert!(hops <= bridges.len(), "a loop through {b}");
            }
            assert_eq!(v as u32, st.root_bridge[b]);
            assert_eq!(st.depth[b], hops as u32);
        }
        // Blocked ports: exactly the non-forwarding bridge links, one end each.
        let blocked = st.blocked_ports();
        let switch_links = t
            .graph
            .edge_indices()
            .filter(|&e| {
                let (a, b) = t.graph.edge_endpoints(e).unwrap();
                !t.is_host(a) && !t.is_host(b)
            })
            .count();
        assert_eq!(blocked.len(), switch_links - fwd_bridge_links);
    }

    #[test]
    fn path_costs_follow_rstp() {
        assert_eq!(port_path_cost(BitsPerSec::from_gbps(1)), 20_000);
        assert_eq!(port_path_cost(BitsPerSec::from_gbps(10)), 2_000);
        assert_eq!(port_path_cost(BitsPerSec::from_gbps(100)), 200);
        assert_eq!(port_path_cost(BitsPerSec::from_gbps(400)), 50);
        assert_eq!(port_path_cost(BitsPerSec::from_gbps(800)), 25);
        assert_eq!(port_path_cost(BitsPerSec(100_000_000)), 200_000);
        assert_eq!(port_path_cost(BitsPerSec::from_gbps(40_000)), 1);
        assert_eq!(port_path_cost(BitsPerSec(1)), MAX_PATH_COST);
    }

    #[test]
    fn leaf_spine_tree_uses_one_spine() {
        let t = leaf_spine::build(&leaf_spine::LeafSpineSpec::new(4, 2, 3, link(100), link(100))).unwrap();
        let st = SpanningTree::compute(&t);
        check_tree(&t, &st);
        // Hosts 0..8, leaves 8..12, spines 12..15: leaf0 is the root, every other leaf's root
        // port goes to spine0 (the lowest designated bridge id at cost 400), spines 1 and 2
        // hang off leaf0.
        assert_eq!(st.roots(), vec![8]);
        for leaf in 9..12 {
            assert_eq!(st.root_port[leaf], Some(2), "after the 2 host ports: spine0");
            assert_eq!(st.root_path_cost[leaf], 400);
        }
        for spine in 12..15 {
            assert_eq!(st.root_port[spine], Some(0), "to leaf0");
            assert_eq!(st.root_path_cost[spine], 200);
        }
        // Blocked: each non-root leaf's ports to spines 1 and 2 (the spines are designated).
        let blocked = st.blocked_ports();
        assert_eq!(blocked.len(), 6);
        assert!(blocked.iter().all(|&(v, p)| (9..12).contains(&v) && (p == 3 || p == 4)));
        assert_eq!(st.max_depth(), 2);
        assert_eq!(st, SpanningTree::compute(&t), "deterministic");
        let text = st.describe(&t);
        assert!(
            text.starts_with("spanning tree (RSTP, bridge id = node index): root leaf0, 6 forwarding and 6 blocked switch-switch links, depth 2\n"),
            "{text}"
        );
        assert!(text.contains("\n  blocked leaf1 port 3 (to spine1)\n"), "{text}");
        assert_eq!(text.lines().count(), 7);
    }

    #[test]
    fn fat_tree_and_parallel_links_are_trees() {
        for k in [4u32, 6, 8] {
            let t = fat_tree::build(k, link(100), link(100)).unwrap();
            let st = SpanningTree::compute(&t);
            check_tree(&t, &st);
            assert_eq!(st.roots().len(), 1);
        }
        let mut spec = leaf_spine::LeafSpineSpec::new(3, 1, 2, link(100), link(100));
        spec.links_per_spine = 2;
        let t = leaf_spine::build(&spec).unwrap();
        let st = SpanningTree::compute(&t);
        check_tree(&t, &st);
        // Parallel links: the lowest port wins, the other is an alternate.
        assert_eq!(st.blocked_ports().len(), 12 - 4);
    }

    /// A triangle with a slow direct link: the two-hop path at 100G (cost 400) beats the
    /// direct 10G link (cost 2000); a ring of 4 blocks one port; two groups get two roots.
    #[test]
    fn costs_ties_rings_and_groups() {
        let mut t = Topology::new("triangle");
        let s: Vec<_> = (0..3).map(|i| t.add_switch(format!("s{i}"), 0, None)).collect();
        t.add_link(s[0], s[1], link(100));
        t.add_link(s[1], s[2], link(100));
        t.add_link(s[0], s[2], link(10));
        let st = SpanningTree::compute(&t);
        check_tree(&t, &st);
        assert_eq!(st.root_path_cost[2], 400);
        assert_eq!(st.root_port[2], Some(0), "s2's port to s1");
        assert_eq!(st.blocked_ports(), vec![(2, 1)], "s2's 10G port");
        // Ring s0-s1-s2-s3-s0: s2 is 400 from s0 both ways; the tie goes to s1 (lower id).
        let mut t = Topology::new("ring");
        let s: Vec<_> = (0..4).map(|i| t.add_switch(format!("s{i}"), 0, None)).collect();
        for i in 0..4 {
            t.add_link(s[i], s[(i + 1) % 4], link(100));
        }
        let st = SpanningTree::compute(&t);
        check_tree(&t, &st);
        assert_eq!(st.root_port[2], Some(0), "s2's port to s1");
        assert_eq!(st.blocked_ports(), vec![(2, 1)], "s2's port to s3");
        // Two groups: each has its own root.
        let mut t = Topology::new("split");
        let s: Vec<_> = (0..4).map(|i| t.add_switch(format!("s{i}"), 0, None)).collect();
        t.add_link(s[3], s[1], link(100));
        t.add_link(s[0], s[2], link(100));
        let st = SpanningTree::compute(&t);
        check_tree(&t, &st);
        assert_eq!(st.roots(), vec![0, 1]);
    }
}
