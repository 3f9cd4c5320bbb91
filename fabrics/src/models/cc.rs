//! Sender congestion control: how fast a flow may inject packets.
//!
//! The NIC asks the flow's controller when it may send its next packet. DCQCN (Zhu et al.,
//! SIGCOMM 2015), IB CC (IBA Annex A10) and HPCC (Li et al., SIGCOMM 2019) plug in here, each
//! in one file. The plain variant, [`FixedRate`], paces a flow at a fixed rate (by default
//! the NIC's line rate, i.e. no pacing beyond serialization).

use sim_core::{BitsPerSec, Bytes, Duration, SimTime, serialization_time};

/// Hooks of a sender congestion-control algorithm, one instance per flow.
pub trait CongestionControl {
    /// Fires when the flow's NIC starts sending a packet of `wire_bytes` at `now`; returns the
    /// earliest time the flow may start its next packet.
    fn on_send(&mut self, now: SimTime, wire_bytes: u32) -> SimTime;

    /// Fires when a congestion signal for this flow reaches the sender (an ECN echo / CNP,
    /// a BECN). Unused by [`FixedRate`].
    fn on_congestion_signal(&mut self, now: SimTime) {
        let _ = now;
    }

    /// The flow's current sending rate.
    fn rate(&self) -> BitsPerSec;
}

/// Paces packets at a fixed rate: the next packet may start one serialization time (at
/// `rate`) after the previous one started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedRate {
    pub rate: BitsPerSec,
}

impl CongestionControl for FixedRate {
    #[inline]
    fn on_send(&mut self, now: SimTime, wire_bytes: u32) -> SimTime {
        now + serialization_time(Bytes(wire_bytes as u64), self.rate)
    }
    fn rate(&self) -> BitsPerSec {
        self.rate
    }
}

/// The closed set of congestion-control algorithms.
#[derive(Clone, Debug)]
pub enum AnyCc {
    FixedRate(FixedRate),
}

impl AnyCc {
    pub fn name(&self) -> &'static str {
        match self {
            AnyCc::FixedRate(_) => "fixed_rate",
        }
    }
}

impl CongestionControl for AnyCc {
    #[inline]
    fn on_send(&mut self, now: SimTime, wire_bytes: u32) -> SimTime {
        match self {
            AnyCc::FixedRate(c) => c.on_send(now, wire_bytes),
        }
    }
    #[inline]
    fn on_congestion_signal(&mut self, now: SimTime) {
        match self {
            AnyCc::FixedRate(c) => c.on_congestion_signal(now),
        }
    }
    fn rate(&self) -> BitsPerSec {
        match self {
            AnyCc::FixedRate(c) => c.rate(),
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
    }
}
