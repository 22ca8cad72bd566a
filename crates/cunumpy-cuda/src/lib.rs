//! cunumpy's only door to the GPU: the CUDA driver API and NVRTC, both opened with `dlopen` at
//! run time (nothing CUDA is needed to build or test this crate), plus the on-disk kernel
//! cache.
//!
//! Layers, from the bottom:
//! - [`sys`]: C types, constants and function-pointer tables (result codes are plain `i32`);
//! - [`loader`]: finding and opening libcuda and NVRTC;
//! - [`driver`] and [`nvrtc`]: `Result`-returning wrappers and safe types (devices, the
//!   primary context, modules, kernels, launches, buffers, events; compiles);
//! - [`cache`]: the verified, atomically written disk cache and the compile key.

pub mod cache;
pub mod driver;
pub mod error;
pub mod loader;
pub mod nvrtc;
pub mod sys;

use std::fmt;
use std::path::PathBuf;

pub use cache::{
    compile_cached, compile_key, CachedCompile, CompileRequest, KernelCache, KeyInputs,
};
pub use driver::{
    ensure_context, synchronize_context, synchronize_stream, CaptureInfo, Context, DeviceBuffer,
    DeviceInfo, DeviceRepr, Driver, Event, Function, FunctionAttributes, Global, Module,
    StreamHandle,
};
pub use error::{CompileError, CudaError};
pub use nvrtc::{compile, Compiled, ImageKind, Nvrtc, Target};

/// What was found of the driver and NVRTC, or why not.
#[derive(Debug, Clone)]
pub struct BackendInfo {
    /// The driver, or why it could not be loaded and initialised.
    pub driver: Result<DriverSummary, String>,
    /// NVRTC, or why it could not be loaded.
    pub nvrtc: Result<NvrtcSummary, String>,
}

/// The loaded driver.
#[derive(Debug, Clone)]
pub struct DriverSummary {
    /// Where libcuda was opened from.
    pub library: String,
    /// `cuDriverGetVersion` (13000 = 13.0).
    pub version: i32,
    /// Number of devices (or the error reading it).
    pub device_count: Result<i32, String>,
}

/// The loaded NVRTC.
#[derive(Debug, Clone)]
pub struct NvrtcSummary {
    /// Where NVRTC was opened from.
    pub library: String,
    /// The builtins library preloaded with it.
    pub builtins: Option<String>,
    /// `(major, minor)`.
    pub version: (i32, i32),
    /// Architectures it compiles CUBIN for.
    pub supported_archs: Vec<u32>,
}

/// Loads the driver and NVRTC (once per process; `python_paths` are used only if NVRTC was
/// not searched for yet) and reports what was found or why it failed.
pub fn backend_info(python_paths: &[PathBuf]) -> BackendInfo {
    let driver = Driver::get()
        .map(|d| DriverSummary {
            library: d.library_path().to_string(),
            version: d.version(),
            device_count: d.device_count().map_err(|e| e.to_string()),
        })
        .map_err(|e| e.to_string());
    let nvrtc = Nvrtc::get_or_load(python_paths)
        .map(|n| NvrtcSummary {
            library: n.library_path().to_string(),
            builtins: n.builtins_path().map(str::to_string),
            version: n.version(),
            supported_archs: n.supported_archs().to_vec(),
        })
        .map_err(|e| e.to_string());
    BackendInfo { driver, nvrtc }
}

impl fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.driver {
            Ok(d) => {
                write!(
                    f,
                    "CUDA driver: {} (CUDA {}.{}), ",
                    d.library,
                    d.version / 1000,
                    (d.version % 1000) / 10
                )?;
                match &d.device_count {
                    Ok(n) => writeln!(f, "{n} device(s)")?,
                    Err(e) => writeln!(f, "devices unavailable: {e}")?,
                }
            }
            Err(e) => writeln!(f, "CUDA driver: not available: {e}")?,
        }
        match &self.nvrtc {
            Ok(n) => write!(
                f,
                "NVRTC: {} (version {}.{}{}), architectures {:?}",
                n.library,
                n.version.0,
                n.version.1,
                n.builtins
                    .as_deref()
                    .map(|b| format!(", builtins {b}"))
                    .unwrap_or_default(),
                n.supported_archs
            ),
            Err(e) => write!(f, "NVRTC: not available: {e}"),
        }
    }
}
