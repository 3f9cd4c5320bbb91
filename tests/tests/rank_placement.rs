//! Rank placement (issue 14): a collective on any set of GPUs in any ring order (`ranks` as a
//! list), and multi-channel rings that cross between servers through every GPU's NIC
//! (`channel_rings = "rotated"`), checked on the flows the run actually sent.

use fabricsim_tests::{fabricsim, s};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Two HGX H100 servers (8 GPUs and 8 NICs each) on a k=4 NDR fat-tree, one ring AllReduce.
fn scenario(dir: &Path, name: &str, workload_extra: &str) -> PathBuf {
    let text = format!(
        r#"[scenario]
name = "{name}"
seed = 1

[topology]
kind = "cluster"
servers = 2
server = "hgx_h100"
k = 4
nic_link = {{ rate = "400Gbps", cable_m = 5 }}
fabric_link = {{ rate = "400Gbps", cable_m = 20 }}

[fabric]
kind = "infiniband"

[[workload]]
kind = "collective"
op = "all_reduce"
algorithm = "ring"
size = "8MiB"
{workload_extra}
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `file`; returns the (src, dst) pair of every flow and the busbw (GB/s) of the run.
fn run(dir: &Path, file: &Path) -> (Vec<(u32, u32)>, f64) {
    let out = dir.join(file.file_stem().unwrap());
    let r = fabricsim(&["run", s(file), "--out", s(&out), "--quiet"]);
    assert_eq!(r.code, 0, "{r:?}");
    let mut rd = csv::Reader::from_path(out.join("flows.csv")).unwrap();
    let head = rd.headers().unwrap().clone();
    let col = |c: &str| head.iter().position(|h| h == c).unwrap();
    let (src, dst) = (col("src"), col("dst"));
    let pairs = rd
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[src].parse().unwrap(), r[dst].parse().unwrap())
        })
        .collect();
    let sm: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let busbw = sm["collectives"][0]["busbw_GBps"]
        .as_f64()
        .unwrap_or_else(|| panic!("no busbw in {sm:#}"));
    (pairs, busbw)
}

#[test]
fn a_rank_list_sets_the_gpus_and_the_ring_order() {
    let dir = tempfile::tempdir().unwrap();
    let order = [3u32, 12, 5, 9];
    let file = scenario(dir.path(), "list", "ranks = [3, 12, 5, 9]");
    let (pairs, _) = run(dir.path(), &file);
    let used: BTreeSet<(u32, u32)> = pairs.iter().copied().collect();
    let ring: BTreeSet<(u32, u32)> = (0..4).map(|i| (order[i], order[(i + 1) % 4])).collect();
    assert_eq!(used, ring, "every message goes to the next GPU of the list");
    // 2 (n - 1) steps of one message per rank.
    assert_eq!(pairs.len(), 2 * 3 * 4);
}

#[test]
fn rotated_channel_rings_cross_servers_through_every_nic() {
    let dir = tempfile::tempdir().unwrap();
    let cross_senders = |pairs: &[(u32, u32)]| -> BTreeSet<u32> {
        pairs.iter().filter(|(a, b)| a / 8 != b / 8).map(|&(a, _)| a).collect()
    };
    let same = scenario(dir.path(), "same", "channels = 8");
    let (pairs, busbw_same) = run(dir.path(), &same);
    // One ring order for every channel: only GPU 7 and GPU 15 send between the servers.
    assert_eq!(cross_senders(&pairs), BTreeSet::from([7, 15]));
    let rotated = scenario(dir.path(), "rotated", "channels = 8\nchannel_rings = \"rotated\"");
    let (pairs, busbw_rotated) = run(dir.path(), &rotated);
    // Channel c enters each server at its local GPU c and leaves from local GPU c - 1: every
    // GPU (and so every NIC) sends between the servers.
    assert_eq!(cross_senders(&pairs), (0..16).collect::<BTreeSet<u32>>());
    // The same bytes over eight NICs per server instead of one: over twice the bus bandwidth
    // (measured 114.3 against 49.0 GB/s; the NVLink steps inside the servers, shared by the
    // eight channels, and the cross-rail paths through the spines bound the gain).
    assert!(
        busbw_rotated > 2.0 * busbw_same,
        "rotated {busbw_rotated:.1} GB/s vs same {busbw_same:.1} GB/s"
    );
    // Refused where it cannot apply: no servers, or ranks that do not fill them.
    let bad = scenario(dir.path(), "bad", "ranks = 12\nchannel_rings = \"rotated\"");
    let r = fabricsim(&["validate", s(&bad)]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("workload[0].channel_rings"), "{r:?}");
}

#[test]
fn bad_rank_lists_are_refused_at_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, key, says) in [
        ("ranks = [1, 2, 1]", "workload[0].ranks[2]", "listed twice"),
        ("ranks = [1, 16]", "workload[0].ranks[1]", "does not exist"),
        ("ranks = [4]", "workload[0].ranks", "2..=16"),
        ("ranks = \"all\"", "workload[0]", "rank count"),
    ] {
        let file = scenario(dir.path(), "bad", extra);
        let r = fabricsim(&["validate", s(&file)]);
        assert_eq!(r.code, 2, "{extra}: {r:?}");
        assert!(r.stderr.contains(key) && r.stderr.contains(says), "{extra}: {r:?}");
    }
}
