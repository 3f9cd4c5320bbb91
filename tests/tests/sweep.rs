//! Parameter sweeps (`[sweep]`, `fabricsim sweep`, `docs/sweeps.md`): expansion, located
//! errors, a real sweep's rows, determinism across `--jobs`, resume, the per-run timeout,
//! Ctrl-C, and the Slurm job array run by a stand-in `sbatch`.
//!
//! Validation runs in-process (`scenarios::cli::run`); sweeps that run points spawn the
//! `fabricsim-test` binary of this crate (the same `main` as `fabricsim`), because the
//! orchestrator starts its children from the current executable.

use fabricsim_tests::{catalogue, fabricsim, s};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The base of every sweep here: the shipped quickstart (a permutation on a k=4 fat-tree:
/// milliseconds per run at the sizes swept below).
fn base() -> String {
    read(&catalogue("quickstart.toml"))
}

/// 2 x 2 points x 2 seeds.
const GRID: &str = r#"
[sweep]
seeds = 2

[sweep.params]
"workload.0.size" = ["64KiB", "256KiB"]
"fabric.switch_latency" = ["500ns", "1us"]
"#;

/// Two points: point 0 takes milliseconds; point 1 (16 x 16 GiB flows, simulated to the end,
/// about 10^9 packet hops) takes minutes, far longer than any limit used below.
const FAST_THEN_SLOW: &str = r#"
[sweep]
mode = "zip"

[sweep.params]
"workload.0.size" = ["64KiB", "16GiB"]
"run.end_time" = ["10ms", "10s"]
"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fabricsim-test"))
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs the binary with `args` (and `path_prefix` before `PATH`, if given).
fn spawn(args: &[&str], path_prefix: Option<&Path>) -> Run {
    let mut cmd = bin();
    cmd.args(args).stdin(Stdio::null());
    if let Some(p) = path_prefix {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![p.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    let o = cmd.output().expect("the fabricsim-test binary runs");
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8(o.stdout).unwrap(),
        stderr: String::from_utf8(o.stderr).unwrap(),
    }
}

fn sweep_ok(file: &Path, out: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["sweep", s(file), "--out", s(out)];
    args.extend(extra);
    let r = spawn(&args, None);
    assert_eq!(r.code, 0, "{r:?}");
    r
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The CSV as rows of cells (no quoted commas in these tables).
fn csv(p: &Path) -> Vec<Vec<String>> {
    read(p)
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn col(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

/// Validates the base with `[sweep.params]` holding the one line `params` (the file's last):
/// checks the exit status is 2 and returns the first error line, with the file and that line
/// number written `FILE:LAST`.
fn first_error(dir: &Path, params: &str) -> String {
    let text = format!("{}\n[sweep.params]\n{params}\n", base());
    let last = text.lines().count();
    let f = write(dir, "bad.toml", &text);
    let o = fabricsim(&["validate", s(&f)]);
    assert_eq!(o.code, 2, "{o:?}");
    let first = o.stderr.lines().next().unwrap_or_default();
    first.replace(&format!("{}:{last}:", f.display()), "FILE:LAST:")
}

#[test]
fn validate_lists_grid_points_first_parameter_slowest() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "g.toml", &format!("{}{GRID}", base()));
    let o = fabricsim(&["validate", s(&f)]);
    assert_eq!(o.code, 0, "{o:?}");
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!("{}: ok (sweep, grid: 4 point(s) x 2 seed(s) = 8 run(s))", f.display())
    );
    assert_eq!(lines.len(), 5, "{o:?}");
    assert!(
        lines[1]
            .starts_with("  point 0 (workload.0.size = \"64KiB\", fabric.switch_latency = \"500ns\"): fat-tree k=4")
    );
    assert!(lines[2].starts_with("  point 1 (workload.0.size = \"64KiB\", fabric.switch_latency = \"1us\"): "));
    assert!(lines[3].starts_with("  point 2 (workload.0.size = \"256KiB\", fabric.switch_latency = \"500ns\"): "));
    assert!(lines[4].starts_with("  point 3 (workload.0.size = \"256KiB\", fabric.switch_latency = \"1us\"): "));
}

#[test]
fn validate_zips_lists() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "z.toml",
        &format!("{}{}", base(), GRID.replace("seeds = 2", "mode = \"zip\"")),
    );
    let o = fabricsim(&["validate", s(&f)]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(
        o.stdout.contains("ok (sweep, zip: 2 point(s) x 1 seed(s) = 2 run(s))"),
        "{o:?}"
    );
    assert!(
        o.stdout
            .contains("point 1 (workload.0.size = \"256KiB\", fabric.switch_latency = \"1us\")"),
        "{o:?}"
    );
}

#[test]
fn bad_values_and_paths_are_located_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    // A bad value in point 1 of 2: reported at that value, with the point; nothing runs.
    let text = format!("{}\n[sweep.params]\n\"topology.k\" = [4, 5]\n", base());
    let line = text.lines().count();
    let f = write(dir.path(), "v.toml", &text);
    let out = dir.path().join("out");
    for cmd in ["validate", "sweep"] {
        let o = fabricsim(&[cmd, s(&f), "--out", s(&out)][..if cmd == "validate" { 2 } else { 4 }]);
        assert_eq!(o.code, 2, "{cmd}: {o:?}");
        assert_eq!(
            o.stderr,
            format!(
                "error: {f}:{line}:20: sweep point 1 (topology.k = 5): topology.k: fat-tree k must be even and at \
                 least 2 (got k=5)\nerror: {f}: 1 of 2 sweep point(s) are invalid; nothing was run\n",
                f = f.display()
            ),
            "{cmd}"
        );
    }
    assert!(!out.exists(), "an invalid sweep must not create its output directory");

    // A unit error inside a tagged table is still blamed on the swept value, and names its key.
    let e = first_error(dir.path(), "\"fabric.buffer.size\" = [\"1MiB\", \"12Kb\"]");
    assert!(
        e.starts_with(
            "error: FILE:LAST:33: sweep point 1 (fabric.buffer.size = \"12Kb\"): fabric.buffer.size: invalid size \"12Kb\""
        ),
        "{e}"
    );
    // A path into a missing [[workload]] entry, and a misspelt key: at the key.
    let e = first_error(dir.path(), "\"workload.2.size\" = [\"1MiB\"]");
    assert_eq!(
        e,
        "error: FILE:LAST:1: sweep point 0 (workload.2.size = \"1MiB\"): workload.2.size: `workload` has 1 entries \
         (0..=0), so no entry 2"
    );
    let e = first_error(dir.path(), "\"fabric.switch_latncy\" = [\"1us\"]");
    assert!(
        e.starts_with(
            "error: FILE:LAST:1: sweep point 0 (fabric.switch_latncy = \"1us\"): fabric.switch_latncy: unknown field \
             `switch_latncy`"
        ),
        "{e}"
    );

    // Errors in the [sweep] table itself.
    let f = write(
        dir.path(),
        "m.toml",
        &format!("{}\n[sweep]\nmode = \"cartesian\"\n", base()),
    );
    let o = fabricsim(&["sweep", s(&f)]);
    assert_eq!(o.code, 2, "{o:?}");
    let line = base().lines().count() + 3;
    assert_eq!(
        o.stderr,
        format!(
            "error: {}:{line}:8: sweep.mode: unknown variant `cartesian`, expected `grid` or `zip`\n",
            f.display()
        )
    );
}

#[test]
fn run_refuses_a_sweep_file_and_sweep_refuses_a_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{}{GRID}", base());
    let f = write(dir.path(), "g.toml", &text);
    let line = base().lines().count() + 2;
    for cmd in ["run", "topo"] {
        let o = fabricsim(&[cmd, s(&f)]);
        assert_eq!(o.code, 2, "{o:?}");
        assert!(
            o.stderr.starts_with(&format!(
                "error: {}:{line}:2: sweep: this file is a sweep (it has a [sweep] table), not one scenario: run its \
                 points with `fabricsim sweep FILE`",
                f.display()
            )),
            "{cmd}: {o:?}"
        );
    }
    let plain = write(dir.path(), "plain.toml", &base());
    let o = fabricsim(&["sweep", s(&plain)]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("no [sweep] table: this is one scenario"), "{o:?}");
}

#[test]
fn small_sweep_rows_and_identical_tables_for_any_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "g.toml", &format!("{}{GRID}", base()));
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let r = sweep_ok(&f, &a, &["--jobs", "1"]);
    sweep_ok(&f, &b, &["--jobs", "2", "--quiet"]);
    for t in ["sweep.csv", "sweep_summary.csv"] {
        assert_eq!(
            read(&a.join(t)),
            read(&b.join(t)),
            "{t} differs between --jobs 1 and --jobs 2"
        );
    }
    assert!(
        r.stderr
            .contains("4 point(s) x 2 seed(s) = 8 run(s); 0 up to date, 8 to run, 1 at a time"),
        "{r:?}"
    );
    assert!(r.stderr.contains("[8/8] point "), "{r:?}");
    assert!(
        r.stdout.contains("mean ± 95% confidence half-width over 2 seed(s)"),
        "{r:?}"
    );

    let rows = csv(&a.join("sweep.csv"));
    let h = &rows[0];
    assert_eq!(
        &h[..5],
        ["point", "seed", "workload.0.size", "fabric.switch_latency", "status"]
    );
    assert_eq!(rows.len(), 9, "a row per point and seed");
    let want = [
        ("0", "1", "64KiB", "500ns"),
        ("0", "2", "64KiB", "500ns"),
        ("1", "1", "64KiB", "1us"),
        ("1", "2", "64KiB", "1us"),
        ("2", "1", "256KiB", "500ns"),
        ("2", "2", "256KiB", "500ns"),
        ("3", "1", "256KiB", "1us"),
        ("3", "2", "256KiB", "1us"),
    ];
    for (row, (p, seed, size, lat)) in rows[1..].iter().zip(want) {
        assert_eq!(&row[..5], [p, seed, size, lat, "ok"]);
    }
    // Each row holds its run's summary.json figures.
    let (p99, flows) = (col(h, "latency_p99_ns"), col(h, "flows_total"));
    for row in &rows[1..] {
        let run_dir = a
            .join("points")
            .join(format!("{:04}", row[0].parse::<usize>().unwrap()))
            .join(format!("seed-{}", row[1]));
        let summary: serde_json::Value = serde_json::from_str(&read(&run_dir.join("summary.json"))).unwrap();
        assert_eq!(row[p99], summary["packet_latency_ns"]["p99"].to_string());
        assert_eq!(summary["scenario"]["seed"].to_string(), row[1]);
        assert_eq!(row[flows], "16");
    }
    // The seeds differ (a different permutation), so point 2's runs differ.
    assert_ne!(rows[5][p99], rows[6][p99]);

    // The summary: 2 ok runs per point, a mean and an interval.
    let sum = csv(&a.join("sweep_summary.csv"));
    assert_eq!(sum.len(), 5);
    let sh = &sum[0];
    assert_eq!(
        &sh[..5],
        ["point", "workload.0.size", "fabric.switch_latency", "runs", "ok"]
    );
    let (mean, ci) = (col(sh, "latency_p99_ns.mean"), col(sh, "latency_p99_ns.ci95"));
    let x: Vec<f64> = [&rows[5], &rows[6]].iter().map(|r| r[p99].parse().unwrap()).collect();
    let m: f64 = sum[3][mean].parse().unwrap();
    let half: f64 = sum[3][ci].parse().unwrap();
    assert!((m - (x[0] + x[1]) / 2.0).abs() < 1e-9 * m);
    // n = 2: t(0.975, 1) = 12.706, s = |x0 - x1| / sqrt(2), half-width = t s / sqrt(2).
    assert!(
        (half - 12.706 * (x[0] - x[1]).abs() / 2.0).abs() < 1e-9 * half,
        "{half} vs {x:?}"
    );
    assert_eq!(&sum[3][3..5], ["2", "2"]);
    // Each point's resolved scenario file is in the output directory.
    let point = read(&a.join("points/0003/scenario.toml"));
    assert!(
        point.contains("size = \"256KiB\"") && point.contains("switch_latency = \"1us\""),
        "{point}"
    );
    assert!(!point.contains("[sweep"), "{point}");
}

#[test]
fn resume_skips_finished_runs_and_reruns_changed_points() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "g.toml", &format!("{}{GRID}", base()));
    let out = dir.path().join("out");
    sweep_ok(&f, &out, &["--quiet"]);
    let first = read(&out.join("sweep.csv"));
    let marker = |p: usize, seed: u64| out.join(format!("points/{p:04}/seed-{seed}/marker"));
    for p in 0..4 {
        for seed in 1..=2 {
            std::fs::write(marker(p, seed), "kept").unwrap();
        }
    }
    // Unchanged: nothing reruns (a rerun replaces the results directory, marker and all).
    let r = sweep_ok(&f, &out, &[]);
    assert!(r.stderr.contains("8 up to date, 0 to run"), "{r:?}");
    assert_eq!(read(&out.join("sweep.csv")), first);
    assert!((0..4).all(|p| marker(p, 1).exists() && marker(p, 2).exists()));
    let timing = csv(&out.join("sweep_timing.csv"));
    assert!(timing[1..].iter().all(|r| r[3] == "true"), "{timing:?}");

    // Points 1 and 3 change (switch latency 1us -> 2us): only their runs rerun.
    std::fs::write(&f, format!("{}{}", base(), GRID.replace("\"1us\"", "\"2us\""))).unwrap();
    let r = sweep_ok(&f, &out, &[]);
    assert!(r.stderr.contains("4 up to date, 4 to run"), "{r:?}");
    for p in 0..4 {
        let kept = p % 2 == 0;
        assert_eq!(marker(p, 1).exists(), kept, "point {p}");
        assert_eq!(marker(p, 2).exists(), kept, "point {p}");
    }
    let rows = csv(&out.join("sweep.csv"));
    assert_eq!(&rows[3][..5], ["1", "1", "64KiB", "2us", "ok"]);

    // A results directory whose summary is gone is no longer complete: it reruns.
    std::fs::remove_file(out.join("points/0000/seed-2/summary.json")).unwrap();
    let r = sweep_ok(&f, &out, &[]);
    assert!(r.stderr.contains("7 up to date, 1 to run"), "{r:?}");
    assert!(r.stderr.contains("[1/1] point 0 seed 2 "), "{r:?}");
}

#[test]
fn timeout_kills_the_run_and_marks_it() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "t.toml", &format!("{}{FAST_THEN_SLOW}", base()));
    let out = dir.path().join("out");
    let r = spawn(
        &["sweep", s(&f), "--out", s(&out), "--timeout", "1", "--jobs", "2"],
        None,
    );
    assert_eq!(r.code, 1, "a timed-out run makes the sweep fail: {r:?}");
    let rows = csv(&out.join("sweep.csv"));
    assert_eq!(&rows[1][..5], ["0", "1", "64KiB", "10ms", "ok"]);
    assert_eq!(&rows[2][..5], ["1", "1", "16GiB", "10s", "timeout"]);
    assert!(rows[2][5..].iter().all(String::is_empty), "{rows:?}");
    assert!(r.stderr.contains("timeout in "), "{r:?}");
    assert!(r.stdout.contains("point 1 seed 1: timeout"), "{r:?}");
    // Nothing of the killed run is left but its log.
    let entries: Vec<String> = std::fs::read_dir(out.join("points/0001"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut entries = entries;
    entries.sort();
    assert_eq!(entries, ["scenario.toml", "seed-1.log"]);
}

#[cfg(unix)]
#[test]
fn interrupt_kills_children_and_keeps_finished_runs() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "c.toml", &format!("{}{FAST_THEN_SLOW}", base()));
    let out = dir.path().join("out");
    let mut child = bin()
        .args(["sweep", s(&f), "--out", s(&out), "--jobs", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    // With one job, point 1 starts when point 0 has finished: then interrupt.
    loop {
        let mut line = String::new();
        assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "the sweep ended early: {seen}");
        seen.push_str(&line);
        if line.starts_with("[1/2] point 0 seed 1") {
            break;
        }
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("interrupted: stopping the running points"), "{rest}");
    let rows = csv(&out.join("sweep.csv"));
    assert_eq!(rows[1][4], "ok");
    assert_eq!(rows[2][4], "cancelled");
    assert!(out.join("points/0000/seed-1/summary.json").is_file());
    assert!(!out.join("points/0001/seed-1").exists());
    // No process still runs a point of this sweep.
    #[cfg(target_os = "linux")]
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline);
            assert!(!cmdline.contains(s(&out.join("points"))), "still running: {cmdline}");
        }
    }
    // A rerun resumes: point 0 is up to date (the slow point is given a short limit).
    let r = spawn(&["sweep", s(&f), "--out", s(&out), "--timeout", "0.5"], None);
    assert!(r.stderr.contains("1 up to date, 1 to run"), "{r:?}");
}

/// A stand-in for `sbatch`: runs every task of the array in turn, as Slurm would.
const FAKE_SBATCH: &str = r#"#!/bin/bash
set -eu
script="$1"
range=$(sed -n 's/^#SBATCH --array=\([0-9]*-[0-9]*\).*/\1/p' "$script")
for i in $(seq "${range%-*}" "${range#*-}"); do
    SLURM_ARRAY_TASK_ID=$i bash "$script"
done
echo "Submitted batch job 4242"
"#;

#[cfg(unix)]
#[test]
fn slurm_array_then_collect_gives_the_local_tables() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "g.toml", &format!("{}{GRID}", base()));
    let local = dir.path().join("local");
    sweep_ok(&f, &local, &["--quiet"]);

    let out = dir.path().join("slurm");
    // Without sbatch: the script is written and the command printed.
    let empty = dir.path().join("empty-bin");
    std::fs::create_dir(&empty).unwrap();
    let mut cmd = bin();
    let o = cmd
        .args(["sweep", s(&f), "--out", s(&out), "--slurm", "--array-throttle", "2"])
        .env("PATH", &empty)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("sbatch is not on PATH: submit it on the cluster with `sbatch "),
        "{stdout}"
    );
    let script = read(&out.join("slurm/sweep.sbatch"));
    assert!(script.contains("#SBATCH --array=0-3%2\n"), "{script}");
    assert!(
        script.contains("#SBATCH --time=2:02:00\n"),
        "two seeds of (3600 s + 60 s): {script}"
    );
    assert_eq!(
        read(&out.join("slurm/tasks.txt")),
        "points/0000 1 2\npoints/0001 1 2\npoints/0002 1 2\npoints/0003 1 2\n"
    );
    // Collecting before the array ran: every run missing, exit 1.
    let r = spawn(&["sweep", s(&f), "--out", s(&out), "--collect"], None);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(csv(&out.join("sweep.csv"))[1..].iter().all(|r| r[4] == "missing"));

    // With a stand-in sbatch that runs the array's tasks.
    let fake = dir.path().join("bin");
    std::fs::create_dir(&fake).unwrap();
    let sbatch = write(&fake, "sbatch", FAKE_SBATCH);
    std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = spawn(&["sweep", s(&f), "--out", s(&out), "--slurm"], Some(&fake));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("Submitted batch job 4242"), "{r:?}");
    let r = spawn(&["sweep", s(&f), "--out", s(&out), "--collect"], None);
    assert_eq!(r.code, 0, "{r:?}");
    for t in ["sweep.csv", "sweep_summary.csv"] {
        assert_eq!(
            read(&out.join(t)),
            read(&local.join(t)),
            "{t}: Slurm and local runs differ"
        );
    }
    // Everything is up to date now: nothing to submit.
    let r = spawn(&["sweep", s(&f), "--out", s(&out), "--slurm"], Some(&fake));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("every run is up to date: nothing to submit"), "{r:?}");
}

#[test]
fn output_directory_must_be_a_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "g.toml", &format!("{}{GRID}", base()));
    let out = dir.path().join("busy");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("thesis.tex"), "precious").unwrap();
    let o = fabricsim(&["sweep", s(&f), "--out", s(&out)]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(
        o.stderr.contains("is not a sweep's output directory (no sweep.json)"),
        "{o:?}"
    );
    assert_eq!(read(&out.join("thesis.tex")), "precious");
}

#[test]
fn shipped_sweeps_validate() {
    let dir = catalogue("sweeps");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let o = fabricsim(&["validate", s(&p)]);
            assert_eq!(o.code, 0, "{}: {o:?}", p.display());
            assert!(o.stdout.contains(": ok (sweep, "), "{o:?}");
            n += 1;
        }
    }
    assert!(n > 0, "no sweep in {}", dir.display());
}

/// A polyline of a chart: (stroke colour, stroke width, points).
type Polyline = (String, String, Vec<(f64, f64)>);

/// A chart's SVG: its texts and its polylines.
struct Svg {
    texts: Vec<String>,
    lines: Vec<Polyline>,
}

fn svg(path: &Path) -> Svg {
    let text = read(path);
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{}: not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let mut out = Svg {
        texts: Vec::new(),
        lines: Vec::new(),
    };
    for n in doc.descendants() {
        match n.tag_name().name() {
            "text" => out.texts.push(n.text().unwrap_or_default().trim().to_owned()),
            "polyline" => {
                let points = n
                    .attribute("points")
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect();
                let attr = |a: &str| n.attribute(a).unwrap_or_default().to_owned();
                out.lines.push((attr("stroke"), attr("stroke-width"), points));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn sweep_plots_a_chart_per_metric_with_a_series_per_second_parameter_value() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = r#"
[sweep]
seeds = 2

[sweep.params]
"workload.0.size" = ["64KiB", "256KiB", "1MiB"]
"fabric.switch_latency" = ["500ns", "1us", "2us"]
"#;
    let f = write(dir.path(), "p.toml", &format!("{}{sweep}", base()));
    let out = dir.path().join("out");
    let r = sweep_ok(&f, &out, &["--jobs", "2", "--quiet"]);
    assert!(r.stdout.contains("plots: 13 files in"), "{r:?}");
    let chart = out.join("plots/latency_p99_ns.svg");
    let g = svg(&chart);
    // Title and axis labels: the metric and the first parameter.
    for t in [
        "latency_p99_ns vs workload.0.size (mean of 2 seeds, 95% CI)",
        "workload.0.size",
        "latency_p99_ns",
    ] {
        assert!(g.texts.iter().any(|x| x == t), "no text {t:?} in {:?}", g.texts);
    }
    // Ticks at the first parameter's values as written; a legend entry per second value.
    for t in ["64KiB", "256KiB", "1MiB"] {
        assert!(g.texts.iter().any(|x| x == t), "no tick {t}");
    }
    let legend: Vec<&String> = g
        .texts
        .iter()
        .filter(|t| t.starts_with("fabric.switch_latency = "))
        .collect();
    assert_eq!(legend.len(), 3, "{legend:?}");
    // One data line (width 2, a point per size) per second-parameter value.
    let series: Vec<&Polyline> = g.lines.iter().filter(|l| l.1 == "2" && l.2.len() == 3).collect();
    assert_eq!(series.len(), 3, "{:?}", g.lines);
    // Each point's pixel is where its mean from sweep_summary.csv belongs: x increasing with
    // the size on a numeric axis (64, 256, 1024 KiB), y one linear (downward) map of the mean.
    let sum = csv(&out.join("sweep_summary.csv"));
    let m = col(&sum[0], "latency_p99_ns.mean");
    let mean = |size: usize, lat: usize| -> f64 { sum[1 + size * 3 + lat][m].parse().unwrap() };
    let mut pairs = Vec::new();
    for (lat, line) in series.iter().enumerate() {
        let xs: Vec<f64> = line.2.iter().map(|p| p.0).collect();
        assert!(xs[0] < xs[1] && xs[1] < xs[2], "{xs:?}");
        let frac = (xs[1] - xs[0]) / (xs[2] - xs[0]);
        assert!((frac - 192.0 / 960.0).abs() < 0.01, "x of 256KiB at {frac} of the span");
        for (size, p) in line.2.iter().enumerate() {
            assert!(
                p.0 > 0.0 && p.0 < 800.0 && p.1 > 0.0 && p.1 < 480.0,
                "{p:?} outside the chart"
            );
            pairs.push((mean(size, lat), p.1));
        }
    }
    let lo = pairs
        .iter()
        .copied()
        .fold((f64::MAX, 0.0), |a, p| if p.0 < a.0 { p } else { a });
    let hi = pairs
        .iter()
        .copied()
        .fold((f64::MIN, 0.0), |a, p| if p.0 > a.0 { p } else { a });
    assert!(
        hi.0 > lo.0 && hi.1 < lo.1,
        "larger means must be drawn higher: {pairs:?}"
    );
    let slope = (hi.1 - lo.1) / (hi.0 - lo.0);
    for (v, py) in &pairs {
        let want = lo.1 + (v - lo.0) * slope;
        assert!((py - want).abs() <= 1.5, "mean {v} drawn at y {py}, expected {want}");
    }
    // Error bars (a stem and two caps) in the series' colours at every point.
    let colours: Vec<&String> = series.iter().map(|l| &l.0).collect();
    let bars = g.lines.iter().filter(|l| l.1 == "1" && colours.contains(&&l.0)).count();
    assert_eq!(bars, 3 * 9, "a bar per point");
    // `fabricsim plot` of the sweep directory redraws the same bytes.
    let before = read(&chart);
    let o = fabricsim(&["plot", s(&out)]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(o.stdout.lines().count(), 13, "{o:?}");
    assert_eq!(read(&chart), before);

    // One parameter whose values are not numbers: positions in the order written, one series,
    // no legend, no bars with one seed.
    let one = r#"
[sweep.params]
"topology.host_link" = [{ rate = "100Gbps", cable_m = 3 }, { rate = "40Gbps", cable_m = 3 }]
"#;
    let f = write(dir.path(), "c.toml", &format!("{}{one}", base()));
    let out = dir.path().join("cat");
    sweep_ok(&f, &out, &["--quiet"]);
    let g = svg(&out.join("plots/throughput_gbps.svg"));
    assert!(g.texts.iter().any(|t| t == "topology.host_link"), "{:?}", g.texts);
    let ticks: Vec<usize> = [
        "{ cable_m = 3, rate = \"100Gbps\" }",
        "{ cable_m = 3, rate = \"40Gbps\" }",
    ]
    .iter()
    .map(|t| {
        g.texts
            .iter()
            .position(|x| x == t)
            .unwrap_or_else(|| panic!("no tick {t}"))
    })
    .collect();
    assert!(ticks[0] < ticks[1]);
    let series: Vec<_> = g.lines.iter().filter(|l| l.1 == "2").collect();
    assert_eq!(series.len(), 1, "one line, no legend mark: {:?}", g.lines);
    let p = &series[0].2;
    assert!(p[0].0 < p[1].0 && p[0].1 < p[1].1, "100G above 40G: {p:?}");
}
