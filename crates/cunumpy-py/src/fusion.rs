//! The fusion compiler for Python: `FusionGraphBuilder` (the tracer calls it once per operation
//! on symbolic values), `FusionGraph` and `FusionPlan` (explain, CUDA source, kernel and launch
//! descriptions, the CPU executor on NumPy arrays, and the GPU launch path on CuPy arrays).
//! Conversions: the compiler is `cunumpy-fusion`; compiling, loading and launching a plan on a
//! device (or the emulated one) is `cunumpy_runtime::FusedPlan`.

use crate::arrays::{self, Object};
use crate::errors;
use crate::kernel;
use cunumpy_core::dtype::DType;
use cunumpy_core::sync::lock;
use cunumpy_cuda::{Driver, StreamHandle};
use cunumpy_fusion::{
    self as fusion, Axis, DevicePlan, DevicePointers, FusionError, Graph, GraphBuilder, IndexItem,
    KernelKind, Operand, ParamValue, Plan, PlanOptions, ReduceKind, ScalarValue, Strategy, Value,
};
use cunumpy_runtime::fused::{Extents, LoadedPlan};
pub(crate) use cunumpy_runtime::host::{byte_range, overlaps, HostArray as HostView};
use cunumpy_runtime::{device, record, Device, FusedPlan};
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::{Arc, Mutex};

fn err(py: Python<'_>, e: FusionError) -> PyErr {
    errors::fusion_error(py, e)
}

/// The float16 dtype's name: the graph computes float16 values in float32 (see
/// `GraphBuilder::mark_half`).
const HALF: &str = "float16";

fn dtype_arg(py: Python<'_>, what: &str, name: &str) -> PyResult<DType> {
    DType::from_name(name).ok_or_else(|| {
        errors::raise(
            py,
            "FusionTypeError",
            format!("fuse: {what}: unknown dtype {name:?}"),
        )
    })
}

fn axis_arg(axis: Option<Vec<isize>>, single: bool) -> Axis {
    match axis {
        None => Axis::All,
        Some(v) if single && v.len() == 1 => Axis::One(v[0]),
        Some(v) => Axis::Many(v),
    }
}

/// Records each operation of a traced function; `finish()` gives the graph.
#[pyclass(module = "cunumpy._core", name = "FusionGraphBuilder")]
pub struct FusionGraphBuilder {
    inner: Mutex<Option<GraphBuilder>>,
}

impl FusionGraphBuilder {
    fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut GraphBuilder) -> Result<T, FusionError>,
    ) -> PyResult<T> {
        let mut guard = lock(&self.inner);
        let builder = guard
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("fuse: the graph is finished already"))?;
        f(builder).map_err(|e| err(py, e))
    }
}

#[pymethods]
impl FusionGraphBuilder {
    #[new]
    fn new() -> Self {
        FusionGraphBuilder {
            inner: Mutex::new(Some(GraphBuilder::new())),
        }
    }

    /// Declares the next array argument; returns its value id.
    /// (A float16 input is a float32 one that the graph treats as float16: the caller passes
    /// the array converted to float32.)
    fn input(&self, py: Python<'_>, dtype: &str, ndim: usize) -> PyResult<u32> {
        if dtype == HALF {
            return self
                .with(py, |g| {
                    let v = g.input(DType::Float32, ndim)?;
                    g.mark_half(v).map(|_| v)
                })
                .map(|v| v.0);
        }
        let d = dtype_arg(py, "input", dtype)?;
        self.with(py, |g| g.input(d, ndim)).map(|v| v.0)
    }

    /// Declares the next scalar parameter (weak: a Python scalar; a float16 one is passed
    /// as its float value).
    fn scalar(&self, py: Python<'_>, dtype: &str, weak: bool) -> PyResult<u32> {
        if dtype == HALF {
            return self
                .with(py, |g| {
                    let v = g.scalar(DType::Float32, weak)?;
                    g.mark_half(v).map(|_| v)
                })
                .map(|v| v.0);
        }
        let d = dtype_arg(py, "scalar", dtype)?;
        self.with(py, |g| g.scalar(d, weak)).map(|v| v.0)
    }

    /// Applies an op of the table by its NumPy name.
    fn op(&self, py: Python<'_>, name: &str, args: Vec<u32>) -> PyResult<u32> {
        let args: Vec<Value> = args.into_iter().map(Value).collect();
        self.with(py, |g| g.op_by_name(name, &args)).map(|v| v.0)
    }

    fn astype(&self, py: Python<'_>, value: u32, dtype: &str) -> PyResult<u32> {
        if dtype == HALF {
            return self.with(py, |g| g.to_half(Value(value))).map(|v| v.0);
        }
        let d = dtype_arg(py, "astype", dtype)?;
        self.with(py, |g| g.astype(Value(value), d)).map(|v| v.0)
    }

    /// A reduction by name (`sum`, `prod`, `min`, `max`, `any`, `all`, `mean`, `var`, `std`).
    /// `axis` is None (all axes) or a list; `single` says the user gave one int.
    #[pyo3(signature = (kind, value, axis, keepdims, ddof=0, single=false))]
    #[allow(clippy::too_many_arguments)]
    fn reduce(
        &self,
        py: Python<'_>,
        kind: &str,
        value: u32,
        axis: Option<Vec<isize>>,
        keepdims: bool,
        ddof: u32,
        single: bool,
    ) -> PyResult<u32> {
        let axis = axis_arg(axis, single);
        let v = Value(value);
        match kind {
            "var" => self.with(py, |g| g.var(v, &axis, ddof, keepdims)),
            "std" => self.with(py, |g| g.std(v, &axis, ddof, keepdims)),
            "mean" => self.with(py, |g| {
                g.reduce(ReduceKind::Mean { ddof }, v, &axis, keepdims)
            }),
            other => {
                let k = ReduceKind::from_name(other).ok_or_else(|| {
                    err(
                        py,
                        FusionError::UnknownOp {
                            op: other.to_string(),
                        },
                    )
                })?;
                self.with(py, |g| g.reduce(k, v, &axis, keepdims))
            }
        }
        .map(|v| v.0)
    }

    /// A basic index of a value: `items` are `("slice", start, stop, step)`, `("int", i,
    /// None, 0)`, `("newaxis", ..)` or `("ellipsis", ..)`.
    fn index(
        &self,
        py: Python<'_>,
        value: u32,
        items: Vec<(String, Option<i64>, Option<i64>, i64)>,
    ) -> PyResult<u32> {
        let mut parsed = Vec::with_capacity(items.len());
        for (kind, a, b, step) in items {
            parsed.push(match kind.as_str() {
                "slice" => IndexItem::Slice {
                    start: a,
                    stop: b,
                    step,
                },
                "int" => IndexItem::Int(a.unwrap_or(0)),
                "newaxis" => IndexItem::NewAxis,
                "ellipsis" => IndexItem::Ellipsis,
                other => {
                    return Err(err(
                        py,
                        FusionError::Arguments {
                            what: "index".into(),
                            expected: "slice, int, newaxis or ellipsis".into(),
                            got: other.to_string(),
                        },
                    ))
                }
            });
        }
        self.with(py, |g| g.index(Value(value), &parsed))
            .map(|v| v.0)
    }

    /// `value` indexed along `axis` by the integer array value `index`.
    fn gather(&self, py: Python<'_>, value: u32, index: u32, axis: usize) -> PyResult<u32> {
        self.with(py, |g| g.gather(Value(value), Value(index), axis))
            .map(|v| v.0)
    }

    /// `(dtype name, ndim, weak)` of a value.
    fn info(&self, py: Python<'_>, value: u32) -> PyResult<(&'static str, usize, bool)> {
        self.with(py, |g| Ok((g.info(Value(value))?, g.is_half(Value(value)))))
            .map(|(i, half)| (if half { HALF } else { i.dtype.name() }, i.ndim, i.weak))
    }

    /// Marks the next output.
    fn output(&self, py: Python<'_>, value: u32) -> PyResult<usize> {
        self.with(py, |g| g.output(Value(value)))
    }

    /// Finishes the graph (dead code removed).
    fn finish(&self, py: Python<'_>) -> PyResult<FusionGraph> {
        let builder = lock(&self.inner)
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("fuse: the graph is finished already"))?;
        let graph = builder.finish().map_err(|e| err(py, e))?;
        Ok(FusionGraph {
            graph: Arc::new(graph),
        })
    }
}

/// A traced function's graph; `plan(shapes)` lowers it for concrete input shapes.
#[pyclass(module = "cunumpy._core", name = "FusionGraph", frozen)]
pub struct FusionGraph {
    graph: Arc<Graph>,
}

#[pymethods]
impl FusionGraph {
    /// Plans the graph for the input shapes; `name` prefixes the kernel names. The plan is
    /// device-free: its CUDA source and grids come from the device it is loaded on.
    #[pyo3(signature = (shapes, *, name="fused", block=256))]
    fn plan(
        &self,
        py: Python<'_>,
        shapes: Vec<Vec<usize>>,
        name: &str,
        block: u32,
    ) -> PyResult<FusionPlan> {
        let options = PlanOptions {
            name: name.to_string(),
            block,
            stencil_rows: cunumpy_core::config::fusion_stencil_rows(),
        };
        let plan =
            fusion::plan_with_options(&self.graph, &shapes, &options).map_err(|e| err(py, e))?;
        Ok(FusionPlan {
            fused: FusedPlan::new(plan),
        })
    }

    #[getter]
    fn n_inputs(&self) -> usize {
        self.graph.inputs.len()
    }

    #[getter]
    fn n_scalars(&self) -> usize {
        self.graph.scalars.len()
    }

    /// `(dtype name, ndim)` of each output.
    #[getter]
    fn outputs(&self) -> Vec<(&'static str, usize)> {
        self.graph
            .outputs
            .iter()
            .map(|o| {
                let n = self.graph.node(*o);
                (n.dtype.name(), n.ndim)
            })
            .collect()
    }

    fn __str__(&self) -> String {
        self.graph.to_string()
    }
}

/// A graph planned for concrete shapes: inspection, CPU execution and GPU launches.
#[pyclass(module = "cunumpy._core", name = "FusionPlan", frozen)]
pub struct FusionPlan {
    /// The plan and what it is on each device (the runtime's half).
    pub(crate) fused: FusedPlan,
}

fn operand_name(o: &Operand) -> String {
    match o {
        Operand::Input(i) => format!("in{i}"),
        Operand::Output(i) => format!("out{i}"),
        Operand::Buffer(i) => format!("buf{i}"),
        Operand::Scalar(i) => format!("s{i}"),
    }
}

fn param_value(v: &ParamValue) -> String {
    match v {
        ParamValue::Input(i) => format!("input {i}"),
        ParamValue::Output(i) => format!("output {i}"),
        ParamValue::Workspace { offset } => format!("workspace + {offset}"),
        ParamValue::Scalar(i) => format!("scalar {i}"),
        ParamValue::Int(v) => v.to_string(),
    }
}

/// A scalar argument's value (NumPy scalars are converted with `.item()` by the caller),
/// read by the one scalar reader of every caller (`arrays::scalar`).
pub(crate) fn scalar_value(obj: &Bound<'_, PyAny>, i: usize) -> PyResult<ScalarValue> {
    if let Some(value) = arrays::scalar(obj)? {
        return Ok(value);
    }
    Err(errors::raise(
        obj.py(),
        "FusionTypeError",
        format!(
            "fuse: scalar {i}: expected a bool, int, float or complex, got {}",
            obj.get_type().name()?
        ),
    ))
}

fn host_view(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    what: &str,
    writable: bool,
) -> PyResult<HostView> {
    if let Some(v) = arrays::read_numpy(obj, writable)? {
        return Ok(v);
    }
    let bad = |msg: String| errors::raise(py, "FusionTypeError", format!("fuse: {what}: {msg}"));
    let iface = obj
        .getattr(intern!(py, "__array_interface__"))
        .map_err(|_| {
            bad(format!(
                "expected a NumPy array, got {}",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
    let iface = iface
        .cast_into::<PyDict>()
        .map_err(|_| bad("__array_interface__ is not a dict".into()))?;
    let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
        iface
            .get_item(k)?
            .ok_or_else(|| bad(format!("__array_interface__ has no {k:?}")))
    };
    let (ptr, readonly): (usize, bool) = get("data")?.extract()?;
    let shape: Vec<usize> = get("shape")?.extract()?;
    let strides = iface.get_item("strides")?;
    if strides.is_some_and(|s| !s.is_none()) {
        return Err(bad("expected a C-contiguous array".into()));
    }
    if writable && readonly {
        return Err(bad("expected a writable array".into()));
    }
    let dtype = arrays::dtype_of(&obj.getattr(intern!(py, "dtype"))?)?
        .map_err(|name| bad(format!("unsupported dtype {name}")))?;
    let len = shape.iter().product();
    if ptr == 0 && len > 0 {
        return Err(bad("null data pointer".into()));
    }
    Ok(HostView {
        ptr,
        len,
        dtype,
        shape,
    })
}

impl FusionPlan {
    fn name(&self) -> &str {
        self.fused.name()
    }

    /// The plan.
    pub(crate) fn plan(&self) -> &Plan {
        self.fused.plan()
    }

    fn check_spec(
        &self,
        py: Python<'_>,
        what: String,
        dtype: DType,
        shape: &[usize],
        spec: &fusion::TensorSpec,
    ) -> PyResult<()> {
        if dtype != spec.dtype || shape != spec.shape.as_slice() {
            return Err(errors::raise(
                py,
                "FusionTypeError",
                format!(
                    "fused function '{}': {what}: expected {}{:?}, got {dtype}{shape:?}",
                    self.name(),
                    spec.dtype,
                    spec.shape
                ),
            ));
        }
        Ok(())
    }

    fn count(&self, py: Python<'_>, what: &str, expected: usize, got: usize) -> PyResult<()> {
        if expected != got {
            return Err(errors::raise(
                py,
                "FusionTypeError",
                format!(
                    "fused function '{}': expected {expected} {what}, got {got}",
                    self.name()
                ),
            ));
        }
        Ok(())
    }

    /// Launches the plan on `device` (the current context's) on `stream`: inputs and
    /// outputs are device pointers of C-contiguous arrays of the plan's shapes and dtypes
    /// on `device`, kept alive by the caller for the call, and the workspace from
    /// `workspace(bytes)`, the base of at least the bytes the plan needs on this device (0
    /// bytes: none needed, and the base may be 0). Compiles once per device.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_pointers(
        &self,
        py: Python<'_>,
        device: i32,
        stream: StreamHandle,
        in_ptrs: &[u64],
        out_ptrs: &[u64],
        workspace: impl FnOnce(usize) -> PyResult<u64>,
        svs: &[ScalarValue],
    ) -> PyResult<()> {
        let loaded = self.loaded_for(py, device)?;
        let ptrs = DevicePointers {
            inputs: in_ptrs,
            outputs: out_ptrs,
            workspace: workspace(loaded.workspace_bytes())?,
        };
        // SAFETY: `loaded` is this plan on `device`, the current context's; the pointers are
        // of CuPy arrays the caller checked to be C-contiguous, on that device, of the plan's
        // shapes and dtypes, and the workspace holds `workspace_bytes`; the arrays are
        // referenced by the caller until the call returns and CuPy's stream ordering keeps
        // their memory until the kernels finish. The stream is CuPy's current stream or the
        // caller's.
        unsafe {
            self.fused.launch(&loaded, stream, &ptrs, svs, &mut || {
                crate::ledger::call_site(py)
            })
        }
        .map_err(|e| errors::runtime_error(py, self.name(), e))
    }

    /// Runs the plan on the CPU over host views the caller read from live NumPy arrays it
    /// keeps referenced for the call, checked to be C-contiguous and of the plan's shapes and
    /// dtypes (outputs writable). The runtime checks bool inputs and overlaps; the GIL is
    /// released meanwhile.
    pub(crate) fn run_host(
        &self,
        py: Python<'_>,
        ins: Vec<HostView>,
        outs: Vec<HostView>,
        svs: &[ScalarValue],
    ) -> PyResult<()> {
        // SAFETY: every view was read from a live NumPy array that the caller keeps referenced
        // for the whole call (a referenced array cannot be resized or freed): C-contiguous, of
        // the dtype and element count the caller checked, aligned by NumPy for the dtype;
        // outputs writable. Like NumPy's own loops, this relies on no other thread writing
        // these arrays while the GIL is released.
        py.detach(|| unsafe { self.fused.run_host(&ins, &outs, svs) })
            .map_err(|e| errors::runtime_error(py, self.name(), e))
    }

    /// The plan loaded on CUDA device `device` (compiled on first use, with the GIL
    /// released).
    fn loaded_for(&self, py: Python<'_>, device: i32) -> PyResult<Arc<LoadedPlan>> {
        if let Some(l) = self.fused.loaded(device) {
            return Ok(l);
        }
        let paths = kernel::python_paths(py);
        py.detach(|| self.fused.load(device, &paths))
            .map_err(|e| errors::runtime_error(py, self.name(), e))
    }

    /// `launch` on the emulated device: the same checks and parameter packing as on a GPU,
    /// then each launch runs the generated CUDA C in the CPU emulator, in order, with every
    /// pointer parameter bounds-checked against its array (or the workspace).
    fn launch_emulated(
        &self,
        py: Python<'_>,
        inputs: &[Bound<'_, PyAny>],
        scalars: &[Bound<'_, PyAny>],
        outputs: &[Bound<'_, PyAny>],
        workspace: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let plan = self.plan();
        let mut in_ptrs = Vec::with_capacity(inputs.len());
        for (i, (obj, spec)) in inputs.iter().zip(&plan.inputs).enumerate() {
            in_ptrs.push(self.device_pointer(py, obj, format!("input {i}"), Some(spec), None)?);
        }
        let mut out_ptrs = Vec::with_capacity(outputs.len());
        for (i, (obj, spec)) in outputs.iter().zip(&plan.outputs).enumerate() {
            out_ptrs.push(self.device_pointer(py, obj, format!("output {i}"), Some(spec), None)?);
        }
        let on_emulator = py
            .detach(|| self.fused.emulated())
            .map_err(|e| errors::runtime_error(py, self.name(), e))?;
        let ws = self.workspace_pointer(py, workspace, None)?;
        self.check_workspace(py, ws.1, on_emulator.workspace_bytes(), ws.0 != 0)?;
        let svs = scalars
            .iter()
            .enumerate()
            .map(|(i, s)| scalar_value(s, i))
            .collect::<PyResult<Vec<_>>>()?;
        let (in_addr, in_len): (Vec<u64>, Vec<usize>) = in_ptrs.into_iter().unzip();
        let (out_addr, out_len): (Vec<u64>, Vec<usize>) = out_ptrs.into_iter().unzip();
        let ptrs = DevicePointers {
            inputs: &in_addr,
            outputs: &out_addr,
            workspace: ws.0,
        };
        let extents = Extents {
            inputs: &in_len,
            outputs: &out_len,
            workspace: ws.1,
        };
        let site = (record::recording() || crate::graph::capturing())
            .then(|| crate::ledger::call_site(py));
        let result = py.detach(|| {
            // SAFETY: the pointers are host addresses of fake-CuPy arrays (and the workspace)
            // that the caller keeps referenced for the call, checked above to be C-contiguous
            // and of the plan's shapes and dtypes, with their byte lengths as the extents.
            unsafe {
                self.fused
                    .launch_emulated(&on_emulator, &ptrs, &extents, &svs, site)
            }
        });
        result.map_err(|e| errors::runtime_error(py, self.name(), e))
    }

    /// The workspace's address and byte length ((0, 0) without one).
    fn workspace_pointer(
        &self,
        py: Python<'_>,
        workspace: Option<&Bound<'_, PyAny>>,
        device: Option<i32>,
    ) -> PyResult<(u64, usize)> {
        match workspace.filter(|w| !w.is_none()) {
            Some(w) => self.device_pointer(py, w, "workspace".into(), None, device),
            None => Ok((0, 0)),
        }
    }

    /// A given workspace (`given`) of `nbytes` must hold the `needed` bytes of the plan on
    /// the device it runs on.
    fn check_workspace(
        &self,
        py: Python<'_>,
        nbytes: usize,
        needed: usize,
        given: bool,
    ) -> PyResult<()> {
        if given && nbytes < needed {
            return Err(errors::raise(
                py,
                "FusionValueError",
                format!(
                    "fused function '{}': the workspace has {nbytes} bytes, the plan needs \
                     {needed}",
                    self.name(),
                ),
            ));
        }
        Ok(())
    }

    /// The plan loaded for the device a launch would use now: the emulated device under the
    /// fake CuPy, else the current CUDA device, else (no driver) an H200.
    fn on_current_device(&self, py: Python<'_>) -> PyResult<Arc<DevicePlan>> {
        self.fused
            .for_inspection()
            .map_err(|e| errors::runtime_error(py, self.name(), e))
    }

    /// The calling thread's CUDA device (its current context's).
    pub(crate) fn current_device(&self, py: Python<'_>) -> PyResult<i32> {
        let driver = Driver::get().map_err(|e| errors::cuda_error(py, self.name(), e))?;
        device::launch_device(driver).map_err(|e| errors::cuda_error(py, self.name(), e))
    }

    fn device_pointer(
        &self,
        py: Python<'_>,
        obj: &Bound<'_, PyAny>,
        what: String,
        spec: Option<&fusion::TensorSpec>,
        device: Option<i32>,
    ) -> PyResult<(u64, usize)> {
        let got = match arrays::read_object(obj, true)? {
            Object::Device(info) => Ok(info),
            Object::Host(t) | Object::Other(t) => Err(t),
            Object::Scalar(..) => Err("a scalar".to_string()),
            Object::Struct(n, _) => Err(n),
            Object::Null => Err("None".to_string()),
        };
        let info = match got {
            Ok(info) => info,
            Err(got) => {
                return Err(errors::raise(
                    py,
                    "FusionTypeError",
                    format!(
                        "fused function '{}': {what}: expected a CuPy array, got {got}",
                        self.name()
                    ),
                ));
            }
        };
        let shape: Vec<usize> = info.shape.iter().map(|&d| d.max(0) as usize).collect();
        let dtype = info.dtype.map_err(|name| {
            errors::raise(
                py,
                "FusionTypeError",
                format!(
                    "fused function '{}': {what}: unsupported dtype {name}",
                    self.name()
                ),
            )
        })?;
        if let Some(spec) = spec {
            self.check_spec(py, what.clone(), dtype, &shape, spec)?;
        }
        if !info.c_contiguous {
            return Err(errors::raise(
                py,
                "FusionTypeError",
                format!(
                    "fused function '{}': {what}: expected a C-contiguous array",
                    self.name()
                ),
            ));
        }
        if let (Some(device), Some(on)) = (device, info.device) {
            if on != device {
                return Err(errors::raise(
                    py,
                    "KernelArgumentValueError",
                    format!(
                        "fused function '{}': {what} lives on device {on}, the current device \
                         is {device}",
                        self.name(),
                    ),
                ));
            }
        }
        let nbytes = shape.iter().product::<usize>() * dtype.itemsize();
        Ok((info.ptr, nbytes))
    }
}

#[pymethods]
impl FusionPlan {
    /// The plan: kernels, what each reads and writes, bytes moved, launches, buffers. The
    /// launches and the workspace are those of the device a launch would use now: the
    /// emulated device under the fake CuPy, else the current CUDA device, else an H200.
    fn explain(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.on_current_device(py)?.explain(self.plan()))
    }

    /// The CUDA C of every kernel (one module), for the device a launch would use now.
    fn cuda_source(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.on_current_device(py)?.source.clone())
    }

    #[getter(name)]
    fn plan_name(&self) -> String {
        self.plan().options.name.clone()
    }

    /// `(shape, dtype name)` of each input.
    #[getter]
    fn inputs(&self) -> Vec<(Vec<usize>, &'static str)> {
        self.plan()
            .inputs
            .iter()
            .map(|t| (t.shape.clone(), t.dtype.name()))
            .collect()
    }

    /// `(shape, dtype name)` of each output.
    #[getter]
    fn outputs(&self) -> Vec<(Vec<usize>, &'static str)> {
        self.plan()
            .outputs
            .iter()
            .map(|t| (t.shape.clone(), t.dtype.name()))
            .collect()
    }

    /// `(dtype name, weak)` of each scalar parameter.
    #[getter]
    fn scalars(&self) -> Vec<(&'static str, bool)> {
        self.plan()
            .scalars
            .iter()
            .map(|(d, w)| (d.name(), *w))
            .collect()
    }

    #[getter]
    fn workspace_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.on_current_device(py)?.workspace_bytes())
    }

    #[getter]
    fn bytes_read(&self, py: Python<'_>) -> PyResult<u64> {
        let on_device = self.on_current_device(py)?;
        Ok(on_device.kernels.iter().map(|k| k.bytes_read).sum())
    }

    #[getter]
    fn bytes_written(&self, py: Python<'_>) -> PyResult<u64> {
        let on_device = self.on_current_device(py)?;
        Ok(on_device.kernels.iter().map(|k| k.bytes_written).sum())
    }

    /// One dict per kernel: name, kind, strategy, reads, writes, bytes, fused ops, launches
    /// (name, grid, block, shared_bytes, params as (name, C type, value)).
    #[getter]
    fn kernels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        let on_device = self.on_current_device(py)?;
        for (k, on) in self.plan().kernels.iter().zip(&on_device.kernels) {
            let d = PyDict::new(py);
            d.set_item("name", &k.name)?;
            match &k.kind {
                KernelKind::Elementwise { elements } => {
                    d.set_item("kind", "elementwise")?;
                    d.set_item("elements", elements)?;
                }
                KernelKind::Reduction {
                    strategy,
                    outputs,
                    reduced,
                } => {
                    d.set_item("kind", "reduction")?;
                    d.set_item("outputs", outputs)?;
                    d.set_item("reduced", reduced)?;
                    let s = match strategy {
                        Strategy::Split => "split",
                        Strategy::WarpPerRow => "warp_per_row",
                        Strategy::LanesPerRow(_) => "lanes_per_row",
                        Strategy::ThreadPerOutput => "thread_per_output",
                    };
                    d.set_item("strategy", s)?;
                    if let Strategy::LanesPerRow(lanes) = strategy {
                        d.set_item("lanes_per_row", lanes)?;
                    }
                }
            }
            let names = |ops: &[Operand]| ops.iter().map(operand_name).collect::<Vec<_>>();
            d.set_item("reads", names(&k.reads))?;
            d.set_item("writes", names(&k.writes))?;
            d.set_item("bytes_read", on.bytes_read)?;
            d.set_item("bytes_written", on.bytes_written)?;
            d.set_item("fused_ops", k.fused_ops.clone())?;
            let launches = PyList::empty(py);
            for l in &on.launches {
                let ld = PyDict::new(py);
                ld.set_item("name", &l.name)?;
                ld.set_item("grid", l.grid)?;
                ld.set_item("block", l.block)?;
                ld.set_item("shared_bytes", l.shared_bytes)?;
                let params: Vec<(String, String, String)> = l
                    .params
                    .iter()
                    .map(|p| {
                        (
                            p.name.clone(),
                            fusion::param_c_type(p),
                            param_value(&p.value),
                        )
                    })
                    .collect();
                ld.set_item("params", params)?;
                launches.append(ld)?;
            }
            d.set_item("launches", launches)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Runs the plan on the CPU: `inputs` and `outputs` are C-contiguous NumPy arrays of the
    /// plan's shapes and dtypes (outputs writable, overlapping nothing), `scalars` Python
    /// bools, ints and floats. Releases the GIL while it runs.
    fn execute_cpu(
        &self,
        py: Python<'_>,
        inputs: Vec<Bound<'_, PyAny>>,
        scalars: Vec<Bound<'_, PyAny>>,
        outputs: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.count(py, "input arrays", self.plan().inputs.len(), inputs.len())?;
        self.count(py, "outputs", self.plan().outputs.len(), outputs.len())?;
        self.count(py, "scalars", self.plan().scalars.len(), scalars.len())?;
        let mut ins = Vec::with_capacity(inputs.len());
        for (i, (obj, spec)) in inputs.iter().zip(&self.plan().inputs).enumerate() {
            let v = host_view(py, obj, &format!("input {i}"), false)?;
            self.check_spec(py, format!("input {i}"), v.dtype, &v.shape, spec)?;
            ins.push(v);
        }
        let mut outs = Vec::with_capacity(outputs.len());
        for (i, (obj, spec)) in outputs.iter().zip(&self.plan().outputs).enumerate() {
            let v = host_view(py, obj, &format!("output {i}"), true)?;
            self.check_spec(py, format!("output {i}"), v.dtype, &v.shape, spec)?;
            outs.push(v);
        }
        let svs = scalars
            .iter()
            .enumerate()
            .map(|(i, s)| scalar_value(s, i))
            .collect::<PyResult<Vec<_>>>()?;
        self.run_host(py, ins, outs, &svs)
    }

    /// Compiles the plan's CUDA for the current device (disk cache first); True on a hit.
    /// On the emulated device (the fake CuPy), builds the emulation library of every launch;
    /// True when all came from the disk cache.
    fn compile(&self, py: Python<'_>) -> PyResult<bool> {
        let device = Device::current().map_err(|e| errors::cuda_error(py, self.name(), e))?;
        let paths = match device {
            Device::Cuda(_) => kernel::python_paths(py),
            Device::Emulated => Vec::new(),
        };
        py.detach(|| self.fused.compile(device, &paths))
            .map_err(|e| errors::runtime_error(py, self.name(), e))
    }

    /// Launches every kernel of the plan, in order, on `stream` (CuPy's current stream by
    /// default): `inputs`/`outputs` are C-contiguous CuPy arrays of the plan's shapes and
    /// dtypes, `workspace` a device array of at least `workspace_bytes` bytes (or None when
    /// the plan needs none). Compiles once per device. Each launch is a ledger `launch` event.
    #[pyo3(signature = (inputs, scalars, outputs, workspace=None, stream=None))]
    fn launch(
        &self,
        py: Python<'_>,
        inputs: Vec<Bound<'_, PyAny>>,
        scalars: Vec<Bound<'_, PyAny>>,
        outputs: Vec<Bound<'_, PyAny>>,
        workspace: Option<Bound<'_, PyAny>>,
        stream: Option<usize>,
    ) -> PyResult<()> {
        let plan = self.plan();
        self.count(py, "input arrays", plan.inputs.len(), inputs.len())?;
        self.count(py, "outputs", plan.outputs.len(), outputs.len())?;
        self.count(py, "scalars", plan.scalars.len(), scalars.len())?;
        if crate::graph::capturing() {
            let given: Vec<&Bound<'_, PyAny>> = inputs.iter().chain(&scalars).collect();
            crate::graph::refuse_params(
                py,
                &format!("fused function '{}'", self.name()),
                &given,
                "a replay updates the parameters of CudaKernel and Kernel launches only; pass \
                 it to a CudaKernel, or capture the graph again for each value",
            )?;
            crate::graph::fix_derived(py, &format!("fused function '{}'", self.name()), &given)?;
            // the captured launches point at these arrays (and the workspace) at every replay
            crate::graph::keep(inputs.iter().chain(&outputs).chain(workspace.as_ref()));
        }
        let device = match Device::current() {
            Ok(Device::Emulated) => {
                return self.launch_emulated(py, &inputs, &scalars, &outputs, workspace.as_ref())
            }
            Ok(Device::Cuda(device)) => device,
            Err(e) => return Err(errors::cuda_error(py, self.name(), e)),
        };
        let mut in_ptrs = Vec::with_capacity(inputs.len());
        for (i, (obj, spec)) in inputs.iter().zip(&plan.inputs).enumerate() {
            in_ptrs.push(
                self.device_pointer(py, obj, format!("input {i}"), Some(spec), Some(device))?
                    .0,
            );
        }
        let mut out_ptrs = Vec::with_capacity(outputs.len());
        for (i, (obj, spec)) in outputs.iter().zip(&plan.outputs).enumerate() {
            out_ptrs.push(
                self.device_pointer(py, obj, format!("output {i}"), Some(spec), Some(device))?
                    .0,
            );
        }
        let (ws, ws_bytes) = self.workspace_pointer(py, workspace.as_ref(), Some(device))?;
        let svs = scalars
            .iter()
            .enumerate()
            .map(|(i, s)| scalar_value(s, i))
            .collect::<PyResult<Vec<_>>>()?;
        let stream = match stream {
            // SAFETY: the caller gave this handle as the stream to launch on; a stream it
            // destroyed is its error, as with any CUDA API that takes a stream.
            Some(s) => unsafe { StreamHandle::from_raw(s) },
            None => crate::cupy_stream::stream_on_device(py, device)?,
        };
        // the workspace the plan needs on this device is known once it is loaded there
        let workspace = |needed: usize| {
            self.check_workspace(py, ws_bytes, needed, ws != 0)?;
            Ok(ws)
        };
        self.launch_pointers(py, device, stream, &in_ptrs, &out_ptrs, workspace, &svs)
    }

    #[getter]
    fn is_compiled(&self) -> bool {
        Device::current_if_known().is_some_and(|device| self.fused.is_compiled(device))
    }

    fn __repr__(&self) -> String {
        format!(
            "<FusionPlan '{}': {} kernel(s)>",
            self.name(),
            self.plan().kernels.len()
        )
    }
}

/// `(name, arity)` of every op of the table (what the tracer can call by name).
#[pyfunction]
fn _fusion_ops() -> Vec<(&'static str, usize)> {
    fusion::OPS.iter().map(|d| (d.name, d.arity)).collect()
}

/// `(alias, table name)` of the NumPy and array-API spellings of table ops (`divide`, ...).
#[pyfunction]
fn _fusion_op_aliases() -> Vec<(&'static str, &'static str)> {
    fusion::OP_ALIASES.to_vec()
}

/// `(name, traced name)` of every reduction a fused function may call (`amin` is `min`).
#[pyfunction]
fn _fusion_reductions() -> Vec<(&'static str, &'static str)> {
    fusion::REDUCTIONS.to_vec()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FusionGraphBuilder>()?;
    m.add_class::<FusionGraph>()?;
    m.add_class::<FusionPlan>()?;
    m.add_function(wrap_pyfunction!(_fusion_ops, m)?)?;
    m.add_function(wrap_pyfunction!(_fusion_op_aliases, m)?)?;
    m.add_function(wrap_pyfunction!(_fusion_reductions, m)?)?;
    Ok(())
}
