//! The selection-guide study (`studies/selection-guide/`, issue 12) end to end: the reduced
//! (`ci/`) variant runs in-process, its tables hold values that can fail (analytic bandwidths and
//! latencies, NVLink above PCIe, lossless networks), every run matches its `fabricsim check`
//! baseline, and the committed report `docs/studies/selection-guide.md` is what these runs give.

use scenarios::regression;
use scenarios::study::{self, Family, guide};
use std::path::PathBuf;

fn study_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../studies/selection-guide")
}

/// |now / expected - 1| <= tol.
fn near(now: f64, expected: f64, tol: f64) -> bool {
    (now / expected - 1.0).abs() <= tol
}

fn p2p<'a>(d: &'a guide::Measured, label_start: &str) -> &'a guide::P2p {
    d.p2p
        .iter()
        .find(|p| p.label.starts_with(label_start))
        .unwrap_or_else(|| panic!("no point-to-point row {label_start}"))
}

fn ar_busbw(d: &guide::Measured, shape: &str, n: u32, size: u64) -> f64 {
    let rows = &d.server[&(shape.to_string(), n)].0;
    rows.iter()
        .find(|r| r.0 == size)
        .unwrap_or_else(|| panic!("{shape} x{n}: no AllReduce of {size} B"))
        .1
}

#[test]
fn selection_guide_ci_study_tables_are_sane_and_match_baselines_and_doc() {
    let dir = study_dir();
    let manifest = study::read_manifest(&dir.join("study.toml")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let runs = study::run_all(&dir.join("ci"), out.path(), 2, true).unwrap();
    let d = guide::measure(&manifest, &runs).unwrap();

    // (1) Point to point, against the link models' analytic figures.
    // The line's data rate x 4096 / (4096 + header): 26 B on InfiniBand (models.md §1.1), 82 B
    // on RoCEv2 (models.md §2.1).
    for (label, gbps, header) in [
        ("InfiniBand HDR", 200.0, 26.0),
        ("InfiniBand NDR", 400.0, 26.0),
        ("RoCEv2 200G", 200.0, 82.0),
        ("RoCEv2 400G", 400.0, 82.0),
    ] {
        let p = p2p(&d, label);
        let expected = gbps / 8.0 * 4096.0 / (4096.0 + header);
        assert!(
            near(p.one_way_gbs, expected, 0.02),
            "{label}: {} GB/s, expected {expected}",
            p.one_way_gbs
        );
    }
    // One 64-B message across one switch, 2 m cables (10 ns each), with the NIC/HCA send and
    // receive processing: IB is cut-through (one serialization of 64 + 26 B at 400 Gb/s, 130 ns
    // switch); RoCEv2 store-and-forward (two of 64 + 82 B, 500 ns switch). The tolerance (0.5 %) tells one from the other.
    let ib = p2p(&d, "InfiniBand NDR");
    let hca = fabrics::engine::IB_HCA_LATENCY;
    let nic = fabrics::engine::ETHERNET_NIC_LATENCY;
    let ib_ns = (hca.tx + hca.rx).ps() as f64 / 1000.0 + 20.0 + 130.0 + 90.0 * 8.0 / 400.0;
    assert!(
        near(ib.wire_us * 1000.0, ib_ns, 0.005),
        "IB NDR latency {} us, expected {ib_ns} ns",
        ib.wire_us
    );
    let roce = p2p(&d, "RoCEv2 400G");
    let roce_ns = (nic.tx + nic.rx).ps() as f64 / 1000.0 + 20.0 + 500.0 + 2.0 * 146.0 * 8.0 / 400.0;
    assert!(
        near(roce.wire_us * 1000.0, roce_ns, 0.005),
        "RoCEv2 latency {} us, expected {roce_ns} ns",
        roce.wire_us
    );
    // The endpoint column is the manifest's inputs, added per family.
    let e = &manifest.endpoint;
    assert!(near(ib.endpoint_us * 1000.0, e.pcie_rtt_ns, 1e-9));
    // Faster generations are faster; NVLink is an order of magnitude above PCIe.
    let bw = |l: &str| p2p(&d, l).one_way_gbs;
    assert!(
        bw("PCIe 4.0") < bw("PCIe 5.0") && bw("PCIe 5.0") < bw("NVLink 3.0") && bw("NVLink 3.0") < bw("NVLink 4.0")
    );
    assert!(
        near(bw("PCIe 5.0") / bw("PCIe 4.0"), 2.0, 0.05),
        "PCIe 5 / PCIe 4 = {}",
        bw("PCIe 5.0") / bw("PCIe 4.0")
    );
    assert!(bw("NVLink 4.0") > 5.0 * bw("PCIe 5.0"));
    for p in d.p2p.iter().filter(|p| p.family != Family::Network) {
        assert!(
            p.both_gbs > 1.9 * p.one_way_gbs,
            "{}: both directions {} vs one {}",
            p.label,
            p.both_gbs,
            p.one_way_gbs
        );
    }

    // (2) In a server: NVLink through NVSwitch beats PCIe at every GPU count and size, below
    // the payload bound of 18 x 25 GB/s x 256/272 per H100.
    let sizes = [1u64 << 20, 4 << 20];
    for n in [2u32, 4, 8] {
        for s in sizes {
            let pcie5 = ar_busbw(&d, "pcie5", n, s);
            assert!(ar_busbw(&d, "pcie4", n, s) < pcie5, "{n} GPUs, {s} B: PCIe 4 >= PCIe 5");
            for nv in ["nvswitch3", "nvswitch4"] {
                assert!(
                    ar_busbw(&d, nv, n, s) > 2.0 * pcie5,
                    "{n} GPUs, {s} B: {nv} not above PCIe 5"
                );
            }
            assert!(ar_busbw(&d, "nvswitch4", n, s) < 18.0 * 25.0 * 256.0 / 272.0);
        }
    }
    // A ring AllReduce on an 8-GPU full mesh uses one link pair of seven: the model's surprise,
    // stated in the report; keep it visible here (NVLink 3: 12 links / 7 pairs = 1 link).
    assert!(ar_busbw(&d, "mesh3", 8, 4 << 20) < ar_busbw(&d, "pcie5", 8, 4 << 20));
    let (verdict, _, _) = guide::server_verdict(&d);
    assert!(verdict.starts_with(guide::HOLDS_IF), "{verdict}");
    assert!(verdict.contains("full mesh with 8 GPUs"), "{verdict}");

    // (3) Between servers: NDR (400G) at least as fast as RoCEv2 200G; lossless everywhere.
    for s in [2u32, 4, 8, 16] {
        let big = |net: &str| {
            let c = d
                .clusters
                .iter()
                .find(|c| c.net == net && c.servers == s && c.tiers == 2)
                .unwrap_or_else(|| panic!("no {net} run at {s} servers"));
            c.ar.iter().max_by_key(|r| r.0).unwrap().1
        };
        assert!(
            big("ib_ndr") > big("roce200"),
            "{s} servers: NDR {} <= RoCEv2 200G {}",
            big("ib_ndr"),
            big("roce200")
        );
    }
    assert_eq!(d.tails.len(), 16);
    for t in &d.tails {
        assert_eq!(t.drops, 0, "{} x{}: drops on a lossless network", t.net, t.servers);
        let (idle, p99) = (t.idle_p50_us.unwrap(), t.loaded_p99_us.unwrap());
        assert!(idle > 1.0 && idle < 5.0, "{}: idle probe {idle} us", t.net);
        assert!(p99 >= idle, "{}: loaded p99 {p99} below idle {idle}", t.net);
    }
    let fits = guide::scaling(&d);
    assert!(
        fits.iter()
            .all(|f| f.1 == 4 && f.2.is_some_and(|(a, b)| a.is_finite() && b.is_finite()))
    );

    // (4) Cost: every cluster priced, cheaper network cheaper per GPU.
    for s in [2u32, 4, 8, 16] {
        let cost = |net: &str| {
            d.clusters
                .iter()
                .find(|c| c.net == net && c.servers == s)
                .and_then(|c| c.cost_per_gpu)
                .unwrap()
        };
        assert!(cost("roce200") < cost("roce400") && cost("roce400") < cost("ib_ndr"));
    }

    // (5) A verdict per guide row.
    let md = guide::render(&manifest, &d, "ci");
    for h in ["## 1.", "## 2.", "## 3.", "## 4.", "## 5."] {
        assert!(md.contains(h), "report has no section {h}");
    }
    let verdicts = guide::cluster_verdicts(&d);
    assert_eq!(verdicts.len(), 4);
    for (claim, (v, _)) in &verdicts {
        assert!(
            [guide::HOLDS, guide::HOLDS_IF, guide::FAILS]
                .iter()
                .any(|w| v.starts_with(w)),
            "{claim}: {v}"
        );
    }

    // Every run matches its baseline (compared from the results just written, not rerun).
    let mut failed = Vec::new();
    for r in &runs {
        let opts = regression::Options {
            from_results: Some(out.path().join(&r.stem)),
            ..regression::Options::default()
        };
        let file = dir.join("ci").join(format!("{}.toml", r.stem));
        let checked = regression::check_one(&file, &opts).unwrap();
        if !checked.comparison.passed() {
            failed.push(r.stem.clone());
        }
    }
    assert!(
        failed.is_empty(),
        "runs differ from their baselines: {failed:?}; if intended, `fabricsim bless studies/selection-guide/ci/*.toml`"
    );

    // The committed report is these runs' report.
    let committed = std::fs::read_to_string(dir.join(&manifest.study.doc)).unwrap();
    assert!(
        committed == md,
        "docs/studies/selection-guide.md is stale: rerun `fabricsim study studies/selection-guide/study.toml`"
    );

    // Its figures: one per GPU count in a server, AllReduce and all-to-all between servers, the
    // loaded p99; each linked from the report, with a line per network, and the committed SVG
    // files are exactly these runs' figures (no more, no fewer, the same bytes).
    let figs = study::figures::figures(&d);
    let names: Vec<&str> = figs.iter().map(|f| f.file.as_str()).collect();
    assert_eq!(
        names,
        [
            "server_allreduce_2gpus.svg",
            "server_allreduce_4gpus.svg",
            "server_allreduce_8gpus.svg",
            "cluster_allreduce.svg",
            "cluster_alltoall.svg",
            "tail_p99.svg"
        ]
    );
    let fig_name = study::figures::dir_name(&manifest.study.doc);
    let fig_dir = dir.join(&manifest.study.doc).parent().unwrap().join(&fig_name);
    let mut stale = Vec::new();
    for f in &figs {
        let svg = f.draw().unwrap();
        assert!(
            md.contains(&format!("]({fig_name}/{})", f.file)),
            "the report does not link {}",
            f.file
        );
        assert!(svg.starts_with("<svg") && svg.contains(&f.title), "{}", f.file);
        if f.file.starts_with("cluster_") {
            for (_, label) in &guide::NETWORKS[..3] {
                assert!(svg.contains(label), "{}: no line for {label}", f.file);
            }
            assert_eq!(
                svg.matches("stroke-width=\"2\" points=").count(),
                2 * 3,
                "{}: 3 lines and their legend marks",
                f.file
            );
        }
        if std::fs::read_to_string(fig_dir.join(&f.file)).ok().as_deref() != Some(svg.as_str()) {
            stale.push(f.file.clone());
        }
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(&fig_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut want: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    want.sort();
    assert_eq!(
        on_disk,
        want,
        "{} holds other files than the figures",
        fig_dir.display()
    );
    assert!(
        stale.is_empty(),
        "figures {stale:?} in {} are stale: rerun `fabricsim study studies/selection-guide/study.toml`",
        fig_dir.display()
    );
}
