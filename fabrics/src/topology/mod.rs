//! Topologies as plain petgraph data, built once, then frozen into flat arrays by the engine.
//!
//! A topology is an undirected graph: nodes are hosts (a NIC with one port) and switches,
//! edges are full-duplex links with a data rate and a one-way propagation delay. Builders:
//! [`fat_tree`] (3-tier k-ary), [`leaf_spine`] (2-tier, given oversubscription), and
//! [`sizing`] (host count + switch radix -> fewest tiers that fit).
//!
//! Port numbering (what the engine and routing use): a node's ports are its incident edges
//! sorted by edge index, i.e. in the order the builder added the links. Builders add each
//! switch's links in a documented order so that port numbers are stable and meaningful.

use petgraph::graph::{EdgeIndex, NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;
use sim_core::{BitsPerSec, Duration};

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// An end host (GPU server NIC): traffic sources and sinks.
    Host,
    /// A switch at `tier` (0 = leaf/edge/ToR, 1 = spine/aggregation, 2 = core).
    Switch { tier: u8 },
}

/// A node's attributes.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub kind: NodeKind,
    /// Human-readable, unique name used in reports and DOT export (e.g. `h12`, `edge3.1`).
    pub name: String,
    /// Pod number for fat-tree nodes below the core; `None` elsewhere.
    pub pod: Option<u32>,
}

/// A full-duplex link's attributes (the same in both directions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    /// Data rate of each direction.
    pub rate: BitsPerSec,
    /// One-way propagation delay.
    pub delay: Duration,
}

/// A built topology.
#[derive(Clone, Debug)]
pub struct Topology {
    pub graph: UnGraph<NodeInfo, LinkInfo, u32>,
    /// Host nodes in host-index order: host `i` of a workload is `hosts[i]`.
    pub hosts: Vec<NodeIndex>,
    /// A one-line description, e.g. `fat-tree k=8 (128 hosts, 80 switches)`.
    pub description: String,
}

impl Topology {
    /// An empty topology (builders add to it).
    pub fn new(description: impl Into<String>) -> Self {
        Topology {
            graph: UnGraph::default(),
            hosts: Vec::new(),
            description: description.into(),
        }
    }

    /// Adds a host; it becomes host index `self.hosts.len() - 1`.
    pub fn add_host(&mut self, name: impl Into<String>, pod: Option<u32>) -> NodeIndex {
        let n = self.graph.add_node(NodeInfo {
            kind: NodeKind::Host,
            name: name.into(),
            pod,
        });
        self.hosts.push(n);
        n
    }

    pub fn add_switch(&mut self, name: impl Into<String>, tier: u8, pod: Option<u32>) -> NodeIndex {
        self.graph.add_node(NodeInfo {
            kind: NodeKind::Switch { tier },
            name: name.into(),
            pod,
        })
    }

    pub fn add_link(&mut self, a: NodeIndex, b: NodeIndex, link: LinkInfo) -> EdgeIndex {
        self.graph.add_edge(a, b, link)
    }

    pub fn n_nodes(&self) -> usize {
        self.graph.node_count()
    }
    pub fn n_links(&self) -> usize {
        self.graph.edge_count()
    }
    pub fn n_hosts(&self) -> usize {
        self.hosts.len()
    }
    pub fn n_switches(&self) -> usize {
        self.n_nodes() - self.n_hosts()
    }

    /// The ports of `node`: `(edge, neighbour)` sorted by edge index (see the module docs).
    pub fn ports(&self, node: NodeIndex) -> Vec<(EdgeIndex, NodeIndex)> {
        let mut v: Vec<(EdgeIndex, NodeIndex)> = self
            .graph
            .edges(node)
            .map(|e| {
                let other = if e.source() == node { e.target() } else { e.source() };
                (e.id(), other)
            })
            .collect();
        v.sort_by_key(|&(e, _)| e.index());
        v
    }
}
