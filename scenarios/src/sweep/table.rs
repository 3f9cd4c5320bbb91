//! A sweep's tables: `sweep.csv` (a row per point and seed), `sweep_summary.csv` (mean and 95%
//! confidence interval over seeds), `sweep_timing.csv` (wall times) and the terminal table.
//!
//! Rows are ordered by point index, then seed, never by completion order, and no wall-clock
//! figure appears outside `sweep_timing.csv`: the other two files are the same bytes whatever
//! `--jobs` and however often the sweep is resumed.

use super::Sweep;
use super::stats::mean_ci95;
use serde_json::Value;
use std::path::Path;

/// What became of one run (a point and a seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Finished (`summary.json` says `run.complete`).
    Ok,
    /// Stopped by a budget (`run.max_events`, `run.wall_clock_s`): results written, not
    /// aggregated.
    Partial,
    /// `fabricsim run` exited non-zero (see the run's `.log`).
    Failed,
    /// Killed at `--timeout`.
    Timeout,
    /// Not finished when the sweep was cancelled (Ctrl-C).
    Cancelled,
    /// `--collect`: no up-to-date results.
    Missing,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Partial => "partial",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::Cancelled => "cancelled",
            Status::Missing => "missing",
        }
    }
}

/// One run's outcome, as the tables need it.
#[derive(Clone, Debug)]
pub struct RunRecord {
    pub point: usize,
    pub seed: u64,
    pub status: Status,
    /// The run's `summary.json`, when it has results.
    pub summary: Option<Value>,
    /// Wall time of the child process when it ran in this invocation; for a resumed run, the
    /// simulation's own (`timing.json` `wall_seconds`).
    pub wall_s: Option<f64>,
    /// Up to date from an earlier invocation (not run again).
    pub resumed: bool,
}

/// A metric's cell text and its numeric value (`None` for text such as `outcome`, or null).
type Metric = (String, Option<f64>);

/// The headline metrics, always present as columns (empty when a run has no value).
pub const HEADLINE: [&str; 14] = [
    "outcome",
    "sim_time_ns",
    "latency_p50_ns",
    "latency_p99_ns",
    "fct_p50_ns",
    "fct_p99_ns",
    "slowdown_p50",
    "slowdown_p95",
    "slowdown_p99",
    "throughput_gbps",
    "mean_flow_gbps",
    "packets_dropped",
    "flows_completed",
    "flows_total",
];

/// The headline metrics shown in the terminal table (with every `busbw_GBps.*` column).
const TERMINAL: [&str; 7] = [
    "latency_p50_ns",
    "latency_p99_ns",
    "fct_p50_ns",
    "fct_p99_ns",
    "slowdown_p99",
    "throughput_gbps",
    "packets_dropped",
];

fn number(v: Option<&Value>) -> Metric {
    match v {
        Some(Value::Number(n)) => (n.to_string(), n.as_f64()),
        Some(Value::String(s)) => (s.clone(), None),
        Some(Value::Bool(b)) => (b.to_string(), None),
        _ => (String::new(), None),
    }
}

/// The metrics of a `summary.json` (`docs/results.md`), by column name, in a fixed order:
/// the headline, then per collective and size `busbw_GBps.<workload>.<size_bytes>`, per
/// training workload `step_time_us.<workload>` and `exposed_comm_us.<workload>`, then every
/// model counter as `counters.<name>`.
pub fn metrics(s: &Value) -> Vec<(String, Metric)> {
    let at = |p: &str| number(s.pointer(p));
    let mut out: Vec<(String, Metric)> = [
        ("outcome", "/run/outcome"),
        ("sim_time_ns", "/run/sim_time_ns"),
        ("latency_p50_ns", "/packet_latency_ns/p50"),
        ("latency_p99_ns", "/packet_latency_ns/p99"),
        ("fct_p50_ns", "/fct_ns/p50"),
        ("fct_p99_ns", "/fct_ns/p99"),
        // FCT slowdown of every flow (`summary.json` `slowdown.all`, `docs/results.md`).
        ("slowdown_p50", "/slowdown/all/p50"),
        ("slowdown_p95", "/slowdown/all/p95"),
        ("slowdown_p99", "/slowdown/all/p99"),
        ("throughput_gbps", "/throughput/delivered_gbps"),
        ("mean_flow_gbps", "/throughput/mean_flow_gbps"),
        ("packets_dropped", "/packets/dropped"),
        ("flows_completed", "/flows/completed"),
        ("flows_total", "/flows/total"),
    ]
    .into_iter()
    .map(|(name, p)| (name.to_string(), at(p)))
    .collect();
    debug_assert!(out.iter().map(|(n, _)| n.as_str()).eq(HEADLINE));
    let rows = |key: &str| s.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    for c in rows("collectives") {
        let name = format!(
            "busbw_GBps.{}.{}",
            number(c.get("workload")).0,
            number(c.get("size_bytes")).0
        );
        out.push((name, number(c.get("busbw_GBps"))));
    }
    for t in rows("training") {
        let w = number(t.get("workload")).0;
        out.push((format!("step_time_us.{w}"), number(t.get("step_time_us"))));
        out.push((format!("exposed_comm_us.{w}"), number(t.get("exposed_comm_us"))));
    }
    if let Some(Value::Object(counters)) = s.get("counters") {
        for (name, v) in counters {
            if !HEADLINE.contains(&name.as_str()) {
                out.push((format!("counters.{name}"), number(Some(v))));
            }
        }
    }
    out
}

/// Every row's metrics and the union of their columns (headline first, then in order of
/// first appearance over the rows in point/seed order).
struct Grid {
    columns: Vec<String>,
    rows: Vec<Vec<Option<Metric>>>,
}

fn grid(records: &[RunRecord]) -> Grid {
    let mut columns: Vec<String> = HEADLINE.iter().map(|s| s.to_string()).collect();
    let per_row: Vec<Vec<(String, Metric)>> = records
        .iter()
        .map(|r| r.summary.as_ref().map(metrics).unwrap_or_default())
        .collect();
    let mut index: std::collections::BTreeMap<String, usize> =
        columns.iter().enumerate().map(|(i, c)| (c.clone(), i)).collect();
    for ms in &per_row {
        for (name, _) in ms {
            if !index.contains_key(name) {
                index.insert(name.clone(), columns.len());
                columns.push(name.clone());
            }
        }
    }
    let rows = per_row
        .into_iter()
        .map(|ms| {
            let mut row = vec![None; columns.len()];
            for (name, m) in ms {
                row[index[&name]] = Some(m);
            }
            row
        })
        .collect();
    Grid { columns, rows }
}

fn csv_text(header: &[String], rows: &[Vec<String>]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).expect("in memory");
    for r in rows {
        w.write_record(r).expect("in memory");
    }
    String::from_utf8(w.into_inner().expect("in memory")).expect("UTF-8 cells")
}

fn fmt_f64(x: f64) -> String {
    format!("{x}")
}

/// A metric's mean and 95% half-width (none with fewer than two values), if it has values.
type Stat = Option<(f64, Option<f64>)>;

/// The mean and 95% half-width of every numeric column, per point.
struct Aggregate {
    /// `(column index, column name)` of the numeric columns.
    metrics: Vec<(usize, String)>,
    /// Per point: (runs, ok runs, per metric `Option<(mean, half-width)>`).
    points: Vec<(usize, usize, Vec<Stat>)>,
}

fn aggregate(sweep: &Sweep, records: &[RunRecord], g: &Grid) -> Aggregate {
    let metrics: Vec<(usize, String)> = g
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.as_str() != "outcome")
        .map(|(i, c)| (i, c.clone()))
        .collect();
    let mut points = Vec::with_capacity(sweep.n_points());
    for p in 0..sweep.n_points() {
        let mine: Vec<usize> = (0..records.len()).filter(|&i| records[i].point == p).collect();
        let ok: Vec<usize> = mine
            .iter()
            .copied()
            .filter(|&i| records[i].status == Status::Ok)
            .collect();
        let stats = metrics
            .iter()
            .map(|(c, _)| {
                let xs: Vec<f64> = ok
                    .iter()
                    .filter_map(|&i| g.rows[i][*c].as_ref().and_then(|m| m.1))
                    .collect();
                mean_ci95(&xs)
            })
            .collect();
        points.push((mine.len(), ok.len(), stats));
    }
    Aggregate { metrics, points }
}

/// The tables' texts: `sweep.csv`, `sweep_summary.csv`, `sweep_timing.csv`, terminal table.
pub struct Tables {
    pub runs_csv: String,
    pub summary_csv: String,
    pub timing_csv: String,
    pub terminal: String,
}

/// Builds every table from `records` (in point, then seed order).
pub fn tables(sweep: &Sweep, records: &[RunRecord]) -> Tables {
    let g = grid(records);
    let params: Vec<String> = sweep.params.iter().map(|p| p.path.clone()).collect();
    let values = |point: usize| -> Vec<String> { sweep.values(point).into_iter().map(super::cell).collect() };

    let mut header = vec!["point".to_string(), "seed".to_string()];
    header.extend(params.iter().cloned());
    header.push("status".into());
    header.extend(g.columns.iter().cloned());
    let rows: Vec<Vec<String>> = records
        .iter()
        .zip(&g.rows)
        .map(|(r, ms)| {
            let mut row = vec![r.point.to_string(), r.seed.to_string()];
            row.extend(values(r.point));
            row.push(r.status.as_str().into());
            row.extend(ms.iter().map(|m| m.as_ref().map(|m| m.0.clone()).unwrap_or_default()));
            row
        })
        .collect();
    let runs_csv = csv_text(&header, &rows);

    let agg = aggregate(sweep, records, &g);
    let mut header = vec!["point".to_string()];
    header.extend(params.iter().cloned());
    header.extend(["runs".to_string(), "ok".to_string()]);
    for (_, m) in &agg.metrics {
        header.push(format!("{m}.mean"));
        header.push(format!("{m}.ci95"));
    }
    let rows: Vec<Vec<String>> = agg
        .points
        .iter()
        .enumerate()
        .map(|(p, (n, ok, stats))| {
            let mut row = vec![p.to_string()];
            row.extend(values(p));
            row.extend([n.to_string(), ok.to_string()]);
            for s in stats {
                row.push(s.map(|s| fmt_f64(s.0)).unwrap_or_default());
                row.push(s.and_then(|s| s.1).map(fmt_f64).unwrap_or_default());
            }
            row
        })
        .collect();
    let summary_csv = csv_text(&header, &rows);

    let header: Vec<String> = ["point", "seed", "status", "resumed", "wall_s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            vec![
                r.point.to_string(),
                r.seed.to_string(),
                r.status.as_str().into(),
                r.resumed.to_string(),
                r.wall_s.map(|w| format!("{w:.3}")).unwrap_or_default(),
            ]
        })
        .collect();
    let timing_csv = csv_text(&header, &rows);

    Tables {
        runs_csv,
        summary_csv,
        timing_csv,
        terminal: terminal(sweep, &agg),
    }
}

/// A number for people: 4 significant figures or so, no exponent.
fn human(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 || a == 0.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

fn terminal(sweep: &Sweep, agg: &Aggregate) -> String {
    let shown: Vec<&(usize, String)> = agg
        .metrics
        .iter()
        .filter(|(_, m)| TERMINAL.contains(&m.as_str()) || m.starts_with("busbw_GBps."))
        .collect();
    let mut header = vec!["point".to_string()];
    header.extend(sweep.params.iter().map(|p| p.path.clone()));
    header.push("ok/runs".into());
    header.extend(shown.iter().map(|(_, m)| m.clone()));
    let pos = |name: &str| agg.metrics.iter().position(|(_, m)| m == name).expect("shown metric");
    let mut rows = vec![header];
    for (p, (n, ok, stats)) in agg.points.iter().enumerate() {
        let mut row = vec![p.to_string()];
        row.extend(sweep.values(p).into_iter().map(super::cell));
        row.push(format!("{ok}/{n}"));
        for (_, m) in &shown {
            row.push(match stats[pos(m)] {
                None => "-".into(),
                Some((mean, None)) => human(mean),
                Some((mean, Some(h))) => format!("{} ± {}", human(mean), human(h)),
            });
        }
        rows.push(row);
    }
    let n_cols = rows[0].len();
    let widths: Vec<usize> = (0..n_cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!(
        "\nsweep: mean ± 95% confidence half-width over {} seed(s) (Student's t; ok runs only)\n",
        sweep.seeds
    );
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (s, w))| {
                let pad = w - s.chars().count();
                if c == 0 {
                    format!("{s}{}", " ".repeat(pad))
                } else {
                    format!("{}{s}", " ".repeat(pad))
                }
            })
            .collect();
        out.push_str("  ");
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Writes `bytes` to `path` through a temporary sibling, so a reader never sees half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Writes `sweep.csv`, `sweep_summary.csv` and `sweep_timing.csv` into `dir`.
pub fn write(dir: &Path, t: &Tables) -> std::io::Result<()> {
    write_atomically(&dir.join("sweep.csv"), t.runs_csv.as_bytes())?;
    write_atomically(&dir.join("sweep_summary.csv"), t.summary_csv.as_bytes())?;
    write_atomically(&dir.join("sweep_timing.csv"), t.timing_csv.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn sweep() -> Sweep {
        let text = "[scenario]\nname = \"t\"\n[sweep]\nseeds = 2\n[sweep.params]\n\"topology.k\" = [4, 6]\n";
        Sweep::parse("s.toml".into(), PathBuf::new(), text.into())
            .unwrap()
            .unwrap()
    }

    fn summary(p99: f64, busbw: f64) -> Value {
        serde_json::json!({
            "run": {"outcome": "drained", "complete": true, "sim_time_ns": 10.5},
            "packet_latency_ns": {"p50": 1.0, "p99": p99},
            "fct_ns": {"p50": null, "p99": null},
            "slowdown": {"all": {"flows": 2, "p50": 1.25, "p95": 1.5, "p99": 1.75}},
            "throughput": {"delivered_gbps": 100.0, "mean_flow_gbps": 50.0},
            "packets": {"dropped": 0},
            "flows": {"completed": 2, "total": 2},
            "collectives": [{"workload": "ring", "size_bytes": 1024, "busbw_GBps": busbw}],
            "counters": {"flows_completed": 2, "ib_fc_packets": 7},
        })
    }

    fn rec(point: usize, seed: u64, status: Status, summary: Option<Value>) -> RunRecord {
        RunRecord {
            point,
            seed,
            status,
            summary,
            wall_s: Some(0.25),
            resumed: false,
        }
    }

    #[test]
    fn metric_columns() {
        let names: Vec<String> = metrics(&summary(3.0, 9.0)).into_iter().map(|(n, _)| n).collect();
        assert_eq!(&names[..14], HEADLINE);
        assert_eq!(&names[14..], ["busbw_GBps.ring.1024", "counters.ib_fc_packets"]);
        let m = metrics(&summary(3.0, 9.0));
        let value = |n: &str| m.iter().find(|(k, _)| k == n).and_then(|(_, (_, v))| *v);
        assert_eq!(
            (value("slowdown_p50"), value("slowdown_p95"), value("slowdown_p99")),
            (Some(1.25), Some(1.5), Some(1.75))
        );
    }

    #[test]
    fn rows_and_aggregates() {
        let s = sweep();
        let records = vec![
            rec(0, 1, Status::Ok, Some(summary(2.0, 10.0))),
            rec(0, 2, Status::Ok, Some(summary(4.0, 20.0))),
            rec(1, 1, Status::Timeout, None),
            rec(1, 2, Status::Ok, Some(summary(5.0, 30.0))),
        ];
        let t = tables(&s, &records);
        let lines: Vec<&str> = t.runs_csv.lines().collect();
        assert_eq!(
            lines[0],
            "point,seed,topology.k,status,outcome,sim_time_ns,latency_p50_ns,latency_p99_ns,fct_p50_ns,fct_p99_ns,\
             slowdown_p50,slowdown_p95,slowdown_p99,throughput_gbps,mean_flow_gbps,packets_dropped,flows_completed,flows_total,busbw_GBps.ring.1024,\
             counters.ib_fc_packets"
        );
        assert_eq!(
            lines[1],
            "0,1,4,ok,drained,10.5,1.0,2.0,,,1.25,1.5,1.75,100.0,50.0,0,2,2,10.0,7"
        );
        assert_eq!(lines[3], "1,1,6,timeout,,,,,,,,,,,,,,,,");
        let lines: Vec<&str> = t.summary_csv.lines().collect();
        assert!(
            lines[0].starts_with("point,topology.k,runs,ok,sim_time_ns.mean,sim_time_ns.ci95,"),
            "{}",
            lines[0]
        );
        // Point 0: p99 2 and 4: mean 3, s = sqrt(2), half-width 12.706 * sqrt(2) / sqrt(2).
        let cells: Vec<&str> = lines[1].split(',').collect();
        assert_eq!(&cells[..4], ["0", "4", "2", "2"]);
        let col = |name: &str| {
            lines[0]
                .split(',')
                .position(|c| c == name)
                .unwrap_or_else(|| panic!("no column {name}"))
        };
        assert_eq!(cells[col("latency_p99_ns.mean")], "3");
        assert_eq!(cells[col("latency_p99_ns.ci95")], "12.706");
        assert_eq!(cells[col("fct_p99_ns.mean")], "");
        // Point 1: one ok run, no interval.
        let cells: Vec<&str> = lines[2].split(',').collect();
        assert_eq!(cells[col("ok")], "1");
        assert_eq!(cells[col("busbw_GBps.ring.1024.mean")], "30");
        assert_eq!(cells[col("busbw_GBps.ring.1024.ci95")], "");
        assert!(t.terminal.contains("  3 ± 12.706  "), "{}", t.terminal);
        assert!(
            t.timing_csv.lines().nth(1) == Some("0,1,ok,false,0.250"),
            "{}",
            t.timing_csv
        );
    }
}
