//! The data of a plan: what the planner passes build and the code generators and the CPU
//! executor read. Kernels with their inputs, outputs and bytes moved, and the program each
//! one runs, over registers and collapsed iteration spaces.

use crate::ir::graph::ReduceKind;
use crate::ir::ops::Op;
use cunumpy_core::dtype::DType;
use cunumpy_core::signature::ParamKind;

/// Knobs of the planner.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanOptions {
    /// Prefix of the generated kernel names (a C identifier is made of it).
    pub name: String,
    /// Threads per block of every launch (a multiple of 32, at most 1024).
    pub block: u32,
    /// Rows each thread walks in the tiled mapping of a stencil (an elementwise kernel reading
    /// views of one array shifted along an outer axis; docs/internals/fusion.md), 0 for the
    /// flat mapping of every elementwise kernel. The binding takes it from
    /// `CUNUMPY_FUSION_STENCIL_TILES`.
    pub stencil_rows: u32,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            name: "fused".into(),
            block: 256,
            stencil_rows: cunumpy_core::config::DEFAULT_STENCIL_ROWS,
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

/// An intermediate buffer of the plan's workspace (its place in the one device allocation is
/// chosen when the plan is loaded on a device: see `Geometry`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferSpec {
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
    /// Few outputs, long reductions: several blocks per output (as many as the device's SMs
    /// call for, chosen when the plan is loaded on a device) write partials to a workspace
    /// buffer, then a second launch combines them in a fixed order (deterministic).
    Split,
    /// Reduced axes innermost: one warp per output, warp-shuffle combine.
    WarpPerRow,
    /// Reduced axes innermost, short rows (fewer than 128 reduced elements): `lanes` lanes
    /// of a warp per output (a power of two, 1 to 16), so one warp takes `32 / lanes` rows at
    /// once and each lane about four elements of its row: the warp's loads stay coalesced and
    /// several are in flight per lane, where a warp per row of 16 leaves half its lanes idle
    /// and has one load in flight (H200, max - min over 2^22 rows of 16: 0.18x the memory
    /// ceiling). One lane per row is a thread per row.
    LanesPerRow(u32),
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
    /// What it takes, as a user kernel's parameter says it: a scalar of a dtype (sizes and
    /// strides are `int` or `long long`), or a pointer to elements of a dtype (`const` when
    /// the kernel only reads them). Core's `ArgPlan` packs it; its C spelling is
    /// `codegen::cuda::param_c_type`.
    pub kind: ParamKind,
    pub value: ParamValue,
}

/// One CUDA launch of a plan loaded on a device: kernel name in its CUDA source, grid, block
/// and parameters.
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
    pub(crate) body: Body,
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
    /// Element strides over the program's (collapsed) space; 0 = broadcast, negative = a
    /// slice with a negative step.
    pub strides: Vec<isize>,
    /// Element offset of the point at the space's origin (a slice not starting at 0).
    pub offset: usize,
    /// Gathered coordinates (`a[idx]`): (register of an `Index`, element stride) terms added
    /// to the offset at every point.
    pub dynamic: Vec<(usize, isize)>,
}

#[derive(Clone, Debug)]
pub(crate) enum RegKind {
    Leaf(Leaf),
    Op {
        op: Op,
        args: Vec<usize>,
    },
    Cast {
        arg: usize,
    },
    /// An index array's value checked against the length `len` of the gathered `axis`:
    /// negative values count from the end; out of range is NumPy's `IndexError` (an error of
    /// the CPU executor, a trap on the device). Its dtype is int64.
    Index {
        arg: usize,
        len: usize,
        axis: usize,
    },
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

/// A plan: the graph lowered for concrete input shapes. Device-free: the CUDA source, the
/// launch geometry and the workspace layout come from loading it on a device
/// (`Plan::for_device`), with that device's SM count.
#[derive(Clone, Debug)]
pub struct Plan {
    pub options: PlanOptions,
    pub inputs: Vec<TensorSpec>,
    /// Declared scalar parameters: (dtype passed, weak).
    pub scalars: Vec<(DType, bool)>,
    pub outputs: Vec<TensorSpec>,
    pub kernels: Vec<Kernel>,
    /// Intermediate results that one kernel writes and a later one reads.
    pub buffers: Vec<BufferSpec>,
}

impl Plan {
    /// Bytes the kernels read (partials of split reductions, which depend on the device, not
    /// counted).
    pub fn bytes_read(&self) -> u64 {
        self.kernels.iter().map(|k| k.bytes_read).sum()
    }

    /// Bytes the kernels write (as [`Plan::bytes_read`]).
    pub fn bytes_written(&self) -> u64 {
        self.kernels.iter().map(|k| k.bytes_written).sum()
    }
}

/// Element strides of a C-contiguous array of these dims, signed (as a leaf's).
pub(crate) fn contiguous_istrides(dims: &[usize]) -> Vec<isize> {
    contiguous_strides(dims)
        .iter()
        .map(|&s| s as isize)
        .collect()
}

/// Element strides of a C-contiguous array of these dims.
pub(crate) fn contiguous_strides(dims: &[usize]) -> Vec<usize> {
    let mut st = vec![0; dims.len()];
    let mut acc = 1;
    for j in (0..dims.len()).rev() {
        st[j] = acc;
        acc *= dims[j];
    }
    st
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
