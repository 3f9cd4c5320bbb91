//! Exact timing of the packet engine against closed-form results (tolerance: 0 ps).

use fabrics::engine::{ETHERNET_ROCE_HEADER_BYTES, EngineConfig};
use fabrics::topology::Topology;
use fabrics::traffic::FlowSpec;
use fabricsim_tests::{link, run};
use sim_core::{BitsPerSec, Bytes, Duration, RunLimits, RunOutcome, SimTime, serialization_time};

fn ser(bytes: u64, gbps: u64) -> u64 {
    serialization_time(Bytes(bytes), BitsPerSec::from_gbps(gbps)).ps()
}

/// One flow over one link: FCT = serialization of every packet back to back + propagation.
#[test]
fn one_flow_over_one_link_is_exact() {
    let mut t = Topology::new("two hosts, one cable");
    let (a, b) = (t.add_host("h0", None), t.add_host("h1", None));
    t.add_link(a, b, link(100, 1_000));
    let cfg = EngineConfig {
        mtu_bytes: 4096,
        ..Default::default()
    };
    // 10 full packets and one of 1000 B.
    let size = 10 * 4096 + 1000;
    let flows = vec![FlowSpec {
        src: 0,
        dst: 1,
        size: Bytes(size),
        start: SimTime(0),
        ..Default::default()
    }];
    let (f, r) = run(&t, cfg, flows, RunLimits::default());
    assert_eq!(r.outcome, RunOutcome::Finished);
    let h = ETHERNET_ROCE_HEADER_BYTES as u64;
    let want = 10 * ser(4096 + h, 100) + ser(1000 + h, 100) + 1_000_000;
    assert_eq!(f.flow_records()[0].fct_ps(), Some(want));
    // Every packet leaves as soon as the previous one is out: latency = own serialization +
    // propagation. The histogram keeps 3 significant digits (0.1%).
    let p_max = f.packet_latency().max_ps().unwrap() as f64;
    let want_max = (ser(4096 + h, 100) + 1_000_000) as f64;
    assert!((p_max - want_max).abs() / want_max < 1e-3, "{p_max} vs {want_max}");
}

/// A single packet across h store-and-forward hops with different rates and delays:
/// latency = sum over links of (serialization + propagation) + sum over switches of latency.
#[test]
fn packet_across_hops_is_exact() {
    let rates = [100, 200, 400, 50];
    let delays_ns = [5, 100, 2_000, 15];
    let mut t = Topology::new("chain");
    let h0 = t.add_host("h0", None);
    let h1 = t.add_host("h1", None);
    let s: Vec<_> = (0..3).map(|i| t.add_switch(format!("s{i}"), 0, None)).collect();
    let chain = [h0, s[0], s[1], s[2], h1];
    for i in 0..4 {
        t.add_link(chain[i], chain[i + 1], link(rates[i], delays_ns[i]));
    }
    let lat = Duration::from_ns(300);
    let cfg = EngineConfig {
        switch_latency: lat,
        header_bytes: 48,
        ..Default::default()
    };
    let flows = vec![FlowSpec {
        src: 0,
        dst: 1,
        size: Bytes(1000),
        start: SimTime(7),
        ..Default::default()
    }];
    let (f, _) = run(&t, cfg, flows, RunLimits::default());
    let want: u64 = (0..4).map(|i| ser(1048, rates[i]) + delays_ns[i] * 1000).sum::<u64>() + 3 * lat.ps();
    assert_eq!(f.flow_records()[0].fct_ps(), Some(want));
    let p = f.packet_latency().max_ps().unwrap() as f64;
    assert!(
        (p - want as f64).abs() / (want as f64) < 1e-3,
        "histogram within 0.1%: {p} vs {want}"
    );
    assert_eq!(f.totals().link_hops, 4);
}
