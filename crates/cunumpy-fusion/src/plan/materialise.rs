//! Pass 5 of the planner: the reductions a kernel reads from an earlier one are
//! materialised, in an output when the graph returns them, else in a workspace buffer that
//! lives from the kernel writing it to the last kernel reading it.

use crate::ir::graph::{Graph, NodeKind};
use crate::plan::groups::{cone_reductions, Group};
use crate::plan::types::{BufferSpec, Operand};
use std::collections::{BTreeSet, HashMap};

/// Where every materialised reduction is read from, the buffers, and for each group the
/// (node, buffer) pairs it stores.
pub(crate) struct Materialised {
    pub sources: HashMap<usize, Operand>,
    pub buffers: Vec<BufferSpec>,
    pub group_buffer_stores: Vec<Vec<(usize, usize)>>,
}

pub(crate) fn materialise(
    g: &Graph,
    shapes: &[Vec<usize>],
    groups: &[Group],
    group_of: &HashMap<usize, usize>,
    elementwise: &[(Vec<usize>, Vec<usize>)],
) -> Materialised {
    let n_kernels = groups.len() + elementwise.len();
    let mut external: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n_kernels];
    for (gi, gr) in groups.iter().enumerate() {
        let mut s = BTreeSet::new();
        for &m in &gr.members {
            if let NodeKind::Reduce { arg, .. } = &g.nodes[m].kind {
                cone_reductions(g, arg.index(), &mut s);
            }
        }
        for &oi in &gr.epilogue {
            cone_reductions(g, g.outputs[oi].index(), &mut s);
        }
        s.retain(|r| group_of.get(r) != Some(&gi));
        external[gi] = s;
    }
    for (ei, (_, outs)) in elementwise.iter().enumerate() {
        let mut s = BTreeSet::new();
        for &oi in outs {
            cone_reductions(g, g.outputs[oi].index(), &mut s);
        }
        external[groups.len() + ei] = s;
    }
    let mut sources: HashMap<usize, Operand> = HashMap::new();
    let mut buffers: Vec<BufferSpec> = Vec::new();
    let mut group_buffer_stores: Vec<Vec<(usize, usize)>> = vec![Vec::new(); groups.len()];
    for (ki, ext) in external.iter().enumerate() {
        for &r in ext {
            if let Some(oi) = g.outputs.iter().position(|o| o.index() == r) {
                sources.entry(r).or_insert(Operand::Output(oi));
                continue;
            }
            match sources.get(&r) {
                Some(Operand::Buffer(b)) => {
                    let b = *b;
                    buffers[b].live.1 = buffers[b].live.1.max(ki);
                }
                Some(_) => {}
                None => {
                    let gi = group_of.get(&r).copied().unwrap_or(0);
                    let b = buffers.len();
                    buffers.push(BufferSpec {
                        dtype: g.nodes[r].dtype,
                        elements: shapes[r].iter().product(),
                        purpose: format!("result of {} (%{r})", node_label(g, r)),
                        live: (gi, ki),
                    });
                    sources.insert(r, Operand::Buffer(b));
                    group_buffer_stores[gi].push((r, b));
                }
            }
        }
    }
    Materialised {
        sources,
        buffers,
        group_buffer_stores,
    }
}

fn node_label(g: &Graph, n: usize) -> String {
    match &g.nodes[n].kind {
        NodeKind::Op { op, .. } => op.name().to_string(),
        NodeKind::Cast { .. } => format!("astype({})", g.nodes[n].dtype),
        NodeKind::Reduce { kind, .. } => kind.name().to_string(),
        NodeKind::Input { index } => format!("in{index}"),
        NodeKind::Scalar { index } => format!("s{index}"),
        NodeKind::View { .. } => "view".into(),
        NodeKind::Gather { .. } => "take".into(),
    }
}
