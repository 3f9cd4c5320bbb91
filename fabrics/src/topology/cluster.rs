//! Clusters: `n_servers` GPU servers ([`ServerSpec`]) whose NICs attach to a fat-tree or a
//! leaf-spine, rail-optimised or not.
//!
//! ## GPU numbering and node order
//! GPUs are the endpoints, server-major: GPU `g` of server `s` is host (and node)
//! `s * gpus_per_server + g`, named `s<s>.gpu<g>`. Then each server's internals in server
//! order (as in [`super::hgx`], names prefixed `s<s>.`), then the network switches with the
//! names, tiers, pods and port order of [`super::fat_tree`] / [`super::leaf_spine`].
//!
//! ## How NICs meet the network
//! The network is built by the fat-tree or leaf-spine builder for `n_servers * nics_per_server`
//! hosts, and its host `h` becomes a NIC (kept as a [`NodeKind::Nic`] forwarding node; its port
//! 1 is the network link):
//! - rail-optimised: `h = nic * n_servers + server`, so NIC `i` of every server lands on the
//!   leaves of rail `i` (one leaf per rail when a leaf holds all servers);
//! - not rail-optimised: `h = server * nics_per_server + nic`, a server's NICs under one leaf
//!   (ToR-style).
//!
//! The NIC and fabric links keep the [`LinkKind`](super::LinkKind) the caller gives them (set
//! [`LinkKind::InfiniBand`](super::LinkKind::InfiniBand) or [`LinkKind::Ethernet`](super::LinkKind::Ethernet) to say which network it is).
//!
//! ## Routing note
//! Routes are shortest paths in hops. On an HGX cluster a GPU reaches a GPU of another server
//! on another rail either through its own NIC and the spine, or over NVLink to the GPU whose
//! NIC is on the destination's rail (NCCL's PXN); when both are equally short, ECMP spreads
//! over both. Collective generators keep inter-server messages on one rail.

use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;

use super::hgx::{ServerSpec, add_server};
use super::leaf_spine::{self, LeafSpineSpec};
use super::nvlink_shapes::add_gpus;
use super::{LinkInfo, NodeKind, Topology, TopologyError, check_link, check_size, fat_tree, nonzero};

/// The network the NICs attach to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// A (partial) `k`-ary fat-tree holding all NICs ([`fat_tree::build_partial`]).
    FatTree { k: u32 },
    /// A leaf-spine with `hosts_per_leaf` NICs per leaf (as many leaves as needed).
    LeafSpine {
        hosts_per_leaf: u32,
        n_spines: u32,
        links_per_spine: u32,
    },
}

/// A cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSpec {
    pub n_servers: u32,
    pub server: ServerSpec,
    pub network: Network,
    /// NIC-leaf links.
    pub nic_link: LinkInfo,
    /// Switch-switch links.
    pub fabric_link: LinkInfo,
    /// NIC `i` of every server on rail `i` (module docs).
    pub rail_optimised: bool,
}

impl ClusterSpec {
    /// The network host index of NIC `nic` of server `server` (module docs).
    pub fn network_index(&self, server: u32, nic: u32) -> u64 {
        if self.rail_optimised {
            nic as u64 * self.n_servers as u64 + server as u64
        } else {
            server as u64 * self.server.n_nics() as u64 + nic as u64
        }
    }
}

/// Builds the cluster (module docs).
pub fn build(spec: &ClusterSpec) -> Result<Topology, TopologyError> {
    nonzero(spec.n_servers as u64, "n_servers")?;
    let nics = spec.server.n_nics();
    nonzero(nics as u64, "NICs per server")?;
    check_link(&spec.nic_link, "NIC link")?;
    check_link(&spec.fabric_link, "fabric link")?;
    // The single-server check (sizes of one server), then the whole.
    let one = super::hgx::server(&spec.server)?;
    let n_nics = spec.n_servers as u64 * nics as u64;
    let net = match spec.network {
        Network::FatTree { k } => fat_tree::build_partial(k, n_nics, spec.nic_link, spec.fabric_link)?,
        Network::LeafSpine {
            hosts_per_leaf,
            n_spines,
            links_per_spine,
        } => {
            nonzero(hosts_per_leaf as u64, "hosts_per_leaf")?;
            let mut ls = LeafSpineSpec::new(
                n_nics.div_ceil(hosts_per_leaf as u64).try_into().unwrap_or(u32::MAX),
                hosts_per_leaf,
                n_spines,
                spec.nic_link,
                spec.fabric_link,
            );
            ls.links_per_spine = links_per_spine;
            leaf_spine::build_hosts(&ls, n_nics)?
        }
    };
    let s = spec.n_servers as u128;
    check_size(
        s * one.n_nodes() as u128 + net.n_switches() as u128,
        s * one.n_links() as u128 + net.n_links() as u128,
        0,
    )?;
    let gpus_per = spec.server.n_gpus();
    let mut topo = Topology::new(format!(
        "{} servers ({}) on {}, {}",
        spec.n_servers,
        one.description,
        net.description,
        if spec.rail_optimised {
            "rail-optimised"
        } else {
            "not rail-optimised"
        }
    ));
    let gpus: Vec<Vec<NodeIndex>> = (0..spec.n_servers)
        .map(|s| add_gpus(&mut topo, &format!("s{s}."), gpus_per))
        .collect();
    let mut server_nics = Vec::with_capacity(spec.n_servers as usize);
    for (s, g) in gpus.iter().enumerate() {
        server_nics.push(add_server(&mut topo, &spec.server, &format!("s{s}."), g)?.nics);
    }
    // Network host h -> NIC node; network switches copied in node order.
    let mut map = vec![NodeIndex::end(); net.n_nodes()];
    for (s, nics_of) in server_nics.iter().enumerate() {
        for (i, &nic) in nics_of.iter().enumerate() {
            let h = spec.network_index(s as u32, i as u32) as usize;
            map[net.hosts[h].index()] = nic;
        }
    }
    for n in net.graph.node_indices() {
        let info = &net.graph[n];
        if let NodeKind::Switch { tier } = info.kind {
            map[n.index()] = topo.add_switch(info.name.clone(), tier, info.pod);
        }
    }
    for e in net.graph.edge_references() {
        topo.add_link(map[e.source().index()], map[e.target().index()], *e.weight());
    }
    Ok(topo)
}

#[cfg(test)]
mod tests {
    use super::super::hgx::{HgxSpec, PcieServerSpec};
    use super::super::nvlink_shapes::tests::assert_all_pairs_routable;
    use super::*;
    use crate::pcie::PcieGen;
    use crate::routing::switch_seeds;
    use crate::topology::LinkKind;
    use sim_core::{BitsPerSec, Duration};

    fn net_link(gbps: u64, kind: LinkKind) -> LinkInfo {
        LinkInfo {
            rate: BitsPerSec::from_gbps(gbps),
            delay: Duration::from_ns(500),
            kind,
        }
    }

    fn spec(n_servers: u32, rail: bool, network: Network) -> ClusterSpec {
        ClusterSpec {
            n_servers,
            server: ServerSpec::Hgx(HgxSpec::h100()),
            network,
            nic_link: net_link(400, LinkKind::InfiniBand),
            fabric_link: net_link(400, LinkKind::InfiniBand),
            rail_optimised: rail,
        }
    }

    #[test]
    fn rail_optimised_leaf_spine_of_hgx() {
        let sp = spec(
            4,
            true,
            Network::LeafSpine {
                hosts_per_leaf: 4,
                n_spines: 2,
                links_per_spine: 2,
            },
        );
        let t = build(&sp).unwrap();
        assert_eq!(t.n_hosts(), 32);
        assert_eq!(t.graph[t.hosts[9]].name, "s1.gpu1");
        let r = assert_all_pairs_routable(&t);
        // Leaf l holds NIC l of every server: rail-optimised.
        for s in 0..4 {
            for i in 0..8 {
                let nic = t
                    .graph
                    .node_indices()
                    .find(|&n| t.graph[n].name == format!("s{s}.nic{i}"))
                    .unwrap();
                let ports = t.ports(nic);
                assert_eq!(ports.len(), 2);
                assert_eq!(t.graph[ports[1].1].name, format!("leaf{i}"));
                assert_eq!(t.graph[ports[1].0].kind, LinkKind::InfiniBand);
            }
        }
        // Same rail across servers: GPU-hub-PCIe-NIC-leaf-NIC-PCIe-hub-GPU = 8 links.
        let seeds = switch_seeds(t.n_nodes(), 1);
        assert_eq!(r.path(&t, 2, 8 + 2, 0, &seeds).len() - 1, 8);
        // Same server stays on NVLink: 4 links.
        assert_eq!(r.path(&t, 2, 5, 0, &seeds).len() - 1, 4);
    }

    #[test]
    fn tor_style_fat_tree_and_pcie_servers() {
        let sp = spec(2, false, Network::FatTree { k: 8 });
        let t = build(&sp).unwrap();
        assert_eq!(t.n_hosts(), 16);
        assert_all_pairs_routable(&t);
        // Server 0's 8 NICs fill edge switches 0 and 1 (k/2 = 4 hosts each).
        assert_eq!(sp.network_index(0, 7), 7);
        assert_eq!(sp.network_index(1, 0), 8);
        let rail = spec(2, true, Network::FatTree { k: 8 });
        assert_eq!(rail.network_index(1, 0), 1);
        assert_eq!(rail.network_index(0, 1), 2);

        let pc = ClusterSpec {
            server: ServerSpec::PcieOnly(PcieServerSpec::new(PcieGen::Gen5)),
            ..spec(3, true, Network::FatTree { k: 4 })
        };
        let t = build(&pc).unwrap();
        assert_eq!(t.n_hosts(), 24);
        assert_all_pairs_routable(&t);
        let bad = ClusterSpec {
            n_servers: 0,
            ..pc.clone()
        };
        assert!(build(&bad).is_err());
        // A fat-tree too small for the NICs is refused by the fat-tree builder.
        assert!(build(&spec(4, true, Network::FatTree { k: 4 })).is_err());
    }
}
