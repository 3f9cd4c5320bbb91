//! # scenarios: the scenario language, the runner, reports and the `fabricsim` binary
//!
//! - [`schema`]: the typed TOML format (every table refuses unknown keys).
//! - [`units`]: human units (`"100Gbps"`, `"4KiB"`, `"1.5us"`), parsed exactly.
//! - [`diag`]: errors that point at file:line:column and the field.
//! - [`files`]: reading user-named files: regular files only, within a size limit.
//! - [`wording`]: serde's and the TOML parser's messages in the user's terms.
//! - [`locate`]: finds a field's position for errors found after parsing.
//! - [`build`]: scenario -> topology, routes, engine configuration, flows, limits.
//! - [`cc_params`]: `[fabric.roce.cc]` keys over a DCQCN/TIMELY/HPCC preset, checked, and back.
//! - [`output_spec`]: the checks of `[output]` beyond its types (bucket edges, sampling).
//! - [`plots`]: SVG plots of a results directory (`fabricsim plot DIR`, `run --plots`).
//! - [`runner`]: runs a scenario and writes its results directory atomically.
//! - [`results_dir`]: the results directory's marker and the swap of old and new results.
//! - [`interrupt`]: SIGINT/SIGTERM counted, polled by the run loop and the results writer.
//! - [`cli`]: the `fabricsim` command line as a function (the binary is a thin wrapper).
//! - [`report`]: `summary.json`, CSVs, histogram logs and the terminal table.
//! - [`regression`]: baselines, `fabricsim check` and `fabricsim bless`.
//! - [`sweep`]: `[sweep]` tables, `fabricsim sweep` (points as child processes), sweep tables.
//! - [`ib_report`]: InfiniBand-only outputs (credit stalls, congestion tree, `ib_vls.csv`).
//! - [`fct_report`]: FCT slowdown per flow, per flow-size bucket and per workload group.
//! - [`columns`]: a table of typed columns written as CSV or Parquet, and Parquet read back.
//! - [`timeseries`]: `[output] sample`: per-port and per-flow time series, the run cut into windows.
//! - [`pcap`]: `[output] pcap`: pcap files of chosen ports (RoCEv2 frames, InfiniBand packets).
//! - [`tree`]: the congestion and pause trees in depth-first order with depths.
//! - [`roce_report`]: RoCEv2-only outputs (`roce_ports.csv`, `roce.json`: PFC, ECN, pause tree, deadlock).
//!
//! Only this crate reads or writes files.

pub mod build;
pub mod cc_params;
pub mod cli;
pub mod collective_report;
pub mod collective_stages;
pub mod columns;
pub mod diag;
pub mod fct_report;
pub mod files;
pub mod ib_report;
pub mod interrupt;
pub mod locate;
pub mod outcome;
pub mod output_spec;
pub mod partitioned;
pub mod pcap;
pub mod plots;
pub mod proc_stats;
pub mod regression;
pub mod report;
pub mod results_dir;
pub mod roce_report;
pub mod runner;
pub mod schema;
pub mod study;
pub mod sweep;
pub mod timeseries;
pub mod trace;
pub mod training_report;
pub mod tree;
pub mod units;
pub mod wording;
