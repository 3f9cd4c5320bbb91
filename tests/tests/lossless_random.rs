//! Lossless RoCEv2 under random small scenarios: no lossless class ever drops, no run panics.
//! Regression for issue 14's "losslessness broken" (an XOFF lost when the dynamic threshold
//! shrank under an ingress between its admissions, `SharedBuffer::release`).

use fabricsim_tests::{catalogue, fabricsim, s};
use std::path::Path;

use fabricsim_tests::SplitMix64 as Rng;

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

fn cdf() -> String {
    catalogue("cdf/WebSearch_distribution.txt").display().to_string()
}

/// The case that panicked on the landed main (exit 101 after a lost XOFF): 8 leaves x 16 hosts,
/// 2:1, 100G, DCQCN firmware preset with a 30 us CNP interval, WebSearch at 0.5 plus a 16-to-1
/// incast of 2 MiB on class 3 at 5 ms. Now every flow completes and nothing drops.
#[test]
fn firmware_dcqcn_incast_over_websearch_stays_lossless() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"[scenario]
name = "issue14"
seed = 3
[topology]
kind = "leaf_spine"
leaves = 8
hosts_per_leaf = 16
oversubscription = "2:1"
host_link = {{ rate = "100Gbps", cable_m = 3 }}
fabric_link = {{ rate = "100Gbps", cable_m = 10 }}
[fabric]
kind = "rocev2"
[fabric.roce]
lossless = [3]
lossy = [0, 6]
ecn = {{ preset = "dcqcn_paper" }}
cc = {{ kind = "dcqcn", preset = "firmware" }}
cnp_interval = "30us"
[[workload]]
kind = "poisson"
load = 0.5
cdf = "{}"
duration = "10ms"
class = 3
[[workload]]
kind = "incast"
receiver = 0
n_senders = 16
size = "2MiB"
class = 3
start = "5ms"
[run]
end_time = "30ms"
"#,
        cdf()
    );
    let file = dir.path().join("issue14.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    let r = fabricsim(&["run", s(&file), "--out", s(&out), "-q"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let sm = summary(&out);
    assert_eq!(sm["flows"]["completed"], sm["flows"]["total"]);
    assert_eq!(sm["counters"]["packets_dropped"], 0);
    assert_eq!(sm["counters"]["roce_drops_headroom"], 0);
    assert!(sm["counters"]["roce_pause_frames_sent"].as_u64().unwrap() > 0);
}

/// The common head of the random cases: a leaf-spine of `[leaves, hosts per leaf, spines]`
/// with `[host Gb/s, fabric Gb/s, cable m]` links on RoCEv2 with a shared buffer, lossless
/// priorities `lossless` and lossy 0 and 6; the caller appends the rest of `[fabric.roce]`.
fn leaf_spine_roce_head(
    name: &str,
    seed: u64,
    shape: [u64; 3],
    links: [u64; 3],
    buffer_kib: u64,
    lossless: &str,
) -> String {
    let [leaves, hpl, spines] = shape;
    let [host_gbps, fabric_gbps, cable] = links;
    format!(
        r#"[scenario]
name = "{name}"
seed = {seed}
[topology]
kind = "leaf_spine"
leaves = {leaves}
hosts_per_leaf = {hpl}
spines = {spines}
host_link = {{ rate = "{host_gbps}Gbps", cable_m = {cable} }}
fabric_link = {{ rate = "{fabric_gbps}Gbps", cable_m = {cable} }}
[fabric]
kind = "rocev2"
[fabric.roce]
buffer = "{buffer_kib}KiB"
lossless = {lossless}
lossy = [0, 6]
"#
    )
}

/// 80 random small lossless RoCEv2 runs (leaf-spine 2-6 leaves x 2-8 hosts, 1-4 spines, 25-400G
/// links, 1-100 m cables, shared buffers from 128 KiB per port up, congestion control none /
/// DCQCN paper / DCQCN firmware / TIMELY, a random CNP interval, WebSearch at a random load plus
/// an incast, all on lossless class 3): every run the loader accepts ends without a panic and
/// with no data packet dropped; the ones it refuses (a buffer too small for the headroom) are
/// refused with exit 2. At least 60 of them must run.
#[test]
fn random_lossless_runs_never_drop() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(14);
    let (mut ran, mut refused) = (0, 0);
    for case in 0..80 {
        let leaves = rng.range(2, 6);
        let hpl = rng.range(2, 8);
        let spines = rng.range(1, 4);
        let host_gbps = *rng.pick(&[25u64, 50, 100, 200, 400]);
        let fabric_gbps = *rng.pick(&[25u64, 50, 100, 200, 400]);
        let cable = rng.range(1, 100);
        let per_port_kib = *rng.pick(&[128u64, 256, 512, 1024, 2048]);
        let buffer_kib = per_port_kib * (hpl + spines).max(leaves);
        let cc = *rng.pick(&[
            "",
            "cc = { kind = \"dcqcn\", preset = \"paper\" }",
            "cc = { kind = \"dcqcn\", preset = \"firmware\" }",
            "cc = { kind = \"timely\" }",
        ]);
        let cnp_us = *rng.pick(&[1u64, 4, 30, 50]);
        let load = *rng.pick(&[0.2, 0.5, 0.8]);
        let hosts = leaves * hpl;
        let n_senders = rng.range(1, hosts - 1);
        let text = format!(
            r#"{head}ecn = {{ preset = "dcqcn_paper" }}
{cc}
cnp_interval = "{cnp_us}us"
[[workload]]
kind = "poisson"
load = {load}
cdf = "{cdf}"
duration = "200us"
class = 3
[[workload]]
kind = "incast"
receiver = 0
n_senders = {n_senders}
size = "256KiB"
class = 3
start = "50us"
[run]
end_time = "2ms"
"#,
            head = leaf_spine_roce_head(
                &format!("case{case}"),
                rng.next_u64() % 1000,
                [leaves, hpl, spines],
                [host_gbps, fabric_gbps, cable],
                buffer_kib,
                "[3]"
            ),
            cdf = cdf(),
        );
        let file = dir.path().join(format!("case{case}.toml"));
        std::fs::write(&file, &text).unwrap();
        let out = dir.path().join(format!("out{case}"));
        let r = fabricsim(&["run", s(&file), "--out", s(&out), "-q"]);
        // A buffer too small for the headroom is refused (exit 2, or exit 1 with the engine's
        // configuration error until the loader checks it itself).
        if r.code == 2 || (r.code == 1 && r.stderr.contains("invalid engine configuration")) {
            assert!(
                r.stderr.contains("case"),
                "case {case}: refusal names the file: {}",
                r.stderr
            );
            refused += 1;
            continue;
        }
        assert_eq!(r.code, 0, "case {case}:\n{text}\n{}{}", r.stdout, r.stderr);
        let c = &summary(&out)["counters"];
        assert_eq!(c["packets_dropped"], 0, "case {case}:\n{text}");
        assert_eq!(c["roce_drops_headroom"], 0, "case {case}:\n{text}");
        ran += 1;
    }
    assert!(ran >= 60, "only {ran} of 80 cases ran ({refused} refused)");
}

/// The range a refusal quotes: `expected LO..=HI` (pause quanta) or `expected a period in
/// [LO, HI]` (PFC refresh), as the two strings.
fn quoted_range(stderr: &str) -> (String, String) {
    if let Some(i) = stderr.find("expected a period in [") {
        let rest = &stderr[i + "expected a period in [".len()..];
        let end = rest.find(']').unwrap();
        let (lo, hi) = rest[..end].split_once(", ").unwrap();
        return (lo.to_string(), hi.to_string());
    }
    let i = stderr.find("expected ").unwrap() + "expected ".len();
    let rest = &stderr[i..];
    let (lo, rest) = rest.split_once("..=").unwrap();
    let hi: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    (lo.to_string(), hi)
}

/// Issue 14's PFC edge cases, each at the edge the loader now allows, under random small
/// lossless fabrics with an incast: the smallest `pause_quanta` (was: `pause_quanta = 1`
/// panicked "losslessness broken"), the longest `pfc_refresh` (was: a refresh longer than the
/// pause time panicked), ACKs on the lossless priority (was: the losslessness assertion), two
/// lossless priorities loaded at once under a random dynamic-threshold alpha (was: the
/// losslessness assertion). The edges are read from the loader's own refusal of the value
/// just outside (so the test checks that the quoted range is safe). No run may panic or drop a
/// lossless packet; at least 30 of the 40 must run.
#[test]
fn random_pfc_edge_parameters_never_drop() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(1415);
    let (mut ran, mut refused) = (0, 0);
    for case in 0..40 {
        let leaves = rng.range(2, 4);
        let hpl = rng.range(2, 6);
        let spines = rng.range(1, 3);
        let host_gbps = *rng.pick(&[25u64, 100, 400]);
        let fabric_gbps = *rng.pick(&[25u64, 100, 400]);
        let cable = rng.range(1, 100);
        let per_port_kib = *rng.pick(&[256u64, 1024, 4096]);
        let buffer_kib = per_port_kib * (hpl + spines).max(leaves);
        let alpha = rng.range(0, 12) as i64 - 4;
        let two = rng.below(2) == 0;
        let acks_lossless = rng.below(2) == 0;
        let edge = *rng.pick(&["quanta", "refresh"]);
        let hosts = leaves * hpl;
        let n_senders = rng.range(1, hosts - 1);
        let lossless = if two { "[3, 4]" } else { "[3]" };
        let control = if acks_lossless {
            "control_priority = 3\nacks = true"
        } else {
            ""
        };
        let second = if two {
            format!(
                "[[workload]]\nkind = \"incast\"\nreceiver = 1\nn_senders = {}\nsize = \"128KiB\"\nclass = 4\n\
                 [[workload]]\nkind = \"permutation\"\nsize = \"64KiB\"\nclass = 4\n",
                n_senders.min(hosts - 2).max(1)
            )
        } else {
            String::new()
        };
        let head = leaf_spine_roce_head(
            &format!("edge{case}"),
            case,
            [leaves, hpl, spines],
            [host_gbps, fabric_gbps, cable],
            buffer_kib,
            lossless,
        );
        let text = |pfc: &str| {
            format!(
                r#"{head}alpha_shift = {alpha}
{control}
{pfc}
[[workload]]
kind = "incast"
receiver = 0
n_senders = {n_senders}
size = "256KiB"
class = 3
{second}
[run]
end_time = "3ms"
"#
            )
        };
        let file = dir.path().join(format!("edge{case}.toml"));
        let probe = if edge == "quanta" {
            "pause_quanta = 1"
        } else {
            "pfc_refresh = \"1ps\""
        };
        std::fs::write(&file, text(probe)).unwrap();
        let r = fabricsim(&["validate", s(&file)]);
        if r.code == 2 && r.stderr.contains("fabric.roce.buffer") {
            refused += 1;
            continue;
        }
        assert_eq!(r.code, 2, "case {case}: {probe} is refused: {}{}", r.stdout, r.stderr);
        let (_, hi) = quoted_range(&r.stderr);
        let pfc = if edge == "quanta" {
            let (lo, _) = quoted_range(&r.stderr);
            format!("pause_quanta = {lo}")
        } else {
            format!("pfc_refresh = \"{hi}\"")
        };
        let text = text(&pfc);
        std::fs::write(&file, &text).unwrap();
        let out = dir.path().join(format!("out{case}"));
        let r = fabricsim(&["run", s(&file), "--out", s(&out), "-q"]);
        assert_eq!(r.code, 0, "case {case}:\n{text}\n{}{}", r.stdout, r.stderr);
        let c = &summary(&out)["counters"];
        assert_eq!(c["packets_dropped"], 0, "case {case}:\n{text}");
        assert_eq!(c["roce_drops_headroom"], 0, "case {case}:\n{text}");
        ran += 1;
    }
    assert!(ran >= 30, "only {ran} of 40 cases ran ({refused} refused)");
}
