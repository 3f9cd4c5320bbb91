//! Priority-based flow control (PFC, IEEE 802.1Qbb): pure state machines and arithmetic.
//!
//! Facts and defaults: `shared/reference/models.md` §2.2 (frame, quanta, headroom formulas),
//! §2.3 (HPCC-sim resume offset), §2.8 (storms, watchdog), validation case §5.2.
//!
//! A PFC frame is a MAC Control frame (EtherType 0x8808, opcode 0x0101, DA
//! 01-80-C2-00-00-01, 64 B minimum) with an 8-bit class-enable vector and eight 16-bit pause
//! timers in *quanta* of 512 bit times at the link's rate. Quanta 0 means "resume now".
//!
//! Two halves, one at each end of a link, talking only through frames that cross the link
//! with its delay (back-pressure is a message):
//! - a [`PauseSender`], per *ingress* port of the congested node: turns the buffer model's
//!   XOFF/XON decisions (see [`crate::models::buffer::SharedBuffer`], or [`Hysteresis`] for a
//!   static threshold) into PAUSE/RESUME frames, and refreshes a PAUSE before it expires
//!   while the priority is still congested (practice: XOFF = maximum quanta, refreshed;
//!   XON = quanta 0). One file per variant, selected by [`AnyPauseSender`]:
//!   `priority.rs` ([`PfcSender`], IEEE 802.1Qbb, the default) and `global.rs`
//!   ([`GlobalPauseSender`], IEEE 802.3x link-level PAUSE: one congested priority stops the
//!   whole link).
//! - [`PfcReceiver`], per *egress* port of the upstream node: keeps, per priority, the time
//!   until which that priority may not start a frame, and counts the paused time.
//!
//! [`PfcWatchdog`] detects a priority paused continuously longer than a window (storm).
//! Headroom sizing is a set of pure functions ([`mlx5_xoff_bytes`], [`headroom_bytes`],
//! [`hpcc_sim_headroom_bytes`]).

use sim_core::{BitsPerSec, Bytes, Duration, SimTime, serialization_time};

mod global;
mod priority;

pub use global::GlobalPauseSender;
pub use priority::PfcSender;

/// Number of priorities (802.1p PCP values).
pub const N_PRIORITIES: usize = 8;
/// One pause quantum is 512 bit times (802.1Qbb; models.md §2.2), i.e. the time to send 64 B.
pub const PAUSE_QUANTUM_BITS: u64 = 512;
/// Largest pause time a frame can carry, in quanta (16-bit field).
pub const MAX_PAUSE_QUANTA: u16 = u16::MAX;
/// PFC frame size: the 64-B Ethernet minimum frame (incl. FCS).
pub const PFC_FRAME_BYTES: u64 = 64;
/// PFC frame on the wire: 64 B + preamble/SFD 8 B + inter-frame gap 12 B (models.md §2.1).
pub const PFC_FRAME_WIRE_BYTES: u64 = 84;
/// XON hysteresis of HPCC-sim's MMU: resume when shared use + 3 KB ≤ threshold
/// (`switch-mmu.cc` `resume_offset`, models.md §2.3, §5.2).
pub const HPCC_SIM_RESUME_OFFSET_BYTES: u64 = 3 * 1024;
/// Propagation delay in fibre/copper: 5 ns per metre (models.md §2.2 generic derivation).
pub const PROPAGATION_PS_PER_M: u64 = 5_000;
/// Storm-detection window of [`PfcWatchdog`]: 100 ms, the order of magnitude in models.md
/// §2.8 ("stall of ~100 ms-scale", recalled from Guo et al. SIGCOMM'16; no primary default).
pub const WATCHDOG_DETECTION_PS: u64 = 100_000_000_000;

/// Duration of one pause quantum (512 bit times) at `rate`, rounded up to the ps.
pub fn quantum_duration(rate: BitsPerSec) -> Duration {
    serialization_time(Bytes(PAUSE_QUANTUM_BITS / 8), rate)
}

/// Duration of a pause of `quanta` at `rate` (exact in bit times, rounded up to the ps).
pub fn pause_duration(quanta: u16, rate: BitsPerSec) -> Duration {
    serialization_time(Bytes(quanta as u64 * PAUSE_QUANTUM_BITS / 8), rate)
}

/// The fewest quanta that cover `d` at `rate`, saturating at [`MAX_PAUSE_QUANTA`].
pub fn quanta_for(d: Duration, rate: BitsPerSec) -> u16 {
    let bits = (d.ps() as u128 * rate.0 as u128).div_ceil(sim_core::time::PS_PER_S as u128);
    let q = bits.div_ceil(PAUSE_QUANTUM_BITS as u128);
    q.min(MAX_PAUSE_QUANTA as u128) as u16
}

/// A PFC frame: which priorities it addresses and the pause time of each (quanta 0 = resume).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PfcFrame {
    /// Class-enable vector: bit `p` set = the frame carries a timer for priority `p`.
    pub enable_mask: u8,
    /// Pause time per priority in quanta (ignored where the enable bit is clear).
    pub quanta: [u16; N_PRIORITIES],
}

impl PfcFrame {
    /// A frame pausing `prio` for `quanta` (0 = resume).
    pub fn single(prio: u8, quanta: u16) -> Self {
        let mut f = PfcFrame::default();
        f.set(prio, quanta);
        f
    }
    pub fn set(&mut self, prio: u8, quanta: u16) {
        assert!((prio as usize) < N_PRIORITIES, "PFC priority {prio} out of range 0..8");
        self.enable_mask |= 1 << prio;
        self.quanta[prio as usize] = quanta;
    }
    /// The timer for `prio`, if the frame carries one.
    pub fn get(&self, prio: u8) -> Option<u16> {
        (self.enable_mask & (1 << prio) != 0).then_some(self.quanta[prio as usize])
    }
    /// The timers the frame carries, `(priority, quanta)` by ascending priority: the set bits
    /// of the class-enable vector only (a frame usually addresses one priority of eight, and
    /// the incast mirror handles 166,000 frames).
    pub fn timers(&self) -> impl Iterator<Item = (u8, u16)> + '_ {
        let mut left = self.enable_mask;
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            let prio = left.trailing_zeros() as u8;
            left &= left - 1;
            Some((prio, self.quanta[prio as usize]))
        })
    }
    /// Size on the wire (preamble, SFD and inter-frame gap included).
    pub const fn wire_bytes(&self) -> u64 {
        PFC_FRAME_WIRE_BYTES
    }
}

/// An XOFF/XON decision for one (ingress port, priority).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PfcEdge {
    /// Occupancy reached the XOFF threshold: pause the upstream.
    Xoff,
    /// Occupancy fell to the XON threshold: resume the upstream.
    Xon,
}

/// Static-threshold hysteresis for one (ingress port, priority): XOFF when occupancy reaches
/// `xoff_bytes`, XON when it falls to `xoff_bytes − resume_offset_bytes` (e.g. ns3-rdma static
/// mode: XON at limit − 2 cells; mlx5: XON at XOFF threshold − MTU). Dynamic thresholds come
/// from [`crate::models::buffer::SharedBuffer`] instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hysteresis {
    xoff_bytes: u64,
    xon_bytes: u64,
    paused: bool,
}

impl Hysteresis {
    /// Panics if `resume_offset_bytes > xoff_bytes`.
    pub fn new(xoff_bytes: u64, resume_offset_bytes: u64) -> Self {
        assert!(
            resume_offset_bytes <= xoff_bytes,
            "resume offset {resume_offset_bytes} B exceeds XOFF threshold {xoff_bytes} B"
        );
        Hysteresis {
            xoff_bytes,
            xon_bytes: xoff_bytes - resume_offset_bytes,
            paused: false,
        }
    }
    pub fn is_paused(&self) -> bool {
        self.paused
    }
    /// Call whenever the occupancy changes; returns the edge it caused, if any.
    pub fn update(&mut self, occupancy_bytes: u64) -> Option<PfcEdge> {
        if !self.paused && occupancy_bytes >= self.xoff_bytes {
            self.paused = true;
            Some(PfcEdge::Xoff)
        } else if self.paused && occupancy_bytes <= self.xon_bytes {
            self.paused = false;
            Some(PfcEdge::Xon)
        } else {
            None
        }
    }
}

/// The pausing side of link-level flow control on one ingress port: turns the buffer model's
/// XOFF/XON decisions per priority into the frames that cross the reverse link, and refreshes
/// a PAUSE before it expires. One file per variant (the crossbar recipe,
/// `docs/models/extending.md`); [`AnyPauseSender`] selects one per run.
///
/// Hooks: [`PauseSender::on_edge`] when the buffer model reports XOFF/XON for a priority of
/// this ingress port; [`PauseSender::on_timer`] at [`PauseSender::next_timer`]. Each returns
/// the frame to put on the reverse link now, if any. The receiving side is [`PfcReceiver`]
/// for every variant: a frame names the priorities it stops.
pub trait PauseSender {
    /// The buffer model reported `edge` for `prio` of this ingress port at `now`.
    fn on_edge(&mut self, now: SimTime, prio: u8, edge: PfcEdge) -> Option<PfcFrame>;
    /// When a refresh is due next (`None`: nothing asserted).
    fn next_timer(&self) -> Option<SimTime>;
    /// Refreshes what is due at `now`, in one frame.
    fn on_timer(&mut self, now: SimTime) -> Option<PfcFrame>;
    /// Whether this port holds `prio` congested (an XOFF not yet followed by its XON).
    fn is_asserted(&self, prio: u8) -> bool;
    /// PAUSE frames (incl. refreshes) and RESUME frames sent on behalf of `prio`.
    fn frames_sent(&self, prio: u8) -> (u64, u64);
}

/// Which pausing discipline a run's links use (`[fabric.roce] pause`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PauseKind {
    /// IEEE 802.1Qbb priority flow control: a PAUSE stops only the congested priority.
    #[default]
    Priority,
    /// IEEE 802.3x link-level PAUSE: any congested lossless priority stops the whole link.
    Global,
}

impl PauseKind {
    /// The name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            PauseKind::Priority => "pfc",
            PauseKind::Global => "global",
        }
    }
}

/// The pausing discipline of one ingress port (closed enum over the variants' files).
#[derive(Clone, Debug)]
pub enum AnyPauseSender {
    Priority(PfcSender),
    Global(GlobalPauseSender),
}

impl AnyPauseSender {
    /// A sender of `kind` whose PAUSE frames carry `pause_quanta`, refreshed every
    /// `refresh_after` while congested.
    pub fn new(kind: PauseKind, pause_quanta: u16, refresh_after: Duration) -> Self {
        match kind {
            PauseKind::Priority => AnyPauseSender::Priority(PfcSender::new(pause_quanta, refresh_after)),
            PauseKind::Global => AnyPauseSender::Global(GlobalPauseSender::new(pause_quanta, refresh_after)),
        }
    }
}

impl PauseSender for AnyPauseSender {
    #[inline]
    fn on_edge(&mut self, now: SimTime, prio: u8, edge: PfcEdge) -> Option<PfcFrame> {
        match self {
            AnyPauseSender::Priority(s) => s.on_edge(now, prio, edge),
            AnyPauseSender::Global(s) => s.on_edge(now, prio, edge),
        }
    }
    #[inline]
    fn next_timer(&self) -> Option<SimTime> {
        match self {
            AnyPauseSender::Priority(s) => s.next_timer(),
            AnyPauseSender::Global(s) => s.next_timer(),
        }
    }
    #[inline]
    fn on_timer(&mut self, now: SimTime) -> Option<PfcFrame> {
        match self {
            AnyPauseSender::Priority(s) => s.on_timer(now),
            AnyPauseSender::Global(s) => s.on_timer(now),
        }
    }
    #[inline]
    fn is_asserted(&self, prio: u8) -> bool {
        match self {
            AnyPauseSender::Priority(s) => s.is_asserted(prio),
            AnyPauseSender::Global(s) => s.is_asserted(prio),
        }
    }
    #[inline]
    fn frames_sent(&self, prio: u8) -> (u64, u64) {
        match self {
            AnyPauseSender::Priority(s) => s.frames_sent(prio),
            AnyPauseSender::Global(s) => s.frames_sent(prio),
        }
    }
}

/// The receiving side of PFC on one egress port (upstream of the congestion): per priority,
/// until when it may not start a frame, and how long it has been paused in total.
///
/// Hooks: [`PfcReceiver::on_frame`] when a PFC frame arrives at this port; ask
/// [`PfcReceiver::may_send`] before starting a frame of a priority (a frame already in
/// serialization completes); wake the port at [`PfcReceiver::next_expiry`].
#[derive(Clone, Debug)]
pub struct PfcReceiver {
    rate: BitsPerSec,
    paused_from: [SimTime; N_PRIORITIES],
    paused_until: [SimTime; N_PRIORITIES],
    paused_ps_closed: [u64; N_PRIORITIES],
    frames_received: [u64; N_PRIORITIES],
}

impl PfcReceiver {
    /// `rate`: the link rate, which sets the length of a quantum.
    pub fn new(rate: BitsPerSec) -> Self {
        assert!(rate.0 > 0, "PFC receiver on a zero-rate link");
        PfcReceiver {
            rate,
            paused_from: [SimTime::ZERO; N_PRIORITIES],
            paused_until: [SimTime::ZERO; N_PRIORITIES],
            paused_ps_closed: [0; N_PRIORITIES],
            frames_received: [0; N_PRIORITIES],
        }
    }

    /// A PFC frame arrives at `now`: each enabled priority is paused for its quanta from
    /// `now` (a new timer replaces the old one), or resumed at once for quanta 0.
    /// Returns the mask of priorities that may send again now (resumed).
    pub fn on_frame(&mut self, now: SimTime, frame: &PfcFrame) -> u8 {
        let mut resumed = 0u8;
        for (prio, q) in frame.timers() {
            let i = prio as usize;
            self.frames_received[i] += 1;
            // Close the current pause interval at `now` (or where it already ended).
            let end = self.paused_until[i].min(now);
            if end > self.paused_from[i] {
                self.paused_ps_closed[i] += end.ps() - self.paused_from[i].ps();
            }
            let was_paused = self.paused_until[i] > now;
            self.paused_from[i] = now;
            self.paused_until[i] = if q == 0 {
                now
            } else {
                now + pause_duration(q, self.rate)
            };
            if q == 0 && was_paused {
                resumed |= 1 << prio;
            }
        }
        resumed
    }

    /// Cache hint (no effect on results) for the pause timer [`PfcReceiver::may_send`] reads:
    /// the engine asks for it a few events ahead of a departure.
    #[inline(always)]
    pub fn prefetch_pause(&self, prio: u8) {
        if let Some(t) = self.paused_until.get(prio as usize) {
            sim_core::prefetch(t);
        }
    }

    /// Whether a frame of `prio` may start at `now`.
    pub fn may_send(&self, prio: u8, now: SimTime) -> bool {
        self.paused_until[prio as usize] <= now
    }
    /// Until when `prio` is paused (≤ now: not paused).
    pub fn paused_until(&self, prio: u8) -> SimTime {
        self.paused_until[prio as usize]
    }
    /// The earliest pause expiry after `now` (when the port should look again).
    pub fn next_expiry(&self, now: SimTime) -> Option<SimTime> {
        self.paused_until.iter().copied().filter(|&t| t > now).min()
    }
    /// Total time `prio` has been paused up to `now`.
    pub fn paused_time(&self, prio: u8, now: SimTime) -> Duration {
        let i = prio as usize;
        let end = self.paused_until[i].min(now);
        let open = end.ps().saturating_sub(self.paused_from[i].ps());
        Duration(self.paused_ps_closed[i] + open)
    }
    pub fn frames_received(&self, prio: u8) -> u64 {
        self.frames_received[prio as usize]
    }
}

/// PFC storm detection (SONiC-style watchdog, models.md §2.8): a priority paused
/// continuously for `detection` is reported; what to do then (ignore PAUSE, drop the
/// queue's packets) is the engine's choice.
#[derive(Clone, Debug)]
pub struct PfcWatchdog {
    detection: Duration,
    paused_since: [Option<SimTime>; N_PRIORITIES],
    storms: [u64; N_PRIORITIES],
}

impl PfcWatchdog {
    pub fn new(detection: Duration) -> Self {
        assert!(detection.ps() > 0, "watchdog window must be > 0");
        PfcWatchdog {
            detection,
            paused_since: [None; N_PRIORITIES],
            storms: [0; N_PRIORITIES],
        }
    }
    /// Fires when the port's pause state of `prio` changes (from [`PfcReceiver`]).
    pub fn on_pause_state(&mut self, now: SimTime, prio: u8, paused: bool) {
        let s = &mut self.paused_since[prio as usize];
        match (paused, *s) {
            (true, None) => *s = Some(now),
            (false, _) => *s = None,
            (true, Some(_)) => {}
        }
    }
    /// When the next storm could be declared (`None`: nothing paused).
    pub fn next_check(&self) -> Option<SimTime> {
        self.paused_since.iter().flatten().map(|&t| t + self.detection).min()
    }
    /// Priorities paused continuously for at least the window at `now` (bit mask); each is
    /// reported once per continuous pause (its timer restarts).
    pub fn check(&mut self, now: SimTime) -> u8 {
        let mut mask = 0u8;
        for (i, s) in self.paused_since.iter_mut().enumerate() {
            if let Some(t) = *s
                && t + self.detection <= now
            {
                mask |= 1 << i;
                self.storms[i] += 1;
                *s = Some(now);
            }
        }
        mask
    }
    pub fn storms(&self, prio: u8) -> u64 {
        self.storms[prio as usize]
    }
}

/// NVIDIA mlx5 driver headroom (`port_buffer.c: calculate_xoff`, models.md §2.2):
/// `xoff = (301 + 2.16·cable_m)·speed_gbps + 2.72·mtu`, speed floored at 40 Gb/s, rounded up
/// to the byte (the driver's own integer arithmetic programs slightly less, models.md §8).
pub fn mlx5_xoff_bytes(cable_m: u64, speed: BitsPerSec, mtu_bytes: u64) -> u64 {
    let gbps = (speed.0 / 1_000_000_000).max(40) as u128;
    let num = (30_100 + 216 * cable_m as u128) * gbps + 272 * mtu_bytes as u128;
    num.div_ceil(100) as u64
}

/// Generic headroom bound (models.md §2.2): the bytes that can still arrive on a
/// (port, priority) after its XOFF decision,
/// `(2·cable_m·5 ns/m + response)·rate/8 + 2·max_frame_wire_bytes + PFC frame`:
/// the round trip of the PAUSE on the cable plus the upstream's response time at line
/// rate, one maximum frame already in serialization at each end, and the PFC frame itself.
/// Rounded up to the byte.
pub fn headroom_bytes(cable_m: u64, rate: BitsPerSec, max_frame_wire_bytes: u64, response: Duration) -> u64 {
    let t_ps = 2 * cable_m as u128 * PROPAGATION_PS_PER_M as u128 + response.ps() as u128;
    let in_flight = (t_ps * rate.0 as u128).div_ceil(8 * sim_core::time::PS_PER_S as u128) as u64;
    in_flight + 2 * max_frame_wire_bytes + PFC_FRAME_WIRE_BYTES
}

/// HPCC-sim's headroom per port: `3 · rate · link_delay / 8` (`third.cc`, models.md §2.2).
pub fn hpcc_sim_headroom_bytes(rate: BitsPerSec, link_delay: Duration) -> u64 {
    (3 * rate.0 as u128 * link_delay.ps() as u128 / (8 * sim_core::time::PS_PER_S as u128)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::pfc::PauseSender;

    /// `timers` lists exactly the priorities `get` answers for, with the same quanta, in
    /// ascending order: every class-enable vector, with a distinct quanta per priority.
    #[test]
    fn timers_are_the_enabled_priorities_in_order() {
        for mask in 0..=255u8 {
            let mut f = PfcFrame::default();
            for p in (0..8u8).filter(|p| mask & (1 << p) != 0) {
                f.set(p, 100 * p as u16 + mask as u16);
            }
            let want: Vec<(u8, u16)> = (0..8u8).filter_map(|p| f.get(p).map(|q| (p, q))).collect();
            assert_eq!(f.timers().collect::<Vec<_>>(), want, "mask {mask:#010b}");
        }
    }

    const fn gbps(x: u64) -> BitsPerSec {
        BitsPerSec::from_gbps(x)
    }

    /// The pause-quanta table of models.md §2.2, to the digits printed there.
    #[test]
    fn pause_quanta_table() {
        // (rate, 1 quantum in ps, max pause in ps, printed max pause in ns rounded)
        let rows: [(u64, u64, u64, &str); 5] = [
            (25, 20_480, 1_342_156_800, "1342 µs"),
            (100, 5_120, 335_539_200, "335.5 µs"),
            (200, 2_560, 167_769_600, "167.8 µs"),
            (400, 1_280, 83_884_800, "83.9 µs"),
            (800, 640, 41_942_400, "41.9 µs"),
        ];
        for (g, q_ps, max_ps, printed) in rows {
            assert_eq!(quantum_duration(gbps(g)).ps(), q_ps, "{g}G quantum");
            let max = pause_duration(MAX_PAUSE_QUANTA, gbps(g));
            assert_eq!(max.ps(), max_ps, "{g}G max pause ({printed})");
            // The printed value, rounded to 0.1 µs (1 µs for 25G).
            let tenth_us = (max.ps() + 50_000) / 100_000;
            let expect: u64 = match g {
                25 => 13_420,
                100 => 3_355,
                200 => 1_678,
                400 => 839,
                _ => 419,
            };
            let got = if g == 25 {
                (max.ps() + 500_000) / 1_000_000 * 10
            } else {
                tenth_us
            };
            assert_eq!(got, expect, "{g}G: {printed}");
        }
        assert_eq!(quanta_for(Duration::from_ns(1), gbps(100)), 1);
        assert_eq!(quanta_for(Duration(5_120), gbps(100)), 1);
        assert_eq!(quanta_for(Duration(5_121), gbps(100)), 2);
        assert_eq!(quanta_for(Duration::from_ms(1), gbps(100)), MAX_PAUSE_QUANTA);
    }

    #[test]
    fn mlx5_worked_values() {
        // models.md §2.2 worked values and §5.2.
        assert_eq!(mlx5_xoff_bytes(3, gbps(100), 4200), 42_172); // "42.2 KB"
        assert_eq!(mlx5_xoff_bytes(5, gbps(100), 4200), 42_604); // §5.2 "≈42.6 KB"
        assert_eq!(mlx5_xoff_bytes(100, gbps(100), 9216), 76_768); // "76.8 KB"
        assert_eq!(mlx5_xoff_bytes(3, gbps(400), 4200), 134_416); // "134.4 KB"
        assert_eq!(mlx5_xoff_bytes(100, gbps(400), 4200), 218_224); // "218.2 KB"
        assert_eq!(mlx5_xoff_bytes(30, gbps(800), 4200), 304_064); // "304 KB"
        // Speed floored at 40G.
        assert_eq!(mlx5_xoff_bytes(0, gbps(25), 0), 301 * 40);
    }

    #[test]
    fn generic_and_hpcc_headroom() {
        // 100G, 5 m, 2.4 µs response: (50 ns + 2400 ns)·12.5 B/ns = 30625 B, + 2·4282 + 84.
        assert_eq!(
            headroom_bytes(5, gbps(100), 4282, Duration::from_ns(2400)),
            30_625 + 2 * 4282 + 84
        );
        // HPCC-sim: 100G, 1 µs → 37.5 KB.
        assert_eq!(hpcc_sim_headroom_bytes(gbps(100), Duration::from_us(1)), 37_500);
    }

    #[test]
    fn hysteresis_xoff_then_xon_at_offset() {
        let mut h = Hysteresis::new(100_000, HPCC_SIM_RESUME_OFFSET_BYTES);
        assert_eq!(h.update(99_999), None);
        assert_eq!(h.update(100_000), Some(PfcEdge::Xoff));
        assert_eq!(h.update(120_000), None);
        assert_eq!(h.update(100_000 - 3072 + 1), None);
        assert_eq!(h.update(100_000 - 3072), Some(PfcEdge::Xon));
        assert_eq!(h.update(0), None);
    }

    #[test]
    fn sender_pauses_refreshes_and_resumes() {
        let rate = gbps(100);
        let mut s = PfcSender::with_defaults(rate);
        let half = pause_duration(MAX_PAUSE_QUANTA, rate).ps() / 2;
        assert_eq!(s.next_timer(), None);
        let f = s.on_edge(SimTime(1000), 3, PfcEdge::Xoff).unwrap();
        assert_eq!(f.enable_mask, 1 << 3);
        assert_eq!(f.get(3), Some(MAX_PAUSE_QUANTA));
        assert_eq!(f.get(2), None);
        assert_eq!(s.on_edge(SimTime(2000), 3, PfcEdge::Xoff), None, "already asserted");
        assert_eq!(s.next_timer(), Some(SimTime(1000 + half)));
        assert_eq!(s.on_timer(SimTime(1000 + half - 1)), None);
        // A second priority joins; the refresh of prio 3 comes alone.
        s.on_edge(SimTime(5000), 6, PfcEdge::Xoff).unwrap();
        let r = s.on_timer(SimTime(1000 + half)).unwrap();
        assert_eq!(r.enable_mask, 1 << 3);
        assert_eq!(s.next_timer(), Some(SimTime(5000 + half)));
        let x = s.on_edge(SimTime(9000), 3, PfcEdge::Xon).unwrap();
        assert_eq!(x.get(3), Some(0), "XON is a pause of 0 quanta");
        assert_eq!(s.on_edge(SimTime(9001), 3, PfcEdge::Xon), None);
        assert_eq!(s.frames_sent(3), (2, 1));
        assert!(s.is_asserted(6));
        assert_eq!(f.wire_bytes(), 84);
    }

    #[test]
    fn receiver_pauses_expires_resumes_and_counts() {
        let rate = gbps(100);
        let mut r = PfcReceiver::new(rate);
        assert!(r.may_send(3, SimTime(0)));
        // 100 quanta at 100G = 512 ns.
        assert_eq!(r.on_frame(SimTime(1_000), &PfcFrame::single(3, 100)), 0);
        assert!(!r.may_send(3, SimTime(1_000)));
        assert!(r.may_send(2, SimTime(1_000)), "only the paused priority stops");
        assert_eq!(r.paused_until(3), SimTime(1_000 + 512_000));
        assert_eq!(r.next_expiry(SimTime(1_000)), Some(SimTime(513_000)));
        assert!(r.may_send(3, SimTime(513_000)), "the pause expires");
        assert_eq!(r.paused_time(3, SimTime(900_000)).ps(), 512_000);
        // Pause again, then an explicit resume 100 ns later.
        r.on_frame(SimTime(1_000_000), &PfcFrame::single(3, MAX_PAUSE_QUANTA));
        assert_eq!(r.on_frame(SimTime(1_100_000), &PfcFrame::single(3, 0)), 1 << 3);
        assert!(r.may_send(3, SimTime(1_100_000)));
        assert_eq!(r.paused_time(3, SimTime(2_000_000)).ps(), 512_000 + 100_000);
        assert_eq!(r.frames_received(3), 3);
        assert_eq!(r.next_expiry(SimTime(2_000_000)), None);
    }

    #[test]
    fn watchdog_detects_continuous_pause() {
        let mut w = PfcWatchdog::new(Duration(WATCHDOG_DETECTION_PS));
        w.on_pause_state(SimTime(10), 3, true);
        w.on_pause_state(SimTime(20), 3, true);
        assert_eq!(w.next_check(), Some(SimTime(10 + WATCHDOG_DETECTION_PS)));
        assert_eq!(w.check(SimTime(9 + WATCHDOG_DETECTION_PS)), 0);
        assert_eq!(w.check(SimTime(10 + WATCHDOG_DETECTION_PS)), 1 << 3);
        assert_eq!(w.storms(3), 1);
        w.on_pause_state(SimTime(11 + WATCHDOG_DETECTION_PS), 3, false);
        assert_eq!(w.next_check(), None);
    }
}
