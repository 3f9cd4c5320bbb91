//! The scenario file format: typed TOML, every table refusing unknown keys.
//!
//! The reference is `docs/scenario-format.md`; keep the two in step. Every struct here is plain
//! data with serde defaults, so that the *resolved* scenario (all defaults filled in) can be
//! written back out next to the results.

use crate::units::{RateSpec, SizeSpec, TimeSpec};
use serde::{Deserialize, Serialize};

/// A whole scenario file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub scenario: Meta,
    pub topology: TopologySpec,
    #[serde(default)]
    pub fabric: FabricSpec,
    /// One or more workloads; their flows are merged.
    pub workload: Vec<WorkloadSpec>,
    #[serde(default)]
    pub run: RunSpec,
    #[serde(default)]
    pub output: OutputSpec,
    /// `[check]`: what `fabricsim check` compares and with what tolerance (docs/regression.md).
    #[serde(default, skip_serializing_if = "crate::regression::CheckSpec::is_default")]
    pub check: crate::regression::CheckSpec,
}

/// `[scenario]`: name, seed and a description.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Master seed: routing hash seeds and workloads derive their streams from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_seed() -> u64 {
    1
}

/// A link's rate and one-way propagation delay. Either `delay` or `cable_m` (5 ns per metre
/// of fibre or copper, `models.md` §1.8) may be given; the default is 1 m (5 ns).
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub rate: RateSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<TimeSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cable_m: Option<u32>,
}

/// `[topology]`, selected by `kind`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// 3-tier k-ary fat-tree: k^3/4 hosts, 5k^2/4 switches.
    FatTree {
        k: u32,
        host_link: LinkSpec,
        fabric_link: LinkSpec,
    },
    /// 2-tier leaf-spine. Give either `spines` or `oversubscription` (e.g. "2:1").
    LeafSpine {
        leaves: u32,
        hosts_per_leaf: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spines: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        oversubscription: Option<String>,
        host_link: LinkSpec,
        fabric_link: LinkSpec,
    },
    /// Sized like a real cluster: host count and switch radix give the fewest tiers that fit.
    Sized {
        hosts: u32,
        radix: u32,
        host_link: LinkSpec,
        fabric_link: LinkSpec,
    },
    /// HGX H100: 8 GPUs, 4 NVSwitch chips, 18 NVLink 4 links per GPU, 8 NICs behind PCIe
    /// Gen5 switches (`docs/models/nvlink.md`). Hosts are the GPUs.
    HgxH100 {},
    /// HGX A100: 8 GPUs, 6 NVSwitch chips, 12 NVLink 3 links per GPU, PCIe Gen4.
    HgxA100 {},
    /// A full NVLink mesh of `gpus` (2..=8); `links_per_pair` default: as many as the GPU has.
    NvlinkMesh {
        gpus: u32,
        generation: NvlinkGenSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        links_per_pair: Option<u32>,
    },
    /// An NVLink ring of `gpus` (2..=8); `links_per_neighbour` default: half the GPU's links.
    NvlinkRing {
        gpus: u32,
        generation: NvlinkGenSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        links_per_neighbour: Option<u32>,
    },
    /// GB200 NVL72: 72 GPUs, 18 NVLink Switch chips, one NVLink 5 link from every GPU to each.
    Nvl72 {},
    /// A PCIe-only server: `gpus` GPUs (default 8), 2 per PCIe switch, x16 links of
    /// `generation`, two root complexes.
    PcieServer {
        generation: PcieGenSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gpus: Option<u32>,
    },
    /// `servers` GPU servers whose NICs attach to a `k`-ary fat-tree (partial when smaller),
    /// rail-optimised by default (NIC i of every server on rail i).
    Cluster {
        servers: u32,
        server: ServerKindSpec,
        k: u32,
        nic_link: LinkSpec,
        fabric_link: LinkSpec,
        #[serde(default = "yes")]
        rail_optimised: bool,
        /// Which NIC a GPU's traffic to another server leaves through: `own` (default: the
        /// NIC behind the GPU's own PCIe switch, its rail, as NCCL does) or `any` (every
        /// equally short path, ECMP: another GPU's NIC over NVLink too, NCCL's PXN).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gpu_nic: Option<String>,
    },
    /// Hosts and switches listed by hand.
    Custom {
        hosts: u32,
        #[serde(default)]
        switches: u32,
        /// Server devices `d0`, `d1`, ... by kind: `gpu_hub`, `nvswitch`, `pcie_switch`,
        /// `root_complex`, `nic` (default none).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        devices: Vec<String>,
        links: Vec<CustomLink>,
    },
}

fn yes() -> bool {
    true
}

/// An NVLink generation: `nvlink1` (P100) .. `nvlink5` (B200).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NvlinkGenSpec {
    Nvlink1,
    Nvlink2,
    Nvlink3,
    Nvlink4,
    Nvlink5,
}

/// A PCIe generation (x16 links).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PcieGenSpec {
    Gen3,
    Gen4,
    Gen5,
    Gen6,
}

/// The server of a cluster.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ServerKindSpec {
    HgxH100,
    HgxA100,
    PcieGen4,
    PcieGen5,
}

/// One link of a custom topology: endpoints are `"h3"` (host 3) or `"s1"` (switch 1).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CustomLink {
    pub a: String,
    pub b: String,
    pub rate: RateSpec,
    /// The link's kind: `network` (default: the fabric's own), `ethernet`, `infiniband`,
    /// `nvlink`, `pcie` or `internal` (it decides framing and link-level flow control).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<TimeSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cable_m: Option<u32>,
}

/// `[fabric]`: how packets are formed, switched and buffered.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FabricSpec {
    /// Which fabric model: `ethernet` (lossy, output-queued, tail drop) or `infiniband`
    /// (credit-based, input-buffered cut-through switches; see `[fabric.infiniband]`).
    #[serde(default = "default_fabric_kind")]
    pub kind: FabricKind,
    /// Largest payload per packet (InfiniBand: 256, 512, 1024, 2048 or 4096 B).
    #[serde(default = "default_mtu")]
    pub mtu: SizeSpec,
    /// Header and framing bytes per packet on the wire (default: Ethernet 82 B, RoCEv2/IPv4 +
    /// preamble/IFG; InfiniBand 26 B, LRH+BTH+ICRC+VCRC, +40 B with `infiniband.grh`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<SizeSpec>,
    /// Port-to-port latency of every switch (default: Ethernet 500 ns, InfiniBand 130 ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_latency: Option<TimeSpec>,
    /// How routes are chosen: `ecmp` (shortest paths, per-flow hash; default), `dmodk`
    /// (fat-tree D-mod-k), `adaptive` (least-loaded shortest-path port, per packet), `updown`
    /// (up*/down* paths, deadlock-free on any topology, per-flow hash among them).
    #[serde(default)]
    pub routing: RoutingSpec,
    /// Egress buffer model (Ethernet only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<BufferSpec>,
    /// Sender rate of every flow (fixed-rate congestion control); default: the NIC line rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_rate: Option<RateSpec>,
    /// InfiniBand parameters (only with `kind = "infiniband"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infiniband: Option<InfinibandSpec>,
    /// RoCEv2 parameters (only with `kind = "rocev2"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roce: Option<RoceSpec>,
    /// The base fabric's endpoints: loss recovery (only with `kind = "ethernet"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ethernet: Option<EthernetSpec>,
    /// GPU hubs and NVSwitch chips (any fabric kind with GPU servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crossbar: Option<CrossbarSpec>,
    /// Endpoint and device latencies (`[fabric.latency]`); every key optional, defaults by
    /// fabric kind and the servers' NVLink/PCIe generation (`docs/scenario-format.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySpec>,
}

/// `[fabric.latency]`: processing latencies of endpoints and devices, and the one-way latency
/// of NVLink and PCIe links. Each at most [`crate::build::MAX_DEVICE_LATENCY`].
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LatencySpec {
    /// NIC/HCA send processing (a host that is a network adapter, and a server's NIC from
    /// PCIe to the network).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_tx: Option<TimeSpec>,
    /// NIC/HCA receive processing (network to memory, or to the server's PCIe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_rx: Option<TimeSpec>,
    /// A GPU's NVLink/PCIe hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_hub: Option<TimeSpec>,
    /// NVSwitch chip traversal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvswitch: Option<TimeSpec>,
    /// PCIe switch, port to port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_switch: Option<TimeSpec>,
    /// CPU root complex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_complex: Option<TimeSpec>,
    /// An InfiniBand switch of a RoCEv2 run (a custom topology's InfiniBand links); an
    /// InfiniBand run's switches are `fabric.switch_latency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ib_switch: Option<TimeSpec>,
    /// One-way latency of an NVLink of the GPU topologies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_link: Option<TimeSpec>,
    /// One-way latency of a PCIe link of the GPU topologies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_link: Option<TimeSpec>,
}

/// `[fabric.crossbar]`: striping and internal speed-up of GPU hubs and NVSwitch chips
/// (`docs/models/nvlink.md`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CrossbarSpec {
    /// `interleaved` (default: per-flow round-robin over links to different chips,
    /// least-loaded over parallel links) or `least_loaded` (every choice by local load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub striping: Option<StripingSpec>,
    /// Internal speed-up, a multiple of the input link rate, 1.0..=10.0 (two decimals);
    /// default unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// Crossbar arbitration: `oldest` (default: the oldest packet whose input is free),
    /// `round_robin` (per-output pointer over the inputs) or `islip` (single-iteration iSLIP
    /// per output decision; `docs/models/nvlink.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arbitration: Option<String>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StripingSpec {
    Interleaved,
    LeastLoaded,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FabricKind {
    Ethernet,
    Infiniband,
    /// RoCEv2: shared-buffer switches, 8 priorities, PFC, ECN, DCQCN/TIMELY/HPCC (`[fabric.roce]`).
    Rocev2,
    /// NVLink inside a server: 256-B packets plus a 16-B header flit, flit credits,
    /// NVSwitch crossbars (`docs/models/nvlink.md`).
    Nvlink,
    /// A PCIe-only server: TLPs (MPS 256 B + 24 B overhead), 16-B data credits
    /// (`docs/models/pcie.md`).
    Pcie,
}

/// `[fabric.ethernet]`: the base fabric's transport (`docs/models/ethernet-base.md`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EthernetSpec {
    /// `go_back_n` (default: the endpoints run RoCEv2 queue pairs with every priority lossy,
    /// so a dropped packet is resent) or `none` (a dropped packet stays lost and its flow
    /// never finishes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_recovery: Option<LossRecovery>,
    /// Go-back-N retransmission timeout (default 320us, IRN's RTO_high).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go_back_n_timeout: Option<TimeSpec>,
    /// Go-back-N send window: `"bdp"` (default), `"unlimited"`, or a size such as `"64KiB"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go_back_n_window: Option<String>,
}

/// `[fabric.ethernet] loss_recovery`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LossRecovery {
    GoBackN,
    None,
}

/// `[fabric.roce]`: every field optional; defaults and sources in `docs/models/rocev2.md`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoceSpec {
    /// Shared packet memory per switch (default 512KiB per port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<SizeSpec>,
    /// Reserve per (ingress port, priority) (default 4KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve: Option<SizeSpec>,
    /// Headroom per (ingress port, lossless priority) (default: the bound for the switch's
    /// links, MTU and port-to-port latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headroom: Option<SizeSpec>,
    /// XON when shared use + this <= the dynamic threshold (default 3KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_offset: Option<SizeSpec>,
    /// Dynamic-threshold alpha = 2^-alpha_shift, -8..=16 (default 3: alpha = 1/8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha_shift: Option<i8>,
    /// Static XOFF threshold instead of the dynamic one: a lossless (ingress port, priority)
    /// pauses its upstream when its shared-buffer use reaches this (ns3-rdma's static mode,
    /// HPCC-sim's fixed threshold); not with `alpha_shift`. Lossy priorities keep the dynamic
    /// threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xoff_threshold: Option<SizeSpec>,
    /// Lossless priorities (PFC) (default `[3]`); an empty list turns PFC off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lossless: Option<Vec<u8>>,
    /// Lossy priorities (tail drop) (default [0, 6]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lossy: Option<Vec<u8>>,
    /// Quanta (512 bit times) a PAUSE carries, 1..=65535 (default 65535).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_quanta: Option<u16>,
    /// PAUSE refresh period while congested (default: half the pause time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc_refresh: Option<TimeSpec>,
    /// Pausing discipline: `pfc` (IEEE 802.1Qbb, per priority; default) or `global` (IEEE
    /// 802.3x link-level PAUSE: one congested lossless priority stops the whole link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<String>,
    /// Priorities served with strict priority before DWRR over the others (default `[6]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<Vec<u8>>,
    /// Priority of CNPs, ACKs and NACKs (default 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_priority: Option<u8>,
    /// Minimum interval between CNPs of one flow (default 50us; 4us with the firmware preset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnp_interval: Option<TimeSpec>,
    /// The receiver ACKs every packet (forced on by TIMELY, HPCC and go-back-N) (default false).
    #[serde(default)]
    pub acks: bool,
    /// Go-back-N loss recovery with this retransmission timeout (absent: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go_back_n_timeout: Option<TimeSpec>,
    /// Go-back-N send window: `"bdp"` (default: the path's bandwidth-delay product),
    /// `"unlimited"`, or a size such as `"64KiB"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go_back_n_window: Option<String>,
    /// Sample every flow's rate this often into `roce_rates.csv` (absent: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_sample: Option<TimeSpec>,
    /// At most this many rows in `roce_rates.csv` (default 1000000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_sample_max_rows: Option<u64>,
    /// PFC watchdog: a switch port's priority paused continuously this long is a storm; its
    /// queue and arrivals are dropped until the pause ends (absent: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc_watchdog: Option<TimeSpec>,
    /// Detect a cyclic pause dependency and end the run (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadlock_detection: Option<bool>,
    /// RoCE version: 2 (default: IPv4/UDP, routed, ECMP) or 1 (Ethernet + GRH, EtherType
    /// 0x8915: one layer-2 domain forwarding over its spanning tree; `docs/models/rocev1.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u8>,
    /// ECN marking on egress queues (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnSpec>,
    /// Sender congestion control (absent: none, line rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<RoceCcSpec>,
}

/// `[fabric.roce.ecn]`: a preset and/or explicit RED parameters (explicit ones win).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EcnSpec {
    /// `dcqcn_paper` (5KB/200KB/1%, the default), `hpcc_sim` (100KB/400KB per 25G, 20%), `onyx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<EcnPreset>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kmin: Option<SizeSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kmax: Option<SizeSpec>,
    /// Marking probability at Kmax, 0..=1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmax: Option<f64>,
    /// `enqueue` or `dequeue` (default dequeue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<MarkPointSpec>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EcnPreset {
    DcqcnPaper,
    HpccSim,
    Onyx,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MarkPointSpec {
    Enqueue,
    Dequeue,
}

/// `[fabric.roce.cc]`: the algorithm (`kind`), its `preset`, and any of the preset's
/// parameters set by hand (the hand-set ones win). One flat table rather than a `kind`-tagged
/// enum, so that a type error in any key is located at that key. Keys of the other algorithm
/// are refused at the key. Units, ranges, defaults per preset and sources:
/// `docs/models/rocev2.md`; the checks: `crate::cc_params`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RoceCcSpec {
    /// `dcqcn`, `timely` or `hpcc`.
    pub kind: CcKind,
    /// DCQCN: `paper` (default) or `firmware` (NVIDIA ConnectX defaults); TIMELY:
    /// `reference` (default) or `hpcc_sim`; HPCC: `paper` (default, maxStage 5) or
    /// `hpcc_sim` (maxStage 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<CcPreset>,
    /// DCQCN g, the gain of the α EWMA, a fraction in [1/65536, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub g: Option<f64>,
    /// DCQCN α before the first CNP, a fraction in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_alpha: Option<f64>,
    /// DCQCN K, the α-decay period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha_timer: Option<TimeSpec>,
    /// DCQCN T, the rate-increase timer period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_increase_timer: Option<TimeSpec>,
    /// DCQCN B, wire bytes per byte-counter event ("0B": no byte counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_counter: Option<SizeSpec>,
    /// DCQCN F, increase events of fast recovery before additive increase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_recovery: Option<u32>,
    /// DCQCN R_AI, the additive increase of the target rate; HPCC R_AI, the additive increase
    /// per update (at the slowest host link rate, scaled with a faster NIC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_ai: Option<RateSpec>,
    /// DCQCN R_HAI, the hyper increase of the target rate per hyper step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_hai: Option<RateSpec>,
    /// DCQCN, TIMELY and HPCC: the rate floor (R_min).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rate: Option<RateSpec>,
    /// DCQCN: a decrease keeps at least this percentage of the rate, 0..=100 (0: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_decrease_pct: Option<u32>,
    /// DCQCN: at most one decrease per this period ("0s": every CNP decreases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decrease_period: Option<TimeSpec>,
    /// DCQCN: when a CNP sets R_T to R_C: `always`, `after_increase`, `after_byte_increase`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clamp_target_rate: Option<ClampSpec>,
    /// DCQCN: halve T and B in hyper increase (the author's ns3 code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hyper_halves: Option<bool>,
    /// DCQCN: the notification point's minimum interval between CNPs of one flow (also
    /// settable as `[fabric.roce] cnp_interval`; not both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnp_interval: Option<TimeSpec>,
    /// TIMELY δ, the additive increment at the slowest host link rate (scaled with a faster NIC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<RateSpec>,
    /// TIMELY α, the EWMA weight of a new RTT difference, a fraction in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ewma_alpha: Option<f64>,
    /// TIMELY β, the multiplicative-decrease factor, a fraction in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// TIMELY T_low: below it, always increase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_low: Option<TimeSpec>,
    /// TIMELY T_high: above it, always decrease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_high: Option<TimeSpec>,
    /// TIMELY minRTT, the normaliser of the RTT gradient.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt: Option<TimeSpec>,
    /// TIMELY: consecutive non-positive gradients before hyper-active increase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hai_threshold: Option<u32>,
    /// TIMELY: acknowledged bytes per completion event ("0B": every ACK).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<SizeSpec>,
    /// HPCC η, the target utilisation, a fraction in (0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta: Option<f64>,
    /// HPCC maxStage: additive-increase updates in a row before a multiplicative one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_stage: Option<u32>,
    /// HPCC T, the base RTT: `"auto"` (default: the largest base RTT of the run's queue pairs)
    /// or a time such as `"10us"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_rtt: Option<String>,
    /// HPCC: enforce the window W = R·T/8 bytes in flight (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<bool>,
    /// HPCC: react to every ACK, not only once per RTT (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_react: Option<bool>,
}

impl RoceCcSpec {
    /// A table of `kind` with nothing else set.
    pub fn of(kind: CcKind) -> Self {
        RoceCcSpec {
            kind,
            preset: None,
            g: None,
            initial_alpha: None,
            alpha_timer: None,
            rate_increase_timer: None,
            byte_counter: None,
            fast_recovery: None,
            rate_ai: None,
            rate_hai: None,
            min_rate: None,
            min_decrease_pct: None,
            decrease_period: None,
            clamp_target_rate: None,
            hyper_halves: None,
            cnp_interval: None,
            delta: None,
            ewma_alpha: None,
            beta: None,
            t_low: None,
            t_high: None,
            min_rtt: None,
            hai_threshold: None,
            segment: None,
            eta: None,
            max_stage: None,
            base_rtt: None,
            window: None,
            fast_react: None,
        }
    }

    /// The keys given that belong to DCQCN, to TIMELY and to HPCC, in table order (a key of
    /// two algorithms, such as `rate_ai`, is in both lists; `min_rate` belongs to all three
    /// and is in none).
    pub fn algorithm_keys(&self) -> (Vec<&'static str>, Vec<&'static str>, Vec<&'static str>) {
        let pick = |v: &[(&'static str, bool)]| v.iter().filter(|(_, s)| *s).map(|(k, _)| *k).collect();
        let dcqcn = [
            ("g", self.g.is_some()),
            ("initial_alpha", self.initial_alpha.is_some()),
            ("alpha_timer", self.alpha_timer.is_some()),
            ("rate_increase_timer", self.rate_increase_timer.is_some()),
            ("byte_counter", self.byte_counter.is_some()),
            ("fast_recovery", self.fast_recovery.is_some()),
            ("rate_ai", self.rate_ai.is_some()),
            ("rate_hai", self.rate_hai.is_some()),
            ("min_decrease_pct", self.min_decrease_pct.is_some()),
            ("decrease_period", self.decrease_period.is_some()),
            ("clamp_target_rate", self.clamp_target_rate.is_some()),
            ("hyper_halves", self.hyper_halves.is_some()),
            ("cnp_interval", self.cnp_interval.is_some()),
        ];
        let timely = [
            ("delta", self.delta.is_some()),
            ("ewma_alpha", self.ewma_alpha.is_some()),
            ("beta", self.beta.is_some()),
            ("t_low", self.t_low.is_some()),
            ("t_high", self.t_high.is_some()),
            ("min_rtt", self.min_rtt.is_some()),
            ("hai_threshold", self.hai_threshold.is_some()),
            ("segment", self.segment.is_some()),
        ];
        let hpcc = [
            ("rate_ai", self.rate_ai.is_some()),
            ("eta", self.eta.is_some()),
            ("max_stage", self.max_stage.is_some()),
            ("base_rtt", self.base_rtt.is_some()),
            ("window", self.window.is_some()),
            ("fast_react", self.fast_react.is_some()),
        ];
        (pick(&dcqcn), pick(&timely), pick(&hpcc))
    }
}

/// `[fabric.roce.cc] kind`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    /// DCQCN (Zhu et al., SIGCOMM'15; models.md §2.5).
    Dcqcn,
    /// TIMELY (Mittal et al., SIGCOMM'15; models.md §2.6).
    Timely,
    /// HPCC (Li et al., SIGCOMM'19; models.md §2.6).
    Hpcc,
}

/// `[fabric.roce.cc] preset`: `paper`/`firmware` for DCQCN, `reference`/`hpcc_sim` for TIMELY,
/// `paper`/`hpcc_sim` for HPCC.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CcPreset {
    /// DCQCN paper (models.md §2.5.1); HPCC paper (maxStage 5, models.md §2.6).
    Paper,
    /// NVIDIA ConnectX firmware (models.md §2.5.2).
    Firmware,
    /// TIMELY reference code (models.md §2.6).
    Reference,
    /// HPCC-sim's TIMELY values, or HPCC-sim `run.py`'s HPCC (maxStage 0) (models.md §2.6).
    HpccSim,
}

/// `[fabric.roce.cc] clamp_target_rate`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ClampSpec {
    /// Every decrease (the paper; ns3-rdma `CLAMP_TARGET_RATE 1`).
    Always,
    /// Only if an increase event happened since the last CNP (firmware
    /// `CLAMP_TGT_RATE_AFTER_TIME_INC 1`).
    AfterIncrease,
    /// Only if a byte-counter event happened since the last CNP (ns3-rdma code default).
    AfterByteIncrease,
}

/// By hand, so that an unknown kind names the network kinds first and the in-server ones apart.
impl<'de> Deserialize<'de> for FabricKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = String::deserialize(d)?;
        match v.as_str() {
            "ethernet" => Ok(FabricKind::Ethernet),
            "infiniband" => Ok(FabricKind::Infiniband),
            "rocev2" => Ok(FabricKind::Rocev2),
            "nvlink" => Ok(FabricKind::Nvlink),
            "pcie" => Ok(FabricKind::Pcie),
            _ => Err(serde::de::Error::custom(format!(
                "unknown variant `{v}`, expected `ethernet`, `infiniband` or `rocev2` (networks), or `nvlink` or `pcie` (inside a GPU server)"
            ))),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RoutingSpec {
    #[default]
    Ecmp,
    Dmodk,
    Adaptive,
    Updown,
}

/// `[fabric.infiniband]`: virtual lanes, buffers, credits, arbitration, HOQLife, IB CC.
/// `[fabric.infiniband] credit_update`: the flow-control update policy of credit links.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreditUpdateSpec {
    /// `per_change` (default) or `coalesced`.
    pub policy: String,
    /// `coalesced`: credits (64-B blocks) that trigger an update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<u32>,
    /// `coalesced`: the longest a freed credit waits to be advertised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delay: Option<TimeSpec>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InfinibandSpec {
    /// Data VLs per port, 1..=15 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vls: Option<u8>,
    /// SL to VL table, 16 entries (default: SL i -> VL i mod vls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sl2vl: Option<Vec<u8>>,
    /// Input buffer per VL of every switch port (default 64KiB = 1024 credits); whole 64-B credits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vl_buffer: Option<SizeSpec>,
    /// Shared pool per switch input port on top of the static per-VL buffers (default 0 =
    /// none); whole 64-B credits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_pool: Option<SizeSpec>,
    /// Receive buffer per VL of every HCA (default 64KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hca_vl_buffer: Option<SizeSpec>,
    /// Switch input discipline: `voq` (default: virtual output queues per input and VL) or
    /// `fifo` (one FIFO per input and VL, head-of-line blocking; `docs/models/infiniband.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_queues: Option<String>,
    /// At most one flow-control packet per VL per this interval (default 0: every change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credit_update_interval: Option<TimeSpec>,
    /// Coalesced credit returns instead (`models/credit/coalesced.rs`): advertise when
    /// `blocks` credits have freed or `max_delay` after the last update, e.g.
    /// `{ policy = "coalesced", blocks = 260, max_delay = "2us" }`; `{ policy = "per_change" }`
    /// is the default (with `credit_update_interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credit_update: Option<CreditUpdateSpec>,
    /// Add the 40-B Global Route Header to every packet (default false).
    #[serde(default)]
    pub grh: bool,
    /// Encoded HOQLife (4.096us x 2^value; > 19 = off) of switch ports towards switches
    /// (default 18) and towards HCAs (default 16), as opensm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hoq_life_switch: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hoq_life_leaf: Option<u8>,
    /// VL arbitration tables (default: opensm's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vl_arbitration: Option<VlArbSpec>,
    /// IB congestion control (Annex A10); absent = off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<IbCcSpec>,
}

/// `[fabric.infiniband.vl_arbitration]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VlArbSpec {
    #[serde(default)]
    pub high: Vec<VlArbEntrySpec>,
    #[serde(default)]
    pub low: Vec<VlArbEntrySpec>,
    /// LimitOfHighPriority in 4096-B units (0 = one packet, 255 = unlimited).
    #[serde(default)]
    pub high_limit: u8,
}

/// One table entry: `{ vl = 1, weight = 4 }` (weight in 64-B units, 0..=255).
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VlArbEntrySpec {
    pub vl: u8,
    pub weight: u8,
}

/// `[fabric.infiniband.cc]`: every field optional, defaults in `docs/models/infiniband.md`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IbCcSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marking_rate: Option<u16>,
    /// Packets smaller than this are never marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_size: Option<SizeSpec>,
    #[serde(default)]
    pub victim_mask: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ccti_increase: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ccti_limit: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ccti_min: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ccti_timer: Option<TimeSpec>,
    /// The congestion-control table: 16-bit entries `shift << 14 | multiplier` (entry 0 = no
    /// delay), at least `ccti_limit + 1` of them (default: 128 entries, entry i = multiplier
    /// i, shift 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cct: Option<Vec<u16>>,
}

fn default_fabric_kind() -> FabricKind {
    FabricKind::Ethernet
}
fn default_mtu() -> SizeSpec {
    SizeSpec::new(sim_core::Bytes(fabrics::engine::DEFAULT_MTU_BYTES as u64))
}

impl Default for FabricSpec {
    fn default() -> Self {
        FabricSpec {
            kind: default_fabric_kind(),
            mtu: default_mtu(),
            header: None,
            switch_latency: None,
            routing: RoutingSpec::default(),
            buffer: None,
            sender_rate: None,
            infiniband: None,
            roce: None,
            ethernet: None,
            crossbar: None,
            latency: None,
        }
    }
}

/// `[fabric.buffer]`, selected by `kind`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BufferSpec {
    /// A private buffer of `size` per egress port; overflow is dropped.
    PerPortTailDrop { size: SizeSpec },
}

impl Default for BufferSpec {
    fn default() -> Self {
        BufferSpec::PerPortTailDrop {
            size: SizeSpec::new(sim_core::Bytes(fabrics::engine::DEFAULT_PORT_BUFFER_BYTES)),
        }
    }
}

/// One `[[workload]]`, selected by `kind`. Host numbers are host indices `0..hosts`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Flows listed by hand.
    Flows {
        flows: Vec<FlowEntry>,
        /// Group name in results (default `workload<i>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Traffic class: InfiniBand service level (0..=15) or Ethernet priority (0..=7);
        /// default: RoCEv2's lowest lossless priority, else 0.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        class: Option<u8>,
    },
    /// Every host sends one flow of `size` to a distinct host (a random derangement).
    Permutation {
        size: SizeSpec,
        #[serde(default = "zero_time")]
        start: TimeSpec,
        /// Group name in results (default `workload<i>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Traffic class: InfiniBand service level (0..=15) or Ethernet priority (0..=7);
        /// default: RoCEv2's lowest lossless priority, else 0.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        class: Option<u8>,
    },
    /// N-to-1: `senders` (a list of hosts) or `n_senders` (the hosts after `receiver`,
    /// wrapping around) each send `size` to `receiver`.
    Incast {
        receiver: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        senders: Option<Vec<u32>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        n_senders: Option<u32>,
        size: SizeSpec,
        #[serde(default = "zero_time")]
        start: TimeSpec,
        /// Group name in results (default `workload<i>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Traffic class: InfiniBand service level (0..=15) or Ethernet priority (0..=7);
        /// default: RoCEv2's lowest lossless priority, else 0.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        class: Option<u8>,
    },
    /// A closed loop of requests and responses: each client (`clients`, or the `n_clients`
    /// hosts after `server`, wrapping around) sends `request_size` to `server`; once it is
    /// delivered the server answers with `response_size` (none when absent); once that is
    /// delivered the client waits `think_time` and sends its next request, `requests` times.
    ClosedLoop {
        server: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clients: Option<Vec<u32>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        n_clients: Option<u32>,
        request_size: SizeSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_size: Option<SizeSpec>,
        requests: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        think_time: Option<TimeSpec>,
        #[serde(default = "zero_time")]
        start: TimeSpec,
        /// Group name in results (default `workload<i>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Traffic class: InfiniBand service level (0..=15) or Ethernet priority (0..=7);
        /// default: RoCEv2's lowest lossless priority, else 0.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        class: Option<u8>,
    },
    /// Poisson flow arrivals at every host at `load` of its link rate, sizes drawn from a CDF
    /// file (path relative to the scenario file), uniform random destinations, for `duration`.
    Poisson {
        load: f64,
        cdf: String,
        duration: TimeSpec,
        /// Group name in results (default `workload<i>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Traffic class: InfiniBand service level (0..=15) or Ethernet priority (0..=7);
        /// default: RoCEv2's lowest lossless priority, else 0.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        class: Option<u8>,
    },
    /// A collective over GPUs, run `iterations` times back to back at `size`, or at every
    /// size of `sizes` (a sweep, in the order listed), like nccl-tests.
    Collective {
        op: CollectiveOp,
        /// Default: `direct` for all_to_all, `ring` otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        algorithm: Option<CollectiveAlgo>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<SizeSpec>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sizes: Option<Vec<SizeSpec>>,
        /// A count `n` (ranks 0..n are GPUs 0..n) or a list of GPU indices (rank r is the
        /// r-th; rings follow the list's order); default: every GPU.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ranks: Option<RanksSpec>,
        #[serde(default = "one")]
        chunks: u32,
        #[serde(default = "one")]
        channels: u32,
        /// Ring algorithms: `same` (default: every channel follows the rank order) or
        /// `rotated` (channel c enters each server at its local rank c, so the channels
        /// cross between servers through every GPU's NIC).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        channel_rings: Option<ChannelRings>,
        #[serde(default = "one")]
        iterations: u32,
        /// Broadcast root rank (default 0).
        #[serde(default)]
        root: u32,
        /// Local reduction throughput (default: free).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reduce_rate: Option<RateSpec>,
        #[serde(default = "zero_time")]
        start: TimeSpec,
        /// Group name in results (default `workload<i>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        class: Option<u8>,
    },
    /// A data-parallel training step (PyTorch DDP): a compute phase, gradients cut into
    /// buckets, each bucket AllReduced over the ranks, overlapping the compute or after it
    /// (`docs/collectives.md`).
    TrainingStep {
        /// Compute phase per step; the gradients become ready uniformly over it.
        compute: TimeSpec,
        /// Gradient bytes per step.
        gradient_size: SizeSpec,
        /// Bucket size (default 25MiB, PyTorch DDP's `bucket_cap_mb`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bucket_size: Option<SizeSpec>,
        /// Start each bucket's AllReduce when its gradients are ready (default true).
        #[serde(default = "yes")]
        overlap: bool,
        #[serde(default = "one")]
        steps: u32,
        /// AllReduce algorithm (default `ring`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        algorithm: Option<CollectiveAlgo>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ranks: Option<u32>,
        #[serde(default = "one")]
        chunks: u32,
        #[serde(default = "one")]
        channels: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reduce_rate: Option<RateSpec>,
        #[serde(default = "zero_time")]
        start: TimeSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        class: Option<u8>,
    },
}

impl WorkloadSpec {
    /// The entry's traffic class, to fill in.
    fn class_mut(&mut self) -> &mut Option<u8> {
        match self {
            WorkloadSpec::Flows { class, .. }
            | WorkloadSpec::Permutation { class, .. }
            | WorkloadSpec::Incast { class, .. }
            | WorkloadSpec::ClosedLoop { class, .. }
            | WorkloadSpec::Poisson { class, .. }
            | WorkloadSpec::Collective { class, .. }
            | WorkloadSpec::TrainingStep { class, .. } => class,
        }
    }

    /// The entry's traffic class as given (`None`: the fabric's default,
    /// [`Scenario::default_class`]).
    pub fn class_spec(&self) -> Option<u8> {
        match self {
            WorkloadSpec::Flows { class, .. }
            | WorkloadSpec::Permutation { class, .. }
            | WorkloadSpec::Incast { class, .. }
            | WorkloadSpec::ClosedLoop { class, .. }
            | WorkloadSpec::Poisson { class, .. }
            | WorkloadSpec::Collective { class, .. }
            | WorkloadSpec::TrainingStep { class, .. } => *class,
        }
    }

    /// The entry's `name`, if given.
    pub fn name(&self) -> Option<&str> {
        match self {
            WorkloadSpec::Flows { name, .. }
            | WorkloadSpec::Permutation { name, .. }
            | WorkloadSpec::Incast { name, .. }
            | WorkloadSpec::ClosedLoop { name, .. }
            | WorkloadSpec::Poisson { name, .. }
            | WorkloadSpec::Collective { name, .. }
            | WorkloadSpec::TrainingStep { name, .. } => name.as_deref(),
        }
    }
}

impl Scenario {
    /// The traffic class of a workload that names none: on RoCEv2 the lowest lossless
    /// priority (`[fabric.roce] lossless`, default `[3]`), so that a workload is lossless unless
    /// asked otherwise (a lossy class drops, and recovers only with go-back-N); the lowest
    /// lossy priority when no priority is lossless; 0 on the other fabrics.
    pub fn default_class(&self) -> u8 {
        if self.fabric.kind != FabricKind::Rocev2 {
            return 0;
        }
        let defaults = fabrics::engine::RoceConfig::default();
        let mask = |list: Option<&Vec<u8>>, default: u8| match list {
            Some(l) => l.iter().filter(|&&p| p < 8).fold(0u8, |m, &p| m | 1 << p),
            None => default,
        };
        let roce = self.fabric.roce.as_ref();
        let lossless = mask(roce.and_then(|r| r.lossless.as_ref()), defaults.lossless_mask);
        let lossy = mask(roce.and_then(|r| r.lossy.as_ref()), defaults.lossy_mask);
        match (lossless, lossy) {
            (0, 0) => 0,
            (0, m) | (m, _) => m.trailing_zeros() as u8,
        }
    }

    /// The traffic class of workload entry `w`: its own, or [`Scenario::default_class`].
    pub fn class_of(&self, w: &WorkloadSpec) -> u8 {
        w.class_spec().unwrap_or_else(|| self.default_class())
    }

    /// Writes every workload's effective class into it (the resolved scenario).
    pub fn resolve_classes(&mut self) {
        let default = self.default_class();
        for w in &mut self.workload {
            w.class_mut().get_or_insert(default);
        }
    }
}

/// `ranks` of a collective: how many (GPUs 0..n), or which GPUs in ring order.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum RanksSpec {
    Count(u32),
    List(Vec<u32>),
}

impl<'de> Deserialize<'de> for RanksSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RanksSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a rank count such as 8, or a list of GPU indices such as [0, 2, 4, 6]")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RanksSpec, E> {
                u32::try_from(v)
                    .map(RanksSpec::Count)
                    .map_err(|_| E::custom(format!("expected a rank count in 0..=4294967295, got {v}")))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RanksSpec, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<RanksSpec, A::Error> {
                let mut v = Vec::new();
                while let Some(g) = a.next_element::<u32>()? {
                    v.push(g);
                }
                Ok(RanksSpec::List(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// `channel_rings` of a ring collective.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ChannelRings {
    Same,
    Rotated,
}

/// A collective operation (nccl-tests names without the `_perf`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveOp {
    AllReduce,
    ReduceScatter,
    AllGather,
    Broadcast,
    AllToAll,
}

/// A collective algorithm (`docs/collectives.md`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveAlgo {
    Ring,
    Tree,
    HalvingDoubling,
    Nvls,
    Direct,
    Hierarchical,
}

fn one() -> u32 {
    1
}

fn zero_time() -> TimeSpec {
    TimeSpec::new(sim_core::Duration::ZERO)
}

/// One hand-listed flow.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowEntry {
    pub src: u32,
    pub dst: u32,
    pub size: SizeSpec,
    #[serde(default = "zero_time")]
    pub start: TimeSpec,
}

/// `[run]`: limits. A run that hits one ends cleanly with partial results and says so.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Simulated time limit.
    #[serde(default = "default_end_time")]
    pub end_time: TimeSpec,
    /// Event budget.
    #[serde(default = "default_max_events")]
    pub max_events: u64,
    /// Wall-clock budget in seconds.
    #[serde(default = "default_wall_clock_s")]
    pub wall_clock_s: u64,
    /// Largest memory the route tables may take, estimated before they are built (default
    /// 1GiB, `build::DEFAULT_MEMORY_LIMIT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<SizeSpec>,
}

fn default_end_time() -> TimeSpec {
    TimeSpec::new(sim_core::Duration::from_ms(100))
}
fn default_max_events() -> u64 {
    2_000_000_000
}
fn default_wall_clock_s() -> u64 {
    3600
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            end_time: default_end_time(),
            max_events: default_max_events(),
            wall_clock_s: default_wall_clock_s(),
            memory_limit: None,
        }
    }
}

/// `[output]`: what the report shows.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Rows of the congested-ports table.
    #[serde(default = "default_hotspots")]
    pub hotspots: u32,
    /// Upper edges of the flow-size buckets of the FCT slowdown table (strictly increasing;
    /// a last bucket holds the flows above the last edge). Absent: the HPCC paper's buckets
    /// of about 5% of the completed flows each (`fct_report.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowdown_size_edges: Option<Vec<SizeSpec>>,
    /// Window of the time series (`timeseries_ports.csv`, `timeseries_flows.csv`); absent:
    /// no time series (`timeseries.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<TimeSpec>,
    /// Which ports the time series records: `hotspots` (the top `hotspots` of the ranking) or
    /// `all`; `sample_port_ids` overrides it with a list.
    #[serde(default)]
    pub sample_ports: SamplePorts,
    /// Port ids (as in `ports.csv`) to record instead of `sample_ports`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_port_ids: Option<Vec<u32>>,
    /// Bound on the rows of both time-series files together; sampling stops there.
    #[serde(default = "default_sample_max_rows")]
    pub sample_max_rows: u64,
    /// File format of the time series: `parquet` (default) or `csv`. Left out of
    /// `scenario.resolved.toml` at its default, so existing inputs resolve as before.
    #[serde(default, skip_serializing_if = "SampleFormat::is_default")]
    pub sample_format: SampleFormat,
    /// `[output] pcap`: pcap files of chosen ports (`pcap.rs`); absent: no capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcap: Option<crate::pcap::PcapSpec>,
    /// Write `trace.json` (Chrome Trace Event Format for ui.perfetto.dev: collective steps and
    /// training steps per GPU; `trace.rs`). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trace: bool,
    /// Most slice and flow events of `trace.json` (default `trace::MAX_TRACE_EVENTS`; left
    /// out of `scenario.resolved.toml` at its default, so existing inputs resolve as before).
    #[serde(
        default = "default_trace_max_events",
        skip_serializing_if = "is_default_trace_max_events"
    )]
    pub trace_max_events: u64,
}

fn default_trace_max_events() -> u64 {
    crate::trace::MAX_TRACE_EVENTS
}

fn is_default_trace_max_events(n: &u64) -> bool {
    *n == crate::trace::MAX_TRACE_EVENTS
}

/// `[output] sample_ports`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SamplePorts {
    #[default]
    Hotspots,
    All,
}

/// `[output] sample_format`: the time series' file format.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SampleFormat {
    /// `timeseries_ports.parquet`, `timeseries_flows.parquet` (`columns.rs`).
    #[default]
    Parquet,
    /// `timeseries_ports.csv`, `timeseries_flows.csv`.
    Csv,
}

impl SampleFormat {
    fn is_default(&self) -> bool {
        *self == SampleFormat::default()
    }
}

fn default_sample_max_rows() -> u64 {
    crate::timeseries::DEFAULT_MAX_ROWS
}

fn default_hotspots() -> u32 {
    10
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            hotspots: default_hotspots(),
            slowdown_size_edges: None,
            sample: None,
            sample_ports: SamplePorts::default(),
            sample_port_ids: None,
            sample_max_rows: default_sample_max_rows(),
            sample_format: SampleFormat::default(),
            pcap: None,
            trace: false,
            trace_max_events: default_trace_max_events(),
        }
    }
}

/// The accepted names of enum `T`, as serde lists them (`` one of `a`, `b`, `c` ``): read from
/// the error for a name that no enum has, so the list never drifts from the types.
fn names_of<T: serde::de::DeserializeOwned>(tagged: bool) -> String {
    #[derive(Deserialize)]
    struct Probe<T> {
        #[allow(dead_code, reason = "only the error matters")]
        v: T,
    }
    let message = if tagged {
        toml::from_str::<T>("kind = \"\\u0001\"")
            .err()
            .map(|e| e.message().to_owned())
    } else {
        toml::from_str::<Probe<T>>("v = \"\\u0001\"")
            .err()
            .map(|e| e.message().to_owned())
    };
    let message = message.unwrap_or_default();
    let list = message.split_once("expected ").map_or("", |(_, l)| l.trim());
    list.strip_prefix("one of ").unwrap_or(list).to_owned()
}

/// The `kind` names of the internally tagged enum named `rust_name` (for error messages).
pub fn kind_names(rust_name: &str) -> Option<String> {
    Some(match rust_name {
        "TopologySpec" => names_of::<TopologySpec>(true),
        "WorkloadSpec" => names_of::<WorkloadSpec>(true),
        "BufferSpec" => names_of::<BufferSpec>(true),
        _ => return None,
    })
}

/// The accepted names of the enum-valued key or `kind`-selected table at `field` (a path such
/// as `fabric.routing` or `workload[2]`), for error messages.
pub fn names_at(field: &str) -> Option<String> {
    let mut path = String::with_capacity(field.len());
    let mut in_index = false;
    for c in field.chars() {
        match c {
            '[' => in_index = true,
            ']' => in_index = false,
            c if !in_index => path.push(c),
            _ => {}
        }
    }
    let path = path.strip_suffix(".kind").unwrap_or(&path);
    Some(match path {
        "topology" => names_of::<TopologySpec>(true),
        "workload" => names_of::<WorkloadSpec>(true),
        "fabric.buffer" => names_of::<BufferSpec>(true),
        "fabric.roce.cc" => names_of::<CcKind>(false),
        "fabric.roce.cc.preset" => names_of::<CcPreset>(false),
        "fabric.routing" => names_of::<RoutingSpec>(false),
        "fabric.crossbar.striping" => names_of::<StripingSpec>(false),
        "fabric.roce.ecn.preset" => names_of::<EcnPreset>(false),
        "fabric.roce.ecn.point" => names_of::<MarkPointSpec>(false),
        "fabric.roce.cc.clamp_target_rate" => names_of::<ClampSpec>(false),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_names_come_from_the_types() {
        assert_eq!(
            names_at("fabric.routing").unwrap(),
            "`ecmp`, `dmodk`, `adaptive`, `updown`"
        );
        assert!(
            kind_names("TopologySpec")
                .unwrap()
                .starts_with("`fat_tree`, `leaf_spine`")
        );
        assert_eq!(kind_names("BufferSpec").unwrap(), "`per_port_tail_drop`");
        assert!(names_at("workload[3].kind").unwrap().contains("`poisson`"));
        assert_eq!(names_at("fabric.mtu"), None);
    }
}
