//! Statistics: HdrHistogram-backed latency histograms, counters and time-weighted gauges.
//!
//! Everything here is integer state; floating-point figures are derived at report time only,
//! so results do not depend on evaluation order.

use crate::time::{Duration, SimTime};
use hdrhistogram::Histogram;

/// Largest value a [`LatencyHistogram`] tracks: 1000 s in picoseconds. Larger values are
/// clamped to it (and counted in [`LatencyHistogram::clamped`]).
pub const HIST_MAX_PS: u64 = 1_000 * crate::time::PS_PER_S;
/// Significant decimal digits kept by a histogram (0.1% relative error).
pub const HIST_SIGFIG: u8 = 3;

/// A histogram of durations, recorded in picoseconds.
///
/// Backed by `hdrhistogram` (1 ps .. 1000 s, 3 significant digits, ~330 KiB), so keep one per
/// traffic class, not one per flow.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    clamped: u64,
    sum_ps: u128,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        LatencyHistogram {
            hist: Histogram::new_with_bounds(1, HIST_MAX_PS, HIST_SIGFIG).expect("static histogram bounds are valid"),
            clamped: 0,
            sum_ps: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, d: Duration) {
        let v = d.ps().clamp(1, HIST_MAX_PS);
        if d.ps() > HIST_MAX_PS {
            self.clamped += 1;
        }
        self.sum_ps += d.ps() as u128;
        self.hist.record(v).expect("value clamped into the histogram's range");
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }
    /// Values above [`HIST_MAX_PS`] that were clamped.
    pub fn clamped(&self) -> u64 {
        self.clamped
    }
    /// Exact mean in picoseconds (integer division), `None` when empty.
    pub fn mean_ps(&self) -> Option<u64> {
        (self.count() > 0).then(|| (self.sum_ps / self.count() as u128) as u64)
    }
    /// Value at quantile `q` in [0, 1] (HdrHistogram's equivalent value, within 0.1%).
    pub fn quantile_ps(&self, q: f64) -> Option<u64> {
        (self.count() > 0).then(|| self.hist.value_at_quantile(q))
    }
    /// Exact smallest and largest value (within histogram resolution).
    pub fn min_ps(&self) -> Option<u64> {
        (self.count() > 0).then(|| self.hist.min())
    }
    pub fn max_ps(&self) -> Option<u64> {
        (self.count() > 0).then(|| self.hist.max())
    }
    /// The underlying histogram, for serialization and merging.
    pub fn inner(&self) -> &Histogram<u64> {
        &self.hist
    }
    /// Adds another histogram's samples (e.g. from another seed).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.hist.add(&other.hist).expect("same bounds");
        self.clamped += other.clamped;
        self.sum_ps += other.sum_ps;
    }
}

/// A monotone event counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter(pub u64);

impl Counter {
    #[inline]
    pub fn add(&mut self, n: u64) {
        self.0 += n;
    }
    #[inline]
    pub fn incr(&mut self) {
        self.0 += 1;
    }
    pub fn get(self) -> u64 {
        self.0
    }
}

/// A time-weighted gauge (queue depth, occupancy): tracks the integral of the value over
/// time, its maximum, and the time it spent above zero.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimeWeightedGauge {
    value: u64,
    since: SimTime,
    max: u64,
    /// Integral of value over time, in value x ps.
    area: u128,
    /// Time spent with value > 0, in ps.
    busy_ps: u64,
}

impl TimeWeightedGauge {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    fn accumulate(&mut self, now: SimTime) {
        let dt = now.since(self.since).ps();
        self.area += self.value as u128 * dt as u128;
        if self.value > 0 {
            self.busy_ps += dt;
        }
        self.since = now;
    }

    /// Sets the value at `now` (times must not go backwards).
    #[inline]
    pub fn set(&mut self, now: SimTime, value: u64) {
        self.accumulate(now);
        self.value = value;
        self.max = self.max.max(value);
    }

    pub fn value(&self) -> u64 {
        self.value
    }
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Integral of the value from time zero to `now`, in value x ps.
    pub fn area_until(&self, now: SimTime) -> u128 {
        self.area + self.value as u128 * now.since(self.since).ps() as u128
    }

    /// Time with value > 0 from zero to `now`, in ps.
    pub fn busy_until(&self, now: SimTime) -> u64 {
        self.busy_ps + if self.value > 0 { now.since(self.since).ps() } else { 0 }
    }

    /// Time-weighted mean over `[0, now]` (0 when `now` is zero). Report use only.
    pub fn mean_until(&self, now: SimTime) -> f64 {
        if now.ps() == 0 {
            return 0.0;
        }
        self.area_until(now) as f64 / now.ps() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_percentiles_within_resolution() {
        let mut h = LatencyHistogram::new();
        for ns in 1..=1000u64 {
            h.record(Duration::from_ns(ns));
        }
        assert_eq!(h.count(), 1000);
        let p50 = h.quantile_ps(0.5).unwrap() as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 1e-3, "p50 {p50}");
        assert_eq!(h.mean_ps(), Some(500_500));
        let p100 = h.max_ps().unwrap() as f64;
        assert!((p100 - 1e6).abs() / 1e6 < 1e-3);
    }

    #[test]
    fn histogram_clamps_huge_values() {
        let mut h = LatencyHistogram::new();
        h.record(Duration(HIST_MAX_PS * 10));
        assert_eq!(h.clamped(), 1);
        assert_eq!(h.count(), 1);
    }

    #[test]
    fn gauge_integrates_over_time() {
        let mut g = TimeWeightedGauge::new();
        g.set(SimTime(0), 4);
        g.set(SimTime(10), 0);
        g.set(SimTime(30), 2);
        assert_eq!(g.area_until(SimTime(40)), 4 * 10 + 2 * 10);
        assert_eq!(g.busy_until(SimTime(40)), 20);
        assert_eq!(g.max(), 4);
        assert!((g.mean_until(SimTime(40)) - 1.5).abs() < 1e-12);
    }
}
