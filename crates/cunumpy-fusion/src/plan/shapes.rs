//! Pass 1 of the planner: the shape of every node, with NumPy broadcasting and the shapes
//! reductions keep.

use crate::error::{FusionError, Result};
use crate::ir::graph::{Graph, NodeKind, ReduceKind};

/// The shape of every node of `g` for these input shapes.
pub(crate) fn node_shapes(g: &Graph, input_shapes: &[Vec<usize>]) -> Result<Vec<Vec<usize>>> {
    let mut shapes: Vec<Vec<usize>> = Vec::with_capacity(g.nodes.len());
    for n in &g.nodes {
        let s = match &n.kind {
            NodeKind::Input { index } => input_shapes[*index].clone(),
            NodeKind::Scalar { .. } => Vec::new(),
            NodeKind::Cast { arg } => shapes[arg.index()].clone(),
            NodeKind::Op { op, args } => {
                let mut s: Vec<usize> = Vec::new();
                for a in args {
                    s = broadcast(op.name(), &s, &shapes[a.index()])?;
                }
                s
            }
            NodeKind::Reduce {
                kind,
                arg,
                axes,
                keepdims,
            } => {
                let a = &shapes[arg.index()];
                let k: usize = axes.iter().map(|&x| a[x]).product();
                let m: usize = (0..a.len())
                    .filter(|x| !axes.contains(x))
                    .map(|x| a[x])
                    .product();
                if k == 0 && m > 0 && matches!(kind, ReduceKind::Min | ReduceKind::Max) {
                    return Err(FusionError::EmptyReduction {
                        op: kind.name().into(),
                    });
                }
                (0..a.len())
                    .filter_map(|x| {
                        if axes.contains(&x) {
                            keepdims.then_some(1)
                        } else {
                            Some(a[x])
                        }
                    })
                    .collect()
            }
        };
        shapes.push(s);
    }
    Ok(shapes)
}

fn broadcast(op: &str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(FusionError::Broadcast {
                op: op.to_string(),
                a: a.to_vec(),
                b: b.to_vec(),
            });
        };
    }
    Ok(out)
}

pub(crate) fn drop_ones(s: &[usize]) -> Vec<usize> {
    s.iter().copied().filter(|&d| d != 1).collect()
}
