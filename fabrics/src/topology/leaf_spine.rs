//! The 2-tier leaf-spine (folded Clos) topology, with exact oversubscription.
//!
//! `n_leaves` leaf switches (tier 0) each hold `hosts_per_leaf` hosts and have
//! `links_per_spine` parallel links to each of `n_spines` spine switches (tier 1). A leaf's
//! oversubscription is its host-facing capacity over its uplink capacity:
//!
//! ```text
//! (hosts_per_leaf * host_rate) : (n_spines * links_per_spine * fabric_rate)
//! ```
//!
//! kept as an exact [`Ratio`] (no floating point): [`with_oversubscription`] derives the number
//! of spines from a requested ratio and refuses ratios that need a fractional uplink.
//!
//! ## Node order, names and ports
//! Hosts first (`h<i>`, host `i` is node `i`, under leaf `i / hosts_per_leaf`), then leaves
//! (`leaf<l>`), then spines (`spine<s>`). Links are added host links first (host order), then
//! for each leaf, for each spine, its `links_per_spine` parallel links. Hence:
//! - leaf `l`: ports `0..hosts_per_leaf` = its hosts in host order (down), then port
//!   `hosts_per_leaf + s*links_per_spine + r` = link `r` to spine `s` (up);
//! - spine `s`: port `l*links_per_spine + r` = link `r` to leaf `l` (all down).

use super::{LinkInfo, Ratio, Topology, TopologyError, check_link, check_size, nonzero};

/// Parameters of a leaf-spine fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafSpineSpec {
    pub n_leaves: u32,
    pub hosts_per_leaf: u32,
    pub n_spines: u32,
    /// Parallel links from each leaf to each spine (1 unless stated; see [`LeafSpineSpec::new`]).
    pub links_per_spine: u32,
    /// Host-leaf links.
    pub host_link: LinkInfo,
    /// Leaf-spine links.
    pub fabric_link: LinkInfo,
}

impl LeafSpineSpec {
    /// A spec with one link between each leaf and each spine.
    pub fn new(n_leaves: u32, hosts_per_leaf: u32, n_spines: u32, host_link: LinkInfo, fabric_link: LinkInfo) -> Self {
        LeafSpineSpec {
            n_leaves,
            hosts_per_leaf,
            n_spines,
            links_per_spine: 1,
            host_link,
            fabric_link,
        }
    }

    /// Uplinks per leaf: `n_spines * links_per_spine`.
    pub fn uplinks_per_leaf(&self) -> u64 {
        self.n_spines as u64 * self.links_per_spine as u64
    }

    /// The exact oversubscription `hosts_per_leaf * host_rate : uplinks * fabric_rate`;
    /// `None` if there are no uplinks.
    pub fn oversubscription(&self) -> Option<Ratio> {
        Ratio::new(
            self.hosts_per_leaf as u128 * self.host_link.rate.get() as u128,
            self.uplinks_per_leaf() as u128 * self.fabric_link.rate.get() as u128,
        )
    }
}

/// Builds a leaf-spine fabric. Errors on a zero count or rate, or a size above the limits.
pub fn build(spec: &LeafSpineSpec) -> Result<Topology, TopologyError> {
    nonzero(spec.hosts_per_leaf as u64, "hosts_per_leaf")?;
    nonzero(spec.n_leaves as u64, "n_leaves")?;
    let n_hosts = spec.n_leaves as u64 * spec.hosts_per_leaf as u64;
    build_hosts(spec, n_hosts)
}

/// Builds a leaf-spine fabric holding `n_hosts` hosts, filling leaves in order, so that the
/// last leaf may hold fewer than `hosts_per_leaf` (used by [`crate::topology::sizing`]).
/// `spec.n_leaves` must be `ceil(n_hosts / hosts_per_leaf)`.
pub(crate) fn build_hosts(spec: &LeafSpineSpec, n_hosts: u64) -> Result<Topology, TopologyError> {
    nonzero(spec.n_leaves as u64, "n_leaves")?;
    nonzero(spec.hosts_per_leaf as u64, "hosts_per_leaf")?;
    nonzero(spec.n_spines as u64, "n_spines")?;
    nonzero(spec.links_per_spine as u64, "links_per_spine")?;
    nonzero(n_hosts, "n_hosts")?;
    check_link(&spec.host_link, "host link")?;
    check_link(&spec.fabric_link, "fabric link")?;
    let hpl = spec.hosts_per_leaf as u64;
    if n_hosts.div_ceil(hpl) != spec.n_leaves as u64 {
        return Err(TopologyError::Invalid {
            reason: format!(
                "{n_hosts} hosts at {hpl} per leaf need {} leaves, not {}",
                n_hosts.div_ceil(hpl),
                spec.n_leaves
            ),
        });
    }
    let uplinks = spec.uplinks_per_leaf() as u128;
    let (nl, ns, lps) = (
        spec.n_leaves as u128,
        spec.n_spines as u128,
        spec.links_per_spine as u128,
    );
    check_size(
        n_hosts as u128 + nl + ns,
        n_hosts as u128 + nl * uplinks,
        (hpl as u128 + uplinks).max(nl * lps),
    )?;
    let full = n_hosts == spec.n_leaves as u64 * hpl;
    let over = spec
        .oversubscription()
        .map_or_else(|| "n/a".to_string(), |r| r.to_string());
    let description = format!(
        "leaf-spine {} leaves x {} spines ({n_hosts} hosts, {hpl}/leaf{}, {} link(s) per \
         leaf-spine pair, oversubscription {over})",
        spec.n_leaves,
        spec.n_spines,
        if full { "" } else { ", last leaf partial" },
        spec.links_per_spine,
    );
    let mut topo = Topology::new(description);
    let hosts: Vec<_> = (0..n_hosts).map(|i| topo.add_host(format!("h{i}"), None)).collect();
    let leaves: Vec<_> = (0..spec.n_leaves)
        .map(|l| topo.add_switch(format!("leaf{l}"), 0, None))
        .collect();
    let spines: Vec<_> = (0..spec.n_spines)
        .map(|s| topo.add_switch(format!("spine{s}"), 1, None))
        .collect();
    for (i, &h) in hosts.iter().enumerate() {
        topo.add_link(h, leaves[i / hpl as usize], spec.host_link);
    }
    for &leaf in &leaves {
        for &spine in &spines {
            for _ in 0..spec.links_per_spine {
                topo.add_link(leaf, spine, spec.fabric_link);
            }
        }
    }
    Ok(topo)
}

/// The spec of a leaf-spine fabric with exactly the requested oversubscription
/// `ratio_num:ratio_den` (e.g. `3, 1` for 3:1): one link per leaf-spine pair and
///
/// ```text
/// n_spines = uplinks = hosts_per_leaf * host_rate * ratio_den / (ratio_num * fabric_rate)
/// ```
///
/// which must be a positive integer, otherwise [`TopologyError::NonIntegerUplinks`].
pub fn spec_with_oversubscription(
    n_leaves: u32,
    hosts_per_leaf: u32,
    ratio_num: u32,
    ratio_den: u32,
    host_link: LinkInfo,
    fabric_link: LinkInfo,
) -> Result<LeafSpineSpec, TopologyError> {
    nonzero(n_leaves as u64, "n_leaves")?;
    nonzero(hosts_per_leaf as u64, "hosts_per_leaf")?;
    if ratio_num == 0 || ratio_den == 0 {
        return Err(TopologyError::InvalidRatio {
            num: ratio_num,
            den: ratio_den,
        });
    }
    check_link(&host_link, "host link")?;
    check_link(&fabric_link, "fabric link")?;
    let num = hosts_per_leaf as u128 * host_link.rate.get() as u128 * ratio_den as u128;
    let den = ratio_num as u128 * fabric_link.rate.get() as u128;
    let non_integer = || TopologyError::NonIntegerUplinks {
        hosts_per_leaf,
        host_rate: host_link.rate,
        fabric_rate: fabric_link.rate,
        num: ratio_num,
        den: ratio_den,
    };
    if !num.is_multiple_of(den) || num / den == 0 {
        return Err(non_integer());
    }
    let uplinks = num / den;
    let n_spines = u32::try_from(uplinks).map_err(|_| TopologyError::TooLarge {
        what: "uplinks per leaf",
        count: uplinks,
        limit: super::MAX_PORTS,
    })?;
    Ok(LeafSpineSpec::new(
        n_leaves,
        hosts_per_leaf,
        n_spines,
        host_link,
        fabric_link,
    ))
}

/// Builds the leaf-spine of [`spec_with_oversubscription`].
pub fn with_oversubscription(
    n_leaves: u32,
    hosts_per_leaf: u32,
    ratio_num: u32,
    ratio_den: u32,
    host_link: LinkInfo,
    fabric_link: LinkInfo,
) -> Result<Topology, TopologyError> {
    build(&spec_with_oversubscription(
        n_leaves,
        hosts_per_leaf,
        ratio_num,
        ratio_den,
        host_link,
        fabric_link,
    )?)
}

/// The oversubscription of a built leaf-spine (the worst leaf's; see
/// [`Topology::oversubscription`]), `None` if it has no uplinks.
pub fn oversubscription(topo: &Topology) -> Option<Ratio> {
    topo.oversubscription()
}

/// Convenience for reports: the oversubscription as `f64` (e.g. `3.0` for 3:1).
pub fn oversubscription_f64(topo: &Topology) -> Option<f64> {
    topo.oversubscription().map(Ratio::as_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::NodeKind;
    use crate::topology::test_link as link;

    #[test]
    fn counts_ports_and_parallel_links() {
        let mut spec = LeafSpineSpec::new(6, 8, 4, link(100), link(100));
        spec.links_per_spine = 2;
        let t = build(&spec).unwrap();
        t.validate().unwrap();
        assert_eq!(t.n_hosts(), 48);
        assert_eq!(t.n_switches(), 10);
        assert_eq!(t.n_links(), 48 + 6 * 4 * 2);
        for n in t.graph.node_indices() {
            match t.graph[n].kind {
                NodeKind::Host => assert_eq!(t.degree(n), 1),
                NodeKind::Switch { tier: 0 } => assert_eq!(t.degree(n), 8 + 8),
                NodeKind::Switch { tier: 1 } => assert_eq!(t.degree(n), 6 * 2),
                k => panic!("unexpected {k:?}"),
            }
        }
        // Leaf ports: hosts first, then spine s at 8 + 2s, 8 + 2s + 1.
        let leaf1 = t.leaf_of(t.hosts[8]);
        assert_eq!(t.graph[leaf1].name, "leaf1");
        let names: Vec<String> = t.ports(leaf1).iter().map(|&(_, v)| t.graph[v].name.clone()).collect();
        assert_eq!(&names[..8], (8..16).map(|i| format!("h{i}")).collect::<Vec<_>>());
        assert_eq!(
            &names[8..],
            [
                "spine0", "spine0", "spine1", "spine1", "spine2", "spine2", "spine3", "spine3"
            ]
        );
        assert_eq!(spec.oversubscription(), Ratio::new(1, 1));
        assert_eq!(t.oversubscription(), Ratio::new(1, 1));
        assert!(t.description.contains("oversubscription 1:1"), "{}", t.description);
    }

    #[test]
    fn exact_oversubscription_two_and_three_to_one() {
        let t = with_oversubscription(4, 16, 2, 1, link(100), link(100)).unwrap();
        assert_eq!(t.n_switches(), 4 + 8);
        assert_eq!(oversubscription(&t), Ratio::new(2, 1));
        assert_eq!(oversubscription_f64(&t), Some(2.0));
        // Bisection of a 2:1 leaf-spine: half the full bisection.
        assert_eq!(t.bisection_bandwidth_bps(), 64 / 2 * 100_000_000_000 / 2);

        // 3:1 with 400G uplinks and 100G hosts: 24 hosts * 100 / (3 * 400) = 2 spines.
        let s = spec_with_oversubscription(4, 24, 3, 1, link(100), link(400)).unwrap();
        assert_eq!(s.n_spines, 2);
        let t = build(&s).unwrap();
        assert_eq!(t.oversubscription(), Ratio::new(3, 1));
        assert_eq!(t.bisection_bandwidth_bps(), 96 / 2 * 100_000_000_000 / 3);

        // 3:2 exactly: 12 hosts * 100 * 2 / (3 * 100) = 8 uplinks.
        let s = spec_with_oversubscription(2, 12, 3, 2, link(100), link(100)).unwrap();
        assert_eq!(s.n_spines, 8);
        assert_eq!(s.oversubscription(), Ratio::new(3, 2));
    }

    #[test]
    fn impossible_ratio_errors() {
        // 16 hosts at 100G, 3:1 over 100G uplinks: 16/3 uplinks.
        let e = with_oversubscription(4, 16, 3, 1, link(100), link(100)).unwrap_err();
        assert!(matches!(e, TopologyError::NonIntegerUplinks { .. }));
        assert!(e.to_string().contains("5.333 uplinks"), "{e}");
        // Less than one uplink.
        let e = with_oversubscription(4, 2, 4, 1, link(100), link(100)).unwrap_err();
        assert!(matches!(e, TopologyError::NonIntegerUplinks { .. }));
        assert!(matches!(
            with_oversubscription(4, 2, 0, 1, link(100), link(100)),
            Err(TopologyError::InvalidRatio { .. })
        ));
    }

    #[test]
    fn zero_counts_and_limits_error() {
        for (nl, hpl, ns) in [(0, 4, 2), (4, 0, 2), (4, 4, 0)] {
            let e = build(&LeafSpineSpec::new(nl, hpl, ns, link(100), link(100))).unwrap_err();
            assert!(matches!(e, TopologyError::ZeroCount { .. }), "{e}");
        }
        let mut spec = LeafSpineSpec::new(4, 4, 2, link(100), link(100));
        spec.links_per_spine = 0;
        assert!(matches!(build(&spec), Err(TopologyError::ZeroCount { .. })));
        let e = build(&LeafSpineSpec::new(u32::MAX, u32::MAX, 2, link(100), link(100))).unwrap_err();
        assert!(matches!(e, TopologyError::TooLarge { .. }), "{e}");
        let e = build(&LeafSpineSpec::new(2, 2, 70_000, link(100), link(100))).unwrap_err();
        assert!(matches!(
            e,
            TopologyError::TooLarge {
                what: "ports on one switch",
                ..
            }
        ));
    }
}
