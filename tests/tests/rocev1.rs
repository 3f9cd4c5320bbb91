//! RoCEv1 (`[fabric.roce] version = 1`): Annex A16 frames, layer-2 forwarding over the RSTP
//! spanning tree, and what one tree costs beside RoCEv2's ECMP (`docs/models/rocev1.md`).

use fabrics::engine::{Ev, Fabric};
use fabrics::roce::RoceFrame;
use fabrics::routing::stp::SpanningTree;
use fabrics::topology::{Topology, fat_tree, leaf_spine};
use fabricsim_tests::{catalogue, fabricsim, max_min_rates, s};
use scenarios::build::{Built, Loaded, load, load_str};
use sim_core::{RunLimits, SimTime, WheelQueue};
use std::ops::ControlFlow;
use std::path::PathBuf;

const LINE_BPS: f64 = 100e9;

/// A permutation of `size` flows on a `leaves` x `hosts` x `spines` leaf-spine at 100 Gb/s
/// under RoCE `version`, PFC only (priority 3).
fn leaf_spine_text(leaves: u32, hosts: u32, spines: u32, version: u8, size: &str, seed: u64) -> String {
    format!(
        r#"[scenario]
name = "ls{leaves}x{hosts}x{spines}_v{version}"
seed = {seed}

[topology]
kind = "leaf_spine"
leaves = {leaves}
hosts_per_leaf = {hosts}
spines = {spines}
host_link = {{ rate = "100Gbps", cable_m = 3 }}
fabric_link = {{ rate = "100Gbps", cable_m = 10 }}

[fabric]
kind = "rocev2"

[fabric.roce]
version = {version}

[[workload]]
kind = "permutation"
size = "{size}"
class = 3

[run]
end_time = "50ms"
"#
    )
}

fn loaded(text: String) -> Loaded {
    load_str("test.toml".into(), PathBuf::from("."), text).unwrap()
}

fn fabric(b: Built) -> Fabric {
    Fabric::with_deps(&b.topology, b.routes, b.engine, b.flows, &b.deps).unwrap()
}

/// Runs `f` until `t`.
fn run_until(f: &mut Fabric, s: &mut sim_core::Scheduler<Ev, WheelQueue<Ev>>, t_us: u64) {
    let limits = RunLimits {
        end_time: Some(SimTime::ZERO + sim_core::Duration::from_us(t_us)),
        ..Default::default()
    };
    sim_core::run(f, s, &limits, |_| ControlFlow::Continue(()));
}

/// Payload bytes delivered per flow so far.
fn delivered(f: &Fabric) -> Vec<u64> {
    f.flow_records().iter().map(|r| r.bytes_delivered).collect()
}

/// Frame sizes follow the version, to the byte: the run's header, ACK and CNP, and the wire
/// bytes a host's port actually sends.
#[test]
fn frame_sizes_exact_to_the_byte() {
    for (file, header, ack, cnp) in [
        ("roce_v1_leaf_spine_permutation.toml", 98, 102, 114),
        ("roce_v2_leaf_spine_permutation.toml", 82, 86, 98),
    ] {
        let b = load(&catalogue(file)).unwrap().build().unwrap();
        assert_eq!(b.engine.header_bytes, header, "{file}");
        let roce = b.engine.roce.as_ref().unwrap();
        assert_eq!(roce.frame.header_bytes(), header);
        assert_eq!(roce.frame.ack_wire_bytes(), ack);
        assert_eq!(roce.frame.cnp_wire_bytes(), cnp);
        // Host 0 sends one 2 MiB flow: 512 frames of 4096 B payload + header, nothing else
        // (no ACKs or CNPs without ECN/TIMELY/go-back-N, no PFC frames from a NIC).
        let mut f = fabric(b);
        let mut sched = f.scheduler::<WheelQueue<_>>();
        let r = sim_core::run(&mut f, &mut sched, &RunLimits::default(), |_| ControlFlow::Continue(()));
        assert!(r.outcome.is_complete(), "{:?}", r.outcome);
        let host0 = f.port_base()[0] as usize;
        assert_eq!(f.ports()[host0].stats.packets_tx, 512);
        assert_eq!(f.ports()[host0].stats.bytes_tx, 512 * (4096 + header as u64), "{file}");
    }
    assert_eq!(RoceFrame::DATA_V1.wire_bytes(4096), 4194);
    assert_eq!(RoceFrame::DATA_IPV4.wire_bytes(4096), 4178);
}

/// The forwarding links of `t`'s tree: `n_switches - 1` switch-switch links that join every
/// switch (union-find), and the same tree on every computation.
fn assert_spanning_tree(t: &Topology) -> SpanningTree {
    let st = SpanningTree::compute(t);
    assert_eq!(st, SpanningTree::compute(t), "{}: identical across runs", t.description);
    let mut parent: Vec<usize> = (0..t.n_nodes()).collect();
    fn find(p: &mut [usize], mut v: usize) -> usize {
        while p[v] != v {
            p[v] = p[p[v]];
            v = p[v];
        }
        v
    }
    let mut n_fwd = 0;
    for e in t.graph.edge_indices() {
        let (a, b) = t.graph.edge_endpoints(e).unwrap();
        if t.is_host(a) || t.is_host(b) || !st.forwarding[e.index()] {
            continue;
        }
        n_fwd += 1;
        let (ra, rb) = (find(&mut parent, a.index()), find(&mut parent, b.index()));
        assert_ne!(ra, rb, "{}: forwarding links close a loop", t.description);
        parent[ra] = rb;
    }
    assert_eq!(n_fwd, t.n_switches() - 1, "{}", t.description);
    let switches: Vec<usize> = t
        .graph
        .node_indices()
        .filter(|&v| !t.is_host(v))
        .map(|v| v.index())
        .collect();
    let root = find(&mut parent, switches[0]);
    assert!(switches.iter().all(|&v| find(&mut parent, v) == root), "connected");
    assert_eq!(st.roots(), vec![switches[0] as u32], "root = lowest bridge id");
    st
}

#[test]
fn spanning_tree_is_loop_free_and_identical_across_runs() {
    let link = |g| fabricsim_tests::link(g, 50);
    let mut spec = leaf_spine::LeafSpineSpec::new(16, 16, 16, link(100), link(100));
    let st = assert_spanning_tree(&leaf_spine::build(&spec).unwrap());
    assert_eq!(st.blocked_ports().len(), 16 * 16 - 31);
    spec.links_per_spine = 2;
    assert_spanning_tree(&leaf_spine::build(&spec).unwrap());
    for k in [4, 8] {
        assert_spanning_tree(&fat_tree::build(k, link(100), link(400)).unwrap());
    }
    // The 5-switch ring of the deadlock study: one port blocked.
    let b = load(&catalogue("roce_ring_deadlock.toml")).unwrap().build().unwrap();
    assert_eq!(assert_spanning_tree(&b.topology).blocked_ports().len(), 1);
    // `fabricsim topo` reports it, byte-identically on every call; the DOT marks it.
    let v1 = catalogue("roce_v1_leaf_spine_permutation.toml");
    let a = fabricsim(&["topo", s(&v1)]);
    assert_eq!(a.code, 0, "{a:?}");
    assert_eq!(a.stdout, fabricsim(&["topo", s(&v1)]).stdout);
    assert!(a.stdout.contains(
        "spanning tree (RSTP, bridge id = node index): root leaf0, 15 forwarding and 49 blocked switch-switch links, depth 2\n"
    ), "{a:?}");
    assert!(a.stdout.contains("\n  blocked leaf7 port 15 (to spine7)\n"), "{a:?}");
    assert_eq!(a.stdout.matches("style=dashed, color=grey").count(), 49);
    let v2 = fabricsim(&["topo", s(&catalogue("roce_v2_leaf_spine_permutation.toml"))]);
    assert!(
        !v2.stdout.contains("spanning tree") && !v2.stdout.contains("dashed"),
        "{v2:?}"
    );
}

/// A permutation's max-min fair mean rate over its own paths, and its simulated mean rate in
/// a window where every flow is still sending (100..400 µs of 16 MiB flows), both as
/// fractions of line rate, plus the spines that carried data.
fn permutation(leaves: u32, hosts: u32, spines: u32, version: u8, seed: u64) -> (f64, f64, Vec<String>) {
    let b = loaded(leaf_spine_text(leaves, hosts, spines, version, "16MiB", seed))
        .build()
        .unwrap();
    let header = b.engine.header_bytes as f64;
    let names: Vec<String> = b.topology.graph.node_weights().map(|n| n.name.clone()).collect();
    let payload_share = 4096.0 / (4096.0 + header);
    let mut f = fabric(b);
    let mut sched = f.scheduler::<WheelQueue<_>>();
    let (t0, t1) = (100, 400);
    run_until(&mut f, &mut sched, t0);
    let before = delivered(&f);
    run_until(&mut f, &mut sched, t1);
    let after = delivered(&f);
    assert!(
        f.flow_records().iter().all(|r| r.finish.is_none()),
        "every flow still sends at t1"
    );
    let n = f.flows().len();
    let sim: f64 = before
        .iter()
        .zip(&after)
        .map(|(a, b)| (b - a) as f64 * 8.0 / ((t1 - t0) as f64 * 1e-6) / LINE_BPS)
        .sum::<f64>()
        / n as f64;
    let paths: Vec<Vec<u32>> = (0..n as u32).map(|i| f.flow_path(i)).collect();
    let mm = max_min_rates(&paths, &|p| {
        f.ports()[p as usize].rate.get() as f64 / LINE_BPS * payload_share
    });
    // Spines that carried any byte (data or PFC) in either direction.
    let mut used: Vec<String> = Vec::new();
    for p in f.ports() {
        if p.stats.bytes_tx == 0 {
            continue;
        }
        for node in [p.node, p.peer_node] {
            let name = &names[node as usize];
            if name.starts_with("spine") && !used.contains(name) {
                used.push(name.clone());
            }
        }
    }
    used.sort();
    (mm.iter().sum::<f64>() / n as f64, sim, used)
}

/// v1 on a 16 x 16 x 16 leaf-spine: every byte crosses spine0 (the tree's one spine), and the
/// throughput is the max-min value of the tree; v2's ECMP spreads over all 16 spines.
///
/// Measured (seeds 1..=3, mean rate per flow as a fraction of line rate, payload only):
/// see `docs/models/rocev1.md`. Tolerances: the simulated mean within 3% (v1; measured 0.8..1.3%) and 6% (v2; measured 2.3..4.2%, always below) of
/// the max-min mean of the same paths. PFC without congestion control is not max-min fair
/// (parking-lot shares, head-of-line blocking behind paused uplinks), but on the tree every
/// inter-leaf flow is held by its leaf's one uplink or spine0's one downlink, so the sum
/// comes out close; under ECMP head-of-line blocking costs a little more.
#[test]
fn tree_uses_one_spine_and_matches_max_min_beside_ecmp() {
    for seed in [1, 2, 3] {
        let (mm1, sim1, used1) = permutation(16, 16, 16, 1, seed);
        let (mm2, sim2, used2) = permutation(16, 16, 16, 2, seed);
        eprintln!(
            "seed {seed}: v1 tree: max-min {mm1:.4}, simulated {sim1:.4}; v2 ECMP: max-min {mm2:.4}, simulated {sim2:.4}"
        );
        assert_eq!(used1, vec!["spine0".to_string()], "seed {seed}");
        assert_eq!(used2.len(), 16, "seed {seed}");
        assert!(
            (sim1 - mm1).abs() < 0.03 * mm1,
            "seed {seed} v1: simulated {sim1} vs max-min {mm1}"
        );
        assert!(
            (sim2 - mm2).abs() < 0.06 * mm2,
            "seed {seed} v2: simulated {sim2} vs max-min {mm2}"
        );
        assert!(sim2 > 3.0 * sim1, "seed {seed}");
    }
}

/// Every shipped RoCEv2 scenario that fits one layer-2 domain builds and runs with
/// `version = 1`; the GPU cluster is refused. On the 5-switch ring the tree blocks one port,
/// so the cyclic pause dependency that deadlocks v2 cannot form.
#[test]
fn every_single_domain_rocev2_scenario_runs_with_v1() {
    let dir = catalogue("");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    let mut n_roce = 0;
    for name in names {
        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
        if !text.contains("kind = \"rocev2\"") {
            continue;
        }
        n_roce += 1;
        let v1 = as_v1(&text);
        let l = load_str(name.clone(), dir.clone(), v1).unwrap();
        match l.build() {
            Ok(b) => {
                assert!(!name.starts_with("cluster"), "{name}");
                assert_eq!(b.engine.header_bytes, 98, "{name}");
                for v in 0..b.topology.n_nodes() as u32 {
                    for h in 0..b.topology.n_hosts() as u32 {
                        assert!(b.routes.next_hops(v, h).len() <= 1, "{name}: one path");
                    }
                }
            }
            Err(e) => {
                assert!(name.starts_with("cluster"), "{name}: {e}");
                assert!(e.to_string().contains("topology.kind"), "{e}");
            }
        }
    }
    assert!(n_roce >= 9, "{n_roce} RoCEv2 scenarios");

    // The ring: v2 deadlocks, v1 keeps every flow moving (2 ms of the 20 ms study).
    let text = std::fs::read_to_string(catalogue("roce_ring_deadlock.toml")).unwrap();
    for (version, text) in [(2, text.clone()), (1, as_v1(&text))] {
        let b = load_str("ring.toml".into(), PathBuf::from("."), text)
            .unwrap()
            .build()
            .unwrap();
        let mut f = fabric(b);
        let mut sched = f.scheduler::<WheelQueue<_>>();
        run_until(&mut f, &mut sched, 1000);
        let mid = delivered(&f);
        run_until(&mut f, &mut sched, 2000);
        let moved = delivered(&f).iter().zip(&mid).filter(|(b, a)| b > a).count();
        let deadlock = f.roce().unwrap().deadlock.is_some();
        eprintln!("ring v{version}: deadlock {deadlock}, flows moving in 1..2 ms: {moved}");
        if version == 2 {
            assert!(deadlock);
        } else {
            assert!(!deadlock);
            assert_eq!(moved, 5, "every flow delivers in 1..2 ms");
        }
    }
}

/// `text` with `version = 1` in its `[fabric.roce]` table (added if absent).
fn as_v1(text: &str) -> String {
    if text.contains("\nversion = 2\n") {
        text.replacen("\nversion = 2\n", "\nversion = 1\n", 1)
    } else if text.contains("\nversion = 1\n") {
        text.to_string()
    } else if text.contains("[fabric.roce]\n") {
        text.replacen("[fabric.roce]\n", "[fabric.roce]\nversion = 1\n", 1)
    } else {
        text.replacen(
            "kind = \"rocev2\"\n",
            "kind = \"rocev2\"\n\n[fabric.roce]\nversion = 1\n",
            1,
        )
    }
}

/// Ineligible or malformed v1 input: `fabricsim validate` exits 2 with one line naming
/// file:line:col, the field and what was expected.
#[test]
fn bad_v1_input_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let base = leaf_spine_text(2, 2, 2, 1, "1MiB", 1);
    let check = |text: &str, field: &str, at: &str, words: &[&str]| {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, text).unwrap();
        let o = fabricsim(&["validate", s(&file)]);
        assert_eq!(o.code, 2, "{o:?}");
        let at = text.find(at).unwrap_or_else(|| panic!("{at:?} in\n{text}"));
        let line = text[..at].matches('\n').count() + 1;
        let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
        let want = format!("{}:{line}:{col}: {field}: ", s(&file));
        assert!(o.stderr.contains(&want), "want {want:?}\n{o:?}");
        for w in words {
            assert!(o.stderr.contains(w), "{w:?} in {o:?}");
        }
        assert_eq!(o.stderr.lines().count(), 1, "{o:?}");
    };
    // A version that does not exist.
    let t = base.replace("version = 1", "version = 3");
    check(
        &t,
        "fabric.roce.version",
        "3\n",
        &["expected 1 (RoCEv1) or 2 (RoCEv2), got 3"],
    );
    // A layer-3 routing choice.
    for r in ["updown", "dmodk", "adaptive"] {
        let t = base.replace(
            "kind = \"rocev2\"\n",
            &format!("kind = \"rocev2\"\nrouting = \"{r}\"\n"),
        );
        check(
            &t,
            "fabric.routing",
            &format!("\"{r}\""),
            &["RoCEv1 is bridged", "expected routing = \"ecmp\"", r],
        );
    }
    // A GPU cluster (one subnet per rail).
    let cluster = std::fs::read_to_string(catalogue("cluster16_hgx_roce400_allreduce.toml")).unwrap();
    let t = as_v1(&cluster);
    let topo_at = t.find("[topology]").unwrap();
    let kind_at = topo_at + t[topo_at..].find("\"cluster\"").unwrap();
    check(
        &t[..],
        "topology.kind",
        &t[kind_at..kind_at + 9],
        &["cannot use RoCEv1", "one IP subnet per rail"],
    );
    // A chain of 23 switches: the tree is 22 deep, beyond RSTP's Max Age.
    let mut links = String::new();
    for i in 0..22 {
        links.push_str(&format!(
            "  {{ a = \"s{i}\", b = \"s{}\", rate = \"100Gbps\" }},\n",
            i + 1
        ));
    }
    links.push_str(
        "  { a = \"h0\", b = \"s0\", rate = \"100Gbps\" },\n  { a = \"h1\", b = \"s22\", rate = \"100Gbps\" },\n",
    );
    let t = format!(
        "[scenario]\nname = \"chain\"\n\n[topology]\nkind = \"custom\"\nhosts = 2\nswitches = 23\nlinks = [\n{links}]\n\n[fabric]\nkind = \"rocev2\"\n\n[fabric.roce]\nversion = 1\n\n[[workload]]\nkind = \"flows\"\nclass = 3\nflows = [{{ src = 0, dst = 1, size = \"1MiB\" }}]\n\n[run]\nend_time = \"1ms\"\n"
    );
    check(
        &t,
        "topology",
        "[topology]",
        &["22 bridges deep", "expected at most 20"],
    );
    // A v1 table on another fabric.
    let t = base.replace("kind = \"rocev2\"", "kind = \"ethernet\"");
    check(&t, "fabric.roce", "[fabric.roce]", &["needs kind = \"rocev2\""]);
}
