//! Time series (`[output] sample = "10us"`): every `sample` of simulated time, per port
//! (all, the top hotspots, or a list) the queue, utilisation, paused fraction per priority,
//! ECN marks, credit stalls and drops over the window, and per sending flow its rate and
//! goodput; written to `timeseries_ports.parquet` and `timeseries_flows.parquet`, or `.csv`
//! with `sample_format = "csv"` (both from one `Columns` table each, `columns.rs`).
//!
//! The run is cut into windows: `sim_core::run` is called once per window with the window's
//! end as its end time, and the sampler reads the fabric's cumulative counters between calls.
//! No event is added and nothing in the engine changes, so every other output is byte for
//! byte that of a run without sampling (a test checks it). Rows are bounded
//! (`sample_max_rows`): when the bound is reached sampling stops, the run goes on, and the
//! files (a last `# truncated ...` line in CSV, `fabricsim.truncated` metadata in Parquet),
//! `summary.json` and the terminal say where it stopped.

use crate::columns::Columns;
use fabrics::engine::Fabric;
use sim_core::{Duration, EventQueue, Progress, RunLimits, RunOutcome, RunReport, Scheduler, SimTime};
use std::ops::ControlFlow;

/// `summary.json` `timeseries`.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct TimeseriesInfo {
    /// The window, ns.
    pub sample_ns: f64,
    /// `all`, `hotspots` or `list`.
    pub ports: &'static str,
    /// Port rows recorded (with `hotspots`, before keeping the top ports' rows only).
    pub port_rows_recorded: u64,
    pub flow_rows: u64,
    pub max_rows: u64,
    /// Where the row bound stopped sampling (`null`: it did not).
    pub truncated_at_ns: Option<f64>,
}

impl TimeseriesInfo {
    /// The terminal's message when the row bound cut the series.
    pub fn note(&self) -> Option<String> {
        self.truncated_at_ns.map(|t| {
            format!(
                "time series CUT at {:.3}us: the next window would pass sample_max_rows = {} \
                 (raise it, sample less often, or record fewer ports with sample_ports / sample_port_ids)",
                t / 1e3,
                self.max_rows
            )
        })
    }
}

/// Default bound on the rows of both files together.
pub const DEFAULT_MAX_ROWS: u64 = 1_000_000;

/// Which ports to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortSelection {
    All,
    /// The top `n` of the end-of-run hotspot ranking (every port is sampled, the others are
    /// dropped when the files are written).
    Hotspots(usize),
    List(Vec<u32>),
}

/// Cumulative counters of one port at a window edge.
#[derive(Clone, Copy, Default)]
struct PortSnap {
    bytes_tx: u64,
    drops: u64,
    queue_area: u128,
    ecn_marked: u64,
    credit_stall_ps: u64,
    paused_ps: [u64; 8],
}

/// One port over one window (ending at `t`).
#[derive(Clone, Copy)]
struct PortRow {
    t: SimTime,
    port: u32,
    queue_bytes: u64,
    queue_mean_bytes: f64,
    utilisation: f64,
    drops: u64,
    ecn_marked: u64,
    credit_stall_frac: f64,
    paused_frac: [f64; 8],
}

/// One sending flow over one window.
#[derive(Clone, Copy)]
struct FlowRow {
    t: SimTime,
    flow: u32,
    rate_bps: u64,
    goodput_bps: f64,
    /// The congestion controller's state variables (`CongestionControl::state`).
    cc: fabrics::models::cc::CcState,
}

/// What the sampler reads: one fabric, or the partitions of a run on several threads at a
/// window boundary (`partitioned.rs`), each port from the partition that runs it and each
/// flow's sender side from its source's partition, its receiver side from its
/// destination's.
pub struct View<'a> {
    parts: &'a [&'a Fabric],
}

impl<'a> View<'a> {
    /// `parts`: one fabric, or every partition in partition order.
    pub fn new(parts: &'a [&'a Fabric]) -> Self {
        assert!(!parts.is_empty(), "a view of no fabric");
        View { parts }
    }
    fn port(&self, p: u32) -> &'a Fabric {
        self.parts[self.parts[0].partition_of_port(p)]
    }
    fn sender(&self, f: u32) -> &'a Fabric {
        let h = self.parts[0].flows()[f as usize].src;
        self.parts[self.parts[0].partition_of_host(h)]
    }
    fn receiver(&self, f: u32) -> &'a Fabric {
        let h = self.parts[0].flows()[f as usize].dst;
        self.parts[self.parts[0].partition_of_host(h)]
    }
}

/// The sampler: its settings, the last snapshot and the rows so far.
pub struct Sampler {
    period: Duration,
    selection: PortSelection,
    /// Ports snapshotted each window (all of them unless a list was given).
    ports: Vec<u32>,
    prev: Vec<PortSnap>,
    prev_flow_bytes: Vec<u64>,
    prev_t: SimTime,
    port_rows: Vec<PortRow>,
    flow_rows: Vec<FlowRow>,
    max_rows: u64,
    /// The window end at which the row bound stopped sampling.
    truncated_at: Option<SimTime>,
}

impl Sampler {
    /// A sampler of `fabric` every `period` (> 0), recording `selection`, at most `max_rows`
    /// rows. Port ids of a list must be valid (the loader checks them).
    pub fn new(fabric: &Fabric, period: Duration, selection: PortSelection, max_rows: u64) -> Self {
        let ports: Vec<u32> = match &selection {
            PortSelection::List(l) => l.clone(),
            _ => (0..fabric.ports().len() as u32).collect(),
        };
        Sampler {
            period,
            selection,
            prev: vec![PortSnap::default(); ports.len()],
            ports,
            prev_flow_bytes: vec![0; fabric.flows().len()],
            prev_t: SimTime::ZERO,
            port_rows: Vec::new(),
            flow_rows: Vec::new(),
            max_rows,
            truncated_at: None,
        }
    }

    fn snap(fabric: &Fabric, p: u32, t: SimTime) -> PortSnap {
        let port = &fabric.ports()[p as usize];
        let mut s = PortSnap {
            bytes_tx: port.stats.bytes_tx,
            drops: port.stats.drops,
            queue_area: port.stats.queue_bytes.area_until(t),
            ..PortSnap::default()
        };
        if let Some(r) = fabric.roce() {
            s.ecn_marked = r.port_stats[p as usize].ecn_marked.iter().sum();
            for (prio, v) in s.paused_ps.iter_mut().enumerate() {
                *v = r.paused(p, prio as u8, t).1.ps();
            }
        }
        if let Some(ib) = fabric.ib() {
            s.credit_stall_ps = ib.port_credit_stall(p, t).ps();
        }
        s
    }

    /// Records the window ending at `t` (after `prev_t`). Returns `false` once the row bound
    /// stopped sampling.
    pub fn sample(&mut self, view: &View, t: SimTime) -> bool {
        if self.truncated_at.is_some() {
            return false;
        }
        let dt = t.since(self.prev_t).ps();
        if dt == 0 {
            return true;
        }
        let frac = |ps: u64| ps as f64 / dt as f64;
        let mut port_rows = Vec::new();
        for (i, &p) in self.ports.iter().enumerate() {
            let fabric = view.port(p);
            let now = Self::snap(fabric, p, t);
            let was = self.prev[i];
            self.prev[i] = now;
            let port = &fabric.ports()[p as usize];
            let busy = sim_core::serialization_time(sim_core::Bytes(now.bytes_tx - was.bytes_tx), port.rate).ps();
            let mut paused_frac = [0.0; 8];
            for (k, f) in paused_frac.iter_mut().enumerate() {
                *f = frac(now.paused_ps[k] - was.paused_ps[k]);
            }
            let row = PortRow {
                t,
                port: p,
                queue_bytes: port.stats.queue_bytes.value(),
                queue_mean_bytes: (now.queue_area - was.queue_area) as f64 / dt as f64,
                utilisation: frac(busy).min(1.0),
                drops: now.drops - was.drops,
                ecn_marked: now.ecn_marked - was.ecn_marked,
                credit_stall_frac: frac(now.credit_stall_ps - was.credit_stall_ps),
                paused_frac,
            };
            let idle = row.queue_bytes == 0
                && row.queue_mean_bytes == 0.0
                && busy == 0
                && row.drops == 0
                && row.ecn_marked == 0
                && row.credit_stall_frac == 0.0
                && paused_frac.iter().all(|&f| f == 0.0);
            if !idle {
                port_rows.push(row);
            }
        }
        let mut flow_rows = Vec::new();
        for f in 0..self.prev_flow_bytes.len() {
            let (sender, receiver) = (view.sender(f as u32), view.receiver(f as u32));
            let (sent, got) = (&sender.flow_records()[f], &receiver.flow_records()[f]);
            let delta = got.bytes_delivered - self.prev_flow_bytes[f];
            self.prev_flow_bytes[f] = got.bytes_delivered;
            let sending = sent.first_sent.is_some() && (got.finish.is_none() || delta > 0);
            if sending && sent.size_bytes > 0 {
                flow_rows.push(FlowRow {
                    t,
                    flow: sent.id,
                    rate_bps: sender.flow_rate(sent.id).get(),
                    goodput_bps: delta as f64 * 8.0 * 1e12 / dt as f64,
                    cc: sender.flow_cc_state(sent.id),
                });
            }
        }
        self.prev_t = t;
        let total = (self.port_rows.len() + self.flow_rows.len() + port_rows.len() + flow_rows.len()) as u64;
        if total > self.max_rows {
            self.truncated_at = Some(t);
            return false;
        }
        self.port_rows.extend(port_rows);
        self.flow_rows.extend(flow_rows);
        true
    }

    /// The sampling period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What `summary.json` says about the series.
    pub fn info(&self) -> TimeseriesInfo {
        TimeseriesInfo {
            sample_ns: self.period.ps() as f64 / 1e3,
            ports: match self.selection {
                PortSelection::All => "all",
                PortSelection::Hotspots(_) => "hotspots",
                PortSelection::List(_) => "list",
            },
            port_rows_recorded: self.port_rows.len() as u64,
            flow_rows: self.flow_rows.len() as u64,
            max_rows: self.max_rows,
            truncated_at_ns: self.truncated_at.map(|t| t.ps() as f64 / 1e3),
        }
    }

    /// The `# truncated ...` last line of the CSV files (empty when not cut).
    pub fn truncated_line(&self) -> String {
        self.truncated_at
            .map(|t| {
                format!(
                    "# truncated at time_ns {:.3}: sample_max_rows = {} reached\n",
                    t.ps() as f64 / 1e3,
                    self.max_rows
                )
            })
            .unwrap_or_default()
    }

    /// The key-value metadata of the Parquet files: `fabricsim.truncated` (the CSV's last
    /// line without `# `) when the row bound cut the series, else none.
    pub fn parquet_metadata(&self) -> Vec<(&'static str, String)> {
        let line = self.truncated_line();
        let line = line.trim_start_matches("# ").trim_end();
        if line.is_empty() {
            Vec::new()
        } else {
            vec![("fabricsim.truncated", line.to_owned())]
        }
    }

    /// The port series (`timeseries_ports.*`). `hotspots`: the port ids of the end-of-run
    /// ranking, best first (used by [`PortSelection::Hotspots`]); `name(p)` names port `p`.
    pub fn ports_table(&self, fabric: &Fabric, hotspots: &[u32], name: impl Fn(u32) -> String) -> Columns {
        let keep: Option<std::collections::BTreeSet<u32>> = match self.selection {
            PortSelection::Hotspots(n) => Some(hotspots.iter().take(n).copied().collect()),
            _ => None,
        };
        let rows: Vec<&PortRow> = self
            .port_rows
            .iter()
            .filter(|r| keep.as_ref().is_none_or(|k| k.contains(&r.port)))
            .collect();
        let mut c = Columns::default();
        c.float("time_ns", 3, rows.iter().map(|r| r.t.ps() as f64 / 1e3));
        c.int("port", rows.iter().map(|r| i64::from(r.port)));
        c.text("link", rows.iter().map(|r| name(r.port)));
        c.int("queue_bytes", rows.iter().map(|r| r.queue_bytes as i64));
        c.float("queue_mean_bytes", 3, rows.iter().map(|r| r.queue_mean_bytes));
        c.float("utilisation", 6, rows.iter().map(|r| r.utilisation));
        c.int("drops", rows.iter().map(|r| r.drops as i64));
        if fabric.roce().is_some() {
            c.int("ecn_marked", rows.iter().map(|r| r.ecn_marked as i64));
            for p in 0..8 {
                c.float(&format!("paused_frac_p{p}"), 6, rows.iter().map(|r| r.paused_frac[p]));
            }
        }
        if fabric.ib().is_some() {
            c.float("credit_stall_frac", 6, rows.iter().map(|r| r.credit_stall_frac));
        }
        c
    }

    /// The flow series (`timeseries_flows.*`): per window, every flow that was sending
    /// (started, and not complete or delivering in the window): its congestion-control rate at
    /// the window's end, its goodput over the window, and its controller's state variables at
    /// the window's end (one column each, named by the algorithm: `dcqcn_target_gbps`,
    /// `dcqcn_alpha`, `timely_rtt_us`, `timely_rtt_diff_us`, `hpcc_u`, `hpcc_ref_rate_gbps`,
    /// `ibcc_ccti`; missing where a flow's controller has no such variable).
    pub fn flows_table(&self) -> Columns {
        let mut names: Vec<&'static str> = Vec::new();
        for (name, _) in self.flow_rows.iter().flat_map(|r| r.cc.0.iter().flatten()) {
            if !names.contains(name) {
                names.push(name);
            }
        }
        let rows = &self.flow_rows;
        let mut c = Columns::default();
        c.float("time_ns", 3, rows.iter().map(|r| r.t.ps() as f64 / 1e3));
        c.int("flow", rows.iter().map(|r| i64::from(r.flow)));
        c.float("rate_gbps", 6, rows.iter().map(|r| r.rate_bps as f64 / 1e9));
        c.float("goodput_gbps", 6, rows.iter().map(|r| r.goodput_bps / 1e9));
        for n in &names {
            let cell = |r: &FlowRow| r.cc.0.iter().flatten().find(|(k, _)| k == n).map(|(_, v)| *v);
            c.opt_float(n, 6, rows.iter().map(cell));
        }
        c
    }

    /// The time-series files in `format`, as (file name, bytes); `hotspots` and `name` as
    /// for [`Sampler::ports_table`].
    pub fn files(
        &self,
        format: crate::schema::SampleFormat,
        fabric: &Fabric,
        hotspots: &[u32],
        name: impl Fn(u32) -> String,
    ) -> Result<Vec<(&'static str, Vec<u8>)>, String> {
        use crate::schema::SampleFormat;
        let (ports, flows) = (self.ports_table(fabric, hotspots, name), self.flows_table());
        Ok(match format {
            SampleFormat::Csv => {
                let end = self.truncated_line();
                vec![
                    ("timeseries_ports.csv", ports.csv(&end).into_bytes()),
                    ("timeseries_flows.csv", flows.csv(&end).into_bytes()),
                ]
            }
            SampleFormat::Parquet => {
                let meta = self.parquet_metadata();
                vec![
                    ("timeseries_ports.parquet", ports.parquet("timeseries_ports", &meta)?),
                    ("timeseries_flows.parquet", flows.parquet("timeseries_flows", &meta)?),
                ]
            }
        })
    }
}

/// [`sim_core::run()`] cut into windows of `sampler`'s period, sampling after each; without a
/// sampler, one call. The budgets hold for the whole run: events and wall-clock time are
/// counted across windows, and the report is the one a single call would give.
pub fn run_sampled<Q: EventQueue<fabrics::engine::Ev>>(
    fabric: &mut Fabric,
    sched: &mut Scheduler<fabrics::engine::Ev, Q>,
    limits: &RunLimits,
    sampler: Option<&mut Sampler>,
    mut progress: impl FnMut(&Progress) -> ControlFlow<()>,
) -> RunReport {
    let Some(sampler) = sampler else {
        return sim_core::run(fabric, sched, limits, progress);
    };
    let end = limits.end_time.unwrap_or(SimTime::MAX);
    let mut total = RunReport {
        outcome: RunOutcome::Drained,
        events: 0,
        end: SimTime::ZERO,
        wall_elapsed: std::time::Duration::ZERO,
    };
    let mut sampling = true;
    loop {
        // From the last sample (where the last window ended: a run that goes on after its
        // partitions folded starts from there, not from its last event).
        let window_end = if sampling {
            (sampler.prev_t + sampler.period).min(end)
        } else {
            end
        };
        let chunk = RunLimits {
            end_time: Some(window_end),
            max_events: limits.max_events.map(|m| m.saturating_sub(total.events)),
            wall_clock: limits.wall_clock.map(|w| w.saturating_sub(total.wall_elapsed)),
            progress_every_events: limits.progress_every_events,
        };
        let r = sim_core::run(fabric, sched, &chunk, &mut progress);
        total.events += r.events;
        total.wall_elapsed += r.wall_elapsed;
        total.end = r.end;
        total.outcome = r.outcome;
        if sampling {
            sampling = sampler.sample(&View::new(&[&*fabric]), r.end);
        }
        if r.outcome != RunOutcome::EndTime || window_end >= end {
            return total;
        }
        // Between windows too: the budgets and the callback (which polls for signals) hold
        // however short the windows are.
        let p = Progress {
            now: sched.now(),
            events: total.events,
            pending: sched.pending(),
            wall_elapsed: total.wall_elapsed,
        };
        if limits.wall_clock.is_some_and(|w| p.wall_elapsed >= w) {
            total.outcome = RunOutcome::WallClock;
            return total;
        }
        if progress(&p).is_break() {
            total.outcome = RunOutcome::Stopped;
            return total;
        }
    }
}
