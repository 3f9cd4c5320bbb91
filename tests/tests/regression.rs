//! Regression checks (`fabricsim check`, `fabricsim bless`, baselines, JUnit XML), and the
//! project's own suite: every shipped scenario in `scenarios/catalogue/` is checked against its
//! baseline in `scenarios/baselines/` and run twice for byte-identical results.
//!
//! Everything runs in-process through `scenarios::cli::run`, the code path of the binary.

use fabricsim_tests::catalogue;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fabricsim_tests::{fabricsim, s};

/// The shipped scenarios, by listing `scenarios/catalogue/` (sorted).
fn shipped_scenarios() -> Vec<PathBuf> {
    let dir = catalogue("");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no scenario in {}", dir.display());
    v
}

/// Every file of a directory, by name.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let e = e.unwrap();
        m.insert(e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap());
    }
    m
}

/// Parses JUnit XML and returns, per test case, its name and its failure/error element
/// (`("failure", message)`), if any.
fn junit_cases(xml: &str) -> Vec<(String, Option<(String, String)>)> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("JUnit XML does not parse: {e}\n{xml}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root.children().filter(|n| n.has_tag_name("testsuite")).collect();
    assert_eq!(suites.len(), 1, "{xml}");
    let cases: Vec<_> = suites[0].children().filter(|n| n.has_tag_name("testcase")).collect();
    assert_eq!(suites[0].attribute("tests"), Some(cases.len().to_string().as_str()));
    cases
        .iter()
        .map(|c| {
            let bad = c
                .children()
                .find(|n| n.has_tag_name("failure") || n.has_tag_name("error"))
                .map(|n| {
                    (
                        n.tag_name().name().to_owned(),
                        n.attribute("message").unwrap_or("").to_owned(),
                    )
                });
            (c.attribute("name").unwrap().to_owned(), bad)
        })
        .collect()
}

/// A scratch project: `sc/<name>.toml` (a copy of a shipped scenario) with its baselines in
/// `baselines/` (the default location).
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sc")).unwrap();
        Scratch { dir }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    /// Writes scenario `sc/<name>.toml` and returns its path.
    fn scenario(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(&format!("sc/{name}.toml"));
        std::fs::write(&p, text).unwrap();
        p
    }
    fn baseline(&self, name: &str) -> PathBuf {
        self.path(&format!("baselines/{name}.baseline.toml"))
    }
}

fn quickstart_text() -> String {
    std::fs::read_to_string(catalogue("quickstart.toml")).unwrap()
}

/// Quickstart with a different switch latency: the "model parameter" a change moves.
fn slower_switches(text: &str) -> String {
    assert!(text.contains("switch_latency = \"500ns\""));
    text.replace("switch_latency = \"500ns\"", "switch_latency = \"450ns\"")
}

/// The table row of `metric` in a check's stdout, if it moved.
fn row<'a>(stdout: &'a str, metric: &str) -> Option<&'a str> {
    stdout.lines().find(|l| l.split_whitespace().next() == Some(metric))
}

// ---------------------------------------------------------------------------------------------
// The project's own suite.

#[test]
fn every_shipped_scenario_matches_its_baseline() {
    let scenarios = shipped_scenarios();
    let missing: Vec<String> = scenarios
        .iter()
        .filter(|p| !scenarios::regression::baseline_path(p, None).exists())
        .map(|p| {
            format!(
                "{} has no baseline {}: create it with `cargo run --release -p scenarios --bin fabricsim -- bless \
                 scenarios/catalogue/{}`",
                p.display(),
                scenarios::regression::baseline_path(p, None).display(),
                p.file_name().unwrap().to_string_lossy()
            )
        })
        .collect();
    assert!(missing.is_empty(), "\n{}", missing.join("\n"));
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let mut args: Vec<String> = vec!["check".into(), "--quiet".into(), "--junit".into(), s(&junit).into()];
    args.extend(scenarios.iter().map(|p| s(p).to_owned()));
    let o = fabricsim(&args);
    assert_eq!(
        o.code, 0,
        "a shipped scenario moved from its baseline. If the change is intended, re-bless with \
         `cargo run --release -p scenarios --bin fabricsim -- bless scenarios/catalogue/*.toml` and review \
         the diff of scenarios/baselines/.\n{o:?}"
    );
    let cases = junit_cases(&std::fs::read_to_string(&junit).unwrap());
    assert_eq!(cases.len(), scenarios.len());
    assert!(cases.iter().all(|(_, bad)| bad.is_none()), "{cases:?}");
}

#[test]
fn every_shipped_scenario_reruns_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    for sc in shipped_scenarios() {
        let stem = sc.file_stem().unwrap().to_string_lossy().into_owned();
        let (a, b) = (
            dir.path().join(format!("{stem}.a")),
            dir.path().join(format!("{stem}.b")),
        );
        for out in [&a, &b] {
            let o = fabricsim(&["run", s(&sc), "--out", s(out), "--quiet"]);
            // The ring-deadlock study ends `deadlocked`, which exits 3 with its results.
            let want = if stem == "roce_ring_deadlock" { 3 } else { 0 };
            assert_eq!(o.code, want, "{}: {o:?}", sc.display());
        }
        let (fa, fb) = (files(&a), files(&b));
        assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
        for (name, bytes) in &fa {
            if name != "timing.json" {
                assert!(
                    bytes == &fb[name],
                    "{}: {name} differs between identical runs",
                    sc.display()
                );
            }
        }
    }
}

#[test]
fn shipped_baselines_are_what_bless_writes() {
    // Bless writes the same bytes as the shipped file: the shipped baselines are current and
    // in the current format (checked on the smallest scenario; the suite above checks all).
    let dir = tempfile::tempdir().unwrap();
    let sc = catalogue("quickstart.toml");
    let o = fabricsim(&["bless", s(&sc), "--baseline", s(dir.path()), "--quiet"]);
    assert_eq!(o.code, 0, "{o:?}");
    let written = std::fs::read(dir.path().join("quickstart.baseline.toml")).unwrap();
    let shipped = std::fs::read(scenarios::regression::baseline_path(&sc, None)).unwrap();
    assert!(
        written == shipped,
        "re-bless scenarios/catalogue/quickstart.toml:\n{}",
        String::from_utf8_lossy(&written)
    );
}

// ---------------------------------------------------------------------------------------------
// check and bless.

#[test]
fn a_moved_metric_fails_the_check_by_name_and_bless_accepts_it() {
    let t = Scratch::new();
    let sc = t.scenario("q", &quickstart_text());
    let o = fabricsim(&["bless", s(&sc), "--quiet"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(
        o.stdout.contains("(76 metrics; new)") || o.stdout.contains("; new)"),
        "{o:?}"
    );
    let blessed = std::fs::read_to_string(t.baseline("q")).unwrap();
    assert!(blessed.contains("format = \"fabricsim.baseline/1\""), "{blessed}");
    assert_eq!(fabricsim(&["check", s(&sc), "--quiet"]).code, 0);

    // A parameter changes: the check fails and names what moved.
    std::fs::write(&sc, slower_switches(&quickstart_text())).unwrap();
    let junit = t.path("reports/junit.xml");
    let o = fabricsim(&["check", s(&sc), "--quiet", "--junit", s(&junit)]);
    assert_eq!(o.code, 1, "{o:?}");
    let min = row(&o.stdout, "packet_latency_ns.min").unwrap_or_else(|| panic!("{o:?}"));
    assert!(
        min.contains("1498.112") && min.contains("exact") && min.trim_end().ends_with("FAIL"),
        "{min}"
    );
    assert!(
        row(&o.stdout, "topology.hosts").is_none(),
        "unmoved metrics are not listed: {o:?}"
    );
    for want in [
        "metric",
        "baseline",
        "now",
        "change",
        "tolerance",
        "verdict",
        "note: the resolved scenario differs from the one blessed",
        "fabricsim bless",
    ] {
        assert!(o.stdout.contains(want), "stdout lacks {want:?}: {o:?}");
    }
    let cases = junit_cases(&std::fs::read_to_string(&junit).unwrap());
    assert_eq!(cases.len(), 1);
    let (name, bad) = &cases[0];
    assert_eq!(name, "q");
    let (kind, message) = bad.as_ref().expect("a failure");
    assert_eq!(kind, "failure");
    assert!(message.contains("packet_latency_ns.min"), "{message}");

    // Bless accepts the change; the check passes again.
    let o = fabricsim(&["bless", s(&sc), "--quiet"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains("metrics changed"), "{o:?}");
    let reblessed = std::fs::read_to_string(t.baseline("q")).unwrap();
    assert_ne!(blessed, reblessed);
    assert!(
        reblessed.contains("\"packet_latency_ns.min\" = 1498.112\n"),
        "{reblessed}"
    );
    let o = fabricsim(&["check", s(&sc), "--quiet"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains("PASS"), "{o:?}");
    // Blessing again changes nothing.
    let o = fabricsim(&["bless", s(&sc), "--quiet"]);
    assert!(o.stdout.contains("unchanged"), "{o:?}");
    assert_eq!(std::fs::read_to_string(t.baseline("q")).unwrap(), reblessed);
}

#[test]
fn check_section_sets_tolerances_and_selects_metrics() {
    let t = Scratch::new();
    let sc = t.scenario("q", &quickstart_text());
    assert_eq!(fabricsim(&["bless", s(&sc), "--quiet"]).code, 0);
    let slower = slower_switches(&quickstart_text());

    // Loose enough: every moved metric is within tolerance ("ok"), the check passes.
    let loose = format!("{slower}\n[check]\nignore = [\"hotspots\"]\ntolerance.\"*\" = {{ relative = 0.1 }}\n");
    std::fs::write(&sc, loose).unwrap();
    let o = fabricsim(&["check", s(&sc), "--quiet"]);
    assert_eq!(o.code, 0, "{o:?}");
    let min = row(&o.stdout, "packet_latency_ns.min").unwrap_or_else(|| panic!("{o:?}"));
    assert!(min.contains("±10%") && min.trim_end().ends_with("ok"), "{min}");

    // A more specific pattern wins: exact on the packet-latency minimum only.
    let mixed = format!(
        "{slower}\n[check]\ntolerance.\"*\" = {{ relative = 0.1 }}\ntolerance.\"packet_latency_ns.min\" = {{ exact = true }}\n"
    );
    std::fs::write(&sc, mixed).unwrap();
    let o = fabricsim(&["check", s(&sc), "--quiet"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        row(&o.stdout, "packet_latency_ns.min")
            .unwrap()
            .trim_end()
            .ends_with("FAIL")
    );
    assert!(
        row(&o.stdout, "packet_latency_ns.p50")
            .unwrap()
            .trim_end()
            .ends_with("ok")
    );

    // Selection: only the FCT metrics are compared; a pattern that matches nothing is noted.
    let selected = format!("{slower}\n[check]\nmetrics = [\"fct_ns\", \"no_such_metric\"]\n");
    std::fs::write(&sc, selected).unwrap();
    let o = fabricsim(&["check", s(&sc), "--quiet"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(row(&o.stdout, "fct_ns.p50").is_some(), "{o:?}");
    assert!(row(&o.stdout, "packet_latency_ns.min").is_none(), "{o:?}");
    assert!(
        o.stdout.contains("check.metrics: \"no_such_metric\" matches no metric"),
        "{o:?}"
    );

    // [check] is not part of the scenario fingerprint: adding one to the unchanged scenario
    // gives no "scenario differs" note.
    std::fs::write(
        &sc,
        format!("{}\n[check]\nignore = [\"hotspots\"]\n", quickstart_text()),
    )
    .unwrap();
    let o = fabricsim(&["check", s(&sc), "--quiet"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(!o.stdout.contains("differs"), "{o:?}");

    // A bad [check] is a scenario error, located.
    std::fs::write(
        &sc,
        format!("{}\n[check]\ntolerance.x = {{ relative = -1 }}\n", quickstart_text()),
    )
    .unwrap();
    let o = fabricsim(&["check", s(&sc), "--quiet"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(
        o.stderr.contains("check.tolerance.x") && o.stderr.contains(">= 0"),
        "{o:?}"
    );
    assert_eq!(fabricsim(&["validate", s(&sc)]).code, 2);
}

#[test]
fn results_of_another_seed_are_compared_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let r5 = dir.path().join("r5");
    let sc = catalogue("quickstart.toml");
    let o = fabricsim(&["run", s(&sc), "--seed", "5", "--out", s(&r5), "--quiet"]);
    assert_eq!(o.code, 0, "{o:?}");
    let o = fabricsim(&["check", s(&sc), "--from-results", s(&r5)]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        o.stdout
            .contains("note: seed 5 differs from the baseline's seed 1: the metrics are expected to differ"),
        "{o:?}"
    );
    assert!(
        !o.stdout.contains("resolved scenario differs"),
        "only the seed differs: {o:?}"
    );
    assert!(
        o.stdout
            .contains("(1; ~ changed, + added, - removed):\n    ~ scenario.seed = 1 -> 5\n"),
        "the one input that changed is the seed: {o:?}"
    );
    assert!(o.stdout.contains("FAIL"), "{o:?}");
    // The same seed's results directory passes, with no note but where the results are.
    let r1 = dir.path().join("r1");
    assert_eq!(fabricsim(&["run", s(&sc), "--out", s(&r1), "--quiet"]).code, 0);
    let o = fabricsim(&["check", s(&sc), "--from-results", s(&r1)]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(!o.stdout.contains("differs"), "{o:?}");
    assert!(
        !o.stdout.contains("inputs that changed"),
        "the inputs read from scenario.resolved.toml are those bless recorded: {o:?}"
    );

    // Not a results directory, or a broken one: bad input (2), naming the file.
    let o = fabricsim(&["check", s(&sc), "--from-results", s(&dir.path().join("none"))]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("none: not a results directory"), "{o:?}");
    std::fs::write(r1.join("summary.json"), "{ not json").unwrap();
    let o = fabricsim(&["check", s(&sc), "--from-results", s(&r1)]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("summary.json: not valid JSON"), "{o:?}");
    std::fs::write(r1.join("summary.json"), "{\"schema\": \"fabricsim.summary/1\"}").unwrap();
    let o = fabricsim(&["check", s(&sc), "--from-results", s(&r1)]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(
        o.stderr.contains("summary.json: summary.json has no scenario.name"),
        "{o:?}"
    );
}

#[test]
fn missing_corrupt_and_old_format_baselines_are_clear_errors() {
    let t = Scratch::new();
    let sc = t.scenario("q", &quickstart_text());
    let base = t.baseline("q");

    let o = fabricsim(&["check", s(&sc), "--quiet"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(
        o.stderr.contains(&format!(
            "error: {}: no baseline file; create it with `fabricsim bless {}`",
            base.display(),
            sc.display()
        )),
        "{o:?}"
    );

    assert_eq!(fabricsim(&["bless", s(&sc), "--quiet"]).code, 0);
    let good = std::fs::read_to_string(&base).unwrap();
    let cases = [
        ("[[[ not toml", "not a valid baseline"),
        ("", "no `format` key"),
        (
            "format = \"fabricsim.baseline/0\"\n",
            "baseline format \"fabricsim.baseline/0\" is not the one",
        ),
        (
            &good.replace("fabricsim.baseline/1", "fabricsim.baseline/2"),
            "baseline format \"fabricsim.baseline/2\"",
        ),
        (
            &good.replace("\"run.outcome\" = \"completed\"", "\"run.outcome\" = [1]"),
            "metric \"run.outcome\"",
        ),
        (&good.replace("seed = 1\n", ""), "`seed` is missing"),
    ];
    for (text, want) in cases {
        std::fs::write(&base, text).unwrap();
        let o = fabricsim(&["check", s(&sc), "--quiet"]);
        assert_eq!(o.code, 2, "{text}: {o:?}");
        assert!(o.stderr.contains(&format!("error: {}: ", base.display())), "{o:?}");
        assert!(o.stderr.contains(want), "{want}: {o:?}");
        assert!(o.stderr.contains("re-create it with `fabricsim bless"), "{o:?}");
    }
    std::fs::write(&base, [0xff, 0xfe]).unwrap();
    let o = fabricsim(&["check", s(&sc), "--quiet"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("not UTF-8"), "{o:?}");
    // Bless repairs it, and says so.
    let o = fabricsim(&["bless", s(&sc), "--quiet"]);
    assert!(o.stdout.contains("replaced an unreadable baseline"), "{o:?}");
    assert_eq!(std::fs::read_to_string(&base).unwrap(), good);

    // An error in one scenario does not stop the others, and shows in JUnit as an error.
    std::fs::write(&base, &good).unwrap();
    let other = t.scenario("other", &quickstart_text());
    let junit = t.path("j.xml");
    let o = fabricsim(&["check", s(&sc), s(&other), "--quiet", "--junit", s(&junit)]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stdout.contains("1 passed, 0 failed, 1 error(s)"), "{o:?}");
    let cases = junit_cases(&std::fs::read_to_string(&junit).unwrap());
    assert_eq!(cases[0], ("q".to_string(), None));
    let (name, bad) = &cases[1];
    assert_eq!(name, "other");
    let (kind, message) = bad.as_ref().unwrap();
    assert_eq!(kind, "error");
    assert!(message.contains("other.baseline.toml: no baseline file"), "{message}");
}

/// Issue 14: a baseline whose metrics are `inf` or `-inf` passed `check` for any run ("0
/// moved"). Such a baseline is refused, naming the file and the metric.
#[test]
fn a_baseline_with_non_finite_metrics_is_refused() {
    let t = Scratch::new();
    let sc = t.scenario("q", &quickstart_text());
    let base = t.baseline("q");
    assert_eq!(fabricsim(&["bless", s(&sc), "--quiet"]).code, 0);
    let good = std::fs::read_to_string(&base).unwrap();
    let line = good
        .lines()
        .find(|l| l.starts_with("\"fct_ns.p99\" = "))
        .expect("the baseline has fct_ns.p99")
        .to_owned();
    for v in ["inf", "-inf", "nan"] {
        std::fs::write(&base, good.replace(&line, &format!("\"fct_ns.p99\" = {v}"))).unwrap();
        let o = fabricsim(&["check", s(&sc), "--quiet"]);
        assert_eq!(o.code, 2, "{v}: {o:?}");
        assert!(o.stderr.contains(&format!("error: {}: ", base.display())), "{o:?}");
        assert!(
            o.stderr
                .contains(&format!("metric \"fct_ns.p99\" is {v}, not a finite number")),
            "{o:?}"
        );
    }
}

#[test]
fn junit_is_well_formed_whatever_the_names() {
    // A scenario file name full of XML's special characters.
    let t = Scratch::new();
    let stem = "a&b<c>\"d'";
    let sc = t.scenario(stem, &quickstart_text());
    let baseline_dir = t.path("bl");
    assert_eq!(
        fabricsim(&["bless", s(&sc), "--baseline", s(&baseline_dir), "--quiet"]).code,
        0
    );
    std::fs::write(&sc, slower_switches(&quickstart_text())).unwrap();
    let junit = t.path("j.xml");
    let o = fabricsim(&[
        "check",
        s(&sc),
        "--baseline",
        s(&baseline_dir),
        "--junit",
        s(&junit),
        "--quiet",
    ]);
    assert_eq!(o.code, 1, "{o:?}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let cases = junit_cases(&xml);
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].0, stem);
    assert_eq!(cases[0].1.as_ref().unwrap().0, "failure");
    // The table is in the failure's text, and nothing but the report is left in the directory.
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failure = doc.descendants().find(|n| n.has_tag_name("failure")).unwrap();
    assert!(failure.text().unwrap().contains("packet_latency_ns.min"), "{xml}");
    let mut names: Vec<String> = std::fs::read_dir(t.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["bl", "j.xml", "sc"]);
}

#[test]
fn exit_codes() {
    let t = Scratch::new();
    let a = t.scenario("a", &quickstart_text());
    let b = t.scenario("b", &quickstart_text());
    assert_eq!(fabricsim(&["bless", s(&a), s(&b), "--quiet"]).code, 0);
    // All pass: 0.
    assert_eq!(fabricsim(&["check", s(&a), s(&b), "--quiet"]).code, 0);
    // One regression: 1.
    std::fs::write(&b, slower_switches(&quickstart_text())).unwrap();
    let o = fabricsim(&["check", s(&a), s(&b), "--quiet"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stdout.contains("1 passed, 1 failed, 0 error(s)"), "{o:?}");
    assert!(
        o.stdout.contains(&format!("fabricsim bless {}\n", b.display())),
        "{o:?}"
    );
    // A regression and a bad scenario: 2 (bad input wins).
    let bad = t.scenario("bad", "[scenario]\nname = 1\n");
    assert_eq!(fabricsim(&["check", s(&a), s(&b), s(&bad), "--quiet"]).code, 2);
    assert_eq!(fabricsim(&["bless", s(&bad), "--quiet"]).code, 2);
    // Usage errors: 2.
    assert_eq!(fabricsim(&["check"]).code, 2);
    assert_eq!(fabricsim(&["bless"]).code, 2);
    let o = fabricsim(&["check", s(&a), s(&b), "--from-results", s(t.dir.path())]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("exactly one scenario"), "{o:?}");
    let o = fabricsim(&["check", s(&a), "--from-results", "x", "--results", "y"]);
    assert_eq!(o.code, 2, "{o:?}");
    // The JUnit file cannot be written: 1.
    let o = fabricsim(&["check", s(&a), "--quiet", "--junit", s(&a.join("under-a-file.xml"))]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stderr.contains("cannot write JUnit XML"), "{o:?}");
}

#[test]
fn results_are_kept_only_when_asked() {
    let t = Scratch::new();
    let sc = t.scenario("q", &quickstart_text());
    assert_eq!(
        fabricsim(&["bless", s(&sc), "--quiet", "--results", s(&t.path("kept"))]).code,
        0
    );
    assert!(t.path("kept/q/summary.json").is_file());
    let o = fabricsim(&["check", s(&sc), "--quiet", "--results", s(&t.path("kept2"))]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(
        o.stdout
            .contains(&format!("note: results in {}", t.path("kept2/q").display())),
        "{o:?}"
    );
    // Blessing from a results directory gives the same baseline as blessing from a run.
    let from_run = std::fs::read(t.baseline("q")).unwrap();
    std::fs::remove_file(t.baseline("q")).unwrap();
    let o = fabricsim(&["bless", s(&sc), "--from-results", s(&t.path("kept/q"))]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(std::fs::read(t.baseline("q")).unwrap(), from_run);
}

// ---------------------------------------------------------------------------------------------
// Workload groups and counters in the summary, as the baselines see them.

const TWO_GROUPS: &str = r#"[scenario]
name = "two-groups"

[topology]
kind = "fat_tree"
k = 4
host_link = { rate = "100Gbps" }
fabric_link = { rate = "100Gbps" }

[[workload]]
kind = "flows"
name = "bulk"
flows = [{ src = 0, dst = 5, size = "1MiB" }, { src = 1, dst = 6, size = "1MiB" }]

[[workload]]
kind = "flows"
name = "rpc, small"
class = 3
flows = [{ src = 2, dst = 7, size = "4KiB" }]

[[workload]]
kind = "incast"
receiver = 9
n_senders = 2
size = "64KiB"
"#;

#[test]
fn groups_and_counters_are_reported_and_checked() {
    let t = Scratch::new();
    let sc = t.scenario("g", TWO_GROUPS);
    let o = fabricsim(&["bless", s(&sc), "--quiet", "--results", s(&t.path("r"))]);
    assert_eq!(o.code, 0, "{o:?}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.path("r/g/summary.json")).unwrap()).unwrap();
    let groups = summary["groups"].as_array().unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bulk", "rpc, small", "workload2"]);
    assert_eq!(groups[0]["flows"], 2);
    assert_eq!(groups[1]["class"], 3);
    assert_eq!(groups[2]["flows"], 2);
    let total: u64 = groups.iter().map(|g| g["flows"].as_u64().unwrap()).sum();
    assert_eq!(total, summary["flows"]["total"].as_u64().unwrap());
    assert_eq!(summary["counters"]["link_hops"], summary["run"]["link_hops"]);
    assert_eq!(groups[0]["fct_ns"]["count"], groups[0]["completed"]);

    let csv = std::fs::read_to_string(t.path("r/g/flows.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",completed,group"), "{csv}");
    assert!(
        csv.contains(",bulk\n") && csv.contains(",\"rpc, small\"\n") && csv.contains(",workload2\n"),
        "{csv}"
    );

    let base = std::fs::read_to_string(t.baseline("g")).unwrap();
    for key in [
        "\"groups.bulk.fct_ns.p99\" = ",
        "\"groups.rpc, small.class\" = 3\n",
        "\"groups.workload2.completed\" = 2\n",
        "\"counters.link_hops\" = ",
    ] {
        assert!(base.contains(key), "baseline lacks {key:?}:\n{base}");
    }
    // A counter that is not in the baseline yet is reported as new, not as a failure; one
    // that disappeared fails.
    let without = base
        .lines()
        .filter(|l| !l.starts_with("\"counters.link_hops\""))
        .collect::<Vec<_>>()
        .join("\n");
    // (Into [metrics], which is not the last section: [inputs] is.)
    assert!(without.contains("\n[metrics]\n"), "{without}");
    let with_retired = without.replace("\n[metrics]\n", "\n[metrics]\n\"counters.retired\" = 1\n");
    std::fs::write(t.baseline("g"), format!("{with_retired}\n")).unwrap();
    let o = fabricsim(&["check", s(&sc), "--quiet"]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        row(&o.stdout, "counters.link_hops")
            .unwrap()
            .trim_end()
            .ends_with("new"),
        "{o:?}"
    );
    assert!(
        row(&o.stdout, "counters.retired")
            .unwrap()
            .trim_end()
            .ends_with("MISSING"),
        "{o:?}"
    );
}
