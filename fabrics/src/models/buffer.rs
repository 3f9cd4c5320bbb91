//! Switch buffer models: whether an arriving packet may join an egress queue.
//!
//! The plain variant, [`PerPortTailDrop`], gives every egress port a private buffer of
//! `buffer_bytes`; a packet that would overflow it is dropped (tail drop) and counted.
//! Occupancy is the bytes *waiting* in the queue; the packet being serialized has left it
//! (it is on the wire from its first bit, as in htsim's `Queue::beginService`).
//! [`SharedBuffer`] is the RoCEv2 switch MMU (models.md §2.3): one per switch, with
//! per-(ingress port, priority) reserve, a shared pool under the Choudhury–Hahne dynamic
//! threshold, per-port headroom for lossless priorities (its XOFF/XON edges drive
//! [`crate::models::pfc::PfcSender`]), and tail drop for lossy priorities
//! (ECN marking reads the engine's egress queue). It is pure accounting with an inherent API (`admit`/`release` take the
//! priority, which [`QueueView`] does not carry yet). Per-VL input buffers (InfiniBand)
//! plug in here too.

/// What a buffer model sees of an egress queue when deciding.
#[derive(Clone, Copy, Debug)]
pub struct QueueView {
    /// Egress port (global id).
    pub port: u32,
    /// Ingress port the packet came in on (global id), for ingress-accounted models.
    pub ingress_port: u32,
    /// Bytes waiting in the egress queue now.
    pub queued_bytes: u64,
}

/// Hooks of a switch buffer model.
pub trait BufferModel {
    /// Fires when a packet of `wire_bytes` arrives for an egress queue: `true` admits it,
    /// `false` drops it.
    fn admit(&mut self, q: QueueView, wire_bytes: u32) -> bool;

    /// Fires when an admitted packet leaves the egress queue (starts serialization).
    fn on_dequeue(&mut self, q: QueueView, wire_bytes: u32) {
        let _ = (q, wire_bytes);
    }
}

/// A private, finite buffer per egress port with tail drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerPortTailDrop {
    /// Capacity of each egress queue in bytes (whole packets, wire size).
    pub buffer_bytes: u64,
}

impl BufferModel for PerPortTailDrop {
    #[inline]
    fn admit(&mut self, q: QueueView, wire_bytes: u32) -> bool {
        q.queued_bytes + wire_bytes as u64 <= self.buffer_bytes
    }
}

/// The closed set of buffer models the engine can run.
#[derive(Clone, Debug)]
pub enum AnyBuffer {
    PerPortTailDrop(PerPortTailDrop),
}

impl AnyBuffer {
    pub fn name(&self) -> &'static str {
        match self {
            AnyBuffer::PerPortTailDrop(_) => "per_port_tail_drop",
        }
    }
}

impl BufferModel for AnyBuffer {
    #[inline]
    fn admit(&mut self, q: QueueView, wire_bytes: u32) -> bool {
        match self {
            AnyBuffer::PerPortTailDrop(m) => m.admit(q, wire_bytes),
        }
    }
    #[inline]
    fn on_dequeue(&mut self, q: QueueView, wire_bytes: u32) {
        match self {
            AnyBuffer::PerPortTailDrop(m) => m.on_dequeue(q, wire_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(queued_bytes: u64) -> QueueView {
        QueueView {
            port: 0,
            ingress_port: 1,
            queued_bytes,
        }
    }

    #[test]
    fn tail_drop_admits_up_to_exactly_full() {
        let mut b = AnyBuffer::PerPortTailDrop(PerPortTailDrop { buffer_bytes: 10_000 });
        assert!(b.admit(view(0), 10_000));
        assert!(b.admit(view(5_000), 5_000));
        assert!(!b.admit(view(5_001), 5_000));
        assert!(!b.admit(view(0), 10_001));
    }
}

// ---- Shared-buffer MMU (RoCEv2 switches) ----------------------------------------------------

/// Number of priorities (= priority groups here: one PG per 802.1p priority).
pub const N_PRIORITIES: usize = crate::models::pfc::N_PRIORITIES;
/// Reserve (minimum guarantee) per (ingress port, priority): 4 KB (HPCC-sim `switch-mmu.cc`
/// `reserve = 4 * 1024`; models.md §2.3).
pub const HPCC_SIM_RESERVE_BYTES: u64 = 4 * 1024;
/// XON hysteresis: resume when shared use + 3 KB ≤ threshold (HPCC-sim `resume_offset`).
pub const HPCC_SIM_RESUME_OFFSET_BYTES: u64 = crate::models::pfc::HPCC_SIM_RESUME_OFFSET_BYTES;
/// Dynamic-threshold α = 2^−3 = 1/8 for ports at NIC speed (HPCC-sim `pfc_a_shift`, `third.cc`).
pub const HPCC_SIM_ALPHA_SHIFT: i8 = 3;

/// The α shift HPCC-sim uses for a port of `port_rate` in a fabric whose NICs run at
/// `nic_rate`: 3 (α = 1/8), minus 1 for every factor 2 the port is faster (400G switch
/// ports with 100G NICs → 1, α = 1/2) (models.md §2.3).
pub fn hpcc_sim_alpha_shift(port_rate: sim_core::BitsPerSec, nic_rate: sim_core::BitsPerSec) -> i8 {
    let mut shift = HPCC_SIM_ALPHA_SHIFT;
    let mut r = nic_rate.0.max(1);
    while r.saturating_mul(2) <= port_rate.0 && shift > -8 {
        r *= 2;
        shift -= 1;
    }
    shift
}

/// Configuration of one switch's shared buffer (plain data; [`SharedBuffer::new`] checks it).
///
/// Model (Choudhury–Hahne dynamic threshold with HPCC-sim's ingress accounting, models.md
/// §2.3): every (ingress port, priority) in use owns `reserve_bytes`; every (ingress port,
/// lossless priority) owns `headroom_bytes`; the rest is one shared pool. A (port, priority)
/// may hold shared bytes up to the dynamic threshold
/// `T(port) = (total − Σheadroom − Σreserve − shared_used) · 2^−alpha_shift(port)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedBufferConfig {
    /// Total packet memory of the switch, bytes.
    pub total_bytes: u64,
    /// Reserve per (ingress port, priority in use), bytes.
    pub reserve_bytes: u64,
    /// Headroom per (ingress port, lossless priority), bytes: what may still arrive after
    /// XOFF (size it with [`crate::models::pfc::headroom_bytes`] or `mlx5_xoff_bytes`).
    pub headroom_bytes: u64,
    /// XON when headroom is empty and shared use + this ≤ T (or shared use = 0).
    pub resume_offset_bytes: u64,
    /// Priorities that are lossless (PFC, headroom). Bit p = priority p.
    pub lossless_mask: u8,
    /// Priorities that are lossy (tail drop at the threshold). Disjoint from `lossless_mask`.
    pub lossy_mask: u8,
    /// Per port (its length is the number of ports): α = 2^−shift (negative: α > 1, e.g. −4
    /// for ns3-rdma's α = 16).
    pub port_alpha_shift: Vec<i8>,
    /// A static XOFF threshold for lossless priorities, bytes of shared use per (ingress
    /// port, priority), instead of the dynamic one (ns3-rdma's static mode: "PG shared limit";
    /// models.md §2.3). `None`: dynamic. Lossy priorities always use the dynamic threshold.
    pub xoff_threshold_bytes: Option<u64>,
}

impl SharedBufferConfig {
    /// HPCC-sim defaults (reserve 4 KB, resume offset 3 KB, α = 1/8) for `n_ports` ports;
    /// priority 3 lossless (RoCE), priorities 0 and 6 (default traffic, CNP/ACK) lossy
    /// (Onyx "roce lossless" defaults, models.md §2.2, §6).
    pub fn hpcc_sim(total_bytes: u64, n_ports: usize, headroom_bytes: u64) -> Self {
        SharedBufferConfig {
            total_bytes,
            reserve_bytes: HPCC_SIM_RESERVE_BYTES,
            headroom_bytes,
            resume_offset_bytes: HPCC_SIM_RESUME_OFFSET_BYTES,
            lossless_mask: 1 << 3,
            lossy_mask: (1 << 0) | (1 << 6),
            port_alpha_shift: vec![HPCC_SIM_ALPHA_SHIFT; n_ports],
            xoff_threshold_bytes: None,
        }
    }

    fn n_ports(&self) -> usize {
        self.port_alpha_shift.len()
    }
    fn active_mask(&self) -> u8 {
        self.lossless_mask | self.lossy_mask
    }
    /// Σ reserve over all (port, priority in use).
    pub fn total_reserve_bytes(&self) -> u64 {
        self.reserve_bytes * self.n_ports() as u64 * self.active_mask().count_ones() as u64
    }
    /// Σ headroom over all (port, lossless priority).
    pub fn total_headroom_bytes(&self) -> u64 {
        self.headroom_bytes * self.n_ports() as u64 * self.lossless_mask.count_ones() as u64
    }

    /// Why this configuration cannot run, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.n_ports() == 0 {
            return Err("a shared buffer needs at least one port".into());
        }
        if self.lossless_mask & self.lossy_mask != 0 {
            return Err("a priority cannot be both lossless and lossy".into());
        }
        let fixed = self.total_reserve_bytes() + self.total_headroom_bytes();
        if fixed > self.total_bytes {
            return Err(format!(
                "reserve ({} B) + headroom ({} B) exceed the buffer ({} B)",
                self.total_reserve_bytes(),
                self.total_headroom_bytes(),
                self.total_bytes
            ));
        }
        if self.port_alpha_shift.iter().any(|s| !(-8..=16).contains(s)) {
            return Err("alpha shift must be in -8..=16".into());
        }
        if self.xoff_threshold_bytes == Some(0) {
            return Err("a static XOFF threshold must be > 0".into());
        }
        Ok(())
    }
}

/// Why the MMU dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// Lossless priority: headroom of the (ingress port, priority) full (headroom too small
    /// for the cable/MTU, or PFC not honoured upstream).
    HeadroomFull,
    /// Lossy priority: the (ingress port, priority) is at its dynamic threshold (tail drop).
    LossyThreshold,
    /// Lossy priority: the shared pool itself is exhausted.
    BufferFull,
}

/// The MMU's answer to an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Stored. `edge`: the pause state of its (ingress port, priority) changed: send PAUSE
    /// (XOFF) or RESUME (XON) upstream now ([`crate::models::pfc::PauseSender::on_edge`]). An
    /// admission can also resume: the dynamic threshold moves with the pool.
    Accepted { edge: Option<crate::models::pfc::PfcEdge> },
    /// Dropped; the MMU state is unchanged.
    Dropped(DropCause),
}

/// One switch's shared-buffer MMU: pure accounting, no packets, no time.
///
/// Hooks: [`SharedBuffer::admit`] when a packet (fully received, routed to its egress queue)
/// arrives; [`SharedBuffer::release`] when it leaves the switch (starts on the egress wire,
/// or is discarded from the queue). Ports are the switch's local port indices.
///
/// Ingress accounting (HPCC-sim `switch-mmu.cc`): bytes of an (ingress port, priority) fill
/// its reserve, then the shared pool up to the dynamic threshold T, then (lossless only)
/// its headroom. PAUSE when headroom is in use or shared use ≥ T; RESUME when headroom is
/// empty and (shared use = 0 or shared use + resume offset ≤ T). As in HPCC-sim, the pause
/// state is evaluated for the arriving / leaving packet's own (ingress port, priority);
/// [`SharedBuffer::recheck`] evaluates any other one.
/// The egress view (bytes per egress port and priority, ECN marking's input) is the
/// engine's own queue record (`engine/roce/switch.rs`), which a departure reads anyway: a
/// second copy here was one more cache miss per hop (`docs/performance.md`, session 10). The
/// MMU keeps only the total it holds, [`SharedBuffer::held_bytes`], to check conservation.
/// The account of one (ingress port, priority) in a [`SharedBuffer`].
#[derive(Clone, Copy, Debug, Default)]
struct IngressAccount {
    /// Bytes in reserve + shared.
    bytes: u64,
    /// Bytes in headroom.
    headroom_bytes: u64,
    /// Holds its upstream paused.
    paused: bool,
}

#[derive(Clone, Debug)]
pub struct SharedBuffer {
    cfg: SharedBufferConfig,
    /// Per (ingress port, priority), one record: an admission or release reads and writes
    /// all of it, so it is one cache line, not three.
    ingress: Vec<IngressAccount>,
    /// Bytes admitted and not yet released (= the sum of the ingress accounts).
    held_bytes: u64,
    shared_used: u64,
    /// Size of the shared pool: total − Σreserve − Σheadroom.
    shared_pool: u64,
    drops: [u64; 3],
    /// The configuration's lossless and lossy priorities, copied here: every admission and
    /// release checks them, and the configuration's accessors cost 20 instructions a hop.
    lossless_mask: u8,
    active_mask: u8,
}

impl SharedBuffer {
    /// Panics on an invalid configuration (the scenario loader checks it first).
    pub fn new(cfg: SharedBufferConfig) -> Self {
        if let Err(e) = cfg.check() {
            panic!("invalid shared-buffer configuration: {e}");
        }
        let n = cfg.n_ports() * N_PRIORITIES;
        SharedBuffer {
            shared_pool: cfg.total_bytes - cfg.total_reserve_bytes() - cfg.total_headroom_bytes(),
            ingress: vec![IngressAccount::default(); n],
            held_bytes: 0,
            shared_used: 0,
            drops: [0; 3],
            lossless_mask: cfg.lossless_mask,
            active_mask: cfg.active_mask(),
            cfg,
        }
    }

    pub fn config(&self) -> &SharedBufferConfig {
        &self.cfg
    }

    /// Index of (port, priority) in the per-(port, priority) arrays, checked: the priority one
    /// this buffer runs (and so below 8); a port out of range fails the array's own bounds
    /// check where the index is used. For the public accessors and at the entry of every
    /// operation ([`SharedBuffer::admit`], [`SharedBuffer::release`]).
    #[inline(always)]
    fn checked_idx(&self, port: u32, prio: u8) -> usize {
        assert!(
            prio < 8 && self.active_mask & (1 << prio) != 0,
            "priority {prio} is neither lossless nor lossy in this buffer"
        );
        port as usize * N_PRIORITIES + prio as usize
    }

    /// Cache hint (no effect on results) for the record an admission or release of
    /// (`port`, `prio`) reads: the engine asks for it an event ahead of the arrival.
    #[inline(always)]
    pub fn prefetch_ingress(&self, port: u32, prio: u8) {
        if let Some(a) = self.ingress.get(port as usize * N_PRIORITIES + prio as usize) {
            sim_core::prefetch(a);
        }
    }

    #[inline(always)]
    fn is_lossless(&self, prio: u8) -> bool {
        self.lossless_mask & (1 << prio) != 0
    }

    /// The dynamic threshold T of `port` now: α · (free shared bytes).
    pub fn threshold_bytes(&self, port: u32) -> u64 {
        let free = self.shared_pool - self.shared_used;
        let s = self.cfg.port_alpha_shift[port as usize];
        if s >= 0 {
            free >> s
        } else {
            free.saturating_mul(1 << (-s))
        }
    }

    /// The threshold that pauses a lossless (port, priority), or drops a lossy one: the static
    /// XOFF threshold for lossless priorities when one is set, else the dynamic one.
    pub fn limit_bytes(&self, port: u32, lossless: bool) -> u64 {
        match self.cfg.xoff_threshold_bytes {
            Some(t) if lossless => t,
            _ => self.threshold_bytes(port),
        }
    }

    fn shared_of(&self, i: usize) -> u64 {
        self.ingress[i].bytes.saturating_sub(self.cfg.reserve_bytes)
    }

    /// A packet of `bytes` that came in on `ingress` with priority `prio` joins an egress
    /// queue.
    pub fn admit(&mut self, ingress: u32, prio: u8, bytes: u64) -> Admit {
        let i = self.checked_idx(ingress, prio);
        let lossless = self.is_lossless(prio);
        let reserve = self.cfg.reserve_bytes;
        let new_bytes = self.ingress[i].bytes + bytes;
        let mut to_headroom = false;
        if new_bytes > reserve {
            let shared_after = new_bytes - reserve;
            let shared_part = bytes.min(shared_after);
            let over_threshold = shared_after > self.limit_bytes(ingress, lossless);
            let pool_full = self.shared_used + shared_part > self.shared_pool;
            if over_threshold || pool_full {
                if !lossless {
                    let cause = if over_threshold {
                        DropCause::LossyThreshold
                    } else {
                        DropCause::BufferFull
                    };
                    self.drops[cause as usize] += 1;
                    return Admit::Dropped(cause);
                }
                if self.ingress[i].headroom_bytes + bytes > self.cfg.headroom_bytes {
                    self.drops[DropCause::HeadroomFull as usize] += 1;
                    return Admit::Dropped(DropCause::HeadroomFull);
                }
                to_headroom = true;
            } else {
                self.shared_used += shared_part;
            }
        }
        if to_headroom {
            self.ingress[i].headroom_bytes += bytes;
        } else {
            self.ingress[i].bytes = new_bytes;
        }
        self.held_bytes += bytes;
        let edge = if lossless { self.update_pause(ingress, i) } else { None };
        Admit::Accepted { edge }
    }

    /// A packet admitted with the same (ingress, prio, bytes) leaves the switch.
    /// Returns the pause edge of its (ingress port, priority), if its state changed: XON when it
    /// may resume, and XOFF too, when the dynamic threshold shrank under it since its last
    /// admission (the pool filled from other ports). Every edge must reach the upstream sender,
    /// or the MMU and the PAUSE on the wire disagree (a lost XOFF let an ingress run into its
    /// headroom with no PAUSE sent, issue 14's "losslessness broken").
    pub fn release(&mut self, ingress: u32, prio: u8, bytes: u64) -> Option<crate::models::pfc::PfcEdge> {
        let i = self.checked_idx(ingress, prio);
        let from_headroom = self.ingress[i].headroom_bytes.min(bytes);
        let from_ingress = bytes - from_headroom;
        assert!(
            from_ingress <= self.ingress[i].bytes,
            "MMU release of {bytes} B exceeds what (port {ingress}, prio {prio}) holds"
        );
        let from_shared = from_ingress.min(self.shared_of(i));
        self.ingress[i].headroom_bytes -= from_headroom;
        self.ingress[i].bytes -= from_ingress;
        self.shared_used -= from_shared;
        self.held_bytes -= bytes;
        if self.is_lossless(prio) {
            self.update_pause(ingress, i)
        } else {
            None
        }
    }

    /// Re-evaluates the pause state of (port, prio) (the threshold moves with the shared
    /// pool's use); returns the edge, if the state changed. Lossy priorities never pause.
    pub fn recheck(&mut self, port: u32, prio: u8) -> Option<crate::models::pfc::PfcEdge> {
        if !self.is_lossless(prio) {
            return None;
        }
        let i = self.checked_idx(port, prio);
        self.update_pause(port, i)
    }

    /// The pause edge of (ingress) `port` whose record is `i`, if its state changes now.
    #[inline(always)]
    fn update_pause(&mut self, port: u32, i: usize) -> Option<crate::models::pfc::PfcEdge> {
        use crate::models::pfc::PfcEdge;
        let t = self.limit_bytes(port, true);
        let shared = self.shared_of(i);
        let a = &mut self.ingress[i];
        if !a.paused && (a.headroom_bytes > 0 || shared >= t) {
            a.paused = true;
            return Some(PfcEdge::Xoff);
        }
        if a.paused && a.headroom_bytes == 0 && (shared == 0 || shared + self.cfg.resume_offset_bytes <= t) {
            a.paused = false;
            return Some(PfcEdge::Xon);
        }
        None
    }

    /// Whether (ingress port, priority) holds its upstream paused.
    pub fn is_paused(&self, port: u32, prio: u8) -> bool {
        self.ingress[self.checked_idx(port, prio)].paused
    }
    /// Bytes held: admitted and not yet released.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }
    /// Bytes (reserve + shared, headroom) held for (ingress port, priority).
    #[inline]
    pub fn ingress_bytes(&self, port: u32, prio: u8) -> (u64, u64) {
        assert!(prio < 8, "priority {prio} out of range");
        let i = port as usize * N_PRIORITIES + prio as usize;
        (self.ingress[i].bytes, self.ingress[i].headroom_bytes)
    }
    /// Bytes of the shared pool in use, and its size.
    pub fn shared_used(&self) -> (u64, u64) {
        (self.shared_used, self.shared_pool)
    }
    /// Packets dropped for `cause`.
    pub fn drops(&self, cause: DropCause) -> u64 {
        self.drops[cause as usize]
    }

    /// Checks the accounting invariants (bytes conserved between the ingress accounts and the total held,
    /// shared use equals the sum of per-(port, priority) excess over reserve, headroom within
    /// its limit). For tests and debug builds.
    pub fn check_invariants(&self) {
        let ing: u64 = self.ingress.iter().map(|a| a.bytes + a.headroom_bytes).sum();
        assert_eq!(
            ing, self.held_bytes,
            "MMU: ingress bytes {ing} != bytes held {}",
            self.held_bytes
        );
        let shared: u64 = (0..self.ingress.len()).map(|i| self.shared_of(i)).sum();
        assert_eq!(shared, self.shared_used, "MMU: shared-pool use out of sync");
        assert!(self.shared_used <= self.shared_pool, "MMU: shared pool overrun");
        for (i, a) in self.ingress.iter().enumerate() {
            assert!(
                a.headroom_bytes <= self.cfg.headroom_bytes,
                "MMU: headroom of slot {i} overrun"
            );
        }
    }
}

#[cfg(test)]
mod shared_tests {
    use super::*;
    use crate::models::pfc::PfcEdge;

    /// 2 ports, 1 MB, reserve 4 KiB, headroom 20 000 B, prio 3 lossless, prio 0 lossy, α = 1/8.
    fn mmu() -> SharedBuffer {
        SharedBuffer::new(SharedBufferConfig::hpcc_sim(1_000_000, 2, 20_000))
    }

    /// An operation on a priority the buffer does not run, on a priority past 7 or on a port
    /// past the last one is a bug in the caller: it panics, before any account changes.
    #[test]
    fn operations_out_of_range_panic() {
        let admit = |port: u32, prio: u8| {
            std::panic::catch_unwind(move || {
                let mut m = mmu();
                m.admit(port, prio, 1000)
            })
            .is_err()
        };
        assert!(!admit(1, 3) && !admit(1, 0), "port 1, priorities 3 and 0 are in range");
        assert!(admit(1, 5), "priority 5 is neither lossless nor lossy");
        assert!(admit(1, 8) && admit(1, 200), "priorities past 7");
        assert!(admit(2, 3), "the buffer has 2 ports");
        let release = std::panic::catch_unwind(|| {
            let mut m = mmu();
            m.release(0, 7, 1000)
        });
        assert!(release.is_err(), "priority 7 is neither lossless nor lossy");
    }

    /// Issue 14's "losslessness broken": an ingress under its threshold, the pool then filled
    /// from another port, so the threshold falls under the first ingress's shared use with no
    /// admission there. The next packet leaving from it must report XOFF (it did not: release
    /// reported only XON), or the ingress keeps receiving with no PAUSE sent.
    #[test]
    fn release_reports_the_xoff_a_shrinking_threshold_causes() {
        let mut m = SharedBuffer::new(SharedBufferConfig::hpcc_sim(1_000_000, 24, 5_000));
        // Port 0: 40 kB of lossless traffic, under the threshold (pool/8 = 73 kB).
        for _ in 0..40 {
            assert_eq!(m.admit(0, 3, 1000), Admit::Accepted { edge: None });
        }
        // Ports 2..24 fill the pool on a lossy priority, each to its own threshold: the
        // threshold falls to about 18 kB.
        for p in 2..24 {
            while let Admit::Accepted { .. } = m.admit(p, 0, 1000) {}
        }
        assert!(
            m.threshold_bytes(0) < 40_000 - 4096,
            "threshold {}",
            m.threshold_bytes(0)
        );
        assert!(!m.is_paused(0, 3));
        // A packet of port 0 leaves: its ingress is over the threshold now: XOFF.
        assert_eq!(m.release(0, 3, 1000), Some(PfcEdge::Xoff));
        assert!(m.is_paused(0, 3));
        m.check_invariants();
    }

    #[test]
    fn reserve_then_shared_then_xoff_then_headroom_then_drop() {
        let mut m = mmu();
        let cfg = m.config().clone();
        // Σreserve = 4096·2 ports·3 prios; Σheadroom = 20000·2·1.
        assert_eq!(cfg.total_reserve_bytes(), 24_576);
        assert_eq!(cfg.total_headroom_bytes(), 40_000);
        let pool = 1_000_000 - 24_576 - 40_000;
        assert_eq!(m.shared_used(), (0, pool));
        assert_eq!(m.threshold_bytes(0), pool >> 3);
        // 4096 B fit in the reserve: no shared use.
        assert_eq!(m.admit(0, 3, 4096), Admit::Accepted { edge: None });
        assert_eq!(m.shared_used().0, 0);
        // Fill shared in 1000-B packets until XOFF: shared use s ≥ (pool − s)/8 ⇔ s ≥ pool/9.
        let mut n = 0;
        loop {
            n += 1;
            match m.admit(0, 3, 1000) {
                Admit::Accepted {
                    edge: Some(PfcEdge::Xoff),
                } => break,
                Admit::Accepted { edge: None } => {}
                d => panic!("unexpected {d:?}"),
            }
        }
        assert_eq!(n as u64, pool.div_ceil(9).div_ceil(1000));
        assert!(m.is_paused(0, 3));
        m.check_invariants();
        // Beyond the threshold, bytes go to headroom (20 000 B = 20 packets), then drop.
        let mut to_headroom = 0;
        loop {
            match m.admit(0, 3, 1000) {
                Admit::Accepted { edge } => {
                    assert_ne!(edge, Some(PfcEdge::Xoff), "XOFF is reported once");
                    to_headroom += 1;
                }
                Admit::Dropped(c) => {
                    assert_eq!(c, DropCause::HeadroomFull);
                    break;
                }
            }
        }
        let (_, hdrm) = m.ingress_bytes(0, 3);
        assert_eq!(hdrm, 20_000);
        assert!(to_headroom >= 20, "at least the headroom");
        assert_eq!(m.drops(DropCause::HeadroomFull), 1);
        m.check_invariants();
    }

    #[test]
    fn xon_after_headroom_drains_and_offset() {
        let mut m = mmu();
        let mut admitted = 0u64;
        while let Admit::Accepted { .. } = m.admit(0, 3, 1000) {
            admitted += 1;
        }
        assert!(m.is_paused(0, 3));
        // Release one at a time; XON exactly once, when headroom is empty and
        // shared + 3 KiB ≤ T (or shared = 0).
        let mut xon_at = None;
        for k in 0..admitted {
            let xon = m.release(0, 3, 1000) == Some(PfcEdge::Xon);
            let (ing, hdrm) = m.ingress_bytes(0, 3);
            let shared = ing.saturating_sub(HPCC_SIM_RESERVE_BYTES);
            let resume_ok = hdrm == 0 && (shared == 0 || shared + HPCC_SIM_RESUME_OFFSET_BYTES <= m.threshold_bytes(0));
            if xon_at.is_none() {
                // XON exactly when the resume condition first holds (not at XOFF − 1 packet).
                assert_eq!(xon, resume_ok, "release {k}");
                if xon {
                    xon_at = Some(k);
                }
            } else {
                assert!(!xon, "XON reported twice");
            }
            m.check_invariants();
        }
        // Headroom (20 packets) drains first, then the shared part down to the offset.
        assert!(xon_at.unwrap() >= 20);
        assert!(xon_at.is_some());
        assert!(!m.is_paused(0, 3));
        assert_eq!(m.shared_used().0, 0);
        assert_eq!(m.held_bytes(), 0);
    }

    #[test]
    fn lossy_tail_drops_at_threshold_without_pause() {
        let mut m = mmu();
        let mut n = 0;
        let cause = loop {
            match m.admit(1, 0, 1500) {
                Admit::Accepted { edge } => {
                    assert_eq!(edge, None, "lossy priorities never pause");
                    n += 1;
                }
                Admit::Dropped(c) => break c,
            }
        };
        assert_eq!(cause, DropCause::LossyThreshold);
        assert!(n > 0);
        assert!(!m.is_paused(1, 0));
        assert_eq!(m.ingress_bytes(1, 0).1, 0, "no headroom for lossy");
        assert_eq!(m.held_bytes(), n * 1500);
        assert_eq!(m.recheck(1, 0), None);
        m.check_invariants();
    }

    #[test]
    fn threshold_shrinks_as_pool_fills_and_recheck_reports() {
        let mut m = mmu();
        // Port 1 holds some shared bytes below its threshold.
        for _ in 0..30 {
            assert!(matches!(m.admit(1, 3, 1000), Admit::Accepted { edge: None }));
        }
        assert!(!m.is_paused(1, 3));
        // Port 0 fills the pool (lossless, it pauses and uses headroom).
        let t_before = m.threshold_bytes(1);
        while let Admit::Accepted { .. } = m.admit(0, 3, 1000) {}
        assert!(m.threshold_bytes(1) < t_before);
        // Port 1's share may now be over the smaller threshold: recheck says so.
        let shared1 = m.ingress_bytes(1, 3).0 - HPCC_SIM_RESERVE_BYTES;
        let expect = (shared1 >= m.threshold_bytes(1)).then_some(PfcEdge::Xoff);
        assert_eq!(m.recheck(1, 3), expect);
        m.check_invariants();
    }

    /// A static XOFF threshold: XOFF when the shared use reaches it whatever the pool holds,
    /// XON at threshold − resume offset; lossy priorities keep the dynamic threshold.
    #[test]
    fn static_xoff_threshold() {
        let mut c = SharedBufferConfig::hpcc_sim(1_000_000, 2, 20_000);
        c.xoff_threshold_bytes = Some(10_000);
        let mut m = SharedBuffer::new(c.clone());
        assert_eq!(m.limit_bytes(0, true), 10_000);
        assert_eq!(m.limit_bytes(0, false), m.threshold_bytes(0));
        // Reserve (4096 B) then shared: XOFF on the packet that brings shared use to 10 000 B.
        assert_eq!(m.admit(0, 3, 4096), Admit::Accepted { edge: None });
        for k in 1..10 {
            assert_eq!(m.admit(0, 3, 1000), Admit::Accepted { edge: None }, "packet {k}");
        }
        assert_eq!(
            m.admit(0, 3, 1000),
            Admit::Accepted {
                edge: Some(PfcEdge::Xoff)
            }
        );
        // Beyond it: headroom.
        assert_eq!(m.admit(0, 3, 1000), Admit::Accepted { edge: None });
        assert_eq!(m.ingress_bytes(0, 3).1, 1000);
        // Drain: XON once headroom is empty and shared + 3 KiB <= 10 000 B, i.e. shared <= 6928 B.
        assert_eq!(m.release(0, 3, 1000), None, "headroom drains first");
        assert_eq!(m.release(0, 3, 1000), None, "shared 9000");
        assert_eq!(m.release(0, 3, 1000), None, "shared 8000");
        assert_eq!(m.release(0, 3, 1000), None, "shared 7000");
        assert_eq!(m.release(0, 3, 1000), Some(PfcEdge::Xon), "shared 6000");
        m.check_invariants();
        // Lossy: not limited by the static threshold.
        for _ in 0..20 {
            assert!(matches!(m.admit(1, 0, 1000), Admit::Accepted { .. }));
        }
        c.xoff_threshold_bytes = Some(0);
        assert!(c.check().is_err());
    }

    #[test]
    fn alpha_shift_rule_and_config_errors() {
        let g = sim_core::BitsPerSec::from_gbps;
        assert_eq!(hpcc_sim_alpha_shift(g(100), g(100)), 3);
        assert_eq!(hpcc_sim_alpha_shift(g(400), g(100)), 1);
        assert_eq!(hpcc_sim_alpha_shift(g(200), g(100)), 2);
        let mut c = SharedBufferConfig::hpcc_sim(10_000, 4, 20_000);
        assert!(c.check().is_err(), "headroom larger than the buffer");
        c.total_bytes = 10_000_000;
        c.lossy_mask |= 1 << 3;
        assert!(c.check().is_err(), "prio both lossless and lossy");
        // α = 16 (shift −4): the threshold exceeds free space; the pool still bounds use.
        let mut c = SharedBufferConfig::hpcc_sim(200_000, 1, 10_000);
        c.port_alpha_shift = vec![-4];
        let mut m = SharedBuffer::new(c);
        let (_, pool) = m.shared_used();
        assert_eq!(m.threshold_bytes(0), pool * 16);
        // A packet larger than the free pool but under 16× free: the pool bounds it.
        assert_eq!(m.admit(0, 0, pool + 4096 + 1), Admit::Dropped(DropCause::BufferFull));
        assert_eq!(m.admit(0, 0, pool + 4096), Admit::Accepted { edge: None });
        assert_eq!(m.shared_used(), (pool, pool));
        assert_eq!(m.admit(0, 0, 1), Admit::Dropped(DropCause::LossyThreshold));
        assert_eq!(m.drops(DropCause::BufferFull), 1);
        m.check_invariants();
    }
}
