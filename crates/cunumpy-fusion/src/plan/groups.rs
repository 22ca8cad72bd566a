//! Passes 2 and 3 of the planner: which reductions each node depends on (transitively), and
//! the reduction groups: reductions over the same argument shape and axes, none depending on
//! another, that one kernel computes together.

use crate::ir::graph::{node_args, Graph, NodeKind};
use std::collections::{BTreeSet, HashMap};

/// Reductions one kernel computes together, and the outputs fused after them.
pub(crate) struct Group {
    pub members: Vec<usize>,
    pub arg_shape: Vec<usize>,
    pub axes: Vec<usize>,
    /// Outputs computed in the kernel's epilogue (over the kept elements).
    pub epilogue: Vec<usize>,
    pub epi_shape: Option<Vec<usize>>,
}

/// Pass 2: the reductions every node depends on, itself included when it is one.
pub(crate) fn reduction_deps(g: &Graph) -> Vec<BTreeSet<usize>> {
    let mut red_deps: Vec<BTreeSet<usize>> = Vec::with_capacity(g.nodes.len());
    for (i, n) in g.nodes.iter().enumerate() {
        let mut s = BTreeSet::new();
        for a in node_args(&n.kind) {
            s.extend(red_deps[a.index()].iter().copied());
        }
        if matches!(n.kind, NodeKind::Reduce { .. }) {
            s.insert(i);
        }
        red_deps.push(s);
    }
    red_deps
}

/// Pass 3: the reduction groups, in an order where every group comes after those it reads;
/// and the group of each reduction node.
pub(crate) fn reduction_groups(
    g: &Graph,
    shapes: &[Vec<usize>],
    red_deps: &[BTreeSet<usize>],
) -> (Vec<Group>, HashMap<usize, usize>) {
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let NodeKind::Reduce { arg, axes, .. } = &n.kind else {
            continue;
        };
        let deps = &red_deps[arg.index()];
        let min_group = deps
            .iter()
            .filter_map(|d| group_of.get(d))
            .map(|&gi| gi + 1)
            .max()
            .unwrap_or(0);
        let arg_shape = &shapes[arg.index()];
        let found = (min_group..groups.len()).find(|&gi| {
            let gr = &groups[gi];
            &gr.arg_shape == arg_shape
                && &gr.axes == axes
                && !gr.members.iter().any(|m| deps.contains(m))
        });
        let gi = match found {
            Some(gi) => gi,
            None => {
                groups.push(Group {
                    members: Vec::new(),
                    arg_shape: arg_shape.clone(),
                    axes: axes.clone(),
                    epilogue: Vec::new(),
                    epi_shape: None,
                });
                groups.len() - 1
            }
        };
        groups[gi].members.push(i);
        group_of.insert(i, gi);
    }
    (groups, group_of)
}

/// The reductions a node's elementwise cone reaches (stopping at reductions), and whether the
/// cone reads the node itself when it is a reduction.
pub(crate) fn cone_reductions(g: &Graph, root: usize, out: &mut BTreeSet<usize>) {
    let mut stack = vec![root];
    let mut seen = BTreeSet::new();
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue;
        }
        if let NodeKind::Reduce { .. } = g.nodes[n].kind {
            out.insert(n);
            continue;
        }
        for a in node_args(&g.nodes[n].kind) {
            stack.push(a.index());
        }
    }
}
