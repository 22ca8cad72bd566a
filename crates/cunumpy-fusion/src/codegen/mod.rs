//! Code generation from a plan: one C dialect (`dialect`: the helper preamble, C types, op
//! expressions, reduction identities and combines) shared by the CUDA generator (`cuda`) and
//! the generator of compiled CPU loops (`host`, host C++).

pub(crate) mod cuda;
pub(crate) mod dialect;
pub(crate) mod host;
