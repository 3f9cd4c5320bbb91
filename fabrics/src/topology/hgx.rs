//! GPU servers: HGX boards (NVSwitch) and a PCIe-only 8-GPU server.
//!
//! GPUs are endpoints, GPU hubs, NVSwitch chips, PCIe switches, root complexes and NICs are
//! forwarding nodes (conventions in [`super::nvlink_shapes`]).
//!
//! ## HGX ([`HgxSpec::h100`], [`HgxSpec::a100`])
//! - HGX H100: 8 GPUs, 4 third-generation NVSwitch chips, 18 NVLink 4.0 links per GPU split
//!   5/4/4/5 over the chips (models.md §3.2; the split is recalled from NVIDIA's Hot Chips 34
//!   talk, not re-read), 8 NICs (400G ConnectX-7), each behind a PCIe Gen5 x16 switch shared
//!   with its GPU (`nvidia-smi topo` shows PIX between GPU k and NIC k, models.md §3.3).
//! - HGX A100: 8 GPUs, 6 second-generation NVSwitch chips, 12 NVLink 3.0 links per GPU, 2 per
//!   chip; 8 NICs behind PCIe Gen4 x16 switches.
//!
//! Node order: GPUs `gpu<g>` (hosts `0..8`), hubs `gpu<g>.hub`, chips `nvsw<k>`, PCIe switches
//! `pcie<g>`, NICs `nic<g>`. Links: GPU-hub (internal), then per GPU per chip its NVLinks, then
//! hub-PCIe switch, then PCIe switch-NIC. Ports: hub 0 = GPU, 1..=18 NVLinks (chip-major),
//! 19 = PCIe; PCIe switch 0 = hub, 1 = NIC; NIC 0 = PCIe (port 1 = network, in a cluster).
//!
//! One PCIe switch per GPU-NIC pair (real boards may put two pairs on one switch): with two
//! GPUs on a switch, hop-count ECMP would see GPU-PCIe-GPU as short as GPU-NVSwitch-GPU and
//! route intra-server traffic over PCIe too. The host CPUs and their root complexes are not
//! part of the HGX builder (no GPU traffic crosses them).
//!
//! ## PCIe-only server ([`PcieServerSpec`])
//! `n_gpus` GPUs, `gpus_per_switch` of them (and `nics_per_switch` NICs) under each PCIe switch,
//! switches spread evenly over `n_cpus` root complexes joined in a chain by CPU-CPU links.
//! Node order: GPUs, PCIe switches `pcie<s>`, root complexes `cpu<c>`, NICs `nic<i>`. Links:
//! GPU-switch (GPU order), switch-NIC, switch-root complex, CPU-CPU. A GPU has one port (its
//! PCIe link), so it needs no hub. GPU-GPU traffic crosses the switch (same switch), the root
//! complex (same CPU) or the CPU-CPU link.

use petgraph::graph::NodeIndex;
use sim_core::{BitsPerSec, Duration};

use super::nvlink_shapes::{add_gpus, add_hubs, add_node, add_switched_domain};
use super::{LinkInfo, LinkKind, NodeKind, Topology, TopologyError, check_size, nonzero};
use crate::nvlink::{NvLinkGen, NvSwitchGen};
use crate::pcie::{PcieGen, PcieLink};

/// An HGX board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HgxSpec {
    pub n_gpus: u32,
    pub nvlink: NvLinkGen,
    pub nvswitch: NvSwitchGen,
    /// NVLinks from each GPU to chip `k` (the number of chips is the length).
    pub links_per_switch: Vec<u32>,
    /// One-way NVLink latency (default: the generation's, [`NvLinkGen::link_delay`]).
    pub nvlink_delay: Duration,
    /// GPU-switch and switch-NIC PCIe links.
    pub pcie: PcieLink,
    /// One-way PCIe latency (default: the generation's, [`PcieGen::link_delay`]).
    pub pcie_delay: Duration,
    /// Give each GPU a NIC behind a PCIe switch (8 NICs); `false` = NVLink only.
    pub nics: bool,
}

impl HgxSpec {
    /// HGX H100 (module docs).
    pub fn h100() -> Self {
        HgxSpec {
            n_gpus: 8,
            nvlink: NvLinkGen::V4,
            nvswitch: NvSwitchGen::Gen3,
            links_per_switch: vec![5, 4, 4, 5],
            nvlink_delay: NvLinkGen::V4.link_delay(),
            pcie: PcieLink::new(PcieGen::Gen5, 16).expect("x16 is valid"),
            pcie_delay: PcieGen::Gen5.link_delay(),
            nics: true,
        }
    }

    /// HGX A100 (module docs).
    pub fn a100() -> Self {
        HgxSpec {
            nvlink: NvLinkGen::V3,
            nvswitch: NvSwitchGen::Gen2,
            links_per_switch: vec![2; 6],
            nvlink_delay: NvLinkGen::V3.link_delay(),
            pcie: PcieLink::new(PcieGen::Gen4, 16).expect("x16 is valid"),
            pcie_delay: PcieGen::Gen4.link_delay(),
            ..HgxSpec::h100()
        }
    }

    fn links_per_gpu(&self) -> u64 {
        self.links_per_switch.iter().map(|&l| l as u64).sum()
    }
}

/// A PCIe-only server (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcieServerSpec {
    pub n_gpus: u32,
    pub gpus_per_switch: u32,
    pub nics_per_switch: u32,
    pub n_cpus: u32,
    /// GPU-switch, switch-NIC and switch-root complex links.
    pub pcie: PcieLink,
    pub pcie_delay: Duration,
    /// The CPU-CPU (UPI/xGMI) link. Default: the PCIe link's rate, 100 ns, an assumption.
    pub cpu_link: LinkInfo,
}

impl PcieServerSpec {
    /// 8 GPUs, 2 per switch with 1 NIC, 2 CPUs, x16 links of `generation`.
    pub fn new(generation: PcieGen) -> Self {
        let pcie = PcieLink::new(generation, 16).expect("x16 is valid");
        PcieServerSpec {
            n_gpus: 8,
            gpus_per_switch: 2,
            nics_per_switch: 1,
            n_cpus: 2,
            pcie,
            pcie_delay: generation.link_delay(),
            cpu_link: LinkInfo {
                rate: pcie.rate(),
                delay: Duration::from_ns(100),
                kind: LinkKind::Internal,
            },
        }
    }

    fn n_switches(&self) -> u32 {
        self.n_gpus.div_ceil(self.gpus_per_switch.max(1))
    }
}

/// A server of either kind (what a cluster is made of).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerSpec {
    Hgx(HgxSpec),
    PcieOnly(PcieServerSpec),
}

impl ServerSpec {
    pub fn n_gpus(&self) -> u32 {
        match self {
            ServerSpec::Hgx(h) => h.n_gpus,
            ServerSpec::PcieOnly(p) => p.n_gpus,
        }
    }

    pub fn n_nics(&self) -> u32 {
        match self {
            ServerSpec::Hgx(h) => {
                if h.nics {
                    h.n_gpus
                } else {
                    0
                }
            }
            ServerSpec::PcieOnly(p) => p.n_switches() * p.nics_per_switch,
        }
    }

    /// Upper bounds on (nodes, links, ports of one node) of one server.
    fn size(&self) -> (u128, u128, u128) {
        let g = self.n_gpus() as u128;
        match self {
            ServerSpec::Hgx(h) => {
                let l = h.links_per_gpu() as u128;
                (4 * g + h.links_per_switch.len() as u128, g * (3 + l), g * l + 2)
            }
            ServerSpec::PcieOnly(p) => {
                let s = p.n_switches() as u128;
                (
                    g + s + p.n_cpus as u128 + self.n_nics() as u128,
                    g + 2 * s + self.n_nics() as u128 + p.n_cpus as u128,
                    g + s + 2,
                )
            }
        }
    }

    fn check(&self) -> Result<(), TopologyError> {
        nonzero(self.n_gpus() as u64, "n_gpus")?;
        let (n, l, p) = self.size();
        check_size(n, l, p)?;
        match self {
            ServerSpec::Hgx(h) => {
                nonzero(h.links_per_switch.len() as u64, "NVSwitch chips")?;
                let have = h.nvlink.preset().links_per_gpu as u64;
                if h.links_per_gpu() == 0 || h.links_per_gpu() > have {
                    return Err(TopologyError::Invalid {
                        reason: format!(
                            "{} NVLinks per GPU; {:?} GPUs have 1..={have}",
                            h.links_per_gpu(),
                            h.nvlink
                        ),
                    });
                }
                h.pcie
                    .check()
                    .map_err(|e| TopologyError::Invalid { reason: e.to_string() })
            }
            ServerSpec::PcieOnly(p) => {
                nonzero(p.gpus_per_switch as u64, "gpus_per_switch")?;
                nonzero(p.n_cpus as u64, "n_cpus")?;
                super::check_link(&p.cpu_link, "CPU-CPU link")?;
                p.pcie
                    .check()
                    .map_err(|e| TopologyError::Invalid { reason: e.to_string() })
            }
        }
    }
}

/// The nodes of one server inside a topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerNodes {
    pub gpus: Vec<NodeIndex>,
    /// NIC `i` of the server (its network port is not attached yet).
    pub nics: Vec<NodeIndex>,
}

/// Adds the internals of one server around its already-added GPU endpoints `gpus`, naming
/// nodes `<prefix><name>`. `spec` must have passed `ServerSpec::check`.
pub(crate) fn add_server(
    topo: &mut Topology,
    spec: &ServerSpec,
    prefix: &str,
    gpus: &[NodeIndex],
) -> Result<ServerNodes, TopologyError> {
    match spec {
        ServerSpec::Hgx(h) => {
            let link = h.nvlink.preset().link_info(h.nvlink_delay);
            let nv_rate = link.rate.get() * h.links_per_gpu();
            let pcie_rate = if h.nics { h.pcie.rate().get() } else { 0 };
            let hubs = add_hubs(topo, gpus, BitsPerSec(nv_rate + pcie_rate));
            add_switched_domain(topo, prefix, &hubs, &h.links_per_switch, link, h.nvswitch)?;
            let mut nics = Vec::new();
            if h.nics {
                let pl = h.pcie.link_info(h.pcie_delay);
                let sws: Vec<NodeIndex> = (0..gpus.len())
                    .map(|g| add_node(topo, NodeKind::PcieSwitch, format!("{prefix}pcie{g}")))
                    .collect();
                nics = (0..gpus.len())
                    .map(|g| add_node(topo, NodeKind::Nic, format!("{prefix}nic{g}")))
                    .collect();
                for (&hub, &sw) in hubs.iter().zip(&sws) {
                    topo.add_link(hub, sw, pl);
                }
                for (&sw, &nic) in sws.iter().zip(&nics) {
                    topo.add_link(sw, nic, pl);
                }
            }
            Ok(ServerNodes {
                gpus: gpus.to_vec(),
                nics,
            })
        }
        ServerSpec::PcieOnly(p) => {
            let pl = p.pcie.link_info(p.pcie_delay);
            let n_sw = p.n_switches() as usize;
            let sws: Vec<NodeIndex> = (0..n_sw)
                .map(|s| add_node(topo, NodeKind::PcieSwitch, format!("{prefix}pcie{s}")))
                .collect();
            let cpus: Vec<NodeIndex> = (0..p.n_cpus)
                .map(|c| add_node(topo, NodeKind::RootComplex, format!("{prefix}cpu{c}")))
                .collect();
            let nics: Vec<NodeIndex> = (0..n_sw * p.nics_per_switch as usize)
                .map(|i| add_node(topo, NodeKind::Nic, format!("{prefix}nic{i}")))
                .collect();
            for (g, &gpu) in gpus.iter().enumerate() {
                topo.add_link(gpu, sws[g / p.gpus_per_switch as usize], pl);
            }
            for (i, &nic) in nics.iter().enumerate() {
                topo.add_link(sws[i / p.nics_per_switch as usize], nic, pl);
            }
            for (s, &sw) in sws.iter().enumerate() {
                topo.add_link(sw, cpus[s * cpus.len() / n_sw], pl);
            }
            for w in cpus.windows(2) {
                topo.add_link(w[0], w[1], p.cpu_link);
            }
            Ok(ServerNodes {
                gpus: gpus.to_vec(),
                nics,
            })
        }
    }
}

/// One server on its own (GPU `g` is host `g`).
pub fn server(spec: &ServerSpec) -> Result<Topology, TopologyError> {
    spec.check()?;
    let description = match spec {
        ServerSpec::Hgx(h) => format!(
            "HGX: {} GPUs, {} {:?} NVSwitch chips, {} {:?} links per GPU, {} NICs",
            h.n_gpus,
            h.links_per_switch.len(),
            h.nvswitch,
            h.links_per_gpu(),
            h.nvlink,
            spec.n_nics()
        ),
        ServerSpec::PcieOnly(p) => format!(
            "PCIe-only server: {} GPUs, {} {:?} x{} switches, {} CPUs, {} NICs",
            p.n_gpus,
            p.n_switches(),
            p.pcie.generation,
            p.pcie.lanes,
            p.n_cpus,
            spec.n_nics()
        ),
    };
    let mut topo = Topology::new(description);
    let gpus = add_gpus(&mut topo, "", spec.n_gpus());
    add_server(&mut topo, spec, "", &gpus)?;
    Ok(topo)
}

/// HGX H100 or A100 (or any [`HgxSpec`]) on its own.
pub fn hgx(spec: &HgxSpec) -> Result<Topology, TopologyError> {
    server(&ServerSpec::Hgx(spec.clone()))
}

/// A PCIe-only server on its own.
pub fn pcie_server(spec: &PcieServerSpec) -> Result<Topology, TopologyError> {
    server(&ServerSpec::PcieOnly(*spec))
}

#[cfg(test)]
mod tests {
    use super::super::nvlink_shapes::tests::assert_all_pairs_routable;
    use super::*;
    use crate::routing::{Routes, switch_seeds};

    fn kind_count(t: &Topology, k: NodeKind) -> usize {
        t.graph.node_indices().filter(|&n| t.graph[n].kind == k).count()
    }

    #[test]
    fn hgx_h100_shape_and_routes() {
        let t = hgx(&HgxSpec::h100()).unwrap();
        assert_eq!(t.n_hosts(), 8);
        assert_eq!(kind_count(&t, NodeKind::GpuHub), 8);
        assert_eq!(kind_count(&t, NodeKind::NvSwitch), 4);
        assert_eq!(kind_count(&t, NodeKind::PcieSwitch), 8);
        assert_eq!(kind_count(&t, NodeKind::Nic), 8);
        assert_eq!(t.n_links(), 8 + 8 * 18 + 8 + 8);
        // The chips carry 40, 32, 32, 40 links.
        let degrees: Vec<usize> = t
            .graph
            .node_indices()
            .filter(|&n| t.graph[n].kind == NodeKind::NvSwitch)
            .map(|n| t.degree(n))
            .collect();
        assert_eq!(degrees, vec![40, 32, 32, 40]);
        let r = assert_all_pairs_routable(&t);
        // Hub of GPU 0: all 18 NVLinks are equal-cost toward GPU 7 (striping), never PCIe.
        let hub0 = t.leaf_of(t.hosts[0]);
        let want: Vec<u16> = (1..=18).collect();
        assert_eq!(r.next_hops(hub0.index() as u32, 7), want.as_slice());
        let ports = t.ports(hub0);
        assert_eq!(t.graph[ports[0].0].kind, LinkKind::Internal);
        assert_eq!(t.graph[ports[19].0].kind, LinkKind::Pcie);
        // GPU -> hub -> NVSwitch -> hub -> GPU: 4 links.
        let p = r.path(&t, 0, 5, 9, &switch_seeds(t.n_nodes(), 2));
        assert_eq!(p.len(), 5);
        assert_eq!(t.graph[p[2]].kind, NodeKind::NvSwitch);
        // The GPU's attachment carries 450 GB/s of NVLink plus PCIe Gen5 x16.
        let e = t.graph.find_edge(t.hosts[0], hub0).unwrap();
        assert_eq!(
            t.graph[e].rate.get(),
            3_600_000_000_000 + HgxSpec::h100().pcie.rate().get()
        );
    }

    #[test]
    fn hgx_a100_and_pcie_only() {
        let t = hgx(&HgxSpec::a100()).unwrap();
        assert_eq!(kind_count(&t, NodeKind::NvSwitch), 6);
        assert_eq!(t.n_links(), 8 + 8 * 12 + 16);
        assert_all_pairs_routable(&t);
        let no_nics = HgxSpec {
            nics: false,
            ..HgxSpec::h100()
        };
        assert_eq!(hgx(&no_nics).unwrap().n_links(), 8 + 8 * 18);

        let t = pcie_server(&PcieServerSpec::new(PcieGen::Gen4)).unwrap();
        assert_eq!(t.n_hosts(), 8);
        assert_eq!(kind_count(&t, NodeKind::PcieSwitch), 4);
        assert_eq!(kind_count(&t, NodeKind::RootComplex), 2);
        assert_eq!(kind_count(&t, NodeKind::Nic), 4);
        assert_eq!(t.n_links(), 8 + 4 + 4 + 1);
        let r = assert_all_pairs_routable(&t);
        let seeds = switch_seeds(t.n_nodes(), 2);
        // Same switch: 2 links; same CPU: 4; across CPUs: 5.
        assert_eq!(r.path(&t, 0, 1, 0, &seeds).len() - 1, 2);
        assert_eq!(r.path(&t, 0, 2, 0, &seeds).len() - 1, 4);
        assert_eq!(r.path(&t, 0, 7, 0, &seeds).len() - 1, 5);
        assert!(
            t.graph
                .edge_references()
                .all(|e| matches!(e.weight().kind, LinkKind::Pcie | LinkKind::Internal))
        );
        // Routes are plain data: a DOT export works on GPU topologies too.
        let dot = super::super::dot::to_dot(&t);
        assert!(dot.contains("shape=trapezium") && dot.contains("Pcie\""));
        let _ = Routes::ecmp(&t);
    }

    #[test]
    fn refuses_bad_servers() {
        let too_many = HgxSpec {
            links_per_switch: vec![10, 10],
            ..HgxSpec::h100()
        };
        assert!(hgx(&too_many).is_err());
        let no_chips = HgxSpec {
            links_per_switch: vec![],
            ..HgxSpec::h100()
        };
        assert!(hgx(&no_chips).is_err());
        let mut p = PcieServerSpec::new(PcieGen::Gen5);
        p.gpus_per_switch = 0;
        assert!(pcie_server(&p).is_err());
    }
}
