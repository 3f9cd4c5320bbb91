//! "Who waits for whom" forests (the InfiniBand congestion tree, the RoCEv2 pause tree) in
//! the order the terminal prints them and `summary.json` lists them: depth first from the
//! roots, each edge followed by the edges that wait for its child, siblings largest first.

/// Orders the edges of a forest depth first and gives each its depth (0 at a root). An edge
/// says that `child(e)` waits for `parent(e)`; a root is a parent that never waits itself
/// (`u32::MAX` = no parent). Siblings keep their input order (callers pass edges largest
/// first), so the largest branch of each level comes first. A node's own waiters are listed
/// once, under the first edge that reaches it. Edges not reachable from a root (a cycle: a
/// deadlock, or waiting for nothing) follow, each starting a tree of its own.
pub fn depth_first_from_roots<T: Copy>(
    edges: &[T],
    child: impl Fn(&T) -> u32,
    parent: impl Fn(&T) -> u32,
) -> Vec<(T, u32)> {
    let children: std::collections::BTreeSet<u32> = edges.iter().map(&child).collect();
    let is_root = |p: u32| p != u32::MAX && !children.contains(&p);
    // Waiters of each node, in input order.
    let mut waiters: std::collections::BTreeMap<u32, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, e) in edges.iter().enumerate() {
        waiters.entry(parent(e)).or_default().push(i);
    }
    let mut placed = vec![false; edges.len()];
    let mut expanded = std::collections::BTreeSet::new();
    let mut order = Vec::with_capacity(edges.len());
    let starts: Vec<usize> = (0..edges.len())
        .filter(|&i| is_root(parent(&edges[i])))
        .chain(0..edges.len())
        .collect();
    for start in starts {
        if placed[start] {
            continue;
        }
        let mut stack = vec![(start, 0u32)];
        while let Some((i, depth)) = stack.pop() {
            if placed[i] {
                continue;
            }
            placed[i] = true;
            order.push((edges[i], depth));
            let c = child(&edges[i]);
            if expanded.insert(c)
                && let Some(w) = waiters.get(&c)
            {
                // Reversed so that the first waiter is popped first.
                stack.extend(w.iter().rev().filter(|&&j| !placed[j]).map(|&j| (j, depth + 1)));
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (child, parent, size)
    type E = (u32, u32, u32);

    fn order(edges: &[E]) -> Vec<(u32, u32)> {
        depth_first_from_roots(edges, |e| e.0, |e| e.1)
            .into_iter()
            .map(|(e, d)| (e.2, d))
            .collect()
    }

    #[test]
    fn children_follow_their_parent_edge_largest_first() {
        // Root 0; 1 and 2 wait for 0; 3 and 4 wait for 1; 5 waits for 2. Input largest first.
        let edges = [(1, 0, 90), (2, 0, 80), (3, 1, 70), (5, 2, 60), (4, 1, 50)];
        assert_eq!(order(&edges), [(90, 0), (70, 1), (50, 1), (80, 0), (60, 1)]);
    }

    #[test]
    fn a_cycle_comes_last_as_its_own_tree_and_terminates() {
        let edges = [(1, 0, 9), (7, 8, 5), (8, 7, 4), (2, 1, 3)];
        assert_eq!(order(&edges), [(9, 0), (3, 1), (5, 0), (4, 1)]);
    }

    #[test]
    fn waiting_for_nothing_is_a_root_edge_at_the_end() {
        let edges = [(1, u32::MAX, 9), (2, 0, 5)];
        assert_eq!(order(&edges), [(5, 0), (9, 0)]);
    }
}
