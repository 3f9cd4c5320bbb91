//! InfiniBand mechanics in the engine: per-VL input buffers with credit-based link-level flow
//! control, cut-through switches with input arbitration, HCAs with per-VL send queues.
//!
//! ## Credits (IBA vol. 1 §7.9.4)
//! Every link direction and VL has a sender counter `fctbs` (64-byte blocks sent) and a
//! receiver counter `abr` (blocks received). The receiver advertises `fccl = abr + free
//! blocks of its VL buffer` in a 6-byte flow-control packet that crosses the reverse link
//! through the receiver's own transmitter (between packets, ahead of data). The sender may
//! start a packet of `b` blocks only when `fccl - fctbs >= b` (at most 2048 blocks of window).
//! The counters here are absolute (`u64`), which is the modulo-4096 arithmetic of the spec
//! without wrap-around. At time zero every sender knows its receiver's empty buffer (the
//! link-up initialisation exchange). A switch frees input-buffer space when the packet's last
//! byte has left through the output port; an HCA drains into host memory at once, so it
//! returns credits as soon as a packet is in. Losslessness is asserted: a packet arriving at
//! a VL buffer without room panics (a credit-accounting bug, never a user error).
//!
//! ## Switch (input-buffered, cut-through)
//! A packet joins its input port's VL FIFO when its head has arrived and the switch's
//! port-to-port latency has passed; it is routed then. Only the head of each input VL FIFO
//! competes for its output (so a blocked head blocks the packets behind it: head-of-line
//! blocking, as in the hardware). An idle output serves pending flow-control packets first,
//! then picks a VL by VL arbitration among VLs whose first requesting input has a packet that
//! credits fully cover, then the input round-robin (inputs queue up per output VL in the order
//! their heads arrived and a served input goes to the back). Cut-through: the output may start
//! before the tail is in, but cannot finish before it (`done = max(start + serialization,
//! tail arrival)`).
//!
//! ## Virtual output queues (GPU hubs and NVSwitch chips)
//! Ports of nodes flagged `voq` (GPU hubs and NVSwitch chips, the NVLink crossbars) keep the
//! same per-input credit accounting but queue a packet per output VL on arrival, in arrival
//! order: every packet competes for its output at once, so there is no head-of-line blocking
//! between outputs (a hub feeding 18 NVLinks from one input would otherwise serve them one
//! at a time). The output takes the oldest packet (oldest-first arbitration, which for a
//! crossbar with enough internal speed-up is what iSLIP converges to under uniform load);
//! HOQLife does not apply (NVLink has none). With a finite internal speed-up
//! (`EngineConfig::crossbar`) an input moves one packet at a time into the crossbar, taking
//! `wire / (link rate x speed-up)`; an output then takes the oldest packet whose input is free
//! (a greedy output-first matching; the first
//! [`crate::models::crossbar::oldest::SCAN_MAX`] packets are looked at) and,
//! finding none, retries on its port timer when the earliest of those inputs frees up.
//!
//! `Crossbar::arbitration` chooses among the packets an output may take ("eligible": its
//! input is free, always so with unlimited speed-up). `OldestFirst` (default): the above.
//! `RoundRobin`: each output keeps a grant pointer over its node's input ports (node-local
//! index) and takes the oldest eligible packet of the first input at or after it, then moves
//! the pointer one past that input. `Islip`: McKeown's iSLIP (IEEE/ACM ToN 1999) mapped onto
//! this asynchronous engine, where outputs free up one at a time instead of in slots. Each
//! output decision is one iSLIP round for that output alone: request = every input with a
//! packet in the output's queue (busy or not); grant = the first requester at or after the
//! output's grant pointer; accept = the input accepts if it is free (the accept pointer would
//! arbitrate among several outputs granting the same input in one slot, which cannot happen
//! with one output deciding at a time, so it is kept but decides nothing); a refused grant
//! goes on to the next requester, as iSLIP's later iterations match unmatched outputs to
//! unmatched inputs, so the packet taken is the one round-robin takes. The grant pointer
//! moves one past the input, and that input's accept pointer one past the output, only when
//! the first grant was accepted (iSLIP updates pointers in the first iteration only: the
//! rule that desynchronises the outputs' pointers). Not modelled: slots (decisions are not
//! synchronised, so no simultaneous grants, no input choosing among outputs), a bounded
//! number of iterations (an output always reaches a free requester if there is one), and
//! request/grant/accept latency. Round-robin and iSLIP look at the first `models::crossbar::round_robin::SCAN_MAX`
//! packets of a queue.
//!
//! ## HOQLife
//! A head packet that has waited longer than the output port's HOQLife (4.096 µs × 2^value,
//! opensm defaults ≈ 268 ms towards CAs, ≈ 1.07 s between switches) is dropped: the only loss.
//!
//! ## IB congestion control (Annex A10, optional)
//! At an output port-VL whose waiting data reaches the threshold, leaving packets get FECN
//! (every `marking_rate + 1`-th); a port that had to wait for credits (a victim) marks only
//! with `victim_mask`. The destination HCA answers a FECN packet with a congestion
//! notification packet (BECN) to the source, whose flow then slows down (`ib/cc.rs`).

use super::device::DeviceModel;
use super::{CtrlFrame, Device, Ev, Fabric, LinkFc, Packet, PacketKind, XbarArbitration};
use crate::ib::cc::MarkCounter;
use crate::ib::vlarb::VlArbiter;
use crate::ib::{IbConfig, hoq_life};
use crate::models::CongestionControl;
use crate::models::crossbar::{AnyArbiter, CrossbarArbiter, Output, Waiting};
use sim_core::{Bytes, Duration, EventQueue, Origin, Scheduler, SimTime, TimeWeightedGauge, serialization_time};
use std::collections::{BTreeMap, VecDeque};

mod credit_link;
mod crossbar;
mod hca;
mod partition;
mod prefetch;
mod switch;

pub(in crate::engine) use hca::CreditHost;
pub(in crate::engine) use partition::{VoqHeld, cause_token};
pub(in crate::engine) use switch::CreditSwitch;

/// The majority vote of one input port-VL of a `voq` node (Boyer-Moore over arrivals and
/// departures): `out` leads while `votes` > 0, and a stall names it without counting the
/// queues; `packets` of the input wait in the node's queues in all, which lets a count stop
/// early (`Fabric::voq_count_cause`) and names no cause at 0.
#[derive(Clone, Copy, Debug)]
struct VoqVote {
    out: u32,
    votes: u32,
    packets: u32,
}

impl Default for VoqVote {
    fn default() -> Self {
        VoqVote {
            out: u32::MAX,
            votes: 0,
            packets: 0,
        }
    }
}

/// Flow-control update state of one ingress port-VL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FcState {
    Idle,
    /// Waiting for `min_interval` since the last update to pass.
    Deferred,
    /// Queued on the port's transmitter.
    Queued,
}

/// The sender's records of one egress port-VL (a lane): its credits, the bytes waiting for
/// it, its credit stalls and its FECN counter. One cache line, for the reason of [`RxLane`]:
/// a departure reads and writes most of them.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct TxLane {
    /// Blocks sent since link-up (FCTBS, IBA vol. 1 §7.9.4).
    fctbs: u64,
    /// The credit limit the receiver last advertised (FCCL).
    fccl: u64,
    /// Bytes in input buffers of this switch routed to this output VL (its "queue").
    out_bytes: u64,
    /// Credit stalls (one record: a departure reads whether one is open, and closing one
    /// touches all of it).
    stall: StallRec,
    /// IB CC's FECN marking counter (`ib/cc.rs`).
    mark: MarkCounter,
}

impl TxLane {
    fn new(advertised: u64) -> TxLane {
        TxLane {
            fctbs: 0,
            fccl: advertised,
            out_bytes: 0,
            stall: StallRec::default(),
            mark: MarkCounter::default(),
        }
    }
}

/// What a departure from one port reads and writes: its VL arbiter, the flow-control packets
/// queued on its transmitter, where the packet it is sending came from, and its timer
/// (HOQLife deadlines and deferred credit updates; a crossbar output re-arms it for every new
/// head). One cache line, for the reason of [`RxLane`].
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct IbOut {
    arb: VlArbiter,
    /// VLs whose flow-control packet is queued on this port's transmitter.
    ctrl: VlFifo,
    /// The input buffer (port, vl, blocks) the packet now on this output came from.
    tx_release: Option<(u32, u8, u32)>,
    /// When the port's timer (`Ev::PortTimer`) is armed for (`SimTime::MAX`: not armed).
    timer_at: SimTime,
}

impl Default for IbOut {
    fn default() -> Self {
        IbOut {
            arb: VlArbiter::default(),
            ctrl: VlFifo::default(),
            tx_release: None,
            timer_at: SimTime::MAX,
        }
    }
}

/// The receiver's records of one ingress port-VL (a lane): its buffer, the credits it has
/// advertised and when it next sends a flow-control packet, its head's HOQLife deadline. One
/// cache line: a packet joining or leaving the lane and the update after read most of them,
/// and at k=32 (50,000 lanes) each of the eight arrays they were in missed on its own.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct RxLane {
    /// Blocks received since link-up (ABR, IBA vol. 1 §7.9.4).
    abr: u64,
    /// The FCCL the lane last advertised (at link-up: its buffer, capped at the window).
    fc_last_fccl: u64,
    fc_last_sent: SimTime,
    /// When a `Deferred` update is due (the policy's `Update::At`).
    fc_due: SimTime,
    /// When the head packet's HOQLife runs out (`SimTime::MAX`: no head, or no limit).
    head_deadline: SimTime,
    free_blocks: u32,
    /// Shared-pool blocks lent to the lane (part of its `free_blocks` promise).
    pool_lent: u32,
    fc_state: FcState,
}

impl RxLane {
    fn new(own_blocks: u32, max_credit_window: u64) -> RxLane {
        RxLane {
            abr: 0,
            fc_last_fccl: (own_blocks as u64).min(max_credit_window),
            fc_last_sent: SimTime::ZERO,
            fc_due: SimTime::MAX,
            head_deadline: SimTime::MAX,
            free_blocks: own_blocks,
            pool_lent: 0,
            fc_state: FcState::Idle,
        }
    }
}

/// Counters of one port in an InfiniBand fabric.
///
/// What every hop updates (the input buffer's gauge, as a packet joins it and leaves it, and
/// the flow-control packets the same port then sends) shares the first cache line: unaligned,
/// the 48-byte gauge of half the ports spanned two lines, and at k=32 each update missed on
/// both.
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
pub struct IbPortStats {
    /// Bytes in this port's input (receive) buffers, all VLs, over time.
    pub input_buffer_bytes: TimeWeightedGauge,
    /// Flow-control packets sent.
    pub fc_packets_tx: u64,
    /// Packets dropped at this output port by HOQLife.
    pub hoq_drops: u64,
    /// Packets that left this port with FECN set.
    pub fecn_marked: u64,
}

/// Whole-fabric InfiniBand counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IbTotals {
    pub fc_packets: u64,
    pub hoq_drops: u64,
    pub fecn_marked: u64,
    /// Congestion notifications sent by destinations and received by sources.
    pub becn_sent: u64,
    pub becn_received: u64,
}

/// A packet in a virtual output queue and the input port it came in on: the crossbar's
/// arbiters and the congestion tree's cause ask for the inputs of many queued packets, and
/// each would be a packet read (a miss on a large fabric).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct VoqEntry {
    pub(super) id: u32,
    pub(super) ingress: u32,
}

/// Flow-control packets on their way to one sender port (`credit_link.rs`), where they are
/// taken in lazily ([`Port::fc_in_lazy`]): their arrival is not an event, the sender takes
/// them in when it next looks at its credits, and an arrival is an event only while the
/// sender waits for it. Kept in the [`CtrlLink`] of the link they travel on, beside its pipe.
#[derive(Clone, Copy, Debug)]
pub(in crate::engine) struct FcInbound {
    /// Arrival of the first one not yet taken in (`SimTime::MAX`: none on the way).
    pub(super) first_at: SimTime,
    /// A `CtrlArrive` is scheduled for the one arriving then (`SimTime::MAX`: none).
    pub(super) event_at: SimTime,
    /// Those arriving at or after this time must wake the sender's device (`SimTime::MAX`:
    /// none; its last look found nothing an arrival could let go).
    pub(super) wake_from: SimTime,
}

impl Default for FcInbound {
    fn default() -> Self {
        FcInbound {
            first_at: SimTime::MAX,
            event_at: SimTime::MAX,
            wake_from: SimTime::MAX,
        }
    }
}

/// The credit stalls of one egress port-VL: the open one, the total, and the time of the
/// congestion-tree edge it last added to, kept here while its stalls keep naming the same
/// downstream port (a permutation at k=32 closes millions of stalls, and adding each to the
/// edge map was a tree walk of cache misses, 3 % of the run). The map gets an edge's time
/// when the lane's cause changes; [`IbState::congestion_edges`] adds the ones kept here.
#[derive(Clone, Copy, Debug)]
struct StallRec {
    /// Start of the open stall (`SimTime::MAX`: none).
    since: SimTime,
    /// Closed stalls, in total.
    total_ps: u64,
    /// Closed stalls of edge (this port, `edge_cause`) not yet in the edge map.
    edge_ps: u64,
    /// The port the open stall's downstream head waits for (`u32::MAX`: none, or an HCA).
    cause: u32,
    /// The downstream port of the edge `edge_ps` belongs to ([`NO_EDGE`]: none yet).
    edge_cause: u32,
}

/// [`StallRec::edge_cause`] before the lane's first stall closes (a cause is a port id or
/// `u32::MAX`, and port ids stay below 2^24, the scheduler's limit on origins).
const NO_EDGE: u32 = u32::MAX - 1;

impl Default for StallRec {
    fn default() -> Self {
        StallRec {
            since: SimTime::MAX,
            total_ps: 0,
            edge_ps: 0,
            cause: u32::MAX,
            edge_cause: NO_EDGE,
        }
    }
}

/// The VLs whose flow-control packet waits for a port's transmitter, in the order they were
/// queued. A VL is queued at most once (`FcState::Queued`), so there are at most
/// [`crate::ib::MAX_DATA_VLS`] (15): 4-bit entries of one word, the count in its top 4 bits,
/// held in the per-port array itself. As a `VecDeque` per port, reading the front entry's
/// heap slot was a sixth of an InfiniBand switch departure's time at k=32 (session 14).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct VlFifo(u64);

impl VlFifo {
    const COUNT_SHIFT: u32 = 60;

    #[inline]
    fn len(self) -> u32 {
        (self.0 >> Self::COUNT_SHIFT) as u32
    }

    #[inline]
    pub(super) fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Appends `vl` (below 16); at most 15 entries.
    #[inline]
    pub(super) fn push_back(&mut self, vl: u8) {
        let n = self.len();
        assert!(n < 15 && vl < 16, "flow-control FIFO: VL {vl} after {n} entries");
        let entries = self.0 & ((1 << Self::COUNT_SHIFT) - 1);
        self.0 = entries | ((vl as u64) << (4 * n)) | (((n + 1) as u64) << Self::COUNT_SHIFT);
    }

    /// The first VL queued, if any.
    #[inline]
    pub(super) fn front(self) -> Option<u8> {
        (!self.is_empty()).then_some((self.0 & 0xF) as u8)
    }

    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<u8> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let entries = self.0 & ((1 << Self::COUNT_SHIFT) - 1);
        self.0 = (entries >> 4) | (((n - 1) as u64) << Self::COUNT_SHIFT);
        Some((entries & 0xF) as u8)
    }
}

/// Classes of `IbState::hoq_class`.
const HOQ_OFF: u8 = 0;
const HOQ_TO_CA: u8 = 1;
const HOQ_TO_SWITCH: u8 = 2;

/// The InfiniBand state of a fabric; arrays indexed by port, or by `port * n_vls + vl`.
pub struct IbState {
    pub cfg: IbConfig,
    nv: usize,
    // Sender side of every egress port-VL.
    tx: Vec<TxLane>,
    /// Input ports whose head packet waits for this output VL, in arrival order.
    requests: Vec<VecDeque<u32>>,
    // Receiver side of every ingress port-VL (a port id is also its node's ingress for the
    // reverse direction of the same link).
    inq: Vec<VecDeque<u32>>,
    /// Per output port-VL of a `voq` node: packets waiting for it, oldest first, with the
    /// input each came in on.
    voq: Vec<VecDeque<VoqEntry>>,
    /// Per port: it belongs to a `voq` node (module docs).
    voq_port: Vec<bool>,
    /// Per input port-VL of a `voq` node, for congestion-tree attribution only: the output
    /// that most of its buffered packets wait for, kept by a majority vote, and how many wait.
    voq_cause: Vec<VoqVote>,
    /// Per input port of a `voq` node: when its crossbar input is free again (finite
    /// speed-up only, `EngineConfig::crossbar`).
    xbar_free_at: Vec<SimTime>,
    /// Scratch: per VL, the position in its virtual output queue of the packet
    /// `xbar_candidate` found.
    xbar_pick: [usize; 16],
    /// Crossbar arbitration of `voq` nodes (`models/crossbar/`).
    xbar: AnyArbiter,
    /// Scratch: the packets of one virtual output queue as the arbiter sees them.
    xbar_waiting: Vec<Waiting>,
    /// Per port: the credits its receiver advertises at link-up (its buffer per VL).
    rx_init: Vec<u64>,
    /// The receiver's records of every ingress port-VL.
    rx: Vec<RxLane>,
    /// Shared-pool blocks of each ingress port not lent to any VL.
    pool_free: Vec<u32>,
    /// Per output port-VL of a `voq` node: when its oldest packet's HOQLife runs out.
    voq_deadline: Vec<SimTime>,
    // Per port.
    /// What a departure from the port reads and writes (one line each).
    out: Vec<IbOut>,
    pub port_stats: Vec<IbPortStats>,
    /// Per host and VL (`host * nv + vl`, [`IbState::hf`]): the flows with data to send,
    /// served round-robin. One array, so the prefetch pipeline reaches a queue in one step.
    host_flows: Vec<VecDeque<u32>>,
    /// Per host: congestion notifications waiting to be sent.
    cnp_queue: Vec<VecDeque<u32>>,
    /// HOQLife per output port: an index into `hoq_lives`. A byte, not the 16-byte
    /// `Option<Duration>` it stands for, so that the array (read when a new head starts its
    /// life) stays in cache: at k=32 the wider one missed on almost every read, 4 % of an
    /// InfiniBand rung (session 16).
    hoq_class: Vec<u8>,
    /// HOQLife of each class: off (host ports; outputs inside servers), towards CAs, towards
    /// switches.
    hoq_lives: [Option<Duration>; 3],
    pub totals: IbTotals,
    /// Occupancy (bytes, all VLs) of a switch input buffer as each packet joins it: the
    /// distribution of buffer fill seen by arriving traffic.
    pub occupancy_on_arrival: sim_core::UnitHistogram,
    /// Credit-stall time attributed to (stalled port, port its downstream head waited for).
    stall_edges: BTreeMap<(u32, u32), u64>,
    /// A partition's closed stalls whose cause another partition has yet to tell
    /// (`partition.rs`): token -> (port, stall ps). Empty on one thread.
    unresolved: BTreeMap<u32, (u32, u64)>,
    /// Per ingress port on a PFC link (a NIC's network side; empty elsewhere): PAUSE the
    /// sender when a lane's free blocks fall below `.0`, RESUME at `.1` (`set_pfc_receiver`).
    pfc_free_blocks: Vec<(u32, u32)>,
    /// Whether a packet that finds its output idle goes straight on
    /// ([`Fabric::ib_switch_pass`]); off only in the test that compares the two.
    pass_through: bool,
    /// Packets that went straight on.
    passes: u64,
}

impl IbState {
    /// Builds the state for `n_ports` ports; `peer_is_host[p]` says whether port `p` sends to
    /// an HCA, `own_is_host[p]` whether it belongs to one.
    pub(super) fn new(
        cfg: IbConfig,
        peer_is_host: &[bool],
        own_is_host: &[bool],
        voq_port: Vec<bool>,
        internal_port: &[bool],
        n_hosts: usize,
        xbar: XbarArbitration,
    ) -> IbState {
        let n = peer_is_host.len();
        let nv = cfg.n_vls as usize;
        let mut tx_lanes = Vec::with_capacity(n * nv);
        let mut rx_lanes = Vec::with_capacity(n * nv);
        let mut rx_init = Vec::with_capacity(n);
        // Internal links (a GPU to its hub, the NVLS endpoint) are not a modelled bottleneck:
        // both ends get the largest credit window (clamped to u32).
        let window = cfg.max_credit_window.min(u32::MAX as u64) as u32;
        for p in 0..n {
            let rx = if internal_port[p] {
                window
            } else if peer_is_host[p] {
                cfg.hca_vl_buffer_blocks
            } else {
                cfg.vl_buffer_blocks
            };
            let own = if internal_port[p] {
                window
            } else if own_is_host[p] {
                cfg.hca_vl_buffer_blocks
            } else {
                cfg.vl_buffer_blocks
            };
            // What the receiver advertises beyond what it has received is capped at the window.
            let advertised = (rx as u64).min(cfg.max_credit_window);
            rx_init.push(advertised);
            for _ in 0..nv {
                tx_lanes.push(TxLane::new(advertised));
                rx_lanes.push(RxLane::new(own, cfg.max_credit_window));
            }
        }
        let hoq_class = (0..n)
            .map(|p| {
                if own_is_host[p] {
                    HOQ_OFF
                } else if peer_is_host[p] {
                    HOQ_TO_CA
                } else {
                    HOQ_TO_SWITCH
                }
            })
            .collect();
        let hoq_lives = [None, hoq_life(cfg.hoq_life_leaf), hoq_life(cfg.hoq_life_switch)];
        IbState {
            nv,
            tx: tx_lanes,
            requests: vec![VecDeque::new(); n * nv],
            inq: vec![VecDeque::new(); n * nv],
            voq: vec![VecDeque::new(); n * nv],
            voq_port,
            voq_cause: vec![VoqVote::default(); n * nv],
            xbar_free_at: vec![SimTime::ZERO; n],
            xbar_pick: [0; 16],
            xbar: AnyArbiter::new(xbar, n),
            xbar_waiting: Vec::new(),
            rx_init,
            rx: rx_lanes,
            pool_free: own_is_host
                .iter()
                .map(|&host| if host { 0 } else { cfg.shared_pool_blocks })
                .collect(),
            voq_deadline: vec![SimTime::MAX; n * nv],
            out: vec![IbOut::default(); n],
            port_stats: vec![IbPortStats::default(); n],
            host_flows: vec![VecDeque::new(); nv * n_hosts],
            cnp_queue: vec![VecDeque::new(); n_hosts],
            hoq_class,
            hoq_lives,
            totals: IbTotals::default(),
            // Counted by credit block up to every VL's buffer full (internal ports, with their
            // far larger windows, and anything past it go to the HdrHistogram).
            occupancy_on_arrival: sim_core::UnitHistogram::new(
                cfg.credit_unit_bytes as u64,
                (cfg.vl_buffer_blocks.max(cfg.hca_vl_buffer_blocks) as usize * nv + 1).min(1 << 16),
                1,
                1 << 40,
                3,
            )
            .expect("valid histogram bounds"),
            stall_edges: BTreeMap::new(),
            unresolved: BTreeMap::new(),
            pfc_free_blocks: vec![(0, 0); n],
            pass_through: true,
            passes: 0,
            cfg,
        }
    }

    /// Output port `p`'s HOQLife (`None` = off).
    #[inline]
    pub(super) fn hoq_of_out(&self, p: u32) -> Option<Duration> {
        self.hoq_lives[self.hoq_class[p as usize] as usize]
    }

    #[inline]
    fn ix(&self, port: u32, vl: u8) -> usize {
        port as usize * self.nv + vl as usize
    }

    /// Index of host `h`'s flow queue of `vl` in `host_flows`.
    #[inline(always)]
    fn hf(&self, h: u32, vl: u8) -> usize {
        h as usize * self.nv + vl as usize
    }

    /// Host `h`'s flow queues, one per VL (none for an unknown host).
    #[inline(always)]
    fn host_queues(&self, h: u32) -> &[VecDeque<u32>] {
        self.host_flows.get(self.hf(h, 0)..self.hf(h + 1, 0)).unwrap_or(&[])
    }

    /// Credits (blocks) port `p` may still use on `vl`.
    #[inline]
    fn avail(&self, p: u32, vl: u8) -> u64 {
        let i = self.ix(p, vl);
        (self.tx[i].fccl - self.tx[i].fctbs).min(self.cfg.max_credit_window)
    }

    /// Credit-stall time of port `p` on `vl` up to `now` (open stalls counted to `now`).
    pub fn credit_stall(&self, p: u32, vl: u8, now: SimTime) -> Duration {
        let i = self.ix(p, vl);
        let st = &self.tx[i].stall;
        let open = if st.since == SimTime::MAX {
            0
        } else {
            now.ps().saturating_sub(st.since.ps())
        };
        Duration::from_ps(st.total_ps + open)
    }

    /// Output port `p` has no HOQLife (the crossbars inside servers: NVLink has none).
    pub(super) fn disable_hoq_life(&mut self, p: u32) {
        self.hoq_class[p as usize] = HOQ_OFF;
    }

    /// A credit stall of (`p`, `vl`) is open.
    fn stall_open(&self, p: u32, vl: u8) -> bool {
        self.tx[self.ix(p, vl)].stall.since != SimTime::MAX
    }

    /// Port `p`'s timer is armed for `now`.
    pub(super) fn timer_due(&self, p: u32, now: SimTime) -> bool {
        self.out[p as usize].timer_at == now
    }

    /// Ingress port `x` is on a PFC link (a NIC's network side): no credits go back; its
    /// receive buffer per lane holds at least `headroom_blocks + resume_blocks + 2 maximum
    /// frames`, it pauses the sender when fewer than `headroom_blocks` are free (what may still
    /// arrive after the PAUSE is sent: the PFC headroom bound of the link) and resumes it when
    /// `headroom_blocks + resume_blocks` are free again.
    pub(super) fn set_pfc_receiver(&mut self, x: u32, headroom_blocks: u32, resume_blocks: u32, frame_blocks: u32) {
        let need = headroom_blocks + resume_blocks + 2 * frame_blocks;
        for vl in 0..self.nv as u8 {
            let i = self.ix(x, vl);
            self.rx[i].free_blocks = self.rx[i].free_blocks.max(need);
        }
        self.pfc_free_blocks[x as usize] = (headroom_blocks, headroom_blocks + resume_blocks);
    }

    /// Read by the credit-deadlock detector (`crate::ib::deadlock`) after a run, never per
    /// event: the input ports whose head packet waits for output (`p`, `vl`), oldest first
    /// (input-FIFO switches; a `voq` node's are in [`Fabric::voq_inputs`]).
    pub fn requesters(&self, p: u32, vl: u8) -> impl Iterator<Item = u32> + '_ {
        self.requests[self.ix(p, vl)].iter().copied()
    }

    /// Since when output (`p`, `vl`) has been waiting for credits (`None`: not stalled).
    pub fn credit_stall_since(&self, p: u32, vl: u8) -> Option<SimTime> {
        let t = self.tx[self.ix(p, vl)].stall.since;
        (t != SimTime::MAX).then_some(t)
    }

    /// Number of data VLs.
    pub fn n_vls(&self) -> u8 {
        self.nv as u8
    }

    /// Credit-stall time of port `p`, all VLs.
    pub fn port_credit_stall(&self, p: u32, now: SimTime) -> Duration {
        Duration::from_ps((0..self.nv as u8).map(|vl| self.credit_stall(p, vl, now).ps()).sum())
    }

    /// The congestion tree: `(stalled port, port its downstream head waited for, stall ps)`,
    /// longest stall first. A port that shows up only on the right is a root of congestion.
    pub fn congestion_edges(&self) -> Vec<(u32, u32, u64)> {
        let mut edges = self.stall_edges.clone();
        for (i, st) in self.tx.iter().map(|l| &l.stall).enumerate() {
            if st.edge_cause != NO_EDGE {
                *edges.entry(((i / self.nv) as u32, st.edge_cause)).or_insert(0) += st.edge_ps;
            }
        }
        let mut v: Vec<_> = edges.iter().map(|(&(a, b), &d)| (a, b, d)).collect();
        v.sort_by(|x, y| y.2.cmp(&x.2).then((x.0, x.1).cmp(&(y.0, y.1))));
        v
    }

    fn stall_begin(&mut self, p: u32, vl: u8, now: SimTime, cause: u32) {
        let i = self.ix(p, vl);
        let st = &mut self.tx[i].stall;
        if st.since == SimTime::MAX {
            st.since = now;
            st.cause = cause;
        }
    }

    /// Ends a stall if one is open; returns whether there was one.
    #[inline]
    fn stall_end(&mut self, p: u32, vl: u8, now: SimTime) -> bool {
        let i = self.ix(p, vl);
        let since = self.tx[i].stall.since;
        if since == SimTime::MAX {
            return false;
        }
        self.close_stall(p, i, since, now);
        true
    }

    /// Adds the stall of lane `i` (of port `p`) open since `since` to its totals.
    fn close_stall(&mut self, p: u32, i: usize, since: SimTime, now: SimTime) {
        let d = now.ps() - since.ps();
        let st = &mut self.tx[i].stall;
        st.total_ps += d;
        st.since = SimTime::MAX;
        if st.edge_cause != st.cause {
            if partition::is_asked(st.cause) {
                // Another partition will tell the cause (`partition.rs`); the time waits.
                self.unresolved.insert(st.cause, (p, d));
                return;
            }
            // A new edge of the tree for this lane: the last one's time goes to the map.
            if st.edge_cause != NO_EDGE {
                *self.stall_edges.entry((p, st.edge_cause)).or_insert(0) += st.edge_ps;
            }
            (st.edge_cause, st.edge_ps) = (st.cause, 0);
        }
        st.edge_ps += d;
    }
}

impl Fabric {
    // Always inlined: called several times per event, and as calls they cost 2 % of a
    // credit-path run's instructions (the `expect` kept them out of line).
    #[inline(always)]
    fn ibs(&mut self) -> &mut IbState {
        self.ib
            .as_mut()
            .expect("InfiniBand path runs only on an InfiniBand fabric")
    }
    #[inline(always)]
    fn ibr(&self) -> &IbState {
        self.ib
            .as_ref()
            .expect("InfiniBand path runs only on an InfiniBand fabric")
    }

    /// Read by the credit-deadlock detector (`crate::ib::deadlock`) after a run, never per
    /// event: the input ports of the packets waiting in output (`p`, `vl`)'s virtual output
    /// queue, oldest first (none on an input-FIFO port, or without a credit layer).
    pub fn voq_inputs(&self, p: u32, vl: u8) -> impl Iterator<Item = u32> + '_ {
        let queue = self.ib.as_deref().map(|ib| &ib.voq[ib.ix(p, vl)]);
        queue.into_iter().flatten().map(|e| e.ingress)
    }

    /// Makes sure port `x`'s timer fires at `at` or earlier.
    fn ib_arm_timer<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32, at: SimTime) {
        let ib = self.ibs();
        if ib.out[x as usize].timer_at <= at {
            return;
        }
        ib.out[x as usize].timer_at = at;
        let o = self.timer_origin(x);
        s.schedule(at, o, Ev::PortTimer(x));
    }

    /// Port `x`'s timer: drops head packets past their HOQLife, releases deferred credit
    /// updates, re-arms for the next deadline.
    pub(super) fn ib_on_timer<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32) {
        let now = s.now();
        if self.ibr().out[x as usize].timer_at != now {
            return; // superseded by an earlier arming
        }
        self.ibs().out[x as usize].timer_at = SimTime::MAX;
        let nv = self.ibr().nv as u8;
        for vl in 0..nv {
            loop {
                let ib = self.ibr();
                let i = ib.ix(x, vl);
                if ib.inq[i].is_empty() || ib.rx[i].head_deadline > now {
                    break;
                }
                self.ib_drop_head(s, x, vl);
            }
            loop {
                let ib = self.ibr();
                let o = ib.ix(x, vl);
                if ib.voq[o].is_empty() || ib.voq_deadline[o] > now {
                    break;
                }
                self.ib_drop_voq_head(s, x, vl);
            }
            let ib = self.ibr();
            let i = ib.ix(x, vl);
            if ib.rx[i].fc_state == FcState::Deferred && ib.rx[i].fc_due <= now {
                let ib = self.ibs();
                ib.rx[i].fc_state = FcState::Queued;
                ib.out[x as usize].ctrl.push_back(vl);
                self.kick(s, x);
            }
        }
        let ib = self.ibr();
        let mut next = SimTime::MAX;
        for vl in 0..nv {
            let i = ib.ix(x, vl);
            if !ib.inq[i].is_empty() {
                next = next.min(ib.rx[i].head_deadline);
            }
            if !ib.voq[i].is_empty() {
                next = next.min(ib.voq_deadline[i]);
            }
            if ib.rx[i].fc_state == FcState::Deferred {
                next = next.min(ib.rx[i].fc_due);
            }
        }
        if next != SimTime::MAX {
            self.ib_arm_timer(s, x, next);
        }
        if self.ibr().voq_port[x as usize] {
            // A crossbar output waiting for a busy input (finite speed-up) retries.
            self.ib_switch_try_start(s, x);
        }
    }

    /// A packet came out of port `p`'s pipe into a credit switch's input buffer.
    #[inline]
    pub(super) fn ib_switch_arrive<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        let now = s.now();
        let (node, x) = {
            let port = &self.ports[p as usize];
            (port.peer_node, port.peer_port)
        };
        let pkt = *self.packets.get(id);
        // The blocks it takes in `x`'s buffer, counted in the link's framing: the same at both
        // ends (`framing_of`), so read on the sender's port, whose line the arrival has in
        // hand (`x`'s would be a miss on a large fabric).
        let b = self.pkt_blocks_on(p, id);
        debug_assert_eq!(b, self.pkt_blocks_on(x, id), "a link frames alike both ways");
        let vl = pkt.vl;
        // Routed when it was put on the link (`Fabric::route_ahead`) where routing is static.
        let out = if self.ports[p as usize].routed_ahead {
            pkt.next_port
        } else {
            self.route_ib(s, node, id)
        };
        // An idle output takes in the flow-control packets that have reached it before it
        // sends: the first one's slot, asked for now (the pipeline asked for the link's line
        // an event ahead; the slot's address is in it).
        let ctrl = &self.ctrl_links[out as usize];
        if ctrl.fc.first_at <= now
            && let Some(slot) = ctrl.pipe.head()
        {
            sim_core::prefetch(slot);
        }
        // The link's flow control, the same both ways (`LinkFc::of`): read on the sender's
        // port, whose line the arrival has in hand, not on `x`'s.
        let fc = self.ports[p as usize].link_fc;
        if fc == LinkFc::None && self.ibr().rx[self.ibr().ix(x, vl)].free_blocks < b {
            // A NIC's receive buffer facing a lossy Ethernet network: nothing held the sender
            // back, so a full buffer drops (tail drop, counted at the port it arrived on).
            self.drop_packet(x, id);
            return;
        }
        let unlimited_speedup = self.cfg.crossbar.speedup_percent.is_none();
        let ib = self.ibs();
        let i = ib.ix(x, vl);
        assert!(
            ib.rx[i].free_blocks >= b,
            "InfiniBand credit violation: {b} blocks arrived at port {x} VL {vl} with {} free (losslessness broken)",
            ib.rx[i].free_blocks
        );
        ib.rx[i].free_blocks -= b;
        ib.rx[i].abr += b as u64;
        let gauge = &mut ib.port_stats[x as usize].input_buffer_bytes;
        let bytes = gauge.value() + b as u64 * ib.cfg.credit_unit_bytes as u64;
        gauge.set(now, bytes);
        ib.occupancy_on_arrival.record(bytes);
        let o = ib.ix(out, vl);
        ib.tx[o].out_bytes += pkt.wire_bytes as u64;
        let out_total = ib.out_bytes_total(out);
        let voq = ib.voq_port[out as usize];
        // (A crossbar node's input FIFOs stay empty: its packets wait in the output's queue.)
        let was_empty = !voq && ib.inq[i].is_empty();
        let voq_len_before = if voq { ib.voq[o].len() } else { 0 };
        let voq_was_empty = voq && voq_len_before == 0;
        // Straight on where the output is idle (`ib_switch_idle_for`), for a packet that would
        // head its FIFO or queue: a crossbar's arbiter takes the oldest at once only if it
        // needs no scan and no input can be busy.
        let would_head = was_empty || (voq_was_empty && unlimited_speedup && ib.xbar.oldest_when_all_free());
        if would_head
            && fc == LinkFc::Credit
            && x != out
            && ib.pass_through
            && self.ib_switch_idle_for(
                s,
                (out, vl),
                voq,
                self.blocks_on(out, pkt.payload_bytes, pkt.wire_bytes),
            )
        {
            self.ports[out as usize].stats.queue_bytes.set(now, out_total);
            let pk = self.packets.get_mut(id);
            pk.ingress_port = x;
            pk.next_port = out;
            self.ib_switch_pass(s, (out, vl), x, id, voq);
            return;
        }
        let ib = self.ibs();
        if voq {
            ib.voq[o].push_back(VoqEntry { id, ingress: x });
            ib.voq_vote(i, out);
        } else {
            ib.inq[i].push_back(id);
        }
        self.ports[out as usize].stats.queue_bytes.set(now, out_total);
        let pk = self.packets.get_mut(id);
        pk.ingress_port = x;
        pk.next_port = out;
        if voq {
            self.ib_voq_joined(x, vl, out, voq_len_before);
        }
        if voq || was_empty {
            self.ib_cause_may_change(s, x, vl);
        }
        if fc == LinkFc::Pfc {
            // A NIC's network side: its receive buffer pauses the switch that feeds it.
            self.credit_pfc_check(s, x, vl);
        }
        if voq {
            if voq_was_empty {
                self.ib_voq_new_head(s, out, vl);
            }
            self.ib_switch_try_start(s, out);
        } else if was_empty {
            self.ib_new_head(s, x, vl);
        }
    }
}

impl IbState {
    /// A packet of input lane `i` joined the virtual output queue of output `out`.
    #[inline]
    fn voq_vote(&mut self, i: usize, out: u32) {
        let v = &mut self.voq_cause[i];
        v.packets += 1;
        if v.out == out {
            v.votes += 1;
        } else if v.votes == 0 {
            (v.out, v.votes) = (out, 1);
        } else {
            v.votes -= 1;
        }
    }

    /// A packet of input lane `i` left the virtual output queue of output `out`.
    #[inline]
    fn voq_unvote(&mut self, i: usize, out: u32) {
        let v = &mut self.voq_cause[i];
        v.packets -= 1;
        if v.out == out {
            v.votes = v.votes.saturating_sub(1);
        }
    }

    /// Bytes waiting for output `p`, all VLs.
    #[inline]
    pub(super) fn out_bytes_total(&self, p: u32) -> u64 {
        let first = p as usize * self.nv;
        self.tx[first..first + self.nv].iter().map(|l| l.out_bytes).sum()
    }

    /// Load of output `p` for adaptive routing on `vl`: bytes waiting for it plus bytes sent
    /// on it whose credits have not come back.
    pub(super) fn adaptive_load(&self, p: u32, vl: u8) -> u64 {
        let i = self.ix(p, vl);
        let outstanding = self.rx_init[p as usize].saturating_sub(self.tx[i].fccl - self.tx[i].fctbs);
        self.out_bytes_total(p) + outstanding * self.cfg.credit_unit_bytes as u64
    }
}

impl IbState {
    /// Data packets (not control) waiting in input buffers.
    pub(super) fn data_packets_buffered(&self, packets: &super::PacketArena) -> u64 {
        let queued = self.voq.iter().flat_map(|q| q.iter().map(|e| e.id));
        self.inq
            .iter()
            .flat_map(|q| q.iter().copied())
            .chain(queued)
            .filter(|&id| packets.get(id).kind == PacketKind::Data)
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_lane_and_per_port_records_are_one_cache_line_each() {
        assert_eq!(std::mem::size_of::<RxLane>(), 64);
        assert_eq!(std::mem::size_of::<TxLane>(), 64);
        assert_eq!(std::mem::size_of::<IbOut>(), 64);
        // The input-buffer gauge and the flow-control counter share the stats' first line.
        assert_eq!(std::mem::align_of::<IbPortStats>(), 64);
        assert!(std::mem::offset_of!(IbPortStats, fc_packets_tx) + 8 <= 64);
    }

    #[test]
    fn vl_fifo_keeps_the_order_of_up_to_fifteen_vls() {
        let mut q = VlFifo::default();
        assert!(q.is_empty() && q.pop_front().is_none());
        let vls = [3u8, 0, 14, 7, 1, 2, 4, 5, 6, 8, 9, 10, 11, 12, 13];
        for &vl in &vls {
            q.push_back(vl);
        }
        assert_eq!(q.len(), 15);
        assert_eq!(q.pop_front(), Some(3));
        q.push_back(3); // room again: the queue turns over
        let rest: Vec<u8> = std::iter::from_fn(|| {
            let front = q.front();
            let popped = q.pop_front();
            assert_eq!(front, popped, "the front is what pops next");
            popped
        })
        .collect();
        assert_eq!(rest, [0, 14, 7, 1, 2, 4, 5, 6, 8, 9, 10, 11, 12, 13, 3]);
        assert!(q.is_empty());
        // VL 0 entries are not mistaken for an empty queue.
        q.push_back(0);
        q.push_back(0);
        assert_eq!((q.pop_front(), q.pop_front(), q.pop_front()), (Some(0), Some(0), None));
    }

    #[test]
    #[should_panic(expected = "flow-control FIFO")]
    fn vl_fifo_refuses_a_sixteenth_entry() {
        let mut q = VlFifo::default();
        for vl in 0..16 {
            q.push_back(vl % 15);
        }
    }

    #[test]
    fn congestion_edges_sum_every_closed_stall_by_cause() {
        let n = 4;
        let mut ib = IbState::new(
            IbConfig::default(),
            &vec![false; n],
            &vec![false; n],
            vec![false; n],
            &vec![false; n],
            0,
            XbarArbitration::default(),
        );
        let t = |ns: u64| SimTime(ns * 1_000);
        // Port 1 stalls on port 3 twice, on port 2, on port 3 again (the edge to 3 is
        // flushed to the map and then kept again); port 0 once on no one, then stays stalled.
        for (from, to, cause) in [(0, 10, 3), (20, 25, 3), (30, 40, 2), (50, 51, 3)] {
            ib.stall_begin(1, 0, t(from), cause);
            assert!(ib.stall_end(1, 0, t(to)));
        }
        ib.stall_begin(0, 0, t(0), u32::MAX);
        assert!(ib.stall_end(0, 0, t(7)));
        // Zero-length stalls still name their edge.
        ib.stall_begin(2, 0, t(5), 1);
        assert!(ib.stall_end(2, 0, t(5)));
        ib.stall_begin(0, 0, t(60), 1);
        assert!(!ib.stall_end(3, 0, t(70)), "no stall open there");
        assert_eq!(
            ib.congestion_edges(),
            vec![(1, 3, 16_000), (1, 2, 10_000), (0, u32::MAX, 7_000), (2, 1, 0)]
        );
        assert_eq!(ib.credit_stall(1, 0, t(100)), Duration::from_ps(26_000));
        assert_eq!(
            ib.credit_stall(0, 0, t(100)),
            Duration::from_ps(7_000 + 40_000),
            "the open one counts"
        );
        assert_eq!(ib.credit_stall_since(0, 0), Some(t(60)));
    }
}
