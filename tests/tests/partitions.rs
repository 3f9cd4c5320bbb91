//! `fabricsim run --threads N` (the fabric split by pod, one partition per thread,
//! `fabrics/src/engine/partition.rs`): every output file but `timing.json` is byte-for-byte
//! the single-threaded run's, on RoCEv2 with PFC pauses, on the base Ethernet fabric with
//! drops and go-back-N, with DCQCN and ECN marks, at its end time, folded into one fabric to
//! go on on one thread when every flow may finish or the windows hold little work, run again
//! on one thread when the event budget runs out, on a leaf-spine split by leaf, and on
//! InfiniBand with credit stalls whose congestion-tree causes lie in another partition; what
//! cannot be split is refused with the reason.

use fabricsim_tests::{catalogue, fabricsim, outputs, s};
use std::path::{Path, PathBuf};

/// A k=4 fat-tree (4 pods) permutation of `size` bytes per host, links of 100 Gb/s and
/// 1 us: `fabric` is the `[fabric]` table and any table after it.
fn fat_tree(name: &str, fabric: &str, size: &str, end: &str) -> String {
    format!(
        r#"[scenario]
name = "{name}"
seed = 7
[topology]
kind = "fat_tree"
k = 4
host_link = {{ rate = "100Gbps", delay = "1us" }}
fabric_link = {{ rate = "100Gbps", delay = "1us" }}
{fabric}
[[workload]]
kind = "permutation"
size = "{size}"
[run]
end_time = "{end}"
"#
    )
}

const ROCE_PFC: &str = r#"[fabric]
kind = "rocev2"
mtu = "4000B"
[fabric.roce]
buffer = "1MiB"
lossless = [3]
lossy = [0, 6]
alpha_shift = 4
acks = true
[fabric.latency]
nic_tx = "0s"
nic_rx = "0s"
"#;

/// [`ROCE_PFC`] with ECN marking by the DCQCN paper's RED and DCQCN at the senders.
fn dcqcn() -> String {
    ROCE_PFC.replace(
        "acks = true",
        "acks = true\necn = { preset = \"dcqcn_paper\" }\ncc = { kind = \"dcqcn\", preset = \"paper\" }",
    )
}

/// Tail drop at 64 KiB per port: many drops, recovered by go-back-N.
const ETHERNET_DROPS: &str = r#"[fabric]
kind = "ethernet"
mtu = "4000B"
buffer = { kind = "per_port_tail_drop", size = "64KiB" }
"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    file
}

/// Runs `file` on one thread and on `threads`, asserts both succeed and wrote the same
/// files; returns the single-threaded summary.
fn same_on(dir: &Path, file: &Path, threads: u32) -> serde_json::Value {
    let one = dir.join(format!("{}-1", file.file_stem().unwrap().to_string_lossy()));
    let many = dir.join(format!("{}-{threads}", file.file_stem().unwrap().to_string_lossy()));
    let r1 = fabricsim(&["run", s(file), "--out", s(&one), "-q"]);
    assert_eq!(r1.code, 0, "{}", r1.stderr);
    let rn = fabricsim(&[
        "run",
        s(file),
        "--out",
        s(&many),
        "-q",
        "--threads",
        &threads.to_string(),
    ]);
    assert_eq!(rn.code, 0, "{}", rn.stderr);
    let (a, b) = (outputs(&one), outputs(&many));
    assert_eq!(
        a.iter().map(|f| &f.0).collect::<Vec<_>>(),
        b.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(
            x == y,
            "{name} differs between 1 and {threads} threads ({})",
            file.display()
        );
    }
    serde_json::from_slice(&a.iter().find(|f| f.0 == "summary.json").unwrap().1).unwrap()
}

#[test]
fn rocev2_with_pauses_is_the_same_on_two_and_four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "roce", &fat_tree("roce", ROCE_PFC, "1GB", "300us"));
    let summary = same_on(dir.path(), &file, 2);
    // The comparison means something: PAUSE frames crossed the fabric, packets crossed pods.
    let roce: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("roce-1/roce.json")).unwrap()).unwrap();
    assert!(roce["totals"]["pause_frames"].as_u64().unwrap() > 0, "{roce}");
    assert!(summary["packets"]["delivered"].as_u64().unwrap() > 1000, "{summary}");
    assert_eq!(summary["run"]["outcome"], "end_time");
    let t = timing(dir.path(), "roce", 2);
    assert!(t["one_thread_from_ns"].is_null(), "split to the end: {t}");
    same_on(dir.path(), &file, 4);
}

/// DCQCN: each egress port draws its ECN marks from a stream of its own
/// (`models/marking.rs`), so a partition makes the same draws as the whole run; CNPs cross
/// partitions like any packet.
#[test]
fn dcqcn_with_ecn_marks_is_the_same_on_two_and_four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "dcqcn", &fat_tree("dcqcn", &dcqcn(), "1GB", "300us"));
    same_on(dir.path(), &file, 2);
    let roce: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("dcqcn-1/roce.json")).unwrap()).unwrap();
    let totals = &roce["totals"];
    assert!(totals["ecn_marked"].as_u64().unwrap() > 20, "{totals}");
    assert!(totals["cnps_received"].as_u64().unwrap() > 10, "{totals}");
    same_on(dir.path(), &file, 4);
}

#[test]
fn ethernet_with_drops_is_the_same_on_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "eth", &fat_tree("eth", ETHERNET_DROPS, "1GB", "300us"));
    let summary = same_on(dir.path(), &file, 2);
    assert!(summary["packets"]["dropped"].as_u64().unwrap() > 0, "{summary}");
}

/// `timing.json` of the run of `stem` on `threads` threads (`same_on`'s results).
fn timing(dir: &Path, stem: &str, threads: u32) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{stem}-{threads}/timing.json"))).unwrap()).unwrap()
}

/// From when (simulated ns) the run on `threads` threads went on on one thread; asserts it
/// was split first and never run again from the start.
fn folded_at_ns(dir: &Path, stem: &str, threads: u32) -> f64 {
    let t = timing(dir, stem, threads);
    assert_eq!(t["threads"], threads, "{t}");
    assert_eq!(t["ran_again_on_one_thread"], false, "{t}");
    let at = t["one_thread_from_ns"]
        .as_f64()
        .unwrap_or_else(|| panic!("never folded: {t}"));
    assert!(at > 0.0, "folded before it split: {t}");
    at
}

/// Every flow finishes before the end time, so the run ends at an event only the whole
/// fabric can place: the partitions fold into one fabric once every flow's bytes have
/// crossed to its destination's partition, and the run goes on on one thread from there,
/// with the same results.
#[test]
fn a_run_whose_flows_all_finish_folds_and_goes_on_on_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "done", &fat_tree("done", ROCE_PFC, "200kB", "10ms"));
    let summary = same_on(dir.path(), &file, 2);
    assert_eq!(summary["run"]["outcome"], "completed", "{summary}");
    let end_ns = summary["run"]["sim_time_ns"].as_f64().unwrap();
    let at = folded_at_ns(dir.path(), "done", 2);
    assert!(at < end_ns, "folded at {at} ns, after the end at {end_ns} ns");
    // On one thread: from the start.
    assert_eq!(timing(dir.path(), "done", 1)["one_thread_from_ns"], 0.0);
}

/// A finite workload with DCQCN (Poisson arrivals of WebSearch sizes): flows start and end
/// throughout, senders' and receivers' queue-pair state (rates, timers, CNP pacing,
/// sequence numbers) is folded from the partition of each end.
#[test]
fn a_finite_dcqcn_workload_folds_the_queue_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let text = fat_tree("ws", &dcqcn(), "1MB", "20ms").replace(
        "kind = \"permutation\"\nsize = \"1MB\"",
        &format!(
            "kind = \"poisson\"\nload = 0.5\ncdf = \"{}\"\nduration = \"300us\"\nclass = 3",
            catalogue("cdf/WebSearch_distribution.txt").display()
        ),
    );
    let file = write(dir.path(), "ws", &text);
    let summary = same_on(dir.path(), &file, 2);
    assert_eq!(summary["run"]["outcome"], "completed", "{summary}");
    assert!(summary["flows"]["completed"].as_u64().unwrap() > 20, "{summary}");
    folded_at_ns(dir.path(), "ws", 2);
    same_on(dir.path(), &file, 4);
}

/// Drops and go-back-N on a run that finishes: the senders' rewinds and the receivers'
/// expected sequence numbers fold from their partitions.
#[test]
fn ethernet_with_drops_finishing_folds_its_retransmissions() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "ethdone",
        &fat_tree("ethdone", ETHERNET_DROPS, "2MB", "50ms"),
    );
    let summary = same_on(dir.path(), &file, 2);
    assert_eq!(summary["run"]["outcome"], "completed", "{summary}");
    assert!(summary["packets"]["dropped"].as_u64().unwrap() > 0, "{summary}");
    folded_at_ns(dir.path(), "ethdone", 2);
}

/// Windows that hold little work (two senders on a fat-tree of 16 hosts): the meeting at
/// each window's end would cost more than the split saves, so after four looks at the pace
/// (about a thousand windows) the run goes on on one thread, long before its flows could end.
#[test]
fn a_run_with_little_work_per_window_goes_on_on_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let text = fat_tree("thin", ROCE_PFC, "1MB", "20ms").replace(
        "kind = \"permutation\"\nsize = \"1MB\"",
        // Hosts 0 and 1 in the first pod, 15 in the last: different partitions.
        "kind = \"flows\"\nflows = [{ src = 0, dst = 15, size = \"60MB\" }, { src = 1, dst = 15, size = \"60MB\" }]",
    );
    let file = write(dir.path(), "thin", &text);
    let summary = same_on(dir.path(), &file, 2);
    let end_ns = summary["run"]["sim_time_ns"].as_f64().unwrap();
    let at = folded_at_ns(dir.path(), "thin", 2);
    assert!(at < end_ns / 4.0, "folded at {at} ns of {end_ns} ns");
}

/// An incast whose senders and receiver all sit in the first half of the pods: split by
/// pod number, one partition would hold every flow (and fold at once, with nothing to
/// cross); split by the work the flows' paths promise, the receiver's pod is a partition of
/// its own and the run stays split until its flows could end.
#[test]
fn an_incast_is_split_by_its_work_not_by_pod_number() {
    let dir = tempfile::tempdir().unwrap();
    let text = fat_tree("incast", ROCE_PFC, "1MB", "20ms")
        .replace("\"100Gbps\"", "\"400Gbps\"")
        .replace(
            "kind = \"permutation\"\nsize = \"1MB\"",
            // Host 0 in pod 0 from hosts 1 to 7, in pods 0 and 1 of four.
            "kind = \"incast\"\nreceiver = 0\nn_senders = 7\nsize = \"10MB\"\nclass = 3",
        );
    let file = write(dir.path(), "incast", &text);
    let summary = same_on(dir.path(), &file, 2);
    assert_eq!(summary["counters"]["flows_completed"], 7, "{summary}");
    let end_ns = summary["run"]["sim_time_ns"].as_f64().unwrap();
    let at = folded_at_ns(dir.path(), "incast", 2);
    assert!(at > 0.9 * end_ns, "folded at {at} ns of {end_ns} ns");
}

/// The event budget runs out while the run is split: the last event's place among the
/// partitions' is the whole fabric's to say, so the run starts again on one thread.
#[test]
fn a_run_that_spends_its_event_budget_is_run_again_on_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let text = fat_tree("budget", ROCE_PFC, "1GB", "300us").replace("[run]\n", "[run]\nmax_events = 3000\n");
    let file = write(dir.path(), "budget", &text);
    let summary = same_on(dir.path(), &file, 2);
    assert_eq!(summary["run"]["outcome"], "event_budget", "{summary}");
    let t = timing(dir.path(), "budget", 2);
    assert_eq!(t["ran_again_on_one_thread"], true, "{t}");
}

/// `--threads auto`: one partition per core as far as the fabric splits (the same files as
/// on one thread), and one thread, not a refusal, where it cannot be split.
#[test]
fn threads_auto_splits_what_it_can_and_runs_the_rest_on_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let samples = ROCE_PFC.replace("acks = true", "acks = true\nrate_sample = \"10us\"");
    for (stem, fabric, want) in [("autoroce", ROCE_PFC, cores.min(4)), ("autosamples", &samples, 1)] {
        let file = write(dir.path(), stem, &fat_tree(stem, fabric, "1MiB", "50us"));
        let one = dir.path().join(format!("{stem}-1"));
        let auto = dir.path().join(format!("{stem}-auto"));
        let r1 = fabricsim(&["run", s(&file), "--out", s(&one), "-q"]);
        let ra = fabricsim(&["run", s(&file), "--out", s(&auto), "-q", "--threads", "auto"]);
        assert_eq!((r1.code, ra.code), (0, 0), "{stem}: {}{}", r1.stderr, ra.stderr);
        assert!(outputs(&one) == outputs(&auto), "{stem}: files differ");
        let t: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(auto.join("timing.json")).unwrap()).unwrap();
        assert_eq!(t["threads"], want.max(1), "{stem}: {t}");
    }
    let r = fabricsim(&["run", "x.toml", "--threads", "0"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("from 1 to 64 or `auto`"), "{}", r.stderr);
}

/// A time series: the windows end at its sample times, where every partition's ports and
/// flows are sampled at once; the same rows, in CSV so the comparison reads them, whether
/// the run stays split to its end or folds and goes on on one thread.
#[test]
fn a_time_series_is_the_same_on_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let sampled = "[output]\nsample = \"7us\"\nsample_ports = \"all\"\nsample_format = \"csv\"\n[run]\n";
    for (stem, size, end) in [("series", "1GB", "300us"), ("seriesdone", "200kB", "10ms")] {
        let text = fat_tree(stem, ROCE_PFC, size, end).replace("[run]\n", sampled);
        let file = write(dir.path(), stem, &text);
        same_on(dir.path(), &file, 2);
        let rows = std::fs::read_to_string(dir.path().join(format!("{stem}-2/timeseries_ports.csv"))).unwrap();
        assert!(rows.lines().count() > 100, "{stem}: {} rows", rows.lines().count());
        let flows = std::fs::read_to_string(dir.path().join(format!("{stem}-2/timeseries_flows.csv"))).unwrap();
        assert!(
            flows.lines().count() > 16,
            "{stem}: {} flow rows",
            flows.lines().count()
        );
    }
    assert!(timing(dir.path(), "series", 2)["one_thread_from_ns"].is_null());
    folded_at_ns(dir.path(), "seriesdone", 2);
}

/// HPCC: the in-band telemetry a packet collects at switch egresses is kept beside the arena
/// by packet id, and travels with the packet to another partition and through a fold.
#[test]
fn hpcc_telemetry_travels_with_its_packets() {
    let dir = tempfile::tempdir().unwrap();
    let hpcc = ROCE_PFC.replace("acks = true", "acks = true\ncc = { kind = \"hpcc\" }");
    let permutation = fat_tree("hpcc", &hpcc, "1GB", "300us");
    // Three long flows between pods: the windows hold little work, so the partitions fold
    // with packets (and their records) in flight on both sides.
    let thin = fat_tree("hpccthin", &hpcc, "1MB", "5ms").replace(
        "kind = \"permutation\"\nsize = \"1MB\"",
        "kind = \"flows\"\nflows = [{ src = 0, dst = 15, size = \"20MB\" }, { src = 1, dst = 15, size = \"20MB\" }, \
         { src = 14, dst = 2, size = \"20MB\" }]",
    );
    for (stem, text) in [("hpcc", permutation), ("hpccthin", thin)] {
        let file = write(dir.path(), stem, &text);
        let summary = same_on(dir.path(), &file, 2);
        assert!(summary["packets"]["delivered"].as_u64().unwrap() > 100, "{summary}");
    }
    folded_at_ns(dir.path(), "hpccthin", 2);
}

/// A k=8 fat-tree (8 pods) on 3 threads: groups of unequal size (3, 3 and 2 pods, the core
/// switches split alike), with DCQCN, PAUSE frames and a time series at once.
#[test]
fn uneven_groups_on_a_larger_fat_tree_are_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let text = fat_tree("k8", &dcqcn(), "1GB", "100us")
        .replace("k = 4", "k = 8")
        .replace(
            "[run]\n",
            "[output]\nsample = \"10us\"\nsample_format = \"csv\"\n[run]\n",
        );
    let file = write(dir.path(), "k8", &text);
    same_on(dir.path(), &file, 3);
    let roce: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("k8-1/roce.json")).unwrap()).unwrap();
    assert!(roce["totals"]["pause_frames"].as_u64().unwrap() > 0, "{roce}");
    assert!(roce["totals"]["ecn_marked"].as_u64().unwrap() > 0, "{roce}");
    assert!(timing(dir.path(), "k8", 3)["one_thread_from_ns"].is_null());
}

/// A leaf-spine has no pods: it is split by leaf switch, each with its hosts.
#[test]
fn a_leaf_spine_is_split_by_leaf() {
    let dir = tempfile::tempdir().unwrap();
    same_on(dir.path(), &catalogue("roce_v2_leaf_spine_permutation.toml"), 2);
}

#[test]
fn what_cannot_be_split_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            std::fs::read_to_string(catalogue("cluster16_hgx_ndr_allreduce.toml")).unwrap(),
            2,
            // The hierarchical AllReduce sends its next chunk once the last is delivered.
            "starts when a flow to host",
        ),
        (fat_tree("pods", ROCE_PFC, "1MiB", "50us"), 8, "has 4 for 8 threads"),
        (
            fat_tree(
                "samples",
                &ROCE_PFC.replace("acks = true", "acks = true\nrate_sample = \"10us\""),
                "1MiB",
                "50us",
            ),
            2,
            "rate samples",
        ),
    ];
    // A ring of switches can close a loop of PAUSE frames across partitions.
    let ring = catalogue("roce_ring_deadlock.toml");
    let out = dir.path().join("ring-out");
    let r = fabricsim(&["run", s(&ring), "--out", s(&out), "-q", "--threads", "2"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("of one tier are linked"), "{}", r.stderr);
    for (i, (text, threads, why)) in cases.iter().enumerate() {
        let file = write(dir.path(), &format!("case{i}"), text);
        let out = dir.path().join(format!("case{i}-out"));
        let r = fabricsim(&[
            "run",
            s(&file),
            "--out",
            s(&out),
            "-q",
            "--threads",
            &threads.to_string(),
        ]);
        assert_eq!(r.code, 2, "case {i}: {}", r.stderr);
        assert!(
            r.stderr.contains("refusing --threads") && r.stderr.contains(why),
            "case {i}: {}",
            r.stderr
        );
        assert!(!out.exists(), "case {i}: nothing is written");
    }
}

const IB: &str = r#"[fabric]
kind = "infiniband"
mtu = "4KiB"
"#;

/// The congestion tree of an InfiniBand run: (stalled port, port it waits for, ns).
fn congestion_tree(summary: &serde_json::Value) -> Vec<(String, String, f64)> {
    summary["congestion_tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = |k: &str| e[k].as_str().unwrap().to_owned();
            (name("stalled"), name("waits_for"), e["stall_ns"].as_f64().unwrap())
        })
        .collect()
}

/// InfiniBand: credits cross between partitions in flow-control packets taken in lazily, and
/// a stall at a port whose far end is another partition's names the cause that partition's
/// buffer held at that instant (asked after the window, answered with the next): the tree of
/// the catalogue's congestion-tree run (leaf switches on both sides of its one spine, with
/// virtual output queues) is the single-threaded one on 2 and 4 threads.
#[test]
fn infiniband_congestion_tree_is_the_same_on_two_and_four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(catalogue("ib_ndr_congestion_tree.toml")).unwrap() + "[output]\nhotspots = 50\n";
    let file = write(dir.path(), "tree", &text);
    let summary = same_on(dir.path(), &file, 2);
    same_on(dir.path(), &file, 4);
    // It means something: leaves stall on the spine, whose buffers are another partition's.
    let tree = congestion_tree(&summary);
    let across = tree
        .iter()
        .filter(|(a, b, ns)| a.starts_with("leaf") && b.starts_with("spine") && *ns > 0.0)
        .count();
    assert!(across >= 2, "{tree:?}");
    // Switches of one tier linked (refused on RoCEv2, whose deadlock search runs as it goes:
    // an InfiniBand credit loop is looked for after the run, in the folded fabric).
    same_on(dir.path(), &catalogue("ib_long_cable_credit_starvation.toml"), 2);
}

/// InfiniBand on a fat-tree with input-FIFO switches (the head of line is the cause) and
/// with IB congestion control (FECN, BECN back across partitions), at its end time and
/// finishing with a fold on one thread.
#[test]
fn infiniband_fifo_switches_and_congestion_control_are_the_same_on_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = IB.replace(
        "mtu = \"4KiB\"",
        "mtu = \"4KiB\"\n[fabric.infiniband]\ninput_queues = \"fifo\"",
    );
    let cc = format!("{IB}[fabric.infiniband.cc]\nthreshold = 15\nmarking_rate = 3\n");
    // Twelve hosts of three pods send to one host under each edge switch of pod 0: a core's
    // packets at an aggregation switch's input wait for either edge, so the cause a core
    // port's stall names changes within windows.
    let flows: Vec<String> = (4..16)
        .map(|src| format!("{{ src = {src}, dst = {}, size = \"1GB\" }}", [0, 2][src % 2]))
        .collect();
    let incast = fat_tree("fifoincast", &fifo, "1GB", "200us").replace(
        "kind = \"permutation\"\nsize = \"1GB\"",
        &format!("kind = \"flows\"\nflows = [{}]", flows.join(", ")),
    );
    let file = write(dir.path(), "fifoincast", &incast);
    let summary = same_on(dir.path(), &file, 2);
    assert!(congestion_tree(&summary).iter().any(|(a, _, _)| a.starts_with("core")));
    // With a time series of every port's credit stalls, sampled across the partitions.
    let sampled = "[output]\nsample = \"5us\"\nsample_ports = \"all\"\nsample_format = \"csv\"\n[run]\n";
    for (stem, fabric, size, end) in [
        ("fifo", fifo.as_str(), "1GB", "200us"),
        ("cc", cc.as_str(), "1GB", "200us"),
        ("ccdone", cc.as_str(), "300kB", "10ms"),
    ] {
        let text = fat_tree(stem, fabric, size, end);
        let text = if stem == "cc" {
            text.replace("[run]\n", sampled)
        } else {
            text
        };
        let file = write(dir.path(), stem, &text);
        let summary = same_on(dir.path(), &file, 2);
        let counters = &summary["counters"];
        assert!(
            counters["ib_credit_stall_ps"].as_u64().unwrap() > 0,
            "{stem}: {counters}"
        );
        assert!(!congestion_tree(&summary).is_empty(), "{stem}");
        if stem.starts_with("cc") {
            assert!(counters["ib_becn_received"].as_u64().unwrap() > 0, "{stem}: {counters}");
        }
        if stem == "cc" {
            let rows = std::fs::read_to_string(dir.path().join("cc-2/timeseries_ports.csv")).unwrap();
            let stalled = rows.lines().skip(1).filter(|l| !l.ends_with(",0.000000")).count();
            assert!(
                rows.lines().next().unwrap().ends_with("credit_stall_frac") && stalled > 10,
                "{rows}"
            );
        }
        if stem == "ccdone" {
            assert_eq!(summary["counters"]["flows_completed"], 16, "{stem}: {summary}");
            assert!(folded_at_ns(dir.path(), stem, 2) > 0.0);
        }
    }
}

/// A cluster of GPU servers (NVLink and PCIe credit links inside, InfiniBand between): each
/// server goes with the pod of the leaves it hangs from, so no link inside a server lies
/// between partitions.
#[test]
fn gpu_servers_stay_whole_on_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(catalogue("cluster16_hgx_ndr_allreduce.toml")).unwrap();
    let head = &text[..text.find("[[workload]]").unwrap()];
    let text = format!("{head}[[workload]]\nkind = \"permutation\"\nsize = \"2MiB\"\n[run]\nend_time = \"1ms\"\n");
    let file = write(dir.path(), "hgx", &text);
    let summary = same_on(dir.path(), &file, 2);
    assert!(summary["packets"]["delivered"].as_u64().unwrap() > 1000, "{summary}");
    // Split until every flow may end: the lookahead is a fabric cable's, not NVLink's.
    assert!(folded_at_ns(dir.path(), "hgx", 2) > 10_000.0);
}

/// Flows started by other flows' completion split where each starts in the partition its
/// dependencies complete in: a closed loop's next request leaves a client when the answer to
/// the last has reached it. Fifteen clients in all four pods ask one server, on InfiniBand
/// and on RoCEv2; the flows' completion times (a dependent flow's start is known only to its
/// source's partition) are the single-threaded ones.
#[test]
fn a_closed_loop_splits_where_each_flow_starts_beside_its_dependencies() {
    let dir = tempfile::tempdir().unwrap();
    let closed_loop = "[[workload]]\nkind = \"closed_loop\"\nname = \"answers\"\nserver = 0\nn_clients = 15\n\
                       request_size = \"64KiB\"\nresponse_size = \"1KiB\"\nrequests = 40\nthink_time = \"2us\"\n[run]\n";
    for (stem, fabric) in [("loopib", IB), ("looproce", ROCE_PFC)] {
        let text = fat_tree(stem, fabric, "1MiB", "100ms");
        let head = &text[..text.find("[[workload]]").unwrap()];
        let tail = &text[text.find("[run]\n").unwrap() + "[run]\n".len()..];
        let file = write(dir.path(), stem, &format!("{head}{closed_loop}{tail}"));
        let summary = same_on(dir.path(), &file, 2);
        assert_eq!(summary["counters"]["flows_completed"], 1200, "{stem}: {summary}");
        assert!(
            folded_at_ns(dir.path(), stem, 2) > 50_000.0,
            "{stem}: split for a while"
        );
    }
}
