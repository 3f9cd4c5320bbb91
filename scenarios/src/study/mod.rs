//! Studies: a directory of ordinary scenario files plus a manifest (`study.toml`), run end to
//! end by one command (`fabricsim study MANIFEST [--full]`), which writes a Markdown report
//! and its figures (`figures`: SVG charts, in a directory named after the report).
//!
//! Today there is one study, the interconnect selection guide (`studies/selection-guide/`,
//! issue 12; [`guide`] builds its tables and verdicts). Layout of a study directory:
//!
//! ```text
//! study.toml        the manifest: the guide's figures, endpoint delays, prices (inputs)
//! ci/*.toml         reduced-size scenarios (CI; checked by `fabricsim check` against baselines/)
//! full/*.toml       the full-size scenarios (`--full`)
//! baselines/        `fabricsim bless ci/*.toml` output
//! ```
//!
//! Every scenario is run in-process with [`runner::run_file`] (results in `OUT/<stem>/`, as
//! `fabricsim run` writes them); nothing about a study's scenario is special, so `fabricsim
//! run`, `check` and `bless` work on each file. The report reads only the runs' [`Summary`]s
//! and the built topologies (for the cost column); it is a pure function of them and of the
//! manifest, so the same runs give the same bytes.

pub mod figures;
pub mod guide;

use crate::build::load;
use crate::report::Summary;
use crate::runner::{self, RunError, RunOptions};
use fabrics::topology::{LinkKind, NodeKind, Topology};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Most scenario files a study directory may hold (a limit on everything).
pub const MAX_STUDY_SCENARIOS: usize = 1000;
/// Largest manifest read, bytes.
pub const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// `study.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub study: StudyInfo,
    pub endpoint: Endpoint,
    /// Prices per network name (the `<net>` of `cl_<net>_...` files).
    pub prices: BTreeMap<String, Prices>,
    pub p2p: Vec<P2pRow>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyInfo {
    pub name: String,
    /// The Markdown report, relative to the manifest's directory.
    pub doc: String,
}

/// Endpoint processing delays, nanoseconds (sources in `study.toml`).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    pub pcie_rtt_ns: f64,
    pub gpu_ns: f64,
}

/// Prices, US dollars (assumptions unless the user sets them).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub nic: f64,
    pub switch_port: f64,
    pub link: f64,
}

/// One row of the guide's bandwidth/latency table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct P2pRow {
    pub stem: String,
    pub label: String,
    pub family: Family,
    pub guide_gbs: Option<f64>,
    pub guide_counts: Option<Counts>,
    pub guide_us: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Pcie,
    Nvlink,
    Network,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Counts {
    One,
    Both,
}

/// Switches, their ports and the network links at one switch tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierCount {
    pub switches: usize,
    /// Ports of these switches (every port the builder gave them).
    pub ports: usize,
    /// Network links whose highest switch is at this tier (a NIC-to-leaf link is tier 0).
    pub links: usize,
}

/// What the network of a run holds (from its built topology), per switch tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetworkSize {
    /// GPUs (the topology's hosts).
    pub gpus: usize,
    pub nics: usize,
    /// Tier 0 (leaf/edge), 1 (spine/aggregation), 2 (core).
    pub by_tier: [TierCount; 3],
}

impl NetworkSize {
    /// Counts the network of `topo`: switches are `NodeKind::Switch`, network links are the
    /// InfiniBand/Ethernet/generic links with a switch at one end.
    pub fn of(topo: &Topology) -> NetworkSize {
        let g = &topo.graph;
        let mut n = NetworkSize {
            gpus: topo.hosts.len(),
            ..NetworkSize::default()
        };
        let tier_of = |k: &NodeKind| match k {
            NodeKind::Switch { tier } => Some(usize::from(*tier).min(2)),
            _ => None,
        };
        for idx in g.node_indices() {
            match g[idx].kind {
                NodeKind::Nic => n.nics += 1,
                NodeKind::Switch { .. } => {
                    let t = tier_of(&g[idx].kind).unwrap_or(0);
                    n.by_tier[t].switches += 1;
                    n.by_tier[t].ports += g.edges(idx).count();
                }
                _ => {}
            }
        }
        for e in g.edge_indices() {
            let (a, b) = g.edge_endpoints(e).expect("edge of the graph");
            let net = matches!(g[e].kind, LinkKind::InfiniBand | LinkKind::Ethernet | LinkKind::Network);
            let t = tier_of(&g[a].kind).max(tier_of(&g[b].kind));
            if let (true, Some(t)) = (net, t) {
                n.by_tier[t].links += 1;
            }
        }
        n
    }

    /// Switches, ports and links of the tiers below `tiers` (2: leaf and spine only).
    pub fn within(&self, tiers: u32) -> TierCount {
        let mut sum = TierCount::default();
        for t in self.by_tier.iter().take(tiers as usize) {
            sum.switches += t.switches;
            sum.ports += t.ports;
            sum.links += t.links;
        }
        sum
    }

    /// Network cost in dollars of a `tiers`-tier design (switches above it are not bought).
    pub fn cost(&self, p: &Prices, tiers: u32) -> f64 {
        let w = self.within(tiers);
        self.nics as f64 * p.nic + w.ports as f64 * p.switch_port + w.links as f64 * p.link
    }
}

/// One finished run of the study.
pub struct StudyRun {
    /// File stem (`p2p_ib_ndr`, `srv_mesh4_8`, ...).
    pub stem: String,
    pub summary: Summary,
    pub network: NetworkSize,
    /// Start of each `[[workload]]` in ps (collective sweeps must not overlap the next one).
    pub starts_ps: Vec<u64>,
}

/// How to run a study.
#[derive(Clone, Debug, Default)]
pub struct StudyOptions {
    /// Run `full/` instead of `ci/`.
    pub full: bool,
    /// Results root (default `results/<study name>-ci` or `-full`); each run in `OUT/<stem>`.
    pub out: Option<PathBuf>,
    /// Where to write the Markdown (default: the manifest's `study.doc`); `None` with
    /// `no_doc` writes none.
    pub doc: Option<PathBuf>,
    pub no_doc: bool,
    /// Runs at once (threads), at least 1.
    pub jobs: usize,
    pub quiet: bool,
}

/// What went wrong in a study.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    #[error("{path}: {message}")]
    Manifest { path: String, message: String },
    #[error("{0}")]
    Run(#[from] RunError),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// The runs finished but a table cannot be made from them (e.g. overlapping sweeps).
    #[error("{0}")]
    Table(String),
}

impl StudyError {
    /// Exit status: 2 for a bad manifest or scenario, else 1 (130 when interrupted).
    pub fn exit_code(&self) -> i32 {
        match self {
            StudyError::Manifest { .. } => 2,
            StudyError::Run(e) => e.exit_code(),
            StudyError::Io { .. } | StudyError::Table(_) => 1,
        }
    }
}

/// Reads and checks a manifest.
pub fn read_manifest(path: &Path) -> Result<Manifest, StudyError> {
    let err = |message: String| StudyError::Manifest {
        path: path.display().to_string(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if !meta.is_file() || meta.len() > MAX_MANIFEST_BYTES {
        return Err(err(format!("not a regular file of at most {MAX_MANIFEST_BYTES} bytes")));
    }
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let m: Manifest = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
    let e = &m.endpoint;
    for (name, v) in [("endpoint.pcie_rtt_ns", e.pcie_rtt_ns), ("endpoint.gpu_ns", e.gpu_ns)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(err(format!("{name}: expected a finite number >= 0, got {v}")));
        }
    }
    for (net, p) in &m.prices {
        for (name, v) in [("nic", p.nic), ("switch_port", p.switch_port), ("link", p.link)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(err(format!(
                    "prices.{net}.{name}: expected a finite number >= 0, got {v}"
                )));
            }
        }
    }
    for r in &m.p2p {
        if r.guide_gbs.is_some() != r.guide_counts.is_some() {
            return Err(err(format!(
                "p2p {}: give both guide_gbs and guide_counts, or neither",
                r.stem
            )));
        }
    }
    Ok(m)
}

/// The scenario files of a variant, sorted by file name.
pub fn scenario_files(dir: &Path) -> Result<Vec<PathBuf>, StudyError> {
    let io = |e: std::io::Error| StudyError::Io {
        path: dir.display().to_string(),
        message: e.to_string(),
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let p = entry.map_err(io)?.path();
        if p.extension().is_some_and(|x| x == "toml") && p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    if files.len() > MAX_STUDY_SCENARIOS {
        return Err(StudyError::Table(format!(
            "{}: {} scenario files, at most {MAX_STUDY_SCENARIOS}",
            dir.display(),
            files.len()
        )));
    }
    Ok(files)
}

fn stem_of(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Runs one scenario of a study.
pub fn run_one(file: &Path, out_root: &Path) -> Result<StudyRun, StudyError> {
    let stem = stem_of(file);
    let (loaded, built) = runner::validate(file)?;
    let network = NetworkSize::of(&built.topology);
    let starts_ps = workload_starts(&loaded.scenario);
    let opts = RunOptions {
        out_dir: Some(out_root.join(&stem)),
        ..RunOptions::default()
    };
    let out = runner::run_file(file, &opts)?;
    Ok(StudyRun {
        stem,
        summary: out.summary,
        network,
        starts_ps,
    })
}

/// The `start` of every `[[workload]]` (0 when the kind has none), in ps.
fn workload_starts(sc: &crate::schema::Scenario) -> Vec<u64> {
    // Through the serialized form: the start key is common to every kind that has one.
    let v = toml::Value::try_from(sc).ok();
    let list = v
        .as_ref()
        .and_then(|v| v.get("workload"))
        .and_then(|w| w.as_array())
        .cloned()
        .unwrap_or_default();
    list.iter()
        .map(|w| {
            w.get("start")
                .and_then(|s| s.as_str())
                .and_then(|s| s.parse::<crate::units::TimeSpec>().ok())
                .map_or(0, |t| t.get().ps())
        })
        .collect()
}

/// Runs every scenario of the variant (on `jobs` threads) and returns the runs in file order.
pub fn run_all(dir: &Path, out_root: &Path, jobs: usize, quiet: bool) -> Result<Vec<StudyRun>, StudyError> {
    let files = scenario_files(dir)?;
    // Validate everything first: a bad file stops the study before any run.
    for f in &files {
        load(f).map_err(RunError::from)?;
    }
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<Result<StudyRun, StudyError>>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1).min(files.len().max(1)) {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().expect("study work counter");
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some(f) = files.get(i) else { break };
                    let r = run_one(f, out_root);
                    if !quiet {
                        let status = if r.is_ok() { "ok" } else { "FAILED" };
                        eprintln!("study: [{}/{}] {} {status}", i + 1, files.len(), stem_of(f));
                    }
                    results.lock().expect("study results")[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("study results")
        .into_iter()
        .map(|r| r.expect("every file was run"))
        .collect()
}

/// Runs the study of `manifest` and writes its report; returns the Markdown.
pub fn run_study(manifest_path: &Path, opts: &StudyOptions) -> Result<String, StudyError> {
    let manifest = read_manifest(manifest_path)?;
    let base = manifest_path.parent().unwrap_or(Path::new("."));
    let variant = if opts.full { "full" } else { "ci" };
    let out_root = opts
        .out
        .clone()
        .unwrap_or_else(|| Path::new("results").join(format!("{}-{variant}", manifest.study.name)));
    std::fs::create_dir_all(&out_root).map_err(|e| StudyError::Io {
        path: out_root.display().to_string(),
        message: e.to_string(),
    })?;
    let runs = run_all(&base.join(variant), &out_root, opts.jobs, opts.quiet)?;
    let measured = guide::measure(&manifest, &runs)?;
    let md = guide::render(&manifest, &measured, variant);
    let svgs = figures::figures(&measured)
        .iter()
        .map(|f| Ok((f.file.clone(), f.draw()?)))
        .collect::<Result<Vec<(String, String)>, String>>()
        .map_err(StudyError::Table)?;
    let fig_dir = figures::dir_name(&manifest.study.doc);
    let mut docs = vec![out_root.join("report.md")];
    if !opts.no_doc {
        docs.push(opts.doc.clone().unwrap_or_else(|| base.join(&manifest.study.doc)));
    }
    // The report and, in a directory next to it, its figures (the same in the results root).
    for doc in docs {
        let dir = doc.parent().unwrap_or(Path::new(".")).to_path_buf();
        let io = |p: &Path, e: std::io::Error| StudyError::Io {
            path: p.display().to_string(),
            message: e.to_string(),
        };
        let figs = dir.join(&fig_dir);
        std::fs::create_dir_all(&figs).map_err(|e| io(&figs, e))?;
        for (name, svg) in &svgs {
            let p = figs.join(name);
            crate::regression::junit::write_atomically(&p, svg.as_bytes()).map_err(|e| io(&p, e))?;
        }
        crate::regression::junit::write_atomically(&doc, md.as_bytes()).map_err(|e| io(&doc, e))?;
    }
    Ok(md)
}
