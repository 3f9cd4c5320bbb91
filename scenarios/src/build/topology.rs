//! The topology a scenario builds (network, GPU and custom ones), its links, the RoCEv1
//! spanning tree and the routing fix-up of GPU clusters.

use super::{DEFAULT_CABLE_M, DELAY_PER_METRE, Loaded, MAX_HOSTS, MAX_LINK_DELAY, MAX_SERVERS, nvlink_gen, pcie_gen};
use crate::diag::ScenarioError;
use crate::schema::{CustomLink, FabricKind, LinkSpec, RoutingSpec, ServerKindSpec, TopologySpec};
use fabrics::nvlink::NvLinkGen;
use fabrics::pcie::{PcieGen, PcieLink};
use fabrics::roce::RoceVersion;
use fabrics::routing::Routes;
use fabrics::routing::stp::{RSTP_MAX_AGE_HOPS, SpanningTree};
use fabrics::topology::{LinkInfo, Topology, fat_tree, leaf_spine, sizing};
use fabrics::topology::{cluster, hgx, nvlink_shapes};
use sim_core::Duration;

impl Loaded {
    /// The spanning tree a RoCEv1 scenario forwards on (`None` for any other scenario), after
    /// checking that the scenario fits one layer-2 domain (`docs/models/rocev1.md`): no
    /// layer-3 routing choice, no multi-homed GPU servers, a tree RSTP can converge.
    pub fn spanning_tree(&self, topo: &Topology) -> Result<Option<SpanningTree>, ScenarioError> {
        let f = &self.scenario.fabric;
        if f.kind != FabricKind::Rocev2 || self.roce_version()? != RoceVersion::V1 {
            return Ok(None);
        }
        if f.routing != RoutingSpec::Ecmp {
            let got = match f.routing {
                RoutingSpec::Dmodk => "dmodk",
                RoutingSpec::Adaptive => "adaptive",
                _ => "updown",
            };
            return Err(self.err(
                "fabric.routing",
                format!(
                    "RoCEv1 is bridged, not routed: switches forward by MAC over one spanning tree, so there is no path to choose; expected routing = \"ecmp\" (the default) or no `routing`, got \"{got}\""
                ),
            ));
        }
        if matches!(self.scenario.topology, TopologySpec::Cluster { .. }) {
            return Err(self.err(
                "topology.kind",
                "a GPU cluster cannot use RoCEv1: each server reaches the network through several NICs (one IP subnet per rail) and traffic between them is routed at layer 3; expected a single layer-2 domain (fat_tree, leaf_spine, sized or custom), or [fabric.roce] version = 2",
            ));
        }
        let tree = SpanningTree::compute(topo);
        let depth = tree.max_depth();
        if depth > RSTP_MAX_AGE_HOPS {
            return Err(self.err(
                "topology",
                format!(
                    "the spanning tree is {depth} bridges deep: expected at most {RSTP_MAX_AGE_HOPS} (RSTP's default Max Age), beyond which one layer-2 domain does not converge"
                ),
            ));
        }
        Ok(Some(tree))
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
        if delay > MAX_LINK_DELAY {
            let key = if l.delay.is_some() { "delay" } else { "cable_m" };
            return Err(self.err(
                &format!("{field}.{key}"),
                format!("expected a one-way delay of at most {MAX_LINK_DELAY} (200,000 km of cable), got {delay}"),
            ));
        }
        let kind = match (self.scenario.fabric.kind, &self.scenario.topology) {
            (FabricKind::Infiniband, _) => fabrics::topology::LinkKind::InfiniBand,
            (_, TopologySpec::Cluster { .. }) => fabrics::topology::LinkKind::Ethernet,
            _ => fabrics::topology::LinkKind::Network,
        };
        Ok(LinkInfo {
            rate: l.rate.get(),
            delay,
            kind,
        })
    }

    /// The topology and, for GPU clusters, the GPUs per server.
    pub(super) fn build_topology(&self) -> Result<(Topology, Option<u32>), ScenarioError> {
        if let Some(t) = self.build_gpu_topology()? {
            return Ok(t);
        }
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
            TopologySpec::Custom {
                hosts,
                switches,
                devices,
                links,
            } => self.build_custom(*hosts, *switches, devices, links)?,
            _ => unreachable!("GPU topologies are built by build_gpu_topology"),
        };
        if matches!(self.scenario.fabric.kind, FabricKind::Nvlink | FabricKind::Pcie) {
            return Err(self.err(
                "fabric.kind",
                "`nvlink` and `pcie` fabrics model links inside a GPU server: use a GPU topology (hgx_h100, nvlink_mesh, pcie_server, ...)",
            ));
        }
        Ok((topo, None))
    }

    /// The GPU topologies (`None` for the network ones), with the fabric kinds they allow.
    fn build_gpu_topology(&self) -> Result<Option<(Topology, Option<u32>)>, ScenarioError> {
        let kind = self.scenario.fabric.kind;
        let need = |want: FabricKind, what: &str| -> Result<(), ScenarioError> {
            if kind != want {
                return Err(self.err(
                    "fabric.kind",
                    format!(
                        "a {what} needs [fabric] kind = \"{}\"",
                        if want == FabricKind::Nvlink { "nvlink" } else { "pcie" }
                    ),
                ));
            }
            Ok(())
        };
        let terr = |field: &str, e: fabrics::topology::TopologyError| self.err(field, e.to_string());
        let (nvlink_delay, pcie_delay) = self.link_latency();
        let d = |g: NvLinkGen| nvlink_delay.unwrap_or(g.link_delay());
        let hgx_spec = |mut spec: hgx::HgxSpec| {
            spec.nvlink_delay = nvlink_delay.unwrap_or(spec.nvlink_delay);
            spec.pcie_delay = pcie_delay.unwrap_or(spec.pcie_delay);
            spec
        };
        let pcie_spec = |mut spec: hgx::PcieServerSpec| {
            spec.pcie_delay = pcie_delay.unwrap_or(spec.pcie_delay);
            spec
        };
        let t = match &self.scenario.topology {
            TopologySpec::HgxH100 {} => {
                need(FabricKind::Nvlink, "HGX server")?;
                hgx::hgx(&hgx_spec(hgx::HgxSpec::h100())).map_err(|e| terr("topology", e))?
            }
            TopologySpec::HgxA100 {} => {
                need(FabricKind::Nvlink, "HGX server")?;
                hgx::hgx(&hgx_spec(hgx::HgxSpec::a100())).map_err(|e| terr("topology", e))?
            }
            TopologySpec::Nvl72 {} => {
                need(FabricKind::Nvlink, "NVL72 rack")?;
                nvlink_shapes::nvl72(d(NvLinkGen::V5)).map_err(|e| terr("topology", e))?
            }
            TopologySpec::NvlinkMesh {
                gpus,
                generation,
                links_per_pair,
            } => {
                need(FabricKind::Nvlink, "NVLink mesh")?;
                let g = nvlink_gen(*generation);
                let lpp = links_per_pair.unwrap_or_else(|| nvlink_shapes::mesh_links_per_pair(*gpus, g));
                nvlink_shapes::full_mesh(*gpus, g, lpp, d(g)).map_err(|e| terr("topology.gpus", e))?
            }
            TopologySpec::NvlinkRing {
                gpus,
                generation,
                links_per_neighbour,
            } => {
                need(FabricKind::Nvlink, "NVLink ring")?;
                let g = nvlink_gen(*generation);
                let lpn = links_per_neighbour.unwrap_or(g.preset().links_per_gpu / 2);
                nvlink_shapes::ring(*gpus, g, lpn, d(g)).map_err(|e| terr("topology.gpus", e))?
            }
            TopologySpec::PcieServer { generation, gpus } => {
                need(FabricKind::Pcie, "PCIe-only server")?;
                let mut spec = pcie_spec(hgx::PcieServerSpec::new(pcie_gen(*generation)));
                if let Some(g) = gpus {
                    if !(2..=64).contains(g) {
                        return Err(self.err("topology.gpus", format!("expected 2..=64 GPUs, got {g}")));
                    }
                    spec.n_gpus = *g;
                }
                hgx::pcie_server(&spec).map_err(|e| terr("topology", e))?
            }
            TopologySpec::Cluster {
                servers,
                server,
                k,
                nic_link,
                fabric_link,
                rail_optimised,
                ..
            } => {
                if !matches!(kind, FabricKind::Infiniband | FabricKind::Ethernet | FabricKind::Rocev2) {
                    return Err(self.err(
                        "fabric.kind",
                        "a cluster's network is `infiniband`, `rocev2` or `ethernet` (the servers' NVLink and PCIe links run on it)",
                    ));
                }
                if !(1..=MAX_SERVERS).contains(servers) {
                    return Err(self.err("topology.servers", format!("expected 1..={MAX_SERVERS} servers")));
                }
                let server = match server {
                    ServerKindSpec::HgxH100 => hgx::ServerSpec::Hgx(hgx_spec(hgx::HgxSpec::h100())),
                    ServerKindSpec::HgxA100 => hgx::ServerSpec::Hgx(hgx_spec(hgx::HgxSpec::a100())),
                    ServerKindSpec::PcieGen4 => {
                        hgx::ServerSpec::PcieOnly(pcie_spec(hgx::PcieServerSpec::new(PcieGen::Gen4)))
                    }
                    ServerKindSpec::PcieGen5 => {
                        hgx::ServerSpec::PcieOnly(pcie_spec(hgx::PcieServerSpec::new(PcieGen::Gen5)))
                    }
                };
                if server.n_gpus() as u64 * *servers as u64 > MAX_HOSTS as u64 {
                    return Err(self.err("topology.servers", format!("more than {MAX_HOSTS} GPUs")));
                }
                let gpus = server.n_gpus();
                let spec = cluster::ClusterSpec {
                    n_servers: *servers,
                    server,
                    network: cluster::Network::FatTree { k: *k },
                    nic_link: self.link("topology.nic_link", nic_link)?,
                    fabric_link: self.link("topology.fabric_link", fabric_link)?,
                    rail_optimised: *rail_optimised,
                };
                let t = cluster::build(&spec).map_err(|e| terr("topology.k", e))?;
                return Ok(Some((t, Some(gpus))));
            }
            _ => return Ok(None),
        };
        Ok(Some((t, None)))
    }

    /// The PCIe link of a PCIe-only server topology (its framing sets the packet format).
    pub(super) fn pcie_link(&self) -> Option<PcieLink> {
        match &self.scenario.topology {
            TopologySpec::PcieServer { generation, .. } => PcieLink::new(pcie_gen(*generation), 16).ok(),
            _ => None,
        }
    }

    fn build_custom(
        &self,
        hosts: u32,
        switches: u32,
        devices: &[String],
        links: &[CustomLink],
    ) -> Result<Topology, ScenarioError> {
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
        if devices.len() > MAX_HOSTS as usize {
            return Err(self.err("topology.devices", format!("expected at most {MAX_HOSTS} devices")));
        }
        let mut ds = Vec::with_capacity(devices.len());
        for (i, d) in devices.iter().enumerate() {
            use fabrics::topology::{NodeInfo, NodeKind};
            let kind = match d.as_str() {
                "gpu_hub" => NodeKind::GpuHub,
                "nvswitch" => NodeKind::NvSwitch,
                "pcie_switch" => NodeKind::PcieSwitch,
                "root_complex" => NodeKind::RootComplex,
                "nic" => NodeKind::Nic,
                _ => {
                    return Err(self.err(
                        &format!("topology.devices[{i}]"),
                        format!(
                            "expected \"gpu_hub\", \"nvswitch\", \"pcie_switch\", \"root_complex\" or \"nic\", got {:?}",
                            short(d)
                        ),
                    ));
                }
            };
            ds.push(t.graph.add_node(NodeInfo {
                kind,
                name: format!("d{i}"),
                pod: None,
            }));
        }
        let n_devices = ds.len();
        let mut host_links = vec![0u32; hosts as usize];
        for (i, l) in links.iter().enumerate() {
            let field = format!("topology.links[{i}]");
            let end = |name: &str, which: &str| {
                let f = format!("{field}.{which}");
                let bad = || {
                    self.err(
                        &f,
                        if n_devices == 0 {
                            format!(
                                "expected \"h<i>\" (host, i < {hosts}) or \"s<i>\" (switch, i < {switches}), got \"{name}\""
                            )
                        } else {
                            format!(
                                "expected \"h<i>\" (host, i < {hosts}), \"s<i>\" (switch, i < {switches}) or \"d<i>\" (device, i < {n_devices}), got \"{name}\""
                            )
                        },
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
                    "d" if (idx as usize) < n_devices => Ok(ds[idx as usize]),
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
            let mut info = self.link(&field, &spec)?;
            if let Some(k) = &l.kind {
                use fabrics::topology::LinkKind;
                info.kind = match k.as_str() {
                    "network" => info.kind,
                    "ethernet" => LinkKind::Ethernet,
                    "infiniband" => LinkKind::InfiniBand,
                    "nvlink" => LinkKind::NvLink,
                    "pcie" => LinkKind::Pcie,
                    "internal" => LinkKind::Internal,
                    _ => {
                        return Err(self.err(
                            &format!("{field}.kind"),
                            format!(
                                "expected \"network\", \"ethernet\", \"infiniband\", \"nvlink\", \"pcie\" or \"internal\", got {:?}",
                                short(k)
                            ),
                        ));
                    }
                };
                // A network link of another discipline needs that discipline's model: PFC
                // switches for Ethernet next to InfiniBand, a credit layer for InfiniBand.
                let fabric = self.scenario.fabric.kind;
                let refused = match info.kind {
                    LinkKind::Ethernet => (fabric == FabricKind::Infiniband)
                        .then_some("an ethernet link in an infiniband run: use [fabric] kind = \"rocev2\" to join InfiniBand and Ethernet (a switch with both is their gateway)"),
                    LinkKind::InfiniBand => (fabric == FabricKind::Ethernet).then_some(
                        "an infiniband link in an ethernet run: use [fabric] kind = \"infiniband\", or \"rocev2\" to join InfiniBand and Ethernet (a switch with both is their gateway)",
                    ),
                    _ => None,
                };
                if let Some(why) = refused {
                    return Err(self.err(&format!("{field}.kind"), why));
                }
            }
            t.add_link(a, b, info);
        }
        if let Some(h) = host_links.iter().position(|&n| n == 0) {
            return Err(self.err("topology.links", format!("host h{h} has no link")));
        }
        t.validate().map_err(|e| self.err("topology", e.to_string()))?;
        Ok(t)
    }
}

/// Parses `"a:b"` into positive integers.
fn parse_ratio(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(':')?;
    let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a > 0 && b > 0).then_some((a, b))
}

/// At most the first 40 characters of a user's value, for quoting it in a message.
fn short(v: &str) -> String {
    match v.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &v[..i]),
        None => v.to_string(),
    }
}

/// At every GPU hub, traffic whose shortest paths include the hub's PCIe link (traffic for
/// another server) takes that link only: it leaves through the NIC behind the GPU's own PCIe
/// switch, on the GPU's rail, as NCCL sends it (not over NVLink to another GPU's NIC).
pub(super) fn keep_gpu_traffic_on_own_nic(topo: &Topology, routes: &mut Routes) {
    use fabrics::topology::{LinkKind, NodeKind};
    for n in topo.graph.node_indices() {
        if !matches!(topo.graph[n].kind, NodeKind::GpuHub) {
            continue;
        }
        let prefer: Vec<bool> = topo
            .ports(n)
            .iter()
            .map(|&(e, _)| topo.graph[e].kind == LinkKind::Pcie)
            .collect();
        if prefer.contains(&true) {
            routes.prefer_at(n.index() as u32, &prefer);
        }
    }
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
