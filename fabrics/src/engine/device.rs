//! Which model runs each node and each link: chosen per node by its kind and per link by its
//! kind, once, when the fabric is built. The engine core dispatches on these tags and never on
//! a fabric kind, so one run can compose NVSwitch crossbars and PCIe switches (credit devices
//! on credit links) inside servers with RoCEv2 switches (PFC links) between them.
//!
//! | node kind | Ethernet, no transport | Ethernet | InfiniBand run | RoCEv2 run | RoCEv2 cluster | Ethernet cluster |
//! |---|---|---|---|---|---|---|
//! | endpoint (host, GPU) | `OqHost` | `RoceHost` | `CreditHost` | `RoceHost` | `RoceHost` | `RoceHost` |
//! | network switch | `OqSwitch` | `OqSwitch` | `CreditSwitch` | `RoceSwitch` | `RoceSwitch` | `OqSwitch` |
//! | GPU hub, NVSwitch, PCIe switch, root complex, NIC | `OqSwitch` | `OqSwitch` | `CreditSwitch` | `RoceSwitch` | `CreditSwitch` | `CreditSwitch` |
//! | network switch with an InfiniBand link | - | - | `CreditSwitch` | - | `CreditSwitch` | - |
//!
//! "Ethernet" is the base fabric with its loss recovery ([`EngineConfig::lossy_network`] set
//! together with [`EngineConfig::roce`] holding the transport: every priority lossy, no PFC,
//! go-back-N): the endpoints run the RoCEv2 queue pairs (ACK, NACK, retransmission timer,
//! `engine/roce/qp.rs`) over the output-queued switches, so a drop is recovered, not lost.
//! "Ethernet, no transport" (`[fabric.ethernet] loss_recovery = "none"`) keeps the plain NIC:
//! a dropped packet stays lost and its flow never finishes.
//!
//! "RoCEv2 cluster" is a RoCEv2 run whose [`EngineConfig::ib`] holds the servers' credit layer
//! (set by the scenario loader for a `cluster` on `rocev2`, and for a custom topology with
//! server devices or InfiniBand links): the servers' internals keep their credit-based links
//! and cut-through devices, the network its PFC/ECN switches, and the NIC is where one hands
//! over to the other (credits on its PCIe side, PFC on its network side).
//!
//! "Ethernet cluster" is a run whose `ib` holds the servers' credit layer and whose
//! [`EngineConfig::lossy_network`] is set (a `cluster`, or a custom topology with server
//! devices, on `ethernet`): the servers are the same credit devices, the network the base
//! fabric's output-queued switches with tail drop, and the NIC hands over with no flow
//! control on its network side: PCIe credits hold the GPU back, the network drops, and a NIC
//! whose receive buffer is full drops what the network still sends it. The GPUs' queue pairs
//! recover the drops by go-back-N (with `loss_recovery = "none"` they are `CreditHost`s and
//! a drop stays lost).
//!
//! In a RoCEv2 cluster a network switch with an InfiniBand link is an InfiniBand switch
//! (`CreditSwitch`: per-VL input buffers, VL arbitration, cut-through), so a custom topology
//! can join an InfiniBand island to an Ethernet one. A switch with both kinds of link is the
//! gateway between them: credits on its InfiniBand links, PFC (it pauses and obeys PAUSE) on
//! its Ethernet links, exactly as a NIC hands over between PCIe and Ethernet. The transport
//! stays the run's (RoCEv2 queue pairs end to end); the gateway re-frames, it does not
//! terminate connections.

use super::{EngineConfig, Ev, Fabric};
use crate::topology::{LinkKind, NodeKind};
use sim_core::{EventQueue, Scheduler};

/// The hooks of one device model, each model in its own file (`impl DeviceModel for X`,
/// where `X` is named as its [`Device`] variant); the engine core reaches them only through
/// [`Device`]'s dispatch below, one match arm per variant and hook. A model's state lives in
/// the fabric's per-port and per-node arrays (struct-of-arrays, for the hot path), so a hook
/// takes the fabric; it touches its own node's ports and puts packets on links
/// (`Fabric::transmit`), never another node's state.
pub(super) trait DeviceModel {
    /// A packet came out of the pipe of port `p` into this device (the node at `p`'s far end,
    /// when its head is in for a cut-through device, all of it for the others).
    fn arrive<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32, id: u32);
    /// Port `p` of this device may be able to send now (idle, credits back, PAUSE over, a
    /// packet queued): pick what goes next and transmit it.
    fn kick<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32);
    /// Port `p` of this device finished serializing (its `TxDone` event fired).
    fn tx_done<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32);
    /// Endpoints: flow `i` starts at host `h` (its bytes are ready to send).
    fn flow_started<Q: EventQueue<Ev>>(_f: &mut Fabric, _s: &mut Scheduler<Ev, Q>, _h: u32, _i: u32) {
        unreachable!("flows start only at endpoints")
    }
    /// Endpoints: host `h`'s NIC wake-up fired (a paced flow may send again).
    fn nic_wake<Q: EventQueue<Ev>>(_f: &mut Fabric, _s: &mut Scheduler<Ev, Q>, _h: u32) {
        unreachable!("only endpoints pace")
    }
}

/// The hooks of the device of each variant.
macro_rules! dispatch {
    ($device:expr, $hook:ident ( $($arg:expr),* )) => {
        match $device {
            Device::OqHost => <super::nic::OqHost as DeviceModel>::$hook($($arg),*),
            Device::OqSwitch => <super::oq_switch::OqSwitch as DeviceModel>::$hook($($arg),*),
            Device::CreditHost => <super::ib::CreditHost as DeviceModel>::$hook($($arg),*),
            Device::CreditSwitch => <super::ib::CreditSwitch as DeviceModel>::$hook($($arg),*),
            Device::RoceHost => <super::roce::RoceHost as DeviceModel>::$hook($($arg),*),
            Device::RoceSwitch => <super::roce::RoceSwitch as DeviceModel>::$hook($($arg),*),
        }
    };
}

impl Device {
    #[inline]
    pub(super) fn arrive<Q: EventQueue<Ev>>(self, f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        dispatch!(self, arrive(f, s, p, id))
    }
    #[inline]
    pub(super) fn kick<Q: EventQueue<Ev>>(self, f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        dispatch!(self, kick(f, s, p))
    }
    #[inline]
    pub(super) fn tx_done<Q: EventQueue<Ev>>(self, f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        dispatch!(self, tx_done(f, s, p))
    }
    #[inline]
    pub(super) fn flow_started<Q: EventQueue<Ev>>(self, f: &mut Fabric, s: &mut Scheduler<Ev, Q>, h: u32, i: u32) {
        dispatch!(self, flow_started(f, s, h, i))
    }
    #[inline]
    pub(super) fn nic_wake<Q: EventQueue<Ev>>(self, f: &mut Fabric, s: &mut Scheduler<Ev, Q>, h: u32) {
        dispatch!(self, nic_wake(f, s, h))
    }
}

/// The switching discipline of one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// An endpoint of the base fabric: NIC segmentation, round-robin, pacing (`engine/nic.rs`).
    OqHost,
    /// Output-queued, store-and-forward Ethernet switch with a per-port buffer model (the base
    /// fabric, `engine/mod.rs`).
    OqSwitch,
    /// An endpoint on credit links: InfiniBand HCA with per-VL send queues and IB CC, or a GPU
    /// doing load/store over NVLink/PCIe (`engine/ib/`).
    CreditHost,
    /// An input-buffered, cut-through device with per-lane credits: InfiniBand switch, NVSwitch
    /// chip, GPU hub, PCIe switch, root complex, NIC (`engine/ib/`).
    CreditSwitch,
    /// A RoCEv2 endpoint: queue pairs with DCQCN/TIMELY/HPCC, CNP/ACK/NACK, go-back-N
    /// (`engine/roce/`).
    RoceHost,
    /// Shared-buffer Ethernet switch with 8 priorities, PFC, ECN, strict priority + DWRR
    /// (`engine/roce/`).
    RoceSwitch,
}

impl Device {
    /// The device of a node of `kind` in a run configured by `cfg` (module table);
    /// `infiniband_link`: the node has an InfiniBand link (an InfiniBand switch or gateway in
    /// a RoCEv2 run with a credit layer).
    pub fn of(kind: NodeKind, infiniband_link: bool, cfg: &EngineConfig) -> Device {
        let host = matches!(kind, NodeKind::Host);
        let server_internal = !host && !matches!(kind, NodeKind::Switch { .. });
        match (cfg.ib.is_some(), cfg.roce.is_some()) {
            (false, false) if host => Device::OqHost,
            (false, false) => Device::OqSwitch,
            (true, false) if host => Device::CreditHost,
            (_, _) if cfg.lossy_network && !host && !server_internal => Device::OqSwitch,
            (true, false) => Device::CreditSwitch,
            (_, true) if host => Device::RoceHost,
            (true, true) if server_internal || infiniband_link => Device::CreditSwitch,
            (_, true) => Device::RoceSwitch,
        }
    }

    /// An endpoint (it delivers packets addressed to it and forwards none).
    #[inline]
    pub fn is_host(self) -> bool {
        matches!(self, Device::OqHost | Device::CreditHost | Device::RoceHost)
    }

    /// The device starts forwarding a packet once its head is in (cut-through); the others
    /// take it whole first (store-and-forward, and endpoints).
    #[inline]
    pub fn cut_through(self) -> bool {
        matches!(self, Device::CreditSwitch)
    }
}

/// The link-level flow control that governs one direction of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkFc {
    /// None: the sender sends when its port is free (the base fabric; its buffer model may drop).
    None,
    /// Credits per lane returned by flow-control packets (InfiniBand 64-B blocks, NVLink flits,
    /// PCIe data credits: [`crate::ib::IbConfig::credit_unit_bytes`]).
    Credit,
    /// IEEE 802.1Qbb PFC per priority: the receiver pauses the sender (`models/pfc/`).
    Pfc,
}

impl LinkFc {
    /// The flow control of a link of `kind` between devices `a` and `b`: credits where both ends
    /// are credit devices, or on a credit-based link (a server's NVLink, PCIe and internal
    /// attachments, InfiniBand) when the run has a credit layer; PFC on the other links of a
    /// RoCEv2 run; none otherwise. Symmetric in `a` and `b`, so both directions of a link
    /// have the same (the arrival paths read it on the sending port).
    pub fn of(kind: LinkKind, a: Device, b: Device, cfg: &EngineConfig) -> LinkFc {
        let credit = |d: Device| matches!(d, Device::CreditHost | Device::CreditSwitch);
        let credit_link = matches!(
            kind,
            LinkKind::NvLink | LinkKind::Pcie | LinkKind::Internal | LinkKind::InfiniBand
        );
        if cfg.ib.is_some() && ((credit(a) && credit(b)) || credit_link) {
            LinkFc::Credit
        } else if cfg.roce.is_some() && !cfg.lossy_network {
            LinkFc::Pfc
        } else {
            LinkFc::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::IbConfig;

    /// Both directions of a link get the same flow control, whatever the link and its ends:
    /// the arrival paths read it on the sending port rather than on the receiving one.
    #[test]
    fn link_flow_control_is_the_same_both_ways() {
        use LinkKind::*;
        let kinds = [Network, Ethernet, InfiniBand, NvLink, Pcie, Internal];
        let devices = [
            Device::OqHost,
            Device::OqSwitch,
            Device::CreditHost,
            Device::CreditSwitch,
            Device::RoceHost,
            Device::RoceSwitch,
        ];
        let mut seen = [false; 3];
        for (ib, roce, lossy) in [
            (false, false, false),
            (true, false, false),
            (false, true, false),
            (true, true, false),
            (true, true, true),
        ] {
            let cfg = EngineConfig {
                ib: ib.then(IbConfig::default),
                roce: roce.then(super::super::RoceConfig::default),
                lossy_network: lossy,
                ..Default::default()
            };
            for kind in kinds {
                for a in devices {
                    for b in devices {
                        let fc = LinkFc::of(kind, a, b, &cfg);
                        assert_eq!(fc, LinkFc::of(kind, b, a, &cfg), "{kind:?} between {a:?} and {b:?}");
                        seen[fc as usize] = true;
                    }
                }
            }
        }
        assert_eq!(seen, [true; 3], "every discipline occurs");
    }
}
