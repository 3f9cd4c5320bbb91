//! Workload generators. Each validates its inputs, enforces [`TrafficLimits`], is
//! deterministic given its random source, and returns flows sorted by [`sort_flows`].
//!
//! - [`explicit`]: a user-written list, validated.
//! - [`permutation`]: every host sends one flow to a distinct other host (a uniformly random
//!   derangement).
//! - [`incast`]: N senders to one receiver.
//! - [`poisson`]: open-loop Poisson flow arrivals at a target load with sizes from a
//!   [`FlowSizeCdf`], following the HPCC traffic generator's convention (Li et al., SIGCOMM
//!   2019, `traffic_gen/traffic_gen.py`): per-host rate `lambda = load * C / (8 * mean_size)`,
//!   exponential inter-arrival times, destination uniform over all other hosts.

use rand::{Rng, RngExt};
use sim_core::rng::stream;
use sim_core::time::PS_PER_S;
use sim_core::{BitsPerSec, Bytes, Duration, RngStreams, SimTime};

use super::{FlowSizeCdf, FlowSpec, TrafficError, TrafficLimits, sort_flows};

/// Suggested `base_stream` for [`poisson`]: host `h` draws from stream `POISSON_STREAM_BASE + h`.
///
/// `1 << 48` lies above the per-component ids (`< 1 << 32`) and the well-known ids of
/// `sim_core::rng::stream` (`1 << 40` and up), and leaves room for 2^16 Poisson workloads
/// in one run at `POISSON_STREAM_BASE + k * (1 << 32)`, k = 0, 1, ...
pub const POISSON_STREAM_BASE: u64 = 1 << 48;

fn check_count(count: u64, limits: TrafficLimits) -> Result<(), TrafficError> {
    if count > limits.max_flows {
        return Err(TrafficError::TooManyFlows {
            count,
            max: limits.max_flows,
        });
    }
    Ok(())
}

fn check_host(what: impl FnOnce() -> String, host: u32, n_hosts: u32) -> Result<(), TrafficError> {
    if host >= n_hosts {
        return Err(TrafficError::HostOutOfRange {
            what: what(),
            host,
            n_hosts,
        });
    }
    Ok(())
}

/// Validates a user-written flow list against a topology of `n_hosts` hosts: host indices in
/// `0..n_hosts`, `src != dst`, `size > 0`, at most `limits.max_flows` flows. Errors name the
/// flow by its 0-based index in `flows`. Returns a copy in canonical order ([`sort_flows`];
/// stable, so flows with equal keys keep their input order).
pub fn explicit(flows: &[FlowSpec], n_hosts: u32, limits: TrafficLimits) -> Result<Vec<FlowSpec>, TrafficError> {
    check_count(flows.len() as u64, limits)?;
    for (i, f) in flows.iter().enumerate() {
        check_host(|| format!("flow {i} source"), f.src, n_hosts)?;
        check_host(|| format!("flow {i} destination"), f.dst, n_hosts)?;
        if f.src == f.dst {
            return Err(TrafficError::SelfFlow {
                what: format!("flow {i}"),
                host: f.src,
            });
        }
        if f.size.get() == 0 {
            return Err(TrafficError::ZeroSize {
                what: format!("flow {i}"),
            });
        }
    }
    let mut out = flows.to_vec();
    sort_flows(&mut out);
    Ok(out)
}

/// A permutation workload: every host `i` sends `size` bytes at `start` to host `p(i)`, where
/// `p` is a uniformly random derangement of `0..n_hosts` (a permutation with no fixed point,
/// so every host is the source of exactly one flow and the destination of exactly one, and no
/// host sends to itself).
///
/// Method: Fisher–Yates shuffle, rejected and redrawn until it has no fixed point (the
/// expected number of shuffles tends to e ≈ 2.72; exactly 2 for `n_hosts = 2`). This is
/// uniform over all derangements, unlike Sattolo's algorithm, which yields only the cyclic
/// permutations (single n-cycles). Needs `n_hosts >= 2`.
pub fn permutation<R: Rng + ?Sized>(
    n_hosts: u32,
    size: Bytes,
    start: SimTime,
    rng: &mut R,
    limits: TrafficLimits,
) -> Result<Vec<FlowSpec>, TrafficError> {
    if n_hosts < 2 {
        return Err(TrafficError::TooFewHosts {
            generator: "permutation",
            n_hosts,
            min: 2,
        });
    }
    if size.get() == 0 {
        return Err(TrafficError::ZeroSize {
            what: "permutation flow size".into(),
        });
    }
    check_count(u64::from(n_hosts), limits)?;

    let mut perm: Vec<u32> = (0..n_hosts).collect();
    loop {
        // Fisher–Yates; reshuffling the previous (rejected) arrangement is still uniform.
        for i in (1..n_hosts).rev() {
            let j = rng.random_range(0..=i);
            perm.swap(i as usize, j as usize);
        }
        if perm.iter().zip(0u32..).all(|(&p, i)| p != i) {
            break;
        }
    }
    // Built in source order with one start time: already canonical.
    Ok(perm
        .iter()
        .zip(0u32..)
        .map(|(&dst, src)| FlowSpec {
            src,
            dst,
            size,
            start,
            ..Default::default()
        })
        .collect())
}

/// An incast: every host of `senders` sends `size` bytes to `receiver` at `start`. Senders
/// must be distinct, in `0..n_hosts`, and not the receiver; there must be at least one.
pub fn incast(
    n_hosts: u32,
    senders: &[u32],
    receiver: u32,
    size: Bytes,
    start: SimTime,
    limits: TrafficLimits,
) -> Result<Vec<FlowSpec>, TrafficError> {
    check_host(|| "incast receiver".into(), receiver, n_hosts)?;
    if senders.is_empty() {
        return Err(TrafficError::NoSenders);
    }
    if size.get() == 0 {
        return Err(TrafficError::ZeroSize {
            what: "incast flow size".into(),
        });
    }
    check_count(senders.len() as u64, limits)?;
    for (i, &s) in senders.iter().enumerate() {
        check_host(|| format!("incast sender {i}"), s, n_hosts)?;
        if s == receiver {
            return Err(TrafficError::SelfFlow {
                what: format!("incast sender {i}"),
                host: s,
            });
        }
    }
    let mut sorted = senders.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(TrafficError::DuplicateSender { host: w[0] });
    }
    // Sorted by source, one start time and one destination: canonical.
    Ok(sorted
        .into_iter()
        .map(|src| FlowSpec {
            src,
            dst: receiver,
            size,
            start,
            ..Default::default()
        })
        .collect())
}

/// Parameters of a [`closed_loop`] workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClosedLoopSpec<'a> {
    /// The hosts that send requests (distinct, not the server).
    pub clients: &'a [u32],
    /// The host that answers them.
    pub server: u32,
    /// Bytes of each request (at least 1).
    pub request: Bytes,
    /// Bytes of each response; 0: no response (the client's next request follows the
    /// delivery of its previous one).
    pub response: Bytes,
    /// Requests per client (at least 1).
    pub requests: u32,
    /// The client's pause between the delivery of a response (or request) and its next request.
    pub think: Duration,
    /// When every client sends its first request.
    pub start: SimTime,
}

/// One flow of a chained workload: the flow, the index (in the same list) of the flow whose
/// delivery starts it (`None`: it starts at its own `start`), and the gap after that delivery.
pub type ChainedFlow = (FlowSpec, Option<u32>, Duration);

/// A closed loop: each client sends a request to the server; once it is delivered the server
/// sends the response; once that is delivered the client waits `think` and sends its next
/// request, `requests` times. Unlike the open-loop generators, the offered load follows the
/// fabric: a slow response delays the next request. Flows are listed client by client, each
/// client's chain in order (request, response, request, ...).
pub fn closed_loop(
    n_hosts: u32,
    spec: &ClosedLoopSpec<'_>,
    limits: TrafficLimits,
) -> Result<Vec<ChainedFlow>, TrafficError> {
    check_host(|| "closed-loop server".into(), spec.server, n_hosts)?;
    if spec.clients.is_empty() {
        return Err(TrafficError::NoSenders);
    }
    if spec.request.get() == 0 {
        return Err(TrafficError::ZeroSize {
            what: "closed-loop request size".into(),
        });
    }
    if spec.requests == 0 {
        return Err(TrafficError::ZeroSize {
            what: "closed-loop request count".into(),
        });
    }
    let per_request = if spec.response.get() > 0 { 2 } else { 1 };
    check_count(
        (spec.clients.len() as u64).saturating_mul(spec.requests as u64 * per_request),
        limits,
    )?;
    for (i, &c) in spec.clients.iter().enumerate() {
        check_host(|| format!("closed-loop client {i}"), c, n_hosts)?;
        if c == spec.server {
            return Err(TrafficError::SelfFlow {
                what: format!("closed-loop client {i}"),
                host: c,
            });
        }
    }
    let mut sorted = spec.clients.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(TrafficError::DuplicateSender { host: w[0] });
    }
    let mut out = Vec::with_capacity(spec.clients.len() * (spec.requests as usize) * per_request as usize);
    let flow = |src, dst, size| FlowSpec {
        src,
        dst,
        size,
        start: spec.start,
        ..Default::default()
    };
    for &c in &sorted {
        for r in 0..spec.requests {
            // The previous flow of this client's chain (a response, or a request).
            let prev = (r > 0).then(|| out.len() as u32 - 1);
            let gap = if r > 0 { spec.think } else { Duration::ZERO };
            out.push((flow(c, spec.server, spec.request), prev, gap));
            if spec.response.get() > 0 {
                let req = out.len() as u32 - 1;
                out.push((flow(spec.server, c, spec.response), Some(req), Duration::ZERO));
            }
        }
    }
    Ok(out)
}

/// Parameters of a [`poisson`] workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoissonSpec {
    /// Hosts `0..n_hosts` all send and receive; at least 2.
    pub n_hosts: u32,
    /// Target offered load per host, as a fraction of `host_rate`, in `(0, 1]`.
    pub load: f64,
    /// Each host's link rate `C`.
    pub host_rate: BitsPerSec,
    /// Arrivals fall in `[start, start + duration)`.
    pub start: SimTime,
    /// Length of the arrival window; positive.
    pub duration: Duration,
}

impl PoissonSpec {
    /// Per-host flow arrival rate in flows per second: `lambda = load * C / (8 * mean_size)`
    /// (HPCC `traffic_gen.py`). E.g. WebSearch, 100 Gb/s, load 0.3: 2,191 flows/s.
    pub fn arrival_rate(&self, cdf: &FlowSizeCdf) -> f64 {
        self.load * self.host_rate.get() as f64 / (8.0 * cdf.mean_bytes())
    }

    /// Expected number of flows: `n_hosts * lambda * duration`.
    pub fn expected_flows(&self, cdf: &FlowSizeCdf) -> f64 {
        f64::from(self.n_hosts) * self.arrival_rate(cdf) * self.duration.as_secs_f64()
    }
}

/// An open-loop Poisson workload (HPCC `traffic_gen.py` convention): each host starts flows
/// as a Poisson process of rate [`PoissonSpec::arrival_rate`]; each flow goes to a host drawn
/// uniformly from the other `n_hosts - 1` and has a size drawn from `cdf`.
///
/// Inter-arrival times are exponential, computed in `f64` seconds (`-ln(1 - u) / lambda`) and
/// rounded to integer picoseconds; times accumulate as integers. The first arrival is one
/// inter-arrival time after `start`; arrivals at or after `start + duration` are dropped.
///
/// Randomness: host `h` draws from its own stream `streams.stream(base_stream + h)`, in the
/// order gap, destination, size for each flow. So a host's flows do not depend on how many
/// flows other hosts drew, and lengthening `duration` only appends flows (earlier ones are
/// unchanged). Use [`POISSON_STREAM_BASE`] (plus a multiple of `1 << 32` for further
/// workloads in the same run); ranges that overflow `u64`, reach into the per-component ids
/// (`< 1 << 32`) or contain a well-known id of `sim_core::rng::stream` are refused.
///
/// Limits: refused up front when the expected count exceeds `limits.max_flows`; if the
/// realised count still exceeds it, the error gives the exact count.
pub fn poisson(
    spec: &PoissonSpec,
    cdf: &FlowSizeCdf,
    streams: &RngStreams,
    base_stream: u64,
    limits: TrafficLimits,
) -> Result<Vec<FlowSpec>, TrafficError> {
    let n = spec.n_hosts;
    if n < 2 {
        return Err(TrafficError::TooFewHosts {
            generator: "Poisson workload",
            n_hosts: n,
            min: 2,
        });
    }
    if !(spec.load.is_finite() && spec.load > 0.0 && spec.load <= 1.0) {
        return Err(TrafficError::InvalidLoad { load: spec.load });
    }
    if spec.host_rate.get() == 0 {
        return Err(TrafficError::ZeroRate);
    }
    if spec.duration.ps() == 0 {
        return Err(TrafficError::ZeroDuration);
    }
    let Some(end) = spec.start.ps().checked_add(spec.duration.ps()) else {
        return Err(TrafficError::TimeOverflow {
            start: spec.start,
            duration: spec.duration,
        });
    };
    check_stream_range(base_stream, n)?;

    let expected = spec.expected_flows(cdf);
    if expected > limits.max_flows as f64 {
        return Err(TrafficError::TooManyExpectedFlows {
            expected,
            max: limits.max_flows,
        });
    }

    let lambda = spec.arrival_rate(cdf);
    let ps_per_s = PS_PER_S as f64;
    let mut flows: Vec<FlowSpec> = Vec::with_capacity((expected * 1.05 + 16.0).min(limits.max_flows as f64) as usize);
    let mut count: u64 = 0;
    for src in 0..n {
        let mut rng = streams.stream(base_stream + u64::from(src));
        let mut t = spec.start.ps();
        loop {
            let u: f64 = rng.random();
            let gap_s = -(1.0 - u).ln() / lambda;
            // `as` saturates; a saturated gap just ends this host's arrivals.
            let gap_ps = (gap_s * ps_per_s).round() as u64;
            t = t.saturating_add(gap_ps);
            if t >= end {
                break;
            }
            // Destination and size are drawn even over the limit: the draws advance this
            // host's stream, so skipping them would change its later gaps and the count.
            let d = rng.random_range(0..n - 1);
            let dst = if d >= src { d + 1 } else { d };
            let size = cdf.sample(&mut rng);
            count += 1;
            if count > limits.max_flows {
                // Over the limit: keep counting (bounded, as the expected count is within the
                // limit) so that the error can name the exact count.
                continue;
            }
            flows.push(FlowSpec {
                src,
                dst,
                size,
                start: SimTime(t),
                ..Default::default()
            });
        }
    }
    check_count(count, limits)?;
    sort_flows(&mut flows);
    Ok(flows)
}

fn check_stream_range(base: u64, n_hosts: u32) -> Result<(), TrafficError> {
    let bad = |reason: String| TrafficError::BadStreamBase { base, n_hosts, reason };
    // Last id used: base + n_hosts - 1.
    let Some(last) = base.checked_add(u64::from(n_hosts).saturating_sub(1)) else {
        return Err(bad("the last id overflows u64".into()));
    };
    if base < 1 << 32 {
        return Err(bad("ids below 1 << 32 are reserved for per-component streams".into()));
    }
    for (name, id) in [("WORKLOAD", stream::WORKLOAD), ("ECMP_SEEDS", stream::ECMP_SEEDS)] {
        if (base..=last).contains(&id) {
            return Err(bad(format!("the range contains sim_core::rng::stream::{name} ({id})")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::SimRng;

    const WEB_SEARCH: &str = include_str!("../../../scenarios/catalogue/cdf/WebSearch_distribution.txt");
    const ALI_STORAGE: &str = include_str!("../../../scenarios/catalogue/cdf/AliStorage2019.txt");
    const LIM: TrafficLimits = TrafficLimits::DEFAULT;

    fn flow(src: u32, dst: u32, size: u64, start: u64) -> FlowSpec {
        FlowSpec {
            src,
            dst,
            size: Bytes(size),
            start: SimTime(start),
            ..Default::default()
        }
    }

    fn rng(seed: u64) -> SimRng {
        RngStreams::new(seed).stream(stream::WORKLOAD)
    }

    // ---- explicit ----

    #[test]
    fn explicit_accepts_valid_flows_and_sorts_them() {
        let input = [flow(2, 0, 10, 50), flow(0, 1, 5, 0), flow(1, 2, 7, 0)];
        let out = explicit(&input, 3, LIM).unwrap();
        assert_eq!(out, vec![flow(0, 1, 5, 0), flow(1, 2, 7, 0), flow(2, 0, 10, 50)]);
        assert_eq!(explicit(&[], 3, LIM).unwrap(), vec![]);
    }

    #[test]
    fn explicit_validation_errors() {
        let e = explicit(&[flow(0, 1, 5, 0), flow(3, 1, 5, 0)], 3, LIM).unwrap_err();
        assert_eq!(
            e,
            TrafficError::HostOutOfRange {
                what: "flow 1 source".into(),
                host: 3,
                n_hosts: 3
            }
        );
        let e = explicit(&[flow(0, 7, 5, 0)], 3, LIM).unwrap_err();
        assert!(e.to_string().contains("flow 0 destination is host 7"), "{e}");
        let e = explicit(&[flow(0, 1, 1, 0), flow(2, 2, 5, 0)], 3, LIM).unwrap_err();
        assert_eq!(
            e,
            TrafficError::SelfFlow {
                what: "flow 1".into(),
                host: 2
            }
        );
        let e = explicit(&[flow(0, 1, 0, 0)], 3, LIM).unwrap_err();
        assert_eq!(e, TrafficError::ZeroSize { what: "flow 0".into() });
        let small = TrafficLimits { max_flows: 1 };
        let e = explicit(&[flow(0, 1, 5, 0), flow(1, 0, 5, 0)], 3, small).unwrap_err();
        assert_eq!(e, TrafficError::TooManyFlows { count: 2, max: 1 });
    }

    // ---- permutation ----

    #[test]
    fn permutation_is_a_derangement_using_every_host_once() {
        for n in [2u32, 3, 7, 64, 1000] {
            for seed in 0..20 {
                let flows = permutation(n, Bytes(4096), SimTime(10), &mut rng(seed), LIM).unwrap();
                assert_eq!(flows.len(), n as usize);
                let mut dsts: Vec<u32> = flows.iter().map(|f| f.dst).collect();
                dsts.sort_unstable();
                assert_eq!(dsts, (0..n).collect::<Vec<_>>(), "n={n} seed={seed}");
                for (i, f) in flows.iter().enumerate() {
                    assert_eq!(f.src, i as u32);
                    assert_ne!(f.src, f.dst);
                    assert_eq!((f.size, f.start), (Bytes(4096), SimTime(10)));
                }
            }
        }
    }

    #[test]
    fn permutation_is_deterministic_and_seed_dependent() {
        let p = |seed| permutation(64, Bytes(1), SimTime::ZERO, &mut rng(seed), LIM).unwrap();
        assert_eq!(p(1), p(1));
        assert_ne!(p(1), p(2));
        assert_ne!(p(2), p(3));
    }

    #[test]
    fn permutation_is_uniform_over_derangements_of_four() {
        // 4 hosts have 9 derangements, 3 of which are not single 4-cycles (Sattolo would
        // never produce those). 18k draws: each count ~ 2000 +- 42; allow +-10%.
        let mut r = rng(77);
        let mut counts: Vec<(Vec<u32>, u32)> = Vec::new();
        for _ in 0..18_000 {
            let key: Vec<u32> = permutation(4, Bytes(1), SimTime::ZERO, &mut r, LIM)
                .unwrap()
                .iter()
                .map(|f| f.dst)
                .collect();
            match counts.iter_mut().find(|(k, _)| *k == key) {
                Some((_, c)) => *c += 1,
                None => counts.push((key, 1)),
            }
        }
        assert_eq!(counts.len(), 9);
        for (k, c) in &counts {
            assert!((1800..=2200).contains(c), "{k:?}: {c}");
        }
        assert!(counts.iter().any(|(k, _)| k == &vec![1, 0, 3, 2]));
    }

    #[test]
    fn permutation_validation_errors() {
        let e = permutation(1, Bytes(1), SimTime::ZERO, &mut rng(0), LIM).unwrap_err();
        assert_eq!(
            e,
            TrafficError::TooFewHosts {
                generator: "permutation",
                n_hosts: 1,
                min: 2
            }
        );
        let e = permutation(4, Bytes(0), SimTime::ZERO, &mut rng(0), LIM).unwrap_err();
        assert!(matches!(e, TrafficError::ZeroSize { .. }));
        let e = permutation(
            20,
            Bytes(1),
            SimTime::ZERO,
            &mut rng(0),
            TrafficLimits { max_flows: 10 },
        )
        .unwrap_err();
        assert_eq!(e, TrafficError::TooManyFlows { count: 20, max: 10 });
    }

    // ---- incast ----

    #[test]
    fn incast_builds_n_to_one_sorted_by_sender() {
        let flows = incast(8, &[5, 1, 3], 0, Bytes(1000), SimTime(7), LIM).unwrap();
        assert_eq!(
            flows,
            vec![flow(1, 0, 1000, 7), flow(3, 0, 1000, 7), flow(5, 0, 1000, 7)]
        );
    }

    #[test]
    fn incast_validation_errors() {
        let z = SimTime::ZERO;
        assert_eq!(
            incast(8, &[], 0, Bytes(1), z, LIM).unwrap_err(),
            TrafficError::NoSenders
        );
        assert_eq!(
            incast(8, &[1, 2], 8, Bytes(1), z, LIM).unwrap_err(),
            TrafficError::HostOutOfRange {
                what: "incast receiver".into(),
                host: 8,
                n_hosts: 8
            }
        );
        assert_eq!(
            incast(8, &[1, 9], 0, Bytes(1), z, LIM).unwrap_err(),
            TrafficError::HostOutOfRange {
                what: "incast sender 1".into(),
                host: 9,
                n_hosts: 8
            }
        );
        assert_eq!(
            incast(8, &[1, 0], 0, Bytes(1), z, LIM).unwrap_err(),
            TrafficError::SelfFlow {
                what: "incast sender 1".into(),
                host: 0
            }
        );
        assert_eq!(
            incast(8, &[3, 1, 3], 0, Bytes(1), z, LIM).unwrap_err(),
            TrafficError::DuplicateSender { host: 3 }
        );
        assert!(matches!(
            incast(8, &[1], 0, Bytes(0), z, LIM).unwrap_err(),
            TrafficError::ZeroSize { .. }
        ));
        assert_eq!(
            incast(8, &[1, 2, 3], 0, Bytes(1), z, TrafficLimits { max_flows: 2 }).unwrap_err(),
            TrafficError::TooManyFlows { count: 3, max: 2 }
        );
    }

    // ---- poisson ----

    fn web_spec() -> PoissonSpec {
        PoissonSpec {
            n_hosts: 16,
            load: 0.3,
            host_rate: BitsPerSec::from_gbps(100),
            start: SimTime::ZERO,
            duration: Duration::from_ms(3_000),
        }
    }

    #[test]
    fn arrival_rate_matches_the_hpcc_example() {
        // Reference README: WebSearch, 100 Gb/s, load 0.3 -> 2,191 flows/s per host.
        let cdf = FlowSizeCdf::parse(WEB_SEARCH).unwrap();
        let lambda = web_spec().arrival_rate(&cdf);
        assert!((lambda - 2191.38).abs() < 0.01, "{lambda}");
    }

    /// 16 hosts x 3 s of WebSearch at load 0.3: ~105k flows. Offered-load relative sd is
    /// sqrt((1 + CV^2) / N) ~ 0.8% (CV 2.3), so the 5% bound is ~6 sigma; the count's relative sd
    /// is 1/sqrt(N) ~ 0.3%, so its 2% bound is ~6 sigma.
    #[test]
    fn poisson_offered_load_and_count_match_target() {
        let cdf = FlowSizeCdf::parse(WEB_SEARCH).unwrap();
        let spec = web_spec();
        let flows = poisson(&spec, &cdf, &RngStreams::new(5), POISSON_STREAM_BASE, LIM).unwrap();

        let expected = spec.expected_flows(&cdf);
        let count = flows.len() as f64;
        assert!(
            ((count - expected) / expected).abs() < 0.02,
            "{count} flows vs {expected}"
        );

        let bytes: u64 = flows.iter().map(|f| f.size.get()).sum();
        let capacity_bytes = f64::from(spec.n_hosts) * spec.host_rate.get() as f64 / 8.0 * spec.duration.as_secs_f64();
        let load = bytes as f64 / capacity_bytes;
        assert!(((load - spec.load) / spec.load).abs() < 0.05, "offered load {load}");

        // Every host sends, at roughly the same rate (per-host count ~6.6k +- 81; +-10%).
        for h in 0..spec.n_hosts {
            let c = flows.iter().filter(|f| f.src == h).count() as f64;
            let per_host = expected / f64::from(spec.n_hosts);
            assert!(((c - per_host) / per_host).abs() < 0.1, "host {h}: {c} flows");
        }
    }

    #[test]
    fn poisson_structure_window_and_exponential_gaps() {
        let cdf = FlowSizeCdf::parse(WEB_SEARCH).unwrap();
        let spec = PoissonSpec {
            start: SimTime(Duration::from_ms(2).ps()),
            ..web_spec()
        };
        let flows = poisson(&spec, &cdf, &RngStreams::new(6), POISSON_STREAM_BASE, LIM).unwrap();
        let end = spec.start + spec.duration;
        let mut sorted = flows.clone();
        sort_flows(&mut sorted);
        assert_eq!(sorted, flows, "output is in canonical order");
        let mut dst_seen = vec![0u32; spec.n_hosts as usize];
        for f in &flows {
            assert_ne!(f.src, f.dst, "self-destination");
            assert!(f.src < spec.n_hosts && f.dst < spec.n_hosts);
            assert!(spec.start < f.start && f.start < end, "{:?}", f.start);
            assert!((1..=30_000_000).contains(&f.size.get()));
            dst_seen[f.dst as usize] += 1;
        }
        assert!(dst_seen.iter().all(|&c| c > 0));

        // Inter-arrival times per host: mean 1/lambda, P(gap > mean) = 1/e (+-0.01: ~6 sigma).
        let mean_gap_ps = PS_PER_S as f64 / spec.arrival_rate(&cdf);
        let (mut gaps, mut over, mut sum) = (0u64, 0u64, 0f64);
        for h in 0..spec.n_hosts {
            let mut prev = spec.start.ps();
            for f in flows.iter().filter(|f| f.src == h) {
                let g = (f.start.ps() - prev) as f64;
                sum += g;
                gaps += 1;
                over += u64::from(g > mean_gap_ps);
                prev = f.start.ps();
            }
        }
        let frac = over as f64 / gaps as f64;
        assert!((frac - (-1f64).exp()).abs() < 0.01, "P(gap > mean) = {frac}");
        let mean = sum / gaps as f64;
        assert!(((mean - mean_gap_ps) / mean_gap_ps).abs() < 0.02, "mean gap {mean} ps");
    }

    #[test]
    fn poisson_is_deterministic_and_extends_as_a_prefix() {
        let cdf = FlowSizeCdf::parse(ALI_STORAGE).unwrap();
        let spec = PoissonSpec {
            n_hosts: 8,
            load: 0.5,
            host_rate: BitsPerSec::from_gbps(400),
            start: SimTime::ZERO,
            duration: Duration::from_ms(1),
        };
        let make = |seed: u64, spec: &PoissonSpec| {
            poisson(spec, &cdf, &RngStreams::new(seed), POISSON_STREAM_BASE, LIM).unwrap()
        };
        let a = make(1, &spec);
        assert!(a.len() > 1000);
        assert_eq!(a, make(1, &spec));
        assert_ne!(a, make(2, &spec));
        // Per-host streams: doubling the window leaves the first window's flows unchanged.
        let longer = make(
            1,
            &PoissonSpec {
                duration: Duration::from_ms(2),
                ..spec
            },
        );
        let end = SimTime(Duration::from_ms(1).ps());
        let prefix: Vec<FlowSpec> = longer.into_iter().filter(|f| f.start < end).collect();
        assert_eq!(prefix, a);
        // A different stream base is a different workload.
        let other = poisson(&spec, &cdf, &RngStreams::new(1), POISSON_STREAM_BASE + (1 << 32), LIM).unwrap();
        assert_ne!(other, a);
    }

    #[test]
    fn poisson_limits_name_the_count() {
        let cdf = FlowSizeCdf::parse(WEB_SEARCH).unwrap();
        let spec = web_spec(); // ~105k expected flows
        let e = poisson(
            &spec,
            &cdf,
            &RngStreams::new(1),
            POISSON_STREAM_BASE,
            TrafficLimits { max_flows: 50_000 },
        )
        .unwrap_err();
        assert!(
            matches!(e, TrafficError::TooManyExpectedFlows { max: 50_000, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("about 105186 flows"), "{e}");

        // Realised count above the limit although the expected count is below it: exact count.
        let spec = PoissonSpec {
            duration: Duration::from_ms(30),
            ..web_spec()
        };
        let expected = spec.expected_flows(&cdf);
        let (seed, actual) = (0..100u64)
            .map(|s| {
                let n = poisson(&spec, &cdf, &RngStreams::new(s), POISSON_STREAM_BASE, LIM)
                    .unwrap()
                    .len() as u64;
                (s, n)
            })
            .find(|&(_, n)| n as f64 - 1.0 > expected)
            .expect("some seed exceeds the mean");
        let limits = TrafficLimits { max_flows: actual - 1 };
        let e = poisson(&spec, &cdf, &RngStreams::new(seed), POISSON_STREAM_BASE, limits).unwrap_err();
        assert_eq!(
            e,
            TrafficError::TooManyFlows {
                count: actual,
                max: actual - 1
            }
        );
    }

    #[test]
    fn poisson_validation_errors() {
        let cdf = FlowSizeCdf::parse(WEB_SEARCH).unwrap();
        let s = RngStreams::new(1);
        let run = |spec: PoissonSpec, base: u64| poisson(&spec, &cdf, &s, base, LIM).unwrap_err();
        let b = POISSON_STREAM_BASE;
        assert!(matches!(
            run(
                PoissonSpec {
                    n_hosts: 1,
                    ..web_spec()
                },
                b
            ),
            TrafficError::TooFewHosts { n_hosts: 1, min: 2, .. }
        ));
        for load in [0.0, -0.1, 1.01, f64::NAN, f64::INFINITY] {
            let e = run(PoissonSpec { load, ..web_spec() }, b);
            assert!(matches!(e, TrafficError::InvalidLoad { .. }), "{load}: {e:?}");
        }
        assert_eq!(
            run(
                PoissonSpec {
                    host_rate: BitsPerSec(0),
                    ..web_spec()
                },
                b
            ),
            TrafficError::ZeroRate
        );
        assert_eq!(
            run(
                PoissonSpec {
                    duration: Duration::ZERO,
                    ..web_spec()
                },
                b
            ),
            TrafficError::ZeroDuration
        );
        assert!(matches!(
            run(
                PoissonSpec {
                    start: SimTime(u64::MAX - 5),
                    ..web_spec()
                },
                b
            ),
            TrafficError::TimeOverflow { .. }
        ));
        // Stream ranges.
        assert!(run(web_spec(), 0).to_string().contains("per-component"));
        assert!(run(web_spec(), u64::MAX - 3).to_string().contains("overflows"));
        let e = run(web_spec(), stream::WORKLOAD);
        assert!(e.to_string().contains("WORKLOAD"), "{e}");
        let e = run(web_spec(), stream::ECMP_SEEDS);
        assert!(e.to_string().contains("ECMP_SEEDS"), "{e}");
        // Load 1.0 is accepted.
        poisson(
            &PoissonSpec {
                load: 1.0,
                ..web_spec()
            },
            &cdf,
            &s,
            b,
            LIM,
        )
        .unwrap();
    }
}
