//! Turns a parsed scenario into what the engine runs: topology, routes, engine configuration,
//! flows and run limits. Every semantic check lives here and reports the offending field.

mod engine;
mod ib;
mod roce;
mod topology;
mod workload;

use crate::diag::{ScenarioError, semantic_error};
use crate::locate::span_of;
use crate::schema::{
    BufferSpec, CollectiveAlgo, EthernetSpec, FabricKind, LatencySpec, LossRecovery, NvlinkGenSpec, PcieGenSpec,
    RoutingSpec, Scenario, TopologySpec, WorkloadSpec,
};
use crate::units::{SizeSpec, TimeSpec};
use fabrics::collectives::flows::Instance;
use fabrics::collectives::training;
use fabrics::engine::EngineConfig;
use fabrics::engine::FlowDeps;
use fabrics::models::AnyBuffer;
use fabrics::nvlink::NvLinkGen;
use fabrics::pcie::PcieGen;
use fabrics::routing::{Destinations, Routes};
use fabrics::topology::Topology;
use fabrics::topology::nvlink_shapes;
use fabrics::traffic::FlowSpec;
use ib::resolved_ib_cc;
use roce::resolved_roce;
use sim_core::{Duration, RunLimits, SimTime};
use std::path::{Path, PathBuf};
use topology::keep_gpu_traffic_on_own_nic;

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

#[cfg(test)]
mod tests {
    use super::*;
    use fabrics::engine::GbnWindow;
    use fabrics::ib::{IbCcSource, IbCcSwitch};

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
