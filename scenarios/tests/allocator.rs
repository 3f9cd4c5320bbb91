//! The `fabricsim` binary allocates through mimalloc (`main.rs`); the library, and this test
//! process, through the system allocator. Results must not depend on which: nothing in the
//! engine may order, hash or name anything by address. Each case runs a catalogue scenario
//! through the real binary (on one thread and on two) and through the library in this
//! process, and compares every file of the results but `timing.json` byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_fabricsim");

fn catalogue(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("catalogue")
        .join(format!("{name}.toml"))
}

/// Every file under `dir` (relative paths, sorted) but `timing.json`, with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.file_name().is_some_and(|n| n != "timing.json") {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), bytes));
            }
        }
    }
    out.sort();
    out
}

fn binary_run(scenario: &Path, out: &Path, threads: u32) {
    let o = Command::new(BIN)
        .arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .arg("-q")
        .args(["--threads", &threads.to_string()])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{} --threads {threads}: {}",
        scenario.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_binary_on_mimalloc_writes_what_the_library_writes() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["quickstart", "roce_incast_16to1_dcqcn", "ib_ndr_congestion_tree"] {
        let scenario = catalogue(name);
        let lib = dir.path().join(format!("{name}-lib"));
        let opts = scenarios::runner::RunOptions {
            out_dir: Some(lib.clone()),
            ..Default::default()
        };
        scenarios::runner::run_file(&scenario, &opts).unwrap();
        let expected = files(&lib);
        assert!(expected.len() > 3, "{name}: {} files", expected.len());
        for threads in [1, 2] {
            let out = dir.path().join(format!("{name}-bin-{threads}"));
            binary_run(&scenario, &out, threads);
            let got = files(&out);
            let names = |v: &[(PathBuf, Vec<u8>)]| v.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
            assert_eq!(
                names(&got),
                names(&expected),
                "{name}, {threads} thread(s): the same files"
            );
            for ((path, a), (_, b)) in got.iter().zip(&expected) {
                assert!(a == b, "{name}, {threads} thread(s): {} differs", path.display());
            }
        }
    }
}
