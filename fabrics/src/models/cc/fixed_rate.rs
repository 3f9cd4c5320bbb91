//! Fixed-rate pacing: the plain congestion control (no feedback).

use super::CongestionControl;
use sim_core::{BitsPerSec, Bytes, SimTime, serialization_time};

/// Paces packets at a fixed rate: the next packet may start one serialization time (at
/// `rate`) after the previous one started. With `rate` = the NIC line rate this is no pacing
/// beyond serialization.
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
