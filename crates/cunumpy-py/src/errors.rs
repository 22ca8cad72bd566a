//! The one place Rust errors become Python exceptions. The classes are defined in
//! `cunumpy.exceptions` so they can also inherit `TypeError`, `ValueError`, ...

use cunumpy_core::args::{ArgError, ArgErrorKind};
use cunumpy_core::host_pool::HostPoolError;
use cunumpy_core::launch::LaunchError;
use cunumpy_core::parser::SignatureError;
use cunumpy_cuda::CudaError;
use cunumpy_emu::{EmuError, Fault};
use cunumpy_fusion::FusionError;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// An instance of `cunumpy.exceptions.<class_name>(message)`.
pub fn raise(py: Python<'_>, class_name: &str, message: String) -> PyErr {
    match py
        .import("cunumpy.exceptions")
        .and_then(|m| m.getattr(class_name))
    {
        Ok(class) => match class.call1((message.clone(),)) {
            Ok(instance) => PyErr::from_value(instance),
            Err(err) => err,
        },
        Err(_) => PyRuntimeError::new_err(message),
    }
}

/// `raise` where no `Python` token is at hand (the caller holds the GIL: every binding
/// method does).
pub fn raise_here(class_name: &str, message: String) -> PyErr {
    Python::attach(|py| raise(py, class_name, message))
}

/// Emits `cunumpy.exceptions.<class_name>` as a Python warning (an error if filters say so).
pub fn warn(py: Python<'_>, class_name: &str, message: &str) -> PyResult<()> {
    let class = py.import("cunumpy.exceptions")?.getattr(class_name)?;
    let message = std::ffi::CString::new(message.replace('\0', " "))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    PyErr::warn(py, &class, &message, 1)
}

pub fn arg_error(py: Python<'_>, err: ArgError) -> PyErr {
    let class = match err.kind {
        ArgErrorKind::Type => "KernelArgumentTypeError",
        ArgErrorKind::Value => "KernelArgumentValueError",
        ArgErrorKind::Overflow => "KernelArgumentOverflowError",
    };
    raise(py, class, err.message)
}

pub fn layout_error(py: Python<'_>, err: cunumpy_core::layout::LayoutError) -> PyErr {
    raise(py, "CudaStructError", err.to_string())
}

pub fn launch_error(py: Python<'_>, err: LaunchError) -> PyErr {
    match err {
        LaunchError::Ambiguous(m) => raise(py, "LaunchShapeTypeError", m),
        LaunchError::Invalid(m) => raise(py, "LaunchShapeError", m),
    }
}

/// A launch-shape error of kernel `kernel`, its message starting with the kernel's name.
pub fn kernel_launch_error(py: Python<'_>, kernel: &str, err: LaunchError) -> PyErr {
    let named = |m: String| {
        if m.starts_with(kernel) {
            m
        } else {
            format!("{kernel}: {m}")
        }
    };
    match err {
        LaunchError::Ambiguous(m) => raise(py, "LaunchShapeTypeError", named(m)),
        LaunchError::Invalid(m) => raise(py, "LaunchShapeError", named(m)),
    }
}

pub fn signature_error(py: Python<'_>, err: SignatureError) -> PyErr {
    raise(py, "CudaSignatureError", err.to_string())
}

/// CUDA errors: compile errors keep the log, options and numbered source as attributes.
pub fn cuda_error(py: Python<'_>, kernel: &str, err: CudaError) -> PyErr {
    if let Some(compile) = err.as_compile_error() {
        let message = format!("kernel '{kernel}' does not compile: {compile}");
        let exc = raise(py, "CudaCompileError", message);
        let value = exc.value(py);
        let attrs = PyDict::new(py);
        let _ = attrs.set_item("kernel", kernel);
        let _ = attrs.set_item("log", &compile.log);
        let _ = attrs.set_item("options", compile.options.clone());
        let _ = attrs.set_item("source", &compile.numbered_source);
        for (k, v) in attrs.iter() {
            if let Ok(name) = k.extract::<String>() {
                let _ = value.setattr(name.as_str(), v);
            }
        }
        return exc;
    }
    match err {
        CudaError::LibraryNotFound { .. } | CudaError::MissingSymbol { .. } => raise(
            py,
            "CudaUnavailableError",
            format!("cannot use CUDA for kernel '{kernel}': {err}"),
        ),
        other => raise(
            py,
            "CudaRuntimeError",
            format!("kernel '{kernel}': {other}"),
        ),
    }
}

/// Emulator errors: no compiler, a compile error (log and command as attributes), a fault in
/// the running kernel (`fault` attribute; an out-of-bounds access is also an `IndexError`).
pub fn emu_error(py: Python<'_>, err: EmuError) -> PyErr {
    let set = |exc: &PyErr, name: &str, value: &str| {
        let _ = exc.value(py).setattr(name, value);
    };
    match &err {
        EmuError::NoCompiler { .. } => raise(py, "EmulationUnavailableError", err.to_string()),
        EmuError::Compile {
            kernel,
            command,
            stderr,
        } => {
            let exc = raise(py, "EmulationCompileError", err.to_string());
            set(&exc, "kernel", kernel);
            set(&exc, "log", stderr);
            set(&exc, "command", command);
            exc
        }
        EmuError::InvalidLaunch { .. } => raise(py, "LaunchShapeError", err.to_string()),
        EmuError::Kernel { kernel, fault, .. } => {
            let (class, name) = match fault {
                Fault::OutOfBounds => ("EmulatedOutOfBoundsError", "out_of_bounds"),
                Fault::Trap => ("EmulatedKernelFault", "trap"),
                Fault::Assert => ("EmulatedKernelFault", "assert"),
                Fault::Deadlock => ("EmulatedKernelFault", "deadlock"),
                Fault::InvalidWarpOp => ("EmulatedKernelFault", "invalid_warp_op"),
                Fault::Race => ("EmulatedRaceError", "race"),
                Fault::Other => ("EmulatedKernelFault", "other"),
            };
            let exc = raise(py, class, err.to_string());
            set(&exc, "kernel", kernel);
            set(&exc, "fault", name);
            exc
        }
        EmuError::Load { .. } | EmuError::Io { .. } => raise(py, "EmulationError", err.to_string()),
    }
}

/// Fusion compiler errors: typing problems are `FusionTypeError` (a `TypeError`), unknown
/// operations `FusionUnsupportedError`, the rest (axes, shapes, arguments) `FusionValueError`.
/// A runtime step's error, as the exception of the layer it came from (`kernel` names the
/// kernel in driver errors that do not carry their own).
pub fn runtime_error(py: Python<'_>, kernel: &str, err: cunumpy_runtime::RuntimeError) -> PyErr {
    use cunumpy_runtime::RuntimeError;
    match err {
        RuntimeError::Cuda { kernel: own, error } => {
            cuda_error(py, if own.is_empty() { kernel } else { &own }, *error)
        }
        RuntimeError::Emu(e) => emu_error(py, e),
        RuntimeError::Launch(e) => launch_error(py, e),
        RuntimeError::Fusion(e) => fusion_error(py, e),
        RuntimeError::Argument(e) => arg_error(py, e),
        RuntimeError::FusedCall(message) => raise(py, "FusionValueError", message),
        RuntimeError::Setting(message) => raise(py, "BackendError", message),
        RuntimeError::Graph(g) => crate::graph::graph_error(py, g),
        RuntimeError::Internal(what) => raise(py, "InternalError", format!("internal: {what}")),
        RuntimeError::Constant(e) => constant_error(py, *e),
    }
}

/// A `__constant__` value refused: `CudaConstantNotFoundError` (a `KeyError`) for a name that
/// is not one, `CudaConstantTypeError` (a `TypeError`) for a wrong dtype or a type that cannot
/// be set, `CudaConstantSizeError` (a `ValueError`) for a wrong element count.
pub fn constant_error(py: Python<'_>, err: cunumpy_core::constants::ConstantError) -> PyErr {
    let class = match err.kind() {
        "not_found" => "CudaConstantNotFoundError",
        "type" => "CudaConstantTypeError",
        _ => "CudaConstantSizeError",
    };
    raise(py, class, err.to_string())
}

pub fn fusion_error(py: Python<'_>, err: FusionError) -> PyErr {
    let class = match &err {
        FusionError::UnknownOp { .. } => "FusionUnsupportedError",
        FusionError::Type { .. } | FusionError::UnsupportedDType { .. } => "FusionTypeError",
        FusionError::Index { .. } => "FusionIndexError",
        FusionError::Axis { .. } => "FusionAxisError",
        _ => "FusionValueError",
    };
    raise(py, class, err.to_string())
}

/// Host memory pool errors: no memory is a `MemoryError` (as from `numpy.empty`), a bad
/// limit a `ValueError`.
pub fn host_pool_error(err: HostPoolError) -> PyErr {
    match &err {
        HostPoolError::OutOfMemory { .. } | HostPoolError::TooLarge { .. } => {
            raise_here("HostMemoryError", err.to_string())
        }
        HostPoolError::InvalidLimit { .. } => raise_here("InvalidArgumentError", err.to_string()),
    }
}
