//! Time series (`[output] sample`) and utilisation over the active interval: sampling changes
//! no other output, the windows add up to the whole-run counters, the row bound cuts the
//! series with a message, the Parquet files (the default) hold what the CSV files do, and
//! bad settings are refused at their key.

use fabricsim_tests::{catalogue, fabricsim, s, series};
use parquet::file::reader::FileReader;
use std::path::{Path, PathBuf};

fn scenario(toml: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(&path, toml).unwrap();
    (dir, path)
}

fn run(path: &Path, out: &Path) -> String {
    let o = fabricsim(&["run", s(path), "--out", s(out)]);
    assert_eq!(o.code, 0, "{o:?}");
    o.stdout
}

fn with_output(toml: &str, output: &str) -> String {
    toml.replacen("[run]", &format!("[output]\n{output}\n\n[run]"), 1)
}

/// CSV as (header, rows).
fn table(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header = lines.next().unwrap().split(',').map(str::to_owned).collect();
    let rows = lines.map(|l| l.split(',').map(str::to_owned).collect()).collect();
    (header, rows)
}

fn num(header: &[String], row: &[String], name: &str) -> f64 {
    let i = header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    row[i].parse().unwrap_or_else(|_| panic!("{name} = {:?}", row[i]))
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

const LONE: &str = r#"
[scenario]
name = "lone"
[topology]
kind = "custom"
hosts = 2
switches = 1
links = [
    { a = "h0", b = "s0", rate = "100Gbps", cable_m = 3 },
    { a = "s0", b = "h1", rate = "100Gbps", cable_m = 3 },
]
[fabric]
kind = "ethernet"
mtu = "4KiB"
[[workload]]
kind = "flows"
flows = [{ src = 0, dst = 1, size = "1MiB", start = "200us" }]
[run]
end_time = "1ms"
"#;

/// Cutting the run into windows changes nothing else: every file but the summary's
/// `timeseries` section, the resolved scenario (it holds `sample`) and timing is identical.
#[test]
fn sampling_changes_no_other_output() {
    let text = std::fs::read_to_string(catalogue("roce_victim_flow.toml")).unwrap();
    let (dir, plain) = scenario(&text);
    let sampled = dir.path().join("sampled.toml");
    std::fs::write(&sampled, with_output(&text, "sample = \"7us\"\nsample_ports = \"all\"")).unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    run(&plain, &a);
    run(&sampled, &b);
    for f in [
        "flows.csv",
        "ports.csv",
        "roce_ports.csv",
        "roce.json",
        "fct.hlog",
        "packet_latency.hlog",
    ] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
    let (mut sa, mut sb) = (summary(&a), summary(&b));
    assert!(sb["timeseries"].is_object());
    for s in [&mut sa, &mut sb] {
        let o = s.as_object_mut().unwrap();
        o.remove("timeseries");
        o["scenario"].as_object_mut().unwrap().remove("resolved_sha256");
    }
    assert_eq!(sa, sb);
    // And sampling twice gives the same bytes.
    let c = dir.path().join("c");
    run(&sampled, &c);
    for f in ["timeseries_ports.parquet", "timeseries_flows.parquet", "summary.json"] {
        assert_eq!(
            std::fs::read(b.join(f)).unwrap(),
            std::fs::read(c.join(f)).unwrap(),
            "{f}"
        );
    }
}

/// The windows add up: a port's utilisation x window summed is its whole-run busy time, and
/// a flow's goodput x window summed is its size.
#[test]
fn windows_add_up_to_the_whole_run() {
    let (dir, path) = scenario(&with_output(LONE, "sample = \"10us\"\nsample_ports = \"all\""));
    let out = dir.path().join("out");
    run(&path, &out);
    let (h, rows) = series(&out, "timeseries_ports");
    let (ph, ports) = table(&out.join("ports.csv"));
    let end_ns = summary(&out)["run"]["sim_time_ns"].as_f64().unwrap();
    let nic = &ports[0];
    let busy_ns = num(&ph, nic, "utilisation") * end_ns;
    let mut sum = 0.0;
    for r in rows.iter().filter(|r| r[1] == "0") {
        let t = num(&h, r, "time_ns");
        let u = num(&h, r, "utilisation");
        assert!((0.0..=1.0).contains(&u));
        // Windows start at multiples of 10 us; the last ends with the run.
        let start = ((t - 1e-6) / 10_000.0).floor() * 10_000.0;
        sum += u * (t - start);
    }
    assert!(
        (sum - busy_ns).abs() / busy_ns < 0.02,
        "windows {sum} ns vs whole run {busy_ns} ns"
    );
    // The flow is idle before 200 us: no row of port 0 before then.
    let first = rows.iter().find(|r| r[1] == "0").unwrap();
    assert!(num(&h, first, "time_ns") >= 200_000.0);
    let (fh, flows) = series(&out, "timeseries_flows");
    let window_ns = |t: f64| t - ((t - 1e-6) / 10_000.0).floor() * 10_000.0;
    let bits: f64 = flows
        .iter()
        .map(|r| num(&fh, r, "goodput_gbps") * window_ns(num(&fh, r, "time_ns")))
        .sum();
    assert!((bits - 8.0 * 1_048_576.0).abs() / (8.0 * 1_048_576.0) < 0.01, "{bits}");
    assert!(flows.iter().all(|r| num(&fh, r, "rate_gbps") == 100.0));
    // Utilisation over the active interval: the NIC is busy nearly all of the flow's life,
    // while over the whole run it reads far less.
    let active = num(&ph, nic, "utilisation_active");
    let whole = num(&ph, nic, "utilisation");
    assert!(active > 0.9 && active <= 1.0, "{active}");
    assert!(whole < active * 0.5, "{whole} vs {active}");
}

/// The row bound stops sampling, and the files, summary and terminal say where: the CSV
/// ends with a `# truncated` line, the Parquet files carry the same words in their footer's
/// key-value metadata (`fabricsim.truncated`).
#[test]
fn the_row_bound_cuts_the_series_with_a_message() {
    for format in ["csv", "parquet"] {
        let (dir, path) = scenario(&with_output(
            LONE,
            &format!("sample = \"1us\"\nsample_ports = \"all\"\nsample_max_rows = 20\nsample_format = \"{format}\""),
        ));
        let out = dir.path().join("out");
        let text = run(&path, &out);
        assert!(text.contains("time series CUT at"), "{text}");
        let ts = &summary(&out)["timeseries"];
        let cut_ns = ts["truncated_at_ns"].as_f64().unwrap();
        assert!(cut_ns > 200_000.0);
        assert_eq!(ts["max_rows"], 20);
        let says = format!("truncated at time_ns {cut_ns:.3}: sample_max_rows = 20 reached");
        let n_rows = if format == "csv" {
            let ports = std::fs::read_to_string(out.join("timeseries_ports.csv")).unwrap();
            assert_eq!(ports.lines().last().unwrap(), format!("# {says}"), "{ports}");
            let flows = std::fs::read_to_string(out.join("timeseries_flows.csv")).unwrap();
            assert_eq!(flows.lines().last().unwrap(), format!("# {says}"), "{flows}");
            ports.lines().count() - 2 + flows.lines().count() - 2
        } else {
            let mut n = 0;
            for stem in ["timeseries_ports", "timeseries_flows"] {
                let r = parquet_reader(&out.join(format!("{stem}.parquet")));
                let meta = r.metadata().file_metadata();
                let kv = meta.key_value_metadata().expect("key-value metadata");
                assert_eq!(kv.len(), 1, "{kv:?}");
                assert_eq!(kv[0].key, "fabricsim.truncated");
                assert_eq!(kv[0].value.as_deref(), Some(says.as_str()));
                n += meta.num_rows() as usize;
            }
            n
        };
        assert!(n_rows > 0 && n_rows <= 20, "{format}: {n_rows} rows");
        assert_eq!(
            n_rows as u64,
            ts["port_rows_recorded"].as_u64().unwrap() + ts["flow_rows"].as_u64().unwrap()
        );
        // The run itself went on to the end.
        assert_eq!(summary(&out)["flows"]["completed"], 1);
    }
}

fn parquet_reader(path: &Path) -> parquet::file::serialized_reader::SerializedFileReader<std::fs::File> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parquet::file::serialized_reader::SerializedFileReader::new(f).unwrap()
}

/// Issue 13: the Parquet time series (the default) holds the rows and values of the CSV of
/// the same run, read with the `parquet` crate's own reader: the same columns in order
/// (integers INT64, numbers DOUBLE, `link` UTF-8 text), the same number of rows, every
/// integer and text cell equal, every number equal to the CSV's at the CSV's decimal places.
/// Its `created_by` names fabricsim only, and it is far smaller than the CSV.
#[test]
fn parquet_holds_the_rows_and_values_of_the_csv() {
    use parquet::record::Field;
    let text = std::fs::read_to_string(catalogue("roce_dcqcn_convergence.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (csv_out, pq_out) = (dir.path().join("csv"), dir.path().join("parquet"));
    for (format, out) in [("csv", &csv_out), ("parquet", &pq_out)] {
        let path = dir.path().join(format!("{format}.toml"));
        let output = format!("sample = \"5us\"\nsample_ports = \"all\"\nsample_format = \"{format}\"");
        std::fs::write(&path, with_output(&text, &output)).unwrap();
        run(&path, out);
    }
    let (mut csv_bytes, mut pq_bytes) = (0, 0);
    for stem in ["timeseries_ports", "timeseries_flows"] {
        let csv_path = csv_out.join(format!("{stem}.csv"));
        let pq_path = pq_out.join(format!("{stem}.parquet"));
        assert!(!pq_out.join(format!("{stem}.csv")).exists() && !csv_out.join(format!("{stem}.parquet")).exists());
        csv_bytes += std::fs::metadata(&csv_path).unwrap().len();
        pq_bytes += std::fs::metadata(&pq_path).unwrap().len();
        let (header, rows) = table(&csv_path);
        let r = parquet_reader(&pq_path);
        let meta = r.metadata().file_metadata();
        assert!(
            meta.created_by().unwrap().starts_with("fabricsim "),
            "{:?}",
            meta.created_by()
        );
        assert!(meta.key_value_metadata().is_none(), "not truncated: no metadata");
        let names: Vec<&str> = meta.schema_descr().columns().iter().map(|c| c.name()).collect();
        assert_eq!(names, header, "{stem}: columns");
        assert!(rows.len() > 100, "{stem}: {} rows", rows.len());
        assert_eq!(meta.num_rows() as usize, rows.len(), "{stem}: rows");
        let mut n = 0;
        for (row, csv) in r.get_row_iter(None).unwrap().zip(&rows) {
            let row = row.unwrap();
            for ((name, field), cell) in row.get_column_iter().zip(csv) {
                let got = match field {
                    Field::Long(v) => v.to_string(),
                    Field::Str(v) => v.clone(),
                    Field::Double(v) => {
                        let places = cell.split_once('.').map_or(0, |(_, d)| d.len());
                        format!("{v:.places$}")
                    }
                    Field::Null => String::new(),
                    f => panic!("{stem}.{name}: unexpected {f:?}"),
                };
                assert_eq!(&got, cell, "{stem} row {n} column {name}");
            }
            n += 1;
        }
        assert_eq!(n, rows.len());
    }
    let types: Vec<String> = parquet_reader(&pq_out.join("timeseries_ports.parquet"))
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .take(4)
        .map(|c| format!("{}:{}", c.name(), c.physical_type()))
        .collect();
    assert_eq!(
        types,
        ["time_ns:DOUBLE", "port:INT64", "link:BYTE_ARRAY", "queue_bytes:INT64"]
    );
    eprintln!("time series: Parquet {pq_bytes} B, CSV {csv_bytes} B");
    assert!(pq_bytes * 5 < csv_bytes, "Parquet {pq_bytes} B vs CSV {csv_bytes} B");
}

/// PFC pauses and credit stalls appear as fractions of the window, in range.
#[test]
fn paused_and_stalled_fractions_are_in_range() {
    let text = std::fs::read_to_string(catalogue("roce_victim_flow.toml")).unwrap();
    let (dir, path) = scenario(&with_output(&text, "sample = \"50us\"\nsample_ports = \"all\""));
    let out = dir.path().join("out");
    run(&path, &out);
    let (h, rows) = series(&out, "timeseries_ports");
    let paused: Vec<f64> = rows.iter().map(|r| num(&h, r, "paused_frac_p3")).collect();
    assert!(paused.iter().all(|f| (0.0..=1.0 + 1e-9).contains(f)));
    assert!(paused.iter().any(|&f| f > 0.5), "some port is paused most of a window");
    assert!(h.iter().any(|c| c == "ecn_marked"));

    let text = std::fs::read_to_string(catalogue("ib_ndr_congestion_tree.toml")).unwrap();
    let (dir, path) = scenario(&with_output(
        &text,
        "sample = \"50us\"\nsample_port_ids = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]",
    ));
    let out = dir.path().join("out");
    run(&path, &out);
    let (h, rows) = series(&out, "timeseries_ports");
    let stall: Vec<f64> = rows.iter().map(|r| num(&h, r, "credit_stall_frac")).collect();
    assert!(stall.iter().all(|f| (0.0..=1.0 + 1e-9).contains(f)));
    assert!(stall.iter().any(|&f| f > 0.0));
    assert!(rows.iter().all(|r| r[1].parse::<u32>().unwrap() <= 10));
    assert_eq!(summary(&out)["timeseries"]["ports"], "list");
}

/// Hotspot mode keeps the rows of the ranked ports only.
#[test]
fn hotspot_mode_keeps_the_ranked_ports() {
    let text = std::fs::read_to_string(catalogue("roce_victim_flow.toml")).unwrap();
    let (dir, path) = scenario(&with_output(&text, "sample = \"50us\"\nhotspots = 3"));
    let out = dir.path().join("out");
    run(&path, &out);
    let hot: Vec<String> = summary(&out)["hotspots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["port"].to_string())
        .collect();
    let (_, rows) = series(&out, "timeseries_ports");
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| hot.contains(&r[1])), "{hot:?}");
}

/// Bad settings are refused at their key with exit 2 and nothing written.
#[test]
fn bad_sampling_settings_are_refused_at_their_key() {
    for (output, key, says) in [
        ("sample = \"0us\"", "output.sample", "above 0"),
        ("sample = \"1ps\"", "output.sample", "at most"),
        (
            "sample = \"1us\"\nsample_max_rows = 0",
            "output.sample_max_rows",
            "expected 1 to",
        ),
        (
            "sample = \"1us\"\nsample_port_ids = [3, 999]",
            "output.sample_port_ids",
            "port 999 does not exist",
        ),
        ("sample = \"1us\"\nsample_ports = \"some\"", "sample_ports", "hotspots"),
        (
            "sample = \"1us\"\nsample_format = \"xlsx\"",
            "sample_format",
            "expected `parquet` or `csv`",
        ),
    ] {
        let (dir, path) = scenario(&with_output(LONE, output));
        let out = dir.path().join("out");
        let o = fabricsim(&["run", s(&path), "--out", s(&out)]);
        assert_eq!(o.code, 2, "{output}: {o:?}");
        assert!(
            o.stderr.contains(key) && o.stderr.contains(says),
            "{output}: {}",
            o.stderr
        );
        assert!(o.stderr.contains("s.toml:"), "{}", o.stderr);
        assert!(!out.exists());
    }
}

/// Issue 13: the per-flow series carries the congestion controller's state. Under DCQCN
/// (the convergence scenario: flows joining a bottleneck) the target rate R_T never falls
/// below the current rate R_C (a decrease sets R_T to the old R_C, an increase moves R_C half
/// way to R_T), α stays in [0, 1] and moves (CNPs raise it, quiet periods decay it); a run
/// without congestion control has no state columns.
#[test]
fn flow_series_carry_the_congestion_control_state() {
    let text = std::fs::read_to_string(catalogue("roce_dcqcn_convergence.toml")).unwrap();
    let (dir, path) = scenario(&with_output(&text, "sample = \"20us\""));
    let out = dir.path().join("out");
    run(&path, &out);
    let (h, rows) = series(&out, "timeseries_flows");
    assert!(h.iter().any(|c| c == "dcqcn_alpha"), "{h:?}");
    let mut alphas = std::collections::BTreeSet::new();
    for r in &rows {
        let (rc, rt, a) = (
            num(&h, r, "rate_gbps"),
            num(&h, r, "dcqcn_target_gbps"),
            num(&h, r, "dcqcn_alpha"),
        );
        assert!(rc <= rt + 1e-9, "R_C {rc} above R_T {rt}: {r:?}");
        assert!((0.0..=1.0).contains(&a), "alpha {a}: {r:?}");
        alphas.insert((a * 1e6) as u64);
    }
    assert!(alphas.len() > 3, "alpha should move: {alphas:?}");
    let text = std::fs::read_to_string(catalogue("quickstart.toml")).unwrap();
    let (dir, path) = scenario(&with_output(&text, "sample = \"20us\""));
    let out = dir.path().join("out");
    run(&path, &out);
    let (h, _) = series(&out, "timeseries_flows");
    assert_eq!(h, ["time_ns", "flow", "rate_gbps", "goodput_gbps"]);
}
