//! One engine, composed models: a GPU cluster on RoCEv2 keeps its servers' credit-based
//! NVLink/PCIe links and cut-through devices, and only the network runs PFC, ECN and DCQCN
//! (`fabrics::engine::Device`, `LinkFc`).

use fabricsim_tests::{fabricsim, s};
use std::collections::BTreeMap;
use std::path::Path;

/// Writes `text` as `<name>.toml` in `dir`, runs it, and returns the results directory.
fn run_scenario(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    let out = dir.join(name);
    let r = fabricsim(&["run", s(&file), "--out", s(&out), "-q"]);
    assert_eq!(r.code, 0, "{name}: {}{}", r.stdout, r.stderr);
    out
}

/// `ports.csv` as rows of column name -> value.
fn ports(results: &Path) -> Vec<BTreeMap<String, String>> {
    let mut rd = csv::Reader::from_path(results.join("ports.csv")).unwrap();
    let head: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    rd.records()
        .map(|r| head.iter().cloned().zip(r.unwrap().iter().map(String::from)).collect())
        .collect()
}

fn num(row: &BTreeMap<String, String>, col: &str) -> f64 {
    row[col].parse().unwrap_or_else(|_| panic!("{col} = {:?}", row[col]))
}

/// A node of a server: the cluster builder names them `s<server>.<device>`.
fn server_node(node: &str) -> bool {
    node.starts_with('s') && node[1..].split('.').next().is_some_and(|n| n.parse::<u32>().is_ok())
}

/// A port inside a server: on a link between two of its devices (NVLink, PCIe, a GPU's
/// attachment). A NIC's network port is the network's edge, not inside.
fn in_server(row: &BTreeMap<String, String>) -> bool {
    server_node(&row["node"]) && server_node(&row["peer"])
}

const CLUSTER: &str = r#"[scenario]
name = "NAME"
seed = 1

[topology]
kind = "cluster"
servers = 16
server = "hgx_h100"
k = 8
nic_link = { rate = "400Gbps", cable_m = 5 }
fabric_link = { rate = "400Gbps", cable_m = 20 }

[fabric]
kind = "FABRIC"
"#;

/// The acceptance case of the engine issue: 16 HGX servers on 400G RoCEv2 with ECN and DCQCN
/// running a hierarchical AllReduce while GPU 0 of 15 servers sends into GPU 0 of server 0
/// (a 15-to-1 incast across the network, lossless class 3). The network pauses and marks
/// (checked, so the test cannot pass vacuously); no port inside a server sends or receives a
/// PAUSE, is paused, or marks ECN, and every flow completes with no drop.
#[test]
fn roce_cluster_pauses_and_marks_only_in_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let senders: Vec<String> = (1..16).map(|sv| (sv * 8).to_string()).collect();
    let text = CLUSTER.replace("NAME", "roce_mixed").replace("FABRIC", "rocev2")
        + &format!(
            r#"
[fabric.roce]
lossless = [3]
lossy = [0, 6]
ecn = {{ preset = "dcqcn_paper" }}
cc = {{ kind = "dcqcn", preset = "paper" }}

[[workload]]
kind = "collective"
name = "hier"
op = "all_reduce"
algorithm = "hierarchical"
size = "1MiB"
class = 3

[[workload]]
kind = "incast"
name = "incast"
receiver = 0
senders = [{}]
size = "512KiB"
class = 3

[run]
end_time = "20ms"
"#,
            senders.join(", ")
        );
    let out = run_scenario(dir.path(), "roce_mixed", &text);
    let rows = ports(&out);
    let (mut net_pauses, mut net_marks) = (0.0, 0.0);
    for r in &rows {
        let signals = [
            "paused_ns",
            "pause_frames_tx",
            "resume_frames_tx",
            "pfc_frames_rx",
            "ecn_marked",
        ];
        if in_server(r) {
            for c in signals {
                assert_eq!(
                    num(r, c),
                    0.0,
                    "port {} of {} (inside a server): {c}",
                    r["port"],
                    r["node"]
                );
            }
        } else {
            net_pauses += num(r, "pause_frames_tx");
            net_marks += num(r, "ecn_marked");
        }
        assert_eq!(num(r, "drops"), 0.0, "port {} of {}", r["port"], r["node"]);
    }
    assert!(rows.iter().any(in_server) && rows.iter().any(|r| !in_server(r)));
    assert!(
        net_pauses > 0.0 && net_marks > 0.0,
        "no congestion in the network: pauses {net_pauses}, marks {net_marks}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let flows = &summary["flows"];
    assert_eq!(flows["completed"], flows["total"], "{flows}");
    assert!(summary["counters"]["roce_cnps_received"].as_u64().unwrap() > 0);
}

/// The per-server stage of a hierarchical AllReduce on one active server (its 8 GPUs, no
/// network traffic) takes the same time to the picosecond on the NDR InfiniBand cluster, the
/// 400G RoCEv2 cluster and the 400G Ethernet cluster: inside a server nothing depends on the
/// network's discipline, header or switch. Checked on the flows' finish times, per flow,
/// exactly.
#[test]
fn server_stage_is_the_same_on_infiniband_rocev2_and_ethernet_clusters() {
    let dir = tempfile::tempdir().unwrap();
    // A ring AllReduce over the 8 GPUs of server 0 (hosts 0..7): NVLink and NVSwitch only.
    let workload = r#"
[[workload]]
kind = "collective"
name = "server0"
op = "all_reduce"
algorithm = "ring"
ranks = 8
size = "4MiB"
class = 3
"#;
    let mut finish = Vec::new();
    for (name, fabric, extra) in [
        ("ib", "infiniband", ""),
        ("roce", "rocev2", "\n[fabric.roce]\nlossless = [3]\nlossy = [0, 6]\n"),
        ("eth", "ethernet", ""),
    ] {
        let text = CLUSTER.replace("NAME", name).replace("FABRIC", fabric) + extra + workload;
        let out = run_scenario(dir.path(), name, &text);
        let mut rd = csv::Reader::from_path(out.join("flows.csv")).unwrap();
        let head = rd.headers().unwrap().clone();
        let col = |c: &str| head.iter().position(|h| h == c).unwrap();
        let (src, dst, fin) = (col("src"), col("dst"), col("finish_ns"));
        let rows: Vec<(String, String, String)> = rd
            .records()
            .map(|r| {
                let r = r.unwrap();
                (r[src].to_string(), r[dst].to_string(), r[fin].to_string())
            })
            .collect();
        assert!(
            rows.len() > 8 && rows.iter().all(|r| !r.2.is_empty()),
            "{name}: {rows:?}"
        );
        finish.push(rows);
    }
    assert_eq!(
        finish[0], finish[1],
        "per-flow finish times differ between the IB and the RoCEv2 cluster"
    );
    assert_eq!(
        finish[0], finish[2],
        "per-flow finish times differ between the IB and the Ethernet cluster"
    );
}

/// A GPU cluster on the lossy base Ethernet fabric keeps its servers' credit-based devices:
/// a 15-to-1 incast across the network (GPU 0 of 15 servers into GPU 0 of server 0, 400G)
/// drops in the network's output-queued switches and nowhere inside a server; the senders'
/// servers hold their GPUs back with PCIe/NVLink credits (credit stalls inside them, no drop).
#[test]
fn ethernet_cluster_drops_only_in_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let senders: Vec<String> = (1..16)
        .map(|s| format!("{{ src = {}, dst = 0, size = \"2MiB\" }}", s * 8))
        .collect();
    let text = CLUSTER.replace("NAME", "eth_incast").replace("FABRIC", "ethernet")
        + &format!("\n[[workload]]\nkind = \"flows\"\nflows = [{}]\n", senders.join(", "));
    let out = run_scenario(dir.path(), "eth_incast", &text);
    let rows = ports(&out);
    let mut net_drops = 0.0;
    for r in &rows {
        if in_server(r) {
            assert_eq!(
                num(r, "drops"),
                0.0,
                "port {} of {} (inside a server)",
                r["port"],
                r["node"]
            );
        } else {
            net_drops += num(r, "drops");
        }
    }
    assert!(net_drops > 0.0, "a 15-to-1 incast on a lossy network drops");
    let sm: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let counter = |k: &str| sm["counters"][k].as_f64().unwrap_or_else(|| panic!("{k}: {sm:#}"));
    assert!(counter("ib_credit_stall_ps") > 0.0, "{sm:#}");
    // The network's drops are data packets and ACKs; a flow's dropped packets are those plus
    // what its receiver discarded out of order (go-back-N).
    assert_eq!(
        sm["packets"]["dropped"].as_f64().unwrap(),
        net_drops - counter("transport_control_drops") + counter("transport_receiver_discards"),
        "{sm:#}"
    );
    // The GPUs' queue pairs recover every drop: all 15 flows complete, by resending.
    assert_eq!(sm["flows"]["completed"].as_u64(), Some(15), "{sm:#}");
    assert!(counter("transport_retransmitted_packets") > 0.0, "{sm:#}");

    // Two PCIe 4.0 servers' GPUs into one GPU of a third: the leaf delivers 400G into the
    // receiving NIC, whose PCIe side takes less; nothing holds the leaf back (no PFC), so the
    // NIC's receive buffer overflows and drops, counted at its network port.
    let text = r#"[scenario]
name = "eth_nic"
[topology]
kind = "cluster"
servers = 3
server = "pcie_gen4"
k = 4
nic_link = { rate = "400Gbps", cable_m = 5 }
fabric_link = { rate = "400Gbps", cable_m = 20 }
[fabric]
kind = "ethernet"
[[workload]]
kind = "flows"
flows = [{ src = 8, dst = 0, size = "4MiB" }, { src = 16, dst = 0, size = "4MiB" }]
"#;
    let out = run_scenario(dir.path(), "eth_nic", text);
    let rows = ports(&out);
    let nic = rows
        .iter()
        .find(|r| r["node"] == "s0.nic0" && r["peer"] == "edge0.0")
        .expect("server 0's NIC port");
    assert!(num(nic, "drops") > 0.0, "the receiving NIC drops: {nic:?}");
    for r in rows.iter().filter(|r| in_server(r)) {
        assert_eq!(
            num(r, "drops"),
            0.0,
            "port {} of {} (inside a server)",
            r["port"],
            r["node"]
        );
    }
}

/// Traffic for another server leaves through the GPU's own NIC (`gpu_nic = "own"`, the
/// default): flows from every GPU of server 0 to GPU 0 of server 1 (other rails but one)
/// each cross their own GPU's PCIe link and NIC and no NVLink; with `gpu_nic = "any"` some of
/// them take another GPU's NIC over NVLink (ECMP over equally short paths), so the check can
/// fail.
#[test]
fn cluster_traffic_leaves_through_the_gpus_own_nic() {
    let dir = tempfile::tempdir().unwrap();
    let flows: Vec<String> = (0..8)
        .map(|g| format!("{{ src = {g}, dst = 8, size = \"256KiB\" }}"))
        .collect();
    let mut nvlink_packets = Vec::new();
    for choice in ["own", "any"] {
        let text = CLUSTER.replace("NAME", choice).replace("FABRIC", "infiniband").replace(
            "fabric_link = { rate = \"400Gbps\", cable_m = 20 }",
            &format!("fabric_link = {{ rate = \"400Gbps\", cable_m = 20 }}\ngpu_nic = \"{choice}\""),
        ) + &format!("\n[[workload]]\nkind = \"flows\"\nflows = [{}]\n", flows.join(", "));
        let out = run_scenario(dir.path(), choice, &text);
        let rows = ports(&out);
        let tx = |node: &str, peer: &str| {
            rows.iter()
                .filter(|r| r["node"] == node && r["peer"] == peer)
                .map(|r| num(r, "packets_tx"))
                .sum::<f64>()
        };
        // Server 0's NICs: NIC g carries GPU g's 64 packets (256 KiB / 4 KiB) to the network.
        let mut nic_data = Vec::new();
        for g in 0..8 {
            let to_net: f64 = rows
                .iter()
                .filter(|r| r["node"] == format!("s0.nic{g}") && !server_node(&r["peer"]))
                .map(|r| num(r, "packets_tx"))
                .sum();
            nic_data.push(to_net);
        }
        let nv: f64 = rows
            .iter()
            .filter(|r| {
                r["node"].starts_with("s0.gpu") && r["node"].ends_with(".hub") && r["peer"].starts_with("s0.nvsw")
            })
            .map(|r| num(r, "packets_tx"))
            .sum();
        if choice == "own" {
            assert_eq!(
                nic_data,
                vec![64.0; 8],
                "every NIC of server 0 carries its own GPU's flow"
            );
            assert_eq!(tx("s0.gpu3.hub", "s0.pcie3"), 64.0);
        }
        nvlink_packets.push(nv);
    }
    assert!(
        nvlink_packets[1] > nvlink_packets[0],
        "ECMP never used another GPU's NIC: {nvlink_packets:?}"
    );
}

/// Bad values of the new keys are refused with the field and the accepted names, exit 2.
#[test]
fn bad_input_queues_and_gpu_nic_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let workload = "\n[[workload]]\nkind = \"permutation\"\nsize = \"1MiB\"\n";
    let cases = [
        (
            CLUSTER.replace("FABRIC", "infiniband") + "\n[fabric.infiniband]\ninput_queues = \"shared\"\n" + workload,
            "fabric.infiniband.input_queues",
            "\"fifo\" or \"voq\"",
        ),
        (
            CLUSTER
                .replace("FABRIC", "infiniband")
                .replace("[fabric]", "gpu_nic = \"nearest\"\n\n[fabric]")
                + workload,
            "topology.gpu_nic",
            "\"own\" or \"any\"",
        ),
    ];
    for (i, (text, field, want)) in cases.iter().enumerate() {
        let p = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&p, text.replace("NAME", "bad")).unwrap();
        let r = fabricsim(&["validate", s(&p)]);
        assert_eq!(r.code, 2, "case {i}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains(field) && r.stderr.contains(want),
            "case {i}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(&format!("bad{i}.toml:")), "case {i}: {}", r.stderr);
    }
}

thread_local! {
    static MIXED_PATH_FINISH_PS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// One packet through a hand-built path that crosses every kind of link the composed engine
/// knows, in one run: GPU -internal-> hub -NVLink-> NVSwitch -NVLink-> hub -PCIe-> PCIe switch
/// -PCIe-> NIC -InfiniBand-> IB switch -InfiniBand-> gateway -Ethernet-> RoCEv2 switch
/// -Ethernet-> NIC -PCIe-> PCIe switch -PCIe-> GPU. Expected delivery computed hop by hop,
/// exact to the ps: each link serializes its own framing of the 4096-B payload (NVLink flits
/// 4352 B on the GPU attachment and NVLinks, PCIe TLPs 4480 B, InfiniBand LRH/BTH/ICRC/VCRC
/// 4122 B, the Ethernet frame 4178 B); the credit devices (server devices, the IB switch and
/// the gateway) are cut-through (forward once the head is in plus their latency, finish no
/// earlier than the tail), the Ethernet switch store-and-forward; endpoints take the whole
/// packet. Flow control per hop: every credit link (NVLink, PCIe, InfiniBand) returns exactly
/// one flow-control packet, no Ethernet port carries one; no PFC frame anywhere.
#[test]
fn one_packet_across_nvlink_pcie_infiniband_and_ethernet_is_exact_per_hop() {
    use fabrics::engine::{DeviceLatency, EngineConfig, RoceConfig};
    use fabrics::ib::IbConfig;
    use fabrics::topology::{LinkInfo, LinkKind, NodeInfo, NodeKind, Topology};
    use sim_core::{BitsPerSec, Bytes, Duration, RunLimits, serialization_time};

    let mut t = Topology::new("mixed");
    let gpu0 = t.add_host("gpu0", None);
    let gpu1 = t.add_host("gpu1", None);
    let node = |t: &mut Topology, kind: NodeKind, name: &str| {
        t.graph.add_node(NodeInfo {
            kind,
            name: name.into(),
            pod: None,
        })
    };
    let hub0 = node(&mut t, NodeKind::GpuHub, "hub0");
    let nvsw = node(&mut t, NodeKind::NvSwitch, "nvsw");
    let hub1 = node(&mut t, NodeKind::GpuHub, "hub1");
    let pcie0 = node(&mut t, NodeKind::PcieSwitch, "pcie0");
    let nic0 = node(&mut t, NodeKind::Nic, "nic0");
    let ibsw = t.add_switch("ibsw", 0, None);
    let gw = t.add_switch("gateway", 1, None);
    let sw = t.add_switch("tor", 0, None);
    let nic1 = node(&mut t, NodeKind::Nic, "nic1");
    let pcie1 = node(&mut t, NodeKind::PcieSwitch, "pcie1");
    let link = |gbps: u64, ns: u64, kind: LinkKind| LinkInfo {
        rate: BitsPerSec::from_gbps(gbps),
        delay: Duration::from_ns(ns),
        kind,
    };
    let path = [
        (gpu0, hub0, link(3600, 0, LinkKind::Internal)),
        (hub0, nvsw, link(400, 10, LinkKind::NvLink)),
        (nvsw, hub1, link(400, 10, LinkKind::NvLink)),
        (hub1, pcie0, link(512, 50, LinkKind::Pcie)),
        (pcie0, nic0, link(512, 50, LinkKind::Pcie)),
        (nic0, ibsw, link(400, 15, LinkKind::InfiniBand)),
        (ibsw, gw, link(400, 35, LinkKind::InfiniBand)),
        (gw, sw, link(400, 25, LinkKind::Ethernet)),
        (sw, nic1, link(400, 25, LinkKind::Ethernet)),
        (nic1, pcie1, link(512, 50, LinkKind::Pcie)),
        (pcie1, gpu1, link(512, 50, LinkKind::Pcie)),
    ];
    for &(a, b, l) in &path {
        t.add_link(a, b, l);
    }
    // A RoCEv2 run: the NICs have the Ethernet adapter's send and receive processing, as the
    // scenario loader gives them (the custom-topology test below).
    let nic = fabrics::engine::ETHERNET_NIC_LATENCY;
    let dl = DeviceLatency {
        nic_tx: nic.tx,
        nic_rx: nic.rx,
        ..DeviceLatency::default()
    };
    let switch_latency = Duration::from_ns(500);
    let cfg = EngineConfig {
        mtu_bytes: 4096,
        header_bytes: fabrics::engine::ETHERNET_ROCE_HEADER_BYTES,
        switch_latency,
        ib: Some(IbConfig::server_layer()),
        roce: Some(RoceConfig::default()),
        device_latency: dl,
        ..EngineConfig::default()
    };
    let flows = vec![fabrics::traffic::FlowSpec {
        class: 3,
        ..fabricsim_tests::flow(0, 1, 4096)
    }];
    let (f, _) = fabricsim_tests::run(&t, cfg, flows, RunLimits::default());

    // (receiver latency, receiver is cut-through, bytes this link serializes)
    let nv = 4352u64;
    let pcie = 4096 + 16 * 24;
    let ib = 4096 + 26;
    let eth = 4096 + 82;
    assert_eq!(dl.ib_switch, Duration::from_ns(130), "the IB switch default");
    let hops = [
        (dl.gpu_hub, true, nv),
        (dl.nvswitch, true, nv),
        (dl.gpu_hub, true, nv),
        (dl.pcie_switch, true, pcie),
        (dl.nic_tx, true, pcie),
        (dl.ib_switch, true, ib),
        (dl.ib_switch, true, ib),
        (switch_latency, false, eth),
        (dl.nic_rx, true, eth),
        (dl.pcie_switch, true, pcie),
        (Duration::ZERO, false, pcie),
    ];
    let (mut start, mut tail) = (0u64, 0u64);
    for (k, &(lat, cut, bytes)) in hops.iter().enumerate() {
        let l = path[k].2;
        let done = (start + serialization_time(Bytes(bytes), l.rate).ps()).max(tail);
        tail = done + l.delay.ps();
        start = if cut { start } else { done } + l.delay.ps() + lat.ps();
    }
    let rec = &f.flow_records()[0];
    assert_eq!(rec.finish.map(|t| t.ps()), Some(start), "delivery at the analytic time");
    MIXED_PATH_FINISH_PS.with(|c| c.set(start));

    // Flow control on each hop: a credit link's receiver returns one flow-control packet (on
    // the port that sends back over it); Ethernet links carry none, and no PFC frame at all.
    let ibs = f.ib().expect("the credit layer");
    let roce = f.roce().expect("the network's RoCEv2 layer");
    for (k, &(a, b, l)) in path.iter().enumerate() {
        let back = f
            .ports()
            .iter()
            .position(|p| p.node == b.index() as u32 && p.peer_node == a.index() as u32)
            .unwrap();
        let fc = ibs.port_stats[back].fc_packets_tx;
        let want = u64::from(l.kind != LinkKind::Ethernet);
        assert_eq!(fc, want, "hop {k} ({:?}): flow-control packets back", l.kind);
    }
    assert_eq!(roce.totals.pause_frames, 0);
    assert_eq!(f.totals().link_hops, 11 + 9, "11 data hops and 9 credit updates");
}

/// The gateway's back-pressure is explicit on both sides: an incast from two Ethernet hosts
/// into a host behind an InfiniBand switch fills the gateway's Ethernet input, which PAUSEs the
/// RoCEv2 switch (PFC frames from the gateway), while the InfiniBand links run on credits
/// (flow-control packets, no PFC frame on them) and nothing is dropped. h0, h1 -Ethernet-> tor
/// -Ethernet-> gateway -InfiniBand-> IB switch -InfiniBand-> h2; 100G Ethernet, 50G IB (the
/// gateway's Ethernet input is where the traffic backs up).
#[test]
fn gateway_pauses_ethernet_and_runs_credits_on_infiniband() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"[scenario]
name = "gateway"
[topology]
kind = "custom"
hosts = 3
switches = 3
links = [
  { a = "h0", b = "s0", rate = "100Gbps", delay = "100ns", kind = "ethernet" },
  { a = "h1", b = "s0", rate = "100Gbps", delay = "100ns", kind = "ethernet" },
  { a = "s0", b = "s1", rate = "100Gbps", delay = "100ns", kind = "ethernet" },
  { a = "s1", b = "s2", rate = "50Gbps", delay = "100ns", kind = "infiniband" },
  { a = "s2", b = "h2", rate = "50Gbps", delay = "100ns", kind = "infiniband" },
]
[fabric]
kind = "rocev2"
[[workload]]
kind = "flows"
class = 3
flows = [{ src = 0, dst = 2, size = "4MiB" }, { src = 1, dst = 2, size = "4MiB" }]
"#;
    let out = run_scenario(dir.path(), "gateway", text);
    let sm: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(sm["flows"]["completed"], 2, "{sm:#}");
    assert_eq!(sm["packets"]["dropped"], 0, "{sm:#}");
    assert!(sm["counters"]["ib_fc_packets"].as_u64().unwrap() > 0, "{sm:#}");
    // PAUSE frames: sent only by the gateway towards the RoCEv2 switch (and by the switch
    // towards the hosts as the pause spreads), never on an InfiniBand link.
    let rows = ports(&out);
    let row = |node: &str, peer: &str| {
        rows.iter()
            .find(|r| r["node"] == node && r["peer"] == peer)
            .unwrap_or_else(|| panic!("no port {node} -> {peer}"))
    };
    let pauses = |r: &BTreeMap<String, String>| num(r, "pause_frames_tx");
    assert!(pauses(row("s1", "s0")) > 0.0, "the gateway pauses the RoCEv2 switch");
    for (n, p) in [("s1", "s2"), ("s2", "s1"), ("s2", "h2"), ("h2", "s2")] {
        assert_eq!(pauses(row(n, p)), 0.0, "no PAUSE on the InfiniBand link {n} -> {p}");
    }
    // The bottleneck is the InfiniBand path: the two flows share it, so both finish at about
    // twice one flow's time alone (8 MiB at 50G of IB framing), within 3 %.
    let sim_ns = sm["run"]["sim_time_ns"].as_f64().unwrap();
    let ideal_ns = (8u64 << 20) as f64 / 4096.0 * (4096.0 + 26.0) * 8.0 / 50.0;
    assert!(
        (sim_ns / ideal_ns - 1.0).abs() < 0.03,
        "finished at {sim_ns} ns, the shared IB bottleneck alone takes {ideal_ns} ns"
    );
}

/// The same mixed path written as a scenario (`custom` topology with `devices` and per-link
/// `kind`, `[fabric] kind = "rocev2"`; s0 the InfiniBand switch, s1 the gateway, s2 the RoCEv2
/// switch): it runs, the packet arrives at the same picosecond as in the engine-level test
/// above, nine credit updates and no PFC frame.
#[test]
fn custom_topology_mixes_link_kinds() {
    one_packet_across_nvlink_pcie_infiniband_and_ethernet_is_exact_per_hop();
    let want_ps = MIXED_PATH_FINISH_PS.with(|c| c.get());
    let dir = tempfile::tempdir().unwrap();
    let text = r#"[scenario]
name = "mixed"
[topology]
kind = "custom"
hosts = 2
switches = 3
devices = ["gpu_hub", "nvswitch", "gpu_hub", "pcie_switch", "nic", "nic", "pcie_switch"]
links = [
  { a = "h0", b = "d0", rate = "3600Gbps", delay = "0ns", kind = "internal" },
  { a = "d0", b = "d1", rate = "400Gbps", delay = "10ns", kind = "nvlink" },
  { a = "d1", b = "d2", rate = "400Gbps", delay = "10ns", kind = "nvlink" },
  { a = "d2", b = "d3", rate = "512Gbps", delay = "50ns", kind = "pcie" },
  { a = "d3", b = "d4", rate = "512Gbps", delay = "50ns", kind = "pcie" },
  { a = "d4", b = "s0", rate = "400Gbps", delay = "15ns", kind = "infiniband" },
  { a = "s0", b = "s1", rate = "400Gbps", delay = "35ns", kind = "infiniband" },
  { a = "s1", b = "s2", rate = "400Gbps", delay = "25ns", kind = "ethernet" },
  { a = "s2", b = "d5", rate = "400Gbps", delay = "25ns", kind = "ethernet" },
  { a = "d5", b = "d6", rate = "512Gbps", delay = "50ns", kind = "pcie" },
  { a = "d6", b = "h1", rate = "512Gbps", delay = "50ns", kind = "pcie" },
]
[fabric]
kind = "rocev2"
[[workload]]
kind = "flows"
class = 3
flows = [{ src = 0, dst = 1, size = 4096 }]
"#;
    let out = run_scenario(dir.path(), "mixed", text);
    let mut rd = csv::Reader::from_path(out.join("flows.csv")).unwrap();
    let head = rd.headers().unwrap().clone();
    let fin = head.iter().position(|h| h == "finish_ns").unwrap();
    let row = rd.records().next().unwrap().unwrap();
    let finish_ps = (row[fin].parse::<f64>().unwrap() * 1000.0).round() as u64;
    assert_eq!(finish_ps, want_ps);
    let sm: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(sm["counters"]["ib_fc_packets"], 9);
    assert_eq!(sm["counters"]["roce_pause_frames_sent"], 0);
    assert_eq!(sm["counters"]["link_hops"], 20);
    // A bad device kind or link kind is refused with the field and the accepted names.
    for (from, to, field) in [
        (
            "\"nic\", \"pcie_switch\"]",
            "\"nic\", \"bridge\"]",
            "topology.devices[6]",
        ),
        ("kind = \"internal\"", "kind = \"usb\"", "topology.links[0].kind"),
    ] {
        let p = dir.path().join("bad.toml");
        std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
        let r = fabricsim(&["validate", s(&p)]);
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains(field) && r.stderr.contains("expected"),
            "{}",
            r.stderr
        );
    }
    // A link of a discipline the run cannot model is refused where it is written: Ethernet in
    // an InfiniBand run (no PFC switches), InfiniBand in a base Ethernet run (no credits).
    // InfiniBand links carry at most 4096 B of payload: a larger MTU is refused at `fabric.mtu`.
    let p = dir.path().join("bad.toml");
    std::fs::write(
        &p,
        text.replace("kind = \"rocev2\"", "kind = \"rocev2\"\nmtu = \"9000B\""),
    )
    .unwrap();
    let r = fabricsim(&["validate", s(&p)]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("fabric.mtu") && r.stderr.contains("4096"),
        "{}",
        r.stderr
    );
    for (fabric, field) in [
        ("infiniband", "topology.links[7].kind"),
        ("ethernet", "topology.links[5].kind"),
    ] {
        let p = dir.path().join("bad.toml");
        std::fs::write(&p, text.replace("kind = \"rocev2\"", &format!("kind = \"{fabric}\""))).unwrap();
        let r = fabricsim(&["validate", s(&p)]);
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(field) && r.stderr.contains("gateway"), "{}", r.stderr);
    }
}
