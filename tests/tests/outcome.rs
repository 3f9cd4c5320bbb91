//! One outcome vocabulary for every fabric (issue 15): `summary.json` `run.outcome`, the
//! terminal table and the exit status of `fabricsim run` say the same thing for RoCEv2,
//! InfiniBand and the base Ethernet fabric. Before: the RoCEv2 ring deadlock ended
//! `finished` (0 of 5 flows done) and the InfiniBand one `drained`, `complete: true`.

use fabricsim_tests::{catalogue, fabricsim, s};
use std::path::Path;

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// The five-switch ring of `roce_ring_deadlock.toml` on InfiniBand: 8 KiB VL buffers, HOQLife
/// off, each flow two hops clockwise (`tests/tests/infiniband.rs` runs the same fabric on the
/// engine directly).
fn ib_ring(routing: &str) -> String {
    let links: String = (0..5)
        .map(|i| {
            format!(
                "  {{ a = \"s{i}\", b = \"s{}\", rate = \"400Gbps\", cable_m = 10 }},\n",
                (i + 1) % 5
            )
        })
        .chain((0..5).map(|i| format!("  {{ a = \"h{i}\", b = \"s{i}\", rate = \"400Gbps\", cable_m = 3 }},\n")))
        .collect();
    format!(
        r#"[scenario]
name = "ib_ring"
[topology]
kind = "custom"
hosts = 5
switches = 5
links = [
{links}]
[fabric]
kind = "infiniband"
routing = "{routing}"
[fabric.infiniband]
vl_buffer = "8320B"
hoq_life_switch = 20
hoq_life_leaf = 20
[[workload]]
kind = "flows"
flows = [
  {{ src = 0, dst = 2, size = "1MiB" }},
  {{ src = 1, dst = 3, size = "1MiB" }},
  {{ src = 2, dst = 4, size = "1MiB" }},
  {{ src = 3, dst = 0, size = "1MiB" }},
  {{ src = 4, dst = 1, size = "1MiB" }},
]
[run]
end_time = "2ms"
"#
    )
}

fn run(file: &Path, out: &Path) -> (i32, String, serde_json::Value) {
    let r = fabricsim(&["run", s(file), "--out", s(out)]);
    assert!(
        out.join("summary.json").is_file(),
        "results written: {}{}",
        r.stdout,
        r.stderr
    );
    (r.code, r.stdout, summary(out))
}

#[test]
fn roce_pfc_deadlock_is_deadlocked_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (code, stdout, sm) = run(&catalogue("roce_ring_deadlock.toml"), &out);
    assert_eq!(code, 3, "{stdout}");
    assert_eq!(sm["run"]["outcome"], "deadlocked", "{sm:#}");
    assert_eq!(sm["run"]["complete"], true, "the results are whole, not cut short");
    assert_eq!(sm["flows"]["completed"], 0);
    assert!(stdout.contains("run        deadlocked at"), "{stdout}");
    assert!(stdout.contains("DEADLOCK"), "{stdout}");
}

#[test]
fn ib_credit_deadlock_is_deadlocked_with_exit_3_and_updown_completes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ib_ring.toml");
    std::fs::write(&file, ib_ring("ecmp")).unwrap();
    let (code, stdout, sm) = run(&file, &dir.path().join("out"));
    assert_eq!(code, 3, "{stdout}");
    assert_eq!(sm["run"]["outcome"], "deadlocked", "{sm:#}");
    assert_eq!(sm["flows"]["completed"], 0);
    assert!(sm["packets"]["in_network"].as_u64().unwrap() > 0);
    assert!(stdout.contains("run        deadlocked at"), "{stdout}");
    // The cycle: the five ring links clockwise, VL 0, each waiting for the next one's credits.
    let d = &sm["credit_deadlock"];
    let cycle: Vec<(&str, u64)> = d["cycle"]
        .as_array()
        .unwrap_or_else(|| panic!("no credit_deadlock: {sm:#}"))
        .iter()
        .map(|l| (l["port"].as_str().unwrap(), l["vl"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        cycle,
        [
            ("s0 -> s1", 0),
            ("s1 -> s2", 0),
            ("s2 -> s3", 0),
            ("s3 -> s4", 0),
            ("s4 -> s0", 0)
        ],
        "{d:#}"
    );
    let formed = d["formed_ns"].as_f64().unwrap();
    assert!(
        formed > 0.0 && formed <= sm["run"]["sim_time_ns"].as_f64().unwrap(),
        "{d:#}"
    );
    assert!(stdout.contains("credit deadlock: 5 output port/VL pairs"), "{stdout}");
    // up*/down* routes break the cycle: every flow completes, exit 0.
    std::fs::write(&file, ib_ring("updown")).unwrap();
    let (code, stdout, sm) = run(&file, &dir.path().join("out2"));
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(sm["run"]["outcome"], "completed", "{sm:#}");
    assert_eq!(sm["flows"]["completed"], 5);
    assert!(sm.get("credit_deadlock").is_none(), "{sm:#}");
}

/// The lossy base fabric without its loss recovery (`loss_recovery = "none"`) loses packets
/// for good: the run drains with flows unfinished and nothing in the network. That is
/// `stalled`, not `completed`; the terminal warns, and the FCT percentiles with the
/// unfinished flows counted (at their elapsed time) are no better than the finished flows'
/// alone. With the default go-back-N the same scenario completes every flow.
#[test]
fn lossy_loss_without_recovery_is_stalled() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(catalogue("quickstart.toml"))
        .unwrap()
        .replace("size = \"512KiB\" }", "size = \"64KiB\" }");
    let lossy = text.replace(
        "[[workload]]",
        "[fabric.ethernet]\nloss_recovery = \"none\"\n\n[[workload]]",
    );
    let file = dir.path().join("lossy.toml");
    std::fs::write(&file, &lossy).unwrap();
    let (code, stdout, sm) = run(&file, &dir.path().join("out"));
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(sm["run"]["outcome"], "stalled", "{sm:#}");
    assert!(sm["flows"]["completed"].as_u64() < sm["flows"]["total"].as_u64());
    assert_eq!(sm["packets"]["in_network"], 0);
    assert!(stdout.contains("STALLED"), "{stdout}");
    assert!(stdout.contains("WARNING"), "{stdout}");
    let (all, done) = (&sm["fct_with_unfinished_ns"], &sm["fct_ns"]);
    assert_eq!(
        all["count"].as_u64(),
        sm["flows"]["started"].as_u64(),
        "every started flow counted: {sm:#}"
    );
    for q in ["p50", "p99", "max"] {
        assert!(all[q].as_f64() >= done[q].as_f64(), "{q}: {sm:#}");
    }
    // The default transport recovers the same drops.
    let recovered = dir.path().join("gbn.toml");
    std::fs::write(&recovered, &text).unwrap();
    let (code, stdout, sm) = run(&recovered, &dir.path().join("out2"));
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(sm["run"]["outcome"], "completed", "{sm:#}");
    assert!(
        sm["counters"]["transport_retransmitted_packets"].as_u64() > Some(0),
        "{sm:#}"
    );
    assert!(sm.get("fct_with_unfinished_ns").is_none(), "{sm:#}");
    assert!(stdout.contains("recovery   go-back-N resent"), "{stdout}");
}

/// A run whose flows all complete says `completed` on every fabric kind.
#[test]
fn every_fabric_says_completed_when_every_flow_completes() {
    for name in [
        "roce_incast_16to1_pfc.toml",
        "ib_hdr_fat_tree_permutation.toml",
        "allreduce8_nvlink_ring.toml",
        "allreduce8_pcie_gen4.toml",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let (code, stdout, sm) = run(&catalogue(name), &out);
        assert_eq!(code, 0, "{name}: {stdout}");
        assert_eq!(sm["run"]["outcome"], "completed", "{name}");
        assert_eq!(sm["flows"]["completed"], sm["flows"]["total"], "{name}");
    }
}

/// An InfiniBand cluster of `servers` HGX H100 servers on a k-ary fat-tree with one
/// `[[workload]]` of `workload` and the tables of `rest`.
fn hgx_ndr_cluster(servers: u32, k: u32, workload: &str, rest: &str) -> String {
    format!(
        "[scenario]\nname = \"big\"\n[topology]\nkind = \"cluster\"\nservers = {servers}\nserver = \"hgx_h100\"\n\
         k = {k}\nnic_link = {{ rate = \"400Gbps\", cable_m = 5 }}\nfabric_link = {{ rate = \"400Gbps\", cable_m = 20 }}\n\
         [fabric]\nkind = \"infiniband\"\n[[workload]]\n{workload}{rest}"
    )
}

/// Issue 15: `validate` of a large cluster took 11 s and 630 MB at 512 HGX servers (89 s and
/// 2.2 GB at 1,024) for a single flow, building routes towards all 4,096 GPU hubs. The route
/// tables now lead only to the leaves the flows reach: two here, so the cluster validates, and
/// its tables take 276 KiB (two columns over the forwarding nodes), against about 210 MiB
/// towards every leaf.
#[test]
fn a_large_cluster_routes_only_towards_its_flows() {
    let dir = tempfile::tempdir().unwrap();
    let text = hgx_ndr_cluster(
        512,
        32,
        "kind = \"flows\"\nflows = [{ src = 0, dst = 4000, size = \"1MiB\" }]\n",
        "",
    );
    let file = dir.path().join("big.toml");
    std::fs::write(&file, text).unwrap();
    let r = fabricsim(&["validate", s(&file)]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = fabricsim(&["topo", s(&file)]);
    assert_eq!(r.code, 0, "{r:?}");
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("route table "))
        .unwrap_or_else(|| panic!("no route table line: {r:?}"));
    assert!(
        line.contains("(towards 2 of 4096 leaf switches: those the flows reach)"),
        "{line}"
    );
    let kib: u64 = line["route table ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(kib < 1024, "two columns, not 4096: {line}");
}

/// Issue 15: `run.wall_clock_s` counts loading and building the fabric, not only the
/// simulation. A permutation over a 1,024-server cluster takes seconds to build its route
/// tables (one BFS per leaf its flows reach: all 8,192 GPU hubs, 8 s): with a 1 s budget `run` and
/// `validate` stop within a fraction of a second of it, say the budget ran out while
/// building, and exit 1 without a results directory; an interrupt during the build stops it
/// too (exit 130).
#[test]
fn the_wall_clock_budget_counts_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let text = hgx_ndr_cluster(
        1024,
        64,
        "kind = \"permutation\"\nsize = \"1MiB\"\n",
        "[run]\nwall_clock_s = 1\n",
    );
    let file = dir.path().join("big.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    for args in [
        vec!["run", s(&file), "--out", s(&out), "--quiet"],
        vec!["validate", s(&file)],
    ] {
        // Without the budget this build takes several seconds.
        let r = fabricsim(&args);
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains("wall-clock budget (run.wall_clock_s = 1 s) ran out")
                && r.stderr.contains("while building the fabric"),
            "{r:?}"
        );
    }
    assert!(!out.exists(), "nothing written when the build ran out of budget");
    let interrupt = scenarios::interrupt::Interrupt::manual();
    interrupt.raise();
    let opts = scenarios::runner::RunOptions {
        out_dir: Some(out.clone()),
        interrupt,
        ..Default::default()
    };
    let e = scenarios::runner::run_file(&file, &opts).err().expect("interrupted");
    assert_eq!(e.exit_code(), 130, "{e}");
    assert!(e.to_string().contains("while building the fabric"), "{e}");
}
