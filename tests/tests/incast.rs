//! N-to-1 incast through one switch with per-port tail drop: drops start exactly when the
//! buffer is exceeded, and bytes are conserved.
//!
//! Analysis: N senders start together and send M packets each back to back at line rate into
//! one egress port of the same rate. At the k-th batch (k = 0..M-1) N packets arrive at once
//! while the port has started k+1 transmissions, so (N-1)(k+1) packets wait. The peak is
//! Q* = (N-1)·M packets, reached at the last batch. A buffer of Q*·wire bytes drops nothing;
//! one byte less drops exactly one packet (the last arrival of the last batch).
//! (Same-instant rule: the engine handles a departure before arrivals, see `engine` docs.)

use fabrics::engine::EngineConfig;
use fabrics::models::{AnyBuffer, PerPortTailDrop};
use fabrics::topology::Topology;
use fabrics::traffic::FlowSpec;
use fabricsim_tests::{link, run};
use sim_core::{Bytes, Duration, RunLimits, SimTime};

const N: u32 = 8;
const M: u64 = 20;
const MTU: u64 = 1000;
const HEADER: u64 = 48;

fn star() -> Topology {
    let mut t = Topology::new("star");
    let hosts: Vec<_> = (0..=N).map(|i| t.add_host(format!("h{i}"), None)).collect();
    let s = t.add_switch("s0", 0, None);
    for h in hosts {
        t.add_link(h, s, link(100, 50));
    }
    t
}

fn incast(buffer_bytes: u64, limits: RunLimits) -> fabrics::engine::Fabric {
    let cfg = EngineConfig {
        mtu_bytes: MTU as u32,
        header_bytes: HEADER as u32,
        buffer: AnyBuffer::PerPortTailDrop(PerPortTailDrop { buffer_bytes }),
        ..Default::default()
    };
    let flows = (1..=N)
        .map(|s| FlowSpec {
            src: s,
            dst: 0,
            size: Bytes(M * MTU),
            start: SimTime(0),
            ..Default::default()
        })
        .collect();
    run(&star(), cfg, flows, limits).0
}

fn egress_to_receiver(f: &fabrics::engine::Fabric) -> &fabrics::engine::Port {
    f.ports()
        .iter()
        .find(|p| p.peer_node == 0 && p.node == N + 1)
        .expect("switch port toward h0")
}

#[test]
fn peak_queue_matches_analysis() {
    let f = incast(u64::MAX / 2, RunLimits::default());
    let q_star = (N as u64 - 1) * M * (MTU + HEADER);
    assert_eq!(egress_to_receiver(&f).stats.queue_bytes.max(), q_star);
    assert_eq!(f.totals().packets_dropped, 0);
    assert_eq!(f.totals().flows_completed, N as u64);
}

#[test]
fn drops_start_exactly_when_the_buffer_is_exceeded() {
    let q_star = (N as u64 - 1) * M * (MTU + HEADER);
    let f = incast(q_star, RunLimits::default());
    assert_eq!(f.totals().packets_dropped, 0, "a buffer of exactly Q* holds everything");
    let f = incast(q_star - 1, RunLimits::default());
    assert_eq!(f.totals().packets_dropped, 1, "one byte less drops the last arrival");
    assert_eq!(egress_to_receiver(&f).stats.drops, 1);
    assert_eq!(f.totals().flows_completed, N as u64 - 1);
    // Far smaller buffer: many drops, all at that port.
    let f = incast(10 * (MTU + HEADER), RunLimits::default());
    let t = f.totals();
    assert!(t.packets_dropped > 100, "{t:?}");
    assert_eq!(egress_to_receiver(&f).stats.drops, t.packets_dropped);
}

#[test]
fn bytes_are_conserved_mid_run_and_at_the_end() {
    for end_ns in [1_000, 5_000, 12_345, 1_000_000] {
        let limits = RunLimits {
            end_time: Some(SimTime::ZERO + Duration::from_ns(end_ns)),
            ..Default::default()
        };
        let f = incast(30 * (MTU + HEADER), limits);
        let t = f.totals();
        let in_net = f.packets_in_network();
        assert_eq!(
            t.packets_injected,
            t.packets_delivered + t.packets_dropped + in_net,
            "at {end_ns} ns: {t:?}"
        );
        let in_net_bytes: u64 = t.payload_bytes_injected - t.payload_bytes_delivered - t.payload_bytes_dropped;
        assert_eq!(in_net_bytes, in_net * MTU, "payload bytes in flight at {end_ns} ns");
        if end_ns == 1_000 {
            assert!(in_net > 0, "the check must see packets in flight");
        }
    }
}
