//! The `fabricsim` binary under signals and with dangerous `--out` directories (issue 14).
//!
//! These run the real binary (`CARGO_BIN_EXE_fabricsim`): signal handling is set up by
//! `main.rs`, and the current directory is the child's own. No timing threshold: the signal is
//! sent once the run has printed a progress line, i.e. while it is simulating.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_fabricsim");

/// A run of minutes (128 hosts, 256 MiB each), cut short by its signal long before.
const LONG_RUN: &str = r#"[scenario]
name = "long"

[topology]
kind = "fat_tree"
k = 8
host_link = { rate = "100Gbps" }
fabric_link = { rate = "100Gbps" }

[[workload]]
kind = "permutation"
size = "256MiB"

[run]
end_time = "1s"
wall_clock_s = 600
"#;

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Runs the long scenario, sends `signal` once it reports progress, and returns the exit
/// status and stdout.
fn run_and_signal(dir: &Path, signal: &str) -> (i32, String) {
    let scenario = dir.join("long.toml");
    std::fs::write(&scenario, LONG_RUN).unwrap();
    let mut child = Command::new(BIN)
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--out",
            dir.join("out").to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (mut seen, mut sent) = (Vec::new(), false);
    // Read stderr to its end (a closed pipe would fail the child's next write).
    for line in stderr.lines() {
        let line = line.unwrap();
        if !sent && line.contains("... simulated") {
            let ok = Command::new("kill")
                .args([signal, &child.id().to_string()])
                .status()
                .unwrap();
            assert!(ok.success());
            sent = true;
        }
        seen.push(line);
    }
    let out = child.wait_with_output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        seen.iter().any(|l| l.contains("... simulated")),
        "no progress line; stderr: {seen:?}"
    );
    (code, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn assert_interrupted_results(dir: &Path, code: i32, stdout: &str) {
    assert_eq!(code, 130, "{stdout}");
    assert!(stdout.contains("(PARTIAL: interrupted)"), "{stdout}");
    let out = dir.join("out");
    let summary: String = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(summary.contains("\"outcome\": \"interrupted\""), "{summary}");
    assert!(summary.contains("\"complete\": false"), "{summary}");
    assert!(out.join(".fabricsim-results").is_file());
    assert_eq!(
        entries(dir),
        ["long.toml", "out"],
        "a partial or old directory was left"
    );
}

#[test]
fn ctrl_c_during_the_simulation_writes_partial_results_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout) = run_and_signal(dir.path(), "-INT");
    assert_interrupted_results(dir.path(), code, &stdout);
}

#[test]
fn sigterm_during_the_simulation_writes_partial_results_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout) = run_and_signal(dir.path(), "-TERM");
    assert_interrupted_results(dir.path(), code, &stdout);
}

/// `--out .` wiped a project directory; `--out ..` is as bad.
#[test]
fn the_current_directory_and_its_parents_are_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.rs"), "// mine").unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue/quickstart.toml");
    // Even with the marker (a results directory used as a working directory).
    std::fs::write(project.join(".fabricsim-results"), "fabricsim.summary/1\n").unwrap();
    for (out, what) in [
        (".", "is the current directory"),
        ("..", "is a parent of the current directory"),
        ("src/..", "is the current directory"),
    ] {
        let o = Command::new(BIN)
            .args(["run", scenario.to_str().unwrap(), "--out", out, "-q"])
            .current_dir(&project)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{out}: {stderr}");
        assert!(stderr.contains(what), "{out}: {stderr}");
        assert!(o.stdout.is_empty(), "{out}");
    }
    assert_eq!(entries(&project), [".fabricsim-results", "src"]);
    assert_eq!(std::fs::read_to_string(project.join("src/lib.rs")).unwrap(), "// mine");
    assert_eq!(entries(dir.path()), ["project"]);
}
