//! `fabricsim diff RUN_A RUN_B` end to end, and what the regression report and the diff
//! share: moved metrics largest relative change first, lists folded into one row, counts that
//! add up, the inputs that changed named by key.
//!
//! Everything runs in-process through `scenarios::cli::run`, the code path of the binary.

use fabricsim_tests::{catalogue, fabricsim, s};
use std::path::{Path, PathBuf};

/// Runs `scenario_text` (written to `dir/<name>.toml`) into `dir/<name>` and returns the
/// results directory.
fn run(dir: &Path, name: &str, scenario_text: &str) -> PathBuf {
    let sc = dir.join(format!("{name}.toml"));
    std::fs::write(&sc, scenario_text).unwrap();
    let out = dir.join(name);
    let o = fabricsim(&["run", s(&sc), "--out", s(&out), "--quiet"]);
    assert_eq!(o.code, 0, "{o:?}");
    out
}

fn shipped(name: &str) -> String {
    std::fs::read_to_string(catalogue(name)).unwrap()
}

/// `text` with `from` replaced by `to` (which must be there).
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} is not in the scenario");
    text.replacen(from, to, 1)
}

/// The table of a report: the cells of each row under the header line that starts with
/// `metric` (split on runs of two or more spaces), up to the first line that is not indented.
/// Continuation lines (`largest: ...`) are returned with a single cell.
fn table(stdout: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut inside = false;
    for l in stdout.lines() {
        let t = l.trim();
        if !inside {
            inside = t.starts_with("metric ");
            continue;
        }
        if !l.starts_with("  ") || t.starts_with("PASS:") || t.starts_with("FAIL:") {
            break;
        }
        rows.push(
            t.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect(),
        );
    }
    assert!(inside, "no table in:\n{stdout}");
    rows
}

/// The relative change of a `change` cell (`-554 (-96.7%)` -> 96.7), `None` when it has none.
fn percent(change: &str) -> Option<f64> {
    let (_, rest) = change.rsplit_once('(')?;
    rest.strip_suffix("%)")?
        .trim_start_matches('+')
        .parse::<f64>()
        .ok()
        .map(f64::abs)
}

/// Checks that the rows are in descending order of relative change: rows without one (text,
/// from zero, added, gone, folded lists led by such a change) first.
fn assert_sorted_by_size(rows: &[Vec<String>], change_col: usize, stdout: &str) {
    let sizes: Vec<f64> = rows
        .iter()
        .filter(|r| r.len() > change_col)
        .map(|r| percent(&r[change_col]).unwrap_or(f64::INFINITY))
        .collect();
    assert!(sizes.len() >= 3, "too few rows to tell an order:\n{stdout}");
    for w in sizes.windows(2) {
        assert!(
            w[0] >= w[1],
            "not largest change first ({} before {}):\n{stdout}",
            w[0],
            w[1]
        );
    }
}

/// The counts of a summary line `N metrics: a x, b y, ...`: `(N, [(count, words)])`.
fn counts(line: &str) -> (usize, Vec<(usize, String)>) {
    let (total, rest) = line.split_once(" metrics: ").unwrap_or_else(|| panic!("{line}"));
    let total = total.rsplit(' ').next().unwrap().parse().unwrap();
    let parts = rest
        .split(", ")
        .map(|p| {
            let (n, words) = p.split_once(' ').unwrap();
            (n.parse().unwrap_or_else(|_| panic!("{line}")), words.to_owned())
        })
        .collect();
    (total, parts)
}

fn summary_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.contains(" metrics: "))
        .unwrap_or_else(|| panic!("no summary line:\n{stdout}"))
}

/// Runs shipped scenario `name` as it is (A) and with `from` replaced by `to` (B), in a
/// temporary directory (returned, to keep it).
fn two_runs(name: &str, from: &str, to: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let text = shipped(name);
    let a = run(dir.path(), "a", &text);
    let b = run(dir.path(), "b", &edit(&text, from, to));
    (dir, a, b)
}

/// The metrics of a results directory, as `check` and `diff` extract them.
fn metrics_of(dir: &Path) -> scenarios::regression::Metrics {
    scenarios::regression::read_results(dir).unwrap().metrics
}

#[test]
fn two_runs_differing_in_one_input_name_it_and_list_the_moved_metrics_largest_first() {
    let (_dir, a, b) = two_runs("quickstart.toml", "size = \"512KiB\"", "size = \"64KiB\"");
    let o = fabricsim(&["diff", s(&a), s(&b)]);
    assert_eq!(o.code, 0, "a difference is no failure: {o:?}");
    // The one input that changed, and nothing else.
    let input_lines: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("  ~ ") || l.starts_with("  + ") || l.starts_with("  - "))
        .collect();
    assert_eq!(
        input_lines,
        ["  ~ fabric.buffer.size = \"512KiB\" -> \"64KiB\""],
        "{o:?}"
    );
    // The moved metrics, largest change first, with the values of the two summaries.
    let rows = table(&o.stdout);
    assert_sorted_by_size(&rows, 3, &o.stdout);
    let (ma, mb) = (metrics_of(&a), metrics_of(&b));
    let dropped = rows
        .iter()
        .find(|r| r[0] == "packets.dropped")
        .unwrap_or_else(|| panic!("packets.dropped moved with the buffer: {o:?}"));
    assert_eq!(dropped[1], ma.get("packets.dropped").unwrap().to_string());
    assert_eq!(dropped[2], mb.get("packets.dropped").unwrap().to_string());
    assert!(
        rows.iter().all(|r| r[0] != "topology.hosts"),
        "unchanged metrics are not listed: {o:?}"
    );
    // The counts add up, and say how many metrics differ.
    let (total, parts) = counts(summary_line(&o.stdout));
    assert_eq!(parts.iter().map(|p| p.0).sum::<usize>(), total, "{o:?}");
    let all: std::collections::BTreeSet<&str> = ma.iter().chain(mb.iter()).map(|(k, _)| k).collect();
    assert_eq!(total, all.len());
    let differ = ma.iter().filter(|(k, v)| mb.get(k).is_some_and(|w| w != *v)).count();
    assert!(parts.contains(&(differ, "differ".into())), "{differ}: {o:?}");

    // --json says the same, machine-readably: every differing metric, largest first.
    let o = fabricsim(&["diff", s(&a), s(&b), "--json"]);
    assert_eq!(o.code, 0, "{o:?}");
    let j: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(j["identical"], false);
    assert_eq!(j["inputs"].as_array().unwrap().len(), 1);
    assert_eq!(j["inputs"][0]["key"], "fabric.buffer.size");
    assert_eq!(j["inputs"][0]["b"], "\"64KiB\"");
    let metrics = j["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), differ);
    assert_eq!(j["counts"]["differ"], differ);
    assert_eq!(j["counts"]["metrics"], total);
    let rel: Vec<f64> = metrics
        .iter()
        .map(|m| m["relative"].as_f64().map_or(f64::INFINITY, f64::abs))
        .collect();
    assert!(rel.windows(2).all(|w| w[0] >= w[1]), "{rel:?}");

    // --all lists every metric once, the unchanged ones too.
    let o = fabricsim(&["diff", s(&a), s(&b), "--all"]);
    assert_eq!(o.code, 0, "{o:?}");
    let rows = table(&o.stdout);
    assert_eq!(rows.len(), total, "{o:?}");
    let hosts = rows.iter().find(|r| r[0] == "topology.hosts").unwrap();
    assert_eq!(hosts.last().unwrap(), "=");
}

#[test]
fn ranking_lists_fold_into_one_row_each() {
    // A smaller buffer reshuffles the hotspot ranking and the pause tree of a PFC incast.
    let (_dir, a, b) = two_runs("roce_incast_16to1_pfc.toml", "buffer = \"2MiB\"", "buffer = \"1MiB\"");
    let o = fabricsim(&["diff", s(&a), s(&b)]);
    assert_eq!(o.code, 0, "{o:?}");
    let rows = table(&o.stdout);
    let (ma, mb) = (metrics_of(&a), metrics_of(&b));
    for list in ["hotspots", "pause_tree"] {
        // Which entries moved, from the two summaries.
        let entries = |m: &scenarios::regression::Metrics| -> std::collections::BTreeMap<String, String> {
            let mut e = std::collections::BTreeMap::<String, String>::new();
            for (k, v) in m.iter() {
                if let Some(rest) = k.strip_prefix(&format!("{list}.")) {
                    let idx = rest.split('.').next().unwrap().to_owned();
                    e.entry(idx).or_default().push_str(&format!("{k}={v};"));
                }
            }
            e
        };
        let (ea, eb) = (entries(&ma), entries(&mb));
        let moved = ea.iter().filter(|(i, v)| eb.get(*i).is_some_and(|w| w != *v)).count();
        assert!(moved >= 2, "{list}: the test needs a reshuffled list: {o:?}");
        let pattern = format!("{list}.*");
        let row = rows
            .iter()
            .position(|r| r[0] == pattern)
            .unwrap_or_else(|| panic!("no folded {pattern} row: {o:?}"));
        assert!(
            rows.iter()
                .all(|r| !r[0].starts_with(&format!("{list}.")) || r[0] == pattern || r[0].starts_with("largest:")),
            "{list}: its entries are folded, not listed: {o:?}"
        );
        assert_eq!(rows[row][1], format!("{} entries", ea.len()), "{o:?}");
        assert!(
            rows[row][3].starts_with(&format!("{moved} entries moved")),
            "{list}: {moved} moved: {o:?}"
        );
        assert!(rows[row + 1][0].starts_with(&format!("largest: {list}.")), "{o:?}");
    }
}

#[test]
fn identical_runs_have_no_differences() {
    let dir = tempfile::tempdir().unwrap();
    let text = shipped("quickstart.toml");
    let a = run(dir.path(), "a", &text);
    let b = run(dir.path(), "b", &text);
    let o = fabricsim(&["diff", s(&a), s(&b)]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains("no differences"), "{o:?}");
    let o = fabricsim(&["diff", s(&a), s(&b), "--json"]);
    let j: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(j["identical"], true, "{o:?}");
    assert_eq!(j["metrics"].as_array().map(Vec::len), Some(0));

    // Another seed is an input that differs.
    let sc = dir.path().join("a.toml");
    let c = dir.path().join("seed5");
    assert_eq!(
        fabricsim(&["run", s(&sc), "--seed", "5", "--out", s(&c), "--quiet"]).code,
        0
    );
    let o = fabricsim(&["diff", s(&a), s(&c)]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(!o.stdout.contains("no differences"), "{o:?}");
    assert!(o.stdout.contains("  ~ scenario.seed = 1 -> 5\n"), "{o:?}");
}

#[test]
fn a_directory_that_is_not_a_results_directory_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = run(dir.path(), "a", &shipped("quickstart.toml"));
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join("summary.json"), "{}").unwrap();
    let missing = dir.path().join("missing");
    for (x, y, bad, why) in [
        (&a, &plain, &plain, "not a fabricsim results directory"),
        (&plain, &a, &plain, "not a fabricsim results directory"),
        (&a, &missing, &missing, "no such directory"),
        (
            &a,
            &dir.path().join("a.toml"),
            &dir.path().join("a.toml"),
            "not a directory",
        ),
    ] {
        let o = fabricsim(&["diff", s(x), s(y)]);
        assert_eq!(o.code, 2, "{o:?}");
        assert!(o.stderr.contains(&format!("error: {}: {why}", bad.display())), "{o:?}");
        assert!(o.stdout.is_empty(), "{o:?}");
    }
    // A results directory whose summary is broken: also bad input, naming the file.
    std::fs::write(a.join("summary.json"), "{ not json").unwrap();
    let o = fabricsim(&["diff", s(&a), s(&a)]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("summary.json: not valid JSON"), "{o:?}");
}

// ---------------------------------------------------------------------------------------------
// `fabricsim check`: the same ordering, folding and counts, and the inputs that changed.

/// A scratch project: `sc/q.toml` and its baseline in `baselines/` (the default location).
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    /// Writes `sc/q.toml` and blesses it.
    fn blessed(text: &str) -> Project {
        let p = Project {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(p.dir.path().join("sc")).unwrap();
        p.write(text);
        let o = fabricsim(&["bless", s(&p.scenario()), "--quiet"]);
        assert_eq!(o.code, 0, "{o:?}");
        p
    }
    fn scenario(&self) -> PathBuf {
        self.dir.path().join("sc/q.toml")
    }
    fn baseline(&self) -> PathBuf {
        self.dir.path().join("baselines/q.baseline.toml")
    }
    fn write(&self, text: &str) {
        std::fs::write(self.scenario(), text).unwrap();
    }
    fn check(&self, extra: &[&str]) -> fabricsim_tests::Out {
        let sc = self.scenario();
        let mut args = vec!["check", s(&sc), "--quiet"];
        args.extend_from_slice(extra);
        fabricsim(&args)
    }
}

#[test]
fn check_names_the_inputs_that_changed_and_lists_the_largest_moves_first() {
    let text = shipped("quickstart.toml");
    let p = Project::blessed(&text);
    let baseline = std::fs::read_to_string(p.baseline()).unwrap();
    assert!(
        baseline.contains("\n[inputs]\n") && baseline.contains("\n\"fabric.buffer.size\" = \"512KiB\"\n"),
        "the baseline records the resolved scenario's inputs:\n{baseline}"
    );
    p.write(&edit(&text, "switch_latency = \"500ns\"", "switch_latency = \"600ns\""));
    let junit = p.dir.path().join("junit.xml");
    let o = p.check(&["--junit", s(&junit)]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        o.stdout.contains(
            "  inputs that changed since the baseline (1; ~ changed, + added, - removed):\n    ~ fabric.switch_latency = \"500ns\" -> \"600ns\"\n"
        ),
        "{o:?}"
    );
    let rows = table(&o.stdout);
    assert_sorted_by_size(&rows, 3, &o.stdout);
    assert!(rows.iter().all(|r| r.last().unwrap() == "FAIL"), "{o:?}");
    // The counts add up to every metric of the baseline and the run.
    let before = scenarios::regression::Baseline::read(&p.baseline()).unwrap().metrics;
    let line = summary_line(&o.stdout);
    assert!(line.trim_start().starts_with("FAIL: "), "{line}");
    let (total, parts) = counts(line);
    assert_eq!(parts.iter().map(|c| c.0).sum::<usize>(), total, "{line}");
    assert_eq!(total, before.len(), "no metric was added or lost: {line}");
    let beyond = parts.iter().find(|c| c.1 == "beyond tolerance").unwrap().0;
    assert_eq!(beyond, rows.len(), "one row per moved metric (no list moved): {o:?}");
    // The JUnit report stays valid XML and carries the input diff in its output.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let out = doc
        .descendants()
        .find(|n| n.has_tag_name("system-out"))
        .and_then(|n| n.text())
        .unwrap();
    assert!(
        out.contains("~ fabric.switch_latency = \"500ns\" -> \"600ns\""),
        "{xml}"
    );
}

#[test]
fn check_counts_add_up_with_tolerances_and_left_out_metrics() {
    let text = shipped("quickstart.toml");
    let p = Project::blessed(&text);
    let moved = edit(&text, "switch_latency = \"500ns\"", "switch_latency = \"450ns\"");
    p.write(&format!(
        "{moved}\n[check]\nignore = [\"hotspots\", \"topology\"]\ntolerance.\"packet_latency_ns\" = {{ relative = 0.5 }}\n"
    ));
    let o = p.check(&[]);
    assert_eq!(o.code, 1, "{o:?}");
    let rows = table(&o.stdout);
    assert_sorted_by_size(&rows, 3, &o.stdout);
    let line = summary_line(&o.stdout);
    let (total, parts) = counts(line);
    assert_eq!(parts.iter().map(|c| c.0).sum::<usize>(), total, "{line}");
    let n = |words: &str| parts.iter().find(|c| c.1 == words).map(|c| c.0);
    let verdicts = |v: &str| rows.iter().filter(|r| r.last().is_some_and(|x| x == v)).count();
    assert_eq!(n("moved within tolerance"), Some(verdicts("ok")), "{o:?}");
    assert!(verdicts("ok") > 0, "the latencies moved within 50 %: {o:?}");
    assert_eq!(n("beyond tolerance"), Some(verdicts("FAIL")), "{o:?}");
    let base = scenarios::regression::Baseline::read(&p.baseline()).unwrap().metrics;
    let left_out = base
        .iter()
        .filter(|(k, _)| k.starts_with("hotspots.") || k.starts_with("topology."))
        .count();
    assert!(left_out > 0);
    assert_eq!(n("left out by [check]"), Some(left_out), "{line}");
    assert_eq!(total, base.len(), "{line}");
}

#[test]
fn a_baseline_blessed_before_inputs_were_recorded_is_still_checked() {
    let text = shipped("quickstart.toml");
    let p = Project::blessed(&text);
    let full = std::fs::read_to_string(p.baseline()).unwrap();
    let cut = full
        .find("\n# The resolved scenario's inputs")
        .expect("an [inputs] section");
    std::fs::write(p.baseline(), &full[..=cut]).unwrap();
    let o = p.check(&[]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains("  PASS: "), "{o:?}");
    p.write(&edit(&text, "size = \"512KiB\"", "size = \"64KiB\""));
    let o = p.check(&[]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        o.stdout.contains("which inputs changed is not known"),
        "the note says why no input is named: {o:?}"
    );
    assert!(!o.stdout.contains("inputs that changed"), "{o:?}");
    assert_sorted_by_size(&table(&o.stdout), 3, &o.stdout);
}
