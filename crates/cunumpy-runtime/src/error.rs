//! What can go wrong below the binding, by the layer it came from.

use cunumpy_core::args::ArgError;
use cunumpy_core::launch::LaunchError;
use cunumpy_cuda::CudaError;
use cunumpy_emu::EmuError;
use cunumpy_fusion::FusionError;

/// An error of a runtime step; the binding maps each kind to its Python exception.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// From the CUDA driver or NVRTC, for the kernel (or fused launch) named.
    #[error("{error}")]
    Cuda {
        kernel: String,
        error: Box<CudaError>,
    },
    /// From the emulator or the host compiler.
    #[error(transparent)]
    Emu(#[from] EmuError),
    /// A launch shape or shared memory size the device refuses.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// A fused plan's parameters could not be read for a call.
    #[error(transparent)]
    Fusion(#[from] FusionError),
    /// A value the packer (core's `ArgPlan`) refuses for its parameter.
    #[error(transparent)]
    Argument(#[from] ArgError),
    /// A fused call's arrays that the plan cannot run on (bool bytes other than 0/1,
    /// overlapping outputs); the message says which.
    #[error("{0}")]
    FusedCall(String),
    /// A value for a `__constant__` variable that does not match its declaration (or a name
    /// that is not one).
    #[error(transparent)]
    Constant(Box<cunumpy_core::constants::ConstantError>),
    /// What a graph capture or replay refuses.
    #[error(transparent)]
    Graph(#[from] crate::graph::GraphError),
    /// An environment setting that cannot be used (its message names it and its value).
    #[error("{0}")]
    Setting(String),
    /// A broken invariant of this crate (a bug, never the caller's input).
    #[error("internal: {0}")]
    Internal(&'static str),
}

impl RuntimeError {
    /// A driver error met while working for `kernel`.
    #[cold]
    pub fn cuda(kernel: &str, error: CudaError) -> Self {
        RuntimeError::Cuda {
            kernel: kernel.to_string(),
            error: Box::new(error),
        }
    }
}

impl From<cunumpy_core::constants::ConstantError> for RuntimeError {
    fn from(e: cunumpy_core::constants::ConstantError) -> Self {
        RuntimeError::Constant(Box::new(e))
    }
}
