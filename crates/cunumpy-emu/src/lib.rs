//! CUDA C kernels run on the CPU: the one crate that runs a host C++ compiler.
//!
//! A kernel's source is compiled as host C++ together with a prelude
//! (`prelude/cunumpy_emu.h`, [`PRELUDE`]) that provides the CUDA built-ins: the index
//! variables, `__shared__` memory (static and `extern` dynamic), `__syncthreads`, the warp
//! intrinsics (`__shfl*_sync`, votes, `__match_*`, `__reduce_*`), atomics, the math library,
//! `__ldg`, `__trap`, `printf`, `assert`. The launcher it exports takes the same packed argument
//! buffer as `cuLaunchKernel` (`void** params`, `params[i]` pointing at the value of parameter
//! `i`); the parameter types come from the kernel's own C++ type, so no signature is needed.
//!
//! ```no_run
//! # fn main() -> Result<(), cunumpy_emu::EmuError> {
//! use cunumpy_emu::{EmuCompiler, LaunchOptions};
//! use std::ffi::c_void;
//! let src = r#"extern "C" __global__ void scale(float* x, float a, int n) {
//!     int i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) x[i] *= a;
//! }"#;
//! let lib = EmuCompiler::detect()?.compile(src, "scale", &[], &[], None)?;
//! let mut x = vec![1.0f32; 1000];
//! let (mut px, mut a, mut n) = (x.as_mut_ptr(), 2.0f32, 1000i32);
//! let mut params = [
//!     (&mut px as *mut *mut f32).cast::<c_void>(),
//!     (&mut a as *mut f32).cast::<c_void>(),
//!     (&mut n as *mut i32).cast::<c_void>(),
//! ];
//! // SAFETY: each params[i] points at a value of parameter i's type; x holds 1000 floats.
//! unsafe { lib.launch(params.as_mut_ptr(), [4, 1, 1], [256, 1, 1], 0, &LaunchOptions::default())? };
//! # Ok(()) }
//! ```
//!
//! Execution: blocks run one after another (or on `workers` host threads). Kernels without
//! barriers or warp intrinsics run their threads as plain loops; the others run each thread of
//! a block as a fiber, switched at barriers and warp intrinsics. A shuffle seed runs fibers in a
//! seeded random order, switching also at accesses through pointer parameters; declared buffer
//! lengths turn those accesses into checked ones. Faults come back as [`EmuError::Kernel`].
//!
//! Metal kernels (MLX's `metal_kernel` conventions) run on the same machinery: [`metal`] turns
//! one into a CUDA-style kernel over a Metal layer of the prelude (`prelude/metal_emu.h`).

mod cache_dir;
mod compiler;
mod error;
mod host_library;
mod includes;
mod lexer;
mod library;
mod loaded;
pub mod metal;
mod rewrite;

pub use cache_dir::{default_cache_dir, resolve_cache_dir, take_cache_warnings};
pub use compiler::{EmuCompiler, PRELUDE};
pub use error::{EmuError, Fault};
pub use host_library::HostLibrary;
pub use library::{CacheOutcome, ConstantValues, EmuLibrary, LaunchOptions};
pub use metal::{
    MetalBuffer, MetalInput, MetalKernelSource, MetalLaunchOptions, MetalOutput, MetalParam,
    MetalTranslation, TemplateArg, METAL_OPTIONS, METAL_PRELUDE,
};
