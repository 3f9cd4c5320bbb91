//! The `fabricsim` binary allocates through mimalloc (`scenarios/src/main.rs`, and so does
//! this crate's copy of it, `fabricsim-test`); the library, and this test process, through
//! the system allocator. Results must not depend on which: nothing in the engine may order,
//! hash or name anything by address. Each case runs a catalogue scenario through the binary
//! (on one thread and on two) and in this process, and compares every file of the results
//! but `timing.json` byte for byte.

use fabricsim_tests::{catalogue, fabricsim, outputs, s};
use std::process::Command;

#[test]
fn the_binary_on_mimalloc_writes_what_the_library_writes() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["quickstart", "roce_incast_16to1_dcqcn", "ib_ndr_congestion_tree"] {
        let scenario = catalogue(&format!("{name}.toml"));
        let lib = dir.path().join(format!("{name}-lib"));
        let r = fabricsim(&["run", s(&scenario), "--out", s(&lib), "-q"]);
        assert_eq!(r.code, 0, "{r:?}");
        let expected = outputs(&lib);
        assert!(expected.len() > 3, "{name}: {} files", expected.len());
        for threads in [1, 2] {
            let out = dir.path().join(format!("{name}-bin-{threads}"));
            let o = Command::new(env!("CARGO_BIN_EXE_fabricsim-test"))
                .args([
                    "run",
                    s(&scenario),
                    "--out",
                    s(&out),
                    "-q",
                    "--threads",
                    &threads.to_string(),
                ])
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{name}, {threads} thread(s): {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let got = outputs(&out);
            let names = |v: &[(String, Vec<u8>)]| v.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
            assert_eq!(
                names(&got),
                names(&expected),
                "{name}, {threads} thread(s): the same files"
            );
            for ((file, a), (_, b)) in got.iter().zip(&expected) {
                assert!(a == b, "{name}, {threads} thread(s): {file} differs");
            }
        }
    }
}
