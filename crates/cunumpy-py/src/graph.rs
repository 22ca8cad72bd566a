//! Python face of `cunumpy_runtime::graph` (`cunumpy.cuda.graph`): opening and closing a
//! capture on the calling thread, the Python objects a capture must hold (the graph's
//! parameter objects, matched by identity to kernel arguments, and every array a recorded
//! launch points at), and `CapturedGraph`, the runtime's `Graph` with those objects.
//!
//! Nothing is decided here: which kernel parameter is which graph parameter is identity
//! (the very object passed to the step reached the kernel), and every check of a replay's
//! value is the runtime's.

use crate::arrays::{self, Object};
use crate::errors;
use cunumpy_core::args::ArgPlan;
use cunumpy_core::args::LaunchBuffer;
use cunumpy_core::launch::LaunchShape;
use cunumpy_cuda::{Function, StreamHandle};
use cunumpy_emu::{EmuLibrary, LaunchOptions};
pub(crate) use cunumpy_runtime::graph::Binding;
use cunumpy_runtime::graph::{self, Graph, LaunchRecord, ParamSpec};
use cunumpy_runtime::Device;
use pyo3::prelude::*;
use std::cell::RefCell;
use std::sync::Arc;

/// What the binding holds while a capture is open on a thread.
struct Held {
    /// The graph's parameters (the step's flattened arguments), matched by identity.
    params: Vec<Py<PyAny>>,
    specs: Vec<ParamSpec>,
    /// The bytes each array parameter spans (None for the others).
    spans: Vec<Option<(u64, u64)>>,
    /// Every object a recorded launch points at (kept for the graph's lifetime: nothing a
    /// captured kernel reads or writes may be freed or moved while the graph can replay).
    keep: Vec<Py<PyAny>>,
}

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Whether a capture is open on this thread.
#[inline]
pub(crate) fn capturing() -> bool {
    graph::capturing()
}

/// Keeps `objects` alive for the graph being captured.
pub(crate) fn keep<'py>(objects: impl IntoIterator<Item = &'py Bound<'py, PyAny>>) {
    HELD.with(|h| {
        if let Some(held) = h.borrow_mut().as_mut() {
            held.keep
                .extend(objects.into_iter().map(|o| o.clone().unbind()));
        }
    });
}

/// The kernel parameters among `flat` that are graph parameters (by identity).
pub(crate) fn bindings(flat: &[Bound<'_, PyAny>]) -> Vec<Binding> {
    HELD.with(|h| {
        let held = h.borrow();
        let Some(held) = held.as_ref() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (slot, obj) in flat.iter().enumerate() {
            if let Some(param) = held.params.iter().position(|p| p.as_ptr() == obj.as_ptr()) {
                out.push(Binding { slot, param });
            }
        }
        out
    })
}

/// Refuses a capture-time call that received a graph parameter it cannot update.
pub(crate) fn refuse_params(
    py: Python<'_>,
    what: &str,
    objects: &[&Bound<'_, PyAny>],
    why: &str,
) -> PyResult<()> {
    let hit = HELD.with(|h| {
        h.borrow().as_ref().and_then(|held| {
            objects
                .iter()
                .find_map(|o| held.params.iter().position(|p| p.as_ptr() == o.as_ptr()))
        })
    });
    match hit {
        Some(param) => Err(errors::graph_error(
            py,
            graph::refuse(
                what,
                &crate::ledger::call_site(py),
                &format!("it takes graph parameter {param}, and {why}"),
            ),
        )),
        None => Ok(()),
    }
}

/// Marks the graph parameters among `objects` (a launch's `n_threads`, `grid`, `block`) as
/// ones a replay cannot change: they set `kernel`'s launch shape.
pub(crate) fn fix_shape_params(kernel: &str, objects: &[Option<&Bound<'_, PyAny>>]) {
    HELD.with(|h| {
        let held = h.borrow();
        let Some(held) = held.as_ref() else { return };
        for obj in objects.iter().flatten() {
            if let Some(param) = held.params.iter().position(|p| p.as_ptr() == obj.as_ptr()) {
                graph::fix_param(
                    param,
                    format!("it sets the launch shape of kernel '{kernel}'"),
                );
            }
        }
    });
}

/// The bytes a device array spans.
fn span_of(object: &Object) -> Option<(u64, u64)> {
    match object {
        Object::Device(info) => {
            let itemsize = info.dtype.as_ref().map(|d| d.itemsize()).unwrap_or(1);
            graph::byte_span(info.ptr, &info.shape, &info.strides, itemsize)
        }
        _ => None,
    }
}

/// Marks the graph parameters a capture-time call used through something derived from them
/// as ones a replay cannot change: a value computed from a scalar parameter in the step (it
/// carries `_cunumpy_graph_params`, see `cuda/_graph.py`) or a view of an array parameter
/// (an array that is not the parameter but shares its memory). A replay could not recompute
/// either; the graph keeps what they were at capture.
pub(crate) fn fix_derived(
    py: Python<'_>,
    what: &str,
    objects: &[&Bound<'_, PyAny>],
) -> PyResult<()> {
    let mut fixes: Vec<(usize, String)> = Vec::new();
    HELD.with(|h| -> PyResult<()> {
        let held = h.borrow();
        let Some(held) = held.as_ref() else {
            return Ok(());
        };
        for obj in objects {
            if held.params.iter().any(|p| p.as_ptr() == obj.as_ptr()) {
                continue; // the parameter itself: bound, updated by a replay
            }
            if let Ok(from) = obj.getattr(pyo3::intern!(py, "_cunumpy_graph_params")) {
                for param in from.extract::<Vec<usize>>().unwrap_or_default() {
                    fixes.push((
                        param,
                        format!("a value computed from it in the step reached {what}"),
                    ));
                }
                continue;
            }
            if arrays::is_cupy_array(obj)
                || obj.hasattr(pyo3::intern!(py, "__cuda_array_interface__"))?
            {
                let Some(span) = span_of(&arrays::read_object(obj, true)?) else {
                    continue;
                };
                for (param, p) in held.spans.iter().enumerate() {
                    if p.is_some_and(|p| graph::spans_overlap(p, span)) {
                        fixes.push((
                            param,
                            format!("a view of it (sharing its memory) reached {what}"),
                        ));
                    }
                }
            }
        }
        Ok(())
    })?;
    for (param, why) in fixes {
        graph::fix_param(param, why);
    }
    Ok(())
}

/// What a launch records, read where it is made.
pub(crate) struct Launch<'a> {
    pub(crate) name: &'a str,
    pub(crate) shape: LaunchShape,
    pub(crate) shared: u32,
    pub(crate) buffer: LaunchBuffer,
    pub(crate) bindings: Vec<Binding>,
    pub(crate) plan: Option<Arc<ArgPlan>>,
}

impl Launch<'_> {
    fn record(self, py: Python<'_>) -> LaunchRecord {
        LaunchRecord {
            name: self.name.to_string(),
            site: crate::ledger::call_site(py),
            shape: self.shape,
            shared: self.shared,
            buffer: self.buffer,
            bindings: self.bindings,
            plan: self.plan,
        }
    }
}

/// Records an emulated launch of the step (it runs at each replay).
pub(crate) fn record_emulated(
    py: Python<'_>,
    launch: Launch<'_>,
    library: Arc<EmuLibrary>,
    options: LaunchOptions,
) -> PyResult<()> {
    let name = launch.name.to_string();
    graph::record_emulated(launch.record(py), library, options)
        .map_err(|e| errors::runtime_error(py, &name, e))
}

/// Checks, before a GPU launch in a capture, that it goes to the capturing stream.
pub(crate) fn check_cuda(py: Python<'_>, name: &str, stream: StreamHandle) -> PyResult<()> {
    graph::check_cuda_launch(name, &crate::ledger::call_site(py), stream)
        .map_err(|e| runtime_error(py, name, e))
}

/// Records a GPU launch just captured on `stream`.
pub(crate) fn record_cuda(
    py: Python<'_>,
    launch: Launch<'_>,
    function: Function,
    stream: StreamHandle,
) -> PyResult<()> {
    let name = launch.name.to_string();
    graph::record_cuda(launch.record(py), function, stream).map_err(|e| runtime_error(py, &name, e))
}

/// A runtime error (graph refusals become their own exceptions in `errors`).
fn runtime_error(py: Python<'_>, name: &str, err: cunumpy_runtime::RuntimeError) -> PyErr {
    errors::runtime_error(py, name, err)
}

/// Opens a capture on this thread: `params` are the step's flattened arguments (the graph's
/// parameters), `stream` the stream being captured (None on the emulated device).
#[pyfunction]
#[pyo3(signature = (params, stream=None))]
fn _graph_begin(
    py: Python<'_>,
    params: Vec<Bound<'_, PyAny>>,
    stream: Option<usize>,
) -> PyResult<()> {
    let device = Device::current().map_err(|e| errors::cuda_error(py, "graph", e))?;
    let ordinal = device.ordinal();
    let mut specs = Vec::with_capacity(params.len());
    let mut spans = Vec::with_capacity(params.len());
    for p in &params {
        let object = arrays::read_object(p, true)?;
        specs.push(ParamSpec::of(&object.as_arg(ordinal)));
        spans.push(span_of(&object));
    }
    graph::begin(device, stream.unwrap_or(0)).map_err(|e| errors::graph_error(py, e))?;
    HELD.with(|h| {
        *h.borrow_mut() = Some(Held {
            params: params.iter().map(|p| p.clone().unbind()).collect(),
            specs,
            spans,
            keep: Vec::new(),
        })
    });
    Ok(())
}

/// Closes this thread's capture (also after a failed step); None when none was open.
#[pyfunction]
fn _graph_end() -> Option<CapturedGraph> {
    let recorded = graph::finish();
    let held = HELD.with(|h| h.borrow_mut().take());
    let recording = recorded?;
    let held = held?;
    Some(CapturedGraph {
        graph: std::sync::Mutex::new(Graph::new(recording, held.specs)),
        params: std::sync::Mutex::new(held.params),
        _keep: held.keep,
    })
}

/// Whether a capture is open on this thread.
#[pyfunction]
fn _graph_capturing() -> bool {
    capturing()
}

/// Nanoseconds this thread has spent compiling kernels (see `cunumpy_runtime::compile_ns`).
#[pyfunction]
fn _compile_ns() -> u64 {
    cunumpy_runtime::compile_ns()
}

/// A captured step: the runtime's graph plus the Python objects its launches point at.
#[pyclass(module = "cunumpy._core", name = "CapturedGraph", frozen)]
pub struct CapturedGraph {
    graph: std::sync::Mutex<Graph>,
    /// The current value of each parameter (kept alive: the launches point at them).
    params: std::sync::Mutex<Vec<Py<PyAny>>>,
    _keep: Vec<Py<PyAny>>,
}

#[pymethods]
impl CapturedGraph {
    /// Kernels one replay runs.
    #[getter]
    fn kernels(&self) -> usize {
        cunumpy_core::sync::lock(&self.graph).kernels()
    }

    /// `(kernel, site)` of every recorded launch, in order.
    fn launches(&self) -> Vec<(String, String)> {
        cunumpy_core::sync::lock(&self.graph)
            .launches()
            .iter()
            .map(|l| (l.name.clone(), l.site.clone()))
            .collect()
    }

    /// Per parameter: `(what it was at capture, whether a kernel takes it, whether a replay
    /// can change it, why not when it sets a launch shape)`.
    fn parameters(&self) -> Vec<(String, bool, bool, Option<String>)> {
        let g = cunumpy_core::sync::lock(&self.graph);
        g.params()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let fixed = g.fixed_reason(i).map(str::to_string);
                (
                    s.describe(),
                    g.is_bound(i),
                    s.updatable() && fixed.is_none(),
                    fixed,
                )
            })
            .collect()
    }

    /// Whether the graph runs on the emulated device.
    #[getter]
    fn emulated(&self) -> bool {
        cunumpy_core::sync::lock(&self.graph).device() == Device::Emulated
    }

    /// Sets the instantiated graph (CuPy's `Graph.graphExec`) a replay updates.
    fn _set_exec(&self, exec: usize) {
        cunumpy_core::sync::lock(&self.graph).set_exec(exec);
    }

    /// Takes a replay's new values, `(index, label, value)` each: checked, packed into every
    /// kernel each reaches, and kept alive. All or nothing: nothing changes when one is
    /// refused.
    fn _update(
        &self,
        py: Python<'_>,
        updates: Vec<(usize, String, Bound<'_, PyAny>)>,
    ) -> PyResult<()> {
        let objects: Vec<Object> = updates
            .iter()
            .map(|(_, _, v)| arrays::read_object(v, true))
            .collect::<PyResult<_>>()?;
        let mut g = cunumpy_core::sync::lock(&self.graph);
        let ordinal = g.device().ordinal();
        let args: Vec<(usize, &str, cunumpy_core::args::Arg<'_>)> = updates
            .iter()
            .zip(&objects)
            .map(|((i, label, _), o)| (*i, label.as_str(), o.as_arg(ordinal)))
            .collect();
        g.update(&args).map_err(|e| errors::graph_error(py, e))?;
        drop(g);
        let mut params = cunumpy_core::sync::lock(&self.params);
        for (i, _, value) in updates {
            if let Some(slot) = params.get_mut(i) {
                *slot = value.unbind();
            }
        }
        Ok(())
    }

    /// Whether `value` is the very object parameter `index` holds now.
    fn _is_current(&self, index: usize, value: &Bound<'_, PyAny>) -> bool {
        cunumpy_core::sync::lock(&self.params)
            .get(index)
            .is_some_and(|p| p.as_ptr() == value.as_ptr())
    }

    /// Writes the updated launches into the instantiated graph's nodes (GPU); returns how many.
    fn _apply_updates(&self, py: Python<'_>) -> PyResult<usize> {
        let mut g = cunumpy_core::sync::lock(&self.graph);
        // SAFETY: the exec handle was set from the CuPy graph this capture produced, which the
        // Python graph object holds; every array a launch points at is held by this object
        // (`params`, `_keep`), so the pointers stay valid for every later launch.
        unsafe { g.apply_updates() }.map_err(|e| runtime_error(py, "graph", e))
    }

    /// Runs every recorded launch in order on the emulated device.
    fn _replay_emulated(&self, py: Python<'_>) -> PyResult<()> {
        let mut g = cunumpy_core::sync::lock(&self.graph);
        let graph: &mut Graph = &mut g;
        // SAFETY: every pointer in the launches is the host address of an array this object
        // holds (`params`, `_keep`), alive for the call; their byte lengths are the bounds
        // recorded with each launch.
        let result = py.detach(move || unsafe { graph.replay_emulated() });
        result.map_err(|e| runtime_error(py, "graph", e))
    }

    /// Records one replay in the ledger (one graph launch and its kernel count).
    fn _record_replay(&self, py: Python<'_>, name: &str) {
        if cunumpy_runtime::record::recording() {
            let site = crate::ledger::call_site(py);
            cunumpy_core::sync::lock(&self.graph).record_replay(name, site);
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CapturedGraph>()?;
    m.add_function(wrap_pyfunction!(_graph_begin, m)?)?;
    m.add_function(wrap_pyfunction!(_graph_end, m)?)?;
    m.add_function(wrap_pyfunction!(_graph_capturing, m)?)?;
    m.add_function(wrap_pyfunction!(_compile_ns, m)?)?;
    Ok(())
}
