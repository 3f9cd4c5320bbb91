//! Turns a parsed scenario into what the engine runs: topology, routes, engine configuration,
//! flows and run limits. Every semantic check lives here and reports the offending field.

use crate::diag::{ScenarioError, semantic_error};
use crate::locate::span_of;
use crate::schema::{
    BufferSpec, CcKind, CcPreset, ChannelRings, CollectiveAlgo, CollectiveOp, CreditUpdateSpec, CustomLink, EcnPreset,
    EthernetSpec, FabricKind, InfinibandSpec, LatencySpec, LinkSpec, LossRecovery, MarkPointSpec, NvlinkGenSpec,
    PcieGenSpec, RanksSpec, RoceSpec, RoutingSpec, Scenario, ServerKindSpec, StripingSpec, TopologySpec,
    VlArbEntrySpec, WorkloadSpec,
};
use crate::units::{SizeSpec, TimeSpec};
use fabrics::collectives::flows::{FlowPlan, Instance, PlanLimits};
use fabrics::collectives::{Algorithm, CollectiveKind, CollectiveSpec, DagLimits, training};
use fabrics::engine::FlowDeps;
use fabrics::engine::{
    Crossbar, DEFAULT_CNP_INTERVAL, DEFAULT_PORT_BUFFER_BYTES, DEFAULT_SWITCH_LATENCY, ETHERNET_ROCE_HEADER_BYTES,
    EngineConfig, GbnWindow, MAX_MTU_BYTES, RoceCc, RoceConfig, RoutePick, Striping, XbarArbitration,
};
use fabrics::ib::{self, IbCcConfig, IbCcSource, IbCcSwitch, IbConfig, VlArbConfig, VlArbEntry};
use fabrics::models::credit::{AnyCreditUpdate, Coalesced, PerChange};
use fabrics::models::{AnyBuffer, AnyFlowControl, AnyMarking, PerPortTailDrop};
use fabrics::models::{MarkPoint, RedParams};
use fabrics::nvlink::NvLinkGen;
use fabrics::pcie::{PcieGen, PcieLink};
use fabrics::roce::{RoceFrame, RoceVersion};
use fabrics::routing::stp::{RSTP_MAX_AGE_HOPS, SpanningTree};
use fabrics::routing::{Destinations, Routes};
use fabrics::topology::{LinkInfo, Topology, fat_tree, leaf_spine, sizing};
use fabrics::topology::{cluster, hgx, nvlink_shapes};
use fabrics::traffic::generators::{self, PoissonSpec};
use fabrics::traffic::{FlowSizeCdf, FlowSpec, TrafficLimits};
use sim_core::{Duration, RngStreams, RunLimits, SimTime, rng::stream};
use std::path::{Path, PathBuf};

/// Propagation delay per metre of cable: 5 ns/m (`models.md` §1.8, signal speed ~2/3 c).
pub const DELAY_PER_METRE: Duration = Duration::from_ns(5);
/// Default cable length when a link gives neither `delay` nor `cable_m`.
pub const DEFAULT_CABLE_M: u32 = 1;
/// Largest number of hosts a scenario may build (2^17; a k=64 fat-tree has 65,536).
pub const MAX_HOSTS: u32 = 1 << 17;
/// Largest number of flows a scenario may generate.
pub const MAX_FLOWS: usize = 10_000_000;
/// Highest traffic class (IB service levels and Ethernet priorities fit in 0..=15).
pub const MAX_CLASS: u8 = 15;
/// Go-back-N retransmission timeout of the base fabric's transport: IRN's RTO_high (Mittal et
/// al., "Revisiting Network Support for RDMA", SIGCOMM'18, §4), a few hundred base RTTs of a
/// datacenter fabric, so that it fires only for a lost tail (a NACK recovers the others).
pub const DEFAULT_ETHERNET_RTO: Duration = Duration::from_us(320);
/// Most `[[workload]]` entries one scenario may have (groups are numbered with `u16`).
pub const MAX_WORKLOADS: usize = 4096;
/// Largest InfiniBand VL buffer, in credits (16 MiB).
pub const MAX_IB_BUFFER_BLOCKS: u64 = 1 << 18;
/// Largest event budget (`run.max_events`): 2^39, half the scheduler's sequence numbers
/// (one per event scheduled, `sim_core::queue::SEQ_BITS`), so a run within it never runs
/// out of them (over a week of wall time at today's speed).
pub const MAX_EVENTS_LIMIT: u64 = 1 << (sim_core::queue::SEQ_BITS - 1);
/// Longest simulated time a scenario may ask for (an hour).
pub const MAX_END_TIME: Duration = Duration::from_ms(3_600_000);
/// Longest one-way link propagation delay (1 s, 200,000 km of fibre at 5 ns/m): beyond it the
/// headroom and timer arithmetic on picosecond `u64`s could overflow, and no cable is longer.
pub const MAX_LINK_DELAY: Duration = Duration::from_ms(1000);
/// Largest `[fabric.latency]` value: 100 us. No NIC, switch chip or NVLink/PCIe link takes
/// more than a few microseconds; the bound catches unit slips (`ms` for `us`) and keeps every
/// sum of latencies on a path far from overflowing a picosecond `u64`.
pub const MAX_DEVICE_LATENCY: Duration = Duration::from_us(100);
/// Longest protocol timer a scenario may set (CNP interval, PFC watchdog, rate sampling): the
/// longest run, so that `now + timer` always fits a `SimTime`.
pub const MAX_TIMER: Duration = MAX_END_TIME;
/// Largest static PFC XOFF threshold (1 GiB, more than any switch buffer).
pub const MAX_XOFF_THRESHOLD_BYTES: u64 = 1 << 30;
/// Default `run.memory_limit`: the largest estimated route-table memory (1 GiB: a cluster of
/// 1,024 HGX servers fits, 0.9 GiB; 2,048 need 3.6 GiB and minutes to build).
pub const DEFAULT_MEMORY_LIMIT: u64 = 1 << 30;
/// Largest size of a flow-size CDF file.
pub const MAX_CDF_BYTES: u64 = 1 << 20;
/// CNP interval of the ConnectX firmware preset: 4 µs (models.md §2.5.2, recalled).
pub const FIRMWARE_CNP_INTERVAL: Duration = Duration::from_us(4);
/// Most sizes in one collective sweep.
pub const MAX_SWEEP_SIZES: usize = 64;
/// Most iterations of one collective at one size.
pub const MAX_ITERATIONS: u32 = 1000;
/// Largest collective buffer (16 GiB).
pub const MAX_COLLECTIVE_BYTES: u64 = 16 << 30;
/// Most servers in a cluster.
pub const MAX_SERVERS: u32 = 4096;
/// Most chunks and channels of a collective.
pub const MAX_CHUNKS: u32 = 4096;
pub const MAX_CHANNELS: u32 = 64;

/// A scenario file read and parsed, with its text kept for error messages.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The path as the user gave it, for messages.
    pub file: String,
    /// Directory that relative paths in the scenario are resolved against.
    pub dir: PathBuf,
    pub text: String,
    pub scenario: Scenario,
}

/// Reads and parses a scenario file (syntax, types, unknown keys), without semantic checks.
/// A sweep file (one with a `[sweep]` table) is refused: its points are scenarios, it is not
/// one (`crate::sweep`).
pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    let text = crate::diag::read_scenario_file(path)?;
    let file = path.display().to_string();
    crate::sweep::refuse_sweep(&file, &text)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    load_str(file, dir, text)
}

/// Parses scenario `text` (named `file` in messages; relative paths resolved against `dir`),
/// without semantic checks: what [`load`] does after reading the file.
pub fn load_str(file: String, dir: PathBuf, text: String) -> Result<Loaded, ScenarioError> {
    let scenario: Scenario = crate::diag::parse_toml(&file, &text)?;
    Ok(Loaded {
        file,
        dir,
        text,
        scenario,
    })
}

/// Everything a run needs.
pub struct Built {
    pub topology: Topology,
    pub routes: Routes,
    pub engine: EngineConfig,
    /// Flows in input order; `deps` says which start on others (collectives).
    pub flows: Vec<FlowSpec>,
    pub deps: FlowDeps,
    /// The collective instances (with their `[[workload]]` index), for the report.
    pub collectives: Vec<(usize, Instance)>,
    /// The training-step workloads, for the report.
    pub training: Vec<TrainingRun>,
    pub limits: RunLimits,
}

/// Flows, their dependencies, collective instances and training runs.
type BuiltFlows = (Vec<FlowSpec>, FlowDeps, Vec<(usize, Instance)>, Vec<TrainingRun>);

/// A training-step workload's flows, for the report.
#[derive(Clone, Debug)]
pub struct TrainingRun {
    /// Its `[[workload]]` index.
    pub workload: usize,
    pub step: training::TrainingStep,
    /// Per step; `buckets` index [`TrainingRun::buckets`].
    pub steps: Vec<training::StepFlows>,
    /// The bucket AllReduces of every step, in order.
    pub buckets: Vec<Instance>,
}

/// What the GPU topologies tell the workloads: how many hosts are GPUs and how they group.
#[derive(Clone, Copy, Debug)]
struct GpuLayout {
    n_gpus: u32,
    gpus_per_server: Option<u32>,
    /// Host index of the NVLS endpoint, when one was added.
    nvls_host: Option<u32>,
}

impl Loaded {
    /// An error about `field`, located in the scenario text.
    pub fn err(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        semantic_error(&self.file, &self.text, span_of(&self.text, field), field, message)
    }

    /// Applies a seed override (from the command line) to the scenario.
    pub fn with_seed(mut self, seed: Option<u64>) -> Self {
        if let Some(s) = seed {
            self.scenario.scenario.seed = s;
        }
        self
    }

    /// The scenario with the fabric defaults that depend on its kind written out (header,
    /// switch latency, Ethernet buffer), as stored in `scenario.resolved.toml`.
    pub fn resolved(&self, built: &Built) -> Scenario {
        let mut sc = self.scenario.clone();
        sc.resolve_classes();
        let f = &mut sc.fabric;
        f.header
            .get_or_insert(SizeSpec::new(sim_core::Bytes(built.engine.header_bytes as u64)));
        f.switch_latency
            .get_or_insert(TimeSpec::new(built.engine.switch_latency));
        f.latency = Some(self.resolved_latency(built));
        if f.kind == FabricKind::Ethernet && f.buffer.is_none() {
            let AnyBuffer::PerPortTailDrop(b) = &built.engine.buffer;
            f.buffer = Some(BufferSpec::PerPortTailDrop {
                size: SizeSpec::new(sim_core::Bytes(b.buffer_bytes)),
            });
        }
        if f.kind == FabricKind::Rocev2
            && let Some(c) = &built.engine.roce
        {
            f.roce = Some(resolved_roce(f.roce.take().unwrap_or_default(), c));
        }
        if f.kind == FabricKind::Ethernet {
            let e = f.ethernet.get_or_insert_with(EthernetSpec::default);
            match &built.engine.roce {
                Some(c) => {
                    e.loss_recovery = Some(LossRecovery::GoBackN);
                    e.go_back_n_timeout = c.go_back_n.map(TimeSpec::new);
                    e.go_back_n_window.get_or_insert_with(|| "bdp".into());
                }
                None => e.loss_recovery = Some(LossRecovery::None),
            }
        }
        if f.kind == FabricKind::Infiniband
            && let Some(ib) = f.infiniband.as_mut()
            && ib.cc.is_some()
            && let Some(cc) = &built.engine.ib.as_ref().and_then(|c| c.cc.as_ref())
        {
            ib.cc = Some(resolved_ib_cc(cc));
        }
        sc
    }

    /// Every effective `[fabric.latency]` value, for `scenario.resolved.toml`.
    fn resolved_latency(&self, built: &Built) -> LatencySpec {
        let d = &built.engine.device_latency;
        let (nvlink, pcie) = self.link_latency();
        let t = |d: Duration| Some(TimeSpec::new(d));
        let (nvlink_gen, pcie_gen) = self.built_link_gens();
        LatencySpec {
            nic_tx: t(d.nic_tx),
            nic_rx: t(d.nic_rx),
            gpu_hub: t(d.gpu_hub),
            nvswitch: t(d.nvswitch),
            pcie_switch: t(d.pcie_switch),
            root_complex: t(d.root_complex),
            // An InfiniBand run's switches are `switch_latency` (`ib_switch` is refused there).
            ib_switch: (self.scenario.fabric.kind != FabricKind::Infiniband).then(|| TimeSpec::new(d.ib_switch)),
            nvlink_link: nvlink_gen.map(|g| TimeSpec::new(nvlink.unwrap_or(g.link_delay()))),
            pcie_link: pcie_gen.map(|g| TimeSpec::new(pcie.unwrap_or(g.link_delay()))),
        }
    }

    /// Checks the scenario's meaning and builds everything the engine needs.
    pub fn build(&self) -> Result<Built, ScenarioError> {
        self.build_until(&|| false)
            .map(|b| b.expect("a build that is never asked to stop finishes"))
    }

    /// [`Loaded::build`] that gives up (`Ok(None)`) when `stop` says so: asked between the
    /// phases (topology, routes, flows) and during the route tables, the long part on a large
    /// fabric, so that a wall-clock budget or an interrupt also bounds the build (issue 15).
    pub fn build_until(&self, stop: &dyn Fn() -> bool) -> Result<Option<Built>, ScenarioError> {
        let sc = &self.scenario;
        let (mut topology, gpus_per_server) = self.build_topology()?;
        if stop() {
            return Ok(None);
        }
        let mut layout = GpuLayout {
            n_gpus: topology.n_hosts() as u32,
            gpus_per_server,
            nvls_host: None,
        };
        let nvls = sc.workload.iter().position(|w| {
            matches!(
                w,
                WorkloadSpec::Collective {
                    algorithm: Some(CollectiveAlgo::Nvls),
                    ..
                } | WorkloadSpec::TrainingStep {
                    algorithm: Some(CollectiveAlgo::Nvls),
                    ..
                }
            )
        });
        if let Some(i) = nvls {
            if matches!(sc.topology, TopologySpec::Cluster { .. }) {
                return Err(self.err(
                    &format!("workload[{i}].algorithm"),
                    "NVLS spans one NVSwitch domain; a cluster needs `hierarchical` or `ring`",
                ));
            }
            let h = nvlink_shapes::add_nvls_endpoint(&mut topology)
                .map_err(|e| self.err(&format!("workload[{i}].algorithm"), e.to_string()))?;
            layout.nvls_host = Some(h);
        }
        // The flows first: the route tables lead only to the hosts they use (`Destinations`).
        let (flows, deps, collectives, training) = self.build_flows(topology.n_hosts() as u32, layout)?;
        let endpoints: Vec<u32> = flows.iter().flat_map(|f| [f.src, f.dst]).collect();
        let dests = Destinations::Hosts(&endpoints);
        self.check_route_memory(&topology, dests)?;
        if stop() {
            return Ok(None);
        }
        let routes = match (self.spanning_tree(&topology)?, self.scenario.fabric.routing) {
            (Some(tree), _) => Routes::try_tree_until(&topology, &tree, dests, stop),
            (None, RoutingSpec::Updown) => Routes::try_updown_until(&topology, dests, stop),
            (None, _) => Routes::try_ecmp_until(&topology, dests, stop),
        }
        .map_err(|e| self.err("topology", e.to_string()))?;
        let Some(mut routes) = routes else {
            return Ok(None);
        };
        if let TopologySpec::Cluster { gpu_nic, .. } = &sc.topology {
            match gpu_nic.as_deref() {
                None | Some("own") => keep_gpu_traffic_on_own_nic(&topology, &mut routes),
                Some("any") => {}
                Some(other) => {
                    return Err(self.err(
                        "topology.gpu_nic",
                        format!("expected \"own\" or \"any\", got {other:?}"),
                    ));
                }
            }
        }
        let engine = self.build_engine()?;
        if let Some(roce) = &engine.roce {
            self.check_roce_buffers(&topology, roce, &engine)?;
            self.check_roce_timing(&topology, roce, &engine)?;
        }
        if stop() {
            return Ok(None);
        }
        let end = sc.run.end_time.get();
        if end > MAX_END_TIME || end == Duration::ZERO {
            return Err(self.err(
                "run.end_time",
                format!("expected a time in (0, {MAX_END_TIME}], got {end}"),
            ));
        }
        self.check_output()?;
        if sc.run.max_events == 0 || sc.run.max_events > MAX_EVENTS_LIMIT {
            return Err(self.err(
                "run.max_events",
                format!(
                    "expected at least 1 event and at most {MAX_EVENTS_LIMIT}, got {}",
                    sc.run.max_events
                ),
            ));
        }
        if sc.run.wall_clock_s == 0 {
            return Err(self.err("run.wall_clock_s", "expected at least 1 second"));
        }
        let limits = RunLimits {
            end_time: Some(SimTime::ZERO + end),
            max_events: Some(sc.run.max_events),
            wall_clock: Some(std::time::Duration::from_secs(sc.run.wall_clock_s)),
            progress_every_events: 1 << 20,
        };
        Ok(Some(Built {
            topology,
            routes,
            engine,
            flows,
            deps,
            collectives,
            training,
            limits,
        }))
    }

    /// `[fabric.roce] version`: 2 (the default) or 1.
    pub fn roce_version(&self) -> Result<RoceVersion, ScenarioError> {
        match self.scenario.fabric.roce.as_ref().and_then(|r| r.version) {
            None | Some(2) => Ok(RoceVersion::V2),
            Some(1) => Ok(RoceVersion::V1),
            Some(v) => Err(self.err(
                "fabric.roce.version",
                format!("expected 1 (RoCEv1) or 2 (RoCEv2), got {v}"),
            )),
        }
    }

    /// The spanning tree a RoCEv1 scenario forwards on (`None` for any other scenario), after
    /// checking that the scenario fits one layer-2 domain (`docs/models/rocev1.md`): no
    /// layer-3 routing choice, no multi-homed GPU servers, a tree RSTP can converge.
    pub fn spanning_tree(&self, topo: &Topology) -> Result<Option<SpanningTree>, ScenarioError> {
        let f = &self.scenario.fabric;
        if f.kind != FabricKind::Rocev2 || self.roce_version()? != RoceVersion::V1 {
            return Ok(None);
        }
        if f.routing != RoutingSpec::Ecmp {
            let got = match f.routing {
                RoutingSpec::Dmodk => "dmodk",
                RoutingSpec::Adaptive => "adaptive",
                _ => "updown",
            };
            return Err(self.err(
                "fabric.routing",
                format!(
                    "RoCEv1 is bridged, not routed: switches forward by MAC over one spanning tree, so there is no path to choose; expected routing = \"ecmp\" (the default) or no `routing`, got \"{got}\""
                ),
            ));
        }
        if matches!(self.scenario.topology, TopologySpec::Cluster { .. }) {
            return Err(self.err(
                "topology.kind",
                "a GPU cluster cannot use RoCEv1: each server reaches the network through several NICs (one IP subnet per rail) and traffic between them is routed at layer 3; expected a single layer-2 domain (fat_tree, leaf_spine, sized or custom), or [fabric.roce] version = 2",
            ));
        }
        let tree = SpanningTree::compute(topo);
        let depth = tree.max_depth();
        if depth > RSTP_MAX_AGE_HOPS {
            return Err(self.err(
                "topology",
                format!(
                    "the spanning tree is {depth} bridges deep: expected at most {RSTP_MAX_AGE_HOPS} (RSTP's default Max Age), beyond which one layer-2 domain does not converge"
                ),
            ));
        }
        Ok(Some(tree))
    }

    fn link(&self, field: &str, l: &LinkSpec) -> Result<LinkInfo, ScenarioError> {
        let delay = match (l.delay, l.cable_m) {
            (Some(_), Some(_)) => {
                return Err(self.err(
                    &format!("{field}.cable_m"),
                    "give either `delay` or `cable_m`, not both",
                ));
            }
            (Some(d), None) => d.get(),
            (None, Some(m)) => Duration(DELAY_PER_METRE.ps() * m as u64),
            (None, None) => Duration(DELAY_PER_METRE.ps() * DEFAULT_CABLE_M as u64),
        };
        if delay > MAX_LINK_DELAY {
            let key = if l.delay.is_some() { "delay" } else { "cable_m" };
            return Err(self.err(
                &format!("{field}.{key}"),
                format!("expected a one-way delay of at most {MAX_LINK_DELAY} (200,000 km of cable), got {delay}"),
            ));
        }
        let kind = match (self.scenario.fabric.kind, &self.scenario.topology) {
            (FabricKind::Infiniband, _) => fabrics::topology::LinkKind::InfiniBand,
            (_, TopologySpec::Cluster { .. }) => fabrics::topology::LinkKind::Ethernet,
            _ => fabrics::topology::LinkKind::Network,
        };
        Ok(LinkInfo {
            rate: l.rate.get(),
            delay,
            kind,
        })
    }

    /// The topology and, for GPU clusters, the GPUs per server.
    fn build_topology(&self) -> Result<(Topology, Option<u32>), ScenarioError> {
        if let Some(t) = self.build_gpu_topology()? {
            return Ok(t);
        }
        let topo = match &self.scenario.topology {
            TopologySpec::FatTree {
                k,
                host_link,
                fabric_link,
            } => {
                if (*k as u64).pow(3) / 4 > MAX_HOSTS as u64 {
                    return Err(self.err("topology.k", format!("k={k} gives more than {MAX_HOSTS} hosts")));
                }
                let (h, f) = (
                    self.link("topology.host_link", host_link)?,
                    self.link("topology.fabric_link", fabric_link)?,
                );
                fat_tree::build(*k, h, f).map_err(|e| self.err("topology.k", e.to_string()))?
            }
            TopologySpec::LeafSpine {
                leaves,
                hosts_per_leaf,
                spines,
                oversubscription,
                host_link,
                fabric_link,
            } => {
                if *leaves as u64 * *hosts_per_leaf as u64 > MAX_HOSTS as u64 {
                    return Err(self.err("topology.leaves", format!("more than {MAX_HOSTS} hosts")));
                }
                let (h, f) = (
                    self.link("topology.host_link", host_link)?,
                    self.link("topology.fabric_link", fabric_link)?,
                );
                match (spines, oversubscription) {
                    (Some(n), None) => {
                        let spec = leaf_spine::LeafSpineSpec {
                            n_leaves: *leaves,
                            hosts_per_leaf: *hosts_per_leaf,
                            n_spines: *n,
                            links_per_spine: 1,
                            host_link: h,
                            fabric_link: f,
                        };
                        leaf_spine::build(&spec).map_err(|e| self.err("topology.spines", e.to_string()))?
                    }
                    (None, Some(ratio)) => {
                        let (num, den) = parse_ratio(ratio).ok_or_else(|| {
                            self.err(
                                "topology.oversubscription",
                                format!("expected a ratio like \"2:1\" or \"3:2\", got \"{ratio}\""),
                            )
                        })?;
                        leaf_spine::with_oversubscription(*leaves, *hosts_per_leaf, num, den, h, f)
                            .map_err(|e| self.err("topology.oversubscription", e.to_string()))?
                    }
                    _ => return Err(self.err("topology", "give exactly one of `spines` or `oversubscription`")),
                }
            }
            TopologySpec::Sized {
                hosts,
                radix,
                host_link,
                fabric_link,
            } => {
                if *hosts > MAX_HOSTS {
                    return Err(self.err("topology.hosts", format!("at most {MAX_HOSTS} hosts")));
                }
                let (h, f) = (
                    self.link("topology.host_link", host_link)?,
                    self.link("topology.fabric_link", fabric_link)?,
                );
                sizing::for_hosts(*hosts, *radix, h, f).map_err(|e| self.err("topology.hosts", e.to_string()))?
            }
            TopologySpec::Custom {
                hosts,
                switches,
                devices,
                links,
            } => self.build_custom(*hosts, *switches, devices, links)?,
            _ => unreachable!("GPU topologies are built by build_gpu_topology"),
        };
        if matches!(self.scenario.fabric.kind, FabricKind::Nvlink | FabricKind::Pcie) {
            return Err(self.err(
                "fabric.kind",
                "`nvlink` and `pcie` fabrics model links inside a GPU server: use a GPU topology (hgx_h100, nvlink_mesh, pcie_server, ...)",
            ));
        }
        Ok((topo, None))
    }

    /// The GPU topologies (`None` for the network ones), with the fabric kinds they allow.
    fn build_gpu_topology(&self) -> Result<Option<(Topology, Option<u32>)>, ScenarioError> {
        let kind = self.scenario.fabric.kind;
        let need = |want: FabricKind, what: &str| -> Result<(), ScenarioError> {
            if kind != want {
                return Err(self.err(
                    "fabric.kind",
                    format!(
                        "a {what} needs [fabric] kind = \"{}\"",
                        if want == FabricKind::Nvlink { "nvlink" } else { "pcie" }
                    ),
                ));
            }
            Ok(())
        };
        let terr = |field: &str, e: fabrics::topology::TopologyError| self.err(field, e.to_string());
        let (nvlink_delay, pcie_delay) = self.link_latency();
        let d = |g: NvLinkGen| nvlink_delay.unwrap_or(g.link_delay());
        let hgx_spec = |mut spec: hgx::HgxSpec| {
            spec.nvlink_delay = nvlink_delay.unwrap_or(spec.nvlink_delay);
            spec.pcie_delay = pcie_delay.unwrap_or(spec.pcie_delay);
            spec
        };
        let pcie_spec = |mut spec: hgx::PcieServerSpec| {
            spec.pcie_delay = pcie_delay.unwrap_or(spec.pcie_delay);
            spec
        };
        let t = match &self.scenario.topology {
            TopologySpec::HgxH100 {} => {
                need(FabricKind::Nvlink, "HGX server")?;
                hgx::hgx(&hgx_spec(hgx::HgxSpec::h100())).map_err(|e| terr("topology", e))?
            }
            TopologySpec::HgxA100 {} => {
                need(FabricKind::Nvlink, "HGX server")?;
                hgx::hgx(&hgx_spec(hgx::HgxSpec::a100())).map_err(|e| terr("topology", e))?
            }
            TopologySpec::Nvl72 {} => {
                need(FabricKind::Nvlink, "NVL72 rack")?;
                nvlink_shapes::nvl72(d(NvLinkGen::V5)).map_err(|e| terr("topology", e))?
            }
            TopologySpec::NvlinkMesh {
                gpus,
                generation,
                links_per_pair,
            } => {
                need(FabricKind::Nvlink, "NVLink mesh")?;
                let g = nvlink_gen(*generation);
                let lpp = links_per_pair.unwrap_or_else(|| nvlink_shapes::mesh_links_per_pair(*gpus, g));
                nvlink_shapes::full_mesh(*gpus, g, lpp, d(g)).map_err(|e| terr("topology.gpus", e))?
            }
            TopologySpec::NvlinkRing {
                gpus,
                generation,
                links_per_neighbour,
            } => {
                need(FabricKind::Nvlink, "NVLink ring")?;
                let g = nvlink_gen(*generation);
                let lpn = links_per_neighbour.unwrap_or(g.preset().links_per_gpu / 2);
                nvlink_shapes::ring(*gpus, g, lpn, d(g)).map_err(|e| terr("topology.gpus", e))?
            }
            TopologySpec::PcieServer { generation, gpus } => {
                need(FabricKind::Pcie, "PCIe-only server")?;
                let mut spec = pcie_spec(hgx::PcieServerSpec::new(pcie_gen(*generation)));
                if let Some(g) = gpus {
                    if !(2..=64).contains(g) {
                        return Err(self.err("topology.gpus", format!("expected 2..=64 GPUs, got {g}")));
                    }
                    spec.n_gpus = *g;
                }
                hgx::pcie_server(&spec).map_err(|e| terr("topology", e))?
            }
            TopologySpec::Cluster {
                servers,
                server,
                k,
                nic_link,
                fabric_link,
                rail_optimised,
                ..
            } => {
                if !matches!(kind, FabricKind::Infiniband | FabricKind::Ethernet | FabricKind::Rocev2) {
                    return Err(self.err(
                        "fabric.kind",
                        "a cluster's network is `infiniband`, `rocev2` or `ethernet` (the servers' NVLink and PCIe links run on it)",
                    ));
                }
                if !(1..=MAX_SERVERS).contains(servers) {
                    return Err(self.err("topology.servers", format!("expected 1..={MAX_SERVERS} servers")));
                }
                let server = match server {
                    ServerKindSpec::HgxH100 => hgx::ServerSpec::Hgx(hgx_spec(hgx::HgxSpec::h100())),
                    ServerKindSpec::HgxA100 => hgx::ServerSpec::Hgx(hgx_spec(hgx::HgxSpec::a100())),
                    ServerKindSpec::PcieGen4 => {
                        hgx::ServerSpec::PcieOnly(pcie_spec(hgx::PcieServerSpec::new(PcieGen::Gen4)))
                    }
                    ServerKindSpec::PcieGen5 => {
                        hgx::ServerSpec::PcieOnly(pcie_spec(hgx::PcieServerSpec::new(PcieGen::Gen5)))
                    }
                };
                if server.n_gpus() as u64 * *servers as u64 > MAX_HOSTS as u64 {
                    return Err(self.err("topology.servers", format!("more than {MAX_HOSTS} GPUs")));
                }
                let gpus = server.n_gpus();
                let spec = cluster::ClusterSpec {
                    n_servers: *servers,
                    server,
                    network: cluster::Network::FatTree { k: *k },
                    nic_link: self.link("topology.nic_link", nic_link)?,
                    fabric_link: self.link("topology.fabric_link", fabric_link)?,
                    rail_optimised: *rail_optimised,
                };
                let t = cluster::build(&spec).map_err(|e| terr("topology.k", e))?;
                return Ok(Some((t, Some(gpus))));
            }
            _ => return Ok(None),
        };
        Ok(Some((t, None)))
    }

    /// The PCIe link of a PCIe-only server topology (its framing sets the packet format).
    fn pcie_link(&self) -> Option<PcieLink> {
        match &self.scenario.topology {
            TopologySpec::PcieServer { generation, .. } => PcieLink::new(pcie_gen(*generation), 16).ok(),
            _ => None,
        }
    }

    fn build_custom(
        &self,
        hosts: u32,
        switches: u32,
        devices: &[String],
        links: &[CustomLink],
    ) -> Result<Topology, ScenarioError> {
        if !(1..=MAX_HOSTS).contains(&hosts) {
            return Err(self.err("topology.hosts", format!("expected 1..={MAX_HOSTS} hosts")));
        }
        if switches > MAX_HOSTS {
            return Err(self.err("topology.switches", format!("expected at most {MAX_HOSTS} switches")));
        }
        let mut t = Topology::new(format!(
            "custom ({hosts} hosts, {switches} switches, {} links)",
            links.len()
        ));
        let hs: Vec<_> = (0..hosts).map(|i| t.add_host(format!("h{i}"), None)).collect();
        let ss: Vec<_> = (0..switches).map(|i| t.add_switch(format!("s{i}"), 0, None)).collect();
        if devices.len() > MAX_HOSTS as usize {
            return Err(self.err("topology.devices", format!("expected at most {MAX_HOSTS} devices")));
        }
        let mut ds = Vec::with_capacity(devices.len());
        for (i, d) in devices.iter().enumerate() {
            use fabrics::topology::{NodeInfo, NodeKind};
            let kind = match d.as_str() {
                "gpu_hub" => NodeKind::GpuHub,
                "nvswitch" => NodeKind::NvSwitch,
                "pcie_switch" => NodeKind::PcieSwitch,
                "root_complex" => NodeKind::RootComplex,
                "nic" => NodeKind::Nic,
                _ => {
                    return Err(self.err(
                        &format!("topology.devices[{i}]"),
                        format!(
                            "expected \"gpu_hub\", \"nvswitch\", \"pcie_switch\", \"root_complex\" or \"nic\", got {:?}",
                            short(d)
                        ),
                    ));
                }
            };
            ds.push(t.graph.add_node(NodeInfo {
                kind,
                name: format!("d{i}"),
                pod: None,
            }));
        }
        let n_devices = ds.len();
        let mut host_links = vec![0u32; hosts as usize];
        for (i, l) in links.iter().enumerate() {
            let field = format!("topology.links[{i}]");
            let end = |name: &str, which: &str| {
                let f = format!("{field}.{which}");
                let bad = || {
                    self.err(
                        &f,
                        if n_devices == 0 {
                            format!(
                                "expected \"h<i>\" (host, i < {hosts}) or \"s<i>\" (switch, i < {switches}), got \"{name}\""
                            )
                        } else {
                            format!(
                                "expected \"h<i>\" (host, i < {hosts}), \"s<i>\" (switch, i < {switches}) or \"d<i>\" (device, i < {n_devices}), got \"{name}\""
                            )
                        },
                    )
                };
                let mut chars = name.chars();
                let kind = chars.next().map(String::from).unwrap_or_default();
                let digits = chars.as_str();
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                let idx: u32 = digits.parse().map_err(|_| bad())?;
                match kind.as_str() {
                    "h" if idx < hosts => Ok(hs[idx as usize]),
                    "s" if idx < switches => Ok(ss[idx as usize]),
                    "d" if (idx as usize) < n_devices => Ok(ds[idx as usize]),
                    _ => Err(bad()),
                }
            };
            let (a, b) = (end(&l.a, "a")?, end(&l.b, "b")?);
            if a == b {
                return Err(self.err(&format!("{field}.b"), "a link must join two different nodes"));
            }
            for n in [a, b] {
                if let Some(h) = t.hosts.iter().position(|&x| x == n) {
                    host_links[h] += 1;
                    if host_links[h] > 1 {
                        return Err(self.err(
                            &field,
                            format!("host h{h} has more than one link (hosts have one NIC port)"),
                        ));
                    }
                }
            }
            let spec = LinkSpec {
                rate: l.rate,
                delay: l.delay,
                cable_m: l.cable_m,
            };
            let mut info = self.link(&field, &spec)?;
            if let Some(k) = &l.kind {
                use fabrics::topology::LinkKind;
                info.kind = match k.as_str() {
                    "network" => info.kind,
                    "ethernet" => LinkKind::Ethernet,
                    "infiniband" => LinkKind::InfiniBand,
                    "nvlink" => LinkKind::NvLink,
                    "pcie" => LinkKind::Pcie,
                    "internal" => LinkKind::Internal,
                    _ => {
                        return Err(self.err(
                            &format!("{field}.kind"),
                            format!(
                                "expected \"network\", \"ethernet\", \"infiniband\", \"nvlink\", \"pcie\" or \"internal\", got {:?}",
                                short(k)
                            ),
                        ));
                    }
                };
                // A network link of another discipline needs that discipline's model: PFC
                // switches for Ethernet next to InfiniBand, a credit layer for InfiniBand.
                let fabric = self.scenario.fabric.kind;
                let refused = match info.kind {
                    LinkKind::Ethernet => (fabric == FabricKind::Infiniband)
                        .then_some("an ethernet link in an infiniband run: use [fabric] kind = \"rocev2\" to join InfiniBand and Ethernet (a switch with both is their gateway)"),
                    LinkKind::InfiniBand => (fabric == FabricKind::Ethernet).then_some(
                        "an infiniband link in an ethernet run: use [fabric] kind = \"infiniband\", or \"rocev2\" to join InfiniBand and Ethernet (a switch with both is their gateway)",
                    ),
                    _ => None,
                };
                if let Some(why) = refused {
                    return Err(self.err(&format!("{field}.kind"), why));
                }
            }
            t.add_link(a, b, info);
        }
        if let Some(h) = host_links.iter().position(|&n| n == 0) {
            return Err(self.err("topology.links", format!("host h{h} has no link")));
        }
        t.validate().map_err(|e| self.err("topology", e.to_string()))?;
        Ok(t)
    }

    fn build_engine(&self) -> Result<EngineConfig, ScenarioError> {
        let f = &self.scenario.fabric;
        if matches!(f.kind, FabricKind::Nvlink | FabricKind::Pcie) {
            return self.build_gpu_engine();
        }
        let ib_kind = f.kind == FabricKind::Infiniband;
        let mtu = f.mtu.get().get();
        if mtu == 0 || mtu > MAX_MTU_BYTES as u64 {
            return Err(self.err("fabric.mtu", format!("expected 1B..={MAX_MTU_BYTES}B, got {mtu}B")));
        }
        if ib_kind && !ib::link::MTUS_BYTES.contains(&(mtu as u32)) {
            return Err(self.err(
                "fabric.mtu",
                format!("an InfiniBand MTU is one of 256B, 512B, 1KiB, 2KiB, 4KiB; got {mtu}B"),
            ));
        }
        if !ib_kind && f.infiniband.is_some() {
            return Err(self.err("fabric.infiniband", "[fabric.infiniband] needs kind = \"infiniband\""));
        }
        let roce_kind = f.kind == FabricKind::Rocev2;
        if !roce_kind && f.roce.is_some() {
            return Err(self.err("fabric.roce", "[fabric.roce] needs kind = \"rocev2\""));
        }
        if roce_kind && f.buffer.is_some() {
            return Err(self.err(
                "fabric.buffer",
                "RoCEv2 switches have a shared buffer: set [fabric.roce] buffer instead",
            ));
        }
        let grh = f.infiniband.as_ref().is_some_and(|i| i.grh);
        let header = match f.header {
            Some(h) => h.get().get(),
            None if ib_kind => ib::link::header_bytes(grh) as u64,
            None if roce_kind => RoceFrame::data(self.roce_version()?).header_bytes() as u64,
            None => ETHERNET_ROCE_HEADER_BYTES as u64,
        };
        if header > 1024 {
            return Err(self.err(
                "fabric.header",
                format!("expected at most 1024B of header, got {header}B"),
            ));
        }
        let switch_latency = match f.switch_latency {
            Some(l) => l.get(),
            None if ib_kind => ib::DEFAULT_IB_SWITCH_LATENCY,
            None => DEFAULT_SWITCH_LATENCY,
        };
        if switch_latency > Duration::from_ms(1) {
            return Err(self.err(
                "fabric.switch_latency",
                format!("expected at most 1ms, got {switch_latency}"),
            ));
        }
        let (device_latency, host_latency) = self.latencies()?;
        let buffer = match &f.buffer {
            Some(_) if ib_kind => {
                return Err(self.err(
                    "fabric.buffer",
                    "InfiniBand switches have per-VL input buffers: set [fabric.infiniband] vl_buffer instead",
                ));
            }
            None => AnyBuffer::PerPortTailDrop(PerPortTailDrop {
                buffer_bytes: DEFAULT_PORT_BUFFER_BYTES,
            }),
            Some(BufferSpec::PerPortTailDrop { size }) => {
                let b = size.get().get();
                if b < mtu + header {
                    return Err(self.err(
                        "fabric.buffer.size",
                        format!(
                            "a port buffer must hold at least one packet ({}B), got {b}B",
                            mtu + header
                        ),
                    ));
                }
                AnyBuffer::PerPortTailDrop(PerPortTailDrop { buffer_bytes: b })
            }
        };
        let route_pick = match f.routing {
            RoutingSpec::Ecmp | RoutingSpec::Updown => RoutePick::Ecmp,
            RoutingSpec::Dmodk => RoutePick::DModK,
            RoutingSpec::Adaptive => RoutePick::Adaptive,
        };
        let ethernet_kind = f.kind == FabricKind::Ethernet;
        let ib_links = matches!(&self.scenario.topology, TopologySpec::Custom { links, .. }
            if links.iter().any(|l| l.kind.as_deref() == Some("infiniband")));
        if roce_kind && ib_links && mtu > ib::link::MTUS_BYTES[ib::link::MTUS_BYTES.len() - 1] as u64 {
            return Err(self.err(
                "fabric.mtu",
                format!(
                    "the topology has infiniband links, whose MTU is at most 4096B: expected at most 4096B, got {mtu}B"
                ),
            ));
        }
        let ib = if ib_kind {
            Some(self.build_ib(f.infiniband.as_ref(), (mtu + header) as u32)?)
        } else if (roce_kind || ethernet_kind)
            && (matches!(self.scenario.topology, TopologySpec::Cluster { .. })
                || ib_links
                || matches!(&self.scenario.topology, TopologySpec::Custom { devices, .. } if !devices.is_empty()))
        {
            // The servers of a RoCEv2 or Ethernet cluster keep their credit-based NVLink/PCIe
            // links and cut-through devices, and a custom topology's InfiniBand switches their
            // credits; only the Ethernet network runs PFC, or nothing (`fabrics::engine::Device`).
            Some(ib::IbConfig::server_layer())
        } else {
            None
        };
        if !ethernet_kind && f.ethernet.is_some() {
            return Err(self.err("fabric.ethernet", "[fabric.ethernet] needs kind = \"ethernet\""));
        }
        let roce = if roce_kind {
            Some(self.build_roce(f.roce.as_ref(), (mtu + header) as u32)?)
        } else if ethernet_kind {
            self.ethernet_transport((mtu + header) as u32)?
        } else {
            None
        };
        Ok(EngineConfig {
            mtu_bytes: mtu as u32,
            header_bytes: header as u32,
            switch_latency,
            sender_rate: f.sender_rate.map(|r| r.get()),
            buffer,
            flow_control: AnyFlowControl::None,
            marking: AnyMarking::None,
            seed: self.scenario.scenario.seed,
            route_pick,
            lossy_network: ethernet_kind && (ib.is_some() || roce.is_some()),
            ib,
            roce,
            device_latency,
            host_latency,
            crossbar: self.crossbar()?,
        })
    }

    /// Refuses, before anything is allocated for them, route tables larger than
    /// `run.memory_limit` (issue 14/15: `validate` of 4,096 HGX servers tried to allocate 15 GB
    /// and aborted). The tables hold one 4-B group id per (forwarding node, leaf switch that
    /// `dests` reach) (`fabrics::routing::Routes`), and building them takes one BFS per leaf.
    fn check_route_memory(&self, topo: &Topology, dests: Destinations) -> Result<(), ScenarioError> {
        let limit = self
            .scenario
            .run
            .memory_limit
            .map_or(DEFAULT_MEMORY_LIMIT, |s| s.get().get());
        let rows = (topo.n_nodes() - topo.n_hosts()) as u64;
        let leaves = dests.n_leaves(topo) as u64;
        let bytes = rows.saturating_mul(leaves).saturating_mul(4);
        if bytes <= limit {
            return Ok(());
        }
        let field = if self.scenario.run.memory_limit.is_some() {
            "run.memory_limit"
        } else {
            "topology"
        };
        Err(self.err(
            field,
            format!(
                "the route tables of this fabric would take about {} ({rows} forwarding nodes x {leaves} leaf switches the flows reach \
                 x 4 B), more than run.memory_limit = {}: use a smaller topology or raise run.memory_limit",
                format_args!("{:.1}GiB", bytes as f64 / (1u64 << 30) as f64),
                crate::units::SizeSpec::new(sim_core::Bytes(limit)),
            ),
        ))
    }

    /// A go-back-N retransmission timeout at `{table}.go_back_n_timeout`, range-checked.
    fn go_back_n_timeout(&self, t: Option<TimeSpec>, table: &str) -> Result<Option<Duration>, ScenarioError> {
        match t {
            Some(t) if t.get() == Duration::ZERO || t.get() > Duration::from_ms(1000) => {
                Err(self.err(&format!("{table}.go_back_n_timeout"), "expected a timeout in (0, 1s]"))
            }
            t => Ok(t.map(|t| t.get())),
        }
    }

    /// A go-back-N send window (`"bdp"`, `"unlimited"` or a size) at `{table}.go_back_n_window`.
    fn go_back_n_window(&self, w: &str, table: &str) -> Result<GbnWindow, ScenarioError> {
        Ok(match w.trim() {
            "bdp" => GbnWindow::Bdp,
            "unlimited" => GbnWindow::Unlimited,
            other => match other.parse::<crate::units::SizeSpec>() {
                Ok(b) if b.get().get() > 0 => GbnWindow::Bytes(b.get().get()),
                _ => {
                    return Err(self.err(
                        &format!("{table}.go_back_n_window"),
                        format!("expected \"bdp\", \"unlimited\" or a size > 0 such as \"64KiB\", got {other:?}"),
                    ));
                }
            },
        })
    }

    /// The base fabric's transport (`[fabric.ethernet]`): RoCEv2 queue pairs with every
    /// priority lossy, no congestion control, ACK per packet and go-back-N, or `None` with
    /// `loss_recovery = "none"` (`docs/models/ethernet-base.md`).
    fn ethernet_transport(&self, max_wire: u32) -> Result<Option<RoceConfig>, ScenarioError> {
        let default_spec = EthernetSpec::default();
        let spec = self.scenario.fabric.ethernet.as_ref().unwrap_or(&default_spec);
        if spec.loss_recovery == Some(LossRecovery::None) {
            let set = [
                ("go_back_n_timeout", spec.go_back_n_timeout.is_some()),
                ("go_back_n_window", spec.go_back_n_window.is_some()),
            ];
            if let Some((key, _)) = set.iter().find(|(_, set)| *set) {
                return Err(self.err(
                    &format!("fabric.ethernet.{key}"),
                    "go-back-N is off (loss_recovery = \"none\"): remove this key or set loss_recovery = \"go_back_n\"",
                ));
            }
            return Ok(None);
        }
        let timeout = self.go_back_n_timeout(spec.go_back_n_timeout, "fabric.ethernet")?;
        let gbn_window = match &spec.go_back_n_window {
            Some(w) => self.go_back_n_window(w, "fabric.ethernet")?,
            None => GbnWindow::Bdp,
        };
        let c = RoceConfig {
            lossless_mask: 0,
            lossy_mask: u8::MAX,
            strict_mask: 0,
            dwrr_quantum_bytes: [max_wire; 8],
            go_back_n: Some(timeout.unwrap_or(DEFAULT_ETHERNET_RTO)),
            gbn_window,
            deadlock_detection: false,
            ..RoceConfig::default()
        };
        c.validate(max_wire).map_err(|m| self.err("fabric.ethernet", m))?;
        Ok(Some(c))
    }

    /// `[fabric.roce]` into the engine's [`RoceConfig`], every value range-checked.
    fn build_roce(&self, spec: Option<&RoceSpec>, max_wire: u32) -> Result<RoceConfig, ScenarioError> {
        let default_spec = RoceSpec::default();
        let spec = spec.unwrap_or(&default_spec);
        let at = |k: &str| format!("fabric.roce.{k}");
        let mut c = RoceConfig {
            dwrr_quantum_bytes: [max_wire; 8],
            frame: RoceFrame::data(self.roce_version()?),
            ..RoceConfig::default()
        };
        let mask = |field: &str, v: &Option<Vec<u8>>, default: u8| -> Result<u8, ScenarioError> {
            let Some(list) = v else { return Ok(default) };
            let mut m = 0u8;
            for &p in list {
                if p > 7 {
                    return Err(self.err(&at(field), format!("expected priorities 0..=7, got {p}")));
                }
                m |= 1 << p;
            }
            Ok(m)
        };
        c.lossless_mask = mask("lossless", &spec.lossless, c.lossless_mask)?;
        c.lossy_mask = mask("lossy", &spec.lossy, c.lossy_mask)?;
        c.strict_mask = mask("strict", &spec.strict, c.strict_mask)?;
        if c.lossless_mask & c.lossy_mask != 0 {
            return Err(self.err(&at("lossy"), "a priority cannot be both lossless and lossy"));
        }
        if let Some(p) = spec.control_priority {
            if p > 7 {
                return Err(self.err(&at("control_priority"), format!("expected 0..=7, got {p}")));
            }
            c.control_priority = p;
        }
        c.buffer_bytes = spec.buffer.map(|b| b.get().get());
        if let Some(b) = spec.reserve {
            c.reserve_bytes = b.get().get();
        }
        c.headroom_bytes = spec.headroom.map(|b| b.get().get());
        if let Some(b) = spec.resume_offset {
            c.resume_offset_bytes = b.get().get();
        }
        if let Some(a) = spec.alpha_shift {
            if !(-8..=16).contains(&a) {
                return Err(self.err(&at("alpha_shift"), format!("expected -8..=16, got {a}")));
            }
            c.alpha_shift = a;
        }
        if let Some(t) = spec.xoff_threshold {
            if spec.alpha_shift.is_some() {
                return Err(self.err(
                    &at("xoff_threshold"),
                    "give either a static xoff_threshold or the dynamic threshold's alpha_shift, not both",
                ));
            }
            let b = t.get().get();
            if b < max_wire as u64 || b > MAX_XOFF_THRESHOLD_BYTES {
                return Err(self.err(
                    &at("xoff_threshold"),
                    format!(
                        "expected a size in [{}, {}] (at least one {max_wire} B frame), got {t}",
                        SizeSpec::from_bytes(max_wire as u64),
                        SizeSpec::from_bytes(MAX_XOFF_THRESHOLD_BYTES)
                    ),
                ));
            }
            c.xoff_threshold_bytes = Some(b);
        }
        if let Some(q) = spec.pause_quanta {
            if q == 0 {
                return Err(self.err(&at("pause_quanta"), "expected 1..=65535 (0 is RESUME)"));
            }
            c.pause_quanta = q;
        }
        if let Some(t) = spec.pfc_refresh {
            if t.get() == Duration::ZERO {
                return Err(self.err(&at("pfc_refresh"), "expected a period > 0"));
            }
            c.pfc_refresh = Some(t.get());
        }
        if let Some(kind) = &spec.pause {
            use fabrics::models::PauseKind;
            c.pause = match kind.as_str() {
                "pfc" => PauseKind::Priority,
                "global" => PauseKind::Global,
                _ => {
                    return Err(self.err(
                        &at("pause"),
                        format!("expected \"pfc\" (802.1Qbb) or \"global\" (802.3x), got {kind:?}"),
                    ));
                }
            };
        }
        c.acks = spec.acks;
        c.go_back_n = self.go_back_n_timeout(spec.go_back_n_timeout, "fabric.roce")?;
        if let Some(d) = spec.deadlock_detection {
            c.deadlock_detection = d;
        }
        if let Some(w) = &spec.go_back_n_window {
            c.gbn_window = self.go_back_n_window(w, "fabric.roce")?;
        }
        if let Some(t) = spec.rate_sample {
            if t.get() == Duration::ZERO {
                return Err(self.err(&at("rate_sample"), "expected a period > 0"));
            }
            c.rate_sample = Some(t.get());
        }
        if let Some(n) = spec.rate_sample_max_rows {
            if n == 0 || n > 100_000_000 {
                return Err(self.err(&at("rate_sample_max_rows"), format!("expected 1..=100000000, got {n}")));
            }
            c.rate_sample_max_rows = n;
        }
        if let Some(t) = spec.pfc_watchdog {
            if t.get() == Duration::ZERO || t.get() > MAX_TIMER {
                return Err(self.err(
                    &at("pfc_watchdog"),
                    format!("expected a window in (0, {MAX_TIMER}], got {}", t.get()),
                ));
            }
            c.pfc_watchdog = Some(t.get());
        }
        let rate = self.min_host_rate()?;
        if let Some(e) = &spec.ecn {
            let mut r = match e.preset.unwrap_or(EcnPreset::DcqcnPaper) {
                EcnPreset::DcqcnPaper => RedParams::dcqcn_paper(),
                EcnPreset::HpccSim => RedParams::hpcc_sim(rate),
                EcnPreset::Onyx => RedParams::onyx(),
            };
            if let Some(k) = e.kmin {
                r.kmin_bytes = k.get().get();
            }
            if let Some(k) = e.kmax {
                r.kmax_bytes = k.get().get();
            }
            if let Some(p) = e.pmax {
                if !(0.0..=1.0).contains(&p) {
                    return Err(self.err(
                        &at("ecn.pmax"),
                        format!("expected 0..=1, got {}", crate::wording::float_text(p)),
                    ));
                }
                r.pmax_ppm = (p * 1e6).round() as u32;
            }
            if let Some(pt) = e.point {
                r.point = match pt {
                    MarkPointSpec::Enqueue => MarkPoint::Enqueue,
                    MarkPointSpec::Dequeue => MarkPoint::Dequeue,
                };
            }
            r.check().map_err(|m| self.err(&at("ecn"), m))?;
            c.ecn = Some(r);
        }
        let mut cnp_default = DEFAULT_CNP_INTERVAL;
        let mut cnp = (spec.cnp_interval, "cnp_interval");
        if let Some(cc) = &spec.cc {
            c.cc = match cc.kind {
                CcKind::Dcqcn => {
                    let d = cc;
                    if d.preset == Some(CcPreset::Firmware) {
                        cnp_default = FIRMWARE_CNP_INTERVAL;
                    }
                    if let Some(t) = d.cnp_interval {
                        if spec.cnp_interval.is_some() {
                            return Err(self.err(
                                &at("cc.cnp_interval"),
                                "give cnp_interval in [fabric.roce] or in [fabric.roce.cc], not both",
                            ));
                        }
                        cnp = (Some(t), "cc.cnp_interval");
                    }
                    RoceCc::Dcqcn(crate::cc_params::dcqcn_params(self, d, rate)?)
                }
                CcKind::Timely => RoceCc::Timely(crate::cc_params::timely_params(self, cc, rate)?),
                CcKind::Hpcc => RoceCc::Hpcc(crate::cc_params::hpcc_params(self, cc, rate)?),
            };
        }
        c.cnp_interval = match cnp.0 {
            Some(t) if t.get() > MAX_TIMER => {
                return Err(self.err(
                    &at(cnp.1),
                    format!("expected an interval in [0, {MAX_TIMER}], got {}", t.get()),
                ));
            }
            Some(t) => t.get(),
            None => cnp_default,
        };
        c.validate(max_wire).map_err(|m| self.err("fabric.roce", m))?;
        let active = c.lossless_mask | c.lossy_mask;
        for (i, w) in self.scenario.workload.iter().enumerate() {
            let class = self.scenario.class_of(w);
            if class > 7 || active & (1 << class) == 0 {
                return Err(self.err(
                    &format!("workload[{i}].class"),
                    format!(
                        "on a RoCEv2 fabric a class is a priority listed in [fabric.roce] lossless or lossy; got {class}"
                    ),
                ));
            }
        }
        Ok(c)
    }

    /// Refuses, at the key that sets it, a RoCEv2 switch buffer too small for its reserve and
    /// headroom: the check the engine makes when it builds each switch's MMU, with the same
    /// headroom bound ([`fabrics::engine::headroom_bound_bytes`] of the switch's worst port).
    fn check_roce_buffers(&self, topo: &Topology, c: &RoceConfig, engine: &EngineConfig) -> Result<(), ScenarioError> {
        let max_wire = engine.mtu_bytes + engine.header_bytes;
        for n in topo.graph.node_indices() {
            let ports = topo.ports(n);
            if topo.is_host(n) || ports.is_empty() {
                continue;
            }
            let bound = ports
                .iter()
                .map(|&(e, _)| {
                    let l = &topo.graph[e];
                    fabrics::engine::headroom_bound_bytes(l.rate, l.delay, engine.switch_latency, max_wire)
                })
                .max()
                .unwrap_or(0);
            let headroom = if c.lossless_mask == 0 {
                0
            } else {
                c.headroom_bytes.unwrap_or(bound)
            };
            let sb = fabrics::models::SharedBufferConfig {
                total_bytes: c
                    .buffer_bytes
                    .unwrap_or(DEFAULT_PORT_BUFFER_BYTES.saturating_mul(ports.len() as u64)),
                reserve_bytes: c.reserve_bytes,
                headroom_bytes: headroom,
                resume_offset_bytes: c.resume_offset_bytes,
                lossless_mask: c.lossless_mask,
                lossy_mask: c.lossy_mask,
                port_alpha_shift: vec![c.alpha_shift; ports.len()],
                xoff_threshold_bytes: c.xoff_threshold_bytes,
            };
            if sb.check().is_ok() {
                continue;
            }
            let roce = self.scenario.fabric.roce.as_ref();
            let given = |f: fn(&RoceSpec) -> bool| roce.is_some_and(f);
            let field = if given(|r| r.buffer.is_some()) {
                "fabric.roce.buffer"
            } else if given(|r| r.headroom.is_some()) {
                "fabric.roce.headroom"
            } else if given(|r| r.reserve.is_some()) {
                "fabric.roce.reserve"
            } else {
                "fabric.roce"
            };
            let (reserve, head) = (sb.total_reserve_bytes(), sb.total_headroom_bytes());
            return Err(self.err(
                field,
                format!(
                    "switch {} ({} ports) needs a buffer of at least {} B: reserve {reserve} B + headroom {head} B \
                     (per port and priority; the headroom bound of its links is {bound} B); the buffer is {} B",
                    topo.graph[n].name,
                    ports.len(),
                    reserve.saturating_add(head),
                    sb.total_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Refuses PFC and sampling periods the engine cannot honour, at the key that sets them, with
    /// the valid range for this fabric's links (issue 14). A PAUSE holds its receiver for
    /// `pause_quanta` x 512 bit times (802.1Qbb); the sender refreshes it every `pfc_refresh`
    /// (default half the pause time), and a refresh can wait behind one maximum frame already
    /// on the wire. So the pause stays continuous, and the headroom bound holds, only when
    /// `refresh + max frame + PFC frame <= pause time` on every PFC link: the pause time is
    /// shortest on the fastest link, so that link bounds `pfc_refresh` from above and, with the
    /// default refresh, `pause_quanta` from below (a bound in bit times, the same at any rate).
    /// A refresh shorter than one maximum frame on the slowest link, or a rate sample shorter
    /// than one on the fastest, only multiplies events (a 1 ps period never ends).
    fn check_roce_timing(&self, topo: &Topology, c: &RoceConfig, engine: &EngineConfig) -> Result<(), ScenarioError> {
        use fabrics::models::pfc::{PAUSE_QUANTUM_BITS, PFC_FRAME_WIRE_BYTES, pause_duration};
        use fabrics::topology::LinkKind;
        use sim_core::{Bytes, serialization_time};
        let rates: Vec<sim_core::BitsPerSec> = topo
            .graph
            .edge_indices()
            .map(|e| topo.graph[e])
            .filter(|l| matches!(l.kind, LinkKind::Network | LinkKind::Ethernet))
            .map(|l| l.rate)
            .collect();
        let (Some(&slow), Some(&fast)) = (rates.iter().min(), rates.iter().max()) else {
            return Ok(());
        };
        let max_wire = (engine.mtu_bytes + engine.header_bytes) as u64;
        let at = |k: &str| format!("fabric.roce.{k}");
        let frame = |rate| crate::units::TimeSpec::new(serialization_time(Bytes(max_wire), rate));
        let ts = crate::units::TimeSpec::new;
        if c.lossless_mask != 0 {
            // refresh + max frame + PFC frame <= pause, with refresh = pause / 2 by default.
            let slack_bits = (max_wire + PFC_FRAME_WIRE_BYTES) * 8;
            let min_quanta = (2 * slack_bits).div_ceil(PAUSE_QUANTUM_BITS);
            let slack = ts(serialization_time(Bytes(max_wire + PFC_FRAME_WIRE_BYTES), fast));
            let pause = ts(pause_duration(c.pause_quanta, fast));
            match c.pfc_refresh {
                None if (c.pause_quanta as u64) < min_quanta => {
                    return Err(self.err(
                        &at("pause_quanta"),
                        format!(
                            "expected {min_quanta}..=65535: a PAUSE must outlast its refresh (half the pause time) \
                             plus one {max_wire} B frame and one PFC frame, or the sender resumes between refreshes \
                             and overruns the headroom; got {}",
                            c.pause_quanta
                        ),
                    ));
                }
                None => {}
                Some(r) => {
                    let r = ts(r);
                    let lo = frame(slow);
                    if pause.get() <= slack.get() || pause.get() - slack.get() < lo.get() {
                        return Err(self.err(
                            &at("pause_quanta"),
                            format!(
                                "a PAUSE of {} quanta lasts {pause} at {fast}, too short to refresh: it must \
                                 outlast one {max_wire} B frame time ({lo} at {slow}) plus {slack}; raise \
                                 pause_quanta or remove pfc_refresh",
                                c.pause_quanta
                            ),
                        ));
                    }
                    let hi = ts(pause.get() - slack.get());
                    if r < lo || r > hi {
                        return Err(self.err(
                            &at("pfc_refresh"),
                            format!(
                                "expected a period in [{lo}, {hi}]: at least one {max_wire} B frame at {slow}, and \
                                 short enough that the PAUSE ({} quanta = {pause} at {fast}) outlasts the refresh \
                                 plus one frame and one PFC frame; got {r}",
                                c.pause_quanta
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(p) = c.rate_sample {
            let (p, lo) = (ts(p), frame(fast));
            if p.get() < lo.get() || p.get() > MAX_TIMER {
                return Err(self.err(
                    &at("rate_sample"),
                    format!(
                        "expected a period in [{lo}, {MAX_TIMER}]: at least one {max_wire} B frame at {fast} \
                         (no rate changes faster); got {p}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `kind = "nvlink"` / `"pcie"`: the link layer fixes the packet format and credits.
    fn build_gpu_engine(&self) -> Result<EngineConfig, ScenarioError> {
        let f = &self.scenario.fabric;
        if f.mtu.get().get() != fabrics::engine::DEFAULT_MTU_BYTES as u64 || f.header.is_some() {
            return Err(self.err(
                "fabric.mtu",
                "NVLink and PCIe fabrics take their packet format from the link layer (256-B NVLink packets + 16-B header flit; MPS + TLP overhead): remove `mtu` and `header`",
            ));
        }
        if f.infiniband.is_some() || f.buffer.is_some() {
            return Err(self.err(
                "fabric",
                "[fabric.infiniband] and [fabric.buffer] do not apply to NVLink/PCIe fabrics",
            ));
        }
        let mut cfg = match f.kind {
            FabricKind::Pcie => {
                let link = self
                    .pcie_link()
                    .ok_or_else(|| self.err("fabric.kind", "a pcie fabric needs a pcie_server topology"))?;
                EngineConfig::pcie(&link)
            }
            _ => EngineConfig::nvlink(),
        };
        (cfg.device_latency, cfg.host_latency) = self.latencies()?;
        if let Some(l) = f.switch_latency {
            if l.get() > Duration::from_ms(1) {
                return Err(self.err(
                    "fabric.switch_latency",
                    format!("expected at most 1ms, got {}", l.get()),
                ));
            }
            let (key, given) = match f.kind {
                FabricKind::Pcie => ("pcie_switch", &mut cfg.device_latency.pcie_switch),
                _ => ("nvswitch", &mut cfg.device_latency.nvswitch),
            };
            let lat = f.latency.as_ref();
            if lat.is_some_and(|t| {
                if key == "pcie_switch" {
                    t.pcie_switch.is_some()
                } else {
                    t.nvswitch.is_some()
                }
            }) {
                return Err(self.err(
                    &format!("fabric.latency.{key}"),
                    format!(
                        "`fabric.switch_latency` already sets the {key} latency of this fabric: give one of the two"
                    ),
                ));
            }
            *given = l.get();
        }
        cfg.sender_rate = f.sender_rate.map(|r| r.get());
        cfg.seed = self.scenario.scenario.seed;
        cfg.route_pick = match f.routing {
            RoutingSpec::Ecmp | RoutingSpec::Updown => RoutePick::Ecmp,
            RoutingSpec::Dmodk => RoutePick::DModK,
            RoutingSpec::Adaptive => RoutePick::Adaptive,
        };
        cfg.crossbar = self.crossbar()?;
        Ok(cfg)
    }

    /// `[fabric.latency]` over the defaults: the devices' latencies and the network adapters'
    /// own processing, each range-checked at its key. Defaults: the PCIe switch of the
    /// servers' PCIe generation ([`PcieGen::switch_latency`]), NIC/HCA processing by the
    /// network's kind ([`fabrics::engine::IB_HCA_LATENCY`] on InfiniBand, NVLink and PCIe
    /// fabrics, [`fabrics::engine::ETHERNET_NIC_LATENCY`] on Ethernet and RoCEv2).
    fn latencies(&self) -> Result<(fabrics::engine::DeviceLatency, fabrics::engine::HostLatency), ScenarioError> {
        use fabrics::engine::{DeviceLatency, ETHERNET_NIC_LATENCY, IB_HCA_LATENCY};
        let kind = self.scenario.fabric.kind;
        let nic = match kind {
            FabricKind::Ethernet | FabricKind::Rocev2 => ETHERNET_NIC_LATENCY,
            _ => IB_HCA_LATENCY,
        };
        let mut d = DeviceLatency {
            nic_tx: nic.tx,
            nic_rx: nic.rx,
            ..DeviceLatency::default()
        };
        if let Some(g) = self.server_pcie_gen() {
            d.pcie_switch = g.switch_latency();
        }
        let spec = self.scenario.fabric.latency.clone().unwrap_or_default();
        if kind == FabricKind::Infiniband && spec.ib_switch.is_some() {
            return Err(self.err(
                "fabric.latency.ib_switch",
                "the switches of an InfiniBand run take `fabric.switch_latency`; `ib_switch` is for InfiniBand switches in a rocev2 run",
            ));
        }
        for (key, value, slot) in [
            ("nic_tx", spec.nic_tx, &mut d.nic_tx),
            ("nic_rx", spec.nic_rx, &mut d.nic_rx),
            ("gpu_hub", spec.gpu_hub, &mut d.gpu_hub),
            ("nvswitch", spec.nvswitch, &mut d.nvswitch),
            ("pcie_switch", spec.pcie_switch, &mut d.pcie_switch),
            ("root_complex", spec.root_complex, &mut d.root_complex),
            ("ib_switch", spec.ib_switch, &mut d.ib_switch),
        ] {
            if let Some(v) = value {
                *slot = self.device_latency_at(key, v)?;
            }
        }
        let (nvlink, pcie) = self.built_link_gens();
        for (key, value, built) in [
            ("nvlink_link", spec.nvlink_link, nvlink.is_some()),
            ("pcie_link", spec.pcie_link, pcie.is_some()),
        ] {
            if let Some(v) = value {
                if !built {
                    return Err(self.err(
                        &format!("fabric.latency.{key}"),
                        format!(
                            "this topology builds no {} links (a custom topology gives each link its own `delay`)",
                            if key == "nvlink_link" { "NVLink" } else { "PCIe" }
                        ),
                    ));
                }
                self.device_latency_at(key, v)?;
            }
        }
        let host = fabrics::engine::HostLatency {
            tx: d.nic_tx,
            rx: d.nic_rx,
        };
        Ok((d, host))
    }

    /// A `[fabric.latency]` value, refused beyond [`MAX_DEVICE_LATENCY`].
    fn device_latency_at(&self, key: &str, v: TimeSpec) -> Result<Duration, ScenarioError> {
        if v.get() > MAX_DEVICE_LATENCY {
            return Err(self.err(
                &format!("fabric.latency.{key}"),
                format!(
                    "expected at most {MAX_DEVICE_LATENCY} (no device or link takes longer), got {}",
                    v.get()
                ),
            ));
        }
        Ok(v.get())
    }

    /// The PCIe generation of the topology's servers, where it has any.
    fn server_pcie_gen(&self) -> Option<PcieGen> {
        self.built_link_gens().1
    }

    /// The NVLink and PCIe generations of the links a GPU topology builder makes (`None` for
    /// the network topologies and for custom ones, whose links carry their own delays).
    fn built_link_gens(&self) -> (Option<NvLinkGen>, Option<PcieGen>) {
        match &self.scenario.topology {
            TopologySpec::HgxH100 {} => (Some(NvLinkGen::V4), Some(PcieGen::Gen5)),
            TopologySpec::HgxA100 {} => (Some(NvLinkGen::V3), Some(PcieGen::Gen4)),
            TopologySpec::Nvl72 {} => (Some(NvLinkGen::V5), None),
            TopologySpec::NvlinkMesh { generation, .. } | TopologySpec::NvlinkRing { generation, .. } => {
                (Some(nvlink_gen(*generation)), None)
            }
            TopologySpec::PcieServer { generation, .. } => (None, Some(pcie_gen(*generation))),
            TopologySpec::Cluster { server, .. } => match server {
                ServerKindSpec::HgxH100 => (Some(NvLinkGen::V4), Some(PcieGen::Gen5)),
                ServerKindSpec::HgxA100 => (Some(NvLinkGen::V3), Some(PcieGen::Gen4)),
                ServerKindSpec::PcieGen4 => (None, Some(PcieGen::Gen4)),
                ServerKindSpec::PcieGen5 => (None, Some(PcieGen::Gen5)),
            },
            _ => (None, None),
        }
    }

    /// `[fabric.latency] nvlink_link` / `pcie_link`, the one-way latency of the GPU topologies'
    /// NVLink and PCIe links, when given (the generation's default otherwise).
    fn link_latency(&self) -> (Option<Duration>, Option<Duration>) {
        let l = self.scenario.fabric.latency.as_ref();
        (
            l.and_then(|l| l.nvlink_link).map(|t| t.get()),
            l.and_then(|l| l.pcie_link).map(|t| t.get()),
        )
    }

    /// `[fabric.crossbar]` into the engine's [`Crossbar`], range-checked.
    fn crossbar(&self) -> Result<Crossbar, ScenarioError> {
        let mut c = Crossbar::default();
        let Some(spec) = &self.scenario.fabric.crossbar else {
            return Ok(c);
        };
        if let Some(st) = spec.striping {
            c.striping = match st {
                StripingSpec::Interleaved => Striping::Interleaved,
                StripingSpec::LeastLoaded => Striping::LeastLoaded,
            };
        }
        if let Some(x) = spec.speedup {
            let pct = (x * 100.0).round();
            let range = fabrics::engine::CROSSBAR_SPEEDUP_PERCENT_RANGE;
            if !x.is_finite() || pct < *range.start() as f64 || pct > *range.end() as f64 {
                return Err(self.err(
                    "fabric.crossbar.speedup",
                    format!(
                        "expected 1.0..=10.0 (a multiple of the input link rate), got {}",
                        crate::wording::float_text(x)
                    ),
                ));
            }
            c.speedup_percent = Some(pct as u32);
        }
        if let Some(a) = &spec.arbitration {
            c.arbitration = match a.as_str() {
                "oldest" => XbarArbitration::OldestFirst,
                "round_robin" => XbarArbitration::RoundRobin,
                "islip" => XbarArbitration::Islip,
                "lqf" => XbarArbitration::LongestQueueFirst,
                _ => {
                    return Err(self.err(
                        "fabric.crossbar.arbitration",
                        format!("expected \"oldest\", \"round_robin\", \"islip\" or \"lqf\", got {a:?}"),
                    ));
                }
            };
        }
        Ok(c)
    }

    /// `[fabric.infiniband] credit_update` into the update policy (`models/credit/`).
    fn credit_update(
        &self,
        u: &CreditUpdateSpec,
        interval_given: bool,
        at: &dyn Fn(&str) -> String,
    ) -> Result<AnyCreditUpdate, ScenarioError> {
        let field = |k: &str| at(&format!("credit_update.{k}"));
        match u.policy.as_str() {
            "per_change" => {
                for (k, set) in [("blocks", u.blocks.is_some()), ("max_delay", u.max_delay.is_some())] {
                    if set {
                        return Err(self.err(&field(k), "only the \"coalesced\" policy takes this key"));
                    }
                }
                Ok(AnyCreditUpdate::PerChange(PerChange::default()))
            }
            "coalesced" => {
                if interval_given {
                    return Err(self.err(
                        &at("credit_update_interval"),
                        "the coalesced policy has its own max_delay: remove credit_update_interval",
                    ));
                }
                let blocks = u.blocks.unwrap_or(0);
                if !(1..=MAX_IB_BUFFER_BLOCKS as u32).contains(&blocks) {
                    return Err(self.err(
                        &field("blocks"),
                        format!("expected 1..={MAX_IB_BUFFER_BLOCKS} credits (64-byte blocks), got {blocks}"),
                    ));
                }
                let max_delay = u.max_delay.map(|t| t.get()).unwrap_or(Duration::ZERO);
                if max_delay == Duration::ZERO || max_delay > Duration::from_ms(1) {
                    return Err(self.err(
                        &field("max_delay"),
                        format!("expected a delay in (0, 1ms], got {max_delay}"),
                    ));
                }
                Ok(AnyCreditUpdate::Coalesced(Coalesced { blocks, max_delay }))
            }
            p => Err(self.err(
                &field("policy"),
                format!("expected \"per_change\" or \"coalesced\", got {p:?}"),
            )),
        }
    }

    /// `[fabric.infiniband]` into the engine's [`IbConfig`], every value range-checked.
    fn build_ib(&self, spec: Option<&InfinibandSpec>, max_wire: u32) -> Result<IbConfig, ScenarioError> {
        let default_spec = InfinibandSpec::default();
        let spec = spec.unwrap_or(&default_spec);
        let at = |k: &str| format!("fabric.infiniband.{k}");
        let vls = spec.vls.unwrap_or(1);
        if vls == 0 || vls > ib::MAX_DATA_VLS {
            return Err(self.err(
                &at("vls"),
                format!("expected 1..={} data VLs, got {vls}", ib::MAX_DATA_VLS),
            ));
        }
        let mut c = IbConfig::with_vls(vls);
        if let Some(t) = &spec.sl2vl {
            if t.len() != 16 {
                return Err(self.err(&at("sl2vl"), format!("expected 16 entries (SL 0..15), got {}", t.len())));
            }
            for (sl, &vl) in t.iter().enumerate() {
                if vl >= vls {
                    return Err(self.err(
                        &at("sl2vl"),
                        format!("SL {sl} maps to VL {vl}, but only VLs 0..{vls} exist"),
                    ));
                }
                c.sl2vl[sl] = vl;
            }
        }
        let need = ib::link::blocks(max_wire) as u64;
        let credits = |field: &str, size: Option<SizeSpec>, default: u32| -> Result<u32, ScenarioError> {
            let Some(size) = size else { return Ok(default) };
            let b = size.get().get();
            if b % 64 != 0 {
                return Err(self.err(&at(field), format!("expected whole 64-byte credits, got {b}B")));
            }
            let blocks = b / 64;
            if blocks < need || blocks > MAX_IB_BUFFER_BLOCKS {
                return Err(self.err(
                    &at(field),
                    format!(
                        "expected {}B (one {max_wire}B packet) ..= {}B, got {b}B",
                        need * 64,
                        MAX_IB_BUFFER_BLOCKS * 64
                    ),
                ));
            }
            Ok(blocks as u32)
        };
        c.vl_buffer_blocks = credits("vl_buffer", spec.vl_buffer, c.vl_buffer_blocks)?;
        c.hca_vl_buffer_blocks = credits("hca_vl_buffer", spec.hca_vl_buffer, c.hca_vl_buffer_blocks)?;
        if let Some(q) = &spec.input_queues {
            c.switch_voq = match q.as_str() {
                "fifo" => false,
                "voq" => true,
                _ => {
                    return Err(self.err(&at("input_queues"), format!("expected \"fifo\" or \"voq\", got {q:?}")));
                }
            };
        }
        if let Some(pool) = spec.shared_pool {
            let b = pool.get().get();
            if b % 64 != 0 || b / 64 > MAX_IB_BUFFER_BLOCKS {
                return Err(self.err(
                    &at("shared_pool"),
                    format!(
                        "expected whole 64-byte credits up to {}B, got {b}B",
                        MAX_IB_BUFFER_BLOCKS * 64
                    ),
                ));
            }
            c.shared_pool_blocks = (b / 64) as u32;
        }
        if let Some(t) = spec.credit_update_interval {
            if t.get() > Duration::from_ms(1) {
                return Err(self.err(
                    &at("credit_update_interval"),
                    format!("expected at most 1ms, got {}", t.get()),
                ));
            }
            c.credit_update = AnyCreditUpdate::PerChange(PerChange { min_interval: t.get() });
        }
        if let Some(u) = &spec.credit_update {
            c.credit_update = self.credit_update(u, spec.credit_update_interval.is_some(), &at)?;
        }
        for (field, v, slot) in [
            ("hoq_life_switch", spec.hoq_life_switch, &mut c.hoq_life_switch),
            ("hoq_life_leaf", spec.hoq_life_leaf, &mut c.hoq_life_leaf),
        ] {
            if let Some(v) = v {
                if v > 31 {
                    return Err(self.err(
                        &at(field),
                        format!("expected an encoded HOQLife 0..=31 (> 19 = off), got {v}"),
                    ));
                }
                *slot = v;
            }
        }
        if let Some(a) = &spec.vl_arbitration {
            let entries = |v: &[VlArbEntrySpec]| {
                v.iter()
                    .map(|e| VlArbEntry {
                        vl: e.vl,
                        weight: e.weight,
                    })
                    .collect()
            };
            c.vlarb = VlArbConfig {
                high: entries(&a.high),
                low: entries(&a.low),
                high_limit: a.high_limit,
            };
            c.vlarb.validate(vls).map_err(|m| self.err(&at("vl_arbitration"), m))?;
        }
        if let Some(cc) = &spec.cc {
            let mut sw = IbCcSwitch::default();
            let mut src = IbCcSource::default();
            if let Some(t) = cc.threshold {
                if t > 15 {
                    return Err(self.err(&at("cc.threshold"), format!("expected 0..=15, got {t}")));
                }
                sw.threshold = t;
            }
            if let Some(r) = cc.marking_rate {
                sw.marking_rate = r;
            }
            if let Some(p) = cc.packet_size {
                sw.packet_size_blocks =
                    ib::link::blocks(p.get().get().min(u32::MAX as u64) as u32).min(u16::MAX as u32) as u16;
            }
            sw.victim_mask = cc.victim_mask;
            if let Some(v) = cc.ccti_increase {
                if v == 0 || v > 255 {
                    return Err(self.err(
                        &at("cc.ccti_increase"),
                        format!("expected 1..=255 (CCTI_Increase is 8 bits), got {v}"),
                    ));
                }
                src.ccti_increase = v;
            }
            if let Some(v) = cc.ccti_limit {
                if v > ib::cc::MAX_CCTI {
                    return Err(self.err(
                        &at("cc.ccti_limit"),
                        format!("expected 0..={} (a 14-bit table index), got {v}", ib::cc::MAX_CCTI),
                    ));
                }
                src.ccti_limit = v;
            }
            if let Some(v) = cc.ccti_min {
                if v > src.ccti_limit {
                    return Err(self.err(
                        &at("cc.ccti_min"),
                        format!("expected 0..={} (at most ccti_limit), got {v}", src.ccti_limit),
                    ));
                }
                src.ccti_min = v;
            }
            if let Some(t) = cc.ccti_timer {
                let (lo, hi) = (ib::cc::CCTI_TIMER_UNIT, ib::cc::MAX_CCTI_TIMER);
                if t.get() < lo || t.get() > hi {
                    return Err(self.err(
                        &at("cc.ccti_timer"),
                        format!(
                            "expected a period in [{}, {}] (CCTI_Timer is 1..=65535 units of 1.024us), got {t}",
                            TimeSpec::new(lo),
                            TimeSpec::new(hi)
                        ),
                    ));
                }
                src.ccti_timer = t.get();
            }
            match &cc.cct {
                Some(table) => {
                    let most = ib::cc::MAX_CCTI as usize + 1;
                    if table.is_empty() || table.len() > most {
                        return Err(self.err(
                            &at("cc.cct"),
                            format!("expected 1..={most} entries, got {}", table.len()),
                        ));
                    }
                    if cc.ccti_limit.is_none() {
                        src.ccti_limit = (table.len() - 1) as u16;
                    } else if table.len() <= src.ccti_limit as usize {
                        return Err(self.err(
                            &at("cc.cct"),
                            format!(
                                "expected at least ccti_limit + 1 = {} entries, got {}",
                                src.ccti_limit as usize + 1,
                                table.len()
                            ),
                        ));
                    }
                    if src.ccti_min > src.ccti_limit {
                        return Err(self.err(
                            &at("cc.ccti_min"),
                            format!(
                                "expected 0..={} (at most ccti_limit, the table's last index), got {}",
                                src.ccti_limit, src.ccti_min
                            ),
                        ));
                    }
                    src.cct = table.clone();
                }
                None if src.ccti_limit as usize >= src.cct.len() => {
                    src.cct = ib::cc::default_cct(src.ccti_limit + 1);
                }
                None => {}
            }
            src.validate().map_err(|m| self.err(&at("cc"), m))?;
            c.cc = Some(IbCcConfig {
                switch: sw,
                source: std::sync::Arc::new(src),
            });
        }
        c.validate(max_wire).map_err(|m| self.err("fabric.infiniband", m))?;
        Ok(c)
    }

    /// The peers of host `center` in an incast or closed loop: the hosts listed at
    /// `{field}.{list_key}`, or the `n` hosts after `center` (wrapping around) at
    /// `{field}.{count_key}`; exactly one of the two.
    fn endpoints_around(
        &self,
        center: u32,
        list: Option<&[u32]>,
        n: Option<u32>,
        n_hosts: u32,
        (field, list_key, count_key): (&str, &str, &str),
    ) -> Result<Vec<u32>, ScenarioError> {
        match (list, n) {
            (Some(list), None) => {
                if list.is_empty() {
                    return Err(self.err(&format!("{field}.{list_key}"), "expected at least one host"));
                }
                if let Some((j, &h)) = list.iter().enumerate().find(|&(_, &h)| h >= n_hosts) {
                    return Err(self.err(
                        &format!("{field}.{list_key}[{j}]"),
                        format!("host {h} does not exist: the topology has hosts 0..{n_hosts}"),
                    ));
                }
                Ok(list.to_vec())
            }
            (None, Some(n)) => {
                if n == 0 || n >= n_hosts {
                    return Err(self.err(
                        &format!("{field}.{count_key}"),
                        format!("expected 1..={} {list_key}", n_hosts - 1),
                    ));
                }
                Ok((1..=n).map(|d| (center + d) % n_hosts).collect())
            }
            _ => Err(self.err(field, format!("give exactly one of `{list_key}` or `{count_key}`"))),
        }
    }

    #[allow(clippy::type_complexity)]
    fn build_flows(&self, n_hosts: u32, layout: GpuLayout) -> Result<BuiltFlows, ScenarioError> {
        let streams = RngStreams::new(self.scenario.scenario.seed);
        if self.scenario.workload.is_empty() {
            return Err(self.err("workload", "expected at least one [[workload]]"));
        }
        if self.scenario.workload.len() > MAX_WORKLOADS {
            return Err(self.err(
                "workload",
                format!("expected at most {MAX_WORKLOADS} [[workload]] entries"),
            ));
        }
        let mut plan = FlowPlan::default();
        let mut instances = Vec::new();
        let mut trainings = Vec::new();
        // A closed-loop workload's flows depend on each other.
        let mut chained = false;
        for (i, w) in self.scenario.workload.iter().enumerate() {
            let field = format!("workload[{i}]");
            // Each workload has its own streams, so adding one does not perturb another.
            let limits = TrafficLimits {
                max_flows: MAX_FLOWS as u64,
            };
            let check_host = |h: u32, f: &str| {
                if h >= n_hosts {
                    Err(self.err(
                        f,
                        format!("host {h} does not exist: the topology has hosts 0..{n_hosts}"),
                    ))
                } else {
                    Ok(())
                }
            };
            let class = self.scenario.class_of(w);
            let max_class = match self.scenario.fabric.kind {
                // An Ethernet priority is the 3-bit PCP of the 802.1Q tag.
                FabricKind::Ethernet | FabricKind::Rocev2 => 7,
                _ => MAX_CLASS,
            };
            if class > max_class {
                return Err(self.err(
                    &format!("{field}.class"),
                    format!("expected a class in 0..={max_class}, got {class}"),
                ));
            }
            let mut flows = match w {
                WorkloadSpec::Collective { .. } => {
                    let before = plan.instances.len();
                    self.push_collective(&mut plan, i, w, layout)?;
                    instances.extend(plan.instances[before..].iter().map(|x| (i, x.clone())));
                    continue;
                }
                WorkloadSpec::TrainingStep { .. } => {
                    trainings.push(self.push_training(&mut plan, i, w, layout)?);
                    continue;
                }
                WorkloadSpec::Flows { flows, .. } => {
                    let mut v = Vec::with_capacity(flows.len());
                    for (j, fl) in flows.iter().enumerate() {
                        check_host(fl.src, &format!("{field}.flows[{j}].src"))?;
                        check_host(fl.dst, &format!("{field}.flows[{j}].dst"))?;
                        if fl.size.get().get() == 0 {
                            return Err(self.err(&format!("{field}.flows[{j}].size"), "a flow carries at least 1 byte"));
                        }
                        if fl.src == fl.dst {
                            return Err(self.err(
                                &format!("{field}.flows[{j}].dst"),
                                "a flow's destination must differ from its source",
                            ));
                        }
                        v.push(FlowSpec {
                            src: fl.src,
                            dst: fl.dst,
                            size: fl.size.get(),
                            start: SimTime::ZERO + fl.start.get(),
                            ..Default::default()
                        });
                    }
                    v
                }
                WorkloadSpec::Permutation { size, start, .. } => {
                    let mut rng = streams.stream(stream::WORKLOAD + i as u64);
                    generators::permutation(n_hosts, size.get(), SimTime::ZERO + start.get(), &mut rng, limits)
                        .map_err(|e| self.err(&field, e.to_string()))?
                }
                WorkloadSpec::Incast {
                    receiver,
                    senders,
                    n_senders,
                    size,
                    start,
                    ..
                } => {
                    check_host(*receiver, &format!("{field}.receiver"))?;
                    let senders = self.endpoints_around(
                        *receiver,
                        senders.as_deref(),
                        *n_senders,
                        n_hosts,
                        (&field, "senders", "n_senders"),
                    )?;
                    generators::incast(
                        n_hosts,
                        &senders,
                        *receiver,
                        size.get(),
                        SimTime::ZERO + start.get(),
                        limits,
                    )
                    .map_err(|e| self.err(&field, e.to_string()))?
                }
                WorkloadSpec::ClosedLoop {
                    server,
                    clients,
                    n_clients,
                    request_size,
                    response_size,
                    requests,
                    think_time,
                    start,
                    ..
                } => {
                    check_host(*server, &format!("{field}.server"))?;
                    let clients = self.endpoints_around(
                        *server,
                        clients.as_deref(),
                        *n_clients,
                        n_hosts,
                        (&field, "clients", "n_clients"),
                    )?;
                    if *requests == 0 || *requests > MAX_ITERATIONS * 1000 {
                        return Err(self.err(
                            &format!("{field}.requests"),
                            format!(
                                "expected 1..={} requests per client, got {requests}",
                                MAX_ITERATIONS * 1000
                            ),
                        ));
                    }
                    if response_size.is_some_and(|s| s.get().get() == 0) {
                        return Err(self.err(
                            &format!("{field}.response_size"),
                            "expected a size > 0 (leave response_size out for requests without a response)",
                        ));
                    }
                    let think = think_time.map_or(Duration::ZERO, |t| t.get());
                    if think > MAX_TIMER {
                        return Err(self.err(
                            &format!("{field}.think_time"),
                            format!("expected at most {MAX_TIMER}, got {think}"),
                        ));
                    }
                    let spec = generators::ClosedLoopSpec {
                        clients: &clients,
                        server: *server,
                        request: request_size.get(),
                        response: response_size.map_or(sim_core::Bytes(0), |s| s.get()),
                        requests: *requests,
                        think,
                        start: SimTime::ZERO + start.get(),
                    };
                    let mut chain =
                        generators::closed_loop(n_hosts, &spec, limits).map_err(|e| self.err(&field, e.to_string()))?;
                    if plan.flows.len() + chain.len() > MAX_FLOWS {
                        return Err(self.err(&field, format!("the workloads generate more than {MAX_FLOWS} flows")));
                    }
                    for (f, _, _) in &mut chain {
                        f.group = i as u16;
                        f.class = class;
                    }
                    plan.push_chained(&chain);
                    chained = true;
                    continue;
                }
                WorkloadSpec::Poisson {
                    load, cdf, duration, ..
                } => {
                    if !(*load > 0.0 && *load <= 1.0) {
                        return Err(self.err(
                            &format!("{field}.load"),
                            format!("expected a load in (0, 1], got {}", crate::wording::float_text(*load)),
                        ));
                    }
                    let cdf_field = format!("{field}.cdf");
                    let cdf = self.read_cdf(&cdf_field, cdf)?;
                    let rate = self.min_host_rate()?;
                    let spec = PoissonSpec {
                        n_hosts,
                        load: *load,
                        host_rate: rate,
                        start: SimTime::ZERO,
                        duration: duration.get(),
                    };
                    let base = generators::POISSON_STREAM_BASE + ((i as u64) << 32);
                    generators::poisson(&spec, &cdf, &streams, base, limits)
                        .map_err(|e| self.err(&field, e.to_string()))?
                }
            };
            for f in &mut flows {
                f.group = i as u16;
                f.class = class;
            }
            if plan.flows.len() + flows.len() > MAX_FLOWS {
                return Err(self.err(&field, format!("the workloads generate more than {MAX_FLOWS} flows")));
            }
            plan.push_independent(&flows);
        }
        let deps = if instances.is_empty() && trainings.is_empty() && !chained {
            FlowDeps::default()
        } else {
            plan.deps
        };
        Ok((plan.flows, deps, instances, trainings))
    }

    /// One `[[workload]] kind = "collective"` entry into `plan`.
    fn push_collective(
        &self,
        plan: &mut FlowPlan,
        i: usize,
        w: &WorkloadSpec,
        layout: GpuLayout,
    ) -> Result<(), ScenarioError> {
        let WorkloadSpec::Collective {
            op,
            algorithm,
            size,
            sizes,
            ranks,
            chunks,
            channels,
            channel_rings,
            iterations,
            root,
            reduce_rate,
            start,
            ..
        } = w
        else {
            unreachable!("called for collective workloads only")
        };
        let at = |k: &str| format!("workload[{i}].{k}");
        let sizes: Vec<u64> = match (size, sizes) {
            (Some(s), None) => vec![s.get().get()],
            (None, Some(v)) if !v.is_empty() && v.len() <= MAX_SWEEP_SIZES => v.iter().map(|s| s.get().get()).collect(),
            (None, Some(_)) => {
                return Err(self.err(&at("sizes"), format!("expected 1..={MAX_SWEEP_SIZES} sizes")));
            }
            _ => return Err(self.err(&format!("workload[{i}]"), "give exactly one of `size` or `sizes`")),
        };
        if let Some(b) = sizes.iter().find(|&&b| b > MAX_COLLECTIVE_BYTES) {
            return Err(self.err(
                &at(if size.is_some() { "size" } else { "sizes" }),
                format!("{b} B is over the limit of {MAX_COLLECTIVE_BYTES} B"),
            ));
        }
        let gpus = self.collective_ranks(ranks.as_ref(), layout, &at("ranks"))?;
        let n = gpus.len() as u32;
        for (k, v, max) in [
            ("chunks", *chunks, MAX_CHUNKS),
            ("channels", *channels, MAX_CHANNELS),
            ("iterations", *iterations, MAX_ITERATIONS),
        ] {
            if v == 0 || v > max {
                return Err(self.err(&at(k), format!("expected 1..={max}, got {v}")));
            }
        }
        let kind = match op {
            CollectiveOp::AllReduce => CollectiveKind::AllReduce,
            CollectiveOp::ReduceScatter => CollectiveKind::ReduceScatter,
            CollectiveOp::AllGather => CollectiveKind::AllGather,
            CollectiveOp::Broadcast => CollectiveKind::Broadcast { root: *root },
            CollectiveOp::AllToAll => CollectiveKind::AllToAll,
        };
        let algo = algorithm.unwrap_or(if *op == CollectiveOp::AllToAll {
            CollectiveAlgo::Direct
        } else {
            CollectiveAlgo::Ring
        });
        let algorithm = self.algorithm(i, algo, layout)?;
        let ring_group = match channel_rings {
            None | Some(ChannelRings::Same) => 1,
            Some(ChannelRings::Rotated) => {
                let g = layout.gpus_per_server.filter(|&g| n.is_multiple_of(g)).ok_or_else(|| {
                    self.err(
                        &at("channel_rings"),
                        "`rotated` needs a cluster topology and ranks that fill whole servers (a multiple of the GPUs per server)",
                    )
                })?;
                if algorithm != Algorithm::Ring {
                    return Err(self.err(&at("channel_rings"), "`rotated` applies to the ring algorithm only"));
                }
                g
            }
        };
        let spec = CollectiveSpec {
            kind,
            algorithm,
            n_ranks: n,
            bytes: sizes[0],
            chunks: *chunks,
            channels: *channels,
            ring_group,
            reduce_rate: reduce_rate.map(|r| r.get()),
        };
        let mut endpoints = gpus;
        endpoints.extend(layout.nvls_host);
        let limits = PlanLimits {
            max_flows: MAX_FLOWS as u64,
            dag: DagLimits::DEFAULT,
        };
        plan.push_collective(
            &spec,
            &sizes,
            *iterations,
            SimTime::ZERO + start.get(),
            &endpoints,
            i as u16,
            self.scenario.class_of(w),
            &limits,
        )
        .map_err(|e| self.err(&format!("workload[{i}]"), e.to_string()))
    }

    /// The GPUs of a collective's ranks, rank by rank: `0..n` for a count (default: every GPU),
    /// or the list as given (distinct GPUs, at least 2), refused at `field`.
    fn collective_ranks(
        &self,
        ranks: Option<&RanksSpec>,
        layout: GpuLayout,
        field: &str,
    ) -> Result<Vec<u32>, ScenarioError> {
        let gpus = layout.n_gpus;
        let list = match ranks {
            None => (0..gpus).collect(),
            Some(RanksSpec::Count(n)) => {
                if *n < 2 || *n > gpus {
                    return Err(self.err(
                        field,
                        format!("expected 2..={gpus} ranks (the topology's GPUs), got {n}"),
                    ));
                }
                (0..*n).collect()
            }
            Some(RanksSpec::List(list)) => {
                if list.len() < 2 || list.len() > gpus as usize {
                    return Err(self.err(field, format!("expected a list of 2..={gpus} GPUs, got {}", list.len())));
                }
                let mut seen = vec![false; gpus as usize];
                for (j, &g) in list.iter().enumerate() {
                    if g >= gpus {
                        return Err(self.err(
                            &format!("{field}[{j}]"),
                            format!("GPU {g} does not exist: the topology has GPUs 0..{gpus}"),
                        ));
                    }
                    if std::mem::replace(&mut seen[g as usize], true) {
                        return Err(self.err(&format!("{field}[{j}]"), format!("GPU {g} is listed twice")));
                    }
                }
                list.clone()
            }
        };
        Ok(list)
    }

    /// A collective algorithm of workload `i` (hierarchical takes the cluster's servers).
    fn algorithm(&self, i: usize, algo: CollectiveAlgo, layout: GpuLayout) -> Result<Algorithm, ScenarioError> {
        Ok(match algo {
            CollectiveAlgo::Ring => Algorithm::Ring,
            CollectiveAlgo::Tree => Algorithm::DoubleBinaryTree,
            CollectiveAlgo::HalvingDoubling => Algorithm::HalvingDoubling,
            CollectiveAlgo::Nvls => Algorithm::Nvls,
            CollectiveAlgo::Direct => Algorithm::Direct,
            CollectiveAlgo::Hierarchical => {
                let g = layout.gpus_per_server.ok_or_else(|| {
                    self.err(
                        &format!("workload[{i}].algorithm"),
                        "`hierarchical` needs a cluster topology (servers of GPUs)",
                    )
                })?;
                Algorithm::Hierarchical { gpus_per_server: g }
            }
        })
    }

    /// One `[[workload]] kind = "training_step"` entry into `plan`.
    fn push_training(
        &self,
        plan: &mut FlowPlan,
        i: usize,
        w: &WorkloadSpec,
        layout: GpuLayout,
    ) -> Result<TrainingRun, ScenarioError> {
        let WorkloadSpec::TrainingStep {
            compute,
            gradient_size,
            bucket_size,
            overlap,
            steps,
            algorithm,
            ranks,
            chunks,
            channels,
            reduce_rate,
            start,
            ..
        } = w
        else {
            unreachable!("called for training workloads only")
        };
        let at = |k: &str| format!("workload[{i}].{k}");
        let n = ranks.unwrap_or(layout.n_gpus);
        if n < 2 || n > layout.n_gpus {
            return Err(self.err(
                &at("ranks"),
                format!("expected 2..={} ranks (the topology's GPUs), got {n}", layout.n_gpus),
            ));
        }
        for (k, v, max) in [
            ("chunks", *chunks, MAX_CHUNKS),
            ("channels", *channels, MAX_CHANNELS),
            ("steps", *steps, training::MAX_STEPS),
        ] {
            if v == 0 || v > max {
                return Err(self.err(&at(k), format!("expected 1..={max}, got {v}")));
            }
        }
        let g = gradient_size.get().get();
        if g == 0 || g > MAX_COLLECTIVE_BYTES {
            return Err(self.err(
                &at("gradient_size"),
                format!("expected 1B..={MAX_COLLECTIVE_BYTES}B, got {g}B"),
            ));
        }
        let bucket = bucket_size.map_or(training::DDP_BUCKET_BYTES, |b| b.get().get());
        if bucket == 0 || g.div_ceil(bucket) > training::MAX_BUCKETS {
            return Err(self.err(
                &at(if bucket_size.is_some() {
                    "bucket_size"
                } else {
                    "gradient_size"
                }),
                format!(
                    "expected 1..={} buckets of at least 1B, got {} B in buckets of {bucket} B",
                    training::MAX_BUCKETS,
                    g
                ),
            ));
        }
        if compute.get() > MAX_END_TIME {
            return Err(self.err(&at("compute"), format!("expected at most {MAX_END_TIME}")));
        }
        let algo = algorithm.unwrap_or(CollectiveAlgo::Ring);
        if algo == CollectiveAlgo::Direct {
            return Err(self.err(&at("algorithm"), "`direct` is an all_to_all algorithm; an AllReduce is ring, tree, halving_doubling, nvls or hierarchical"));
        }
        let step = training::TrainingStep {
            allreduce: CollectiveSpec {
                kind: CollectiveKind::AllReduce,
                algorithm: self.algorithm(i, algo, layout)?,
                n_ranks: n,
                bytes: bucket,
                chunks: *chunks,
                channels: *channels,
                ring_group: 1,
                reduce_rate: reduce_rate.map(|r| r.get()),
            },
            compute: compute.get(),
            gradient_bytes: g,
            bucket_bytes: bucket,
            overlap: *overlap,
            steps: *steps,
        };
        let mut endpoints: Vec<u32> = (0..n).collect();
        endpoints.extend(layout.nvls_host);
        let limits = PlanLimits {
            max_flows: MAX_FLOWS as u64,
            dag: DagLimits::DEFAULT,
        };
        let before = plan.instances.len();
        let mut flows = plan
            .push_training(
                &step,
                SimTime::ZERO + start.get(),
                &endpoints,
                i as u16,
                self.scenario.class_of(w),
                &limits,
            )
            .map_err(|e| self.err(&format!("workload[{i}]"), e.to_string()))?;
        for f in &mut flows {
            f.buckets = f.buckets.start - before..f.buckets.end - before;
        }
        Ok(TrainingRun {
            workload: i,
            step,
            steps: flows,
            buckets: plan.instances[before..].to_vec(),
        })
    }

    fn min_host_rate(&self) -> Result<sim_core::BitsPerSec, ScenarioError> {
        match &self.scenario.topology {
            TopologySpec::FatTree { host_link, .. }
            | TopologySpec::LeafSpine { host_link, .. }
            | TopologySpec::Sized { host_link, .. } => Ok(host_link.rate.get()),
            TopologySpec::Cluster { nic_link, .. } => Ok(nic_link.rate.get()),
            TopologySpec::Custom { links, .. } => links
                .iter()
                .filter(|l| l.a.starts_with('h') || l.b.starts_with('h'))
                .map(|l| l.rate.get())
                .min()
                .ok_or_else(|| self.err("topology.links", "no host links")),
            _ => Err(self.err(
                "topology",
                "poisson workloads need a network topology (fat_tree, leaf_spine, sized, custom, cluster)",
            )),
        }
    }

    fn read_cdf(&self, field: &str, rel: &str) -> Result<FlowSizeCdf, ScenarioError> {
        let path = self.dir.join(rel);
        let text = crate::files::read_text_limited(&path, MAX_CDF_BYTES)
            .map_err(|e| self.err(field, format!("cannot read CDF file {}: {e}", shown_path(&path))))?;
        FlowSizeCdf::parse(&text).map_err(|e| self.err(field, format!("{}: {e}", shown_path(&path))))
    }
}

/// A user-given path for a message: at most [`MAX_QUOTED_CHARS`] characters.
/// `[fabric.roce]` with every effective PFC, ECN and congestion-control value written out
/// (presets resolved). Three defaults stay implicit because they differ per switch or per
/// link: `buffer` (512 KiB per port), `headroom` (the bound of the switch's worst port) and
/// `pfc_refresh` (half the pause time at each link's rate).
fn resolved_roce(mut r: RoceSpec, c: &RoceConfig) -> RoceSpec {
    let list = |mask: u8| -> Vec<u8> { (0..8).filter(|p| mask & (1 << p) != 0).collect() };
    r.reserve = Some(SizeSpec::from_bytes(c.reserve_bytes));
    r.resume_offset = Some(SizeSpec::from_bytes(c.resume_offset_bytes));
    match c.xoff_threshold_bytes {
        Some(t) => r.xoff_threshold = Some(SizeSpec::from_bytes(t)),
        None => r.alpha_shift = Some(c.alpha_shift),
    }
    r.lossless = Some(list(c.lossless_mask));
    r.lossy = Some(list(c.lossy_mask));
    r.strict = Some(list(c.strict_mask));
    r.control_priority = Some(c.control_priority);
    r.pause_quanta = Some(c.pause_quanta);
    r.pause = Some(
        match c.pause {
            fabrics::models::PauseKind::Priority => "pfc",
            fabrics::models::PauseKind::Global => "global",
        }
        .to_owned(),
    );
    if let Some(e) = &c.ecn {
        let ecn = r.ecn.get_or_insert_with(Default::default);
        ecn.preset.get_or_insert(EcnPreset::DcqcnPaper);
        ecn.kmin = Some(SizeSpec::from_bytes(e.kmin_bytes));
        ecn.kmax = Some(SizeSpec::from_bytes(e.kmax_bytes));
        ecn.pmax = Some(e.pmax_ppm as f64 / fabrics::models::marking::PPM_ONE as f64);
        ecn.point = Some(match e.point {
            MarkPoint::Enqueue => MarkPointSpec::Enqueue,
            MarkPoint::Dequeue => MarkPointSpec::Dequeue,
        });
    }
    r.cnp_interval = Some(TimeSpec::new(c.cnp_interval));
    r.cc = match (r.cc.take(), &c.cc) {
        (Some(cc), RoceCc::Dcqcn(p)) => {
            r.cnp_interval = None;
            Some(crate::cc_params::dcqcn_spec(cc.preset, p, c.cnp_interval))
        }
        (Some(cc), RoceCc::Timely(p)) => Some(crate::cc_params::timely_spec(cc.preset, p)),
        (Some(cc), RoceCc::Hpcc(p)) => Some(crate::cc_params::hpcc_spec(cc.preset, p)),
        (other, _) => other,
    };
    r
}

/// `[fabric.infiniband.cc]` with every effective Annex A10 value written out.
fn resolved_ib_cc(cc: &IbCcConfig) -> crate::schema::IbCcSpec {
    let (sw, src) = (&cc.switch, &cc.source);
    crate::schema::IbCcSpec {
        threshold: Some(sw.threshold),
        marking_rate: Some(sw.marking_rate),
        packet_size: Some(SizeSpec::from_bytes(
            sw.packet_size_blocks as u64 * ib::link::CREDIT_BLOCK_BYTES as u64,
        )),
        victim_mask: sw.victim_mask,
        ccti_increase: Some(src.ccti_increase),
        ccti_limit: Some(src.ccti_limit),
        ccti_min: Some(src.ccti_min),
        ccti_timer: Some(TimeSpec::new(src.ccti_timer)),
        cct: Some(src.cct.clone()),
    }
}

fn shown_path(p: &Path) -> String {
    crate::diag::short_quote(&p.display().to_string())
}

fn nvlink_gen(g: NvlinkGenSpec) -> NvLinkGen {
    match g {
        NvlinkGenSpec::Nvlink1 => NvLinkGen::V1,
        NvlinkGenSpec::Nvlink2 => NvLinkGen::V2,
        NvlinkGenSpec::Nvlink3 => NvLinkGen::V3,
        NvlinkGenSpec::Nvlink4 => NvLinkGen::V4,
        NvlinkGenSpec::Nvlink5 => NvLinkGen::V5,
    }
}

fn pcie_gen(g: PcieGenSpec) -> PcieGen {
    match g {
        PcieGenSpec::Gen3 => PcieGen::Gen3,
        PcieGenSpec::Gen4 => PcieGen::Gen4,
        PcieGenSpec::Gen5 => PcieGen::Gen5,
        PcieGenSpec::Gen6 => PcieGen::Gen6,
    }
}

/// Parses `"a:b"` into positive integers.
fn parse_ratio(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(':')?;
    let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a > 0 && b > 0).then_some((a, b))
}

/// At most the first 40 characters of a user's value, for quoting it in a message.
fn short(v: &str) -> String {
    match v.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &v[..i]),
        None => v.to_string(),
    }
}

/// At every GPU hub, traffic whose shortest paths include the hub's PCIe link (traffic for
/// another server) takes that link only: it leaves through the NIC behind the GPU's own PCIe
/// switch, on the GPU's rail, as NCCL sends it (not over NVLink to another GPU's NIC).
fn keep_gpu_traffic_on_own_nic(topo: &Topology, routes: &mut Routes) {
    use fabrics::topology::{LinkKind, NodeKind};
    for n in topo.graph.node_indices() {
        if !matches!(topo.graph[n].kind, NodeKind::GpuHub) {
            continue;
        }
        let prefer: Vec<bool> = topo
            .ports(n)
            .iter()
            .map(|&(e, _)| topo.graph[e].kind == LinkKind::Pcie)
            .collect();
        if prefer.contains(&true) {
            routes.prefer_at(n.index() as u32, &prefer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios() {
        assert_eq!(parse_ratio("2:1"), Some((2, 1)));
        assert_eq!(parse_ratio(" 3 : 2 "), Some((3, 2)));
        assert_eq!(parse_ratio("0:1"), None);
        assert_eq!(parse_ratio("2"), None);
    }

    /// `[fabric.infiniband.cc]`: a hand-written table sets `ccti_limit` to its last index, every
    /// Annex A10 value reaches the engine, and the resolved scenario lists them all and builds
    /// the same configuration again.
    #[test]
    fn ib_cc_table_and_values_reach_the_engine_and_the_resolved_scenario() {
        let text = r#"[scenario]
name = "ibcc"
[topology]
kind = "fat_tree"
k = 4
host_link = { rate = "hdr" }
fabric_link = { rate = "hdr" }
[fabric]
kind = "infiniband"
[fabric.infiniband.cc]
threshold = 12
marking_rate = 0
packet_size = "100B"
victim_mask = true
ccti_increase = 2
ccti_min = 1
ccti_timer = "2.048us"
cct = [0, 0x8001, 0x8002, 0x4003]
[[workload]]
kind = "flows"
flows = [{ src = 0, dst = 1, size = "64KiB" }]
"#;
        let l = load_str("t.toml".into(), ".".into(), text.into()).unwrap();
        let b = l.build().unwrap();
        let cc = b.engine.ib.as_ref().unwrap().cc.clone().unwrap();
        assert_eq!(
            cc.switch,
            IbCcSwitch {
                threshold: 12,
                marking_rate: 0,
                packet_size_blocks: 2,
                victim_mask: true,
            }
        );
        let want = IbCcSource {
            ccti_increase: 2,
            ccti_limit: 3,
            ccti_min: 1,
            ccti_timer: Duration::from_ps(2_048_000),
            cct: vec![0, 0x8001, 0x8002, 0x4003],
        };
        assert_eq!(*cc.source, want);
        let resolved = toml::to_string(&l.resolved(&b)).unwrap();
        assert!(resolved.contains("packet_size = \"128B\""), "{resolved}");
        assert!(resolved.contains("ccti_limit = 3"), "{resolved}");
        let l2 = load_str("r.toml".into(), ".".into(), resolved).unwrap();
        let b2 = l2.build().unwrap();
        assert_eq!(b2.engine.ib.unwrap().cc.unwrap(), cc);
    }

    fn flows_scenario(fabric: &str) -> String {
        format!(
            "[scenario]\nname = \"c\"\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
             host_link = {{ rate = \"100Gbps\" }}\nfabric_link = {{ rate = \"100Gbps\" }}\n\
             [fabric]\n{fabric}\n[[workload]]\nkind = \"flows\"\n\
             flows = [{{ src = 0, dst = 1, size = \"64KiB\" }}]\n"
        )
    }

    /// Issue 14: a RoCEv2 workload without a class is lossless (the lowest lossless priority),
    /// and the resolved scenario says which class it got; elsewhere the default stays 0.
    #[test]
    fn default_class_is_the_lowest_lossless_priority_on_rocev2() {
        for (fabric, want) in [
            ("kind = \"rocev2\"", 3),
            ("kind = \"rocev2\"\n[fabric.roce]\nlossless = [5, 2]\nlossy = [0, 6]", 2),
            ("kind = \"rocev2\"\n[fabric.roce]\nlossless = []\nlossy = [6, 1]", 1),
            ("kind = \"ethernet\"", 0),
            ("kind = \"infiniband\"", 0),
        ] {
            let l = load_str("t.toml".into(), ".".into(), flows_scenario(fabric)).unwrap();
            let b = l.build().unwrap();
            assert!(b.flows.iter().all(|f| f.class == want), "{fabric}: {:?}", b.flows);
            let resolved = toml::to_string(&l.resolved(&b)).unwrap();
            assert!(resolved.contains(&format!("class = {want}")), "{fabric}:\n{resolved}");
        }
    }

    /// The base fabric's loss recovery: on by default (every priority lossy, go-back-N with
    /// IRN's 320 us timeout and a BDP window, output-queued switches), off with `"none"`, and
    /// its keys refused elsewhere or when it is off.
    #[test]
    fn ethernet_loss_recovery_defaults_and_refusals() {
        let l = load_str("t.toml".into(), ".".into(), flows_scenario("kind = \"ethernet\"")).unwrap();
        let b = l.build().unwrap();
        let c = b.engine.roce.as_ref().expect("go-back-N transport by default");
        assert!(b.engine.lossy_network);
        assert_eq!((c.lossless_mask, c.lossy_mask), (0, 0xff));
        assert_eq!(c.go_back_n, Some(DEFAULT_ETHERNET_RTO));
        assert_eq!(c.gbn_window, GbnWindow::Bdp);
        let resolved = toml::to_string(&l.resolved(&b)).unwrap();
        assert!(resolved.contains("loss_recovery = \"go_back_n\""), "{resolved}");
        assert!(resolved.contains("go_back_n_timeout = \"320us\""), "{resolved}");
        let off = flows_scenario("kind = \"ethernet\"\n[fabric.ethernet]\nloss_recovery = \"none\"");
        let b = load_str("t.toml".into(), ".".into(), off).unwrap().build().unwrap();
        assert!(b.engine.roce.is_none() && !b.engine.lossy_network);
        for (fabric, key) in [
            (
                "kind = \"ethernet\"\n[fabric.ethernet]\nloss_recovery = \"none\"\ngo_back_n_window = \"bdp\"",
                "fabric.ethernet.go_back_n_window",
            ),
            (
                "kind = \"ethernet\"\n[fabric.ethernet]\ngo_back_n_timeout = \"0s\"",
                "fabric.ethernet.go_back_n_timeout",
            ),
            (
                "kind = \"rocev2\"\n[fabric.ethernet]\nloss_recovery = \"none\"",
                "fabric.ethernet",
            ),
        ] {
            let e = load_str("t.toml".into(), ".".into(), flows_scenario(fabric))
                .and_then(|l| l.build().map(|_| ()))
                .expect_err(fabric);
            assert!(e.to_string().contains(key), "{fabric}: {e}");
        }
    }
}
