//! The cached-call path of fused functions: `FusedDispatcher`, the base class of
//! `cunumpy.kernels.FusedFunction`.
//!
//! Every call enters here (`__call__`, or vectorcall for a repeat). The arguments are read,
//! matched against the remembered signatures (argument types, dtypes, shapes), the outputs
//! allocated (or `out=` arrays checked and written in place) and the plan run (launched on
//! CuPy's current stream, or executed on the CPU for NumPy arrays). A call with a signature
//! not remembered yet is a miss: Python traces and plans it and remembers it here
//! (`_miss` -> `_remember`), then this same entry runs the call, so the first call and the
//! repeats return what one contract says. The cases this path declines — other keywords,
//! non-contiguous arrays, subclasses, `out=` arrays that overlap an input or do not match,
//! the emulated device, an active kernel profile — take the Python path (`_call_slow`),
//! which gives the full checks and messages.

use crate::arrays;
use crate::arrays::{read_numpy, Fields};
use crate::fusion::{byte_range, overlaps, scalar_value, FusionPlan, HostView};
use crate::held::Held;
use crate::host_pool::pooled_empty;
use crate::vectorcall::{ArgList, VectorArgs, VectorcallSlot};
use cunumpy_core::dtype::DType;
use cunumpy_core::sync::lock;
use cunumpy_fusion::ScalarValue;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyComplex, PyDict, PyFloat, PyInt, PyList, PyTuple, PyType};
use std::sync::{Arc, Mutex};

/// What the Rust entry did with a call.
enum Outcome {
    Ran(Py<PyAny>),
    /// The signature is not remembered (yet): a miss for Python to trace and plan.
    Unknown,
    /// A call this path does not take (see the module doc): the Python path runs it.
    Declined,
}

/// At most this many signatures are remembered per fused function (later ones stay slow).
const MAX_REMEMBERED: usize = 64;

/// What the signature of a call is made of, per argument.
#[derive(Clone, PartialEq)]
enum ArgKind {
    Host {
        dtype: DType,
        shape: Vec<usize>,
    },
    Device {
        dtype: DType,
        shape: Vec<usize>,
    },
    /// A scalar of this exact type (its address; `CachedCall` keeps the type alive).
    Scalar(usize),
}

/// One argument as read for a call.
enum ArgValue {
    Host(HostView),
    Device { ptr: u64, nbytes: u64, device: i32 },
    Scalar(ScalarValue),
}

/// A C-contiguous CuPy array's facts.
struct DeviceArray {
    dtype: DType,
    shape: Vec<usize>,
    ptr: u64,
    device: i32,
}

impl DeviceArray {
    fn range(&self) -> (u64, u64) {
        let n: usize = self.shape.iter().product();
        (self.ptr, self.ptr + (n * self.dtype.itemsize()) as u64)
    }
}

/// An exact, C-contiguous `cupy.ndarray` of a supported dtype, read by the binding's one CuPy
/// reader (None otherwise: the fast path declines it).
fn read_cupy(obj: &Bound<'_, PyAny>) -> PyResult<Option<DeviceArray>> {
    if !arrays::is_exact_cupy_array(obj) {
        return Ok(None);
    }
    let info = arrays::read_cupy(obj, Fields::Shape)?;
    let (true, Ok(dtype), Some(device)) = (info.c_contiguous, info.dtype, info.device) else {
        return Ok(None);
    };
    if info.shape.iter().any(|&d| d < 0) {
        return Ok(None);
    }
    Ok(Some(DeviceArray {
        dtype,
        // CuPy's shapes are never negative (checked above); the conversion reuses the buffer
        shape: info.shape.into_iter().map(|d| d as usize).collect(),
        ptr: info.ptr,
        device,
    }))
}

struct Output {
    shape: Py<PyTuple>,
    dtype: Py<PyAny>,
    /// NumPy gives a 0-d result as a scalar.
    zero_d: bool,
    spec_dtype: DType,
    spec_shape: Vec<usize>,
}

/// A device workspace of the plan, one per (device, stream): kernels on one stream run in
/// order, so consecutive calls on it can share one.
struct Workspace {
    device: i32,
    stream: usize,
    ptr: u64,
    _array: Py<PyAny>,
}

struct CachedCall {
    key: Vec<ArgKind>,
    _scalar_types: Vec<Py<PyType>>,
    plan: Py<FusionPlan>,
    constants: Vec<ScalarValue>,
    outputs: Vec<Output>,
    tuple_out: bool,
    workspaces: Mutex<Vec<Workspace>>,
    /// Per output: the last small result handed out, taken back once its caller dropped it.
    recycled: Mutex<Vec<Option<Recycled>>>,
}

/// Outputs up to this size are recycled (see `Recycled`); larger ones cost far more to compute
/// than to allocate, and holding one back would keep real memory from CuPy's pool.
const RECYCLE_MAX_BYTES: usize = 64 * 1024;

/// A small device result of an earlier call. When nothing but this cache references it any
/// more (reference count 1, no weak reference) and the new call runs on the same device and
/// stream, it is written again instead of allocating: what CuPy's pool would hand back for the
/// freed block, without the 1.7-2 us of creating an array (stream order keeps the previous
/// kernel's writes before the new ones, as the pool's per-stream reuse does).
struct Recycled {
    array: Py<PyAny>,
    ptr: u64,
    stream: usize,
    device: i32,
}

#[pyclass(subclass, frozen, module = "cunumpy._core", name = "FusedDispatcher")]
pub struct FusedDispatcher {
    /// Read by CPython on every call (see vectorcall.rs).
    vectorcall: VectorcallSlot,
    calls: Mutex<Vec<Arc<CachedCall>>>,
    last_device: Mutex<Option<LastDevice>>,
}

/// Reads one argument: its part of the signature and its value. None when the fast path does
/// not take it (the Python path then decides what it is).
fn read_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<(ArgKind, ArgValue)>> {
    let py = obj.py();
    let np = arrays::numpy(py)?;
    let ty = obj.get_type();
    if ty.is(np.ndarray.bind(py)) {
        return Ok(read_numpy(obj, false)?.map(|v| {
            (
                ArgKind::Host {
                    dtype: v.dtype,
                    shape: v.shape.clone(),
                },
                ArgValue::Host(v),
            )
        }));
    }
    if arrays::cupy_ndarray(py).is_some_and(|t| ty.is(t)) {
        return Ok(read_cupy(obj)?.map(|a| {
            let (start, end) = a.range();
            (
                ArgKind::Device {
                    dtype: a.dtype,
                    shape: a.shape,
                },
                ArgValue::Device {
                    ptr: a.ptr,
                    nbytes: end - start,
                    device: a.device,
                },
            )
        }));
    }
    if is_python_scalar(obj) {
        return Ok(Some((
            ArgKind::Scalar(ty.as_ptr() as usize),
            ArgValue::Scalar(scalar_value(obj, 0)?),
        )));
    }
    if obj.is_instance(np.generic.bind(py))? {
        let item = obj.call_method0(intern!(py, "item"))?;
        let Ok(value) = scalar_value(&item, 0) else {
            return Ok(None);
        };
        return Ok(Some((
            ArgKind::Scalar(ty.as_ptr() as usize),
            ArgValue::Scalar(value),
        )));
    }
    Ok(None)
}

fn read_args(args: &Bound<'_, PyTuple>) -> PyResult<Option<(Vec<ArgKind>, Vec<ArgValue>)>> {
    let mut kinds = Vec::with_capacity(args.len());
    let mut values = Vec::with_capacity(args.len());
    for a in args.iter() {
        match read_arg(&a)? {
            Some((k, v)) => {
                kinds.push(k);
                values.push(v);
            }
            None => return Ok(None),
        }
    }
    Ok(Some((kinds, values)))
}

/// Whether a kernel profile is collecting (then calls take the Python path, which times them).
pub(crate) fn profiling(py: Python<'_>) -> PyResult<bool> {
    static ACTIVE: PyOnceLock<Py<PyList>> = PyOnceLock::new();
    let active = ACTIVE.get_or_try_init(py, || {
        py.import("cunumpy.kernels._profile")?
            .getattr("active")?
            .cast_into::<PyList>()
            .map(Bound::unbind)
            .map_err(PyErr::from)
    })?;
    Ok(!active.bind(py).is_empty())
}

fn device_pointer(array: &Bound<'_, PyAny>) -> PyResult<u64> {
    let py = array.py();
    array
        .getattr(intern!(py, "data"))?
        .getattr(intern!(py, "ptr"))?
        .extract()
}

impl CachedCall {
    fn scalars(&self, values: &[ArgValue]) -> Vec<ScalarValue> {
        let mut out: Vec<ScalarValue> = values
            .iter()
            .filter_map(|v| match v {
                ArgValue::Scalar(s) => Some(*s),
                _ => None,
            })
            .collect();
        out.extend_from_slice(&self.constants);
        out
    }

    fn result<'py>(&self, py: Python<'py>, outs: Vec<Bound<'py, PyAny>>) -> PyResult<Py<PyAny>> {
        if self.tuple_out {
            return Ok(PyTuple::new(py, outs)?.into_any().unbind());
        }
        outs.into_iter()
            .next()
            .map(Bound::unbind)
            .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("internal: no output"))
    }

    /// Runs on the CPU into fresh outputs, or into `given` ones (`out=`); None when a given
    /// output is not one the fast path writes as is (the Python path then handles it).
    fn run_host(
        &self,
        py: Python<'_>,
        values: Vec<ArgValue>,
        given: Option<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let plan = self.plan.get();
        let svs = self.scalars(&values);
        let ins: Vec<HostView> = values
            .into_iter()
            .filter_map(|v| match v {
                ArgValue::Host(h) => Some(h),
                _ => None,
            })
            .collect();
        let mut arrays_out = Vec::with_capacity(self.outputs.len());
        let mut views: Vec<HostView> = Vec::with_capacity(self.outputs.len());
        match given {
            Some(targets) => {
                let ndarray = arrays::numpy(py)?.ndarray.bind(py);
                for (t, o) in targets.into_iter().zip(&self.outputs) {
                    if !t.get_type().is(ndarray) {
                        return Ok(None);
                    }
                    let Some(view) = read_numpy(&t, true)? else {
                        return Ok(None);
                    };
                    let range = byte_range(&view);
                    let clash = ins
                        .iter()
                        .chain(&views)
                        .any(|v| v.len > 0 && view.len > 0 && overlaps(range, byte_range(v)));
                    if view.dtype != o.spec_dtype || view.shape != o.spec_shape || clash {
                        return Ok(None);
                    }
                    views.push(view);
                    arrays_out.push(t);
                }
                plan.run_host(py, ins, views, &svs)?;
                return self.result(py, arrays_out).map(Some);
            }
            None => {
                for o in &self.outputs {
                    // large results come from the host memory pool (`host_pool.rs`)
                    let nbytes = o.spec_shape.iter().product::<usize>() * o.spec_dtype.itemsize();
                    let array = pooled_empty(py, o.shape.bind(py), o.dtype.bind(py), nbytes)?;
                    let view = read_numpy(&array, true)?.ok_or_else(|| {
                        pyo3::exceptions::PyRuntimeError::new_err(
                            "internal: numpy.empty gave no view",
                        )
                    })?;
                    views.push(view);
                    arrays_out.push(array);
                }
            }
        }
        plan.run_host(py, ins, views, &svs)?;
        let unit = PyTuple::empty(py);
        let outs = arrays_out
            .into_iter()
            .zip(&self.outputs)
            .map(|(a, o)| if o.zero_d { a.get_item(&unit) } else { Ok(a) })
            .collect::<PyResult<Vec<_>>>()?;
        self.result(py, outs).map(Some)
    }

    fn workspace(&self, py: Python<'_>, device: i32, stream: usize, bytes: usize) -> PyResult<u64> {
        if bytes == 0 {
            return Ok(0);
        }
        if let Some(w) = lock(&self.workspaces)
            .iter()
            .find(|w| w.device == device && w.stream == stream)
        {
            return Ok(w.ptr);
        }
        let ndarray = arrays::cupy_ndarray(py).ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err("internal: CuPy is not imported")
        })?;
        let array = ndarray.call1(((bytes,), "uint8"))?;
        let ptr = device_pointer(&array)?;
        let mut all = lock(&self.workspaces);
        if all.len() >= 8 {
            all.clear();
        }
        all.push(Workspace {
            device,
            stream,
            ptr,
            _array: array.unbind(),
        });
        Ok(ptr)
    }

    /// Checks a device call: inputs on the current device, `given` outputs (`out=`) of the
    /// plan's dtypes and shapes, on that device, overlapping no input. None when the fast
    /// path cannot take the call as is (the Python path then raises or handles it).
    fn prepare_device(
        &self,
        py: Python<'_>,
        values: &[ArgValue],
        given: Option<&[Bound<'_, PyAny>]>,
    ) -> PyResult<Option<Prepared>> {
        let device = self.plan.get().current_device(py)?;
        let mut in_ptrs = Vec::with_capacity(values.len());
        let mut ranges = Vec::with_capacity(values.len());
        for v in values {
            if let ArgValue::Device {
                ptr,
                nbytes,
                device: on,
            } = v
            {
                if *on != device {
                    return Ok(None);
                }
                in_ptrs.push(*ptr);
                ranges.push((*ptr, *ptr + *nbytes));
            }
        }
        let out_ptrs = match given {
            None => None,
            Some(targets) => {
                let mut ptrs = Vec::with_capacity(targets.len());
                for (t, o) in targets.iter().zip(&self.outputs) {
                    let Some(a) = read_cupy(t)? else {
                        return Ok(None);
                    };
                    let range = a.range();
                    let clash = range.1 > range.0 && ranges.iter().any(|r| overlaps(range, *r));
                    if a.dtype != o.spec_dtype
                        || a.shape != o.spec_shape
                        || a.device != device
                        || clash
                    {
                        return Ok(None);
                    }
                    ranges.push(range);
                    ptrs.push(a.ptr);
                }
                Some(ptrs)
            }
        };
        Ok(Some(Prepared {
            device,
            in_ptrs,
            out_ptrs,
            svs: self.scalars(values),
        }))
    }

    /// Launches a prepared call into `given` outputs (those `prepare_device` checked) or
    /// fresh ones, on CuPy's current stream.
    fn launch_device(
        &self,
        py: Python<'_>,
        prepared: &Prepared,
        given: Option<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<Py<PyAny>> {
        let plan = self.plan.get();
        // `prepared.device` is the current context's device (`prepare_device`, `repeat_device`)
        let handle = crate::cupy_stream::stream_on_device(py, prepared.device)?;
        // recycled outputs and workspaces are kept per stream (by its raw handle)
        let stream = handle.raw();
        let (outs, fresh_ptrs) = match given {
            Some(targets) => (targets, None),
            None => {
                let mut outs = Vec::with_capacity(self.outputs.len());
                let mut ptrs = Vec::with_capacity(self.outputs.len());
                for (i, o) in self.outputs.iter().enumerate() {
                    let (array, ptr) = match self.take_recycled(py, i, prepared.device, stream)? {
                        Some(r) => (r.array.into_bound(py), r.ptr),
                        None => {
                            let ndarray = arrays::cupy_ndarray(py).ok_or_else(|| {
                                pyo3::exceptions::PyRuntimeError::new_err(
                                    "internal: CuPy is not imported",
                                )
                            })?;
                            let array = ndarray.call1((o.shape.bind(py), o.dtype.bind(py)))?;
                            let ptr = device_pointer(&array)?;
                            (array, ptr)
                        }
                    };
                    ptrs.push(ptr);
                    outs.push(array);
                }
                (outs, Some(ptrs))
            }
        };
        let out_ptrs = match (&fresh_ptrs, &prepared.out_ptrs) {
            (Some(p), _) | (None, Some(p)) => p.as_slice(),
            (None, None) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "internal: no output pointers",
                ))
            }
        };
        plan.launch_pointers(
            py,
            prepared.device,
            handle,
            &prepared.in_ptrs,
            out_ptrs,
            |bytes| self.workspace(py, prepared.device, stream, bytes),
            &prepared.svs,
        )?;
        if let Some(ptrs) = &fresh_ptrs {
            self.keep_small(&outs, ptrs, prepared.device, stream);
        }
        self.result(py, outs)
    }

    /// Output `i`'s recycled array, if its caller has dropped it and it was made on this
    /// device and stream (see `Recycled`).
    fn take_recycled(
        &self,
        py: Python<'_>,
        i: usize,
        device: i32,
        stream: usize,
    ) -> PyResult<Option<Recycled>> {
        let mut slots = lock(&self.recycled);
        let Some(slot) = slots.get_mut(i) else {
            return Ok(None);
        };
        let free = match slot {
            Some(r) => {
                // SAFETY: `r.array` is a live object (this slot owns a strong reference) and
                // the GIL is held (`py`), so reading its reference count is sound.
                let only_ours = unsafe { pyo3::ffi::Py_REFCNT(r.array.as_ptr()) } == 1;
                r.device == device
                    && r.stream == stream
                    && only_ours
                    && weak_reference_count(r.array.bind(py))? == 0
            }
            None => false,
        };
        Ok(if free { slot.take() } else { None })
    }

    /// Keeps the small fresh outputs of this call for recycling.
    fn keep_small(&self, outs: &[Bound<'_, PyAny>], ptrs: &[u64], device: i32, stream: usize) {
        let mut slots = lock(&self.recycled);
        slots.resize_with(self.outputs.len(), || None);
        for (i, ((array, ptr), o)) in outs.iter().zip(ptrs).zip(&self.outputs).enumerate() {
            let nbytes = o.spec_shape.iter().product::<usize>() * o.spec_dtype.itemsize();
            slots[i] = (nbytes <= RECYCLE_MAX_BYTES).then(|| Recycled {
                array: array.clone().unbind(),
                ptr: *ptr,
                stream,
                device,
            });
        }
    }
}

/// How many weak references point at `obj` (`weakref.getweakrefcount`).
fn weak_reference_count(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    static COUNT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = obj.py();
    COUNT
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("weakref")?.getattr("getweakrefcount")?.unbind())
        })?
        .bind(py)
        .call1((obj,))?
        .extract()
}

/// A device call checked once: what a repeat with the same objects launches again.
#[derive(Clone)]
struct Prepared {
    device: i32,
    in_ptrs: Vec<u64>,
    /// The `out=` arrays' pointers (None: fresh outputs each call).
    out_ptrs: Option<Vec<u64>>,
    svs: Vec<ScalarValue>,
}

/// The last device call of a fused function. A call passing the very same objects (see
/// `Held`: arrays by weak reference, so a dead one never matches and none is kept alive)
/// whose arrays still have the same shapes (CuPy allows `a.shape = ...` in place) is launched
/// without reading the arrays again.
struct LastDevice {
    objects: Vec<Held>,
    /// Per object: its `shape` tuple when it is an array.
    shapes: Vec<Option<Py<PyAny>>>,
    n_args: usize,
    call: Arc<CachedCall>,
    prepared: Prepared,
}

impl FusedDispatcher {
    fn unconfigured() -> Self {
        FusedDispatcher {
            vectorcall: VectorcallSlot::new(fused_vectorcall),
            calls: Mutex::new(Vec::new()),
            last_device: Mutex::new(None),
        }
    }

    /// Gives the class vectorcall (see vectorcall.rs); false when it keeps `tp_call`.
    pub(crate) fn register_vectorcall(py: Python<'_>) -> PyResult<bool> {
        crate::vectorcall::register_class(Bound::new(py, Self::unconfigured())?, |s| &s.vectorcall)
    }

    fn find(&self, key: &[ArgKind]) -> Option<Arc<CachedCall>> {
        lock(&self.calls).iter().find(|c| c.key == key).cloned()
    }

    /// The call from Rust (see `Outcome`). `out` is the `out=` keyword (an array, or a
    /// tuple or list of arrays for several outputs).
    fn fast_call(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        out: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Outcome> {
        if cunumpy_runtime::device::emulated()
            || cunumpy_runtime::graph::capturing()
            || profiling(py)?
        {
            return Ok(Outcome::Declined);
        }
        let targets: Option<Vec<Bound<'_, PyAny>>> = match out {
            None => None,
            Some(o) if o.is_instance_of::<PyTuple>() || o.is_instance_of::<PyList>() => {
                Some(o.try_iter()?.collect::<PyResult<_>>()?)
            }
            Some(o) => Some(vec![o]),
        };
        if let Some(result) = self.repeat_device(py, &ArgList::Tuple(args), targets.as_deref())? {
            return Ok(Outcome::Ran(result));
        }
        let Some((kinds, values)) = read_args(args)? else {
            return Ok(Outcome::Declined);
        };
        let Some(call) = self.find(&kinds) else {
            return Ok(Outcome::Unknown);
        };
        if targets
            .as_ref()
            .is_some_and(|t| t.len() != call.outputs.len())
        {
            return Ok(Outcome::Declined); // the Python path names the mismatch
        }
        if !kinds.iter().any(|k| matches!(k, ArgKind::Device { .. })) {
            return Ok(match call.run_host(py, values, targets)? {
                Some(result) => Outcome::Ran(result),
                None => Outcome::Declined,
            });
        }
        let Some(prepared) = call.prepare_device(py, &values, targets.as_deref())? else {
            return Ok(Outcome::Declined);
        };
        let all: Vec<Bound<'_, PyAny>> = args
            .iter()
            .chain(targets.iter().flatten().cloned())
            .collect();
        let shapes = all
            .iter()
            .map(|o| {
                if read_arg_is_scalar(o) {
                    Ok(None)
                } else {
                    o.getattr(intern!(py, "shape")).map(|s| Some(s.unbind()))
                }
            })
            .collect::<PyResult<Vec<_>>>()?;
        let objects = all.iter().map(Held::new).collect();
        let result = call.launch_device(py, &prepared, targets)?;
        *lock(&self.last_device) = Some(LastDevice {
            objects,
            shapes,
            n_args: args.len(),
            call,
            prepared,
        });
        Ok(Outcome::Ran(result))
    }

    /// The last device call again, when this call passes the very same objects (see
    /// `LastDevice`); None otherwise.
    fn repeat_device(
        &self,
        py: Python<'_>,
        args: &ArgList<'_, '_>,
        targets: Option<&[Bound<'_, PyAny>]>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let (call, prepared) = {
            let last = lock(&self.last_device);
            let Some(l) = last.as_ref() else {
                return Ok(None);
            };
            let given = targets.unwrap_or(&[]);
            if l.n_args != args.len()
                || l.objects.len() != args.len() + given.len()
                || l.prepared.out_ptrs.is_some() != targets.is_some()
            {
                return Ok(None);
            }
            let objects: Vec<Borrowed<'_, '_, PyAny>> = (0..args.len())
                .filter_map(|i| args.get(i))
                .chain(given.iter().map(|g| g.as_borrowed()))
                .collect();
            let same = objects.len() == l.objects.len()
                && objects.iter().zip(&l.objects).all(|(a, held)| held.is(a));
            if !same {
                return Ok(None);
            }
            for (o, shape) in objects.iter().zip(&l.shapes) {
                if let Some(shape) = shape {
                    if !o.getattr(intern!(py, "shape"))?.eq(shape.bind(py))? {
                        return Ok(None);
                    }
                }
            }
            (l.call.clone(), l.prepared.clone())
        };
        let device = call.plan.get().current_device(py)?;
        if device != prepared.device {
            return Ok(None);
        }
        call.launch_device(py, &prepared, targets.map(<[_]>::to_vec))
            .map(Some)
    }
}

/// The `out=` keyword of a call: None when the keywords are not the fast path's (anything but
/// a lone `out`), Some(None) when no output is given, Some(Some(o)) for `out=o`.
#[allow(clippy::option_option)]
fn out_keyword<'py>(
    py: Python<'py>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Option<Option<Bound<'py, PyAny>>>> {
    Ok(match kwargs {
        Some(k) if !k.is_empty() => {
            if k.len() == 1 {
                k.get_item(intern!(py, "out"))?
                    .map(|o| (!o.is_none()).then_some(o))
            } else {
                None
            }
        }
        _ => Some(None),
    })
}

/// Whether `obj` is exactly a Python bool, int, float or complex (not a subclass).
fn is_python_scalar(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_exact_instance_of::<PyBool>()
        || obj.is_exact_instance_of::<PyInt>()
        || obj.is_exact_instance_of::<PyFloat>()
        || obj.is_exact_instance_of::<PyComplex>()
}

/// Whether an argument the fast path took is a scalar (arrays have a `shape` to watch).
fn read_arg_is_scalar(obj: &Bound<'_, PyAny>) -> bool {
    is_python_scalar(obj)
        || arrays::numpy(obj.py())
            .map(|np| obj.is_instance(np.generic.bind(obj.py())).unwrap_or(false))
            .unwrap_or(false)
}

#[pymethods]
impl FusedDispatcher {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        Self::unconfigured()
    }

    /// Runs the call in Rust; a new signature is first traced, planned and remembered by
    /// Python (`_miss`); what this path declines goes to `_call_slow`.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if let Some(out) = out_keyword(py, kwargs)? {
            match slf.get().fast_call(py, args, out)? {
                Outcome::Ran(result) => return Ok(result),
                Outcome::Declined => {}
                Outcome::Unknown => {
                    // a miss: Python traces, plans and remembers; then this entry runs it
                    let remembered = slf.call_method1(intern!(py, "_miss"), args)?;
                    if remembered.is_truthy()? {
                        let out = out_keyword(py, kwargs)?.flatten();
                        if let Outcome::Ran(result) = slf.get().fast_call(py, args, out)? {
                            return Ok(result);
                        }
                    }
                }
            }
        }
        slf.call_method(intern!(py, "_call_slow"), args, kwargs)
            .map(Bound::unbind)
    }

    /// Remembers that calls with these arguments' signature run `plan` with the trace's
    /// `constants` after the call's scalars; False when the arguments are not all ones the
    /// fast path reads (the call then always takes the Python path).
    fn _remember(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        plan: Py<FusionPlan>,
        constants: Vec<Bound<'_, PyAny>>,
        tuple_out: bool,
    ) -> PyResult<bool> {
        let Some((key, _)) = read_args(args)? else {
            return Ok(false);
        };
        let host = key.iter().any(|k| matches!(k, ArgKind::Host { .. }));
        let device = key.iter().any(|k| matches!(k, ArgKind::Device { .. }));
        if host && device {
            return Ok(false);
        }
        let constants = constants
            .iter()
            .enumerate()
            .map(|(i, c)| scalar_value(c, i))
            .collect::<PyResult<Vec<_>>>()?;
        let np_dtype = py.import("numpy")?.getattr("dtype")?;
        let outputs = plan
            .get()
            .plan()
            .outputs
            .iter()
            .map(|spec| {
                Ok(Output {
                    zero_d: spec.shape.is_empty(),
                    spec_dtype: spec.dtype,
                    spec_shape: spec.shape.clone(),
                    shape: PyTuple::new(py, &spec.shape)?.unbind(),
                    dtype: np_dtype.call1((spec.dtype.name(),))?.unbind(),
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let scalar_types = args.iter().map(|a| a.get_type().unbind()).collect();
        let mut calls = lock(&self.calls);
        if calls.len() >= MAX_REMEMBERED || calls.iter().any(|c| c.key == key) {
            return Ok(calls.iter().any(|c| c.key == key));
        }
        calls.push(Arc::new(CachedCall {
            key,
            _scalar_types: scalar_types,
            plan,
            constants,
            outputs,
            tuple_out,
            workspaces: Mutex::new(Vec::new()),
            recycled: Mutex::new(Vec::new()),
        }));
        Ok(true)
    }

    /// How many signatures the fast path knows.
    #[getter]
    fn _remembered(&self) -> usize {
        lock(&self.calls).len()
    }

    /// Forgets every remembered signature and the last device call (`clear_cache()`).
    fn _forget(&self) {
        lock(&self.calls).clear();
        *lock(&self.last_device) = None;
    }
}

/// The vectorcall fast path of a fused function: a repeat of the last device call (the same
/// arrays, with or without the same single `out=` array) runs without a tuple or dict being
/// built; every other call goes to `__call__` (`tp_call`).
fn fused_fast_call(
    callable: &Bound<'_, PyAny>,
    call: &VectorArgs<'_, '_>,
) -> PyResult<Option<Py<PyAny>>> {
    let py = callable.py();
    // SAFETY: this function is reached only through `fused_vectorcall`, which only instances
    // of FusedDispatcher (or of its subclasses) store.
    let slf = unsafe { callable.cast_unchecked::<FusedDispatcher>() };
    let Some(out) = call.only_keyword(intern!(py, "out")) else {
        return Ok(None);
    };
    let out = out.filter(|o| !o.is_none());
    if out
        .as_ref()
        .is_some_and(|o| o.is_instance_of::<PyTuple>() || o.is_instance_of::<PyList>())
    {
        return Ok(None);
    }
    if cunumpy_runtime::device::emulated() || cunumpy_runtime::graph::capturing() || profiling(py)?
    {
        return Ok(None);
    }
    let targets = out.map(|o| [o.to_owned()]);
    slf.get()
        .repeat_device(py, &ArgList::Vector(call), targets.as_ref().map(|t| &t[..]))
}

crate::vectorcall::vectorcall_entry!(fused_vectorcall, "FusedDispatcher", fused_fast_call);
