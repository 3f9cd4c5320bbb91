//! Sender congestion control: how fast a flow may inject packets.
//!
//! One controller per flow (a RoCE queue pair, an IB QP). The NIC asks it when the flow may
//! send its next packet ([`CongestionControl::on_send`]); feedback reaches it through the
//! other hooks. Each algorithm lives in one file of this directory:
//!
//! | file | algorithm | feedback it uses | source |
//! |---|---|---|---|
//! | [`fixed_rate`] | [`FixedRate`]: constant pacing (default: line rate) | none | - |
//! | [`dcqcn`] | [`Dcqcn`]: DCQCN reaction point | CNPs ([`CongestionControl::on_cnp`]), its own timer, bytes sent | Zhu et al., SIGCOMM'15; `models.md` §2.5 |
//! | [`timely`] | [`Timely`]: RTT-gradient rate control | RTT samples ([`CongestionControl::on_ack`]) | Mittal et al., SIGCOMM'15; `models.md` §2.6 |
//! | [`hpcc`] | [`Hpcc`]: INT-based rate and window control | INT records echoed in ACKs ([`CongestionControl::on_ack_int`]) | Li et al., SIGCOMM'19; `models.md` §2.6 |
//!
//! ## Contract with the engine
//! - Call [`CongestionControl::on_send`] when the NIC starts a packet of the flow; the flow
//!   may start its next packet at the returned time (pacing at [`CongestionControl::rate`]).
//! - Call [`CongestionControl::on_cnp`] when a CNP for the flow reaches the sender NIC
//!   (RoCEv2 DCQCN; the CNP rate limit per QP belongs to the receiver, not here).
//! - Call [`CongestionControl::on_congestion_signal`] when an IB BECN reaches the sender
//!   (IB CC; a CNP goes to `on_cnp` instead).
//! - Call [`CongestionControl::on_ack`] when an ACK arrives, with the bytes it newly
//!   acknowledges and the RTT sample it yields (ACK arrival − send time of the acked packet).
//! - Call [`CongestionControl::on_ack_int`] when an ACK or NACK carrying in-band network
//!   telemetry arrives (only runs whose controller uses it have switches stamp INT), before
//!   `on_ack`; every ACK, also one that acknowledges nothing new.
//! - Before starting a packet of the flow, read [`CongestionControl::window_bytes`]: with
//!   `Some(w)`, the flow may not start one while `w` or more bytes are sent and not
//!   acknowledged.
//! - After **every** hook call, read [`CongestionControl::next_timer`]: if it is `Some(t)`,
//!   make sure one timer event for the flow fires at `t` and then call
//!   [`CongestionControl::on_timer`]. One pending timer event per flow is enough; a stale
//!   one (the controller moved its timer) is harmless: `on_timer` only acts on what is due.
//!
//! A rate change takes effect at the next [`CongestionControl::on_send`]; the gap of the
//! packet already scheduled is not recomputed (the engine may re-pace if it wants to).
//!
//! All controller state is integer (b/s, ps, fixed-point fractions), so a run is
//! bit-reproducible.

use sim_core::{BitsPerSec, Bytes, Duration, SimTime, serialization_time};

pub mod dcqcn;
pub mod fixed_rate;
pub mod hpcc;
pub mod timely;

pub use dcqcn::{Dcqcn, DcqcnParams};
pub use fixed_rate::FixedRate;
pub use hpcc::{Hpcc, HpccParams};
pub use timely::{Timely, TimelyParams};

/// One in-band network telemetry (INT) record: what a switch egress port writes into a data
/// packet as the packet leaves it (HPCC-sim `IntHop`, models.md §2.6), echoed to the sender
/// in the ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// When the packet started to leave the port.
    pub ts: SimTime,
    /// Bytes the port had put on its link before this packet (cumulative, wire bytes).
    pub tx_bytes: u64,
    /// Bytes queued at the port (all priorities) once this packet left the queue.
    pub qlen_bytes: u64,
    /// The port's link rate.
    pub rate: BitsPerSec,
}

/// Hooks of a sender congestion-control algorithm, one instance per flow.
pub trait CongestionControl {
    /// Fires when the flow's NIC starts sending a packet of `wire_bytes` at `now`; returns the
    /// earliest time the flow may start its next packet.
    fn on_send(&mut self, now: SimTime, wire_bytes: u32) -> SimTime;

    /// Fires when a RoCEv2 congestion notification packet (CNP, BTH opcode 0x81) for this
    /// flow reaches the sender NIC.
    fn on_cnp(&mut self, now: SimTime) {
        let _ = now;
    }

    /// Fires when a congestion signal other than a CNP for this flow reaches the sender:
    /// an InfiniBand BECN (IBA Annex A10, `crate::ib::cc`).
    fn on_congestion_signal(&mut self, now: SimTime) {
        let _ = now;
    }

    /// Fires when an ACK for this flow reaches the sender: `acked_bytes` newly acknowledged
    /// bytes and the round-trip time `rtt` measured for them.
    fn on_ack(&mut self, now: SimTime, acked_bytes: u64, rtt: Duration) {
        let _ = (now, acked_bytes, rtt);
    }

    /// Fires when an ACK or NACK for this flow carrying INT reaches the sender: `ack_seq` the
    /// bytes the receiver has in order, `snd_nxt` the offset of the next byte the flow will
    /// send, `hops` the records of the switch egresses its data packet left, in path order.
    fn on_ack_int(&mut self, now: SimTime, ack_seq: u64, snd_nxt: u64, hops: &[IntHop]) {
        let _ = (now, ack_seq, snd_nxt, hops);
    }

    /// The flow's window: at most this many bytes sent and not yet acknowledged (`None`: no
    /// window). Read before each packet the flow starts.
    fn window_bytes(&self) -> Option<u64> {
        None
    }

    /// Fires at (or after) the time last returned by [`CongestionControl::next_timer`].
    fn on_timer(&mut self, now: SimTime) {
        let _ = now;
    }

    /// When the controller wants [`CongestionControl::on_timer`] called next (`None`: no
    /// timer needed). Read it after every hook call.
    fn next_timer(&self) -> Option<SimTime> {
        None
    }

    /// The flow's current sending rate.
    fn rate(&self) -> BitsPerSec;

    /// The controller's state variables worth plotting beside the rate (observers only: the
    /// per-flow time series, `[output] sample`), as `(column name, value)`; names are fixed
    /// per algorithm and prefixed with it (`dcqcn_alpha`).
    fn state(&self) -> CcState {
        CcState::default()
    }
}

/// Up to two named state variables of a congestion controller ([`CongestionControl::state`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CcState(pub [Option<(&'static str, f64)>; 2]);

/// The closed set of congestion-control algorithms.
#[derive(Clone, Debug)]
pub enum AnyCc {
    FixedRate(FixedRate),
    Dcqcn(Dcqcn),
    Timely(Timely),
    Hpcc(Hpcc),
    /// InfiniBand Annex A10 source side; lives with the IB model in `ib/cc.rs`.
    IbCc(crate::ib::cc::IbCca),
}

impl AnyCc {
    pub fn name(&self) -> &'static str {
        match self {
            AnyCc::FixedRate(_) => "fixed_rate",
            AnyCc::Dcqcn(_) => "dcqcn",
            AnyCc::Timely(_) => "timely",
            AnyCc::Hpcc(_) => "hpcc",
            AnyCc::IbCc(_) => "ib_cc",
        }
    }
}

impl CongestionControl for AnyCc {
    #[inline]
    fn on_send(&mut self, now: SimTime, wire_bytes: u32) -> SimTime {
        match self {
            AnyCc::FixedRate(c) => c.on_send(now, wire_bytes),
            AnyCc::Dcqcn(c) => c.on_send(now, wire_bytes),
            AnyCc::Timely(c) => c.on_send(now, wire_bytes),
            AnyCc::Hpcc(c) => c.on_send(now, wire_bytes),
            AnyCc::IbCc(c) => c.on_send(now, wire_bytes),
        }
    }
    #[inline]
    fn on_cnp(&mut self, now: SimTime) {
        match self {
            AnyCc::FixedRate(c) => c.on_cnp(now),
            AnyCc::Dcqcn(c) => c.on_cnp(now),
            AnyCc::Timely(c) => c.on_cnp(now),
            AnyCc::Hpcc(c) => c.on_cnp(now),
            AnyCc::IbCc(c) => c.on_cnp(now),
        }
    }
    #[inline]
    fn on_congestion_signal(&mut self, now: SimTime) {
        match self {
            AnyCc::FixedRate(c) => c.on_congestion_signal(now),
            AnyCc::Dcqcn(c) => c.on_congestion_signal(now),
            AnyCc::Timely(c) => c.on_congestion_signal(now),
            AnyCc::Hpcc(c) => c.on_congestion_signal(now),
            AnyCc::IbCc(c) => c.on_congestion_signal(now),
        }
    }
    #[inline]
    fn on_ack(&mut self, now: SimTime, acked_bytes: u64, rtt: Duration) {
        match self {
            AnyCc::FixedRate(c) => c.on_ack(now, acked_bytes, rtt),
            AnyCc::Dcqcn(c) => c.on_ack(now, acked_bytes, rtt),
            AnyCc::Timely(c) => c.on_ack(now, acked_bytes, rtt),
            AnyCc::Hpcc(c) => c.on_ack(now, acked_bytes, rtt),
            AnyCc::IbCc(c) => c.on_ack(now, acked_bytes, rtt),
        }
    }
    #[inline]
    fn on_ack_int(&mut self, now: SimTime, ack_seq: u64, snd_nxt: u64, hops: &[IntHop]) {
        match self {
            AnyCc::Hpcc(c) => c.on_ack_int(now, ack_seq, snd_nxt, hops),
            AnyCc::FixedRate(_) | AnyCc::Dcqcn(_) | AnyCc::Timely(_) | AnyCc::IbCc(_) => {}
        }
    }
    #[inline]
    fn window_bytes(&self) -> Option<u64> {
        match self {
            AnyCc::Hpcc(c) => c.window_bytes(),
            AnyCc::FixedRate(_) | AnyCc::Dcqcn(_) | AnyCc::Timely(_) | AnyCc::IbCc(_) => None,
        }
    }
    #[inline]
    fn on_timer(&mut self, now: SimTime) {
        match self {
            AnyCc::FixedRate(c) => c.on_timer(now),
            AnyCc::Dcqcn(c) => c.on_timer(now),
            AnyCc::Timely(c) => c.on_timer(now),
            AnyCc::Hpcc(c) => c.on_timer(now),
            AnyCc::IbCc(c) => c.on_timer(now),
        }
    }
    #[inline]
    fn next_timer(&self) -> Option<SimTime> {
        match self {
            AnyCc::FixedRate(c) => c.next_timer(),
            AnyCc::Dcqcn(c) => c.next_timer(),
            AnyCc::Timely(c) => c.next_timer(),
            AnyCc::Hpcc(c) => c.next_timer(),
            AnyCc::IbCc(c) => c.next_timer(),
        }
    }
    fn rate(&self) -> BitsPerSec {
        match self {
            AnyCc::FixedRate(c) => c.rate(),
            AnyCc::Dcqcn(c) => c.rate(),
            AnyCc::Timely(c) => c.rate(),
            AnyCc::Hpcc(c) => c.rate(),
            AnyCc::IbCc(c) => c.rate(),
        }
    }
    fn state(&self) -> CcState {
        match self {
            AnyCc::FixedRate(c) => c.state(),
            AnyCc::Dcqcn(c) => c.state(),
            AnyCc::Timely(c) => c.state(),
            AnyCc::Hpcc(c) => c.state(),
            AnyCc::IbCc(c) => c.state(),
        }
    }
}

/// Inter-packet gap implied by a rate, for documentation and tests.
pub fn packet_gap(wire_bytes: u32, rate: BitsPerSec) -> Duration {
    serialization_time(Bytes(wire_bytes as u64), rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rate_paces_exactly() {
        let mut cc = AnyCc::FixedRate(FixedRate {
            rate: BitsPerSec::from_gbps(50),
        });
        // 1000 B at 50 Gb/s = 160 ns.
        let next = cc.on_send(SimTime(1_000), 1000);
        assert_eq!(next, SimTime(1_000 + 160_000));
        assert_eq!(cc.rate(), BitsPerSec::from_gbps(50));
        assert_eq!(packet_gap(1000, BitsPerSec::from_gbps(100)).ps(), 80_000);
        assert_eq!(cc.next_timer(), None);
        assert_eq!(cc.name(), "fixed_rate");
    }

    #[test]
    fn enum_dispatches_to_dcqcn() {
        let line = BitsPerSec::from_gbps(100);
        let mut cc = AnyCc::Dcqcn(Dcqcn::new(DcqcnParams::paper(line)));
        assert_eq!(cc.name(), "dcqcn");
        assert_eq!(cc.next_timer(), None);
        cc.on_cnp(SimTime(0));
        assert_eq!(cc.rate(), BitsPerSec::from_gbps(50));
        assert_eq!(cc.next_timer(), Some(SimTime(55_000_000)));
        // Pacing follows the cut rate: 1000 B at 50 Gb/s = 160 ns.
        assert_eq!(cc.on_send(SimTime(10), 1000), SimTime(10 + 160_000));
    }
}
