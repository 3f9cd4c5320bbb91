//! Collectives end to end in the packet engine (issue 5, `models.md` §3, §4, §5.8): message
//! DAGs as flows with dependencies over NVLink (flit framing, credits, striping), NVSwitch
//! and PCIe, checked against the alpha-beta cost model and the crossbar's capacity.

use fabrics::collectives::flows::{FlowPlan, PlanLimits, instance_span};
use fabrics::collectives::{Algorithm, CollectiveKind, CollectiveSpec, DagLimits};
use fabrics::engine::{EngineConfig, Fabric};
use fabrics::nvlink::{FlitFraming, NvLinkGen};
use fabrics::routing::Routes;
use fabrics::topology::{Topology, hgx, nvlink_shapes};
use sim_core::{Duration, RunLimits, RunOutcome, WheelQueue};
use std::ops::ControlFlow;

/// Runs one collective instance on `topo` (rank r = host r) and returns its time and fabric.
fn run_collective(topo: &Topology, cfg: EngineConfig, spec: CollectiveSpec, endpoints: &[u32]) -> (Duration, Fabric) {
    let mut plan = FlowPlan::default();
    let limits = PlanLimits {
        max_flows: 1 << 24,
        dag: DagLimits::DEFAULT,
    };
    plan.push_collective(
        &spec,
        &[spec.bytes],
        1,
        sim_core::SimTime::ZERO,
        endpoints,
        0,
        0,
        &limits,
    )
    .unwrap();
    let routes = Routes::ecmp(topo);
    let mut f = Fabric::with_deps(topo, routes, cfg, plan.flows.clone(), &plan.deps).unwrap();
    let mut s = f.scheduler::<WheelQueue<_>>();
    let r = sim_core::run(&mut f, &mut s, &RunLimits::default(), |_| ControlFlow::Continue(()));
    assert_eq!(r.outcome, RunOutcome::Finished);
    let (a, b) = instance_span(&plan.instances[0], f.flow_records(), |i| f.flow_of_input(i)).unwrap();
    (b.since(a), f)
}

fn ranks(n: u32) -> Vec<u32> {
    (0..n).collect()
}

#[test]
fn explore() {
    let n = 8;
    let t = nvlink_shapes::ring(n, NvLinkGen::V4, 2, fabrics::nvlink::DEFAULT_LINK_DELAY).unwrap();
    let s = 64u64 << 20;
    let spec = CollectiveSpec::new(CollectiveKind::AllReduce, Algorithm::Ring, n, s);
    let (d, _) = run_collective(&t, EngineConfig::nvlink(), spec, &ranks(n));
    let eff = NvLinkGen::V4.preset().effective_link_rate(&FlitFraming::NVLINK).get() as f64 * 2.0;
    let want = 2.0 * (n - 1) as f64 / n as f64 * s as f64 * 8.0 / eff;
    println!(
        "ring nvlink ring: {} us, bw-term {} us",
        d.as_secs_f64() * 1e6,
        want * 1e6
    );
    let t = hgx::hgx(&hgx::HgxSpec::h100()).unwrap();
    let (d, _) = run_collective(&t, EngineConfig::nvlink(), spec, &ranks(n));
    let busbw = 2.0 * 7.0 / 8.0 * s as f64 / d.as_secs_f64() / 1e9;
    println!("hgx ring: {} us busbw {busbw}", d.as_secs_f64() * 1e6);
    let mut t = hgx::hgx(&hgx::HgxSpec::h100()).unwrap();
    let e = nvlink_shapes::add_nvls_endpoint(&mut t).unwrap();
    let mut ep = ranks(n);
    ep.push(e);
    let spec = CollectiveSpec {
        algorithm: Algorithm::Nvls,
        chunks: 16,
        ..spec
    };
    let (d, f) = run_collective(&t, EngineConfig::nvlink(), spec, &ep);
    let end = sim_core::SimTime::ZERO + d;
    for (i, p) in f.ports().iter().enumerate() {
        let st = f.ib().unwrap().port_credit_stall(i as u32, end);
        if p.node < 36 {
            continue;
        }
        println!(
            "port {i} node {} -> {} pkts {} bytes {} stall {} maxq {}",
            p.node,
            p.peer_node,
            p.stats.packets_tx,
            p.stats.bytes_tx,
            st.ps() / 1000,
            p.stats.queue_bytes.max()
        );
    }
    let busbw = 2.0 * 7.0 / 8.0 * s as f64 / d.as_secs_f64() / 1e9;
    println!("hgx nvls: {} us busbw {busbw}", d.as_secs_f64() * 1e6);
}

#[test]
fn explore_single_flow() {
    let t = hgx::hgx(&hgx::HgxSpec::h100()).unwrap();
    let flows = vec![fabrics::traffic::FlowSpec {
        src: 0,
        dst: 1,
        size: sim_core::Bytes(8 << 20),
        ..Default::default()
    }];
    let (f, _) = fabricsim_tests::run(&t, EngineConfig::nvlink(), flows, RunLimits::default());
    let r = &f.flow_records()[0];
    println!("single flow: {} GB/s", r.goodput_bps().unwrap() / 8e9);
    for (i, p) in f.ports().iter().enumerate() {
        if p.stats.packets_tx > 0 {
            let st = f.ib().unwrap().port_credit_stall(i as u32, r.finish.unwrap());
            println!(
                "port {i} node {} -> {} pkts {} bytes {} stall {} maxq {}",
                p.node,
                p.peer_node,
                p.stats.packets_tx,
                p.stats.bytes_tx,
                st.ps() / 1000,
                p.stats.queue_bytes.max()
            );
        }
    }
}
