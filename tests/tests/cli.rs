//! End-to-end tests of the `fabricsim` command line, through `scenarios::cli::run` (the exact
//! code path of the binary): results directories, determinism, seeds, budgets, the `validate`
//! and `topo` commands, and failures that must leave nothing behind.

use fabricsim_tests::catalogue;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fabricsim_tests::{Out, fabricsim, s};

/// Runs `scenario` into `out` (quietly, optionally with a seed) and checks it succeeded.
fn run_ok(scenario: &Path, out: &Path, seed: Option<u64>) -> Out {
    let seed_text = seed.map(|x| x.to_string());
    let mut args = vec!["run", s(scenario), "--out", s(out), "--quiet"];
    if let Some(x) = &seed_text {
        args.extend(["--seed", x.as_str()]);
    }
    let o = fabricsim(&args);
    assert_eq!(o.code, 0, "{o:?}");
    o
}

/// Every file of a directory (no subdirectories expected), by name.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let e = e.unwrap();
        assert!(e.file_type().unwrap().is_file(), "unexpected entry {:?}", e.path());
        m.insert(e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap());
    }
    m
}

/// Names of the entries of `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

const RESULT_FILES: [&str; 10] = [
    ".fabricsim-results",
    "fct.hlog",
    "fct_percentiles.csv",
    "flows.csv",
    "packet_latency.hlog",
    "packet_latency_percentiles.csv",
    "ports.csv",
    "scenario.resolved.toml",
    "summary.json",
    "timing.json",
];

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("summary.json is not JSON: {e}\n{text}"))
}

fn u(v: &serde_json::Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| panic!("{path} is not an unsigned integer in {v:#}"))
}

/// Asserts that two results directories hold the same files, byte for byte, except timing.json.
fn assert_same_results(a: &Path, b: &Path) {
    let (fa, fb) = (files(a), files(b));
    assert_eq!(
        fa.keys().collect::<Vec<_>>(),
        fb.keys().collect::<Vec<_>>(),
        "different file sets"
    );
    assert!(fa.contains_key("timing.json"));
    let mut compared = 0;
    for (name, bytes) in &fa {
        if name == "timing.json" {
            continue;
        }
        assert!(
            bytes == &fb[name],
            "{name} differs between identical runs:\n--- first\n{}\n--- second\n{}",
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(&fb[name])
        );
        compared += 1;
    }
    assert_eq!(compared, RESULT_FILES.len() - 1);
}

#[test]
fn run_quickstart_writes_every_file_and_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("quick");
    let o = run_ok(&catalogue("quickstart.toml"), &out_dir, None);
    assert_eq!(entries(&out_dir), RESULT_FILES, "{o:?}");
    for f in RESULT_FILES {
        assert!(!std::fs::read(out_dir.join(f)).unwrap().is_empty(), "{f} is empty");
    }
    // Nothing but the results directory is left next to it (no `.quick.partial-*`).
    assert_eq!(entries(dir.path()), ["quick"]);
    for want in [
        "scenario   quickstart (seed 1)",
        "fat-tree k=4 (16 hosts, 20 switches)",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "packet latency",
        "flow compl.",
        "throughput",
        "of 16 completed",
    ] {
        assert!(o.stdout.contains(want), "stdout lacks {want:?}: {o:?}");
    }
    assert!(
        o.stdout
            .trim_end()
            .ends_with(&format!("results in {}", out_dir.display())),
        "{o:?}"
    );
    assert!(!o.stdout.contains("PARTIAL"), "{o:?}");
    // --quiet: nothing on stderr.
    assert_eq!(o.stderr, "");
    // The CSVs have their headers and one row per flow / per port.
    let flows = String::from_utf8(std::fs::read(out_dir.join("flows.csv")).unwrap()).unwrap();
    assert!(flows.starts_with("flow,src,dst,size_bytes,"), "{flows}");
    assert_eq!(flows.lines().count(), 1 + 16);
    let sum = summary(&out_dir);
    let ports = String::from_utf8(std::fs::read(out_dir.join("ports.csv")).unwrap()).unwrap();
    assert_eq!(ports.lines().count() as u64, 1 + 2 * u(&sum, "/topology/links"));
    let resolved = String::from_utf8(std::fs::read(out_dir.join("scenario.resolved.toml")).unwrap()).unwrap();
    assert!(resolved.contains("quickstart"), "{resolved}");
}

#[test]
fn summary_json_is_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    run_ok(&catalogue("quickstart.toml"), &out_dir, None);
    let v = summary(&out_dir);
    assert_eq!(v["schema"], "fabricsim.summary/2");
    assert_eq!(v["scenario"]["name"], "quickstart");
    assert_eq!(u(&v, "/scenario/seed"), 1);
    assert_eq!(v["run"]["complete"], true, "{v:#}");
    assert_eq!(u(&v, "/topology/hosts"), 16);
    assert_eq!(u(&v, "/topology/switches"), 20);
    let injected = u(&v, "/packets/injected");
    let (delivered, dropped, in_network) = (
        u(&v, "/packets/delivered"),
        u(&v, "/packets/dropped"),
        u(&v, "/packets/in_network"),
    );
    assert!(injected > 0);
    assert_eq!(injected, delivered + dropped + in_network, "{v:#}");
    assert_eq!(u(&v, "/flows/total"), 16);
    assert!(u(&v, "/flows/completed") <= 16);
    // The scenario's hash is that of the resolved scenario written next to it: 64 hex digits.
    let sha = v["scenario"]["resolved_sha256"].as_str().unwrap();
    assert_eq!(sha.len(), 64);
    assert!(sha.bytes().all(|b| b.is_ascii_hexdigit()), "{sha}");
    // timing.json is JSON too.
    let timing: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("timing.json")).unwrap()).unwrap();
    assert_eq!(timing["events"], v["run"]["events"]);
    // The simulation's CPU time, per link-hop too (`null` without POSIX CPU clocks).
    if let Some(run) = timing["run_cpu_seconds"].as_f64() {
        assert!(run >= 0.0, "{timing:#}");
        let per_hop = timing["run_cpu_us_per_link_hop"].as_f64().unwrap();
        let hops = u(&v, "/run/link_hops") as f64;
        assert!((per_hop * hops / 1e6 - run).abs() <= 1e-9 * run.max(1.0), "{timing:#}");
    }
}

/// `run_cpu_seconds` leaves the build out: a k=32 fat-tree (8,192 hosts, a permutation of
/// them all) takes a tenth of a CPU second or more to build and route (0.17-0.56 s measured),
/// and a nanosecond of simulated time next to nothing to run (0.002-0.018 s, the first
/// events' page faults included).
#[test]
fn run_cpu_time_leaves_the_build_out() {
    if !cfg!(unix) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("big_build.toml");
    std::fs::write(
        &scenario,
        "[scenario]\nname = \"big_build\"\nseed = 1\n\n[topology]\nkind = \"fat_tree\"\nk = 32\n\
         host_link = { rate = \"100Gbps\", cable_m = 3 }\nfabric_link = { rate = \"100Gbps\", cable_m = 10 }\n\n\
         [fabric]\nkind = \"ethernet\"\n\n[[workload]]\nkind = \"permutation\"\nsize = \"1MiB\"\n\n\
         [run]\nend_time = \"1ns\"\n",
    )
    .unwrap();
    let out_dir = dir.path().join("r");
    run_ok(&scenario, &out_dir, None);
    let timing: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("timing.json")).unwrap()).unwrap();
    let (run, all) = (
        timing["run_cpu_seconds"].as_f64().unwrap(),
        timing["cpu_seconds"].as_f64().unwrap(),
    );
    assert!(run >= 0.0 && run < all / 4.0, "{timing:#}");
}

#[test]
fn quickstart_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let oa = run_ok(&catalogue("quickstart.toml"), &a, None);
    let ob = run_ok(&catalogue("quickstart.toml"), &b, None);
    assert_same_results(&a, &b);
    // The terminal table is the same too (apart from the directory name on the last line).
    let table = |o: &Out| o.stdout.rsplit_once("results in").unwrap().0.to_owned();
    assert_eq!(table(&oa), table(&ob));
}

#[test]
fn incast_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    run_ok(&catalogue("incast_16to1.toml"), &a, None);
    run_ok(&catalogue("incast_16to1.toml"), &b, None);
    assert_same_results(&a, &b);
    let v = summary(&a);
    assert_eq!(u(&v, "/flows/total"), 16);
    // The incast overflows the 512 KiB buffer toward the receiver (see the scenario's notes).
    assert!(u(&v, "/packets/dropped") > 0, "{v:#}");
}

#[test]
fn seed_override_changes_the_permutation() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("seed1"), dir.path().join("seed2"));
    run_ok(&catalogue("quickstart.toml"), &one, Some(1));
    let o = run_ok(&catalogue("quickstart.toml"), &two, Some(2));
    assert!(o.stdout.contains("(seed 2)"), "{o:?}");
    assert_eq!(u(&summary(&one), "/scenario/seed"), 1);
    assert_eq!(u(&summary(&two), "/scenario/seed"), 2);
    let pairs = |d: &Path| -> Vec<(u32, u32)> {
        let text = std::fs::read_to_string(d.join("flows.csv")).unwrap();
        text.lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f[1].parse().unwrap(), f[2].parse().unwrap())
            })
            .collect()
    };
    let (p1, p2) = (pairs(&one), pairs(&two));
    // Both are permutations: every host sends once and receives once, never to itself.
    for p in [&p1, &p2] {
        assert_eq!(p.len(), 16);
        let mut srcs: Vec<u32> = p.iter().map(|x| x.0).collect();
        let mut dsts: Vec<u32> = p.iter().map(|x| x.1).collect();
        srcs.sort_unstable();
        dsts.sort_unstable();
        assert_eq!(srcs, (0..16).collect::<Vec<_>>());
        assert_eq!(dsts, (0..16).collect::<Vec<_>>());
        assert!(p.iter().all(|(a, b)| a != b));
    }
    assert_ne!(p1, p2, "seeds 1 and 2 gave the same src->dst pairs");
    // The seed is part of the resolved scenario, and so of its hash.
    assert_ne!(
        summary(&one)["scenario"]["resolved_sha256"],
        summary(&two)["scenario"]["resolved_sha256"]
    );
    // `--seed 1` is the scenario's own seed: the same results as no override.
    let plain = dir.path().join("plain");
    run_ok(&catalogue("quickstart.toml"), &plain, None);
    assert_same_results(&one, &plain);
}

#[test]
fn validate_accepts_every_shipped_scenario() {
    let dir = catalogue("");
    let mut tomls: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    tomls.sort();
    let names: Vec<_> = tomls.iter().map(|p| p.file_name().unwrap().to_owned()).collect();
    assert!(names.len() >= 4, "{names:?}");
    assert!(names.iter().any(|n| n == "quickstart.toml"), "{names:?}");
    for path in &tomls {
        let o = fabricsim(&["validate", s(path)]);
        assert_eq!(o.code, 0, "{}: {o:?}", path.display());
        assert!(o.stdout.starts_with(&format!("{}: ok (", path.display())), "{o:?}");
        assert!(o.stdout.contains(" flows)"), "{o:?}");
        assert_eq!(o.stderr, "", "{o:?}");
    }
}

#[test]
fn topo_prints_summary_and_dot() {
    let o = fabricsim(&["topo", s(&catalogue("quickstart.toml"))]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.starts_with("fat-tree k=4 (16 hosts, 20 switches)\n"), "{o:?}");
    assert!(o.stdout.contains("hosts 16, switches 20, links 48\n"), "{o:?}");
    assert!(o.stdout.contains("bisection bandwidth "), "{o:?}");
    assert!(o.stdout.contains("graph fabric {"), "{o:?}");
    assert!(o.stdout.trim_end().ends_with('}'), "{o:?}");
    // Every host appears in the graph.
    for h in 0..16 {
        assert!(o.stdout.contains(&format!("h{h}")), "h{h} missing: {o:?}");
    }
}

#[test]
fn topo_dot_writes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let dot = dir.path().join("fabric.dot");
    let o = fabricsim(&["topo", s(&catalogue("quickstart.toml")), "--dot", s(&dot)]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains("hosts 16, switches 20"), "{o:?}");
    assert!(o.stdout.contains(&format!("DOT written to {}", dot.display())), "{o:?}");
    assert!(
        !o.stdout.contains("graph fabric"),
        "the DOT text went to stdout too: {o:?}"
    );
    let text = std::fs::read_to_string(&dot).unwrap();
    assert!(text.starts_with("graph fabric {"), "{text}");
    assert!(text.trim_end().ends_with('}'), "{text}");
    // Same graph as the one printed without --dot.
    let printed = fabricsim(&["topo", s(&catalogue("quickstart.toml"))]).stdout;
    assert!(printed.ends_with(&text), "printed and written DOT differ");
    // A DOT path that cannot be written is an error (exit 1), not a panic.
    let bad = dir.path().join("no/such/dir/fabric.dot");
    let o = fabricsim(&["topo", s(&catalogue("quickstart.toml")), "--dot", s(&bad)]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stderr.contains("cannot write"), "{o:?}");
}

#[test]
fn event_budget_gives_partial_results() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(catalogue("quickstart.toml")).unwrap();
    let budgeted = text.replace("end_time = \"10ms\"", "end_time = \"10ms\"\nmax_events = 1000");
    assert_ne!(budgeted, text, "quickstart.toml no longer has `end_time = \"10ms\"`");
    let scenario = dir.path().join("budget.toml");
    std::fs::write(&scenario, budgeted).unwrap();
    let out_dir = dir.path().join("out");
    let o = run_ok(&scenario, &out_dir, None);
    assert_eq!(entries(&out_dir), RESULT_FILES);
    let v = summary(&out_dir);
    assert_eq!(v["run"]["complete"], false, "{v:#}");
    assert_eq!(v["run"]["outcome"], "event_budget", "{v:#}");
    assert_eq!(u(&v, "/run/events"), 1000);
    // Cut short mid-flight: packets are still in the network, and every packet is accounted for.
    let in_network = u(&v, "/packets/in_network");
    assert!(in_network > 0, "{v:#}");
    assert_eq!(
        u(&v, "/packets/injected"),
        u(&v, "/packets/delivered") + u(&v, "/packets/dropped") + in_network
    );
    assert!(o.stdout.contains("event_budget"), "{o:?}");
    assert!(o.stdout.contains("PARTIAL"), "{o:?}");
}

#[test]
fn out_dir_under_a_regular_file_fails_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "not a directory").unwrap();
    let out_dir = file.join("results");
    let o = fabricsim(&["run", s(&catalogue("quickstart.toml")), "--out", s(&out_dir), "--quiet"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert!(
        o.stderr
            .starts_with(&format!("error: cannot write results to {}: ", out_dir.display())),
        "{o:?}"
    );
    assert_eq!(o.stderr.lines().count(), 1, "{o:?}");
    assert!(!out_dir.exists());
    assert_eq!(entries(dir.path()), ["plain-file"], "something was left behind");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory");
}

#[test]
fn out_dir_that_is_a_regular_file_fails_and_leaves_nothing() {
    // Refused before the run (exit 2, as a usage error): the file in the way is left alone.
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("occupied");
    std::fs::write(&out_dir, "keep me").unwrap();
    let o = fabricsim(&["run", s(&catalogue("quickstart.toml")), "--out", s(&out_dir), "--quiet"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert!(o.stderr.starts_with("error: refusing --out "), "{o:?}");
    assert!(o.stderr.contains("exists and is not a directory"), "{o:?}");
    assert_eq!(entries(dir.path()), ["occupied"], "something was left behind");
    assert_eq!(std::fs::read_to_string(&out_dir).unwrap(), "keep me");
}

#[test]
fn invalid_scenario_with_out_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(catalogue("quickstart.toml")).unwrap();
    let bad = text.replace("k = 4", "k = 5");
    assert_ne!(bad, text);
    let scenario = dir.path().join("bad.toml");
    std::fs::write(&scenario, bad).unwrap();
    let out_dir = dir.path().join("out");
    let o = fabricsim(&["run", s(&scenario), "--out", s(&out_dir), "--quiet"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert!(
        o.stderr.starts_with(&format!("error: {}:", scenario.display())),
        "{o:?}"
    );
    assert!(o.stderr.contains(": topology.k: "), "{o:?}");
    assert!(!out_dir.exists());
    assert_eq!(entries(dir.path()), ["bad.toml"], "something was left behind");
    // A scenario file that does not exist: exit 2 as well, nothing written.
    let missing = dir.path().join("missing.toml");
    let o = fabricsim(&["run", s(&missing), "--out", s(&out_dir), "--quiet"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert_eq!(
        o.stderr.trim_end(),
        format!("error: {}: file not found", missing.display())
    );
    assert_eq!(entries(dir.path()), ["bad.toml"]);
}

#[test]
fn rerun_replaces_an_existing_results_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    run_ok(&catalogue("quickstart.toml"), &out_dir, None);
    std::fs::write(out_dir.join("stale.txt"), "from an older run").unwrap();
    // A results directory (it has the marker) is replaced, stale files and all.
    run_ok(&catalogue("quickstart.toml"), &out_dir, None);
    assert_eq!(entries(&out_dir), RESULT_FILES, "stale files survived the rerun");
    assert_eq!(
        entries(dir.path()),
        ["r"],
        "a partial or old directory was left beside it"
    );
}

/// Issue 14: `--out DIR` deleted DIR when it merely held a file named `summary.json`.
#[test]
fn a_directory_without_the_marker_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::write(project.join("summary.json"), "{}").unwrap();
    let o = fabricsim(&["run", s(&catalogue("quickstart.toml")), "--out", s(&project), "--quiet"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    assert_eq!(o.stderr.lines().count(), 1, "{o:?}");
    assert!(o.stderr.contains("not a fabricsim results directory"), "{o:?}");
    assert!(o.stderr.contains("no .fabricsim-results file"), "{o:?}");
    assert!(o.stderr.contains("give a new directory"), "{o:?}");
    assert_eq!(entries(&project), ["src", "summary.json"]);
    assert_eq!(
        std::fs::read_to_string(project.join("src/main.rs")).unwrap(),
        "fn main() {}"
    );
    assert_eq!(entries(dir.path()), ["project"], "something was left behind");
    // The directory of the scenario file (or a parent of it) is refused even with the marker.
    let sc_dir = dir.path().join("study");
    std::fs::create_dir(&sc_dir).unwrap();
    std::fs::copy(catalogue("quickstart.toml"), sc_dir.join("q.toml")).unwrap();
    std::fs::write(sc_dir.join(".fabricsim-results"), "fabricsim.summary/1\n").unwrap();
    for out in [&sc_dir, dir.path()] {
        let o = fabricsim(&["run", s(&sc_dir.join("q.toml")), "--out", s(out), "--quiet"]);
        assert_eq!(o.code, 2, "{o:?}");
        assert!(o.stderr.contains("holds the scenario file"), "{o:?}");
    }
    assert_eq!(entries(&sc_dir), [".fabricsim-results", "q.toml"]);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["frobnicate"][..],
        &["run"][..],
        &["validate", "a.toml", "extra"][..],
    ] {
        let o = fabricsim(args);
        assert_eq!(o.code, 2, "{args:?}: {o:?}");
        assert!(!o.stderr.is_empty(), "{args:?}: {o:?}");
        assert!(o.stdout.is_empty(), "{args:?}: {o:?}");
    }
    let o = fabricsim(&["run", s(&catalogue("quickstart.toml")), "--seed", "minus-one"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("--seed"), "{o:?}");
}
