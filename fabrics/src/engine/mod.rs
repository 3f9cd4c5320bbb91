//! The packet engine: a topology and its routes frozen into flat arrays, driven by events.
//!
//! ## How a packet moves
//! 1. A host NIC picks an active flow (round-robin among flows whose congestion control lets
//!    them send), cuts the next packet (payload up to the MTU plus `header_bytes`) and starts
//!    serializing it on its port.
//! 2. Starting a transmission at `t` puts the packet into the port's [`sim_core::Pipe`] with arrival time
//!    `t + serialization + propagation + peer latency` (store-and-forward: the packet joins the
//!    next queue only when its last bit is in and the switch has handled it).
//!    Only the pipe's head is in the scheduler ([`Ev::Arrive`]); see [`sim_core::Pipe`].
//! 3. At a switch the packet is routed (ECMP over the next-hop set, per-flow hash with a
//!    per-switch seed) to an egress port, offered to the buffer model (tail drop here) and
//!    queued; an idle port starts sending at once.
//! 4. At its destination host the packet is delivered: latency and flow progress are recorded.
//!
//! A port's end of transmission ([`Ev::TxDone`]) is scheduled only when something waits
//! behind it, so a lightly loaded hop costs one event, a busy one two.
//!
//! ## Event origins (tie-break rule 2 of sim-core)
//! `TxDone(p)` has origin `p`; `Arrive(p)` has origin `P + 2p` (`P` = number of ports) and
//! `CtrlArrive(p)` (the port's control pipe: flow-control and PAUSE frames) `P + 2p + 1`, or
//! `P + 2p` where the far end takes flow-control packets in lazily (`Fabric::ctrl_origin`);
//! a host's NIC wake-up has origin `3P + host`; flow arrivals have origin `3P + H`; port
//! timers (`PortTimer(p)`) have origin `3P + H + 1 + p`. So at one instant departures are
//! handled before arrivals: a queue frees its slot before a newcomer is judged.
//!
//! ## InfiniBand
//! With [`EngineConfig::ib`] set, switches are input-buffered and cut-through with per-VL
//! credit flow control, and hosts are HCAs with per-VL send queues: see `engine/ib/`. The
//! event types and the pipe mechanics are the same.
//!
//! ## RoCEv2
//! With [`EngineConfig::roce`] set, switches have a shared-buffer MMU with 8 priorities, PFC,
//! ECN and strict-priority + DWRR egress scheduling, and host NICs send CNPs/ACKs and run
//! DCQCN, TIMELY or HPCC: see `engine/roce/`. Flow timers (`FlowTimer(f)`, congestion-control
//! timers and go-back-N timeouts) have origin `4P + H + 1 + f`; they exist only then, as does
//! the rate-sampling event (`RateSample`, origin `4P + H + 1 + F`, only when sampling is on).

mod capture;
mod config;
mod deps;
mod device;
mod ib;
mod ideal;
mod nic;
mod oq_switch;
mod packet;
mod partition;
mod port;
mod results;
mod roce;
#[cfg(test)]
mod testing;

pub use capture::{Capture, CapturedPacket, MAX_CAPTURED_PACKETS};
pub use config::*;
pub use deps::FlowDeps;
pub use device::{Device, LinkFc};
pub use ib::{IbPortStats, IbState, IbTotals};
pub use ideal::IdealPath;
pub use packet::{CtrlFrame, NO_LANE, OnWire, Packet, PacketArena, PacketKind};
pub use partition::{Crossing, MAX_PARTITIONS};
use port::CtrlLink;
pub use port::{Framing, Port, PortStats};
pub use results::{FlowRecord, RunTotals};
pub use roce::{
    DEFAULT_CNP_INTERVAL, DEFAULT_CONTROL_PRIORITY, DEFAULT_RATE_SAMPLE_MAX_ROWS, DEFAULT_RTO, Deadlock, GbnWindow,
    RoceCc, RoceConfig, RocePortStats, RoceState, RoceTotals, headroom_bound_bytes,
};

use crate::models::{AnyBuffer, AnyCc, AnyFlowControl, AnyMarking, FixedRate, LinkFlowControl};
use crate::routing::{Routes, ecmp_pick, flow_hash};
use crate::topology::{NodeKind, Topology};
use crate::traffic::FlowSpec;
use sim_core::{
    EventQueue, LatencyHistogram, Model, Origin, RngStreams, Scheduler, SimTime, prefetch, prefetch_at, rng,
};
use std::collections::VecDeque;

/// Switches of a flow's path kept in [`Fabric::path_cache`] (a fat-tree path has at most 5;
/// two directions of 8 make a flow's entry one cache line).
const PATH_HOPS: usize = 8;
/// Largest workload whose flows keep their paths (64 bytes each, 256 MiB at most); a larger
/// one routes every hop by the tables, as it costs a flow's other records several times over.
const MAX_PATH_FLOWS: usize = 4 << 20;

/// The engine's event record: 8 bytes, ids into the engine's arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// Egress port `p` finished serializing; it may start its next packet.
    TxDone(u32),
    /// The head packet of port `p`'s pipe reaches the far end.
    Arrive(u32),
    /// A host NIC may be able to send (a flow became eligible or its port went idle).
    NicWake(u32),
    /// The next flow(s) of the workload start.
    FlowArrival,
    /// The head of port `p`'s control pipe (flow-control / PAUSE frames) reaches the far end.
    CtrlArrive(u32),
    /// Port `p`'s timer (InfiniBand: HOQLife deadlines, deferred credit updates; RoCEv2:
    /// PAUSE refreshes and expiries).
    PortTimer(u32),
    /// Flow `f`'s timer (RoCEv2: congestion-control timer, go-back-N timeout).
    FlowTimer(u32),
    /// Flow `f`'s dependencies are delivered and its gap has passed: it starts (`deps.rs`).
    FlowStart(u32),
    /// RoCEv2: sample every sending flow's rate (only with `RoceConfig::rate_sample`).
    RateSample,
}

/// Errors building an engine from a topology, routes and flows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// A flow names a host index that does not exist.
    UnknownHost { flow: usize, host: u32, n_hosts: usize },
    /// The configuration is out of range.
    BadConfig(String),
    /// Too many components for the scheduler's origin space.
    TooLarge(String),
    /// No route leads from a flow's source to its destination.
    Unroutable { flow: usize, src: u32, dst: u32 },
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::UnknownHost { flow, host, n_hosts } => {
                write!(
                    f,
                    "flow {flow} uses host {host}, but the topology has {n_hosts} hosts (0..{n_hosts})"
                )
            }
            EngineError::BadConfig(m) => write!(f, "invalid engine configuration: {m}"),
            EngineError::TooLarge(m) => write!(f, "fabric too large: {m}"),
            EngineError::Unroutable { flow, src, dst } => {
                write!(
                    f,
                    "flow {flow}: no route from host {src} to host {dst} (the topology does not connect them)"
                )
            }
        }
    }
}

impl std::error::Error for EngineError {}

/// Per-flow sender state.
struct FlowState {
    /// Payload bytes not yet put into packets.
    unsent_bytes: u64,
    /// Earliest time the flow may start its next packet (congestion control).
    next_send_at: SimTime,
    cc: AnyCc,
}

/// A host's NIC: the flows it is sending, served round-robin.
struct Nic {
    port: u32,
    active: VecDeque<u32>,
    /// Earliest pending `NicWake` (`SimTime::MAX` when none is pending).
    wake_at: SimTime,
}

/// An instantiated fabric: everything the hot path touches, in flat arrays.
pub struct Fabric {
    /// The configuration as given (the live, stateful models are the fields below).
    cfg: EngineConfig,
    /// First port id of each node; node `n` owns ports `port_base[n]..port_base[n+1]`.
    port_base: Vec<u32>,
    is_host: Vec<bool>,
    /// The model that runs each node (`device.rs`).
    device: Vec<Device>,
    /// Host index of each node (`u32::MAX` for switches).
    host_of_node: Vec<u32>,
    ports: Vec<Port>,
    /// Some port routes ahead ([`Port::routed_ahead`]).
    routing_ahead: bool,
    /// Per port: the link-level control frames on their way to it (`port.rs`).
    ctrl_links: Vec<CtrlLink>,
    routes: Routes,
    /// Per flow, its path: the egress port at each of its first `PATH_HOPS` switches, for its
    /// data (first half) and for the ACKs, NACKs and CNPs going back (second half), `u32::MAX`
    /// until a packet has been routed there. Where a switch routes by a function of the packet
    /// alone (not by load, not spraying) every packet of a flow and direction takes the same
    /// path, so after the first packet a hop reads its egress here instead of walking the
    /// route tables and hashing (about 3 % of a k=8 hop's instructions); one line per flow.
    path_cache: Vec<u32>,
    /// Scratch: the candidate egress ports of an adaptive choice (`route_ib`), kept so the
    /// choice allocates nothing.
    candidates: Vec<u32>,
    /// Fewest ports on the flows' paths for which the speed paths run: the prefetch pipeline
    /// and routing ahead ([`PREFETCH_MIN_PORTS`]; [`Fabric::set_prefetch_min_ports`]).
    prefetch_min_ports: usize,
    /// Whether they run (`Fabric::set_routing_ahead`).
    speed_paths: bool,
    /// Per-node ECMP hash seed.
    ecmp_seed: Vec<u64>,
    nics: Vec<Nic>,
    packets: PacketArena,
    flows: Vec<FlowSpec>,
    flow_state: Vec<FlowState>,
    records: Vec<FlowRecord>,
    /// Index of the next flow to start (flows are sorted by start time).
    next_flow: usize,
    /// Flows `0..n_timed` start at their start time; the rest start on dependencies.
    n_timed: usize,
    /// Dependency state of the dependent flows (empty without dependencies).
    deps: deps::DepState,
    /// Input index of a flow -> engine flow id (flows are reordered by start time).
    input_to_flow: Vec<u32>,
    /// Per node: spray packets over equal-cost next hops by load, whatever `route_pick` says
    /// (GPU hubs and NVSwitch chips stripe NVLink traffic over parallel links per packet).
    spray: Vec<bool>,
    /// Per port: its link is an `Internal` attachment (never a bottleneck).
    internal_port: Vec<bool>,
    /// Per port: the node at its far end (`Port::peer_node`, kept dense because interleaved
    /// spraying compares the far ends of up to 18 next hops per packet: from the ports
    /// themselves, a cache line each).
    peer_node_of: Vec<u32>,
    /// Per port: the host whose NIC it is (`u32::MAX` for switch ports), for the prefetch
    /// pipeline, which may not read the port itself before its line is in.
    host_of_port: Vec<u32>,
    /// Per host: its own send and receive processing (zero for GPUs; `EngineConfig::host_latency`).
    host_latency: Vec<HostLatency>,
    buffer: AnyBuffer,
    flow_control: AnyFlowControl,
    marking: AnyMarking,
    pkt_latency: LatencyHistogram,
    fct: LatencyHistogram,
    totals: RunTotals,
    /// D-mod-k divisor `W_t` of every node (product of the up-radices of the tiers below).
    dmodk_div: Vec<u64>,
    /// InfiniBand state, when the fabric is InfiniBand.
    ib: Option<Box<IbState>>,
    /// RoCEv2 state, when the fabric is RoCEv2.
    roce: Option<Box<RoceState>>,
    /// Packet capture of chosen ports (`capture.rs`), when asked for.
    capture: Option<Box<Capture>>,
    /// This fabric is one partition of a run on several threads (`partition.rs`).
    part: Option<Box<partition::PartState>>,
}

/// Fewest ports the flows' paths use (both directions of each link on a path) for which the
/// engine prefetches: below it (a k=8 fat-tree has 768 ports) the working set stays in the
/// caches and the pipeline's loads only cost instructions (+4 % on the k=8 mirror); from it
/// (k=16: 6,144) they hide misses (-19 % at k=16, -30 % at k=32; `docs/performance.md`,
/// session 8; a k=12 permutation, 2,500 ports used, -13 %). Counted on the paths, not the
/// fabric (session 26): an HGX cluster of 6,144 ports whose permutation uses 1,570 ran 10 to
/// 16 % faster without the pipeline, and the 512-to-1 incast (2,434 of 6,144) 5 % faster.
pub const PREFETCH_MIN_PORTS: usize = 2048;

impl Fabric {
    /// Freezes `topo` and `routes` into flat arrays and prepares `flows` (any order; they are
    /// sorted by start time, then source, destination and size).
    pub fn new(
        topo: &Topology,
        routes: Routes,
        cfg: EngineConfig,
        flows: Vec<FlowSpec>,
    ) -> Result<Fabric, EngineError> {
        Fabric::with_deps(topo, routes, cfg, flows, &FlowDeps::default())
    }

    /// [`Fabric::new`] with dependencies between flows (`deps.rs`): a flow with dependencies
    /// starts when they are all delivered plus its gap, and its `start` is ignored. Engine
    /// flow ids: the flows without dependencies sorted as in [`Fabric::new`], then the
    /// dependent flows in input order ([`Fabric::flow_of_input`] maps input indices).
    pub fn with_deps(
        topo: &Topology,
        routes: Routes,
        cfg: EngineConfig,
        flows: Vec<FlowSpec>,
        deps: &FlowDeps,
    ) -> Result<Fabric, EngineError> {
        if cfg.mtu_bytes == 0 || cfg.mtu_bytes > MAX_MTU_BYTES {
            return Err(EngineError::BadConfig(format!(
                "mtu {} B is outside 1..={MAX_MTU_BYTES}",
                cfg.mtu_bytes
            )));
        }
        if cfg.header_bytes > MAX_MTU_BYTES {
            return Err(EngineError::BadConfig(format!(
                "header {} B exceeds {MAX_MTU_BYTES}",
                cfg.header_bytes
            )));
        }
        if let Some(ib) = &cfg.ib {
            ib.validate(cfg.mtu_bytes + cfg.header_bytes)
                .map_err(EngineError::BadConfig)?;
        }
        if let (Some(ib), Some(_)) = (&cfg.ib, &cfg.roce) {
            // The servers' credit layer of a RoCEv2 cluster: its lanes are the Ethernet
            // priorities (a packet keeps its priority as its lane inside the servers).
            if ib.n_vls != 8 || ib.sl2vl[..8] != [0, 1, 2, 3, 4, 5, 6, 7] {
                return Err(EngineError::BadConfig(
                    "the servers' credit layer of a RoCEv2 run needs 8 lanes, lane = priority".into(),
                ));
            }
        }
        let n_hosts = topo.n_hosts();
        for (i, f) in flows.iter().enumerate() {
            for h in [f.src, f.dst] {
                if h as usize >= n_hosts {
                    return Err(EngineError::UnknownHost {
                        flow: i,
                        host: h,
                        n_hosts,
                    });
                }
            }
        }
        deps.check(flows.len()).map_err(EngineError::BadConfig)?;
        // Timed flows in the canonical order of `traffic::sort_flows` (a stable sort, so the
        // same order as sorting the flows themselves), then dependent flows in input order.
        let has_deps = |i: usize| !deps.is_empty() && !deps.of(i).is_empty();
        let mut order: Vec<u32> = (0..flows.len() as u32).filter(|&i| !has_deps(i as usize)).collect();
        order.sort_by_key(|&i| {
            let f = &flows[i as usize];
            (f.start, f.src, f.dst, f.size)
        });
        let n_timed = order.len();
        order.extend((0..flows.len() as u32).filter(|&i| has_deps(i as usize)));
        let mut input_to_flow = vec![0u32; flows.len()];
        for (new, &inp) in order.iter().enumerate() {
            input_to_flow[inp as usize] = new as u32;
        }
        let dep_state = deps::DepState::new(deps, &order, &input_to_flow);
        let flows: Vec<FlowSpec> = order.iter().map(|&i| flows[i as usize]).collect();
        drop(order);

        let n_nodes = topo.n_nodes();
        let mut host_of_node = vec![u32::MAX; n_nodes];
        for (h, n) in topo.hosts.iter().enumerate() {
            host_of_node[n.index()] = h as u32;
        }
        let device: Vec<Device> = topo
            .graph
            .node_indices()
            .map(|n| {
                let ib_link = topo
                    .graph
                    .edges(n)
                    .any(|e| e.weight().kind == crate::topology::LinkKind::InfiniBand);
                Device::of(topo.graph[n].kind, ib_link, &cfg)
            })
            .collect();
        let is_host: Vec<bool> = device.iter().map(|d| d.is_host()).collect();

        // Port ids: node by node, each node's ports in `Topology::ports` order.
        let node_ports: Vec<_> = topo.graph.node_indices().map(|n| topo.ports(n)).collect();
        let mut port_base = Vec::with_capacity(n_nodes + 1);
        let mut acc = 0u32;
        for ps in &node_ports {
            port_base.push(acc);
            acc += ps.len() as u32;
        }
        port_base.push(acc);
        let n_ports = acc;
        // As `Fabric::n_origins` counts them (with the rate-sampling origin).
        let flow_origins = if cfg.roce.is_some() { flows.len() as u64 + 1 } else { 0 };
        let origins = 4u64 * n_ports as u64 + n_hosts as u64 + 1 + flow_origins;
        if origins > sim_core::queue::MAX_ORIGINS as u64 {
            return Err(EngineError::TooLarge(format!(
                "{n_ports} ports and {n_hosts} hosts exceed the scheduler's origin space"
            )));
        }
        // The port at the far end of edge `e` seen from node `n`: find `e` among the peer's ports.
        let mut ports = Vec::with_capacity(n_ports as usize);
        // Ports on `LinkKind::Internal` links (never a modelled bottleneck: the credit path
        // gives their receivers the largest credit window).
        let mut internal_port = Vec::with_capacity(n_ports as usize);
        for (ni, ps) in node_ports.iter().enumerate() {
            for &(edge, peer) in ps {
                let link = topo.graph[edge];
                internal_port.push(link.kind == crate::topology::LinkKind::Internal);
                let peer_local = node_ports[peer.index()]
                    .iter()
                    .position(|&(e, _)| e == edge)
                    .expect("an edge appears in both endpoints' port lists");
                let dl = &cfg.device_latency;
                let peer_latency = match topo.graph[peer].kind {
                    NodeKind::Host => sim_core::Duration::ZERO,
                    // An InfiniBand switch in a RoCEv2 run (`device.rs`) has its own latency.
                    NodeKind::Switch { .. } if cfg.roce.is_some() && device[peer.index()] == Device::CreditSwitch => {
                        dl.ib_switch
                    }
                    NodeKind::Switch { .. } => cfg.switch_latency,
                    NodeKind::GpuHub => dl.gpu_hub,
                    NodeKind::NvSwitch => dl.nvswitch,
                    NodeKind::PcieSwitch => dl.pcie_switch,
                    NodeKind::RootComplex => dl.root_complex,
                    // A NIC's send processing when the packet comes from inside the server,
                    // its receive processing when it comes from the network.
                    NodeKind::Nic if network_link(link.kind) => dl.nic_rx,
                    NodeKind::Nic => dl.nic_tx,
                };
                let mut port = Port::new(
                    ni as u32,
                    peer.index() as u32,
                    port_base[peer.index()] + peer_local as u32,
                    link.rate,
                    link.delay,
                    peer_latency,
                );
                let touches_hub = [ni, peer.index()]
                    .iter()
                    .any(|&n| matches!(topo.graph[petgraph::graph::NodeIndex::new(n)].kind, NodeKind::GpuHub));
                port.framing = framing_of(link.kind, touches_hub, &cfg);
                port.device = device[ni];
                port.peer_device = device[peer.index()];
                port.link_fc = LinkFc::of(link.kind, device[ni], device[peer.index()], &cfg);
                ports.push(port);
            }
        }

        let mut seed_rng = RngStreams::new(cfg.seed).stream(rng::stream::ECMP_SEEDS);
        let ecmp_seed = (0..n_nodes).map(|_| rand::Rng::next_u64(&mut seed_rng)).collect();

        let mut nics = Vec::with_capacity(n_hosts);
        for &h in &topo.hosts {
            let base = port_base[h.index()];
            if port_base[h.index() + 1] == base {
                return Err(EngineError::BadConfig(format!(
                    "host {} has no link",
                    topo.graph[h].name
                )));
            }
            nics.push(Nic {
                port: base,
                active: VecDeque::new(),
                wake_at: SimTime::MAX,
            });
        }
        // Endpoint processing, per host: a host attached by a network link is a network
        // adapter (HCA/NIC) and has the configured processing; a GPU (NVLink, PCIe or
        // internal attachment) has none here.
        let host_latency: Vec<HostLatency> = topo
            .hosts
            .iter()
            .map(|h| match node_ports[h.index()].first() {
                Some(&(edge, _)) if network_link(topo.graph[edge].kind) => cfg.host_latency,
                _ => HostLatency::default(),
            })
            .collect();

        let mut flow_state = Vec::with_capacity(flows.len());
        let mut records = Vec::with_capacity(flows.len());
        for (i, f) in flows.iter().enumerate() {
            let line_rate = ports[nics[f.src as usize].port as usize].rate;
            let rate = cfg.sender_rate.unwrap_or(line_rate);
            let cc = match cfg.ib.as_ref().and_then(|ib| ib.cc.as_ref()) {
                Some(ibcc) => AnyCc::IbCc(crate::ib::cc::IbCca::new(ibcc.source.clone(), rate)),
                None => AnyCc::FixedRate(FixedRate { rate }),
            };
            flow_state.push(FlowState {
                unsent_bytes: f.size.get(),
                next_send_at: f.start + host_latency[f.src as usize].tx,
                cc,
            });
            records.push(FlowRecord::new(i as u32, f));
        }

        let spray: Vec<bool> = topo
            .graph
            .node_indices()
            .map(|n| matches!(topo.graph[n].kind, NodeKind::GpuHub | NodeKind::NvSwitch))
            .collect();
        let net_switch: Vec<bool> = topo
            .graph
            .node_indices()
            .map(|n| matches!(topo.graph[n].kind, NodeKind::Switch { .. }))
            .collect();
        let ib = cfg.ib.clone().map(|ib_cfg| {
            let peer_is_host: Vec<bool> = ports.iter().map(|p: &Port| is_host[p.peer_node as usize]).collect();
            let own_is_host: Vec<bool> = ports.iter().map(|p: &Port| is_host[p.node as usize]).collect();
            // Virtual output queues: the crossbars inside servers, and network switches when
            // `switch_voq` asks for them.
            let voq_port: Vec<bool> = ports
                .iter()
                .map(|p: &Port| spray[p.node as usize] || (ib_cfg.switch_voq && net_switch[p.node as usize]))
                .collect();
            Box::new(IbState::new(
                ib_cfg,
                &peer_is_host,
                &own_is_host,
                voq_port,
                &internal_port,
                n_hosts,
                cfg.crossbar.arbitration,
            ))
        });
        let mut ib = ib;
        let mut lazy_in = Vec::new();
        if let Some(ib) = ib.as_deref_mut() {
            for (p, port) in ports.iter().enumerate() {
                if spray[port.node as usize] {
                    ib.disable_hoq_life(p as u32);
                }
                // Credit arrivals taken in when the sender looks: where the sender is a credit
                // device, whose looks (and least-loaded routing's) `credit_link.rs` covers.
                let d = device[port.node as usize];
                if port.link_fc == LinkFc::Credit && matches!(d, Device::CreditSwitch | Device::CreditHost) {
                    lazy_in.push(p);
                }
            }
        }
        for p in lazy_in {
            ports[p].fc_in_lazy = true;
            let r = ports[p].peer_port as usize;
            ports[r].fc_out_lazy = true;
        }
        let ctrl_links = (0..ports.len()).map(|_| CtrlLink::default()).collect();
        let dmodk_div = dmodk_divisors(topo);

        let peer_node_of = ports.iter().map(|p| p.peer_node).collect();
        let host_of_port = ports.iter().map(|p| host_of_node[p.node as usize]).collect();
        let mut fabric = Fabric {
            ib,
            roce: None,
            capture: None,
            part: None,
            dmodk_div,
            buffer: cfg.buffer.clone(),
            flow_control: cfg.flow_control.clone(),
            marking: cfg.marking.clone(),
            cfg,
            port_base,
            is_host,
            device,
            host_of_node,
            ports,
            routing_ahead: false,
            ctrl_links,
            path_cache: Vec::new(),
            candidates: Vec::new(),
            prefetch_min_ports: PREFETCH_MIN_PORTS,
            speed_paths: false,
            routes,
            ecmp_seed,
            nics,
            packets: PacketArena::default(),
            flows,
            flow_state,
            records,
            next_flow: 0,
            n_timed,
            deps: dep_state,
            input_to_flow,
            spray,
            peer_node_of,
            host_of_port,
            internal_port,
            host_latency,
            pkt_latency: LatencyHistogram::new(),
            fct: LatencyHistogram::new(),
            totals: RunTotals::default(),
        };
        for i in 0..fabric.flows.len() {
            if fabric.try_flow_path(i as u32).is_none() {
                let f = &fabric.flows[i];
                return Err(EngineError::Unroutable {
                    flow: i,
                    src: f.src,
                    dst: f.dst,
                });
            }
        }
        if fabric.cfg.roce.is_some() {
            fabric.roce_init()?;
        }
        fabric.init_pfc_receivers();
        fabric.set_routing_ahead();
        Ok(fabric)
    }

    /// Runs the speed paths (the prefetch pipeline and routing ahead, `docs/ARCHITECTURE.md`
    /// "The hot path") when the flows' paths use at least `min_ports` ports instead of
    /// [`PREFETCH_MIN_PORTS`]. They never change a result: this is for the tests that check
    /// so on small fabrics, and for measuring them. Call it before the run.
    pub fn set_prefetch_min_ports(&mut self, min_ports: usize) {
        self.prefetch_min_ports = min_ports;
        self.set_routing_ahead();
    }

    /// Marks the ports whose packets are routed as they are put on the link
    /// ([`Port::routed_ahead`]) and sizes the flows' paths (`path_cache`). Routing ahead
    /// serves the prefetch pipeline: below its size the caches hold the route tables, and
    /// asking for a route's lines early costs more than walking them (k=8 mirror +6 %).
    fn set_routing_ahead(&mut self) {
        self.speed_paths = self.paths_use_at_least(self.prefetch_min_ports);
        let ahead = self.speed_paths;
        let adaptive = self.cfg.route_pick == RoutePick::Adaptive;
        for port in &mut self.ports {
            let node = port.peer_node as usize;
            port.routed_ahead = ahead
                && matches!(
                    self.device[node],
                    Device::RoceSwitch | Device::OqSwitch | Device::CreditSwitch
                )
                && !self.spray[node]
                && !adaptive;
        }
        self.routing_ahead = self.ports.iter().any(|p| p.routed_ahead);
        self.path_cache = if adaptive || self.flows.len() > MAX_PATH_FLOWS {
            Vec::new()
        } else {
            vec![u32::MAX; self.flows.len() * 2 * PATH_HOPS]
        };
    }

    /// Whether the flows' paths use at least `min_ports` ports, counting both directions of
    /// each link on a path (replies come back over it). The walk stops once they do, and is
    /// skipped when the fabric has fewer ports.
    fn paths_use_at_least(&self, min_ports: usize) -> bool {
        if min_ports == 0 {
            return true;
        }
        if self.ports.len() < min_ports {
            return false;
        }
        let mut used = vec![false; self.ports.len()];
        let mut count = 0;
        for f in 0..self.flows.len() as u32 {
            for p in self.try_flow_path(f).unwrap_or_default() {
                for q in [p, self.ports[p as usize].peer_port] {
                    if !std::mem::replace(&mut used[q as usize], true) {
                        count += 1;
                    }
                }
            }
            if count >= min_ports {
                return true;
            }
        }
        false
    }

    /// Credit devices' ingress ports on PFC links (a NIC's network side in a RoCEv2 cluster):
    /// PAUSE thresholds from the link's PFC headroom bound (`headroom_bound_bytes` with the
    /// sending switch's latency as its response time) and the RoCEv2 resume offset.
    fn init_pfc_receivers(&mut self) {
        let (Some(ib), Some(roce)) = (self.ib.as_deref_mut(), self.roce.as_deref()) else {
            return;
        };
        let max_wire = self.cfg.mtu_bytes + self.cfg.header_bytes;
        let unit = ib.cfg.credit_unit_bytes as u64;
        let frame_blocks = ib.cfg.credits(max_wire);
        let resume_blocks = roce.cfg.resume_offset_bytes.div_ceil(unit) as u32;
        for (x, port) in self.ports.iter().enumerate() {
            if port.link_fc != LinkFc::Pfc || self.device[port.node as usize] != Device::CreditSwitch {
                continue;
            }
            let bound = headroom_bound_bytes(port.rate, port.delay, port.peer_latency, max_wire);
            ib.set_pfc_receiver(x as u32, bound.div_ceil(unit) as u32, resume_blocks, frame_blocks);
        }
    }

    /// Number of scheduler origins this fabric uses (see the module docs).
    pub fn n_origins(&self) -> u32 {
        // RoCEv2: one timer per flow, then the rate-sampling origin.
        let flow_timers = if self.roce.is_some() {
            self.flows.len() as u32 + 1
        } else {
            0
        };
        // Ports, their links' data and control pipes, NICs, the workload, port timers.
        4 * self.ports.len() as u32 + self.nics.len() as u32 + 1 + flow_timers
    }

    /// A scheduler sized for this fabric with the first flow arrival scheduled.
    pub fn scheduler<Q: EventQueue<Ev> + Default>(&self) -> Scheduler<Ev, Q> {
        let mut s = Scheduler::new(self.n_origins());
        if self.n_timed > 0 {
            s.schedule(self.flows[0].start, self.workload_origin(), Ev::FlowArrival);
        }
        if let Some(period) = self.roce.as_ref().and_then(|r| r.cfg.rate_sample) {
            s.schedule(SimTime::ZERO + period, self.rate_sample_origin(), Ev::RateSample);
        }
        s
    }

    fn workload_origin(&self) -> Origin {
        Origin(3 * self.ports.len() as u32 + self.nics.len() as u32)
    }
    fn nic_origin(&self, host: u32) -> Origin {
        Origin(3 * self.ports.len() as u32 + host)
    }
    fn pipe_origin(&self, port: u32) -> Origin {
        Origin(self.ports.len() as u32 + 2 * port)
    }
    /// The origin of the arrivals of link-level control frames (PFC) sent by port `port`:
    /// its own, right after its data pipe's, so that a frame and a packet arriving over one
    /// link at the same instant are ordered by origin (the packet first), not by which was
    /// scheduled first: partitions (`partition.rs`) schedule a link's arrivals when they take
    /// them in. Against every other event the order is the data pipe's. Where the far end
    /// takes flow-control packets in lazily (credit links) the data pipe's origin stays:
    /// `Scheduler::precedes_current` orders those by it.
    fn ctrl_origin(&self, port: u32) -> Origin {
        if self.ports[port as usize].fc_out_lazy {
            return self.pipe_origin(port);
        }
        Origin(self.ports.len() as u32 + 2 * port + 1)
    }
    fn timer_origin(&self, port: u32) -> Origin {
        Origin(3 * self.ports.len() as u32 + self.nics.len() as u32 + 1 + port)
    }

    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }
    pub fn ports(&self) -> &[Port] {
        &self.ports
    }
    /// First port id of every node, plus one past the end.
    pub fn port_base(&self) -> &[u32] {
        &self.port_base
    }
    pub fn flows(&self) -> &[FlowSpec] {
        &self.flows
    }
    pub fn flow_records(&self) -> &[FlowRecord] {
        &self.records
    }
    /// The engine flow id of the flow given at input index `i` (see [`Fabric::with_deps`]).
    /// The sending rate congestion control allows flow `f` now (line rate or the fixed
    /// sender rate without congestion control).
    pub fn flow_rate(&self, f: u32) -> sim_core::BitsPerSec {
        crate::models::CongestionControl::rate(&self.flow_state[f as usize].cc)
    }
    /// The state variables of flow `f`'s congestion controller (`CongestionControl::state`).
    pub fn flow_cc_state(&self, f: u32) -> crate::models::cc::CcState {
        crate::models::CongestionControl::state(&self.flow_state[f as usize].cc)
    }
    pub fn flow_of_input(&self, i: usize) -> u32 {
        self.input_to_flow[i]
    }
    pub fn packet_latency(&self) -> &LatencyHistogram {
        &self.pkt_latency
    }
    pub fn fct(&self) -> &LatencyHistogram {
        &self.fct
    }
    pub fn totals(&self) -> &RunTotals {
        &self.totals
    }
    pub fn routes(&self) -> &Routes {
        &self.routes
    }
    /// The routes, back from a fabric that is done with (its tables can be large: a check
    /// that builds a fabric need not copy them).
    pub fn into_routes(self) -> Routes {
        self.routes
    }
    /// Host index of a node, if it is a host.
    pub fn host_of_node(&self, node: u32) -> Option<u32> {
        let h = self.host_of_node[node as usize];
        (h != u32::MAX).then_some(h)
    }

    /// Packets still inside the network (queued or on a wire), counted from the queues and
    /// pipes themselves; conservation says it equals `injected - delivered - dropped`.
    pub fn packets_in_network(&self) -> u64 {
        let data = |id: &u32| self.packets.get(*id).kind == PacketKind::Data;
        let wires: u64 = self
            .ports
            .iter()
            .map(|p| {
                (p.queue.iter().filter(|id| data(id)).count() + p.pipe.iter().filter(|(_, w)| data(&w.id)).count())
                    as u64
            })
            .sum();
        wires
            + self.ib.as_ref().map_or(0, |ib| ib.data_packets_buffered(&self.packets))
            + self.roce.as_ref().map_or(0, |r| r.data_packets_buffered(&self.packets))
    }

    /// The RoCEv2 state (PFC counters, pause tree, ECN, CNPs, drops by cause, deadlock), on a
    /// RoCEv2 fabric (not on the base fabric, whose endpoints run only its transport).
    pub fn roce(&self) -> Option<&RoceState> {
        self.roce.as_deref().filter(|_| !self.cfg.lossy_network)
    }

    /// Starts capturing what the ports `ports` transmit (at most `max_packets` records; call
    /// before the run).
    pub fn enable_capture(&mut self, ports: &[u32], max_packets: usize) {
        self.capture = Some(Box::new(Capture::new(self.ports.len(), ports, max_packets)));
    }

    /// The packet capture, if [`Fabric::enable_capture`] was called.
    pub fn capture(&self) -> Option<&Capture> {
        self.capture.as_deref()
    }

    /// The link-level flow control governing port `p` (an observer: chosen once at build).
    pub fn link_fc(&self, p: u32) -> LinkFc {
        self.ports[p as usize].link_fc
    }

    /// Whether the fabric's links are InfiniBand (else Ethernet or another native link).
    pub fn is_infiniband(&self) -> bool {
        self.ib.is_some()
    }

    /// The endpoints' transport counters (ACK, NACK, go-back-N retransmissions and timeouts,
    /// receiver discards, control drops) wherever endpoints run queue pairs: a RoCEv2 fabric,
    /// and the base fabric with loss recovery.
    pub fn transport(&self) -> Option<&RoceTotals> {
        self.roce.as_deref().map(|r| &r.totals)
    }

    /// The InfiniBand state (counters, credit stalls, congestion tree), on an IB fabric.
    pub fn ib(&self) -> Option<&IbState> {
        self.ib.as_deref()
    }

    // ---- the hot path -------------------------------------------------------------------

    /// Starts serializing packet `id` on port `p` at `now` (the port is idle).
    #[inline]
    fn start_tx<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        let now = s.now();
        let (wire, payload) = {
            let pk = self.packets.get(id);
            (pk.wire_bytes, pk.payload_bytes)
        };
        self.flow_control.on_send(p, wire, now);
        let port = &mut self.ports[p as usize];
        debug_assert!(port.busy_until <= now, "port {p} started a packet while busy");
        let wire = port.framing.wire_bytes(payload, wire);
        if let Some(c) = self.capture.as_deref_mut() {
            c.record(now, p, self.packets.get(id), wire);
        }
        let port = &mut self.ports[p as usize];
        let done = now + sim_core::serialization_time(sim_core::Bytes(wire as u64), port.rate);
        port.busy_until = done;
        port.stats.packets_tx += 1;
        port.stats.bytes_tx += wire as u64;
        let arrive = done + port.delay + port.peer_latency;
        let on_wire = self.route_ahead(p, id);
        let port = &mut self.ports[p as usize];
        let first = port.pipe.push(arrive, on_wire);
        let peer = port.peer_node;
        if !self.runs_node(peer) {
            self.send_across(p, arrive);
        } else if first {
            let o = self.pipe_origin(p);
            s.schedule(arrive, o, Ev::Arrive(p));
        }
        self.totals.link_hops += 1;
    }

    /// Packet `id` is dropped at port `p`: counted there, in its flow and in the totals.
    fn drop_packet(&mut self, p: u32, id: u32) {
        let pkt = *self.packets.get(id);
        let port = &mut self.ports[p as usize];
        port.stats.drops += 1;
        port.stats.drop_bytes += pkt.wire_bytes as u64;
        if pkt.kind != PacketKind::Data {
            // An ACK, NACK or CNP of the transport: counted apart, not as the flow's loss.
            if let Some(r) = self.roce.as_deref_mut() {
                r.totals.control_drops += 1;
            }
            self.packets.free(id);
            return;
        }
        self.records[pkt.flow as usize].packets_dropped += 1;
        self.totals.packets_dropped += 1;
        self.totals.payload_bytes_dropped += pkt.payload_bytes as u64;
        self.packets.free(id);
    }

    /// The head of port `p`'s control pipe arrives at the far end: a link-level frame for the
    /// far end's port `x` that sends back over this link, handled by the link's flow control
    /// (credits or PFC), whatever device owns `x`.
    fn on_ctrl_arrive<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        let x = self.ports[p as usize].peer_port;
        if self.ports[p as usize].fc_out_lazy {
            return self.ib_fc_arrival(s, x);
        }
        let now = s.now();
        let pipe = &mut self.ctrl_links[x as usize].pipe;
        let frame = pipe.pop_due(now);
        if let Some(next) = pipe.head_time() {
            let o = self.ctrl_origin(p);
            s.schedule(next, o, Ev::CtrlArrive(p));
        }
        match frame.kind {
            PacketKind::FlowControl => self.ib_on_fc(s, x, frame.vl, frame.aux),
            PacketKind::Pause => self.roce_on_pause_frame(s, x, p, frame.aux),
            k => unreachable!("a {k:?} packet on a control pipe"),
        }
    }

    /// Port `p` may have something to send now: its device looks.
    fn kick<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        let device = self.ports[p as usize].device;
        device.kick(self, s, p);
    }

    /// Puts packet `id` on port `p` now, in the link's own framing; returns when the port is
    /// free again. `upstream_tail` is when the packet's last byte reaches this node (a
    /// cut-through device cannot finish sending earlier; `SimTime::ZERO` when it is all here).
    /// The packet joins the far device when its head is in (a cut-through device) or all of
    /// it (the others), plus that device's latency. Link-level frames take `transmit_ctrl`.
    #[inline]
    fn transmit<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        p: u32,
        id: u32,
        upstream_tail: SimTime,
    ) -> SimTime {
        let now = s.now();
        let (wire, payload) = {
            let pk = self.packets.get(id);
            debug_assert!(!matches!(pk.kind, PacketKind::FlowControl | PacketKind::Pause));
            (pk.wire_bytes, pk.payload_bytes)
        };
        let wire = self.ports[p as usize].framing.wire_bytes(payload, wire);
        if let Some(c) = self.capture.as_deref_mut() {
            c.record(now, p, self.packets.get(id), wire);
        }
        let done = self.start_on_wire(now, p, wire, upstream_tail);
        let on_wire = self.route_ahead(p, id);
        let port = &mut self.ports[p as usize];
        let tail = done + port.delay;
        let head_in = if port.peer_device.cut_through() { now } else { done };
        // A link is FIFO: nothing overtakes what is already on the wire.
        let (arrive, first) = port.pipe.push_fifo(head_in + port.delay + port.peer_latency, on_wire);
        if first {
            port.head_hint = on_wire;
        }
        self.packets.get_mut(id).tail_at = tail;
        let peer = port.peer_node;
        if !self.runs_node(peer) {
            self.send_across(p, arrive);
        } else if first {
            let o = self.pipe_origin(p);
            s.schedule(arrive, o, Ev::Arrive(p));
        }
        done
    }

    /// Puts link-level control frame `frame` on port `p` now; returns when the port is free
    /// again. It takes the control pipe and is consumed by the far MAC when it is all in.
    fn transmit_ctrl<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, frame: CtrlFrame) -> SimTime {
        let now = s.now();
        let wire = self.ports[p as usize].framing.wire_bytes(0, frame.wire_bytes);
        if let Some(c) = self.capture.as_deref_mut() {
            c.record(now, p, &frame.as_packet(), wire);
        }
        let done = self.start_on_wire(now, p, wire, SimTime::ZERO);
        let port = &self.ports[p as usize];
        let (x, delay, lazy, peer) = (port.peer_port, port.delay, port.fc_out_lazy, port.peer_node);
        let (arrive, first) = self.ctrl_links[x as usize].pipe.push_fifo(done + delay, frame);
        if !self.runs_node(peer) {
            self.send_frame_across(p, x, arrive);
        } else if lazy {
            self.ib_fc_on_its_way(s, x, p, arrive, first);
        } else if first {
            let o = self.ctrl_origin(p);
            s.schedule(arrive, o, Ev::CtrlArrive(p));
        }
        done
    }

    /// Port `p` starts `wire` bytes now, finishing no earlier than `upstream_tail`: busy until
    /// the returned time, counted as a link-hop.
    #[inline(always)]
    fn start_on_wire(&mut self, now: SimTime, p: u32, wire: u32, upstream_tail: SimTime) -> SimTime {
        let port = &mut self.ports[p as usize];
        debug_assert!(port.busy_until <= now, "port {p} started a packet while busy");
        let done = (now + sim_core::serialization_time(sim_core::Bytes(wire as u64), port.rate)).max(upstream_tail);
        port.busy_until = done;
        port.stats.packets_tx += 1;
        port.stats.bytes_tx += wire as u64;
        self.totals.link_hops += 1;
        done
    }

    fn on_arrive<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        let now = s.now();
        let port = &mut self.ports[p as usize];
        let id = port.pipe.pop_due(now).id;
        if let Some(next) = port.pipe.head_time() {
            port.head_hint = *port.pipe.head().expect("a head has a slot");
            let o = self.pipe_origin(p);
            s.schedule(next, o, Ev::Arrive(p));
        }
        let device = self.ports[p as usize].peer_device;
        if self.routing_ahead {
            // Its route on from the switch it reaches, wanted when an egress sends it on
            // (routing it ahead to the next switch from its flow's path): asked for now, it
            // comes in while the device takes the packet in.
            let flow = self.packets.get(id).flow as usize;
            prefetch_at(&self.path_cache, flow * 2 * PATH_HOPS);
        }
        device.arrive(self, s, p, id);
    }

    /// Stage `stage` of [`Model::prefetch`]'s pipeline for `ev`, `stage + 1` events ahead:
    /// 2, the port's three hot lines (and a RoCEv2 switch departure's queue records); 1, an
    /// arrival's pipe head slot (its address is in the port line of stage 2), a departure's
    /// queue head slots; 0, the packets those slots name.
    #[inline(always)]
    fn prefetch_stage(&self, ev: Option<&Ev>, stage: u8) {
        if let Some(&Ev::NicWake(h)) = ev {
            self.ib_prefetch_hca(h, stage);
            return;
        }
        let Some(&(Ev::Arrive(p) | Ev::TxDone(p) | Ev::CtrlArrive(p))) = ev else {
            return;
        };
        let Some(port) = self.ports.get(p as usize) else {
            return;
        };
        // Not `port.device`: that load would wait for the line stage 2 only asks for. The
        // departure prefetch reads the mask of non-empty switch queues, zero at other ports.
        let departure = matches!(ev, Some(Ev::TxDone(_))) && self.roce.is_some();
        match (stage, ev) {
            (2, _) => {
                port.prefetch_hot();
                if matches!(ev, Some(Ev::TxDone(_))) {
                    // An output-queued switch's departure takes the head of this queue.
                    prefetch(&port.queue);
                }
            }
            (1, Some(Ev::Arrive(_))) => {
                if let Some(slot) = port.pipe.head() {
                    prefetch(slot);
                }
                // The packet and where it goes, as the port's hint names them (stage 0 asks
                // again for what the slot names).
                let w = port.head_hint;
                if let Some(pkt) = self.packets.slots_get(w.id) {
                    prefetch(pkt);
                }
                self.prefetch_lane(port, w);
            }
            (1, Some(Ev::CtrlArrive(_))) => {
                // The control link to the port at the far end, whose first frame this is.
                sim_core::prefetch_at(&self.ctrl_links, port.peer_port as usize);
            }
            (0, Some(Ev::CtrlArrive(_))) => {
                if let Some(slot) = self.ctrl_links.get(port.peer_port as usize).and_then(|l| l.pipe.head()) {
                    prefetch(slot);
                }
            }
            (1, Some(Ev::TxDone(_))) => {
                if port.device == Device::OqSwitch
                    && let Some(slot) = port.queue.front()
                {
                    prefetch(slot);
                }
            }
            (0, Some(Ev::TxDone(_))) => {
                if port.device == Device::OqSwitch
                    && let Some(pkt) = port.queue.front().and_then(|&id| self.packets.slots_get(id))
                {
                    prefetch(pkt);
                }
            }
            (0, Some(Ev::Arrive(_))) => {
                if let Some(w) = port.pipe.head() {
                    if let Some(pkt) = self.packets.slots_get(w.id) {
                        prefetch(pkt);
                    }
                    self.prefetch_lane(port, *w);
                }
            }
            _ => {}
        }
        if departure {
            self.roce_prefetch_departure(p, stage);
        }
        if let Some(ev) = ev {
            self.ib_prefetch(ev, p, stage);
        }
    }

    /// Prefetch hint for what the arrival of `w` over `link` touches at the far end, where
    /// it was routed ahead ([`OnWire`]): the egress port's hot lines and, at a RoCEv2 switch,
    /// the lane's queue record and the MMU ingress record it is admitted to.
    #[inline(always)]
    fn prefetch_lane(&self, link: &Port, w: OnWire) {
        let Some((out, prio)) = w.lane() else {
            return;
        };
        if let Some(port) = self.ports.get(out as usize) {
            port.prefetch_hot();
        }
        if let Some(ib) = self.ib.as_deref() {
            ib.prefetch_out_lane(out, prio);
            sim_core::prefetch_at(&self.ctrl_links, out as usize);
        }
        if let (Some(r), Some(&base)) = (self.roce.as_deref(), self.port_base.get(link.peer_node as usize)) {
            r.prefetch_lane(out, prio);
            // No MMU at an output-queued switch: nothing asked for there.
            r.prefetch_admission(link.peer_node, link.peer_port.wrapping_sub(base), prio);
        }
    }

    /// Packet `id`, about to go on port `p`, as its pipe slot: routed at the far end now
    /// where the link allows ([`Port::routed_ahead`]; its `next_port` set), else as it is.
    #[inline(always)]
    fn route_ahead(&mut self, p: u32, id: u32) -> OnWire {
        let port = &self.ports[p as usize];
        if !port.routed_ahead {
            return OnWire::new(id, NO_LANE, 0);
        }
        let node = port.peer_node;
        let egress = self.route_packet(node, id);
        let pk = self.packets.get_mut(id);
        pk.next_port = egress;
        OnWire::new(id, egress, pk.vl)
    }

    /// The egress port switch `node` sends packet `id` on, the packet's next routing step
    /// (on its arrival, or ahead of it, [`Fabric::route_ahead`]): from its flow's path where
    /// the switch routes by a function of the packet alone, otherwise by [`Fabric::route`].
    /// The path's entry is used only if it is a port of `node`: where a switch earlier on the
    /// path chose by load, packets of one flow reach different switches at the same hop.
    #[inline(always)]
    fn route_packet(&mut self, node: u32, id: u32) -> u32 {
        let pk = self.packets.get_mut(id);
        let (flow, dst, hash, hop) = (pk.flow, pk.dst_host, pk.flow_hash, pk.hop);
        let back = pk.kind != PacketKind::Data;
        pk.hop = hop.saturating_add(1);
        let slot = (flow as usize * 2 + back as usize) * PATH_HOPS + hop as usize;
        let cacheable = (hop as usize) < PATH_HOPS && !self.spray[node as usize] && slot < self.path_cache.len();
        if cacheable {
            let out = self.path_cache[slot];
            let (lo, hi) = (self.port_base[node as usize], self.port_base[node as usize + 1]);
            if (lo..hi).contains(&out) {
                return out;
            }
        }
        let out = self.route(node, dst, hash);
        if cacheable {
            self.path_cache[slot] = out;
        }
        out
    }

    /// The egress port switch `node` sends a packet to `dst` on: one of the next hops, chosen
    /// by [`EngineConfig::route_pick`] (ECMP hash with the switch's own seed by default).
    #[inline]
    fn route(&self, node: u32, dst: u32, flow_hash: u64) -> u32 {
        let hops = self.routes.next_hops(node, dst);
        debug_assert!(!hops.is_empty(), "no route from node {node} to host {dst}");
        let base = self.port_base[node as usize];
        if hops.len() == 1 {
            return base + hops[0] as u32;
        }
        let how = if self.spray[node as usize] {
            RoutePick::Adaptive
        } else {
            self.cfg.route_pick
        };
        let pick = match how {
            RoutePick::Ecmp => ecmp_pick(hops.len(), flow_hash, self.ecmp_seed[node as usize]),
            RoutePick::DModK => ((dst as u64 / self.dmodk_div[node as usize]) % hops.len() as u64) as usize,
            RoutePick::Adaptive => {
                let start = ecmp_pick(hops.len(), flow_hash, self.ecmp_seed[node as usize]);
                (0..hops.len())
                    .map(|k| (start + k) % hops.len())
                    .min_by_key(|&j| self.ports[(base + hops[j] as u32) as usize].queued_bytes)
                    .unwrap_or(start)
            }
        };
        base + hops[pick] as u32
    }

    /// [`Fabric::route_packet`] on an InfiniBand fabric, where adaptive routing also weighs
    /// the credits outstanding on packet `id`'s virtual lane.
    fn route_ib<Q: EventQueue<Ev>>(&mut self, s: &Scheduler<Ev, Q>, node: u32, id: u32) -> u32 {
        if self.cfg.route_pick != RoutePick::Adaptive && !self.spray[node as usize] {
            return self.route_packet(node, id);
        }
        let pk = self.packets.get(id);
        let (dst, flow_hash, vl, packet_index) = (pk.dst_host, pk.flow_hash, pk.vl, pk.index);
        let hops = self.routes.next_hops(node, dst);
        let base = self.port_base[node as usize];
        if hops.len() == 1 {
            return base + hops[0] as u32;
        }
        let start = ecmp_pick(hops.len(), flow_hash, self.ecmp_seed[node as usize]);
        if self.interleaves(node, hops) {
            return base + hops[(start + packet_index as usize) % hops.len()] as u32;
        }
        // The load counts credits not yet back: those that have come back are taken in.
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        candidates.extend(hops.iter().map(|&h| base + h as u32));
        for &p in &candidates {
            self.ib_take_fc(s, p);
        }
        let ib = self.ib.as_ref().expect("InfiniBand fabric");
        let n = candidates.len();
        let pick = (0..n)
            .map(|k| (start + k) % n)
            .min_by_key(|&j| ib.adaptive_load(candidates[j], vl))
            .unwrap_or(start);
        let out = candidates[pick];
        self.candidates = candidates;
        out
    }

    /// Switch `node` stripes packets over next hops `hops` (at least one) by packet index:
    /// it sprays with interleaved striping and they lead to different nodes (a GPU hub's
    /// links to several NVSwitch chips), so every path carries its share of links of every
    /// flow whatever the local queues say (NVLink's address interleaving over links).
    /// Parallel links to one node keep least-loaded spraying (balancing them locally is
    /// exact), as do internal attachments (the NVLS endpoint's links to the chips: no
    /// bottleneck, their far ends differ in capacity).
    fn interleaves(&self, node: u32, hops: &[u16]) -> bool {
        if !self.spray[node as usize] || self.cfg.crossbar.striping != Striping::Interleaved {
            return false;
        }
        let base = self.port_base[node as usize];
        let peer = |j: usize| self.peer_node_of[(base + hops[j] as u32) as usize];
        let first = peer(0);
        !self.internal_port[(base + hops[0] as u32) as usize] && (1..hops.len()).any(|j| peer(j) != first)
    }

    /// A packet reaches its destination host: it is in memory after the host's receive
    /// processing (a timestamp, no event: the link and transport have seen it arrive now).
    fn deliver<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, id: u32) {
        let pkt = *self.packets.get(id);
        let now = s.now() + self.host_latency[pkt.dst_host as usize].rx;
        self.packets.free(id);
        self.pkt_latency.record(now.since(pkt.sent_at));
        self.totals.packets_delivered += 1;
        self.totals.payload_bytes_delivered += pkt.payload_bytes as u64;
        let rec = &mut self.records[pkt.flow as usize];
        rec.packets_delivered += 1;
        rec.bytes_delivered += pkt.payload_bytes as u64;
        rec.last_delivery = Some(now);
        if pkt.marked {
            rec.packets_marked += 1;
        }
        if rec.bytes_delivered == rec.size_bytes {
            rec.finish = Some(now);
            self.totals.flows_completed += 1;
            if self.part.is_some() {
                // Its start may be another partition's to know (a dependent flow's).
                self.note_fct(pkt.flow);
            } else {
                self.fct.record(now.since(rec.start));
            }
            self.release_dependents(s, pkt.flow, now);
        }
    }

    /// Flow `f` completed at `now` (at or after the current event): its dependents whose last
    /// dependency it was start after their gap.
    #[inline]
    fn release_dependents<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32, now: SimTime) {
        if self.deps.is_empty() {
            return;
        }
        let o = self.workload_origin();
        for k in self.deps.off[f as usize]..self.deps.off[f as usize + 1] {
            let d = &mut self.deps;
            let j = d.dependents[k as usize] as usize;
            d.pending[j] -= 1;
            if d.pending[j] == 0 {
                let at = now + d.gap[j];
                s.schedule(at, o, Ev::FlowStart(j as u32));
                if self.part.is_some() {
                    self.note_start_scheduled(at);
                }
            }
        }
    }

    /// Starts flow `i` now: registers it with its source NIC (or completes it at once if it
    /// carries no bytes).
    fn start_flow<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, i: u32) {
        let now = s.now();
        let f = &self.flows[i as usize];
        let (src, size) = (f.src, f.size.get());
        let node = self.ports[self.nics[src as usize].port as usize].node;
        if !self.runs_node(node) {
            return; // another partition's source
        }
        self.totals.flows_started += 1;
        if size == 0 {
            self.records[i as usize].finish = Some(now);
            self.totals.flows_completed += 1;
            self.fct.record(sim_core::Duration::ZERO);
            self.release_dependents(s, i, now);
            return;
        }
        self.device[node as usize].flow_started(self, s, src, i);
    }

    /// A dependent flow starts (its dependencies are delivered and its gap has passed).
    fn on_flow_start<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, i: u32) {
        let now = s.now();
        if self.part.is_some() {
            self.note_start_handled(now);
        }
        self.records[i as usize].start = now;
        let src = self.flows[i as usize].src;
        self.flow_state[i as usize].next_send_at = now + self.host_latency[src as usize].tx;
        self.start_flow(s, i);
    }

    /// Starts every flow whose start time is now and schedules the next arrival.
    fn on_flow_arrival<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        while self.next_flow < self.n_timed {
            let f = &self.flows[self.next_flow];
            if f.start > now {
                let o = self.workload_origin();
                s.schedule(f.start, o, Ev::FlowArrival);
                break;
            }
            let i = self.next_flow as u32;
            self.next_flow += 1;
            self.start_flow(s, i);
        }
    }

    /// The egress ports flow `flow` crosses, source NIC first, following the same ECMP
    /// choices as its packets. For validation (e.g. max-min fair shares) and path reports.
    pub fn flow_path(&self, flow: u32) -> Vec<u32> {
        self.try_flow_path(flow)
            .expect("flows are checked to be routable when the fabric is built")
    }

    /// [`Fabric::flow_path`], or `None` when the flow's packets would reach a dead end, the
    /// wrong host, or loop.
    fn try_flow_path(&self, flow: u32) -> Option<Vec<u32>> {
        let f = &self.flows[flow as usize];
        let hash = self.flow_hash_of(flow);
        let mut p = self.nics[f.src as usize].port;
        let mut path = vec![p];
        loop {
            let node = self.ports[p as usize].peer_node;
            if self.is_host[node as usize] {
                return (self.host_of_node[node as usize] == f.dst).then_some(path);
            }
            if self.routes.next_hops(node, f.dst).is_empty() || path.len() > self.ports.len() {
                return None;
            }
            p = self.route(node, f.dst, hash);
            path.push(p);
        }
    }

    fn flow_hash_of(&self, flow: u32) -> u64 {
        let f = &self.flows[flow as usize];
        flow_hash(f.src, f.dst, flow)
    }
}

/// A link of the network between servers (not NVLink, PCIe or a server's internal attachment):
/// a host on one is a network adapter, a NIC entered from one is receiving.
fn network_link(kind: crate::topology::LinkKind) -> bool {
    use crate::topology::LinkKind;
    matches!(kind, LinkKind::Network | LinkKind::Ethernet | LinkKind::InfiniBand)
}

/// The framing of a link of `kind` in a run whose packets are `cfg.mtu_bytes` of payload:
/// NVLink and PCIe links re-frame the packets of a network-sized run (a GPU cluster), and
/// carry the packets of an NVLink or PCIe run (payload at most 256 B) as cut. Inside a
/// cluster an internal attachment carries the server's own transactions, not network frames:
/// NVLink flits for a GPU's attachment to its hub (`touches_hub`), PCIe TLPs otherwise (CPU
/// links), so no hop inside a server depends on the network's header.
fn framing_of(kind: crate::topology::LinkKind, touches_hub: bool, cfg: &EngineConfig) -> port::Framing {
    use crate::topology::LinkKind;
    let native = cfg.mtu_bytes as u64 <= crate::nvlink::MAX_PAYLOAD_BYTES;
    let pcie = || {
        let l = crate::pcie::PcieLink::new(crate::pcie::PcieGen::Gen5, 16).expect("a valid PCIe link");
        port::Framing::Pcie {
            mps_bytes: l.mps_bytes,
            overhead_bytes: l.tlp_overhead_bytes(),
        }
    };
    match kind {
        _ if native => port::Framing::Native,
        LinkKind::NvLink => port::Framing::NvLink,
        LinkKind::Internal if touches_hub => port::Framing::NvLink,
        LinkKind::Pcie | LinkKind::Internal => pcie(),
        // An InfiniBand link in a RoCEv2 run (an InfiniBand island behind a gateway): the
        // payload in IB's local-route headers (LRH, BTH, ICRC, VCRC: 26 B).
        LinkKind::InfiniBand if cfg.roce.is_some() => port::Framing::InfiniBand,
        _ => port::Framing::Native,
    }
}

/// D-mod-k divisors: `W_t` for every node of tier `t` (hosts and tier-0 switches: 1), the
/// product of the up-radices of tiers `0..t`. The up-radix of a tier is the largest number of
/// neighbours of a higher tier any of its switches has.
fn dmodk_divisors(topo: &Topology) -> Vec<u64> {
    let tier = |n: petgraph::graph::NodeIndex| match topo.graph[n].kind {
        NodeKind::Switch { tier } => Some(tier),
        _ => None,
    };
    let mut up_radix = [0u64; 256];
    for n in topo.graph.node_indices() {
        let Some(t) = tier(n) else { continue };
        let ups = topo
            .graph
            .neighbors(n)
            .filter(|&m| tier(m).is_some_and(|u| u > t))
            .count() as u64;
        up_radix[t as usize] = up_radix[t as usize].max(ups);
    }
    topo.graph
        .node_indices()
        .map(|n| match tier(n) {
            None => 1,
            Some(t) => up_radix[..t as usize].iter().map(|&r| r.max(1)).product(),
        })
        .collect()
}

impl Model for Fabric {
    type Event = Ev;

    #[inline]
    fn handle<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, ev: Ev) {
        match ev {
            Ev::Arrive(p) => self.on_arrive(s, p),
            Ev::CtrlArrive(p) => self.on_ctrl_arrive(s, p),
            Ev::TxDone(p) => {
                let device = self.ports[p as usize].device;
                device.tx_done(self, s, p);
            }
            Ev::NicWake(h) => {
                let nic = &mut self.nics[h as usize];
                if nic.wake_at == s.now() {
                    nic.wake_at = SimTime::MAX;
                }
                let node = self.ports[nic.port as usize].node;
                self.device[node as usize].nic_wake(self, s, h);
            }
            Ev::FlowArrival => {
                self.note_shared_event();
                self.on_flow_arrival(s)
            }
            Ev::PortTimer(p) => {
                // A port may carry both disciplines' timers (a NIC: PFC refresh on its
                // network side, HOQLife on its credit side); each fires only at its own time.
                let now = s.now();
                if self.roce.as_ref().is_some_and(|r| r.timer_due(p, now)) {
                    self.roce_on_timer(s, p);
                }
                if self.ib.as_ref().is_some_and(|ib| ib.timer_due(p, now)) {
                    self.ib_on_timer(s, p);
                }
            }
            Ev::FlowTimer(f) => self.roce_on_flow_timer(s, f),
            Ev::FlowStart(f) => self.on_flow_start(s, f),
            Ev::RateSample => self.roce_on_rate_sample(s),
        }
    }

    /// Brings the state of the next events into the cache while this one is handled, as a
    /// software pipeline (at scale the per-port state and the packets are far larger than the
    /// caches and nearly every hop starts with misses, `docs/performance.md`): each upcoming
    /// event gets the stage of its distance (`Fabric::prefetch_stage`), so each stage reads
    /// only what the stage before asked for and no stage waits on a miss. The loads start now
    /// and overlap with this event's work, as prefetch instructions ([`sim_core::prefetch()`]),
    /// which unlike plain loads do not hold the core up when they miss (session 10: 9 % more
    /// link-hops per second on the k=16 RoCEv2 mirror). Measured and dropped: a fourth stage
    /// that routed the packet to prefetch its egress port (session 8), prefetching a credit
    /// switch's departure queues as the RoCEv2 one does (session 10: 3 % slower on the
    /// 256-GPU AllReduce; session 12 found the stages that pay, `ib/prefetch.rs`), and two
    /// events between stages instead of one (session 10: 3 % slower on the k=16 RoCEv2
    /// mirror).
    #[inline]
    fn prefetch(&self, upcoming: [Option<&Ev>; sim_core::PREFETCH_AHEAD]) {
        // Unrolled, so that each call's stage is a constant (a loop cost 87 instructions per
        // link-hop more).
        self.prefetch_stage(upcoming[2], 2);
        self.prefetch_stage(upcoming[1], 1);
        self.prefetch_stage(upcoming[0], 0);
    }

    /// Only where the ports the flows use outgrow the caches ([`PREFETCH_MIN_PORTS`]).
    fn prefetches(&self) -> bool {
        self.speed_paths
    }

    /// All flows completed, or (RoCEv2) a deadlock was detected.
    fn finished(&self) -> bool {
        self.totals.flows_completed as usize == self.flows.len()
            || self.roce.as_ref().is_some_and(|r| r.deadlock.is_some())
    }
}

#[cfg(test)]
mod speed_path_tests {
    use super::*;
    use crate::topology::{LinkInfo, LinkKind, fat_tree};
    use sim_core::{BitsPerSec, Bytes, Duration, Model};

    /// The speed paths run by the ports the flows use, not by the fabric's size: on a k=16
    /// fat-tree (6,144 ports) a shifted permutation of every host uses most of them, eight hosts
    /// sending to their neighbours in one leaf use sixteen; a k=8 fat-tree (768 ports) never
    /// has enough.
    #[test]
    fn the_speed_paths_run_where_the_flows_use_enough_ports() {
        let link = LinkInfo {
            rate: BitsPerSec::from_gbps(100),
            delay: Duration::from_ns(1000),
            kind: LinkKind::Network,
        };
        let fabric = |k: u32, hosts: u32, shift: u32| {
            let topo = fat_tree::build(k, link, link).expect("a fat-tree");
            let flows = (0..hosts)
                .map(|h| FlowSpec {
                    src: h,
                    dst: (h + shift) % hosts,
                    size: Bytes(1_000_000),
                    ..Default::default()
                })
                .collect();
            Fabric::new(&topo, Routes::ecmp(&topo), EngineConfig::default(), flows).expect("valid engine inputs")
        };
        let busy = fabric(16, 1024, 512);
        assert_eq!(busy.ports.len(), 6144);
        assert!(busy.prefetches() && busy.routing_ahead);
        let quiet = fabric(16, 8, 1);
        assert!(!quiet.prefetches() && !quiet.routing_ahead);
        assert!(quiet.ports.iter().all(|p| !p.routed_ahead));
        // The threshold is the count of ports on the paths: just at it, and one above.
        let used = |f: &Fabric| {
            (0..=f.ports.len())
                .rev()
                .find(|&m| f.paths_use_at_least(m))
                .expect("0 always")
        };
        let n = used(&quiet);
        assert!((16..64).contains(&n), "{n} ports used");
        let mut at = fabric(16, 8, 1);
        at.set_prefetch_min_ports(n);
        assert!(at.prefetches() && at.routing_ahead);
        at.set_prefetch_min_ports(n + 1);
        assert!(!at.prefetches() && !at.routing_ahead);
        let small = fabric(8, 128, 64);
        assert!(small.paths_use_at_least(700) && !small.prefetches());
    }
}

#[cfg(test)]
mod path_cache_tests {
    use super::*;
    use crate::ib::IbConfig;
    use crate::topology::{LinkInfo, LinkKind, fat_tree};
    use sim_core::{BitsPerSec, Bytes, Duration, RunLimits, WheelQueue};

    /// Runs a shifted permutation on a k=4 fat-tree for 300 us, with or without the path
    /// cache; returns the flow records, the totals and how many path entries were filled.
    fn run(cfg: EngineConfig, cache: bool) -> (Vec<FlowRecord>, String, usize) {
        let link = LinkInfo {
            rate: BitsPerSec::from_gbps(100),
            delay: Duration::from_ns(500),
            kind: LinkKind::Network,
        };
        let topo = fat_tree::build(4, link, link).expect("a k=4 fat-tree");
        let flows = (0..16u32)
            .map(|h| FlowSpec {
                src: h,
                dst: (h + 5) % 16,
                size: Bytes(2_000_000),
                ..Default::default()
            })
            .collect();
        let mut f = Fabric::new(&topo, Routes::ecmp(&topo), cfg, flows).expect("valid engine inputs");
        if !cache {
            f.path_cache.clear();
        }
        let mut s = f.scheduler::<WheelQueue<_>>();
        let limits = RunLimits {
            end_time: Some(SimTime::ZERO + Duration::from_us(300)),
            ..Default::default()
        };
        sim_core::run(&mut f, &mut s, &limits, |_| std::ops::ControlFlow::Continue(()));
        let filled = f.path_cache.iter().filter(|&&p| p != u32::MAX).count();
        (f.flow_records().to_vec(), format!("{:?}", f.totals()), filled)
    }

    /// A hop that takes its egress from its flow's path goes where walking the route tables
    /// sends it: the same run with the cache and without it ends with the same flow records
    /// and totals, on each switch model that routes (output-queued Ethernet, RoCEv2 with
    /// ACKs going back, InfiniBand with its credit switches), and the paths were used.
    #[test]
    fn a_flow_path_routes_as_the_route_tables_do() {
        let fabrics = [
            ("ethernet", EngineConfig::default()),
            (
                "rocev2",
                EngineConfig {
                    roce: Some(RoceConfig::default()),
                    ..Default::default()
                },
            ),
            (
                "infiniband",
                EngineConfig {
                    ib: Some(IbConfig::default()),
                    ..Default::default()
                },
            ),
        ];
        for (name, cfg) in fabrics {
            let (records, totals, filled) = run(cfg.clone(), true);
            let (records_walked, totals_walked, none) = run(cfg, false);
            assert_eq!(none, 0);
            // 16 flows of up to 5 switches, and on RoCEv2 their ACKs' paths back too.
            assert!(filled >= 16 * 3, "{name}: {filled} path entries filled");
            assert!(
                records.iter().any(|r| r.bytes_delivered > 0),
                "{name}: nothing delivered"
            );
            assert_eq!(records, records_walked, "{name}");
            assert_eq!(totals, totals_walked, "{name}");
        }
    }
}

#[cfg(test)]
mod framing_tests {
    use super::*;
    use crate::ib::IbConfig;
    use crate::topology::cluster::{self, ClusterSpec, Network};
    use crate::topology::hgx::{HgxSpec, PcieServerSpec, ServerSpec};
    use crate::topology::{LinkInfo, LinkKind};
    use sim_core::{BitsPerSec, Duration};

    /// Both ends of every link frame a packet alike (`framing_of` looks at both), in GPU
    /// clusters of HGX and of PCIe-only servers on InfiniBand and on RoCEv2, whose links of
    /// every kind re-frame network packets: an InfiniBand switch's arrival counts a packet's
    /// credit blocks on the sending port.
    #[test]
    fn a_link_frames_alike_both_ways() {
        let link = |kind| LinkInfo {
            rate: BitsPerSec::from_gbps(400),
            delay: Duration::from_ns(500),
            kind,
        };
        let servers = [
            ServerSpec::Hgx(HgxSpec::h100()),
            ServerSpec::PcieOnly(PcieServerSpec::new(crate::pcie::PcieGen::Gen5)),
        ];
        let mut kinds = std::collections::BTreeSet::new();
        for server in servers {
            for (roce, kind) in [(false, LinkKind::InfiniBand), (true, LinkKind::Ethernet)] {
                let spec = ClusterSpec {
                    n_servers: 2,
                    server: server.clone(),
                    network: Network::FatTree { k: 4 },
                    nic_link: link(kind),
                    fabric_link: link(kind),
                    rail_optimised: false,
                };
                let topo = cluster::build(&spec).expect("a cluster");
                let cfg = EngineConfig {
                    mtu_bytes: 4096,
                    ib: (!roce).then(IbConfig::default),
                    roce: roce.then(RoceConfig::default),
                    ..Default::default()
                };
                let f = Fabric::new(&topo, Routes::ecmp(&topo), cfg, Vec::new()).expect("a fabric");
                for port in &f.ports {
                    let peer = &f.ports[port.peer_port as usize];
                    assert_eq!(
                        port.framing, peer.framing,
                        "ports of nodes {} and {}",
                        port.node, peer.node
                    );
                    kinds.insert(format!("{:?}", port.framing));
                }
            }
        }
        assert!(kinds.len() >= 3, "framings met: {kinds:?}");
    }
}
