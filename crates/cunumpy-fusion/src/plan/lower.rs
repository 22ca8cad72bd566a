//! Pass 6 of the planner: every kernel's graph nodes lowered into straight-line programs over
//! registers, on iteration spaces with dims of size 1 dropped and compatible neighbours
//! collapsed (a reduction kernel: its main program over the reduced space, then its
//! epilogue over the kept elements), and each reduction's strategy.

use crate::error::{FusionError, Result};
use crate::ir::graph::{Graph, NodeKind};
use crate::plan::groups::Group;
use crate::plan::materialise::Materialised;
use crate::plan::shapes::drop_ones;
use crate::plan::types::{
    c_ident, Body, Kernel, KernelKind, Leaf, LeafSrc, Operand, PlanOptions, Program, RedBody,
    RedSpec, Reg, RegKind, Space, Store, Strategy,
};
use cunumpy_core::dtype::DType;
use std::collections::HashMap;

/// Lowers graph nodes into a [`Program`] over one space.
struct Lowerer<'g> {
    g: &'g Graph,
    shapes: &'g [Vec<usize>],
    /// Group members: node -> index j of `LeafSrc::Reduced(j)`.
    internal: &'g HashMap<usize, usize>,
    /// Materialised reductions of earlier kernels: node -> where to read it.
    sources: &'g HashMap<usize, Operand>,
    regs: Vec<Reg>,
    /// Shape of each leaf (`None`: contiguous over the space, the kernel's own reductions).
    leaf_shapes: Vec<Option<Vec<usize>>>,
    memo: HashMap<usize, usize>,
    leaf_memo: HashMap<LeafSrc, usize>,
    labels: Vec<String>,
}

impl<'g> Lowerer<'g> {
    fn new(
        g: &'g Graph,
        shapes: &'g [Vec<usize>],
        internal: &'g HashMap<usize, usize>,
        sources: &'g HashMap<usize, Operand>,
    ) -> Self {
        Lowerer {
            g,
            shapes,
            internal,
            sources,
            regs: Vec::new(),
            leaf_shapes: Vec::new(),
            memo: HashMap::new(),
            leaf_memo: HashMap::new(),
            labels: Vec::new(),
        }
    }

    fn leaf(&mut self, src: LeafSrc, dtype: DType, shape: Option<Vec<usize>>) -> usize {
        if let Some(r) = self.leaf_memo.get(&src) {
            return *r;
        }
        let r = self.regs.len();
        self.regs.push(Reg {
            kind: RegKind::Leaf(Leaf {
                src,
                strides: Vec::new(),
            }),
            dtype,
        });
        self.leaf_shapes.push(shape);
        self.leaf_memo.insert(src, r);
        r
    }

    fn push(&mut self, kind: RegKind, dtype: DType) -> usize {
        self.regs.push(Reg { kind, dtype });
        self.leaf_shapes.push(None);
        self.regs.len() - 1
    }

    fn cast(&mut self, r: usize, dtype: DType) -> usize {
        if self.regs[r].dtype == dtype {
            r
        } else {
            self.push(RegKind::Cast { arg: r }, dtype)
        }
    }

    fn lower(&mut self, n: usize) -> Result<usize> {
        if let Some(r) = self.memo.get(&n) {
            return Ok(*r);
        }
        let node = &self.g.nodes[n];
        let r = match &node.kind {
            NodeKind::Input { index } => self.leaf(
                LeafSrc::Input(*index),
                node.dtype,
                Some(self.shapes[n].clone()),
            ),
            NodeKind::Scalar { index } => {
                self.leaf(LeafSrc::Scalar(*index), node.dtype, Some(Vec::new()))
            }
            NodeKind::Reduce { .. } => {
                if let Some(j) = self.internal.get(&n) {
                    self.leaf(LeafSrc::Reduced(*j), node.dtype, None)
                } else {
                    let src = match self.sources.get(&n) {
                        Some(Operand::Output(i)) => LeafSrc::Output(*i),
                        Some(Operand::Buffer(b)) => LeafSrc::Buffer(*b),
                        _ => {
                            return Err(FusionError::Arguments {
                                what: "planner".into(),
                                expected: format!("a materialised result for %{n}"),
                                got: "none".into(),
                            })
                        }
                    };
                    self.leaf(src, node.dtype, Some(self.shapes[n].clone()))
                }
            }
            NodeKind::Op { op, args } => {
                let mut regs = Vec::with_capacity(args.len());
                for a in args {
                    regs.push(self.lower(a.index())?);
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
                let a = self.lower(arg.index())?;
                self.cast(a, node.dtype)
            }
        };
        self.memo.insert(n, r);
        Ok(r)
    }

    /// Computes the collapsed space and every leaf's strides over it.
    fn finish(self, space_shape: &[usize], reduced: &[bool]) -> (Space, Program, Vec<String>) {
        let r = space_shape.len();
        let mut regs = self.regs;
        // full-rank strides of each leaf
        let mut full: Vec<(usize, Vec<usize>)> = Vec::new();
        let keep: Vec<usize> = (0..r).filter(|&j| space_shape[j] != 1).collect();
        for (i, reg) in regs.iter().enumerate() {
            if !matches!(reg.kind, RegKind::Leaf(_)) {
                continue;
            }
            let strides = match &self.leaf_shapes[i] {
                Some(shape) => {
                    let lr = shape.len();
                    let mut st = vec![0usize; r];
                    let mut acc = 1usize;
                    for j in (0..r).rev() {
                        if j + lr < r {
                            break;
                        }
                        let d = shape[j + lr - r];
                        st[j] = if d == 1 { 0 } else { acc };
                        acc *= d;
                    }
                    st
                }
                None => {
                    let mut st = vec![0usize; r];
                    let mut acc = 1usize;
                    for &j in keep.iter().rev() {
                        st[j] = acc;
                        acc *= space_shape[j];
                    }
                    st
                }
            };
            full.push((i, strides));
        }
        // drop dims of size 1, then collapse compatible neighbours
        let mut dims: Vec<usize> = keep.iter().map(|&j| space_shape[j]).collect();
        let mut red: Vec<bool> = keep.iter().map(|&j| reduced[j]).collect();
        let mut st: Vec<Vec<usize>> = full
            .iter()
            .map(|(_, s)| keep.iter().map(|&j| s[j]).collect())
            .collect();
        let mut j = dims.len();
        while j > 1 {
            j -= 1;
            let (a, b) = (j - 1, j);
            let ok = red[a] == red[b]
                && st
                    .iter()
                    .all(|s| (s[a] == 0 && s[b] == 0) || (s[b] != 0 && s[a] == s[b] * dims[b]));
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
        for ((i, _), s) in full.iter().zip(st) {
            if let RegKind::Leaf(l) = &mut regs[*i].kind {
                l.strides = s;
            }
        }
        (Space { dims, reduced: red }, Program { regs }, self.labels)
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
        let mut lw = Lowerer::new(g, shapes, &empty, sources);
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
        let (space, prog, mut l) = lw.finish(&gr.arg_shape, &reduced);
        l.extend(labels);
        // epilogue program
        let mut lw = Lowerer::new(g, shapes, &internal, sources);
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
        let kept_shape: Vec<usize> = gr
            .epi_shape
            .clone()
            .unwrap_or_else(|| drop_ones(&kept_of(&gr.arg_shape, &gr.axes)));
        let epi_labels = lw.labels.clone();
        let (epi_space, epi, _) = lw.finish(&kept_shape, &vec![false; kept_shape.len()]);
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
        let mut lw = Lowerer::new(g, shapes, &empty, sources);
        let mut stores = Vec::new();
        for &oi in outs {
            let r = lw.lower(g.outputs[oi].index())?;
            stores.push(Store {
                reg: r,
                dst: Operand::Output(oi),
            });
        }
        let (space, prog, labels) = lw.finish(shape, &vec![false; shape.len()]);
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

/// How a reduction maps outputs to threads (the number of blocks per output of a split is
/// chosen per device: `Geometry`).
fn choose_strategy(space: &Space, m: usize, k: usize) -> Strategy {
    let innermost_reduced = space.reduced.last().copied().unwrap_or(true);
    if innermost_reduced {
        if m >= 2048 || k <= 2048 {
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
