//! `KernelLauncher`: the Rust half of `cunumpy.kernels.CudaKernel`. Its `__call__` reads the
//! Python arguments (flatten, check, pack), keeps the last call's packed buffer (it holds
//! Python objects), and hands the launch to `cunumpy_runtime` (compile once per device,
//! validate, launch; or the emulated device).

use crate::arrays::{self, Object};
use crate::errors;
use crate::held::Held;
use crate::kernel_config::Config;
use crate::vectorcall::{ArgList, VectorArgs, VectorcallSlot};
use cunumpy_core::args::{ArgPlan, LaunchBuffer};
use cunumpy_core::launch::{self, LaunchShape};
use cunumpy_core::parser;
use cunumpy_core::sync::lock;
use cunumpy_cuda::{Driver, StreamHandle};
use cunumpy_runtime::{device, emulated, record, Device, Kernel, KernelSource, LoadedKernel};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// How `n_threads` is inferred when neither it nor `grid` is given.
#[derive(Clone)]
enum NThreadsFrom {
    Auto,
    FirstArray,
    LastAxis,
    Disabled,
    Callable(Arc<Py<PyAny>>),
}

/// The last call's arguments and packed buffer: when a call passes the very same objects
/// (CuPy arrays and Python or NumPy scalars, which cannot change what the checks read) on the
/// same device, the checked buffer is reused. Arrays are held by weak reference (`Held`): a
/// dead array never matches and no array is kept alive by the cache.
pub(crate) struct LastCall {
    pub(crate) objects: Vec<Held>,
    device: i32,
    pub(crate) buffer: LaunchBuffer,
    /// Set when the call gave nothing but `n_threads` (an int): a repeat of it in the same
    /// context launches straight away (see `KernelLauncher::repeat_launch`).
    repeat: Option<Repeat>,
}

/// What a plain call (`kernel(*args, n_threads=n)`) resolved to: launching the same objects
/// with the same `n` in the same context again needs no shape, limit or compile step.
struct Repeat {
    context: usize,
    n_threads: i64,
    shape: LaunchShape,
    loaded: Arc<LoadedKernel>,
}

#[pyclass(subclass, frozen, module = "cunumpy._core", name = "KernelLauncher")]
pub struct KernelLauncher {
    /// Read by CPython on every call (see vectorcall.rs).
    vectorcall: VectorcallSlot,
    config: OnceLock<Config>,
    pub(crate) last_call: Mutex<Option<LastCall>>,
    n_threads_from: Mutex<NThreadsFrom>,
    debug: AtomicBool,
    check_finite: AtomicBool,
    /// Whether the ambiguous-launch-size warning was shown (once per kernel).
    warned_launch_size: AtomicBool,
}

/// `sys.path` entries, where NVRTC's pip wheel may live.
pub(crate) fn python_paths(py: Python<'_>) -> Vec<PathBuf> {
    py.import("sys")
        .and_then(|s| s.getattr("path"))
        .and_then(|p| p.extract::<Vec<String>>())
        .map(|v| v.into_iter().map(PathBuf::from).collect())
        .unwrap_or_default()
}

/// The stream a caller passed (`stream=`): a CuPy stream, an object with `.ptr` or
/// `.cuda_stream`, or a raw handle.
fn stream_handle(obj: &Bound<'_, PyAny>, kernel: &str) -> PyResult<StreamHandle> {
    let py = obj.py();
    let raw = obj.extract::<usize>().ok().or_else(|| {
        [intern!(py, "ptr"), intern!(py, "cuda_stream")]
            .into_iter()
            .find_map(|attr| obj.getattr(attr).and_then(|v| v.extract::<usize>()).ok())
    });
    if let Some(raw) = raw {
        // SAFETY: the caller gave this handle as the stream to launch on; a stream it destroyed
        // is its error, as with any CUDA API that takes a stream (the driver reports it).
        return Ok(unsafe { StreamHandle::from_raw(raw) });
    }
    Err(errors::raise(
        py,
        "LaunchShapeTypeError",
        format!(
            "{kernel}: stream must be a CuPy stream, an object with .ptr or .cuda_stream, or a \
             raw handle (int), got {} ({})",
            obj.repr()?,
            obj.get_type().name()?
        ),
    ))
}

/// Extents given as an int (the common case, kept on the stack) or a sequence.
pub(crate) enum Dims {
    One([i64; 1]),
    Many(Vec<i64>),
}

impl Dims {
    pub(crate) fn as_slice(&self) -> &[i64] {
        match self {
            Dims::One(v) => v,
            Dims::Many(v) => v,
        }
    }
}

/// `n_threads`, `grid` or `block` as given: an int or a sequence of ints. Anything else (a
/// string, a float, a bool) is a `LaunchShapeTypeError` naming the kernel, never iterated or
/// truncated; an int that does not fit 64 bits is a `LaunchShapeError`.
fn dims(obj: Option<&Bound<'_, PyAny>>, what: &str, kernel: &str) -> PyResult<Option<Dims>> {
    let Some(obj) = obj else { return Ok(None) };
    if obj.is_none() {
        return Ok(None);
    }
    let py = obj.py();
    let shown = || {
        let repr = obj.repr().map(|r| r.to_string()).unwrap_or_default();
        let type_name = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        format!("{repr} ({type_name})")
    };
    let wrong = || {
        errors::raise(
            py,
            "LaunchShapeTypeError",
            format!(
                "{kernel}: {what} must be an int or a tuple of 1 to 3 ints, got {}",
                shown()
            ),
        )
    };
    let one = |item: &Bound<'_, PyAny>| -> PyResult<i64> {
        if item.is_instance_of::<pyo3::types::PyBool>()
            || item.is_instance_of::<pyo3::types::PyString>()
            || item.is_instance_of::<pyo3::types::PyBytes>()
        {
            return Err(wrong());
        }
        // `__index__` only: 1.5 and numpy floats are refused, numpy ints accepted
        let as_int = py
            .import("operator")?
            .getattr("index")?
            .call1((item,))
            .map_err(|_| wrong())?;
        as_int.extract::<i64>().map_err(|_| {
            errors::raise(
                py,
                "LaunchShapeError",
                format!(
                    "{kernel}: {what} has an extent that does not fit 64 bits: {}",
                    shown()
                ),
            )
        })
    };
    if obj.is_exact_instance_of::<pyo3::types::PyInt>() {
        return one(obj).map(|v| Some(Dims::One([v])));
    }
    if obj.is_instance_of::<pyo3::types::PyTuple>() || obj.is_instance_of::<pyo3::types::PyList>() {
        let items: Vec<i64> = obj
            .try_iter()?
            .map(|item| item.and_then(|i| one(&i)))
            .collect::<PyResult<_>>()?;
        return Ok(Some(Dims::Many(items)));
    }
    if obj.is_instance_of::<pyo3::types::PyString>()
        || obj.is_instance_of::<pyo3::types::PyBytes>()
        || obj.is_instance_of::<pyo3::types::PyBool>()
    {
        return Err(wrong());
    }
    // a NumPy integer, or another object with __index__
    if obj.hasattr(intern!(py, "__index__"))? {
        return one(obj).map(|v| Some(Dims::One([v])));
    }
    // another sequence (a NumPy array of ints, a range)
    if obj.hasattr(intern!(py, "__len__"))? && obj.hasattr(intern!(py, "__getitem__"))? {
        let items: Vec<i64> = obj
            .try_iter()
            .map_err(|_| wrong())?
            .map(|item| item.and_then(|i| one(&i)))
            .collect::<PyResult<_>>()?;
        return Ok(Some(Dims::Many(items)));
    }
    Err(wrong())
}

/// An error from reading argument `label`'s object (a malformed `__cuda_array_interface__`,
/// an int beyond 128 bits, a failing property) as the kernel-argument error naming the kernel
/// and the argument; other errors (`MemoryError`, `KeyboardInterrupt`) pass unchanged.
pub(crate) fn relabel(py: Python<'_>, err: PyErr, label: &str) -> PyErr {
    use pyo3::exceptions::PyOverflowError;
    let class = if err.is_instance_of::<PyOverflowError>(py) {
        "KernelArgumentOverflowError"
    } else if err.is_instance_of::<PyTypeError>(py) {
        "KernelArgumentTypeError"
    } else if err.is_instance_of::<PyValueError>(py) {
        "KernelArgumentValueError"
    } else {
        return err;
    };
    let message = err.value(py).to_string();
    if message.starts_with(label) {
        return err;
    }
    let new = errors::raise(py, class, format!("{label}: {message}"));
    new.set_cause(py, Some(err));
    new
}

/// `shared_mem=` as bytes: an int (a NumPy integer too); anything else is a
/// `LaunchShapeTypeError` naming the kernel.
pub(crate) fn shared_mem_bytes(kernel: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<i64> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(0);
    };
    let py = obj.py();
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(errors::raise(
            py,
            "LaunchShapeTypeError",
            format!("{kernel}: shared_mem must be an int (bytes), got {obj} (bool)"),
        ));
    }
    let index = py
        .import("operator")?
        .getattr("index")?
        .call1((obj,))
        .map_err(|_| {
            let type_name = obj
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            errors::raise(
                py,
                "LaunchShapeTypeError",
                format!(
                    "{kernel}: shared_mem must be an int (bytes), got {} ({type_name})",
                    obj.repr().map(|r| r.to_string()).unwrap_or_default()
                ),
            )
        })?;
    index.extract::<i64>().map_err(|_| {
        errors::raise(
            py,
            "LaunchShapeError",
            format!("{kernel}: shared_mem must be between 0 and 2**32-1 bytes, got {index}"),
        )
    })
}

/// Expands argument objects (`__cuda_args__()`) into their values.
pub(crate) fn flatten<'py>(args: &Bound<'py, PyTuple>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let py = args.py();
    let mut out = Vec::with_capacity(args.len());
    for arg in args.iter() {
        let plain = arg.is_instance_of::<pyo3::types::PyFloat>()
            || arg.is_instance_of::<pyo3::types::PyInt>()
            || arrays::is_cupy_array(&arg);
        if !plain {
            if let Ok(method) = arg.get_type().getattr(intern!(py, "__cuda_args__")) {
                let values = method.call1((&arg,))?;
                for v in values.try_iter()? {
                    out.push(v?);
                }
                continue;
            }
        }
        out.push(arg);
    }
    Ok(out)
}

impl KernelLauncher {
    fn unconfigured() -> Self {
        KernelLauncher {
            vectorcall: VectorcallSlot::new(launcher_vectorcall),
            config: OnceLock::new(),
            last_call: Mutex::new(None),
            n_threads_from: Mutex::new(NThreadsFrom::Auto),
            debug: AtomicBool::new(false),
            check_finite: AtomicBool::new(false),
            warned_launch_size: AtomicBool::new(false),
        }
    }

    /// Gives the class vectorcall (see vectorcall.rs); false when it keeps `tp_call`.
    pub(crate) fn register_vectorcall(py: Python<'_>) -> PyResult<bool> {
        crate::vectorcall::register_class(Bound::new(py, Self::unconfigured())?, |s| &s.vectorcall)
    }

    pub(crate) fn config(&self) -> PyResult<&Config> {
        self.config.get().ok_or_else(|| {
            errors::raise_here(
                "InvalidStateError",
                "the kernel was not configured (call _configure first)".into(),
            )
        })
    }

    /// Whether this call can reuse (or later be reused as) the last call's packed buffer.
    fn reusable(config: &Config, args: &[Bound<'_, PyAny>]) -> bool {
        !config.has_views
            && args.iter().all(|a| {
                a.is_exact_instance_of::<pyo3::types::PyFloat>()
                    || a.is_exact_instance_of::<pyo3::types::PyInt>()
                    || a.is_exact_instance_of::<pyo3::types::PyBool>()
                    || arrays::is_exact_cupy_array(a)
            })
    }

    /// A checked launch: `kernel(*args, n_threads=..., grid=..., block=..., shared_mem=...,
    /// stream=...)`, also used by `KernelDispatcher` for `Kernel` pairs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        n_threads: Option<&Bound<'_, PyAny>>,
        grid: Option<&Bound<'_, PyAny>>,
        block: Option<&Bound<'_, PyAny>>,
        shared_mem: i64,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        if device::emulated_launches() {
            let kwargs = PyDict::new(py);
            kwargs.set_item("n_threads", n_threads)?;
            kwargs.set_item("grid", grid)?;
            kwargs.set_item("block", block)?;
            kwargs.set_item("shared_mem", shared_mem)?;
            kwargs.set_item("stream", stream)?;
            slf.call_method(intern!(py, "_emulated_launch"), args, Some(&kwargs))?;
            return Ok(());
        }
        let plain = grid.is_none() && block.is_none() && shared_mem == 0 && stream.is_none();
        let repeat_n = match n_threads {
            Some(n) if plain && n.is_exact_instance_of::<pyo3::types::PyInt>() => n.extract().ok(),
            _ => None,
        };
        if let Some(n) = repeat_n {
            if Self::repeat_launch(slf, &ArgList::Tuple(args), n)? {
                return Ok(());
            }
        }
        let this = slf.get();
        let config = this.config()?;
        let flat = flatten(args)?;
        if crate::graph::capturing() {
            crate::graph::fix_shape_params(config.name(), &[n_threads, grid, block]);
            let kernel = format!("kernel '{}'", config.name());
            let shape_args: Vec<&Bound<'_, PyAny>> =
                [n_threads, grid, block].into_iter().flatten().collect();
            crate::graph::fix_derived(py, &format!("the launch shape of {kernel}"), &shape_args)?;
            let objects: Vec<&Bound<'_, PyAny>> = flat.iter().collect();
            crate::graph::fix_derived(py, &kernel, &objects)?;
        }

        // 1. the launch shape
        let (shape, shared) =
            this.call_shape(py, &flat, args, n_threads, grid, block, shared_mem)?;
        // a stream of the wrong kind is refused before anything runs (the emulated device
        // ignores streams but not their type)
        let given_stream = match stream {
            Some(s) if !s.is_none() => Some(stream_handle(s, config.name())?),
            _ => None,
        };
        // The emulated device (fake CuPy): the same checks and packed buffer, run on the CPU
        // by the emulator (see emulate.rs).
        if device::emulated() {
            if crate::graph::capturing() && stream.is_some_and(|s| !s.is_none()) {
                // as on a GPU, where only the stream being captured is recorded
                return Err(errors::graph_error(
                    py,
                    cunumpy_runtime::graph::refuse(
                        &format!("kernel '{}'", config.name()),
                        &crate::ledger::call_site(py),
                        "it is given stream=, and a captured step launches on the stream being \
                         captured only; leave stream= out inside a captured step",
                    ),
                ));
            }
            return Self::launch_emulated(slf, &flat, shape, shared);
        }

        // 2. the arguments: checked before anything is compiled, on any machine
        let driver = Driver::get();
        let device = match &driver {
            Ok(d) => {
                device::launch_device(d).map_err(|e| errors::cuda_error(py, config.name(), e))?
            }
            Err(_) => 0,
        };
        let reusable = Self::reusable(config, &flat);
        let same_as_last = |last: &Option<LastCall>| {
            reusable
                && last.as_ref().is_some_and(|l| {
                    l.device == device
                        && l.objects.len() == flat.len()
                        && l.objects.iter().zip(&flat).all(|(held, b)| held.is(b))
                })
        };
        let mut fresh = if same_as_last(&lock(&this.last_call)) {
            None
        } else {
            Some(this.pack(py, config, &flat, device)?)
        };
        if shape.is_empty() {
            return Ok(());
        }
        let driver = driver.map_err(|e| errors::cuda_error(py, config.name(), e))?;

        // 3. compile once per device (no lock held: compiles release the GIL), check limits
        let loaded = this.loaded_for(py, device)?;
        loaded
            .prepare(config.name(), &shape, shared)
            .map_err(|e| errors::runtime_error(py, config.name(), e))?;
        let stream = match given_stream {
            Some(s) => s,
            None => crate::cupy_stream::stream_on_device(py, device)?,
        };

        let capture = crate::graph::capturing();
        if capture {
            crate::graph::check_cuda(py, config.name(), stream)?;
        }

        // 4. launch, with the last call's buffer when the arguments are the same objects
        let mut last = lock(&this.last_call);
        if fresh.is_none() && !same_as_last(&last) {
            drop(last);
            fresh = Some(this.pack(py, config, &flat, device)?);
            last = lock(&this.last_call);
        }
        let launched = {
            let buffer = match fresh.as_mut() {
                Some(b) => b,
                None => match last.as_mut() {
                    Some(l) => &mut l.buffer,
                    None => {
                        return Err(errors::raise(
                            py,
                            "InternalError",
                            "internal: no packed arguments".into(),
                        ))
                    }
                },
            };
            // SAFETY: the buffer was packed from this kernel's parsed signature (or, unchecked,
            // as the caller asked) and is alive for the call; cuLaunchKernel copies the values.
            // The stream handle comes from CuPy or the caller; `prepare` checked the shape.
            let launched = unsafe { loaded.launch(&shape, shared, stream, buffer.params()) };
            if capture && launched.is_ok() {
                let captured = crate::graph::Launch {
                    name: config.name(),
                    shape,
                    shared,
                    buffer: buffer.clone(),
                    bindings: Self::graph_bindings(py, config, &flat)?,
                    plan: config.plan.clone(),
                };
                crate::graph::keep(flat.iter());
                crate::graph::record_cuda(py, captured, loaded.function().clone(), stream)?;
            }
            launched
        };
        if let (Some(buffer), true) = (fresh, reusable) {
            let context = driver
                .current_context()
                .ok()
                .flatten()
                .map(|c| c.as_raw() as usize);
            *last = Some(LastCall {
                objects: flat.iter().map(Held::new).collect(),
                device,
                buffer,
                repeat: match (repeat_n, context) {
                    (Some(n_threads), Some(context)) if launched.is_ok() => Some(Repeat {
                        context,
                        n_threads,
                        shape,
                        loaded: loaded.clone(),
                    }),
                    _ => None,
                },
            });
        }
        drop(last);
        launched.map_err(|e| errors::cuda_error(py, config.name(), e))?;
        Self::after_launch(
            slf,
            Some(&flat),
            &ArgList::Tuple(args),
            &shape,
            shared,
            stream,
        )
    }

    /// A launch on the emulated device: device 0, checked bounds, recorded in the ledger like
    /// a launch, then the optional NaN/inf scan.
    fn launch_emulated(
        slf: &Bound<'_, Self>,
        flat: &[Bound<'_, PyAny>],
        shape: LaunchShape,
        shared: u32,
    ) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let config = this.config()?;
        let buffer = this.pack(py, config, flat, 0)?;
        if shape.is_empty() {
            return Ok(());
        }
        let checks = emulated::kernel_checks();
        if crate::graph::capturing() {
            let prepared = crate::emulate::prepare(py, config, flat, &shape, shared, checks)?;
            let captured = crate::graph::Launch {
                name: config.name(),
                shape,
                shared,
                buffer,
                bindings: Self::graph_bindings(py, config, flat)?,
                plan: config.plan.clone(),
            };
            crate::graph::keep(flat.iter());
            return crate::graph::record_emulated(py, captured, prepared.library, prepared.options);
        }
        let recording = record::recording();
        crate::emulate::run(py, config, flat, buffer, shape, shared, checks, recording)?;
        if this.check_finite_enabled() {
            slf.call_method1(
                intern!(py, "_check_finite_outputs"),
                (PyList::new(py, flat)?,),
            )?;
        }
        Ok(())
    }

    /// The repeat of the last plain call (same objects, same `n_threads`, same context; see
    /// `Repeat`): launched with the last call's checked buffer and shape. False when the call
    /// is not such a repeat (the full path then runs).
    pub(crate) fn repeat_launch(
        slf: &Bound<'_, Self>,
        args: &ArgList<'_, '_>,
        n: i64,
    ) -> PyResult<bool> {
        let py = slf.py();
        if device::any_emulation() || crate::graph::capturing() {
            return Ok(false);
        }
        let Ok(driver) = Driver::get() else {
            return Ok(false);
        };
        let Ok(Some((context, device))) = device::current_context_device(driver) else {
            return Ok(false);
        };
        let stream = crate::cupy_stream::stream_on_device(py, device)?;
        let this = slf.get();
        let mut last = lock(&this.last_call);
        let Some(LastCall {
            objects,
            buffer,
            repeat: Some(repeat),
            ..
        }) = last.as_mut()
        else {
            return Ok(false);
        };
        // The held objects are the flattened arguments; plain arguments (no `__cuda_args__`)
        // are their own flattening, so the tuple is compared as it is.
        let same = repeat.context == context
            && repeat.n_threads == n
            && objects.len() == args.len()
            && objects
                .iter()
                .enumerate()
                .all(|(i, held)| args.get(i).is_some_and(|b| held.is(&b)));
        if !same {
            return Ok(false);
        }
        let shape = repeat.shape;
        // SAFETY: the buffer was checked and packed from this kernel's signature for these
        // very objects (alive: the caller passed them, and `Held::is` matched each), launched with
        // this shape on this context's device before; cuLaunchKernel copies the values. The
        // stream handle comes from CuPy.
        let launched = unsafe { repeat.loaded.launch(&shape, 0, stream, buffer.params()) };
        drop(last);
        if let Err(e) = launched {
            return Err(errors::cuda_error(py, this.config()?.name(), e));
        }
        // nothing follows a launch unless the ledger records, debug mode is on or outputs
        // are scanned
        let follow_up = record::recording()
            || this.debug.load(Ordering::Relaxed)
            || this.check_finite.load(Ordering::Relaxed);
        if follow_up {
            Self::after_launch(slf, None, args, &shape, 0, stream)?;
        }
        Ok(true)
    }

    /// The graph parameters among a captured launch's arguments; a kernel without a checked
    /// signature cannot take one (a replay could not check the new value).
    fn graph_bindings(
        py: Python<'_>,
        config: &Config,
        flat: &[Bound<'_, PyAny>],
    ) -> PyResult<Vec<crate::graph::Binding>> {
        let bindings = crate::graph::bindings(flat);
        if !bindings.is_empty() && config.plan.is_none() {
            let objects: Vec<&Bound<'_, PyAny>> = flat.iter().collect();
            crate::graph::refuse_params(
                py,
                &format!("kernel '{}'", config.name()),
                &objects,
                "the kernel has no checked signature (check_signature=False), so a replay \
                 could not check a new value; pass the value as a constant or check the \
                 signature",
            )?;
        }
        Ok(bindings)
    }

    /// What follows every launch: the ledger entry, debug mode's synchronize, the NaN/inf scan.
    /// `flat` is the flattened argument list (None when `args` are their own flattening).
    fn after_launch(
        slf: &Bound<'_, Self>,
        flat: Option<&[Bound<'_, PyAny>]>,
        args: &ArgList<'_, '_>,
        shape: &LaunchShape,
        shared: u32,
        stream: StreamHandle,
    ) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let config = this.config()?;
        let name = config.name();
        if crate::graph::capturing() {
            // a captured launch has not run: nothing to record, synchronize or scan
            return Ok(());
        }
        if record::recording() {
            Self::record_launch(py, name, shape);
        }
        if this.debug.load(Ordering::Relaxed) {
            let driver = Driver::get().map_err(|e| errors::cuda_error(py, name, e))?;
            driver.synchronize_stream(stream).map_err(|e| {
                let e = e.in_launch(name, shape.grid, shape.block, shared);
                errors::raise(
                    py,
                    "CudaRuntimeError",
                    format!(
                        "CUDA error after launching kernel '{}' with grid {:?} and block {:?}: {e}",
                        name, shape.grid, shape.block
                    ),
                )
            })?;
        }
        if this.check_finite.load(Ordering::Relaxed) {
            slf.call_method1(
                intern!(py, "_check_finite_outputs"),
                (match flat {
                    Some(f) => PyList::new(py, f)?,
                    None => args.to_list()?,
                },),
            )?;
        }
        Ok(())
    }

    /// The kernel loaded on CUDA device `device` (compiled on first use, with the GIL
    /// released).
    pub(crate) fn loaded_for(&self, py: Python<'_>, device: i32) -> PyResult<Arc<LoadedKernel>> {
        let config = self.config()?;
        if let Some(l) = config.kernel.loaded(device) {
            return Ok(l);
        }
        let paths = python_paths(py);
        py.detach(|| config.kernel.load(device, &paths))
            .map_err(|e| errors::cuda_error(py, config.name(), e))
    }

    pub(crate) fn pack(
        &self,
        py: Python<'_>,
        config: &Config,
        args: &[Bound<'_, PyAny>],
        device: i32,
    ) -> PyResult<LaunchBuffer> {
        let Some(plan) = &config.plan else {
            return pack_unchecked(config, args);
        };
        plan.check_count(args.len())
            .map_err(|e| errors::arg_error(py, e))?;
        let mut buffer = plan.new_buffer();
        for (i, obj) in args.iter().enumerate() {
            let full = matches!(
                plan.kind(i),
                Some(cunumpy_core::signature::ParamKind::View { .. })
            );
            let object =
                arrays::read_object(obj, full).map_err(|e| relabel(py, e, plan.label(i)))?;
            let arg = object.as_arg(device);
            plan.pack(i, &arg, device, &mut buffer)
                .map_err(|e| errors::arg_error(py, e))?;
        }
        // trailing arguments left out: their C default values (check_count saw they have one)
        for i in args.len()..plan.len() {
            plan.pack_default(i, device, &mut buffer)
                .map_err(|e| errors::arg_error(py, e))?;
        }
        Ok(buffer)
    }

    /// The launch shape and dynamic shared memory of a call (`n_threads`, `grid`, `block`,
    /// `shared_mem` as given, `n_threads` inferred when neither it nor `grid` is).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn call_shape(
        &self,
        py: Python<'_>,
        flat: &[Bound<'_, PyAny>],
        args: &Bound<'_, PyTuple>,
        n_threads: Option<&Bound<'_, PyAny>>,
        grid: Option<&Bound<'_, PyAny>>,
        block: Option<&Bound<'_, PyAny>>,
        shared_mem: i64,
    ) -> PyResult<(LaunchShape, u32)> {
        let config = self.config()?;
        let given_block;
        let block_dims: &[u32] = match dims(block, "block", config.name())? {
            Some(b) => {
                given_block = launch::block_shape(b.as_slice())
                    .map_err(|e| errors::kernel_launch_error(py, config.name(), e))?;
                &given_block
            }
            None => &config.block,
        };
        let mut n = dims(n_threads, "n_threads", config.name())?;
        let g = dims(grid, "grid", config.name())?;
        if n.is_none() && g.is_none() {
            n = self
                .infer_n_threads(py, flat, args, block_dims.len())?
                .map(Dims::Many);
        }
        let shape = launch::launch_shape(
            n.as_ref().map(Dims::as_slice),
            g.as_ref().map(Dims::as_slice),
            block_dims,
        )
        .map_err(|e| errors::kernel_launch_error(py, config.name(), e))?;
        let shared = u32::try_from(shared_mem).map_err(|_| {
            errors::raise(
                py,
                "LaunchShapeError",
                format!(
                    "{}: shared_mem must be between 0 and 2**32-1 bytes, got {shared_mem}",
                    config.name()
                ),
            )
        })?;
        Ok((shape, shared))
    }

    /// Whether a launch without `n_threads` or `grid` infers the thread count.
    pub(crate) fn infers_n_threads(&self) -> bool {
        !matches!(*lock(&self.n_threads_from), NThreadsFrom::Disabled)
    }

    /// Whether `check_finite` is on (the NaN/inf scan after each launch).
    pub(crate) fn check_finite_enabled(&self) -> bool {
        self.check_finite.load(Ordering::Relaxed)
    }

    fn infer_n_threads(
        &self,
        py: Python<'_>,
        args: &[Bound<'_, PyAny>],
        original: &Bound<'_, PyTuple>,
        block_dims: usize,
    ) -> PyResult<Option<Vec<i64>>> {
        let rule = lock(&self.n_threads_from).clone();
        let first = || {
            args.iter()
                .find_map(|a| arrays::array_shape(a).filter(|s| !s.is_empty()))
        };
        let missing = || {
            errors::raise(
                py,
                "LaunchShapeTypeError",
                format!(
                    "{}: inferring n_threads needs an array argument; pass n_threads= or grid=",
                    self.config.get().map_or("kernel", |c| c.name())
                ),
            )
        };
        let inferred = matches!(
            rule,
            NThreadsFrom::Auto | NThreadsFrom::FirstArray | NThreadsFrom::LastAxis
        );
        let last = matches!(rule, NThreadsFrom::LastAxis);
        let chosen = match rule {
            NThreadsFrom::Disabled => None,
            NThreadsFrom::Callable(f) => dims(
                Some(&f.call1(py, (original,))?.into_bound(py)),
                "n_threads",
                self.config.get().map_or("kernel", |c| c.name()),
            )?
            .map(|d| d.as_slice().to_vec()),
            NThreadsFrom::FirstArray => Some(vec![first().ok_or_else(missing)?[0]]),
            NThreadsFrom::LastAxis => {
                let shape = first().ok_or_else(missing)?;
                Some(vec![*shape.last().unwrap_or(&0)])
            }
            NThreadsFrom::Auto => {
                let shape = first().ok_or_else(missing)?;
                if shape.len() < block_dims {
                    return Err(errors::raise(
                        py,
                        "LaunchShapeError",
                        format!(
                            "{}: cannot infer {block_dims}D n_threads from the first array's \
                             shape {shape:?}; pass n_threads=",
                            self.config.get().map_or("kernel", |c| c.name())
                        ),
                    ));
                }
                Some(shape[..block_dims].to_vec())
            }
        };
        if let (true, Some(n)) = (inferred, chosen.as_ref()) {
            if !self.warned_launch_size.load(Ordering::Relaxed) {
                let shapes: Vec<Vec<i64>> = args
                    .iter()
                    .filter_map(arrays::array_shape)
                    .filter(|s| !s.is_empty())
                    .collect();
                let name = self.config.get().map_or("kernel", |c| c.name());
                if let Some(note) = launch::ambiguous_inference(name, &shapes, n, last) {
                    self.warned_launch_size.store(true, Ordering::Relaxed);
                    errors::warn(py, "LaunchSizeWarning", &note)?;
                }
            }
        }
        Ok(chosen)
    }

    /// The ledger entry of a launch, made at the user's call site.
    pub(crate) fn record_launch(py: Python<'_>, name: &str, shape: &LaunchShape) {
        record::launch(name, shape, crate::ledger::call_site(py));
    }
}

fn pack_unchecked(config: &Config, args: &[Bound<'_, PyAny>]) -> PyResult<LaunchBuffer> {
    let Some(py) = args.first().map(|a| a.py()) else {
        return Ok(LaunchBuffer::from_raw_values(&[]));
    };
    let mut values = Vec::with_capacity(args.len());
    for (i, obj) in args.iter().enumerate() {
        let bytes = match arrays::read_object(obj, false)? {
            Object::Device(info) => info.ptr.to_le_bytes().to_vec(),
            Object::Scalar(s, _) => match s {
                cunumpy_core::args::Scalar::Bool(b) => vec![b as u8],
                cunumpy_core::args::Scalar::Int(v) => (v as i64).to_le_bytes().to_vec(),
                cunumpy_core::args::Scalar::Float(x) => x.to_le_bytes().to_vec(),
                cunumpy_core::args::Scalar::Complex(re, im) => {
                    let mut b = re.to_le_bytes().to_vec();
                    b.extend(im.to_le_bytes());
                    b
                }
            },
            Object::Struct(_, bytes) => bytes,
            // an unchecked launch: None is a NULL pointer
            Object::Null => 0u64.to_le_bytes().to_vec(),
            Object::Host(t) | Object::Other(t) => {
                return Err(errors::raise(
                    py,
                    "KernelArgumentTypeError",
                    format!(
                        "{}(): argument {i} is {t}, which an unchecked launch cannot pass; \
                         arrays are never copied to the device",
                        config.name()
                    ),
                ))
            }
        };
        values.push(bytes);
    }
    Ok(LaunchBuffer::from_raw_values(&values))
}

#[pymethods]
impl KernelLauncher {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        Self::unconfigured()
    }

    /// Sets what the kernel is (once). `structs` maps struct names to their byte sizes.
    #[pyo3(signature = (source, name, *, options, include_dirs, source_dir, shipped_dir, block, structs, template_args, check_signature, max_registers=None))]
    #[allow(clippy::too_many_arguments)]
    fn _configure(
        &self,
        py: Python<'_>,
        source: String,
        name: String,
        options: Vec<String>,
        include_dirs: Vec<PathBuf>,
        source_dir: Option<PathBuf>,
        shipped_dir: PathBuf,
        block: Vec<i64>,
        structs: Vec<(String, usize)>,
        template_args: Option<Vec<String>>,
        check_signature: bool,
        max_registers: Option<u32>,
    ) -> PyResult<String> {
        let block =
            launch::block_shape(&block).map_err(|e| errors::kernel_launch_error(py, &name, e))?;
        let (plan, signature, expression) = if check_signature {
            let names: Vec<String> = structs.iter().map(|(n, _)| n.clone()).collect();
            let signature =
                parser::parse_signature(&source, &name, &names, template_args.as_deref())
                    .map_err(|e| errors::signature_error(py, e))?;
            let size_of = |n: &str| structs.iter().find(|(s, _)| s == n).map(|(_, size)| *size);
            let plan = ArgPlan::new(&signature, &size_of).map_err(|e| errors::arg_error(py, e))?;
            let expression = signature.expression.clone();
            (Some(Arc::new(plan)), Some(signature), expression)
        } else {
            let expression = match &template_args {
                Some(t) if !t.is_empty() => format!("{name}<{}>", t.join(", ")),
                _ => name.clone(),
            };
            (None, None, expression)
        };
        let has_views = plan.as_ref().is_some_and(|plan| {
            (0..plan.len()).any(|i| {
                matches!(
                    plan.kind(i),
                    Some(cunumpy_core::signature::ParamKind::View { .. })
                )
            })
        });
        let config = Config {
            has_views,
            kernel: Kernel::new(KernelSource {
                name,
                expression: expression.clone(),
                source,
                options,
                include_dirs,
                source_dir,
                shipped_dir,
                max_registers,
            }),
            block,
            plan,
            signature,
        };
        self.config.set(config).map_err(|_| {
            errors::raise(
                py,
                "InvalidStateError",
                "the kernel is configured already".into(),
            )
        })?;
        Ok(expression)
    }

    /// The launch path.
    #[pyo3(signature = (*args, n_threads=None, grid=None, block=None, shared_mem=None, stream=None, **unexpected))]
    #[allow(clippy::too_many_arguments)]
    fn __call__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        n_threads: Option<&Bound<'_, PyAny>>,
        grid: Option<&Bound<'_, PyAny>>,
        block: Option<&Bound<'_, PyAny>>,
        shared_mem: Option<&Bound<'_, PyAny>>,
        stream: Option<&Bound<'_, PyAny>>,
        unexpected: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let py = slf.py();
        let name = slf
            .get()
            .config
            .get()
            .map_or("kernel", |c| c.name())
            .to_string();
        if let Some(extra) = unexpected.filter(|d| !d.is_empty()) {
            let names: Vec<String> = extra
                .keys()
                .iter()
                .map(|k| k.str().map(|s| s.to_string()).unwrap_or_default())
                .collect();
            return Err(errors::raise(
                py,
                "KernelArgumentTypeError",
                format!(
                    "{name}(): unexpected keyword argument{} {}; kernel arguments are passed by \
                     position, and a launch takes the keywords n_threads, grid, block, \
                     shared_mem and stream",
                    if names.len() == 1 { "" } else { "s" },
                    names
                        .iter()
                        .map(|n| format!("'{n}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        let shared_mem = shared_mem_bytes(&name, shared_mem)?;
        Self::launch(slf, args, n_threads, grid, block, shared_mem, stream)
    }

    /// The parameters of the signature parsed when the kernel was configured, as
    /// `cuda.CudaParameter` fields; None with `check_signature=False`.
    fn _parsed_params(&self) -> PyResult<Option<Vec<crate::source::ParamTuple>>> {
        Ok(self
            .config()?
            .signature
            .as_ref()
            .map(crate::source::param_tuples))
    }

    /// Compiles (or loads from the disk cache) for CUDA device `device`, default the calling
    /// thread's current one (the emulated device when emulation is on); True on a cache hit.
    #[pyo3(signature = (device=None))]
    fn _compile(&self, py: Python<'_>, device: Option<i32>) -> PyResult<bool> {
        let config = self.config()?;
        let target = match device {
            // given: no context is made current on another device first (a worker thread
            // compiling for its caller has none of its own)
            Some(ordinal) if !device::emulated() => Device::Cuda(ordinal),
            _ => Device::current().map_err(|e| errors::cuda_error(py, config.name(), e))?,
        };
        match target {
            Device::Emulated => {
                // launches run the bounds-checked build: build it now too, so that the first
                // launch after compile() builds nothing (a kernel whose checked build does not
                // compile launches the plain one, as a launch would decide)
                let (lib, hit) = crate::emulate::library_for(py, config)?;
                py.detach(|| cunumpy_runtime::emulated::use_checked_build(&lib, true, None));
                Ok(hit)
            }
            Device::Cuda(device) => Ok(self.loaded_for(py, device)?.from_cache()),
        }
    }

    /// Copies a value (dtype name, element count, bytes: converted by
    /// `CudaKernel.set_constant`) into `__constant__` variable `name` on the current device
    /// (the emulated one under emulation), checked against its declaration; one `to_device`
    /// event in the ledger. Returns the variable's shape.
    fn _set_constant(
        &self,
        py: Python<'_>,
        name: &str,
        dtype: &str,
        count: usize,
        data: &[u8],
    ) -> PyResult<Vec<usize>> {
        let config = self.config()?;
        let kernel = config.name();
        let device = constant_device(py, kernel)?;
        let paths = python_paths(py);
        let layout = py
            .detach(|| {
                config
                    .kernel
                    .set_constant(device, name, dtype, count, data, &paths)
            })
            .map_err(|e| errors::runtime_error(py, kernel, e))?;
        if record::recording() {
            record::constant_copy(
                kernel,
                name,
                layout.bytes,
                true,
                crate::ledger::call_site(py),
            );
        }
        Ok(layout.shape)
    }

    /// The value of `__constant__` variable `name` on the current device: (dtype name, shape,
    /// bytes); one `to_host` event in the ledger.
    fn _get_constant<'py>(
        &self,
        py: Python<'py>,
        name: &str,
    ) -> PyResult<(&'static str, Vec<usize>, Bound<'py, pyo3::types::PyBytes>)> {
        let config = self.config()?;
        let kernel = config.name();
        let device = constant_device(py, kernel)?;
        let paths = python_paths(py);
        let (layout, bytes) = py
            .detach(|| config.kernel.get_constant(device, name, &paths))
            .map_err(|e| errors::runtime_error(py, kernel, e))?;
        if record::recording() {
            record::constant_copy(
                kernel,
                name,
                bytes.len(),
                false,
                crate::ledger::call_site(py),
            );
        }
        Ok((
            layout.dtype.name(),
            layout.shape,
            pyo3::types::PyBytes::new(py, &bytes),
        ))
    }

    /// The names of the `__constant__` variables the source declares at global scope.
    fn _constant_names(&self) -> PyResult<Vec<String>> {
        Ok(self
            .config()?
            .kernel
            .constant_decls()
            .iter()
            .map(|d| d.name.clone())
            .collect())
    }

    /// The compiled kernel's resource use on the current CUDA device (compiled first when
    /// needed), under CuPy's `RawKernel.attributes` names; `None` on the emulated device,
    /// which has no registers to count.
    fn _attributes<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let config = self.config()?;
        let Device::Cuda(device) =
            Device::current().map_err(|e| errors::cuda_error(py, config.name(), e))?
        else {
            return Ok(None);
        };
        let loaded = self.loaded_for(py, device)?;
        let a = loaded
            .function()
            .attributes()
            .map_err(|e| errors::cuda_error(py, config.name(), e))?;
        let out = PyDict::new(py);
        for (key, value) in [
            ("max_threads_per_block", a.max_threads_per_block),
            ("shared_size_bytes", a.static_shared_bytes),
            ("const_size_bytes", a.const_bytes),
            ("local_size_bytes", a.local_bytes),
            ("num_regs", a.num_regs),
            ("ptx_version", a.ptx_version),
            ("binary_version", a.binary_version),
            ("max_dynamic_shared_size_bytes", a.max_dynamic_shared_bytes),
        ] {
            out.set_item(key, value)?;
        }
        Ok(Some(out))
    }

    /// Drops the current device's compiled kernel.
    fn _forget_compiled(&self) {
        // the last call's repeat holds the compiled function
        *lock(&self.last_call) = None;
        let device = Driver::get().ok().and_then(|d| d.current_device().ok());
        if let (Some(device), Ok(config)) = (device, self.config()) {
            config.kernel.forget(device);
        }
    }

    #[getter]
    fn is_compiled(&self) -> bool {
        let Ok(config) = self.config() else {
            return false;
        };
        Device::current_if_known().is_some_and(|device| config.kernel.is_compiled(device))
    }

    #[getter]
    fn expression(&self) -> PyResult<String> {
        Ok(self.config()?.kernel.source().expression.clone())
    }

    fn _set_n_threads_from(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let rule = if value.is_none() {
            NThreadsFrom::Disabled
        } else if let Ok(s) = value.extract::<String>() {
            match s.as_str() {
                "auto" => NThreadsFrom::Auto,
                "first_array" => NThreadsFrom::FirstArray,
                "last_axis" => NThreadsFrom::LastAxis,
                _ => return Err(bad_rule(py)),
            }
        } else if value.is_callable() {
            NThreadsFrom::Callable(Arc::new(value.clone().unbind()))
        } else {
            return Err(bad_rule(py));
        };
        *lock(&self.n_threads_from) = rule;
        Ok(())
    }

    fn _set_flags(&self, debug: bool, check_finite: bool) {
        self.debug.store(debug, Ordering::Relaxed);
        self.check_finite.store(check_finite, Ordering::Relaxed);
    }

    /// Packs the arguments as a launch would, without launching (works without a GPU).
    #[pyo3(signature = (*args))]
    fn _check_args(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<usize> {
        let config = self.config()?;
        let flat = flatten(args)?;
        let device = Driver::get_if_loaded()
            .and_then(|d| d.current_device().ok())
            .unwrap_or(0);
        self.pack(py, config, &flat, device)?;
        Ok(flat.len())
    }

    /// `(grid, block)` of a call with these arguments, each padded to 3 axes (the launch
    /// shape introspection of `CudaKernel.launch_shape`; nothing is checked or launched).
    #[pyo3(signature = (*args, n_threads=None, grid=None, block=None))]
    fn _launch_shape(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        n_threads: Option<&Bound<'_, PyAny>>,
        grid: Option<&Bound<'_, PyAny>>,
        block: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<([u32; 3], [u32; 3])> {
        let flat = flatten(args)?;
        let (shape, _) = self.call_shape(py, &flat, args, n_threads, grid, block, 0)?;
        Ok((shape.grid, shape.block))
    }

    /// Benchmark probe: one launch of the last call's packed arguments with grid 1 and block
    /// 1 on the legacy stream, no checks at all: what a Python call into a Rust launcher costs
    /// at the least (call it after one ordinary launch).
    fn _bare_launch(&self, py: Python<'_>) -> PyResult<()> {
        let config = self.config()?;
        let first = || {
            errors::raise(
                py,
                "InvalidStateError",
                "_bare_launch: launch the kernel once first".into(),
            )
        };
        let loaded = config.kernel.any_loaded().ok_or_else(first)?;
        let mut last = lock(&self.last_call);
        let call = last.as_mut().ok_or_else(first)?;
        // the last call's arrays must still be alive (the cache holds them weakly); the
        // references taken here keep them so for the launch
        let alive: Option<Vec<_>> = call.objects.iter().map(|h| h.get(py)).collect();
        if alive.is_none() {
            return Err(errors::raise(
                py,
                "InvalidStateError",
                "_bare_launch: the last call's arrays are gone; launch the kernel again first"
                    .into(),
            ));
        }
        // SAFETY: the buffer was packed and checked by an earlier launch of this kernel with
        // these arguments, all alive (checked above).
        unsafe { crate::probes::bare_launch(py, config.name(), &loaded, &mut call.buffer) }
    }

    /// The benchmark floor: `n` launches of this kernel in a tight Rust loop (arguments
    /// packed once), then one synchronize. Returns the seconds taken.
    #[pyo3(signature = (*args, n_launches, n_threads=1))]
    fn _raw_launch_loop(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        n_launches: u64,
        n_threads: i64,
    ) -> PyResult<f64> {
        let (_, mut buffer, loaded, shape) = self.probe_setup(py, args, n_threads)?;
        // SAFETY: a buffer packed from the signature for `args`, which the caller keeps alive
        // for the whole call.
        unsafe {
            crate::probes::raw_launch_loop(
                py,
                self.config()?.name(),
                &loaded,
                &mut buffer,
                &shape,
                n_launches,
            )
        }
    }

    /// Benchmark probe: µs per launch of `n` launches in Rust loops, each loop adding one step
    /// of the repeat path to the bare driver launch, and the whole repeat path without the
    /// Python call. Call it after `kernel(*args, n_threads=n_threads)` once, with the same
    /// arguments.
    #[pyo3(signature = (*args, n_launches, n_threads=1))]
    fn _launch_breakdown(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        n_launches: u64,
        n_threads: i64,
    ) -> PyResult<Py<PyDict>> {
        let py = slf.py();
        let this = slf.get();
        let (device, mut buffer, loaded, shape) = this.probe_setup(py, args, n_threads)?;
        let mut compare = || {
            let last = lock(&this.last_call);
            last.as_ref().is_some_and(|call| {
                call.objects
                    .iter()
                    .enumerate()
                    .all(|(i, held)| args.get_borrowed_item(i).is_ok_and(|b| held.is(&b)))
            })
        };
        let mut repeat = || Self::repeat_launch(slf, &ArgList::Tuple(args), n_threads);
        // SAFETY: a buffer packed from the signature for `args`, which the caller keeps alive
        // for the whole call.
        unsafe {
            crate::probes::launch_breakdown(
                py,
                this.config()?.name(),
                crate::probes::Probe {
                    device,
                    loaded: &loaded,
                    buffer: &mut buffer,
                    shape: &shape,
                    n_launches,
                },
                &mut compare,
                &mut repeat,
            )
        }
    }
}

impl KernelLauncher {
    /// What the probes launch: the current device, `args` packed, the kernel loaded there and
    /// the shape of `n_threads` threads.
    fn probe_setup(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        n_threads: i64,
    ) -> PyResult<(i32, LaunchBuffer, Arc<LoadedKernel>, LaunchShape)> {
        let config = self.config()?;
        let cuda = |e| errors::cuda_error(py, config.name(), e);
        let driver = Driver::get().map_err(cuda)?;
        let device = device::launch_device(driver).map_err(cuda)?;
        let flat = flatten(args)?;
        let buffer = self.pack(py, config, &flat, device)?;
        let loaded = self.loaded_for(py, device)?;
        let shape = launch::launch_shape(Some(&[n_threads]), None, &config.block)
            .map_err(|e| errors::kernel_launch_error(py, config.name(), e))?;
        Ok((device, buffer, loaded, shape))
    }
}

/// Runs `launcher` in the emulator: the arguments are checked and packed as for a launch
/// (pointer arguments must be arrays with host addresses behind their device interface).
#[pyfunction]
#[pyo3(signature = (launcher, *args, n_threads=None, grid=None, block=None, shared_mem=0, shuffle_seed=None, bounds=true, detect_races=true))]
#[allow(clippy::too_many_arguments)]
fn _emulate_launch(
    launcher: &Bound<'_, KernelLauncher>,
    args: &Bound<'_, PyTuple>,
    n_threads: Option<&Bound<'_, PyAny>>,
    grid: Option<&Bound<'_, PyAny>>,
    block: Option<&Bound<'_, PyAny>>,
    shared_mem: i64,
    shuffle_seed: Option<u64>,
    bounds: bool,
    detect_races: bool,
) -> PyResult<()> {
    let py = launcher.py();
    let this = launcher.get();
    let config = this.config()?;
    let flat = flatten(args)?;
    let (shape, shared) = this.call_shape(py, &flat, args, n_threads, grid, block, shared_mem)?;
    let buffer = this.pack(py, config, &flat, 0)?;
    if shape.is_empty() {
        return Ok(());
    }
    crate::emulate::run(
        py,
        config,
        &flat,
        buffer,
        shape,
        shared,
        crate::emulate::Checks {
            shuffle_seed,
            bounds,
            detect_races,
        },
        false,
    )
}

/// Compiles `launcher` for emulation (or finds it in the cache); returns what was built.
#[pyfunction]
fn _compile_for_emulation<'py>(
    launcher: &Bound<'py, KernelLauncher>,
) -> PyResult<Bound<'py, PyDict>> {
    let py = launcher.py();
    let config = launcher.get().config()?;
    let (lib, from_cache) = crate::emulate::library_for(py, config)?;
    // launches run the bounds-checked build: build it now, so that they build nothing
    let checked = py.detach(|| emulated::use_checked_build(&lib, true, None));
    let out = PyDict::new(py);
    out.set_item("checked_build", checked)?;
    out.set_item("kernel", lib.kernel())?;
    out.set_item("library", lib.library_path())?;
    out.set_item("from_cache", from_cache)?;
    out.set_item("uses_fibers", lib.uses_fibers())?;
    out.set_item("param_count", lib.param_count())?;
    out.set_item("param_names", lib.param_names().to_vec())?;
    out.set_item("cache_dir", emulated::cache_dir())?;
    Ok(out)
}

/// The device a `__constant__` copy goes to: the emulated one under either kind of
/// emulation, else the calling thread's CUDA device.
fn constant_device(py: Python<'_>, kernel: &str) -> PyResult<Device> {
    if device::any_emulation() {
        return Ok(Device::Emulated);
    }
    Device::current().map_err(|e| errors::cuda_error(py, kernel, e))
}

/// The calling thread's CUDA device when it already has one (a current context), without
/// loading the driver or making a context current; `None` otherwise or on the emulated device.
/// What compiles in worker threads pass on, so they build for their caller's device.
#[pyfunction]
fn _known_cuda_device() -> Option<i32> {
    match Device::current_if_known() {
        Some(Device::Cuda(ordinal)) => Some(ordinal),
        _ => None,
    }
}

/// Registers `KernelLauncher` (with vectorcall) and its emulator entry points.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<KernelLauncher>()?;
    KernelLauncher::register_vectorcall(m.py())?;
    m.add_function(wrap_pyfunction!(_emulate_launch, m)?)?;
    m.add_function(wrap_pyfunction!(_compile_for_emulation, m)?)?;
    m.add_function(wrap_pyfunction!(_known_cuda_device, m)?)?;
    Ok(())
}

fn bad_rule(py: Python<'_>) -> PyErr {
    errors::raise(
        py,
        "LaunchShapeTypeError",
        "n_threads_from must be callable, 'auto', 'first_array', 'last_axis' or None".into(),
    )
}

/// The vectorcall fast path of `kernel(*args, n_threads=n)`: a repeat of the last plain call
/// (see `Repeat`) launches without a tuple or dict being built; every other call goes to
/// `__call__` (`tp_call`).
fn launcher_fast_call(
    callable: &Bound<'_, PyAny>,
    call: &VectorArgs<'_, '_>,
) -> PyResult<Option<Py<PyAny>>> {
    let py = callable.py();
    // SAFETY: this function is reached only through `launcher_vectorcall`, which only
    // instances of KernelLauncher (or of its subclasses) store.
    let slf = unsafe { callable.cast_unchecked::<KernelLauncher>() };
    let Some((_, n)) = call.only_int_keyword(intern!(py, "n_threads")) else {
        return Ok(None);
    };
    if KernelLauncher::repeat_launch(slf, &ArgList::Vector(call), n)? {
        return Ok(Some(py.None()));
    }
    Ok(None)
}

crate::vectorcall::vectorcall_entry!(launcher_vectorcall, "KernelLauncher", launcher_fast_call);
