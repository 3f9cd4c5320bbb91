//! The 3-tier k-ary fat-tree.
//!
//! Source: M. Al-Fares, A. Loukissas, A. Vahdat, "A Scalable, Commodity Data Center Network
//! Architecture", ACM SIGCOMM 2008 (section 3.3); the fat-tree itself is C. E. Leiserson,
//! "Fat-Trees: Universal Networks for Hardware-Efficient Supercomputing", IEEE Transactions
//! on Computers C-34(10), 1985.
//!
//! A `k`-ary fat-tree (k even) is built from identical `k`-port switches:
//! - `k` pods, each with `k/2` edge switches (tier 0) and `k/2` aggregation switches (tier 1);
//! - `(k/2)^2` core switches (tier 2);
//! - `k^3/4` hosts, `k/2` under each edge switch.
//!
//! Wiring: edge `j` of a pod links to every aggregation switch of its pod; aggregation `j` of
//! a pod links to cores `j*(k/2) .. j*(k/2)+k/2-1`, so each core has one link to every pod.
//! Host `i` sits in pod `i / (k^2/4)` under edge `(i / (k/2)) % (k/2)` of that pod.
//!
//! ## Node order and names
//! Hosts first (`h0`, `h1`, ..., host `i` is node `i`), then edge switches pod-major
//! (`edge<pod>.<index>`), then aggregation switches pod-major (`agg<pod>.<index>`), then the
//! cores (`core<j>`). Hosts, edges and aggregations carry their pod; cores have none.
//!
//! ## Port order ("down ports first, then up ports")
//! Links are added in three passes: all host links (in host order), then all edge-agg links
//! (pod, edge, agg), then all agg-core links (pod, agg, core). Hence:
//! - host: port 0 = its edge switch;
//! - edge `e` of pod `p`: ports `0..k/2` = its hosts in host order, then port `k/2 + a` = agg
//!   `a` of the pod;
//! - agg `a` of pod `p`: port `e` = edge `e` of the pod, then port `k/2 + c` = core
//!   `a*(k/2) + c`;
//! - core: port `p` = the aggregation switch of pod `p` (all down ports).
//!
//! In a partial fat-tree (see [`build_partial`], used by [`crate::topology::sizing`]) the last
//! edge switch may have fewer hosts and the last pod fewer edges; the same order holds with the
//! down-port counts shortened accordingly (up ports start right after the down ports).

use super::{LinkInfo, Topology, TopologyError, check_link, check_size};

/// Builds a full `k`-ary fat-tree (`k^3/4` hosts, `5k^2/4` switches, `3k^3/4` links).
///
/// `host_link` is used for host-edge links, `fabric_link` for edge-agg and agg-core links.
/// Errors: `k` odd or below 2, a zero link rate, or more than 2^20 nodes (k above 158).
pub fn build(k: u32, host_link: LinkInfo, fabric_link: LinkInfo) -> Result<Topology, TopologyError> {
    if k < 2 || !k.is_multiple_of(2) {
        return Err(TopologyError::InvalidK { k });
    }
    let k128 = k as u128;
    let n_hosts = k128 * k128 * k128 / 4;
    // Check the size before computing anything that assumes it fits.
    check_size(n_hosts + 5 * k128 * k128 / 4, 3 * n_hosts, k128)?;
    build_partial(k, n_hosts as u64, host_link, fabric_link)
}

/// Builds the first `n_hosts` hosts of a `k`-ary fat-tree with only the switches they need:
/// `ceil(n_hosts / (k/2))` edge switches (the last one possibly partial), the pods holding
/// them (all with `k/2` aggregation switches, so each edge keeps its `k/2` uplinks), and all
/// `(k/2)^2` cores (so each aggregation switch keeps its `k/2` uplinks; each core then uses one
/// port per built pod). Non-blocking like the full tree. `n_hosts = k^3/4` gives [`build`].
pub fn build_partial(
    k: u32,
    n_hosts: u64,
    host_link: LinkInfo,
    fabric_link: LinkInfo,
) -> Result<Topology, TopologyError> {
    if k < 2 || !k.is_multiple_of(2) {
        return Err(TopologyError::InvalidK { k });
    }
    super::nonzero(n_hosts, "n_hosts")?;
    check_link(&host_link, "host link")?;
    check_link(&fabric_link, "fabric link")?;
    let h = k as u128 / 2;
    let max_hosts = 2 * h * h * h;
    if n_hosts as u128 > max_hosts {
        return Err(TopologyError::TooManyHostsForK {
            n_hosts,
            k,
            max: u64::try_from(max_hosts).unwrap_or(u64::MAX),
        });
    }
    let n_edges = (n_hosts as u128).div_ceil(h);
    let n_pods = n_edges.div_ceil(h);
    let n_aggs = n_pods * h;
    let n_cores = h * h;
    let full = n_hosts as u128 == max_hosts;
    check_size(
        n_hosts as u128 + n_edges + n_aggs + n_cores,
        n_hosts as u128 + n_edges * h + n_aggs * h,
        k as u128,
    )?;
    // From here on every count fits in u32 (nodes <= 2^20).
    let (h, n_edges, n_pods, n_cores) = (h as u32, n_edges as u32, n_pods as u32, n_cores as u32);
    let n_switches = n_edges + n_aggs as u32 + n_cores;
    let description = if full {
        format!("fat-tree k={k} ({n_hosts} hosts, {n_switches} switches)")
    } else {
        format!(
            "fat-tree k={k}, partial: {n_hosts} hosts in {n_pods} pods \
             ({n_edges} edge, {n_aggs} agg, {n_cores} core switches)"
        )
    };
    let mut topo = Topology::new(description);
    let hosts_per_pod = (h as u64) * (h as u64);
    let hosts: Vec<_> = (0..n_hosts)
        .map(|i| topo.add_host(format!("h{i}"), Some((i / hosts_per_pod) as u32)))
        .collect();
    let edges: Vec<_> = (0..n_edges)
        .map(|g| topo.add_switch(format!("edge{}.{}", g / h, g % h), 0, Some(g / h)))
        .collect();
    let aggs: Vec<_> = (0..n_pods * h)
        .map(|g| topo.add_switch(format!("agg{}.{}", g / h, g % h), 1, Some(g / h)))
        .collect();
    let cores: Vec<_> = (0..n_cores)
        .map(|j| topo.add_switch(format!("core{j}"), 2, None))
        .collect();

    // Pass 1: host links (edge down ports).
    for (i, &host) in hosts.iter().enumerate() {
        topo.add_link(host, edges[i / h as usize], host_link);
    }
    // Pass 2: edge-agg links (edge up ports, agg down ports).
    for p in 0..n_pods {
        for e in 0..h {
            let g = p * h + e;
            if g >= n_edges {
                break;
            }
            for a in 0..h {
                topo.add_link(edges[g as usize], aggs[(p * h + a) as usize], fabric_link);
            }
        }
    }
    // Pass 3: agg-core links (agg up ports, core down ports in pod order).
    for p in 0..n_pods {
        for a in 0..h {
            for c in 0..h {
                topo.add_link(aggs[(p * h + a) as usize], cores[(a * h + c) as usize], fabric_link);
            }
        }
    }
    Ok(topo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{LinkKind, NodeKind, Ratio};
    use petgraph::graph::NodeIndex;
    use sim_core::{BitsPerSec, Duration};

    fn link(gbps: u64) -> LinkInfo {
        LinkInfo {
            rate: BitsPerSec::from_gbps(gbps),
            delay: Duration::from_ns(600),
            kind: LinkKind::Network,
        }
    }

    fn check_full(k: u32) {
        let t = build(k, link(400), link(400)).unwrap();
        let k = k as usize;
        assert_eq!(t.n_hosts(), k * k * k / 4);
        assert_eq!(t.n_switches(), 5 * k * k / 4);
        assert_eq!(t.n_links(), 3 * k * k * k / 4);
        assert_eq!(
            t.description,
            format!("fat-tree k={k} ({} hosts, {} switches)", k * k * k / 4, 5 * k * k / 4)
        );
        t.validate().unwrap();
        t.check_radix(k as u32).unwrap();
        let mut per_tier = [0usize; 3];
        for n in t.graph.node_indices() {
            match t.graph[n].kind {
                NodeKind::Host => assert_eq!(t.degree(n), 1),
                NodeKind::Switch { tier } => {
                    assert_eq!(t.degree(n), k, "{}", t.graph[n].name);
                    per_tier[tier as usize] += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(per_tier, [k * k / 2, k * k / 2, k * k / 4]);
        // Hosts first, in order, placed as documented.
        let h = k / 2;
        for (i, &host) in t.hosts.iter().enumerate() {
            assert_eq!(host, NodeIndex::new(i));
            let edge = t.leaf_of(host);
            let name = format!("edge{}.{}", i / (h * h), (i / h) % h);
            assert_eq!(t.graph[edge].name, name);
            assert_eq!(t.graph[host].pod, Some((i / (h * h)) as u32));
            assert_eq!(t.switch_tier(edge), Some(0));
        }
        // Down ports first, then up ports, on every switch.
        for n in t.graph.node_indices() {
            if let Some(tier) = t.switch_tier(n) {
                let tiers: Vec<Option<u8>> = t.ports(n).iter().map(|&(_, v)| t.switch_tier(v)).collect();
                let down = if tier == 2 { k } else { h };
                for (p, nt) in tiers.iter().enumerate() {
                    let want = if tier == 0 && p < down {
                        None
                    } else if p < down {
                        Some(tier - 1)
                    } else {
                        Some(tier + 1)
                    };
                    assert_eq!(*nt, want, "{} port {p}", t.graph[n].name);
                }
            }
        }
        // Agg j of each pod reaches cores j*h .. j*h+h-1; core port p is pod p.
        for n in t.graph.node_indices() {
            let info = &t.graph[n];
            if info.name.starts_with("agg") {
                let j: usize = info.name.split('.').nth(1).unwrap().parse().unwrap();
                let cores: Vec<String> = t.ports(n)[h..].iter().map(|&(_, c)| t.graph[c].name.clone()).collect();
                let want: Vec<String> = (0..h).map(|c| format!("core{}", j * h + c)).collect();
                assert_eq!(cores, want);
            }
            if info.name.starts_with("core") {
                let pods: Vec<Option<u32>> = t.ports(n).iter().map(|&(_, a)| t.graph[a].pod).collect();
                let want: Vec<Option<u32>> = (0..k as u32).map(Some).collect();
                assert_eq!(pods, want);
            }
        }
        assert_eq!(t.oversubscription(), Ratio::new(1, 1));
        // Full bisection bandwidth: hosts/2 * host rate.
        assert_eq!(t.bisection_bandwidth_bps(), (k * k * k / 8) as u64 * 400_000_000_000);
    }

    #[test]
    fn k4_counts_degrees_tiers_ports() {
        check_full(4);
    }

    #[test]
    fn k8_counts_degrees_tiers_ports() {
        check_full(8);
    }

    #[test]
    fn k2_is_the_smallest() {
        let t = build(2, link(100), link(100)).unwrap();
        assert_eq!((t.n_hosts(), t.n_switches(), t.n_links()), (2, 5, 6));
    }

    #[test]
    fn bad_parameters_error() {
        assert_eq!(
            build(3, link(100), link(100)).unwrap_err(),
            TopologyError::InvalidK { k: 3 }
        );
        assert_eq!(
            build(0, link(100), link(100)).unwrap_err(),
            TopologyError::InvalidK { k: 0 }
        );
        let zero = LinkInfo {
            rate: BitsPerSec(0),
            delay: Duration::ZERO,
            kind: LinkKind::Network,
        };
        assert!(matches!(build(4, zero, link(100)), Err(TopologyError::ZeroRate { .. })));
        assert!(matches!(build(4, link(100), zero), Err(TopologyError::ZeroRate { .. })));
        // 160^3/4 hosts > 2^20 nodes; u32::MAX-1 must not overflow either.
        for k in [160, u32::MAX - 1] {
            let e = build(k, link(100), link(100)).unwrap_err();
            assert!(matches!(e, TopologyError::TooLarge { what: "nodes", .. }), "{e}");
        }
        let e = build_partial(4, 17, link(100), link(100)).unwrap_err();
        assert!(e.to_string().contains("maximum is 16 hosts"), "{e}");
        assert!(matches!(
            build_partial(4, 0, link(100), link(100)),
            Err(TopologyError::ZeroCount { .. })
        ));
    }

    #[test]
    fn partial_tree_is_consistent() {
        // k=8: 4 hosts/edge, 16 hosts/pod. 37 hosts = 2 full pods + 1 edge of 4 + 1 of 1.
        let t = build_partial(8, 37, link(100), link(100)).unwrap();
        t.validate().unwrap();
        t.check_radix(8).unwrap();
        assert_eq!(t.n_hosts(), 37);
        let n_edges = 10;
        let n_aggs = 3 * 4;
        assert_eq!(t.n_switches(), n_edges + n_aggs + 16);
        assert_eq!(t.n_links(), 37 + n_edges * 4 + n_aggs * 4);
        let last = t.leaf_of(t.hosts[36]);
        assert_eq!(t.graph[last].name, "edge2.1");
        assert_eq!(t.degree(last), 1 + 4);
        assert_eq!(t.oversubscription(), Ratio::new(1, 1));
        // Host-limited: 18 hosts on each side.
        assert_eq!(t.bisection_bandwidth_bps(), 18 * 100_000_000_000);
    }
}
