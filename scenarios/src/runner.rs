//! Runs a scenario end to end: load, build, simulate, write the results directory.
//!
//! Results are written into a temporary sibling directory and swapped into place by renames
//! only when every file is complete (`results_dir`), so an error, a signal or a kill never
//! leaves a half-written results directory, and only a directory fabricsim wrote is replaced.

use crate::build::{Built, Loaded, load};
use crate::diag::ScenarioError;
use crate::interrupt::Interrupt;
use crate::report::{self, ScenarioInfo, Summary};
use crate::results_dir::{OutError, Target};
use fabrics::engine::{EngineError, Ev, Fabric};
use fabrics::routing::Routes;
use sha2::{Digest, Sha256};
use sim_core::{Progress, RunLimits, RunOutcome, RunReport, Scheduler, SimTime, Stopwatch, WheelQueue};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// Everything that can stop a run, each with a message for the user.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RunError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("{file}: {message}")]
    Engine { file: String, message: String },
    #[error("cannot write results to {path}: {message}")]
    Output { path: String, message: String },
    /// `--out` names a directory fabricsim must not replace (exit 2).
    #[error("refusing --out {path}: {message}")]
    OutDir { path: String, message: String },
    /// A signal (Ctrl-C, SIGTERM) stopped the command before results were written (exit 130).
    #[error("interrupted{}", if .0.is_empty() { String::new() } else { format!(": {}", .0) })]
    Interrupted(String),
    /// `run.wall_clock_s` ran out while the fabric was being built: nothing was simulated
    /// (exit 1). A budget that runs out during the simulation writes partial results instead.
    #[error("{file}: {message}")]
    BuildBudget { file: String, message: String },
    /// `--threads` asks to split a run that cannot be split (exit 2).
    #[error("{file}: refusing --threads {threads}: {message}")]
    Threads {
        file: String,
        threads: u32,
        message: String,
    },
}

impl RunError {
    /// Exit status: 2 for an invalid scenario or `--out`, 130 when interrupted, else 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Scenario(_) | RunError::OutDir { .. } | RunError::Threads { .. } => 2,
            RunError::Interrupted(_) => crate::interrupt::EXIT_INTERRUPTED,
            RunError::Engine { .. } | RunError::Output { .. } | RunError::BuildBudget { .. } => 1,
        }
    }
}

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Results directory; default `results/<scenario name>`.
    pub out_dir: Option<PathBuf>,
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Print progress lines to stderr on long runs.
    pub progress: bool,
    /// Where interruptions come from (default: SIGINT/SIGTERM of the process, counted once the
    /// binary called `interrupt::install`).
    pub interrupt: Interrupt,
    /// Threads to run on, the fabric split by pod (`partitioned.rs`).
    pub threads: Threads,
}

/// How many threads a run may use (`--threads`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// Exactly this many (0 and 1 mean one); a run that cannot be split is refused.
    Exactly(u32),
    /// As many as the machine has cores and the fabric has groups to split into (at most
    /// `MAX_PARTITIONS`); a run that cannot be split runs on one thread.
    Auto,
}

impl Default for Threads {
    fn default() -> Self {
        Threads::Exactly(1)
    }
}

impl Threads {
    /// Threads asked for (`Auto`: the machine's cores, at most `MAX_PARTITIONS`).
    fn wanted(self) -> usize {
        match self {
            Threads::Exactly(n) => n.max(1) as usize,
            Threads::Auto => std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(fabrics::engine::MAX_PARTITIONS),
        }
    }
}

/// What a finished run returns.
pub struct RunOutput {
    pub summary: Summary,
    pub out_dir: PathBuf,
    pub report: RunReport,
    /// The scenario as written to `scenario.resolved.toml` (defaults filled in).
    pub resolved: crate::schema::Scenario,
}

/// Loads and checks a scenario without running it; returns what it would build.
pub fn validate(path: &Path) -> Result<(Loaded, Built), RunError> {
    validate_loaded(load(path)?)
}

/// [`validate`] of a scenario already parsed (e.g. a sweep point, `crate::sweep`), within
/// the scenario's wall-clock budget and the process's interrupts.
pub fn validate_loaded(loaded: Loaded) -> Result<(Loaded, Built), RunError> {
    let mut built = build_within(&loaded, Stopwatch::start(), &Interrupt::default())?;
    // Lent to the check's fabric and given back: no copy of tables that can take a GiB.
    let routes = std::mem::take(&mut built.routes);
    built.routes = check_routable(&loaded, &built, routes)?;
    Ok((loaded, built))
}

/// The wall-clock budget of a scenario (`run.wall_clock_s`).
fn wall_budget(loaded: &Loaded) -> std::time::Duration {
    std::time::Duration::from_secs(loaded.scenario.run.wall_clock_s.max(1))
}

/// Builds `loaded` within its wall-clock budget, counted from `started` (the process's
/// command: loading and building count, not only the simulation; issue 15), giving up on an
/// interrupt too.
fn build_within(loaded: &Loaded, started: Stopwatch, interrupt: &Interrupt) -> Result<Built, RunError> {
    let budget = wall_budget(loaded);
    let stop = || interrupt.count() > 0 || started.elapsed() >= budget;
    match loaded.build_until(&stop)? {
        Some(built) => Ok(built),
        None if interrupt.count() > 0 => Err(RunError::Interrupted(
            "while building the fabric; nothing was written".into(),
        )),
        None => Err(RunError::BuildBudget {
            file: loaded.file.clone(),
            message: format!(
                "the wall-clock budget (run.wall_clock_s = {} s) ran out after {:.1} s while building the fabric \
                 (topology, route tables, flows), before the simulation: raise run.wall_clock_s or use a smaller \
                 topology",
                loaded.scenario.run.wall_clock_s,
                started.elapsed().as_secs_f64()
            ),
        }),
    }
}

/// Refuses, as a scenario error, what the engine refuses when it is built from the scenario
/// with `routes` (`built`'s, lent); gives them back.
fn check_routable(loaded: &Loaded, built: &Built, routes: Routes) -> Result<Routes, RunError> {
    let mut fabric = Fabric::with_deps(
        &built.topology,
        routes,
        built.engine.clone(),
        built.flows.clone(),
        &built.deps,
    )
    .map_err(|e| engine_error(loaded, e))?;
    // `[output] pcap` names ports of the built fabric.
    let topo = &built.topology;
    let node_names: Vec<&str> = topo.graph.node_indices().map(|n| topo.graph[n].name.as_str()).collect();
    loaded.enable_pcap(&mut fabric, &node_names)?;
    Ok(fabric.into_routes())
}

/// What the partitions of a run on several threads left to do.
enum Partitioned {
    /// The run is over.
    Done(RunReport),
    /// Go on on one thread from this scheduler (the fabric folded); the partitioned part.
    Continue(Box<Scheduler<Ev, WheelQueue<Ev>>>, RunReport),
    /// Run again from the start on one thread, after this much wall time (or none: one thread).
    Again(std::time::Duration),
}

/// The partition of each node and how many partitions, for a run on `threads` threads
/// (`partitioned.rs`): `None` for one thread (asked for, or `Auto` on a run that cannot be
/// split); `Err` when `Exactly` asks to split one that cannot be.
fn partitions(
    loaded: &Loaded,
    topology: &fabrics::topology::Topology,
    fabric: &Fabric,
    threads: Threads,
) -> Result<Option<(Vec<u8>, usize)>, RunError> {
    let wanted = threads.wanted();
    if wanted < 2 {
        return Ok(None);
    }
    let pause_search = fabric.roce().is_some();
    let groups = crate::partitioned::groups(topology, pause_search);
    let refusal = fabric.partition_refusal().or_else(|| groups.as_ref().err().cloned());
    let n = match (refusal, threads) {
        (Some(why), Threads::Auto) => {
            tracing::info!("--threads auto: one thread, because {why}");
            return Ok(None);
        }
        (Some(message), Threads::Exactly(_)) => {
            return Err(RunError::Threads {
                file: loaded.file.clone(),
                threads: wanted as u32,
                message,
            });
        }
        // As many as the cores, at most one per group.
        (None, Threads::Auto) => {
            let groups = groups.map_or(0, |(_, n)| n);
            if groups.min(wanted) < 2 {
                tracing::info!("--threads auto: one thread, because the topology has {groups} group(s) to split into");
                return Ok(None);
            }
            groups.min(wanted)
        }
        (None, Threads::Exactly(_)) => wanted,
    };
    let load = fabric.node_load_estimate();
    let parts =
        crate::partitioned::groups_of_nodes(topology, n, pause_search, &load).map_err(|message| RunError::Threads {
            file: loaded.file.clone(),
            threads: n as u32,
            message,
        })?;
    match (fabric.partition_refusal_for(&parts), threads) {
        (None, _) => Ok(Some((parts, n))),
        (Some(why), Threads::Auto) => {
            tracing::info!("--threads auto: one thread, because {why}");
            Ok(None)
        }
        (Some(message), Threads::Exactly(_)) => Err(RunError::Threads {
            file: loaded.file.clone(),
            threads: n as u32,
            message,
        }),
    }
}

/// An engine refusal as a scenario error (exit 2), located at the part of the scenario it is
/// about: the topology for unconnected hosts and an oversized fabric, `[fabric]` for a
/// configuration out of range (the loader refuses the known cases at their key first).
fn engine_error(loaded: &Loaded, e: EngineError) -> RunError {
    let field = match e {
        EngineError::BadConfig(_) => "fabric",
        EngineError::UnknownHost { .. } => "workload",
        EngineError::Unroutable { .. } | EngineError::TooLarge(_) => "topology",
    };
    RunError::Scenario(loaded.err(field, e.to_string()))
}

/// Runs the scenario at `path` and writes its results directory.
pub fn run_file(path: &Path, opts: &RunOptions) -> Result<RunOutput, RunError> {
    // The wall-clock budget counts from here: loading and building are part of the run.
    let started = Stopwatch::start();
    let loaded = load(path)?.with_seed(opts.seed);
    let built = build_within(&loaded, started, &opts.interrupt)?;
    let resolved_scenario = loaded.resolved(&built);
    let resolved = toml::to_string(&resolved_scenario).map_err(|e| RunError::Engine {
        file: loaded.file.clone(),
        message: format!("cannot write the resolved scenario: {e}"),
    })?;
    let sha = Sha256::digest(resolved.as_bytes());
    let sc = &loaded.scenario.scenario;
    let meta = ScenarioInfo {
        name: sc.name.clone(),
        description: sc.description.clone(),
        seed: sc.seed,
        resolved_sha256: sha.iter().map(|b| format!("{b:02x}")).collect(),
    };
    let out_dir = opts
        .out_dir
        .clone()
        .unwrap_or_else(|| Path::new("results").join(sanitize(&sc.name)));
    // Refuse a directory fabricsim may not replace before spending the run on it.
    let target = Target::new(&out_dir, path).map_err(|e| out_error(&out_dir, e))?;
    let interrupt = &opts.interrupt;
    if interrupt.count() > 0 {
        return Err(RunError::Interrupted(
            "before the simulation started; nothing was written".into(),
        ));
    }

    let Built {
        topology,
        routes,
        engine,
        flows,
        deps,
        collectives,
        training,
        mut limits,
    } = built;
    let n_hotspots = loaded.scenario.output.hotspots as usize;
    // The partitions of a run on several threads are built from the same flows.
    let wanted = opts.threads.wanted();
    let built_flows = if wanted > 1 { flows.clone() } else { Vec::new() };
    let mut fabric =
        Fabric::with_deps(&topology, routes, engine, flows, &deps).map_err(|e| engine_error(&loaded, e))?;
    // What the build left of the budget is the simulation's (none left: it stops at once,
    // outcome `wall_clock_budget`, and `timing.json` says the build took it).
    let build_elapsed = started.elapsed();
    limits.wall_clock = Some(wall_budget(&loaded).saturating_sub(build_elapsed));
    loaded.check_sample_ports(fabric.ports().len())?;
    let node_names: Vec<&str> = topology
        .graph
        .node_indices()
        .map(|n| topology.graph[n].name.as_str())
        .collect();
    let pcap_ports = loaded.enable_pcap(&mut fabric, &node_names)?;
    let mut sampler = loaded.sampler(&fabric);
    tracing::info!(scenario = %sc.name, hosts = topology.n_hosts(), flows = fabric.flows().len(), "running");
    // On several threads: this fabric becomes partition 0 and the others are built alike; a
    // run that must end on one thread gets a fresh fabric (`partitioned.rs`).
    let split = partitions(&loaded, &topology, &fabric, opts.threads)?;
    let threads = split.as_ref().map_or(1, |(_, n)| *n);
    // The CPU time of this thread and of the ended workers when the simulation starts, every
    // fabric built (`timing.json`'s `run_cpu_seconds`: the cost of the events, without the
    // build's).
    let run_cpu_from;
    let (mut fabric, partitioned) = if let Some((parts, threads)) = split {
        let (routes, engine) = (fabric.routes().clone(), fabric.config().clone());
        let fresh = || {
            Fabric::with_deps(&topology, routes.clone(), engine.clone(), built_flows.clone(), &deps)
                .map_err(|e| engine_error(&loaded, e))
        };
        fabric.set_partition(parts.clone(), 0);
        let mut fabrics = vec![fabric];
        for me in 1..threads as u8 {
            let mut f = fresh()?;
            f.set_partition(parts.clone(), me);
            fabrics.push(f);
        }
        run_cpu_from = crate::proc_stats::simulation_cpu_ns();
        match crate::partitioned::run(fabrics, &limits, interrupt, opts.progress, sampler.as_mut()) {
            crate::partitioned::Outcome::Done(f, report) => (*f, Partitioned::Done(report)),
            crate::partitioned::Outcome::Continue(f, sched, report) => {
                tracing::info!(
                    scenario = %sc.name,
                    at_ms = report.end.ps() as f64 / 1e9,
                    "the partitions folded into one fabric (every flow may end within a window, or the windows held too little or too uneven work): going on on one thread"
                );
                (*f, Partitioned::Continue(sched, report))
            }
            crate::partitioned::Outcome::NeedsOneThread(why, spent) => {
                tracing::warn!(scenario = %sc.name, "{why}: running again on one thread for the exact end");
                let fabric = fresh()?;
                // The time series starts again with the run.
                sampler = loaded.sampler(&fabric);
                (fabric, Partitioned::Again(spent))
            }
        }
    } else {
        run_cpu_from = crate::proc_stats::simulation_cpu_ns();
        (fabric, Partitioned::Again(std::time::Duration::ZERO))
    };
    let mut last_print = std::time::Duration::ZERO;
    let show = opts.progress;
    // For `timing.json`: from when the run went on on one thread (`None`: it never did), and
    // whether it started again on one thread.
    let one_thread_from = match &partitioned {
        Partitioned::Done(_) => None,
        Partitioned::Continue(_, before) => Some(before.end),
        Partitioned::Again(_) => Some(SimTime::ZERO),
    };
    let ran_again = threads > 1 && matches!(partitioned, Partitioned::Again(_));
    // The run goes on on one thread from `sched` (`None`: from the start); what the partitions
    // ran before (`before`: events, wall time) is counted in.
    let mut go_on = |sched: Option<Box<Scheduler<Ev, WheelQueue<Ev>>>>, before: RunReport| {
        let mut sched = sched.map_or_else(|| fabric.scheduler(), |s| *s);
        let limits = RunLimits {
            max_events: limits.max_events.map(|m| m.saturating_sub(before.events)),
            wall_clock: limits.wall_clock.map(|w| w.saturating_sub(before.wall_elapsed)),
            ..limits
        };
        let report =
            crate::timeseries::run_sampled(&mut fabric, &mut sched, &limits, sampler.as_mut(), |p: &Progress| {
                // A signal ends the run as a budget does (outcome `interrupted`, results written).
                if interrupt.count() > 0 {
                    return ControlFlow::Break(());
                }
                if show && p.wall_elapsed >= last_print + std::time::Duration::from_secs(2) {
                    last_print = p.wall_elapsed;
                    eprintln!(
                        "  ... simulated {:.3} ms, {} events ({:.1} M/s), {} pending",
                        p.now.ps() as f64 / 1e9,
                        p.events,
                        p.events as f64 / p.wall_elapsed.as_secs_f64().max(1e-9) / 1e6,
                        p.pending
                    );
                }
                ControlFlow::Continue(())
            });
        RunReport {
            events: before.events + report.events,
            wall_elapsed: before.wall_elapsed + report.wall_elapsed,
            ..report
        }
    };
    let report = match partitioned {
        Partitioned::Done(report) => report,
        Partitioned::Continue(sched, before) => go_on(Some(sched), before),
        Partitioned::Again(spent) => {
            let before = RunReport {
                outcome: RunOutcome::EndTime,
                events: 0,
                end: SimTime::ZERO,
                wall_elapsed: spent,
            };
            go_on(None, before)
        }
    };
    // Every worker thread has ended and counted its CPU time in (`proc_stats::note_thread_cpu`).
    let run_cpu_seconds = crate::proc_stats::simulation_cpu_ns()
        .zip(run_cpu_from)
        .map(|(to, from)| to.saturating_sub(from) as f64 / 1e9);
    // Signals so far belong to the simulation; one more while writing stops the writing.
    let seen = interrupt.count();
    let groups = report::group_names(&loaded.scenario);
    let ideals = crate::fct_report::ideals(&fabric);
    let edges: Option<Vec<u64>> = loaded
        .scenario
        .output
        .slowdown_size_edges
        .as_ref()
        .map(|e| e.iter().map(|s| s.get().get()).collect());
    let inputs = report::ReportInputs {
        ideals: &ideals,
        n_hotspots,
        slowdown_edges: edges.as_deref(),
    };
    let mut summary = report::summarize(&fabric, &topology, meta, &report, &inputs, &groups);
    let names: Vec<String> = groups.iter().map(|(name, _)| name.clone()).collect();
    let coll_rows = crate::collective_report::rows(&fabric, &collectives, &names);
    if !coll_rows.is_empty() {
        summary.collectives = Some(coll_rows);
    }
    if let Some(sm) = &sampler {
        summary.timeseries = Some(sm.info());
    }
    let train_rows = crate::training_report::rows(&fabric, &training, &names);
    if !train_rows.is_empty() {
        summary.training = Some(train_rows);
    }
    let stage_rows = crate::collective_stages::rows(&fabric, &collectives, &names);
    if !stage_rows.is_empty() {
        summary.collective_stages = Some(stage_rows);
    }
    let trace = loaded.scenario.output.trace.then(|| {
        crate::trace::encode(
            &fabric,
            &topology,
            &collectives,
            &training,
            &names,
            loaded.scenario.output.trace_max_events,
        )
    });
    summary.trace = trace.as_ref().map(|t| t.info.clone());

    // `[output] pcap`: one file per captured port (`pcap.rs`).
    let (pcap_names, pcap_bytes): (Vec<String>, Vec<Vec<u8>>) = match &loaded.scenario.output.pcap {
        Some(spec) => {
            let (f, info) = crate::pcap::files(&fabric, &pcap_ports, spec.payload_bytes, spec.format, &node_names);
            summary.pcap = Some(info);
            f.into_iter().unzip()
        }
        None => Default::default(),
    };

    let end = report.end;
    let mut files: Vec<(&str, Vec<u8>)> = vec![
        ("summary.json", to_json(&summary)),
        ("scenario.resolved.toml", resolved.into_bytes()),
        ("flows.csv", report::flows_csv(&fabric, &groups, &ideals).into_bytes()),
        (
            "ports.csv",
            report::ports_csv(&fabric, &topology, end, &ideals).into_bytes(),
        ),
        (
            "packet_latency_percentiles.csv",
            report::percentile_table(fabric.packet_latency()).into_bytes(),
        ),
        (
            "fct_percentiles.csv",
            report::percentile_table(fabric.fct()).into_bytes(),
        ),
    ];
    if let Some(rows) = &summary.collectives {
        files.push(("collectives.csv", crate::collective_report::csv(rows).into_bytes()));
        let hlog = crate::collective_report::hlog(&fabric, &collectives, &names, report.end);
        files.push((
            "collectives.hlog",
            hlog.map_err(|m| RunError::Output {
                path: out_dir.display().to_string(),
                message: m,
            })?,
        ));
    }
    if let Some(sm) = &sampler {
        let hot: Vec<u32> = summary.hotspots.iter().map(|h| h.port).collect();
        let link = |p: u32| crate::pcap::port_name(&fabric, &node_names, p);
        let format = loaded.scenario.output.sample_format;
        files.extend(sm.files(format, &fabric, &hot, link).map_err(|m| RunError::Output {
            path: out_dir.display().to_string(),
            message: m,
        })?);
    }
    if let Some(rows) = &summary.training {
        files.push(("training.csv", crate::training_report::csv(rows).into_bytes()));
    }
    if let Some(rows) = &summary.collective_stages {
        files.push((
            "collective_stages.csv",
            crate::collective_stages::csv(rows).into_bytes(),
        ));
    }
    if let Some(t) = trace {
        files.push(("trace.json", t.json));
    }
    let out_err = |m: String| RunError::Output {
        path: out_dir.display().to_string(),
        message: m,
    };
    files.push((
        "packet_latency.hlog",
        report::hdr_log(fabric.packet_latency(), "packet_latency", end).map_err(out_err)?,
    ));
    files.push(("fct.hlog", report::hdr_log(fabric.fct(), "fct", end).map_err(out_err)?));
    if let Some(ib) = fabric.ib() {
        files.push((
            "ib_vls.csv",
            crate::ib_report::vls_csv(ib, &fabric, &topology, end).into_bytes(),
        ));
        files.push((
            "ib_buffer_occupancy.csv",
            crate::ib_report::occupancy_percentiles(ib).into_bytes(),
        ));
    }
    // RoCEv2 only: PFC/ECN per port and priority, the pause tree, the deadlock.
    if let Some(csv) = crate::roce_report::ports_csv(&fabric, &topology, end) {
        files.push(("roce_ports.csv", csv.into_bytes()));
    }
    if let Some(csv) = crate::roce_report::rates_csv(&fabric) {
        files.push(("roce_rates.csv", csv.into_bytes()));
    }
    if let Some(rs) = crate::roce_report::summary(&fabric, &topology, end) {
        let mut v = serde_json::to_vec_pretty(&rs).expect("plain data");
        v.push(b'\n');
        files.push(("roce.json", v));
    }
    files.extend(pcap_names.iter().map(String::as_str).zip(pcap_bytes));
    let cpu_seconds = crate::proc_stats::cpu_seconds();
    let timing = serde_json::json!({
        "note": "wall-clock figures: the only file of a results directory that differs between identical runs",
        "wall_seconds": report.wall_elapsed.as_secs_f64(),
        // Loading the scenario and building the fabric, before the simulation; with
        // `wall_seconds`, the whole run's share of `run.wall_clock_s`.
        "build_wall_seconds": build_elapsed.as_secs_f64(),
        "events": report.events,
        "events_per_second": report.events as f64 / report.wall_elapsed.as_secs_f64().max(1e-9),
        "link_hops_per_second": fabric.totals().link_hops as f64 / report.wall_elapsed.as_secs_f64().max(1e-9),
        // The whole process so far (loading and building the fabric included).
        "cpu_seconds": cpu_seconds,
        "cpu_us_per_link_hop": cpu_seconds.map(|c| c * 1e6 / (fabric.totals().link_hops.max(1) as f64)),
        // The simulation's alone, on every thread (a fabric rebuilt to run again on one thread
        // included), from its first event to its last: its cost per link-hop as the fabric
        // grows, without the build's, which grows with the fabric and not with the run.
        "run_cpu_seconds": run_cpu_seconds,
        "run_cpu_us_per_link_hop": run_cpu_seconds.map(|c| c * 1e6 / (fabric.totals().link_hops.max(1) as f64)),
        "peak_rss_bytes": crate::proc_stats::peak_rss_bytes(),
        "threads": threads,
        "one_thread_from_ns": one_thread_from.map(|t| t.ps() as f64 / 1e3),
        "ran_again_on_one_thread": ran_again,
    });
    files.push(("timing.json", serde_json::to_vec_pretty(&timing).unwrap_or_default()));
    target
        .write(&files, interrupt, seen)
        .map_err(|e| out_error(&out_dir, e))?;
    Ok(RunOutput {
        summary,
        out_dir,
        report,
        resolved: resolved_scenario,
    })
}

fn to_json(s: &Summary) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(s).expect("the summary is plain data");
    v.push(b'\n');
    v
}

/// Keeps a scenario name usable as a directory name.
pub(crate) fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "unnamed".into() } else { s }
}

/// A results-directory problem as a [`RunError`].
fn out_error(dir: &Path, e: OutError) -> RunError {
    let path = dir.display().to_string();
    match e {
        OutError::Refused(message) => RunError::OutDir { path, message },
        OutError::Io(message) => RunError::Output { path, message },
        OutError::Interrupted => RunError::Interrupted(format!(
            "while writing {path}; nothing was replaced (the previous results, if any, are unchanged)"
        )),
    }
}
