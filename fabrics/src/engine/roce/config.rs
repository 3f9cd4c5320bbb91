//! RoCEv2 configuration: the plain-data knobs of a RoCEv2 fabric (buffers, PFC, priorities,
//! ECN, congestion control, go-back-N), their defaults with sources, and their validation.

use super::*;

/// Default shared buffer per switch port: 512 KiB (the plain Ethernet per-port buffer, so
/// both fabrics get the same memory; an assumption, see `engine/config.rs`).
pub const DEFAULT_BUFFER_PER_PORT_BYTES: u64 = crate::engine::DEFAULT_PORT_BUFFER_BYTES;

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
    /// Line rate (or [`crate::engine::EngineConfig::sender_rate`]), no feedback.
    #[default]
    None,
    /// DCQCN reaction point; `line_rate` is replaced by each flow's NIC rate.
    Dcqcn(DcqcnParams),
    /// TIMELY; `line_rate` is replaced by each flow's NIC rate and `delta` scaled with it.
    Timely(TimelyParams),
    /// HPCC; `line_rate` is replaced by each flow's NIC rate and `rate_ai` scaled with it;
    /// a `base_rtt` of `None` becomes the largest base RTT of the run's queue pairs. Switches
    /// stamp INT into data packets and receivers echo it in ACKs.
    Hpcc(HpccParams),
}

impl RoceCc {
    /// The receiver must ACK every data packet (the feedback is in the ACK).
    pub fn needs_acks(&self) -> bool {
        matches!(self, RoceCc::Timely(_) | RoceCc::Hpcc(_))
    }
    /// Switch egresses stamp in-band network telemetry into data packets, echoed in ACKs.
    pub fn needs_int(&self) -> bool {
        matches!(self, RoceCc::Hpcc(_))
    }
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
    /// A static XOFF threshold (shared-buffer bytes per lossless ingress port and priority)
    /// instead of the dynamic one; `None` = dynamic (`models/buffer.rs`).
    pub xoff_threshold_bytes: Option<u64>,
    /// Lossless priorities (PFC and headroom), bit p = priority p. 0 = no PFC at all.
    pub lossless_mask: u8,
    /// Lossy priorities (tail drop at the dynamic threshold).
    pub lossy_mask: u8,
    /// Pause time a PAUSE frame carries, quanta of 512 bit times (practice: 65535).
    pub pause_quanta: u16,
    /// The pausing discipline of every PFC link: IEEE 802.1Qbb per priority (default) or
    /// IEEE 802.3x link-level PAUSE (`models/pfc/global.rs`).
    pub pause: crate::models::pfc::PauseKind,
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
    /// The receiver ACKs every data packet (needed by TIMELY, HPCC and go-back-N; forced on
    /// then).
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

impl Default for RoceConfig {
    fn default() -> Self {
        RoceConfig {
            buffer_bytes: None,
            reserve_bytes: crate::models::buffer::HPCC_SIM_RESERVE_BYTES,
            headroom_bytes: None,
            resume_offset_bytes: crate::models::buffer::HPCC_SIM_RESUME_OFFSET_BYTES,
            alpha_shift: crate::models::buffer::HPCC_SIM_ALPHA_SHIFT,
            xoff_threshold_bytes: None,
            lossless_mask: 1 << 3,
            lossy_mask: (1 << 0) | (1 << DEFAULT_CONTROL_PRIORITY),
            pause_quanta: pfc::MAX_PAUSE_QUANTA,
            pause: crate::models::pfc::PauseKind::Priority,
            pfc_refresh: None,
            strict_mask: 1 << DEFAULT_CONTROL_PRIORITY,
            dwrr_quantum_bytes: [crate::engine::DEFAULT_MTU_BYTES + crate::engine::ETHERNET_ROCE_HEADER_BYTES; NP],
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
        if self.xoff_threshold_bytes == Some(0) {
            return Err("a static XOFF threshold must be > 0".into());
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
            RoceCc::Hpcc(p) => p.check()?,
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

    pub(super) fn active_mask(&self) -> u8 {
        self.lossless_mask | self.lossy_mask
    }
}
