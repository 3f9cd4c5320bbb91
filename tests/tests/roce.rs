//! RoCEv2 validation: PFC headroom, pause quanta, parking-lot unfairness, DCQCN convergence,
//! deadlock detection, go-back-N (`models.md` §2 and §5.2–5.6).

use fabrics::engine::{EngineConfig, Fabric, GbnWindow, RoceCc, RoceConfig, headroom_bound_bytes};
use fabrics::models::pfc::{MAX_PAUSE_QUANTA, pause_duration, quantum_duration};
use fabrics::models::{DcqcnParams, RedParams, TimelyParams};
use fabrics::topology::{LinkInfo, LinkKind, Topology};
use fabrics::traffic::FlowSpec;
use sim_core::{BitsPerSec, Duration, RunLimits, RunOutcome, SimTime};

const MTU: u32 = 4096;
const HEADER: u32 = 82;
const WIRE: u32 = MTU + HEADER;
/// Lossless priority of data in these tests (the default RoCE lossless priority).
const PRIO: u8 = 3;

fn eth(gbps: u64, metres: u64) -> LinkInfo {
    LinkInfo {
        rate: BitsPerSec::from_gbps(gbps),
        delay: Duration(5_000 * metres),
        kind: LinkKind::Network,
    }
}

fn cfg(roce: RoceConfig) -> EngineConfig {
    EngineConfig {
        mtu_bytes: MTU,
        header_bytes: HEADER,
        roce: Some(roce),
        ..Default::default()
    }
}

/// A flow on the lossless priority.
fn flow(src: u32, dst: u32, size: u64) -> FlowSpec {
    FlowSpec {
        class: PRIO,
        ..fabricsim_tests::flow(src, dst, size)
    }
}

fn run_limited(topo: &Topology, c: EngineConfig, flows: Vec<FlowSpec>, end: Option<SimTime>) -> Fabric {
    let limits = RunLimits {
        end_time: end,
        ..Default::default()
    };
    let (f, r) = fabricsim_tests::run(topo, c, flows, limits);
    assert!(r.outcome.is_complete(), "{:?}", r.outcome);
    f
}

fn run(topo: &Topology, c: EngineConfig, flows: Vec<FlowSpec>) -> Fabric {
    let f = run_limited(topo, c, flows, None);
    assert_eq!(f.totals().flows_completed as usize, f.flows().len());
    f
}

/// A star: switch s0 with hosts h0..h{n-1}, all links `gbps` and `metres`.
fn star(n: u32, gbps: u64, metres: u64) -> Topology {
    let mut t = Topology::new("star");
    let sw = t.add_switch("s0", 0, None);
    for i in 0..n {
        let h = t.add_host(format!("h{i}"), None);
        t.add_link(h, sw, eth(gbps, metres));
    }
    t
}

/// Port id of host `h`'s NIC (hosts are added after the switch in [`star`]).
fn nic_port(f: &Fabric, node: usize) -> u32 {
    f.port_base()[node]
}

/// models.md §2.2 table: one quantum is 512 bit times; the largest pause (65535 quanta).
#[test]
fn pause_quanta_arithmetic_matches_the_table() {
    for (g, q_ps, max_ps) in [
        (25u64, 20_480u64, 1_342_156_800u64),
        (100, 5_120, 335_539_200),
        (200, 2_560, 167_769_600),
        (400, 1_280, 83_884_800),
        (800, 640, 41_942_400),
    ] {
        let r = BitsPerSec::from_gbps(g);
        assert_eq!(quantum_duration(r).ps(), q_ps, "{g}G quantum");
        assert_eq!(pause_duration(MAX_PAUSE_QUANTA, r).ps(), max_ps, "{g}G max pause");
    }
}

/// models.md §5.2: 2 line-rate senders -> switch -> 1 receiver at 100G, 5 m cables. With
/// headroom at the bound (`headroom_bound_bytes`) there are zero drops (the engine also
/// asserts it: a lossless drop would panic) and the headroom actually used stays within the
/// bound; each sender is paused about half the time (duty cycle 50% ± 10 points: the
/// start-up burst before the first XOFF is not paused). With a third of the bound, lossless
/// packets are dropped (cause: headroom full).
#[test]
fn headroom_at_the_bound_is_lossless_and_below_it_drops() {
    let t = star(3, 100, 5);
    let bound = headroom_bound_bytes(
        BitsPerSec::from_gbps(100),
        Duration(25_000),
        fabrics::engine::DEFAULT_SWITCH_LATENCY,
        WIRE,
    );
    let size = 4_000_000u64;
    let flows = vec![flow(1, 0, size), flow(2, 0, size)];
    let base = RoceConfig {
        buffer_bytes: Some(300_000),
        ..Default::default()
    };
    let f = run(&t, cfg(base.clone()), flows.clone());
    let r = f.roce().unwrap();
    assert_eq!(f.totals().packets_dropped, 0);
    assert_eq!(r.totals.drops_headroom, 0);
    assert!(r.totals.pause_frames > 0, "the incast must trigger PFC: {:?}", r.totals);
    let end = f.flow_records().iter().filter_map(|x| x.finish).max().unwrap();
    let used = r.port_stats.iter().map(|p| p.headroom_max_bytes).max().unwrap();
    assert!(used > 0 && used <= bound, "headroom used {used} B, bound {bound} B");
    for h in [2usize, 3] {
        let p = nic_port(&f, h);
        let duty = r.port_paused_time(p, end).ps() as f64 / end.ps() as f64;
        assert!(
            (duty - 0.5).abs() < 0.1,
            "sender node {h}: paused {duty:.3} of the time"
        );
    }
    let small = RoceConfig {
        headroom_bytes: Some(bound / 3),
        ..base
    };
    let f = run_limited(&t, cfg(small), flows, Some(SimTime::ZERO + Duration::from_ms(2)));
    let r = f.roce().unwrap();
    assert!(r.totals.drops_headroom > 0, "{:?}", r.totals);
    assert_eq!(r.totals.drops_headroom, f.totals().packets_dropped);
}

/// A static XOFF threshold (`RoceConfig::xoff_threshold_bytes`, ns3-rdma's static mode,
/// models.md §2.3) on the 2:1 incast of the headroom case: still lossless with the default
/// headroom, the senders still paused half the time, and the bottleneck queue bounded by the
/// threshold: each ingress holds at most reserve + threshold + one frame (the packet that
/// crosses it) in shared and reserve, plus its headroom, so the egress queue to the receiver
/// stays under twice that. The threshold moves the queue both ways around the dynamic one
/// (about 20 kB per ingress here: (pool − 2s)/8 = s).
#[test]
fn static_xoff_threshold_bounds_the_queue_and_stays_lossless() {
    let t = star(3, 100, 5);
    let bound = headroom_bound_bytes(
        BitsPerSec::from_gbps(100),
        Duration(25_000),
        fabrics::engine::DEFAULT_SWITCH_LATENCY,
        WIRE,
    );
    let flows = vec![flow(1, 0, 4_000_000), flow(2, 0, 4_000_000)];
    let run_with = |xoff: Option<u64>| {
        let c = RoceConfig {
            buffer_bytes: Some(300_000),
            xoff_threshold_bytes: xoff,
            ..Default::default()
        };
        let f = run(&t, cfg(c.clone()), flows.clone());
        let r = f.roce().unwrap();
        assert_eq!(f.totals().packets_dropped, 0, "xoff {xoff:?}");
        assert!(r.totals.pause_frames > 0, "xoff {xoff:?}: {:?}", r.totals);
        let end = f.flow_records().iter().filter_map(|x| x.finish).max().unwrap();
        for h in [2usize, 3] {
            let duty = r.port_paused_time(nic_port(&f, h), end).ps() as f64 / end.ps() as f64;
            assert!((duty - 0.5).abs() < 0.1, "xoff {xoff:?}, node {h}: paused {duty:.3}");
        }
        let egress = f.port_base()[0] as usize; // s0's first port: to h0
        let q = r.port_stats[egress].queue_max_bytes[PRIO as usize];
        if let Some(x) = xoff {
            let cap = 2 * (c.reserve_bytes + x + WIRE as u64 + bound);
            assert!(q <= cap, "xoff {x}: queue max {q} B above {cap} B");
        }
        q
    };
    let (low, dynamic, high) = (run_with(Some(8_000)), run_with(None), run_with(Some(60_000)));
    eprintln!("static XOFF 8 kB: queue max {low} B; dynamic: {dynamic} B; static 60 kB: {high} B");
    assert!(low < dynamic && dynamic < high, "{low} < {dynamic} < {high}");
}

/// Runs to `t1`, snapshots every flow's delivered bytes and the bottleneck queue's area,
/// runs on to `t2`; returns the fabric, per-flow goodput in [t1, t2] (b/s) and the mean
/// queue of port `q_port` in that window (bytes).
fn windowed(
    topo: &Topology,
    c: EngineConfig,
    flows: Vec<FlowSpec>,
    t1: SimTime,
    t2: SimTime,
    q_port: impl Fn(&Fabric) -> u32,
) -> (Fabric, Vec<f64>, f64, u64) {
    let routes = fabrics::routing::Routes::ecmp(topo);
    let mut f = Fabric::new(topo, routes, c, flows).unwrap();
    let mut s = f.scheduler::<sim_core::WheelQueue<_>>();
    let lim = |t: SimTime| RunLimits {
        end_time: Some(t),
        ..Default::default()
    };
    let r = sim_core::run(&mut f, &mut s, &lim(t1), |_| std::ops::ControlFlow::Continue(()));
    assert_eq!(r.outcome, RunOutcome::EndTime);
    let b1: Vec<u64> = f.flow_records().iter().map(|r| r.bytes_delivered).collect();
    let qp = q_port(&f);
    let a1 = f.ports()[qp as usize].stats.queue_bytes.area_until(t1);
    let pauses1 = f.roce().unwrap().totals.pause_frames;
    let r = sim_core::run(&mut f, &mut s, &lim(t2), |_| std::ops::ControlFlow::Continue(()));
    assert_eq!(r.outcome, RunOutcome::EndTime);
    let secs = (t2.ps() - t1.ps()) as f64 * 1e-12;
    let rates = f
        .flow_records()
        .iter()
        .zip(&b1)
        .map(|(r, &b)| (r.bytes_delivered - b) as f64 * 8.0 / secs)
        .collect();
    let a2 = f.ports()[qp as usize].stats.queue_bytes.area_until(t2);
    let q_mean = (a2 - a1) as f64 / (t2.ps() - t1.ps()) as f64;
    let pauses = f.roce().unwrap().totals.pause_frames - pauses1;
    (f, rates, q_mean, pauses)
}

/// Parking lot (models.md §5.3): hosts h1..h3 on switch A share A's uplink into switch B's
/// port P1; h4 enters B on its own port P2; all four send to h0 behind B. 100G links.
/// Node order: A, B, h0, h1, h2, h3, h4.
fn parking_lot() -> Topology {
    let mut t = Topology::new("parking lot");
    let a = t.add_switch("A", 0, None);
    let b = t.add_switch("B", 0, None);
    let hs: Vec<_> = (0..5).map(|i| t.add_host(format!("h{i}"), None)).collect();
    t.add_link(a, b, eth(100, 5));
    t.add_link(hs[0], b, eth(100, 5));
    for &h in &hs[1..4] {
        t.add_link(h, a, eth(100, 5));
    }
    t.add_link(hs[4], b, eth(100, 5));
    t
}

fn receiver_port(f: &Fabric) -> u32 {
    // Switch B (node 1): its ports are A, h0, h4; the egress to h0 is its second port.
    f.port_base()[1] + 1
}

/// PFC only: each of B's two ingress ports gets half of the egress (the queue holds equal
/// amounts from each ingress, both hovering at the dynamic threshold), so the three flows
/// behind A get C/6 each and the lone flow C/2. Measured over 2..10 ms of a run of long
/// flows; tolerance 3% of each share (relative).
#[test]
fn parking_lot_pfc_only_gives_one_sixth_and_one_half() {
    let flows = (1..=4).map(|s| flow(s, 0, 1 << 30)).collect();
    let c = cfg(RoceConfig {
        buffer_bytes: Some(1_000_000),
        ..Default::default()
    });
    let ms = |x: u64| SimTime::ZERO + Duration::from_ms(x);
    let (f, rates, _, _) = windowed(&parking_lot(), c, flows, ms(2), ms(10), receiver_port);
    let total: f64 = rates.iter().sum();
    let shares: Vec<f64> = rates.iter().map(|r| r / total).collect();
    eprintln!(
        "parking lot, PFC only: shares {shares:.4?}, total {:.2} Gb/s",
        total / 1e9
    );
    let want = [1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 0.5];
    for (i, (g, w)) in shares.iter().zip(want).enumerate() {
        assert!((g - w).abs() / w < 0.03, "flow {i}: share {g:.4}, want {w:.4}");
    }
    assert_eq!(f.totals().packets_dropped, 0);
    // The pause tree: B's ingress from A pauses A's uplink, A's ingresses pause h1..h3.
    let edges = f.roce().unwrap().pause_edges(ms(10));
    assert!(edges.len() >= 5, "{edges:?}");
}

/// DCQCN with ECN below XOFF on the parking lot: the shares move toward C/4 each. Band
/// stated: every share within [0.20, 0.30] (PFC only gives 0.167 / 0.5), measured over
/// 20..60 ms with the paper's parameters at 100G and marking well below the XOFF threshold.
#[test]
fn parking_lot_with_dcqcn_moves_toward_one_quarter() {
    let flows = (1..=4).map(|s| flow(s, 0, 1 << 34)).collect();
    let c = cfg(RoceConfig {
        buffer_bytes: Some(8_000_000),
        ecn: Some(RedParams::dcqcn_paper()),
        cc: RoceCc::Dcqcn(DcqcnParams::paper(BitsPerSec::from_gbps(100))),
        ..Default::default()
    });
    let ms = |x: u64| SimTime::ZERO + Duration::from_ms(x);
    let (_, rates, q, pauses) = windowed(&parking_lot(), c, flows, ms(20), ms(60), receiver_port);
    let total: f64 = rates.iter().sum();
    let shares: Vec<f64> = rates.iter().map(|r| r / total).collect();
    eprintln!(
        "parking lot, DCQCN: shares {shares:.4?}, total {:.2} Gb/s, queue {q:.0} B, pauses {pauses}",
        total / 1e9
    );
    for (i, g) in shares.iter().enumerate() {
        assert!((0.20..=0.30).contains(g), "flow {i}: share {g:.4}");
    }
}

/// DCQCN convergence (models.md §5.4): N = 2, 4, 8 long flows into one 40G bottleneck
/// (paper parameters and marking: Kmin 5 KB, Kmax 200 KB, Pmax 1%), buffer large enough
/// that XOFF sits far above Kmax. Over 50..2050 ms: every flow within 5% of C/N (C = the
/// delivered total), the bottleneck queue's mean between Kmin and Kmax, no PAUSE frame.
///
/// The window is long on purpose: with Pmax 1% and a 50 µs CNP interval a flow at 5 Gb/s
/// (N = 8) sees a CNP only every ~330 µs, so its rate wanders: in 50-ms windows the flows
/// deviate from C/N by ~8% (one standard deviation), nearly independently from window to
/// window, with no flow favoured (the worst flow changes with the seed). The old 600-ms
/// window left the worst of 8 flows at 2.6..6.7% over seeds 1..5; 2 s gives 1.5..2.6%.
/// Measured (seed 1): worst deviation 0.72% (N=2), 1.59% (N=4), 2.41% (N=8); queue mean
/// 83 / 156 / 190 kB; no PAUSE.
#[test]
fn dcqcn_converges_to_fair_share_without_pauses() {
    for n in [2u32, 4, 8] {
        let t = star(n + 1, 40, 5);
        let flows = (1..=n).map(|s| flow(s, 0, 1 << 34)).collect();
        let c = cfg(RoceConfig {
            buffer_bytes: Some(16_000_000),
            ecn: Some(RedParams::dcqcn_paper()),
            cc: RoceCc::Dcqcn(DcqcnParams::paper(BitsPerSec::from_gbps(40))),
            ..Default::default()
        });
        let ms = |x: u64| SimTime::ZERO + Duration::from_ms(x);
        // The switch is node 0; its port to h0 (node 1) is its first port.
        let (f, rates, q, pauses) = windowed(&t, c, flows, ms(50), ms(2050), |f| f.port_base()[0]);
        let total: f64 = rates.iter().sum();
        let fair = total / n as f64;
        let worst = rates.iter().map(|r| (r - fair).abs() / fair).fold(0.0, f64::max);
        eprintln!(
            "DCQCN N={n}: total {:.2} Gb/s, worst deviation {:.2}%, queue mean {q:.0} B, pauses {pauses}, CNPs {}",
            total / 1e9,
            worst * 100.0,
            f.roce().unwrap().totals.cnps_sent
        );
        assert!(total > 0.9 * 40e9 * MTU as f64 / WIRE as f64, "N={n}: link underused");
        assert!(worst < 0.05, "N={n}: rates {rates:?}");
        assert!((5_000.0..=200_000.0).contains(&q), "N={n}: queue mean {q}");
        assert_eq!(pauses, 0, "N={n}: PFC paused in steady state");
    }
}

/// Four switches in a ring S0..S3 (100G, 5 m), host hi on Si; ring links are added first, so
/// Si's ports are [ring link to S(i±1) in insertion order..., hi]. Node order: S0..S3, h0..h3.
fn ring() -> Topology {
    let mut t = Topology::new("4-switch ring");
    let sw: Vec<_> = (0..4).map(|i| t.add_switch(format!("s{i}"), 0, None)).collect();
    let hs: Vec<_> = (0..4).map(|i| t.add_host(format!("h{i}"), None)).collect();
    for i in 0..4 {
        t.add_link(sw[i], sw[(i + 1) % 4], eth(100, 5));
    }
    for i in 0..4 {
        t.add_link(hs[i], sw[i], eth(100, 5));
    }
    t
}

/// The port of Si toward S(i+1): S0 lists [S1, S3, h0], Si>0 lists [S(i-1), S(i+1), hi].
fn clockwise(i: u32) -> u16 {
    if i == 0 { 0 } else { 1 }
}

fn run_ring(flows: &[u32], routes: fabrics::routing::Routes) -> (Fabric, sim_core::RunReport) {
    let t = ring();
    let flows = flows.iter().map(|&i| flow(i, (i + 2) % 4, 1 << 30)).collect();
    let c = cfg(RoceConfig {
        buffer_bytes: Some(400_000),
        ..Default::default()
    });
    let mut f = Fabric::new(&t, routes, c, flows).unwrap();
    let mut s = f.scheduler::<sim_core::WheelQueue<_>>();
    let limits = RunLimits {
        end_time: Some(SimTime::ZERO + Duration::from_ms(20)),
        ..Default::default()
    };
    let r = sim_core::run(&mut f, &mut s, &limits, |_| std::ops::ControlFlow::Continue(()));
    (f, r)
}

/// Routes that send flow i (hi -> h(i+2)) clockwise across two ring links.
fn clockwise_routes() -> fabrics::routing::Routes {
    let mut r = fabrics::routing::Routes::ecmp(&ring());
    for i in 0..4u32 {
        r.set_next_hops(i, (i + 2) % 4, &[clockwise(i)]);
    }
    r
}

/// models.md §5.6: four long line-rate flows, each crossing two ring links clockwise, close
/// a cyclic buffer dependency under PFC: the deadlock is detected (a cycle of the four
/// clockwise ring ports, all paused), reported with the time it formed, and the run ends
/// cleanly long before its end time. With one flow removed, or with up*/down* routes (root
/// S0: flow 1 goes S1 -> S0 -> S3 instead of crossing S2, set by hand), it does not deadlock.
#[test]
fn ring_deadlocks_under_pfc_and_is_reported() {
    let (f, r) = run_ring(&[0, 1, 2, 3], clockwise_routes());
    let d = f.roce().unwrap().deadlock.clone().expect("deadlock detected");
    eprintln!("ring deadlock: {d:?}, run ended at {} ({:?})", r.end, r.outcome);
    assert_eq!(r.outcome, RunOutcome::Finished);
    assert!(r.end < SimTime::ZERO + Duration::from_ms(5), "detected at {}", r.end);
    assert_eq!(d.cycle.len(), 4, "{d:?}");
    let mut ports: Vec<u32> = d.cycle.iter().map(|&(p, _)| p).collect();
    ports.sort();
    let want: Vec<u32> = (0..4).map(|i| f.port_base()[i] + clockwise(i as u32) as u32).collect();
    assert_eq!(ports, want);
    assert!(d.cycle.iter().all(|&(_, prio)| prio == PRIO));
    assert!(d.formed_at <= d.detected_at);
    assert_eq!(f.totals().packets_dropped, 0);

    // One flow fewer: no cycle closes; all three flows keep moving.
    let (f, r) = run_ring(&[0, 1, 2], clockwise_routes());
    assert!(f.roce().unwrap().deadlock.is_none());
    assert_eq!(r.outcome, RunOutcome::EndTime);
    for rec in f.flow_records() {
        assert!(rec.bytes_delivered > 100_000_000, "flow {} starved: {rec:?}", rec.id);
    }

    // up*/down* from root S0: links point up toward S0 (S2 -> S1 and S2 -> S3 up); flow 1
    // (S1 -> S3) may not turn down -> up at S2, so it goes up to S0 and down to S3.
    let mut routes = clockwise_routes();
    routes.set_next_hops(1, 3, &[0]);
    let (f, r) = run_ring(&[0, 1, 2, 3], routes);
    assert!(f.roce().unwrap().deadlock.is_none());
    assert_eq!(r.outcome, RunOutcome::EndTime);
    for rec in f.flow_records() {
        assert!(rec.bytes_delivered > 50_000_000, "flow {} starved: {rec:?}", rec.id);
    }

    // The same with the routing engine's own up*/down* tables (`Routes::try_updown`,
    // `routing = "updown"` in a scenario) instead of routes set by hand.
    let (f, r) = run_ring(&[0, 1, 2, 3], fabrics::routing::Routes::try_updown(&ring()).unwrap());
    assert!(f.roce().unwrap().deadlock.is_none());
    assert_eq!(r.outcome, RunOutcome::EndTime);
    for rec in f.flow_records() {
        assert!(rec.bytes_delivered > 50_000_000, "flow {} starved: {rec:?}", rec.id);
    }
}

/// Lossy RoCE (models.md §2.7): no PFC (no lossless priority), a small shared buffer so the
/// 4-to-1 incast drops, go-back-N with NACKs and a timeout: every flow completes and every
/// byte is delivered exactly once (the receiver counts only in-order bytes; duplicates and
/// out-of-order packets are discarded and counted).
#[test]
fn go_back_n_delivers_every_byte_exactly_once() {
    let t = star(5, 100, 5);
    let size = 3_000_000u64;
    let flows: Vec<_> = (1..=4)
        .map(|s| FlowSpec {
            class: 0,
            ..flow(s, 0, size + s as u64 * 1000)
        })
        .collect();
    let c = cfg(RoceConfig {
        buffer_bytes: Some(200_000),
        lossless_mask: 0,
        go_back_n: Some(Duration::from_us(50)),
        ..Default::default()
    });
    let f = run(&t, c, flows.clone());
    let r = f.roce().unwrap();
    eprintln!("go-back-N: {:?}", r.totals);
    assert!(
        r.totals.drops_lossy_threshold > 0,
        "the test needs drops: {:?}",
        r.totals
    );
    assert!(r.totals.retransmitted > 0 && r.totals.nacks_sent > 0);
    assert_eq!(r.totals.pause_frames, 0);
    for (rec, fl) in f.flow_records().iter().zip(&flows) {
        assert_eq!(rec.bytes_delivered, fl.size.get(), "flow {}", rec.id);
        assert!(rec.finish.is_some());
    }
    let sum: u64 = flows.iter().map(|f| f.size.get()).sum();
    assert_eq!(f.totals().payload_bytes_delivered, sum);
    let t = f.totals();
    assert_eq!(
        t.packets_injected,
        t.packets_delivered + t.packets_dropped + f.packets_in_network()
    );
}

/// The shipped ring-deadlock scenario, end to end: the run stops early and `roce.json`
/// reports the five-port cycle; the PFC-only incast scenario completes without drops and
/// writes `roce_ports.csv` with PAUSE counts.
#[test]
fn shipped_roce_scenarios_report_deadlock_and_pfc() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let out = dir.path().join(name);
        let opts = scenarios::runner::RunOptions {
            out_dir: Some(out.clone()),
            ..Default::default()
        };
        scenarios::runner::run_file(&fabricsim_tests::catalogue(name), &opts).unwrap();
        out
    };
    let out = run("roce_ring_deadlock.toml");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("roce.json")).unwrap()).unwrap();
    assert_eq!(j["deadlock"]["cycle"].as_array().unwrap().len(), 5, "{j}");
    let out = run("roce_incast_16to1_pfc.toml");
    let csv = std::fs::read_to_string(out.join("roce_ports.csv")).unwrap();
    assert!(csv.lines().count() > 2, "{csv}");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("roce.json")).unwrap()).unwrap();
    assert!(j["totals"]["pause_frames"].as_u64().unwrap() > 0, "{j}");
    assert_eq!(j["totals"]["drops_headroom"].as_u64(), Some(0));
    assert!(!j["pause_tree"].as_array().unwrap().is_empty());
    // summary.json: roce_ counters and the pause tree; ports.csv: the pause columns.
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert!(j["counters"]["roce_pause_frames_sent"].as_u64().unwrap() > 0, "{j}");
    assert!(j["counters"]["roce_paused_ps"].as_u64().unwrap() > 0);
    assert_eq!(j["counters"]["roce_deadlock_detected"].as_u64(), Some(0));
    let tree = j["pause_tree"].as_array().unwrap();
    assert!(!tree.is_empty());
    // Breadth-first: the first edge is paused by the root (the receiver's leaf, whose egress
    // to the receiver is the congestion point and is never paused itself).
    assert!(tree[0]["paused_by"].as_str().unwrap().starts_with("leaf0"), "{tree:?}");
    let ports = std::fs::read_to_string(out.join("ports.csv")).unwrap();
    assert!(
        ports
            .lines()
            .next()
            .unwrap()
            .ends_with(scenarios::roce_report::PORT_COLUMNS)
    );
    assert!(!out.join("roce_rates.csv").exists(), "rate sampling is off by default");
}

/// Go-back-N send window (models.md §2.7, IRN's BDP flow control): a lossy 4:1 incast at
/// 100G without congestion control, default switch buffer (512 KiB per port). Without a
/// window every sender runs at line rate to the end of its message, the queue overflows the
/// dynamic threshold over and over and most of the work is retransmission; with the default
/// BDP window the four flows together keep ~4 BDP queued, below the threshold, and finish
/// near the ideal time. Every byte is delivered exactly once in both cases. Bands stated in
/// the asserts.
#[test]
fn go_back_n_window_prevents_collapse_without_cc() {
    let t = star(5, 100, 5);
    let size = 3_000_000u64;
    let flows: Vec<_> = (1..=4)
        .map(|s| FlowSpec {
            class: 0,
            ..flow(s, 0, size)
        })
        .collect();
    let go = |w: GbnWindow| {
        let c = cfg(RoceConfig {
            lossless_mask: 0,
            go_back_n: Some(Duration::from_us(50)),
            gbn_window: w,
            ..Default::default()
        });
        let f = run(&t, c, flows.clone());
        let end = f.flow_records().iter().filter_map(|x| x.finish).max().unwrap();
        for (rec, fl) in f.flow_records().iter().zip(&flows) {
            assert_eq!(rec.bytes_delivered, fl.size.get(), "flow {}", rec.id);
        }
        // Goodput of the bottleneck as a fraction of its payload capacity.
        let ideal_ps = (4 * size) as f64 * WIRE as f64 / MTU as f64 * 8.0 / 100e9 * 1e12;
        let eff = ideal_ps / end.ps() as f64;
        let tot = f.roce().unwrap().totals.clone();
        eprintln!("go-back-N {w:?}: end {end}, efficiency {eff:.3}, {tot:?}");
        (eff, tot)
    };
    let (eff_bdp, tot_bdp) = go(GbnWindow::Bdp);
    let (eff_none, tot_none) = go(GbnWindow::Unlimited);
    assert!(eff_bdp > 0.9, "BDP window: efficiency {eff_bdp:.3}");
    assert!(eff_bdp > eff_none + 0.2, "window {eff_bdp:.3} vs none {eff_none:.3}");
    assert!(tot_bdp.retransmitted * 10 < tot_none.retransmitted.max(10));
}

/// TIMELY end to end (models.md §2.6, reference-code preset): N = 2 and 4 long flows into
/// one 100G bottleneck, started 1 ms apart, ACK per packet echoing the send time (the RTT
/// sample). TIMELY has no unique fixed point in theory (its gradient rule holds any split
/// whose RTT is flat), so the band is stated separately from DCQCN's: every flow within 5%
/// of C/N over 20..120 ms (measured 0.12% for N = 2, 1.69% for N = 4; queue mean 121 / 171
/// kB), the link more than 90% used, RTT samples taken (ACKs > 0), no PAUSE.
#[test]
fn timely_flows_share_a_bottleneck_near_fair() {
    for n in [2u32, 4] {
        let t = star(n + 1, 100, 5);
        // Staggered starts (1 ms apart): later flows must claw their share back.
        let flows = (1..=n)
            .map(|s| FlowSpec {
                start: SimTime::ZERO + Duration::from_ms(s as u64 - 1),
                ..flow(s, 0, 1 << 36)
            })
            .collect();
        let c = cfg(RoceConfig {
            buffer_bytes: Some(16_000_000),
            cc: RoceCc::Timely(TimelyParams::reference(BitsPerSec::from_gbps(100))),
            ..Default::default()
        });
        let ms = |x: u64| SimTime::ZERO + Duration::from_ms(x);
        let (f, rates, q, pauses) = windowed(&t, c, flows, ms(20), ms(120), |f| f.port_base()[0]);
        let total: f64 = rates.iter().sum();
        let fair = total / n as f64;
        let worst = rates.iter().map(|r| (r - fair).abs() / fair).fold(0.0, f64::max);
        let acks = f.roce().unwrap().totals.acks_sent;
        eprintln!(
            "TIMELY N={n}: total {:.2} Gb/s, rates {:.2?} Gb/s, worst deviation {:.2}%, queue mean {q:.0} B, pauses {pauses}, ACKs {acks}",
            total / 1e9,
            rates.iter().map(|r| r / 1e9).collect::<Vec<_>>(),
            worst * 100.0
        );
        assert!(acks > 0);
        assert!(total > 0.9 * 100e9 * MTU as f64 / WIRE as f64, "N={n}: link underused");
        assert!(worst < 0.05, "N={n}: rates {rates:?}");
        assert_eq!(pauses, 0);
    }
}

/// PFC watchdog (models.md §2.8; SONiC's drop action): the 4-switch ring deadlock with
/// deadlock detection off. Without the watchdog the ring stays frozen (no byte delivered in
/// the second half of the run); with a 1 ms watchdog a ring port paused for 1 ms is
/// declared in a storm, its queue is dropped (counted), the pauses end and traffic flows
/// again, until the cyclic dependency closes once more (the flows still cross it at line
/// rate): storms repeat about every millisecond and some bytes get through each time.
#[test]
fn pfc_watchdog_breaks_a_pause_storm() {
    let go = |wd: Option<Duration>| {
        let t = ring();
        let flows = (0..4).map(|i| flow(i, (i + 2) % 4, 1 << 30)).collect();
        let c = cfg(RoceConfig {
            buffer_bytes: Some(400_000),
            deadlock_detection: false,
            pfc_watchdog: wd,
            ..Default::default()
        });
        let ms = |x: u64| SimTime::ZERO + Duration::from_ms(x);
        let mut f = Fabric::new(&t, clockwise_routes(), c, flows).unwrap();
        let mut s = f.scheduler::<sim_core::WheelQueue<_>>();
        let lim = |t: SimTime| RunLimits {
            end_time: Some(t),
            ..Default::default()
        };
        sim_core::run(&mut f, &mut s, &lim(ms(10)), |_| std::ops::ControlFlow::Continue(()));
        let mid = f.totals().payload_bytes_delivered;
        sim_core::run(&mut f, &mut s, &lim(ms(20)), |_| std::ops::ControlFlow::Continue(()));
        let late = f.totals().payload_bytes_delivered - mid;
        let tot = f.roce().unwrap().totals.clone();
        eprintln!(
            "watchdog {wd:?}: delivered in 10..20 ms {late} B, storms {}, drops {}",
            tot.watchdog_storms, tot.drops_watchdog
        );
        (late, tot)
    };
    let (late, tot) = go(None);
    assert_eq!(late, 0, "the ring should stay deadlocked");
    assert_eq!(tot.watchdog_storms, 0);
    let (late, tot) = go(Some(Duration::from_ms(1)));
    assert!(tot.watchdog_storms >= 10, "{tot:?}");
    assert!(tot.drops_watchdog > 0);
    assert!(late > 0, "traffic should flow again between storms");
}

/// Per-flow rate samples (`rate_sample`): one sampling event per period for all flows, rows
/// `(flow, time, rate)` only for flows that are sending, the row bound stops sampling; off
/// by default (no samples, no event).
#[test]
fn rate_samples_are_periodic_and_bounded() {
    let t = star(3, 40, 5);
    let flows: Vec<_> = (1..=2).map(|s| flow(s, 0, 2_000_000)).collect();
    let base = RoceConfig {
        buffer_bytes: Some(16_000_000),
        ecn: Some(RedParams::dcqcn_paper()),
        cc: RoceCc::Dcqcn(DcqcnParams::paper(BitsPerSec::from_gbps(40))),
        ..Default::default()
    };
    let f = run(&t, cfg(base.clone()), flows.clone());
    assert!(f.roce().unwrap().rate_samples.is_empty());
    let period = Duration::from_us(10);
    let f = run(
        &t,
        cfg(RoceConfig {
            rate_sample: Some(period),
            ..base.clone()
        }),
        flows.clone(),
    );
    let r = f.roce().unwrap();
    let end = f.flow_records().iter().filter_map(|x| x.finish).max().unwrap();
    let n_periods = end.ps() / period.ps();
    assert!(!r.rate_samples_truncated);
    assert!(r.rate_samples.len() as u64 <= 2 * n_periods && r.rate_samples.len() as u64 >= n_periods);
    for &(fl, at, bps) in &r.rate_samples {
        assert_eq!(at.ps() % period.ps(), 0);
        assert!(fl < 2 && bps > 0 && bps <= 40_000_000_000);
    }
    assert!(
        r.rate_samples.iter().any(|s| s.2 < 40_000_000_000),
        "DCQCN should cut some rate"
    );
    let f = run(
        &t,
        cfg(RoceConfig {
            rate_sample: Some(period),
            rate_sample_max_rows: 7,
            ..base
        }),
        flows,
    );
    let r = f.roce().unwrap();
    assert_eq!(r.rate_samples.len(), 7);
    assert!(r.rate_samples_truncated);
}
