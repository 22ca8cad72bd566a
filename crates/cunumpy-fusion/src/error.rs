//! The crate's one error type. Every message names the operation it is about.

use cunumpy_core::dtype::DType;
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum FusionError {
    #[error("fuse: unknown operation `{op}`")]
    UnknownOp { op: String },
    #[error("fuse: `{op}` was given value %{value}, which this graph does not have")]
    UnknownValue { op: String, value: u32 },
    #[error("fuse: `{op}` {reason} (argument dtypes: {types:?})")]
    Type {
        op: String,
        types: Vec<DType>,
        reason: String,
    },
    #[error("fuse: `{op}` does not support dtype {dtype} yet")]
    UnsupportedDType { op: String, dtype: DType },
    #[error("fuse: `{op}`: axis {axis} is out of bounds for an array of {ndim} dimension(s)")]
    Axis {
        op: String,
        axis: isize,
        ndim: usize,
    },
    #[error("fuse: `{op}`: axis {axis} is repeated")]
    DuplicateAxis { op: String, axis: isize },
    #[error("fuse: the function returns no output")]
    NoOutputs,
    #[error("fuse: `{op}`: operands could not be broadcast together with shapes {a:?} and {b:?}")]
    Broadcast {
        op: String,
        a: Vec<usize>,
        b: Vec<usize>,
    },
    /// NumPy's `IndexError`: an index out of range, too many indices.
    #[error("fuse: `{op}`: {reason}")]
    Index { op: String, reason: String },
    #[error("fuse: `{op}`: zero-size reduction has no identity")]
    EmptyReduction { op: String },
    #[error("fuse: {what}: expected {expected}, got {got}")]
    Arguments {
        what: String,
        expected: String,
        got: String,
    },
}

pub type Result<T> = std::result::Result<T, FusionError>;
