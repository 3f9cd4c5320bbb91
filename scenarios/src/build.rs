//! Turns a parsed scenario into what the engine runs: topology, routes, engine configuration,
//! flows and run limits. Every semantic check lives here and reports the offending field.

use crate::diag::{ScenarioError, semantic_error};
use crate::locate::span_of;
use crate::schema::{BufferSpec, CustomLink, LinkSpec, Scenario, TopologySpec, WorkloadSpec};
use fabrics::engine::{EngineConfig, MAX_MTU_BYTES};
use fabrics::models::{AnyBuffer, AnyFlowControl, AnyMarking, PerPortTailDrop};
use fabrics::routing::Routes;
use fabrics::topology::{LinkInfo, Topology, fat_tree, leaf_spine, sizing};
use fabrics::traffic::generators::{self, PoissonSpec};
use fabrics::traffic::{FlowSizeCdf, FlowSpec, TrafficLimits};
use sim_core::{Duration, RngStreams, RunLimits, SimTime, rng::stream};
use std::path::{Path, PathBuf};

/// Propagation delay per metre of cable: 5 ns/m (`models.md` §1.8, signal speed ~2/3 c).
pub const DELAY_PER_METRE: Duration = Duration::from_ns(5);
/// Default cable length when a link gives neither `delay` nor `cable_m`.
pub const DEFAULT_CABLE_M: u32 = 1;
/// Largest number of hosts a scenario may build (2^17; a k=64 fat-tree has 65,536).
pub const MAX_HOSTS: u32 = 1 << 17;
/// Largest number of flows a scenario may generate.
pub const MAX_FLOWS: usize = 10_000_000;
/// Highest traffic class (IB service levels and Ethernet priorities fit in 0..=15).
pub const MAX_CLASS: u8 = 15;
/// Most `[[workload]]` entries one scenario may have (groups are numbered with `u16`).
pub const MAX_WORKLOADS: usize = 4096;
/// Longest simulated time a scenario may ask for (an hour).
pub const MAX_END_TIME: Duration = Duration::from_ms(3_600_000);
/// Largest size of a flow-size CDF file.
pub const MAX_CDF_BYTES: u64 = 1 << 20;

/// A scenario file read and parsed, with its text kept for error messages.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The path as the user gave it, for messages.
    pub file: String,
    /// Directory that relative paths in the scenario are resolved against.
    pub dir: PathBuf,
    pub text: String,
    pub scenario: Scenario,
}

/// Reads and parses a scenario file (syntax, types, unknown keys), without semantic checks.
pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    let text = crate::diag::read_scenario_file(path)?;
    let file = path.display().to_string();
    let scenario: Scenario = crate::diag::parse_toml(&file, &text)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(Loaded {
        file,
        dir,
        text,
        scenario,
    })
}

/// Everything a run needs.
pub struct Built {
    pub topology: Topology,
    pub routes: Routes,
    pub engine: EngineConfig,
    pub flows: Vec<FlowSpec>,
    pub limits: RunLimits,
}

impl Loaded {
    /// An error about `field`, located in the scenario text.
    pub fn err(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        semantic_error(&self.file, &self.text, span_of(&self.text, field), field, message)
    }

    /// Applies a seed override (from the command line) to the scenario.
    pub fn with_seed(mut self, seed: Option<u64>) -> Self {
        if let Some(s) = seed {
            self.scenario.scenario.seed = s;
        }
        self
    }

    /// Checks the scenario's meaning and builds everything the engine needs.
    pub fn build(&self) -> Result<Built, ScenarioError> {
        let sc = &self.scenario;
        let topology = self.build_topology()?;
        let routes = Routes::ecmp(&topology);
        let engine = self.build_engine()?;
        let flows = self.build_flows(topology.n_hosts() as u32)?;
        let end = sc.run.end_time.get();
        if end > MAX_END_TIME || end == Duration::ZERO {
            return Err(self.err(
                "run.end_time",
                format!("expected a time in (0, {MAX_END_TIME}], got {end}"),
            ));
        }
        if sc.run.max_events == 0 {
            return Err(self.err("run.max_events", "expected at least 1 event"));
        }
        if sc.run.wall_clock_s == 0 {
            return Err(self.err("run.wall_clock_s", "expected at least 1 second"));
        }
        let limits = RunLimits {
            end_time: Some(SimTime::ZERO + end),
            max_events: Some(sc.run.max_events),
            wall_clock: Some(std::time::Duration::from_secs(sc.run.wall_clock_s)),
            progress_every_events: 1 << 20,
        };
        Ok(Built {
            topology,
            routes,
            engine,
            flows,
            limits,
        })
    }

    fn link(&self, field: &str, l: &LinkSpec) -> Result<LinkInfo, ScenarioError> {
        let delay = match (l.delay, l.cable_m) {
            (Some(_), Some(_)) => {
                return Err(self.err(
                    &format!("{field}.cable_m"),
                    "give either `delay` or `cable_m`, not both",
                ));
            }
            (Some(d), None) => d.get(),
            (None, Some(m)) => Duration(DELAY_PER_METRE.ps() * m as u64),
            (None, None) => Duration(DELAY_PER_METRE.ps() * DEFAULT_CABLE_M as u64),
        };
        Ok(LinkInfo {
            rate: l.rate.get(),
            delay,
        })
    }

    fn build_topology(&self) -> Result<Topology, ScenarioError> {
        let topo = match &self.scenario.topology {
            TopologySpec::FatTree {
                k,
                host_link,
                fabric_link,
            } => {
                if (*k as u64).pow(3) / 4 > MAX_HOSTS as u64 {
                    return Err(self.err("topology.k", format!("k={k} gives more than {MAX_HOSTS} hosts")));
                }
                let (h, f) = (
                    self.link("topology.host_link", host_link)?,
                    self.link("topology.fabric_link", fabric_link)?,
                );
                fat_tree::build(*k, h, f).map_err(|e| self.err("topology.k", e.to_string()))?
            }
            TopologySpec::LeafSpine {
                leaves,
                hosts_per_leaf,
                spines,
                oversubscription,
                host_link,
                fabric_link,
            } => {
                if *leaves as u64 * *hosts_per_leaf as u64 > MAX_HOSTS as u64 {
                    return Err(self.err("topology.leaves", format!("more than {MAX_HOSTS} hosts")));
                }
                let (h, f) = (
                    self.link("topology.host_link", host_link)?,
                    self.link("topology.fabric_link", fabric_link)?,
                );
                match (spines, oversubscription) {
                    (Some(n), None) => {
                        let spec = leaf_spine::LeafSpineSpec {
                            n_leaves: *leaves,
                            hosts_per_leaf: *hosts_per_leaf,
                            n_spines: *n,
                            links_per_spine: 1,
                            host_link: h,
                            fabric_link: f,
                        };
                        leaf_spine::build(&spec).map_err(|e| self.err("topology.spines", e.to_string()))?
                    }
                    (None, Some(ratio)) => {
                        let (num, den) = parse_ratio(ratio).ok_or_else(|| {
                            self.err(
                                "topology.oversubscription",
                                format!("expected a ratio like \"2:1\" or \"3:2\", got \"{ratio}\""),
                            )
                        })?;
                        leaf_spine::with_oversubscription(*leaves, *hosts_per_leaf, num, den, h, f)
                            .map_err(|e| self.err("topology.oversubscription", e.to_string()))?
                    }
                    _ => return Err(self.err("topology", "give exactly one of `spines` or `oversubscription`")),
                }
            }
            TopologySpec::Sized {
                hosts,
                radix,
                host_link,
                fabric_link,
            } => {
                if *hosts > MAX_HOSTS {
                    return Err(self.err("topology.hosts", format!("at most {MAX_HOSTS} hosts")));
                }
                let (h, f) = (
                    self.link("topology.host_link", host_link)?,
                    self.link("topology.fabric_link", fabric_link)?,
                );
                sizing::for_hosts(*hosts, *radix, h, f).map_err(|e| self.err("topology.hosts", e.to_string()))?
            }
            TopologySpec::Custom { hosts, switches, links } => self.build_custom(*hosts, *switches, links)?,
        };
        Ok(topo)
    }

    fn build_custom(&self, hosts: u32, switches: u32, links: &[CustomLink]) -> Result<Topology, ScenarioError> {
        if !(1..=MAX_HOSTS).contains(&hosts) {
            return Err(self.err("topology.hosts", format!("expected 1..={MAX_HOSTS} hosts")));
        }
        if switches > MAX_HOSTS {
            return Err(self.err("topology.switches", format!("expected at most {MAX_HOSTS} switches")));
        }
        let mut t = Topology::new(format!(
            "custom ({hosts} hosts, {switches} switches, {} links)",
            links.len()
        ));
        let hs: Vec<_> = (0..hosts).map(|i| t.add_host(format!("h{i}"), None)).collect();
        let ss: Vec<_> = (0..switches).map(|i| t.add_switch(format!("s{i}"), 0, None)).collect();
        let mut host_links = vec![0u32; hosts as usize];
        for (i, l) in links.iter().enumerate() {
            let field = format!("topology.links[{i}]");
            let end = |name: &str, which: &str| {
                let f = format!("{field}.{which}");
                let bad = || {
                    self.err(
                        &f,
                        format!(
                            "expected \"h<i>\" (host, i < {hosts}) or \"s<i>\" (switch, i < {switches}), got \"{name}\""
                        ),
                    )
                };
                let mut chars = name.chars();
                let kind = chars.next().map(String::from).unwrap_or_default();
                let digits = chars.as_str();
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                let idx: u32 = digits.parse().map_err(|_| bad())?;
                match kind.as_str() {
                    "h" if idx < hosts => Ok(hs[idx as usize]),
                    "s" if idx < switches => Ok(ss[idx as usize]),
                    _ => Err(bad()),
                }
            };
            let (a, b) = (end(&l.a, "a")?, end(&l.b, "b")?);
            if a == b {
                return Err(self.err(&format!("{field}.b"), "a link must join two different nodes"));
            }
            for n in [a, b] {
                if let Some(h) = t.hosts.iter().position(|&x| x == n) {
                    host_links[h] += 1;
                    if host_links[h] > 1 {
                        return Err(self.err(
                            &field,
                            format!("host h{h} has more than one link (hosts have one NIC port)"),
                        ));
                    }
                }
            }
            let spec = LinkSpec {
                rate: l.rate,
                delay: l.delay,
                cable_m: l.cable_m,
            };
            let info = self.link(&field, &spec)?;
            t.add_link(a, b, info);
        }
        if let Some(h) = host_links.iter().position(|&n| n == 0) {
            return Err(self.err("topology.links", format!("host h{h} has no link")));
        }
        t.validate().map_err(|e| self.err("topology", e.to_string()))?;
        Ok(t)
    }

    fn build_engine(&self) -> Result<EngineConfig, ScenarioError> {
        let f = &self.scenario.fabric;
        let mtu = f.mtu.get().get();
        if mtu == 0 || mtu > MAX_MTU_BYTES as u64 {
            return Err(self.err("fabric.mtu", format!("expected 1B..={MAX_MTU_BYTES}B, got {mtu}B")));
        }
        let header = f.header.get().get();
        if header > 1024 {
            return Err(self.err(
                "fabric.header",
                format!("expected at most 1024B of header, got {header}B"),
            ));
        }
        let switch_latency = f.switch_latency.get();
        if switch_latency > Duration::from_ms(1) {
            return Err(self.err(
                "fabric.switch_latency",
                format!("expected at most 1ms, got {switch_latency}"),
            ));
        }
        let buffer = match &f.buffer {
            BufferSpec::PerPortTailDrop { size } => {
                let b = size.get().get();
                if b < mtu + header {
                    return Err(self.err(
                        "fabric.buffer.size",
                        format!(
                            "a port buffer must hold at least one packet ({}B), got {b}B",
                            mtu + header
                        ),
                    ));
                }
                AnyBuffer::PerPortTailDrop(PerPortTailDrop { buffer_bytes: b })
            }
        };
        Ok(EngineConfig {
            mtu_bytes: mtu as u32,
            header_bytes: header as u32,
            switch_latency,
            sender_rate: f.sender_rate.map(|r| r.get()),
            buffer,
            flow_control: AnyFlowControl::None,
            marking: AnyMarking::None,
            seed: self.scenario.scenario.seed,
            ..Default::default()
        })
    }

    fn build_flows(&self, n_hosts: u32) -> Result<Vec<FlowSpec>, ScenarioError> {
        let streams = RngStreams::new(self.scenario.scenario.seed);
        if self.scenario.workload.is_empty() {
            return Err(self.err("workload", "expected at least one [[workload]]"));
        }
        if self.scenario.workload.len() > MAX_WORKLOADS {
            return Err(self.err(
                "workload",
                format!("expected at most {MAX_WORKLOADS} [[workload]] entries"),
            ));
        }
        let mut all = Vec::new();
        for (i, w) in self.scenario.workload.iter().enumerate() {
            let field = format!("workload[{i}]");
            // Each workload has its own streams, so adding one does not perturb another.
            let limits = TrafficLimits {
                max_flows: MAX_FLOWS as u64,
            };
            let check_host = |h: u32, f: &str| {
                if h >= n_hosts {
                    Err(self.err(
                        f,
                        format!("host {h} does not exist: the topology has hosts 0..{n_hosts}"),
                    ))
                } else {
                    Ok(())
                }
            };
            let mut flows = match w {
                WorkloadSpec::Flows { flows, .. } => {
                    let mut v = Vec::with_capacity(flows.len());
                    for (j, fl) in flows.iter().enumerate() {
                        check_host(fl.src, &format!("{field}.flows[{j}].src"))?;
                        check_host(fl.dst, &format!("{field}.flows[{j}].dst"))?;
                        if fl.size.get().get() == 0 {
                            return Err(self.err(&format!("{field}.flows[{j}].size"), "a flow carries at least 1 byte"));
                        }
                        if fl.src == fl.dst {
                            return Err(self.err(
                                &format!("{field}.flows[{j}].dst"),
                                "a flow's destination must differ from its source",
                            ));
                        }
                        v.push(FlowSpec {
                            src: fl.src,
                            dst: fl.dst,
                            size: fl.size.get(),
                            start: SimTime::ZERO + fl.start.get(),
                            ..Default::default()
                        });
                    }
                    v
                }
                WorkloadSpec::Permutation { size, start, .. } => {
                    let mut rng = streams.stream(stream::WORKLOAD + i as u64);
                    generators::permutation(n_hosts, size.get(), SimTime::ZERO + start.get(), &mut rng, limits)
                        .map_err(|e| self.err(&field, e.to_string()))?
                }
                WorkloadSpec::Incast {
                    receiver,
                    senders,
                    n_senders,
                    size,
                    start,
                    ..
                } => {
                    check_host(*receiver, &format!("{field}.receiver"))?;
                    let senders: Vec<u32> = match (senders, n_senders) {
                        (Some(list), None) => {
                            for (j, &s) in list.iter().enumerate() {
                                check_host(s, &format!("{field}.senders[{j}]"))?;
                            }
                            list.clone()
                        }
                        (None, Some(n)) => {
                            if *n == 0 || *n >= n_hosts {
                                return Err(self.err(
                                    &format!("{field}.n_senders"),
                                    format!("expected 1..={} senders", n_hosts - 1),
                                ));
                            }
                            (1..=*n).map(|d| (receiver + d) % n_hosts).collect()
                        }
                        _ => return Err(self.err(&field, "give exactly one of `senders` or `n_senders`")),
                    };
                    generators::incast(
                        n_hosts,
                        &senders,
                        *receiver,
                        size.get(),
                        SimTime::ZERO + start.get(),
                        limits,
                    )
                    .map_err(|e| self.err(&field, e.to_string()))?
                }
                WorkloadSpec::Poisson {
                    load, cdf, duration, ..
                } => {
                    if !(*load > 0.0 && *load <= 1.0) {
                        return Err(self.err(
                            &format!("{field}.load"),
                            format!("expected a load in (0, 1], got {load}"),
                        ));
                    }
                    let cdf_field = format!("{field}.cdf");
                    let cdf = self.read_cdf(&cdf_field, cdf)?;
                    let rate = self.min_host_rate()?;
                    let spec = PoissonSpec {
                        n_hosts,
                        load: *load,
                        host_rate: rate,
                        start: SimTime::ZERO,
                        duration: duration.get(),
                    };
                    let base = generators::POISSON_STREAM_BASE + ((i as u64) << 32);
                    generators::poisson(&spec, &cdf, &streams, base, limits)
                        .map_err(|e| self.err(&field, e.to_string()))?
                }
            };
            let (_, class) = w.group();
            if class > MAX_CLASS {
                return Err(self.err(
                    &format!("{field}.class"),
                    format!("expected a class in 0..={MAX_CLASS}"),
                ));
            }
            for f in &mut flows {
                f.group = i as u16;
                f.class = class;
            }
            if all.len() + flows.len() > MAX_FLOWS {
                return Err(self.err(&field, format!("the workloads generate more than {MAX_FLOWS} flows")));
            }
            all.append(&mut flows);
        }
        Ok(all)
    }

    fn min_host_rate(&self) -> Result<sim_core::BitsPerSec, ScenarioError> {
        match &self.scenario.topology {
            TopologySpec::FatTree { host_link, .. }
            | TopologySpec::LeafSpine { host_link, .. }
            | TopologySpec::Sized { host_link, .. } => Ok(host_link.rate.get()),
            TopologySpec::Custom { links, .. } => links
                .iter()
                .filter(|l| l.a.starts_with('h') || l.b.starts_with('h'))
                .map(|l| l.rate.get())
                .min()
                .ok_or_else(|| self.err("topology.links", "no host links")),
        }
    }

    fn read_cdf(&self, field: &str, rel: &str) -> Result<FlowSizeCdf, ScenarioError> {
        let path = self.dir.join(rel);
        let meta = std::fs::metadata(&path)
            .map_err(|e| self.err(field, format!("cannot read CDF file {}: {e}", path.display())))?;
        if meta.len() > MAX_CDF_BYTES {
            return Err(self.err(
                field,
                format!("CDF file {} is larger than {MAX_CDF_BYTES} bytes", path.display()),
            ));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| self.err(field, format!("cannot read CDF file {}: {e}", path.display())))?;
        FlowSizeCdf::parse(&text).map_err(|e| self.err(field, format!("{}: {e}", path.display())))
    }
}

/// Parses `"a:b"` into positive integers.
fn parse_ratio(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(':')?;
    let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a > 0 && b > 0).then_some((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios() {
        assert_eq!(parse_ratio("2:1"), Some((2, 1)));
        assert_eq!(parse_ratio(" 3 : 2 "), Some((3, 2)));
        assert_eq!(parse_ratio("0:1"), None);
        assert_eq!(parse_ratio("2"), None);
    }
}
