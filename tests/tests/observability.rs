//! What a run shows beyond the totals: FCT slowdown against the ideal FCT of each flow alone
//! on its path (per flow, per size bucket, per group), paths in `flows.csv`, the congestion
//! and pause trees in depth-first order with depths, the `_GBps` collective columns and the
//! line-rate fraction against the path's bottleneck.

use fabricsim_tests::{catalogue, fabricsim, s};
use std::path::{Path, PathBuf};

/// Writes `toml` as a scenario in a fresh temporary directory; returns (dir, scenario path).
fn scenario(toml: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(&path, toml).unwrap();
    (dir, path)
}

/// Runs `path` into `<dir>/out`; returns the output directory and the terminal text.
fn run(dir: &Path, path: &Path) -> (PathBuf, String) {
    let out = dir.join("out");
    let o = fabricsim(&["run", s(path), "--out", s(&out)]);
    assert_eq!(o.code, 0, "{o:?}");
    (out, o.stdout)
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// `flows.csv` as (header, rows of cells).
fn flows_csv(out: &Path) -> Vec<csv::StringRecord> {
    let mut r = csv::Reader::from_path(out.join("flows.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let mut rows = vec![h];
    rows.extend(r.records().map(|x| x.unwrap()));
    rows
}

fn col(rows: &[csv::StringRecord], name: &str) -> usize {
    rows[0]
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

/// One flow over two switches (three links) on `fabric`; 10 full packets and a short one.
fn lone_flow(fabric: &str) -> String {
    format!(
        r#"
[scenario]
name = "lone"
[topology]
kind = "custom"
hosts = 2
switches = 2
links = [
    {{ a = "h0", b = "s0", rate = "100Gbps", cable_m = 3 }},
    {{ a = "s0", b = "s1", rate = "50Gbps", cable_m = 100 }},
    {{ a = "s1", b = "h1", rate = "200Gbps", cable_m = 3 }},
]
[fabric]
kind = "{fabric}"
mtu = "4KiB"
[[workload]]
kind = "flows"
flows = [{{ src = 0, dst = 1, size = 41960 }}]
[run]
end_time = "1ms"
"#
    )
}

/// A flow alone in the fabric takes exactly its ideal time: slowdown 1 on every fabric.
#[test]
fn a_lone_flow_has_slowdown_one_on_every_fabric() {
    for fabric in ["ethernet", "infiniband", "rocev2"] {
        let (dir, path) = scenario(&lone_flow(fabric));
        let (out, _) = run(dir.path(), &path);
        let rows = flows_csv(&out);
        let r = &rows[1];
        assert_eq!(&r[col(&rows, "completed")], "true", "{fabric}");
        assert_eq!(&r[col(&rows, "ideal_fct_ns")], &r[col(&rows, "fct_ns")], "{fabric}");
        assert_eq!(&r[col(&rows, "slowdown")], "1.000000", "{fabric}");
        assert_eq!(&r[col(&rows, "bottleneck_gbps")], "50", "{fabric}");
        // Three egress ports: h0's NIC, s0 -> s1, s1 -> h1.
        assert_eq!(r[col(&rows, "path")].split(' ').count(), 3, "{fabric}");
        let j = summary(&out);
        assert_eq!(j["schema"], "fabricsim.summary/2");
        assert_eq!(j["slowdown"]["all"]["flows"], 1);
        assert_eq!(j["slowdown"]["all"]["p99"], 1.0, "{fabric}");
        assert_eq!(j["groups"][0]["slowdown"]["p50"], 1.0);
        // Goodput over the 50 Gb/s bottleneck, not over the 100G NIC link.
        let fr = j["throughput"]["mean_flow_fraction_of_bottleneck"].as_f64().unwrap();
        let goodput: f64 = r[col(&rows, "goodput_gbps")].parse().unwrap();
        assert!((fr - goodput / 50.0).abs() < 1e-6, "{fabric}: {fr} vs {goodput} Gb/s");
    }
}

/// The ideal of the lone flow is the closed form on the base fabric: every packet serialized
/// at the 50G bottleneck, plus the first hop and last hop of one packet (store-and-forward),
/// propagation, two switch latencies and the NICs' send and receive processing. The long flow (1,024 full packets) checks the
/// extrapolation of the periodic packet train against the same formula.
#[test]
fn ideal_fct_is_the_closed_form_on_the_base_fabric() {
    for n_full in [10u64, 1024] {
        let size = n_full * 4096 + 1000;
        let text = lone_flow("ethernet").replace("size = 41960", &format!("size = {size}"));
        let (dir, path) = scenario(&text);
        let (out, _) = run(dir.path(), &path);
        let rows = flows_csv(&out);
        let ideal: f64 = rows[1][col(&rows, "ideal_fct_ns")].parse().unwrap();
        let j = summary(&out);
        assert_eq!(j["counters"]["payload_bytes_injected"].as_u64(), Some(size));
        let resolved = std::fs::read_to_string(out.join("scenario.resolved.toml")).unwrap();
        let v: toml::Value = toml::from_str(&resolved).unwrap();
        let hdr: f64 = v["fabric"]["header"]
            .as_str()
            .unwrap()
            .trim_end_matches('B')
            .parse()
            .unwrap();
        let lat_ns: f64 = v["fabric"]["switch_latency"]
            .as_str()
            .unwrap()
            .trim_end_matches("ns")
            .parse()
            .unwrap();
        let ser = |bytes: f64, gbps: f64| bytes * 8.0 / gbps;
        // n_full packets of 4096 + one of 1000 payload bytes.
        let (full, last) = (4096.0 + hdr, 1000.0 + hdr);
        let bottleneck = n_full as f64 * ser(full, 50.0) + ser(last, 50.0);
        // The first packet's serialization at 100G before the bottleneck, the last packet's
        // at 200G after it; cables of 3 m, 100 m, 3 m at 5 ns/m.
        // The NICs' send and receive processing (the hosts are the adapters).
        let nic = fabrics::engine::ETHERNET_NIC_LATENCY;
        let nic_ns = (nic.tx + nic.rx).ps() as f64 / 1000.0;
        let want = nic_ns + ser(full, 100.0) + bottleneck + ser(last, 200.0) + 106.0 * 5.0 + 2.0 * lat_ns;
        assert!(
            (ideal - want).abs() < 0.01,
            "{n_full} full packets: ideal {ideal} ns, closed form {want} ns"
        );
    }
}

/// Two flows sharing the 50G link: each is slowed down, and the slowdown is FCT / ideal.
#[test]
fn sharing_a_link_slows_flows_down_by_their_fct_over_ideal() {
    let toml = lone_flow("ethernet").replace(
        "flows = [{ src = 0, dst = 1, size = 41960 }]",
        "flows = [{ src = 0, dst = 1, size = 409600 }, { src = 0, dst = 1, size = 409600 }]",
    );
    let (dir, path) = scenario(&toml);
    let (out, text) = run(dir.path(), &path);
    let rows = flows_csv(&out);
    for r in &rows[1..] {
        let fct: f64 = r[col(&rows, "fct_ns")].parse().unwrap();
        let ideal: f64 = r[col(&rows, "ideal_fct_ns")].parse().unwrap();
        let sd: f64 = r[col(&rows, "slowdown")].parse().unwrap();
        assert!((sd - fct / ideal).abs() < 1e-5);
        assert!(sd > 1.4, "two flows on one link: {sd}");
    }
    assert!(text.contains("FCT slowdown by flow size"), "{text}");
}

/// `[output] slowdown_size_edges` cuts the buckets; the default is the HPCC paper's 5% ones.
#[test]
fn size_buckets_follow_user_edges_or_hpcc_five_percent() {
    let cdf_dir = catalogue("cdf");
    let text = std::fs::read_to_string(catalogue("websearch_leaf_spine.toml")).unwrap();
    let (dir, path) = scenario(&text.replace("\"cdf/", &format!("\"{}/", cdf_dir.display())));
    let (out, text) = run(dir.path(), &path);
    let j = summary(&out);
    let sd = &j["slowdown"];
    assert_eq!(sd["buckets"], "hpcc_5pct");
    let buckets = sd["by_size"].as_array().unwrap();
    let n = sd["all"]["flows"].as_u64().unwrap();
    assert!(n >= 100, "{n}");
    assert!((18..=20).contains(&buckets.len()), "{}", buckets.len());
    let total: u64 = buckets.iter().map(|b| b["flows"].as_u64().unwrap()).sum();
    assert_eq!(total, n);
    for w in buckets.windows(2) {
        assert_eq!(w[1]["size_above_bytes"], w[0]["size_max_bytes"]);
    }
    for b in buckets {
        let (p50, p99) = (b["p50"].as_f64().unwrap(), b["p99"].as_f64().unwrap());
        assert!(p50 >= 1.0 - 1e-9 && p99 >= p50, "{b}");
    }
    assert!(text.contains("FCT slowdown by flow size"));

    let edged = std::fs::read_to_string(&path).unwrap().replacen(
        "[run]",
        "[output]\nslowdown_size_edges = [\"10kB\", \"100kB\", \"1MB\"]\n\n[run]",
        1,
    );
    std::fs::write(&path, edged).unwrap();
    let (out, text) = run(dir.path(), &path);
    let sd = summary(&out)["slowdown"].clone();
    assert_eq!(sd["buckets"], "edges");
    let b = sd["by_size"].as_array().unwrap();
    let edges: Vec<serde_json::Value> = b.iter().map(|b| b["size_max_bytes"].clone()).collect();
    assert_eq!(
        edges,
        [10_000.into(), 100_000.into(), 1_000_000.into(), serde_json::Value::Null]
    );
    assert_eq!(b.iter().map(|b| b["flows"].as_u64().unwrap()).sum::<u64>(), n);
    assert!(text.contains("<= 10kB") && text.contains("> 1MB"), "{text}");
}

/// Bad edges are refused at their key, with the line, and nothing is run.
#[test]
fn bad_bucket_edges_are_refused_at_their_key() {
    let toml = lone_flow("ethernet").replace("[run]", "[output]\nslowdown_size_edges = [\"1MB\", \"10kB\"]\n[run]");
    let (dir, path) = scenario(&toml);
    let out = dir.path().join("out");
    let o = fabricsim(&["run", s(&path), "--out", s(&out)]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("output.slowdown_size_edges"), "{}", o.stderr);
    assert!(o.stderr.contains("increase strictly"), "{}", o.stderr);
    assert!(o.stderr.contains("s.toml:"), "{}", o.stderr);
    assert!(!out.exists());
}

/// Depth-first trees: every edge below depth 0 follows its parent edge (the edge whose
/// waiting port's node it waits for), depths step by at most one, and the terminal lists the
/// same edges in the same order, indented by depth.
#[test]
fn pause_tree_is_depth_first_with_depths_in_json_and_terminal() {
    let (dir, path) = scenario(&std::fs::read_to_string(catalogue("roce_victim_flow.toml")).unwrap());
    let (out, text) = run(dir.path(), &path);
    let tree = summary(&out)["pause_tree"].as_array().unwrap().clone();
    assert!(tree.len() >= 4);
    let node = |port: &serde_json::Value| port.as_str().unwrap().split("->").next().unwrap().to_owned();
    let peer = |port: &serde_json::Value| port.as_str().unwrap().split("->").nth(1).unwrap().to_owned();
    let mut prev_depth = 0;
    let mut parents: Vec<String> = Vec::new(); // node paused at each depth on the current branch
    for e in &tree {
        let d = e["depth"].as_u64().unwrap() as usize;
        assert!(d <= prev_depth + 1, "{e}");
        if d > 0 {
            // The port was paused by the node whose port is the parent edge's paused port.
            assert_eq!(node(&e["paused_by"]), parents[d - 1], "{e}");
        }
        parents.truncate(d);
        parents.push(node(&e["paused"]));
        let _ = peer(&e["paused"]);
        prev_depth = d;
    }
    assert!(tree.iter().any(|e| e["depth"] == 1));
    // Siblings at depth 0 are largest first.
    let roots: Vec<f64> = tree
        .iter()
        .filter(|e| e["depth"] == 0)
        .map(|e| e["paused_ns"].as_f64().unwrap())
        .collect();
    assert!(roots.windows(2).all(|w| w[0] >= w[1]), "{roots:?}");
    // The terminal: one line per edge, same order, indented by depth.
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("pause tree"))
        .skip(1)
        .take(tree.len())
        .collect();
    for (l, e) in lines.iter().zip(&tree) {
        let d = e["depth"].as_u64().unwrap() as usize;
        let prefix = if d == 0 {
            "  ".to_string()
        } else {
            format!("  {}└ ", "  ".repeat(d - 1))
        };
        assert!(
            l.starts_with(&format!("{prefix}{}", e["paused"].as_str().unwrap())),
            "{l:?} vs {e}"
        );
    }
}

/// The congestion tree carries depths too, in the same order in the terminal.
#[test]
fn congestion_tree_has_depths() {
    let (dir, path) = scenario(&std::fs::read_to_string(catalogue("ib_ndr_congestion_tree.toml")).unwrap());
    let (out, text) = run(dir.path(), &path);
    let tree = summary(&out)["congestion_tree"].as_array().unwrap().clone();
    assert!(!tree.is_empty());
    assert!(tree.iter().all(|e| e["depth"].is_u64()));
    assert_eq!(tree[0]["depth"], 0);
    let first = text
        .lines()
        .skip_while(|l| !l.starts_with("congestion tree"))
        .nth(1)
        .unwrap();
    assert!(
        first.starts_with(&format!("  {}", tree[0]["stalled"].as_str().unwrap())),
        "{first}"
    );
}

/// Collective bandwidths are in GB/s and say so: `_GBps` in `collectives.csv` and
/// `summary.json`, and no `_gbps` column holds gigabytes any more.
#[test]
fn collective_bandwidth_columns_are_gbytes_per_second() {
    let (dir, path) = scenario(&std::fs::read_to_string(catalogue("allreduce8_nvlink_ring.toml")).unwrap());
    let (out, _) = run(dir.path(), &path);
    let csv = std::fs::read_to_string(out.join("collectives.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.ends_with(",algbw_GBps,busbw_GBps"), "{header}");
    assert!(!header.contains("bw_gbps"));
    let j = summary(&out);
    let row = &j["collectives"][0];
    assert!(row["busbw_GBps"].as_f64().unwrap() > 0.0);
    assert!(row.get("busbw_gbps").is_none());
    // busbw = algbw x 2(n-1)/n for an 8-rank AllReduce.
    let (a, b) = (row["algbw_GBps"].as_f64().unwrap(), row["busbw_GBps"].as_f64().unwrap());
    assert!((b - a * 14.0 / 8.0).abs() < 1e-9 * b);
}

/// A GPU flow that leaves its server is measured against the path's bottleneck (the NIC),
/// not the GPU's NVLink: no fraction above 1.
#[test]
fn gpu_line_rate_fraction_is_against_the_path_bottleneck() {
    let (dir, path) = scenario(&std::fs::read_to_string(catalogue("cluster16_hgx_roce400_allreduce.toml")).unwrap());
    let (out, text) = run(dir.path(), &path);
    let j = summary(&out);
    let fr = j["throughput"]["mean_flow_fraction_of_bottleneck"].as_f64().unwrap();
    assert!(fr > 0.05 && fr <= 1.0, "{fr}");
    assert!(text.contains("of the path bottleneck"));
    let rows = flows_csv(&out);
    let (g, b) = (col(&rows, "goodput_gbps"), col(&rows, "bottleneck_gbps"));
    for r in &rows[1..] {
        let (good, neck): (f64, f64) = (r[g].parse().unwrap_or(0.0), r[b].parse().unwrap());
        assert!(good <= neck * 1.0001, "goodput {good} over bottleneck {neck}");
    }
    // Slowdowns stay at or above 1 (within 0.1% where packets are sprayed over NVLinks).
    let sd = col(&rows, "slowdown");
    assert!(
        rows[1..]
            .iter()
            .filter_map(|r| r[sd].parse::<f64>().ok())
            .all(|x| x >= 0.999)
    );
}
