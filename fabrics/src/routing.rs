//! Shortest-path ECMP routing, computed once from the topology graph and frozen into flat
//! tables for the packet engine's hot path.
//!
//! ## What is computed
//! Routes are per destination *leaf* (a switch with at least one host attached), as in a
//! real fabric whose switches hold one route per ToR prefix. For each leaf `L`:
//! 1. BFS over the *switch* graph from `L` (hosts are never transit nodes) gives `dist[u]`;
//! 2. at a switch `u != L`, the ECMP next-hop set toward `L` is every port of `u` to a switch
//!    neighbour `v` with `dist[v] + 1 == dist[u]`, in port order (parallel links are separate
//!    ports, so each is its own member);
//! 3. at `L` itself the next hop toward host `h` is `L`'s port to `h`;
//! 4. a host's next hop is always its single port, port 0, to its leaf.
//!
//! Every hop decreases `dist` by one, so paths are shortest (in switch hops) and loop-free.
//!
//! ## Layout
//! Next-hop sets are deduplicated into *groups* (a fat-tree of any size has only about `2k`
//! distinct sets) stored in CSR form: group `g` is `group_ports[group_offsets[g] ..
//! group_offsets[g + 1]]`, a port being an index into [`Topology::ports`] of the node. The
//! table maps `(switch, leaf)` to a group id: `table[leaf_col[leaf_idx] * n_rows +
//! switch_row[node]]`, column by column (a build fills one destination's column at a time:
//! row-major, its writes strode a page apart and took 57 % of a large cluster's build). Group 0 is the empty set (no route: the leaf itself, or unreachable).
//!
//! Deviations from a plain `[node * n_leaves + leaf]` table: rows exist only for switches
//! (`switch_row[node]`, `u32::MAX` for hosts), because a host's answer is always port 0; and
//! columns exist only for the leaves the build was asked to route to ([`Destinations`]: a
//! scenario's flows reach a few of a large cluster's 4,096 GPU hubs). Memory is
//! `4 * n_switches * n_cols` bytes plus small arrays: 2.6 MB for a k=32 fat-tree with every
//! leaf (1280 switches x 512 leaves) instead of 19 MB, 13 MB instead of 140 MB for k=48.
//!
//! ## ECMP selection
//! [`ecmp_pick`] models hash-threshold selection (RFC 2992, "Analysis of an Equal-Cost
//! Multi-Path Algorithm", 2000): each switch hashes the flow's 5-tuple with its own seed (as
//! real ASICs do, to avoid hash polarization between tiers) and maps the hash onto the `n`
//! members by splitting the hash space into `n` equal regions, which is the multiply-shift
//! `(h * n) >> 64` (Lemire, "Fast Random Integer Generation in an Interval", 2019) rather than
//! `h % n`. The hash is XXH3-64 (`xxhash_rust::xxh3::xxh3_64_with_seed`) of the 8
//! little-endian bytes of the flow hash, seeded with the switch seed: stable across platforms
//! and releases. [`flow_hash`] models the 5-tuple itself.
//!
//! Use distinct seeds per switch ([`switch_seeds`]): with one seed everywhere, a fat-tree's
//! edge and aggregation switches make the same choice index and only `k/2` of the `(k/2)^2`
//! cores carry inter-pod traffic (polarization).

pub mod stp;

use std::collections::{BTreeMap, VecDeque};

use petgraph::graph::NodeIndex;
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use crate::topology::{Topology, TopologyError};

/// `switch_row` value for hosts.
const NOT_A_SWITCH: u32 = u32::MAX;
/// `host_leaf` of a host cabled straight to another host (it has no leaf switch).
pub const NO_LEAF: u32 = u32::MAX;
/// `leaf_col` of a leaf that has no column (no route was computed towards it).
const NO_COLUMN: u32 = u32::MAX;
/// A host's only port.
static HOST_PORT: [u16; 1] = [0];
/// How many destination leaves a cancellable route build computes between two questions to its
/// `stop` (about a millisecond of work on a 100,000-node fabric).
pub const STOP_CHECK_LEAVES: usize = 16;

/// How next-hop sets are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    /// Every neighbour on a shortest path (ECMP).
    ShortestPath,
    /// Shortest legal up*/down* paths.
    UpDown,
}

/// Which destinations a build computes routes towards.
///
/// A route table has one column per destination leaf, and building it costs one BFS over
/// the switches per column: on a 512-server GPU cluster (4,096 GPU hubs as leaves, 13,000
/// forwarding nodes) all of them take 220 MB and 10 s. A run needs routes only towards the
/// hosts its packets go to, its flows' sources (for ACKs and CNPs) and destinations, so the
/// scenario builder asks for those (issue 15: `validate` of a large cluster in seconds).
#[derive(Clone, Copy, Debug)]
pub enum Destinations<'a> {
    /// Every host of the topology.
    All,
    /// These hosts (indices, any order, repeats allowed); packets to any other host find no
    /// route ([`Routes::next_hops`] is empty there).
    Hosts(&'a [u32]),
}

impl Destinations<'_> {
    /// Per leaf index (`n_leaves` of them): whether a route leads to it, with `leaf_of` the
    /// leaf index of a host (`None`: no such host, or one cabled to another host).
    fn mark(&self, n_leaves: usize, leaf_of: impl Fn(u32) -> Option<u32>) -> Vec<bool> {
        let Destinations::Hosts(hosts) = self else {
            return vec![true; n_leaves];
        };
        let mut mask = vec![false; n_leaves];
        for l in hosts.iter().filter_map(|&h| leaf_of(h)) {
            mask[l as usize] = true;
        }
        mask
    }

    /// Number of leaf switches routes lead to: the route table's columns (for a memory
    /// estimate before building).
    pub fn n_leaves(&self, topo: &Topology) -> usize {
        let leaves = topo.leaves();
        let mut leaf_idx = vec![u32::MAX; topo.n_nodes()];
        for (i, l) in leaves.iter().enumerate() {
            leaf_idx[l.index()] = i as u32;
        }
        // A host has one link (`Topology::validate`); its far end is its leaf unless it is
        // another host.
        let leaf_of = |h: u32| {
            let (_, leaf) = *topo.ports(*topo.hosts.get(h as usize)?).first()?;
            leaf_idx.get(leaf.index()).copied().filter(|&i| i != u32::MAX)
        };
        self.mark(leaves.len(), leaf_of).iter().filter(|&&b| b).count()
    }
}

/// Frozen ECMP routing tables (see the module docs). `Default` is the empty set of tables of
/// no topology (a placeholder while the real ones are lent out, never routed with).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routes {
    n_leaves: usize,
    /// Leaf index -> leaf switch node index (ascending).
    leaf_node: Vec<u32>,
    /// Node index -> row in `table`, `NOT_A_SWITCH` for hosts.
    switch_row: Vec<u32>,
    /// Leaf index -> column of `table`, `NO_COLUMN` for a leaf no route leads to (a build
    /// for some destinations only: [`Destinations::Hosts`]).
    leaf_col: Vec<u32>,
    /// Columns of `table`: the leaves routed to.
    n_cols: usize,
    /// Rows of `table`: the forwarding nodes.
    n_rows: usize,
    /// `[leaf_col[leaf_idx] * n_rows + row]` -> group id.
    table: Vec<u32>,
    /// CSR offsets of the groups (`n_groups + 1` entries).
    group_offsets: Vec<u32>,
    /// CSR members of the groups: port numbers.
    group_ports: Vec<u16>,
    /// Host index -> leaf index of its leaf.
    host_leaf: Vec<u32>,
    /// Host index -> port of its leaf that leads to it.
    host_port_at_leaf: Vec<u16>,
}

impl Routes {
    /// Computes shortest-path ECMP routes for `topo`.
    ///
    /// Panics if `topo` fails [`Topology::validate`] (builders' topologies never do); use
    /// [`Routes::try_ecmp`] for hand-made topologies.
    pub fn ecmp(topo: &Topology) -> Routes {
        match Routes::try_ecmp(topo) {
            Ok(r) => r,
            Err(e) => panic!("Routes::ecmp: {e}"),
        }
    }

    /// Computes shortest-path ECMP routes, or says why the topology cannot be routed.
    pub fn try_ecmp(topo: &Topology) -> Result<Routes, TopologyError> {
        Routes::build(topo, Policy::ShortestPath, None, Destinations::All, &|| false).map(Routes::not_stopped)
    }

    /// [`Routes::try_ecmp`] that gives up (`Ok(None)`) as soon as `stop` says so: it is asked
    /// every [`STOP_CHECK_LEAVES`] destination leaves, so a wall-clock budget or an interrupt
    /// can end the build of a large fabric (one BFS per leaf) within a fraction of a second.
    /// Only towards `dests`.
    pub fn try_ecmp_until(
        topo: &Topology,
        dests: Destinations,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Routes>, TopologyError> {
        Routes::build(topo, Policy::ShortestPath, None, dests, stop)
    }

    /// [`Routes::try_updown`] that gives up as [`Routes::try_ecmp_until`] does, towards `dests`.
    pub fn try_updown_until(
        topo: &Topology,
        dests: Destinations,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Routes>, TopologyError> {
        Routes::build(topo, Policy::UpDown, None, dests, stop)
    }

    /// [`Routes::try_tree`] that gives up as [`Routes::try_ecmp_until`] does, towards `dests`.
    pub fn try_tree_until(
        topo: &Topology,
        tree: &stp::SpanningTree,
        dests: Destinations,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Routes>, TopologyError> {
        assert_eq!(
            tree.forwarding.len(),
            topo.n_links(),
            "Routes::try_tree_until: the tree of another topology"
        );
        Routes::build(topo, Policy::ShortestPath, Some(&tree.forwarding), dests, stop)
    }

    fn not_stopped(r: Option<Routes>) -> Routes {
        r.expect("a build that is never asked to stop finishes")
    }

    /// Computes layer-2 routes over a spanning tree (RoCEv1): the shortest paths of the graph
    /// restricted to the tree's forwarding links (`tree.forwarding`, by edge index), so every
    /// next-hop set has at most one port, a tree port, and each destination one path. Blocked
    /// links carry nothing, not even control frames routed by these tables.
    pub fn try_tree(topo: &Topology, tree: &stp::SpanningTree) -> Result<Routes, TopologyError> {
        assert_eq!(
            tree.forwarding.len(),
            topo.n_links(),
            "Routes::try_tree: the tree of another topology"
        );
        Routes::build(
            topo,
            Policy::ShortestPath,
            Some(&tree.forwarding),
            Destinations::All,
            &|| false,
        )
        .map(Routes::not_stopped)
    }

    /// Computes up*/down* routes (opensm `updn`, `models.md` §1.7): switches are ranked by
    /// BFS distance from the root set (every switch of the highest tier), ties broken by node
    /// index; a hop towards a smaller (rank, index) is *up*. A legal path is zero or more up
    /// hops followed by zero or more down hops, so no cyclic channel dependency can form
    /// (deadlock-free without extra VLs). Routes are per destination, so a switch from which a
    /// down-only path exists always routes down (the shortest such paths); otherwise it
    /// routes up to the neighbours with the shortest legal remaining path. On fat-trees and
    /// leaf-spines these are exactly the shortest paths; on rings and meshes they avoid the
    /// cycle at the price of longer paths.
    pub fn try_updown(topo: &Topology) -> Result<Routes, TopologyError> {
        Routes::build(topo, Policy::UpDown, None, Destinations::All, &|| false).map(Routes::not_stopped)
    }

    /// `forwarding`: links (by edge index) that may carry routes; `None` = all. `Ok(None)`:
    /// `stop` said to give up.
    fn build(
        topo: &Topology,
        policy: Policy,
        forwarding: Option<&[bool]>,
        dests: Destinations,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Routes>, TopologyError> {
        topo.validate()?;
        let n = topo.n_nodes();
        // Flat adjacency in port order: neighbours of v are adj_nbr[adj_off[v]..adj_off[v+1]].
        let mut adj_off: Vec<u32> = Vec::with_capacity(n + 1);
        let mut adj_nbr: Vec<u32> = Vec::with_capacity(2 * topo.n_links());
        let mut adj_fwd: Vec<bool> = Vec::with_capacity(2 * topo.n_links());
        let mut is_host = vec![false; n];
        for &h in &topo.hosts {
            is_host[h.index()] = true;
        }
        for v in 0..n {
            adj_off.push(adj_nbr.len() as u32);
            for (e, w) in topo.ports(NodeIndex::new(v)) {
                adj_nbr.push(w.index() as u32);
                adj_fwd.push(forwarding.is_none_or(|f| f[e.index()]));
            }
        }
        adj_off.push(adj_nbr.len() as u32);
        let nbrs = |v: usize| &adj_nbr[adj_off[v] as usize..adj_off[v + 1] as usize];

        let leaf_node: Vec<u32> = topo.leaves().iter().map(|l| l.index() as u32).collect();
        let n_leaves = leaf_node.len();
        let mut leaf_idx = vec![u32::MAX; n];
        for (i, &l) in leaf_node.iter().enumerate() {
            leaf_idx[l as usize] = i as u32;
        }
        let mut host_leaf = Vec::with_capacity(topo.n_hosts());
        let mut host_port_at_leaf = Vec::with_capacity(topo.n_hosts());
        for &h in &topo.hosts {
            // validate(): exactly one link, to a switch (a leaf) or to another host (a
            // back-to-back pair, which needs no route).
            let leaf = nbrs(h.index())[0] as usize;
            if is_host[leaf] {
                host_leaf.push(NO_LEAF);
                host_port_at_leaf.push(0);
                continue;
            }
            let port = nbrs(leaf)
                .iter()
                .position(|&w| w as usize == h.index())
                .expect("a host's leaf has a port to it");
            host_leaf.push(leaf_idx[leaf]);
            host_port_at_leaf.push(port as u16);
        }

        let mut switch_row = vec![NOT_A_SWITCH; n];
        let mut n_switches = 0usize;
        for (v, row) in switch_row.iter_mut().enumerate() {
            if !is_host[v] {
                *row = n_switches as u32;
                n_switches += 1;
            }
        }

        // Switch-only adjacency over dense switch rows, one entry per distinct neighbour (in
        // the order of its first port), each with its ports to that neighbour (ascending):
        // the BFS and next-hop scans below never look at host ports, and a bundle of parallel
        // links (a GPU hub's 18 NVLinks to 4 NVSwitch chips) is one step, not one per link
        // (the scans were most of a large cluster's build).
        let mut sw_off: Vec<u32> = Vec::with_capacity(n_switches + 1);
        let mut sw_nbr: Vec<u32> = Vec::new();
        let mut sw_ports_off: Vec<u32> = vec![0];
        let mut sw_ports: Vec<u16> = Vec::new();
        let mut bundles: Vec<(u32, Vec<u16>)> = Vec::new();
        for v in (0..n).filter(|&v| !is_host[v]) {
            sw_off.push(sw_nbr.len() as u32);
            let fwd = &adj_fwd[adj_off[v] as usize..adj_off[v + 1] as usize];
            bundles.clear();
            for (port, &w) in nbrs(v).iter().enumerate() {
                if !is_host[w as usize] && fwd[port] {
                    let w = switch_row[w as usize];
                    match bundles.iter_mut().find(|(x, _)| *x == w) {
                        Some((_, ports)) => ports.push(port as u16),
                        None => bundles.push((w, vec![port as u16])),
                    }
                }
            }
            for (w, ports) in &bundles {
                sw_nbr.push(*w);
                sw_ports.extend_from_slice(ports);
                sw_ports_off.push(sw_ports.len() as u32);
            }
        }
        sw_off.push(sw_nbr.len() as u32);
        let sw_range = |r: usize| sw_off[r] as usize..sw_off[r + 1] as usize;
        // The ports of adjacency entry `i` (a neighbour bundle).
        let bundle_ports = |i: usize| &sw_ports[sw_ports_off[i] as usize..sw_ports_off[i + 1] as usize];

        let mut groups: BTreeMap<Vec<u16>, u32> = BTreeMap::new();
        let mut group_offsets: Vec<u32> = vec![0, 0];
        let mut group_ports: Vec<u16> = Vec::new();
        groups.insert(Vec::new(), 0);
        let routed = dests.mark(n_leaves, |h| {
            host_leaf.get(h as usize).copied().filter(|&l| l != NO_LEAF)
        });
        let mut leaf_col = vec![NO_COLUMN; n_leaves];
        let mut n_cols = 0usize;
        for (li, _) in routed.iter().enumerate().filter(|(_, r)| **r) {
            leaf_col[li] = n_cols as u32;
            n_cols += 1;
        }
        let mut table = vec![0u32; n_switches * n_cols];
        let mut dist = vec![u32::MAX; n_switches];
        // up*/down*: the order key of every switch (BFS rank from the root set, then row).
        let key: Vec<(u32, u32)> = match policy {
            Policy::ShortestPath => Vec::new(),
            Policy::UpDown => {
                let tiers: Vec<u8> = (0..n)
                    .filter(|&v| !is_host[v])
                    .map(|v| topo.switch_tier(NodeIndex::new(v)).unwrap_or(0))
                    .collect();
                let top = tiers.iter().copied().max().unwrap_or(0);
                let mut rank = vec![u32::MAX; n_switches];
                let mut q: VecDeque<u32> = VecDeque::new();
                for r in (0..n_switches).filter(|&r| tiers[r] == top) {
                    rank[r] = 0;
                    q.push_back(r as u32);
                }
                while let Some(u) = q.pop_front() {
                    for &v in &sw_nbr[sw_range(u as usize)] {
                        if rank[v as usize] == u32::MAX {
                            rank[v as usize] = rank[u as usize] + 1;
                            q.push_back(v);
                        }
                    }
                }
                (0..n_switches).map(|r| (rank[r], r as u32)).collect()
            }
        };
        let mut down_dist = vec![u32::MAX; n_switches];
        let mut by_key: Vec<u32> = (0..n_switches as u32).collect();
        if policy == Policy::UpDown {
            by_key.sort_by_key(|&r| key[r as usize]);
        }
        // The group each switch got last time: consecutive leaves mostly give the same one,
        // and comparing with it is cheaper than a map lookup.
        let mut last_gid = vec![0u32; n_switches];
        let mut queue: VecDeque<u32> = VecDeque::with_capacity(n_switches);
        let mut order: Vec<u32> = Vec::with_capacity(n_switches);
        let mut scratch: Vec<u16> = Vec::new();
        let routed_leaves = leaf_node.iter().enumerate().filter(|&(li, _)| routed[li]);
        for (done, (li, &l)) in routed_leaves.enumerate() {
            if done % STOP_CHECK_LEAVES == STOP_CHECK_LEAVES - 1 && stop() {
                return Ok(None);
            }
            let col = leaf_col[li] as usize;
            let l = switch_row[l as usize];
            dist.fill(u32::MAX);
            dist[l as usize] = 0;
            queue.clear();
            order.clear();
            queue.push_back(l);
            match policy {
                Policy::ShortestPath => {
                    while let Some(u) = queue.pop_front() {
                        order.push(u);
                        let du = dist[u as usize];
                        for &v in &sw_nbr[sw_range(u as usize)] {
                            if dist[v as usize] == u32::MAX {
                                dist[v as usize] = du + 1;
                                queue.push_back(v);
                            }
                        }
                    }
                }
                Policy::UpDown => {
                    // Down-only distances: BFS from the leaf against down hops (x -> y is
                    // down when key(y) > key(x), so search the neighbours x with key(x) < key(y)).
                    down_dist.fill(u32::MAX);
                    down_dist[l as usize] = 0;
                    while let Some(y) = queue.pop_front() {
                        for &x in &sw_nbr[sw_range(y as usize)] {
                            if key[x as usize] < key[y as usize] && down_dist[x as usize] == u32::MAX {
                                down_dist[x as usize] = down_dist[y as usize] + 1;
                                queue.push_back(x);
                            }
                        }
                    }
                    // Then up hops, in increasing key order (an up neighbour comes earlier).
                    for &x in &by_key {
                        let xi = x as usize;
                        dist[xi] = down_dist[xi];
                        if dist[xi] == u32::MAX {
                            for &y in &sw_nbr[sw_range(xi)] {
                                if key[y as usize] < key[xi] && dist[y as usize] != u32::MAX {
                                    dist[xi] = dist[xi].min(dist[y as usize] + 1);
                                }
                            }
                        }
                        if x != l && dist[xi] != u32::MAX {
                            order.push(x);
                        }
                    }
                    order.insert(0, l);
                }
            }
            // `order[0]` is the leaf itself: it keeps group 0.
            for &u in &order[1..] {
                let u = u as usize;
                let du = dist[u];
                scratch.clear();
                for i in sw_range(u) {
                    let v = sw_nbr[i] as usize;
                    let legal = match policy {
                        Policy::ShortestPath => true,
                        // Down whenever a down-only path exists, else up.
                        Policy::UpDown if down_dist[u] != u32::MAX => key[v] > key[u] && down_dist[v] != u32::MAX,
                        Policy::UpDown => key[v] < key[u],
                    };
                    if legal && dist[v].wrapping_add(1) == du {
                        scratch.extend_from_slice(bundle_ports(i));
                    }
                }
                // Bundles come in first-port order; their ports may interleave (port order
                // is the set's order: ECMP picks index it).
                scratch.sort_unstable();
                let last = last_gid[u] as usize;
                let prev = &group_ports[group_offsets[last] as usize..group_offsets[last + 1] as usize];
                // Element by element: the sets are a few ports, and a `memcmp` call per
                // (switch, leaf) was 40 % of a large cluster's build.
                let gid = if prev.len() == scratch.len() && prev.iter().zip(&scratch).all(|(a, b)| a == b) {
                    last as u32
                } else if let Some(&g) = groups.get(scratch.as_slice()) {
                    g
                } else {
                    let g = (group_offsets.len() - 1) as u32;
                    group_ports.extend_from_slice(&scratch);
                    group_offsets.push(group_ports.len() as u32);
                    groups.insert(scratch.clone(), g);
                    g
                };
                last_gid[u] = gid;
                table[col * n_switches + u] = gid;
            }
        }
        group_offsets.shrink_to_fit();
        group_ports.shrink_to_fit();
        Ok(Some(Routes {
            n_leaves,
            leaf_node,
            switch_row,
            leaf_col,
            n_cols,
            n_rows: n_switches,
            table,
            group_offsets,
            group_ports,
            host_leaf,
            host_port_at_leaf,
        }))
    }

    /// The ECMP next-hop ports (indices into [`Topology::ports`]) at `node` toward host index
    /// `dst_host`, in port order. At the destination's leaf: the single port to the host. At a
    /// host: its port 0. Empty if `dst_host` is unreachable from `node`.
    #[inline]
    pub fn next_hops(&self, node: u32, dst_host: u32) -> &[u16] {
        let leaf = self.host_leaf[dst_host as usize];
        if leaf == NO_LEAF {
            return &[]; // the destination hangs off another host: no switch reaches it
        }
        if self.leaf_node[leaf as usize] == node {
            return std::slice::from_ref(&self.host_port_at_leaf[dst_host as usize]);
        }
        let row = self.switch_row[node as usize];
        if row == NOT_A_SWITCH {
            return &HOST_PORT;
        }
        let col = self.leaf_col[leaf as usize];
        if col == NO_COLUMN {
            return &[]; // not a destination of this build (`Destinations::Hosts`)
        }
        let g = self.table[col as usize * self.n_rows + row as usize] as usize;
        &self.group_ports[self.group_offsets[g] as usize..self.group_offsets[g + 1] as usize]
    }

    /// Replaces the next hops at switch `node` toward the leaf of host `dst_host` with
    /// `ports` (indices into [`Topology::ports`] of `node`), e.g. to pin a ring's flows to one
    /// direction or to impose up*/down* turns by hand. Every destination behind that leaf
    /// follows. Panics if `node` is not a switch or is the destination's own leaf.
    pub fn set_next_hops(&mut self, node: u32, dst_host: u32, ports: &[u16]) {
        let leaf = self.host_leaf[dst_host as usize];
        assert!(leaf != NO_LEAF, "host {dst_host} has no leaf switch");
        assert!(
            self.leaf_node[leaf as usize] != node,
            "node {node} is host {dst_host}'s leaf"
        );
        let row = self.switch_row[node as usize];
        assert!(row != NOT_A_SWITCH, "node {node} is not a switch");
        let col = self.leaf_col[leaf as usize];
        assert!(col != NO_COLUMN, "host {dst_host} is not a destination of these routes");
        let g = self.group_offsets.len() as u32 - 1;
        self.group_ports.extend_from_slice(ports);
        self.group_offsets.push(self.group_ports.len() as u32);
        self.table[col as usize * self.n_rows + row as usize] = g;
    }

    /// At switch `node`, narrows every next-hop set that contains a port with `prefer[port]`
    /// (indexed by the node's local port) to those ports; sets without one stay as they are.
    /// Used to keep a GPU's traffic for other servers on its own NIC (`cluster` topologies).
    /// Panics if `node` is not a switch.
    pub fn prefer_at(&mut self, node: u32, prefer: &[bool]) {
        let row = self.switch_row[node as usize];
        assert!(row != NOT_A_SWITCH, "node {node} is not a switch");
        let mut narrowed: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
        for col in 0..self.n_cols {
            let cell = col * self.n_rows + row as usize;
            let g = self.table[cell];
            let new = *narrowed.entry(g).or_insert_with(|| {
                let ports = &self.group_ports
                    [self.group_offsets[g as usize] as usize..self.group_offsets[g as usize + 1] as usize];
                let keep: Vec<u16> = ports
                    .iter()
                    .copied()
                    .filter(|&p| prefer.get(p as usize) == Some(&true))
                    .collect();
                if keep.is_empty() || keep.len() == ports.len() {
                    return g;
                }
                let id = self.group_offsets.len() as u32 - 1;
                self.group_ports.extend_from_slice(&keep);
                self.group_offsets.push(self.group_ports.len() as u32);
                id
            });
            self.table[cell] = new;
        }
    }

    /// Number of leaf switches (route destinations).
    pub fn n_leaves(&self) -> usize {
        self.n_leaves
    }

    /// The leaf switch of leaf index `i`.
    pub fn leaf_node(&self, i: usize) -> NodeIndex {
        NodeIndex::new(self.leaf_node[i] as usize)
    }

    /// Leaf index of host index `host`.
    pub fn host_leaf(&self, host: u32) -> u32 {
        self.host_leaf[host as usize]
    }

    /// Number of leaf switches routes lead to (the table's columns): every leaf, or those of
    /// the hosts the build was asked for ([`Destinations`]).
    pub fn n_routed_leaves(&self) -> usize {
        self.n_cols
    }

    /// Number of distinct next-hop groups (including the empty group 0).
    pub fn n_groups(&self) -> usize {
        self.group_offsets.len() - 1
    }

    /// Heap plus inline bytes of the tables.
    pub fn memory_bytes(&self) -> usize {
        fn vb<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        std::mem::size_of::<Self>()
            + vb(&self.leaf_node)
            + vb(&self.switch_row)
            + vb(&self.leaf_col)
            + vb(&self.table)
            + vb(&self.group_offsets)
            + vb(&self.group_ports)
            + vb(&self.host_leaf)
            + vb(&self.host_port_at_leaf)
    }

    /// The path (nodes, source host first) a flow with `flow_hash` takes from host index
    /// `src_host` to host index `dst_host`, choosing at each node with [`ecmp_pick`] and that
    /// node's seed `seeds[node]` (`seeds.len()` must be the node count; hosts' seeds are unused
    /// since they have one port). If the destination is unreachable the path stops where the
    /// routes end (its last node is then not the destination).
    ///
    /// For tests and validation; the engine uses [`Routes::next_hops`] directly.
    pub fn path(&self, topo: &Topology, src_host: u32, dst_host: u32, flow_hash: u64, seeds: &[u64]) -> Vec<NodeIndex> {
        assert_eq!(seeds.len(), topo.n_nodes(), "Routes::path: one seed per node");
        let dst = topo.hosts[dst_host as usize];
        let mut u = topo.hosts[src_host as usize];
        let mut path = vec![u];
        // Shortest paths never revisit a node; the bound only guards against misuse (routes
        // of a different topology).
        while u != dst && path.len() <= topo.n_nodes() {
            let hops = self.next_hops(u.index() as u32, dst_host);
            if hops.is_empty() {
                break;
            }
            let port = hops[ecmp_pick(hops.len(), flow_hash, seeds[u.index()])];
            u = topo.ports(u)[port as usize].1;
            path.push(u);
        }
        path
    }
}

/// Picks one of `n_choices` equal-cost next hops for a flow at a switch (hash-threshold,
/// RFC 2992): `(xxh3_64_with_seed(flow_hash.to_le_bytes(), switch_seed) * n) >> 64`.
///
/// Deterministic and stable; returns a value in `0..n_choices` (0 if `n_choices <= 1`).
#[inline]
pub fn ecmp_pick(n_choices: usize, flow_hash: u64, switch_seed: u64) -> usize {
    if n_choices <= 1 {
        return 0;
    }
    let h = xxh3_64_with_seed(&flow_hash.to_le_bytes(), switch_seed);
    ((h as u128 * n_choices as u128) >> 64) as usize
}

/// A flow's 5-tuple hash: XXH3-64 (seed 0) of the 12 bytes `src_host`, `dst_host`, `flow_id`
/// (each little-endian `u32`). Host indices stand for the IP addresses and `flow_id` for the
/// UDP source port (RoCEv2 fixes the protocol and destination port, so they add nothing).
pub fn flow_hash(src_host: u32, dst_host: u32, flow_id: u32) -> u64 {
    let mut b = [0u8; 12];
    b[0..4].copy_from_slice(&src_host.to_le_bytes());
    b[4..8].copy_from_slice(&dst_host.to_le_bytes());
    b[8..12].copy_from_slice(&flow_id.to_le_bytes());
    xxh3_64(&b)
}

/// One ECMP seed per node, derived from `base_seed`: `xxh3_64_with_seed(node as u64 LE,
/// base_seed)`. Distinct per switch, stable across runs.
pub fn switch_seeds(n_nodes: usize, base_seed: u64) -> Vec<u64> {
    (0..n_nodes as u64)
        .map(|i| xxh3_64_with_seed(&i.to_le_bytes(), base_seed))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::test_link as link;
    use crate::topology::{fat_tree, leaf_spine, sizing};

    /// BFS hop counts (in links) from `src` to every node, hosts not transit.
    fn bfs_links(topo: &Topology, src: NodeIndex) -> Vec<usize> {
        let mut dist = vec![usize::MAX; topo.n_nodes()];
        dist[src.index()] = 0;
        let mut q = VecDeque::from([src]);
        while let Some(u) = q.pop_front() {
            if u != src && topo.is_host(u) {
                continue;
            }
            for (_, v) in topo.ports(u) {
                if dist[v.index()] == usize::MAX {
                    dist[v.index()] = dist[u.index()] + 1;
                    q.push_back(v);
                }
            }
        }
        dist
    }

    fn check_all_paths(topo: &Topology, routes: &Routes, flows: u32) {
        let seeds = switch_seeds(topo.n_nodes(), 7);
        let n = topo.n_hosts() as u32;
        for s in 0..n {
            let dist = bfs_links(topo, topo.hosts[s as usize]);
            for d in 0..n {
                if s == d {
                    continue;
                }
                let want = dist[topo.hosts[d as usize].index()];
                for f in 0..flows {
                    let p = routes.path(topo, s, d, flow_hash(s, d, f), &seeds);
                    assert_eq!(*p.last().unwrap(), topo.hosts[d as usize]);
                    assert_eq!(p.len() - 1, want, "{s}->{d} flow {f}: {p:?}");
                    let mut sorted = p.clone();
                    sorted.sort();
                    sorted.dedup();
                    assert_eq!(sorted.len(), p.len(), "loop in {p:?}");
                    assert!(p[1..p.len() - 1].iter().all(|&v| !topo.is_host(v)));
                }
            }
        }
    }

    #[test]
    fn fat_tree_paths_are_shortest_and_loop_free() {
        for k in [4u32, 6] {
            let t = fat_tree::build(k, link(100), link(100)).unwrap();
            let r = Routes::ecmp(&t);
            assert_eq!(r.n_leaves(), (k * k / 2) as usize);
            check_all_paths(&t, &r, 4);
            // Explicit lengths: same edge 2 links, same pod 4, other pod 6.
            let h = (k / 2) as usize;
            let seeds = switch_seeds(t.n_nodes(), 1);
            let len = |s: usize, d: usize| r.path(&t, s as u32, d as u32, 99, &seeds).len() - 1;
            assert_eq!(len(0, 1), 2);
            assert_eq!(len(0, h), 4);
            assert_eq!(len(0, h * h), 6);
        }
    }

    #[test]
    fn fat_tree_ecmp_fan_out() {
        let k = 8u32;
        let h = (k / 2) as usize;
        let t = fat_tree::build(k, link(100), link(100)).unwrap();
        let r = Routes::ecmp(&t);
        let other_pod = (h * h) as u32; // host 16: pod 1
        let same_pod = h as u32; // host 4: pod 0, edge 1
        let edge0 = t.leaf_of(t.hosts[0]).index() as u32;
        let up: Vec<u16> = (h as u16..k as u16).collect();
        // Edge: up to every agg toward another edge (same pod or not).
        assert_eq!(r.next_hops(edge0, other_pod), up.as_slice());
        assert_eq!(r.next_hops(edge0, same_pod), up.as_slice());
        // Edge to its own host: the host's port.
        assert_eq!(r.next_hops(edge0, 3), &[3]);
        // Host: port 0.
        assert_eq!(r.next_hops(0, other_pod), &[0]);
        for n in t.graph.node_indices() {
            let name = t.graph[n].name.as_str();
            let hops = r.next_hops(n.index() as u32, other_pod);
            if name.starts_with("agg0.") {
                // Agg of the source pod: up to its k/2 cores.
                assert_eq!(hops, up.as_slice());
                // Down toward its own pod: unique (edge 1 = port 1).
                assert_eq!(r.next_hops(n.index() as u32, same_pod), &[1]);
            }
            if name.starts_with("core") {
                // Down: pod 1 = port 1, unique.
                assert_eq!(hops, &[1]);
            }
            if name.starts_with("agg1.") {
                // Down to edge 0 of pod 1.
                assert_eq!(hops, &[0]);
            }
        }
        // The few distinct groups: empty, up, k/2 edge ports, k pod ports (overlapping), and
        // the k/2 host ports at a leaf are not groups.
        assert!(r.n_groups() <= 2 + k as usize, "{}", r.n_groups());
    }

    #[test]
    fn leaf_spine_and_sized_paths() {
        let mut spec = leaf_spine::LeafSpineSpec::new(4, 3, 3, link(100), link(100));
        spec.links_per_spine = 2;
        let t = leaf_spine::build(&spec).unwrap();
        let r = Routes::ecmp(&t);
        check_all_paths(&t, &r, 3);
        let leaf0 = t.leaf_of(t.hosts[0]).index() as u32;
        assert_eq!(r.next_hops(leaf0, 5), &[3, 4, 5, 6, 7, 8]);
        for n in [41u32, 100] {
            let t = sizing::for_hosts(n, 8, link(100), link(100)).unwrap();
            check_all_paths(&t, &Routes::ecmp(&t), 1);
        }
        let t = sizing::for_hosts(5, 8, link(100), link(100)).unwrap();
        check_all_paths(&t, &Routes::ecmp(&t), 1);
    }

    #[test]
    fn ecmp_spreads_over_all_cores() {
        // With per-switch seeds every core carries inter-pod flows; with one seed for all,
        // only k/2 do (polarization).
        let k = 8u32;
        let t = fat_tree::build(k, link(100), link(100)).unwrap();
        let r = Routes::ecmp(&t);
        let count_cores = |seeds: &[u64]| {
            let mut used = std::collections::BTreeSet::new();
            for f in 0..2000u32 {
                let p = r.path(&t, 0, 127, flow_hash(0, 127, f), seeds);
                used.insert(p[3]);
            }
            used.len()
        };
        assert_eq!(count_cores(&switch_seeds(t.n_nodes(), 3)), 16);
        assert_eq!(count_cores(&vec![5; t.n_nodes()]), 4);
    }

    /// A cancellable build asks its `stop` every `STOP_CHECK_LEAVES` leaves and gives up when
    /// told; never told, it gives the same tables as the plain build.
    #[test]
    fn a_route_build_stops_when_asked() {
        let t = fat_tree::build(8, link(100), link(100)).unwrap();
        let leaves = t.leaves().len();
        let asked = std::cell::Cell::new(0usize);
        let never = || {
            asked.set(asked.get() + 1);
            false
        };
        let full = Routes::try_ecmp_until(&t, Destinations::All, &never)
            .unwrap()
            .expect("never stopped");
        assert_eq!(full, Routes::ecmp(&t));
        assert_eq!(asked.get(), leaves / STOP_CHECK_LEAVES);
        asked.set(0);
        let second = || {
            asked.set(asked.get() + 1);
            asked.get() >= 2
        };
        assert_eq!(Routes::try_updown_until(&t, Destinations::All, &second).unwrap(), None);
        assert_eq!(asked.get(), 2, "gave up at the second question");
    }

    /// Routes towards some hosts only (issue 15): the same next hops as the full tables
    /// towards those hosts' leaves at every node, none towards the others, and one column per
    /// leaf reached (hosts sharing a leaf share its column).
    #[test]
    fn routes_towards_some_hosts_equal_the_full_tables_there() {
        let t = fat_tree::build(8, link(100), link(100)).unwrap();
        let full = Routes::ecmp(&t);
        let up = Routes::try_updown(&t).unwrap();
        // Hosts 0 and 1 share a leaf; 100 is in another pod.
        let some = [100, 0, 1, 100];
        let never = || false;
        let part = Routes::try_ecmp_until(&t, Destinations::Hosts(&some), &never)
            .unwrap()
            .unwrap();
        let part_up = Routes::try_updown_until(&t, Destinations::Hosts(&some), &never)
            .unwrap()
            .unwrap();
        assert_eq!((part.n_routed_leaves(), part.n_leaves()), (2, full.n_leaves()));
        assert_eq!(Destinations::Hosts(&some).n_leaves(&t), 2);
        assert!(part.memory_bytes() < full.memory_bytes());
        for node in 0..t.n_nodes() as u32 {
            for dst in 0..t.n_hosts() as u32 {
                if some.contains(&dst) {
                    assert_eq!(part.next_hops(node, dst), full.next_hops(node, dst), "{node} -> {dst}");
                    assert_eq!(part_up.next_hops(node, dst), up.next_hops(node, dst), "{node} -> {dst}");
                } else if t.switch_tier(NodeIndex::new(node as usize)).is_some()
                    && full.leaf_node(full.host_leaf(dst) as usize).index() as u32 != node
                    && full.host_leaf(dst) != part.host_leaf(0)
                    && full.host_leaf(dst) != part.host_leaf(100)
                {
                    // A switch other than the destination's own leaf: no route there.
                    assert!(part.next_hops(node, dst).is_empty(), "{node} -> {dst}");
                }
            }
        }
    }

    #[test]
    fn routes_are_deterministic() {
        let a = Routes::ecmp(&fat_tree::build(6, link(100), link(100)).unwrap());
        let b = Routes::ecmp(&fat_tree::build(6, link(100), link(100)).unwrap());
        assert_eq!(a, b);
        // Stable hash values (regression guard for the documented functions).
        assert_eq!(flow_hash(1, 2, 3), flow_hash(1, 2, 3));
        assert_ne!(flow_hash(1, 2, 3), flow_hash(2, 1, 3));
        assert_eq!(ecmp_pick(1, 12345, 6), 0);
        assert_eq!(ecmp_pick(0, 12345, 6), 0);
    }

    #[test]
    fn ecmp_pick_is_roughly_uniform() {
        for n in [2usize, 3, 8, 16] {
            let samples = 100_000u64;
            let mut counts = vec![0u64; n];
            for i in 0..samples {
                let c = ecmp_pick(n, flow_hash(i as u32, 7, (i >> 32) as u32), 0xABCD);
                counts[c] += 1;
            }
            let expect = samples as f64 / n as f64;
            let chi2: f64 = counts.iter().map(|&c| (c as f64 - expect).powi(2) / expect).sum();
            // df = n - 1 <= 15; the 99.99th percentile for df=15 is about 44.
            assert!(chi2 < 50.0, "n={n} chi2={chi2} counts={counts:?}");
        }
    }

    #[test]
    fn try_ecmp_rejects_malformed_and_accepts_host_pairs() {
        let mut t = Topology::new("bad");
        let h0 = t.add_host("h0", None);
        let s = t.add_switch("s", 0, None);
        t.add_link(h0, s, link(1));
        t.add_link(h0, s, link(1));
        assert!(Routes::try_ecmp(&t).is_err(), "a host with two links");
        // A back-to-back pair needs no route: no switch reaches either host.
        let mut t = Topology::new("pair");
        let h0 = t.add_host("h0", None);
        let h1 = t.add_host("h1", None);
        t.add_link(h0, h1, link(1));
        let r = Routes::try_ecmp(&t).unwrap();
        assert_eq!(r.host_leaf(1), NO_LEAF);
        assert!(r.next_hops(h0.index() as u32, 1).is_empty());
    }

    #[test]
    fn unreachable_destination_gives_empty_hops() {
        let mut t = Topology::new("split");
        let h0 = t.add_host("h0", None);
        let h1 = t.add_host("h1", None);
        let s0 = t.add_switch("s0", 0, None);
        let s1 = t.add_switch("s1", 0, None);
        t.add_link(h0, s0, link(1));
        t.add_link(h1, s1, link(1));
        let r = Routes::ecmp(&t);
        assert!(r.next_hops(s0.index() as u32, 1).is_empty());
        let p = r.path(&t, 0, 1, 0, &[0; 4]);
        assert_eq!(p, vec![h0, s0]);
    }

    #[test]
    // Wall-clock time is only printed (for the build-time report), never used by the routes.
    #[allow(clippy::disallowed_methods)]
    fn k32_tables_are_small_and_fast() {
        let start = std::time::Instant::now();
        let t = fat_tree::build(32, link(400), link(400)).unwrap();
        let built = start.elapsed();
        let r = Routes::ecmp(&t);
        let routed = start.elapsed() - built;
        assert_eq!((t.n_hosts(), t.n_switches(), r.n_leaves()), (8192, 1280, 512));
        let mem = r.memory_bytes();
        eprintln!(
            "k=32: topology {built:?}, routes {routed:?}, {} groups, {mem} bytes",
            r.n_groups()
        );
        assert!(mem < 64 << 20, "{mem}");
        // Spot-check: edge toward another pod fans out k/2 = 16 ways.
        let edge0 = t.leaf_of(t.hosts[0]).index() as u32;
        assert_eq!(r.next_hops(edge0, 8191).len(), 16);
        let seeds = switch_seeds(t.n_nodes(), 1);
        assert_eq!(r.path(&t, 0, 8191, 5, &seeds).len(), 7);
    }

    /// Routes over a spanning tree: one next hop, always a forwarding port, every host
    /// reached; on a leaf-spine every inter-leaf path crosses the same spine.
    #[test]
    fn tree_routes_follow_the_spanning_tree() {
        let mut spec = leaf_spine::LeafSpineSpec::new(4, 3, 3, link(100), link(100));
        spec.links_per_spine = 2;
        let ls = leaf_spine::build(&spec).unwrap();
        let ft = fat_tree::build(4, link(100), link(100)).unwrap();
        for t in [&ls, &ft] {
            let st = stp::SpanningTree::compute(t);
            let r = Routes::try_tree(t, &st).unwrap();
            for v in 0..t.n_nodes() as u32 {
                let ports = t.ports(NodeIndex::new(v as usize));
                for h in 0..t.n_hosts() as u32 {
                    let hops = r.next_hops(v, h);
                    assert!(hops.len() <= 1, "node {v} host {h}: {hops:?}");
                    for &p in hops {
                        assert!(
                            st.forwarding[ports[p as usize].0.index()],
                            "node {v} port {p} is blocked"
                        );
                    }
                }
            }
            let seeds = switch_seeds(t.n_nodes(), 1);
            let n = t.n_hosts() as u32;
            for s in 0..n {
                for d in (0..n).filter(|&d| d != s) {
                    let p = r.path(t, s, d, flow_hash(s, d, 0), &seeds);
                    assert_eq!(*p.last().unwrap(), t.hosts[d as usize], "{s} -> {d}: {p:?}");
                }
            }
        }
        let st = stp::SpanningTree::compute(&ls);
        let r = Routes::try_tree(&ls, &st).unwrap();
        let seeds = switch_seeds(ls.n_nodes(), 1);
        for (s, d) in [(0u32, 3u32), (3, 11), (11, 5), (9, 0)] {
            let p = r.path(&ls, s, d, 0, &seeds);
            assert_eq!(p.len(), 5, "{p:?}");
            assert_eq!(ls.graph[p[2]].name, "spine0");
        }
    }

    #[test]
    fn updown_equals_shortest_paths_on_fat_trees() {
        for k in [4u32, 8] {
            let t = crate::topology::fat_tree::build(k, link(100), link(100)).unwrap();
            let (a, b) = (Routes::ecmp(&t), Routes::try_updown(&t).unwrap());
            for v in 0..t.n_nodes() as u32 {
                for h in 0..t.n_hosts() as u32 {
                    assert_eq!(a.next_hops(v, h), b.next_hops(v, h), "k={k} node {v} host {h}");
                }
            }
        }
    }

    /// Channel dependencies of the routes between every pair of hosts, following the first
    /// next hop: channel = directed link (from node, to node), dependency = consecutive
    /// channels of a path.
    fn channel_deps(t: &Topology, r: &Routes) -> BTreeMap<(u32, u32), Vec<(u32, u32)>> {
        let ports: Vec<Vec<(u32, u32)>> = (0..t.n_nodes())
            .map(|v| {
                t.ports(NodeIndex::new(v))
                    .iter()
                    .map(|&(_, w)| (v as u32, w.index() as u32))
                    .collect()
            })
            .collect();
        let n = t.n_hosts() as u32;
        let mut deps: BTreeMap<(u32, u32), Vec<(u32, u32)>> = BTreeMap::new();
        for src in 0..n {
            for dst in (0..n).filter(|&d| d != src) {
                let mut node = t.hosts[src as usize].index() as u32;
                let mut prev = None;
                let mut hops = 0;
                while node != t.hosts[dst as usize].index() as u32 {
                    let next = r.next_hops(node, dst);
                    assert!(!next.is_empty(), "{src} -> {dst} unroutable at node {node}");
                    let ch = ports[node as usize][next[0] as usize];
                    if let Some(p) = prev {
                        deps.entry(p).or_default().push(ch);
                    }
                    prev = Some(ch);
                    node = ch.1;
                    hops += 1;
                    assert!(hops <= t.n_nodes(), "routing loop {src} -> {dst}");
                }
            }
        }
        deps
    }

    /// Whether a dependency graph has no cycle (repeatedly remove channels without successors).
    fn acyclic(mut left: BTreeMap<(u32, u32), Vec<(u32, u32)>>) -> bool {
        loop {
            let sinks: Vec<_> = left
                .iter()
                .filter(|(_, outs)| outs.iter().all(|o| !left.contains_key(o)))
                .map(|(k, _)| *k)
                .collect();
            if sinks.is_empty() {
                return left.is_empty();
            }
            for k in sinks {
                left.remove(&k);
            }
        }
    }

    /// A ring of switches, one host each: up*/down* paths reach every host and their channel
    /// dependency graph is acyclic; shortest paths on rings of 5 or more form a cycle (so the
    /// check can fail).
    #[test]
    fn updown_breaks_the_cycle_of_a_ring() {
        for n_sw in [4usize, 5, 6] {
            let mut t = Topology::new("ring");
            let sw: Vec<_> = (0..n_sw).map(|i| t.add_switch(format!("s{i}"), 0, None)).collect();
            for (i, &s) in sw.iter().enumerate() {
                let h = t.add_host(format!("h{i}"), None);
                t.add_link(h, s, link(100));
            }
            for i in 0..n_sw {
                t.add_link(sw[i], sw[(i + 1) % n_sw], link(100));
            }
            let updown = Routes::try_updown(&t).unwrap();
            assert!(acyclic(channel_deps(&t, &updown)), "ring {n_sw}: up*/down* has a cycle");
            if n_sw >= 5 {
                assert!(
                    !acyclic(channel_deps(&t, &Routes::ecmp(&t))),
                    "ring {n_sw}: shortest paths should cycle"
                );
            }
        }
    }
}
