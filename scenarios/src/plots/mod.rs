//! Plots of a finished run, drawn from its results directory (so `fabricsim plot DIR` works
//! on any run, and `fabricsim run --plots` is a run followed by the same step): SVG files in
//! `DIR/plots/`, one per figure whose data the run has, and/or their PNG rasterization
//! (`--plot-format`, `png.rs`).
//!
//! | file | from | what |
//! |---|---|---|
//! | `fct_cdf.svg` | `flows.csv` | CDF of flow completion time, one line per workload group |
//! | `latency_cdf.svg` | `packet_latency_percentiles.csv` | CDF of packet latency at the table's quantiles |
//! | `slowdown_by_size.svg` | `summary.json` `slowdown` | p50/p95/p99 FCT slowdown per flow-size bucket |
//! | `queue_hotspots.svg`, `util_hotspots.svg` | `timeseries_ports.parquet` or `.csv` | queue and utilisation over time of the top hotspot ports |
//! | `flow_rates.svg` | `timeseries_flows.parquet` or `.csv` | congestion-control rate over time of the first flows |
//! | `busbw.svg` | `collectives.csv` | bus bandwidth versus message size per collective workload |
//! | `hotspot_map.svg` | `ports.csv`, `summary.json` trees | the topology by levels, links coloured by utilisation, the pause / congestion tree as arrows (`map.rs`) |

pub mod chart;
mod map;
pub mod png;
pub mod sweep;

use chart::{Chart, Series, line_chart};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest results file read for a plot.
const MAX_FILE_BYTES: u64 = 1 << 30;
/// A drawn chart's SVG, or why plotters could not draw it.
type Drawn = Result<String, String>;

/// Hotspot ports and flows drawn at most (one line each).
const MAX_LINES: usize = 8;

/// A plot that could not be made: the file and why.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PlotError {
    pub path: String,
    pub message: String,
}

fn perr(path: &Path, message: impl Into<String>) -> PlotError {
    PlotError {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// Reads `dir/name` as text, `None` when the run did not write it.
fn read(dir: &Path, name: &str) -> Result<Option<String>, PlotError> {
    let path = dir.join(name);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    crate::files::read_text_limited(&path, MAX_FILE_BYTES)
        .map(Some)
        .map_err(|e| perr(&path, e.to_string()))
}

/// A CSV file as rows of column name -> cell (comment lines `#` skipped).
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn parse(path: &Path, text: &str) -> Result<Table, PlotError> {
        let mut r = csv::ReaderBuilder::new()
            .comment(Some(b'#'))
            .from_reader(text.as_bytes());
        let header = r
            .headers()
            .map_err(|e| perr(path, e.to_string()))?
            .iter()
            .map(str::to_owned)
            .collect();
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec.map_err(|e| perr(path, e.to_string()))?;
            rows.push(rec.iter().map(str::to_owned).collect());
        }
        Ok(Table { header, rows })
    }

    fn col(&self, path: &Path, name: &str) -> Result<usize, PlotError> {
        self.header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| perr(path, format!("no column `{name}` (not a fabricsim results file?)")))
    }

    /// Cell `c` of `row` as a number (`None` when empty or not a number).
    fn num(row: &[String], c: usize) -> Option<f64> {
        row.get(c)?.parse().ok()
    }
}

/// The file format of the figures (`--plot-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PlotFormat {
    /// `<figure>.svg` (plotters' SVG backend).
    #[default]
    Svg,
    /// `<figure>.png`: the SVG rasterized at twice its size (`png.rs`).
    Png,
    /// Both files of each figure.
    Both,
}

/// Writes every plot the run in `dir` has data for into `dir/plots/` in `format`; returns
/// their paths. `dir` must be a fabricsim results directory or a sweep's output directory
/// (`sweep.rs`).
pub fn plot_dir(dir: &Path, format: PlotFormat) -> Result<Vec<PathBuf>, PlotError> {
    let figures: Vec<(String, String)> = if sweep::is_sweep_dir(dir) {
        sweep::figures(dir)?
    } else if crate::results_dir::has_marker(dir) {
        figures(dir)?.into_iter().map(|(n, svg)| (n.to_owned(), svg)).collect()
    } else {
        return Err(perr(
            dir,
            format!(
                "not a fabricsim results directory (no {} file) nor a sweep's (no {})",
                crate::results_dir::MARKER,
                crate::sweep::run::MANIFEST
            ),
        ));
    };
    let out = dir.join("plots");
    std::fs::create_dir_all(&out).map_err(|e| perr(&out, e.to_string()))?;
    let mut written = Vec::new();
    let write = |path: PathBuf, bytes: &[u8]| {
        crate::regression::junit::write_atomically(&path, bytes).map_err(|e| perr(&path, e.to_string()))?;
        Ok::<_, PlotError>(path)
    };
    for (name, svg) in figures {
        let path = out.join(&name);
        if format != PlotFormat::Png {
            written.push(write(path.clone(), svg.as_bytes())?);
        }
        if format != PlotFormat::Svg {
            let bytes = png::png(&svg).map_err(|m| perr(&path, m))?;
            written.push(write(path.with_extension("png"), &bytes)?);
        }
    }
    Ok(written)
}

/// `dir/name` parsed as a CSV table with its path, `None` when the run did not write it.
fn table(dir: &Path, name: &str) -> Result<Option<(PathBuf, Table)>, PlotError> {
    let path = dir.join(name);
    match read(dir, name)? {
        Some(text) => Ok(Some((path.clone(), Table::parse(&path, &text)?))),
        None => Ok(None),
    }
}

/// The time series `dir/<stem>.parquet` (read back, `columns.rs`) or, without it,
/// `dir/<stem>.csv`, with its path; `None` when the run did not sample.
fn series(dir: &Path, stem: &str) -> Result<Option<(PathBuf, Table)>, PlotError> {
    let path = dir.join(format!("{stem}.parquet"));
    if std::fs::symlink_metadata(&path).is_err() {
        return table(dir, &format!("{stem}.csv"));
    }
    crate::files::check_regular(&path, MAX_FILE_BYTES).map_err(|e| perr(&path, e.to_string()))?;
    let file = std::fs::File::open(&path).map_err(|e| perr(&path, e.to_string()))?;
    let (header, rows) = crate::columns::read_parquet(file).map_err(|m| perr(&path, m))?;
    Ok(Some((path, Table { header, rows })))
}

/// Every figure as (file name, SVG text).
pub fn figures(dir: &Path) -> Result<Vec<(&'static str, String)>, PlotError> {
    let draw = |path: &Path, r: Drawn| r.map_err(|m| perr(path, m));
    let mut out = Vec::new();
    if let Some((path, t)) = table(dir, "flows.csv")? {
        out.push(("fct_cdf.svg", draw(&path, fct_cdf(&path, &t)?)?));
    }
    if let Some((path, t)) = table(dir, "packet_latency_percentiles.csv")? {
        out.push(("latency_cdf.svg", draw(&path, latency_cdf(&path, &t)?)?));
    }
    let summary: Option<serde_json::Value> = match read(dir, "summary.json")? {
        Some(text) => Some(serde_json::from_str(&text).map_err(|e| perr(&dir.join("summary.json"), e.to_string()))?),
        None => None,
    };
    if let Some(s) = &summary {
        out.push(("slowdown_by_size.svg", draw(dir, slowdown_by_size(s))?));
    }
    if let Some((path, t)) = table(dir, "ports.csv")?
        && t.header.iter().any(|h| h == "node_level")
    {
        out.push((
            "hotspot_map.svg",
            draw(&path, hotspot_map(&path, &t, summary.as_ref())?)?,
        ));
    }
    if let Some((path, t)) = series(dir, "timeseries_ports")? {
        let hot: Vec<u64> = summary
            .as_ref()
            .and_then(|s| s["hotspots"].as_array())
            .map(|h| h.iter().filter_map(|x| x["port"].as_u64()).collect())
            .unwrap_or_default();
        let (queue, util) = port_series(&path, &t, &hot)?;
        out.push(("queue_hotspots.svg", draw(&path, queue)?));
        out.push(("util_hotspots.svg", draw(&path, util)?));
    }
    if let Some((path, t)) = series(dir, "timeseries_flows")? {
        out.push(("flow_rates.svg", draw(&path, flow_rates(&path, &t)?)?));
    }
    if let Some((path, t)) = table(dir, "collectives.csv")? {
        out.push(("busbw.svg", draw(&path, busbw(&path, &t)?)?));
    }
    Ok(out)
}

/// The hotspot map from `ports.csv` (levels, utilisation, drops) and the summary's trees.
fn hotspot_map(path: &Path, t: &Table, summary: Option<&serde_json::Value>) -> Result<Drawn, PlotError> {
    let (nc, pc) = (t.col(path, "node")?, t.col(path, "peer")?);
    let (nl, pl) = (t.col(path, "node_level")?, t.col(path, "peer_level")?);
    let (uc, dc) = (t.col(path, "utilisation_active")?, t.col(path, "drops")?);
    let links: Vec<map::Link> = t
        .rows
        .iter()
        .filter_map(|r| {
            Some(map::Link {
                node: r.get(nc)?.clone(),
                peer: r.get(pc)?.clone(),
                node_level: r.get(nl)?.parse().ok()?,
                peer_level: r.get(pl)?.parse().ok()?,
                utilisation_active: Table::num(r, uc)?,
                drops: r.get(dc)?.parse().ok()?,
            })
        })
        .collect();
    // Tree edges name ports `node->peer` (pause tree) or `node -> peer` (congestion tree).
    let node = |v: &serde_json::Value| {
        v.as_str()
            .and_then(|p| p.split("->").next())
            .map(|n| n.trim().to_owned())
    };
    let mut arrows = Vec::new();
    if let Some(s) = summary {
        for (tree, held, by) in [
            ("pause_tree", "paused", "paused_by"),
            ("congestion_tree", "stalled", "waits_for"),
        ] {
            for e in s[tree].as_array().into_iter().flatten() {
                if let (Some(held), Some(by)) = (node(&e[held]), node(&e[by])) {
                    arrows.push(map::Arrow { held, by });
                }
            }
        }
    }
    let title = summary
        .and_then(|s| s["scenario"]["name"].as_str())
        .map_or_else(|| "Hotspot map".to_owned(), |n| format!("Hotspot map: {n}"));
    Ok(map::hotspot_map(&links, &arrows, &title))
}

/// Empirical CDF of `v` (sorted in place) as a step line: at each value the fraction at or
/// below it rises from the one before.
fn cdf(v: &mut [f64]) -> Vec<(f64, f64)> {
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .flat_map(|(i, &x)| [(x, i as f64 / n), (x, (i + 1) as f64 / n)])
        .collect()
}

fn fct_cdf(path: &Path, t: &Table) -> Result<Drawn, PlotError> {
    let (fct, group) = (t.col(path, "fct_ns")?, t.col(path, "group")?);
    let mut by_group: BTreeMap<usize, (String, Vec<f64>)> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for row in &t.rows {
        let g = row.get(group).cloned().unwrap_or_default();
        let i = order.iter().position(|x| *x == g).unwrap_or_else(|| {
            order.push(g.clone());
            order.len() - 1
        });
        if let Some(ns) = Table::num(row, fct) {
            by_group.entry(i).or_insert_with(|| (g, Vec::new())).1.push(ns / 1e3);
        }
    }
    let series: Vec<Series> = by_group
        .into_values()
        .map(|(name, mut v)| Series::new(format!("{name} ({} flows)", v.len()), cdf(&mut v)))
        .collect();
    let c = Chart {
        title: "Flow completion time CDF",
        x_label: "FCT (us, log scale)",
        y_label: "fraction of completed flows",
        x_log: true,
        y_range: Some((0.0, 1.0)),
        x_ticks: None,
    };
    Ok(line_chart(&c, &series))
}

fn latency_cdf(path: &Path, t: &Table) -> Result<Drawn, PlotError> {
    let (q, v) = (t.col(path, "percentile")?, t.col(path, "value_ns")?);
    let points = t
        .rows
        .iter()
        .filter_map(|r| Some((Table::num(r, v)? / 1e3, Table::num(r, q)?)))
        .collect();
    let c = Chart {
        title: "Packet latency CDF",
        x_label: "packet latency (us, log scale)",
        y_label: "fraction of delivered packets",
        x_log: true,
        y_range: Some((0.0, 1.0)),
        x_ticks: None,
    };
    Ok(line_chart(&c, &[Series::new("packets", points)]))
}

fn slowdown_by_size(s: &serde_json::Value) -> Drawn {
    let buckets = s["slowdown"]["by_size"].as_array().cloned().unwrap_or_default();
    // x: the bucket's largest size (open last bucket: twice its lower edge).
    let x = |b: &serde_json::Value| {
        b["size_max_bytes"]
            .as_f64()
            .or_else(|| b["size_above_bytes"].as_f64().map(|v| v * 2.0))
    };
    let series = ["p50", "p95", "p99"]
        .iter()
        .map(|q| {
            Series::new(
                format!("{q} slowdown"),
                buckets.iter().filter_map(|b| Some((x(b)?, b[*q].as_f64()?))).collect(),
            )
        })
        .collect::<Vec<_>>();
    let c = Chart {
        title: "FCT slowdown by flow size",
        x_label: "flow size, bucket's largest (bytes, log scale)",
        y_label: "FCT / ideal FCT",
        x_log: true,
        y_range: None,
        x_ticks: None,
    };
    line_chart(&c, &series)
}

/// Queue and utilisation over time of the top hotspot ports (the first ports of the file
/// when the summary ranks none).
fn port_series(path: &Path, t: &Table, hot: &[u64]) -> Result<(Drawn, Drawn), PlotError> {
    let (tc, pc, lc) = (t.col(path, "time_ns")?, t.col(path, "port")?, t.col(path, "link")?);
    let (qc, uc) = (t.col(path, "queue_mean_bytes")?, t.col(path, "utilisation")?);
    let mut ports: Vec<u64> = hot.iter().copied().take(MAX_LINES).collect();
    if ports.is_empty() {
        let mut seen = std::collections::BTreeSet::new();
        for r in &t.rows {
            if let Some(p) = Table::num(r, pc)
                && seen.insert(p as u64)
                && ports.len() < MAX_LINES
            {
                ports.push(p as u64);
            }
        }
    }
    let series = |col: usize, scale: f64| -> Vec<Series> {
        ports
            .iter()
            .map(|&p| {
                let rows: Vec<&Vec<String>> = t.rows.iter().filter(|r| Table::num(r, pc) == Some(p as f64)).collect();
                Series::new(
                    rows.first()
                        .map_or(format!("port {p}"), |r| format!("{} (port {p})", r[lc])),
                    rows.iter()
                        .filter_map(|r| Some((Table::num(r, tc)? / 1e3, Table::num(r, col)? * scale)))
                        .collect(),
                )
            })
            .collect()
    };
    let q = Chart {
        title: "Queue of the top hotspot ports (mean over each window)",
        x_label: "time (us)",
        y_label: "queue (KiB)",
        x_log: false,
        y_range: None,
        x_ticks: None,
    };
    let u = Chart {
        title: "Utilisation of the top hotspot ports (per window)",
        x_label: "time (us)",
        y_label: "utilisation (%)",
        x_log: false,
        y_range: Some((0.0, 100.0)),
        x_ticks: None,
    };
    Ok((
        line_chart(&q, &series(qc, 1.0 / 1024.0)),
        line_chart(&u, &series(uc, 100.0)),
    ))
}

fn flow_rates(path: &Path, t: &Table) -> Result<Drawn, PlotError> {
    let (tc, fc, rc) = (t.col(path, "time_ns")?, t.col(path, "flow")?, t.col(path, "rate_gbps")?);
    let mut by_flow: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
    for r in &t.rows {
        if let (Some(f), Some(x), Some(y)) = (Table::num(r, fc), Table::num(r, tc), Table::num(r, rc)) {
            let f = f as u64;
            if by_flow.contains_key(&f) || by_flow.len() < MAX_LINES {
                by_flow.entry(f).or_default().push((x / 1e3, y));
            }
        }
    }
    let series: Vec<Series> = by_flow
        .into_iter()
        .map(|(f, points)| Series::new(format!("flow {f}"), points))
        .collect();
    let c = Chart {
        title: "Congestion-control rate of the first flows",
        x_label: "time (us)",
        y_label: "rate (Gb/s)",
        x_log: false,
        y_range: None,
        x_ticks: None,
    };
    Ok(line_chart(&c, &series))
}

fn busbw(path: &Path, t: &Table) -> Result<Drawn, PlotError> {
    let (wc, sc, bc) = (
        t.col(path, "workload")?,
        t.col(path, "size_bytes")?,
        t.col(path, "busbw_GBps")?,
    );
    let mut order: Vec<String> = Vec::new();
    let mut by: Vec<Vec<(f64, f64)>> = Vec::new();
    for r in &t.rows {
        let w = r.get(wc).cloned().unwrap_or_default();
        let i = order.iter().position(|x| *x == w).unwrap_or_else(|| {
            order.push(w);
            by.push(Vec::new());
            order.len() - 1
        });
        if let (Some(x), Some(y)) = (Table::num(r, sc), Table::num(r, bc)) {
            by[i].push((x, y));
        }
    }
    let series: Vec<Series> = order
        .into_iter()
        .zip(by)
        .map(|(name, points)| Series::new(name, points))
        .collect();
    let c = Chart {
        title: "Bus bandwidth versus message size (nccl-tests busbw)",
        x_label: "message size (bytes, log scale)",
        y_label: "busbw (GB/s)",
        x_log: true,
        y_range: None,
        x_ticks: None,
    };
    Ok(line_chart(&c, &series))
}
