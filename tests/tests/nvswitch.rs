//! NVSwitch crossbar arbitration (`[fabric.crossbar] arbitration`, issue 5): oldest-first,
//! round-robin and single-iteration iSLIP with 1x internal speed-up
//! (`docs/models/nvlink.md`, `docs/validation.md`).

use fabrics::collectives::flows::{FlowPlan, PlanLimits};
use fabrics::collectives::{Algorithm, CollectiveKind, CollectiveSpec, DagLimits};
use fabrics::engine::{Crossbar, EngineConfig, Fabric, XbarArbitration};
use fabrics::nvlink::{NvLinkGen, NvSwitchGen};
use fabrics::routing::Routes;
use fabrics::topology::{hgx, nvlink_shapes};
use fabrics::traffic::FlowSpec;
use sim_core::{Bytes, Duration, RunLimits, RunOutcome, SimTime, WheelQueue};
use std::ops::ControlFlow;

fn cfg(arbitration: XbarArbitration) -> EngineConfig {
    EngineConfig {
        crossbar: Crossbar {
            speedup_percent: Some(100),
            arbitration,
            ..Crossbar::default()
        },
        ..EngineConfig::nvlink()
    }
}

/// One NVSwitch chip, one link per GPU, 1x speed-up. GPUs 1 and 2 each send 2048
/// single-packet messages to GPU 0 at once: GPU 1 full 256-B packets (272 B on the wire),
/// GPU 2 64-B packets (80 B). Counted over the time until one sender is done, round-robin
/// splits the output 50/50 by packets (measured 50.0%: GPU 2's share; iSLIP the same);
/// oldest-first serves in arrival order, so the input with the shorter packets gets more
/// packets through (measured 77.3%, about its byte-fair 272/352; guarded at 55%).
#[test]
fn round_robin_splits_by_packets_oldest_first_does_not() {
    let t = nvlink_shapes::switched(3, NvLinkGen::V4, NvSwitchGen::Gen3, &[1], Duration::from_ns(10)).unwrap();
    let n = 2048;
    let mut flows = Vec::new();
    for (src, bytes) in [(1u32, 256u64), (2, 64)] {
        for _ in 0..n {
            flows.push(FlowSpec {
                src,
                dst: 0,
                size: Bytes(bytes),
                ..Default::default()
            });
        }
    }
    let mut shares = Vec::new();
    for arbitration in [
        XbarArbitration::OldestFirst,
        XbarArbitration::RoundRobin,
        XbarArbitration::Islip,
    ] {
        let (f, r) = fabricsim_tests::run(&t, cfg(arbitration), flows.clone(), RunLimits::default());
        assert_eq!(r.outcome, RunOutcome::Finished);
        let recs = f.flow_records();
        let last = |src: u32| {
            recs.iter()
                .zip(&flows)
                .filter(|(_, s)| s.src == src)
                .map(|(r, _)| r.finish.unwrap())
                .max()
                .unwrap()
        };
        let window = last(1).min(last(2));
        let done = |src: u32| {
            recs.iter()
                .zip(&flows)
                .filter(|(r, s)| s.src == src && r.finish.unwrap() <= window)
                .count() as f64
        };
        let share = done(2) / (done(1) + done(2));
        println!(
            "{arbitration:?}: until {:.2} us, GPU 1 {} packets, GPU 2 {} packets: GPU 2 share {:.1}%",
            window.since(SimTime::ZERO).ps() as f64 / 1e6,
            done(1),
            done(2),
            share * 100.0
        );
        shares.push(share);
    }
    assert!(shares[0] > 0.55, "oldest-first share {}", shares[0]);
    assert!((shares[1] - 0.5).abs() < 0.02, "round-robin share {}", shares[1]);
    assert!((shares[2] - 0.5).abs() < 0.02, "iSLIP share {}", shares[2]);
}

/// The 8-GPU all-to-all on HGX H100 (1 MiB to each peer) with 1x crossbar speed-up, as a
/// fraction of every GPU's 18-link payload rate (423.5 GB/s): oldest-first 86.8%
/// (`collectives.rs`), round-robin 85.2% (360.9 GB/s), iSLIP 85.2% (361.0 GB/s): iSLIP
/// reaches round-robin's throughput (tolerance 1%: the two differ only in when pointers move)
/// and both stay above 80% of the payload rate (`docs/validation.md`); longest queue first
/// measured 89.4% (378.6 GB/s), also guarded at 80%.
#[test]
fn islip_all_to_all_at_least_round_robin() {
    let n = 8u32;
    let h = hgx::hgx(&hgx::HgxSpec::h100()).unwrap();
    let per_gpu = NvLinkGen::V4.preset().link_rate().get() as f64 / 8.0 * 18.0 * 256.0 / 272.0;
    let s = 8u64 << 20;
    let spec = CollectiveSpec::new(CollectiveKind::AllToAll, Algorithm::Direct, n, s);
    let mut rates = Vec::new();
    // Longest queue first (`models/crossbar/lqf.rs`) is the variant added as one file and one
    // enum arm: it must run the same all-to-all above 80 % too.
    for arbitration in [
        XbarArbitration::RoundRobin,
        XbarArbitration::Islip,
        XbarArbitration::LongestQueueFirst,
    ] {
        let mut plan = FlowPlan::default();
        let limits = PlanLimits {
            max_flows: 1 << 24,
            dag: DagLimits::DEFAULT,
        };
        let endpoints: Vec<u32> = (0..n).collect();
        plan.push_collective(&spec, &[spec.bytes], 1, SimTime::ZERO, &endpoints, 0, 0, &limits)
            .unwrap();
        let mut f = Fabric::with_deps(&h, Routes::ecmp(&h), cfg(arbitration), plan.flows.clone(), &plan.deps).unwrap();
        let mut sch = f.scheduler::<WheelQueue<_>>();
        let r = sim_core::run(&mut f, &mut sch, &RunLimits::default(), |_| ControlFlow::Continue(()));
        assert_eq!(r.outcome, RunOutcome::Finished);
        let end = f.flow_records().iter().map(|r| r.finish.unwrap()).max().unwrap();
        let t = end.since(SimTime::ZERO).ps() as f64 / 1e12;
        let rate = (n - 1) as f64 / n as f64 * s as f64 / t;
        println!(
            "all-to-all {arbitration:?}, speed-up 1x: {:.1} GB/s per GPU of {:.1} ({:.1}%)",
            rate / 1e9,
            per_gpu / 1e9,
            rate / per_gpu * 100.0
        );
        rates.push(rate);
    }
    assert!(
        rates[1] >= 0.99 * rates[0],
        "iSLIP {} below round-robin {}",
        rates[1],
        rates[0]
    );
    assert!(rates.iter().all(|&r| r > 0.80 * per_gpu), "{rates:?} of {per_gpu}");
}
