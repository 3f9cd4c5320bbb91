//! Engine configuration: plain data, filled in by the scenario loader.

use crate::ib::IbConfig;
use crate::models::{AnyBuffer, AnyFlowControl, AnyMarking, PerPortTailDrop};
use sim_core::{BitsPerSec, Duration};

/// Per-packet overhead of RoCEv2 over IPv4 without VLAN tag, on the wire: Ethernet 14 +
/// IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 + preamble/SFD 8 + inter-frame gap 12 = 82 B
/// (`shared/reference/models.md` §2.1; IEEE 802.3 framing, IBA Annex A17 for RoCEv2).
pub const ETHERNET_ROCE_HEADER_BYTES: u32 = 82;

/// Default payload MTU: 4096 B, the largest RoCEv2/IB MTU (IBA vol. 1 §7.7.8 MTU values).
pub const DEFAULT_MTU_BYTES: u32 = 4096;

/// Default port-to-port latency of an Ethernet switch ASIC: 500 ns, inside the 300-600 ns
/// range recommended in `models.md` §1.5 (no primary figure is published; an assumption).
pub const DEFAULT_SWITCH_LATENCY: Duration = Duration::from_ns(500);

/// Default egress buffer per port: 512 KiB (a 32 MB shared-buffer ASIC with 64 ports split
/// evenly; HPCC-sim uses 32 MB per switch for 100G hosts, `models.md` §1.5). An assumption.
pub const DEFAULT_PORT_BUFFER_BYTES: u64 = 512 * 1024;

/// Largest payload MTU accepted (jumbo frames).
pub const MAX_MTU_BYTES: u32 = 65_536;

/// How a switch chooses among the equal-cost next hops to a destination.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoutePick {
    /// Per-flow hash with a per-switch seed (ECMP; IB min-hop with LMC-style spreading).
    #[default]
    Ecmp,
    /// Fat-tree D-mod-k (opensm `ftree`): at a tier-`t` switch the up-port for destination
    /// `d` is `⌊d / W_t⌋ mod w_t`, `W_t` = product of the up-radices of the tiers below
    /// (`models.md` §1.7). Deterministic per destination.
    DModK,
    /// Per packet, the least-loaded eligible port (bytes waiting for it plus, on InfiniBand,
    /// bytes whose credits are outstanding); ties broken by the flow hash. Packets of a flow
    /// may arrive out of order, which the endpoints accept (NVIDIA IB adaptive routing).
    Adaptive,
}

/// How GPU hubs and NVSwitch chips stripe packets over their equal-cost links.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Striping {
    /// Next hops through different nodes (a hub's links to several NVSwitch chips): per-flow
    /// round-robin by packet index, oblivious to load (NVLink interleaves addresses over the
    /// links); parallel links to one node: least-loaded. Every chip then carries exactly its
    /// share of links of every flow, which a fully loaded crossbar needs (all-to-all).
    #[default]
    Interleaved,
    /// Every choice least-loaded (bytes queued + credits outstanding), ties by flow hash: the
    /// model before the interleaving; it knows nothing of the congestion at the far chip and
    /// leaves an 8-GPU all-to-all at 74 % of the crossbar (`docs/validation.md`).
    LeastLoaded,
}

/// The crossbar of GPU hubs and NVSwitch chips (virtual output queues, `engine/ib/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crossbar {
    pub striping: Striping,
    /// Internal speed-up in percent of an input link's rate: an input moves a packet into the
    /// crossbar in `wire / (rate x speedup)`, one packet at a time, so with 100 an input feeds
    /// one output at a time at line rate. `None` = unlimited (an input may feed any number of
    /// outputs at once: an output-queued switch). Default `None` (assumption: no public
    /// figure for NVSwitch; at 100 % and more the all-to-all is unchanged, `docs/validation.md`).
    pub speedup_percent: Option<u32>,
    /// Which packet a free crossbar output takes from its virtual output queue. Default
    /// [`XbarArbitration::OldestFirst`].
    pub arbitration: XbarArbitration,
}

impl Default for Crossbar {
    fn default() -> Self {
        Crossbar {
            striping: Striping::Interleaved,
            speedup_percent: None,
            arbitration: XbarArbitration::OldestFirst,
        }
    }
}

/// Crossbar arbitration of GPU hubs and NVSwitch chips: which packet of its virtual output
/// queue a free output takes (`engine/ib/` module docs, `docs/models/nvlink.md`). "Eligible"
/// means its input is free to move a packet into the crossbar (always, with unlimited
/// speed-up). Only the first [`crate::models::crossbar::oldest::SCAN_MAX`] packets of a queue are looked at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XbarArbitration {
    /// The oldest eligible packet (greedy output-first matching; with unlimited speed-up the
    /// oldest packet). The model before arbitration became configurable.
    #[default]
    OldestFirst,
    /// Round-robin over the node's input ports: each output keeps a pointer and takes the
    /// oldest eligible packet from the first input at or after it, then moves the pointer one
    /// past that input.
    RoundRobin,
    /// iSLIP (McKeown, IEEE/ACM ToN 1999) applied per output decision: the output grants
    /// round-robin from its grant pointer among inputs with a packet for it; an input accepts
    /// if it is free (one output decides at a time, so there is no competing grant); a
    /// refused output grants on to the next input (later iterations) and takes the same packet
    /// round-robin would. Pointers move (grant: one past the input; the input's accept: one
    /// past the output) only when the first grant was accepted, iSLIP's desynchronising
    /// rule. Same as round-robin with unlimited speed-up.
    Islip,
    /// Longest queue first: the free input with the most packets waiting for the output
    /// (`models/crossbar/lqf.rs`).
    LongestQueueFirst,
}

/// Smallest and largest crossbar speed-up accepted, percent.
pub const CROSSBAR_SPEEDUP_PERCENT_RANGE: std::ops::RangeInclusive<u32> = 100..=1000;

/// Port-to-port latency of the forwarding devices inside GPU servers (node kinds other than
/// network switches; network switches use [`EngineConfig::switch_latency`]). Defaults and
/// their sources: `docs/models/nvlink.md`, `docs/models/pcie.md`, `docs/models/infiniband.md`;
/// the scenario loader sets the PCIe switch from the server's PCIe generation and the NIC from
/// the network's kind (`[fabric.latency]`, `docs/scenario-format.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLatency {
    /// A GPU's NVLink/PCIe hub: 0 (its latency is folded into the NVLink latency).
    pub gpu_hub: Duration,
    /// NVSwitch traversal: 200 ns (`nvlink::DEFAULT_SWITCH_LATENCY`, an assumption).
    pub nvswitch: Duration,
    /// PCIe switch (cut-through): Gen5's 115 ns ([`crate::pcie::PcieGen::switch_latency`]:
    /// Broadcom PEX89000; Gen4 105 ns, Gen3 150 ns).
    pub pcie_switch: Duration,
    /// CPU root complex: 200 ns, an assumption.
    pub root_complex: Duration,
    /// A server NIC taking a packet from PCIe to the network (its send processing):
    /// [`IB_HCA_LATENCY`]`.tx` (250 ns).
    pub nic_tx: Duration,
    /// A server NIC taking a packet from the network to PCIe (its receive processing):
    /// [`IB_HCA_LATENCY`]`.rx` (200 ns).
    pub nic_rx: Duration,
    /// An InfiniBand switch in a RoCEv2 run (a custom topology's InfiniBand island, `device.rs`):
    /// [`crate::ib::DEFAULT_IB_SWITCH_LATENCY`] (130 ns, "sub-130 ns" Quantum HDR, `models.md` §1.5). In an
    /// InfiniBand run the switches use [`EngineConfig::switch_latency`].
    pub ib_switch: Duration,
}

impl Default for DeviceLatency {
    fn default() -> Self {
        DeviceLatency {
            gpu_hub: Duration::ZERO,
            nvswitch: crate::nvlink::DEFAULT_SWITCH_LATENCY,
            pcie_switch: crate::pcie::PcieGen::Gen5.switch_latency(),
            root_complex: Duration::from_ns(200),
            nic_tx: IB_HCA_LATENCY.tx,
            nic_rx: IB_HCA_LATENCY.rx,
            ib_switch: crate::ib::DEFAULT_IB_SWITCH_LATENCY,
        }
    }
}

/// The processing latency of a network endpoint (an InfiniBand HCA or an Ethernet NIC) on
/// the send side (a message is posted -> its first packet may go on the wire) and on the
/// receive side (a packet's last byte is in -> it is in memory). Both are pipeline latencies:
/// they delay every packet by the same amount and never the throughput.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostLatency {
    pub tx: Duration,
    pub rx: Duration,
}

/// InfiniBand HCA processing: 250 ns send, 200 ns receive (450 ns both). Calibrated, an
/// assumption in its split: NVIDIA quotes "sub-600 ns latency" for the ConnectX-6 VPI adapter
/// (user manual; back to back, so an upper bound on send + receive processing), and perftest
/// `ib_write_lat` over one HDR/NDR switch is about 0.6 us; 450 ns of endpoint processing plus
/// a 130-ns switch and short cables gives 0.60 us over one switch, 0.47 us back to back. The
/// send side is the larger part (doorbell and WQE written by the CPU, packetization; perftest's
/// small messages are inline, so no DMA read of the payload, whose PCIe round trip is not in
/// this figure), the receive side a posted DMA write.
pub const IB_HCA_LATENCY: HostLatency = HostLatency {
    tx: Duration::from_ns(250),
    rx: Duration::from_ns(200),
};

/// Ethernet (RoCEv2) NIC processing: 400 ns send, 350 ns receive (750 ns both). Calibrated,
/// an assumption in its split: NVIDIA quotes "sub 0.8 us" for the ConnectX-6 EN adapter
/// against "sub-600 ns" for the same ASIC on InfiniBand; the Ethernet path adds the MAC/PCS and
/// RS-FEC, here 150 ns per side over [`IB_HCA_LATENCY`].
pub const ETHERNET_NIC_LATENCY: HostLatency = HostLatency {
    tx: Duration::from_ns(400),
    rx: Duration::from_ns(350),
};

/// How the engine runs a fabric.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Largest payload per packet; messages are segmented into packets of this size.
    pub mtu_bytes: u32,
    /// Per-packet header and framing bytes added to the payload on the wire.
    pub header_bytes: u32,
    /// Port-to-port latency of every switch (cut-through models override it).
    pub switch_latency: Duration,
    /// Sender rate of every flow (fixed-rate congestion control); `None` = the NIC line rate.
    pub sender_rate: Option<BitsPerSec>,
    pub buffer: AnyBuffer,
    pub flow_control: AnyFlowControl,
    pub marking: AnyMarking,
    /// Master seed (ECMP hash seeds are derived from it).
    pub seed: u64,
    pub route_pick: RoutePick,
    /// `Some`: an InfiniBand fabric (credit-based, input-buffered cut-through switches; the
    /// Ethernet buffer, flow-control and marking fields above are then unused).
    pub ib: Option<IbConfig>,
    /// `Some`: a RoCEv2 fabric (shared-buffer switches with 8 priorities, PFC, ECN,
    /// CNP/ACK, sender congestion control; see `engine/roce/`). The `buffer`,
    /// `flow_control` and `marking` fields above are then unused.
    pub roce: Option<super::RoceConfig>,
    /// Latencies of GPU-server devices (hubs, NVSwitch, PCIe switches, root complexes, NICs).
    pub device_latency: DeviceLatency,
    /// Processing of the endpoints that are themselves network adapters (hosts attached by a
    /// network, InfiniBand or Ethernet link; GPUs, attached by NVLink/PCIe, have none): the
    /// send side delays a flow's first packet, the receive side its deliveries. Default zero
    /// (ideal endpoints, as the exact-timing tests of fabrics built in code assume); the
    /// scenario loader sets [`IB_HCA_LATENCY`] or [`ETHERNET_NIC_LATENCY`].
    pub host_latency: HostLatency,
    /// Striping and speed-up of GPU hubs and NVSwitch chips.
    pub crossbar: Crossbar,
    /// The network switches are the base fabric's output-queued Ethernet switches, and the
    /// network links have no link-level flow control, although [`EngineConfig::ib`] may hold
    /// a credit layer (the servers' own, a GPU cluster on `ethernet`) and
    /// [`EngineConfig::roce`] the endpoints' transport (every priority lossy, go-back-N:
    /// the base fabric's loss recovery). `buffer` then applies to those switches
    /// (`engine/device.rs`).
    pub lossy_network: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            mtu_bytes: DEFAULT_MTU_BYTES,
            header_bytes: ETHERNET_ROCE_HEADER_BYTES,
            switch_latency: DEFAULT_SWITCH_LATENCY,
            sender_rate: None,
            buffer: AnyBuffer::PerPortTailDrop(PerPortTailDrop {
                buffer_bytes: DEFAULT_PORT_BUFFER_BYTES,
            }),
            flow_control: AnyFlowControl::None,
            marking: AnyMarking::None,
            seed: 1,
            route_pick: RoutePick::Ecmp,
            ib: None,
            roce: None,
            device_latency: DeviceLatency::default(),
            host_latency: HostLatency::default(),
            crossbar: Crossbar::default(),
            lossy_network: false,
        }
    }
}

impl EngineConfig {
    /// NVLink inside a server (`docs/models/nvlink.md`): packets of one 16-byte header flit plus
    /// up to 16 data flits (256 B), the credit path with 16-byte flit credits
    /// ([`crate::nvlink::credit_layer`]). GPU hubs and NVSwitch chips spray packets over their
    /// parallel links whatever `route_pick` says.
    pub fn nvlink() -> EngineConfig {
        EngineConfig {
            mtu_bytes: crate::nvlink::MAX_PAYLOAD_BYTES as u32,
            header_bytes: crate::nvlink::FLIT_BYTES as u32,
            switch_latency: crate::ib::DEFAULT_IB_SWITCH_LATENCY,
            ib: Some(crate::nvlink::credit_layer(crate::nvlink::DEFAULT_CREDITS_FLITS)),
            ..EngineConfig::default()
        }
    }

    /// A PCIe-only server (`docs/models/pcie.md`): TLPs of up to `link.mps_bytes` payload plus
    /// the TLP overhead (framing, header, LCRC), posted-write data credits of 16 bytes
    /// ([`crate::pcie::credit_layer`]), PCIe switches of the link's generation.
    pub fn pcie(link: &crate::pcie::PcieLink) -> EngineConfig {
        EngineConfig {
            mtu_bytes: link.mps_bytes,
            header_bytes: link.tlp_overhead_bytes(),
            switch_latency: crate::ib::DEFAULT_IB_SWITCH_LATENCY,
            ib: Some(crate::pcie::credit_layer(crate::pcie::DEFAULT_DATA_CREDITS)),
            device_latency: DeviceLatency {
                pcie_switch: link.generation.switch_latency(),
                ..DeviceLatency::default()
            },
            ..EngineConfig::default()
        }
    }
}
