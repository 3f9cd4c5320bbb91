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

/// A histogram of values that are nearly always small multiples of a power of two `unit`
/// (buffer occupancies counted in credit blocks): those are counted in a dense array, one
/// add per record, and the others in an HdrHistogram. [`UnitHistogram::histogram`] merges
/// both into the HdrHistogram that recording every value there directly would have given
/// (a count of `n` recorded at once adds what `n` single records add). An HdrHistogram record
/// costs about 40 instructions, a link-hop's budget a few hundred (`docs/performance.md`,
/// session 24).
#[derive(Clone, Debug)]
pub struct UnitHistogram {
    /// log2 of `unit`.
    shift: u32,
    /// Count of `i * unit` at index `i`.
    dense: Vec<u64>,
    /// The values that are not a multiple of `unit` or lie past the dense range.
    rest: Histogram<u64>,
}

impl UnitHistogram {
    /// Multiples of `unit` (a power of two) below `dense_len * unit` are counted densely; the
    /// HdrHistogram has the bounds `low..=high` and `sigfig` significant digits, and
    /// saturates at `high`.
    pub fn new(
        unit: u64,
        dense_len: usize,
        low: u64,
        high: u64,
        sigfig: u8,
    ) -> Result<Self, hdrhistogram::CreationError> {
        assert!(
            unit.is_power_of_two(),
            "UnitHistogram: unit {unit} is not a power of two"
        );
        Ok(UnitHistogram {
            shift: unit.trailing_zeros(),
            dense: vec![0; dense_len],
            rest: Histogram::new_with_bounds(low, high, sigfig)?,
        })
    }

    #[inline]
    pub fn record(&mut self, value: u64) {
        let i = value >> self.shift;
        match self.dense.get_mut(i as usize) {
            Some(c) if i << self.shift == value => *c += 1,
            _ => self.rest.saturating_record(value),
        }
    }

    /// Adds `other`'s counts (a histogram of the same configuration, from another partition
    /// of the run).
    pub fn add(&mut self, other: &UnitHistogram) -> Result<(), hdrhistogram::AdditionError> {
        debug_assert_eq!(self.shift, other.shift);
        if self.dense.len() < other.dense.len() {
            self.dense.resize(other.dense.len(), 0);
        }
        for (a, b) in self.dense.iter_mut().zip(&other.dense) {
            *a += b;
        }
        self.rest.add(&other.rest)
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty() && self.dense.iter().all(|&c| c == 0)
    }

    /// Everything recorded, as one HdrHistogram.
    pub fn histogram(&self) -> Histogram<u64> {
        let mut h = self.rest.clone();
        for (i, &c) in self.dense.iter().enumerate().filter(|(_, c)| **c > 0) {
            h.saturating_record_n((i as u64) << self.shift, c);
        }
        h
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

    /// The dense counts and the HdrHistogram together are the HdrHistogram of every value:
    /// multiples of the unit, others, values past the dense range and past the bounds.
    #[test]
    fn unit_histogram_equals_recording_everything_in_one() {
        let mut rng = crate::rng::RngStreams::new(5).stream(0);
        let mut u = UnitHistogram::new(64, 100, 1, 1 << 20, 3).unwrap();
        let mut other = UnitHistogram::new(64, 100, 1, 1 << 20, 3).unwrap();
        let mut direct = Histogram::<u64>::new_with_bounds(1, 1 << 20, 3).unwrap();
        for k in 0..20_000u64 {
            let r = rand::Rng::next_u64(&mut rng);
            let v = match k % 4 {
                0 => (r % 100) * 64, // dense
                1 => (r % 200) * 64, // half of them past the dense range
                2 => r % 10_000,     // mostly not multiples
                _ => r % (1 << 22),  // some past the bounds (saturate)
            };
            if k % 3 == 0 {
                other.record(v)
            } else {
                u.record(v)
            }
            direct.saturating_record(v);
        }
        u.add(&other).unwrap();
        let h = u.histogram();
        assert_eq!(h.len(), direct.len());
        assert_eq!((h.min(), h.max()), (direct.min(), direct.max()));
        for q in [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0] {
            let v = h.value_at_quantile(q);
            assert_eq!(v, direct.value_at_quantile(q), "quantile {q}");
            assert_eq!(h.count_between(0, v), direct.count_between(0, v), "quantile {q}");
        }
        assert!(h == direct, "the same buckets");
        assert!(!u.is_empty() && UnitHistogram::new(64, 4, 1, 100, 3).unwrap().is_empty());
    }
}
