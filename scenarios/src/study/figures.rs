//! The selection guide's figures: SVG line charts of its tables (`plots::chart`), written by
//! `fabricsim study` into a directory next to the report named after it
//! (`docs/studies/selection-guide/*.svg`) and linked from the report. A pure function of the
//! same [`Measured`] as the tables, so the same runs give the same bytes (`tests/tests/study.rs`
//! compares the committed files with what the runs give).

use super::guide::{Cluster, Measured, SHAPES, net_label, size_label};
use crate::plots::chart::{Chart, Series, line_chart};
use std::collections::BTreeSet;
use std::path::Path;

/// One figure of the report: its file name, title, axes and lines (x on a log scale, a tick
/// at each measured x).
pub struct Figure {
    pub file: String,
    pub title: String,
    x_label: &'static str,
    y_label: &'static str,
    ticks: Vec<(f64, String)>,
    series: Vec<Series>,
}

impl Figure {
    /// The SVG text.
    pub fn draw(&self) -> Result<String, String> {
        let c = Chart {
            title: &self.title,
            x_label: self.x_label,
            y_label: self.y_label,
            x_log: true,
            y_range: None,
            x_ticks: Some(self.ticks.clone()),
        };
        line_chart(&c, &self.series)
    }
}

/// The directory of the figures, relative to the report: the report's file stem
/// (`selection-guide.md` -> `selection-guide`).
pub fn dir_name(doc: &str) -> String {
    Path::new(doc)
        .file_stem()
        .map_or_else(|| "figures".to_owned(), |s| s.to_string_lossy().into_owned())
}

/// A tick at each x the series have, labelled by `label`.
fn ticks(series: &[Series], label: impl Fn(u64) -> String) -> Vec<(f64, String)> {
    let xs: BTreeSet<u64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0 as u64))
        .collect();
    xs.into_iter().map(|x| (x as f64, label(x))).collect()
}

/// Every figure, in report order: AllReduce busbw against message size per in-server shape
/// (one figure per GPU count); AllReduce and all-to-all busbw against servers per network at
/// the largest size; loaded p99 latency against servers per network.
pub fn figures(d: &Measured) -> Vec<Figure> {
    let mut out = Vec::new();
    let gpus: BTreeSet<u32> = d.server.keys().map(|k| k.1).collect();
    for n in gpus {
        let series: Vec<Series> = SHAPES
            .iter()
            .filter_map(|(key, label, _)| {
                let v = d.server.get(&(key.to_string(), n))?;
                Some(Series::new(*label, v.0.iter().map(|r| (r.0 as f64, r.1)).collect()))
            })
            .collect();
        out.push(Figure {
            file: format!("server_allreduce_{n}gpus.svg"),
            title: format!("AllReduce in one server, {n} GPUs"),
            x_label: "message size (log scale)",
            y_label: "busbw (GB/s)",
            ticks: ticks(&series, size_label),
            series,
        });
    }
    // Networks (and tiers, when both are run) in table order.
    let mixed_tiers = d.clusters.iter().any(|c| c.tiers != d.clusters[0].tiers);
    let mut nets: Vec<(u32, &str)> = Vec::new();
    for c in &d.clusters {
        if !nets.contains(&(c.tiers, c.net.as_str())) {
            nets.push((c.tiers, c.net.as_str()));
        }
    }
    for a2a in [false, true] {
        fn rows(c: &Cluster, a2a: bool) -> &[(u64, f64, f64)] {
            if a2a { &c.a2a } else { &c.ar }
        }
        let Some(size) = d.clusters.iter().flat_map(|c| rows(c, a2a)).map(|r| r.0).max() else {
            continue;
        };
        let series: Vec<Series> = nets
            .iter()
            .map(|&(tiers, net)| {
                let name = if mixed_tiers {
                    format!("{} ({tiers}-tier)", net_label(net))
                } else {
                    net_label(net).to_owned()
                };
                let points = d
                    .clusters
                    .iter()
                    .filter(|c| c.tiers == tiers && c.net == net)
                    .filter_map(|c| Some((f64::from(c.servers), rows(c, a2a).iter().find(|r| r.0 == size)?.1)))
                    .collect();
                Series::new(name, points)
            })
            .collect();
        let (file, what) = if a2a {
            ("cluster_alltoall.svg", "All-to-all")
        } else {
            ("cluster_allreduce.svg", "AllReduce")
        };
        out.push(Figure {
            file: file.to_owned(),
            title: format!("{what} of {} between HGX H100 servers", size_label(size)),
            x_label: "servers (8 GPUs each, log scale)",
            y_label: "busbw per GPU (GB/s)",
            ticks: ticks(&series, |x| x.to_string()),
            series,
        });
    }
    let mut tail_nets: Vec<&str> = Vec::new();
    for t in &d.tails {
        if !tail_nets.contains(&t.net.as_str()) {
            tail_nets.push(&t.net);
        }
    }
    let series: Vec<Series> = tail_nets
        .iter()
        .map(|net| {
            let points = d
                .tails
                .iter()
                .filter(|t| t.net == *net)
                .filter_map(|t| Some((f64::from(t.servers), t.loaded_p99_us?)))
                .collect();
            Series::new(net_label(net), points)
        })
        .collect();
    if series.iter().any(|s| !s.points.is_empty()) {
        out.push(Figure {
            file: "tail_p99.svg".to_owned(),
            title: "64-B message latency under load: p99".to_owned(),
            x_label: "servers (8 GPUs each, log scale)",
            y_label: "loaded p99 latency (us)",
            ticks: ticks(&series, |x| x.to_string()),
            series,
        });
    }
    out
}
