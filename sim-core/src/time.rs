//! Simulated time and the unit types that go with it.
//!
//! Time is an integer count of picoseconds (`u64`, enough for 213 days), as in htsim.
//! There is no floating-point time anywhere in fabricsim: floating-point time needs epsilon
//! hacks for ties and gives results that depend on the order of evaluation.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// Picoseconds per nanosecond, microsecond, millisecond and second.
pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// An instant of simulated time, in picoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn ps(self) -> u64 {
        self.0
    }

    /// Time elapsed since `earlier`; panics if `earlier` is later (a model bug).
    #[inline]
    pub fn since(self, earlier: SimTime) -> Duration {
        match self.0.checked_sub(earlier.0) {
            Some(d) => Duration(d),
            None => since_backwards(self, earlier),
        }
    }

    /// Seconds as `f64`, for reports only (never for simulation logic).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);

    pub const fn from_ps(ps: u64) -> Self {
        Duration(ps)
    }
    pub const fn from_ns(ns: u64) -> Self {
        Duration(ns * PS_PER_NS)
    }
    pub const fn from_us(us: u64) -> Self {
        Duration(us * PS_PER_US)
    }
    pub const fn from_ms(ms: u64) -> Self {
        Duration(ms * PS_PER_MS)
    }
    pub const fn ps(self) -> u64 {
        self.0
    }
    /// Seconds as `f64`, for reports only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
}

impl Add<Duration> for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, d: Duration) -> SimTime {
        match self.0.checked_add(d.0) {
            Some(t) => SimTime(t),
            None => time_overflow(self, d),
        }
    }
}

// The panics live out of line so that the inlined arithmetic stays a compare and a branch.
#[cold]
#[inline(never)]
fn time_overflow(t: SimTime, d: Duration) -> ! {
    panic!("SimTime overflow: {t} + {d}")
}

#[cold]
#[inline(never)]
fn since_backwards(now: SimTime, earlier: SimTime) -> ! {
    panic!("SimTime::since: {earlier} is later than {now}")
}

impl AddAssign<Duration> for SimTime {
    #[inline]
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Add for Duration {
    type Output = Duration;
    #[inline]
    fn add(self, d: Duration) -> Duration {
        Duration(self.0 + d.0)
    }
}

impl Sub for Duration {
    type Output = Duration;
    #[inline]
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0 - d.0)
    }
}

fn fmt_ps(ps: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    // Exact, human-scaled rendering: whole units when exact, otherwise ns with decimals.
    if ps == 0 {
        return write!(f, "0s");
    }
    for (unit, name) in [(PS_PER_S, "s"), (PS_PER_MS, "ms"), (PS_PER_US, "us"), (PS_PER_NS, "ns")] {
        if ps.is_multiple_of(unit) {
            return write!(f, "{}{}", ps / unit, name);
        }
    }
    write!(f, "{ps}ps")
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t=")?;
        fmt_ps(self.0, f)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ps(self.0, f)
    }
}

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const fn get(self) -> u64 {
        self.0
    }
    pub const fn bits(self) -> u64 {
        self.0 * 8
    }
}

impl Add for Bytes {
    type Output = Bytes;
    #[inline]
    fn add(self, b: Bytes) -> Bytes {
        Bytes(self.0 + b.0)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}

/// A data rate in bits per second (data rate after line encoding, as a NIC reports it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BitsPerSec(pub u64);

impl BitsPerSec {
    pub const fn from_gbps(gbps: u64) -> Self {
        BitsPerSec(gbps * 1_000_000_000)
    }
    pub const fn get(self) -> u64 {
        self.0
    }
    /// Gigabits per second as `f64`, for reports only.
    pub fn as_gbps_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl fmt::Display for BitsPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(1_000_000_000) {
            write!(f, "{}Gbps", self.0 / 1_000_000_000)
        } else if self.0.is_multiple_of(1_000_000) {
            write!(f, "{}Mbps", self.0 / 1_000_000)
        } else {
            write!(f, "{}bps", self.0)
        }
    }
}

/// Time to put `bytes` on a wire of `rate`, rounded **up** to the next picosecond.
///
/// Rounding up (never down) keeps a link's throughput at or below its rate; the error is
/// below 1 ps per packet. Computed in `u128` so that no intermediate overflows.
///
/// Panics on a zero rate (a configuration that the scenario loader refuses).
#[inline]
pub fn serialization_time(bytes: Bytes, rate: BitsPerSec) -> Duration {
    assert!(rate.0 > 0, "serialization_time: zero rate");
    // Fast path for packet-sized values: the product fits in u64 below 2^21 bytes, and a u64
    // division is several times cheaper than the u128 one (a library call). Same result.
    if bytes.0 < 1 << 21 {
        return Duration((bytes.0 * 8 * PS_PER_S).div_ceil(rate.0));
    }
    let num = bytes.0 as u128 * 8 * PS_PER_S as u128;
    let ps = num.div_ceil(rate.0 as u128);
    Duration(u64::try_from(ps).expect("serialization time exceeds u64 picoseconds"))
}

/// Bytes a link of `rate` carries in `d`, rounded down; the inverse of [`serialization_time`].
pub fn bytes_in(d: Duration, rate: BitsPerSec) -> Bytes {
    Bytes((d.0 as u128 * rate.0 as u128 / (8 * PS_PER_S as u128)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_fast_path_matches_u128() {
        let slow = |b: u64, r: u64| (b as u128 * 8 * PS_PER_S as u128).div_ceil(r as u128);
        for b in [
            0u64,
            1,
            63,
            64,
            82,
            1500,
            4122,
            9000,
            65_536,
            (1 << 21) - 1,
            1 << 21,
            1 << 30,
        ] {
            for r in [
                1u64,
                7,
                1_000_000_007,
                13_636_363_636,
                25_000_000_000,
                54_545_454_544,
                400_000_000_000,
            ] {
                if slow(b, r) <= u64::MAX as u128 {
                    assert_eq!(
                        serialization_time(Bytes(b), BitsPerSec(r)).0 as u128,
                        slow(b, r),
                        "{b} B at {r} b/s"
                    );
                }
            }
        }
    }

    #[test]
    fn serialization_of_one_mtu() {
        // 4096 B at 100 Gb/s = 327.68 ns exactly.
        let d = serialization_time(Bytes(4096), BitsPerSec::from_gbps(100));
        assert_eq!(d.ps(), 327_680);
        // 1 B at 3 b/s: 8/3 s rounds up.
        let d = serialization_time(Bytes(1), BitsPerSec(3));
        assert_eq!(d.ps(), 2_666_666_666_667);
    }

    #[test]
    fn bytes_in_inverts_serialization() {
        let r = BitsPerSec::from_gbps(400);
        let d = serialization_time(Bytes(1_000_000), r);
        assert_eq!(bytes_in(d, r), Bytes(1_000_000));
    }

    #[test]
    fn display_is_exact() {
        assert_eq!(Duration::from_ns(1500).to_string(), "1500ns");
        assert_eq!(Duration::from_us(3).to_string(), "3us");
        assert_eq!(Duration(1).to_string(), "1ps");
        assert_eq!(SimTime(2 * PS_PER_MS).to_string(), "t=2ms");
    }

    #[test]
    #[should_panic(expected = "is later than")]
    fn since_backwards_panics() {
        let _ = SimTime(5).since(SimTime(6));
    }
}
