//! What the interpreter and the compiled loops share, so that both fold in one order and
//! read one environment: the block and reduction-chunk sizes, the per-kernel data
//! environment, a program prepared for a space, the reduction combine and a task's partial
//! accumulators.

use crate::error::FusionError;
use crate::ir::graph::ReduceKind;
use crate::plan::{LeafSrc, Program, RegKind};
use crate::scalar::elem::{Column, Data, Elem, Sv};

/// Elements evaluated per op call: 32 KiB per float64 column, L2-resident, large enough that the
/// per-block interpretation cost is small (2 cores, 10^7 float64 a*b+c*d-2.5*a: 18.2 GB/s with
/// 1024, 19.4 with 4096).
pub const BLOCK: usize = 4096;

/// Elements per parallel task of a reduction (fixed: results do not depend on thread count);
/// small enough that a compiled loop's groups of up to 16 interleaved chunks still balance
/// over the cores. Not a power of two: the chunks a compiled loop reads at once then start at
/// different offsets within a page, so they do not all fall into the same cache sets (with
/// 4 * BLOCK exactly, 16 streams of one float64 array ran at 0.66x a two-thread memcpy).
/// The extra 96 points are whole tiles of 32 and whole groups of 8.
pub(crate) const RED_CHUNK: usize = 4 * BLOCK + 96;

pub(crate) fn internal(what: &str) -> FusionError {
    FusionError::Arguments {
        what: format!("cpu executor: {what}"),
        expected: "a consistent plan".into(),
        got: "a mismatch".into(),
    }
}

/// Where each leaf's data comes from during one kernel.
pub(crate) struct Env<'a> {
    pub(crate) inputs: Vec<Data<'a>>,
    pub(crate) outputs: Vec<Option<Data<'a>>>,
    pub(crate) buffers: Vec<Option<Data<'a>>>,
    pub(crate) reduced: Vec<Data<'a>>,
    pub(crate) scalars: &'a [Sv],
}

impl<'a> Env<'a> {
    pub(crate) fn data(&self, src: LeafSrc) -> Option<Data<'a>> {
        match src {
            LeafSrc::Input(i) => self.inputs.get(i).copied(),
            LeafSrc::Output(i) => self.outputs.get(i).copied().flatten(),
            LeafSrc::Buffer(b) => self.buffers.get(b).copied().flatten(),
            LeafSrc::Reduced(j) => self.reduced.get(j).copied(),
            LeafSrc::Scalar(_) => None,
        }
    }
}

/// A program prepared for one space: dims and each leaf's strides over them.
pub(crate) struct Prepared<'p> {
    pub(crate) prog: &'p Program,
    pub(crate) dims: Vec<usize>,
    pub(crate) strides: Vec<Vec<isize>>,
    /// Each leaf's element offset (0 for other registers).
    pub(crate) offsets: Vec<usize>,
    pub(crate) contiguous: Vec<isize>,
}

impl<'p> Prepared<'p> {
    pub(crate) fn new(prog: &'p Program, dims: &[usize], perm: Option<&[usize]>) -> Self {
        let (dims, strides) = match perm {
            None => (
                dims.to_vec(),
                prog.regs
                    .iter()
                    .map(|r| match &r.kind {
                        RegKind::Leaf(l) => l.strides.clone(),
                        _ => Vec::new(),
                    })
                    .collect(),
            ),
            Some(p) => (
                p.iter().map(|&j| dims[j]).collect(),
                prog.regs
                    .iter()
                    .map(|r| match &r.kind {
                        RegKind::Leaf(l) if !l.strides.is_empty() => {
                            p.iter().map(|&j| l.strides[j]).collect()
                        }
                        _ => Vec::new(),
                    })
                    .collect(),
            ),
        };
        let contiguous = crate::plan::contiguous_istrides(&dims);
        let offsets = prog
            .regs
            .iter()
            .map(|r| match &r.kind {
                RegKind::Leaf(l) => l.offset,
                _ => 0,
            })
            .collect();
        Prepared {
            prog,
            dims,
            strides,
            offsets,
            contiguous,
        }
    }
}

#[inline(always)]
pub(crate) fn combine<T: Elem>(kind: ReduceKind, a: T, b: T) -> T {
    match kind {
        ReduceKind::Sum | ReduceKind::Mean { .. } | ReduceKind::Any => a.add_(b),
        ReduceKind::Prod | ReduceKind::All => a.mul_(b),
        ReduceKind::Min => a.min_(b),
        ReduceKind::Max => a.max_(b),
    }
}

/// Partial accumulators of one task: per reduction, one value per output of its m range.
pub(crate) type Partial = Vec<Column>;
