//! The link-level models a researcher swaps by adding one file and one enum arm
//! (`docs/models/extending.md`): each test runs the same scenario with the default model and
//! with the variant shipped as the recipe's worked example, and checks the behaviour that
//! tells them apart. (The crossbar arbitration's variants are checked in `nvswitch.rs`.)

use fabrics::engine::{EngineConfig, Fabric, RoceConfig};
use fabrics::models::PauseKind;
use fabrics::topology::{LinkInfo, LinkKind, Topology};
use fabrics::traffic::FlowSpec;
use sim_core::{BitsPerSec, Duration, RunLimits};

const MTU: u32 = 4096;
const HEADER: u32 = 82;
const LOSSLESS: u8 = 3;
const LOSSY: u8 = 0;

/// A star: switch s0 (node 0) with hosts h0..h3 (nodes 1..=4), 100G, 5 m.
fn star4() -> Topology {
    let mut t = Topology::new("star");
    let sw = t.add_switch("s0", 0, None);
    for i in 0..4 {
        let h = t.add_host(format!("h{i}"), None);
        t.add_link(
            h,
            sw,
            LinkInfo {
                rate: BitsPerSec::from_gbps(100),
                delay: Duration(25_000),
                kind: LinkKind::Network,
            },
        );
    }
    t
}

fn on(class: u8, src: u32, dst: u32, size: u64) -> FlowSpec {
    FlowSpec {
        class,
        ..fabricsim_tests::flow(src, dst, size)
    }
}

/// Hosts 1 and 2 send 2 MB each to host 0 on the lossless priority (an incast that makes the
/// switch pause both senders); host 1 also sends 2 MB to the idle host 3 on the lossy
/// priority. Returns the fabric after the run.
fn incast_with_bystander(pause: PauseKind) -> Fabric {
    let cfg = EngineConfig {
        mtu_bytes: MTU,
        header_bytes: HEADER,
        roce: Some(RoceConfig {
            buffer_bytes: Some(300_000),
            pause,
            ..Default::default()
        }),
        ..Default::default()
    };
    let flows = vec![
        on(LOSSLESS, 1, 0, 2_000_000),
        on(LOSSLESS, 2, 0, 2_000_000),
        on(LOSSY, 1, 3, 2_000_000),
    ];
    let (f, r) = fabricsim_tests::run(&star4(), cfg, flows, RunLimits::default());
    assert!(r.outcome.is_complete(), "{:?}", r.outcome);
    assert_eq!(f.totals().flows_completed, 3);
    assert_eq!(
        f.totals().packets_dropped,
        0,
        "the bystander's host 3 is idle: nothing to drop"
    );
    f
}

/// IEEE 802.1Qbb pauses only the congested priority; IEEE 802.3x (`models/pfc/global.rs`, one
/// file and one `AnyPauseSender` arm) pauses the whole link, so the lossy bystander flow of a
/// paused sender is paused exactly as long as its lossless flow (every frame names all eight
/// priorities) and finishes later. Exact comparisons: the paused times come from the same
/// frames.
#[test]
fn global_pause_stops_the_bystander_priority_that_pfc_leaves_alone() {
    let pfc = incast_with_bystander(PauseKind::Priority);
    let global = incast_with_bystander(PauseKind::Global);
    // Host 1's NIC port is the first port of node 2 (the switch is node 0, h0 node 1).
    let sender = |f: &Fabric| f.port_base()[2];
    let end = |f: &Fabric| f.flow_records().iter().filter_map(|r| r.finish).max().unwrap();

    let r = pfc.roce().unwrap();
    let (_, lossless_paused) = r.paused(sender(&pfc), LOSSLESS, end(&pfc));
    let (_, lossy_paused) = r.paused(sender(&pfc), LOSSY, end(&pfc));
    assert!(
        lossless_paused > Duration::ZERO,
        "the incast must pause host 1 under PFC"
    );
    assert_eq!(lossy_paused, Duration::ZERO, "PFC must not pause the lossy priority");

    let g = global.roce().unwrap();
    let (_, lossless_paused_g) = g.paused(sender(&global), LOSSLESS, end(&global));
    let (_, lossy_paused_g) = g.paused(sender(&global), LOSSY, end(&global));
    assert!(lossless_paused_g > Duration::ZERO);
    assert_eq!(
        lossy_paused_g, lossless_paused_g,
        "802.3x stops every priority for the same time"
    );

    // The bystander flow (input index 2) is slowed by the pauses of a link it only shares.
    let fct = |f: &Fabric| {
        let id = f.flow_of_input(2) as usize;
        let rec = &f.flow_records()[id];
        rec.finish.unwrap().ps() - f.flows()[id].start.ps()
    };
    assert!(
        fct(&global) > fct(&pfc),
        "bystander FCT: global {} ps, PFC {} ps",
        fct(&global),
        fct(&pfc)
    );
}
