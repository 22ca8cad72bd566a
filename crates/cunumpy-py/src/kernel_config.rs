//! What a `CudaKernel` is, fixed when it is configured: its runtime kernel (source and loads),
//! block shape and argument plan. Shared by the launch path (`kernel.rs`) and the emulator's
//! (`emulate.rs`).

use cunumpy_core::args::ArgPlan;
use cunumpy_core::signature::Signature;
use cunumpy_runtime::Kernel;
use std::sync::Arc;

/// What a kernel is, fixed at construction.
pub(crate) struct Config {
    /// The kernel's source and what it is loaded as on each device (the runtime's half).
    pub(crate) kernel: Kernel,
    pub(crate) block: Vec<u32>,
    /// Shared with the launches a graph capture records (a replay packs new values with it).
    pub(crate) plan: Option<Arc<ArgPlan>>,
    /// The parsed signature the plan was built from (parsed once, here; Python's
    /// `CudaKernel.signature` reads it). None with `check_signature=False`.
    pub(crate) signature: Option<Signature>,
    /// Whether a parameter is an array view (its shape and strides can change in place, so
    /// such calls never reuse the last call's buffer). Decided once, not per launch.
    pub(crate) has_views: bool,
}

impl Config {
    /// The kernel's name.
    pub(crate) fn name(&self) -> &str {
        &self.kernel.source().name
    }
}
