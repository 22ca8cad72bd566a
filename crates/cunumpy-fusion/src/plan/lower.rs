//! Pass 6 of the planner: every kernel's graph nodes lowered into straight-line programs over
//! registers, on iteration spaces with dims of size 1 dropped and compatible neighbours
//! collapsed (a reduction kernel: its main program over the reduced space, then its
//! epilogue over the kept elements), and each reduction's strategy.

use crate::error::{FusionError, Result};
use crate::ir::graph::{Graph, NodeKind};
use crate::plan::groups::Group;
use crate::plan::materialise::Materialised;
use crate::plan::shapes::{drop_ones, resolve_index, Resolved};
use crate::plan::types::{
    c_ident, contiguous_strides, Body, Kernel, KernelKind, Leaf, LeafSrc, Operand, PlanOptions,
    Program, RedBody, RedSpec, Reg, RegKind, Space, Store, Strategy,
};
use cunumpy_core::dtype::DType;
use std::collections::HashMap;

/// Where one coordinate of a node comes from at a point of the kernel's space:
/// `offset + step * point[dim]`, or the constant `offset` when `dim` is `None` (a broadcast
/// dimension, an integer index). Views compose these maps; leaves turn them into strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Coord {
    dim: Option<usize>,
    step: i64,
    offset: i64,
    /// A gathered coordinate: plus `scale` times the value of this `Index` register.
    dynamic: Option<(usize, i64)>,
}

const ZERO: Coord = Coord {
    dim: None,
    step: 0,
    offset: 0,
    dynamic: None,
};

/// A node's index map: one [`Coord`] per dimension of the node.
type Map = Vec<Coord>;

/// The map of a node of `shape` read at its own place in a space of shape `space` (NumPy
/// broadcasting: dims aligned on the right, a dim of length 1 always read at 0). A node of
/// higher rank (a reduction with `keepdims` in an epilogue over the kept dims, ones dropped)
/// matches its dims other than 1 with those of the space, from the right.
fn broadcast_map(shape: &[usize], space: &[usize]) -> Map {
    let (r, rank) = (shape.len(), space.len());
    let mut map = vec![ZERO; r];
    if r <= rank {
        for (d, &n) in shape.iter().enumerate() {
            if n != 1 {
                map[d] = Coord {
                    dim: Some(d + rank - r),
                    step: 1,
                    offset: 0,
                    dynamic: None,
                };
            }
        }
    } else {
        let mut j = rank;
        for d in (0..r).rev() {
            if shape[d] == 1 {
                continue;
            }
            while j > 0 && space[j - 1] == 1 {
                j -= 1;
            }
            if j == 0 {
                break;
            }
            j -= 1;
            map[d] = Coord {
                dim: Some(j),
                step: 1,
                offset: 0,
                dynamic: None,
            };
        }
    }
    map
}

/// The map of an argument of `arg_shape` of an elementwise node whose map is `map`.
fn arg_map(map: &[Coord], arg_shape: &[usize]) -> Map {
    let skip = map.len() - arg_shape.len();
    arg_shape
        .iter()
        .enumerate()
        .map(|(e, &n)| if n == 1 { ZERO } else { map[e + skip] })
        .collect()
}

/// The map of a view's argument, from the view's map and its resolved items.
fn view_arg_map(map: &[Coord], resolved: &[Resolved]) -> Map {
    let mut out = Vec::with_capacity(resolved.len());
    let mut k = 0;
    for r in resolved {
        match *r {
            Resolved::Range { start, step, .. } => {
                let c = map[k];
                out.push(Coord {
                    dim: c.dim,
                    step: step * c.step,
                    offset: start + step * c.offset,
                    dynamic: c.dynamic.map(|(r, sc)| (r, step * sc)),
                });
                k += 1;
            }
            Resolved::Fixed(i) => out.push(Coord {
                dim: None,
                step: 0,
                offset: i,
                dynamic: None,
            }),
            Resolved::New => k += 1,
        }
    }
    out
}

/// What makes two leaves the same load: source, offset, strides and gathered terms.
type LeafKey = (LeafSrc, isize, Vec<isize>, Vec<(usize, isize)>);

/// Lowers graph nodes into a [`Program`] over one space.
struct Lowerer<'g> {
    g: &'g Graph,
    shapes: &'g [Vec<usize>],
    /// Group members: node -> index j of `LeafSrc::Reduced(j)`.
    internal: &'g HashMap<usize, usize>,
    /// Materialised reductions of earlier kernels: node -> where to read it.
    sources: &'g HashMap<usize, Operand>,
    /// Shape of the space the program runs over.
    space: Vec<usize>,
    rank: usize,
    regs: Vec<Reg>,
    memo: HashMap<(usize, Map), usize>,
    leaf_memo: HashMap<LeafKey, usize>,
    labels: Vec<String>,
}

impl<'g> Lowerer<'g> {
    fn new(
        g: &'g Graph,
        shapes: &'g [Vec<usize>],
        internal: &'g HashMap<usize, usize>,
        sources: &'g HashMap<usize, Operand>,
        space: &[usize],
    ) -> Self {
        Lowerer {
            g,
            shapes,
            internal,
            sources,
            space: space.to_vec(),
            rank: space.len(),
            regs: Vec::new(),
            memo: HashMap::new(),
            leaf_memo: HashMap::new(),
            labels: Vec::new(),
        }
    }

    /// A leaf reading an array of `shape` (C-contiguous) through `map`.
    fn leaf(
        &mut self,
        src: LeafSrc,
        dtype: DType,
        shape: &[usize],
        map: &[Coord],
    ) -> Result<usize> {
        let mut strides = vec![0isize; self.rank];
        let mut offset = 0isize;
        let mut dynamic: Vec<(usize, isize)> = Vec::new();
        match src {
            LeafSrc::Scalar(_) => {}
            LeafSrc::Reduced(_) => {
                // the kernel's own reductions, one per kept point: read where computed
                if map != broadcast_map(shape, &self.space).as_slice() {
                    return Err(FusionError::Arguments {
                        what: "planner".into(),
                        expected: "a reduction read where it is computed".into(),
                        got: "a view of it in its own kernel".into(),
                    });
                }
                let mut acc = 1isize;
                for j in (0..self.rank).rev() {
                    if self.space[j] != 1 {
                        strides[j] = acc;
                        acc *= self.space[j] as isize;
                    }
                }
            }
            _ => {
                let cs = contiguous_strides(shape);
                for (c, &s) in map.iter().zip(&cs) {
                    offset += (c.offset as isize) * s as isize;
                    if let Some(j) = c.dim {
                        strides[j] += (c.step as isize) * s as isize;
                    }
                    if let Some((r, sc)) = c.dynamic {
                        match dynamic.iter_mut().find(|t| t.0 == r) {
                            Some(t) => t.1 += sc as isize * s as isize,
                            None => dynamic.push((r, sc as isize * s as isize)),
                        }
                    }
                }
            }
        }
        let key = (src, offset, strides, dynamic);
        if let Some(r) = self.leaf_memo.get(&key) {
            return Ok(*r);
        }
        let r = self.regs.len();
        self.regs.push(Reg {
            kind: RegKind::Leaf(Leaf {
                src,
                strides: key.2.clone(),
                offset: offset.max(0) as usize,
                dynamic: key.3.clone(),
            }),
            dtype,
        });
        self.leaf_memo.insert(key, r);
        Ok(r)
    }

    fn push(&mut self, kind: RegKind, dtype: DType) -> usize {
        self.regs.push(Reg { kind, dtype });
        self.regs.len() - 1
    }

    fn cast(&mut self, r: usize, dtype: DType) -> usize {
        if self.regs[r].dtype == dtype {
            r
        } else {
            self.push(RegKind::Cast { arg: r }, dtype)
        }
    }

    /// Lowers node `n` read at its own place in the space (broadcast on the right).
    fn lower(&mut self, n: usize) -> Result<usize> {
        let map = broadcast_map(&self.shapes[n], &self.space);
        self.lower_at(n, map)
    }

    /// Lowers node `n` read through `map`.
    fn lower_at(&mut self, n: usize, map: Map) -> Result<usize> {
        let key = (n, map);
        if let Some(r) = self.memo.get(&key) {
            return Ok(*r);
        }
        let map = &key.1;
        let node = &self.g.nodes[n];
        let shape = &self.shapes[n];
        let r = match &node.kind {
            NodeKind::Input { index } => {
                self.leaf(LeafSrc::Input(*index), node.dtype, shape, map)?
            }
            NodeKind::Scalar { index } => {
                self.leaf(LeafSrc::Scalar(*index), node.dtype, &[], &[])?
            }
            NodeKind::Reduce { .. } => {
                let src = if let Some(j) = self.internal.get(&n) {
                    LeafSrc::Reduced(*j)
                } else {
                    match self.sources.get(&n) {
                        Some(Operand::Output(i)) => LeafSrc::Output(*i),
                        Some(Operand::Buffer(b)) => LeafSrc::Buffer(*b),
                        _ => {
                            return Err(FusionError::Arguments {
                                what: "planner".into(),
                                expected: format!("a materialised result for %{n}"),
                                got: "none".into(),
                            })
                        }
                    }
                };
                self.leaf(src, node.dtype, shape, map)?
            }
            NodeKind::Op { op, args } => {
                let mut regs = Vec::with_capacity(args.len());
                for a in args {
                    let m = arg_map(map, &self.shapes[a.index()]);
                    regs.push(self.lower_at(a.index(), m)?);
                }
                self.labels.push(op.name().to_string());
                self.push(
                    RegKind::Op {
                        op: *op,
                        args: regs,
                    },
                    node.dtype,
                )
            }
            NodeKind::Cast { arg } => {
                let a = self.lower_at(arg.index(), map.clone())?;
                self.cast(a, node.dtype)
            }
            NodeKind::View { arg, items } => {
                let resolved = resolve_index(&self.shapes[arg.index()], items)?;
                self.labels.push("view".to_string());
                self.lower_at(arg.index(), view_arg_map(map, &resolved))?
            }
            NodeKind::Gather { arg, index, axis } => {
                let axis = *axis;
                let ri = self.shapes[index.index()].len();
                let ir = self.lower_at(index.index(), map[axis..axis + ri].to_vec())?;
                let len = self.shapes[arg.index()][axis];
                let checked = self.push(RegKind::Index { arg: ir, len, axis }, DType::Int64);
                self.labels.push("take".to_string());
                let mut am = map[..axis].to_vec();
                am.push(Coord {
                    dim: None,
                    step: 0,
                    offset: 0,
                    dynamic: Some((checked, 1)),
                });
                am.extend_from_slice(&map[axis + ri..]);
                self.lower_at(arg.index(), am)?
            }
        };
        self.memo.insert(key, r);
        Ok(r)
    }

    /// Drops the dims of size 1 of the space and collapses compatible neighbours, fixing
    /// every leaf's strides.
    fn finish(
        self,
        space_shape: &[usize],
        reduced: &[bool],
    ) -> Result<(Space, Program, Vec<String>)> {
        let mut regs = self.regs;
        let keep: Vec<usize> = (0..space_shape.len())
            .filter(|&j| space_shape[j] != 1)
            .collect();
        let mut dims: Vec<usize> = keep.iter().map(|&j| space_shape[j]).collect();
        let mut red: Vec<bool> = keep.iter().map(|&j| reduced[j]).collect();
        let leaves: Vec<usize> = (0..regs.len())
            .filter(|&i| matches!(regs[i].kind, RegKind::Leaf(_)))
            .collect();
        let mut st: Vec<Vec<isize>> = leaves
            .iter()
            .map(|&i| match &regs[i].kind {
                RegKind::Leaf(l) => keep.iter().map(|&j| l.strides[j]).collect(),
                _ => Vec::new(),
            })
            .collect();
        let mut j = dims.len();
        while j > 1 {
            j -= 1;
            let (a, b) = (j - 1, j);
            let ok = red[a] == red[b]
                && st.iter().all(|s| {
                    (s[a] == 0 && s[b] == 0) || (s[b] != 0 && s[a] == s[b] * dims[b] as isize)
                });
            if ok {
                dims[a] *= dims[b];
                dims.remove(b);
                red.remove(b);
                for s in st.iter_mut() {
                    s[a] = s[b];
                    s.remove(b);
                }
            }
        }
        for (&i, s) in leaves.iter().zip(st) {
            if let RegKind::Leaf(l) = &mut regs[i].kind {
                l.strides = s;
            }
        }
        Ok((Space { dims, reduced: red }, Program { regs }, self.labels))
    }
}

/// Lowers the reduction groups (kernels `0..groups.len()`), then the elementwise kernels.
pub(crate) fn lower_kernels(
    g: &Graph,
    shapes: &[Vec<usize>],
    groups: &[Group],
    elementwise: &[(Vec<usize>, Vec<usize>)],
    mat: &Materialised,
    options: &PlanOptions,
) -> Result<Vec<Kernel>> {
    let sources = &mat.sources;
    let group_buffer_stores = &mat.group_buffer_stores;
    let mut kernels = Vec::with_capacity(groups.len() + elementwise.len());
    let empty = HashMap::new();
    for (gi, gr) in groups.iter().enumerate() {
        let internal: HashMap<usize, usize> = gr
            .members
            .iter()
            .enumerate()
            .map(|(j, &m)| (m, j))
            .collect();
        // main program
        let mut lw = Lowerer::new(g, shapes, &empty, sources, &gr.arg_shape);
        let mut reds = Vec::new();
        let mut labels = Vec::new();
        for &m in &gr.members {
            let NodeKind::Reduce { kind, arg, .. } = &g.nodes[m].kind else {
                continue;
            };
            let (acc, out) = kind.types(g.nodes[arg.index()].dtype);
            let r = lw.lower(arg.index())?;
            let r = lw.cast(r, acc);
            reds.push(RedSpec {
                kind: *kind,
                reg: r,
                acc,
                out,
            });
            labels.push(kind.name().to_string());
        }
        let reduced: Vec<bool> = (0..gr.arg_shape.len())
            .map(|x| gr.axes.contains(&x))
            .collect();
        let (space, prog, mut l) = lw.finish(&gr.arg_shape, &reduced)?;
        l.extend(labels);
        // epilogue program
        let kept_shape: Vec<usize> = gr
            .epi_shape
            .clone()
            .unwrap_or_else(|| drop_ones(&kept_of(&gr.arg_shape, &gr.axes)));
        let mut lw = Lowerer::new(g, shapes, &internal, sources, &kept_shape);
        let mut stores = Vec::new();
        for &oi in &gr.epilogue {
            let r = lw.lower(g.outputs[oi].index())?;
            stores.push(Store {
                reg: r,
                dst: Operand::Output(oi),
            });
        }
        for (oi, o) in g.outputs.iter().enumerate() {
            if internal.contains_key(&o.index()) {
                let r = lw.lower(o.index())?;
                stores.push(Store {
                    reg: r,
                    dst: Operand::Output(oi),
                });
            }
        }
        for &(r, b) in &group_buffer_stores[gi] {
            let reg = lw.lower(r)?;
            stores.push(Store {
                reg,
                dst: Operand::Buffer(b),
            });
        }
        let epi_labels = lw.labels.clone();
        let (epi_space, epi, _) = lw.finish(&kept_shape, &vec![false; kept_shape.len()])?;
        l.extend(epi_labels);
        let m = space.kept_size();
        let k = space.reduced_size();
        let strategy = choose_strategy(&space, m, k);
        let body = Body::Reduction(Box::new(RedBody {
            space,
            prog,
            reds,
            m,
            k,
            epi_space,
            epi,
            stores,
            strategy,
        }));
        kernels.push(make_kernel(
            format!("{}_k{}", c_ident(&options.name), gi),
            KernelKind::Reduction {
                strategy,
                outputs: m,
                reduced: k,
            },
            body,
            l,
        ));
    }
    for (shape, outs) in elementwise {
        let mut lw = Lowerer::new(g, shapes, &empty, sources, shape);
        let mut stores = Vec::new();
        for &oi in outs {
            let r = lw.lower(g.outputs[oi].index())?;
            stores.push(Store {
                reg: r,
                dst: Operand::Output(oi),
            });
        }
        let (space, prog, labels) = lw.finish(shape, &vec![false; shape.len()])?;
        let elements = space.size();
        kernels.push(make_kernel(
            format!("{}_k{}", c_ident(&options.name), kernels.len()),
            KernelKind::Elementwise { elements },
            Body::Elementwise {
                space,
                prog,
                stores,
            },
            labels,
        ));
    }
    Ok(kernels)
}

fn kept_of(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    (0..shape.len())
        .filter(|x| !axes.contains(x))
        .map(|x| shape[x])
        .collect()
}

fn make_kernel(name: String, kind: KernelKind, body: Body, fused_ops: Vec<String>) -> Kernel {
    Kernel {
        name,
        kind,
        reads: Vec::new(),
        writes: Vec::new(),
        bytes_read: 0,
        bytes_written: 0,
        fused_ops,
        body,
    }
}

/// Rows shorter than this reduce with fewer than 32 lanes each (`Strategy::LanesPerRow`).
pub(crate) const SHORT_ROW: usize = 128;

/// The lanes per row of a short row of `k` elements: the largest power of two not above
/// `k / 4` (each lane takes about four elements, loaded together), at least 1, at most 16.
pub(crate) fn lanes_per_row(k: usize) -> u32 {
    let quarter = (k / 4).max(1);
    let p = 1usize << (usize::BITS - 1 - quarter.leading_zeros());
    p.min(16) as u32
}

/// How a reduction maps outputs to threads (the number of blocks per output of a split is
/// chosen per device: `Geometry`).
fn choose_strategy(space: &Space, m: usize, k: usize) -> Strategy {
    let innermost_reduced = space.reduced.last().copied().unwrap_or(true);
    if innermost_reduced {
        if k < SHORT_ROW {
            Strategy::LanesPerRow(lanes_per_row(k))
        } else if m >= 2048 || k <= 2048 {
            Strategy::WarpPerRow
        } else {
            Strategy::Split
        }
    } else if m >= 65536 || k <= 64 {
        Strategy::ThreadPerOutput
    } else {
        Strategy::Split
    }
}
