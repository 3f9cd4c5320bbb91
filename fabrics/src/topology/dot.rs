//! Graphviz DOT export with byte-stable output.
//!
//! The output depends only on the topology: nodes are written in node-index order, edges in
//! edge-index order (the order the builder added them, which is also port order), and no hash
//! map is involved anywhere, so two builds of the same topology give identical bytes.
//!
//! Layout of the output:
//! ```text
//! graph fabric {
//!   label="<description>"; rankdir=BT; ...
//!   n0 [label="h0", shape=box];                      // one line per node
//!   ...
//!   { rank=same; n0; n1; ... }                       // one line per tier (hosts, 0, 1, 2...)
//!   n0 -- n16 [label="400Gbps"];                     // one line per link, lower tier first
//!   n3 -- n9 [label="100Gbps", style=dashed, color=grey, fontcolor=grey];  // blocked (RoCEv1)
//! }
//! ```
//! Node ids are `n<index>`; the human-readable name is the label. Shapes: hosts `box`, tier-0
//! switches `ellipse`, tier 1 `hexagon`, tier 2 `octagon`, higher tiers `doubleoctagon`. With
//! `rankdir=BT` hosts are drawn at the bottom and the highest tier at the top. In-server nodes
//! (GPU builders): GPU hubs `point`, NVSwitch `diamond`, PCIe switch `trapezium`, root
//! complex `house`, NIC `cds`, ranked between the endpoints and the network switches; a link
//! that is not a generic network link has its kind after the rate (`"200Gbps NvLink"`).

use std::fmt::Write;

use petgraph::visit::EdgeRef;

use super::{LinkKind, NodeKind, Topology};

/// Quotes a string for DOT (`"` and `\` escaped, newlines as `\n`).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Rank of a node for layout: hosts 0, switches tier + 1.
fn rank(kind: NodeKind) -> u32 {
    match kind {
        NodeKind::Host => 0,
        NodeKind::Switch { tier } => tier as u32 + 3,
        // In-server nodes sit between the endpoints and the network switches.
        NodeKind::GpuHub => 1,
        NodeKind::NvSwitch | NodeKind::PcieSwitch | NodeKind::RootComplex => 2,
        NodeKind::Nic => 2,
    }
}

/// Renders `topo` as an undirected Graphviz graph (see the module docs for the format).
pub fn to_dot(topo: &Topology) -> String {
    to_dot_blocked(topo, &[])
}

/// [`to_dot`] with the links `blocked[edge index]` (e.g. by a spanning tree) drawn dashed and
/// grey: `n3 -- n9 [label="100Gbps", style=dashed, color=grey, fontcolor=grey];`. Links past
/// the slice's end are not blocked.
pub fn to_dot_blocked(topo: &Topology, blocked: &[bool]) -> String {
    let g = &topo.graph;
    let mut out = String::new();
    // Writing to a String cannot fail; `let _ =` keeps this function infallible.
    let _ = writeln!(out, "graph fabric {{");
    let _ = writeln!(
        out,
        "  label={}; labelloc=t; rankdir=BT; node [fontsize=10]; edge [fontsize=8];",
        quote(&topo.description)
    );
    let mut ranks: Vec<Vec<usize>> = Vec::new();
    for n in g.node_indices() {
        let info = &g[n];
        let shape = match info.kind {
            NodeKind::Host => "box",
            NodeKind::Switch { tier: 0 } => "ellipse",
            NodeKind::Switch { tier: 1 } => "hexagon",
            NodeKind::Switch { tier: 2 } => "octagon",
            NodeKind::Switch { .. } => "doubleoctagon",
            NodeKind::GpuHub => "point",
            NodeKind::NvSwitch => "diamond",
            NodeKind::PcieSwitch => "trapezium",
            NodeKind::RootComplex => "house",
            NodeKind::Nic => "cds",
        };
        let _ = writeln!(out, "  n{} [label={}, shape={shape}];", n.index(), quote(&info.name));
        let r = rank(info.kind) as usize;
        if ranks.len() <= r {
            ranks.resize(r + 1, Vec::new());
        }
        ranks[r].push(n.index());
    }
    for members in ranks.iter().filter(|m| !m.is_empty()) {
        out.push_str("  { rank=same;");
        for i in members {
            let _ = write!(out, " n{i};");
        }
        out.push_str(" }\n");
    }
    for e in g.edge_references() {
        let (mut a, mut b) = (e.source(), e.target());
        // Lower rank first so that `rankdir=BT` puts hosts at the bottom.
        if (rank(g[a].kind), a.index()) > (rank(g[b].kind), b.index()) {
            std::mem::swap(&mut a, &mut b);
        }
        let link = e.weight();
        let label = match link.kind {
            LinkKind::Network => link.rate.to_string(),
            kind => format!("{} {kind:?}", link.rate),
        };
        let style = if blocked.get(e.id().index()) == Some(&true) {
            ", style=dashed, color=grey, fontcolor=grey"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  n{} -- n{} [label={}{style}];",
            a.index(),
            b.index(),
            quote(&label)
        );
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::test_link as link;
    use crate::topology::{fat_tree, leaf_spine};

    #[test]
    fn fat_tree_dot_is_structurally_sound_and_stable() {
        let t = fat_tree::build(4, link(100), link(400)).unwrap();
        let dot = to_dot(&t);
        assert!(dot.starts_with("graph fabric {\n"));
        assert!(dot.ends_with("}\n"));
        let lines: Vec<&str> = dot.lines().collect();
        let node_lines: Vec<&&str> = lines
            .iter()
            .filter(|l| l.starts_with("  n") && l.contains("shape=") && !l.contains("--"))
            .collect();
        let edge_lines: Vec<&&str> = lines.iter().filter(|l| l.contains(" -- ")).collect();
        assert_eq!(node_lines.len(), t.n_nodes());
        assert_eq!(edge_lines.len(), t.n_links());
        assert_eq!(lines.iter().filter(|l| l.contains("rank=same")).count(), 4);
        assert_eq!(lines[2], "  n0 [label=\"h0\", shape=box];");
        assert!(dot.contains("[label=\"edge0.0\", shape=ellipse];"));
        assert!(dot.contains("[label=\"agg3.1\", shape=hexagon];"));
        assert!(dot.contains("[label=\"core3\", shape=octagon];"));
        assert_eq!(*edge_lines[0], "  n0 -- n16 [label=\"100Gbps\"];");
        assert!(edge_lines[16].ends_with("[label=\"400Gbps\"];"));
        // Every edge references declared nodes.
        for l in &edge_lines {
            let ids: Vec<usize> = l
                .split_whitespace()
                .filter(|w| w.starts_with('n') && w[1..].chars().all(|c| c.is_ascii_digit()))
                .map(|w| w[1..].parse().unwrap())
                .collect();
            assert_eq!(ids.len(), 2, "{l}");
            assert!(ids.iter().all(|&i| i < t.n_nodes()));
        }
        // Braces balance.
        assert_eq!(dot.matches('{').count(), dot.matches('}').count());
        // Stable bytes across builds.
        let again = to_dot(&fat_tree::build(4, link(100), link(400)).unwrap());
        assert_eq!(dot, again);
    }

    #[test]
    fn blocked_links_are_dashed() {
        let t = leaf_spine::build(&leaf_spine::LeafSpineSpec::new(2, 1, 2, link(100), link(100))).unwrap();
        // Edges: 2 host links, then leaf0-spine0, leaf0-spine1, leaf1-spine0, leaf1-spine1.
        let dot = to_dot_blocked(&t, &[false, false, false, false, false, true]);
        let edges: Vec<&str> = dot.lines().filter(|l| l.contains(" -- ")).collect();
        assert_eq!(edges.len(), 6);
        assert_eq!(
            edges[5],
            "  n3 -- n5 [label=\"100Gbps\", style=dashed, color=grey, fontcolor=grey];"
        );
        assert_eq!(dot.matches("style=dashed").count(), 1);
        assert_eq!(to_dot_blocked(&t, &[]), to_dot(&t));
    }

    #[test]
    fn quoting_escapes() {
        assert_eq!(quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        let t = leaf_spine::build(&leaf_spine::LeafSpineSpec::new(2, 1, 1, link(1), link(1))).unwrap();
        let dot = to_dot(&t);
        assert_eq!(dot.lines().filter(|l| l.contains(" -- ")).count(), 4);
    }
}
