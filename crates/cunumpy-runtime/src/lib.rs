//! cunumpy's runtime: everything between "a call with checked, packed arguments" and the
//! device. The binding (`cunumpy-py`) turns Python objects into core arguments and calls down
//! here; this crate calls `cunumpy-cuda` (the CUDA driver and NVRTC) or `cunumpy-emu` (CUDA C
//! on the CPU). Knows nothing about Python.
//!
//! - [`device`]: the [`Device`] a launch runs on (a CUDA device or the emulated one), the one
//!   emulated-device switch, device choice from the calling thread's context, device limits;
//! - [`kernel`]: a user kernel ([`Kernel`]): compiled and loaded once per device (disk cache
//!   first), launch validation, dynamic shared memory, the launch itself;
//! - [`emulated`]: the emulated device: its limits, the compiler, the process-wide table of
//!   emulation libraries, emulated launches;
//! - [`fused`]: a fused plan on a device ([`FusedPlan`]): compile and load, the packed
//!   parameters of its launches, the launch loop (GPU and emulated);
//! - [`host`]: a fused plan on the host (the CPU executor) with the checks a call needs;
//! - [`metal`]: the emulated Metal device (`MetalKernel` under `CUNUMPY_FAKE_METAL=1`):
//!   builds through the same library table, launches of `cunumpy-emu`'s Metal layer;
//! - [`graph`]: a time step captured as one graph: the recorded launch list, its
//!   parameters and the checks a replay's new values pass, the replay;
//! - [`record`]: the ledger entry of a launch;
//! - [`probes`]: benchmark probes (launch loops without the checks).
//!
//! A `CudaKernel` launch: binding (read and pack the arguments) → [`Kernel::loaded`] /
//! [`Kernel::load`] → [`LoadedKernel::prepare`] → [`LoadedKernel::launch`] → `cunumpy-cuda`,
//! or on the emulated device [`Kernel::emulation_library`] → [`emulated::run`] →
//! `cunumpy-emu`. A fused call: binding (read the arrays and scalars) → [`FusedPlan::load`] →
//! [`FusedPlan::launch`] (or [`FusedPlan::launch_emulated`]).

pub mod device;
pub mod emulated;
pub mod error;
pub mod fused;
pub mod graph;
pub mod host;
pub mod kernel;
pub mod metal;
pub mod probes;
pub mod record;

pub use device::Device;
pub use error::RuntimeError;
pub use fused::FusedPlan;
pub use kernel::{register_cap_option, Kernel, KernelSource, LoadedKernel};

thread_local! {
    static COMPILE_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Nanoseconds the calling thread has spent compiling kernels (NVRTC or the emulator's host
/// compiler, disk cache lookups included) since the process started: what a graph capture
/// subtracts from the step's host time to estimate an eager step's launch overhead.
pub fn compile_ns() -> u64 {
    COMPILE_NS.with(std::cell::Cell::get)
}

/// Adds the time since `start` to the calling thread's compile time.
pub(crate) fn count_compile_time(start: std::time::Instant) {
    let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    COMPILE_NS.with(|c| c.set(c.get().saturating_add(ns)));
}
