//! Python face of `MetalKernel`: the checks of a call (`cunumpy_core::metal`) and the emulated
//! Metal device (`cunumpy_runtime::metal`). Only conversions: NumPy arrays are read here (dtype
//! name, shape, layout, address) and handed down.

use crate::errors;
use cunumpy_core::metal::{
    self as checks, Float64Policy, MetalArray, MetalCheckError, MetalKernelSpec,
};
use cunumpy_emu::{
    MetalBuffer, MetalInput, MetalKernelSource, MetalLaunchOptions, MetalOutput, TemplateArg,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn check_error(py: Python<'_>, err: MetalCheckError) -> PyErr {
    let class = match &err {
        MetalCheckError::Type(_) => "KernelArgumentTypeError",
        MetalCheckError::Value(_) => "KernelArgumentValueError",
        MetalCheckError::Shape(_) => "LaunchShapeError",
    };
    errors::raise(py, class, err.to_string())
}

fn describe(a: &Bound<'_, PyAny>) -> PyResult<MetalArray> {
    let flags = a.getattr("flags")?;
    Ok(MetalArray {
        dtype: a.getattr("dtype")?.str()?.to_string(),
        shape: a.getattr("shape")?.extract()?,
        c_contiguous: flags.getattr("c_contiguous")?.extract()?,
        writeable: flags.getattr("writeable")?.extract()?,
    })
}

/// Checks a constructor's names (raises `KernelArgumentValueError`).
#[pyfunction]
fn _metal_check_names(
    py: Python<'_>,
    kernel: &str,
    inputs: Vec<String>,
    outputs: Vec<String>,
) -> PyResult<()> {
    checks::check_names(kernel, &inputs, &outputs).map_err(|e| check_error(py, e))
}

/// The MSL type of a NumPy dtype name, or None.
#[pyfunction]
fn _metal_msl_type(dtype: &str) -> Option<&'static str> {
    checks::msl_type(dtype)
}

type ArgPlan = (&'static str, bool, bool);

/// Checks one call of a `MetalKernel` (NumPy arrays in and out) and returns, per input and per
/// output, `(msl_type, cast_to_float32, packed)`, then the grid and the threadgroup.
#[pyfunction]
#[pyo3(signature = (kernel, input_names, output_names, float64, threadgroup, inputs, outputs, n_threads=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn _metal_plan(
    py: Python<'_>,
    kernel: &str,
    input_names: Vec<String>,
    output_names: Vec<String>,
    float64: &str,
    threadgroup: Vec<i64>,
    inputs: Vec<Bound<'_, PyAny>>,
    outputs: Vec<Bound<'_, PyAny>>,
    n_threads: Option<Vec<i64>>,
) -> PyResult<(Vec<ArgPlan>, Vec<ArgPlan>, [u32; 3], [u32; 3])> {
    let policy = Float64Policy::parse(float64).ok_or_else(|| {
        errors::raise(
            py,
            "KernelArgumentValueError",
            format!("MetalKernel '{kernel}': float64 must be 'error' or 'cast', got {float64:?}"),
        )
    })?;
    let ins = inputs.iter().map(describe).collect::<PyResult<Vec<_>>>()?;
    let outs = outputs.iter().map(describe).collect::<PyResult<Vec<_>>>()?;
    let spec = MetalKernelSpec {
        kernel,
        inputs: &input_names,
        outputs: &output_names,
        float64: policy,
        threadgroup: &threadgroup,
    };
    let plan = checks::plan_call(&spec, &ins, &outs, n_threads.as_deref())
        .map_err(|e| check_error(py, e))?;
    let conv = |v: &[checks::MetalArgPlan]| -> Vec<ArgPlan> {
        v.iter()
            .map(|p| (p.msl_type, p.cast_to_float32, p.packed))
            .collect()
    };
    Ok((
        conv(&plan.inputs),
        conv(&plan.outputs),
        plan.grid,
        plan.threadgroup,
    ))
}

/// A C-contiguous NumPy array as a launch buffer (the caller keeps the array alive).
fn buffer(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<MetalBuffer> {
    let d = describe(a)?;
    if !d.c_contiguous {
        return Err(errors::raise(
            py,
            "KernelArgumentTypeError",
            "internal: an emulated Metal launch was given a non-contiguous array".to_string(),
        ));
    }
    let iface = a.getattr("__array_interface__")?;
    let iface = iface.cast::<PyDict>()?;
    let data = iface.get_item("data")?.ok_or_else(|| {
        crate::errors::raise(
            a.py(),
            "KernelArgumentTypeError",
            "__array_interface__ without data".into(),
        )
    })?;
    let (address, _readonly): (usize, bool) = data.extract()?;
    Ok(MetalBuffer {
        ptr: address as *mut std::ffi::c_void,
        nbytes: a.getattr("nbytes")?.extract()?,
        shape: d.shape,
    })
}

/// The launch's buffers, moved to the thread that runs the launch without the interpreter lock.
struct Buffers(Vec<MetalBuffer>, Vec<MetalBuffer>);
// SAFETY: the buffers are addresses of NumPy arrays that the calling Python frame keeps alive
// (the caller holds `inputs` and `outputs` for the whole call); the launch only reads and writes
// that memory, and no Python code runs on these arrays meanwhile (the caller is blocked in it).
unsafe impl Send for Buffers {}

/// Runs a checked `MetalKernel` call on the emulated Metal device. `inputs` and `outputs` are
/// `(array, msl_type)` pairs of C-contiguous NumPy arrays; `template` is `(name, kind, text)`
/// with kind `int`, `bool` or `type`. Returns whether the library came from the disk cache.
#[pyfunction]
#[pyo3(signature = (name, source, header, input_names, output_names, inputs, outputs, atomic_outputs, template, grid, threadgroup, bounds, shuffle_seed=None))]
#[allow(clippy::too_many_arguments)]
fn _metal_emulate(
    py: Python<'_>,
    name: String,
    source: String,
    header: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    inputs: Vec<(Bound<'_, PyAny>, String)>,
    outputs: Vec<(Bound<'_, PyAny>, String)>,
    atomic_outputs: bool,
    template: Vec<(String, String, String)>,
    grid: [u32; 3],
    threadgroup: [u32; 3],
    bounds: bool,
    shuffle_seed: Option<u64>,
) -> PyResult<bool> {
    let mut in_bufs = Vec::with_capacity(inputs.len());
    let mut in_specs = Vec::with_capacity(inputs.len());
    for ((a, ty), n) in inputs.iter().zip(&input_names) {
        let b = buffer(py, a)?;
        in_specs.push(MetalInput {
            name: n.clone(),
            ty: ty.clone(),
            ndim: b.shape.len(),
        });
        in_bufs.push(b);
    }
    let mut out_bufs = Vec::with_capacity(outputs.len());
    let mut out_specs = Vec::with_capacity(outputs.len());
    for ((a, ty), n) in outputs.iter().zip(&output_names) {
        out_bufs.push(buffer(py, a)?);
        out_specs.push(MetalOutput {
            name: n.clone(),
            ty: ty.clone(),
        });
    }
    let mut targs = Vec::with_capacity(template.len());
    for (tname, kind, text) in template {
        let arg = match kind.as_str() {
            "int" => TemplateArg::Int(text.parse().map_err(|_| {
                errors::raise(
                    py,
                    "KernelArgumentTypeError",
                    format!("MetalKernel '{name}': template {tname}: not an int: {text}"),
                )
            })?),
            "bool" => TemplateArg::Bool(text == "true"),
            _ => TemplateArg::Type(text),
        };
        targs.push((tname, arg));
    }
    let kernel = MetalKernelSource {
        name: name.clone(),
        source,
        header,
        inputs: in_specs,
        outputs: out_specs,
        atomic_outputs,
        template: targs,
    };
    let built = py
        .detach(|| cunumpy_runtime::metal::build(&kernel))
        .map_err(|e| errors::emu_error(py, e))?;
    let options = MetalLaunchOptions {
        bounds,
        shuffle_seed,
        workers: 0,
    };
    let buffers = Buffers(in_bufs, out_bufs);
    let result = py.detach(move || {
        let b = buffers;
        // SAFETY: the buffers are live NumPy arrays held by this call's arguments (see
        // `Buffers`), with their true byte lengths; bounds-checked when `bounds` is on.
        unsafe { built.run(&b.0, &b.1, grid, threadgroup, &options) }.map(|()| built.disk_hit)
    });
    result.map_err(|e| errors::runtime_error(py, &name, e))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_metal_check_names, m)?)?;
    m.add_function(wrap_pyfunction!(_metal_msl_type, m)?)?;
    m.add_function(wrap_pyfunction!(_metal_plan, m)?)?;
    m.add_function(wrap_pyfunction!(_metal_emulate, m)?)?;
    Ok(())
}
