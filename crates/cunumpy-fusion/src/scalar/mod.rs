//! Per-dtype scalar semantics, the floor every stage stands on: the element types and their
//! NumPy arithmetic (`elem`), complex numbers (`complex`), the vectorised math of the CPU
//! executor (`vmath`) and the value of a scalar parameter at call time (`value`). The op
//! table's CPU kernels are written in these terms.

pub(crate) mod complex;
pub(crate) mod elem;
pub(crate) mod extra;
mod value;
pub(crate) mod vmath;

pub use value::ScalarValue;
pub(crate) use value::{from_sv, to_sv};
