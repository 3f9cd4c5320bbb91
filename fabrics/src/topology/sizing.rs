//! Sizing a fabric the way one sizes a real cluster: given the number of hosts and the switch
//! radix (ports per switch, e.g. 40-port HDR InfiniBand or 64-port NDR switches), build the
//! fewest tiers that connect all hosts **non-blocking** (every leaf has as much uplink as
//! host-facing capacity, when `fabric_link.rate >= host_link.rate`).
//!
//! Rules, for an even radix `r` (odd radices are refused):
//! 1. **1 tier** if `n_hosts <= r`: one switch (`switch0`) with every host on it.
//! 2. **2 tiers** (leaf-spine, see [`super::leaf_spine`]) if `n_hosts <= r^2/2`: `r/2` hosts
//!    and `r/2` uplinks per leaf, `ceil(n_hosts / (r/2))` leaves (at most `r`; the last leaf
//!    may be partial). Spines as needed: each leaf has `d` parallel links to each of `r/2/d`
//!    spines, with `d` the largest divisor of `r/2` such that a spine's `n_leaves * d` ports fit
//!    its radix; this is the fewest spines with every leaf wired identically to every spine.
//! 3. **3 tiers** (fat-tree, see [`super::fat_tree`]) if `n_hosts <= r^3/4`: the `k = r`
//!    fat-tree built with only as many edge switches (`ceil(n_hosts / (r/2))`, the last one
//!    possibly partial) and pods as needed, each pod with its `r/2` aggregation switches and all
//!    `(r/2)^2` cores (see [`super::fat_tree::build_partial`]).
//! 4. Otherwise an error that names the maximum, `r^3/4` hosts.
//!
//! Every switch of the result has at most `r` ports ([`Topology::check_radix`] holds). The
//! 2^20-node limit still applies (a radix-160 fat-tree is too large).

use super::leaf_spine::{self, LeafSpineSpec};
use super::{LinkInfo, Topology, TopologyError, check_link, check_size, fat_tree, nonzero};

/// The shape [`for_hosts`] chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// One switch.
    SingleSwitch,
    /// A 2-tier leaf-spine.
    LeafSpine {
        n_leaves: u32,
        hosts_per_leaf: u32,
        n_spines: u32,
        links_per_spine: u32,
    },
    /// A (possibly partial) 3-tier fat-tree with `k` = radix.
    FatTree { k: u32, n_pods: u32, n_edges: u32 },
}

impl Plan {
    /// Switch tiers: 1, 2 or 3.
    pub fn tiers(&self) -> u8 {
        match self {
            Plan::SingleSwitch => 1,
            Plan::LeafSpine { .. } => 2,
            Plan::FatTree { .. } => 3,
        }
    }
}

/// The most hosts radix-`radix` switches can connect non-blocking in at most 3 tiers.
pub fn max_hosts(radix: u32) -> u128 {
    let r = radix as u128;
    r * r * r / 4
}

/// Chooses the shape for `n_hosts` hosts on radix-`radix` switches (rules in the module docs).
pub fn plan(n_hosts: u32, radix: u32) -> Result<Plan, TopologyError> {
    nonzero(n_hosts as u64, "n_hosts")?;
    if radix < 2 || !radix.is_multiple_of(2) {
        return Err(TopologyError::InvalidRadix { radix });
    }
    let (n, r) = (n_hosts as u128, radix as u128);
    let half = r / 2;
    if n <= r {
        return Ok(Plan::SingleSwitch);
    }
    if n <= r * r / 2 {
        // Here r >= 4 and 3 <= n_leaves <= r, so every value fits in u32.
        let n_leaves = n.div_ceil(half);
        let d = (1..=half)
            .rev()
            .find(|&d| half.is_multiple_of(d) && n_leaves * d <= r)
            .unwrap_or(1);
        return Ok(Plan::LeafSpine {
            n_leaves: n_leaves as u32,
            hosts_per_leaf: half as u32,
            n_spines: (half / d) as u32,
            links_per_spine: d as u32,
        });
    }
    let max = max_hosts(radix);
    if n <= max {
        let n_edges = n.div_ceil(half);
        let n_pods = n_edges.div_ceil(half);
        // Refuse oversized fabrics before the counts are narrowed.
        check_size(n + n_edges + n_pods * half + half * half, 0, 0)?;
        return Ok(Plan::FatTree {
            k: radix,
            n_pods: n_pods as u32,
            n_edges: n_edges as u32,
        });
    }
    Err(TopologyError::TooManyHosts {
        n_hosts: n_hosts as u64,
        radix,
        max: u64::try_from(max).unwrap_or(u64::MAX),
    })
}

/// Builds the fabric [`plan`] chooses for `n_hosts` hosts on radix-`radix` switches.
///
/// `host_link` is used for host links, `fabric_link` between switches.
pub fn for_hosts(
    n_hosts: u32,
    radix: u32,
    host_link: LinkInfo,
    fabric_link: LinkInfo,
) -> Result<Topology, TopologyError> {
    let shape = plan(n_hosts, radix)?;
    check_link(&host_link, "host link")?;
    check_link(&fabric_link, "fabric link")?;
    match shape {
        Plan::SingleSwitch => {
            check_size(n_hosts as u128 + 1, n_hosts as u128, n_hosts as u128)?;
            let mut topo = Topology::new(format!("single switch, radix {radix} ({n_hosts} hosts)"));
            let hosts: Vec<_> = (0..n_hosts).map(|i| topo.add_host(format!("h{i}"), None)).collect();
            let sw = topo.add_switch("switch0", 0, None);
            for h in hosts {
                topo.add_link(h, sw, host_link);
            }
            Ok(topo)
        }
        Plan::LeafSpine {
            n_leaves,
            hosts_per_leaf,
            n_spines,
            links_per_spine,
        } => {
            let spec = LeafSpineSpec {
                n_leaves,
                hosts_per_leaf,
                n_spines,
                links_per_spine,
                host_link,
                fabric_link,
            };
            let mut topo = leaf_spine::build_hosts(&spec, n_hosts as u64)?;
            topo.description = format!("radix {radix}: {}", topo.description);
            Ok(topo)
        }
        Plan::FatTree { k, .. } => {
            let mut topo = fat_tree::build_partial(k, n_hosts as u64, host_link, fabric_link)?;
            topo.description = format!("radix {radix}: {}", topo.description);
            Ok(topo)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::test_link as link;
    use crate::topology::{LinkKind, Ratio};
    use sim_core::{BitsPerSec, Duration};

    fn build(n: u32, radix: u32) -> Topology {
        let t = for_hosts(n, radix, link(200), link(200)).unwrap();
        t.validate().unwrap();
        t.check_radix(radix).unwrap();
        assert_eq!(t.n_hosts(), n as usize);
        t
    }

    fn tiers(t: &Topology) -> u8 {
        t.graph
            .node_indices()
            .filter_map(|n| t.switch_tier(n))
            .max()
            .map_or(0, |m| m + 1)
    }

    #[test]
    fn one_switch_when_it_fits() {
        let t = build(30, 40);
        assert_eq!(t.n_switches(), 1);
        assert_eq!(tiers(&t), 1);
        assert_eq!(plan(40, 40).unwrap(), Plan::SingleSwitch);
    }

    #[test]
    fn two_tiers_up_to_half_radix_squared() {
        assert_eq!(
            plan(800, 40).unwrap(),
            Plan::LeafSpine {
                n_leaves: 40,
                hosts_per_leaf: 20,
                n_spines: 20,
                links_per_spine: 1
            }
        );
        let t = build(800, 40);
        assert_eq!(tiers(&t), 2);
        assert_eq!(t.n_switches(), 60);
        assert_eq!(t.oversubscription(), Ratio::new(1, 1));
        // 41 hosts: 3 leaves (20, 20, 1), 20 uplinks each: 2 spines x 10 parallel links (30 ports).
        assert_eq!(
            plan(41, 40).unwrap(),
            Plan::LeafSpine {
                n_leaves: 3,
                hosts_per_leaf: 20,
                n_spines: 2,
                links_per_spine: 10
            }
        );
        let t = build(41, 40);
        assert_eq!(t.n_switches(), 5);
        assert_eq!(t.oversubscription(), Ratio::new(1, 1));
        // 8192 hosts on 64 ports: 64^2/2 = 2048 < 8192, so 3 tiers.
        assert_eq!(plan(2048, 64).unwrap().tiers(), 2);
        assert_eq!(plan(2049, 64).unwrap().tiers(), 3);
    }

    #[test]
    fn three_tiers_up_to_radix_cubed_over_four() {
        let t = build(1000, 40);
        assert_eq!(tiers(&t), 3);
        // 50 edges in 3 pods (20 + 20 + 10 edges), 60 aggs, 400 cores.
        assert_eq!(
            plan(1000, 40).unwrap(),
            Plan::FatTree {
                k: 40,
                n_pods: 3,
                n_edges: 50
            }
        );
        assert_eq!(t.n_switches(), 50 + 60 + 400);
        assert_eq!(t.oversubscription(), Ratio::new(1, 1));
        // Partial last edge: 1001 hosts -> 51 edges, the last with one host.
        let t = build(1001, 40);
        assert_eq!(t.degree(t.leaf_of(t.hosts[1000])), 1 + 20);
        assert_eq!(
            plan(8192, 64).unwrap(),
            Plan::FatTree {
                k: 64,
                n_pods: 8,
                n_edges: 256
            }
        );
        let t = build(8192, 64);
        assert_eq!(tiers(&t), 3);
        assert_eq!(t.bisection_bandwidth_bps(), 4096 * 200_000_000_000);
        assert_eq!(plan(16000, 40).unwrap().tiers(), 3);
    }

    #[test]
    fn too_many_hosts_names_the_maximum() {
        let e = for_hosts(20000, 40, link(200), link(200)).unwrap_err();
        assert_eq!(
            e,
            TopologyError::TooManyHosts {
                n_hosts: 20000,
                radix: 40,
                max: 16000
            }
        );
        assert!(e.to_string().contains("maximum is 16000 hosts"), "{e}");
    }

    #[test]
    fn bad_parameters_error() {
        assert!(matches!(plan(0, 40), Err(TopologyError::ZeroCount { .. })));
        for r in [0, 1, 41] {
            assert_eq!(plan(10, r), Err(TopologyError::InvalidRadix { radix: r }));
        }
        // Fits radix 200's 3-tier maximum but not the node limit.
        let e = for_hosts(1_500_000, 200, link(200), link(200)).unwrap_err();
        assert!(matches!(e, TopologyError::TooLarge { .. }), "{e}");
        // A single huge switch: more than 2^16 ports.
        let e = for_hosts(70_000, 100_000, link(200), link(200)).unwrap_err();
        assert!(matches!(e, TopologyError::TooLarge { .. }), "{e}");
        let zero = LinkInfo {
            rate: BitsPerSec(0),
            delay: Duration::ZERO,
            kind: LinkKind::Network,
        };
        assert!(matches!(
            for_hosts(10, 40, zero, link(1)),
            Err(TopologyError::ZeroRate { .. })
        ));
    }
}
