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

mod credit_update {
    use fabrics::engine::{EngineConfig, Fabric};
    use fabrics::ib::link::{BASE_HEADER_BYTES, FLOW_CONTROL_PACKET_BYTES, blocks, cable_delay};
    use fabrics::ib::{IbConfig, IbSpeed};
    use fabrics::models::credit::{AnyCreditUpdate, Coalesced};
    use fabrics::topology::{LinkInfo, LinkKind, Topology};
    use sim_core::{Bytes, Duration, RunLimits, RunOutcome, serialization_time};

    const PACKETS: u64 = 2000;
    const WIRE: u32 = 4096 + BASE_HEADER_BYTES;

    /// One NDR 4x link of `metres` between two HCAs whose receive buffer holds `window`
    /// packets; a flow of [`PACKETS`] full packets.
    fn one_link(metres: u64, window: u64, update: AnyCreditUpdate) -> Fabric {
        let mut t = Topology::new("one IB link");
        let (a, z) = (t.add_host("h0", None), t.add_host("h1", None));
        t.add_link(
            a,
            z,
            LinkInfo {
                rate: IbSpeed::Ndr.data_rate(4).unwrap(),
                delay: cable_delay(metres),
                kind: LinkKind::InfiniBand,
            },
        );
        let cfg = EngineConfig {
            mtu_bytes: 4096,
            header_bytes: BASE_HEADER_BYTES,
            ib: Some(IbConfig {
                hca_vl_buffer_blocks: (window * blocks(WIRE) as u64) as u32,
                credit_update: update,
                ..IbConfig::default()
            }),
            ..Default::default()
        };
        let flows = vec![fabricsim_tests::flow(0, 1, PACKETS * 4096)];
        let (f, r) = fabricsim_tests::run(&t, cfg, flows, RunLimits::default());
        assert_eq!(r.outcome, RunOutcome::Finished);
        assert_eq!(f.totals().packets_dropped, 0);
        f
    }

    fn coalesced(packets: u64, max_delay: Duration) -> AnyCreditUpdate {
        AnyCreditUpdate::Coalesced(Coalesced {
            blocks: (packets * blocks(WIRE) as u64) as u32,
            max_delay,
        })
    }

    fn ser(bytes: u32) -> f64 {
        serialization_time(Bytes(bytes as u64), IbSpeed::Ndr.data_rate(4).unwrap()).ps() as f64
    }

    /// Wire throughput (fraction of line rate) from the first bit sent to the last bit in.
    fn throughput(f: &Fabric, metres: u64) -> f64 {
        let rec = &f.flow_records()[0];
        let elapsed =
            (rec.finish.unwrap().ps() - rec.first_sent.unwrap().ps()) as f64 - cable_delay(metres).ps() as f64;
        PACKETS as f64 * ser(WIRE) / elapsed
    }

    /// With a buffer far above the credit round trip the sender never waits for credits, so
    /// coalescing 4 packets' credits into one update moves no data packet by a picosecond and
    /// sends a quarter of the flow-control packets (exact counts).
    #[test]
    fn coalescing_with_ample_buffer_keeps_every_packet_time_and_quarters_the_updates() {
        let eager = one_link(3, 16, AnyCreditUpdate::default());
        let lazy = one_link(3, 16, coalesced(4, Duration::from_us(2)));
        assert_eq!(eager.flow_records()[0].finish, lazy.flow_records()[0].finish);
        assert_eq!(eager.ib().unwrap().totals.fc_packets, PACKETS);
        assert_eq!(lazy.ib().unwrap().totals.fc_packets, PACKETS / 4);
    }

    /// A window of 4 packets on 100 m: per change, the credit loop formula of `infiniband.rs`
    /// (`m · ser / (ser + 2·delay + ser_fc)`); coalescing all 4, the credits of a window come
    /// back only after its last packet, so a round is `4·ser + 2·delay + ser_fc`. Both within
    /// 0.3 % (the start-up round).
    #[test]
    fn coalescing_a_whole_window_lengthens_the_credit_loop_by_the_formula() {
        let delay = cable_delay(100).ps() as f64;
        let (s, fc) = (ser(WIRE), ser(FLOW_CONTROL_PACKET_BYTES));
        let eager = throughput(&one_link(100, 4, AnyCreditUpdate::default()), 100);
        let lazy = throughput(&one_link(100, 4, coalesced(4, Duration::from_us(100))), 100);
        let want_eager = 4.0 * s / (s + 2.0 * delay + fc);
        let want_lazy = 4.0 * s / (4.0 * s + 2.0 * delay + fc);
        for (got, want, what) in [(eager, want_eager, "per change"), (lazy, want_lazy, "coalesced")] {
            assert!(
                (got - want).abs() / want < 0.003,
                "{what}: {got:.4} vs formula {want:.4}"
            );
        }
    }

    /// A threshold above the whole buffer is never reached: the deadline alone returns the
    /// credits, once per `max_delay`, and the link still delivers everything (4 packets per
    /// 5 us, within 1 %).
    #[test]
    fn the_deadline_keeps_a_link_live_when_the_threshold_exceeds_the_buffer() {
        let f = one_link(100, 4, coalesced(8, Duration::from_us(5)));
        let rec = &f.flow_records()[0];
        let elapsed = (rec.finish.unwrap().ps() - rec.first_sent.unwrap().ps()) as f64;
        let want = (PACKETS / 4) as f64 * Duration::from_us(5).ps() as f64;
        assert!(
            (elapsed - want).abs() / want < 0.01,
            "elapsed {elapsed} ps, 500 rounds of 5 us = {want}"
        );
    }
}

/// The variants are chosen in the scenario file; a bad choice is refused with its location.
mod scenario_keys {
    use fabricsim_tests::{fabricsim, s};

    const BASE: &str = r#"
[scenario]
name = "swap"
seed = 1

[topology]
kind = "custom"
hosts = 2
switches = 1
links = [
    { a = "h0", b = "s0", rate = "ndr", cable_m = 3 },
    { a = "s0", b = "h1", rate = "ndr", cable_m = 3 },
]

[fabric]
kind = "infiniband"

[fabric.infiniband]
CREDIT

[[workload]]
kind = "flows"
flows = [{ src = 0, dst = 1, size = "1MiB" }]
"#;

    fn run_with(credit: &str) -> (fabricsim_tests::Out, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("swap.toml");
        std::fs::write(&file, BASE.replace("CREDIT", credit)).unwrap();
        let out = dir.path().join("out");
        let o = fabricsim(&["run", s(&file), "--out", s(&out), "--quiet"]);
        (o, dir)
    }

    #[test]
    fn coalesced_credit_updates_run_from_a_scenario_and_send_fewer_updates() {
        let fc = |credit: &str| {
            let (o, dir) = run_with(credit);
            assert_eq!(o.code, 0, "{o:?}");
            let summary: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.path().join("out/summary.json")).unwrap()).unwrap();
            let resolved = std::fs::read_to_string(dir.path().join("out/scenario.resolved.toml")).unwrap();
            (
                summary["counters"]["ib_fc_packets"]
                    .as_u64()
                    .expect("ib_fc_packets in summary.json"),
                resolved,
            )
        };
        let (eager, _) = fc("");
        let (lazy, resolved) = fc(r#"credit_update = { policy = "coalesced", blocks = 260, max_delay = "2us" }"#);
        assert!(
            lazy * 3 < eager,
            "coalesced {lazy} vs per change {eager} flow-control packets"
        );
        assert!(
            resolved.contains("coalesced"),
            "the resolved scenario keeps the policy:\n{resolved}"
        );
    }

    #[test]
    fn a_bad_policy_or_threshold_is_refused_with_its_location() {
        for (credit, field) in [
            (
                r#"credit_update = { policy = "lazy" }"#,
                "fabric.infiniband.credit_update.policy",
            ),
            (
                r#"credit_update = { policy = "coalesced", blocks = 0, max_delay = "1us" }"#,
                "fabric.infiniband.credit_update.blocks",
            ),
            (
                r#"credit_update = { policy = "coalesced", blocks = 65 }"#,
                "fabric.infiniband.credit_update.max_delay",
            ),
            (
                r#"credit_update = { policy = "per_change", blocks = 65 }"#,
                "fabric.infiniband.credit_update.blocks",
            ),
        ] {
            let (o, _dir) = run_with(credit);
            assert_eq!(o.code, 2, "{credit}: {o:?}");
            assert!(
                o.stderr.contains(field),
                "{credit}: the error must name {field}:\n{}",
                o.stderr
            );
            assert!(
                o.stderr.contains("swap.toml:"),
                "{credit}: the error must give the file and line:\n{}",
                o.stderr
            );
        }
    }
}
