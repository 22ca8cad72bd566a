//! Source tools: signature parsing, kernel names, the C type map, include resolution, and
//! what was found of the CUDA driver and NVRTC.

use crate::errors;
use cunumpy_core::ctypes;
use cunumpy_core::dtype::DType;
use cunumpy_core::includes;
use cunumpy_core::parser;
use cunumpy_core::signature::{ParamKind, Signature};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// One parameter: (name, ctype, dtype name or None, pointer, struct name or None,
/// view ndim or None, contiguous, declaration).
pub(crate) type ParamTuple = (
    String,
    String,
    Option<&'static str>,
    bool,
    Option<String>,
    Option<u8>,
    bool,
    String,
);

#[pyfunction]
#[pyo3(signature = (source, name, *, structs=Vec::new(), template_args=None))]
fn parse_cuda_signature(
    py: Python<'_>,
    source: &str,
    name: &str,
    structs: Vec<String>,
    template_args: Option<Vec<String>>,
) -> PyResult<(Vec<ParamTuple>, String)> {
    let sig = parser::parse_signature(source, name, &structs, template_args.as_deref())
        .map_err(|e| errors::signature_error(py, e))?;
    Ok((param_tuples(&sig), sig.expression))
}

/// A parsed signature's parameters as `cuda.CudaParameter` fields (what Python builds them
/// from): name, C type, dtype name, is a pointer, struct name, view rank, contiguous view,
/// declaration.
pub(crate) fn param_tuples(sig: &Signature) -> Vec<ParamTuple> {
    sig.params
        .iter()
        .cloned()
        .map(|p| match p.kind {
            ParamKind::Scalar(d) => (
                p.name,
                d.c_name().to_string(),
                Some(d.name()),
                false,
                None,
                None,
                false,
                p.decl,
            ),
            ParamKind::Pointer { dtype, .. } => (
                p.name,
                dtype.map_or("void", |d| d.c_name()).to_string(),
                dtype.map(|d| d.name()),
                true,
                None,
                None,
                false,
                p.decl,
            ),
            ParamKind::View {
                dtype,
                ndim,
                contiguous,
            } => (
                p.name,
                format!(
                    "{}Array{ndim}D<{}>",
                    if contiguous { "C" } else { "" },
                    dtype.c_name()
                ),
                Some(dtype.name()),
                false,
                None,
                Some(ndim),
                contiguous,
                p.decl,
            ),
            ParamKind::Struct { name } => (
                p.name,
                name.clone(),
                None,
                false,
                Some(name),
                None,
                false,
                p.decl,
            ),
        })
        .collect()
}

#[pyfunction]
fn cuda_kernel_names(source: &str) -> Vec<String> {
    parser::kernel_names(source)
}

/// The C type of a dtype given by its NumPy name.
#[pyfunction]
fn ctype_of(dtype: &str) -> PyResult<&'static str> {
    DType::from_name(dtype)
        .map(ctypes::ctype_of)
        .ok_or_else(|| {
            crate::errors::raise_here(
                "InvalidArgumentError",
                format!("no C type for dtype {dtype}"),
            )
        })
}

/// The dtype name of a C type (None when unknown).
#[pyfunction]
fn dtype_of_ctype(ctype: &str) -> Option<&'static str> {
    ctypes::dtype_of_ctype(ctype).map(DType::name)
}

#[pyfunction]
#[pyo3(signature = (source, include_dirs=Vec::new(), *, base_dir=None, angle_dirs=Vec::new()))]
fn resolve_includes(
    source: &str,
    include_dirs: Vec<PathBuf>,
    base_dir: Option<PathBuf>,
    angle_dirs: Vec<PathBuf>,
) -> Vec<PathBuf> {
    includes::resolve_includes(source, base_dir.as_deref(), &include_dirs, &angle_dirs)
}

#[pyfunction]
fn include_hash(paths: Vec<PathBuf>) -> PyResult<String> {
    includes::include_hash(&paths)
        .map_err(|e| crate::errors::raise_here("InvalidArgumentError", e.to_string()))
}

/// What was found of the CUDA driver and NVRTC (loading them if needed), or why not.
#[pyfunction]
fn cuda_backend_info<'py>(
    py: Python<'py>,
    python_paths: Vec<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let info = py.detach(|| cunumpy_cuda::backend_info(&python_paths));
    let out = PyDict::new(py);
    match info.driver {
        Ok(d) => {
            let driver = PyDict::new(py);
            driver.set_item("library", d.library)?;
            driver.set_item("version", d.version)?;
            match d.device_count {
                Ok(n) => driver.set_item("device_count", n)?,
                Err(e) => driver.set_item("device_count_error", e)?,
            }
            out.set_item("driver", driver)?;
        }
        Err(e) => out.set_item("driver_error", e)?,
    }
    match info.nvrtc {
        Ok(n) => {
            let nvrtc = PyDict::new(py);
            nvrtc.set_item("library", n.library)?;
            nvrtc.set_item("version", format!("{}.{}", n.version.0, n.version.1))?;
            nvrtc.set_item("supported_archs", n.supported_archs)?;
            out.set_item("nvrtc", nvrtc)?;
        }
        Err(e) => out.set_item("nvrtc_error", e)?,
    }
    Ok(out)
}

/// The disk cache folder of compiled CUDA kernels (`$CUNUMPY_CACHE_DIR`, else the XDG cache),
/// or `None` when no folder can be named.
#[pyfunction]
fn kernel_cache_dir() -> Option<PathBuf> {
    cunumpy_cuda::cache::default_dir()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_cuda_signature, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_kernel_names, m)?)?;
    m.add_function(wrap_pyfunction!(ctype_of, m)?)?;
    m.add_function(wrap_pyfunction!(dtype_of_ctype, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_includes, m)?)?;
    m.add_function(wrap_pyfunction!(include_hash, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_backend_info, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_cache_dir, m)?)?;
    Ok(())
}
