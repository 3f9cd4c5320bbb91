//! The speed paths (the prefetch pipeline, routing ahead with its route memo, the egress
//! and MMU prefetches, the credit path's departure and input-lane prefetches) never change a
//! result. They run only where the flows' paths use at least
//! `PREFETCH_MIN_PORTS` ports, more than any test fabric has, so each case here runs one small
//! fabric twice, with them forced on (`Fabric::set_prefetch_min_ports(0)`) and off, and
//! compares everything the engine reports: every flow record, the totals, the RoCEv2 totals
//! and pause tree, every port's counters, the event count and the end time.

use fabrics::engine::{EngineConfig, Fabric, RoceConfig, RoutePick};
use fabrics::routing::Routes;
use fabrics::topology::{LinkInfo, LinkKind, Topology, fat_tree};
use fabrics::traffic::FlowSpec;
use sim_core::{BitsPerSec, Duration, RunLimits, SimTime, WheelQueue};
use std::ops::ControlFlow;

fn link() -> LinkInfo {
    LinkInfo {
        rate: BitsPerSec::from_gbps(100),
        delay: Duration::from_us(1),
        kind: LinkKind::Network,
    }
}

/// What a run reports, as text: equal texts, equal runs.
fn run(topo: &Topology, cfg: EngineConfig, flows: &[FlowSpec], fast: bool) -> String {
    let mut fabric = Fabric::new(topo, Routes::ecmp(topo), cfg, flows.to_vec()).expect("valid engine inputs");
    if fast {
        fabric.set_prefetch_min_ports(0);
    }
    let mut sched = fabric.scheduler::<WheelQueue<_>>();
    let limits = RunLimits {
        end_time: Some(SimTime::ZERO + Duration::from_us(300)),
        ..Default::default()
    };
    let report = sim_core::run(&mut fabric, &mut sched, &limits, |_| ControlFlow::Continue(()));
    let end = report.end;
    let ports: Vec<String> = fabric
        .ports()
        .iter()
        .map(|p| {
            format!(
                "{} {} {} {} {:?}",
                p.stats.packets_tx,
                p.stats.bytes_tx,
                p.stats.drops,
                p.queued_bytes,
                p.stats.queue_bytes.area_until(end)
            )
        })
        .collect();
    let roce = fabric
        .roce()
        .map(|r| format!("{:?} {:?} {:?}", r.totals, r.pause_edges(end), r.deadlock));
    let ib = fabric.ib().map(|ib| {
        let ports: Vec<String> = (0..fabric.ports().len() as u32)
            .map(|p| format!("{:?} {:?}", ib.port_stats[p as usize], ib.credit_stall(p, 0, end)))
            .collect();
        let stall_ps: u64 = (0..fabric.ports().len() as u32)
            .map(|p| ib.credit_stall(p, 0, end).0)
            .sum();
        format!("credit_stall_ps {stall_ps} {:?} {ports:?}", ib.totals)
    });
    format!(
        "{:?} events {} end {end}\n{:?}\n{:?}\n{roce:?}\n{ib:?}\n{ports:?}",
        report.outcome,
        report.events,
        fabric.flow_records(),
        fabric.totals()
    )
}

/// Every host of a k=4 fat-tree sends to a host in another pod, and half of them also into
/// one host: queues build, PFC pauses, ECMP spreads.
fn flows() -> Vec<FlowSpec> {
    let n = 16u32;
    let mut v: Vec<FlowSpec> = (0..n)
        .map(|h| FlowSpec {
            class: 3,
            ..fabricsim_tests::flow(h, (h + 5) % n, 2_000_000)
        })
        .collect();
    v.extend((1..n).step_by(2).map(|h| FlowSpec {
        class: 3,
        start: SimTime::ZERO + Duration::from_us(20),
        ..fabricsim_tests::flow(h, 0, 500_000)
    }));
    v
}

fn assert_same_either_way(cfg: EngineConfig) {
    let topo = fat_tree::build(4, link(), link()).expect("a k=4 fat-tree");
    assert_same_on(&topo, cfg, &flows());
}

fn assert_same_on(topo: &Topology, cfg: EngineConfig, flows: &[FlowSpec]) {
    let off = run(topo, cfg.clone(), flows, false);
    let on = run(topo, cfg, flows, true);
    assert!(off.contains("packets_delivered"), "{off}");
    assert_eq!(off, on);
}

fn roce() -> EngineConfig {
    EngineConfig {
        mtu_bytes: 4000,
        header_bytes: 64,
        roce: Some(RoceConfig {
            buffer_bytes: Some(400_000),
            acks: true,
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn rocev2_results_are_the_same_with_the_speed_paths_on() {
    let cfg = roce();
    // The case pauses: otherwise it would not exercise the MMU and PFC prefetches.
    let topo = fat_tree::build(4, link(), link()).expect("a k=4 fat-tree");
    assert!(run(&topo, cfg.clone(), &flows(), true).contains("pause_frames: "));
    assert_same_either_way(cfg);
}

#[test]
fn rocev2_with_d_mod_k_routing_is_the_same_with_the_speed_paths_on() {
    assert_same_either_way(EngineConfig {
        route_pick: RoutePick::DModK,
        ..roce()
    });
}

#[test]
fn adaptive_routing_is_the_same_with_the_speed_paths_on() {
    // Routes by load are chosen on arrival whatever the setting: nothing is routed ahead.
    assert_same_either_way(EngineConfig {
        route_pick: RoutePick::Adaptive,
        ..roce()
    });
}

#[test]
fn the_base_ethernet_fabric_is_the_same_with_the_speed_paths_on() {
    assert_same_either_way(EngineConfig {
        mtu_bytes: 4000,
        header_bytes: 64,
        buffer: fabrics::models::AnyBuffer::PerPortTailDrop(fabrics::models::PerPortTailDrop { buffer_bytes: 200_000 }),
        ..Default::default()
    });
}

#[test]
fn infiniband_switches_are_the_same_with_the_speed_paths_on() {
    // Input FIFOs with per-output requests; the incast half stalls on credits.
    let cfg = EngineConfig {
        mtu_bytes: 4096,
        header_bytes: fabrics::ib::link::BASE_HEADER_BYTES,
        ib: Some(fabrics::ib::IbConfig::default()),
        ..Default::default()
    };
    let topo = fat_tree::build(4, link(), link()).expect("a k=4 fat-tree");
    assert!(stalls_on_credits(&run(&topo, cfg.clone(), &flows(), true)));
    assert_same_on(&topo, cfg, &flows());
}

#[test]
fn nvswitch_crossbars_are_the_same_with_the_speed_paths_on() {
    // Virtual output queues (GPU hubs, NVSwitch chips): every GPU of an HGX H100 sends to
    // two others, one of them shared, so outputs queue and credits run short.
    let topo = fabrics::topology::hgx::hgx(&fabrics::topology::hgx::HgxSpec::h100()).expect("an HGX H100");
    let flows: Vec<FlowSpec> = (0..8u32)
        .flat_map(|g| {
            [(g + 1) % 8, 0]
                .into_iter()
                .filter(move |&d| d != g)
                .map(move |d| fabricsim_tests::flow(g, d, 1 << 20))
        })
        .collect();
    assert!(stalls_on_credits(&run(&topo, EngineConfig::nvlink(), &flows, true)));
    assert_same_on(&topo, EngineConfig::nvlink(), &flows);
}

/// The run's text (`run`) reports credit-stall time: the credit prefetches had work to do.
fn stalls_on_credits(text: &str) -> bool {
    let ps = text
        .split("credit_stall_ps ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok());
    ps.is_some_and(|ps| ps > 0)
}
