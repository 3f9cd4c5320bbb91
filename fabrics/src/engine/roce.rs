//! RoCEv2 mechanics in the engine: shared-buffer switches with 8 priorities, PFC frames on
//! the reverse link, strict priority + DWRR egress scheduling, ECN marking, CNP/ACK/NACK
//! generation at the receiver NIC, sender congestion control (DCQCN, TIMELY) with one
//! timer event per flow, go-back-N for lossy priorities, the pause tree and run-time
//! deadlock detection. The models themselves are pure state machines in `models/`
//! (`buffer.rs` `SharedBuffer`, `pfc.rs`, `marking.rs`, `cc/`); this file wires them.
//!
//! ## A packet through a switch
//! A packet arrives (store-and-forward, after the port-to-port latency), is routed, and is
//! offered to the switch's MMU with its ingress port and priority (`Packet::vl`, the flow's
//! `class`). Dropped: counted by cause. Accepted: it joins the egress queue of its priority;
//! when the admission crossed XOFF of (ingress, priority), the ingress port's `PfcSender`
//! emits a PAUSE which waits on that port's transmitter *ahead of any data* (a MAC control
//! frame) and crosses the link with its delay. The packet leaves the MMU when it starts on
//! the egress wire; if that brings (ingress, priority) to XON, a RESUME follows the same way.
//!
//! ## Egress scheduling
//! A port sends, in order: a pending PFC frame; then (switch) the highest priority of
//! `strict_mask` with a packet that PFC allows, else DWRR over the other priorities (quantum
//! `dwrr_quantum_bytes` each); (host NIC) control packets (CNP, ACK, NACK), then data
//! round-robin over the flows whose congestion control and PFC allow them. A priority paused
//! by the peer never starts a frame (asserted); a frame already started completes.
//!
//! ## PFC receiver
//! A PFC frame arriving at a node stops the priorities it names on the node's port that sends
//! over that link (`PfcReceiver`), for the quanta it carries; RESUME (quanta 0) or the timer's
//! expiry (a port timer) lets them go again. The pause tree records, per (paused port, pausing
//! port, priority), the time spent paused.
//!
//! ## Deadlock
//! At every PAUSE refresh the engine looks for a cycle of paused (egress port, priority) pairs
//! where each one's peer holds, in a paused egress queue, packets that came in from it (a
//! cyclic buffer dependency with every member paused for at least one refresh period). Found:
//! the cycle and the time it closed are recorded and the run ends ([`RoceState::deadlock`]).

use super::{Device, Ev, Fabric, LinkFc, Packet, PacketKind};
use crate::models::buffer::{Admit, DropCause, SharedBuffer, SharedBufferConfig};
use crate::models::cc::{DcqcnParams, TimelyParams};
use crate::models::marking::{Marking, RedEcn, RedParams};
use crate::models::pfc::{self, N_PRIORITIES, PfcEdge, PfcFrame, PfcReceiver, PfcSender, PfcWatchdog};
use crate::models::{AnyCc, CongestionControl, Dcqcn, Timely};
use crate::roce::frame::{PAUSE_WIRE_BYTES, RoceFrame};
use sim_core::{BitsPerSec, Bytes, Duration, EventQueue, Origin, Scheduler, SimTime, serialization_time};
use std::collections::{BTreeMap, VecDeque};

const NP: usize = N_PRIORITIES;

/// Default shared buffer per switch port: 512 KiB (the plain Ethernet per-port buffer, so
/// both fabrics get the same memory; an assumption, see `engine/config.rs`).
pub const DEFAULT_BUFFER_PER_PORT_BYTES: u64 = super::DEFAULT_PORT_BUFFER_BYTES;
/// Default minimum interval between two CNPs of one QP at the receiver: 50 µs (DCQCN paper's
/// notification point, models.md §2.5.1; ConnectX firmware uses 4 µs).
pub const DEFAULT_CNP_INTERVAL: Duration = Duration::from_us(50);
/// Default priority of CNPs, ACKs and NACKs: 6 (Onyx "roce lossless" defaults put CNPs on 6,
/// models.md §2.2, §6), served with strict priority.
pub const DEFAULT_CONTROL_PRIORITY: u8 = 6;
/// Default go-back-N retransmission timeout: 100 µs (an assumption of the order of several
/// RTTs in a data-centre fabric; ConnectX's is configurable, ~ms scale, models.md §2.7).
pub const DEFAULT_RTO: Duration = Duration::from_us(100);

/// Default bound on the rows of `roce_rates.csv` (per-QP rate samples): 1 000 000 (an
/// assumption: ~30 MB of CSV); sampling stops when it is reached.
pub const DEFAULT_RATE_SAMPLE_MAX_ROWS: u64 = 1_000_000;

/// Go-back-N send window: how many bytes a flow may have sent but not yet had acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GbnWindow {
    /// The flow path's bandwidth-delay product (line rate × base RTT: propagation, port-to-port
    /// latency and one maximum frame plus one ACK of serialization per hop, both ways),
    /// rounded up to whole maximum frames: IRN's BDP flow control (models.md §2.7).
    #[default]
    Bdp,
    /// A fixed number of bytes (at least one maximum frame is always allowed).
    Bytes(u64),
    /// No window: the sender may run to the end of the message before a NACK arrives.
    Unlimited,
}

/// Sender congestion control of every RoCE flow.
#[derive(Clone, Debug, Default)]
pub enum RoceCc {
    /// Line rate (or [`super::EngineConfig::sender_rate`]), no feedback.
    #[default]
    None,
    /// DCQCN reaction point; `line_rate` is replaced by each flow's NIC rate.
    Dcqcn(DcqcnParams),
    /// TIMELY; `line_rate` is replaced by each flow's NIC rate and `delta` scaled with it.
    Timely(TimelyParams),
}

/// Configuration of a RoCEv2 fabric (plain data; [`RoceConfig::validate`] checks it).
#[derive(Clone, Debug)]
pub struct RoceConfig {
    /// Shared packet memory of each switch, bytes; `None` = 512 KiB per port.
    pub buffer_bytes: Option<u64>,
    /// Reserve per (ingress port, priority in use), bytes (HPCC-sim: 4 KiB).
    pub reserve_bytes: u64,
    /// Headroom per (ingress port, lossless priority), bytes; `None` = the bound
    /// [`headroom_bound_bytes`] of the switch's worst port.
    pub headroom_bytes: Option<u64>,
    /// XON hysteresis: resume when shared use + this ≤ threshold (HPCC-sim: 3 KiB).
    pub resume_offset_bytes: u64,
    /// Dynamic threshold α = 2^−shift (HPCC-sim: 3, α = 1/8).
    pub alpha_shift: i8,
    /// Lossless priorities (PFC and headroom), bit p = priority p. 0 = no PFC at all.
    pub lossless_mask: u8,
    /// Lossy priorities (tail drop at the dynamic threshold).
    pub lossy_mask: u8,
    /// Pause time a PAUSE frame carries, quanta of 512 bit times (practice: 65535).
    pub pause_quanta: u16,
    /// Refresh a PAUSE this long after the last one while still congested; `None` = half
    /// the pause time at the link's rate.
    pub pfc_refresh: Option<Duration>,
    /// Priorities served with strict priority (highest first) before DWRR over the rest.
    pub strict_mask: u8,
    /// DWRR quantum per priority, bytes (≥ one maximum frame keeps DWRR O(1) per packet).
    pub dwrr_quantum_bytes: [u32; NP],
    /// RED/ECN marking on egress queues (per port and priority); `None` = no marking.
    pub ecn: Option<RedParams>,
    /// Sender congestion control.
    pub cc: RoceCc,
    /// Minimum interval between two CNPs of one flow (QP) at the receiver.
    pub cnp_interval: Duration,
    /// Priority of CNP, ACK and NACK packets.
    pub control_priority: u8,
    /// The receiver ACKs every data packet (needed by TIMELY and go-back-N; forced on then).
    pub acks: bool,
    /// Go-back-N loss recovery with this retransmission timeout; `None` = off (a dropped
    /// packet is lost and its flow never completes).
    pub go_back_n: Option<Duration>,
    /// Look for cyclic pause dependencies and end the run when one forms.
    pub deadlock_detection: bool,
    /// Go-back-N send window (only with `go_back_n`).
    pub gbn_window: GbnWindow,
    /// Sample every flow's congestion-control rate this often (`roce_rates.csv`); `None` =
    /// off (no event at all).
    pub rate_sample: Option<Duration>,
    /// At most this many rate samples in all (then sampling stops).
    pub rate_sample_max_rows: u64,
    /// PFC watchdog on switch ports: a (port, priority) paused continuously this long is in
    /// a storm: its queue is dropped and arrivals for it are dropped until the pause ends.
    /// `None` = off.
    pub pfc_watchdog: Option<Duration>,
    /// The data frame's encapsulation: the ACK/NACK and CNP sizes on the wire follow it
    /// (RoCEv2 over IPv4 by default; RoCEv1 in `docs/models/rocev1.md`).
    pub frame: RoceFrame,
}

impl Default for RoceConfig {
    fn default() -> Self {
        RoceConfig {
            buffer_bytes: None,
            reserve_bytes: crate::models::buffer::HPCC_SIM_RESERVE_BYTES,
            headroom_bytes: None,
            resume_offset_bytes: crate::models::buffer::HPCC_SIM_RESUME_OFFSET_BYTES,
            alpha_shift: crate::models::buffer::HPCC_SIM_ALPHA_SHIFT,
            lossless_mask: 1 << 3,
            lossy_mask: (1 << 0) | (1 << DEFAULT_CONTROL_PRIORITY),
            pause_quanta: pfc::MAX_PAUSE_QUANTA,
            pfc_refresh: None,
            strict_mask: 1 << DEFAULT_CONTROL_PRIORITY,
            dwrr_quantum_bytes: [super::DEFAULT_MTU_BYTES + super::ETHERNET_ROCE_HEADER_BYTES; NP],
            ecn: None,
            cc: RoceCc::None,
            cnp_interval: DEFAULT_CNP_INTERVAL,
            control_priority: DEFAULT_CONTROL_PRIORITY,
            acks: false,
            go_back_n: None,
            deadlock_detection: true,
            gbn_window: GbnWindow::Bdp,
            rate_sample: None,
            rate_sample_max_rows: DEFAULT_RATE_SAMPLE_MAX_ROWS,
            pfc_watchdog: None,
            frame: RoceFrame::DATA_IPV4,
        }
    }
}

impl RoceConfig {
    /// Why this configuration cannot run with frames of up to `max_wire` bytes, if it cannot.
    pub fn validate(&self, max_wire: u32) -> Result<(), String> {
        if self.lossless_mask & self.lossy_mask != 0 {
            return Err("a priority cannot be both lossless and lossy".into());
        }
        if (self.lossless_mask | self.lossy_mask) & (1 << self.control_priority) == 0 {
            return Err(format!(
                "the control priority {} (CNP/ACK) must be lossless or lossy",
                self.control_priority
            ));
        }
        if self.pause_quanta == 0 {
            return Err("pause quanta must be > 0 (0 is RESUME)".into());
        }
        if self.dwrr_quantum_bytes.contains(&0) {
            return Err("DWRR quanta must be > 0".into());
        }
        if let Some(h) = self.headroom_bytes
            && self.lossless_mask != 0
            && h < max_wire as u64
        {
            return Err(format!("headroom {h} B cannot hold one {max_wire} B frame"));
        }
        if let Some(r) = &self.ecn {
            r.check()?;
        }
        match &self.cc {
            RoceCc::None => {}
            RoceCc::Dcqcn(p) => p.check()?,
            RoceCc::Timely(p) => p.check()?,
        }
        if self.go_back_n.is_some_and(|t| t == Duration::ZERO) {
            return Err("go-back-N timeout must be > 0".into());
        }
        if self.rate_sample.is_some_and(|t| t == Duration::ZERO) {
            return Err("the rate sampling period must be > 0".into());
        }
        if self.pfc_watchdog.is_some_and(|t| t == Duration::ZERO) {
            return Err("the PFC watchdog window must be > 0".into());
        }
        Ok(())
    }

    fn active_mask(&self) -> u8 {
        self.lossless_mask | self.lossy_mask
    }
}

/// The headroom bound of one (ingress port, lossless priority) in this engine: bytes that can
/// still arrive after the XOFF decision. models.md §2.2's generic bound
/// `(2·delay + t_resp)·C/8 + 2·max frame + PFC frame`, with the response time `t_resp` = the
/// switch's port-to-port latency (data in it is already committed when the PAUSE lands)
/// plus one maximum frame (the XOFF decision can come one packet late when the dynamic
/// threshold shrinks under a port that is not receiving), and the in-flight part rounded up
/// to whole maximum frames: frames are stored whole, so one that straddles the window
/// arrives entirely (measured: a 100G, 10 m, 500 ns hop used exactly 5 frames, 772 B more
/// than the byte-exact formula).
pub fn headroom_bound_bytes(rate: BitsPerSec, link_delay: Duration, switch_latency: Duration, max_frame: u32) -> u64 {
    let ser = serialization_time(Bytes(max_frame as u64), rate);
    let resp = Duration(2 * link_delay.ps() + switch_latency.ps() + ser.ps());
    let frame = max_frame as u64;
    let fixed = 2 * frame + pfc::PFC_FRAME_WIRE_BYTES;
    let in_flight = pfc::headroom_bytes(0, rate, frame, resp) - fixed;
    in_flight.div_ceil(frame) * frame + fixed
}

/// Counters of one port of a RoCEv2 fabric, per priority where it applies.
#[derive(Clone, Debug, Default)]
pub struct RocePortStats {
    /// PAUSE frames (incl. refreshes) and RESUME frames this port sent (it is the ingress of
    /// the congested node).
    pub pause_tx: [u64; NP],
    pub resume_tx: [u64; NP],
    /// PFC frames this port received (it is paused or resumed).
    pub pfc_rx: [u64; NP],
    /// Data packets marked CE when leaving / joining this port's queue.
    pub ecn_marked: [u64; NP],
    /// Drops at this egress port by cause: lossless headroom full, lossy threshold, pool full.
    pub drops_headroom: u64,
    pub drops_lossy_threshold: u64,
    pub drops_buffer_full: u64,
    /// Largest headroom use of this ingress port (any lossless priority), bytes.
    pub headroom_max_bytes: u64,
    /// Largest egress bytes of (this port, priority) seen.
    pub queue_max_bytes: [u64; NP],
    /// CNPs this port sent (a receiver NIC) and received (a sender NIC's port).
    pub cnps_tx: u64,
    pub cnps_rx: u64,
    /// PFC watchdog: storms declared on this egress port, packets it dropped in storms.
    pub watchdog_storms: u64,
    pub drops_watchdog: u64,
}

/// Whole-fabric RoCEv2 counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoceTotals {
    pub pause_frames: u64,
    pub resume_frames: u64,
    pub ecn_marked: u64,
    pub cnps_sent: u64,
    pub cnps_received: u64,
    pub acks_sent: u64,
    pub nacks_sent: u64,
    /// Data packets sent again by go-back-N.
    pub retransmitted: u64,
    /// Go-back-N timeouts that fired.
    pub timeouts: u64,
    /// Data packets the receiver discarded (out of order or duplicate, go-back-N).
    pub receiver_discards: u64,
    /// Control packets (CNP/ACK/NACK) dropped on a lossy priority.
    pub control_drops: u64,
    pub drops_headroom: u64,
    pub drops_lossy_threshold: u64,
    pub drops_buffer_full: u64,
    /// PFC watchdog storms declared and data/control packets dropped by them.
    pub watchdog_storms: u64,
    pub drops_watchdog: u64,
}

/// A cyclic pause dependency found at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// The cycle: (egress port, priority), each paused by its peer, whose peer holds packets
    /// from it in the next member's queue.
    pub cycle: Vec<(u32, u8)>,
    /// When the last member of the cycle became paused (the cycle closed).
    pub formed_at: SimTime,
    /// When it was detected (at a PAUSE refresh).
    pub detected_at: SimTime,
}

/// The RoCEv2 state of a fabric; per-priority arrays are indexed by `port * 8 + prio`.
pub struct RoceState {
    pub cfg: RoceConfig,
    /// MMU of each switch (by node; `None` for hosts).
    mmu: Vec<Option<SharedBuffer>>,
    // Per port and priority.
    q: Vec<PrioQueue>,
    paused_since: Vec<SimTime>,
    // Per port.
    rr: Vec<u8>,
    /// Bit `prio` set: the queue of (port, prio) holds a packet.
    nonempty: Vec<u8>,
    pfc_tx: Vec<PfcSender>,
    pfc_rx: Vec<PfcReceiver>,
    /// Encoded PFC frame waiting for the port's transmitter (0 = none).
    pfc_pending: Vec<u64>,
    timer_at: Vec<SimTime>,
    pub port_stats: Vec<RocePortStats>,
    // Per host: control packets (CNP, ACK, NACK) waiting for the NIC.
    ctrl_q: Vec<VecDeque<u32>>,
    // Per flow.
    last_cnp: Vec<SimTime>,
    flow_timer_at: Vec<SimTime>,
    last_tx: Vec<(SimTime, u32)>,
    flow_active: Vec<bool>,
    snd_acked: Vec<u64>,
    rcv_expected: Vec<u64>,
    nack_sent: Vec<bool>,
    rto_at: Vec<SimTime>,
    ecn: Option<RedEcn>,
    /// Refresh period used by deadlock detection (the shortest of the ports').
    window: Duration,
    pub totals: RoceTotals,
    /// Paused time per (paused port, pausing port, priority), closed intervals.
    pause_edges: BTreeMap<(u32, u32, u8), u64>,
    /// Who paused (port, prio) now (the pausing port), `u32::MAX` when not paused.
    paused_by: Vec<u32>,
    pub deadlock: Option<Deadlock>,
    /// Wire bytes of a CNP and of an ACK/NACK.
    ctrl_wire: (u32, u32),
    /// Highest byte offset each flow has sent (below it, a send is a retransmission).
    sent_high: Vec<u64>,
    /// Offset of the flow's last go-back (`u64::MAX`: none yet).
    rewound_to: Vec<u64>,
    /// PFC edges found by MMU operations, applied once the operation is over.
    pending_edges: Vec<(u32, u8, PfcEdge)>,
    /// Every switch's headroom covers its bound: a lossless drop is a bug (panics).
    lossless_asserted: bool,
    /// Go-back-N send window per flow, bytes (`u64::MAX`: none).
    gbn_window: Vec<u64>,
    /// Rate samples `(flow, time, rate b/s)` in time order (`roce_rates.csv`).
    pub rate_samples: Vec<(u32, SimTime, u64)>,
    /// Sampling stopped at `rate_sample_max_rows`.
    pub rate_samples_truncated: bool,
    /// PFC watchdog per port (empty when off).
    watchdog: Vec<PfcWatchdog>,
    /// Per flow: it runs a RoCEv2 queue pair (its path crosses a PFC link). The others are
    /// GPU load/store traffic inside a server: line rate, no ACK, CNP or go-back-N.
    qp: Vec<bool>,
    /// (port, priority) in a watchdog storm.
    storm: Vec<bool>,
}

/// One egress queue of a switch port: (port, priority). The ids, the bytes and the DWRR deficit
/// are read together on every enqueue and departure, so they share a cache line.
#[derive(Clone, Debug, Default)]
struct PrioQueue {
    ids: VecDeque<u32>,
    bytes: u64,
    deficit: u32,
}

/// What DWRR needs of a queue: its deficit counter.
trait Deficit {
    fn deficit(&mut self) -> &mut u32;
}
impl Deficit for PrioQueue {
    fn deficit(&mut self) -> &mut u32 {
        &mut self.deficit
    }
}
impl Deficit for u32 {
    fn deficit(&mut self) -> &mut u32 {
        self
    }
}

/// Deficit weighted round-robin over the priorities in `eligible` (non-empty, not paused; at
/// least one), from the round-robin position `rr`: the priority whose deficit covers its head
/// packet (`head_wire(prio)` bytes) first, its deficit charged; `None` when the cap of
/// `NP * 64` steps runs out first (quanta far below the frame size). Equivalent to stepping
/// `rr` one priority at a time, adding the quantum to an eligible priority that falls short;
/// the steps over ineligible priorities are taken in one jump. Empty queues have a zero
/// deficit (the callers reset it when a queue empties).
fn dwrr_pick<D: Deficit>(
    eligible: u8,
    rr: &mut u8,
    deficit: &mut [D],
    quantum: &[u32; NP],
    head_wire: impl Fn(u8, &D) -> u32,
) -> Option<u8> {
    const CAP: usize = NP * 64;
    let mut steps = 0usize;
    let mut prio = *rr as usize;
    loop {
        // Distance to the next eligible priority, cyclically from `prio`.
        let rot = eligible.rotate_right(prio as u32);
        let jump = rot.trailing_zeros() as usize;
        if steps + jump >= CAP {
            *rr = ((prio + CAP - steps) % NP) as u8;
            return None;
        }
        steps += jump;
        prio = (prio + jump) % NP;
        let head = head_wire(prio as u8, &deficit[prio]);
        let d = deficit[prio].deficit();
        if *d >= head {
            *d -= head;
            *rr = prio as u8;
            return Some(prio as u8);
        }
        *d += quantum[prio];
        steps += 1;
        prio = (prio + 1) % NP;
        if steps >= CAP {
            *rr = prio as u8;
            return None;
        }
    }
}

/// Encodes a PFC frame whose pausing priorities all carry the same quanta.
fn encode(frame: &PfcFrame) -> u64 {
    let mut pause = 0u8;
    let mut quanta = 0u16;
    for p in 0..NP as u8 {
        if let Some(q) = frame.get(p)
            && q > 0
        {
            pause |= 1 << p;
            quanta = q;
        }
    }
    frame.enable_mask as u64 | (pause as u64) << 8 | (quanta as u64) << 16
}

fn decode(aux: u64) -> PfcFrame {
    let enable = aux as u8;
    let pause = (aux >> 8) as u8;
    let quanta = (aux >> 16) as u16;
    let mut f = PfcFrame::default();
    for p in 0..NP as u8 {
        if enable & (1 << p) != 0 {
            f.set(p, if pause & (1 << p) != 0 { quanta } else { 0 });
        }
    }
    f
}

/// Merges frame `b` into the pending encoded frame `a` (the newer timer of a priority wins).
fn merge(a: u64, b: &PfcFrame) -> u64 {
    let mut f = if a == 0 { PfcFrame::default() } else { decode(a) };
    for p in 0..NP as u8 {
        if let Some(q) = b.get(p) {
            f.set(p, q);
        }
    }
    encode(&f)
}

impl RoceState {
    #[inline]
    fn ix(port: u32, prio: u8) -> usize {
        port as usize * NP + prio as usize
    }

    /// Port `p`'s timer is armed for `now`.
    pub(super) fn timer_due(&self, p: u32, now: SimTime) -> bool {
        self.timer_at[p as usize] == now
    }

    /// Bytes queued at (port, prio).
    pub fn queue_bytes(&self, port: u32, prio: u8) -> u64 {
        self.q[Self::ix(port, prio)].bytes
    }
    /// PFC frames received by `port` for `prio`, and the time it has been paused up to `now`.
    pub fn paused(&self, port: u32, prio: u8, now: SimTime) -> (u64, Duration) {
        let r = &self.pfc_rx[port as usize];
        (r.frames_received(prio), r.paused_time(prio, now))
    }
    /// Paused time of `port`, all priorities, up to `now`.
    pub fn port_paused_time(&self, port: u32, now: SimTime) -> Duration {
        Duration((0..NP as u8).map(|p| self.paused(port, p, now).1.ps()).sum())
    }
    /// The switch MMU of `node` (`None` for hosts).
    pub fn mmu(&self, node: u32) -> Option<&SharedBuffer> {
        self.mmu[node as usize].as_ref()
    }

    /// The pause tree up to `now`: `(paused port, pausing port, priority, paused ps)`,
    /// longest first. The pausing port belongs to the congested node (it is that node's
    /// ingress from the paused port); a pausing port that is never paused itself is a root.
    pub fn pause_edges(&self, now: SimTime) -> Vec<(u32, u32, u8, u64)> {
        let mut m = self.pause_edges.clone();
        for (i, &by) in self.paused_by.iter().enumerate() {
            if by != u32::MAX {
                let (port, prio) = ((i / NP) as u32, (i % NP) as u8);
                let until = self.pfc_rx[port as usize].paused_until(prio).min(now);
                let d = until.ps().saturating_sub(self.paused_since[i].ps());
                *m.entry((port, by, prio)).or_insert(0) += d;
            }
        }
        let mut v: Vec<_> = m.into_iter().map(|((a, b, p), d)| (a, b, p, d)).collect();
        v.sort_by(|x, y| y.3.cmp(&x.3).then((x.0, x.1, x.2).cmp(&(y.0, y.1, y.2))));
        v
    }

    /// Closes the pause interval of (port, prio) at `end`.
    fn close_pause(&mut self, port: u32, prio: u8, end: SimTime) {
        let i = Self::ix(port, prio);
        if self.paused_by[i] == u32::MAX {
            return;
        }
        let d = end.ps().saturating_sub(self.paused_since[i].ps());
        *self.pause_edges.entry((port, self.paused_by[i], prio)).or_insert(0) += d;
        self.paused_by[i] = u32::MAX;
        self.paused_since[i] = SimTime::MAX;
        if let Some(wd) = self.watchdog.get_mut(port as usize) {
            wd.on_pause_state(end, prio, false);
            self.storm[i] = false;
        }
    }

    /// Data packets waiting in egress queues.
    pub(super) fn data_packets_buffered(&self, packets: &super::PacketArena) -> u64 {
        self.q
            .iter()
            .flat_map(|q| q.ids.iter())
            .filter(|&&id| packets.get(id).kind == PacketKind::Data)
            .count() as u64
    }
}

impl Fabric {
    fn rs(&mut self) -> &mut RoceState {
        self.roce.as_mut().expect("RoCE path runs only on a RoCEv2 fabric")
    }
    fn rr(&self) -> &RoceState {
        self.roce.as_ref().expect("RoCE path runs only on a RoCEv2 fabric")
    }

    /// Builds the RoCE state and the per-flow congestion controllers.
    pub(super) fn roce_init(&mut self) -> Result<(), super::EngineError> {
        let cfg = self.cfg.roce.clone().expect("RoCE configuration");
        let max_wire = self.cfg.mtu_bytes + self.cfg.header_bytes;
        cfg.validate(max_wire).map_err(super::EngineError::BadConfig)?;
        for (i, f) in self.flows.iter().enumerate() {
            let prio = f.class;
            if prio as usize >= NP || cfg.active_mask() & (1 << prio) == 0 {
                return Err(super::EngineError::BadConfig(format!(
                    "flow {i} has class {prio}, which is neither a lossless nor a lossy priority of the RoCE fabric"
                )));
            }
        }
        let n_ports = self.ports.len();
        let n_nodes = self.port_base.len() - 1;
        let mut mmu = Vec::with_capacity(n_nodes);
        let mut lossless_asserted = true;
        for n in 0..n_nodes {
            if self.device[n] != Device::RoceSwitch {
                mmu.push(None);
                continue;
            }
            let (a, b) = (self.port_base[n] as usize, self.port_base[n + 1] as usize);
            if a == b {
                mmu.push(None);
                continue;
            }
            let bound = (a..b)
                .map(|p| {
                    let port = &self.ports[p];
                    headroom_bound_bytes(port.rate, port.delay, self.cfg.switch_latency, max_wire)
                })
                .max()
                .unwrap_or(0);
            let headroom = if cfg.lossless_mask == 0 {
                0
            } else {
                cfg.headroom_bytes.unwrap_or(bound)
            };
            lossless_asserted &= headroom >= bound;
            let total = cfg
                .buffer_bytes
                .unwrap_or(DEFAULT_BUFFER_PER_PORT_BYTES * (b - a) as u64);
            let sb = SharedBufferConfig {
                total_bytes: total,
                reserve_bytes: cfg.reserve_bytes,
                headroom_bytes: headroom,
                resume_offset_bytes: cfg.resume_offset_bytes,
                lossless_mask: cfg.lossless_mask,
                lossy_mask: cfg.lossy_mask,
                port_alpha_shift: vec![cfg.alpha_shift; b - a],
            };
            sb.check()
                .map_err(|e| super::EngineError::BadConfig(format!("switch node {n}: {e}")))?;
            mmu.push(Some(SharedBuffer::new(sb)));
        }
        let pfc_tx = self
            .ports
            .iter()
            .map(|p| match cfg.pfc_refresh {
                Some(r) => PfcSender::new(cfg.pause_quanta, r),
                None => PfcSender::new(
                    cfg.pause_quanta,
                    Duration((pfc::pause_duration(cfg.pause_quanta, p.rate).ps() / 2).max(1)),
                ),
            })
            .collect();
        let window = self
            .ports
            .iter()
            .map(|p| match cfg.pfc_refresh {
                Some(r) => r,
                None => Duration(pfc::pause_duration(cfg.pause_quanta, p.rate).ps() / 2),
            })
            .min()
            .unwrap_or(Duration::ZERO);
        let pfc_rx = self.ports.iter().map(|p| PfcReceiver::new(p.rate)).collect();
        let ecn = cfg.ecn.map(|r| {
            RedEcn::new(
                r,
                sim_core::RngStreams::new(self.cfg.seed).stream(sim_core::rng::stream::ECN_MARKING),
            )
        });
        // Which flows run a queue pair, and at what line rate: the first PFC port on the path
        // (the host's own port on a RoCEv2 network, the NIC's network port in a cluster).
        let qp_line: Vec<Option<BitsPerSec>> = (0..self.flows.len() as u32)
            .map(|f| {
                self.flow_path(f)
                    .into_iter()
                    .find(|&p| self.link_fc[p as usize] == LinkFc::Pfc)
                    .map(|p| self.ports[p as usize].rate)
            })
            .collect();
        // Per-flow congestion control at the queue pair's line rate.
        for (i, line) in qp_line.iter().enumerate() {
            let Some(line) = *line else { continue };
            let cc = match &cfg.cc {
                RoceCc::None => continue,
                RoceCc::Dcqcn(p) => {
                    let mut p = *p;
                    p.line_rate = line;
                    p.min_rate = p.min_rate.min(line);
                    AnyCc::Dcqcn(Dcqcn::new(p))
                }
                RoceCc::Timely(p) => {
                    let mut p = *p;
                    let old = p.line_rate.0.max(1) as u128;
                    p.delta = BitsPerSec((p.delta.0 as u128 * line.0 as u128 / old).max(1) as u64);
                    p.line_rate = line;
                    p.min_rate = p.min_rate.min(line);
                    AnyCc::Timely(Timely::new(p))
                }
            };
            self.flow_state[i].cc = cc;
        }
        let n_flows = self.flows.len();
        let frame = cfg.frame;
        let gbn_window = (0..n_flows as u32)
            .map(
                |f| match (cfg.go_back_n.filter(|_| qp_line[f as usize].is_some()), cfg.gbn_window) {
                    (None, _) | (_, GbnWindow::Unlimited) => u64::MAX,
                    (Some(_), GbnWindow::Bytes(b)) => b.max(self.cfg.mtu_bytes as u64),
                    (Some(_), GbnWindow::Bdp) => {
                        let line = qp_line[f as usize].expect("a queue pair");
                        self.bdp_window_bytes(f, line, frame.ack_wire_bytes())
                    }
                },
            )
            .collect();
        let (watchdog, storm) = match cfg.pfc_watchdog {
            Some(w) => (vec![PfcWatchdog::new(w); n_ports], vec![false; n_ports * NP]),
            None => (Vec::new(), Vec::new()),
        };
        self.roce = Some(Box::new(RoceState {
            mmu,
            q: vec![PrioQueue::default(); n_ports * NP],
            paused_since: vec![SimTime::MAX; n_ports * NP],
            paused_by: vec![u32::MAX; n_ports * NP],
            rr: vec![0; n_ports],
            nonempty: vec![0; n_ports],
            pfc_tx,
            pfc_rx,
            pfc_pending: vec![0; n_ports],
            timer_at: vec![SimTime::MAX; n_ports],
            port_stats: vec![RocePortStats::default(); n_ports],
            ctrl_q: vec![VecDeque::new(); self.nics.len()],
            last_cnp: vec![SimTime::MAX; n_flows],
            flow_timer_at: vec![SimTime::MAX; n_flows],
            last_tx: vec![(SimTime::ZERO, 0); n_flows],
            flow_active: vec![false; n_flows],
            snd_acked: vec![0; n_flows],
            rcv_expected: vec![0; n_flows],
            nack_sent: vec![false; n_flows],
            rto_at: vec![SimTime::MAX; n_flows],
            ecn,
            window,
            totals: RoceTotals::default(),
            pause_edges: BTreeMap::new(),
            deadlock: None,
            ctrl_wire: (frame.cnp_wire_bytes(), frame.ack_wire_bytes()),
            sent_high: vec![0; n_flows],
            rewound_to: vec![u64::MAX; n_flows],
            pending_edges: Vec::new(),
            lossless_asserted,
            gbn_window,
            rate_samples: Vec::new(),
            rate_samples_truncated: false,
            watchdog,
            storm,
            qp: qp_line.iter().map(|l| l.is_some()).collect(),
            cfg,
        }));
        Ok(())
    }

    /// [`GbnWindow::Bdp`] of flow `f`, payload bytes: the NIC line rate times the base RTT
    /// of its path (per hop both ways: propagation and port-to-port latency; one maximum
    /// frame forward and one ACK back of serialization), rounded up to whole frames.
    fn bdp_window_bytes(&self, f: u32, line: BitsPerSec, ack_wire: u32) -> u64 {
        let max_wire = (self.cfg.mtu_bytes + self.cfg.header_bytes) as u64;
        let rtt_ps: u64 = self
            .flow_path(f)
            .iter()
            .map(|&p| {
                let port = &self.ports[p as usize];
                2 * (port.delay.ps() + port.peer_latency.ps())
                    + serialization_time(Bytes(max_wire), port.rate).ps()
                    + serialization_time(Bytes(ack_wire as u64), port.rate).ps()
            })
            .sum();
        let bdp = (rtt_ps as u128 * line.0 as u128).div_ceil(8 * sim_core::time::PS_PER_S as u128) as u64;
        bdp.div_ceil(max_wire).max(1) * self.cfg.mtu_bytes as u64
    }

    fn flow_timer_origin(&self, f: u32) -> Origin {
        Origin(3 * self.ports.len() as u32 + self.nics.len() as u32 + 1 + f)
    }

    /// Origin of the rate-sampling event (after every flow timer).
    pub(super) fn rate_sample_origin(&self) -> Origin {
        self.flow_timer_origin(self.flows.len() as u32)
    }

    /// One rate sample of every flow that is sending (started, not finished), then the next
    /// sampling event one period later, unless the bound is reached, every flow is done, or
    /// nothing else is pending (the run would otherwise never drain).
    pub(super) fn roce_on_rate_sample<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let r = self.roce.as_deref_mut().expect("RoCE fabric");
        let Some(period) = r.cfg.rate_sample else { return };
        for (f, rec) in self.records.iter().enumerate() {
            if rec.first_sent.is_none() || rec.finish.is_some() {
                continue;
            }
            if r.rate_samples.len() as u64 >= r.cfg.rate_sample_max_rows {
                r.rate_samples_truncated = true;
                return;
            }
            let rate = crate::models::CongestionControl::rate(&self.flow_state[f].cc).0;
            r.rate_samples.push((f as u32, now, rate));
        }
        let all_done = self.totals.flows_completed as usize == self.flows.len();
        if !all_done && s.pending() > 0 {
            let o = self.rate_sample_origin();
            s.schedule(now + period, o, Ev::RateSample);
        }
    }

    /// Makes sure port `x`'s timer fires at `at` or earlier.
    fn roce_arm_timer<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32, at: SimTime) {
        let r = self.rs();
        if r.timer_at[x as usize] <= at {
            return;
        }
        r.timer_at[x as usize] = at;
        let o = self.timer_origin(x);
        s.schedule(at, o, Ev::PortTimer(x));
    }

    /// Makes sure flow `f`'s timer fires at `at` or earlier.
    fn roce_arm_flow_timer<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32, at: SimTime) {
        let r = self.rs();
        if r.flow_timer_at[f as usize] <= at {
            return;
        }
        r.flow_timer_at[f as usize] = at;
        let o = self.flow_timer_origin(f);
        s.schedule(at, o, Ev::FlowTimer(f));
    }

    /// After any congestion-control hook or go-back-N change: keep flow `f`'s timer armed.
    fn roce_rearm_flow<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let cc_t = self.flow_state[f as usize].cc.next_timer().unwrap_or(SimTime::MAX);
        let at = cc_t.min(self.rr().rto_at[f as usize]);
        if at != SimTime::MAX {
            self.roce_arm_flow_timer(s, f, at.max(s.now()));
        }
    }

    /// Port `p` may have something to send: start it now, or make sure `TxDone` comes.
    pub(super) fn roce_kick<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        if !matches!(self.ports[p as usize].device, Device::RoceHost | Device::RoceSwitch) {
            // A credit device's port on a PFC link (a NIC's network side).
            return self.kick(s, p);
        }
        let now = s.now();
        let port = &self.ports[p as usize];
        if port.txdone_pending {
            return;
        }
        if port.busy_until > now {
            let at = port.busy_until;
            self.roce_wake_at(s, p, at);
            return;
        }
        self.roce_try_start(s, p);
    }

    /// Makes port `p` look again at `at`, when it is free: its `TxDone`; for a GPU on a credit
    /// link (inside a server of a RoCEv2 cluster) its NIC wake-up, as for the endpoints of the
    /// credit path, so that the same-instant order of its sends is theirs (a credit update
    /// arriving at `at` goes out before the next data packet).
    #[inline(always)]
    fn roce_wake_at<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, at: SimTime) {
        let node = self.ports[p as usize].node;
        if self.link_fc[p as usize] == LinkFc::Credit && self.device[node as usize] == Device::RoceHost {
            let h = self.host_of_node[node as usize];
            return self.nic_wake_at(s, h, at);
        }
        self.ports[p as usize].txdone_pending = true;
        s.schedule(at, Origin(p), Ev::TxDone(p));
    }

    /// `TxDone` on a RoCE port.
    pub(super) fn roce_on_txdone<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        self.ports[p as usize].txdone_pending = false;
        self.roce_try_start(s, p);
    }

    /// Puts packet `id` on port `p` now and arms `TxDone` for its end, unless `p` is a switch
    /// port with nothing left to send (an arrival or a PFC edge kicks it, and the kick arms
    /// `TxDone` for the same instant: one event fewer per hop, the same order, as `TxDone(p)`
    /// is the only event of its origin).
    fn roce_transmit<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        let done = self.transmit(s, p, id, SimTime::ZERO);
        if self.ports[p as usize].device == Device::RoceSwitch && self.link_fc[p as usize] != LinkFc::Credit {
            let r = self.rr();
            if r.nonempty[p as usize] == 0 && r.pfc_pending[p as usize] == 0 {
                return;
            }
        }
        self.roce_wake_at(s, p, done);
    }

    /// Port `p` may start a frame of priority `prio` now: the peer has not paused it.
    #[inline(always)]
    pub(super) fn roce_may_send(&self, p: u32, prio: u8, now: SimTime) -> bool {
        self.rr().pfc_rx[p as usize].may_send(prio, now)
    }

    /// Sends the PFC frame waiting for port `p`'s transmitter, if any; returns when the port is
    /// free again. A MAC control frame goes ahead of any data.
    #[inline]
    pub(super) fn roce_send_pending_pfc<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        p: u32,
    ) -> Option<SimTime> {
        let pending = self.rr().pfc_pending[p as usize];
        if pending == 0 {
            return None;
        }
        Some(self.roce_send_pfc_frame(s, p, pending))
    }

    /// Puts the encoded PFC frame `pending` on port `p` now.
    #[inline(never)]
    fn roce_send_pfc_frame<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, pending: u64) -> SimTime {
        self.rs().pfc_pending[p as usize] = 0;
        let id = self.packets.alloc(Packet {
            kind: PacketKind::Pause,
            aux: pending,
            wire_bytes: PAUSE_WIRE_BYTES,
            sent_at: s.now(),
            ..Packet::control()
        });
        self.transmit(s, p, id, SimTime::ZERO)
    }

    /// Port `p`'s link lets a packet of `payload`/`wire` bytes on priority (= lane) `prio` go
    /// now: no PAUSE from the peer on a PFC link, enough credits on a credit link (a GPU's
    /// NVLink or PCIe port inside a server of a RoCEv2 cluster).
    #[inline(always)]
    fn roce_link_ready(&self, p: u32, prio: u8, payload: u32, wire: u32, now: SimTime) -> bool {
        match self.link_fc[p as usize] {
            LinkFc::Pfc => self.roce_may_send(p, prio, now),
            LinkFc::Credit => self.ib_credits_cover(p, prio, payload, wire),
            LinkFc::None => true,
        }
    }

    /// Port `p` is idle: send a PFC frame, or the next packet its scheduler picks.
    fn roce_try_start<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        let now = s.now();
        {
            let port = &self.ports[p as usize];
            if port.busy_until > now || port.txdone_pending {
                return;
            }
        }
        if let Some(done) = self.roce_send_pending_pfc(s, p) {
            self.roce_wake_at(s, p, done);
            return;
        }
        if self.link_fc[p as usize] == LinkFc::Credit
            && let Some(done) = self.ib_send_queued_fc(s, p)
        {
            // A credit update of a GPU's port (inside a server of a RoCEv2 cluster).
            self.roce_wake_at(s, p, done);
            return;
        }
        let node = self.ports[p as usize].node;
        let id = if self.is_host[node as usize] {
            let h = self.host_of_node[node as usize];
            self.roce_nic_pick(s, h, p)
        } else {
            self.roce_switch_pick(now, p)
        };
        if let Some(id) = id {
            let prio = self.packets.get(id).vl;
            match self.link_fc[p as usize] {
                LinkFc::Pfc => assert!(
                    self.roce_may_send(p, prio, now),
                    "port {p} started a frame of priority {prio} while paused"
                ),
                LinkFc::Credit => self.ib_charge_credits(p, id),
                LinkFc::None => {}
            }
            self.roce_transmit(s, p, id);
            self.roce_flush_edges(s);
        }
    }

    /// Strict priority, then DWRR: the next packet of switch port `p`, dequeued (MMU release,
    /// ECN at dequeue, XON).
    ///
    /// Works on the port's mask of non-empty priority queues, so a departure costs a few bit
    /// operations whatever the number of priorities; the DWRR walk jumps over priorities that
    /// cannot send and keeps the step count of the plain round-robin (the cap on passes for
    /// small quanta and the final round-robin position are the same).
    fn roce_switch_pick(&mut self, now: SimTime, p: u32) -> Option<u32> {
        let r = self.roce.as_deref_mut().expect("RoCE fabric");
        let rx = &r.pfc_rx[p as usize];
        let mut ready = 0u8;
        let mut waiting = r.nonempty[p as usize];
        while waiting != 0 {
            let prio = waiting.trailing_zeros() as u8;
            waiting &= waiting - 1;
            if rx.may_send(prio, now) {
                ready |= 1 << prio;
            }
        }
        let strict = ready & r.cfg.strict_mask;
        let prio = if strict != 0 {
            7 - strict.leading_zeros() as u8
        } else {
            let eligible = ready & !r.cfg.strict_mask;
            if eligible == 0 {
                return None;
            }
            dwrr_pick(
                eligible,
                &mut r.rr[p as usize],
                &mut r.q[p as usize * NP..(p as usize + 1) * NP],
                &r.cfg.dwrr_quantum_bytes,
                |_, q: &PrioQueue| self.packets.get(*q.ids.front().expect("non-empty")).wire_bytes,
            )?
        };
        let r = self.rs();
        let i = RoceState::ix(p, prio);
        let id = r.q[i].ids.pop_front().expect("picked queue has a packet");
        if r.q[i].ids.is_empty() {
            r.q[i].deficit = 0;
            r.nonempty[p as usize] &= !(1 << prio);
        }
        let pkt = *self.packets.get(id);
        let wire = pkt.wire_bytes as u64;
        let r = self.rs();
        r.q[i].bytes -= wire;
        let left = r.q[i].bytes;
        let mut mark = false;
        if pkt.kind == PacketKind::Data
            && let Some(red) = r.ecn.as_mut()
        {
            mark = red.mark_on_dequeue(p, left);
        }
        if mark {
            r.port_stats[p as usize].ecn_marked[prio as usize] += 1;
            r.totals.ecn_marked += 1;
            self.packets.get_mut(id).marked = true;
        }
        let port = &mut self.ports[p as usize];
        port.queued_bytes -= wire;
        let queued = port.queued_bytes;
        port.stats.queue_bytes.set(now, queued);
        let node = self.ports[p as usize].node as usize;
        let base = self.port_base[node];
        let x = pkt.ingress_port;
        let r = self.rs();
        let mmu = r.mmu[node].as_mut().expect("a switch has an MMU");
        if let Some(edge) = mmu.release(x - base, p - base, prio, wire) {
            r.pending_edges.push((x, prio, edge));
        }
        Some(id)
    }

    /// Host `h`'s NIC (port `p`): the next control packet, else the next data packet of a
    /// flow that congestion control and PFC allow (round-robin). Arms the NIC's wake-up when
    /// a flow waits only for its pacing time.
    fn roce_nic_pick<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32, p: u32) -> Option<u32> {
        let now = s.now();
        if let Some(&id) = self.rr().ctrl_q[h as usize].front() {
            let pk = self.packets.get(id);
            if self.roce_link_ready(p, pk.vl, pk.payload_bytes, pk.wire_bytes, now) {
                self.rs().ctrl_q[h as usize].pop_front();
                return Some(id);
            }
        }
        let n_active = self.nics[h as usize].active.len();
        let mut earliest = SimTime::MAX;
        let credit_link = self.link_fc[p as usize] == LinkFc::Credit;
        let (mtu, header) = (self.cfg.mtu_bytes as u64, self.cfg.header_bytes);
        for _ in 0..n_active {
            let f = self.nics[h as usize].active.pop_front()?;
            let st = &self.flow_state[f as usize];
            let prio = self.flows[f as usize].class;
            if credit_link {
                // Credits short for the flow's next packet: the send queue waits for the
                // flow-control packet that brings them, its order kept (as an HCA's VL queue).
                let payload = st.unsent_bytes.min(mtu) as u32;
                if st.next_send_at <= now && !self.ib_credits_cover(p, prio, payload, payload + header) {
                    self.nics[h as usize].active.push_front(f);
                    break;
                }
            }
            let paused = !self.roce_link_ready(p, prio, 0, 0, now) && !credit_link;
            // Go-back-N window full: wait for an ACK (which kicks the NIC).
            let sent_pos = self.flows[f as usize].size.get() - st.unsent_bytes;
            let window_full = sent_pos - self.rr().snd_acked[f as usize] >= self.rr().gbn_window[f as usize];
            if paused || window_full || st.next_send_at > now {
                if !paused && !window_full {
                    earliest = earliest.min(st.next_send_at);
                }
                self.nics[h as usize].active.push_back(f);
                continue;
            }
            return Some(self.roce_cut(s, h, f));
        }
        if earliest != SimTime::MAX {
            self.nic_wake_at(s, h, earliest);
        }
        None
    }

    /// Cuts flow `f`'s next packet (go-back-N: at its send offset), keeping the flow active
    /// while it has more to send.
    fn roce_cut<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32, f: u32) -> u32 {
        let now = s.now();
        let prio = self.flows[f as usize].class;
        let size = self.flows[f as usize].size.get();
        let seq = size - self.flow_state[f as usize].unsent_bytes;
        let id = self.cut_packet(now, f, prio);
        let wire = self.packets.get(id).wire_bytes;
        self.packets.get_mut(id).aux = seq;
        let gbn = self.rr().cfg.go_back_n.filter(|_| self.rr().qp[f as usize]);
        let payload = self.packets.get(id).payload_bytes as u64;
        let r = self.rs();
        r.last_tx[f as usize] = (now, wire);
        if seq < r.sent_high[f as usize] {
            r.totals.retransmitted += 1;
        }
        r.sent_high[f as usize] = r.sent_high[f as usize].max(seq + payload);
        if let Some(rto) = gbn
            && r.rto_at[f as usize] == SimTime::MAX
        {
            r.rto_at[f as usize] = now + rto;
        }
        if self.flow_state[f as usize].unsent_bytes > 0 {
            self.nics[h as usize].active.push_back(f);
        } else {
            self.rs().flow_active[f as usize] = false;
        }
        self.roce_rearm_flow(s, f);
        id
    }

    /// A flow starts: register it with its NIC.
    pub(super) fn roce_flow_started<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let src = self.flows[f as usize].src;
        self.rs().flow_active[f as usize] = true;
        self.nics[src as usize].active.push_back(f);
        let p = self.nics[src as usize].port;
        self.roce_kick(s, p);
    }

    /// NIC wake-up of host `h` (pacing).
    pub(super) fn roce_nic_wake<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32) {
        let p = self.nics[h as usize].port;
        self.roce_kick(s, p);
    }

    /// Port `x` (a credit device's ingress on a PFC link) asks its sender to stop or go on
    /// with priority `prio`.
    pub(super) fn roce_pfc_edge<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        prio: u8,
        edge: PfcEdge,
    ) {
        self.rs().pending_edges.push((x, prio, edge));
        self.roce_flush_edges(s);
    }

    /// Port `x` has told its sender to stop priority `prio` (and not yet to go on).
    pub(super) fn roce_pfc_asserted(&self, x: u32, prio: u8) -> bool {
        self.rr().pfc_tx[x as usize].is_asserted(prio)
    }

    /// Applies the PFC edges collected during an MMU operation: frames to the ingress
    /// ports' transmitters, refresh timers.
    fn roce_flush_edges<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        while let Some((x, prio, edge)) = self.rs().pending_edges.pop() {
            let r = self.rs();
            let Some(frame) = r.pfc_tx[x as usize].on_edge(now, prio, edge) else {
                continue;
            };
            let st = &mut r.port_stats[x as usize];
            match edge {
                PfcEdge::Xoff => {
                    st.pause_tx[prio as usize] += 1;
                    r.totals.pause_frames += 1;
                }
                PfcEdge::Xon => {
                    st.resume_tx[prio as usize] += 1;
                    r.totals.resume_frames += 1;
                }
            }
            r.pfc_pending[x as usize] = merge(r.pfc_pending[x as usize], &frame);
            if let Some(t) = r.pfc_tx[x as usize].next_timer() {
                self.roce_arm_timer(s, x, t);
            }
            self.roce_kick(s, x);
        }
    }

    /// A packet came out of port `p`'s pipe at the node on the far end.
    pub(super) fn roce_on_arrive<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        let now = s.now();
        let (node, x) = {
            let port = &self.ports[p as usize];
            (port.peer_node, port.peer_port)
        };
        let pkt = *self.packets.get(id);
        if self.is_host[node as usize] {
            if self.link_fc[x as usize] == LinkFc::Credit {
                // A GPU inside a server: its port takes the packet and returns the credits.
                self.ib_endpoint_accept(s, x, id);
            }
            match pkt.kind {
                PacketKind::Data => self.roce_receive(s, id),
                PacketKind::Cnp => {
                    self.packets.free(id);
                    self.rs().totals.cnps_received += 1;
                    self.rs().port_stats[x as usize].cnps_rx += 1;
                    let f = pkt.flow;
                    self.flow_state[f as usize].cc.on_cnp(now);
                    self.roce_rearm_flow(s, f);
                }
                PacketKind::Ack => {
                    self.packets.free(id);
                    self.roce_on_ack(s, pkt.flow, pkt.aux, now.since(pkt.sent_at));
                }
                PacketKind::Nack => {
                    self.packets.free(id);
                    let f = pkt.flow;
                    self.roce_on_ack(s, f, pkt.aux, now.since(pkt.sent_at));
                    // A NACK for an offset already resent since the last go-back is stale
                    // (it was triggered by packets sent before the go-back): ignore it; if
                    // the resent packet is lost too, the timeout recovers.
                    let sent_pos = self.flows[f as usize].size.get() - self.flow_state[f as usize].unsent_bytes;
                    let r = self.rr().rewound_to[f as usize];
                    let stale = r != u64::MAX && r <= pkt.aux && pkt.aux < sent_pos;
                    if !stale {
                        self.roce_go_back(s, f);
                    }
                }
                PacketKind::FlowControl | PacketKind::Pause => unreachable!("not on a RoCE host path"),
            }
            return;
        }
        // A switch: route, admit, queue.
        self.packets.get_mut(id).ingress_port = x;
        let out = self.route(node, pkt.dst_host, pkt.flow_hash);
        let prio = pkt.vl;
        if self.rr().storm.get(RoceState::ix(out, prio)).is_some_and(|&b| b) {
            self.roce_count_watchdog_drop(out, id);
            return;
        }
        let base = self.port_base[node as usize];
        let wire = pkt.wire_bytes as u64;
        let r = self.rs();
        let mmu = r.mmu[node as usize].as_mut().expect("a switch has an MMU");
        match mmu.admit(x - base, out - base, prio, wire) {
            Admit::Dropped(cause) => {
                let lossless = r.cfg.lossless_mask & (1 << prio) != 0;
                let st = &mut r.port_stats[out as usize];
                match cause {
                    DropCause::HeadroomFull => {
                        st.drops_headroom += 1;
                        r.totals.drops_headroom += 1;
                    }
                    DropCause::LossyThreshold => {
                        st.drops_lossy_threshold += 1;
                        r.totals.drops_lossy_threshold += 1;
                    }
                    DropCause::BufferFull => {
                        st.drops_buffer_full += 1;
                        r.totals.drops_buffer_full += 1;
                    }
                }
                debug_assert!(lossless == (cause == DropCause::HeadroomFull));
                let x_busy = self.ports[x as usize].busy_until;
                let r = self.roce.as_deref_mut().expect("RoCE fabric");
                if lossless && r.lossless_asserted {
                    let mmu = r.mmu[node as usize].as_ref().expect("a switch has an MMU");
                    panic!(
                        "losslessness broken at {now}: priority {prio} dropped at switch node {node} (ingress port {x}, egress {out}) although the headroom covers the bound; ingress (bytes, headroom) {:?}, headroom limit {} B, PAUSE asserted {}, pending frame {:#x}, port busy until {}",
                        mmu.ingress_bytes(x - base, prio),
                        mmu.config().headroom_bytes,
                        r.pfc_tx[x as usize].is_asserted(prio),
                        r.pfc_pending[x as usize],
                        x_busy,
                    );
                }
                let port = &mut self.ports[out as usize];
                port.stats.drops += 1;
                port.stats.drop_bytes += wire;
                if pkt.kind == PacketKind::Data {
                    self.records[pkt.flow as usize].packets_dropped += 1;
                    self.totals.packets_dropped += 1;
                    self.totals.payload_bytes_dropped += pkt.payload_bytes as u64;
                } else {
                    self.rs().totals.control_drops += 1;
                }
                self.packets.free(id);
                return;
            }
            Admit::Accepted { edge } => {
                let hr = mmu.ingress_bytes(x - base, prio).1;
                let st = &mut r.port_stats[x as usize];
                st.headroom_max_bytes = st.headroom_max_bytes.max(hr);
                if let Some(edge) = edge {
                    r.pending_edges.push((x, prio, edge));
                }
            }
        }
        let r = self.rs();
        let i = RoceState::ix(out, prio);
        let mut mark = false;
        if pkt.kind == PacketKind::Data
            && let Some(red) = r.ecn.as_mut()
        {
            mark = red.mark_on_enqueue(out, r.q[i].bytes);
        }
        if mark {
            r.port_stats[out as usize].ecn_marked[prio as usize] += 1;
            r.totals.ecn_marked += 1;
        }
        r.q[i].ids.push_back(id);
        r.nonempty[out as usize] |= 1 << prio;
        r.q[i].bytes += wire;
        let qb = r.q[i].bytes;
        let st = &mut r.port_stats[out as usize];
        st.queue_max_bytes[prio as usize] = st.queue_max_bytes[prio as usize].max(qb);
        if mark {
            self.packets.get_mut(id).marked = true;
        }
        let port = &mut self.ports[out as usize];
        port.queued_bytes += wire;
        let queued = port.queued_bytes;
        port.stats.queue_bytes.set(now, queued);
        self.roce_flush_edges(s);
        self.roce_kick(s, out);
    }

    /// A PFC frame (encoded as `aux`) sent by port `from` reaches port `x`.
    pub(super) fn roce_on_pause_frame<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        from: u32,
        aux: u64,
    ) {
        self.roce_on_pfc(s, x, from, &decode(aux));
    }

    /// A PFC frame sent by port `from` reaches port `x` (which sends back over that link).
    fn roce_on_pfc<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32, from: u32, frame: &PfcFrame) {
        let now = s.now();
        let switch_port = self.device[self.ports[x as usize].node as usize] == Device::RoceSwitch;
        let r = self.rs();
        let resumed = r.pfc_rx[x as usize].on_frame(now, frame);
        for prio in 0..NP as u8 {
            let Some(q) = frame.get(prio) else { continue };
            r.port_stats[x as usize].pfc_rx[prio as usize] += 1;
            let i = RoceState::ix(x, prio);
            if q > 0 {
                if r.paused_by[i] == u32::MAX {
                    r.paused_by[i] = from;
                    r.paused_since[i] = now;
                    if let Some(wd) = r.watchdog.get_mut(x as usize)
                        && switch_port
                    {
                        wd.on_pause_state(now, prio, true);
                    }
                }
            } else {
                r.close_pause(x, prio, now);
            }
        }
        if let Some(t) = r.pfc_rx[x as usize].next_expiry(now) {
            self.roce_arm_timer(s, x, t);
        }
        if let Some(t) = self.rr().watchdog.get(x as usize).and_then(|w| w.next_check()) {
            self.roce_arm_timer(s, x, t);
        }
        if resumed != 0 {
            self.roce_kick(s, x);
        }
    }

    /// Port `x`'s timer: PAUSE refreshes (and the deadlock check), pause expiries.
    pub(super) fn roce_on_timer<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32) {
        let now = s.now();
        if self.rr().timer_at[x as usize] != now {
            return; // superseded by an earlier arming
        }
        let r = self.rs();
        r.timer_at[x as usize] = SimTime::MAX;
        let mut refreshed = false;
        if r.pfc_tx[x as usize].next_timer().is_some_and(|t| t <= now)
            && let Some(frame) = r.pfc_tx[x as usize].on_timer(now)
        {
            for prio in 0..NP as u8 {
                if frame.get(prio).is_some() {
                    r.port_stats[x as usize].pause_tx[prio as usize] += 1;
                    r.totals.pause_frames += 1;
                }
            }
            r.pfc_pending[x as usize] = merge(r.pfc_pending[x as usize], &frame);
            refreshed = true;
        }
        // Pauses that expired without a RESUME.
        let mut expired = false;
        for prio in 0..NP as u8 {
            let i = RoceState::ix(x, prio);
            if r.paused_by[i] != u32::MAX && r.pfc_rx[x as usize].may_send(prio, now) {
                let until = r.pfc_rx[x as usize].paused_until(prio);
                r.close_pause(x, prio, until);
                expired = true;
            }
        }
        let node = self.ports[x as usize].node as usize;
        if self.device[node] == Device::RoceSwitch
            && self
                .rr()
                .watchdog
                .get(x as usize)
                .is_some_and(|w| w.next_check().is_some_and(|t| t <= now))
        {
            self.roce_watchdog_check(s, x);
        }
        let r = self.rs();
        let next = r.pfc_tx[x as usize]
            .next_timer()
            .unwrap_or(SimTime::MAX)
            .min(r.pfc_rx[x as usize].next_expiry(now).unwrap_or(SimTime::MAX))
            .min(
                r.watchdog
                    .get(x as usize)
                    .and_then(|w| w.next_check())
                    .unwrap_or(SimTime::MAX),
            );
        if next != SimTime::MAX {
            self.roce_arm_timer(s, x, next);
        }
        if refreshed && self.rr().cfg.deadlock_detection && self.rr().deadlock.is_none() {
            self.roce_check_deadlock(now, x);
        }
        if refreshed || expired {
            self.roce_kick(s, x);
        }
    }

    /// PFC watchdog of switch port `x`: priorities paused continuously for the window enter
    /// a storm: their queue is dropped (counted, MMU released, XON edges sent) and arrivals
    /// for them are dropped until the pause ends.
    fn roce_watchdog_check<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32) {
        let now = s.now();
        let mask = self.rs().watchdog[x as usize].check(now);
        let node = self.ports[x as usize].node as usize;
        let base = self.port_base[node];
        for prio in 0..NP as u8 {
            let i = RoceState::ix(x, prio);
            if mask & (1 << prio) == 0 || self.rr().storm[i] {
                continue;
            }
            let r = self.rs();
            r.storm[i] = true;
            r.port_stats[x as usize].watchdog_storms += 1;
            r.totals.watchdog_storms += 1;
            while let Some(id) = self.rs().q[i].ids.pop_front() {
                let pkt = *self.packets.get(id);
                let wire = pkt.wire_bytes as u64;
                let r = self.roce.as_deref_mut().expect("RoCE fabric");
                r.q[i].bytes -= wire;
                let mmu = r.mmu[node].as_mut().expect("a switch has an MMU");
                if let Some(edge) = mmu.release(pkt.ingress_port - base, x - base, prio, wire) {
                    r.pending_edges.push((pkt.ingress_port, prio, edge));
                }
                self.roce_count_watchdog_drop(x, id);
                let port = &mut self.ports[x as usize];
                port.queued_bytes -= wire;
                let queued = port.queued_bytes;
                port.stats.queue_bytes.set(now, queued);
            }
            let r = self.rs();
            r.q[i].deficit = 0;
            r.nonempty[x as usize] &= !(1 << prio);
        }
        self.roce_flush_edges(s);
    }

    /// Counts and frees packet `id`, dropped by the PFC watchdog at egress port `x`.
    fn roce_count_watchdog_drop(&mut self, x: u32, id: u32) {
        let pkt = *self.packets.get(id);
        let port = &mut self.ports[x as usize];
        port.stats.drops += 1;
        port.stats.drop_bytes += pkt.wire_bytes as u64;
        if pkt.kind == PacketKind::Data {
            self.records[pkt.flow as usize].packets_dropped += 1;
            self.totals.packets_dropped += 1;
            self.totals.payload_bytes_dropped += pkt.payload_bytes as u64;
        }
        let r = self.rs();
        r.port_stats[x as usize].drops_watchdog += 1;
        r.totals.drops_watchdog += 1;
        self.packets.free(id);
    }

    /// Searches for a cycle of paused (egress port, priority) pairs reachable from the port
    /// that port `x` (refreshing a PAUSE) holds paused.
    fn roce_check_deadlock(&mut self, now: SimTime, x: u32) {
        if let Some(d) = self.roce_find_cycle(now, x) {
            self.rs().deadlock = Some(d);
        }
    }

    fn roce_find_cycle(&self, now: SimTime, x: u32) -> Option<Deadlock> {
        let start = self.ports[x as usize].peer_port;
        let r = self.rr();
        let window = r.window.ps();
        // Paused long enough to count (a transient pause is not a deadlock).
        let held = |p: u32, prio: u8| {
            let i = RoceState::ix(p, prio);
            r.paused_by[i] != u32::MAX
                && !r.pfc_rx[p as usize].may_send(prio, now)
                && r.paused_since[i].ps() + window <= now.ps()
        };
        // Successors of (e, prio): egress ports of e's peer node, paused on prio, holding
        // packets of prio that came in over e's link.
        let succ = |e: u32, prio: u8| -> Vec<u32> {
            let peer = &self.ports[e as usize];
            let node = peer.peer_node as usize;
            if self.device[node] != Device::RoceSwitch {
                return Vec::new();
            }
            let ingress = peer.peer_port;
            (self.port_base[node]..self.port_base[node + 1])
                .filter(|&f| {
                    held(f, prio)
                        && r.q[RoceState::ix(f, prio)]
                            .ids
                            .iter()
                            .any(|&id| self.packets.get(id).ingress_port == ingress)
                })
                .collect()
        };
        for prio in 0..NP as u8 {
            if !held(start, prio) {
                continue;
            }
            // Depth-first search with the current path; a back edge to the path is a cycle.
            let mut on_path = vec![false; self.ports.len()];
            let mut done = vec![false; self.ports.len()];
            let mut path: Vec<(u32, Vec<u32>)> = vec![(start, succ(start, prio))];
            on_path[start as usize] = true;
            while let Some((node_port, next)) = path.last_mut() {
                let Some(f) = next.pop() else {
                    let p = *node_port;
                    on_path[p as usize] = false;
                    done[p as usize] = true;
                    path.pop();
                    continue;
                };
                if on_path[f as usize] {
                    let from = path.iter().position(|(p, _)| *p == f).expect("on the path");
                    let cycle: Vec<(u32, u8)> = path[from..].iter().map(|(p, _)| (*p, prio)).collect();
                    let formed_at = cycle
                        .iter()
                        .map(|&(p, pr)| r.paused_since[RoceState::ix(p, pr)])
                        .max()
                        .unwrap_or(now);
                    return Some(Deadlock {
                        cycle,
                        formed_at,
                        detected_at: now,
                    });
                }
                if !done[f as usize] {
                    on_path[f as usize] = true;
                    let n = succ(f, prio);
                    path.push((f, n));
                }
            }
        }
        None
    }

    /// The receiver of flow `f` sends a CNP, ACK or NACK (`echo`: the send time of the
    /// packet it answers, for the sender's RTT sample) on the control priority.
    fn roce_send_control<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        f: u32,
        kind: PacketKind,
        echo: SimTime,
    ) {
        let fl = self.flows[f as usize];
        let nic_port = self.nics[fl.dst as usize].port;
        let r = self.rs();
        let (cnp_wire, ack_wire) = r.ctrl_wire;
        let prio = r.cfg.control_priority;
        let aux = r.rcv_expected[f as usize];
        let wire = match kind {
            PacketKind::Cnp => {
                r.totals.cnps_sent += 1;
                r.port_stats[nic_port as usize].cnps_tx += 1;
                cnp_wire
            }
            PacketKind::Ack => {
                r.totals.acks_sent += 1;
                ack_wire
            }
            _ => {
                r.totals.nacks_sent += 1;
                ack_wire
            }
        };
        let id = self.packets.alloc(Packet {
            kind,
            flow: f,
            dst_host: fl.src,
            wire_bytes: wire,
            // Reverse direction of the flow: its own ECMP entropy (another UDP source port).
            flow_hash: self.flow_hash_of(f).rotate_left(17),
            sent_at: echo,
            aux,
            vl: prio,
            ..Packet::control()
        });
        self.rs().ctrl_q[fl.dst as usize].push_back(id);
        let p = self.nics[fl.dst as usize].port;
        self.roce_kick(s, p);
    }

    /// A data packet reaches its destination NIC: deliver (in order, under go-back-N), send
    /// a CNP for a CE mark (at most one per `cnp_interval` per flow), ACK or NACK.
    fn roce_receive<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, id: u32) {
        let now = s.now();
        let pkt = *self.packets.get(id);
        let f = pkt.flow;
        let r = self.rs();
        // Load/store flows inside a server have no queue pair: no ACK, no go-back-N.
        let qp = r.qp[f as usize];
        let gbn = qp && r.cfg.go_back_n.is_some();
        let acks = qp && (r.cfg.acks || gbn || matches!(r.cfg.cc, RoceCc::Timely(_)));
        let exp = r.rcv_expected[f as usize];
        let mut reply = None;
        if !gbn || pkt.aux == exp {
            r.rcv_expected[f as usize] += pkt.payload_bytes as u64;
            r.nack_sent[f as usize] = false;
            self.deliver(s, id);
            if acks {
                reply = Some(PacketKind::Ack);
            }
        } else {
            // Out of order (a gap: NACK once per gap) or a duplicate (ACK again).
            r.totals.receiver_discards += 1;
            if pkt.aux > exp && !r.nack_sent[f as usize] {
                r.nack_sent[f as usize] = true;
                reply = Some(PacketKind::Nack);
            } else if pkt.aux < exp {
                reply = Some(PacketKind::Ack);
            }
            self.records[f as usize].packets_dropped += 1;
            self.totals.packets_dropped += 1;
            self.totals.payload_bytes_dropped += pkt.payload_bytes as u64;
            self.packets.free(id);
        }
        if pkt.marked {
            let r = self.rs();
            let last = r.last_cnp[f as usize];
            if last == SimTime::MAX || now >= last + r.cfg.cnp_interval {
                r.last_cnp[f as usize] = now;
                self.roce_send_control(s, f, PacketKind::Cnp, now);
            }
        }
        if let Some(k) = reply {
            self.roce_send_control(s, f, k, pkt.sent_at);
        }
    }

    /// An ACK or NACK for flow `f` says the receiver has `cum` bytes in order.
    fn roce_on_ack<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32, cum: u64, rtt: Duration) {
        let now = s.now();
        let r = self.rs();
        let old = r.snd_acked[f as usize];
        if cum > old {
            r.snd_acked[f as usize] = cum;
            if let Some(rto) = r.cfg.go_back_n {
                let size = self.flows[f as usize].size.get();
                let r = self.rs();
                r.rto_at[f as usize] = if cum >= size { SimTime::MAX } else { now + rto };
            }
            self.flow_state[f as usize].cc.on_ack(now, cum - old, rtt);
            if self.rr().gbn_window[f as usize] != u64::MAX {
                let src = self.flows[f as usize].src;
                let p = self.nics[src as usize].port;
                self.roce_kick(s, p);
            }
        }
        self.roce_rearm_flow(s, f);
    }

    /// Go-back-N: resend flow `f` from the first byte the receiver lacks.
    fn roce_go_back<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let size = self.flows[f as usize].size.get();
        let acked = self.rr().snd_acked[f as usize];
        if acked >= size {
            return;
        }
        self.flow_state[f as usize].unsent_bytes = size - acked;
        self.rs().rewound_to[f as usize] = acked;
        let src = self.flows[f as usize].src;
        if !self.rr().flow_active[f as usize] {
            self.rs().flow_active[f as usize] = true;
            self.nics[src as usize].active.push_back(f);
        }
        let p = self.nics[src as usize].port;
        self.roce_kick(s, p);
    }

    /// Flow `f`'s timer: congestion-control timer (rate increase: re-pace the waiting
    /// packet), go-back-N timeout.
    pub(super) fn roce_on_flow_timer<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let now = s.now();
        if self.rr().flow_timer_at[f as usize] != now {
            return;
        }
        self.rs().flow_timer_at[f as usize] = SimTime::MAX;
        let st = &mut self.flow_state[f as usize];
        if st.cc.next_timer().is_some_and(|t| t <= now) {
            st.cc.on_timer(now);
            // The next packet was paced at the old rate: bring it forward to the new one.
            let (t0, wire) = self.rr().last_tx[f as usize];
            let st = &mut self.flow_state[f as usize];
            if wire > 0 {
                let at = (t0 + serialization_time(Bytes(wire as u64), st.cc.rate())).max(now);
                if at < st.next_send_at {
                    st.next_send_at = at;
                    let src = self.flows[f as usize].src;
                    if self.rr().flow_active[f as usize] {
                        self.nic_wake_at(s, src, at);
                    }
                }
            }
        }
        if self.rr().rto_at[f as usize] <= now {
            let r = self.rs();
            r.totals.timeouts += 1;
            r.rto_at[f as usize] = now + r.cfg.go_back_n.expect("a timeout needs go-back-N");
            self.roce_go_back(s, f);
        }
        self.roce_rearm_flow(s, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// Uniform in `lo..=hi` (the modulo bias does not matter to this test).
    fn uniform(rng: &mut sim_core::SimRng, lo: u32, hi: u32) -> u32 {
        lo + (rng.next_u64() % (hi - lo + 1) as u64) as u32
    }

    /// The round-robin of the engine before the jump: one priority per step.
    fn dwrr_stepwise(
        eligible: u8,
        rr: &mut u8,
        deficit: &mut [u32],
        quantum: &[u32; NP],
        head_wire: impl Fn(u8) -> u32,
    ) -> Option<u8> {
        for _ in 0..NP * 64 {
            let prio = *rr;
            if eligible & (1 << prio) != 0 {
                let head = head_wire(prio);
                if deficit[prio as usize] >= head {
                    deficit[prio as usize] -= head;
                    return Some(prio);
                }
                deficit[prio as usize] += quantum[prio as usize];
            }
            *rr = (prio + 1) % NP as u8;
        }
        None
    }

    #[test]
    fn dwrr_jump_picks_what_stepping_picks() {
        let mut rng = sim_core::RngStreams::new(7).stream(0);
        for case in 0..20_000 {
            let eligible = uniform(&mut rng, 1, 255) as u8;
            let mut quantum = [0u32; NP];
            let mut heads = [0u32; NP];
            // Small quanta in some cases, so that the step cap is reached too.
            let qmax = if case % 4 == 0 { 8 } else { 9000 };
            for p in 0..NP {
                quantum[p] = uniform(&mut rng, 1, qmax);
                heads[p] = uniform(&mut rng, 64, 4200);
            }
            let mut deficit = [0u32; NP];
            for (p, d) in deficit.iter_mut().enumerate() {
                if eligible & (1 << p) != 0 {
                    *d = uniform(&mut rng, 0, 4999);
                }
            }
            let rr0 = uniform(&mut rng, 0, NP as u32 - 1) as u8;
            let (mut rr_a, mut def_a) = (rr0, deficit);
            let (mut rr_b, mut def_b) = (rr0, deficit);
            let a = dwrr_pick(eligible, &mut rr_a, &mut def_a, &quantum, |p, _| heads[p as usize]);
            let b = dwrr_stepwise(eligible, &mut rr_b, &mut def_b, &quantum, |p| heads[p as usize]);
            assert_eq!((a, rr_a), (b, rr_b), "case {case}");
            assert_eq!(def_a, def_b, "case {case}");
        }
    }
}
