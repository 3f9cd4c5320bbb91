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
    /// Hosts and switches listed by hand.
    Custom {
        hosts: u32,
        #[serde(default)]
        switches: u32,
        links: Vec<CustomLink>,
    },
}

/// One link of a custom topology: endpoints are `"h3"` (host 3) or `"s1"` (switch 1).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CustomLink {
    pub a: String,
    pub b: String,
    pub rate: RateSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<TimeSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cable_m: Option<u32>,
}

/// `[fabric]`: how packets are formed, switched and buffered.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FabricSpec {
    /// Which fabric model: today `ethernet` (lossy, output-queued, tail drop).
    #[serde(default = "default_fabric_kind")]
    pub kind: FabricKind,
    /// Largest payload per packet.
    #[serde(default = "default_mtu")]
    pub mtu: SizeSpec,
    /// Header and framing bytes per packet on the wire (default 82 B: RoCEv2/IPv4 + preamble/IFG).
    #[serde(default = "default_header")]
    pub header: SizeSpec,
    /// Port-to-port latency of every switch.
    #[serde(default = "default_switch_latency")]
    pub switch_latency: TimeSpec,
    /// Egress buffer model.
    #[serde(default)]
    pub buffer: BufferSpec,
    /// Sender rate of every flow (fixed-rate congestion control); default: the NIC line rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_rate: Option<RateSpec>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FabricKind {
    Ethernet,
}

fn default_fabric_kind() -> FabricKind {
    FabricKind::Ethernet
}
fn default_mtu() -> SizeSpec {
    SizeSpec::new(sim_core::Bytes(fabrics::engine::DEFAULT_MTU_BYTES as u64))
}
fn default_header() -> SizeSpec {
    SizeSpec::new(sim_core::Bytes(fabrics::engine::ETHERNET_ROCE_HEADER_BYTES as u64))
}
fn default_switch_latency() -> TimeSpec {
    TimeSpec::new(fabrics::engine::DEFAULT_SWITCH_LATENCY)
}

impl Default for FabricSpec {
    fn default() -> Self {
        FabricSpec {
            kind: default_fabric_kind(),
            mtu: default_mtu(),
            header: default_header(),
            switch_latency: default_switch_latency(),
            buffer: BufferSpec::default(),
            sender_rate: None,
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
        /// Traffic class: InfiniBand service level or Ethernet priority, 0..=15.
        #[serde(default)]
        class: u8,
    },
    /// Every host sends one flow of `size` to a distinct host (a random derangement).
    Permutation {
        size: SizeSpec,
        #[serde(default = "zero_time")]
        start: TimeSpec,
        /// Group name in results (default `workload<i>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Traffic class: InfiniBand service level or Ethernet priority, 0..=15.
        #[serde(default)]
        class: u8,
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
        /// Traffic class: InfiniBand service level or Ethernet priority, 0..=15.
        #[serde(default)]
        class: u8,
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
        /// Traffic class: InfiniBand service level or Ethernet priority, 0..=15.
        #[serde(default)]
        class: u8,
    },
}

impl WorkloadSpec {
    /// The entry's `name` (if given) and traffic `class`.
    pub fn group(&self) -> (Option<&str>, u8) {
        match self {
            WorkloadSpec::Flows { name, class, .. }
            | WorkloadSpec::Permutation { name, class, .. }
            | WorkloadSpec::Incast { name, class, .. }
            | WorkloadSpec::Poisson { name, class, .. } => (name.as_deref(), *class),
        }
    }
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
}

fn default_hotspots() -> u32 {
    10
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            hotspots: default_hotspots(),
        }
    }
}
