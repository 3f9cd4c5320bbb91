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
//!
//! ## Conventions shared by every builder
//! - Hosts are added first, so host `i` is node `i` (`topo.hosts[i] == NodeIndex::new(i)`);
//!   switches follow, lowest tier first.
//! - Every switch gets its *down* ports (towards hosts) first, then its *up* ports.
//! - A host has exactly one port (port 0), to its leaf (edge/ToR) switch.
//! - Builders never panic on user parameters: they return a [`TopologyError`]. Topologies
//!   above [`MAX_NODES`] nodes, [`MAX_LINKS`] links or [`MAX_PORTS`] ports on one node are
//!   refused (ports are `u16` in the routing tables).
//!
//! ## Modules
//! - [`fat_tree`]: 3-tier k-ary fat-tree (Al-Fares, Loukissas, Vahdat, "A Scalable, Commodity
//!   Data Center Network Architecture", SIGCOMM 2008; after Leiserson, "Fat-Trees: Universal
//!   Networks for Hardware-Efficient Supercomputing", IEEE Trans. Computers, 1985).
//! - [`leaf_spine`]: 2-tier folded Clos with a given (exact, rational) oversubscription.
//! - [`sizing`]: the fewest tiers that fit `n` hosts non-blocking with radix-`r` switches.
//! - [`dot`]: Graphviz export with byte-stable output.
//!
//! Topology-level helpers live on [`Topology`]: [`Topology::leaf_of`],
//! [`Topology::switch_tier`], [`Topology::validate`], [`Topology::check_radix`],
//! [`Topology::oversubscription`] and [`Topology::bisection_bandwidth_bps`].

pub mod cluster;
pub mod dot;
pub mod fat_tree;
pub mod hgx;
pub mod leaf_spine;
pub mod nvlink_shapes;
pub mod sizing;

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::fmt;

use petgraph::graph::{EdgeIndex, NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;
use sim_core::{BitsPerSec, Duration};

/// Largest topology (in nodes: hosts + switches) a builder accepts: 2^20.
pub const MAX_NODES: u64 = 1 << 20;
/// Largest topology (in links) a builder accepts: 2^24.
pub const MAX_LINKS: u64 = 1 << 24;
/// Most ports one node may have: 2^16 (port numbers are `u16` in the routing tables).
pub const MAX_PORTS: u64 = 1 << 16;

/// What a node is.
///
/// Only [`NodeKind::Host`] nodes are endpoints (listed in [`Topology::hosts`]); every other
/// kind forwards. In the network-only builders a host is a server NIC; in the GPU builders
/// ([`hgx`], [`nvlink_shapes`], [`cluster`]) a host is a GPU and the server's NICs, PCIe
/// switches, NVSwitch chips and the GPU's own NVLink hub are forwarding nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// An endpoint (a server NIC, or a GPU in the GPU builders): traffic sources and sinks.
    Host,
    /// A network switch at `tier` (0 = leaf/edge/ToR, 1 = spine/aggregation, 2 = core).
    Switch { tier: u8 },
    /// A GPU's NVLink/PCIe hub (NVIDIA's "HSHUB"): joins the GPU's single endpoint port to its
    /// NVLinks and its PCIe link; it stripes traffic over parallel NVLinks (see [`hgx`]).
    GpuHub,
    /// An NVSwitch crossbar chip.
    NvSwitch,
    /// A PCIe switch.
    PcieSwitch,
    /// A CPU's PCIe root complex (sockets are joined by a CPU-CPU link).
    RootComplex,
    /// A network adapter (ConnectX-class NIC) inside a GPU server: PCIe on one side, the
    /// network on the other.
    Nic,
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

/// What a link is (which link-level protocol the engine models on it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LinkKind {
    /// A generic network link (the engine's configured network model applies).
    #[default]
    Network,
    /// An Ethernet (RoCEv2) link.
    Ethernet,
    /// An InfiniBand link.
    InfiniBand,
    /// One NVLink (rate = per-link, per-direction data rate; see `crate::nvlink`).
    NvLink,
    /// A PCIe link (rate = lanes x GT/s after line encoding; see `crate::pcie`).
    Pcie,
    /// An on-chip or on-board attachment that is not a modelled bottleneck (a GPU to its hub,
    /// a CPU-CPU socket link); builders document the rate they give it.
    Internal,
}

/// A full-duplex link's attributes (the same in both directions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    /// Data rate of each direction.
    pub rate: BitsPerSec,
    /// One-way propagation delay.
    pub delay: Duration,
    /// The link's kind ([`LinkKind::Network`] for the generic network builders).
    pub kind: LinkKind,
}

impl LinkInfo {
    /// A generic network link ([`LinkKind::Network`]).
    pub const fn new(rate: BitsPerSec, delay: Duration) -> Self {
        LinkInfo {
            rate,
            delay,
            kind: LinkKind::Network,
        }
    }

    /// The same link with kind `kind`.
    pub const fn with_kind(self, kind: LinkKind) -> Self {
        LinkInfo { kind, ..self }
    }
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

/// Why a builder refused its parameters, or why a topology is malformed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologyError {
    /// A fat-tree's `k` must be even and at least 2.
    InvalidK { k: u32 },
    /// A switch radix must be even and at least 2.
    InvalidRadix { radix: u32 },
    /// A count that must be at least 1 was 0 (`what` names the parameter).
    ZeroCount { what: &'static str },
    /// A link rate of 0 b/s (`what` is `"host link"` or `"fabric link"`).
    ZeroRate { what: &'static str },
    /// An oversubscription ratio `num:den` with a zero term.
    InvalidRatio { num: u32, den: u32 },
    /// The requested oversubscription needs a non-integer number of uplinks per leaf.
    NonIntegerUplinks {
        hosts_per_leaf: u32,
        host_rate: BitsPerSec,
        fabric_rate: BitsPerSec,
        num: u32,
        den: u32,
    },
    /// More hosts than any (up to 3-tier) fabric of this radix can hold.
    TooManyHosts { n_hosts: u64, radix: u32, max: u64 },
    /// More hosts than this fat-tree holds (`k^3/4`).
    TooManyHostsForK { n_hosts: u64, k: u32, max: u64 },
    /// Over a size limit ([`MAX_NODES`], [`MAX_LINKS`], [`MAX_PORTS`]).
    TooLarge {
        what: &'static str,
        count: u128,
        limit: u64,
    },
    /// A switch has more ports than the radix allows.
    RadixExceeded { switch: String, degree: usize, radix: u32 },
    /// A malformed topology (from [`Topology::validate`]).
    Invalid { reason: String },
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::InvalidK { k } => {
                write!(f, "fat-tree k must be even and at least 2 (got k={k})")
            }
            TopologyError::InvalidRadix { radix } => {
                write!(f, "switch radix must be even and at least 2 (got {radix})")
            }
            TopologyError::ZeroCount { what } => write!(f, "{what} must be at least 1 (got 0)"),
            TopologyError::ZeroRate { what } => write!(f, "{what} rate must be nonzero"),
            TopologyError::InvalidRatio { num, den } => write!(
                f,
                "oversubscription ratio {num}:{den} is invalid: both terms must be at least 1"
            ),
            TopologyError::NonIntegerUplinks {
                hosts_per_leaf,
                host_rate,
                fabric_rate,
                num,
                den,
            } => {
                let n = *hosts_per_leaf as u128 * host_rate.get() as u128 * *den as u128;
                let d = *num as u128 * fabric_rate.get() as u128;
                let exact = if d == 0 { f64::NAN } else { n as f64 / d as f64 };
                write!(
                    f,
                    "oversubscription {num}:{den} with {hosts_per_leaf} hosts/leaf at {host_rate} \
                     and {fabric_rate} uplinks needs {exact:.3} uplinks per leaf, \
                     which is not a positive integer"
                )
            }
            TopologyError::TooManyHosts { n_hosts, radix, max } => write!(
                f,
                "{n_hosts} hosts do not fit radix-{radix} switches: the maximum is {max} hosts \
                 (3-tier fat-tree, radix^3/4)"
            ),
            TopologyError::TooManyHostsForK { n_hosts, k, max } => write!(
                f,
                "{n_hosts} hosts do not fit a k={k} fat-tree: the maximum is {max} hosts (k^3/4)"
            ),
            TopologyError::TooLarge { what, count, limit } => {
                write!(f, "topology too large: {count} {what} exceeds the limit of {limit}")
            }
            TopologyError::RadixExceeded { switch, degree, radix } => {
                write!(f, "switch {switch} has {degree} ports, more than the radix {radix}")
            }
            TopologyError::Invalid { reason } => write!(f, "invalid topology: {reason}"),
        }
    }
}

impl std::error::Error for TopologyError {}

/// Refuses a zero count parameter.
pub(crate) fn nonzero(value: u64, what: &'static str) -> Result<(), TopologyError> {
    if value == 0 {
        Err(TopologyError::ZeroCount { what })
    } else {
        Ok(())
    }
}

/// Refuses a zero-rate link.
pub(crate) fn check_link(link: &LinkInfo, what: &'static str) -> Result<(), TopologyError> {
    if link.rate.get() == 0 {
        Err(TopologyError::ZeroRate { what })
    } else {
        Ok(())
    }
}

/// Refuses sizes above [`MAX_NODES`], [`MAX_LINKS`] and [`MAX_PORTS`] (checked before building).
pub(crate) fn check_size(nodes: u128, links: u128, max_ports: u128) -> Result<(), TopologyError> {
    for (what, count, limit) in [
        ("nodes", nodes, MAX_NODES),
        ("links", links, MAX_LINKS),
        ("ports on one switch", max_ports, MAX_PORTS),
    ] {
        if count > limit as u128 {
            return Err(TopologyError::TooLarge { what, count, limit });
        }
    }
    Ok(())
}

/// An exact, non-negative rational `num / den` in lowest terms (for oversubscription ratios).
///
/// Displays as `num:den` (e.g. `2:1`, `3:2`); [`Ratio::as_f64`] is for reports only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ratio {
    num: u128,
    den: u128,
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Ratio {
    /// `num / den` in lowest terms; `None` if `den` is 0.
    pub fn new(num: u128, den: u128) -> Option<Ratio> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        Some(Ratio {
            num: num / g,
            den: den / g,
        })
    }
    pub fn num(self) -> u128 {
        self.num
    }
    pub fn den(self) -> u128 {
        self.den
    }
    pub fn is_integer(self) -> bool {
        self.den == 1
    }
    /// The ratio as `f64`, for reports only.
    pub fn as_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

impl Ord for Ratio {
    /// Exact comparison without overflow (continued-fraction expansion of both sides).
    fn cmp(&self, other: &Self) -> Ordering {
        let (mut a, mut b, mut c, mut d) = (self.num, self.den, other.num, other.den);
        let mut flipped = false;
        loop {
            let (qa, qc) = (a / b, c / d);
            let ord = qa.cmp(&qc);
            if ord != Ordering::Equal {
                return if flipped { ord.reverse() } else { ord };
            }
            let (ra, rc) = (a % b, c % d);
            match (ra == 0, rc == 0) {
                (true, true) => return Ordering::Equal,
                (true, false) => {
                    return if flipped { Ordering::Greater } else { Ordering::Less };
                }
                (false, true) => {
                    return if flipped { Ordering::Less } else { Ordering::Greater };
                }
                // a/b = q + ra/b; comparing ra/b with rc/d is comparing d/rc with b/ra.
                (false, false) => {
                    (a, b, c, d) = (b, ra, d, rc);
                    flipped = !flipped;
                }
            }
        }
    }
}

impl PartialOrd for Ratio {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.num, self.den)
    }
}

impl Topology {
    /// The tier of a network switch, `None` for a host or any in-server node.
    pub fn switch_tier(&self, node: NodeIndex) -> Option<u8> {
        match self.graph[node].kind {
            NodeKind::Switch { tier } => Some(tier),
            NodeKind::Host
            | NodeKind::GpuHub
            | NodeKind::NvSwitch
            | NodeKind::PcieSwitch
            | NodeKind::RootComplex
            | NodeKind::Nic => None,
        }
    }

    pub fn is_host(&self, node: NodeIndex) -> bool {
        self.graph[node].kind == NodeKind::Host
    }

    /// Number of ports (incident links) of `node`.
    pub fn degree(&self, node: NodeIndex) -> usize {
        self.graph.edges(node).count()
    }

    /// The switch that `host` attaches to (its leaf / edge / ToR switch).
    ///
    /// Panics if `host` is not a host with exactly one link (never the case for a builder's
    /// output; [`Topology::validate`] checks it for hand-made topologies).
    pub fn leaf_of(&self, host: NodeIndex) -> NodeIndex {
        assert!(self.is_host(host), "leaf_of: {} is not a host", self.graph[host].name);
        let mut it = self.graph.neighbors(host);
        match (it.next(), it.next()) {
            (Some(leaf), None) => leaf,
            _ => panic!(
                "leaf_of: host {} has {} links, expected 1",
                self.graph[host].name,
                self.degree(host)
            ),
        }
    }

    /// The leaf switches (switches with at least one host attached), in node-index order.
    pub fn leaves(&self) -> Vec<NodeIndex> {
        let mut is_leaf = vec![false; self.n_nodes()];
        for &h in &self.hosts {
            for n in self.graph.neighbors(h) {
                if !self.is_host(n) {
                    is_leaf[n.index()] = true;
                }
            }
        }
        (0..self.n_nodes())
            .filter(|&i| is_leaf[i])
            .map(NodeIndex::new)
            .collect()
    }

    /// Largest port count over all switches (0 if there are none).
    pub fn max_switch_degree(&self) -> usize {
        self.graph
            .node_indices()
            .filter(|&n| !self.is_host(n))
            .map(|n| self.degree(n))
            .max()
            .unwrap_or(0)
    }

    /// Checks that no network switch ([`NodeKind::Switch`]) has more than `radix` ports
    /// (in-server nodes such as NVSwitch chips and GPU hubs are not network switches).
    pub fn check_radix(&self, radix: u32) -> Result<(), TopologyError> {
        for n in self.graph.node_indices() {
            let degree = self.degree(n);
            if self.switch_tier(n).is_some() && degree > radix as usize {
                return Err(TopologyError::RadixExceeded {
                    switch: self.graph[n].name.clone(),
                    degree,
                    radix,
                });
            }
        }
        Ok(())
    }

    /// Checks the structural invariants the engine and routing rely on: size limits,
    /// `hosts` lists exactly the host nodes (once each), every host has exactly one link and
    /// it goes to a switch, no self-loops, no zero-rate link, at most [`MAX_PORTS`] per node.
    pub fn validate(&self) -> Result<(), TopologyError> {
        let invalid = |reason: String| Err(TopologyError::Invalid { reason });
        check_size(self.n_nodes() as u128, self.n_links() as u128, 0)?;
        let mut listed = vec![false; self.n_nodes()];
        for &h in &self.hosts {
            if h.index() >= self.n_nodes() {
                return invalid(format!("hosts lists node {} which does not exist", h.index()));
            }
            if listed[h.index()] {
                return invalid(format!("host {} is listed twice", self.graph[h].name));
            }
            listed[h.index()] = true;
        }
        for n in self.graph.node_indices() {
            let info = &self.graph[n];
            if (info.kind == NodeKind::Host) != listed[n.index()] {
                return invalid(format!(
                    "node {} is a host iff it is in `hosts` (kind {:?})",
                    info.name, info.kind
                ));
            }
            let degree = self.degree(n);
            if degree as u64 > MAX_PORTS {
                return invalid(format!("node {} has {degree} ports (max {MAX_PORTS})", info.name));
            }
            // A host has one link: to a switch, or straight to another host (a back-to-back
            // cable: the pair then talks only to each other).
            if info.kind == NodeKind::Host && degree != 1 {
                return invalid(format!("host {} has {degree} links, expected 1", info.name));
            }
        }
        for e in self.graph.edge_references() {
            if e.source() == e.target() {
                return invalid(format!("self-loop at {}", self.graph[e.source()].name));
            }
            if e.weight().rate.get() == 0 {
                return invalid(format!(
                    "zero-rate link {} -- {}",
                    self.graph[e.source()].name,
                    self.graph[e.target()].name
                ));
            }
        }
        Ok(())
    }

    /// The worst (largest) oversubscription over the leaf switches: for each leaf, the total
    /// rate of its host links divided by the total rate of its links to higher-tier switches.
    ///
    /// `None` if no leaf has an uplink (e.g. a single switch). A full fat-tree gives `1:1`;
    /// a leaf-spine gives the ratio it was built for.
    pub fn oversubscription(&self) -> Option<Ratio> {
        let mut worst: Option<Ratio> = None;
        for leaf in self.leaves() {
            let tier = self.switch_tier(leaf).unwrap_or(0);
            let (mut down, mut up) = (0u128, 0u128);
            for e in self.graph.edges(leaf) {
                let other = if e.source() == leaf { e.target() } else { e.source() };
                let rate = e.weight().rate.get() as u128;
                match self.switch_tier(other) {
                    None => down += rate,
                    Some(t) if t > tier => up += rate,
                    Some(_) => {}
                }
            }
            if let Some(r) = Ratio::new(down, up) {
                worst = Some(worst.map_or(r, |w| w.max(r)));
            }
        }
        worst
    }

    /// Bisection bandwidth in bits per second, from an exact max-flow computation.
    ///
    /// Method: the hosts are split into two halves by host index, `[0, n/2)` and
    /// `[n/2, n)`; a super-source feeds the first half and a super-sink drains the second
    /// (both with unbounded capacity), every link is an undirected edge whose capacity is its
    /// rate (one direction's worth), and Dinic's max-flow algorithm gives the minimum cut
    /// (host links included, so the answer never exceeds `n/2` times the host rate).
    ///
    /// For the builders' topologies host indices are pod- and leaf-major, so this split is the
    /// worst balanced one along the tree: a `k`-ary fat-tree gives full bisection
    /// (`n/2 * host rate`, it is rearrangeably non-blocking), and a leaf-spine with an even
    /// number of leaves and oversubscription `r` gives `n/2 * host rate / r`. For arbitrary
    /// topologies it is the min cut of this particular split, an upper bound on the true
    /// (minimum over all balanced splits, NP-hard) bisection bandwidth.
    pub fn bisection_bandwidth_bps(&self) -> u64 {
        let n_hosts = self.n_hosts();
        if n_hosts < 2 {
            return 0;
        }
        let n = self.n_nodes();
        let (source, sink) = (n, n + 1);
        let mut net = FlowNet::new(n + 2);
        for e in self.graph.edge_references() {
            let rate = e.weight().rate.get();
            net.add_undirected(e.source().index(), e.target().index(), rate);
        }
        for (i, &h) in self.hosts.iter().enumerate() {
            if i < n_hosts / 2 {
                net.add_directed(source, h.index(), FlowNet::INF);
            } else {
                net.add_directed(h.index(), sink, FlowNet::INF);
            }
        }
        net.max_flow(source, sink)
    }
}

/// A small Dinic max-flow network (arcs stored in pairs: arc `a` and its reverse `a ^ 1`).
struct FlowNet {
    adj: Vec<Vec<u32>>,
    to: Vec<u32>,
    cap: Vec<u64>,
}

impl FlowNet {
    /// "Unbounded" capacity; large enough for any sum of real link rates, small enough that
    /// adding a few to a real flow never overflows.
    const INF: u64 = u64::MAX / 4;

    fn new(n: usize) -> Self {
        FlowNet {
            adj: vec![Vec::new(); n],
            to: Vec::new(),
            cap: Vec::new(),
        }
    }

    fn add_pair(&mut self, a: usize, b: usize, cap_ab: u64, cap_ba: u64) {
        let id = self.to.len() as u32;
        self.to.extend([b as u32, a as u32]);
        self.cap.extend([cap_ab, cap_ba]);
        self.adj[a].push(id);
        self.adj[b].push(id + 1);
    }

    /// An undirected edge: two opposite arcs of capacity `cap` that are each other's reverse.
    fn add_undirected(&mut self, a: usize, b: usize, cap: u64) {
        self.add_pair(a, b, cap, cap);
    }

    fn add_directed(&mut self, a: usize, b: usize, cap: u64) {
        self.add_pair(a, b, cap, 0);
    }

    fn max_flow(&mut self, s: usize, t: usize) -> u64 {
        let n = self.adj.len();
        let mut total: u64 = 0;
        let mut level = vec![u32::MAX; n];
        let mut it = vec![0usize; n];
        let mut queue = VecDeque::new();
        let mut stack: Vec<u32> = Vec::new();
        loop {
            // BFS: level graph.
            level.fill(u32::MAX);
            level[s] = 0;
            queue.clear();
            queue.push_back(s);
            while let Some(u) = queue.pop_front() {
                for &a in &self.adj[u] {
                    let v = self.to[a as usize] as usize;
                    if self.cap[a as usize] > 0 && level[v] == u32::MAX {
                        level[v] = level[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            if level[t] == u32::MAX {
                return total;
            }
            // Iterative DFS: blocking flow.
            it.fill(0);
            stack.clear();
            let mut u = s;
            loop {
                if u == t {
                    let f = stack.iter().map(|&a| self.cap[a as usize]).min().unwrap_or(0);
                    for &a in &stack {
                        self.cap[a as usize] -= f;
                        self.cap[(a ^ 1) as usize] += f;
                    }
                    total = total.saturating_add(f);
                    // Retreat to the tail of the first saturated arc.
                    let first = stack.iter().position(|&a| self.cap[a as usize] == 0).unwrap_or(0);
                    u = self.to[(stack[first] ^ 1) as usize] as usize;
                    stack.truncate(first);
                    continue;
                }
                let mut advanced = false;
                while it[u] < self.adj[u].len() {
                    let a = self.adj[u][it[u]] as usize;
                    let v = self.to[a] as usize;
                    if self.cap[a] > 0 && level[v] == level[u] + 1 {
                        stack.push(a as u32);
                        u = v;
                        advanced = true;
                        break;
                    }
                    it[u] += 1;
                }
                if advanced {
                    continue;
                }
                // Dead end: prune `u` and retreat.
                level[u] = u32::MAX;
                match stack.pop() {
                    None => break,
                    Some(a) => {
                        u = self.to[(a ^ 1) as usize] as usize;
                        it[u] += 1;
                    }
                }
            }
        }
    }
}

/// A test link of `gbps` with 500 ns of propagation, shared by the topology and routing tests.
#[cfg(test)]
pub(crate) fn test_link(gbps: u64) -> LinkInfo {
    LinkInfo {
        rate: BitsPerSec::from_gbps(gbps),
        delay: Duration::from_ns(500),
        kind: LinkKind::Network,
    }
}

#[cfg(test)]
mod tests {
    use super::test_link as link;
    use super::*;

    #[test]
    fn ratio_reduces_and_orders_exactly() {
        let r = Ratio::new(6, 4).unwrap();
        assert_eq!((r.num(), r.den()), (3, 2));
        assert_eq!(r.to_string(), "3:2");
        assert!(Ratio::new(1, 0).is_none());
        let cases = [(1, 3), (1, 2), (2, 3), (1, 1), (3, 2), (2, 1), (7, 3), (3, 1)];
        for (i, &(a, b)) in cases.iter().enumerate() {
            for (j, &(c, d)) in cases.iter().enumerate() {
                let (x, y) = (Ratio::new(a, b).unwrap(), Ratio::new(c, d).unwrap());
                assert_eq!(x.cmp(&y), i.cmp(&j), "{x} vs {y}");
            }
        }
        let big = Ratio::new(u128::MAX - 1, u128::MAX).unwrap();
        let big2 = Ratio::new(u128::MAX - 2, u128::MAX - 1).unwrap();
        assert!(big > big2);
        assert!(Ratio::new(0, 5).unwrap() < big2);
    }

    #[test]
    fn helpers_on_a_tiny_star() {
        let mut t = Topology::new("star");
        let h0 = t.add_host("h0", None);
        let h1 = t.add_host("h1", None);
        let s = t.add_switch("s0", 0, None);
        t.add_link(h0, s, link(100));
        t.add_link(s, h1, link(100));
        t.validate().unwrap();
        assert_eq!(t.leaf_of(h0), s);
        assert_eq!(t.leaf_of(h1), s);
        assert_eq!(t.leaves(), vec![s]);
        assert_eq!(t.switch_tier(s), Some(0));
        assert_eq!(t.switch_tier(h0), None);
        assert_eq!(t.max_switch_degree(), 2);
        assert!(t.check_radix(2).is_ok());
        assert!(matches!(t.check_radix(1), Err(TopologyError::RadixExceeded { .. })));
        assert_eq!(t.oversubscription(), None);
        assert_eq!(t.bisection_bandwidth_bps(), 100_000_000_000);
    }

    #[test]
    fn validate_rejects_malformed() {
        let mut t = Topology::new("bad");
        let h0 = t.add_host("h0", None);
        let h1 = t.add_host("h1", None);
        t.add_link(h0, h1, link(100));
        assert!(t.validate().is_ok(), "a back-to-back host pair is a valid topology");

        let mut t = Topology::new("bad2");
        let h0 = t.add_host("h0", None);
        let s = t.add_switch("s", 0, None);
        t.add_link(h0, s, link(100));
        t.add_link(h0, s, link(100));
        assert!(t.validate().unwrap_err().to_string().contains("2 links"));

        let mut t = Topology::new("bad3");
        let h0 = t.add_host("h0", None);
        let s = t.add_switch("s", 0, None);
        t.add_link(
            h0,
            s,
            LinkInfo {
                rate: BitsPerSec(0),
                delay: Duration::ZERO,
                kind: LinkKind::Network,
            },
        );
        assert!(t.validate().unwrap_err().to_string().contains("zero-rate"));
    }

    #[test]
    fn bisection_of_a_line_is_the_bottleneck() {
        // h0 - s0 = s1 - h1 with two parallel 10G links between the switches, 100G host links.
        let mut t = Topology::new("line");
        let h0 = t.add_host("h0", None);
        let h1 = t.add_host("h1", None);
        let s0 = t.add_switch("s0", 0, None);
        let s1 = t.add_switch("s1", 0, None);
        t.add_link(h0, s0, link(100));
        t.add_link(h1, s1, link(100));
        t.add_link(s0, s1, link(10));
        t.add_link(s1, s0, link(10));
        assert_eq!(t.bisection_bandwidth_bps(), 20_000_000_000);
    }

    #[test]
    fn errors_display_clearly() {
        assert_eq!(
            TopologyError::InvalidK { k: 3 }.to_string(),
            "fat-tree k must be even and at least 2 (got k=3)"
        );
        let e = check_size(MAX_NODES as u128 + 1, 0, 0).unwrap_err();
        assert!(e.to_string().contains("nodes exceeds the limit of 1048576"), "{e}");
    }
}
