//! Pass 4 of the planner: where each output is computed: as a reduction group's member, in a
//! group's epilogue (an elementwise function of its results over the kept elements), or in an
//! elementwise kernel over its shape.

use crate::ir::graph::{node_args, Graph, NodeKind};
use crate::plan::groups::{cone_reductions, Group};
use crate::plan::shapes::drop_ones;
use std::collections::{BTreeSet, HashMap};

/// Puts the outputs that are not group members into epilogues (recorded in `groups`) or
/// elementwise kernels; returns the elementwise kernels as (shape, output indices).
pub(crate) fn place_outputs(
    g: &Graph,
    shapes: &[Vec<usize>],
    groups: &mut [Group],
    group_of: &HashMap<usize, usize>,
) -> Vec<(Vec<usize>, Vec<usize>)> {
    let mut elementwise: Vec<(Vec<usize>, Vec<usize>)> = Vec::new(); // (shape, output indices)
    for (oi, o) in g.outputs.iter().enumerate() {
        let n = o.index();
        if group_of.contains_key(&n) {
            continue;
        }
        let mut reds = BTreeSet::new();
        cone_reductions(g, n, &mut reds);
        let target = reds.iter().filter_map(|r| group_of.get(r)).max().copied();
        if let Some(gi) = target {
            let gr = &mut groups[gi];
            let kept: Vec<usize> = (0..gr.arg_shape.len())
                .filter(|x| !gr.axes.contains(x))
                .map(|x| gr.arg_shape[x])
                .collect();
            let fits = drop_ones(&shapes[n]) == drop_ones(&kept)
                && gr.epi_shape.as_ref().is_none_or(|s| s == &shapes[n])
                && !views_a_reduction(g, n);
            if fits {
                gr.epi_shape = Some(shapes[n].clone());
                gr.epilogue.push(oi);
                continue;
            }
        }
        match elementwise.iter_mut().find(|(s, _)| s == &shapes[n]) {
            Some((_, outs)) => outs.push(oi),
            None => elementwise.push((shapes[n].clone(), vec![oi])),
        }
    }
    elementwise
}

/// Whether the elementwise cone of `root` indexes a reduction's result (a view or a gather of
/// it): an epilogue computes one kept point per thread, so such an output reads the
/// reduction from memory in a later kernel instead.
fn views_a_reduction(g: &Graph, root: usize) -> bool {
    let mut stack = vec![root];
    let mut seen = BTreeSet::new();
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue;
        }
        match &g.nodes[n].kind {
            NodeKind::Reduce { .. } => {}
            NodeKind::View { arg, .. } | NodeKind::Gather { arg, .. } => {
                let mut reds = BTreeSet::new();
                cone_reductions(g, arg.index(), &mut reds);
                if !reds.is_empty() {
                    return true;
                }
                stack.extend(node_args(&g.nodes[n].kind).iter().map(|a| a.index()));
            }
            k => stack.extend(node_args(k).iter().map(|a| a.index())),
        }
    }
    false
}
