//! NVLink domains without a network: the three classic shapes (fully connected mesh, ring,
//! switched) and GB200 NVL72.
//!
//! ## Conventions shared with [`super::hgx`] and [`super::cluster`]
//! - GPUs are the endpoints ([`NodeKind::Host`]), added first: GPU `i` is host `i` and node `i`,
//!   named `gpu<i>` (with a `s<server>.` prefix inside a cluster).
//! - Each GPU with more than one link has a hub ([`NodeKind::GpuHub`], `gpu<i>.hub`) joined to
//!   it by one [`LinkKind::Internal`] link whose rate is the sum of the hub's other links and
//!   whose delay is 0: the GPU keeps the single port that routing and the engine expect of an
//!   endpoint, and the hub's NVLinks are separate (parallel) ports. Routing gives the hub every
//!   equal-cost NVLink as an ECMP member; striping one transfer over all of them (per packet,
//!   as NVLink does) is the engine's choice for [`LinkKind::NvLink`] ports (pending, lead).
//! - Hub ports: 0 = its GPU, then its NVLinks in the order documented per builder.
//! - In a ring (and a partial mesh), GPUs that are not neighbours are reachable only through
//!   another GPU's hub: that path stands for NCCL forwarding through the intermediate GPU's
//!   memory (NVLink itself does not forward). Collective generators use neighbours only.
//!
//! Link latency: the caller's (the scenario loader passes the generation's,
//! [`crate::nvlink::NvLinkGen::link_delay`]).

use petgraph::graph::NodeIndex;
use sim_core::{BitsPerSec, Duration};

use super::{LinkInfo, LinkKind, NodeInfo, NodeKind, Topology, TopologyError, check_size};
use crate::nvlink::{NvLinkGen, NvSwitchGen};

/// Adds `n` GPU endpoints named `<prefix>gpu<i>`.
pub(crate) fn add_gpus(topo: &mut Topology, prefix: &str, n: u32) -> Vec<NodeIndex> {
    (0..n).map(|i| topo.add_host(format!("{prefix}gpu{i}"), None)).collect()
}

/// Adds a forwarding node of `kind`.
pub(crate) fn add_node(topo: &mut Topology, kind: NodeKind, name: String) -> NodeIndex {
    topo.graph.add_node(NodeInfo { kind, name, pod: None })
}

/// Adds a hub per GPU and the GPU-hub links (rate `hub_rate`, the sum of the hub's other links).
pub(crate) fn add_hubs(topo: &mut Topology, gpus: &[NodeIndex], hub_rate: BitsPerSec) -> Vec<NodeIndex> {
    let hubs: Vec<NodeIndex> = gpus
        .iter()
        .map(|&g| {
            let name = format!("{}.hub", topo.graph[g].name);
            add_node(topo, NodeKind::GpuHub, name)
        })
        .collect();
    for (&g, &h) in gpus.iter().zip(&hubs) {
        topo.add_link(g, h, internal(hub_rate));
    }
    hubs
}

/// An internal (non-bottleneck) link of `rate` and no delay.
pub(crate) fn internal(rate: BitsPerSec) -> LinkInfo {
    LinkInfo {
        rate,
        delay: Duration::ZERO,
        kind: LinkKind::Internal,
    }
}

/// Adds `links_per_switch.len()` NVSwitch chips named `<prefix>nvsw<k>` and, GPU by GPU, chip by
/// chip, `links_per_switch[k]` parallel NVLinks from each hub to chip `k`. Refuses a chip with
/// more ports than `chip` has.
pub(crate) fn add_switched_domain(
    topo: &mut Topology,
    prefix: &str,
    hubs: &[NodeIndex],
    links_per_switch: &[u32],
    link: LinkInfo,
    chip: NvSwitchGen,
) -> Result<Vec<NodeIndex>, TopologyError> {
    let ports = chip.preset().ports as u64;
    for &l in links_per_switch {
        let used = hubs.len() as u64 * l as u64;
        if used > ports {
            return Err(TopologyError::Invalid {
                reason: format!("{used} NVLinks on one {chip:?} NVSwitch chip, which has {ports} ports"),
            });
        }
    }
    let switches: Vec<NodeIndex> = (0..links_per_switch.len())
        .map(|k| add_node(topo, NodeKind::NvSwitch, format!("{prefix}nvsw{k}")))
        .collect();
    for &h in hubs {
        for (k, &l) in links_per_switch.iter().enumerate() {
            for _ in 0..l {
                topo.add_link(h, switches[k], link);
            }
        }
    }
    Ok(switches)
}

/// Adds the endpoint that stands for in-switch reduction (NVLink SHARP, NCCL's NVLS) in a
/// topology with NVSwitch chips, and returns its host index (the last host).
///
/// The approximation: the NVSwitch domain's reduction/multicast engine is a host `nvls`
/// behind a hub `nvls.hub` (spraying like a GPU hub) that is joined to every chip by one
/// [`LinkKind::Internal`] link, delay 0, with the rate of all NVLinks on that chip: it is never
/// the bottleneck, so a rank's traffic to and from "the switch" is limited by the rank's own
/// NVLinks, which it stripes over all chips, and pays one chip traversal each way (as the
/// multimem loads and stores do). Reduction arithmetic and multicast replication take no time.
/// Refuses a topology without NVSwitch chips.
pub fn add_nvls_endpoint(topo: &mut Topology) -> Result<u32, TopologyError> {
    let chips: Vec<NodeIndex> = topo
        .graph
        .node_indices()
        .filter(|&n| topo.graph[n].kind == NodeKind::NvSwitch)
        .collect();
    if chips.is_empty() {
        return Err(TopologyError::Invalid {
            reason: "NVLS (in-switch reduction) needs NVSwitch chips; this topology has none".into(),
        });
    }
    let chip_rate = |c: NodeIndex| -> u64 {
        topo.graph
            .edges(c)
            .map(|e| *petgraph::visit::EdgeRef::weight(&e))
            .filter(|l| l.kind == LinkKind::NvLink)
            .map(|l| l.rate.get())
            .sum()
    };
    let rates: Vec<u64> = chips.iter().map(|&c| chip_rate(c)).collect();
    let host = topo.add_host("nvls", None);
    let hub = add_node(topo, NodeKind::GpuHub, "nvls.hub".into());
    topo.add_link(host, hub, internal(BitsPerSec(rates.iter().sum())));
    for (&c, &r) in chips.iter().zip(&rates) {
        topo.add_link(hub, c, internal(BitsPerSec(r.max(1))));
    }
    Ok(topo.n_hosts() as u32 - 1)
}

fn check_gpus(n_gpus: u32, max: u32) -> Result<(), TopologyError> {
    if !(2..=max).contains(&n_gpus) {
        return Err(TopologyError::Invalid {
            reason: format!("an NVLink mesh or ring has 2..={max} GPUs (got {n_gpus})"),
        });
    }
    Ok(())
}

fn check_budget(generation: NvLinkGen, per_gpu: u64, what: &str) -> Result<(), TopologyError> {
    let have = generation.preset().links_per_gpu as u64;
    if per_gpu == 0 || per_gpu > have {
        return Err(TopologyError::Invalid {
            reason: format!("{what} needs {per_gpu} NVLinks per GPU; {generation:?} GPUs have 1..={have}"),
        });
    }
    Ok(())
}

/// The most links per pair a full mesh of `n_gpus` can give: `links_per_gpu / (n_gpus - 1)`.
pub fn mesh_links_per_pair(n_gpus: u32, generation: NvLinkGen) -> u32 {
    generation.preset().links_per_gpu / n_gpus.saturating_sub(1).max(1)
}

/// A fully connected NVLink mesh of `n_gpus` (2..=8) with `links_per_pair` parallel links
/// between every pair (at most [`mesh_links_per_pair`]). Hub ports: 0 = GPU, then for each
/// other GPU in index order its `links_per_pair` links.
pub fn full_mesh(
    n_gpus: u32,
    generation: NvLinkGen,
    links_per_pair: u32,
    delay: Duration,
) -> Result<Topology, TopologyError> {
    check_gpus(n_gpus, 8)?;
    check_budget(generation, links_per_pair as u64 * (n_gpus as u64 - 1), "this mesh")?;
    let link = generation.preset().link_info(delay);
    let per_gpu = links_per_pair as u64 * (n_gpus as u64 - 1);
    let mut topo = Topology::new(format!(
        "NVLink {generation:?} full mesh: {n_gpus} GPUs, {links_per_pair} link(s) per pair"
    ));
    let gpus = add_gpus(&mut topo, "", n_gpus);
    let hubs = add_hubs(&mut topo, &gpus, BitsPerSec(link.rate.get() * per_gpu));
    for a in 0..hubs.len() {
        for b in a + 1..hubs.len() {
            for _ in 0..links_per_pair {
                topo.add_link(hubs[a], hubs[b], link);
            }
        }
    }
    Ok(topo)
}

/// An NVLink ring of `n_gpus` (2..=8): GPU `i` has `links_per_neighbour` links to `i+1 (mod n)`
/// (for 2 GPUs the ring closes on itself: `2 x links_per_neighbour` links between them). Hub
/// ports: 0 = GPU, then links to the previous GPU and to the next, in link order.
pub fn ring(
    n_gpus: u32,
    generation: NvLinkGen,
    links_per_neighbour: u32,
    delay: Duration,
) -> Result<Topology, TopologyError> {
    check_gpus(n_gpus, 8)?;
    check_budget(generation, 2 * links_per_neighbour as u64, "this ring")?;
    let link = generation.preset().link_info(delay);
    let mut topo = Topology::new(format!(
        "NVLink {generation:?} ring: {n_gpus} GPUs, {links_per_neighbour} link(s) per neighbour"
    ));
    let gpus = add_gpus(&mut topo, "", n_gpus);
    let hubs = add_hubs(
        &mut topo,
        &gpus,
        BitsPerSec(link.rate.get() * 2 * links_per_neighbour as u64),
    );
    let n = hubs.len();
    for i in 0..n {
        for _ in 0..links_per_neighbour {
            topo.add_link(hubs[i], hubs[(i + 1) % n], link);
        }
    }
    Ok(topo)
}

/// A switched NVLink domain: `n_gpus` GPUs, chip `k` reached by `links_per_switch[k]` links
/// from every GPU. Node order: GPUs, hubs, chips (`nvsw<k>`); hub ports: 0 = GPU, then chip by
/// chip its links.
pub fn switched(
    n_gpus: u32,
    generation: NvLinkGen,
    chip: NvSwitchGen,
    links_per_switch: &[u32],
    delay: Duration,
) -> Result<Topology, TopologyError> {
    super::nonzero(n_gpus as u64, "n_gpus")?;
    super::nonzero(links_per_switch.len() as u64, "NVSwitch chips")?;
    let per_gpu: u64 = links_per_switch.iter().map(|&l| l as u64).sum();
    check_budget(generation, per_gpu, "this switched domain")?;
    let n = n_gpus as u128;
    check_size(2 * n + links_per_switch.len() as u128, n * (1 + per_gpu as u128), n + 1)?;
    let link = generation.preset().link_info(delay);
    let mut topo = Topology::new(format!(
        "NVLink {generation:?} switched: {n_gpus} GPUs, {} {chip:?} NVSwitch chips, {per_gpu} links per GPU",
        links_per_switch.len()
    ));
    let gpus = add_gpus(&mut topo, "", n_gpus);
    let hubs = add_hubs(&mut topo, &gpus, BitsPerSec(link.rate.get() * per_gpu));
    add_switched_domain(&mut topo, "", &hubs, links_per_switch, link, chip)?;
    Ok(topo)
}

/// GB200 NVL72: 72 GPUs, 18 NVLink Switch chips (9 trays x 2), each GPU with one NVLink 5.0
/// link to every chip (models.md §3.2: 72 x 18 = 1296 links = 18 chips x 72 ports). Grace
/// CPUs, compute trays and the scale-out NICs are not modelled.
pub fn nvl72(delay: Duration) -> Result<Topology, TopologyError> {
    let mut t = switched(72, NvLinkGen::V5, NvSwitchGen::Gen4, &[1; 18], delay)?;
    t.description = format!("GB200 NVL72: {}", t.description);
    Ok(t)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::nvlink::DEFAULT_LINK_DELAY as D;
    use crate::routing::{Routes, flow_hash, switch_seeds};

    /// Every GPU pair is routable and every path ends at its destination.
    pub(crate) fn assert_all_pairs_routable(t: &Topology) -> Routes {
        t.validate().unwrap();
        let r = Routes::ecmp(t);
        let seeds = switch_seeds(t.n_nodes(), 3);
        let n = t.n_hosts() as u32;
        for s in 0..n {
            for d in 0..n {
                if s != d {
                    let p = r.path(t, s, d, flow_hash(s, d, 0), &seeds);
                    assert_eq!(*p.last().unwrap(), t.hosts[d as usize], "{s}->{d}: {p:?}");
                }
            }
        }
        r
    }

    #[test]
    fn mesh_shapes() {
        for n in 2..=8u32 {
            let lpp = mesh_links_per_pair(n, NvLinkGen::V4);
            let t = full_mesh(n, NvLinkGen::V4, lpp, D).unwrap();
            assert_eq!(t.n_hosts(), n as usize);
            assert_eq!(t.n_links() as u32, n + lpp * n * (n - 1) / 2);
            let r = assert_all_pairs_routable(&t);
            // GPU0's hub reaches GPU1 over all lpp parallel links (ports 1..=lpp).
            let hub0 = t.leaf_of(t.hosts[0]).index() as u32;
            let want: Vec<u16> = (1..=lpp as u16).collect();
            assert_eq!(r.next_hops(hub0, 1), want.as_slice());
            assert_eq!(t.graph[NodeIndex::new(hub0 as usize)].kind, NodeKind::GpuHub);
        }
        assert_eq!(mesh_links_per_pair(8, NvLinkGen::V4), 2);
        assert!(full_mesh(8, NvLinkGen::V4, 3, D).is_err());
        assert!(full_mesh(9, NvLinkGen::V4, 1, D).is_err());
        assert!(full_mesh(1, NvLinkGen::V4, 1, D).is_err());
    }

    #[test]
    fn ring_shapes() {
        for n in 2..=8u32 {
            let t = ring(n, NvLinkGen::V3, 6, D).unwrap();
            assert_eq!(t.n_links() as u32, n + 6 * n);
            assert_all_pairs_routable(&t);
        }
        assert!(ring(4, NvLinkGen::V3, 7, D).is_err());
        // Non-neighbours go through the intermediate GPU's hub: 0 -> 2 in a 4-ring is 4 links.
        let t = ring(4, NvLinkGen::V4, 9, D).unwrap();
        let r = Routes::ecmp(&t);
        let p = r.path(&t, 0, 2, 1, &switch_seeds(t.n_nodes(), 1));
        assert_eq!(p.len() - 1, 4);
    }

    #[test]
    fn nvl72_shape() {
        let t = nvl72(D).unwrap();
        assert_eq!(t.n_hosts(), 72);
        let chips: Vec<NodeIndex> = t
            .graph
            .node_indices()
            .filter(|&n| t.graph[n].kind == NodeKind::NvSwitch)
            .collect();
        assert_eq!(chips.len(), 18);
        assert!(chips.iter().all(|&c| t.degree(c) == 72));
        assert_eq!(t.n_links(), 72 + 72 * 18);
        let r = assert_all_pairs_routable(&t);
        // A hub spreads over all 18 chips toward any other GPU.
        let hub = t.leaf_of(t.hosts[5]).index() as u32;
        assert_eq!(r.next_hops(hub, 70).len(), 18);
        // The GPU-hub link carries the GPU's 18 x 400 Gb/s.
        let e = t.graph.find_edge(t.hosts[5], NodeIndex::new(hub as usize)).unwrap();
        assert_eq!(t.graph[e].rate, BitsPerSec::from_gbps(7200));
        assert_eq!(t.graph[e].kind, LinkKind::Internal);
        assert!(
            switched(72, NvLinkGen::V5, NvSwitchGen::Gen4, &[2; 9], D).is_err(),
            "144 ports on a 72-port chip"
        );
    }
}
