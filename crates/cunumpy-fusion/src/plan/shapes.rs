//! Pass 1 of the planner: the shape of every node, with NumPy broadcasting and the shapes
//! reductions keep.

use crate::error::{FusionError, Result};
use crate::ir::graph::{Graph, IndexItem, NodeKind, ReduceKind};

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
            NodeKind::View { arg, items } => resolve_index(&shapes[arg.index()], items)?
                .iter()
                .filter_map(|r| match r {
                    Resolved::Range { len, .. } => Some(*len),
                    Resolved::New => Some(1),
                    Resolved::Fixed(_) => None,
                })
                .collect(),
            NodeKind::Gather { arg, index, axis } => {
                let a = &shapes[arg.index()];
                let mut s = a[..*axis].to_vec();
                s.extend_from_slice(&shapes[index.index()]);
                s.extend_from_slice(&a[*axis + 1..]);
                if a[*axis] == 0 && s.iter().product::<usize>() > 0 {
                    return Err(FusionError::Index {
                        op: "gather".into(),
                        reason: format!(
                            "cannot take from an empty axis {axis} (of size 0) with a \
                             non-empty index"
                        ),
                    });
                }
                s
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

/// One item of a basic index resolved against the argument's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// A dimension of the view: argument coordinate `start + step * i` for `i < len`.
    Range { start: i64, step: i64, len: usize },
    /// A dropped dimension, at this argument coordinate.
    Fixed(i64),
    /// A new axis of length 1 (no argument dimension).
    New,
}

/// Resolves a view's items (one `Slice`/`Int` per dimension of `shape`, `NewAxis`
/// anywhere) with Python's rules: `slice.indices` for slices, negative integers from the end,
/// an integer out of range an `IndexError`.
pub(crate) fn resolve_index(shape: &[usize], items: &[IndexItem]) -> Result<Vec<Resolved>> {
    let mut out = Vec::with_capacity(items.len());
    let mut d = 0;
    for it in items {
        let axis = d;
        let len = || -> Result<i64> {
            shape
                .get(axis)
                .map(|&n| n as i64)
                .ok_or_else(|| FusionError::Index {
                    op: "index".into(),
                    reason: format!(
                        "too many indices for array: array is {}-dimensional",
                        shape.len()
                    ),
                })
        };
        match *it {
            IndexItem::NewAxis => out.push(Resolved::New),
            IndexItem::Ellipsis => {
                return Err(FusionError::Arguments {
                    what: "index".into(),
                    expected: "an index with its ellipsis expanded".into(),
                    got: "`...`".into(),
                })
            }
            IndexItem::Int(i) => {
                let n = len()?;
                let j = if i < 0 { i + n } else { i };
                if j < 0 || j >= n {
                    return Err(FusionError::Index {
                        op: "index".into(),
                        reason: format!("index {i} is out of bounds for axis {axis} with size {n}"),
                    });
                }
                out.push(Resolved::Fixed(j));
                d += 1;
            }
            IndexItem::Slice { start, stop, step } => {
                let n = len()?;
                let (lo, hi) = if step > 0 { (0, n) } else { (-1, n - 1) };
                let norm = |v: Option<i64>, default: i64| match v {
                    None => default,
                    Some(v) if v < 0 => (v + n).max(lo),
                    Some(v) => v.min(hi),
                };
                let (s0, s1) = if step > 0 {
                    (norm(start, 0), norm(stop, n))
                } else {
                    (norm(start, n - 1), norm(stop, -1))
                };
                let count = if step > 0 {
                    if s1 > s0 {
                        (s1 - s0 + step - 1) / step
                    } else {
                        0
                    }
                } else if s0 > s1 {
                    (s0 - s1 + (-step) - 1) / (-step)
                } else {
                    0
                };
                out.push(Resolved::Range {
                    start: s0,
                    step,
                    len: count as usize,
                });
                d += 1;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic
mod tests {
    use super::*;

    fn slice(start: Option<i64>, stop: Option<i64>, step: i64) -> IndexItem {
        IndexItem::Slice { start, stop, step }
    }

    /// Python's `range(n)[start:stop:step]`, by brute force.
    fn python(n: i64, start: Option<i64>, stop: Option<i64>, step: i64) -> Vec<i64> {
        let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
        let (s0, s1) = if step > 0 {
            (
                start.map_or(0, |v| clamp(if v < 0 { v + n } else { v }, 0, n)),
                stop.map_or(n, |v| clamp(if v < 0 { v + n } else { v }, 0, n)),
            )
        } else {
            (
                start.map_or(n - 1, |v| clamp(if v < 0 { v + n } else { v }, -1, n - 1)),
                stop.map_or(-1, |v| clamp(if v < 0 { v + n } else { v }, -1, n - 1)),
            )
        };
        let mut out = Vec::new();
        let mut i = s0;
        while (step > 0 && i < s1) || (step < 0 && i > s1) {
            out.push(i);
            i += step;
        }
        out
    }

    #[test]
    fn slices_resolve_as_python_does() {
        let bounds = [
            None,
            Some(-7),
            Some(-3),
            Some(-1),
            Some(0),
            Some(1),
            Some(2),
            Some(5),
            Some(9),
        ];
        for n in 0..6i64 {
            for &a in &bounds {
                for &b in &bounds {
                    for step in [-3, -2, -1, 1, 2, 3] {
                        let r = resolve_index(&[n as usize], &[slice(a, b, step)]).unwrap();
                        let Resolved::Range {
                            start,
                            step: st,
                            len,
                        } = r[0]
                        else {
                            panic!("not a range")
                        };
                        let got: Vec<i64> = (0..len as i64).map(|i| start + st * i).collect();
                        assert_eq!(got, python(n, a, b, step), "n={n} {a:?}:{b:?}:{step}");
                    }
                }
            }
        }
    }

    #[test]
    fn integers_count_from_the_end_and_are_bounds_checked() {
        let r = resolve_index(
            &[4, 3],
            &[IndexItem::Int(-1), IndexItem::NewAxis, IndexItem::ALL],
        );
        assert_eq!(
            r.unwrap(),
            vec![
                Resolved::Fixed(3),
                Resolved::New,
                Resolved::Range {
                    start: 0,
                    step: 1,
                    len: 3
                }
            ]
        );
        let e = resolve_index(&[4], &[IndexItem::Int(4)]).unwrap_err();
        assert!(matches!(e, FusionError::Index { .. }), "{e}");
        assert!(e
            .to_string()
            .contains("index 4 is out of bounds for axis 0 with size 4"));
        assert!(resolve_index(&[4], &[IndexItem::Int(-5)]).is_err());
    }
}
