//! `[[workload]]` entries into flows: explicit flows, generators, collectives and training
//! steps.

use super::{
    BuiltFlows, GpuLayout, Loaded, MAX_CDF_BYTES, MAX_CHANNELS, MAX_CHUNKS, MAX_CLASS, MAX_COLLECTIVE_BYTES,
    MAX_END_TIME, MAX_FLOWS, MAX_ITERATIONS, MAX_SWEEP_SIZES, MAX_TIMER, MAX_WORKLOADS, TrainingRun,
};
use crate::diag::ScenarioError;
use crate::schema::{ChannelRings, CollectiveAlgo, CollectiveOp, FabricKind, RanksSpec, TopologySpec, WorkloadSpec};
use fabrics::collectives::flows::{FlowPlan, PlanLimits};
use fabrics::collectives::{Algorithm, CollectiveKind, CollectiveSpec, DagLimits, training};
use fabrics::engine::FlowDeps;
use fabrics::traffic::generators::{self, PoissonSpec};
use fabrics::traffic::{FlowSizeCdf, FlowSpec, TrafficLimits};
use sim_core::{Duration, RngStreams, SimTime, rng::stream};
use std::path::Path;

impl Loaded {
    /// The peers of host `center` in an incast or closed loop: the hosts listed at
    /// `{field}.{list_key}`, or the `n` hosts after `center` (wrapping around) at
    /// `{field}.{count_key}`; exactly one of the two.
    fn endpoints_around(
        &self,
        center: u32,
        list: Option<&[u32]>,
        n: Option<u32>,
        n_hosts: u32,
        (field, list_key, count_key): (&str, &str, &str),
    ) -> Result<Vec<u32>, ScenarioError> {
        match (list, n) {
            (Some(list), None) => {
                if list.is_empty() {
                    return Err(self.err(&format!("{field}.{list_key}"), "expected at least one host"));
                }
                if let Some((j, &h)) = list.iter().enumerate().find(|&(_, &h)| h >= n_hosts) {
                    return Err(self.err(
                        &format!("{field}.{list_key}[{j}]"),
                        format!("host {h} does not exist: the topology has hosts 0..{n_hosts}"),
                    ));
                }
                Ok(list.to_vec())
            }
            (None, Some(n)) => {
                if n == 0 || n >= n_hosts {
                    return Err(self.err(
                        &format!("{field}.{count_key}"),
                        format!("expected 1..={} {list_key}", n_hosts - 1),
                    ));
                }
                Ok((1..=n).map(|d| (center + d) % n_hosts).collect())
            }
            _ => Err(self.err(field, format!("give exactly one of `{list_key}` or `{count_key}`"))),
        }
    }

    pub(super) fn build_flows(&self, n_hosts: u32, layout: GpuLayout) -> Result<BuiltFlows, ScenarioError> {
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
        let mut plan = FlowPlan::default();
        let mut instances = Vec::new();
        let mut trainings = Vec::new();
        // A closed-loop workload's flows depend on each other.
        let mut chained = false;
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
            let class = self.scenario.class_of(w);
            let max_class = match self.scenario.fabric.kind {
                // An Ethernet priority is the 3-bit PCP of the 802.1Q tag.
                FabricKind::Ethernet | FabricKind::Rocev2 => 7,
                _ => MAX_CLASS,
            };
            if class > max_class {
                return Err(self.err(
                    &format!("{field}.class"),
                    format!("expected a class in 0..={max_class}, got {class}"),
                ));
            }
            let mut flows = match w {
                WorkloadSpec::Collective { .. } => {
                    let before = plan.instances.len();
                    self.push_collective(&mut plan, i, w, layout)?;
                    instances.extend(plan.instances[before..].iter().map(|x| (i, x.clone())));
                    continue;
                }
                WorkloadSpec::TrainingStep { .. } => {
                    trainings.push(self.push_training(&mut plan, i, w, layout)?);
                    continue;
                }
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
                    let senders = self.endpoints_around(
                        *receiver,
                        senders.as_deref(),
                        *n_senders,
                        n_hosts,
                        (&field, "senders", "n_senders"),
                    )?;
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
                WorkloadSpec::ClosedLoop {
                    server,
                    clients,
                    n_clients,
                    request_size,
                    response_size,
                    requests,
                    think_time,
                    start,
                    ..
                } => {
                    check_host(*server, &format!("{field}.server"))?;
                    let clients = self.endpoints_around(
                        *server,
                        clients.as_deref(),
                        *n_clients,
                        n_hosts,
                        (&field, "clients", "n_clients"),
                    )?;
                    if *requests == 0 || *requests > MAX_ITERATIONS * 1000 {
                        return Err(self.err(
                            &format!("{field}.requests"),
                            format!(
                                "expected 1..={} requests per client, got {requests}",
                                MAX_ITERATIONS * 1000
                            ),
                        ));
                    }
                    if response_size.is_some_and(|s| s.get().get() == 0) {
                        return Err(self.err(
                            &format!("{field}.response_size"),
                            "expected a size > 0 (leave response_size out for requests without a response)",
                        ));
                    }
                    let think = think_time.map_or(Duration::ZERO, |t| t.get());
                    if think > MAX_TIMER {
                        return Err(self.err(
                            &format!("{field}.think_time"),
                            format!("expected at most {MAX_TIMER}, got {think}"),
                        ));
                    }
                    let spec = generators::ClosedLoopSpec {
                        clients: &clients,
                        server: *server,
                        request: request_size.get(),
                        response: response_size.map_or(sim_core::Bytes(0), |s| s.get()),
                        requests: *requests,
                        think,
                        start: SimTime::ZERO + start.get(),
                    };
                    let mut chain =
                        generators::closed_loop(n_hosts, &spec, limits).map_err(|e| self.err(&field, e.to_string()))?;
                    if plan.flows.len() + chain.len() > MAX_FLOWS {
                        return Err(self.err(&field, format!("the workloads generate more than {MAX_FLOWS} flows")));
                    }
                    for (f, _, _) in &mut chain {
                        f.group = i as u16;
                        f.class = class;
                    }
                    plan.push_chained(&chain);
                    chained = true;
                    continue;
                }
                WorkloadSpec::Poisson {
                    load, cdf, duration, ..
                } => {
                    if !(*load > 0.0 && *load <= 1.0) {
                        return Err(self.err(
                            &format!("{field}.load"),
                            format!("expected a load in (0, 1], got {}", crate::wording::float_text(*load)),
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
            for f in &mut flows {
                f.group = i as u16;
                f.class = class;
            }
            if plan.flows.len() + flows.len() > MAX_FLOWS {
                return Err(self.err(&field, format!("the workloads generate more than {MAX_FLOWS} flows")));
            }
            plan.push_independent(&flows);
        }
        let deps = if instances.is_empty() && trainings.is_empty() && !chained {
            FlowDeps::default()
        } else {
            plan.deps
        };
        Ok((plan.flows, deps, instances, trainings))
    }

    /// One `[[workload]] kind = "collective"` entry into `plan`.
    fn push_collective(
        &self,
        plan: &mut FlowPlan,
        i: usize,
        w: &WorkloadSpec,
        layout: GpuLayout,
    ) -> Result<(), ScenarioError> {
        let WorkloadSpec::Collective {
            op,
            algorithm,
            size,
            sizes,
            ranks,
            chunks,
            channels,
            channel_rings,
            iterations,
            root,
            reduce_rate,
            start,
            ..
        } = w
        else {
            unreachable!("called for collective workloads only")
        };
        let at = |k: &str| format!("workload[{i}].{k}");
        let sizes: Vec<u64> = match (size, sizes) {
            (Some(s), None) => vec![s.get().get()],
            (None, Some(v)) if !v.is_empty() && v.len() <= MAX_SWEEP_SIZES => v.iter().map(|s| s.get().get()).collect(),
            (None, Some(_)) => {
                return Err(self.err(&at("sizes"), format!("expected 1..={MAX_SWEEP_SIZES} sizes")));
            }
            _ => return Err(self.err(&format!("workload[{i}]"), "give exactly one of `size` or `sizes`")),
        };
        if let Some(b) = sizes.iter().find(|&&b| b > MAX_COLLECTIVE_BYTES) {
            return Err(self.err(
                &at(if size.is_some() { "size" } else { "sizes" }),
                format!("{b} B is over the limit of {MAX_COLLECTIVE_BYTES} B"),
            ));
        }
        let gpus = self.collective_ranks(ranks.as_ref(), layout, &at("ranks"))?;
        let n = gpus.len() as u32;
        for (k, v, max) in [
            ("chunks", *chunks, MAX_CHUNKS),
            ("channels", *channels, MAX_CHANNELS),
            ("iterations", *iterations, MAX_ITERATIONS),
        ] {
            if v == 0 || v > max {
                return Err(self.err(&at(k), format!("expected 1..={max}, got {v}")));
            }
        }
        let kind = match op {
            CollectiveOp::AllReduce => CollectiveKind::AllReduce,
            CollectiveOp::ReduceScatter => CollectiveKind::ReduceScatter,
            CollectiveOp::AllGather => CollectiveKind::AllGather,
            CollectiveOp::Broadcast => CollectiveKind::Broadcast { root: *root },
            CollectiveOp::AllToAll => CollectiveKind::AllToAll,
        };
        let algo = algorithm.unwrap_or(if *op == CollectiveOp::AllToAll {
            CollectiveAlgo::Direct
        } else {
            CollectiveAlgo::Ring
        });
        let algorithm = self.algorithm(i, algo, layout)?;
        let ring_group = match channel_rings {
            None | Some(ChannelRings::Same) => 1,
            Some(ChannelRings::Rotated) => {
                let g = layout.gpus_per_server.filter(|&g| n.is_multiple_of(g)).ok_or_else(|| {
                    self.err(
                        &at("channel_rings"),
                        "`rotated` needs a cluster topology and ranks that fill whole servers (a multiple of the GPUs per server)",
                    )
                })?;
                if algorithm != Algorithm::Ring {
                    return Err(self.err(&at("channel_rings"), "`rotated` applies to the ring algorithm only"));
                }
                g
            }
        };
        let spec = CollectiveSpec {
            kind,
            algorithm,
            n_ranks: n,
            bytes: sizes[0],
            chunks: *chunks,
            channels: *channels,
            ring_group,
            reduce_rate: reduce_rate.map(|r| r.get()),
        };
        let mut endpoints = gpus;
        endpoints.extend(layout.nvls_host);
        let limits = PlanLimits {
            max_flows: MAX_FLOWS as u64,
            dag: DagLimits::DEFAULT,
        };
        plan.push_collective(
            &spec,
            &sizes,
            *iterations,
            SimTime::ZERO + start.get(),
            &endpoints,
            i as u16,
            self.scenario.class_of(w),
            &limits,
        )
        .map_err(|e| self.err(&format!("workload[{i}]"), e.to_string()))
    }

    /// The GPUs of a collective's ranks, rank by rank: `0..n` for a count (default: every GPU),
    /// or the list as given (distinct GPUs, at least 2), refused at `field`.
    fn collective_ranks(
        &self,
        ranks: Option<&RanksSpec>,
        layout: GpuLayout,
        field: &str,
    ) -> Result<Vec<u32>, ScenarioError> {
        let gpus = layout.n_gpus;
        let list = match ranks {
            None => (0..gpus).collect(),
            Some(RanksSpec::Count(n)) => {
                if *n < 2 || *n > gpus {
                    return Err(self.err(
                        field,
                        format!("expected 2..={gpus} ranks (the topology's GPUs), got {n}"),
                    ));
                }
                (0..*n).collect()
            }
            Some(RanksSpec::List(list)) => {
                if list.len() < 2 || list.len() > gpus as usize {
                    return Err(self.err(field, format!("expected a list of 2..={gpus} GPUs, got {}", list.len())));
                }
                let mut seen = vec![false; gpus as usize];
                for (j, &g) in list.iter().enumerate() {
                    if g >= gpus {
                        return Err(self.err(
                            &format!("{field}[{j}]"),
                            format!("GPU {g} does not exist: the topology has GPUs 0..{gpus}"),
                        ));
                    }
                    if std::mem::replace(&mut seen[g as usize], true) {
                        return Err(self.err(&format!("{field}[{j}]"), format!("GPU {g} is listed twice")));
                    }
                }
                list.clone()
            }
        };
        Ok(list)
    }

    /// A collective algorithm of workload `i` (hierarchical takes the cluster's servers).
    fn algorithm(&self, i: usize, algo: CollectiveAlgo, layout: GpuLayout) -> Result<Algorithm, ScenarioError> {
        Ok(match algo {
            CollectiveAlgo::Ring => Algorithm::Ring,
            CollectiveAlgo::Tree => Algorithm::DoubleBinaryTree,
            CollectiveAlgo::HalvingDoubling => Algorithm::HalvingDoubling,
            CollectiveAlgo::Nvls => Algorithm::Nvls,
            CollectiveAlgo::Direct => Algorithm::Direct,
            CollectiveAlgo::Hierarchical => {
                let g = layout.gpus_per_server.ok_or_else(|| {
                    self.err(
                        &format!("workload[{i}].algorithm"),
                        "`hierarchical` needs a cluster topology (servers of GPUs)",
                    )
                })?;
                Algorithm::Hierarchical { gpus_per_server: g }
            }
        })
    }

    /// One `[[workload]] kind = "training_step"` entry into `plan`.
    fn push_training(
        &self,
        plan: &mut FlowPlan,
        i: usize,
        w: &WorkloadSpec,
        layout: GpuLayout,
    ) -> Result<TrainingRun, ScenarioError> {
        let WorkloadSpec::TrainingStep {
            compute,
            gradient_size,
            bucket_size,
            overlap,
            steps,
            algorithm,
            ranks,
            chunks,
            channels,
            reduce_rate,
            start,
            ..
        } = w
        else {
            unreachable!("called for training workloads only")
        };
        let at = |k: &str| format!("workload[{i}].{k}");
        let n = ranks.unwrap_or(layout.n_gpus);
        if n < 2 || n > layout.n_gpus {
            return Err(self.err(
                &at("ranks"),
                format!("expected 2..={} ranks (the topology's GPUs), got {n}", layout.n_gpus),
            ));
        }
        for (k, v, max) in [
            ("chunks", *chunks, MAX_CHUNKS),
            ("channels", *channels, MAX_CHANNELS),
            ("steps", *steps, training::MAX_STEPS),
        ] {
            if v == 0 || v > max {
                return Err(self.err(&at(k), format!("expected 1..={max}, got {v}")));
            }
        }
        let g = gradient_size.get().get();
        if g == 0 || g > MAX_COLLECTIVE_BYTES {
            return Err(self.err(
                &at("gradient_size"),
                format!("expected 1B..={MAX_COLLECTIVE_BYTES}B, got {g}B"),
            ));
        }
        let bucket = bucket_size.map_or(training::DDP_BUCKET_BYTES, |b| b.get().get());
        if bucket == 0 || g.div_ceil(bucket) > training::MAX_BUCKETS {
            return Err(self.err(
                &at(if bucket_size.is_some() {
                    "bucket_size"
                } else {
                    "gradient_size"
                }),
                format!(
                    "expected 1..={} buckets of at least 1B, got {} B in buckets of {bucket} B",
                    training::MAX_BUCKETS,
                    g
                ),
            ));
        }
        if compute.get() > MAX_END_TIME {
            return Err(self.err(&at("compute"), format!("expected at most {MAX_END_TIME}")));
        }
        let algo = algorithm.unwrap_or(CollectiveAlgo::Ring);
        if algo == CollectiveAlgo::Direct {
            return Err(self.err(&at("algorithm"), "`direct` is an all_to_all algorithm; an AllReduce is ring, tree, halving_doubling, nvls or hierarchical"));
        }
        let step = training::TrainingStep {
            allreduce: CollectiveSpec {
                kind: CollectiveKind::AllReduce,
                algorithm: self.algorithm(i, algo, layout)?,
                n_ranks: n,
                bytes: bucket,
                chunks: *chunks,
                channels: *channels,
                ring_group: 1,
                reduce_rate: reduce_rate.map(|r| r.get()),
            },
            compute: compute.get(),
            gradient_bytes: g,
            bucket_bytes: bucket,
            overlap: *overlap,
            steps: *steps,
        };
        let mut endpoints: Vec<u32> = (0..n).collect();
        endpoints.extend(layout.nvls_host);
        let limits = PlanLimits {
            max_flows: MAX_FLOWS as u64,
            dag: DagLimits::DEFAULT,
        };
        let before = plan.instances.len();
        let mut flows = plan
            .push_training(
                &step,
                SimTime::ZERO + start.get(),
                &endpoints,
                i as u16,
                self.scenario.class_of(w),
                &limits,
            )
            .map_err(|e| self.err(&format!("workload[{i}]"), e.to_string()))?;
        for f in &mut flows {
            f.buckets = f.buckets.start - before..f.buckets.end - before;
        }
        Ok(TrainingRun {
            workload: i,
            step,
            steps: flows,
            buckets: plan.instances[before..].to_vec(),
        })
    }

    pub(super) fn min_host_rate(&self) -> Result<sim_core::BitsPerSec, ScenarioError> {
        match &self.scenario.topology {
            TopologySpec::FatTree { host_link, .. }
            | TopologySpec::LeafSpine { host_link, .. }
            | TopologySpec::Sized { host_link, .. } => Ok(host_link.rate.get()),
            TopologySpec::Cluster { nic_link, .. } => Ok(nic_link.rate.get()),
            TopologySpec::Custom { links, .. } => links
                .iter()
                .filter(|l| l.a.starts_with('h') || l.b.starts_with('h'))
                .map(|l| l.rate.get())
                .min()
                .ok_or_else(|| self.err("topology.links", "no host links")),
            _ => Err(self.err(
                "topology",
                "poisson workloads need a network topology (fat_tree, leaf_spine, sized, custom, cluster)",
            )),
        }
    }

    fn read_cdf(&self, field: &str, rel: &str) -> Result<FlowSizeCdf, ScenarioError> {
        let path = self.dir.join(rel);
        let text = crate::files::read_text_limited(&path, MAX_CDF_BYTES)
            .map_err(|e| self.err(field, format!("cannot read CDF file {}: {e}", shown_path(&path))))?;
        FlowSizeCdf::parse(&text).map_err(|e| self.err(field, format!("{}: {e}", shown_path(&path))))
    }
}

/// A user-given path for a message: at most [`crate::diag::MAX_QUOTED_CHARS`] characters.
fn shown_path(p: &Path) -> String {
    crate::diag::short_quote(&p.display().to_string())
}
