//! Workloads: the flows a run injects, as plain data.
//!
//! A workload is a `Vec<FlowSpec>`: who sends how many bytes to whom, starting when. Hosts are
//! named by host index (`Topology::hosts[i]`). Every generator validates its inputs, refuses
//! to produce more than [`TrafficLimits::max_flows`] flows (default [`MAX_FLOWS`]), and returns
//! its flows in the canonical order of [`sort_flows`], so a workload is a pure function of its
//! parameters and seed.
//!
//! Generators ([`generators`]): [`explicit`] (a user-written list), [`permutation`] (uniformly
//! random derangement), [`incast`] (N-to-1) and [`poisson`] (open-loop Poisson arrivals with
//! sizes from an empirical [`FlowSizeCdf`]).
//!
//! ## Provenance
//! - The Poisson load convention follows the HPCC traffic generator (Li et al., "HPCC: High
//!   Precision Congestion Control", SIGCOMM 2019; `traffic_gen/traffic_gen.py` in
//!   `alibaba-edu/High-Precision-Congestion-Control`): for a target load `L` on hosts with link
//!   rate `C`, each host starts flows at rate `lambda = L * C / (8 * mean_size)`, exponential
//!   inter-arrival times, destination uniform over all other hosts.
//! - The CDF format and the sampling rule (linear interpolation between bracketing points) are
//!   those of the same repository's `traffic_gen/custom_rand.py`.
//! - The catalogue's CDFs (`scenarios/catalogue/cdf/`) are copied verbatim from that
//!   repository's `traffic_gen/` at commit 9f4be2a:
//!   - `WebSearch_distribution.txt`: the DCTCP web-search workload (Alizadeh et al., SIGCOMM
//!     2010), as used in the HPCC paper;
//!   - `FbHdp_distribution.txt`: Facebook Hadoop, as used in the HPCC paper (commonly
//!     attributed to Roy et al., SIGCOMM 2015);
//!   - `AliStorage2019.txt`: Alibaba distributed storage, 2019;
//!   - `GoogleRPC2008.txt`: Google RPC sizes, pre-2008.
//!
//!   See `scenarios/catalogue/cdf/README.md`.

use std::fmt;

use sim_core::{Bytes, SimTime};

pub mod cdf;
pub mod generators;

pub use cdf::{CdfError, FlowSizeCdf};
pub use generators::{POISSON_STREAM_BASE, PoissonSpec, explicit, incast, permutation, poisson};

/// Default limit on the number of flows one generator may produce.
pub const MAX_FLOWS: u64 = 10_000_000;

/// One flow: `size` bytes from host `src` to host `dst`, offered at `start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowSpec {
    /// Source host index.
    pub src: u32,
    /// Destination host index.
    pub dst: u32,
    /// Bytes to deliver (payload), at least 1.
    pub size: Bytes,
    /// When the source starts sending.
    pub start: SimTime,
    /// The workload entry (`[[workload]]` index) the flow came from: results are grouped by it.
    pub group: u16,
    /// Traffic class: the InfiniBand service level (SL) or the Ethernet priority (PCP), 0..=15.
    pub class: u8,
}

/// Sorts flows into the canonical order `(start, src, dst, size)`. The sort is stable:
/// flows equal in all four keys keep their relative order (they are indistinguishable anyway).
/// Accepts `&mut Vec<FlowSpec>` through deref.
pub fn sort_flows(flows: &mut [FlowSpec]) {
    flows.sort_by_key(|f| (f.start, f.src, f.dst, f.size));
}

/// Resource limits the generators enforce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrafficLimits {
    /// Most flows one generator call may return.
    pub max_flows: u64,
}

impl TrafficLimits {
    /// `max_flows = MAX_FLOWS`.
    pub const DEFAULT: TrafficLimits = TrafficLimits { max_flows: MAX_FLOWS };
}

impl Default for TrafficLimits {
    fn default() -> Self {
        TrafficLimits::DEFAULT
    }
}

/// Why a generator refused its inputs.
#[derive(Clone, Debug, PartialEq)]
pub enum TrafficError {
    /// The workload would have `count` flows, more than the limit `max`.
    TooManyFlows { count: u64, max: u64 },
    /// A Poisson workload's expected flow count (`n_hosts * lambda * duration`) exceeds `max`.
    TooManyExpectedFlows { expected: f64, max: u64 },
    /// `generator` needs at least `min` hosts.
    TooFewHosts {
        generator: &'static str,
        n_hosts: u32,
        min: u32,
    },
    /// `what` (e.g. "flow 3 source") names host `host`, but hosts are `0..n_hosts`.
    HostOutOfRange { what: String, host: u32, n_hosts: u32 },
    /// `what` (e.g. "flow 3") sends from host `host` to itself.
    SelfFlow { what: String, host: u32 },
    /// `what` has size 0 bytes.
    ZeroSize { what: String },
    /// An incast (or a closed loop) lists no sender (client).
    NoSenders,
    /// An incast lists sender `host` twice.
    DuplicateSender { host: u32 },
    /// A Poisson load outside `(0, 1]` (or not finite).
    InvalidLoad { load: f64 },
    /// A Poisson host rate of 0 b/s.
    ZeroRate,
    /// A Poisson duration of 0.
    ZeroDuration,
    /// `start + duration` does not fit in `u64` picoseconds.
    TimeOverflow {
        start: SimTime,
        duration: sim_core::Duration,
    },
    /// The per-host RNG stream ids `base .. base + n_hosts` overflow `u64` or contain a
    /// well-known stream id of `sim_core::rng::stream`.
    BadStreamBase { base: u64, n_hosts: u32, reason: String },
}

impl fmt::Display for TrafficError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use TrafficError::*;
        match self {
            TooManyFlows { count, max } => {
                write!(f, "workload has {count} flows, more than the limit of {max} flows")
            }
            TooManyExpectedFlows { expected, max } => write!(
                f,
                "Poisson workload would generate about {expected:.0} flows, more than the limit of {max} flows \
                 (shorten the duration, lower the load or use fewer hosts)"
            ),
            TooFewHosts {
                generator,
                n_hosts,
                min,
            } => {
                write!(f, "{generator} needs at least {min} hosts, got {n_hosts}")
            }
            HostOutOfRange { what, host, n_hosts } => write!(
                f,
                "{what} is host {host}, but the topology has {n_hosts} hosts (valid indices 0..{n_hosts})"
            ),
            SelfFlow { what, host } => {
                write!(
                    f,
                    "{what} goes from host {host} to itself; source and destination must differ"
                )
            }
            ZeroSize { what } => write!(f, "{what} has size 0 bytes; flows must carry at least 1 byte"),
            NoSenders => write!(f, "an incast or closed loop needs at least one sender, got none"),
            DuplicateSender { host } => write!(f, "incast lists sender {host} more than once"),
            InvalidLoad { load } => write!(f, "load must be a number in (0, 1], got {load}"),
            ZeroRate => write!(f, "host rate must be positive, got 0 b/s"),
            ZeroDuration => write!(f, "Poisson duration must be positive, got 0"),
            TimeOverflow { start, duration } => write!(
                f,
                "start {start} + duration {duration} exceeds the largest simulated time"
            ),
            BadStreamBase { base, n_hosts, reason } => {
                write!(f, "RNG stream ids {base}..{base}+{n_hosts} cannot be used: {reason}")
            }
        }
    }
}

impl std::error::Error for TrafficError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(start: u64, src: u32, dst: u32, size: u64) -> FlowSpec {
        FlowSpec {
            src,
            dst,
            size: Bytes(size),
            start: SimTime(start),
            ..Default::default()
        }
    }

    #[test]
    fn sort_orders_by_start_src_dst_size() {
        let mut v = vec![
            f(5, 0, 1, 10),
            f(1, 2, 0, 10),
            f(1, 1, 3, 10),
            f(1, 1, 2, 20),
            f(1, 1, 2, 5),
        ];
        sort_flows(&mut v);
        assert_eq!(
            v,
            vec![
                f(1, 1, 2, 5),
                f(1, 1, 2, 20),
                f(1, 1, 3, 10),
                f(1, 2, 0, 10),
                f(5, 0, 1, 10)
            ]
        );
    }

    #[test]
    fn errors_display_their_numbers() {
        let e = TrafficError::TooManyFlows {
            count: 12_000_000,
            max: MAX_FLOWS,
        };
        assert_eq!(
            e.to_string(),
            "workload has 12000000 flows, more than the limit of 10000000 flows"
        );
        let e = TrafficError::HostOutOfRange {
            what: "flow 3 destination".into(),
            host: 9,
            n_hosts: 8,
        };
        assert!(e.to_string().contains("flow 3 destination is host 9"));
        assert_eq!(TrafficLimits::default().max_flows, MAX_FLOWS);
    }
}
