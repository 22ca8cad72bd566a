//! The planner: shapes, reduction groups, epilogue fusion, elementwise kernels, intermediate
//! buffers. Its result, [`Plan`], is plain data: kernels with their inputs, outputs, bytes
//! moved, CUDA launches (grid, block, parameter list) and the program each one runs.

use crate::cuda;
use crate::error::{FusionError, Result};
use crate::graph::{node_args, Graph, NodeKind, ReduceKind};
use crate::ops::Op;
use cunumpy_core::dtype::DType;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

/// Knobs of the planner.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanOptions {
    /// Prefix of the generated kernel names (a C identifier is made of it).
    pub name: String,
    /// Streaming multiprocessors of the target GPU (sizes the grids; 132 on an H200).
    pub sm_count: u32,
    /// Threads per block of every launch (a multiple of 32, at most 1024).
    pub block: u32,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            name: "fused".into(),
            sm_count: 132,
            block: 256,
        }
    }
}

/// Shape and dtype of an array of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorSpec {
    pub shape: Vec<usize>,
    pub dtype: DType,
}

impl TensorSpec {
    pub fn size(&self) -> usize {
        self.shape.iter().product()
    }
    pub fn nbytes(&self) -> usize {
        self.size() * self.dtype.itemsize()
    }
}

/// Something a kernel reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operand {
    Input(usize),
    Output(usize),
    /// A buffer of the plan's workspace (`Plan::buffers[i]`).
    Buffer(usize),
    Scalar(usize),
}

/// An intermediate buffer inside the plan's one workspace allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferSpec {
    /// Byte offset in the workspace (256-aligned); buffers whose lifetimes do not overlap
    /// share bytes.
    pub offset: usize,
    pub dtype: DType,
    pub elements: usize,
    pub purpose: String,
    /// First and last kernel (indices) that use it.
    pub live: (usize, usize),
}

impl BufferSpec {
    pub fn bytes(&self) -> usize {
        self.elements * self.dtype.itemsize()
    }
}

/// How a reduction kernel maps outputs to threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Few outputs, long reductions: `blocks_per_output` blocks per output write partials to a
    /// workspace buffer, then a second launch combines them in a fixed order (deterministic).
    Split { blocks_per_output: usize },
    /// Reduced axes innermost: one warp per output, warp-shuffle combine.
    WarpPerRow,
    /// Kept axes innermost (column reductions): one thread per output, sequential over k.
    ThreadPerOutput,
}

/// What a kernel does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelKind {
    Elementwise {
        elements: usize,
    },
    Reduction {
        strategy: Strategy,
        /// Number of outputs of each reduction (kept elements).
        outputs: usize,
        /// Elements reduced into each output.
        reduced: usize,
    },
}

/// The value of one kernel parameter at launch.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    /// Device pointer of input array `i`.
    Input(usize),
    /// Device pointer of output array `i`.
    Output(usize),
    /// Workspace base pointer plus this byte offset.
    Workspace { offset: usize },
    /// Scalar parameter `i`, converted to the parameter's C type.
    Scalar(usize),
    /// An integer known at plan time (sizes, strides), of the parameter's C type (`int` or
    /// `long long`).
    Int(i64),
}

/// One parameter of a launch, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    /// The C declaration type (`const double*`, `int`, `long long`, `float`, ...).
    pub ctype: String,
    pub value: ParamValue,
}

/// One CUDA launch: kernel name in [`Plan::cuda_source`], grid, block and parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub name: String,
    pub grid: u32,
    pub block: u32,
    pub shared_bytes: u32,
    pub params: Vec<Param>,
}

/// One fused kernel of a plan.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    pub kind: KernelKind,
    pub reads: Vec<Operand>,
    pub writes: Vec<Operand>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// The table ops (and reductions) fused into it, by name.
    pub fused_ops: Vec<String>,
    /// One launch, or two for a split reduction (partials, then the final combine).
    pub launches: Vec<Launch>,
    /// This kernel's CUDA C (without the shared preamble).
    pub source: String,
    pub(crate) body: Body,
    /// Its compiled CPU loops (main program, reduction epilogue), found on first CPU run.
    pub(crate) host_loops: [crate::host_loops::LoopSlot; 2],
}

/// Where a program leaf comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum LeafSrc {
    Input(usize),
    Output(usize),
    Buffer(usize),
    Scalar(usize),
    /// Result `j` of the kernel's own reductions (epilogues only).
    Reduced(usize),
}

#[derive(Clone, Debug)]
pub(crate) struct Leaf {
    pub src: LeafSrc,
    /// Element strides over the program's (collapsed) space; 0 = broadcast.
    pub strides: Vec<usize>,
}

#[derive(Clone, Debug)]
pub(crate) enum RegKind {
    Leaf(Leaf),
    Op { op: Op, args: Vec<usize> },
    Cast { arg: usize },
}

#[derive(Clone, Debug)]
pub(crate) struct Reg {
    pub kind: RegKind,
    pub dtype: DType,
}

/// Straight-line code over registers, evaluated at every point of a space.
#[derive(Clone, Debug, Default)]
pub(crate) struct Program {
    pub regs: Vec<Reg>,
}

/// An iteration space: dims of size 1 dropped, adjacent compatible dims collapsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Space {
    pub dims: Vec<usize>,
    pub reduced: Vec<bool>,
}

impl Space {
    pub fn size(&self) -> usize {
        self.dims.iter().product()
    }
    pub fn kept_size(&self) -> usize {
        self.dims
            .iter()
            .zip(&self.reduced)
            .filter(|(_, r)| !**r)
            .map(|(d, _)| *d)
            .product()
    }
    pub fn reduced_size(&self) -> usize {
        self.dims
            .iter()
            .zip(&self.reduced)
            .filter(|(_, r)| **r)
            .map(|(d, _)| *d)
            .product()
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Store {
    pub reg: usize,
    pub dst: Operand,
}

#[derive(Clone, Debug)]
pub(crate) struct RedSpec {
    pub kind: ReduceKind,
    /// Register of the main program holding the value to accumulate (accumulator dtype).
    pub reg: usize,
    pub acc: DType,
    pub out: DType,
}

#[derive(Clone, Debug)]
pub(crate) struct RedBody {
    pub space: Space,
    pub prog: Program,
    pub reds: Vec<RedSpec>,
    pub m: usize,
    pub k: usize,
    pub epi_space: Space,
    pub epi: Program,
    pub stores: Vec<Store>,
    pub strategy: Strategy,
    /// Split strategy: workspace buffer of the partials of each reduction.
    pub partials: Vec<usize>,
}

#[derive(Clone, Debug)]
pub(crate) enum Body {
    Elementwise {
        space: Space,
        prog: Program,
        stores: Vec<Store>,
    },
    Reduction(Box<RedBody>),
}

/// A plan: the graph lowered for concrete input shapes.
#[derive(Clone, Debug)]
pub struct Plan {
    pub options: PlanOptions,
    pub inputs: Vec<TensorSpec>,
    /// Declared scalar parameters: (dtype passed, weak).
    pub scalars: Vec<(DType, bool)>,
    pub outputs: Vec<TensorSpec>,
    pub kernels: Vec<Kernel>,
    pub buffers: Vec<BufferSpec>,
    /// Bytes of the one workspace allocation the buffers live in.
    pub workspace_bytes: usize,
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

fn drop_ones(s: &[usize]) -> Vec<usize> {
    s.iter().copied().filter(|&d| d != 1).collect()
}

fn node_label(g: &Graph, n: usize) -> String {
    match &g.nodes[n].kind {
        NodeKind::Op { op, .. } => op.name().to_string(),
        NodeKind::Cast { .. } => format!("astype({})", g.nodes[n].dtype),
        NodeKind::Reduce { kind, .. } => kind.name().to_string(),
        NodeKind::Input { index } => format!("in{index}"),
        NodeKind::Scalar { index } => format!("s{index}"),
    }
}

/// The reductions a node's elementwise cone reaches (stopping at reductions), and whether the
/// cone reads the node itself when it is a reduction.
fn cone_reductions(g: &Graph, root: usize, out: &mut BTreeSet<usize>) {
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

struct Group {
    members: Vec<usize>,
    arg_shape: Vec<usize>,
    axes: Vec<usize>,
    epilogue: Vec<usize>,
    epi_shape: Option<Vec<usize>>,
}

/// Plans a graph for concrete input shapes with the default options.
pub fn plan(graph: &Graph, input_shapes: &[Vec<usize>]) -> Result<Plan> {
    plan_with_options(graph, input_shapes, &PlanOptions::default())
}

/// Plans a graph for concrete input shapes.
pub fn plan_with_options(
    graph: &Graph,
    input_shapes: &[Vec<usize>],
    options: &PlanOptions,
) -> Result<Plan> {
    let g = graph;
    if input_shapes.len() != g.inputs.len() {
        return Err(FusionError::Arguments {
            what: "plan".into(),
            expected: format!("{} input shape(s)", g.inputs.len()),
            got: format!("{}", input_shapes.len()),
        });
    }
    for (i, (s, d)) in input_shapes.iter().zip(&g.inputs).enumerate() {
        if s.len() != d.ndim {
            return Err(FusionError::Arguments {
                what: format!("plan: input {i}"),
                expected: format!("{} dimension(s)", d.ndim),
                got: format!("shape {s:?}"),
            });
        }
    }
    // 1. shapes
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
    // 2. reduction dependencies (transitive)
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
    // 3. reduction groups
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
    // 4. outputs: group members, epilogues, elementwise kernels
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
                && gr.epi_shape.as_ref().is_none_or(|s| s == &shapes[n]);
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
    // 5. materialisation of reductions read by other kernels
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
                        offset: 0,
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
    // 6. lower every kernel
    let mut kernels = Vec::with_capacity(n_kernels);
    let outputs: Vec<TensorSpec> = g
        .outputs
        .iter()
        .map(|o| TensorSpec {
            shape: shapes[o.index()].clone(),
            dtype: g.nodes[o.index()].dtype,
        })
        .collect();
    let inputs: Vec<TensorSpec> = input_shapes
        .iter()
        .zip(&g.inputs)
        .map(|(s, d)| TensorSpec {
            shape: s.clone(),
            dtype: d.dtype,
        })
        .collect();
    let empty = HashMap::new();
    for (gi, gr) in groups.iter().enumerate() {
        let internal: HashMap<usize, usize> = gr
            .members
            .iter()
            .enumerate()
            .map(|(j, &m)| (m, j))
            .collect();
        // main program
        let mut lw = Lowerer::new(g, &shapes, &empty, &sources);
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
        let mut lw = Lowerer::new(g, &shapes, &internal, &sources);
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
        let strategy = choose_strategy(&space, m, k, options);
        let mut partials = Vec::new();
        if let Strategy::Split { blocks_per_output } = strategy {
            for (j, rs) in reds.iter().enumerate() {
                partials.push(buffers.len());
                buffers.push(BufferSpec {
                    offset: 0,
                    dtype: rs.acc,
                    elements: m * blocks_per_output,
                    purpose: format!("partials of {} #{j} in kernel {gi}", rs.kind.name()),
                    live: (gi, gi),
                });
            }
        }
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
            partials,
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
    for (shape, outs) in &elementwise {
        let mut lw = Lowerer::new(g, &shapes, &empty, &sources);
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
    // 7. workspace: first-fit reuse of bytes between buffers whose lifetimes do not overlap
    let mut order: Vec<usize> = (0..buffers.len()).collect();
    order.sort_by_key(|&b| (buffers[b].live.0, std::cmp::Reverse(buffers[b].bytes())));
    let mut placed: Vec<usize> = Vec::new();
    let mut workspace_bytes = 0usize;
    for b in order {
        let size = buffers[b].bytes().max(1).div_ceil(256) * 256;
        let mut offset = 0usize;
        loop {
            let clash = placed.iter().find(|&&p| {
                let q = &buffers[p];
                let qsize = q.bytes().max(1).div_ceil(256) * 256;
                let overlap_time = q.live.0 <= buffers[b].live.1 && buffers[b].live.0 <= q.live.1;
                overlap_time && q.offset < offset + size && offset < q.offset + qsize
            });
            match clash {
                Some(&p) => {
                    let q = &buffers[p];
                    offset = q.offset + q.bytes().max(1).div_ceil(256) * 256;
                }
                None => break,
            }
        }
        buffers[b].offset = offset;
        workspace_bytes = workspace_bytes.max(offset + size);
        placed.push(b);
    }
    let mut plan = Plan {
        options: options.clone(),
        inputs,
        scalars: g.scalars.iter().map(|s| (s.dtype, s.weak)).collect(),
        outputs,
        kernels,
        buffers,
        workspace_bytes,
    };
    // 8. bytes moved, reads/writes, CUDA source and launches
    for ki in 0..plan.kernels.len() {
        let (reads, writes) = operands_of(&plan.kernels[ki].body);
        let size_of = |o: &Operand| -> u64 {
            match o {
                Operand::Input(i) => plan.inputs[*i].nbytes() as u64,
                Operand::Output(i) => plan.outputs[*i].nbytes() as u64,
                Operand::Buffer(b) => plan.buffers[*b].bytes() as u64,
                Operand::Scalar(_) => 0,
            }
        };
        let partial_bytes: u64 = match &plan.kernels[ki].body {
            Body::Reduction(rb) => rb
                .partials
                .iter()
                .map(|&b| plan.buffers[b].bytes() as u64)
                .sum(),
            Body::Elementwise { .. } => 0,
        };
        let bytes_read = reads.iter().map(size_of).sum::<u64>() + partial_bytes;
        let bytes_written = writes.iter().map(size_of).sum::<u64>() + partial_bytes;
        let (source, launches) = cuda::generate(&plan, ki);
        let k = &mut plan.kernels[ki];
        k.reads = reads;
        k.writes = writes;
        k.bytes_read = bytes_read;
        k.bytes_written = bytes_written;
        k.source = source;
        k.launches = launches;
    }
    Ok(plan)
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
        launches: Vec::new(),
        source: String::new(),
        body,
        host_loops: Default::default(),
    }
}

fn choose_strategy(space: &Space, m: usize, k: usize, o: &PlanOptions) -> Strategy {
    // 16 blocks of 256 threads per SM: enough loads in flight to stream at the read rate
    let target = (o.sm_count as usize * 16).max(1);
    let split = |m: usize| Strategy::Split {
        blocks_per_output: target.div_ceil(m.max(1)).clamp(1, k.div_ceil(1024).max(1)),
    };
    let innermost_reduced = space.reduced.last().copied().unwrap_or(true);
    if innermost_reduced {
        if m >= 2048 || k <= 2048 {
            Strategy::WarpPerRow
        } else {
            split(m)
        }
    } else if m >= 65536 || k <= 64 {
        Strategy::ThreadPerOutput
    } else {
        split(m)
    }
}

/// A C identifier made of a name (`<lambda>` becomes `_lambda_`).
pub fn c_ident(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

fn prog_reads(p: &Program, out: &mut BTreeSet<Operand>) {
    for r in &p.regs {
        if let RegKind::Leaf(l) = &r.kind {
            match l.src {
                LeafSrc::Input(i) => out.insert(Operand::Input(i)),
                LeafSrc::Output(i) => out.insert(Operand::Output(i)),
                LeafSrc::Buffer(b) => out.insert(Operand::Buffer(b)),
                LeafSrc::Scalar(i) => out.insert(Operand::Scalar(i)),
                LeafSrc::Reduced(_) => false,
            };
        }
    }
}

fn operands_of(b: &Body) -> (Vec<Operand>, Vec<Operand>) {
    let mut reads = BTreeSet::new();
    let mut writes = BTreeSet::new();
    match b {
        Body::Elementwise { prog, stores, .. } => {
            prog_reads(prog, &mut reads);
            writes.extend(stores.iter().map(|s| s.dst));
        }
        Body::Reduction(rb) => {
            prog_reads(&rb.prog, &mut reads);
            prog_reads(&rb.epi, &mut reads);
            writes.extend(rb.stores.iter().map(|s| s.dst));
        }
    }
    (reads.into_iter().collect(), writes.into_iter().collect())
}

impl Plan {
    /// The CUDA C of every kernel of the plan, after one shared preamble of helpers. Each kernel
    /// is a plain `extern "C" __global__` function named as in [`Launch::name`].
    pub fn cuda_source(&self) -> String {
        let mut s = String::from(cuda::PREAMBLE);
        if cuda::uses_complex(self) {
            s.push_str(cuda::COMPLEX_PREAMBLE);
        }
        for k in &self.kernels {
            s.push('\n');
            s.push_str(&k.source);
        }
        s
    }

    pub fn bytes_read(&self) -> u64 {
        self.kernels.iter().map(|k| k.bytes_read).sum()
    }

    pub fn bytes_written(&self) -> u64 {
        self.kernels.iter().map(|k| k.bytes_written).sum()
    }

    /// A readable description: kernels, what they read and write, bytes moved, launches.
    pub fn explain(&self) -> String {
        let mut s = String::new();
        let name_of = |o: &Operand| -> String {
            match o {
                Operand::Input(i) => {
                    let t = &self.inputs[*i];
                    format!("in{i}: {}{:?}", t.dtype, t.shape)
                }
                Operand::Output(i) => {
                    let t = &self.outputs[*i];
                    format!("out{i}: {}{:?}", t.dtype, t.shape)
                }
                Operand::Buffer(b) => {
                    let t = &self.buffers[*b];
                    format!("buf{b}: {}[{}]", t.dtype, t.elements)
                }
                Operand::Scalar(i) => format!("s{i}: {}", self.scalars[*i].0),
            }
        };
        let _ = writeln!(
            s,
            "plan `{}`: {} kernel(s), {} launch(es), workspace {} bytes",
            self.options.name,
            self.kernels.len(),
            self.kernels.iter().map(|k| k.launches.len()).sum::<usize>(),
            self.workspace_bytes
        );
        for (i, k) in self.kernels.iter().enumerate() {
            let what = match &k.kind {
                KernelKind::Elementwise { elements } => {
                    format!("elementwise over {elements} element(s)")
                }
                KernelKind::Reduction {
                    strategy,
                    outputs,
                    reduced,
                } => format!(
                    "reduction: {outputs} output(s) x {reduced} reduced element(s), {}",
                    match strategy {
                        Strategy::Split { blocks_per_output } => format!(
                            "split into {blocks_per_output} block(s) per output + final combine"
                        ),
                        Strategy::WarpPerRow => "one warp per output".into(),
                        Strategy::ThreadPerOutput => "one thread per output".into(),
                    }
                ),
            };
            let _ = writeln!(s, "kernel {i} `{}`: {what}", k.name);
            let _ = writeln!(s, "  fuses: {}", k.fused_ops.join(", "));
            let _ = writeln!(
                s,
                "  reads: {}",
                k.reads.iter().map(name_of).collect::<Vec<_>>().join(", ")
            );
            let _ = writeln!(
                s,
                "  writes: {}",
                k.writes.iter().map(name_of).collect::<Vec<_>>().join(", ")
            );
            let _ = writeln!(
                s,
                "  bytes: {} read, {} written",
                k.bytes_read, k.bytes_written
            );
            for l in &k.launches {
                let _ = writeln!(
                    s,
                    "  launch {}<<<{}, {}>>>({})",
                    l.name,
                    l.grid,
                    l.block,
                    l.params
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        for (b, buf) in self.buffers.iter().enumerate() {
            let _ = writeln!(
                s,
                "buf{b}: {} x {} at workspace offset {} (kernels {}..={}): {}",
                buf.elements, buf.dtype, buf.offset, buf.live.0, buf.live.1, buf.purpose
            );
        }
        let _ = writeln!(
            s,
            "total: {} bytes read, {} bytes written",
            self.bytes_read(),
            self.bytes_written()
        );
        s
    }
}
