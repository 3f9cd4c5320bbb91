//! Traffic and runs shared by the engine's unit tests.

use super::{EngineConfig, Ev, Fabric};
use crate::routing::Routes;
use crate::topology::{LinkInfo, LinkKind, fat_tree};
use crate::traffic::FlowSpec;
use sim_core::{BitsPerSec, Bytes, Duration, RunLimits, RunReport, Scheduler, SimTime, WheelQueue};

/// The mixed traffic of the pass-through tests on 16 hosts (a k=4 fat-tree): a permutation
/// (h -> h + 5) of 400 kB on class `classes[0]`, another (h -> h + 3) of 250 kB on
/// `classes[1]`, and an incast of 300 kB to host 0 from hosts `incast_from..16` on
/// `classes[0]`.
pub(super) fn mixed_flows(classes: [u8; 2], incast_from: u32) -> Vec<FlowSpec> {
    let flow = |src: u32, dst: u32, size: u64, class: u8| FlowSpec {
        src,
        dst,
        size: Bytes(size),
        class,
        ..Default::default()
    };
    let mut flows: Vec<FlowSpec> = (0..16u32).map(|h| flow(h, (h + 5) % 16, 400_000, classes[0])).collect();
    flows.extend((0..16u32).map(|h| flow(h, (h + 3) % 16, 250_000, classes[1])));
    flows.extend((incast_from..16u32).map(|h| flow(h, 0, 300_000, classes[0])));
    flows
}

/// Runs `flows` on a k=4 fat-tree of 100 Gb/s links of `link_delay`, configured by `cfg`
/// and then by `setup`, until `end` (at most 10^7 events: a mistake that loops shows as a
/// difference, not a hang). Returns the fabric, its scheduler and the run's report.
pub(super) fn run_k4(
    link_delay: Duration,
    cfg: EngineConfig,
    flows: Vec<FlowSpec>,
    setup: impl FnOnce(&mut Fabric),
    end: Duration,
) -> (Fabric, Scheduler<Ev, WheelQueue<Ev>>, RunReport) {
    let link = LinkInfo {
        rate: BitsPerSec::from_gbps(100),
        delay: link_delay,
        kind: LinkKind::Network,
    };
    let topo = fat_tree::build(4, link, link).expect("a k=4 fat-tree");
    let mut f = Fabric::new(&topo, Routes::ecmp(&topo), cfg, flows).expect("valid engine inputs");
    setup(&mut f);
    let mut s = f.scheduler::<WheelQueue<_>>();
    let limits = RunLimits {
        end_time: Some(SimTime::ZERO + end),
        max_events: Some(10_000_000),
        ..Default::default()
    };
    let report = sim_core::run(&mut f, &mut s, &limits, |_| std::ops::ControlFlow::Continue(()));
    (f, s, report)
}
