//! `trace.json` (`[output] trace = true`, issue 13) and the per-stage table of hierarchical
//! collectives: the trace opens as Chrome Trace Event Format (a track per GPU, one slice per
//! ring step, paired flow events), its times are those of `flows.csv`, it is byte-identical
//! across runs, training steps get compute and bucket slices, and the hierarchical stages are
//! positive, ordered and add up to at most the instance time.

use fabricsim_tests::{catalogue, fabricsim, s};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn write(dir: &Path, toml: &str) -> PathBuf {
    let path = dir.join("s.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

fn run(path: &Path, out: &Path) -> String {
    let o = fabricsim(&["run", s(path), "--out", s(out)]);
    assert_eq!(o.code, 0, "{o:?}");
    o.stdout
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn events(trace: &Value) -> &Vec<Value> {
    trace["traceEvents"].as_array().expect("traceEvents is a list")
}

fn of_ph<'a>(trace: &'a Value, ph: &str) -> Vec<&'a Value> {
    events(trace).iter().filter(|e| e["ph"] == ph).collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const RING: &str = r#"
[scenario]
name = "trace_ring"
[topology]
kind = "hgx_h100"
[fabric]
kind = "nvlink"
[[workload]]
kind = "collective"
name = "ring"
op = "all_reduce"
algorithm = "ring"
sizes = ["256KiB"]
[output]
trace = true
"#;

const HIER: &str = r#"
[scenario]
name = "trace_hier"
[topology]
kind = "cluster"
servers = 2
server = "hgx_h100"
k = 4
nic_link = { rate = "400Gbps", cable_m = 5 }
fabric_link = { rate = "400Gbps", cable_m = 20 }
[fabric]
kind = "infiniband"
[[workload]]
kind = "collective"
name = "hier"
op = "all_reduce"
algorithm = "hierarchical"
sizes = ["256KiB"]
iterations = 2
[output]
trace = true
"#;

/// flows.csv as (src host, start_ns, finish_ns) of the flows that carry bytes.
fn flows(out: &Path) -> Vec<(u64, f64, f64)> {
    let mut r = csv::Reader::from_path(out.join("flows.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    let (src, size, start, finish) = (col("src"), col("size_bytes"), col("start_ns"), col("finish_ns"));
    r.records()
        .map(|x| x.unwrap())
        .filter(|x| x[size].parse::<u64>().unwrap() > 0)
        .map(|x| {
            (
                x[src].parse().unwrap(),
                x[start].parse().unwrap(),
                x[finish].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn ring_allreduce_trace_has_a_track_per_rank_with_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    run(&write(dir.path(), RING), &out);
    let trace = json(&out.join("trace.json"));
    assert!(trace["displayTimeUnit"].is_string());
    let n = 8usize;
    let names: Vec<&Value> = of_ph(&trace, "M")
        .into_iter()
        .filter(|e| e["name"] == "thread_name")
        .collect();
    assert_eq!(names.len(), n, "one named track per GPU");
    assert!(
        names
            .iter()
            .all(|e| e["args"]["name"].as_str().unwrap().starts_with("GPU "))
    );
    // Slices per track: 2(n-1) steps, in order, not overlapping.
    let mut per_tid: BTreeMap<u64, Vec<(f64, f64, u64)>> = BTreeMap::new();
    for e in of_ph(&trace, "X") {
        let tid = e["tid"].as_u64().unwrap();
        per_tid
            .entry(tid)
            .or_default()
            .push((f(&e["ts"]), f(&e["dur"]), e["args"]["step"].as_u64().unwrap()));
        assert!(
            e["name"].as_str().unwrap().starts_with("all_reduce 256KiB ring step "),
            "{e}"
        );
    }
    assert_eq!(per_tid.len(), n);
    for (tid, sl) in &mut per_tid {
        assert_eq!(sl.len(), 2 * (n - 1), "track {tid}");
        sl.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (k, w) in sl.windows(2).enumerate() {
            assert!(
                w[0].0 + w[0].1 <= w[1].0 + 1e-9,
                "track {tid}: slice {k} overlaps the next"
            );
            assert!(w[0].2 < w[1].2, "track {tid}: steps out of order");
        }
        assert!(sl.iter().all(|x| x.1 > 0.0));
    }
    // Every flow start has exactly one finish, on another track, not before it.
    let mut pairs: BTreeMap<u64, (Vec<&Value>, Vec<&Value>)> = BTreeMap::new();
    for e in of_ph(&trace, "s") {
        pairs.entry(e["id"].as_u64().unwrap()).or_default().0.push(e);
    }
    for e in of_ph(&trace, "f") {
        pairs.entry(e["id"].as_u64().unwrap()).or_default().1.push(e);
    }
    // A ring step's send feeds the receiver's next step: (2(n-1) - 1) flows per rank.
    assert_eq!(pairs.len(), n * (2 * (n - 1) - 1));
    for (id, (st, fi)) in &pairs {
        assert_eq!((st.len(), fi.len()), (1, 1), "flow {id}");
        assert_ne!(st[0]["tid"], fi[0]["tid"], "flow {id}");
        assert!(f(&st[0]["ts"]) <= f(&fi[0]["ts"]) + 1e-9, "flow {id}");
    }
    // One message per slice here: its times are a flow's start and finish in flows.csv.
    let fl = flows(&out);
    assert_eq!(fl.len(), n * 2 * (n - 1));
    for (tid, sl) in &per_tid {
        for &(ts, dur, step) in sl {
            let hit = fl
                .iter()
                .any(|&(src, a, b)| src == *tid && (a - ts * 1e3).abs() < 2e-3 && (b - (ts + dur) * 1e3).abs() < 2e-3);
            assert!(hit, "track {tid} step {step} at {ts} us + {dur} us matches no flow");
        }
    }
    let sm = json(&out.join("summary.json"));
    assert_eq!(sm["trace"]["truncated"], false);
    assert_eq!(
        sm["trace"]["events"].as_u64().unwrap() as usize,
        n * 2 * (n - 1) + 2 * pairs.len()
    );
    assert!(sm.get("collective_stages").is_none(), "a ring has no stages");
}

#[test]
fn hierarchical_allreduce_reports_three_ordered_stages() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let stdout = run(&write(dir.path(), HIER), &out);
    assert!(stdout.contains("hierarchical stages"), "{stdout}");
    let sm = json(&out.join("summary.json"));
    let rows = sm["collective_stages"].as_array().expect("a stage table");
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["completed"], 2);
    let stages = [
        f(&r["intra_reduce_scatter_us"]),
        f(&r["inter_all_reduce_us"]),
        f(&r["intra_all_gather_us"]),
    ];
    assert!(stages.iter().all(|&t| t > 0.0), "{stages:?}");
    let time = f(&r["time_us"]);
    assert_eq!(time, f(&sm["collectives"][0]["time_us"]));
    // The stages follow each other up to small overlaps (a server's inter-server ring may
    // start while another server's ReduceScatter ends): their sum is close to the time.
    let sum: f64 = stages.iter().sum();
    assert!(sum <= time * 1.01, "stages {sum} us > instance {time} us");
    assert!(sum >= 0.9 * time, "stages {sum} us cover too little of {time} us");
    let csv = std::fs::read_to_string(out.join("collective_stages.csv")).unwrap();
    assert!(csv.starts_with("workload,ranks,size_bytes,"), "{csv}");
    // In the trace: processes s0 and s1, and per iteration the stages follow each other.
    let trace = json(&out.join("trace.json"));
    let procs: Vec<&str> = of_ph(&trace, "M")
        .into_iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(procs, ["s0", "s1"]);
    for it in 0..2u64 {
        let span = |stage: &str| {
            let sl: Vec<(f64, f64)> = of_ph(&trace, "X")
                .into_iter()
                .filter(|e| e["args"]["iteration"] == it && e["args"]["stage"] == stage)
                .map(|e| (f(&e["ts"]), f(&e["ts"]) + f(&e["dur"])))
                .collect();
            assert!(!sl.is_empty(), "{stage}");
            let a = sl.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
            let b = sl.iter().map(|x| x.1).fold(0.0, f64::max);
            (a, b)
        };
        let (rs, inter, ag) = (
            span("intra_reduce_scatter"),
            span("inter_all_reduce"),
            span("intra_all_gather"),
        );
        assert!(rs.0 < inter.0 && inter.0 < ag.0, "starts {rs:?} {inter:?} {ag:?}");
        assert!(rs.1 <= inter.1 && inter.1 <= ag.1, "ends {rs:?} {inter:?} {ag:?}");
        // Overlaps between consecutive stages are small next to the stages themselves.
        assert!(rs.1 - inter.0 < 0.01 * (rs.1 - rs.0), "{rs:?} {inter:?}");
        assert!(inter.1 - ag.0 < 0.01 * (inter.1 - inter.0), "{inter:?} {ag:?}");
    }
}

#[test]
fn trace_is_byte_identical_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), HIER);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    run(&path, &a);
    run(&path, &b);
    for file in ["trace.json", "collective_stages.csv"] {
        let x = std::fs::read(a.join(file)).unwrap();
        assert!(!x.is_empty());
        assert!(x == std::fs::read(b.join(file)).unwrap(), "{file} differs");
    }
}

#[test]
fn no_trace_without_the_output_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    run(&write(dir.path(), &RING.replace("trace = true", "")), &out);
    assert!(!out.join("trace.json").exists());
    assert!(json(&out.join("summary.json")).get("trace").is_none());
}

#[test]
fn training_steps_get_compute_and_bucket_slices() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(catalogue("training_step8_hgx_h100_ddp.toml")).unwrap();
    let out = dir.path().join("out");
    run(&write(dir.path(), &format!("{text}\n[output]\ntrace = true\n")), &out);
    let trace = json(&out.join("trace.json"));
    let training: Vec<&Value> = of_ph(&trace, "X")
        .into_iter()
        .filter(|e| e["cat"] == "training")
        .collect();
    let sm = json(&out.join("summary.json"));
    for row in sm["training"].as_array().unwrap() {
        let w = row["workload"].as_str().unwrap();
        let mine = |prefix: &str| -> Vec<&Value> {
            training
                .iter()
                .copied()
                .filter(|e| e["args"]["workload"] == w && e["name"].as_str().unwrap().starts_with(prefix))
                .collect()
        };
        let steps = row["completed"].as_u64().unwrap() as usize;
        let compute = mine("compute");
        assert_eq!(compute.len(), steps, "{w}");
        for c in &compute {
            assert!((f(&c["dur"]) - f(&row["compute_us"])).abs() < 1e-6, "{w}: {c}");
        }
        let buckets = mine("bucket");
        assert_eq!(buckets.len(), steps * row["buckets"].as_u64().unwrap() as usize, "{w}");
        let mean = buckets.iter().map(|b| f(&b["dur"])).sum::<f64>() / buckets.len() as f64;
        assert!((mean - f(&row["bucket_allreduce_us"])).abs() < 1e-3, "{w}: {mean}");
        let step = mine("step");
        assert_eq!(step.len(), steps, "{w}");
        assert!((f(&step[0]["dur"]) - f(&row["step_time_us"])).abs() < 1e-3 || steps > 1);
    }
    // The buckets' own ring steps are on the GPU tracks.
    assert!(
        of_ph(&trace, "X")
            .iter()
            .any(|e| e["cat"] == "all_reduce" && e["pid"] != scenarios::trace::TRAINING_PID)
    );
}

#[test]
fn the_event_limit_cuts_the_trace_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Per iteration 8 x 14 slices + 8 x 13 flows x 2 events = 320 events: 400 fit one.
    let toml = RING.replace("trace = true", "trace = true\ntrace_max_events = 400");
    let toml = toml.replace("sizes = [\"256KiB\"]", "sizes = [\"256KiB\"]\niterations = 2");
    let stdout = run(&write(dir.path(), &toml), &out);
    assert!(stdout.contains("WARNING: trace.json holds 1 of 2"), "{stdout}");
    let sm = json(&out.join("summary.json"));
    let t = &sm["trace"];
    assert_eq!(t["truncated"], true);
    assert_eq!(t["instances_written"], 1);
    assert_eq!(t["instances"], 2);
    assert_eq!(t["limit"], 400);
    let trace = json(&out.join("trace.json"));
    assert_eq!(trace["otherData"]["truncated"], true);
    let timed = events(&trace).iter().filter(|e| e["ph"] != "M").count() as u64;
    assert_eq!(timed, t["events"].as_u64().unwrap());
    assert!(timed <= 400);
    assert!(of_ph(&trace, "X").iter().all(|e| e["args"]["iteration"] == 0));
    // Out of range: refused at its key.
    let bad = write(
        dir.path(),
        &RING.replace("trace = true", "trace = true\ntrace_max_events = 0"),
    );
    let o = fabricsim(&["run", s(&bad), "--out", s(&dir.path().join("bad"))]);
    assert_ne!(o.code, 0);
    assert!(o.stderr.contains("trace_max_events"), "{o:?}");
}
